//! [`EnvCache`]: root filesystems in a content-addressed cache, one directory per key.
//!
//! Layout: `<root>/<key>/rootfs/` (the unpacked tree) and `<root>/<key>/meta.json`
//! ([`CacheMeta`]). Keys name what the tree was made from, so an unchanged environment is
//! found without rebuilding and a changed one gets a new key:
//!
//! | source | key |
//! | --- | --- |
//! | `rootfs` | `rootfs-<sha256 of the tarball>` |
//! | `oci_layout` | `oci-<hex of the manifest digest>` |
//! | `image` | `image-<hex of the image's config digest>`: the engine's image id, or the pulled manifest's `config` |
//! | `dockerfile` | `build-<sha256 over the build context: paths, kinds, modes, contents>` |
//! | an entry with a layer over it ([`EnvCache::layered`]) | `layered-<sha256 of the base's key and the layer's sha256>` |
//!
//! An entry appears whole or not at all: it is unpacked under `<root>/.tmp-…` and renamed.

use std::collections::BTreeSet;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use specgap_protocol::package::ImageSource;

use crate::engine::{Engine, EngineChoice};
use crate::error::{EnvError, io};
use crate::unpack::{self, UnpackStats};
use crate::{oci, registry};

/// What `meta.json` of a cache entry records.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CacheMeta {
    /// The entry's key (its directory name).
    pub key: String,
    /// The source key (`image`, `dockerfile`, `rootfs`, `oci_layout`).
    pub source: String,
    /// The source as written in the first package built with it.
    pub value: String,
    /// Who produced the tree: `specgap` (unpacked itself) or the engine's name.
    pub built_by: String,
    /// Bytes of regular files in the tree.
    pub bytes: u64,
    /// Entries in the tree.
    pub entries: u64,
    /// Whiteouts applied while unpacking.
    pub whiteouts: u64,
    /// Wall-clock seconds the build took.
    pub build_seconds: f64,
    /// For an image pulled from its registry: the manifest digest and the platform chosen
    /// from an index, e.g. `sha256:… (linux/amd64)`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub manifest: Option<String>,
}

/// The result of [`EnvCache::build`].
#[derive(Debug, Clone, PartialEq)]
pub struct Built {
    /// The cache key.
    pub key: String,
    /// The root filesystem directory.
    pub rootfs: PathBuf,
    /// Whether it was in the cache already (nothing was built).
    pub cached: bool,
    /// For an image pulled from its registry without an engine: the manifest digest and the
    /// platform chosen from an index (`sha256:… (linux/amd64)`); `None` otherwise.
    pub manifest: Option<String>,
}

/// One listed cache entry.
#[derive(Debug, Clone, PartialEq)]
pub struct CacheEntry {
    /// The root filesystem directory.
    pub rootfs: PathBuf,
    /// Its metadata.
    pub meta: CacheMeta,
}

/// The environment cache at one directory.
#[derive(Debug, Clone)]
pub struct EnvCache {
    root: PathBuf,
}

