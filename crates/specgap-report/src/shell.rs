//! A small reader of POSIX shell syntax (with the bash habits agents use: `&>`, `<<<`, `$'…'`,
//! brace lists) for the commands agents send to a shell tool, so that [`crate::opened`] can
//! tell which files a command read, wrote or searched (seed 001 App. D.2).
//!
//! It is a reader, not a shell: it never expands parameters or runs anything. It splits a
//! command into pipelines of simple commands, `( … )` subshells, `{ …; }` groups and `for`
//! loops; keeps quoting so globs can be told from quoted text; takes `$( … )`, backquotes and
//! `<( … )` apart as nested scripts; and skips here-document bodies and comments. `if`,
//! `while`, `until` and `case` bodies are read as plain command lists (which branch ran is not
//! known). Input it cannot make sense of (an unclosed quote, a stray `)`) is read as far as it
//! goes and never fails.
//!
//! Why our own: the maintained POSIX/bash parser on crates.io (`brush-parser`) pulls in a
//! memoizing cache and proc-macro crates (`cached`, `darling`, `peg`), and the others are
//! unmaintained (`conch-parser`) or GPL (`yash-syntax`); the measures need only this much
//! (docs/decisions.md "Report: opened files").

/// One piece of a word.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Part {
    /// Unquoted text: glob characters and braces in it are live.
    Plain(String),
    /// Quoted or backslash-escaped text, taken literally.
    Quoted(String),
    /// A parameter expansion (`$name`, `${…}`, `$1`), by its name or inner text.
    Param(String),
    /// A command substitution (`$( … )` or backquotes): the inner script's text.
    Command(String),
    /// A process substitution (`<( … )`, `>( … )`): the inner script's text.
    Process(String),
    /// An arithmetic expansion `$(( … ))`.
    Arith(String),
}

/// A word: the concatenation of its parts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Word {
    /// The parts in order.
    pub parts: Vec<Part>,
}

impl Word {
    /// The word's text when it holds no expansion, quotes removed.
    pub fn literal(&self) -> Option<String> {
        let mut out = String::new();
        for part in &self.parts {
            match part {
                Part::Plain(t) | Part::Quoted(t) => out.push_str(t),
                _ => return None,
            }
        }
        Some(out)
    }

    /// Characters of the word with whether each was quoted, when it holds no expansion other
    /// than parameters in `bound` (replaced by their value, quoted when the parameter was in
    /// double quotes — the reader does not record that, so values count as quoted).
    pub fn chars_with(&self, bound: &dyn Fn(&str) -> Option<String>) -> Option<Vec<(char, bool)>> {
        let mut out = Vec::new();
        for part in &self.parts {
            match part {
                Part::Plain(t) => out.extend(t.chars().map(|c| (c, false))),
                Part::Quoted(t) => out.extend(t.chars().map(|c| (c, true))),
                Part::Param(name) => out.extend(bound(name)?.chars().map(|c| (c, true))),
                _ => return None,
            }
        }
        Some(out)
    }

    /// Inner scripts of command and process substitutions, with whether each is a process
    /// substitution.
    pub fn substitutions(&self) -> impl Iterator<Item = (&str, bool)> {
        self.parts.iter().filter_map(|p| match p {
            Part::Command(s) => Some((s.as_str(), false)),
            Part::Process(s) => Some((s.as_str(), true)),
            _ => None,
        })
    }
}

/// What a redirection does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RedirectOp {
    /// `>` or `>|`: the target is created or truncated.
    Out,
    /// `>>`: appended to.
    Append,
    /// `&>`: stdout and stderr to the target, truncated.
    OutAndErr,
    /// `&>>`: both, appended.
    AppendAndErr,
    /// `<`: the target is read as standard input.
    In,
    /// `<<` or `<<-`: a here-document (its body is skipped; the target is the delimiter).
    HereDoc,
    /// `<<<`: a here-string.
    HereString,
    /// `>&`, `<&`: a descriptor duplicated or closed.
    Dup,
    /// `<>`: opened for reading and writing.
    ReadWrite,
}

/// One redirection: `[fd]op target`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redirect {
    /// The descriptor number written before the operator (`2>`), if any.
    pub fd: Option<u32>,
    /// The operator.
    pub op: RedirectOp,
    /// The target word (the delimiter of a here-document).
    pub target: Word,
}

