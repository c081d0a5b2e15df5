//! An image-environment package end to end through the sandbox judge: a format-2 package
//! whose `[environment].rootfs` is a busybox-static image made here, with Harbor's paths
//! (`workdir = "/app"`, `[evaluator] dir = "/tests"`, `out = "/logs/verifier"`): the
//! starter fails, the gold passes, and the evaluator runs on the image (no python3, no host
//! `/usr`). Skipped with a note when busybox-static is missing, unless
//! `SPECGAP_REQUIRE_EXTERNAL=1`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Once;

use specgap_task::{Judge, SandboxJudge, Submission};

/// Writes `text` at `path`, parents created.
fn write_file(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

const BUSYBOX: &str = "/bin/busybox";

/// The environment cache of these tests, under the target directory.
fn use_test_cache() {
    static CACHE: Once = Once::new();
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("specgap-task-env-cache");
    // SAFETY: set once, before any test of this module reads it; no other code of this test
    // binary reads XDG_CACHE_HOME.
    CACHE.call_once(|| unsafe { std::env::set_var("XDG_CACHE_HOME", &dir) });
}

/// A package at `root` whose rootfs tarball holds busybox; `None` when busybox is missing.
fn image_package(root: &Path) -> Option<()> {
    if !Path::new(BUSYBOX).is_file() {
        if std::env::var("SPECGAP_REQUIRE_EXTERNAL").is_ok_and(|v| v == "1") {
            panic!("SPECGAP_REQUIRE_EXTERNAL=1 and {BUSYBOX} (Debian's busybox-static) is missing");
        }
        eprintln!("skipped: {BUSYBOX} (Debian's busybox-static) is missing");
        return None;
    }
    let image = root.join("image-tree");
    std::fs::create_dir_all(image.join("bin")).unwrap();
    std::fs::create_dir_all(image.join("etc")).unwrap();
    std::fs::copy(BUSYBOX, image.join("bin/busybox")).unwrap();
    for applet in ["sh", "cat", "test", "echo", "ls"] {
        std::os::unix::fs::symlink("busybox", image.join("bin").join(applet)).unwrap();
    }
    std::fs::write(image.join("etc/image-release"), "busybox test image\n").unwrap();
    std::fs::create_dir_all(root.join("environment")).unwrap();
    let status = Command::new("tar").arg("-C").arg(&image).arg("-cf").arg(root.join("environment/rootfs.tar")).arg(".").status().unwrap();
    assert!(status.success());
    std::fs::remove_dir_all(&image).unwrap();
    write_file(
        &root.join("task.toml"),
        r#"format = 2

[task]
name = "fixtures/image-answer"
version = "1.0.0"
description = "Write the answer where the image's tests look for it"
family = "terminal"

[environment]
rootfs = "environment/rootfs.tar"
workdir = "/app"

[evaluator]
command = "sh test.sh"
dir = "/tests"
out = "/logs/verifier"
timeout_sec = 30
"#,
    );
    write_file(&root.join("instruction.md"), "Put the answer in answer.txt.\n");
    write_file(&root.join("workspace/README"), "answers go here\n");
    write_file(&root.join("solutions/gold/answer.txt"), "42\n");
    write_file(
        &root.join("evaluator/test.sh"),
        r#"test "$(pwd)" = /tests || exit 3
test -e /usr/bin/python3 && exit 4
cat /etc/image-release >&2
if test "$(cat /app/answer.txt 2>/dev/null)" = 42; then r=1.0; else r=0.0; fi
echo "{\"version\": 1, \"reward\": $r}" > /logs/verifier/result.json
"#,
    );
    Some(())
}

#[test]
fn an_image_package_is_judged_on_its_image_at_harbor_paths() {
    use_test_cache();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("image-answer");
    let Some(()) = image_package(&root) else { return };
    let package = specgap_task::load(&root).unwrap();
    let judge = SandboxJudge::new(true).unwrap();
    let starter = judge.evaluate(&package, Submission::Starter).unwrap();
    assert_eq!(starter.result.reward, Some(0.0));
    assert_eq!(starter.stderr_tail, "busybox test image\n");
    let gold = package.solutions().gold.clone().unwrap();
    let judged = judge.evaluate(&package, Submission::Overlay("gold", &gold)).unwrap();
    assert_eq!(judged.result.reward, Some(1.0));
    // The agent's commands run on the image too, in /app.
    let heard = judge.run_on_starter(&package, "pwd; cat README; ls /tests 2>&1", std::time::Duration::from_secs(10)).unwrap();
    assert_eq!(heard.stdout, "/app\nanswers go here\nls: /tests: No such file or directory\n");
}
