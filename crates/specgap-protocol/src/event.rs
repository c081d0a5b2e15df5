//! Trajectory events (DESIGN §6): one JSON object per line of
//! `episodes/<id>/trajectory.jsonl.zst`, in order, each with a sequence number and timestamps.
//!
//! The same types carry tool calls between agents and the engine, so a trajectory read back
//! from a store can be replayed (`replay:<dir>`) without conversion.

use serde::{Deserialize, Serialize};

/// One tool call made by an agent in a turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// Call id, unique in the episode (model-assigned for chat agents, `call-<n>` otherwise).
    pub id: String,
    /// Tool name (DESIGN §3 tool table).
    pub tool: String,
    /// Arguments object as the agent sent it.
    pub arguments: serde_json::Value,
}

/// A tool offered to the agent: name, description in our own words, JSON schema of arguments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// Tool name.
    pub name: String,
    /// What the tool does, for the agent.
    pub description: String,
    /// JSON schema (draft 2020-12 subset) of the arguments object.
    pub parameters: serde_json::Value,
}

/// Token and request usage of model calls (issue "chat agent" item 5); all counts summed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt tokens.
    #[serde(default)]
    pub input_tokens: u64,
    /// Completion tokens.
    #[serde(default)]
    pub output_tokens: u64,
    /// Prompt tokens served from the provider's cache.
    #[serde(default)]
    pub cached_tokens: u64,
    /// Reasoning tokens (part of output).
    #[serde(default)]
    pub reasoning_tokens: u64,
    /// HTTP requests that got an answer.
    #[serde(default)]
    pub requests: u64,
    /// Retried requests.
    #[serde(default)]
    pub retries: u64,
    /// Summed request latency in milliseconds.
    #[serde(default)]
    pub latency_ms: u64,
    /// Cost in US dollars from the price table (0 without one).
    #[serde(default)]
    pub cost_usd: f64,
}

impl Usage {
    /// Adds another usage record into this one.
    pub fn add(&mut self, other: &Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.cached_tokens += other.cached_tokens;
        self.reasoning_tokens += other.reasoning_tokens;
        self.requests += other.requests;
        self.retries += other.retries;
        self.latency_ms += other.latency_ms;
        self.cost_usd += other.cost_usd;
    }
}

/// Who speaks in a user message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UserMessageKind {
    /// Answer to an `ask_user` question.
    Answer,
    /// Consequence feedback after a failed submission (DESIGN §3.4).
    Feedback,
    /// A harness reminder (e.g. after a reply without a tool call).
    Reminder,
    /// A continuation message (delivery text channel).
    Continuation,
    /// The next stage's instruction of a staged task (`[stages]`), sent after the previous
    /// stage's submission was scored (Harbor's `[[steps]]`; not owner feedback).
    Stage,
}

/// An event with its sequence number and timestamps.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    /// 0-based position in the trajectory.
    pub seq: u64,
    /// Wall-clock time, milliseconds since the Unix epoch (excluded from determinism checks).
    pub ts_ms: u64,
    /// Milliseconds since the episode started (excluded from determinism checks).
    pub elapsed_ms: u64,
    /// What happened.
    #[serde(flatten)]
    pub kind: EventKind,
}

