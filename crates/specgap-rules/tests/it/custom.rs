//! Custom protocol files: every rule listed, errors name the file and the key.

use std::path::Path;

use specgap_rules::{EndRules, Panel, ProtocolFileError, by_spec, parse_custom};

const GOOD: &str = r#"
format = 1
description = "residual start x partial instruction x owner"
conditions = ["partial"]
starts = ["clean", "residual"]
repeats = 2

[budgets]
turns = 60
tool_calls = 200
wall_sec = 0
submissions = 4
clarification_rounds = 0
announce_wall = false

[end_rules]
repeated_call = 4
blank_output = 0
ask_user = 4
no_tool_call = 0
refusals = 3

[roles.owner]
models = 1
agree = 1
"#;

fn parse(text: &str) -> Result<specgap_rules::Protocol, ProtocolFileError> {
    parse_custom(text, Path::new("rules/mix.toml"))
}

#[test]
fn a_complete_file_is_the_custom_protocol() {
    let p = parse(GOOD).unwrap();
    assert_eq!(p.name, "custom");
    assert_eq!(p.source, "custom protocol file rules/mix.toml: residual start x partial instruction x owner");
    assert_eq!((p.budgets.turns, p.budgets.tool_calls, p.repeats), (60, 200, 2));
    assert_eq!(p.end_rules, EndRules { repeated_call: 4, blank_output: 0, ask_user: 4, no_tool_call: 0, refusals: 3 });
    assert_eq!(p.roles.owner, Some(Panel { models: 1, agree: 1 }));
    assert!(p.check_offers(["partial"], ["residual:r1"]).is_ok());
}

#[test]
fn a_missing_key_names_the_file_and_the_key() {
    let text = GOOD.replace("refusals = 3\n", "");
    let message = parse(&text).unwrap_err().to_string();
    assert!(message.starts_with("protocol file rules/mix.toml: "), "{message}");
    assert!(message.contains("missing field `refusals`"), "{message}");
}

#[test]
fn an_unknown_key_names_the_file_and_the_key() {
    let text = GOOD.replace("refusals = 3", "refusals = 3\nno_tool_calls = 2");
    let message = parse(&text).unwrap_err().to_string();
    assert!(message.starts_with("protocol file rules/mix.toml: "), "{message}");
    assert!(message.contains("unknown field `no_tool_calls`"), "{message}");
}

#[test]
fn a_value_of_the_wrong_type_names_the_file_and_its_line() {
    let text = GOOD.replace("turns = 60", "turns = \"sixty\"");
    let message = parse(&text).unwrap_err().to_string();
    assert!(message.starts_with("protocol file rules/mix.toml: "), "{message}");
    assert!(message.contains("turns = \"sixty\""), "{message}");
}

#[test]
fn values_out_of_range_name_the_key() {
    let cases = [
        (GOOD.replace("format = 1", "format = 2"), "protocol file rules/mix.toml: `format` is 2; this specgap reads format 1"),
        (
            GOOD.replace("conditions = [\"partial\"]", "conditions = [\"parital\"]"),
            "protocol file rules/mix.toml: `conditions` has `parital`; expected partial, full, literal, plan, blind, hidden, interact, interact-req, full-info or oracle",
        ),
        (
            GOOD.replace("starts = [\"clean\", \"residual\"]", "starts = [\"dirty\"]"),
            "protocol file rules/mix.toml: `starts` has `dirty`; expected clean or residual",
        ),
        (GOOD.replace("repeats = 2", "repeats = 0"), "protocol file rules/mix.toml: `repeats` is 0; expected at least 1"),
        (
            GOOD.replace("submissions = 4", "submissions = 0"),
            "protocol file rules/mix.toml: `budgets.submissions` is 0; expected at least 1",
        ),
        (GOOD.replace("agree = 1", "agree = 2"), "protocol file rules/mix.toml: `roles.owner.agree` is 2; expected 1 to 1"),
    ];
    for (text, expected) in cases {
        assert_eq!(parse(&text).unwrap_err().to_string(), expected);
    }
}

#[test]
fn an_unreadable_file_names_its_path() {
    let message = by_spec("/nonexistent/protocol.toml").unwrap_err().to_string();
    assert!(message.starts_with("cannot read protocol file /nonexistent/protocol.toml: "), "{message}");
}
