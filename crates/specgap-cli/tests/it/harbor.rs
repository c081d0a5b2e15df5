//! `specgap import harbor` and `specgap export-task` end to end: a Harbor dataset imports
//! (one line per task, a summary, exit 1 for the refused task), the imported packages run
//! under `hidden` (the gold scores 1, the starter 0), and a package exports as a Harbor task.

use std::ffi::OsStr;
use std::path::PathBuf;

use crate::support::*;

fn harbor_dataset() -> PathBuf {
    repo().join("crates/specgap-harbor/tests/fixtures/dataset")
}

#[test]
fn an_imported_harbor_dataset_runs_its_gold_to_one_and_its_starter_to_zero() {
    let out = tempfile::tempdir().unwrap();
    let suite = out.path().join("suite");
    // No engine: the image task's Dockerfile (which installs packages from the network) is not
    // built, so it imports with its starter marked incomplete on any machine.
    let output = specgap()
        .args([OsStr::new("import"), OsStr::new("harbor"), harbor_dataset().as_os_str(), OsStr::new("--out"), suite.as_os_str()])
        .args(["--engine", "none"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1), "{}", String::from_utf8_lossy(&output.stderr));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.iter().filter(|l| l.starts_with("imported ")).count(), 5);
    assert_eq!(lines.iter().filter(|l| l.starts_with("refused with-compose: ")).count(), 1);
    assert!(stdout.contains("| refused | 1 |\n"), "{stdout}");
    assert!(stdout.contains("| imported, starter incomplete (image not built) | 1 |\n"), "{stdout}");
    assert_eq!(
        lines
            .iter()
            .filter(|l| l.starts_with("imported needs-image: ") && l.contains("starter incomplete (the image was not built: "))
            .count(),
        1
    );
    // The image task needs issue 25's runtime; run the host tasks.
    std::fs::remove_dir_all(suite.join("needs-image")).unwrap();
    let run = out.path().join("run");
    let protocol = suite.join("harbor-protocol.toml");
    let hint = format!("run with: specgap run {} --protocol {} --condition hidden --start clean", suite.display(), protocol.display());
    assert!(stdout.contains(&hint), "{stdout}");
    run_ok([
        OsStr::new("run"),
        suite.as_os_str(),
        OsStr::new("--protocol"),
        protocol.as_os_str(),
        OsStr::new("--agent"),
        OsStr::new("scripted:gold,scripted:starter"),
        OsStr::new("--condition"),
        OsStr::new("hidden"),
        OsStr::new("--start"),
        OsStr::new("clean"),
        OsStr::new("--out"),
        run.as_os_str(),
        OsStr::new("--no-report"),
    ]);
    let config = std::fs::read_to_string(run.join("run.toml")).unwrap();
    assert!(config.contains("source = \"custom protocol file "), "{config}");
    let mut scores: Vec<(String, String, Option<f64>)> = episodes(&run).into_iter().map(|e| (e.task, e.agent, e.final_score)).collect();
    scores.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
    let expected: Vec<(String, String, Option<f64>)> = ["app-workdir", "hello-file", "several-keys", "two-steps"]
        .iter()
        .flat_map(|t| {
            [
                (format!("fixtures/{t}"), "scripted:gold".to_string(), Some(1.0)),
                (format!("fixtures/{t}"), "scripted:starter".to_string(), Some(0.0)),
            ]
        })
        .collect();
    assert_eq!(scores, expected);
}

#[test]
fn export_task_writes_a_harbor_task_directory() {
    let out = tempfile::tempdir().unwrap();
    let task = out.path().join("req-basic");
    let output = run_ok([OsStr::new("export-task"), task_fixture("req-basic").as_os_str(), OsStr::new("--out"), task.as_os_str()]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.ends_with("(with solution/solve.sh from the gold)\n"), "{stdout}");
    for file in [
        "task.toml",
        "instruction.md",
        "environment/Dockerfile",
        "tests/test.sh",
        "tests/specgap_reward.py",
        "tests/specgap-candidate",
        "solution/solve.sh",
    ] {
        assert!(task.join(file).is_file(), "{file}");
    }
}

