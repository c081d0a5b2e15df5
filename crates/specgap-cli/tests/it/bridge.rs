//! The bridge program in a real sandbox (bubblewrap, uid 1000, no network, read-only system):
//! the `ask_user` / `submit` commands and the MCP server round-trip to a harness endpoint
//! through the mounted socket.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use specgap_bridge::install::{SANDBOX_BIN_DIR, SANDBOX_SOCKET};
use specgap_bridge::wire::{SOCKET_ENV, TOKEN_ENV};
use specgap_bridge::{Asked, BridgeEndpoint, HarnessTool, Offer, Response, make_tools_dir, new_token};
use specgap_sandbox::{CommandOutput, CommandSpec, HostView, SandboxConfig, run};

/// An episode's bridge: the endpoint, its token, the tools directory and a workspace.
pub struct SandboxBridge {
    pub dir: tempfile::TempDir,
    pub endpoint: BridgeEndpoint,
    pub token: String,
    pub seen: Arc<Mutex<Vec<(HarnessTool, Value)>>>,
}

impl SandboxBridge {
    /// A bridge answering every call with `reply`.
    pub fn new(offer: Offer, reply: impl Fn(HarnessTool, &Value) -> Response + Send + 'static) -> Self {
        // A short path: Unix socket paths are limited to 107 bytes.
        let dir = tempfile::Builder::new().prefix("sgb").tempdir_in("/tmp").unwrap();
        let token = new_token().unwrap();
        let (endpoint, calls) = BridgeEndpoint::bind(&dir.path().join("b.sock"), token.clone(), offer).unwrap();
        make_tools_dir(&dir.path().join("bin"), Path::new(env!("CARGO_BIN_EXE_specgap-bridge"))).unwrap();
        std::fs::create_dir(dir.path().join("ws")).unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let record = Arc::clone(&seen);
        std::thread::spawn(move || {
            calls.serve(|call| {
                record.lock().unwrap().push((call.tool(), call.arguments().clone()));
                reply(call.tool(), call.arguments())
            });
        });
        SandboxBridge { dir, endpoint, token, seen }
    }

    pub fn workspace(&self) -> PathBuf {
        self.dir.path().join("ws")
    }

    /// Runs `command` (sh) in a fresh sandbox with the tools directory and the socket mounted
    /// read-only, as a `cli:` agent's commands would run.
    pub fn run(&self, command: &str) -> CommandOutput {
        let spec = CommandSpec::shell(command, &self.workspace())
            .read_only(self.dir.path().join("bin"), SANDBOX_BIN_DIR)
            .read_only(self.endpoint.path(), SANDBOX_SOCKET)
            .env("PATH", format!("{SANDBOX_BIN_DIR}:/usr/bin:/bin"))
            .env(SOCKET_ENV, SANDBOX_SOCKET)
            .env(TOKEN_ENV, &self.token);
        let output = run(&spec, &HostView::system().unwrap(), &SandboxConfig::default()).unwrap();
        assert!(output.sandboxed);
        output
    }
}

fn text(output: &CommandOutput) -> (String, String) {
    (output.stdout.text(), output.stderr.text())
}

#[test]
fn ask_user_and_submit_commands_round_trip_from_a_real_sandbox() {
    let submissions = Mutex::new(0);
    let bridge = SandboxBridge::new(Offer::standard(Some(Asked::Owner), false), move |tool, args| match tool {
        HarnessTool::AskUser if args.get("questions").is_some() => Response::ok("1. Yes.\n2. Only the settlement report."),
        HarnessTool::AskUser => Response::ok("Use the settlement report; the checkout log misses retries."),
        _ => {
            let mut n = submissions.lock().unwrap();
            *n += 1;
            if *n == 1 {
                Response::ok("Not accepted yet. The owner writes: two customers were charged twice.")
            } else {
                Response::ok("Accepted.").ended()
            }
        }
    });
    let output = bridge.run(
        "ask_user 'Which report is authoritative?'; echo \"status=$?\"; \
         ask_user 'Keep the retries?' 'Which records?'; echo \"status=$?\"; \
         submit 'first try'; echo \"status=$?\"; submit; echo \"status=$?\"; \
         ask_user 'anything else?'; echo \"status=$?\"; id -u",
    );
    let (stdout, stderr) = text(&output);
    assert_eq!(
        stdout,
        "Use the settlement report; the checkout log misses retries.\nstatus=0\n\
         1. Yes.\n2. Only the settlement report.\nstatus=0\n\
         Not accepted yet. The owner writes: two customers were charged twice.\nstatus=1\n\
         Accepted.\nstatus=0\n\
         status=4\n1000\n"
    );
    assert_eq!(stderr, format!("{}\n", specgap_bridge::endpoint::EPISODE_OVER));
    assert_eq!(
        *bridge.seen.lock().unwrap(),
        [
            (HarnessTool::AskUser, json!({"question": "Which report is authoritative?"})),
            (HarnessTool::AskUser, json!({"questions": ["Keep the retries?", "Which records?"]})),
            (HarnessTool::Submit, json!({"summary": "first try"})),
            (HarnessTool::Submit, json!({})),
        ]
    );
}

