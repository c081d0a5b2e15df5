//! Scripted agents on the requirement fixture; not-applicable combinations; the default run.

use std::ffi::OsStr;

use specgap_store::{NotApplicableRow, Status, Store};

use crate::support::*;

#[test]
fn gold_succeeds_at_once_and_starter_scores_zero() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    run_ok([
        OsStr::new("run"),
        task_fixture("req-basic").as_os_str(),
        OsStr::new("--agent"),
        OsStr::new("scripted:gold,scripted:starter"),
        OsStr::new("--condition"),
        OsStr::new("partial,full"),
        OsStr::new("--jobs"),
        OsStr::new("2"),
        OsStr::new("--out"),
        out.as_os_str(),
        OsStr::new("--no-report"),
    ]);
    let rows = episodes(&out);
    assert_eq!(rows.len(), 4);
    assert!(rows.iter().all(|e| e.status == Status::Finished), "{rows:#?}");
    let report = report_json(&out);
    for condition in ["partial", "full"] {
        let gold = group(&report, "scripted:gold", condition);
        assert_eq!(gold["episodes"], 1);
        assert_eq!(gold["outcomes"]["success_at"][0], 1.0, "gold Success@1 under {condition}");
        assert_eq!(gold["outcomes"]["score_at"][0], 1.0);
        let starter = group(&report, "scripted:starter", condition);
        assert_eq!(starter["outcomes"]["score_at"][0], 0.0, "starter Score@1 under {condition}");
        assert_eq!(starter["outcomes"]["success_at"][3], 0.0);
    }
    // run.toml holds the resolved configuration.
    let config = Store::open(&out).unwrap().config().clone();
    assert_eq!(config.conditions, ["partial", "full"]);
    assert_eq!(config.starts, ["clean", "residual:all"]);
    assert_eq!(config.retries, 2);
    assert_eq!(config.tasks[0].name, "fixtures/req-basic");
    assert_eq!(config.agents.iter().map(|a| a.spec.as_str()).collect::<Vec<_>>(), ["scripted:gold", "scripted:starter"]);
}

#[test]
fn inapplicable_combinations_are_recorded_and_never_run() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    run_ok([
        OsStr::new("run"),
        task_fixture("req-basic").as_os_str(),
        task_fixture("delivery-basic").as_os_str(),
        OsStr::new("--agent"),
        OsStr::new("scripted:gold,scripted:mutant:no-such-requirement"),
        OsStr::new("--condition"),
        OsStr::new("full"),
        OsStr::new("--start"),
        OsStr::new("clean,residual:half-done"),
        OsStr::new("--out"),
        out.as_os_str(),
        OsStr::new("--no-report"),
    ]);
    let na = Store::open(&out).unwrap().not_applicable().unwrap();
    let row = |task: &str, agent: &str, start: &str, reason: &str| NotApplicableRow {
        task: task.into(),
        agent: agent.into(),
        condition: "full".into(),
        start: start.into(),
        reason: reason.into(),
    };
    let mutant = "scripted:mutant:no-such-requirement";
    let mutant_reason = "agent scripted:mutant:no-such-requirement needs solutions/mutants/no-such-requirement/";
    let full_reason = "condition full needs instruction.full.md";
    let mut expected = vec![
        row("fixtures/delivery-basic", "scripted:gold", "clean", full_reason),
        row("fixtures/delivery-basic", "scripted:gold", "residual:half-done", full_reason),
        row("fixtures/delivery-basic", mutant, "clean", mutant_reason),
        row("fixtures/delivery-basic", mutant, "residual:half-done", mutant_reason),
        row("fixtures/req-basic", "scripted:gold", "residual:half-done", "start residual:half-done needs residual/half-done/"),
        row("fixtures/req-basic", mutant, "clean", mutant_reason),
        row("fixtures/req-basic", mutant, "residual:half-done", mutant_reason),
    ];
    expected.sort();
    assert_eq!(na, expected);
    let rows = episodes(&out);
    assert_eq!(rows.len(), 1, "only gold × req-basic × full × clean runs");
    assert_eq!((rows[0].task.as_str(), rows[0].agent.as_str()), ("fixtures/req-basic", "scripted:gold"));
}

