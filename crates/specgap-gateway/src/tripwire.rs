//! The **network tripwire** (issue 15): a record of every attempt an agent inside an
//! episode's network namespace makes to reach anything but the model gateway.
//!
//! The namespace has nothing but loopback, so no attempt can reach the network either way;
//! without a tripwire an attempt simply fails (no resolver, no route) and nothing says it was
//! made. [`Tripwire::arm_in`] puts, inside the namespace:
//!
//! * a DNS responder on UDP [`RESOLVER`]`:53` (the sandbox's `/etc/resolv.conf` names it)
//!   that answers every A question with [`TRAP_ADDRESS`], every other type (AAAA, HTTPS, …)
//!   with no record, so clients fall back to IPv4, and records each question;
//! * TCP listeners on the unspecified address (IPv6 dual-stack where IPv6 is on, else IPv4)
//!   at each of [`TRAP_PORTS`], which record each connection (the address and port it was
//!   made to, and, from its first bytes, a TLS ClientHello's server name or an HTTP request's
//!   `Host`) and close it without sending anything;
//! * a `local` route for the whole IPv4 (and IPv6) address space on `lo`, so a connection to
//!   any address — `203.0.113.5:443` as well as a name that resolved to [`TRAP_ADDRESS`] —
//!   ends at those listeners instead of failing as unreachable. A connection to a port
//!   without a listener is refused by the namespace's kernel and is not recorded; if the
//!   route cannot be added, only names (and [`TRAP_ADDRESS`]) are caught
//!   ([`Tripwire::catches_any_address`]).
//!
//! Nothing is ever sent back but DNS answers, and nothing the tripwire does opens a
//! connection of its own: its sockets are created inside the namespace (on a short-lived
//! thread, as [`crate::netns`] does) and served from a harness thread in the harness's
//! namespace. Binding ports below 1024 and changing routes need root (`CAP_NET_BIND_SERVICE`,
//! `CAP_NET_ADMIN` over the namespace), as entering the namespace does.
//!
//! [`Tripwire::disarm`] closes every socket and removes the route; call it once no process of
//! the sandbox is left and before the namespace is handed to another sandbox, so the next
//! sandbox finds the namespace as it was. [`Tripwire::attempts`] gives the record, in the
//! order the attempts arrived.

mod dns;
mod route;
mod sniff;

use std::fs::File;
use std::io::{self, Read as _};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::os::fd::{AsRawFd, RawFd};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::error::GatewayError;

/// Where the DNS responder listens (the sandbox's `nameserver`).
pub const RESOLVER: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 53);
/// The address every A question is answered with.
pub const TRAP_ADDRESS: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 2);
/// The TCP ports with a listener: HTTP(S), their usual alternatives, proxies, SSH and git.
pub const TRAP_PORTS: &[u16] = &[22, 80, 443, 3128, 8000, 8080, 8443, 9418];
/// How long a trapped connection may take to send its first bytes (a client that waits for
/// the server to speak first is closed after this).
const FIRST_BYTES_WAIT: Duration = Duration::from_secs(2);
/// How often the serving thread looks at its stop flag.
const POLL_MS: i32 = 50;

/// One attempt to reach something other than the gateway.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NetworkAttempt {
    /// `dns` or `tcp`.
    pub protocol: AttemptProtocol,
    /// The name looked up (DNS; lowercase, without the final dot).
    pub name: Option<String>,
    /// The record type asked for (DNS: `A`, `AAAA`, `HTTPS`, `TYPE<n>`).
    pub record_type: Option<String>,
    /// The address the attempt went to: the responder's for DNS, the destination for TCP.
    pub address: IpAddr,
    /// The port it went to.
    pub port: u16,
    /// The server name of a TLS ClientHello sent on the connection.
    pub sni: Option<String>,
    /// The `Host` of an HTTP request sent on the connection.
    pub http_host: Option<String>,
}

/// How an attempt was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttemptProtocol {
    /// A DNS question to the responder.
    Dns,
    /// A TCP connection to a trapped port.
    Tcp,
}

impl AttemptProtocol {
    /// `dns` or `tcp`.
    pub fn as_str(self) -> &'static str {
        match self {
            AttemptProtocol::Dns => "dns",
            AttemptProtocol::Tcp => "tcp",
        }
    }
}

/// An armed tripwire (module guide). Dropping it disarms it.
#[derive(Debug)]
pub struct Tripwire {
    namespace: File,
    stop: Arc<AtomicBool>,
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
    attempts: Arc<Mutex<Vec<Arrival>>>,
    any_address: bool,
}

/// An attempt as the serving thread keeps it: when it arrived, and whether its record is
/// complete (a TCP connection's first bytes read, or given up on).
#[derive(Debug, Clone)]
struct Arrival {
    attempt: NetworkAttempt,
    at: Instant,
    settled: bool,
}

/// The sockets made inside the namespace.
struct Sockets {
    dns: UdpSocket,
    listeners: Vec<TcpListener>,
    any_address: bool,
}

