//! Fabricated predecessor runs and package copies.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use specgap_protocol::event::{EventKind, ToolCall};
use specgap_protocol::package::Family;
use specgap_protocol::result::{EvalResult, Scored, ScoringKind, TestOutcome};
use specgap_protocol::run::{EndReason, EpisodeKey, RunConfig};
use specgap_residualize::pipeline::{Advance, Request, advance};
use specgap_store::{EpisodeMeta, EpisodeSummary, Status, Store, SubmissionRecord};
use specgap_task::TaskPackage;
use specgap_test_support::files::copy_dir;

/// The bundled package.
pub fn interval_tree() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/tasks/interval-tree")
}

/// Every hidden test of interval-tree, for fabricated results.
pub const TESTS: [&str; 3] = ["chop_splits_straddling", "random_chop_matches_model", "random_remove_matches_model"];

/// A copy of interval-tree at `dir` named `name`, with `edit` applied to its task.toml text.
pub fn package_copy(dir: &Path, name: &str, edit: impl Fn(String) -> String) -> TaskPackage {
    copy_dir(&interval_tree(), dir);
    let manifest = dir.join("task.toml");
    let text = fs_err::read_to_string(&manifest).unwrap().replace("name = \"examples/interval-tree\"", &format!("name = \"{name}\""));
    fs_err::write(&manifest, edit(text)).unwrap();
    specgap_task::load(dir).unwrap()
}

/// The harness's own diff of `package`'s clean workspace with `patch` applied (what a run
/// stores as `workspace.diff` for that final state).
pub fn harness_diff(package: &TaskPackage, patch: &Path) -> Vec<u8> {
    let tmp = tempfile::tempdir().unwrap();
    let cache = specgap_sandbox::BaseCache::new(tmp.path().join("bases")).unwrap();
    let base = cache.base("b", &package.workspace_dir()).unwrap();
    let ws = tmp.path().join("ws");
    specgap_sandbox::materialize(&base, &ws, Some(patch)).unwrap();
    specgap_sandbox::diff(&base, &ws).unwrap()
}

/// The harness diff of a residual state of the bundled package.
pub fn state_diff(package: &TaskPackage, state: &str) -> Vec<u8> {
    harness_diff(package, &interval_tree().join("residual").join(state).join("state.patch"))
}

/// A predecessor's final submission.
#[derive(Debug, Clone)]
pub struct Final {
    /// The agent called submit.
    pub declared: bool,
    /// The evaluation was valid.
    pub valid: bool,
    /// Failing tests (empty: success).
    pub failing: Vec<&'static str>,
    /// The stored workspace.diff.
    pub diff: Vec<u8>,
    /// The stored machine.tar (an image task's changes outside the workspace), if any.
    pub machine: Option<Vec<u8>>,
}

