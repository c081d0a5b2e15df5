//! `audit import` and `audit report`: every problem of a sheet is an error naming its row,
//! nothing is stored then; stored sheets give rates and agreement.

use std::path::{Path, PathBuf};

use specgap_audit::agreement::sample_report;
use specgap_audit::import::{ImportMode, import, import_sheet};
use specgap_audit::sample::{Manifest, draw, write};
use specgap_audit::{Rubric, UnitKind};
use specgap_store::Judgement;

use crate::fixture::Run;
use crate::sample::thirteen;

/// A coverage sample of the thirteen-episode run, its sheet's lines, and the offline judge's
/// verdicts recorded first: `covered` on the first target of every episode, `missed` elsewhere.
fn coverage_sample(run: &Run, out: &Path) -> (String, Vec<String>) {
    let targets = specgap_task::load(crate::fixture::retail().0).unwrap().clarifications().to_vec();
    for id in &run.ids[10..] {
        for (i, t) in targets.iter().enumerate() {
            let verdict = if i == 0 { "covered" } else { "missed" };
            run.store
                .record_judgement(
                    id,
                    &Judgement {
                        judge: "offline:2".into(),
                        target: t.id.clone(),
                        verdict: verdict.into(),
                        matched_question_indices: vec![],
                    },
                )
                .unwrap();
        }
    }
    let manifest = Manifest {
        unit: UnitKind::Question,
        rubric: Rubric::builtin("seed002-coverage").unwrap(),
        runs: vec![run.run.clone()],
        by: vec![],
        n: None,
        seed: 4,
        batch: None,
    };
    let sample = draw(std::slice::from_ref(&run.store), manifest).unwrap();
    let sheet = write(std::slice::from_ref(&run.store), &sample, out).unwrap();
    (sample.id, std::fs::read_to_string(sheet).unwrap().lines().map(str::to_string).collect())
}

/// The sheet with row i's label set to `label(i, item)`.
fn filled(lines: &[String], label: impl Fn(usize, &str) -> String) -> String {
    let mut out = vec![lines[0].clone()];
    for (i, line) in lines[1..].iter().enumerate() {
        let cells: Vec<&str> = line.split(',').collect();
        out.push(format!("{},{},{},{},{}", cells[0], cells[1], cells[2], label(i, cells[1]), cells[4]));
    }
    out.join("\n") + "\n"
}

