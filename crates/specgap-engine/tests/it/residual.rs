//! Residual starts (DESIGN §3.1, seed 001): the starting state is evaluated once per (task
//! hash, state id) and stored as `start/result.json`.

use std::path::Path;
use std::process::Command;

use serde_json::json;
use specgap_engine::Start;
use specgap_protocol::event::EventKind;
use specgap_protocol::result::EvalResult;
use specgap_protocol::run::EndReason;

use crate::support::{Options, TestAgent, fixture, fixture_copy, one, run};

/// A copy of req-basic with residual state `r1`: the cap left out of an otherwise gold fix.
fn residual_package(dir: &Path) -> specgap_task::TaskPackage {
    residual_package_with(dir, |gold| {
        let uncapped = gold.replace(
            "fee = min(invoice.principal * LATE_FEE_RATE * periods, invoice.principal * LATE_FEE_CAP_RATIO)",
            "fee = invoice.principal * LATE_FEE_RATE * periods",
        );
        assert_ne!(gold, uncapped);
        uncapped
    })
}

/// A copy of req-basic with residual state `r1` whose `billing/fees.py` is `edit(gold)`.
fn residual_package_with(dir: &Path, edit: impl FnOnce(&str) -> String) -> specgap_task::TaskPackage {
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
    fs_err::write(repo.join("billing/fees.py"), edit(&gold)).unwrap();
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
    // The state fails the verifier, as a residual state must: recorded, not flagged.
    let rows = r.store.start_results().unwrap();
    assert_eq!((rows[0].state.as_str(), rows[0].score, rows[0].success), ("r1", Some(2.0 / 3.0), Some(false)));
    assert!(r.kinds().contains(&&EventKind::StartEvaluation { state: "r1".into(), score: 2.0 / 3.0, success: false }));
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
    let options = Options { start: Some(Start::Residual("r1".into())), start_results: Some(cache.clone()), ..Options::default() };
    let r = run(&package, "partial", &mut agent, options);
    let text = fs_err::read_to_string(r.episode_dir().join("start/result.json")).unwrap();
    assert_eq!(serde_json::from_str::<EvalResult>(&text).unwrap(), cached);
    assert_eq!(cache.lock().unwrap().len(), 1);
}

#[test]
fn a_residual_start_that_passes_the_verifier_is_flagged_and_still_runs() {
    let dir = tempfile::tempdir().unwrap();
    // The "residual" state is the gold fix itself: the verifier passes it.
    let package = residual_package_with(dir.path(), str::to_string);
    let mut agent = TestAgent::new(vec![one("read_text", json!({"path": "billing/fees.py"}))]);
    let options = Options { start: Some(Start::Residual("r1".into())), ..Options::default() };
    let r = run(&package, "partial", &mut agent, options);
    assert_eq!(r.ok().end_reason, EndReason::AgentDone);
    assert_eq!(r.ok().turns, 1);
    let rows = r.store.start_results().unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!((rows[0].score, rows[0].success), (Some(1.0), Some(true)));
    let flagged: Vec<_> = r.kinds().into_iter().filter(|k| matches!(k, EventKind::StartEvaluation { .. })).cloned().collect();
    assert_eq!(flagged, [EventKind::StartEvaluation { state: "r1".into(), score: 1.0, success: true }]);
    // The flag comes before the agent's first turn.
    let at = |f: fn(&EventKind) -> bool| r.kinds().iter().position(|k| f(k)).unwrap();
    assert!(at(|k| matches!(k, EventKind::StartEvaluation { .. })) < at(|k| matches!(k, EventKind::AgentTurn { .. })));
}

