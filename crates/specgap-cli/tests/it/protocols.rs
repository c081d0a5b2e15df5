//! Named protocols (issue 24 items 1 and 5): under each protocol a run of the bundled examples
//! whose report's first lines say what it is faithful to; a named protocol refuses its model
//! roles played offline; custom protocol files; merge refuses mixing protocols.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use crate::support::*;

fn example(name: &str) -> PathBuf {
    repo().join("examples/tasks").join(name)
}

/// Runs `specgap run TASK --agent scripted:gold ARGS --out OUT` and returns its report (stdout).
fn run_report(task: &Path, args: &[&str], out: &Path) -> String {
    let mut all: Vec<&OsStr> = vec![OsStr::new("run"), task.as_os_str(), OsStr::new("--agent"), OsStr::new("scripted:gold")];
    all.extend(args.iter().map(OsStr::new));
    all.extend([OsStr::new("--out"), out.as_os_str()]);
    String::from_utf8(run_ok(all).stdout).unwrap()
}

/// The paragraphs of the report's first section, which must be the protocol section.
fn protocol_lines(report: &str) -> Vec<String> {
    let after_title = report.split_once("\n\n").map_or("", |(_, rest)| rest);
    let section = after_title.strip_prefix("## Protocol\n\n").unwrap_or_else(|| panic!("no protocol section first:\n{report}"));
    let section = section.split("\n## ").next().unwrap_or_default();
    section.split("\n\n").map(str::trim).filter(|p| !p.is_empty()).map(str::to_string).collect()
}

#[test]
fn swe_residual_on_the_interval_tree_example_is_faithful() {
    let dir = tempfile::tempdir().unwrap();
    let report = run_report(
        &example("interval-tree"),
        &["--condition", "blind", "--start", "clean,residual:all", "--protocol", "swe-residual"],
        &dir.path().join("run"),
    );
    assert_eq!(protocol_lines(&report), ["protocol swe-residual (conditions blind), faithful"]);
}

#[test]
fn tiganeval_on_the_payment_example_names_its_offline_owner() {
    let dir = tempfile::tempdir().unwrap();
    let report = run_report(
        &example("payment-retry"),
        &["--condition", "partial,full", "--protocol", "tiganeval", "--allow-stand-in"],
        &dir.path().join("run"),
    );
    assert_eq!(
        protocol_lines(&report),
        ["protocol tiganeval (conditions partial, full), not faithful: owner: the relay owner (offline) stands in for one model"]
    );
}

#[test]
fn fde_bench_on_the_retail_example_runs_three_repeats_and_names_the_missing_extractors() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let report = run_report(&example("retail-replenishment"), &["--condition", "hidden", "--protocol", "fde-bench"], &out);
    assert_eq!(
        protocol_lines(&report),
        ["protocol fde-bench (conditions hidden), not faithful: extractors: none ran; delivery scores come from the \
          artifact as the agent wrote it, where the protocol has 5 models, at least 3 agree extract it (specgap \
          extract, then report --extraction)"]
    );
    // Seed 002 §5.1: each system solves each case three times.
    assert_eq!(episodes(&out).len(), 3);
}

#[test]
fn without_a_protocol_each_paper_gets_its_own_line_and_the_residual_mix_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let report = run_report(
        &example("interval-tree"),
        &["--condition", "partial,blind", "--feedback", "off", "--start", "clean,residual:all"],
        &dir.path().join("run"),
    );
    assert_eq!(
        protocol_lines(&report),
        [
            "protocol tiganeval (conditions partial+feedback=off), not faithful: condition partial+feedback=off (the \
             protocol's: partial); owner: the relay owner (offline) stands in for one model; condition \
             partial+feedback=off from start residual:all: seed 001's residual starts under another paper's \
             conditions, which no paper runs (a custom protocol file, --protocol FILE, lists the rules of such a \
             combination)",
            "protocol swe-residual (conditions blind), faithful",
        ]
    );
}

#[test]
fn a_named_protocol_refuses_an_offline_owner_before_the_first_episode() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let output = specgap()
        .args([OsStr::new("run"), example("payment-retry").as_os_str()])
        .args(["--agent", "scripted:gold", "--condition", "partial", "--protocol", "tiganeval", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(
            "protocol tiganeval has model roles this run plays offline (owner: the relay owner (offline) stands in for \
             one model); give the model (--user chat:<model>, --detector-panel FILE), or --allow-stand-in to run with \
             the stand-in, named as a deviation in the report"
        ),
        "{stderr}"
    );
    assert!(!out.exists(), "nothing is created");
}

#[test]
fn a_named_protocol_refuses_a_condition_it_does_not_offer() {
    let output = specgap()
        .args([OsStr::new("run"), example("retail-replenishment").as_os_str()])
        .args(["--agent", "scripted:gold", "--condition", "hidden", "--protocol", "tiganeval", "--dry-run"])
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("protocol tiganeval does not offer condition hidden (it offers partial, full, literal, plan)"), "{stderr}");
}

const CUSTOM: &str = r#"format = 1
description = "residual start x partial instruction"
conditions = ["partial"]
starts = ["clean", "residual"]
repeats = 1

