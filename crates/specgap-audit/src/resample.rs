//! The simulated user's stability (`specgap resample RUN --checkpoints N --samples K --seed S`;
//! seed 000 §5.6, App. G: 30 recorded owner turns, each regenerated 5 times from the unchanged
//! request, every output checked by hand).
//!
//! A *checkpoint* is one recorded request of a model-played user: a `user_request` event of a
//! trajectory ([`specgap_protocol::event::EventKind::UserRequest`]), whose body is rebuilt byte
//! for byte from its segments and the messages this and earlier requests stored
//! ([`specgap_protocol::request::rebuild`], which checks every message against its content
//! address). `resample` lists the checkpoints of the run's finished episodes (optionally of one
//! purpose, `answer` or `feedback`), sorted by (episode, request), shuffles them with a ChaCha8
//! stream seeded with `S` and keeps the first `N`. Each is sent `K` more times to the user's
//! own model configuration (the user component of `run.toml`: endpoint, model, arguments;
//! the API key from its variable), as the exact stored bytes, through the chat client (its
//! retries and usage accounting); every reply goes to `resamples` (batch, checkpoint, k, reply
//! or error, usage under the role `user`) as it arrives, so an interrupted call loses nothing
//! and a second call with the same arguments sends only what is missing. Resample usage is
//! kept in `resamples`, not added to the episode's `usage` rows, which stay the episode's own
//! cost (docs/decisions.md "Audits").
//!
//! Then a sample of unit `resample` with rubric `seed000-resample` is drawn over the batch
//! (every resample, no stratification) and its sheet written, whose import gives App. G's
//! summaries ([`crate::agreement`], "Resample summaries").

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;

use rand::SeedableRng as _;
use rand::seq::SliceRandom as _;
use rand_chacha::ChaCha8Rng;
use serde_json::Value;
use sha2::{Digest as _, Sha256};
use specgap_agents::chat::{ChatClient, ChatConfig};
use specgap_engine::session::SessionLink;
use specgap_protocol::event::{EventKind, Usage, UserMessageKind};
use specgap_protocol::request::{RebuildError, rebuild};
use specgap_store::{ResampleRecord, Role, Status, Store};

use crate::error::AuditError;
use crate::rubric::Rubric;
use crate::sample::{Manifest, draw, write};
use crate::unit::UnitKind;

/// One recorded user request, rebuilt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordedRequest {
    /// `user_request.request`.
    pub request: u32,
    /// `answer` or `feedback`.
    pub purpose: &'static str,
    /// The exact bytes sent, or why they cannot be rebuilt.
    pub bytes: Result<Vec<u8>, RebuildError>,
    /// The reply recorded.
    pub reply: String,
}

fn purpose_name(kind: UserMessageKind) -> &'static str {
    match kind {
        UserMessageKind::Answer => "answer",
        UserMessageKind::Feedback => "feedback",
        UserMessageKind::Reminder => "reminder",
        UserMessageKind::Continuation => "continuation",
        UserMessageKind::Stage => "stage",
    }
}

/// Every `user_request` of a trajectory, rebuilt in order (each from the messages stored by it
/// and the requests before it).
pub fn recorded_requests(events: &[&EventKind]) -> Vec<RecordedRequest> {
    let mut stored: std::collections::HashMap<String, String> = std::collections::HashMap::new();
    let mut requests = Vec::new();
    for event in events {
        if let EventKind::UserRequest { request, purpose, body, new_messages, reply, .. } = event {
            for m in new_messages {
                stored.entry(m.id.clone()).or_insert_with(|| m.json.clone());
            }
            let bytes = rebuild(body, |id| stored.get(id).map(String::as_str));
            requests.push(RecordedRequest { request: *request, purpose: purpose_name(*purpose), bytes, reply: reply.clone() });
        }
    }
    requests
}

/// The `(role, text content)` of each message of a chat request body (messages whose content
/// is not a string are shown as their JSON).
pub fn messages_of(bytes: &[u8]) -> Vec<(String, String)> {
    let Ok(body) = serde_json::from_slice::<Value>(bytes) else { return Vec::new() };
    body.get("messages")
        .and_then(Value::as_array)
        .map(|messages| {
            messages
                .iter()
                .map(|m| {
                    let role = m.get("role").and_then(Value::as_str).unwrap_or("").to_string();
                    let content = m.get("content").map(|c| c.as_str().map_or_else(|| c.to_string(), str::to_string)).unwrap_or_default();
                    (role, content)
                })
                .collect()
        })
        .unwrap_or_default()
}

