//! `audit sample`: the seeded stratified draw, the sheet, the pages (escaping, disclosure,
//! headless Chromium).

use std::path::Path;
use std::process::Command;

use specgap_audit::sample::{Manifest, Sample, draw, write};
use specgap_audit::{Rubric, UnitKind};

use crate::fixture::{AGENT_SCRIPT, CANARY_EVALUATOR, CANARY_FULL, CANARY_NOTES, CANARY_REQUIREMENT, Run, audit_run, ep};

const CHROMIUM: &str = "/usr/bin/chromium";

/// Ten config-drift episodes (a1 and a2, five each; a1's repeats 0 and 1 and a2's 0 succeed)
/// and three retail episodes of a1 with questions.
pub fn thirteen() -> Run {
    let mut episodes = Vec::new();
    for repeat in 0..5 {
        episodes.push(ep(0, "a1", repeat, repeat < 2));
        episodes.push(ep(0, "a2", repeat, repeat < 1));
    }
    for repeat in 0..3 {
        let mut e = ep(1, "a1", repeat, false);
        e.questions = vec!["What lead time should I assume?", "Which stores count?"];
        episodes.push(e);
    }
    audit_run(&episodes)
}

fn manifest(run: &Run, unit: UnitKind, rubric: &str, by: &[&str], n: Option<usize>, seed: u64) -> Manifest {
    Manifest {
        unit,
        rubric: Rubric::named(rubric).unwrap(),
        runs: vec![run.run.clone()],
        by: by.iter().map(|s| s.to_string()).collect(),
        n,
        seed,
        batch: None,
    }
}

fn items(sample: &Sample) -> Vec<(String, u32, String, f64)> {
    sample.items.iter().map(|(r, _)| (r.item.clone(), r.position, r.stratum.clone(), r.weight)).collect()
}

#[test]
fn a_sample_is_the_same_for_the_same_seed_and_differs_for_another() {
    let run = thirteen();
    let stores = [run.store.clone()];
    let m = |seed| manifest(&run, UnitKind::Episode, "seed001-continuation", &["agent"], Some(2), seed);
    // seed001-continuation judges failed episodes only.
    assert_eq!(draw(&stores, m(7)).unwrap_err().to_string(), "rubric seed001-continuation judges failed-episode, not episode");
    let m = |seed| manifest(&run, UnitKind::FailedEpisode, "seed000-failure", &["agent"], Some(2), seed);
    let first = draw(&stores, m(7)).unwrap();
    let again = draw(&stores, m(7)).unwrap();
    let other = draw(&stores, m(8)).unwrap();
    assert_eq!(items(&first), items(&again));
    assert_eq!(first.id, again.id);
    assert_ne!(first.id, other.id);
    let set = |s: &Sample| s.items.iter().map(|(r, _)| r.item.clone()).collect::<std::collections::BTreeSet<_>>();
    assert_ne!(set(&first), set(&other), "seed 8 draws other failed episodes than seed 7");
    assert!(Rubric::named("/nonexistent/rubric.toml").unwrap_err().to_string().contains("/nonexistent/rubric.toml"));
}

#[test]
fn strata_sizes_are_as_asked_and_weights_reweight_to_the_population() {
    let run = thirteen();
    let stores = [run.store.clone()];
    // Failed episodes: a1 has 3 of config-drift and 3 of retail, a2 has 4 of config-drift.
    let sample = draw(
        &stores,
        Manifest {
            unit: UnitKind::FailedEpisode,
            ..manifest(&run, UnitKind::FailedEpisode, "seed000-failure", &["task", "agent"], Some(2), 11)
        },
    )
    .unwrap();
    let strata: Vec<(String, (usize, usize))> = sample.strata.clone().into_iter().collect();
    assert_eq!(
        strata,
        vec![
            ("examples/config-drift / a1".to_string(), (3, 2)),
            ("examples/config-drift / a2".to_string(), (4, 2)),
            ("examples/retail-replenishment / a1".to_string(), (3, 2)),
        ]
    );
    assert_eq!(sample.items.len(), 6);
    for (record, _) in &sample.items {
        let expected = if record.stratum.ends_with("a2") { 2.0 } else { 1.5 };
        assert_eq!(record.weight, expected, "{}", record.stratum);
        assert_eq!(record.cluster, record.stratum.split(" / ").next().unwrap());
    }
    // A stratum smaller than n is taken whole, with weight 1.
    let whole = draw(
        &stores,
        Manifest { unit: UnitKind::FailedEpisode, ..manifest(&run, UnitKind::FailedEpisode, "seed000-failure", &["agent"], Some(50), 11) },
    )
    .unwrap();
    assert_eq!(whole.items.len(), 10);
    assert!(whole.items.iter().all(|(r, _)| r.weight == 1.0));
    let bad = draw(&stores, manifest(&run, UnitKind::FailedEpisode, "seed000-failure", &["colour"], Some(2), 11)).unwrap_err();
    assert_eq!(
        bad.to_string(),
        "cannot stratify failed-episode units by `colour`; the fields are task, agent, user, condition, start, family, outcome"
    );
}

fn write_sample(run: &Run, sample: &Sample, out: &Path) -> String {
    let sheet = write(std::slice::from_ref(&run.store), sample, out).unwrap();
    std::fs::read_to_string(sheet).unwrap()
}

fn pages(out: &Path) -> Vec<String> {
    let mut names: Vec<_> = std::fs::read_dir(out.join("pages")).unwrap().map(|e| e.unwrap().path()).collect();
    names.sort();
    names.iter().map(|p| std::fs::read_to_string(p).unwrap()).collect()
}

