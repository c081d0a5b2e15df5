//! Stage III's trajectory summary (seed 001 §3.2): what a reviewer needs to judge whether a
//! predecessor made a coherent attempt at the request, without reading every step.
//!
//! [`TrajectoryDigest`] is deterministic — read off the stored trajectory with no model: the
//! turns, every command and tool call in order, the files the final state changes, the
//! submissions and the predecessor's final message. The paper's reviewers read a model's
//! summary of the intentions behind the actions instead; [`TrajectorySummarizer`] is the hook
//! for one (a model summary through the chat client is separate work), shown beside the
//! digest, never instead of it.

use std::path::Path;

use serde::{Deserialize, Serialize};
use specgap_protocol::event::{Event, EventKind, ToolCall};

use crate::error::ResidualizeError;

/// Characters of one command or tool call shown in a summary before it is cut (the cut is
/// stated with the true length).
pub const COMMAND_CHARS: usize = 4000;

/// One tool call of the predecessor, in words.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommandLine {
    /// 1-based agent turn.
    pub turn: u32,
    /// Tool name.
    pub tool: String,
    /// What it did: the shell command of `bash` / `run_experiment`, the path of a file tool,
    /// the question of `ask_user`, the summary of `submit`; other tools their arguments as
    /// JSON. Cut at [`COMMAND_CHARS`].
    pub text: String,
    /// Whether the harness answered it with a tool error.
    pub failed: bool,
}

/// A deterministic summary of a predecessor's trajectory.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrajectoryDigest {
    /// Agent turns.
    pub turns: u32,
    /// Tool calls, in order.
    pub commands: Vec<CommandLine>,
    /// Files the final state changes (from its diff).
    pub files_touched: Vec<String>,
    /// Submissions: (k, automatic, the agent's summary).
    pub submissions: Vec<(u32, bool, Option<String>)>,
    /// The last text the agent wrote (its final message), if any.
    pub final_message: Option<String>,
    /// The end event's reason, if the trajectory has one.
    pub end_reason: Option<String>,
    /// Whether the stored trajectory was cut by a crash (its last event lost).
    pub truncated: bool,
}

impl TrajectoryDigest {
    /// Reads the digest of episode `id` in run `run_dir`; `files_touched` comes from the
    /// caller (the final diff's files).
    ///
    /// # Errors
    /// [`ResidualizeError::Store`] when the trajectory cannot be read.
    pub fn read(run_dir: &Path, id: &str, files_touched: &[String]) -> Result<TrajectoryDigest, ResidualizeError> {
        let trajectory = specgap_store::read_trajectory(run_dir, id).map_err(ResidualizeError::store(run_dir))?;
        let mut digest = TrajectoryDigest::of(&trajectory.events);
        digest.files_touched = files_touched.to_vec();
        digest.truncated = trajectory.truncated.is_some();
        Ok(digest)
    }

    /// The digest of a trajectory's events.
    pub fn of(events: &[Event]) -> TrajectoryDigest {
        let mut digest = TrajectoryDigest::default();
        let mut call_index: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
        for event in events {
            match &event.kind {
                EventKind::AgentTurn { turn, text, tool_calls, .. } => {
                    digest.turns = digest.turns.max(*turn);
                    if let Some(text) = text.as_deref().map(str::trim).filter(|t| !t.is_empty()) {
                        digest.final_message = Some(text.to_string());
                    }
                    for call in tool_calls {
                        call_index.insert(call.id.clone(), digest.commands.len());
                        digest.commands.push(CommandLine { turn: *turn, tool: call.tool.clone(), text: describe(call), failed: false });
                    }
                }
                EventKind::ToolResult { call_id, is_error, .. } => {
                    if let Some(&i) = call_index.get(call_id) {
                        digest.commands[i].failed = *is_error;
                    }
                }
                EventKind::Submission { k, summary, automatic } => {
                    digest.submissions.push((*k, *automatic, summary.clone()));
                }
                EventKind::End { reason, .. } => digest.end_reason = Some(reason.clone()),
                _ => {}
            }
        }
        digest
    }
}

/// One call in words (see [`CommandLine::text`]).
fn describe(call: &ToolCall) -> String {
    let arg = |name: &str| call.arguments.get(name).and_then(serde_json::Value::as_str);
    let text = match call.tool.as_str() {
        "bash" | "run_experiment" => arg("command").map(str::to_string),
        "read_text" | "write_text" | "replace_text" | "list_files" => arg("path").map(|p| match call.tool.as_str() {
            "write_text" => format!("{p} ({} characters)", arg("content").map_or(0, |c| c.chars().count())),
            _ => p.to_string(),
        }),
        "run_project" => arg("record").map(str::to_string),
        "ask_user" => arg("question").map(str::to_string).or_else(|| call.arguments.get("questions").map(|q| q.to_string())),
        "submit" => Some(arg("summary").unwrap_or("").to_string()),
        "write_plan" => arg("plan").map(str::to_string),
        _ => None,
    };
    cut(&text.unwrap_or_else(|| call.arguments.to_string()), COMMAND_CHARS)
}

