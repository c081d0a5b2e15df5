//! The model panels end to end (issue 16): `specgap run ... --condition interact`, then
//! `specgap judge RUN --panel panel.toml` and `specgap report RUN --judge panel`, against the
//! panels' scripted mock server (shared by path).

use std::ffi::OsStr;
use std::path::Path;

use serde_json::json;
use specgap_store::{Role, Store};

use crate::support::*;

#[allow(dead_code)]
#[path = "../../../specgap-panels/tests/it/mock.rs"]
mod mock;

use mock::{MockServer, Reply};

const MODELS: [&str; 5] = ["ja", "jb", "jc", "jd", "je"];
const PANEL_KEY: &str = "sk-panel-9f31c2-distinctive-key";

/// Asserts [`PANEL_KEY`] is in no file under `dir` (the store and its write-ahead log included).
fn assert_key_nowhere(dir: &Path) {
    let mut stack = vec![dir.to_path_buf()];
    let mut files = 0;
    while let Some(d) = stack.pop() {
        for entry in fs_err::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                files += 1;
                let bytes = fs_err::read(&path).unwrap();
                assert!(!String::from_utf8_lossy(&bytes).contains(PANEL_KEY), "the key is in {}", path.display());
            }
        }
    }
    assert!(files >= 3, "{files}");
}

fn script_agent() -> String {
    format!("replay:{}", repo().join("examples/scripts/retail-ask-first.jsonl").display())
}

/// The retail case under `interact` with the example script that asks eight questions, seed 7.
fn interact_run(out: &Path) {
    run_ok([
        OsStr::new("run"),
        repo().join("examples/tasks/retail-replenishment").as_os_str(),
        OsStr::new("--agent"),
        OsStr::new(&script_agent()),
        OsStr::new("--condition"),
        OsStr::new("interact"),
        OsStr::new("--seed"),
        OsStr::new("7"),
        OsStr::new("--out"),
        out.as_os_str(),
        OsStr::new("--no-report"),
    ]);
}

fn panel_file(dir: &Path, url: &str) -> std::path::PathBuf {
    let mut text = String::new();
    for model in MODELS {
        text.push_str(&format!(
            "[[model]]\nmodel = \"{model}\"\nbase_url = \"{url}\"\napi_key_env = \"SPECGAP_CLI_PANEL_KEY\"\nmax_retries = 0\nprice = {{ input_per_mtok = 2.0, output_per_mtok = 4.0 }}\n\n"
        ));
    }
    let path = dir.join("panel.toml");
    fs_err::write(&path, text).unwrap();
    path
}

/// Judges say covered exactly when the point is the warehouse-units target and they are one
/// of the first three models, citing question 1.
fn scripted_judges() -> MockServer {
    MockServer::start(|request| {
        let covered = request.user().contains("POINT (warehouse-stock-in-cases)") && ["ja", "jb", "jc"].contains(&request.model());
        let indices: Vec<u32> = if covered { vec![1] } else { vec![] };
        Reply::Text(json!({"covered": covered, "question_indices": indices}).to_string(), 300, 20)
    })
}

