//! `specgap show RUN [EPISODE]`: a run's episodes as a table, or one episode's transcript.
//!
//! The transcript is read from the episode's trajectory: what the agent was told (system
//! prompt, opening message, tools), each turn's calls and their results, each owner /
//! customer message, and each submission. The private evaluation of a submission is printed
//! apart, in a block labelled as private: the agent never saw it. Long texts are cut (head
//! kept, the cut stated; never when the note would be longer than what it removes) unless
//! `--full` is given.
//!
//! Model usage and cost (the store's `usage` rows, summed over attempts) are shown per episode
//! in the list (with per-role run totals below it: agent, user, and the model panels' judge,
//! extractor and detector) and per role in a transcript's header.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context as _, bail};
use specgap_protocol::event::{Event, EventKind, Usage, UserMessageKind};
use specgap_report::pricing::{Cost, Pricing};
use specgap_store::{EpisodeDetail, EpisodeRow, Role, Store, UsageRow};

/// Arguments of `specgap show`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The run directory.
    pub run: PathBuf,
    /// An episode id, or a unique prefix of one; without it, the run's episodes are listed.
    pub episode: Option<String>,
    /// Print texts in full instead of cutting long ones.
    #[arg(long)]
    pub full: bool,
}

/// Runs `specgap show`.
pub fn exec(args: Args) -> anyhow::Result<ExitCode> {
    let store = Store::open(&args.run).with_context(|| format!("cannot open run {}", args.run.display()))?;
    let text = match &args.episode {
        None => {
            let episodes = store.episodes()?;
            let mut text = episode_table(&episodes, &store.usage()?, &pricing(&store)?);
            text.push_str(&orphan_note(&store, &episodes)?);
            text
        }
        Some(prefix) => {
            let id = resolve_id(&store, prefix)?;
            let limits = if args.full { Limits::NONE } else { Limits::DEFAULT };
            transcript(&store, &id, limits)?
        }
    };
    print!("{text}");
    Ok(ExitCode::SUCCESS)
}

/// A note under the table when episodes are marked `running` but no specgap process is running
/// this store (its runner was killed): they stay so until `--resume` runs them again.
fn orphan_note(store: &Store, episodes: &[EpisodeRow]) -> anyhow::Result<String> {
    let running = episodes.iter().filter(|e| e.status == specgap_store::Status::Running).count();
    if running == 0 || specgap_store::runner_alive(store.dir())? {
        return Ok(String::new());
    }
    let dir = store.dir().display();
    Ok(format!(
        "\nnote: {running} episode{} marked running, but no specgap process is running this store (its runner stopped without finishing them); continue with `specgap run --resume {dir}`\n",
        if running == 1 { " is" } else { "s are" }
    ))
}

/// The one episode id starting with `prefix`.
fn resolve_id(store: &Store, prefix: &str) -> anyhow::Result<String> {
    let matches: Vec<String> = store.episodes()?.into_iter().map(|e| e.id).filter(|id| id.starts_with(prefix)).collect();
    match matches.as_slice() {
        [one] => Ok(one.clone()),
        [] => {
            bail!("no episode id starts with `{prefix}` in {}; `specgap show {}` lists them", store.dir().display(), store.dir().display())
        }
        many => bail!("`{prefix}` is ambiguous: it starts {} episode ids ({}); give more digits", many.len(), many.join(", ")),
    }
}

/// Which of the run's models have a price: its components (`--prices`) and its model panels
/// (their files' prices). A component stores its `price` only when one was given, so a model
/// without one has an unknown cost, not $0.
fn pricing(store: &Store) -> anyhow::Result<Pricing> {
    Ok(Pricing::of(store.config(), &store.panels()?))
}

