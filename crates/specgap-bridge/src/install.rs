//! Where the harness finds the bridge program, and the directory it puts on a `cli:` agent's
//! `PATH`.
//!
//! The program is `specgap-bridge` next to the harness's own executable (`cargo install --path
//! crates/specgap-cli` installs both; in a cargo build both are in `target/<profile>/`, and test
//! and example binaries one level below), or the file named by [`BRIDGE_ENV`].
//!
//! [`make_tools_dir`] lays out the directory mounted read-only at [`SANDBOX_BIN_DIR`]: the
//! program itself (a hard link, or a copy across file systems) and the commands `ask_user` and
//! `submit` as relative symbolic links to it, which it tells apart by `argv[0]`. Links rather
//! than `sh` wrapper scripts: one `exec` instead of two (no shell start in the round trip), and
//! nothing to quote.

use std::io;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};

/// Environment variable naming the bridge program (tests, unusual installs).
pub const BRIDGE_ENV: &str = "SPECGAP_BRIDGE";
/// The bridge program's file name.
pub const BRIDGE_PROGRAM: &str = "specgap-bridge";
/// The commands the tools directory holds (normative names, DESIGN §5).
pub const COMMANDS: [&str; 2] = ["ask_user", "submit"];
/// Where the tools directory is mounted inside the sandbox (put first on `PATH`).
pub const SANDBOX_BIN_DIR: &str = "/run/specgap/bin";
/// Where the episode's bridge socket is mounted inside the sandbox.
pub const SANDBOX_SOCKET: &str = "/run/specgap/bridge.sock";

/// The bridge program cannot be found.
#[derive(Debug, thiserror::Error)]
pub enum LocateError {
    /// [`BRIDGE_ENV`] names something that is not an executable file.
    #[error("{BRIDGE_ENV} is set to {}, which is not an executable file", path.display())]
    BadOverride {
        /// The value.
        path: PathBuf,
    },
    /// Not next to the executable.
    #[error(
        "cannot find the {BRIDGE_PROGRAM} program (looked at {}); install it with `cargo install --path crates/specgap-cli` (which installs specgap and {BRIDGE_PROGRAM}) or set {BRIDGE_ENV}",
        looked.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
    )]
    NotFound {
        /// The places looked at.
        looked: Vec<PathBuf>,
    },
}

fn is_executable_file(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The bridge program: [`BRIDGE_ENV`] when set, else `specgap-bridge` next to the current
/// executable, or one directory up when the executable is a cargo test, bench or example
/// binary (`target/<profile>/deps/`, `target/<profile>/examples/`).
///
/// # Errors
/// [`LocateError`].
pub fn locate_bridge() -> Result<PathBuf, LocateError> {
    if let Some(path) = std::env::var_os(BRIDGE_ENV).filter(|v| !v.is_empty()) {
        let path = PathBuf::from(path);
        return if is_executable_file(&path) { Ok(path) } else { Err(LocateError::BadOverride { path }) };
    }
    let mut looked = Vec::new();
    if let Some(dir) = std::env::current_exe().ok().and_then(|exe| exe.parent().map(Path::to_path_buf)) {
        looked.push(dir.join(BRIDGE_PROGRAM));
        if dir.file_name().is_some_and(|n| n == "deps" || n == "examples")
            && let Some(up) = dir.parent()
        {
            looked.push(up.join(BRIDGE_PROGRAM));
        }
    }
    looked.iter().find(|p| is_executable_file(p)).cloned().ok_or(LocateError::NotFound { looked })
}

/// Fills the empty or missing directory `dir` with the bridge program (hard-linked from
/// `bridge`, or copied when that fails) and the `ask_user` / `submit` links to it. Mount `dir`
/// read-only at [`SANDBOX_BIN_DIR`].
///
/// # Errors
/// I/O errors, and `AlreadyExists` when `dir` is not empty.
pub fn make_tools_dir(dir: &Path, bridge: &Path) -> io::Result<()> {
    std::fs::create_dir_all(dir)?;
    if std::fs::read_dir(dir)?.next().is_some() {
        return Err(io::Error::new(io::ErrorKind::AlreadyExists, format!("{} is not empty", dir.display())));
    }
    let program = dir.join(BRIDGE_PROGRAM);
    if std::fs::hard_link(bridge, &program).is_err() {
        std::fs::copy(bridge, &program)?;
        std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755))?;
    }
    for command in COMMANDS {
        std::os::unix::fs::symlink(BRIDGE_PROGRAM, dir.join(command))?;
    }
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tools_dir_holds_the_program_and_relative_links() {
        let tmp = tempfile::tempdir().unwrap();
        let bridge = tmp.path().join("built");
        std::fs::write(&bridge, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&bridge, std::fs::Permissions::from_mode(0o755)).unwrap();
        let dir = tmp.path().join("bin");
        make_tools_dir(&dir, &bridge).unwrap();
        assert!(is_executable_file(&dir.join(BRIDGE_PROGRAM)));
        for command in COMMANDS {
            assert_eq!(std::fs::read_link(dir.join(command)).unwrap(), PathBuf::from(BRIDGE_PROGRAM));
        }
        assert_eq!(make_tools_dir(&dir, &bridge).unwrap_err().kind(), io::ErrorKind::AlreadyExists);
    }
}
