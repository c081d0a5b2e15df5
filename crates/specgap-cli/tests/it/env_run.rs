//! Runs and checks on image environments (issue 25): `run.toml` records each environment's
//! digest and `--resume` refuses a changed one — a rootfs tarball rewritten, an image tag moved
//! to another image, a Dockerfile edited — while an unchanged one resumes; `check` builds a
//! Dockerfile's environment and judges starter, gold and mutant on it; `env prune` removes
//! the engine's build tags. Needs bubblewrap and Debian's busybox-static (and podman for the
//! engine parts); skipped with a note when one is missing, unless `SPECGAP_REQUIRE_EXTERNAL=1`.

use std::ffi::OsStr;
use std::path::Path;
use std::process::{Command, Output};

use specgap_protocol::run::{EnvironmentRef, RunConfig};
use specgap_store::Status;

use specgap_test_support::external::have_programs;
use specgap_test_support::files::write_file;
use specgap_test_support::image::{BUSYBOX, BusyboxImage};

use crate::support::{episodes, specgap_with};

/// The applets the test images link to busybox.
const APPLETS: [&str; 10] = ["sh", "cat", "test", "echo", "ls", "pwd", "mkdir", "chmod", "printf", "wget"];

/// `Some(())` when every program in `programs` is on PATH (or at its absolute path) and busybox
/// is installed; else a note (or, in CI, a panic).
fn have(programs: &[&str]) -> Option<()> {
    (have_programs(programs) && have_programs(&[BUSYBOX])).then_some(())
}

/// A busybox root filesystem tarball at `tarball` whose `/etc/image-release` says `release`.
fn busybox_tarball(tarball: &Path, release: &str) {
    let tree = BusyboxImage::new(&APPLETS).file("etc/image-release", &format!("{release}\n")).write_tarball(tarball);
    std::fs::remove_dir_all(&tree).unwrap();
}

/// A requirement-scored package at `root` whose `[environment]` is `environment` (TOML lines)
/// and whose evaluator is `test_sh`: the answer in `answer.txt` must be what
/// `expected_command` prints inside the image. Gold writes 42, the mutant 41.
fn image_task(root: &Path, environment: &str, test_sh: &str) {
    write_file(
        &root.join("task.toml"),
        &format!(
            "format = 2\n\n[task]\nname = \"fixtures/image-answer\"\nversion = \"1.0.0\"\ndescription = \"Write the answer\"\n\
             family = \"terminal\"\n\n[environment]\n{environment}workdir = \"/app\"\n\n\
             [evaluator]\ncommand = \"sh test.sh\"\ndir = \"/tests\"\nout = \"/logs/verifier\"\ntimeout_sec = 30\n"
        ),
    );
    write_file(&root.join("instruction.md"), "Put the answer in answer.txt.\n");
    write_file(&root.join("workspace/README"), "answers go here\n");
    write_file(&root.join("solutions/gold/answer.txt"), "42\n");
    write_file(&root.join("solutions/mutants/answer/answer.txt"), "41\n");
    write_file(
        &root.join("requirements.toml"),
        "[[requirement]]\nid = \"answer\"\npriority = 1\nstated = true\ndescription = \"answer.txt holds the answer.\"\n\
         discovery = \"The instruction states it.\"\n",
    );
    write_file(
        &root.join("observations.toml"),
        "[[observation]]\nrequirement = \"answer\"\nfailure_mode = \"wrong-answer\"\nscene = \"The owner reads the answer.\"\n\
         incident = \"The answer is not the one expected.\"\ndetail = \"answer.txt says {answer}.\"\n",
    );
    write_file(&root.join("evaluator/test.sh"), test_sh);
}

/// The evaluator of [`image_task`]: the expected answer is what `expected` prints in the image.
fn answer_test(expected: &str) -> String {
    format!(
        "want=$({expected})\ngot=$(cat /app/answer.txt 2>/dev/null)\n\
         if test \"$got\" = \"$want\"; then p=true; m=null; else p=false; m='\"wrong-answer\"'; fi\n\
         printf '{{\"version\": 1, \"requirements\": {{\"answer\": {{\"pass\": %s, \"failure_mode\": %s, \
         \"measured\": {{\"answer\": \"%s\"}}}}}}}}\\n' \"$p\" \"$m\" \"$got\" > /logs/verifier/result.json\n"
    )
}

