//! The bundled example suite (`examples/tasks`) and its replay scripts (`examples/scripts`):
//! per-package outcomes of the scripted agents, pinned, and the scores the scripts' README
//! promises.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use specgap_store::{Status, Store};

use crate::support::*;

/// `(task, agent, condition, start)` → final score of the one episode, for a whole run.
fn final_scores(run: &Path) -> BTreeMap<(String, String, String, String), (f64, bool)> {
    episodes(run)
        .into_iter()
        .map(|e| {
            assert_eq!(e.status, Status::Finished, "{e:#?}");
            let key = (e.task.clone(), e.agent.clone(), e.condition.clone(), e.start.clone());
            (key, (e.final_score.expect("scored"), e.final_success.expect("scored")))
        })
        .collect()
}

fn key(task: &str, agent: &str, condition: &str, start: &str) -> (String, String, String, String) {
    (format!("examples/{task}"), format!("scripted:{agent}"), condition.to_string(), start.to_string())
}

/// Pins, per package, what the default run (scripted gold, literal, starter under
/// partial, full, literal, hidden, blind from clean and every residual state) gives.
pub fn assert_default_run_pins(run: &Path) {
    let scores = final_scores(run);
    // Requirement-scored owner tasks: 5 requirements each, literal meets only the stated one
    // (1/5 = 0.2, examples/tasks/*/NOTES.md); scripted agents submit once, so Score@1..@4 all
    // carry that value forward.
    for task in ["payment-retry", "config-drift", "experiment-analysis"] {
        for condition in ["partial", "full", "literal", "hidden", "blind"] {
            assert_eq!(scores[&key(task, "gold", condition, "clean")], (1.0, true), "{task} gold {condition}");
            assert_eq!(scores[&key(task, "literal", condition, "clean")], (0.2, false), "{task} literal {condition}");
            assert_eq!(scores[&key(task, "starter", condition, "clean")], (0.0, false), "{task} starter {condition}");
        }
    }
    // Delivery case: gold attains the reference; literal violates hard rules (void, 0);
    // no plan at all is a schema failure (0). Feedback conditions do not apply (no observations).
    assert_eq!(scores[&key("retail-replenishment", "gold", "hidden", "clean")], (1.0, true));
    assert_eq!(scores[&key("retail-replenishment", "literal", "hidden", "clean")], (0.0, false));
    assert_eq!(scores[&key("retail-replenishment", "starter", "hidden", "clean")], (0.0, false));
    // blind (seed 001's neutral preset) delivers the same overlays with the same scores.
    for agent in ["gold", "literal", "starter"] {
        let hidden = scores[&key("retail-replenishment", agent, "hidden", "clean")];
        assert_eq!(scores[&key("retail-replenishment", agent, "blind", "clean")], hidden, "{agent}");
    }
    // Residual-start task: 11 hidden tests; the starter fails them all from clean; from a
    // residual state the starter delivers the inherited work as it is (trim-only fails 2,
    // root-refresh fails 1; their meta.toml lists them); gold passes everywhere.
    for start in ["clean", "residual:trim-only", "residual:root-refresh"] {
        assert_eq!(scores[&key("interval-tree", "gold", "hidden", start)], (1.0, true), "gold from {start}");
    }
    assert_eq!(scores[&key("interval-tree", "starter", "hidden", "clean")], (0.0, false));
    assert_eq!(scores[&key("interval-tree", "starter", "hidden", "residual:trim-only")], (9.0 / 11.0, false));
    assert_eq!(scores[&key("interval-tree", "starter", "hidden", "residual:root-refresh")], (10.0 / 11.0, false));
    for start in ["clean", "residual:trim-only", "residual:root-refresh"] {
        for agent in ["gold", "starter"] {
            let hidden = scores[&key("interval-tree", agent, "hidden", start)];
            assert_eq!(scores[&key("interval-tree", agent, "blind", start)], hidden, "{agent} from {start}");
        }
    }
    // 3 owner tasks × 3 agents × 5 conditions + retail 3 × 2 + interval (gold, starter) × 3
    // starts × 2.
    assert_eq!(scores.len(), 45 + 6 + 12);
}

fn script(name: &str) -> PathBuf {
    repo().join("examples/scripts").join(name)
}