impl Tripwire {
    /// Arms a tripwire in the network namespace `namespace` (an open namespace file).
    ///
    /// # Errors
    /// [`GatewayError::Tripwire`] when the namespace cannot be entered or the responder or a
    /// listener not bound there (not root; a port already taken), and
    /// [`GatewayError::Runtime`] when the serving thread cannot be started.
    pub fn arm_in(namespace: &File) -> Result<Tripwire, GatewayError> {
        let label = format!("fd:{}", namespace.as_raw_fd());
        let error = |source| GatewayError::Tripwire { path: label.clone().into(), source };
        let namespace = namespace.try_clone().map_err(error)?;
        let sockets = inside(&namespace, bind_sockets).map_err(error)?.map_err(error)?;
        let attempts = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let any_address = sockets.any_address;
        let serving = Serving { sockets, attempts: attempts.clone(), stop: stop.clone(), pending: Vec::new() };
        let thread =
            std::thread::Builder::new().name("specgap-tripwire".into()).spawn(move || serving.run()).map_err(GatewayError::Runtime)?;
        Ok(Tripwire { namespace, stop, thread: Mutex::new(Some(thread)), attempts, any_address })
    }

    /// Arms a tripwire in the namespace at `path` (`/proc/<pid>/ns/net`, `/run/netns/<name>`).
    ///
    /// # Errors
    /// As [`Tripwire::arm_in`], naming the path.
    pub fn arm_in_path(path: &Path) -> Result<Tripwire, GatewayError> {
        let namespace = File::open(path).map_err(|source| GatewayError::Tripwire { path: path.to_path_buf(), source })?;
        Tripwire::arm_in(&namespace).map_err(|e| match e {
            GatewayError::Tripwire { source, .. } => GatewayError::Tripwire { path: path.to_path_buf(), source },
            other => other,
        })
    }

    /// Whether a connection to any address is caught (the local route is in place), not only
    /// one to a name the responder answered.
    pub fn catches_any_address(&self) -> bool {
        self.any_address
    }

    /// The attempts recorded so far, in the order they arrived.
    pub fn attempts(&self) -> Vec<NetworkAttempt> {
        self.attempts.lock().unwrap_or_else(PoisonError::into_inner).iter().map(|a| a.attempt.clone()).collect()
    }

    /// The complete records from the `from`-th attempt on (0-based, in arrival order), each with
    /// the moment it arrived, up to the first one still incomplete (a TCP connection whose
    /// first bytes are awaited, for at most 2 s): so a caller that takes them as they come, with
    /// `from` = how many it has, gets every attempt once, in order, with its SNI or `Host`.
    /// After [`Tripwire::disarm`] every record is complete.
    pub fn settled_since(&self, from: usize) -> Vec<(Instant, NetworkAttempt)> {
        let arrivals = self.attempts.lock().unwrap_or_else(PoisonError::into_inner);
        arrivals.iter().skip(from).take_while(|a| a.settled).map(|a| (a.at, a.attempt.clone())).collect()
    }

    /// Stops serving, closes every socket (connections still being read are recorded with
    /// what arrived) and removes the route. Idempotent.
    pub fn disarm(&self) {
        let thread = self.thread.lock().unwrap_or_else(PoisonError::into_inner).take();
        let Some(thread) = thread else { return };
        self.stop.store(true, Ordering::SeqCst);
        let _ = thread.join();
        if self.any_address {
            match inside(&self.namespace, || route::any_address_local(route::Change::Remove)) {
                Ok(Ok(())) => {}
                Ok(Err(e)) | Err(e) => tracing::warn!("cannot remove the tripwire's route: {e}"),
            }
        }
    }
}

impl Drop for Tripwire {
    fn drop(&mut self) {
        self.disarm();
    }
}