/// Renders the run's episodes as an aligned text table, sorted by task, agent, condition,
/// start and repeat; when `usage` has rows, each episode also shows its model requests, tokens
/// (input / output) and cost over all roles and attempts (`—` when the run had no price
/// table; `unpriced` for models without a price, named in a note), and the run's totals per
/// role follow the table.
pub fn episode_table(episodes: &[EpisodeRow], usage: &[UsageRow], pricing: &Pricing) -> String {
    let mut episodes: Vec<&EpisodeRow> = episodes.iter().collect();
    episodes.sort_by(|a, b| {
        (&a.task, &a.agent, &a.condition, &a.start, a.repeat, &a.id).cmp(&(&b.task, &b.agent, &b.condition, &b.start, b.repeat, &b.id))
    });
    let agents: BTreeMap<&str, &str> = episodes.iter().map(|e| (e.id.as_str(), e.agent.as_str())).collect();
    let mut header = vec!["id", "task", "agent", "condition", "start", "repeat", "status", "end reason", "subs", "final score"];
    let with_usage = !usage.is_empty();
    if with_usage {
        header.extend(["requests", "tokens in/out", "cost"]);
    }
    let rows: Vec<Vec<String>> = episodes
        .iter()
        .map(|e| {
            let mut row = vec![
                e.id.clone(),
                e.task.clone(),
                e.agent.clone(),
                e.condition.clone(),
                e.start.clone(),
                e.repeat.to_string(),
                e.status.as_str().to_string(),
                e.end_reason.map_or("—", |r| r.as_str()).to_string(),
                e.submissions.to_string(),
                final_score(e),
            ];
            if with_usage {
                let total = summed(usage.iter().filter(|u| u.episode == e.id));
                let cost = cost_text(pricing, with_agents(usage.iter().filter(|u| u.episode == e.id), &agents));
                row.extend(match total {
                    Some(t) => [t.requests.to_string(), format!("{}/{}", t.input_tokens, t.output_tokens), cost],
                    None => ["—".to_string(), "—".to_string(), "—".to_string()],
                });
            }
            row
        })
        .collect();
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let line = |cells: &[String], out: &mut String| {
        let padded: Vec<String> = cells.iter().zip(&widths).map(|(c, w)| format!("{c:<w$}")).collect();
        out.push_str(padded.join("  ").trim_end());
        out.push('\n');
    };
    line(&header.iter().map(|h| h.to_string()).collect::<Vec<_>>(), &mut out);
    for row in &rows {
        line(row, &mut out);
    }
    let _ = writeln!(out, "{} episode(s)", episodes.len());
    if with_usage {
        out.push_str("model usage of the run (all episodes and attempts):\n");
        out.push_str(&role_lines(&with_agents(usage.iter(), &agents), pricing));
    }
    out
}

/// `rows`, each with its episode's agent label (from `agents`, by episode id).
fn with_agents<'a>(rows: impl Iterator<Item = &'a UsageRow>, agents: &BTreeMap<&'a str, &'a str>) -> Vec<(&'a UsageRow, &'a str)> {
    rows.map(|u| (u, agents.get(u.episode.as_str()).copied().unwrap_or(""))).collect()
}

/// The sum of `rows`' usage; `None` without rows.
fn summed<'a>(rows: impl Iterator<Item = &'a UsageRow>) -> Option<Usage> {
    rows.fold(None, |acc, row| {
        let mut total: Usage = acc.unwrap_or_default();
        total.add(&row.usage);
        Some(total)
    })
}

/// The cost cell of a run without a price table.
const NO_PRICE: &str = "—";

/// The summed cost of `rows` (each with its episode's agent) as text: US dollars with four
/// decimals (model calls often cost fractions of a cent), `unpriced` or `$… + unpriced` where
/// a model has no price, `—` when the run had no price table at all.
fn cost_text(pricing: &Pricing, rows: Vec<(&UsageRow, &str)>) -> String {
    if pricing.any_price() { Cost::of(pricing, rows).text() } else { NO_PRICE.to_string() }
}

