//! Which recorded model costs are known: a `usage` row stores `cost_usd` = 0 both for calls
//! that were free and for calls of a model the run had no price for, so the price
//! configuration (`run.toml`'s components, the panels' records) decides which it is.
//!
//! A cost is known when every model behind the usage has a price: the episode's agent for
//! the `agent` role (a `chat` agent's `price`, a `cli` agent's `endpoint.price`:
//! [`ComponentRef::has_price`]), the run's
//! user for `user`, the panels of the matching use for `judge`, `extractor` and `detector`
//! (the summarizer of audits has no recorded configuration; its costs count as recorded).
//! An unknown cost is shown as `unpriced` and is `null` in JSON, never a 0 added into a
//! total; sums over usage with an unknown part carry the priced part and the unpriced models
//! by name (docs/decisions.md "Report: unpriced models").

use std::collections::{BTreeMap, BTreeSet};

use specgap_protocol::run::{ComponentRef, RunConfig};
use specgap_store::{PanelRecord, PanelUse, Role, UsageRow};

/// The price configuration of one run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Pricing {
    /// Per agent label: its model when that model has no price.
    agents: BTreeMap<String, Option<String>>,
    /// The user's model when it has no price.
    user: Option<String>,
    /// Per panel role: the models without a price, and whether some model of the role has one.
    panels: BTreeMap<Role, (BTreeSet<String>, bool)>,
    /// Whether any agent, the user or a panel model has a price.
    any_price: bool,
}

/// What is known about the cost of some usage.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Cost {
    /// US dollars of the calls whose model has a price.
    pub priced_usd: f64,
    /// Whether any of the usage was priced.
    pub any_priced: bool,
    /// Models of the usage without a price, by name.
    pub unpriced_models: BTreeSet<String>,
}

impl Pricing {
    /// The pricing of a run from its `run.toml` and its panels' records.
    pub fn of(config: &RunConfig, panels: &[PanelRecord]) -> Pricing {
        Pricing::from_components(&config.agents, config.users.first(), panels)
    }

    /// The pricing of a run's agents, user and panels.
    pub fn from_components(agents: &[ComponentRef], user: Option<&ComponentRef>, panels: &[PanelRecord]) -> Pricing {
        let any_component_price = agents.iter().chain(user).any(ComponentRef::has_price);
        let agents = agents.iter().map(|a| (a.label().to_string(), unpriced_model(a))).collect();
        let user = user.and_then(unpriced_model);
        let mut by_role: BTreeMap<Role, (BTreeSet<String>, bool)> = BTreeMap::new();
        for panel in panels {
            let role = panel_role(panel.use_);
            let entry = by_role.entry(role).or_default();
            for model in panel.config["models"].as_array().into_iter().flatten() {
                if model.get("price").is_some_and(|p| !p.is_null()) {
                    entry.1 = true;
                } else {
                    entry.0.insert(model["model"].as_str().unwrap_or("?").to_string());
                }
            }
        }
        let any_price = any_component_price || by_role.values().any(|(_, priced)| *priced);
        Pricing { agents, user, panels: by_role, any_price }
    }

    /// Whether any model of the run has a price; without one the run had no price table.
    pub fn any_price(&self) -> bool {
        self.any_price
    }

    /// The cost of `row`, whose episode's agent is `agent` (its label).
    pub fn cost(&self, row: &UsageRow, agent: &str) -> Cost {
        let usd = row.usage.cost_usd;
        let single = |model: Option<&String>| match model {
            Some(model) => Cost { priced_usd: 0.0, any_priced: false, unpriced_models: BTreeSet::from([model.clone()]) },
            None => Cost { priced_usd: usd, any_priced: true, unpriced_models: BTreeSet::new() },
        };
        match row.role {
            Role::Agent => single(self.agents.get(agent).and_then(Option::as_ref)),
            Role::User => single(self.user.as_ref()),
            Role::Summarizer => single(None),
            panel => match self.panels.get(&panel) {
                Some((unpriced, priced)) => Cost { priced_usd: usd, any_priced: *priced, unpriced_models: unpriced.clone() },
                None => single(None),
            },
        }
    }
}

impl Cost {
    /// Adds `other` into this one.
    pub fn add(&mut self, other: &Cost) {
        self.priced_usd += other.priced_usd;
        self.any_priced |= other.any_priced;
        self.unpriced_models.extend(other.unpriced_models.iter().cloned());
    }

    /// The summed cost of `rows`, each with its episode's agent label.
    pub fn of<'a>(pricing: &Pricing, rows: impl IntoIterator<Item = (&'a UsageRow, &'a str)>) -> Cost {
        let mut total = Cost::default();
        for (row, agent) in rows {
            total.add(&pricing.cost(row, agent));
        }
        total
    }

    /// The cost in US dollars when it is known in full; `None` when a model has no price.
    pub fn usd(&self) -> Option<f64> {
        self.unpriced_models.is_empty().then_some(self.priced_usd)
    }

    /// The cost as text: `$0.0006` (four decimals), `unpriced` when nothing of it has a price,
    /// `$0.0006 + unpriced` when only a part has.
    pub fn text(&self) -> String {
        match (self.usd(), self.any_priced) {
            (Some(usd), _) => format!("${usd:.4}"),
            (None, false) => UNPRICED.to_string(),
            (None, true) => format!("${:.4} + {UNPRICED}", self.priced_usd),
        }
    }
}