impl EnvCache {
    /// A cache at `root` (created on first build).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        EnvCache { root: root.into() }
    }

    /// `$XDG_CACHE_HOME/specgap/env`, else `$HOME/.cache/specgap/env`.
    ///
    /// # Errors
    /// [`EnvError::NoCacheDir`].
    pub fn default_root() -> Result<PathBuf, EnvError> {
        let nonempty = |name| std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from);
        let base = match nonempty("XDG_CACHE_HOME") {
            Some(cache) => cache,
            None => nonempty("HOME").ok_or(EnvError::NoCacheDir)?.join(".cache"),
        };
        Ok(base.join("specgap").join("env"))
    }

    /// The cache directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The root filesystem of `key`, when cached.
    pub fn lookup(&self, key: &str) -> Option<PathBuf> {
        let dir = self.root.join(key);
        dir.join("meta.json").is_file().then(|| dir.join("rootfs"))
    }

    /// Makes sure the root filesystem of `source` is in the cache and returns it: `rootfs`
    /// and `oci_layout` are unpacked by specgap itself (no engine needed); an `image` is
    /// resolved and exported by the engine (`engine`) when one is chosen or found, else pulled
    /// from its registry by specgap ([`crate::registry`]); a `dockerfile` needs an engine,
    /// which builds the image and exports it. A Dockerfile whose build context is unchanged is
    /// found without an engine.
    ///
    /// # Errors
    /// [`EnvError::NoEngine`] for a Dockerfile with no engine chosen or found; the errors of
    /// unpacking, layouts, engines and registries.
    ///
    /// `path` is the file or directory a `dockerfile`, `rootfs` or `oci_layout` names inside
    /// its package (a Dockerfile's directory is its build context); `None` for an `image`.
    pub fn build(&self, source: &ImageSource, path: Option<&Path>, engine: EngineChoice) -> Result<Built, EnvError> {
        let started = Instant::now();
        let (key, recipe) = resolve(source, path, engine)?;
        match recipe {
            Recipe::Tarball(tarball) => {
                self.fill(&key, origin(source), "specgap", started, None, |tree| unpack::unpack_layer(&tarball, tree))
            }
            Recipe::Layout(image) => self.fill(&key, origin(source), "specgap", started, None, |tree| {
                let mut total = UnpackStats::default();
                for layer in &image.layers {
                    add(&mut total, unpack::unpack_layer(layer, tree)?);
                }
                Ok(total)
            }),
            Recipe::Dockerfile { dockerfile, context, hash } => {
                if let Some(rootfs) = self.lookup(&key) {
                    return Ok(Built { key, rootfs, cached: true, manifest: None });
                }
                let engine = need_engine(source, engine)?;
                let id = engine.build(&dockerfile, &context, &build_tag(&hash))?;
                self.fill_from_engine(&key, source, &engine, &id, started)
            }
            Recipe::Image { engine, id } => self.fill_from_engine(&key, source, &engine, &id, started),
            Recipe::Pull(image) => {
                let manifest = pulled_description(&image);
                let built = self.fill(&key, origin(source), "registry", started, Some(&manifest), |tree| pull_into(&image, tree))?;
                Ok(Built { manifest: Some(manifest), ..built })
            }
        }
    }

    fn fill_from_engine(&self, key: &str, source: &ImageSource, engine: &Engine, id: &str, started: Instant) -> Result<Built, EnvError> {
        self.fill(key, origin(source), engine.kind.name(), started, None, |tree| {
            let tar_path = tree.with_extension("export.tar");
            engine.export(id, &tar_path)?;
            let stats = unpack::unpack_layer(&tar_path, tree);
            std::fs::remove_file(&tar_path).map_err(io(&tar_path))?;
            stats
        })
    }

    /// Returns the entry `key`, unpacking it with `make` (into an empty directory) first when
    /// it is missing.
    fn fill(
        &self,
        key: &str,
        (source, value): (&str, &str),
        built_by: &str,
        started: Instant,
        manifest: Option<&str>,
        make: impl FnOnce(&Path) -> Result<UnpackStats, EnvError>,
    ) -> Result<Built, EnvError> {
        if let Some(rootfs) = self.lookup(key) {
            return Ok(Built { key: key.to_string(), rootfs, cached: true, manifest: None });
        }
        fs_err::create_dir_all(&self.root).map_err(|e| EnvError::Io { path: self.root.clone(), source: e.into() })?;
        // Unique per build, not only per process: two threads may build one key at once (two
        // packages with the same tarball), and a shared staging tree would be unpacked into
        // and removed under each other.
        static BUILDS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let build = BUILDS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let staging = self.root.join(format!("{STAGING_PREFIX}{key}-{}-{build}", std::process::id()));
        if staging.exists() {
            std::fs::remove_dir_all(&staging).map_err(io(&staging))?;
        }
        let tree = staging.join("rootfs");
        std::fs::create_dir_all(&tree).map_err(io(&tree))?;
        // The sandbox's user must be able to enter the root (a tarball's `./` may say 0700).
        let stats = make(&tree)?;
        std::fs::set_permissions(&tree, std::fs::Permissions::from_mode(0o755)).map_err(io(&tree))?;
        let (bytes, entries) = unpack::tree_size(&tree);
        let meta = CacheMeta {
            key: key.to_string(),
            source: source.to_string(),
            value: value.to_string(),
            built_by: built_by.to_string(),
            bytes,
            entries,
            whiteouts: stats.whiteouts,
            build_seconds: started.elapsed().as_secs_f64(),
            manifest: manifest.map(str::to_string),
        };
        let meta_path = staging.join("meta.json");
        let text = serde_json::to_string_pretty(&meta).map_err(|e| EnvError::Io { path: meta_path.clone(), source: e.into() })?;
        std::fs::write(&meta_path, text).map_err(io(&meta_path))?;
        let dir = self.root.join(key);
        match std::fs::rename(&staging, &dir) {
            Ok(()) => {}
            // Another build of the same key finished first: its tree is the same.
            Err(_) if self.lookup(key).is_some() => std::fs::remove_dir_all(&staging).map_err(io(&staging))?,
            Err(err) => {
                return Err(EnvError::Io { path: dir, source: err });
            }
        }
        tracing::info!("environment {key} built by {built_by}: {entries} entries, {bytes} bytes");
        Ok(Built { key: key.to_string(), rootfs: dir.join("rootfs"), cached: false, manifest: None })
    }

    /// Makes sure `base` (a root filesystem in this cache) with `layer` (an OCI layer tarball,
    /// e.g. a copy-on-write machine's changes, specgap-sandbox's `Machine::write_layer`)
    /// applied over it is in the cache, and returns it. Key: `layered-<sha256 of the base's key
    /// and the layer's sha256>`. The tree is a hard-linked copy of the base (the cache's trees
    /// are only ever read: sandboxes see them read-only or as an overlay's lower layer), so it
    /// costs directories and links, not the base's bytes; the layer's files replace links
    /// instead of writing through them.
    ///
    /// # Errors
    /// [`EnvError::BadCacheEntry`] when `base` is not an entry of this cache; the errors of
    /// unpacking.
    pub fn layered(&self, base: &Path, layer: &Path) -> Result<Built, EnvError> {
        let started = Instant::now();
        let base_key = self.entry_key(base)?;
        let layer_digest = oci::sha256_file(layer)?;
        let key = format!("layered-{}", oci::sha256_hex(format!("{base_key}\n{layer_digest}").as_bytes()));
        let value = format!("{base_key} + sha256:{layer_digest}");
        self.fill(&key, ("layer", &value), "specgap", started, None, |tree| {
            link_tree(base, tree)?;
            unpack::unpack_layer(layer, tree)
        })
    }

    /// The key of the entry whose root filesystem is `rootfs`.
    fn entry_key(&self, rootfs: &Path) -> Result<String, EnvError> {
        let not_ours = || EnvError::BadCacheEntry {
            path: rootfs.to_path_buf(),
            reason: format!("not a root filesystem of the environment cache {}", self.root.display()),
        };
        let entry = rootfs.parent().ok_or_else(not_ours)?;
        let key = entry.file_name().and_then(|k| k.to_str()).ok_or_else(not_ours)?;
        if entry.parent() != Some(self.root.as_path()) || self.lookup(key).as_deref() != Some(rootfs) {
            return Err(not_ours());
        }
        Ok(key.to_string())
    }

    /// Every complete entry, by key.
    ///
    /// # Errors
    /// [`EnvError::Io`]; [`EnvError::BadCacheEntry`] for an unreadable `meta.json`.
    pub fn list(&self) -> Result<Vec<CacheEntry>, EnvError> {
        let mut found = Vec::new();
        let read = match std::fs::read_dir(&self.root) {
            Ok(read) => read,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(found),
            Err(err) => {
                return Err(EnvError::Io { path: self.root.clone(), source: err });
            }
        };
        for child in read {
            let child = child.map_err(io(&self.root))?;
            let meta_path = child.path().join("meta.json");
            if child.file_name().to_string_lossy().starts_with('.') || !meta_path.is_file() {
                continue;
            }
            let text = std::fs::read_to_string(&meta_path).map_err(io(&meta_path))?;
            let meta: CacheMeta =
                serde_json::from_str(&text).map_err(|err| EnvError::BadCacheEntry { path: meta_path.clone(), reason: err.to_string() })?;
            found.push(CacheEntry { rootfs: child.path().join("rootfs"), meta });
        }
        found.sort_by(|a, b| a.meta.key.cmp(&b.meta.key));
        Ok(found)
    }

    /// Removes every entry whose key is not in `keep`, and every staging tree (`.tmp-…`)
    /// whose build is over: its owning process (the pid in its name) is gone, so a killed
    /// build's tree never stays. A staging tree whose owner runs (a build in progress, in this
    /// or another process) is kept, as is one whose name has no owner pid when it is younger
    /// than [`UNOWNED_STAGING_GRACE`]. Other names starting with `.` are removed as before.
    ///
    /// # Errors
    /// [`EnvError::Io`].
    pub fn prune(&self, keep: &BTreeSet<String>) -> Result<Pruned, EnvError> {
        let mut pruned = Pruned::default();
        let read = match std::fs::read_dir(&self.root) {
            Ok(read) => read,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(pruned),
            Err(err) => {
                return Err(EnvError::Io { path: self.root.clone(), source: err });
            }
        };
        for child in read {
            let child = child.map_err(io(&self.root))?;
            let name = child.file_name().to_string_lossy().into_owned();
            if keep.contains(&name) {
                continue;
            }
            let staging = name.starts_with(STAGING_PREFIX);
            if staging && staging_in_use(&name, &child.path()) {
                pruned.staging_kept.push(name);
                continue;
            }
            std::fs::remove_dir_all(child.path()).map_err(io(child.path()))?;
            if staging {
                pruned.staging_removed.push(name);
            } else if !name.starts_with('.') {
                pruned.entries.push(name);
            }
        }
        pruned.entries.sort();
        pruned.staging_removed.sort();
        pruned.staging_kept.sort();
        Ok(pruned)
    }
}

