//! [`LoadError`]: why a directory is not a valid task package (format 1 or 2).
//!
//! One variant per rejection, each naming the file (and, for TOML files, the line and column)
//! and saying what was expected. Messages are lowercase and stable: `specgap check` prints them
//! verbatim and tests assert them.

use std::fmt;
use std::path::{Path, PathBuf};

/// Where in a package a problem is: a path, and for text files the 1-based line and column.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    /// The file or directory.
    pub path: PathBuf,
    /// 1-based `(line, column)` inside the file, when known.
    pub line_column: Option<(usize, usize)>,
}

impl Location {
    /// A location naming only a path.
    pub fn path(path: impl Into<PathBuf>) -> Self {
        Location { path: path.into(), line_column: None }
    }

    /// A location at a byte offset of `text`, the contents of `path`.
    pub fn at_offset(path: impl Into<PathBuf>, text: &str, offset: usize) -> Self {
        Location { path: path.into(), line_column: Some(line_column(text, offset)) }
    }

    /// A location at a 1-based line, column 1.
    pub fn at_line(path: impl Into<PathBuf>, line: usize) -> Self {
        Location { path: path.into(), line_column: Some((line, 1)) }
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line_column {
            Some((line, column)) => write!(f, "{}:{line}:{column}", self.path.display()),
            None => write!(f, "{}", self.path.display()),
        }
    }
}

/// 1-based line and column (in characters) of a byte offset; offsets past the end or inside
/// a character clamp to the nearest character boundary before them.
pub(crate) fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = before[line_start..].chars().count() + 1;
    (line, column)
}

