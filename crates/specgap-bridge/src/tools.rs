//! The harness tools as a `cli:` agent is offered them: [`ToolSpec`]s written for an agent
//! that reaches them through MCP, consistent with the engine's specs
//! (`specgap_engine::tools::tool_specs`: same names, same arguments, same one-call-per-turn
//! rule), and [`Offer`], the set the harness serves in an episode.

use serde_json::{Value, json};
use specgap_protocol::event::ToolSpec;

use crate::wire::HarnessTool;

/// Who answers `ask_user`: the owner (owner conditions) or the client (delivery conditions).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Asked {
    /// The project's owner (seed 000).
    Owner,
    /// The client who made a delivery request (seed 002).
    Client,
}

impl Asked {
    fn noun(self) -> &'static str {
        match self {
            Asked::Owner => "owner",
            Asked::Client => "client",
        }
    }
}

fn object(properties: Value, required: &[&str]) -> Value {
    json!({ "type": "object", "properties": properties, "required": required, "additionalProperties": false })
}

/// The spec of one harness tool in the bridge's words. `ask_user` takes `question` or
/// `questions` (exactly one; an array is answered question by question, seed 002 A.9.3);
/// `submit` an optional `summary`; `write_plan` a `plan`.
pub fn tool_spec(tool: HarnessTool, asked: Asked) -> ToolSpec {
    let (description, parameters) = match tool {
        HarnessTool::AskUser => (
            format!(
                "Ask the {} something. Give either `question` (one message) or `questions` (a list, each \
                 answered on its own), not both; the answers come back as the result. Each call counts as one \
                 round of questions. Call it on its own, not beside other tool calls.",
                asked.noun()
            ),
            object(
                json!({
                    "question": { "type": "string", "description": "One question or message." },
                    "questions": {
                        "type": "array",
                        "items": { "type": "string" },
                        "minItems": 1,
                        "description": "Several questions, answered one by one."
                    }
                }),
                &[],
            ),
        ),
        HarnessTool::Submit => (
            "Hand in the workspace as it is now for review. The result says whether it was accepted; when it \
             was not, it carries the feedback to act on. Call it on its own, not beside other tool calls."
                .to_string(),
            object(json!({ "summary": { "type": "string", "description": "A short note on what you delivered." } }), &[]),
        ),
        HarnessTool::WritePlan => (
            "Save your plan (it becomes PLAN.md) and move from planning to carrying it out. Call it on its own, \
             not beside other tool calls."
                .to_string(),
            object(json!({ "plan": { "type": "string", "description": "The whole plan." } }), &["plan"]),
        ),
    };
    ToolSpec { name: tool.name().to_string(), description, parameters }
}

/// The harness tools an episode offers, with their specs, in a stable order.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Offer {
    specs: Vec<ToolSpec>,
}

/// A spec whose name is not a harness tool, or a tool listed twice.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OfferError {
    /// Not `ask_user`, `submit` or `write_plan`.
    #[error("the bridge serves only ask_user, submit and write_plan, not `{0}`")]
    NotHarnessTool(String),
    /// The same tool twice.
    #[error("the tool `{0}` is offered twice")]
    Duplicate(String),
}

impl Offer {
    /// The usual offer: `ask_user` when asking is on, `submit`, and `write_plan` in plan mode,
    /// with [`tool_spec`]'s descriptions.
    pub fn standard(ask: Option<Asked>, plan_mode: bool) -> Self {
        let mut specs = Vec::new();
        if let Some(asked) = ask {
            specs.push(tool_spec(HarnessTool::AskUser, asked));
        }
        specs.push(tool_spec(HarnessTool::Submit, Asked::Owner));
        if plan_mode {
            specs.push(tool_spec(HarnessTool::WritePlan, Asked::Owner));
        }
        Offer { specs }
    }

    /// An offer of exactly these specs (e.g. the engine's own, filtered to the harness tools).
    ///
    /// # Errors
    /// [`OfferError`] for a spec that is not a harness tool or a tool given twice.
    pub fn from_specs(specs: Vec<ToolSpec>) -> Result<Self, OfferError> {
        let mut seen = Vec::new();
        for spec in &specs {
            let tool = HarnessTool::from_name(&spec.name).ok_or_else(|| OfferError::NotHarnessTool(spec.name.clone()))?;
            if seen.contains(&tool) {
                return Err(OfferError::Duplicate(spec.name.clone()));
            }
            seen.push(tool);
        }
        Ok(Offer { specs })
    }

    /// The specs, in order.
    pub fn specs(&self) -> &[ToolSpec] {
        &self.specs
    }

    /// Whether `tool` is offered.
    pub fn offers(&self, tool: HarnessTool) -> bool {
        self.specs.iter().any(|s| s.name == tool.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_standard_offer_follows_ask_and_plan_mode() {
        let names = |offer: &Offer| offer.specs().iter().map(|s| s.name.clone()).collect::<Vec<_>>();
        assert_eq!(names(&Offer::standard(Some(Asked::Owner), false)), ["ask_user", "submit"]);
        assert_eq!(names(&Offer::standard(None, false)), ["submit"]);
        assert_eq!(names(&Offer::standard(Some(Asked::Client), true)), ["ask_user", "submit", "write_plan"]);
        assert!(Offer::standard(Some(Asked::Client), false).specs()[0].description.contains("the client"));
    }

    #[test]
    fn offers_hold_only_harness_tools_once() {
        let bash = ToolSpec { name: "bash".into(), description: String::new(), parameters: json!({}) };
        assert_eq!(Offer::from_specs(vec![bash]), Err(OfferError::NotHarnessTool("bash".into())));
        let submit = tool_spec(HarnessTool::Submit, Asked::Owner);
        assert_eq!(Offer::from_specs(vec![submit.clone(), submit]), Err(OfferError::Duplicate("submit".into())));
    }
}
