//! Pulling an `image` without an engine, against a real registry: Debian's `docker-registry`
//! started on a free localhost port with its storage in the test's temp dir, serving busybox
//! images (from Debian's busybox-static) pushed with `skopeo` from OCI layouts. Skipped with a
//! note when docker-registry, skopeo or busybox is missing, unless `SPECGAP_REQUIRE_EXTERNAL=1`.

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use specgap_env::registry::Reference;
use specgap_env::{EngineChoice, EnvCache, EnvError, environment_digest};
use specgap_protocol::package::ImageSource;

use crate::support::{gzip, listing, oci_layout, required, sha256};

/// A running `docker-registry`, killed when dropped.
struct Registry {
    child: Child,
    port: u16,
    storage: PathBuf,
}

impl Drop for Registry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Starts a registry in `dir`, or `None` (skip) when a program is missing outside CI.
fn start_registry(dir: &Path) -> Option<Registry> {
    for program in ["docker-registry", "skopeo"] {
        if !on_path(program) {
            return missing(&format!("`{program}` is not on PATH (Debian's docker-registry and skopeo)"));
        }
    }
    if !Path::new("/bin/busybox").is_file() {
        return missing("/bin/busybox (Debian's busybox-static) is missing");
    }
    let port = free_port();
    let storage = dir.join("storage");
    let config = dir.join("registry.yml");
    std::fs::write(
        &config,
        format!(
            "version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n    rootdirectory: {}\nhttp:\n  addr: 127.0.0.1:{port}\n",
            storage.display()
        ),
    )
    .unwrap();
    let child = Command::new("docker-registry")
        .arg("serve")
        .arg(&config)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let registry = Registry { child, port, storage };
    // Wait until it listens (bounded; nothing is asserted about how long it takes).
    for _ in 0..400 {
        if TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return Some(registry);
        }
        std::thread::sleep(std::time::Duration::from_millis(25));
    }
    panic!("docker-registry did not listen on 127.0.0.1:{port}");
}

fn missing(what: &str) -> Option<Registry> {
    if required() {
        panic!("SPECGAP_REQUIRE_EXTERNAL=1 and {what}");
    }
    eprintln!("skipped: {what}");
    None
}

fn on_path(name: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(name).is_file()))
}

/// A tar layer: `bin/busybox` (Debian's static one) with applet links when `busybox`, and the
/// given text files (`path`, contents); `.wh.` names are whiteouts.
fn layer(busybox: bool, files: &[(&str, &str)]) -> Vec<u8> {
    let mut builder = tar::Builder::new(Vec::new());
    let header = |path: &str, kind: tar::EntryType, mode: u32, size: u64| {
        let mut header = tar::Header::new_gnu();
        header.set_entry_type(kind);
        header.set_mode(mode);
        header.set_size(size);
        header.set_mtime(1_700_000_000);
        header.set_path(path).unwrap();
        header
    };
    for dir in ["bin/", "etc/"] {
        let mut h = header(dir, tar::EntryType::Directory, 0o755, 0);
        h.set_cksum();
        builder.append(&h, &b""[..]).unwrap();
    }
    if busybox {
        let bytes = std::fs::read("/bin/busybox").unwrap();
        let mut h = header("bin/busybox", tar::EntryType::Regular, 0o755, bytes.len() as u64);
        h.set_cksum();
        builder.append(&h, &bytes[..]).unwrap();
        for applet in ["sh", "cat"] {
            let mut h = header(&format!("bin/{applet}"), tar::EntryType::Symlink, 0o777, 0);
            h.set_link_name("busybox").unwrap();
            h.set_cksum();
            builder.append(&h, &b""[..]).unwrap();
        }
    }
    for (path, text) in files {
        let mut h = header(path, tar::EntryType::Regular, 0o644, text.len() as u64);
        h.set_cksum();
        builder.append(&h, text.as_bytes()).unwrap();
    }
    builder.into_inner().unwrap()
}

const GZIP_LAYER: &str = "application/vnd.oci.image.layer.v1.tar+gzip";

/// The `config` digest of the manifest `manifest` in the layout at `layout`.
fn config_digest(layout: &Path, manifest: &str) -> String {
    let bytes = std::fs::read(layout.join("blobs/sha256").join(manifest.trim_start_matches("sha256:"))).unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
    doc["config"]["digest"].as_str().unwrap().to_string()
}

/// Pushes the OCI layout at `layout` to `reference` (all of an index's images).
fn push(layout: &Path, reference: &str) {
    let out = Command::new("skopeo")
        .args(["--insecure-policy", "copy", "--quiet", "--all", "--dest-tls-verify=false"])
        .arg(format!("oci:{}", layout.display()))
        .arg(format!("docker://{reference}"))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "skopeo copy failed: {}", String::from_utf8_lossy(&out.stderr));
}

fn image(reference: &str) -> ImageSource {
    ImageSource::Image(reference.to_string())
}

