//! The three papers' protocols, with the section of the paper behind every value.

use crate::{BudgetRules, EndRules, Panel, Protocol, Roles};

/// One model plays the role.
const ONE_MODEL: Panel = Panel { models: 1, agree: 1 };
/// Seed 002's panels: five models, a verdict needs three agreeing (§4.1 coverage: "at least
/// three of five judgments agree"; A.4 extraction: "a score is recorded when at least three
/// routes agree").
const FIVE_OF_WHICH_THREE: Panel = Panel { models: 5, agree: 3 };

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| (*s).to_string()).collect()
}

/// Seed 000 (TiGanEval): partial, full, literal and plan on requirement tasks from a clean
/// start. Budgets: up to four submissions with feedback, one without, 120 turns and 360 tool
/// calls per episode (§5.1), no wall clock (none is named). End rules (App. F, every agent
/// prompt; Algorithm 1 of App. D): budget exhaustion, the fourth consecutive identical call, the
/// fourth consecutive `run_experiment` that succeeds with blank output, the fourth consecutive
/// owner question, context overflow and persistent content filtering (read as three
/// refusals); no rule ends an episode for replies without a tool call. The owner is a model
/// (App. F.4). Measures: Score@k / Success@k, the outcome cost Full@1 − Partial@k, In-round /
/// Ahead (§5.2, §5.3).
pub fn tiganeval() -> Protocol {
    Protocol {
        name: "tiganeval".into(),
        source: "seed 000 (TiGanEval) §4.1, §5.1, App. D Algorithm 1, App. F".into(),
        conditions: strings(&["partial", "full", "literal", "plan"]),
        starts: strings(&["clean"]),
        budgets: BudgetRules { turns: 120, tool_calls: 360, wall_sec: 0, submissions: 4, clarification_rounds: 0, announce_wall: false },
        end_rules: EndRules { repeated_call: 4, blank_output: 4, ask_user: 4, no_tool_call: 0, refusals: 3 },
        roles: Roles { owner: Some(ONE_MODEL), ..Roles::default() },
        repeats: 1,
        measures: strings(&[
            "Score@k and Success@k, k = 1..4",
            "outcome cost Full@1 - Partial@k",
            "In-round and Ahead resolution",
            "per-family breakdown",
        ]),
    }
}

/// Seed 001 (SWE-Residual): blind continuation from the clean and the residual starts. The
/// paper fixes that the request, verifier, harness, prompt and budget are identical for both
/// starts (§4.1) and takes the budget from the source benchmark's defaults; the harness is the
/// source benchmark's scaffold (mini-swe-agent, Terminus-2), whose own rules end its runs, so
/// specgap adds no loop rule. specgap's defaults (120 turns, 360 tool calls, 3,600 s, not
/// announced by the neutral prompt) stand in for the source benchmark's where the task's
/// `[budget]` names none. No role is a model. Measures: Res, Clean, Residual Gap, CondFail and
/// the acceptance-bias measures (App. C, D).
pub fn swe_residual() -> Protocol {
    Protocol {
        name: "swe-residual".into(),
        source: "seed 001 (SWE-Residual) §3.2, §4.1, App. C, App. D".into(),
        conditions: strings(&["blind"]),
        starts: strings(&["clean", "residual"]),
        budgets: BudgetRules { turns: 120, tool_calls: 360, wall_sec: 3600, submissions: 1, clarification_rounds: 0, announce_wall: false },
        end_rules: EndRules { repeated_call: 0, blank_output: 0, ask_user: 0, no_tool_call: 0, refusals: 0 },
        roles: Roles::default(),
        repeats: 1,
        measures: strings(&[
            "Res, Clean, Residual Gap, CondFail",
            "Same failing, Initially failing, Kept, Left-out files, Steps ratio, inspection",
        ]),
    }
}

/// Seed 002 (FDE-Bench): hidden, interact, interact-req, full-info and oracle:R on delivery
/// cases from a clean start. Budgets (§5.1, A.3): 43,200 s per solving run including
/// interaction, at most 30 clarification rounds, no cap on steps, questions or tokens; one
/// submission; the prompt (A.9.1) states no time budget. No loop rule of seed 000 applies; a
/// reply without a tool call ends the run on the second in a row, as a scaffold stops when its
/// model stops calling tools (docs/decisions.md "Named protocols"). Model roles: one simulated
/// customer (§4.1), a question detector (A.9.3), a five-judge coverage panel (at least three
/// agree, §4.1) and five extraction routes (at least three agree, A.4). Each system solves each
/// case three times (§5.1). Measures: Quality, DSR, pass@3, pass^3, the question measures and
/// the statistics of §5.1.
pub fn fde_bench() -> Protocol {
    Protocol {
        name: "fde-bench".into(),
        source: "seed 002 (FDE-Bench) §4.1, §5.1, App. A.3, A.4, A.9".into(),
        conditions: strings(&["hidden", "interact", "interact-req", "full-info", "oracle"]),
        starts: strings(&["clean"]),
        budgets: BudgetRules { turns: 0, tool_calls: 0, wall_sec: 43_200, submissions: 1, clarification_rounds: 30, announce_wall: false },
        end_rules: EndRules { repeated_call: 0, blank_output: 0, ask_user: 0, no_tool_call: 2, refusals: 0 },
        roles: Roles {
            owner: None,
            customer: Some(ONE_MODEL),
            coverage_judge: Some(FIVE_OF_WHICH_THREE),
            question_detector: Some(ONE_MODEL),
            extractors: Some(FIVE_OF_WHICH_THREE),
        },
        repeats: 3,
        measures: strings(&[
            "Quality, DSR, pass@3, pass^3",
            "Recall, Precision, Ask-F1, KQC1, ATC, Redund.",
            "bootstrap intervals, Wilcoxon signed-rank with Holm, Spearman",
            "zero-score signatures, oracle-coverage curve",
        ]),
    }
}

/// The built-in protocol called `name`, if any.
pub fn builtin(name: &str) -> Option<Protocol> {
    match name {
        "tiganeval" => Some(tiganeval()),
        "swe-residual" => Some(swe_residual()),
        "fde-bench" => Some(fde_bench()),
        _ => None,
    }
}

/// The names of the built-in protocols.
pub fn builtin_names() -> [&'static str; 3] {
    ["tiganeval", "swe-residual", "fde-bench"]
}
