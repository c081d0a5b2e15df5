//! The gold of an image task: the import builds the task's Dockerfile (podman or docker,
//! through issue 25's environment cache), takes the image's work directory as the starter and
//! runs `solve.sh` on the image, started by its `#!` line as Harbor's oracle starts it. The
//! image is made here from the host's busybox-static (`FROM scratch`, no `RUN`). Skipped with
//! a note without busybox or an engine, unless `SPECGAP_REQUIRE_EXTERNAL=1`.

use std::path::Path;

use specgap_harbor::{GoldOutcome, ImportOptions, Outcome, import_task};

use crate::support::{required, use_test_cache};

const BUSYBOX: &str = "/bin/busybox";

fn write_file(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn engine_present() -> bool {
    ["podman", "docker"].iter().any(|e| std::process::Command::new(e).arg("--version").output().is_ok_and(|o| o.status.success()))
}

/// A Harbor task whose Dockerfile copies busybox to /bin (outside the work directory, so an
/// image task) and its files to /app.
fn busybox_task(root: &Path) {
    let bin = root.join("environment/bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::copy(BUSYBOX, bin.join("busybox")).unwrap();
    for applet in ["sh", "echo", "cat", "test"] {
        std::os::unix::fs::symlink("busybox", bin.join(applet)).unwrap();
    }
    write_file(&root.join("environment/Dockerfile"), "FROM scratch\nCOPY bin/ /bin/\nWORKDIR /app\nCOPY app/ /app/\n");
    write_file(&root.join("environment/app/notes.txt"), "start\n");
    write_file(&root.join("task.toml"), "version = \"1.0\"\n\n[task]\nname = \"fixtures/busybox-notes\"\n\n[agent]\ntimeout_sec = 60\n");
    write_file(&root.join("instruction.md"), "Append the line done to /app/notes.txt.\n");
    write_file(
        &root.join("tests/test.sh"),
        "#!/bin/sh\ngrep -qx done /app/notes.txt && echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt\n",
    );
    write_file(
        &root.join("solution/solve.sh"),
        "#!/bin/sh\n# On the image: no /usr, so no host python3.\ntest -e /usr/bin/python3 && exit 4\necho done >> notes.txt\n",
    );
}

#[test]
fn an_image_tasks_gold_is_solve_sh_run_on_its_image_from_the_images_work_directory() {
    if !Path::new(BUSYBOX).is_file() || !engine_present() {
        assert!(!required(), "SPECGAP_REQUIRE_EXTERNAL=1 and {BUSYBOX} or a container engine (podman, docker) is missing");
        eprintln!("skipped: {BUSYBOX} or a container engine is missing");
        return;
    }
    use_test_cache();
    let dir = tempfile::tempdir().unwrap();
    let task = dir.path().join("busybox-notes");
    busybox_task(&task);
    let package = dir.path().join("out/busybox-notes");
    let outcome = import_task(&task, &package, &ImportOptions::default()).unwrap();
    let Outcome::Imported { environment, gold, .. } = &outcome else { panic!("{}", outcome.line()) };
    assert_eq!((*environment, gold), ("image", &GoldOutcome::Written { files: 1, deleted: 0 }), "{}", outcome.line());
    // The starter is the image's /app; the gold is what solve.sh made of it.
    assert_eq!(std::fs::read_to_string(package.join("workspace/notes.txt")).unwrap(), "start\n");
    assert_eq!(std::fs::read_to_string(package.join("solutions/gold/notes.txt")).unwrap(), "start\ndone\n");
    let config: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(package.join("evaluator/harbor.json")).unwrap()).unwrap();
    assert_eq!(config["starter_sha256"].as_object().unwrap().keys().collect::<Vec<_>>(), ["notes.txt"]);
}
