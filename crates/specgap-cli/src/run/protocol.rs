//! Which paper protocol a run follows (`--protocol`, issue 24; docs/decisions.md "Named
//! protocols"), and how far it is faithful to it: the overrides of its flags, the offline
//! stand-ins for its model roles, and the combinations no paper runs. Recorded in run.toml's
//! `[[protocols]]`.

use anyhow::bail;
use specgap_engine::{Ask, Condition};
use specgap_protocol::package::Budget;
use specgap_protocol::run::{ComponentRef, ProtocolRecord};
use specgap_rules::{Paper, Protocol, RoleName};
use specgap_task::TaskPackage;

/// What the run's protocols are, resolved.
pub struct RunProtocols {
    /// The protocol `--protocol` named (the runner holds every episode to it); `None`: each
    /// condition runs under its paper's protocol.
    pub named: Option<Protocol>,
    /// `run.toml`'s `[[protocols]]`.
    pub records: Vec<ProtocolRecord>,
    /// The repeats of the run: `--repeats`, else the named protocol's, else 1.
    pub repeats: u32,
}

/// Everything of the run the protocols are checked against.
pub struct RunShape<'a> {
    /// `--protocol` (a name or a file).
    pub spec: Option<&'a str>,
    /// `--allow-stand-in`.
    pub allow_stand_in: bool,
    /// The parsed conditions.
    pub conditions: &'a [Condition],
    /// The starts as given (`clean`, `residual:<id>`, `residual:all`).
    pub starts: &'a [String],
    /// The user (relay or chat:, with its detector panel).
    pub user: &'a ComponentRef,
    /// `--repeats`.
    pub repeats: Option<u32>,
    /// The budget flags.
    pub budget: &'a Budget,
    /// `--clarification-rounds`.
    pub clarification_rounds: Option<u32>,
    /// The suite.
    pub tasks: &'a [TaskPackage],
}

/// Resolves the run's protocols (module guide).
///
/// # Errors
/// An unknown protocol, a custom file that does not load, a condition or start the named
/// protocol does not offer, and — for a named protocol without `--allow-stand-in` — a model
/// role of the protocol that the run would play with an offline stand-in.
pub fn resolve(shape: &RunShape<'_>) -> anyhow::Result<RunProtocols> {
    let presets: Vec<String> = shape.conditions.iter().map(|c| c.preset().name()).collect();
    let groups: Vec<(Protocol, Vec<&Condition>)> = match shape.spec {
        Some(spec) => {
            let protocol = specgap_rules::by_spec(spec)?;
            protocol.check_offers(presets.iter().map(String::as_str), shape.starts.iter().map(String::as_str))?;
            vec![(protocol, shape.conditions.iter().collect())]
        }
        None => by_paper(shape.conditions),
    };
    let named = shape.spec.is_some();
    let repeats = match (shape.repeats, &groups[..]) {
        (Some(n), _) => n,
        (None, [(protocol, _)]) if named => protocol.repeats,
        _ => 1,
    };
    let mut records = Vec::with_capacity(groups.len());
    for (protocol, conditions) in &groups {
        let stand_ins = stand_ins(protocol, conditions, shape.user);
        if named && !stand_ins.is_empty() && !shape.allow_stand_in {
            bail!(
                "protocol {} has model roles this run plays offline ({}); give the model (--user chat:<model>, \
                 --detector-panel FILE), or --allow-stand-in to run with the stand-in, named as a deviation in the report",
                protocol.name,
                stand_ins.join("; ")
            );
        }
        records.push(ProtocolRecord {
            name: protocol.name.clone(),
            named,
            allow_stand_in: shape.allow_stand_in,
            conditions: conditions.iter().map(|c| c.canonical()).collect(),
            overrides: overrides(protocol, conditions, shape, repeats),
            stand_ins,
            departures: departures(protocol, conditions, shape.starts, shape.tasks),
            rules: protocol.to_toml()?,
        });
    }
    let named = if named { groups.into_iter().next().map(|(protocol, _)| protocol) } else { None };
    Ok(RunProtocols { named, records, repeats })
}

