//! `specgap export-task`: specgap packages as Harbor task directories, validated with
//! Harbor's own task model; the round trips.

use std::path::{Path, PathBuf};

use specgap_harbor::export::{Exported, export_task};
use specgap_harbor::{ImportOptions, Outcome, import_task};
use specgap_task::check::{Verdict, check_package};
use specgap_test_support::files::copy_dir;

use crate::harbor::validate_task;
use crate::support::{dataset, fixture, import_one};

fn task_fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../specgap-task/tests/fixtures").join(name)
}

#[test]
fn harbors_model_has_every_field_the_mapping_names() {
    let Some((ok, lines)) = validate_task(&[Path::new("fields")]) else {
        return;
    };
    assert!(ok, "{lines:?}");
    assert_eq!(
        lines,
        [
            "TaskConfig.steps present",
            "TaskConfig.artifacts present",
            "TaskConfig.multi_step_reward_strategy present",
            "VerifierConfig.environment_mode present",
            "EnvironmentConfig.memory_mb present",
            "EnvironmentConfig.workdir present",
            "StepConfig.name present",
        ]
    );
}

#[test]
fn the_fixture_tasks_are_valid_harbor_tasks() {
    let dirs: Vec<PathBuf> = ["app-workdir", "hello-file", "needs-image", "several-keys", "two-steps", "with-compose"]
        .iter()
        .map(|d| dataset().join(d))
        .collect();
    let args: Vec<&Path> = dirs.iter().map(PathBuf::as_path).collect();
    let Some((ok, lines)) = validate_task(&args) else {
        return;
    };
    assert!(ok, "{lines:?}");
    assert_eq!(lines.len(), 6);
}

#[test]
fn native_packages_export_as_valid_harbor_tasks() {
    let out = tempfile::tempdir().unwrap();
    let mut written = Vec::new();
    for name in ["req-basic", "test-basic", "delivery-basic"] {
        let dir = out.path().join(name);
        assert_eq!(export_task(&task_fixture(name), &dir).unwrap(), Exported::Converted { gold: true, steps: 0 });
        written.push(dir);
    }
    let manifest: toml::Table = std::fs::read_to_string(written[0].join("task.toml")).unwrap().parse().unwrap();
    assert_eq!(manifest["task"]["name"].as_str(), Some("fixtures/req-basic"));
    assert_eq!(manifest["agent"]["timeout_sec"].as_float(), Some(900.0));
    assert_eq!(manifest["verifier"]["timeout_sec"].as_float(), Some(60.0));
    assert_eq!(manifest["environment"]["network_mode"].as_str(), Some("no-network"));
    assert_eq!(manifest["environment"]["workdir"].as_str(), Some("/workspace"));
    assert_eq!(manifest["metadata"]["family"].as_str(), Some("swe"));
    // The full instruction is what Harbor's agent gets.
    let full = std::fs::read_to_string(task_fixture("req-basic").join("instruction.full.md")).unwrap();
    assert_eq!(std::fs::read_to_string(written[0].join("instruction.md")).unwrap(), full);
    assert_eq!(
        std::fs::read_to_string(written[0].join("environment/Dockerfile")).unwrap(),
        "FROM python:3.12-slim\nWORKDIR /workspace\nCOPY workspace/ /workspace/\n"
    );
    let args: Vec<&Path> = written.iter().map(PathBuf::as_path).collect();
    let Some((ok, lines)) = validate_task(&args) else {
        return;
    };
    assert!(ok, "{lines:?}");
    assert_eq!(lines, ["valid fixtures/req-basic steps=0", "valid fixtures/test-basic steps=0", "valid fixtures/delivery-basic steps=0"]);
}

#[test]
fn import_export_import_gives_the_same_package_hash() {
    for task in ["hello-file", "two-steps", "app-workdir"] {
        let (_first, package) = import_one(task);
        let exported = tempfile::tempdir().unwrap();
        let harbor = exported.path().join(task);
        assert_eq!(export_task(&package, &harbor).unwrap(), Exported::Original);
        if let Some((ok, lines)) = validate_task(&[harbor.as_path()]) {
            assert!(ok, "{lines:?}");
        }
        let again = tempfile::tempdir().unwrap();
        let outcome = import_task(&harbor, &again.path().join(task), &ImportOptions::default()).unwrap();
        let Outcome::Imported { package: second, .. } = outcome else { panic!("{}", outcome.line()) };
        let (a, b) = (specgap_task::load(&package).unwrap(), specgap_task::load(&second).unwrap());
        assert_eq!(a.hash(), b.hash(), "{task}");
    }
}

