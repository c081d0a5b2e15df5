//! Where each delivery score of a group came from, and the extraction panel's failures (seed
//! 002 §4.1, A.3 "Score selection", A.8 Table 17).
//!
//! Seed 002 extracts every run: each score comes from extraction routes. A specgap run of a
//! case with a submission schema may be scored without them (no panel was run, or the panel
//! has not reached that submission), and the report says so for each group
//! ([`ScoringSource`]): runs scored by the extraction panel, runs with no artifact (the panel
//! found no answer of the agent's, or the delivery holds no file the agent made), runs the
//! panel could not score (`unavailable`, listed as unscored), runs **never extracted** (scored
//! from the direct artifact, a deviation from the paper), and runs of cases without a schema
//! (scored from the direct artifact by design).
//!
//! **Table 17** ([`ExtractionFailures`]): over the group's verdicts of the report's panel, the
//! extractor sessions run (*slots*), those that gave no numeric score (*failures*: rejected
//! extractions, sessions that found nothing, evaluator errors on the output, failed services),
//! their rate, and the runs with no artifact.

use serde::Serialize;
use specgap_store::{ExtractionStatus, VoteRow};

use crate::episode::Episode;
use crate::run::RunData;

/// How a group's scored delivery runs got their scores (module guide).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ScoringSource {
    /// Scored delivery runs of the group.
    pub runs: usize,
    /// Of those, scored by the extraction panel's agreed score.
    pub extracted: usize,
    /// Scored 0 because the delivery holds no artifact of the agent's (module guide).
    pub no_artifact: usize,
    /// Left unscored by the panel (no majority; listed with the unscored runs).
    pub unavailable: usize,
    /// Runs of cases with a submission schema that were never extracted: scored from the
    /// direct artifact.
    pub never_extracted: usize,
    /// Runs of cases without a submission schema: scored from the direct artifact by design.
    pub without_schema: usize,
    /// Table 17 over the group's verdicts, when the report uses an extraction panel.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failures: Option<ExtractionFailures>,
}

/// Extraction failures of a group (seed 002 Table 17).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ExtractionFailures {
    /// Extractor sessions run for the group's verdicts.
    pub slots: usize,
    /// Sessions without a numeric score.
    pub failures: usize,
    /// failures / slots, in [0, 1]; absent without a slot.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate: Option<f64>,
    /// Runs with no artifact.
    pub no_artifact: usize,
}

/// Whether a verdict is "no artifact": scored without any extractor (the delivery held no
/// file of the agent's), or scored 0 by the agreement of extractors that found nothing.
pub fn is_no_artifact(e: &Episode<'_>, votes: &[&VoteRow]) -> bool {
    let Some(x) = e.extraction.filter(|x| x.status == ExtractionStatus::Scored) else { return false };
    if x.routes == 0 {
        return true;
    }
    let found_nothing = votes.iter().filter(|v| v.vote.as_ref().and_then(|v| v["finding"].as_str()) == Some("no_deliverable")).count();
    x.agreeing > 0 && found_nothing as u32 >= x.agreeing && x.score == Some(0.0)
}

/// The votes of `panel` on the extraction of `e`'s last submission.
fn verdict_votes<'r>(runs: &'r [RunData], e: &Episode<'_>, panel: &str) -> Vec<&'r VoteRow> {
    let Some(k) = e.extraction.map(|x| x.k) else { return Vec::new() };
    let subject = format!("submission:{k}");
    runs[e.run].rows.votes.iter().filter(|v| v.episode == e.row.id && v.panel == panel && v.subject == subject).collect()
}

/// The [`ScoringSource`] of a group's `members`; `None` without a scored delivery run.
pub fn scoring_source(members: &[&Episode<'_>], runs: &[RunData], panel: Option<&str>) -> Option<ScoringSource> {
    let deliveries: Vec<&&Episode> = members.iter().filter(|e| e.is_scored() && e.is_delivery()).collect();
    if deliveries.is_empty() {
        return None;
    }
    let mut source = ScoringSource { runs: deliveries.len(), ..Default::default() };
    let mut failures = ExtractionFailures::default();
    for e in deliveries {
        let schema = e.context.is_some_and(|c| c.schema);
        let votes = panel.map(|p| verdict_votes(runs, e, p)).unwrap_or_default();
        failures.slots += votes.len();
        failures.failures += votes.iter().filter(|v| v.vote.as_ref().and_then(|v| v["score"].as_f64()).is_none()).count();
        match e.extraction {
            Some(x) if x.status == ExtractionStatus::Unavailable => source.unavailable += 1,
            Some(_) if is_no_artifact(e, &votes) => {
                source.no_artifact += 1;
                failures.no_artifact += 1;
            }
            Some(_) => source.extracted += 1,
            None if schema => source.never_extracted += 1,
            None => source.without_schema += 1,
        }
    }
    if panel.is_some() {
        failures.rate = (failures.slots > 0).then(|| failures.failures as f64 / failures.slots as f64);
        source.failures = Some(failures);
    }
    Some(source)
}

/// The warning for scored runs of schema cases that were never extracted, whether or not the
/// report uses a panel; `None` when there are none.
pub fn never_extracted_warning(episodes: &[Episode<'_>], panel: Option<&str>) -> Option<String> {
    let never = episodes
        .iter()
        .filter(|e| e.is_scored() && e.is_delivery() && e.extraction.is_none())
        .filter(|e| e.context.is_some_and(|c| c.schema) && !e.submissions.is_empty())
        .count();
    if never == 0 {
        return None;
    }
    let by = match panel {
        Some(panel) => format!("extraction panel {panel} has not extracted them"),
        None => "no extraction panel scored these runs".to_string(),
    };
    Some(format!(
        "{never} run(s) of cases with a submission schema were never extracted ({by}): they are scored from the direct artifact, where seed 002 scores every run by extraction (run `specgap extract RUN --panel FILE`)"
    ))
}