/// What `resample` is asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResampleOptions {
    /// Checkpoints to pick (N).
    pub checkpoints: usize,
    /// Resamples per checkpoint (K).
    pub samples: u32,
    /// The seed of the pick (and of the sample drawn after).
    pub seed: u64,
    /// Only checkpoints of this purpose (`answer` or `feedback`).
    pub purpose: Option<String>,
    /// Only checkpoints whose user turn carries a finding of the run's user reviews
    /// (`specgap review-user`, issue 28): a tag name (`volunteered`, `contradiction`, ...) or
    /// `any` (any tag).
    pub finding: Option<String>,
    /// Where the label sheet and pages go.
    pub out: PathBuf,
}

/// What `resample` did.
#[derive(Debug, Clone, PartialEq)]
pub struct ResampleSummary {
    /// The batch (`resamples.batch`).
    pub batch: String,
    /// Checkpoints picked.
    pub checkpoints: usize,
    /// Checkpoints the run has (of the purpose and the finding asked).
    pub available: usize,
    /// Requests sent now.
    pub sent: usize,
    /// Of those, failed.
    pub failed: usize,
    /// Resamples already stored by an earlier call.
    pub already: usize,
    /// Usage of the requests sent now (the user model's).
    pub usage: Usage,
    /// The sample drawn over the batch.
    pub sample: String,
    /// Its label sheet.
    pub sheet: PathBuf,
}

/// A picked checkpoint.
struct Checkpoint {
    episode: String,
    user_hash: String,
    request: RecordedRequest,
    /// The user turn the request's reply became, numbered as `review-user` numbers them;
    /// `None` when no turn holds the reply.
    turn: Option<u32>,
}

/// Runs `resample` over the run in `store` (module guide).
///
/// # Errors
/// [`AuditError::Request`] for no checkpoint (of the purpose and finding asked), a finding
/// asked of a run without a user review, or a user whose configuration is not a chat model's; [`AuditError::Rebuild`] for a stored request that cannot be rebuilt;
/// [`AuditError::NoReplies`] when every request of the batch failed (no sheet is written);
/// store and I/O errors. A request that fails is recorded with its error, not returned.
pub fn resample_run(store: &Store, options: &ResampleOptions) -> Result<ResampleSummary, AuditError> {
    if options.checkpoints == 0 || options.samples == 0 {
        return Err(AuditError::Request("--checkpoints and --samples must be at least 1".into()));
    }
    let mut all = checkpoints(store, options.purpose.as_deref())?;
    if let Some(finding) = options.finding.as_deref() {
        all = with_finding(store, all, finding)?;
    }
    let available = all.len();
    if all.is_empty() {
        return Err(AuditError::Request(format!(
            "run {} records no request of a model-played user{}; run with --user chat:<model>",
            store.dir().display(),
            options.purpose.as_deref().map(|p| format!(" for {p}")).unwrap_or_default()
        )));
    }
    all.shuffle(&mut ChaCha8Rng::seed_from_u64(options.seed));
    all.truncate(options.checkpoints);
    all.sort_by(|a, b| (&a.episode, a.request.request).cmp(&(&b.episode, b.request.request)));
    let batch = batch_id(options, &all);
    let stored = store.resamples().map_err(AuditError::store(store.dir()))?;
    let mut summary = ResampleSummary {
        batch: batch.clone(),
        checkpoints: all.len(),
        available,
        sent: 0,
        failed: 0,
        already: 0,
        usage: Usage::default(),
        sample: String::new(),
        sheet: PathBuf::new(),
    };
    for checkpoint in &all {
        let bytes = checkpoint.request.bytes.clone().map_err(|source| AuditError::Rebuild {
            episode: checkpoint.episode.clone(),
            request: checkpoint.request.request,
            source,
        })?;
        let mut client = client_for(store, &checkpoint.user_hash, options.seed, &checkpoint.episode, checkpoint.request.request)?;
        for k in 1..=options.samples {
            let done = stored.iter().any(|r| {
                r.episode == checkpoint.episode
                    && r.batch == batch
                    && r.request == checkpoint.request.request
                    && r.k == k
                    && r.reply.is_some()
            });
            if done {
                summary.already += 1;
                continue;
            }
            let (reply, error, usage) = match client.complete_body(&bytes) {
                Ok(completion) => (Some(completion.text.trim().to_string()), None, completion.usage),
                Err(e) => (None, Some(specgap_protocol::text::error_chain(&e).to_lowercase()), Usage::default()),
            };
            summary.sent += 1;
            summary.failed += usize::from(reply.is_none());
            summary.usage.add(&usage);
            store
                .record_resample(&ResampleRecord {
                    episode: checkpoint.episode.clone(),
                    batch: batch.clone(),
                    request: checkpoint.request.request,
                    k,
                    purpose: checkpoint.request.purpose.to_string(),
                    reply,
                    error,
                    usage,
                })
                .map_err(AuditError::store(store.dir()))?;
        }
    }
    refuse_a_batch_without_replies(store, &batch)?;
    let manifest = Manifest {
        unit: UnitKind::Resample,
        rubric: Rubric::builtin("seed000-resample")?,
        runs: vec![store.dir().to_path_buf()],
        by: Vec::new(),
        n: None,
        seed: options.seed,
        batch: Some(batch),
    };
    let stores = [store.clone()];
    let sample = draw(&stores, manifest)?;
    summary.sheet = write(&stores, &sample, &options.out)?;
    summary.sample = sample.id;
    Ok(summary)
}

