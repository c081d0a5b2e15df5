//! A run store written by hand for the viewer's tests: two real packages (copies of the task
//! crate's fixtures with canaries planted in their private files), episodes whose agent text
//! and tool outputs hold markup and `javascript:` links, private parts holding canaries, an
//! event kind this build does not know, a residual start and a delivery case with questions.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::json;
use specgap_protocol::event::{EventKind, ToolCall, ToolSpec, Usage, UserMessageKind};
use specgap_protocol::package::Family;
use specgap_protocol::result::{EvalResult, Scored, ScoringKind};
use specgap_protocol::run::{EndReason, EpisodeKey, RunConfig};
use specgap_store::{
    Ballot, BallotOutcome, EpisodeMeta, EpisodeSummary, ErrorClass, ErrorRecord, Extraction, ExtractionStatus, Judgement, NotApplicableRow,
    PanelRecord, PanelUse, Question, Role, Status, Store, SubmissionRecord,
};
use specgap_test_support::files::copy_dir;

/// Every private text planted; none may appear in a public static site.
pub const CANARIES: &[&str] = &[
    "CANARY-REQ-TEXT",
    "CANARY-TARGET-ANSWER",
    "CANARY-EVAL-DETAIL",
    "CANARY-DIFF",
    "CANARY-START-DIFF",
    "CANARY-EVAL-ERROR",
    "CANARY-UNKNOWN-EVENT",
    "CANARY-MEASURED",
    "CANARY-BALLOT",
    "CANARY-EXTRACTOR",
];

/// Markup the agent wrote; shown as text, it runs nothing.
pub const HOSTILE_TEXT: &str = "<img src=x onerror=\"window.__pwned='img'\"> see [the docs](javascript:window.__pwned='link') <a href=\"javascript:window.__pwned='a'\">click</a>";
/// A tool output holding a script.
pub const HOSTILE_OUTPUT: &str = "<script>window.__pwned='script';alert('xss')</script>\n<iframe src=\"javascript:alert(1)\"></iframe>";
/// The coverage panel of the delivery episode's ballots.
pub const JUDGE_PANEL: &str = "panel:0123456789ab";
/// The extraction panel of its delivery score.
pub const EXTRACTOR_PANEL: &str = "panel:ba9876543210";
/// A word only one tool result holds (text search).
pub const NEEDLE: &str = "zanzibar-quokka";

/// The run: its directory and the ids of its episodes.
pub struct Fixture {
    pub _tmp: tempfile::TempDir,
    pub dir: PathBuf,
    pub hostile: String,
    pub gold: String,
    pub delivery: String,
    pub residual: String,
}

fn task_fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../specgap-task/tests/fixtures").join(name)
}

fn packages(root: &Path) -> (PathBuf, PathBuf) {
    let req = root.join("pkgs/req");
    copy_dir(&task_fixture("req-basic"), &req);
    let text = fs_err::read_to_string(req.join("requirements.toml")).unwrap();
    fs_err::write(req.join("requirements.toml"), text.replace("whatever the delay.", "whatever the delay. CANARY-REQ-TEXT")).unwrap();
    let del = root.join("pkgs/del");
    copy_dir(&task_fixture("delivery-basic"), &del);
    let text = fs_err::read_to_string(del.join("clarifications.toml")).unwrap();
    fs_err::write(
        del.join("clarifications.toml"),
        text.replace("at most 9.5 kg of goods go in a box.", "at most 9.5 kg of goods go in a box. CANARY-TARGET-ANSWER"),
    )
    .unwrap();
    (req, del)
}

