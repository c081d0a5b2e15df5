//! Syntheses (`specgap synthesize --out DIR`) in the viewer: a directory given to
//! `specgap view` that holds `journal.json` is a synthesis. Its journal is read with
//! specgap-synth's own reader ([`specgap_synth::journal::read_journal`], format 1 only) when
//! the viewer starts (a malformed one is refused, naming the file) and again at every request
//! (a synthesis in progress grows); its calibration rollouts' run stores
//! (`rollouts/design-<d>/iteration-<i>/`, those present when the viewer starts) are served as
//! ordinary runs.
//!
//! ```text
//! syntheses                       the syntheses served: label, outcome status, entries, rollout runs
//! synthesis/{s}                   source, roles, limits, usage per role and in total, outcome, the entries (no hand-off text)
//! synthesis/{s}/entry/{seq}       one entry whole: inputs, retry reason, reply, parsed detail  [private]
//! ```
//!
//! A public static site holds no hand-off (the brief names the withheld requirements, the
//! Auditor's evidence quotes the evaluator) and no outcome message (a limit's message quotes
//! the last fixes); the table, limits, usage and outcome status are public.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use specgap_protocol::event::Usage;
use specgap_synth::journal::{RecordedEntry, SynthesisJournal, read_journal};

use crate::access::Access;
use crate::error::ViewError;

/// The journal's file name inside a synthesis's output directory.
pub const JOURNAL_FILE: &str = "journal.json";

/// One synthesis served: where its journal is and which runs are its rollouts.
#[derive(Debug)]
pub(crate) struct SynthesisEntry {
    /// The directory as given on the command line.
    pub(crate) given: PathBuf,
    /// `<dir>/journal.json`.
    journal: PathBuf,
    /// The rollouts' run stores, in design and iteration order.
    pub(crate) rollouts: Vec<RolloutRun>,
}

/// One calibration rollouts' run store of a synthesis, served as a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RolloutRun {
    /// The design it calibrated.
    pub(crate) design: usize,
    /// The Builder iteration it calibrated.
    pub(crate) iteration: usize,
    /// Its index among the viewer's runs.
    pub(crate) run: usize,
}

/// Whether `dir` is a synthesis's output directory (it holds `journal.json`).
pub(crate) fn is_synthesis(dir: &Path) -> bool {
    dir.join(JOURNAL_FILE).is_file()
}

/// The rollouts' run directories under `dir` as `(design, iteration, path)`, in order;
/// entries not named `design-<d>` / `iteration-<i>` are not rollouts and are skipped.
pub(crate) fn rollout_dirs(dir: &Path) -> Result<Vec<(usize, usize, PathBuf)>, ViewError> {
    let mut found = Vec::new();
    for (design, design_dir) in numbered(&dir.join("rollouts"), "design-")? {
        for (iteration, path) in numbered(&design_dir, "iteration-")? {
            found.push((design, iteration, path));
        }
    }
    Ok(found)
}

