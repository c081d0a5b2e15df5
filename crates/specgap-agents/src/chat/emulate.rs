//! `--emulate-tools`: tool calls for models without native tool calling.
//!
//! The tools are described in the system prompt, and the model calls them by writing fenced
//! blocks in its reply (documented format):
//!
//! ````text
//! ```tool_call
//! {"tool": "read_text", "arguments": {"path": "README.md"}}
//! ```
//! ````
//!
//! Each block holds one JSON object (`"name"` is accepted for `"tool"`, `"parameters"` for
//! `"arguments"`) or an array of them; several blocks in one reply run in order. Tool results
//! come back as one user message (many chat templates want user and assistant to alternate).

use serde_json::Value;
use specgap_protocol::event::{ToolCall, ToolSpec};

/// The fence that opens a call block.
pub const FENCE: &str = "```tool_call";

/// The system-prompt addendum describing the tools and the call format.
pub fn tool_instructions(tools: &[ToolSpec]) -> String {
    let mut text = String::from(
        "\n\n## Calling tools\n\nYou call a tool by writing a fenced block in your reply, opened with ```tool_call and \
         closed with ```, holding one JSON object with the tool name and its arguments, for example:\n\n```tool_call\n\
         {\"tool\": \"list_files\", \"arguments\": {\"path\": \".\"}}\n```\n\nYou may write several blocks; they run in \
         order. The results come back in the next message. A reply without a block calls no tool.\n\nThe tools:\n",
    );
    for tool in tools {
        text.push_str(&format!("\n### {}\n{}\nArguments (JSON schema): {}\n", tool.name, tool.description, tool.parameters));
    }
    text
}

/// The calls in `reply`, in order, and the parse errors of blocks that are not calls.
pub fn parse_calls(reply: &str) -> (Vec<ToolCall>, Vec<String>) {
    let mut calls = Vec::new();
    let mut errors = Vec::new();
    let mut rest = reply;
    while let Some(start) = rest.find(FENCE) {
        let after = &rest[start + FENCE.len()..];
        let (block, next) = match after.find("```") {
            Some(end) => (&after[..end], &after[end + 3..]),
            None => (after, ""),
        };
        match serde_json::from_str::<Value>(block.trim()) {
            Ok(Value::Array(items)) => items.iter().for_each(|item| push_call(item, &mut calls, &mut errors)),
            Ok(item) => push_call(&item, &mut calls, &mut errors),
            Err(e) => errors.push(format!("a tool_call block is not valid JSON ({e})")),
        }
        rest = next;
    }
    (calls, errors)
}

fn push_call(item: &Value, calls: &mut Vec<ToolCall>, errors: &mut Vec<String>) {
    let name = item.get("tool").or_else(|| item.get("name")).and_then(Value::as_str);
    let Some(name) = name else {
        errors.push("a tool_call block has no \"tool\" name".into());
        return;
    };
    let arguments = item.get("arguments").or_else(|| item.get("parameters"));
    calls.push(ToolCall { id: String::new(), tool: name.to_string(), arguments: crate::chat::wire::arguments_value(arguments) });
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn blocks_parse_in_order() {
        let reply = "Let me look.\n```tool_call\n{\"tool\": \"list_files\", \"arguments\": {\"path\": \".\"}}\n```\nand\n\
                     ```tool_call\n[{\"name\": \"read_text\", \"parameters\": \"{\\\"path\\\": \\\"a\\\"}\"}, {\"tool\": \"submit\"}]\n```\n\
                     ```tool_call\nnot json\n```";
        let (calls, errors) = parse_calls(reply);
        let names: Vec<&str> = calls.iter().map(|c| c.tool.as_str()).collect();
        assert_eq!(names, ["list_files", "read_text", "submit"]);
        assert_eq!(calls[1].arguments, json!({"path": "a"}));
        assert_eq!(calls[2].arguments, json!({}));
        assert_eq!(errors.len(), 1);
        assert!(parse_calls("no blocks here").0.is_empty());
    }
}
