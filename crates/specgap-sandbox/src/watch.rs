//! Watching a started command from the calling thread: its stdout and stderr pipes read into
//! [`Capture`]s, its exit noticed through a pidfd, its timeout enforced — one `poll(2)` loop.
//!
//! Why one loop: a command used to get three helper threads (a reader per stream and a
//! waiter), and handing their results back cost sleeps of 50 µs and more; together a
//! measurable share of a sandboxed `true` (BENCHMARKS.md, "Sandbox and materialization").
//!
//! The command is never reaped here (its pid and process group stay valid for the kill); the
//! caller reaps it afterwards. Where `pidfd_open` is missing (kernels before 5.3) the loop
//! checks for the exit with `waitid(WNOHANG | WNOWAIT)` every [`EXIT_CHECK_INTERVAL`].

use crate::capture::{Capture, Captured};
use std::fs::File;
use std::io::Read;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::{Duration, Instant};

/// How long the pipes may stay open once the command has exited. Inside the sandbox the kernel
/// kills the whole PID namespace with bubblewrap, so this bound is only ever reached by an
/// unsandboxed command whose escaped descendants still hold a pipe.
const DRAIN_AFTER_EXIT: Duration = Duration::from_secs(2);
/// How often the exit is checked where there is no pidfd to wait on.
const EXIT_CHECK_INTERVAL: Duration = Duration::from_millis(5);
/// Bytes read from a pipe at a time.
const READ_CHUNK: usize = 64 * 1024;

/// What [`watch`] saw: whether the timeout killed the command, and its two streams.
#[derive(Debug)]
pub(crate) struct Watched {
    pub timed_out: bool,
    pub stdout: Captured,
    pub stderr: Captured,
}

/// Reads `stdout` and `stderr` (each kept up to `output_limit` bytes by [`Capture`]) until both
/// are closed and process `pid` has exited; when `timeout` passes first, kills the process group
/// `pid` (SIGKILL) and goes on until the exit. Returns without reaping `pid`.
pub(crate) fn watch(pid: libc::pid_t, stdout: Option<File>, stderr: Option<File>, output_limit: usize, timeout: Duration) -> Watched {
    watch_with(ExitWatch::open(pid), stdout, stderr, output_limit, timeout)
}

/// [`watch`] with the exit noticed through `exit`.
fn watch_with(exit: ExitWatch, stdout: Option<File>, stderr: Option<File>, output_limit: usize, timeout: Duration) -> Watched {
    let pid = exit.pid;
    let mut streams = [Stream::new(stdout, output_limit), Stream::new(stderr, output_limit)];
    let deadline = Instant::now().checked_add(timeout);
    let (mut timed_out, mut exited_at) = (false, None::<Instant>);
    let mut buffer = vec![0u8; READ_CHUNK];
    loop {
        let now = Instant::now();
        let wait = match exited_at {
            Some(at) if streams.iter().all(Stream::is_closed) || now >= at + DRAIN_AFTER_EXIT => break,
            Some(at) => Some(at + DRAIN_AFTER_EXIT - now),
            None => exit.poll_bound(if timed_out { None } else { deadline.map(|d| d.saturating_duration_since(now)) }),
        };
        let exit_fd = if exited_at.is_none() { exit.pidfd() } else { None };
        let ready = poll(&streams, exit_fd, wait);
        for (stream, readable) in streams.iter_mut().zip(ready.streams) {
            if readable {
                stream.read_once(&mut buffer);
            }
        }
        if exited_at.is_none() && (ready.exit || exit.has_exited_now()) {
            exited_at = Some(Instant::now());
        } else if exited_at.is_none() && !timed_out && deadline.is_some_and(|d| Instant::now() >= d) {
            // SAFETY: kill(2) of our own, not yet reaped child's process group.
            unsafe {
                libc::kill(-pid, libc::SIGKILL);
            }
            timed_out = true;
        }
    }
    let [stdout, stderr] = streams.map(|stream| stream.capture.finish());
    Watched { timed_out, stdout, stderr }
}

/// One output pipe and what has been read from it.
struct Stream {
    pipe: Option<File>,
    capture: Capture,
}

