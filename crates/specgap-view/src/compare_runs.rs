//! Whole runs compared in the viewer (`compare?a=R&b=R&select_a=&select_b=`): the same paired
//! comparison as `specgap compare RUN_A RUN_B` ([`specgap_report::compare`], seed 002 §5.1
//! and App. A.6: per-task means, B − A with a seeded paired bootstrap interval, Wilcoxon
//! signed-rank p and Holm's correction over the measures), computed read-only (the offline
//! judge runs in memory and records nothing). A public answer names each run by its last
//! directory component, as the runs list does.

use serde_json::Value;
use specgap_report::{CompareOptions, RunData, Selection, compare};

use crate::access::Access;
use crate::api::run_label;
use crate::runs::RunSet;

/// Why a comparison has no answer: a bad selection or one the report refuses, in words.
pub(crate) type Refusal = String;

/// The comparison of run `b` against run `a` (B − A) with the selections' texts
/// (`key=value,…` on agent, condition, start, family, task; empty: every episode).
pub(crate) fn compare_json(set: &RunSet, a: usize, b: usize, select_a: &str, select_b: &str, access: Access) -> Result<Value, Refusal> {
    let options = CompareOptions {
        select_a: Selection::parse_flag("select_a", select_a).map_err(|e| e.to_string())?,
        select_b: Selection::parse_flag("select_b", select_b).map_err(|e| e.to_string())?,
        ..CompareOptions::default()
    };
    let data = |i: usize| -> Result<RunData, Refusal> {
        let run = &set.runs[i];
        let rows = run.store.rows().map_err(|e| format!("cannot read run {}: {e}", run_label(run, access)))?;
        Ok(RunData::from_rows(&run.dir, run.store.config().clone(), rows, None))
    };
    let comparison = compare(&data(a)?, &data(b)?, &options).map_err(|e| e.to_string())?;
    let mut value = serde_json::to_value(&comparison).map_err(|e| format!("cannot serialize the comparison: {e}"))?;
    if let Some(pairs) = value.get_mut("comparisons").and_then(Value::as_array_mut) {
        for pair in pairs {
            pair["a"]["dir"] = Value::String(run_label(&set.runs[a], access));
            pair["b"]["dir"] = Value::String(run_label(&set.runs[b], access));
        }
    }
    value["runs"] = serde_json::json!([a, b]);
    Ok(value)
}