fn run_script(task: &str, script_name: &str, extra: &[&str]) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let agent = format!("replay:{}", script(script_name).display());
    let suite = repo().join("examples/tasks").join(task);
    let mut args: Vec<&OsStr> = vec![OsStr::new("run"), suite.as_os_str(), OsStr::new("--agent"), OsStr::new(&agent)];
    args.extend(extra.iter().map(OsStr::new));
    args.extend([OsStr::new("--jobs"), OsStr::new("2"), OsStr::new("--no-report"), OsStr::new("--out"), out.as_os_str()]);
    run_ok(args);
    (tmp, out)
}

/// Scores of every submission of the single episode under `condition` and `start`.
fn submission_scores(run: &Path, condition: &str, start: &str) -> Vec<f64> {
    let store = Store::open(run).unwrap();
    let episode = store.episodes().unwrap().into_iter().find(|e| e.condition == condition && e.start == start).unwrap();
    let mut subs: Vec<_> = store.submissions().unwrap().into_iter().filter(|s| s.episode == episode.id).collect();
    subs.sort_by_key(|s| s.k);
    subs.iter().map(|s| s.score.expect("valid evaluation")).collect()
}

#[test]
fn payment_retry_careful_script_reacts_to_feedback_as_its_readme_says() {
    // examples/scripts/README.md: 0.2, 0.6, 1.0 under partial and literal; one submission
    // (0.2) under full, which gives no feedback.
    let (_tmp, out) = run_script("payment-retry", "payment-retry-careful.jsonl", &["--condition", "partial,literal,full"]);
    assert_eq!(submission_scores(&out, "partial", "clean"), [0.2, 0.6, 1.0]);
    assert_eq!(submission_scores(&out, "literal", "clean"), [0.2, 0.6, 1.0]);
    assert_eq!(submission_scores(&out, "full", "clean"), [0.2]);
}

#[test]
fn retail_ask_first_script_asks_then_delivers_the_reference() {
    let (_tmp, out) = run_script("retail-replenishment", "retail-ask-first.jsonl", &["--condition", "interact-req,hidden"]);
    assert_eq!(submission_scores(&out, "interact-req", "clean"), [1.0]);
    assert_eq!(submission_scores(&out, "hidden", "clean"), [1.0]);
    let store = Store::open(&out).unwrap();
    let episode = store.episodes().unwrap().into_iter().find(|e| e.condition == "interact-req").unwrap();
    let questions: Vec<_> = store.questions().unwrap().into_iter().filter(|q| q.episode == episode.id).collect();
    // One ask_user message carrying eight question units, one per clarification target
    // (README); the closing statement without a question mark reaches the customer too
    // (interact-req prompts, it withholds nothing) and matches no target.
    assert_eq!(questions.len(), 2);
    assert!(questions[1].question.matched_targets.is_empty());
    let mut matched = questions[0].question.matched_targets.clone();
    matched.sort();
    matched.dedup();
    assert_eq!(matched.len(), 8, "{matched:?}");
}

#[test]
fn interval_scripts_keep_or_verify_the_inherited_work() {
    let flags = ["--condition", "partial", "--feedback", "off", "--profile", "shell", "--start", "residual:all"];
    let (_tmp, keep) = run_script("interval-tree", "interval-keep-inherited.jsonl", &flags);
    assert_eq!(submission_scores(&keep, "partial+feedback=off+profile=shell", "residual:trim-only"), [9.0 / 11.0]);
    assert_eq!(submission_scores(&keep, "partial+feedback=off+profile=shell", "residual:root-refresh"), [10.0 / 11.0]);
    let (_tmp2, verify) = run_script("interval-tree", "interval-verify-inherited.jsonl", &flags);
    assert_eq!(submission_scores(&verify, "partial+feedback=off+profile=shell", "residual:trim-only"), [1.0]);
    assert_eq!(submission_scores(&verify, "partial+feedback=off+profile=shell", "residual:root-refresh"), [1.0]);
}

