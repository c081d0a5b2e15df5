//! The funnel (seed 001 App. B.3, Table 5, extended to every stage): how many predecessor
//! runs went in, how many each criterion excluded and why, and how many became residual
//! states — in total and per predecessor. Written as `residualize/funnel.md` and
//! `residualize/funnel.json` after every invocation, from the stored stage results alone.
//!
//! JSON shape (`"schema": "specgap-residualize-funnel"`, `"version": 1`):
//!
//! ```json
//! { "schema": "specgap-residualize-funnel", "version": 1,
//!   "stages": [ { "stage": "generation", "in": 7, "out": 7, "pending": 0, "excluded": [] },
//!               { "stage": "filter", "in": 7, "out": 3, "pending": 0,
//!                 "excluded": [ { "reason": "passed", "label": "Passes the verifier", "count": 1 }, … ] },
//!               { "stage": "review", … }, { "stage": "reconstruction", … } ],
//!   "included": 1,
//!   "agreement": { "verdict": { "items": 3, "observed": 0.667, "kappa": 0.4 }, … },
//!   "predecessors": [ { "predecessor": "…", "runs": 4, "candidates": 2, "passed_review": 1, "included": 1 } ] }
//! ```
//!
//! Every exclusion of a stage is listed, zero counts included, in the order the criteria are
//! checked; `pending` counts runs a stage has not decided yet (no review imported, no build
//! target given, an interrupted build); `included` is `null` until the build has run.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::build::{BuildExclusion, BuildRecord};
use crate::filter::{FilterExclusion, ScreenedRun};
use crate::review::{Agreement, ReviewExclusion, Reviews};
use specgap_protocol::escape::md_inline;

/// Name of the JSON schema.
pub const SCHEMA: &str = "specgap-residualize-funnel";
/// Version of the JSON schema.
pub const VERSION: u32 = 1;

/// One exclusion row.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExclusionCount {
    /// Kebab-case code.
    pub reason: String,
    /// In words.
    pub label: String,
    /// Runs excluded for it.
    pub count: u64,
}

/// One stage of the funnel.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StageCounts {
    /// `generation`, `filter`, `review` or `reconstruction`.
    pub stage: String,
    /// Runs or candidates that reached the stage.
    #[serde(rename = "in")]
    pub input: u64,
    /// Excluded, per criterion.
    pub excluded: Vec<ExclusionCount>,
    /// Not decided yet.
    pub pending: u64,
    /// Passed on to the next stage.
    #[serde(rename = "out")]
    pub output: u64,
}

/// One predecessor's line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PredecessorCounts {
    /// Agent spec.
    pub predecessor: String,
    /// Runs generated.
    pub runs: u64,
    /// Candidates after filtering.
    pub candidates: u64,
    /// Candidates that passed review.
    pub passed_review: u64,
    /// States included.
    pub included: u64,
}

/// The whole funnel.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Funnel {
    /// [`SCHEMA`].
    pub schema: String,
    /// [`VERSION`].
    pub version: u32,
    /// Generation, filter, review, reconstruction.
    pub stages: Vec<StageCounts>,
    /// States included; `None` before the build ran.
    pub included: Option<u64>,
    /// Reviewer agreement, once reviews were imported.
    pub agreement: Option<BTreeMap<String, Agreement>>,
    /// The reviewers, once reviews were imported.
    pub reviewers: Option<[String; 2]>,
    /// Per predecessor, sorted by spec.
    pub predecessors: Vec<PredecessorCounts>,
}

fn counts<R: Copy + Eq>(all: &[R], code: fn(R) -> &'static str, label: fn(R) -> &'static str, seen: &[R]) -> Vec<ExclusionCount> {
    all.iter()
        .map(|r| ExclusionCount { reason: code(*r).into(), label: label(*r).into(), count: seen.iter().filter(|s| *s == r).count() as u64 })
        .collect()
}

