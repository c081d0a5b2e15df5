//! How the episode's one set of rules (DESIGN §3) reads an agent that drives itself — an
//! external `cli:` agent (issue 14 items 1, 5, 6; docs/decisions.md "CLI agents: the episode
//! rules"). The agent runs its own model loop and its own tools; the engine sees what it did
//! and answers only the harness tools:
//!
//! * **Turns.** One forwarded main-loop model request is one turn ([`AgentReply::Observed`]
//!   with a turn); side requests are recorded (`model_exchange`) but are not turns. The tool
//!   calls in the answer are the turn's tool calls: counted, checked for the 4th identical call
//!   in a row (the episode ends `loop_repeated_call`), never run by the engine. Results the
//!   next request carries are recorded as `tool_result` events before that exchange, and a
//!   shell command that succeeded with blank output counts toward the blank-output rule.
//!   Refusals count as for any agent (three in a row end the episode). A reply without a tool
//!   call gets no reminder and does not count toward `no_tool_call`: a CLI answers it itself
//!   (mini-swe-agent's format error) or ends, and the turn budget bounds it.
//! * **Budgets** are checked when the agent asks for its next turn
//!   ([`AgentReply::TurnRequested`]): past `turns` or `tool_calls` the episode ends and the
//!   held request is refused, so the calls of the last turn ran, as for a pulled agent. The
//!   wall budget ends the episode at its instant (the agent's [`AgentReply::Abandoned`]).
//! * **Harness tools** ([`AgentReply::HarnessCall`]) go through the same dispatch and gates as
//!   a pulled agent's calls, with the same feedback, submission budget, round limit and
//!   consecutive-question rule; they are not counted as tool calls again. A run of questions
//!   is broken by a turn that led to no `ask_user`.
//! * **Exit** ([`AgentReply::Exited`]): when the adapter can resume the agent and the
//!   protocol expects another turn — questions in the final reply under a delivery condition
//!   that answers them (the heading's, else what the user's question detector hears, as for
//!   any reply without a tool call), or a delivery not yet made (the continuation message) — the message
//!   goes into the inbox and the agent is started again with it. So is an agent whose last
//!   submission was returned with the owner's feedback, when submissions remain and it was
//!   not yet started again after that submission: a `continuation` message repeating the
//!   feedback ([`resume_message`]) starts it once more; and, for a staged task, an agent
//!   whose last submission brought the next stage's instruction (appended to `submit`'s
//!   result by its adapter), once per stage ([`stage_resume_message`]). Otherwise the episode
//!   ends `agent_exit`, with the automatic submission of a changed workspace (for a staged
//!   task, of the open stage, changed or not).

use super::*;
use crate::session::{ObservedResult, ObservedTurn, Workplace};

/// The tools the harness itself serves an agent that drives itself (DESIGN §5).
pub(super) const HARNESS_TOOLS: &[&str] = &[names::ASK_USER, names::SUBMIT, names::WRITE_PLAN];

/// What the engine keeps about an agent that drives itself.
#[derive(Debug, Default)]
pub(super) struct Driven {
    /// Harness calls so far (their ids).
    calls: u32,
    /// Whether an `ask_user` came since the last turn (a turn without one breaks the run of
    /// questions).
    asked_since_turn: bool,
    /// The last failed submission whose feedback the owner gave: its number and the feedback
    /// (cleared by any later submission).
    returned: Option<(u32, String)>,
    /// The submission after whose return the agent was last started again on exit (at most
    /// one such resume per returned submission).
    resumed_after: Option<u32>,
    /// A staged task: the last submission after which the next stage's instruction was sent,
    /// with that instruction (cleared by any later submission).
    stage_given: Option<(u32, String)>,
    /// The submission after which the agent was last started again with the next stage.
    stage_resumed_after: Option<u32>,
}

impl Episode<'_, '_> {
    /// The agent's [`Workplace`].
    pub(super) fn workplace(&self) -> Workplace {
        Workplace {
            episode_id: self.ctx.episode_id.to_string(),
            attempt: self.writer.attempt(),
            workspace: self.ws_dir.clone(),
            scratch: self.ctx.workdir.join("agent"),
            store_dir: self.writer.dir().to_path_buf(),
            host: self.command_host.clone(),
            sandbox: self.ctx.sandbox.clone(),
            budgets: self.ctx.budgets,
            scaffold_prompt_only: self.ctx.condition.preset() == crate::condition::Preset::Blind,
            text_questions: self.text_questions_offered(),
        }
    }