#[test]
fn an_image_is_pulled_from_a_real_registry_unpacked_in_order_cached_and_keyed_by_its_config() {
    let dir = tempfile::tempdir().unwrap();
    let Some(registry) = start_registry(dir.path()) else { return };
    let lower = gzip(&layer(true, &[("etc/motd", "one\n"), ("etc/old", "old\n")]));
    let upper = gzip(&layer(false, &[("etc/.wh.old", ""), ("etc/added", "added\n")]));
    let layout = dir.path().join("one");
    let manifest = oci_layout(&layout, &[(&lower, GZIP_LAYER), (&upper, GZIP_LAYER)]);
    let config = config_digest(&layout, &manifest);
    let reference = format!("127.0.0.1:{}/specgap-test/busybox:1", registry.port);
    push(&layout, &reference);

    let key = format!("image-{}", config.trim_start_matches("sha256:"));
    assert_eq!(environment_digest(&image(&reference), None, EngineChoice::None).unwrap(), key);
    let cache = EnvCache::new(dir.path().join("cache"));
    assert!(!cache.root().exists(), "the digest needs no build");
    let built = cache.build(&image(&reference), None, EngineChoice::None).unwrap();
    assert_eq!((built.key.as_str(), built.cached), (key.as_str(), false));
    assert_eq!(built.manifest.as_deref(), Some(manifest.as_str()));
    assert_eq!(listing(&built.rootfs), ["bin/", "bin/busybox", "bin/cat -> busybox", "bin/sh -> busybox", "etc/", "etc/added", "etc/motd"]);
    assert_eq!(std::fs::read(built.rootfs.join("bin/busybox")).unwrap(), std::fs::read("/bin/busybox").unwrap());
    assert_eq!(std::fs::read_to_string(built.rootfs.join("etc/motd")).unwrap(), "one\n");
    let entry = &cache.list().unwrap()[0];
    assert_eq!(
        (entry.meta.source.as_str(), entry.meta.value.as_str(), entry.meta.built_by.as_str(), entry.meta.whiteouts),
        ("image", reference.as_str(), "registry", 1)
    );
    assert_eq!(entry.meta.manifest.as_deref(), Some(manifest.as_str()));
    let names: Vec<String> =
        std::fs::read_dir(cache.root()).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    assert_eq!(names, [key.clone()], "no blobs or staging left");

    // A second build is a cache hit; so is a pull by the manifest digest.
    let again = cache.build(&image(&reference), None, EngineChoice::None).unwrap();
    assert_eq!((again.key.as_str(), again.cached), (key.as_str(), true));
    let pinned = format!("127.0.0.1:{}/specgap-test/busybox@{manifest}", registry.port);
    assert_eq!(cache.build(&image(&pinned), None, EngineChoice::None).unwrap().key, key);

    // The tag moved to another image: a new digest (what `--resume` compares), a new entry.
    let moved = gzip(&layer(true, &[("etc/motd", "two\n")]));
    let layout_two = dir.path().join("two");
    let manifest_two = oci_layout(&layout_two, &[(&moved, GZIP_LAYER)]);
    push(&layout_two, &reference);
    let key_two = format!("image-{}", config_digest(&layout_two, &manifest_two).trim_start_matches("sha256:"));
    assert_ne!(key_two, key);
    assert_eq!(environment_digest(&image(&reference), None, EngineChoice::None).unwrap(), key_two);
    let built_two = cache.build(&image(&reference), None, EngineChoice::None).unwrap();
    assert_eq!((built_two.key.as_str(), built_two.cached), (key_two.as_str(), false));
    assert_eq!(std::fs::read_to_string(built_two.rootfs.join("etc/motd")).unwrap(), "two\n");

    // A layer the registry serves with other bytes than its digest says is refused.
    let layer_hex = sha256(&moved);
    let data = registry.storage.join("docker/registry/v2/blobs/sha256").join(&layer_hex[..2]).join(&layer_hex).join("data");
    let mut tampered = std::fs::read(&data).unwrap();
    let last = tampered.len() - 1;
    tampered[last] ^= 0xff;
    std::fs::write(&data, &tampered).unwrap();
    let fresh = EnvCache::new(dir.path().join("fresh"));
    let err = fresh.build(&image(&reference), None, EngineChoice::None).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "image `{reference}`: the blob http://127.0.0.1:{}/v2/specgap-test/busybox/blobs/sha256:{layer_hex} has digest sha256:{}, expected sha256:{layer_hex}",
            registry.port,
            sha256(&tampered)
        )
    );
    assert!(fresh.list().unwrap().is_empty());
}

