//! File names are bytes: how specgap writes a path that is not plain text, and reads it back.
//!
//! Two writers share one escape table, git's C-style quoting (git `quote.c`,
//! `quote_c_style`): the path goes between double quotes, `\a \b \t \n \v \f \r`, `\"` and
//! `\\` stand for those bytes, and every other byte that needs escaping is written as a
//! backslash and three octal digits (`caf\351.txt` for the Latin-1 name `café.txt`).
//!
//! - [`git_quoted`] writes a name as git writes it in a diff with its default
//!   `core.quotePath=true`: quoted when any byte is a control character (below 0x20, or 0x7f),
//!   a double quote, a backslash, or 0x80 and above; so a stored `workspace.diff` is plain
//!   ASCII in its names and `git apply` reads them back byte for byte.
//! - [`shown_quoted`] writes a name for the agent (`list_files`): readable UTF-8 stays as it
//!   is, and the name is quoted when it holds a byte that is not part of valid UTF-8, a control
//!   character (C0, DEL or C1), a double quote or a backslash, when it starts or ends with a
//!   space, or when it contains ` -> ` (the listing's link arrow). One line is always one
//!   entry.
//!
//! [`unquote`] reads either form back to the exact bytes.

/// The escape of one byte inside quotes, when it has a short one (`\n`, `\"`, …).
fn short_escape(byte: u8) -> Option<u8> {
    Some(match byte {
        0x07 => b'a',
        0x08 => b'b',
        b'\t' => b't',
        b'\n' => b'n',
        0x0b => b'v',
        0x0c => b'f',
        b'\r' => b'r',
        b'"' => b'"',
        b'\\' => b'\\',
        _ => return None,
    })
}

/// Whether git (with `core.quotePath=true`) escapes `byte` in a path.
fn git_escapes(byte: u8) -> bool {
    byte < 0x20 || byte == b'"' || byte == b'\\' || byte >= 0x7f
}

/// Appends the escaped form of `byte`: its short escape or `\ooo`.
fn push_escaped(out: &mut String, byte: u8) {
    out.push('\\');
    match short_escape(byte) {
        Some(letter) => out.push(char::from(letter)),
        None => {
            for shift in [6, 3, 0] {
                out.push(char::from(b'0' + ((byte >> shift) & 7)));
            }
        }
    }
}

/// Whether git writes `path` in quotes (`core.quotePath=true`).
pub fn git_needs_quotes(path: &[u8]) -> bool {
    path.iter().copied().any(git_escapes)
}

/// `prefix` followed by `path` as git writes the pair in a diff header (git `quote_two`): as
/// they are when neither needs quoting, else `"` + both escaped + `"`. For example
/// `git_quoted("a/", b"caf\xe9.txt")` is `"a/caf\351.txt"` (with the quotes) and
/// `git_quoted("b/", b"src/x.rs")` is `b/src/x.rs`.
pub fn git_quoted(prefix: &str, path: &[u8]) -> String {
    if !git_needs_quotes(prefix.as_bytes()) && !git_needs_quotes(path) {
        let mut out = String::with_capacity(prefix.len() + path.len());
        out.push_str(prefix);
        // No byte is 0x80 or above here, so the path is ASCII.
        out.extend(path.iter().map(|&b| char::from(b)));
        return out;
    }
    let mut out = String::with_capacity(prefix.len() + path.len() + 8);
    out.push('"');
    for &byte in prefix.as_bytes().iter().chain(path) {
        if git_escapes(byte) {
            push_escaped(&mut out, byte);
        } else {
            out.push(char::from(byte));
        }
    }
    out.push('"');
    out
}

/// Whether a character of a valid UTF-8 name must be escaped in a listing: control
/// characters (C0, DEL, C1), the double quote and the backslash.
fn shown_escapes(ch: char) -> bool {
    ch.is_control() || ch == '"' || ch == '\\'
}

/// `path` as the agent's `list_files` shows it (module guide): as it is when it is readable,
/// unambiguous UTF-8, else quoted with escapes for the bytes that need them (valid, printable
/// UTF-8 characters stay readable inside the quotes). For example `a b.txt` stays `a b.txt`,
/// `café.txt` stays `café.txt`, and the Latin-1 `caf\xe9.txt` is `"caf\351.txt"`.
pub fn shown_quoted(path: &[u8]) -> String {
    let plain = match std::str::from_utf8(path) {
        Ok(text) => !text.chars().any(shown_escapes) && !text.starts_with(' ') && !text.ends_with(' ') && !text.contains(" -> "),
        Err(_) => false,
    };
    if plain {
        return String::from_utf8_lossy(path).into_owned();
    }
    let mut out = String::with_capacity(path.len() + 8);
    out.push('"');
    for chunk in path.utf8_chunks() {
        for ch in chunk.valid().chars() {
            if shown_escapes(ch) {
                let mut buf = [0u8; 4];
                for &byte in ch.encode_utf8(&mut buf).as_bytes() {
                    push_escaped(&mut out, byte);
                }
            } else {
                out.push(ch);
            }
        }
        for &byte in chunk.invalid() {
            push_escaped(&mut out, byte);
        }
    }
    out.push('"');
    out
}

