//! The JSON API behind the pages: one function per endpoint, shared by the live server and
//! the static-site writer, each taking the [`Access`] of the reader.
//!
//! ```text
//! runs                                   the runs served
//! compare?a&b&select_a&select_b          run b against run a, as `specgap compare` ([`crate::compare_runs`])
//! run/{r}/version                        the store's data version and whether a runner is alive (polled for live updates)
//! run/{r}/progress                       planned, finished, running, failed, interrupted episodes and the time left (polled)
//! run/{r}/facets                         the values each filter can take, with counts
//! run/{r}/episodes?FILTER&order&offset&limit    one page of episodes and the total
//! run/{r}/episodes.csv?FILTER            every matching episode as CSV (the list's columns)
//! run/{r}/histogram?FILTER               final scores of the matching episodes in ten bins, and the unscored
//! run/{r}/matrix?FILTER                  task × agent outcomes
//! run/{r}/summary                        the report's groups, usage, errors and not-applicable combinations
//! run/{r}/search?q&cursor&FILTER         transcripts searched in parts: matches and the cursor to continue from
//! run/{r}/episode/{id}                   the episode's rows (private parts per access: evaluations, package text, panels' ballots and extractions)
//! run/{r}/episode/{id}/version           events written so far and the status (polled while it runs)
//! run/{r}/episode/{id}/events?offset&limit  one page of events, long strings folded
//! run/{r}/episode/{id}/event/{i}         event i whole
//! run/{r}/episode/{id}/timeline          every event as [seq, type, elapsed_ms, turn, tokens]
//! run/{r}/episode/{id}/diff/{k}          workspace.diff of submission k (0: the residual start)  [private]
//! run/{r}/episode/{id}/result/{k}        result.json of submission k (0: the residual start)    [private]
//! run/{r}/episode/{id}/trajectory.jsonl  the raw trajectory (private events removed for public access)
//! run/{r}/episode/{id}/atif.json         the episode as an ATIF trajectory
//! syntheses                              the syntheses served ([`crate::synthesis`])
//! synthesis/{s}                          a synthesis's journal: limits, usage, outcome, the entries
//! synthesis/{s}/entry/{seq}              one journal entry with its hand-off                    [private]
//! ```
//!
//! FILTER: `task`, `agent`, `condition`, `start`, `status`, `end_reason`, `min_score`,
//! `max_score`, `repeat` ([`specgap_store::EpisodeFilter`]). Page sizes are capped at
//! [`MAX_PAGE`] episodes and [`MAX_EVENTS`] events. A parameter an endpoint does not read
//! (besides the viewer's `token`) is a 400 naming it and the ones it reads.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};
use specgap_store::{EpisodeFilter, EpisodeOrder, EpisodeRow, ErrorClass, Status};

use crate::access::{Access, visible_event};
use crate::error::ViewError;
use crate::events::{fold, searchable_text, snippet};
use crate::runs::{RunEntry, RunSet, lock};

/// Most episodes one page returns.
pub const MAX_PAGE: u64 = 500;
/// Most events one page returns.
pub const MAX_EVENTS: usize = 1_000;
/// Events per page unless asked otherwise (and in a static site, always).
pub const EVENT_PAGE: usize = 200;
/// Wall time one search call may spend before it returns its cursor.
const SEARCH_BUDGET: Duration = Duration::from_millis(300);
/// Episodes with matches one search call returns at most.
const SEARCH_MATCHES: usize = 50;
/// Hits listed per matching episode.
const SEARCH_HITS: usize = 3;
/// Episodes listed in the summary's error table.
const ERROR_ROWS: u64 = 200;

/// A query string, decoded.
pub type Query = HashMap<String, String>;

/// What an endpoint answers.
#[derive(Debug)]
pub enum Reply {
    /// A JSON document.
    Json(Value),
    /// Bytes of a file (`text/plain` diffs and JSON Lines, `application/json` results).
    Bytes {
        /// The body.
        body: Vec<u8>,
        /// Its content type.
        content_type: &'static str,
    },
    /// No such run, episode, file or endpoint (the words say which).
    NotFound(String),
    /// A malformed parameter (the words say which).
    BadRequest(String),
    /// The item is private and the reader's access does not include it.
    Forbidden(String),
}

/// Answers the API path `segments` (after `api/`).
pub fn answer(set: &Arc<RunSet>, access: Access, segments: &[&str], query: &Query) -> Reply {
    match route(set, access, segments, query) {
        Ok(reply) => reply,
        Err(e) => {
            let mut text = e.to_string();
            let mut source = std::error::Error::source(&e);
            while let Some(cause) = source {
                text.push_str(": ");
                text.push_str(&cause.to_string());
                source = cause.source();
            }
            Reply::NotFound(text)
        }
    }
}

/// The episode filter's parameters (FILTER in the module guide).
const FILTER_PARAMETERS: [&str; 9] = ["task", "agent", "condition", "start", "status", "end_reason", "min_score", "max_score", "repeat"];

