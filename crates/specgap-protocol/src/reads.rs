//! When a file that a command's processes read counts as *opened*: its content reached the
//! agent (seed 001 App. D.2: "A continuation opens a file … if one of its actions exposes the
//! file's contents to the agent"; issue 24 item 4; docs/decisions.md "Opened and inspected,
//! measured").
//!
//! The harness measures which files were read (*inspected*, `specgap_sandbox::reads`); this
//! module decides, for each, whether the observation returned to the agent (the tool result as
//! the agent received it, cuts included) shows the file's content:
//!
//! - lines are compared with surrounding white space removed; blank lines never count;
//! - a file line of at least [`DISTINCT_LINE_CHARS`] characters is *shown* when some line of
//!   the observation ends with it — which holds for `cat`, `cat -n`, `nl`, `head`, `sed -n`,
//!   `grep -n` (`path:3:` before the line), `git blame`, a diff's `+` / `-` / context lines
//!   and an editor view's line numbers;
//! - the file is opened when one of its lines of that length is shown; a file with no such
//!   line (a short file) is opened when each of its non-blank lines, up to the first
//!   [`SHORT_FILE_LINES`], ends a line of the observation;
//! - a file with no non-blank line is never opened (nothing of it can reach the agent).

use std::collections::HashMap;

/// The fewest characters a trimmed line needs to count on its own: shorter lines (`}`, `pass`,
/// `else:`) occur in almost every file and would open files whose content never showed.
pub const DISTINCT_LINE_CHARS: usize = 6;

/// How many non-blank lines of a short file (no line of [`DISTINCT_LINE_CHARS`]) must all be
/// shown.
pub const SHORT_FILE_LINES: usize = 20;

/// The lines of one observation, indexed for [`Observation::shows`].
#[derive(Debug, Clone, Default)]
pub struct Observation<'a> {
    /// Trimmed non-blank lines.
    lines: Vec<&'a str>,
    /// Lines by their last [`DISTINCT_LINE_CHARS`] characters (lines at least that long).
    by_tail: HashMap<&'a str, Vec<&'a str>>,
}

impl<'a> Observation<'a> {
    /// Indexes `text`, the observation as the agent received it.
    pub fn new(text: &'a str) -> Observation<'a> {
        let mut observation = Observation::default();
        for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
            observation.lines.push(line);
            if let Some(tail) = tail(line) {
                observation.by_tail.entry(tail).or_default().push(line);
            }
        }
        observation
    }

    /// Whether the content of a file, `content`, reached the agent in this observation (module
    /// guide).
    pub fn shows(&self, content: &str) -> bool {
        let lines: Vec<&str> = content.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
        if lines.is_empty() {
            return false;
        }
        let distinct: Vec<&str> = lines.iter().copied().filter(|l| tail(l).is_some()).collect();
        if !distinct.is_empty() {
            return distinct.iter().any(|line| self.ends_a_line(line));
        }
        lines.iter().take(SHORT_FILE_LINES).all(|line| self.lines.iter().any(|seen| seen.ends_with(line)))
    }

    /// Whether some observation line ends with `line` (of at least [`DISTINCT_LINE_CHARS`]).
    fn ends_a_line(&self, line: &str) -> bool {
        tail(line).and_then(|t| self.by_tail.get(t)).is_some_and(|seen| seen.iter().any(|s| s.ends_with(line)))
    }
}

/// The last [`DISTINCT_LINE_CHARS`] characters of `line`, when it has that many.
fn tail(line: &str) -> Option<&str> {
    let (at, _) = line.char_indices().rev().nth(DISTINCT_LINE_CHARS - 1)?;
    Some(&line[at..])
}

#[cfg(test)]
mod tests {
    use super::*;

    const MODULE: &str = "def bravo():\n    return 2\n\n}\n";

    #[test]
    fn a_distinct_line_ending_an_observation_line_opens_the_file() {
        for shown in
            ["def bravo():", "     1\tdef bravo():", "src/b.py:1:def bravo():", "+    return 2", "^1a2b3c (t 2026-01-01 1) def bravo():"]
        {
            assert!(Observation::new(&format!("exit status 0\n--- stdout ---\n{shown}\n")).shows(MODULE), "{shown}");
        }
    }

    #[test]
    fn short_lines_partial_lines_and_other_text_do_not() {
        for shown in ["}", "def bravo", "return 2 + 1", "2 src/b.py", "def bravo(): # changed"] {
            assert!(!Observation::new(shown).shows(MODULE), "{shown}");
        }
        assert!(!Observation::new("anything\n\n").shows("\n  \n"), "a blank file is never opened");
    }

    #[test]
    fn a_short_file_needs_all_its_lines() {
        let short = "42\nok\n";
        assert!(Observation::new("d.txt:1:42\nd.txt:2:ok").shows(short));
        assert!(!Observation::new("42").shows(short));
    }

    #[test]
    fn tails_count_characters_not_bytes() {
        assert_eq!(tail("ab€€€€€€"), Some("€€€€€€"));
        assert_eq!(tail("€€€€€"), None);
        assert!(Observation::new("x: grüße welt").shows("grüße welt\n"));
    }
}
