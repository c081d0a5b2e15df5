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
//! Extractors see the delivered workspace, the schema and the client's request and business
//! notes (instruction.md and information.md, for the naming rules A.9.4 has them look for),
//! never the evaluator's files. As seed 002's extractors could run the case evaluator to check
//! their normalization (A.9.4's verification block), ours may call `check_output`
//! (`[extraction] check_output`, on by default): the case evaluator runs on their output and
//! they hear whether it could read it — its error, or a `schema` / `execution` signature with
//! the violations' details — and otherwise only that it did, never a score, validity or
//! constraint violation, so that a check cannot become a search for a better-scoring reading
//! (docs/fidelity.md).
//!
//! Each extractor ends with a `_result.json` report naming the delivered files it took the
//! answer from ([`crate::provenance`]). An extraction that wrote nothing, or names no file the
//! agent made, is rejected: it is not evaluated and votes with no score (A.3: extractions
//! without source provenance are rejected), so empty extractions can never agree on a 0. When
//! a strict majority of the configured extractors report that the workspace holds no answer
//! of the agent's (`failed`, nothing written), or when the delivery holds no file the agent
//! made at all (then no extractor is asked), the run has **no artifact**: it is recorded as
//! scored 0, invalid, signature `schema` — a delivery the agent failed, as an episode without a
//! submission is — with `agreeing` the number of extractors that found nothing (0 when none
//! was asked).
//!
//! The delivered workspace is the episode's last submission: the package's clean workspace
//! with the stored `submissions/<k>/workspace.diff` applied, as the engine froze it. An
//! episode without a submission delivered nothing and is not extracted (it scores 0 as
//! before). [`extract_run`] is a resumable step: one submission per transaction, and
//! submissions with a verdict of this panel are skipped.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use specgap_agents::chat::ChatAgent;
use specgap_engine::session::{Deadline, SessionLink, UsageSink};
use specgap_engine::side_session::{SideEnd, SideError, SideSession, evaluate_workspace, run_side_session, side_tools_with};
use specgap_protocol::result::{ScoringKind, Signature};
use specgap_sandbox::{BaseCache, HostView, Mount, SandboxConfig};
use specgap_store::{Ballot, BallotOutcome, Extraction, ExtractionStatus, Role, Status, Store};
use specgap_task::TaskPackage;

use crate::config::Panel;
use crate::error::PanelError;
use crate::order::{call_order, subject_seed};
use crate::prompts::fill;
use crate::provenance::{self, Finding};
use crate::vote::{agreed_score, score_key};

/// Where extractors see the delivered workspace inside the sandbox.
pub const DELIVERED_MOUNT: &str = "/delivered";
/// Where extractors see the schema directory inside the sandbox.
pub const SCHEMA_MOUNT: &str = "/schema";
/// The schema's file name there.
pub const SCHEMA_FILE: &str = "submission_schema.json";
/// Where extractors see the client's request and business notes (instruction.md,
/// information.md) inside the sandbox.
pub const CASE_MOUNT: &str = "/case";

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

/// One extractor's result: how it counts and, for an evaluated output, its evaluation.
#[derive(Debug, Clone, PartialEq)]
struct Route {
    /// `None` when the session itself failed (the model service or the sandbox).
    finding: Option<Finding>,
    score: Option<f64>,
    success: Option<bool>,
    valid: Option<bool>,
    objective: Option<f64>,
    signature: Option<Signature>,
}

impl Route {
    fn without_score(finding: Option<Finding>) -> Route {
        Route { finding, score: None, success: None, valid: None, objective: None, signature: None }
    }
}