/// The query parameters the endpoint `segments` reads, besides `token` (the viewer's own,
/// taken by the server).
fn parameters_of(segments: &[&str]) -> Vec<&'static str> {
    let with_filter = |more: &[&'static str]| FILTER_PARAMETERS.iter().chain(more).copied().collect();
    match segments {
        ["run", _, "episodes"] => with_filter(&["order", "offset", "limit"]),
        ["run", _, "matrix"] | ["run", _, "histogram"] | ["run", _, "episodes.csv"] => with_filter(&[]),
        ["compare"] => vec!["a", "b", "select_a", "select_b"],
        ["run", _, "search"] => with_filter(&["q", "cursor"]),
        ["run", _, "episode", _, "events"] => vec!["offset", "limit"],
        _ => Vec::new(),
    }
}

/// The first parameter (in name order) the endpoint does not read, in words: a misspelt
/// filter used to be ignored, and the reader saw every episode as if it matched.
fn unknown_parameter(segments: &[&str], query: &Query) -> Option<String> {
    let known = parameters_of(segments);
    let mut names: Vec<&String> = query.keys().filter(|k| k.as_str() != "token" && !known.contains(&k.as_str())).collect();
    names.sort();
    let name = names.first()?;
    let endpoint = segments.join("/");
    Some(if known.is_empty() {
        format!("unknown query parameter `{name}`: {endpoint} takes none")
    } else {
        format!("unknown query parameter `{name}`: {endpoint} takes {}", known.join(", "))
    })
}

fn route(set: &Arc<RunSet>, access: Access, segments: &[&str], query: &Query) -> Result<Reply, ViewError> {
    if let Some(why) = unknown_parameter(segments, query) {
        return Ok(Reply::BadRequest(why));
    }
    match segments {
        ["runs"] => Ok(Reply::Json(runs_json(set, access)?)),
        ["syntheses"] => Ok(Reply::Json(crate::synthesis::syntheses_json(&set.syntheses, access)?)),
        ["synthesis", s, rest @ ..] => synthesis_route(set, access, s, rest),
        ["compare"] => {
            let run_of = |key: &str| -> Result<usize, String> {
                let text = query.get(key).map(String::as_str).unwrap_or("");
                text.parse::<usize>()
                    .ok()
                    .filter(|i| *i < set.len())
                    .ok_or_else(|| format!("`{key}` must name a run of this viewer (0 to {}), not `{text}`", set.len().saturating_sub(1)))
            };
            let (a, b) = match (run_of("a"), run_of("b")) {
                (Ok(a), Ok(b)) => (a, b),
                (Err(why), _) | (_, Err(why)) => return Ok(Reply::BadRequest(why)),
            };
            let text = |key: &str| query.get(key).map(String::as_str).unwrap_or("");
            match crate::compare_runs::compare_json(set, a, b, text("select_a"), text("select_b"), access) {
                Ok(value) => Ok(Reply::Json(value)),
                Err(why) => Ok(Reply::BadRequest(why)),
            }
        }
        ["run", r, rest @ ..] => {
            let Some(index) = r.parse::<usize>().ok().filter(|i| *i < set.len()) else {
                return Ok(Reply::NotFound(format!("no run {r} in this viewer")));
            };
            let run = &set.runs[index];
            let filter = match filter_of(query) {
                Ok(f) => f,
                Err(why) => return Ok(Reply::BadRequest(why)),
            };
            match rest {
                ["version"] => Ok(Reply::Json(version_json(run)?)),
                ["progress"] => Ok(Reply::Json(crate::progress::progress_json(run, now_ms())?)),
                ["facets"] => Ok(Reply::Json(facets_json(run)?)),
                ["episodes"] => {
                    let (order, offset, limit) = match page_of(query) {
                        Ok(p) => p,
                        Err(why) => return Ok(Reply::BadRequest(why)),
                    };
                    Ok(Reply::Json(episodes_json(run, &filter, order, offset, limit, access)?))
                }
                ["matrix"] => Ok(Reply::Json(matrix_json(run, &filter)?)),
                ["histogram"] => Ok(Reply::Json(histogram_json(run, &filter)?)),
                ["episodes.csv"] => {
                    Ok(Reply::Bytes { body: crate::csv::episodes_csv(run, &filter, access)?, content_type: "text/csv; charset=utf-8" })
                }
                ["summary"] => Ok(Reply::Json(summary_json(set, index, access)?)),
                ["search"] => {
                    let cursor = match number(query, "cursor") {
                        Ok(c) => c.unwrap_or(0),
                        Err(why) => return Ok(Reply::BadRequest(why)),
                    };
                    let q = query.get("q").map(String::as_str).unwrap_or("");
                    Ok(Reply::Json(search_json(run, &filter, q, cursor, access)?))
                }
                ["episode", id, rest @ ..] => episode_route(run, id, rest, query, access),
                _ => Ok(Reply::NotFound(format!("no endpoint run/{r}/{}", rest.join("/")))),
            }
        }
        _ => Ok(Reply::NotFound(format!("no endpoint {}", segments.join("/")))),
    }
}

