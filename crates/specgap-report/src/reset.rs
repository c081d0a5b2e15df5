//! Whether a continuation reset the inherited changes to the base commit (seed 001 App. B.1:
//! "an evaluated agent can discard the inherited changes and reimplement the task from the
//! base commit"; §5.4 "Discarded all"; issue 24 item 4; docs/decisions.md "Report: Discarded
//! all"). A continuation that resets every inherited change and then rewrites the task may
//! write some of the predecessor's lines again, so Kept > 0 alone does not rule a discard out.
//!
//! The commands of the shell tools are read with [`crate::shell`]; a command counts only when
//! its result says it exited with status 0. What each form resets:
//!
//! | command | resets |
//! | --- | --- |
//! | `git reset --hard [REV]`, `git checkout [-f] [REV] [--] .`, `git checkout -f`, `git restore [-W/-S…] [--source REV] .`, `git stash [push] [-u…]` | every tracked change (the predecessor's modified and deleted files) |
//! | `git clean -f…`, `git stash -u` / `--include-untracked` / `-a` / `--all` | every untracked file (the predecessor's added files) |
//! | `git checkout [REV] [--] P…`, `git restore … P…` | the tracked files at or under each `P` |
//! | `rm [-r/-f…] P…` | the files at or under each `P` |
//!
//! `git stash pop` / `apply` after a stash brings the stashed changes back (the stash no longer
//! counts). Paths are taken relative to the workspace root (a `cd` is not followed: a relative
//! path after one is ignored, which can only miss a reset). The episode reset everything when
//! every file the predecessor changed is covered.

use std::collections::BTreeSet;

use specgap_protocol::event::{Event, EventKind};

use crate::shell::{self, Command, Script};

/// What the commands so far have reset.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
struct Resets {
    /// Every tracked change (by a reset, a checkout or restore of `.`, or a stash).
    tracked: bool,
    /// Whether `tracked` came from a stash only (undone by a later pop / apply).
    tracked_by_stash: bool,
    /// Every untracked file.
    untracked: bool,
    /// Whether `untracked` came from a stash only.
    untracked_by_stash: bool,
    /// Tracked files at or under these paths.
    tracked_paths: BTreeSet<String>,
    /// Any files at or under these paths (removed).
    removed_paths: BTreeSet<String>,
}

/// Whether the episode's shell commands reset every inherited change: each of `modified`
/// (tracked files the predecessor changed or deleted) and `added` (files it created) is
/// covered by a successful reset (module guide).
pub fn resets_all_inherited(events: &[Event], modified: &BTreeSet<String>, added: &BTreeSet<String>) -> bool {
    if modified.is_empty() && added.is_empty() {
        return false;
    }
    let mut resets = Resets::default();
    for command in successful_commands(events) {
        resets.script(&shell::parse(command));
    }
    modified.iter().all(|f| resets.tracked || under(&resets.tracked_paths, f) || under(&resets.removed_paths, f))
        && added.iter().all(|f| resets.untracked || under(&resets.removed_paths, f))
}

/// The command lines of shell-tool calls whose result reports exit status 0, in order.
fn successful_commands(events: &[Event]) -> Vec<&str> {
    let mut ok: BTreeSet<&str> = BTreeSet::new();
    for event in events {
        if let EventKind::ToolResult { call_id, output, is_error: false, .. } = &event.kind
            && output.starts_with("exit status 0\n")
        {
            ok.insert(call_id.as_str());
        }
    }
    let mut commands = Vec::new();
    for event in events {
        let EventKind::AgentTurn { tool_calls, .. } = &event.kind else { continue };
        for call in tool_calls {
            let key = match call.tool.as_str() {
                "bash" | "run_experiment" | "Bash" => "command",
                "exec_command" => "cmd",
                _ => continue,
            };
            if ok.contains(call.id.as_str())
                && let Some(command) = call.arguments.get(key).and_then(|v| v.as_str())
            {
                commands.push(command);
            }
        }
    }
    commands
}

