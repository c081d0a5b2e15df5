//! The resumable pipeline: one call advances a pipeline directory as far as its inputs allow
//! and stores each stage's result, so calling it again goes on where it stopped.
//!
//! ```text
//! DIR/residualize/manifest.toml     what the pipeline was made with: sources, ignore rules, build target
//! DIR/residualize/candidates.json   Stage II: every predecessor run with its verdict
//! DIR/residualize/review/           Stage III bundles, index pages and the blank sheet.csv
//! DIR/residualize/reviews.json      Stage III: both reviewers' labels, outcomes, agreement
//! DIR/residualize/states/<id>/      Stage IV: each state's staged state.patch and meta.toml
//! DIR/residualize/build.json        Stage IV: target packages and every validated state
//! DIR/residualize/funnel.md, .json  the funnel, rewritten by every call
//! DIR/residualize/runner.lock       held while a call works on DIR
//! ```
//!
//! Rules of resumption:
//! * Sources, ignore rules and the build target are fixed by the first call that gives them;
//!   a later call may leave them out (the stored ones are used) but not change them
//!   ([`ResidualizeError::ConfigMismatch`]; the target may change until the build starts).
//! * Stage II is recomputed on every call (it reads only stored runs). Until reviews are
//!   imported a change — a generation that went on — replaces the candidates and rewrites the
//!   bundles; after, it is an error ([`ResidualizeError::CandidatesChanged`]).
//! * Review sheets may be imported again with other contents until the first state is built.
//! * The build validates only states not yet in `build.json`; each is recorded as soon as it
//!   is decided; installing into the target packages is idempotent.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::build::{self, BuildRecord, Target, ValidatedState, Validator};
use crate::diff::sha256_hex;
use crate::error::ResidualizeError;
use crate::filter::{ScreenedRun, screen};
use crate::fsio::{read_json, write_atomic, write_json};
use crate::funnel::Funnel;
use crate::ignore::{DEFAULT_IGNORES, IgnoreRules};
use crate::review::{self, Reviews};
use crate::source::read_run;
use crate::summary::TrajectorySummarizer;

/// The directory inside the pipeline directory that holds its stages.
pub const WORK_DIR: &str = "residualize";
/// Format of `manifest.toml`.
pub const MANIFEST_FORMAT: u32 = 1;

/// `residualize/manifest.toml`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// [`MANIFEST_FORMAT`].
    pub format: u32,
    /// specgap version of the call that wrote it last.
    pub specgap_version: String,
    /// The predecessor runs (canonical directories), in order.
    pub sources: Vec<String>,
    /// The ignore rules of Stage II, in order.
    pub ignore: Vec<String>,
    /// Where Stage IV puts the states, once given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<Target>,
}

/// The build target as a call names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TargetRequest {
    /// `--write-to DIR`.
    WriteTo(PathBuf),
    /// `--in-place`.
    InPlace,
}

/// What one call asks for. Empty / `None` fields defer to what is stored.
#[derive(Debug, Clone, Default)]
pub struct Request {
    /// The pipeline directory (`DIR`); it may itself be a source run.
    pub dir: PathBuf,
    /// `--from RUN...`; empty: the stored sources, or `DIR` itself when it is a run.
    pub sources: Vec<PathBuf>,
    /// The ignore rules (`--ignore`, `--no-default-ignores`); `None`: stored or the defaults.
    pub ignore: Option<Vec<String>>,
    /// `--review NAME=SHEET` pairs; empty: the stored reviews.
    pub reviews: Vec<(String, PathBuf)>,
    /// `--write-to` / `--in-place`; `None`: the stored target.
    pub target: Option<TargetRequest>,
    /// Commands and evaluators under bubblewrap (`false`: `--no-sandbox`).
    pub sandbox: bool,
}

/// Where a call stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reached {
    /// Stage II found no candidate: nothing to review or build.
    NoCandidates,
    /// Bundles are written; the reviewers' sheets are needed next.
    AwaitingReviews,
    /// Reviews are in; a build target is needed next.
    AwaitingTarget,
    /// Every reviewed candidate is validated and the included ones installed.
    Built,
}

