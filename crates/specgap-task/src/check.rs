//! `specgap check`: validate task packages before any agent sees them.
//!
//! After the loader's static rules ([`crate::load`]), a package is checked by its scoring kind,
//! each check running the real evaluator through a [`Judge`]:
//!
//! | kind | checks (row names) | source |
//! | --- | --- | --- |
//! | all | `load`, `kind` (the evaluator reports something to score); `instruction` (instruction.md has a word) for every kind but requirement-scored, whose `instruction-length` covers it | DESIGN §2 |
//! | requirement | `instruction-length` (40–250 words), `leak-scan`, `starter` fails every requirement, `gold` passes every requirement, `literal` fails at least as many as are unstated, `mutant:<id>` reproduces its requirement's failure, `observations` cover every reported failure mode and detail placeholder | seed 000 App. E.2 / E.3 |
//! | requirement, `--strict` only | `instruction-full` (present, not instruction.md again, one paragraph of its own stating each requirement: [`crate::full_instruction`]) and `user` present, `shape` (warn unless 5 requirements with at most 2 stated); a missing `literal` or `mutant:<id>` fails instead of warning, and each mutant must fail its requirement with a failure mode observations.toml registers for it | seed 000 App. E.2, §4.3 |
//! | test | `starter` fails some test (warn otherwise), `gold` passes every test | seed 001 |
//! | delivery | `information`, `clarifications` (each target answered, with a trigger), `starter` does not attain the reference, `gold` is valid and attains it | seed 002 §3 |
//! | reward | `starter`, `gold` reaches reward 1 | DESIGN §2 |
//! | any with residual states | `residual:<id>`: the patch applies, the verifier fails with a valid verdict, and its failing tests equal `meta.toml`'s `failing_tests`; `residual:<id>:declared-complete`: `declared_complete = true`; `residual:<id>:left-out`: `left_out` equals the gold's changed files minus those the patch touches ([`crate::residual`]), shown when absent | seed 001 §3.2, App. B, D.2 |
//!
//! Each row is [`Verdict::Pass`], [`Verdict::Fail`], [`Verdict::Warn`] (worth a look, not
//! blocking) or [`Verdict::Skip`] (could not be checked because an earlier check failed or the
//! package has nothing to check). A package passes when no row fails.
//!
//! [`CheckOptions::strict`] (`specgap check --strict`) holds a requirement-scored package to
//! everything the paper's construction produces (seed 000 App. E.2): the full instruction, the
//! simulated owner, the literal reference, one mutant per requirement failing with a registered
//! failure mode. Without it, the rows and verdicts are exactly those above.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde::Serialize;
use specgap_protocol::package::Direction;
use specgap_protocol::result::{EvalResult, ScoringKind};

use crate::discover::discover_dirs;
use crate::error::LoadError;
use crate::full_instruction;
use crate::heard;
use crate::judge::{EvaluateError, Judge, Outcome, Submission, judge_outcome};
use crate::leak::{self, Leak};
use crate::package::{ResidualState, TaskPackage};
use crate::residual::left_out_files;

/// Shortest and longest partial instruction, in words (seed 000 Appendix E.2).
pub const INSTRUCTION_WORDS: (usize, usize) = (40, 250);

/// Version of the `--json` shape ([`CheckSummary`]). 2 added `strict`.
pub const CHECK_JSON_VERSION: u32 = 2;

/// Requirements of a task in the paper's shape (seed 000 §4.3: five true requirements).
pub const PAPER_REQUIREMENTS: usize = 5;

/// Most requirements the paper's partial instructions state (seed 000 §4.3, Table 3: never
/// more than two).
pub const PAPER_MAX_STATED: usize = 2;

/// How demanding `check` is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CheckOptions {
    /// `--strict`: a requirement-scored package must have everything seed 000's construction
    /// demands (App. E.2) — `instruction.full.md`, `user.toml`, the literal reference, one
    /// mutant per requirement failing with a failure mode registered for it — and a `shape`
    /// row warns when it departs from the paper's 5 requirements with at most 2 stated.
    pub strict: bool,
}

/// The result of one check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// The check holds.
    Pass,
    /// The check does not hold; the package is not ready.
    Fail,
    /// Suspicious but not blocking (e.g. a mutant that breaks more than its requirement).
    Warn,
    /// Not checked (an earlier check failed, or nothing to check).
    Skip,
}

impl Verdict {
    /// `pass`, `fail`, `warn` or `skip`.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Fail => "fail",
            Verdict::Warn => "warn",
            Verdict::Skip => "skip",
        }
    }
}

/// One row of a task's check table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CheckRow {
    /// Check name (`load`, `gold`, `mutant:fee-cap`, `residual:half-done`, ...).
    pub check: String,
    /// Verdict.
    pub result: Verdict,
    /// Why, in one line.
    pub reason: String,
}

impl CheckRow {
    fn new(check: impl Into<String>, result: Verdict, reason: impl Into<String>) -> Self {
        CheckRow { check: check.into(), result, reason: reason.into() }
    }
}

/// Every check of one package.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TaskReport {
    /// `[task].name`, or `None` when the package did not load.
    pub task: Option<String>,
    /// The package directory.
    pub root: PathBuf,
    /// The scoring kind, once known.
    pub kind: Option<ScoringKind>,
    /// The content hash, when the package loaded.
    pub hash: Option<String>,
    /// Whether no row failed.
    pub passed: bool,
    /// The rows, in check order.
    pub checks: Vec<CheckRow>,
}

impl TaskReport {
    /// The task name, or the root path when the package did not load.
    pub fn title(&self) -> String {
        self.task.clone().unwrap_or_else(|| self.root.display().to_string())
    }

    fn finish(mut self) -> Self {
        self.passed = self.checks.iter().all(|row| row.result != Verdict::Fail);
        self
    }
}

/// The `--json` output of `specgap check` (stable shape, [`CHECK_JSON_VERSION`]):
/// `{"version": 2, "strict": bool, "passed": bool, "tasks": [TaskReport...]}` where each task is
/// `{"task": name|null, "root": path, "kind": "requirement"|"test"|"delivery"|"reward"|null,
/// "hash": hex|null, "passed": bool, "checks": [{"check", "result": "pass"|"fail"|"warn"|"skip",
/// "reason"}]}`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CheckSummary {
    /// [`CHECK_JSON_VERSION`].
    pub version: u32,
    /// Whether the checks ran under `--strict` ([`CheckOptions::strict`]).
    pub strict: bool,
    /// Whether every task passed.
    pub passed: bool,
    /// One report per package, sorted by task name (unloadable packages by path, first).
    pub tasks: Vec<TaskReport>,
}

