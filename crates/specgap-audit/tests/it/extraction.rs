//! Unit `extraction` (seed 002 §4.3, A.8): one item per extraction verdict, drawn seeded and
//! stratified; its page shows the delivered diff, the schema and each extractor's session,
//! the panel's verdict only as the rubric asks; its sheet imports and reports.

use serde_json::json;
use specgap_audit::agreement::sample_report;
use specgap_audit::import::import;
use specgap_audit::sample::{Manifest, Sample, draw, write};
use specgap_audit::{Rubric, UnitKind};
use specgap_store::{Ballot, BallotOutcome, Extraction, ExtractionStatus, PanelRecord, PanelUse};

use crate::fixture::{AGENT_SCRIPT, Run};
use crate::sample::thirteen;

const PANEL: &str = "panel:e00000000001";
/// The agreed score of every verdict: private (`evaluation`), a canary on other pages.
const SCORE_CANARY: f64 = 0.4242;
/// Planted in every extractor's prompt (the ballot's request): never on a page.
const PROMPT_CANARY: &str = "CANARY-EXTRACTOR-PROMPT-3b1d";
/// The extractor model's name: shown only under `identity`.
const MODEL: &str = "extractor-model-x";
/// What an extractor wrote in its plan: agent text, escaped on the page.
const WRITTEN: &str = "{\"shipments\": [{\"note\": \"<b onmouseover=alert(1)>x</b>\"}]}";

fn ballot(seat: u32, position: u32) -> Ballot {
    let transcript = json!([
        {"turn": 1, "text": "Reading the delivered plan.", "calls": [{"id": "c1", "tool": "write_file", "arguments": {"path": "plan.json", "content": WRITTEN}}]},
        {"result": "c1", "tool": "write_file", "output": "wrote plan.json", "is_error": false},
        {"message": "end", "text": "The plan is copied unchanged."},
    ]);
    Ballot {
        panel: PANEL.into(),
        subject: "submission:1".into(),
        seat,
        model: MODEL.into(),
        position,
        prompt_version: "1".into(),
        outcome: BallotOutcome::Ballot,
        vote: Some(
            json!({"end": "submitted", "summary": "copied the plan", "turns": 1, "files": ["plan.json"], "score": SCORE_CANARY, "success": false, "valid": true, "objective": 17.5, "signature": null}),
        ),
        request: json!([{"model": MODEL, "system": PROMPT_CANARY, "message": PROMPT_CANARY}]),
        response: transcript,
        error: None,
    }
}

/// The thirteen-episode run with the extraction panel's verdicts on the three retail
/// episodes (`ids[10..]`): 10 and 12 scored by three extractors, 11 unavailable after five.
pub fn with_extractions() -> Run {
    let run = thirteen();
    run.store
        .record_panel(&PanelRecord {
            name: PANEL.into(),
            use_: PanelUse::Extractor,
            config: json!({"models": [{"model": MODEL}]}),
            prompt_version: "1".into(),
            prompt_hash: "cd".repeat(32),
        })
        .unwrap();
    for (i, id) in run.ids[10..].iter().enumerate() {
        let scored = i != 1;
        let routes = if scored { 3 } else { 5 };
        let ballots: Vec<Ballot> = (0..routes).map(|p| ballot(4 - p, p)).collect();
        let extraction = Extraction {
            panel: PANEL.into(),
            k: 1,
            status: if scored { ExtractionStatus::Scored } else { ExtractionStatus::Unavailable },
            score: scored.then_some(SCORE_CANARY),
            success: scored.then_some(false),
            valid: scored.then_some(true),
            objective: scored.then_some(17.5),
            signature: None,
            routes,
            agreeing: if scored { 3 } else { 0 },
        };
        run.store.record_extraction(id, &ballots, &extraction).unwrap();
    }
    run
}

fn manifest(run: &Run, rubric: Rubric, by: &[&str], n: Option<usize>, seed: u64) -> Manifest {
    Manifest {
        unit: UnitKind::Extraction,
        rubric,
        runs: vec![run.run.clone()],
        by: by.iter().map(|s| s.to_string()).collect(),
        n,
        seed,
        batch: None,
    }
}

