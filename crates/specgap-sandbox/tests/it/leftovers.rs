//! Issue 31 item 4: what a runner killed with SIGKILL leaves — its empty cgroups — is removed
//! by the next runner, and a live runner's groups are never touched.

use specgap_sandbox::scratch::{remove_dead_runners_cgroups, runner_cgroup_parents};

#[test]
fn the_cgroups_of_a_dead_runner_are_removed_and_a_live_runners_are_kept() {
    let parents = runner_cgroup_parents();
    if parents.is_empty() {
        assert!(std::env::var("SPECGAP_REQUIRE_EXTERNAL").as_deref() != Ok("1"), "no cgroup controller is usable here");
        eprintln!("skipped: no cgroup controller is usable here");
        return;
    }
    // A live process that is not this one stands for another runner still at work.
    let mut live = std::process::Command::new("sleep").arg("600").spawn().unwrap();
    let dead = 99_999_999u32; // above every pid_max: no such process
    let mut made = Vec::new();
    for parent in &parents {
        for name in [format!("specgap-{dead}-0"), format!("specgap-probe-{dead}-1"), format!("specgap-{}-2", live.id())] {
            let group = parent.join(name);
            std::fs::create_dir(&group).unwrap();
            made.push(group);
        }
    }
    let removed = remove_dead_runners_cgroups();
    let left: Vec<bool> = made.iter().map(|g| g.exists()).collect();
    for group in &made {
        let _ = std::fs::remove_dir(group);
    }
    let _ = live.kill();
    let _ = live.wait();
    assert_eq!(left, parents.iter().flat_map(|_| [false, false, true]).collect::<Vec<_>>(), "{made:?}");
    assert!(removed >= 2 * parents.len(), "{removed} removed");
}
