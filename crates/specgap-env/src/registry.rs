//! Pulling an `image` reference straight from its registry, without a container engine (the
//! OCI distribution spec's pull API: `GET /v2/<name>/manifests/<reference>` and
//! `GET /v2/<name>/blobs/<digest>`).
//!
//! | step | API |
//! | --- | --- |
//! | parse `python:3.12-slim`, `localhost:5000/a/b@sha256:…` | [`Reference::parse`] |
//! | resolve the manifest (an index: linux on this machine's architecture) | [`resolve`] → [`Resolved`] |
//! | fetch config and layers, each checked against its digest | [`Resolved::fetch`] → [`Fetched`] |
//!
//! Transport: plain HTTP for `localhost`, `127.0.0.1` and `[::1]` registries (as Docker does
//! for them), HTTPS with rustls and the webpki roots otherwise. Authentication: anonymous,
//! then the registry's bearer-token challenge (with the user's basic credentials when an auth
//! file has them) or basic authentication. Credentials come from the first of
//! `$REGISTRY_AUTH_FILE`, `$XDG_RUNTIME_DIR/containers/auth.json`,
//! `~/.config/containers/auth.json`, `$DOCKER_CONFIG/config.json` (default
//! `~/.docker/config.json`) that names the registry with an `auth` entry; credential helpers
//! (`credsStore`, `credHelpers`) are not run.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use base64::Engine as _;
use serde::Deserialize;
use sha2::{Digest, Sha256};

use crate::error::{EnvError, io};
use crate::oci;

/// Docker Hub's registry name as references write it, and the host its API is served from.
const DOCKER_HUB: &str = "docker.io";
const DOCKER_HUB_API: &str = "registry-1.docker.io";

const OCI_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
const OCI_INDEX: &str = "application/vnd.oci.image.index.v1+json";
const DOCKER_MANIFEST: &str = "application/vnd.docker.distribution.manifest.v2+json";
const DOCKER_LIST: &str = "application/vnd.docker.distribution.manifest.list.v2+json";

/// Layer media types specgap unpacks (tar, gzip or zstd; the unpacker tells them by magic).
const LAYER_TYPES: [&str; 6] = [
    "application/vnd.oci.image.layer.v1.tar",
    "application/vnd.oci.image.layer.v1.tar+gzip",
    "application/vnd.oci.image.layer.v1.tar+zstd",
    "application/vnd.docker.image.rootfs.diff.tar",
    "application/vnd.docker.image.rootfs.diff.tar.gzip",
    "application/vnd.docker.image.rootfs.diff.tar.zstd",
];

/// An image reference split into where it lives: `[registry/]repository[:tag][@digest]`,
/// normalised as Docker does (no registry: Docker Hub; a one-part Docker Hub name: `library/`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reference {
    /// The registry as written (`docker.io` when none was), with its port.
    pub registry: String,
    /// The repository path, e.g. `library/python`.
    pub repository: String,
    /// The tag (`latest` when neither a tag nor a digest was written).
    pub tag: Option<String>,
    /// The manifest digest, `sha256:<hex>`, when the reference pins one.
    pub digest: Option<String>,
}

impl Reference {
    /// Parses `text`.
    ///
    /// # Errors
    /// [`EnvError::BadReference`] for an empty repository, a digest that is not `sha256:` and
    /// 64 hex digits, or upper-case letters in the repository.
    pub fn parse(text: &str) -> Result<Reference, EnvError> {
        let bad = |reason: &str| EnvError::BadReference { reference: text.to_string(), reason: reason.to_string() };
        let (name, digest) = match text.split_once('@') {
            Some((name, digest)) => {
                if !is_sha256(digest) {
                    return Err(bad("the digest after `@` is not `sha256:` and 64 hex digits"));
                }
                (name, Some(digest.to_string()))
            }
            None => (text, None),
        };
        // A tag follows the last `:` after the last `/` (a `:` before it is a registry's port).
        let last_slash = name.rfind('/').map_or(0, |i| i + 1);
        let (name, tag) = match name[last_slash..].rfind(':') {
            Some(i) => (&name[..last_slash + i], Some(name[last_slash + i + 1..].to_string())),
            None => (name, None),
        };
        let (registry, repository) = match name.split_once('/') {
            Some((first, rest)) if first.contains('.') || first.contains(':') || first == "localhost" => {
                (first.to_string(), rest.to_string())
            }
            _ if !name.contains('/') => (DOCKER_HUB.to_string(), format!("library/{name}")),
            _ => (DOCKER_HUB.to_string(), name.to_string()),
        };
        if repository.is_empty() || repository.ends_with('/') || repository == "library/" {
            return Err(bad("expected a repository name"));
        }
        if repository.chars().any(|c| c.is_ascii_uppercase()) {
            return Err(bad("a repository name is lower case"));
        }
        if tag.as_deref() == Some("") {
            return Err(bad("the tag after `:` is empty"));
        }
        let tag = if tag.is_none() && digest.is_none() { Some("latest".to_string()) } else { tag };
        Ok(Reference { registry, repository, tag, digest })
    }

