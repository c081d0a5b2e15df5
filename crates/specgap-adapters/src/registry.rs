//! The adapters specgap knows: for each, the package it installs, the installer, the pinned
//! default version, the versions that have a committed lock, and the program to start.
//!
//! Lock files live in `crates/specgap-adapters/locks/<adapter>/<version>/` and are compiled
//! into the binary, so an installed `specgap` needs no source tree. A pip lock is a
//! `requirements.txt` with every dependency pinned and hashed (`pip-compile
//! --generate-hashes`, for the adapter's Python version, linux x86_64), installed with `--require-hashes`; an npm
//! lock is a `package.json` and its `package-lock.json` (integrity hashes), installed with
//! `npm ci`. Adding a version: generate its lock files there (see `locks/README.md`) and add a
//! [`Lock`] to the adapter.
//!
//! The engine's `cli:` adapters (start command, model endpoint, MCP configuration, log
//! parsing) extend these declarations by name; this module only says what is installed.

/// How an adapter is installed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Installer {
    /// A Python virtual environment, `pip install --require-hashes -r requirements.txt`.
    Pip,
    /// `npm ci` of a pinned `package.json` / `package-lock.json`.
    Npm,
}

impl Installer {
    /// `pip` or `npm`.
    pub fn name(self) -> &'static str {
        match self {
            Installer::Pip => "pip",
            Installer::Npm => "npm",
        }
    }
}

/// The program an installation starts, relative to its directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Entry {
    /// An executable of the installation (a venv console script, a native binary).
    Program(&'static str),
    /// A JavaScript file run with the recorded `node`.
    NodeScript(&'static str),
}

impl Entry {
    /// The path relative to the installation directory.
    pub fn path(self) -> &'static str {
        match self {
            Entry::Program(path) | Entry::NodeScript(path) => path,
        }
    }
}

/// The lock files of one version: (file name, content).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lock {
    /// The exact version.
    pub version: &'static str,
    /// Files written into the installation directory before installing.
    pub files: &'static [(&'static str, &'static str)],
}

/// One adapter's installation facts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Adapter {
    /// The adapter name (`cli:<name>`).
    pub name: &'static str,
    /// The registry package named by the adapter (PyPI or npm).
    pub package: &'static str,
    /// How it is installed.
    pub installer: Installer,
    /// The pinned default version.
    pub default_version: &'static str,
    /// Every version with a committed lock (the default among them).
    pub locks: &'static [Lock],
    /// The program to start.
    pub entry: Entry,
    /// What it is, for `specgap agents list`.
    pub summary: &'static str,
    /// The Python minor version its pip lock was made for (`3.11`, `3.12`); empty for npm.
    pub python: &'static str,
}

impl Adapter {
    /// The lock of `version`, if one is committed.
    pub fn lock(&self, version: &str) -> Option<&'static Lock> {
        self.locks.iter().find(|l| l.version == version)
    }

    /// The locked versions, default first.
    pub fn locked_versions(&self) -> Vec<&'static str> {
        let mut versions: Vec<&'static str> = self.locks.iter().map(|l| l.version).collect();
        versions.sort_by_key(|v| *v != self.default_version);
        versions
    }
}

macro_rules! lock_file {
    ($adapter:literal, $version:literal, $file:literal) => {
        ($file, include_str!(concat!("../locks/", $adapter, "/", $version, "/", $file)))
    };
}