/// Runs of the example suite with the example scripts give a value for every measure family
/// of the report (issue "Measures …", done-when), and `compare` works on two such runs.
#[test]
fn example_runs_fill_every_measure_family_and_compare_works() {
    let tmp = tempfile::tempdir().unwrap();
    let run = |name: &str, task: &str, agents: &str, extra: &[&str]| -> PathBuf {
        let out = tmp.path().join(name);
        let suite = repo().join("examples/tasks").join(task);
        let mut args: Vec<String> = vec!["run".into(), suite.display().to_string(), "--agent".into(), agents.into()];
        args.extend(extra.iter().map(|s| s.to_string()));
        args.extend(["--jobs", "2", "--no-report", "--out"].map(String::from));
        args.push(out.display().to_string());
        run_ok(&args);
        out
    };
    let careful = format!("replay:{}", script("payment-retry-careful.jsonl").display());
    let ask_first = format!("replay:{}", script("retail-ask-first.jsonl").display());
    let keep = format!("replay:{}", script("interval-keep-inherited.jsonl").display());
    let verify = format!("replay:{}", script("interval-verify-inherited.jsonl").display());
    let owner = run("owner", "payment-retry", &format!("{careful},scripted:literal"), &["--condition", "partial,literal,full"]);
    let delivery = run(
        "delivery",
        "retail-replenishment",
        &format!("{ask_first},scripted:gold,scripted:starter"),
        &["--condition", "interact,interact-req,hidden,oracle:0.5", "--repeats", "3"],
    );
    let residual = run(
        "residual",
        "interval-tree",
        &format!("{keep},{verify}"),
        &["--condition", "partial", "--feedback", "off", "--profile", "shell", "--start", "clean,residual:all"],
    );
    let output = run_ok([
        OsStr::new("report"),
        owner.as_os_str(),
        delivery.as_os_str(),
        residual.as_os_str(),
        OsStr::new("--format"),
        OsStr::new("json"),
    ]);
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!((report["schema"].as_str(), report["version"].as_u64()), (Some("specgap-report"), Some(3)));
    let groups = report["groups"].as_array().unwrap();
    let any = |field: &str| groups.iter().any(|g| g.get(field).is_some());
    // seed 000: Score@k everywhere; In-round / Ahead from the careful script's resubmissions.
    assert!(groups.iter().all(|g| g["episodes"].as_u64() == Some(0) || g["outcomes"]["scored"].as_u64() > Some(0)));
    assert!(any("resolution"), "no In-round / Ahead");
    assert!(!report["outcome_costs"].as_array().unwrap().is_empty(), "no outcome cost");
    // seed 002: Quality / DSR / pass@3 / pass^3, clarification measures, zero-score signatures,
    // the oracle curve, Recall against Quality over four groups.
    let delivery_groups: Vec<_> = groups.iter().filter(|g| g.get("delivery").is_some()).collect();
    assert!(delivery_groups.iter().any(|g| g["delivery"]["pass_k"]["k"] == 3), "no pass@3");
    let asked = groups
        .iter()
        .find(|g| {
            g["key"]["agent"].as_str() == Some(crate::support::label_of(&ask_first).as_str()) && g["key"]["condition"] == "interact-req"
        })
        .unwrap();
    assert_eq!(asked["clarification"]["recall"]["mean"], 1.0);
    // Precision 8/9 (the closing statement is a ninth, unmatched unit): F1 = 2·(8/9)·1 / (8/9 + 1)
    // = 16/17, which f64 arithmetic in that order gives as 0.9411764705882352.
    assert_eq!(asked["clarification"]["ask_f1"]["mean"], 0.9411764705882352);
    assert!(any("zero_scores"), "no zero-score signatures");
    assert!(!report["oracle"].as_array().unwrap().is_empty(), "no oracle curve");
    assert!(report.get("recall_quality").is_some(), "no Recall against Quality");
    // seed 001: Res, Clean, Gap and the acceptance-bias measures.
    let residual_rows = report["residual"].as_array().unwrap();
    assert!(!residual_rows.is_empty(), "no residual rows");

    let compare = run_ok([OsStr::new("compare"), delivery.as_os_str(), delivery.as_os_str(), OsStr::new("--format"), OsStr::new("json")]);
    let compare: serde_json::Value = serde_json::from_slice(&compare.stdout).unwrap();
    assert_eq!(compare["schema"], "specgap-compare");
}