    /// One model exchange of the agent (module guide).
    pub(super) fn observed(
        &mut self,
        results: Vec<ObservedResult>,
        exchange: Option<EventKind>,
        turn: Option<ObservedTurn>,
        late: Option<EndReason>,
    ) -> Result<Option<EndReason>, EpisodeError> {
        let mut ended = None;
        for result in results {
            self.writer.event(EventKind::ToolResult {
                call_id: result.call_id,
                tool: result.tool,
                output: result.output,
                is_error: result.is_error,
            })?;
            self.counters.blank = if result.blank_success { self.counters.blank + 1 } else { 0 };
            if ended.is_none() && super::reached(self.ctx.budgets.rules.blank_output(), self.counters.blank) {
                ended = Some(EndReason::LoopBlankOutput);
            }
        }
        if let Some(exchange) = exchange {
            self.writer.event(exchange)?;
        }
        let Some(turn) = turn else { return Ok(late.or(ended)) };
        self.turns += 1;
        let mut calls = turn.tool_calls;
        for (i, call) in calls.iter_mut().enumerate() {
            if call.id.is_empty() {
                call.id = format!("turn-{}-call-{}", self.turns, i + 1);
            }
        }
        self.writer.event(EventKind::AgentTurn { turn: self.turns, text: turn.text, tool_calls: calls.clone(), usage: turn.usage })?;
        if late.is_some() || ended.is_some() {
            return Ok(late.or(ended));
        }
        if !std::mem::take(&mut self.driven.asked_since_turn) {
            self.counters.asks = 0;
        }
        if turn.refusal {
            self.counters.refusals += 1;
            return Ok(super::reached(self.ctx.budgets.rules.refusals(), self.counters.refusals).then_some(EndReason::Refusals));
        }
        self.counters.refusals = 0;
        for call in &calls {
            self.tool_calls += 1;
            if self.repeated(call) {
                return Ok(Some(EndReason::LoopRepeatedCall));
            }
        }
        Ok(self.deadline_end())
    }

    /// The agent's next main-loop request waits: the budgets decide whether it is admitted.
    pub(super) fn turn_requested(&mut self, late: Option<EndReason>) -> Option<EndReason> {
        if late.is_some() {
            return late;
        }
        if self.turns >= self.ctx.budgets.turns {
            return Some(EndReason::TurnBudget);
        }
        if self.tool_calls >= self.ctx.budgets.tool_calls {
            return Some(EndReason::ToolCallBudget);
        }
        None
    }

    /// A harness tool call of the agent (module guide).
    pub(super) fn harness_call(&mut self, mut call: ToolCall, late: Option<EndReason>) -> Result<Option<EndReason>, EpisodeError> {
        self.driven.calls += 1;
        if call.id.is_empty() {
            call.id = format!("bridge-{}", self.driven.calls);
        }
        self.writer.event(EventKind::BridgeCall { turn: self.turns, call: call.clone() })?;
        if let Some(reason) = late {
            self.tool_result(&call, not_run(reason))?;
            return Ok(late);
        }
        let submissions_before = self.submissions.len();
        let effect = self.dispatch(&call)?;
        self.count(&call, &effect);
        if self.submissions.len() != submissions_before {
            self.driven.returned = None;
            self.driven.stage_given = None;
        }
        if call.tool == names::ASK_USER {
            self.driven.asked_since_turn = true;
        }
        if let Some(text) = effect.feedback {
            // For an external agent the owner's message is part of `submit`'s result: the
            // adapter appends it to the result it hands back (issue 14 item 5).
            self.driven.returned = Some((self.submissions.len() as u32, text.clone()));
            self.inbox.push(Incoming::UserMessage { kind: UserMessageKind::Feedback, text });
        }
        if let Some(text) = effect.next_stage {
            self.driven.stage_given = Some((self.submissions.len() as u32, text.clone()));
            self.inbox.push(Incoming::UserMessage { kind: UserMessageKind::Stage, text });
        }
        Ok(effect.end.or_else(|| self.deadline_end()))
    }

    /// Actions the agent's adapter read from its log.
    pub(super) fn actions(&mut self, actions: Vec<specgap_protocol::action::FileAction>) -> Result<Option<EndReason>, EpisodeError> {
        if !actions.is_empty() {
            self.writer.event(EventKind::Actions { turn: self.turns, actions })?;
        }
        Ok(self.deadline_end())
    }

