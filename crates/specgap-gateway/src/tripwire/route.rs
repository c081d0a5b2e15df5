//! Makes every address local in a network namespace ("AnyIP": a `local` route for the whole
//! address space on `lo`, what `ip route add local 0.0.0.0/0 dev lo table local` does), so
//! that a connection to any address reaches the tripwire's listeners instead of failing with
//! "network unreachable" before anything could be recorded. One rtnetlink request per route
//! (RFC 3549; `linux/rtnetlink.h`), made from a thread inside the namespace.

use std::io;
use std::os::fd::{AsRawFd as _, FromRawFd as _, OwnedFd};

/// Whether to add or remove the routes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Change {
    Add,
    Remove,
}

/// Adds (or removes) the local routes for `0.0.0.0/0` and `::/0` on `lo` in the calling
/// thread's network namespace. An IPv6 failure (IPv6 off) is ignored; the IPv4 one is the
/// error. Adding a route that is already there, or removing one that is not, succeeds.
pub(super) fn any_address_local(change: Change) -> io::Result<()> {
    let lo = lo_index()?;
    let v4 = request(change, libc::AF_INET as u8, lo);
    let _ = request(change, libc::AF_INET6 as u8, lo);
    v4
}

fn lo_index() -> io::Result<u32> {
    // SAFETY: a NUL-terminated name; if_nametoindex reads it only.
    let index = unsafe { libc::if_nametoindex(c"lo".as_ptr()) };
    if index == 0 { Err(io::Error::last_os_error()) } else { Ok(index) }
}

fn request(change: Change, family: u8, oif: u32) -> io::Result<()> {
    // SAFETY: a new netlink socket, owned right away.
    let fd = unsafe { libc::socket(libc::AF_NETLINK, libc::SOCK_RAW | libc::SOCK_CLOEXEC, libc::NETLINK_ROUTE) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` is ours alone.
    let socket = unsafe { OwnedFd::from_raw_fd(fd) };
    let message = route_message(change, family, oif);
    // SAFETY: sending a buffer we own to the kernel (destination: the socket's default, pid 0).
    let sent = unsafe { libc::send(socket.as_raw_fd(), message.as_ptr().cast(), message.len(), 0) };
    if sent < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut reply = [0u8; 1024];
    // SAFETY: receiving into a buffer we own, at most its length.
    let got = unsafe { libc::recv(socket.as_raw_fd(), reply.as_mut_ptr().cast(), reply.len(), 0) };
    if got < 0 {
        return Err(io::Error::last_os_error());
    }
    let reply = &reply[..usize::try_from(got).unwrap_or(0)];
    match ack_errno(reply) {
        Some(0) => Ok(()),
        Some(errno) if change == Change::Add && errno == libc::EEXIST => Ok(()),
        Some(errno) if change == Change::Remove && (errno == libc::ESRCH || errno == libc::ENOENT) => Ok(()),
        Some(errno) => Err(io::Error::from_raw_os_error(errno)),
        None => Err(io::Error::other("rtnetlink answered without an acknowledgement")),
    }
}

/// `nlmsghdr` + `rtmsg` + `RTA_OIF`: a local, host-scope route for the whole address space of
/// `family` in the local table.
fn route_message(change: Change, family: u8, oif: u32) -> Vec<u8> {
    let (kind, flags) = match change {
        Change::Add => (libc::RTM_NEWROUTE, libc::NLM_F_REQUEST | libc::NLM_F_ACK | libc::NLM_F_CREATE | libc::NLM_F_EXCL),
        Change::Remove => (libc::RTM_DELROUTE, libc::NLM_F_REQUEST | libc::NLM_F_ACK),
    };
    let mut m = Vec::with_capacity(36);
    m.extend_from_slice(&36u32.to_ne_bytes()); // total length
    m.extend_from_slice(&kind.to_ne_bytes());
    m.extend_from_slice(&(flags as u16).to_ne_bytes());
    m.extend_from_slice(&1u32.to_ne_bytes()); // sequence number
    m.extend_from_slice(&0u32.to_ne_bytes()); // port id: the kernel fills it in
    m.extend_from_slice(&[
        family,
        0, // destination prefix length: the whole space
        0,
        0,
        libc::RT_TABLE_LOCAL,
        libc::RTPROT_BOOT,
        libc::RT_SCOPE_HOST,
        libc::RTN_LOCAL,
    ]);
    m.extend_from_slice(&0u32.to_ne_bytes()); // rtm_flags
    m.extend_from_slice(&8u16.to_ne_bytes()); // rtattr length
    m.extend_from_slice(&libc::RTA_OIF.to_ne_bytes());
    m.extend_from_slice(&oif.to_ne_bytes());
    m
}

/// The errno of an `NLMSG_ERROR` acknowledgement (0 for success).
fn ack_errno(reply: &[u8]) -> Option<i32> {
    let kind = u16::from_ne_bytes([*reply.get(4)?, *reply.get(5)?]);
    if i32::from(kind) != libc::NLMSG_ERROR {
        return None;
    }
    let error = i32::from_ne_bytes(reply.get(16..20)?.try_into().ok()?);
    Some(-error)
}
