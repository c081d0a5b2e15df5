//! Building through a real engine (podman): a Dockerfile on a base image imported from a
//! tarball, exported into the cache; an unchanged build context is found without the engine.
//! Skipped with a note when podman is missing, unless `SPECGAP_REQUIRE_EXTERNAL=1`.

use std::process::Command;

use specgap_env::{Engine, EngineChoice, EngineKind, EnvCache};
use specgap_protocol::package::ImageSource;

use crate::support::{listing, required, write};

/// The busybox base image the test Dockerfiles start from, imported from Debian's
/// busybox-static once per test process (tests run in parallel, and a second import would move
/// the tag to a new image id under a test that has just read it); `None` (test skipped) when
/// podman or busybox is missing outside CI.
fn base_image() -> Option<&'static str> {
    static IMPORTED: std::sync::OnceLock<Option<&'static str>> = std::sync::OnceLock::new();
    *IMPORTED.get_or_init(import_base_image)
}

fn import_base_image() -> Option<&'static str> {
    const TAG: &str = "localhost/specgap-test/busybox:1";
    let missing = |what: &str| {
        if required() {
            panic!("SPECGAP_REQUIRE_EXTERNAL=1 and {what}");
        }
        eprintln!("skipped: {what}");
        None
    };
    let Ok(Some(_)) = Engine::find(EngineChoice::Use(EngineKind::Podman)) else {
        return missing("podman is not on PATH");
    };
    let busybox = std::path::Path::new("/bin/busybox");
    if !busybox.is_file() {
        return missing("/bin/busybox (Debian's busybox-static) is missing");
    }
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    std::fs::create_dir_all(root.join("bin")).unwrap();
    std::fs::copy(busybox, root.join("bin/busybox")).unwrap();
    for applet in ["sh", "echo", "cat", "ls", "mkdir"] {
        std::os::unix::fs::symlink("busybox", root.join("bin").join(applet)).unwrap();
    }
    let tar = dir.path().join("base.tar");
    let status = Command::new("tar").arg("-C").arg(&root).arg("-cf").arg(&tar).arg(".").status().unwrap();
    assert!(status.success());
    let status =
        Command::new("podman").arg("import").arg("--quiet").arg(&tar).arg(TAG).stdout(std::process::Stdio::null()).status().unwrap();
    assert!(status.success(), "podman import failed");
    Some(TAG)
}

#[test]
fn a_dockerfile_is_built_by_podman_exported_and_then_found_without_it() {
    let Some(base) = base_image() else { return };
    let dir = tempfile::tempdir().unwrap();
    let context = dir.path().join("pkg/environment");
    let dockerfile = write(
        &context.join("Dockerfile"),
        format!("FROM {base}\nRUN mkdir -p /etc/app && echo built > /etc/app/built\nCOPY note.txt /opt/note.txt\n").as_bytes(),
    );
    write(&context.join("note.txt"), b"from the context\n");
    let source = ImageSource::Dockerfile("environment/Dockerfile".into());
    let cache = EnvCache::new(dir.path().join("cache"));
    let built = cache.build(&source, Some(&dockerfile), EngineChoice::Use(EngineKind::Podman)).unwrap();
    assert!(built.key.starts_with("build-"), "{}", built.key);
    assert!(!built.cached);
    assert_eq!(std::fs::read_to_string(built.rootfs.join("etc/app/built")).unwrap(), "built\n");
    assert_eq!(std::fs::read_to_string(built.rootfs.join("opt/note.txt")).unwrap(), "from the context\n");
    assert!(listing(&built.rootfs).contains(&"bin/sh -> busybox".to_string()));
    assert_eq!(cache.list().unwrap()[0].meta.built_by, "podman");
    // Unchanged: found by the context's hash, no engine needed.
    let again = cache.build(&source, Some(&dockerfile), EngineChoice::None).unwrap();
    assert_eq!((again.key, again.cached), (built.key.clone(), true));
    // A changed context is a new key.
    write(&context.join("note.txt"), b"changed\n");
    let changed = cache.build(&source, Some(&dockerfile), EngineChoice::Use(EngineKind::Podman)).unwrap();
    assert_ne!(changed.key, built.key);
    assert_eq!(std::fs::read_to_string(changed.rootfs.join("opt/note.txt")).unwrap(), "changed\n");
}

#[test]
fn an_image_reference_is_keyed_by_the_engines_image_id() {
    let Some(base) = base_image() else { return };
    let engine = Engine::find(EngineChoice::Use(EngineKind::Podman)).unwrap().unwrap();
    let id = engine.image_id(base).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let cache = EnvCache::new(dir.path().join("cache"));
    let built = cache.build(&ImageSource::Image(base.into()), None, EngineChoice::Auto).unwrap();
    assert_eq!(built.key, format!("image-{}", id.trim_start_matches("sha256:")));
    assert_eq!(std::fs::read_link(built.rootfs.join("bin/sh")).unwrap(), std::path::Path::new("busybox"));
}