fn item(run: &Run, i: usize) -> String {
    format!("{}#panel={PANEL}#k=1", run.ids[i])
}

fn drawn(sample: &Sample) -> Vec<(String, String, f64)> {
    sample.items.iter().map(|(r, _)| (r.item.clone(), r.stratum.clone(), r.weight)).collect()
}

#[test]
fn extraction_units_are_drawn_seeded_and_stratified_by_status() {
    let run = with_extractions();
    let stores = [run.store.clone()];
    let rubric = || Rubric::builtin("seed002-extraction").unwrap();
    let first = draw(&stores, manifest(&run, rubric(), &["status"], Some(1), 3)).unwrap();
    let again = draw(&stores, manifest(&run, rubric(), &["status"], Some(1), 3)).unwrap();
    assert_eq!(drawn(&first), drawn(&again));
    assert_eq!(first.id, again.id);
    assert_eq!(
        first.strata.clone().into_iter().collect::<Vec<_>>(),
        vec![("scored".to_string(), (2, 1)), ("unavailable".to_string(), (1, 1))]
    );
    let scored_pick = |s: &Sample| s.items.iter().find(|(r, _)| r.stratum == "scored").unwrap().0.item.clone();
    let unavailable = first.items.iter().find(|(r, _)| r.stratum == "unavailable").unwrap();
    assert_eq!((unavailable.0.item.clone(), unavailable.0.weight), (item(&run, 11), 1.0));
    assert_eq!(unavailable.0.cluster, "examples/retail-replenishment");
    // Each seed picks one of the two scored verdicts, weight 2; some seed picks the other.
    let picks: std::collections::BTreeSet<String> =
        (0..8).map(|seed| scored_pick(&draw(&stores, manifest(&run, rubric(), &["status"], Some(1), seed)).unwrap())).collect();
    assert_eq!(picks, [item(&run, 10), item(&run, 12)].into_iter().collect());
    assert!(first.items.iter().all(|(r, _)| r.weight == if r.stratum == "scored" { 2.0 } else { 1.0 }));
    // The whole population, by panel.
    let all = draw(&stores, manifest(&run, rubric(), &["panel"], None, 3)).unwrap();
    let mut ids: Vec<String> = all.items.iter().map(|(r, _)| r.item.clone()).collect();
    ids.sort();
    let mut expected = vec![item(&run, 10), item(&run, 11), item(&run, 12)];
    expected.sort();
    assert_eq!(ids, expected);
    assert_eq!(all.strata.keys().cloned().collect::<Vec<_>>(), vec![PANEL.to_string()]);
    // Another rubric's unit is refused; so is an episode field it lacks.
    let wrong = draw(&stores, manifest(&run, Rubric::builtin("seed002-coverage").unwrap(), &[], None, 3)).unwrap_err();
    assert_eq!(wrong.to_string(), "rubric seed002-coverage judges question, not extraction");
    let bad = draw(&stores, manifest(&run, rubric(), &["target"], None, 3)).unwrap_err();
    assert_eq!(
        bad.to_string(),
        "cannot stratify extraction units by `target`; the fields are task, agent, user, condition, start, family, outcome, panel, status"
    );
}

fn page_of(run: &Run, rubric: Rubric, wanted: &str) -> String {
    let out = tempfile::tempdir().unwrap();
    let sample = draw(std::slice::from_ref(&run.store), manifest(run, rubric, &[], None, 3)).unwrap();
    write(std::slice::from_ref(&run.store), &sample, out.path()).unwrap();
    let (record, _) = sample.items.iter().find(|(r, _)| r.item == wanted).unwrap();
    std::fs::read_to_string(out.path().join(specgap_audit::sample::page_path(record.position))).unwrap()
}

