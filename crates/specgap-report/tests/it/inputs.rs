//! Input checks of a report (`specgap_report::inputs`): a run given twice, shards, episodes
//! without a result, and seed replicates that differ in more than the seed. Every warning is
//! asserted as the exact text the report carries.

use std::path::Path;

use specgap_protocol::run::{EndReason, EpisodeKey};
use specgap_report::inputs::{distinct_run_dirs, planned_episode_ids};
use specgap_report::{Dim, ReportError, ReportOptions, RunData, Selection, build_report};
use specgap_store::{EpisodeMeta, NotApplicableRow, Status};

use crate::fixture::{Ep, Run, TaskSpec, run_configured, run_with};
use crate::report_of;

/// A finished episode of agent `a` under `partial` from `clean`: the fixture's plan.
fn planned(task: &str, repeat: u32) -> Ep {
    Ep::new(task, "a", "partial").repeat(repeat)
}

fn with_status(mut ep: Ep, status: Status, end: EndReason) -> Ep {
    ep.status = status;
    ep.end = end;
    ep
}

fn report_warnings(runs: &[&Run], dims: &[Dim]) -> Vec<String> {
    report_of(runs, dims).warnings
}

fn d(run: &Run) -> String {
    run.dir.display().to_string()
}

#[test]
fn a_run_given_twice_is_refused_naming_it() {
    let run = run_with(1, &[TaskSpec::new("org/x")], &[]);
    run.episode(&planned("org/x", 0));
    let data = RunData::load(&run.dir).unwrap();
    let err = build_report(&[data.clone(), data], &ReportOptions::default()).unwrap_err();
    assert!(matches!(err, ReportError::DuplicateRun { .. }));
    assert_eq!(
        err.to_string(),
        format!("run directory {} is given twice; give each run once (seed replicates are different runs)", d(&run))
    );

    // Another spelling of the same directory (a `.` component, a symlink) is the same run.
    let dotted = run.dir.join(".");
    let err = distinct_run_dirs(&[run.dir.as_path(), dotted.as_path()]).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "run directory {} is given twice (again as {}); give each run once (seed replicates are different runs)",
            d(&run),
            dotted.display()
        )
    );
    let link = run.dir.with_file_name("link");
    std::os::unix::fs::symlink(&run.dir, &link).unwrap();
    assert!(matches!(distinct_run_dirs(&[link.as_path(), run.dir.as_path()]), Err(ReportError::DuplicateRun { .. })));

    // Different runs pass; so do paths that do not exist (loading reports those).
    let other = run_with(2, &[TaskSpec::new("org/x")], &[]);
    assert!(distinct_run_dirs(&[run.dir.as_path(), other.dir.as_path()]).is_ok());
    assert!(distinct_run_dirs(&[Path::new("/nonexistent/a"), Path::new("/nonexistent/b")]).is_ok());
}

/// Regression (issue 30 item 9): two runs holding the same episode (two runs of one
/// configuration and seed, or a run and a merge holding it) were both counted.
#[test]
fn runs_holding_the_same_episode_are_refused_naming_both_and_the_episode() {
    let first = run_with(4, &[TaskSpec::new("org/x")], &[]);
    let second = run_with(4, &[TaskSpec::new("org/x")], &[]);
    let shared = first.episode(&planned("org/x", 0));
    assert_eq!(second.episode(&planned("org/x", 0)), shared, "one key, one id");
    first.episode(&planned("org/x", 1));
    second.episode(&planned("org/x", 2));
    let runs = [RunData::load(&first.dir).unwrap(), RunData::load(&second.dir).unwrap()];
    let err = build_report(&runs, &ReportOptions::default()).unwrap_err();
    assert!(matches!(err, ReportError::SharedEpisodes { shared: 1, .. }), "{err:?}");
    assert_eq!(
        err.to_string(),
        format!(
            "runs {} and {} both hold 1 episode(s) (e.g. {shared}); a report over both would count them twice: report a merge of them (`specgap merge` keeps one copy of each episode two runs hold alike and refuses differing copies) or leave one out",
            d(&first),
            d(&second)
        )
    );
    // Runs of other seeds hold other episodes: they pass.
    let third = run_with(5, &[TaskSpec::new("org/x")], &[]);
    third.episode(&planned("org/x", 0));
    let runs = [RunData::load(&first.dir).unwrap(), RunData::load(&third.dir).unwrap()];
    assert!(build_report(&runs, &ReportOptions::default()).is_ok());
}

