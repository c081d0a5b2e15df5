//! System prompts and the opening message (DESIGN §3.3, §4).
//!
//! The prompt texts live in `src/prompts/*.md`, written in this project's own words from the
//! intent of seed 000 Appendix F (evidence, literal, plan then execute), seed 001 §3.2 (the
//! neutral prompt of blind continuation) and seed 002 A.9.1 (delivery, with one block per
//! condition). Each is a [`PromptFile`] a run may replace
//! ([`crate::prompt_files`], `specgap run --prompts DIR`); built-in or replaced, a text is a
//! template whose placeholders are filled here with the episode's budget and the rules of its
//! condition:
//!
//! | placeholder | filled with |
//! | --- | --- |
//! | `{budget_note}` | "Budget: T turns, C tool calls and W of wall-clock time.", W exactly ("5 seconds", "1 minute 1 second") |
//! | `{turns}`, `{tool_calls}`, `{wall_minutes}` | the budget's numbers (`{wall_minutes}` in whole minutes, rounded up) |
//! | `{wall_budget}` | the wall budget exactly, in words ("5 seconds", "1 minute 1 second"), `unlimited` without a clock |
//! | `{submissions}`, `{submissions_word}` | the submission budget and "submission(s)" (the built-in evidence and plan prompts do not use them: `submit`'s description tells the budget, so `full` and `partial` share one prompt, seed 000 §5.1) |
//! | `{rules_note}` | the end rules and the lone-tool rule of the condition (DESIGN §3.5); the round limit of delivery conditions, in the agent's [`AskRoute`] |
//! | `{ask_note}` | under owner conditions with `ask_user`: one sentence offering it, by the name the agent sees |
//! | `{ask_plan_note}`, `{ask_plan_invite}` | plan mode with `ask_user`: it is available (by the name the agent sees), and questions are invited (seed 000 F.3) |
//! | `{ask_how}` | `interact` and `interact-req`: how the client is asked — the tool by the name the agent sees and, besides it, questions in a reply under `## Questions for the client`; under the text route only the reply, with the answers in the next message (seed 002 A.9.3) |
//!
//! Every mention of `ask_user` follows the agent's [`AskRoute`]: the harness's tool as the
//! agent sees it (`ask_user` for the built-in agents, `mcp__specgap__ask_user` for Claude
//! Code, …), or, for a `cli:` agent on the text channel under a delivery condition, no tool at
//! all: it asks in its reply and is resumed with the answers.
//! | `{literal_submit_note}` | literal: what a returned delivery means, or that the agent delivers once |
//! | `{neutral_submit_note}` | blind: what a returned delivery means, or that the first submission ends the work |
//! | `{gate_note}` | `interact-req+gate=on`: what is withheld until the agent has asked |
//! | `{condition_note}` | `delivery.md` only: the condition's block (`delivery_*.md`) |
//!
//! Any change to a built-in text or to the fill-ins must bump [`PROMPT_VERSION`], which is
//! part of every agent configuration in `run.toml`.

use specgap_task::TaskPackage;

use crate::condition::{Ask, Budgets, Condition, OpeningKind, PromptKind, UNBOUNDED, UNBOUNDED_WALL, oracle_targets};
use crate::episode::{count_word, ordinal_word};
use crate::prompt_files::{PromptFile, Replacements, SYSTEM_PROMPT_FILES};

/// Version of the prompt texts; bump on any change to `src/prompts/*.md` or to this module's
/// fill-ins. 4: the blind prompt, interact-req as a prompt (issue 11). 5: `full` and `partial`
/// share the evidence prompt byte for byte (the submission budget moved to `submit`'s
/// description), the plan prompts are whole system prompts of their phase (the planning one
/// invites questions), batched turns are explained (issue 13). 6: the ask route
/// ([`AskRoute`]): `ask_user` by the name the agent sees, or the text exchange alone (issue 15).
/// 7: under delivery conditions, several `ask_user` calls of one turn are all answered, as one
/// round (issue 24 item 2). 8: the planning prompt says its commands see the workspace
/// read-only (issue 24 item 5). 9: the budget and end rules told are the protocol's
/// (issue 24 items 1, 5): seed 000's prompts state 120 turns and 360 tool calls and no wall
/// clock, and no end for replies without a tool call; seed 002's state no step cap and none of
/// seed 000's loop rules. 10: a wall clock stated in a prompt is exact ("5 seconds", "1 minute
/// 1 second", not "1 minutes"), and `{wall_budget}` fills it in words (issue 31 item 7).
pub const PROMPT_VERSION: &str = "10";

