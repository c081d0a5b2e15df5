//! A synthesis's output directory (`journal.json`, format 1) given to the viewer: its page
//! (entries in order with their usage, limits, usage per role, outcome), each entry's
//! hand-off on demand, its rollouts' run store served as a run, the static site's files
//! (hand-offs only with private parts), and malformed journals refused naming the file.

use std::path::PathBuf;

use serde_json::{Value, json};
use specgap_test_support::files::copy_dir;
use specgap_view::{RunSet, StaticOptions, ViewerConfig, serve, write_static};

use crate::fixture;
use crate::http::get;

fn usage(input: u64, output: u64, requests: u64, cost: f64) -> Value {
    json!({"input_tokens": input, "output_tokens": output, "cached_tokens": 0, "reasoning_tokens": 0,
           "requests": requests, "retries": 0, "latency_ms": 0, "cost_usd": cost})
}

/// The journal of a synthesis that stopped on `--max-iterations` after one round of
/// calibration rollouts (`rollout` is the episode its rollouts entry names).
fn journal(rollout: &str) -> Value {
    json!({
        "format": 1, "resumed": 1, "source": "examples/tasks/payment-retry",
        "limits": {"max_iterations": 1, "max_redesigns": 0, "max_retries": 2,
                   "brief": {"requirements": 5, "min_withheld": 3}, "max_tokens": 5000},
        "roles": {"planner": "chat:m", "builder": "chat:m", "auditor": "scripted:a.json", "calibrator": "scripted:c.json"},
        "usage": {"builder": usage(200, 50, 2, 0.5), "planner": usage(100, 20, 1, 0.25), "rollouts": usage(300, 30, 3, 0.0)},
        "carried": {"planner": usage(10, 0, 1, 0.0)},
        "entries": [
            {"seq": 1, "stage": "planner", "design": 1, "iteration": 0, "attempt": 1, "status": "accepted",
             "inputs": {"source": "examples/tasks/payment-retry"}, "reply": "{\"terminal_outcome\": \"t\"}",
             "detail": {"terminal_outcome": "t"}, "usage": usage(90, 20, 1, 0.25)},
            {"seq": 2, "stage": "builder", "design": 1, "iteration": 1, "attempt": 1, "status": "malformed",
             "inputs": {"fixes": []}, "reply": "not json", "detail": "the builder hand-off is not JSON", "usage": usage(80, 20, 1, 0.25)},
            {"seq": 3, "stage": "builder", "design": 1, "iteration": 1, "attempt": 2, "status": "accepted",
             "inputs": {"fixes": []}, "retry_reason": "the builder hand-off is not JSON", "reply": "{\"package\": \".\"}",
             "detail": {"package": ".", "summary": "s"}, "usage": usage(120, 30, 1, 0.25)},
            {"seq": 4, "stage": "acceptance", "design": 1, "iteration": 1, "attempt": 1, "status": "passed",
             "detail": {"passed": true, "rows": []}},
            {"seq": 5, "stage": "rollouts", "design": 1, "iteration": 1, "attempt": 1, "status": "ran",
             "detail": {"store": "out/rollouts/design-1/iteration-1", "rollouts": [{"rollout": rollout, "condition": "full", "status": "finished", "score": 1.0}]},
             "usage": usage(300, 30, 3, 0.0)}
        ],
        "outcome": {"status": "failed", "message": "design 1 is still not accepted after 1 builder iterations (--max-iterations 1)", "package": null}
    })
}

/// A synthesis directory holding `journal` and, as its design 1 iteration 1 rollouts, a copy
/// of the viewer's fixture run (with a `design-x` entry that is no rollout).
struct Synthesis {
    _run: fixture::Fixture,
    _tmp: tempfile::TempDir,
    dir: PathBuf,
    episode: String,
}

fn synthesis() -> Synthesis {
    let run = fixture::run();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("synth");
    copy_dir(&run.dir, &dir.join("rollouts/design-1/iteration-1"));
    fs_err::create_dir_all(dir.join("rollouts/design-x")).unwrap();
    let episode = run.gold.clone();
    fs_err::write(dir.join("journal.json"), serde_json::to_string_pretty(&journal(&episode)).unwrap()).unwrap();
    Synthesis { _run: run, _tmp: tmp, dir, episode }
}