/// The result of a call.
#[derive(Debug, Clone)]
pub struct Advance {
    /// `DIR/residualize`.
    pub work_dir: PathBuf,
    /// Where it stopped.
    pub reached: Reached,
    /// The funnel of everything stored.
    pub funnel: Funnel,
}

/// Paths of the stage files.
struct Paths {
    work: PathBuf,
}

impl Paths {
    fn manifest(&self) -> PathBuf {
        self.work.join("manifest.toml")
    }
    fn candidates(&self) -> PathBuf {
        self.work.join("candidates.json")
    }
    fn review(&self) -> PathBuf {
        self.work.join("review")
    }
    fn reviews(&self) -> PathBuf {
        self.work.join("reviews.json")
    }
    fn states(&self) -> PathBuf {
        self.work.join("states")
    }
    fn build(&self) -> PathBuf {
        self.work.join("build.json")
    }
}

/// Advances the pipeline in `request.dir` as far as it can; `note` hears what each step did.
///
/// # Errors
/// [`ResidualizeError`]; everything decided before the error stays stored.
pub fn advance(request: &Request, summarizer: Option<&dyn TrajectorySummarizer>, note: &dyn Fn(&str)) -> Result<Advance, ResidualizeError> {
    let paths = Paths { work: request.dir.join(WORK_DIR) };
    let stored_manifest = read_manifest(&paths.manifest())?;
    let sources = resolve_sources(request, stored_manifest.as_ref())?;
    fs_err::create_dir_all(&paths.work)?;
    let _lock = specgap_store::lock_runner(&paths.work).map_err(|e| match e {
        specgap_store::StoreError::RunnerBusy { pid, .. } => ResidualizeError::Busy { dir: request.dir.clone(), pid },
        other => ResidualizeError::Store { dir: paths.work.clone(), source: Box::new(other) },
    })?;
    let rules = resolve_ignore(request, stored_manifest.as_ref())?;
    let build_started = paths.build().exists();
    let target = resolve_target(request, stored_manifest.as_ref(), build_started)?;
    let manifest = Manifest {
        format: MANIFEST_FORMAT,
        specgap_version: env!("CARGO_PKG_VERSION").to_string(),
        sources: sources.iter().map(|s| s.display().to_string()).collect(),
        ignore: rules.rules().to_vec(),
        target: target.clone(),
    };
    write_manifest(&paths.manifest(), &manifest)?;

    // Stage II.
    let mut runs = Vec::new();
    for source in &sources {
        runs.extend(read_run(source)?);
    }
    let screened = screen(&runs, &rules)?;
    let mut reviews: Option<Reviews> = read_json(&paths.reviews())?;
    let previous: Option<Vec<ScreenedRun>> = read_json(&paths.candidates())?;
    let candidates: Vec<&ScreenedRun> = screened.iter().filter(|s| s.is_candidate()).collect();
    let previous_candidates: Vec<&ScreenedRun> = previous.iter().flatten().filter(|s| s.is_candidate()).collect();
    if previous.as_ref() != Some(&screened) {
        if reviews.is_some() {
            return Err(ResidualizeError::CandidatesChanged {
                detail: describe_change(previous.as_deref().unwrap_or_default(), &screened),
            });
        }
        write_json(&paths.candidates(), &screened)?;
        let kept = review::write_bundles(&paths.review(), &candidates, &previous_candidates, summarizer)?;
        note(&format!(
            "filtered {} predecessor run(s): {} candidate(s); review bundles in {}",
            screened.len(),
            candidates.len(),
            paths.review().display()
        ));
        if let Some(kept) = kept {
            note(&format!(
                "the candidates changed: the sheet filled in place was moved to {}; its rows may no longer match",
                kept.display()
            ));
        }
    } else if !paths.review().join("index.md").exists() {
        review::write_bundles(&paths.review(), &candidates, &previous_candidates, summarizer)?;
    }
    let finish = |reached: Reached, reviews: Option<&Reviews>, build: Option<&BuildRecord>| -> Result<Advance, ResidualizeError> {
        let funnel = Funnel::of(&screened, reviews, build);
        write_atomic(&paths.work.join("funnel.md"), funnel.markdown().as_bytes())?;
        write_json(&paths.work.join("funnel.json"), &funnel)?;
        Ok(Advance { work_dir: paths.work.clone(), reached, funnel })
    };
    if candidates.is_empty() {
        return finish(Reached::NoCandidates, reviews.as_ref(), None);
    }

    // Stage III.
    if !request.reviews.is_empty() {
        let imported = review::import(&request.reviews, &candidates)?;
        if reviews.as_ref() != Some(&imported) {
            let built: Option<BuildRecord> = read_json(&paths.build())?;
            if built.is_some_and(|b| !b.states.is_empty()) {
                return Err(ResidualizeError::ReviewsFrozen { dir: request.dir.clone() });
            }
            write_json(&paths.reviews(), &imported)?;
            let passed = imported.candidates.iter().filter(|c| c.excluded.is_none()).count();
            note(&format!(
                "imported the reviews of {} and {}: {passed} of {} candidate(s) passed",
                imported.sheets[0].reviewer,
                imported.sheets[1].reviewer,
                imported.candidates.len()
            ));
            reviews = Some(imported);
        }
    }
    let Some(reviews) = reviews else {
        return finish(Reached::AwaitingReviews, None, None);
    };

    // Stage IV.
    let Some(target) = target else {
        return finish(Reached::AwaitingTarget, Some(&reviews), None);
    };
    let mut record: BuildRecord =
        read_json(&paths.build())?.unwrap_or(BuildRecord { target: target.clone(), packages: Vec::new(), states: Vec::new() });
    let reviewers = [reviews.sheets[0].reviewer.clone(), reviews.sheets[1].reviewer.clone()];
    let mut validator: Option<Validator> = None;
    for candidate in candidates.iter().filter(|c| reviews.outcome(&c.episode) == Some(None)) {
        if record.state(&candidate.episode).is_some() {
            continue;
        }
        let package = build::prepare_package(&target, candidate, &mut record.packages)?;
        write_json(&paths.build(), &record)?;
        let diff = candidate.final_diff()?;
        let meta = build::meta_for(candidate, &reviewers);
        let machine = candidate.final_machine_path();
        let (state, meta_bytes) =
            build::stage(&package, &candidate.episode, &paths.states().join(&candidate.episode), &diff, machine.as_deref(), meta)?;
        let validator = match &mut validator {
            Some(v) => v,
            None => validator.insert(Validator::new(request.sandbox)?),
        };
        let validation = validator.validate(&package, &state, &diff)?;
        note(&format!(
            "state {} of {}: {}{detail}",
            candidate.episode,
            candidate.task,
            validation.excluded.map_or_else(|| "included; ".to_string(), |e| format!("excluded ({}): ", e.code())),
            detail = validation.detail
        ));
        record.states.push(ValidatedState {
            id: candidate.episode.clone(),
            task: candidate.task.clone(),
            excluded: validation.excluded,
            detail: validation.detail,
            failing_now: validation.failing_now,
            patch_sha256: sha256_hex(&diff),
            meta_sha256: sha256_hex(&meta_bytes),
        });
        write_json(&paths.build(), &record)?;
    }
    build::install(&mut record, &paths.states())?;
    write_json(&paths.build(), &record)?;
    finish(Reached::Built, Some(&reviews), Some(&record))
}

