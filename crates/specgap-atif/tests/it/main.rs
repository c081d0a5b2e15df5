//! Integration tests of the ATIF export: one binary, one module per concern.

mod export;
pub mod harbor;
