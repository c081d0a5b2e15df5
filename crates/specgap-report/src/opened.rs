//! What an episode's steps did with the workspace's files, as [`FileAction`]s (the vocabulary of
//! `specgap_protocol::action`), and from them the files a continuation *opened* and whether it
//! *inspected* the inherited changes (seed 001 App. D.2: "Left-out files", "Inspection of
//! inherited changes").
//!
//! ## How steps become actions (docs/decisions.md "Report: opened files")
//!
//! - An `actions` event (an external agent's adapter reporting its structured tools from its
//!   own log) contributes its actions as they are.
//! - The harness's tools map directly: `read_text` → read, `write_text` / `write_plan` → write,
//!   `replace_text` → edit, `list_files` → list, `run_project` → run; `ok` is false for an
//!   error result.
//! - A `bash` / `run_experiment` command is read with [`crate::shell`] and followed as a shell
//!   would run it, without running it:
//!   - paths are resolved against the working directory, which starts at the workspace root
//!     and follows `cd` / `pushd` (inside a `( … )` subshell, a pipeline stage or a `$( … )`
//!     only for that part); `/workspace/…` (the sandbox's mount) is the workspace; anything
//!     else outside it, `~`, or a directory above the root is no workspace file;
//!   - globs (`*`, `?`, `[…]`, hidden files only by an explicit dot) and brace lists
//!     (`{a,b}`) are expanded against the starting tree (the package's `workspace/` with the
//!     residual state's created and deleted files applied) plus every file an earlier action
//!     wrote; a pattern matching nothing stays as typed, as in the shell; `for` loops over such
//!     words run their body once per item;
//!   - here-document bodies are data, never commands; `bash -c '…'` and `sh -c '…'` are read
//!     as scripts;
//!   - a content reader ([`CONTENT_READERS`]: `cat`, `head`, `sed -n`, …) *reads* its file
//!     operands only when its output reaches the agent: printed last, or piped through
//!     programs that pass content on ([`PASS_THROUGH`]); `cat a > b`, `cat a | wc -l` and
//!     `x=$(cat a)` read nothing the agent saw. A command substitution's output is seen only as
//!     an argument of `echo` / `printf`, a process substitution's only as an operand of a
//!     reader;
//!   - a redirection `>` / `&>` *writes* its target, `>>` *edits* it; `tee`, `cp`, `mv`,
//!     `touch` write, `sed -i` and `perl -i` edit; a here-document fed to a program is no read;
//!   - a search (`grep`, `rg`, `ag`, `ack`, `git grep`, `find -exec grep`) *searches* each file
//!     whose lines its output shows (`<path>:` at a line start, resolved against the search's
//!     directory, for files of the known tree), or its one named file when it printed
//!     something; with `-l`, `-L`, `-c`, `-q`, `--files` it only *lists*;
//!   - `git diff` / `git show` / `git log -p` *read* each file whose hunk (`diff --git a/<p> …`
//!     followed by `@@`) the output carries; `git status`, `git diff --stat` and the like only
//!     list; `git show REV:path` reads the path;
//!   - a read, search or write **failed** (`ok = false`, never opened) when the tool result
//!     names its path with an error (`No such file or directory`, `Is a directory`, …), or when
//!     the command printed nothing on standard output and exited non-zero; a command the harness
//!     did not run (an error result) did nothing.
//!
//! A file is **opened** by an action that read or searched it successfully
//! ([`FileAction::opens`]). A continuation **inspects inherited changes** when it successfully
//! runs `git status` or `git diff` (any form), or opens a file the predecessor modified.
//!
//! ## Measured reads (issue 24 item 4)
//! Where the harness measured what each shell command read (`file_reads` events),
//! [`measured_reads`] replaces this text reading of the commands: *read* is what their
//! processes read, *opened* what of it their results showed, plus the harness's other tools and
//! git's object-store content as above; the report keeps the text reading beside it
//! (docs/decisions.md "Opened and inspected, measured").

use std::collections::{BTreeMap, BTreeSet, HashMap};

use specgap_protocol::action::{ActionKind, FileAction};
use specgap_protocol::event::{Event, EventKind};
use specgap_protocol::path_quote;

use crate::shell::{self, Command, RedirectOp, Script, SimpleCommand, Word};

/// Programs whose output is (part of) the content of their file operands.
pub const CONTENT_READERS: &[&str] = &[
    "cat", "tac", "head", "tail", "less", "more", "nl", "sed", "awk", "gawk", "mawk", "bat", "batcat", "xxd", "od", "hexdump", "strings",
    "cut", "sort", "uniq", "diff", "view", "column", "paste", "fold", "rev", "jq", "perl",
];

/// Programs that pass the content of their input on to their output (so a reader piped into
/// them is still seen); a program not listed consumes its input (`wc`, `md5sum`, `python3`).
pub const PASS_THROUGH: &[&str] = &[
    "cat", "tac", "head", "tail", "less", "more", "nl", "sed", "awk", "gawk", "mawk", "bat", "batcat", "cut", "sort", "uniq", "column",
    "fold", "rev", "tr", "tee", "expand", "fmt", "grep", "egrep", "fgrep", "rg", "ag", "ack", "jq", "paste", "xxd", "od", "hexdump",
    "strings",
];

/// Search programs whose matching lines show file content unless listing flags are given.
pub const SEARCHERS: &[&str] = &["grep", "egrep", "fgrep", "rg", "ag", "ack"];

/// Programs that list paths, counts or metadata.
const LISTERS: &[&str] =
    &["ls", "find", "tree", "du", "stat", "file", "wc", "fd", "fdfind", "realpath", "readlink", "md5sum", "sha1sum", "sha256sum", "cksum"];

/// Programs that do nothing with workspace files by themselves (their redirections still
/// count).
const SILENT: &[&str] = &[
    "echo", "printf", "true", "false", ":", "export", "set", "unset", "test", "[", "[[", "exit", "return", "shift", "read", "sleep",
    "source", ".", "alias", "type", "which", "hash", "wait", "pwd", "date", "clear", "history", "ulimit", "umask", "trap", "mkdir",
    "basename", "dirname", "seq", "yes", "whoami", "id", "uname", "env", "printenv",
];

/// Flags that make a search list paths or counts instead of content.
const LISTING_FLAGS: &[&str] =
    &["-l", "-L", "-c", "-q", "--files", "--files-with-matches", "--files-without-match", "--count", "--quiet", "--count-matches"];

/// Flags that make `git diff` / `git show` / `git log` print no hunk.
const SUMMARY_FLAGS: &[&str] =
    &["--stat", "--name-only", "--name-status", "--numstat", "--shortstat", "--summary", "--raw", "--quiet", "--exit-code"];

/// Phrases of the error a program prints about a path it could not use.
const PATH_ERRORS: &[&str] = &[
    "No such file",
    "Is a directory",
    "Permission denied",
    "cannot open",
    "can't open",
    "cannot access",
    "Not a directory",
    "cannot stat",
    "cannot read",
    "does not exist",
    "Read-only file system",
    "Directory nonexistent",
    "cannot create",
];

/// At most this many items of one `for` loop are followed.
const MAX_LOOP_ITEMS: usize = 256;

/// The files known to exist while an episode's steps are followed: the starting tree plus
/// every file an action wrote since. Globs are expanded against it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tree {
    files: BTreeSet<String>,
    dirs: BTreeSet<String>,
}

impl Tree {
    /// A tree of these workspace-relative files (their directories follow from the paths).
    pub fn new<I: IntoIterator<Item = String>>(files: I) -> Tree {
        let mut tree = Tree::default();
        for file in files {
            tree.add(file);
        }
        tree
    }

    /// Adds a file (and its directories).
    pub fn add(&mut self, file: String) {
        let mut dir = file.as_str();
        while let Some((parent, _)) = dir.rsplit_once('/') {
            if !self.dirs.insert(parent.to_string()) {
                break;
            }
            dir = parent;
        }
        self.files.insert(file);
    }

    /// Whether `path` is a known file.
    pub fn has_file(&self, path: &str) -> bool {
        self.files.contains(path)
    }

    fn entries(&self) -> impl Iterator<Item = &String> {
        self.files.iter().chain(self.dirs.iter())
    }
}

