//! Noise and power against `tests/fixtures/power.json` (statsmodels `TTestPower`, scipy
//! `nctdtr` and `f_oneway`, written by `scripts/stats-reference/power_reference.py`), hand-
//! computed flip rates, and the simulations within their Monte Carlo error.

use serde_json::Value;
use specgap_stats::{
    BinaryDesign, Simulation, flip_rate, monte_carlo_se, paired_t_detectable_effect, paired_t_nobs, paired_t_power,
    simulated_binary_detectable, simulated_binary_power, simulated_normal_power, variance_components, within_task_sd,
};

use crate::fixture::{assert_close, num};

fn power_fixture() -> Value {
    serde_json::from_str(include_str!("../fixtures/power.json")).expect("power.json parses")
}

fn section(name: &str) -> Vec<Value> {
    power_fixture()[name].as_array().expect("a section").clone()
}

#[test]
fn paired_t_power_matches_statsmodels() {
    for case in section("ttest_power") {
        let power = paired_t_power(num(&case["effect_size"]), num(&case["nobs"]), num(&case["alpha"])).unwrap();
        assert_close(power, num(&case["power"]), 1e-10, &format!("power {case}"));
    }
}

#[test]
fn detectable_effect_matches_statsmodels_solve_power() {
    for case in section("solve_effect") {
        let effect = paired_t_detectable_effect(num(&case["nobs"]), num(&case["alpha"]), num(&case["power"])).unwrap();
        // statsmodels' solve_power stops early (up to 3e-6 relative on the effect here); the tight root of its power function is
        // the exact comparison.
        assert_close(effect, num(&case["effect_size"]), 1e-5, &format!("effect {case}"));
        assert_close(effect, num(&case["effect_size_tight"]), 1e-11, &format!("effect {case}"));
    }
}

#[test]
fn tasks_needed_match_statsmodels_solve_power() {
    for case in section("solve_nobs") {
        let nobs = paired_t_nobs(num(&case["effect_size"]), num(&case["alpha"]), num(&case["power"])).unwrap();
        assert_close(nobs, num(&case["nobs"]), 1e-6, &format!("nobs {case}"));
        assert_close(nobs, num(&case["nobs_tight"]), 1e-11, &format!("nobs {case}"));
    }
}

#[test]
fn one_way_anova_estimator_matches_scipy_and_the_formula() {
    for case in section("variance_components") {
        let groups: Vec<Vec<f64>> =
            case["groups"].as_array().unwrap().iter().map(|g| g.as_array().unwrap().iter().map(num).collect()).collect();
        let slices: Vec<&[f64]> = groups.iter().map(Vec::as_slice).collect();
        let c = variance_components(&slices).unwrap();
        assert_close(c.ms_between, num(&case["ms_between"]), 1e-12, "ms_between");
        assert_close(c.ms_within, num(&case["ms_within"]), 1e-12, "ms_within");
        assert_close(c.ms_between / c.ms_within, num(&case["f_statistic"]), 1e-12, "F of f_oneway");
        assert_close(c.n0, num(&case["n0"]), 1e-12, "n0");
        assert_close(c.between_tasks, num(&case["between_tasks"]), 1e-12, "between");
    }
}

#[test]
fn flip_rate_and_within_sd_by_hand() {
    // Four repeats, one success: 3 of the 6 pairs disagree.
    assert_eq!(flip_rate(&[true, false, false, false]).unwrap(), 0.5);
    // numpy.std([0.5, 1.0], ddof=1) = 0.3535533905932738
    assert_eq!(within_task_sd(&[0.5, 1.0]).unwrap(), 0.3535533905932738);
    assert!(flip_rate(&[true]).is_err());
    assert!(within_task_sd(&[0.5]).is_err());
}

