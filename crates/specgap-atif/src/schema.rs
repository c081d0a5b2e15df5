//! The ATIF document as serde types: the fields specgap writes, named and shaped as Harbor's
//! pydantic models of [`ATIF_VERSION`] (`harbor.models.trajectories`, harbor 0.25.0 on PyPI:
//! `Trajectory`, `Agent`, `Step`, `ToolCall`, `Observation`, `ObservationResult`, `Metrics`,
//! `FinalMetrics`). Absent optional fields are left out of the JSON, as Harbor's own
//! `to_json_dict(exclude_none=True)` writes them. Every model forbids unknown fields, so
//! specgap-specific data goes in the `extra` objects the format provides.

use serde::Serialize;
use serde_json::{Map, Value};

/// The ATIF version written. v1.7 added `llm_call_count` (0 marks a deterministic, non-model
/// step, as scripted agents' are) and `extra` on tool calls and observation results, both of
/// which specgap uses.
pub const ATIF_VERSION: &str = "ATIF-v1.7";

/// The root object.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Trajectory {
    /// Always [`ATIF_VERSION`].
    pub schema_version: &'static str,
    /// The episode id: one specgap episode is one agent run.
    pub session_id: String,
    /// The agent and what it was offered.
    pub agent: Agent,
    /// Every step, `step_id` counting from 1.
    pub steps: Vec<Step>,
    /// What was left out and why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub notes: Option<String>,
    /// Totals of the agent's model usage.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub final_metrics: Option<FinalMetrics>,
    /// `{"specgap": {...}}`: the episode's key and outcome.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extra: Option<Map<String, Value>>,
}

/// The agent system.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Agent {
    /// The agent spec (`chat:<model>`, `scripted:gold`, `cli:<adapter>`, …).
    pub name: String,
    /// The specgap version that ran it (the built-in agents are versioned with specgap).
    pub version: String,
    /// The model under test, when the agent's configuration names one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_name: Option<String>,
    /// The tools offered, in OpenAI's function-calling schema.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_definitions: Option<Vec<Value>>,
    /// `{"specgap": {"hash", "config"}}`: the agent's full configuration from `run.toml`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extra: Option<Map<String, Value>>,
}

/// Who a step comes from (ATIF `source`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    /// The harness: the system prompt, submissions, budgets, errors, the end.
    System,
    /// The owner / customer, or the opening instruction.
    User,
    /// The agent under test.
    Agent,
}

/// One step.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Step {
    /// 1-based position.
    pub step_id: u64,
    /// When the event was written, ISO 8601 UTC with milliseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
    /// Who it comes from.
    pub source: Source,
    /// The text: the agent's reply, the user's message, or the harness's words.
    pub message: String,
    /// The agent's tool calls (agent steps only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<Vec<ToolCall>>,
    /// Results of those calls, or of a harness action.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub observation: Option<Observation>,
    /// Model usage of the turn (agent steps only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metrics: Option<Metrics>,
    /// Model inferences the step stands for: 0 for a deterministic agent (no model), unset
    /// when not tracked per turn.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub llm_call_count: Option<u64>,
    /// `{"specgap": {...}}`: the event's sequence number, elapsed time and kind-specific data.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extra: Option<Map<String, Value>>,
}

/// One tool call.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolCall {
    /// The call id of the trajectory.
    pub tool_call_id: String,
    /// The tool (DESIGN §3 names).
    pub function_name: String,
    /// The arguments object (a non-object argument is wrapped as `{"value": ...}`, noted in
    /// `extra`).
    pub arguments: Map<String, Value>,
    /// Set when the arguments had to be wrapped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extra: Option<Map<String, Value>>,
}

/// The results that follow a step's actions.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Observation {
    /// One per tool result.
    pub results: Vec<ObservationResult>,
}

/// One result.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ObservationResult {
    /// The call answered (one of the same step's `tool_calls`), or unset for a result that
    /// answers no call of its step.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_call_id: Option<String>,
    /// The text the agent got back.
    pub content: String,
    /// `{"specgap": {"tool", "is_error"}}`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extra: Option<Map<String, Value>>,
}

/// Per-step model usage.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Metrics {
    /// Prompt tokens, cached ones included (specgap `input_tokens`).
    pub prompt_tokens: u64,
    /// Completion tokens, reasoning included (specgap `output_tokens`).
    pub completion_tokens: u64,
    /// Prompt tokens served from cache (a subset of `prompt_tokens`).
    pub cached_tokens: u64,
    /// Cost in US dollars; unset when the run had no price table.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    /// `{"reasoning_tokens", "requests", "retries", "latency_ms"}`.
    pub extra: Map<String, Value>,
}

/// Totals over the trajectory.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FinalMetrics {
    /// The agent's prompt tokens in the final attempt (the store's `usage` row).
    pub total_prompt_tokens: u64,
    /// The agent's completion tokens in the final attempt.
    pub total_completion_tokens: u64,
    /// The agent's cached prompt tokens in the final attempt.
    pub total_cached_tokens: u64,
    /// The agent's cost in the final attempt; unset without a price table.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total_cost_usd: Option<f64>,
    /// Steps in `steps`.
    pub total_steps: u64,
    /// `{"specgap": {"usage": [...every attempt and role...]}}`.
    pub extra: Map<String, Value>,
}
