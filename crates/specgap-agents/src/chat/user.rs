//! [`ChatUser`]: the owner or the customer played by a model (`--user chat:<model>`).
//!
//! * **Owner** (owner conditions: partial, full, literal, plan; intent of seed 000 F.4):
//!   speaks in the first person and briefly (about 150 words at most). Its context is
//!   `user.toml` (persona, understanding, editable surface, style) and the instruction it
//!   wrote; under `full` it also knows `instruction.full.md`. Feedback turns an observation
//!   (scene, incident, and the measured detail once it is due) into what the owner saw, what
//!   it costs, and what must be different next time. Questions are answered from what the
//!   owner knows, or with "I do not know, find out from the project". It never learns
//!   requirement ids or descriptions (outside `full`, which states them in prose) nor any
//!   evaluator output, and it never mentions benchmarks, tests, scores or evaluators.
//! * **Customer** (delivery conditions; intent of seed 002 A.9.2): answers from the request
//!   and `information.md`, does not volunteer formulas or weights (a business-level
//!   explanation is fine), and gives a sensible business default when its knowledge does
//!   not cover the question. It never sees requirement ids, evaluator files or solutions.
//!
//! The user keeps its own conversation (questions and feedback as user messages, its replies
//! as assistant messages). An empty reply is asked again up to [`EMPTY_REPLY_RETRIES`]
//! times, then the episode is an infrastructure error. Its requests are held to the
//! episode's deadline and their usage is recorded as each completes, through the
//! [`SessionLink`] the engine attaches ([`crate::chat::client`]); a request abandoned at the
//! deadline is [`UserError::abandoned`].

use specgap_engine::condition::{Condition, OpeningKind};
use specgap_engine::runner::{PlannedEpisode, UserFactory};
use specgap_engine::session::{FeedbackContext, Question, Reply, SessionLink, User, UserError};
use specgap_protocol::event::Usage;
use specgap_protocol::run::ComponentRef;
use specgap_task::TaskPackage;

use crate::chat::ChatConfig;
use crate::chat::client::{ChatClient, ClientError};
use crate::chat::wire::WireMessage;

/// Version of the owner / customer prompt texts of this module ([`UserKnowledge`] and the
/// question and feedback prompts); bump on any change. It is stored in the user's table in
/// `run.toml` (`user_prompt_version`), which the episode key hashes, so edited prompts key new
/// episodes.
pub const USER_PROMPT_VERSION: &str = "1";

/// Extra tries after an empty user reply.
pub const EMPTY_REPLY_RETRIES: u32 = 2;

/// Whom the model plays.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UserRole {
    /// The project owner (seed 000).
    Owner,
    /// The business customer (seed 002).
    Customer,
}

/// Everything the simulated user knows, rendered as its system prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserKnowledge {
    /// Owner or customer.
    pub role: UserRole,
    /// The system prompt.
    pub system_prompt: String,
}

const OWNER_RULES: &str = "You are the owner of a software or research project and you have handed a piece of work to an \
engineer. Stay in that role. Write in the first person, plainly, in at most about 150 words. Use only what you know from \
the briefing below and what you have seen yourself; never invent facts, numbers, files or causes. You do not know how the \
work will be judged and you never talk about benchmarks, tests, scores, graders or evaluators. When the engineer asks \
something your briefing answers, answer it; when it does not, say that you do not know and that they should find it out \
from the project itself.";

const CUSTOMER_RULES: &str = "You are the business person who sent a request to a delivery engineer, and you answer their \
clarification questions. Stay in that role and answer in your own voice, directly and briefly, as someone who simply knows \
their business; do not mention documents, briefings or notes. Take facts, values, field names and thresholds from your \
business knowledge below and give them exactly. Your knowledge may mention internal scoring formulas, weights or penalty \
coefficients: never volunteer them, and if asked, explain the business intent in words without formulas or numeric \
weights. When your knowledge does not cover a question, give a sensible business default and say it is your preference. \
Never mention benchmarks, tests, scores or evaluators.";

