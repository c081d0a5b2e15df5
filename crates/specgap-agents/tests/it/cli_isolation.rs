//! Isolation of `cli:` agents (issue 14 items 3, 4 and 5): the real key given to the harness
//! appears nowhere inside the sandbox (any process's environment or command line, any file it
//! can read), in what the gateway hands back, or in the store; the agent reaches nothing but
//! its gateway (what it tries elsewhere ends at the network tripwire, which records it); the
//! gateway refuses CONNECT, absolute URIs, file endpoints and other models
//! without forwarding anything; the evaluator's sandboxes cannot reach the gateway; and a link
//! planted in the agent's home never pulls a host file into the trajectory. The probes run as
//! the agent's own shell commands inside the sandbox; their findings come back in the
//! submitted workspace.

use specgap_engine::condition::BudgetFlags;
use specgap_gateway::mock::MockUpstream;
use specgap_gateway::mock::replies;
use specgap_protocol::event::EventKind;
use specgap_protocol::run::EndReason;

use crate::cli_support::*;

const SPEC: &str = "cli:command=python3 cli-agent.py";

/// Looks for the canary's fixed prefix in every process's environment and command line and in
/// every readable file outside the system directories. The pattern is assembled in a file at
/// run time, so no command line (not even the probe's own grep) holds it. Two controls show
/// the probe would see a leak: a file and a process environment that do hold the prefix.
const CANARY_PROBE: &str = r#"printf '%s%s' sk-can ary- > /tmp/pattern
cp /tmp/pattern /tmp/control.txt; env CONTROL="$(cat /tmp/pattern)" sleep 5 >/dev/null 2>&1 &
sleep 0.2
for f in /proc/[0-9]*/environ /proc/[0-9]*/cmdline; do tr '\0' '\n' < "$f" 2>/dev/null; echo; done | grep -c -f /tmp/pattern > probe-proc.txt
grep -rIl -f /tmp/pattern / --exclude-dir=proc --exclude-dir=sys --exclude-dir=dev --exclude-dir=usr --exclude-dir=.pyenv 2>/dev/null | grep -v -x /tmp/pattern > probe-files.txt
ls /proc | grep -c '^[0-9]' > probe-count.txt; true"#;

/// Tries to connect elsewhere than the gateway, and sends the gateway requests it must refuse.
fn network_probe(mock_port: u16) -> String {
    format!(
        r#"cat > /tmp/probe.py <<'EOF'
import json, os, socket, urllib.parse
base = urllib.parse.urlparse(os.environ["OPENAI_BASE_URL"])
token = os.environ["OPENAI_API_KEY"]
out = {{}}
for name, (host, port) in {{"upstream": ("127.0.0.1", {mock_port}), "internet": ("1.1.1.1", 443), "lan": ("10.0.0.1", 80), "next-port": (base.hostname, base.port + 1)}}.items():
    try:
        s = socket.create_connection((host, port), timeout=3)
        out[name] = f"connected, got {{len(s.recv(100))}} bytes"
        s.close()
    except OSError as error:
        out[name] = "failed"
def raw(request):
    s = socket.create_connection((base.hostname, base.port), timeout=10)
    s.sendall(request.encode())
    data = b""
    while b"\r\n" not in data:
        chunk = s.recv(4096)
        if not chunk:
            break
        data += chunk
    s.close()
    return int(data.split(b" ")[1]) if data else 0
host = f"{{base.hostname}}:{{base.port}}"
auth = f"Authorization: Bearer {{token}}\r\n"
body = json.dumps({{"model": "another-model", "messages": [{{"role": "user", "content": "hi"}}]}})
out["connect"] = raw(f"CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n{{auth}}\r\n")
out["absolute"] = raw(f"POST http://example.com/v1/chat/completions HTTP/1.1\r\nHost: {{host}}\r\n{{auth}}Content-Length: 2\r\n\r\n{{{{}}}}")
out["files"] = raw(f"GET /v1/files HTTP/1.1\r\nHost: {{host}}\r\n{{auth}}\r\n")
out["other-model"] = raw(f"POST /v1/chat/completions HTTP/1.1\r\nHost: {{host}}\r\n{{auth}}Content-Type: application/json\r\nContent-Length: {{len(body)}}\r\n\r\n{{body}}")
print(json.dumps(out, sort_keys=True))
EOF
python3 /tmp/probe.py > probe-net.json"#
    )
}