fn config(req: &Path, del: &Path) -> RunConfig {
    let hash = |p: &Path| specgap_task::load(p).unwrap().hash().to_string();
    toml::from_str(&format!(
        r#"
specgap_version = "0.2.0-test"
protocol_version = 2
seed = 5
repeats = 1
retries = 0
sandbox = true
conditions = ["partial", "full", "interact"]
starts = ["clean", "residual:all"]

[[tasks]]
name = "fixtures/req-basic"
hash = "{}"
path = "{}"

[[tasks]]
name = "fixtures/delivery-basic"
hash = "{}"
path = "{}"

[[agents]]
spec = "replay:hostile"
hash = "ah"
config = {{}}

[[agents]]
spec = "scripted:gold"
hash = "ag"
config = {{}}

[[users]]
spec = "relay"
hash = "u"
config = {{}}
"#,
        hash(req),
        req.display(),
        hash(del),
        del.display()
    ))
    .unwrap()
}

fn key(task: &str, agent: &str, condition: &str, start: &str) -> EpisodeKey {
    EpisodeKey {
        task: task.into(),
        task_hash: "h".into(),
        agent: agent.into(),
        agent_hash: agent.len().to_string(),
        user_hash: "u".into(),
        condition: condition.into(),
        start: start.into(),
        repeat: 0,
        seed: 5,
    }
}

fn meta(kind: ScoringKind) -> EpisodeMeta {
    EpisodeMeta { user: "relay".into(), family: Family::Swe, scoring_kind: kind }
}

fn result(value: serde_json::Value) -> EvalResult {
    serde_json::from_value(value).unwrap()
}

fn start_event(id: &str, task: &str, agent: &str, condition: &str, start: &str, system: &str) -> EventKind {
    EventKind::EpisodeStart {
        episode: id.into(),
        task: task.into(),
        condition: condition.into(),
        start: start.into(),
        agent: agent.into(),
        system_prompt: system.into(),
        opening_message: "Please make the late fees right.".into(),
        tools: vec![ToolSpec {
            name: "write_text".into(),
            description: "Write a file.".into(),
            parameters: json!({"type": "object", "properties": {"path": {}, "content": {}}}),
        }],
    }
}

fn finished(reason: EndReason, turns: u32) -> EpisodeSummary {
    EpisodeSummary { status: Status::Finished, end_reason: Some(reason), turns, tool_calls: turns, wall_ms: 1200, error: None }
}

/// Writes the run.
pub fn run() -> Fixture {
    let tmp = tempfile::tempdir().unwrap();
    let (req, del) = packages(tmp.path());
    let dir = tmp.path().join("run");
    let store = Store::create(&dir, &config(&req, &del)).unwrap();
    let hostile = hostile_episode(&store);
    let gold = gold_episode(&store);
    let delivery = delivery_episode(&store);
    let residual = residual_episode(&store);
    store
        .record_not_applicable(&NotApplicableRow {
            task: "fixtures/delivery-basic".into(),
            agent: "scripted:gold".into(),
            condition: "full".into(),
            start: "clean".into(),
            reason: "condition full needs instruction.full.md".into(),
        })
        .unwrap();
    Fixture { _tmp: tmp, dir, hostile, gold, delivery, residual }
}