#[test]
fn an_exported_native_package_imports_back_and_its_gold_still_passes() {
    let exported = tempfile::tempdir().unwrap();
    let harbor = exported.path().join("req-basic");
    export_task(&task_fixture("req-basic"), &harbor).unwrap();
    let imported = tempfile::tempdir().unwrap();
    let outcome = import_task(&harbor, &imported.path().join("req-basic"), &ImportOptions::default()).unwrap();
    let Outcome::Imported { package, .. } = &outcome else { panic!("{}", outcome.line()) };
    let loaded = specgap_task::load(package).unwrap();
    let original = specgap_task::load(task_fixture("req-basic")).unwrap();
    assert_eq!(loaded.instruction(), original.instruction_full().unwrap());
    let judge = specgap_task::SandboxJudge::new(true).unwrap();
    let report = check_package(&loaded, &judge);
    let rows: Vec<(String, Verdict)> = report.checks.iter().map(|r| (r.check.clone(), r.result)).collect();
    assert_eq!(rows.iter().find(|(c, _)| c == "gold").map(|(_, v)| *v), Some(Verdict::Pass), "{:?}", report.checks);
    assert_eq!(rows.iter().find(|(c, _)| c == "starter").map(|(_, v)| *v), Some(Verdict::Pass), "{:?}", report.checks);
}

/// Copies the fixture package `tests/fixtures/staged-native` (two stages: `first` asks for
/// a.txt, min_reward 1; `second` adds notes.txt and asks for b.txt; a gold per stage).
fn staged_native() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let package = dir.path().join("staged-native");
    copy_dir(&fixture("staged-native"), &package);
    (dir, package)
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn a_staged_native_package_exports_one_harbor_step_per_stage() {
    let (_dir, package) = staged_native();
    let out = tempfile::tempdir().unwrap();
    let harbor = out.path().join("staged-native");
    assert_eq!(export_task(&package, &harbor).unwrap(), Exported::Converted { gold: true, steps: 2 });
    let manifest: toml::Table = read(&harbor.join("task.toml")).parse().unwrap();
    assert_eq!(manifest["multi_step_reward_strategy"].as_str(), Some("mean"));
    let steps = manifest["steps"].as_array().unwrap();
    let names: Vec<(&str, Option<f64>)> =
        steps.iter().map(|s| (s["name"].as_str().unwrap(), s.get("min_reward").and_then(toml::Value::as_float))).collect();
    assert_eq!(names, [("first", Some(1.0)), ("second", None)]);
    assert_eq!(read(&harbor.join("steps/first/instruction.md")), "Write a.txt holding the word: one\n");
    assert_eq!(read(&harbor.join("steps/second/instruction.md")), "Write b.txt holding the word: two. Keep notes.txt as it is.\n");
    // Stage 2's files are step 2's workdir/, uploaded when the step begins; not in the image.
    assert_eq!(read(&harbor.join("steps/second/workdir/notes.txt")), "from stage two\n");
    assert!(!harbor.join("environment/workspace/notes.txt").exists());
    assert!(!harbor.join("steps/first/workdir").exists());
    // Each step's tests run the evaluator as that stage; its own gold is its solution.
    for (step, k) in [("first", 1), ("second", 2)] {
        let test = read(&harbor.join(format!("steps/{step}/tests/test.sh")));
        assert!(test.contains(&format!("SPECGAP_CANDIDATE=/tests/specgap-candidate SPECGAP_STAGE={k}\n")), "{test}");
        assert!(harbor.join(format!("steps/{step}/tests/evaluator/evaluate.py")).is_file());
        assert!(harbor.join(format!("steps/{step}/solution/solve.sh")).is_file());
    }
    assert_eq!(read(&harbor.join("steps/first/solution/gold/a.txt")), "one\n");
    assert_eq!(read(&harbor.join("steps/second/solution/gold/b.txt")), "two\n");
    // A multi-step Harbor task has no top-level instruction or tests.
    assert!(!harbor.join("instruction.md").exists() && !harbor.join("tests").exists() && !harbor.join("solution").exists());
    let Some((ok, lines)) = validate_task(&[harbor.as_path()]) else {
        return;
    };
    assert!(ok, "{lines:?}");
    assert_eq!(lines, ["valid fixtures/staged-native steps=2"]);
}

