//! Integration tests of specgap-report: measures on synthetic run stores written with the
//! store's writer API, with every expected value computed by hand in the test, published
//! numbers of the three seed papers within their rounding, comparisons, and the HTML report
//! in a headless browser.

mod analyses;
mod associations;
mod compare;
mod delivery;
mod fidelity;
mod fixture;
mod html;
mod inputs;
mod noise;
mod outcome;
mod planned;
mod residual;
mod rounds;
mod stats_reference;
mod study;
mod tables;

use specgap_report::{Dim, Report, ReportOptions, RunData, build_report};

/// Loads a fixture run (running the offline judge) and builds its report grouped by `dims`.
pub fn report_of(runs: &[&fixture::Run], dims: &[Dim]) -> Report {
    let data: Vec<RunData> = runs.iter().map(|r| RunData::load(&r.dir).unwrap()).collect();
    build_report(&data, &ReportOptions { group_by: dims.to_vec(), ..ReportOptions::default() }).unwrap()
}

/// The main-table group whose key values are `values` (in the grouping order).
pub fn group<'r>(report: &'r Report, values: &[&str]) -> &'r specgap_report::report::GroupReport {
    report
        .groups
        .iter()
        .find(|g| g.key.values().map(String::as_str).eq(ordered(report, values)))
        .unwrap_or_else(|| panic!("no group {values:?} in {:?}", report.groups.iter().map(|g| &g.key).collect::<Vec<_>>()))
}

/// `values` given in `group_by` order, returned in the key map's (sorted) order.
fn ordered<'v>(report: &Report, values: &[&'v str]) -> Vec<&'v str> {
    let mut pairs: Vec<(Dim, &str)> = report.group_by.iter().copied().zip(values.iter().copied()).collect();
    pairs.sort_by_key(|(d, _)| *d);
    pairs.into_iter().map(|(_, v)| v).collect()
}
