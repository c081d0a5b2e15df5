//! The starter of an image task imported without gold (`--no-gold`, or no `solution/solve.sh`):
//! the import builds the task's image anyway (issue 25's cache and engine) and takes the files
//! of its work directory as `workspace/`, as the gold path does. Where the image cannot be
//! built the task is imported with its starter marked incomplete: the line and the summary
//! say so, the import exits 1, and the evaluator refuses to score, so `specgap check` fails
//! (its `kind` row: the starter could not be evaluated) naming the reason. Fixture: `tests/fixtures/image-starter` (its Dockerfile
//! copies `words.txt` into `/app`), with a busybox root filesystem from Debian's
//! busybox-static added at `environment/rootfs/`. The image tests need podman; skipped with a
//! note without it or busybox, unless `SPECGAP_REQUIRE_EXTERNAL=1`.

use std::path::Path;

use specgap_harbor::{EngineChoice, GoldOutcome, ImportOptions, Outcome, STARTER_INCOMPLETE, import_task, summary};
use specgap_task::SandboxJudge;
use specgap_task::check::{Verdict, check_package};
use specgap_test_support::external::have_programs;
use specgap_test_support::files::walk;
use specgap_test_support::image::{BusyboxImage, have_busybox};

use crate::support::{fixture, import_one, use_test_cache};

/// The applets the fixture's image links to busybox (its test.sh and solve.sh use them).
const APPLETS: [&str; 6] = ["sh", "cat", "test", "echo", "wc", "tr"];

/// The fixture task's starter file, as its Dockerfile copies it into `/app`.
const WORDS: &str = "alpha beta gamma delta\n";

/// What the engine-less import of the fixture says about its starter.
const NO_ENGINE: &str = "the image was not built: [environment].dockerfile `environment/Dockerfile` needs a container engine \
                         (podman or docker) on PATH, and none was found; `--engine none` was given";

/// Copies the fixture task to `root`, with its busybox root filesystem when `rootfs`.
fn image_starter_task(root: &Path, rootfs: bool) {
    specgap_test_support::files::copy_dir(&fixture("image-starter"), root);
    if rootfs {
        BusyboxImage::new(&APPLETS).write_tree(&root.join("environment/rootfs"));
    }
}

fn workspace_files(package: &Path) -> Vec<String> {
    let workspace = package.join("workspace");
    walk(&workspace).iter().map(|p| p.strip_prefix(&workspace).unwrap().display().to_string()).collect()
}

fn harbor_json(package: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(package.join("evaluator/harbor.json")).unwrap()).unwrap()
}

#[test]
fn an_image_task_imported_without_gold_starts_from_the_files_its_dockerfile_copies_into_the_workdir() {
    if !have_busybox() || !have_programs(&["podman"]) {
        return;
    }
    use_test_cache();
    let dir = tempfile::tempdir().unwrap();
    let task = dir.path().join("image-starter");
    image_starter_task(&task, true);
    // --no-gold.
    let package = dir.path().join("out/image-starter");
    let options = ImportOptions { gold: false, ..ImportOptions::default() };
    let outcome = import_task(&task, &package, &options).unwrap();
    assert_eq!(
        outcome.line(),
        "imported image-starter: fixtures/image-starter (image environment, gold not made (--no-gold), 0 not mapped, verifier trusts the workspace)"
    );
    assert!(!outcome.is_failure());
    assert!(
        summary(std::slice::from_ref(&outcome))
            .contains("| imported, image environment | 1 |\n| imported, starter incomplete (image not built) | 0 |\n")
    );
    assert_eq!(workspace_files(&package), ["words.txt"]);
    assert_eq!(std::fs::read_to_string(package.join("workspace/words.txt")).unwrap(), WORDS);
    let config = harbor_json(&package);
    assert_eq!(config["starter_sha256"].as_object().unwrap().keys().collect::<Vec<_>>(), ["words.txt"]);
    assert!(config.get(STARTER_INCOMPLETE).is_none(), "{config}");
    // No solution/solve.sh: the image is built all the same (from the cache now).
    std::fs::remove_dir_all(task.join("solution")).unwrap();
    let package = dir.path().join("out/no-solution");
    let outcome = import_task(&task, &package, &ImportOptions::default()).unwrap();
    let Outcome::Imported { gold, starter_incomplete, .. } = &outcome else { panic!("{}", outcome.line()) };
    assert_eq!((gold, starter_incomplete), (&GoldOutcome::NoSolution, &None), "{}", outcome.line());
    assert_eq!(workspace_files(&package), ["words.txt"]);
    assert_eq!(std::fs::read_to_string(package.join("workspace/words.txt")).unwrap(), WORDS);
}

