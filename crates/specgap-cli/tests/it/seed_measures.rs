//! The seed 000 and seed 001 measures on real runs of the bundled examples with replay scripts
//! (issue "Seed 001 end to end" items 2, 4, 5; issue "Protocol fidelity to seed 000" item 1):
//! In round / Ahead when the agent stops, loops or runs out of budget after a report; opened,
//! inspected and Kept for ordinary shell habits on `examples/interval-tree`; a budget-ended
//! residual episode counted as a failure in Res. Every expected value is derived in the
//! comments from the papers' definitions and the packages' contents.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::support::*;

fn example(task: &str) -> PathBuf {
    repo().join("examples/tasks").join(task)
}

/// Runs `agents` (comma-separated) on one example task with `flags` into `out`.
fn run_into(out: &Path, task: &str, agents: &str, flags: &[&str]) {
    let suite = example(task);
    let mut args: Vec<&OsStr> = vec![OsStr::new("run"), suite.as_os_str(), OsStr::new("--agent"), OsStr::new(agents)];
    args.extend(flags.iter().map(OsStr::new));
    args.extend([OsStr::new("--jobs"), OsStr::new("2"), OsStr::new("--no-report"), OsStr::new("--out"), out.as_os_str()]);
    run_ok(args);
}

/// `specgap report RUNS… --format json` with extra flags.
fn report_of(runs: &[&Path], flags: &[&str]) -> Value {
    let mut args: Vec<&OsStr> = vec![OsStr::new("report")];
    args.extend(runs.iter().map(|r| r.as_os_str()));
    args.extend(flags.iter().map(OsStr::new));
    args.extend([OsStr::new("--format"), OsStr::new("json")]);
    let output = run_ok(args);
    serde_json::from_slice(&output.stdout).expect("report is json")
}

/// The lines of an example script, parsed.
fn script_lines(name: &str) -> Vec<Value> {
    std::fs::read_to_string(repo().join("examples/scripts").join(name))
        .expect("read script")
        .lines()
        .map(|l| serde_json::from_str(l).expect("script line is json"))
        .collect()
}

/// The resolution of the group whose key has `field` = `value` (and condition `partial`).
fn resolution<'r>(report: &'r Value, field: &str, value: &str) -> &'r Value {
    report["groups"]
        .as_array()
        .expect("groups")
        .iter()
        .find(|g| g["key"][field] == value && g["key"]["condition"] == "partial")
        .map(|g| &g["resolution"])
        .unwrap_or_else(|| panic!("no partial group with {field} = {value} in {report:#}"))
}

fn counts(r: &Value) -> [u64; 7] {
    ["reported", "fixed_next", "fixed_second", "neither", "never", "remaining_unstated", "resolved_ahead"]
        .map(|f| r[f].as_u64().unwrap_or_else(|| panic!("no {f} in {r:#}")))
}

