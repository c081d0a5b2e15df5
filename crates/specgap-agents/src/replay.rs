//! `replay:<file>` (DESIGN §5): replays a plain script or a stored trajectory, turn by turn,
//! whatever the feedback says. When the turns run out the agent is done (the engine then
//! submits automatically if the workspace changed since the last submission).
//!
//! # Plain scripts (normative)
//!
//! JSON Lines, one turn per line: either one call `{"tool": "<name>", "arguments": {...}}` or
//! a JSON array of such calls for a batched turn. `arguments` may be left out (it is then
//! `{}`); no other key is allowed. Blank lines and lines whose first non-blank characters are
//! `//` or `#` are skipped. An unknown tool or bad arguments are not script errors: the
//! engine answers them with a tool error, as a model would get. Call ids are `call-<n>`,
//! counting calls from 1 over the script. A plain script may not use the harness action
//! `apply_overlay`.
//!
//! # Stored trajectories
//!
//! `replay:RUN_DIR/episodes/<id>` (or the `trajectory.jsonl.zst` file itself): every
//! `agent_turn` event becomes one turn with the same text and tool calls (ids kept), including
//! `apply_overlay` calls. Harness actions are accepted when the recorded episode was run by a
//! scripted agent or accepted an overlay (it has an `overlay` event).

use std::path::{Path, PathBuf};

use serde::Deserialize;
use specgap_engine::session::{Agent, AgentError, AgentReply, Incoming, Opening};
use specgap_protocol::event::{EventKind, ToolCall, Usage};
use specgap_store::{TRAJECTORY_FILE, read_trajectory_file};

/// One recorded or scripted turn.
#[derive(Debug, Clone, PartialEq)]
pub struct ScriptTurn {
    /// Assistant text, if any (stored trajectories only).
    pub text: Option<String>,
    /// The calls, in order.
    pub tool_calls: Vec<ToolCall>,
}

/// Why a replay source cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// The script file cannot be read.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// A script line is not a call object or an array of them.
    #[error("{}:{line}: expected {{\"tool\": \"<name>\", \"arguments\": {{...}}}} or an array of such calls", path.display())]
    BadLine {
        /// The script.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// The JSON error.
        #[source]
        source: serde_json::Error,
    },
    /// The stored trajectory cannot be read.
    #[error("cannot read the trajectory {}", path.display())]
    Trajectory {
        /// The trajectory file.
        path: PathBuf,
        /// The store's error.
        #[source]
        source: Box<specgap_store::StoreError>,
    },
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ScriptCall {
    tool: String,
    #[serde(default = "empty_object")]
    arguments: serde_json::Value,
}