/// The actions of a trajectory's tool calls, in order, following the starting tree `start`.
pub fn file_actions(events: &[Event], start: &Tree) -> Vec<FileAction> {
    let mut results: HashMap<&str, (&str, bool)> = HashMap::new();
    for event in events {
        if let EventKind::ToolResult { call_id, output, is_error, .. } = &event.kind {
            results.insert(call_id.as_str(), (output.as_str(), *is_error));
        }
    }
    let mut tree = start.clone();
    let mut out = Vec::new();
    for event in events {
        let tool_calls = match &event.kind {
            EventKind::AgentTurn { tool_calls, .. } => tool_calls,
            // An adapter's own account of its agent's structured tools (issue 14 item 8).
            EventKind::Actions { actions, .. } => {
                for action in actions {
                    if action.ok
                        && matches!(action.kind, ActionKind::Write | ActionKind::Edit)
                        && let Some(path) = &action.path
                    {
                        tree.add(path.clone());
                    }
                }
                out.extend(actions.iter().cloned());
                continue;
            }
            _ => continue,
        };
        for call in tool_calls {
            let (output, is_error) = results.get(call.id.as_str()).copied().unwrap_or(("", true));
            let argument = |key: &str| call.arguments.get(key).and_then(|v| v.as_str());
            let step = match shell_command_key(&call.tool) {
                Some(key) => match argument(key) {
                    Some(command) if !is_error => command_actions(command, output, &tree),
                    _ => Vec::new(),
                },
                None => tool_actions(&call.tool, argument("path"), !is_error),
            };
            for action in &step {
                if action.ok
                    && matches!(action.kind, ActionKind::Write | ActionKind::Edit)
                    && let Some(path) = &action.path
                {
                    tree.add(path.clone());
                }
            }
            out.extend(step);
        }
    }
    out
}

/// What the harness measured of an episode's reads (`file_reads` events; docs/decisions.md
/// "Opened and inspected, measured"), with the harness's other tools (`read_text`, …) and an
/// adapter's `actions` read as [`file_actions`] reads them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Measured {
    /// Files read at all: by a measured command's processes, or opened by another tool.
    pub read: BTreeSet<String>,
    /// Files opened: shown by a measured command's result, opened by another tool, or shown
    /// by git from its object store (the text reader's `git show` / `git diff` / `git log`
    /// readings, which read no work-tree file).
    pub opened: BTreeSet<String>,
}

impl Measured {
    /// The files of `files` opened (seed 001 App. D.2 "opens").
    pub fn opened_of(&self, files: &BTreeSet<String>) -> BTreeSet<String> {
        self.opened.intersection(files).cloned().collect()
    }

    /// Whether the episode inspects the inherited changes: it ran `git status` / `git diff`
    /// (from `actions`, the commands' text: running them is what counts) or *read* a file the
    /// predecessor modified (App. D.2 "reads a file that the predecessor modified").
    pub fn inspects(&self, actions: &[FileAction], predecessor_files: &BTreeSet<String>) -> bool {
        actions.iter().any(|a| a.ok && (a.via == "git status" || a.via == "git diff"))
            || self.read.intersection(predecessor_files).next().is_some()
    }
}

/// The measured reading of an episode, or why there is none: a shell command that ran
/// without a measured `file_reads` event (reads not measured, with the recorded reason, or a
/// trajectory from before measurement, or an agent CLI's shell, which the harness does not
/// watch) leaves the episode to the trajectory reader.
///
/// # Errors
/// The reason, as a sentence for the report.
pub fn measured_reads(events: &[Event], start: &Tree) -> Result<Measured, String> {
    let mut reads: HashMap<&str, (&[String], &[String], &str)> = HashMap::new();
    let mut failed: HashMap<&str, bool> = HashMap::new();
    for event in events {
        match &event.kind {
            EventKind::FileReads { call_id, read, shown, unmeasured } => {
                reads.insert(call_id.as_str(), (read.as_slice(), shown.as_slice(), unmeasured.as_str()));
            }
            EventKind::ToolResult { call_id, is_error, .. } => {
                failed.insert(call_id.as_str(), *is_error);
            }
            _ => {}
        }
    }
    let mut measured = Measured::default();
    let mut others = Vec::with_capacity(events.len());
    for event in events {
        let EventKind::AgentTurn { turn, text, tool_calls, usage } = &event.kind else {
            others.push(event.clone());
            continue;
        };
        let mut kept = Vec::new();
        for call in tool_calls {
            if shell_command_key(&call.tool).is_none() {
                kept.push(call.clone());
                continue;
            }
            match reads.get(call.id.as_str()) {
                Some((_, _, why)) if !why.is_empty() => return Err(format!("reads not measured: {why}")),
                Some((read, shown, _)) => {
                    measured.read.extend(read.iter().cloned());
                    measured.opened.extend(shown.iter().cloned());
                }
                // A refused call (an error result without a measurement) ran nothing.
                None if failed.get(call.id.as_str()).copied().unwrap_or(true) => {}
                None => return Err(format!("no measured reads for the `{}` call {}", call.tool, call.id)),
            }
        }
        let mut turn_event = event.clone();
        turn_event.kind = EventKind::AgentTurn { turn: *turn, text: text.clone(), tool_calls: kept, usage: usage.clone() };
        others.push(turn_event);
    }
    for action in file_actions(&others, start) {
        if let Some(path) = action.path.as_ref().filter(|_| action.ok && action.kind.exposes_content()) {
            measured.read.insert(path.clone());
            measured.opened.insert(path.clone());
        }
    }
    // Git prints content from its object store (`git show REV:path`, a staged or committed
    // hunk of `git diff` / `git log -p`) without reading the work-tree file; the text reader
    // takes those from the output's hunks, so its git readings are added.
    for action in file_actions(events, start) {
        if let Some(path) = action.path.as_ref().filter(|_| action.ok && action.kind.exposes_content() && action.via.starts_with("git ")) {
            measured.opened.insert(path.clone());
        }
    }
    Ok(measured)
}

/// The argument holding the command line of a shell tool: the harness's `bash` and
/// `run_experiment`, and the shell tools of the vendors' agent CLIs (Claude Code's `Bash`,
/// Codex CLI's `exec_command`), so their commands are read like the harness's own.
fn shell_command_key(tool: &str) -> Option<&'static str> {
    match tool {
        "bash" | "run_experiment" | "Bash" => Some("command"),
        "exec_command" => Some("cmd"),
        _ => None,
    }
}

/// The action of one harness tool other than the shell tools.
fn tool_actions(tool: &str, path: Option<&str>, ok: bool) -> Vec<FileAction> {
    let kind = match tool {
        "read_text" => ActionKind::Read,
        "write_text" => ActionKind::Write,
        "replace_text" => ActionKind::Edit,
        "list_files" => ActionKind::List,
        "write_plan" => return vec![FileAction::on(ActionKind::Write, "PLAN.md", tool, ok)],
        "run_project" => return vec![FileAction::bare(ActionKind::Run, tool, ok)],
        _ => return Vec::new(),
    };
    // A quoted path (as `list_files` shows names that are not plain text) names its bytes.
    let unquoted = path.map(|p| path_quote::unquote(p).map_or_else(|| p.to_string(), |bytes| String::from_utf8_lossy(&bytes).into_owned()));
    let path = unquoted
        .as_deref()
        .or(if kind == ActionKind::List { Some(".") } else { None })
        .and_then(|p| resolve(&Cwd::Inside(String::new()), p));
    vec![FileAction { kind, path, via: tool.to_string(), ok }]
}

/// A shell command's result as the harness shows it: `exit status N`, then the output under
/// `--- stdout ---` and `--- stderr ---`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Outcome {
    /// `None` when killed (timeout, memory, signal).
    exit: Option<i32>,
    stdout: String,
    stderr: String,
}

impl Outcome {
    /// Reads a harness result; text in another form (an external agent's shell tool) is all
    /// standard output of a command that succeeded.
    fn parse(output: &str) -> Outcome {
        if !output.starts_with("exit status ") && !output.starts_with("killed") {
            return Outcome { exit: Some(0), stdout: output.to_string(), stderr: String::new() };
        }
        let (status, rest) = output.split_once('\n').unwrap_or((output, ""));
        let exit = status.strip_prefix("exit status ").and_then(|n| n.trim().parse().ok());
        let (stdout, stderr) = match rest.split_once("--- stderr ---\n") {
            Some((out, err)) => (out, err),
            None if rest.starts_with("--- stderr ---") => ("", ""),
            None => (rest, ""),
        };
        let stdout = stdout.strip_prefix("--- stdout ---\n").unwrap_or(if stdout.starts_with("(no output)") { "" } else { stdout });
        Outcome { exit, stdout: stdout.to_string(), stderr: stderr.to_string() }
    }