#[test]
fn in_round_and_ahead_when_the_agent_stops_loops_or_runs_out_after_a_report() {
    // examples/scripts/README.md: payment-retry-careful submits three times. Submission 1 (the
    // literal retry loop) passes only the stated `retry-timeouts`; the owner reports
    // `charge-once`. Submission 2 passes `charge-once`, `retry-timeouts`, `declines-final`; the
    // owner reports `respect-busy-wait`. Submission 3 passes all five.
    let careful = script_lines("payment-retry-careful.jsonl");
    assert_eq!(careful.len(), 16);
    let tmp = tempfile::tempdir().unwrap();
    // stop: the first seven lines (up to the first submit), then the script ends.
    let stop = write_script(tmp.path(), "stop.jsonl", &careful[..7]);
    // loop: the same, then one call repeated until the fourth identical call ends the episode.
    let mut looping = careful[..7].to_vec();
    looping.extend(std::iter::repeat_n(json!({"tool": "read_text", "arguments": {"path": "README.md"}}), 4));
    let looping = write_script(tmp.path(), "loop.jsonl", &looping);
    // budget: nine lines — after the report it reads and writes submission 2's code, and the
    // nine-turn budget ends the episode before it submits: the changed workspace is submitted
    // automatically (DESIGN §3.5).
    let budget = write_script(tmp.path(), "budget.jsonl", &careful[..9]);
    let careful = repo().join("examples/scripts/payment-retry-careful.jsonl");
    let agents = [&stop, &looping, &careful].map(|p| format!("replay:{}", p.display())).join(",");
    let main = tmp.path().join("main");
    run_into(&main, "payment-retry", &agents, &["--condition", "partial,full"]);
    let short = tmp.path().join("short");
    run_into(&short, "payment-retry", &format!("replay:{}", budget.display()), &["--condition", "partial", "--turns", "9"]);

    let report = report_of(&[&main, &short], &[]);
    let agent = |p: &Path| crate::support::label_of(&format!("replay:{}", p.display()));
    let end_reasons = |p: &Path| {
        report["groups"]
            .as_array()
            .unwrap()
            .iter()
            .find(|g| g["key"]["agent"] == agent(p).as_str() && g["key"]["condition"] == "partial")
            .unwrap()["end_reasons"]
            .clone()
    };
    assert_eq!(end_reasons(&stop), json!({"agent_done": 1}));
    assert_eq!(end_reasons(&looping), json!({"loop_repeated_call": 1}));
    assert_eq!(end_reasons(&budget), json!({"turn_budget": 1}));
    assert_eq!(end_reasons(&careful), json!({"accepted": 1}));
    // [reported, fixed next, fixed second, neither, never, remaining unstated, resolved ahead]
    // stop / loop: `charge-once` reported and never submitted again (neither, never). The
    // remaining unstated requirements after submission 1 are those failing, not stated and not
    // reported: declines-final, respect-busy-wait, checkout-deadline; none resolved. Before this
    // fix both episodes dropped out of In round and Ahead.
    for p in [&stop, &looping] {
        let r = resolution(&report, "agent", &agent(p));
        assert_eq!(counts(r), [1, 0, 0, 1, 1, 3, 0], "{}", p.display());
        assert_eq!(r["in_round"], 0.0);
        // Under full the same script submits once (the literal loop), failing charge-once.
        assert_eq!((r["neither_with_full"].as_u64(), r["neither_pass_under_full"].as_f64()), (Some(1), Some(0.0)));
    }
    // budget: the automatic submission 2 passes charge-once (fixed next) and declines-final
    // (resolved ahead, never reported).
    let r = resolution(&report, "agent", &agent(&budget));
    assert_eq!(counts(r), [1, 1, 0, 0, 0, 3, 1]);
    // careful: charge-once fixed at 2, respect-busy-wait (first reported at 2) fixed at 3;
    // ahead: declines-final passes at 2, checkout-deadline at 3, neither reported before.
    let r = resolution(&report, "agent", &agent(&careful));
    assert_eq!(counts(r), [2, 2, 0, 0, 0, 3, 2]);
    assert_eq!(r["in_round"], 1.0);

    // Pooled over the four partial episodes: In round 3/5 (the old rule gave 3/3), Ahead 3/12
    // (the old rule gave 3/6); the neither group (stop's and loop's charge-once) passes under
    // full in 0 of 2.
    let pooled = report_of(&[&main, &short], &["--group-by", "condition"]);
    let r = resolution(&pooled, "condition", "partial");
    assert_eq!(r["episodes"], 4);
    assert_eq!(counts(r), [5, 3, 0, 2, 2, 12, 3]);
    assert_eq!(r["in_round"], 0.6);
    assert_eq!(r["ahead"], 0.25);
    assert_eq!((r["neither_with_full"].as_u64(), r["neither_pass_under_full"].as_f64()), (Some(2), Some(0.0)));
}

/// A two-line script: one shell command, then `submit`.
fn probe(dir: &Path, name: &str, command: &str) -> PathBuf {
    write_script(
        dir,
        name,
        &[json!({"tool": "bash", "arguments": {"command": command, "timeout_sec": 30}}), json!({"tool": "submit", "arguments": {}})],
    )
}

