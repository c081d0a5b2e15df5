//! The pipeline: Planner → Builder → acceptance checks → Auditor → Calibrator, with the loops
//! of seed 000 §4.2 / Figure 3.
//!
//! * A failing acceptance check, an Auditor `fix` or a Calibrator `fix` sends the numbered list
//!   back to the Builder, which works on a copy of its previous directory; each Builder round
//!   counts against [`Limits::max_iterations`] for the current design.
//! * An Auditor `redesign` sends its reason back to the Planner and starts a new design;
//!   [`Limits::max_redesigns`] bounds how often.
//! * A malformed hand-off is asked for again with the reason, at most [`Limits::max_retries`]
//!   more times.
//!
//! `--resume` ([`Config::resume`]) rebuilds the journal from the start: each role answer the
//! earlier journal holds is reused for the same request (stage, design, iteration, attempt)
//! instead of asking the role, the acceptance checks run again, and once the recorded answers
//! are used up the roles are asked live ([`crate::role::Role::resume_after`] tells each how
//! many of its answers were reused). A synthesis that ended `ready` is not resumed.
//!
//! Layout of `<out>`: `journal.json` ([`crate::journal`]), `prompts/<role>.md` (the templates
//! used), `work/design-<d>/iteration-<i>/` (each Builder working directory, kept), and
//! `package/` (a copy of the accepted package, when the synthesis ends `ready`).

use std::collections::VecDeque;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde::de::DeserializeOwned;
use specgap_task::{Judge, Outcome, Submission};

use crate::acceptance::{AcceptanceReport, run_acceptance};
use crate::handoff::{
    AuditDecision, AuditorVerdict, BriefLimits, BuilderHandoff, CalibrationDecision, CalibratorVerdict, HandoffError, ImplementerHandoff,
    PlannerBrief, Validate, parse,
};
use crate::journal::{Entry, Journal, JournalOutcome, Previous, Recorded, read_previous};
use crate::prompts::{Prompts, fill};
use crate::role::{Role, RoleError, RoleName, RoleRequest};
use crate::tree::copy_tree;

/// The pipeline's limits: the paper leaves each unnamed, so each is a flag with this default.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, serde::Deserialize)]
pub struct Limits {
    /// Builder rounds per design (`--max-iterations`, default 3).
    pub max_iterations: usize,
    /// Redesigns after the first design (`--max-redesigns`, default 1).
    pub max_redesigns: usize,
    /// Extra attempts at a malformed hand-off (`--max-retries`, default 2).
    pub max_retries: usize,
    /// What the brief must respect (`--requirements`, `--min-withheld`).
    pub brief: BriefLimits,
    /// `--max-tokens`: prompt + completion tokens all roles together may spend (their model
    /// requests as journaled); the synthesis stops after the answer that goes over. `None`:
    /// no cap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
    /// `--max-cost`: US dollars all roles together may spend, as their model clients price
    /// their requests (the journal's `usage.*.cost_usd`); the synthesis stops after the answer
    /// that goes over. `None`: no cap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_cost_usd: Option<f64>,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { max_iterations: 3, max_redesigns: 1, max_retries: 2, brief: BriefLimits::default(), max_tokens: None, max_cost_usd: None }
    }
}

/// The players: the four roles, and optionally the Auditor's sufficiency episode.
pub struct Roles {
    /// Reads the source, writes the brief.
    pub planner: Box<dyn Role>,
    /// Writes the package.
    pub builder: Box<dyn Role>,
    /// Reviews the package.
    pub auditor: Box<dyn Role>,
    /// Reads the calibration rollouts.
    pub calibrator: Box<dyn Role>,
    /// Implements from the full instruction and the workspace alone (`--implementer`); without
    /// it the sufficiency test is skipped and the journal says so.
    pub implementer: Option<Box<dyn Role>>,
    /// Runs the reference agent's calibration rollouts before the Calibrator answers
    /// (`--reference`); without it the Calibrator gets none.
    pub reference: Option<Box<dyn crate::rollouts::Rollouts>>,
}

impl Roles {
    fn get(&mut self, role: RoleName) -> Option<&mut dyn Role> {
        match role {
            RoleName::Planner => Some(self.planner.as_mut()),
            RoleName::Builder => Some(self.builder.as_mut()),
            RoleName::Auditor => Some(self.auditor.as_mut()),
            RoleName::Calibrator => Some(self.calibrator.as_mut()),
            RoleName::Implementer => self.implementer.as_deref_mut().map(|r| r as &mut dyn Role),
        }
    }
}