#[test]
fn a_complete_run_has_no_input_warning() {
    let run = run_configured(3, &[TaskSpec::new("org/x")], &[], |c| c.repeats = 2);
    run.episode(&planned("org/x", 0));
    // An evaluation error is a result (reported apart), not a missing one.
    run.episode(&with_status(planned("org/x", 1), Status::EvalError, EndReason::EvaluationError));
    assert_eq!(report_warnings(&[&run], &[Dim::Agent]), Vec::<String>::new());
}

#[test]
fn episodes_without_a_result_are_counted_against_the_plan() {
    // Plan: org/x × a × {partial, full} × clean × 4 repeats, with full not applicable:
    // 4 episodes. Stored: repeat 0 finished, 1 interrupted, 2 left running; repeat 3 absent.
    let run = run_configured(4, &[TaskSpec::new("org/x")], &[], |c| {
        c.repeats = 4;
        c.conditions = vec!["partial".into(), "full".into()];
    });
    run.store
        .record_not_applicable(&NotApplicableRow {
            task: "org/x".into(),
            agent: "a".into(),
            condition: "full".into(),
            start: "clean".into(),
            reason: "condition full needs instruction.full.md".into(),
        })
        .unwrap();
    run.episode(&planned("org/x", 0));
    run.episode(&with_status(planned("org/x", 1), Status::Interrupted, EndReason::Interrupted));
    begin_without_end(&run, "org/x", 2);
    let data = RunData::load(&run.dir).unwrap();
    assert_eq!(planned_episode_ids(&data).unwrap().len(), 4);
    assert_eq!(
        report_warnings(&[&run], &[Dim::Agent]),
        [format!(
            "run {0}: 3 of 4 planned episodes have no result (1 absent from the store, 2 interrupted or still running); the measures use the other 1 — resume with `specgap run --resume {0}`",
            d(&run)
        )]
    );
    // While a runner holds the store, the advice is to wait, not to resume.
    let _runner = specgap_store::lock_runner(&run.dir).unwrap();
    assert_eq!(
        report_warnings(&[&run], &[Dim::Agent]),
        [format!(
            "run {0}: 3 of 4 planned episodes have no result (1 absent from the store, 2 interrupted or still running); the measures use the other 1 — a specgap process is still running it; report again when it ends",
            d(&run)
        )]
    );
}

/// Begins an episode of the fixture's plan and never ends it (status `running`, as a killed
/// process leaves it).
fn begin_without_end(run: &Run, task: &str, repeat: u32) {
    let key = EpisodeKey {
        task: task.into(),
        task_hash: specgap_task::load(run.dir.with_file_name("suite").join(task.replace('/', "_"))).unwrap().hash().to_string(),
        agent: "a".into(),
        agent_hash: "h".into(),
        user_hash: "u".into(),
        condition: "partial".into(),
        start: "clean".into(),
        repeat,
        seed: run.seed,
    };
    let meta = EpisodeMeta {
        user: "relay".into(),
        family: specgap_protocol::package::Family::Swe,
        scoring_kind: specgap_protocol::result::ScoringKind::Requirement,
    };
    drop(run.store.begin_episode(&key, &meta).unwrap());
}