/// The funnel of what `dir` holds, without advancing anything (`None` when it has no
/// pipeline).
///
/// # Errors
/// [`ResidualizeError::BadStageFile`] and I/O errors.
pub fn funnel(dir: &Path) -> Result<Option<Funnel>, ResidualizeError> {
    let paths = Paths { work: dir.join(WORK_DIR) };
    let Some(screened): Option<Vec<ScreenedRun>> = read_json(&paths.candidates())? else { return Ok(None) };
    let reviews: Option<Reviews> = read_json(&paths.reviews())?;
    let build: Option<BuildRecord> = read_json(&paths.build())?;
    Ok(Some(Funnel::of(&screened, reviews.as_ref(), build.as_ref())))
}

fn read_manifest(path: &Path) -> Result<Option<Manifest>, ResidualizeError> {
    if !path.exists() {
        return Ok(None);
    }
    let text = fs_err::read_to_string(path)?;
    let manifest: Manifest =
        toml::from_str(&text).map_err(|e| ResidualizeError::BadStageFile { path: path.to_path_buf(), message: e.to_string() })?;
    if manifest.format != MANIFEST_FORMAT {
        return Err(ResidualizeError::BadStageFile {
            path: path.to_path_buf(),
            message: format!("format {} is not this build's format {MANIFEST_FORMAT}", manifest.format),
        });
    }
    Ok(Some(manifest))
}

