//! Unit `task` (seed 000 §4.2): one item per task package of the sampled runs, drawn seeded
//! and stratified; its page shows the instruction and workspace and the private package
//! material the rubric asks for, never the solutions; its sheet imports and reports.

use specgap_audit::agreement::sample_report;
use specgap_audit::import::import;
use specgap_audit::sample::{Manifest, Sample, draw, page_path, write};
use specgap_audit::{Rubric, UnitKind};

use crate::fixture::{CANARY_EVALUATOR, CANARY_FULL, CANARY_NOTES, CANARY_REQUIREMENT, CANARY_SOLUTION, Run, audit_run, ep};
use crate::sample::thirteen;

const DRIFT: &str = "task:examples/config-drift";
const RETAIL: &str = "task:examples/retail-replenishment";

fn manifest(runs: &[&Run], rubric: Rubric, by: &[&str], n: Option<usize>, seed: u64) -> Manifest {
    Manifest {
        unit: UnitKind::Task,
        rubric,
        runs: runs.iter().map(|r| r.run.clone()).collect(),
        by: by.iter().map(|s| s.to_string()).collect(),
        n,
        seed,
        batch: None,
    }
}

fn seed000() -> Rubric {
    Rubric::builtin("seed000-task").unwrap()
}

fn drawn(sample: &Sample) -> Vec<(String, u32, String, f64)> {
    sample.items.iter().map(|(r, _)| (r.item.clone(), r.run, r.stratum.clone(), r.weight)).collect()
}

#[test]
fn task_units_are_one_per_package_drawn_seeded_and_stratified_by_family() {
    let run = thirteen();
    let stores = [run.store.clone()];
    let by_family = draw(&stores, manifest(&[&run], seed000(), &["family"], None, 2)).unwrap();
    let mut got = drawn(&by_family);
    got.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(got, vec![(DRIFT.to_string(), 0, "swe".to_string(), 1.0), (RETAIL.to_string(), 0, "optimization".to_string(), 1.0)]);
    assert!(by_family.items.iter().all(|(r, _)| r.episode.is_none() && r.cluster == r.item["task:".len()..]));
    // One of the two per seed, weight 2; the same seed, the same task; some seed the other.
    let one = |seed| draw(&stores, manifest(&[&run], seed000(), &[], Some(1), seed)).unwrap();
    assert_eq!(drawn(&one(4)), drawn(&one(4)));
    assert_eq!(one(4).strata.into_iter().collect::<Vec<_>>(), vec![("all".to_string(), (2, 1))]);
    let picks: std::collections::BTreeSet<String> = (0..8).map(|seed| one(seed).items[0].0.item.clone()).collect();
    assert_eq!(picks, [DRIFT.to_string(), RETAIL.to_string()].into_iter().collect());
    assert!((0..8).all(|seed| one(seed).items[0].0.weight == 2.0));
    let bad = draw(&stores, manifest(&[&run], seed000(), &["agent"], None, 2)).unwrap_err();
    assert_eq!(bad.to_string(), "cannot stratify task units by `agent`; the fields are task, family");
    // A task in two sampled runs is one unit, its first run's.
    let other = audit_run(&[ep(0, "a2", 0, true)]);
    let both = draw(&[run.store.clone(), other.store.clone()], manifest(&[&run, &other], seed000(), &[], None, 2)).unwrap();
    let mut got = drawn(&both);
    got.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(got, vec![(DRIFT.to_string(), 0, "all".to_string(), 1.0), (RETAIL.to_string(), 0, "all".to_string(), 1.0)]);
}

/// The page of `item` in a sample of every task with `rubric`.
fn page_of(run: &Run, rubric: Rubric, item: &str) -> String {
    let out = tempfile::tempdir().unwrap();
    let sample = draw(std::slice::from_ref(&run.store), manifest(&[run], rubric, &[], None, 2)).unwrap();
    write(std::slice::from_ref(&run.store), &sample, out.path()).unwrap();
    let (record, _) = sample.items.iter().find(|(r, _)| r.item == item).unwrap();
    std::fs::read_to_string(out.path().join(page_path(record.position))).unwrap()
}

