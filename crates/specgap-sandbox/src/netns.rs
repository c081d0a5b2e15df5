//! A pool of private network namespaces for sandboxes (DESIGN §3.2: "no network at all").
//!
//! bubblewrap's `--unshare-net` creates a network namespace for every sandbox and the kernel
//! tears it down afterwards; together that was about a millisecond of CPU per sandbox here, a
//! tenth of a short episode. When the harness runs as root (it may then enter namespaces with
//! `setns`) and the sandbox has a `pids` cgroup (so the harness can tell when every process of
//! a sandbox is gone), a sandbox instead borrows a namespace from this pool: one with nothing
//! but the loopback interface, created once and handed to one sandbox at a time. bubblewrap
//! is spawned from inside it (`setns` of the spawning thread only, and straight back), so the
//! sandbox is in it from its first instruction; the lease returns the namespace only after the
//! sandbox's cgroup is empty. Sandboxes that run at the same time therefore never share a
//! namespace, and a namespace passes to the next sandbox with no process, socket or listener
//! of the previous one left. Its configuration (interfaces, routes, firewall, sysctls) belongs
//! to the host's user namespace, which no sandbox has capabilities in, so no sandbox can
//! change what the next one finds.

use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::{Mutex, OnceLock, PoisonError};

/// The pool, or `None` where namespaces cannot be entered (not root, no `setns`).
fn pool() -> Option<&'static Pool> {
    static POOL: OnceLock<Option<Pool>> = OnceLock::new();
    POOL.get_or_init(Pool::open).as_ref()
}

struct Pool {
    /// The network namespace the harness's threads live in.
    home: File,
    free: Mutex<Vec<File>>,
}

/// A namespace lent to one sandbox; give it back with [`Lease::give_back`] once the sandbox's
/// processes are all gone. Dropped without that (an error path), the namespace is closed.
#[derive(Debug)]
pub(crate) struct Lease {
    namespace: Option<File>,
}

/// Borrows a namespace (creating one when none is free), or `None` when the pool cannot be
/// used: the sandbox then gets a fresh namespace from bubblewrap.
pub(crate) fn lease() -> Option<Lease> {
    let pool = pool()?;
    let reused = pool.free.lock().unwrap_or_else(PoisonError::into_inner).pop();
    let namespace = match reused {
        Some(ns) => ns,
        None => match pool.create() {
            Ok(ns) => ns,
            Err(e) => {
                tracing::debug!("cannot create a network namespace for the pool: {e}");
                return None;
            }
        },
    };
    Some(Lease { namespace: Some(namespace) })
}

impl Lease {
    /// Runs `spawn` with the calling thread inside the leased namespace, then returns the
    /// thread to the harness's own namespace. A process started by `spawn` stays inside.
    ///
    /// # Errors
    /// What `setns` reports on the way in (nothing has run then).
    pub(crate) fn inside<T>(&self, spawn: impl FnOnce() -> T) -> io::Result<T> {
        let (Some(pool), Some(namespace)) = (pool(), self.namespace.as_ref()) else {
            return Err(io::Error::other("no network namespace leased"));
        };
        enter(namespace)?;
        let result = spawn();
        if let Err(e) = enter(&pool.home) {
            // Cannot happen for root; if it did, this thread would now talk through a
            // sandbox's namespace, so stop here rather than run on.
            tracing::error!("cannot return to the harness's network namespace: {e}");
            std::process::abort();
        }
        Ok(result)
    }

    /// Returns the namespace to the pool. Call only once no process of the sandbox is left.
    pub(crate) fn give_back(mut self) {
        if let (Some(pool), Some(namespace)) = (pool(), self.namespace.take()) {
            pool.free.lock().unwrap_or_else(PoisonError::into_inner).push(namespace);
        }
    }
}

impl Pool {
    fn open() -> Option<Pool> {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            return None;
        }
        let home = File::open("/proc/thread-self/ns/net").ok()?;
        Some(Pool { home, free: Mutex::new(Vec::new()) })
    }

    /// A new namespace with its loopback interface up, made from the calling thread, which is
    /// back in the harness's namespace when this returns.
    fn create(&self) -> io::Result<File> {
        // SAFETY: unshare of the calling thread's network namespace only.
        if unsafe { libc::unshare(libc::CLONE_NEWNET) } != 0 {
            return Err(io::Error::last_os_error());
        }
        let made = File::open("/proc/thread-self/ns/net").and_then(|ns| loopback_up().map(|()| ns));
        if let Err(e) = enter(&self.home) {
            tracing::error!("cannot return to the harness's network namespace: {e}");
            std::process::abort();
        }
        made
    }
}

fn enter(namespace: &File) -> io::Result<()> {
    // SAFETY: setns of the calling thread into a network namespace fd we hold.
    if unsafe { libc::setns(namespace.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Sets `lo` up in the calling thread's network namespace (what bubblewrap does in its own).
fn loopback_up() -> io::Result<()> {
    // SAFETY: a datagram socket used only for the interface ioctls below, owned right away.
    let socket = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if socket < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `socket` is a new fd nobody else owns.
    let socket = unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(socket) };
    // SAFETY: ifreq is a plain C struct; the name is NUL-terminated within its 16 bytes, and
    // the ioctls read and write only that struct.
    unsafe {
        let mut request: libc::ifreq = std::mem::zeroed();
        for (i, byte) in b"lo\0".iter().enumerate() {
            request.ifr_name[i] = *byte as libc::c_char;
        }
        if libc::ioctl(socket.as_raw_fd(), libc::SIOCGIFFLAGS, &mut request) != 0 {
            return Err(io::Error::last_os_error());
        }
        request.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short;
        if libc::ioctl(socket.as_raw_fd(), libc::SIOCSIFFLAGS, &request) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    fn inode(lease: &Lease) -> u64 {
        lease.namespace.as_ref().map(|ns| ns.metadata().map(|m| m.ino()).unwrap_or(0)).unwrap_or(0)
    }

    #[test]
    fn a_given_back_namespace_is_lent_again_and_a_held_one_is_not() {
        let Some(first) = lease() else { return }; // not root: the pool is off, nothing to test
        let first_inode = inode(&first);
        let second = lease().unwrap();
        assert_ne!(inode(&second), first_inode, "a held namespace must not be lent twice");
        let home = std::fs::metadata("/proc/thread-self/ns/net").unwrap().ino();
        assert_ne!(first_inode, home);
        first.give_back();
        let again = lease().unwrap();
        assert_eq!(inode(&again), first_inode);
        // The thread is back home after entering one.
        let seen = again.inside(|| std::fs::metadata("/proc/thread-self/ns/net").unwrap().ino()).unwrap();
        assert_eq!(seen, first_inode);
        assert_eq!(std::fs::metadata("/proc/thread-self/ns/net").unwrap().ino(), home);
    }
}
