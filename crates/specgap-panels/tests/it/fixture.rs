//! Run stores over the bundled delivery case `examples/retail-replenishment`, written with the
//! store's writer API (episodes, their questions and submissions), and panel files pointing at
//! a mock server.

use std::path::{Path, PathBuf};

use specgap_protocol::event::EventKind;
use specgap_protocol::package::Family;
use specgap_protocol::result::{EvalResult, Scored, ScoringKind};
use specgap_protocol::run::{EndReason, EpisodeKey, RunConfig};
use specgap_store::{EpisodeMeta, EpisodeSummary, Question, Status, Store, SubmissionRecord};
use specgap_task::TaskPackage;

/// The bundled delivery case.
pub fn retail_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/tasks/retail-replenishment").canonicalize().unwrap()
}

pub fn retail() -> TaskPackage {
    specgap_task::load(retail_path()).unwrap()
}

/// A run configuration of the retail case under `interact`, seed `seed`.
pub fn config(seed: u64, package: &TaskPackage, path: &Path) -> RunConfig {
    let text = format!(
        r#"
specgap_version = "0.2.0"
protocol_version = {protocol}
seed = {seed}
repeats = 3
retries = 0
sandbox = true
conditions = ["interact"]
starts = ["clean"]

[[tasks]]
name = "{name}"
hash = "{hash}"
path = "{path}"

[[agents]]
spec = "replay:script.jsonl"
hash = "ag1"
config = {{}}

[[users]]
spec = "relay"
hash = "us1"
config = {{}}
"#,
        protocol = specgap_protocol::run::PROTOCOL_VERSION,
        name = package.name(),
        hash = package.hash(),
        path = path.display()
    );
    toml::from_str(&text).unwrap()
}

/// One finished episode: its questions `(turn, text)` and, optionally, one submission with
/// this workspace diff and delivery result.
pub struct EpisodeSpec {
    pub repeat: u32,
    pub questions: Vec<(u32, &'static str)>,
    pub submission: Option<(Vec<u8>, &'static str)>,
}

impl EpisodeSpec {
    pub fn asking(repeat: u32, questions: &[(u32, &'static str)]) -> Self {
        EpisodeSpec { repeat, questions: questions.to_vec(), submission: Some((Vec::new(), VALID_RESULT)) }
    }
}

/// A valid delivery result scoring 0.5 of the retail reference.
pub const VALID_RESULT: &str = r#"{"version":1,"delivery":{"valid":true,"objective":0.49738798}}"#;

pub fn key(package: &TaskPackage, seed: u64, repeat: u32) -> EpisodeKey {
    EpisodeKey {
        task: package.name().to_string(),
        task_hash: package.hash().to_string(),
        agent: "replay:script.jsonl".into(),
        agent_hash: "ag1".into(),
        user_hash: "us1".into(),
        condition: "interact".into(),
        start: "clean".into(),
        repeat,
        seed,
    }
}

/// A store at `dir` holding `episodes`; returns it and the episode ids in order.
pub fn run_store(dir: &Path, seed: u64, episodes: &[EpisodeSpec]) -> (Store, Vec<String>) {
    let package = retail();
    let store = Store::create(dir, &config(seed, &package, &retail_path())).unwrap();
    let mut ids = Vec::new();
    for spec in episodes {
        let meta = EpisodeMeta { user: "relay".into(), family: Family::Optimization, scoring_kind: ScoringKind::Delivery };
        let mut writer = store.begin_episode(&key(&package, seed, spec.repeat), &meta).unwrap();
        writer.event(EventKind::Overlay { name: "none".into() }).unwrap();
        for (turn, text) in &spec.questions {
            writer
                .record_question(&Question { turn: *turn, text: text.to_string(), answer: "ok".into(), matched_targets: vec![] })
                .unwrap();
        }
        if let Some((diff, result)) = &spec.submission {
            let result: EvalResult = serde_json::from_str(result).unwrap();
            let scored = result.score(&package.scoring_context()).unwrap();
            let record = SubmissionRecord {
                automatic: false,
                agent_declared: true,
                result: Some(result),
                scored: Some(Scored { kind: ScoringKind::Delivery, ..scored }),
                failing_requirement: None,
                error: None,
                diff: diff.clone(),
            };
            writer.write_submission(1, &record).unwrap();
        }
        ids.push(writer.id().to_string());
        writer
            .finish(EpisodeSummary {
                status: Status::Finished,
                end_reason: Some(EndReason::Submitted),
                turns: 3,
                tool_calls: 3,
                wall_ms: 10,
                error: None,
            })
            .unwrap();
    }
    (store, ids)
}

/// A panel file at `dir/panel.toml` with one `[[model]]` per name, all at `url`, without
/// retries of failed requests; `extra` is appended (e.g. `[prompts]`).
pub fn panel_file(dir: &Path, url: &str, models: &[&str], extra: &str) -> PathBuf {
    let mut text = String::new();
    for model in models {
        text.push_str(&format!(
            "[[model]]\nmodel = \"{model}\"\nbase_url = \"{url}\"\napi_key_env = \"SPECGAP_TEST_PANEL_KEY\"\nmax_retries = 0\nretry_base_ms = 1\nprice = {{ input_per_mtok = 1.0, output_per_mtok = 10.0 }}\n\n"
        ));
    }
    text.push_str(extra);
    let path = dir.join("panel.toml");
    std::fs::write(&path, text).unwrap();
    path
}
