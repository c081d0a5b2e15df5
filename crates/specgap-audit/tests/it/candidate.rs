//! Unit `candidate` (seed 001 §3.2 Stage III): the predecessor episodes Stage II keeps, drawn
//! seeded and stratified; the page shows the request, the changes and the trajectory digest,
//! the failing hidden tests only as the rubric asks; its sheet imports and reports.

use specgap_audit::agreement::sample_report;
use specgap_audit::import::import;
use specgap_audit::sample::{Manifest, Sample, draw, page_path, write};
use specgap_audit::{Rubric, UnitKind};

use crate::fixture::{AGENT_SCRIPT, CANARY_EVALUATOR, CANARY_NOTES, CANARY_REQUIREMENT, CANARY_SOLUTION, Ep, Run, audit_run, ep};

/// Six config-drift predecessors: a1 repeats 0–2 fail (candidates), a1 repeat 3 passes
/// (excluded: passed), a2 repeats 0–1 fail (candidates); one episode without failing tests
/// (excluded: no failing tests).
fn predecessors() -> Run {
    let candidate = |agent, repeat, success| Ep { candidate: true, ..ep(0, agent, repeat, success) };
    audit_run(&[
        candidate("a1", 0, false),
        candidate("a1", 1, false),
        candidate("a1", 2, false),
        candidate("a1", 3, true),
        candidate("a2", 0, false),
        candidate("a2", 1, false),
        ep(0, "a2", 2, false),
    ])
}

fn manifest(run: &Run, rubric: Rubric, by: &[&str], n: Option<usize>, seed: u64) -> Manifest {
    Manifest {
        unit: UnitKind::Candidate,
        rubric,
        runs: vec![run.run.clone()],
        by: by.iter().map(|s| s.to_string()).collect(),
        n,
        seed,
        batch: None,
    }
}

fn review() -> Rubric {
    Rubric::builtin("seed001-review").unwrap()
}

fn drawn(sample: &Sample) -> Vec<(String, String, f64)> {
    let mut items: Vec<_> = sample.items.iter().map(|(r, _)| (r.item.clone(), r.stratum.clone(), r.weight)).collect();
    items.sort_by(|a, b| a.0.cmp(&b.0));
    items
}

#[test]
fn candidate_units_are_the_episodes_stage_two_keeps_drawn_seeded_by_agent() {
    let run = predecessors();
    let stores = [run.store.clone()];
    let all = draw(&stores, manifest(&run, review(), &["agent"], None, 1)).unwrap();
    let mut expected: Vec<(String, String, f64)> =
        [(0, "a1"), (1, "a1"), (2, "a1"), (4, "a2"), (5, "a2")].iter().map(|(i, a)| (run.ids[*i].clone(), a.to_string(), 1.0)).collect();
    expected.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(drawn(&all), expected);
    let two = |seed| draw(&stores, manifest(&run, review(), &["agent"], Some(1), seed)).unwrap();
    assert_eq!(drawn(&two(6)), drawn(&two(6)));
    assert_eq!(two(6).strata.into_iter().collect::<Vec<_>>(), vec![("a1".to_string(), (3, 1)), ("a2".to_string(), (2, 1))]);
    assert!(two(6).items.iter().all(|(r, _)| r.weight == if r.stratum == "a1" { 3.0 } else { 2.0 }));
    let a1_picks: std::collections::BTreeSet<String> =
        (0..12).map(|seed| two(seed).items.iter().find(|(r, _)| r.stratum == "a1").unwrap().0.item.clone()).collect();
    assert_eq!(a1_picks, run.ids[..3].iter().cloned().collect(), "every a1 candidate is drawn by some seed");
    let wrong = draw(&stores, manifest(&run, Rubric::builtin("seed000-failure").unwrap(), &[], None, 1)).unwrap_err();
    assert_eq!(wrong.to_string(), "rubric seed000-failure judges failed-episode, not candidate");
}

fn page_of(run: &Run, rubric: Rubric, item: &str) -> String {
    let out = tempfile::tempdir().unwrap();
    let sample = draw(std::slice::from_ref(&run.store), manifest(run, rubric, &[], None, 1)).unwrap();
    write(std::slice::from_ref(&run.store), &sample, out.path()).unwrap();
    let (record, _) = sample.items.iter().find(|(r, _)| r.item == item).unwrap();
    std::fs::read_to_string(out.path().join(page_path(record.position))).unwrap()
}