fn hostile_episode(store: &Store) -> String {
    let (task, agent) = ("fixtures/req-basic", "replay:hostile");
    let mut w = store.begin_episode(&key(task, agent, "partial", "clean"), &meta(ScoringKind::Requirement)).unwrap();
    let id = w.id().to_string();
    w.event(start_event(&id, task, agent, "partial", "clean", "You are an engineer. <script>window.__pwned='system'</script>")).unwrap();
    let long: String = (0..1500).map(|i| format!("line {i:04} of a long log, padded to make it about sixty-four KiB ......\n")).collect();
    w.event(EventKind::AgentTurn {
        turn: 1,
        text: Some(HOSTILE_TEXT.into()),
        tool_calls: vec![ToolCall {
            id: "c1".into(),
            tool: "write_text".into(),
            arguments: json!({"path": "billing/fees.py", "content": "<script>window.__pwned='arg'</script>\nFEE = 2\n"}),
        }],
        usage: Some(Usage { input_tokens: 1200, output_tokens: 80, cached_tokens: 200, requests: 1, latency_ms: 900, ..Usage::default() }),
    })
    .unwrap();
    w.event(EventKind::ToolResult {
        call_id: "c1".into(),
        tool: "write_text".into(),
        output: format!("{HOSTILE_OUTPUT}\n{long}"),
        is_error: false,
    })
    .unwrap();
    w.event(EventKind::UserMessage { kind: UserMessageKind::Feedback, text: "Invoices still look wrong <b>bold?</b>".into(), usage: None })
        .unwrap();
    w.event(EventKind::Submission { k: 1, summary: Some("done".into()), automatic: false }).unwrap();
    w.event(EventKind::Evaluation { k: 1, score: 2.0 / 3.0, success: false, failing_requirement: Some("disputed-exempt".into()) }).unwrap();
    w.event(EventKind::Error {
        class: "evaluation".into(),
        message: "evaluator said CANARY-EVAL-ERROR".into(),
        stderr_tail: "CANARY-EVAL-ERROR".into(),
    })
    .unwrap();
    w.event(EventKind::End { reason: "submission_budget".into(), detail: String::new() }).unwrap();
    w.record_usage(
        Role::Agent,
        &Usage { input_tokens: 1200, output_tokens: 80, cached_tokens: 200, requests: 1, latency_ms: 900, ..Usage::default() },
    )
    .unwrap();
    w.record_error(&ErrorRecord {
        class: ErrorClass::Evaluation,
        message: "first try: CANARY-EVAL-ERROR".into(),
        stderr_tail: "CANARY-EVAL-ERROR".into(),
        deterministic: false,
    })
    .unwrap();
    let record = SubmissionRecord {
        automatic: false,
        agent_declared: true,
        result: Some(result(json!({"version": 1, "requirements": {
            "disputed-exempt": {"pass": false, "failure_mode": "fee-on-dispute", "measured": {"note": "CANARY-MEASURED"}, "detail": "CANARY-EVAL-DETAIL"},
            "fee-cap": {"pass": true}, "monthly-rate": {"pass": true}}}))),
        scored: Some(Scored { kind: ScoringKind::Requirement, score: 2.0 / 3.0, success: false }),
        failing_requirement: Some("disputed-exempt".into()),
        error: None,
        diff: b"diff --git a/billing/fees.py b/billing/fees.py\n--- a/billing/fees.py\n+++ b/billing/fees.py\n@@ -1 +1,2 @@\n-FEE = 1\n+FEE = 2  # CANARY-DIFF\n+def late_fee(x): return \"<script>\"\n".to_vec(),
    };
    w.write_submission(1, &record).unwrap();
    w.finish(finished(EndReason::SubmissionBudget, 1)).unwrap();
    // A newer specgap's event kind, appended raw after the episode ended.
    let line = "{\"seq\":8,\"ts_ms\":1764580260123,\"elapsed_ms\":1300,\"type\":\"judge_ballot\",\"target\":\"t\",\"note\":\"CANARY-UNKNOWN-EVENT\"}\n";
    let frame = zstd::bulk::compress(line.as_bytes(), 3).unwrap();
    std::fs::OpenOptions::new().append(true).open(specgap_store::trajectory_path(store.dir(), &id)).unwrap().write_all(&frame).unwrap();
    id
}

fn gold_episode(store: &Store) -> String {
    let (task, agent) = ("fixtures/req-basic", "scripted:gold");
    let mut w = store.begin_episode(&key(task, agent, "full", "clean"), &meta(ScoringKind::Requirement)).unwrap();
    let id = w.id().to_string();
    w.event(start_event(&id, task, agent, "full", "clean", "You are an engineer.")).unwrap();
    w.event(EventKind::Overlay { name: "gold".into() }).unwrap();
    w.event(EventKind::Submission { k: 1, summary: None, automatic: false }).unwrap();
    w.event(EventKind::Evaluation { k: 1, score: 1.0, success: true, failing_requirement: None }).unwrap();
    w.event(EventKind::End { reason: "accepted".into(), detail: String::new() }).unwrap();
    let record = SubmissionRecord {
        automatic: false,
        agent_declared: true,
        result: Some(result(
            json!({"version": 1, "requirements": {"disputed-exempt": {"pass": true}, "fee-cap": {"pass": true}, "monthly-rate": {"pass": true}}}),
        )),
        scored: Some(Scored { kind: ScoringKind::Requirement, score: 1.0, success: true }),
        failing_requirement: None,
        error: None,
        diff: b"diff --git a/billing/fees.py b/billing/fees.py\n".to_vec(),
    };
    w.write_submission(1, &record).unwrap();
    w.finish(finished(EndReason::Accepted, 1)).unwrap();
    id
}