/// What to synthesize, and where.
#[derive(Debug, Clone)]
pub struct Config {
    /// The source task (a directory or file the Planner reads).
    pub source: PathBuf,
    /// The output directory; must be missing or empty.
    pub out: PathBuf,
    /// The limits.
    pub limits: Limits,
    /// The role prompts.
    pub prompts: Prompts,
    /// `--resume`: continue the synthesis journaled in `out` (its role answers are reused in
    /// order, acceptance checks re-run, roles asked from where it stopped).
    pub resume: bool,
}

/// A synthesis that ended `ready`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Synthesized {
    /// `<out>/package`.
    pub package: PathBuf,
    /// `<out>/journal.json`.
    pub journal: PathBuf,
    /// Designs made (1 + redesigns).
    pub designs: usize,
    /// Builder rounds in the last design.
    pub iterations: usize,
}

/// Why a synthesis stopped without a ready package.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SynthError {
    /// The source does not exist.
    #[error("the source task {} does not exist", path.display())]
    NoSource {
        /// The path given.
        path: PathBuf,
    },
    /// The output directory already holds something.
    #[error("the output directory {} is not empty; choose a new one", path.display())]
    OutNotEmpty {
        /// The directory.
        path: PathBuf,
    },
    /// `--resume` found no journal it can read.
    #[error("cannot resume from {}", path.display())]
    NoJournal {
        /// The journal path.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// `--resume` of a synthesis that already ended ready.
    #[error("the synthesis in {} already ended ready; nothing to resume", path.display())]
    AlreadyReady {
        /// The output directory.
        path: PathBuf,
    },
    /// The resumed pipeline asks for something other than the journal recorded next.
    #[error("journal entry {seq} ({recorded}) is not what the resumed pipeline asks for ({asked}); resume with the first run's limits")]
    Diverged {
        /// The entry's `seq`.
        seq: usize,
        /// `stage design/iteration/attempt` recorded.
        recorded: String,
        /// The same for the request.
        asked: String,
    },
    /// The accepted package could not be loaded for the sufficiency test.
    #[error("the package could not be loaded for the sufficiency test")]
    Sufficiency {
        /// The cause.
        #[source]
        source: Box<specgap_task::LoadError>,
    },
    /// A file or directory of the output could not be written.
    #[error("cannot write {}", path.display())]
    Write {
        /// The path.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// No player was given for a role the pipeline needs.
    #[error("no player was given for the {role}")]
    NoPlayer {
        /// The role.
        role: &'static str,
    },
    /// A role could not answer.
    #[error("the {role} could not answer")]
    Role {
        /// The role.
        role: &'static str,
        /// The cause.
        #[source]
        source: RoleError,
    },
    /// A role's hand-off stayed malformed through every retry.
    #[error("the {role}'s hand-off was still malformed at attempt {attempts} (--max-retries {retries})")]
    Malformed {
        /// The role.
        role: &'static str,
        /// Attempts made.
        attempts: usize,
        /// The retry limit.
        retries: usize,
        /// The last problem.
        #[source]
        source: HandoffError,
    },
    /// The Builder rounds of one design ran out while fixes were still asked for.
    #[error(
        "design {design} is still not accepted after {iterations} builder iterations (--max-iterations {iterations}); the last round asked for:\n{}",
        numbered(fixes)
    )]
    IterationLimit {
        /// The design.
        design: usize,
        /// The limit reached.
        iterations: usize,
        /// What the last round still asked for.
        fixes: Vec<String>,
    },
    /// The reference agent's calibration rollouts could not be run.
    #[error("the calibration rollouts failed")]
    Rollouts {
        /// The cause.
        #[source]
        source: Box<crate::rollouts::RolloutError>,
    },
    /// The roles and the calibration rollouts together spent more tokens than `--max-tokens`.
    #[error("the roles and rollouts spent {spent} tokens, more than --max-tokens {cap}")]
    TokenCap {
        /// The cap.
        cap: u64,
        /// Tokens spent.
        spent: u64,
    },
    /// The roles and the calibration rollouts together spent more than `--max-cost`.
    #[error("the roles and rollouts spent ${spent:.4}, more than --max-cost {cap}")]
    CostCap {
        /// The cap, in US dollars.
        cap: f64,
        /// Dollars spent.
        spent: f64,
    },
    /// The Auditor asked for another redesign after the last one allowed.
    #[error("the auditor still asks for a redesign of design {designs} (--max-redesigns {redesigns}): {reason}")]
    RedesignLimit {
        /// Designs made (the last one's number).
        designs: usize,
        /// The limit.
        redesigns: usize,
        /// The Auditor's last reason.
        reason: String,
    },
}

const ALL_ROLES: [RoleName; 5] = [RoleName::Planner, RoleName::Builder, RoleName::Auditor, RoleName::Calibrator, RoleName::Implementer];