#[test]
fn run_then_judge_then_report_by_the_panel_and_a_second_report_asks_no_model() {
    let server = scripted_judges();
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    interact_run(&out);
    let panel = panel_file(tmp.path(), &server.url);
    let judged = assert_succeeded(
        specgap()
            .env("SPECGAP_CLI_PANEL_KEY", PANEL_KEY)
            .args([OsStr::new("judge"), out.as_os_str(), OsStr::new("--panel"), panel.as_os_str(), OsStr::new("--jobs"), OsStr::new("1")])
            .output()
            .unwrap(),
    );
    // The key from the named variable reaches each request, and nothing the run keeps.
    assert!(server.requests().iter().all(|r| r.authorization.as_deref() == Some(&format!("Bearer {PANEL_KEY}") as &str)));
    assert_key_nowhere(&out);
    let stderr = String::from_utf8_lossy(&judged.stderr);
    assert!(
        stderr.contains(": 1 episode judged, 8 target verdicts (1 covered, 0 unavailable), 0 ballots dropped; 0 episodes already judged"),
        "{stderr}"
    );
    assert_eq!(server.requests().len(), 8 * 5);

    let report = run_ok([
        OsStr::new("report"),
        out.as_os_str(),
        OsStr::new("--judge"),
        OsStr::new("panel"),
        OsStr::new("--format"),
        OsStr::new("json"),
    ]);
    let report: serde_json::Value = serde_json::from_slice(&report.stdout).unwrap();
    assert!(report["judge"].as_str().unwrap().starts_with("panel:"));
    let clarification = &group(&report, &script_agent(), "interact")["clarification"];
    // One of eight targets covered; the script's 9 units (8 questions and its closing
    // statement) of which one is matched.
    assert_eq!(clarification["recall"]["mean"], json!(0.125));
    assert_eq!(clarification["precision"]["mean"], json!(1.0 / 9.0));
    assert_eq!(report["judge_agreement"]["items"], json!(8));
    assert_eq!(report["judge_agreement"]["seats"].as_array().unwrap().len(), 5);
    // The judge's usage is in the report under its own role, priced from the panel file.
    let usage = report["usage"].as_array().unwrap();
    let judge = usage.iter().find(|u| u["role"] == "judge").expect("judge usage");
    assert_eq!(judge["requests"], json!(40));
    assert_eq!(judge["input_tokens"], json!(40 * 300));
    assert_eq!(judge["output_tokens"], json!(40 * 20));
    let cost = (40.0 * 300.0 * 2.0 + 40.0 * 20.0 * 4.0) / 1e6;
    assert!((judge["cost_usd"].as_f64().unwrap() - cost).abs() < 1e-9);

    // A second report — also one given the panel file — asks no model.
    let md = run_ok([OsStr::new("report"), out.as_os_str(), OsStr::new("--panel"), panel.as_os_str()]);
    assert_eq!(server.requests().len(), 40);
    let md = String::from_utf8_lossy(&md.stdout);
    assert!(md.contains("Coverage judges of panel:"), "{md}");
    // `show` lists the judge's usage with a cost.
    let shown = run_ok([OsStr::new("show"), out.as_os_str()]);
    let shown = String::from_utf8_lossy(&shown.stdout);
    let line = shown.lines().find(|l| l.trim_start().starts_with("judge")).unwrap_or_else(|| panic!("{shown}"));
    assert!(line.contains("40 requests"), "{line}");
    assert!(line.contains(&format!("${cost:.4}")), "{line}");
    let store = Store::open(&out).unwrap();
    assert!(store.usage().unwrap().iter().any(|u| u.role == Role::Judge && u.usage.requests == 40));
    assert_eq!(store.ballots().unwrap().len(), 40);
}

#[test]
fn report_by_panel_without_verdicts_says_what_to_run() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    interact_run(&out);
    let output = specgap().args([OsStr::new("report"), out.as_os_str(), OsStr::new("--judge"), OsStr::new("panel")]).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(
            "no coverage panel has judged these runs; run `specgap judge RUN --panel FILE` first, or give --panel FILE to the report"
        ),
        "{stderr}"
    );
}

#[test]
fn a_panel_file_with_a_typo_is_refused_naming_the_file() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    interact_run(&out);
    let panel = tmp.path().join("panel.toml");
    fs_err::write(&panel, "[[model]]\nmodle = \"x\"\n").unwrap();
    let output = specgap().args([OsStr::new("judge"), out.as_os_str(), OsStr::new("--panel"), panel.as_os_str()]).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains(&format!("{} is not a panel file", panel.display())), "{stderr}");
    assert!(stderr.contains("unknown field `modle`"), "{stderr}");
}

#[test]
fn extract_scores_a_run_through_extractor_sessions_and_the_report_uses_the_agreed_score() {
    // Extractors copy the delivered plan.json unchanged, write their report naming it, then
    // submit.
    let server = MockServer::start(|request| {
        let step = request.messages().iter().filter(|m| m["role"] == "assistant").count();
        let call = if step == 0 {
            let report = r#"{"status": "success", "files_found": ["plan.json"], "files_normalized": ["plan.json"]}"#;
            ("bash", json!({"command": format!("cp /delivered/plan.json plan.json && echo '{report}' > _result.json")}))
        } else {
            ("submit", json!({}))
        };
        Reply::Calls(vec![(format!("c{step}"), call.0.to_string(), call.1)])
    });
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    run_ok([
        OsStr::new("run"),
        repo().join("examples/tasks/retail-replenishment").as_os_str(),
        OsStr::new("--agent"),
        OsStr::new("scripted:gold"),
        OsStr::new("--condition"),
        OsStr::new("hidden"),
        OsStr::new("--out"),
        out.as_os_str(),
        OsStr::new("--no-report"),
    ]);
    let mut text = String::new();
    for model in ["xa", "xb", "xc"] {
        text.push_str(&format!("[[model]]\nmodel = \"{model}\"\nbase_url = \"{}\"\nmax_retries = 0\n\n", server.url));
    }
    let panel = tmp.path().join("extractors.toml");
    fs_err::write(&panel, text).unwrap();
    let extracted = run_ok([OsStr::new("extract"), out.as_os_str(), OsStr::new("--panel"), panel.as_os_str()]);
    let stderr = String::from_utf8_lossy(&extracted.stderr);
    assert!(
        stderr
            .contains(": 1 submission(s) extracted by 2 extractor session(s): 1 scored, 0 unavailable (no majority); 0 already extracted"),
        "{stderr}"
    );
    assert_eq!(server.requests().len(), 4, "two sessions of two turns");
    let report = report_json(&out);
    assert!(report["extraction"].as_str().unwrap().starts_with("panel:"));
    let delivery = &group(&report, "scripted:gold", "hidden")["delivery"];
    assert_eq!(delivery["quality"], json!(1.0));
    let store = Store::open(&out).unwrap();
    assert_eq!(store.usage().unwrap().iter().filter(|u| u.role == Role::Extractor).map(|u| u.usage.requests).sum::<u64>(), 4);
}

