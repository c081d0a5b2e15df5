//! Stage II over fabricated runs (each criterion, in order; duplicates) and the rules of
//! resumption.

use specgap_protocol::run::EndReason;
use specgap_residualize::ResidualizeError;
use specgap_residualize::filter::{FilterExclusion, Screen, ScreenedRun};
use specgap_residualize::pipeline::{Reached, Request, WORK_DIR};
use specgap_store::Status;

use crate::support::*;

const CACHE_SECTION: &[u8] = b"diff --git a/ivtree/__pycache__/tree.cpython-311.pyc b/ivtree/__pycache__/tree.cpython-311.pyc
new file mode 100644
index 0000000000000000000000000000000000000000..2b1ba2dd4b0b24ae7b5a1e7f43e7b1c1e9d8f0a1
--- /dev/null
+++ b/ivtree/__pycache__/tree.cpython-311.pyc
@@ -0,0 +1 @@
+cache
";

fn candidates(dir: &std::path::Path) -> Vec<ScreenedRun> {
    serde_json::from_slice(&fs_err::read(dir.join(WORK_DIR).join("candidates.json")).unwrap()).unwrap()
}

fn request(dir: &std::path::Path) -> Request {
    Request { dir: dir.to_path_buf(), sandbox: true, ..Request::default() }
}

#[test]
fn stage_two_names_the_first_criterion_each_run_fails_and_keeps_the_first_of_identical_states() {
    let tmp = tempfile::tempdir().unwrap();
    let package = specgap_task::load(interval_tree()).unwrap();
    let task = package.name().to_string();
    let trim = state_diff(&package, "trim-only");
    let root = state_diff(&package, "root-refresh");
    let mut trim_and_cache = trim.clone();
    trim_and_cache.extend_from_slice(CACHE_SECTION);
    let failing = Final::failing(&["chop_splits_straddling", "random_chop_matches_model"], trim.clone());
    let runs = vec![
        Predecessor { start: "residual:trim-only", ..Predecessor::submitted(&task, "p:continuation", 0, failing.clone()) },
        Predecessor { status: Status::Running, end: None, last: None, ..Predecessor::submitted(&task, "p:running", 0, failing.clone()) },
        Predecessor {
            status: Status::Interrupted,
            end: Some(EndReason::Interrupted),
            last: None,
            ..Predecessor::submitted(&task, "p:running", 1, failing.clone())
        },
        Predecessor {
            status: Status::InfraError,
            end: Some(EndReason::InfrastructureError),
            last: None,
            ..Predecessor::submitted(&task, "p:infra", 0, failing.clone())
        },
        Predecessor {
            end: Some(EndReason::TurnBudget),
            last: Some(Final { declared: false, ..failing.clone() }),
            ..Predecessor::submitted(&task, "p:budget", 0, failing.clone())
        },
        Predecessor { end: Some(EndReason::AgentDone), last: None, ..Predecessor::submitted(&task, "p:silent", 0, failing.clone()) },
        Predecessor {
            status: Status::EvalError,
            end: Some(EndReason::EvaluationError),
            last: Some(Final { valid: false, ..failing.clone() }),
            ..Predecessor::submitted(&task, "p:evalerr", 0, failing.clone())
        },
        Predecessor::submitted(&task, "p:passing", 0, Final::failing(&[], trim.clone())),
        Predecessor::submitted(&task, "p:cache", 0, Final::failing(&TESTS, CACHE_SECTION.to_vec())),
        Predecessor::submitted(&task, "p:nothing", 0, Final::failing(&TESTS, Vec::new())),
        Predecessor::submitted(&task, "p:first", 0, failing.clone()),
        Predecessor::submitted(&task, "p:second", 0, Final { diff: trim_and_cache, ..failing.clone() }),
        Predecessor::submitted(&task, "p:first", 1, Final::failing(&["random_remove_matches_model"], root)),
    ];
    let ids = write_run(tmp.path(), &[&package], &runs);
    let (advanced, notes) = run(&request(tmp.path())).unwrap();
    assert_eq!(advanced.reached, Reached::AwaitingReviews);
    assert_eq!(
        notes,
        [format!("filtered 13 predecessor run(s): 2 candidate(s); review bundles in {}", tmp.path().join("residualize/review").display())]
    );

    let screened = candidates(tmp.path());
    let verdicts: Vec<(String, Option<FilterExclusion>, String)> = screened
        .iter()
        .map(|s| match &s.screen {
            Screen::Candidate => (s.agent.clone(), None, String::new()),
            Screen::Excluded { reason, detail } => (s.agent.clone(), Some(*reason), detail.clone()),
        })
        .collect();
    use FilterExclusion::*;
    let expected: Vec<(String, Option<FilterExclusion>, String)> = vec![
        ("p:continuation", Some(NotCleanStart), "start residual:trim-only".to_string()),
        ("p:running", Some(Unfinished), "status running".into()),
        ("p:running", Some(Unfinished), "status interrupted".into()),
        ("p:infra", Some(InfrastructureFailure), "model service returned HTTP 500 after 0 retries".into()),
        ("p:budget", Some(NotDeclaredComplete), "ended turn_budget; the final submission was automatic".into()),
        ("p:silent", Some(NotDeclaredComplete), "ended agent_done without a submission".into()),
        ("p:evalerr", Some(NoValidVerdict), "evaluation error: the evaluator exited with status 1".into()),
        ("p:passing", Some(Passed), "submission 1 passes".into()),
        ("p:cache", Some(Unchanged), "changes only ivtree/__pycache__/tree.cpython-311.pyc".into()),
        ("p:nothing", Some(Unchanged), "the final state equals the clean state".into()),
        // Plan order: p:first's second repeat before p:second, whichever ran first.
        ("p:first", None, String::new()),
        ("p:first", None, String::new()),
        ("p:second", Some(Duplicate), format!("same final state as episode {}", ids[10])),
    ]
    .into_iter()
    .map(|(a, r, d)| (a.to_string(), r, d))
    .collect();
    assert_eq!(verdicts, expected);
    let kept = &screened[10];
    assert_eq!(kept.episode, ids[10]);
    assert_eq!(kept.failing_tests, ["chop_splits_straddling", "random_chop_matches_model"]);
    assert_eq!(kept.substantive_files, ["CHANGELOG.md", "README.md", "ivtree/node.py", "ivtree/tree.py", "tests/test_chop.py"]);
    let duplicate = &screened[12];
    assert_eq!(duplicate.changed_files.len(), 6);
    assert_eq!(duplicate.normalized_sha256, kept.normalized_sha256);
    assert_ne!(duplicate.diff_sha256, kept.diff_sha256);

    let markdown = advanced.funnel.markdown();
    for line in [
        "| I. Generation | Predecessor runs | 13 |",
        "| II. Automatic filtering | Excluded: Not started from the clean state | 1 |",
        "|  | Excluded: Unfinished (running or interrupted) | 2 |",
        "|  | Excluded: Not declared complete (budget, loop or script end) | 2 |",
        "|  | Excluded: No change beyond build outputs, caches and logs | 2 |",
        "|  | Candidates | 2 |",
        "|  | Awaiting review | 2 |",
        "|  | Passed review | 0 |",
        "| p:first | 2 | 2 | 0 | 0 |",
    ] {
        assert!(markdown.lines().any(|l| l == line), "no line {line:?} in\n{markdown}");
    }
    let sheet = fs_err::read_to_string(tmp.path().join("residualize/review/sheet.csv")).unwrap();
    assert_eq!(
        sheet,
        format!("candidate,task,predecessor,task_directed,consistent,note\n{},{task},p:first,,,\n{},{task},p:first,,,\n", ids[10], ids[12])
    );
}

