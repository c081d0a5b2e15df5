//! # specgap-env
//!
//! Task environments from container images (package format 2, `[environment]` `image`,
//! `dockerfile`, `rootfs`, `oci_layout`; issue 25): each is turned into a root filesystem in
//! a content-addressed cache ([`EnvCache`]) that the sandbox mounts read-only in place of the
//! host's system directories.
//!
//! | step | API |
//! | --- | --- |
//! | find podman or docker (`--engine`) | [`Engine::find`] with an [`EngineChoice`] |
//! | build or find an environment's root filesystem | [`EnvCache::build`] → [`Built`] |
//! | an environment's digest (its cache key) without building | [`environment_digest`] |
//! | list and prune the cache, and the engine's build tags | [`EnvCache::list`], [`EnvCache::prune`], [`prune_build_tags`] |
//! | unpack a tarball or layer (whiteouts applied) | [`unpack::unpack_layer`] |
//! | read an OCI image layout | [`oci::read_layout`] |
//! | pull an `image` from its registry without an engine | [`registry::resolve`], [`registry::Resolved::fetch`] |
//!
//! `rootfs` tarballs and OCI layouts are unpacked by specgap itself; Dockerfiles are built by
//! the engine and exported (`create` + `export`); `image` references are resolved and exported
//! by the engine when there is one, else pulled from their registry by specgap.
#![deny(missing_docs)]

pub mod cache;
pub mod engine;
pub mod error;
pub mod oci;
pub mod registry;
pub mod unpack;

pub use cache::{
    BUILD_REPOSITORY, Built, CacheEntry, CacheMeta, EnvCache, Pruned, UNOWNED_STAGING_GRACE, environment_digest, prune_build_tags,
};
pub use engine::{ENGINE_VARIABLE, Engine, EngineChoice, EngineKind};
pub use error::EnvError;