    /// Nothing reached standard output and the command did not succeed.
    fn failed_silently(&self) -> bool {
        self.stdout.trim().is_empty() && self.exit != Some(0)
    }

    /// Whether the result names `typed` (or `resolved`) in an error line.
    fn names_error(&self, typed: &str, resolved: &str) -> bool {
        self.stderr
            .lines()
            .chain(self.stdout.lines())
            .any(|line| (contains_path(line, typed) || contains_path(line, resolved)) && PATH_ERRORS.iter().any(|e| line.contains(e)))
    }
}

/// Whether `line` mentions `path` as a whole path (not as the tail of a longer name).
fn contains_path(line: &str, path: &str) -> bool {
    if path.is_empty() {
        return false;
    }
    line.match_indices(path).any(|(at, _)| {
        let before = line[..at].chars().next_back();
        let after = line[at + path.len()..].chars().next();
        !before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '-' || c == '.')
            && !after.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '/')
    })
}

/// The actions of one shell command with its tool result.
pub fn command_actions(command: &str, output: &str, tree: &Tree) -> Vec<FileAction> {
    let outcome = Outcome::parse(output);
    let mut walker = Walker { tree, outcome: &outcome, vars: BTreeMap::new(), out: Vec::new(), written: Vec::new() };
    let mut cwd = Cwd::Inside(String::new());
    walker.script(&shell::parse(command), &mut cwd, true, 0);
    walker.out
}

/// The shell's working directory, workspace-relative (`""` is the root).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Cwd {
    Inside(String),
    /// Outside the workspace or unknown.
    Elsewhere,
}

/// Resolves a path as typed against `cwd`: the workspace-relative, normalized path, or `None`
/// outside the workspace. `""` is the root.
fn resolve(cwd: &Cwd, typed: &str) -> Option<String> {
    if typed.is_empty() || typed.starts_with('~') {
        return None;
    }
    let (base, rest) = if let Some(abs) = typed.strip_prefix('/') {
        match abs.strip_prefix("workspace") {
            Some("") => (String::new(), ""),
            Some(rest) if rest.starts_with('/') => (String::new(), &rest[1..]),
            _ => return None,
        }
    } else {
        match cwd {
            Cwd::Inside(dir) => (dir.clone(), typed),
            Cwd::Elsewhere => return None,
        }
    };
    let mut parts: Vec<&str> = base.split('/').filter(|p| !p.is_empty()).collect();
    for part in rest.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            p => parts.push(p),
        }
    }
    Some(parts.join("/"))
}

/// Follows a parsed command and collects its actions.
struct Walker<'w> {
    tree: &'w Tree,
    outcome: &'w Outcome,
    /// `for` loop variables bound to one item.
    vars: BTreeMap<String, String>,
    out: Vec<FileAction>,
    /// Files written by earlier parts of this command (globs see them too).
    written: Vec<String>,
}

/// One argument after expansion: as typed (for error messages) and whether it is known.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Arg {
    /// The text after expansion; `None` when it depends on something unknown.
    text: Option<String>,
    /// The workspace-relative path it names when a glob produced it.
    globbed: Option<String>,
}

impl Arg {
    fn known(text: String) -> Arg {
        Arg { text: Some(text), globbed: None }
    }

    fn is_flag(&self) -> bool {
        self.text.as_deref().is_some_and(|t| t.starts_with('-') && t.len() > 1)
    }

    fn text(&self) -> &str {
        self.text.as_deref().unwrap_or("")
    }
}

/// The shape of a program's arguments: flags that take a value, and whether its first operand
/// is a script or pattern rather than a file.
struct Syntax {
    valued: &'static [&'static str],
    first_is_script: bool,
}

fn syntax(program: &str) -> Syntax {
    let (valued, first_is_script): (&'static [&'static str], bool) = match program {
        "head" | "tail" => (&["-n", "-c", "--lines", "--bytes"], false),
        "sed" => (&["-e", "-f", "--expression", "--file", "-l"], true),
        "awk" | "gawk" | "mawk" => (&["-f", "-v", "-F"], true),
        "perl" => (&["-e", "-E", "-I", "-M"], false),
        "jq" => (&["--arg", "--argjson", "-f", "--indent"], true),
        "grep" | "egrep" | "fgrep" => (&["-e", "-f", "-m", "-A", "-B", "-C", "-d", "-D", "--max-count", "--context"], true),
        "rg" => (
            &[
                "-e",
                "-f",
                "-g",
                "-t",
                "-T",
                "-m",
                "-A",
                "-B",
                "-C",
                "-M",
                "-j",
                "-r",
                "-E",
                "--type",
                "--glob",
                "--max-count",
                "--max-depth",
                "--replace",
                "--context",
            ],
            true,
        ),
        "ag" | "ack" => (&["-G", "-A", "-B", "-C", "-m", "--ignore"], true),
        "cut" => (&["-d", "-f", "-c", "-b"], false),
        "sort" => (&["-k", "-t", "-o", "-S", "-T"], false),
        "nl" => (&["-b", "-n", "-w", "-s", "-v", "-i"], false),
        "xxd" => (&["-l", "-s", "-c", "-g"], false),
        "od" => (&["-N", "-j", "-t", "-A", "-w"], false),
        "uniq" => (&["-f", "-s", "-w"], false),
        "strings" => (&["-n"], false),
        "column" => (&["-s", "-c"], false),
        "fold" => (&["-w"], false),
        "bat" | "batcat" => (&["-l", "-r", "--line-range", "--language"], false),
        "diff" => (&["-x", "-X", "-I"], false),
        "tee" | "cp" | "mv" | "touch" | "ln" | "truncate" => (&["-t", "-s", "-r"], false),
        _ => (&[], false),
    };
    Syntax { valued, first_is_script }
}

/// The file operands of a program's arguments (after the program word).
fn operands<'a>(program: &str, args: &'a [Arg]) -> Vec<&'a Arg> {
    let syntax = syntax(program);
    let mut out = Vec::new();
    let mut skip_next = false;
    let mut script_given = false;
    let mut after_dashes = false;
    for arg in args {
        if skip_next {
            skip_next = false;
            continue;
        }
        let text = arg.text();
        if !after_dashes && text == "--" {
            after_dashes = true;
            continue;
        }
        if !after_dashes && arg.is_flag() {
            let name = text.split_once('=').map_or(text, |(n, _)| n);
            if syntax.valued.contains(&name) && !text.contains('=') {
                skip_next = true;
            }
            if matches!(name, "-e" | "-f" | "--expression" | "--file" | "--regexp") && syntax.first_is_script {
                script_given = true;
            }
            continue;
        }
        out.push(arg);
    }
    if syntax.first_is_script && !script_given && !out.is_empty() {
        out.remove(0);
    }
    out
}

/// Whether a search's arguments ask for paths or counts only.
fn lists_only(args: &[Arg]) -> bool {
    args.iter().any(|a| {
        let t = a.text();
        LISTING_FLAGS.contains(&t)
            || (t.starts_with('-')
                && !t.starts_with("--")
                && t.len() > 1
                && t[1..].chars().all(char::is_alphabetic)
                && t[1..].chars().any(|c| matches!(c, 'l' | 'L' | 'c' | 'q')))
    })
}

/// Strips wrappers (`sudo`, `env X=1`, `time`, `timeout 10`, `nice -n 5`, `command`, `exec`,
/// `nohup`, `xargs …`) from the front of a command's arguments; says whether `xargs` fed it.
fn strip_wrappers(args: &[Arg]) -> (&[Arg], bool) {
    let mut rest = args;
    let mut xargs = false;
    loop {
        let Some(first) = rest.first() else {
            return (rest, xargs);
        };
        let program = base_name(first.text());
        match program {
            "sudo" | "command" | "builtin" | "exec" | "nohup" | "time" | "stdbuf" => {
                rest = &rest[1..];
                while rest.first().is_some_and(Arg::is_flag) {
                    rest = &rest[1..];
                }
            }
            "env" if rest.len() > 1 => {
                rest = &rest[1..];
                while rest.first().is_some_and(|a| a.is_flag() || a.text().contains('=')) {
                    rest = &rest[1..];
                }
            }
            "nice" | "timeout" => {
                rest = &rest[1..];
                while rest.first().is_some_and(Arg::is_flag) {
                    let takes_value = matches!(rest[0].text(), "-n" | "-s" | "-k");
                    rest = &rest[(if takes_value { 2 } else { 1 }).min(rest.len())..];
                }
                if program == "timeout" && !rest.is_empty() {
                    rest = &rest[1..];
                }
            }
            "xargs" => {
                xargs = true;
                rest = &rest[1..];
                while rest.first().is_some_and(Arg::is_flag) {
                    let takes_value = matches!(rest[0].text(), "-n" | "-I" | "-d" | "-P" | "-L" | "-s");
                    rest = &rest[(if takes_value { 2 } else { 1 }).min(rest.len())..];
                }
            }
            _ => return (rest, xargs),
        }
    }
}