/// What happened, tagged by `"type"` in JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum EventKind {
    /// The episode began: everything the agent was told.
    EpisodeStart {
        /// Episode id.
        episode: String,
        /// Task name.
        task: String,
        /// Canonical condition string.
        condition: String,
        /// `clean` or `residual:<id>`.
        start: String,
        /// Agent spec.
        agent: String,
        /// System prompt given to the agent.
        system_prompt: String,
        /// Opening user message.
        opening_message: String,
        /// Tools offered.
        tools: Vec<ToolSpec>,
    },
    /// One agent turn: its text and the tool calls it made.
    AgentTurn {
        /// 1-based turn number.
        turn: u32,
        /// Assistant text, if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        text: Option<String>,
        /// Tool calls, in order.
        #[serde(default)]
        tool_calls: Vec<ToolCall>,
        /// Model usage for this turn.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        usage: Option<Usage>,
    },
    /// The result of one tool call, exactly one per call.
    ToolResult {
        /// The call id answered.
        call_id: String,
        /// Tool name.
        tool: String,
        /// Text given back to the agent.
        output: String,
        /// Whether it is an error result.
        is_error: bool,
    },
    /// A message from the owner / customer / harness to the agent.
    UserMessage {
        /// Why the message was sent.
        kind: UserMessageKind,
        /// The text the agent sees.
        text: String,
        /// Model usage of the user model, if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        usage: Option<Usage>,
    },
    /// One request of a model-played user (`--user chat:<model>`) to its model, written when
    /// its reply arrives, before the message that delivers the reply to the agent (issue 18
    /// item 3; seed 000 §5.6, App. G resamples these). The body is the exact bytes sent, as
    /// [`crate::request`] segments: a message first sent by this request is stored here once
    /// (`new_messages`), later requests only name it, so the user's history is never stored
    /// twice. Rebuilding it takes the `new_messages` of this and every earlier `user_request`
    /// of the trajectory.
    UserRequest {
        /// 0-based number of the request among the attempt's user requests.
        request: u32,
        /// What the reply was for: `answer` (one question) or `feedback` (an observation).
        purpose: UserMessageKind,
        /// The request body (JSON), as literal text and message ids.
        body: Vec<crate::request::BodySegment>,
        /// The messages this request sent first, each with its id and exact JSON text.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        new_messages: Vec<crate::request::StoredMessage>,
        /// The reply the user gave (the model's text, trimmed): one answer, or the feedback.
        reply: String,
        /// Completions made with this body: 1, plus one per empty reply asked again.
        tries: u32,
    },
    /// The agent's system prompt and tools changed mid-episode (plan mode, seed 000 App. F.3:
    /// a successful `write_plan` ends the planning phase). Everything the agent is told from
    /// here on, as `episode_start` records the opening.
    PhaseChange {
        /// The phase now beginning (`execute`).
        phase: String,
        /// The system prompt from here on.
        system_prompt: String,
        /// The tools offered from here on.
        tools: Vec<ToolSpec>,
    },
    /// A scripted agent applied a solution overlay (harness action `apply_overlay`).
    Overlay {
        /// `gold`, `literal`, `starter` or `mutant:<id>`.
        name: String,
    },
    /// The workspace was delivered for review.
    Submission {
        /// 1-based submission number.
        k: u32,
        /// Agent's summary, if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        summary: Option<String>,
        /// True for the automatic final submission of a budget or loop end.
        automatic: bool,
    },
    /// The private evaluation of submission `k` (never shown to the agent).
    Evaluation {
        /// Submission number.
        k: u32,
        /// Score by the task's scoring kind.
        score: f64,
        /// Success by the task's scoring kind.
        success: bool,
        /// Highest-priority failing requirement, if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        failing_requirement: Option<String>,
    },
    /// The evaluator's verdict on a residual starting state (seed 001 §3.1), written before
    /// the agent's first turn. `success = true` flags a state that passes the verifier, which
    /// a residual state must not (it is then reported invalid; the episode still runs).
    StartEvaluation {
        /// Residual state id (the start without `residual:`).
        state: String,
        /// Score by the task's scoring kind.
        score: f64,
        /// Success by the task's scoring kind.
        success: bool,
    },
    /// A budget was exhausted (`turns`, `tool_calls`, `wall_sec`, `submissions`), or the
    /// clarification-round limit was reached (`clarification_rounds`; the episode goes on).
    Budget {
        /// `turns`, `tool_calls`, `wall_sec`, `submissions` or `clarification_rounds`.
        which: String,
        /// Amount used.
        used: u64,
        /// The limit.
        limit: u64,
    },
    /// One request of an external (`cli:`) agent through the episode's model gateway and
    /// what came of it (issue 14 item 4). The request's conversation is given by journal ids:
    /// a message first sent by this request is stored here once (`new_messages`), later
    /// requests only name it, so a trajectory grows with the conversation, not with its
    /// square. The gateway's journal (`gateway-<attempt>.jsonl` in the episode directory)
    /// rebuilds each request byte for byte. A main-loop request that was forwarded is also
    /// the agent's turn: an `agent_turn` event follows with its text and tool calls.
    ModelExchange {
        /// 0-based arrival number of the request in the gateway (the journal's key).
        request: u64,
        /// `main` (a main-loop turn) or `side` (token counting, titles, listings).
        class: String,
        /// Method and path as received.
        method: String,
        /// The path as received (no query).
        path: String,
        /// The model named, if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        model: Option<String>,
        /// Whether a streamed answer was asked for.
        #[serde(default)]
        stream: bool,
        /// The HTTP status the agent got.
        status: u16,
        /// How it ended: `completed`, `upstream_rejected`, `local`, `refused`, `stream_cut`,
        /// `abandoned`, `client_gone`, `upstream_dead`.
        outcome: String,
        /// What the gateway said about a refusal, a cut or a dead upstream.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        detail: String,
        /// The request's conversation messages in order, by journal id (`sha256:<hex>`).
        #[serde(default)]
        messages: Vec<String>,
        /// The messages this request sent first: (journal id, the message as JSON).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        new_messages: Vec<(String, serde_json::Value)>,
        /// Usage of the exchange (tokens, upstream requests and retries, latency, cost).
        #[serde(default)]
        usage: Usage,
        /// Arrival to the last byte sent, milliseconds (excluded from determinism checks).
        #[serde(default)]
        duration_ms: u64,
    },
    /// A harness tool (`ask_user`, `submit`, `write_plan`) called by an external agent through
    /// its MCP server or the commands on its PATH (DESIGN §5). Its result follows as a
    /// `tool_result`. Not a turn of its own: the model's call that led to it is in a turn.
    BridgeCall {
        /// The turn it was made in (the agent's last turn so far).
        turn: u32,
        /// The call.
        call: ToolCall,
    },
    /// What an agent's steps did with the workspace's files, as its adapter reports them from
    /// its own log (issue 14 item 8; `crate::action`): read by the report like the actions it
    /// derives from shell commands.
    Actions {
        /// The turn they belong to.
        turn: u32,
        /// The actions, in order.
        actions: Vec<crate::action::FileAction>,
    },
    /// The workspace files one command of the harness's shell tools (`bash`, `run_experiment`,
    /// `run_project`) read, measured by the harness (fanotify on the sandbox's workspace mount;
    /// issue 24 item 4, docs/decisions.md "Opened and inspected, measured"). Written right after
    /// the command's `tool_result`.
    FileReads {
        /// The call whose command it was.
        call_id: String,
        /// The files its processes read at all (seed 001 App. D.2 "inspects"), workspace-relative,
        /// sorted.
        #[serde(default)]
        read: Vec<String>,
        /// Of those, the files whose content reached the agent in the result (App. D.2 "opens";
        /// `crate::reads`), sorted.
        #[serde(default)]
        shown: Vec<String>,
        /// Why the reads could not be measured (no privilege, no sandbox); empty when they were.
        /// An unmeasured command is read from its text instead, and the report says so.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        unmeasured: String,
    },
    /// An external agent's program ended (issue 14 item 6).
    AgentExit {
        /// Its exit status; absent when the harness killed it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        status: Option<i32>,
        /// What the adapter made of it: `exited`, `submitted` (its completion signal),
        /// `stopped` (ended by the harness).
        how: String,
        /// The last lines of its standard error (no secret: the sandbox never holds one).
        #[serde(default, skip_serializing_if = "String::is_empty")]
        stderr_tail: String,
        /// What the harness could not read from the agent's home (a link it refused to
        /// follow, a file too large), if anything.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        note: String,
    },
    /// An external agent tried to reach something other than the model gateway (issue 15:
    /// the network tripwire; specgap-gateway `tripwire`). Nothing reached the network and
    /// nothing came back but a DNS answer naming the tripwire. Recorded at the episode's end,
    /// in the order the attempts arrived, before `budget` and `end`.
    NetworkAttempt {
        /// `dns` (a question to the sandbox's resolver) or `tcp` (a connection).
        protocol: String,
        /// The name looked up (`dns`; lowercase).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
        /// The record type asked for (`dns`: `A`, `AAAA`, `HTTPS`, …).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        record_type: Option<String>,
        /// The address the attempt went to (the resolver's for `dns`).
        address: String,
        /// The port it went to.
        port: u16,
        /// The server name of the TLS ClientHello sent on the connection, if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        sni: Option<String>,
        /// The `Host` of the HTTP request sent on the connection, if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        http_host: Option<String>,
    },
    /// Whether the episode's network tripwire was armed (external agents only; recorded at
    /// the end with the `network_attempt` events). Without it the agent still had no network,
    /// but its attempts went unrecorded.
    NetworkTripwire {
        /// Whether it was armed for the whole episode.
        armed: bool,
        /// How many `network_attempt` events precede this one.
        attempts: u32,
        /// Why it was not armed, or what it could not catch (only names when the any-address
        /// route could not be added); empty otherwise.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        note: String,
    },
    /// An infrastructure or evaluation error.
    Error {
        /// `infrastructure` or `evaluation`.
        class: String,
        /// What went wrong.
        message: String,
        /// Tail of the failing program's stderr, if any.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        stderr_tail: String,
    },
    /// The episode ended.
    End {
        /// Why (snake_case end reason).
        reason: String,
        /// Extra words, if any.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        detail: String,
    },
}