fn run_gold(cache: &Path, task: &Path, out: &Path) -> Output {
    specgap_with(cache)
        .args([OsStr::new("run"), task.as_os_str(), OsStr::new("--agent"), OsStr::new("scripted:gold")])
        .args([OsStr::new("--condition"), OsStr::new("partial"), OsStr::new("--out"), out.as_os_str(), OsStr::new("--no-report")])
        .output()
        .unwrap()
}

fn resume(cache: &Path, out: &Path) -> Output {
    specgap_with(cache).args([OsStr::new("run"), OsStr::new("--resume"), out.as_os_str(), OsStr::new("--no-report")]).output().unwrap()
}

fn assert_ok(output: &Output) {
    assert!(
        output.status.success(),
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// The refusal's last line of stderr, after asserting the command failed.
fn refusal(output: &Output) -> String {
    assert!(!output.status.success(), "expected a refusal; stderr:\n{}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8_lossy(&output.stderr).trim_end().to_string()
}

fn stored_environments(out: &Path) -> Vec<EnvironmentRef> {
    let config: RunConfig = toml::from_str(&std::fs::read_to_string(out.join("run.toml")).unwrap()).unwrap();
    config.tasks[0].environments.clone()
}

fn one_finished(out: &Path) {
    let rows = episodes(out);
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].status, Status::Finished, "{rows:#?}");
    assert_eq!(rows[0].final_score, Some(1.0));
}

fn sha256_file(path: &Path) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(std::fs::read(path).unwrap()).iter().map(|b| format!("{b:02x}")).collect()
}

fn expected_refusal(role_source_value: &str, recorded: &str, now: &str, hint: &str) -> String {
    format!(
        "error: task fixtures/image-answer: its task environment changed since the run began ({role_source_value}: digest {recorded} \
         in run.toml, {now} now); resuming would evaluate the run's episodes in two environments. Restore the environment the \
         run began with ({hint}), or start a new run (`specgap run --out NEW_DIR`)"
    )
}

#[test]
fn a_rootfs_task_records_its_digest_and_resume_refuses_a_rewritten_tarball() {
    let Some(()) = have(&["bwrap"]) else { return };
    let dir = tempfile::tempdir().unwrap();
    let (cache, task, out) = (dir.path().join("cache"), dir.path().join("image-answer"), dir.path().join("run"));
    let tarball = task.join("environment/rootfs.tar");
    busybox_tarball(&tarball, "first image");
    image_task(&task, "rootfs = \"environment/rootfs.tar\"\n", &answer_test("echo 42"));
    let first = format!("rootfs-{}", sha256_file(&tarball));

    let output = run_gold(&cache, &task, &out);
    assert_ok(&output);
    one_finished(&out);
    assert_eq!(
        stored_environments(&out),
        [EnvironmentRef { role: "task".into(), source: "rootfs".into(), value: "environment/rootfs.tar".into(), digest: first.clone() }]
    );
    let written = std::fs::read_to_string(out.join("run.toml")).unwrap();
    assert!(
        written.contains(&format!(
            "[[tasks.environments]]\nrole = \"task\"\nsource = \"rootfs\"\nvalue = \"environment/rootfs.tar\"\ndigest = \"{first}\"\n"
        )),
        "{written}"
    );

    // Unchanged: resumes (nothing left to run).
    assert_ok(&resume(&cache, &out));
    one_finished(&out);

    // The tarball rewritten: refused before anything runs, naming both digests.
    busybox_tarball(&tarball, "second image");
    let second = format!("rootfs-{}", sha256_file(&tarball));
    assert_ne!(first, second);
    assert_eq!(
        refusal(&resume(&cache, &out)),
        expected_refusal("rootfs `environment/rootfs.tar`", &first, &second, "the package's file as it was")
    );
    one_finished(&out);
}

