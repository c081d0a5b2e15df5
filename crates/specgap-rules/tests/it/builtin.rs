//! The built-in protocols carry the papers' numbers (seed 000 §5.1, App. F; seed 002 §5.1, A.3).

use specgap_rules::{EndRules, Panel, RoleName, builtin, builtin_names, fde_bench, swe_residual, tiganeval};

#[test]
fn tiganeval_has_seed_000s_budgets_and_four_loop_rules_and_no_no_tool_call_rule() {
    let p = tiganeval();
    assert_eq!(p.conditions, ["partial", "full", "literal", "plan"]);
    assert_eq!(p.starts, ["clean"]);
    assert_eq!((p.budgets.turns, p.budgets.tool_calls, p.budgets.wall_sec, p.budgets.submissions), (120, 360, 0, 4));
    assert!(!p.budgets.announce_wall);
    assert_eq!(p.end_rules, EndRules { repeated_call: 4, blank_output: 4, ask_user: 4, no_tool_call: 0, refusals: 3 });
    assert_eq!(p.end_rules.no_tool_call(), None);
    assert_eq!(p.end_rules.repeated_call(), Some(4));
    assert_eq!(p.model_roles(), [(RoleName::Owner, Panel { models: 1, agree: 1 })]);
}

#[test]
fn fde_bench_has_seed_002s_wall_clock_no_step_cap_and_thirty_rounds() {
    let p = fde_bench();
    assert_eq!(p.conditions, ["hidden", "interact", "interact-req", "full-info", "oracle"]);
    assert_eq!((p.budgets.turns, p.budgets.tool_calls, p.budgets.wall_sec), (0, 0, 43_200));
    assert_eq!((p.budgets.submissions, p.budgets.clarification_rounds, p.repeats), (1, 30, 3));
    assert_eq!(p.end_rules, EndRules { repeated_call: 0, blank_output: 0, ask_user: 0, no_tool_call: 2, refusals: 0 });
    assert_eq!(p.end_rules.blank_output(), None);
    let roles: Vec<(&str, String)> = p.model_roles().iter().map(|(r, panel)| (r.as_str(), panel.describe())).collect();
    assert_eq!(
        roles,
        [
            ("customer", "one model".to_string()),
            ("coverage judge", "5 models, at least 3 agree".to_string()),
            ("question detector", "one model".to_string()),
            ("extractors", "5 models, at least 3 agree".to_string()),
        ]
    );
}

#[test]
fn swe_residual_offers_blind_from_both_starts_with_no_loop_rule_and_no_model_role() {
    let p = swe_residual();
    assert_eq!(p.conditions, ["blind"]);
    assert_eq!(p.starts, ["clean", "residual"]);
    assert_eq!(p.end_rules, EndRules { repeated_call: 0, blank_output: 0, ask_user: 0, no_tool_call: 0, refusals: 0 });
    assert!(p.model_roles().is_empty());
    assert!(p.offers_start("residual:r1"));
}

#[test]
fn every_builtin_round_trips_through_its_toml_table() {
    for name in builtin_names() {
        let p = builtin(name).unwrap();
        let table = p.to_toml().unwrap();
        assert_eq!(specgap_rules::Protocol::from_toml(table).unwrap(), p, "{name}");
    }
    assert_eq!(builtin("custom"), None);
}