#[test]
fn opened_inspected_and_kept_follow_ordinary_shell_habits() {
    let tmp = tempfile::tempdir().unwrap();
    // heredoc: rewrites ivtree/node.py from a here-document whose body holds lines that look
    // like commands (`git status`, `cat ivtree/tree.py`): a write, no read, no inspection.
    let heredoc = probe(tmp.path(), "heredoc.jsonl", "cat > ivtree/node.py <<'EOF'\ngit status\ncat ivtree/tree.py\nEOF");
    // missing: reads a path outside the workspace that does not exist: nothing opened.
    let missing = probe(tmp.path(), "missing.jsonl", "cat /nonexistent/ivtree/node.py");
    // cd: reads node.py after `cd ivtree`.
    let cd = probe(tmp.path(), "cd.jsonl", "cd ivtree && cat node.py");
    // glob: reads every ivtree/*.py (__init__, interval, node, tree).
    let glob = probe(tmp.path(), "glob.jsonl", "cat ivtree/*.py");
    let probes = [&heredoc, &missing, &cd, &glob];
    let agents = probes.map(|p| format!("replay:{}", p.display())).join(",");
    let out = tmp.path().join("run");
    let flags = ["--condition", "partial", "--feedback", "off", "--profile", "shell", "--start", "clean,residual:all"];
    run_into(&out, "interval-tree", &agents, &flags);
    // The harness stored its own diff of each starting state (issue item 5).
    let store = specgap_store::Store::open(&out).unwrap();
    let residual_episode = store.episodes().unwrap().into_iter().find(|e| e.start == "residual:root-refresh").unwrap();
    let start_diff = std::fs::read_to_string(store.episode_dir(&residual_episode.id).join("start/workspace.diff")).unwrap();
    assert!(start_diff.contains("diff --git a/repro_remove.py b/repro_remove.py"), "{start_diff}");

    let report = report_json(&out);
    let row = |p: &Path| {
        report["residual"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["key"]["agent"] == crate::support::label_of(&format!("replay:{}", p.display())).as_str())
            .unwrap_or_else(|| panic!("no residual row for {}", p.display()))["measures"]["acceptance"]
            .clone()
    };
    // Every continuation fails (both states fail their hidden tests and none of the probes fixes
    // them) and is normally submitted; each agent's clean run is its Left-out partner.
    // Inspected is averaged over the two continuations of the task; Left-out files apply to
    // root-refresh only (L = {ivtree/node.py}; trim-only changes every file the gold changes).
    // Kept: trim-only's state adds 66 lines, 5 of them in ivtree/node.py; root-refresh's adds
    // 92, none in node.py (residual/*/state.patch, and the harness's diff of each state).
    let expect = |p: &Path, inspected: f64, opened: f64, changed: f64, kept: f64| {
        let a = row(p);
        let name = p.display();
        assert_eq!(a["continuations"], 2, "{name}: {a:#}");
        assert_eq!(a["inspected"].as_f64(), Some(inspected), "{name} inspected: {a:#}");
        assert_eq!(a["left_out_opened"].as_f64(), Some(opened), "{name} opened: {a:#}");
        assert_eq!(a["left_out_residual"].as_f64(), Some(changed), "{name} changed: {a:#}");
        let got = a["kept_failed"].as_f64().unwrap();
        assert!((got - kept).abs() < 1e-12, "{name} kept: {got} != {kept}");
    };
    // heredoc: trim-only loses its 5 node.py lines (61/66 kept), root-refresh keeps all 92;
    // node.py, root-refresh's left-out file, is changed but not opened.
    expect(&heredoc, 0.0, 0.0, 1.0, (61.0 / 66.0 + 1.0) / 2.0);
    expect(&missing, 0.0, 0.0, 0.0, 1.0);
    // cd: node.py opened — trim-only's predecessor modified it (inspection), root-refresh's did
    // not (no inspection there) but it is the left-out file (opened).
    expect(&cd, 0.5, 1.0, 0.0, 1.0);
    // glob: node.py and tree.py opened — tree.py is modified by both predecessors.
    expect(&glob, 1.0, 1.0, 0.0, 1.0);
}

#[test]
fn a_residual_episode_that_ends_on_its_budget_is_a_failure_in_res() {
    // interval-verify-inherited fixes both files by its seventh line and submits at its
    // eleventh. With an eight-turn budget the episode ends on the budget; its changed workspace
    // is submitted automatically and passes all 11 hidden tests. Seed 000's Score@1 keeps that
    // submission (1.0); seed 001 counts a run that exhausted its budget as a failure (App. C.1,
    // D.1): Res = Clean = 0, and no continuation is normally submitted.
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let verify = repo().join("examples/scripts/interval-verify-inherited.jsonl");
    let flags = ["--condition", "partial", "--feedback", "off", "--profile", "shell", "--start", "clean,residual:all", "--turns", "8"];
    run_into(&out, "interval-tree", &format!("replay:{}", verify.display()), &flags);
    let report = report_json(&out);
    for g in report["groups"].as_array().unwrap() {
        assert_eq!(g["end_reasons"], json!({"turn_budget": 1}), "{g:#}");
        assert_eq!(g["outcomes"]["score_at"][0], 1.0, "{g:#}");
    }
    let m = &report["residual"][0]["measures"];
    assert_eq!((m["rates"]["res"].as_f64(), m["rates"]["clean"].as_f64()), (Some(0.0), Some(0.0)));
    assert_eq!(m["acceptance"]["continuations"], 0);
}
