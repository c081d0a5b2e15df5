//! Run stores written with the store's writer API: episodes of a copy of
//! `examples/tasks/config-drift` with private-text canaries planted in its requirements, notes,
//! full instruction and evaluator, and of `examples/tasks/retail-replenishment` with questions.

use std::path::{Path, PathBuf};

use serde_json::{Map, json};
use specgap_protocol::event::{EventKind, ToolCall, UserMessageKind};
use specgap_protocol::request::{ChatBody, StoredMessage};
use specgap_protocol::result::{EvalResult, Scored, ScoringKind};
use specgap_protocol::run::{EndReason, EpisodeKey, RunConfig};
use specgap_store::{EpisodeMeta, EpisodeSummary, Question, Status, Store, SubmissionRecord};
use specgap_task::TaskPackage;
use specgap_test_support::files::copy_dir;

pub const CANARY_REQUIREMENT: &str = "CANARY-REQUIREMENT-7f3a";
pub const CANARY_NOTES: &str = "CANARY-NOTES-91be";
pub const CANARY_FULL: &str = "CANARY-FULL-INSTRUCTION-c2d4";
pub const CANARY_EVALUATOR: &str = "CANARY-EVALUATOR-5e60";
/// Planted in the gold solution: no rubric shows solutions.
pub const CANARY_SOLUTION: &str = "CANARY-SOLUTION-a81c";
/// What an agent wrote in a turn: a script that would retitle the page if it ran.
pub const AGENT_SCRIPT: &str = "<script>document.title='pwned'</script><img src=x onerror=\"document.title='pwned'\">";

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/tasks").canonicalize().unwrap()
}

/// config-drift copied under `dir` with the canaries planted.
pub fn planted_package(dir: &Path) -> (PathBuf, TaskPackage) {
    let root = dir.join("config-drift");
    copy_dir(&examples().join("config-drift"), &root);
    let requirements = std::fs::read_to_string(root.join("requirements.toml")).unwrap();
    let planted = requirements.replacen(
        "description = \"\"\"The ledger keeps",
        &format!("description = \"\"\"{CANARY_REQUIREMENT} The ledger keeps"),
        1,
    );
    assert_ne!(planted, requirements, "the canary must be planted");
    std::fs::write(root.join("requirements.toml"), planted).unwrap();
    let append = |name: &str, text: &str| {
        let path = root.join(name);
        let mut body = std::fs::read_to_string(&path).unwrap();
        body.push_str(&format!("\n{text}\n"));
        std::fs::write(path, body).unwrap();
    };
    append("NOTES.md", CANARY_NOTES);
    append("instruction.full.md", CANARY_FULL);
    append("solutions/gold/estate/notes.py", &format!("# {CANARY_SOLUTION}"));
    std::fs::write(root.join("evaluator").join("canary.txt"), CANARY_EVALUATOR).unwrap();
    let package = specgap_task::load(&root).unwrap();
    (root, package)
}

pub fn retail() -> (PathBuf, TaskPackage) {
    let root = examples().join("retail-replenishment");
    let package = specgap_task::load(&root).unwrap();
    (root, package)
}

/// One episode to write.
pub struct Ep {
    pub task: usize,
    pub agent: &'static str,
    pub repeat: u32,
    pub success: bool,
    pub questions: Vec<&'static str>,
    /// A predecessor run of its own (`candidate_diff`): failing tests reported, a diff that
    /// names its file and differs per episode.
    pub candidate: bool,
}

/// The final diff of a candidate episode: one substantive change holding agent text (unique
/// per agent and repeat) and one incidental artifact.
pub fn candidate_diff(agent: &str, repeat: u32) -> String {
    format!(
        "diff --git a/estate/reconcile.py b/estate/reconcile.py\n--- a/estate/reconcile.py\n+++ b/estate/reconcile.py\n@@ -1 +1 @@\n-old\n+{AGENT_SCRIPT} {agent}-{repeat}\ndiff --git a/estate/__pycache__/reconcile.cpython-311.pyc b/estate/__pycache__/reconcile.cpython-311.pyc\nnew file mode 100644\nBinary files /dev/null and b/estate/__pycache__/reconcile.cpython-311.pyc differ\n"
    )
}

pub fn ep(task: usize, agent: &'static str, repeat: u32, success: bool) -> Ep {
    Ep { task, agent, repeat, success, questions: Vec::new(), candidate: false }
}

pub struct Run {
    pub _dir: tempfile::TempDir,
    pub run: PathBuf,
    pub store: Store,
    pub ids: Vec<String>,
}