/// What [`EnvCache::prune`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Pruned {
    /// The keys of the entries removed, sorted.
    pub entries: Vec<String>,
    /// The names of the staging trees removed (their builds were killed), sorted.
    pub staging_removed: Vec<String>,
    /// The names of the staging trees kept because their builds may still run, sorted.
    pub staging_kept: Vec<String>,
}

/// How a staging tree's name starts: `.tmp-<key>-<pid>-<build>` ([`EnvCache::fill`]).
const STAGING_PREFIX: &str = ".tmp-";

/// How long a staging tree whose name names no owner pid (not made by this version) is kept
/// by [`EnvCache::prune`]: an hour, longer than any build.
pub const UNOWNED_STAGING_GRACE: std::time::Duration = std::time::Duration::from_secs(3600);

/// The pid that made the staging tree `name`: `.tmp-<key>-<pid>-<build>` (key holds `-`, so
/// the pid is the second field from the end), else `None`.
fn staging_owner(name: &str) -> Option<u32> {
    let mut fields = name.strip_prefix(STAGING_PREFIX)?.rsplitn(3, '-');
    let (build, pid, _key) = (fields.next()?, fields.next()?, fields.next()?);
    build.parse::<u64>().ok()?;
    pid.parse::<u32>().ok().filter(|pid| *pid > 0)
}

