//! Starting bubblewrap without forking the harness.
//!
//! `fork` of the multi-threaded harness copies its page tables and makes all its memory
//! copy-on-write until the child execs; measured here, that was the largest single cost of a
//! short episode after bubblewrap itself. [`spawn`] uses `posix_spawn` instead (glibc:
//! `clone(CLONE_VM | CLONE_VFORK)`, no copy), and gets everything `Command::pre_exec` did from
//! the spawn's own file actions and attributes: the fds the child needs duplicated to fixed
//! numbers, every other fd closed, its own process group, default signal dispositions and an
//! empty signal mask. Joining the cgroups, which must happen before the child can fork, is
//! left to the caller: bubblewrap reads its argument list from a pipe before it does anything
//! else, so the caller moves it into its cgroups first and writes the arguments after.

use std::collections::BTreeMap;
use std::ffi::CString;
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::ExitStatus;

/// What one of the child's standard streams is connected to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stdio {
    /// `/dev/null`.
    Null,
    /// A new pipe; the harness's end is in [`Spawned`].
    Piped,
}

/// A process to start: the program (an absolute path), its arguments after `argv[0]`, its
/// whole environment, the fds to hand it (`(harness fd, child fd)`, child fds below 10), and
/// its standard streams.
pub(crate) struct SpawnRequest<'a> {
    pub program: &'a Path,
    pub args: &'a [Vec<u8>],
    pub env: &'a BTreeMap<String, String>,
    pub fds: &'a [(RawFd, RawFd)],
    pub stdin: Stdio,
    pub stdout: Stdio,
    pub stderr: Stdio,
}

/// A started child: its pid (also its process group) and the harness's ends of its piped
/// streams. It is not reaped on drop; call [`Spawned::wait`].
#[derive(Debug)]
pub(crate) struct Spawned {
    pid: libc::pid_t,
    status: Option<ExitStatus>,
    pub stdin: Option<File>,
    pub stdout: Option<File>,
    pub stderr: Option<File>,
}

/// The lowest fd number the child's handed fds are moved to before the file actions run, so
/// that no source of one `dup2` is the target of another.
const FIRST_HIGH_FD: RawFd = 10;

/// Starts `request` with `posix_spawn`.
///
/// # Errors
/// An argument or environment entry with a NUL byte (`InvalidInput`), or what `posix_spawn`
/// reports (for example `ENOENT` for a missing program).
pub(crate) fn spawn(request: &SpawnRequest<'_>) -> io::Result<Spawned> {
    let nul = |_| io::Error::new(io::ErrorKind::InvalidInput, "an argument or environment entry contains a NUL byte");
    let program = CString::new(request.program.as_os_str().as_bytes()).map_err(nul)?;
    let mut argv = vec![program.clone()];
    for arg in request.args {
        argv.push(CString::new(arg.as_slice()).map_err(nul)?);
    }
    let envp: Vec<CString> = request.env.iter().map(|(k, v)| CString::new(format!("{k}={v}")).map_err(nul)).collect::<Result<_, _>>()?;

    // Harness-side copies above every child fd number, close-on-exec; the child gets them
    // only through the dup2 actions below.
    let mut handed: Vec<(OwnedFd, RawFd)> = Vec::new();
    for &(from, to) in request.fds {
        handed.push((high_copy(from)?, to));
    }
    let mut ours = [None, None, None];
    for (child_fd, (stdio, reading)) in [(request.stdin, true), (request.stdout, false), (request.stderr, false)].into_iter().enumerate() {
        if stdio == Stdio::Piped {
            let (read, write) = pipe()?;
            let (theirs, mine) = if reading { (read, write) } else { (write, read) };
            handed.push((high_copy(theirs.as_raw_fd())?, child_fd as RawFd));
            ours[child_fd] = Some(File::from(mine));
        }
    }
    let null = c"/dev/null";
    let pid = posix_spawn(&program, &argv, &envp, &handed, [request.stdin, request.stdout, request.stderr], null)?;
    let [stdin, stdout, stderr] = ours;
    Ok(Spawned { pid, status: None, stdin, stdout, stderr })
}

/// A pipe, both ends close-on-exec: `(read, write)`.
///
/// # Errors
/// What `pipe2` reports.
pub(crate) fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as RawFd; 2];
    // SAFETY: pipe2 fills two fds we take ownership of right after.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both fds were just created and are owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// `fcntl(F_DUPFD_CLOEXEC)` of `fd` at or above [`FIRST_HIGH_FD`].
fn high_copy(fd: RawFd) -> io::Result<OwnedFd> {
    // SAFETY: fcntl on an fd the caller holds; the new fd is owned by the returned value.
    let copy = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, FIRST_HIGH_FD) };
    if copy < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `copy` was just created and nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(copy) })
}