    /// `http://…` for a loopback registry, `https://…` otherwise; Docker Hub's API host for it.
    fn base_url(&self) -> String {
        let host = if self.registry == DOCKER_HUB { DOCKER_HUB_API } else { self.registry.as_str() };
        let name = host.rsplit_once(':').map_or(host, |(name, port)| if port.chars().all(|c| c.is_ascii_digit()) { name } else { host });
        let scheme = if matches!(name, "localhost" | "127.0.0.1" | "[::1]") { "http" } else { "https" };
        format!("{scheme}://{host}")
    }

    /// What the manifest is asked for by: the digest when pinned, else the tag.
    fn manifest_reference(&self) -> &str {
        self.digest.as_deref().or(self.tag.as_deref()).unwrap_or("latest")
    }
}

fn is_sha256(digest: &str) -> bool {
    digest.strip_prefix("sha256:").is_some_and(|h| h.len() == 64 && h.chars().all(|c| c.is_ascii_hexdigit()))
}

#[derive(Deserialize)]
struct IndexDoc {
    manifests: Vec<Descriptor>,
}

#[derive(Deserialize)]
struct ManifestDoc {
    #[serde(rename = "mediaType", default)]
    media_type: String,
    config: Descriptor,
    layers: Vec<Descriptor>,
}

#[derive(Deserialize)]
struct ConfigDoc {
    rootfs: RootfsDoc,
}

#[derive(Deserialize)]
struct RootfsDoc {
    diff_ids: Vec<String>,
}

#[derive(Deserialize, Clone, Debug)]
struct Descriptor {
    #[serde(rename = "mediaType", default)]
    media_type: String,
    digest: String,
    #[serde(default)]
    platform: Option<Platform>,
}

#[derive(Deserialize, Clone, Debug)]
struct Platform {
    #[serde(default)]
    architecture: String,
    #[serde(default)]
    os: String,
    #[serde(default)]
    variant: Option<String>,
}

/// A manifest resolved from the registry: what the cache key and the pull need.
#[derive(Debug)]
pub struct Resolved {
    client: Client,
    /// The reference as written.
    pub reference: String,
    /// `sha256:<hex>` of the image manifest (of the chosen platform's, under an index).
    pub manifest_digest: String,
    /// `sha256:<hex>` of the image's configuration: what podman calls the image id.
    pub config_digest: String,
    /// The platform chosen from an image index (`linux/amd64`), `None` for a plain manifest.
    pub platform: Option<String>,
    layers: Vec<Descriptor>,
}

/// The blobs of a pulled image, checked and in the order they stack.
#[derive(Debug)]
pub struct Fetched {
    /// The layer blobs on disk, lowest first.
    pub layers: Vec<PathBuf>,
    /// Each layer's uncompressed digest (the configuration's `rootfs.diff_ids`).
    pub diff_ids: Vec<String>,
}

