//! Agreement of a coverage-judge panel (seed 002 §4.3, App. A.8 Table 16(b)): per judge, how
//! many ballots it returned and how often it said covered; Cohen's κ between every two judges
//! of the panel, and between the panel's verdicts and the offline rule's.
//!
//! Items are (episode, clarification target) pairs of the report's episodes that asked at
//! least one question and have verdicts of the panel (episodes without questions are judged
//! without a model and would only inflate agreement). Two judges are compared on the items
//! both returned a ballot on; the panel and the offline rule on the items both decided
//! (`covered` or `missed`). κ is unweighted ([`specgap_stats::cohen_kappa`], as scikit-learn's
//! `cohen_kappa_score`), `None` when it is undefined (both raters gave one and the same label
//! throughout) or there is no item.
//!
//! The panel's ballots are read from the store's `ballots` rows (their parsed votes; requests
//! and responses are not loaded).

use std::collections::BTreeMap;

use serde::Serialize;
use specgap_stats::{KappaWeighting, cohen_kappa};
use specgap_store::BallotOutcome;

use crate::episode::Episode;
use crate::judge::{COVERED, MISSED, OFFLINE_JUDGE, UNAVAILABLE};
use crate::run::RunData;

/// One judge of the panel.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SeatSummary {
    /// 0-based position in the panel file.
    pub seat: u32,
    /// Model name.
    pub model: String,
    /// Ballots returned (counted in the vote).
    pub ballots: usize,
    /// Of those, covered.
    pub covered: usize,
    /// Dropped: the reply was malformed after its repair retry.
    pub malformed: usize,
    /// Dropped: the service failed after retries.
    pub failed: usize,
}

/// Agreement of two raters over the items both labelled.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PairAgreement {
    /// First rater: a seat's model, or the panel.
    pub a: String,
    /// Second rater: a seat's model, or the offline judge.
    pub b: String,
    /// Items both labelled.
    pub items: usize,
    /// Share of those with the same label, in [0, 1].
    pub agreement: Option<f64>,
    /// Unweighted Cohen's κ; `None` when undefined.
    pub kappa: Option<f64>,
}

/// The agreement section of a report judged by a panel.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JudgeAgreement {
    /// The panel's name.
    pub panel: String,
    /// Items: (episode, target) pairs of asking episodes with the panel's verdicts.
    pub items: usize,
    /// Verdicts among the items: covered, missed, unavailable.
    pub covered: usize,
    /// Missed verdicts.
    pub missed: usize,
    /// Unavailable verdicts (no judge answered).
    pub unavailable: usize,
    /// Each judge, by seat.
    pub seats: Vec<SeatSummary>,
    /// Every two judges, by seat order.
    pub pairs: Vec<PairAgreement>,
    /// The panel's verdicts against the offline rule's.
    pub offline: PairAgreement,
}

/// Returned ballots: (run, episode id) → target → seat → covered.
type Ballots<'a> = BTreeMap<(usize, &'a str), BTreeMap<&'a str, BTreeMap<u32, bool>>>;

