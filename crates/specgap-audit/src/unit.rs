//! The units an audit samples, read from a run store, with the fields a sample is stratified by.
//!
//! | kind | one unit per | item id | source |
//! | --- | --- | --- | --- |
//! | `episode` | finished episode | the episode id | seed 000 §4.2 |
//! | `failed-episode` | finished episode whose last evaluated submission failed (or that has none) | the episode id | seed 000 §5.5 Fig. 5; seed 001 §5 |
//! | `question` | clarification target of a delivery episode, with every question asked in it | `<episode>#target=<id>` | seed 002 §4.3, A.8 Table 16(b) |
//! | `reply` | answered question (the user's reply) | `<episode>#question=<idx>` | seed 002 §4.3, A.8 Table 16(a) |
//! | `resample` | reply `specgap resample` got for a recorded user request | `<episode>#request=<r>#k=<k>` | seed 000 §5.6, App. G |
//! | `extraction` | extraction panel's verdict on a submission (`extractions` row) | `<episode>#panel=<panel>#k=<k>` | seed 002 §4.3, A.8 |
//! | `task` | task package of the run (`run.toml` `[[tasks]]`) | `task:<name>` | seed 000 §4.2 |
//! | `candidate` | predecessor episode Stage II keeps as a candidate residual state (`specgap_residualize::filter::screen`, default ignore rules) | the episode id | seed 001 §3.2 Stage III |
//!
//! A task unit has no episode; a task in several of the sampled runs is one unit, from the
//! first run that has it.
//!
//! Every unit's *case* — the cluster the bootstrap resamples (seed 002 A.8: "case-cluster
//! bootstrap") — is its task. A task unit's stratum fields are `task` and `family`; every other
//! unit's are `task`, `agent`, `user`, `condition`,
//! `start`, `family`, `outcome` (`success` / `failure` / `unscored`), and for question units
//! `target`, for resamples `purpose` (`answer` / `feedback`), for extractions `panel` and
//! `status` (`scored` / `unavailable`).

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use specgap_store::{EpisodeRow, Status, Store};

use crate::error::AuditError;

/// What an audit item is (module guide).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum UnitKind {
    /// A task package of a run (seed 000's four construction criteria).
    Task,
    /// A finished episode.
    Episode,
    /// A finished episode that failed.
    FailedEpisode,
    /// A clarification target of an episode with the questions asked.
    Question,
    /// One reply of the simulated user to a question.
    Reply,
    /// An extraction panel's verdict on one submission.
    Extraction,
    /// A residual-state candidate (seed 001 §3.2 Stage III).
    Candidate,
    /// One resample of a recorded user-model request.
    Resample,
}

impl UnitKind {
    /// The kebab-case name (`--unit`).
    pub fn name(self) -> &'static str {
        match self {
            UnitKind::Task => "task",
            UnitKind::Episode => "episode",
            UnitKind::FailedEpisode => "failed-episode",
            UnitKind::Question => "question",
            UnitKind::Reply => "reply",
            UnitKind::Extraction => "extraction",
            UnitKind::Candidate => "candidate",
            UnitKind::Resample => "resample",
        }
    }

    /// The kind of a `--unit` value.
    ///
    /// # Errors
    /// [`AuditError::Request`] naming the kinds.
    pub fn parse(text: &str) -> Result<UnitKind, AuditError> {
        let all = [
            UnitKind::Task,
            UnitKind::Episode,
            UnitKind::FailedEpisode,
            UnitKind::Question,
            UnitKind::Reply,
            UnitKind::Extraction,
            UnitKind::Candidate,
            UnitKind::Resample,
        ];
        all.into_iter().find(|k| k.name() == text).ok_or_else(|| {
            AuditError::Request(format!(
                "unknown unit `{text}`; the units are {}",
                all.iter().map(|k| k.name()).collect::<Vec<_>>().join(", ")
            ))
        })
    }
}

/// What the page of a unit is about, beyond its episode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Subject {
    /// A task package as a whole (no episode).
    Task,
    /// A candidate residual state: what Stage II found in its final submission.
    Candidate {
        /// The final submission's number.
        final_submission: Option<u32>,
        /// Its failing tests (or requirements), sorted.
        failing: Vec<String>,
        /// The files its diff changes.
        changed_files: Vec<String>,
        /// Of those, the ones that are not incidental artifacts.
        substantive_files: Vec<String>,
    },
    /// The episode as a whole.
    Episode,
    /// One clarification target (its id).
    Target(String),
    /// One answered question (`questions.idx`).
    Reply(u32),
    /// One resample: the request's number, the resample's number, the resample batch.
    Resample {
        /// `user_request.request`.
        request: u32,
        /// 1-based resample number.
        k: u32,
        /// The `resamples.batch`.
        batch: String,
    },
    /// One extraction verdict: the panel's name and the submission extracted.
    Extraction {
        /// `extractions.panel`.
        panel: String,
        /// `extractions.k` (1-based).
        k: u32,
    },
}