fn base_name(program: &str) -> &str {
    program.rsplit_once('/').map_or(program, |(_, b)| b)
}

impl<'w> Walker<'w> {
    fn push(&mut self, kind: ActionKind, path: Option<String>, via: &str, ok: bool) {
        if ok
            && matches!(kind, ActionKind::Write | ActionKind::Edit)
            && let Some(p) = &path
        {
            self.written.push(p.clone());
        }
        self.out.push(FileAction { kind, path, via: via.to_string(), ok });
    }

    /// Follows `script`; `shown` says whether its standard output reaches the agent.
    fn script(&mut self, script: &Script, cwd: &mut Cwd, shown: bool, depth: usize) {
        if depth > 16 {
            return;
        }
        for pipeline in &script.pipelines {
            let stages = &pipeline.commands;
            // A stage's output is seen when it is the last one (and the script's output is) or
            // when every later stage passes content on.
            let mut seen = vec![shown; stages.len()];
            for i in (0..stages.len().saturating_sub(1)).rev() {
                seen[i] = seen[i + 1] && self.passes_through(&stages[i + 1], cwd);
            }
            for (i, stage) in stages.iter().enumerate() {
                if stages.len() > 1 {
                    // Each stage of a pipeline runs in a subshell.
                    let mut own = cwd.clone();
                    self.command(stage, &mut own, seen[i], depth);
                } else {
                    self.command(stage, cwd, seen[i], depth);
                }
            }
        }
    }

    /// Whether a pipeline stage passes its input on to its output.
    fn passes_through(&self, command: &Command, cwd: &Cwd) -> bool {
        match command {
            Command::Simple(simple) => {
                if simple.redirects.iter().any(|r| r.takes_stdout()) {
                    return false;
                }
                let args = self.expand_all(&simple.words, cwd);
                let (args, _) = strip_wrappers(&args);
                let Some(first) = args.first() else {
                    return false;
                };
                let program = base_name(first.text());
                PASS_THROUGH.contains(&program) && !(SEARCHERS.contains(&program) && lists_only(&args[1..]))
            }
            Command::Subshell(..) | Command::Group(..) => true,
            Command::For { .. } => false,
        }
    }

    fn command(&mut self, command: &Command, cwd: &mut Cwd, shown: bool, depth: usize) {
        match command {
            Command::Simple(simple) => self.simple(simple, cwd, shown, depth),
            Command::Subshell(body, redirects) => {
                let shown = shown && !redirects.iter().any(|r| r.takes_stdout());
                self.redirects(redirects, cwd);
                let mut own = cwd.clone();
                self.script(body, &mut own, shown, depth + 1);
            }
            Command::Group(body, redirects) => {
                let shown = shown && !redirects.iter().any(|r| r.takes_stdout());
                self.redirects(redirects, cwd);
                self.script(body, cwd, shown, depth + 1);
            }
            Command::For { var, items, body } => {
                let values: Option<Vec<String>> = items.as_ref().and_then(|words| {
                    let args = self.expand_all(words, cwd);
                    args.into_iter().map(|a| a.text).collect()
                });
                match values {
                    Some(values) => {
                        for value in values.into_iter().take(MAX_LOOP_ITEMS) {
                            let before = self.vars.insert(var.clone(), value);
                            self.script(body, cwd, shown, depth + 1);
                            match before {
                                Some(b) => self.vars.insert(var.clone(), b),
                                None => self.vars.remove(var),
                            };
                        }
                    }
                    None => {
                        let before = self.vars.remove(var);
                        self.script(body, cwd, shown, depth + 1);
                        if let Some(b) = before {
                            self.vars.insert(var.clone(), b);
                        }
                    }
                }
            }
        }
    }

    /// Writes and edits by redirections.
    fn redirects(&mut self, redirects: &[shell::Redirect], cwd: &Cwd) {
        for redirect in redirects {
            let kind = match redirect.op {
                RedirectOp::Out | RedirectOp::OutAndErr => ActionKind::Write,
                RedirectOp::Append | RedirectOp::AppendAndErr => ActionKind::Edit,
                _ => continue,
            };
            for arg in self.expand(&redirect.target, cwd) {
                let Some(text) = arg.text.clone() else {
                    continue;
                };
                if let Some(path) = arg.globbed.clone().or_else(|| resolve(cwd, &text)) {
                    let ok = !self.outcome.names_error(&text, &path);
                    self.push(kind, Some(path), ">", ok);
                }
            }
        }
    }

    fn simple(&mut self, simple: &SimpleCommand, cwd: &mut Cwd, shown: bool, depth: usize) {
        let args = self.expand_all(&simple.words, cwd);
        let (args, from_xargs) = strip_wrappers(&args);
        let program = args.first().map(|a| base_name(a.text())).unwrap_or("");
        // Substitutions run first, each in a subshell of the current directory.
        let echoes = matches!(program, "echo" | "printf") && shown;
        for word in simple.assignments.iter().chain(&simple.words) {
            for (inner, process) in word.substitutions() {
                let seen = if process { shown && CONTENT_READERS.contains(&program) } else { echoes };
                let mut own = cwd.clone();
                self.script(&shell::parse(inner), &mut own, seen, depth + 1);
            }
        }
        self.redirects(&simple.redirects, cwd);
        let shown = shown && !simple.redirects.iter().any(|r| r.takes_stdout());
        if args.is_empty() {
            return;
        }
        let rest = &args[1..];
        match program {
            "cd" | "pushd" => *cwd = self.change_dir(rest, cwd),
            "popd" => *cwd = Cwd::Elsewhere,
            "git" => self.git(rest, cwd, shown),
            "sh" | "bash" | "dash" | "zsh" => self.nested_shell(rest, cwd, shown, depth),
            "find" => self.find(rest, cwd, shown),
            p if SEARCHERS.contains(&p) => self.search(p, rest, cwd, shown, from_xargs),
            "sed" | "perl"
                if rest.iter().any(|a| a.text().starts_with("-i") || a.text() == "--in-place" || a.text().starts_with("-pi")) =>
            {
                for arg in operands(program, rest) {
                    self.path_action(ActionKind::Edit, arg, cwd, program, false);
                }
            }
            "diff" | "cmp" if !shown || rest.iter().any(|a| matches!(a.text(), "-q" | "--brief")) || program == "cmp" => {
                self.push(ActionKind::List, None, program, self.outcome.exit.is_some());
            }
            p if CONTENT_READERS.contains(&p) => {
                if !shown || from_xargs {
                    return;
                }
                let files = operands(p, rest);
                if files.is_empty() {
                    // Standard input: `cat < f` reads f.
                    for redirect in simple.redirects.iter().filter(|r| r.op == RedirectOp::In) {
                        for arg in self.expand(&redirect.target, cwd) {
                            self.path_action(ActionKind::Read, &arg, cwd, p, true);
                        }
                    }
                }
                for arg in files {
                    if arg.text() == "-" {
                        continue;
                    }
                    self.path_action(ActionKind::Read, arg, cwd, p, true);
                }
            }
            "tee" => {
                let kind = if rest.iter().any(|a| matches!(a.text(), "-a" | "--append")) { ActionKind::Edit } else { ActionKind::Write };
                for arg in operands(program, rest) {
                    self.path_action(kind, arg, cwd, program, false);
                }
            }
            "touch" | "truncate" => {
                let kind = if program == "touch" { ActionKind::Write } else { ActionKind::Edit };
                for arg in operands(program, rest) {
                    self.path_action(kind, arg, cwd, program, false);
                }
            }
            "cp" | "mv" | "ln" | "install" => {
                let files = operands(program, rest);
                if let Some(target) = files.last().filter(|_| files.len() >= 2) {
                    self.copy_target(program, target, &files[..files.len() - 1], cwd);
                }
            }
            p if LISTERS.contains(&p) => {
                let paths: Vec<Option<String>> =
                    operands(p, rest).iter().map(|a| a.globbed.clone().or_else(|| resolve(cwd, a.text()))).collect();
                let ok = self.outcome.exit.is_some();
                if paths.is_empty() {
                    // Without operands: the working directory, or standard input (`wc`).
                    let path = matches!(p, "ls" | "tree" | "du" | "fd" | "fdfind").then(|| resolve(cwd, ".")).flatten();
                    self.push(ActionKind::List, path, p, ok);
                }
                for path in paths {
                    self.push(ActionKind::List, path, p, ok);
                }
            }
            p if SILENT.contains(&p) || p.is_empty() => {}
            p => {
                let ok = self.outcome.exit == Some(0);
                self.push(ActionKind::Run, None, p, ok);
            }
        }
    }

