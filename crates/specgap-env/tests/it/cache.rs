//! The cache: keys by content, a second build finds the first, list and prune; OCI layouts
//! with their layers stacked and their digests checked.

use std::collections::BTreeSet;

use specgap_env::{EngineChoice, EnvCache, EnvError, environment_digest};
use specgap_protocol::package::ImageSource;

use crate::support::{Item, gzip, listing, oci_layout, sha256, tarball, write};

fn rootfs_source() -> ImageSource {
    ImageSource::Rootfs("environment/rootfs.tar".into())
}

fn oci_source() -> ImageSource {
    ImageSource::OciLayout("environment/oci".into())
}

#[test]
fn a_rootfs_tarball_is_cached_by_its_hash_and_found_again() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = tarball(&[Item::Dir("etc/"), Item::File("etc/motd", "one\n", 0o644)]);
    let tarball_path = write(&dir.path().join("pkg/environment/rootfs.tar"), &bytes);
    let cache = EnvCache::new(dir.path().join("cache"));
    let built = cache.build(&rootfs_source(), Some(&tarball_path), EngineChoice::None).unwrap();
    let key = format!("rootfs-{}", sha256(&bytes));
    assert_eq!(built.key, key);
    assert!(!built.cached);
    assert_eq!(built.rootfs, dir.path().join("cache").join(&key).join("rootfs"));
    assert_eq!(listing(&built.rootfs), ["etc/", "etc/motd"]);
    let again = cache.build(&rootfs_source(), Some(&tarball_path), EngineChoice::None).unwrap();
    assert_eq!((again.key.as_str(), again.cached), (key.as_str(), true));

    // A changed tarball is a new entry; the old one stays until pruned.
    let changed = tarball(&[Item::Dir("etc/"), Item::File("etc/motd", "two\n", 0o644)]);
    write(&tarball_path, &changed);
    let second = cache.build(&rootfs_source(), Some(&tarball_path), EngineChoice::None).unwrap();
    assert_eq!(second.key, format!("rootfs-{}", sha256(&changed)));
    let listed: Vec<(String, String, String, u64)> =
        cache.list().unwrap().into_iter().map(|e| (e.meta.key, e.meta.source, e.meta.built_by, e.meta.bytes)).collect();
    let mut expected = vec![
        (key.clone(), "rootfs".to_string(), "specgap".to_string(), 4),
        (second.key.clone(), "rootfs".to_string(), "specgap".to_string(), 4),
    ];
    expected.sort();
    assert_eq!(listed, expected);

    let removed = cache.prune(&BTreeSet::from([second.key.clone()])).unwrap().entries;
    assert_eq!(removed, [key]);
    assert_eq!(cache.list().unwrap().len(), 1);
    assert_eq!(cache.prune(&BTreeSet::new()).unwrap().entries, [second.key]);
    assert!(cache.list().unwrap().is_empty());
}

#[test]
fn an_oci_layout_stacks_its_layers_and_is_keyed_by_its_manifest() {
    let dir = tempfile::tempdir().unwrap();
    let layout = dir.path().join("environment/oci");
    let lower = gzip(&tarball(&[Item::Dir("etc/"), Item::File("etc/a", "a", 0o644), Item::File("etc/b", "b", 0o644)]));
    let upper = tarball(&[Item::File("etc/.wh.a", "", 0o644), Item::File("etc/c", "c", 0o644)]);
    let digest =
        oci_layout(&layout, &[(&lower, "application/vnd.oci.image.layer.v1.tar+gzip"), (&upper, "application/vnd.oci.image.layer.v1.tar")]);
    let cache = EnvCache::new(dir.path().join("cache"));
    let built = cache.build(&oci_source(), Some(&layout), EngineChoice::None).unwrap();
    assert_eq!(built.key, format!("oci-{}", digest.trim_start_matches("sha256:")));
    assert_eq!(listing(&built.rootfs), ["etc/", "etc/b", "etc/c"]);
    let meta = &cache.list().unwrap()[0].meta;
    assert_eq!((meta.whiteouts, meta.entries), (1, 3));
}

#[test]
fn a_blob_that_does_not_match_its_digest_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let layout = dir.path().join("oci");
    let layer = tarball(&[Item::File("f", "x", 0o644)]);
    oci_layout(&layout, &[(&layer, "application/vnd.oci.image.layer.v1.tar")]);
    let blob = layout.join("blobs/sha256").join(sha256(&layer));
    std::fs::write(&blob, b"tampered").unwrap();
    let cache = EnvCache::new(dir.path().join("cache"));
    match cache.build(&oci_source(), Some(&layout), EngineChoice::None) {
        Err(EnvError::BadLayout { path, reason }) => {
            assert_eq!(path, blob);
            assert_eq!(reason, format!("content is sha256:{}, expected sha256:{}", sha256(b"tampered"), sha256(&layer)));
        }
        other => panic!("{other:?}"),
    }
    assert!(cache.list().unwrap().is_empty());
}

