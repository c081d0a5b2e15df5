//! An imported image task whose image has neither python3 nor bash (issue 26): the evaluator,
//! `harbor_verify.py`, runs on the host's python3 (`[evaluator.environment].commands`) and
//! only `test.sh` runs on the task's image, started as Harbor starts it (made executable, then
//! by its `#!` line from `sh -c`). Fixture: `tests/fixtures/busybox-total`, with a busybox
//! root filesystem from Debian's busybox-static added at `environment/rootfs/` (its test.sh
//! refuses to score where python3 or bash exist, and is not executable in the fixture). The
//! tests need podman and busybox: skipped with a note without them, unless
//! `SPECGAP_REQUIRE_EXTERNAL=1`.

use std::path::{Path, PathBuf};

use specgap_harbor::{GoldOutcome, ImportOptions, Outcome, import_task};
use specgap_task::check::{Verdict, check_package};
use specgap_task::{Judge, SandboxJudge, Submission};
use specgap_test_support::external::have_programs;
use specgap_test_support::image::{BusyboxImage, have_busybox};

use crate::support::{fixture, use_test_cache};

/// The applets of the fixture's image (its test.sh and solve.sh use them).
const APPLETS: [&str; 3] = ["sh", "cat", "test"];

/// Whether podman and busybox-static are here (else skipped, or failed when required).
fn have_image_tools() -> bool {
    have_busybox() && have_programs(&["podman"])
}

/// Copies the fixture to `root` with its busybox root filesystem, and imports it (gold made
/// on the image); returns the package.
fn import_busybox_total(root: &Path) -> PathBuf {
    use_test_cache();
    let task = root.join("busybox-total");
    specgap_test_support::files::copy_dir(&fixture("busybox-total"), &task);
    // Not executable: the evaluator makes it so, as Harbor's verifier does.
    std::fs::set_permissions(task.join("tests/test.sh"), std::os::unix::fs::PermissionsExt::from_mode(0o644)).unwrap();
    BusyboxImage::new(&APPLETS).write_tree(&task.join("environment/rootfs"));
    let package = root.join("out/busybox-total");
    let outcome = import_task(&task, &package, &ImportOptions::default()).unwrap();
    let Outcome::Imported { environment, gold, starter_incomplete, .. } = &outcome else { panic!("{}", outcome.line()) };
    assert_eq!((*environment, gold, starter_incomplete), ("image", &GoldOutcome::Written { files: 1, deleted: 0 }, &None));
    package
}

/// Evaluates the package's starter with `total.sh` added; returns the reward and the
/// evaluator's stderr.
fn evaluate_total_sh(package: &Path, total_sh: &str) -> (f64, String) {
    let loaded = specgap_task::load(package).unwrap();
    let submission = tempfile::tempdir().unwrap();
    std::fs::copy(package.join("workspace/numbers.txt"), submission.path().join("numbers.txt")).unwrap();
    std::fs::write(submission.path().join("total.sh"), total_sh).unwrap();
    let judged = SandboxJudge::new(true).unwrap().evaluate(&loaded, Submission::Directory(submission.path())).unwrap();
    (judged.result.reward.unwrap(), judged.stderr_tail)
}

fn refusals(stderr: &str) -> Vec<&str> {
    stderr.lines().filter_map(|l| l.strip_prefix("specgap-harbor: reward refused: ")).collect()
}