    /// A read, write or edit of one operand; a read also fails when the command printed
    /// nothing and failed.
    fn path_action(&mut self, kind: ActionKind, arg: &Arg, cwd: &Cwd, via: &str, read: bool) {
        let Some(text) = arg.text.as_deref() else {
            return;
        };
        let Some(path) = arg.globbed.clone().or_else(|| resolve(cwd, text)) else {
            return;
        };
        // A directory is no file to read (the program says so on stderr, unless silenced).
        let failed = self.outcome.names_error(text, &path) || (read && (self.outcome.failed_silently() || self.tree.dirs.contains(&path)));
        self.push(kind, Some(path), via, !failed);
    }

    /// `cp a b`, `cp a b dir/`, `mv a b`: writes the target (inside a directory target, the
    /// sources' names).
    fn copy_target(&mut self, via: &str, target: &Arg, sources: &[&Arg], cwd: &Cwd) {
        let Some(text) = target.text.as_deref() else {
            return;
        };
        let Some(path) = target.globbed.clone().or_else(|| resolve(cwd, text)) else {
            return;
        };
        let into_dir = text.ends_with('/') || sources.len() > 1 || self.tree.dirs.contains(&path) || path.is_empty();
        let ok = self.outcome.exit == Some(0) || !self.outcome.names_error(text, &path);
        if into_dir {
            for source in sources {
                let name = base_name(source.text().trim_end_matches('/'));
                if name.is_empty() {
                    continue;
                }
                let file = if path.is_empty() { name.to_string() } else { format!("{path}/{name}") };
                self.push(ActionKind::Write, Some(file), via, ok);
            }
        } else {
            self.push(ActionKind::Write, Some(path), via, ok);
        }
    }

    fn change_dir(&self, args: &[Arg], cwd: &Cwd) -> Cwd {
        let target = args.iter().find(|a| !a.is_flag());
        match target.and_then(|a| a.text.as_deref()) {
            None => Cwd::Elsewhere,
            Some("-") => Cwd::Elsewhere,
            Some(text) => match resolve(cwd, text) {
                Some(dir) if !self.outcome.names_error(text, &dir) => Cwd::Inside(dir),
                _ => Cwd::Elsewhere,
            },
        }
    }

    /// `bash -c '…'`, `sh -lc '…'`: the script argument, read as a script.
    fn nested_shell(&mut self, args: &[Arg], cwd: &Cwd, shown: bool, depth: usize) {
        let mut iter = args.iter();
        while let Some(arg) = iter.next() {
            let t = arg.text();
            if t.starts_with('-') && !t.starts_with("--") && t.contains('c') {
                if let Some(script) = iter.next().and_then(|a| a.text.as_deref()) {
                    let mut own = cwd.clone();
                    self.script(&shell::parse(script), &mut own, shown, depth + 1);
                }
                return;
            }
            if !t.starts_with('-') {
                break;
            }
        }
        self.push(ActionKind::Run, None, "sh", self.outcome.exit == Some(0));
    }

    /// A content search: the files whose lines its output shows.
    fn search(&mut self, program: &str, args: &[Arg], cwd: &Cwd, shown: bool, from_xargs: bool) {
        if lists_only(args) || !shown {
            let ok = self.outcome.exit.is_some();
            self.push(ActionKind::List, None, program, ok);
            return;
        }
        let files = operands(program, args);
        let recursive = program == "rg"
            || program == "ag"
            || program == "ack"
            || args.iter().any(|a| {
                let t = a.text();
                t == "--recursive" || (t.starts_with('-') && !t.starts_with("--") && (t.contains('r') || t.contains('R')))
            });
        let mut shown_files = self.files_in_output(cwd);
        if shown_files.is_empty() && !recursive && !from_xargs && files.len() == 1 && !self.outcome.stdout.trim().is_empty() {
            let arg = files[0];
            if let Some(path) = arg.globbed.clone().or_else(|| resolve(cwd, arg.text()))
                && !self.outcome.names_error(arg.text(), &path)
            {
                shown_files.insert(path);
            }
        }
        if shown_files.is_empty() {
            self.push(ActionKind::Search, None, program, self.outcome.exit.is_some());
        }
        for path in shown_files {
            self.push(ActionKind::Search, Some(path), program, true);
        }
    }

    /// Known files named at the start of an output line (`path:…`), resolved against `cwd`.
    fn files_in_output(&self, cwd: &Cwd) -> BTreeSet<String> {
        let mut out = BTreeSet::new();
        for line in self.outcome.stdout.lines() {
            let Some((prefix, _)) = line.split_once(':') else {
                continue;
            };
            if let Some(path) = resolve(cwd, prefix)
                && (self.tree.has_file(&path) || self.written.contains(&path))
            {
                out.insert(path);
            }
        }
        out
    }

    /// `find … -exec grep …`: a search when the executed program is one.
    fn find(&mut self, args: &[Arg], cwd: &Cwd, shown: bool) {
        let exec = args.iter().position(|a| matches!(a.text(), "-exec" | "-execdir"));
        if let Some(at) = exec
            && let Some(program) = args.get(at + 1).map(|a| base_name(a.text()))
            && SEARCHERS.contains(&program)
        {
            let inner: Vec<Arg> = args[at + 2..].iter().take_while(|a| !matches!(a.text(), ";" | "+")).cloned().collect();
            self.search(program, &inner, cwd, shown, true);
            return;
        }
        let path = args
            .iter()
            .find(|a| !a.is_flag())
            .and_then(|a| a.globbed.clone().or_else(|| resolve(cwd, a.text())))
            .or_else(|| resolve(cwd, "."));
        self.push(ActionKind::List, path, "find", self.outcome.exit.is_some());
    }

    fn git(&mut self, args: &[Arg], cwd: &Cwd, shown: bool) {
        let mut i = 0;
        let mut dir = cwd.clone();
        while i < args.len() {
            let t = args[i].text();
            if t == "-C" {
                if let Some(d) = args.get(i + 1) {
                    dir = resolve(cwd, d.text()).map_or(Cwd::Elsewhere, Cwd::Inside);
                }
                i += 2;
            } else if matches!(t, "-c" | "--git-dir" | "--work-tree" | "--namespace") {
                i += 2;
            } else if t.starts_with('-') {
                i += 1;
            } else {
                break;
            }
        }
        let Some(sub) = args.get(i).map(Arg::text) else {
            return;
        };
        let rest = &args[i + 1..];
        let ok = self.outcome.exit.is_some() && !self.outcome.stderr.contains("not a git repository");
        let via = format!("git {sub}");
        match sub {
            "status" | "ls-files" | "ls-tree" => self.push(ActionKind::List, None, &via, ok),
            "grep" => self.search("git grep", rest, &dir, shown, false),
            "diff" | "show" | "log" => {
                let summary = rest.iter().any(|a| SUMMARY_FLAGS.iter().any(|f| a.text().starts_with(f)))
                    || (sub == "log" && !rest.iter().any(|a| matches!(a.text(), "-p" | "--patch" | "-u")));
                let mut files = BTreeSet::new();
                if shown && !summary {
                    files = hunks_in(&self.outcome.stdout);
                    if sub == "show" {
                        for arg in rest {
                            if let Some((_, path)) = arg.text().split_once(':')
                                && !self.outcome.stdout.trim().is_empty()
                                && let Some(path) = resolve(&Cwd::Inside(String::new()), path)
                            {
                                files.insert(path);
                            }
                        }
                    }
                }
                if files.is_empty() {
                    self.push(ActionKind::List, None, &via, ok);
                }
                for path in files {
                    self.push(ActionKind::Read, Some(path), &via, ok);
                }
            }
            "checkout" | "restore" | "reset" | "stash" | "clean" | "apply" | "am" | "revert" | "rm" | "mv" => {
                let paths: Vec<String> = match rest.iter().position(|a| a.text() == "--") {
                    Some(at) => rest[at + 1..].iter().filter_map(|a| a.globbed.clone().or_else(|| resolve(&dir, a.text()))).collect(),
                    None => Vec::new(),
                };
                if paths.is_empty() {
                    self.push(ActionKind::Edit, None, &via, ok && self.outcome.exit == Some(0));
                }
                for path in paths {
                    self.push(ActionKind::Edit, Some(path), &via, ok && self.outcome.exit == Some(0));
                }
            }
            _ => self.push(ActionKind::Run, None, &via, ok && self.outcome.exit == Some(0)),
        }
    }

