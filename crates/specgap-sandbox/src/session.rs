//! [`Session`]: one long-lived sandbox that runs an episode's commands one after another
//! (DESIGN §3.2; the decision "One sandbox per episode" in docs/decisions.md).
//!
//! Building a sandbox — new namespaces, about twenty mounts, the seccomp filter, the cgroups —
//! costs several milliseconds of CPU, more than most commands an agent runs. A session builds
//! it on the first command and keeps it for the next ones. Each command still starts from the
//! same state a fresh sandbox would give it, except for `/tmp`, which lives as long as the
//! session, like the workspace.
//!
//! # How a command runs
//! Inside the sandbox a small POSIX `sh` loop, the *command server*, reads requests from a
//! pipe. For each it runs `/bin/sh -c <command>` in the working directory with standard input
//! `/dev/null` and standard output and error on two pipes the session keeps for its whole life;
//! when that shell exits, the server SIGKILLs every other process of the sandbox (`kill -9 -1`
//! in the sandbox's PID namespace), waits until none is left and only then reports
//! `<sequence> <status>` on a status pipe. Nothing a command starts survives it, and by the
//! time the status arrives every byte the command wrote is already in the output pipes, which
//! the harness then reads to the end.
//!
//! # What the harness trusts
//! Nothing but output bytes. The server runs from an execute-only copy of the shell, which
//! makes it non-dumpable, so commands (same uid) cannot open its pipes or memory through
//! `/proc`; they can still kill it. A status line counts only with the request's sequence
//! number, and after it the harness counts the sandbox's processes in its `pids` cgroup and
//! ends the whole sandbox if anything but bubblewrap, its init and the server is left. A command that passes
//! its timeout, a dead server or a protocol violation ends the sandbox as well: the command is
//! reported killed (timed out, when the timeout did it) and the next command gets a fresh
//! sandbox with an empty `/tmp`.

use std::io::Write;
use std::os::fd::{AsRawFd, OwnedFd};
use std::time::{Duration, Instant};

use crate::capture::Capture;
use crate::cgroup::Cgroups;
use crate::error::SandboxError;
use crate::host::HostView;
use crate::netns::Lease;
use crate::reads::{ReadWatch, Reads};
use crate::runner::{self, CommandOutput, CommandSpec, Launched, Program, SandboxConfig};
use crate::server::{self, LaunchedServer, START_TIMEOUT, ServerLaunch};
use crate::shellwords;
use crate::spawn::Spawned;

/// The command server (its fds are `server::FD_REQUESTS` … `FD_STDERR`), on one line so that the shell's messages about a command (`/bin/sh: 1:
/// x: not found`) read as they would under `/bin/sh -c`; `$0` is `/bin/sh` too. A request is
/// `<seq> <mode>\n<n>\n` and `n` lines: with mode `argv`, the command's words, run in a
/// subshell as `"$@"` (the shell execs a program directly, or runs a built-in as `sh -c`
/// would); with mode `sh`, the lines of a shell command for `/bin/sh -c`; with mode `bash`,
/// the lines of a command for `bash -c` (the `bash` tool, [`Shell::Bash`]). The server's own
/// variables are not exported, so programs do not see them; its stderr goes to `/dev/null` so
/// that nothing it prints can block on a pipe nobody reads.
const SERVER: &str = concat!(
    r#"exec 2>/dev/null 3>&- 4>&- 5>&-; echo ready >&7; "#,
    r#"while IFS= read -r head <&6 && IFS= read -r n <&6; do set --; i=0; "#,
    r#"while [ "$i" -lt "$n" ]; do IFS= read -r line <&6 || exit 0; set -- "$@" "$line"; i=$((i + 1)); done; "#,
    r#"if [ "${head#* }" = argv ]; then ( "$@" ) </dev/null >&8 2>&9 6<&- 7>&- 8>&- 9>&-; "#,
    r#"else sh=/bin/sh; if [ "${head#* }" = bash ]; then sh=bash; fi; cmd=$1; shift; for line; do cmd="$cmd"#,
    "\n",
    r#"$line"; done; "$sh" -c "$cmd" </dev/null >&8 2>&9 6<&- 7>&- 8>&- 9>&-; fi; "#,
    r#"rc=$?; kill -9 -1; while kill -0 -1; do :; done; echo "${head% *} $rc" >&7; done"#,
);

