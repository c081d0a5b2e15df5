//! DESIGN §3.2: the bubblewrap runner. Every escape attempt here must fail.

use std::time::Duration;

use specgap_protocol::package::Environment;
use specgap_sandbox::{CommandSpec, HostView, Limits, SandboxConfig, SandboxError, run};

use crate::support::{
    SECRET, assert_cut_seq_output, assert_never_connected, host_listener_and_probe, package, processes_with, sandbox, sh, system_host,
    write_tree,
};

/// Asserts the command failed and its output does not contain the secret.
fn assert_denied(ws: &std::path::Path, command: &str) {
    let out = sh(ws, command);
    assert_ne!(out.exit_code, Some(0), "`{command}` succeeded: {}{}", out.stdout.text(), out.stderr.text());
    assert!(!out.stdout.text().contains(SECRET) && !out.stderr.text().contains(SECRET), "`{command}` leaked the secret");
}

#[test]
fn runs_as_uid_1000_in_the_workspace_with_a_clean_environment() {
    let pkg = package();
    let out = sh(&pkg.workspace, "id -u; id -g; pwd; cat notes.txt; hostname; env | cut -d= -f1 | sort | tr '\\n' ' '");
    assert_eq!(out.exit_code, Some(0), "{}", out.stderr.text());
    assert_eq!(out.stdout.text(), "1000\n1000\n/workspace\npublic notes\nspecgap\nHOME LANG LOGNAME PATH PWD TERM TMPDIR USER ");
    assert!(out.sandboxed);
}

#[test]
fn environment_and_spec_env_are_applied_in_order() {
    let pkg = package();
    let env =
        Environment { env: [("A".to_string(), "task".to_string()), ("B".to_string(), "task".to_string())].into(), ..Default::default() };
    let host = HostView::resolve(&env).unwrap();
    let spec = CommandSpec::shell("echo $A $B", &pkg.workspace).env("B", "spec");
    let out = run(&spec, &host, &sandbox()).unwrap();
    assert_eq!(out.stdout.text(), "task spec\n");
}

#[test]
fn private_files_next_to_the_workspace_are_unreachable() {
    let pkg = package();
    let root = pkg.dir.path().display().to_string();
    let ws = &pkg.workspace;
    assert_denied(ws, &format!("cat {root}/requirements.toml"));
    assert_denied(ws, &format!("cat {root}/evaluator/expected-7f3a9d.txt"));
    assert_denied(ws, "cat ../requirements.toml");
    assert_denied(ws, "cat ../evaluator/expected-7f3a9d.txt");
    assert_denied(ws, &format!("cat /proc/self/root{root}/requirements.toml"));
    assert_denied(ws, "cat /proc/1/cwd/../requirements.toml");
    assert_denied(ws, &format!("cat /proc/1/root{root}/solutions/gold/answer-7f3a9d.txt"));
    assert_denied(ws, &format!("ln -s {root}/requirements.toml leak && cat leak"));
    assert_denied(ws, "ln -s ../requirements.toml leak2 && cat leak2");
    assert_denied(ws, &format!("ln {root}/requirements.toml hard && cat hard"));
    // Searching the whole file system finds none of the private files.
    let out = sh(
        ws,
        "find / \\( -path /proc -o -path /sys -o -path /usr \\) -prune -o -name '*7f3a9d*' -print 2>/dev/null; find / -name requirements.toml 2>/dev/null; echo done",
    );
    assert_eq!(out.stdout.text(), "done\n");
    // The host's own /etc is not there beyond the loader cache and a few harmless entries
    // (and the session's execute-only shell, which nobody inside can read).
    let out = sh(ws, "ls /etc | tr '\\n' ' '; cat /etc/specgap-server-sh >/dev/null 2>&1 || echo unreadable");
    assert_eq!(out.stdout.text(), "alternatives group hosts ld.so.cache localtime nsswitch.conf passwd specgap-server-sh unreadable\n");
}

