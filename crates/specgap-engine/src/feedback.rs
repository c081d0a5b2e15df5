//! Consequence feedback after a failed submission (DESIGN §3.4, seed 000 §3.2).
//!
//! The failing requirement with the highest priority is chosen; its observation is the one
//! registered for the failure mode the evaluator reported, or the requirement's first
//! observation when none (or an unregistered one) is reported. The first time a failure mode
//! is reported the user gets its incident; every later time the incident and the detail,
//! with `{key}` placeholders filled from that requirement's `measured` values.

use std::collections::BTreeSet;

use specgap_protocol::result::EvalResult;
use specgap_task::TaskPackage;

use crate::session::FeedbackContext;

/// The highest-priority failing requirement of a result, by the package's priority order.
pub fn failing_requirement<'a>(package: &'a TaskPackage, result: &EvalResult) -> Option<&'a str> {
    let outcomes = result.requirements.as_ref()?;
    package.requirement_ids().iter().find(|id| outcomes.get(id.as_str()).is_some_and(|o| !o.pass)).map(String::as_str)
}

pub use specgap_protocol::text::fill_placeholders;

/// Remembers which failure modes were already reported in an episode, so the second report
/// of a mode escalates to incident + detail.
#[derive(Debug, Clone, Default)]
pub struct Escalation {
    seen: BTreeSet<(String, String)>,
}

impl Escalation {
    /// The feedback for a failed result, or `None` when no requirement fails or the failing
    /// requirement has no observation (the engine then sends [`NO_OBSERVATION`]).
    pub fn feedback(&mut self, package: &TaskPackage, result: &EvalResult) -> Option<FeedbackContext> {
        let requirement = failing_requirement(package, result)?;
        let outcome = result.requirements.as_ref()?.get(requirement)?;
        let observation = package.observation(requirement, outcome.failure_mode.as_deref())?.clone();
        let detail = fill_placeholders(&observation.detail, &outcome.measured);
        let key = (observation.requirement.clone(), observation.failure_mode.clone());
        let escalated = !self.seen.insert(key);
        let text = if escalated {
            format!("{}\n\n{}", observation.incident.trim_end(), detail.trim_end())
        } else {
            observation.incident.trim_end().to_string()
        };
        Some(FeedbackContext { observation, detail, escalated, text })
    }
}

/// What the owner says when a delivery fails and no observation describes it (only possible
/// for packages whose registry misses a requirement; `check` rejects those).
pub const NO_OBSERVATION: &str = "I tried the delivery and it is not what the project needs yet.";

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn placeholders_fill_from_measured() {
        let mut m = BTreeMap::new();
        m.insert("open_rows".to_string(), serde_json::json!(3));
        m.insert("env".to_string(), serde_json::json!("staging"));
        m.insert("ratio".to_string(), serde_json::json!(0.25));
        assert_eq!(fill_placeholders("{open_rows} rows in {env} ({ratio}); {missing}", &m), "3 rows in staging (0.25); {missing}");
    }
}
