//! Helpers shared by the end-to-end tests: the binary, fixture paths, store readers and
//! process inspection.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use specgap_protocol::event::{Event, EventKind};
use specgap_store::{EpisodeRow, Store};

/// A `specgap` command with a clean logging environment.
pub fn specgap() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_specgap"));
    cmd.env_remove("SPECGAP_LOG");
    cmd
}

/// The repository root.
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A package of `crates/specgap-task/tests/fixtures`.
pub fn task_fixture(name: &str) -> PathBuf {
    repo().join("crates/specgap-task/tests/fixtures").join(name)
}

/// A package of this crate's `tests/fixtures`.
pub fn cli_fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name)
}

/// `specgap run` of `scripted:gold` on the `req-basic` fixture under `partial` into `out`
/// (one finished episode), without the report.
pub fn run_gold_on_req_basic(out: &Path) {
    run_ok([
        OsStr::new("run"),
        task_fixture("req-basic").as_os_str(),
        OsStr::new("--agent"),
        OsStr::new("scripted:gold"),
        OsStr::new("--condition"),
        OsStr::new("partial"),
        OsStr::new("--out"),
        out.as_os_str(),
        OsStr::new("--no-report"),
    ]);
}

/// Runs `specgap` with `args`, asserts it succeeded, returns its output.
pub fn run_ok<I, S>(args: I) -> Output
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    assert_succeeded(specgap().args(args).output().expect("spawn specgap"))
}

/// Asserts a finished `specgap` exited 0 (showing its status, stdout and stderr otherwise) and
/// returns its output.
pub fn assert_succeeded(output: Output) -> Output {
    assert!(
        output.status.success(),
        "specgap failed with {:?}\nstdout:\n{}\nstderr:\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// Every table of a store, volatile columns (timestamps, durations) left out.
pub fn tables(dir: &Path) -> BTreeMap<String, Vec<Vec<String>>> {
    Store::open(dir).expect("open store").dump_tables(true).expect("dump tables")
}

/// [`tables`] without the `episodes.attempts` column, which counts the attempts a process
/// history made (a run killed mid-episode and resumed makes one more) and so is not a result.
pub fn tables_without_attempts(dir: &Path) -> BTreeMap<String, Vec<Vec<String>>> {
    let column = episodes_column_index(dir, "attempts");
    let mut all = tables(dir);
    if let Some(rows) = all.get_mut("episodes") {
        for row in rows.iter_mut() {
            row.remove(column);
        }
        rows.sort();
    }
    all
}

/// 0-based index of `name` among the non-volatile columns of `episodes`.
fn episodes_column_index(dir: &Path, name: &str) -> usize {
    let conn = rusqlite::Connection::open(dir.join(specgap_store::RESULTS_DB)).expect("open sqlite");
    let mut stmt = conn.prepare("SELECT name FROM pragma_table_info('episodes') ORDER BY cid").expect("table info");
    let names: Vec<String> = stmt.query_map([], |r| r.get(0)).expect("query").map(|r| r.expect("row")).collect();
    names.iter().filter(|n| !specgap_store::is_volatile_column(n)).position(|n| n == name).expect("column exists")
}

/// The episode rows of a store.
pub fn episodes(dir: &Path) -> Vec<EpisodeRow> {
    Store::open(dir).expect("open store").episodes().expect("episodes")
}

/// Episodes of a store with status `finished`, read while another process may be writing:
/// through a read-only connection, so polling never takes the write lock that `Store::open`
/// needs for its schema check (and never slows the runner down).
pub fn finished_count(dir: &Path) -> usize {
    if !dir.join("run.toml").is_file() {
        return 0;
    }
    let flags = rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let Ok(conn) = rusqlite::Connection::open_with_flags(dir.join(specgap_store::RESULTS_DB), flags) else { return 0 };
    let _ = conn.busy_timeout(Duration::from_secs(5));
    conn.query_row("SELECT COUNT(*) FROM episodes WHERE status = 'finished'", [], |r| r.get::<_, i64>(0))
        .map_or(0, |n| usize::try_from(n).unwrap_or(0))
}

/// The events of an episode's trajectory with their timestamps zeroed.
pub fn events(dir: &Path, id: &str) -> Vec<Event> {
    let trajectory = specgap_store::read_trajectory(dir, id).expect("read trajectory");
    assert!(trajectory.truncated.is_none(), "trajectory of {id} is cut");
    trajectory
        .events
        .into_iter()
        .map(|mut e| {
            e.ts_ms = 0;
            e.elapsed_ms = 0;
            e
        })
        .collect()
}

/// The opening message of an episode.
pub fn opening_message(dir: &Path, id: &str) -> String {
    events(dir, id)
        .into_iter()
        .find_map(|e| match e.kind {
            EventKind::EpisodeStart { opening_message, .. } => Some(opening_message),
            _ => None,
        })
        .expect("episode_start event")
}

/// `specgap report RUN --format json`, parsed.
pub fn report_json(dir: &Path) -> serde_json::Value {
    let output = run_ok([OsStr::new("report"), dir.as_os_str(), OsStr::new("--format"), OsStr::new("json")]);
    serde_json::from_slice(&output.stdout).expect("report is json")
}

/// The report group of one agent (by spec or label) × condition × start (report schema
/// `specgap-report` 3).
pub fn group<'a>(report: &'a serde_json::Value, agent: &str, condition: &str) -> &'a serde_json::Value {
    let agent = label_of(agent);
    report["groups"]
        .as_array()
        .expect("groups")
        .iter()
        .find(|g| g["key"]["agent"] == agent && g["key"]["condition"] == condition && g["key"]["start"] == "clean")
        .unwrap_or_else(|| panic!("no group {agent} {condition} in {report:#}"))
}

