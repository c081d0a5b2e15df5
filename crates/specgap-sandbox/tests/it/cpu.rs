//! Issue 31 item 2: every sandbox runs in a `cpu` cgroup whose quota is the run's share of
//! the machine (`set_sandbox_cpus`), so a busy loop or a fork bomb cannot take more.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use specgap_sandbox::{cpu_group_parent, set_sandbox_cpus};

use crate::support::sh;

/// A marker in the busy loop's command line, to tell its group from other tests' groups.
const MARKER: &str = "cpu-probe-5d1e";

/// The group under `parent` made by this process whose members include the busy loop.
fn busy_loop_group(parent: &Path) -> Option<PathBuf> {
    let prefix = format!("specgap-{}-", std::process::id());
    std::fs::read_dir(parent).ok()?.flatten().map(|e| e.path()).find(|group| {
        let is_ours = group.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with(&prefix));
        let procs = std::fs::read_to_string(group.join("cgroup.procs")).unwrap_or_default();
        is_ours
            && procs.lines().any(|pid| {
                std::fs::read(format!("/proc/{}/cmdline", pid.trim())).is_ok_and(|c| String::from_utf8_lossy(&c).contains(MARKER))
            })
    })
}

#[test]
fn a_busy_loop_runs_in_a_cpu_group_with_the_runs_quota() {
    let Some(parent) = cpu_group_parent() else {
        assert!(std::env::var("SPECGAP_REQUIRE_EXTERNAL").as_deref() != Ok("1"), "the cgroup `cpu` controller is not usable here");
        eprintln!("skipped: the cgroup `cpu` controller is not usable here");
        return;
    };
    set_sandbox_cpus(Some(1.5));
    let ws = tempfile::tempdir().unwrap();
    let workspace = ws.path().to_path_buf();
    let command = format!(": {MARKER}; while [ ! -e stop ]; do :; done; echo stopped");
    let busy = std::thread::spawn(move || sh(&workspace, &command));
    // Not a timing assertion: the wait only bounds how long a missing group is looked for.
    let deadline = Instant::now() + Duration::from_secs(60);
    let group = loop {
        if let Some(group) = busy_loop_group(&parent) {
            break Some(group);
        }
        if Instant::now() > deadline || busy.is_finished() {
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let read = |file: &str| group.as_ref().and_then(|g| std::fs::read_to_string(g.join(file)).ok()).map(|t| t.trim().to_string());
    let configured = if parent.join("cgroup.controllers").exists() {
        vec![read("cpu.max")]
    } else {
        vec![read("cpu.cfs_quota_us"), read("cpu.cfs_period_us")]
    };
    std::fs::write(ws.path().join("stop"), "").unwrap();
    let out = busy.join().unwrap();
    assert_eq!(out.stdout.text(), "stopped\n");
    assert!(group.is_some(), "no cpu group of this process under {} held the busy loop", parent.display());
    let expected = if parent.join("cgroup.controllers").exists() {
        vec![Some("150000 100000".to_string())]
    } else {
        vec![Some("150000".to_string()), Some("100000".to_string())]
    };
    assert_eq!(configured, expected);
    assert!(!group.unwrap().exists(), "the command's cpu group is removed when it ends");
}
