//! Seed 001 measures: Res / Clean / Residual Gap / CondFail with repeats and several states,
//! predecessor groups, Table 3's gaps, and the acceptance-bias measures of App. D on residual
//! starts with per-test results, diffs and trajectories.

use serde_json::json;
use specgap_protocol::event::{EventKind, ToolCall};
use specgap_protocol::result::ScoringKind;
use specgap_protocol::run::EndReason;
use specgap_report::Dim;
use specgap_report::residual::residual_gap_points;

use crate::fixture::{Ep, Sub, TaskSpec, close, run_with, tests};
use crate::report_of;

fn test_ep(task: &str, start: &str, repeat: u32, success: bool) -> Ep {
    let outcome = if success { "pass" } else { "fail" };
    Ep::new(task, "g", "partial")
        .kind(ScoringKind::Test)
        .start(start)
        .repeat(repeat)
        .sub(Sub::scored(if success { 1.0 } else { 0.5 }, success, tests(&[("t1", "pass"), ("t2", outcome)])))
        .end(if success { EndReason::Accepted } else { EndReason::Submitted })
}

fn state_task(name: &str, states: &[(&'static str, &'static str)]) -> TaskSpec {
    let mut spec = TaskSpec::new(name);
    spec.states = states.iter().map(|(id, pred)| (*id, *pred, diff_of("src/a.py", &["l1"]), Some(vec![]))).collect();
    spec
}

#[test]
fn res_clean_gap_condfail_and_predecessor_groups() {
    let tasks = [
        state_task("org/t1", &[("s1", "deepseek"), ("s2", "qwen")]),
        state_task("org/t2", &[("s1", "deepseek")]),
        state_task("org/t3", &[]),
        state_task("org/t4", &[("s1", "glm")]),
    ];
    let run = run_with(7, &tasks, &[]);
    // t1: clean 1, 1 → 1.0; s1: 1, 0 → 0.5; s2: 0, 0 → 0; residual = (0.5 + 0) / 2 = 0.25.
    for (start, repeat, ok) in [
        ("clean", 0, true),
        ("clean", 1, true),
        ("residual:s1", 0, true),
        ("residual:s1", 1, false),
        ("residual:s2", 0, false),
        ("residual:s2", 1, false),
    ] {
        run.episode(&test_ep("org/t1", start, repeat, ok));
    }
    // t2: clean 1, 0 → 0.5; s1: 1, 1 → 1.0.
    for (start, repeat, ok) in [("clean", 0, true), ("clean", 1, false), ("residual:s1", 0, true), ("residual:s1", 1, true)] {
        run.episode(&test_ep("org/t2", start, repeat, ok));
    }
    // t3 has no residual start and t4 no clean start: neither enters N.
    run.episode(&test_ep("org/t3", "clean", 0, false));
    run.episode(&test_ep("org/t4", "residual:s1", 0, false));
    // An infrastructure error on t2 is not a failure.
    let mut broken = test_ep("org/t2", "residual:s1", 2, false);
    broken.end = EndReason::InfrastructureError;
    broken.status = specgap_store::Status::InfraError;
    run.episode(&broken);

    let report = report_of(&[&run], &[Dim::Agent, Dim::Condition, Dim::Start]);
    assert_eq!(report.residual.len(), 1);
    let m = &report.residual[0].measures;
    assert_eq!(m.rates.tasks, 2);
    // Res = (0.25 + 1.0) / 2 = 0.625; Clean = (1.0 + 0.5) / 2 = 0.75; Gap = 12.5 points.
    close(m.rates.res, 0.625, 1e-12);
    close(m.rates.clean, 0.75, 1e-12);
    close(m.rates.gap_points, 12.5, 1e-9);
    // CondFail: only t1's clean starts all succeeded; 1 − 0.25 = 0.75.
    let cf = m.cond_fail.clone().unwrap();
    assert_eq!(cf.tasks, 1);
    close(cf.rate, 0.75, 1e-12);
    // Predecessor groups: deepseek on t1 (s1: 0.5) and t2 (1.0): Res 0.75, Clean 0.75;
    // qwen on t1 only (s2: 0): Res 0, Clean 1.0, Gap 100. glm's task has no clean start.
    let names: Vec<&str> = m.predecessors.iter().map(|p| p.predecessor.as_str()).collect();
    assert_eq!(names, ["deepseek", "qwen"]);
    close(m.predecessors[0].rates.res, 0.75, 1e-12);
    close(m.predecessors[0].rates.clean, 0.75, 1e-12);
    assert_eq!(m.predecessors[1].rates.tasks, 1);
    close(m.predecessors[1].rates.gap_points, 100.0, 1e-9);
}

