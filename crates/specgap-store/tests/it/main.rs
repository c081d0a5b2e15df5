//! Integration tests of the run store: one binary, one module per concern.

mod audits;
mod crash;
mod create;
mod dump;
mod merge;
mod panels;
mod publish;
mod query;
mod read_order;
mod resume;
mod roundtrip;
mod trajectory;

use std::collections::BTreeMap;
use std::path::Path;

use specgap_protocol::event::EventKind;
use specgap_protocol::package::Family;
use specgap_protocol::result::{EvalResult, Scored, ScoringKind};
use specgap_protocol::run::{EndReason, EpisodeKey, RunConfig};
use specgap_store::{EpisodeMeta, EpisodeSummary, Status, Store, SubmissionRecord};

/// A run configuration with one task, one agent, one user. Parsed from TOML so that fields
/// added to `RunConfig` with serde defaults do not break these tests.
pub fn config(seed: u64, shard: Option<[u32; 2]>) -> RunConfig {
    let shard = shard.map_or(String::new(), |[i, n]| format!("shard = [{i}, {n}]"));
    let text = format!(
        r#"
specgap_version = "0.1.0"
seed = {seed}
repeats = 2
retries = 1
sandbox = true
{shard}
conditions = ["partial"]
starts = ["clean"]

[[tasks]]
name = "examples/x"
hash = "aaa"
path = "/suite/x"

[[agents]]
spec = "scripted:gold"
hash = "ag1"
config = {{ overlay = "gold" }}

[[users]]
spec = "relay"
hash = "us1"
config = {{}}
"#
    );
    toml::from_str(&text).unwrap()
}

/// The key of repeat `repeat` of the only task, agent and user of [`config`].
pub fn key(repeat: u32, start: &str) -> EpisodeKey {
    EpisodeKey {
        task: "examples/x".into(),
        task_hash: "aaa".into(),
        agent: "scripted:gold".into(),
        agent_hash: "ag1".into(),
        user_hash: "us1".into(),
        condition: "partial".into(),
        start: start.into(),
        repeat,
        seed: 7,
    }
}

/// Metadata of a requirement-scored swe task.
pub fn meta() -> EpisodeMeta {
    EpisodeMeta { user: "relay".into(), family: Family::Swe, scoring_kind: ScoringKind::Requirement }
}

/// Parses a result.json text.
pub fn result(json: &str) -> EvalResult {
    serde_json::from_str(json).unwrap()
}

/// A finished summary ending with `reason` after 3 turns, 5 tool calls and `wall_ms`.
pub fn summary(status: Status, reason: Option<EndReason>, wall_ms: u64) -> EpisodeSummary {
    EpisodeSummary { status, end_reason: reason, turns: 3, tool_calls: 5, wall_ms, error: None }
}

/// Runs a small complete episode: an overlay event, one submission scored `score`, finished.
pub fn run_episode(store: &Store, repeat: u32, score: f64, wall_ms: u64) -> String {
    let mut writer = store.begin_episode(&key(repeat, "clean"), &meta()).unwrap();
    writer.event(EventKind::Overlay { name: "gold".into() }).unwrap();
    let success = score == 1.0;
    let pass = if success { "true" } else { "false" };
    let record = SubmissionRecord {
        automatic: false,
        agent_declared: true,
        result: Some(result(&format!(r#"{{"version":1,"requirements":{{"a":{{"pass":{pass}}}}}}}"#))),
        scored: Some(Scored { kind: ScoringKind::Requirement, score, success }),
        failing_requirement: (!success).then(|| "a".to_string()),
        error: None,
        diff: "diff --git a/x b/x\n".into(),
    };
    writer.write_submission(1, &record).unwrap();
    let id = writer.id().to_string();
    writer.finish(summary(Status::Finished, Some(EndReason::Accepted), wall_ms)).unwrap();
    id
}

/// Every file under `dir`, relative, sorted.
pub fn files_under(dir: &Path) -> Vec<String> {
    fn walk(base: &Path, dir: &Path, out: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(base, &path, out);
            } else {
                out.push(path.strip_prefix(base).unwrap().display().to_string());
            }
        }
    }
    let mut out = Vec::new();
    if dir.exists() {
        walk(dir, dir, &mut out);
    }
    out.sort();
    out
}

/// Table name → row count of a dump.
pub fn counts(dump: &BTreeMap<String, Vec<Vec<String>>>) -> BTreeMap<String, usize> {
    dump.iter().map(|(table, rows)| (table.clone(), rows.len())).collect()
}
