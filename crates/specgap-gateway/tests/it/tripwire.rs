//! The network tripwire in a real network namespace: what a process inside tries is recorded
//! exactly, it gets nothing back but DNS answers, and disarming leaves the namespace as it was.

use std::net::{IpAddr, Ipv4Addr};
use std::path::Path;
use std::process::Command;

use specgap_gateway::{AttemptProtocol, NetworkAttempt, Tripwire};

use crate::listeners::{Namespace, have_namespace_tools};

/// Runs a Python program inside the namespace; returns its standard output.
fn python_in(namespace: &Namespace, program: &str) -> String {
    let out = Command::new("nsenter").arg(format!("--net={}", namespace.path())).args(["python3", "-c", program]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A DNS query for `api.anthropic.com` (A), a TLS handshake naming `api.openai.com` with
/// the address the answer gave, an HTTP request to an address no name gave, a connection to
/// a port without a listener, and a query of another type.
const ATTEMPTS: &str = r#"
import socket, ssl
def query(name, qtype):
    q = b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00"
    q += b"".join(bytes([len(l)]) + l.encode() for l in name.split(".")) + b"\x00" + qtype + b"\x00\x01"
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(20)
    s.sendto(q, ("127.0.0.53", 53))
    return s.recv(512)
answer = query("api.anthropic.com", b"\x00\x01")
address = socket.inet_ntoa(answer[-4:])
print("answer", address)
c = socket.create_connection((address, 443), 20)
try:
    ssl.create_default_context().wrap_socket(c, server_hostname="api.openai.com")
    print("tls made")
except (ssl.SSLError, OSError):
    print("tls failed")
c = socket.create_connection(("203.0.113.5", 80), 20)
c.sendall(b"GET /latest HTTP/1.1\r\nHost: Updates.Example.org\r\n\r\n")
print("http got", repr(c.recv(100)))
try:
    socket.create_connection(("203.0.113.5", 5555), 20)
except OSError as e:
    print("5555 errno", e.errno)
print("aaaa answers", query("registry.npmjs.org", b"\x00\x1c")[7])
"#;

fn dns(name: &str, record_type: &str) -> NetworkAttempt {
    NetworkAttempt {
        protocol: AttemptProtocol::Dns,
        name: Some(name.into()),
        record_type: Some(record_type.into()),
        address: IpAddr::V4(Ipv4Addr::new(127, 0, 0, 53)),
        port: 53,
        sni: None,
        http_host: None,
    }
}

fn tcp(address: [u8; 4], port: u16, sni: Option<&str>, http_host: Option<&str>) -> NetworkAttempt {
    NetworkAttempt {
        protocol: AttemptProtocol::Tcp,
        name: None,
        record_type: None,
        address: IpAddr::V4(address.into()),
        port,
        sni: sni.map(String::from),
        http_host: http_host.map(String::from),
    }
}

#[test]
fn every_attempt_inside_the_namespace_is_recorded_and_answered_with_nothing() {
    if !have_namespace_tools() {
        return;
    }
    let namespace = Namespace::new();
    let tripwire = Tripwire::arm_in_path(Path::new(&namespace.path())).unwrap();
    assert!(tripwire.catches_any_address());
    let output = python_in(&namespace, ATTEMPTS);
    assert_eq!(
        output, "answer 127.0.0.2\ntls failed\nhttp got b''\n5555 errno 111\naaaa answers 0\n",
        "names resolve to the tripwire, connections get nothing, other ports are refused"
    );
    tripwire.disarm();
    assert_eq!(
        tripwire.attempts(),
        vec![
            dns("api.anthropic.com", "A"),
            tcp([127, 0, 0, 2], 443, Some("api.openai.com"), None),
            tcp([203, 0, 113, 5], 80, None, Some("updates.example.org")),
            dns("registry.npmjs.org", "AAAA"),
        ]
    );
}

#[test]
fn a_disarmed_tripwire_leaves_the_namespace_as_it_was() {
    if !have_namespace_tools() {
        return;
    }
    let namespace = Namespace::new();
    let probe = r#"
import socket
for address, port in (("127.0.0.2", 443), ("203.0.113.5", 443)):
    try:
        socket.create_connection((address, port), 20); print("connected")
    except OSError as e:
        print(e.errno)
"#;
    let before = python_in(&namespace, probe);
    assert_eq!(before, "111\n101\n", "loopback refuses, other addresses are unreachable");
    let tripwire = Tripwire::arm_in_path(Path::new(&namespace.path())).unwrap();
    assert_eq!(python_in(&namespace, probe), "connected\nconnected\n");
    tripwire.disarm();
    assert_eq!(python_in(&namespace, probe), before);
    // Armed again in the same namespace (a pooled one, lent to the next sandbox): the ports
    // are free and the route is added anew.
    let again = Tripwire::arm_in_path(Path::new(&namespace.path())).unwrap();
    assert!(again.catches_any_address());
    assert_eq!(tripwire.attempts().len(), 2);
    assert_eq!(again.attempts(), Vec::new());
}

#[test]
fn arming_in_a_file_that_is_no_namespace_names_it() {
    let error = Tripwire::arm_in_path(Path::new("/nonexistent/ns/net")).unwrap_err().to_string();
    assert_eq!(error, "cannot arm the network tripwire in network namespace /nonexistent/ns/net");
}