/// Runs `work` on a short-lived thread inside `namespace`.
fn inside<T: Send + 'static>(namespace: &File, work: impl FnOnce() -> T + Send + 'static) -> io::Result<T> {
    let namespace = namespace.try_clone()?;
    std::thread::Builder::new()
        .name("specgap-tripwire-netns".into())
        .spawn(move || -> io::Result<T> {
            // SAFETY: setns of this thread only, into a namespace file we hold open; the thread
            // ends right after `work`, so nothing else ever runs inside the namespace.
            if unsafe { libc::setns(namespace.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(work())
        })?
        .join()
        .map_err(|_| io::Error::other("the namespace thread panicked"))?
}

/// Binds the responder and the listeners (on the namespace's thread) and adds the route.
fn bind_sockets() -> io::Result<Sockets> {
    let any_address = match route::any_address_local(route::Change::Add) {
        Ok(()) => true,
        Err(e) => {
            tracing::debug!("the tripwire catches names only: cannot add the local route: {e}");
            false
        }
    };
    let dns = UdpSocket::bind((RESOLVER, 53))?;
    dns.set_nonblocking(true)?;
    let mut listeners = Vec::new();
    for port in TRAP_PORTS {
        let listener = TcpListener::bind((Ipv6Addr::UNSPECIFIED, *port)).or_else(|_| TcpListener::bind((Ipv4Addr::UNSPECIFIED, *port)))?;
        listener.set_nonblocking(true)?;
        listeners.push(listener);
    }
    Ok(Sockets { dns, listeners, any_address })
}

/// The serving thread's state.
struct Serving {
    sockets: Sockets,
    attempts: Arc<Mutex<Vec<Arrival>>>,
    stop: Arc<AtomicBool>,
    /// Connections whose first bytes are still awaited: the stream, the index of its record,
    /// what arrived, and until when it may take.
    pending: Vec<(TcpStream, usize, Vec<u8>, Instant)>,
}

impl Serving {
    fn run(mut self) {
        while !self.stop.load(Ordering::SeqCst) {
            let mut fds: Vec<libc::pollfd> = std::iter::once(self.sockets.dns.as_raw_fd())
                .chain(self.sockets.listeners.iter().map(AsRawFd::as_raw_fd))
                .chain(self.pending.iter().map(|(s, ..)| s.as_raw_fd()))
                .map(|fd: RawFd| libc::pollfd { fd, events: libc::POLLIN, revents: 0 })
                .collect();
            // SAFETY: `fds` is a live array of pollfd of its stated length.
            let ready = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, POLL_MS) };
            if ready < 0 {
                let e = io::Error::last_os_error();
                if e.kind() != io::ErrorKind::Interrupted {
                    tracing::warn!("the tripwire stops serving: {e}");
                    break;
                }
            }
            self.answer_dns();
            self.accept();
            self.read_pending(false);
        }
        self.read_pending(true);
    }

    /// Records an attempt (complete unless its first bytes are still to be read).
    fn record(&self, attempt: NetworkAttempt, settled: bool) -> usize {
        let mut attempts = self.attempts.lock().unwrap_or_else(PoisonError::into_inner);
        attempts.push(Arrival { attempt, at: Instant::now(), settled });
        attempts.len() - 1
    }

    fn answer_dns(&mut self) {
        let mut buf = [0u8; 4096];
        while let Ok((len, peer)) = self.sockets.dns.recv_from(&mut buf) {
            let query = &buf[..len];
            if let Some(question) = dns::question(query) {
                self.record(
                    NetworkAttempt {
                        protocol: AttemptProtocol::Dns,
                        name: Some(question.name),
                        record_type: Some(dns::type_name(question.record_type)),
                        address: IpAddr::V4(RESOLVER),
                        port: 53,
                        sni: None,
                        http_host: None,
                    },
                    true,
                );
            }
            if let Some(reply) = dns::answer(query, TRAP_ADDRESS) {
                let _ = self.sockets.dns.send_to(&reply, peer);
            }
        }
    }

    fn accept(&mut self) {
        let mut accepted = Vec::new();
        for listener in &self.sockets.listeners {
            while let Ok((stream, _peer)) = listener.accept() {
                accepted.push(stream);
            }
        }
        for stream in accepted {
            let Ok(local) = stream.local_addr() else { continue };
            let _ = stream.set_nonblocking(true);
            let index = self.record(
                NetworkAttempt {
                    protocol: AttemptProtocol::Tcp,
                    name: None,
                    record_type: None,
                    address: plain_ip(local),
                    port: local.port(),
                    sni: None,
                    http_host: None,
                },
                false,
            );
            self.pending.push((stream, index, Vec::new(), Instant::now() + FIRST_BYTES_WAIT));
        }
    }

    /// Reads what arrived on each pending connection; closes those that told all they will
    /// (all of them when `closing`).
    fn read_pending(&mut self, closing: bool) {
        let now = Instant::now();
        let mut still = Vec::new();
        for (mut stream, index, mut bytes, until) in std::mem::take(&mut self.pending) {
            let mut closed = closing || now >= until;
            let mut chunk = [0u8; 4096];
            loop {
                match stream.read(&mut chunk) {
                    Ok(0) => {
                        closed = true;
                        break;
                    }
                    Ok(n) => bytes.extend_from_slice(&chunk[..n]),
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(_) => {
                        closed = true;
                        break;
                    }
                }
                if bytes.len() >= sniff::MAX_BYTES {
                    break;
                }
            }
            match sniff::sniff(&bytes, closed) {
                sniff::Sniffed::NeedMore => still.push((stream, index, bytes, until)),
                sniff::Sniffed::Done { sni, http_host } => {
                    let mut attempts = self.attempts.lock().unwrap_or_else(PoisonError::into_inner);
                    if let Some(arrival) = attempts.get_mut(index) {
                        arrival.attempt.sni = sni;
                        arrival.attempt.http_host = http_host;
                        arrival.settled = true;
                    }
                    drop(attempts);
                    let _ = stream.shutdown(std::net::Shutdown::Both);
                }
            }
        }
        self.pending = still;
    }
}

/// An address as the client named it: an IPv4-mapped IPv6 address (a dual-stack listener's
/// view of an IPv4 connection) as IPv4.
fn plain_ip(address: SocketAddr) -> IpAddr {
    match address.ip() {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4),
        v4 => v4,
    }
}