    fn expand_all(&self, words: &[Word], cwd: &Cwd) -> Vec<Arg> {
        words.iter().flat_map(|w| self.expand(w, cwd)).collect()
    }

    /// One word after loop-variable substitution, brace lists and pathname expansion.
    fn expand(&self, word: &Word, cwd: &Cwd) -> Vec<Arg> {
        let bound = |name: &str| self.vars.get(name).cloned();
        let Some(chars) = word.chars_with(&bound) else {
            return vec![Arg { text: None, globbed: None }];
        };
        let mut out = Vec::new();
        for alternative in expand_braces(&chars) {
            let text: String = alternative.iter().map(|(c, _)| *c).collect();
            let is_glob = alternative.iter().any(|(c, quoted)| !quoted && matches!(c, '*' | '?' | '['));
            if !is_glob {
                out.push(Arg::known(text));
                continue;
            }
            let matches = self.glob(&alternative, cwd);
            if matches.is_empty() {
                out.push(Arg::known(text));
            }
            for (typed, path) in matches {
                out.push(Arg { text: Some(typed), globbed: Some(path) });
            }
        }
        out
    }

    /// Pathname expansion of `pattern` against the known tree: (text as the shell would pass
    /// it, workspace-relative path), sorted.
    fn glob(&self, pattern: &[(char, bool)], cwd: &Cwd) -> Vec<(String, String)> {
        let text: String = pattern.iter().map(|(c, _)| *c).collect();
        let (prefix_len, base) = if text.starts_with("/workspace/") {
            ("/workspace/".len(), String::new())
        } else if text.starts_with('/') {
            return Vec::new();
        } else {
            match cwd {
                Cwd::Inside(dir) => (0, dir.clone()),
                Cwd::Elsewhere => return Vec::new(),
            }
        };
        let components: Vec<&[(char, bool)]> =
            pattern[prefix_len..].split(|(c, _)| *c == '/').filter(|c| !c.is_empty() && !matches!(c, [('.', _)])).collect();
        let written: Vec<&String> = self.written.iter().collect();
        let mut out = Vec::new();
        for entry in self.tree.entries().chain(written) {
            let relative =
                if base.is_empty() { Some(entry.as_str()) } else { entry.strip_prefix(base.as_str()).and_then(|r| r.strip_prefix('/')) };
            let Some(relative) = relative else { continue };
            let names: Vec<&str> = relative.split('/').collect();
            if names.len() != components.len() {
                continue;
            }
            if names.iter().zip(&components).all(|(name, pattern)| component_matches(pattern, name)) {
                let typed = format!("{}{relative}", &text[..prefix_len]);
                out.push((typed, entry.clone()));
            }
        }
        out.sort();
        out.dedup();
        out
    }
}

/// Expands unquoted brace lists `{a,b}` (nested ones too); a brace without a comma stays.
fn expand_braces(chars: &[(char, bool)]) -> Vec<Vec<(char, bool)>> {
    let Some(open) = chars.iter().position(|(c, q)| *c == '{' && !q) else {
        return vec![chars.to_vec()];
    };
    let mut depth = 0;
    let mut commas = Vec::new();
    let mut close = None;
    for (i, (c, quoted)) in chars.iter().enumerate().skip(open) {
        if *quoted {
            continue;
        }
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    close = Some(i);
                    break;
                }
            }
            ',' if depth == 1 => commas.push(i),
            _ => {}
        }
    }
    let Some(close) = close.filter(|_| !commas.is_empty()) else {
        // No list here: keep the brace and expand what follows it.
        let head = &chars[..=open];
        return expand_braces(&chars[open + 1..]).into_iter().map(|tail| [head, tail.as_slice()].concat()).collect();
    };
    let mut bounds = vec![open];
    bounds.extend(&commas);
    bounds.push(close);
    let mut out = Vec::new();
    for pair in bounds.windows(2) {
        let alternative = [&chars[..open], &chars[pair[0] + 1..pair[1]], &chars[close + 1..]].concat();
        out.extend(expand_braces(&alternative));
    }
    out
}

/// `fnmatch` of one path component: `*`, `?`, `[…]` / `[!…]` when unquoted; a leading dot
/// must be matched by a literal dot.
fn component_matches(pattern: &[(char, bool)], name: &str) -> bool {
    if name.starts_with('.') && pattern.first().is_none_or(|(c, _)| *c != '.') {
        return false;
    }
    let name: Vec<char> = name.chars().collect();
    matches_from(pattern, &name)
}

fn matches_from(pattern: &[(char, bool)], name: &[char]) -> bool {
    let Some(&(c, quoted)) = pattern.first() else {
        return name.is_empty();
    };
    if quoted {
        return name.first() == Some(&c) && matches_from(&pattern[1..], &name[1..]);
    }
    match c {
        '*' => (0..=name.len()).any(|skip| matches_from(&pattern[1..], &name[skip..])),
        '?' => !name.is_empty() && matches_from(&pattern[1..], &name[1..]),
        '[' => match bracket(&pattern[1..]) {
            Some(b) => {
                name.first().is_some_and(|n| set_contains(&b.members, *n) != b.negated && matches_from(&pattern[1 + b.used..], &name[1..]))
            }
            None => name.first() == Some(&'[') && matches_from(&pattern[1..], &name[1..]),
        },
        c => name.first() == Some(&c) && matches_from(&pattern[1..], &name[1..]),
    }
}

/// A bracket expression of a glob (`[a-z]`, `[!…]`).
struct Bracket {
    /// Members, ranges as (low, high) pairs.
    members: Vec<(char, char)>,
    negated: bool,
    /// Pattern characters used after `[`, the closing `]` included.
    used: usize,
}

/// The bracket expression after a `[`, or `None` when it does not close.
fn bracket(rest: &[(char, bool)]) -> Option<Bracket> {
    let mut i = 0;
    let negated = matches!(rest.first(), Some(('!' | '^', false)));
    if negated {
        i += 1;
    }
    let mut members = Vec::new();
    let start = i;
    while i < rest.len() {
        let (c, _) = rest[i];
        if c == ']' && i > start {
            return Some(Bracket { members, negated, used: i + 1 });
        }
        if rest.get(i + 1).is_some_and(|(d, _)| *d == '-') && rest.get(i + 2).is_some_and(|(e, _)| *e != ']') {
            members.push((c, rest[i + 2].0));
            i += 3;
        } else {
            members.push((c, c));
            i += 1;
        }
    }
    None
}

fn set_contains(set: &[(char, char)], c: char) -> bool {
    set.iter().any(|(lo, hi)| *lo <= c && c <= *hi)
}

/// Files whose hunk a `git diff` output carries (`diff --git a/<p> b/<p>` then `@@`).
fn hunks_in(output: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut current: Option<String> = None;
    for line in output.lines() {
        if let Some(rest) = line.strip_prefix("diff --git a/") {
            current = rest.split_once(" b/").map(|(a, _)| a.to_string());
        } else if line.starts_with("@@")
            && let Some(path) = current.take()
        {
            out.insert(path);
        }
    }
    out
}

/// The subset of `files` (workspace-relative paths) that some action opened.
pub fn opened_files(actions: &[FileAction], files: &BTreeSet<String>) -> BTreeSet<String> {
    files.iter().filter(|f| actions.iter().any(|a| a.opens(f))).cloned().collect()
}