/// The subdirectories of `dir` named `<prefix><n>`, by `n`; none when `dir` is missing.
fn numbered(dir: &Path, prefix: &str) -> Result<Vec<(usize, PathBuf)>, ViewError> {
    if !dir.is_dir() {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    let listing = |source| ViewError::Rollouts { dir: dir.to_owned(), source };
    for item in fs_err::read_dir(dir).map_err(listing)? {
        let item = item.map_err(listing)?;
        let name = item.file_name();
        let n = name.to_str().and_then(|n| n.strip_prefix(prefix)).and_then(|n| n.parse::<usize>().ok());
        if let Some(n) = n
            && item.path().is_dir()
        {
            out.push((n, item.path()));
        }
    }
    out.sort();
    Ok(out)
}

impl SynthesisEntry {
    /// A synthesis at `given` whose journal reads (checked now, so a malformed one is refused
    /// before the viewer starts), with its rollout runs.
    ///
    /// # Errors
    /// [`ViewError::Synthesis`] naming the directory, its cause naming the journal.
    pub(crate) fn open(given: &Path, rollouts: Vec<RolloutRun>) -> Result<SynthesisEntry, ViewError> {
        let entry = SynthesisEntry { given: given.to_owned(), journal: given.join(JOURNAL_FILE), rollouts };
        entry.read()?;
        Ok(entry)
    }

    /// The journal as it stands.
    ///
    /// # Errors
    /// [`ViewError::Synthesis`].
    pub(crate) fn read(&self) -> Result<SynthesisJournal, ViewError> {
        read_journal(&self.journal).map_err(|e| ViewError::Synthesis { dir: self.given.clone(), source: Box::new(e) })
    }

    /// The label: the directory as given (its last component for a public site).
    fn label(&self, access: Access) -> String {
        if access.private {
            self.given.display().to_string()
        } else {
            self.given.file_name().map_or_else(|| "synthesis".to_string(), |n| n.to_string_lossy().into_owned())
        }
    }

    /// The run of the rollouts of `design`, `iteration`.
    fn rollout_run(&self, design: usize, iteration: usize) -> Option<usize> {
        self.rollouts.iter().find(|r| r.design == design && r.iteration == iteration).map(|r| r.run)
    }

    fn rollouts_json(&self) -> Value {
        Value::Array(self.rollouts.iter().map(|r| json!({"design": r.design, "iteration": r.iteration, "run": r.run})).collect())
    }
}

/// `syntheses`.
pub(crate) fn syntheses_json(syntheses: &[SynthesisEntry], access: Access) -> Result<Value, ViewError> {
    let mut out = Vec::with_capacity(syntheses.len());
    for (index, synthesis) in syntheses.iter().enumerate() {
        let journal = synthesis.read()?;
        out.push(json!({
            "index": index,
            "label": synthesis.label(access),
            "status": journal.outcome.as_ref().map(|o| o.status.clone()),
            "entries": journal.entries.len(),
            "rollouts": synthesis.rollouts_json(),
        }));
    }
    Ok(Value::Array(out))
}

/// Tokens (prompt + completion) of `usage`, the journal's measure for `--max-tokens`.
fn tokens(usage: &Usage) -> u64 {
    usage.input_tokens + usage.output_tokens
}

fn usage_json(usage: &Usage) -> Value {
    serde_json::to_value(usage).unwrap_or(Value::Null)
}

/// One row of the entry table: no hand-off text.
fn entry_row(synthesis: &SynthesisEntry, entry: &RecordedEntry) -> Value {
    let run = (entry.stage == "rollouts").then(|| synthesis.rollout_run(entry.design, entry.iteration)).flatten();
    json!({
        "seq": entry.seq,
        "stage": entry.stage,
        "design": entry.design,
        "iteration": entry.iteration,
        "attempt": entry.attempt,
        "status": entry.status,
        "retried": entry.retry_reason.is_some(),
        "usage": entry.usage.as_ref().map(usage_json),
        "tokens": entry.usage.as_ref().map(tokens),
        "cost_usd": entry.usage.as_ref().map(|u| u.cost_usd),
        "run": run,
    })
}

/// `synthesis/{s}`.
pub(crate) fn synthesis_json(synthesis: &SynthesisEntry, index: usize, access: Access) -> Result<Value, ViewError> {
    let journal = synthesis.read()?;
    let usage: serde_json::Map<String, Value> = journal.usage.iter().map(|(role, u)| (role.clone(), usage_json(u))).collect();
    let carried: serde_json::Map<String, Value> = journal.carried.iter().map(|(role, u)| (role.clone(), usage_json(u))).collect();
    let outcome = journal.outcome.as_ref().map(|o| {
        let message = if access.private { Value::String(o.message.clone()) } else { Value::Null };
        json!({"status": o.status, "message": message, "package": o.package.as_ref().filter(|_| access.private)})
    });
    let limits = serde_json::to_value(journal.limits).map_err(|source| ViewError::Json { what: "the journal's limits".into(), source })?;
    Ok(json!({
        "index": index,
        "label": synthesis.label(access),
        "format": journal.format,
        "resumed": journal.resumed,
        "source": if access.private { journal.source.display().to_string() } else { source_name(&journal.source) },
        "roles": journal.roles,
        "limits": limits,
        "usage": usage,
        "carried": carried,
        "total": {
            "tokens": journal.usage.values().map(tokens).sum::<u64>(),
            "cost_usd": journal.usage.values().map(|u| u.cost_usd).sum::<f64>(),
        },
        "outcome": outcome,
        "handoffs": access.private,
        "entries": journal.entries.iter().map(|e| entry_row(synthesis, e)).collect::<Vec<_>>(),
        "rollouts": synthesis.rollouts_json(),
    }))
}

/// The source task's last path component (a public site names no local path).
fn source_name(source: &Path) -> String {
    source.file_name().map_or_else(|| source.display().to_string(), |n| n.to_string_lossy().into_owned())
}

/// `synthesis/{s}/entry/{seq}`: the entry whole, or `None` when the journal has no such
/// entry.
pub(crate) fn entry_json(synthesis: &SynthesisEntry, seq: usize) -> Result<Option<Value>, ViewError> {
    let journal = synthesis.read()?;
    Ok(journal.entries.iter().find(|e| e.seq == seq).map(|e| entry_whole(synthesis, e)))
}

/// `entry` with its hand-off: the table row plus `inputs`, `retry_reason`, `reply` and
/// `detail` (null when the journal has none).
pub(crate) fn entry_whole(synthesis: &SynthesisEntry, entry: &RecordedEntry) -> Value {
    let mut row = entry_row(synthesis, entry);
    if let Value::Object(map) = &mut row {
        map.insert("inputs".into(), entry.inputs.clone().unwrap_or(Value::Null));
        map.insert("retry_reason".into(), entry.retry_reason.clone().map_or(Value::Null, Value::String));
        map.insert("reply".into(), entry.reply.clone().map_or(Value::Null, Value::String));
        map.insert("detail".into(), entry.detail.clone());
    }
    row
}