/// One line per role that has usage rows (agent, user, then any judge, extractor or detector),
/// then the total when more than one role does, then which models had no price.
fn role_lines(rows: &[(&UsageRow, &str)], pricing: &Pricing) -> String {
    let cost = |rows: Vec<(&UsageRow, &str)>| {
        if pricing.any_price() { cost_text(pricing, rows) } else { format!("cost {NO_PRICE} (no price table)") }
    };
    let mut out = String::new();
    let mut present = 0;
    for role in Role::ALL {
        let of_role: Vec<(&UsageRow, &str)> = rows.iter().copied().filter(|(r, _)| r.role == role).collect();
        if let Some(u) = summed(of_role.iter().map(|(r, _)| *r)) {
            present += 1;
            let _ = writeln!(
                out,
                "  {:<5} {} requests ({} retried) · {} input tokens ({} cached) · {} output tokens ({} reasoning) · {:.1} s latency · {}",
                role.as_str(),
                u.requests,
                u.retries,
                u.input_tokens,
                u.cached_tokens,
                u.output_tokens,
                u.reasoning_tokens,
                u.latency_ms as f64 / 1000.0,
                cost(of_role)
            );
        }
    }
    if present > 1 {
        let _ = writeln!(out, "  total {}", cost(rows.to_vec()));
    }
    if pricing.any_price()
        && let Some(note) = specgap_report::pricing::unpriced_note(&Cost::of(pricing, rows.iter().copied()).unpriced_models)
    {
        let _ = writeln!(out, "  {note}");
    }
    out
}

fn final_score(e: &EpisodeRow) -> String {
    match (e.final_score, e.final_success) {
        (Some(score), Some(true)) => format!("{score:.3} success"),
        (Some(score), _) => format!("{score:.3}"),
        _ => "—".to_string(),
    }
}

/// How much of long texts the transcript keeps.
#[derive(Debug, Clone, Copy)]
struct Limits {
    /// Lines kept of a long text (head).
    lines: usize,
    /// Characters kept of a long text.
    chars: usize,
}

impl Limits {
    const DEFAULT: Limits = Limits { lines: 40, chars: 4000 };
    const NONE: Limits = Limits { lines: usize::MAX, chars: usize::MAX };

    /// `text` cut to the limits (head kept), with a note saying what was cut. A cut whose note
    /// would be longer than what it removes is not made: the text is shown whole.
    fn cut(&self, text: &str) -> String {
        let lines: Vec<&str> = text.lines().collect();
        let mut kept = lines.iter().take(self.lines).copied().collect::<Vec<_>>().join("\n");
        let mut was_cut = lines.len() > self.lines;
        if kept.chars().count() > self.chars {
            kept = kept.chars().take(self.chars).collect();
            was_cut = true;
        }
        if !was_cut {
            return kept;
        }
        let total = text.chars().count();
        let shown = kept.chars().count();
        let note = format!("\n… [cut: {shown} of {total} characters shown; `--full` shows everything]");
        if note.chars().count() > total - shown {
            return text.to_string();
        }
        kept.push_str(&note);
        kept
    }
}

/// Indents every line of `text` by `prefix`.
fn indent(text: &str, prefix: &str) -> String {
    if text.is_empty() {
        return format!("{prefix}(empty)\n");
    }
    text.lines().map(|l| format!("{prefix}{l}\n")).collect()
}

/// A readable transcript of episode `id`.
fn transcript(store: &Store, id: &str, limits: Limits) -> anyhow::Result<String> {
    let detail = store.episode_detail(id)?.with_context(|| format!("episode {id} is not in the store"))?;
    let trajectory = specgap_store::read_trajectory(store.dir(), id)?;
    let mut out = header(&detail, &pricing(store)?);
    let speaker = if specgap_engine::condition::Condition::parse(&detail.episode.condition).is_ok_and(|c| c.is_delivery()) {
        "customer"
    } else {
        "owner"
    };
    for event in &trajectory.events {
        render_event(&mut out, event, &detail, speaker, limits);
    }
    if let Some(tail) = &trajectory.truncated {
        let _ = writeln!(
            out,
            "\n[trajectory ends in a damaged frame at byte {} ({} bytes): the run was killed while writing]",
            tail.offset, tail.bytes
        );
    }
    if !detail.errors.is_empty() {
        out.push_str("\n== Errors (all attempts) ==\n");
        for e in &detail.errors {
            let deterministic = if e.error.deterministic { ", deterministic" } else { "" };
            let _ = writeln!(out, "attempt {} #{}: {}{}: {}", e.attempt, e.idx, e.error.class.as_str(), deterministic, e.error.message);
            if !e.error.stderr_tail.is_empty() {
                out.push_str(&indent(&limits.cut(&e.error.stderr_tail), "    stderr | "));
            }
        }
    }
    Ok(out)
}