/// `text` cut to `limit` characters, with the cut stated.
pub(crate) fn cut(text: &str, limit: usize) -> String {
    let total = text.chars().count();
    if total <= limit {
        return text.to_string();
    }
    let kept: String = text.chars().take(limit).collect();
    format!("{kept}\n[… cut: {total} characters in all]")
}

/// What a model summary is given: the request, the digest and the full events.
#[derive(Debug, Clone, Copy)]
pub struct SummaryInput<'a> {
    /// The task's request (`instruction.md`).
    pub request: &'a str,
    /// The deterministic digest.
    pub digest: &'a TrajectoryDigest,
    /// Every event of the trajectory.
    pub events: &'a [Event],
}

/// A model (or any other writer) that summarizes a predecessor's trajectory for reviewers:
/// the intentions behind its actions and its overall strategy (seed 001 §3.2 Stage III). The
/// review bundle shows its text beside the deterministic digest.
pub trait TrajectorySummarizer: Sync {
    /// The summarizer's name as the bundle shows it (e.g. `chat:<model>`).
    fn name(&self) -> String;

    /// A summary in plain text or Markdown (shown escaped).
    ///
    /// # Errors
    /// Whatever the summarizer meets; the bundle then says the summary failed and why.
    fn summarize(&self, input: &SummaryInput<'_>) -> Result<String, Box<dyn std::error::Error + Send + Sync>>;
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn event(seq: u64, kind: EventKind) -> Event {
        Event { seq, ts_ms: 0, elapsed_ms: 0, kind }
    }

    fn call(id: &str, tool: &str, arguments: serde_json::Value) -> ToolCall {
        ToolCall { id: id.into(), tool: tool.into(), arguments }
    }

    #[test]
    fn digest_lists_calls_errors_submissions_and_the_last_text() {
        let events = vec![
            event(
                0,
                EventKind::AgentTurn {
                    turn: 1,
                    text: Some("Looking around.".into()),
                    tool_calls: vec![call("c1", "bash", json!({"command": "ls -la"}))],
                    usage: None,
                },
            ),
            event(1, EventKind::ToolResult { call_id: "c1".into(), tool: "bash".into(), output: "x".into(), is_error: false }),
            event(
                2,
                EventKind::AgentTurn {
                    turn: 2,
                    text: None,
                    tool_calls: vec![
                        call("c2", "write_text", json!({"path": "a.py", "content": "héllo"})),
                        call("c3", "frobnicate", json!({"x": 1})),
                    ],
                    usage: None,
                },
            ),
            event(3, EventKind::ToolResult { call_id: "c2".into(), tool: "write_text".into(), output: "ok".into(), is_error: false }),
            event(
                4,
                EventKind::ToolResult { call_id: "c3".into(), tool: "frobnicate".into(), output: "unknown tool".into(), is_error: true },
            ),
            event(
                5,
                EventKind::AgentTurn {
                    turn: 3,
                    text: Some("  All done: chop works.  ".into()),
                    tool_calls: vec![call("c4", "submit", json!({"summary": "chop added"}))],
                    usage: None,
                },
            ),
            event(6, EventKind::Submission { k: 1, summary: Some("chop added".into()), automatic: false }),
            event(7, EventKind::End { reason: "submitted".into(), detail: String::new() }),
        ];
        let digest = TrajectoryDigest::of(&events);
        assert_eq!(digest.turns, 3);
        let texts: Vec<(&str, &str, bool)> = digest.commands.iter().map(|c| (c.tool.as_str(), c.text.as_str(), c.failed)).collect();
        assert_eq!(
            texts,
            [
                ("bash", "ls -la", false),
                ("write_text", "a.py (5 characters)", false),
                ("frobnicate", "{\"x\":1}", true),
                ("submit", "chop added", false)
            ]
        );
        assert_eq!(digest.submissions, [(1, false, Some("chop added".to_string()))]);
        assert_eq!(digest.final_message.as_deref(), Some("All done: chop works."));
        assert_eq!(digest.end_reason.as_deref(), Some("submitted"));
    }

    #[test]
    fn long_commands_are_cut_with_the_true_length() {
        let text = "é".repeat(COMMAND_CHARS + 5);
        let shown = cut(&text, COMMAND_CHARS);
        assert!(shown.ends_with(&format!("[… cut: {} characters in all]", COMMAND_CHARS + 5)));
        assert_eq!(cut("short", 10), "short");
    }
}
