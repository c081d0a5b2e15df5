//! Image environments: commands run on an image's root filesystem (a busybox-static image
//! made here from Debian's `/bin/busybox`), read-only, with the workspace at the image's
//! workdir and nothing of the host's system or private files in view.

use std::path::{Path, PathBuf};

use specgap_protocol::package::Environment;
use std::time::Duration;

use specgap_sandbox::{CommandSpec, EvaluatorRun, HostView, ImagePlacement, SandboxConfig, SandboxError, run, run_evaluator};

use crate::support::sandbox;

const BUSYBOX: &str = "/bin/busybox";

/// An image root: busybox and its applets in `/bin`, `/usr` absent, an `/etc` of its own
/// (with a `passwd` that knows no uid 1000), `/home`, and its own `/tmp` with a file that must
/// not show. `None` when busybox-static is missing outside CI (test skipped with a note).
pub(crate) fn busybox_image(dir: &Path) -> Option<PathBuf> {
    if !Path::new(BUSYBOX).is_file() {
        if std::env::var("SPECGAP_REQUIRE_EXTERNAL").is_ok_and(|v| v == "1") {
            panic!("SPECGAP_REQUIRE_EXTERNAL=1 and {BUSYBOX} (Debian's busybox-static) is missing");
        }
        eprintln!("skipped: {BUSYBOX} (Debian's busybox-static) is missing");
        return None;
    }
    let root = dir.join("image");
    for sub in ["bin", "etc", "home", "tmp", "proc", "dev"] {
        std::fs::create_dir_all(root.join(sub)).unwrap();
    }
    std::fs::copy(BUSYBOX, root.join("bin/busybox")).unwrap();
    for applet in ["sh", "cat", "echo", "ls", "id", "touch", "pwd", "whoami", "mkdir", "ping", "wget", "test"] {
        std::os::unix::fs::symlink("busybox", root.join("bin").join(applet)).unwrap();
    }
    std::fs::write(root.join("etc/motd"), "from the image\n").unwrap();
    std::fs::write(root.join("etc/passwd"), "root:x:0:0:root:/root:/bin/sh\n").unwrap();
    std::fs::write(root.join("etc/group"), "root:x:0:\n").unwrap();
    std::fs::write(root.join("tmp/left-in-image"), "x").unwrap();
    std::os::unix::fs::symlink("bin", root.join("sbin")).unwrap();
    Some(root)
}

pub(crate) fn workspace(dir: &Path) -> PathBuf {
    let ws = dir.join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(ws.join("notes.txt"), "public notes\n").unwrap();
    ws
}

/// `sh -c command` on `view` with `ws` as the workspace (at the view's workdir).
fn sh_at(view: &HostView, ws: &Path, command: &str) -> specgap_sandbox::CommandOutput {
    run(&CommandSpec::shell(command, ws), view, &sandbox()).unwrap()
}

#[test]
fn commands_run_on_the_image_with_the_workspace_at_its_workdir() {
    let dir = tempfile::tempdir().unwrap();
    let Some(image) = busybox_image(dir.path()) else { return };
    let ws = workspace(dir.path());
    let env = Environment { env: [("TASK_VAR".to_string(), "set".to_string())].into(), ..Default::default() };
    let view = HostView::on_rootfs(&image, &env, &ImagePlacement::workdir("/app")).unwrap();
    assert_eq!(view.rootfs(), Some(image.as_path()));
    let out =
        sh_at(&view, &ws, "pwd; cat notes.txt; cat /etc/motd; id -u; whoami; echo $TASK_VAR; echo made > made.txt; ls /tmp; ls /sbin/sh");
    assert_eq!(out.exit_code, Some(0), "{}", out.stderr.text());
    assert_eq!(out.stdout.text(), "/app\npublic notes\nfrom the image\n1000\nspecgap\nset\n/sbin/sh\n");
    assert_eq!(std::fs::read_to_string(ws.join("made.txt")).unwrap(), "made\n");
}

#[test]
fn nothing_of_the_host_is_in_view_and_the_image_is_read_only() {
    let dir = tempfile::tempdir().unwrap();
    let Some(image) = busybox_image(dir.path()) else { return };
    let ws = workspace(dir.path());
    let private = dir.path().join("evaluator");
    std::fs::create_dir_all(&private).unwrap();
    std::fs::write(private.join("expected.json"), "secret").unwrap();
    let view = HostView::on_rootfs(&image, &Environment::default(), &ImagePlacement::workdir("/workspace")).unwrap();
    let cwd = std::env::current_dir().unwrap();
    let denied = [
        "ls /usr".to_string(),
        "test -e /usr/bin/python3".to_string(),
        format!("ls {}", private.display()),
        format!("ls {}", image.display()),
        format!("ls {}", cwd.display()),
        "touch /bin/planted".to_string(),
        "touch /etc/planted".to_string(),
        "touch /planted".to_string(),
        "mkdir /home/planted".to_string(),
        "ls /sys/kernel".to_string(),
        "wget -q -T 2 -O /tmp/x http://127.0.0.1:9/".to_string(),
    ];
    for command in &denied {
        let out = sh_at(&view, &ws, command);
        assert_ne!(out.exit_code, Some(0), "`{command}` succeeded: {}", out.stdout.text());
    }
    assert!(!image.join("bin/planted").exists() && !image.join("etc/planted").exists() && !image.join("home/planted").exists());
    // /tmp is the sandbox's own, empty and writable; the image's /tmp stays unseen.
    let out = sh_at(&view, &ws, "echo t > /tmp/t && cat /tmp/t && ls /tmp");
    assert_eq!(out.stdout.text(), "t\nt\n");
}

