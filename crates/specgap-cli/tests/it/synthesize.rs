//! `specgap synthesize` end to end with scripted roles on payment-retry (issue 27).

use std::path::Path;
use std::process::Command;

use serde_json::json;

use crate::support::{repo, specgap};

fn write_script(dir: &Path, role: &str, steps: serde_json::Value) -> String {
    let path = dir.join(format!("{role}.json"));
    std::fs::write(&path, json!({"format": 1, "steps": steps}).to_string()).unwrap();
    format!("scripted:{}", path.display())
}

#[test]
fn synthesize_with_scripted_roles_writes_the_package_and_the_journal() {
    let tmp = tempfile::tempdir().unwrap();
    let built = tmp.path().join("built");
    std::fs::create_dir(&built).unwrap();
    let source = repo().join("examples/tasks/payment-retry");
    assert!(Command::new("cp").arg("-r").arg(&source).arg(built.join("payment-retry")).status().unwrap().success());

    let ids = ["charge-once", "retry-timeouts", "declines-final", "respect-busy-wait", "checkout-deadline"];
    let modes = ["charged-twice", "timeout-ended-checkout", "decline-retried", "busy-retried-early", "deadline-exceeded"];
    let brief = json!({
        "terminal_outcome": "Every checkout ends paid once or declined, within the deadline.",
        "requirements": ids.map(|id| json!({"id": id, "predicate": format!("{id} holds"), "discovery": format!("records show {id}")})),
        "persona": {"role": "the shop owner", "understanding": "retries fix it", "mistaken_hypothesis": "retry every failure"},
        "stated": ["retry-timeouts"],
        "withheld": ["charge-once", "declines-final", "respect-busy-wait", "checkout-deadline"],
        "failure_modes": ids.iter().zip(modes).map(|(r, m)| json!({"requirement": r, "id": m, "incident": "seen", "detail": "counted"})).collect::<Vec<_>>(),
        "leak_risks": [{"risk": "a docstring states the rule", "countermeasure": "docstrings describe parameters only"}]
    });
    let planner = write_script(tmp.path(), "planner", json!([{"reply": brief}]));
    let builder =
        write_script(tmp.path(), "builder", json!([{"write_from": "built", "reply": {"package": "payment-retry", "summary": "copied"}}]));
    let auditor = write_script(tmp.path(), "auditor", json!([{"reply": {"verdict": "pass", "evidence": []}}]));
    let calibrator = write_script(tmp.path(), "calibrator", json!([{"reply": {"verdict": "ready", "rollouts": []}}]));
    let out = tmp.path().join("out");

    let output = specgap()
        .arg("synthesize")
        .arg(&source)
        .arg("--out")
        .arg(&out)
        .args(["--planner", &planner, "--builder", &builder, "--auditor", &auditor, "--calibrator", &calibrator])
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
    assert_eq!(stages, ["planner", "builder", "acceptance", "auditor", "calibrator"]);
    assert_eq!(journal["outcome"]["status"], "ready");

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
        "error: --planner: `cli:claude-code` cannot play a synthesize role yet: only `scripted:<file>` roles are supported (cli:, chat: and replay: agents are not wired to the pipeline)\n"
    );
}
