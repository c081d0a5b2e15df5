//! A loopback listener inside a sandbox's network namespace, so the gateway is reachable from
//! that sandbox only.
//!
//! A socket belongs to the network namespace it was created in, whichever thread later
//! accepts on it. The helper enters the namespace on a short-lived thread of its own
//! (`setns(CLONE_NEWNET)` changes only the calling thread), binds `127.0.0.1:0` there and
//! hands the listener back; the thread then ends, so no harness thread is left inside a
//! sandbox's namespace. The gateway serves the listener from its own thread, in the harness's
//! namespace, where its upstream connections are made.
//!
//! Where the namespace comes from: a sandbox started by specgap-sandbox either borrows a
//! pooled namespace (root with a `pids` cgroup; `crates/specgap-sandbox/src/netns.rs`) or gets
//! a fresh one from bubblewrap; either way `/proc/<pid>/ns/net` of any process in the sandbox
//! names it, and a bind-mounted namespace file (`ip netns add`) works the same. Entering a
//! network namespace needs `CAP_SYS_ADMIN` (root).

use std::fs::File;
use std::io;
use std::net::{Ipv4Addr, TcpListener};
use std::os::fd::AsRawFd as _;
use std::path::Path;

use crate::error::GatewayError;

/// Binds `127.0.0.1:0` inside the network namespace `namespace` (an open namespace file).
///
/// # Errors
/// [`GatewayError::Namespace`] when the file cannot be duplicated, the namespace not entered
/// (not root, not a network namespace) or the address not bound.
pub fn bind_loopback_in(namespace: &File) -> Result<TcpListener, GatewayError> {
    let label = format!("fd:{}", namespace.as_raw_fd());
    let error = |source| GatewayError::Namespace { path: label.clone().into(), source };
    let namespace = namespace.try_clone().map_err(error)?;
    let bound = std::thread::Builder::new()
        .name("specgap-gateway-netns".into())
        .spawn(move || -> io::Result<TcpListener> {
            // SAFETY: setns of this thread only, into a namespace file we hold open; the thread
            // ends right after binding, so nothing else ever runs inside the namespace.
            if unsafe { libc::setns(namespace.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
                return Err(io::Error::last_os_error());
            }
            TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        })
        .map_err(error)?
        .join()
        .map_err(|_| error(io::Error::other("the namespace thread panicked")))?;
    bound.map_err(error)
}

/// Binds `127.0.0.1:0` inside the network namespace at `path` (`/proc/<pid>/ns/net`, or a
/// bind-mounted namespace file such as `/run/netns/<name>`).
///
/// # Errors
/// [`GatewayError::Namespace`] naming the path.
pub fn bind_loopback_in_path(path: &Path) -> Result<TcpListener, GatewayError> {
    let namespace = File::open(path).map_err(|source| GatewayError::Namespace { path: path.to_path_buf(), source })?;
    bind_loopback_in(&namespace).map_err(|e| match e {
        GatewayError::Namespace { source, .. } => GatewayError::Namespace { path: path.to_path_buf(), source },
        other => other,
    })
}
