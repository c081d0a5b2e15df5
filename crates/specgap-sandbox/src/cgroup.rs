//! Per-command cgroup-v1 groups for the process and memory limits (DESIGN §3.2).
//!
//! rlimits do not bind a process tree whose host uid is 0, so the process limit uses the
//! cgroup-v1 `pids` controller and the memory limit the `memory` controller. Each command gets
//! its own group under the harness's own group of that controller; the spawned child moves
//! itself in before it execs (so no early fork escapes), and afterwards every process still in
//! the group is killed and the group removed. Where a controller is missing or not writable
//! the limit is skipped with a one-time warning.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

const CGROUP_ROOT: &str = "/sys/fs/cgroup";

static PIDS_WARNED: AtomicBool = AtomicBool::new(false);
static MEMORY_WARNED: AtomicBool = AtomicBool::new(false);
static FREEZER_WARNED: AtomicBool = AtomicBool::new(false);
static SEQUENCE: AtomicU64 = AtomicU64::new(0);

/// The groups of one command; removed (after killing their members) on drop.
#[derive(Debug, Default)]
pub(crate) struct Cgroups {
    pids: Option<PathBuf>,
    memory: Option<PathBuf>,
    /// A `freezer` group, only for sandboxes that ask for one ([`Cgroups::add_freezer`]).
    freezer: Option<PathBuf>,
}

impl Cgroups {
    /// Creates the groups when a limit is asked for: a `pids` group (which also finds every
    /// process to kill at the end) with `pids.max` = `max_processes` or `max`, and a `memory`
    /// group when `memory_bytes` is given. Without any limit nothing is created: joining a
    /// cgroup-v1 group costs the child an RCU grace period (about 4 ms measured here), and the
    /// sandbox's PID namespace already takes every process down with the command.
    pub(crate) fn create(max_processes: Option<u32>, memory_bytes: Option<u64>) -> Cgroups {
        if max_processes.is_none() && memory_bytes.is_none() {
            return Cgroups::default();
        }
        let name = format!("specgap-{}-{}", std::process::id(), SEQUENCE.fetch_add(1, Ordering::Relaxed));
        let pids_limit = max_processes.map_or_else(|| "max".to_string(), |n| n.to_string());
        let pids = make_group("pids", &name, &[("pids.max", pids_limit)], &PIDS_WARNED, max_processes.is_some());
        let memory = memory_bytes.and_then(|bytes| {
            let limits = [("memory.limit_in_bytes", bytes.to_string())];
            let group = make_group("memory", &name, &limits, &MEMORY_WARNED, true)?;
            // Without swap accounting this file is absent; the limit above still holds RAM.
            let _ = std::fs::write(group.join("memory.memsw.limit_in_bytes"), bytes.to_string());
            let _ = std::fs::write(group.join("memory.swappiness"), "0");
            Some(group)
        });
        Cgroups { pids, memory, freezer: None }
    }

    /// Adds a `freezer` group (cgroup v1), so that [`Cgroups::freeze`] can stop every process
    /// of the sandbox at once (an external agent's sandbox: its workspace is copied while
    /// nothing in it runs). Call before the child joins. Without the controller nothing is
    /// added (a one-time warning); callers then stop processes with signals.
    pub(crate) fn add_freezer(&mut self) {
        let name = format!("specgap-{}-{}", std::process::id(), SEQUENCE.fetch_add(1, Ordering::Relaxed));
        self.freezer = make_group("freezer", &name, &[], &FREEZER_WARNED, true);
    }

    /// Whether there is a `freezer` group.
    pub(crate) fn has_freezer(&self) -> bool {
        self.freezer.is_some()
    }