/// The bytes a quoted path stands for: `text` must start and end with `"`, and inside hold
/// characters other than `"` and `\`, the short escapes `\a \b \t \n \v \f \r \" \\`, or a
/// backslash and three octal digits up to `\377`. `None` when `text` is not quoted or the
/// quoting is malformed (the caller then takes `text` as it is, or refuses it).
pub fn unquote(text: &str) -> Option<Vec<u8>> {
    let inner = text.strip_prefix('"')?.strip_suffix('"')?;
    let bytes = inner.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        let byte = bytes[at];
        at += 1;
        match byte {
            b'"' => return None,
            b'\\' => {
                let &escape = bytes.get(at)?;
                at += 1;
                let value = match escape {
                    b'a' => 0x07,
                    b'b' => 0x08,
                    b't' => b'\t',
                    b'n' => b'\n',
                    b'v' => 0x0b,
                    b'f' => 0x0c,
                    b'r' => b'\r',
                    b'"' => b'"',
                    b'\\' => b'\\',
                    b'0'..=b'3' => {
                        let digits = bytes.get(at..at + 2)?;
                        if !digits.iter().all(|d| (b'0'..=b'7').contains(d)) {
                            return None;
                        }
                        at += 2;
                        ((escape - b'0') << 6) | ((digits[0] - b'0') << 3) | (digits[1] - b'0')
                    }
                    _ => return None,
                };
                out.push(value);
            }
            other => out.push(other),
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn git_quoting_matches_git_2_47() {
        // Expected values: `git diff --cached` headers of these names with git 2.47.3 defaults.
        assert_eq!(git_quoted("a/", b"caf\xe9.txt"), r#""a/caf\351.txt""#);
        assert_eq!(git_quoted("b/", "é.rs".as_bytes()), r#""b/\303\251.rs""#);
        assert_eq!(git_quoted("a/", b"q\"u\\o\tt\nn"), r#""a/q\"u\\o\tt\nn""#);
        assert_eq!(git_quoted("a/", b"a b.txt"), "a/a b.txt");
        assert_eq!(git_quoted("a/", b"-x\x7f\x01"), r#""a/-x\177\001""#);
        assert_eq!(git_quoted("", b"\x07\x08\x0b\x0c\r"), r#""\a\b\v\f\r""#);
    }

    #[test]
    fn listings_keep_readable_names_and_quote_the_rest() {
        assert_eq!(shown_quoted(b"src/main.rs"), "src/main.rs");
        assert_eq!(shown_quoted("a b/café.txt".as_bytes()), "a b/café.txt");
        assert_eq!(shown_quoted(b"caf\xe9.txt"), r#""caf\351.txt""#);
        assert_eq!(shown_quoted(b"two\nlines"), r#""two\nlines""#);
        assert_eq!(shown_quoted("é\u{85}\"".as_bytes()), r#""é\302\205\"""#);
        assert_eq!(shown_quoted(b" lead"), r#"" lead""#);
        assert_eq!(shown_quoted(b"trail "), r#""trail ""#);
        assert_eq!(shown_quoted(b"a -> b"), r#""a -> b""#);
        assert_eq!(shown_quoted(b"back\\slash"), r#""back\\slash""#);
    }

    #[test]
    fn unquote_reverses_both_writers() {
        let names: [&[u8]; 7] =
            [b"caf\xe9.txt", b"q\"u\\o\tt\nn", b"\x00\x07\x08\x0b\x0c\r\x7f\xff", "é\u{85}".as_bytes(), b" a -> b ", b"", b"plain"];
        for name in names {
            assert_eq!(unquote(&git_quoted("", name)).unwrap_or_else(|| name.to_vec()), name, "{name:?}");
            assert_eq!(unquote(&shown_quoted(name)).unwrap_or_else(|| name.to_vec()), name, "{name:?}");
        }
    }

    #[test]
    fn malformed_quoting_is_not_unquoted() {
        for bad in [r#""a"b""#, r#""a\""#, r#""\400""#, r#""\38""#, r#""\x41""#, r#""\1""#, "\"", "plain", "\"open"] {
            assert_eq!(unquote(bad), None, "{bad}");
        }
        assert_eq!(unquote(r#""""#), Some(Vec::new()));
        assert_eq!(unquote(r#""\101é""#), Some("Aé".as_bytes().to_vec()));
    }
}