#[test]
fn the_evaluator_runs_on_host_python3_and_its_test_sh_on_the_image() {
    if !have_image_tools() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let package = import_busybox_total(dir.path());
    let table: toml::Table = std::fs::read_to_string(package.join("task.toml")).unwrap().parse().unwrap();
    let environment = table["evaluator"]["environment"].as_table().unwrap();
    assert_eq!(environment.keys().collect::<Vec<_>>(), ["commands"]);
    assert_eq!(environment["commands"].as_array().unwrap(), &[toml::Value::from("python3")]);
    let loaded = specgap_task::load(&package).unwrap();
    let image = loaded.image_environment().unwrap();
    assert_eq!((image.evaluator_on_host(), image.evaluator_source.is_none()), (true, true));
    // Without the key the evaluator would run on the image, which has no python3.
    let manifest = std::fs::read_to_string(package.join("task.toml")).unwrap();
    let without = manifest.replace("\n[evaluator.environment]\ncommands = [\"python3\"]\n", "\n");
    assert_ne!(without, manifest);
    std::fs::write(package.join("task.toml"), without).unwrap();
    let loaded = specgap_task::load(&package).unwrap();
    let error = SandboxJudge::new(true).unwrap().evaluate(&loaded, Submission::Starter).unwrap_err();
    // 127: the image's sh found no python3.
    assert_eq!(specgap_protocol::text::error_chain(&error), "evaluation error: evaluator exited with status 127");
}

#[test]
fn check_passes_on_an_image_without_python3_gold_one_starter_zero() {
    if !have_image_tools() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let package = import_busybox_total(dir.path());
    let loaded = specgap_task::load(&package).unwrap();
    let report = check_package(&loaded, &SandboxJudge::new(true).unwrap());
    let rows: Vec<(&str, Verdict, &str)> = report.checks.iter().map(|r| (r.check.as_str(), r.result, r.reason.as_str())).collect();
    let get = |name: &str| rows.iter().find(|(c, ..)| *c == name).map(|(_, v, _)| *v);
    assert_eq!(get("gold"), Some(Verdict::Pass), "{rows:#?}");
    assert_eq!(get("starter"), Some(Verdict::Pass), "{rows:#?}");
    assert_eq!(get("verifier-trust"), Some(Verdict::Warn), "{rows:#?}");
    assert!(rows.iter().all(|(_, v, _)| *v != Verdict::Fail), "{rows:#?}");
    let judge = SandboxJudge::new(true).unwrap();
    let gold = judge.evaluate(&loaded, Submission::Overlay("gold", loaded.solution("gold").unwrap())).unwrap();
    assert_eq!(gold.result.reward, Some(1.0), "{}", gold.stderr_tail);
    let starter = judge.evaluate(&loaded, Submission::Starter).unwrap();
    assert_eq!(starter.result.reward, Some(0.0), "{}", starter.stderr_tail);
}

#[test]
fn a_submission_forging_reward_txt_or_reward_json_on_the_image_is_refused() {
    if !have_image_tools() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let package = import_busybox_total(dir.path());
    let honest = "sum=0\nwhile read -r n; do sum=$((sum + n)); done < /app/numbers.txt\necho \"$sum\"\n";
    let (reward, stderr) = evaluate_total_sh(&package, honest);
    assert_eq!(reward, 1.0, "{stderr}");
    assert_eq!(refusals(&stderr), Vec::<&str>::new());
    // Named plainly, and killing test.sh so that its own reward.txt is never written.
    let (reward, stderr) = evaluate_total_sh(&package, "echo 1 > /logs/verifier/reward.txt\nkill -9 $PPID\n");
    assert_eq!(reward, 0.0, "{stderr}");
    assert_eq!(refusals(&stderr), ["total.sh names reward.txt", "step main: test.sh was killed by signal 9"]);
    // The path assembled at run time: the killed test.sh gives it away.
    let (reward, stderr) = evaluate_total_sh(&package, "p=/logs/veri\np=${p}fier/rew\necho 1 > ${p}ard.txt\nkill -9 $PPID\n");
    assert_eq!(reward, 0.0, "{stderr}");
    assert_eq!(refusals(&stderr), ["step main: test.sh was killed by signal 9"]);
    // reward.json, which Harbor prefers and this task's tests never write.
    let (reward, stderr) = evaluate_total_sh(&package, "echo '{\"reward\": 1}' > /logs/verifier/reward.json\necho 12\n");
    assert_eq!(reward, 0.0, "{stderr}");
    assert_eq!(
        refusals(&stderr),
        ["total.sh names reward.json", "step main: reward.json appeared in /logs/verifier, which the task's tests never write"]
    );
}