#[test]
fn a_dockerfile_without_an_engine_is_refused_naming_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let dockerfile = write(&dir.path().join("pkg/environment/Dockerfile"), b"FROM scratch\n");
    let cache = EnvCache::new(dir.path().join("cache"));
    let source = ImageSource::Dockerfile("environment/Dockerfile".into());
    let err = cache.build(&source, Some(&dockerfile), EngineChoice::None).unwrap_err();
    assert_eq!(
        err.to_string(),
        "[environment].dockerfile `environment/Dockerfile` needs a container engine (podman or docker) on PATH, and none was found; `--engine none` was given"
    );
}

#[test]
fn the_digest_is_the_cache_key_computed_without_building() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = tarball(&[Item::File("etc/motd", "one\n", 0o644)]);
    let tarball_path = write(&dir.path().join("pkg/environment/rootfs.tar"), &bytes);
    let digest = environment_digest(&rootfs_source(), Some(&tarball_path), EngineChoice::None).unwrap();
    assert_eq!(digest, format!("rootfs-{}", sha256(&bytes)));
    let cache = EnvCache::new(dir.path().join("cache"));
    assert!(!cache.root().exists(), "nothing was built");
    assert_eq!(cache.build(&rootfs_source(), Some(&tarball_path), EngineChoice::None).unwrap().key, digest);

    let layout = dir.path().join("environment/oci");
    let manifest = oci_layout(&layout, &[(&bytes, "application/vnd.oci.image.layer.v1.tar")]);
    let digest = environment_digest(&oci_source(), Some(&layout), EngineChoice::None).unwrap();
    assert_eq!(digest, format!("oci-{}", manifest.trim_start_matches("sha256:")));

    // Without an engine, a reference's digest is asked of its registry (here: none listens).
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let err = environment_digest(&ImageSource::Image(format!("localhost:{port}/x:1")), None, EngineChoice::None).unwrap_err();
    assert!(matches!(err, EnvError::RegistryUnreachable { .. }), "{err:?}");
}

#[test]
fn a_layer_over_a_cached_root_is_a_linked_copy_that_never_writes_the_base() {
    use std::os::unix::fs::MetadataExt;
    let dir = tempfile::tempdir().unwrap();
    let base_bytes = tarball(&[
        Item::Dir("etc/"),
        Item::File("etc/motd", "base\n", 0o644),
        Item::File("etc/keep", "kept\n", 0o644),
        Item::File("etc/hostname", "box\n", 0o644),
        Item::Dir("opt/"),
        Item::Dir("opt/tool/"),
        Item::File("opt/tool/old", "old\n", 0o644),
        Item::Link("bin", "usr/bin"),
    ]);
    let tarball_path = write(&dir.path().join("pkg/environment/rootfs.tar"), &base_bytes);
    let cache = EnvCache::new(dir.path().join("cache"));
    let base = cache.build(&rootfs_source(), Some(&tarball_path), EngineChoice::None).unwrap();
    // A machine's layer: /etc/motd replaced, /etc/keep deleted, /opt/tool made opaque with new contents.
    let layer_bytes = tarball(&[
        Item::Dir("etc/"),
        Item::File("etc/.wh.keep", "", 0o644),
        Item::File("etc/motd", "machine\n", 0o600),
        Item::Dir("opt/tool/"),
        Item::File("opt/tool/.wh..wh..opq", "", 0o644),
        Item::File("opt/tool/new", "new\n", 0o755),
    ]);
    let layer = write(&dir.path().join("machine.tar"), &layer_bytes);
    let layered = cache.layered(&base.rootfs, &layer).unwrap();
    let expected_key = format!("layered-{}", sha256(format!("{}\n{}", base.key, sha256(&layer_bytes)).as_bytes()));
    assert_eq!((layered.key.as_str(), layered.cached), (expected_key.as_str(), false));
    assert_eq!(listing(&layered.rootfs), ["bin -> usr/bin", "etc/", "etc/hostname", "etc/motd", "opt/", "opt/tool/", "opt/tool/new"]);
    assert_eq!(std::fs::read_to_string(layered.rootfs.join("etc/motd")).unwrap(), "machine\n");
    // The base is untouched, and what the layer does not change is the base's own inode.
    assert_eq!(
        listing(&base.rootfs),
        ["bin -> usr/bin", "etc/", "etc/hostname", "etc/keep", "etc/motd", "opt/", "opt/tool/", "opt/tool/old"]
    );
    assert_eq!(std::fs::read_to_string(base.rootfs.join("etc/motd")).unwrap(), "base\n");
    let inode = |root: &std::path::Path| std::fs::metadata(root.join("etc/hostname")).unwrap().ino();
    assert_eq!(inode(&layered.rootfs), inode(&base.rootfs), "an unchanged file is linked, not copied");
    let again = cache.layered(&base.rootfs, &layer).unwrap();
    assert_eq!((again.key, again.cached), (expected_key.clone(), true));
    let meta: Vec<(String, String, String)> =
        cache.list().unwrap().into_iter().map(|e| (e.meta.key, e.meta.source, e.meta.value)).collect();
    assert!(meta.contains(&(expected_key, "layer".into(), format!("{} + sha256:{}", base.key, sha256(&layer_bytes)))), "{meta:?}");
    let base_inode = std::fs::metadata(base.rootfs.join("etc")).unwrap().ino();
    assert_ne!(std::fs::metadata(layered.rootfs.join("etc")).unwrap().ino(), base_inode, "directories are the layered tree's own");

    // A root filesystem that is not one of this cache's entries is refused.
    let stray = dir.path().join("stray");
    std::fs::create_dir_all(&stray).unwrap();
    let err = cache.layered(&stray, &layer).unwrap_err();
    assert!(matches!(err, EnvError::BadCacheEntry { .. }), "{err}");
}

