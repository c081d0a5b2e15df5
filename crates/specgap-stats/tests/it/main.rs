//! Integration tests of specgap-stats against reference values from pinned scipy,
//! scikit-learn, statsmodels and numpy (`tests/fixtures/reference.json`, written by
//! `scripts/stats-reference/generate.py`), plus hand-computed cases where no reference
//! implementation exists (pass^k).

mod bootstrap;
mod describe;
mod fixture;
mod holm;
mod kappa;
mod pass_k;
mod power;
mod spearman;
mod wilcoxon;
