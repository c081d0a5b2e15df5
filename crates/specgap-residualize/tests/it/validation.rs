//! Stage IV in the real sandbox: each of Table 5's exclusions, an included state installed
//! into a copy, and an in-place build that resumes after it changed the package.

use specgap_residualize::build::{BuildExclusion, BuildRecord};
use specgap_residualize::pipeline::{Reached, Request, TargetRequest, WORK_DIR};

use crate::support::*;

fn build_record(dir: &std::path::Path) -> BuildRecord {
    serde_json::from_slice(&fs_err::read(dir.join(WORK_DIR).join("build.json")).unwrap()).unwrap()
}

#[test]
fn reconstruction_excludes_each_failed_step_and_installs_only_the_state_that_passes_them_all() {
    let tmp = tempfile::tempdir().unwrap();
    let tree = specgap_task::load(interval_tree()).unwrap();
    let name = tree.name().to_string();
    let no_env = package_copy(&tmp.path().join("no-env"), "t/no-env", |t| {
        t.replace("commands = [\"python3\", \"git\"]", "commands = [\"python3\", \"git\", \"specgap-no-such-command\"]")
    });
    let crashing =
        package_copy(&tmp.path().join("crashing"), "t/crashing", |t| t.replace("command = \"python3 evaluate.py\"", "command = \"false\""));
    let trim_failing = ["chop_splits_straddling", "random_chop_matches_model"];
    let trim = state_diff(&tree, "trim-only");
    let not_applying = b"diff --git a/ivtree/tree.py b/ivtree/tree.py\n--- a/ivtree/tree.py\n+++ b/ivtree/tree.py\n@@ -1 +1 @@\n-no such line in the file\n+x\n".to_vec();
    let runs = vec![
        Predecessor::submitted(&name, "p:ok", 0, Final::failing(&trim_failing, trim.clone())),
        // The author's state.patch: it applies, but its bytes are not the harness's diff of
        // the state it makes (abbreviated blob ids), so the rebuilt state is not the recorded one.
        Predecessor::submitted(
            &name,
            "p:foreign-bytes",
            0,
            Final::failing(&trim_failing, fs_err::read(interval_tree().join("residual/trim-only/state.patch")).unwrap()),
        ),
        Predecessor::submitted(&name, "p:not-applying", 0, Final::failing(&["random_chop_matches_model"], not_applying)),
        Predecessor::submitted(&name, "p:passes-now", 0, Final::failing(&["random_chop_matches_model"], gold_diff(&tree))),
        Predecessor::submitted(&name, "p:other-tests", 0, Final::failing(&["chop_splits_straddling"], state_diff(&tree, "root-refresh"))),
        Predecessor::submitted(no_env.name(), "p:no-env", 0, Final::failing(&trim_failing, trim.clone())),
        Predecessor::submitted(crashing.name(), "p:crashing", 0, Final::failing(&trim_failing, trim.clone())),
    ];
    let gen_dir = tmp.path().join("gen_dir");
    let ids = write_run(&gen_dir, &[&tree, &no_env, &crashing], &runs);
    let (advanced, _) = run(&Request { dir: gen_dir.clone(), sandbox: true, ..Request::default() }).unwrap();
    assert_eq!(advanced.funnel.stages[1].output, 7);
    let rows: Vec<(&str, &str, &str)> = ids.iter().map(|id| (id.as_str(), "yes", "yes")).collect();
    let alice = sheet(&tmp.path().join("alice.csv"), &rows);
    let bob = sheet(&tmp.path().join("bob.csv"), &rows);
    let packages = tmp.path().join("packages");
    let request = Request {
        dir: gen_dir.clone(),
        reviews: vec![("alice".into(), alice), ("bob".into(), bob)],
        target: Some(TargetRequest::WriteTo(packages.clone())),
        sandbox: true,
        ..Request::default()
    };
    let (advanced, notes) = run(&request).unwrap();
    assert_eq!(advanced.reached, Reached::Built);
    assert_eq!(notes.len(), 8, "{notes:#?}");
    assert_eq!(
        nonzero(&advanced, 3),
        [
            ("patch-failed".to_string(), 2),
            ("environment-unusable".to_string(), 1),
            ("no-valid-verdict".to_string(), 1),
            ("no-longer-failing".to_string(), 1),
            ("failing-set-changed".to_string(), 1)
        ]
    );
    assert_eq!(advanced.funnel.included, Some(1));

    let record = build_record(&gen_dir);
    let outcome = |i: usize| {
        let state = record.state(&ids[i]).unwrap();
        (state.excluded, state.detail.clone(), state.failing_now.clone())
    };
    assert_eq!(
        outcome(0),
        (
            None,
            "fails chop_splits_straddling, random_chop_matches_model as recorded".into(),
            vec!["chop_splits_straddling".to_string(), "random_chop_matches_model".to_string()]
        )
    );
    let (excluded, detail, _) = outcome(1);
    assert_eq!(excluded, Some(BuildExclusion::PatchFailed));
    assert!(detail.starts_with("the rebuilt state differs from the recorded final state"), "{detail}");
    let (excluded, detail, _) = outcome(2);
    assert_eq!(excluded, Some(BuildExclusion::PatchFailed));
    assert!(detail.starts_with("state.patch does not apply:"), "{detail}");
    assert_eq!(outcome(3), (Some(BuildExclusion::NoLongerFailing), "the evaluator passes the rebuilt state".into(), Vec::new()));
    assert_eq!(
        outcome(4),
        (
            Some(BuildExclusion::FailingSetChanged),
            "recorded as failing but passing now: chop_splits_straddling; failing now but not recorded: random_remove_matches_model".into(),
            vec!["random_remove_matches_model".to_string()]
        )
    );
    let (excluded, detail, _) = outcome(5);
    assert_eq!(excluded, Some(BuildExclusion::EnvironmentUnusable));
    assert!(detail.contains("specgap-no-such-command"), "{detail}");
    let (excluded, detail, _) = outcome(6);
    assert_eq!(excluded, Some(BuildExclusion::NoValidVerdict));
    assert!(detail.starts_with("evaluation error"), "{detail}");

    // Only the included state is in a package; the copies of the others are untouched.
    let states = |package: &std::path::Path| -> Vec<String> {
        let mut names: Vec<String> =
            fs_err::read_dir(package.join("residual")).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        names.sort();
        names
    };
    let mut expected = vec![ids[0].clone(), "root-refresh".into(), "trim-only".into()];
    expected.sort();
    assert_eq!(states(&packages.join(&name)), expected);
    assert_eq!(states(&packages.join("t/no-env")), ["root-refresh", "trim-only"]);
    let copy = specgap_task::load(packages.join(&name)).unwrap();
    let state = copy.residual(&ids[0]).unwrap();
    assert_eq!(fs_err::read(&state.patch).unwrap(), trim);
    assert_eq!(state.meta.predecessor, "p:ok");
    assert_eq!((state.meta.declared_complete, state.meta.steps), (true, 7));
    assert_eq!(state.meta.failing_tests, trim_failing);
    assert_eq!(state.meta.left_out, Some(Vec::new()));
    assert_eq!(record.packages.iter().find(|p| p.task == name).unwrap().hash_after.as_deref(), Some(copy.hash()));

    // Nothing left to do: the same record.
    let before = fs_err::read(gen_dir.join(WORK_DIR).join("build.json")).unwrap();
    let (again, notes) = run(&Request { dir: gen_dir.clone(), sandbox: true, ..Request::default() }).unwrap();
    assert!(notes.is_empty(), "{notes:?}");
    assert_eq!(again.funnel, advanced.funnel);
    assert_eq!(fs_err::read(gen_dir.join(WORK_DIR).join("build.json")).unwrap(), before);
    assert_eq!(specgap_residualize::pipeline::funnel(&gen_dir).unwrap(), Some(advanced.funnel.clone()));
    assert_eq!(specgap_residualize::pipeline::funnel(tmp.path()).unwrap(), None);
    let stored: specgap_residualize::funnel::Funnel =
        serde_json::from_slice(&fs_err::read(gen_dir.join(WORK_DIR).join("funnel.json")).unwrap()).unwrap();
    assert_eq!(stored, advanced.funnel);
    assert_eq!(fs_err::read_to_string(gen_dir.join(WORK_DIR).join("funnel.md")).unwrap(), advanced.funnel.markdown());
}

