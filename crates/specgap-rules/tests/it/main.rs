//! Integration tests of specgap-rules: the papers' protocols, selection, custom files.

mod builtin;
mod custom;
mod select;
