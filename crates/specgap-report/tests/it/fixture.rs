//! Synthetic run stores for the measure tests, built with the store's writer API, and small
//! task packages on disk for the measures that read packages (targets, stated flags,
//! residual states).

use std::path::{Path, PathBuf};

use specgap_protocol::event::EventKind;
use specgap_protocol::package::Family;
use specgap_protocol::result::{EvalResult, Scored, ScoringKind};
use specgap_protocol::run::{EndReason, EpisodeKey, RunConfig};
use specgap_store::{EpisodeMeta, EpisodeSummary, Question, Status, Store, SubmissionRecord};

/// A task package to write: only what the measures read is configurable.
#[derive(Debug, Clone)]
pub struct TaskSpec {
    pub name: String,
    pub family: &'static str,
    /// (id, priority, stated)
    pub requirements: Vec<(&'static str, u32, bool)>,
    /// (id, description, triggers)
    pub targets: Vec<(&'static str, &'static str, Vec<&'static str>)>,
    /// `clarifications.toml` written as given (instead of `targets`), for targets with their
    /// own issue types and domains.
    pub clarifications_toml: Option<String>,
    /// (state id, predecessor, state.patch text, left_out)
    pub states: Vec<(&'static str, &'static str, String, Option<Vec<&'static str>>)>,
    /// Workspace files (path, content).
    pub workspace: Vec<(&'static str, &'static str)>,
    /// Gold overlay files (path, content).
    pub gold: Vec<(&'static str, &'static str)>,
    /// Delivery case (reference 10, max).
    pub delivery: bool,
}

impl TaskSpec {
    pub fn new(name: &str) -> TaskSpec {
        TaskSpec {
            name: name.to_string(),
            family: "swe",
            requirements: vec![],
            targets: vec![],
            clarifications_toml: None,
            states: vec![],
            workspace: vec![("README.md", "readme\n")],
            gold: vec![],
            delivery: false,
        }
    }
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// Writes a package under `root/<name>` and returns its path.
pub fn write_package(root: &Path, spec: &TaskSpec) -> PathBuf {
    let dir = root.join(spec.name.replace('/', "_"));
    let delivery = if spec.delivery { "\n[delivery]\nreference = 10.0\ndirection = \"max\"\nartifact = \"plan.json\"\n" } else { "" };
    write(
        &dir.join("task.toml"),
        &format!(
            "format = 1\n\n[task]\nname = \"{}\"\nversion = \"1.0.0\"\ndescription = \"synthetic\"\nfamily = \"{}\"\n\n[environment]\ncommands = []\n\n[evaluator]\ncommand = \"true\"\ntimeout_sec = 5\n{delivery}",
            spec.name, spec.family
        ),
    );
    write(&dir.join("instruction.md"), "Do the work.\n");
    write(&dir.join("evaluator/judge.sh"), "true\n");
    for (path, text) in &spec.workspace {
        write(&dir.join("workspace").join(path), text);
    }
    for (path, text) in &spec.gold {
        write(&dir.join("solutions/gold").join(path), text);
    }
    if !spec.requirements.is_empty() {
        let mut reqs = String::new();
        let mut obs = String::new();
        for (id, priority, stated) in &spec.requirements {
            reqs.push_str(&format!(
                "[[requirement]]\nid = \"{id}\"\npriority = {priority}\nstated = {stated}\ndescription = \"rule {id}\"\ndiscovery = \"records\"\n\n"
            ));
            obs.push_str(&format!(
                "[[observation]]\nrequirement = \"{id}\"\nfailure_mode = \"{id}-broken\"\nscene = \"s\"\nincident = \"i\"\ndetail = \"d\"\n\n"
            ));
        }
        write(&dir.join("requirements.toml"), &reqs);
        write(&dir.join("observations.toml"), &obs);
        write(&dir.join("user.toml"), "persona = \"owner\"\nunderstanding = \"partial\"\neditable_surface = \"all\"\n");
    }
    if let Some(text) = &spec.clarifications_toml {
        write(&dir.join("clarifications.toml"), text);
        write(&dir.join("user.toml"), "persona = \"customer\"\nunderstanding = \"all\"\neditable_surface = \"all\"\n");
        write(&dir.join("information.md"), "All business rules.\n");
    } else if !spec.targets.is_empty() {
        let mut text = String::new();
        for (id, description, triggers) in &spec.targets {
            let triggers: Vec<String> = triggers.iter().map(|t| format!("\"{t}\"")).collect();
            text.push_str(&format!(
                "[[target]]\nid = \"{id}\"\ndescription = \"{description}\"\nissue_type = \"missing\"\ndomain = \"constraint-rule\"\nanswer = \"answer {id}\"\ntriggers = [{}]\n\n",
                triggers.join(", ")
            ));
        }
        write(&dir.join("clarifications.toml"), &text);
        write(&dir.join("user.toml"), "persona = \"customer\"\nunderstanding = \"all\"\neditable_surface = \"all\"\n");
        write(&dir.join("information.md"), "All business rules.\n");
    }
    for (id, predecessor, patch, left_out) in &spec.states {
        write(&dir.join("residual").join(id).join("state.patch"), patch);
        let left_out = left_out
            .as_ref()
            .map(|l| format!("left_out = [{}]\n", l.iter().map(|f| format!("\"{f}\"")).collect::<Vec<_>>().join(", ")))
            .unwrap_or_default();
        write(
            &dir.join("residual").join(id).join("meta.toml"),
            &format!(
                "predecessor = \"{predecessor}\"\ndeclared_complete = true\nsteps = 10\nfailing_tests = [\"t1\"]\n{left_out}notes = \"\"\n"
            ),
        );
    }
    dir
}

/// A run directory inside a temp dir, with its store.
pub struct Run {
    pub _tmp: tempfile::TempDir,
    pub dir: PathBuf,
    pub store: Store,
    pub seed: u64,
    hashes: Vec<(String, String)>,
}

/// Creates a run store whose `run.toml` names the given packages (written under the temp
/// dir) and, with `missing`, task names without a package.
pub fn run_with(seed: u64, tasks: &[TaskSpec], missing: &[&str]) -> Run {
    run_configured(seed, tasks, missing, |_| {})
}

/// [`run_with`], with `edit` changing the configuration before the store is created (agents,
/// conditions, starts, repeats, shard, …). Episodes written with [`Run::episode`] carry agent
/// hash `h` and user hash `u`.
pub fn run_configured(seed: u64, tasks: &[TaskSpec], missing: &[&str], edit: impl FnOnce(&mut RunConfig)) -> Run {
    let tmp = tempfile::tempdir().unwrap();
    let mut refs = String::new();
    let mut hashes = Vec::new();
    for spec in tasks {
        let path = write_package(&tmp.path().join("suite"), spec);
        let package = specgap_task::load(&path).unwrap_or_else(|e| panic!("fixture package {}: {e}", spec.name));
        refs.push_str(&format!("[[tasks]]\nname = \"{}\"\nhash = \"{}\"\npath = \"{}\"\n\n", spec.name, package.hash(), path.display()));
        hashes.push((spec.name.clone(), package.hash().to_string()));
    }
    for name in missing {
        refs.push_str(&format!("[[tasks]]\nname = \"{name}\"\nhash = \"00\"\npath = \"/nonexistent/{name}\"\n\n"));
        hashes.push((name.to_string(), "00".into()));
    }
    let empty = if refs.is_empty() { "tasks = []\n" } else { "" };
    let text = format!(
        "specgap_version = \"0.1.0\"\n{empty}seed = {seed}\nrepeats = 1\nretries = 0\nsandbox = false\nconditions = [\"partial\"]\nstarts = [\"clean\"]\n\n{refs}[[agents]]\nspec = \"a\"\nhash = \"h\"\nconfig = {{}}\n\n[[users]]\nspec = \"relay\"\nhash = \"u\"\nconfig = {{}}\n"
    );
    let mut config: RunConfig = toml::from_str(&text).unwrap();
    edit(&mut config);
    let dir = tmp.path().join("run");
    let store = Store::create(&dir, &config).unwrap();
    Run { _tmp: tmp, dir, store, seed, hashes }
}

/// One submission of an episode.
#[derive(Debug, Clone)]
pub struct Sub {
    pub score: f64,
    pub success: bool,
    /// result.json text.
    pub result: String,
    pub failing: Option<String>,
    pub automatic: bool,
    pub declared: bool,
    pub valid: bool,
    pub diff: String,
}

impl Sub {
    /// A valid, agent-declared submission with score and success.
    pub fn scored(score: f64, success: bool, result: String) -> Sub {
        Sub { score, success, result, failing: None, automatic: false, declared: true, valid: true, diff: String::new() }
    }
}

/// One episode to write.
#[derive(Debug, Clone)]
pub struct Ep {
    pub task: String,
    pub agent: String,
    pub condition: String,
    pub start: String,
    pub repeat: u32,
    pub family: Family,
    pub kind: ScoringKind,
    pub start_result: Option<String>,
    /// Success of the starting state (`start_results.success`), written after `start_result`.
    pub start_success: Option<bool>,
    /// `start/workspace.diff`, as the engine writes it since 0.2.0 (`None`: an older store).
    pub start_diff: Option<String>,
    pub subs: Vec<Sub>,
    /// (agent turn, question text)
    pub questions: Vec<(u32, String)>,
    pub events: Vec<EventKind>,
    pub end: EndReason,
    pub status: Status,
    pub turns: u32,
    /// Wall-clock duration recorded at the end (ms).
    pub wall_ms: u64,
}

impl Ep {
    pub fn new(task: &str, agent: &str, condition: &str) -> Ep {
        Ep {
            task: task.into(),
            agent: agent.into(),
            condition: condition.into(),
            start: "clean".into(),
            repeat: 0,
            family: Family::Swe,
            kind: ScoringKind::Requirement,
            start_result: None,
            start_success: None,
            start_diff: None,
            subs: vec![],
            questions: vec![],
            events: vec![],
            end: EndReason::Accepted,
            status: Status::Finished,
            turns: 10,
            wall_ms: 1,
        }
    }

    pub fn start(mut self, start: &str) -> Ep {
        self.start = start.into();
        self
    }

    pub fn repeat(mut self, repeat: u32) -> Ep {
        self.repeat = repeat;
        self
    }

    pub fn kind(mut self, kind: ScoringKind) -> Ep {
        self.kind = kind;
        self
    }

    pub fn sub(mut self, sub: Sub) -> Ep {
        self.subs.push(sub);
        self
    }

    pub fn end(mut self, end: EndReason) -> Ep {
        self.end = end;
        self
    }
}

impl Run {
    /// Writes an episode; returns its id.
    pub fn episode(&self, ep: &Ep) -> String {
        let task_hash = self.hashes.iter().find(|(n, _)| *n == ep.task).map_or("00".to_string(), |(_, h)| h.clone());
        let key = EpisodeKey {
            task: ep.task.clone(),
            task_hash,
            agent: ep.agent.clone(),
            agent_hash: "h".into(),
            user_hash: "u".into(),
            condition: ep.condition.clone(),
            start: ep.start.clone(),
            repeat: ep.repeat,
            seed: self.seed,
        };
        let meta = EpisodeMeta { user: "relay".into(), family: ep.family, scoring_kind: ep.kind };
        let mut writer = self.store.begin_episode(&key, &meta).unwrap();
        for event in &ep.events {
            writer.event(event.clone()).unwrap();
        }
        if let Some(diff) = &ep.start_diff {
            writer.write_start_diff(diff.as_bytes()).unwrap();
        }
        if let Some(start) = &ep.start_result {
            writer.write_start_result(&parse(start)).unwrap();
            if let Some(success) = ep.start_success {
                let score = if success { 1.0 } else { 0.0 };
                writer.record_start_score(&specgap_protocol::result::Scored { kind: ep.kind, score, success }).unwrap();
            }
        }
        for (turn, text) in &ep.questions {
            writer.record_question(&Question { turn: *turn, text: text.clone(), answer: "ok".into(), matched_targets: vec![] }).unwrap();
        }
        for (i, sub) in ep.subs.iter().enumerate() {
            let record = SubmissionRecord {
                automatic: sub.automatic,
                agent_declared: sub.declared,
                result: Some(parse(&sub.result)),
                scored: sub.valid.then_some(Scored { kind: ep.kind, score: sub.score, success: sub.success }),
                failing_requirement: sub.failing.clone(),
                error: (!sub.valid).then(|| "evaluation failed".to_string()),
                diff: sub.diff.clone().into_bytes(),
            };
            writer.write_submission(i as u32 + 1, &record).unwrap();
        }
        let id = writer.id().to_string();
        writer
            .finish(EpisodeSummary {
                status: ep.status,
                end_reason: Some(ep.end),
                turns: ep.turns,
                tool_calls: ep.turns,
                wall_ms: ep.wall_ms,
                error: None,
            })
            .unwrap();
        id
    }
}

pub fn parse(json: &str) -> EvalResult {
    serde_json::from_str(json).unwrap_or_else(|e| panic!("bad result.json {json}: {e}"))
}

/// result.json with requirement verdicts.
pub fn reqs(verdicts: &[(&str, bool)]) -> String {
    let body: Vec<String> = verdicts.iter().map(|(id, pass)| format!("\"{id}\": {{\"pass\": {pass}}}")).collect();
    format!("{{\"version\": 1, \"requirements\": {{{}}}}}", body.join(", "))
}

/// result.json with test outcomes.
pub fn tests(outcomes: &[(&str, &str)]) -> String {
    let body: Vec<String> = outcomes.iter().map(|(id, o)| format!("\"{id}\": \"{o}\"")).collect();
    format!("{{\"version\": 1, \"tests\": {{{}}}}}", body.join(", "))
}

/// result.json with a delivery verdict.
pub fn delivery(valid: bool, objective: f64, signature: Option<&str>, violations: usize) -> String {
    let signature = signature.map_or("null".to_string(), |s| format!("\"{s}\""));
    let violations: Vec<String> = (0..violations).map(|i| format!("{{\"rule\": \"r{i}\", \"count\": 1, \"detail\": \"\"}}")).collect();
    format!(
        "{{\"version\": 1, \"delivery\": {{\"valid\": {valid}, \"objective\": {objective}, \"violations\": [{}], \"signature\": {signature}}}}}",
        violations.join(", ")
    )
}

/// result.json with a reward only.
pub fn reward(value: f64) -> String {
    format!("{{\"version\": 1, \"reward\": {value}}}")
}

/// Asserts `|actual − expected| <= tolerance`.
#[track_caller]
pub fn close(actual: f64, expected: f64, tolerance: f64) {
    assert!((actual - expected).abs() <= tolerance, "expected {expected} ± {tolerance}, got {actual}");
}
