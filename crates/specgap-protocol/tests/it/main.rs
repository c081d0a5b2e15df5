//! Integration tests of specgap-protocol: property tests of the `result.json` parser and its
//! validation.
//!
//! Property tests run 256 cases each from a fixed seed, so CI sees the same cases every time;
//! `PROPTEST_CASES` and `PROPTEST_RNG_SEED` override both (e.g. to explore locally). A failure
//! prints its shrunk input; add it as a named regression test.

mod portable;
mod result_json;

/// The proptest configuration of this binary: 256 cases (`PROPTEST_CASES` overrides), a fixed
/// seed (`PROPTEST_RNG_SEED` overrides), no regression files written into the source tree.
pub fn proptest_config() -> proptest::test_runner::Config {
    use proptest::test_runner::{Config, RngSeed};
    let mut config = Config { failure_persistence: None, ..Config::default() };
    if std::env::var_os("PROPTEST_RNG_SEED").is_none() {
        config.rng_seed = RngSeed::Fixed(0x5eed_0010);
    }
    config
}