fn synthesis_route(set: &RunSet, access: Access, s: &str, rest: &[&str]) -> Result<Reply, ViewError> {
    let Some((index, synthesis)) = s.parse::<usize>().ok().and_then(|i| set.syntheses.get(i).map(|x| (i, x))) else {
        return Ok(Reply::NotFound(format!("no synthesis {s} in this viewer")));
    };
    match rest {
        [] => Ok(Reply::Json(crate::synthesis::synthesis_json(synthesis, index, access)?)),
        ["entry", seq] => {
            if !access.private {
                return Ok(Reply::Forbidden("a journal entry's hand-off is private".into()));
            }
            let Ok(seq) = seq.parse::<usize>() else {
                return Ok(Reply::BadRequest(format!("entry `{seq}` is not a number")));
            };
            match crate::synthesis::entry_json(synthesis, seq)? {
                Some(entry) => Ok(Reply::Json(entry)),
                None => Ok(Reply::NotFound(format!("synthesis {s} has no journal entry {seq}"))),
            }
        }
        _ => Ok(Reply::NotFound(format!("no endpoint synthesis/{s}/{}", rest.join("/")))),
    }
}

fn episode_route(run: &RunEntry, id: &str, rest: &[&str], query: &Query, access: Access) -> Result<Reply, ViewError> {
    if !is_episode_id(id) {
        return Ok(Reply::NotFound(format!("`{id}` is not an episode id (16 hexadecimal digits)")));
    }
    let Some(row) = run.store.episode(id)? else {
        return Ok(Reply::NotFound(format!("episode {id} is not in this run")));
    };
    match rest {
        [] => Ok(Reply::Json(detail_json(run, &row, access)?)),
        ["version"] => {
            let events = run.index(id)?.map_or(0, |(_, index)| lock(&index).len());
            Ok(Reply::Json(json!({"events": events, "status": row.status.as_str(), "live": is_live(run, &row)})))
        }
        ["events"] => {
            let offset = match number(query, "offset") {
                Ok(o) => o.unwrap_or(0) as usize,
                Err(why) => return Ok(Reply::BadRequest(why)),
            };
            let limit = match number(query, "limit") {
                Ok(l) => (l.unwrap_or(EVENT_PAGE as u64) as usize).clamp(1, MAX_EVENTS),
                Err(why) => return Ok(Reply::BadRequest(why)),
            };
            Ok(Reply::Json(events_json(run, &row, offset, limit, access)?))
        }
        ["event", i] => {
            let Ok(i) = i.parse::<usize>() else {
                return Ok(Reply::BadRequest(format!("event index `{i}` is not a number")));
            };
            match event_json(run, id, i, access)? {
                Some(event) => Ok(Reply::Json(event)),
                None => Ok(Reply::NotFound(format!("episode {id} has no event {i}"))),
            }
        }
        ["timeline"] => Ok(Reply::Json(timeline_json(run, id, access)?)),
        ["diff", k] | ["result", k] => {
            let Ok(k) = k.parse::<u32>() else {
                return Ok(Reply::BadRequest(format!("submission `{k}` is not a number")));
            };
            if !access.private {
                return Ok(Reply::Forbidden("workspace diffs and evaluation results are private".into()));
            }
            let diff = rest[0] == "diff";
            match private_file(run, id, k, diff) {
                Some(bytes) => {
                    Ok(Reply::Bytes { body: bytes, content_type: if diff { "text/plain; charset=utf-8" } else { "application/json" } })
                }
                None => Ok(Reply::NotFound(format!(
                    "episode {id} has no {} for {}",
                    if diff { "workspace.diff" } else { "result.json" },
                    if k == 0 { "its start".to_string() } else { format!("submission {k}") }
                ))),
            }
        }
        ["trajectory.jsonl"] => Ok(Reply::Bytes { body: raw_trajectory(run, id, access)?, content_type: "text/plain; charset=utf-8" }),
        ["atif.json"] => {
            let options = specgap_atif::ExportOptions { include_private: access.private };
            let trajectory = specgap_atif::episode_trajectory(&run.store, id, options)?;
            let value =
                serde_json::to_value(&trajectory).map_err(|source| ViewError::Json { what: "the ATIF trajectory".into(), source })?;
            Ok(Reply::Json(value))
        }
        _ => Ok(Reply::NotFound(format!("no endpoint episode/{id}/{}", rest.join("/")))),
    }
}

