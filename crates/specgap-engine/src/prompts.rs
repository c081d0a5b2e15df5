//! System prompts and the opening message (DESIGN §3.3, §4).
//!
//! The prompt texts live in `src/prompts/*.md`, written in this project's own words from the
//! intent of seed 000 Appendix F (evidence, literal, plan then execute), seed 001 §3.2 (the
//! neutral prompt of blind continuation) and seed 002 A.9.1 (delivery, with one block per
//! condition). `{name}` placeholders are filled here with the
//! episode's budget and the rules that apply to its condition. Any change to a prompt text
//! must bump [`PROMPT_VERSION`], which is part of every agent configuration in `run.toml`.

use specgap_task::TaskPackage;

use crate::condition::{Ask, Budgets, Condition, OpeningKind, PromptKind, oracle_targets};

/// Version of the prompt texts; bump on any change to `src/prompts/*.md` or to this module's
/// fill-ins.
pub const PROMPT_VERSION: &str = "4";

const EVIDENCE: &str = include_str!("prompts/evidence.md");
const LITERAL: &str = include_str!("prompts/literal.md");
const PLAN: &str = include_str!("prompts/plan.md");
const PLAN_EXECUTE: &str = include_str!("prompts/plan_execute.md");
const NEUTRAL: &str = include_str!("prompts/neutral.md");
const DELIVERY: &str = include_str!("prompts/delivery.md");
const DELIVERY_HIDDEN: &str = include_str!("prompts/delivery_hidden.md");
const DELIVERY_INTERACT: &str = include_str!("prompts/delivery_interact.md");
const DELIVERY_INTERACT_REQ: &str = include_str!("prompts/delivery_interact_req.md");
const DELIVERY_FULL_INFO: &str = include_str!("prompts/delivery_full_info.md");
const DELIVERY_ORACLE: &str = include_str!("prompts/delivery_oracle.md");

/// The heading of the registered answers in an `oracle:R` opening message.
pub const SETTLED_POINTS: &str = "Points the client has already settled:";
/// What an `oracle:0` opening message says in place of the answers.
pub const NO_SETTLED_POINTS: &str = "Points the client has already settled: none.";

/// The system prompts of one episode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SystemPrompts {
    /// The prompt the agent starts with.
    pub initial: String,
    /// Plan mode only: the execution-phase text, handed to the agent in the result of its
    /// successful `write_plan` (seed 000 F.3 switches prompts at that point).
    pub execute_phase: Option<String>,
}

/// Renders the system prompt(s) of `condition` with `budgets` filled in.
pub fn system_prompts(condition: &Condition, budgets: &Budgets) -> SystemPrompts {
    let fills = Fills::new(condition, budgets);
    let initial = match condition.prompt() {
        PromptKind::Evidence => fills.render(EVIDENCE),
        PromptKind::Literal => fills.render(LITERAL),
        PromptKind::Plan => fills.render(PLAN),
        PromptKind::Neutral => fills.render(NEUTRAL),
        PromptKind::Delivery | PromptKind::DeliveryClarifyFirst => {
            let block = delivery_block(condition);
            fills.render(&DELIVERY.replace("{condition_note}", block.trim_end()))
        }
    };
    let execute_phase = condition.is_plan().then(|| fills.render(PLAN_EXECUTE).trim_end().to_string());
    SystemPrompts { initial: initial.trim_end().to_string(), execute_phase }
}

fn delivery_block(condition: &Condition) -> &'static str {
    match (condition.opening(), condition.ask()) {
        (OpeningKind::InstructionAndInformation, _) => DELIVERY_FULL_INFO,
        (OpeningKind::InstructionAndAnswers, _) => DELIVERY_ORACLE,
        (_, Ask::Off) => DELIVERY_HIDDEN,
        _ if condition.prompt() == PromptKind::DeliveryClarifyFirst => DELIVERY_INTERACT_REQ,
        _ => DELIVERY_INTERACT,
    }
}

