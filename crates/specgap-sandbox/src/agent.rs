//! [`AgentSandbox`]: the sandbox an external agent program (a `cli:` agent, issue 14 item 3)
//! lives in for a whole episode.
//!
//! A built-in agent's commands run one at a time through a [`crate::Session`]; an external
//! agent is itself a long-running program that starts its own shells, an MCP server and
//! background jobs. It gets the same sandbox — uid 1000 without capabilities, new PID, IPC,
//! UTS and cgroup namespaces, a network namespace with nothing but loopback, the read-only
//! system view, the seccomp filter, process and memory limits — plus whatever mounts the
//! caller's [`CommandSpec`] template adds (the agent's installation read-only, a private home,
//! the harness tools and the bridge socket).
//!
//! # Shape
//! Inside the sandbox a small `sh` loop, the *agent server*, waits for a request before it
//! runs anything. [`AgentSandbox::start`] builds the sandbox and returns once the server is
//! ready; the caller can then serve something inside the sandbox's network namespace
//! ([`AgentSandbox::network_namespace`]: the model gateway binds its loopback listener there)
//! before it starts the program with [`AgentSandbox::run`]. Its `/etc` differs from other
//! sandboxes' in one way: names resolve through `dns` at [`crate::AGENT_NAMESERVER`], where
//! the episode's network tripwire answers (specgap-gateway `tripwire`); whatever the caller
//! serves inside the namespace is closed by a hook ([`AgentSandbox::before_release`]) once the
//! sandbox's processes are gone, before a pooled namespace goes to another sandbox. When the program exits, the server
//! SIGKILLs every other process of the sandbox (nothing the program started survives it) and
//! reports the status; [`AgentSandbox::wait_exit`] picks it up. The server stays, so the
//! program can be started again in the same sandbox, with the same network namespace, `/tmp`
//! and home (a resumed session).
//!
//! # Stopping and freezing
//! [`AgentSandbox::freeze`] stops every process of the program at once — the cgroup-v1
//! `freezer` group when the controller is there, else SIGSTOP to each process — so that the
//! workspace can be copied while nothing in it runs; [`AgentSandbox::thaw`] lets them go on.
//! [`AgentSandbox::terminate`] ends the program for good: SIGTERM to each of its processes,
//! then, after the grace period, SIGKILL of the whole sandbox; it returns only once no process
//! of the sandbox is left. Dropping the sandbox kills it the same way without the grace.
//!
//! # What is not offered
//! The sandbox cannot be disabled (`--no-sandbox`): an external agent on the host would see
//! the harness's files and network. A standard input other than `/dev/null` is not offered.

use std::io::Write as _;
use std::os::fd::{AsRawFd as _, OwnedFd, RawFd};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::capture::{Capture, Captured};
use crate::cgroup::Cgroups;
use crate::error::SandboxError;
use crate::host::HostView;
use crate::netns::Lease;
use crate::reads::{ReadWatch, Reads};
use crate::runner::{CommandSpec, SandboxConfig, pipe};
use crate::server::{self, LaunchedServer, START_TIMEOUT, ServerLaunch};
use crate::session::{poll_readable, read_into, set_nonblocking, take_line};
use crate::spawn::Spawned;

/// bubblewrap's JSON status fd (see `runner`).
const FD_JSON_STATUS: RawFd = 5;

/// How long an exit report waits for the program's last output to reach its capture.
const OUTPUT_SETTLE: Duration = Duration::from_secs(2);

/// The agent server (its fds are `server::FD_REQUESTS` … `FD_STDERR`). It says `ready <its pid in the namespace>`, then for each request
/// `<seq> sh\n<n>\n` and `n` lines runs the lines as one `/bin/sh -c` command with standard
/// input `/dev/null` and the two output pipes, kills everything else in the sandbox once that
/// shell exits, waits until nothing else is left, and reports `<seq> <status>`.
const SERVER: &str = concat!(
    r#"exec 2>/dev/null 3>&- 4>&- 5>&-; echo "ready $$" >&7; "#,
    r#"while IFS= read -r head <&6 && IFS= read -r n <&6; do set --; i=0; "#,
    r#"while [ "$i" -lt "$n" ]; do IFS= read -r line <&6 || exit 0; set -- "$@" "$line"; i=$((i + 1)); done; "#,
    r#"cmd=$1; shift; for line; do cmd="$cmd"#,
    "\n",
    r#"$line"; done; /bin/sh -c "$cmd" </dev/null >&8 2>&9 6<&- 7>&- 8>&- 9>&-; "#,
    r#"rc=$?; kill -9 -1; while kill -0 -1; do :; done; echo "${head% *} $rc" >&7; done"#,
);