/// The agreement of `panel` over `episodes` (module guide); `None` when no episode has its
/// verdicts.
pub fn judge_agreement(runs: &[RunData], episodes: &[Episode<'_>], panel: &str) -> Option<JudgeAgreement> {
    let mut ballots: Ballots<'_> = BTreeMap::new();
    let mut seats: BTreeMap<u32, SeatSummary> = BTreeMap::new();
    let asking: std::collections::BTreeSet<(usize, &str)> =
        episodes.iter().filter(|e| !e.questions.is_empty()).map(|e| (e.run, e.row.id.as_str())).collect();
    for (index, run) in runs.iter().enumerate() {
        for vote in run.rows.votes.iter().filter(|v| v.panel == panel && asking.contains(&(index, v.episode.as_str()))) {
            let seat = seats.entry(vote.seat).or_insert_with(|| SeatSummary {
                seat: vote.seat,
                model: vote.model.clone(),
                ballots: 0,
                covered: 0,
                malformed: 0,
                failed: 0,
            });
            match vote.outcome {
                BallotOutcome::Ballot => {
                    let covered = vote.vote.as_ref().and_then(|v| v["covered"].as_bool()).unwrap_or(false);
                    seat.ballots += 1;
                    seat.covered += usize::from(covered);
                    ballots
                        .entry((index, vote.episode.as_str()))
                        .or_default()
                        .entry(vote.subject.as_str())
                        .or_default()
                        .insert(vote.seat, covered);
                }
                BallotOutcome::Malformed => seat.malformed += 1,
                BallotOutcome::Failed => seat.failed += 1,
            }
        }
    }
    let mut verdicts: Vec<(&str, Option<&str>)> = Vec::new();
    for e in episodes.iter().filter(|e| !e.questions.is_empty()) {
        let offline: BTreeMap<&str, &str> =
            e.judgements_of(OFFLINE_JUDGE).iter().map(|j| (j.target.as_str(), j.verdict.as_str())).collect();
        for j in e.judgements_of(panel) {
            verdicts.push((j.verdict.as_str(), offline.get(j.target.as_str()).copied()));
        }
    }
    if verdicts.is_empty() {
        return None;
    }
    let count = |verdict: &str| verdicts.iter().filter(|(v, _)| *v == verdict).count();
    let seat_list: Vec<SeatSummary> = seats.into_values().collect();
    let mut pairs = Vec::new();
    for (i, a) in seat_list.iter().enumerate() {
        for b in &seat_list[i + 1..] {
            let labels: Vec<(bool, bool)> = ballots
                .values()
                .flat_map(|targets| targets.values())
                .filter_map(|by_seat| Some((*by_seat.get(&a.seat)?, *by_seat.get(&b.seat)?)))
                .collect();
            pairs.push(pair(a.model.clone(), b.model.clone(), &labels));
        }
    }
    let decided: Vec<(bool, bool)> = verdicts
        .iter()
        .filter_map(|(p, o)| {
            let decided = |v: &str| (v == COVERED || v == MISSED).then_some(v == COVERED);
            Some((decided(p)?, decided((*o)?)?))
        })
        .collect();
    Some(JudgeAgreement {
        panel: panel.to_string(),
        items: verdicts.len(),
        covered: count(COVERED),
        missed: count(MISSED),
        unavailable: count(UNAVAILABLE),
        seats: seat_list,
        pairs,
        offline: pair(panel.to_string(), OFFLINE_JUDGE.to_string(), &decided),
    })
}

fn pair(a: String, b: String, labels: &[(bool, bool)]) -> PairAgreement {
    let (left, right): (Vec<bool>, Vec<bool>) = labels.iter().copied().unzip();
    let same = labels.iter().filter(|(x, y)| x == y).count();
    let kappa = cohen_kappa(&left, &right, KappaWeighting::Unweighted).ok().filter(|k| k.is_finite());
    PairAgreement { a, b, items: labels.len(), agreement: (!labels.is_empty()).then(|| same as f64 / labels.len() as f64), kappa }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// sklearn.metrics.cohen_kappa_score([1,1,0,0,1,0], [1,0,0,0,1,1]) = 0.33333333333333337
    /// (scikit-learn 1.5: po = 4/6, pe = 0.5).
    #[test]
    fn pair_agreement_matches_scikit_learn() {
        let labels = [(true, true), (true, false), (false, false), (false, false), (true, true), (false, true)];
        let p = pair("a".into(), "b".into(), &labels);
        assert_eq!(p.items, 6);
        assert!((p.agreement.unwrap() - 4.0 / 6.0).abs() < 1e-12);
        assert!((p.kappa.unwrap() - 0.333_333_333_333_333_37).abs() < 1e-12);
        // One label throughout on both sides: κ undefined, agreement 1.
        let p = pair("a".into(), "b".into(), &[(false, false), (false, false)]);
        assert_eq!((p.agreement, p.kappa), (Some(1.0), None));
        assert_eq!(pair("a".into(), "b".into(), &[]).agreement, None);
    }
}