#[test]
fn the_first_steps_workdir_files_win_over_the_images_as_harbor_uploads_them_into_the_running_image() {
    if !have_busybox() || !have_programs(&["podman"]) {
        return;
    }
    use_test_cache();
    let dir = tempfile::tempdir().unwrap();
    let task = dir.path().join("image-starter");
    image_starter_task(&task, true);
    // The same task as one Harbor step whose workdir/ holds its own words.txt.
    let step = task.join("steps/count");
    std::fs::create_dir_all(step.join("workdir")).unwrap();
    std::fs::rename(task.join("instruction.md"), step.join("instruction.md")).unwrap();
    std::fs::rename(task.join("tests"), step.join("tests")).unwrap();
    std::fs::remove_dir_all(task.join("solution")).unwrap();
    std::fs::write(step.join("workdir/words.txt"), "one two\n").unwrap();
    let manifest = std::fs::read_to_string(task.join("task.toml")).unwrap();
    std::fs::write(task.join("task.toml"), format!("{manifest}\n[[steps]]\nname = \"count\"\n")).unwrap();
    let package = dir.path().join("out/image-starter");
    let outcome = import_task(&task, &package, &ImportOptions { gold: false, ..ImportOptions::default() }).unwrap();
    assert!(!outcome.is_failure(), "{}", outcome.line());
    assert_eq!(workspace_files(&package), ["words.txt"]);
    assert_eq!(std::fs::read_to_string(package.join("workspace/words.txt")).unwrap(), "one two\n");
}

#[test]
fn an_image_task_whose_image_cannot_be_built_is_imported_with_its_starter_marked_incomplete() {
    use_test_cache();
    let dir = tempfile::tempdir().unwrap();
    let task = dir.path().join("image-starter");
    image_starter_task(&task, false);
    let package = dir.path().join("out/image-starter");
    let options = ImportOptions { engine: EngineChoice::None, ..ImportOptions::default() };
    let outcome = import_task(&task, &package, &options).unwrap();
    assert_eq!(
        outcome.line(),
        format!(
            "imported image-starter: fixtures/image-starter (image environment, starter incomplete ({NO_ENGINE}), \
             gold not made (solve.sh needs the task's image: it was not built), 0 not mapped, verifier trusts the workspace)"
        )
    );
    assert!(outcome.is_failure());
    assert!(
        summary(std::slice::from_ref(&outcome))
            .contains("| imported, image environment | 1 |\n| imported, starter incomplete (image not built) | 1 |\n")
    );
    assert!(workspace_files(&package).is_empty());
    assert_eq!(harbor_json(&package)[STARTER_INCOMPLETE].as_str(), Some(NO_ENGINE));
    let notes = std::fs::read_to_string(package.join("NOTES.md")).unwrap();
    assert!(
        notes.contains(&format!(
            "Starter: incomplete, {NO_ENGINE}. The files the task's image has in its work directory (/app) are missing from `workspace/`"
        )),
        "{notes}"
    );
}

#[test]
fn check_fails_on_the_starter_of_a_package_whose_starter_is_marked_incomplete() {
    // A host package with the mark added: its evaluator runs here, as an image task's does
    // where its image builds.
    let (_out, package) = import_one("hello-file");
    let path = package.join("evaluator/harbor.json");
    let mut config = harbor_json(&package);
    config.as_object_mut().unwrap().insert(STARTER_INCOMPLETE.into(), NO_ENGINE.into());
    std::fs::write(&path, serde_json::to_string_pretty(&config).unwrap()).unwrap();
    let loaded = specgap_task::load(&package).unwrap();
    let report = check_package(&loaded, &SandboxJudge::new(true).unwrap());
    // The evaluator refuses the starter, so check cannot tell how the task is scored: one
    // failing row, the reason ending with the evaluator's.
    let rows: Vec<(&str, Verdict)> = report.checks.iter().map(|r| (r.check.as_str(), r.result)).collect();
    assert_eq!(rows, [("load", Verdict::Pass), ("kind", Verdict::Fail), ("verifier-trust", Verdict::Warn)]);
    assert_eq!(
        report.checks[1].reason,
        format!(
            "cannot decide the scoring kind: the starter could not be evaluated: evaluation error: evaluator exited with status 1 \
             (stderr: specgap-harbor: the starter is incomplete ({NO_ENGINE}): the files the task's image has in /workspace are \
             missing from the workspace, so no reward is given; import the task again where its image can be built)"
        )
    );
}
