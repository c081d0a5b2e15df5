//! The simulated user's quality (issue 28): the findings of `specgap review-user` on a run's
//! owner / customer turns, as the report shows them, and the exclusion of episodes with a
//! severe finding.
//!
//! A review is a JSON file in the run directory, `reviews/user-<reviewer>.json`
//! ([`REVIEW_DIR`], schema [`REVIEW_SCHEMA`]): per episode its user turns and each finding —
//! the turn cited, a [`Tag`] from the error taxonomy and a [`Severity`]. The taxonomy is
//! tau2-bench's review of its user simulator, as issue 28 asks for it: did the user answer
//! from its private profile only, volunteer targets that were not asked about, contradict
//! itself or an earlier answer, reveal a requirement or a score, break character, refuse
//! wrongly, or stop early. A finding that changed what the agent learned — it *helped* or
//! *hindered* the agent — is **severe**; `minor` is not.
//!
//! The report's simulator-quality section gives findings per 100 user turns by tag (one row
//! per review). With `exclude_severe` ([`crate::ReportOptions::exclude_user_findings`]) the
//! episodes with a severe finding of the named review are left out of every measure and the
//! report says which (`simulator.excluded`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::ReportError;

/// The `schema` field of a review file.
pub const REVIEW_SCHEMA: &str = "specgap-user-review";
/// Its version.
pub const REVIEW_VERSION: u32 = 1;
/// Where reviews live, relative to the run directory.
pub const REVIEW_DIR: &str = "reviews";

/// A kind of simulator error (module guide).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Tag {
    /// Said something that is not in its private profile (invented a fact).
    OffProfile,
    /// Gave a target (or a profile fact) the agent did not ask about.
    Volunteered,
    /// Contradicted itself or an earlier answer.
    Contradiction,
    /// Revealed a requirement, a test or a score.
    Revealed,
    /// Left the role of the owner / customer (spoke as a model, about the benchmark).
    BrokeCharacter,
    /// Said it did not know what its profile answers.
    WrongRefusal,
    /// Ended the conversation before the agent was done.
    StoppedEarly,
}

impl Tag {
    /// Every tag, in report order.
    pub const ALL: [Tag; 7] =
        [Tag::OffProfile, Tag::Volunteered, Tag::Contradiction, Tag::Revealed, Tag::BrokeCharacter, Tag::WrongRefusal, Tag::StoppedEarly];

    /// The tag's name in files and prompts.
    pub fn as_str(self) -> &'static str {
        match self {
            Tag::OffProfile => "off-profile",
            Tag::Volunteered => "volunteered",
            Tag::Contradiction => "contradiction",
            Tag::Revealed => "revealed",
            Tag::BrokeCharacter => "broke-character",
            Tag::WrongRefusal => "wrong-refusal",
            Tag::StoppedEarly => "stopped-early",
        }
    }

    /// Parses a name of [`Tag::as_str`].
    pub fn parse(name: &str) -> Option<Tag> {
        Tag::ALL.into_iter().find(|t| t.as_str() == name.trim())
    }
}

/// How a finding bears on the episode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Severity {
    /// The agent learned more than the protocol allows (severe).
    Helped,
    /// The agent learned less, or something false (severe).
    Hindered,
    /// Neither.
    Minor,
}

impl Severity {
    /// Whether the finding is severe (helped or hindered).
    pub fn is_severe(self) -> bool {
        self != Severity::Minor
    }

    /// The name in files and prompts.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Helped => "helped",
            Severity::Hindered => "hindered",
            Severity::Minor => "minor",
        }
    }

    /// Parses a name of [`Severity::as_str`].
    pub fn parse(name: &str) -> Option<Severity> {
        [Severity::Helped, Severity::Hindered, Severity::Minor].into_iter().find(|s| s.as_str() == name.trim())
    }
}

/// One finding on one user turn.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    /// The user turn cited: 1-based position among the episode's user turns.
    pub turn: u32,
    /// What went wrong.
    pub tag: Tag,
    /// How it bears on the episode.
    pub severity: Severity,
    /// The evidence: target ids, the text at fault (short).
    pub evidence: String,
}

/// One user turn as reviewed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UserTurn {
    /// 1-based position among the episode's user turns.
    pub turn: u32,
    /// `answer` (to an `ask_user` question) or `feedback`.
    pub kind: String,
    /// What the agent said that the turn answers (the question; empty for feedback).
    pub prompt: String,
    /// What the user said.
    pub text: String,
}