/// `1. first\n2. second`.
pub fn numbered(items: &[String]) -> String {
    items.iter().enumerate().map(|(i, item)| format!("{}. {item}", i + 1)).collect::<Vec<_>>().join("\n")
}

/// Runs the whole pipeline. The journal records every step, and the outcome, also when the
/// synthesis fails after the output directory was prepared.
///
/// # Errors
/// [`SynthError`]: the source or output directory is unusable, a role fails or stays
/// malformed, or a limit is reached.
pub fn synthesize(config: &Config, roles: &mut Roles, judge: &dyn Judge) -> Result<Synthesized, SynthError> {
    if !config.source.exists() {
        return Err(SynthError::NoSource { path: config.source.clone() });
    }
    let previous = if config.resume { Some(read_resumable(&config.out)?) } else { None };
    prepare_out(config, previous.is_some())?;
    let mut labels = vec![
        ("planner", roles.planner.label()),
        ("builder", roles.builder.label()),
        ("auditor", roles.auditor.label()),
        ("calibrator", roles.calibrator.label()),
    ];
    if let Some(implementer) = &roles.implementer {
        labels.push(("implementer", implementer.label()));
    }
    if let Some(reference) = &roles.reference {
        labels.push(("reference", reference.label()));
    }
    let mut journal = Journal::new(&config.out, &config.source, config.limits, labels);
    let mut recorded = VecDeque::new();
    if let Some(previous) = previous {
        journal.set_resumed(previous.resumed);
        journal.carry(&previous.unanswered);
        for role in ALL_ROLES {
            let answered = previous.answers.iter().filter(|a| a.stage == role.as_str()).count();
            if let Some(player) = roles.get(role) {
                player.resume_after(answered);
            }
        }
        recorded = previous.answers.into();
    }
    let mut run = Run { config, roles, judge, journal, recorded };
    let result = run.designs();
    let outcome = match &result {
        Ok(done) => {
            JournalOutcome { status: "ready", message: "the package passed every stage".into(), package: Some(done.package.clone()) }
        }
        Err(err) => JournalOutcome { status: "failed", message: error_chain(err), package: None },
    };
    let path = run.journal.path().to_owned();
    run.journal.finish(outcome).map_err(|source| SynthError::Write { path, source })?;
    result
}

fn error_chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut cause = err.source();
    while let Some(inner) = cause {
        text.push_str(": ");
        text.push_str(&inner.to_string());
        cause = inner.source();
    }
    text
}

fn read_resumable(out: &Path) -> Result<Previous, SynthError> {
    let previous = read_previous(out).map_err(|source| SynthError::NoJournal { path: out.join("journal.json"), source })?;
    if previous.status.as_deref() == Some("ready") {
        return Err(SynthError::AlreadyReady { path: out.to_owned() });
    }
    Ok(previous)
}

fn prepare_out(config: &Config, resuming: bool) -> Result<(), SynthError> {
    let out = config.out.as_path();
    let write = |path: &Path| {
        let path = path.to_owned();
        move |source| SynthError::Write { path, source }
    };
    if !resuming && out.exists() && fs_err::read_dir(out).map_err(write(out))?.next().is_some() {
        return Err(SynthError::OutNotEmpty { path: out.to_owned() });
    }
    let prompts = out.join("prompts");
    fs_err::create_dir_all(&prompts).map_err(write(prompts.as_path()))?;
    for role in ALL_ROLES {
        let path = prompts.join(format!("{}.md", role.as_str()));
        fs_err::write(&path, config.prompts.template(role)).map_err(write(path.as_path()))?;
    }
    Ok(())
}

/// What a Builder round ended with.
enum Round {
    /// The package is ready; the sufficiency test's result, when one ran.
    Ready(Option<Sufficiency>),
    /// Back to the Builder with these fixes.
    Fix(Vec<String>),
    /// Back to the Planner with this reason.
    Redesign(String),
}

struct Run<'a> {
    config: &'a Config,
    roles: &'a mut Roles,
    judge: &'a dyn Judge,
    journal: Journal,
    /// `--resume`: role answers of the earlier journal not yet reused.
    recorded: VecDeque<Recorded>,
}