/// The shell a command string is run by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shell {
    /// `/bin/sh -c` (POSIX `sh`; dash on Debian).
    Sh,
    /// `bash -c` from the sandbox's `PATH`: the `bash` tool, whose agents write `pushd`, brace
    /// lists, `[[ … ]]` and arrays (seed 001 §4: mini-swe-agent's shell is bash).
    Bash,
}

/// A sandbox kept alive across commands. Create one per episode (per workspace) with
/// [`Session::new`]; the sandbox itself is built by the first [`Session::run_shell`] and
/// killed, with everything in it, when the session is dropped.
///
/// With the sandbox disabled ([`SandboxConfig::enabled`] `false`) every command runs on its
/// own through [`crate::run`], exactly as without a session.
#[derive(Debug)]
pub struct Session {
    template: CommandSpec,
    host: HostView,
    config: SandboxConfig,
    live: Option<Live>,
    seq: u64,
    sandboxes_started: u32,
    /// Whether the last command took the sandbox down with it.
    ended_last: bool,
    /// The files the last command read ([`Session::last_reads`]).
    last_reads: Reads,
}

/// A running sandbox and the harness's ends of its pipes.
#[derive(Debug)]
struct Live {
    child: Spawned,
    /// The pooled network namespace the sandbox lives in, if any.
    lease: Option<Lease>,
    requests: std::fs::File,
    status: OwnedFd,
    stdout: OwnedFd,
    stderr: OwnedFd,
    status_buf: Vec<u8>,
    cgroups: Cgroups,
    /// Processes in the `pids` cgroup with no command running (bubblewrap, its init, the
    /// server); `None` without a `pids` cgroup.
    idle_members: Option<usize>,
    /// The fanotify watch on the sandbox's workspace mount, or why there is none.
    watch: Result<ReadWatch, String>,
}

/// How waiting for a command ended.
enum Ending {
    /// The server reported this exit status.
    Status(i32),
    /// The timeout passed.
    TimedOut,
    /// The server went away (killed, or the sandbox died) or broke the protocol.
    Lost,
}

impl Session {
    /// A session for commands like `template`: its mounts, working directory, environment
    /// and process and memory limits hold for every command; its program, standard input,
    /// timeout and output limit are ignored (each [`Session::run_shell`] gives its own).
    pub fn new(template: CommandSpec, host: HostView, config: SandboxConfig) -> Session {
        let last_reads = Reads::Unmeasured("no command has run".into());
        Session { template, host, config, live: None, seq: 0, sandboxes_started: 0, ended_last: false, last_reads }
    }

    /// The workspace files the last command's processes read, measured by fanotify on the
    /// sandbox's workspace mount ([`crate::reads`]), or why that could not be measured (no
    /// privilege, no sandbox).
    pub fn last_reads(&self) -> &Reads {
        &self.last_reads
    }

    /// Whether the last [`Session::run_shell`] ended its sandbox (a timeout, a killed server,
    /// leftover processes): the next command starts in a fresh one, with an empty `/tmp`.
    pub fn sandbox_ended_by_last_command(&self) -> bool {
        self.ended_last
    }

    /// How many sandboxes this session has built so far: 1 for any number of commands, plus one
    /// for each command that ended its sandbox (timeout, killed server, leftover processes).
    pub fn sandboxes_started(&self) -> u32 {
        self.sandboxes_started
    }

    /// Runs `/bin/sh -c <command>` in the session's sandbox (building it first when there is
    /// none) with at most `timeout` of wall-clock time, keeping `output_bytes` of each of
    /// stdout and stderr (head and tail), and waits for it. A command of plain words runs as
    /// those words without starting a shell for it, which is what the shell would have run.
    ///
    /// # Errors
    /// [`SandboxError::InvalidSpec`] for a command with a NUL byte or an unusable template;
    /// [`SandboxError::BwrapMissing`], [`SandboxError::Setup`] (bubblewrap could not build the
    /// sandbox, with its stderr), [`SandboxError::Spawn`] and [`SandboxError::Io`] otherwise.
    pub fn run_shell(&mut self, command: &str, timeout: Duration, output_bytes: usize) -> Result<CommandOutput, SandboxError> {
        self.run_in(Shell::Sh, command, timeout, output_bytes)
    }