/// A residual episode whose start was evaluated as in the engine: `passed` is the starting
/// state's Success.
fn evaluated_start(task: &str, start: &str, repeat: u32, success: bool, passed: bool) -> Ep {
    let mut ep = test_ep(task, start, repeat, success);
    let outcome = if passed { "pass" } else { "fail" };
    ep.start_result = Some(tests(&[("t1", "pass"), ("t2", outcome)]));
    ep.start_success = Some(passed);
    ep
}

#[test]
fn a_residual_state_passing_the_verifier_at_the_start_is_left_out_of_res_and_listed_invalid() {
    let tasks = [state_task("org/t1", &[("good", "deepseek"), ("passes", "qwen")])];
    let run = run_with(9, &tasks, &[]);
    run.episode(&test_ep("org/t1", "clean", 0, true));
    // The valid state: 0 of 2. The state that already passes: 2 of 2 — counted, it would lift
    // Res from 0 to 0.5 and add qwen's predecessor group.
    run.episode(&evaluated_start("org/t1", "residual:good", 0, false, false));
    run.episode(&evaluated_start("org/t1", "residual:good", 1, false, false));
    run.episode(&evaluated_start("org/t1", "residual:passes", 0, true, true));
    run.episode(&evaluated_start("org/t1", "residual:passes", 1, true, true));

    let report = report_of(&[&run], &[Dim::Agent, Dim::Condition, Dim::Start]);
    assert_eq!(report.residual.len(), 1);
    let m = &report.residual[0].measures;
    close(m.rates.res, 0.0, 1e-12);
    close(m.rates.clean, 1.0, 1e-12);
    let names: Vec<&str> = m.predecessors.iter().map(|p| p.predecessor.as_str()).collect();
    assert_eq!(names, ["deepseek"]);
    // The acceptance-bias measures see the valid state's two continuations only (not 4).
    assert_eq!(m.acceptance.continuations, 2);
    let invalid: Vec<(&str, &str, usize)> =
        report.invalid_residual_states.iter().map(|s| (s.task.as_str(), s.state.as_str(), s.episodes)).collect();
    assert_eq!(invalid, [("org/t1", "passes", 2)]);
    assert!(report.warnings.contains(
        &"1 residual states passed the verifier before the first turn and are not valid residual states (seed 001 §3.1); their episodes are left out of the residual measures: org/t1/passes (2 episodes)".to_string()
    ));
    let markdown = specgap_report::render::render_markdown(&report, "r");
    assert!(markdown.contains("| org/t1 | passes | 2 |"), "{markdown}");
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(json["invalid_residual_states"], json!([{"task": "org/t1", "state": "passes", "episodes": 2}]));
}

/// Seed 001 Table 3, as printed: track, agent, Residual (%), Ref. Clean (%), Gap.
const TABLE_3: &[(&str, &str, f64, f64, f64)] = &[
    ("DeepSWE", "Gemini-3.8-Flash", 20.0, 72.2, 52.2),
    ("DeepSWE", "Qwen-3.8-Flash", 30.6, 51.1, 20.6),
    ("DeepSWE", "GLM-5.3-Flash", 15.4, 68.9, 53.5),
    ("DeepSWE", "GPT-6-Sol", 33.5, 65.6, 32.0),
    ("DeepSWE", "Kimi-K2.8-Preview", 13.0, 57.8, 44.8),
    ("Terminal-Bench", "Gemini-3.8-Flash", 14.3, 47.6, 33.3),
    ("Terminal-Bench", "Qwen-3.8-Flash", 12.7, 33.3, 20.6),
    ("Terminal-Bench", "GLM-5.3-Flash", 14.3, 38.1, 23.8),
    ("Terminal-Bench", "GPT-6-Sol", 36.5, 71.4, 34.9),
    ("Terminal-Bench", "Kimi-K2.8-Preview", 20.6, 42.9, 22.2),
];