#[test]
fn a_run_toml_from_before_digests_resumes_with_a_note() {
    let Some(()) = have(&["bwrap"]) else { return };
    let dir = tempfile::tempdir().unwrap();
    let (cache, task, out) = (dir.path().join("cache"), dir.path().join("image-answer"), dir.path().join("run"));
    busybox_tarball(&task.join("environment/rootfs.tar"), "old store");
    image_task(&task, "rootfs = \"environment/rootfs.tar\"\n", &answer_test("echo 42"));
    assert_ok(&run_gold(&cache, &task, &out));
    let path = out.join("run.toml");
    let mut config: RunConfig = toml::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    config.tasks[0].environments.clear();
    std::fs::write(&path, toml::to_string(&config).unwrap()).unwrap();
    let output = resume(&cache, &out);
    assert_ok(&output);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(
            "note: run.toml records no environment digest for task fixtures/image-answer (written before specgap recorded them); \
             its image is not checked\n"
        ),
        "{stderr}"
    );
    one_finished(&out);
}

/// The busybox base image of this binary's engine tests, imported once per process (tests
/// run in parallel; a second import would move the tag under a test that has just read it).
fn base_image() -> Option<&'static str> {
    static IMPORTED: std::sync::OnceLock<Option<&'static str>> = std::sync::OnceLock::new();
    *IMPORTED.get_or_init(|| {
        have(&["podman", "bwrap"])?;
        const TAG: &str = "localhost/specgap-test/busybox-cli:1";
        let dir = tempfile::tempdir().unwrap();
        let tarball = dir.path().join("base.tar");
        busybox_tarball(&tarball, "base image");
        import(&tarball, TAG);
        Some(TAG)
    })
}

