//! Without --protocol a condition runs under its paper's protocol; mixes need one named.

use specgap_rules::{ProtocolError, SelectError, by_conditions, select};

#[test]
fn each_papers_conditions_select_that_papers_protocol() {
    assert_eq!(by_conditions(["partial", "full"], ["clean"]).unwrap().name, "tiganeval");
    assert_eq!(by_conditions(["plan", "literal"], ["clean"]).unwrap().name, "tiganeval");
    assert_eq!(by_conditions(["blind"], ["clean", "residual:r1"]).unwrap().name, "swe-residual");
    assert_eq!(by_conditions(["hidden", "oracle:0.5"], ["clean"]).unwrap().name, "fde-bench");
}

#[test]
fn a_residual_start_under_a_partial_instruction_needs_a_named_protocol() {
    let err = by_conditions(["partial"], ["residual:r1"]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "the run combines condition partial, start residual:r1, which belong to different papers' protocols; name one \
         with --protocol (a custom protocol file lists the rules of a combination)"
    );
    assert!(matches!(by_conditions(["partial", "hidden"], ["clean"]), Err(ProtocolError::Mixed { .. })));
}

#[test]
fn a_named_protocol_checks_what_it_offers() {
    let p = select(Some("tiganeval"), ["hidden"], ["clean"]).unwrap();
    assert_eq!(
        p.check_offers(["hidden"], ["clean"]).unwrap_err().to_string(),
        "protocol tiganeval does not offer condition hidden (it offers partial, full, literal, plan); use --protocol \
         with a protocol that does, or a custom protocol file"
    );
    assert!(
        p.check_offers(["partial"], ["residual:r1"])
            .unwrap_err()
            .to_string()
            .starts_with("protocol tiganeval does not offer residual starts")
    );
    assert!(p.check_offers(["partial", "plan"], ["clean"]).is_ok());
    assert!(matches!(select(Some("tigan"), ["partial"], ["clean"]), Err(SelectError::Protocol(ProtocolError::Unknown(_)))));
}
