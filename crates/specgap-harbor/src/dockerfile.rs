//! Which Dockerfiles specgap can run without a container image: a *trivial* Dockerfile only
//! picks a base image, a work directory, environment variables and files copied from the
//! build context under the work directory. Those files become the package's `workspace/`, and
//! the task runs on the host's programs; any other Dockerfile needs an image environment
//! (issue 25).

use std::collections::BTreeMap;

/// What a trivial Dockerfile does.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Trivial {
    /// The `FROM` image (replaced by the host's programs).
    pub base: String,
    /// The last `WORKDIR`, if any.
    pub workdir: Option<String>,
    /// `COPY` / `ADD` of build-context paths: (source relative to the context, absolute
    /// destination as written, or made absolute against the `WORKDIR` in force).
    pub copies: Vec<(String, String)>,
    /// `ENV` variables, in order (later ones win).
    pub env: BTreeMap<String, String>,
    /// Instructions that change nothing a command sees (`LABEL`, `CMD`, `ENTRYPOINT`,
    /// `EXPOSE`, `USER`, `ARG`, `SHELL`), as written, for the package's notes.
    pub ignored: Vec<String>,
}

/// Reads a Dockerfile's text.
///
/// # Errors
/// Why it is not trivial (the first instruction that is not, e.g. `RUN`), as a sentence.
pub fn parse(text: &str) -> Result<Trivial, String> {
    let mut trivial = Trivial::default();
    for line in logical_lines(text) {
        let (word, rest) = line.split_once(char::is_whitespace).unwrap_or((line.as_str(), ""));
        let rest = rest.trim();
        match word.to_ascii_uppercase().as_str() {
            "FROM" if trivial.base.is_empty() => trivial.base = rest.split_whitespace().next().unwrap_or_default().to_string(),
            "WORKDIR" => trivial.workdir = Some(absolute(rest, trivial.workdir.as_deref())),
            "ENV" => parse_env(rest, &mut trivial.env)?,
            "COPY" | "ADD" => parse_copy(rest, &mut trivial)?,
            "LABEL" | "CMD" | "ENTRYPOINT" | "EXPOSE" | "USER" | "ARG" | "SHELL" | "STOPSIGNAL" | "HEALTHCHECK" | "MAINTAINER" => {
                trivial.ignored.push(line.clone());
            }
            _ => {
                return Err(format!("its instruction `{}` changes the image", truncate(&line, 60)));
            }
        }
    }
    if trivial.base.is_empty() {
        return Err("it has no FROM".into());
    }
    Ok(trivial)
}

/// The last `WORKDIR` of any Dockerfile (trivial or not), made absolute.
pub fn last_workdir(text: &str) -> Option<String> {
    let mut workdir: Option<String> = None;
    for line in logical_lines(text) {
        let (word, rest) = line.split_once(char::is_whitespace).unwrap_or((line.as_str(), ""));
        if word.eq_ignore_ascii_case("WORKDIR") {
            workdir = Some(absolute(rest.trim(), workdir.as_deref()));
        }
    }
    workdir
}

/// The instructions, continuation lines joined, comments and blank lines dropped.
fn logical_lines(text: &str) -> Vec<String> {
    let mut lines = Vec::new();
    let mut current = String::new();
    for raw in text.lines() {
        let trimmed = raw.trim();
        if current.is_empty() && (trimmed.is_empty() || trimmed.starts_with('#')) {
            continue;
        }
        if let Some(head) = trimmed.strip_suffix('\\') {
            current.push_str(head);
            current.push(' ');
            continue;
        }
        current.push_str(trimmed);
        lines.push(std::mem::take(&mut current));
    }
    if !current.trim().is_empty() {
        lines.push(current);
    }
    lines
}

fn parse_env(rest: &str, env: &mut BTreeMap<String, String>) -> Result<(), String> {
    if rest.contains('$') || rest.contains('"') || rest.contains('\'') {
        return Err(format!("its `ENV {}` needs a shell's expansion or quoting", truncate(rest, 40)));
    }
    if !rest.contains('=') {
        let (key, value) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
        env.insert(key.to_string(), value.trim().to_string());
        return Ok(());
    }
    for pair in rest.split_whitespace() {
        let (key, value) = pair.split_once('=').ok_or_else(|| format!("its `ENV {rest}` mixes forms"))?;
        env.insert(key.to_string(), value.to_string());
    }
    Ok(())
}

fn parse_copy(rest: &str, trivial: &mut Trivial) -> Result<(), String> {
    if rest.starts_with('[') {
        return Err("its COPY uses the JSON form".into());
    }
    let words: Vec<&str> = rest.split_whitespace().filter(|w| !w.starts_with("--chown") && !w.starts_with("--chmod")).collect();
    if words.iter().any(|w| w.starts_with("--")) {
        return Err(format!("its `COPY {}` copies from another stage or with options", truncate(rest, 40)));
    }
    let Some((destination, sources)) = words.split_last() else {
        return Err("it has a COPY without a destination".into());
    };
    if sources.is_empty() {
        return Err("it has a COPY without a source".into());
    }
    // A trailing `/` (or `.`) says "into this directory"; keep it for the caller.
    let into_dir = destination.ends_with('/') || *destination == ".";
    let absolute_destination = absolute(destination, trivial.workdir.as_deref());
    let destination = if into_dir && absolute_destination != "/" { format!("{absolute_destination}/") } else { absolute_destination };
    for source in sources {
        if source.contains("://") || source.contains('*') || source.contains('?') || source.split('/').any(|p| p == "..") {
            return Err(format!("its COPY source {source} is not a plain path of the build context"));
        }
        trivial.copies.push((source.trim_start_matches("./").to_string(), destination.clone()));
    }
    Ok(())
}

/// `path` made absolute against `workdir` (Docker's default `/`), without a trailing `/`
/// unless it is `/`.
fn absolute(path: &str, workdir: Option<&str>) -> String {
    let joined = if path.starts_with('/') { path.to_string() } else { format!("{}/{path}", workdir.unwrap_or("")) };
    let mut parts: Vec<&str> = Vec::new();
    for part in joined.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            other => parts.push(other),
        }
    }
    format!("/{}", parts.join("/"))
}

fn truncate(text: &str, max: usize) -> String {
    if text.chars().count() <= max { text.to_string() } else { format!("{}…", text.chars().take(max).collect::<String>()) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_base_a_workdir_and_copies_are_trivial() {
        let parsed = parse("# hi\nFROM ubuntu:24.04\nWORKDIR /app\nENV A=1 B=2\nCOPY files/ /app/\nCOPY run.sh .\nLABEL x=y\n").unwrap();
        assert_eq!(parsed.base, "ubuntu:24.04");
        assert_eq!(parsed.workdir.as_deref(), Some("/app"));
        assert_eq!(parsed.copies, vec![("files/".to_string(), "/app/".to_string()), ("run.sh".to_string(), "/app/".to_string())]);
        assert_eq!(parsed.env.get("B").map(String::as_str), Some("2"));
        assert_eq!(parsed.ignored, vec!["LABEL x=y".to_string()]);
    }

    #[test]
    fn a_run_is_not_trivial() {
        assert_eq!(
            parse("FROM python:3.12\nRUN pip install \\\n  numpy\n"),
            Err("its instruction `RUN pip install  numpy` changes the image".into())
        );
        assert_eq!(parse("WORKDIR /x\n"), Err("it has no FROM".into()));
    }
}