/// Whether `id` has the form of an episode id: 16 lowercase hexadecimal digits. Anything
/// else (a path, `..`) is refused before the store or the filesystem is consulted.
pub fn is_episode_id(id: &str) -> bool {
    id.len() == 16 && id.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

fn number(query: &Query, key: &str) -> Result<Option<u64>, String> {
    match query.get(key).filter(|v| !v.is_empty()) {
        None => Ok(None),
        Some(v) => v.parse::<u64>().map(Some).map_err(|_| format!("`{key}` must be a whole number, not `{v}`")),
    }
}

/// The episode filter of a query (empty values do not filter).
pub fn filter_of(query: &Query) -> Result<EpisodeFilter, String> {
    let text = |key: &str| query.get(key).filter(|v| !v.is_empty()).cloned();
    let score = |key: &str| -> Result<Option<f64>, String> {
        match query.get(key).filter(|v| !v.is_empty()) {
            None => Ok(None),
            Some(v) => {
                v.parse::<f64>().ok().filter(|x| x.is_finite()).map(Some).ok_or_else(|| format!("`{key}` must be a number, not `{v}`"))
            }
        }
    };
    let status = match text("status") {
        None => None,
        Some(s) => Some(
            Status::parse(&s)
                .map_err(|_| format!("`{s}` is not a status (running, finished, not_applicable, infra_error, eval_error, interrupted)"))?,
        ),
    };
    let repeat = match number(query, "repeat")? {
        None => None,
        Some(r) => Some(u32::try_from(r).map_err(|_| format!("`repeat` {r} is too large"))?),
    };
    Ok(EpisodeFilter {
        task: text("task"),
        agent: text("agent"),
        condition: text("condition"),
        start: text("start"),
        status,
        end_reason: text("end_reason"),
        min_score: score("min_score")?,
        max_score: score("max_score")?,
        repeat,
    })
}

fn page_of(query: &Query) -> Result<(EpisodeOrder, u64, u64), String> {
    let order = match query.get("order").map(String::as_str).unwrap_or("key") {
        "" | "key" => EpisodeOrder::Key,
        "score_asc" => EpisodeOrder::ScoreAscending,
        "score_desc" => EpisodeOrder::ScoreDescending,
        "latest" => EpisodeOrder::Latest,
        other => return Err(format!("`order` must be key, score_asc, score_desc or latest, not `{other}`")),
    };
    let offset = number(query, "offset")?.unwrap_or(0);
    let limit = number(query, "limit")?.unwrap_or(100).clamp(1, MAX_PAGE);
    Ok((order, offset, limit))
}

/// A run's label: the directory as given (live), or only its last component (public: a
/// published site does not name the publisher's directories).
pub(crate) fn run_label(run: &RunEntry, access: Access) -> String {
    if access.private {
        run.given.display().to_string()
    } else {
        run.dir.file_name().map_or_else(|| "run".to_string(), |n| n.to_string_lossy().into_owned())
    }
}

fn is_live(run: &RunEntry, row: &EpisodeRow) -> bool {
    row.status == Status::Running && specgap_store::runner_alive(&run.dir).unwrap_or(false)
}

/// `runs`.
pub(crate) fn runs_json(set: &RunSet, access: Access) -> Result<Value, ViewError> {
    let mut out = Vec::new();
    for (i, run) in set.runs.iter().enumerate() {
        let config = run.store.config();
        let facets = run.store.episode_facets()?;
        out.push(json!({
            "index": i,
            "label": run_label(run, access),
            "seed": config.seed.to_string(),
            "specgap_version": config.specgap_version,
            "protocol_version": config.protocol_version,
            "repeats": config.repeats,
            // Labels, as the episodes name their components (a configured name, else the spec).
            "agents": config.agents.iter().map(|a| a.label().to_string()).collect::<Vec<_>>(),
            "users": config.users.iter().map(|u| u.label().to_string()).collect::<Vec<_>>(),
            "conditions": config.conditions,
            "starts": config.starts,
            "tasks": config.tasks.iter().map(|t| t.name.clone()).collect::<Vec<_>>(),
            "episodes": facets.episodes,
            "statuses": facets.statuses,
            "live": specgap_store::runner_alive(&run.dir).unwrap_or(false),
            "progress": crate::progress::progress_json(run, now_ms())?,
        }));
    }
    Ok(Value::Array(out))
}

/// Now, in milliseconds since the Unix epoch (0 on a clock before it).
pub(crate) fn now_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

/// `run/{r}/version`.
pub(crate) fn version_json(run: &RunEntry) -> Result<Value, ViewError> {
    Ok(json!({"data_version": run.store.data_version()?, "live": specgap_store::runner_alive(&run.dir).unwrap_or(false)}))
}

/// `run/{r}/facets`.
pub(crate) fn facets_json(run: &RunEntry) -> Result<Value, ViewError> {
    let f = run.store.episode_facets()?;
    Ok(json!({
        "episodes": f.episodes,
        "task": f.tasks,
        "agent": f.agents,
        "condition": f.conditions,
        "start": f.starts,
        "status": f.statuses,
        "end_reason": f.end_reasons,
        "max_repeat": f.max_repeat,
    }))
}

/// One episode row as the pages show it.
pub(crate) fn episode_row_json(row: &EpisodeRow, access: Access) -> Value {
    // An evaluation error's message may quote the evaluator.
    let error = match (&row.error, row.status) {
        (Some(_), Status::EvalError) if !access.private => Some("evaluation error (details are private)".to_string()),
        (e, _) => e.clone(),
    };
    json!({
        "id": row.id,
        "task": row.task,
        "agent": row.agent,
        "user": row.user,
        "condition": row.condition,
        "start": row.start,
        "repeat": row.repeat,
        "family": serde_json::to_value(row.family).unwrap_or(Value::Null),
        "scoring_kind": serde_json::to_value(row.scoring_kind).unwrap_or(Value::Null),
        "status": row.status.as_str(),
        "end_reason": row.end_reason.map(|r| r.as_str()),
        "attempts": row.attempts,
        "submissions": row.submissions,
        "final_score": row.final_score,
        "final_success": row.final_success,
        "turns": row.turns,
        "tool_calls": row.tool_calls,
        "wall_ms": row.wall_ms,
        "started_ts": row.started_ts,
        "ended_ts": row.ended_ts,
        "error": error,
    })
}

/// `run/{r}/episodes`.
pub(crate) fn episodes_json(
    run: &RunEntry,
    filter: &EpisodeFilter,
    order: EpisodeOrder,
    offset: u64,
    limit: u64,
    access: Access,
) -> Result<Value, ViewError> {
    let page = run.store.episode_page(filter, order, offset, limit)?;
    Ok(json!({
        "total": page.total,
        "offset": offset,
        "limit": limit,
        "rows": page.rows.iter().map(|r| episode_row_json(r, access)).collect::<Vec<_>>(),
    }))
}

/// Bins of the score histogram (tenths of [0, 1]).
pub const HISTOGRAM_BINS: u32 = 10;

/// `run/{r}/histogram`: `bins[i]` counts final scores in [i/10, (i+1)/10) (1.0 in the last),
/// `unscored` the matching episodes without a final score.
pub(crate) fn histogram_json(run: &RunEntry, filter: &EpisodeFilter) -> Result<Value, ViewError> {
    let (bins, unscored) = run.store.score_histogram(filter, HISTOGRAM_BINS)?;
    Ok(json!({"bins": bins, "unscored": unscored}))
}

/// `run/{r}/matrix`.
pub(crate) fn matrix_json(run: &RunEntry, filter: &EpisodeFilter) -> Result<Value, ViewError> {
    let cells = run.store.outcome_matrix(filter)?;
    Ok(Value::Array(
        cells
            .into_iter()
            .map(|c| {
                json!({
                    "task": c.task, "agent": c.agent, "episodes": c.episodes, "scored": c.scored,
                    "mean_score": c.mean_score, "successes": c.successes, "errors": c.errors, "unfinished": c.unfinished,
                })
            })
            .collect(),
    ))
}

/// `run/{r}/summary`: the tables that SQL answers at once, and the report's (computed in the
/// background once per change of the store; `report_state` says whether it is ready).
pub(crate) fn summary_json(set: &Arc<RunSet>, index: usize, access: Access) -> Result<Value, ViewError> {
    let version = set.runs[index].store.data_version()?;
    let (report, state) = report_part(set, index, version);
    summary_with(&set.runs[index], version, report, state, access)
}

/// `run/{r}/summary` with the report computed now, in this thread (the static site).
pub(crate) fn summary_json_now(set: &Arc<RunSet>, index: usize, access: Access) -> Result<Value, ViewError> {
    let run = &set.runs[index];
    let version = run.store.data_version()?;
    let (report, state) = match compute_report(run) {
        Ok(value) => (Some(Arc::new(value)), "ready".to_string()),
        Err(e) => (None, format!("error: {e}")),
    };
    summary_with(run, version, report, state, access)
}

fn summary_with(run: &RunEntry, version: i64, report: Option<Arc<Value>>, state: String, access: Access) -> Result<Value, ViewError> {
    let usage: Vec<Value> = run
        .store
        .usage_by_agent()?
        .into_iter()
        .map(|u| {
            let mut value = serde_json::to_value(&u.usage).unwrap_or(Value::Null);
            value["agent"] = json!(u.agent);
            value["role"] = json!(u.role.as_str());
            value["episodes"] = json!(u.episodes);
            value
        })
        .collect();
    let not_applicable: Vec<Value> = run
        .store
        .not_applicable()?
        .into_iter()
        .map(|n| json!({"task": n.task, "agent": n.agent, "condition": n.condition, "start": n.start, "reason": n.reason}))
        .collect();
    let mut errors = Vec::new();
    for status in [Status::InfraError, Status::EvalError, Status::Interrupted, Status::Running] {
        let filter = EpisodeFilter { status: Some(status), ..EpisodeFilter::default() };
        let page = run.store.episode_page(&filter, EpisodeOrder::Key, 0, ERROR_ROWS)?;
        errors.push(json!({
            "status": status.as_str(),
            "total": page.total,
            "rows": page.rows.iter().map(|r| episode_row_json(r, access)).collect::<Vec<_>>(),
        }));
    }
    let mut report = report.map(|r| (*r).clone()).unwrap_or(Value::Null);
    if !access.private
        && let Some(map) = report.as_object_mut()
    {
        map.remove("warnings");
    }
    Ok(json!({
        "data_version": version,
        "report_state": state,
        "report": report,
        "usage_by_agent": usage,
        "priced": has_price_table(run),
        "not_applicable": not_applicable,
        "errors": errors,
    }))
}

fn has_price_table(run: &RunEntry) -> bool {
    let config = run.store.config();
    config.agents.iter().chain(&config.users).any(|c| c.config.contains_key("price"))
}

/// The cached report part and its state (`ready`, `computing`, `stale` while a newer one is
/// computed, `error: ...`); starts a computation when the store changed.
fn report_part(set: &Arc<RunSet>, index: usize, version: i64) -> (Option<Arc<Value>>, String) {
    let run = &set.runs[index];
    let mut state = lock(&run.summary);
    if state.version == Some(version) && (state.value.is_some() || state.error.is_some()) {
        return match &state.error {
            Some(e) => (None, format!("error: {e}")),
            None => (state.value.clone(), "ready".into()),
        };
    }
    if !state.computing {
        state.computing = true;
        let set = Arc::clone(set);
        let spawned = std::thread::Builder::new().name("specgap-view-report".into()).spawn(move || {
            let run = &set.runs[index];
            let outcome = compute_report(run);
            let mut state = lock(&run.summary);
            state.computing = false;
            state.version = Some(version);
            match outcome {
                Ok(value) => {
                    state.value = Some(Arc::new(value));
                    state.error = None;
                }
                Err(e) => state.error = Some(e),
            }
        });
        if spawned.is_err() {
            state.computing = false;
            return (state.value.clone(), "error: cannot start a thread for the report".into());
        }
    }
    let label = if state.value.is_some() { "stale" } else { "computing" };
    (state.value.clone(), label.into())
}

/// The report of one run, read-only: the offline judge runs in memory and records nothing.
fn compute_report(run: &RunEntry) -> Result<Value, String> {
    let rows = run.store.rows().map_err(|e| e.to_string())?;
    let data = specgap_report::RunData::from_rows(&run.dir, run.store.config().clone(), rows, None);
    let report =
        specgap_report::build_report(std::slice::from_ref(&data), &specgap_report::ReportOptions::default()).map_err(|e| e.to_string())?;
    let full = serde_json::to_value(&report).map_err(|e| e.to_string())?;
    let mut out = Map::new();
    for key in ["group_by", "judge", "extraction", "groups", "usage", "residual", "outcome_costs", "warnings"] {
        if let Some(v) = full.get(key) {
            out.insert(key.into(), v.clone());
        }
    }
    Ok(Value::Object(out))
}

/// `run/{r}/search`: scans the filtered episodes in key order from `cursor`, for at most
/// [`SEARCH_BUDGET`], returning the episodes whose transcripts contain `q` (case-insensitive)
/// and where to continue (`next: null` when every episode was scanned).
pub(crate) fn search_json(run: &RunEntry, filter: &EpisodeFilter, q: &str, cursor: u64, access: Access) -> Result<Value, ViewError> {
    let needle = q.trim().to_lowercase();
    let total = run.store.episode_page(filter, EpisodeOrder::Key, 0, 1)?.total;
    if needle.is_empty() {
        return Ok(json!({"matches": [], "next": null, "scanned": 0, "total": total}));
    }
    let started = Instant::now();
    let mut matches = Vec::new();
    let mut position = cursor;
    'scan: loop {
        let ids = run.store.episode_ids(filter, EpisodeOrder::Key, position, 64)?;
        if ids.is_empty() {
            break;
        }
        for id in ids {
            position += 1;
            if let Some(hits) = search_episode(run, &id, &needle, access)? {
                let row = run.store.episode(&id)?;
                let mut found = row.map(|r| episode_row_json(&r, access)).unwrap_or_else(|| json!({"id": id}));
                found["hits"] = Value::Array(hits);
                matches.push(found);
            }
            if matches.len() >= SEARCH_MATCHES || started.elapsed() >= SEARCH_BUDGET {
                break 'scan;
            }
        }
    }
    let next = (position < total).then_some(position);
    Ok(json!({"matches": matches, "next": next, "scanned": position, "total": total}))
}

