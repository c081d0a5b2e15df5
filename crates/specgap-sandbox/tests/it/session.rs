//! `Session`: an episode's commands in one long-lived sandbox. Each test checks what a fresh
//! sandbox per command guaranteed still holds (nothing survives a command, no network, no
//! private files), what the session adds (one sandbox, a `/tmp` that lasts), and that nothing
//! a command says about itself can fool the harness.

use std::time::Duration;

use specgap_sandbox::{CommandOutput, CommandSpec, SandboxConfig, SandboxError, Session, Shell};

use crate::support::{
    SECRET, assert_cut_seq_output, assert_never_connected, host_listener_and_probe, package, processes_with, sandbox, system_host,
};

const OUTPUT: usize = 64 << 10;

fn session(workspace: &std::path::Path) -> Session {
    Session::new(CommandSpec::shell("", workspace), system_host(), sandbox())
}

fn run(session: &mut Session, command: &str) -> CommandOutput {
    session.run_shell(command, Duration::from_secs(30), OUTPUT).unwrap()
}

#[test]
fn commands_share_one_sandbox_and_its_tmp() {
    let pkg = package();
    let mut s = session(&pkg.workspace);
    assert_eq!(s.sandboxes_started(), 0, "the sandbox is built by the first command");
    let first = run(&mut s, "id -u; pwd; echo kept > /tmp/note; env | cut -d= -f1 | sort | tr '\\n' ' '");
    assert_eq!(first.exit_code, Some(0), "{}", first.stderr.text());
    assert_eq!(first.stdout.text(), "1000\n/workspace\nHOME LANG LOGNAME PATH PWD TERM TMPDIR USER ");
    assert!(first.sandboxed);
    let second = run(&mut s, "cat /tmp/note; cd /tmp; pwd; exit 3");
    assert_eq!((second.exit_code, second.stdout.text()), (Some(3), "kept\n/tmp\n".to_string()));
    let third = run(&mut s, "pwd; echo to-stderr >&2");
    assert_eq!(
        (third.stdout.text(), third.stderr.text()),
        ("/workspace\n".to_string(), "to-stderr\n".to_string()),
        "each command starts in the workspace"
    );
    assert_eq!(s.sandboxes_started(), 1);
}

#[test]
fn bash_commands_run_in_bash_with_pushd_and_brace_lists_and_sh_commands_in_sh() {
    let pkg = package();
    let mut s = session(&pkg.workspace);
    let bash = |s: &mut Session, command: &str| s.run_in(Shell::Bash, command, Duration::from_secs(30), OUTPUT).unwrap();
    let out =
        bash(&mut s, "mkdir -p d/e && pushd d >/dev/null && echo x{1,2}y && pushd e >/dev/null && dirs -p | wc -l; popd >/dev/null; pwd");
    assert_eq!((out.exit_code, out.stdout.text(), out.stderr.text()), (Some(0), "x1y x2y\n3\n/workspace/d\n".to_string(), String::new()));
    let words = bash(&mut s, "pushd d");
    assert_eq!((words.exit_code, words.stdout.text()), (Some(0), "/workspace/d /workspace\n".to_string()), "plain words are bash's too");
    let lines = bash(&mut s, "if [[ $BASH_VERSION ]]; then\n  arr=(a b c)\n  echo ${#arr[@]}\nfi");
    assert_eq!(lines.stdout.text(), "3\n");
    // The same command under /bin/sh (dash): no brace expansion, no pushd.
    let sh = run(&mut s, "echo x{1,2}y; pushd d");
    assert_eq!(sh.stdout.text(), "x{1,2}y\n");
    assert_eq!(sh.exit_code, Some(127), "{}", sh.stderr.text());
    assert_eq!(s.sandboxes_started(), 1, "one sandbox for both shells");
}

#[test]
fn multi_line_commands_arrive_byte_for_byte() {
    let pkg = package();
    let mut s = session(&pkg.workspace);
    let command = "cat <<'EOF'\n  two leading spaces\ttab\\\n\nback\\slash 'quote' \"dq\" $HOME\nEOF\nprintf '%s|' \"a  b\" ''\n";
    let out = run(&mut s, command);
    assert_eq!(out.stdout.text(), "  two leading spaces\ttab\\\n\nback\\slash 'quote' \"dq\" $HOME\na  b||");
    assert_eq!(out.exit_code, Some(0));
}