impl Redirect {
    /// Whether this redirection takes standard output away from where it was going.
    pub fn takes_stdout(&self) -> bool {
        match self.op {
            RedirectOp::Out | RedirectOp::Append => self.fd.is_none_or(|fd| fd == 1),
            RedirectOp::OutAndErr | RedirectOp::AppendAndErr => true,
            _ => false,
        }
    }
}

/// A simple command: assignments, words and redirections in any order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SimpleCommand {
    /// `NAME=value` words before the first other word.
    pub assignments: Vec<Word>,
    /// The program and its arguments.
    pub words: Vec<Word>,
    /// Redirections.
    pub redirects: Vec<Redirect>,
}

/// A command of a pipeline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// A simple command.
    Simple(SimpleCommand),
    /// `( … )`: runs in a subshell, so a `cd` inside it does not last.
    Subshell(Script, Vec<Redirect>),
    /// `{ …; }`, and `while` / `until` loops: run in the same shell.
    Group(Script, Vec<Redirect>),
    /// `for NAME [in WORDS]; do BODY; done`.
    For {
        /// The loop variable.
        var: String,
        /// The listed words (`None` without `in`: the positional parameters).
        items: Option<Vec<Word>>,
        /// The body.
        body: Script,
    },
}

/// Commands joined by `|`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Pipeline {
    /// The stages in order.
    pub commands: Vec<Command>,
}

/// Pipelines joined by `;`, `&`, `&&`, `||` or newlines, in order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Script {
    /// The pipelines.
    pub pipelines: Vec<Pipeline>,
}