/// Imports `tarball` into podman as `tag`; returns the image id.
fn import(tarball: &Path, tag: &str) -> String {
    let out = Command::new("podman").arg("import").arg("--quiet").arg(tarball).arg(tag).output().unwrap();
    assert!(out.status.success(), "podman import: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().trim().trim_start_matches("sha256:").to_string()
}

fn podman(args: &[&str]) -> String {
    let out = Command::new("podman").args(args).output().unwrap();
    assert!(out.status.success(), "podman {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn an_image_reference_moved_to_another_image_is_refused_and_moved_back_resumes() {
    let Some(_) = base_image() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (cache, task, out) = (dir.path().join("cache"), dir.path().join("image-answer"), dir.path().join("run"));
    // A tag of this test's own, so that no other test sees it move.
    let tag = format!("localhost/specgap-test/moving-{}:1", std::process::id());
    busybox_tarball(&dir.path().join("a.tar"), "image a");
    busybox_tarball(&dir.path().join("b.tar"), "image b");
    let first = import(&dir.path().join("a.tar"), &tag);
    image_task(&task, &format!("image = \"{tag}\"\n"), &answer_test("echo 42"));

    assert_ok(&run_gold(&cache, &task, &out));
    one_finished(&out);
    let recorded = format!("image-{first}");
    assert_eq!(
        stored_environments(&out),
        [EnvironmentRef { role: "task".into(), source: "image".into(), value: tag.clone(), digest: recorded.clone() }]
    );

    let second = import(&dir.path().join("b.tar"), &tag);
    assert_ne!(first, second);
    assert_eq!(
        refusal(&resume(&cache, &out)),
        expected_refusal(
            &format!("image `{tag}`"),
            &recorded,
            &format!("image-{second}"),
            "point the reference back at the image whose config digest (podman's image id) is recorded, e.g. with `podman tag` \
             or by pushing that image to the tag again"
        )
    );
    podman(&["tag", &first, &tag]);
    assert_ok(&resume(&cache, &out));
    one_finished(&out);
    podman(&["rmi", "--force", &tag, &second, &first]);
}

/// A Dockerfile on the base image that installs the tool the evaluator asks for the answer
/// (absent from the host).
fn dockerfile(base: &str, answer: &str) -> String {
    format!(
        "FROM {base}\nRUN mkdir -p /opt/oracle && printf '#!/bin/sh\\necho {answer}\\n' > /opt/oracle/answer && chmod 755 /opt/oracle/answer\n"
    )
}

#[test]
fn a_dockerfile_task_is_checked_on_its_image_and_resume_refuses_an_edited_dockerfile() {
    let Some(base) = base_image() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (cache, task, out) = (dir.path().join("cache"), dir.path().join("image-answer"), dir.path().join("run"));
    write_file(&task.join("environment/Dockerfile"), &dockerfile(base, "42"));
    image_task(&task, "dockerfile = \"environment/Dockerfile\"\n", &answer_test("/opt/oracle/answer"));

    // `check` builds the environment and judges starter, gold and mutant on it.
    let output = specgap_with(&cache).arg("check").arg("--json").arg(&task).output().unwrap();
    let json: serde_json::Value = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr)));
    let rows: Vec<(String, String)> = json["tasks"][0]["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["check"].as_str().unwrap().to_string(), r["result"].as_str().unwrap().to_string()))
        .collect();
    for expected in ["starter", "gold", "mutant:answer"] {
        assert!(rows.contains(&(expected.to_string(), "pass".to_string())), "{expected} does not pass: {json:#}");
    }
    assert!(!rows.iter().any(|(check, _)| check == "network"), "{json:#}");

    assert_ok(&run_gold(&cache, &task, &out));
    one_finished(&out);
    let recorded = stored_environments(&out);
    assert_eq!(recorded.len(), 1);
    assert!(recorded[0].digest.starts_with("build-"), "{recorded:?}");
    let built = std::fs::read_dir(cache.join("specgap/env")).unwrap().filter_map(|e| e.ok()).map(|e| e.file_name()).collect::<Vec<_>>();
    assert!(built.iter().any(|name| name.to_string_lossy() == recorded[0].digest), "{built:?}");

    write_file(&task.join("environment/Dockerfile"), &dockerfile(base, "43"));
    let message = refusal(&resume(&cache, &out));
    let prefix = format!(
        "error: task fixtures/image-answer: its task environment changed since the run began (dockerfile `environment/Dockerfile`: \
         digest {} in run.toml, build-",
        recorded[0].digest
    );
    assert!(message.starts_with(&prefix), "{message}");
    assert!(message.ends_with("(the build context's files as they were), or start a new run (`specgap run --out NEW_DIR`)"), "{message}");

    // Restored: resumes.
    write_file(&task.join("environment/Dockerfile"), &dockerfile(base, "42"));
    assert_ok(&resume(&cache, &out));
    one_finished(&out);

    // `env prune` removes the cache entry and the engine's tag of the build.
    let tag = format!("localhost/specgap-env/build:{}", &recorded[0].digest["build-".len().."build-".len() + 16]);
    assert!(podman(&["images", "--format", "{{.Repository}}:{{.Tag}}"]).lines().any(|l| l == tag), "no tag {tag}");
    let pruned = specgap_with(&cache).args(["env", "prune", "--engine", "podman"]).output().unwrap();
    assert_ok(&pruned);
    let stdout = String::from_utf8_lossy(&pruned.stdout);
    assert!(stdout.contains(&format!("removed {}\n", recorded[0].digest)), "{stdout}");
    assert!(stdout.contains(&format!("untagged {tag}\n")), "{stdout}");
    assert!(!podman(&["images", "--format", "{{.Repository}}:{{.Tag}}"]).lines().any(|l| l == tag), "{tag} is still there");
}

#[test]
fn check_names_an_evaluator_that_downloads_during_evaluation() {
    let Some(()) = have(&["bwrap"]) else { return };
    let dir = tempfile::tempdir().unwrap();
    let (cache, task) = (dir.path().join("cache"), dir.path().join("image-answer"));
    busybox_tarball(&task.join("environment/rootfs.tar"), "offline image");
    let test_sh = format!("wget -q -O /tmp/tool http://downloads.example.com/tool || exit 1\n{}", answer_test("echo 42"));
    image_task(&task, "rootfs = \"environment/rootfs.tar\"\n", &test_sh);
    let output = specgap_with(&cache).arg("check").arg("--json").arg(&task).output().unwrap();
    assert_eq!(output.status.code(), Some(1), "{}", String::from_utf8_lossy(&output.stderr));
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let network = json["tasks"][0]["checks"].as_array().unwrap().iter().find(|r| r["check"] == "network").cloned();
    assert_eq!(
        network,
        Some(serde_json::json!({
            "check": "network",
            "result": "fail",
            "reason": "the starter's evaluation tried to reach the network (stderr: wget: bad address 'downloads.example.com'); \
                       evaluations run without network, so what the evaluator downloads belongs in the environment's build \
                       (e.g. a RUN line of the Dockerfile)"
        })),
        "{json:#}"
    );
}

