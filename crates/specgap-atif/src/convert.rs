//! One episode of a store → one [`Trajectory`].
//!
//! | specgap event | ATIF step |
//! | --- | --- |
//! | `episode_start` | a `system` step (the system prompt), then a `user` step (the opening message); the tools go to `agent.tool_definitions` |
//! | `agent_turn` | an `agent` step: its text, tool calls, per-turn model usage as `metrics`; the `tool_result`s answering its calls become its `observation` (also when system steps, e.g. a `submit`'s submission, came between) |
//! | `tool_result` answering no call of the latest agent step | a `system` step whose observation has no `source_call_id` |
//! | `phase_change` (plan mode) | a `system` step holding the new system prompt; the new phase and its tools in `extra.specgap` |
//! | `user_message` | a `user` step (`extra.specgap.kind`: answer, feedback, reminder, continuation; the user model's usage there too) |
//! | `overlay` | an `agent` step with `llm_call_count` 0: the scripted agent's harness action |
//! | `submission`, `budget`, `error`, `end` | `system` steps |
//! | `evaluation`, `start_evaluation` | left out (private) unless [`ExportOptions::include_private`] |
//! | a kind this build does not know | a `system` step naming it; its content only with `include_private` (it may be private) |
//!
//! An evaluation-class `error` keeps its class without its message and stderr (an evaluator's
//! output may quote expected values) unless `include_private`.

use serde_json::{Map, Value, json};
use specgap_protocol::event::{Event, EventKind, ToolSpec, Usage, UserMessageKind};
use specgap_protocol::run::{COMMAND_AGENT_PREFIX, ComponentRef, RunConfig, without_local_paths};
use specgap_store::{EpisodeDetail, Role};

use crate::schema::*;
use crate::time::iso8601;

/// What an export includes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ExportOptions {
    /// Include private evaluations, evaluation-error details and unknown events' content.
    pub include_private: bool,
}

/// Builds the ATIF trajectory of one episode from its store rows (`detail`), the run's
/// configuration and its trajectory's raw events (in file order).
pub fn trajectory(config: &RunConfig, detail: &EpisodeDetail, events: &[Value], truncated: bool, options: ExportOptions) -> Trajectory {
    let episode = &detail.episode;
    // Episodes name their agent by its label (a run configuration's name, else the spec).
    let component = config.agents.iter().find(|a| a.label() == episode.agent);
    // The steps' metrics are the agent's calls: their cost is known only when its model has a
    // price (a priced run may leave a model out of its price table).
    let priced = component.is_some_and(ComponentRef::has_price);
    let deterministic = is_deterministic(component.map_or(episode.agent.as_str(), |c| c.spec.as_str()));
    let mut builder = Builder { steps: Vec::new(), priced, deterministic, options, left_out: 0 };
    let mut tools: Option<Vec<Value>> = None;
    for raw in events {
        match serde_json::from_value::<Event>(raw.clone()) {
            Ok(event) => {
                if let EventKind::EpisodeStart { tools: offered, .. } = &event.kind {
                    tools = Some(offered.iter().map(tool_definition).collect());
                }
                builder.event(&event);
            }
            Err(_) => builder.unknown(raw),
        }
    }
    let model_name = component.and_then(|c| model_of(&c.config));
    let agent_extra = component.map(|c| {
        specgap_extra(json!({
            "hash": c.hash,
            "config": exported_config(&c.config, options),
        }))
    });
    let mut steps = builder.steps;
    let mut notes = vec![format!(
        "exported by specgap {} from a run made by specgap {} (protocol {})",
        env!("CARGO_PKG_VERSION"),
        config.specgap_version,
        config.protocol_version
    )];
    if builder.left_out > 0 {
        notes.push(format!("{} private event(s) left out (evaluations; export with include_private to keep them)", builder.left_out));
    }
    if truncated {
        notes.push("the trajectory file ends in a cut frame (the run was killed while writing); the steps stop there".into());
    }
    if steps.is_empty() {
        // ATIF requires at least one step; an episode that never started has none.
        steps.push(Step {
            step_id: 1,
            timestamp: None,
            source: Source::System,
            message: "the episode recorded no event".into(),
            tool_calls: None,
            observation: None,
            metrics: None,
            llm_call_count: None,
            extra: None,
        });
    }
    for (i, step) in steps.iter_mut().enumerate() {
        step.step_id = i as u64 + 1;
    }
    let final_metrics = final_metrics(detail, priced, steps.len() as u64);
    Trajectory {
        schema_version: ATIF_VERSION,
        session_id: episode.id.clone(),
        agent: Agent {
            name: exported_agent_name(&episode.agent, options),
            version: config.specgap_version.clone(),
            model_name,
            tool_definitions: tools,
            extra: agent_extra,
        },
        steps,
        notes: Some(notes.join("; ")),
        final_metrics: Some(final_metrics),
        extra: Some(specgap_extra(json!({
            "episode": episode.id,
            "task": episode.task,
            "task_hash": episode.task_hash,
            "condition": episode.condition,
            "start": episode.start,
            "repeat": episode.repeat,
            "seed": episode.seed.to_string(),
            "user": episode.user,
            "status": episode.status.as_str(),
            "end_reason": episode.end_reason.map(|r| r.as_str()),
            "attempts": episode.attempts,
            "submissions": episode.submissions,
            "final_score": episode.final_score,
            "final_success": episode.final_success,
            "turns": episode.turns,
            "tool_calls": episode.tool_calls,
            "wall_ms": episode.wall_ms,
        }))),
    }
}

