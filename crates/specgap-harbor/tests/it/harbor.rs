//! Validation of Harbor task directories with Harbor's own task model, in the virtual
//! environment made by `tests/harbor/setup.sh` (pinned harbor, pydantic and toml from PyPI;
//! shared with the ATIF export tests) under the target directory, once per test process. Without python3 or the packages the
//! check is skipped with a note, unless `SPECGAP_REQUIRE_EXTERNAL=1`, where it fails.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use crate::support::required;

fn harbor_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/harbor")
}

/// The venv directory: `$SPECGAP_HARBOR_VENV`, else `<target>/harbor-venv` (the ATIF tests'
/// one, made by the same script).
fn venv_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("SPECGAP_HARBOR_VENV") {
        return PathBuf::from(dir);
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target"));
    target.join("harbor-venv")
}

/// The venv's python when it could be made; `None` (skip) when not and not required.
fn python() -> Option<PathBuf> {
    static READY: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let ready = READY.get_or_init(|| {
        let venv = venv_dir();
        let status =
            Command::new("bash").arg(harbor_dir().join("setup.sh")).arg(&venv).status().map_err(|e| format!("cannot run setup.sh: {e}"))?;
        if !status.success() {
            return Err(format!("setup.sh {} failed ({status})", venv.display()));
        }
        Ok(venv.join("bin/python"))
    });
    match ready {
        Ok(python) => Some(python.clone()),
        Err(why) if required() => {
            panic!("SPECGAP_REQUIRE_EXTERNAL=1 and Harbor's task model is unavailable: {why}")
        }
        Err(why) => {
            eprintln!("note: Harbor validation skipped: {why}");
            None
        }
    }
}

/// Runs validate_task.py with `args`; returns its lines and whether it succeeded, or `None`
/// when skipped.
pub fn validate_task(args: &[&Path]) -> Option<(bool, Vec<String>)> {
    let python = python()?;
    let output = Command::new(python).arg(harbor_dir().join("validate_task.py")).args(args).output().expect("run validate_task.py");
    let stdout = String::from_utf8_lossy(&output.stdout).to_string();
    Some((output.status.success(), stdout.lines().map(str::to_string).collect()))
}
