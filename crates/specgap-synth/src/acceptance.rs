//! The acceptance checks specgap runs itself between the Builder and the Auditor (seed 000
//! App. E.2's "checks before you return", run by the harness rather than trusted from the
//! Builder).
//!
//! Most of them are `specgap check --strict` ([`specgap_task::check`]), run through the real
//! evaluator: `instruction-length` (40–250 words), `leak-scan`, `starter` (fails every
//! requirement), `gold` (passes every one), `literal` (fails at least as many as are
//! unstated), `mutant:<id>` (reproduces a failure mode registered for its requirement),
//! `observations`, `instruction-full`, `user`, `shape`. What only the brief can tell is added
//! here as `brief:*` rows:
//!
//! | row | passes when |
//! | --- | --- |
//! | `brief:requirements` | the package's requirement ids are the brief's, in the brief's priority order |
//! | `brief:stated` | the package states exactly the brief's `stated` ids, so it withholds the brief's `withheld` (and `literal` then holds it to that many failures) |
//! | `brief:failure-modes` | every failure mode of the brief is registered in observations.toml for its requirement |

use std::collections::BTreeSet;
use std::path::Path;

use serde::Serialize;
use specgap_task::check::{CheckOptions, CheckRow, Verdict, check_dir_with};
use specgap_task::{Judge, TaskPackage};

use crate::handoff::PlannerBrief;

/// The acceptance checks of one package.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AcceptanceReport {
    /// Whether no row failed.
    pub passed: bool,
    /// `check --strict`'s rows followed by the `brief:*` rows.
    pub rows: Vec<CheckRow>,
}

impl AcceptanceReport {
    /// The failing rows as `check: reason` lines, in order.
    pub fn failures(&self) -> Vec<String> {
        self.rows.iter().filter(|r| r.result == Verdict::Fail).map(|r| format!("{}: {}", r.check, r.reason)).collect()
    }

    /// One line per row: `check  result  reason`.
    pub fn render(&self) -> String {
        self.rows.iter().map(|r| format!("{:<24} {:<4}  {}\n", r.check, r.result.as_str(), r.reason)).collect()
    }
}

/// Runs the acceptance checks on the package at `root` against `brief`.
pub fn run_acceptance(root: &Path, brief: &PlannerBrief, judge: &dyn Judge) -> AcceptanceReport {
    let report = check_dir_with(root, judge, &CheckOptions { strict: true });
    let mut rows = report.checks;
    match specgap_task::load(root) {
        Ok(package) => rows.extend(brief_rows(&package, brief)),
        Err(_) => {
            for name in ["brief:requirements", "brief:stated", "brief:failure-modes"] {
                rows.push(row(name, Verdict::Skip, "the package did not load"));
            }
        }
    }
    let passed = rows.iter().all(|r| r.result != Verdict::Fail);
    AcceptanceReport { passed, rows }
}

fn row(check: &str, result: Verdict, reason: impl Into<String>) -> CheckRow {
    CheckRow { check: check.to_owned(), result, reason: reason.into() }
}

/// The rows only the brief can decide.
pub fn brief_rows(package: &TaskPackage, brief: &PlannerBrief) -> Vec<CheckRow> {
    vec![requirements_row(package, brief), stated_row(package, brief), failure_modes_row(package, brief)]
}

fn requirements_row(package: &TaskPackage, brief: &PlannerBrief) -> CheckRow {
    let mut by_priority: Vec<_> = package.requirements().iter().collect();
    by_priority.sort_by_key(|r| r.priority);
    let built: Vec<&str> = by_priority.iter().map(|r| r.id.as_str()).collect();
    let planned: Vec<&str> = brief.requirements.iter().map(|r| r.id.as_str()).collect();
    if built == planned {
        row("brief:requirements", Verdict::Pass, format!("{} requirements, as the brief orders them", built.len()))
    } else {
        row(
            "brief:requirements",
            Verdict::Fail,
            format!("requirements.toml has [{}] by priority; the brief plans [{}]", built.join(", "), planned.join(", ")),
        )
    }
}

fn stated_row(package: &TaskPackage, brief: &PlannerBrief) -> CheckRow {
    let built: BTreeSet<&str> = package.requirements().iter().filter(|r| r.stated).map(|r| r.id.as_str()).collect();
    let planned: BTreeSet<&str> = brief.stated.iter().map(String::as_str).collect();
    if built == planned {
        let withheld = package.requirements().len() - built.len();
        row("brief:stated", Verdict::Pass, format!("states [{}], withholds {withheld}", join(&built)))
    } else {
        row("brief:stated", Verdict::Fail, format!("requirements.toml states [{}]; the brief states [{}]", join(&built), join(&planned)))
    }
}

fn failure_modes_row(package: &TaskPackage, brief: &PlannerBrief) -> CheckRow {
    let missing: Vec<String> = brief
        .failure_modes
        .iter()
        .filter(|mode| !package.observations_for(&mode.requirement).any(|o| o.failure_mode == mode.id))
        .map(|mode| format!("{}/{}", mode.requirement, mode.id))
        .collect();
    if missing.is_empty() {
        row("brief:failure-modes", Verdict::Pass, format!("all {} failure modes of the brief are registered", brief.failure_modes.len()))
    } else {
        row("brief:failure-modes", Verdict::Fail, format!("observations.toml registers no observation for {}", missing.join(", ")))
    }
}

fn join(ids: &BTreeSet<&str>) -> String {
    ids.iter().copied().collect::<Vec<_>>().join(", ")
}
