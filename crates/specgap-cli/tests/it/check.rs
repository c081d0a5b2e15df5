//! `specgap check --strict` end to end: the flag reaches the checks, the exit status follows
//! the failing row, and `--json` carries the strictness (issue 13 item 8).

use std::path::Path;
use std::process::Command;

use crate::support::{specgap, task_fixture};

/// A copy of the `req-basic` fixture without `user.toml`, in a fresh temporary directory.
fn req_basic_without_user() -> (tempfile::TempDir, std::path::PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("req-basic");
    let status = Command::new("cp").arg("-r").arg(task_fixture("req-basic")).arg(&root).status().unwrap();
    assert!(status.success());
    std::fs::remove_file(root.join("user.toml")).unwrap();
    (tmp, root)
}

fn check_json(args: &[&str], package: &Path) -> (Option<i32>, serde_json::Value) {
    let output = specgap().arg("check").args(args).arg("--json").arg(package).output().unwrap();
    let json = serde_json::from_slice(&output.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&output.stdout)));
    (output.status.code(), json)
}

fn row<'a>(json: &'a serde_json::Value, check: &str) -> Option<&'a serde_json::Value> {
    json["tasks"][0]["checks"].as_array().unwrap().iter().find(|r| r["check"] == check)
}

#[test]
fn check_strict_fails_a_package_without_user_toml_and_says_so_in_json() {
    let (_tmp, package) = req_basic_without_user();
    let (code, strict) = check_json(&["--strict"], &package);
    assert_eq!(code, Some(1));
    assert_eq!(strict["version"], 2);
    assert_eq!(strict["strict"], true);
    assert_eq!(strict["passed"], false);
    assert_eq!(
        row(&strict, "user").unwrap(),
        &serde_json::json!({"check": "user", "result": "fail", "reason": "no user.toml; --strict needs the simulated owner's persona, understanding and editable surface (seed 000 App. E.1, F.4)"})
    );
    assert_eq!(row(&strict, "shape").unwrap()["result"], "warn");
    assert_eq!(row(&strict, "instruction-full").unwrap()["result"], "pass");

    // The same package passes without --strict, which adds none of those rows.
    let (code, lenient) = check_json(&[], &package);
    assert_eq!(code, Some(0));
    assert_eq!(lenient["strict"], false);
    assert_eq!(lenient["passed"], true);
    assert!(row(&lenient, "user").is_none() && row(&lenient, "shape").is_none());

    let text = specgap().args(["check", "--strict"]).arg(&package).output().unwrap();
    assert_eq!(text.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&text.stdout);
    assert!(stdout.ends_with("\n1 checked (strict), 1 failed\n"), "{stdout}");
}

/// Regression: `specgap check` failed without `PATH` (`env -i`, a bare service unit): it
/// found neither bubblewrap nor git. It now searches the default system directories.
#[test]
fn check_runs_without_path_in_the_environment() {
    let output = specgap().env_clear().arg("check").arg(task_fixture("req-basic")).output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    assert!(stdout.ends_with("\n1 checked, 0 failed\n"), "{stdout}");
    assert!(stdout.contains("  gold "), "{stdout}");
}