/// One line for a `network_attempt` event: `dns A api.anthropic.com`,
/// `tcp 127.0.0.2:443 tls api.openai.com`, `tcp 203.0.113.5:80 http updates.example.org`;
/// `None` for any other event.
pub fn network_attempt_line(kind: &EventKind) -> Option<String> {
    let EventKind::NetworkAttempt { protocol, name, record_type, address, port, sni, http_host } = kind else {
        return None;
    };
    let mut line = protocol.clone();
    if let Some(record_type) = record_type {
        line.push(' ');
        line.push_str(record_type);
    }
    if let Some(name) = name {
        line.push(' ');
        line.push_str(name);
    } else {
        let host = if address.contains(':') { format!("[{address}]") } else { address.clone() };
        line.push_str(&format!(" {host}:{port}"));
    }
    if let Some(sni) = sni {
        line.push_str(&format!(" tls {sni}"));
    }
    if let Some(host) = http_host {
        line.push_str(&format!(" http {host}"));
    }
    Some(line)
}

#[cfg(test)]
mod network_tests {
    use super::*;

    fn attempt(protocol: &str, name: Option<&str>, address: &str, port: u16, sni: Option<&str>) -> EventKind {
        EventKind::NetworkAttempt {
            protocol: protocol.into(),
            name: name.map(String::from),
            record_type: name.map(|_| "A".to_string()),
            address: address.into(),
            port,
            sni: sni.map(String::from),
            http_host: None,
        }
    }