/// Whether the actions inspect the inherited changes: `git status` / `git diff` run
/// successfully, or one of `predecessor_files` opened.
pub fn inspects_inherited(actions: &[FileAction], predecessor_files: &BTreeSet<String>) -> bool {
    actions.iter().any(|a| a.ok && (a.via == "git status" || a.via == "git diff")) || !opened_files(actions, predecessor_files).is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree() -> Tree {
        Tree::new(
            ["README.md", "ivtree/__init__.py", "ivtree/node.py", "ivtree/tree.py", "tests/test_tree.py", ".hidden"].map(String::from),
        )
    }

    fn ok(stdout: &str) -> String {
        format!("exit status 0\n--- stdout ---\n{stdout}")
    }

    /// (kind, path, ok) of a command's actions.
    fn acts(command: &str, output: &str) -> Vec<(ActionKind, Option<String>, bool)> {
        command_actions(command, output, &tree()).into_iter().map(|a| (a.kind, a.path, a.ok)).collect()
    }

    fn read(path: &str) -> (ActionKind, Option<String>, bool) {
        (ActionKind::Read, Some(path.into()), true)
    }

    #[test]
    fn writes_and_here_documents_are_not_reads() {
        assert_eq!(
            acts("cat > ivtree/node.py <<'EOF'\ncat ivtree/tree.py\nEOF", "exit status 0\n(no output)"),
            [(ActionKind::Write, Some("ivtree/node.py".into()), true)]
        );
        assert_eq!(acts("cat ivtree/node.py > /tmp/copy && cat ivtree/tree.py | wc -l", &ok("40")), [(ActionKind::List, None, true)]);
        assert_eq!(acts("echo x >> README.md", "exit status 0\n(no output)"), [(ActionKind::Edit, Some("README.md".into()), true)]);
    }

    #[test]
    fn failed_reads_and_paths_outside_are_not_opened() {
        let missing = "exit status 1\n--- stderr ---\ncat: /nonexistent/ivtree/node.py: No such file or directory";
        assert_eq!(acts("cat /nonexistent/ivtree/node.py", missing), []);
        let typo = "exit status 1\n--- stderr ---\ncat: ivtree/nod.py: No such file or directory";
        assert_eq!(acts("cat ivtree/nod.py", typo), [(ActionKind::Read, Some("ivtree/nod.py".into()), false)]);
        // One of two operands missing: the other was read.
        let half = "exit status 1\n--- stdout ---\nclass Node:\n--- stderr ---\ncat: ivtree/gone.py: No such file or directory";
        assert_eq!(
            acts("cat ivtree/node.py ivtree/gone.py", half),
            [read("ivtree/node.py"), (ActionKind::Read, Some("ivtree/gone.py".into()), false)]
        );
        // Errors silenced: nothing printed and a failure status.
        assert_eq!(
            acts("cat ivtree/gone.py 2>/dev/null", "exit status 1\n(no output)"),
            [(ActionKind::Read, Some("ivtree/gone.py".into()), false)]
        );
        assert_eq!(acts("cat /workspace/README.md", &ok("# x")), [read("README.md")]);
        assert_eq!(acts("cat ~/notes ../../etc/passwd", &ok("x")), []);
    }

    #[test]
    fn cd_globs_braces_subshells_and_loops_resolve_paths() {
        assert_eq!(acts("cd ivtree && cat node.py", &ok("class Node")), [read("ivtree/node.py")]);
        assert_eq!(acts("cat ivtree/*.py", &ok("...")), [read("ivtree/__init__.py"), read("ivtree/node.py"), read("ivtree/tree.py")]);
        assert_eq!(acts("cat ivtree/{node,tree}.py", &ok("...")), [read("ivtree/node.py"), read("ivtree/tree.py")]);
        // The subshell's cd does not last; `*` also matches directories (which cat cannot
        // read); hidden files need an explicit dot.
        let dir = |p: &str| (ActionKind::Read, Some(p.to_string()), false);
        assert_eq!(
            acts("(cd ivtree; cat tree.py); cat * .h*", &ok("...")),
            [read("ivtree/tree.py"), read("README.md"), dir("ivtree"), dir("tests"), read(".hidden")]
        );
        assert_eq!(
            acts("for f in ivtree/n*.py tests/*.py; do echo \"== $f\"; head -n 3 \"$f\"; done", &ok("...")),
            [read("ivtree/node.py"), read("tests/test_tree.py")]
        );
        assert_eq!(acts("echo \"$(cat ivtree/node.py)\"", &ok("...")), [read("ivtree/node.py")]);
        assert_eq!(acts("x=$(cat ivtree/node.py); python3 -c pass", &ok("")), [(ActionKind::Run, None, true)]);
        assert_eq!(acts("bash -lc 'cd ivtree && sed -n 1,20p node.py'", &ok("...")), [read("ivtree/node.py")]);
        // A glob that matches nothing stays as typed, and the read fails.
        let none = "exit status 1\n--- stderr ---\ncat: 'ivtree/*.rs': No such file or directory";
        assert_eq!(acts("cat ivtree/*.rs", none), [(ActionKind::Read, Some("ivtree/*.rs".into()), false)]);
    }

    #[test]
    fn searches_show_the_files_in_their_output() {
        assert_eq!(
            acts("grep -rn max_end ivtree", &ok("ivtree/node.py:12:    max_end = 3\nivtree/README:1: x")),
            [(ActionKind::Search, Some("ivtree/node.py".into()), true)]
        );
        assert_eq!(
            acts("cd ivtree && grep -n max_end *.py", &ok("node.py:12:    max_end = 3")),
            [(ActionKind::Search, Some("ivtree/node.py".into()), true)]
        );
        assert_eq!(
            acts("grep max_end ivtree/node.py", &ok("    max_end = 3")),
            [(ActionKind::Search, Some("ivtree/node.py".into()), true)]
        );
        assert_eq!(acts("grep -rl max_end .", &ok("./ivtree/node.py")), [(ActionKind::List, None, true)]);
        assert_eq!(acts("grep nothing ivtree/node.py", "exit status 1\n(no output)"), [(ActionKind::Search, None, true)]);
        assert_eq!(acts("cat ivtree/node.py | grep -n max", &ok("12: max")), [read("ivtree/node.py"), (ActionKind::Search, None, true)]);
    }

    #[test]
    fn git_inspection_and_listings() {
        let diff = "diff --git a/ivtree/tree.py b/ivtree/tree.py\nindex 1..2 100644\n--- a/ivtree/tree.py\n+++ b/ivtree/tree.py\n@@ -1 +1 @@\n-a\n+b";
        let actions = command_actions("git status --short && git diff", &ok(diff), &tree());
        assert_eq!(actions[0], FileAction::bare(ActionKind::List, "git status", true));
        assert_eq!(actions[1], FileAction::on(ActionKind::Read, "ivtree/tree.py", "git diff", true));
        assert!(inspects_inherited(&actions, &BTreeSet::new()));
        assert_eq!(acts("git diff --stat", &ok(" ivtree/tree.py | 2 +-")), [(ActionKind::List, None, true)]);
        assert_eq!(
            acts("ls ivtree && find . -name '*.py'", &ok("node.py")),
            [(ActionKind::List, Some("ivtree".into()), true), (ActionKind::List, Some("".into()), true),]
        );
        let outside_repo = "exit status 128\n--- stderr ---\nfatal: not a git repository (or any of the parent directories): .git";
        assert!(!inspects_inherited(&command_actions("git status", outside_repo, &tree()), &BTreeSet::new()));
        assert_eq!(
            acts("git checkout -- ivtree/tree.py", "exit status 0\n(no output)"),
            [(ActionKind::Edit, Some("ivtree/tree.py".into()), true)]
        );
    }

    #[test]
    fn edits_copies_and_runs() {
        assert_eq!(
            acts(
                "sed -i 's/a/b/' ivtree/node.py && cp ivtree/node.py /workspace/backup.py && python3 -m unittest",
                "exit status 0\n(no output)"
            ),
            [
                (ActionKind::Edit, Some("ivtree/node.py".into()), true),
                (ActionKind::Write, Some("backup.py".into()), true),
                (ActionKind::Run, None, true),
            ]
        );
        assert_eq!(
            acts("tee -a README.md < /dev/null; mv README.md docs/", "exit status 0\n(no output)"),
            [(ActionKind::Edit, Some("README.md".into()), true), (ActionKind::Write, Some("docs/README.md".into()), true)]
        );
    }

    #[test]
    fn truncated_and_odd_commands_never_panic() {
        // Regression: a wrapper flag that takes a value at the very end (`timeout -k`) sliced
        // past the arguments.
        let odd = [
            "timeout -k",
            "nice -n",
            "xargs -I",
            "xargs -n 1 cat",
            "env",
            "sudo",
            "cd",
            "cd ..",
            "cd ../..; cat README.md",
            "git -C",
            "git",
            "git -C ivtree diff",
            "sed -i",
            "find . -exec",
            "find . -exec grep -n x {} +",
            "cp a",
            "mv",
            "cat <<",
            "cat <<EOF",
            "cat <<'E'\nbody",
            "echo ${",
            "echo `",
            "echo $(",
            "$((1+",
            "cat [",
            "cat ivtree/[!n]*.py",
            "cat x[a-",
            "for",
            "for x in",
            "for x in a b; do",
            "while",
            "case x in a) cat a;; esac",
            "{ cat a",
            "( cat a",
            "f() { cat a; }",
            "a=1",
            "> out",
            "2>&1",
            "cat ~",
            "cat /",
            "cat /workspace",
            "cat \\",
            "cat \"unclosed",
            "bash -c",
            "sh -c 'cat ivtree/node.py",
            "ls -la |",
            "| cat",
            "&& cat a",
            ";;",
            "cat {a,b",
            "cat {,}",
            "cat {a,{b,c}}.py",
            "tee",
            "touch -t",
        ];
        for command in odd {
            for output in ["", "exit status 0", "exit status 1\n--- stderr ---\nx: No such file", "killed: timed out after 1 s"] {
                let _ = command_actions(command, output, &tree());
            }
        }
        // Brace lists nest; a brace without a comma stays literal.
        assert_eq!(
            acts("cat ivtree/{node,{tree,__init__}}.py {x}", &ok("...")),
            [read("ivtree/node.py"), read("ivtree/tree.py"), read("ivtree/__init__.py"), (ActionKind::Read, Some("{x}".into()), true),]
        );
    }

    #[test]
    fn written_files_join_the_tree_for_later_globs() {
        let events = [
            call(1, "write_text", serde_json::json!({"path": "notes/a.md", "content": "x"}), "wrote 1 bytes", false),
            call(2, "bash", serde_json::json!({"command": "cat notes/*.md"}), &ok("x"), false),
            call(3, "read_text", serde_json::json!({"path": "./ivtree/node.py"}), "1 class Node", false),
            call(4, "read_text", serde_json::json!({"path": "ivtree/gone.py"}), "`ivtree/gone.py` does not exist", true),
            call(5, "bash", serde_json::json!({"command": "cat README.md"}), "not run: the work ended", true),
        ]
        .concat();
        let actions = file_actions(&events, &tree());
        assert_eq!(actions.len(), 4, "{actions:?}");
        let quoted = call(6, "read_text", serde_json::json!({"path": r#""caf\303\251 \"x\".txt""#}), "1 x", false);
        assert_eq!(file_actions(&quoted, &tree()), [FileAction::on(ActionKind::Read, "café \"x\".txt", "read_text", true)]);
        assert!(actions[1].opens("notes/a.md"), "{actions:?}");
        assert!(actions[2].opens("ivtree/node.py"));
        assert_eq!(actions[3], FileAction::on(ActionKind::Read, "ivtree/gone.py", "read_text", false));
    }

    #[test]
    fn vendor_cli_shell_tools_are_read_like_bash() {
        let events = [
            call(1, "Bash", serde_json::json!({"command": "cat README.md"}), &ok("hello"), false),
            call(2, "exec_command", serde_json::json!({"cmd": "cat ivtree/node.py"}), &ok("class Node"), false),
            call(3, "Bash", serde_json::json!({"command": "cat ivtree/tree.py"}), "exit status 1", true),
            call(4, "exec_command", serde_json::json!({"command": "cat ivtree/tree.py"}), &ok("x"), false),
        ]
        .concat();
        let actions = file_actions(&events, &tree());
        assert_eq!(
            actions.iter().map(|a| (a.kind, a.path.clone(), a.ok)).collect::<Vec<_>>(),
            [(ActionKind::Read, Some("README.md".into()), true), (ActionKind::Read, Some("ivtree/node.py".into()), true)]
        );
    }

    fn call(turn: u32, tool: &str, arguments: serde_json::Value, output: &str, is_error: bool) -> Vec<Event> {
        let event = |kind| Event { seq: u64::from(turn), ts_ms: 0, elapsed_ms: 0, kind };
        let id = format!("c{turn}");
        vec![
            event(EventKind::AgentTurn {
                turn,
                text: None,
                tool_calls: vec![specgap_protocol::event::ToolCall { id: id.clone(), tool: tool.into(), arguments }],
                usage: None,
            }),
            event(EventKind::ToolResult { call_id: id, tool: tool.into(), output: output.into(), is_error }),
        ]
    }

    /// A `file_reads` event for call `c{turn}`.
    fn reads(turn: u32, read: &[&str], shown: &[&str], unmeasured: &str) -> Event {
        let v = |files: &[&str]| files.iter().map(|f| f.to_string()).collect();
        Event {
            seq: u64::from(turn),
            ts_ms: 0,
            elapsed_ms: 0,
            kind: EventKind::FileReads { call_id: format!("c{turn}"), read: v(read), shown: v(shown), unmeasured: unmeasured.into() },
        }
    }

    /// Issue 24 item 4: where every shell command was measured, opened and inspected come from
    /// the measurements (a `grep -r` reads everything and opens what it printed; `xargs cat`
    /// opens what the text reader cannot see), the harness's own tools as before; one
    /// unmeasured command leaves the episode to the text reader, with the reason.
    #[test]
    fn measured_reads_replace_the_text_reading_and_fall_back_with_the_reason() {
        let bash = |turn, command: &str, output: &str| call(turn, "bash", serde_json::json!({ "command": command }), output, false);
        let mut events = bash(1, "grep -rn insert ivtree", "exit status 0\n--- stdout ---\nivtree/tree.py:3:    def insert(self):");
        events.push(reads(1, &["ivtree/__init__.py", "ivtree/node.py", "ivtree/tree.py"], &["ivtree/tree.py"], ""));
        events.extend(bash(2, "echo ivtree/node.py | xargs cat", "exit status 0\n--- stdout ---\nclass Node:"));
        events.push(reads(2, &["ivtree/node.py"], &["ivtree/node.py"], ""));
        events.extend(call(3, "read_text", serde_json::json!({ "path": "README.md" }), "# ivtree", false));
        events.extend(bash(4, "false && cat tests/test_tree.py", "exit status 1\n(no output)"));
        events.push(reads(4, &[], &[], ""));
        let measured = measured_reads(&events, &tree()).unwrap();
        let set = |files: &[&str]| files.iter().map(|f| f.to_string()).collect::<BTreeSet<String>>();
        assert_eq!(
            measured,
            Measured {
                read: set(&["README.md", "ivtree/__init__.py", "ivtree/node.py", "ivtree/tree.py"]),
                opened: set(&["README.md", "ivtree/node.py", "ivtree/tree.py"]),
            }
        );
        let by_text = opened_files(&file_actions(&events, &tree()), &set(&["ivtree/node.py", "ivtree/__init__.py"]));
        assert_eq!(by_text, set(&[]), "the text reader cannot follow xargs");
        assert_eq!(measured.opened_of(&set(&["ivtree/node.py", "ivtree/__init__.py"])), set(&["ivtree/node.py"]));
        assert!(measured.inspects(&[], &set(&["ivtree/__init__.py"])), "read at all is inspected");
        assert!(!measured.inspects(&[], &set(&["tests/test_tree.py"])));

        let mut unmeasured = bash(1, "cat README.md", "exit status 0\n--- stdout ---\n# ivtree");
        unmeasured.push(reads(1, &[], &[], "fanotify is unavailable: Operation not permitted (os error 1)"));
        assert_eq!(
            measured_reads(&unmeasured, &tree()),
            Err("reads not measured: fanotify is unavailable: Operation not permitted (os error 1)".into())
        );
        let old = bash(1, "cat README.md", "exit status 0\n--- stdout ---\n# ivtree");
        assert_eq!(measured_reads(&old, &tree()), Err("no measured reads for the `bash` call c1".into()));
    }
}
