//! # specgap-adapters
//!
//! The external agents specgap can run as `cli:<adapter>` (DESIGN §5; issue 14 item 2):
//! what each installs and how, and their installations in a versioned cache.
//!
//! | module | what it holds |
//! | --- | --- |
//! | [`registry`] | [`ADAPTERS`]: package, installer, pinned default version, committed locks, the program to start; `<adapter>[@<version>]` references |
//! | [`install`] | installing into `$XDG_CACHE_HOME/specgap/agents/<adapter>/<version>/`, finding and verifying installations, listing the cache |
//! | [`manifest`] | `specgap-install.toml`: exact version, lock hash, tree hash, entry, runtime (interpreter or node) and the mounts a sandbox needs |
//! | [`tree`] | the installed tree's hash (part of the agent's configuration hash, so of its episode keys) and a cheap metadata fingerprint |
//!
//! Why a crate of its own: installing is a concern of its own (subprocesses of pip and npm,
//! a cache, locks, hashing) that the CLI (`specgap agents install|list`, the run
//! configuration) and the `cli:` agents in `specgap-agents` both need, and neither the
//! engine's episode rules nor the agents' session logic should carry it. The adapters'
//! runtime declarations (start command, model endpoint, MCP configuration, log parsing)
//! belong with the `cli:` agent and extend these entries by name.
//!
//! For the episode key: [`installed_tree_hash`] gives the verified tree hash of an installed
//! version; a `cli:` agent's stored configuration records it next to the adapter and version.
#![deny(missing_docs)]

pub mod install;
pub mod manifest;
pub mod registry;
pub mod tree;

pub use install::{InstallError, InstallOptions, Installation, Installed, default_root, install, installed_tree_hash, list};
pub use manifest::Manifest;
pub use registry::{ADAPTERS, Adapter, AdapterRefError, AdapterVersion, Entry, Installer, adapter};