#[test]
fn table_3_gaps_are_clean_minus_res() {
    // The gap is computed before rounding, so Clean − Res of the rounded rates may differ from
    // the printed gap by one unit of the last digit (e.g. 51.1 − 30.6 = 20.5, printed 20.6).
    for (_, _, res, clean, gap) in TABLE_3 {
        close(residual_gap_points(clean / 100.0, res / 100.0), *gap, 0.1 + 1e-9);
    }
}

/// A unified diff adding `lines` to `file` (one context line `base`).
fn diff_of(file: &str, lines: &[&str]) -> String {
    let mut text = format!(
        "diff --git a/{file} b/{file}\nindex 1111111..2222222 100644\n--- a/{file}\n+++ b/{file}\n@@ -1 +1,{} @@\n base\n",
        lines.len() + 1
    );
    for line in lines {
        text.push('+');
        text.push_str(line);
        text.push('\n');
    }
    text
}

fn shell(turn: u32, command: &str, output: &str) -> Vec<EventKind> {
    let id = format!("call-{turn}");
    vec![
        EventKind::AgentTurn {
            turn,
            text: None,
            tool_calls: vec![ToolCall { id: id.clone(), tool: "bash".into(), arguments: json!({ "command": command }) }],
            usage: None,
        },
        EventKind::ToolResult { call_id: id, tool: "bash".into(), output: output.into(), is_error: false },
    ]
}

fn read_text(turn: u32, path: &str) -> Vec<EventKind> {
    let id = format!("call-{turn}");
    vec![
        EventKind::AgentTurn {
            turn,
            text: None,
            tool_calls: vec![ToolCall { id: id.clone(), tool: "read_text".into(), arguments: json!({ "path": path }) }],
            usage: None,
        },
        EventKind::ToolResult { call_id: id, tool: "read_text".into(), output: "1 c".into(), is_error: false },
    ]
}

/// A normally submitted episode of task `org/r` with final tests and diff.
fn final_state(start: &str, repeat: u32, final_tests: &[(&str, &str)], diff: String, turns: u32) -> Ep {
    let success = final_tests.iter().all(|(_, o)| *o == "pass");
    let mut sub = Sub::scored(if success { 1.0 } else { 0.0 }, success, tests(final_tests));
    sub.diff = diff;
    let mut ep = Ep::new("org/r", "g", "partial").kind(ScoringKind::Test).start(start).repeat(repeat).sub(sub);
    ep.end = if success { EndReason::Accepted } else { EndReason::Submitted };
    ep.turns = turns;
    if start != "clean" {
        // The residual state fails t1 and t2 (App. D.2: F(S_r) = {t1, t2}).
        ep.start_result = Some(tests(&[("t1", "fail"), ("t2", "fail"), ("t3", "pass")]));
    }
    ep
}