/// How the agent puts questions to its counterpart, as its prompts tell it (issue 15; seed
/// 002 App. A.9.3). The agent says which ([`crate::Agent::ask_route`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AskRoute {
    /// The harness's `ask_user`, by the name the agent sees it under (`ask_user`,
    /// `mcp__specgap__ask_user`, `specgap_ask_user`, …).
    Tool(String),
    /// No question tool: questions go in a reply under the `## Questions for the client`
    /// heading ([`crate::text_channel::QUESTIONS_HEADING`]) and the answers come in the next
    /// message (a `cli:` agent's text channel under a delivery condition).
    Text,
}

impl AskRoute {
    /// The harness's `ask_user` by its own name.
    pub fn ask_user() -> Self {
        AskRoute::Tool("ask_user".to_string())
    }

    /// The tool's name in backticks, `None` for the text route.
    fn tool(&self) -> Option<String> {
        match self {
            AskRoute::Tool(name) => Some(format!("`{name}`")),
            AskRoute::Text => None,
        }
    }
}

/// The heading of the registered answers in an `oracle:R` opening message.
pub const SETTLED_POINTS: &str = "Points the client has already settled:";
/// What an `oracle:0` opening message says in place of the answers.
pub const NO_SETTLED_POINTS: &str = "Points the client has already settled: none.";

/// The system prompts of one episode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SystemPrompts {
    /// The prompt the agent starts with.
    pub initial: String,
    /// Plan mode only: the execution-phase system prompt, which replaces the planning one
    /// after a successful `write_plan` (seed 000 F.3).
    pub execute_phase: Option<String>,
}

/// Renders the built-in system prompt(s) of `condition` with `budgets` filled in, for an
/// agent that asks with the harness's `ask_user`.
pub fn system_prompts(condition: &Condition, budgets: &Budgets) -> SystemPrompts {
    system_prompts_with(condition, budgets, &Replacements::none(), &AskRoute::ask_user())
}

/// Renders the system prompt(s) of `condition` with `budgets` filled in for an agent that
/// asks by `route`, taking each prompt file's text from `replaced` when it is there.
pub fn system_prompts_with(condition: &Condition, budgets: &Budgets, replaced: &Replacements, route: &AskRoute) -> SystemPrompts {
    let text = |name: &str| file(name).map_or("", |f| replaced.text(f));
    let fills = Fills::new(condition, budgets, route);
    let initial = match condition.prompt() {
        PromptKind::Evidence => fills.render(text("evidence.md"), Phase::Only),
        PromptKind::Literal => fills.render(text("literal.md"), Phase::Only),
        PromptKind::Plan => fills.render(text("plan.md"), Phase::Planning),
        PromptKind::Neutral => fills.render(text("neutral.md"), Phase::Only),
        PromptKind::Delivery | PromptKind::DeliveryClarifyFirst => {
            let block = text(delivery_block(condition));
            fills.render(&text("delivery.md").replace("{condition_note}", block.trim_end()), Phase::Only)
        }
    };
    let execute_phase = condition.is_plan().then(|| fills.render(text("plan_execute.md"), Phase::Execution).trim_end().to_string());
    SystemPrompts { initial: initial.trim_end().to_string(), execute_phase }
}

fn file(name: &str) -> Option<&'static PromptFile> {
    SYSTEM_PROMPT_FILES.iter().find(|f| f.name == name)
}

fn delivery_block(condition: &Condition) -> &'static str {
    match (condition.opening(), condition.ask()) {
        (OpeningKind::InstructionAndInformation, _) => "delivery_full_info.md",
        (OpeningKind::InstructionAndAnswers, _) => "delivery_oracle.md",
        (_, Ask::Off) => "delivery_hidden.md",
        _ if condition.prompt() == PromptKind::DeliveryClarifyFirst => "delivery_interact_req.md",
        _ => "delivery_interact.md",
    }
}

/// Which phase a prompt serves: plan mode has two, every other condition one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Only,
    Planning,
    Execution,
}