/// The test agent of `specgap-agents` (a small tool loop over OpenAI chat completions), as a
/// `cli:command=` agent.
fn test_agent() -> PathBuf {
    std::fs::canonicalize(repo().join("crates/specgap-agents/tests/fixtures/cli-agent.py")).unwrap()
}

const HARBOR_MODEL: &str = "mock-harbor-model";
const HARBOR_KEY_ENV: &str = "SPECGAP_TEST_HARBOR_KEY";
const HARBOR_KEY: &str = "sk-harbor-test-0c4e";

/// Imports the dataset's `hello-file` task and runs `agent` on it under `hidden` against
/// `mock` (one episode); returns the run directory and its episode rows.
fn run_imported_hello_file(
    out: &std::path::Path,
    agent: &str,
    mock: &specgap_gateway::mock::MockUpstream,
) -> (PathBuf, Vec<specgap_store::EpisodeRow>) {
    let suite = out.join("suite");
    run_ok([
        OsStr::new("import"),
        OsStr::new("harbor"),
        harbor_dataset().join("hello-file").as_os_str(),
        OsStr::new("--out"),
        suite.as_os_str(),
    ]);
    let base_url = format!("{}/v1", mock.url());
    let run = out.join("run");
    let args = [
        OsStr::new("run"),
        suite.as_os_str(),
        OsStr::new("--agent"),
        OsStr::new(agent),
        OsStr::new("--model"),
        OsStr::new(HARBOR_MODEL),
        OsStr::new("--base-url"),
        OsStr::new(&base_url),
        OsStr::new("--api-key-env"),
        OsStr::new(HARBOR_KEY_ENV),
        OsStr::new("--condition"),
        OsStr::new("hidden"),
        OsStr::new("--no-report"),
        OsStr::new("--out"),
        run.as_os_str(),
    ];
    let output = specgap()
        .args(args)
        .env(HARBOR_KEY_ENV, HARBOR_KEY)
        .env("XDG_CACHE_HOME", specgap_test_support::installs::test_cache())
        .output()
        .unwrap();
    assert_succeeded(output);
    let rows = episodes(&run);
    (run, rows)
}

/// The shell command that completes `hello-file`.
const WRITE_GREETING: &str = "echo 'Hello, specgap!' > greeting.txt";

#[test]
fn a_cli_agent_completes_an_imported_harbor_task() {
    use serde_json::json;
    use specgap_gateway::mock::MockUpstream;
    use specgap_gateway::mock::replies::{self, Call, Tokens};
    let out = tempfile::tempdir().unwrap();
    let mock = MockUpstream::start([]).unwrap();
    mock.set_responder(|request: &specgap_gateway::mock::ReceivedRequest| {
        let body: serde_json::Value = serde_json::from_slice(&request.body).unwrap_or_default();
        let step = body["messages"].as_array().map_or(0, |m| m.iter().filter(|m| m["role"] == "assistant").count()) as u64;
        let tokens = Tokens { input: 100 + step, output: 5, ..Tokens::default() };
        match step {
            0 => replies::openai_chat(
                HARBOR_MODEL,
                "Writing it.",
                &[Call::new("call-0", "bash", json!({"command": WRITE_GREETING}))],
                tokens,
            ),
            _ => replies::openai_chat(HARBOR_MODEL, "Done.", &[], tokens),
        }
    });
    let agent = format!("cli:command=python3 {}", test_agent().display());
    let (_, rows) = run_imported_hello_file(out.path(), &agent, &mock);
    assert_eq!(rows.len(), 1);
    assert_eq!((rows[0].final_score, rows[0].final_success), (Some(1.0), Some(true)), "{rows:#?}");
}