#[test]
fn acceptance_bias_on_normally_submitted_episodes() {
    let mut spec = TaskSpec::new("org/r");
    spec.workspace = vec![("src/a.py", "base\n"), ("src/b.py", "b\n")];
    // The gold changes a.py and b.py; the predecessor only a.py, adding l1..l4: L = {src/b.py}.
    spec.gold = vec![("src/a.py", "base\nfixed\n"), ("src/b.py", "b2\n")];
    spec.states = vec![("s", "deepseek", diff_of("src/a.py", &["l1", "l2", "l3", "l4"]), None)];
    let run = run_with(8, &[spec], &[]);

    // Clean runs: c1 passes t1, t2 and changes b.py (20 turns); c2 passes t1 only, changes a.py
    // (30 turns). Mean clean turns 25.
    run.episode(&final_state("clean", 0, &[("t1", "pass"), ("t2", "pass"), ("t3", "fail")], diff_of("src/b.py", &["b2"]), 20));
    run.episode(&final_state("clean", 1, &[("t1", "pass"), ("t2", "fail"), ("t3", "fail")], diff_of("src/a.py", &["q"]), 30));
    // r1: same failing tests, keeps l1 l2 l3 (3/4), runs git status and cats b.py; 10 turns.
    let mut r1 =
        final_state("residual:s", 0, &[("t1", "fail"), ("t2", "fail"), ("t3", "pass")], diff_of("src/a.py", &["l1", "l2", "x", "l3"]), 10);
    r1.events = [shell(1, "git status --short", " M src/a.py"), shell(2, "cat src/b.py", "b")].concat();
    run.episode(&r1);
    // r2: repairs t1, keeps l4 only (1/4), changes b.py, reads an unrelated file; 15 turns.
    let r2_diff = format!("{}{}", diff_of("src/a.py", &["l4", "y"]), diff_of("src/b.py", &["b3"]));
    let mut r2 = final_state("residual:s", 1, &[("t1", "pass"), ("t2", "fail"), ("t3", "pass")], r2_diff, 15);
    r2.events = read_text(1, "src/c.py");
    run.episode(&r2);
    // r3: succeeds, keeps all four lines; no tool call; 25 turns.
    run.episode(&final_state(
        "residual:s",
        2,
        &[("t1", "pass"), ("t2", "pass"), ("t3", "pass")],
        diff_of("src/a.py", &["l1", "l2", "l3", "l4", "z"]),
        25,
    ));
    // r4: an automatic submission at a budget end is not normally submitted (App. D.1).
    let mut r4 = final_state("residual:s", 3, &[("t1", "pass"), ("t2", "pass"), ("t3", "pass")], String::new(), 99);
    r4.subs[0].automatic = true;
    r4.subs[0].declared = false;
    r4.end = EndReason::TurnBudget;
    run.episode(&r4);

    let report = report_of(&[&run], &[Dim::Agent, Dim::Condition, Dim::Start]);
    let m = &report.residual[0].measures;
    // Res counts r4 as a failure (App. D.1: a run that exhausts its budget fails, whatever its
    // automatic submission scored): r1 0, r2 0, r3 1, r4 0.
    close(m.rates.res, 0.25, 1e-12);
    close(m.rates.clean, 0.0, 1e-12);
    let a = &m.acceptance;
    assert_eq!(a.continuations, 3);
    // Same failing over failed continuations r1 (same), r2 (not): 1/2.
    close(a.same_failing.unwrap(), 0.5, 1e-12);
    // Initially failing {t1, t2}: residual r1 0/2, r2 1/2, r3 2/2 → 0.5; clean c1 2/2, c2 1/2
    // → 0.75 for every continuation; repair over failed r1, r2: (0 + 0.5) / 2.
    close(a.initially_failing_residual.unwrap(), 0.5, 1e-12);
    close(a.initially_failing_clean.unwrap(), 0.75, 1e-12);
    close(a.repair_rate_failed.unwrap(), 0.25, 1e-12);
    // Kept over failed continuations: r1 3/4, r2 1/4 → 0.5.
    close(a.kept_failed.unwrap(), 0.5, 1e-12);
    // Left-out file b.py: clean c1 yes, c2 no → 0.5; continuations r1 no, r2 yes, r3 no → 1/3;
    // opened: r1 (cat) only → 1/3.
    close(a.left_out_clean.unwrap(), 0.5, 1e-12);
    close(a.left_out_residual.unwrap(), 1.0 / 3.0, 1e-12);
    close(a.left_out_opened.unwrap(), 1.0 / 3.0, 1e-12);
    // Steps: 10/25, 15/25, 25/25 → task mean 2/3, median over one task.
    close(a.steps_ratio.unwrap(), 2.0 / 3.0, 1e-12);
    // Inspection: r1 (git status) only.
    close(a.inspected.unwrap(), 1.0 / 3.0, 1e-12);
    // Kept split at the median 0.75: above r3 (success 1), at or below r1, r2 (success 0).
    let split = a.kept_split.clone().unwrap();
    close(split.median_kept, 0.75, 1e-12);
    assert_eq!(split.rule, specgap_report::residual::KeptSplitRule::AboveMedian);
    assert_eq!((split.high, split.low), (1, 2));
    assert_eq!((split.success_high, split.success_low), (1.0, 0.0));
}

#[test]
fn without_the_package_the_package_measures_are_absent() {
    let run = run_with(9, &[], &["org/r"]);
    let mut r = final_state("residual:s", 0, &[("t1", "fail"), ("t2", "fail"), ("t3", "pass")], diff_of("src/a.py", &["l1"]), 10);
    r.subs[0].success = false;
    run.episode(&r);
    run.episode(&final_state("clean", 0, &[("t1", "pass"), ("t2", "pass"), ("t3", "pass")], String::new(), 10));
    let report = report_of(&[&run], &[Dim::Agent]);
    let m = &report.residual[0].measures;
    // Per-test measures still apply; Kept, Left-out files and inspection need the package.
    close(m.acceptance.same_failing.unwrap(), 1.0, 1e-12);
    assert_eq!(m.acceptance.kept_failed, None);
    assert_eq!(m.acceptance.left_out_residual, None);
    assert_eq!(m.acceptance.inspected, None);
    assert_eq!(m.predecessors[0].predecessor, "unknown");
    let json = serde_json::to_value(&report).unwrap();
    assert!(json["residual"][0]["measures"]["acceptance"].get("kept_failed").is_none(), "absent, not 0: {json}");
}

