//! A step's `min_reward` table (Harbor's per-reward-key thresholds): imported as the stage's
//! `min_reward` table, and the evaluator reports the step's reward keys as `rewards` for the
//! engine to compare. The fixture `keyed-steps`: step `draft` writes reward.json with the keys
//! `title` (0 or 1) and `length` (a quarter per line of report.md), gated on
//! `{ title = 1.0, length = 0.5 }`; step `finish` writes reward.txt.

use std::collections::BTreeMap;

use specgap_task::check::Verdict;

use crate::harbor::validate_task;
use crate::support::{fixture, import_fixture};

#[test]
fn the_keyed_fixture_is_a_valid_harbor_task() {
    let Some((ok, lines)) = validate_task(&[fixture("keyed-steps").as_path()]) else {
        return;
    };
    assert!(ok, "{lines:?}");
    assert_eq!(lines, ["valid fixtures/keyed-steps steps=2"]);
}

#[test]
fn a_min_reward_table_becomes_the_stages_per_key_thresholds() {
    let (_out, package) = import_fixture("keyed-steps");
    let table: toml::Table = std::fs::read_to_string(package.join("task.toml")).unwrap().parse().unwrap();
    let gate = table["stages"]["stage"][0]["min_reward"].as_table().unwrap();
    assert_eq!(gate.iter().map(|(k, v)| (k.as_str(), v.as_float())).collect::<Vec<_>>(), [("length", Some(0.5)), ("title", Some(1.0))]);
    assert!(table["stages"]["stage"][1].get("min_reward").is_none());
    let loaded = specgap_task::load(&package).unwrap();
    let stages = loaded.stages().unwrap();
    assert_eq!(stages.stages[0].min_reward, None);
    assert_eq!(stages.stages[0].min_reward_keys, BTreeMap::from([("length".to_string(), 0.5), ("title".to_string(), 1.0)]));
    assert_eq!(stages.stages[1].min_reward_keys, BTreeMap::new());
    // The table is mapped, so NOTES.md no longer lists it as not mapped.
    let notes = std::fs::read_to_string(package.join("NOTES.md")).unwrap();
    assert!(!notes.contains("min_reward"), "{notes}");
}

#[test]
fn the_evaluator_reports_one_steps_reward_keys_as_rewards() {
    let (_out, package) = import_fixture("keyed-steps");
    let loaded = specgap_task::load(&package).unwrap();
    let workspace = tempfile::tempdir().unwrap();
    std::fs::write(workspace.path().join("report.md"), "# Report\n").unwrap();
    let evaluate = |stage: Option<u32>| {
        let mut run = specgap_sandbox::EvaluatorRun::new(
            loaded.name(),
            loaded.evaluator_dir(),
            loaded.manifest().evaluator.command.clone(),
            std::time::Duration::from_secs(loaded.manifest().evaluator.timeout_sec),
            workspace.path(),
        );
        run.stage = stage;
        let view = specgap_sandbox::HostView::resolve(&loaded.manifest().environment).unwrap();
        let evaluation = specgap_sandbox::run_evaluator(&run, &view, &specgap_sandbox::SandboxConfig { enabled: true }).unwrap();
        (evaluation.result.reward, evaluation.result.rewards)
    };
    let keys = |pairs: &[(&str, f64)]| Some(pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect::<BTreeMap<_, _>>());
    // Step 1: {"title": 1, "length": 0.25}, no `reward` key, so the reward is their mean.
    assert_eq!(evaluate(Some(1)), (Some(0.625), keys(&[("length", 0.25), ("title", 1.0)])));
    // Step 2 writes reward.txt: one key, `reward`, as Harbor reads it.
    assert_eq!(evaluate(Some(2)), (Some(0.0), keys(&[("reward", 0.0)])));
    // Every step combined (check, eval): no single step's keys.
    assert_eq!(evaluate(None), (Some(0.3125), None));
}

#[test]
fn check_passes_on_the_keyed_package() {
    let (_out, package) = import_fixture("keyed-steps");
    let loaded = specgap_task::load(&package).unwrap();
    let judge = specgap_task::SandboxJudge::new(true).unwrap();
    let report = specgap_task::check::check_package(&loaded, &judge);
    let failed: Vec<&specgap_task::check::CheckRow> = report.checks.iter().filter(|r| r.result == Verdict::Fail).collect();
    assert!(failed.is_empty(), "{:?}", report.checks);
    let stage_rows: Vec<(&str, Verdict)> =
        report.checks.iter().filter(|r| r.check.starts_with("stage:")).map(|r| (r.check.as_str(), r.result)).collect();
    assert_eq!(stage_rows, [("stage:draft", Verdict::Pass), ("stage:finish", Verdict::Pass)]);
}
