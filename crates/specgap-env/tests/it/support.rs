//! Tarballs and OCI layouts written by the tests themselves.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// One entry of a test tarball.
pub enum Item<'a> {
    /// A regular file with its contents and mode.
    File(&'a str, &'a str, u32),
    /// A directory.
    Dir(&'a str),
    /// A symbolic link `path -> target`.
    Link(&'a str, &'a str),
}

/// A plain tarball of `items`, in order, with paths written verbatim (even unsafe ones).
pub fn tarball(items: &[Item]) -> Vec<u8> {
    let mut builder = tar::Builder::new(Vec::new());
    for item in items {
        let mut header = tar::Header::new_gnu();
        let (path, data, kind, mode): (&str, &[u8], tar::EntryType, u32) = match item {
            Item::File(path, text, mode) => (path, text.as_bytes(), tar::EntryType::Regular, *mode),
            Item::Dir(path) => (path, b"", tar::EntryType::Directory, 0o755),
            Item::Link(path, _) => (path, b"", tar::EntryType::Symlink, 0o777),
        };
        header.set_entry_type(kind);
        header.set_mode(mode);
        header.set_size(data.len() as u64);
        header.set_mtime(1_700_000_000);
        if let Item::Link(_, target) = item {
            header.set_link_name(target).unwrap();
        }
        // Write the name bytes directly so that `..` and absolute paths reach the archive.
        let name = &mut header.as_old_mut().name;
        name[..path.len()].copy_from_slice(path.as_bytes());
        header.set_cksum();
        builder.append(&header, data).unwrap();
    }
    builder.into_inner().unwrap()
}

pub fn gzip(bytes: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    encoder.write_all(bytes).unwrap();
    encoder.finish().unwrap()
}

/// `bytes` decompressed when they are gzip, else themselves (a layer's uncompressed digest).
pub fn gunzipped(bytes: &[u8]) -> Vec<u8> {
    use std::io::Read;
    if !bytes.starts_with(&[0x1f, 0x8b]) {
        return bytes.to_vec();
    }
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(bytes).read_to_end(&mut out).unwrap();
    out
}

pub fn sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// Writes an OCI image layout at `dir` whose one image stacks `layers` (lowest first, each a
/// tarball's bytes with its media type); returns the manifest digest.
pub fn oci_layout(dir: &Path, layers: &[(&[u8], &str)]) -> String {
    let blobs = dir.join("blobs/sha256");
    std::fs::create_dir_all(&blobs).unwrap();
    let put = |bytes: &[u8]| {
        let hex = sha256(bytes);
        std::fs::write(blobs.join(&hex), bytes).unwrap();
        format!("sha256:{hex}")
    };
    let diff_ids: Vec<String> = layers.iter().map(|(bytes, _)| format!(r#""sha256:{}""#, sha256(&gunzipped(bytes)))).collect();
    let config_bytes =
        format!(r#"{{"architecture":"amd64","os":"linux","rootfs":{{"type":"layers","diff_ids":[{}]}}}}"#, diff_ids.join(","));
    let config = put(config_bytes.as_bytes());
    let layer_descriptors: Vec<String> = layers
        .iter()
        .map(|(bytes, media)| format!(r#"{{"mediaType":"{media}","digest":"{}","size":{}}}"#, put(bytes), bytes.len()))
        .collect();
    let manifest = format!(
        r#"{{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"{config}","size":{}}},"layers":[{}]}}"#,
        config_bytes.len(),
        layer_descriptors.join(",")
    );
    let manifest_digest = put(manifest.as_bytes());
    std::fs::write(dir.join("oci-layout"), r#"{"imageLayoutVersion":"1.0.0"}"#).unwrap();
    std::fs::write(
        dir.join("index.json"),
        format!(
            r#"{{"schemaVersion":2,"manifests":[{{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"{manifest_digest}","size":{}}}]}}"#,
            manifest.len()
        ),
    )
    .unwrap();
    manifest_digest
}

/// Every path under `root`, relative, sorted, directories with a trailing `/`, links as
/// `path -> target`.
pub fn listing(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for entry in walkdir::WalkDir::new(root).min_depth(1).sort_by_file_name() {
        let entry = entry.unwrap();
        let rel = entry.path().strip_prefix(root).unwrap().display().to_string();
        if entry.file_type().is_symlink() {
            out.push(format!("{rel} -> {}", std::fs::read_link(entry.path()).unwrap().display()));
        } else if entry.file_type().is_dir() {
            out.push(format!("{rel}/"));
        } else {
            out.push(rel);
        }
    }
    out
}

pub fn write(path: &Path, bytes: &[u8]) -> PathBuf {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, bytes).unwrap();
    path.to_path_buf()
}

/// Whether tests needing external programs must fail rather than skip (CI).
pub fn required() -> bool {
    std::env::var("SPECGAP_REQUIRE_EXTERNAL").is_ok_and(|v| v == "1")
}