/// The model an agent's stored configuration names: `model` (chat agents) or
/// `endpoint.model` (`cli:` agents, whose model endpoint the gateway serves).
fn model_of(config: &toml::Table) -> Option<String> {
    let direct = config.get("model").and_then(|m| m.as_str());
    let endpoint = || config.get("endpoint").and_then(|e| e.get("model")).and_then(|m| m.as_str());
    direct.or_else(endpoint).map(str::to_string)
}

/// Configuration keys that describe the machine a run was made on, not the agent: where its
/// model was served and which variable held the key. A public export leaves them out.
const MACHINE_KEYS: [&str; 2] = ["base_url", "api_key_env"];

/// An agent's stored configuration as exported: whole with `include_private`, else without
/// [`MACHINE_KEYS`] (at the top, a chat agent's, and in `endpoint`, a `cli:` agent's), and with
/// a `cli:command=` agent's `command` stripped of its absolute paths' directories.
fn exported_config(config: &toml::Table, options: ExportOptions) -> Value {
    let mut value = serde_json::to_value(config).unwrap_or(Value::Null);
    if !options.include_private {
        strip_machine_keys(&mut value);
        if let Some(endpoint) = value.get_mut("endpoint") {
            strip_machine_keys(endpoint);
        }
        if let Some(Value::String(command)) = value.get_mut("command") {
            *command = without_local_paths(command);
        }
    }
    value
}

fn strip_machine_keys(value: &mut Value) {
    if let Value::Object(map) = value {
        for key in MACHINE_KEYS {
            map.remove(key);
        }
    }
}

/// The agent's name as exported: its label, except that a public export of a run made before
/// agents were named portably shows `replay:<file name>`, not the script's absolute path, and a
/// `cli:command=` agent's command without its paths' directories.
fn exported_agent_name(label: &str, options: ExportOptions) -> String {
    if options.include_private {
        return label.to_string();
    }
    if let Some(template) = label.strip_prefix(COMMAND_AGENT_PREFIX) {
        return format!("{COMMAND_AGENT_PREFIX}{}", without_local_paths(template));
    }
    match label.strip_prefix("replay:") {
        Some(path) if std::path::Path::new(path).is_absolute() => {
            let file = std::path::Path::new(path).file_name().map_or_else(|| path.to_string(), |f| f.to_string_lossy().into_owned());
            format!("replay:{file}")
        }
        _ => label.to_string(),
    }
}

/// Agents that call no model: their steps are deterministic dispatches.
fn is_deterministic(agent: &str) -> bool {
    agent.starts_with("scripted:") || agent.starts_with("replay:")
}

/// `{"specgap": value}`.
fn specgap_extra(value: Value) -> Map<String, Value> {
    let mut map = Map::new();
    map.insert("specgap".into(), value);
    map
}

/// A tool in OpenAI's function-calling schema (what ATIF's `tool_definitions` holds).
fn tool_definition(tool: &ToolSpec) -> Value {
    json!({
        "type": "function",
        "function": { "name": tool.name, "description": tool.description, "parameters": tool.parameters },
    })
}

struct Builder {
    steps: Vec<Step>,
    priced: bool,
    deterministic: bool,
    options: ExportOptions,
    left_out: usize,
}

impl Builder {
    fn push(&mut self, event: &Event, source: Source, message: String, extra: Value) {
        self.steps.push(Step {
            step_id: 0,
            timestamp: Some(iso8601(event.ts_ms)),
            source,
            message,
            tool_calls: None,
            observation: None,
            metrics: None,
            llm_call_count: None,
            extra: Some(event_extra(event, extra)),
        });
    }