impl CheckSummary {
    /// Wraps reports made with `options`.
    pub fn new(tasks: Vec<TaskReport>, options: &CheckOptions) -> Self {
        CheckSummary { version: CHECK_JSON_VERSION, strict: options.strict, passed: tasks.iter().all(|t| t.passed), tasks }
    }
}

/// Loads and checks every package below `paths`, `jobs` packages at a time (at least one).
/// Reports come back sorted by task name; packages that fail to load report one `load` row
/// and sort by path before the others. Two packages with the same name both get a failing
/// `unique-name` row.
///
/// # Errors
/// Only discovery errors ([`discover_dirs`]): unreadable paths, no packages at all.
pub fn check_paths<P: AsRef<Path>>(paths: &[P], judge: &dyn Judge, jobs: usize) -> Result<Vec<TaskReport>, LoadError> {
    check_paths_with(paths, judge, jobs, &CheckOptions::default())
}

/// [`check_paths`] with `options` (for `--strict`).
///
/// # Errors
/// As [`check_paths`].
pub fn check_paths_with<P: AsRef<Path>>(
    paths: &[P],
    judge: &dyn Judge,
    jobs: usize,
    options: &CheckOptions,
) -> Result<Vec<TaskReport>, LoadError> {
    let dirs = discover_dirs(paths)?;
    let next = AtomicUsize::new(0);
    let reports = Mutex::new(Vec::with_capacity(dirs.len()));
    std::thread::scope(|scope| {
        for _ in 0..jobs.clamp(1, dirs.len().max(1)) {
            scope.spawn(|| {
                loop {
                    let index = next.fetch_add(1, Ordering::SeqCst);
                    let Some(dir) = dirs.get(index) else { break };
                    let report = check_dir_with(dir, judge, options);
                    if let Ok(mut reports) = reports.lock() {
                        reports.push(report);
                    }
                }
            });
        }
    });
    let mut reports = reports.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner);
    reports.sort_by(|a, b| (&a.task, &a.root).cmp(&(&b.task, &b.root)));
    mark_duplicate_names(&mut reports);
    Ok(reports)
}

fn mark_duplicate_names(reports: &mut [TaskReport]) {
    for i in 0..reports.len() {
        let others: Vec<PathBuf> = reports
            .iter()
            .enumerate()
            .filter(|(j, other)| *j != i && other.task.is_some() && other.task == reports[i].task)
            .map(|(_, other)| other.root.clone())
            .collect();
        if let Some(other) = others.first() {
            let reason = format!("task name is also used by {}", other.display());
            reports[i].checks.insert(1, CheckRow::new("unique-name", Verdict::Fail, reason));
            reports[i].passed = false;
        }
    }
}

/// Loads and checks one package directory.
pub fn check_dir(root: &Path, judge: &dyn Judge) -> TaskReport {
    check_dir_with(root, judge, &CheckOptions::default())
}

/// [`check_dir`] with `options` (for `--strict`).
pub fn check_dir_with(root: &Path, judge: &dyn Judge, options: &CheckOptions) -> TaskReport {
    match crate::load(root) {
        Ok(package) => check_package_with(&package, judge, options),
        Err(err) => TaskReport {
            task: None,
            root: root.to_path_buf(),
            kind: None,
            hash: None,
            passed: false,
            checks: vec![CheckRow::new("load", Verdict::Fail, err.to_string())],
        },
    }
}

/// The `stage:<name>` row of stage `k` of `n` from its starter's and gold's evaluations.
fn stage_verdict(
    k: u32,
    n: u32,
    starter: &Result<Outcome, EvaluateError>,
    gold: Option<&Result<Outcome, EvaluateError>>,
) -> (Verdict, String) {
    let score = |o: &Outcome| o.scored.map_or_else(|| "nothing to score".to_owned(), |s| format!("score {}", s.score));
    let gold = match gold {
        None => return (Verdict::Fail, format!("stage {k} of {n}: no gold (solutions/gold/ or the stages' gold)")),
        Some(Err(err)) => return (Verdict::Fail, format!("stage {k} of {n}: the gold's evaluation failed: {}", describe_error(Some(err)))),
        Some(Ok(outcome)) if !outcome.success() => {
            return (Verdict::Fail, format!("stage {k} of {n}: the gold has {}; expected success", score(outcome)));
        }
        Some(Ok(outcome)) => outcome,
    };
    match starter {
        Err(err) => (Verdict::Fail, format!("stage {k} of {n}: the starter's evaluation failed: {}", describe_error(Some(err)))),
        Ok(outcome) if outcome.success() => (
            Verdict::Warn,
            format!(
                "stage {k} of {n}: the gold has {} but so has the starter ({}): doing nothing passes this stage",
                score(gold),
                score(outcome)
            ),
        ),
        Ok(outcome) => (Verdict::Pass, format!("stage {k} of {n}: the gold has {}, the starter {}", score(gold), score(outcome))),
    }
}

/// Checks a loaded package (the `load` row passes).
pub fn check_package(package: &TaskPackage, judge: &dyn Judge) -> TaskReport {
    check_package_with(package, judge, &CheckOptions::default())
}

/// [`check_package`] with `options` (for `--strict`).
pub fn check_package_with(package: &TaskPackage, judge: &dyn Judge, options: &CheckOptions) -> TaskReport {
    let mut checker = Checker { package, judge, strict: options.strict, rows: Vec::new(), seen: Vec::new() };
    checker.push("load", Verdict::Pass, format!("format {} package loaded", package.format()));
    let kind = checker.run_all();
    TaskReport {
        task: Some(package.name().to_owned()),
        root: package.root().to_path_buf(),
        kind,
        hash: Some(package.hash().to_owned()),
        passed: false,
        checks: checker.rows,
    }
    .finish()
}

/// Evaluations worth remembering for the cross-run `observations` check.
struct Seen {
    label: String,
    result: EvalResult,
}

struct Checker<'a> {
    package: &'a TaskPackage,
    judge: &'a dyn Judge,
    /// [`CheckOptions::strict`].
    strict: bool,
    rows: Vec<CheckRow>,
    seen: Vec<Seen>,
}

