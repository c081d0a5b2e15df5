//! Unpacking layers: compression told by magic bytes, whiteouts and opaque whiteouts, modes
//! kept, unsafe entries refused, device nodes skipped.

use std::os::unix::fs::PermissionsExt;

use specgap_env::EnvError;
use specgap_env::unpack::{UnpackStats, unpack_layer};

use crate::support::{Item, gzip, listing, tarball, write};

fn base_layer() -> Vec<u8> {
    tarball(&[
        Item::Dir("./"),
        Item::Dir("etc/"),
        Item::File("etc/motd", "hello\n", 0o644),
        Item::File("etc/old", "old\n", 0o644),
        Item::Dir("opt/app/"),
        Item::File("opt/app/a", "a\n", 0o644),
        Item::File("opt/app/b", "b\n", 0o644),
        Item::Dir("usr/bin/"),
        Item::File("usr/bin/tool", "#!/bin/sh\n", 0o755),
        Item::Link("bin", "usr/bin"),
    ])
}

#[test]
fn a_plain_and_a_gzip_tarball_unpack_alike_with_modes_and_links() {
    let dir = tempfile::tempdir().unwrap();
    let plain = write(&dir.path().join("plain.tar"), &base_layer());
    let gz = write(&dir.path().join("layer.tar.gz"), &gzip(&base_layer()));
    let zst = write(&dir.path().join("layer.tar.zst"), &zstd::encode_all(&base_layer()[..], 1).unwrap());
    let expected =
        ["bin -> usr/bin", "etc/", "etc/motd", "etc/old", "opt/", "opt/app/", "opt/app/a", "opt/app/b", "usr/", "usr/bin/", "usr/bin/tool"];
    for archive in [plain, gz, zst] {
        let out = dir.path().join(format!("out-{}", archive.file_name().unwrap().to_string_lossy()));
        std::fs::create_dir(&out).unwrap();
        let stats = unpack_layer(&archive, &out).unwrap();
        assert_eq!(stats, UnpackStats { entries: 9, whiteouts: 0, skipped: 0 }, "{}", archive.display());
        assert_eq!(listing(&out), expected);
        assert_eq!(std::fs::read_to_string(out.join("etc/motd")).unwrap(), "hello\n");
        let mode = std::fs::metadata(out.join("usr/bin/tool")).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o755);
    }
}

#[test]
fn whiteouts_delete_and_opaque_whiteouts_empty_what_lower_layers_hold() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("root");
    std::fs::create_dir(&out).unwrap();
    unpack_layer(&write(&dir.path().join("0.tar"), &base_layer()), &out).unwrap();
    // The opaque whiteout comes after a file of its own layer: that file must survive.
    let upper = tarball(&[
        Item::File("etc/new", "new\n", 0o644),
        Item::File("etc/.wh.old", "", 0o644),
        Item::File("opt/app/c", "c\n", 0o644),
        Item::File("opt/app/.wh..wh..opq", "", 0o644),
        Item::File("etc/.wh.never-there", "", 0o644),
    ]);
    let stats = unpack_layer(&write(&dir.path().join("1.tar"), &upper), &out).unwrap();
    assert_eq!(stats, UnpackStats { entries: 2, whiteouts: 3, skipped: 0 });
    assert_eq!(
        listing(&out),
        ["bin -> usr/bin", "etc/", "etc/motd", "etc/new", "opt/", "opt/app/", "opt/app/c", "usr/", "usr/bin/", "usr/bin/tool"]
    );
}

#[test]
fn a_layer_replaces_a_path_of_another_kind() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("root");
    std::fs::create_dir(&out).unwrap();
    unpack_layer(&write(&dir.path().join("0.tar"), &base_layer()), &out).unwrap();
    let upper = tarball(&[Item::File("opt/app", "now a file\n", 0o644), Item::Dir("bin/"), Item::File("bin/own", "x", 0o644)]);
    unpack_layer(&write(&dir.path().join("1.tar"), &upper), &out).unwrap();
    assert_eq!(std::fs::read_to_string(out.join("opt/app")).unwrap(), "now a file\n");
    assert!(std::fs::symlink_metadata(out.join("bin")).unwrap().is_dir());
    assert_eq!(listing(&out.join("bin")), ["own"]);
}

#[test]
fn entries_leaving_the_root_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let outside = dir.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    for (name, items) in
        [("dotdot.tar", vec![Item::File("../escaped", "x", 0o644)]), ("absolute.tar", vec![Item::File("/escaped", "x", 0o644)])]
    {
        let out = dir.path().join(format!("root-{name}"));
        std::fs::create_dir(&out).unwrap();
        let archive = write(&dir.path().join(name), &tarball(&items));
        match unpack_layer(&archive, &out) {
            Err(EnvError::BadEntry { reason, .. }) => {
                assert_eq!(reason, "expected a relative path without `..`")
            }
            other => panic!("{name}: {other:?}"),
        }
    }
    // A link in one layer, a write through it in the next.
    let out = dir.path().join("root-link");
    std::fs::create_dir(&out).unwrap();
    let link = tarball(&[Item::Link("evil", outside.to_str().unwrap())]);
    unpack_layer(&write(&dir.path().join("link.tar"), &link), &out).unwrap();
    let through = tarball(&[Item::File("evil/planted", "x", 0o644)]);
    match unpack_layer(&write(&dir.path().join("through.tar"), &through), &out) {
        Err(EnvError::BadEntry { entry, .. }) => assert_eq!(entry, "evil/planted"),
        other => panic!("{other:?}"),
    }
    assert_eq!(listing(&outside), Vec::<String>::new());
}