fn config(seed: u64, tasks: &[(PathBuf, &TaskPackage)], user: &str, user_config: &str) -> RunConfig {
    let mut text = format!(
        "specgap_version = \"0.2.0\"\nprotocol_version = {}\nseed = {seed}\nrepeats = 5\nretries = 0\nsandbox = true\nconditions = [\"partial\"]\nstarts = [\"clean\"]\n",
        specgap_protocol::run::PROTOCOL_VERSION
    );
    for (path, package) in tasks {
        text.push_str(&format!(
            "\n[[tasks]]\nname = \"{}\"\nhash = \"{}\"\npath = \"{}\"\n",
            package.name(),
            package.hash(),
            path.display()
        ));
    }
    for agent in ["a1", "a2"] {
        text.push_str(&format!("\n[[agents]]\nspec = \"scripted:gold\"\nname = \"{agent}\"\nhash = \"h-{agent}\"\nconfig = {{}}\n"));
    }
    text.push_str(&format!("\n[[users]]\nspec = \"{user}\"\nhash = \"us1\"\nconfig = {user_config}\n"));
    toml::from_str(&text).unwrap()
}

fn key(package: &TaskPackage, agent: &str, seed: u64, repeat: u32) -> EpisodeKey {
    EpisodeKey {
        task: package.name().to_string(),
        task_hash: package.hash().to_string(),
        agent: agent.into(),
        agent_hash: format!("h-{agent}"),
        user_hash: "us1".into(),
        condition: "partial".into(),
        start: "clean".into(),
        repeat,
        seed,
    }
}

/// A store of `episodes` over the planted config-drift (task 0) and retail (task 1).
pub fn audit_run(episodes: &[Ep]) -> Run {
    let dir = tempfile::tempdir().unwrap();
    let (drift_path, drift) = planted_package(dir.path());
    let (retail_path, retail) = retail();
    let packages = [&drift, &retail];
    let run = dir.path().join("run");
    let store = Store::create(&run, &config(1, &[(drift_path, &drift), (retail_path, &retail)], "relay", "{}")).unwrap();
    let mut ids = Vec::new();
    for spec in episodes {
        let package = packages[spec.task];
        let meta =
            EpisodeMeta { user: "relay".into(), family: package.manifest().task.family, scoring_kind: package.planned_scoring_kind() };
        let mut writer = store.begin_episode(&key(package, spec.agent, 1, spec.repeat), &meta).unwrap();
        writer
            .event(EventKind::EpisodeStart {
                episode: writer.id().to_string(),
                task: package.name().to_string(),
                condition: "partial".into(),
                start: "clean".into(),
                agent: spec.agent.into(),
                system_prompt: "system".into(),
                opening_message: package.instruction().to_string(),
                tools: vec![],
            })
            .unwrap();
        writer
            .event(EventKind::AgentTurn {
                turn: 1,
                text: Some(format!("Looking around. {AGENT_SCRIPT}")),
                tool_calls: vec![ToolCall { id: "c1".into(), tool: "bash".into(), arguments: json!({"command": "ls"}) }],
                usage: None,
            })
            .unwrap();
        writer
            .event(EventKind::ToolResult { call_id: "c1".into(), tool: "bash".into(), output: "README.md\n".into(), is_error: false })
            .unwrap();
        for (turn, text) in spec.questions.iter().enumerate() {
            writer
                .record_question(&Question {
                    turn: turn as u32 + 1,
                    text: text.to_string(),
                    answer: format!("answer to {text}"),
                    matched_targets: vec![],
                })
                .unwrap();
        }
        let score = if spec.success { 1.0 } else { 0.0 };
        writer.event(EventKind::Submission { k: 1, summary: Some("done".into()), automatic: false }).unwrap();
        writer
            .event(EventKind::Evaluation {
                k: 1,
                score,
                success: spec.success,
                failing_requirement: (!spec.success).then(|| "record-identity".to_string()),
            })
            .unwrap();
        let result: EvalResult = if spec.candidate {
            let outcome = if spec.success { "pass" } else { "fail" };
            serde_json::from_value(json!({"version": 1, "reward": score, "tests": {"test_ledger_identity": outcome, "test_smoke": "pass"}}))
                .unwrap()
        } else {
            serde_json::from_value(json!({"version": 1, "reward": score})).unwrap()
        };
        let diff = if spec.candidate {
            candidate_diff(spec.agent, spec.repeat)
        } else {
            format!("--- a/x\n+++ b/x\n@@ -1 +1 @@\n-old\n+{AGENT_SCRIPT}\n")
        };
        writer
            .write_submission(
                1,
                &SubmissionRecord {
                    automatic: false,
                    agent_declared: true,
                    result: Some(result),
                    scored: Some(Scored { kind: ScoringKind::Reward, score, success: spec.success }),
                    failing_requirement: None,
                    error: None,
                    diff: diff.into_bytes(),
                },
            )
            .unwrap();
        ids.push(writer.id().to_string());
        writer
            .finish(EpisodeSummary {
                status: Status::Finished,
                end_reason: Some(EndReason::Submitted),
                turns: 1,
                tool_calls: 1,
                wall_ms: 5,
                error: None,
            })
            .unwrap();
    }
    Run { _dir: dir, run, store, ids }
}

