//! Which files an episode's actions exposed to the agent, and whether it inspected the
//! changes it inherited: the rules of seed 001 App. D.2 ("Left-out files": opened;
//! "Inspection of inherited changes") applied to a trajectory's tool calls and their outputs.
//!
//! ## Rules (decisions recorded in docs/decisions.md, "Report: opened files")
//!
//! A file is **opened** by
//! - a `read_text` call on its path (the harness's editor view);
//! - a `bash` / `run_experiment` command one of whose pipeline stages runs a content-reading
//!   program ([`CONTENT_READERS`]: `cat`, `head`, `tail`, `sed` without `-i`, …) with the file
//!   as an operand;
//! - a `grep` / `rg` / `ag` / `ack` / `git grep` stage that is not a listing or counting call
//!   (`-l`, `-L`, `-c`, `-q`, `--files`, `--files-with-matches`, …) and whose output shows a
//!   line of the file (`<path>:` at a line start), or that names the file as an operand and
//!   printed something;
//! - a `git diff` / `git show` / `git log -p` stage without `--stat`, `--name-only`,
//!   `--name-status`, `--numstat` or `--shortstat` whose output carries the file's hunk
//!   (`diff --git a/<path>` followed by `@@`).
//!
//! Listing paths (`ls`, `find`, `rg --files`, `grep -l`, `list_files`), `git status` and
//! `git diff --stat` never open a file. Paths match when equal after removing a leading `./`
//! or when an operand ends in `/<path>` (an absolute path inside the sandbox).
//!
//! A continuation **inspects inherited changes** when a command stage runs `git status` or
//! `git diff`, or when it opens a file the predecessor modified.

use std::collections::{BTreeSet, HashMap};

use specgap_protocol::event::{Event, EventKind};
use specgap_protocol::path_quote;

/// Programs whose output is (part of) the content of their file operands.
pub const CONTENT_READERS: &[&str] = &[
    "cat", "tac", "head", "tail", "less", "more", "nl", "sed", "awk", "gawk", "bat", "batcat",
    "xxd", "od", "hexdump", "strings", "cut", "sort", "uniq", "diff", "view", "column",
];

/// Search programs whose matching lines show file content unless listing flags are given.
pub const SEARCHERS: &[&str] = &["grep", "egrep", "fgrep", "rg", "ag", "ack"];

/// Flags that make a search list paths or counts instead of content.
const LISTING_FLAGS: &[&str] = &[
    "-l",
    "-L",
    "-c",
    "-q",
    "--files",
    "--files-with-matches",
    "--files-without-match",
    "--count",
    "--quiet",
    "--count-matches",
];

/// Flags that make `git diff` / `git show` / `git log` print no hunk.
const SUMMARY_FLAGS: &[&str] = &[
    "--stat",
    "--name-only",
    "--name-status",
    "--numstat",
    "--shortstat",
    "--summary",
];

/// One executed action: a tool call with its arguments and the output the agent saw.
#[derive(Debug, Clone, PartialEq)]
pub struct Action {
    /// Tool name.
    pub tool: String,
    /// `command` for shell tools, `path` for `read_text`, empty otherwise.
    pub argument: String,
    /// The tool result's text (empty when the trajectory has none).
    pub output: String,
}

/// The actions of a trajectory, in order: every tool call paired with its result.
pub fn actions(events: &[Event]) -> Vec<Action> {
    let mut outputs: HashMap<&str, &str> = HashMap::new();
    for event in events {
        if let EventKind::ToolResult {
            call_id, output, ..
        } = &event.kind
        {
            outputs.insert(call_id.as_str(), output.as_str());
        }
    }
    let mut out = Vec::new();
    for event in events {
        if let EventKind::AgentTurn { tool_calls, .. } = &event.kind {
            for call in tool_calls {
                let key = match call.tool.as_str() {
                    "read_text" => "path",
                    _ => "command",
                };
                let argument = call
                    .arguments
                    .get(key)
                    .and_then(|v| v.as_str())
                    .unwrap_or_default()
                    .to_string();
                let output = outputs
                    .get(call.id.as_str())
                    .copied()
                    .unwrap_or_default()
                    .to_string();
                out.push(Action {
                    tool: call.tool.clone(),
                    argument,
                    output,
                });
            }
        }
    }
    out
}