#[test]
fn residual_all_expands_to_the_task_states_and_a_shard_keeps_its_positions() {
    let mut task = TaskSpec::new("org/res");
    task.states = vec![("s1", "p1", String::new(), Some(vec![])), ("s2", "p2", String::new(), Some(vec![]))];
    // Plan positions: clean r0 r1, residual:s1 r0 r1, residual:s2 r0 r1 (0..6); shard 2/4
    // keeps positions 1 and 5: clean r1 and residual:s2 r1.
    let run = run_configured(5, &[task.clone(), TaskSpec::new("org/plain")], &[], |c| {
        c.repeats = 2;
        c.starts = vec!["clean".into(), "residual:all".into()];
        c.shard = Some([2, 4]);
    });
    run.episode(&planned("org/res", 1));
    run.episode(&planned("org/res", 1).start("residual:s2"));
    // org/plain has no residual state: positions 6 (clean r0) and 7 (clean r1); shard 2/4
    // keeps none of them.
    let data = RunData::load(&run.dir).unwrap();
    assert_eq!(planned_episode_ids(&data).unwrap().len(), 2);
    assert_eq!(
        report_warnings(&[&run], &[Dim::Agent]),
        [format!(
            "run {} is shard 2/4 of a sharded run: it holds only that shard's episodes, and shards are not seed replicates — join the shards with `specgap merge SHARD... --out DIR` and report the merged run",
            d(&run)
        )]
    );
}

#[test]
fn shards_given_together_are_each_named_and_not_called_replicates() {
    let make = |index: u32, repeat: u32| {
        let run = run_configured(6, &[TaskSpec::new("org/x")], &[], |c| {
            c.repeats = 2;
            c.shard = Some([index, 2]);
        });
        run.episode(&planned("org/x", repeat));
        run
    };
    let (s1, s2) = (make(1, 0), make(2, 1));
    let shard = |run: &Run, i: u32| {
        format!(
            "run {} is shard {i}/2 of a sharded run: it holds only that shard's episodes, and shards are not seed replicates — join the shards with `specgap merge SHARD... --out DIR` and report the merged run",
            d(run)
        )
    };
    // Same seed, configurations equal but for the shard: only the shard warnings.
    assert_eq!(report_warnings(&[&s1, &s2], &[Dim::Agent]), [shard(&s1, 1), shard(&s2, 2)]);
}

#[test]
fn unknown_plan_falls_back_to_unfinished_episodes() {
    // residual:all over a task whose package is gone: its states, hence the plan, are unknown.
    let run = run_configured(7, &[], &["org/gone"], |c| {
        c.starts = vec!["clean".into(), "residual:all".into()];
    });
    run.episode(&with_status(Ep::new("org/gone", "a", "partial"), Status::Interrupted, EndReason::Interrupted));
    let data = RunData::load(&run.dir).unwrap();
    assert_eq!(planned_episode_ids(&data).unwrap_err(), "the package of task org/gone cannot be read to expand residual:all");
    let warnings = report_warnings(&[&run], &[Dim::Agent]);
    assert_eq!(
        warnings[0],
        format!(
            "run {0}: 1 episode unfinished (interrupted or still running); episodes that never started are not counted because the package of task org/gone cannot be read to expand residual:all — resume with `specgap run --resume {0}`",
            d(&run)
        )
    );
    // Then the package warning of the run itself.
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert!(warnings[1].contains("org/gone"), "{warnings:?}");

    // A store holding episodes its run.toml does not plan (agent m is not in it).
    let odd = run_with(8, &[TaskSpec::new("org/x")], &[]);
    odd.episode(&with_status(Ep::new("org/x", "m", "partial"), Status::Interrupted, EndReason::Interrupted));
    assert_eq!(
        report_warnings(&[&odd], &[Dim::Agent]),
        [format!(
            "run {0}: 1 episode unfinished (interrupted or still running); episodes that never started are not counted because the store holds episodes its run.toml does not plan — resume with `specgap run --resume {0}`",
            d(&odd)
        )]
    );
}