/// The placeholder values of one episode.
struct Fills {
    pairs: Vec<(&'static str, String)>,
}

impl Fills {
    fn new(condition: &Condition, budgets: &Budgets) -> Self {
        let asks = condition.ask() != Ask::Off;
        let ask_note = if asks && !condition.is_delivery() {
            " You can put a question to the owner with `ask_user`; they answer from what they know.".to_string()
        } else {
            String::new()
        };
        let ask_plan_note = if asks { ", and so is asking the owner with `ask_user`" } else { "" };
        // The hard clarify-first gate is an explicit option (`interact-req+gate=on`); without
        // it nothing is withheld (seed 002 §4.1).
        let gate_note = if condition.ask() == Ask::Required {
            " Editing files, running commands and submitting are refused until you have asked at least one question \
             and then told the client, with an `ask_user` message or a reply that contains no question mark, that \
             you have what you need."
        } else {
            ""
        };
        let submissions_word = if budgets.submissions == 1 { "submission" } else { "submissions" };
        // Without feedback the first delivery ends the work, whatever it scores, so the agent
        // must not expect to hear back (seed 000's no-feedback ablation).
        let (submit_note, literal_submit_note) = if condition.feedback() {
            (
                "If they accept it, the job is done. If they do not, they tell you what they saw when they used it, and the returned delivery has used up one of your submissions.",
                "They may reply with a new request; act on what they ask and nothing more. A returned delivery uses up one of your submissions.",
            )
        } else {
            (
                "You deliver once: the owner reviews what you hand over without reporting back, and the job ends there.",
                "You deliver once: the owner takes what you hand over without replying, and the job ends there.",
            )
        };
        let neutral_submit_note = if condition.feedback() {
            "A delivery that is returned comes back with a message about what was observed, and it uses up one of your submissions."
        } else {
            "Your first submission ends the work."
        };
        let budget_note = format!(
            "Budget: {} {submissions_word}, {} turns, {} tool calls and {} minutes of wall-clock time.",
            budgets.submissions,
            budgets.turns,
            budgets.tool_calls,
            budgets.wall_sec.div_ceil(60),
        );
        Fills {
            pairs: vec![
                ("{ask_note}", ask_note),
                ("{submit_note}", submit_note.to_string()),
                ("{literal_submit_note}", literal_submit_note.to_string()),
                ("{ask_plan_note}", ask_plan_note.to_string()),
                ("{gate_note}", gate_note.to_string()),
                ("{neutral_submit_note}", neutral_submit_note.to_string()),
                ("{budget_note}", budget_note),
                ("{rules_note}", rules_note(condition, budgets)),
                ("{submissions}", budgets.submissions.to_string()),
                ("{submissions_word}", submissions_word.to_string()),
            ],
        }
    }

    fn render(&self, template: &str) -> String {
        self.pairs.iter().fold(template.to_string(), |text, (key, value)| text.replace(key, value))
    }
}

/// The end rules and turn rules of a condition, in words (DESIGN §3.5).
fn rules_note(condition: &Condition, budgets: &Budgets) -> String {
    let asks = condition.ask() != Ask::Off;
    let ask_loop = if asks && !condition.is_delivery() { ", on the fourth question to the owner in a row" } else { "" };
    // Seed 002 A.9.3: past the round limit the client asks the agent to go on; the work goes on.
    let rounds_note = if asks && condition.is_delivery() {
        format!(
            " The client answers up to {} rounds of questions (one `ask_user` call or one reply with questions is \
             one round, however many questions it holds); after that they ask you to go on with your best judgement.",
            budgets.clarification_rounds
        )
    } else {
        String::new()
    };
    let mut alone = vec!["`submit`"];
    if asks {
        alone.push("`ask_user`");
    }
    if condition.is_plan() {
        alone.push("`write_plan`");
    }
    let alone_rule = match alone.as_slice() {
        [one] => format!("{one} must be the only call in its turn"),
        [init @ .., last] => format!("{} and {last} must each be the only call in their turn", init.join(", ")),
        [] => String::new(),
    };
    format!(
        "The work also ends when any budget runs out, on the fourth identical call in a row (same tool, same \
         arguments), on the fourth command in a row that succeeds without printing anything{ask_loop}, when your \
         context overflows, and after three refusals in a row; the current workspace is then submitted \
         automatically if it changed since your last submission. A reply without any tool call gets one reminder; \
         a second such reply in a row ends the work. Every path is relative to the workspace. Independent tools may \
         be called together in one turn; {alone_rule}.{rounds_note}"
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
        }
    }

    #[test]
    fn budget_and_rules_are_filled() {
        let p = prompts("partial");
        assert!(
            p.initial.contains("Budget: 4 submissions, 120 turns, 360 tool calls and 60 minutes of wall-clock time.")
        );
        assert!(p.initial.contains("`submit` and `ask_user` must each be the only call in their turn."));
        assert!(p.initial.contains("on the fourth question to the owner in a row"));
        let l = prompts("literal");
        assert!(l.initial.contains("`submit` must be the only call in its turn."));
        assert!(!l.initial.contains("ask_user"));
        let d = prompts("interact");
        assert!(d.initial.contains(
            "The client answers up to 30 rounds of questions (one `ask_user` call or one reply with questions is one \
             round, however many questions it holds); after that they ask you to go on with your best judgement."
        ));
        assert!(d.initial.contains("under a heading `## Questions for the client`"));
        assert!(d.initial.contains("you have 1 submission."));
        let q = prompts("plan");
        assert!(q.initial.contains("`submit`, `ask_user` and `write_plan` must each be the only call in their turn."));
    }

    #[test]
    fn without_feedback_the_agent_is_told_it_delivers_once() {
        for text in ["partial+feedback=off", "partial+feedback=off+submissions=3", "literal+feedback=off"] {
            let p = prompts(text);
            assert!(p.initial.contains("Budget: 1 submission, 120 turns"), "{text}: {}", p.initial);
            assert!(p.initial.contains("You deliver once:"), "{text}");
            assert!(!p.initial.contains("uses up one of your submissions") && !p.initial.contains("used up one of your submissions"), "{text}");
        }
        assert!(prompts("partial").initial.contains("they tell you what they saw when they used it"));
        assert!(prompts("literal").initial.contains("A returned delivery uses up one of your submissions."));
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
        assert!(p.contains("Budget: 1 submission, 120 turns"), "{p}");
    }
}
