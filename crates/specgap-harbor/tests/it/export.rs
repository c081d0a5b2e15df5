//! `specgap export-task`: specgap packages as Harbor task directories, validated with
//! Harbor's own task model; the round trips.

use std::path::{Path, PathBuf};

use specgap_harbor::export::{Exported, export_task};
use specgap_harbor::{ImportOptions, Outcome, import_task};
use specgap_task::check::{Verdict, check_package};

use crate::harbor::validate_task;
use crate::support::{dataset, import_one};

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
        assert_eq!(export_task(&task_fixture(name), &dir).unwrap(), Exported::Converted { gold: true });
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

#[test]
fn a_staged_native_package_is_not_exported() {
    let (out, package) = import_one("two-steps");
    // Without its kept Harbor copy the package is specgap's own: its stages have no export.
    std::fs::remove_dir_all(package.join(specgap_harbor::HARBOR_COPY)).unwrap();
    let target = out.path().join("exported");
    let error = export_task(&package, &target).unwrap_err();
    assert_eq!(
        error.to_string(),
        format!(
            "{}: cannot be exported as a Harbor task: it has 2 stages ([stages]); export-task writes one-step Harbor tasks, \
             and writing stages back as [[steps]] is not done",
            package.display()
        )
    );
    assert!(!target.exists());
}
