//! `specgap import harbor` and `specgap export-task` end to end: a Harbor dataset imports
//! (one line per task, a summary, exit 1 for the refused task), the imported packages run
//! under `hidden` (the gold scores 1, the starter 0), and a package exports as a Harbor task.

use std::ffi::OsStr;
use std::path::PathBuf;

use crate::support::*;

fn harbor_dataset() -> PathBuf {
    repo().join("crates/specgap-harbor/tests/fixtures/dataset")
}

#[test]
fn an_imported_harbor_dataset_runs_its_gold_to_one_and_its_starter_to_zero() {
    let out = tempfile::tempdir().unwrap();
    let suite = out.path().join("suite");
    let output = specgap().args([OsStr::new("import"), OsStr::new("harbor"), harbor_dataset().as_os_str(), OsStr::new("--out"), suite.as_os_str()]).output().unwrap();
    assert_eq!(output.status.code(), Some(1), "{}", String::from_utf8_lossy(&output.stderr));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.iter().filter(|l| l.starts_with("imported ")).count(), 5);
    assert_eq!(lines.iter().filter(|l| l.starts_with("refused with-compose: ")).count(), 1);
    assert!(stdout.contains("| refused | 1 |\n"), "{stdout}");
    // The image task needs issue 25's runtime; run the host tasks.
    std::fs::remove_dir_all(suite.join("needs-image")).unwrap();
    let run = out.path().join("run");
    run_ok([
        OsStr::new("run"),
        suite.as_os_str(),
        OsStr::new("--agent"),
        OsStr::new("scripted:gold,scripted:starter"),
        OsStr::new("--condition"),
        OsStr::new("hidden"),
        OsStr::new("--out"),
        run.as_os_str(),
        OsStr::new("--no-report"),
    ]);
    let mut scores: Vec<(String, String, Option<f64>)> = episodes(&run).into_iter().map(|e| (e.task, e.agent, e.final_score)).collect();
    scores.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
    let expected: Vec<(String, String, Option<f64>)> = ["app-workdir", "hello-file", "several-keys", "two-steps"]
        .iter()
        .flat_map(|t| [(format!("fixtures/{t}"), "scripted:gold".to_string(), Some(1.0)), (format!("fixtures/{t}"), "scripted:starter".to_string(), Some(0.0))])
        .collect();
    assert_eq!(scores, expected);
}

#[test]
fn export_task_writes_a_harbor_task_directory() {
    let out = tempfile::tempdir().unwrap();
    let task = out.path().join("req-basic");
    let output = run_ok([OsStr::new("export-task"), task_fixture("req-basic").as_os_str(), OsStr::new("--out"), task.as_os_str()]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.ends_with("(with solution/solve.sh from the gold)\n"), "{stdout}");
    for file in ["task.toml", "instruction.md", "environment/Dockerfile", "tests/test.sh", "tests/specgap_reward.py", "tests/specgap-candidate", "solution/solve.sh"] {
        assert!(task.join(file).is_file(), "{file}");
    }
}