/// A row of the entry table: `(seq, stage, design, iteration, attempt, status, retried)`,
/// then its usage with the tokens and cost shown for it, and its run.
fn row(key: (u64, &str, u64, u64, u64, &str, bool), spent: [Value; 3], run: Value) -> Value {
    let (seq, stage, design, iteration, attempt, status, retried) = key;
    let [usage, tokens, cost] = spent;
    json!({"seq": seq, "stage": stage, "design": design, "iteration": iteration, "attempt": attempt, "status": status,
           "retried": retried, "usage": usage, "tokens": tokens, "cost_usd": cost, "run": run})
}

fn expected_rows() -> Vec<Value> {
    let none = || [Value::Null, Value::Null, Value::Null];
    vec![
        row((1, "planner", 1, 0, 1, "accepted", false), [usage(90, 20, 1, 0.25), json!(110), json!(0.25)], Value::Null),
        row((2, "builder", 1, 1, 1, "malformed", false), [usage(80, 20, 1, 0.25), json!(100), json!(0.25)], Value::Null),
        row((3, "builder", 1, 1, 2, "accepted", true), [usage(120, 30, 1, 0.25), json!(150), json!(0.25)], Value::Null),
        row((4, "acceptance", 1, 1, 1, "passed", false), none(), Value::Null),
        row((5, "rollouts", 1, 1, 1, "ran", false), [usage(300, 30, 3, 0.0), json!(330), json!(0.0)], json!(0)),
    ]
}

fn expected_page(label: &str, source: &str, message: Value, handoffs: bool) -> Value {
    json!({
        "index": 0, "label": label, "format": 1, "resumed": 1, "source": source,
        "roles": {"auditor": "scripted:a.json", "builder": "chat:m", "calibrator": "scripted:c.json", "planner": "chat:m"},
        "limits": {"max_iterations": 1, "max_redesigns": 0, "max_retries": 2, "brief": {"requirements": 5, "min_withheld": 3}, "max_tokens": 5000},
        "usage": {"builder": usage(200, 50, 2, 0.5), "planner": usage(100, 20, 1, 0.25), "rollouts": usage(300, 30, 3, 0.0)},
        "carried": {"planner": usage(10, 0, 1, 0.0)},
        "total": {"tokens": 700, "cost_usd": 0.75},
        "outcome": {"status": "failed", "message": message, "package": null},
        "handoffs": handoffs,
        "entries": expected_rows(),
        "rollouts": [{"design": 1, "iteration": 1, "run": 0}],
    })
}

const MESSAGE: &str = "design 1 is still not accepted after 1 builder iterations (--max-iterations 1)";

#[test]
fn the_viewer_shows_a_synthesis_its_entries_usage_limits_outcome_and_hand_offs_and_its_rollouts_as_a_run() {
    let s = synthesis();
    let viewer = serve(ViewerConfig::new(vec![s.dir.clone()])).unwrap();
    let (addr, token) = (viewer.addr(), viewer.token().to_string());
    let label = s.dir.display().to_string();
    assert_eq!(viewer.served(), (1, 1), "one rollouts run, one synthesis");

    let list = get(addr, &token, "/api/syntheses");
    assert_eq!(list.status, 200, "{}", list.text());
    assert_eq!(
        list.json(),
        json!([{"index": 0, "label": label, "status": "failed", "entries": 5, "rollouts": [{"design": 1, "iteration": 1, "run": 0}]}])
    );

    let page = get(addr, &token, "/api/synthesis/0").json();
    assert_eq!(page, expected_page(&label, "examples/tasks/payment-retry", json!(MESSAGE), true));

    // Each entry's hand-off on demand: the row with inputs, retry reason, reply and detail.
    let retry = get(addr, &token, "/api/synthesis/0/entry/3").json();
    let mut want = expected_rows()[2].clone();
    want["inputs"] = json!({"fixes": []});
    want["retry_reason"] = json!("the builder hand-off is not JSON");
    want["reply"] = json!("{\"package\": \".\"}");
    want["detail"] = json!({"package": ".", "summary": "s"});
    assert_eq!(retry, want);
    let check = get(addr, &token, "/api/synthesis/0/entry/4").json();
    assert_eq!((&check["inputs"], &check["reply"], &check["detail"]), (&Value::Null, &Value::Null, &json!({"passed": true, "rows": []})));
    let missing = get(addr, &token, "/api/synthesis/0/entry/6");
    assert_eq!((missing.status, missing.text()), (404, "synthesis 0 has no journal entry 6\n".to_string()));
    let none = get(addr, &token, "/api/synthesis/1");
    assert_eq!((none.status, none.text()), (404, "no synthesis 1 in this viewer\n".to_string()));

    // The rollouts' run store is an ordinary run of the viewer, its episodes reachable.
    let runs = get(addr, &token, "/api/runs").json();
    assert_eq!(runs.as_array().unwrap().len(), 1);
    assert_eq!(runs[0]["label"], json!(s.dir.join("rollouts/design-1/iteration-1").display().to_string()));
    assert_eq!(get(addr, &token, &format!("/api/run/0/episode/{}", s.episode)).status, 200);
    // The page's script is served.
    assert_eq!(get(addr, &token, "/assets/synthesis.js").status, 200);
}