/// Whether the staging tree `name` at `path` may belong to a build still running: its owner
/// process exists (a pid reused by another process keeps the tree until a later prune), or,
/// without an owner in the name, it is younger than [`UNOWNED_STAGING_GRACE`].
fn staging_in_use(name: &str, path: &Path) -> bool {
    match staging_owner(name) {
        Some(pid) => Path::new("/proc").join(pid.to_string()).exists(),
        None => std::fs::symlink_metadata(path)
            .and_then(|meta| meta.modified())
            .is_ok_and(|modified| modified.elapsed().is_ok_and(|age| age < UNOWNED_STAGING_GRACE)),
    }
}

/// The repository under which `build` tags the images it has an engine build from a
/// Dockerfile (`<BUILD_REPOSITORY>:<first 16 hex digits of the build context's hash>`).
pub const BUILD_REPOSITORY: &str = "localhost/specgap-env/build";

/// The engine tag of a Dockerfile build whose context hashes to `hash`.
/// The cache metadata's description of `source`: its key and value.
fn origin(source: &ImageSource) -> (&'static str, &str) {
    (source.key(), source.value())
}

/// Recreates the tree at `from` in the empty directory `to`: directories made (modes kept),
/// regular files hard-linked (copied where a link cannot be made), symbolic links recreated.
fn link_tree(from: &Path, to: &Path) -> Result<(), EnvError> {
    // Modes are set last: a read-only directory must first receive its contents.
    let mut modes = Vec::new();
    for entry in walkdir::WalkDir::new(from).min_depth(1) {
        let entry = entry.map_err(|e| EnvError::Io { path: from.to_path_buf(), source: e.into() })?;
        let Ok(rel) = entry.path().strip_prefix(from) else { continue };
        let dest = to.join(rel);
        let kind = entry.file_type();
        if kind.is_dir() {
            std::fs::create_dir(&dest).map_err(io(&dest))?;
            let mode =
                entry.metadata().map_err(|e| EnvError::Io { path: entry.path().to_path_buf(), source: e.into() })?.permissions().mode();
            modes.push((dest, mode));
        } else if kind.is_symlink() {
            let target = std::fs::read_link(entry.path()).map_err(io(entry.path()))?;
            std::os::unix::fs::symlink(target, &dest).map_err(io(&dest))?;
        } else if kind.is_file() && std::fs::hard_link(entry.path(), &dest).is_err() {
            std::fs::copy(entry.path(), &dest).map_err(io(&dest))?;
        }
    }
    for (dir, mode) in modes.into_iter().rev() {
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(mode)).map_err(io(&dir))?;
    }
    Ok(())
}

