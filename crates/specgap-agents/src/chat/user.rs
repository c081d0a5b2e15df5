//! [`ChatUser`]: the owner or the customer played by a model (`--user chat:<model>`).
//!
//! * **Owner** (owner conditions: partial, full, literal, plan; every rule of seed 000 App. F.4,
//!   in our own words): plays the persona of `user.toml`, whose knowledge is its own picture of
//!   the project (`understanding`; under `full` also the complete specification), what it has
//!   already told the engineer, and the latest item. It writes in the first person, at most
//!   about 150 words; after an observation it says what it saw and what that costs, then in one
//!   or two sentences what must be different next time, never a list of conditions; it takes an
//!   engineer's message as a claim, not an observation, and answers from what it knows or says
//!   it does not know and asks the engineer to find out from the project; it raises only
//!   problems it has observed, names no cause or fix its picture lacks, invents nothing, never
//!   asks for tests, checks or records, never mentions benchmarks, rubrics, scores, hidden
//!   tests, evaluators or a simulation, and replies with the message alone. It never learns
//!   requirement ids or descriptions (outside `full`, whose specification states them in
//!   prose) nor any evaluator output.
//! * **Customer** (delivery conditions; intent of seed 002 A.9.2): answers from its request and
//!   `information.md`, does not volunteer formulas or weights (a business-level explanation is
//!   fine), and gives a sensible business default when its knowledge does not cover the
//!   question. It never sees requirement ids, evaluator files or solutions.
//!
//! **History.** The user keeps its own conversation, which starts with the opening message
//! *verbatim, as the agent received it* — instruction.md, or instruction.full.md under `full` —
//! as the user's own first message (an assistant turn after a one-line cue, so every chat
//! template sees a user turn first); then each latest item (an observation, or an engineer's
//! message) as a user message and its reply as an assistant message.
//!
//! **Prompt files.** Every text sent to the user model is one of [`USER_PROMPT_FILES`]
//! (`src/chat/prompts/*.md`), which a run may replace (`specgap run --prompts DIR`,
//! [`specgap_engine::prompt_files`]); the placeholders are `{persona}`, `{understanding}`,
//! `{specification_note}`, `{editable_surface}`, `{style_note}` (owner.md), `{information}`
//! (customer.md), `{scene}`, `{incident}`, `{detail_note}` (owner_observation.md; also
//! `{request_note}`, which the built-in file leaves out: [`UserKnowledge::observation_message`])
//! and `{question}` (owner_question.md, customer_question.md).
//!
//! **Requests.** Each request is sent as the exact bytes [`ChatClient::prepare`] writes, and
//! returned with the reply for the trajectory (a `user_request` event,
//! [`specgap_protocol::request`]): the body's segments, with the messages no earlier request
//! of the attempt sent, so the system prompt and the history are stored once each and every
//! request can be rebuilt and sent again byte for byte (`specgap resample`, seed 000 App. G).
//! An empty reply asked again re-sends the same bytes.
//!
//! An empty reply is asked again up to [`EMPTY_REPLY_RETRIES`] times, then the episode is an
//! infrastructure error. Its requests are held to the episode's deadline and their usage is
//! recorded as each completes, through the [`SessionLink`] the engine attaches
//! ([`crate::chat::client`]); a request abandoned at the deadline is [`UserError::abandoned`].

use specgap_engine::condition::{Condition, OpeningKind};
use specgap_engine::prompt_files::{PromptFile, Replacements};
use specgap_engine::prompts::opening_message;
use specgap_engine::runner::{PlannedEpisode, UserFactory};
use specgap_engine::session::{FeedbackContext, Question, Reply, SessionLink, User, UserError, UserModelRequest};
use specgap_protocol::event::Usage;
use specgap_protocol::request::ChatBody;
use specgap_protocol::run::ComponentRef;
use specgap_task::TaskPackage;

use crate::chat::ChatConfig;
use crate::chat::client::{ChatClient, ClientError};
use crate::chat::wire::WireMessage;