impl Checker<'_> {
    fn push(&mut self, check: impl Into<String>, result: Verdict, reason: impl Into<String>) {
        self.rows.push(CheckRow::new(check, result, reason));
    }

    /// Evaluates a submission, remembering successful results for the observations check.
    fn evaluate(&mut self, submission: Submission<'_>) -> Result<Outcome, EvaluateError> {
        let outcome = judge_outcome(self.judge, self.package, submission)?;
        self.seen.push(Seen { label: submission.label(), result: outcome.result.clone() });
        Ok(outcome)
    }

    /// `verifier-trust` (format 2 `[evaluator].trusts_workspace`): a warning that the verdict
    /// can be forged by the submission, so no score of the task is proof on its own.
    fn trust_row(&mut self) {
        if self.package.manifest().evaluator.trusts_workspace {
            self.push(
                "verifier-trust",
                Verdict::Warn,
                "the verifier trusts the workspace: it runs submitted code where it writes the reward (an imported Harbor verifier); forged rewards are refused only where detected",
            );
        }
    }

    /// Runs every check; returns the scoring kind when it could be decided.
    fn run_all(&mut self) -> Option<ScoringKind> {
        let package = self.package;
        let starter = self.evaluate(Submission::Starter);
        let gold = package.solutions.gold.as_ref().map(|overlay| self.evaluate(Submission::Overlay("gold", overlay)));
        let kind = self.kind_row(&starter, gold.as_ref());
        self.network_row(&[("starter", Some(&starter)), ("gold", gold.as_ref())]);
        self.trust_row();
        if kind.is_some_and(|k| k != ScoringKind::Requirement) {
            self.instruction_row();
        }
        match kind {
            Some(ScoringKind::Requirement) => self.requirement_checks(&starter, gold.as_ref()),
            Some(ScoringKind::Test) => self.test_checks(&starter, gold.as_ref()),
            Some(ScoringKind::Delivery) => self.delivery_checks(&starter, gold.as_ref()),
            Some(ScoringKind::Reward) => self.reward_checks(&starter, gold.as_ref()),
            None => return None,
        }
        self.stage_checks();
        self.residual_checks();
        self.synthesis_rows();
        kind
    }

    // ---- [stages] with files or golds of their own (Harbor's oracle, step by step) -----------

    /// `stage:<name>`, for a staged package whose stages add files or have their own gold:
    /// at each stage k, the gold's state (stage golds applied in turn) must succeed when scored
    /// as stage k, and the state an agent doing nothing has there (the starter plus the stage
    /// files) should not (a warning when it does).
    fn stage_checks(&mut self) {
        let Some(stages) = self.package.stages() else { return };
        if !stages.has_stage_golds() && !stages.has_stage_files() {
            return;
        }
        let has_gold = stages.has_stage_golds() || self.package.solutions.gold.is_some();
        let n = stages.len() as u32;
        let names: Vec<String> = stages.stages.iter().map(|s| s.name.clone()).collect();
        for (index, name) in names.iter().enumerate() {
            let k = index as u32 + 1;
            let check = format!("stage:{name}");
            let starter = self.evaluate(Submission::Stage { stage: k, solved: false });
            let gold = has_gold.then(|| self.evaluate(Submission::Stage { stage: k, solved: true }));
            let (verdict, reason) = stage_verdict(k, n, &starter, gold.as_ref());
            self.push(check, verdict, reason);
        }
    }

    // ---- synthesis.toml (specgap synthesize, seed 000 §4.2) -----------------------------------

    /// `synthesis:sufficiency` and `synthesis:review`, only for a package that records its
    /// synthesis: the sufficiency test's recorded result (a failed one fails the package:
    /// its full instruction did not state enough), and whether humans reviewed it.
    fn synthesis_rows(&mut self) {
        use crate::synthesis::{ReviewStatus, SufficiencyResult};
        let Some(record) = self.package.synthesis() else { return };
        let sufficiency = &record.sufficiency;
        let (verdict, reason) = match sufficiency.result {
            SufficiencyResult::Pass => {
                (Verdict::Pass, "the synthesis's implementation from instruction.full.md passed every requirement".to_owned())
            }
            SufficiencyResult::Fail if sufficiency.failing.is_empty() => (
                Verdict::Fail,
                format!("the synthesis's sufficiency test failed: {}", sufficiency.failure.as_deref().unwrap_or("no reason recorded")),
            ),
            SufficiencyResult::Fail => (
                Verdict::Fail,
                format!("the synthesis's implementation from instruction.full.md failed {}", sufficiency.failing.join(", ")),
            ),
            SufficiencyResult::Skipped => (Verdict::Skip, "the synthesis ran no sufficiency test (no implementer)".to_owned()),
        };
        self.push("synthesis:sufficiency", verdict, reason);
        let (verdict, reason) = match &record.review {
            None => {
                (Verdict::Warn, "not reviewed: no reviewers' verdicts imported (specgap synthesis-review --review NAME=CSV)".to_owned())
            }
            Some(review) if review.status == ReviewStatus::Reviewed => {
                (Verdict::Pass, format!("reviewed (version {}): every criterion passed", review.version))
            }
            Some(review) => {
                let failed: Vec<&str> = review
                    .criteria
                    .iter()
                    .filter(|c| c.verdict == crate::synthesis::CriterionResult::Fail)
                    .map(|c| c.criterion.as_str())
                    .collect();
                (Verdict::Fail, format!("review version {} rejected it: {} failed", review.version, failed.join(", ")))
            }
        };
        self.push("synthesis:review", verdict, reason);
    }

    /// `network`, only when an evaluation's stderr says it tried to reach the network (a
    /// name that does not resolve, an unreachable network): evaluations never have one, so a
    /// task whose tests download what they need (common in Dockerfile tasks) fails for a
    /// reason the author should hear plainly.
    fn network_row(&mut self, evaluations: &[(&str, Option<&Result<Outcome, EvaluateError>>)]) {
        for (what, evaluation) in evaluations {
            let tail = match evaluation {
                Some(Ok(outcome)) => outcome.stderr_tail.as_str(),
                Some(Err(err)) => err.stderr_tail().unwrap_or(""),
                None => continue,
            };
            if let Some(line) = network_failure(tail) {
                self.push(
                    "network",
                    Verdict::Fail,
                    format!(
                        "the {what}'s evaluation tried to reach the network (stderr: {line}); evaluations run without network, so \
                         what the evaluator downloads belongs in the environment's build (e.g. a RUN line of the Dockerfile)"
                    ),
                );
                return;
            }
        }
    }

    /// The `kind` row: the package's scoring kind, from the package and the evaluations
    /// of the starter and gold; fails when there is nothing to score.
    fn kind_row(&mut self, starter: &Result<Outcome, EvaluateError>, gold: Option<&Result<Outcome, EvaluateError>>) -> Option<ScoringKind> {
        let package = self.package;
        if package.is_requirement_scored() {
            let n = package.requirements().len();
            self.push("kind", Verdict::Pass, format!("requirement-scored ({n} requirements)"));
            return Some(ScoringKind::Requirement);
        }
        let outcomes: Vec<&Outcome> = [Some(starter), gold].into_iter().flatten().filter_map(|r| r.as_ref().ok()).collect();
        if outcomes.is_empty() {
            let err = describe_error(starter.as_ref().err());
            self.push("kind", Verdict::Fail, format!("cannot decide the scoring kind: the starter could not be evaluated: {err}"));
            return None;
        }
        if let Some(tests) = outcomes.iter().find_map(|o| o.result.tests.as_ref()) {
            self.push("kind", Verdict::Pass, format!("test-scored (evaluator reports {} tests)", tests.len()));
            return Some(ScoringKind::Test);
        }
        if let Some(delivery) = &package.manifest.delivery {
            let direction = match delivery.direction {
                Direction::Max => "max",
                Direction::Min => "min",
            };
            self.push("kind", Verdict::Pass, format!("delivery-scored (reference {}, {direction})", delivery.reference));
            return Some(ScoringKind::Delivery);
        }
        if outcomes.iter().any(|o| o.result.reward.is_some()) {
            self.push("kind", Verdict::Pass, "reward-scored");
            return Some(ScoringKind::Reward);
        }
        self.push(
            "kind",
            Verdict::Fail,
            "nothing to score: no requirements.toml, no [delivery], and the evaluator reports neither tests nor reward",
        );
        None
    }

    // ---- requirement-scored (seed 000 Appendix E.2) -----------------------------------------

    fn requirement_checks(&mut self, starter: &Result<Outcome, EvaluateError>, gold: Option<&Result<Outcome, EvaluateError>>) {
        let package = self.package;
        self.instruction_length_row();
        self.leak_scan_row();
        if self.strict {
            self.instruction_full_row();
            self.user_row();
            self.shape_row();
        }
        let total = package.requirements().len();
        match starter {
            Err(err) => self.push("starter", Verdict::Fail, describe_error(Some(err))),
            Ok(outcome) => {
                let failing = outcome.failing_requirements(package);
                let passing: Vec<&str> = package.requirement_ids().iter().map(String::as_str).filter(|id| !failing.contains(id)).collect();
                if passing.is_empty() {
                    self.push("starter", Verdict::Pass, format!("fails every requirement ({total} of {total})"));
                } else {
                    let reason = format!("passes {}; expected the starter to fail every requirement", passing.join(", "));
                    self.push("starter", Verdict::Fail, reason);
                }
            }
        }
        match gold {
            None => self.push("gold", Verdict::Fail, "no solutions/gold/; a requirement-scored task needs a gold solution"),
            Some(Err(err)) => self.push("gold", Verdict::Fail, describe_error(Some(err))),
            Some(Ok(outcome)) => {
                let failing = outcome.failing_requirements(package);
                if failing.is_empty() {
                    self.push("gold", Verdict::Pass, format!("passes every requirement ({total} of {total})"));
                } else {
                    let shown = self.with_modes(outcome, &failing);
                    self.push("gold", Verdict::Fail, format!("fails {shown}; expected the gold to pass every requirement"));
                }
            }
        }
        self.literal_row();
        self.mutant_rows();
        self.observations_row();
    }

    /// Every kind but requirement-scored (whose `instruction-length` row covers it):
    /// instruction.md is the agent's opening message, so it must say something.
    fn instruction_row(&mut self) {
        let words = leak::instruction_words(self.package.instruction());
        if words == 0 {
            self.push("instruction", Verdict::Fail, "instruction.md is empty; it is the agent's opening message");
        } else {
            self.push("instruction", Verdict::Pass, format!("instruction.md has {words} words"));
        }
    }

    fn instruction_length_row(&mut self) {
        let (min, max) = INSTRUCTION_WORDS;
        let words = leak::instruction_words(self.package.instruction());
        if words == 0 {
            self.push("instruction-length", Verdict::Fail, format!("instruction.md is empty; expected {min} to {max} words"));
        } else if (min..=max).contains(&words) {
            self.push("instruction-length", Verdict::Pass, format!("{words} words ({min} to {max})"));
        } else {
            self.push("instruction-length", Verdict::Fail, format!("instruction.md has {words} words; expected {min} to {max}"));
        }
    }

    /// What the agent can see or hear ([`scan_package`]), then what the starter prints for the
    /// commands the package names ([`heard::scan_heard`]).
    fn leak_scan_row(&mut self) {
        let mut leaks = match scan_package(self.package) {
            Err(err) => return self.push("leak-scan", Verdict::Fail, format!("could not scan: {err}")),
            Ok(leaks) => leaks,
        };
        let unstated: Vec<_> = self.package.requirements().iter().filter(|r| !r.stated).collect();
        let heard = match heard::scan_heard(self.package, self.judge, &unstated) {
            Err(err) => {
                let reason = format!("could not scan what the agent hears: {}", specgap_protocol::text::error_chain(&err));
                return self.push("leak-scan", Verdict::Fail, reason);
            }
            Ok(heard) => heard,
        };
        leaks.extend(heard.leaks);
        if leaks.is_empty() {
            let (replays, probes) = (heard.replays, heard.probes);
            let s = |n: usize| if n == 1 { "" } else { "s" };
            self.push(
                "leak-scan",
                Verdict::Pass,
                format!(
                    "no unstated requirement text in instruction.md, workspace files, observations, user.toml or the starter's output of {replays} replay{} and {probes} probe{}",
                    s(replays),
                    s(probes)
                ),
            );
        } else {
            let shown: Vec<String> = leaks.iter().map(Leak::to_string).collect();
            self.push("leak-scan", Verdict::Fail, shown.join("; "));
        }
    }

    /// `--strict`: the Full control's opening instruction exists and says something.
    fn instruction_full_row(&mut self) {
        match self.package.instruction_full() {
            None => self.push(
                "instruction-full",
                Verdict::Fail,
                "no instruction.full.md; --strict needs the complete specification the full condition opens with (seed 000 App. E.2)",
            ),
            Some(text) if leak::instruction_words(text) == 0 => self.push(
                "instruction-full",
                Verdict::Fail,
                "instruction.full.md is empty; --strict needs the complete specification the full condition opens with",
            ),
            Some(text) => {
                let package = self.package;
                match full_instruction::review(text, package.instruction(), package.requirements()) {
                    Ok(review) => {
                        let words = leak::instruction_words(text);
                        let lowest = review
                            .stated
                            .iter()
                            .min_by(|a, b| a.coverage.total_cmp(&b.coverage))
                            .map(|s| {
                                format!(
                                    "; lowest: `{}`, {} of its description's content words",
                                    s.requirement,
                                    full_instruction::percent(s.coverage)
                                )
                            })
                            .unwrap_or_default();
                        self.push(
                            "instruction-full",
                            Verdict::Pass,
                            format!(
                                "instruction.full.md present ({words} words): {} paragraphs, each requirement stated in one of its own{lowest}",
                                review.paragraphs
                            ),
                        );
                    }
                    Err(problem) => self.push("instruction-full", Verdict::Fail, problem.to_string()),
                }
            }
        }
    }

    /// `--strict`: the simulated owner exists, with every field it speaks from filled in.
    fn user_row(&mut self) {
        let Some(user) = self.package.user() else {
            self.push(
                "user",
                Verdict::Fail,
                "no user.toml; --strict needs the simulated owner's persona, understanding and editable surface (seed 000 App. E.1, F.4)",
            );
            return;
        };
        let empty: Vec<&str> =
            [("persona", &user.persona), ("understanding", &user.understanding), ("editable_surface", &user.editable_surface)]
                .into_iter()
                .filter(|(_, text)| text.trim().is_empty())
                .map(|(key, _)| key)
                .collect();
        if empty.is_empty() {
            self.push("user", Verdict::Pass, "user.toml present (persona, understanding, editable surface)");
        } else {
            self.push("user", Verdict::Fail, format!("user.toml has an empty {}; the simulated owner speaks from each", empty.join(", ")));
        }
    }

    /// `--strict`: warns when the task departs from the paper's shape (seed 000 §4.3).
    fn shape_row(&mut self) {
        let total = self.package.requirements().len();
        let stated = self.package.requirements().iter().filter(|r| r.stated).count();
        let shape = format!("{total} requirements, {stated} stated");
        if total == PAPER_REQUIREMENTS && stated <= PAPER_MAX_STATED {
            self.push("shape", Verdict::Pass, format!("{shape}, as in the paper"));
        } else {
            self.push(
                "shape",
                Verdict::Warn,
                format!("{shape}; the paper's tasks have {PAPER_REQUIREMENTS} requirements with at most {PAPER_MAX_STATED} stated"),
            );
        }
    }

    fn literal_row(&mut self) {
        let package = self.package;
        let Some(overlay) = package.solutions.literal.as_ref() else {
            if self.strict {
                self.push(
                    "literal",
                    Verdict::Fail,
                    "no solutions/literal/; --strict needs the literal reference, the instruction-following baseline (seed 000 App. E.2)",
                );
            } else {
                self.push("literal", Verdict::Warn, "no solutions/literal/; the instruction-following baseline is not calibrated");
            }
            return;
        };
        let unstated = package.requirements().iter().filter(|r| !r.stated).count();
        match self.evaluate(Submission::Overlay("literal", overlay)) {
            Err(err) => self.push("literal", Verdict::Fail, describe_error(Some(&err))),
            Ok(outcome) => {
                let failing = outcome.failing_requirements(package);
                let listed = list_or_none(&failing);
                let n = failing.len();
                if n >= unstated {
                    self.push("literal", Verdict::Pass, format!("fails {n} ({listed}); at least the {unstated} unstated"));
                } else {
                    let reason = format!("fails {n} ({listed}); expected at least {unstated}, one per unstated requirement");
                    self.push("literal", Verdict::Fail, reason);
                }
            }
        }
    }

    fn mutant_rows(&mut self) {
        let package = self.package;
        for id in package.requirement_ids() {
            let check = format!("mutant:{id}");
            let Some(overlay) = package.solutions.mutants.get(id) else {
                if self.strict {
                    self.push(
                        check,
                        Verdict::Fail,
                        format!("no solutions/mutants/{id}/; --strict needs one mutant per requirement (seed 000 App. E.2)"),
                    );
                } else {
                    self.push(check, Verdict::Warn, format!("no solutions/mutants/{id}/; its failure is not shown reproducible"));
                }
                continue;
            };
            match self.evaluate(Submission::Overlay(&check, overlay)) {
                Err(err) => self.push(check, Verdict::Fail, describe_error(Some(&err))),
                Ok(outcome) => {
                    let failing = outcome.failing_requirements(package);
                    let others: Vec<&str> = failing.iter().copied().filter(|f| f != id).collect();
                    if !failing.contains(&id.as_str()) {
                        self.push(check, Verdict::Fail, format!("passes {id}; expected the mutant to reproduce its failure"));
                    } else if let Some(problem) = self.strict_mode_problem(&outcome, id) {
                        self.push(check, Verdict::Fail, problem);
                    } else if others.is_empty() {
                        let own = self.with_modes(&outcome, &[id.as_str()]);
                        self.push(check, Verdict::Pass, format!("fails {own} only"));
                    } else {
                        let own = self.with_modes(&outcome, &[id.as_str()]);
                        self.push(check, Verdict::Warn, format!("fails {own}, and also breaks {}", others.join(", ")));
                    }
                }
            }
        }
    }

    /// `--strict`: why the mutant of `id` does not fail with a failure mode observations.toml
    /// registers for `id` (the failure its observation names), or `None` when it does or the
    /// check is not strict.
    fn strict_mode_problem(&self, outcome: &Outcome, id: &str) -> Option<String> {
        if !self.strict {
            return None;
        }
        let registered: Vec<&str> =
            self.package.observations().iter().filter(|o| o.requirement == id).map(|o| o.failure_mode.as_str()).collect();
        let registered_list =
            if registered.is_empty() { "none registered".to_owned() } else { format!("registered: {}", registered.join(", ")) };
        let reported = outcome.result.requirements.as_ref().and_then(|m| m.get(id)).and_then(|o| o.failure_mode.as_deref());
        match reported {
            None => Some(format!(
                "fails {id} with no failure mode (null); --strict needs the failure mode its observation names ({registered_list})"
            )),
            Some(mode) if !registered.contains(&mode) => Some(format!(
                "fails {id} with failure mode `{mode}`, which observations.toml does not register for {id} ({registered_list})"
            )),
            Some(_) => None,
        }
    }

    /// `id (mode)` for each failing requirement, the mode as reported (`-` when none).
    fn with_modes(&self, outcome: &Outcome, ids: &[&str]) -> String {
        let reported = outcome.result.requirements.as_ref();
        let shown: Vec<String> = ids
            .iter()
            .map(|id| {
                let mode = reported.and_then(|m| m.get(*id)).and_then(|o| o.failure_mode.as_deref()).unwrap_or("-");
                format!("{id} ({mode})")
            })
            .collect();
        shown.join(", ")
    }

    /// Every failure mode reported in any evaluation so far has an observation, and every
    /// `{key}` of that observation's detail was measured.
    fn observations_row(&mut self) {
        let package = self.package;
        if self.seen.is_empty() {
            self.push("observations", Verdict::Skip, "no evaluation succeeded, so no failure mode was reported");
            return;
        }
        let mut problems = Vec::new();
        let mut modes_seen: BTreeSet<(String, String)> = BTreeSet::new();
        for seen in &self.seen {
            for (id, outcome) in seen.result.requirements.iter().flatten() {
                let Some(mode) = outcome.failure_mode.as_deref().filter(|_| !outcome.pass) else {
                    continue;
                };
                modes_seen.insert((id.clone(), mode.to_owned()));
                let registered = package.observations().iter().find(|o| &o.requirement == id && o.failure_mode == mode);
                let Some(observation) = registered else {
                    problems
                        .push(format!("{} reports failure mode `{mode}` of `{id}`, which observations.toml does not register", seen.label));
                    continue;
                };
                for key in placeholders(&observation.detail) {
                    if !outcome.measured.contains_key(key) {
                        problems.push(format!(
                            "{} reports `{id}`/`{mode}` without measuring `{key}`, which its observation's detail needs",
                            seen.label
                        ));
                    }
                }
            }
        }
        problems.dedup();
        if problems.is_empty() {
            let n = modes_seen.len();
            self.push("observations", Verdict::Pass, format!("{n} reported failure modes, each with an observation"));
        } else {
            self.push("observations", Verdict::Fail, problems.join("; "));
        }
    }

    // ---- test-scored ---------------------------------------------------------------------------

    fn test_checks(&mut self, starter: &Result<Outcome, EvaluateError>, gold: Option<&Result<Outcome, EvaluateError>>) {
        match starter {
            Err(err) => self.push("starter", Verdict::Fail, describe_error(Some(err))),
            Ok(outcome) => {
                let total = outcome.result.tests.as_ref().map_or(0, |t| t.len());
                let failing = outcome.failing_tests().len();
                if failing == 0 {
                    self.push("starter", Verdict::Warn, format!("passes all {total} tests; there is nothing to fix"));
                } else {
                    self.push("starter", Verdict::Pass, format!("fails {failing} of {total} tests"));
                }
            }
        }
        match gold {
            None => self.push("gold", Verdict::Fail, "no solutions/gold/; a test-scored task needs a gold solution"),
            Some(Err(err)) => self.push("gold", Verdict::Fail, describe_error(Some(err))),
            Some(Ok(outcome)) => {
                let total = outcome.result.tests.as_ref().map_or(0, |t| t.len());
                let failing = outcome.failing_tests();
                if outcome.success() {
                    self.push("gold", Verdict::Pass, format!("passes every test ({total})"));
                } else if failing.is_empty() {
                    self.push("gold", Verdict::Fail, "reports no test as passing; expected the gold to pass every test");
                } else {
                    let reason = format!("fails {}; expected the gold to pass every test", failing.join(", "));
                    self.push("gold", Verdict::Fail, reason);
                }
            }
        }
    }

    // ---- delivery-scored (seed 002 §3) --------------------------------------------------------

    fn delivery_checks(&mut self, starter: &Result<Outcome, EvaluateError>, gold: Option<&Result<Outcome, EvaluateError>>) {
        let package = self.package;
        if package.information().is_some() {
            self.push("information", Verdict::Pass, "information.md present");
        } else {
            self.push("information", Verdict::Fail, "no information.md; the customer needs the complete business information");
        }
        self.clarifications_row();
        self.visible_answers_row();
        match starter {
            Err(err) => self.push("starter", Verdict::Fail, describe_error(Some(err))),
            Ok(outcome) if outcome.success() => {
                let reason = format!("{}; expected the starter not to attain it", describe_delivery(outcome));
                self.push("starter", Verdict::Fail, reason);
            }
            Ok(outcome) => self.push("starter", Verdict::Pass, describe_delivery(outcome)),
        }
        match gold {
            None => self.push("gold", Verdict::Fail, "no solutions/gold/; a delivery case needs the accepted solution"),
            Some(Err(err)) => self.push("gold", Verdict::Fail, describe_error(Some(err))),
            Some(Ok(outcome)) if outcome.success() => self.push("gold", Verdict::Pass, describe_delivery(outcome)),
            Some(Ok(outcome)) => {
                let reason = format!("{}; expected the gold to be valid and attain the reference", describe_delivery(outcome));
                self.push("gold", Verdict::Fail, reason);
            }
        }
    }

    fn clarifications_row(&mut self) {
        let targets = self.package.clarifications();
        if targets.is_empty() {
            self.push("clarifications", Verdict::Warn, "no clarification targets; oracle conditions and Ask-F1 do not apply");
            return;
        }
        let mut problems = Vec::new();
        for target in targets {
            if target.answer.trim().is_empty() {
                problems.push(format!("target `{}` has no answer", target.id));
            }
            if !target.triggers.iter().any(|t| !t.trim().is_empty()) {
                problems.push(format!("target `{}` has no trigger", target.id));
            }
        }
        if problems.is_empty() {
            let n = targets.len();
            self.push("clarifications", Verdict::Pass, format!("{n} targets, each with an answer and a trigger"));
        } else {
            self.push("clarifications", Verdict::Fail, problems.join("; "));
        }
    }

    /// Seed 002 §3.2 keeps a target only when the request and visible data do not settle it:
    /// warns about targets whose registered answer stands verbatim in what the agent can read
    /// ([`crate::visible_answer`]).
    fn visible_answers_row(&mut self) {
        if self.package.clarifications().is_empty() {
            return;
        }
        match crate::visible_answer::visible_answers(self.package) {
            Err(err) => self.push("visible-answers", Verdict::Fail, format!("could not scan: {err}")),
            Ok(found) if found.is_empty() => {
                self.push("visible-answers", Verdict::Pass, "no registered answer stands verbatim in instruction.md or the workspace")
            }
            Ok(found) => {
                let shown: Vec<String> = found.iter().map(ToString::to_string).collect();
                self.push(
                    "visible-answers",
                    Verdict::Warn,
                    format!("the agent can read these answers instead of asking: {}", shown.join("; ")),
                );
            }
        }
    }

    // ---- reward-scored -------------------------------------------------------------------------

    fn reward_checks(&mut self, starter: &Result<Outcome, EvaluateError>, gold: Option<&Result<Outcome, EvaluateError>>) {
        let reward = |o: &Outcome| o.result.reward.map_or_else(|| "no reward".to_owned(), |r| format!("reward {r}"));
        match starter {
            Err(err) => self.push("starter", Verdict::Fail, describe_error(Some(err))),
            Ok(outcome) if outcome.success() => {
                self.push("starter", Verdict::Warn, format!("{}; there is nothing to improve", reward(outcome)))
            }
            Ok(outcome) => self.push("starter", Verdict::Pass, reward(outcome)),
        }
        match gold {
            None => self.push("gold", Verdict::Fail, "no solutions/gold/; a reward-scored task needs a gold solution"),
            Some(Err(err)) => self.push("gold", Verdict::Fail, describe_error(Some(err))),
            Some(Ok(outcome)) if outcome.success() => self.push("gold", Verdict::Pass, reward(outcome)),
            Some(Ok(outcome)) => self.push("gold", Verdict::Fail, format!("{}; expected reward 1", reward(outcome))),
        }
    }

    // ---- residual states (seed 001 §3) ---------------------------------------------------------

    /// For each residual state: the patch applies, the verifier fails with a valid verdict,
    /// and the failing tests equal `failing_tests` (failing requirement ids when the evaluator
    /// reports no tests).
    fn residual_checks(&mut self) {
        let package = self.package;
        for state in package.residual_states().values() {
            self.residual_verifier_row(state);
            self.declared_complete_row(state);
            self.left_out_row(state);
        }
    }

    /// `residual:<id>:declared-complete`: a residual state is what a predecessor submitted as
    /// complete (seed 001 §3.2, App. B stage II keeps only agent-declared submissions).
    fn declared_complete_row(&mut self, state: &ResidualState) {
        let check = format!("residual:{}:declared-complete", state.id);
        if state.meta.declared_complete {
            self.push(check, Verdict::Pass, "meta.toml declares the state complete (the predecessor submitted it as done)");
        } else {
            self.push(
                check,
                Verdict::Fail,
                "meta.toml has declared_complete = false; a residual state is a predecessor's state submitted as complete (seed 001 §3.2)",
            );
        }
    }

    /// `residual:<id>:left-out`: `meta.toml`'s `left_out` equals the files the gold changes and
    /// the patch does not touch ([`left_out_files`]); when absent, the computed list is shown.
    fn left_out_row(&mut self, state: &ResidualState) {
        let check = format!("residual:{}:left-out", state.id);
        let computed = match left_out_files(self.package, state) {
            Err(err) => {
                self.push(check, Verdict::Fail, err.to_string());
                return;
            }
            Ok(None) => {
                self.push(check, Verdict::Skip, "no solutions/gold/ to compute the left-out files from");
                return;
            }
            Ok(Some(computed)) => computed,
        };
        let shown: Vec<&str> = computed.iter().map(String::as_str).collect();
        let Some(listed) = state.meta.left_out.as_ref() else {
            self.push(
                check,
                Verdict::Pass,
                format!("not in meta.toml; computed: {} (files the gold changes that state.patch does not touch)", list_or_none(&shown)),
            );
            return;
        };
        let listed: BTreeSet<String> = listed.iter().map(|p| normalize_listed(p)).collect();
        if listed == computed {
            self.push(
                check,
                Verdict::Pass,
                format!("lists {}, the files the gold changes that state.patch does not touch", list_or_none(&shown)),
            );
        } else {
            let extra: Vec<&str> = listed.difference(&computed).map(String::as_str).collect();
            let missing: Vec<&str> = computed.difference(&listed).map(String::as_str).collect();
            self.push(
                check,
                Verdict::Fail,
                format!(
                    "left_out differs from the files the gold changes that state.patch does not touch ({}): listed but not left out: {}; left out but not listed: {}",
                    list_or_none(&shown),
                    list_or_none(&extra),
                    list_or_none(&missing)
                ),
            );
        }
    }

    /// `residual:<id>`: the patch applies, the verifier fails with a valid verdict, and the
    /// failing tests are `meta.toml`'s.
    fn residual_verifier_row(&mut self, state: &ResidualState) {
        let package = self.package;
        let check = format!("residual:{}", state.id);
        let outcome = match self.evaluate(Submission::Residual(state)) {
            Err(err) => {
                self.push(check, Verdict::Fail, describe_error(Some(&err)));
                return;
            }
            Ok(outcome) => outcome,
        };
        if outcome.success() {
            self.push(check, Verdict::Fail, "the verifier passes on this state; expected it to fail");
            return;
        }
        let failing: BTreeSet<&str> = if outcome.result.tests.is_some() {
            outcome.failing_tests().into_iter().collect()
        } else {
            outcome.failing_requirements(package).into_iter().collect()
        };
        let listed: BTreeSet<&str> = state.meta.failing_tests.iter().map(String::as_str).collect();
        if failing == listed {
            let shown: Vec<&str> = failing.into_iter().collect();
            self.push(check, Verdict::Pass, format!("applies; fails {} as meta.toml lists", shown.join(", ")));
        } else {
            let missing: Vec<&str> = listed.difference(&failing).copied().collect();
            let extra: Vec<&str> = failing.difference(&listed).copied().collect();
            let reason = format!(
                "failing tests differ from meta.toml's failing_tests: listed but passing: {}; failing but not listed: {}",
                list_or_none(&missing),
                list_or_none(&extra)
            );
            self.push(check, Verdict::Fail, reason);
        }
    }
}