fn header(detail: &EpisodeDetail, pricing: &Pricing) -> String {
    let e = &detail.episode;
    let mut out = format!(
        "Episode {}\n  task {} · agent {} · condition {} · start {} · repeat {}\n  status {} · end reason {} · attempts {} · submissions {} · final score {} · {} turns, {} tool calls\n",
        e.id,
        e.task,
        e.agent,
        e.condition,
        e.start,
        e.repeat,
        e.status.as_str(),
        e.end_reason.map_or("—", |r| r.as_str()),
        e.attempts,
        e.submissions,
        final_score(e),
        e.turns,
        e.tool_calls,
    );
    if let Some(error) = &e.error {
        let _ = writeln!(out, "  error: {error}");
    }
    if !detail.usage.is_empty() {
        let attempts = detail.usage.iter().map(|u| u.attempt).collect::<std::collections::BTreeSet<_>>().len();
        let over = if attempts > 1 { format!(" (summed over {attempts} attempts)") } else { String::new() };
        let _ = writeln!(out, "  model usage{over}:");
        let rows: Vec<(&UsageRow, &str)> = detail.usage.iter().map(|u| (u, e.agent.as_str())).collect();
        out.push_str(&role_lines(&rows, pricing));
    }
    out
}

fn render_event(out: &mut String, event: &Event, detail: &EpisodeDetail, speaker: &str, limits: Limits) {
    match &event.kind {
        EventKind::EpisodeStart { system_prompt, opening_message, tools, .. } => {
            out.push_str("\n== What the agent was told ==\n-- system prompt --\n");
            out.push_str(&indent(&limits.cut(system_prompt), "  "));
            out.push_str("-- opening message --\n");
            out.push_str(&indent(&limits.cut(opening_message), "  "));
            out.push_str("-- tools --\n");
            render_tools(out, tools);
            out.push_str("\n== Transcript ==\n");
        }
        EventKind::PhaseChange { phase, system_prompt, tools } => {
            let _ = writeln!(out, "\n[phase change: {phase}; the agent is told from here on]");
            out.push_str("  -- system prompt --\n");
            out.push_str(&indent(&limits.cut(system_prompt), "    "));
            out.push_str("  -- tools --\n");
            let mut listed = String::new();
            render_tools(&mut listed, tools);
            out.push_str(&indent(&listed, "  "));
        }
        EventKind::AgentTurn { turn, text, tool_calls, .. } => {
            let _ = writeln!(out, "\n[turn {turn}] agent");
            if let Some(text) = text.as_deref().filter(|t| !t.trim().is_empty()) {
                out.push_str(&indent(&limits.cut(text), "  says | "));
            }
            if tool_calls.is_empty() {
                out.push_str("  (no tool call)\n");
            }
            for call in tool_calls {
                let _ = writeln!(out, "  → {} {}", call.id, call.tool);
                out.push_str(&render_arguments(&call.arguments, limits));
            }
        }
        EventKind::ToolResult { call_id, tool, output, is_error } => {
            let tag = if *is_error { " (error)" } else { "" };
            let _ = writeln!(out, "  ← {call_id} {tool}{tag}");
            out.push_str(&indent(&limits.cut(output), "    | "));
        }
        EventKind::UserMessage { kind, text, .. } => {
            let who = match kind {
                UserMessageKind::Answer => format!("{speaker} answers"),
                UserMessageKind::Feedback => format!("{speaker} reports back"),
                UserMessageKind::Reminder => "harness reminder".to_string(),
                UserMessageKind::Continuation => format!("{speaker} continues"),
                UserMessageKind::Stage => "next stage of the task".to_string(),
            };
            let _ = writeln!(out, "\n[{who}]");
            out.push_str(&indent(&limits.cut(text), "  | "));
        }
        EventKind::UserRequest { request, body, new_messages, tries, .. } => {
            let again = if *tries > 1 { format!(", asked {tries} times after empty replies") } else { String::new() };
            let _ = writeln!(
                out,
                "  [{speaker}'s model request {request}: {} message(s), {} new{again}; `specgap resample` re-sends it]",
                body.iter().filter(|s| matches!(s, specgap_protocol::request::BodySegment::Message(_))).count(),
                new_messages.len()
            );
        }
        EventKind::Overlay { name } => {
            let _ = writeln!(out, "  [harness action apply_overlay: solution `{name}` copied over the workspace]");
        }
        EventKind::Submission { k, summary, automatic } => {
            let how = if *automatic { "automatic final submission" } else { "submitted by the agent" };
            let _ = writeln!(out, "\n[submission {k}: {how}]");
            if let Some(summary) = summary.as_deref().filter(|s| !s.trim().is_empty()) {
                out.push_str(&indent(&limits.cut(summary), "  summary | "));
            }
        }
        EventKind::Evaluation { k, score, success, failing_requirement } => {
            out.push_str(&private_block(*k, *score, *success, failing_requirement.as_deref(), detail));
        }
        EventKind::Budget { which, used, limit } if which == "clarification_rounds" => {
            let _ = writeln!(out, "\n[clarification rounds used up: {used} of {limit}; further questions get the reply to proceed]");
        }
        EventKind::Budget { which, used, limit } => {
            let _ = writeln!(out, "\n[budget exhausted: {which} {used} of {limit}]");
        }
        EventKind::StartEvaluation { state, score, success } => {
            let verdict = if *success {
                "passes the verifier: not a valid residual state (seed 001 requires a failing start)"
            } else {
                "fails the verifier, as a residual state must"
            };
            let _ = writeln!(out, "\n[private: starting state {state} scores {score:.4}; it {verdict}]");
        }
        EventKind::Error { class, message, stderr_tail } => {
            let _ = writeln!(out, "\n[{class} error] {message}");
            if !stderr_tail.is_empty() {
                out.push_str(&indent(&limits.cut(stderr_tail), "  stderr | "));
            }
        }
        EventKind::End { reason, detail: words } => {
            let extra = if words.is_empty() { String::new() } else { format!(": {words}") };
            let _ = writeln!(out, "\n[episode ended: {reason}{extra}]");
        }
        EventKind::ModelExchange { request: seq, class, path, status, outcome, detail: words, usage, .. } => {
            let extra = if words.is_empty() { String::new() } else { format!(" ({words})") };
            let tokens = format!("{} in, {} out", usage.input_tokens, usage.output_tokens);
            let _ = writeln!(out, "  [model request {seq} {class} {path}: {status} {outcome}{extra}, {tokens}]");
        }
        EventKind::BridgeCall { call, .. } => {
            let _ = writeln!(out, "  → {} {} (harness tool)", call.id, call.tool);
            out.push_str(&render_arguments(&call.arguments, limits));
        }
        EventKind::Actions { actions, .. } => {
            for action in actions {
                let path = action.path.as_deref().unwrap_or("-");
                let failed = if action.ok { "" } else { " (failed)" };
                let _ = writeln!(out, "  [{} {} {path}{failed}]", action.via, action.kind.as_str());
            }
        }
        EventKind::FileReads { read, shown, unmeasured, .. } => {
            if unmeasured.is_empty() {
                let _ = writeln!(out, "  [files read: {}; shown: {}]", list_or_none(read), list_or_none(shown));
            } else {
                let _ = writeln!(out, "  [files read: not measured ({unmeasured})]");
            }
        }
        EventKind::AgentExit { status, how, stderr_tail, note } => {
            let status = status.map_or_else(|| "killed".to_string(), |s| format!("status {s}"));
            let _ = writeln!(out, "\n[agent program ended: {how}, {status}]");
            if !note.is_empty() {
                let _ = writeln!(out, "  note: {note}");
            }
            if !stderr_tail.is_empty() {
                out.push_str(&indent(&limits.cut(stderr_tail), "  stderr | "));
            }
        }
        EventKind::NetworkAttempt { .. } => {
            let line = specgap_protocol::event::network_attempt_line(&event.kind).unwrap_or_default();
            let _ = writeln!(out, "  [network attempt outside the gateway: {line}]");
        }
        EventKind::NetworkTripwire { armed, attempts, note } => {
            let state = if *armed { format!("armed, {attempts} attempt(s)") } else { "not armed".to_string() };
            let note = if note.is_empty() { String::new() } else { format!(" ({note})") };
            let _ = writeln!(out, "  [network tripwire: {state}{note}]");
        }
    }
}