/// The recorded requests of one chat-owner episode: `(purpose, system, items)` where each item
/// is one latest-item message and the model's reply to it.
pub struct Conversation {
    pub repeat: u32,
    pub turns: Vec<(UserMessageKind, &'static str, &'static str)>,
}

/// The body members besides the messages that the chat client sends for `config`.
fn fields(model: &str) -> Map<String, serde_json::Value> {
    let mut f = Map::new();
    f.insert("model".into(), json!(model));
    f.insert("stream".into(), json!(false));
    f.insert("temperature".into(), json!(0.7));
    f
}

/// A store whose episodes (config-drift, user `chat:owner-model` at `url`) record the user
/// requests of `conversations`; returns it and, per episode, the exact bytes of each request.
pub fn chat_user_run(url: &str, conversations: &[Conversation]) -> (Run, Vec<Vec<Vec<u8>>>) {
    let dir = tempfile::tempdir().unwrap();
    let (path, package) = planted_package(dir.path());
    let run = dir.path().join("run");
    let user_config = format!(
        "{{ model = \"owner-model\", base_url = \"{url}\", api_key_env = \"SPECGAP_TEST_AUDIT_KEY\", max_retries = 0, retry_base_ms = 1, model_args = {{ temperature = 0.7 }} }}"
    );
    let store = Store::create(&run, &config(3, &[(path, &package)], "chat:owner-model", &user_config)).unwrap();
    let mut ids = Vec::new();
    let mut all_bytes = Vec::new();
    for conversation in conversations {
        let meta = EpisodeMeta {
            user: "chat:owner-model".into(),
            family: package.manifest().task.family,
            scoring_kind: package.planned_scoring_kind(),
        };
        let mut writer = store.begin_episode(&key(&package, "a1", 3, conversation.repeat), &meta).unwrap();
        let mut history = vec![
            json!({"role": "system", "content": "You are the owner. OWNER-SYSTEM-PROMPT"}).to_string(),
            json!({"role": "user", "content": "cue"}).to_string(),
            json!({"role": "assistant", "content": "Please fix the ledger."}).to_string(),
        ];
        let mut recorded = std::collections::HashSet::new();
        let mut bytes = Vec::new();
        for (request, (purpose, item, reply)) in conversation.turns.iter().enumerate() {
            let mut messages = history.clone();
            messages.push(json!({"role": "user", "content": item}).to_string());
            let body = ChatBody::build(&fields("owner-model"), "messages", messages.clone());
            let new_messages: Vec<StoredMessage> = body.messages.iter().filter(|m| recorded.insert(m.id.clone())).cloned().collect();
            writer
                .event(EventKind::UserRequest {
                    request: request as u32,
                    purpose: *purpose,
                    body: body.segments.clone(),
                    new_messages,
                    reply: reply.to_string(),
                    tries: 1,
                })
                .unwrap();
            writer.event(EventKind::UserMessage { kind: *purpose, text: reply.to_string(), usage: None }).unwrap();
            if *purpose == UserMessageKind::Answer {
                // As the engine does: the answered question is a questions row.
                let question = Question { turn: 1, text: item.to_string(), answer: reply.to_string(), matched_targets: Vec::new() };
                writer.record_question(&question).unwrap();
            }
            bytes.push(body.bytes.clone());
            history.push(json!({"role": "user", "content": item}).to_string());
            history.push(json!({"role": "assistant", "content": reply}).to_string());
        }
        all_bytes.push(bytes);
        ids.push(writer.id().to_string());
        writer
            .finish(EpisodeSummary {
                status: Status::Finished,
                end_reason: Some(EndReason::Submitted),
                turns: 1,
                tool_calls: 0,
                wall_ms: 5,
                error: None,
            })
            .unwrap();
    }
    (Run { _dir: dir, run, store, ids }, all_bytes)
}