fn save(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn import_rejects_unknown_labels_missing_and_repeated_rows_and_duplicate_raters() {
    let run = thirteen();
    let out = tempfile::tempdir().unwrap();
    let (sample, lines) = coverage_sample(&run, out.path());
    let dir = out.path();
    let error = |sheet: &Path, rater: &str| import(&run.store, sheet, rater).unwrap_err().to_string();

    let unknown = save(dir, "unknown.csv", &filled(&lines, |i, _| if i == 2 { "maybe".into() } else { "covered".into() }));
    assert_eq!(
        error(&unknown, "alice"),
        format!("{}, row 4: `maybe` is not a value of label `coverage`; give one of covered, uncovered, uncertain", unknown.display())
    );
    let empty = save(dir, "empty.csv", &filled(&lines, |i, _| if i == 0 { String::new() } else { "covered".into() }));
    assert_eq!(
        error(&empty, "alice"),
        format!("{}, row 2: label `coverage` is empty; give one of covered, uncovered, uncertain", empty.display())
    );
    let full = filled(&lines, |_, _| "Covered ".into());
    let mut short: Vec<&str> = full.lines().collect();
    let dropped = short.remove(3).split(',').nth(1).unwrap().to_string();
    let missing = save(dir, "missing.csv", &(short.join("\n") + "\n"));
    assert_eq!(
        error(&missing, "alice"),
        format!("{}: item `{dropped}` (row 4 of the sheet as drawn) is missing; every item of the sample needs a row", missing.display())
    );
    let mut twice: Vec<&str> = full.lines().collect();
    twice.push(full.lines().nth(1).unwrap());
    let repeated = save(dir, "repeated.csv", &(twice.join("\n") + "\n"));
    let first_item = full.lines().nth(1).unwrap().split(',').nth(1).unwrap().to_string();
    assert_eq!(
        error(&repeated, "alice"),
        format!("{}, row {}: item `{first_item}` appears again (first on row 2)", repeated.display(), lines.len() + 1)
    );
    let header = save(dir, "header.csv", &full.replacen("coverage", "covrage", 1));
    assert_eq!(
        error(&header, "alice"),
        format!("{}, row 1: the header must be `sample,item,page,coverage,note` (rubric seed002-coverage)", header.display())
    );
    assert!(run.store.audit_sheets(&sample).unwrap().is_empty(), "a refused sheet stores nothing");

    let good = save(dir, "alice.csv", &full);
    let imported = import(&run.store, &good, "alice").unwrap();
    assert_eq!((imported.rows, imported.labels, imported.notes), (lines.len() - 1, lines.len() - 1, 0));
    assert_eq!(error(&good, "alice"), format!("run {}", run.run.display()), "the duplicate rater error is the store's, chained");
    let chained = {
        let e = import(&run.store, &good, "alice").unwrap_err();
        std::error::Error::source(&e).unwrap().to_string()
    };
    assert_eq!(
        chained,
        format!(
            "rater alice has labelled audit sample {sample} already; to replace those labels with a corrected sheet, import it with --replace (another rater needs another name)"
        )
    );
    // Stored in the rubric's spelling.
    assert!(run.store.audit_labels(&sample).unwrap().iter().all(|l| l.value == "covered"));
}

/// The sheet with every item labelled `label`, and `note` on the first item's row.
fn with_note(lines: &[String], label: &str, note: &str) -> String {
    let mut out = vec![lines[0].clone()];
    for (i, line) in lines[1..].iter().enumerate() {
        let cells: Vec<&str> = line.split(',').collect();
        let note = if i == 0 { note } else { "" };
        out.push(format!("{},{},{},{label},{note}", cells[0], cells[1], cells[2]));
    }
    out.join("\n") + "\n"
}

/// Regression (issue 30 item 6): rows were numbered by the CSV file's lines (a note with a line
/// break shifted every later row), notes counted as labels, and a rater could not import a
/// corrected sheet.
#[test]
fn rows_are_numbered_as_a_spreadsheet_shows_them_notes_are_no_labels_and_a_corrected_sheet_replaces() {
    let run = thirteen();
    let out = tempfile::tempdir().unwrap();
    let (sample, lines) = coverage_sample(&run, out.path());
    let items = lines.len() - 1;
    let note = "\"first line\nsecond line, \"\"quoted\"\"\"";
    // Row 4 (the third item) is wrong; the note on row 2 spans two lines of the file.
    let mut wrong: Vec<String> = with_note(&lines, "covered", note).lines().map(str::to_string).collect();
    wrong[4] = wrong[4].replace(",covered,", ",maybe,");
    let wrong = save(out.path(), "wrong.csv", &(wrong.join("\n") + "\n"));
    let error = import(&run.store, &wrong, "alice").unwrap_err().to_string();
    assert_eq!(
        error,
        format!("{}, row 4: `maybe` is not a value of label `coverage`; give one of covered, uncovered, uncertain", wrong.display())
    );

    let first = save(out.path(), "alice.csv", &with_note(&lines, "covered", note));
    let imported = import(&run.store, &first, "alice").unwrap();
    assert_eq!((imported.rows, imported.labels, imported.notes, imported.replaced), (items, items, 1, false));
    let stored = run.store.audit_labels(&sample).unwrap();
    assert_eq!(stored.iter().find(|l| l.label == "note").map(|l| l.value.as_str()), Some("first line\nsecond line, \"quoted\""));

    // The rater corrects the sheet: refused without --replace, taken in place of the first with it.
    let corrected = save(out.path(), "alice-2.csv", &with_note(&lines, "uncovered", ""));
    let refused = import(&run.store, &corrected, "alice").unwrap_err();
    assert!(
        std::error::Error::source(&refused).unwrap().to_string().contains("import it with --replace"),
        "{}",
        std::error::Error::source(&refused).unwrap()
    );
    let replaced = import_sheet(&run.store, &corrected, "alice", ImportMode::Replace).unwrap();
    assert_eq!((replaced.rows, replaced.labels, replaced.notes, replaced.replaced), (items, items, 0, true));
    let stored = run.store.audit_labels(&sample).unwrap();
    assert_eq!(stored.len(), items, "the earlier labels and note are gone");
    assert!(stored.iter().all(|l| l.label == "coverage" && l.value == "uncovered"), "{stored:?}");
    let sheets = run.store.audit_sheets(&sample).unwrap();
    assert_eq!(sheets.len(), 1);
    assert_eq!(sheets[0].path, corrected.display().to_string());
}

#[test]
fn the_report_gives_rates_agreement_and_the_judge_comparison() {
    let run = thirteen();
    let out = tempfile::tempdir().unwrap();
    let (sample, lines) = coverage_sample(&run, out.path());
    let targets = specgap_task::load(crate::fixture::retail().0).unwrap().clarifications().to_vec();
    let first_target = format!("#target={}", targets[0].id);
    // Alice agrees with the judge everywhere; Bob says covered everywhere and leaves one
    // item uncertain, with a note.
    let alice = filled(&lines, |_, item| if item.ends_with(&first_target) { "covered".into() } else { "uncovered".into() });
    let bob = filled(&lines, |i, _| if i == 0 { "uncertain,\"not sure, really\"".into() } else { "covered".into() });
    let bob = bob.replace(",\"not sure, really\",\n", ",\"not sure, really\"\n");
    import(&run.store, &save(out.path(), "alice.csv", &alice), "alice").unwrap();
    import(&run.store, &save(out.path(), "bob.csv", &bob), "bob").unwrap();
    let report = sample_report(&run.store, &sample).unwrap();
    assert_eq!(report.raters, vec!["alice", "bob"]);
    assert_eq!(report.cases, 1);
    let n = lines.len() - 1;
    let covered_by_alice = 3;
    let rate = |rater: &str, value: &str| report.rates.iter().find(|r| r.rater == rater && r.value == value).unwrap();
    assert_eq!(rate("alice", "covered").count, covered_by_alice);
    assert_eq!(rate("alice", "covered").share.value, covered_by_alice as f64 / n as f64);
    assert_eq!(rate("alice", "covered").share.low, None, "one case: no interval");
    assert_eq!(rate("bob", "uncertain").count, 1);
    let agreement = |first: &str, second: &str, without: bool| {
        report.agreements.iter().find(|a| a.first == first && a.second == second && a.without_uncertain == without).unwrap()
    };
    let judge = agreement("alice", "judge:offline:2", false);
    assert_eq!((judge.items, judge.percent.value, judge.kappa.value), (n, 1.0, 1.0));
    assert_eq!(judge.confusion, vec![vec![3, 0, 0], vec![0, n - 3, 0], vec![0, 0, 0]]);
    // Without bob's uncertain item, bob is constant (covered).
    let pair = agreement("alice", "bob", true);
    assert_eq!(pair.items, n - 1);
    // One side constant: Cohen's kappa is 0 (sklearn cohen_kappa_score gives 0.0 when one
    // rater uses one value and the other two).
    assert_eq!(pair.kappa.value, 0.0);
    let bob_note = run.store.audit_labels(&sample).unwrap().into_iter().find(|l| l.rater == "bob" && l.label == "note").unwrap();
    assert_eq!(bob_note.value, "not sure, really");
}
