//! Helpers shared by specgap's integration-test binaries (a dev-dependency only; never
//! published).
//!
//! Several crates test against real external programs — the pinned agent CLIs, Debian's
//! busybox-static and bash-static, podman — and each used to carry its own copy of the same
//! set-up. This crate holds the one copy:
//!
//! - [`external`]: the rule for a missing external program — skip the test with a
//!   `skipped: …` note, or fail it when `SPECGAP_REQUIRE_EXTERNAL=1` (CI).
//! - [`installs`]: the shared installation cache of the real agent CLIs
//!   (`target/specgap-test-cache`, which `.ci/run` fills first) and a once-per-process install;
//!   with the feature `adapters`, the in-process install of a pinned CLI
//!   ([`installs::installed_adapter`]).
//! - [`image`]: busybox root filesystems (optionally with a static bash) and format-2 image
//!   task packages on them, as the image-environment tests of the engine, the `cli:` agents
//!   and the residualization pipeline use.
//! - [`files`]: writing a file with its parents, listing a tree, searching bytes.
//! - [`tripwire`]: reading an episode's network tripwire record from its events.
//!
//! Everything here panics on failure: it is test-only code, so `expect()`/`panic!` with a
//! message naming what failed (and the path) stand in for the typed errors the library crates
//! return. Only the test binaries depend on it: it is a dev-dependency of the crates that use
//! it, never a normal one, and `publish = false`.
//! It depends on nothing but `specgap-protocol`, which every user already builds (and, with
//! the feature `adapters`, `specgap-adapters`).

pub mod external;
pub mod files;
pub mod image;
pub mod installs;
pub mod tripwire;