/// Version of the owner / customer prompt texts of this module ([`USER_PROMPT_FILES`] and
/// their fill-ins); bump on any change. It is stored in the user's table in `run.toml`
/// (`user_prompt_version`), which the episode key hashes, so edited prompts key new episodes.
/// 2: every rule of seed 000 App. F.4 in the owner prompt; the history starts with the opening
/// message verbatim; prompts are replaceable files. 3: the owner's latest item after a failed
/// submission no longer carries the observation's format-2 `request` (App. F.4: the owner writes
/// what it needs itself).
pub const USER_PROMPT_VERSION: &str = "3";

/// Extra tries after an empty user reply.
pub const EMPTY_REPLY_RETRIES: u32 = 2;

/// The simulated user's prompt files (module guide), which `--prompts DIR` may replace.
pub const USER_PROMPT_FILES: &[PromptFile] = &[
    PromptFile { name: "owner.md", builtin: include_str!("prompts/owner.md"), purpose: "system prompt of the chat owner (seed 000 F.4)" },
    PromptFile {
        name: "owner_opening.md",
        builtin: include_str!("prompts/owner_opening.md"),
        purpose: "the cue before the owner's first message (the opening instruction) in its history",
    },
    PromptFile {
        name: "owner_observation.md",
        builtin: include_str!("prompts/owner_observation.md"),
        purpose: "the chat owner's latest item after a failed submission: the observation",
    },
    PromptFile {
        name: "owner_question.md",
        builtin: include_str!("prompts/owner_question.md"),
        purpose: "the chat owner's latest item when the engineer asks: the message",
    },
    PromptFile {
        name: "customer.md",
        builtin: include_str!("prompts/customer.md"),
        purpose: "system prompt of the chat customer (seed 002 A.9.2)",
    },
    PromptFile {
        name: "customer_opening.md",
        builtin: include_str!("prompts/customer_opening.md"),
        purpose: "the cue before the customer's first message (the request) in its history",
    },
    PromptFile {
        name: "customer_question.md",
        builtin: include_str!("prompts/customer_question.md"),
        purpose: "the chat customer's latest item: the engineer's question",
    },
];

/// Whom the model plays.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UserRole {
    /// The project owner (seed 000).
    Owner,
    /// The business customer (seed 002).
    Customer,
}

/// Everything the simulated user knows and the prompts it is asked with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserKnowledge {
    /// Owner or customer.
    pub role: UserRole,
    /// The system prompt.
    pub system_prompt: String,
    /// The user's first message: the opening message verbatim, as the agent received it.
    pub first_message: String,
    /// The cue before the first message in the history.
    pub opening_cue: String,
    /// The latest-item template of an observation (owner) — empty for the customer.
    pub observation_prompt: String,
    /// The latest-item template of an engineer's message.
    pub question_prompt: String,
}

/// Fills `{name}` placeholders of `template` (unknown ones stay as written).
fn fill(template: &str, pairs: &[(&str, &str)]) -> String {
    pairs.iter().fold(template.to_string(), |text, (key, value)| text.replace(&format!("{{{key}}}"), value))
}

fn prompt<'r>(replaced: &'r Replacements, name: &str) -> &'r str {
    USER_PROMPT_FILES.iter().find(|f| f.name == name).map_or("", |f| replaced.text(f))
}

impl UserKnowledge {
    /// What the user of `package` knows under `condition` with specgap's own prompts; the
    /// opening message is rendered for run seed 0, repeat 0 (which only `oracle:R` depends on).
    pub fn for_episode(package: &TaskPackage, condition: &Condition) -> Self {
        let opening = opening_message(package, condition, 0, 0).unwrap_or_else(|| package.instruction().trim_end().to_string());
        Self::for_episode_with(package, condition, &opening, &Replacements::none())
    }

