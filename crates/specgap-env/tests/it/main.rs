//! Integration tests of specgap-env: unpacking tarballs and OCI layouts (whiteouts, unsafe
//! entries), the content-addressed cache, building through podman, and pulling from a real registry
//! without an engine.

mod cache;
mod engine;
mod registry;
mod support;
mod unpack;
