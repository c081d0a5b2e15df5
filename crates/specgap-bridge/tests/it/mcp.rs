//! The MCP server over an in-memory pipe, speaking JSON-RPC lines as an MCP client does:
//! `initialize` → `tools/list` → `tools/call`, with the harness behind a real socket.

use serde_json::{Value, json};
use specgap_bridge::mcp::{McpBridge, Rename, serve};
use specgap_bridge::{Asked, BridgeClient, BridgeEndpoint, HarnessTool, Offer, Response};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};

const TOKEN: &str = "feedfacefeedfacefeedfacefeedface";

/// Sends each message; for those with an `id`, reads lines until the response with that id.
async fn converse(messages: Vec<Value>, offer: Offer, seen: std::sync::Arc<std::sync::Mutex<Vec<(HarnessTool, Value)>>>) -> Vec<Value> {
    converse_renamed(messages, offer, seen, Vec::new()).await
}

/// [`converse`] with a server that serves tools under the names `renames` give them.
async fn converse_renamed(
    messages: Vec<Value>,
    offer: Offer,
    seen: std::sync::Arc<std::sync::Mutex<Vec<(HarnessTool, Value)>>>,
    renames: Vec<Rename>,
) -> Vec<Value> {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("b.sock");
    let (_endpoint, calls) = BridgeEndpoint::bind(&socket, TOKEN, offer).unwrap();
    std::thread::spawn(move || {
        calls.serve(|call| {
            seen.lock().unwrap().push((call.tool(), call.arguments().clone()));
            Response::ok(format!("The owner says: use the settlement report. ({})", call.tool().name()))
        });
    });
    let (client_side, server_side) = tokio::io::duplex(1 << 16);
    let (server_read, server_write) = tokio::io::split(server_side);
    let server = tokio::spawn(serve(McpBridge::new(BridgeClient::new(&socket, TOKEN)).with_renames(renames), (server_read, server_write)));
    let (client_read, mut client_write) = tokio::io::split(client_side);
    let mut lines = BufReader::new(client_read).lines();
    let mut responses = Vec::new();
    for message in messages {
        let mut line = serde_json::to_vec(&message).unwrap();
        line.push(b'\n');
        client_write.write_all(&line).await.unwrap();
        let Some(id) = message.get("id") else { continue };
        loop {
            let line = lines.next_line().await.unwrap().expect("the server closed the pipe");
            let value: Value = serde_json::from_str(&line).unwrap();
            if value.get("id") == Some(id) {
                responses.push(value);
                break;
            }
        }
    }
    drop(client_write);
    drop(lines);
    let _ = server.await;
    responses
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
}

fn initialize() -> Vec<Value> {
    vec![
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test-client", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    ]
}

#[test]
fn initialize_list_and_call_ask_user_reach_the_harness() {
    let seen = std::sync::Arc::default();
    let mut messages = initialize();
    messages.push(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}));
    messages.push(json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "ask_user", "arguments": {"question": "Which report is authoritative?"}}}));
    let responses = runtime().block_on(converse(messages, Offer::standard(Some(Asked::Owner), false), std::sync::Arc::clone(&seen)));
    assert_eq!(responses[0]["result"]["serverInfo"]["name"], "specgap");
    // It names no tool: which are offered changes with the episode (a text channel offers no
    // ask_user) and some CLIs show the text with every request.
    assert_eq!(
        responses[0]["result"]["instructions"],
        "Tools of the person you work for; each tool's description says what it does. Each call stands alone."
    );
    assert_eq!(responses[0]["result"]["capabilities"]["tools"], json!({}));
    let tools = responses[1]["result"]["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["ask_user", "submit"]);
    assert_eq!(tools[0]["inputSchema"], specgap_bridge::tool_spec(HarnessTool::AskUser, Asked::Owner).parameters);
    assert_eq!(
        responses[2]["result"],
        json!({"content": [{"type": "text", "text": "The owner says: use the settlement report. (ask_user)"}], "isError": false})
    );
    assert_eq!(*seen.lock().unwrap(), [(HarnessTool::AskUser, json!({"question": "Which report is authoritative?"}))]);
}

#[test]
fn other_tools_and_methods_are_refused_without_reaching_the_harness() {
    let seen = std::sync::Arc::default();
    let mut messages = initialize();
    messages.push(
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "bash", "arguments": {"command": "cat /etc/shadow"}}}),
    );
    messages.push(json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "write_plan", "arguments": {"plan": "p"}}}));
    messages.push(json!({"jsonrpc": "2.0", "id": 4, "method": "resources/read", "params": {"uri": "file:///etc/passwd"}}));
    messages.push(json!({"jsonrpc": "2.0", "id": 5, "method": "prompts/get", "params": {"name": "x"}}));
    let responses = runtime().block_on(converse(messages, Offer::standard(Some(Asked::Owner), false), std::sync::Arc::clone(&seen)));
    assert_eq!(
        responses[1]["result"],
        json!({"content": [{"type": "text", "text": "this server has only ask_user, submit and write_plan; `bash` is not one of them"}], "isError": true})
    );
    assert_eq!(
        responses[2]["result"],
        json!({"content": [{"type": "text", "text": "`write_plan` is not available in this episode"}], "isError": true})
    );
    assert_eq!(responses[3]["error"]["code"], -32601);
    assert_eq!(responses[4]["error"]["code"], -32601);
    assert!(seen.lock().unwrap().is_empty());
}

#[test]
fn a_renamed_ask_user_is_listed_and_called_by_its_new_name_only() {
    // gemini-cli withholds any tool called `ask_user` in headless mode; its adapter serves it
    // as `ask_question` (docs/decisions.md "CLI agents: gemini-cli").
    let seen = std::sync::Arc::default();
    let mut messages = initialize();
    messages.push(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}));
    messages.push(
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "ask_user", "arguments": {"question": "Old name?"}}}),
    );
    messages.push(json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "ask_question", "arguments": {"question": "Which report?"}}}));
    let renames = vec!["ask_user=ask_question".parse::<Rename>().unwrap()];
    let responses =
        runtime().block_on(converse_renamed(messages, Offer::standard(Some(Asked::Owner), false), std::sync::Arc::clone(&seen), renames));
    let names: Vec<&str> = responses[1]["result"]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["ask_question", "submit"]);
    assert_eq!(
        responses[2]["result"],
        json!({"content": [{"type": "text", "text": "this server has only ask_question, submit and write_plan; `ask_user` is not one of them"}], "isError": true})
    );
    assert_eq!(responses[3]["result"]["content"][0]["text"], "The owner says: use the settlement report. (ask_user)");
    assert_eq!(*seen.lock().unwrap(), [(HarnessTool::AskUser, json!({"question": "Which report?"}))]);
}

#[test]
fn a_rename_must_name_a_harness_tool_and_a_usable_name_no_other_tool_has() {
    assert_eq!("submit=hand_in".parse::<Rename>().unwrap(), Rename { tool: HarnessTool::Submit, name: "hand_in".into() });
    for bad in ["ask_user", "bash=run", "ask_user=", "ask_user=submit", "ask_user=has space", "ask_user=a/b"] {
        let error = bad.parse::<Rename>().unwrap_err().to_string();
        assert_eq!(
            error,
            format!(
                "--rename {bad}: expected TOOL=NAME, TOOL one of ask_user, submit, write_plan and NAME 1 to 64 letters, digits, `_` or `-`, not another harness tool's name"
            )
        );
    }
}