impl Funnel {
    /// The funnel of the stored stage results.
    pub fn of(screened: &[ScreenedRun], reviews: Option<&Reviews>, build: Option<&BuildRecord>) -> Funnel {
        let runs = screened.len() as u64;
        let candidates: Vec<&ScreenedRun> = screened.iter().filter(|s| s.is_candidate()).collect();
        let filter_excluded: Vec<FilterExclusion> = screened.iter().filter_map(ScreenedRun::exclusion).collect();
        let generation = StageCounts { stage: "generation".into(), input: runs, excluded: Vec::new(), pending: 0, output: runs };
        let filter = StageCounts {
            stage: "filter".into(),
            input: runs,
            excluded: counts(&FilterExclusion::ALL, FilterExclusion::code, FilterExclusion::label, &filter_excluded),
            pending: 0,
            output: candidates.len() as u64,
        };

        let review_outcome = |id: &str| reviews.and_then(|r| r.outcome(id));
        let review_excluded: Vec<ReviewExclusion> = candidates.iter().filter_map(|c| review_outcome(&c.episode).flatten()).collect();
        let passed: Vec<&&ScreenedRun> = candidates.iter().filter(|c| review_outcome(&c.episode) == Some(None)).collect();
        let review = StageCounts {
            stage: "review".into(),
            input: candidates.len() as u64,
            excluded: counts(&ReviewExclusion::ALL, ReviewExclusion::code, ReviewExclusion::label, &review_excluded),
            pending: candidates.iter().filter(|c| review_outcome(&c.episode).is_none()).count() as u64,
            output: passed.len() as u64,
        };

        let built = |id: &str| build.and_then(|b| b.state(id));
        let build_excluded: Vec<BuildExclusion> = passed.iter().filter_map(|c| built(&c.episode).and_then(|s| s.excluded)).collect();
        let included: Vec<&&&ScreenedRun> = passed.iter().filter(|c| built(&c.episode).is_some_and(|s| s.excluded.is_none())).collect();
        let reconstruction = StageCounts {
            stage: "reconstruction".into(),
            input: passed.len() as u64,
            excluded: counts(&BuildExclusion::ALL, BuildExclusion::code, BuildExclusion::label, &build_excluded),
            pending: passed.iter().filter(|c| built(&c.episode).is_none()).count() as u64,
            output: included.len() as u64,
        };

        let mut by_agent: BTreeMap<&str, PredecessorCounts> = BTreeMap::new();
        for s in screened {
            let line = by_agent.entry(s.agent.as_str()).or_insert_with(|| PredecessorCounts {
                predecessor: s.agent.clone(),
                runs: 0,
                candidates: 0,
                passed_review: 0,
                included: 0,
            });
            line.runs += 1;
            if s.is_candidate() {
                line.candidates += 1;
                if review_outcome(&s.episode) == Some(None) {
                    line.passed_review += 1;
                    if built(&s.episode).is_some_and(|b| b.excluded.is_none()) {
                        line.included += 1;
                    }
                }
            }
        }
        Funnel {
            schema: SCHEMA.into(),
            version: VERSION,
            included: build.map(|_| included.len() as u64),
            agreement: reviews.map(|r| r.agreement.clone()),
            reviewers: reviews.map(|r| [r.sheets[0].reviewer.clone(), r.sheets[1].reviewer.clone()]),
            stages: vec![generation, filter, review, reconstruction],
            predecessors: by_agent.into_values().collect(),
        }
    }

    /// The funnel as Markdown: one table like the paper's Table 5 over all stages, reviewer
    /// agreement, and a table per predecessor.
    pub fn markdown(&self) -> String {
        let mut out =
            String::from("## Residualization funnel (seed 001 §3.2, App. B.3 Table 5)\n\n| stage | | runs |\n| --- | --- | ---: |\n");
        let titles = [
            ("generation", "I. Generation", "Predecessor runs", ""),
            ("filter", "II. Automatic filtering", "Candidates", ""),
            ("review", "III. Review", "Passed review", "Awaiting review"),
            ("reconstruction", "IV. Reconstruction and validation", "Included as residual states", "Awaiting reconstruction"),
        ];
        for stage in &self.stages {
            let Some((_, title, out_label, pending_label)) = titles.iter().find(|t| t.0 == stage.stage) else { continue };
            let mut first = true;
            let mut row = |out: &mut String, label: &str, n: u64| {
                let _ = writeln!(out, "| {} | {label} | {n} |", if first { *title } else { "" });
                first = false;
            };
            if stage.stage == "generation" {
                row(&mut out, out_label, stage.output);
                continue;
            }
            for e in &stage.excluded {
                row(&mut out, &format!("Excluded: {}", e.label), e.count);
            }
            if stage.pending > 0 {
                row(&mut out, pending_label, stage.pending);
            }
            row(&mut out, out_label, stage.output);
        }
        if let (Some(agreement), Some([a, b])) = (&self.agreement, &self.reviewers) {
            let _ = writeln!(
                out,
                "\nReviewer agreement ({}, {}):\n\n| label | candidates | agreement | Cohen's kappa |\n| --- | ---: | ---: | ---: |",
                md_inline(a),
                md_inline(b)
            );
            for (label, value) in agreement {
                let observed = value.observed.map_or_else(|| "—".to_string(), |o| format!("{:.1}%", 100.0 * o));
                let kappa = value.kappa.map_or_else(|| "undefined".to_string(), |k| format!("{k:.3}"));
                let _ = writeln!(out, "| {label} | {} | {observed} | {kappa} |", value.items);
            }
        }
        if !self.predecessors.is_empty() {
            out.push_str("\n| predecessor | runs | candidates | passed review | included |\n| --- | ---: | ---: | ---: | ---: |\n");
            for p in &self.predecessors {
                let _ = writeln!(
                    out,
                    "| {} | {} | {} | {} | {} |",
                    md_inline(&p.predecessor),
                    p.runs,
                    p.candidates,
                    p.passed_review,
                    p.included
                );
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_exclusion_code_is_its_serialized_name() {
        for r in ReviewExclusion::ALL {
            assert_eq!(serde_json::to_value(r).unwrap(), serde_json::Value::String(r.code().into()));
        }
        for r in BuildExclusion::ALL {
            assert_eq!(serde_json::to_value(r).unwrap(), serde_json::Value::String(r.code().into()));
        }
    }

    #[test]
    fn an_empty_funnel_lists_every_criterion_with_zero_and_no_inclusion_yet() {
        let funnel = Funnel::of(&[], None, None);
        assert_eq!(funnel.included, None);
        assert_eq!(funnel.stages.iter().map(|s| s.excluded.len()).collect::<Vec<_>>(), [0, 9, 2, 5]);
        let markdown = funnel.markdown();
        assert!(
            markdown.contains(
                "| I. Generation | Predecessor runs | 0 |\n| II. Automatic filtering | Excluded: Not started from the clean state | 0 |\n"
            ),
            "{markdown}"
        );
        assert!(markdown.ends_with("|  | Included as residual states | 0 |\n"), "{markdown}");
        let json = serde_json::to_value(&funnel).unwrap();
        assert_eq!(json["schema"], SCHEMA);
        assert_eq!(json["stages"][1]["in"], 0);
    }
}
