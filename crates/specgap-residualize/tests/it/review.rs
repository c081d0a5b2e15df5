//! Stage III: label sheets (the `seed001-review` rubric), their errors, verdicts and Cohen's
//! kappa against scikit-learn.

use std::path::{Path, PathBuf};

use specgap_residualize::ResidualizeError;
use specgap_residualize::filter::{Screen, ScreenedRun};
use specgap_residualize::review::{ReviewExclusion, import};

fn candidate(id: &str) -> ScreenedRun {
    ScreenedRun {
        run: "/runs/gen".into(),
        episode: id.into(),
        task: "examples/interval-tree".into(),
        task_hash: "h".into(),
        task_path: None,
        agent: "chat:m".into(),
        condition: "blind".into(),
        start: "clean".into(),
        repeat: 0,
        status: "finished".into(),
        end_reason: Some("submitted".into()),
        steps: 3,
        final_submission: Some(1),
        failing_tests: vec!["t".into()],
        changed_files: vec!["a.py".into()],
        substantive_files: vec!["a.py".into()],
        diff_sha256: None,
        normalized_sha256: None,
        machine_sha256: None,
        screen: Screen::Candidate,
    }
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    fs_err::write(&path, text).unwrap();
    path
}

fn pair(a: PathBuf, b: PathBuf) -> Vec<(String, PathBuf)> {
    vec![("alice".into(), a), ("bob".into(), b)]
}

#[test]
fn verdicts_need_both_reviewers_and_agreement_matches_scikit_learn() {
    let tmp = tempfile::tempdir().unwrap();
    let ids = ["c1", "c2", "c3", "c4", "c5"];
    let runs: Vec<ScreenedRun> = ids.iter().map(|id| candidate(id)).collect();
    let refs: Vec<&ScreenedRun> = runs.iter().collect();
    // alice's verdicts keep, keep, drop, keep, drop; bob's keep, drop, drop, keep, keep.
    let alice = write(
        tmp.path(),
        "a.csv",
        "candidate,task_directed,consistent,note\nc1,yes,yes,\nc2,yes,yes,\nc3,no,yes,off topic\nc4,yes,yes,\nc5,yes,no,\"tests want more, see t\"\n",
    );
    let bob = write(
        tmp.path(),
        "b.csv",
        "task_directed,candidate,consistent\r\nYES,c1,yes\r\nyes,c2,no\r\nno,c3,no\r\n yes ,c4, yes\r\nyes,c5,yes\r\n",
    );
    let reviews = import(&pair(alice, bob), &refs).unwrap();
    let outcomes: Vec<Option<ReviewExclusion>> = reviews.candidates.iter().map(|c| c.excluded).collect();
    assert_eq!(
        outcomes,
        [
            None,
            Some(ReviewExclusion::TaskVerifierInconsistent),
            Some(ReviewExclusion::NotTaskDirected),
            None,
            Some(ReviewExclusion::TaskVerifierInconsistent)
        ]
    );
    assert_eq!(reviews.candidates[4].first.note, "tests want more, see t");
    assert_eq!(reviews.rubric, "seed001-review");
    assert_eq!((reviews.sheets[0].reviewer.as_str(), reviews.sheets[1].reviewer.as_str()), ("alice", "bob"));
    // sklearn.metrics.cohen_kappa_score (scikit-learn 1.9.1):
    //   verdict  ['keep','keep','drop','keep','drop'] vs ['keep','drop','drop','keep','keep'] → 0.16666666666666663
    //   task_directed [y,y,n,y,y] vs [y,y,n,y,y] → 1.0
    //   consistent    [y,y,y,y,n] vs [y,n,n,y,y] → -0.36363636363636354
    let kappa = |label: &str| reviews.agreement[label].kappa.unwrap();
    assert!((kappa("verdict") - 0.166_666_666_666_666_63).abs() < 1e-12, "{}", kappa("verdict"));
    assert!((kappa("task_directed") - 1.0).abs() < 1e-12);
    assert!((kappa("consistent") - -0.363_636_363_636_363_54).abs() < 1e-12, "{}", kappa("consistent"));
    assert_eq!(reviews.agreement["verdict"].items, 5);
    assert!((reviews.agreement["verdict"].observed.unwrap() - 0.6).abs() < 1e-12);
}

#[test]
fn kappa_is_undefined_when_both_reviewers_use_one_label_for_everything() {
    let tmp = tempfile::tempdir().unwrap();
    let runs = [candidate("c1"), candidate("c2")];
    let refs: Vec<&ScreenedRun> = runs.iter().collect();
    let same = "candidate,task_directed,consistent\nc1,yes,yes\nc2,yes,yes\n";
    let reviews = import(&pair(write(tmp.path(), "a.csv", same), write(tmp.path(), "b.csv", same)), &refs).unwrap();
    // sklearn returns nan here (with a warning): no disagreement is expected by chance.
    assert_eq!(reviews.agreement["verdict"].kappa, None);
    assert_eq!(reviews.agreement["verdict"].observed, Some(1.0));
}

#[test]
fn bad_sheets_are_refused_naming_the_sheet_and_row() {
    let tmp = tempfile::tempdir().unwrap();
    let runs = [candidate("c1"), candidate("c2")];
    let refs: Vec<&ScreenedRun> = runs.iter().collect();
    let good = write(tmp.path(), "good.csv", "candidate,task_directed,consistent\nc1,yes,yes\nc2,no,yes\n");
    let cases = [
        ("candidate,task_directed,consistent\nc1,yes,yes\nc9,yes,yes\n", Some(3), "unknown candidate `c9`"),
        (
            "candidate,task_directed,consistent\nc1,yes,yes\nc2,maybe,yes\n",
            Some(3),
            "task_directed of candidate c2 must be yes or no, not `maybe`",
        ),
        ("candidate,task_directed,consistent\nc1,yes,\nc2,yes,yes\n", Some(2), "consistent of candidate c1 must be yes or no, not ``"),
        ("candidate,task_directed,consistent\nc1,yes,yes\nc2,yes,yes\nc1,no,no\n", Some(4), "candidate c1 has a second row"),
        ("candidate,task_directed,consistent\nc2,yes,yes\n", None, "no row for 1 candidate(s): c1"),
        (
            "candidate,verdict\nc1,yes\n",
            Some(1),
            "the header must name the columns candidate, task_directed and consistent (found: candidate, verdict)",
        ),
        ("candidate,task_directed,consistent\nc1,yes,yes,extra\n", Some(2), "not a csv row"),
    ];
    for (text, row, message) in cases {
        let bad = write(tmp.path(), "bad.csv", text);
        let err = import(&pair(good.clone(), bad.clone()), &refs).unwrap_err();
        match &err {
            ResidualizeError::Sheet { path, row: at, message: said } => {
                assert_eq!(path, &bad);
                assert_eq!(*at, row, "{err}");
                assert!(said.starts_with(message), "{said:?} does not start with {message:?}");
            }
            other => panic!("expected a sheet error, got {other}"),
        }
        assert!(err.to_string().starts_with(&format!("review sheet {}", bad.display())));
    }
    let one = import(&[("alice".into(), good.clone())], &refs).unwrap_err();
    assert_eq!(one.to_string(), "seed 001 has two reviewers per candidate: give two sheets (--review NAME=SHEET.csv twice), not 1");
    let same = import(&[("alice".into(), good.clone()), ("alice".into(), good.clone())], &refs).unwrap_err();
    assert_eq!(same.to_string(), "both sheets name reviewer alice; the two reviewers must differ");
}