#[test]
fn nothing_a_command_starts_outlives_it() {
    let pkg = package();
    let mut s = session(&pkg.workspace);
    let out =
        run(&mut s, "sleep 918301 & echo $! > bg.pid; setsid sh -c 'sleep 918302' & nohup sleep 918303 >/dev/null 2>&1 & echo started");
    assert_eq!(out.stdout.text(), "started\n");
    for needle in ["918301", "918302", "918303"] {
        assert_eq!(processes_with(needle), Vec::<u32>::new(), "sleep {needle} survived its command");
    }
    // Counted with shell builtins only: `ls /proc | grep -c` raced with its own pipeline (grep is
    // seen or not depending on which child starts first) and failed under load. Zombies are left
    // out: a process already killed but not yet reaped by bubblewrap's init holds nothing.
    let count_live = "n=0; for p in /proc/[0-9]*; do while read -r key value rest; do \
        if [ \"$key\" = State: ]; then [ \"$value\" = Z ] || n=$((n+1)); break; fi; done < $p/status; done; echo $n";
    let check = run(&mut s, &format!("[ -d /proc/$(cat bg.pid) ] && echo alive || echo gone; {count_live}"));
    // Left: bubblewrap's init, the command server and this command's shell.
    assert_eq!(check.stdout.text(), "gone\n3\n");
    assert_eq!(s.sandboxes_started(), 1);
}

#[test]
fn a_timeout_ends_the_sandbox_and_the_next_command_gets_a_fresh_one() {
    let pkg = package();
    let mut s = session(&pkg.workspace);
    run(&mut s, "echo x > /tmp/mark");
    let out = s.run_shell("echo started; sleep 918304 & sleep 1000", Duration::from_secs(1), OUTPUT).unwrap();
    assert!(out.timed_out);
    assert_eq!(out.exit_code, None);
    assert_eq!(out.stdout.text(), "started\n");
    assert_eq!(processes_with("918304"), Vec::<u32>::new());
    assert!(s.sandbox_ended_by_last_command());
    let next = run(&mut s, "ls -A /tmp; echo ok");
    assert_eq!(next.stdout.text(), "ok\n", "a fresh sandbox has an empty /tmp");
    assert!(!s.sandbox_ended_by_last_command());
    assert_eq!(s.sandboxes_started(), 2);
}

#[test]
fn a_command_that_kills_the_server_ends_only_itself() {
    let pkg = package();
    let mut s = session(&pkg.workspace);
    let out = run(&mut s, "echo before; kill -9 $PPID; sleep 5; echo after");
    assert_eq!(out.exit_code, None);
    assert!(!out.timed_out);
    assert_eq!(out.stdout.text(), "before\n");
    let next = run(&mut s, "echo fine");
    assert_eq!((next.exit_code, next.stdout.text()), (Some(0), "fine\n".to_string()));
    assert_eq!(s.sandboxes_started(), 2);
}

#[test]
fn the_command_server_is_out_of_reach() {
    let pkg = package();
    let mut s = session(&pkg.workspace);
    // The server is each command's parent. Its pipes, memory and environment would let a
    // command forge exits or inject commands; it runs non-dumpable, so /proc refuses them.
    let out = run(
        &mut s,
        "opened=0; fds=0; for f in /proc/$PPID/fd/*; do fds=$((fds+1)); \
         { true <\"$f\"; } 2>/dev/null && opened=$((opened+1)); { true >\"$f\"; } 2>/dev/null && opened=$((opened+1)); done; \
         echo \"$opened of $fds\"; for f in mem environ; do cat /proc/$PPID/$f >/dev/null 2>&1 || echo \"$f refused\"; done",
    );
    let stdout = out.stdout.text();
    let (opened, rest) = stdout.split_once(" of ").unwrap();
    let (fds, rest) = rest.split_once('\n').unwrap();
    assert_eq!(opened, "0", "{}", out.stdout.text());
    assert!(fds.parse::<u32>().unwrap() >= 4, "the server holds at least its four pipes: {}", out.stdout.text());
    assert_eq!(rest, "mem refused\nenviron refused\n");
    // A sibling that is not the server (this command's own shell) stays readable, so the
    // refusals above come from non-dumpability, not from /proc being closed altogether.
    let own = run(&mut s, "cat /proc/$$/environ | tr '\\0' '\\n' | grep -c '^PATH='");
    assert_eq!(own.stdout.text(), "1\n");
    assert_eq!(s.sandboxes_started(), 1);
}

#[test]
fn output_keeps_head_and_tail_with_a_stated_cut() {
    let pkg = package();
    let mut s = session(&pkg.workspace);
    let out = s.run_shell("seq 1 20000; seq 1 5 >&2", Duration::from_secs(30), 1001).unwrap();
    assert_cut_seq_output(&out);
    // Nothing of the long output spills into the next command.
    assert_eq!(run(&mut s, "echo next").stdout.text(), "next\n");
}

#[test]
fn network_and_private_files_stay_unreachable() {
    let (listener, probe) = host_listener_and_probe();
    let pkg = package();
    let mut s = session(&pkg.workspace);
    let out = run(&mut s, &probe);
    assert_eq!(out.stdout.text(), "ConnectionRefusedError\n", "{}", out.stderr.text());
    assert_never_connected(&listener);
    let root = pkg.dir.path().display().to_string();
    let out = run(&mut s, &format!("cat ../evaluator/* {root}/evaluator/* {root}/requirements.toml /proc/1/root{root}/requirements.toml"));
    assert_ne!(out.exit_code, Some(0));
    assert!(!out.stdout.text().contains(SECRET) && !out.stderr.text().contains(SECRET));
}