/// The `posix_spawn` call itself, with its file actions and attributes.
fn posix_spawn(
    program: &CString,
    argv: &[CString],
    envp: &[CString],
    handed: &[(OwnedFd, RawFd)],
    stdio: [Stdio; 3],
    null: &std::ffi::CStr,
) -> io::Result<libc::pid_t> {
    let mut argv_ptrs: Vec<*mut libc::c_char> = argv.iter().map(|a| a.as_ptr().cast_mut()).collect();
    argv_ptrs.push(std::ptr::null_mut());
    let mut envp_ptrs: Vec<*mut libc::c_char> = envp.iter().map(|e| e.as_ptr().cast_mut()).collect();
    envp_ptrs.push(std::ptr::null_mut());
    let check = |rc: libc::c_int| if rc == 0 { Ok(()) } else { Err(io::Error::from_raw_os_error(rc)) };
    // SAFETY: the file-action and attribute objects are initialised before use and destroyed
    // on every path; every pointer handed to glibc (paths, argv, envp) outlives the call.
    unsafe {
        let mut actions: libc::posix_spawn_file_actions_t = std::mem::zeroed();
        let mut attrs: libc::posix_spawnattr_t = std::mem::zeroed();
        check(libc::posix_spawn_file_actions_init(&mut actions))?;
        if let Err(e) = check(libc::posix_spawnattr_init(&mut attrs)) {
            libc::posix_spawn_file_actions_destroy(&mut actions);
            return Err(e);
        }
        let result = (|| {
            for (child_fd, stdio) in stdio.into_iter().enumerate() {
                if stdio == Stdio::Null {
                    let flags = if child_fd == 0 { libc::O_RDONLY } else { libc::O_WRONLY };
                    check(libc::posix_spawn_file_actions_addopen(&mut actions, child_fd as libc::c_int, null.as_ptr(), flags, 0))?;
                }
            }
            for (fd, to) in handed {
                check(libc::posix_spawn_file_actions_adddup2(&mut actions, fd.as_raw_fd(), *to))?;
            }
            // Nothing else of the harness reaches the child, close-on-exec or not (where glibc
            // offers it; every fd the harness opens is close-on-exec anyway).
            if let Some(addclosefrom) = addclosefrom_np() {
                check(addclosefrom(&mut actions, FIRST_HIGH_FD))?;
            }
            let flags = libc::POSIX_SPAWN_SETPGROUP | libc::POSIX_SPAWN_SETSIGMASK | libc::POSIX_SPAWN_SETSIGDEF;
            check(libc::posix_spawnattr_setflags(&mut attrs, flags as libc::c_short))?;
            check(libc::posix_spawnattr_setpgroup(&mut attrs, 0))?;
            let mut none: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut none);
            check(libc::posix_spawnattr_setsigmask(&mut attrs, &none))?;
            let mut all: libc::sigset_t = std::mem::zeroed();
            libc::sigfillset(&mut all);
            check(libc::posix_spawnattr_setsigdefault(&mut attrs, &all))?;
            let mut pid: libc::pid_t = 0;
            check(libc::posix_spawn(&mut pid, program.as_ptr(), &actions, &attrs, argv_ptrs.as_ptr(), envp_ptrs.as_ptr()))?;
            Ok(pid)
        })();
        libc::posix_spawn_file_actions_destroy(&mut actions);
        libc::posix_spawnattr_destroy(&mut attrs);
        result
    }
}

/// `posix_spawn_file_actions_addclosefrom_np`, looked up at run time: it came with glibc
/// 2.34, and naming it directly would keep the binary from starting on older systems.
fn addclosefrom_np() -> Option<AddClosefrom> {
    static FOUND: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    let address = *FOUND.get_or_init(|| {
        // SAFETY: dlsym with the default handle and a NUL-terminated name; no library is loaded.
        unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"posix_spawn_file_actions_addclosefrom_np".as_ptr()) as usize }
    });
    // SAFETY: a non-null address of that glibc symbol is a function of exactly this signature
    // (glibc's spawn.h).
    (address != 0).then(|| unsafe { std::mem::transmute::<usize, AddClosefrom>(address) })
}

/// The signature of `posix_spawn_file_actions_addclosefrom_np`.
type AddClosefrom = unsafe extern "C" fn(*mut libc::posix_spawn_file_actions_t, libc::c_int) -> libc::c_int;

impl Spawned {
    /// Takes over a child started by `std::process::Command` (its streams and its reaping).
    pub(crate) fn from_child(mut child: std::process::Child) -> Spawned {
        let file = |fd: Option<OwnedFd>| fd.map(File::from);
        Spawned {
            pid: child.id() as libc::pid_t,
            status: None,
            stdin: file(child.stdin.take().map(OwnedFd::from)),
            stdout: file(child.stdout.take().map(OwnedFd::from)),
            stderr: file(child.stderr.take().map(OwnedFd::from)),
        }
    }

    /// The child's pid, which is also its process group.
    pub(crate) fn id(&self) -> libc::pid_t {
        self.pid
    }

    /// SIGKILL to the child's process group (nothing once it has been reaped).
    pub(crate) fn kill_group(&self) {
        if self.status.is_none() {
            // SAFETY: kill(2) of our own unreaped child's process group; no memory is touched.
            unsafe {
                libc::kill(-self.pid, libc::SIGKILL);
            }
        }
    }

    /// Waits for the child to exit and reaps it (once; later calls return the same status).
    ///
    /// # Errors
    /// What `waitpid` reports.
    pub(crate) fn wait(&mut self) -> io::Result<ExitStatus> {
        if let Some(status) = self.status {
            return Ok(status);
        }
        let mut raw: libc::c_int = 0;
        loop {
            // SAFETY: waitpid on our own child with a plain out-parameter.
            let rc = unsafe { libc::waitpid(self.pid, &mut raw, 0) };
            if rc == self.pid {
                let status = ExitStatus::from_raw(raw);
                self.status = Some(status);
                return Ok(status);
            }
            let err = io::Error::last_os_error();
            if err.kind() != io::ErrorKind::Interrupted {
                return Err(err);
            }
        }
    }
}