/// Whether `file` is one of `paths` or under one of them (`.` is the root).
fn under(paths: &BTreeSet<String>, file: &str) -> bool {
    paths.iter().any(|p| p.is_empty() || p == file || file.strip_prefix(p.as_str()).is_some_and(|rest| rest.starts_with('/')))
}

/// A path as typed, relative to the workspace root: `./a/b/` → `a/b`, `.` → ``; `None` for an
/// absolute path outside `/workspace`, `~` or `..`.
fn root_relative(typed: &str) -> Option<String> {
    let rest = match typed.strip_prefix("/workspace") {
        Some(rest) if rest.is_empty() || rest.starts_with('/') => rest,
        Some(_) => return None,
        None if typed.starts_with('/') || typed.starts_with('~') => return None,
        None => typed,
    };
    let parts: Vec<&str> = rest.split('/').filter(|p| !p.is_empty() && *p != ".").collect();
    if parts.contains(&"..") {
        return None;
    }
    Some(parts.join("/"))
}

impl Resets {
    fn script(&mut self, script: &Script) {
        for pipeline in &script.pipelines {
            for command in &pipeline.commands {
                match command {
                    Command::Simple(simple) => {
                        let words: Option<Vec<String>> = simple.words.iter().map(|w| w.literal()).collect();
                        if let Some(words) = words {
                            self.words(&words);
                        }
                    }
                    Command::Subshell(body, _) | Command::Group(body, _) | Command::For { body, .. } => self.script(body),
                }
            }
        }
    }

    /// One simple command's literal words.
    fn words(&mut self, words: &[String]) {
        let Some((program, args)) = words.split_first() else { return };
        match program.as_str() {
            "git" => self.git(args),
            "rm" => {
                let paths = args.iter().filter(|a| !a.starts_with('-')).filter_map(|a| root_relative(a));
                self.removed_paths.extend(paths);
            }
            _ => {}
        }
    }

    /// A git command's arguments (after `git`; leading `-c k=v` / `-C dir` options skipped).
    fn git(&mut self, args: &[String]) {
        let mut at = 0;
        while at < args.len() && args[at].starts_with('-') {
            at += if matches!(args[at].as_str(), "-c" | "-C") { 2 } else { 1 };
        }
        let Some((sub, rest)) = args.get(at..).and_then(|a| a.split_first()) else { return };
        let flags: Vec<&str> = rest.iter().map(String::as_str).filter(|a| a.starts_with('-')).collect();
        let operands: Vec<&str> = rest.iter().map(String::as_str).filter(|a| !a.starts_with('-')).collect();
        match sub.as_str() {
            "reset" if flags.contains(&"--hard") => self.all_tracked(false),
            "checkout" => self.checkout(rest, &flags),
            "restore" => self.restore(rest),
            "stash" => self.stash(&operands, &flags),
            "clean" if flags.iter().any(|f| *f == "--force" || (!f.starts_with("--") && f.contains('f'))) => {
                self.untracked = true;
                self.untracked_by_stash = false;
            }
            _ => {}
        }
    }

    fn all_tracked(&mut self, by_stash: bool) {
        if !self.tracked || !by_stash {
            self.tracked_by_stash = by_stash;
        }
        self.tracked = true;
    }

    /// `git checkout`: `-f` alone, `.` or paths after an optional revision and `--`.
    fn checkout(&mut self, rest: &[String], flags: &[&str]) {
        let dashdash = rest.iter().position(|a| a == "--");
        let paths: Vec<&str> = match dashdash {
            Some(i) => rest[i + 1..].iter().map(String::as_str).collect(),
            // Without `--`: a branch switch unless an operand is a path we can tell (`.`, or the
            // second operand after a revision).
            None => {
                let operands: Vec<&str> = rest.iter().map(String::as_str).filter(|a| !a.starts_with('-')).collect();
                match operands.as_slice() {
                    [] if flags.iter().any(|f| *f == "-f" || *f == "--force") => {
                        self.all_tracked(false);
                        return;
                    }
                    [only] if *only == "." => vec!["."],
                    [_, paths @ ..] => paths.to_vec(),
                    _ => Vec::new(),
                }
            }
        };
        self.tracked_paths_or_all(&paths);
    }