    /// [`Session::run_shell`] with the command run by `shell`: under [`Shell::Bash`] every
    /// command string goes to `bash -c` (even one of plain words, so that bash's built-ins such
    /// as `pushd` are bash's).
    ///
    /// # Errors
    /// As [`Session::run_shell`].
    pub fn run_in(&mut self, shell: Shell, command: &str, timeout: Duration, output_bytes: usize) -> Result<CommandOutput, SandboxError> {
        if !self.config.enabled {
            let mut spec = self.template.clone();
            spec.program = match shell {
                Shell::Sh => Program::Shell(command.to_string()),
                Shell::Bash => Program::Argv(vec!["bash".to_string(), "-c".to_string(), command.to_string()]),
            };
            spec.stdin = Vec::new();
            spec.limits.timeout = timeout;
            spec.limits.output_bytes = output_bytes;
            self.last_reads = Reads::Unmeasured("the sandbox is disabled (--no-sandbox)".into());
            return runner::run(&spec, &self.host, &self.config);
        }
        if command.contains('\0') {
            return Err(SandboxError::InvalidSpec("a command cannot contain a NUL byte".into()));
        }
        let start = Instant::now();
        self.seq += 1;
        let seq = self.seq;
        let request = encode_request(seq, shell, command);
        let live = self.live_sandbox(&request)?;
        let oom_before = live.cgroups.oom_kills();
        let mut stdout = Capture::new(output_bytes);
        let mut stderr = Capture::new(output_bytes);
        let ending = live.wait(seq, start + timeout, &mut stdout, &mut stderr)?;
        let ending = match ending {
            Ending::Status(_) if live.has_leftovers() => {
                tracing::warn!("processes outlived a sandboxed command; ending its sandbox");
                Ending::Lost
            }
            other => other,
        };
        let memory_exceeded = live.cgroups.oom_kills() > oom_before;
        // Before a timed-out sandbox is ended: what was read up to the timeout.
        self.last_reads = Reads::taken_from(&live.watch);
        let exit_code = match ending {
            Ending::Status(code) => Some(code),
            Ending::TimedOut | Ending::Lost => {
                self.end_sandbox(&mut stdout, &mut stderr);
                None
            }
        };
        self.ended_last = exit_code.is_none();
        Ok(CommandOutput {
            exit_code,
            timed_out: matches!(ending, Ending::TimedOut),
            memory_exceeded,
            stdout: stdout.finish(),
            stderr: stderr.finish(),
            duration: start.elapsed(),
            sandboxed: true,
        })
    }

    /// The running sandbox with `request` handed to its server; builds a sandbox when there is
    /// none, and builds a new one when the old one cannot take the request any more.
    fn live_sandbox(&mut self, request: &[u8]) -> Result<&mut Live, SandboxError> {
        let delivered = match self.live.as_mut() {
            Some(live) => live.requests.write_all(request).is_ok(),
            None => false,
        };
        if !delivered {
            if let Some(old) = self.live.take() {
                old.kill();
            }
            let mut live = Live::start(&self.template, &self.host, &self.config)?;
            self.sandboxes_started += 1;
            live.requests.write_all(request)?;
            self.live = Some(live);
        }
        self.live.as_mut().ok_or_else(|| SandboxError::Io(std::io::Error::other("session sandbox vanished")))
    }

