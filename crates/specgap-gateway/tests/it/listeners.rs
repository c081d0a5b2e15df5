//! Listeners: a Unix socket, the base URLs handed to CLIs, and a loopback listener inside
//! another network namespace that only processes of that namespace reach.

use std::io::{Read as _, Write as _};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;

use specgap_gateway::mock::replies::{self, Tokens};
use specgap_gateway::{AdmitAll, Outcome, Protocol, bind_loopback_in_path, serve_tcp, serve_unix};

use crate::support::*;

fn unix_request(path: &Path, request: &str) -> (u16, String) {
    let mut stream = UnixStream::connect(path).unwrap();
    stream.set_read_timeout(Some(PATIENCE)).unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response);
    (response.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0), response)
}

#[test]
fn a_unix_socket_listener_serves_host_localhost_only() {
    let mock =
        specgap_gateway::mock::MockUpstream::start([replies::openai_chat(MODEL, "over the socket", &[], Tokens::default())]).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("gateway.sock");
    let gateway = serve_unix(UnixListener::bind(&socket).unwrap(), config(&mock, Protocol::OpenaiChat), Arc::new(AdmitAll)).unwrap();
    assert_eq!(gateway.base_url(Protocol::OpenaiChat).as_deref(), Some("http://localhost/v1"));
    let body = request(Protocol::OpenaiChat, false, MODEL).1.to_string();
    let post = |host: &str| {
        format!(
            "POST /v1/chat/completions HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {TOKEN}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
    };
    let (status, text) = unix_request(&socket, &post("localhost"));
    assert_eq!(status, 200, "{text}");
    assert!(text.contains("over the socket"));
    assert_eq!(unix_request(&socket, &post("127.0.0.1:80")).0, 400);
    assert_eq!(mock.request_count(), 1);
    assert_eq!(gateway.shutdown().unwrap().exchanges, 2);
}

#[test]
fn base_urls_follow_each_protocols_sdk_convention() {
    let mock = specgap_gateway::mock::MockUpstream::start([]).unwrap();
    let mut config = config(&mock, Protocol::OpenaiChat);
    let anthropic = specgap_gateway::Upstream::new(Protocol::AnthropicMessages, mock.url(), None, vec![MODEL.into()]);
    config.upstreams.push(anthropic);
    let gateway = serve_tcp(std::net::TcpListener::bind("127.0.0.1:0").unwrap(), config, Arc::new(AdmitAll)).unwrap();
    let specgap_gateway::ListenAddr::Tcp(addr) = gateway.addr().clone() else { panic!() };
    assert_eq!(gateway.base_url(Protocol::OpenaiChat), Some(format!("http://{addr}/v1")));
    assert_eq!(gateway.base_url(Protocol::AnthropicMessages), Some(format!("http://{addr}")));
    assert_eq!(gateway.base_url(Protocol::Gemini), None);
    assert_eq!(gateway.token().expose(), TOKEN);
}

/// Whether the programs this test drives exist; with `SPECGAP_REQUIRE_EXTERNAL=1` their
/// absence fails the test instead of skipping it.
pub(crate) fn have_namespace_tools() -> bool {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let tools = ["unshare", "nsenter", "curl", "ip", "bwrap"]
        .iter()
        .all(|t| Command::new("sh").arg("-c").arg(format!("command -v {t}")).stdout(Stdio::null()).status().is_ok_and(|s| s.success()));
    if root && tools {
        return true;
    }
    let why = format!("needs root and unshare, nsenter, curl, ip, bwrap (root: {root}, tools: {tools})");
    if std::env::var("SPECGAP_REQUIRE_EXTERNAL").is_ok_and(|v| v == "1") {
        panic!("SPECGAP_REQUIRE_EXTERNAL=1: {why}");
    }
    eprintln!("skipping the network-namespace test: {why}");
    false
}

/// A process alone in a new network namespace (loopback up), killed when dropped.
pub(crate) struct Namespace(std::process::Child);

impl Namespace {
    pub(crate) fn new() -> Self {
        let mut child = Command::new("unshare")
            .args(["--net", "--", "sh", "-c", "ip link set lo up && echo ready && exec sleep 600"])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut ready = [0u8; 6];
        child.stdout.take().unwrap().read_exact(&mut ready).unwrap();
        assert_eq!(&ready, b"ready\n");
        Namespace(child)
    }

    pub(crate) fn path(&self) -> String {
        format!("/proc/{}/ns/net", self.0.id())
    }

    /// Runs `curl` inside the namespace (through a bubblewrap sandbox that shares it, as an
    /// episode's sandbox does) and returns its exit status and output.
    fn curl(&self, url: &str) -> (i32, String) {
        let out = Command::new("nsenter")
            .arg(format!("--net={}", self.path()))
            .args(["bwrap", "--unshare-all", "--share-net", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--die-with-parent"])
            .args(["curl", "-sS", "--max-time", "20", "-H", &format!("Authorization: Bearer {TOKEN}"), url])
            .output()
            .unwrap();
        (out.status.code().unwrap_or(-1), format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)))
    }
}

impl Drop for Namespace {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn a_listener_bound_in_a_namespace_is_reached_from_it_and_from_nowhere_else() {
    if !have_namespace_tools() {
        return;
    }
    let sandbox = Namespace::new();
    let other = Namespace::new();
    let listener = bind_loopback_in_path(Path::new(&sandbox.path())).unwrap();
    let port = listener.local_addr().unwrap().port();
    let recorder = Recorder::new();
    let mock = specgap_gateway::mock::MockUpstream::start([]).unwrap();
    let gateway = serve_tcp(listener, config(&mock, Protocol::OpenaiChat), recorder.clone()).unwrap();
    let url = format!("http://127.0.0.1:{port}/v1/models");

    let (status, output) = sandbox.curl(&url);
    assert_eq!(status, 0, "{output}");
    assert!(output.contains(MODEL), "the sandbox reaches its gateway: {output}");

    // Another sandbox's namespace has nothing on that port.
    let (status, output) = other.curl(&url);
    assert_eq!(status, 7, "curl's 'could not connect' from another namespace: {output}");
    // Nor does the harness's own namespace reach it (whatever else may listen there).
    let from_host =
        Command::new("curl").args(["-sS", "--max-time", "5", "-H", &format!("Authorization: Bearer {TOKEN}"), &url]).output().unwrap();
    assert!(!String::from_utf8_lossy(&from_host.stdout).contains(MODEL));

    let records = recorder.wait(1);
    assert_eq!(records.len(), 1, "only the sandbox's request arrived");
    assert_eq!(records[0].outcome, Outcome::Local);
    assert_eq!(gateway.shutdown().unwrap().exchanges, 1);
}

#[test]
fn binding_in_a_file_that_is_no_namespace_names_it() {
    let error = bind_loopback_in_path(Path::new("/nonexistent/ns/net")).unwrap_err().to_string();
    assert_eq!(error, "cannot bind a loopback listener in network namespace /nonexistent/ns/net");
}