/// The offered tools, one per line: name, argument names, first line of the description.
fn render_tools(out: &mut String, tools: &[specgap_protocol::event::ToolSpec]) {
    for tool in tools {
        let args = tool
            .parameters
            .get("properties")
            .and_then(|p| p.as_object())
            .map_or_else(String::new, |p| p.keys().cloned().collect::<Vec<_>>().join(", "));
        let first_line = tool.description.lines().next().unwrap_or_default();
        let _ = writeln!(out, "  {}({args}): {first_line}", tool.name);
    }
}

/// Tool-call arguments, one per line; string values cut like any other text.
fn render_arguments(arguments: &serde_json::Value, limits: Limits) -> String {
    let Some(map) = arguments.as_object() else {
        return indent(&limits.cut(&arguments.to_string()), "      ");
    };
    let mut out = String::new();
    for (key, value) in map {
        match value.as_str() {
            Some(text) if text.contains('\n') => {
                let _ = writeln!(out, "      {key}:");
                out.push_str(&indent(&limits.cut(text), "        | "));
            }
            Some(text) => {
                let _ = writeln!(out, "      {key}: {}", limits.cut(text));
            }
            None => {
                let _ = writeln!(out, "      {key}: {value}");
            }
        }
    }
    out
}

/// The private evaluation of submission `k`, fenced and labelled so no reader mistakes it for
/// something the agent saw.
fn private_block(k: u32, score: f64, success: bool, failing: Option<&str>, detail: &EpisodeDetail) -> String {
    let mut out = format!("  ┌─ PRIVATE evaluation of submission {k} (never shown to the agent or the {})\n", "user model");
    let verdict = if success { "success" } else { "not a success" };
    let _ = writeln!(out, "  │ score {score:.3} · {verdict}");
    if let Some(requirement) = failing {
        let _ = writeln!(out, "  │ highest-priority failing requirement: {requirement}");
    }
    for r in detail.requirement_outcomes.iter().filter(|r| r.k == k) {
        let verdict = if r.pass { "pass" } else { "FAIL" };
        let mode = r.failure_mode.as_deref().map(|m| format!(" ({m})")).unwrap_or_default();
        let _ = writeln!(out, "  │   {verdict:<4} {}{mode}", r.requirement);
    }
    let tests: Vec<_> = detail.tests.iter().filter(|t| t.k == k).collect();
    if !tests.is_empty() {
        let failing: Vec<&str> = tests
            .iter()
            .filter(|t| matches!(t.outcome, specgap_protocol::result::TestOutcome::Fail | specgap_protocol::result::TestOutcome::Error))
            .map(|t| t.test.as_str())
            .collect();
        let _ = writeln!(
            out,
            "  │   tests: {} reported, failing: {}",
            tests.len(),
            if failing.is_empty() { "none".to_string() } else { failing.join(", ") }
        );
    }
    for d in detail.deliveries.iter().filter(|d| d.k == k) {
        let objective = d.objective.map_or("—".to_string(), |o| o.to_string());
        let _ = writeln!(out, "  │   delivery: valid {} · objective {objective} · {} violation(s)", d.valid, d.violations.len());
    }
    out.push_str("  └─\n");
    out
}

