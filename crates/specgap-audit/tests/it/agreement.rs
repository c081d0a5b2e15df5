//! The report's statistics against scikit-learn / scipy on the same labels and resamples
//! (`scripts/stats-reference/audit_reference.py`, numpy 2.3.5, scipy 1.17.1, scikit-learn 1.8.0).

use specgap_audit::agreement::{Clusters, IntervalConfig, cluster_estimate, kappa_of, percent_agreement, weighted_share};

/// (case, weight, rater A, rater B): the `LABELS` of audit_reference.py.
const LABELS: [(&str, f64, &str, &str); 24] = [
    ("c1", 1.0, "covered", "covered"),
    ("c1", 1.0, "uncovered", "uncovered"),
    ("c1", 1.0, "covered", "uncertain"),
    ("c2", 2.0, "covered", "covered"),
    ("c2", 2.0, "covered", "uncovered"),
    ("c2", 2.0, "uncovered", "uncovered"),
    ("c3", 1.5, "uncertain", "uncertain"),
    ("c3", 1.5, "covered", "covered"),
    ("c3", 1.5, "uncovered", "covered"),
    ("c4", 1.0, "uncovered", "uncovered"),
    ("c4", 1.0, "uncovered", "uncovered"),
    ("c4", 1.0, "covered", "covered"),
    ("c5", 3.0, "covered", "covered"),
    ("c5", 3.0, "covered", "covered"),
    ("c5", 3.0, "uncertain", "covered"),
    ("c6", 1.0, "uncovered", "covered"),
    ("c6", 1.0, "uncovered", "uncovered"),
    ("c6", 1.0, "covered", "covered"),
    ("c7", 2.5, "covered", "uncovered"),
    ("c7", 2.5, "uncovered", "uncovered"),
    ("c7", 2.5, "uncovered", "uncertain"),
    ("c8", 1.0, "covered", "covered"),
    ("c8", 1.0, "uncertain", "uncertain"),
    ("c8", 1.0, "uncovered", "uncovered"),
];

fn close(actual: f64, expected: f64) {
    assert!((actual - expected).abs() <= 1e-12, "{actual} != {expected}");
}

fn check(estimate: specgap_audit::agreement::Estimate, value: f64, low: f64, high: f64) {
    close(estimate.value, value);
    close(estimate.low.unwrap(), low);
    close(estimate.high.unwrap(), high);
    assert_eq!(estimate.undefined_resamples, 0);
}

#[test]
fn agreement_kappa_and_shares_with_case_cluster_intervals_equal_sklearn_and_scipy() {
    let config = IntervalConfig { n_resamples: 5000, confidence_level: 0.95, seed: 2026 };
    for without_uncertain in [false, true] {
        let rows: Vec<_> = LABELS.iter().filter(|r| !without_uncertain || (r.2 != "uncertain" && r.3 != "uncertain")).collect();
        let clusters = Clusters::of(&rows.iter().map(|r| r.0).collect::<Vec<_>>());
        let a: Vec<&str> = rows.iter().map(|r| r.2).collect();
        let b: Vec<&str> = rows.iter().map(|r| r.3).collect();
        let weights: Vec<f64> = rows.iter().map(|r| r.1).collect();
        let covered: Vec<bool> = a.iter().map(|v| *v == "covered").collect();
        let percent = cluster_estimate(&clusters, |items| percent_agreement(&a, &b, items), &config).unwrap();
        let kappa = cluster_estimate(&clusters, |items| kappa_of(&a, &b, items), &config).unwrap();
        let share = cluster_estimate(&clusters, |items| weighted_share(&weights, &covered, items), &config).unwrap();
        if without_uncertain {
            // audit_reference.py "[uncertain left out]": numpy.mean(a == b); cohen_kappa_score;
            // scipy.stats.bootstrap(method='percentile', bootstrap_result=...) over the 5,000
            // case resamples of seed 2026.
            check(percent, 0.7894736842105263, 0.6470588235294118, 0.9444444444444444);
            check(kappa, 0.5777777777777777, 0.29166666666666663, 0.8811188811188811);
            check(share, 0.6, 0.4249519230769233, 0.7763157894736842);
        } else {
            // audit_reference.py "[all items]", as above.
            check(percent, 0.7083333333333334, 0.5833333333333334, 0.8333333333333334);
            check(kappa, 0.5240793201133145, 0.2857142857142857, 0.7384373889349599);
            check(share, 0.48717948717948717, 0.35802469135802467, 0.6049663299663296);
        }
    }
}

#[test]
fn one_case_gives_no_interval_and_undefined_kappas_are_counted() {
    let config = IntervalConfig::new(1);
    let one = Clusters::of(&["c", "c"]);
    let estimate = cluster_estimate(&one, |items| kappa_of(&["x", "y"], &["x", "y"], items), &config).unwrap();
    assert_eq!((estimate.value, estimate.low, estimate.high), (1.0, None, None));
    // Two cases, each labelled with one value by both raters: a resample that draws one case
    // twice has kappa 0/0; about half of the resamples do.
    let two = Clusters::of(&["c1", "c2"]);
    let a = ["x", "y"];
    let estimate = cluster_estimate(&two, |items| kappa_of(&a, &a, items), &IntervalConfig { n_resamples: 1000, ..config }).unwrap();
    assert_eq!(estimate.value, 1.0);
    assert!(estimate.undefined_resamples > 0 && estimate.undefined_resamples < 1000, "{}", estimate.undefined_resamples);
    assert_eq!((estimate.low, estimate.high), (Some(1.0), Some(1.0)));
}