/// One unit of the population.
#[derive(Debug, Clone, PartialEq)]
pub struct Unit {
    /// The item id (module guide).
    pub id: String,
    /// 0-based index of its run among the sample's runs.
    pub run: u32,
    /// Its episode; `None` for a task unit.
    pub episode: Option<String>,
    /// Its stratum fields (module guide).
    pub fields: BTreeMap<String, String>,
    /// Its case (the task).
    pub cluster: String,
    /// Automatic judges' labels: judge → label column → value.
    pub judges: Map<String, Value>,
    /// What its page shows.
    pub subject: Subject,
}

/// Field names a sample may be stratified by, for `kind`.
pub fn fields_of(kind: UnitKind) -> Vec<&'static str> {
    if kind == UnitKind::Task {
        return vec!["task", "family"];
    }
    let mut fields = vec!["task", "agent", "user", "condition", "start", "family", "outcome"];
    match kind {
        UnitKind::Question => fields.push("target"),
        UnitKind::Reply => fields.push("finding"),
        UnitKind::Resample => fields.push("purpose"),
        UnitKind::Extraction => fields.extend(["panel", "status"]),
        _ => {}
    }
    fields
}

fn outcome(row: &EpisodeRow) -> &'static str {
    match row.final_success {
        Some(true) => "success",
        Some(false) => "failure",
        None => "unscored",
    }
}