/// A minimal MCP client: starts `specgap-bridge mcp`, runs the handshake, lists the tools and
/// calls each tool named on the command line (JSON arguments), printing one JSON line per
/// response.
pub const MCP_CLIENT: &str = r#"
import json, subprocess, sys
server = subprocess.Popen(["specgap-bridge", "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
def send(message):
    server.stdin.write((json.dumps(message) + "\n").encode()); server.stdin.flush()
def receive(id):
    while True:
        reply = json.loads(server.stdout.readline())
        if reply.get("id") == id:
            return reply
send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "sandbox-test", "version": "1"}}})
print(json.dumps(receive(0)["result"]["serverInfo"]["name"]))
send({"jsonrpc": "2.0", "method": "notifications/initialized"})
send({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
print(json.dumps([tool["name"] for tool in receive(1)["result"]["tools"]]))
for n, (name, arguments) in enumerate(zip(sys.argv[1::2], sys.argv[2::2]), start=2):
    send({"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": {"name": name, "arguments": json.loads(arguments)}})
    print(json.dumps(receive(n)["result"], sort_keys=True))
server.stdin.close(); server.wait()
print(server.returncode)
"#;

#[test]
fn mcp_initialize_list_and_call_round_trip_from_a_real_sandbox() {
    let bridge = SandboxBridge::new(Offer::standard(Some(Asked::Client), true), |tool, _| match tool {
        HarnessTool::AskUser => Response::ok("Weekly buckets, starting on Monday."),
        HarnessTool::WritePlan => Response::ok("Plan saved as PLAN.md."),
        HarnessTool::Submit => Response::ok("Received.").ended(),
    });
    std::fs::write(bridge.workspace().join("client.py"), MCP_CLIENT).unwrap();
    let output = bridge.run(
        r#"python3 client.py ask_user '{"question": "How are weeks counted?"}' bash '{"command": "id"}' write_plan '{"plan": "1. read"}' submit '{}'"#,
    );
    let (stdout, stderr) = text(&output);
    assert_eq!(
        stdout,
        "\"specgap\"\n[\"ask_user\", \"submit\", \"write_plan\"]\n\
         {\"content\": [{\"text\": \"Weekly buckets, starting on Monday.\", \"type\": \"text\"}], \"isError\": false}\n\
         {\"content\": [{\"text\": \"this server has only ask_user, submit and write_plan; `bash` is not one of them\", \"type\": \"text\"}], \"isError\": true}\n\
         {\"content\": [{\"text\": \"Plan saved as PLAN.md.\", \"type\": \"text\"}], \"isError\": false}\n\
         {\"content\": [{\"text\": \"Received.\", \"type\": \"text\"}], \"isError\": false}\n0\n",
        "stderr: {stderr}"
    );
    assert_eq!(
        *bridge.seen.lock().unwrap(),
        [
            (HarnessTool::AskUser, json!({"question": "How are weeks counted?"})),
            (HarnessTool::WritePlan, json!({"plan": "1. read"})),
            (HarnessTool::Submit, json!({})),
        ]
    );
}

#[test]
fn a_sandbox_without_the_endpoint_gets_status_5_and_a_clear_message() {
    let bridge = SandboxBridge::new(Offer::standard(Some(Asked::Owner), false), |_, _| Response::ok("x"));
    let spec = CommandSpec::shell("ask_user 'q?'; echo \"status=$?\"", &bridge.workspace())
        .read_only(bridge.dir.path().join("bin"), SANDBOX_BIN_DIR)
        .env("PATH", format!("{SANDBOX_BIN_DIR}:/usr/bin:/bin"))
        .env(SOCKET_ENV, SANDBOX_SOCKET)
        .env(TOKEN_ENV, &bridge.token);
    let output = run(&spec, &HostView::system().unwrap(), &SandboxConfig::default()).unwrap();
    let (stdout, stderr) = text(&output);
    assert_eq!(stdout, "status=5\n");
    assert!(
        stderr.starts_with("ask_user: the specgap harness cannot be reached at /run/specgap/bridge.sock; the episode has probably ended"),
        "{stderr}"
    );
    assert!(bridge.seen.lock().unwrap().is_empty());
}