/// The default starts of a run under `--protocol spec`: those of `defaults` the protocol
/// offers (a protocol without residual starts runs from clean only); all of them without one.
///
/// # Errors
/// An unknown protocol or a custom file that does not load.
pub fn default_starts(spec: Option<&str>, defaults: Vec<String>) -> anyhow::Result<Vec<String>> {
    let Some(spec) = spec else { return Ok(defaults) };
    let protocol = specgap_rules::by_spec(spec)?;
    Ok(defaults.into_iter().filter(|start| protocol.offers_start(start)).collect())
}

/// The default conditions of a run under `--protocol spec`: those of `defaults` the protocol
/// offers, or — when it offers none of them — its own list without `oracle` (which needs a
/// target: `oracle:R`); all of `defaults` without one. So `--protocol tiganeval` alone runs
/// partial, full and literal instead of refusing `hidden`, a condition the user never named.
///
/// # Errors
/// An unknown protocol or a custom file that does not load.
pub fn default_conditions(spec: Option<&str>, defaults: Vec<String>) -> anyhow::Result<Vec<String>> {
    let Some(spec) = spec else { return Ok(defaults) };
    let protocol = specgap_rules::by_spec(spec)?;
    let offered: Vec<String> = defaults.into_iter().filter(|c| protocol.offers_condition(c)).collect();
    if !offered.is_empty() {
        return Ok(offered);
    }
    Ok(protocol.conditions.iter().filter(|c| c.as_str() != "oracle").cloned().collect())
}

/// The named protocol of a stored run, from its rules.
///
/// # Errors
/// A stored rules table that is no protocol.
pub fn stored(records: &[ProtocolRecord]) -> anyhow::Result<Option<Protocol>> {
    match records.iter().find(|r| r.named) {
        Some(record) => Ok(Some(Protocol::from_toml(record.rules.clone())?)),
        None => Ok(None),
    }
}

/// Whether some task of the suite runs `condition` from one of the residual `starts`
/// (`residual:all` standing for each of a task's states).
fn runs_from_a_residual_start(condition: &Condition, starts: &[&String], tasks: &[TaskPackage]) -> bool {
    tasks.iter().any(|task| {
        let ids: Vec<String> = starts
            .iter()
            .flat_map(|start| match start.strip_prefix("residual:") {
                Some("all") => task.residual_states().keys().cloned().collect::<Vec<_>>(),
                Some(id) => vec![id.to_string()],
                None => Vec::new(),
            })
            .collect();
        ids.into_iter()
            .any(|id| specgap_engine::condition::applicability(task, condition, &specgap_engine::condition::Start::Residual(id)).is_ok())
    })
}

/// Without `--protocol`: the conditions grouped by their paper, in the papers' order.
fn by_paper(conditions: &[Condition]) -> Vec<(Protocol, Vec<&Condition>)> {
    let mut groups: Vec<(Paper, Vec<&Condition>)> = Vec::new();
    for condition in conditions {
        let paper = Paper::of_preset(&condition.preset().name()).unwrap_or(Paper::Tiganeval);
        match groups.iter_mut().find(|(p, _)| *p == paper) {
            Some((_, list)) => list.push(condition),
            None => groups.push((paper, vec![condition])),
        }
    }
    groups.sort_by_key(|(paper, _)| *paper);
    groups.into_iter().map(|(paper, list)| (paper.protocol(), list)).collect()
}

/// Whether the run's conditions put questions or observations to an owner (seed 000).
fn uses_owner(conditions: &[&Condition]) -> bool {
    conditions.iter().any(|c| !c.is_delivery() && (c.ask() != Ask::Off || c.feedback()))
}

/// Whether the run's conditions put questions to a customer (seed 002).
fn uses_customer(conditions: &[&Condition]) -> bool {
    conditions.iter().any(|c| c.is_delivery() && c.ask() != Ask::Off)
}

