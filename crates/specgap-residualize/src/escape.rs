//! Escaping text written by agents (untrusted) into files people open: Markdown code fences
//! that no backtick run inside can close, table cells that keep their row, and HTML text.

/// `text` as a fenced Markdown code block with `info` as the info string: the fence is one
/// backtick longer than the longest backtick run in the text (at least three), so nothing
/// inside is read as Markdown or HTML.
pub fn md_fence(info: &str, text: &str) -> String {
    let mut longest = 0;
    let mut run = 0;
    for c in text.chars() {
        if c == '`' {
            run += 1;
            longest = longest.max(run);
        } else {
            run = 0;
        }
    }
    let fence = "`".repeat((longest + 1).max(3));
    let body = text.strip_suffix('\n').unwrap_or(text);
    format!("{fence}{info}\n{body}\n{fence}\n")
}

/// `text` for a Markdown table cell or a line of prose: HTML-escaped, `|`, `` ` `` and `*`,
/// `_`, `[` escaped, line breaks as spaces.
pub fn md_inline(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '|' | '`' | '*' | '_' | '[' | ']' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            '\n' | '\r' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// `text` escaped for HTML content and attribute values.
pub fn html(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fences_outgrow_backtick_runs_inside() {
        assert_eq!(md_fence("text", "a\n"), "```text\na\n```\n");
        assert_eq!(md_fence("", "x ```` y"), "`````\nx ```` y\n`````\n");
    }

    #[test]
    fn inline_text_cannot_break_a_table_or_inject_markup() {
        assert_eq!(md_inline("a|b <script>`x`\nnext"), "a\\|b &lt;script&gt;\\`x\\` next");
        assert_eq!(html("<img src=x onerror='y'>&"), "&lt;img src=x onerror=&#39;y&#39;&gt;&amp;");
    }
}