/// Issue 26, Tests: "Real `cli:` agents (their existing mocks) complete an imported task": the
/// pinned mini-swe-agent (from PyPI; with `SPECGAP_REQUIRE_EXTERNAL=1` a missing installation
/// fails the test) writes the file with its bash tool and ends with its completion marker.
#[test]
fn mini_swe_agent_completes_an_imported_harbor_task() {
    use serde_json::json;
    use specgap_gateway::mock::MockUpstream;
    use specgap_gateway::mock::replies::{self, Call, Tokens};
    let Some(_) = crate::cli_agents::mini_installed() else { return };
    let bash = |n: u64, command: &str| {
        let call = [Call::new(&format!("call-{n}"), "bash", json!({ "command": command }))];
        replies::openai_chat(
            HARBOR_MODEL,
            &format!("THOUGHT: step {n}."),
            &call,
            Tokens { input: 500 + n, output: 10 + n, ..Tokens::default() },
        )
    };
    let mock = MockUpstream::start([bash(1, WRITE_GREETING), bash(2, "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT")]).unwrap();
    let out = tempfile::tempdir().unwrap();
    let (run, rows) = run_imported_hello_file(out.path(), "cli:mini-swe-agent", &mock);
    assert_eq!(rows.len(), 1);
    assert_eq!((rows[0].final_score, rows[0].final_success), (Some(1.0), Some(true)), "{rows:#?}");
    let requests = mock.requests();
    assert_eq!(requests.len(), 2, "mini ends at its marker without asking again");
    for request in &requests {
        assert_eq!(request.path(), "/v1/chat/completions");
        assert_eq!(request.header("authorization"), Some(format!("Bearer {HARBOR_KEY}").as_str()));
    }
    specgap_test_support::tripwire::assert_no_network_attempt(&events(&run, &rows[0].id));
}

#[test]
fn import_harbor_on_a_directory_without_tasks_prints_one_line_and_the_table_and_exits_1() {
    let source = tempfile::tempdir().unwrap();
    std::fs::write(source.path().join("README.md"), "no tasks here\n").unwrap();
    let out = source.path().join("out");
    let output = specgap()
        .args([OsStr::new("import"), OsStr::new("harbor"), source.path().as_os_str(), OsStr::new("--out"), out.as_os_str()])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1), "{}", String::from_utf8_lossy(&output.stderr));
    assert_eq!(String::from_utf8_lossy(&output.stderr), "");
    let expected = format!(
        "not a Harbor task {}: no task.toml in it or in any directory below it (a Harbor task is a directory with task.toml, instruction.md and tests/test.sh)\n\n\
         | outcome | tasks |\n| --- | ---: |\n| tasks | 0 |\n| imported, host environment | 0 |\n| imported, image environment | 0 |\n| imported, starter incomplete (image not built) | 0 |\n\
         | with a gold overlay | 0 |\n| refused | 0 |\n| not a Harbor task (no task.toml) | 1 |\n",
        source.path().display()
    );
    assert_eq!(String::from_utf8_lossy(&output.stdout), expected);
}

#[test]
fn import_harbor_refuses_a_specgap_package_in_one_line() {
    let out = tempfile::tempdir().unwrap();
    let output = specgap()
        .args([
            OsStr::new("import"),
            OsStr::new("harbor"),
            task_fixture("req-basic").as_os_str(),
            OsStr::new("--out"),
            out.path().as_os_str(),
        ])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1), "{}", String::from_utf8_lossy(&output.stderr));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let first = stdout.lines().next().unwrap();
    assert!(first.starts_with("refused req-basic: task.toml is a specgap package manifest (format = "), "{stdout}");
    assert!(stdout.contains("| refused | 1 |\n"), "{stdout}");
}

#[test]
fn import_harbor_user_persona_makes_the_chat_owner_speak_as_that_persona() {
    let out = tempfile::tempdir().unwrap();
    let persona = out.path().join("persona.txt");
    std::fs::write(&persona, "You are Priya, a lab manager who answers in one sentence and never uses jargon.\n").unwrap();
    let suite = out.path().join("suite");
    run_ok([
        OsStr::new("import"),
        OsStr::new("harbor"),
        harbor_dataset().join("hello-file").as_os_str(),
        OsStr::new("--out"),
        suite.as_os_str(),
        OsStr::new("--no-gold"),
        OsStr::new("--user-persona"),
        persona.as_os_str(),
    ]);
    let package = specgap_task::load(&suite.join("hello-file")).unwrap();
    let condition = specgap_engine::Condition::parse("partial").unwrap();
    let knowledge = specgap_agents::chat::UserKnowledge::for_episode(&package, &condition);
    assert!(
        knowledge.system_prompt.contains(
            "This is who you are:\n\nYou are Priya, a lab manager who answers in one sentence and never uses jargon.\n\nAll you know"
        ),
        "{}",
        knowledge.system_prompt
    );
    assert!(
        knowledge.system_prompt.contains("Your picture of the project:\n\nCreate a file named greeting.txt"),
        "{}",
        knowledge.system_prompt
    );
}