#[test]
fn a_mount_point_inside_an_image_directory_is_made_in_the_image() {
    let dir = tempfile::tempdir().unwrap();
    let Some(image) = busybox_image(dir.path()) else { return };
    let ws = workspace(dir.path());
    let view = HostView::on_rootfs(&image, &Environment::default(), &ImagePlacement::workdir("/home/user/app")).unwrap();
    assert!(image.join("home/user/app").is_dir());
    let out = sh_at(&view, &ws, "pwd; cat notes.txt");
    assert_eq!(out.stdout.text(), "/home/user/app\npublic notes\n", "{}", out.stderr.text());
    // Through a file of the image: refused before anything runs.
    std::fs::write(image.join("home/file"), "").unwrap();
    match HostView::on_rootfs(&image, &Environment::default(), &ImagePlacement::workdir("/home/file/app")) {
        Err(SandboxError::BadBind { path, .. }) => assert_eq!(path, image.join("home/file")),
        other => panic!("{other:?}"),
    }
}

#[test]
fn an_image_environment_never_runs_outside_the_sandbox_nor_as_a_host_view() {
    let dir = tempfile::tempdir().unwrap();
    let Some(image) = busybox_image(dir.path()) else { return };
    let ws = workspace(dir.path());
    let view = HostView::on_rootfs(&image, &Environment::default(), &ImagePlacement::workdir("/workspace")).unwrap();
    let spec = CommandSpec::shell("cat /etc/motd", &ws);
    match run(&spec, &view, &SandboxConfig { enabled: false }) {
        Err(SandboxError::InvalidSpec(message)) => assert_eq!(
            message,
            format!(
                "an image environment ({}) runs only in the sandbox; --no-sandbox would run the command on the host's files",
                image.display()
            )
        ),
        other => panic!("{other:?}"),
    }
    let env = Environment { rootfs: Some("environment/rootfs.tar".into()), ..Default::default() };
    let err = HostView::resolve(&env).unwrap_err();
    assert_eq!(
        err.to_string(),
        "[environment].rootfs `environment/rootfs.tar` names an image; a host-command view of it would run the task on the host's files instead (build it with `specgap env build` and run on its root filesystem)"
    );
}

#[test]
fn the_evaluator_runs_on_the_image_at_harbor_paths_and_its_candidate_sees_none_of_them() {
    let dir = tempfile::tempdir().unwrap();
    let Some(image) = busybox_image(dir.path()) else { return };
    let ws = workspace(dir.path());
    let evaluator = dir.path().join("evaluator");
    std::fs::create_dir_all(&evaluator).unwrap();
    std::fs::write(evaluator.join("expected.txt"), "public notes\n").unwrap();
    let script = r#"
pwd >&2
echo "$SPECGAP_WORKSPACE $SPECGAP_OUT" >&2
cat /app/notes.txt >&2
touch /app/planted 2>/dev/null && echo "workspace writable" >&2
$SPECGAP_CANDIDATE sh -c 'pwd; ls /tests /logs/verifier 2>&1 | head -1' >&2
echo '{"version": 1, "reward": 1.0}' > /logs/verifier/result.json
"#;
    std::fs::write(evaluator.join("test.sh"), script).unwrap();
    let placement = ImagePlacement {
        workdir: PathBuf::from("/app"),
        evaluator_dir: Some(PathBuf::from("/tests")),
        evaluator_out: Some(PathBuf::from("/logs/verifier")),
    };
    let view = HostView::on_rootfs(&image, &Environment::default(), &placement).unwrap();
    let run = EvaluatorRun::new("examples/image", &evaluator, "sh test.sh", Duration::from_secs(30), &ws);
    let evaluation = run_evaluator(&run, &view, &sandbox()).unwrap();
    assert_eq!(evaluation.result.reward, Some(1.0));
    assert_eq!(evaluation.stderr_tail, "/tests\n/app /logs/verifier\npublic notes\n/app\nls: /tests: No such file or directory\n");
    assert!(!ws.join("planted").exists());
    // An agent's command on the same view sees neither the evaluator's files nor its output.
    let out = sh_at(&view, &ws, "ls /tests /logs /evaluator /out");
    assert_ne!(out.exit_code, Some(0));
    assert_eq!(out.stdout.text(), "");
}

#[test]
fn a_session_serves_commands_from_the_images_own_shell() {
    let dir = tempfile::tempdir().unwrap();
    let Some(image) = busybox_image(dir.path()) else { return };
    let ws = workspace(dir.path());
    let view = HostView::on_rootfs(&image, &Environment::default(), &ImagePlacement::workdir("/app")).unwrap();
    let mut session = specgap_sandbox::Session::new(CommandSpec::shell("", &ws), view, sandbox());
    let first = session.run_shell("pwd; echo one > one.txt", Duration::from_secs(10), 4096).unwrap();
    assert_eq!(first.stdout.text(), "/app\n", "{}", first.stderr.text());
    let second = session.run_shell("cat one.txt; cat /.specgap-server/sh 2>&1", Duration::from_secs(10), 4096).unwrap();
    assert_eq!(second.stdout.text(), "one\ncat: can't open '/.specgap-server/sh': Permission denied\n");
}