impl Run<'_> {
    fn limits(&self) -> &Limits {
        &self.config.limits
    }

    fn designs(&mut self) -> Result<Synthesized, SynthError> {
        let mut redesign: Option<String> = None;
        for design in 1..=self.limits().max_redesigns + 1 {
            let brief = self.plan(design, redesign.as_deref())?;
            match self.build_rounds(design, &brief)? {
                Ok(done) => return Ok(done),
                Err(reason) => redesign = Some(reason),
            }
        }
        Err(SynthError::RedesignLimit {
            designs: self.limits().max_redesigns + 1,
            redesigns: self.limits().max_redesigns,
            reason: redesign.unwrap_or_default(),
        })
    }

    /// The Builder rounds of one design: `Ok(Ok(_))` ready, `Ok(Err(reason))` redesign.
    fn build_rounds(&mut self, design: usize, brief: &PlannerBrief) -> Result<Result<Synthesized, String>, SynthError> {
        let mut fixes: Vec<String> = Vec::new();
        let mut previous: Option<PathBuf> = None;
        let max = self.limits().max_iterations;
        for iteration in 1..=max {
            let work_dir = self.config.out.join(format!("work/design-{design}/iteration-{iteration}"));
            self.prepare_work_dir(&work_dir, previous.as_deref())?;
            let package = self.build(design, iteration, brief, &fixes, &work_dir)?;
            match self.review(design, iteration, brief, &package)? {
                Round::Ready(sufficiency) => {
                    let target = self.config.out.join("package");
                    copy_tree(&package.root, &target).map_err(|source| SynthError::Write { path: target.clone(), source })?;
                    self.record_synthesis(&target, sufficiency.as_ref())?;
                    return Ok(Ok(Synthesized {
                        package: target,
                        journal: self.journal.path().to_owned(),
                        designs: design,
                        iterations: iteration,
                    }));
                }
                Round::Fix(next) => fixes = next,
                Round::Redesign(reason) => return Ok(Err(reason)),
            }
            previous = Some(work_dir);
        }
        Err(SynthError::IterationLimit { design, iterations: max, fixes })
    }

    /// Writes `<package>/synthesis.toml` ([`specgap_task::synthesis`]): the source and the
    /// sufficiency test's result, so `check` can report it; no review yet.
    fn record_synthesis(&self, package: &Path, sufficiency: Option<&Sufficiency>) -> Result<(), SynthError> {
        use specgap_task::synthesis::{SYNTHESIS_FILE, SYNTHESIS_FORMAT, SufficiencyRecord, SufficiencyResult, SynthesisRecord};
        let sufficiency = match sufficiency {
            None => SufficiencyRecord { result: SufficiencyResult::Skipped, failing: Vec::new(), failure: None },
            Some(s) => SufficiencyRecord {
                result: if s.failure.is_none() { SufficiencyResult::Pass } else { SufficiencyResult::Fail },
                failing: s.failing.clone(),
                failure: s.failure.clone().filter(|_| s.failing.is_empty()),
            },
        };
        let record =
            SynthesisRecord { format: SYNTHESIS_FORMAT, source: self.config.source.display().to_string(), sufficiency, review: None };
        let path = package.join(SYNTHESIS_FILE);
        let text = record.to_toml().map_err(|e| SynthError::Write { path: path.clone(), source: std::io::Error::other(e) })?;
        fs_err::write(&path, text).map_err(|source| SynthError::Write { path, source })
    }

    /// A new round's directory starts as a copy of the previous round's; one that exists
    /// already (a resumed synthesis) keeps what its Builder wrote.
    fn prepare_work_dir(&self, work_dir: &Path, previous: Option<&Path>) -> Result<(), SynthError> {
        if work_dir.is_dir() {
            return Ok(());
        }
        let write = |source| SynthError::Write { path: work_dir.to_owned(), source };
        match previous {
            Some(previous) => copy_tree(previous, work_dir).map_err(write),
            None => fs_err::create_dir_all(work_dir).map_err(write),
        }
    }

    /// Acceptance checks, then the Auditor, then the Calibrator.
    fn review(&mut self, design: usize, iteration: usize, brief: &PlannerBrief, package: &BuiltPackage) -> Result<Round, SynthError> {
        let acceptance = run_acceptance(&package.root, brief, self.judge);
        self.record_acceptance(design, iteration, &acceptance)?;
        if !acceptance.passed {
            return Ok(Round::Fix(acceptance.failures()));
        }
        let sufficiency = self.sufficiency(design, iteration, package)?;
        if let Some(failing) = sufficiency.as_ref().and_then(|s| s.failure.clone()) {
            return Ok(Round::Fix(vec![failing]));
        }
        let audit = self.audit(design, iteration, brief, package, &acceptance, sufficiency.as_ref())?;
        match audit.verdict {
            AuditDecision::Fix => return Ok(Round::Fix(audit.fixes)),
            AuditDecision::Redesign => return Ok(Round::Redesign(audit.reason.unwrap_or_default())),
            AuditDecision::Pass => {}
        }
        let calibration = self.calibrate(design, iteration, package)?;
        Ok(match calibration.verdict {
            CalibrationDecision::Ready => Round::Ready(sufficiency),
            CalibrationDecision::Fix => Round::Fix(calibration.fixes),
        })
    }

    fn plan(&mut self, design: usize, redesign: Option<&str>) -> Result<PlannerBrief, SynthError> {
        let limits = self.limits().brief;
        let source = self.config.source.display().to_string();
        let redesign_note = redesign.map(|r| format!("The previous design was rejected by the auditor: {r}")).unwrap_or_default();
        let prompt = fill(
            self.config.prompts.template(RoleName::Planner),
            &[
                ("source", source.clone()),
                ("requirements", limits.requirements.to_string()),
                ("min_withheld", limits.min_withheld.to_string()),
                ("redesign", redesign_note),
            ],
        );
        let inputs = serde_json::json!({
            "source": source,
            "requirements": limits.requirements,
            "min_withheld": limits.min_withheld,
            "redesign_reason": redesign,
        });
        let request = RoleRequest { role: RoleName::Planner, prompt, inputs, work_dir: None, retry_reason: None };
        self.ask::<PlannerBrief>(request, design, 0, |_| Ok(()))
    }

    fn build(
        &mut self,
        design: usize,
        iteration: usize,
        brief: &PlannerBrief,
        fixes: &[String],
        work_dir: &Path,
    ) -> Result<BuiltPackage, SynthError> {
        let brief_json = serde_json::to_value(brief).unwrap_or_default();
        let fixes_text = if fixes.is_empty() { "(none)".to_owned() } else { numbered(fixes) };
        let prompt = fill(
            self.config.prompts.template(RoleName::Builder),
            &[
                ("work_dir", work_dir.display().to_string()),
                ("brief", serde_json::to_string_pretty(&brief_json).unwrap_or_default()),
                ("fixes", fixes_text),
            ],
        );
        let inputs = serde_json::json!({"brief": brief_json, "fixes": fixes, "work_dir": work_dir});
        let request = RoleRequest { role: RoleName::Builder, prompt, inputs, work_dir: Some(work_dir.to_owned()), retry_reason: None };
        let check_dir = |handoff: &BuilderHandoff| {
            write_handoff_files("builder", work_dir, &handoff.files)?;
            if package_root(work_dir, handoff).join("task.toml").is_file() {
                Ok(())
            } else {
                Err(HandoffError::Rule {
                    role: "builder",
                    field: "package".into(),
                    problem: format!("`{}` holds no task.toml in the working directory", handoff.package.display()),
                })
            }
        };
        let handoff = self.ask::<BuilderHandoff>(request, design, iteration, check_dir)?;
        Ok(BuiltPackage { root: package_root(work_dir, &handoff), summary: handoff.summary })
    }

    fn audit(
        &mut self,
        design: usize,
        iteration: usize,
        brief: &PlannerBrief,
        package: &BuiltPackage,
        acceptance: &AcceptanceReport,
        sufficiency: Option<&Sufficiency>,
    ) -> Result<AuditorVerdict, SynthError> {
        let prompt = fill(
            self.config.prompts.template(RoleName::Auditor),
            &[("package", package.root.display().to_string()), ("summary", package.summary.clone()), ("acceptance", acceptance.render())],
        );
        let inputs = serde_json::json!({
            "package": package.root,
            "summary": package.summary,
            "brief": brief,
            "acceptance": acceptance,
            "sufficiency": sufficiency,
        });
        let request = RoleRequest { role: RoleName::Auditor, prompt, inputs, work_dir: None, retry_reason: None };
        self.ask::<AuditorVerdict>(request, design, iteration, |verdict| evidence_matches_brief(verdict, brief))
    }

    /// The sufficiency test (App. E.3 item 4): the implementer gets a copy of the workspace and
    /// the full instruction only; specgap runs what it leaves through the evaluator. `None`
    /// when no implementer plays.
    fn sufficiency(&mut self, design: usize, iteration: usize, package: &BuiltPackage) -> Result<Option<Sufficiency>, SynthError> {
        if self.roles.implementer.is_none() {
            return Ok(None);
        }
        let loaded = specgap_task::load(&package.root).map_err(|source| SynthError::Sufficiency { source: Box::new(source) })?;
        let work_dir = self.config.out.join(format!("work/design-{design}/iteration-{iteration}-sufficiency"));
        if !work_dir.is_dir() {
            copy_tree(&loaded.workspace_dir(), &work_dir).map_err(|source| SynthError::Write { path: work_dir.clone(), source })?;
        }
        let instruction = loaded.instruction_full().unwrap_or_default().to_owned();
        let prompt = fill(
            self.config.prompts.template(RoleName::Implementer),
            &[("work_dir", work_dir.display().to_string()), ("instruction", instruction.clone())],
        );
        let inputs = serde_json::json!({"instruction": instruction, "work_dir": work_dir});
        let request = RoleRequest { role: RoleName::Implementer, prompt, inputs, work_dir: Some(work_dir.clone()), retry_reason: None };
        self.ask::<ImplementerHandoff>(request, design, iteration, |handoff| {
            write_handoff_files("implementer", &work_dir, &handoff.files)
        })?;
        let result = evaluate_sufficiency(&loaded, &work_dir, self.judge);
        self.push_check("sufficiency", design, iteration, result.failure.is_none(), serde_json::to_value(&result).unwrap_or_default())?;
        Ok(Some(result))
    }

    fn calibrate(&mut self, design: usize, iteration: usize, package: &BuiltPackage) -> Result<CalibratorVerdict, SynthError> {
        // Without a reference agent the Calibrator gets no rollouts and its verdict is taken as
        // given (docs/synthesize.md "Calibration rollouts").
        let rollouts = self.rollouts(design, iteration, package)?;
        let rollouts_text = match &rollouts {
            Some(rollouts) => crate::rollouts::render(rollouts),
            None => "(none: no reference agent was named, so no rollouts were run)".into(),
        };
        let prompt = fill(
            self.config.prompts.template(RoleName::Calibrator),
            &[("package", package.root.display().to_string()), ("rollouts", rollouts_text)],
        );
        // With rollouts, every finding must name one that ran, under its condition (a made-up
        // or mislabelled citation is malformed and asked again).
        let ran: Option<Vec<(String, String)>> =
            rollouts.as_ref().map(|list| list.iter().map(|r| (r.rollout.clone(), r.condition.clone())).collect());
        let inputs = serde_json::json!({"package": package.root, "rollouts": rollouts.unwrap_or_default()});
        let request = RoleRequest { role: RoleName::Calibrator, prompt, inputs, work_dir: None, retry_reason: None };
        self.ask::<CalibratorVerdict>(request, design, iteration, |verdict| match &ran {
            Some(ran) => check_cited_rollouts(verdict, ran),
            None => Ok(()),
        })
    }

    /// Runs the reference agent's rollouts into `<out>/rollouts/design-<d>/iteration-<i>` and
    /// journals their summaries (stage `rollouts`); `None` without a reference agent.
    fn rollouts(
        &mut self,
        design: usize,
        iteration: usize,
        package: &BuiltPackage,
    ) -> Result<Option<Vec<crate::rollouts::RolloutSummary>>, SynthError> {
        if self.roles.reference.is_none() {
            return Ok(None);
        }
        let store = self.config.out.join(format!("rollouts/design-{design}/iteration-{iteration}"));
        let parent = store.parent().unwrap_or(&self.config.out).to_owned();
        fs_err::create_dir_all(&parent).map_err(|source| SynthError::Write { path: parent, source })?;
        // What the caps leave for the rollouts: the runner stops between episodes once passed.
        let budget = crate::rollouts::RolloutBudget {
            tokens: self.config.limits.max_tokens.map(|cap| cap.saturating_sub(self.journal.tokens())),
            cost_usd: self.config.limits.max_cost_usd.map(|cap| (cap - self.journal.cost_usd()).max(0.0)),
        };
        let Some(reference) = self.roles.reference.as_mut() else { return Ok(None) };
        let summaries = reference.run(&package.root, &store, budget).map_err(|source| SynthError::Rollouts { source: Box::new(source) })?;
        let detail = serde_json::json!({"store": store, "rollouts": summaries});
        let mut spent = crate::role::Usage::default();
        for summary in &summaries {
            spent.add(&summary.usage);
        }
        let usage = (spent != crate::role::Usage::default()).then_some(spent);
        let entry = Entry {
            seq: 0,
            stage: "rollouts",
            design,
            iteration,
            attempt: 1,
            status: "ran",
            inputs: None,
            retry_reason: None,
            reply: None,
            detail,
            usage,
        };
        self.push(entry)?;
        // The rollouts count toward the caps like any role: a synthesis over them stops here.
        self.check_token_cap()?;
        Ok(Some(summaries))
    }

    /// Asks `request.role` until its answer parses, validates and passes `extra`, retrying a
    /// malformed answer with the reason at most [`Limits::max_retries`] times.
    fn ask<T: DeserializeOwned + Serialize + Validate>(
        &mut self,
        mut request: RoleRequest,
        design: usize,
        iteration: usize,
        extra: impl Fn(&T) -> Result<(), HandoffError>,
    ) -> Result<T, SynthError> {
        let role = request.role.as_str();
        let attempts = self.limits().max_retries + 1;
        let brief_limits = self.limits().brief;
        let mut last = None;
        for attempt in 1..=attempts {
            let (reply, usage) = match self.replayed(role, design, iteration, attempt)? {
                Some(recorded) => recorded,
                None => {
                    let player = self.roles.get(request.role).ok_or(SynthError::NoPlayer { role })?;
                    let answered = player.answer(&request);
                    let usage = player.take_usage();
                    match answered {
                        Ok(reply) => (reply, usage),
                        Err(source) => {
                            // A failed answer's spending is journaled (status `error`) and
                            // carried into a resumed synthesis's caps.
                            self.record_spent(role, design, iteration, attempt, &request, usage)?;
                            return Err(SynthError::Role { role, source });
                        }
                    }
                }
            };
            let parsed = parse::<T>(&reply, &brief_limits).and_then(|value| extra(&value).map(|()| value));
            let (status, detail) = match &parsed {
                Ok(value) => ("accepted", serde_json::to_value(value).unwrap_or_default()),
                Err(err) => ("malformed", serde_json::Value::String(err.to_string())),
            };
            let entry = Entry {
                seq: 0,
                stage: role,
                design,
                iteration,
                attempt,
                status,
                inputs: Some(request.inputs.clone()),
                retry_reason: request.retry_reason.clone(),
                reply: Some(reply),
                detail,
                usage,
            };
            self.push(entry)?;
            self.check_token_cap()?;
            match parsed {
                Ok(value) => return Ok(value),
                Err(err) => {
                    request.retry_reason = Some(err.to_string());
                    last = Some(err);
                }
            }
        }
        let source = last.unwrap_or(HandoffError::Schema { role, field: ".".into(), problem: "no attempt was made".into() });
        Err(SynthError::Malformed { role, attempts, retries: self.limits().max_retries, source })
    }

    /// The next recorded answer when resuming, checked to be for this very request.
    fn replayed(
        &mut self,
        role: &str,
        design: usize,
        iteration: usize,
        attempt: usize,
    ) -> Result<Option<(String, Option<crate::role::Usage>)>, SynthError> {
        let Some(next) = self.recorded.pop_front() else { return Ok(None) };
        let key = |stage: &str, d: usize, i: usize, a: usize| format!("{stage} design {d}, iteration {i}, attempt {a}");
        if (next.stage.as_str(), next.design, next.iteration, next.attempt) != (role, design, iteration, attempt) {
            return Err(SynthError::Diverged {
                seq: next.seq,
                recorded: key(&next.stage, next.design, next.iteration, next.attempt),
                asked: key(role, design, iteration, attempt),
            });
        }
        Ok(Some((next.reply, next.usage)))
    }

    fn record_acceptance(&mut self, design: usize, iteration: usize, report: &AcceptanceReport) -> Result<(), SynthError> {
        self.push_check("acceptance", design, iteration, report.passed, serde_json::to_value(&report).unwrap_or_default())
    }

    /// Journals a check specgap ran itself (acceptance, sufficiency): no role inputs or reply.
    fn push_check(
        &mut self,
        stage: &'static str,
        design: usize,
        iteration: usize,
        passed: bool,
        detail: serde_json::Value,
    ) -> Result<(), SynthError> {
        let status = if passed { "passed" } else { "failed" };
        let entry = Entry {
            seq: 0,
            stage,
            design,
            iteration,
            attempt: 1,
            status,
            inputs: None,
            retry_reason: None,
            reply: None,
            detail,
            usage: None,
        };
        self.push(entry)
    }

    /// Journals what a role spent on an answer it could not give (status `error`, no reply), so
    /// a failing model request still counts.
    fn record_spent(
        &mut self,
        stage: &'static str,
        design: usize,
        iteration: usize,
        attempt: usize,
        request: &RoleRequest,
        usage: Option<crate::role::Usage>,
    ) -> Result<(), SynthError> {
        if usage.is_none() {
            return Ok(());
        }
        let entry = Entry {
            seq: 0,
            stage,
            design,
            iteration,
            attempt,
            status: "error",
            inputs: Some(request.inputs.clone()),
            retry_reason: request.retry_reason.clone(),
            reply: None,
            detail: serde_json::Value::Null,
            usage,
        };
        self.push(entry)
    }

    /// Stops the synthesis once every role together spent more tokens than `--max-tokens`.
    fn check_token_cap(&self) -> Result<(), SynthError> {
        if let Some(cap) = self.limits().max_tokens
            && self.journal.tokens() > cap
        {
            return Err(SynthError::TokenCap { cap, spent: self.journal.tokens() });
        }
        match self.limits().max_cost_usd {
            Some(cap) if self.journal.cost_usd() > cap => Err(SynthError::CostCap { cap, spent: self.journal.cost_usd() }),
            _ => Ok(()),
        }
    }

    fn push(&mut self, entry: Entry) -> Result<(), SynthError> {
        let path = self.journal.path().to_owned();
        self.journal.push(entry).map_err(|source| SynthError::Write { path, source })
    }
}