/// The placeholder values of one episode.
struct Fills {
    condition: Condition,
    budgets: Budgets,
    route: AskRoute,
    pairs: Vec<(&'static str, String)>,
}

impl Fills {
    fn new(condition: &Condition, budgets: &Budgets, route: &AskRoute) -> Self {
        let asks = condition.ask() != Ask::Off;
        // Owner conditions have no text exchange: their route is always a tool.
        let tool = route.tool().unwrap_or_else(|| "`ask_user`".to_string());
        let ask_note = if asks && !condition.is_delivery() {
            format!(" You can put a question to the owner with {tool}; they answer from what they know.")
        } else {
            String::new()
        };
        let ask_plan_note = if asks { format!(", and you can put questions to the owner with {tool}") } else { String::new() };
        let ask_how = ask_how(route);
        let ask_plan_invite = if asks {
            " Where the owner's intent is unclear, ask them rather than building your plan on a large assumption of your own."
        } else {
            ""
        };
        // The hard clarify-first gate is an explicit option (`interact-req+gate=on`); without
        // it nothing is withheld (seed 002 §4.1).
        let gate_note = match (condition.ask() == Ask::Required, route.tool()) {
            (false, _) => String::new(),
            (true, Some(tool)) => format!(
                " Editing files, running commands and submitting are refused until you have asked at least one question \
                 and then told the client, with a {tool} message or a reply that contains no question mark, that you \
                 have what you need."
            ),
            (true, None) => " Editing files, running commands and submitting are refused until you have asked at least \
                 one question and then told the client, in a reply that contains no question mark, that you have what \
                 you need."
                .to_string(),
        };
        let neutral_submit_note = if condition.feedback() {
            "A delivery that is returned comes back with a message about what was observed, and it uses up one of your submissions."
        } else {
            "Your first submission ends the work."
        };
        let submissions_word = if budgets.submissions == 1 { "submission" } else { "submissions" };
        // Without feedback the first delivery ends the work, whatever it scores, so the agent
        // must not expect to hear back (seed 000's no-feedback ablation).
        let literal_submit_note = if condition.feedback() {
            "They may reply with a new request; act on what they ask and nothing more. A returned delivery uses up one of your submissions."
        } else {
            "You deliver once: the owner takes what you hand over without replying, and the job ends there."
        };
        let wall_minutes = budget_number(budgets.wall_sec == UNBOUNDED_WALL, budgets.wall_sec.div_ceil(60));
        let wall_budget = if budgets.wall_sec == UNBOUNDED_WALL { "unlimited".to_string() } else { duration_words(budgets.wall_sec) };
        let budget_note = budget_note(budgets);
        Fills {
            condition: *condition,
            budgets: *budgets,
            route: route.clone(),
            pairs: vec![
                ("{ask_note}", ask_note),
                ("{literal_submit_note}", literal_submit_note.to_string()),
                ("{ask_plan_note}", ask_plan_note),
                ("{ask_plan_invite}", ask_plan_invite.to_string()),
                ("{ask_how}", ask_how),
                ("{gate_note}", gate_note),
                ("{neutral_submit_note}", neutral_submit_note.to_string()),
                ("{budget_note}", budget_note),
                ("{turns}", budget_number(budgets.turns == UNBOUNDED, budgets.turns.into())),
                ("{tool_calls}", budget_number(budgets.tool_calls == UNBOUNDED, budgets.tool_calls.into())),
                ("{wall_minutes}", wall_minutes),
                ("{wall_budget}", wall_budget),
                ("{submissions}", budgets.submissions.to_string()),
                ("{submissions_word}", submissions_word.to_string()),
            ],
        }
    }