    /// Freezes (`FROZEN`) or thaws (`THAWED`) every process of the `freezer` group and waits
    /// (at most 5 s) until the kernel reports the new state. Returns whether it got there;
    /// `false` without a group.
    pub(crate) fn set_frozen(&self, frozen: bool) -> bool {
        let Some(group) = &self.freezer else { return false };
        let state = if frozen { "FROZEN" } else { "THAWED" };
        let file = group.join("freezer.state");
        if let Err(e) = std::fs::write(&file, state) {
            tracing::warn!("cannot write {state} to {}: {e}", file.display());
            return false;
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        let mut pause = Duration::from_micros(50);
        loop {
            match std::fs::read_to_string(&file) {
                Ok(now) if now.trim() == state => return true,
                Ok(_) if Instant::now() < deadline => {
                    // FREEZING: some task has not stopped yet; writing again retries it.
                    let _ = std::fs::write(&file, state);
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(Duration::from_millis(10));
                }
                _ => return false,
            }
        }
    }

    /// The processes of the `pids` group (host pids), `None` without one.
    pub(crate) fn members(&self) -> Option<Vec<i32>> {
        self.pids.as_deref().map(members)
    }

    /// The `cgroup.procs` files the child writes its pid into before exec.
    pub(crate) fn procs_files(&self) -> Vec<CString> {
        [&self.pids, &self.memory, &self.freezer]
            .into_iter()
            .flatten()
            .filter_map(|group| CString::new(group.join("cgroup.procs").as_os_str().as_bytes()).ok())
            .collect()
    }

    /// Moves process `pid` (one that has not forked yet) into the groups. A failure leaves it
    /// outside, without that limit, and is logged.
    pub(crate) fn join(&self, pid: libc::pid_t) {
        for group in [&self.pids, &self.memory, &self.freezer].into_iter().flatten() {
            if let Err(e) = std::fs::write(group.join("cgroup.procs"), pid.to_string()) {
                tracing::warn!("cannot move process {pid} into {}: {e}", group.display());
            }
        }
    }

    /// Whether the memory controller had to kill a process of the group for lack of memory.
    pub(crate) fn memory_exceeded(&self) -> bool {
        self.oom_kills() > 0
    }

    /// How many processes the memory controller has killed in the group so far (0 without a
    /// memory group).
    pub(crate) fn oom_kills(&self) -> u64 {
        let Some(group) = &self.memory else { return 0 };
        let Ok(text) = std::fs::read_to_string(group.join("memory.oom_control")) else { return 0 };
        text.lines().filter_map(|line| line.strip_prefix("oom_kill ")).find_map(|count| count.trim().parse().ok()).unwrap_or(0)
    }

    /// The number of processes in the `pids` group, `None` without one.
    pub(crate) fn member_count(&self) -> Option<usize> {
        self.pids.as_deref().map(|group| members(group).len())
    }

    /// Kills every process left in the groups, waits (bounded) until they are gone, removes the
    /// groups.
    /// Returns whether the `pids` group was there and is now empty: every process of the
    /// command is known to be gone.
    pub(crate) fn kill_and_remove(&mut self) -> bool {
        let had_pids = self.pids.is_some();
        let mut emptied = true;
        // Frozen processes cannot die: thaw first, so the SIGKILLs below take effect.
        if self.freezer.is_some() {
            self.set_frozen(false);
        }
        for group in [self.pids.take(), self.memory.take(), self.freezer.take()].into_iter().flatten() {
            emptied &= kill_members(&group);
            remove_group(&group);
        }
        had_pids && emptied
    }

    /// Whether there is a `pids` group (which tells when every process of the command is gone).
    pub(crate) fn has_pids(&self) -> bool {
        self.pids.is_some()
    }
}

impl Drop for Cgroups {
    fn drop(&mut self) {
        let _ = self.kill_and_remove();
    }
}

fn make_group(controller: &str, name: &str, settings: &[(&str, String)], warned: &AtomicBool, wanted: bool) -> Option<PathBuf> {
    let result = (|| -> std::io::Result<PathBuf> {
        let parent = own_group(controller);
        let group = parent.join(name);
        std::fs::create_dir(&group)?;
        for (file, value) in settings {
            if let Err(e) = std::fs::write(group.join(file), value) {
                let _ = std::fs::remove_dir(&group);
                return Err(e);
            }
        }
        Ok(group)
    })();
    match result {
        Ok(group) => Some(group),
        Err(e) => {
            if wanted && !warned.swap(true, Ordering::Relaxed) {
                tracing::warn!(
                    "cgroup-v1 `{controller}` controller unavailable under {CGROUP_ROOT} ({e}); sandboxed commands run without the {controller} limit"
                );
            }
            None
        }
    }
}

/// The harness's own group of `controller` (from `/proc/self/cgroup`), falling back to the
/// controller's root.
fn own_group(controller: &str) -> PathBuf {
    let root = Path::new(CGROUP_ROOT).join(controller);
    let Ok(text) = std::fs::read_to_string("/proc/self/cgroup") else { return root };
    for line in text.lines() {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = (parts.next(), parts.next().unwrap_or(""), parts.next().unwrap_or(""));
        if controllers.split(',').any(|c| c == controller) {
            let candidate = root.join(path.trim_start_matches('/'));
            if candidate.is_dir() {
                return candidate;
            }
        }
    }
    root
}

fn members(group: &Path) -> Vec<i32> {
    std::fs::read_to_string(group.join("cgroup.procs"))
        .map(|text| text.lines().filter_map(|l| l.trim().parse().ok()).collect())
        .unwrap_or_default()
}

/// Kills the group's members until none is left (at most 5 s); `true` when it is empty.
fn kill_members(group: &Path) -> bool {
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut pause = Duration::from_micros(50);
    loop {
        let pids = members(group);
        if pids.is_empty() || Instant::now() > deadline {
            if !pids.is_empty() {
                tracing::warn!("processes {pids:?} in {} survived SIGKILL for 5 s", group.display());
            }
            return pids.is_empty();
        }
        for pid in pids {
            // SAFETY: kill(2) with a pid read from our own cgroup; no memory is touched.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
            }
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(20));
    }
}

fn remove_group(group: &Path) {
    // A group whose last process just exited can stay busy for a moment.
    let deadline = Instant::now() + Duration::from_secs(2);
    let mut pause = Duration::from_micros(50);
    loop {
        match std::fs::remove_dir(group) {
            Ok(()) => return,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return,
            Err(e) if Instant::now() > deadline => {
                tracing::warn!("could not remove cgroup {}: {e}", group.display());
                return;
            }
            Err(_) => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(20));
            }
        }
    }
}
