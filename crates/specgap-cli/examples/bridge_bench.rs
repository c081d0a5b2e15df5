//! Bridge round trips from inside a real sandbox (BENCHMARKS.md, "Bridge"): `bench/bridge.sh`.
//!
//! One sandbox runs a Python driver that times, `--runs` times each and interleaved: spawning
//! `/bin/true` (the floor of any command), the `ask_user` command (process start, connect,
//! request, the harness's instant answer, print), an MCP `tools/call ask_user` on one open
//! session of `specgap-bridge mcp`, and a bare request on the socket from Python (no bridge
//! program). It prints the medians in milliseconds.

use specgap_bridge::install::{SANDBOX_BIN_DIR, SANDBOX_SOCKET};
use specgap_bridge::wire::{SOCKET_ENV, TOKEN_ENV};
use specgap_bridge::{Asked, BridgeEndpoint, Offer, Response, locate_bridge, make_tools_dir, new_token};
use specgap_sandbox::{CommandSpec, HostView, SandboxConfig, run};

const DRIVER: &str = r#"
import json, os, socket, statistics, subprocess, sys, time
runs = int(sys.argv[1])
token = os.environ["SPECGAP_BRIDGE_TOKEN"]
server = subprocess.Popen(["specgap-bridge", "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
def send(m):
    server.stdin.write((json.dumps(m) + "\n").encode()); server.stdin.flush()
def receive(i):
    while True:
        r = json.loads(server.stdout.readline())
        if r.get("id") == i: return r
send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}})
receive(0)
send({"jsonrpc": "2.0", "method": "notifications/initialized"})
def spawn_true(): subprocess.run(["/bin/true"], check=True)
def command(): subprocess.run(["ask_user", "How are weeks counted?"], check=True, stdout=subprocess.DEVNULL)
n = [1]
def mcp():
    n[0] += 1
    send({"jsonrpc": "2.0", "id": n[0], "method": "tools/call", "params": {"name": "ask_user", "arguments": {"question": "How are weeks counted?"}}})
    receive(n[0])
def raw():
    s = socket.socket(socket.AF_UNIX); s.connect(os.environ["SPECGAP_BRIDGE_SOCKET"])
    s.sendall((json.dumps({"v": 1, "token": token, "op": "call", "tool": "ask_user", "arguments": {"question": "q"}}) + "\n").encode())
    f = s.makefile("rb"); f.readline(); s.close()
cases = [("spawn /bin/true", spawn_true), ("ask_user command", command), ("MCP tools/call ask_user", mcp), ("bare socket request (Python)", raw)]
times = {name: [] for name, _ in cases}
for _ in range(runs):
    for name, f in cases:
        t = time.perf_counter_ns(); f(); times[name].append((time.perf_counter_ns() - t) / 1e6)
for name, _ in cases:
    print(f"{name}\t{statistics.median(times[name]):.3f} ms")
server.stdin.close(); server.wait()
"#;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let runs: u32 = std::env::args().skip_while(|a| a != "--runs").nth(1).map_or(Ok(200), |r| r.parse())?;
    let dir = tempfile::Builder::new().prefix("sgb").tempdir_in("/tmp")?;
    let token = new_token()?;
    let (endpoint, calls) = BridgeEndpoint::bind(&dir.path().join("b.sock"), token.clone(), Offer::standard(Some(Asked::Owner), false))?;
    std::thread::spawn(move || calls.serve(|_| Response::ok("Weeks start on Monday.")));
    make_tools_dir(&dir.path().join("bin"), &locate_bridge()?)?;
    let workspace = dir.path().join("ws");
    std::fs::create_dir(&workspace)?;
    std::fs::write(workspace.join("driver.py"), DRIVER)?;
    let mut spec = CommandSpec::argv(vec!["python3".into(), "driver.py".into(), runs.to_string()], &workspace)
        .read_only(dir.path().join("bin"), SANDBOX_BIN_DIR)
        .read_only(endpoint.path(), SANDBOX_SOCKET)
        .env("PATH", format!("{SANDBOX_BIN_DIR}:/usr/bin:/bin"))
        .env(SOCKET_ENV, SANDBOX_SOCKET)
        .env(TOKEN_ENV, &token);
    spec.limits.timeout = std::time::Duration::from_secs(600);
    let output = run(&spec, &HostView::system()?, &SandboxConfig::default())?;
    print!("{}", output.stdout.text());
    eprint!("{}", output.stderr.text());
    if !output.success() {
        return Err(format!("the driver failed: {:?}", output.exit_code).into());
    }
    Ok(())
}
