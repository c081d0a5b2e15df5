//! `specgap env build|list|prune` on a rootfs package (no engine needed): built once, found
//! again, listed, pruned.

use std::path::Path;

use sha2::{Digest, Sha256};

use crate::support::{copy_dir, specgap, task_fixture};

/// req-basic as a format-2 package whose environment is a rootfs tarball of one file.
fn rootfs_package(dir: &Path) -> std::path::PathBuf {
    let root = dir.join("suite/req-basic");
    copy_dir(&task_fixture("req-basic"), &root);
    let toml = std::fs::read_to_string(root.join("task.toml")).unwrap();
    let toml = toml
        .replace("format = 1\n", "format = 2\n")
        .replace("commands = [\"python3\"]\n", "rootfs = \"environment/rootfs.tar\"\nworkdir = \"/app\"\n");
    std::fs::write(root.join("task.toml"), toml).unwrap();
    let tree = dir.join("tree");
    std::fs::create_dir_all(tree.join("etc")).unwrap();
    std::fs::write(tree.join("etc/motd"), "image\n").unwrap();
    std::fs::create_dir_all(root.join("environment")).unwrap();
    let status = std::process::Command::new("tar")
        .arg("-C")
        .arg(&tree)
        .arg("-cf")
        .arg(root.join("environment/rootfs.tar"))
        .arg("etc")
        .status()
        .unwrap();
    assert!(status.success());
    root
}

fn stdout_of(cmd: &mut std::process::Command) -> String {
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn env_build_list_and_prune_a_rootfs_environment() {
    let dir = tempfile::tempdir().unwrap();
    let root = rootfs_package(dir.path());
    let cache = dir.path().join("cache");
    let tarball = std::fs::read(root.join("environment/rootfs.tar")).unwrap();
    let key = format!("rootfs-{}", Sha256::digest(&tarball).iter().map(|b| format!("{b:02x}")).collect::<String>());
    let rootfs = cache.join("specgap/env").join(&key).join("rootfs");
    let env_cmd = |args: &[&str]| {
        let mut cmd = specgap();
        cmd.env("XDG_CACHE_HOME", &cache).arg("env").args(args);
        cmd
    };
    let suite = dir.path().join("suite");
    let first = stdout_of(env_cmd(&["build", suite.to_str().unwrap(), "--engine", "none"]).current_dir(dir.path()));
    let prefix = format!("fixtures/req-basic: environment {key} built in ");
    assert!(first.starts_with(&prefix), "{first}");
    assert!(first.ends_with(&format!(": {}\n", rootfs.display())), "{first}");
    assert_eq!(std::fs::read_to_string(rootfs.join("etc/motd")).unwrap(), "image\n");
    let second = stdout_of(&mut env_cmd(&["build", suite.to_str().unwrap(), "--engine", "none"]));
    assert_eq!(second, format!("fixtures/req-basic: environment {key} cached: {}\n", rootfs.display()));
    let listed = stdout_of(&mut env_cmd(&["list"]));
    let short: String = key.chars().take(24).collect();
    assert_eq!(
        listed,
        format!(
            "environments in {}\nkey                      source     by              MiB  first built from\n{short} rootfs     specgap         0.0  environment/rootfs.tar\n",
            cache.join("specgap/env").display()
        )
    );
    // `--engine none`: the engine's build tags may be another test's (env_run.rs prunes them itself).
    let pruned = stdout_of(&mut env_cmd(&["prune", "--engine", "none"]));
    assert_eq!(pruned, format!("removed {key}\n1 removed, 0 kept\n"));
    assert!(!rootfs.exists());
}
