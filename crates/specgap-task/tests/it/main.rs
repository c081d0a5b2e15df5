//! Integration tests of specgap-task: the loader, discovery and `check` against the fixtures
//! under `tests/fixtures/` and broken copies of them made in temporary directories.

mod check;
mod check_logic;
mod discover;
mod eval;
mod examples;
mod format2;
mod format2_env;
mod image_env;
mod load;
mod load_props;
mod matching;
mod stages;
mod support;

/// The proptest configuration of this binary: 256 cases (`PROPTEST_CASES` overrides), a fixed
/// seed (`PROPTEST_RNG_SEED` overrides) so CI sees the same cases every time, no regression
/// files written into the source tree (a failure prints its shrunk input: add it as a named
/// regression test).
pub fn proptest_config() -> proptest::test_runner::Config {
    use proptest::test_runner::{Config, RngSeed};
    let mut config = Config { failure_persistence: None, ..Config::default() };
    if std::env::var_os("PROPTEST_RNG_SEED").is_none() {
        config.rng_seed = RngSeed::Fixed(0x5eed_0008);
    }
    config
}
