//! `compare`: two runs paired by task, with a hand-computed Wilcoxon p-value and Holm.

use specgap_protocol::result::ScoringKind;
use specgap_report::compare::render_comparison_markdown;
use specgap_report::{CompareOptions, ReportError, RunData, Selection, compare};

use crate::fixture::{Ep, Sub, close, reward, run_with};

fn reward_ep(task: &str, agent: &str, score: f64) -> Ep {
    Ep::new(task, agent, "full").kind(ScoringKind::Reward).sub(Sub::scored(score, false, reward(score)))
}

#[test]
fn paired_by_task_with_wilcoxon_and_holm() {
    let a = run_with(21, &[], &[]);
    let b = run_with(22, &[], &[]);
    let a_scores = [0.1, 0.2, 0.3, 0.4, 0.5];
    let b_scores = [0.3, 0.1, 0.6, 0.9, 0.55];
    for (i, (x, y)) in a_scores.iter().zip(b_scores).enumerate() {
        a.episode(&reward_ep(&format!("t{i}"), "m", *x));
        b.episode(&reward_ep(&format!("t{i}"), "m", y));
    }
    // A task only run A has is not paired.
    a.episode(&reward_ep("t9", "m", 1.0));
    let (ra, rb) = (RunData::load(&a.dir).unwrap(), RunData::load(&b.dir).unwrap());
    let c = compare(&ra, &rb, &CompareOptions::default()).unwrap();
    // One submission everywhere: Score@4 / Success@4 would repeat @1 and are left out; no
    // delivery or clarification either.
    let names: Vec<&str> = c.comparisons[0].measures.iter().map(|m| m.measure.as_str()).collect();
    assert_eq!(names, ["Score@1", "Success@1"]);
    let score = &c.comparisons[0].measures[0];
    assert_eq!(score.tasks, 5);
    // B − A = 0.2, −0.1, 0.3, 0.5, 0.05: mean 0.95 / 5.
    close(score.difference, 0.19, 1e-12);
    close(score.mean_a, 0.3, 1e-12);
    // Ranks of |d|: 0.05→1, 0.1→2, 0.2→3, 0.3→4, 0.5→5; R− = 2. Exact null of n = 5: 3 of the
    // 32 sign patterns have R− ≤ 2 (sums 0, 1, 2), two-sided p = 2 · 3/32 = 0.1875.
    close(score.wilcoxon_p.unwrap(), 0.1875, 1e-12);
    // Every Success@1 difference is zero: p = 1, as scipy gives. Holm over the two p-values:
    // 0.1875 · 2 = 0.375, then max(0.375, 1 · 1) = 1.
    assert_eq!(c.comparisons[0].measures[1].wilcoxon_p, Some(1.0));
    close(score.holm_p.unwrap(), 0.375, 1e-12);
    assert_eq!(c.comparisons[0].measures[1].holm_p, Some(1.0));
    let [low, high] = score.interval.unwrap();
    assert!((-0.1..=0.19).contains(&low) && (0.19..=0.5).contains(&high), "[{low}, {high}]");
    // Seeded: the same options give the same interval.
    assert_eq!(compare(&ra, &rb, &CompareOptions::default()).unwrap().comparisons[0].measures[0].interval, score.interval);
    let md = render_comparison_markdown(&c);
    assert!(md.contains("| Score@1 | 5 | 0.3000 | 0.4900 | +0.1900 |"), "{md}");
    assert!(md.contains("| t0 | 0.1000 → 0.3000 |"), "{md}");
}

#[test]
fn selections_split_one_run() {
    let run = run_with(23, &[], &[]);
    for i in 0..3 {
        run.episode(&reward_ep(&format!("t{i}"), "low", 0.25));
        run.episode(&reward_ep(&format!("t{i}"), "high", 0.75));
    }
    let data = RunData::load(&run.dir).unwrap();
    let options = CompareOptions {
        select_a: Selection::parse("agent=low").unwrap(),
        select_b: Selection::parse("agent=high").unwrap(),
        ..CompareOptions::default()
    };
    let c = compare(&data, &data, &options).unwrap();
    close(c.comparisons[0].measures[0].difference, 0.5, 1e-12);
    assert_eq!(c.comparisons[0].a.groups, ["low · full · clean"]);
    // All differences equal (0.5): the bootstrap distribution is a point.
    assert_eq!(c.comparisons[0].measures[0].interval, Some([0.5, 0.5]));
    let none = CompareOptions { select_a: Selection::parse("agent=nobody").unwrap(), ..CompareOptions::default() };
    assert!(matches!(compare(&data, &data, &none), Err(ReportError::EmptySide { side: "A" })));
    assert!(matches!(Selection::parse("agent"), Err(ReportError::BadSelection { .. })));
    assert!(matches!(Selection::parse("model=x"), Err(ReportError::UnknownSelectionKey { .. })));
}