/// The subset of `files` (workspace-relative paths) that some action opened.
pub fn opened_files(actions: &[Action], files: &BTreeSet<String>) -> BTreeSet<String> {
    let mut opened = BTreeSet::new();
    for action in actions {
        for file in files {
            if !opened.contains(file) && opens(action, file) {
                opened.insert(file.clone());
            }
        }
    }
    opened
}

/// Whether the actions inspect the inherited changes: `git status` / `git diff`, or opening one
/// of `predecessor_files`.
pub fn inspects_inherited(actions: &[Action], predecessor_files: &BTreeSet<String>) -> bool {
    let runs_git_inspection = actions.iter().filter(|a| is_shell(&a.tool)).any(|a| {
        stages(&a.argument).iter().any(|stage| {
            let words = program_words(stage);
            words.first().is_some_and(|p| p == "git")
                && git_subcommand(&words[1..])
                    .is_some_and(|(sub, _)| sub == "status" || sub == "diff")
        })
    });
    runs_git_inspection || !opened_files(actions, predecessor_files).is_empty()
}

fn is_shell(tool: &str) -> bool {
    tool == "bash" || tool == "run_experiment"
}

/// Whether one action exposes the content of `file`.
pub fn opens(action: &Action, file: &str) -> bool {
    if action.tool == "read_text" {
        // A quoted path (as `list_files` shows names that are not plain text) names its bytes.
        let path = path_quote::unquote(&action.argument)
            .map_or_else(|| action.argument.clone(), |b| String::from_utf8_lossy(&b).into_owned());
        return same_path(&path, file);
    }
    if !is_shell(&action.tool) {
        return false;
    }
    stages(&action.argument)
        .iter()
        .any(|stage| stage_opens(stage, file, &action.output))
}

fn stage_opens(stage: &str, file: &str, output: &str) -> bool {
    let words = program_words(stage);
    let Some(program) = words.first() else {
        return false;
    };
    let operands = || words.iter().skip(1).filter(|w| !w.starts_with('-'));
    if program == "git" {
        return git_stage_opens(&words[1..], file, output);
    }
    if SEARCHERS.contains(&program.as_str()) {
        return search_opens(&words[1..], file, output);
    }
    if !CONTENT_READERS.contains(&program.as_str()) {
        return false;
    }
    if program == "sed"
        && words
            .iter()
            .any(|w| w.starts_with("-i") || w == "--in-place")
    {
        return false;
    }
    operands().any(|w| same_path(w, file))
}

fn search_opens(args: &[String], file: &str, output: &str) -> bool {
    if args.iter().any(|a| {
        LISTING_FLAGS.contains(&a.as_str()) || is_short_flag_with(a, &['l', 'L', 'c', 'q'])
    }) {
        return false;
    }
    if output.trim().is_empty() {
        return false;
    }
    let named = args
        .iter()
        .filter(|a| !a.starts_with('-'))
        .any(|a| same_path(a, file));
    named || output_shows_lines_of(output, file)
}

/// The git subcommand and the index of its first argument, skipping global options (`-C
/// <dir>`, `-c <key=value>`, `--git-dir <dir>`, `--work-tree <dir>`, other flags).
fn git_subcommand(args: &[String]) -> Option<(&str, usize)> {
    let mut i = 0;
    while i < args.len() {
        let arg = args[i].as_str();
        if ["-C", "-c", "--git-dir", "--work-tree", "--namespace"].contains(&arg) {
            i += 2;
        } else if arg.starts_with('-') {
            i += 1;
        } else {
            return Some((arg, i + 1));
        }
    }
    None
}