fn build_tag(hash: &str) -> String {
    format!("{BUILD_REPOSITORY}:{}", build_tag_suffix(hash))
}

fn build_tag_suffix(hash: &str) -> &str {
    hash.get(..16).unwrap_or(hash)
}

/// The cache key (the environment's digest) `source` has now, without building anything: a
/// tarball's or build context's hash, a layout's manifest digest (its blobs checked), or a
/// reference's config digest: the engine's image id (the engine may pull), or without an
/// engine the `config` of the manifest the registry has under the reference now (only the
/// manifest is fetched). A run records it so that a resumed run can tell a changed
/// environment, a moved tag included.
///
/// # Errors
/// As [`EnvCache::build`], less the unpacking.
pub fn environment_digest(source: &ImageSource, path: Option<&Path>, engine: EngineChoice) -> Result<String, EnvError> {
    resolve(source, path, engine).map(|(key, _)| key)
}

/// What filling a cache entry needs, once its key is known.
enum Recipe {
    Tarball(PathBuf),
    Layout(oci::LayoutImage),
    Dockerfile { dockerfile: PathBuf, context: PathBuf, hash: String },
    Image { engine: Engine, id: String },
    Pull(registry::Resolved),
}

/// The key of `source` and how to fill its entry.
fn resolve(source: &ImageSource, path: Option<&Path>, engine: EngineChoice) -> Result<(String, Recipe), EnvError> {
    let package_path = || path.map(Path::to_path_buf).unwrap_or_default();
    match source {
        ImageSource::Rootfs(_) => {
            let tarball = package_path();
            Ok((format!("rootfs-{}", oci::sha256_file(&tarball)?), Recipe::Tarball(tarball)))
        }
        ImageSource::OciLayout(_) => {
            let image = oci::read_layout(&package_path())?;
            Ok((format!("oci-{}", image.manifest_digest.trim_start_matches("sha256:")), Recipe::Layout(image)))
        }
        ImageSource::Dockerfile(_) => {
            let dockerfile = package_path();
            let context = dockerfile.parent().map(Path::to_path_buf).unwrap_or_default();
            let hash = context_hash(&context, &dockerfile)?;
            Ok((format!("build-{hash}"), Recipe::Dockerfile { dockerfile, context, hash }))
        }
        ImageSource::Image(reference) => match Engine::find(engine)? {
            Some(engine) => {
                let id = engine.image_id(reference)?;
                Ok((format!("image-{}", id.trim_start_matches("sha256:")), Recipe::Image { engine, id }))
            }
            // No engine: specgap pulls it itself. The engine's image id is the config digest,
            // so both ways give one key to one image.
            None => {
                let image = registry::resolve(reference)?;
                Ok((format!("image-{}", image.config_digest.trim_start_matches("sha256:")), Recipe::Pull(image)))
            }
        },
    }
}