/// Resolves `reference` to its image manifest (through an index: the manifest for linux on
/// this machine's architecture). Only the manifest documents are fetched.
///
/// # Errors
/// [`EnvError::BadReference`], [`EnvError::RegistryUnreachable`], [`EnvError::UnknownImage`],
/// [`EnvError::RegistryRefused`], [`EnvError::UnsupportedMediaType`], [`EnvError::NoPlatform`],
/// [`EnvError::DigestMismatch`] (a pinned digest the registry's manifest does not have).
pub fn resolve(reference: &str) -> Result<Resolved, EnvError> {
    let parsed = Reference::parse(reference)?;
    let client = Client::new(reference, &parsed)?;
    let (mut bytes, mut media_type) = client.manifest(parsed.manifest_reference())?;
    let mut digest = format!("sha256:{}", oci::sha256_hex(&bytes));
    if let Some(pinned) = &parsed.digest
        && &digest != pinned
    {
        return Err(EnvError::DigestMismatch {
            reference: reference.into(),
            what: "manifest".into(),
            expected: pinned.clone(),
            actual: digest,
        });
    }
    let mut platform = None;
    if media_type == OCI_INDEX || media_type == DOCKER_LIST {
        let index: IndexDoc = client.parse("image index", &bytes)?;
        let chosen = pick_platform(reference, &index.manifests)?;
        platform = chosen.platform.as_ref().map(platform_name);
        (bytes, media_type) = client.manifest(&chosen.digest)?;
        digest = format!("sha256:{}", oci::sha256_hex(&bytes));
        if digest != chosen.digest {
            return Err(EnvError::DigestMismatch {
                reference: reference.into(),
                what: "manifest".into(),
                expected: chosen.digest,
                actual: digest,
            });
        }
    }
    if media_type != OCI_MANIFEST && media_type != DOCKER_MANIFEST {
        return Err(unsupported(reference, "manifest", &media_type));
    }
    let manifest: ManifestDoc = client.parse("manifest", &bytes)?;
    if !manifest.media_type.is_empty() && manifest.media_type != media_type {
        return Err(unsupported(reference, "manifest", &manifest.media_type));
    }
    if let Some(layer) = manifest.layers.iter().find(|l| !LAYER_TYPES.contains(&l.media_type.as_str())) {
        return Err(unsupported(reference, &format!("layer {}", layer.digest), &layer.media_type));
    }
    for blob in std::iter::once(&manifest.config).chain(&manifest.layers) {
        if !is_sha256(&blob.digest) {
            return Err(EnvError::BadReference {
                reference: reference.into(),
                reason: format!("the manifest names blob `{}`, not a sha256 digest", blob.digest),
            });
        }
    }
    Ok(Resolved {
        client,
        reference: reference.to_string(),
        manifest_digest: digest,
        config_digest: manifest.config.digest,
        platform,
        layers: manifest.layers,
    })
}

fn unsupported(reference: &str, what: &str, media_type: &str) -> EnvError {
    EnvError::UnsupportedMediaType { reference: reference.into(), what: what.into(), media_type: media_type.into() }
}

/// The OCI architecture name of this machine.
fn this_architecture() -> &'static str {
    match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        other => other,
    }
}

fn platform_name(platform: &Platform) -> String {
    match &platform.variant {
        Some(variant) => format!("{}/{}/{variant}", platform.os, platform.architecture),
        None => format!("{}/{}", platform.os, platform.architecture),
    }
}

/// The index entry for linux on this machine's architecture; refused (naming what the index
/// offers) when there is none, since another architecture's binaries would not run here.
fn pick_platform(reference: &str, manifests: &[Descriptor]) -> Result<Descriptor, EnvError> {
    let wanted = this_architecture();
    manifests.iter().find(|m| m.platform.as_ref().is_some_and(|p| p.os == "linux" && p.architecture == wanted)).cloned().ok_or_else(|| {
        EnvError::NoPlatform {
            reference: reference.into(),
            wanted: format!("linux/{wanted}"),
            available: manifests.iter().filter_map(|m| m.platform.as_ref()).map(platform_name).collect::<Vec<_>>().join(", "),
        }
    })
}

impl Resolved {
    /// Fetches the configuration and the layers into `dir` (created), checking each blob
    /// against its digest and that the configuration lists one uncompressed digest per layer.
    ///
    /// # Errors
    /// [`EnvError::DigestMismatch`], the registry's errors, [`EnvError::Io`].
    pub fn fetch(&self, dir: &Path) -> Result<Fetched, EnvError> {
        std::fs::create_dir_all(dir).map_err(io(dir))?;
        let config_path = self.client.blob(&self.config_digest, dir)?;
        let text = std::fs::read(&config_path).map_err(io(&config_path))?;
        let config: ConfigDoc = self.client.parse("image configuration", &text)?;
        if config.rootfs.diff_ids.len() != self.layers.len() {
            return Err(EnvError::BadReference {
                reference: self.reference.clone(),
                reason: format!(
                    "the configuration lists {} layer digests (rootfs.diff_ids) for the manifest's {} layers",
                    config.rootfs.diff_ids.len(),
                    self.layers.len()
                ),
            });
        }
        let mut layers = Vec::new();
        for layer in &self.layers {
            layers.push(self.client.blob(&layer.digest, dir)?);
        }
        Ok(Fetched { layers, diff_ids: config.rootfs.diff_ids })
    }
}

