//! Episodes in an image environment (package format 2, issue 25): the agent's commands and
//! the evaluator run on the task's image (a busybox-static rootfs made here), with Harbor's
//! paths; an agent that drives itself is refused before it starts. Skipped with a note when
//! busybox-static is missing, unless `SPECGAP_REQUIRE_EXTERNAL=1`.

use std::path::{Path, PathBuf};
use std::sync::Once;

use serde_json::json;
use specgap_protocol::run::EndReason;

use specgap_engine::session::{Agent, AgentError, AgentReply, Incoming, Opening, Workplace};
use specgap_protocol::event::Usage;

use specgap_test_support::files::write_file;
use specgap_test_support::image::{BusyboxImage, ImageTask, REWARD_FOR_42, have_busybox, tar};

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

fn use_test_cache() {
    static CACHE: Once = Once::new();
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("specgap-engine-env-cache");
    // SAFETY: set once before any test of this module reads it; nothing else in this test
    // binary reads XDG_CACHE_HOME.
    CACHE.call_once(|| unsafe { std::env::set_var("XDG_CACHE_HOME", &dir) });
}

/// A reward-scored package on a busybox image at `root`; `None` when busybox is missing.
fn image_package(root: &Path) -> Option<specgap_task::TaskPackage> {
    if !have_busybox() {
        return None;
    }
    let image = BusyboxImage::new(&["sh", "cat", "test", "echo", "ls", "pwd"]).file("etc/image-release", "busybox test image\n");
    let task = ImageTask {
        name: "fixtures/image-answer",
        description: "Write the answer",
        instruction: "Put the answer in answer.txt.\n",
        test_sh: REWARD_FOR_42,
    };
    task.write(root, &image);
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

/// `(path, content)` of each regular file of a layer tarball, whiteouts included (empty).
fn layer_files(layer: &Path) -> Vec<(String, String)> {
    let mut archive = tar::Archive::new(std::fs::File::open(layer).unwrap());
    let mut out = Vec::new();
    for entry in archive.entries().unwrap() {
        let mut entry = entry.unwrap();
        if entry.header().entry_type() != tar::EntryType::Regular {
            continue;
        }
        let mut text = String::new();
        std::io::Read::read_to_string(&mut entry, &mut text).unwrap();
        out.push((entry.path().unwrap().display().to_string(), text));
    }
    out
}

/// [`image_package`] whose tests also need `/etc/tool.conf` to say `on`: work outside the
/// workspace that the agent's machine must deliver (issue 25 item 4).
fn machine_package(root: &Path) -> Option<specgap_task::TaskPackage> {
    image_package(root)?;
    write_file(
        &root.join("evaluator/test.sh"),
        "if test \"$(cat /app/answer.txt 2>/dev/null)\" = 42 && test \"$(cat /etc/tool.conf 2>/dev/null)\" = on; then r=1.0; else r=0.0; fi\n\
         echo probe > /etc/evaluator-was-here 2>/dev/null\n\
         echo \"{\\\"version\\\": 1, \\\"reward\\\": $r}\" > /logs/verifier/result.json\n",
    );
    Some(specgap_task::load(root).unwrap())
}

#[test]
fn the_agents_changes_outside_the_workspace_are_delivered_evaluated_and_stored_as_a_layer() {
    use_test_cache();
    let dir = tempfile::tempdir().unwrap();
    let Some(package) = machine_package(&dir.path().join("pkg")) else { return };
    let mut agent = TestAgent::new(vec![
        one("write_text", json!({"path": "answer.txt", "content": "42\n"})),
        one("submit", json!({})),
        one("run_experiment", json!({"command": "echo on > /etc/tool.conf; rm /etc/image-release; cat /etc/evaluator-was-here 2>&1"})),
        one("submit", json!({})),
    ]);
    let r = run(&package, "partial", &mut agent, Options::default());
    assert_eq!(r.scores(), [0.0, 1.0]);
    // The evaluator ran on a copy: what it wrote never reached the agent's machine.
    assert_eq!(
        agent.results()[2].1.trim_end(),
        "exit status 1\n--- stdout ---\ncat: can't open '/etc/evaluator-was-here': No such file or directory"
    );
    let submissions = r.episode_dir().join("submissions");
    assert!(!submissions.join("1").join(specgap_store::MACHINE_LAYER_FILE).exists(), "an unchanged machine stores no layer");
    assert_eq!(
        layer_files(&submissions.join("2").join(specgap_store::MACHINE_LAYER_FILE)),
        [("etc/.wh.image-release".to_string(), String::new()), ("etc/tool.conf".to_string(), "on\n".to_string())]
    );
}

#[test]
fn a_change_only_to_the_machine_is_submitted_automatically_at_the_end() {
    use_test_cache();
    let dir = tempfile::tempdir().unwrap();
    let Some(package) = machine_package(&dir.path().join("pkg")) else { return };
    let mut agent = TestAgent::new(vec![
        one("write_text", json!({"path": "answer.txt", "content": "42\n"})),
        one("submit", json!({})),
        one("run_experiment", json!({"command": "echo on > /etc/tool.conf"})),
    ]);
    let r = run(&package, "partial", &mut agent, Options::default());
    assert_eq!(r.scores(), [0.0, 1.0]);
    assert!(r.ok().submissions[1].automatic);
}

#[test]
fn a_whole_machine_residual_state_starts_the_continuation_on_its_layer_and_fails_at_the_start() {
    use_test_cache();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("pkg");
    let Some(_) = machine_package(&root) else { return };
    // The predecessor configured the tool (outside the workspace) and wrote a wrong answer.
    let state = root.join("residual/half");
    write_file(
        &state.join("state.patch"),
        "diff --git a/answer.txt b/answer.txt\nnew file mode 100644\n--- /dev/null\n+++ b/answer.txt\n@@ -0,0 +1 @@\n+41\n",
    );
    write_file(&state.join("meta.toml"), "predecessor = \"scripted\"\ndeclared_complete = true\nsteps = 3\nfailing_tests = [\"answer\"]\n");
    let layer_tree = dir.path().join("layer");
    write_file(&layer_tree.join("etc/tool.conf"), "on\n");
    tar(&layer_tree, &state.join("machine.tar"), "etc");
    let package = specgap_task::load(&root).unwrap();
    let mut agent = TestAgent::new(vec![
        one("run_experiment", json!({"command": "cat /etc/tool.conf answer.txt"})),
        one("write_text", json!({"path": "answer.txt", "content": "42\n"})),
        one("submit", json!({})),
    ]);
    let options = Options { start: Some(specgap_engine::condition::Start::Residual("half".into())), ..Options::default() };
    let r = run(&package, "partial", &mut agent, options);
    assert_eq!(agent.results()[0].1.trim_end(), "exit status 0\n--- stdout ---\non\n41");
    assert_eq!(r.scores(), [1.0], "the continuation delivers the machine it inherited");
    let start = std::fs::read_to_string(r.episode_dir().join("start/result.json")).unwrap();
    assert!(start.contains("\"reward\": 0.0") || start.contains("\"reward\":0.0"), "{start}");
    // The continuation changed nothing outside the workspace: no layer of its own.
    assert!(!r.episode_dir().join("submissions/1").join(specgap_store::MACHINE_LAYER_FILE).exists());
}

#[test]
fn a_machine_layer_in_a_host_command_package_is_refused_at_load() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("pkg");
    write_file(
        &root.join("task.toml"),
        "format = 1\n\n[task]\nname = \"fixtures/host\"\nversion = \"1.0.0\"\ndescription = \"d\"\nfamily = \"terminal\"\n\n[evaluator]\ncommand = \"true\"\ntimeout_sec = 5\n",
    );
    write_file(&root.join("instruction.md"), "Do it.\n");
    write_file(&root.join("workspace/README"), "x\n");
    write_file(&root.join("evaluator/run.sh"), "true\n");
    write_file(&root.join("residual/r/state.patch"), "");
    write_file(&root.join("residual/r/meta.toml"), "predecessor = \"p\"\ndeclared_complete = true\nsteps = 1\nfailing_tests = [\"t\"]\n");
    write_file(&root.join("residual/r/machine.tar"), "");
    let err = specgap_task::load(&root).unwrap_err();
    let text = specgap_protocol::text::error_chain(&err);
    assert!(text.contains("residual/r/machine.tar") && text.contains("names no image"), "{text}");
}