#[test]
fn an_image_index_gives_the_image_for_this_machine_and_says_which() {
    let dir = tempfile::tempdir().unwrap();
    let Some(registry) = start_registry(dir.path()) else { return };
    let bytes = gzip(&layer(true, &[("etc/motd", "indexed\n")]));
    let layout = dir.path().join("index");
    let manifest = oci_layout(&layout, &[(&bytes, GZIP_LAYER)]);
    let size = std::fs::metadata(layout.join("blobs/sha256").join(manifest.trim_start_matches("sha256:"))).unwrap().len();
    // The same image listed for two platforms under a nested index (as multi-arch images are).
    let entry = |arch: &str| {
        format!(
            r#"{{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"{manifest}","size":{size},"platform":{{"architecture":"{arch}","os":"linux"}}}}"#
        )
    };
    let index = format!(
        r#"{{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[{},{}]}}"#,
        entry("s390x"),
        entry("amd64")
    );
    let index_hex = sha256(index.as_bytes());
    std::fs::write(layout.join("blobs/sha256").join(&index_hex), &index).unwrap();
    std::fs::write(
        layout.join("index.json"),
        format!(
            r#"{{"schemaVersion":2,"manifests":[{{"mediaType":"application/vnd.oci.image.index.v1+json","digest":"sha256:{index_hex}","size":{}}}]}}"#,
            index.len()
        ),
    )
    .unwrap();
    let reference = format!("127.0.0.1:{}/specgap-test/multi:1", registry.port);
    push(&layout, &reference);
    let cache = EnvCache::new(dir.path().join("cache"));
    let built = cache.build(&image(&reference), None, EngineChoice::None).unwrap();
    if std::env::consts::ARCH == "x86_64" {
        assert_eq!(built.manifest, Some(format!("{manifest} (linux/amd64)")));
        assert_eq!(std::fs::read_to_string(built.rootfs.join("etc/motd")).unwrap(), "indexed\n");
    } else {
        panic!("this test lists amd64 and s390x; add this machine's architecture ({})", std::env::consts::ARCH);
    }
}

#[test]
fn an_unknown_tag_and_an_unreachable_registry_are_refused_naming_the_reference() {
    let dir = tempfile::tempdir().unwrap();
    let Some(registry) = start_registry(dir.path()) else { return };
    let cache = EnvCache::new(dir.path().join("cache"));
    let unknown = format!("127.0.0.1:{}/specgap-test/none:nope", registry.port);
    let err = cache.build(&image(&unknown), None, EngineChoice::None).unwrap_err();
    assert!(matches!(err, EnvError::UnknownImage { .. }), "{err:?}");
    assert_eq!(
        err.to_string(),
        format!(
            "image `{unknown}`: the registry has no such tag or digest (http://127.0.0.1:{}/v2/specgap-test/none/manifests/nope answered 404 Not Found): \
             {{\"errors\":[{{\"code\":\"MANIFEST_UNKNOWN\",\"message\":\"manifest unknown\",\"detail\":{{\"Tag\":\"nope\"}}}}]}}",
            registry.port
        )
    );

    let closed = free_port();
    let unreachable = format!("127.0.0.1:{closed}/specgap-test/busybox:1");
    let err = environment_digest(&image(&unreachable), None, EngineChoice::None).unwrap_err();
    match &err {
        EnvError::RegistryUnreachable { reference, url, reason } => {
            assert_eq!(reference, &unreachable);
            assert_eq!(url, &format!("http://127.0.0.1:{closed}/v2/specgap-test/busybox/manifests/1"));
            assert!(reason.contains("Connection refused"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    assert!(!cache.root().exists());
}

#[test]
fn references_are_normalised_as_docker_does() {
    let parse = |text: &str| {
        let r = Reference::parse(text).unwrap();
        (r.registry, r.repository, r.tag, r.digest)
    };
    let some = |s: &str| Some(s.to_string());
    assert_eq!(parse("python:3.12-slim"), ("docker.io".into(), "library/python".into(), some("3.12-slim"), None));
    assert_eq!(parse("busybox"), ("docker.io".into(), "library/busybox".into(), some("latest"), None));
    assert_eq!(parse("user/app"), ("docker.io".into(), "user/app".into(), some("latest"), None));
    assert_eq!(parse("localhost:5000/a/b:2"), ("localhost:5000".into(), "a/b".into(), some("2"), None));
    assert_eq!(parse("ghcr.io/o/r"), ("ghcr.io".into(), "o/r".into(), some("latest"), None));
    let digest = format!("sha256:{}", "a".repeat(64));
    assert_eq!(parse(&format!("localhost/x@{digest}")), ("localhost".into(), "x".into(), None, Some(digest.clone())));
    assert_eq!(parse(&format!("r.io:443/x:t@{digest}")), ("r.io:443".into(), "x".into(), some("t"), Some(digest)));
    assert_eq!(
        Reference::parse("x@sha256:12").unwrap_err().to_string(),
        "image `x@sha256:12`: the digest after `@` is not `sha256:` and 64 hex digits"
    );
    assert_eq!(Reference::parse("Upper/case").unwrap_err().to_string(), "image `Upper/case`: a repository name is lower case");
}
