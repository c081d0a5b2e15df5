//! Episodes in an image environment (package format 2, issue 25): the agent's commands and
//! the evaluator run on the task's image (a busybox-static rootfs made here), with Harbor's
//! paths; an agent that drives itself is refused before it starts. Skipped with a note when
//! busybox-static is missing, unless `SPECGAP_REQUIRE_EXTERNAL=1`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Once;

use serde_json::json;
use specgap_protocol::run::EndReason;

use specgap_engine::session::{Agent, AgentError, AgentReply, Incoming, Opening, Workplace};
use specgap_protocol::event::Usage;

use crate::support::{Options, TestAgent, one, run};

/// An agent that says it drives itself: it records the image its workplace is on and stops
/// at its start.
#[derive(Default)]
struct SelfDriving {
    rootfs: Option<PathBuf>,
}

impl Agent for SelfDriving {
    fn drives_itself(&self) -> bool {
        true
    }

    fn enter(&mut self, place: &Workplace) -> Result<(), AgentError> {
        self.rootfs = place.host.rootfs().map(Path::to_path_buf);
        Ok(())
    }

    fn start(&mut self, _opening: &Opening) -> Result<(), AgentError> {
        Err(AgentError::new("the test agent stops here", true))
    }

    fn next_turn(&mut self, _inbox: &[Incoming]) -> Result<AgentReply, AgentError> {
        panic!("asked for a turn after a failed start");
    }

    fn usage(&self) -> Usage {
        Usage::default()
    }
}

const BUSYBOX: &str = "/bin/busybox";

fn use_test_cache() {
    static CACHE: Once = Once::new();
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("specgap-engine-env-cache");
    // SAFETY: set once before any test of this module reads it; nothing else in this test
    // binary reads XDG_CACHE_HOME.
    CACHE.call_once(|| unsafe { std::env::set_var("XDG_CACHE_HOME", &dir) });
}

fn write_file(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// A reward-scored package on a busybox image at `root`; `None` when busybox is missing.
fn image_package(root: &Path) -> Option<specgap_task::TaskPackage> {
    if !Path::new(BUSYBOX).is_file() {
        if std::env::var("SPECGAP_REQUIRE_EXTERNAL").is_ok_and(|v| v == "1") {
            panic!("SPECGAP_REQUIRE_EXTERNAL=1 and {BUSYBOX} (Debian's busybox-static) is missing");
        }
        eprintln!("skipped: {BUSYBOX} (Debian's busybox-static) is missing");
        return None;
    }
    let image = root.with_extension("image-tree");
    std::fs::create_dir_all(image.join("bin")).unwrap();
    std::fs::create_dir_all(image.join("etc")).unwrap();
    std::fs::copy(BUSYBOX, image.join("bin/busybox")).unwrap();
    for applet in ["sh", "cat", "test", "echo", "ls", "pwd"] {
        std::os::unix::fs::symlink("busybox", image.join("bin").join(applet)).unwrap();
    }
    std::fs::write(image.join("etc/image-release"), "busybox test image\n").unwrap();
    std::fs::create_dir_all(root.join("environment")).unwrap();
    let tar = root.join("environment/rootfs.tar");
    assert!(Command::new("tar").arg("-C").arg(&image).arg("-cf").arg(&tar).arg(".").status().unwrap().success());
    write_file(
        &root.join("task.toml"),
        "format = 2\n\n[task]\nname = \"fixtures/image-answer\"\nversion = \"1.0.0\"\ndescription = \"Write the answer\"\nfamily = \"terminal\"\n\n\
         [environment]\nrootfs = \"environment/rootfs.tar\"\nworkdir = \"/app\"\n\n\
         [evaluator]\ncommand = \"sh test.sh\"\ndir = \"/tests\"\nout = \"/logs/verifier\"\ntimeout_sec = 30\n",
    );
    write_file(&root.join("instruction.md"), "Put the answer in answer.txt.\n");
    write_file(&root.join("workspace/README"), "answers go here\n");
    write_file(
        &root.join("evaluator/test.sh"),
        "if test \"$(cat /app/answer.txt 2>/dev/null)\" = 42; then r=1.0; else r=0.0; fi\n\
         echo \"{\\\"version\\\": 1, \\\"reward\\\": $r}\" > /logs/verifier/result.json\n",
    );
    Some(specgap_task::load(root).unwrap())
}

#[test]
fn an_episode_runs_its_commands_and_evaluator_on_the_image() {
    use_test_cache();
    let dir = tempfile::tempdir().unwrap();
    let Some(package) = image_package(&dir.path().join("pkg")) else { return };
    let mut agent = TestAgent::new(vec![
        one("run_experiment", json!({"command": "pwd; cat /etc/image-release; ls /usr /tests 2>&1; cat README"})),
        one("write_text", json!({"path": "answer.txt", "content": "42\n"})),
        one("submit", json!({})),
    ]);
    let r = run(&package, "partial", &mut agent, Options::default());
    assert_eq!(r.ok().end_reason, EndReason::Accepted);
    assert_eq!(r.scores(), [1.0]);
    let results = agent.results();
    assert_eq!(
        results[0].1.trim_end(),
        "exit status 0\n--- stdout ---\n/app\nbusybox test image\nls: /usr: No such file or directory\n\
         ls: /tests: No such file or directory\nanswers go here"
    );
}

#[test]
fn an_agent_that_drives_itself_is_started_on_the_image() {
    // Whether its CLI can run in the image is the agent's to say (specgap-agents
    // `cli::image::check`); the engine hands it the image's view like any other agent's.
    use_test_cache();
    let dir = tempfile::tempdir().unwrap();
    let Some(package) = image_package(&dir.path().join("pkg")) else { return };
    let mut agent = SelfDriving::default();
    let options = Options { agent_spec: Some("cli:codex".into()), ..Options::default() };
    let r = run(&package, "partial", &mut agent, options);
    let message = format!("{:?}", r.outcome.as_ref().unwrap_err());
    assert!(message.contains("the test agent stops here"), "{message}");
    let rootfs = agent.rootfs.expect("the workplace is on the image");
    assert_eq!(std::fs::read_to_string(rootfs.join("etc/image-release")).unwrap(), "busybox test image\n");
}
