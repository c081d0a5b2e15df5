//! Whether the runs are faithful to their paper protocols (issue 24 item 1): the report's
//! first lines say `protocol P, faithful` or list each deviation from P — what the run
//! recorded (`run.toml` `[[protocols]]`: overrides, offline stand-ins for model roles,
//! combinations no paper runs) and what only the report knows (an offline coverage judge, no
//! extraction panel, extractors that could not check their output).

use serde::Serialize;
use specgap_protocol::run::ProtocolRecord;
use specgap_rules::{Protocol, RoleName};

use crate::run::RunData;

/// One protocol of the report's runs and how faithful they are to it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProtocolLine {
    /// `tiganeval`, `swe-residual`, `fde-bench`, `custom`, or `unrecorded` for a store from
    /// before named protocols.
    pub name: String,
    /// The canonical conditions it governs.
    pub conditions: Vec<String>,
    /// Whether `--protocol` named it.
    pub named: bool,
    /// Every deviation, in words; empty when faithful.
    pub deviations: Vec<String>,
}

impl ProtocolLine {
    /// The report line: `protocol P, faithful` or `protocol P, not faithful: a; b`.
    pub fn sentence(&self) -> String {
        let of = if self.conditions.is_empty() { String::new() } else { format!(" (conditions {})", self.conditions.join(", ")) };
        if self.deviations.is_empty() {
            format!("protocol {}{of}, faithful", self.name)
        } else {
            format!("protocol {}{of}, not faithful: {}", self.name, self.deviations.join("; "))
        }
    }
}

/// What the report knows beyond the runs' records.
#[derive(Debug, Clone, Copy)]
pub struct ReportSide<'a> {
    /// The judge behind the clarification measures (`offline:<v>` or `panel:<hash>`).
    pub judge: &'a str,
    /// The extraction panel scoring the deliveries, if any.
    pub extraction: Option<&'a str>,
    /// Whether that panel's extractors could run the evaluator on their output.
    pub extraction_check_output: Option<bool>,
}

/// The protocol lines of `runs`, each distinct record once, in the order first seen.
pub fn protocol_lines(runs: &[RunData], side: ReportSide<'_>) -> Vec<ProtocolLine> {
    let mut lines: Vec<ProtocolLine> = Vec::new();
    for run in runs {
        if run.config.protocols.is_empty() {
            let line = ProtocolLine {
                name: "unrecorded".into(),
                conditions: run.config.conditions.clone(),
                named: false,
                deviations: vec!["the run was made before specgap named its protocols (protocol version below 5)".into()],
            };
            if !lines.contains(&line) {
                lines.push(line);
            }
            continue;
        }
        for record in &run.config.protocols {
            let line = line(record, side);
            if !lines.contains(&line) {
                lines.push(line);
            }
        }
    }
    lines
}

fn line(record: &ProtocolRecord, side: ReportSide<'_>) -> ProtocolLine {
    let mut deviations: Vec<String> = Vec::new();
    deviations.extend(record.overrides.iter().cloned());
    deviations.extend(record.stand_ins.iter().cloned());
    deviations.extend(record.departures.iter().cloned());
    if let Ok(protocol) = Protocol::from_toml(record.rules.clone()) {
        deviations.extend(report_side(&protocol, &record.conditions, side));
    }
    ProtocolLine { name: record.name.clone(), conditions: record.conditions.clone(), named: record.named, deviations }
}

/// Whether a canonical condition is a delivery condition (seed 002's presets).
fn is_delivery(condition: &str) -> bool {
    specgap_rules::Paper::of_preset(condition.split('+').next().unwrap_or_default()) == Some(specgap_rules::Paper::FdeBench)
}

/// Whether a canonical condition asks a customer (interact, interact-req, or `+ask=on`).
fn asks_customer(condition: &str) -> bool {
    let preset = condition.split('+').next().unwrap_or_default();
    let asks = matches!(preset, "interact" | "interact-req") || condition.contains("+ask=on");
    is_delivery(condition) && asks && !condition.contains("+ask=off")
}

/// The deviations only the report knows: the coverage judge and the extractors it uses.
fn report_side(protocol: &Protocol, conditions: &[String], side: ReportSide<'_>) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(panel) = protocol.roles.get(RoleName::CoverageJudge)
        && conditions.iter().any(|c| asks_customer(c))
        && !side.judge.starts_with("panel:")
    {
        out.push(format!(
            "coverage judge: the offline rule ({}) stands in for {} (report --judge panel with a coverage panel's verdicts)",
            side.judge,
            panel.describe()
        ));
    }
    if let Some(panel) = protocol.roles.get(RoleName::Extractors)
        && conditions.iter().any(|c| is_delivery(c))
    {
        match (side.extraction, side.extraction_check_output) {
            (None, _) => out.push(format!(
                "extractors: none ran; delivery scores come from the artifact as the agent wrote it, where the protocol \
                 has {} extract it (specgap extract, then report --extraction)",
                panel.describe()
            )),
            (Some(name), Some(false)) => {
                out.push(format!("extractors: panel {name} could not run the case evaluator on its output"));
            }
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(protocol: &Protocol, conditions: &[&str]) -> ProtocolRecord {
        ProtocolRecord {
            name: protocol.name.clone(),
            named: true,
            allow_stand_in: false,
            conditions: conditions.iter().map(|c| (*c).to_string()).collect(),
            overrides: vec![],
            stand_ins: vec![],
            departures: vec![],
            rules: protocol.to_toml().unwrap(),
        }
    }

    const OFFLINE: ReportSide<'static> = ReportSide { judge: "offline:3", extraction: None, extraction_check_output: None };

    #[test]
    fn a_run_without_deviations_is_faithful() {
        let line = line(&record(&specgap_rules::swe_residual(), &["blind"]), OFFLINE);
        assert_eq!(line.sentence(), "protocol swe-residual (conditions blind), faithful");
    }

    #[test]
    fn an_offline_coverage_judge_is_a_deviation_only_where_the_customer_is_asked() {
        let fde = specgap_rules::fde_bench();
        let hidden =
            line(&record(&fde, &["hidden"]), ReportSide { extraction: Some("panel:ab"), extraction_check_output: Some(true), ..OFFLINE });
        assert_eq!(hidden.sentence(), "protocol fde-bench (conditions hidden), faithful");
        let interact = line(
            &record(&fde, &["interact"]),
            ReportSide { extraction: Some("panel:ab"), extraction_check_output: Some(false), ..OFFLINE },
        );
        assert_eq!(
            interact.deviations,
            [
                "coverage judge: the offline rule (offline:3) stands in for 5 models, at least 3 agree (report --judge panel with a coverage panel's verdicts)",
                "extractors: panel panel:ab could not run the case evaluator on its output",
            ]
        );
        let judged = line(
            &record(&fde, &["interact"]),
            ReportSide { judge: "panel:cd", extraction: Some("panel:ab"), extraction_check_output: Some(true) },
        );
        assert!(judged.deviations.is_empty());
    }
}