#[test]
fn replicates_that_differ_beyond_the_seed_name_the_field() {
    // A: org/x with agent a. B: org/x and org/y with agents a and b, 2 repeats, --turns 30.
    let a = run_with(10, &[TaskSpec::new("org/x")], &[]);
    a.episode(&planned("org/x", 0));
    let b = run_configured(11, &[TaskSpec::new("org/x"), TaskSpec::new("org/y")], &[], |c| {
        let mut second = c.agents[0].clone();
        second.spec = "b".into();
        c.agents.push(second);
        c.repeats = 2;
        c.budget.turns = Some(30);
    });
    for task in ["org/x", "org/y"] {
        for agent in ["a", "b"] {
            for repeat in 0..2 {
                b.episode(&Ep::new(task, agent, "partial").repeat(repeat));
            }
        }
    }
    let (da, db) = (d(&a), d(&b));
    let differ = |field: &str, detail: String| {
        format!(
            "runs {da} and {db} are pooled as seed replicates but differ in {field} ({detail}), not only in the seed: their mean ± sd mixes configurations"
        )
    };
    // Grouped by agent: agent b forms its own group, so `agents` does not matter; the task
    // set, repeats and budget do.
    assert_eq!(
        report_warnings(&[&a, &b], &[Dim::Agent]),
        [
            differ("repeats", format!("{da}: 1, {db}: 2")),
            differ("budget", format!("{da}: no budget flags, {db}: --turns 30")),
            differ("tasks", format!("only in {db}: org/y")),
        ]
    );
    // Grouped by condition, agent b's episodes pool with run A's agent a.
    let by_condition = report_warnings(&[&a, &b], &[Dim::Condition]);
    assert_eq!(by_condition.len(), 4, "{by_condition:?}");
    assert_eq!(by_condition[3], differ("agents", format!("only in {db}: b")));
    // Grouped by task, org/y never pools: the task set no longer matters.
    let by_task = report_warnings(&[&a, &b], &[Dim::Agent, Dim::Task]);
    assert_eq!(by_task.len(), 2, "{by_task:?}");
}

#[test]
fn replicates_with_one_seed_are_not_independent() {
    // Two runs of one seed holding different repeats (a copy holding the same episodes is
    // refused outright: `runs_holding_the_same_episode_are_refused_naming_both_and_the_episode`).
    let make = |repeat: u32| {
        let run = run_configured(12, &[TaskSpec::new("org/x")], &[], |c| c.repeats = 2);
        run.episode(&planned("org/x", repeat));
        run
    };
    let (a, b) = (make(0), make(1));
    let warnings = report_warnings(&[&a, &b], &[Dim::Agent]);
    let same_seed = format!(
        "runs {} and {} are pooled as seed replicates but have the same seed (12): they are not independent replicates (is one a copy of the other?) — give each replicate run its own --seed",
        d(&a),
        d(&b)
    );
    assert!(warnings.contains(&same_seed), "{warnings:#?}");
    // Runs that share no group (different agents, grouped by agent) are not replicates.
    let c = run_configured(12, &[TaskSpec::new("org/x")], &[], |c| {
        c.agents[0].spec = "z".into();
    });
    c.episode(&Ep::new("org/x", "z", "partial"));
    let warnings = report_warnings(&[&a, &c], &[Dim::Agent]);
    assert!(!warnings.iter().any(|w| w.contains("same seed")), "{warnings:#?}");
    assert_eq!(warnings.len(), 1, "only a's missing repeat: {warnings:#?}");
}

#[test]
fn selection_errors_name_the_flag_and_the_keys() {
    assert_eq!(
        Selection::parse_flag("--a", "agnt=x").unwrap_err().to_string(),
        "unknown key `agnt` in `--a agnt=x`; expected key=value pairs, comma-separated, with key agent, condition, start, family or task"
    );
    assert_eq!(
        Selection::parse_flag("--b", "agent=x,cond").unwrap_err().to_string(),
        "`cond` in `--b agent=x,cond` is not key=value; expected key=value pairs, comma-separated, with key agent, condition, start, family or task"
    );
    assert_eq!(
        Selection::parse("model=x").unwrap_err().to_string(),
        "unknown key `model` in the selection `model=x`; expected key=value pairs, comma-separated, with key agent, condition, start, family or task"
    );
}
