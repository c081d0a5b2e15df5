//! `DIR/runner.lock`: which process runs episodes into a store right now.
//!
//! `specgap run` holds an exclusive `flock` on this file for as long as it runs; the kernel
//! drops it when the process ends however it ends (even SIGKILL). A second runner on the same
//! store is refused instead of running the same episodes twice, and readers (`show`) can tell
//! an episode that is running from one whose runner died (it stays `running` in the database
//! until `--resume`).

use std::io::{Read, Seek, Write};
use std::os::fd::AsRawFd;
use std::path::Path;

use crate::error::StoreError;

/// File name of the lock in the run directory.
pub const RUNNER_LOCK: &str = "runner.lock";

/// The lock held by the process running episodes into a store; released on drop.
#[derive(Debug)]
pub struct RunnerLock {
    _file: fs_err::File,
}

/// How long [`lock_runner`] keeps trying a held lock before it refuses: a lock just released
/// can stay held for a moment by a child process that another thread forked at that instant
/// (the child shares the open file until it execs, and `flock` locks belong to the open file),
/// so a runner taking a store right after another one let go could be refused for nothing.
const LOCK_PATIENCE: std::time::Duration = std::time::Duration::from_millis(500);

/// Takes the store's runner lock for this process and writes its pid into the file.
///
/// # Errors
/// [`StoreError::RunnerBusy`] when another live process holds it (with that process's pid when
/// it could be read) for longer than [`LOCK_PATIENCE`]; I/O errors naming the file.
pub fn lock_runner(dir: &Path) -> Result<RunnerLock, StoreError> {
    let path = dir.join(RUNNER_LOCK);
    let mut file = fs_err::OpenOptions::new().read(true).write(true).create(true).truncate(false).open(&path)?;
    if !try_lock_patiently(file.file())? {
        let mut text = String::new();
        let _ = file.read_to_string(&mut text);
        return Err(StoreError::RunnerBusy { dir: dir.to_path_buf(), pid: text.trim().parse().ok() });
    }
    file.set_len(0)?;
    file.rewind()?;
    file.write_all(format!("{}\n", std::process::id()).as_bytes())?;
    Ok(RunnerLock { _file: file })
}

/// Whether a live process holds the store's runner lock (`false` without a lock file).
///
/// # Errors
/// I/O errors other than a missing file.
pub fn runner_alive(dir: &Path) -> Result<bool, StoreError> {
    let file = match fs_err::File::open(dir.join(RUNNER_LOCK)) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(e.into()),
    };
    // Taking the lock (and letting it go with the file) succeeds only when nobody holds it.
    Ok(!try_lock(file.file())?)
}

/// `flock(LOCK_EX | LOCK_NB)`: `true` when taken, `false` when another holder has it.
/// [`try_lock`], retried every 10 ms for [`LOCK_PATIENCE`].
fn try_lock_patiently(file: &std::fs::File) -> Result<bool, StoreError> {
    let until = std::time::Instant::now() + LOCK_PATIENCE;
    loop {
        if try_lock(file)? {
            return Ok(true);
        }
        if std::time::Instant::now() >= until {
            return Ok(false);
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

fn try_lock(file: &std::fs::File) -> Result<bool, StoreError> {
    // SAFETY: flock on an fd the caller holds open.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
        return Ok(true);
    }
    let err = std::io::Error::last_os_error();
    if err.kind() == std::io::ErrorKind::WouldBlock { Ok(false) } else { Err(StoreError::Io(err)) }
}