/// Checks that the uncompressed bytes of the layer at `path` have the digest `diff_id`.
///
/// # Errors
/// [`EnvError::DigestMismatch`] naming `reference`; [`EnvError::Io`].
pub fn verify_diff_id(reference: &str, path: &Path, diff_id: &str) -> Result<(), EnvError> {
    let reader = crate::unpack::decompressed(path)?;
    let actual = format!("sha256:{}", oci::sha256_stream(reader, path)?);
    if actual == diff_id {
        return Ok(());
    }
    Err(EnvError::DigestMismatch {
        reference: reference.into(),
        what: format!("uncompressed layer {}", path.display()),
        expected: diff_id.into(),
        actual,
    })
}

/// A registry connection: the HTTP client, the repository's URL and the authorization the
/// registry asked for (found on the first request and kept for the rest).
#[derive(Debug)]
struct Client {
    http: reqwest::blocking::Client,
    reference: String,
    repository_url: String,
    base_url: String,
    repository: String,
    credentials: Option<(String, String)>,
    authorization: std::sync::Mutex<Option<String>>,
}

impl Client {
    fn new(reference: &str, parsed: &Reference) -> Result<Client, EnvError> {
        let http = reqwest::blocking::Client::builder()
            .connect_timeout(Duration::from_secs(30))
            .timeout(None)
            .user_agent(concat!("specgap/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|err| EnvError::RegistryUnreachable { reference: reference.into(), url: parsed.base_url(), reason: chain(&err) })?;
        let base_url = parsed.base_url();
        Ok(Client {
            http,
            reference: reference.to_string(),
            repository_url: format!("{base_url}/v2/{}", parsed.repository),
            base_url,
            repository: parsed.repository.clone(),
            credentials: credentials_for(&parsed.registry),
            authorization: std::sync::Mutex::new(None),
        })
    }

    fn parse<T: serde::de::DeserializeOwned>(&self, what: &str, bytes: &[u8]) -> Result<T, EnvError> {
        serde_json::from_slice(bytes)
            .map_err(|err| EnvError::BadReference { reference: self.reference.clone(), reason: format!("its {what} is not valid: {err}") })
    }

    /// The manifest document at `name` (tag or digest) and its media type.
    fn manifest(&self, name: &str) -> Result<(Vec<u8>, String), EnvError> {
        let url = format!("{}/manifests/{name}", self.repository_url);
        let accept = [OCI_MANIFEST, OCI_INDEX, DOCKER_MANIFEST, DOCKER_LIST].join(", ");
        let response = self.get(&url, Some(&accept))?;
        let header = response.headers().get(reqwest::header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("").to_string();
        let bytes = response.bytes().map_err(|err| self.unreachable(&url, &err))?.to_vec();
        // A registry may answer `application/json`; the document's own mediaType then decides.
        let media_type = match header.split(';').next().unwrap_or("").trim() {
            known @ (OCI_MANIFEST | OCI_INDEX | DOCKER_MANIFEST | DOCKER_LIST) => known.to_string(),
            other => serde_json::from_slice::<serde_json::Value>(&bytes)
                .ok()
                .and_then(|doc| doc.get("mediaType").and_then(|m| m.as_str()).map(str::to_string))
                .unwrap_or_else(|| other.to_string()),
        };
        Ok((bytes, media_type))
    }

    /// Streams the blob `digest` into `dir/<hex>`, checking its digest; returns the path.
    fn blob(&self, digest: &str, dir: &Path) -> Result<PathBuf, EnvError> {
        let url = format!("{}/blobs/{digest}", self.repository_url);
        let mut response = self.get(&url, None)?;
        let hex = digest.trim_start_matches("sha256:");
        let path = dir.join(hex);
        let file = std::fs::File::create(&path).map_err(io(&path))?;
        let mut writer = HashingWriter { inner: std::io::BufWriter::new(file), hasher: Sha256::new() };
        response.copy_to(&mut writer).map_err(|err| self.unreachable(&url, &err))?;
        writer.inner.flush().map_err(io(&path))?;
        let actual = format!("sha256:{}", oci::hex(&writer.hasher.finalize()));
        if actual != digest {
            return Err(EnvError::DigestMismatch {
                reference: self.reference.clone(),
                what: format!("blob {url}"),
                expected: digest.into(),
                actual,
            });
        }
        Ok(path)
    }

    /// GET `url`, answering one authentication challenge; any status but 200 is an error.
    fn get(&self, url: &str, accept: Option<&str>) -> Result<reqwest::blocking::Response, EnvError> {
        let send = |authorization: Option<&str>| {
            let mut request = self.http.get(url);
            if let Some(accept) = accept {
                request = request.header(reqwest::header::ACCEPT, accept);
            }
            if let Some(value) = authorization {
                request = request.header(reqwest::header::AUTHORIZATION, value);
            }
            request.send().map_err(|err| self.unreachable(url, &err))
        };
        let kept = self.authorization.lock().map(|a| a.clone()).unwrap_or(None);
        let mut response = send(kept.as_deref())?;
        if response.status() == reqwest::StatusCode::UNAUTHORIZED {
            let challenge =
                response.headers().get(reqwest::header::WWW_AUTHENTICATE).and_then(|v| v.to_str().ok()).unwrap_or("").to_string();
            let authorization = self.answer(&challenge)?;
            response = send(Some(&authorization))?;
            if let Ok(mut kept) = self.authorization.lock() {
                *kept = Some(authorization);
            }
        }
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        let body: String = response.text().unwrap_or_default().chars().take(500).collect();
        if status == reqwest::StatusCode::NOT_FOUND && url.contains("/manifests/") {
            return Err(EnvError::UnknownImage { reference: self.reference.clone(), url: url.into(), body: body.trim().to_string() });
        }
        Err(EnvError::RegistryRefused {
            reference: self.reference.clone(),
            url: url.into(),
            status: status.to_string(),
            body: body.trim().to_string(),
        })
    }

    /// The `Authorization` value answering `challenge` (`Bearer realm=…,service=…,scope=…` or
    /// `Basic …`).
    fn answer(&self, challenge: &str) -> Result<String, EnvError> {
        let basic = self
            .credentials
            .as_ref()
            .map(|(user, password)| format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"))));
        let (scheme, params) = challenge.split_once(' ').unwrap_or((challenge, ""));
        if scheme.eq_ignore_ascii_case("basic") {
            return basic.ok_or_else(|| self.refused_auth("it asks for a user name and password, and no auth file names this registry"));
        }
        if !scheme.eq_ignore_ascii_case("bearer") {
            return Err(self.refused_auth(&format!("its challenge `{challenge}` is neither Bearer nor Basic")));
        }
        let params = challenge_params(params);
        let realm = params
            .iter()
            .find(|(k, _)| k == "realm")
            .map(|(_, v)| v.clone())
            .ok_or_else(|| self.refused_auth("its Bearer challenge names no realm"))?;
        let mut query: Vec<(String, String)> = params.iter().filter(|(k, _)| k == "service" || k == "scope").cloned().collect();
        if !query.iter().any(|(k, _)| k == "scope") {
            query.push(("scope".into(), format!("repository:{}:pull", self.repository)));
        }
        let mut request = self.http.get(&realm).query(&query);
        if let Some(basic) = &basic {
            request = request.header(reqwest::header::AUTHORIZATION, basic);
        }
        let response = request.send().map_err(|err| self.unreachable(&realm, &err))?;
        let status = response.status();
        if !status.is_success() {
            let body: String = response.text().unwrap_or_default().chars().take(500).collect();
            return Err(EnvError::RegistryRefused {
                reference: self.reference.clone(),
                url: realm,
                status: status.to_string(),
                body: body.trim().to_string(),
            });
        }
        #[derive(Deserialize)]
        struct Token {
            #[serde(default)]
            token: Option<String>,
            #[serde(default)]
            access_token: Option<String>,
        }
        let token: Token =
            response.json().map_err(|err| self.refused_auth(&format!("its token service {realm} answered no token: {}", chain(&err))))?;
        token
            .token
            .or(token.access_token)
            .map(|t| format!("Bearer {t}"))
            .ok_or_else(|| self.refused_auth(&format!("its token service {realm} answered no token")))
    }

    fn refused_auth(&self, reason: &str) -> EnvError {
        EnvError::RegistryRefused {
            reference: self.reference.clone(),
            url: format!("{}/v2/", self.base_url),
            status: "401 Unauthorized".into(),
            body: reason.into(),
        }
    }

    fn unreachable(&self, url: &str, err: &reqwest::Error) -> EnvError {
        EnvError::RegistryUnreachable { reference: self.reference.clone(), url: url.into(), reason: chain(err) }
    }
}

/// The error and its causes, `: `-joined (reqwest's own message omits the OS's reason).
fn chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

/// `key="value"` pairs of a challenge (values may be quoted and hold commas).
fn challenge_params(text: &str) -> Vec<(String, String)> {
    let mut params = Vec::new();
    let mut rest = text.trim();
    while let Some((key, after)) = rest.split_once('=') {
        let key = key.trim().trim_start_matches(',').trim().to_ascii_lowercase();
        let (value, remaining) = if let Some(quoted) = after.strip_prefix('"') {
            match quoted.split_once('"') {
                Some((value, remaining)) => (value.to_string(), remaining),
                None => (quoted.to_string(), ""),
            }
        } else {
            match after.split_once(',') {
                Some((value, remaining)) => (value.trim().to_string(), remaining),
                None => (after.trim().to_string(), ""),
            }
        };
        params.push((key, value));
        rest = remaining.trim_start_matches(',').trim();
    }
    params
}

struct HashingWriter<W> {
    inner: W,
    hasher: Sha256,
}

impl<W: Write> Write for HashingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hasher.update(&buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// The auth files searched, in order (see the module's guide).
fn auth_files() -> Vec<PathBuf> {
    let var = |name| std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    let mut files = Vec::new();
    files.extend(var("REGISTRY_AUTH_FILE"));
    files.extend(var("XDG_RUNTIME_DIR").map(|dir| dir.join("containers/auth.json")));
    let home = var("HOME");
    files.extend(home.as_ref().map(|home| home.join(".config/containers/auth.json")));
    match var("DOCKER_CONFIG") {
        Some(dir) => files.push(dir.join("config.json")),
        None => files.extend(home.map(|home| home.join(".docker/config.json"))),
    }
    files
}

#[derive(Deserialize)]
struct AuthFile {
    #[serde(default)]
    auths: std::collections::BTreeMap<String, AuthEntry>,
}

#[derive(Deserialize)]
struct AuthEntry {
    #[serde(default)]
    auth: Option<String>,
}

/// The user name and password the first auth file naming `registry` holds, if any. Unreadable
/// or malformed files are passed over (with a warning): an anonymous pull may still work.
fn credentials_for(registry: &str) -> Option<(String, String)> {
    let mut names = vec![registry.to_string(), format!("https://{registry}"), format!("http://{registry}")];
    if registry == DOCKER_HUB {
        names.extend(["https://index.docker.io/v1/", "index.docker.io", DOCKER_HUB_API].map(str::to_string));
    }
    for file in auth_files() {
        let Ok(text) = std::fs::read(&file) else { continue };
        let parsed: AuthFile = match serde_json::from_slice(&text) {
            Ok(parsed) => parsed,
            Err(err) => {
                tracing::warn!("{}: not an auth file ({err}); passed over", file.display());
                continue;
            }
        };
        let Some(encoded) = names.iter().find_map(|name| parsed.auths.get(name).and_then(|e| e.auth.clone())) else { continue };
        let decoded = base64::engine::general_purpose::STANDARD.decode(encoded.trim()).ok().and_then(|b| String::from_utf8(b).ok());
        match decoded.as_deref().and_then(|d| d.split_once(':')) {
            Some((user, password)) => return Some((user.to_string(), password.to_string())),
            None => tracing::warn!("{}: the `auth` of {registry} is not base64 of `user:password`; passed over", file.display()),
        }
    }
    None
}