/// The first hits of `needle` in episode `id`'s events, or `None` without any.
fn search_episode(run: &RunEntry, id: &str, needle: &str, access: Access) -> Result<Option<Vec<Value>>, ViewError> {
    let Some(path) = run.confined(&Path::new(specgap_store::EPISODES_DIR).join(id).join(specgap_store::TRAJECTORY_FILE)) else {
        return Ok(None);
    };
    let (events, _) = specgap_store::read_trajectory_values(&path)?;
    let mut hits = Vec::new();
    for (i, event) in events.into_iter().enumerate() {
        let event = visible_event(event, access);
        let text = searchable_text(&event);
        if let Some(s) = snippet(&text, needle) {
            hits.push(json!({"index": i, "seq": event.get("seq"), "type": event.get("type"), "snippet": s}));
            if hits.len() >= SEARCH_HITS {
                break;
            }
        }
    }
    Ok((!hits.is_empty()).then_some(hits))
}

/// `run/{r}/episode/{id}`.
pub(crate) fn detail_json(run: &RunEntry, row: &EpisodeRow, access: Access) -> Result<Value, ViewError> {
    let Some(detail) = run.store.episode_detail(&row.id)? else {
        return Ok(Value::Null);
    };
    let (events, pending) = match run.index(&row.id)? {
        Some((_, index)) => {
            let index = lock(&index);
            (index.len(), index.pending_tail())
        }
        None => (0, None),
    };
    let live = is_live(run, row);
    let submissions: Vec<Value> = detail
        .submissions
        .iter()
        .map(|s| {
            let mut v = json!({
                "k": s.k, "automatic": s.automatic, "agent_declared": s.agent_declared,
                "valid_evaluation": s.valid_evaluation, "kind": s.kind.map(|k| serde_json::to_value(k).unwrap_or(Value::Null)),
                "score": s.score, "success": s.success, "diff_bytes": s.diff_bytes,
            });
            if access.private {
                v["reward"] = json!(s.reward);
                v["failing_requirement"] = json!(s.failing_requirement);
                v["error"] = json!(s.error);
                v["has_diff"] = json!(private_path(run, &row.id, s.k, true).is_some());
                v["has_result"] = json!(private_path(run, &row.id, s.k, false).is_some());
            }
            v
        })
        .collect();
    let questions: Vec<Value> = detail
        .questions
        .iter()
        .map(|q| {
            let mut v = json!({"idx": q.idx, "turn": q.question.turn, "text": q.question.text, "answer": q.question.answer});
            if access.private {
                v["matched_targets"] = json!(q.question.matched_targets);
            }
            v
        })
        .collect();
    let usage: Vec<Value> = detail
        .usage
        .iter()
        .map(|u| {
            let mut v = serde_json::to_value(&u.usage).unwrap_or(Value::Null);
            v["attempt"] = json!(u.attempt);
            v["role"] = json!(u.role.as_str());
            v
        })
        .collect();
    let errors: Vec<Value> = detail
        .errors
        .iter()
        .map(|e| {
            let hidden = e.error.class == ErrorClass::Evaluation && !access.private;
            json!({
                "attempt": e.attempt, "idx": e.idx, "class": e.error.class.as_str(), "deterministic": e.error.deterministic,
                "message": if hidden { "evaluation error (details are private)".to_string() } else { e.error.message.clone() },
                "stderr_tail": if hidden { String::new() } else { e.error.stderr_tail.clone() },
            })
        })
        .collect();
    let mut out = json!({
        "episode": episode_row_json(row, access),
        "private": access.private,
        "submissions": submissions,
        "questions": questions,
        "usage": usage,
        "priced": has_price_table(run),
        "errors": errors,
        "events": events,
        "pending_tail": pending.map(|t| json!({"offset": t.offset, "bytes": t.bytes})),
        "live": live,
        "residual": row.start.starts_with("residual:"),
    });
    if access.private {
        out["start"] = json!({
            "state": detail.start_result.as_ref().map(|s| s.state.clone()),
            "reward": detail.start_result.as_ref().and_then(|s| s.reward),
            "score": detail.start_result.as_ref().and_then(|s| s.score),
            "success": detail.start_result.as_ref().and_then(|s| s.success),
            "has_diff": private_path(run, &row.id, 0, true).is_some(),
            "has_result": private_path(run, &row.id, 0, false).is_some(),
        });
        out["requirement_outcomes"] = Value::Array(
            detail
                .requirement_outcomes
                .iter()
                .map(|r| json!({"k": r.k, "requirement": r.requirement, "pass": r.pass, "failure_mode": r.failure_mode, "measured": r.measured, "detail": r.detail}))
                .collect(),
        );
        out["tests"] = Value::Array(
            detail
                .tests
                .iter()
                .map(|t| json!({"k": t.k, "test": t.test, "outcome": serde_json::to_value(t.outcome).unwrap_or(Value::Null)}))
                .collect(),
        );
        out["deliveries"] = Value::Array(
            detail
                .deliveries
                .iter()
                .map(|d| json!({"k": d.k, "valid": d.valid, "objective": d.objective, "signature": d.signature.map(|s| serde_json::to_value(s).unwrap_or(Value::Null)), "violations": serde_json::to_value(&d.violations).unwrap_or(Value::Null)}))
                .collect(),
        );
        out["judgements"] = Value::Array(
            detail
                .judgements
                .iter()
                .map(|j| json!({"judge": j.judgement.judge, "target": j.judgement.target, "verdict": j.judgement.verdict, "matched_question_indices": j.judgement.matched_question_indices}))
                .collect(),
        );
        panel_parts(run, &detail, &mut out)?;
        if let Some(text) = run.package_text(&row.task) {
            out["requirements"] = Value::Array(
                text.requirements.iter().map(|(id, priority, stated, description)| json!({"id": id, "priority": priority, "stated": stated, "description": description})).collect(),
            );
            out["targets"] = Value::Array(
                text.targets
                    .iter()
                    .map(|(id, issue_type, domain, description, answer)| json!({"id": id, "issue_type": issue_type, "domain": domain, "description": description, "answer": answer}))
                    .collect(),
            );
        }
    }
    Ok(out)
}