/// The same state change written as another diff algorithm would: the context line `base` is
/// deleted and added back before the predecessor's four lines.
fn other_algorithm_patch() -> String {
    "diff --git a/src/a.py b/src/a.py\nindex 1111111..2222222 100644\n--- a/src/a.py\n+++ b/src/a.py\n@@ -1 +1,5 @@\n-base\n+base\n+l1\n+l2\n+l3\n+l4\n".to_string()
}

#[test]
fn kept_comes_from_the_harness_diff_whatever_algorithm_made_state_patch() {
    let mut spec = TaskSpec::new("org/r");
    spec.workspace = vec![("src/a.py", "base\n")];
    spec.states = vec![("s", "deepseek", other_algorithm_patch(), Some(vec![]))];
    let run = run_with(30, &[spec], &[]);
    run.episode(&final_state("clean", 0, &[("t1", "pass"), ("t2", "pass"), ("t3", "pass")], String::new(), 10));
    // r1 (an older store: no start/workspace.diff) and r2 leave the state untouched and fail:
    // their final diff is the harness's diff of the state, `+l1..+l4` under ` base`. From
    // state.patch's text P would hold `base` too and Kept would be 4/5 = 80%; rebuilt from the
    // package as the engine diffs it, P = l1..l4 and Kept = 4/4.
    let untouched = diff_of("src/a.py", &["l1", "l2", "l3", "l4"]);
    for repeat in 0..2 {
        let mut r = final_state("residual:s", repeat, &[("t1", "fail"), ("t2", "fail"), ("t3", "pass")], untouched.clone(), 10);
        // r2 breaks t3, which passed in the state: 1 of 1 passing test broken.
        if repeat == 1 {
            r.subs[0].result = tests(&[("t1", "fail"), ("t2", "pass"), ("t3", "fail")]);
        }
        run.episode(&r);
    }
    // r3 stored the state's diff with P = {l1, l2, zz}: the stored diff wins over rebuilding;
    // it keeps l1 and l2 of 3. It succeeds.
    let mut r3 =
        final_state("residual:s", 2, &[("t1", "pass"), ("t2", "pass"), ("t3", "pass")], diff_of("src/a.py", &["l1", "l2", "fix"]), 10);
    r3.start_diff = Some(diff_of("src/a.py", &["l1", "l2", "zz"]));
    run.episode(&r3);
    // r4 discards the inherited work (git checkout) and writes its own line: Kept 0.
    run.episode(&final_state("residual:s", 3, &[("t1", "pass"), ("t2", "pass"), ("t3", "pass")], diff_of("src/a.py", &["mine"]), 10));
    let report = report_of(&[&run], &[Dim::Agent, Dim::Condition, Dim::Start]);
    assert!(report.warnings.iter().all(|w| !w.contains("Kept")), "rebuilt from the package, no warning: {:?}", report.warnings);
    let a = &report.residual[0].measures.acceptance;
    // Kept over failed continuations r1, r2: 1.0 each.
    close(a.kept_failed.unwrap(), 1.0, 1e-12);
    // Kept values 1, 1, 2/3, 0: median (2/3 + 1) / 2 = 5/6; above it r1, r2 (both fail), at or
    // below r3, r4 (both succeed).
    let split = a.kept_split.clone().unwrap();
    close(split.median_kept, 5.0 / 6.0, 1e-12);
    assert_eq!((split.high, split.low), (2, 2));
    assert_eq!((split.success_high, split.success_low), (0.0, 1.0));
    // Broken over failed continuations: r1 0/1, r2 1/1 → 0.5. Discarded all: r4 of 4.
    close(a.broken_failed.unwrap(), 0.5, 1e-12);
    close(a.discarded_all.unwrap(), 0.25, 1e-12);
    // Table 2 statistics of the state: the patch as shipped (1 file, 5 added, 1 deleted), the
    // evaluator's start verdict (t1, t2 fail, t3 passes: 3 tests, 2 failing, 1/3 passing).
    let b = report.residual_benchmark.clone().unwrap();
    assert_eq!((b.tasks, b.states, b.one_to_three_failing), (1, 1, 1));
    assert_eq!(b.tasks_by_states.into_iter().collect::<Vec<_>>(), [(1, 1)]);
    let s = &b.per_state[0];
    assert_eq!((s.predecessor.as_str(), s.steps, s.files, s.added_lines, s.deleted_lines), ("deepseek", 10, 1, 5, 1));
    assert_eq!(s.patch_bytes, other_algorithm_patch().len() as u64);
    assert_eq!((s.tests, s.failing), (Some(3), Some(2)));
    close(s.pass_rate.unwrap(), 1.0 / 3.0, 1e-12);
    close(b.median_steps, 10.0, 0.0);
}