/// Reads a shell command.
pub fn parse(text: &str) -> Script {
    let tokens = Lexer::new(text).run();
    Parser { tokens, at: 0 }.script(&[], false)
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Word(Word),
    /// `|`, `|&`, `;`, `;;`, `&`, `&&`, `||`, `(`, `)` (a newline is `\n`).
    Op(&'static str),
    Redirect(Option<u32>, RedirectOp),
}

struct Lexer {
    chars: Vec<char>,
    at: usize,
    tokens: Vec<Token>,
    /// Here-documents whose bodies start after the next newline: (delimiter, strip tabs).
    pending: Vec<(String, bool)>,
}

impl Lexer {
    fn new(text: &str) -> Lexer {
        Lexer { chars: text.chars().collect(), at: 0, tokens: Vec::new(), pending: Vec::new() }
    }

    fn peek(&self, ahead: usize) -> Option<char> {
        self.chars.get(self.at + ahead).copied()
    }

    fn run(mut self) -> Vec<Token> {
        while let Some(c) = self.peek(0) {
            match c {
                ' ' | '\t' | '\r' => self.at += 1,
                '\\' if self.peek(1) == Some('\n') => self.at += 2,
                '\n' => {
                    self.at += 1;
                    self.tokens.push(Token::Op("\n"));
                    self.skip_here_bodies();
                }
                '#' => {
                    while self.peek(0).is_some_and(|c| c != '\n') {
                        self.at += 1;
                    }
                }
                _ => {
                    if !self.operator() {
                        let word = self.word();
                        self.tokens.push(Token::Word(word));
                    }
                }
            }
        }
        self.tokens
    }

    /// Lexes an operator or redirection at the cursor; false when a word starts here.
    fn operator(&mut self) -> bool {
        let rest: String = self.chars[self.at..].iter().take(3).collect();
        // A descriptor number glued to a redirection (`2>`, `2>&1`).
        let digits = rest.chars().take_while(char::is_ascii_digit).count();
        if digits > 0 {
            let after = self.chars.get(self.at + digits).copied();
            if matches!(after, Some('<' | '>')) {
                let fd: String = self.chars[self.at..self.at + digits].iter().collect();
                self.at += digits;
                return self.redirect(fd.parse().ok());
            }
            return false;
        }
        const OPS: &[&str] = &["&&", "||", ";;", "|&", "|", ";", "(", ")"];
        if rest.starts_with("&>") || rest.starts_with('<') || rest.starts_with('>') {
            if rest.starts_with("<(") || rest.starts_with(">(") {
                // A process substitution: a word.
                return false;
            }
            return self.redirect(None);
        }
        for op in OPS {
            if rest.starts_with(op) {
                self.at += op.chars().count();
                let op = if *op == "|&" { "|" } else { op };
                self.tokens.push(Token::Op(op));
                return true;
            }
        }
        if rest.starts_with('&') {
            self.at += 1;
            self.tokens.push(Token::Op("&"));
            return true;
        }
        false
    }

    fn redirect(&mut self, fd: Option<u32>) -> bool {
        let rest: String = self.chars[self.at..].iter().take(3).collect();
        let table: &[(&str, RedirectOp)] = &[
            ("&>>", RedirectOp::AppendAndErr),
            ("&>", RedirectOp::OutAndErr),
            ("<<<", RedirectOp::HereString),
            ("<<-", RedirectOp::HereDoc),
            ("<<", RedirectOp::HereDoc),
            ("<&", RedirectOp::Dup),
            ("<>", RedirectOp::ReadWrite),
            ("<", RedirectOp::In),
            (">>", RedirectOp::Append),
            (">|", RedirectOp::Out),
            (">&", RedirectOp::Dup),
            (">", RedirectOp::Out),
        ];
        let Some((text, op)) = table.iter().find(|(t, _)| rest.starts_with(t)) else {
            return false;
        };
        self.at += text.chars().count();
        self.tokens.push(Token::Redirect(fd, *op));
        if *op == RedirectOp::HereDoc {
            while matches!(self.peek(0), Some(' ' | '\t')) {
                self.at += 1;
            }
            let delimiter = self.word();
            let text = delimiter
                .parts
                .iter()
                .map(|p| match p {
                    Part::Plain(t) | Part::Quoted(t) | Part::Param(t) => t.clone(),
                    Part::Command(t) | Part::Process(t) | Part::Arith(t) => t.clone(),
                })
                .collect::<String>();
            self.pending.push((text, rest.starts_with("<<-")));
            self.tokens.push(Token::Word(delimiter));
        }
        true
    }

    /// After a newline: skips the bodies of the here-documents opened on the line before.
    fn skip_here_bodies(&mut self) {
        for (delimiter, strip_tabs) in std::mem::take(&mut self.pending) {
            loop {
                let start = self.at;
                if start >= self.chars.len() {
                    return;
                }
                let mut end = start;
                while end < self.chars.len() && self.chars[end] != '\n' {
                    end += 1;
                }
                let line: String = self.chars[start..end].iter().collect();
                self.at = (end + 1).min(self.chars.len());
                let line = if strip_tabs { line.trim_start_matches('\t') } else { line.as_str() };
                if line.trim_end_matches('\r') == delimiter {
                    break;
                }
            }
        }
    }

    /// A word at the cursor (quotes, expansions, escapes), up to an unquoted metacharacter.
    fn word(&mut self) -> Word {
        let mut parts: Vec<Part> = Vec::new();
        let mut plain = String::new();
        let flush = |plain: &mut String, parts: &mut Vec<Part>| {
            if !plain.is_empty() {
                parts.push(Part::Plain(std::mem::take(plain)));
            }
        };
        while let Some(c) = self.peek(0) {
            match c {
                ' ' | '\t' | '\r' | '\n' | ';' | '|' | '&' | ')' => break,
                '(' if parts.is_empty() && plain.is_empty() => break,
                '<' | '>' if self.peek(1) == Some('(') => {
                    flush(&mut plain, &mut parts);
                    self.at += 2;
                    parts.push(Part::Process(self.until_close(')')));
                }
                '<' | '>' => break,
                '\'' => {
                    flush(&mut plain, &mut parts);
                    self.at += 1;
                    let mut text = String::new();
                    while let Some(c) = self.peek(0) {
                        self.at += 1;
                        if c == '\'' {
                            break;
                        }
                        text.push(c);
                    }
                    parts.push(Part::Quoted(text));
                }
                '"' => {
                    flush(&mut plain, &mut parts);
                    self.at += 1;
                    self.double_quoted(&mut parts);
                }
                '\\' => {
                    self.at += 1;
                    match self.peek(0) {
                        Some('\n') => self.at += 1,
                        Some(c) => {
                            flush(&mut plain, &mut parts);
                            self.at += 1;
                            parts.push(Part::Quoted(c.to_string()));
                        }
                        None => {}
                    }
                }
                '$' if self.peek(1) == Some('\'') => {
                    flush(&mut plain, &mut parts);
                    self.at += 2;
                    parts.push(Part::Quoted(self.ansi_c()));
                }
                '$' => {
                    if let Some(part) = self.dollar() {
                        flush(&mut plain, &mut parts);
                        parts.push(part);
                    } else {
                        plain.push('$');
                    }
                }
                '`' => {
                    flush(&mut plain, &mut parts);
                    self.at += 1;
                    parts.push(Part::Command(self.backquoted()));
                }
                c => {
                    plain.push(c);
                    self.at += 1;
                }
            }
        }
        flush(&mut plain, &mut parts);
        Word { parts }
    }

    fn double_quoted(&mut self, parts: &mut Vec<Part>) {
        let mut text = String::new();
        let flush = |text: &mut String, parts: &mut Vec<Part>| {
            if !text.is_empty() {
                parts.push(Part::Quoted(std::mem::take(text)));
            }
        };
        let mut pushed = false;
        while let Some(c) = self.peek(0) {
            match c {
                '"' => {
                    self.at += 1;
                    break;
                }
                '\\' if matches!(self.peek(1), Some('$' | '`' | '"' | '\\')) => {
                    text.extend(self.peek(1));
                    self.at += 2;
                }
                '\\' if self.peek(1) == Some('\n') => self.at += 2,
                '$' => match self.dollar() {
                    Some(part) => {
                        flush(&mut text, parts);
                        parts.push(part);
                        pushed = true;
                    }
                    None => text.push('$'),
                },
                '`' => {
                    self.at += 1;
                    flush(&mut text, parts);
                    parts.push(Part::Command(self.backquoted()));
                    pushed = true;
                }
                c => {
                    text.push(c);
                    self.at += 1;
                }
            }
        }
        if !pushed && text.is_empty() {
            // `""`: an empty word, still a word.
            parts.push(Part::Quoted(String::new()));
        }
        flush(&mut text, parts);
    }

    /// `$'…'` with the common escapes.
    fn ansi_c(&mut self) -> String {
        let mut text = String::new();
        while let Some(c) = self.peek(0) {
            self.at += 1;
            match c {
                '\'' => break,
                '\\' => {
                    let escaped = self.peek(0);
                    self.at += 1;
                    match escaped {
                        Some('n') => text.push('\n'),
                        Some('t') => text.push('\t'),
                        Some(other) => text.push(other),
                        None => {}
                    }
                }
                c => text.push(c),
            }
        }
        text
    }

    /// An expansion starting at `$`; `None` (nothing consumed) for a lone `$`.
    fn dollar(&mut self) -> Option<Part> {
        match self.peek(1)? {
            '(' if self.peek(2) == Some('(') => {
                self.at += 3;
                let inner = self.until_close(')');
                if self.peek(0) == Some(')') {
                    self.at += 1;
                }
                Some(Part::Arith(inner))
            }
            '(' => {
                self.at += 2;
                Some(Part::Command(self.until_close(')')))
            }
            '{' => {
                self.at += 2;
                Some(Part::Param(self.until_close('}')))
            }
            c if c.is_ascii_alphabetic() || c == '_' => {
                self.at += 1;
                let mut name = String::new();
                while let Some(c) = self.peek(0).filter(|c| c.is_ascii_alphanumeric() || *c == '_') {
                    name.push(c);
                    self.at += 1;
                }
                Some(Part::Param(name))
            }
            c if c.is_ascii_digit() || "?$#@*!-".contains(c) => {
                self.at += 2;
                Some(Part::Param(c.to_string()))
            }
            _ => None,
        }
    }

    /// Text up to the `close` that matches an already consumed opener, minding quotes and
    /// nesting; the closer is consumed.
    fn until_close(&mut self, close: char) -> String {
        let open = if close == ')' { '(' } else { '{' };
        let mut depth = 1;
        let mut text = String::new();
        let mut quote: Option<char> = None;
        while let Some(c) = self.peek(0) {
            self.at += 1;
            match quote {
                Some(q) => {
                    if c == '\\' && q == '"' {
                        text.push(c);
                        text.extend(self.peek(0));
                        self.at += 1;
                        continue;
                    }
                    if c == q {
                        quote = None;
                    }
                }
                None if c == '\'' || c == '"' => quote = Some(c),
                None if c == '\\' => {
                    text.push(c);
                    text.extend(self.peek(0));
                    self.at += 1;
                    continue;
                }
                None if c == open => depth += 1,
                None if c == close => {
                    depth -= 1;
                    if depth == 0 {
                        return text;
                    }
                }
                None => {}
            }
            text.push(c);
        }
        text
    }

    fn backquoted(&mut self) -> String {
        let mut text = String::new();
        while let Some(c) = self.peek(0) {
            self.at += 1;
            match c {
                '`' => break,
                '\\' if matches!(self.peek(0), Some('`' | '\\' | '$')) => {
                    text.extend(self.peek(0));
                    self.at += 1;
                }
                c => text.push(c),
            }
        }
        text
    }
}

struct Parser {
    tokens: Vec<Token>,
    at: usize,
}

/// Words that open, separate or close compound commands, skipped where a command starts
/// (their lists are read as plain command lists).
const SKIPPED: &[&str] = &["if", "then", "elif", "else", "fi", "!", "do", "done", "esac", "}"];

impl Parser {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.at)
    }

    fn peek_literal(&self) -> Option<String> {
        match self.peek()? {
            Token::Word(w) => w.literal(),
            _ => None,
        }
    }

    /// Pipelines until the end, a `)` when `in_parens`, or a word of `until` where a command
    /// starts (not consumed).
    fn script(&mut self, until: &[&str], in_parens: bool) -> Script {
        let mut script = Script::default();
        loop {
            match self.peek() {
                None => break,
                Some(Token::Op(")")) if in_parens => break,
                Some(Token::Op(")")) => self.at += 1,
                Some(Token::Op(op)) if *op != "(" => self.at += 1,
                _ => {
                    if self.peek_literal().is_some_and(|w| until.contains(&w.as_str())) {
                        break;
                    }
                    if self.peek_literal().is_some_and(|w| SKIPPED.contains(&w.as_str())) {
                        self.at += 1;
                        continue;
                    }
                    let pipeline = self.pipeline(until);
                    if !pipeline.commands.is_empty() {
                        script.pipelines.push(pipeline);
                    }
                }
            }
        }
        script
    }

    fn pipeline(&mut self, until: &[&str]) -> Pipeline {
        let mut pipeline = Pipeline::default();
        loop {
            while self.peek_literal().is_some_and(|w| SKIPPED.contains(&w.as_str()) && !until.contains(&w.as_str())) {
                self.at += 1;
            }
            if let Some(command) = self.command(until) {
                pipeline.commands.push(command);
            }
            if self.peek() == Some(&Token::Op("|")) {
                self.at += 1;
                continue;
            }
            return pipeline;
        }
    }

    fn command(&mut self, until: &[&str]) -> Option<Command> {
        if self.peek() == Some(&Token::Op("(")) {
            self.at += 1;
            let body = self.script(&[], true);
            if self.peek() == Some(&Token::Op(")")) {
                self.at += 1;
            }
            return Some(Command::Subshell(body, self.trailing_redirects()));
        }
        match self.peek_literal().as_deref() {
            Some("{") => {
                self.at += 1;
                let body = self.script(&["}"], false);
                self.eat_word("}");
                Some(Command::Group(body, self.trailing_redirects()))
            }
            Some("for") => Some(self.for_loop()),
            Some("while" | "until") => {
                self.at += 1;
                let mut body = self.script(&["do"], false);
                self.eat_word("do");
                body.pipelines.extend(self.script(&["done"], false).pipelines);
                self.eat_word("done");
                Some(Command::Group(body, self.trailing_redirects()))
            }
            Some("case") => {
                self.skip_case();
                None
            }
            Some(w) if until.contains(&w) => None,
            _ => self.simple(),
        }
    }

    fn eat_word(&mut self, word: &str) {
        if self.peek_literal().as_deref() == Some(word) {
            self.at += 1;
        }
    }

    fn for_loop(&mut self) -> Command {
        self.at += 1;
        let var = self.peek_literal().unwrap_or_default();
        self.at += 1;
        let mut items = None;
        if self.peek_literal().as_deref() == Some("in") {
            self.at += 1;
            let mut words = Vec::new();
            while let Some(Token::Word(w)) = self.peek() {
                words.push(w.clone());
                self.at += 1;
            }
            items = Some(words);
        }
        while matches!(self.peek(), Some(Token::Op(";" | "\n"))) {
            self.at += 1;
        }
        self.eat_word("do");
        let body = self.script(&["done"], false);
        self.eat_word("done");
        let _ = self.trailing_redirects();
        Command::For { var, items, body }
    }

    /// Skips a `case … esac` (nested ones too).
    fn skip_case(&mut self) {
        let mut depth = 0;
        while let Some(token) = self.peek() {
            let literal = match token {
                Token::Word(w) => w.literal(),
                _ => None,
            };
            self.at += 1;
            match literal.as_deref() {
                Some("case") => depth += 1,
                Some("esac") => {
                    depth -= 1;
                    if depth == 0 {
                        return;
                    }
                }
                _ => {}
            }
        }
    }

    fn trailing_redirects(&mut self) -> Vec<Redirect> {
        let mut out = Vec::new();
        while let Some(Token::Redirect(fd, op)) = self.peek().cloned() {
            self.at += 1;
            let target = match self.peek() {
                Some(Token::Word(w)) => {
                    let w = w.clone();
                    self.at += 1;
                    w
                }
                _ => Word::default(),
            };
            out.push(Redirect { fd, op, target });
        }
        out
    }

    fn simple(&mut self) -> Option<Command> {
        let mut command = SimpleCommand::default();
        loop {
            match self.peek().cloned() {
                Some(Token::Word(w)) => {
                    self.at += 1;
                    if command.words.is_empty() && is_assignment(&w) {
                        command.assignments.push(w);
                    } else {
                        command.words.push(w);
                    }
                }
                Some(Token::Redirect(..)) => command.redirects.extend(self.trailing_redirects()),
                Some(Token::Op("(")) if !command.words.is_empty() => {
                    // `name() { …; }`: a function definition; its body is read as a group.
                    self.at += 1;
                    if self.peek() == Some(&Token::Op(")")) {
                        self.at += 1;
                    }
                    return None;
                }
                _ => break,
            }
        }
        let empty = command.words.is_empty() && command.assignments.is_empty() && command.redirects.is_empty();
        (!empty).then_some(Command::Simple(command))
    }
}