/// A `left_out` entry as [`left_out_files`] writes paths: `/` separators, no leading `./`.
fn normalize_listed(path: &str) -> String {
    let path = path.replace('\\', "/");
    path.trim_start_matches("./").to_owned()
}

fn list_or_none(items: &[&str]) -> String {
    if items.is_empty() { "none".to_owned() } else { items.join(", ") }
}

/// What a failed network access prints, lowercase (busybox and GNU tools, curl, pip's
/// urllib3, Python's socket, Node).
const NETWORK_FAILURES: [&str; 8] = [
    "bad address",
    "could not resolve host",
    "temporary failure in name resolution",
    "name or service not known",
    "network is unreachable",
    "failed to establish a new connection",
    "no address associated with hostname",
    "getaddrinfo",
];

/// The first line of `stderr` that reports a failed network access, trimmed.
fn network_failure(stderr: &str) -> Option<&str> {
    stderr.lines().map(str::trim).find(|line| {
        let lower = line.to_lowercase();
        NETWORK_FAILURES.iter().any(|sign| lower.contains(sign))
    })
}

/// An evaluation error with its chain of causes, `: `-joined, in one line.
pub fn describe_error_chain(err: &EvaluateError) -> String {
    specgap_protocol::text::error_chain(err)
}

/// An evaluation error in one line: its message, its causes, and the last stderr line.
pub(crate) fn describe_error(err: Option<&EvaluateError>) -> String {
    let Some(err) = err else {
        return "evaluation did not run".to_owned();
    };
    let mut text = describe_error_chain(err);
    if let Some(tail) = err.stderr_tail().and_then(|t| t.lines().rev().find(|l| !l.trim().is_empty())) {
        text.push_str(" (stderr: ");
        text.push_str(tail.trim());
        text.push(')');
    }
    text
}

