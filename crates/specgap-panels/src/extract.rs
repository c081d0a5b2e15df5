//! The extraction panel (seed 002 §4.1 "Extraction and case evaluation", A.3 "Score
//! selection", A.9.4): for a delivery case that names a submission schema (format 2,
//! `[delivery] schema`), after the run each extractor — the built-in chat agent with the shell
//! profile's tools, inside the sandbox — works over a copy of the delivered workspace, mounted
//! read-only, with the schema, and writes the artifact in the schema's format into an empty
//! working directory, under a no-repair contract (it may change how the answer is written,
//! never what it says). The case evaluator scores each extracted directory exactly as it
//! scores a submission. Extractors run in the seeded call order and stop as soon as a strict
//! majority of the configured seats (3 of 5) give the same score to 4 decimal places; the
//! verdict takes its validity, objective and signature from the first agreeing evaluation.
//! Without such a majority the submission is unscored (`unavailable`); the report lists it.
//!
//! Extractors see the delivered workspace and the schema only. Seed 002's extractors could also
//! run the case evaluator to check their work (A.9.4's verification block); specgap's never
//! see the evaluator, so an extractor cannot search for a better-scoring reading — a
//! deliberate deviation (docs/fidelity.md).
//!
//! The delivered workspace is the episode's last submission: the package's clean workspace
//! with the stored `submissions/<k>/workspace.diff` applied, as the engine froze it. An
//! episode without a submission delivered nothing and is not extracted (it scores 0 as
//! before). [`extract_run`] is a resumable step: one submission per transaction, and
//! submissions with a verdict of this panel are skipped.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use specgap_agents::chat::ChatAgent;
use specgap_engine::side_session::{SideEnd, SideError, SideSession, evaluate_workspace, run_side_session, side_tools};
use specgap_engine::session::{Deadline, SessionLink, UsageSink};
use specgap_protocol::result::{ScoringKind, Signature};
use specgap_sandbox::{BaseCache, HostView, Mount, SandboxConfig};
use specgap_store::{Ballot, BallotOutcome, Extraction, ExtractionStatus, Role, Status, Store};
use specgap_task::TaskPackage;

use crate::config::Panel;
use crate::error::PanelError;
use crate::order::{call_order, subject_seed};
use crate::prompts::fill;
use crate::vote::{agreed_score, score_key};

/// Where extractors see the delivered workspace inside the sandbox.
pub const DELIVERED_MOUNT: &str = "/delivered";
/// Where extractors see the schema directory inside the sandbox.
pub const SCHEMA_MOUNT: &str = "/schema";
/// The schema's file name there.
pub const SCHEMA_FILE: &str = "submission_schema.json";

/// How an extraction step runs.
#[derive(Debug, Clone, Default)]
pub struct ExtractOptions {
    /// Sandbox settings (the run's: `run.toml` `sandbox`).
    pub sandbox: SandboxConfig,
    /// Set by Ctrl-C: the submission being extracted is dropped and the step ends.
    pub stop: Option<Arc<AtomicBool>>,
}

/// What [`extract_run`] did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ExtractSummary {
    /// The panel's name.
    pub panel: String,
    /// Submissions extracted now.
    pub submissions: usize,
    /// Of those, scored by agreement.
    pub scored: usize,
    /// Of those, unavailable (no majority), by episode id.
    pub unavailable: Vec<String>,
    /// Extractor sessions run.
    pub routes: usize,
    /// Submissions already extracted by this panel.
    pub already: usize,
    /// Delivery episodes of cases without a schema (scored from the direct artifact).
    pub without_schema: usize,
    /// Whether a stop request ended the step early.
    pub interrupted: bool,
    /// Packages that could not be read.
    pub warnings: Vec<String>,
}

/// One extractor's result.
#[derive(Debug, Clone, PartialEq)]
struct Route {
    score: Option<f64>,
    success: Option<bool>,
    valid: Option<bool>,
    objective: Option<f64>,
    signature: Option<Signature>,
}