#[test]
fn a_run_where_nothing_applies_is_an_error_and_leaves_no_store() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let output = specgap()
        .args([OsStr::new("run"), task_fixture("delivery-basic").as_os_str(), OsStr::new("--agent"), OsStr::new("scripted:gold")])
        .args([OsStr::new("--condition"), OsStr::new("full"), OsStr::new("--out"), out.as_os_str()])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("nothing to run: none of the task × agent × condition × start combinations applies (1 not applicable: condition full needs instruction.full.md)"), "{stderr}");
    assert!(!out.exists());
}

/// `specgap run` of the interval-tree example with `args` after it; (exit code, stderr).
fn run_interval_tree(out: &std::path::Path, starts: &str) -> (Option<i32>, String) {
    let output = specgap()
        .arg("run")
        .arg(repo().join("examples/tasks/interval-tree"))
        .args(["--agent", "scripted:gold", "--condition", "blind", "--start", starts, "--dry-run", "--out"])
        .arg(out)
        .output()
        .unwrap();
    (output.status.code(), String::from_utf8_lossy(&output.stderr).trim().to_string())
}

#[test]
fn a_residual_state_no_task_has_is_named_in_a_warning_with_the_states_there_are() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let (code, stderr) = run_interval_tree(&out, "clean,residual:trim-onyl");
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(
        stderr.lines().next(),
        Some(
            "warning: start residual:trim-onyl: no task of the suite has a residual state `trim-onyl` (states: examples/interval-tree: root-refresh, trim-only)"
        )
    );
    let output = specgap()
        .args([OsStr::new("run"), task_fixture("delivery-basic").as_os_str(), OsStr::new("--agent"), OsStr::new("scripted:gold")])
        .args([
            OsStr::new("--condition"),
            OsStr::new("partial"),
            OsStr::new("--start"),
            OsStr::new("residual:all"),
            OsStr::new("--out"),
            out.as_os_str(),
        ])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&output.stderr).trim(),
        "error: nothing to run: none of the task × agent × condition × start combinations applies (0 not applicable: start residual:all: no task of the suite has residual states)"
    );
}

#[test]
fn without_a_suite_the_example_suite_runs_offline_and_the_report_is_printed() {
    let tmp = tempfile::tempdir().unwrap();
    let output = specgap().current_dir(tmp.path()).args(["run", "--jobs", "2"]).output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{}\n{stdout}", String::from_utf8_lossy(&output.stderr));
    assert!(stdout.contains("| scripted:gold | partial | clean |"), "{stdout}");
    assert!(stdout.contains("| scripted:starter | literal | clean |"), "{stdout}");
    let latest = tmp.path().join("runs/latest");
    let target = std::fs::read_link(&latest).expect("runs/latest is a link");
    assert!(tmp.path().join("runs").join(&target).join("run.toml").is_file());
    let config = Store::open(&latest).unwrap().config().clone();
    let agents: Vec<&str> = config.agents.iter().map(|a| a.spec.as_str()).collect();
    assert_eq!(agents, ["scripted:gold", "scripted:literal", "scripted:starter"]);
    assert_eq!(config.conditions, ["partial", "full", "literal", "hidden", "blind"]);
    assert_eq!(config.starts, ["clean", "residual:all"]);
    let report = report_json(&latest);
    assert_eq!(group(&report, "scripted:gold", "full")["outcomes"]["success_at"][0], 1.0);
    crate::examples::assert_default_run_pins(&latest);
}

#[test]
fn zero_jobs_is_rejected_before_anything_is_stored() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let output = specgap()
        .args([OsStr::new("run"), task_fixture("req-basic").as_os_str(), OsStr::new("--jobs"), OsStr::new("0")])
        .args([OsStr::new("--out"), out.as_os_str()])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(String::from_utf8_lossy(&output.stderr), "error: --jobs must be at least 1\n");
    assert!(!out.exists());
}

