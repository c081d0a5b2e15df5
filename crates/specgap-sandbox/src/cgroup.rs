//! Per-command cgroups for the process and memory limits (DESIGN §3.2), on cgroup v1 or v2.
//!
//! rlimits do not bind a process tree whose host uid is 0, so the process limit uses the
//! `pids` controller and the memory limit the `memory` controller. Where the machine mounts
//! cgroup v1 controllers (`/sys/fs/cgroup/pids`, `/sys/fs/cgroup/memory`) each command gets a
//! group of each under the harness's own group of that controller; where only cgroup v2 is
//! mounted (`/sys/fs/cgroup` itself, or `/sys/fs/cgroup/unified` beside v1 hierarchies that do
//! not hold the controller) each command gets one v2 group under the harness's own group with
//! `pids.max`, `memory.max` and `memory.swap.max` (a process is in one v2 group only; the
//! harness first moves itself into a leaf of its own group, which v2 requires before that
//! group may give children controllers: [`prepare_v2`]). The
//! spawned child moves itself in before it execs (so no early fork escapes), and afterwards
//! every process still in the group is killed and the group removed. Where a controller is
//! missing or not writable the limit is skipped with a one-time warning; [`unavailable`]
//! tells beforehand (`specgap run --require-limits`). An external agent's sandbox may also get a
//! cgroup-v1 `freezer` group ([`Cgroups::add_freezer`]) so that `submit` can stop all of it at once.
//! Once a run sets a CPU share ([`set_sandbox_cpus`]), every sandbox also gets a `cpu` group
//! with that quota (issue 31 item 2), or runs at niceness [`FALLBACK_NICE`] where the `cpu`
//! controller is not usable.

use std::collections::HashMap;
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

const CGROUP_ROOT: &str = "/sys/fs/cgroup";

static PIDS_WARNED: AtomicBool = AtomicBool::new(false);
static MEMORY_WARNED: AtomicBool = AtomicBool::new(false);
static FREEZER_WARNED: AtomicBool = AtomicBool::new(false);
static CPU_WARNED: AtomicBool = AtomicBool::new(false);
/// The CPU time each sandbox may use per [`CPU_PERIOD_US`], in microseconds (0: no CPU
/// limit); set once per run by [`set_sandbox_cpus`].
static CPU_QUOTA_US: AtomicU64 = AtomicU64::new(0);

/// The scheduling period of the CPU limit, in microseconds (the kernel's default, 100 ms).
pub const CPU_PERIOD_US: u64 = 100_000;
/// The niceness sandboxes run at where the `cpu` controller cannot be used (issue 31 item 2).
pub const FALLBACK_NICE: i32 = 10;
/// The environment variable that, set to `1`, makes the `cpu` controller count as missing, so
/// sandboxes take the [`FALLBACK_NICE`] path where the controller exists (to test or compare
/// that path; docs/scale-out.md).
pub const NO_CPU_CONTROLLER_ENV: &str = "SPECGAP_NO_CPU_CONTROLLER";

/// Limits every sandbox (command, session, agent and evaluator) made from now on to `cpus`
/// CPUs of time — `cpu.cfs_quota_us` over `cpu.cfs_period_us` on cgroup v1, `cpu.max` on v2
/// — or lifts the limit (`None`). At least 0.01 CPU. Where the `cpu` controller cannot be
/// used, sandboxes run at niceness [`FALLBACK_NICE`] instead ([`cpu_unavailable`] tells
/// beforehand).
pub fn set_sandbox_cpus(cpus: Option<f64>) {
    let quota = cpus.filter(|c| c.is_finite() && *c > 0.0).map_or(0, |c| ((c * CPU_PERIOD_US as f64) as u64).max(CPU_PERIOD_US / 100));
    CPU_QUOTA_US.store(quota, Ordering::Relaxed);
}

/// The CPU quota per period set by [`set_sandbox_cpus`], in microseconds (`None`: no limit).
pub fn sandbox_cpu_quota_us() -> Option<u64> {
    Some(CPU_QUOTA_US.load(Ordering::Relaxed)).filter(|q| *q > 0)
}