/// Every adapter with an installation, in the order `specgap agents list` shows them.
///
/// * `mini-swe-agent` (PyPI): seed 001's bash-only scaffold; the console script `mini`.
/// * `claude-code` (npm `@anthropic-ai/claude-code`): the linux x86_64 native build its own
///   install script would copy into place, started directly (install scripts are not run).
/// * `codex` (npm `@openai/codex`): the package's launcher `bin/codex.js` under node, which
///   starts the native build of the platform package.
/// * `opencode` (npm `opencode-ai`): its linux x86_64 build, `opencode-linux-x64`, which
///   `opencode-ai`'s install script would select; the lock pins that package directly because
///   the other platforms' builds of this version are not all on the registry this project
///   reaches, and `npm ci` refuses a lock that lacks some.
/// * `gemini-cli` (npm `@google/gemini-cli`): the bundled `bundle/gemini.js` under node.
/// * `openhands` (PyPI `openhands-sdk` with `openhands-tools`, the same version): seed 002's
///   general scaffold. Its releases need Python 3.12 (`Requires-Python >=3.12`), so its lock
///   is made for 3.12; the program is the venv's `python` running specgap's driver
///   (`specgap-agents`' `cli/openhands_driver.py`), which builds OpenHands' own agent.
pub const ADAPTERS: &[Adapter] = &[
    Adapter {
        name: "mini-swe-agent",
        package: "mini-swe-agent",
        installer: Installer::Pip,
        default_version: "2.4.6",
        locks: &[Lock { version: "2.4.6", files: &[lock_file!("mini-swe-agent", "2.4.6", "requirements.txt")] }],
        entry: Entry::Program("venv/bin/mini"),
        summary: "mini-swe-agent, a bash-only agent loop (seed 001's scaffold)",
        python: "3.11",
    },
    Adapter {
        name: "claude-code",
        package: "@anthropic-ai/claude-code",
        installer: Installer::Npm,
        default_version: "2.1.332",
        locks: &[Lock {
            version: "2.1.332",
            files: &[lock_file!("claude-code", "2.1.332", "package.json"), lock_file!("claude-code", "2.1.332", "package-lock.json")],
        }],
        entry: Entry::Program("node_modules/@anthropic-ai/claude-code-linux-x64/claude"),
        summary: "Claude Code, Anthropic's agent CLI",
        python: "",
    },
    Adapter {
        name: "codex",
        package: "@openai/codex",
        installer: Installer::Npm,
        default_version: "0.171.0",
        locks: &[Lock {
            version: "0.171.0",
            files: &[lock_file!("codex", "0.171.0", "package.json"), lock_file!("codex", "0.171.0", "package-lock.json")],
        }],
        entry: Entry::NodeScript("node_modules/@openai/codex/bin/codex.js"),
        summary: "Codex CLI, OpenAI's agent CLI",
        python: "",
    },
    Adapter {
        name: "opencode",
        package: "opencode-ai",
        installer: Installer::Npm,
        default_version: "1.18.33",
        locks: &[Lock {
            version: "1.18.33",
            files: &[lock_file!("opencode", "1.18.33", "package.json"), lock_file!("opencode", "1.18.33", "package-lock.json")],
        }],
        entry: Entry::Program("node_modules/opencode-linux-x64/bin/opencode"),
        summary: "OpenCode, an open-source agent CLI",
        python: "",
    },
    Adapter {
        name: "gemini-cli",
        package: "@google/gemini-cli",
        installer: Installer::Npm,
        default_version: "0.61.0",
        locks: &[Lock {
            version: "0.61.0",
            files: &[lock_file!("gemini-cli", "0.61.0", "package.json"), lock_file!("gemini-cli", "0.61.0", "package-lock.json")],
        }],
        entry: Entry::NodeScript("node_modules/@google/gemini-cli/bundle/gemini.js"),
        summary: "Gemini CLI, Google's agent CLI",
        python: "",
    },
    Adapter {
        name: "openhands",
        package: "openhands-sdk",
        installer: Installer::Pip,
        default_version: "1.58.2",
        locks: &[Lock { version: "1.58.2", files: &[lock_file!("openhands", "1.58.2", "requirements.txt")] }],
        entry: Entry::Program("venv/bin/python"),
        summary: "OpenHands (its SDK and tools, run by specgap's driver; seed 002's general scaffold)",
        python: "3.12",
    },
];

/// The adapter called `name`.
pub fn adapter(name: &str) -> Option<&'static Adapter> {
    ADAPTERS.iter().find(|a| a.name == name)
}

/// The names of every adapter, comma-separated (for messages).
pub fn adapter_names() -> String {
    ADAPTERS.iter().map(|a| a.name).collect::<Vec<_>>().join(", ")
}

/// An adapter and a version, as `<adapter>[@<version>]` names them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdapterVersion {
    /// The adapter.
    pub adapter: &'static Adapter,
    /// The exact version (the default when none was given).
    pub version: String,
}

/// Why an adapter reference is not usable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AdapterRefError {
    /// Not an adapter specgap knows.
    #[error("unknown agent adapter `{name}`; the adapters are {}", adapter_names())]
    Unknown {
        /// The name given.
        name: String,
    },
    /// `@` with nothing after it.
    #[error("`{0}` names no version after `@`")]
    EmptyVersion(String),
    /// A version without a committed lock.
    #[error(
        "{adapter} {version} has no lock file in this specgap (locked: {locked}); only locked versions are installed, so that every installation of a version is the same. Use a locked version, or add a lock (crates/specgap-adapters/locks/README.md)"
    )]
    NotLocked {
        /// The adapter.
        adapter: String,
        /// The version asked for.
        version: String,
        /// The locked versions.
        locked: String,
    },
}