/// A delivery verdict in words: validity, objective, reference and violations.
fn describe_delivery(outcome: &Outcome) -> String {
    let Some(delivery) = &outcome.result.delivery else {
        return "no delivery reported".to_owned();
    };
    if !delivery.valid {
        let signature = delivery.signature.map_or("-", |s| match s {
            specgap_protocol::result::Signature::Constraint => "constraint",
            specgap_protocol::result::Signature::Fatal => "fatal",
            specgap_protocol::result::Signature::Schema => "schema",
            specgap_protocol::result::Signature::Execution => "execution",
            specgap_protocol::result::Signature::Quality => "quality",
            specgap_protocol::result::Signature::None => "none",
        });
        let rules: Vec<&str> = delivery.violations.iter().map(|v| v.rule.as_str()).collect();
        return format!("invalid ({signature}: {})", list_or_none(&rules));
    }
    let score = outcome.scored.map_or(0.0, |s| s.score);
    let objective = delivery.objective.map_or_else(|| "-".to_owned(), |x| x.to_string());
    if outcome.success() {
        format!("valid, objective {objective} attains the reference (score {score:.4})")
    } else {
        format!("valid, objective {objective} falls short of the reference (score {score:.4})")
    }
}

/// `{key}` placeholders of an observation detail (keys of letters, digits and `_`).
pub(crate) fn placeholders(detail: &str) -> Vec<&str> {
    let mut keys = Vec::new();
    let mut rest = detail;
    while let Some(open) = rest.find('{') {
        let after = &rest[open + 1..];
        match after.find('}') {
            Some(close) if close > 0 && after[..close].chars().all(|c| c.is_alphanumeric() || c == '_') => {
                keys.push(&after[..close]);
                rest = &after[close + 1..];
            }
            _ => rest = after,
        }
    }
    keys
}