    #[test]
    fn network_attempts_read_as_one_line_and_round_trip() {
        let dns = attempt("dns", Some("api.anthropic.com"), "127.0.0.53", 53, None);
        assert_eq!(network_attempt_line(&dns).as_deref(), Some("dns A api.anthropic.com"));
        let tls = attempt("tcp", None, "127.0.0.2", 443, Some("api.openai.com"));
        assert_eq!(network_attempt_line(&tls).as_deref(), Some("tcp 127.0.0.2:443 tls api.openai.com"));
        assert_eq!(network_attempt_line(&attempt("tcp", None, "2001:db8::1", 80, None)).as_deref(), Some("tcp [2001:db8::1]:80"));
        assert_eq!(network_attempt_line(&EventKind::NetworkTripwire { armed: true, attempts: 0, note: String::new() }), None);
        let json = serde_json::to_string(&tls).unwrap();
        assert_eq!(json, r#"{"type":"network_attempt","protocol":"tcp","address":"127.0.0.2","port":443,"sni":"api.openai.com"}"#);
        assert_eq!(serde_json::from_str::<EventKind>(&json).unwrap(), tls);
        let armed = EventKind::NetworkTripwire { armed: false, attempts: 0, note: "unavailable: not root".into() };
        assert_eq!(
            serde_json::to_string(&armed).unwrap(),
            r#"{"type":"network_tripwire","armed":false,"attempts":0,"note":"unavailable: not root"}"#
        );
    }
}
