//! `specgap import harbor --no-gold` of an image task (issue 26): the import builds the task's
//! image all the same, so the package's workspace holds the file its Dockerfile copies into the
//! work directory, and an episode's agent sees it there (the workspace is mounted over that
//! directory). Fixture: `crates/specgap-harbor/tests/fixtures/image-starter` with a busybox
//! root filesystem from Debian's busybox-static. Needs podman, bubblewrap and busybox; skipped
//! with a note when one is missing, unless `SPECGAP_REQUIRE_EXTERNAL=1`.

use std::ffi::OsStr;
use std::path::Path;
use std::process::Output;

use serde_json::json;
use specgap_protocol::event::EventKind;
use specgap_store::Status;
use specgap_test_support::external::have_programs;
use specgap_test_support::image::{BusyboxImage, have_busybox};

use crate::support::*;

/// The applets the fixture's image links to busybox.
const APPLETS: [&str; 6] = ["sh", "cat", "test", "echo", "wc", "tr"];

/// The file the fixture's Dockerfile copies into `/app`.
const WORDS: &str = "alpha beta gamma delta\n";

/// Copies the fixture task to `root` and adds its busybox root filesystem.
fn image_starter_task(root: &Path) {
    let fixture = repo().join("crates/specgap-harbor/tests/fixtures/image-starter");
    copy_dir(&fixture, root);
    BusyboxImage::new(&APPLETS).write_tree(&root.join("environment/rootfs"));
}

/// The stdout of a `specgap` call that succeeded ([`assert_succeeded`]).
fn succeeded(output: Output) -> String {
    String::from_utf8_lossy(&assert_succeeded(output).stdout).into_owned()
}

#[test]
fn an_image_task_imported_without_gold_gives_its_agent_the_file_its_dockerfile_copies_into_the_workdir() {
    if !have_programs(&["podman", "bwrap"]) || !have_busybox() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (cache, task, suite, run) =
        (dir.path().join("cache"), dir.path().join("image-starter"), dir.path().join("suite"), dir.path().join("run"));
    image_starter_task(&task);
    let stdout = succeeded(
        specgap_with(&cache)
            .args([
                OsStr::new("import"),
                OsStr::new("harbor"),
                task.as_os_str(),
                OsStr::new("--out"),
                suite.as_os_str(),
                OsStr::new("--no-gold"),
            ])
            .output()
            .unwrap(),
    );
    assert_eq!(
        stdout.lines().next(),
        Some(
            "imported image-starter: fixtures/image-starter (image environment, gold not made (--no-gold), 0 not mapped, verifier trusts the workspace)"
        )
    );
    assert!(stdout.contains("| imported, image environment | 1 |\n| imported, starter incomplete (image not built) | 0 |\n"), "{stdout}");
    assert_eq!(std::fs::read_to_string(suite.join("image-starter/workspace/words.txt")).unwrap(), WORDS);

    let turns = [
        json!({"tool": "list_files", "arguments": {"path": "."}}),
        json!({"tool": "read_text", "arguments": {"path": "words.txt"}}),
        json!({"tool": "run_experiment", "arguments": {"command": "pwd; cat /app/words.txt"}}),
    ];
    let script = write_script(dir.path(), "look.jsonl", &turns);
    let protocol = suite.join("harbor-protocol.toml");
    let agent = format!("replay:{}", script.display());
    succeeded(
        specgap_with(&cache)
            .args([OsStr::new("run"), suite.as_os_str(), OsStr::new("--protocol"), protocol.as_os_str()])
            .args(["--condition", "hidden", "--start", "clean", "--agent", &agent, "--no-report"])
            .arg("--out")
            .arg(&run)
            .output()
            .unwrap(),
    );
    let rows = episodes(&run);
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].status, Status::Finished, "{rows:#?}");
    let results: Vec<(String, String, bool)> = events(&run, &rows[0].id)
        .into_iter()
        .filter_map(|e| match e.kind {
            EventKind::ToolResult { tool, output, is_error, .. } => Some((tool, output, is_error)),
            _ => None,
        })
        .collect();
    assert_eq!(
        results,
        [
            ("list_files".to_string(), ".git/\nwords.txt".to_string(), false),
            ("read_text".to_string(), "     1\talpha beta gamma delta".to_string(), false),
            ("run_experiment".to_string(), "exit status 0\n--- stdout ---\n/app\nalpha beta gamma delta".to_string(), false),
        ]
    );
}
