//! Reading, writing and comparing `run.toml` ([`RunConfig`]).

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::path::Path;

use specgap_protocol::run::{ComponentRef, RunConfig};

use crate::error::StoreError;

/// File name of the resolved configuration inside a run directory.
pub const RUN_TOML: &str = "run.toml";

/// Which fields a comparison of two configurations skips.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Comparison {
    /// Skip `shard` (shards of one run differ only there).
    pub ignore_shard: bool,
    /// Skip `tasks[].path` and replay agents' source paths (machines of a sharded run mount
    /// the suite and the scripts at different paths; content hashes identify them).
    pub ignore_task_paths: bool,
    /// Skip `plan_hash` and `merge` (merge compares plan hashes itself, with its own message,
    /// and a merged run joins the shards it lacks).
    pub ignore_plan_and_merge: bool,
}

/// Exact equality, field by field.
pub(crate) const EXACT: Comparison = Comparison { ignore_shard: false, ignore_task_paths: false, ignore_plan_and_merge: false };

/// What `merge` compares: everything but `shard`, task paths, `plan_hash` and `merge`.
pub(crate) const SHARDS: Comparison = Comparison { ignore_shard: true, ignore_task_paths: true, ignore_plan_and_merge: true };

/// Reads `dir/run.toml`.
///
/// # Errors
/// [`StoreError::NotAStore`] when it does not exist, [`StoreError::ConfigParse`] when it is not
/// a valid [`RunConfig`].
pub(crate) fn read_config(dir: &Path) -> Result<RunConfig, StoreError> {
    let path = dir.join(RUN_TOML);
    if !path.is_file() {
        return Err(StoreError::NotAStore { dir: dir.to_path_buf() });
    }
    let text = fs_err::read_to_string(&path)?;
    toml::from_str(&text).map_err(|source| StoreError::ConfigParse { path, source })
}

/// Writes `dir/run.toml` through a temporary file and a rename, so a crash never leaves half a
/// configuration.
pub(crate) fn write_config(dir: &Path, config: &RunConfig) -> Result<(), StoreError> {
    let text = toml::to_string(config).map_err(StoreError::ConfigSerialize)?;
    crate::files::write_atomic(&dir.join(RUN_TOML), text.as_bytes())
}

/// The first difference between two configurations, in words naming the field (and the task,
/// agent or user) and both values; `None` when they agree under `comparison`.
pub(crate) fn config_difference(a: &RunConfig, a_label: &str, b: &RunConfig, b_label: &str, comparison: Comparison) -> Option<String> {
    let scalar = |field: &str, x: &dyn Debug, y: &dyn Debug| {
        let (x, y) = (format!("{x:?}"), format!("{y:?}"));
        (x != y).then(|| format!("`{field}` differs: {x} in {a_label}, {y} in {b_label}"))
    };
    protocol_difference(a, a_label, b, b_label)
        .or_else(|| paper_protocol_difference(a, a_label, b, b_label))
        .or_else(|| scalar("specgap_version", &a.specgap_version, &b.specgap_version))
        .or_else(|| scalar("seed", &a.seed, &b.seed))
        .or_else(|| scalar("repeats", &a.repeats, &b.repeats))
        .or_else(|| scalar("retries", &a.retries, &b.retries))
        .or_else(|| scalar("sandbox", &a.sandbox, &b.sandbox))
        .or_else(|| if comparison.ignore_shard { None } else { scalar("shard", &a.shard, &b.shard) })
        .or_else(|| task_difference(a, a_label, b, b_label, comparison))
        .or_else(|| component_difference("agent", &a.agents, a_label, &b.agents, b_label))
        .or_else(|| component_difference("user", &a.users, a_label, &b.users, b_label))
        .or_else(|| scalar("conditions", &a.conditions, &b.conditions))
        .or_else(|| scalar("starts", &a.starts, &b.starts))
        .or_else(|| other_field_difference(a, a_label, b, b_label, comparison))
}

/// Runs of different protocol versions (`RunConfig::protocol_version`) measure different
/// things, so this is checked first and said plainly.
fn protocol_difference(a: &RunConfig, a_label: &str, b: &RunConfig, b_label: &str) -> Option<String> {
    (a.protocol_version != b.protocol_version).then(|| {
        format!(
            "the protocol version differs: {} in {a_label}, {} in {b_label} (what a condition means changed between \
             them, so their episodes cannot form one run)",
            a.protocol_version, b.protocol_version
        )
    })
}

/// Runs under different paper protocols (`[protocol]`, issue 24) end and score episodes by
/// different rules; said plainly, naming both, before any other field.
fn paper_protocol_difference(a: &RunConfig, a_label: &str, b: &RunConfig, b_label: &str) -> Option<String> {
    let name = |c: &RunConfig| {
        let names: Vec<&str> = c.protocols.iter().map(|p| p.name.as_str()).collect();
        if names.is_empty() { "none recorded".to_string() } else { names.join(" + ") }
    };
    if a.protocols == b.protocols {
        return None;
    }
    let (x, y) = (name(a), name(b));
    // One protocol records its rules per condition: other conditions are the difference to name
    // (the `conditions` field, below), not the protocol (fresh-user trial).
    if x == y && a.conditions != b.conditions {
        return None;
    }
    let what = if x == y {
        format!("protocol {x} in both, with different rules or deviations")
    } else {
        format!("protocol {x} in {a_label}, {y} in {b_label}")
    };
    Some(format!(
        "the paper protocol differs: {what} (their episodes ran under different end rules and budgets, so they cannot \
         form one run)"
    ))
}