    /// Kills the current sandbox and collects what its pipes still hold.
    fn end_sandbox(&mut self, stdout: &mut Capture, stderr: &mut Capture) {
        if let Some(live) = self.live.take() {
            let (out, err) = (live.stdout.try_clone(), live.stderr.try_clone());
            live.kill();
            if let (Ok(out), Ok(err)) = (out, err) {
                drain(&out, stdout);
                drain(&err, stderr);
            }
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        if let Some(live) = self.live.take() {
            live.kill();
        }
    }
}

/// Under [`Shell::Sh`], `<seq> argv\n<n>\n` and the command's `n` words when it is only words
/// ([`shellwords::simple_words`]), else `<seq> sh\n<n>\n` and its `n` lines; under
/// [`Shell::Bash`] always `<seq> bash\n<n>\n` and its lines. Each line ends in `\n`.
fn encode_request(seq: u64, shell: Shell, command: &str) -> Vec<u8> {
    let lines = || command.split('\n').map(str::to_string).collect();
    let (mode, lines) = match (shell, shellwords::simple_words(command)) {
        (Shell::Bash, _) => ("bash", lines()),
        (Shell::Sh, Some(words)) => ("argv", words),
        (Shell::Sh, None) => ("sh", lines()),
    };
    let mut request = format!("{seq} {mode}\n{}\n", lines.len()).into_bytes();
    for line in lines {
        request.extend_from_slice(line.as_bytes());
        request.push(b'\n');
    }
    request
}

/// A read watch on the workspace mount of the sandbox whose bubblewrap (or its init) is
/// `bwrap_pid`.
pub(crate) fn workspace_watch(template: &CommandSpec, bwrap_pid: i32) -> Result<ReadWatch, String> {
    let mount = template.mounts.iter().find(|m| m.sandbox == std::path::Path::new(runner::WORKSPACE_MOUNT));
    let Some(mount) = mount else { return Err("the sandbox has no workspace mount".into()) };
    let pids = crate::agent::descendants(bwrap_pid);
    ReadWatch::on_sandbox(&pids, &mount.sandbox, &mount.host).map_err(|e| e.to_string())
}

impl Live {
    /// Builds the sandbox, starts the server in it and waits for its `ready`.
    fn start(template: &CommandSpec, host: &HostView, config: &SandboxConfig) -> Result<Live, SandboxError> {
        let server = ServerLaunch { script: SERVER, extra_fds: &[], json_status: false, freezer: false };
        let LaunchedServer { launched, requests, status, stdout, stderr } = server::launch(template, host, config, &server)?;
        let Launched { child, cgroups, lease } = launched;
        for fd in [&stdout, &stderr] {
            set_nonblocking(fd)?;
        }
        let live = Live {
            child,
            lease,
            requests,
            status,
            stdout,
            stderr,
            status_buf: Vec::new(),
            cgroups,
            idle_members: None,
            watch: Err("not started".into()),
        };
        let mut live = live.await_ready()?;
        live.idle_members = live.cgroups.member_count();
        // Watched before the first request is written: nothing a command reads is missed.
        live.watch = workspace_watch(template, live.child.id());
        Ok(live)
    }

    /// Waits for the server's `ready` line; a sandbox that dies first is a setup failure.
    fn await_ready(mut self) -> Result<Live, SandboxError> {
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            if let Some(line) = take_line(&mut self.status_buf) {
                if line == b"ready" {
                    return Ok(self);
                }
                continue;
            }
            let open =
                Instant::now() < deadline && poll_readable(&[&self.status], deadline) && read_into(&self.status, &mut self.status_buf);
            if !open {
                return Err(self.setup_failure());
            }
        }
    }

    /// Kills the sandbox and returns why it did not start, from bubblewrap's stderr.
    fn setup_failure(mut self) -> SandboxError {
        self.child.kill_group();
        let status = self.child.wait().ok();
        // Whatever bubblewrap started dies with it (--die-with-parent) or here, so the stderr
        // pipe reaches its end.
        self.release();
        let mut stderr = Vec::new();
        if let Some(mut pipe) = self.child.stderr.take() {
            let _ = std::io::Read::read_to_end(&mut pipe, &mut stderr);
        }
        SandboxError::Setup {
            status: status.and_then(|s| s.code()).map_or_else(|| "killed".to_string(), |c| c.to_string()),
            stderr: String::from_utf8_lossy(&stderr).trim().to_string(),
        }
    }

    /// Reads the command's output until the server reports `seq`'s status, the deadline
    /// passes or the server goes away; then reads what is left in the output pipes.
    fn wait(&mut self, seq: u64, deadline: Instant, stdout: &mut Capture, stderr: &mut Capture) -> Result<Ending, SandboxError> {
        let prefix = format!("{seq} ");
        loop {
            while let Some(line) = take_line(&mut self.status_buf) {
                let Some(code) = line.strip_prefix(prefix.as_bytes()) else { continue };
                let Some(code) = std::str::from_utf8(code).ok().and_then(|c| c.parse::<i32>().ok()) else {
                    return Ok(Ending::Lost);
                };
                drain(&self.stdout, stdout);
                drain(&self.stderr, stderr);
                return Ok(Ending::Status(code));
            }
            if Instant::now() >= deadline {
                return Ok(Ending::TimedOut);
            }
            poll_readable(&[&self.status, &self.stdout, &self.stderr], deadline);
            drain(&self.stdout, stdout);
            drain(&self.stderr, stderr);
            if !read_into(&self.status, &mut self.status_buf) {
                return Ok(Ending::Lost);
            }
        }
    }

    /// Whether processes other than the idle ones are left in the sandbox's `pids` cgroup.
    fn has_leftovers(&self) -> bool {
        match (self.idle_members, self.cgroups.member_count()) {
            (Some(idle), Some(now)) => now > idle,
            _ => false,
        }
    }

