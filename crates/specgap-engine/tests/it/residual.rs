//! Residual starts (DESIGN §3.1, seed 001): the starting state is evaluated once per (task
//! hash, state id) and stored as `start/result.json`.

use std::path::Path;
use std::process::Command;

use serde_json::json;
use specgap_engine::Start;
use specgap_protocol::result::EvalResult;
use specgap_protocol::run::EndReason;

use crate::support::{Options, TestAgent, fixture_copy, one, run};

/// A copy of req-basic with residual state `r1`: the cap left out of an otherwise gold fix.
fn residual_package(dir: &Path) -> specgap_task::TaskPackage {
    let root = fixture_copy("req-basic", dir);
    let repo = dir.join("repo");
    fixture_copy_tree(&root.join("workspace"), &repo);
    let git = |args: &[&str]| {
        let out = Command::new("git").args(args).current_dir(&repo).output().unwrap();
        assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        out.stdout
    };
    git(&["init", "-q"]);
    git(&["add", "-A"]);
    git(&["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "base"]);
    let gold = fs_err::read_to_string(root.join("solutions/gold/billing/fees.py")).unwrap();
    let uncapped = gold.replace(
        "fee = min(invoice.principal * LATE_FEE_RATE * periods, invoice.principal * LATE_FEE_CAP_RATIO)",
        "fee = invoice.principal * LATE_FEE_RATE * periods",
    );
    assert_ne!(gold, uncapped);
    fs_err::write(repo.join("billing/fees.py"), uncapped).unwrap();
    let patch = git(&["diff", "--binary"]);
    let state = root.join("residual/r1");
    fs_err::create_dir_all(&state).unwrap();
    fs_err::write(state.join("state.patch"), patch).unwrap();
    fs_err::write(
        state.join("meta.toml"),
        "predecessor = \"test\"\ndeclared_complete = true\nsteps = 3\nfailing_tests = [\"fee-cap\"]\nnotes = \"\"\n",
    )
    .unwrap();
    specgap_task::load(&root).unwrap()
}

fn fixture_copy_tree(from: &Path, to: &Path) {
    fs_err::create_dir_all(to).unwrap();
    for entry in fs_err::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            fixture_copy_tree(&entry.path(), &target);
        } else {
            fs_err::copy(entry.path(), &target).unwrap();
        }
    }
}

#[test]
fn residual_start_is_evaluated_and_stored() {
    let dir = tempfile::tempdir().unwrap();
    let package = residual_package(dir.path());
    let mut agent = TestAgent::new(vec![one("read_text", json!({"path": "billing/fees.py"}))]);
    let options = Options { start: Some(Start::Residual("r1".into())), ..Options::default() };
    let r = run(&package, "partial", &mut agent, options);
    // Nothing changed since the start: no automatic submission.
    assert_eq!(r.ok().end_reason, EndReason::AgentDone);
    assert!(r.ok().submissions.is_empty());
    let text = fs_err::read_to_string(r.episode_dir().join("start/result.json")).unwrap();
    let result: EvalResult = serde_json::from_str(&text).unwrap();
    let outcomes = result.requirements.unwrap();
    let passes: Vec<(&str, bool)> = outcomes.iter().map(|(id, o)| (id.as_str(), o.pass)).collect();
    assert_eq!(passes, [("disputed-exempt", true), ("fee-cap", false), ("monthly-rate", true)]);
    // The harness's own diff of the materialized state is stored beside it (seed 001 Kept):
    // one file, the one line the state changed, with full blob ids.
    let diff = fs_err::read_to_string(r.episode_dir().join("start/workspace.diff")).unwrap();
    assert!(diff.starts_with("diff --git a/billing/fees.py b/billing/fees.py\n"), "{diff}");
    assert_eq!(diff.matches("diff --git").count(), 1, "{diff}");
    assert!(diff.contains("\n+    fee = invoice.principal * LATE_FEE_RATE * periods\n"), "{diff}");
    assert!(diff.lines().any(|l| l.starts_with("index ") && l.len() == "index ".len() + 40 + 2 + 40 + 7), "{diff}");
    // The agent sees the inherited work.
    let (_, output, _) = &agent.results()[0];
    assert!(!output.contains("min("), "{output}");
    assert!(output.contains("fee = invoice.principal * LATE_FEE_RATE * periods"), "{output}");
    assert!(output.contains("DISPUTED"), "{output}");
}

#[test]
fn residual_start_results_are_shared_through_the_cache() {
    let dir = tempfile::tempdir().unwrap();
    let package = residual_package(dir.path());
    let cached: EvalResult = serde_json::from_value(json!({
        "version": 1,
        "requirements": {"disputed-exempt": {"pass": false}, "fee-cap": {"pass": false}, "monthly-rate": {"pass": false}}
    }))
    .unwrap();
    let cache = specgap_engine::StartResults::default();
    cache.lock().unwrap().insert((package.hash().to_string(), "r1".to_string()), cached.clone());
    let mut agent = TestAgent::new(vec![]);
    let options =
        Options { start: Some(Start::Residual("r1".into())), start_results: Some(cache.clone()), ..Options::default() };
    let r = run(&package, "partial", &mut agent, options);
    let text = fs_err::read_to_string(r.episode_dir().join("start/result.json")).unwrap();
    assert_eq!(serde_json::from_str::<EvalResult>(&text).unwrap(), cached);
    assert_eq!(cache.lock().unwrap().len(), 1);
}