/// Every finding of `verdict` names a rollout of `ran` (`(id, condition)`) under that
/// rollout's condition.
fn check_cited_rollouts(verdict: &CalibratorVerdict, ran: &[(String, String)]) -> Result<(), HandoffError> {
    for (index, finding) in verdict.rollouts.iter().enumerate() {
        let field = format!("rollouts[{index}].rollout");
        let problem = match ran.iter().find(|(id, _)| *id == finding.rollout) {
            None => {
                let ids: Vec<&str> = ran.iter().map(|(id, _)| id.as_str()).collect();
                format!("`{}` is not a rollout that ran; the rollouts are: {}", finding.rollout, ids.join(", "))
            }
            Some((_, condition)) if condition != finding.condition.as_str() => {
                format!("`{}` ran under {condition}, not {}", finding.rollout, finding.condition.as_str())
            }
            Some(_) => continue,
        };
        return Err(HandoffError::Rule { role: "calibrator", field, problem });
    }
    Ok(())
}

/// The sufficiency test's result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Sufficiency {
    /// Requirement ids the implementation fails, in priority order.
    pub failing: Vec<String>,
    /// The fix handed to the Builder when the test failed (failing requirements or an
    /// evaluation error); `None` when every requirement passed.
    pub failure: Option<String>,
}