    /// `git restore`: every operand not an option (or the value of `--source` / `-s`) is a path.
    fn restore(&mut self, rest: &[String]) {
        let mut paths = Vec::new();
        let mut skip = false;
        for arg in rest {
            if skip {
                skip = false;
            } else if arg == "--source" || arg == "-s" {
                skip = true;
            } else if !arg.starts_with('-') {
                paths.push(arg.as_str());
            }
        }
        self.tracked_paths_or_all(&paths);
    }

    fn tracked_paths_or_all(&mut self, paths: &[&str]) {
        for path in paths.iter().filter_map(|p| root_relative(p)) {
            if path.is_empty() {
                self.all_tracked(false);
            } else {
                self.tracked_paths.insert(path);
            }
        }
    }

    /// `git stash [push|save] [-u|-a]` stashes; `git stash pop|apply` brings it back.
    fn stash(&mut self, operands: &[&str], flags: &[&str]) {
        match operands.first().copied() {
            None | Some("push" | "save") => {
                self.all_tracked(true);
                if flags.iter().any(|f| matches!(*f, "-u" | "--include-untracked" | "-a" | "--all")) && !self.untracked {
                    self.untracked = true;
                    self.untracked_by_stash = true;
                }
            }
            Some("pop" | "apply") => {
                if self.tracked && self.tracked_by_stash {
                    self.tracked = false;
                }
                if self.untracked && self.untracked_by_stash {
                    self.untracked = false;
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use specgap_protocol::event::ToolCall;

    fn episode(commands: &[(&str, i32)]) -> Vec<Event> {
        let mut events = Vec::new();
        for (i, (command, status)) in commands.iter().enumerate() {
            let id = format!("c{i}");
            let call = ToolCall { id: id.clone(), tool: "bash".into(), arguments: json!({ "command": command }) };
            let event = |kind| Event { seq: 0, ts_ms: 0, elapsed_ms: 0, kind };
            events.push(event(EventKind::AgentTurn { turn: i as u32 + 1, text: None, tool_calls: vec![call], usage: None }));
            events.push(event(EventKind::ToolResult {
                call_id: id,
                tool: "bash".into(),
                output: format!("exit status {status}\n(no output)"),
                is_error: false,
            }));
        }
        events
    }

    fn set(files: &[&str]) -> BTreeSet<String> {
        files.iter().map(|f| f.to_string()).collect()
    }

    #[test]
    fn every_reset_form_covers_what_git_resets_and_nothing_more() {
        let modified = set(&["src/a.py", "src/b.py"]);
        let added = set(&["notes.md"]);
        let cases: &[(&[(&str, i32)], bool)] = &[
            (&[("git reset --hard && git clean -fd", 0)], true),
            (&[("git reset --hard HEAD", 0), ("rm -f notes.md", 0)], true),
            (&[("git checkout -- . && git clean -f", 0)], true),
            (&[("git checkout .; rm notes.md", 0)], true),
            (&[("git restore --staged --worktree . && git clean -fdx", 0)], true),
            (&[("git stash -u", 0)], true),
            (&[("git stash --include-untracked", 0), ("git stash pop", 0)], false),
            (&[("git checkout HEAD -- src/a.py src/b.py && rm -rf ./notes.md", 0)], true),
            (&[("git checkout -- src/", 0), ("rm /workspace/notes.md", 0)], true),
            (&[("git reset --hard", 0)], false),
            (&[("git checkout -- src/a.py && git clean -f", 0)], false),
            (&[("git reset --hard && git clean -fd", 1)], false),
            (&[("git reset --soft HEAD~1 && git clean -n", 0)], false),
            (&[("git clean -fd && git checkout main", 0)], false),
            (&[("echo git reset --hard; git diff", 0)], false),
        ];
        for (commands, expected) in cases {
            assert_eq!(resets_all_inherited(&episode(commands), &modified, &added), *expected, "{commands:?}");
        }
        assert!(!resets_all_inherited(&episode(&[("git reset --hard", 0)]), &set(&[]), &set(&[])), "nothing inherited");
    }
}