/// Leaks in everything the agent can see or hear without running a command (the starter's
/// output of the package's own commands is [`heard::scan_heard`]'s): instruction.md, every regular workspace
/// file (binary files skipped) in path order, then what the owner can say — each
/// observation's incident, detail and (format 2) request, which the `relay` owner relays
/// after a failed submission, and `user.toml`'s understanding and editable surface, whose
/// sentences it answers questions with (labelled like `observations.toml
/// charge-once/charged-twice request` and `user.toml understanding`).
pub fn scan_package(package: &TaskPackage) -> Result<Vec<Leak>, LoadError> {
    let unstated: Vec<_> = package.requirements().iter().filter(|r| !r.stated).collect();
    let mut leaks = leak::scan_text("instruction.md", package.instruction(), &unstated);
    leaks.extend(scan_workspace(package, &unstated)?);
    for observation in package.observations() {
        let label = |field: &str| format!("observations.toml {}/{} {field}", observation.requirement, observation.failure_mode);
        leaks.extend(leak::scan_text(&label("incident"), &observation.incident, &unstated));
        leaks.extend(leak::scan_text(&label("detail"), &observation.detail, &unstated));
        if let Some(request) = &observation.request {
            leaks.extend(leak::scan_text(&label("request"), request, &unstated));
        }
    }
    if let Some(profile) = package.user() {
        leaks.extend(leak::scan_text("user.toml understanding", &profile.understanding, &unstated));
        leaks.extend(leak::scan_text("user.toml editable_surface", &profile.editable_surface, &unstated));
    }
    Ok(leaks)
}