/// The model roles of `protocol` the run plays with an offline stand-in, in words. The coverage
/// judge and the extractors run after the episodes: the report names theirs.
fn stand_ins(protocol: &Protocol, conditions: &[&Condition], user: &ComponentRef) -> Vec<String> {
    let chat_user = user.spec.starts_with("chat:");
    let detector = user.config.contains_key(specgap_panels::detector::DETECTOR_KEY);
    let mut out = Vec::new();
    for (role, panel) in protocol.model_roles() {
        let stand_in = match role {
            RoleName::Owner if uses_owner(conditions) && !chat_user => "the relay owner (offline)",
            RoleName::Customer if uses_customer(conditions) && !chat_user => "the relay customer (offline)",
            RoleName::QuestionDetector if uses_customer(conditions) && !detector => "the question-mark rule (offline)",
            _ => continue,
        };
        out.push(format!("{role}: {stand_in} stands in for {}", panel.describe()));
    }
    out
}

fn cap_words(n: u64) -> String {
    if n == 0 { "no cap".into() } else { n.to_string() }
}

/// The run's settings that differ from `protocol`'s rules, in words.
fn overrides(protocol: &Protocol, conditions: &[&Condition], shape: &RunShape<'_>, repeats: u32) -> Vec<String> {
    let b = &protocol.budgets;
    let mut out = Vec::new();
    let mut flag = |key: &str, flag: &str, given: Option<u64>, own: u64| {
        if let Some(n) = given.filter(|n| *n != own) {
            out.push(format!("{key} = {n} ({flag}; the protocol's: {})", cap_words(own)));
        }
    };
    flag("turns", "--turns", shape.budget.turns.map(u64::from), b.turns.into());
    flag("tool_calls", "--tool-calls", shape.budget.tool_calls.map(u64::from), b.tool_calls.into());
    flag("wall_sec", "--wall-sec", shape.budget.wall_sec, b.wall_sec);
    if conditions.iter().any(|c| c.is_delivery()) {
        flag("clarification_rounds", "--clarification-rounds", shape.clarification_rounds.map(u64::from), b.clarification_rounds.into());
    }
    if repeats != protocol.repeats {
        out.push(format!("repeats = {repeats} (the protocol's: {})", protocol.repeats));
    }
    for condition in conditions {
        let canonical = condition.canonical();
        if canonical != condition.preset().name() {
            out.push(format!("condition {canonical} (the protocol's: {})", condition.preset().name()));
        }
    }
    for task in shape.tasks {
        let own = &task.manifest().budget;
        let mut set = |key: &str, value: Option<u64>, protocol_value: u64| {
            if let Some(n) = value.filter(|n| *n != protocol_value) {
                out.push(format!("task {}: [budget] {key} = {n} (the protocol's: {})", task.name(), cap_words(protocol_value)));
            }
        };
        set("turns", own.turns.map(u64::from), b.turns.into());
        set("tool_calls", own.tool_calls.map(u64::from), b.tool_calls.into());
        set("wall_sec", own.wall_sec, b.wall_sec);
    }
    out
}

/// Residual starts under a condition of another paper: no paper runs them (issue 24 item 1).
fn departures(protocol: &Protocol, conditions: &[&Condition], starts: &[String], tasks: &[TaskPackage]) -> Vec<String> {
    let residual: Vec<&String> = starts.iter().filter(|s| s.starts_with("residual")).collect();
    if residual.is_empty() || protocol.name == specgap_rules::CUSTOM || protocol.offers_start("residual") {
        return Vec::new();
    }
    // Only combinations that run count: a condition none of whose tasks has an applicable
    // residual start runs no such episode (the plan lists them as not applicable).
    let conditions: Vec<String> =
        conditions.iter().filter(|c| runs_from_a_residual_start(c, &residual, tasks)).map(|c| c.canonical()).collect();
    if conditions.is_empty() {
        return Vec::new();
    }
    let starts: Vec<&str> = residual.iter().map(|s| s.as_str()).collect();
    vec![format!(
        "condition{} {} from start {}: seed 001's residual starts under another paper's conditions, which no paper \
         runs (a custom protocol file, --protocol FILE, lists the rules of such a combination)",
        if conditions.len() == 1 { "" } else { "s" },
        conditions.join(", "),
        starts.join(", ")
    )]
}