#[test]
fn normal_simulation_agrees_with_the_closed_form() {
    // 20 tasks, 2 repeats, Δ = 0.1, task sd 0.1, repeat sd 0.2: sd of a task difference
    // sqrt(0.01 + 2·0.04/2) = sqrt(0.05).
    let sim = Simulation { simulations: 4000, seed: 12345 };
    let simulated = simulated_normal_power(20, 2, 0.1, 0.1, 0.2, 0.05, &sim).unwrap();
    let closed = paired_t_power(0.1 / 0.05_f64.sqrt(), 20.0, 0.05).unwrap();
    let se = monte_carlo_se(closed, sim.simulations);
    assert!((simulated - closed).abs() < 4.0 * se, "simulated {simulated} closed {closed} se {se}");
    // Seeded: the same call gives the same number.
    assert_eq!(simulated, simulated_normal_power(20, 2, 0.1, 0.1, 0.2, 0.05, &sim).unwrap());
}

#[test]
fn binary_simulation_with_no_shift_holds_its_level() {
    let design = BinaryDesign { rates: vec![0.5; 30], repeats_a: vec![4; 30], repeats_b: vec![4; 30] };
    let sim = Simulation { simulations: 4000, seed: 7 };
    let size = simulated_binary_power(&design, 0.0, 0.05, &sim).unwrap();
    assert!((size - 0.05).abs() < 4.0 * monte_carlo_se(0.05, sim.simulations), "size {size}");
}

#[test]
fn binary_detectable_shift_reaches_its_power() {
    let design = BinaryDesign {
        rates: vec![0.2, 0.4, 0.5, 0.6, 0.3, 0.5, 0.4, 0.45, 0.55, 0.35, 0.5, 0.25],
        repeats_a: vec![3; 12],
        repeats_b: vec![3; 12],
    };
    let sim = Simulation { simulations: 2000, seed: 12345 };
    let found = simulated_binary_detectable(&design, 1.0, 0.05, 0.8, &sim).unwrap().unwrap();
    assert!(found.power >= 0.8);
    assert!(found.shift > 0.0 && found.shift < 0.5);
    // Just below the found shift the power is below the target (common random numbers).
    assert!(simulated_binary_power(&design, found.shift - 1e-3, 0.05, &sim).unwrap() < 0.8 + 0.02);
    // The closed form on the same design (binomial variances) is in the same place: with
    // rates p, the sd of a task difference is about sqrt(2·p(1−p)/3) ≈ 0.38.
    let closed = paired_t_detectable_effect(12.0, 0.05, 0.8).unwrap() * 0.38;
    assert!((found.difference - closed).abs() < 0.1, "simulated {} closed {closed}", found.difference);
    let down = simulated_binary_detectable(&design, -1.0, 0.05, 0.8, &sim).unwrap().unwrap();
    assert!(down.shift < 0.0 && down.difference < 0.0);
}

#[test]
fn a_design_that_cannot_reach_the_power_says_so() {
    let design = BinaryDesign { rates: vec![1.0, 1.0], repeats_a: vec![1, 1], repeats_b: vec![1, 1] };
    let sim = Simulation { simulations: 200, seed: 1 };
    assert_eq!(simulated_binary_detectable(&design, 1.0, 0.05, 0.8, &sim).unwrap(), None);
}

#[test]
fn pass_hat_k_with_k_1_is_the_repeat_mean_simulation() {
    // C(c, 1) / C(r, 1) = c / r: the same draws give the same power.
    let design = BinaryDesign { rates: vec![0.3, 0.5, 0.6, 0.4, 0.2, 0.7], repeats_a: vec![4; 6], repeats_b: vec![4; 6] };
    let sim = Simulation { simulations: 500, seed: 3 };
    let k1 = specgap_stats::simulated_pass_hat_k_power(&design, 0.2, 1, 0.05, &sim).unwrap();
    assert_eq!(k1, simulated_binary_power(&design, 0.2, 0.05, &sim).unwrap());
    // k above the repeats is refused.
    assert!(specgap_stats::simulated_pass_hat_k_power(&design, 0.2, 5, 0.05, &sim).is_err());
}