/// Leaks in every regular workspace file, in path order.
fn scan_workspace(package: &TaskPackage, unstated: &[&specgap_protocol::package::Requirement]) -> Result<Vec<Leak>, LoadError> {
    let mut leaks = Vec::new();
    let root = package.root();
    let walker = walkdir::WalkDir::new(package.workspace_dir()).follow_links(false).sort_by_file_name();
    for entry in walker {
        let entry = entry?;
        if !entry.file_type().is_file() {
            continue;
        }
        let Some(text) = leak::read_scannable(entry.path())? else {
            continue;
        };
        let rel = entry.path().strip_prefix(root).unwrap_or(entry.path());
        leaks.extend(leak::scan_text(&rel.display().to_string(), &text, unstated));
    }
    Ok(leaks)
}

/// The check table of one report, as printed by `specgap check`:
///
/// ```text
/// fixtures/req-basic (requirement-scored): pass
///   check               result  reason
///   load                pass    format 1 package loaded
/// ```
pub fn render_table(report: &TaskReport) -> String {
    let kind = report.kind.map_or_else(String::new, |k| format!(" ({}-scored)", k.as_str()));
    let overall = if report.passed { "pass" } else { "fail" };
    let mut out = format!("{}{kind}: {overall}\n", report.title());
    let width = report.checks.iter().map(|r| r.check.len()).max().unwrap_or(0).max("check".len());
    out.push_str(&format!("  {:<width$}  result  reason\n", "check"));
    for row in &report.checks {
        out.push_str(&format!("  {:<width$}  {:<6}  {}\n", row.check, row.result.as_str(), row.reason));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_brace_keys() {
        assert_eq!(placeholders("Invoice {invoice} paid {days_late} days late {fee}."), ["invoice", "days_late", "fee"]);
        assert_eq!(placeholders("no {} keys {a b} here {ok"), Vec::<&str>::new());
    }
}
