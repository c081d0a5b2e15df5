//! Commands simple enough to run without starting a shell for them.
//!
//! Starting a program is the largest cost of a short command on our machines (the dynamic
//! loader's CPU probing alone takes most of a millisecond), and `/bin/sh -c 'ls -la'` starts
//! two: the shell, then `ls`. Like make's fast path, a command that is nothing but words —
//! plain characters, single quotes and double quotes without expansions — is split here and
//! run as its argument vector, which is exactly what the shell would have run. Anything else
//! (expansions, redirections, pipes, globs, assignments, several lines, reserved words) goes to
//! the shell unchanged.

/// Characters that mean something to the shell outside quotes (besides blanks and quotes).
const SPECIAL: &[char] = &['|', '&', ';', '<', '>', '(', ')', '$', '`', '\\', '*', '?', '[', ']', '#', '~', '{', '}', '!'];

/// Words the shell reads as syntax when they come first.
const RESERVED: &[&str] = &["!", "{", "}", "case", "do", "done", "elif", "else", "esac", "fi", "for", "if", "in", "then", "until", "while"];

/// `dash`'s built-in commands: run as an argument vector outside a shell, these would find a
/// different program (`/bin/echo` treats backslashes unlike the built-in) or none at all.
const BUILTINS: &[&str] = &[
    ".", ":", "[", "alias", "bg", "break", "cd", "chdir", "command", "continue", "echo", "eval", "exec", "exit", "export", "false", "fc",
    "fg", "getopts", "hash", "jobs", "kill", "local", "printf", "pwd", "read", "readonly", "return", "set", "shift", "test", "times",
    "trap", "true", "type", "ulimit", "umask", "unalias", "unset", "wait",
];

/// The words of `command` when it is a single simple command of plain and quoted words, with
/// the quotes removed; `None` when the shell must interpret it. The first word is never empty,
/// a reserved word, or an assignment; no word contains a newline.
pub(crate) fn simple_words(command: &str) -> Option<Vec<String>> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut chars = command.chars();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' => words.extend(word.take()),
            '\'' => {
                let text = word.get_or_insert_with(String::new);
                loop {
                    match chars.next()? {
                        '\'' => break,
                        '\n' => return None,
                        other => text.push(other),
                    }
                }
            }
            '"' => {
                let text = word.get_or_insert_with(String::new);
                loop {
                    match chars.next()? {
                        '"' => break,
                        '$' | '`' | '\\' | '\n' => return None,
                        other => text.push(other),
                    }
                }
            }
            '\n' | '\r' => return None,
            c if SPECIAL.contains(&c) || c.is_control() => return None,
            c => word.get_or_insert_with(String::new).push(c),
        }
    }
    words.extend(word);
    let first = words.first()?;
    // `NAME=value cmd` sets a variable; a quoted `=` would not, but is rare enough to leave
    // to the shell as well.
    if first.is_empty() || RESERVED.contains(&first.as_str()) || first.contains('=') {
        return None;
    }
    Some(words)
}

/// Whether `word` names one of the shell's built-in commands.
pub(crate) fn is_builtin(word: &str) -> bool {
    BUILTINS.contains(&word)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(command: &str) -> Option<Vec<String>> {
        simple_words(command)
    }

    fn owned(words: &[&str]) -> Option<Vec<String>> {
        Some(words.iter().map(|w| w.to_string()).collect())
    }

    #[test]
    fn plain_and_quoted_words_are_split_as_the_shell_would() {
        assert_eq!(words("ls"), owned(&["ls"]));
        assert_eq!(words("  cat   input.txt\t"), owned(&["cat", "input.txt"]));
        assert_eq!(words("grep -x 'a b' \"c d\" e'f'\"g\" ''"), owned(&["grep", "-x", "a b", "c d", "efg", ""]));
        assert_eq!(words("sh -c 'echo $HOME; ls | wc -l'"), owned(&["sh", "-c", "echo $HOME; ls | wc -l"]));
        assert_eq!(
            words("python3 -m pytest -q tests/test_a.py::test_b --x=1"),
            owned(&["python3", "-m", "pytest", "-q", "tests/test_a.py::test_b", "--x=1"])
        );
    }

    #[test]
    fn anything_the_shell_interprets_goes_to_the_shell() {
        for command in [
            "",
            "   ",
            "echo $HOME",
            "ls > out",
            "ls | wc",
            "a && b",
            "a; b",
            "ls *.py",
            "cat ~/x",
            "ls\nls",
            "echo \"$x\"",
            "echo \"`id`\"",
            "a\\ b",
            "FOO=1 make",
            "if true",
            "( ls )",
            "{ ls; }",
            "ls # comment",
            "echo 'unterminated",
            "echo \"unterminated",
            "ls [ab]",
            "echo 'two\nlines'",
            "! ls",
            "''",
        ] {
            assert_eq!(simple_words(command), None, "{command:?}");
        }
    }

    #[test]
    fn builtins_are_known() {
        assert!(is_builtin("echo") && is_builtin("cd") && is_builtin("printf"));
        assert!(!is_builtin("ls") && !is_builtin("sh"));
    }
}