#[test]
fn a_family_file_adjusts_every_test_of_every_comparison_together() {
    let run = run_with(24, &[], &[]);
    let lows = [0.1, 0.2, 0.3, 0.4, 0.5];
    for (i, low) in lows.iter().enumerate() {
        run.episode(&reward_ep(&format!("t{i}"), "low", *low));
        run.episode(&reward_ep(&format!("t{i}"), "mid", low + 0.05 * i as f64 + 0.01));
        run.episode(&reward_ep(&format!("t{i}"), "high", 0.9));
    }
    let dir = run.dir.parent().unwrap();
    let family = dir.join("family.toml");
    std::fs::write(
        &family,
        "measures = [\"Score@1\"]\n\n[[comparison]]\nname = \"mid - low\"\na = { run = \"run\", select = \"agent=low\" }\nb = { run = \"run\", select = \"agent=mid\" }\n\n[[comparison]]\nname = \"high - low\"\na = { run = \"run\", select = \"agent=low\" }\nb = { run = \"run\", select = \"agent=high\" }\n",
    )
    .unwrap();
    let c = specgap_report::compare_family(&family, &CompareOptions::default()).unwrap();
    assert_eq!(c.family.tests, 2);
    assert_eq!(c.family.source, family.display().to_string());
    let names: Vec<(&str, usize)> = c.comparisons.iter().map(|p| (p.name.as_str(), p.measures.len())).collect();
    assert_eq!(names, [("mid - low", 1), ("high - low", 1)]);
    // Every difference positive over five tasks, no ties: exact two-sided p = 2/32 each; Holm
    // over the family of two: 2 · 1/16 = 1/8 for both.
    for p in &c.comparisons {
        assert_eq!(p.measures[0].wilcoxon_p, Some(0.0625));
        assert_eq!(p.measures[0].holm_p, Some(0.125));
    }
    let md = render_comparison_markdown(&c);
    assert!(md.contains("## high - low"), "{md}");
    assert!(md.contains("Holm over the family's 2 tests"), "{md}");
}

#[test]
fn family_file_errors_name_the_file_and_the_comparison() {
    let run = run_with(25, &[], &[]);
    run.episode(&reward_ep("t0", "m", 0.5));
    let dir = run.dir.parent().unwrap();
    let write = |text: &str| {
        let path = dir.join("family.toml");
        std::fs::write(&path, text).unwrap();
        path
    };
    let err = |text: &str| specgap_report::compare_family(&write(text), &CompareOptions::default()).unwrap_err().to_string();
    let path = dir.join("family.toml").display().to_string();
    assert_eq!(err("seed = 1\n"), format!("family file {path}: it has no [[comparison]]"));
    assert_eq!(
        err("seed = 1\nsed = 2\n"),
        format!(
            "family file {path}: line 2: unknown field `sed`, expected one of `seed`, `resamples`, `confidence`, `measures`, `comparison`"
        )
    );
    assert_eq!(err("comparison = []\n"), format!("family file {path}: it has no [[comparison]]"));
    assert_eq!(
        err("[[comparison]]\nname = \"x\"\na = { run = \"run\", select = \"agnt=m\" }\nb = { run = \"run\" }\n"),
        format!(
            "family file {path}: comparison `x`, side a: unknown key `agnt` in the selection `agnt=m`; expected key=value pairs, comma-separated, with key agent, condition, start, family or task"
        )
    );
    assert_eq!(
        err("[[comparison]]\nname = \"x\"\na = { run = \"run\", select = \"agent=nobody\" }\nb = { run = \"run\" }\n"),
        format!("family file {path}: comparison `x`: run A has no scored episode matching its selection")
    );
    assert_eq!(
        err("measures = [\"Sucess@1\"]\n[[comparison]]\nname = \"x\"\na = { run = \"run\" }\nb = { run = \"run\" }\n"),
        "unknown measure `Sucess@1`; expected one of Score@1, Score@4, Success@1, Success@4, Quality, DSR, Valid, Recall, Precision, Ask-F1"
    );
}
