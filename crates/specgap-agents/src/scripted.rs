//! `scripted:gold | literal | starter | mutant:<id>` (DESIGN §5): apply a solution overlay
//! through the harness action `apply_overlay`, submit, and stop. Deterministic and offline;
//! they calibrate tasks and test the harness.

use serde_json::json;
use specgap_engine::session::{Agent, AgentError, AgentReply, Incoming, Opening};
use specgap_engine::tools::names;
use specgap_protocol::event::{ToolCall, Usage, UserMessageKind};

/// Which overlay a scripted agent applies.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Solution {
    /// `solutions/gold/`.
    Gold,
    /// `solutions/literal/`.
    Literal,
    /// No overlay: the starting workspace as it is.
    Starter,
    /// `solutions/mutants/<requirement-id>/`.
    Mutant(String),
}

impl Solution {
    /// The overlay name used by `apply_overlay` and in specs: `gold`, `literal`, `starter`,
    /// `mutant:<id>`.
    pub fn name(&self) -> String {
        match self {
            Solution::Gold => "gold".into(),
            Solution::Literal => "literal".into(),
            Solution::Starter => "starter".into(),
            Solution::Mutant(id) => format!("mutant:{id}"),
        }
    }

    /// Parses an overlay name; `None` for anything else (including `mutant:` without an id).
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "gold" => Some(Solution::Gold),
            "literal" => Some(Solution::Literal),
            "starter" => Some(Solution::Starter),
            other => other.strip_prefix("mutant:").filter(|id| !id.is_empty()).map(|id| Solution::Mutant(id.into())),
        }
    }
}

/// The scripted agent: turn 1 `apply_overlay {name}`, turn 2 `submit`, then done. In a
/// staged task the next stage's instruction starts the two turns again, so every stage gets
/// its own delivery (for `gold`, the stage's own gold where the stages have one).
#[derive(Debug, Clone)]
pub struct ScriptedAgent {
    solution: Solution,
    turn: u32,
}

impl ScriptedAgent {
    /// A scripted agent for one overlay.
    pub fn new(solution: Solution) -> Self {
        ScriptedAgent { solution, turn: 0 }
    }
}

impl Agent for ScriptedAgent {
    fn start(&mut self, _opening: &Opening) -> Result<(), AgentError> {
        self.turn = 0;
        Ok(())
    }

    fn next_turn(&mut self, inbox: &[Incoming]) -> Result<AgentReply, AgentError> {
        if inbox.iter().any(|message| matches!(message, Incoming::UserMessage { kind: UserMessageKind::Stage, .. })) {
            self.turn = 0;
        }
        self.turn += 1;
        let call = match self.turn {
            1 => ToolCall { id: "call-1".into(), tool: names::APPLY_OVERLAY.into(), arguments: json!({ "name": self.solution.name() }) },
            2 => ToolCall { id: "call-2".into(), tool: names::SUBMIT.into(), arguments: json!({}) },
            _ => return Ok(AgentReply::Done),
        };
        Ok(AgentReply::Turn { text: None, tool_calls: vec![call], usage: None })
    }

    fn usage(&self) -> Usage {
        Usage::default()
    }

    fn allows_harness_actions(&self) -> bool {
        true
    }
}