#[test]
fn a_cli_agent_on_an_image_without_a_shell_is_refused_before_the_run_starts_naming_adapter_and_image() {
    let Some(()) = have(&[]) else { return };
    let dir = tempfile::tempdir().unwrap();
    let (cache, task, out) = (dir.path().join("cache"), dir.path().join("image-answer"), dir.path().join("run"));
    // busybox alone, without its applet links: no /bin/sh for the CLI and the harness tools.
    let tree = dir.path().join("tree");
    std::fs::create_dir_all(tree.join("bin")).unwrap();
    std::fs::copy(BUSYBOX, tree.join("bin/busybox")).unwrap();
    std::fs::create_dir_all(task.join("environment")).unwrap();
    let status = Command::new("tar").arg("-C").arg(&tree).arg("-cf").arg(task.join("environment/rootfs.tar")).arg(".").status().unwrap();
    assert!(status.success());
    image_task(&task, "rootfs = \"environment/rootfs.tar\"\n", &answer_test("echo 42"));
    let output = specgap_with(&cache)
        .arg("run")
        .arg(&task)
        .args(["--agent", "cli:command=true", "--model", "mock-mini-model", "--condition", "partial", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    // The environment is built first (its one line), then the check refuses.
    let stderr = refusal(&output);
    assert_eq!(
        stderr.lines().last().unwrap_or_default(),
        "error: agent cli:command=true cannot run in the image of task fixtures/image-answer ([environment].rootfs \
         `environment/rootfs.tar`): the image has no /bin/sh, which starts the CLI and the harness tools; nothing was \
         started. Run the task with another agent, or give its image what the agent needs"
    );
    assert!(!out.exists(), "nothing was created");
}

#[test]
fn check_judges_a_whole_machine_residual_state_on_its_layer() {
    let Some(()) = have(&["bwrap"]) else { return };
    let dir = tempfile::tempdir().unwrap();
    let (cache, task) = (dir.path().join("cache"), dir.path().join("image-answer"));
    busybox_tarball(&task.join("environment/rootfs.tar"), "machine image");
    // The right answer is wrong on a machine a predecessor broke (a file outside the workspace).
    image_task(
        &task,
        "rootfs = \"environment/rootfs.tar\"\n",
        &answer_test("if test -e /etc/broken; then echo repaired; else echo 42; fi"),
    );
    let state = task.join("residual/broke-the-machine");
    write_file(
        &state.join("state.patch"),
        "diff --git a/answer.txt b/answer.txt\nnew file mode 100644\n--- /dev/null\n+++ b/answer.txt\n@@ -0,0 +1 @@\n+42\n",
    );
    write_file(&state.join("meta.toml"), "predecessor = \"scripted\"\ndeclared_complete = true\nsteps = 2\nfailing_tests = [\"answer\"]\n");
    let layer = dir.path().join("layer");
    write_file(&layer.join("etc/broken"), "yes\n");
    assert!(Command::new("tar").arg("-C").arg(&layer).arg("-cf").arg(state.join("machine.tar")).arg("etc").status().unwrap().success());
    let output = specgap_with(&cache).arg("check").arg("--json").arg(&task).output().unwrap();
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let row = json["tasks"][0]["checks"].as_array().unwrap().iter().find(|r| r["check"] == "residual:broke-the-machine").cloned();
    assert_eq!(row.as_ref().map(|r| r["result"].clone()), Some(serde_json::json!("pass")), "{json:#}");
}
