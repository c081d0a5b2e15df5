//! Integration tests of specgap-task: the loader, discovery and `check` against the fixtures
//! under `tests/fixtures/` and broken copies of them made in temporary directories.

mod check;
mod check_logic;
mod discover;
mod eval;
mod examples;
mod load;
mod matching;
mod support;