/// The CPUs of time a sandbox gets by default: the machine's cores shared by `jobs` episodes
/// at once (`cores / jobs`, at least 0.1).
pub fn default_sandbox_cpus(jobs: usize) -> f64 {
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
    (cores as f64 / jobs.max(1) as f64).max(0.1)
}

/// Why the CPU limit cannot be applied here (the `cpu` controller is missing or not
/// writable), or `None` when it can. Probes by making (and removing) a group with a quota.
pub fn cpu_unavailable() -> Option<String> {
    let name = format!("specgap-probe-{}-{}", std::process::id(), SEQUENCE.fetch_add(1, Ordering::Relaxed));
    match locate_here("cpu").and_then(|located| make_group(&located, "cpu", &name, "100000").map_err(|e| e.to_string())) {
        Ok(group) => {
            remove_group(&group);
            None
        }
        Err(e) => Some(e),
    }
}

/// The directory the sandboxes' `cpu` groups are made in, `None` where the controller is not
/// usable.
pub fn cpu_group_parent() -> Option<PathBuf> {
    locate_here("cpu").ok().map(|located| located.parent)
}
static SEQUENCE: AtomicU64 = AtomicU64::new(0);

/// Which cgroup version holds a controller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Version {
    V1,
    V2,
}

/// Where the groups of one controller are made: the harness's own group of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Located {
    pub(crate) version: Version,
    pub(crate) parent: PathBuf,
}

/// Finds where groups of `controller` go under the cgroup mount `root`, given the text of
/// `/proc/self/cgroup`: the v1 hierarchy of that controller when it is mounted, else the v2
/// hierarchy (`root` or `root/unified`) when the controller is available there.
///
/// # Errors
/// Why the controller cannot be used, as a phrase (no hierarchy holds it).
pub(crate) fn locate(root: &Path, proc_self_cgroup: &str, controller: &str) -> Result<Located, String> {
    let v1 = root.join(controller);
    if v1.is_dir() && !v1.join("cgroup.controllers").exists() {
        return Ok(Located { version: Version::V1, parent: own_v1_group(&v1, proc_self_cgroup, controller) });
    }
    let unified = [root.to_path_buf(), root.join("unified")].into_iter().find(|dir| dir.join("cgroup.controllers").is_file());
    let Some(unified) = unified else {
        return Err(format!("neither a cgroup-v1 `{controller}` hierarchy nor cgroup v2 is mounted under {}", root.display()));
    };
    let parent = proc_self_cgroup
        .lines()
        .find_map(|line| line.strip_prefix("0::"))
        .map(|path| path.trim().trim_start_matches('/'))
        .filter(|path| !path.is_empty())
        .map(|path| unified.join(path))
        .filter(|dir| dir.is_dir())
        .unwrap_or(unified);
    let available = std::fs::read_to_string(parent.join("cgroup.controllers")).unwrap_or_default();
    if !available.split_whitespace().any(|c| c == controller) {
        return Err(format!(
            "the cgroup-v2 `{controller}` controller is not available in {} (not in its cgroup.controllers: it is bound to a v1 hierarchy or not delegated)",
            parent.display()
        ));
    }
    Ok(Located { version: Version::V2, parent })
}

/// The harness's v2 group prepared for command groups, once per process (it may move the
/// harness into a leaf, after which `/proc/self/cgroup` names the leaf).
static V2_PARENT: OnceLock<Result<PathBuf, String>> = OnceLock::new();

/// [`locate`] on this machine; for cgroup v2 the parent is the harness's own group prepared
/// by [`prepare_v2`] on first use.
fn locate_here(controller: &str) -> Result<Located, String> {
    if controller == "cpu" && std::env::var_os(NO_CPU_CONTROLLER_ENV).is_some_and(|v| v == "1") {
        return Err(format!("{NO_CPU_CONTROLLER_ENV}=1 treats the `cpu` controller as missing"));
    }
    // Found once per controller: every sandboxed command asks for two or three, and the
    // harness's own groups do not change while it runs (on v2 it moves itself once, into the
    // leaf that `prepare_v2` makes, and the parent it returns stays the same).
    static FOUND: OnceLock<Mutex<HashMap<String, Result<Located, String>>>> = OnceLock::new();
    let found = FOUND.get_or_init(|| Mutex::new(HashMap::new()));
    if let Some(known) = found.lock().unwrap_or_else(PoisonError::into_inner).get(controller) {
        return known.clone();
    }
    let located = locate_uncached(controller);
    found.lock().unwrap_or_else(PoisonError::into_inner).insert(controller.to_string(), located.clone());
    located
}