#[test]
fn an_exported_staged_package_imports_back_and_check_passes() {
    let (_dir, package) = staged_native();
    let exported = tempfile::tempdir().unwrap();
    let harbor = exported.path().join("staged-native");
    export_task(&package, &harbor).unwrap();
    let imported = tempfile::tempdir().unwrap();
    let outcome = import_task(&harbor, &imported.path().join("staged-native"), &ImportOptions::default()).unwrap();
    let Outcome::Imported { package: again, .. } = &outcome else { panic!("{}", outcome.line()) };
    let loaded = specgap_task::load(again).unwrap();
    assert_eq!(loaded.instruction(), "Write a.txt holding the word: one\n");
    let stages = loaded.stages().unwrap();
    let read_back: Vec<(&str, Option<f64>, bool, bool)> =
        stages.stages.iter().map(|s| (s.name.as_str(), s.min_reward, s.files.is_some(), s.gold.is_some())).collect();
    assert_eq!(read_back, [("first", Some(1.0), false, true), ("second", None, true, true)]);
    let judge = specgap_task::SandboxJudge::new(true).unwrap();
    let report = check_package(&loaded, &judge);
    let rows: Vec<(String, Verdict)> = report.checks.iter().map(|r| (r.check.clone(), r.result)).collect();
    let get = |name: &str| rows.iter().find(|(c, _)| c == name).map(|(_, v)| *v);
    for row in ["gold", "starter", "stage:first", "stage:second"] {
        assert_eq!(get(row), Some(Verdict::Pass), "{row}: {:?}", report.checks);
    }
    assert!(rows.iter().all(|(_, v)| *v != Verdict::Fail), "{:?}", report.checks);
}

#[test]
fn a_stage_whose_files_delete_something_is_not_exported() {
    let (_dir, package) = staged_native();
    std::fs::write(package.join("stages/second/files/delete.txt"), "README.md\n").unwrap();
    let out = tempfile::tempdir().unwrap();
    let target = out.path().join("exported");
    let error = export_task(&package, &target).unwrap_err();
    assert_eq!(
        error.to_string(),
        format!(
            "{}: cannot be exported as a Harbor task: stage `second`'s files delete 1 path(s) (delete.txt); \
             a Harbor step's workdir/ can only add files",
            package.display()
        )
    );
    assert!(!target.exists());
}

#[test]
fn a_min_reward_table_is_exported_and_reward_json_carries_its_keys() {
    let (_dir, package) = staged_native();
    let manifest = read(&package.join("task.toml")).replace("min_reward = 1.0", "min_reward = { parts = 1.0 }");
    std::fs::write(package.join("task.toml"), manifest).unwrap();
    let out = tempfile::tempdir().unwrap();
    let harbor = out.path().join("staged-native");
    export_task(&package, &harbor).unwrap();
    let exported: toml::Table = read(&harbor.join("task.toml")).parse().unwrap();
    let gate = exported["steps"][0]["min_reward"].as_table().unwrap();
    assert_eq!(gate.iter().map(|(k, v)| (k.as_str(), v.as_float())).collect::<Vec<_>>(), [("parts", Some(1.0))]);
    // The converter keeps the result's reward keys beside `reward` (the Score, never replaced).
    let result = out.path().join("result.json");
    std::fs::write(&result, r#"{"version": 1, "reward": 0.5, "rewards": {"reward": 0.9, "parts": 0.5}}"#).unwrap();
    let converted =
        std::process::Command::new("python3").arg(harbor.join("steps/first/tests/specgap_reward.py")).arg(&result).output().unwrap();
    assert!(converted.status.success(), "{converted:?}");
    assert_eq!(String::from_utf8_lossy(&converted.stdout), "{\"reward\": 0.5, \"parts\": 0.5}\n");
    let Some((ok, lines)) = validate_task(&[harbor.as_path()]) else {
        return;
    };
    assert!(ok, "{lines:?}");
}