/// Runs the implementer's directory through the package's evaluator.
fn evaluate_sufficiency(package: &specgap_task::TaskPackage, dir: &Path, judge: &dyn Judge) -> Sufficiency {
    let outcome = judge.evaluate(package, Submission::Directory(dir)).and_then(|judged| Outcome::new(package, judged));
    match outcome {
        Ok(outcome) => {
            let failing: Vec<String> = outcome.failing_requirements(package).into_iter().map(str::to_owned).collect();
            let failure = (!failing.is_empty()).then(|| {
                format!(
                    "sufficiency: an implementation written from instruction.full.md and the workspace alone fails {}; the full instruction must state enough to pass every requirement",
                    failing.join(", ")
                )
            });
            Sufficiency { failing, failure }
        }
        Err(err) => Sufficiency {
            failing: Vec::new(),
            failure: Some(format!(
                "sufficiency: the implementation could not be evaluated: {}",
                specgap_task::check::describe_error_chain(&err)
            )),
        },
    }
}

/// An Auditor's evidence names only the brief's requirements, and a `pass` quotes evidence for
/// every withheld one (App. E.3: discovery is confirmed per requirement before the pass).
fn evidence_matches_brief(verdict: &AuditorVerdict, brief: &PlannerBrief) -> Result<(), HandoffError> {
    let rule = |field: String, problem: String| HandoffError::Rule { role: "auditor", field, problem };
    for (index, item) in verdict.evidence.iter().enumerate() {
        if !brief.requirements.iter().any(|r| r.id == item.requirement) {
            return Err(rule(
                format!("evidence[{index}].requirement"),
                format!("`{}` is not a requirement of the brief", item.requirement),
            ));
        }
    }
    if verdict.verdict == AuditDecision::Pass {
        if let Some(bare) = brief.withheld.iter().find(|id| !verdict.evidence.iter().any(|e| &e.requirement == *id)) {
            return Err(rule("evidence".into(), format!("verdict `pass` quotes no evidence for withheld requirement `{bare}`")));
        }
    }
    Ok(())
}

/// Writes a hand-off's `files` (paths checked by its schema) into the role's working
/// directory; a file that cannot be written refuses the hand-off naming it.
fn write_handoff_files(
    role: &'static str,
    work_dir: &Path,
    files: &std::collections::BTreeMap<String, String>,
) -> Result<(), HandoffError> {
    crate::handoff::write_files(work_dir, files).map_err(|err| HandoffError::Rule {
        role,
        field: "files".into(),
        problem: format!("cannot write into {}: {err}", work_dir.display()),
    })
}

/// The package directory a Builder hand-off names (`.` components dropped, so `.` is the
/// working directory itself).
fn package_root(work_dir: &Path, handoff: &BuilderHandoff) -> PathBuf {
    let relative: PathBuf = handoff.package.components().filter(|c| !matches!(c, std::path::Component::CurDir)).collect();
    work_dir.join(relative)
}

/// The package a Builder round produced.
struct BuiltPackage {
    root: PathBuf,
    summary: String,
}
