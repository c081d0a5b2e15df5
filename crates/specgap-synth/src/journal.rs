//! The synthesis journal: `<out>/journal.json`, rewritten after every step so an interrupted
//! synthesis leaves everything up to its last step on disk.
//!
//! Shape (format [`JOURNAL_FORMAT`]): `{"format": 1, "resumed": times, "source": path, "limits": {...},
//! "roles": {"planner": label, ...}, "usage": {role: usage summed} (when any role spent some), "entries": [Entry...], "outcome": null | {"status":
//! "ready" | "failed", "message": text, "package": path | null}}`; each entry is described on
//! [`Entry`]. [`Journal`] writes it; [`read_journal`] is the one reader ([`SynthesisJournal`]),
//! used by `--resume` ([`read_previous`]) and by `specgap view`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;
use specgap_protocol::event::Usage;

use crate::pipeline::Limits;

/// Version of the journal shape.
pub const JOURNAL_FORMAT: u32 = 1;

/// One step of the pipeline.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Entry {
    /// 1-based position in the journal.
    pub seq: usize,
    /// `planner`, `builder`, `acceptance`, `implementer`, `sufficiency`, `auditor` or
    /// `calibrator`.
    pub stage: &'static str,
    /// 1-based design (a redesign starts the next).
    pub design: usize,
    /// 1-based Builder iteration within the design; 0 for the Planner.
    pub iteration: usize,
    /// 1-based attempt at this hand-off (a malformed one is retried).
    pub attempt: usize,
    /// `accepted` or `malformed` for a hand-off, `passed` or `failed` for acceptance checks and
    /// the sufficiency test.
    pub status: &'static str,
    /// The inputs the role was given (not for acceptance checks).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inputs: Option<serde_json::Value>,
    /// On a retry: the error the role was told its last answer had.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_reason: Option<String>,
    /// The role's raw answer (not for acceptance checks).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reply: Option<String>,
    /// The parsed hand-off, the acceptance report, or the error message of a malformed answer.
    pub detail: serde_json::Value,
    /// What the role's model requests for this answer spent (`chat:` and `cli:` roles; left out
    /// for scripts and checks; an answer reused by `--resume` keeps what it spent when it was
    /// given, so the caps count it once, across resumptions).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
}

/// How the synthesis ended.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JournalOutcome {
    /// `ready` or `failed`.
    pub status: &'static str,
    /// One line for the user.
    pub message: String,
    /// The accepted package, when ready.
    pub package: Option<PathBuf>,
}

#[derive(Debug, Clone, Serialize)]
struct Document {
    format: u32,
    resumed: u64,
    source: PathBuf,
    limits: Limits,
    roles: serde_json::Map<String, serde_json::Value>,
    /// Usage summed per role over its entries, plus what `carried` holds (only roles that
    /// spent any).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    usage: BTreeMap<String, Usage>,
    /// `--resume`: what role runs of the earlier journal spent on requests that gave no answer
    /// (status `error` entries, which are asked again, not reused), per role; counted in
    /// `usage` and so toward the caps.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    carried: BTreeMap<String, Usage>,
    entries: Vec<Entry>,
    outcome: Option<JournalOutcome>,
}

/// The journal being written.
#[derive(Debug)]
pub struct Journal {
    path: PathBuf,
    doc: Document,
}

impl Journal {
    /// A new journal at `<out>/journal.json` (written on the first [`Journal::push`]).
    pub fn new(out: &Path, source: &Path, limits: Limits, roles: Vec<(&str, String)>) -> Journal {
        let roles = roles.into_iter().map(|(name, label)| (name.to_owned(), serde_json::Value::String(label))).collect();
        Journal {
            path: out.join("journal.json"),
            doc: Document {
                format: JOURNAL_FORMAT,
                resumed: 0,
                source: source.to_owned(),
                limits,
                roles,
                usage: BTreeMap::new(),
                carried: BTreeMap::new(),
                entries: Vec::new(),
                outcome: None,
            },
        }
    }

    /// Counts this synthesis as resumed once more than `previous` times.
    pub fn set_resumed(&mut self, previous: u64) {
        self.doc.resumed = previous + 1;
    }