/// A batch none of whose requests got a reply has nothing a rater could label: no sheet is
/// written for it.
///
/// # Errors
/// [`AuditError::NoReplies`] naming how many requests failed and the first error.
fn refuse_a_batch_without_replies(store: &Store, batch: &str) -> Result<(), AuditError> {
    let rows: Vec<ResampleRecord> =
        store.resamples().map_err(AuditError::store(store.dir()))?.into_iter().filter(|r| r.batch == batch).collect();
    if rows.iter().any(|r| r.reply.is_some()) {
        return Ok(());
    }
    let first_error = rows.iter().find_map(|r| r.error.clone()).unwrap_or_else(|| "no error recorded".into());
    Err(AuditError::NoReplies { batch: batch.to_string(), failed: rows.len(), first_error })
}

/// The checkpoints whose user turn carries `finding` (a tag, or `any`) in the run's user
/// reviews (`reviews/user-*.json`, every reviewer's findings together).
///
/// # Errors
/// [`AuditError::Request`] when the run has no user review, or no checkpoint has the finding.
fn with_finding(store: &Store, all: Vec<Checkpoint>, finding: &str) -> Result<Vec<Checkpoint>, AuditError> {
    let Some(tags) = crate::unit::review_tags(store.dir()) else {
        return Err(AuditError::Request(format!(
            "--finding {finding}: run {} has no user review; run `specgap review-user {}` first",
            store.dir().display(),
            store.dir().display()
        )));
    };
    let with: Vec<Checkpoint> = all
        .into_iter()
        .filter(|c| {
            let turn_tags = c.turn.and_then(|turn| tags.get(&(c.episode.clone(), turn)));
            turn_tags.is_some_and(|t| finding == "any" || t.contains(finding))
        })
        .collect();
    if with.is_empty() {
        return Err(AuditError::Request(format!(
            "--finding {finding}: no recorded request of a model-played user in run {} is on a user turn its reviews tag {}",
            store.dir().display(),
            if finding == "any" { "at all".to_string() } else { format!("`{finding}`") }
        )));
    }
    Ok(with)
}

/// The user turn each recorded request's reply became, by request number, numbered as
/// `review-user` numbers turns (docs/decisions.md "review-user"): the episode's answers
/// (`answers`, its questions rows' answers in asking order) are turns 1..=Q, then its
/// feedback messages in order. An answer request is the first question from the last one
/// placed on whose answer is its reply (a question answered without a request is skipped
/// over); a feedback request is the feedback message that follows it.
fn request_turns(events: &[&EventKind], answers: &[String]) -> BTreeMap<u32, u32> {
    let mut turns = BTreeMap::new();
    let (mut next_answer, mut feedback_seen) = (0usize, 0u32);
    for event in events {
        match event {
            EventKind::UserRequest { request, purpose: UserMessageKind::Answer, reply, .. } => {
                if let Some(offset) = answers[next_answer.min(answers.len())..].iter().position(|a| a == reply) {
                    let index = next_answer + offset;
                    turns.insert(*request, index as u32 + 1);
                    next_answer = index + 1;
                }
            }
            EventKind::UserRequest { request, purpose: UserMessageKind::Feedback, .. } => {
                turns.insert(*request, answers.len() as u32 + feedback_seen + 1);
            }
            EventKind::UserMessage { kind: UserMessageKind::Feedback, .. } => feedback_seen += 1,
            _ => {}
        }
    }
    turns
}

