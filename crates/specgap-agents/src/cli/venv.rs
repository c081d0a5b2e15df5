//! A Python virtual environment an adapter runs from (mini-swe-agent, OpenHands): its
//! `pyvenv.cfg`, and what the sandbox must mount for it — the environment and, when it lies
//! outside the system directories, the prefix of the Python it was made with.

use std::path::{Path, PathBuf};

/// An installed virtual environment.
#[derive(Debug, Clone)]
pub(crate) struct Venv {
    /// The environment's directory (holds `bin/`).
    dir: PathBuf,
    /// The installation prefix of its Python (`home` of `pyvenv.cfg`, minus `bin`), when it
    /// is outside the system directories.
    python_prefix: Option<PathBuf>,
    /// `pyvenv.cfg`'s text.
    cfg: String,
}

impl Venv {
    /// Reads `dir/pyvenv.cfg`.
    ///
    /// # Errors
    /// A message naming the file when it cannot be read.
    pub(crate) fn open(dir: &Path) -> Result<Self, String> {
        let cfg = std::fs::read_to_string(dir.join("pyvenv.cfg")).map_err(|e| format!("cannot read {}/pyvenv.cfg: {e}", dir.display()))?;
        let mut venv = Venv { dir: dir.to_path_buf(), python_prefix: None, cfg };
        let home = venv.cfg_value("home").map(PathBuf::from);
        venv.python_prefix = home.and_then(|bin| bin.parent().map(Path::to_path_buf)).filter(|p| !is_system(p));
        Ok(venv)
    }

    /// The value of `key` in `pyvenv.cfg`, trimmed.
    pub(crate) fn cfg_value(&self, key: &str) -> Option<&str> {
        self.cfg.lines().find_map(|l| l.split_once('=').filter(|(k, _)| k.trim() == key).map(|(_, v)| v.trim()))
    }

    /// What the sandbox mounts read-only: the environment, and its Python's prefix when that
    /// is not a system directory.
    pub(crate) fn mounts(&self) -> Vec<PathBuf> {
        let mut mounts = vec![self.dir.clone()];
        mounts.extend(self.python_prefix.clone());
        mounts
    }

    /// The environment's `bin`, for `PATH`.
    pub(crate) fn bin(&self) -> PathBuf {
        self.dir.join("bin")
    }
}

fn is_system(path: &Path) -> bool {
    ["/usr", "/bin", "/lib", "/lib64", "/sbin"].iter().any(|s| path.starts_with(s)) || path == Path::new("/")
}