    /// What the user of `package` knows under `condition` (module guide), whose opening
    /// message the agent received as `opening`, with the prompt files of `replaced`.
    pub fn for_episode_with(package: &TaskPackage, condition: &Condition, opening: &str, replaced: &Replacements) -> Self {
        if condition.is_delivery() {
            return Self::customer(package, opening, replaced);
        }
        let profile = package.user();
        let persona = profile.map_or("The owner of this project.", |p| p.persona.trim());
        let understanding = profile.map_or("Only what your first message to the engineer says.", |p| p.understanding.trim());
        let editable = profile.map_or("whatever the work needs.", |p| p.editable_surface.trim());
        let style_note = profile.and_then(|p| p.style.as_deref()).map(|s| format!("\n\nHow you write: {}", s.trim())).unwrap_or_default();
        let specification_note = match (condition.opening(), package.instruction_full()) {
            (OpeningKind::FullInstruction, Some(_)) => {
                "\n\nYou also hold the complete specification of the work: it is the first message you sent the engineer."
            }
            _ => "",
        };
        let system_prompt = fill(
            prompt(replaced, "owner.md"),
            &[
                ("persona", persona),
                ("understanding", understanding),
                ("specification_note", specification_note),
                ("editable_surface", editable),
                ("style_note", &style_note),
            ],
        );
        UserKnowledge {
            role: UserRole::Owner,
            system_prompt: system_prompt.trim_end().to_string(),
            first_message: opening.to_string(),
            opening_cue: prompt(replaced, "owner_opening.md").trim_end().to_string(),
            observation_prompt: prompt(replaced, "owner_observation.md").to_string(),
            question_prompt: prompt(replaced, "owner_question.md").to_string(),
        }
    }

    fn customer(package: &TaskPackage, opening: &str, replaced: &Replacements) -> Self {
        let information = package.information().map_or("Nothing beyond your request.", str::trim);
        let system_prompt = fill(prompt(replaced, "customer.md"), &[("information", information)]);
        UserKnowledge {
            role: UserRole::Customer,
            system_prompt: system_prompt.trim_end().to_string(),
            first_message: opening.to_string(),
            opening_cue: prompt(replaced, "customer_opening.md").trim_end().to_string(),
            observation_prompt: String::new(),
            question_prompt: prompt(replaced, "customer_question.md").to_string(),
        }
    }

    /// The latest-item message of an engineer's question.
    pub fn question_message(&self, question: &str) -> String {
        fill(&self.question_prompt, &[("question", question.trim())]).trim_end().to_string()
    }

    /// The latest-item message of an observation: the scene, the incident and, once escalated,
    /// the filled detail — what seed 000 App. F.4 gives the owner (the observation's two
    /// contexts), so the owner writes what it needs different in its own words. The
    /// observation's format-2 `request` (the author's ready sentence, which the `relay` owner
    /// relays) fills `{request_note}` only, which the built-in `owner_observation.md` does not
    /// use; a replaced prompt that does departs from App. F.4 by its own choice.
    pub fn observation_message(&self, context: &FeedbackContext) -> String {
        // protocol: observations reach only the owner of seed 000's conditions (App. F.4).
        let observation = &context.observation;
        let detail_note =
            if context.escalated { format!("\nWhat you measured this time: {}", context.detail.trim()) } else { String::new() };
        let request_note = observation
            .request
            .as_deref()
            .map(|r| format!("\nWhat you need instead, as you would put it: {}", r.trim()))
            .unwrap_or_default();
        fill(
            &self.observation_prompt,
            &[
                ("scene", observation.scene.trim()),
                ("incident", observation.incident.trim()),
                ("detail_note", &detail_note),
                ("request_note", &request_note),
            ],
        )
        .trim_end()
        .to_string()
    }
}

/// The owner or customer played by a model.
#[derive(Debug)]
pub struct ChatUser {
    client: ChatClient,
    knowledge: UserKnowledge,
    history: Vec<WireMessage>,
    /// Ids of the messages already stored in the trajectory by an earlier request.
    recorded_messages: std::collections::HashSet<String>,
}

impl ChatUser {
    /// A user with `knowledge` over the endpoint of `config`; `seed` seeds the retry jitter.
    ///
    /// # Errors
    /// [`UserError`] when the HTTP client cannot be built.
    pub fn new(config: &ChatConfig, knowledge: UserKnowledge, seed: u64) -> Result<Self, UserError> {
        let mut config = config.clone();
        // The user's text is read whole; tools are never offered to it.
        config.emulate_tools = false;
        let client = ChatClient::new(&config, seed).map_err(|e| UserError::new(format!("cannot start the chat user: {e}"), true))?;
        // The history starts with the user's own first message, verbatim (module guide).
        let history =
            vec![WireMessage::text("user", knowledge.opening_cue.clone()), WireMessage::text("assistant", knowledge.first_message.clone())];
        Ok(ChatUser { client, knowledge, history, recorded_messages: Default::default() })
    }