#[test]
fn an_in_place_build_resumes_over_the_package_it_changed_and_leaves_no_partial_state() {
    let tmp = tempfile::tempdir().unwrap();
    let package = package_copy(&tmp.path().join("pkg"), "examples/interval-tree", |t| t);
    let name = package.name().to_string();
    let gen_dir = tmp.path().join("gen_dir");
    let first = write_run(
        &gen_dir,
        &[&package],
        &[Predecessor::submitted(
            &name,
            "p:a",
            0,
            Final::failing(&["chop_splits_straddling", "random_chop_matches_model"], state_diff(&package, "trim-only")),
        )],
    );
    let alice = sheet(&tmp.path().join("a.csv"), &[(&first[0], "yes", "yes")]);
    let bob = sheet(&tmp.path().join("b.csv"), &[(&first[0], "yes", "yes")]);
    let request = Request {
        dir: gen_dir.clone(),
        reviews: vec![("alice".into(), alice.clone()), ("bob".into(), bob.clone())],
        target: Some(TargetRequest::InPlace),
        sandbox: true,
        ..Request::default()
    };
    let (advanced, _) = run(&request).unwrap();
    assert_eq!((advanced.reached, advanced.funnel.included), (Reached::Built, Some(1)));
    let changed = specgap_task::load(tmp.path().join("pkg")).unwrap();
    assert!(changed.residual(&first[0]).is_some());
    assert_ne!(changed.hash(), package.hash());

    // Another pipeline over a run of the package as it was before these states is refused:
    // the package's hash is no longer the one its predecessors ran on (one pipeline with both
    // runs as sources is the way to build from both).
    let gen_dir2 = tmp.path().join("gen_dir2");
    let second = write_run(
        &gen_dir2,
        &[&package],
        &[Predecessor::submitted(&name, "p:b", 0, Final::failing(&["random_remove_matches_model"], state_diff(&package, "root-refresh")))],
    );
    let alice2 = sheet(&tmp.path().join("a2.csv"), &[(&second[0], "yes", "yes")]);
    let bob2 = sheet(&tmp.path().join("b2.csv"), &[(&second[0], "yes", "yes")]);
    let err = run(&Request {
        dir: gen_dir2.clone(),
        reviews: vec![("alice".into(), alice2), ("bob".into(), bob2)],
        target: Some(TargetRequest::InPlace),
        sandbox: true,
        ..Request::default()
    })
    .unwrap_err();
    assert!(err.to_string().contains("the package changed since the run"), "{err}");

    // A partial state left by an interrupted install is removed by the next call.
    let partial = tmp.path().join("pkg/residual").join(format!(".{}.residualize-partial", first[0]));
    fs_err::create_dir_all(&partial).unwrap();
    let (again, _) = run(&Request { dir: gen_dir.clone(), sandbox: true, ..Request::default() }).unwrap();
    assert_eq!(again.funnel.included, Some(1));
    assert!(!partial.exists());
    assert!(specgap_task::load(tmp.path().join("pkg")).is_ok());
}