fn git_stage_opens(args: &[String], file: &str, output: &str) -> bool {
    let Some((sub, first_arg)) = git_subcommand(args) else {
        return false;
    };
    match sub {
        "grep" => search_opens(&args[first_arg..], file, output),
        "diff" | "show" | "log" => {
            if args
                .iter()
                .any(|a| SUMMARY_FLAGS.iter().any(|f| a.starts_with(f)))
            {
                return false;
            }
            output_shows_hunk_of(output, file)
        }
        _ => false,
    }
}

/// `-l`, `-il`, `-nc`…: a combined short flag containing one of `letters`.
fn is_short_flag_with(arg: &str, letters: &[char]) -> bool {
    arg.starts_with('-')
        && !arg.starts_with("--")
        && arg[1..].chars().all(char::is_alphabetic)
        && arg[1..].chars().any(|c| letters.contains(&c))
}

fn output_shows_lines_of(output: &str, file: &str) -> bool {
    output.lines().any(|line| {
        line.split_once(':')
            .is_some_and(|(path, _)| same_path(path, file))
    })
}

fn output_shows_hunk_of(output: &str, file: &str) -> bool {
    let header = format!("diff --git a/{file} b/{file}");
    let mut in_section = false;
    for line in output.lines() {
        if line.starts_with("diff --git ") {
            in_section = line.trim_end() == header;
        } else if in_section && line.starts_with("@@") {
            return true;
        }
    }
    false
}

/// Whether a command operand names `file` (workspace-relative).
pub fn same_path(operand: &str, file: &str) -> bool {
    let operand = operand.trim_matches(|c| c == '"' || c == '\'');
    let operand = operand.strip_prefix("./").unwrap_or(operand);
    let file = file.strip_prefix("./").unwrap_or(file);
    !file.is_empty() && (operand == file || operand.ends_with(&format!("/{file}")))
}