/// The model panels' work on one episode (private: a ballot quotes the clarification targets
/// and the registered answers it was asked about): `panels` — the configuration of every panel
/// that voted on it or recorded a verdict; `ballots` — every ballot with its vote, and its
/// request and response with long texts folded to their heads ([`fold`]); `extractions` —
/// the extraction panel's verdict per submission (seed 002 §4.1, A.3).
fn panel_parts(run: &RunEntry, detail: &specgap_store::EpisodeDetail, out: &mut Value) -> Result<(), ViewError> {
    let ballots: Vec<Value> = detail
        .ballots
        .iter()
        .map(|row| {
            let b = &row.ballot;
            let (exchange, folded) = fold(json!({"request": b.request, "response": b.response}));
            json!({
                "panel": b.panel, "subject": b.subject, "seat": b.seat, "model": b.model, "position": b.position,
                "prompt_version": b.prompt_version, "outcome": b.outcome.as_str(), "vote": b.vote, "error": b.error,
                "exchange": exchange, "folded": folded,
            })
        })
        .collect();
    let extractions: Vec<Value> = detail
        .extractions
        .iter()
        .map(|row| {
            let e = &row.extraction;
            json!({
                "panel": e.panel, "k": e.k, "status": e.status.as_str(), "score": e.score, "success": e.success, "valid": e.valid,
                "objective": e.objective, "signature": e.signature.map(|s| serde_json::to_value(s).unwrap_or(Value::Null)),
                "routes": e.routes, "agreeing": e.agreeing,
            })
        })
        .collect();
    let used: std::collections::BTreeSet<&str> = detail
        .ballots
        .iter()
        .map(|b| b.ballot.panel.as_str())
        .chain(detail.extractions.iter().map(|e| e.extraction.panel.as_str()))
        .chain(detail.judgements.iter().map(|j| j.judgement.judge.as_str()))
        .collect();
    let panels: Vec<Value> = if used.is_empty() {
        Vec::new()
    } else {
        run.store
            .panels()?
            .into_iter()
            .filter(|p| used.contains(p.name.as_str()))
            .map(|p| json!({"name": p.name, "use": p.use_.as_str(), "config": p.config, "prompt_version": p.prompt_version, "prompt_hash": p.prompt_hash}))
            .collect()
    };
    out["panels"] = Value::Array(panels);
    out["ballots"] = Value::Array(ballots);
    out["extractions"] = Value::Array(extractions);
    Ok(())
}