/// The verdict on a delivery with no artifact of the agent's (module guide): scored 0,
/// invalid, signature `schema`, after `routes` sessions of which `agreeing` found nothing.
fn no_artifact(panel: &str, k: u32, routes: u32, agreeing: u32) -> Extraction {
    Extraction {
        panel: panel.to_string(),
        k,
        status: ExtractionStatus::Scored,
        score: Some(0.0),
        success: Some(false),
        valid: Some(false),
        objective: None,
        signature: Some(Signature::Schema),
        routes,
        agreeing,
    }
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
    let bases =
        BaseCache::new(scratch.path().join("bases")).map_err(|e| workspace_error("-", format!("cannot make the base cache: {e}")))?;
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
        let job =
            Job { store, panel, package, host: &host, bases: &bases, scratch: scratch.path(), seed, episode: &episode.id, k, options };
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
            Ok(_) => warnings
                .push(format!("task {}: the package at {} changed since the run; its episodes are not extracted", task.name, task.path)),
            Err(e) => {
                warnings.push(format!("task {}: cannot read the package at {} ({e}); its episodes are not extracted", task.name, task.path))
            }
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
        let case_dir = dir.join("case");
        self.rebuild(&delivered, &schema_dir, &case_dir)?;
        let agent_files = provenance::agent_files(&delivered, &self.package.workspace_dir());
        if agent_files.is_empty() {
            // Nothing of the agent's to extract: no extraction could name a source file.
            let _ = fs_err::remove_dir_all(&dir);
            return Ok(Some((Vec::new(), no_artifact(&self.panel.name, self.k, 0, 0))));
        }
        let subject = format!("submission:{}", self.k);
        let mut ballots = Vec::new();
        let mut routes: Vec<Route> = Vec::new();
        let majority = self.panel.majority();
        let found_nothing = |routes: &[Route]| routes.iter().filter(|r| r.finding == Some(Finding::NoDeliverable)).count();
        for (position, seat) in call_order(self.seed, self.episode, &subject, self.panel.seats()).into_iter().enumerate() {
            let output = dir.join(format!("output-{seat}"));
            fs_err::create_dir_all(&output).map_err(|e| workspace_error(self.episode, e.to_string()))?;
            let mounts = Mounts { delivered: &delivered, schema: &schema_dir, case: &case_dir, output: &output, agent_files: &agent_files };
            let Some((ballot, route)) = self.extract_once(seat, position as u32, &subject, &mounts)? else {
                return Ok(None);
            };
            ballots.push(ballot);
            routes.push(route);
            let scores: Vec<Option<f64>> = routes.iter().map(|r| r.score).collect();
            if agreed_score(&scores, majority).is_some() || found_nothing(&routes) >= majority {
                break;
            }
        }
        let _ = fs_err::remove_dir_all(&dir);
        let scores: Vec<Option<f64>> = routes.iter().map(|r| r.score).collect();
        let agreed = agreed_score(&scores, majority);
        if agreed.is_none() && found_nothing(&routes) >= majority {
            let extraction = no_artifact(&self.panel.name, self.k, routes.len() as u32, found_nothing(&routes) as u32);
            return Ok(Some((ballots, extraction)));
        }
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

    /// The delivered workspace (clean workspace + the submission's diff), the schema file and
    /// the case's request and business notes.
    fn rebuild(&self, delivered: &Path, schema_dir: &Path, case_dir: &Path) -> Result<(), PanelError> {
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
        fs_err::create_dir_all(case_dir).map_err(|e| fail("cannot write the case notes", &e))?;
        fs_err::write(case_dir.join("instruction.md"), self.package.instruction()).map_err(|e| fail("cannot write the case notes", &e))?;
        if let Some(information) = self.package.information() {
            fs_err::write(case_dir.join("information.md"), information).map_err(|e| fail("cannot write the case notes", &e))?;
        }
        Ok(())
    }

    /// The `check_output` tool's answer about `output` now (module guide): the case evaluator
    /// on a copy of it without the report, and only whether it could read it.
    fn check_text(&self, output: &Path) -> String {
        let copy = output.with_extension("check");
        let scratch = output.with_extension("check-eval");
        let _ = fs_err::remove_dir_all(&copy);
        let _ = fs_err::remove_dir_all(&scratch);
        if let Err(e) = copy_without_report(output, &copy).and_then(|()| fs_err::create_dir_all(&scratch)) {
            return format!("The check could not run: {e}.");
        }
        let evaluated = evaluate_workspace(self.package, &self.options.sandbox, self.host, &copy, &scratch);
        let _ = fs_err::remove_dir_all(&copy);
        let _ = fs_err::remove_dir_all(&scratch);
        check_message(evaluated)
    }

    /// One extractor session and the evaluation of what it wrote; `None` on a stop.
    fn extract_once(&self, seat: u32, position: u32, subject: &str, mounts: &Mounts<'_>) -> Result<Option<(Ballot, Route)>, PanelError> {
        let model = &self.panel.models[seat as usize];
        let sandbox = &self.options.sandbox;
        let (delivered, schema_dir, output) = (mounts.delivered, mounts.schema, mounts.output);
        let mount = |host: &Path, inside: &str| Mount { host: host.to_path_buf(), sandbox: PathBuf::from(inside), writable: false };
        let delivered_mount = mount(delivered, DELIVERED_MOUNT);
        let schema_mount = mount(schema_dir, SCHEMA_MOUNT);
        let case_mount = mount(mounts.case, CASE_MOUNT);
        let output_mount = mount(output, specgap_sandbox::WORKSPACE_MOUNT);
        let delivered_seen = sandbox.visible_path(&delivered_mount).display().to_string();
        let schema_text = fs_err::read_to_string(schema_dir.join(SCHEMA_FILE)).unwrap_or_default();
        let checks = self.panel.extraction.check_output;
        let check_block = if checks { format!("\n{}\n", self.panel.prompts.check) } else { String::new() };
        let message = fill(
            &self.panel.prompts.user,
            &[
                ("delivered", &delivered_seen),
                ("case", &sandbox.visible_path(&case_mount).display().to_string()),
                ("schema_path", &sandbox.visible_path(&schema_mount).join(SCHEMA_FILE).display().to_string()),
                ("schema", schema_text.trim_end()),
                ("output", &sandbox.visible_path(&output_mount).display().to_string()),
                ("check_block", &check_block),
            ],
        );
        let request = json!([{
            "model": model.model,
            "args": model.args_with_defaults(),
            "system": self.panel.prompts.system,
            "message": message,
            "tools": side_tools_with(checks).iter().map(|t| t.name.clone()).collect::<Vec<_>>(),
            "turns": self.panel.extraction.turns,
            "wall_sec": self.panel.extraction.wall_sec,
        }]);
        let mut deadline = Deadline::at(Instant::now() + Duration::from_secs(self.panel.extraction.wall_sec));
        if let Some(stop) = &self.options.stop {
            deadline = deadline.with_stop(Arc::clone(stop));
        }
        let usage = UsageSink::to_store(Role::Extractor, self.store.usage_recorder(self.episode)?);
        let link = SessionLink { deadline, usage: usage.clone() };
        let check = || self.check_text(output);
        let settings = SideSession {
            workspace: output,
            read_only: vec![
                (delivered.to_path_buf(), PathBuf::from(DELIVERED_MOUNT)),
                (schema_dir.to_path_buf(), PathBuf::from(SCHEMA_MOUNT)),
                (mounts.case.to_path_buf(), PathBuf::from(CASE_MOUNT)),
            ],
            host: self.host,
            sandbox,
            turns: self.panel.extraction.turns,
            check_output: checks.then_some(&check as &dyn Fn() -> String),
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
                return Ok(Some((ballot, Route::without_score(None))));
            }
        };
        if outcome.end == SideEnd::Interrupted {
            return Ok(None);
        }
        ballot.response = Value::Array(outcome.transcript.clone());
        let report = provenance::take_report(output);
        let files = provenance::written_files(output);
        let named = provenance::provenance(report.as_ref(), &[&delivered_seen, DELIVERED_MOUNT], mounts.agent_files);
        let finding = provenance::finding(report.as_ref(), &files, &named);
        let mut vote = json!({
            "end": outcome.end,
            "summary": outcome.summary,
            "turns": outcome.turns,
            "files": files,
            "report": report,
            "provenance": named,
            "finding": finding,
        });
        ballot.outcome = BallotOutcome::Ballot;
        if finding != Finding::Output {
            // Rejected, or nothing of the agent's found: not evaluated, no score (A.3).
            vote["score"] = Value::Null;
            ballot.vote = Some(vote);
            return Ok(Some((ballot, Route::without_score(Some(finding)))));
        }
        let scratch = output.with_extension("eval");
        let _ = fs_err::create_dir_all(&scratch);
        let evaluated = evaluate_workspace(self.package, sandbox, self.host, output, &scratch);
        let route = match evaluated {
            Ok((result, scored)) => {
                let delivery = result.delivery.as_ref();
                vote["score"] = json!(scored.score);
                vote["success"] = json!(scored.success);
                vote["valid"] = json!(delivery.map(|d| d.valid));
                vote["objective"] = json!(delivery.and_then(|d| d.objective));
                vote["signature"] = json!(delivery.and_then(|d| d.signature));
                Route {
                    finding: Some(finding),
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
                Route::without_score(Some(finding))
            }
        };
        ballot.vote = Some(vote);
        Ok(Some((ballot, route)))
    }
}