    fn event(&mut self, event: &Event) {
        match &event.kind {
            EventKind::EpisodeStart { system_prompt, opening_message, .. } => {
                self.push(event, Source::System, system_prompt.clone(), json!({"kind": "system_prompt"}));
                self.push(event, Source::User, opening_message.clone(), json!({"kind": "opening_message"}));
            }
            EventKind::AgentTurn { turn, text, tool_calls, usage } => {
                let calls: Vec<ToolCall> = tool_calls.iter().map(tool_call).collect();
                self.steps.push(Step {
                    step_id: 0,
                    timestamp: Some(iso8601(event.ts_ms)),
                    source: Source::Agent,
                    message: text.clone().unwrap_or_default(),
                    tool_calls: (!calls.is_empty()).then_some(calls),
                    observation: None,
                    metrics: usage.as_ref().map(|u| metrics(u, self.priced)),
                    llm_call_count: self.deterministic.then_some(0),
                    extra: Some(event_extra(event, json!({"turn": turn}))),
                });
            }
            EventKind::ToolResult { call_id, tool, output, is_error } => {
                let result = ObservationResult {
                    source_call_id: Some(call_id.clone()),
                    content: output.clone(),
                    extra: Some(specgap_extra(json!({"tool": tool, "is_error": is_error, "seq": event.seq}))),
                };
                self.attach(event, result);
            }
            EventKind::UserMessage { kind, text, usage } => {
                let kind = match kind {
                    UserMessageKind::Answer => "answer",
                    UserMessageKind::Feedback => "feedback",
                    UserMessageKind::Reminder => "reminder",
                    UserMessageKind::Continuation => "continuation",
                    UserMessageKind::Stage => "stage",
                };
                let usage = usage.as_ref().map(|u| serde_json::to_value(u).unwrap_or(Value::Null));
                self.push(event, Source::User, text.clone(), json!({"kind": kind, "user_model_usage": usage}));
            }
            EventKind::PhaseChange { phase, system_prompt, tools } => {
                // ATIF has one tool list per agent (the opening's); the tools of a later phase
                // travel with the step that begins it.
                let tools: Vec<Value> = tools.iter().map(tool_definition).collect();
                self.push(
                    event,
                    Source::System,
                    system_prompt.clone(),
                    json!({"kind": "phase_change", "phase": phase, "tool_definitions": tools}),
                );
            }
            EventKind::UserRequest { request, purpose, reply, tries, .. } => {
                // The simulated user's request holds its private prompt (requirements, rules).
                if !self.options.include_private {
                    self.left_out += 1;
                    return;
                }
                let purpose = match purpose {
                    UserMessageKind::Answer => "answer",
                    UserMessageKind::Feedback => "feedback",
                    UserMessageKind::Reminder => "reminder",
                    UserMessageKind::Continuation => "continuation",
                    UserMessageKind::Stage => "stage",
                };
                self.push(
                    event,
                    Source::System,
                    format!("PRIVATE user-model request {request} ({purpose}), reply: {reply}"),
                    json!({"private": true, "kind": "user_request", "request": request, "purpose": purpose, "tries": tries}),
                );
            }
            EventKind::ModelExchange { request, class, method, path, model, status, outcome, detail, messages, usage, .. } => {
                // The turn it carried follows as an `agent_turn`; this step keeps the gateway's
                // record (the messages by journal id, not their text: the turns hold that).
                let usage = serde_json::to_value(usage).unwrap_or(Value::Null);
                self.push(
                    event,
                    Source::System,
                    format!("model request {request} ({class}) {method} {path}: {status} {outcome}"),
                    json!({"kind": "model_exchange", "request": request, "class": class, "model": model, "detail": detail, "messages": messages, "usage": usage}),
                );
            }
            EventKind::BridgeCall { turn, call } => {
                // A harness tool called through the bridge: an agent step making the call, so
                // the `tool_result` that follows attaches to it.
                self.steps.push(Step {
                    step_id: 0,
                    timestamp: Some(iso8601(event.ts_ms)),
                    source: Source::Agent,
                    message: format!("harness tool `{}` called through the bridge", call.tool),
                    tool_calls: Some(vec![tool_call(call)]),
                    observation: None,
                    metrics: None,
                    llm_call_count: Some(0),
                    extra: Some(event_extra(event, json!({"kind": "bridge_call", "turn": turn}))),
                });
            }
            EventKind::Actions { turn, actions } => {
                let actions = serde_json::to_value(actions).unwrap_or(Value::Null);
                self.push(
                    event,
                    Source::System,
                    format!("file actions of turn {turn}, from the agent's own log"),
                    json!({"kind": "actions", "turn": turn, "actions": actions}),
                );
            }
            EventKind::FileReads { call_id, read, shown, unmeasured } => {
                let message = if unmeasured.is_empty() {
                    format!("files read by call {call_id}: {} read, {} shown to the agent", read.len(), shown.len())
                } else {
                    format!("files read by call {call_id}: not measured ({unmeasured})")
                };
                self.push(
                    event,
                    Source::System,
                    message,
                    json!({"kind": "file_reads", "call_id": call_id, "read": read, "shown": shown, "unmeasured": unmeasured}),
                );
            }
            EventKind::AgentExit { status, how, stderr_tail, note } => {
                let code = status.map_or_else(|| "no exit status".to_string(), |s| format!("exit status {s}"));
                self.push(
                    event,
                    Source::System,
                    format!("agent program ended ({how}, {code})"),
                    json!({"kind": "agent_exit", "status": status, "how": how, "stderr_tail": stderr_tail, "note": note}),
                );
            }
            EventKind::NetworkAttempt { .. } => {
                let line = specgap_protocol::event::network_attempt_line(&event.kind).unwrap_or_default();
                let detail = serde_json::to_value(&event.kind).unwrap_or(Value::Null);
                self.push(event, Source::System, format!("network attempt outside the gateway: {line}"), detail);
            }
            EventKind::NetworkTripwire { armed, attempts, note } => {
                let state = if *armed { format!("armed, {attempts} attempt(s) recorded") } else { "not armed".to_string() };
                self.push(
                    event,
                    Source::System,
                    format!("network tripwire: {state}"),
                    json!({"kind": "network_tripwire", "armed": armed, "attempts": attempts, "note": note}),
                );
            }
            EventKind::Overlay { name } => {
                self.steps.push(Step {
                    step_id: 0,
                    timestamp: Some(iso8601(event.ts_ms)),
                    source: Source::Agent,
                    message: format!("harness action apply_overlay: the solution overlay `{name}` was copied over the workspace"),
                    tool_calls: None,
                    observation: None,
                    metrics: None,
                    llm_call_count: Some(0),
                    extra: Some(event_extra(event, json!({"harness_action": "apply_overlay", "overlay": name}))),
                });
            }
            EventKind::Submission { k, summary, automatic } => {
                let how = if *automatic { "automatic final submission" } else { "submitted by the agent" };
                self.push(
                    event,
                    Source::System,
                    format!("submission {k}: {how}"),
                    json!({"submission": k, "automatic": automatic, "summary": summary}),
                );
            }
            EventKind::Evaluation { k, score, success, failing_requirement } => {
                if !self.options.include_private {
                    self.left_out += 1;
                    return;
                }
                self.push(
                    event,
                    Source::System,
                    format!("PRIVATE evaluation of submission {k} (never shown to the agent): score {score}, success {success}"),
                    json!({"private": true, "submission": k, "score": score, "success": success, "failing_requirement": failing_requirement}),
                );
            }
            EventKind::StartEvaluation { state, score, success } => {
                if !self.options.include_private {
                    self.left_out += 1;
                    return;
                }
                self.push(
                    event,
                    Source::System,
                    format!(
                        "PRIVATE evaluation of the inherited state `{state}` (never shown to the agent): score {score}, success {success}"
                    ),
                    json!({"private": true, "residual_state": state, "score": score, "success": success}),
                );
            }
            EventKind::Budget { which, used, limit } => {
                self.push(
                    event,
                    Source::System,
                    format!("budget exhausted: {which} {used} of {limit}"),
                    json!({"budget": which, "used": used, "limit": limit}),
                );
            }
            EventKind::Error { class, message, stderr_tail } => {
                if class == "evaluation" && !self.options.include_private {
                    self.push(event, Source::System, "evaluation error (details are private)".into(), json!({"class": class}));
                } else {
                    self.push(
                        event,
                        Source::System,
                        format!("{class} error: {message}"),
                        json!({"class": class, "stderr_tail": stderr_tail}),
                    );
                }
            }
            EventKind::End { reason, detail } => {
                let words = if detail.is_empty() { String::new() } else { format!(": {detail}") };
                self.push(
                    event,
                    Source::System,
                    format!("episode ended: {reason}{words}"),
                    json!({"end_reason": reason, "detail": detail}),
                );
            }
        }
    }

