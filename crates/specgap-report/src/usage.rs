//! Model usage and cost per group and role, summed from the stores' `usage` rows (every attempt
//! of every episode, scored or not: a failed attempt still cost what it cost).

use std::collections::BTreeMap;

use serde::Serialize;
use specgap_protocol::event::Usage;
use specgap_store::Role;

use crate::episode::{Dim, Episode, group_by};
use crate::pricing::{Cost, Pricing};
use crate::report::KeyMap;
use crate::run::RunData;

/// Summed model usage of one role (`agent` or `user`) in one group.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UsageSummary {
    /// The group's values on the grouping dimensions.
    pub key: KeyMap,
    /// `agent` (the model under test) or `user` (the simulated owner / customer).
    pub role: String,
    /// Episodes of the group with usage of this role.
    pub episodes: usize,
    /// HTTP requests that got an answer.
    pub requests: u64,
    /// Retried requests.
    pub retries: u64,
    /// Prompt tokens (cached ones included).
    pub input_tokens: u64,
    /// Prompt tokens served from the provider's cache.
    pub cached_tokens: u64,
    /// Completion tokens (reasoning ones included).
    pub output_tokens: u64,
    /// Reasoning tokens.
    pub reasoning_tokens: u64,
    /// Summed request latency, milliseconds.
    pub latency_ms: u64,
    /// Cost in US dollars from the run's price table and the panel files' prices; `None`
    /// (`null`) when a model behind the usage has no price ([`crate::pricing`]).
    pub cost_usd: Option<f64>,
    /// The cost of the calls whose model has a price (equal to `cost_usd` when that is known).
    pub priced_cost_usd: f64,
    /// Models behind the usage without a price, by name (empty when `cost_usd` is known).
    pub unpriced_models: Vec<String>,
    /// Whether any of the usage had a price (false: the cost is shown as `unpriced`).
    #[serde(skip)]
    pub any_priced: bool,
}

impl UsageSummary {
    /// The cost as the report shows it ([`Cost::text`]).
    pub fn cost(&self) -> Cost {
        Cost {
            priced_usd: self.priced_cost_usd,
            any_priced: self.any_priced,
            unpriced_models: self.unpriced_models.iter().cloned().collect(),
        }
    }
}

/// One [`UsageSummary`] per group of `dims` and role with any usage row, groups in key order,
/// `agent` before `user`. Empty when no run recorded usage (scripted and replay agents with
/// the relay user).
pub fn usage_summaries(runs: &[RunData], episodes: &[Episode<'_>], dims: &[Dim]) -> Vec<UsageSummary> {
    let pricing: Vec<Pricing> = runs.iter().map(|r| Pricing::of(&r.config, &r.rows.panels)).collect();
    let mut out = Vec::new();
    for (key, members) in group_by(episodes, dims, |_| true) {
        let mut by_role: BTreeMap<Role, (usize, Usage, Cost)> = BTreeMap::new();
        for episode in members {
            let mut seen: Vec<Role> = Vec::new();
            let rows = runs[episode.run].rows.usage.iter().filter(|u| u.episode == episode.row.id);
            for row in rows {
                let entry = by_role.entry(row.role).or_default();
                entry.1.add(&row.usage);
                entry.2.add(&pricing[episode.run].cost(row, &episode.row.agent));
                if !seen.contains(&row.role) {
                    seen.push(row.role);
                    entry.0 += 1;
                }
            }
        }
        for (role, (episodes, u, cost)) in by_role {
            out.push(UsageSummary {
                key: dims.iter().copied().zip(key.iter().cloned()).collect(),
                role: role.as_str().to_string(),
                episodes,
                requests: u.requests,
                retries: u.retries,
                input_tokens: u.input_tokens,
                cached_tokens: u.cached_tokens,
                output_tokens: u.output_tokens,
                reasoning_tokens: u.reasoning_tokens,
                latency_ms: u.latency_ms,
                cost_usd: cost.usd(),
                priced_cost_usd: cost.priced_usd,
                unpriced_models: cost.unpriced_models.into_iter().collect(),
                any_priced: cost.any_priced,
            });
        }
    }
    out
}