#[test]
fn an_extraction_page_shows_the_artifact_schema_and_extractors_and_hides_the_score() {
    let run = with_extractions();
    let page = page_of(&run, Rubric::builtin("seed002-extraction").unwrap(), &item(&run, 10));
    assert!(page.contains("<h2>The delivered artifact (submission 1, as a diff of the workspace)</h2>"), "{page}");
    // The delivered diff holds the agent's script, escaped.
    assert!(page.contains("+&lt;script&gt;document.title=&#39;pwned&#39;&lt;/script&gt;"));
    assert!(!page.contains(AGENT_SCRIPT) && !page.contains("<script"));
    assert!(page.contains("<h2>The submission schema</h2>"));
    assert!(page.contains("&quot;title&quot;: &quot;plan.json of examples/retail-replenishment&quot;"));
    // Three extractors in call order, with what each wrote (escaped) and its summary.
    assert!(page.contains("<h2>Extractor 1 (seat 4)</h2>") && page.contains("<h2>Extractor 3 (seat 2)</h2>"));
    assert!(!page.contains("Extractor 4"));
    assert!(page.contains("&lt;b onmouseover=alert(1)&gt;x&lt;/b&gt;") && !page.contains("<b onmouseover"));
    assert!(page.contains("<p>Files it wrote: plan.json</p>"));
    assert!(page.contains("<pre class=\"text\">copied the plan</pre>"));
    // The verdict as judgements; no score, no prompt, no model, nothing of the package's private files.
    assert!(page.contains("<p>scored: 3 of 3 extractions agreed on the score</p>"));
    for hidden in ["0.4242", "17.5", PROMPT_CANARY, MODEL, "private)</div>", "Requirements (private)"] {
        assert!(!page.contains(hidden), "`{hidden}` must not be on the page");
    }
}

#[test]
fn an_extraction_page_shows_scores_and_models_only_when_the_rubric_asks() {
    let run = with_extractions();
    let rubric = Rubric::parse(
        "open-extraction.toml",
        "name = \"open-extraction\"\ntitle = \"t\"\nsource = \"s\"\nunits = [\"extraction\"]\nshows = [\"evaluation\", \"identity\"]\ninstructions = \"i\"\n\n[[label]]\nname = \"fidelity\"\nquestion = \"q\"\nvalues = [{ name = \"correct\", meaning = \"m\" }, { name = \"incorrect\", meaning = \"m\" }]\n",
    )
    .unwrap();
    let page = page_of(&run, rubric, &item(&run, 11));
    assert!(page.contains(&format!("<h2>Extractor 5 (seat 0, {MODEL})</h2>")));
    assert!(page.contains("score 0.4242, success false, valid true, objective 17.5"));
    assert!(page.contains("<p>score none, success none, valid none, objective none</p>"), "the unavailable verdict has no score");
    assert!(!page.contains("extractions agreed"), "the agreement is a judgement, not shown");
    assert!(!page.contains(PROMPT_CANARY));
}

#[test]
fn an_extraction_sheet_imports_and_reports() {
    let run = with_extractions();
    let out = tempfile::tempdir().unwrap();
    let sample =
        draw(std::slice::from_ref(&run.store), manifest(&run, Rubric::builtin("seed002-extraction").unwrap(), &["status"], Some(1), 3))
            .unwrap();
    let sheet = write(std::slice::from_ref(&run.store), &sample, out.path()).unwrap();
    let text = std::fs::read_to_string(&sheet).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "sample,item,page,fidelity,note");
    assert_eq!(lines.len(), 3);
    let filled: String = std::iter::once(lines[0].to_string())
        .chain(lines[1..].iter().map(|l| {
            let value = if l.contains(&run.ids[11]) { "incorrect" } else { "correct" };
            l.replacen(",,", &format!(",{value},"), 1)
        }))
        .collect::<Vec<_>>()
        .join("\n")
        + "\n";
    let path = out.path().join("alice.csv");
    std::fs::write(&path, filled).unwrap();
    let imported = import(&run.store, &path, "alice").unwrap();
    assert_eq!((imported.rows, imported.labels), (2, 2));
    let report = sample_report(&run.store, &sample.id).unwrap();
    assert_eq!(report.unit, "extraction");
    let rate = |value: &str| report.rates.iter().find(|r| r.rater == "alice" && r.value == value).unwrap();
    assert_eq!((rate("correct").count, rate("incorrect").count), (1, 1));
    // Reweighted to the population: the scored stratum (2 verdicts, 1 drawn) weighs 2.
    assert_eq!(rate("correct").share.value, 2.0 / 3.0);
    assert_eq!(rate("incorrect").share.value, 1.0 / 3.0);
}