#[test]
fn writes_outside_the_workspace_fail_or_stay_private() {
    let pkg = package();
    let ws = &pkg.workspace;
    for target in ["/usr/specgap-x", "/etc/specgap-x", "/specgap-x", "../specgap-x", "/proc/specgap-x", "/run/specgap-x", "/home/x"] {
        let out = sh(ws, &format!("echo x > {target}"));
        assert_ne!(out.exit_code, Some(0), "wrote {target}");
    }
    assert!(!pkg.dir.path().join("specgap-x").exists());
    // /tmp is private: a file written there is not on the host.
    let name = format!("specgap-private-tmp-{}", std::process::id());
    let out = sh(ws, &format!("echo x > /tmp/{name} && cat /tmp/{name}"));
    assert_eq!(out.stdout.text(), "x\n");
    assert!(!std::path::Path::new("/tmp").join(&name).exists());
    // The workspace itself is writable.
    let out = sh(ws, "echo made > made.txt");
    assert_eq!(out.exit_code, Some(0));
    assert_eq!(std::fs::read_to_string(ws.join("made.txt")).unwrap(), "made\n");
}

#[test]
fn privileged_operations_fail() {
    let pkg = package();
    let ws = &pkg.workspace;
    assert_denied(ws, "mount -t tmpfs none /tmp");
    assert_denied(ws, "mknod /tmp/null c 1 3");
    assert_denied(ws, "unshare -r true");
    assert_denied(ws, "unshare -rm mount -t tmpfs none /tmp");
    assert_denied(ws, "head -c 16 /proc/1/mem");
    assert_denied(ws, "grep -q Cap /proc/1/status && grep CapEff /proc/self/status | grep -v 0000000000000000");
    // ptrace of another process (bubblewrap's init, pid 1) and of one's own child.
    let probe = "import ctypes, os\n\
libc = ctypes.CDLL(None, use_errno=True)\n\
child = os.fork()\n\
if child == 0:\n    import time; time.sleep(30); os._exit(0)\n\
r1 = libc.ptrace(16, 1, 0, 0); e1 = ctypes.get_errno()\n\
r2 = libc.ptrace(16, child, 0, 0); e2 = ctypes.get_errno()\n\
os.kill(child, 9)\n\
print(r1, e1, r2, e2)\n";
    let out = sh(ws, &format!("/usr/bin/python3 -c '{probe}'"));
    assert_eq!(out.stdout.text(), "-1 1 -1 1\n", "{}", out.stderr.text());
}

#[test]
fn network_is_unreachable() {
    let (listener, probe) = host_listener_and_probe();
    let pkg = package();
    let out = sh(&pkg.workspace, &format!("{probe}; ip -o link 2>/dev/null | wc -l; ls /sys/class/net 2>/dev/null | tr '\\n' ' '"));
    assert!(out.stdout.text().starts_with("ConnectionRefusedError\n"), "{}{}", out.stdout.text(), out.stderr.text());
    assert_never_connected(&listener);
}

#[test]
fn timeout_kills_the_whole_tree() {
    let pkg = package();
    let spec = CommandSpec::shell("(sleep 3; echo survived > late.txt) & sleep 918273 & echo started; sleep 1000", &pkg.workspace)
        .timeout(Duration::from_secs(2));
    let out = run(&spec, &system_host(), &sandbox()).unwrap();
    assert!(out.timed_out);
    assert_eq!(out.exit_code, None);
    assert_eq!(out.stdout.text(), "started\n");
    assert_eq!(processes_with("918273"), Vec::<u32>::new());
    // Give a survivor time to write its marker (1 s past its own sleep).
    std::thread::sleep(Duration::from_secs(2));
    assert!(!pkg.workspace.join("late.txt").exists(), "a background child survived the timeout");
}

#[test]
fn timeout_kills_the_whole_tree_without_cgroup_limits() {
    let pkg = package();
    let mut spec = CommandSpec::shell("sleep 918277 >/dev/null 2>&1 & sleep 1000", &pkg.workspace).timeout(Duration::from_secs(1));
    spec.limits.max_processes = None;
    spec.limits.memory_bytes = None;
    let out = run(&spec, &system_host(), &sandbox()).unwrap();
    assert!(out.timed_out);
    assert_eq!(processes_with("918277"), Vec::<u32>::new());
}