fn delivery_episode(store: &Store) -> String {
    let (task, agent) = ("fixtures/delivery-basic", "replay:hostile");
    let mut w = store.begin_episode(&key(task, agent, "interact", "clean"), &meta(ScoringKind::Delivery)).unwrap();
    let id = w.id().to_string();
    w.event(start_event(&id, task, agent, "interact", "clean", "You deliver plans.")).unwrap();
    w.event(EventKind::AgentTurn {
        turn: 1,
        text: None,
        tool_calls: vec![ToolCall {
            id: "q1".into(),
            tool: "ask_user".into(),
            arguments: json!({"question": "Does the 10 kg limit include the box itself?"}),
        }],
        usage: None,
    })
    .unwrap();
    w.event(EventKind::ToolResult {
        call_id: "q1".into(),
        tool: "ask_user".into(),
        output: format!("Yes, it does ({NEEDLE})."),
        is_error: false,
    })
    .unwrap();
    w.record_question(&Question {
        turn: 1,
        text: "Does the 10 kg limit include the box itself?".into(),
        answer: "Yes, it does.".into(),
        matched_targets: vec!["packaging-weight".into()],
    })
    .unwrap();
    w.record_judgement(&Judgement {
        judge: "chat:judge-model".into(),
        target: "packaging-weight".into(),
        verdict: "covered".into(),
        matched_question_indices: vec![0],
    })
    .unwrap();
    w.record_judgement(&Judgement {
        judge: "chat:judge-model".into(),
        target: "all-items-today".into(),
        verdict: "missed".into(),
        matched_question_indices: vec![],
    })
    .unwrap();
    // Plan mode: the agent's prompt and tools change once its plan is written.
    w.event(EventKind::PhaseChange {
        phase: "execute".into(),
        system_prompt: "Carry out the plan you wrote. <script>window.__pwned='phase'</script>".into(),
        tools: vec![ToolSpec {
            name: "run_experiment".into(),
            description: "Run a command.".into(),
            parameters: json!({"type": "object", "properties": {"command": {}}}),
        }],
    })
    .unwrap();
    w.event(EventKind::End { reason: "submitted".into(), detail: String::new() }).unwrap();
    let record = SubmissionRecord {
        automatic: false,
        agent_declared: true,
        result: Some(result(json!({"version": 1, "delivery": {"valid": true, "objective": 9.0, "violations": [], "signature": "none"}}))),
        scored: Some(Scored { kind: ScoringKind::Delivery, score: 0.9, success: false }),
        failing_requirement: None,
        error: None,
        diff: Vec::new(),
    };
    w.write_submission(1, &record).unwrap();
    w.finish(finished(EndReason::Submitted, 1)).unwrap();
    // A cli: agent's model exchange (issue 14), a kind this build does not know, appended raw.
    let line = "{\"seq\":5,\"ts_ms\":1764580260200,\"elapsed_ms\":1400,\"type\":\"model_exchange\",\"protocol\":\"openai-chat\",\"model\":\"m1\",\"request\":{\"messages\":[{\"role\":\"user\",\"content\":\"<script>window.__pwned='exchange'</script>\"}]}}\n";
    let frame = zstd::bulk::compress(line.as_bytes(), 3).unwrap();
    std::fs::OpenOptions::new().append(true).open(specgap_store::trajectory_path(store.dir(), &id)).unwrap().write_all(&frame).unwrap();
    panel_work(store, &id);
    id
}

