//! Who may see what. The live viewer is for the person who ran the run: it shows private
//! evaluations, requirement and clarification-target text and workspace diffs, each fenced
//! as private in the page. A static site is for publishing: without `--include-private` it
//! holds none of them ([`Access::PUBLIC`]).
//!
//! Private, and withheld from a public site:
//! - `evaluation` and `start_evaluation` events, requirement outcomes, test results, delivery verdicts, the failing
//!   requirement of a submission, each `result.json` (submissions and the residual start);
//! - workspace diffs (`submissions/<k>/workspace.diff`, `start/workspace.diff`);
//! - requirement and clarification-target text (the package's private files), coverage
//!   judgements and the targets a question matched, model panels' ballots (their requests quote
//!   the targets) and extraction verdicts;
//! - evaluation errors' messages and stderr (an evaluator's output may quote expected values);
//! - every event of a kind this build does not know (it may be private: a judge's ballot).
//!
//! Public: what the agent saw or did (the prompts and a plan-mode phase change's new prompt
//! and tools, its turns, tool results, the owner's or
//! customer's messages, its submissions, an external agent's harness calls (`bridge_call`: the
//! tool and its arguments), its file actions, its exit (status and standard error: the sandbox
//! holds no secret), its network attempts outside the gateway and whether the tripwire that
//! records them was armed), and outcomes (Score, Success, end reasons, the
//! measures of the report), model usage and infrastructure errors.

/// What a response may contain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Access {
    /// Whether private text may be included.
    pub private: bool,
}

impl Access {
    /// Everything, private parts included (the live viewer; `--static --include-private`).
    pub const PRIVATE: Access = Access { private: true };
    /// Nothing private (`--static` alone).
    pub const PUBLIC: Access = Access { private: false };
}

/// Event kinds any reader may see (`type` of a trajectory line).
const PUBLIC_KINDS: &[&str] = &[
    "episode_start",
    "agent_turn",
    "tool_result",
    "user_message",
    "phase_change",
    "overlay",
    "submission",
    "budget",
    "error",
    "end",
    "network_attempt",
    "network_tripwire",
    "bridge_call",
    "actions",
    "file_reads",
    "agent_exit",
];

/// Whether an event of `kind` is shown whole to `access` (else it is reduced to a withheld
/// marker).
pub(crate) fn kind_visible(kind: &str, access: Access) -> bool {
    access.private || PUBLIC_KINDS.contains(&kind)
}

/// `event` as `access` may see it: unchanged, or (public) a private or unknown event reduced
/// to `{seq, ts_ms, elapsed_ms, type: "withheld", kind}` and an evaluation error's words
/// removed.
pub(crate) fn visible_event(event: serde_json::Value, access: Access) -> serde_json::Value {
    if access.private {
        return event;
    }
    let kind = event.get("type").and_then(|t| t.as_str()).unwrap_or("").to_string();
    if !PUBLIC_KINDS.contains(&kind.as_str()) {
        let mut out = serde_json::Map::new();
        for key in ["seq", "ts_ms", "elapsed_ms"] {
            if let Some(v) = event.get(key) {
                out.insert(key.into(), v.clone());
            }
        }
        out.insert("type".into(), "withheld".into());
        out.insert("kind".into(), kind.into());
        return serde_json::Value::Object(out);
    }
    if kind == "error" && event.get("class").and_then(|c| c.as_str()) == Some("evaluation") {
        let mut event = event;
        event["message"] = "evaluation error (details are private)".into();
        if let Some(map) = event.as_object_mut() {
            map.remove("stderr_tail");
        }
        return event;
    }
    event
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn public_access_withholds_private_and_unknown_events() {
        let evaluation = json!({"seq": 4, "ts_ms": 9, "elapsed_ms": 2, "type": "evaluation", "k": 1, "score": 0.2, "success": false, "failing_requirement": "r1"});
        assert_eq!(
            visible_event(evaluation.clone(), Access::PUBLIC),
            json!({"seq": 4, "ts_ms": 9, "elapsed_ms": 2, "type": "withheld", "kind": "evaluation"})
        );
        assert_eq!(visible_event(evaluation.clone(), Access::PRIVATE), evaluation);
        let ballot = json!({"seq": 5, "type": "judge_ballot", "target": "t"});
        assert_eq!(visible_event(ballot, Access::PUBLIC), json!({"seq": 5, "type": "withheld", "kind": "judge_ballot"}));
        let eval_error = json!({"seq": 6, "type": "error", "class": "evaluation", "message": "expected 42", "stderr_tail": "42"});
        assert_eq!(
            visible_event(eval_error, Access::PUBLIC),
            json!({"seq": 6, "type": "error", "class": "evaluation", "message": "evaluation error (details are private)"})
        );
        let infra = json!({"seq": 7, "type": "error", "class": "infrastructure", "message": "sandbox"});
        assert_eq!(visible_event(infra.clone(), Access::PUBLIC), infra);
        // Plan mode's new prompt and tools are what the agent was told: public.
        let phase = json!({"seq": 8, "type": "phase_change", "phase": "execute", "system_prompt": "Go on.", "tools": []});
        assert_eq!(visible_event(phase.clone(), Access::PUBLIC), phase);
        let exchange = json!({"seq": 9, "type": "model_exchange", "model": "m"});
        assert_eq!(visible_event(exchange, Access::PUBLIC), json!({"seq": 9, "type": "withheld", "kind": "model_exchange"}));
        // What the agent tried on the network is what it did: public.
        let attempt =
            json!({"seq": 10, "type": "network_attempt", "protocol": "dns", "name": "api.openai.com", "address": "127.0.0.53", "port": 53});
        assert_eq!(visible_event(attempt.clone(), Access::PUBLIC), attempt);
        let tripwire = json!({"seq": 11, "type": "network_tripwire", "armed": true, "attempts": 1});
        assert_eq!(visible_event(tripwire.clone(), Access::PUBLIC), tripwire);
        // An external agent's harness calls, file actions and exit are what it did: public.
        let call = json!({"seq": 12, "type": "bridge_call", "turn": 1, "call": {"id": "bridge-1", "tool": "ask_user", "arguments": {"question": "Q?"}}});
        assert_eq!(visible_event(call.clone(), Access::PUBLIC), call);
        let actions = json!({"seq": 13, "type": "actions", "turn": 1, "actions": [{"kind": "read", "path": "a.py"}]});
        assert_eq!(visible_event(actions.clone(), Access::PUBLIC), actions);
        let exit = json!({"seq": 14, "type": "agent_exit", "status": 0, "how": "exited", "stderr_tail": "done"});
        assert_eq!(visible_event(exit.clone(), Access::PUBLIC), exit);
        // The user model's requests quote the private requirements: withheld.
        let user_request = json!({"seq": 15, "type": "user_request", "request": "sha256:00"});
        assert_eq!(visible_event(user_request, Access::PUBLIC), json!({"seq": 15, "type": "withheld", "kind": "user_request"}));
    }
}