impl UserKnowledge {
    /// What the user of `package` knows under `condition` (module guide).
    pub fn for_episode(package: &TaskPackage, condition: &Condition) -> Self {
        if condition.is_delivery() {
            return Self::customer(package);
        }
        let mut prompt = String::from(OWNER_RULES);
        if let Some(profile) = package.user() {
            prompt.push_str(&format!("\n\n## Who you are\n{}\n\n## What you believe about the work\n{}\n\n## What the engineer may change\n{}",
                profile.persona.trim(), profile.understanding.trim(), profile.editable_surface.trim()));
            if let Some(style) = &profile.style {
                prompt.push_str(&format!("\n\n## How you write\n{}", style.trim()));
            }
        }
        prompt.push_str(&format!("\n\n## What you asked the engineer for\n{}", package.instruction().trim()));
        if let (OpeningKind::FullInstruction, Some(full)) = (condition.opening(), package.instruction_full()) {
            prompt.push_str(&format!("\n\n## The complete specification you hold\n{}", full.trim()));
        }
        UserKnowledge { role: UserRole::Owner, system_prompt: prompt }
    }

    fn customer(package: &TaskPackage) -> Self {
        let mut prompt = String::from(CUSTOMER_RULES);
        prompt.push_str(&format!("\n\n## The request you sent\n{}", package.instruction().trim()));
        if let Some(information) = package.information() {
            prompt.push_str(&format!("\n\n## Your business knowledge\n{}", information.trim()));
        }
        UserKnowledge { role: UserRole::Customer, system_prompt: prompt }
    }
}

/// The owner or customer played by a model.
#[derive(Debug)]
pub struct ChatUser {
    client: ChatClient,
    knowledge: UserKnowledge,
    history: Vec<WireMessage>,
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
        Ok(ChatUser { client, knowledge, history: Vec::new() })
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
        let mut usage = Usage::default();
        for _ in 0..=EMPTY_REPLY_RETRIES {
            match self.client.complete(&messages, &[]) {
                Ok(completion) => {
                    usage.add(&completion.usage);
                    let text = completion.text.trim().to_string();
                    if !text.is_empty() {
                        self.history.push(WireMessage::text("user", prompt));
                        self.history.push(WireMessage::text("assistant", text.clone()));
                        return Ok(Reply { text, usage: Some(usage) });
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

impl User for ChatUser {
    fn attach(&mut self, link: &SessionLink) {
        self.client.attach(link);
    }

    fn answer(&mut self, question: &Question) -> Result<Reply, UserError> {
        let prompt = format!("The engineer asks you:\n\n{}\n\nReply to them directly.", question.text.trim());
        self.ask_model(prompt)
    }

    fn feedback(&mut self, context: &FeedbackContext) -> Result<Reply, UserError> {
        let observation = &context.observation;
        let mut prompt = format!(
            "The engineer delivered the work and you looked at it.\n\nWhere you were: {}\nWhat you saw: {}",
            observation.scene.trim(),
            observation.incident.trim()
        );
        if context.escalated {
            prompt.push_str(&format!("\nWhat you measured this time: {}", context.detail.trim()));
        }
        prompt.push_str(
            "\n\nWrite your next message to the engineer: what you saw, what it costs you, and what must be different \
             the next time you look. Say only what you saw; do not guess at the cause or the fix.",
        );
        self.ask_model(prompt)
    }
}

/// The user factory of a run: `relay` ([`specgap_engine::RelayUser`]) or `chat:<model>`
/// ([`ChatUser`] built from the [`ChatConfig`] stored in the user's component table, with the
/// knowledge of the episode's task and condition).
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
        let knowledge = UserKnowledge::for_episode(package, &episode.condition);
        Ok(Box::new(ChatUser::new(&config, knowledge, crate::episode_seed(episode, 0x7573_6572))?))
    }
}