/// The review of one episode.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EpisodeReview {
    /// Episode id.
    pub episode: String,
    /// Task name.
    pub task: String,
    /// The user turns reviewed.
    pub turns: Vec<UserTurn>,
    /// The findings, by turn.
    pub findings: Vec<Finding>,
}

/// A whole review file (module guide).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UserReview {
    /// Always [`REVIEW_SCHEMA`].
    pub schema: String,
    /// [`REVIEW_VERSION`].
    pub version: u32,
    /// `rules:<version>` (the offline reviewer of relay users) or `panel:<hash>`.
    pub reviewer: String,
    /// Tags the reviewer cannot check (the rules cannot see character or an early stop).
    pub unchecked: Vec<Tag>,
    /// Per reviewed episode.
    pub episodes: Vec<EpisodeReview>,
    /// Per-seat records of a panel review (requests and replies), empty for the rules.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ballots: Vec<serde_json::Value>,
}

impl UserReview {
    /// User turns reviewed.
    pub fn turns(&self) -> usize {
        self.episodes.iter().map(|e| e.turns.len()).sum()
    }

    /// Episodes with a severe finding.
    pub fn severe_episodes(&self) -> BTreeSet<&str> {
        self.episodes.iter().filter(|e| e.findings.iter().any(|f| f.severity.is_severe())).map(|e| e.episode.as_str()).collect()
    }
}

/// The path of the review by `reviewer` in `run_dir` (`:` replaced by `-`).
pub fn review_path(run_dir: &Path, reviewer: &str) -> PathBuf {
    run_dir.join(REVIEW_DIR).join(format!("user-{}.json", reviewer.replace(':', "-")))
}

/// Every review in `run_dir`, by file name; none without a `reviews` directory.
///
/// # Errors
/// [`ReportError::Review`] naming a file that cannot be read or parsed.
pub fn load_reviews(run_dir: &Path) -> Result<Vec<UserReview>, ReportError> {
    let dir = run_dir.join(REVIEW_DIR);
    let Ok(entries) = std::fs::read_dir(&dir) else { return Ok(Vec::new()) };
    let mut paths: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("user-") && n.ends_with(".json")))
        .collect();
    paths.sort();
    paths
        .iter()
        .map(|path| {
            let bad = |reason: String| ReportError::Review { path: path.clone(), reason };
            let text = fs_err::read_to_string(path).map_err(|e| bad(e.to_string()))?;
            let review: UserReview = serde_json::from_str(&text).map_err(|e| bad(e.to_string()))?;
            if review.schema != REVIEW_SCHEMA || review.version != REVIEW_VERSION {
                return Err(bad(format!("expected schema {REVIEW_SCHEMA} version {REVIEW_VERSION}")));
            }
            Ok(review)
        })
        .collect()
}

/// Writes `review` to its path in `run_dir` (creating `reviews/`) and returns the path.
///
/// # Errors
/// [`ReportError::Review`] naming the path when it cannot be written.
pub fn write_review(run_dir: &Path, review: &UserReview) -> Result<PathBuf, ReportError> {
    let path = review_path(run_dir, &review.reviewer);
    let bad = |reason: String| ReportError::Review { path: path.clone(), reason };
    if let Some(parent) = path.parent() {
        fs_err::create_dir_all(parent).map_err(|e| bad(e.to_string()))?;
    }
    let mut text = serde_json::to_string_pretty(review).map_err(|e| bad(e.to_string()))?;
    text.push('\n');
    fs_err::write(&path, text).map_err(|e| bad(e.to_string()))?;
    Ok(path)
}

/// One review's summary in the report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReviewSummary {
    /// Run directory.
    pub run: String,
    /// The reviewer.
    pub reviewer: String,
    /// Episodes reviewed.
    pub episodes: usize,
    /// User turns reviewed.
    pub turns: usize,
    /// Findings per 100 user turns, by tag (every tag the reviewer checks; absent: unchecked).
    pub per_100_turns: BTreeMap<Tag, f64>,
    /// Findings by severity.
    pub by_severity: BTreeMap<Severity, usize>,
    /// Episodes with a severe finding.
    pub severe_episodes: usize,
    /// Tags the reviewer cannot check.
    pub unchecked: Vec<Tag>,
}

/// The simulator-quality part of a report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SimulatorQuality {
    /// One per review found in the runs.
    pub reviews: Vec<ReviewSummary>,
    /// The review whose severe episodes were excluded, when the report excluded them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub excluded_by: Option<String>,
    /// The excluded episodes (ids).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub excluded: Vec<String>,
}