/// Where one extractor's session sees what (host paths) and the agent's files of the delivery.
struct Mounts<'a> {
    delivered: &'a Path,
    schema: &'a Path,
    case: &'a Path,
    output: &'a Path,
    agent_files: &'a std::collections::BTreeSet<String>,
}

/// Copies `from` into a new directory `to`, leaving out the extractor's report.
fn copy_without_report(from: &Path, to: &Path) -> std::io::Result<()> {
    fs_err::create_dir_all(to)?;
    for relative in provenance::written_files(from) {
        if relative == provenance::RESULT_FILE {
            continue;
        }
        let target = to.join(&relative);
        if let Some(parent) = target.parent() {
            fs_err::create_dir_all(parent)?;
        }
        fs_err::copy(from.join(&relative), target)?;
    }
    Ok(())
}

/// What `check_output` says about an evaluation of the extractor's output (module guide):
/// failures of form in full, anything else only as "read".
fn check_message(
    evaluated: Result<(specgap_protocol::result::EvalResult, specgap_protocol::result::Scored), specgap_engine::EpisodeError>,
) -> String {
    const FIX: &str =
        "Fix how the answer is written (file names, fields, layout, modules it needs) and check again; never change the agent's values.";
    match evaluated {
        Err(specgap_engine::EpisodeError::Evaluation { message, stderr_tail, .. }) => {
            let tail = stderr_tail.trim();
            let tail = if tail.is_empty() { String::new() } else { format!("\n{tail}") };
            format!("The scoring program could not read your output: {message}.{tail}\n{FIX}")
        }
        Err(other) => format!("The check could not run: {other}. Carry on without it."),
        Ok((result, _)) => {
            let delivery = result.delivery.as_ref();
            match delivery.and_then(|d| d.signature) {
                Some(signature @ (Signature::Schema | Signature::Execution)) => {
                    let name = serde_json::to_value(signature).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default();
                    let details: Vec<String> = delivery
                        .map(|d| d.violations.iter().map(|v| if v.detail.is_empty() { v.rule.clone() } else { format!("{}: {}", v.rule, v.detail) }).collect())
                        .unwrap_or_default();
                    let details = if details.is_empty() { String::new() } else { format!(" {}", details.join("; ")) };
                    format!("The scoring program could not use your output ({name}).{details}\n{FIX}")
                }
                _ => "The scoring program read your output. Stop checking now: write _result.json and submit. Whatever it makes of the answer is the agent's result.".to_string(),
            }
        }
    }
}