    /// Counts what an earlier journal's unanswered requests spent (`--resume`): into `carried`
    /// and `usage`, so the caps see it (written with the next step).
    pub fn carry(&mut self, spent: &BTreeMap<String, Usage>) {
        for (stage, usage) in spent {
            self.doc.carried.entry(stage.clone()).or_default().add(usage);
            self.doc.usage.entry(stage.clone()).or_default().add(usage);
        }
    }

    /// The journal file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Tokens (prompt + completion) spent so far by every role.
    pub fn tokens(&self) -> u64 {
        self.doc.usage.values().map(|u| u.input_tokens + u.output_tokens).sum()
    }

    /// US dollars every role spent so far, as their clients priced it.
    pub fn cost_usd(&self) -> f64 {
        self.doc.usage.values().map(|u| u.cost_usd).sum()
    }

    /// Entries so far.
    pub fn entries(&self) -> &[Entry] {
        &self.doc.entries
    }

    /// Appends `entry` (its `seq` is set here) and rewrites the file.
    ///
    /// # Errors
    /// The write error.
    pub fn push(&mut self, mut entry: Entry) -> std::io::Result<()> {
        entry.seq = self.doc.entries.len() + 1;
        if let Some(usage) = &entry.usage {
            self.doc.usage.entry(entry.stage.to_owned()).or_default().add(usage);
        }
        self.doc.entries.push(entry);
        self.save()
    }

    /// Records the outcome and rewrites the file.
    ///
    /// # Errors
    /// The write error.
    pub fn finish(&mut self, outcome: JournalOutcome) -> std::io::Result<()> {
        self.doc.outcome = Some(outcome);
        self.save()
    }

    fn save(&self) -> std::io::Result<()> {
        let text = serde_json::to_string_pretty(&self.doc).map_err(std::io::Error::other)?;
        fs_err::write(&self.path, text + "\n")
    }
}

/// A role's answer recorded in an earlier journal, reused by `--resume`.
#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
pub struct Recorded {
    /// The entry's `seq`.
    pub seq: usize,
    /// The role.
    pub stage: String,
    /// Design number.
    pub design: usize,
    /// Builder iteration.
    pub iteration: usize,
    /// Attempt.
    pub attempt: usize,
    /// The raw answer.
    pub reply: String,
    /// What giving it spent.
    pub usage: Option<Usage>,
}

/// What `--resume` reads from an earlier journal.
#[derive(Debug, Clone, PartialEq)]
pub struct Previous {
    /// How often it was resumed before.
    pub resumed: u64,
    /// The outcome's status, when it has one (`ready`, `failed`).
    pub status: Option<String>,
    /// Every role answer, in order (acceptance entries are left out: they are re-run).
    pub answers: Vec<Recorded>,
    /// What requests that gave no answer (status `error`) spent, per role, with what the
    /// earlier journal already carried.
    pub unanswered: BTreeMap<String, Usage>,
}

/// Reads `<out>/journal.json` for `--resume` (through [`read_journal`]).
///
/// # Errors
/// The read error, or a parse error naming the file.
pub fn read_previous(out: &Path) -> std::io::Result<Previous> {
    let doc = read_journal(&out.join("journal.json")).map_err(JournalError::into_io)?;
    let mut unanswered = doc.carried;
    let mut answers = Vec::new();
    for e in doc.entries {
        match e.reply {
            Some(reply) => answers.push(Recorded {
                seq: e.seq,
                stage: e.stage,
                design: e.design,
                iteration: e.iteration,
                attempt: e.attempt,
                reply,
                usage: e.usage,
            }),
            // A failed request is asked again, but what it spent stays spent. (Rollout entries
            // are re-read from their run store, usage included, so they are not carried.)
            None if e.status == "error" => {
                if let Some(usage) = &e.usage {
                    unanswered.entry(e.stage).or_default().add(usage);
                }
            }
            None => {}
        }
    }
    Ok(Previous { resumed: doc.resumed, status: doc.outcome.map(|o| o.status), answers, unanswered })
}

