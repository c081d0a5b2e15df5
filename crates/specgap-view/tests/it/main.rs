//! Integration tests of the viewer: one binary, one module per concern.

mod fixture;
mod http;
mod progress;
mod server;
mod static_site;