/// How a cost without a price is shown.
pub const UNPRICED: &str = "unpriced";

/// The note under a cost table or list that shows `unpriced`: which models had no price.
pub fn unpriced_note(models: &BTreeSet<String>) -> Option<String> {
    (!models.is_empty()).then(|| {
        let names: Vec<&str> = models.iter().map(String::as_str).collect();
        format!(
            "unpriced: {} {} {} no price in the run's price table (--prices, or the panel file), so {} calls' cost is unknown and in no total",
            if names.len() == 1 { "model" } else { "models" },
            names.join(", "),
            if names.len() == 1 { "has" } else { "have" },
            if names.len() == 1 { "its" } else { "their" }
        )
    })
}

/// A component's model when it calls one and has no price; `None` for a priced model or a
/// component without one.
fn unpriced_model(component: &ComponentRef) -> Option<String> {
    component.model().filter(|_| !component.has_price()).map(str::to_string)
}

fn panel_role(use_: PanelUse) -> Role {
    match use_ {
        PanelUse::Judge => Role::Judge,
        PanelUse::Extractor => Role::Extractor,
        PanelUse::Detector => Role::Detector,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use specgap_protocol::event::Usage;

    fn component(spec: &str, table: &str) -> ComponentRef {
        ComponentRef { spec: spec.into(), name: None, config: toml::from_str(table).unwrap(), hash: "h".into() }
    }

    fn row(role: Role, cost_usd: f64) -> UsageRow {
        UsageRow { episode: "e1".into(), attempt: 1, role, usage: Usage { requests: 1, cost_usd, ..Usage::default() } }
    }

    const PRICE: &str = "price = { input_per_mtok = 1.0, output_per_mtok = 2.0 }\n";

    #[test]
    fn a_model_without_a_price_is_unpriced_and_in_no_total() {
        let priced = component("chat:big", &format!("kind = \"chat\"\nmodel = \"big\"\n{PRICE}"));
        let cli = component("cli:codex", "kind = \"cli\"\n[endpoint]\nmodel = \"small\"\n");
        let user = component("chat:talker", "kind = \"chat\"\nmodel = \"talker\"\n");
        let pricing = Pricing::from_components(&[priced, cli], Some(&user), &[]);
        assert!(pricing.any_price());

        let agent = row(Role::Agent, 0.25);
        assert_eq!(pricing.cost(&agent, "chat:big").text(), "$0.2500");
        let unpriced = pricing.cost(&row(Role::Agent, 0.0), "cli:codex");
        assert_eq!((unpriced.usd(), unpriced.text()), (None, "unpriced".to_string()));
        assert_eq!(unpriced.unpriced_models, BTreeSet::from(["small".to_string()]));

        let rows = [(agent.clone(), "chat:big"), (row(Role::User, 0.0), "chat:big"), (row(Role::Agent, 0.0), "cli:codex")];
        let total = Cost::of(&pricing, rows.iter().map(|(r, a)| (r, *a)));
        assert_eq!((total.usd(), total.priced_usd), (None, 0.25));
        assert_eq!(total.text(), "$0.2500 + unpriced");
        assert_eq!(total.unpriced_models, BTreeSet::from(["small".to_string(), "talker".to_string()]));
        assert_eq!(
            unpriced_note(&total.unpriced_models).as_deref(),
            Some(
                "unpriced: models small, talker have no price in the run's price table (--prices, or the panel file), so their calls' cost is unknown and in no total"
            )
        );
        assert_eq!(unpriced_note(&BTreeSet::new()), None);
    }

    #[test]
    fn a_priced_cli_agent_and_components_without_a_model_are_priced() {
        let cli = component("cli:codex", &format!("kind = \"cli\"\n[endpoint]\nmodel = \"small\"\n{PRICE}"));
        let relay = component("relay", "kind = \"relay\"\n");
        let pricing = Pricing::from_components(&[cli, component("scripted:gold", "kind = \"scripted\"\n")], Some(&relay), &[]);
        assert!(pricing.any_price(), "the price of a cli agent is in its endpoint table");
        assert_eq!(pricing.cost(&row(Role::Agent, 0.5), "cli:codex").usd(), Some(0.5));
        assert_eq!(pricing.cost(&row(Role::Summarizer, 0.0), "cli:codex").usd(), Some(0.0));
        let none = Pricing::from_components(&[component("chat:m", "kind = \"chat\"\nmodel = \"m\"\n")], None, &[]);
        assert!(!none.any_price());
    }

    #[test]
    fn a_panel_with_an_unpriced_model_leaves_its_role_partly_priced() {
        let panel = |models: serde_json::Value| PanelRecord {
            name: "panel:1".into(),
            use_: PanelUse::Judge,
            config: serde_json::json!({ "models": models }),
            prompt_version: "1".into(),
            prompt_hash: "x".into(),
        };
        let mixed =
            panel(serde_json::json!([{ "model": "j1", "price": { "input_per_mtok": 1.0, "output_per_mtok": 1.0 } }, { "model": "j2" }]));
        let pricing = Pricing::from_components(&[], None, &[mixed]);
        assert!(pricing.any_price());
        let judge = pricing.cost(&row(Role::Judge, 0.125), "");
        assert_eq!((judge.text(), judge.unpriced_models.len()), ("$0.1250 + unpriced".to_string(), 1));
    }
}