fn empty_object() -> serde_json::Value {
    serde_json::Value::Object(serde_json::Map::new())
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum ScriptLine {
    One(ScriptCall),
    Batch(Vec<ScriptCall>),
}

/// Parses a plain script's text (module guide); `path` only names the file in errors.
///
/// # Errors
/// [`ReplayError::BadLine`] for the first line that is neither a call nor an array of calls.
pub fn parse_script(text: &str, path: &Path) -> Result<Vec<ScriptTurn>, ReplayError> {
    let mut turns = Vec::new();
    let mut next_id = 1u32;
    for (index, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with("//") || line.starts_with('#') {
            continue;
        }
        let parsed: ScriptLine =
            serde_json::from_str(line).map_err(|source| ReplayError::BadLine { path: path.to_path_buf(), line: index + 1, source })?;
        let calls = match parsed {
            ScriptLine::One(call) => vec![call],
            ScriptLine::Batch(calls) => calls,
        };
        let tool_calls = calls
            .into_iter()
            .map(|c| {
                let id = format!("call-{next_id}");
                next_id += 1;
                ToolCall { id, tool: c.tool, arguments: c.arguments }
            })
            .collect();
        turns.push(ScriptTurn { text: None, tool_calls });
    }
    Ok(turns)
}

/// The replay agent.
#[derive(Debug, Clone)]
pub struct ReplayAgent {
    turns: Vec<ScriptTurn>,
    next: usize,
    harness_actions: bool,
}

impl ReplayAgent {
    /// An agent replaying the given turns; `harness_actions` allows `apply_overlay`.
    pub fn from_turns(turns: Vec<ScriptTurn>, harness_actions: bool) -> Self {
        ReplayAgent { turns, next: 0, harness_actions }
    }

    /// Loads `replay:<path>`: a stored episode directory (holding `trajectory.jsonl.zst`), a
    /// trajectory file (`*.jsonl.zst`), or a plain script.
    ///
    /// # Errors
    /// [`ReplayError`] naming the file.
    pub fn load(path: &Path) -> Result<Self, ReplayError> {
        if path.is_dir() {
            return Self::from_trajectory(&path.join(TRAJECTORY_FILE));
        }
        if path.to_string_lossy().ends_with(".zst") {
            return Self::from_trajectory(path);
        }
        let text = fs_err::read_to_string(path)?;
        Ok(Self::from_turns(parse_script(&text, path)?, false))
    }

    /// Loads a stored trajectory (module guide).
    ///
    /// # Errors
    /// [`ReplayError::Trajectory`].
    pub fn from_trajectory(file: &Path) -> Result<Self, ReplayError> {
        let trajectory =
            read_trajectory_file(file).map_err(|source| ReplayError::Trajectory { path: file.to_path_buf(), source: Box::new(source) })?;
        let mut turns = Vec::new();
        let mut harness_actions = false;
        for event in trajectory.events {
            match event.kind {
                EventKind::EpisodeStart { agent, .. } => harness_actions |= agent.starts_with("scripted:"),
                EventKind::Overlay { .. } => harness_actions = true,
                EventKind::AgentTurn { text, tool_calls, .. } => turns.push(ScriptTurn { text, tool_calls }),
                _ => {}
            }
        }
        Ok(Self::from_turns(turns, harness_actions))
    }

    /// The turns still to replay.
    pub fn remaining(&self) -> &[ScriptTurn] {
        &self.turns[self.next..]
    }
}

impl Agent for ReplayAgent {
    fn start(&mut self, _opening: &Opening) -> Result<(), AgentError> {
        self.next = 0;
        Ok(())
    }

    fn next_turn(&mut self, _inbox: &[Incoming]) -> Result<AgentReply, AgentError> {
        let Some(turn) = self.turns.get(self.next) else {
            return Ok(AgentReply::Done);
        };
        self.next += 1;
        Ok(AgentReply::Turn { text: turn.text.clone(), tool_calls: turn.tool_calls.clone(), usage: None })
    }

    fn usage(&self) -> Usage {
        Usage::default()
    }

    fn allows_harness_actions(&self) -> bool {
        self.harness_actions
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn scripts_parse_lines_batches_and_comments() {
        let text = r#"
// read first
# also a comment
{"tool": "read_text", "arguments": {"path": "a.py"}}

[{"tool": "list_files"}, {"tool": "run_experiment", "arguments": {"command": "true"}}]
{"tool": "submit"}
"#;
        let turns = parse_script(text, Path::new("s.jsonl")).unwrap();
        assert_eq!(turns.len(), 3);
        assert_eq!(
            turns[0].tool_calls,
            vec![ToolCall { id: "call-1".into(), tool: "read_text".into(), arguments: json!({"path": "a.py"}) }]
        );
        let ids: Vec<_> = turns[1].tool_calls.iter().map(|c| (c.id.as_str(), c.tool.as_str())).collect();
        assert_eq!(ids, [("call-2", "list_files"), ("call-3", "run_experiment")]);
        assert_eq!(turns[1].tool_calls[0].arguments, json!({}));
        assert_eq!(turns[2].tool_calls[0].id, "call-4");
    }

    #[test]
    fn bad_lines_name_the_line() {
        let err = parse_script("{\"tool\": \"submit\"}\n{\"tol\": \"x\"}\n", Path::new("s.jsonl")).unwrap_err();
        assert!(err.to_string().starts_with("s.jsonl:2: expected"), "{err}");
        assert!(parse_script("not json", Path::new("s.jsonl")).is_err());
    }
}
