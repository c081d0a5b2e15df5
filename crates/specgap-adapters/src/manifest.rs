//! `specgap-install.toml`: what an installation is, written last by the installer (an
//! installation directory without it is incomplete), read by `specgap agents list` and by the
//! engine before a `cli:` agent runs.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The manifest format written by this build.
pub const MANIFEST_FORMAT: u32 = 1;

/// The interpreter of a pip installation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PythonRuntime {
    /// The real interpreter the venv was made with (`sys.executable`, shims resolved).
    pub interpreter: PathBuf,
    /// Its installation prefix (`sys.base_prefix`), which the venv's `python` links into: it
    /// must be mounted read-only in the sandbox unless it is under `/usr`.
    pub prefix: PathBuf,
    /// `major.minor.micro`.
    pub version: String,
}

/// The node of an npm installation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeRuntime {
    /// The real `node` (`process.execPath`).
    pub path: PathBuf,
    /// Its installation prefix (parent of its `bin/`).
    pub prefix: PathBuf,
    /// `v<major>.<minor>.<patch>`.
    pub version: String,
}

/// The manifest of one installation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// [`MANIFEST_FORMAT`].
    pub format: u32,
    /// The adapter.
    pub adapter: String,
    /// The registry package the adapter names.
    pub package: String,
    /// The exact version.
    pub version: String,
    /// `pip` or `npm`.
    pub installer: String,
    /// sha256 of the lock files installed from (names and contents, in order).
    pub lock_sha256: String,
    /// The tree hash at installation ([`crate::tree::tree_hash`]).
    pub tree_hash: String,
    /// The metadata fingerprint at installation ([`crate::tree::fingerprint`]).
    pub fingerprint: String,
    /// The program to start, relative to the installation directory.
    pub entry: String,
    /// Whether [`Manifest::entry`] is a JavaScript file run with [`Manifest::node`].
    #[serde(default)]
    pub entry_is_node_script: bool,
    /// Host paths the sandbox must mount read-only for the agent to run: the installation
    /// directory, and the interpreter's or node's prefix when it is outside the system
    /// directories every sandbox sees.
    pub mounts: Vec<PathBuf>,
    /// The specgap version that installed it.
    pub specgap_version: String,
    /// Seconds since the Unix epoch at installation.
    pub installed_at: u64,
    /// For pip installations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub python: Option<PythonRuntime>,
    /// For npm installations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<NodeRuntime>,
}

/// Why a manifest cannot be read or written.
#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    /// Reading or writing failed.
    #[error("cannot access the installation manifest {}", path.display())]
    Io {
        /// The path.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// Not a manifest of this format.
    #[error("{} is not an installation manifest this specgap can read", path.display())]
    Parse {
        /// The path.
        path: PathBuf,
        /// Why.
        #[source]
        source: toml::de::Error,
    },
    /// The manifest cannot be written as TOML.
    #[error("cannot write the installation manifest")]
    Serialize(#[source] toml::ser::Error),
}

impl Manifest {
    /// Reads `dir/specgap-install.toml`.
    ///
    /// # Errors
    /// [`ManifestError`].
    pub fn read(dir: &Path) -> Result<Manifest, ManifestError> {
        let path = dir.join(crate::tree::MANIFEST_FILE);
        let text = std::fs::read_to_string(&path).map_err(|source| ManifestError::Io { path: path.clone(), source })?;
        toml::from_str(&text).map_err(|source| ManifestError::Parse { path, source })
    }

    /// Writes `dir/specgap-install.toml` (through a temporary file and a rename, so a reader
    /// never sees half a manifest).
    ///
    /// # Errors
    /// [`ManifestError`].
    pub fn write(&self, dir: &Path) -> Result<(), ManifestError> {
        let path = dir.join(crate::tree::MANIFEST_FILE);
        let text = toml::to_string(self).map_err(ManifestError::Serialize)?;
        let staged = dir.join(format!(".{}.tmp", crate::tree::MANIFEST_FILE));
        let io = |source| ManifestError::Io { path: path.clone(), source };
        std::fs::write(&staged, text).map_err(io)?;
        std::fs::rename(&staged, &path).map_err(io)
    }
}
