//! Error responses in the shape each protocol's clients parse, so a CLI that is refused (by
//! the allow-list, a budget, the episode's end, a dead upstream) reads a normal API error and
//! stops cleanly, and a stream the gateway has to end early ends with the protocol's error
//! event.
//!
//! | protocol | error body | stream error event |
//! | --- | --- | --- |
//! | OpenAI chat, Responses | `{"error":{"message","type","param":null,"code"}}` | chat: `data: {"error":{...}}`; Responses: `event: error` + `{"type":"error","code","message","param":null}` |
//! | Anthropic Messages | `{"type":"error","error":{"type","message"}}` | `event: error` + the same object |
//! | Gemini | `{"error":{"code","message","status"}}` | `data: {"error":{...}}` |

use serde_json::json;

use crate::config::Protocol;

/// An error body for a response of `status`, in `protocol`'s shape (OpenAI's when the request
/// named no protocol the gateway knows). `code` is a short machine-readable reason
/// (`model_not_allowed`, `budget`, ...), `message` the sentence for the agent.
pub(crate) fn error_body(protocol: Option<Protocol>, status: u16, code: &str, message: &str) -> Vec<u8> {
    let value = match protocol {
        Some(Protocol::AnthropicMessages) => json!({
            "type": "error",
            "error": { "type": anthropic_type(status), "message": message },
        }),
        Some(Protocol::Gemini) => json!({
            "error": { "code": status, "message": message, "status": gemini_status(status) },
        }),
        Some(Protocol::OpenaiChat | Protocol::OpenaiResponses) | None => json!({
            "error": { "message": message, "type": openai_type(status), "param": null, "code": code },
        }),
    };
    value.to_string().into_bytes()
}

/// The event that ends a stream the gateway cannot complete (a cut upstream stream, the
/// episode's end), in `protocol`'s stream shape, with the blank line that dispatches it.
pub(crate) fn stream_error_event(protocol: Protocol, message: &str) -> Vec<u8> {
    let status = 500;
    let text = match protocol {
        Protocol::OpenaiChat => {
            format!(
                "data: {}\n\n",
                json!({ "error": { "message": message, "type": openai_type(status), "param": null, "code": "stream_interrupted" } })
            )
        }
        Protocol::OpenaiResponses => format!(
            "event: error\ndata: {}\n\n",
            json!({ "type": "error", "code": "stream_interrupted", "message": message, "param": null })
        ),
        Protocol::AnthropicMessages => {
            format!(
                "event: error\ndata: {}\n\n",
                json!({ "type": "error", "error": { "type": anthropic_type(status), "message": message } })
            )
        }
        Protocol::Gemini => {
            format!("data: {}\n\n", json!({ "error": { "code": status, "message": message, "status": gemini_status(status) } }))
        }
    };
    text.into_bytes()
}

fn openai_type(status: u16) -> &'static str {
    match status {
        401 => "authentication_error",
        403 => "permission_error",
        429 => "rate_limit_error",
        500..=599 => "server_error",
        _ => "invalid_request_error",
    }
}

fn anthropic_type(status: u16) -> &'static str {
    match status {
        401 => "authentication_error",
        403 => "permission_error",
        404 => "not_found_error",
        413 => "request_too_large",
        429 => "rate_limit_error",
        529 => "overloaded_error",
        500..=599 => "api_error",
        _ => "invalid_request_error",
    }
}

fn gemini_status(status: u16) -> &'static str {
    match status {
        401 => "UNAUTHENTICATED",
        403 => "PERMISSION_DENIED",
        404 => "NOT_FOUND",
        429 => "RESOURCE_EXHAUSTED",
        502 | 503 => "UNAVAILABLE",
        504 => "DEADLINE_EXCEEDED",
        500..=599 => "INTERNAL",
        _ => "INVALID_ARGUMENT",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_protocol_gets_its_own_error_shape() {
        let openai: serde_json::Value =
            serde_json::from_slice(&error_body(Some(Protocol::OpenaiChat), 403, "budget", "no more turns")).unwrap();
        assert_eq!(openai, json!({"error": {"message": "no more turns", "type": "permission_error", "param": null, "code": "budget"}}));
        let anthropic: serde_json::Value =
            serde_json::from_slice(&error_body(Some(Protocol::AnthropicMessages), 400, "budget", "no more turns")).unwrap();
        assert_eq!(anthropic, json!({"type": "error", "error": {"type": "invalid_request_error", "message": "no more turns"}}));
        let gemini: serde_json::Value = serde_json::from_slice(&error_body(Some(Protocol::Gemini), 401, "unauthorized", "no")).unwrap();
        assert_eq!(gemini, json!({"error": {"code": 401, "message": "no", "status": "UNAUTHENTICATED"}}));
        assert_eq!(
            String::from_utf8(stream_error_event(Protocol::AnthropicMessages, "cut")).unwrap(),
            "event: error\ndata: {\"error\":{\"message\":\"cut\",\"type\":\"api_error\"},\"type\":\"error\"}\n\n"
        );
    }
}