/// The summary of one review.
pub fn summarize(run: &str, review: &UserReview) -> ReviewSummary {
    let turns = review.turns();
    let mut counts: BTreeMap<Tag, usize> = BTreeMap::new();
    let mut by_severity: BTreeMap<Severity, usize> = BTreeMap::new();
    for f in review.episodes.iter().flat_map(|e| &e.findings) {
        *counts.entry(f.tag).or_default() += 1;
        *by_severity.entry(f.severity).or_default() += 1;
    }
    let per_100_turns = Tag::ALL
        .into_iter()
        .filter(|t| !review.unchecked.contains(t))
        .map(|t| (t, if turns == 0 { 0.0 } else { 100.0 * counts.get(&t).copied().unwrap_or(0) as f64 / turns as f64 }))
        .collect();
    ReviewSummary {
        run: run.to_string(),
        reviewer: review.reviewer.clone(),
        episodes: review.episodes.len(),
        turns,
        per_100_turns,
        by_severity,
        severe_episodes: review.severe_episodes().len(),
        unchecked: review.unchecked.clone(),
    }
}

/// The report's section, or `None` without a review.
pub fn section(quality: &SimulatorQuality) -> Option<crate::render::Section> {
    use crate::render::{ABSENT, Section, Table};
    if quality.reviews.is_empty() {
        return None;
    }
    let mut headers = vec!["run".to_string(), "reviewer".into(), "episodes".into(), "user turns".into()];
    headers.extend(Tag::ALL.iter().map(|t| t.as_str().to_string()));
    headers.extend(["helped", "hindered", "minor", "episodes with a severe finding"].map(String::from));
    let rows = quality
        .reviews
        .iter()
        .map(|r| {
            let mut row = vec![r.run.clone(), r.reviewer.clone(), r.episodes.to_string(), r.turns.to_string()];
            row.extend(Tag::ALL.iter().map(|t| r.per_100_turns.get(t).map_or_else(|| ABSENT.to_string(), |v| format!("{v:.1}"))));
            row.extend(
                [Severity::Helped, Severity::Hindered, Severity::Minor].map(|s| r.by_severity.get(&s).copied().unwrap_or(0).to_string()),
            );
            row.push(r.severe_episodes.to_string());
            row
        })
        .collect();
    let mut text = vec!["Simulated user quality (`specgap review-user`): findings per 100 user turns by tag; `—`: a tag the reviewer cannot check. Helped / hindered findings are severe.".to_string()];
    if let Some(by) = &quality.excluded_by {
        text.push(format!(
            "Excluded from every measure: {} episodes with a severe finding of {by} ({}).",
            quality.excluded.len(),
            quality.excluded.join(", ")
        ));
    }
    let mut numeric = vec![false, false, true, true];
    numeric.extend(std::iter::repeat_n(true, Tag::ALL.len() + 4));
    Some(Section {
        id: "simulator",
        title: "Simulated user quality".into(),
        text,
        tables: vec![Table { caption: "Findings of the user reviews.".into(), headers, numeric, rows }],
        chart: None,
    })
}

/// The reviews of `runs` and, with `exclude` (a reviewer name), the episodes to leave out.
///
/// # Errors
/// As [`load_reviews`]; [`ReportError::Review`] when no run has a review by `exclude`.
pub fn quality(runs: &[crate::RunData], exclude: Option<&str>) -> Result<Option<SimulatorQuality>, ReportError> {
    let mut reviews = Vec::new();
    let mut excluded: BTreeSet<String> = BTreeSet::new();
    let mut found = false;
    for run in runs {
        for review in load_reviews(&run.dir)? {
            if exclude == Some(review.reviewer.as_str()) {
                found = true;
                excluded.extend(review.severe_episodes().into_iter().map(str::to_string));
            }
            reviews.push(summarize(&run.dir.display().to_string(), &review));
        }
    }
    if let (Some(name), false) = (exclude, found) {
        return Err(ReportError::Review {
            path: PathBuf::from(name),
            reason: "no run of the report has a review by this reviewer (run `specgap review-user` first)".into(),
        });
    }
    if reviews.is_empty() {
        return Ok(None);
    }
    Ok(Some(SimulatorQuality { reviews, excluded_by: exclude.map(str::to_string), excluded: excluded.into_iter().collect() }))
}