    /// What the user knows.
    pub fn knowledge(&self) -> &UserKnowledge {
        &self.knowledge
    }

    /// Sends `prompt` after the history and returns a non-empty reply, keeping both in the
    /// history.
    fn ask_model(&mut self, prompt: String) -> Result<Reply, UserError> {
        let mut messages = vec![WireMessage::text("system", self.knowledge.system_prompt.clone())];
        messages.extend(self.history.iter().cloned());
        messages.push(WireMessage::text("user", prompt.clone()));
        let body = self.client.prepare(&messages, &[]);
        let mut usage = Usage::default();
        for tries in 1..=EMPTY_REPLY_RETRIES + 1 {
            match self.client.complete_body(&body.bytes) {
                Ok(completion) => {
                    usage.add(&completion.usage);
                    let text = completion.text.trim().to_string();
                    if !text.is_empty() {
                        self.history.push(WireMessage::text("user", prompt));
                        self.history.push(WireMessage::text("assistant", text.clone()));
                        let request = self.recorded(body, tries);
                        return Ok(Reply { text, usage: Some(usage), request: Some(request) });
                    }
                }
                Err(ClientError::Abandoned { .. }) => return Err(UserError::abandoned()),
                Err(e) => {
                    let deterministic = matches!(e, ClientError::Rejected { .. });
                    return Err(UserError::with_source("the user model service failed", deterministic, e));
                }
            }
        }
        Err(UserError::new(format!("the user model gave an empty reply {} times", EMPTY_REPLY_RETRIES + 1), false))
    }
}

impl ChatUser {
    /// The request of `body` for the trajectory: its messages not recorded before in this
    /// attempt are stored with it (module guide, "Requests").
    fn recorded(&mut self, body: ChatBody, tries: u32) -> UserModelRequest {
        let mut new_messages = Vec::new();
        for message in body.messages {
            if self.recorded_messages.insert(message.id.clone()) {
                new_messages.push(message);
            }
        }
        UserModelRequest { body: body.segments, new_messages, tries }
    }
}

impl User for ChatUser {
    fn attach(&mut self, link: &SessionLink) {
        self.client.attach(link);
    }

    fn answer(&mut self, question: &Question) -> Result<Reply, UserError> {
        let prompt = self.knowledge.question_message(&question.text);
        self.ask_model(prompt)
    }

    fn feedback(&mut self, context: &FeedbackContext) -> Result<Reply, UserError> {
        let prompt = self.knowledge.observation_message(context);
        self.ask_model(prompt)
    }
}

/// The user factory of a run: `relay` ([`specgap_engine::RelayUser`]) or `chat:<model>`
/// ([`ChatUser`] built from the [`ChatConfig`] stored in the user's component table, with the
/// knowledge of the episode's task and condition, its opening message and the replaced prompt
/// files stored in that table).
#[derive(Debug, Clone, Copy, Default)]
pub struct Users;

impl UserFactory for Users {
    fn make(&self, user: &ComponentRef, episode: &PlannedEpisode, package: &TaskPackage) -> Result<Box<dyn User + Send>, UserError> {
        if user.spec == "relay" {
            return Ok(Box::new(specgap_engine::RelayUser::new(package)));
        }
        if !user.spec.starts_with("chat:") {
            return Err(UserError::new(format!("unknown user `{}`; expected relay or chat:<model>", user.spec), true));
        }
        let config = ChatConfig::from_table(&user.config)
            .map_err(|e| UserError::new(format!("cannot read the chat user configuration: {e}"), true))?;
        let replaced = Replacements::from_config(&user.config)
            .map_err(|e| UserError::new(format!("cannot read the chat user configuration: {e}"), true))?;
        let opening = opening_message(package, &episode.condition, episode.key.seed, episode.key.repeat)
            .unwrap_or_else(|| package.instruction().trim_end().to_string());
        let knowledge = UserKnowledge::for_episode_with(package, &episode.condition, &opening, &replaced);
        Ok(Box::new(ChatUser::new(&config, knowledge, crate::episode_seed(episode, 0x7573_6572))?))
    }
}