#[test]
fn a_task_page_shows_the_package_as_seed000_task_asks_and_never_the_solutions() {
    let run = thirteen();
    let page = page_of(&run, seed000(), DRIFT);
    assert!(
        page.contains("<h2>The opening instruction</h2>\n<pre class=\"instruction\">Subject: the nightly configuration check"),
        "{page:.2000}"
    );
    assert!(page.contains("<div class=\"who\">README.md</div>") && page.contains("<div class=\"who\">estate/reconcile.py</div>"));
    for canary in [CANARY_REQUIREMENT, CANARY_NOTES, CANARY_FULL, CANARY_EVALUATOR] {
        assert!(page.contains(canary), "seed000-task shows {canary}");
    }
    assert!(!page.contains(CANARY_SOLUTION), "no rubric shows the solutions");
    // Evaluation: the outcomes of the ten config-drift episodes, without who ran them.
    assert!(page.contains("<h2>Outcomes of the run&#39;s episodes (private)</h2>"));
    assert_eq!(page.matches("condition partial, start clean, repeat 0: final score 1, success true").count(), 2);
    assert_eq!(page.matches(": final score 0, success false").count(), 7);
    assert!(!page.contains("agent a1") && !page.contains("agent a2"));
    // The retail page: the user's knowledge is shown, the targets' registered answers are not.
    let retail = page_of(&run, seed000(), RETAIL);
    assert!(retail.contains("What the simulated user knows (private)"));
    assert!(!retail.contains("Same-city stock always comes first."));
    assert!(!retail.contains(CANARY_REQUIREMENT));
}

#[test]
fn a_task_page_shows_only_the_private_kinds_its_rubric_names() {
    let run = thirteen();
    let rubric = Rubric::parse(
        "bare.toml",
        "name = \"bare\"\ntitle = \"Bare\"\nsource = \"s\"\nunits = [\"task\"]\nshows = [\"targets\", \"target-answers\", \"identity\", \"evaluation\"]\ninstructions = \"i\"\n\n[[label]]\nname = \"ok\"\nquestion = \"q\"\nvalues = [{ name = \"yes\", meaning = \"m\" }, { name = \"no\", meaning = \"m\" }]\n",
    )
    .unwrap();
    let page = page_of(&run, rubric.clone(), DRIFT);
    for hidden in [CANARY_REQUIREMENT, CANARY_NOTES, CANARY_FULL, CANARY_EVALUATOR, CANARY_SOLUTION, "Requirements (private)"] {
        assert!(!page.contains(hidden), "`{hidden}` must not be on the page");
    }
    assert!(page.contains("agent a1, condition partial, start clean, repeat 0: final score 1, success true"), "identity names the agent");
    let retail = page_of(&run, rubric, RETAIL);
    assert!(retail.contains("Registered answer: Same-city stock always comes first."));
    assert!(!retail.contains("What the simulated user knows"));
}

#[test]
fn a_task_sheet_imports_and_reports() {
    let run = thirteen();
    let out = tempfile::tempdir().unwrap();
    let sample = draw(std::slice::from_ref(&run.store), manifest(&[&run], seed000(), &["family"], None, 2)).unwrap();
    let sheet = std::fs::read_to_string(write(std::slice::from_ref(&run.store), &sample, out.path()).unwrap()).unwrap();
    let lines: Vec<&str> = sheet.lines().collect();
    assert_eq!(lines[0], "sample,item,page,consistent,plausible,inferable,no_leak,note");
    assert_eq!(lines.len(), 3);
    let filled: Vec<String> = std::iter::once(lines[0].to_string())
        .chain(lines[1..].iter().map(|l| {
            let leak = if l.contains(DRIFT) { "fail" } else { "pass" };
            l.replacen(",,,,,", &format!(",pass,pass,pass,{leak},"), 1)
        }))
        .collect();
    let path = out.path().join("rater.csv");
    std::fs::write(&path, filled.join("\n") + "\n").unwrap();
    let imported = import(&run.store, &path, "rater").unwrap();
    assert_eq!((imported.rows, imported.labels), (2, 8));
    let report = sample_report(&run.store, &sample.id).unwrap();
    assert_eq!((report.unit.as_str(), report.cases), ("task", 2));
    let rate = |label: &str, value: &str| report.rates.iter().find(|r| r.label == label && r.value == value).unwrap().count;
    assert_eq!((rate("no_leak", "fail"), rate("no_leak", "pass"), rate("consistent", "pass")), (1, 1, 2));
}
