//! Shared helpers: the fixture dataset, a fresh import of it, the environment cache of these
//! tests.

use std::path::{Path, PathBuf};
use std::sync::Once;

use specgap_harbor::{EngineChoice, ImportOptions, Outcome, import};

/// The environment cache of these tests, under the target directory: every test that imports
/// an image task (whose image the import builds) calls this first, so `XDG_CACHE_HOME` is set
/// once, before any test reads it.
pub fn use_test_cache() {
    static CACHE: Once = Once::new();
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("specgap-harbor-env-cache");
    // SAFETY: set once, and every test of this binary that reads XDG_CACHE_HOME (an import of
    // an image task) calls this function before it does.
    CACHE.call_once(|| unsafe { std::env::set_var("XDG_CACHE_HOME", &dir) });
}

/// The options of the fixture imports: no engine, so the dataset's image task (whose
/// Dockerfile installs packages from the network) is never built and always imports with its
/// starter marked incomplete, on any machine.
pub fn fixture_options() -> ImportOptions {
    use_test_cache();
    ImportOptions { engine: EngineChoice::None, ..ImportOptions::default() }
}

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
    let outcomes = import(&dataset(), out.path(), &fixture_options()).unwrap();
    (out, outcomes)
}

/// Imports one fixture task into a fresh directory; returns the directory and the package.
pub fn import_one(name: &str) -> (tempfile::TempDir, PathBuf) {
    let out = tempfile::tempdir().unwrap();
    let package = out.path().join(name);
    let outcome = specgap_harbor::import_task(&dataset().join(name), &package, &fixture_options()).unwrap();
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
    let outcome = specgap_harbor::import_task(&fixture(name), &package, &fixture_options()).unwrap();
    assert!(matches!(outcome, Outcome::Imported { .. }), "{}", outcome.line());
    (out, package)
}
