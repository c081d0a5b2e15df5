//! `specgap agents install` / `list`: a real installation of mini-swe-agent from PyPI (shared by
//! every test that needs it, in `target/specgap-test-cache`, keyed by version), its manifest,
//! its use inside a sandbox, and the installer's refusals and failures.

use std::path::{Path, PathBuf};
use std::process::Output;

use specgap_adapters::AdapterVersion;
use specgap_adapters::manifest::Manifest;
use specgap_sandbox::{CommandSpec, HostView, SandboxConfig, run};

use crate::support::specgap;

pub use specgap_test_support::installs::test_cache;

/// Installs mini-swe-agent at its pinned version into [`test_cache`] once per process (the
/// installer's lock makes concurrent processes share it) and returns the installation's
/// directory. Without the package registry the test is skipped, unless
/// `SPECGAP_REQUIRE_EXTERNAL=1` (CI), where a failed install fails it.
pub fn installed_mini_swe_agent() -> Option<PathBuf> {
    crate::cli_support::installed("mini-swe-agent", specgap_agents::cli::mini_swe_agent::DEFAULT_VERSION)
}

fn agents(args: &[&str], cache: &Path) -> Output {
    specgap().arg("agents").args(args).env("XDG_CACHE_HOME", cache).output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn agents_install_mini_swe_agent_records_version_tree_hash_and_runtime() {
    let Some(dir) = installed_mini_swe_agent() else { return };
    let manifest = Manifest::read(&dir).unwrap();
    assert_eq!(
        (manifest.adapter.as_str(), manifest.package.as_str(), manifest.version.as_str()),
        ("mini-swe-agent", "mini-swe-agent", "2.4.6")
    );
    assert_eq!((manifest.installer.as_str(), manifest.entry.as_str(), manifest.entry_is_node_script), ("pip", "venv/bin/mini", false));
    let python = manifest.python.as_ref().unwrap();
    assert!(python.version.starts_with("3.11."), "{}", python.version);
    assert!(python.interpreter.starts_with(&python.prefix));
    assert_eq!(manifest.mounts[0], dir);
    // The interpreter's prefix is mounted unless every sandbox sees it anyway.
    assert_eq!(manifest.mounts.contains(&python.prefix), !python.prefix.starts_with("/usr"));
    assert_eq!(manifest.tree_hash, specgap_adapters::tree::tree_hash(&dir).unwrap());
    let version = AdapterVersion::parse("mini-swe-agent").unwrap();
    let root = test_cache().join("specgap/agents");
    let installation = specgap_adapters::Installation::open(&root, &version).unwrap();
    installation.verify().unwrap();

    let again = agents(&["install", "mini-swe-agent@2.4.6"], &test_cache());
    assert!(again.status.success(), "{}", text(&again.stderr));
    assert_eq!(
        text(&again.stdout),
        format!("mini-swe-agent@2.4.6 already installed in {} (tree hash {})\n", dir.display(), manifest.tree_hash)
    );
    let listed = agents(&["list"], &test_cache());
    assert!(listed.status.success());
    let listing = text(&listed.stdout);
    let row = format!("mini-swe-agent   2.4.6      yes      {:<14} ready", &manifest.tree_hash[..12]);
    assert!(listing.lines().any(|l| l == row), "{listing}");
}

#[test]
fn the_installed_venv_runs_inside_the_sandbox_with_the_manifest_mounts() {
    let Some(dir) = installed_mini_swe_agent() else { return };
    let manifest = Manifest::read(&dir).unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let python = dir.join("venv/bin/python");
    let mut spec = CommandSpec::argv(
        vec![python.display().to_string(), "-c".into(), "import minisweagent, os; print(minisweagent.__version__, os.getuid())".into()],
        workspace.path(),
    );
    for mount in &manifest.mounts {
        spec = spec.read_only(mount, mount);
    }
    let output = run(&spec, &HostView::system().unwrap(), &SandboxConfig::default()).unwrap();
    // mini-swe-agent prints a banner when imported; the last line is ours.
    assert_eq!(output.stdout.text().lines().last(), Some("2.4.6 1000"), "stderr: {}", output.stderr.text());
    assert!(output.success());
}

#[test]
fn agents_install_refuses_unknown_adapters_and_unlocked_versions() {
    let cache = tempfile::tempdir().unwrap();
    let unknown = agents(&["install", "aider"], cache.path());
    assert_eq!(unknown.status.code(), Some(2));
    assert_eq!(
        text(&unknown.stderr),
        "error: unknown agent adapter `aider`; the adapters are mini-swe-agent, claude-code, codex, opencode, gemini-cli, openhands\n"
    );
    let unlocked = agents(&["install", "codex@0.1.0"], cache.path());
    assert_eq!(unlocked.status.code(), Some(2));
    assert!(text(&unlocked.stderr).starts_with("error: codex 0.1.0 has no lock file in this specgap (locked: 0.171.0)"));
    assert!(!cache.path().join("specgap").exists(), "nothing is created for a refused install");
    let listed = agents(&["list"], cache.path());
    assert_eq!(
        text(&listed.stdout),
        format!(
            "agents in {}\nadapter          version    pinned   tree hash      state\n(none installed)\n\
             not installed at their pinned version: mini-swe-agent@2.4.6, claude-code@2.1.332, codex@0.171.0, opencode@1.18.33, gemini-cli@0.61.0, openhands@1.58.2 (specgap agents install <adapter>)\n",
            cache.path().join("specgap/agents").display()
        )
    );
}

#[test]
fn an_unreachable_package_index_is_reported_as_a_network_problem() {
    let cache = tempfile::tempdir().unwrap();
    let output = specgap()
        .args(["agents", "install", "mini-swe-agent"])
        .env("XDG_CACHE_HOME", cache.path())
        // Nothing listens on port 9 of the loopback; no configuration, cache or local wheels.
        .env("PIP_CONFIG_FILE", "/dev/null")
        .env("PIP_INDEX_URL", "http://127.0.0.1:9/simple")
        .env("PIP_NO_CACHE_DIR", "1")
        .env("PIP_FIND_LINKS", "")
        .env("PIP_RETRIES", "0")
        .env("PIP_TIMEOUT", "2")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("error: cannot install mini-swe-agent@2.4.6: pip install of mini-swe-agent@2.4.6 failed (exit status: 1); "),
        "{stderr}"
    );
    assert!(stderr.contains("PyPI could not be reached"), "{stderr}");
    assert!(!cache.path().join("specgap/agents/mini-swe-agent/2.4.6").exists(), "a failed install leaves no directory");
}
