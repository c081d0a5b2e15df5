//! Reading an OCI image layout (OCI image-spec v1: `oci-layout`, `index.json`, `blobs/`): the
//! manifest of its one image and the layers it stacks, each blob checked against its digest.

use std::io::Read;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use sha2::{Digest, Sha256};

use crate::error::{EnvError, io};

/// Media types of an image index (OCI and Docker's).
const INDEX_TYPES: [&str; 2] = ["application/vnd.oci.image.index.v1+json", "application/vnd.docker.distribution.manifest.list.v2+json"];

#[derive(Deserialize)]
struct Index {
    manifests: Vec<Descriptor>,
}

#[derive(Deserialize)]
struct Manifest {
    layers: Vec<Descriptor>,
}

#[derive(Deserialize, Clone)]
struct Descriptor {
    #[serde(rename = "mediaType", default)]
    media_type: String,
    digest: String,
    #[serde(default)]
    platform: Option<Platform>,
}

#[derive(Deserialize, Clone)]
struct Platform {
    #[serde(default)]
    architecture: String,
    #[serde(default)]
    os: String,
}

/// One image of a layout: its manifest's digest (the cache key) and its layer blobs in order,
/// lowest first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LayoutImage {
    /// `sha256:<hex>` of the manifest.
    pub manifest_digest: String,
    /// The layer blobs, lowest first (each a tarball, plain, gzip or zstd).
    pub layers: Vec<PathBuf>,
}

/// The architecture name OCI uses for this machine.
fn this_architecture() -> &'static str {
    match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        other => other,
    }
}

/// Reads the layout at `dir`: the manifest `index.json` names (through one nested index, the
/// entry for linux on this machine's architecture, else the first), and its layers.
///
/// # Errors
/// [`EnvError::BadLayout`] when a file is missing, not the JSON the spec defines, or a blob's
/// bytes do not match its digest; [`EnvError::Io`].
pub fn read_layout(dir: &Path) -> Result<LayoutImage, EnvError> {
    let index_path = dir.join("index.json");
    let index: Index = parse(&index_path, &std::fs::read(&index_path).map_err(io(&index_path))?)?;
    let mut chosen = pick(&index_path, &index.manifests)?;
    // One level of nesting: a layout written by `skopeo copy ... oci:` or `podman save` points
    // straight at a manifest, a multi-platform one at an index.
    if INDEX_TYPES.contains(&chosen.media_type.as_str()) {
        let (path, bytes) = blob(dir, &chosen.digest)?;
        let nested: Index = parse(&path, &bytes)?;
        chosen = pick(&path, &nested.manifests)?;
    }
    let (manifest_path, bytes) = blob(dir, &chosen.digest)?;
    let manifest: Manifest = parse(&manifest_path, &bytes)?;
    let mut layers = Vec::new();
    for layer in &manifest.layers {
        let path = blob_path(dir, &layer.digest)?;
        verify(&path, &layer.digest)?;
        layers.push(path);
    }
    Ok(LayoutImage { manifest_digest: chosen.digest, layers })
}

fn parse<T: serde::de::DeserializeOwned>(path: &Path, bytes: &[u8]) -> Result<T, EnvError> {
    serde_json::from_slice(bytes).map_err(|err| EnvError::BadLayout { path: path.to_path_buf(), reason: err.to_string() })
}

fn pick(path: &Path, manifests: &[Descriptor]) -> Result<Descriptor, EnvError> {
    let native = manifests.iter().find(|m| m.platform.as_ref().is_some_and(|p| p.os == "linux" && p.architecture == this_architecture()));
    native
        .or(manifests.first())
        .cloned()
        .ok_or_else(|| EnvError::BadLayout { path: path.to_path_buf(), reason: "lists no manifest; expected one image".into() })
}

/// `blobs/<algorithm>/<hex>` for a `sha256:<hex>` digest.
fn blob_path(dir: &Path, digest: &str) -> Result<PathBuf, EnvError> {
    let hex = digest.strip_prefix("sha256:").filter(|h| h.len() == 64 && h.chars().all(|c| c.is_ascii_hexdigit())).ok_or_else(|| {
        EnvError::BadLayout { path: dir.join("index.json"), reason: format!("digest `{digest}` is not `sha256:` and 64 hex digits") }
    })?;
    Ok(dir.join("blobs").join("sha256").join(hex))
}

fn blob(dir: &Path, digest: &str) -> Result<(PathBuf, Vec<u8>), EnvError> {
    let path = blob_path(dir, digest)?;
    let bytes = std::fs::read(&path).map_err(io(&path))?;
    check_digest(&path, digest, &sha256_hex(&bytes))?;
    Ok((path, bytes))
}

fn verify(path: &Path, digest: &str) -> Result<(), EnvError> {
    let hex = sha256_file(path)?;
    check_digest(path, digest, &hex)
}

fn check_digest(path: &Path, digest: &str, hex: &str) -> Result<(), EnvError> {
    if digest.strip_prefix("sha256:") == Some(hex) {
        return Ok(());
    }
    Err(EnvError::BadLayout { path: path.to_path_buf(), reason: format!("content is sha256:{hex}, expected {digest}") })
}

/// Lowercase hex SHA-256 of `bytes`.
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// Lowercase hex SHA-256 of the file at `path`, streamed.
///
/// # Errors
/// [`EnvError::Io`] naming `path`.
pub fn sha256_file(path: &Path) -> Result<String, EnvError> {
    let file = std::fs::File::open(path).map_err(io(path))?;
    sha256_stream(file, path)
}

/// Lowercase hex SHA-256 of what `reader` yields, streamed; read errors name `path`.
pub(crate) fn sha256_stream(mut reader: impl Read, path: &Path) -> Result<String, EnvError> {
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = reader.read(&mut buf).map_err(io(path))?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(hex(&hasher.finalize()))
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
