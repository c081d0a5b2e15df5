//! Integration tests of specgap-env: unpacking tarballs and OCI layouts (whiteouts, unsafe
//! entries), the content-addressed cache, and building through podman.

mod cache;
mod engine;
mod support;
mod unpack;