#[test]
fn threads_building_one_key_at_once_all_get_the_whole_entry() {
    let dir = tempfile::tempdir().unwrap();
    let mut items = vec![Item::Dir("etc/")];
    let names: Vec<String> = (0..200).map(|i| format!("etc/f{i:03}")).collect();
    items.extend(names.iter().map(|n| Item::File(n, "x\n", 0o644)));
    let tarball_path = write(&dir.path().join("pkg/environment/rootfs.tar"), &tarball(&items));
    let cache = EnvCache::new(dir.path().join("cache"));
    let built: Vec<_> = std::thread::scope(|scope| {
        let handles: Vec<_> =
            (0..6).map(|_| scope.spawn(|| cache.build(&rootfs_source(), Some(&tarball_path), EngineChoice::None))).collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for result in built {
        let entry = result.unwrap();
        assert_eq!(listing(&entry.rootfs).len(), 201);
    }
    assert_eq!(cache.list().unwrap().len(), 1);
}

/// Issue 31: `prune` removes the staging trees of builds that were killed (their owner pid is
/// gone, or, for a name with no owner, older than an hour) and keeps those of builds that may
/// still run (this process's, a fresh one without an owner), beside the entries it prunes.
#[test]
fn prune_removes_a_killed_builds_staging_tree_and_keeps_a_running_ones() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = tarball(&[Item::Dir("etc/"), Item::File("etc/motd", "one\n", 0o644)]);
    let tarball_path = write(&dir.path().join("pkg/environment/rootfs.tar"), &bytes);
    let root = dir.path().join("cache");
    let cache = EnvCache::new(&root);
    let built = cache.build(&rootfs_source(), Some(&tarball_path), EngineChoice::None).unwrap();

    let mut gone = std::process::Command::new("true").spawn().unwrap();
    let dead_pid = gone.id();
    gone.wait().unwrap();
    assert!(!std::path::Path::new(&format!("/proc/{dead_pid}")).exists());
    let killed = format!(".tmp-{}-{dead_pid}-0", built.key);
    let running = format!(".tmp-{}-{}-3", built.key, std::process::id());
    let unowned_fresh = ".tmp-rootfs-0a1b-x".to_string();
    let unowned_old = ".tmp-rootfs-2c3d-y".to_string();
    for name in [&killed, &running, &unowned_fresh, &unowned_old] {
        write(&root.join(name).join("rootfs/etc/motd"), b"partial");
    }
    let old = root.join(&unowned_old);
    assert!(std::process::Command::new("touch").args(["-d", "2 hours ago"]).arg(&old).status().unwrap().success());

    let pruned = cache.prune(&BTreeSet::new()).unwrap();
    let mut kept = vec![running.clone(), unowned_fresh.clone()];
    kept.sort();
    let mut removed = vec![killed.clone(), unowned_old.clone()];
    removed.sort();
    assert_eq!(pruned, specgap_env::Pruned { entries: vec![built.key.clone()], staging_removed: removed, staging_kept: kept });
    let mut left: Vec<String> = std::fs::read_dir(&root).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    left.sort();
    let mut expected = vec![running, unowned_fresh];
    expected.sort();
    assert_eq!(left, expected);
}