/// How the program ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProgramExit {
    /// The exit status of the program's shell (128 + n after signal n), `None` when the
    /// harness killed the sandbox ([`AgentSandbox::terminate`] after the grace period, or a
    /// sandbox that went away).
    pub status: Option<i32>,
    /// How long it ran.
    pub duration: Duration,
}

/// How the program's processes are stopped while frozen.
#[derive(Debug)]
enum Frozen {
    No,
    /// The `freezer` cgroup is `FROZEN`.
    Cgroup,
    /// These processes got SIGSTOP.
    Signals(Vec<i32>),
}

/// A process of the sandbox, as the harness sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SandboxProcess {
    /// Its pid on the host.
    pub pid: i32,
    /// Its pid inside the sandbox's PID namespace (1 is the namespace's init).
    pub ns_pid: i32,
}

/// A sandbox for one external agent (module guide).
#[derive(Debug)]
pub struct AgentSandbox {
    child: Spawned,
    lease: Option<Lease>,
    cgroups: Cgroups,
    requests: std::fs::File,
    status: OwnedFd,
    status_buf: Vec<u8>,
    /// bubblewrap's JSON status stream (kept open so bubblewrap never blocks on it).
    _json_status: OwnedFd,
    /// Host pid of the namespace's init (bubblewrap's process inside).
    init_pid: i32,
    /// The server's pid inside the namespace.
    server_ns_pid: i32,
    stdout: Arc<Mutex<Capture>>,
    stderr: Arc<Mutex<Capture>>,
    /// The threads filling `stdout` and `stderr`; they end when the sandbox is gone.
    readers: Vec<std::thread::JoinHandle<()>>,
    /// Second handles on the read ends of the stdout and stderr pipes, to ask how many bytes
    /// the readers have not taken yet ([`AgentSandbox::settle_output`]).
    output_probes: [OwnedFd; 2],
    seq: u64,
    /// The running program: its request number and when it started.
    running: Option<(u64, Instant)>,
    frozen: Frozen,
    dead: bool,
    /// What runs once no process of the sandbox is left, before its network namespace can go
    /// to another sandbox ([`AgentSandbox::before_release`]).
    release_hooks: ReleaseHooks,
    /// The view with the agent's `/etc`, held while the sandbox lives: the directory is removed
    /// when the last view holding it goes.
    _etc: HostView,
    /// The fanotify watch on the sandbox's workspace mount, or why there is none.
    watch: Result<ReadWatch, String>,
}

/// The hooks of [`AgentSandbox::before_release`].
#[derive(Default)]
struct ReleaseHooks(Vec<Box<dyn FnOnce() + Send>>);

impl std::fmt::Debug for ReleaseHooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} release hook(s)", self.0.len())
    }
}