/// Runs the extraction panel over the run in `store` (module guide).
///
/// # Errors
/// Store errors; [`PanelError::Workspace`] when a delivered workspace cannot be rebuilt.
pub fn extract_run(store: &Store, panel: &Panel, options: &ExtractOptions) -> Result<ExtractSummary, PanelError> {
    store.record_panel(&panel.record())?;
    let seed = store.config().seed;
    let rows = store.rows()?;
    let (packages, warnings) = load_packages(store);
    let mut summary = ExtractSummary { panel: panel.name.clone(), warnings, ..Default::default() };
    let scratch = tempfile::tempdir().map_err(|e| workspace_error("-", format!("cannot make a scratch directory: {e}")))?;
    let bases = BaseCache::new(scratch.path().join("bases"))
        .map_err(|e| workspace_error("-", format!("cannot make the base cache: {e}")))?;
    let mut hosts: BTreeMap<String, HostView> = BTreeMap::new();
    for episode in &rows.episodes {
        if episode.status != Status::Finished || episode.scoring_kind != ScoringKind::Delivery {
            continue;
        }
        let Some(package) = packages.get(&episode.task) else { continue };
        if package.delivery_schema().is_none() {
            summary.without_schema += 1;
            continue;
        }
        let Some(k) = rows.submissions.iter().filter(|s| s.episode == episode.id).map(|s| s.k).max() else { continue };
        if rows.extractions.iter().any(|e| e.episode == episode.id && e.extraction.panel == panel.name && e.extraction.k == k) {
            summary.already += 1;
            continue;
        }
        if stopped(options) {
            summary.interrupted = true;
            break;
        }
        let host = match hosts.get(package.hash()) {
            Some(host) => host.clone(),
            None => {
                let host = HostView::resolve(&package.manifest().environment)
                    .map_err(|e| workspace_error(&episode.id, format!("cannot resolve the task's environment: {e}")))?;
                hosts.insert(package.hash().to_string(), host.clone());
                host
            }
        };
        let job = Job { store, panel, package, host: &host, bases: &bases, scratch: scratch.path(), seed, episode: &episode.id, k, options };
        let Some((ballots, extraction)) = job.run()? else {
            summary.interrupted = true;
            break;
        };
        summary.submissions += 1;
        summary.routes += ballots.len();
        match extraction.status {
            ExtractionStatus::Scored => summary.scored += 1,
            ExtractionStatus::Unavailable => summary.unavailable.push(episode.id.clone()),
        }
        store.record_extraction(&episode.id, &ballots, &extraction)?;
    }
    Ok(summary)
}

fn stopped(options: &ExtractOptions) -> bool {
    options.stop.as_ref().is_some_and(|s| s.load(Ordering::SeqCst))
}

fn workspace_error(episode: &str, message: String) -> PanelError {
    PanelError::Workspace { episode: episode.to_string(), message }
}

/// The run's packages whose content hash is the run's, by task name.
fn load_packages(store: &Store) -> (BTreeMap<String, TaskPackage>, Vec<String>) {
    let mut packages = BTreeMap::new();
    let mut warnings = Vec::new();
    for task in &store.config().tasks {
        match specgap_task::load(Path::new(&task.path)) {
            Ok(package) if package.hash() == task.hash => {
                packages.insert(task.name.clone(), package);
            }
            Ok(_) => warnings.push(format!("task {}: the package at {} changed since the run; its episodes are not extracted", task.name, task.path)),
            Err(e) => warnings.push(format!("task {}: cannot read the package at {} ({e}); its episodes are not extracted", task.name, task.path)),
        }
    }
    (packages, warnings)
}

/// One submission's extraction.
struct Job<'a> {
    store: &'a Store,
    panel: &'a Panel,
    package: &'a TaskPackage,
    host: &'a HostView,
    bases: &'a BaseCache,
    scratch: &'a Path,
    seed: u64,
    episode: &'a str,
    k: u32,
    options: &'a ExtractOptions,
}