/// [`locate_here`] from `/proc/self/cgroup` as it reads now.
fn locate_uncached(controller: &str) -> Result<Located, String> {
    let proc_self = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    let located = locate(Path::new(CGROUP_ROOT), &proc_self, controller)?;
    if located.version == Version::V1 {
        return Ok(located);
    }
    let parent = V2_PARENT.get_or_init(|| prepare_v2(&located.parent, std::process::id())).clone()?;
    Ok(Located { version: Version::V2, parent })
}

/// The leaf a harness moves itself into so that its own v2 group may have children with
/// controllers (cgroup v2's "no internal processes" rule).
const V2_HARNESS_LEAF: &str = "specgap-harness";

/// Makes the v2 group `own` (the harness's, process `pid`) able to hold command groups with
/// the `pids`, `memory` and `cpu` controllers: a non-root group with processes in it may not enable
/// controllers for children, so when `pid` is its only process the harness moves into the leaf
/// `own/specgap-harness`; then the controllers `own` has are enabled in its
/// `cgroup.subtree_control`. Returns `own`, where command groups go (beside the leaf).
///
/// # Errors
/// As a phrase: other processes share `own` (moving them is not the harness's business: start
/// specgap in a cgroup of its own, e.g. `systemd-run --scope`), or a control file cannot be
/// written (not delegated, read-only).
fn prepare_v2(own: &Path, pid: u32) -> Result<PathBuf, String> {
    let is_root = !own.join("cgroup.type").exists();
    let procs_file = own.join("cgroup.procs");
    let procs: Vec<u32> = std::fs::read_to_string(&procs_file).unwrap_or_default().lines().filter_map(|l| l.trim().parse().ok()).collect();
    if !is_root && !procs.is_empty() {
        let others: Vec<String> = procs.iter().filter(|&&p| p != pid).map(u32::to_string).collect();
        if !others.is_empty() {
            return Err(format!(
                "the harness's cgroup-v2 group {} also holds processes {} (cgroup v2 lets only a group without processes of its own give its children controllers); start specgap in a cgroup of its own, e.g. under `systemd-run --scope`",
                own.display(),
                others.join(", ")
            ));
        }
        let leaf = own.join(V2_HARNESS_LEAF);
        match std::fs::create_dir(&leaf) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(format!("cannot create {}: {e}", leaf.display())),
        }
        std::fs::write(leaf.join("cgroup.procs"), pid.to_string())
            .map_err(|e| format!("cannot move the harness into {}: {e}", leaf.display()))?;
    }
    let available = std::fs::read_to_string(own.join("cgroup.controllers")).unwrap_or_default();
    let wanted: Vec<String> =
        ["pids", "memory", "cpu"].into_iter().filter(|c| available.split_whitespace().any(|a| a == *c)).map(|c| format!("+{c}")).collect();
    let control = own.join("cgroup.subtree_control");
    std::fs::write(&control, wanted.join(" ")).map_err(|e| format!("cannot enable {} in {}: {e}", wanted.join(" "), control.display()))?;
    Ok(own.to_path_buf())
}

/// The harness's own group in the v1 hierarchy `hierarchy` of `controller`, falling back to
/// the hierarchy's root.
fn own_v1_group(hierarchy: &Path, proc_self_cgroup: &str, controller: &str) -> PathBuf {
    for line in proc_self_cgroup.lines() {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = (parts.next(), parts.next().unwrap_or(""), parts.next().unwrap_or(""));
        if controllers.split(',').any(|c| c == controller) {
            let candidate = hierarchy.join(path.trim_start_matches('/'));
            if candidate.is_dir() {
                return candidate;
            }
        }
    }
    hierarchy.to_path_buf()
}