/// `run/{r}/episode/{id}/events`.
pub(crate) fn events_json(run: &RunEntry, row: &EpisodeRow, offset: usize, limit: usize, access: Access) -> Result<Value, ViewError> {
    let Some((path, index)) = run.index(&row.id)? else {
        return Ok(json!({"total": 0, "offset": offset, "events": [], "live": is_live(run, row)}));
    };
    let (total, raw) = {
        let index = lock(&index);
        (index.len(), index.read(&path, offset..offset.saturating_add(limit))?)
    };
    let events: Vec<Value> = raw
        .into_iter()
        .enumerate()
        .map(|(i, event)| {
            let (event, folded) = fold(visible_event(event, access));
            json!({"index": offset + i, "event": event, "folded": folded})
        })
        .collect();
    Ok(json!({"total": total, "offset": offset, "events": events, "live": is_live(run, row)}))
}

/// `run/{r}/episode/{id}/event/{i}`: the whole event, or `None` past the end.
pub(crate) fn event_json(run: &RunEntry, id: &str, i: usize, access: Access) -> Result<Option<Value>, ViewError> {
    let Some((path, index)) = run.index(id)? else {
        return Ok(None);
    };
    let mut events = lock(&index).read(&path, i..i + 1)?;
    Ok(events.pop().map(|e| visible_event(e, access)))
}