#[test]
fn a_static_site_of_a_synthesis_holds_its_page_and_hand_offs_only_with_private_parts() {
    let s = synthesis();
    let tmp = tempfile::tempdir().unwrap();
    let read = |path: PathBuf| -> Value { serde_json::from_slice(&fs_err::read(path).unwrap()).unwrap() };

    let public = tmp.path().join("public");
    write_static(std::slice::from_ref(&s.dir), &public, StaticOptions::default()).unwrap();
    assert_eq!(
        read(public.join("data/syntheses.json")),
        json!([{"index": 0, "label": "synth", "status": "failed", "entries": 5, "rollouts": [{"design": 1, "iteration": 1, "run": 0}]}])
    );
    assert_eq!(read(public.join("data/synthesis-0/journal.json")), expected_page("synth", "payment-retry", Value::Null, false));
    let mut files: Vec<String> =
        fs_err::read_dir(public.join("data/synthesis-0")).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    files.sort();
    assert_eq!(files, ["journal.json"]);

    let private = tmp.path().join("private");
    write_static(std::slice::from_ref(&s.dir), &private, StaticOptions { include_private: true }).unwrap();
    let label = s.dir.display().to_string();
    assert_eq!(
        read(private.join("data/synthesis-0/journal.json")),
        expected_page(&label, "examples/tasks/payment-retry", json!(MESSAGE), true)
    );
    let mut files: Vec<String> = fs_err::read_dir(private.join("data/synthesis-0"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    assert_eq!(files, ["entry-1.json", "entry-2.json", "entry-3.json", "entry-4.json", "entry-5.json", "journal.json"]);
    assert_eq!(read(private.join("data/synthesis-0/entry-2.json"))["reply"], json!("not json"));
    assert!(private.join(format!("data/run-0/ep/{}/detail.json", s.episode)).is_file());
}

/// The error and its causes, as the binary prints them.
fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

#[test]
fn a_malformed_journal_is_refused_naming_its_file() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("synth");
    fs_err::create_dir_all(&dir).unwrap();
    let file = dir.join("journal.json");
    let refused = |text: &str| {
        fs_err::write(&file, text).unwrap();
        chain(&RunSet::open(std::slice::from_ref(&dir)).unwrap_err())
    };
    let (d, f) = (dir.display(), file.display());
    assert_eq!(
        refused("{\"format\": 1, \"entries\": []"),
        format!("cannot open the synthesis {d}: {f} is not a synthesis journal: EOF while parsing an object at line 1 column 27")
    );
    assert_eq!(
        refused("{\"format\": 1, \"entries\": []}"),
        format!("cannot open the synthesis {d}: {f} is not a synthesis journal: missing field `source` at line 1 column 28")
    );
    assert_eq!(
        refused("{\"format\": 2, \"steps\": []}"),
        format!("cannot open the synthesis {d}: {f} is a synthesis journal of format 2; this build reads format 1")
    );
    let mut bad = journal("0123456789abcdef");
    bad["entries"][0]["seq"] = json!("one");
    assert_eq!(
        refused(&serde_json::to_string(&bad).unwrap()),
        format!(
            "cannot open the synthesis {d}: {f} is not a synthesis journal: invalid type: string \"one\", expected usize at line 1 column 340"
        )
    );
}