/// Control files and the values written to them.
type Settings = Vec<(&'static str, String)>;

/// The limit files of one controller for `version`, with their values; the optional ones
/// (swap, swappiness: absent without swap accounting) follow in the second list.
fn settings(controller: &str, version: Version, value: &str) -> (Settings, Settings) {
    match (controller, version) {
        // A freezer group has no limit: it is only frozen and thawed.
        ("freezer", _) => (Vec::new(), Vec::new()),
        ("pids", _) => (vec![("pids.max", value.to_string())], Vec::new()),
        // The period first: v1 refuses a quota below 1 ms of the period in force.
        ("cpu", Version::V1) => {
            (vec![("cpu.cfs_period_us", CPU_PERIOD_US.to_string()), ("cpu.cfs_quota_us", value.to_string())], Vec::new())
        }
        ("cpu", Version::V2) => (vec![("cpu.max", format!("{value} {CPU_PERIOD_US}"))], Vec::new()),
        (_, Version::V1) => (
            vec![("memory.limit_in_bytes", value.to_string())],
            vec![("memory.memsw.limit_in_bytes", value.to_string()), ("memory.swappiness", "0".into())],
        ),
        (_, Version::V2) => (vec![("memory.max", value.to_string())], vec![("memory.swap.max", "0".into())]),
    }
}

/// Why each of the limits asked for cannot be applied here, one phrase per limit ("the
/// process limit (`pids`): ..."); empty when all can. Probes by making (and removing) a group
/// with the limit set, as a command's group would be made.
pub(crate) fn unavailable(max_processes: bool, memory: bool) -> Vec<String> {
    let wanted = [("pids", "the process limit", max_processes), ("memory", "the memory limit", memory)];
    let mut missing = Vec::new();
    for (controller, what, _) in wanted.iter().filter(|w| w.2) {
        let name = format!("specgap-probe-{}-{}", std::process::id(), SEQUENCE.fetch_add(1, Ordering::Relaxed));
        let value = if *controller == "pids" { "512" } else { "4294967296" };
        let probe = locate_here(controller).and_then(|located| make_group(&located, controller, &name, value).map_err(|e| e.to_string()));
        match probe {
            Ok(group) => remove_group(&group),
            Err(e) => missing.push(format!("{what} (cgroup `{controller}`): {e}")),
        }
    }
    missing
}

/// The groups of one command; removed (after killing their members) on drop. On cgroup v2
/// both limits are one group, so `pids` and `memory` may name the same directory.
#[derive(Debug, Default)]
pub(crate) struct Cgroups {
    pids: Option<PathBuf>,
    memory: Option<(PathBuf, Version)>,
    /// A cgroup-v1 `freezer` group, only for sandboxes that ask for one
    /// ([`Cgroups::add_freezer`]).
    freezer: Option<PathBuf>,
    /// The `cpu` group with the run's quota ([`set_sandbox_cpus`]); on cgroup v2 the
    /// command's one group.
    cpu: Option<PathBuf>,
    /// Whether a CPU limit was asked for and could not be made: the command then runs at
    /// niceness [`FALLBACK_NICE`].
    lower_priority: bool,
}

impl Cgroups {
    /// Creates the groups when a limit is asked for: a `pids` group (which also finds every
    /// process to kill at the end) with `pids.max` = `max_processes` or `max`, and a `memory`
    /// group when `memory_bytes` is given. Without any limit nothing is created: joining a
    /// cgroup-v1 group costs the child an RCU grace period (about 4 ms measured here), and the
    /// sandbox's PID namespace already takes every process down with the command.
    pub(crate) fn create(max_processes: Option<u32>, memory_bytes: Option<u64>) -> Cgroups {
        let cpu_quota = sandbox_cpu_quota_us();
        if max_processes.is_none() && memory_bytes.is_none() && cpu_quota.is_none() {
            return Cgroups::default();
        }
        let name = format!("specgap-{}-{}", std::process::id(), SEQUENCE.fetch_add(1, Ordering::Relaxed));
        let pids_limit = max_processes.map_or_else(|| "max".to_string(), |n| n.to_string());
        let pids = locate_here("pids").and_then(|located| make_group(&located, "pids", &name, &pids_limit).map_err(|e| e.to_string()));
        let pids = warn_unless(pids, "pids", &PIDS_WARNED, max_processes.is_some());
        let memory = memory_bytes.and_then(|bytes| {
            let located = locate_here("memory");
            let version = located.as_ref().map_or(Version::V1, |l| l.version);
            // On v2 the same name is the command's one group, made above for `pids`.
            let group = located.and_then(|located| make_group(&located, "memory", &name, &bytes.to_string()).map_err(|e| e.to_string()));
            warn_unless(group, "memory", &MEMORY_WARNED, true).map(|group| (group, version))
        });
        let cpu = cpu_quota.and_then(|quota| {
            let group =
                locate_here("cpu").and_then(|located| make_group(&located, "cpu", &name, &quota.to_string()).map_err(|e| e.to_string()));
            warn_unless(group, "cpu", &CPU_WARNED, true)
        });
        let lower_priority = cpu_quota.is_some() && cpu.is_none();
        Cgroups { pids, memory, freezer: None, cpu, lower_priority }
    }

    /// Adds a cgroup-v1 `freezer` group, so that [`Cgroups::set_frozen`] can stop every
    /// process of the sandbox at once (an external agent's sandbox: its workspace is copied
    /// while nothing in it runs). Call before the child joins. Without the v1 controller
    /// (cgroup v2 has no `freezer` controller to delegate) nothing is added, with a one-time
    /// warning; callers then stop processes with signals.
    pub(crate) fn add_freezer(&mut self) {
        let name = format!("specgap-{}-{}", std::process::id(), SEQUENCE.fetch_add(1, Ordering::Relaxed));
        let group = locate_here("freezer").and_then(|located| match located.version {
            Version::V1 => make_group(&located, "freezer", &name, "").map_err(|e| e.to_string()),
            Version::V2 => Err("cgroup v2 has no freezer controller".to_string()),
        });
        self.freezer = warn_unless(group, "freezer", &FREEZER_WARNED, true);
    }

    /// Whether the command must run at niceness [`FALLBACK_NICE`] (a CPU limit was asked for
    /// and the `cpu` controller is not usable).
    pub(crate) fn lower_priority(&self) -> bool {
        self.lower_priority
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
        self.groups().iter().filter_map(|group| CString::new(group.join("cgroup.procs").as_os_str().as_bytes()).ok()).collect()
    }

    /// Moves process `pid` (one that has not forked yet) into the groups. A failure leaves it
    /// outside, without that limit, and is logged.
    pub(crate) fn join(&self, pid: libc::pid_t) {
        for group in self.groups() {
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
        let Some((group, version)) = &self.memory else { return 0 };
        // v1 counts in memory.oom_control, v2 in memory.events; both as `oom_kill N`.
        let file = if *version == Version::V1 { "memory.oom_control" } else { "memory.events" };
        let Ok(text) = std::fs::read_to_string(group.join(file)) else { return 0 };
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
        let groups = self.groups();
        self.pids = None;
        self.memory = None;
        self.freezer = None;
        self.cpu = None;
        for group in groups {
            emptied &= kill_members(&group);
            remove_group(&group);
        }
        had_pids && emptied
    }

    /// The distinct group directories (one on cgroup v2, up to three on v1).
    fn groups(&self) -> Vec<PathBuf> {
        let mut groups: Vec<PathBuf> = self.pids.iter().cloned().collect();
        if let Some((memory, _)) = &self.memory
            && !groups.contains(memory)
        {
            groups.push(memory.clone());
        }
        groups.extend(self.freezer.iter().cloned());
        if let Some(cpu) = &self.cpu
            && !groups.contains(cpu)
        {
            groups.push(cpu.clone());
        }
        groups
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

/// Makes the group `name` of `controller` under `located` with its limit set to `value`; on
/// cgroup v2 an existing group of that name (the command's one group, made for the other
/// controller) is reused (the parent's controllers are enabled by [`prepare_v2`]).
fn make_group(located: &Located, controller: &str, name: &str, value: &str) -> std::io::Result<PathBuf> {
    let group = located.parent.join(name);
    let made = match std::fs::create_dir(&group) {
        Ok(()) => true,
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && located.version == Version::V2 => false,
        Err(e) => return Err(std::io::Error::new(e.kind(), format!("cannot create {}: {e}", group.display()))),
    };
    let (required, optional) = settings(controller, located.version, value);
    for (file, value) in required {
        if let Err(e) = std::fs::write(group.join(file), value) {
            if made {
                let _ = std::fs::remove_dir(&group);
            }
            return Err(std::io::Error::new(e.kind(), format!("cannot write {}: {e}", group.join(file).display())));
        }
    }
    for (file, value) in optional {
        let _ = std::fs::write(group.join(file), value);
    }
    Ok(group)
}

/// Passes a made group through; on failure warns once (when the limit was asked for) that
/// commands run without that limit.
fn warn_unless(group: Result<PathBuf, String>, controller: &str, warned: &AtomicBool, wanted: bool) -> Option<PathBuf> {
    match group {
        Ok(group) => Some(group),
        Err(e) => {
            if wanted && !warned.swap(true, Ordering::Relaxed) {
                tracing::warn!("cgroup `{controller}` controller unusable ({e}); sandboxed commands run without the {controller} limit");
            }
            None
        }
    }
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

/// Prefixes of the groups a runner makes, the runner's pid and a sequence number following:
/// `specgap-<pid>-<n>` (command groups) and `specgap-probe-<pid>-<n>` ([`unavailable`]).
const GROUP_PREFIXES: &[&str] = &["specgap-probe-", "specgap-"];

/// The runner's pid in a group name of [`GROUP_PREFIXES`] (`None` for any other name, such as
/// the harness's own leaf `specgap-harness`).
pub(crate) fn group_owner(name: &str) -> Option<u32> {
    GROUP_PREFIXES.iter().find_map(|prefix| {
        let (pid, sequence) = name.strip_prefix(prefix)?.split_once('-')?;
        sequence.parse::<u64>().ok()?;
        pid.parse().ok()
    })
}

/// Removes the groups under `parent` whose runner no longer exists (its pid has no `/proc`
/// entry): a runner killed with SIGKILL removes none of its own (issue 31 item 4). Processes
/// still in such a group (a dead runner's orphans) are killed first. A group of a live runner,
/// or any other name, is never touched. Returns the groups removed.
pub(crate) fn remove_dead_groups_in(parent: &Path) -> Vec<PathBuf> {
    let mut removed = Vec::new();
    let Ok(entries) = std::fs::read_dir(parent) else { return removed };
    for entry in entries.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(group_owner) else { continue };
        if pid == std::process::id() || Path::new("/proc").join(pid.to_string()).exists() {
            continue;
        }
        let group = entry.path();
        if !entry.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        kill_members(&group);
        match std::fs::remove_dir(&group) {
            Ok(()) => removed.push(group),
            Err(e) => tracing::debug!("cannot remove the cgroup {} of a runner that is gone: {e}", group.display()),
        }
    }
    removed
}

/// [`remove_dead_groups_in`] in every place this runner makes groups (the `pids`, `memory` and
/// `freezer` parents it finds): where a runner started from the same place put its groups.
/// Best effort; returns how many groups were removed.
pub(crate) fn remove_dead_runners_groups() -> usize {
    group_parents().iter().map(|parent| remove_dead_groups_in(parent).len()).sum()
}

/// The directories this runner makes its groups in (one per hierarchy holding `pids`,
/// `memory` or `freezer`), without duplicates; empty where no controller is usable.
pub(crate) fn group_parents() -> Vec<PathBuf> {
    let mut parents: Vec<PathBuf> = Vec::new();
    for controller in ["pids", "memory", "freezer", "cpu"] {
        if let Ok(located) = locate_here(controller)
            && !parents.contains(&located.parent)
        {
            parents.push(located.parent);
        }
    }
    parents
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cpu_limit_writes_the_period_before_the_quota_on_v1_and_cpu_max_on_v2() {
        let (v1, _) = settings("cpu", Version::V1, "50000");
        assert_eq!(v1, vec![("cpu.cfs_period_us", "100000".to_string()), ("cpu.cfs_quota_us", "50000".to_string())]);
        let (v2, _) = settings("cpu", Version::V2, "50000");
        assert_eq!(v2, vec![("cpu.max", "50000 100000".to_string())]);
    }

    #[test]
    fn group_names_give_their_runners_pid() {
        assert_eq!(group_owner("specgap-4242-7"), Some(4242));
        assert_eq!(group_owner("specgap-probe-4242-0"), Some(4242));
        assert_eq!(group_owner("specgap-harness"), None);
        assert_eq!(group_owner("specgap-4242-x"), None);
        assert_eq!(group_owner("specgap-run-4242-Ab12"), None);
        assert_eq!(group_owner("other-4242-1"), None);
    }

    #[test]
    fn only_the_groups_of_runners_that_are_gone_are_removed() {
        // Plain directories stand in for cgroups (rmdir of an empty one works alike; a
        // non-empty one stands for a group the kernel still holds busy).
        let parent = tempfile::tempdir().unwrap();
        let live = std::process::id();
        let dead = 99_999_999u32; // above every pid_max: no such process
        let names = [
            format!("specgap-{dead}-0"),
            format!("specgap-{dead}-5"),
            format!("specgap-probe-{dead}-1"),
            format!("specgap-{live}-2"),
            format!("specgap-probe-{live}-3"),
            "specgap-harness".to_string(),
            format!("unrelated-{dead}-4"),
            format!("specgap-{dead}-busy"),
        ];
        for name in &names {
            std::fs::create_dir(parent.path().join(name)).unwrap();
        }
        std::fs::write(parent.path().join(format!("specgap-{dead}-9")), "a file, not a group").unwrap();
        let mut removed: Vec<String> =
            remove_dead_groups_in(parent.path()).iter().map(|p| p.file_name().unwrap().to_string_lossy().into_owned()).collect();
        removed.sort();
        assert_eq!(removed, [format!("specgap-{dead}-0"), format!("specgap-{dead}-5"), format!("specgap-probe-{dead}-1")]);
        let mut left: Vec<String> =
            std::fs::read_dir(parent.path()).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        left.sort();
        let mut expected = vec![
            format!("specgap-{dead}-9"),
            format!("specgap-{dead}-busy"),
            format!("specgap-{live}-2"),
            "specgap-harness".to_string(),
            format!("specgap-probe-{live}-3"),
            format!("unrelated-{dead}-4"),
        ];
        expected.sort();
        assert_eq!(left, expected);
    }

    fn touch(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn v1_hierarchies_win_and_the_own_group_comes_from_proc_self_cgroup() {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.path().join("memory/job/7")).unwrap();
        std::fs::create_dir_all(root.path().join("pids")).unwrap();
        touch(&root.path().join("unified/cgroup.controllers"), "hugetlb\n");
        let proc_self = "8:pids:/\n4:memory:/job/7\n0::/\n";
        let memory = locate(root.path(), proc_self, "memory").unwrap();
        assert_eq!(memory, Located { version: Version::V1, parent: root.path().join("memory/job/7") });
        let pids = locate(root.path(), proc_self, "pids").unwrap();
        assert_eq!(pids, Located { version: Version::V1, parent: root.path().join("pids") });
    }

    #[test]
    fn a_v2_only_machine_uses_the_own_v2_group() {
        let root = tempfile::tempdir().unwrap();
        touch(&root.path().join("cgroup.controllers"), "cpuset cpu io memory pids\n");
        touch(&root.path().join("kubepods/pod1/c1/cgroup.controllers"), "memory pids\n");
        let proc_self = "0::/kubepods/pod1/c1\n";
        let located = locate(root.path(), proc_self, "pids").unwrap();
        assert_eq!(located, Located { version: Version::V2, parent: root.path().join("kubepods/pod1/c1") });
    }

    #[test]
    fn a_controller_bound_to_no_hierarchy_is_named_in_the_error() {
        let root = tempfile::tempdir().unwrap();
        touch(&root.path().join("unified/cgroup.controllers"), "hugetlb\n");
        let error = locate(root.path(), "0::/\n", "pids").unwrap_err();
        assert_eq!(
            error,
            format!(
                "the cgroup-v2 `pids` controller is not available in {} (not in its cgroup.controllers: it is bound to a v1 hierarchy or not delegated)",
                root.path().join("unified").display()
            )
        );
        let empty = tempfile::tempdir().unwrap();
        assert_eq!(
            locate(empty.path(), "", "memory").unwrap_err(),
            format!("neither a cgroup-v1 `memory` hierarchy nor cgroup v2 is mounted under {}", empty.path().display())
        );
    }

    /// A v2 command group: both controllers enabled in the parent, one group holding
    /// `pids.max`, `memory.max` and `memory.swap.max`, the OOM count read from memory.events.
    #[test]
    fn a_v2_group_gets_both_limits_and_counts_oom_kills_from_memory_events() {
        let root = tempfile::tempdir().unwrap();
        let parent = root.path().join("job");
        touch(&parent.join("cgroup.controllers"), "memory pids\n");
        touch(&parent.join("cgroup.subtree_control"), "");
        let located = Located { version: Version::V2, parent: parent.clone() };
        let pids = make_group(&located, "pids", "cmd", "64").unwrap();
        let memory = make_group(&located, "memory", "cmd", "1048576").unwrap();
        assert_eq!(pids, memory);
        assert_eq!(std::fs::read_to_string(pids.join("pids.max")).unwrap(), "64");
        assert_eq!(std::fs::read_to_string(pids.join("memory.max")).unwrap(), "1048576");
        assert_eq!(std::fs::read_to_string(pids.join("memory.swap.max")).unwrap(), "0");
        touch(&pids.join("memory.events"), "low 0\nhigh 0\nmax 3\noom 1\noom_kill 2\n");
        let cgroups =
            Cgroups { pids: Some(pids.clone()), memory: Some((memory, Version::V2)), freezer: None, cpu: None, lower_priority: false };
        assert_eq!(cgroups.oom_kills(), 2);
        assert_eq!(cgroups.groups(), [pids]);
        std::mem::forget(cgroups);
    }

    /// A harness alone in a non-root v2 group moves into a leaf and enables the controllers
    /// for the command groups beside it (plain files stand in for the kernel's here).
    #[test]
    fn a_harness_alone_in_its_v2_group_moves_into_a_leaf_and_enables_the_controllers() {
        let root = tempfile::tempdir().unwrap();
        let own = root.path().join("user.slice/run-1.scope");
        touch(&own.join("cgroup.type"), "domain\n");
        touch(&own.join("cgroup.procs"), "4242\n");
        touch(&own.join("cgroup.controllers"), "cpu memory pids\n");
        assert_eq!(prepare_v2(&own, 4242).unwrap(), own);
        assert_eq!(std::fs::read_to_string(own.join("specgap-harness/cgroup.procs")).unwrap(), "4242");
        assert_eq!(std::fs::read_to_string(own.join("cgroup.subtree_control")).unwrap(), "+pids +memory +cpu");
    }

    #[test]
    fn a_v2_group_shared_with_other_processes_is_refused_naming_them() {
        let root = tempfile::tempdir().unwrap();
        let own = root.path().join("pod/container");
        touch(&own.join("cgroup.type"), "domain\n");
        touch(&own.join("cgroup.procs"), "1\n4242\n17\n");
        touch(&own.join("cgroup.controllers"), "memory pids\n");
        assert_eq!(
            prepare_v2(&own, 4242).unwrap_err(),
            format!(
                "the harness's cgroup-v2 group {} also holds processes 1, 17 (cgroup v2 lets only a group without processes of its own give its children controllers); start specgap in a cgroup of its own, e.g. under `systemd-run --scope`",
                own.display()
            )
        );
        assert!(!own.join("specgap-harness").exists(), "nothing is moved when the group is shared");
    }

    /// The root group may hold processes and still give its children controllers.
    #[test]
    fn the_v2_root_group_enables_the_controllers_without_a_leaf() {
        let root = tempfile::tempdir().unwrap();
        touch(&root.path().join("cgroup.procs"), "1\n4242\n");
        touch(&root.path().join("cgroup.controllers"), "memory\n");
        assert_eq!(prepare_v2(root.path(), 4242).unwrap(), root.path());
        assert!(!root.path().join("specgap-harness").exists());
        assert_eq!(std::fs::read_to_string(root.path().join("cgroup.subtree_control")).unwrap(), "+memory");
    }

    #[test]
    fn v1_memory_limits_use_the_v1_files() {
        let (required, optional) = settings("memory", Version::V1, "100");
        assert_eq!(required, [("memory.limit_in_bytes", "100".to_string())]);
        assert_eq!(optional, [("memory.memsw.limit_in_bytes", "100".to_string()), ("memory.swappiness", "0".to_string())]);
    }
}