/// `specgap run` of a chat agent on the retail case under `interact`, with `extra` flags.
fn chat_interact_run(server: &MockServer, out: &Path, extra: &[&std::ffi::OsStr]) {
    let mut cmd = specgap();
    cmd.arg("run")
        .arg(repo().join("examples/tasks/retail-replenishment"))
        .args(["--agent", "chat:agent", "--base-url", &server.url, "--max-retries", "0"])
        .args(["--condition", "interact", "--jobs", "1", "--no-report"])
        .arg("--out")
        .arg(out)
        .args(extra);
    assert_succeeded(cmd.output().expect("spawn specgap"));
}

#[test]
fn run_with_a_detector_panel_answers_the_questions_the_panel_hears_and_keys_its_episodes() {
    // The agent asks in prose, without the heading and without a tool call, then stops. The
    // detector models split its compound question; the relay answers each part.
    let server = MockServer::start(|request| {
        if request.model() == "agent" {
            let step = request.messages().iter().filter(|m| m["role"] == "assistant").count();
            return match step {
                0 => Reply::text("I looked at the data. Are the lanes all open this week, and can a store ship to another store?"),
                _ => Reply::Calls(vec![("c1".into(), "submit".into(), json!({}))]),
            };
        }
        Reply::json(json!({"asking": true, "questions": ["Are all the truck lanes open this week?", "Can a store ship to another store?"]}))
    });
    let tmp = tempfile::tempdir().unwrap();
    let mut text = String::new();
    for model in ["da", "db", "dc"] {
        text.push_str(&format!("[[model]]\nmodel = \"{model}\"\nbase_url = \"{}\"\nmax_retries = 0\n\n", server.url));
    }
    let panel = tmp.path().join("detector.toml");
    fs_err::write(&panel, text).unwrap();
    let with = tmp.path().join("with");
    chat_interact_run(&server, &with, &[OsStr::new("--detector-panel"), panel.as_os_str()]);
    let store = Store::open(&with).unwrap();
    let questions: Vec<String> = store.questions().unwrap().into_iter().map(|q| q.question.text).collect();
    assert_eq!(questions, ["Are all the truck lanes open this week?", "Can a store ship to another store?"]);
    assert_eq!(server.requests().iter().filter(|r| r.model() != "agent").count(), 3);
    assert!(store.usage().unwrap().iter().any(|u| u.role == Role::Detector && u.usage.requests == 3));
    let ballots = store.ballots().unwrap();
    assert_eq!(ballots.len(), 3);
    assert!(ballots.iter().all(|b| b.ballot.subject == "turn:1"));
    let panels = store.panels().unwrap();
    assert_eq!(panels.len(), 1);
    assert_eq!(panels[0].name, ballots[0].ballot.panel);
    // The detector is part of the user's configuration in run.toml, so of the episode key.
    let config = store.config().clone();
    assert!(config.users[0].config.contains_key("detector"));
    let without = tmp.path().join("without");
    chat_interact_run(&server, &without, &[]);
    let other = Store::open(&without).unwrap();
    assert_ne!(other.config().users[0].hash, config.users[0].hash);
    assert_ne!(other.episodes().unwrap()[0].id, store.episodes().unwrap()[0].id);
    // Without the panel, the deterministic rule took the agent's prose question as one unit.
    assert_eq!(other.questions().unwrap().len(), 1);
}