    /// Attaches a tool result to the latest agent step when that step made the call (the
    /// steps of what the call did, such as a `submit`'s submission or an `ask`'s answer, may
    /// stand between them); otherwise it becomes a system step of its own (ATIF requires a result's
    /// `source_call_id` to name a call of its own step).
    fn attach(&mut self, event: &Event, mut result: ObservationResult) {
        let caller = self.steps.iter_mut().rev().find(|s| s.source == Source::Agent);
        if let Some(step) = caller
            && let Some(calls) = &step.tool_calls
            && calls.iter().any(|c| Some(&c.tool_call_id) == result.source_call_id.as_ref())
        {
            step.observation.get_or_insert_with(|| Observation { results: Vec::new() }).results.push(result);
            return;
        }
        let call_id = result.source_call_id.take();
        if let Some(extra) = result.extra.as_mut().and_then(|e| e.get_mut("specgap")).and_then(Value::as_object_mut) {
            extra.insert("call_id".into(), json!(call_id));
        }
        self.steps.push(Step {
            step_id: 0,
            timestamp: Some(iso8601(event.ts_ms)),
            source: Source::System,
            message: "tool result answering no call of the latest agent step".into(),
            tool_calls: None,
            observation: Some(Observation { results: vec![result] }),
            metrics: None,
            llm_call_count: None,
            extra: Some(event_extra(event, json!({}))),
        });
    }