/// Why a task package (or a suite of them) cannot be loaded.
///
/// Every variant names the file it is about; see each variant for the rule it enforces
/// (DESIGN §2, task package formats 1 and 2).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoadError {
    /// A file could not be read or a directory listed; the message names the path (fs-err).
    #[error(transparent)]
    Io(#[from] std::io::Error),

    /// A directory could not be walked; the message names the path.
    #[error(transparent)]
    Walk(#[from] walkdir::Error),

    /// The package directory has no `task.toml`.
    #[error("{}: no task.toml; a task package is a directory with a task.toml", root.display())]
    MissingTaskToml {
        /// The directory that was expected to be a package.
        root: PathBuf,
    },

    /// The package has no `instruction.md`.
    #[error("{}: missing instruction.md; every package needs its opening instruction", root.display())]
    MissingInstruction {
        /// Package root.
        root: PathBuf,
    },

    /// The package has no `workspace/` directory.
    #[error("{}: missing workspace/ directory; it may be empty but must exist", root.display())]
    MissingWorkspace {
        /// Package root.
        root: PathBuf,
    },

    /// The package has no `evaluator/` directory.
    #[error("{}: missing evaluator/ directory; every package needs its private evaluator", root.display())]
    MissingEvaluator {
        /// Package root.
        root: PathBuf,
    },

    /// `requirements.toml` exists but `observations.toml` does not.
    #[error(
        "{}: missing observations.toml; a package with requirements.toml needs an observation for every requirement",
        root.display()
    )]
    MissingObservations {
        /// Package root.
        root: PathBuf,
    },

    /// A part that must be a real directory (not a file or a symlink) is something else.
    #[error("{}: expected a directory, found {found}", path.display())]
    NotADirectory {
        /// The offending path.
        path: PathBuf,
        /// What was found instead ("a regular file", "a symlink", ...).
        found: &'static str,
    },

    /// A file the loader reads (task.toml, instruction.md, a TOML file, `delete.txt`, the
    /// delivery schema, ...) is not a regular file, nor a link to one.
    #[error("{}: expected a regular file, found {found}", path.display())]
    NotAFile {
        /// The path.
        path: PathBuf,
        /// What was found ("a directory", "a fifo", ...).
        found: &'static str,
    },

    /// A residual state directory lacks `state.patch` or `meta.toml`.
    #[error("{}: missing {file}; a residual state needs state.patch and meta.toml", dir.display())]
    MissingResidualFile {
        /// `residual/<id>/`.
        dir: PathBuf,
        /// `state.patch` or `meta.toml`.
        file: &'static str,
    },

    /// A TOML file does not parse, or does not have the expected shape (unknown key, missing
    /// key, wrong type). The message is the TOML library's, which names the key.
    #[error("{at}: {message}")]
    Toml {
        /// File, line and column of the problem.
        at: Location,
        /// What is wrong and what was expected.
        message: String,
    },

    /// `task.toml` has no `format` key.
    #[error(
        "{at}: missing `format`; this specgap reads task package formats 1 and 2 (`format = 1` unless the package uses a format-2 key)"
    )]
    FormatMissing {
        /// The task.toml.
        at: Location,
    },

    /// `task.toml` declares a format this specgap does not read.
    #[error("{at}: format = {found} is not supported; expected `format = 1` or `format = 2`")]
    FormatUnsupported {
        /// Where `format` is set.
        at: Location,
        /// The value found, as written.
        found: String,
    },

    /// A package of an earlier format uses a key that format 2 adds
    /// ([`specgap_protocol::package::FORMAT_2_KEYS`]).
    #[error("{at}: {key} is a format-2 key, and this package says `format = {format}`; set `format = 2` in task.toml to use it")]
    NeedsFormat2 {
        /// Where the key is set.
        at: Location,
        /// The key, as `[table].key` (`[task].tags`, `[[observation]].request`, ...).
        key: &'static str,
        /// The format the package declares.
        format: u32,
    },

    /// `[evaluator].command` is empty or blank.
    #[error("{at}: [evaluator].command is empty; expected the shell command that runs the evaluator")]
    EmptyEvaluatorCommand {
        /// Where the command is set.
        at: Location,
    },

    /// `[task].name` is not of the form `org/name` with non-empty, whitespace-free segments.
    #[error(
        "{at}: task name `{name}` is not usable; expected non-empty `/`-separated segments of letters, digits, `.`, `_` or `-` (e.g. `examples/config-drift`)"
    )]
    BadTaskName {
        /// Where the name is set.
        at: Location,
        /// The name found.
        name: String,
    },

    /// `[delivery].reference` is zero, NaN or infinite (scores divide by or into it).
    #[error("{at}: [delivery].reference = {value} is unusable; expected a finite, non-zero number")]
    BadDeliveryReference {
        /// Where the reference is set.
        at: Location,
        /// The value found.
        value: f64,
    },

    /// Some other value of a file breaks a format rule (an unusable glob, a relative bind,
    /// a zero timeout, an empty failing-test list, ...).
    #[error("{at}: {message}")]
    Invalid {
        /// Where the value is.
        at: Location,
        /// What is wrong and what was expected.
        message: String,
    },

    /// A requirement id is not lowercase-hyphenated.
    #[error(
        "{at}: requirement id `{id}` is not lowercase-hyphenated; expected letters a-z and digits in words joined by single hyphens, starting with a letter (e.g. `charge-once`)"
    )]
    BadRequirementId {
        /// Where the requirement is defined.
        at: Location,
        /// The id found.
        id: String,
    },

    /// Two requirements share an id.
    #[error("{at}: requirement id `{id}` is defined twice; ids must be unique in a task")]
    DuplicateRequirement {
        /// Where the second definition is.
        at: Location,
        /// The repeated id.
        id: String,
    },

    /// Two requirements share a priority.
    #[error("{at}: requirements `{first}` and `{second}` both have priority {priority}; priorities must be unique in a task")]
    DuplicatePriority {
        /// Where the second requirement is defined.
        at: Location,
        /// The shared priority.
        priority: u32,
        /// The requirement defined first.
        first: String,
        /// The requirement defined second.
        second: String,
    },

    /// A requirement has priority 0 (1 is the highest).
    #[error("{at}: requirement `{id}` has priority 0; priorities start at 1 (the highest)")]
    ZeroPriority {
        /// Where the requirement is defined.
        at: Location,
        /// The requirement.
        id: String,
    },

    /// An observation, mutant directory or clarification target names a requirement that
    /// `requirements.toml` does not define.
    #[error("{at}: {referrer} names requirement `{id}`, which requirements.toml does not define")]
    UnknownRequirement {
        /// Where the reference is.
        at: Location,
        /// Who refers ("observation", "mutant directory", "clarification target `x` rule_source").
        referrer: String,
        /// The unknown id.
        id: String,
    },

    /// A requirement has no observation, so failing it could give no feedback.
    #[error("{at}: requirement `{id}` has no observation; expected at least one [[observation]] naming it")]
    RequirementWithoutObservation {
        /// The observations.toml.
        at: Location,
        /// The requirement.
        id: String,
    },

    /// Two observations share a requirement and failure mode.
    #[error("{at}: requirement `{requirement}` has two observations for failure mode `{failure_mode}`; expected one per failure mode")]
    DuplicateObservation {
        /// Where the second observation is.
        at: Location,
        /// The requirement.
        requirement: String,
        /// The repeated failure mode.
        failure_mode: String,
    },

    /// Two clarification targets share an id.
    #[error("{at}: clarification target id `{id}` is defined twice; ids must be unique in a task")]
    DuplicateClarification {
        /// Where the second definition is.
        at: Location,
        /// The repeated id.
        id: String,
    },

    /// A `delete.txt` entry is absolute, leaves the workspace through `..`, or names the
    /// workspace itself.
    #[error("{at}: delete.txt entry `{entry}` {why}; expected a relative path inside the workspace")]
    DeleteEscapes {
        /// The delete.txt and its line.
        at: Location,
        /// The entry as written.
        entry: String,
        /// "is absolute", "leaves the workspace", "names the workspace itself".
        why: &'static str,
    },

    /// A symlink points outside the tree it lives in (its `workspace/`, solution overlay, or
    /// the package).
    #[error("{}: symlink to `{target}` leaves {tree}; links must stay inside it", path.display())]
    SymlinkEscapes {
        /// The symlink.
        path: PathBuf,
        /// Its target, as stored.
        target: String,
        /// The tree it must stay in ("workspace/", "solutions/gold/", "the package").
        tree: String,
    },

    /// A symlink never resolves: following it leads through a loop of links (`ELOOP`).
    #[error("{}: symlink to `{target}` never resolves: it is part of a symlink loop; links must lead to a file, a directory or nothing", path.display())]
    SymlinkLoop {
        /// The symlink.
        path: PathBuf,
        /// Its target, as stored.
        target: String,
    },

    /// A package entry is not a regular file, directory or symlink.
    #[error("{}: is a {kind}; a package may hold only regular files, directories and symlinks", path.display())]
    SpecialFile {
        /// The entry.
        path: PathBuf,
        /// "fifo", "socket", "block device", "character device" or "special file".
        kind: &'static str,
    },

    /// An entry where the format allows only specific names (under `solutions/`, `residual/`,
    /// or a top-level `.toml` file no format defines).
    #[error("{}: unexpected {found}; expected {expected}", path.display())]
    UnexpectedEntry {
        /// The entry.
        path: PathBuf,
        /// What it is ("file", "directory", "toml file").
        found: &'static str,
        /// What may be there.
        expected: &'static str,
    },

    /// Two packages of one suite have the same `[task].name`.
    #[error("task name `{name}` is used by two packages: {} and {}", first.display(), second.display())]
    DuplicateTaskName {
        /// The shared name.
        name: String,
        /// The first package root (in path order).
        first: PathBuf,
        /// The second package root.
        second: PathBuf,
    },

    /// Several packages of a suite failed to load (or share a name): every error, each naming
    /// its package's file, in path order. One per line below a count.
    #[error("{} errors in the suite's packages:{}", errors.len(), list_errors(errors))]
    BrokenPackages {
        /// The errors, at least two.
        errors: Vec<LoadError>,
    },

    /// No `task.toml` below the given paths.
    #[error("no task packages (directories with a task.toml) found under {}", display_paths(paths))]
    NoPackages {
        /// The paths searched.
        paths: Vec<PathBuf>,
    },

    /// A path given to discovery does not exist.
    #[error("no such file or directory: {} (expected a task package or a suite directory)", path.display())]
    NoSuchPath {
        /// The path as given.
        path: PathBuf,
    },
}

fn list_errors(errors: &[LoadError]) -> String {
    errors.iter().map(|e| format!("\n  - {e}")).collect()
}

fn display_paths(paths: &[PathBuf]) -> String {
    let shown: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    shown.join(", ")
}

impl LoadError {
    /// A TOML error from the `toml` crate, located in `path` whose contents are `text`.
    pub(crate) fn toml(path: &Path, text: &str, err: &toml::de::Error) -> Self {
        let at = match err.span() {
            Some(span) => Location::at_offset(path, text, span.start),
            None => Location::path(path),
        };
        LoadError::Toml { at, message: err.message().trim().to_owned() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_column_counts_characters_from_one() {
        let text = "a = 1\nbé = 2\n";
        assert_eq!(line_column(text, 0), (1, 1));
        assert_eq!(line_column(text, 6), (2, 1));
        // 'é' is two bytes; the '=' after it (byte 10) is the 4th character of line 2.
        assert_eq!(line_column(text, 10), (2, 4));
        // An offset inside 'é' clamps back to its start.
        assert_eq!(line_column(text, 8), (2, 2));
        assert_eq!(line_column(text, 999), (3, 1));
    }
}
