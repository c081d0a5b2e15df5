//! Tests that need an external program (a CLI installation, busybox-static, podman…): where it
//! is missing the test is skipped with a note, except under `SPECGAP_REQUIRE_EXTERNAL=1` (set by
//! `.ci/run`), where a missing program fails it — CI must not pass by skipping.

use std::path::Path;

/// The variable that turns a missing external program from a skip into a failure.
pub const REQUIRE_EXTERNAL: &str = "SPECGAP_REQUIRE_EXTERNAL";

/// Whether missing external programs fail tests (`SPECGAP_REQUIRE_EXTERNAL=1`).
pub fn required() -> bool {
    std::env::var_os(REQUIRE_EXTERNAL).is_some_and(|v| v == "1")
}

/// Reports that `what` is missing: panics under `SPECGAP_REQUIRE_EXTERNAL=1`, else prints
/// `skipped: <what>` to stderr (the caller then returns early).
///
/// # Panics
/// When [`required`].
pub fn missing(what: &str) {
    assert!(!required(), "{REQUIRE_EXTERNAL}=1 and {what}");
    eprintln!("skipped: {what}");
}

/// Whether the file `path` exists; when not, [`missing`] with `what` (which names it).
pub fn have_file(path: &Path, what: &str) -> bool {
    if path.is_file() {
        return true;
    }
    missing(what);
    false
}

/// Whether every program of `programs` is on `PATH` (or, when absolute, a file); when one is
/// not, [`missing`] naming the first absent one.
pub fn have_programs(programs: &[&str]) -> bool {
    for program in programs {
        let found = if Path::new(program).is_absolute() {
            Path::new(program).is_file()
        } else {
            std::env::var_os("PATH").is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(program).is_file()))
        };
        if !found {
            missing(&format!("{program} is missing"));
            return false;
        }
    }
    true
}
