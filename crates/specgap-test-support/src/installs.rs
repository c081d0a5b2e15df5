//! The real agent CLIs the tests run, installed once into a cache shared by every test binary
//! and every later run: `target/specgap-test-cache` (the `XDG_CACHE_HOME` of the installs;
//! `.ci/run` installs into it first). Copy it (never symlink: bubblewrap cannot run a virtual
//! environment through a link) to give another build directory the installations.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::external;

/// The shared test cache: `specgap-test-cache` in the target directory of the running test
/// binary (`target/<profile>/deps/<binary>`).
pub fn test_cache() -> PathBuf {
    let exe = std::env::current_exe().unwrap_or_else(|_| PathBuf::from("target/debug/deps/it"));
    exe.ancestors().nth(3).map_or_else(|| PathBuf::from("target"), Path::to_path_buf).join("specgap-test-cache")
}

/// Runs `install` (which returns the installation's directory, or why it failed) once per
/// process for `adapter` and returns its directory; `None` after [`external::missing`] when it
/// failed (no package registry): the test is then skipped, or fails under
/// `SPECGAP_REQUIRE_EXTERNAL=1`. Later calls for `adapter` reuse the first result.
///
/// # Panics
/// When the install failed and `SPECGAP_REQUIRE_EXTERNAL=1`.
pub fn installed_once(adapter: &str, install: impl FnOnce() -> Result<PathBuf, String>) -> Option<PathBuf> {
    static INSTALLED: Mutex<BTreeMap<String, Result<PathBuf, String>>> = Mutex::new(BTreeMap::new());
    let mut done = INSTALLED.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let result = done.entry(adapter.to_string()).or_insert_with(install).clone();
    drop(done);
    match result {
        Ok(dir) => Some(dir),
        Err(why) => {
            external::missing(&format!("{adapter} could not be installed (no package registry?): {why}"));
            None
        }
    }
}

/// Installs `adapter` (`claude-code`, `codex`, …) at its pinned version into [`test_cache`] in
/// this process, once per process (the installer's lock lets processes share the cache), after
/// pointing this process's `XDG_CACHE_HOME` at the cache so the agents find it; returns the
/// installation's directory, or `None` as [`installed_once`] (feature `adapters`).
///
/// # Panics
/// When the install failed and `SPECGAP_REQUIRE_EXTERNAL=1`.
#[cfg(feature = "adapters")]
pub fn installed_adapter(adapter: &str) -> Option<PathBuf> {
    static CACHE: std::sync::Once = std::sync::Once::new();
    // SAFETY: set once, to the same value, before any agent of the test binary reads it.
    CACHE.call_once(|| unsafe { std::env::set_var("XDG_CACHE_HOME", test_cache()) });
    installed_once(adapter, || {
        let version = specgap_adapters::AdapterVersion::parse(adapter).map_err(|e| e.to_string())?;
        let root = specgap_adapters::default_root().map_err(|e| e.to_string())?;
        match specgap_adapters::install(&root, &version, &specgap_adapters::InstallOptions::default(), &mut |_| {}) {
            Ok((installation, _)) => Ok(installation.dir().to_path_buf()),
            Err(e) => Err(format!("{} cannot be installed into {}: {e}", version.label(), root.display())),
        }
    })
}