/// A journal as read back from its file: what `--resume` and `specgap view` read (the one
/// parser of `journal.json`; [`Journal`] writes it).
#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
pub struct SynthesisJournal {
    /// [`JOURNAL_FORMAT`].
    pub format: u32,
    /// How often the synthesis was resumed.
    #[serde(default)]
    pub resumed: u64,
    /// The source task.
    pub source: PathBuf,
    /// The limits it ran under.
    pub limits: Limits,
    /// Who played each role (`planner` → `scripted:planner.json`, ...).
    #[serde(default)]
    pub roles: BTreeMap<String, String>,
    /// Usage summed per role (and `rollouts`), `carried` included.
    #[serde(default)]
    pub usage: BTreeMap<String, Usage>,
    /// What an earlier journal's unanswered requests spent, per role (`--resume`).
    #[serde(default)]
    pub carried: BTreeMap<String, Usage>,
    /// Every step, in order.
    pub entries: Vec<RecordedEntry>,
    /// How it ended; `None` while it runs (or when it was interrupted).
    #[serde(default)]
    pub outcome: Option<RecordedOutcome>,
}

/// One step as read back ([`Entry`] with owned text).
#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
pub struct RecordedEntry {
    /// 1-based position in the journal.
    pub seq: usize,
    /// The stage ([`Entry::stage`]).
    pub stage: String,
    /// 1-based design.
    pub design: usize,
    /// Builder iteration (0 for the Planner).
    pub iteration: usize,
    /// Attempt at this hand-off.
    pub attempt: usize,
    /// The status ([`Entry::status`]).
    #[serde(default)]
    pub status: String,
    /// The inputs the role was given.
    #[serde(default)]
    pub inputs: Option<serde_json::Value>,
    /// On a retry: what the role was told about its last answer.
    #[serde(default)]
    pub retry_reason: Option<String>,
    /// The role's raw answer.
    #[serde(default)]
    pub reply: Option<String>,
    /// The parsed hand-off, the check's report, or the error message.
    #[serde(default)]
    pub detail: serde_json::Value,
    /// What giving it spent.
    #[serde(default)]
    pub usage: Option<Usage>,
}

/// How a synthesis ended, as read back ([`JournalOutcome`] with owned text).
#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
pub struct RecordedOutcome {
    /// `ready` or `failed`.
    pub status: String,
    /// One line for the user.
    #[serde(default)]
    pub message: String,
    /// The accepted package, when ready.
    #[serde(default)]
    pub package: Option<PathBuf>,
}

/// Why a journal file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    /// The file could not be read (the `fs_err` error names it).
    #[error("cannot read the synthesis journal")]
    Read(#[source] std::io::Error),
    /// The file is not a synthesis journal of any format.
    #[error("{} is not a synthesis journal", path.display())]
    Malformed {
        /// The file.
        path: PathBuf,
        /// serde_json's error, with its line and column.
        #[source]
        source: serde_json::Error,
    },
    /// The file is a journal of another format.
    #[error("{} is a synthesis journal of format {found}; this build reads format {JOURNAL_FORMAT}", path.display())]
    Format {
        /// The file.
        path: PathBuf,
        /// Its `format`.
        found: u64,
    },
}

impl JournalError {
    fn into_io(self) -> std::io::Error {
        match self {
            JournalError::Read(e) => e,
            JournalError::Malformed { path, source } => {
                std::io::Error::new(std::io::ErrorKind::InvalidData, format!("{} is not a synthesis journal: {source}", path.display()))
            }
            other => std::io::Error::new(std::io::ErrorKind::InvalidData, other.to_string()),
        }
    }
}

/// Reads the journal file at `path` (`<out>/journal.json`), refusing another format.
///
/// # Errors
/// [`JournalError`], naming the file.
pub fn read_journal(path: &Path) -> Result<SynthesisJournal, JournalError> {
    let text = fs_err::read_to_string(path).map_err(JournalError::Read)?;
    parse_journal(path, &text)
}

/// Parses `text`, the journal read from `path` (named in errors).
///
/// # Errors
/// [`JournalError::Malformed`], [`JournalError::Format`].
pub fn parse_journal(path: &Path, text: &str) -> Result<SynthesisJournal, JournalError> {
    #[derive(serde::Deserialize)]
    struct Probe {
        format: u64,
    }
    let malformed = |source| JournalError::Malformed { path: path.to_owned(), source };
    let probe: Probe = serde_json::from_str(text).map_err(malformed)?;
    if probe.format != u64::from(JOURNAL_FORMAT) {
        return Err(JournalError::Format { path: path.to_owned(), found: probe.format });
    }
    serde_json::from_str(text).map_err(malformed)
}