impl AgentSandbox {
    /// Builds the sandbox for `template` (its mounts, working directory, environment and
    /// process and memory limits; its program, standard input and timeout are ignored) and
    /// waits until the agent server inside is ready. Output of every program run later is
    /// kept up to `template.limits.output_bytes` per stream (head and tail).
    ///
    /// # Errors
    /// [`SandboxError::InvalidSpec`] when the sandbox is disabled (an external agent never runs
    /// unsandboxed) or the template is unusable, [`SandboxError::BwrapMissing`],
    /// [`SandboxError::Setup`] with bubblewrap's message when the sandbox did not come up,
    /// [`SandboxError::Spawn`] / [`SandboxError::Io`] otherwise.
    pub fn start(template: &CommandSpec, host: &HostView, config: &SandboxConfig) -> Result<AgentSandbox, SandboxError> {
        if !config.enabled {
            return Err(SandboxError::InvalidSpec(
                "an external agent cannot run without the sandbox (--no-sandbox would give it the host)".into(),
            ));
        }
        let (json_read, json_write) = pipe()?;
        let agent_host = host.for_agent()?;
        let host = &agent_host;
        let server =
            ServerLaunch { script: SERVER, extra_fds: &[(json_write.as_raw_fd(), FD_JSON_STATUS)], json_status: true, freezer: true };
        let LaunchedServer { launched, requests, status, stdout, stderr } = server::launch(template, host, config, &server)?;
        drop(json_write);
        set_nonblocking(&json_read)?;
        let limit = template.limits.output_bytes;
        let output_probes = [stdout.try_clone()?, stderr.try_clone()?];
        let (stdout, stdout_thread) = reader(stdout, limit)?;
        let (stderr, stderr_thread) = reader(stderr, limit)?;
        let mut sandbox = AgentSandbox {
            child: launched.child,
            lease: launched.lease,
            cgroups: launched.cgroups,
            requests,
            status,
            status_buf: Vec::new(),
            _json_status: json_read,
            init_pid: 0,
            server_ns_pid: 0,
            stdout,
            stderr,
            readers: vec![stdout_thread, stderr_thread],
            output_probes,
            seq: 0,
            running: None,
            frozen: Frozen::No,
            dead: false,
            release_hooks: ReleaseHooks::default(),
            _etc: agent_host,
            watch: Err("not started".into()),
        };
        match sandbox.await_ready() {
            Ok(()) => {
                // Watched before any program runs in it: nothing the agent reads is missed.
                sandbox.watch = crate::session::workspace_watch(template, sandbox.init_pid);
                Ok(sandbox)
            }
            Err(e) => {
                sandbox.kill();
                Err(e)
            }
        }
    }

    /// Waits for bubblewrap's `child-pid` and the server's `ready` line.
    fn await_ready(&mut self) -> Result<(), SandboxError> {
        let deadline = Instant::now() + START_TIMEOUT;
        let mut json = Vec::new();
        loop {
            if self.init_pid == 0
                && let Some(pid) = child_pid(&json)
            {
                self.init_pid = pid;
            }
            if self.server_ns_pid == 0
                && let Some(line) = take_line(&mut self.status_buf)
            {
                let text = String::from_utf8_lossy(&line).into_owned();
                match text.strip_prefix("ready ").and_then(|p| p.trim().parse::<i32>().ok()) {
                    Some(pid) => self.server_ns_pid = pid,
                    None => return Err(self.setup_failure()),
                }
            }
            if self.init_pid != 0 && self.server_ns_pid != 0 {
                return Ok(());
            }
            let open = Instant::now() < deadline && poll_readable(&[&self.status, &self._json_status], deadline) && {
                let _ = read_into(&self._json_status, &mut json);
                read_into(&self.status, &mut self.status_buf)
            };
            if !open {
                return Err(self.setup_failure());
            }
        }
    }

    /// Kills the sandbox and says why it did not start, from bubblewrap's stderr.
    fn setup_failure(&mut self) -> SandboxError {
        self.child.kill_group();
        let status = self.child.wait().ok();
        self.release();
        let mut stderr = Vec::new();
        if let Some(mut pipe) = self.child.stderr.take() {
            let _ = std::io::Read::read_to_end(&mut pipe, &mut stderr);
        }
        self.dead = true;
        SandboxError::Setup {
            status: status.and_then(|s| s.code()).map_or_else(|| "killed".to_string(), |c| c.to_string()),
            stderr: String::from_utf8_lossy(&stderr).trim().to_string(),
        }
    }

    /// `/proc/<pid>/ns/net` of a process inside the sandbox: the sandbox's network
    /// namespace, for `setns` (the gateway's listener).
    pub fn network_namespace(&self) -> PathBuf {
        PathBuf::from(format!("/proc/{}/ns/net", self.init_pid))
    }

    /// The workspace files the sandbox's processes read since the last call (the agent's own
    /// tools and every command it ran), measured by fanotify on the sandbox's workspace mount
    /// ([`crate::reads`]), or why that cannot be measured.
    pub fn take_reads(&self) -> Reads {
        Reads::taken_from(&self.watch)
    }

