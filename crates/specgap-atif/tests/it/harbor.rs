//! Validation of exported files with Harbor's own ATIF models, in the virtual environment made
//! by `crates/specgap-harbor/tests/harbor/setup.sh` (pinned harbor, pydantic and toml from
//! PyPI; shared with the task export tests) under the target directory, once per test process. Without python3 or the packages the check is skipped
//! with a note, unless `SPECGAP_REQUIRE_EXTERNAL=1` (CI), where it fails.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// This crate's validation script (`validate.py`).
fn harbor_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/harbor")
}

/// The one Harbor venv setup script (specgap-harbor owns the pinned Harbor version).
fn setup_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../specgap-harbor/tests/harbor/setup.sh")
}

/// The venv directory: `$SPECGAP_HARBOR_VENV`, else `<target>/harbor-venv`.
pub fn venv_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("SPECGAP_HARBOR_VENV") {
        return PathBuf::from(dir);
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target"));
    target.join("harbor-venv")
}

fn required() -> bool {
    std::env::var("SPECGAP_REQUIRE_EXTERNAL").is_ok_and(|v| v == "1")
}

/// The venv's python when it could be made; `None` (skip) when not and not required.
fn python() -> Option<PathBuf> {
    static READY: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let ready = READY.get_or_init(|| {
        let venv = venv_dir();
        let status = Command::new("bash").arg(setup_script()).arg(&venv).status().map_err(|e| format!("cannot run setup.sh: {e}"))?;
        if !status.success() {
            return Err(format!("setup.sh {} failed ({status})", venv.display()));
        }
        Ok(venv.join("bin/python"))
    });
    match ready {
        Ok(python) => Some(python.clone()),
        Err(why) if required() => panic!("SPECGAP_REQUIRE_EXTERNAL=1 and Harbor's ATIF models are unavailable: {why}"),
        Err(why) => {
            eprintln!("note: Harbor validation skipped: {why}");
            None
        }
    }
}

/// Validates `files` with Harbor's `Trajectory` model (and checks Harbor writes them back
/// unchanged); returns validate.py's lines, or `None` when skipped.
pub fn validate(files: &[PathBuf]) -> Option<Vec<String>> {
    let python = python()?;
    let output = Command::new(python).arg(harbor_dir().join("validate.py")).args(files).output().expect("run validate.py");
    let stdout = String::from_utf8_lossy(&output.stdout).to_string();
    assert!(output.status.success(), "Harbor's models refuse the export:\n{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    Some(stdout.lines().map(str::to_string).collect())
}
