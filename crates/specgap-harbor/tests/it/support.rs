//! Shared helpers: the fixture dataset, a fresh import of it.

use std::path::{Path, PathBuf};

use specgap_harbor::{ImportOptions, Outcome, import};

/// The fixture dataset (`tests/fixtures/dataset`).
pub fn dataset() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/dataset")
}

/// Whether a test needing an external program must fail rather than skip.
pub fn required() -> bool {
    std::env::var("SPECGAP_REQUIRE_EXTERNAL").is_ok_and(|v| v == "1")
}

/// Imports the whole fixture dataset into a fresh directory.
pub fn import_dataset() -> (tempfile::TempDir, Vec<Outcome>) {
    let out = tempfile::tempdir().unwrap();
    let outcomes = import(&dataset(), out.path(), &ImportOptions::default()).unwrap();
    (out, outcomes)
}

/// Imports one fixture task into a fresh directory; returns the directory and the package.
pub fn import_one(name: &str) -> (tempfile::TempDir, PathBuf) {
    let out = tempfile::tempdir().unwrap();
    let package = out.path().join(name);
    let outcome = specgap_harbor::import_task(&dataset().join(name), &package, &ImportOptions::default()).unwrap();
    assert!(matches!(outcome, Outcome::Imported { .. }), "{}", outcome.line());
    (out, package)
}

/// A fixture task outside the dataset (`tests/fixtures/<name>`), so the dataset's lists stay.
pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name)
}

/// Imports the fixture task `tests/fixtures/<name>` into a fresh directory; returns the
/// directory and the package.
pub fn import_fixture(name: &str) -> (tempfile::TempDir, PathBuf) {
    let out = tempfile::tempdir().unwrap();
    let package = out.path().join(name);
    let outcome = specgap_harbor::import_task(&fixture(name), &package, &ImportOptions::default()).unwrap();
    assert!(matches!(outcome, Outcome::Imported { .. }), "{}", outcome.line());
    (out, package)
}
