//! Which delivery score a run gets when its case names a submission schema (seed 002 §4.1
//! "Extraction and case evaluation", A.3 "Score selection"; docs/decisions.md "Panels:
//! extraction").
//!
//! Precedence, per episode: when the report uses an extraction panel and that panel has a
//! verdict on the episode's last submission, the verdict decides — an agreed score (with the
//! validity, success and signature of an evaluation supporting it) replaces the direct
//! artifact's, and no majority makes the run unscored (`extraction_unavailable`, listed, never
//! 0), as A.3 has every score come from extraction routes. Otherwise — no schema, no panel, or a
//! submission the panel has not extracted — the direct artifact's evaluation stands, as before
//! extraction existed; the report says how many runs of schema cases were never extracted,
//! per group and in a warning ([`crate::scoring_source`]).
//!
//! `--extraction auto` (the default) uses the one extraction panel with verdicts in the runs,
//! and the direct artifacts when there is none; `direct` ignores extraction verdicts (to
//! compare); `panel:<hash>` names a panel.

use std::collections::BTreeSet;

use crate::ReportError;
use crate::episode::Episode;
use crate::run::RunData;

/// What `--extraction auto` stands for.
pub const AUTO: &str = "auto";
/// What `--extraction direct` stands for.
pub const DIRECT: &str = "direct";

/// The extraction panel a report uses for `requested`, or `None` for the direct artifacts.
///
/// # Errors
/// [`ReportError::JudgeChoice`] when `auto` finds several extraction panels or a named panel
/// has no verdict in the runs.
pub fn resolve_extraction(runs: &[RunData], requested: &str) -> Result<Option<String>, ReportError> {
    let with_verdicts: BTreeSet<&str> = runs.iter().flat_map(|r| r.rows.extractions.iter().map(|e| e.extraction.panel.as_str())).collect();
    match requested {
        DIRECT => Ok(None),
        AUTO => match with_verdicts.len() {
            0 => Ok(None),
            1 => Ok(with_verdicts.into_iter().next().map(str::to_string)),
            _ => Err(ReportError::JudgeChoice(format!(
                "several extraction panels scored these runs ({}); name one with --extraction panel:<hash>, or use --extraction direct",
                with_verdicts.into_iter().collect::<Vec<_>>().join(", ")
            ))),
        },
        name if with_verdicts.contains(name) => Ok(Some(name.to_string())),
        name => Err(ReportError::JudgeChoice(format!(
            "extraction panel `{name}` has no verdicts in these runs; expected auto, direct or panel:<hash>"
        ))),
    }
}

/// Gives every episode of `episodes` its verdict by `panel` on its last submission.
pub fn attach<'a>(runs: &'a [RunData], episodes: &mut [Episode<'a>], panel: &str) {
    for e in episodes.iter_mut() {
        let Some(last) = e.submissions.last().map(|s| s.k) else { continue };
        e.extraction = runs[e.run]
            .rows
            .extractions
            .iter()
            .find(|x| x.episode == e.row.id && x.extraction.panel == panel && x.extraction.k == last)
            .map(|x| &x.extraction);
    }
}

/// Whether `panel`'s extractors were offered `check_output` (its record's
/// `extraction.check_output`; a panel recorded before the setting existed offered none).
pub fn check_output_offered(runs: &[RunData], panel: &str) -> bool {
    runs.iter()
        .flat_map(|r| r.rows.panels.iter())
        .find(|p| p.name == panel)
        .and_then(|p| p.config["extraction"]["check_output"].as_bool())
        .unwrap_or(false)
}