/// Every checkpoint of the run's finished episodes, by (episode, request).
fn checkpoints(store: &Store, purpose: Option<&str>) -> Result<Vec<Checkpoint>, AuditError> {
    let mut answers: BTreeMap<String, Vec<(u32, String)>> = BTreeMap::new();
    for q in store.questions().map_err(AuditError::store(store.dir()))? {
        answers.entry(q.episode.clone()).or_default().push((q.idx, q.question.answer));
    }
    let mut found = Vec::new();
    for episode in store.episodes().map_err(AuditError::store(store.dir()))? {
        if episode.status != Status::Finished || !episode.user.starts_with("chat:") {
            continue;
        }
        let trajectory = specgap_store::read_trajectory(store.dir(), &episode.id).map_err(AuditError::store(store.dir()))?;
        let events: Vec<&EventKind> = trajectory.events.iter().map(|e| &e.kind).collect();
        let mut asked = answers.remove(&episode.id).unwrap_or_default();
        asked.sort_by_key(|(idx, _)| *idx);
        let asked: Vec<String> = asked.into_iter().map(|(_, answer)| answer).collect();
        let turns = request_turns(&events, &asked);
        for request in recorded_requests(&events) {
            if purpose.is_some_and(|p| p != request.purpose) {
                continue;
            }
            let turn = turns.get(&request.request).copied();
            found.push(Checkpoint { episode: episode.id.clone(), user_hash: episode.user_hash.clone(), request, turn });
        }
    }
    found.sort_by(|a, b| (&a.episode, a.request.request).cmp(&(&b.episode, b.request.request)));
    Ok(found)
}

/// The batch id: `resample:` and 12 hex digits of the SHA-256 of the options and checkpoints.
fn batch_id(options: &ResampleOptions, picked: &[Checkpoint]) -> String {
    let mut hasher = Sha256::new();
    let _ = write!(HashWriter(&mut hasher), "{}|{}|{}|{:?}", options.seed, options.checkpoints, options.samples, options.purpose);
    // Only when asked, so that the batches of runs resampled before the option keep their ids.
    if let Some(finding) = &options.finding {
        let _ = write!(HashWriter(&mut hasher), "|finding={finding}");
    }
    for c in picked {
        let _ = write!(HashWriter(&mut hasher), "|{}#{}", c.episode, c.request.request);
    }
    let digest = hasher.finalize();
    let mut id = String::from("resample:");
    for byte in &digest[..6] {
        let _ = write!(id, "{byte:02x}");
    }
    id
}

struct HashWriter<'a>(&'a mut Sha256);

impl std::fmt::Write for HashWriter<'_> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.0.update(s.as_bytes());
        Ok(())
    }
}

/// A chat client of the user component whose hash is `user_hash`, detached from any episode.
fn client_for(store: &Store, user_hash: &str, seed: u64, episode: &str, request: u32) -> Result<ChatClient, AuditError> {
    let user = store
        .config()
        .users
        .iter()
        .find(|u| u.hash == user_hash)
        .ok_or_else(|| AuditError::Request(format!("episode {episode}: its user is not in run.toml")))?;
    let config = ChatConfig::from_table(&user.config)
        .map_err(|e| AuditError::Request(format!("episode {episode}: cannot read the user's chat configuration: {e}")))?;
    let mut hasher = Sha256::new();
    hasher.update(seed.to_le_bytes());
    hasher.update(episode.as_bytes());
    hasher.update(request.to_le_bytes());
    let digest = hasher.finalize();
    let mut bytes = [0u8; 8];
    bytes.copy_from_slice(&digest[..8]);
    let mut client = ChatClient::new(&config, u64::from_le_bytes(bytes))
        .map_err(|e| AuditError::Request(format!("cannot make the user's chat client: {e}")))?;
    client.attach(&SessionLink::detached(Role::User));
    Ok(client)
}