#[test]
fn stored_settings_hold_candidates_follow_the_sources_until_reviewed_and_reviews_can_be_redone_before_the_build() {
    let tmp = tempfile::tempdir().unwrap();
    let package = specgap_task::load(interval_tree()).unwrap();
    let task = package.name().to_string();
    let gen_dir = tmp.path().join("gen_dir");
    let first = write_run(
        &gen_dir,
        &[&package],
        &[Predecessor::submitted(
            &task,
            "p:a",
            0,
            Final::failing(&["chop_splits_straddling", "random_chop_matches_model"], state_diff(&package, "trim-only")),
        )],
    );
    let (advanced, _) = run(&request(&gen_dir)).unwrap();
    assert_eq!((advanced.reached, advanced.funnel.stages[2].pending), (Reached::AwaitingReviews, 1));

    // The sources and ignore rules are fixed once stored.
    let other = tmp.path().join("other");
    write_run(&other, &[&package], &[]);
    let err = run(&Request { sources: vec![other.clone()], ..request(&gen_dir) }).unwrap_err();
    assert!(matches!(err, ResidualizeError::ConfigMismatch { what: "the source runs", .. }), "{err}");
    let err = run(&Request { ignore: Some(vec!["*.log".into()]), ..request(&gen_dir) }).unwrap_err();
    assert!(matches!(err, ResidualizeError::ConfigMismatch { what: "the ignore rules", .. }), "{err}");
    assert!(err.to_string().contains("was made with the ignore rules __pycache__/ *.pyc"), "{err}");

    // A generation that goes on before review: the candidates and the sheet follow it; a sheet
    // someone filled in place is moved aside, not overwritten.
    let review_dir = gen_dir.join("residualize/review");
    let filled = format!("candidate,task_directed,consistent\n{},yes,yes\n", first[0]);
    fs_err::write(review_dir.join("sheet.csv"), &filled).unwrap();
    fs_err::write(review_dir.join("bob.csv"), "a reviewer's own copy").unwrap();
    let second = append_run(
        &gen_dir,
        &package,
        &Predecessor::submitted(&task, "p:a", 1, Final::failing(&["random_remove_matches_model"], state_diff(&package, "root-refresh"))),
    );
    let (advanced, notes) = run(&request(&gen_dir)).unwrap();
    assert_eq!(advanced.funnel.stages[1].output, 2);
    let sheet_text = fs_err::read_to_string(review_dir.join("sheet.csv")).unwrap();
    assert_eq!(sheet_text.lines().count(), 3);
    assert_eq!(
        notes.last().unwrap(),
        &format!(
            "the candidates changed: the sheet filled in place was moved to {}; its rows may no longer match",
            review_dir.join("sheet.filled-1.csv").display()
        )
    );
    assert_eq!(fs_err::read_to_string(review_dir.join("sheet.filled-1.csv")).unwrap(), filled);
    assert_eq!(fs_err::read_to_string(review_dir.join("bob.csv")).unwrap(), "a reviewer's own copy");
    assert!(review_dir.join(&second).join("review.md").is_file());

    // Reviews without a target: awaiting the target. A second import with other verdicts
    // replaces the first while nothing is built.
    let alice = sheet(&tmp.path().join("alice.csv"), &[(&first[0], "yes", "yes"), (&second, "yes", "yes")]);
    let bob = sheet(&tmp.path().join("bob.csv"), &[(&first[0], "yes", "yes"), (&second, "no", "yes")]);
    let reviews = vec![("alice".to_string(), alice.clone()), ("bob".to_string(), bob.clone())];
    let (advanced, notes) = run(&Request { reviews: reviews.clone(), ..request(&gen_dir) }).unwrap();
    assert_eq!(advanced.reached, Reached::AwaitingTarget);
    assert_eq!(notes, ["imported the reviews of alice and bob: 1 of 2 candidate(s) passed"]);
    let (again, notes) = run(&Request { reviews: reviews.clone(), ..request(&gen_dir) }).unwrap();
    assert!(notes.is_empty(), "the same sheets again change nothing: {notes:?}");
    assert_eq!(again.funnel, advanced.funnel);
    sheet(&bob, &[(&first[0], "yes", "yes"), (&second, "yes", "yes")]);
    let (advanced, notes) = run(&Request { reviews, ..request(&gen_dir) }).unwrap();
    assert_eq!(notes, ["imported the reviews of alice and bob: 2 of 2 candidate(s) passed"]);
    assert_eq!(advanced.funnel.stages[2].output, 2);
    let (stored, _) = run(&request(&gen_dir)).unwrap();
    assert_eq!((stored.reached, stored.funnel.stages[2].output), (Reached::AwaitingTarget, 2), "later calls use the stored reviews");

    // After review, a source that changes is refused: the reviews would not cover it.
    append_run(
        &gen_dir,
        &package,
        &Predecessor::submitted(
            &task,
            "p:a",
            2,
            Final::failing(&["random_remove_matches_model"], state_diff(&package, "trim-only")[..40].to_vec()),
        ),
    );
    let err = run(&request(&gen_dir)).unwrap_err();
    assert!(matches!(err, ResidualizeError::CandidatesChanged { .. }), "{err}");
    assert!(err.to_string().contains("(2 run(s) and 2 candidate(s) when reviewed, 3 run(s) and 3 candidate(s) now)"), "{err}");
}

#[test]
fn a_pipeline_without_candidates_stops_after_the_filter_and_a_missing_source_is_named() {
    let tmp = tempfile::tempdir().unwrap();
    let package = specgap_task::load(interval_tree()).unwrap();
    let gen_dir = tmp.path().join("gen_dir");
    write_run(&gen_dir, &[&package], &[Predecessor::submitted(package.name(), "p:gold", 0, Final::failing(&[], gold_diff(&package)))]);
    let (advanced, _) = run(&request(&gen_dir)).unwrap();
    assert_eq!(advanced.reached, Reached::NoCandidates);
    assert_eq!(advanced.funnel.stages[1].output, 0);
    assert_eq!(nonzero(&advanced, 1), [("passed".to_string(), 1)]);

    let err = run(&request(&tmp.path().join("not-a-run"))).unwrap_err();
    assert!(matches!(err, ResidualizeError::NoSources { .. }), "{err}");
    let err = run(&Request { sources: vec![tmp.path().join("missing")], ..request(&tmp.path().join("work")) }).unwrap_err();
    assert!(err.to_string().contains("missing"), "{err}");
}
