//! `specgap review-user RUN`: a review of every owner / customer turn of a run against the
//! simulated user's private profile, with the error taxonomy of [`specgap_report::simulator`]
//! (issue 28; tau2-bench reviews its user simulator the same way).
//!
//! **User turns** of an episode, numbered from 1: its `questions` rows in asking order (the
//! question unit and the reply the agent got), then the feedback messages of its trajectory
//! (`user_message` events of kind `feedback`), in order.
//!
//! Two reviewers:
//!
//! * **Rules** ([`review_with_rules`], reviewer `rules:1`), offline and exact for the `relay`
//!   user, whose every reply is composed from package text (DESIGN §5): the profile is the
//!   package's clarification targets (customer) or `user.toml`'s knowledge sentences as cues
//!   (owner). A profile entry is *delivered* by a reply that contains its answer text
//!   (whitespace-normalized). Per answer turn:
//!   - `wrong-refusal` (hindered): the reply is the relay's "I don't know" while the shared
//!     matching rule links the question to a profile entry;
//!   - `volunteered` (helped): an entry is delivered that the question does not link to;
//!   - `off-profile` (hindered): text is left once every delivered entry and the "I don't
//!     know" sentence are taken out of the reply;
//!   - `contradiction` (hindered): an entry is delivered while another entry delivered in the
//!     episode (this turn or earlier) shares one of its example questions (triggers) but not
//!     its answer — two answers to one question;
//!   - `revealed` (helped), on every turn: the reply contains a requirement's full
//!     description verbatim.
//!
//!   The rules cannot see character or an early stop: `broke-character` and `stopped-early`
//!   are listed as unchecked.
//! * **A model panel** ([`review_with_panel`], reviewer `panel:<hash>`): every seat of a panel
//!   file gets each turn with the profile, the requirements the user must not reveal and the
//!   conversation before it, and returns `{"findings": [{"tag", "severity", "evidence"}]}`; a
//!   tag is kept when a strict majority of the ballots returned name it, with the severity
//!   most of those give (ties: helped, hindered, minor) and the first such seat's evidence.
//!   Every request and reply is kept in the review file (`ballots`).

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{Map, Value, json};
use specgap_protocol::event::{EventKind, UserMessageKind};
use specgap_protocol::package::ClarificationTarget;
use specgap_report::simulator::{EpisodeReview, Finding, REVIEW_SCHEMA, REVIEW_VERSION, Severity, Tag, UserReview, UserTurn};
use specgap_store::{EpisodeRow, Status, Store};
use specgap_task::TaskPackage;
use specgap_task::matching::linked_targets;
use specgap_task::owner::knowledge_cues;

use crate::config::PanelFile;
use crate::error::PanelError;
use crate::seat::SeatClient;

/// The rule reviewer's name.
pub const RULES_REVIEWER: &str = "rules:1";

/// The relay's reply to a question nothing it knows covers (`specgap_engine::relay`).
pub const RELAY_UNKNOWN: &str = specgap_engine::relay::UNKNOWN_ANSWER;

/// What a reviewer knows of one task: the user's profile and what it must never reveal.
#[derive(Debug, Clone)]
pub struct Profile {
    /// Profile entries: clarification targets, or the owner's knowledge sentences as cues.
    pub entries: Vec<ClarificationTarget>,
    /// Full requirement descriptions (owner tasks).
    pub secrets: Vec<String>,
    /// `owner` or `customer`.
    pub role: &'static str,
}

impl Profile {
    /// The profile of `package` (module guide).
    pub fn of(package: &TaskPackage) -> Profile {
        if package.requirements().is_empty() {
            return Profile { entries: package.clarifications().to_vec(), secrets: Vec::new(), role: "customer" };
        }
        Profile {
            entries: package.user().map(knowledge_cues).unwrap_or_default(),
            secrets: package.requirements().iter().map(|r| r.description.clone()).collect(),
            role: "owner",
        }
    }
}

/// One episode's user turns, with the profile entries each answer's question links to.
#[derive(Debug, Clone)]
pub struct EpisodeTurns {
    /// The episode row.
    pub episode: EpisodeRow,
    /// Its turns.
    pub turns: Vec<UserTurn>,
}