impl AdapterVersion {
    /// Parses `<adapter>[@<version>]`; the version defaults to the adapter's pinned one and
    /// must have a committed lock.
    ///
    /// # Errors
    /// [`AdapterRefError`].
    pub fn parse(text: &str) -> Result<Self, AdapterRefError> {
        let (name, version) = match text.trim().split_once('@') {
            Some((name, version)) => (name, Some(version)),
            None => (text.trim(), None),
        };
        Self::resolve(name, version)
    }

    /// The adapter `name` at `version` (default: the pinned one).
    ///
    /// # Errors
    /// [`AdapterRefError`].
    pub fn resolve(name: &str, version: Option<&str>) -> Result<Self, AdapterRefError> {
        let adapter = adapter(name).ok_or_else(|| AdapterRefError::Unknown { name: name.to_string() })?;
        let version = match version {
            Some("") => return Err(AdapterRefError::EmptyVersion(format!("{name}@"))),
            Some(version) => version.to_string(),
            None => adapter.default_version.to_string(),
        };
        if adapter.lock(&version).is_none() {
            return Err(AdapterRefError::NotLocked {
                adapter: adapter.name.to_string(),
                version,
                locked: adapter.locked_versions().join(", "),
            });
        }
        Ok(AdapterVersion { adapter, version })
    }

    /// The lock of this version (present by construction).
    pub fn lock(&self) -> Option<&'static Lock> {
        self.adapter.lock(&self.version)
    }

    /// Whether this is the adapter's pinned default.
    pub fn is_default(&self) -> bool {
        self.version == self.adapter.default_version
    }

    /// `<adapter>@<version>`.
    pub fn label(&self) -> String {
        format!("{}@{}", self.adapter.name, self.version)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_adapter_locks_its_default_and_its_lock_files_name_the_version() {
        for adapter in ADAPTERS {
            let lock = adapter.lock(adapter.default_version).unwrap_or_else(|| panic!("{} has no default lock", adapter.name));
            for (file, text) in lock.files {
                match *file {
                    "requirements.txt" => {
                        assert!(text.contains(&format!("{}=={}", adapter.package, adapter.default_version)), "{}", adapter.name);
                        assert!(text.contains("--hash=sha256:"), "{}", adapter.name);
                    }
                    "package.json" => {
                        let json: serde_json::Value = serde_json::from_str(text).unwrap();
                        let deps = json["dependencies"].as_object().unwrap();
                        assert_eq!(deps.len(), 1, "{}", adapter.name);
                        assert_eq!(deps.values().next().unwrap(), adapter.default_version, "{}", adapter.name);
                    }
                    "package-lock.json" => {
                        let json: serde_json::Value = serde_json::from_str(text).unwrap();
                        assert_eq!(json["lockfileVersion"], 3, "{}", adapter.name);
                        let root = &json["packages"][""]["dependencies"];
                        assert_eq!(root.as_object().unwrap().values().next().unwrap(), adapter.default_version, "{}", adapter.name);
                    }
                    other => panic!("unexpected lock file {other}"),
                }
            }
        }
    }

    #[test]
    fn references_parse_with_defaults_and_refuse_unlocked_versions() {
        let default = AdapterVersion::parse("mini-swe-agent").unwrap();
        assert_eq!((default.adapter.name, default.version.as_str(), default.is_default()), ("mini-swe-agent", "2.4.6", true));
        assert_eq!(AdapterVersion::parse("codex@0.171.0").unwrap().label(), "codex@0.171.0");
        assert_eq!(
            AdapterVersion::parse("aider").unwrap_err().to_string(),
            "unknown agent adapter `aider`; the adapters are mini-swe-agent, claude-code, codex, opencode, gemini-cli, openhands"
        );
        assert_eq!(AdapterVersion::parse("codex@").unwrap_err(), AdapterRefError::EmptyVersion("codex@".into()));
        assert_eq!(
            AdapterVersion::parse("mini-swe-agent@2.4.5").unwrap_err().to_string(),
            "mini-swe-agent 2.4.5 has no lock file in this specgap (locked: 2.4.6); only locked versions are installed, so that every installation of a version is the same. Use a locked version, or add a lock (crates/specgap-adapters/locks/README.md)"
        );
    }
}