#[test]
fn two_runs_racing_for_one_new_directory_leave_one_store_and_a_clear_refusal() {
    let tmp = tempfile::tempdir().unwrap();
    for attempt in 0..4 {
        let out = tmp.path().join(format!("race-{attempt}"));
        let start = |agent: &str| {
            specgap()
                .args([OsStr::new("run"), task_fixture("req-basic").as_os_str(), OsStr::new("--agent"), OsStr::new(agent)])
                .args([OsStr::new("--condition"), OsStr::new("partial"), OsStr::new("--no-report"), OsStr::new("--out"), out.as_os_str()])
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        };
        let (a, b) = (start("scripted:gold"), start("scripted:starter"));
        let outputs = [a.wait_with_output().unwrap(), b.wait_with_output().unwrap()];
        assert!(outputs.iter().any(|o| o.status.success()), "neither run succeeded");
        for output in outputs.iter().filter(|o| !o.status.success()) {
            let stderr = String::from_utf8_lossy(&output.stderr);
            // The loser either met the winner's lock or, once the winner was done, its
            // configuration; never a half-made store.
            assert!(stderr.contains("another specgap process") || stderr.contains("holds a run of a different configuration"), "{stderr}");
        }
        assert_eq!(episodes(&out).len(), 1);
    }
}

/// Issue 10 item 8: a run over a suite named only the first broken package.
#[test]
fn run_over_a_suite_names_every_broken_package_then_stops() {
    let tmp = tempfile::tempdir().unwrap();
    let suite = tmp.path().join("suite");
    let task_toml = |name: &str| {
        format!(
            "format = 1\n[task]\nname = \"{name}\"\nversion = \"1\"\ndescription = \"d\"\nfamily = \"swe\"\n[evaluator]\ncommand = \"true\"\n"
        )
    };
    for (dir, toml) in [("one", task_toml("t/one")), ("two", task_toml("t/two").replace("format = 1", "format = 9"))] {
        fs_err::create_dir_all(suite.join(dir)).unwrap();
        fs_err::write(suite.join(dir).join("task.toml"), toml).unwrap();
    }
    let out = tmp.path().join("run");
    let output = specgap().args([OsStr::new("run"), suite.as_os_str(), OsStr::new("--out"), out.as_os_str()]).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&output.stderr),
        format!(
            "error: cannot load the suite: 2 errors in the suite's packages:\n  \
             - {}: missing instruction.md; every package needs its opening instruction\n  \
             - {}:1:10: format = 9 is not supported; expected `format = 1` or `format = 2`\n",
            suite.join("one").display(),
            suite.join("two/task.toml").display()
        )
    );
    assert!(!out.exists());
}

/// Issue 29 item 6: `--agent`'s help names every kind of agent, the cli: adapters included.
#[test]
fn run_help_names_every_kind_of_agent_and_every_cli_adapter() {
    let output = specgap().args(["run", "--help"]).output().unwrap();
    assert!(output.status.success());
    let help = String::from_utf8_lossy(&output.stdout).split_whitespace().collect::<Vec<_>>().join(" ");
    for kind in ["scripted:gold", "replay:", "chat:<model>", "cli:command=<template>"] {
        assert!(help.contains(kind), "run --help does not name {kind}: {help}");
    }
    for adapter in specgap_agents::cli::ADAPTERS {
        assert!(
            help.contains(&format!("cli:{adapter},")) || help.contains(&format!("cli:{adapter} ")),
            "run --help does not name cli:{adapter}"
        );
    }
    assert_eq!(specgap_agents::cli::ADAPTERS.len(), 6);
}

#[test]
fn run_help_names_every_prompt_file_of_prompts_dir() {
    let output = specgap().args(["run", "--help"]).output().unwrap();
    assert!(output.status.success());
    let help = String::from_utf8_lossy(&output.stdout).split_whitespace().collect::<Vec<_>>().join(" ");
    for file in specgap_agents::prompt_dir::prompt_files() {
        assert!(help.contains(file.name), "run --help does not name {}", file.name);
    }
}