    /// Starts `command` (run by `/bin/sh -c` inside, in the template's working directory and
    /// environment) as the sandbox's program. One program at a time.
    ///
    /// # Errors
    /// [`SandboxError::InvalidSpec`] while another program runs, after the sandbox died, or
    /// for a command with a NUL byte; [`SandboxError::Io`] when the server cannot be reached.
    pub fn run(&mut self, command: &str) -> Result<(), SandboxError> {
        if self.running.is_some() {
            return Err(SandboxError::InvalidSpec("the agent sandbox already runs a program".into()));
        }
        if self.dead {
            return Err(SandboxError::InvalidSpec("the agent sandbox has ended".into()));
        }
        if command.contains('\0') {
            return Err(SandboxError::InvalidSpec("a command cannot contain a NUL byte".into()));
        }
        self.seq += 1;
        let lines: Vec<&str> = command.split('\n').collect();
        let mut request = format!("{} sh\n{}\n", self.seq, lines.len()).into_bytes();
        for line in lines {
            request.extend_from_slice(line.as_bytes());
            request.push(b'\n');
        }
        self.requests.write_all(&request)?;
        self.running = Some((self.seq, Instant::now()));
        Ok(())
    }

    /// Whether a program is running.
    pub fn is_running(&self) -> bool {
        self.running.is_some()
    }

    /// Waits until the running program has exited (and everything it started is gone) or
    /// `until` passes. `Ok(None)`: still running (or nothing runs). A sandbox that went away
    /// meanwhile (its server killed by the program) counts as an exit with status `None`; the
    /// sandbox is then killed whole.
    ///
    /// # Errors
    /// None so far; the `Result` leaves room for a server that breaks the protocol.
    pub fn wait_exit(&mut self, until: Instant) -> Result<Option<ProgramExit>, SandboxError> {
        let Some((seq, started)) = self.running else { return Ok(None) };
        let prefix = format!("{seq} ");
        let mut open = read_into(&self.status, &mut self.status_buf);
        loop {
            while let Some(line) = take_line(&mut self.status_buf) {
                let Some(code) = line.strip_prefix(prefix.as_bytes()) else { continue };
                let status = std::str::from_utf8(code).ok().and_then(|c| c.trim().parse::<i32>().ok());
                self.running = None;
                if status.is_none() {
                    self.kill();
                } else {
                    self.settle_output(Instant::now() + OUTPUT_SETTLE);
                }
                return Ok(Some(ProgramExit { status, duration: started.elapsed() }));
            }
            if !open {
                // The server is gone (killed by the program, or the sandbox died): it is over.
                self.running = None;
                self.kill();
                return Ok(Some(ProgramExit { status: None, duration: started.elapsed() }));
            }
            if Instant::now() >= until {
                return Ok(None);
            }
            poll_readable(&[&self.status], until);
            open = read_into(&self.status, &mut self.status_buf);
        }
    }

    /// Waits (until `until` at most) until the readers have taken every byte the programs
    /// wrote so far. The exit status comes on its own pipe, so without this a program's last
    /// output could still sit in its pipe when its exit is reported (and `stdout()` miss it).
    fn settle_output(&self, until: Instant) {
        for (capture, probe) in [&self.stdout, &self.stderr].into_iter().zip(&self.output_probes) {
            loop {
                // A reader reads only while holding its capture's lock, so with the lock held an
                // empty pipe means every byte written is in the capture.
                let guard = capture.lock().unwrap_or_else(PoisonError::into_inner);
                if unread_bytes(probe) == 0 || Instant::now() >= until {
                    break;
                }
                drop(guard);
                std::thread::sleep(Duration::from_millis(1));
            }
        }
    }

    /// Everything the program wrote to standard output so far (head and tail kept).
    pub fn stdout(&self) -> Captured {
        self.stdout.lock().unwrap_or_else(PoisonError::into_inner).finish()
    }

    /// Everything the program wrote to standard error so far (head and tail kept).
    pub fn stderr(&self) -> Captured {
        self.stderr.lock().unwrap_or_else(PoisonError::into_inner).finish()
    }

    /// The sandbox's processes (bubblewrap's own process outside included), from its `pids`
    /// cgroup, or by walking bubblewrap's descendants where there is none.
    pub fn processes(&self) -> Vec<SandboxProcess> {
        if self.dead {
            return Vec::new();
        }
        let pids = self.cgroups.members().unwrap_or_else(|| descendants(self.child.id()));
        pids.into_iter().filter_map(|pid| ns_pid(pid).map(|ns_pid| SandboxProcess { pid, ns_pid })).collect()
    }

    /// The processes of the program (everything but bubblewrap, the namespace's init and the
    /// server).
    fn program_pids(&self) -> Vec<i32> {
        let outer = self.child.id();
        self.processes()
            .into_iter()
            .filter(|p| p.pid != outer && p.ns_pid != 1 && p.ns_pid != self.server_ns_pid && p.pid != self.init_pid)
            .map(|p| p.pid)
            .collect()
    }

