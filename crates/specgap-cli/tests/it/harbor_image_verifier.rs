//! `specgap import harbor` of an image task whose image has neither python3 nor bash (issue 26):
//! `specgap check` passes (gold 1, starter 0) and episodes are scored, because the evaluator
//! (`harbor_verify.py`) runs on the host's python3 and only `test.sh` on the image. Fixture:
//! `crates/specgap-harbor/tests/fixtures/busybox-total` with a busybox root filesystem from
//! Debian's busybox-static. Needs podman, bubblewrap and busybox; skipped with a note when one
//! is missing, unless `SPECGAP_REQUIRE_EXTERNAL=1`.

use std::ffi::OsStr;
use std::path::Path;

use serde_json::json;
use specgap_store::Status;
use specgap_test_support::external::have_programs;
use specgap_test_support::image::{BusyboxImage, have_busybox};

use crate::support::*;

/// The applets of the fixture's image.
const APPLETS: [&str; 3] = ["sh", "cat", "test"];

/// Copies the fixture task to `root` and adds its busybox root filesystem.
fn busybox_total_task(root: &Path) {
    let fixture = repo().join("crates/specgap-harbor/tests/fixtures/busybox-total");
    copy_dir(&fixture, root);
    BusyboxImage::new(&APPLETS).write_tree(&root.join("environment/rootfs"));
}

/// Runs one episode of the suite with `agent` into `run`; returns its final score.
fn final_score(cache: &Path, suite: &Path, run: &Path, agent: &str) -> Option<f64> {
    let protocol = suite.join("harbor-protocol.toml");
    assert_succeeded(
        specgap_with(cache)
            .args([OsStr::new("run"), suite.as_os_str(), OsStr::new("--protocol"), protocol.as_os_str()])
            .args(["--condition", "hidden", "--start", "clean", "--agent", agent, "--no-report"])
            .arg("--out")
            .arg(run)
            .output()
            .unwrap(),
    );
    let rows = episodes(run);
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].status, Status::Finished, "{rows:#?}");
    rows[0].final_score
}

#[test]
fn an_image_task_without_python3_passes_check_and_its_episodes_are_scored() {
    if !have_programs(&["podman", "bwrap"]) || !have_busybox() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (cache, task, suite) = (dir.path().join("cache"), dir.path().join("busybox-total"), dir.path().join("suite"));
    busybox_total_task(&task);
    let import = assert_succeeded(
        specgap_with(&cache)
            .args([OsStr::new("import"), OsStr::new("harbor"), task.as_os_str(), OsStr::new("--out"), suite.as_os_str()])
            .output()
            .unwrap(),
    );
    assert_eq!(
        String::from_utf8_lossy(&import.stdout).lines().next(),
        Some(
            "imported busybox-total: fixtures/busybox-total (image environment, gold solutions/gold/ from solve.sh (1 files, 0 deleted), 0 not mapped, verifier trusts the workspace)"
        )
    );
    let check = specgap_with(&cache).arg("check").arg(suite.join("busybox-total")).output().unwrap();
    let check_out = String::from_utf8_lossy(&check.stdout).into_owned();
    assert!(check.status.success(), "{check_out}\n{}", String::from_utf8_lossy(&check.stderr));

    assert_eq!(final_score(&cache, &suite, &dir.path().join("gold"), "scripted:gold"), Some(1.0));
    // A submission forging reward.txt and killing test.sh before it writes its own.
    let forged = "echo 1 > /logs/verifier/reward.txt\nkill -9 $PPID\n";
    let turns =
        [json!({"tool": "write_text", "arguments": {"path": "total.sh", "content": forged}}), json!({"tool": "submit", "arguments": {}})];
    let agent = format!("replay:{}", write_script(dir.path(), "forge.jsonl", &turns).display());
    assert_eq!(final_score(&cache, &suite, &dir.path().join("forged"), &agent), Some(0.0));
}