impl Job<'_> {
    /// The ballots and the verdict; `None` when a stop request cut it short.
    fn run(&self) -> Result<Option<(Vec<Ballot>, Extraction)>, PanelError> {
        let dir = self.scratch.join(format!("{}-{}", self.episode, self.k));
        let delivered = dir.join("delivered");
        let schema_dir = dir.join("schema");
        self.rebuild(&delivered, &schema_dir)?;
        let subject = format!("submission:{}", self.k);
        let mut ballots = Vec::new();
        let mut routes: Vec<Route> = Vec::new();
        let majority = self.panel.majority();
        for (position, seat) in call_order(self.seed, self.episode, &subject, self.panel.seats()).into_iter().enumerate() {
            let output = dir.join(format!("output-{seat}"));
            fs_err::create_dir_all(&output).map_err(|e| workspace_error(self.episode, e.to_string()))?;
            let Some((ballot, route)) = self.extract_once(seat, position as u32, &subject, &delivered, &schema_dir, &output)? else {
                return Ok(None);
            };
            ballots.push(ballot);
            routes.push(route);
            let scores: Vec<Option<f64>> = routes.iter().map(|r| r.score).collect();
            if agreed_score(&scores, majority).is_some() {
                break;
            }
        }
        let _ = fs_err::remove_dir_all(&dir);
        let scores: Vec<Option<f64>> = routes.iter().map(|r| r.score).collect();
        let agreed = agreed_score(&scores, majority);
        let supporting = agreed.and_then(|s| routes.iter().find(|r| r.score.is_some_and(|x| score_key(x) == score_key(s))));
        let extraction = Extraction {
            panel: self.panel.name.clone(),
            k: self.k,
            status: if agreed.is_some() { ExtractionStatus::Scored } else { ExtractionStatus::Unavailable },
            score: agreed,
            success: supporting.and_then(|r| r.success),
            valid: supporting.and_then(|r| r.valid),
            objective: supporting.and_then(|r| r.objective),
            signature: supporting.and_then(|r| r.signature),
            routes: routes.len() as u32,
            agreeing: agreed.map_or(0, |s| scores.iter().flatten().filter(|x| score_key(**x) == score_key(s)).count() as u32),
        };
        Ok(Some((ballots, extraction)))
    }

    /// The delivered workspace (clean workspace + the submission's diff) and the schema file.
    fn rebuild(&self, delivered: &Path, schema_dir: &Path) -> Result<(), PanelError> {
        let fail = |what: &str, e: &dyn std::fmt::Display| workspace_error(self.episode, format!("{what}: {e}"));
        let base = self
            .bases
            .base(self.package.hash(), &self.package.workspace_dir())
            .map_err(|e| fail("cannot prepare the package's workspace", &e))?;
        let patch = self.store.episode_dir(self.episode).join("submissions").join(self.k.to_string()).join("workspace.diff");
        // An empty diff (nothing changed) applies as no patch.
        let patch = std::fs::metadata(&patch).is_ok_and(|m| m.is_file() && m.len() > 0).then_some(patch);
        specgap_sandbox::materialize(&base, delivered, patch.as_deref())
            .map_err(|e| fail(&format!("cannot rebuild submission {} from its workspace.diff", self.k), &e))?;
        let schema = self.package.delivery_schema().map(|s| s.schema.clone()).unwrap_or(Value::Bool(true));
        fs_err::create_dir_all(schema_dir).map_err(|e| fail("cannot write the schema", &e))?;
        let text = serde_json::to_string_pretty(&schema).unwrap_or_else(|_| schema.to_string());
        fs_err::write(schema_dir.join(SCHEMA_FILE), text).map_err(|e| fail("cannot write the schema", &e))?;
        Ok(())
    }

    /// One extractor session and the evaluation of what it wrote; `None` on a stop.
    fn extract_once(
        &self,
        seat: u32,
        position: u32,
        subject: &str,
        delivered: &Path,
        schema_dir: &Path,
        output: &Path,
    ) -> Result<Option<(Ballot, Route)>, PanelError> {
        let model = &self.panel.models[seat as usize];
        let sandbox = &self.options.sandbox;
        let mount = |host: &Path, inside: &str| Mount { host: host.to_path_buf(), sandbox: PathBuf::from(inside), writable: false };
        let delivered_mount = mount(delivered, DELIVERED_MOUNT);
        let schema_mount = mount(schema_dir, SCHEMA_MOUNT);
        let output_mount = mount(output, specgap_sandbox::WORKSPACE_MOUNT);
        let schema_text = fs_err::read_to_string(schema_dir.join(SCHEMA_FILE)).unwrap_or_default();
        let message = fill(
            &self.panel.prompts.user,
            &[
                ("delivered", &sandbox.visible_path(&delivered_mount).display().to_string()),
                ("schema_path", &sandbox.visible_path(&schema_mount).join(SCHEMA_FILE).display().to_string()),
                ("schema", schema_text.trim_end()),
                ("output", &sandbox.visible_path(&output_mount).display().to_string()),
            ],
        );
        let request = json!([{
            "model": model.model,
            "args": model.args_with_defaults(),
            "system": self.panel.prompts.system,
            "message": message,
            "tools": side_tools().iter().map(|t| t.name.clone()).collect::<Vec<_>>(),
            "turns": self.panel.extraction.turns,
            "wall_sec": self.panel.extraction.wall_sec,
        }]);
        let mut deadline = Deadline::at(Instant::now() + Duration::from_secs(self.panel.extraction.wall_sec));
        if let Some(stop) = &self.options.stop {
            deadline = deadline.with_stop(Arc::clone(stop));
        }
        let usage = UsageSink::to_store(Role::Extractor, self.store.usage_recorder(self.episode)?);
        let link = SessionLink { deadline, usage: usage.clone() };
        let settings = SideSession {
            workspace: output,
            read_only: vec![(delivered.to_path_buf(), PathBuf::from(DELIVERED_MOUNT)), (schema_dir.to_path_buf(), PathBuf::from(SCHEMA_MOUNT))],
            host: self.host,
            sandbox,
            turns: self.panel.extraction.turns,
        };
        let mut agent = ChatAgent::new(&model.chat_config(), subject_seed(self.seed, self.episode, &format!("{subject}:{seat}")))
            .map_err(|e| workspace_error(self.episode, format!("cannot start extractor {}: {e}", model.model)))?;
        let session = run_side_session(&mut agent, &self.panel.prompts.system, &message, &settings, &link);
        if let Some(error) = usage.take_failure() {
            return Err(error.into());
        }
        let mut ballot = Ballot {
            panel: self.panel.name.clone(),
            subject: subject.to_string(),
            seat,
            model: model.model.clone(),
            position,
            prompt_version: self.panel.prompts.version.clone(),
            outcome: BallotOutcome::Failed,
            vote: None,
            request,
            response: Value::Array(Vec::new()),
            error: None,
        };
        let outcome = match session {
            Ok(outcome) => outcome,
            Err(error) => {
                ballot.error = Some(match &error {
                    SideError::Agent(e) => format!("the extractor's model service failed: {e}"),
                    SideError::Sandbox(e) => format!("the extractor's sandbox failed: {e}"),
                });
                return Ok(Some((ballot, Route { score: None, success: None, valid: None, objective: None, signature: None })));
            }
        };
        if outcome.end == SideEnd::Interrupted {
            return Ok(None);
        }
        ballot.response = Value::Array(outcome.transcript.clone());
        let files = list_files(output);
        let scratch = output.with_extension("eval");
        let _ = fs_err::create_dir_all(&scratch);
        let evaluated = evaluate_workspace(self.package, sandbox, self.host, output, &scratch);
        let mut vote = json!({ "end": outcome.end, "summary": outcome.summary, "turns": outcome.turns, "files": files });
        let route = match evaluated {
            Ok((result, scored)) => {
                let delivery = result.delivery.as_ref();
                vote["score"] = json!(scored.score);
                vote["success"] = json!(scored.success);
                vote["valid"] = json!(delivery.map(|d| d.valid));
                vote["objective"] = json!(delivery.and_then(|d| d.objective));
                vote["signature"] = json!(delivery.and_then(|d| d.signature));
                ballot.outcome = BallotOutcome::Ballot;
                Route {
                    score: Some(scored.score),
                    success: Some(scored.success),
                    valid: delivery.map(|d| d.valid),
                    objective: delivery.and_then(|d| d.objective),
                    signature: delivery.and_then(|d| d.signature),
                }
            }
            Err(error) => {
                // The evaluator could not score what this extractor wrote: a vote without a
                // score, which agrees with nothing.
                vote["score"] = Value::Null;
                vote["evaluation_error"] = json!(error.to_string());
                ballot.outcome = BallotOutcome::Ballot;
                Route { score: None, success: None, valid: None, objective: None, signature: None }
            }
        };
        ballot.vote = Some(vote);
        Ok(Some((ballot, route)))
    }
}

/// Files under `dir`, relative, sorted.
fn list_files(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(current) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&current) else { continue };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if let Ok(relative) = path.strip_prefix(dir) {
                out.push(relative.display().to_string());
            }
        }
    }
    out.sort();
    out
}