    fn render(&self, template: &str, phase: Phase) -> String {
        let rules = rules_note(&self.condition, &self.budgets, phase, &self.route);
        let text = template.replace("{rules_note}", &rules);
        self.pairs.iter().fold(text, |text, (key, value)| text.replace(key, value))
    }
}

/// A budget's number for a placeholder, `unlimited` without a cap.
fn budget_number(unbounded: bool, n: u64) -> String {
    if unbounded { "unlimited".into() } else { n.to_string() }
}

/// `{budget_note}`: the budgets that have a cap, the wall clock only where the protocol
/// announces it (seed 000's prompts state turns and tool calls; no paper states a wall clock);
/// empty when nothing is capped or announced.
fn budget_note(budgets: &Budgets) -> String {
    let mut parts: Vec<String> = Vec::new();
    if budgets.turns != UNBOUNDED {
        parts.push(format!("{} turns", budgets.turns));
    }
    if budgets.tool_calls != UNBOUNDED {
        parts.push(format!("{} tool calls", budgets.tool_calls));
    }
    if budgets.announce_wall && budgets.wall_sec != UNBOUNDED_WALL {
        parts.push(format!("{} of wall-clock time", duration_words(budgets.wall_sec)));
    }
    match parts.as_slice() {
        [] => String::new(),
        [one] => format!("Budget: {one}."),
        [init @ .., last] => format!("Budget: {} and {last}.", init.join(", ")),
    }
}

/// A whole number of seconds in words, exactly: "5 seconds", "1 minute 1 second", "12 hours"
/// (`{wall_budget}` and the wall clock of `{budget_note}`; issue 31 item 7).
pub fn duration_words(seconds: u64) -> String {
    let units = [(seconds / 3600, "hour"), (seconds % 3600 / 60, "minute"), (seconds % 60, "second")];
    let words: Vec<String> = units.iter().filter(|(n, _)| *n > 0).map(|(n, unit)| units_of(*n, unit)).collect();
    if words.is_empty() { units_of(0, "second") } else { words.join(" ") }
}

/// `1 minute`, `2 minutes`.
fn units_of(n: u64, unit: &str) -> String {
    if n == 1 { format!("1 {unit}") } else { format!("{n} {unit}s") }
}

/// How the client of `interact` / `interact-req` is asked, by `route` (`{ask_how}`).
fn ask_how(route: &AskRoute) -> String {
    let heading = crate::text_channel::QUESTIONS_HEADING;
    match route.tool() {
        Some(tool) => format!(
            "The client can be reached with {tool}, which takes one question or a list of questions. You can also \
             write your questions in a reply without tool calls, one per line under a heading `## {heading}`; the \
             client answers them together in one message."
        ),
        None => format!(
            "To ask the client, write your questions in a reply without tool calls, one per line under a heading \
             `## {heading}`, and end your turn there; the client's answers to all of them arrive together as the \
             next message, and you carry on from there."
        ),
    }
}

/// The end rules and turn rules of a condition, in words (DESIGN §3.5), for an agent asking
/// by `route`.
fn rules_note(condition: &Condition, budgets: &Budgets, phase: Phase, route: &AskRoute) -> String {
    let asks = condition.ask() != Ask::Off;
    // Owner conditions have no text exchange: their route is always a tool.
    let tool = match (condition.is_delivery(), route.tool()) {
        (false, None) => Some("`ask_user`".to_string()),
        (_, tool) => tool,
    };
    // Seed 002 A.9.3: past the round limit the client asks the agent to go on; the work goes on.
    let round = match &tool {
        Some(tool) => format!("one {tool} call or one reply with questions is one round"),
        None => "one reply with questions is one round".to_string(),
    };
    // Seed 002 A.3: one turn of questions is one exchange, so parallel calls are one round.
    let parallel = match &tool {
        Some(tool) => format!(" Several {tool} calls in one turn are all answered, within that turn's one round."),
        None => String::new(),
    };
    let rounds_note = if asks && condition.is_delivery() {
        format!(
            " The client answers up to {} rounds of questions ({round}, however many questions it holds); after \
             that they ask you to go on with your best judgement.{parallel}",
            budgets.clarification_rounds
        )
    } else {
        String::new()
    };
    let mut enders: Vec<String> = Vec::new();
    if phase != Phase::Planning {
        enders.push("`submit`".into());
    }
    if let Some(tool) = tool.filter(|_| asks) {
        enders.push(tool);
    }
    if phase == Phase::Planning {
        enders.push("`write_plan`".into());
    }
    let ender_rule = match enders.as_slice() {
        [one] => format!("{one} ends the turn, so call it alone: calls after it in the same turn are not run"),
        [init @ .., last] => {
            format!("{} and {last} each end the turn, so call them alone: calls after them in the same turn are not run", init.join(", "))
        }
        [] => String::new(),
    };
    let rules = budgets.rules;
    let mut ends: Vec<String> = vec!["when any budget runs out".into()];
    if let Some(n) = rules.repeated_call() {
        ends.push(format!("on the {} identical call in a row (same tool, same arguments)", ordinal_word(n)));
    }
    if let Some(n) = rules.blank_output() {
        ends.push(format!("on the {} command in a row that succeeds without printing anything", ordinal_word(n)));
    }
    if let Some(n) = rules.ask_user().filter(|_| asks && !condition.is_delivery()) {
        ends.push(format!("on the {} question to the owner in a row", ordinal_word(n)));
    }
    ends.push("when your context overflows".into());
    if let Some(n) = rules.refusals() {
        ends.push(format!("after {} refusals in a row", count_word(n)));
    }
    let ends = match ends.as_slice() {
        [init @ .., last] if !init.is_empty() => format!("{}, and {last}", init.join(", ")),
        _ => ends.join(""),
    };
    let no_tool = match rules.no_tool_call() {
        Some(1) => "A reply without any tool call ends the work.".to_string(),
        Some(2) => "A reply without any tool call gets one reminder; a second such reply in a row ends the work.".to_string(),
        Some(n) => format!("A reply without any tool call gets a reminder; the {} such reply in a row ends the work.", ordinal_word(n)),
        None => "A reply without any tool call gets a reminder, and the work goes on.".to_string(),
    };
    format!(
        "The work also ends {ends}; the current workspace is then submitted automatically if it changed since your \
         last submission. {no_tool} Every path is relative to the workspace. Independent tools may be called together \
         in one turn; {ender_rule}.{rounds_note}"
    )
}

/// The opening message of an episode (DESIGN §4 "opening instruction"): instruction.md;
/// instruction.full.md under `full`; plus information.md under `full-info`; plus the
/// registered answers of the seeded oracle subset under `oracle:R`, in registry order, or a
/// line saying there are none (seed 002 A.9.1 renders "(none)"). Nothing else of the
/// package is ever quoted. `None` when the package lacks the file the condition needs (see
/// [`crate::applicability`]).
pub fn opening_message(package: &TaskPackage, condition: &Condition, run_seed: u64, repeat: u32) -> Option<String> {
    let instruction = package.instruction().trim_end();
    Some(match condition.opening() {
        OpeningKind::Instruction => instruction.to_string(),
        OpeningKind::FullInstruction => package.instruction_full()?.trim_end().to_string(),
        OpeningKind::InstructionAndInformation => {
            let information = package.information()?.trim_end();
            format!("{instruction}\n\n---\n\nBusiness information from the client:\n\n{information}")
        }
        OpeningKind::InstructionAndAnswers => {
            let ratio = match condition.preset() {
                crate::condition::Preset::Oracle(r) => r,
                _ => 0.0,
            };
            let answers = oracle_targets(package.clarifications(), ratio, run_seed, package.name(), repeat);
            if answers.is_empty() {
                format!("{instruction}\n\n---\n\n{NO_SETTLED_POINTS}")
            } else {
                let list: Vec<String> = answers.iter().map(|t| format!("- {}", t.answer.trim())).collect();
                format!("{instruction}\n\n---\n\n{SETTLED_POINTS}\n\n{}", list.join("\n"))
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::condition::BudgetFlags;
    use specgap_protocol::package::Budget;

    fn prompts(text: &str) -> SystemPrompts {
        let c = Condition::parse(text).unwrap();
        let b = Budgets::resolve(&c, &Budget::default(), &BudgetFlags::default());
        system_prompts(&c, &b)
    }

    #[test]
    fn every_condition_renders_without_placeholders() {
        for text in [
            "partial",
            "full",
            "literal",
            "plan",
            "blind",
            "blind+profile=owner",
            "hidden",
            "interact",
            "interact-req",
            "interact-req+gate=on",
            "full-info",
            "oracle:0.5",
            "partial+ask=off",
            "plan+ask=off",
            "hidden+ask=on",
            "literal+profile=shell",
            "partial+feedback=off",
        ] {
            let p = prompts(text);
            assert!(!p.initial.contains('{') && !p.initial.contains('}'), "{text}: {}", p.initial);
            assert_eq!(p.execute_phase.is_some(), text.starts_with("plan"), "{text}");
            if let Some(execute) = &p.execute_phase {
                assert!(!execute.contains('{') && !execute.contains('}'), "{text}: {execute}");
            }
        }
    }

    #[test]
    fn an_announced_wall_budget_is_stated_exactly() {
        // Issue 31 item 7: 5 s read "1 minutes" and 61 s "2 minutes".
        let c = Condition::parse("partial").unwrap();
        let mut b = Budgets::resolve(&c, &Budget::default(), &BudgetFlags::default());
        b.announce_wall = true;
        let note = |wall_sec| budget_note(&Budgets { wall_sec, ..b });
        assert_eq!(note(5), "Budget: 120 turns, 360 tool calls and 5 seconds of wall-clock time.");
        assert_eq!(note(61), "Budget: 120 turns, 360 tool calls and 1 minute 1 second of wall-clock time.");
        assert_eq!(note(UNBOUNDED_WALL), "Budget: 120 turns and 360 tool calls.");
        let words: Vec<String> = [1, 5, 60, 61, 120, 3600, 3725, 43_200].into_iter().map(duration_words).collect();
        assert_eq!(
            words,
            ["1 second", "5 seconds", "1 minute", "1 minute 1 second", "2 minutes", "1 hour", "1 hour 2 minutes 5 seconds", "12 hours"]
        );
    }

    #[test]
    fn budget_and_rules_are_filled() {
        // Seed 000 states turns and tool calls, no wall clock, and no end for text-only replies.
        let p = prompts("partial");
        assert!(p.initial.contains("\n\nBudget: 120 turns and 360 tool calls.\n\n"), "{}", p.initial);
        assert!(
            p.initial.contains(
                "The work also ends when any budget runs out, on the fourth identical call in a row (same tool, same \
             arguments), on the fourth command in a row that succeeds without printing anything, on the fourth \
             question to the owner in a row, when your context overflows, and after three refusals in a row; the \
             current workspace is then submitted automatically if it changed since your last submission. A reply \
             without any tool call gets a reminder, and the work goes on."
            ),
            "{}",
            p.initial
        );
        assert!(
            p.initial
                .contains("`submit` and `ask_user` each end the turn, so call them alone: calls after them in the same turn are not run.")
        );
        assert!(p.initial.contains("on the fourth question to the owner in a row"));
        // Seed 002: no step cap and no announced clock, none of seed 000's loop rules.
        let h = prompts("hidden");
        assert!(!h.initial.contains("Budget:"), "{}", h.initial);
        assert!(
            h.initial.contains(
                "The work also ends when any budget runs out, and when your context overflows; the current workspace is \
             then submitted automatically if it changed since your last submission. A reply without any tool call \
             gets one reminder; a second such reply in a row ends the work."
            ),
            "{}",
            h.initial
        );
        let l = prompts("literal");
        assert!(l.initial.contains("`submit` ends the turn, so call it alone: calls after it in the same turn are not run."));
        assert!(!l.initial.contains("ask_user"));
        let d = prompts("interact");
        assert!(d.initial.contains(
            "The client answers up to 30 rounds of questions (one `ask_user` call or one reply with questions is one \
             round, however many questions it holds); after that they ask you to go on with your best judgement. \
             Several `ask_user` calls in one turn are all answered, within that turn's one round."
        ));
        assert!(!p.initial.contains("Several `ask_user` calls"), "seed 000's owner conditions keep F.1");
        assert!(d.initial.contains("under a heading `## Questions for the client`"));
        assert!(d.initial.contains("you have 1 submission."));
        let q = prompts("plan");
        assert!(q.initial.contains("`ask_user` and `write_plan` each end the turn"), "{}", q.initial);
        assert!(!q.initial.contains("`submit` and"));
        let execute = q.execute_phase.unwrap();
        assert!(execute.contains("`submit` and `ask_user` each end the turn"), "{execute}");
        assert!(!execute.contains("write_plan"), "{execute}");
    }

    #[test]
    fn full_and_partial_share_one_system_prompt_byte_for_byte() {
        // Seed 000 §5.1: Full shares Partial's prompt; only the opening instruction and the
        // submission budget (told in `submit`'s description) differ.
        assert_eq!(prompts("full").initial, prompts("partial").initial);
        assert_eq!(prompts("full+ask=off").initial, prompts("partial+ask=off").initial);
        assert_eq!(prompts("partial+feedback=off").initial, prompts("partial").initial);
        assert!(!prompts("partial").initial.contains("4 submissions"));
    }

    #[test]
    fn without_feedback_the_literal_agent_is_told_it_delivers_once() {
        for text in ["literal+feedback=off", "literal+feedback=off+submissions=3"] {
            let p = prompts(text);
            assert!(p.initial.contains("You deliver once:"), "{text}");
            assert!(!p.initial.contains("uses up one of your submissions"), "{text}");
        }
        assert!(prompts("literal").initial.contains("A returned delivery uses up one of your submissions."));
    }

    #[test]
    fn the_planning_prompt_invites_questions_and_the_execution_prompt_replaces_it() {
        let p = prompts("plan");
        assert!(
            p.initial.contains(
                "Where the owner's intent is unclear, ask them rather than building your plan on a large assumption of your own."
            )
        );
        assert!(p.initial.contains("The tools for editing files and for delivering are not offered yet"));
        // Seed 000 App. F.3: a read-only investigation, which the engine enforces.
        assert!(
            p.initial.contains(
                "This phase is a read-only investigation. You can list and read files, replay the project's records and run \
             experiments, and you can put questions to the owner with `ask_user`. Commands see the workspace read-only, so \
             nothing they write to it stays; scratch files can go in /tmp, which is not kept for the execution phase."
            ),
            "{}",
            p.initial
        );
        let execute = p.execute_phase.unwrap();
        assert!(execute.starts_with("You are the engineer a project owner has brought in"), "{execute}");
        assert!(execute.contains("Carry out the plan you saved in PLAN.md."));
        assert!(execute.contains("Budget: 120 turns and 360 tool calls. The budget covers both phases together"));
        let quiet = prompts("plan+ask=off");
        assert!(!quiet.initial.contains("ask_user") && !quiet.initial.contains("ask them"), "{}", quiet.initial);
    }

    #[test]
    fn a_replaced_prompt_is_rendered_with_the_same_placeholders() {
        let c = Condition::parse("partial").unwrap();
        let b = Budgets::resolve(&c, &Budget::default(), &BudgetFlags::default());
        let mut replaced = Replacements::none();
        replaced.insert("evidence.md", "Budget: {submissions} {submissions_word}, {turns} turns, {tool_calls} tool calls.\n");
        assert_eq!(
            system_prompts_with(&c, &b, &replaced, &AskRoute::ask_user()).initial,
            "Budget: 4 submissions, 120 turns, 360 tool calls."
        );
        replaced.insert("delivery_hidden.md", "Nobody answers here.");
        let hidden = Condition::parse("hidden").unwrap();
        let p = system_prompts_with(
            &hidden,
            &Budgets::resolve(&hidden, &Budget::default(), &BudgetFlags::default()),
            &replaced,
            &AskRoute::ask_user(),
        );
        assert!(p.initial.contains("\n\nNobody answers here.\n\n"), "{}", p.initial);
    }

    fn routed(text: &str, route: &AskRoute) -> SystemPrompts {
        let c = Condition::parse(text).unwrap();
        let b = Budgets::resolve(&c, &Budget::default(), &BudgetFlags::default());
        system_prompts_with(&c, &b, &Replacements::none(), route)
    }

    #[test]
    fn under_the_text_route_the_delivery_prompt_asks_for_questions_in_the_reply_and_names_no_tool() {
        let text = routed("interact", &AskRoute::Text).initial;
        assert!(!text.contains("ask_user"), "{text}");
        assert!(
            text.contains(
                "To ask the client, write your questions in a reply without tool calls, one per line under a heading \
             `## Questions for the client`, and end your turn there; the client's answers to all of them arrive \
             together as the next message, and you carry on from there. The client expects to be consulted about \
             requirements: when the request and the data do not settle something, ask."
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "The client answers up to 30 rounds of questions (one reply with questions is one round, however many \
             questions it holds); after that they ask you to go on with your best judgement."
            ),
            "{text}"
        );
        assert!(text.contains("; `submit` ends the turn, so call it alone: calls after it in the same turn are not run."), "{text}");
        let req = routed("interact-req", &AskRoute::Text).initial;
        assert!(
            req.contains(
                "and end your turn there; the client's answers to all of them arrive together as the next message, and \
             you carry on from there. Before you build anything, ask the client"
            ),
            "{req}"
        );
        let gated = routed("interact-req+gate=on", &AskRoute::Text).initial;
        assert!(
            gated.contains(
                "in NOTES.md any assumption the client did not settle. Editing files, running commands and submitting are \
             refused until you have asked at least one question and then told the client, in a reply that contains no \
             question mark, that you have what you need."
            ),
            "{gated}"
        );
        assert!(!gated.contains("ask_user"), "{gated}");
        // Without a counterpart nothing changes: the hidden prompt names no question channel.
        assert_eq!(routed("hidden", &AskRoute::Text), prompts("hidden"));
    }

    #[test]
    fn under_a_tool_route_the_prompts_name_the_tool_as_the_agent_sees_it() {
        let claude = AskRoute::Tool("mcp__specgap__ask_user".into());
        let d = routed("interact", &claude).initial;
        assert!(
            d.contains(
                "The client can be reached with `mcp__specgap__ask_user`, which takes one question or a list of questions. \
             You can also write your questions in a reply without tool calls, one per line under a heading \
             `## Questions for the client`; the client answers them together in one message. The client expects to be \
             consulted about requirements"
            ),
            "{d}"
        );
        assert!(d.contains("(one `mcp__specgap__ask_user` call or one reply with questions is one round,"), "{d}");
        assert!(d.contains("`submit` and `mcp__specgap__ask_user` each end the turn, so call them alone"), "{d}");
        assert!(!d.contains("`ask_user`"), "{d}");
        let gated = routed("interact-req+gate=on", &claude).initial;
        assert!(
            gated.contains("told the client, with a `mcp__specgap__ask_user` message or a reply that contains no question mark,"),
            "{gated}"
        );
        let gemini = AskRoute::Tool("mcp_specgap_ask_question".into());
        let partial = routed("partial", &gemini).initial;
        assert!(
            partial.contains(" You can put a question to the owner with `mcp_specgap_ask_question`; they answer from what they know."),
            "{partial}"
        );
        assert!(partial.contains("`submit` and `mcp_specgap_ask_question` each end the turn"), "{partial}");
        let plan = routed("plan", &gemini);
        assert!(
            plan.initial.contains("run experiments, and you can put questions to the owner with `mcp_specgap_ask_question`."),
            "{}",
            plan.initial
        );
        assert!(plan.initial.contains("`mcp_specgap_ask_question` and `write_plan` each end the turn"), "{}", plan.initial);
        assert!(plan.execute_phase.unwrap().contains("`submit` and `mcp_specgap_ask_question` each end the turn"));
        // Owner conditions have no text exchange: a text route still names the harness's tool.
        assert_eq!(routed("partial", &AskRoute::Text), prompts("partial"));
        // The harness's own name is what the built-in agents get.
        assert_eq!(routed("interact", &AskRoute::ask_user()), prompts("interact"));
        assert!(
            prompts("interact")
                .initial
                .contains("The client can be reached with `ask_user`, which takes one question or a list of questions.")
        );
    }

    #[test]
    fn a_replaced_prompt_without_the_route_placeholder_still_renders_and_one_with_it_is_filled() {
        let c = Condition::parse("interact").unwrap();
        let b = Budgets::resolve(&c, &Budget::default(), &BudgetFlags::default());
        let mut replaced = Replacements::none();
        replaced.insert("delivery_interact.md", "Ask the client with `ask_user` when in doubt.");
        let old = system_prompts_with(&c, &b, &replaced, &AskRoute::Text).initial;
        assert!(old.contains("\n\nAsk the client with `ask_user` when in doubt.\n\n"), "{old}");
        replaced.insert("delivery_interact.md", "{ask_how}");
        let filled = system_prompts_with(&c, &b, &replaced, &AskRoute::Text).initial;
        assert!(filled.contains("\n\nTo ask the client, write your questions in a reply without tool calls,"), "{filled}");
    }

    #[test]
    fn delivery_blocks_follow_the_condition() {
        assert!(prompts("hidden").initial.contains("Nobody is available to answer questions."));
        assert!(prompts("interact").initial.contains("expects to be consulted"));
        let req = prompts("interact-req").initial;
        assert!(req.contains("Before you build anything, ask the client"));
        assert!(!req.contains("refused"), "{req}");
        let gated = prompts("interact-req+gate=on").initial;
        assert!(gated.contains("are refused until you have asked at least one question"));
        assert!(gated.contains("contains no question mark"));
        assert!(prompts("full-info").initial.contains("business information"));
        assert!(prompts("oracle:1").initial.contains("or says that there are none"));
    }

    #[test]
    fn the_blind_prompt_is_neutral() {
        let p = prompts("blind").initial;
        for word in ["ask_user", "question", "missing", "earlier", "previous", "predecessor", "clarif", "incomplete"] {
            assert!(!p.to_lowercase().contains(word), "`{word}` in {p}");
        }
        // The submission budget is in `submit`'s description (issue 13), the rest here.
        // Seed 001's protocol: specgap's budget, no harness loop rule, the wall clock not told.
        assert!(p.contains("Budget: 120 turns and 360 tool calls."), "{p}");
        assert!(p.contains("Your first submission ends the work."), "{p}");
        assert!(p.contains("The work also ends when any budget runs out, and when your context overflows;"), "{p}");
    }
}
