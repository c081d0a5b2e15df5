//! Where the harness keeps its own scratch trees (episode workspaces, evaluator copies, the
//! sandboxes' `/etc`), and how trees left by killed processes are found and removed.
//!
//! Scratch directories are named `<prefix><pid>-<random>`, the pid being the owner's: a
//! process killed with SIGKILL cannot remove its own, so the next one removes those whose
//! owner no longer exists.

use std::path::{Path, PathBuf};

/// `/dev/shm` and the bytes available on it, when it is a tmpfs this process may write to and
/// execute from (sandboxes see scratch files through bind mounts, which keep `noexec`).
/// Creating and deleting many small files costs far less CPU there than on a disk file
/// system.
pub fn memory_scratch() -> Option<(PathBuf, u64)> {
    const TMPFS_MAGIC: i64 = 0x0102_1994;
    let dir = Path::new("/dev/shm");
    let path = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes()).ok()?;
    // SAFETY: statfs/statvfs/access on a NUL-terminated path; the structs are plain
    // out-parameters.
    unsafe {
        let mut fs: libc::statfs = std::mem::zeroed();
        let mut vfs: libc::statvfs = std::mem::zeroed();
        if libc::statfs(path.as_ptr(), &mut fs) != 0 || libc::statvfs(path.as_ptr(), &mut vfs) != 0 {
            return None;
        }
        let usable = fs.f_type as i64 == TMPFS_MAGIC
            && vfs.f_flag & libc::ST_NOEXEC == 0
            && vfs.f_flag & libc::ST_RDONLY == 0
            && libc::access(path.as_ptr(), libc::W_OK | libc::X_OK) == 0;
        usable.then(|| (dir.to_path_buf(), vfs.f_bavail as u64 * vfs.f_frsize as u64))
    }
}

/// Where the harness puts small scratch trees of its own: [`memory_scratch`]'s directory when
/// there is one, else the system's temporary directory.
pub(crate) fn parent() -> PathBuf {
    memory_scratch().map_or_else(std::env::temp_dir, |(dir, _)| dir)
}

/// The owner's pid in a scratch directory name `<prefix><pid>-<random>` (`None` for any other
/// name).
pub fn owner_pid(name: &str, prefix: &str) -> Option<u32> {
    let (pid, random) = name.strip_prefix(prefix)?.split_once('-')?;
    (!random.is_empty()).then_some(())?;
    pid.parse().ok()
}

/// Removes the `<prefix><pid>-*` directories under `parent` whose owner process is gone; best
/// effort (anything unreadable is left alone).
pub fn remove_dead_owners(parent: &Path, prefix: &str) {
    let Ok(entries) = std::fs::read_dir(parent) else { return };
    for entry in entries.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|name| owner_pid(name, prefix)) else { continue };
        if Path::new("/proc").join(pid.to_string()).exists() {
            continue;
        }
        if let Err(e) = std::fs::remove_dir_all(entry.path()) {
            tracing::debug!("cannot remove the stale scratch directory {}: {e}", entry.path().display());
        }
    }
}

/// Removes the cgroups of runners that no longer exist, wherever this runner makes its own
/// (docs/decisions.md "Sandbox: leftovers of killed runners"); best effort. Returns how many
/// groups were removed.
pub fn remove_dead_runners_cgroups() -> usize {
    crate::cgroup::remove_dead_runners_groups()
}

/// The directories this runner makes its cgroups in (`pids`, `memory`, `freezer` parents),
/// where [`remove_dead_runners_cgroups`] looks; empty where no controller is usable.
pub fn runner_cgroup_parents() -> Vec<PathBuf> {
    crate::cgroup::group_parents()
}