#[test]
fn a_candidate_page_shows_the_request_changes_digest_and_failing_tests_escaped() {
    let run = predecessors();
    let page = page_of(&run, review(), &run.ids[4]);
    assert!(page.contains("<h2>The request</h2>\n<pre class=\"request\">Subject: the nightly configuration check"), "{page:.1500}");
    assert!(page.contains("<h2>Hidden tests failing on this state (1, private)</h2>\n<pre class=\"private\">test_ledger_identity</pre>"));
    assert!(page.contains("<p>Files: estate/reconcile.py, estate/__pycache__/reconcile.cpython-311.pyc</p>"), "{page}");
    assert!(
        page.contains(
            "<p>Incidental artifacts (kept in the state, ignored by the filter): estate/__pycache__/reconcile.cpython-311.pyc</p>"
        )
    );
    // The final diff, its agent text escaped.
    assert!(page.contains("+&lt;script&gt;document.title=&#39;pwned&#39;&lt;/script&gt;&lt;img src=x onerror=&quot;document.title=&#39;pwned&#39;&quot;&gt; a2-0"));
    assert!(!page.contains(AGENT_SCRIPT) && !page.contains("<script") && !page.contains("<img"));
    // The digest.
    assert!(page.contains("<p>1 turns, 1 tool calls, end: none recorded</p>"), "{page}");
    assert!(page.contains("<pre class=\"text\">turn 1 · bash: ls</pre>"));
    assert!(page.contains("<div class=\"who\">submission 1 (by the agent)</div>"));
    assert!(page.contains("Looking around. &lt;script&gt;"));
    for hidden in [CANARY_REQUIREMENT, CANARY_NOTES, CANARY_EVALUATOR, CANARY_SOLUTION, "agent: a2"] {
        assert!(!page.contains(hidden), "`{hidden}` must not be on the page");
    }
    // Without `evaluation`, no failing tests.
    let blind = Rubric::parse(
        "blind.toml",
        "name = \"blind\"\ntitle = \"Blind\"\nsource = \"s\"\nunits = [\"candidate\"]\nshows = []\ninstructions = \"i\"\n\n[[label]]\nname = \"ok\"\nquestion = \"q\"\nvalues = [{ name = \"yes\", meaning = \"m\" }, { name = \"no\", meaning = \"m\" }]\n",
    )
    .unwrap();
    let page = page_of(&run, blind, &run.ids[4]);
    assert!(!page.contains("test_ledger_identity") && !page.contains("Hidden tests"));
    assert!(page.contains("<h2>Changes from the clean state</h2>"));
}

#[test]
fn a_candidate_sheet_imports_and_reports() {
    let run = predecessors();
    let out = tempfile::tempdir().unwrap();
    let sample = draw(std::slice::from_ref(&run.store), manifest(&run, review(), &["agent"], Some(1), 6)).unwrap();
    let sheet = std::fs::read_to_string(write(std::slice::from_ref(&run.store), &sample, out.path()).unwrap()).unwrap();
    let lines: Vec<&str> = sheet.lines().collect();
    assert_eq!(lines[0], "sample,item,page,task_directed,consistent,note");
    assert_eq!(lines.len(), 3);
    let filled: Vec<String> =
        std::iter::once(lines[0].to_string()).chain(lines[1..].iter().map(|l| l.replacen(",,,", ",yes,no,", 1))).collect();
    let path = out.path().join("rev.csv");
    std::fs::write(&path, filled.join("\n") + "\n").unwrap();
    assert_eq!(import(&run.store, &path, "rev").unwrap().labels, 4);
    let report = sample_report(&run.store, &sample.id).unwrap();
    assert_eq!(report.unit, "candidate");
    let rate = |label: &str, value: &str| report.rates.iter().find(|r| r.label == label && r.value == value).unwrap();
    assert_eq!((rate("task_directed", "yes").count, rate("task_directed", "yes").share.value), (2, 1.0));
    assert_eq!((rate("consistent", "no").count, rate("consistent", "no").share.value), (2, 1.0));
}
