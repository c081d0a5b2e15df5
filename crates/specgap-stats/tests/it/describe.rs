//! mean, median, sample sd and average ranks against numpy / scipy.

use crate::fixture::{arguments, assert_close, cases, floats, num};
use specgap_stats::{mean, mean_or_nan, mean_sd, median, rank_average, sample_sd};

#[test]
fn matches_numpy_and_scipy() {
    for case in cases("describe") {
        let x = floats(&arguments(case)["x"]);
        let expected = &case["result"];
        let context = case["name"].to_string();
        // Same pairwise summation as numpy, so bit-for-bit equal.
        assert_close(mean(&x).unwrap(), num(&expected["mean"]), 0.0, &context);
        assert_close(mean_or_nan(&x), num(&expected["mean"]), 0.0, &context);
        assert_close(median(&x).unwrap(), num(&expected["median"]), 0.0, &context);
        assert_close(sample_sd(&x).unwrap(), num(&expected["sd"]), 1e-14, &context);
        let summary = mean_sd(&x).unwrap();
        assert_close(summary.sd, num(&expected["sd"]), 1e-14, &context);
        assert_eq!(summary.n, x.len());
        let ranks: Vec<f64> = expected["ranks"].as_array().expect("list").iter().map(num).collect();
        assert_eq!(rank_average(&x).unwrap(), ranks, "{context}");
    }
}

#[test]
fn replicate_summary_by_hand() {
    // Replicates 1, 2, 6: mean 3; squared deviations 4 + 1 + 9 = 14; sd = sqrt(14 / 2) = sqrt(7).
    let summary = mean_sd(&[1.0, 2.0, 6.0]).unwrap();
    assert_eq!(summary.mean, 3.0);
    assert_eq!(summary.sd, 7.0_f64.sqrt());
}