#[test]
fn check_and_the_report_say_the_imported_verifier_trusts_the_workspace() {
    let out = tempfile::tempdir().unwrap();
    let suite = out.path().join("suite");
    run_ok([
        OsStr::new("import"),
        OsStr::new("harbor"),
        harbor_dataset().join("hello-file").as_os_str(),
        OsStr::new("--out"),
        suite.as_os_str(),
    ]);
    let check = run_ok([OsStr::new("check"), suite.join("hello-file").as_os_str()]);
    let check_out = String::from_utf8_lossy(&check.stdout);
    assert!(check_out.contains("verifier-trust"), "{check_out}");
    assert!(check_out.contains("the verifier trusts the workspace: it runs submitted code where it writes the reward"), "{check_out}");
    let run = out.path().join("run");
    run_ok([
        OsStr::new("run"),
        suite.as_os_str(),
        OsStr::new("--agent"),
        OsStr::new("scripted:gold"),
        OsStr::new("--condition"),
        OsStr::new("hidden"),
        OsStr::new("--out"),
        run.as_os_str(),
        OsStr::new("--no-report"),
    ]);
    let report = report_json(&run);
    let line = "verifier trusts the workspace: fixtures/hello-file (1 of 1 tasks): their verifiers run the submitted code in their own processes, so a reward the submission forges consistently cannot be told from an earned one (docs/harbor.md, \"Trust model\")";
    let warnings: Vec<&str> = report["warnings"].as_array().unwrap().iter().filter_map(|w| w.as_str()).collect();
    assert!(warnings.contains(&line), "{warnings:#?}");
    let markdown = run_ok([OsStr::new("report"), run.as_os_str()]);
    assert!(String::from_utf8_lossy(&markdown.stdout).contains(line));
}

#[test]
fn an_imported_multi_step_task_runs_stage_by_stage_and_show_prints_the_next_stage() {
    let out = tempfile::tempdir().unwrap();
    let suite = out.path().join("suite");
    let task = harbor_dataset().join("two-steps");
    run_ok([OsStr::new("import"), OsStr::new("harbor"), task.as_os_str(), OsStr::new("--out"), suite.as_os_str()]);
    let run = out.path().join("run");
    let protocol = suite.join("harbor-protocol.toml");
    run_ok([
        OsStr::new("run"),
        suite.as_os_str(),
        OsStr::new("--protocol"),
        protocol.as_os_str(),
        OsStr::new("--agent"),
        OsStr::new("scripted:gold"),
        OsStr::new("--condition"),
        OsStr::new("hidden"),
        OsStr::new("--start"),
        OsStr::new("clean"),
        OsStr::new("--out"),
        run.as_os_str(),
        OsStr::new("--no-report"),
    ]);
    let episodes = episodes(&run);
    assert_eq!(episodes.len(), 1);
    // The gold answers step 1 with submit; the script then ends during step 2, whose open
    // stage is submitted automatically: both steps' tests pass on the gold.
    assert_eq!((episodes[0].submissions, episodes[0].final_score), (2, Some(1.0)));
    let shown = String::from_utf8(run_ok([OsStr::new("show"), run.as_os_str(), OsStr::new(&episodes[0].id)]).stdout).unwrap();
    assert!(
        shown.contains("[next stage of the task]\n  | Append the line \"pears\" to list.txt, after the lines from notes.txt.\n"),
        "{shown}"
    );
}
