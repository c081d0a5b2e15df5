//! [`ChatAgent`]: the tool-calling loop of `chat:<model>`.
//!
//! The history sent with every request is: the system prompt, the opening message, then per
//! turn the assistant message (text and tool calls) followed by exactly one `tool` message
//! per call with the same `tool_call_id`, in call order, then any user message (owner
//! feedback, answers, harness reminders). Under `--emulate-tools` the calls live in the
//! assistant text ([`crate::chat::emulate`]) and everything the engine sends back between
//! two turns becomes one user message.
//!
//! End rules that concern models (DESIGN §3.5): a reply without a tool call is a turn with
//! no calls (the engine reminds, then ends); a `content_filter` stop, a `refusal` field
//! without calls, or a reply without calls whose text is a plain-text refusal
//! ([`crate::chat::refusal`]) is [`AgentReply::Refusal`] (the engine ends after three in a
//! row); the server's
//! context-length error, or our estimate (characters / 4) above `context_tokens`, is
//! [`AgentReply::ContextOverflow`]. Service faults after retries are [`AgentError`]s, which
//! the engine records as infrastructure errors. A request abandoned at the episode's deadline
//! ([`Agent::attach`], [`crate::chat::client`]) is [`AgentReply::Abandoned`].
//!
//! A phase change (plan mode's `write_plan`, [`Agent::change_phase`]) replaces the system
//! message and the tools; the rest of the history stays, so the next request carries the
//! execution prompt and the full toolset.

use std::collections::HashSet;

use specgap_engine::session::{Agent, AgentError, AgentReply, Incoming, Opening, PhaseChange, SessionLink};
use specgap_protocol::event::{ToolCall, ToolSpec, Usage};

use crate::chat::client::{ChatClient, ClientError, Completion};
use crate::chat::wire::WireMessage;
use crate::chat::{ChatConfig, emulate};

/// The chat agent of one episode attempt.
#[derive(Debug)]
pub struct ChatAgent {
    client: ChatClient,
    emulate_tools: bool,
    context_tokens: Option<u64>,
    messages: Vec<WireMessage>,
    tools: Vec<ToolSpec>,
    tools_chars: usize,
    turn: u32,
    used_ids: HashSet<String>,
    /// Parse errors of emulated call blocks, told to the model with the next message.
    pending_notes: Vec<String>,
    usage: Usage,
}

impl ChatAgent {
    /// An agent for `config`; `seed` seeds the retry jitter.
    ///
    /// # Errors
    /// [`AgentError`] when the HTTP client cannot be built.
    pub fn new(config: &ChatConfig, seed: u64) -> Result<Self, AgentError> {
        let client = ChatClient::new(config, seed).map_err(|e| AgentError::with_source("cannot start the chat agent", true, e))?;
        Ok(ChatAgent {
            client,
            emulate_tools: config.emulate_tools,
            context_tokens: config.context_tokens,
            messages: Vec::new(),
            tools: Vec::new(),
            tools_chars: 0,
            turn: 0,
            used_ids: HashSet::new(),
            pending_notes: Vec::new(),
            usage: Usage::default(),
        })
    }

    /// The conversation so far (for tests and debugging).
    pub fn messages(&self) -> &[WireMessage] {
        &self.messages
    }

    fn estimated_tokens(&self) -> u64 {
        let chars: usize = self.messages.iter().map(WireMessage::chars).sum::<usize>() + self.tools_chars;
        (chars / 4) as u64
    }

    /// Appends what arrived since the last turn.
    fn absorb(&mut self, inbox: &[Incoming]) {
        if self.emulate_tools {
            self.absorb_as_text(inbox);
            return;
        }
        for item in inbox {
            match item {
                Incoming::ToolResult { call_id, output, is_error, .. } => {
                    let text = if *is_error { format!("Error: {output}") } else { output.clone() };
                    self.messages.push(WireMessage::tool(call_id, text));
                }
                Incoming::UserMessage { text, .. } => self.messages.push(WireMessage::text("user", text.clone())),
            }
        }
    }

    fn absorb_as_text(&mut self, inbox: &[Incoming]) {
        let mut parts: Vec<String> = std::mem::take(&mut self.pending_notes);
        for item in inbox {
            match item {
                Incoming::ToolResult { call_id, tool, output, is_error } => {
                    let status = if *is_error { "error" } else { "result" };
                    parts.push(format!("[{status} of {tool} call {call_id}]\n{output}"));
                }
                Incoming::UserMessage { text, .. } => parts.push(text.clone()),
            }
        }
        if !parts.is_empty() {
            self.messages.push(WireMessage::text("user", parts.join("\n\n")));
        }
    }