    /// Stops every process of the program (module guide): the `freezer` cgroup, else SIGSTOP
    /// to each process (three passes, for children forked meanwhile). Idempotent.
    pub fn freeze(&mut self) {
        if !matches!(self.frozen, Frozen::No) || self.dead {
            return;
        }
        if self.cgroups.has_freezer() && self.cgroups.set_frozen(true) {
            self.frozen = Frozen::Cgroup;
            return;
        }
        let mut stopped: Vec<i32> = Vec::new();
        for _ in 0..3 {
            for pid in self.program_pids() {
                if !stopped.contains(&pid) {
                    // SAFETY: kill(2) of a pid read from the sandbox's own process list.
                    unsafe {
                        libc::kill(pid, libc::SIGSTOP);
                    }
                    stopped.push(pid);
                }
            }
        }
        self.frozen = Frozen::Signals(stopped);
    }

    /// Lets frozen processes run again. Idempotent.
    pub fn thaw(&mut self) {
        match std::mem::replace(&mut self.frozen, Frozen::No) {
            Frozen::No => {}
            Frozen::Cgroup => {
                self.cgroups.set_frozen(false);
            }
            Frozen::Signals(pids) => {
                for pid in pids {
                    // SAFETY: kill(2) of a pid this sandbox stopped.
                    unsafe {
                        libc::kill(pid, libc::SIGCONT);
                    }
                }
            }
        }
    }

    /// Whether the program is frozen.
    pub fn is_frozen(&self) -> bool {
        !matches!(self.frozen, Frozen::No)
    }

    /// Ends the program for good (module guide): SIGTERM to each of its processes (delivered
    /// once they are thawed), then up to `grace` for it to exit, then SIGKILL of the whole
    /// sandbox. Returns how the program ended (`None` when nothing ran); afterwards no process
    /// of the sandbox is left and the sandbox cannot run anything more.
    pub fn terminate(&mut self, grace: Duration) -> Option<ProgramExit> {
        let mut exit = None;
        if self.running.is_some() && !self.dead {
            for pid in self.program_pids() {
                // SAFETY: kill(2) of a pid read from the sandbox's own process list.
                unsafe {
                    libc::kill(pid, libc::SIGTERM);
                }
            }
            self.thaw();
            exit = self.wait_exit(Instant::now() + grace).ok().flatten();
            if exit.is_none()
                && let Some((_, started)) = self.running.take()
            {
                exit = Some(ProgramExit { status: None, duration: started.elapsed() });
            }
        }
        self.kill();
        exit
    }

    /// Kills bubblewrap and everything in the sandbox, waits until it is all gone and returns
    /// the network namespace to the pool.
    fn kill(&mut self) {
        if self.dead {
            return;
        }
        self.dead = true;
        self.running = None;
        self.thaw();
        self.child.kill_group();
        self.release();
        let _ = self.child.wait();
        if self.init_pid > 0 {
            wait_until_gone(self.init_pid);
        }
        // Every writer of the output pipes is gone now, so the readers reach the end: wait
        // (bounded) for them, so the captures hold everything the program wrote.
        let until = Instant::now() + Duration::from_secs(2);
        for thread in std::mem::take(&mut self.readers) {
            while !thread.is_finished() && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(1));
            }
            if thread.is_finished() {
                let _ = thread.join();
            }
        }
    }

    /// Runs `hook` when the sandbox is killed, once every process of it is gone and before
    /// its network namespace is returned to the pool (whatever was served inside the
    /// namespace — the network tripwire's listeners — must be closed by then, so the next
    /// sandbox finds none).
    pub fn before_release(&mut self, hook: impl FnOnce() + Send + 'static) {
        self.release_hooks.0.push(Box::new(hook));
    }

    fn release(&mut self) {
        let gone = self.cgroups.kill_and_remove();
        for hook in std::mem::take(&mut self.release_hooks.0) {
            hook();
        }
        if gone && let Some(lease) = self.lease.take() {
            lease.give_back();
        }
    }
}

