//! What the agent can *hear* from the starter, for the leak scan (seed 000 §4.2 criterion 4,
//! App. E.3 "Leaks": no agent-visible sentence states a requirement; records show raw events).
//!
//! The leak scan of [`crate::check`] reads what the agent can see (instruction.md, the
//! workspace) and what the owner can say. A program of the workspace can still print a rule
//! the files only imply (an error message, a banner, a `--help`), so `check` also runs, on the
//! unchanged starter, every command the package itself names as one the agent runs, and scans
//! what each prints (stdout and stderr, each on its own):
//!
//! * the replay of every record: `[project].replay` with `{record}` the path of each top-level
//!   entry of `[project].records` (files and directories, sorted by name), which is what
//!   `run_project` runs for that record (the engine also accepts deeper paths; a record is a
//!   top-level entry in every bundled package);
//! * each of `[project].probes` (format 2): other commands the task expects the agent to run,
//!   such as its test suite or a tool its README names.
//!
//! Each runs in a fresh sandbox over a fresh copy of the starter, like the agent's commands
//! (the task's `[environment]`, the workspace as working directory), for at most
//! [`HEARD_TIMEOUT_SEC`] (`run_project`'s default timeout), keeping [`HEARD_OUTPUT_BYTES`] of
//! each stream. Not run: commands the agent makes up, and anything run on a changed workspace —
//! what the agent hears after its own edits depends on the edits.

use std::path::Path;
use std::time::Duration;

use specgap_protocol::package::Requirement;

use crate::error::LoadError;
use crate::judge::{EvaluateError, Judge};
use crate::leak::{self, Leak};
use crate::package::TaskPackage;

/// Wall-clock limit of each heard command, in seconds: the engine's default timeout of
/// `run_project` and `run_experiment` (`specgap_engine::tools::DEFAULT_COMMAND_TIMEOUT_SEC`).
pub const HEARD_TIMEOUT_SEC: u64 = 120;

/// Bytes of each of stdout and stderr a heard command keeps (head and tail), far above the
/// 16 KiB an agent sees per result: an agent can page through any output with `head`/`tail`.
pub const HEARD_OUTPUT_BYTES: usize = 4 << 20;

/// Where a heard command comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeardSource {
    /// `[project].replay` of one record.
    Replay,
    /// One of `[project].probes`.
    Probe,
}

/// One command whose output the agent can hear.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeardCommand {
    /// Where it comes from.
    pub source: HeardSource,
    /// The shell command, as the agent's tool would run it.
    pub command: String,
}

/// What a command printed on the starter.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Heard {
    /// Standard output, lossily decoded.
    pub stdout: String,
    /// Standard error, lossily decoded.
    pub stderr: String,
}

/// The leak scan's share of what the agent hears: how many commands ran and what leaked.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HeardScan {
    /// Replays run.
    pub replays: usize,
    /// Probes run.
    pub probes: usize,
    /// Leaks in their output, labelled ``output of `<command>` (stdout)``.
    pub leaks: Vec<Leak>,
}

/// Why the heard commands could not all be run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HeardError {
    /// The records directory could not be listed.
    #[error("cannot list the records")]
    Records(#[from] LoadError),
    /// A command could not be run on the starter.
    #[error("cannot run `{command}` on the starter")]
    Run {
        /// The command.
        command: String,
        /// Why.
        #[source]
        source: EvaluateError,
    },
}

/// Quotes a string for `sh` (single quotes, embedded quotes escaped); plain paths stay as they
/// are. The engine's `run_project` quotes records the same way.
///
/// ```
/// use specgap_task::heard::shell_quote;
/// assert_eq!(shell_quote("records/a-1.json"), "records/a-1.json");
/// assert_eq!(shell_quote("it's here"), r"'it'\''s here'");
/// ```
pub fn shell_quote(text: &str) -> String {
    if !text.is_empty() && text.chars().all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c)) {
        return text.to_string();
    }
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// The commands whose output the agent can hear (module guide): the replays, then the probes.
///
/// # Errors
/// [`LoadError::Io`] when the records directory exists but cannot be read.
pub fn heard_commands(package: &TaskPackage) -> Result<Vec<HeardCommand>, LoadError> {
    let Some(project) = package.manifest().project.as_ref() else { return Ok(Vec::new()) };
    let mut commands = Vec::new();
    let records = package.workspace_dir().join(&project.records);
    if records.is_dir() {
        let mut names: Vec<String> = Vec::new();
        for entry in fs_err::read_dir(&records)? {
            names.push(entry?.file_name().to_string_lossy().into_owned());
        }
        names.sort();
        for name in names {
            let record = Path::new(&project.records).join(&name).display().to_string();
            let command = project.replay.replace("{record}", &shell_quote(&record));
            commands.push(HeardCommand { source: HeardSource::Replay, command });
        }
    }
    for probe in &project.probes {
        commands.push(HeardCommand { source: HeardSource::Probe, command: probe.clone() });
    }
    Ok(commands)
}

/// Runs every heard command on the starter through `judge` and scans each stream for leaks of
/// the `unstated` requirements ([`leak::scan_text`]).
///
/// # Errors
/// [`HeardError`] for the first command that could not be run (a failing exit status or a
/// timeout is not an error: its output is what the agent would hear).
pub fn scan_heard(package: &TaskPackage, judge: &dyn Judge, unstated: &[&Requirement]) -> Result<HeardScan, HeardError> {
    let mut scan = HeardScan::default();
    for heard in heard_commands(package)? {
        let timeout = Duration::from_secs(HEARD_TIMEOUT_SEC);
        let output = judge
            .run_on_starter(package, &heard.command, timeout)
            .map_err(|source| HeardError::Run { command: heard.command.clone(), source })?;
        for (stream, text) in [("stdout", &output.stdout), ("stderr", &output.stderr)] {
            let label = format!("output of `{}` ({stream})", heard.command);
            scan.leaks.extend(leak::scan_text(&label, text, unstated));
        }
        match heard.source {
            HeardSource::Replay => scan.replays += 1,
            HeardSource::Probe => scan.probes += 1,
        }
    }
    Ok(scan)
}