#[test]
fn background_children_end_with_the_command() {
    let pkg = package();
    let out = sh(&pkg.workspace, "sleep 918274 & (sleep 2; echo survived > late2.txt) & echo done");
    assert_eq!(out.exit_code, Some(0));
    assert_eq!(out.stdout.text(), "done\n");
    assert_eq!(processes_with("918274"), Vec::<u32>::new());
    std::thread::sleep(Duration::from_secs(3));
    assert!(!pkg.workspace.join("late2.txt").exists());
}

#[test]
fn process_limit_bounds_forks() {
    let pkg = package();
    // Forks until refused; every child sleeps, so all count against pids.max at once.
    let probe = "import os, time\n\
ok = 0\n\
for i in range(200):\n    try:\n        pid = os.fork()\n    except OSError:\n        break\n    if pid == 0:\n        time.sleep(30); os._exit(0)\n    ok += 1\n\
print(ok)\n";
    let mut spec = CommandSpec::shell(format!("/usr/bin/python3 -c '{probe}'"), &pkg.workspace).timeout(Duration::from_secs(30));
    spec.limits.max_processes = Some(16);
    let out = run(&spec, &system_host(), &sandbox()).unwrap();
    // pids.max = 16 counts bwrap, its init, the shell and python: 12 forks succeed.
    assert_eq!(out.stdout.text(), "12\n", "{}", out.stderr.text());
    assert!(!out.timed_out);
}

#[test]
fn fork_bomb_is_contained() {
    let pkg = package();
    let mut spec = CommandSpec::shell("export BOMB_7f3a9d=1; b() { b | b & }; b; sleep 2", &pkg.workspace).timeout(Duration::from_secs(10));
    spec.limits.max_processes = Some(64);
    let out = run(&spec, &system_host(), &sandbox()).unwrap();
    assert!(!out.timed_out, "the bomb outlived its command");
    // Nothing of the bomb is left on the host, and the host can still start processes.
    assert_eq!(processes_with("BOMB_7f3a9d"), Vec::<u32>::new());
    assert!(std::process::Command::new("true").status().unwrap().success());
}

#[test]
fn memory_limit_kills_the_hog() {
    let pkg = package();
    let mut spec = CommandSpec::shell("/usr/bin/python3 -c 'x = bytearray(512 << 20); print(len(x))'", &pkg.workspace)
        .timeout(Duration::from_secs(30));
    spec.limits.memory_bytes = Some(128 << 20);
    let out = run(&spec, &system_host(), &sandbox()).unwrap();
    assert_ne!(out.exit_code, Some(0));
    assert_eq!(out.stdout.text(), "");
    assert!(out.memory_exceeded);
}

#[test]
fn output_keeps_head_and_tail_with_a_stated_cut() {
    let pkg = package();
    let mut spec = CommandSpec::shell("seq 1 20000; seq 1 5 >&2", &pkg.workspace);
    spec.limits.output_bytes = 1001;
    let out = run(&spec, &system_host(), &sandbox()).unwrap();
    assert_cut_seq_output(&out);
}

#[test]
fn stdin_is_fed_and_argv_programs_run() {
    let pkg = package();
    let spec = CommandSpec::argv(vec!["tr".into(), "a-z".into(), "A-Z".into()], &pkg.workspace).stdin(b"hello".to_vec());
    let out = run(&spec, &system_host(), &sandbox()).unwrap();
    assert_eq!(out.stdout.text(), "HELLO");
    let out = sh(&pkg.workspace, "exit 7");
    assert_eq!(out.exit_code, Some(7));
    let spec = CommandSpec::argv(vec!["no-such-program-7f3a9d".into()], &pkg.workspace);
    let out = run(&spec, &system_host(), &sandbox()).unwrap();
    assert_eq!(out.exit_code, Some(127));
    assert_eq!(out.stderr.text(), "bwrap: execvp no-such-program-7f3a9d: No such file or directory\n");
    let spec = CommandSpec::argv(vec!["/etc/passwd".into()], &pkg.workspace);
    let out = run(&spec, &system_host(), &sandbox()).unwrap();
    assert_eq!(out.exit_code, Some(126));
}