#[test]
fn memory_exceeded_is_told_per_command() {
    let pkg = package();
    let mut template = CommandSpec::shell("", &pkg.workspace);
    template.limits.memory_bytes = Some(128 << 20);
    let mut s = Session::new(template, system_host(), sandbox());
    let hog = run(&mut s, "/usr/bin/python3 -c 'x = bytearray(512 << 20); print(len(x))'");
    assert_ne!(hog.exit_code, Some(0));
    assert!(hog.memory_exceeded);
    let next = run(&mut s, "echo small");
    assert_eq!(next.stdout.text(), "small\n");
    assert!(!next.memory_exceeded);
}

#[test]
fn a_nul_byte_is_refused_before_anything_runs() {
    let pkg = package();
    let mut s = session(&pkg.workspace);
    let err = s.run_shell("echo a\0b", Duration::from_secs(5), OUTPUT).unwrap_err();
    assert!(matches!(err, SandboxError::InvalidSpec(ref m) if m == "a command cannot contain a NUL byte"), "{err}");
    assert_eq!(s.sandboxes_started(), 0);
}

#[test]
fn a_disabled_sandbox_runs_each_command_on_the_host() {
    let pkg = package();
    let mut s = Session::new(CommandSpec::shell("", &pkg.workspace), system_host(), SandboxConfig { enabled: false });
    let out = run(&mut s, "pwd");
    assert_eq!(out.stdout.text(), format!("{}\n", pkg.workspace.display()));
    assert!(!out.sandboxed);
    assert_eq!(s.sandboxes_started(), 0);
}

#[test]
fn plain_word_commands_behave_as_under_sh() {
    let pkg = package();
    let mut s = session(&pkg.workspace);
    // Each pair: a command of plain words (run without a shell) and the same through the shell.
    for (plain, shell) in [
        ("ls", "ls; true"),
        ("cat notes.txt 'no such file'", "cat notes.txt 'no such file'; exit $?"),
        ("nosuchprogram-7f3a9d arg", "nosuchprogram-7f3a9d arg; exit $?"),
        ("echo 'a\\tb' -n", "echo 'a\\tb' -n; exit $?"),
        ("printenv PWD HOME", "printenv PWD HOME; exit $?"),
        ("./notes.txt", "./notes.txt; exit $?"),
    ] {
        let (a, b) = (run(&mut s, plain), run(&mut s, shell));
        assert_eq!((a.exit_code, &a.stdout.text()), (b.exit_code, &b.stdout.text()), "{plain}");
        assert_eq!(a.stderr.text().replace("; exit $?", ""), b.stderr.text(), "{plain}");
    }
    let missing = run(&mut s, "nosuchprogram-7f3a9d");
    assert_eq!((missing.exit_code, missing.stderr.text()), (Some(127), "/bin/sh: 1: nosuchprogram-7f3a9d: not found\n".to_string()));
    assert_eq!(s.sandboxes_started(), 1);
}

#[test]
fn sandboxes_running_at_once_cannot_reach_each_other() {
    let pkg = package();
    let listener = "import socket, time\n\
tcp = socket.socket(); tcp.bind(('127.0.0.1', 0)); tcp.listen(1); tcp.settimeout(3)\n\
unix = socket.socket(socket.AF_UNIX); unix.bind('\\0specgap-7f3a9d'); unix.listen(1)\n\
open('port.txt.tmp', 'w').write(str(tcp.getsockname()[1])); __import__('os').rename('port.txt.tmp', 'port.txt')\n\
try:\n    tcp.accept(); print('accepted')\nexcept OSError:\n    print('nobody came')\n";
    let ws = pkg.workspace.clone();
    let serving = std::thread::spawn(move || {
        let mut a = session(&ws);
        a.run_shell(&format!("/usr/bin/python3 -c \"{listener}\""), Duration::from_secs(30), OUTPUT).unwrap()
    });
    let prober = "import socket, time, os\n\
while not os.path.exists('port.txt'): time.sleep(0.01)\n\
port = int(open('port.txt').read())\n\
for family, address in ((socket.AF_INET, ('127.0.0.1', port)), (socket.AF_UNIX, '\\0specgap-7f3a9d')):\n    s = socket.socket(family)\n    try:\n        s.connect(address); print('connected')\n    except OSError as e:\n        print(type(e).__name__)\n";
    let mut b = session(&pkg.workspace);
    let probe = run(&mut b, &format!("/usr/bin/python3 -c \"{prober}\"; cat /proc/net/dev | tail -n +3 | cut -d: -f1 | tr -d ' '"));
    assert_eq!(probe.stdout.text(), "ConnectionRefusedError\nConnectionRefusedError\nlo\n", "{}", probe.stderr.text());
    let served = serving.join().unwrap();
    assert_eq!(served.stdout.text(), "nobody came\n", "{}", served.stderr.text());
}
