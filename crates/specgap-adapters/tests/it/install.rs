//! Installations found and verified in a cache without a registry: a hand-made installation
//! with a manifest, changed in content (refused) or only touched (accepted), and installer
//! failures that need no network.

use std::path::Path;

use specgap_adapters::install::{InstallError, InstallOptions, install_dir};
use specgap_adapters::manifest::{MANIFEST_FORMAT, Manifest};
use specgap_adapters::tree::{fingerprint, tree_hash};
use specgap_adapters::{AdapterVersion, Installation};

fn fake_installation(root: &Path, version: &AdapterVersion) -> std::path::PathBuf {
    let dir = install_dir(root, version);
    std::fs::create_dir_all(dir.join("node_modules/@openai/codex/bin")).unwrap();
    std::fs::write(dir.join("node_modules/@openai/codex/bin/codex.js"), "console.log('codex')\n").unwrap();
    let manifest = Manifest {
        format: MANIFEST_FORMAT,
        adapter: "codex".into(),
        package: "@openai/codex".into(),
        version: version.version.clone(),
        installer: "npm".into(),
        lock_sha256: "0".repeat(64),
        tree_hash: tree_hash(&dir).unwrap(),
        fingerprint: fingerprint(&dir).unwrap(),
        entry: "node_modules/@openai/codex/bin/codex.js".into(),
        entry_is_node_script: true,
        mounts: vec![dir.clone()],
        specgap_version: "test".into(),
        installed_at: 0,
        python: None,
        node: None,
    };
    manifest.write(&dir).unwrap();
    dir
}

#[test]
fn a_changed_file_is_refused_and_a_touched_one_accepted() {
    let root = tempfile::tempdir().unwrap();
    let version = AdapterVersion::parse("codex").unwrap();
    let dir = fake_installation(root.path(), &version);
    let installation = Installation::open(root.path(), &version).unwrap();
    installation.verify().unwrap();
    assert_eq!(installation.entry_path(), dir.join("node_modules/@openai/codex/bin/codex.js"));
    let script = dir.join("node_modules/@openai/codex/bin/codex.js");
    // Same content, new modification time: the fingerprint differs, the tree hash does not.
    let file = std::fs::File::options().write(true).open(&script).unwrap();
    file.set_modified(std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(7)).unwrap();
    drop(file);
    assert_ne!(fingerprint(&dir).unwrap(), installation.manifest().fingerprint);
    installation.verify().unwrap();
    std::fs::write(&script, "console.log('patched')\n").unwrap();
    let error = installation.verify().unwrap_err();
    assert!(matches!(error, InstallError::Changed { .. }));
    assert!(error.to_string().ends_with("reinstall it with `specgap agents install --force codex@0.171.0`"), "{error}");
}

#[test]
fn a_manifest_of_another_version_is_a_mismatch() {
    let root = tempfile::tempdir().unwrap();
    let version = AdapterVersion::parse("codex").unwrap();
    let dir = fake_installation(root.path(), &version);
    let mut manifest = Manifest::read(&dir).unwrap();
    manifest.version = "0.1.0".into();
    manifest.write(&dir).unwrap();
    let error = Installation::open(root.path(), &version).unwrap_err();
    assert_eq!(
        error.to_string(),
        format!("{} holds a manifest of codex@0.1.0, not codex@0.171.0; remove it and install again", dir.display())
    );
}

#[test]
fn a_missing_interpreter_is_named_and_nothing_is_left_behind() {
    let root = tempfile::tempdir().unwrap();
    let version = AdapterVersion::parse("mini-swe-agent").unwrap();
    let options = InstallOptions { python: Some("/nonexistent/python3.11".into()), ..InstallOptions::default() };
    let error = specgap_adapters::install(root.path(), &version, &options, &mut |_| {}).unwrap_err();
    assert_eq!(
        error.to_string(),
        "this pip lock is made for Python 3.11, and no Python 3.11 interpreter was found (/nonexistent/python3.11: not found); install Python 3.11 or set SPECGAP_PYTHON to one"
    );
    assert!(!install_dir(root.path(), &version).exists());
}