    fn unknown(&mut self, raw: &Value) {
        let kind = raw.get("type").and_then(Value::as_str).unwrap_or("(no type)").to_string();
        let mut extra = json!({"kind": kind, "seq": raw.get("seq"), "elapsed_ms": raw.get("elapsed_ms")});
        if self.options.include_private {
            extra["event"] = raw.clone();
        }
        self.steps.push(Step {
            step_id: 0,
            timestamp: raw.get("ts_ms").and_then(Value::as_u64).map(iso8601),
            source: Source::System,
            message: format!("specgap event `{kind}` (a kind this exporter does not map)"),
            tool_calls: None,
            observation: None,
            metrics: None,
            llm_call_count: None,
            extra: Some(specgap_extra(extra)),
        });
    }
}

/// `{"specgap": {"seq", "elapsed_ms", ...more}}`.
fn event_extra(event: &Event, more: Value) -> Map<String, Value> {
    let mut inner = Map::new();
    inner.insert("seq".into(), json!(event.seq));
    inner.insert("elapsed_ms".into(), json!(event.elapsed_ms));
    if let Value::Object(more) = more {
        inner.extend(more);
    }
    specgap_extra(Value::Object(inner))
}

fn tool_call(call: &specgap_protocol::event::ToolCall) -> ToolCall {
    match &call.arguments {
        Value::Object(map) => {
            ToolCall { tool_call_id: call.id.clone(), function_name: call.tool.clone(), arguments: map.clone(), extra: None }
        }
        other => {
            let mut arguments = Map::new();
            arguments.insert("value".into(), other.clone());
            ToolCall {
                tool_call_id: call.id.clone(),
                function_name: call.tool.clone(),
                arguments,
                extra: Some(specgap_extra(json!({"arguments_wrapped": true}))),
            }
        }
    }
}

fn metrics(usage: &Usage, priced: bool) -> Metrics {
    let mut extra = Map::new();
    extra.insert("reasoning_tokens".into(), json!(usage.reasoning_tokens));
    extra.insert("requests".into(), json!(usage.requests));
    extra.insert("retries".into(), json!(usage.retries));
    extra.insert("latency_ms".into(), json!(usage.latency_ms));
    Metrics {
        prompt_tokens: usage.input_tokens,
        completion_tokens: usage.output_tokens,
        cached_tokens: usage.cached_tokens,
        cost_usd: priced.then_some(usage.cost_usd),
        extra,
    }
}

/// The agent role's usage in the final attempt, with every attempt's and role's rows in
/// `extra` (earlier attempts were paid for too).
fn final_metrics(detail: &EpisodeDetail, priced: bool, steps: u64) -> FinalMetrics {
    let last = detail.episode.attempts;
    let mut agent = Usage::default();
    for row in detail.usage.iter().filter(|u| u.attempt == last && u.role == Role::Agent) {
        agent.add(&row.usage);
    }
    let rows: Vec<Value> = detail
        .usage
        .iter()
        .map(|u| {
            let mut value = serde_json::to_value(&u.usage).unwrap_or(Value::Null);
            value["attempt"] = json!(u.attempt);
            value["role"] = json!(u.role.as_str());
            value
        })
        .collect();
    FinalMetrics {
        total_prompt_tokens: agent.input_tokens,
        total_completion_tokens: agent.output_tokens,
        total_cached_tokens: agent.cached_tokens,
        total_cost_usd: priced.then_some(agent.cost_usd),
        total_steps: steps,
        extra: specgap_extra(json!({"usage": rows, "priced": priced})),
    }
}