impl Final {
    /// Submitted by the agent, validly evaluated, failing `failing`.
    pub fn failing(failing: &[&'static str], diff: Vec<u8>) -> Final {
        Final { declared: true, valid: true, failing: failing.to_vec(), diff, machine: None }
    }
}

/// One fabricated predecessor episode.
#[derive(Debug, Clone)]
pub struct Predecessor {
    /// The package it ran on.
    pub task: String,
    /// Agent spec.
    pub agent: &'static str,
    /// `clean` or `residual:<id>`.
    pub start: &'static str,
    /// Repeat (distinguishes episodes of one agent).
    pub repeat: u32,
    /// Final status.
    pub status: Status,
    /// End reason.
    pub end: Option<EndReason>,
    /// The last submission, if any.
    pub last: Option<Final>,
}

impl Predecessor {
    /// A finished clean-start run of `agent` on `task` ending `submitted` with `last`.
    pub fn submitted(task: &str, agent: &'static str, repeat: u32, last: Final) -> Predecessor {
        Predecessor {
            task: task.into(),
            agent,
            start: "clean",
            repeat,
            status: Status::Finished,
            end: Some(EndReason::Submitted),
            last: Some(last),
        }
    }
}

/// Writes a run store at `dir` holding `runs` on `packages`; returns the episode ids in order.
pub fn write_run(dir: &Path, packages: &[&TaskPackage], runs: &[Predecessor]) -> Vec<String> {
    let mut agents: Vec<&str> = Vec::new();
    for run in runs {
        if !agents.contains(&run.agent) {
            agents.push(run.agent);
        }
    }
    let tasks: String = packages
        .iter()
        .map(|p| format!("[[tasks]]\nname = \"{}\"\nhash = \"{}\"\npath = \"{}\"\n\n", p.name(), p.hash(), p.root().display()))
        .collect();
    let agent_text: String = agents.iter().map(|a| format!("[[agents]]\nspec = \"{a}\"\nhash = \"h-{a}\"\nconfig = {{}}\n\n")).collect();
    let text = format!(
        "specgap_version = \"0.1.0\"\nseed = 0\nrepeats = 1\nretries = 0\nsandbox = true\nconditions = [\"blind\"]\nstarts = [\"clean\"]\n{}\n{tasks}{agent_text}[[users]]\nspec = \"relay\"\nhash = \"us1\"\nconfig = {{}}\n",
        if agents.is_empty() { "agents = []" } else { "" }
    );
    let config: RunConfig = toml::from_str(&text).unwrap();
    let store = Store::create(dir, &config).unwrap();
    let mut ids = Vec::new();
    for run in runs {
        let package = packages.iter().find(|p| p.name() == run.task).unwrap();
        let key = EpisodeKey {
            task: run.task.clone(),
            task_hash: package.hash().into(),
            agent: run.agent.into(),
            agent_hash: format!("h-{}", run.agent),
            user_hash: "us1".into(),
            condition: "blind".into(),
            start: run.start.into(),
            repeat: run.repeat,
            seed: 0,
        };
        let meta = EpisodeMeta { user: "relay".into(), family: Family::Swe, scoring_kind: ScoringKind::Test };
        let mut writer = store.begin_episode(&key, &meta).unwrap();
        ids.push(writer.id().to_string());
        writer
            .event(EventKind::AgentTurn {
                turn: 1,
                text: Some("I will apply the fix.".into()),
                tool_calls: vec![ToolCall {
                    id: "c1".into(),
                    tool: "bash".into(),
                    arguments: serde_json::json!({"command": "git apply fix.patch"}),
                }],
                usage: None,
            })
            .unwrap();
        if run.status == Status::Running {
            drop(writer);
            continue;
        }
        if let Some(last) = &run.last {
            let mut tests: BTreeMap<String, TestOutcome> = TESTS
                .iter()
                .map(|t| (t.to_string(), if last.failing.contains(t) { TestOutcome::Fail } else { TestOutcome::Pass }))
                .collect();
            // A package of another test's own: its failing tests are recorded too.
            tests.extend(last.failing.iter().map(|t| (t.to_string(), TestOutcome::Fail)));
            let success = last.failing.is_empty();
            let result = EvalResult { version: 1, requirements: None, tests: Some(tests), delivery: None, reward: None, rewards: None };
            let score = (TESTS.len() - last.failing.len()) as f64 / TESTS.len() as f64;
            writer
                .write_submission(
                    1,
                    &SubmissionRecord {
                        automatic: !last.declared,
                        agent_declared: last.declared,
                        result: last.valid.then_some(result),
                        scored: last.valid.then_some(Scored { kind: ScoringKind::Test, score, success }),
                        failing_requirement: None,
                        error: (!last.valid).then(|| "evaluation error: the evaluator exited with status 1".to_string()),
                        diff: last.diff.clone(),
                    },
                )
                .unwrap();
            if let Some(layer) = &last.machine {
                let file = tempfile::NamedTempFile::new().unwrap();
                fs_err::write(file.path(), layer).unwrap();
                writer.write_submission_machine(1, file.path()).unwrap();
            }
        }
        let error = match run.status {
            Status::InfraError => Some("model service returned HTTP 500 after 0 retries".to_string()),
            Status::EvalError => Some("evaluation error: the evaluator exited with status 1".to_string()),
            _ => None,
        };
        writer.finish(EpisodeSummary { status: run.status, end_reason: run.end, turns: 7, tool_calls: 9, wall_ms: 5, error }).unwrap();
    }
    ids
}

/// `sheet.csv` rows for `ids`, every candidate labelled `labels`.
pub fn sheet(path: &Path, rows: &[(&str, &str, &str)]) -> PathBuf {
    let mut text = String::from("candidate,task_directed,consistent\n");
    for (id, directed, consistent) in rows {
        text.push_str(&format!("{id},{directed},{consistent}\n"));
    }
    fs_err::write(path, text).unwrap();
    path.to_path_buf()
}

/// Advances the pipeline of `request`, collecting its notes.
pub fn run(request: &Request) -> Result<(Advance, Vec<String>), specgap_residualize::ResidualizeError> {
    let notes = std::sync::Mutex::new(Vec::new());
    let advanced = advance(request, None, &|line| notes.lock().unwrap().push(line.to_string()))?;
    Ok((advanced, notes.into_inner().unwrap()))
}

/// Exclusion counts of funnel stage `stage` that are not zero.
pub fn nonzero(advance: &Advance, stage: usize) -> Vec<(String, u64)> {
    advance.funnel.stages[stage].excluded.iter().filter(|e| e.count > 0).map(|e| (e.reason.clone(), e.count)).collect()
}

/// Adds one more predecessor episode to the run store at `dir`.
pub fn append_run(dir: &Path, package: &TaskPackage, run: &Predecessor) -> String {
    let store = Store::open(dir).unwrap();
    let key = EpisodeKey {
        task: run.task.clone(),
        task_hash: package.hash().into(),
        agent: run.agent.into(),
        agent_hash: format!("h-{}", run.agent),
        user_hash: "us1".into(),
        condition: "blind".into(),
        start: run.start.into(),
        repeat: run.repeat,
        seed: 0,
    };
    let meta = EpisodeMeta { user: "relay".into(), family: Family::Swe, scoring_kind: ScoringKind::Test };
    let mut writer = store.begin_episode(&key, &meta).unwrap();
    let id = writer.id().to_string();
    let last = run.last.clone().unwrap();
    let tests: BTreeMap<String, TestOutcome> =
        TESTS.iter().map(|t| (t.to_string(), if last.failing.contains(t) { TestOutcome::Fail } else { TestOutcome::Pass })).collect();
    writer
        .write_submission(
            1,
            &SubmissionRecord {
                automatic: false,
                agent_declared: true,
                result: Some(EvalResult {
                    version: 1,
                    requirements: None,
                    tests: Some(tests),
                    delivery: None,
                    reward: None,
                    rewards: None,
                }),
                scored: Some(Scored { kind: ScoringKind::Test, score: 0.5, success: last.failing.is_empty() }),
                failing_requirement: None,
                error: None,
                diff: last.diff.clone(),
            },
        )
        .unwrap();
    writer
        .finish(EpisodeSummary {
            status: Status::Finished,
            end_reason: Some(EndReason::Submitted),
            turns: 4,
            tool_calls: 4,
            wall_ms: 1,
            error: None,
        })
        .unwrap();
    id
}

/// The harness diff of `package`'s gold overlay.
pub fn gold_diff(package: &TaskPackage) -> Vec<u8> {
    let tmp = tempfile::tempdir().unwrap();
    let cache = specgap_sandbox::BaseCache::new(tmp.path().join("bases")).unwrap();
    let base = cache.base("b", &package.workspace_dir()).unwrap();
    let ws = tmp.path().join("ws");
    specgap_sandbox::materialize(&base, &ws, None).unwrap();
    specgap_sandbox::apply_overlay(&ws, &package.root().join("solutions/gold")).unwrap();
    specgap_sandbox::diff(&base, &ws).unwrap()
}
