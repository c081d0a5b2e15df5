//! Seed 002's analyses across cases and repeats (issue 24 item 2): the case-level Quality
//! ranking (§5.2), Table 8(b), Table 10's correlations, cost against Quality (App. A.4) and the
//! within-system repeat analyses (§5.3, App. A.5, A.7), on three systems × eight cases × two
//! repeats. The data tables are those of `scripts/stats-reference/analyses_reference.py`, which
//! computes every expected value below with scipy 1.17.1 / statsmodels 0.14.6 from the
//! papers' definitions (intervals on specgap's resample indices, seed 12345, 2,000 resamples).

use specgap_protocol::event::Usage;
use specgap_protocol::package::Family;
use specgap_protocol::result::ScoringKind;
use specgap_protocol::run::EndReason;
use specgap_report::Dim;
use specgap_store::Role;

use crate::fixture::{Ep, Sub, TaskSpec, close, delivery, run_configured};
use crate::{group, report_of};

/// (missing, ambiguous) targets of cases c1..c8 (missing: constraint rules; ambiguous: data
/// semantics); a run asks about the first k targets, missing ones first.
const CASES: [(usize, usize); 8] = [(2, 0), (1, 1), (1, 2), (0, 2), (3, 1), (2, 2), (1, 0), (0, 1)];
/// SCORES[s][c] = the delivery scores of repeats 0 and 1 of system s on case c.
const SCORES: [[(f64, f64); 8]; 3] = [
    [(0.8, 0.6), (0.5, 0.5), (0.0, 0.4), (0.3, 0.1), (0.9, 0.7), (0.6, 0.2), (0.7, 0.7), (0.2, 0.0)],
    [(0.7, 0.7), (0.6, 0.2), (0.2, 0.0), (0.1, 0.1), (0.8, 1.0), (0.4, 0.4), (0.5, 0.9), (0.3, 0.4)],
    [(0.4, 0.9), (0.3, 0.3), (0.5, 0.5), (0.0, 0.2), (0.6, 0.6), (0.1, 0.5), (0.2, 0.0), (0.6, 0.4)],
];
/// ASKED[s][c] = how many of the case's targets repeats 0 and 1 ask about.
const ASKED: [[(usize, usize); 8]; 3] = [
    [(2, 1), (2, 1), (1, 3), (1, 2), (4, 2), (3, 1), (1, 1), (1, 0)],
    [(1, 1), (2, 0), (2, 1), (2, 2), (3, 4), (2, 4), (0, 1), (1, 1)],
    [(0, 2), (1, 1), (3, 2), (0, 1), (2, 2), (4, 3), (1, 0), (0, 1)],
];
/// Agent cost per run, US dollars.
const COST: [f64; 3] = [0.30, 0.10, 0.20];
const SYSTEMS: [&str; 3] = ["s1", "s2", "s3"];
/// Words that make each target's cue its own (one pair per target of a case).
const WORDS: [(&str, &str); 4] = [("kilo", "quartz"), ("lima", "ruby"), ("mike", "sapphire"), ("oscar", "topaz")];

/// The targets of case `c`: (id, domain-bearing issue type, trigger).
fn targets(c: usize) -> Vec<(String, &'static str, &'static str, String)> {
    let (missing, ambiguous) = CASES[c];
    (0..missing + ambiguous)
        .map(|j| {
            let (issue, domain) = if j < missing { ("missing", "constraint-rule") } else { ("ambiguous", "data-semantics") };
            let (a, b) = WORDS[j];
            (format!("t{j}"), issue, domain, format!("Does the {a} {b} setting apply?"))
        })
        .collect()
}

fn clarifications(c: usize) -> String {
    targets(c)
        .iter()
        .map(|(id, issue, domain, trigger)| {
            format!(
                "[[target]]\nid = \"{id}\"\ndescription = \"{}\"\nissue_type = \"{issue}\"\ndomain = \"{domain}\"\nanswer = \"yes\"\ntriggers = [\"{trigger}\"]\n\n",
                trigger.trim_end_matches('?')
            )
        })
        .collect()
}

