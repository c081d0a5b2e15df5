//! The network tripwire of `cli:` episodes (issue 15): an agent that looks names up and
//! connects elsewhere than its gateway has each attempt recorded exactly, in order, and gets
//! nothing back; an agent that does not touch the network leaves no attempt. Both fail when
//! the tripwire could not be armed.

use specgap_engine::condition::BudgetFlags;
use specgap_gateway::mock::MockUpstream;
use specgap_protocol::event::EventKind;
use specgap_protocol::run::EndReason;

use crate::cli_support::*;

const SPEC: &str = "cli:command=python3 cli-agent.py";

/// A lookup with `getent`, a TLS connection to a vendor's API by name, and an HTTP request
/// to an address no lookup gave, on a trapped port.
const CALL_HOME: &str = r#"getent hosts api.anthropic.com > net-getent.txt; echo "status $?" >> net-getent.txt
cat > /tmp/call-home.py <<'EOF'
import socket, ssl
c = socket.create_connection(("api.openai.com", 443), timeout=10)
try:
    ssl.create_default_context().wrap_socket(c, server_hostname="api.openai.com")
    print("tls made")
except (ssl.SSLError, OSError):
    print("tls failed")
c = socket.create_connection(("198.51.100.7", 8080), timeout=10)
c.sendall(b"POST /v1/events HTTP/1.1\r\nHost: telemetry.example.com\r\nContent-Length: 0\r\n\r\n")
print("http got", len(c.recv(100)), "bytes")
EOF
python3 /tmp/call-home.py > net-python.txt 2>&1"#;

#[test]
fn every_attempt_of_a_cli_agent_to_call_home_is_recorded_and_gets_nothing_back() {
    let mock = MockUpstream::start([bash(1, CALL_HOME, false), done(2, "Called home.", false)]).unwrap();
    let config = command_config(&mock, false);
    let run = run_cli(example("interval-tree"), "blind", "clean", SPEC, &config, &mock, BudgetFlags::default());
    assert_eq!(run.detail.episode.end_reason, Some(EndReason::AgentExit));
    let diff = run.diff(1);
    assert!(diff.contains("+127.0.0.2       api.anthropic.com\n+status 0\n"), "the name resolved to the tripwire: {diff}");
    assert!(diff.contains("+tls failed\n+http got 0 bytes\n"), "the connections got nothing back: {diff}");
    let (attempts, tripwire) = network_record(&run.events);
    assert_eq!(
        attempts,
        [
            // getent asks for IPv6 first, then IPv4; Python's getaddrinfo asks for both at once.
            "dns AAAA api.anthropic.com",
            "dns A api.anthropic.com",
            "dns A api.openai.com",
            "dns AAAA api.openai.com",
            "tcp 127.0.0.2:443 tls api.openai.com",
            "tcp 198.51.100.7:8080 http telemetry.example.com",
        ]
    );
    assert_eq!(tripwire, (true, 6, String::new()));
    // Issue 29 item 1: each attempt is written when the turn after it comes (the bash call ran
    // between the first and the second model exchange), stamped with the moment it arrived —
    // not all at the end with the end's time. Only the summary waits for the end.
    let position =
        |want: fn(&EventKind) -> bool| run.events.iter().enumerate().filter(|(_, e)| want(&e.kind)).map(|(i, _)| i).collect::<Vec<_>>();
    let exchanges = position(|k| matches!(k, EventKind::ModelExchange { .. }));
    let attempts_at = position(|k| matches!(k, EventKind::NetworkAttempt { .. }));
    assert_eq!(exchanges.len(), 2, "{:?}", run.events);
    assert_eq!(attempts_at.len(), 6);
    assert!(attempts_at.iter().all(|&i| exchanges[0] < i && i < exchanges[1]), "attempts at {attempts_at:?}, exchanges at {exchanges:?}");
    let end_ms = run.events.last().unwrap().elapsed_ms;
    for &i in &attempts_at {
        assert!(run.events[i].elapsed_ms <= run.events[exchanges[1]].elapsed_ms, "attempt {i} stamped after the exchange that followed it");
        assert!(run.events[i].elapsed_ms >= run.events[i - 1].elapsed_ms, "elapsed_ms keeps the order of seq");
    }
    assert!(run.events[attempts_at[0]].elapsed_ms < end_ms);
    let last_two: Vec<&EventKind> = run.events.iter().rev().take(2).map(|e| &e.kind).collect();
    assert!(matches!(last_two[0], EventKind::End { .. }) && matches!(last_two[1], EventKind::NetworkTripwire { .. }), "{last_two:?}");
    assert_eq!(run.requests.len(), 2);
    check_requests(&run.requests);
}

#[test]
fn a_cli_agent_that_does_not_touch_the_network_leaves_no_attempt() {
    let mock = MockUpstream::start([bash(1, "ls > files.txt", false), done(2, "Listed.", false)]).unwrap();
    let config = command_config(&mock, false);
    let run = run_cli(example("interval-tree"), "blind", "clean", SPEC, &config, &mock, BudgetFlags::default());
    assert_eq!(run.detail.episode.end_reason, Some(EndReason::AgentExit));
    assert_no_network_attempt(&run.events);
}

/// The attempts are kept when the episode ends in an error (here its evaluator fails at the
/// automatic submission): they are written before the `error` event, not lost with `end`.
#[test]
fn network_attempts_are_kept_when_the_episode_ends_in_an_evaluation_error() {
    let package = tempfile::tempdir().unwrap();
    let source = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/tasks/interval-tree");
    let copied = package.path().join("interval-tree");
    let status = std::process::Command::new("cp").arg("-a").arg(&source).arg(&copied).status().unwrap();
    assert!(status.success());
    let manifest = std::fs::read_to_string(copied.join("task.toml")).unwrap();
    let broken = manifest.replace("command = \"python3 evaluate.py\"", "command = \"exit 7\"");
    assert_ne!(broken, manifest, "the evaluator command was replaced");
    std::fs::write(copied.join("task.toml"), broken).unwrap();
    let task = specgap_task::load(&copied).unwrap();
    let script = "getent hosts api.anthropic.com > net-getent.txt";
    let mock = MockUpstream::start([bash(1, script, false), done(2, "Looked it up.", false)]).unwrap();
    let config = command_config(&mock, false);
    let run = run_cli(task, "blind", "clean", SPEC, &config, &mock, BudgetFlags::default());
    assert_eq!(run.detail.episode.end_reason, Some(EndReason::EvaluationError), "{:?}", run.detail.episode);
    let (attempts, tripwire) = network_record(&run.events);
    assert_eq!(attempts, ["dns AAAA api.anthropic.com", "dns A api.anthropic.com"]);
    assert_eq!(tripwire, (true, 2, String::new()));
    let kinds: Vec<&EventKind> = run.events.iter().rev().take(3).map(|e| &e.kind).collect();
    assert!(
        matches!(kinds[0], EventKind::End { .. })
            && matches!(kinds[1], EventKind::Error { .. })
            && matches!(kinds[2], EventKind::NetworkTripwire { .. }),
        "{kinds:?}"
    );
}