    /// Kills bubblewrap and everything in the sandbox, and reaps bubblewrap.
    fn kill(mut self) {
        self.child.kill_group();
        // --die-with-parent takes the sandbox down with bubblewrap; the cgroups catch anything
        // still on its way out.
        self.release();
        let _ = self.child.wait();
    }

    /// Kills what is left in the cgroups and, once they are empty, returns the network
    /// namespace to the pool.
    fn release(&mut self) {
        if self.cgroups.kill_and_remove()
            && let Some(lease) = self.lease.take()
        {
            lease.give_back();
        }
    }
}

/// Removes and returns the first complete line of `buf` (without its `\n`).
pub(crate) fn take_line(buf: &mut Vec<u8>) -> Option<Vec<u8>> {
    let end = buf.iter().position(|&b| b == b'\n')?;
    let mut line: Vec<u8> = buf.drain(..=end).collect();
    line.pop();
    Some(line)
}

/// Appends what `fd` holds now to `buf`; `false` once the writers are gone (end of file) or
/// the read fails.
pub(crate) fn read_into(fd: &OwnedFd, buf: &mut Vec<u8>) -> bool {
    let mut chunk = [0u8; 4096];
    loop {
        // SAFETY: read(2) into a stack buffer of the given length on an fd we own.
        let n = unsafe { libc::read(fd.as_raw_fd(), chunk.as_mut_ptr().cast(), chunk.len()) };
        match n {
            0 => return false,
            n if n > 0 => buf.extend_from_slice(&chunk[..n as usize]),
            _ => {
                let err = std::io::Error::last_os_error();
                return match err.kind() {
                    std::io::ErrorKind::WouldBlock => true,
                    std::io::ErrorKind::Interrupted => continue,
                    _ => false,
                };
            }
        }
    }
}

/// Moves everything `fd` holds now into `capture`.
pub(crate) fn drain(fd: &OwnedFd, capture: &mut Capture) {
    let mut chunk = [0u8; 16 * 1024];
    loop {
        // SAFETY: read(2) into a stack buffer of the given length on an fd we own.
        let n = unsafe { libc::read(fd.as_raw_fd(), chunk.as_mut_ptr().cast(), chunk.len()) };
        if n > 0 {
            capture.push(&chunk[..n as usize]);
            continue;
        }
        if n < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
            continue;
        }
        return;
    }
}

/// Waits until one of `fds` is readable (or closed) or `deadline` passes; `false` on timeout.
pub(crate) fn poll_readable(fds: &[&OwnedFd], deadline: Instant) -> bool {
    let mut polled: Vec<libc::pollfd> =
        fds.iter().map(|fd| libc::pollfd { fd: fd.as_raw_fd(), events: libc::POLLIN, revents: 0 }).collect();
    let left = deadline.saturating_duration_since(Instant::now());
    let timeout_ms = left.as_millis().clamp(1, i32::MAX as u128) as libc::c_int;
    // SAFETY: poll(2) over a vector of pollfd structs we own, with its exact length.
    let ready = unsafe { libc::poll(polled.as_mut_ptr(), polled.len() as libc::nfds_t, timeout_ms) };
    ready > 0
}

pub(crate) fn set_nonblocking(fd: &OwnedFd) -> Result<(), SandboxError> {
    // SAFETY: fcntl(2) flag calls on an fd we own.
    let ok = unsafe {
        let flags = libc::fcntl(fd.as_raw_fd(), libc::F_GETFL);
        flags >= 0 && libc::fcntl(fd.as_raw_fd(), libc::F_SETFL, flags | libc::O_NONBLOCK) == 0
    };
    if ok { Ok(()) } else { Err(std::io::Error::last_os_error().into()) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_carry_the_mode_the_line_count_and_every_line() {
        assert_eq!(encode_request(7, Shell::Sh, "ls -l 'a b'"), b"7 argv\n3\nls\n-l\na b\n");
        assert_eq!(encode_request(9, Shell::Bash, "pushd src"), b"9 bash\n1\npushd src\n", "bash built-ins are bash's");
        assert_eq!(encode_request(8, Shell::Sh, "a\n\\b\n"), b"8 sh\n3\na\n\\b\n\n");
    }

    #[test]
    fn lines_are_taken_one_at_a_time() {
        let mut buf = b"ready\n3 0\n4".to_vec();
        assert_eq!(take_line(&mut buf).as_deref(), Some(&b"ready"[..]));
        assert_eq!(take_line(&mut buf).as_deref(), Some(&b"3 0"[..]));
        assert_eq!(take_line(&mut buf), None);
        assert_eq!(buf, b"4");
    }
}
