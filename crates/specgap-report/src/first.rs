//! Score@k and Success@k of one episode (seed 000 §4.1), the per-episode definitions every
//! group measure builds on ([`crate::outcome`] averages them).
//!
//! - **Score@k** of an episode: the Score (DESIGN §2 scoring table, in [0, 1]; delivery
//!   scores may exceed 1) of its k-th submission. An episode that ended after fewer than k
//!   submissions (accepted, out of submissions, budget or loop end) *carries its last values
//!   forward*: Score@k is the Score of its last submission. An episode that ended without any
//!   valid submission has Score@k = 0 and Success@k = false for every k (nothing was
//!   delivered; docs/decisions.md "Report: which episodes enter measures").
//! - **Success@k** of an episode: the Success of its k-th submission, carried forward the same
//!   way. Since an episode with feedback ends at its first success, Success@k is also "some
//!   submission up to k succeeded" for such episodes.
//!
//! Only validly evaluated submissions count; episodes that ended in an evaluation or
//! infrastructure error never enter a group's means ([`crate::Episode::is_scored`]).

use serde::{Deserialize, Serialize};

/// Submissions reported by Score@k / Success@k: k = 1..=`MAX_K` (seed 000 uses four).
pub const MAX_K: usize = 4;

/// One submission's private evaluation, as the store keeps it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SubmissionScore {
    /// 1-based submission number.
    pub k: u32,
    /// Score by the task's scoring kind.
    pub score: f64,
    /// Success by the task's scoring kind.
    pub success: bool,
}

/// Score@k of one episode (1-based `k`), carried forward; 0 without submissions.
///
/// `submissions` may be in any order; a `k` of 0 is treated as 1.
pub fn score_at_k(submissions: &[SubmissionScore], k: u32) -> f64 {
    submission_at_k(submissions, k).map_or(0.0, |s| s.score)
}

/// Success@k of one episode (1-based `k`), carried forward; false without submissions.
pub fn success_at_k(submissions: &[SubmissionScore], k: u32) -> bool {
    submission_at_k(submissions, k).is_some_and(|s| s.success)
}

/// The submission whose values hold at `k`: the one numbered `k`, else the last one before it.
fn submission_at_k(submissions: &[SubmissionScore], k: u32) -> Option<&SubmissionScore> {
    let k = k.max(1);
    submissions.iter().filter(|s| s.k <= k).max_by_key(|s| s.k)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sub(k: u32, score: f64, success: bool) -> SubmissionScore {
        SubmissionScore { k, score, success }
    }

    #[test]
    fn values_carry_forward_after_the_last_submission() {
        // Seed 000 Table 11, Luna under Partial: 0.2, 0.6, 0.8, 1.0.
        let luna = [sub(1, 0.2, false), sub(2, 0.6, false), sub(3, 0.8, false), sub(4, 1.0, true)];
        assert_eq!(score_at_k(&luna, 1), 0.2);
        assert_eq!(score_at_k(&luna, 3), 0.8);
        assert!(!success_at_k(&luna, 3));
        assert!(success_at_k(&luna, 4));
        // Full: accepted at the first submission, carried to @4.
        let full = [sub(1, 1.0, true)];
        assert_eq!(score_at_k(&full, 4), 1.0);
        assert!(success_at_k(&full, 4));
        // Out of order input, ended after two.
        let two = [sub(2, 0.5, false), sub(1, 0.25, false)];
        assert_eq!(score_at_k(&two, 1), 0.25);
        assert_eq!(score_at_k(&two, 4), 0.5);
    }

    #[test]
    fn no_submission_scores_zero() {
        assert_eq!(score_at_k(&[], 1), 0.0);
        assert!(!success_at_k(&[], 4));
    }
}