#[test]
fn blind_gives_clean_and_residual_starts_the_same_neutral_opening_without_ask_user() {
    let dir = tempfile::tempdir().unwrap();
    let package = residual_package(dir.path());
    let opening = |start: Start| {
        let agent = TestAgent::new(vec![]);
        let seen = agent.seen.clone();
        let mut agent = agent;
        let r = run(&package, "blind", &mut agent, Options { start: Some(start), ..Options::default() });
        assert_eq!(r.ok().end_reason, EndReason::AgentDone);
        seen.lock().unwrap().opening.clone().unwrap()
    };
    let clean = opening(Start::Clean);
    let residual = opening(Start::Residual("r1".into()));
    assert_eq!(clean.system_prompt, residual.system_prompt);
    assert_eq!(clean.message, residual.message);
    assert_eq!(clean.message, package.instruction().trim_end());
    assert_eq!(clean.tools, residual.tools);
    let names: Vec<&str> = clean.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["bash", "submit"]);
    let prompt = clean.system_prompt.to_lowercase();
    for word in ["ask_user", "question", "missing", "earlier", "previous", "predecessor", "clarif", "owner", "client"] {
        assert!(!prompt.contains(word), "`{word}` in the blind prompt: {prompt}");
    }
    assert!(clean.system_prompt.starts_with("You are a software engineer working on a task in the workspace you are given."));
    assert!(clean.system_prompt.contains("Your first submission ends the work."));
}

/// (read, shown, unmeasured) of every `file_reads` event, in order.
fn file_reads(r: &crate::support::Run) -> Vec<(Vec<String>, Vec<String>, String)> {
    r.events
        .iter()
        .filter_map(|e| match &e.kind {
            specgap_protocol::event::EventKind::FileReads { read, shown, unmeasured, .. } => {
                Some((read.clone(), shown.clone(), unmeasured.clone()))
            }
            _ => None,
        })
        .collect()
}

/// Issue 24 item 4: each command's reads are measured (fanotify on the sandbox's workspace
/// mount) and a file counts as shown only when its content reached the agent: `grep -r` reads
/// every module but shows two; `cat f > /tmp/x` and `wc -l` read without showing; `false &&
/// cat` reads nothing; the forms the trajectory reader missed are exact.
#[test]
fn every_command_records_the_files_it_read_and_the_files_whose_content_the_agent_saw() {
    let package = fixture("req-basic");
    let bash = |command: &str| one("bash", json!({ "command": command }));
    let mut agent = TestAgent::new(vec![
        bash("grep -rn LATE_FEE_RATE billing"),
        bash("echo billing/policy.py | xargs cat"),
        bash("find billing -name 'fees_*.py' -exec cat {} +"),
        bash("F=README.md; head -3 \"$F\""),
        bash("python3 -c 'print(open(\"billing/invoices.py\").read())'"),
        bash("false && cat billing/fees.py"),
        bash("cat billing/fees.py > /tmp/copy; wc -l billing/replay.py"),
        bash("ls billing"),
    ]);
    let r = run(&package, "blind", &mut agent, Options::default());
    let v = |files: &[&str]| files.iter().map(|f| f.to_string()).collect::<Vec<String>>();
    let modules = v(&[
        "billing/__init__.py",
        "billing/fees.py",
        "billing/fees_draft.py",
        "billing/invoices.py",
        "billing/policy.py",
        "billing/replay.py",
    ]);
    let reads = file_reads(&r);
    if let Some((_, _, why)) = reads.first().filter(|(_, _, why)| !why.is_empty()) {
        assert!(std::env::var("SPECGAP_REQUIRE_EXTERNAL").as_deref() != Ok("1"), "reads not measured: {why}");
        eprintln!("skipped: reads cannot be measured here ({why})");
        return;
    }
    assert_eq!(
        reads,
        vec![
            (modules, v(&["billing/fees.py", "billing/policy.py"]), String::new()),
            (v(&["billing/policy.py"]), v(&["billing/policy.py"]), String::new()),
            (v(&["billing/fees_draft.py"]), v(&["billing/fees_draft.py"]), String::new()),
            (v(&["README.md"]), v(&["README.md"]), String::new()),
            (v(&["billing/invoices.py"]), v(&["billing/invoices.py"]), String::new()),
            (v(&[]), v(&[]), String::new()),
            (v(&["billing/fees.py", "billing/replay.py"]), v(&[]), String::new()),
            (v(&[]), v(&[]), String::new()),
        ]
    );
}