/// Compares every top-level field through its JSON form, so fields added to [`RunConfig`]
/// later (e.g. `budget`) are compared without a change here. Fields checked above compare
/// equal by the time this runs; ignored ones are blanked first.
fn other_field_difference(a: &RunConfig, a_label: &str, b: &RunConfig, b_label: &str, comparison: Comparison) -> Option<String> {
    let as_fields = |c: &RunConfig| {
        let mut c = c.clone();
        if comparison.ignore_shard {
            c.shard = None;
        }
        if comparison.ignore_task_paths {
            c.tasks.iter_mut().for_each(|t| t.path.clear());
            // A replay agent's spec holds where its script lay on that machine; its label,
            // hash and `source_sha256` (compared above) say what it replays.
            c.agents.iter_mut().filter(|a| a.spec.starts_with("replay:")).for_each(|a| a.spec = "replay:".into());
        }
        if comparison.ignore_plan_and_merge {
            c.plan_hash = None;
            c.merge = None;
        }
        match serde_json::to_value(&c) {
            Ok(serde_json::Value::Object(map)) => map,
            // A RunConfig always serializes to an object; compare nothing rather than fail.
            _ => serde_json::Map::new(),
        }
    };
    let (fa, fb) = (as_fields(a), as_fields(b));
    let keys: std::collections::BTreeSet<&String> = fa.keys().chain(fb.keys()).collect();
    keys.into_iter().find_map(|key| {
        let (x, y) = (fa.get(key), fb.get(key));
        (x != y).then(|| {
            let show = |v: Option<&serde_json::Value>| v.map_or("(absent)".to_string(), |v| v.to_string());
            format!("`{key}` differs: {} in {a_label}, {} in {b_label}", show(x), show(y))
        })
    })
}

fn task_difference(a: &RunConfig, a_label: &str, b: &RunConfig, b_label: &str, comparison: Comparison) -> Option<String> {
    let a_tasks: BTreeMap<&str, _> = a.tasks.iter().map(|t| (t.name.as_str(), t)).collect();
    let b_tasks: BTreeMap<&str, _> = b.tasks.iter().map(|t| (t.name.as_str(), t)).collect();
    for (name, ta) in &a_tasks {
        let Some(tb) = b_tasks.get(name) else {
            return Some(format!("task `{name}` is in {a_label} but not in {b_label}"));
        };
        if ta.hash != tb.hash {
            return Some(format!("task `{name}` has hash {} in {a_label} and {} in {b_label}", ta.hash, tb.hash));
        }
        if ta.environments != tb.environments {
            let digests = |t: &specgap_protocol::run::TaskRef| {
                let listed: Vec<String> = t.environments.iter().map(|e| format!("{} {}", e.role, e.digest)).collect();
                if listed.is_empty() { "none".to_string() } else { listed.join(", ") }
            };
            return Some(format!("task `{name}` has environment digests {} in {a_label} and {} in {b_label}", digests(ta), digests(tb)));
        }
        if !comparison.ignore_task_paths && ta.path != tb.path {
            return Some(format!("task `{name}` is read from {} in {a_label} and {} in {b_label}", ta.path, tb.path));
        }
    }
    if let Some(name) = b_tasks.keys().find(|name| !a_tasks.contains_key(*name)) {
        return Some(format!("task `{name}` is in {b_label} but not in {a_label}"));
    }
    let order = |c: &RunConfig| c.tasks.iter().map(|t| t.name.clone()).collect::<Vec<_>>();
    let (oa, ob) = (order(a), order(b));
    (oa != ob).then(|| format!("task order differs: {oa:?} in {a_label}, {ob:?} in {b_label}"))
}

fn component_difference(what: &str, a: &[ComponentRef], a_label: &str, b: &[ComponentRef], b_label: &str) -> Option<String> {
    let by_spec = |list: &[ComponentRef]| list.iter().map(|c| (c.label().to_string(), c.clone())).collect::<BTreeMap<_, _>>();
    let (ma, mb) = (by_spec(a), by_spec(b));
    for (spec, ca) in &ma {
        let Some(cb) = mb.get(spec) else {
            return Some(format!("{what} `{spec}` is in {a_label} but not in {b_label}"));
        };
        if ca.hash != cb.hash {
            return Some(format!("{what} `{spec}` has configuration hash {} in {a_label} and {} in {b_label}", ca.hash, cb.hash));
        }
        if ca.config != cb.config {
            return Some(format!("{what} `{spec}` has a different configuration in {a_label} and {b_label}"));
        }
    }
    if let Some(spec) = mb.keys().find(|spec| !ma.contains_key(*spec)) {
        return Some(format!("{what} `{spec}` is in {b_label} but not in {a_label}"));
    }
    let specs = |list: &[ComponentRef]| list.iter().map(|c| c.label().to_string()).collect::<Vec<_>>();
    let (sa, sb) = (specs(a), specs(b));
    (sa != sb).then(|| format!("{what} order differs: {sa:?} in {a_label}, {sb:?} in {b_label}"))
}