/// `run/{r}/episode/{id}/timeline`.
pub(crate) fn timeline_json(run: &RunEntry, id: &str, access: Access) -> Result<Value, ViewError> {
    let Some((path, index)) = run.index(id)? else {
        return Ok(json!({"events": []}));
    };
    let cached = lock(&run.timelines).get(id).cloned();
    let events = {
        let index = lock(&index);
        let total = index.len();
        // A cached timeline longer than the file was of an earlier attempt: read anew.
        match cached.filter(|c| c.len() <= total) {
            Some(c) if c.len() == total => c,
            Some(c) => {
                let mut all = (*c).clone();
                all.extend(index.read_as::<crate::events::TimelineEvent>(&path, c.len()..total)?);
                Arc::new(all)
            }
            None => Arc::new(index.read_as::<crate::events::TimelineEvent>(&path, 0..total)?),
        }
    };
    if lock(&run.timelines).len() > 256 {
        lock(&run.timelines).clear();
    }
    lock(&run.timelines).insert(id.to_string(), Arc::clone(&events));
    let entries: Vec<Value> = events.iter().map(|e| e.entry(crate::access::kind_visible(&e.kind, access))).collect();
    Ok(json!({"events": entries}))
}

/// The path of a private file of episode `id`: its `workspace.diff` (`diff`) or
/// `result.json` of submission `k`, `k = 0` being the residual start; `None` when it does not
/// exist or leaves the run directory.
fn private_path(run: &RunEntry, id: &str, k: u32, diff: bool) -> Option<std::path::PathBuf> {
    let name = if diff { specgap_store::START_DIFF_FILE } else { "result.json" };
    let base = Path::new(specgap_store::EPISODES_DIR).join(id);
    let relative = if k == 0 { base.join("start").join(name) } else { base.join("submissions").join(k.to_string()).join(name) };
    run.confined(&relative).filter(|p| p.is_file())
}

/// The bytes of a private file of episode `id` ([`private_path`]).
pub(crate) fn private_file(run: &RunEntry, id: &str, k: u32, diff: bool) -> Option<Vec<u8>> {
    fs_err::read(private_path(run, id, k, diff)?).ok()
}

/// The raw trajectory as JSON Lines, each event as `access` may see it.
pub(crate) fn raw_trajectory(run: &RunEntry, id: &str, access: Access) -> Result<Vec<u8>, ViewError> {
    let Some((path, index)) = run.index(id)? else {
        return Ok(Vec::new());
    };
    let events = {
        let index = lock(&index);
        index.read(&path, 0..index.len())?
    };
    let mut out = Vec::new();
    for event in events {
        let line =
            serde_json::to_vec(&visible_event(event, access)).map_err(|source| ViewError::Json { what: "an event".into(), source })?;
        out.extend_from_slice(&line);
        out.push(b'\n');
    }
    Ok(out)
}