fn normalize(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The finished episodes of a run with their user turns, and each task's profile (packages
/// read from `run.toml`'s paths).
///
/// # Errors
/// [`PanelError::Store`] when the store cannot be read; [`PanelError::Package`] naming a
/// package that cannot be loaded.
pub fn user_turns(run_dir: &Path) -> Result<(Vec<EpisodeTurns>, BTreeMap<String, Profile>), PanelError> {
    let store = Store::open_read_only(run_dir).map_err(PanelError::Store)?;
    let mut profiles = BTreeMap::new();
    for task in &store.config().tasks {
        let package = specgap_task::load(Path::new(&task.path))
            .map_err(|source| PanelError::Package { path: task.path.clone().into(), reason: source.to_string() })?;
        profiles.insert(task.name.clone(), Profile::of(&package));
    }
    let mut questions: BTreeMap<String, Vec<specgap_store::QuestionRow>> = BTreeMap::new();
    for q in store.questions().map_err(PanelError::Store)? {
        questions.entry(q.episode.clone()).or_default().push(q);
    }
    let mut out = Vec::new();
    for episode in store.episodes().map_err(PanelError::Store)? {
        if episode.status != Status::Finished {
            continue;
        }
        let mut asked = questions.remove(&episode.id).unwrap_or_default();
        asked.sort_by_key(|q| q.idx);
        let mut turns: Vec<UserTurn> = asked
            .into_iter()
            .map(|q| UserTurn { turn: 0, kind: "answer".into(), prompt: q.question.text, text: q.question.answer })
            .collect();
        if let Ok(trajectory) = specgap_store::read_trajectory(run_dir, &episode.id) {
            for event in trajectory.events {
                if let EventKind::UserMessage { kind: UserMessageKind::Feedback, text, .. } = event.kind {
                    turns.push(UserTurn { turn: 0, kind: "feedback".into(), prompt: String::new(), text });
                }
            }
        }
        for (i, turn) in turns.iter_mut().enumerate() {
            turn.turn = i as u32 + 1;
        }
        out.push(EpisodeTurns { episode, turns });
    }
    Ok((out, profiles))
}

/// The rule review of a run's episodes (module guide).
///
/// # Errors
/// As [`user_turns`].
pub fn review_with_rules(run_dir: &Path) -> Result<UserReview, PanelError> {
    let (episodes, profiles) = user_turns(run_dir)?;
    let reviews = episodes
        .into_iter()
        .map(|e| {
            let findings = profiles.get(&e.episode.task).map_or_else(Vec::new, |p| rule_findings(&e.turns, p));
            EpisodeReview { episode: e.episode.id, task: e.episode.task, turns: e.turns, findings }
        })
        .collect();
    Ok(UserReview {
        schema: REVIEW_SCHEMA.into(),
        version: REVIEW_VERSION,
        reviewer: RULES_REVIEWER.into(),
        unchecked: vec![Tag::BrokeCharacter, Tag::StoppedEarly],
        episodes: reviews,
        ballots: Vec::new(),
    })
}

/// The rule findings of one episode's turns against `profile`.
pub fn rule_findings(turns: &[UserTurn], profile: &Profile) -> Vec<Finding> {
    let unknown = normalize(RELAY_UNKNOWN);
    let mut findings = Vec::new();
    let mut delivered_so_far: Vec<&ClarificationTarget> = Vec::new();
    let finding = |turn: u32, tag: Tag, severity: Severity, evidence: String| Finding { turn, tag, severity, evidence };
    for turn in turns {
        let reply = normalize(&turn.text);
        for secret in &profile.secrets {
            let secret = normalize(secret);
            if !secret.is_empty() && reply.contains(&secret) {
                findings.push(finding(turn.turn, Tag::Revealed, Severity::Helped, clip(&secret)));
            }
        }
        if turn.kind != "answer" {
            continue;
        }
        let linked: Vec<&str> = linked_targets(&turn.prompt, &profile.entries).iter().map(|t| t.id.as_str()).collect();
        if reply == unknown {
            if !linked.is_empty() {
                findings.push(finding(
                    turn.turn,
                    Tag::WrongRefusal,
                    Severity::Hindered,
                    format!("the question links to {}", linked.join(", ")),
                ));
            }
            continue;
        }
        let delivered: Vec<&ClarificationTarget> =
            profile.entries.iter().filter(|t| !t.answer.trim().is_empty() && reply.contains(&normalize(&t.answer))).collect();
        let unasked: Vec<&str> = delivered.iter().map(|t| t.id.as_str()).filter(|id| !linked.contains(id)).collect();
        if !unasked.is_empty() {
            findings.push(finding(turn.turn, Tag::Volunteered, Severity::Helped, format!("not asked about: {}", unasked.join(", "))));
        }
        let mut rest = reply.clone();
        for t in &delivered {
            rest = rest.replace(&normalize(&t.answer), " ");
        }
        rest = rest.replace(&unknown, " ");
        let rest = normalize(&rest);
        if rest.chars().any(char::is_alphanumeric) {
            findings.push(finding(turn.turn, Tag::OffProfile, Severity::Hindered, clip(&rest)));
        }
        for t in &delivered {
            let clash = delivered_so_far
                .iter()
                .chain(delivered.iter())
                .find(|other| other.id != t.id && normalize(&other.answer) != normalize(&t.answer) && shares_trigger(t, other));
            let already = delivered_so_far.iter().any(|d| d.id == t.id);
            if let (Some(other), false) = (clash, already) {
                // Reported once per pair: by the later (or, within one turn, the second) entry.
                let earlier_in_turn = delivered.iter().position(|d| d.id == other.id) < delivered.iter().position(|d| d.id == t.id);
                let earlier_turn = delivered_so_far.iter().any(|d| d.id == other.id);
                if earlier_in_turn || earlier_turn {
                    findings.push(finding(
                        turn.turn,
                        Tag::Contradiction,
                        Severity::Hindered,
                        format!("{} and {} answer the same question differently", other.id, t.id),
                    ));
                }
            }
        }
        for t in delivered {
            if !delivered_so_far.iter().any(|d| d.id == t.id) {
                delivered_so_far.push(t);
            }
        }
    }
    findings
}

fn shares_trigger(a: &ClarificationTarget, b: &ClarificationTarget) -> bool {
    a.triggers.iter().any(|x| b.triggers.iter().any(|y| normalize(x).to_lowercase() == normalize(y).to_lowercase()))
}

fn clip(text: &str) -> String {
    const MAX: usize = 160;
    match text.char_indices().nth(MAX) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

/// The system prompt of a review seat.
pub const REVIEW_SYSTEM: &str = "You review one turn of a simulated user in a benchmark of software agents. The simulated user plays the owner or the customer of a task and must answer only from its private profile: it may give a profile fact only when the agent asks about it, must never reveal the requirements listed as secret or any score or test, must stay in character, must not refuse what its profile answers, and must not end the conversation early. Answer with one JSON object and nothing else: {\"findings\": [{\"tag\": TAG, \"severity\": SEVERITY, \"evidence\": TEXT}]}, where TAG is one of off-profile, volunteered, contradiction, revealed, broke-character, wrong-refusal, stopped-early and SEVERITY is helped (the agent learned more than it asked for or than it may), hindered (it learned less or something false) or minor. An empty list means the turn is correct.";

/// The repair text put before the message after a malformed reply.
pub const REVIEW_REPAIR: &str = "Your previous reply was not the JSON object asked for. Reply with only {\"findings\": [...]}.";

/// The user message of a review seat for `turn` of an episode whose earlier turns are
/// `before`.
pub fn review_message(profile: &Profile, before: &[UserTurn], turn: &UserTurn) -> String {
    let mut text = format!("The simulated user is the {}.\n\nPrivate profile (what it knows):\n", profile.role);
    for e in &profile.entries {
        text.push_str(&format!("- [{}] {}\n", e.id, e.answer.trim()));
    }
    if !profile.secrets.is_empty() {
        text.push_str("\nSecret (must never be revealed):\n");
        for s in &profile.secrets {
            text.push_str(&format!("- {}\n", s.trim()));
        }
    }
    text.push_str("\nConversation before this turn:\n");
    if before.is_empty() {
        text.push_str("(none)\n");
    }
    for t in before {
        push_turn(&mut text, t);
    }
    text.push_str("\nTurn under review:\n");
    push_turn(&mut text, turn);
    text
}

fn push_turn(text: &mut String, t: &UserTurn) {
    if t.kind == "answer" {
        text.push_str(&format!("turn {} — agent asked: {}\nuser answered: {}\n", t.turn, t.prompt.trim(), t.text.trim()));
    } else {
        text.push_str(&format!("turn {} — user feedback: {}\n", t.turn, t.text.trim()));
    }
}

/// One ballot: the findings a seat returned for a turn.
type Ballot = Vec<(Tag, Severity, String)>;

fn parse_ballot(object: &Map<String, Value>) -> Result<(Ballot, Value), String> {
    let list = object.get("findings").and_then(Value::as_array).ok_or("no `findings` list")?;
    let mut ballot = Vec::new();
    for item in list {
        let tag = item.get("tag").and_then(Value::as_str).and_then(Tag::parse).ok_or("a finding without a known `tag`")?;
        let severity =
            item.get("severity").and_then(Value::as_str).and_then(Severity::parse).ok_or("a finding without a known `severity`")?;
        let evidence = item.get("evidence").and_then(Value::as_str).unwrap_or("").to_string();
        ballot.push((tag, severity, evidence));
    }
    Ok((
        ballot.clone(),
        json!({ "findings": ballot.iter().map(|(t, s, e)| json!({"tag": t.as_str(), "severity": s.as_str(), "evidence": e})).collect::<Vec<_>>() }),
    ))
}

/// The panel's findings on one turn from the ballots returned (module guide).
pub fn panel_findings(turn: u32, ballots: &[Ballot]) -> Vec<Finding> {
    let majority = ballots.len() / 2 + 1;
    let mut out = Vec::new();
    if ballots.is_empty() {
        return out;
    }
    for tag in Tag::ALL {
        let naming: Vec<&(Tag, Severity, String)> = ballots.iter().filter_map(|b| b.iter().find(|f| f.0 == tag)).collect();
        if naming.len() < majority {
            continue;
        }
        let severity = [Severity::Helped, Severity::Hindered, Severity::Minor]
            .into_iter()
            .max_by_key(|s| (naming.iter().filter(|f| f.1 == *s).count(), std::cmp::Reverse(*s as u8)))
            .unwrap_or(Severity::Minor);
        out.push(Finding { turn, tag, severity, evidence: naming[0].2.clone() });
    }
    out
}

/// The panel review of a run (module guide): every seat of `panel_file`, in seat order, on
/// every user turn.
///
/// # Errors
/// As [`user_turns`]; [`PanelError::Client`] when a seat's client cannot be built.
pub fn review_with_panel(run_dir: &Path, panel_file: &PanelFile, seed: u64) -> Result<UserReview, PanelError> {
    let (episodes, profiles) = user_turns(run_dir)?;
    let identity = json!({
        "use": "user-review",
        "models": panel_file.models.iter().map(crate::config::PanelModel::identity).collect::<Vec<_>>(),
        "prompt_hash": crate::hex_sha256(format!("{REVIEW_SYSTEM}\n{REVIEW_REPAIR}").as_bytes()),
    });
    let reviewer = format!("panel:{}", &crate::hex_sha256(identity.to_string().as_bytes())[..12]);
    let mut seats = panel_file
        .models
        .iter()
        .enumerate()
        .map(|(i, m)| SeatClient::new(i as u32, m, seed.wrapping_add(i as u64)))
        .collect::<Result<Vec<_>, _>>()?;
    let mut records = Vec::new();
    let mut reviews = Vec::new();
    for e in episodes {
        let Some(profile) = profiles.get(&e.episode.task) else { continue };
        let mut findings = Vec::new();
        for (i, turn) in e.turns.iter().enumerate() {
            let message = review_message(profile, &e.turns[..i], turn);
            let mut ballots = Vec::new();
            for seat in &mut seats {
                let asked = seat.ask(REVIEW_SYSTEM, &message, REVIEW_REPAIR, &parse_ballot);
                records.push(json!({
                    "episode": e.episode.id, "turn": turn.turn, "seat": seat.seat, "model": seat.model,
                    "outcome": asked.outcome.as_str(), "vote": asked.vote, "error": asked.error,
                    "requests": asked.requests, "responses": asked.responses,
                }));
                if let Some(ballot) = asked.parsed {
                    ballots.push(ballot);
                }
            }
            findings.extend(panel_findings(turn.turn, &ballots));
        }
        reviews.push(EpisodeReview { episode: e.episode.id, task: e.episode.task, turns: e.turns, findings });
    }
    Ok(UserReview {
        schema: REVIEW_SCHEMA.into(),
        version: REVIEW_VERSION,
        reviewer,
        unchecked: Vec::new(),
        episodes: reviews,
        ballots: records,
    })
}