fn report() -> specgap_report::Report {
    let specs: Vec<TaskSpec> = (0..8)
        .map(|c| {
            let mut spec = TaskSpec::new(&format!("org/c{}", c + 1));
            spec.family = "optimization";
            spec.delivery = true;
            spec.clarifications_toml = Some(clarifications(c));
            spec
        })
        .collect();
    let run = run_configured(61, &specs, &[], |config| {
        let template = config.agents[0].clone();
        config.agents = SYSTEMS
            .iter()
            .map(|agent| {
                let mut a = template.clone();
                a.spec = agent.to_string();
                let table: toml::Table = toml::from_str(&format!(
                    "kind = \"chat\"\nmodel = \"model-{agent}\"\nprice = {{ input_per_mtok = 1.0, output_per_mtok = 1.0 }}"
                ))
                .unwrap();
                a.config = table;
                a
            })
            .collect();
        config.conditions = vec!["interact".into()];
        config.repeats = 2;
    });
    for (s, agent) in SYSTEMS.iter().enumerate() {
        for c in 0..8 {
            for repeat in 0..2u32 {
                let score = if repeat == 0 { SCORES[s][c].0 } else { SCORES[s][c].1 };
                let asked = if repeat == 0 { ASKED[s][c].0 } else { ASKED[s][c].1 };
                let mut ep = Ep::new(&format!("org/c{}", c + 1), agent, "interact")
                    .kind(ScoringKind::Delivery)
                    .repeat(repeat)
                    .sub(Sub::scored(score, score >= 1.0, delivery(true, score * 10.0, None, 0)));
                ep.family = Family::Optimization;
                ep.end = EndReason::Submitted;
                ep.questions = targets(c)[..asked].iter().map(|t| (1, t.3.clone())).collect();
                let id = run.episode(&ep);
                let usage = Usage { requests: 1, cost_usd: COST[s], ..Default::default() };
                run.store.usage_recorder(&id).unwrap().record(Role::Agent, &usage).unwrap();
            }
        }
    }
    report_of(&[&run], &[Dim::Agent, Dim::Condition])
}

#[test]
fn the_fixture_gives_each_system_its_quality_and_recall() {
    let report = report();
    // Quality (scipy reference: 0.45, 0.45625, 0.38125); s1's Recall on c1 repeat 0 is 2/2.
    let quality: Vec<f64> = SYSTEMS.iter().map(|s| group(&report, &[s, "interact"]).delivery.as_ref().unwrap().quality.unwrap()).collect();
    close(quality[0], 0.45, 1e-12);
    close(quality[1], 0.45625, 1e-12);
    close(quality[2], 0.38125, 1e-12);
    let c = group(&report, &["s1", "interact"]).clarification.clone().unwrap();
    // Recall over the 16 runs of s1 (each asked target covered).
    let expected: f64 = (0..8).map(|c| (ASKED[0][c].0 + ASKED[0][c].1) as f64 / (CASES[c].0 + CASES[c].1) as f64).sum::<f64>() / 16.0;
    close(c.recall.unwrap().mean, expected, 1e-12);
}

#[test]
fn case_level_quality_rankings_across_systems() {
    let report = report();
    assert_eq!(report.case_associations.len(), 1);
    let slice = &report.case_associations[0];
    assert_eq!(slice.key.values().collect::<Vec<_>>(), ["interact"]);
    assert_eq!((slice.groups, slice.cases), (3, 8));
    let r = slice.ranking.clone().unwrap();
    // scipy.stats.spearmanr on each pair of systems' case Quality: 0.9202627172903879,
    // 0.2515384760593727, 0.3518518518518518.
    assert_eq!(r.pairs, 3);
    close(r.mean_rho, 0.5078843484005374, 1e-12);
    close(r.min_rho, 0.2515384760593727, 1e-12);
    close(r.max_rho, 0.9202627172903879, 1e-12);
}

#[test]
fn table_8b_issue_type_share_against_case_delivery() {
    let report = report();
    let rows = &report.case_associations[0].issue_type_share;
    let kinds: Vec<&str> = rows.iter().map(|r| r.kind.as_str()).collect();
    assert_eq!(kinds, ["ambiguous", "missing"]);
    let ambiguous = &rows[0];
    assert_eq!(ambiguous.cases_with, 6);
    // scipy.stats.spearmanr(share, case Quality averaged over systems) and the percentile
    // interval of scipy.stats.bootstrap over the same 2,000 resamples.
    let q = ambiguous.quality.clone().unwrap();
    close(q.rho, -0.8728715609439694, 1e-12);
    close(q.p_value, 0.004659214943993945, 1e-12);
    let [low, high] = q.interval.unwrap();
    close(low, -0.9936507294577401, 1e-12);
    close(high, -0.4608341737372411, 1e-12);
    // Against DSR: one case reaches the reference in one run, so some resamples have a
    // constant DSR and the interval is absent (scipy gives NaN).
    let d = ambiguous.dsr.clone().unwrap();
    close(d.rho, -0.2519763153394848, 1e-12);
    close(d.p_value, 0.5471616124270277, 1e-12);
    assert_eq!(d.interval, None);
    // The missing share is one minus the ambiguous share: ρ changes sign.
    close(rows[1].quality.as_ref().unwrap().rho, 0.8728715609439694, 1e-12);
}