    /// `file_reads` events of the agent's sandbox; anything else in `reads` is not recorded.
    pub(super) fn file_reads_measured(&mut self, reads: Vec<EventKind>) -> Result<Option<EndReason>, EpisodeError> {
        for event in reads {
            if matches!(event, EventKind::FileReads { .. }) {
                self.writer.event(event)?;
            }
        }
        Ok(self.deadline_end())
    }

    /// The agent's program ended (module guide).
    pub(super) fn agent_exited(
        &mut self,
        text: Option<String>,
        can_resume: bool,
        exit: EventKind,
        late: Option<EndReason>,
    ) -> Result<Option<EndReason>, EpisodeError> {
        self.writer.event(exit)?;
        if late.is_some() {
            return Ok(late);
        }
        if !can_resume {
            return Ok(Some(EndReason::AgentExit));
        }
        let text = text.unwrap_or_default();
        let artifact_missing = self.artifact_missing();
        if self.text_questions_offered() {
            // The final reply is heard as any reply without a tool call: the heading's
            // questions, else what the user's question detector hears.
            let questions = match text_channel::heading_questions(&text) {
                Some(listed) => listed,
                None => self.detect(&text, false)?,
            };
            if !questions.is_empty() {
                return self.text_exchange(questions, true);
            }
        }
        if let Some(message) = self.resume_after_return().or_else(|| self.resume_for_stage()) {
            self.harness_message(UserMessageKind::Continuation, &message)?;
            return Ok(None);
        }
        if self.ctx.condition.is_delivery() && artifact_missing == Some(true) && self.continuations < CONTINUATION_LIMIT {
            self.continuations += 1;
            let text = self.harness_text(&prompt_files::CONTINUATION_FILE);
            self.harness_message(UserMessageKind::Continuation, &text)?;
            return Ok(None);
        }
        Ok(Some(EndReason::AgentExit))
    }

    /// The message that starts an agent again whose program exited after a returned
    /// submission (docs/decisions.md "CLI agents: the episode rules"): when the last
    /// submission failed with the owner's feedback, nothing was submitted since, submissions
    /// remain, and the agent was not already started again after that submission. It repeats
    /// the feedback, so an agent that ended right after reading it (or never read it) gets
    /// its turn. `None` otherwise (the episode then ends as before).
    fn resume_after_return(&mut self) -> Option<String> {
        let (k, feedback) = self.driven.returned.as_ref()?;
        let used = self.submissions.len() as u32;
        if self.driven.resumed_after == Some(*k) || used >= self.ctx.budgets.submissions {
            return None;
        }
        let left = self.ctx.budgets.submissions - used;
        let message = resume_message(*k, feedback, left);
        self.driven.resumed_after = Some(*k);
        Some(message)
    }
}

impl Episode<'_, '_> {
    /// The message that starts an agent again whose program exited after a stage's
    /// submission of a staged task, when the next stage was sent with that submission's result
    /// and nothing was submitted since: once per stage, it repeats the next stage's
    /// instruction, so an agent that exits after each `submit` still works every stage.
    fn resume_for_stage(&mut self) -> Option<String> {
        let (k, text) = self.driven.stage_given.as_ref()?;
        if self.driven.stage_resumed_after == Some(*k) {
            return None;
        }
        let message = stage_resume_message(*k, text);
        self.driven.stage_resumed_after = Some(*k);
        Some(message)
    }
}

/// The text of a resume for the next stage (our words): which stage was received and the
/// next stage's instruction.
pub(super) fn stage_resume_message(k: u32, instruction: &str) -> String {
    format!(
        "Your delivery for stage {k} was received. The next stage of the task:\n\n{}\n\nCarry on with the work in the workspace and submit when this stage is ready.",
        instruction.trim()
    )
}

/// The text of a resume after a returned submission (our words): which submission came back,
/// the owner's message about it, and how many submissions are left.
pub(super) fn resume_message(k: u32, feedback: &str, left: u32) -> String {
    let word = if left == 1 { "submission" } else { "submissions" };
    format!(
        "Your delivery (submission {k}) was returned. The owner's message about it:\n\n{}\n\nYou have {left} {word} left. Carry on with the work in the workspace and submit again when it is ready.",
        feedback.trim()
    )
}
