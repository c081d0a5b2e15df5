//! `specgap synthesize` end to end with the bundled scripted roles on payment-retry (issue 27,
//! examples/synthesize/payment-retry/README.md's command).

use crate::support::{repo, specgap};

/// `scripted:<repo>/examples/synthesize/payment-retry/<role>.json`.
fn bundled(role: &str) -> String {
    format!("scripted:{}", repo().join(format!("examples/synthesize/payment-retry/{role}.json")).display())
}

#[test]
fn synthesize_with_the_bundled_scripted_roles_writes_the_package_and_the_journal() {
    let tmp = tempfile::tempdir().unwrap();
    let source = repo().join("examples/tasks/payment-retry");
    let [planner, builder, auditor, calibrator, implementer] = ["planner", "builder", "auditor", "calibrator", "implementer"].map(bundled);
    let out = tmp.path().join("out");

    let output = specgap()
        .arg("synthesize")
        .arg(&source)
        .arg("--out")
        .arg(&out)
        .args(["--planner", &planner, "--builder", &builder, "--auditor", &auditor, "--calibrator", &calibrator])
        .args(["--implementer", &implementer])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{stdout}{}", String::from_utf8_lossy(&output.stderr));
    let package = out.join("package");
    assert_eq!(
        stdout,
        format!("ready: {} (design 1, builder iteration 1); journal {}\n", package.display(), out.join("journal.json").display())
    );
    let journal: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out.join("journal.json")).unwrap()).unwrap();
    let stages: Vec<&str> = journal["entries"].as_array().unwrap().iter().map(|e| e["stage"].as_str().unwrap()).collect();
    assert_eq!(stages, ["planner", "builder", "acceptance", "implementer", "sufficiency", "auditor", "calibrator"]);
    assert_eq!(journal["entries"][4]["detail"], serde_json::json!({"failing": [], "failure": null}));
    assert_eq!(journal["outcome"]["status"], "ready");
    assert_eq!(journal["entries"][1]["detail"]["package"], ".");
    assert_eq!(journal["entries"][5]["detail"]["evidence"].as_array().unwrap().len(), 4);
    assert!(package.join("solutions/mutants/charge-once").is_dir());

    // The same output directory is refused now that it holds a synthesis; an agent kind the
    // pipeline cannot play yet is refused by name.
    let again = specgap()
        .arg("synthesize")
        .arg(&source)
        .arg("--out")
        .arg(&out)
        .args(["--planner", &planner, "--builder", &builder, "--auditor", &auditor, "--calibrator", &calibrator])
        .output()
        .unwrap();
    assert_eq!(again.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&again.stderr),
        format!("error: the output directory {} is not empty; choose a new one\n", out.display())
    );
    let unsupported = specgap()
        .arg("synthesize")
        .arg(&source)
        .arg("--out")
        .arg(tmp.path().join("out2"))
        .args(["--planner", "cli:claude-code", "--builder", &builder, "--auditor", &auditor, "--calibrator", &calibrator])
        .output()
        .unwrap();
    assert_eq!(unsupported.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&unsupported.stderr),
        "error: --planner: `cli:claude-code` cannot play a synthesize role yet: only `scripted:<file>` and `chat:<model>` roles are supported (cli: and replay: agents are not wired to the pipeline)\n"
    );
}