#[test]
fn kept_split_moves_to_the_median_when_it_is_the_maximum() {
    use specgap_report::residual::{KeptSplitRule, kept_split};
    // Kept 1, 1, 1, 0: the median 1 is the maximum, so nothing lies above it; the halves are
    // Kept ≥ 1 (two failures, one success: 1/3) against Kept < 1 (one success).
    let split = kept_split(&[(1.0, false), (1.0, false), (1.0, true), (0.0, true)]).unwrap();
    assert_eq!(split.rule, KeptSplitRule::AtOrAboveMedian);
    assert_eq!((split.high, split.low), (3, 1));
    close(split.success_high, 1.0 / 3.0, 1e-12);
    assert_eq!(split.success_low, 1.0);
    // Every Kept equal: no split.
    assert_eq!(kept_split(&[(1.0, true), (1.0, false)]), None);
}

fn agent_ep(agent: &str, start: &str, repeat: u32, success: bool) -> Ep {
    let mut ep = test_ep("org/t", start, repeat, success);
    ep.agent = agent.into();
    ep
}

#[test]
fn clean_and_residual_rankings_with_spearman_and_reversed_pairs() {
    let run = run_with(31, &[state_task("org/t", &[("s1", "deepseek")])], &[]);
    // (agent, clean outcomes, residual outcomes): Clean a1 1.0, a2 0.5, a3 0.0, a4 0.5;
    // Res a1 0.0, a2 0.5, a3 1.0, a4 0.0.
    let agents = [
        ("a1", [true, true], [false, false]),
        ("a2", [true, false], [true, false]),
        ("a3", [false, false], [true, true]),
        ("a4", [true, false], [false, false]),
    ];
    for (agent, clean, res) in agents {
        for repeat in 0..2 {
            run.episode(&agent_ep(agent, "clean", repeat, clean[repeat as usize]));
            run.episode(&agent_ep(agent, "residual:s1", repeat, res[repeat as usize]));
        }
    }
    let report = report_of(&[&run], &[Dim::Agent, Dim::Condition, Dim::Start]);
    assert_eq!(report.rankings.len(), 1);
    let r = &report.rankings[0].ranking;
    // Ascending ranks with ties averaged: Clean (4, 2.5, 1, 2.5), Res (1.5, 3, 4, 1.5); their
    // Pearson correlation is −3.75 / 4.5 = −5/6. With n = 4 the t statistic has 2 degrees of
    // freedom, whose two-sided p-value is 1 − |ρ| = 1/6 exactly.
    close(r.rho.unwrap(), -5.0 / 6.0, 1e-12);
    close(r.p_value.unwrap(), 1.0 / 6.0, 1e-12);
    // Pairs ordered strictly opposite: a1–a2, a1–a3, a2–a3, a3–a4 (a1–a4 tie on Res, a2–a4 on
    // Clean): 4 of 6.
    assert_eq!((r.reversed_pairs, r.pairs), (4, 6));
    let ranks: Vec<(&str, f64, f64)> = r.agents.iter().map(|a| (a.agent.as_str(), a.clean_rank, a.res_rank)).collect();
    assert_eq!(ranks, [("a1", 1.0, 3.5), ("a2", 2.5, 2.0), ("a4", 2.5, 3.5), ("a3", 4.0, 1.0)]);
    // Grouped without the agent there is nothing to rank.
    let report = report_of(&[&run], &[Dim::Condition, Dim::Start]);
    assert!(report.rankings.is_empty());
}