fn write_manifest(path: &Path, manifest: &Manifest) -> Result<(), ResidualizeError> {
    let text = toml::to_string(manifest).map_err(|e| ResidualizeError::Serialize { path: path.to_path_buf(), message: e.to_string() })?;
    write_atomic(path, text.as_bytes())
}

fn resolve_sources(request: &Request, stored: Option<&Manifest>) -> Result<Vec<PathBuf>, ResidualizeError> {
    let given: Vec<PathBuf> = request.sources.iter().map(fs_err::canonicalize).collect::<Result<_, _>>()?;
    match (given.is_empty(), stored) {
        (false, Some(m)) => {
            let given_text: Vec<String> = given.iter().map(|p| p.display().to_string()).collect();
            if given_text != m.sources {
                return Err(ResidualizeError::ConfigMismatch {
                    dir: request.dir.clone(),
                    what: "the source runs",
                    stored: m.sources.join(", "),
                    given: given_text.join(", "),
                });
            }
            Ok(given)
        }
        (false, None) => Ok(given),
        (true, Some(m)) => Ok(m.sources.iter().map(PathBuf::from).collect()),
        (true, None) => {
            if request.dir.join(specgap_store::RUN_TOML).is_file() {
                Ok(vec![fs_err::canonicalize(&request.dir)?])
            } else {
                Err(ResidualizeError::NoSources { dir: request.dir.clone() })
            }
        }
    }
}

fn resolve_ignore(request: &Request, stored: Option<&Manifest>) -> Result<IgnoreRules, ResidualizeError> {
    let rules: Vec<String> = match (&request.ignore, stored) {
        (Some(given), Some(m)) if *given != m.ignore => {
            return Err(ResidualizeError::ConfigMismatch {
                dir: request.dir.clone(),
                what: "the ignore rules",
                stored: m.ignore.join(" "),
                given: given.join(" "),
            });
        }
        (Some(given), _) => given.clone(),
        (None, Some(m)) => m.ignore.clone(),
        (None, None) => DEFAULT_IGNORES.iter().map(|r| (*r).to_string()).collect(),
    };
    IgnoreRules::new(&rules).map_err(|e| ResidualizeError::BadIgnoreRule(Box::new(e)))
}

fn resolve_target(request: &Request, stored: Option<&Manifest>, build_started: bool) -> Result<Option<Target>, ResidualizeError> {
    let given = match &request.target {
        None => None,
        Some(TargetRequest::InPlace) => Some(Target::InPlace),
        Some(TargetRequest::WriteTo(dir)) => {
            fs_err::create_dir_all(dir)?;
            Some(Target::WriteTo { dir: fs_err::canonicalize(dir)?.display().to_string() })
        }
    };
    let stored = stored.and_then(|m| m.target.clone());
    match (given, stored) {
        (Some(g), Some(s)) if g != s && build_started => Err(ResidualizeError::ConfigMismatch {
            dir: request.dir.clone(),
            what: "the build target",
            stored: s.describe(),
            given: g.describe(),
        }),
        (Some(g), _) => Ok(Some(g)),
        (None, s) => Ok(s),
    }
}

/// What differs between two Stage II results, in words.
fn describe_change(before: &[ScreenedRun], now: &[ScreenedRun]) -> String {
    let count = |runs: &[ScreenedRun]| runs.iter().filter(|r| r.is_candidate()).count();
    format!(
        "{} run(s) and {} candidate(s) when reviewed, {} run(s) and {} candidate(s) now",
        before.len(),
        count(before),
        now.len(),
        count(now)
    )
}