impl Drop for AgentSandbox {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A thread reading `pipe` into a bounded capture until the pipe closes. It reads only while
/// holding the capture's lock (the pipe is non-blocking; it waits for data without the lock), so
/// [`AgentSandbox::settle_output`] can tell when everything written is in the capture.
///
/// # Errors
/// [`SandboxError::Io`] when the pipe cannot be made non-blocking.
fn reader(pipe: OwnedFd, limit: usize) -> Result<(Arc<Mutex<Capture>>, std::thread::JoinHandle<()>), SandboxError> {
    set_nonblocking(&pipe)?;
    let capture = Arc::new(Mutex::new(Capture::new(limit)));
    let shared = Arc::clone(&capture);
    let thread = std::thread::spawn(move || {
        loop {
            poll_readable(&[&pipe], Instant::now() + Duration::from_secs(3600));
            let mut capture = shared.lock().unwrap_or_else(PoisonError::into_inner);
            if !read_available(&pipe, &mut capture) {
                break;
            }
        }
    });
    Ok((capture, thread))
}

/// Moves what the non-blocking `pipe` holds now into `capture`; `false` once the pipe is closed
/// (or broken).
fn read_available(pipe: &OwnedFd, capture: &mut Capture) -> bool {
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        // SAFETY: read(2) into a buffer of the given length on an fd we own.
        let n = unsafe { libc::read(pipe.as_raw_fd(), chunk.as_mut_ptr().cast(), chunk.len()) };
        match n {
            0 => return false,
            n if n > 0 => capture.push(&chunk[..n as usize]),
            _ => match std::io::Error::last_os_error().kind() {
                std::io::ErrorKind::WouldBlock => return true,
                std::io::ErrorKind::Interrupted => {}
                _ => return false,
            },
        }
    }
}

/// How many bytes the pipe read through `fd` holds (0 when it cannot say).
fn unread_bytes(fd: &OwnedFd) -> usize {
    let mut pending: libc::c_int = 0;
    // SAFETY: FIONREAD writes one c_int through the pointer we pass, on an fd we own.
    let ok = unsafe { libc::ioctl(fd.as_raw_fd(), libc::FIONREAD, &mut pending) } == 0;
    if ok { usize::try_from(pending).unwrap_or(0) } else { 0 }
}

/// The `child-pid` of bubblewrap's JSON status stream.
fn child_pid(stream: &[u8]) -> Option<i32> {
    let text = String::from_utf8_lossy(stream);
    let rest = text.split("\"child-pid\":").nth(1)?;
    rest.trim_start().split(|c: char| !c.is_ascii_digit()).next()?.parse().ok()
}

/// A process's pid in its innermost PID namespace (`NSpid` of `/proc/<pid>/status`).
fn ns_pid(pid: i32) -> Option<i32> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("NSpid:"))?;
    line.split_whitespace().last()?.parse().ok()
}

/// `pid`'s descendants and `pid` itself, from `/proc/<pid>/task/*/children`.
pub(crate) fn descendants(pid: i32) -> Vec<i32> {
    let mut all = vec![pid];
    let mut next = 0;
    while next < all.len() && all.len() < 100_000 {
        let parent = all[next];
        next += 1;
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{parent}/task")) else { continue };
        for task in tasks.flatten() {
            let Ok(text) = std::fs::read_to_string(task.path().join("children")) else { continue };
            all.extend(text.split_whitespace().filter_map(|c| c.parse::<i32>().ok()).filter(|c| !all.contains(c)).collect::<Vec<_>>());
        }
    }
    all
}

/// Waits (at most 5 s) until `pid` has exited (gone or a zombie).
fn wait_until_gone(pid: i32) {
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut pause = Duration::from_micros(50);
    while Instant::now() < deadline {
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { return };
        let state = stat.rsplit_once(')').and_then(|(_, rest)| rest.trim_start().chars().next());
        if matches!(state, Some('Z' | 'X') | None) {
            return;
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(10));
    }
    tracing::warn!("agent sandbox init {pid} still running 5 s after the sandbox was killed");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_child_pid_is_read_from_bubblewraps_status() {
        assert_eq!(child_pid(b"{ \"child-pid\": 4242, \"cgroup-namespace\": 1 }\n"), Some(4242));
        assert_eq!(child_pid(b"{ \"child"), None);
    }

    #[test]
    fn a_process_knows_its_namespace_pid() {
        // Outside any sandbox the innermost namespace is the host's.
        let me = std::process::id() as i32;
        assert_eq!(ns_pid(me), Some(me));
        assert!(descendants(me).contains(&me));
    }
}
