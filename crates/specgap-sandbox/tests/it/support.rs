//! Helpers shared by the integration tests.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use specgap_sandbox::{CommandOutput, CommandSpec, HostView, SandboxConfig, run};

/// Writes `files` (path, content) under `root`, creating parents.
pub fn write_tree(root: &Path, files: &[(&str, &str)]) {
    for (path, content) in files {
        let full = root.join(path);
        std::fs::create_dir_all(full.parent().unwrap()).unwrap();
        std::fs::write(&full, content).unwrap();
    }
}

/// Makes `path` executable.
pub fn make_executable(path: &Path) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// A host view with nothing but the system directories.
pub fn system_host() -> HostView {
    HostView::system().unwrap()
}

/// The default (enabled) sandbox.
pub fn sandbox() -> SandboxConfig {
    SandboxConfig::default()
}

/// Runs `command` with `workspace` as /workspace, 30 s timeout.
pub fn sh(workspace: &Path, command: &str) -> CommandOutput {
    let spec = CommandSpec::shell(command, workspace).timeout(Duration::from_secs(30));
    run(&spec, &system_host(), &sandbox()).unwrap()
}

/// A package-like layout on the host: `pkg/workspace` next to private `evaluator/`,
/// `solutions/` and `requirements.toml`, each holding `secret` in its content.
pub struct Package {
    pub dir: tempfile::TempDir,
    pub workspace: PathBuf,
}

/// The secret string planted in every private file.
pub const SECRET: &str = "SECRET-7f3a9d-private";

pub fn package() -> Package {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write_tree(
        root,
        &[
            ("evaluator/expected-7f3a9d.txt", SECRET),
            ("solutions/gold/answer-7f3a9d.txt", SECRET),
            ("requirements.toml", SECRET),
            ("workspace/notes.txt", "public notes\n"),
        ],
    );
    let workspace = root.join("workspace");
    Package { dir, workspace }
}

/// Pids of host processes whose command line contains `needle`.
pub fn processes_with(needle: &str) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else { continue };
        if pid == std::process::id() {
            continue;
        }
        if let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) {
            let text = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            if text.contains(needle) {
                found.push(pid);
            }
        }
    }
    found
}

/// A listener on the host's loopback (non-blocking) and a shell command that tries to connect
/// to it from inside a sandbox, printing `connected` or the Python exception's name.
pub fn host_listener_and_probe() -> (std::net::TcpListener, String) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let probe = format!(
        "import socket\ntry:\n    socket.create_connection(('127.0.0.1', {port}), timeout=5)\n    print('connected')\nexcept OSError as e:\n    print(type(e).__name__)\n"
    );
    (listener, format!("/usr/bin/python3 -c \"{probe}\""))
}

/// Asserts that nothing ever connected to `listener`.
pub fn assert_never_connected(listener: &std::net::TcpListener) {
    assert!(matches!(listener.accept(), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock));
}

/// The output of `seq 1 20000; seq 1 5 >&2` kept to 1001 bytes: head and tail of stdout with
/// the stated cut (the tail starts at its first whole line), stderr whole.
pub fn assert_cut_seq_output(out: &CommandOutput) {
    let full: String = (1..=20000).map(|i| format!("{i}\n")).collect();
    // The capture keeps 500 + 501 bytes; the head ends a line (after 152), the tail's first 3
    // bytes finish a line begun in the cut, so they are cut too.
    let (head, tail) = (&full[..500], &full[full.len() - 498..]);
    assert!(head.ends_with("\n152\n") && tail.starts_with("19918\n"));
    let removed_lines = 20000 - head.matches('\n').count() - tail.matches('\n').count();
    assert_eq!(removed_lines, 19765);
    let marker = specgap_sandbox::cut_marker(full.len() as u64 - 998, removed_lines as u64);
    assert_eq!(marker, "[... 107896 bytes (19765 lines) cut ...]");
    assert_eq!(out.stdout.text(), format!("{head}{marker}\n{tail}"));
    assert!(out.stdout.is_cut());
    assert_eq!((out.stdout.total_bytes(), out.stdout.total_lines()), (full.len() as u64, 20000));
    assert_eq!(out.stderr.text(), "1\n2\n3\n4\n5\n");
    assert!(!out.stderr.is_cut());
}