/// The added lines of `file` in a submission diff.
fn added(diff: &str, file: &str) -> String {
    let Some(start) = diff.find(&format!("+++ b/{file}\n")) else { return String::new() };
    diff[start..]
        .lines()
        .skip(1)
        .take_while(|l| !l.starts_with("diff --git"))
        .filter(|l| l.starts_with('+') && !l.starts_with("+++"))
        .map(|l| &l[1..])
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn the_key_is_nowhere_in_the_sandbox_the_answers_or_the_store_and_nothing_but_the_gateway_is_reachable() {
    let mock = MockUpstream::start([]).unwrap();
    let port = mock.addr().port();
    // An upstream that echoes the key in its answer (as some error pages do).
    mock.push(replies::openai_chat(
        MODEL,
        &format!("Using key {}.", canary_key()),
        &[replies::Call::new("call-1", "bash", serde_json::json!({"command": CANARY_PROBE}))],
        tokens(1),
    ));
    mock.push(bash(2, &network_probe(port), false));
    mock.push(done(3, "Done probing.", false));
    let config = command_config(&mock, false);
    let run = run_cli(example("interval-tree"), "blind", "clean", SPEC, &config, &mock, BudgetFlags::default());
    assert_eq!(run.detail.episode.end_reason, Some(EndReason::AgentExit));
    let diff = run.diff(1);
    assert_eq!(added(&diff, "probe-proc.txt"), "1", "the key's prefix is in no environment or command line but the control's");
    assert_eq!(added(&diff, "probe-files.txt"), "/tmp/control.txt", "the key's prefix is in no readable file but the control");
    let processes: u32 = added(&diff, "probe-count.txt").trim().parse().unwrap();
    assert!(processes >= 4, "the probe saw the agent's processes ({processes})");
    let net: serde_json::Value = serde_json::from_str(&added(&diff, "probe-net.json")).unwrap();
    assert_eq!(
        net,
        serde_json::json!({
            // Outside addresses end at the network tripwire, which sends nothing and records them.
            "upstream": "failed", "internet": "connected, got 0 bytes", "lan": "connected, got 0 bytes", "next-port": "failed",
            "connect": 405, "absolute": 400, "files": 404, "other-model": 403,
        })
    );
    assert_eq!(network_record(&run.events), (vec!["tcp 1.1.1.1:443".to_string(), "tcp 10.0.0.1:80".to_string()], (true, 2, String::new())));
    // Nothing of the refused requests reached the upstream: only the three scripted turns.
    assert_eq!(run.requests.len(), 3);
    check_requests(&run.requests);
    // The echoed key reached the agent redacted.
    let second = String::from_utf8_lossy(&run.requests[1].body).into_owned();
    assert!(second.contains("Using key [redacted]."), "{second}");
    assert!(!second.contains(canary_key()));
    let stored = run.everything_stored();
    let needle = canary_key().as_bytes();
    assert!(!stored.windows(needle.len()).any(|w| w == needle), "the key is in the store");
    assert!(run.events.iter().any(|e| matches!(&e.kind, EventKind::AgentTurn { text: Some(t), .. } if t == "Using key [redacted].")));
}

#[test]
fn the_evaluators_sandboxes_cannot_reach_the_gateway() {
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/gateway-probe");
    let package = specgap_task::load(&fixture).unwrap();
    let write = "python3 -c \"import os, urllib.parse; u = urllib.parse.urlparse(os.environ['OPENAI_BASE_URL']); \
                 open('gateway.txt', 'w').write(f\\\"{u.hostname} {u.port} {os.environ['OPENAI_API_KEY']}\\\")\"";
    let mock = MockUpstream::start([bash(1, write, false), done(2, "Written.", false)]).unwrap();
    let config = command_config(&mock, false);
    let run = run_cli(package, "blind", "clean", SPEC, &config, &mock, BudgetFlags::default());
    assert_eq!(run.detail.episode.end_reason, Some(EndReason::AgentExit));
    let mut tests: Vec<(String, String)> =
        run.detail.tests.iter().map(|t| (t.test.clone(), serde_json::to_value(t.outcome).unwrap().as_str().unwrap().to_string())).collect();
    tests.sort();
    assert_eq!(
        tests,
        [("address-written", "pass"), ("candidate-cannot-reach", "pass"), ("candidate-ran", "pass"), ("evaluator-cannot-reach", "pass")]
            .map(|(a, b)| (a.to_string(), b.to_string()))
    );
}

#[test]
fn a_link_planted_in_the_agents_home_does_not_pull_a_host_file_into_the_trajectory() {
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("host-secret.jsonl");
    let content = "{\"kind\":\"read\",\"path\":\"HOST-ONLY-4f1c9e\",\"via\":\"cat\",\"ok\":true}\n";
    std::fs::write(&secret, content).unwrap();
    let plant = format!("mkdir -p ~/.specgap && ln -sf {} ~/.specgap/actions.jsonl && ls -l ~/.specgap", secret.display());
    let mock = MockUpstream::start([bash(1, &plant, false), done(2, "Planted.", false)]).unwrap();
    let config = command_config(&mock, false);
    let run = run_cli(example("interval-tree"), "blind", "clean", SPEC, &config, &mock, BudgetFlags::default());
    assert_eq!(run.detail.episode.end_reason, Some(EndReason::AgentExit));
    let note = run.events.iter().find_map(|e| match &e.kind {
        EventKind::AgentExit { note, .. } => Some(note.clone()),
        _ => None,
    });
    assert_eq!(
        note.as_deref(),
        Some(".specgap/actions.jsonl in the agent's home is or passes through a symbolic link; it is not followed")
    );
    assert!(!run.events.iter().any(|e| matches!(e.kind, EventKind::Actions { .. })));
    let stored = run.everything_stored();
    assert!(!stored.windows(16).any(|w| w == b"HOST-ONLY-4f1c9e"), "the host file's content reached the store");
}