/// `a, b` or `none`.
fn list_or_none(files: &[String]) -> String {
    if files.is_empty() { "none".to_string() } else { files.join(", ") }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage_row(role: Role, requests: u64, cost_usd: f64) -> UsageRow {
        UsageRow { episode: "e1".into(), attempt: 1, role, usage: Usage { requests, cost_usd, ..Usage::default() } }
    }

    #[test]
    fn show_cut_marker_is_never_longer_than_what_it_removes() {
        let limits = Limits { lines: 3, chars: 20 };
        // One line too many, two characters: the note would be longer, so nothing is cut.
        assert_eq!(limits.cut("a\nb\nc\nd"), "a\nb\nc\nd");
        assert_eq!(limits.cut(&"x".repeat(25)), "x".repeat(25));
        // A long cut is made and stated.
        let long = "y".repeat(200);
        assert_eq!(limits.cut(&long), format!("{}\n… [cut: 20 of 200 characters shown; `--full` shows everything]", "y".repeat(20)));
        let many: String = (0..100).map(|i| format!("line {i}\n")).collect();
        let cut = limits.cut(&many);
        assert_eq!(cut, "line 0\nline 1\nline 2\n… [cut: 20 of 790 characters shown; `--full` shows everything]");
        // Whatever the text, the result is never longer than the text.
        for n in 0..120 {
            let text: String = (0..n).map(|i| if i % 7 == 6 { '\n' } else { 'z' }).collect();
            assert!(limits.cut(&text).chars().count() <= text.chars().count(), "{n}");
        }
    }

    #[test]
    fn without_a_price_table_costs_are_unknown_not_zero() {
        let rows = [usage_row(Role::Agent, 2, 0.0), usage_row(Role::User, 1, 0.0)];
        let rows: Vec<(&UsageRow, &str)> = rows.iter().map(|r| (r, "chat:m")).collect();
        let chat = |model: &str, price: &str| specgap_protocol::run::ComponentRef {
            spec: format!("chat:{model}"),
            name: None,
            config: toml::from_str(&format!("kind = \"chat\"\nmodel = \"{model}\"\n{price}")).unwrap(),
            hash: "h".into(),
        };
        let unpriced = role_lines(&rows, &Pricing::from_components(&[chat("m", "")], Some(&chat("u", "")), &[]));
        assert_eq!(
            unpriced,
            "  agent 2 requests (0 retried) · 0 input tokens (0 cached) · 0 output tokens (0 reasoning) · 0.0 s latency · cost — (no price table)\n\
             \x20 user  1 requests (0 retried) · 0 input tokens (0 cached) · 0 output tokens (0 reasoning) · 0.0 s latency · cost — (no price table)\n\
             \x20 total cost — (no price table)\n"
        );
        let price = "price = { input_per_mtok = 1.0, output_per_mtok = 2.0 }\n";
        let priced = role_lines(&rows, &Pricing::from_components(&[chat("m", price)], Some(&chat("u", price)), &[]));
        assert!(priced.ends_with("  total $0.0000\n"), "{priced}");
        // Regression: a priced run showed a model without a price at $0.0000 and added it in.
        let partly = role_lines(&rows, &Pricing::from_components(&[chat("m", price)], Some(&chat("u", "")), &[]));
        assert!(partly.contains(" · 0.0 s latency · $0.0000\n  user "), "{partly}");
        assert!(partly.contains(" · 0.0 s latency · unpriced\n  total $0.0000 + unpriced\n"), "{partly}");
        assert!(partly.ends_with("  unpriced: model u has no price in the run's price table (--prices, or the panel file), so its calls' cost is unknown and in no total\n"), "{partly}");
    }
}