fn episode_fields(row: &EpisodeRow) -> BTreeMap<String, String> {
    [
        ("task", row.task.clone()),
        ("agent", row.agent.clone()),
        ("user", row.user.clone()),
        ("condition", row.condition.clone()),
        ("start", row.start.clone()),
        ("family", row.family.as_str().to_string()),
        ("outcome", outcome(row).to_string()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

/// The coverage label a stored verdict stands for (`seed002-coverage`'s values), if any.
fn coverage_label(verdict: &str) -> Option<&'static str> {
    match verdict {
        "covered" => Some("covered"),
        "missed" => Some("uncovered"),
        _ => None,
    }
}

/// Every unit of `kind` in the store of run `run` (index `run_index`), by id. For
/// `resample`, only the resamples of `batch` when given.
///
/// # Errors
/// Store errors; [`AuditError::Residualize`] when candidates cannot be screened (a runner still
/// holds the run, say).
pub fn population(store: &Store, run_index: u32, kind: UnitKind, batch: Option<&str>) -> Result<Vec<Unit>, AuditError> {
    let dir = store.dir().to_path_buf();
    let err = AuditError::store(&dir);
    let episodes: BTreeMap<String, EpisodeRow> =
        store.episodes().map_err(&err)?.into_iter().filter(|e| e.status == Status::Finished).map(|e| (e.id.clone(), e)).collect();
    let unit = |id: String, row: &EpisodeRow, subject: Subject| Unit {
        id,
        run: run_index,
        episode: Some(row.id.clone()),
        fields: episode_fields(row),
        cluster: row.task.clone(),
        judges: Map::new(),
        subject,
    };
    let mut units = Vec::new();
    match kind {
        UnitKind::Episode | UnitKind::FailedEpisode => {
            for row in episodes.values() {
                if kind == UnitKind::FailedEpisode && row.final_success == Some(true) {
                    continue;
                }
                units.push(unit(row.id.clone(), row, Subject::Episode));
            }
        }
        UnitKind::Question => {
            let packages = crate::page::packages(store);
            let judgements = store.judgements().map_err(&err)?;
            for row in episodes.values() {
                let Some(Ok(package)) = packages.get(&row.task) else { continue };
                for target in package.clarifications() {
                    let mut u = unit(format!("{}#target={}", row.id, target.id), row, Subject::Target(target.id.clone()));
                    u.fields.insert("target".into(), target.id.clone());
                    for j in judgements.iter().filter(|j| j.episode == row.id && j.judgement.target == target.id) {
                        if let Some(label) = coverage_label(&j.judgement.verdict) {
                            u.judges.insert(j.judgement.judge.clone(), json!({ "coverage": label }));
                        }
                    }
                    units.push(u);
                }
            }
        }
        UnitKind::Reply => {
            let findings = review_findings(&dir);
            for q in store.questions().map_err(&err)? {
                let Some(row) = episodes.get(&q.episode) else { continue };
                let mut u = unit(format!("{}#question={}", row.id, q.idx), row, Subject::Reply(q.idx));
                // Answer turns come first among a review's user turns, in asking order: the
                // reply to question idx is turn idx + 1.
                let finding = match &findings {
                    None => "unreviewed".to_string(),
                    Some(by_turn) => by_turn.get(&(row.id.clone(), q.idx + 1)).cloned().unwrap_or_else(|| "none".into()),
                };
                u.fields.insert("finding".into(), finding);
                units.push(u);
            }
        }
        UnitKind::Resample => {
            for r in store.resamples().map_err(&err)? {
                if batch.is_some_and(|b| b != r.batch) {
                    continue;
                }
                let Some(row) = episodes.get(&r.episode) else { continue };
                let mut u = unit(
                    format!("{}#request={}#k={}", row.id, r.request, r.k),
                    row,
                    Subject::Resample { request: r.request, k: r.k, batch: r.batch.clone() },
                );
                u.fields.insert("purpose".into(), r.purpose.clone());
                units.push(u);
            }
        }
        UnitKind::Extraction => {
            for x in store.extractions().map_err(&err)? {
                let Some(row) = episodes.get(&x.episode) else { continue };
                let verdict = &x.extraction;
                let mut u = unit(
                    format!("{}#panel={}#k={}", row.id, verdict.panel, verdict.k),
                    row,
                    Subject::Extraction { panel: verdict.panel.clone(), k: verdict.k },
                );
                u.fields.insert("panel".into(), verdict.panel.clone());
                u.fields.insert("status".into(), verdict.status.as_str().to_string());
                units.push(u);
            }
        }
        UnitKind::Task => units = task_units(store, run_index),
        UnitKind::Candidate => {
            for c in candidates(store)? {
                let Some(row) = episodes.get(&c.episode) else { continue };
                let subject = Subject::Candidate {
                    final_submission: c.final_submission,
                    failing: c.failing_tests.clone(),
                    changed_files: c.changed_files.clone(),
                    substantive_files: c.substantive_files.clone(),
                };
                units.push(unit(row.id.clone(), row, subject));
            }
        }
    }
    units.sort_by(|a, b| a.id.cmp(&b.id));
    Ok(units)
}

/// The findings of the run's user reviews (`specgap review-user`, `reviews/user-*.json`,
/// docs/report-schema.md "User review file"), by (episode, user turn): the tags of every
/// review's findings on that turn, sorted and joined by `+`. `None` when the run has no
/// review (reply units are then `unreviewed`); an unreadable review file is skipped.
fn review_findings(run_dir: &std::path::Path) -> Option<BTreeMap<(String, u32), String>> {
    let tags = review_tags(run_dir)?;
    Some(tags.into_iter().map(|(k, v)| (k, v.into_iter().collect::<Vec<_>>().join("+"))).collect())
}

/// The tags of the run's user reviews by (episode id, user turn numbered from 1, as
/// `specgap review-user` numbers them: the episode's questions in asking order, then its
/// feedback messages). Turns without a finding are absent. `None` when the run has no
/// readable review file.
pub(crate) fn review_tags(run_dir: &std::path::Path) -> Option<BTreeMap<(String, u32), BTreeSet<String>>> {
    let entries = std::fs::read_dir(run_dir.join("reviews")).ok()?;
    let mut tags: BTreeMap<(String, u32), BTreeSet<String>> = BTreeMap::new();
    let mut any = false;
    for entry in entries.filter_map(Result::ok) {
        let name = entry.file_name().to_string_lossy().to_string();
        if !(name.starts_with("user-") && name.ends_with(".json")) {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(entry.path()) else { continue };
        let Ok(review) = serde_json::from_str::<serde_json::Value>(&text) else { continue };
        any = true;
        for episode in review["episodes"].as_array().into_iter().flatten() {
            let id = episode["episode"].as_str().unwrap_or_default().to_string();
            for f in episode["findings"].as_array().into_iter().flatten() {
                let (Some(turn), Some(tag)) = (f["turn"].as_u64(), f["tag"].as_str()) else { continue };
                tags.entry((id.clone(), turn as u32)).or_default().insert(tag.to_string());
            }
        }
    }
    any.then_some(tags)
}

/// One unit per task of the run's `run.toml`, with its family from the package (`unknown`
/// when the package cannot be read; its page says why).
fn task_units(store: &Store, run_index: u32) -> Vec<Unit> {
    let packages = crate::page::packages(store);
    store
        .config()
        .tasks
        .iter()
        .map(|t| {
            let family = match packages.get(&t.name) {
                Some(Ok(p)) => p.manifest().task.family.as_str().to_string(),
                _ => "unknown".to_string(),
            };
            Unit {
                id: format!("task:{}", t.name),
                run: run_index,
                episode: None,
                fields: [("task".to_string(), t.name.clone()), ("family".to_string(), family)].into_iter().collect(),
                cluster: t.name.clone(),
                judges: Map::new(),
                subject: Subject::Task,
            }
        })
        .collect()
}

/// The predecessor episodes of the run that Stage II keeps as candidate residual states, under
/// the default ignore rules (docs/decisions.md "Audits: candidate units").
fn candidates(store: &Store) -> Result<Vec<specgap_residualize::filter::ScreenedRun>, AuditError> {
    let dir = store.dir().to_path_buf();
    let fail = |source: specgap_residualize::ResidualizeError| AuditError::Residualize { dir: dir.clone(), source: Box::new(source) };
    let runs = specgap_residualize::source::read_run(store.dir()).map_err(fail)?;
    let rules = specgap_residualize::ignore::IgnoreRules::with_defaults(true, &[] as &[&str])
        .map_err(|e| fail(specgap_residualize::ResidualizeError::BadIgnoreRule(Box::new(e))))?;
    let screened = specgap_residualize::filter::screen(&runs, &rules).map_err(fail)?;
    Ok(screened.into_iter().filter(|c| c.is_candidate()).collect())
}
