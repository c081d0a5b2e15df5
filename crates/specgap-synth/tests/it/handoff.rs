//! Hand-off parsing: schema errors and rule errors name the field.

use serde_json::json;
use specgap_synth::handoff::{AuditorVerdict, BriefLimits, BuilderHandoff, CalibratorVerdict, PlannerBrief, parse};

use crate::support::brief;

fn brief_error(edit: impl FnOnce(&mut serde_json::Value)) -> String {
    let mut value = brief();
    edit(&mut value);
    parse::<PlannerBrief>(&value.to_string(), &BriefLimits::default()).unwrap_err().to_string()
}

#[test]
fn the_payment_retry_brief_parses() {
    let parsed: PlannerBrief = parse(&brief().to_string(), &BriefLimits::default()).unwrap();
    assert_eq!(parsed.requirements.len(), 5);
    assert_eq!(parsed.stated, vec!["retry-timeouts".to_owned()]);
}

#[test]
fn brief_rules_name_the_field() {
    assert_eq!(
        brief_error(|b| b["requirements"].as_array_mut().unwrap().truncate(4)),
        "the planner hand-off breaks a rule at `requirements`: has 4 requirements; the brief must have exactly 5"
    );
    assert_eq!(
        brief_error(|b| {
            b["stated"] = json!(["retry-timeouts", "charge-once", "declines-final"]);
            b["withheld"] = json!(["respect-busy-wait", "checkout-deadline"]);
        }),
        "the planner hand-off breaks a rule at `withheld`: withholds 2 requirements; at least 3 must be withheld (--min-withheld)"
    );
    assert_eq!(
        brief_error(|b| b["withheld"] = json!(["charge-once", "declines-final", "respect-busy-wait"])),
        "the planner hand-off breaks a rule at `stated`: requirement `checkout-deadline` is neither stated nor withheld"
    );
    assert_eq!(
        brief_error(|b| b["failure_modes"][1]["detail"] = json!("  ")),
        "the planner hand-off breaks a rule at `failure_modes[1].detail`: must not be blank"
    );
    assert_eq!(
        brief_error(|b| b["requirements"][0]["id"] = json!("Charge Once")),
        "the planner hand-off breaks a rule at `requirements[0].id`: `Charge Once` is not a lowercase, hyphenated id"
    );
    assert_eq!(
        brief_error(|b| b["leak_risks"] = json!([])),
        "the planner hand-off breaks a rule at `leak_risks`: names no risk; the brief must name at least one with its countermeasure"
    );
}

#[test]
fn an_unknown_field_is_a_schema_error() {
    let message = brief_error(|b| b["persona"]["mood"] = json!("tired"));
    assert!(message.starts_with("the planner hand-off does not match its schema at `persona.mood`: unknown field `mood`"), "{message}");
}

#[test]
fn verdict_rules_name_the_field() {
    let limits = BriefLimits::default();
    let err = parse::<AuditorVerdict>(r#"{"verdict": "fix", "evidence": []}"#, &limits).unwrap_err();
    assert_eq!(err.to_string(), "the auditor hand-off breaks a rule at `fixes`: verdict `fix` needs at least one fix");
    let err = parse::<AuditorVerdict>(r#"{"verdict": "redesign", "evidence": []}"#, &limits).unwrap_err();
    assert_eq!(err.to_string(), "the auditor hand-off breaks a rule at `reason`: verdict `redesign` needs a reason");
    let err = parse::<AuditorVerdict>(r#"{"verdict": "maybe", "evidence": []}"#, &limits).unwrap_err().to_string();
    assert!(err.starts_with("the auditor hand-off does not match its schema at `verdict`: unknown variant `maybe`"), "{err}");
    let err = parse::<CalibratorVerdict>(
        r#"{"verdict": "ready", "rollouts": [{"rollout": "full-1", "condition": "full", "class": "gaming", "turns": [3], "note": "n"}]}"#,
        &limits,
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "the calibrator hand-off breaks a rule at `rollouts[0].class`: environment-defect and agent-limitation classify Full failures; legitimate-inference and gaming classify Partial or Literal successes"
    );
    let err = parse::<CalibratorVerdict>(
        r#"{"verdict": "ready", "rollouts": [{"rollout": "full-1", "condition": "full", "class": "agent-limitation", "turns": [], "note": "n"}]}"#,
        &limits,
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "the calibrator hand-off breaks a rule at `rollouts[0].turns`: cites no turn; every classification must cite the turns it rests on"
    );
    let err = parse::<BuilderHandoff>(r#"{"package": "../elsewhere", "summary": "s"}"#, &limits).unwrap_err();
    assert_eq!(
        err.to_string(),
        "the builder hand-off breaks a rule at `package`: `../elsewhere` leaves the working directory; give a relative path inside it"
    );
}