/// Issue 31 items 8–10: inputs that cannot work are refused at configuration (a dry run), with
/// the file, key or line and the reason — not found by each episode, or by SQLite.
#[test]
fn bad_prices_base_urls_and_replay_scripts_are_refused_before_any_episode() {
    let tmp = tempfile::tempdir().unwrap();
    let suite = repo().join("examples/tasks/payment-retry");
    let refused = |args: &[&OsStr]| {
        let output = specgap().arg("run").args(args).arg("--dry-run").output().unwrap();
        assert_eq!(output.status.code(), Some(2), "{}", String::from_utf8_lossy(&output.stdout));
        String::from_utf8_lossy(&output.stderr).into_owned()
    };
    let config = tmp.path().join("experiment.toml");
    let nan_price = format!(
        "suites = [\"{}\"]\nconditions = [\"partial\"]\n[[agent]]\nkind = \"chat\"\nmodel = \"m\"\nprice = {{ input_per_mtok = 1.0, output_per_mtok = nan }}\n",
        suite.display()
    );
    fs_err::write(&config, nan_price).unwrap();
    let stderr = refused(&["--config".as_ref(), config.as_os_str()]);
    assert!(
        stderr.contains(&config.display().to_string())
            && stderr.contains("`output_per_mtok` is a finite number of US dollars per million tokens, 0 or more, not NaN"),
        "{stderr}"
    );
    let negative = format!(
        "suites = [\"{}\"]\n[[agent]]\nkind = \"chat\"\nmodel = \"m\"\nprice = {{ input_per_mtok = -1.0, output_per_mtok = 1.0 }}\n",
        suite.display()
    );
    fs_err::write(&config, negative).unwrap();
    assert!(
        refused(&["--config".as_ref(), config.as_os_str()])
            .contains("`input_per_mtok` is a finite number of US dollars per million tokens, 0 or more, not -1")
    );

    for (url, why) in
        [("file:///etc/passwd", "must be http:// or https://, not file://"), ("http://[::1", "is not a URL: invalid IPv6 address")]
    {
        let stderr = refused(&[suite.as_os_str(), "--agent".as_ref(), "chat:m".as_ref(), "--base-url".as_ref(), url.as_ref()]);
        assert!(stderr.contains(&format!("--base-url: the base URL {url:?} {why}")), "{stderr}");
    }
    let in_file =
        format!("suites = [\"{}\"]\n[[agent]]\nkind = \"chat\"\nmodel = \"m\"\nbase_url = \"file:///etc/passwd\"\n", suite.display());
    fs_err::write(&config, in_file).unwrap();
    let stderr = refused(&["--config".as_ref(), config.as_os_str()]);
    assert!(
        stderr.contains(&format!(
            "`base_url` of agent 1 in {}: the base URL \"file:///etc/passwd\" must be http:// or https://",
            config.display()
        )),
        "{stderr}"
    );

    let script = tmp.path().join("bad.jsonl");
    for body in [
        "{\"tool\": \"read_file\", \"arguments\": {\"path\": \"a\"}}\nnot json\n",
        "{\"tool\": \"read_file\"}\n{\"tool\": \"x\", \"nope\": 1}\n",
        "{\"tool\": \"read_file\"}\n{\"tool\": \"x\", \"arguments\": {\"n\": 1e400}}\n",
    ] {
        fs_err::write(&script, body).unwrap();
        let spec = format!("replay:{}", script.display());
        let stderr = refused(&[suite.as_os_str(), "--agent".as_ref(), spec.as_ref()]);
        assert!(stderr.contains(&format!("{}:2: expected", script.display())), "{stderr}");
    }
    fs_err::write(&script, b"{\"tool\": \"read_file\"}\n\xff\xfe\n").unwrap();
    let spec = format!("replay:{}", script.display());
    let stderr = refused(&[suite.as_os_str(), "--agent".as_ref(), spec.as_ref()]);
    assert!(stderr.contains(&script.display().to_string()) && stderr.contains("UTF-8"), "{stderr}");
}