/// Splits a shell command into pipeline / list stages at `|`, `||`, `&&`, `;` and newlines
/// (quotes are respected; subshells and substitutions are read as plain text).
fn stages(command: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut quote: Option<char> = None;
    let mut chars = command.chars().peekable();
    while let Some(c) = chars.next() {
        match quote {
            Some(q) => {
                current.push(c);
                if c == q {
                    quote = None;
                }
            }
            None => match c {
                '\'' | '"' => {
                    quote = Some(c);
                    current.push(c);
                }
                '|' | ';' | '\n' | '&' => {
                    if c == '&' && chars.peek() != Some(&'&') {
                        current.push(c);
                        continue;
                    }
                    if matches!(c, '|' | '&') && chars.peek() == Some(&c) {
                        chars.next();
                    }
                    out.push(std::mem::take(&mut current));
                }
                _ => current.push(c),
            },
        }
    }
    out.push(current);
    out.into_iter()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

/// The words of a stage with leading variable assignments, `sudo`, `env`, `time`, `command`
/// and `xargs` removed, quotes stripped, the program reduced to its base name.
fn program_words(stage: &str) -> Vec<String> {
    let mut words = split_words(stage);
    while let Some(first) = words.first() {
        let is_assignment =
            first.contains('=') && !first.starts_with('-') && !first.starts_with('=');
        if is_assignment
            || ["sudo", "env", "time", "command", "xargs", "exec", "nohup"]
                .contains(&first.as_str())
        {
            words.remove(0);
        } else {
            break;
        }
    }
    if let Some(first) = words.first_mut()
        && let Some((_, base)) = first.rsplit_once('/')
    {
        *first = base.to_string();
    }
    words
}

fn split_words(stage: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut current = String::new();
    let mut quote: Option<char> = None;
    let mut has_word = false;
    for c in stage.chars() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => current.push(c),
            None if c == '\'' || c == '"' => {
                quote = Some(c);
                has_word = true;
            }
            None if c.is_whitespace() || c == '<' || c == '>' => {
                if has_word || !current.is_empty() {
                    words.push(std::mem::take(&mut current));
                    has_word = false;
                }
            }
            None => current.push(c),
        }
    }
    if has_word || !current.is_empty() {
        words.push(current);
    }
    words
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shell(command: &str, output: &str) -> Action {
        Action {
            tool: "bash".into(),
            argument: command.into(),
            output: output.into(),
        }
    }

    #[test]
    fn content_readers_open_their_operands() {
        assert!(opens(&shell("cat src/enc.go", "package enc"), "src/enc.go"));
        assert!(opens(
            &shell("cd /workspace && sed -n '1,40p' ./src/enc.go", "x"),
            "src/enc.go"
        ));
        assert!(opens(
            &shell("head -n 5 /workspace/src/enc.go | nl", "x"),
            "src/enc.go"
        ));
        assert!(!opens(
            &shell("sed -i 's/a/b/' src/enc.go", ""),
            "src/enc.go"
        ));
        assert!(!opens(&shell("cat src/other.go", "x"), "src/enc.go"));
        assert!(opens(
            &Action {
                tool: "read_text".into(),
                argument: "./src/enc.go".into(),
                output: String::new()
            },
            "src/enc.go"
        ));
        let quoted = Action { tool: "read_text".into(), argument: r#""caf\303\251 \"x\".txt""#.into(), output: String::new() };
        assert!(opens(&quoted, "café \"x\".txt"));
    }

    #[test]
    fn listings_never_open() {
        assert!(!opens(&shell("ls src", "enc.go"), "src/enc.go"));
        assert!(!opens(
            &shell("find . -name '*.go'", "./src/enc.go"),
            "src/enc.go"
        ));
        assert!(!opens(&shell("rg --files", "src/enc.go"), "src/enc.go"));
        assert!(!opens(
            &shell("grep -rl key src", "src/enc.go"),
            "src/enc.go"
        ));
        assert!(!opens(&shell("git status", " M src/enc.go"), "src/enc.go"));
        assert!(!opens(
            &shell("git diff --stat", " src/enc.go | 2 +-"),
            "src/enc.go"
        ));
    }

    #[test]
    fn searches_and_diffs_open_when_they_show_content() {
        assert!(opens(
            &shell("grep -rn key src", "src/enc.go:12: key := 3"),
            "src/enc.go"
        ));
        assert!(!opens(
            &shell("grep -rn key src", "src/other.go:1: key"),
            "src/enc.go"
        ));
        assert!(opens(
            &shell("grep key src/enc.go", "key := 3"),
            "src/enc.go"
        ));
        assert!(!opens(&shell("grep key src/enc.go", ""), "src/enc.go"));
        let diff = "diff --git a/src/enc.go b/src/enc.go\n--- a/src/enc.go\n+++ b/src/enc.go\n@@ -1 +1 @@\n-a\n+b\n";
        assert!(opens(&shell("git diff", diff), "src/enc.go"));
        assert!(!opens(&shell("git diff", diff), "src/other.go"));
    }

    #[test]
    fn inspection_of_inherited_changes() {
        let files: BTreeSet<String> = ["src/enc.go".to_string()].into();
        assert!(inspects_inherited(
            &[shell("git status --short", "")],
            &files
        ));
        assert!(inspects_inherited(&[shell("git -C . diff", "")], &files));
        assert!(inspects_inherited(&[shell("cat src/enc.go", "x")], &files));
        assert!(!inspects_inherited(
            &[shell("ls && git log --oneline", "x")],
            &files
        ));
    }

    #[test]
    fn stages_split_on_operators_outside_quotes() {
        assert_eq!(stages("a | b && c; d || e"), ["a", "b", "c", "d", "e"]);
        assert_eq!(stages("echo 'x | y' && cat f"), ["echo 'x | y'", "cat f"]);
        assert_eq!(stages("sleep 1 & cat f"), ["sleep 1 & cat f"]);
    }
}
