//! The vote rule of each use, as seed 002 has it. Pure functions of the ballots returned.
//!
//! * **Coverage** (§4.1, A.3): a target is covered when at least a strict majority of the
//!   *configured* judges (3 of 5) say covered; its matched questions are the union of those the
//!   covering judges cite. A judge dropped after its repair retry or failing after retries
//!   simply casts no yes. No ballot at all: unavailable, never missed (A.3 "If every judgment
//!   ... fails, all three metrics are unavailable").
//! * **Detector** (A.9.3): asking when a strict majority of the ballots *returned* say asking.
//! * **Extraction** (§4.1, A.3): a score is recorded once a strict majority of the configured
//!   extractors (3 of 5) give the same score after rounding to 4 decimal places; without such
//!   a majority the score is unavailable.

use std::collections::BTreeSet;

/// One judge's coverage ballot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CoverageBallot {
    /// Whether answering some question would state the target.
    pub covered: bool,
    /// 1-based numbers of the covering questions, as the judge gave them.
    pub question_indices: Vec<u32>,
}

/// The panel's verdict on one target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CoverageVerdict {
    /// Covered; the 0-based question-unit indices the covering judges cite.
    Covered(BTreeSet<u32>),
    /// Fewer covering judges than the majority.
    Missed,
    /// No judge returned a ballot.
    Unavailable,
}

/// The coverage rule over the ballots `returned`, with `majority` yes ballots needed.
pub fn coverage_verdict(returned: &[CoverageBallot], majority: usize) -> CoverageVerdict {
    if returned.is_empty() {
        return CoverageVerdict::Unavailable;
    }
    let yes: Vec<&CoverageBallot> = returned.iter().filter(|b| b.covered).collect();
    if yes.len() < majority {
        return CoverageVerdict::Missed;
    }
    let cited = yes.iter().flat_map(|b| b.question_indices.iter()).filter(|i| **i >= 1).map(|i| i - 1).collect();
    CoverageVerdict::Covered(cited)
}

/// One detector's ballot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DetectorBallot {
    /// Whether the reply asks the client for information.
    pub asking: bool,
    /// The questions it asks, compound ones split.
    pub questions: Vec<String>,
}

/// The detector rule over the ballots `returned`, in call order: `None` without any ballot;
/// otherwise whether a strict majority say asking, and the questions of the asking ballots'
/// most common question count (ties: the count met first in call order), taken from the
/// first asking ballot with that count.
pub fn detector_verdict(returned: &[DetectorBallot]) -> Option<(bool, Vec<String>)> {
    if returned.is_empty() {
        return None;
    }
    let asking: Vec<&DetectorBallot> = returned.iter().filter(|b| b.asking && !b.questions.is_empty()).collect();
    if asking.len() * 2 <= returned.len() {
        return Some((false, Vec::new()));
    }
    let count_of = |n: usize| asking.iter().filter(|b| b.questions.len() == n).count();
    let modal = asking.iter().map(|b| b.questions.len()).fold(None, |best: Option<usize>, n| match best {
        Some(b) if count_of(b) >= count_of(n) => Some(b),
        _ => Some(n),
    })?;
    let chosen = asking.iter().find(|b| b.questions.len() == modal)?;
    Some((true, chosen.questions.clone()))
}

/// A score rounded to 4 decimal places, as an integer key (seed 002 A.3).
pub fn score_key(score: f64) -> i64 {
    (score * 10_000.0).round() as i64
}

/// The agreed score among `scores` (each extractor's score, `None` for one that gave none),
/// when `majority` of them round to the same 4-decimal value: that value's first score.
pub fn agreed_score(scores: &[Option<f64>], majority: usize) -> Option<f64> {
    scores
        .iter()
        .flatten()
        .find(|s| {
            let key = score_key(**s);
            scores.iter().flatten().filter(|o| score_key(**o) == key).count() >= majority
        })
        .copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn yes(indices: &[u32]) -> CoverageBallot {
        CoverageBallot { covered: true, question_indices: indices.to_vec() }
    }
    fn no() -> CoverageBallot {
        CoverageBallot { covered: false, question_indices: vec![] }
    }

    #[test]
    fn three_of_five_cover_with_the_union_of_their_citations() {
        let ballots = [yes(&[1]), no(), yes(&[2, 1]), no(), yes(&[3])];
        assert_eq!(coverage_verdict(&ballots, 3), CoverageVerdict::Covered([0, 1, 2].into()));
        assert_eq!(coverage_verdict(&ballots[..4], 3), CoverageVerdict::Missed);
        assert_eq!(coverage_verdict(&[], 3), CoverageVerdict::Unavailable);
    }

    #[test]
    fn the_detector_takes_a_strict_majority_of_returned_ballots() {
        let ask = |q: &[&str]| DetectorBallot { asking: true, questions: q.iter().map(|s| s.to_string()).collect() };
        let not = DetectorBallot { asking: false, questions: vec![] };
        assert_eq!(detector_verdict(&[ask(&["a"]), not.clone()]), Some((false, vec![])));
        assert_eq!(
            detector_verdict(&[ask(&["a b"]), ask(&["a", "b"]), ask(&["a?", "b?"]), not.clone()]),
            Some((true, vec!["a".to_string(), "b".to_string()]))
        );
        assert_eq!(detector_verdict(&[]), None);
    }

    #[test]
    fn scores_agree_to_four_decimal_places() {
        assert_eq!(agreed_score(&[Some(0.51234), Some(0.51231), None, Some(0.51229)], 3), Some(0.51234));
        assert_eq!(agreed_score(&[Some(0.5123), Some(0.5124), Some(0.5123)], 3), None);
    }
}
