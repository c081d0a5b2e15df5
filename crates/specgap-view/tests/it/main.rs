//! Integration tests of the viewer: one binary, one module per concern.

mod fixture;
mod http;
mod progress;
mod runs_compare;
mod server;
mod static_site;
mod synthesis;