[budgets]
turns = 120
tool_calls = 360
wall_sec = 0
submissions = 1
clarification_rounds = 0
announce_wall = false

[end_rules]
repeated_call = 4
blank_output = 4
ask_user = 4
no_tool_call = 0
refusals = 3
"#;

#[test]
fn a_custom_protocol_file_runs_a_residual_start_under_a_partial_instruction() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("mix.toml");
    fs_err::write(&file, CUSTOM).unwrap();
    let out = dir.path().join("run");
    let report = run_report(
        &example("interval-tree"),
        &["--condition", "partial", "--feedback", "off", "--start", "residual:all", "--protocol", file.to_str().unwrap()],
        &out,
    );
    assert_eq!(
        protocol_lines(&report),
        ["protocol custom (conditions partial+feedback=off), not faithful: condition partial+feedback=off (the protocol's: partial)"]
    );
    let config = fs_err::read_to_string(out.join("run.toml")).unwrap();
    assert!(config.contains("[[protocols]]\nname = \"custom\"\nnamed = true\n"), "{config}");
    assert!(
        config.contains(&format!("source = \"custom protocol file {}: residual start x partial instruction\"", file.display())),
        "{config}"
    );
}

#[test]
fn a_custom_protocol_file_error_names_the_file_and_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bad.toml");
    fs_err::write(&file, CUSTOM.replace("repeats = 1", "repeats = 0")).unwrap();
    let output = specgap()
        .args([OsStr::new("run"), example("interval-tree").as_os_str()])
        .args(["--agent", "scripted:gold", "--condition", "partial", "--dry-run", "--protocol"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains(&format!("protocol file {}: `repeats` is 0; expected at least 1", file.display())), "{stderr}");
}

#[test]
fn a_store_reused_with_another_condition_names_the_conditions_not_the_protocol() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let run = |conditions: &str| {
        specgap()
            .current_dir(repo())
            .args(["run", "examples/tasks/payment-retry", "--agent", "scripted:gold", "--condition", conditions, "--no-report", "--out"])
            .arg(&out)
            .output()
            .unwrap()
    };
    assert_succeeded(run("partial"));
    let output = run("partial,full");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("`conditions` differs: [\"partial\"] in the store, [\"partial\", \"full\"]"), "{stderr}");
    assert!(!stderr.contains("paper protocol differs"), "{stderr}");
}

#[test]
fn merge_refuses_shards_run_under_different_protocols() {
    let dir = tempfile::tempdir().unwrap();
    let shard = |n: &str, extra: &[&str]| {
        let out = dir.path().join(format!("s{n}"));
        let mut args: Vec<&OsStr> = vec![OsStr::new("run"), OsStr::new("examples/tasks/payment-retry")];
        args.extend(["--agent", "scripted:gold,scripted:starter", "--condition", "partial", "--no-report", "--shard"].map(OsStr::new));
        let spec = format!("{n}/2");
        args.push(OsStr::new(&spec));
        args.extend(extra.iter().map(OsStr::new));
        args.extend([OsStr::new("--out"), out.as_os_str()]);
        assert_succeeded(specgap().current_dir(repo()).args(args).output().unwrap());
        out
    };
    let a = shard("1", &[]);
    let b = shard("2", &["--protocol", "tiganeval", "--allow-stand-in"]);
    let output = specgap()
        .args([OsStr::new("merge"), a.as_os_str(), b.as_os_str(), OsStr::new("--out")])
        .arg(dir.path().join("m"))
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("the paper protocol differs: protocol tiganeval in both, with different rules or deviations"), "{stderr}");
}

/// A named protocol without `--condition` runs the default conditions it offers (a fresh user's
/// `--protocol tiganeval` was refused for `hidden`, a condition never typed).
#[test]
fn a_named_protocol_without_conditions_runs_its_own_of_the_defaults() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let report = run_report(&example("payment-retry"), &["--protocol", "tiganeval", "--allow-stand-in"], &out);
    assert_eq!(
        protocol_lines(&report),
        ["protocol tiganeval (conditions partial, full, literal), not faithful: owner: the relay owner (offline) stands in for one model"]
    );
    assert_eq!(episodes(&out).len(), 3);
}

/// A residual start under another paper's condition is a deviation only where such episodes
/// run: on a suite whose only residual task cannot run `partial` (it has no observations for
/// feedback), the report is faithful to that (fresh-user finding: every default run said "not
/// faithful" for combinations that were all not applicable).
#[test]
fn a_residual_mix_that_runs_no_episode_is_no_deviation() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let all: Vec<&OsStr> = vec![
        OsStr::new("run"),
        example("payment-retry").into_os_string().leak(),
        example("interval-tree").into_os_string().leak(),
        OsStr::new("--agent"),
        OsStr::new("scripted:gold"),
        OsStr::new("--condition"),
        OsStr::new("partial,blind"),
        OsStr::new("--start"),
        OsStr::new("clean,residual:all"),
        OsStr::new("--out"),
        out.as_os_str(),
    ];
    let report = String::from_utf8(run_ok(all).stdout).unwrap();
    let lines = protocol_lines(&report);
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(!lines[0].contains("residual"), "{}", lines[0]);
    assert_eq!(lines[1], "protocol swe-residual (conditions blind), faithful");
}
