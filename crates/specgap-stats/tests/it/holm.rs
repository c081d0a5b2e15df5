//! Holm adjustment against statsmodels.stats.multitest.multipletests(method='holm').

use crate::fixture::{arguments, assert_close, cases, floats, num};
use specgap_stats::{StatsError, holm_adjust};

#[test]
fn matches_statsmodels_on_every_fixture_family() {
    for case in cases("holm") {
        let p = floats(&arguments(case)["pvals"]);
        let adjusted = holm_adjust(&p).unwrap();
        let expected = case["result"]["pvals_corrected"].as_array().expect("list");
        let reject = case["result"]["reject"].as_array().expect("list");
        assert_eq!(adjusted.len(), expected.len());
        for (i, (ours, theirs)) in adjusted.iter().zip(expected).enumerate() {
            let context = format!("{} [{i}]", case["name"]);
            // A product and a running maximum: equal up to one rounding of the product.
            assert_close(*ours, num(theirs), 1e-15, &context);
            // Holm's step-down rejects exactly the hypotheses whose adjusted p is <= alpha.
            assert_eq!(*ours <= 0.05, reject[i].as_bool().expect("bool"), "{context}");
        }
    }
}

#[test]
fn out_of_range_p_values_are_rejected() {
    assert_eq!(holm_adjust(&[0.1, -0.01]), Err(StatsError::OutOfRange { what: "p-value", expected: "[0, 1]", value: -0.01 }));
}