/// `NAME=…` with an unquoted, valid name.
fn is_assignment(word: &Word) -> bool {
    let Some(Part::Plain(first)) = word.parts.first() else {
        return false;
    };
    let Some((name, _)) = first.split_once('=') else {
        return false;
    };
    !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') && !name.starts_with(|c: char| c.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn simple(script: &Script, pipeline: usize, stage: usize) -> &SimpleCommand {
        match &script.pipelines[pipeline].commands[stage] {
            Command::Simple(c) => c,
            other => panic!("not a simple command: {other:?}"),
        }
    }

    fn literals(command: &SimpleCommand) -> Vec<String> {
        command.words.iter().map(|w| w.literal().unwrap_or_else(|| "<dynamic>".into())).collect()
    }

    #[test]
    fn lists_pipelines_and_quotes() {
        let s = parse("cd ivtree && cat 'a b.py' | head -n 5; grep -n \"x|y\" *.py || true");
        assert_eq!(s.pipelines.len(), 4);
        assert_eq!(literals(simple(&s, 0, 0)), ["cd", "ivtree"]);
        assert_eq!(literals(simple(&s, 1, 0)), ["cat", "a b.py"]);
        assert_eq!(literals(simple(&s, 1, 1)), ["head", "-n", "5"]);
        assert_eq!(literals(simple(&s, 2, 0)), ["grep", "-n", "x|y", "*.py"]);
        // The glob stays unquoted; the quoted pattern does not.
        assert_eq!(simple(&s, 2, 0).words[3].parts, [Part::Plain("*.py".into())]);
        assert_eq!(simple(&s, 2, 0).words[2].parts, [Part::Quoted("x|y".into())]);
    }

    #[test]
    fn here_document_bodies_are_skipped_and_redirects_kept() {
        let s = parse("cat > ivtree/node.py <<'EOF'\nimport os; rm -rf /\ncat secret\nEOF\npython3 -m unittest\n");
        assert_eq!(s.pipelines.len(), 2);
        let cat = simple(&s, 0, 0);
        assert_eq!(literals(cat), ["cat"]);
        assert_eq!(cat.redirects.len(), 2);
        assert_eq!(cat.redirects[0].op, RedirectOp::Out);
        assert_eq!(cat.redirects[0].target.literal().unwrap(), "ivtree/node.py");
        assert_eq!(cat.redirects[1].op, RedirectOp::HereDoc);
        assert_eq!(literals(simple(&s, 1, 0)), ["python3", "-m", "unittest"]);
        // `<<-` strips leading tabs from the closing line; the body never becomes commands.
        let s = parse("cat <<-END >> log\n\tcat other\n\tEND\necho done");
        assert_eq!(s.pipelines.len(), 2);
        assert_eq!(simple(&s, 0, 0).redirects[0].op, RedirectOp::HereDoc);
        assert_eq!(simple(&s, 0, 0).redirects[1].op, RedirectOp::Append);
    }

    #[test]
    fn substitutions_subshells_groups_and_loops() {
        let s = parse("echo \"$(cat a.py)\" `cat b.py` && (cd x; cat c) && { cat d; } 2>/dev/null");
        let echo = simple(&s, 0, 0);
        let subs: Vec<(&str, bool)> = echo.words.iter().flat_map(|w| w.substitutions()).collect();
        assert_eq!(subs, [("cat a.py", false), ("cat b.py", false)]);
        let Command::Subshell(inner, _) = &s.pipelines[1].commands[0] else { panic!("{s:?}") };
        assert_eq!(literals(simple(inner, 1, 0)), ["cat", "c"]);
        let Command::Group(group, redirects) = &s.pipelines[2].commands[0] else { panic!("{s:?}") };
        assert_eq!(literals(simple(group, 0, 0)), ["cat", "d"]);
        assert_eq!((redirects[0].fd, redirects[0].op), (Some(2), RedirectOp::Out));
        let s = parse("for f in ivtree/*.py; do echo \"== $f\"; cat \"$f\"; done");
        let Command::For { var, items, body } = &s.pipelines[0].commands[0] else { panic!("{s:?}") };
        assert_eq!(var, "f");
        assert_eq!(items.as_ref().unwrap()[0].literal().unwrap(), "ivtree/*.py");
        assert_eq!(body.pipelines.len(), 2);
        assert_eq!(simple(body, 1, 0).words[1].parts, [Part::Param("f".into())]);
    }

    #[test]
    fn compound_words_comments_and_redirect_forms() {
        let s = parse("if [ -f a ]; then cat a; else ls; fi # cat hidden\nx=1 FOO=$(pwd) env 2>&1 >out &>both");
        assert_eq!(s.pipelines.len(), 4);
        assert_eq!(literals(simple(&s, 1, 0)), ["cat", "a"]);
        assert_eq!(literals(simple(&s, 2, 0)), ["ls"]);
        let last = simple(&s, 3, 0);
        assert_eq!(last.assignments.len(), 2);
        assert_eq!(literals(last), ["env"]);
        let ops: Vec<(Option<u32>, RedirectOp)> = last.redirects.iter().map(|r| (r.fd, r.op)).collect();
        assert_eq!(ops, [(Some(2), RedirectOp::Dup), (None, RedirectOp::Out), (None, RedirectOp::OutAndErr)]);
        let s = parse("diff <(sort a) <(sort b); while read l; do cat \"$l\"; done < list");
        let diff = simple(&s, 0, 0);
        let subs: Vec<(&str, bool)> = diff.words.iter().flat_map(|w| w.substitutions()).collect();
        assert_eq!(subs, [("sort a", true), ("sort b", true)]);
        let Command::Group(body, redirects) = &s.pipelines[1].commands[0] else { panic!("{s:?}") };
        assert_eq!(body.pipelines.len(), 2);
        assert_eq!(redirects[0].op, RedirectOp::In);
    }

    #[test]
    fn broken_input_is_read_as_far_as_it_goes() {
        let s = parse("cat 'unclosed");
        assert_eq!(literals(simple(&s, 0, 0)), ["cat", "unclosed"]);
        let s = parse(") ; cat a $(");
        assert_eq!(literals(simple(&s, 0, 0))[0], "cat");
        assert!(parse("").pipelines.is_empty());
        let s = parse("echo $'a\\tb' \\; c\\\nd");
        assert_eq!(literals(simple(&s, 0, 0)), ["echo", "a\tb", ";", "cd"]);
    }
}
