//! Escaping text written by agents (untrusted) into files people open: Markdown code fences
//! that no backtick run inside can close, table cells that keep their row, and HTML text.
//! Every renderer uses these (the report's HTML and SVG, residualize's review bundles, the
//! audit pages), so a fix to one escapes everywhere.

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
        if let Some(entity) = markup_entity(c) {
            out.push_str(entity);
            continue;
        }
        match c {
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
        match (markup_entity(c), c) {
            (Some(entity), _) => out.push_str(entity),
            (None, '"') => out.push_str("&quot;"),
            (None, '\'') => out.push_str("&#39;"),
            (None, c) => out.push(c),
        }
    }
    out
}

/// The entity of a character that starts markup or an entity in HTML text (`&`, `<`, `>`).
fn markup_entity(c: char) -> Option<&'static str> {
    match c {
        '&' => Some("&amp;"),
        '<' => Some("&lt;"),
        '>' => Some("&gt;"),
        _ => None,
    }
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
        assert_eq!(html("a<b & \"c\">"), "a&lt;b &amp; &quot;c&quot;&gt;");
    }
}