/// Writes a replay script (one JSON value per line) and returns its path.
pub fn write_script(dir: &Path, name: &str, turns: &[serde_json::Value]) -> PathBuf {
    let path = dir.join(name);
    let text: String = turns.iter().map(|t| format!("{t}\n")).collect();
    std::fs::write(&path, text).expect("write script");
    path
}

/// A marker unique to this test process and `name`, for finding its sandboxed processes.
pub fn marker(name: &str) -> String {
    format!("specgap-marker-{}-{name}", std::process::id())
}

/// Processes (pid, command line) whose command line contains `marker`, other than this one.
pub fn processes_with(marker: &str) -> Vec<(u32, String)> {
    let own = std::process::id();
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("read /proc").flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else { continue };
        if pid == own {
            continue;
        }
        let Ok(raw) = std::fs::read(entry.path().join("cmdline")) else { continue };
        let cmdline = String::from_utf8_lossy(&raw).replace('\0', " ");
        if cmdline.contains(marker) {
            found.push((pid, cmdline));
        }
    }
    found
}

/// Polls `condition` every 50 ms until it holds or `limit` passes; returns whether it held.
/// A generous limit only guards against hanging: no test asserts how long anything takes.
pub fn wait_for(limit: Duration, mut condition: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if condition() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    condition()
}

/// Sends `signal` to `pid`.
pub fn send_signal(pid: u32, signal: i32) {
    let pid = i32::try_from(pid).expect("pid fits");
    // SAFETY: kill(2) with a pid we spawned and a valid signal number.
    let rc = unsafe { libc::kill(pid, signal) };
    assert_eq!(rc, 0, "kill({pid}, {signal}) failed");
}

pub use specgap_test_support::files::copy_dir;
pub use specgap_test_support::tripwire::assert_no_network_attempt;

/// The label episodes and reports give the agent `spec`: a replay agent's is `replay:<file
/// name>` (not the script's path), any other's its spec.
pub fn label_of(spec: &str) -> String {
    match spec.strip_prefix("replay:") {
        Some(path) => format!("replay:{}", Path::new(path).file_name().map_or_else(|| path.into(), |f| f.to_string_lossy().into_owned())),
        None => spec.to_string(),
    }
}

/// `specgap` with the environment cache at `cache` (`XDG_CACHE_HOME`).
pub fn specgap_with(cache: &Path) -> std::process::Command {
    let mut command = specgap();
    command.env("XDG_CACHE_HOME", cache);
    command
}