    /// Gives every call an id unique in the episode (servers may leave ids out or repeat them).
    fn assign_ids(&mut self, calls: &mut [ToolCall]) {
        for (n, call) in calls.iter_mut().enumerate() {
            if call.id.is_empty() || self.used_ids.contains(&call.id) {
                let base = format!("call-{}-{}", self.turn, n + 1);
                let mut id = base.clone();
                let mut k = 1;
                while self.used_ids.contains(&id) {
                    k += 1;
                    id = format!("{base}-{k}");
                }
                call.id = id;
            }
            self.used_ids.insert(call.id.clone());
        }
    }

    /// The system message for `prompt` with `tools`, which are kept for the requests (or, when
    /// emulating tool calls, described at the end of the prompt).
    fn system_message(&mut self, prompt: &str, tools: &[ToolSpec]) -> WireMessage {
        let mut system = prompt.to_string();
        if self.emulate_tools {
            system.push_str(&emulate::tool_instructions(tools));
        } else {
            self.tools = tools.to_vec();
            self.tools_chars = serde_json::to_string(&self.tools).map_or(0, |s| s.len());
        }
        WireMessage::text("system", system)
    }

    fn reply_from(&mut self, completion: Completion) -> AgentReply {
        let Completion { text, tool_calls, finish_reason, refusal, usage } = completion;
        let text_opt = Some(text.clone()).filter(|t| !t.trim().is_empty());
        let mut calls = if self.emulate_tools {
            let (calls, errors) = emulate::parse_calls(&text);
            self.pending_notes = errors;
            calls
        } else {
            tool_calls
        };
        let refused = finish_reason == "content_filter"
            || (calls.is_empty() && (refusal.is_some() || crate::chat::refusal::is_plain_text_refusal(&text)));
        if refused {
            let shown = text_opt.or(refusal);
            // The refusal stays in the history so the engine's reminder follows it.
            self.messages.push(WireMessage::assistant(Some(shown.clone().unwrap_or_default()), &[]));
            return AgentReply::Refusal { text: shown, usage: Some(usage) };
        }
        self.assign_ids(&mut calls);
        if self.emulate_tools {
            self.messages.push(WireMessage::text("assistant", text));
        } else {
            // A turn without text or calls still gets an assistant message, so the reminder
            // that follows answers something.
            let content = if calls.is_empty() { Some(text_opt.clone().unwrap_or_default()) } else { text_opt.clone() };
            self.messages.push(WireMessage::assistant(content, &calls));
        }
        AgentReply::Turn { text: text_opt, tool_calls: calls, usage: Some(usage) }
    }
}

impl Agent for ChatAgent {
    fn attach(&mut self, link: &SessionLink) {
        self.client.attach(link);
    }

    fn start(&mut self, opening: &Opening) -> Result<(), AgentError> {
        let system = self.system_message(&opening.system_prompt, &opening.tools);
        self.messages = vec![system, WireMessage::text("user", opening.message.clone())];
        Ok(())
    }

    fn change_phase(&mut self, change: &PhaseChange) -> bool {
        let system = self.system_message(&change.system_prompt, &change.tools);
        match self.messages.first_mut() {
            Some(first) => *first = system,
            None => self.messages.push(system),
        }
        true
    }

    fn next_turn(&mut self, inbox: &[Incoming]) -> Result<AgentReply, AgentError> {
        self.absorb(inbox);
        self.turn += 1;
        if self.context_tokens.is_some_and(|limit| self.estimated_tokens() > limit) {
            return Ok(AgentReply::ContextOverflow);
        }
        match self.client.complete(&self.messages, &self.tools) {
            Ok(completion) => {
                self.usage.add(&completion.usage);
                Ok(self.reply_from(completion))
            }
            Err(error) => {
                self.usage.add(&error.usage());
                match error {
                    ClientError::ContextOverflow { .. } => Ok(AgentReply::ContextOverflow),
                    ClientError::Abandoned { .. } => Ok(AgentReply::Abandoned),
                    ClientError::Rejected { .. } | ClientError::Build(_) | ClientError::Runtime(_) => {
                        Err(AgentError::with_source("the model service rejected the request", true, error))
                    }
                    ClientError::Exhausted { .. } => {
                        Err(AgentError::with_source("the model service kept failing after retries", false, error))
                    }
                    ClientError::FailingAtDeadline { .. } => Err(AgentError::with_source("no reply from the model service", false, error)),
                }
            }
        }
    }

    fn usage(&self) -> Usage {
        self.usage.clone()
    }
}