impl Stream {
    fn new(pipe: Option<File>, limit: usize) -> Self {
        Stream { pipe, capture: Capture::new(limit) }
    }

    fn is_closed(&self) -> bool {
        self.pipe.is_none()
    }

    /// One `read` (poll said it will not block): the bytes go to the capture; the end of the
    /// stream or an error other than EINTR closes it.
    fn read_once(&mut self, buffer: &mut [u8]) {
        let Some(pipe) = self.pipe.as_mut() else { return };
        match pipe.read(buffer) {
            Ok(0) => self.pipe = None,
            Ok(n) => self.capture.push(&buffer[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => self.pipe = None,
        }
    }
}

/// How the exit of the watched process is noticed.
struct ExitWatch {
    pid: libc::pid_t,
    /// Readable once the process has exited; `None` where `pidfd_open` is not available.
    pidfd: Option<OwnedFd>,
}

impl ExitWatch {
    fn open(pid: libc::pid_t) -> Self {
        // SAFETY: pidfd_open(2) takes a pid and flags and returns a new fd or -1.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
        let pidfd = i32::try_from(fd).ok().filter(|&fd| fd >= 0).map(|fd| {
            // SAFETY: the fd was just returned by the kernel and nothing else owns it.
            unsafe { OwnedFd::from_raw_fd(fd) }
        });
        ExitWatch { pid, pidfd }
    }

    fn pidfd(&self) -> Option<&OwnedFd> {
        self.pidfd.as_ref()
    }

    /// How long one poll may wait before the exit must be checked or the deadline acted on:
    /// `until_deadline` (`None`: no deadline), shortened to [`EXIT_CHECK_INTERVAL`] without a
    /// pidfd.
    fn poll_bound(&self, until_deadline: Option<Duration>) -> Option<Duration> {
        match (&self.pidfd, until_deadline) {
            (Some(_), bound) => bound,
            (None, Some(bound)) => Some(bound.min(EXIT_CHECK_INTERVAL)),
            (None, None) => Some(EXIT_CHECK_INTERVAL),
        }
    }

    /// Without a pidfd: whether the process has exited (checked without reaping it). With one,
    /// the poll says so and this is `false`.
    fn has_exited_now(&self) -> bool {
        if self.pidfd.is_some() {
            return false;
        }
        // SAFETY: waitid on our own child with WNOHANG | WNOWAIT; siginfo is a plain
        // out-parameter, zeroed so that "no change" reads as pid 0.
        unsafe {
            let mut info: libc::siginfo_t = std::mem::zeroed();
            let rc = libc::waitid(libc::P_PID, self.pid as libc::id_t, &mut info, libc::WEXITED | libc::WNOHANG | libc::WNOWAIT);
            // ECHILD: already reaped or not ours; either way it will not exit again.
            rc != 0 || info.si_pid() != 0
        }
    }
}

/// Which of the polled fds are ready.
struct Ready {
    streams: [bool; 2],
    exit: bool,
}

/// Waits up to `wait` (`None`: without a bound) for an open stream to be readable or closed,
/// or for `exit_fd` to show the exit. EINTR counts as nothing ready.
fn poll(streams: &[Stream; 2], exit_fd: Option<&OwnedFd>, wait: Option<Duration>) -> Ready {
    let entry = |fd: i32| libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
    // A negative fd is ignored by poll(2): a closed stream or no pidfd.
    let mut fds = [
        entry(streams[0].pipe.as_ref().map_or(-1, AsRawFd::as_raw_fd)),
        entry(streams[1].pipe.as_ref().map_or(-1, AsRawFd::as_raw_fd)),
        entry(exit_fd.map_or(-1, AsRawFd::as_raw_fd)),
    ];
    let timeout_ms = wait.map_or(-1, |wait| i32::try_from(wait.as_micros().div_ceil(1000)).unwrap_or(i32::MAX));
    // SAFETY: `fds` is a valid array of three pollfd entries for the duration of the call.
    let rc = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout_ms) };
    let ready = |entry: &libc::pollfd| rc > 0 && entry.fd >= 0 && entry.revents != 0;
    Ready { streams: [ready(&fds[0]), ready(&fds[1])], exit: ready(&fds[2]) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::CommandExt;
    use std::process::{Command, Stdio};

    fn start(script: &str) -> (libc::pid_t, std::process::Child, Option<File>, Option<File>) {
        let mut child =
            Command::new("/bin/sh").args(["-c", script]).stdout(Stdio::piped()).stderr(Stdio::piped()).process_group(0).spawn().unwrap();
        let stdout = child.stdout.take().map(|s| File::from(OwnedFd::from(s)));
        let stderr = child.stderr.take().map(|s| File::from(OwnedFd::from(s)));
        (child.id() as libc::pid_t, child, stdout, stderr)
    }

    #[test]
    fn both_streams_are_read_in_full_while_the_command_runs() {
        // 200,000 bytes on stdout: more than a pipe holds, so the command finishes only if the
        // loop reads while it runs.
        let (pid, mut child, stdout, stderr) = start("head -c 200000 /dev/zero; printf 'oops\\n' >&2");
        let watched = watch(pid, stdout, stderr, 1 << 20, Duration::from_secs(60));
        assert!(!watched.timed_out);
        assert_eq!(watched.stdout.total_bytes(), 200_000);
        assert_eq!(watched.stderr.text(), "oops\n");
        assert!(child.wait().unwrap().success());
    }

    #[test]
    fn a_timeout_kills_the_process_group_and_keeps_what_was_read() {
        let (pid, mut child, stdout, stderr) = start("echo started; sleep 30 & sleep 30; echo never");
        let watched = watch(pid, stdout, stderr, 1024, Duration::from_millis(300));
        assert!(watched.timed_out);
        assert_eq!(watched.stdout.text(), "started\n");
        assert_eq!(child.wait().unwrap().code(), None, "killed by a signal");
    }

    #[test]
    fn an_escaped_descendant_holding_a_pipe_does_not_keep_the_watch_waiting() {
        // The background sleep leaves the process group and keeps stdout open; the watch ends
        // after the drain bound while it still runs.
        let (pid, mut child, stdout, stderr) = start("setsid sleep 60 & echo $! >&2; echo done");
        let watched = watch(pid, stdout, stderr, 1024, Duration::from_secs(120));
        assert!(!watched.timed_out);
        assert_eq!(watched.stdout.text(), "done\n");
        let descendant: u32 = watched.stderr.text().trim().parse().unwrap();
        assert!(std::path::Path::new(&format!("/proc/{descendant}")).exists(), "the descendant still runs");
        // SAFETY: kill(2) of the test's own descendant.
        unsafe { libc::kill(descendant as libc::pid_t, libc::SIGKILL) };
        assert!(child.wait().unwrap().success());
    }

    #[test]
    fn without_a_pidfd_the_exit_and_the_timeout_are_found_by_checking() {
        let no_pidfd = |pid| ExitWatch { pid, pidfd: None };
        assert_eq!(no_pidfd(1).poll_bound(None), Some(EXIT_CHECK_INTERVAL));
        assert_eq!(no_pidfd(1).poll_bound(Some(Duration::from_millis(1))), Some(Duration::from_millis(1)));
        assert_eq!(ExitWatch::open(std::process::id() as libc::pid_t).poll_bound(None), None, "this kernel has pidfd_open");
        let (pid, mut child, stdout, stderr) = start("head -c 100000 /dev/zero; echo hi >&2");
        let watched = watch_with(no_pidfd(pid), stdout, stderr, 1 << 20, Duration::from_secs(60));
        assert_eq!((watched.timed_out, watched.stdout.total_bytes(), watched.stderr.text().as_str()), (false, 100_000, "hi\n"));
        assert!(child.wait().unwrap().success(), "not reaped by the watch");
        let (pid, mut child, stdout, stderr) = start("echo started; sleep 30");
        let watched = watch_with(no_pidfd(pid), stdout, stderr, 1024, Duration::from_millis(200));
        assert_eq!((watched.timed_out, watched.stdout.text().as_str()), (true, "started\n"));
        assert_eq!(child.wait().unwrap().code(), None, "killed by a signal");
    }
}