/// Removes the engine tags [`EnvCache::build`] left on Dockerfile builds
/// (`BUILD_REPOSITORY:<hash prefix>`), all but those of the `build-…` keys in `keep`;
/// returns the tags removed. Nothing is asked of an engine when `engine` finds none.
///
/// # Errors
/// [`EnvError::EngineMissing`] when `engine` names one that is not on PATH;
/// [`EnvError::EngineFailed`].
pub fn prune_build_tags(engine: EngineChoice, keep: &BTreeSet<String>) -> Result<Vec<String>, EnvError> {
    let Some(engine) = Engine::find(engine)? else {
        return Ok(Vec::new());
    };
    let kept: BTreeSet<String> = keep
        .iter()
        .filter_map(|key| key.strip_prefix("build-"))
        .map(|hash| format!("{BUILD_REPOSITORY}:{}", build_tag_suffix(hash)))
        .collect();
    let mut removed = Vec::new();
    for tag in engine.tags_under(BUILD_REPOSITORY)? {
        if kept.contains(&tag) {
            continue;
        }
        engine.untag(&tag)?;
        removed.push(tag);
    }
    Ok(removed)
}

fn add(total: &mut UnpackStats, stats: UnpackStats) {
    total.entries += stats.entries;
    total.whiteouts += stats.whiteouts;
    total.skipped += stats.skipped;
}

/// `sha256:<manifest> (linux/amd64)`, or the digest alone for a plain manifest.
fn pulled_description(image: &registry::Resolved) -> String {
    match &image.platform {
        Some(platform) => format!("{} ({platform})", image.manifest_digest),
        None => image.manifest_digest.clone(),
    }
}

/// Fetches `image`'s blobs next to `tree` (each checked against its digest, each layer's
/// uncompressed bytes against the configuration's `diff_ids`), unpacks the layers in order
/// and removes the blobs.
fn pull_into(image: &registry::Resolved, tree: &Path) -> Result<UnpackStats, EnvError> {
    let blobs = tree.with_extension("blobs");
    let fetched = image.fetch(&blobs)?;
    let mut total = UnpackStats::default();
    for (layer, diff_id) in fetched.layers.iter().zip(&fetched.diff_ids) {
        registry::verify_diff_id(&image.reference, layer, diff_id)?;
        add(&mut total, unpack::unpack_layer(layer, tree)?);
    }
    std::fs::remove_dir_all(&blobs).map_err(io(&blobs))?;
    Ok(total)
}

fn need_engine(source: &ImageSource, choice: EngineChoice) -> Result<Engine, EnvError> {
    let hint = if choice == EngineChoice::None { "; `--engine none` was given".to_string() } else { String::new() };
    Engine::find(choice)?.ok_or_else(|| EnvError::NoEngine { key: source.key(), value: source.value().to_string(), hint })
}

/// SHA-256 over the Dockerfile's place in its context and every entry of the context (sorted
/// paths, kinds, executable bits, contents or link targets): any change a build could see
/// changes it.
fn context_hash(context: &Path, dockerfile: &Path) -> Result<String, EnvError> {
    let mut hasher = Sha256::new();
    hasher.update(b"specgap-build-context-v1\0");
    let rel = dockerfile.strip_prefix(context).unwrap_or(dockerfile);
    hasher.update(rel.as_os_str().as_encoded_bytes());
    hasher.update(b"\0");
    for entry in walkdir::WalkDir::new(context).min_depth(1).sort_by_file_name() {
        let entry = entry.map_err(|err| EnvError::Io {
            path: err.path().map(Path::to_path_buf).unwrap_or_else(|| context.to_path_buf()),
            source: err.into(),
        })?;
        let rel = entry.path().strip_prefix(context).unwrap_or(entry.path());
        let kind = entry.file_type();
        let tag: &[u8] = if kind.is_dir() {
            b"d"
        } else if kind.is_symlink() {
            b"l"
        } else {
            b"f"
        };
        hasher.update(tag);
        hasher.update(rel.as_os_str().as_encoded_bytes());
        hasher.update(b"\0");
        if kind.is_symlink() {
            let target = std::fs::read_link(entry.path()).map_err(io(entry.path()))?;
            hasher.update(target.as_os_str().as_encoded_bytes());
        } else if kind.is_file() {
            let meta = entry.metadata().map_err(|err| EnvError::Io { path: entry.path().to_path_buf(), source: err.into() })?;
            hasher.update(if meta.permissions().mode() & 0o111 != 0 { b"x" } else { b"-" });
            hasher.update(oci::sha256_file(entry.path())?.as_bytes());
        }
        hasher.update(b"\0");
    }
    Ok(oci::hex(&hasher.finalize()))
}