#[test]
fn the_sheet_has_one_empty_row_per_item_and_the_sample_is_stored_once() {
    let run = thirteen();
    let out = tempfile::tempdir().unwrap();
    let sample = draw(std::slice::from_ref(&run.store), manifest(&run, UnitKind::Question, "seed002-coverage", &[], None, 5)).unwrap();
    // Retail has its clarification targets; each of the three episodes gives one unit per target.
    let targets = specgap_task::load(crate::fixture::retail().0).unwrap().clarifications().len();
    assert_eq!(sample.items.len(), 3 * targets);
    let sheet = write_sample(&run, &sample, out.path());
    let lines: Vec<&str> = sheet.lines().collect();
    assert_eq!(lines[0], "sample,item,page,coverage,note");
    assert_eq!(lines.len(), 1 + 3 * targets);
    let (first, _) = &sample.items[0];
    assert_eq!(lines[1], format!("{},{},pages/0001.html,,", sample.id, first.item));
    // Drawing and writing it again stores nothing new.
    write_sample(&run, &sample, out.path());
    assert_eq!(run.store.audit_samples().unwrap().len(), 1);
    assert_eq!(run.store.audit_items(&sample.id).unwrap().len(), 3 * targets);
    let page = &pages(out.path())[0];
    assert!(page.contains("What lead time should I assume?"), "the page shows the questions");
}

#[test]
fn pages_escape_agent_text_and_show_only_what_the_rubric_allows() {
    let run = thirteen();
    let stores = [run.store.clone()];
    let canaries = [CANARY_REQUIREMENT, CANARY_NOTES, CANARY_FULL, CANARY_EVALUATOR];
    let shown = |rubric: &str| {
        let out = tempfile::tempdir().unwrap();
        let rubric_manifest = Manifest {
            rubric: Rubric::named(rubric).unwrap(),
            ..manifest(&run, UnitKind::FailedEpisode, "seed000-failure", &["task"], Some(1), 3)
        };
        let sample = draw(&stores, rubric_manifest).unwrap();
        write_sample(&run, &sample, out.path());
        let pages = pages(out.path());
        // The page of the config-drift episode (the first ten episodes are config-drift's).
        let drift = pages.iter().find(|p| run.ids[..10].iter().any(|id| p.contains(&format!("item {id}")))).unwrap().clone();
        for page in &pages {
            assert!(!page.contains("<script"), "agent text must be escaped");
            assert!(!page.contains("<img"), "agent text must be escaped");
            assert!(page.contains("&lt;script&gt;document.title=&#39;pwned&#39;&lt;/script&gt;"));
        }
        canaries.iter().filter(|c| drift.contains(*c)).copied().collect::<Vec<_>>()
    };
    // seed001-continuation shows only evaluation results.
    assert_eq!(shown("seed001-continuation"), Vec::<&str>::new());
    // seed000-failure shows requirements, observations and evaluation, never notes, the full
    // instruction or the evaluator.
    assert_eq!(shown("seed000-failure"), vec![CANARY_REQUIREMENT]);
    // A rubric that asks for everything shows every canary: they are planted where the page
    // would read them.
    let dir = tempfile::tempdir().unwrap();
    let all = dir.path().join("all.toml");
    std::fs::write(
        &all,
        "name = \"everything\"\ntitle = \"All\"\nunits = [\"failed-episode\"]\nshows = [\"requirements\", \"notes\", \"full-instruction\", \"evaluator\"]\ninstructions = \"i\"\n[[label]]\nname = \"ok\"\nquestion = \"q\"\nvalues = [{ name = \"yes\", meaning = \"m\" }, { name = \"no\", meaning = \"m\" }]\n",
    )
    .unwrap();
    assert_eq!(shown(all.to_str().unwrap()), canaries.to_vec());
    assert!(AGENT_SCRIPT.contains("<script>"));
}

#[test]
fn pages_open_in_headless_chromium_and_run_no_agent_script() {
    let run = thirteen();
    let out = tempfile::tempdir().unwrap();
    let sample =
        draw(std::slice::from_ref(&run.store), manifest(&run, UnitKind::FailedEpisode, "seed000-failure", &[], Some(1), 9)).unwrap();
    write_sample(&run, &sample, out.path());
    if !Path::new(CHROMIUM).exists() {
        // CI sets SPECGAP_REQUIRE_EXTERNAL=1: there a missing browser is a failure, not a skip.
        assert!(
            std::env::var_os("SPECGAP_REQUIRE_EXTERNAL").is_none_or(|v| v != "1"),
            "{CHROMIUM} is required (SPECGAP_REQUIRE_EXTERNAL=1) but not installed: apt-get install -y chromium"
        );
        println!("skipped: {CHROMIUM} not installed (apt-get install -y chromium)");
        return;
    }
    let page = out.path().join("pages/0001.html");
    let output = Command::new(CHROMIUM)
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run", "--dump-dom"])
        .arg(format!("--user-data-dir={}", out.path().join("profile").display()))
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap();
    assert!(output.status.success(), "chromium failed: {}", String::from_utf8_lossy(&output.stderr));
    let dom = String::from_utf8_lossy(&output.stdout);
    let (item, _) = &sample.items[0];
    assert!(dom.contains(&item.item), "the rendered page names its item");
    assert!(dom.contains("Primary failure mode of a failed episode — item 1</title>"), "the title is the page's own: {dom:.400}");
    assert!(!dom.contains("pwned</title>"), "an agent's script ran");
    assert!(dom.contains("&lt;script&gt;document.title='pwned'&lt;/script&gt;"), "the agent's text is shown as text");
}
