//! Starting a shell *server* in a sandbox: the part [`crate::Session`]'s command server and
//! [`crate::AgentSandbox`]'s agent server share.
//!
//! Both run a small `sh` loop from the execute-only server shell, speak over the same four
//! pipes at the same fd numbers (requests in, statuses out, the programs' stdout and stderr)
//! and differ only in their script, whether bubblewrap reports its JSON status, whether the
//! sandbox gets a `freezer` cgroup, and the extra fds the caller hands over besides the four
//! (the agent sandbox's end of bubblewrap's JSON status pipe). [`launch`] builds the
//! pipes, starts bubblewrap with the server and returns the harness's ends; waiting for the
//! server's `ready` line stays with the caller, whose line says different things.

use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::time::Duration;

use crate::error::SandboxError;
use crate::host::HostView;
use crate::runner::{CommandSpec, Launched, SandboxConfig, bwrap_path, environment, launch_bwrap, pipe, validate};
use crate::session::set_nonblocking;
use crate::spawn;

/// Fds of a server inside the sandbox (single digits: `dash` redirections take no more):
/// requests in, statuses out, the programs' stdout and stderr (bubblewrap itself uses 3–5 for
/// its argument list, seccomp filter and JSON status).
pub(crate) const FD_REQUESTS: RawFd = 6;
pub(crate) const FD_STATUS: RawFd = 7;
pub(crate) const FD_STDOUT: RawFd = 8;
pub(crate) const FD_STDERR: RawFd = 9;

/// Where the sandbox sees the server's execute-only shell (`host::SERVER_SHELL`; the view's
/// `/etc` is the sandbox's).
pub(crate) const SERVER_SHELL_PATH: &str = "/etc/specgap-server-sh";

/// How long a sandbox may take to come up before its owner gives up on it.
pub(crate) const START_TIMEOUT: Duration = Duration::from_secs(60);

/// What differs between the servers [`launch`] starts.
pub(crate) struct ServerLaunch<'a> {
    /// The server's `sh -c` script (run with `$0` = `/bin/sh`).
    pub script: &'a str,
    /// Extra harness fds handed over as `(harness fd, sandbox fd number)` besides the four
    /// server pipes; the caller closes its copies once [`launch`] returns.
    pub extra_fds: &'a [(RawFd, RawFd)],
    /// Whether bubblewrap writes its JSON status (to the runner's status fd, 5: hand over a
    /// pipe's write end at 5 in `extra_fds` to read it).
    pub json_status: bool,
    /// Whether the sandbox also gets a cgroup-v1 `freezer` group.
    pub freezer: bool,
}

/// A started server: bubblewrap's process, cgroups and lease, and the harness's pipe ends.
pub(crate) struct LaunchedServer {
    pub launched: Launched,
    /// Where requests go.
    pub requests: std::fs::File,
    /// The server's status lines (non-blocking).
    pub status: OwnedFd,
    /// The programs' stdout and stderr (blocking; the caller decides how it reads them).
    pub stdout: OwnedFd,
    pub stderr: OwnedFd,
}

/// Validates `template`, builds the server pipes and starts bubblewrap running `server.script`
/// with the template's mounts, environment and limits.
///
/// # Errors
/// [`SandboxError::InvalidSpec`] for an unusable template, [`SandboxError::BwrapMissing`],
/// [`SandboxError::Spawn`] / [`SandboxError::Io`] when a pipe or bubblewrap cannot be made.
pub(crate) fn launch(
    template: &CommandSpec,
    host: &HostView,
    config: &SandboxConfig,
    server: &ServerLaunch<'_>,
) -> Result<LaunchedServer, SandboxError> {
    validate(template)?;
    let bwrap = bwrap_path().ok_or(SandboxError::BwrapMissing)?;
    let (requests_read, requests_write) = pipe()?;
    let (status_read, status_write) = pipe()?;
    let (stdout_read, stdout_write) = pipe()?;
    let (stderr_read, stderr_write) = pipe()?;
    let mut fds = vec![
        (requests_read.as_raw_fd(), FD_REQUESTS),
        (status_write.as_raw_fd(), FD_STATUS),
        (stdout_write.as_raw_fd(), FD_STDOUT),
        (stderr_write.as_raw_fd(), FD_STDERR),
    ];
    fds.extend_from_slice(server.extra_fds);
    let shell = match host.rootfs_view() {
        None => SERVER_SHELL_PATH,
        Some(image) => image.server_shell_path().ok_or_else(|| {
            SandboxError::InvalidSpec(format!(
                "the image at {} has no /bin/sh, which a session's command server needs",
                image.root().display()
            ))
        })?,
    };
    let program: Vec<String> = [shell, "-c", server.script, "/bin/sh"].map(String::from).to_vec();
    let launched = launch_bwrap(
        &bwrap,
        template,
        host,
        &environment(template, host, config),
        &program,
        &fds,
        [spawn::Stdio::Null, spawn::Stdio::Null, spawn::Stdio::Piped],
        server.json_status,
        server.freezer,
    )?;
    // The sandbox holds its ends now; the harness keeping them would hide the end of a pipe.
    drop((requests_read, status_write, stdout_write, stderr_write));
    set_nonblocking(&status_read)?;
    Ok(LaunchedServer {
        launched,
        requests: std::fs::File::from(requests_write),
        status: status_read,
        stdout: stdout_read,
        stderr: stderr_read,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_server_shell_is_where_the_view_puts_it() {
        assert_eq!(SERVER_SHELL_PATH, format!("/etc/{}", crate::host::SERVER_SHELL));
    }
}
