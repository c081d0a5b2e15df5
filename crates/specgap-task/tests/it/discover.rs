//! Finding packages in a suite.

use specgap_task::LoadError;

use crate::support::{Copy, copy_tree, fixture};

#[test]
fn discover_finds_every_fixture_sorted_by_name() {
    let packages = specgap_task::discover(&[fixture("")]).unwrap();
    let names: Vec<&str> = packages.iter().map(|p| p.name()).collect();
    assert_eq!(names, ["fixtures/delivery-basic", "fixtures/req-basic", "fixtures/test-basic"]);
}

#[test]
fn discover_skips_package_insides_and_hidden_directories() {
    let tmp = tempfile::tempdir().unwrap();
    copy_tree(&fixture("req-basic"), &tmp.path().join("suite/b"));
    // A task.toml inside a workspace, a residual dir or a hidden dir is not a package.
    copy_tree(&fixture("test-basic"), &tmp.path().join("suite/b/workspace/nested"));
    copy_tree(&fixture("test-basic"), &tmp.path().join("suite/residual/x"));
    copy_tree(&fixture("test-basic"), &tmp.path().join("suite/.cache/x"));
    copy_tree(&fixture("delivery-basic"), &tmp.path().join("suite/a/deep/delivery"));
    let dirs = specgap_task::discover_dirs(&[tmp.path().join("suite")]).unwrap();
    assert_eq!(dirs, [tmp.path().join("suite/a/deep/delivery"), tmp.path().join("suite/b")]);
    // A task.toml path names its package.
    let dirs = specgap_task::discover_dirs(&[tmp.path().join("suite/b/task.toml")]).unwrap();
    assert_eq!(dirs, [tmp.path().join("suite/b")]);
}

#[test]
fn duplicate_task_names_name_both_packages() {
    let tmp = tempfile::tempdir().unwrap();
    copy_tree(&fixture("req-basic"), &tmp.path().join("one"));
    copy_tree(&fixture("req-basic"), &tmp.path().join("two"));
    let err = specgap_task::discover(&[tmp.path()]).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "task name `fixtures/req-basic` is used by two packages: {} and {}",
            tmp.path().join("one").display(),
            tmp.path().join("two").display()
        )
    );
}

#[test]
fn nothing_found_is_an_error() {
    let tmp = tempfile::tempdir().unwrap();
    let err = specgap_task::discover(&[tmp.path()]).unwrap_err();
    assert!(matches!(err, LoadError::NoPackages { .. }));
    assert_eq!(err.to_string(), format!("no task packages (directories with a task.toml) found under {}", tmp.path().display()));
}

#[test]
fn a_missing_path_is_named_as_missing() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("nonexist");
    let err = specgap_task::discover(&[&missing]).unwrap_err();
    assert!(matches!(err, LoadError::NoSuchPath { .. }));
    assert_eq!(err.to_string(), format!("no such file or directory: {} (expected a task package or a suite directory)", missing.display()));
}

#[test]
fn discover_reports_a_broken_package() {
    let copy = Copy::of("req-basic");
    copy.remove("instruction.md");
    let err = specgap_task::discover(&[copy.root.parent().unwrap()]).unwrap_err();
    assert!(matches!(err, LoadError::MissingInstruction { .. }));
}

/// Issue 10 item 8: a run over a suite named only the first broken package.
#[test]
fn discover_names_every_broken_package_then_stops() {
    let tmp = tempfile::tempdir().unwrap();
    let suite = tmp.path().join("suite");
    copy_tree(&fixture("req-basic"), &suite.join("a-broken"));
    copy_tree(&fixture("test-basic"), &suite.join("b-good"));
    copy_tree(&fixture("delivery-basic"), &suite.join("c-broken"));
    copy_tree(&fixture("test-basic"), &suite.join("d-same-name"));
    fs_err::remove_file(suite.join("a-broken/instruction.md")).unwrap();
    fs_err::write(suite.join("c-broken/task.toml"), "format = 1\n[task]\nnme = \"x\"\n").unwrap();
    let err = specgap_task::discover(&[&suite]).unwrap_err();
    let LoadError::BrokenPackages { errors } = &err else { panic!("expected BrokenPackages, got {err:?}") };
    assert_eq!(errors.len(), 3);
    assert_eq!(
        err.to_string(),
        format!(
            "3 errors in the suite's packages:\n  \
             - {}: missing instruction.md; every package needs its opening instruction\n  \
             - {}:3:1: unknown field `nme`, expected one of `name`, `version`, `description`, `family`, `tags`, `subfamily`\n  \
             - task name `fixtures/test-basic` is used by two packages: {} and {}",
            suite.join("a-broken").display(),
            suite.join("c-broken/task.toml").display(),
            suite.join("b-good").display(),
            suite.join("d-same-name").display(),
        )
    );
}