/// A coverage panel's ballots (one per seat, one malformed) and an extraction panel's verdict
/// on submission 1 with its ballots.
fn panel_work(store: &Store, id: &str) {
    store
        .record_panel(&PanelRecord {
            name: JUDGE_PANEL.into(),
            use_: PanelUse::Judge,
            config: json!({"models": [{"model": "judge-a"}, {"model": "judge-b"}], "vote": "majority"}),
            prompt_version: "seed002-judge-1".into(),
            prompt_hash: "ff".into(),
        })
        .unwrap();
    store
        .record_panel(&PanelRecord {
            name: EXTRACTOR_PANEL.into(),
            use_: PanelUse::Extractor,
            config: json!({"models": [{"model": "extractor-a"}]}),
            prompt_version: "seed002-extract-1".into(),
            prompt_hash: "ee".into(),
        })
        .unwrap();
    let ballot =
        |panel: &str, subject: &str, seat: u32, model: &str, outcome: BallotOutcome, vote: Option<serde_json::Value>, response: &str| {
            Ballot {
                panel: panel.into(),
                subject: subject.into(),
                seat,
                model: model.into(),
                position: seat,
                prompt_version: "v1".into(),
                outcome,
                vote,
                request: json!([{"messages": [{"role": "user", "content": "Is packaging-weight covered?"}]}]),
                response: json!([response]),
                error: (outcome != BallotOutcome::Ballot).then(|| "the reply is not the json asked for".to_string()),
            }
        };
    let long = "x".repeat(5_000);
    store
        .record_ballots(
            id,
            &[
                ballot(
                    JUDGE_PANEL,
                    "packaging-weight",
                    0,
                    "judge-a",
                    BallotOutcome::Ballot,
                    Some(json!({"covered": true, "question_indices": [0]})),
                    &format!("covered: CANARY-BALLOT {long}"),
                ),
                ballot(
                    JUDGE_PANEL,
                    "packaging-weight",
                    1,
                    "judge-b",
                    BallotOutcome::Malformed,
                    None,
                    "<script>window.__pwned='ballot'</script>",
                ),
            ],
        )
        .unwrap();
    let extraction = Extraction {
        panel: EXTRACTOR_PANEL.into(),
        k: 1,
        status: ExtractionStatus::Scored,
        score: Some(0.9),
        success: Some(false),
        valid: Some(true),
        objective: Some(9.0),
        signature: None,
        routes: 3,
        agreeing: 3,
    };
    store
        .record_extraction(
            id,
            &[ballot(
                EXTRACTOR_PANEL,
                "submission:1",
                0,
                "extractor-a",
                BallotOutcome::Ballot,
                Some(json!({"score": 0.9, "valid": true})),
                "plan extracted: CANARY-EXTRACTOR",
            )],
            &extraction,
        )
        .unwrap();
}

fn residual_episode(store: &Store) -> String {
    let (task, agent) = ("fixtures/req-basic", "scripted:gold");
    let mut w = store.begin_episode(&key(task, agent, "partial", "residual:s1"), &meta(ScoringKind::Test)).unwrap();
    let id = w.id().to_string();
    w.write_start_result(&result(json!({"version": 1, "tests": {"t1": "fail", "t2": "pass"}}))).unwrap();
    w.write_start_diff(b"diff --git a/billing/fees.py b/billing/fees.py\n+# CANARY-START-DIFF\n").unwrap();
    w.event(start_event(&id, task, agent, "partial", "residual:s1", "You continue earlier work.")).unwrap();
    w.event(EventKind::StartEvaluation { state: "s1".into(), score: 0.5, success: false }).unwrap();
    w.event(EventKind::End { reason: "submitted".into(), detail: String::new() }).unwrap();
    w.finish(finished(EndReason::Submitted, 0)).unwrap();
    id
}