#[test]
fn table_10_domain_shares_against_quality() {
    let report = report();
    let shares = &report.associations.domain_share_quality;
    let domains: Vec<&str> = shares.iter().map(|s| s.domain.as_str()).collect();
    assert_eq!(domains, ["constraint-rule", "data-semantics"]);
    let s1 = group(&report, &["s1", "interact"]).clarification.clone().unwrap();
    close(s1.matched_domains["constraint-rule"], 0.6538461538461539, 1e-12);
    // scipy.stats.spearmanr(share, Quality) over the three systems; statsmodels
    // multipletests(method='holm') over the two domains: 1.0 and 1.0.
    let c = shares[0].quality.clone().unwrap();
    assert_eq!((shares[0].groups, c.groups), (3, 3));
    close(c.rho, -0.5, 1e-12);
    close(c.p_value, 0.6666666666666666, 1e-12);
    assert_eq!(c.holm_p, Some(1.0));
    // With three systems some resamples tie: no interval (scipy: NaN).
    assert_eq!(c.interval, None);
    close(shares[1].quality.as_ref().unwrap().rho, 0.5, 1e-12);
    close(shares[0].mean_share, (0.6538461538461539 + 0.5925925925925926 + 0.6521739130434783) / 3.0, 1e-12);
}

#[test]
fn cost_against_quality() {
    let report = report();
    let c = report.associations.cost_quality.clone().unwrap();
    assert_eq!((c.groups, c.priced), (3, 3));
    // scipy.stats.spearmanr([0.30, 0.10, 0.20], Quality): ρ = −0.5, p = 0.6667.
    let a = c.quality.unwrap();
    close(a.rho, -0.5, 1e-12);
    close(a.p_value, 0.6666666666666666, 1e-12);
}

#[test]
fn within_system_repeat_analyses() {
    let report = report();
    assert_eq!(report.repeat_analyses.len(), 1);
    let a = &report.repeat_analyses[0];
    assert_eq!(a.groups, 3);
    // §5.3: 18 cells differ in Recall; Δ > 0 in 12, < 0 in 3; mean +0.15;
    // scipy.stats.wilcoxon(Δ) p = 0.015428818718965122 (normal approximation: ties, n > 13).
    let r = a.recall.clone().unwrap();
    assert_eq!(r.cells, 18);
    close(r.higher, 12.0 / 18.0, 1e-12);
    close(r.lower, 3.0 / 18.0, 1e-12);
    close(r.mean_difference, 0.15, 1e-12);
    close(r.p_value.unwrap(), 0.015428818718965122, 1e-12);
    // A.7: 5 cells with a zero and a nonzero repeat; Recall 13.3% against 83.3%, lower in all
    // five; scipy.stats.wilcoxon p = 0.0625 (exact); units 0.4 against 1.6.
    let z = a.zero_score.clone().unwrap();
    assert_eq!((z.cells, z.lower, z.higher), (5, 5, 0));
    close(z.zero_recall, 0.13333333333333333, 1e-12);
    close(z.nonzero_recall, 0.8333333333333333, 1e-12);
    close(z.p_value.unwrap(), 0.0625, 1e-12);
    close(z.zero_units, 0.4, 1e-12);
    close(z.nonzero_units, 1.6, 1e-12);
    // A.5: covering a constraint rule (8 cells, mean Δ 0.35, p 0.0078125 exact) and a
    // data-semantics point (16 cells, mean Δ 0.1125, p 0.0642237807398604).
    let domains: Vec<(&str, usize)> = a.domains.iter().map(|d| (d.domain.as_str(), d.cells)).collect();
    assert_eq!(domains, [("constraint-rule", 8), ("data-semantics", 16)]);
    close(a.domains[0].mean_difference, 0.35, 1e-12);
    close(a.domains[0].p_value.unwrap(), 0.0078125, 1e-12);
    close(a.domains[1].mean_difference, 0.1125, 1e-12);
    close(a.domains[1].p_value.unwrap(), 0.0642237807398604, 1e-12);
}

#[test]
fn the_analyses_are_rendered() {
    let report = report();
    let markdown = specgap_report::render::render_markdown(&report, "run");
    for caption in [
        "Case-level Quality rankings across systems (seed 002 §5.2)",
        "Issue-type share and delivery across cases (seed 002 Table 8(b))",
        "Higher-Recall repeats within systems and cases (seed 002 §5.3)",
        "Zero-score repeats against the others within systems and cases (seed 002 App. A.7)",
        "Covering a target of a domain within systems and cases (seed 002 App. A.5)",
        "Domain mix of matched questions against Quality (seed 002 App. A.5, Table 10)",
        "Mean agent cost per run against Quality over the 3 of 3 groups with a known cost (seed 002 App. A.4): Spearman ρ = -0.50 (p = 0.667).",
    ] {
        assert!(markdown.contains(caption), "{caption}\n{markdown}");
    }
    assert!(markdown.contains("| interact | ambiguous | 6/8 | -0.873 [-0.994, -0.461] | -0.252 |"), "{markdown}");
    let json: serde_json::Value = serde_json::from_str(&specgap_report::render::render_json(&report).unwrap()).unwrap();
    assert_eq!(json["repeat_analyses"][0]["recall"]["cells"], 18);
    assert_eq!(json["case_associations"][0]["ranking"]["pairs"], 3);
}