#[test]
fn environment_commands_resolve_shims_to_the_real_interpreter() {
    let env = Environment { commands: vec!["python3".into()], ..Default::default() };
    let host = HostView::resolve(&env).unwrap();
    let host_python =
        std::process::Command::new("python3").args(["-c", "import sys; print(sys.executable, sys.version_info[:2])"]).output().unwrap();
    let expected = String::from_utf8(host_python.stdout).unwrap();
    let pkg = package();
    let spec = CommandSpec::shell("python3 -c 'import sys; print(sys.executable, sys.version_info[:2])'", &pkg.workspace);
    let out = run(&spec, &host, &sandbox()).unwrap();
    assert_eq!(out.stdout.text(), expected, "{}", out.stderr.text());
    // Only the interpreter's prefix is mounted, never the whole version manager.
    for mount in host.read_only_mounts() {
        assert!(!mount.ends_with(".pyenv"), "{}", mount.display());
    }
    let missing = Environment { commands: vec!["no-such-command-7f3a9d".into()], ..Default::default() };
    assert!(matches!(HostView::resolve(&missing), Err(SandboxError::CommandNotFound(name)) if name == "no-such-command-7f3a9d"));
}

#[test]
fn binds_are_read_only() {
    let data = tempfile::tempdir().unwrap();
    write_tree(data.path(), &[("table.csv", "a,b\n")]);
    let env = Environment { binds: vec![data.path().display().to_string()], ..Default::default() };
    let host = HostView::resolve(&env).unwrap();
    let pkg = package();
    let d = data.path().display();
    let out = run(&CommandSpec::shell(format!("cat {d}/table.csv; echo x > {d}/table.csv"), &pkg.workspace), &host, &sandbox()).unwrap();
    assert_eq!(out.stdout.text(), "a,b\n");
    assert_ne!(out.exit_code, Some(0));
    assert_eq!(std::fs::read_to_string(data.path().join("table.csv")).unwrap(), "a,b\n");
    let relative = Environment { binds: vec!["data".into()], ..Default::default() };
    assert!(matches!(HostView::resolve(&relative), Err(SandboxError::BadBind { .. })));
}

#[test]
fn setup_failures_are_errors_not_exit_codes() {
    let pkg = package();
    let mut spec = CommandSpec::shell("true", &pkg.workspace);
    spec.cwd = "/workspace/no-such-dir".into();
    match run(&spec, &system_host(), &sandbox()) {
        Err(SandboxError::Setup { stderr, .. }) => assert!(stderr.starts_with("bwrap:"), "{stderr}"),
        other => panic!("expected a setup error, got {other:?}"),
    }
}

#[test]
fn disabled_sandbox_runs_on_the_host() {
    let pkg = package();
    let config = SandboxConfig { enabled: false };
    let spec = CommandSpec::shell("pwd; cat notes.txt", &pkg.workspace);
    let out = run(&spec, &system_host(), &config).unwrap();
    assert!(!out.sandboxed);
    assert_eq!(out.stdout.text(), format!("{}\npublic notes\n", pkg.workspace.display()));
    let mut spec = CommandSpec::shell("sleep 918275 & sleep 1000", &pkg.workspace);
    spec.limits = Limits { timeout: Duration::from_millis(300), ..Limits::default() };
    let out = run(&spec, &system_host(), &config).unwrap();
    assert!(out.timed_out);
    assert_eq!(processes_with("918275"), Vec::<u32>::new());
}

#[test]
fn nothing_leaks_through_inherited_file_descriptors() {
    let pkg = package();
    let _open = std::fs::File::open(pkg.dir.path().join("requirements.toml")).unwrap();
    let out = sh(&pkg.workspace, "ls /proc/self/fd | tr '\\n' ' '");
    // 0-2, and 3 for the directory ls itself opens.
    assert_eq!(out.stdout.text(), "0 1 2 3 ");
    // bubblewrap's arguments (host paths) come through a pipe, not its command line.
    let out = sh(&pkg.workspace, "tr '\\0' ' ' < /proc/1/cmdline");
    let stdout = out.stdout.text();
    let (program, rest) = stdout.split_once(' ').unwrap();
    assert!(program.ends_with("bwrap"), "{program}");
    assert_eq!(rest, "--args 3 -- /bin/sh -c tr '\\0' ' ' < /proc/1/cmdline ");
}
