//! Price tables (`--prices FILE.toml`): US dollars per million tokens, per model.
//!
//! ```toml
//! [models."qwen3-32b"]
//! input_per_mtok = 0.5
//! output_per_mtok = 1.5
//! cached_input_per_mtok = 0.05   # optional; cached tokens cost the input price without it
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use specgap_protocol::event::Usage;

/// The price of one model, US dollars per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Price {
    /// Uncached prompt tokens.
    #[serde(deserialize_with = "input_dollars")]
    pub input_per_mtok: f64,
    /// Completion tokens (reasoning tokens included).
    #[serde(deserialize_with = "output_dollars")]
    pub output_per_mtok: f64,
    /// Cached prompt tokens; the input price when absent.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "optional_dollars")]
    pub cached_input_per_mtok: Option<f64>,
}

/// A price as read: a finite number of dollars, 0 or more. A NaN would reach the store as a
/// NULL cost and an infinite or negative one would break or offset `--max-cost` (issue 31
/// item 8), so both are refused where the file is read, with its key and line.
fn dollars<'de, D: serde::Deserializer<'de>>(deserializer: D, key: &str) -> Result<f64, D::Error> {
    let value = f64::deserialize(deserializer)?;
    if value.is_finite() && value >= 0.0 {
        Ok(value)
    } else {
        Err(serde::de::Error::custom(format!("`{key}` is a finite number of US dollars per million tokens, 0 or more, not {value}")))
    }
}

fn input_dollars<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<f64, D::Error> {
    dollars(deserializer, "input_per_mtok")
}

fn output_dollars<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<f64, D::Error> {
    dollars(deserializer, "output_per_mtok")
}

fn optional_dollars<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Option<f64>, D::Error> {
    dollars(deserializer, "cached_input_per_mtok").map(Some)
}

impl Price {
    /// Cost in US dollars of `usage`'s tokens: uncached input (`input − cached`) at the input
    /// price, cached input at the cached price, output at the output price.
    pub fn cost(&self, usage: &Usage) -> f64 {
        let cached = usage.cached_tokens.min(usage.input_tokens);
        let uncached = usage.input_tokens - cached;
        let cached_price = self.cached_input_per_mtok.unwrap_or(self.input_per_mtok);
        (uncached as f64 * self.input_per_mtok + cached as f64 * cached_price + usage.output_tokens as f64 * self.output_per_mtok)
            / 1_000_000.0
    }
}

/// A price table file: `[models."<name>"]` sections.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PriceTable {
    /// Prices by model name, as given after `chat:`.
    #[serde(default)]
    pub models: BTreeMap<String, Price>,
}

/// Why a price table cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum PriceError {
    /// The file cannot be read.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// The file is not a price table.
    #[error("{}: expected [models.\"<name>\"] tables with input_per_mtok and output_per_mtok", path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// The TOML error.
        #[source]
        source: toml::de::Error,
    },
}

impl PriceTable {
    /// Reads a price table file.
    ///
    /// # Errors
    /// [`PriceError`] naming the path.
    pub fn load(path: &Path) -> Result<Self, PriceError> {
        let text = fs_err::read_to_string(path)?;
        toml::from_str(&text).map_err(|source| PriceError::Parse { path: path.to_path_buf(), source })
    }

    /// The price of `model`, if listed.
    pub fn price(&self, model: &str) -> Option<Price> {
        self.models.get(model).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cost_splits_cached_input() {
        let table: PriceTable =
            toml::from_str("[models.\"m\"]\ninput_per_mtok = 0.5\noutput_per_mtok = 1.5\ncached_input_per_mtok = 0.05\n").unwrap();
        let price = table.price("m").unwrap();
        let usage = Usage { input_tokens: 1_000_000, cached_tokens: 400_000, output_tokens: 200_000, ..Usage::default() };
        // 600k × 0.5 + 400k × 0.05 + 200k × 1.5 = 0.30 + 0.02 + 0.30 dollars.
        assert!((price.cost(&usage) - 0.62).abs() < 1e-12);
        let plain = Price { input_per_mtok: 1.0, output_per_mtok: 2.0, cached_input_per_mtok: None };
        assert!((plain.cost(&usage) - 1.4).abs() < 1e-12);
        assert!(table.price("other").is_none());
    }

    #[test]
    fn a_price_that_is_not_a_finite_non_negative_number_is_refused_with_its_key() {
        for (value, shown) in [("nan", "NaN"), ("-0.5", "-0.5"), ("inf", "inf")] {
            let text = format!("[models.\"m\"]\ninput_per_mtok = 0.5\noutput_per_mtok = {value}\n");
            let error = toml::from_str::<PriceTable>(&text).unwrap_err().to_string();
            assert!(error.contains("output_per_mtok"), "{error}");
            assert!(error.contains(&format!("0 or more, not {shown}")), "{error}");
        }
        let cached = toml::from_str::<PriceTable>("[models.\"m\"]\ninput_per_mtok = 1\noutput_per_mtok = 1\ncached_input_per_mtok = -1\n");
        assert!(cached.unwrap_err().to_string().contains("not -1"));
        let zero: PriceTable = toml::from_str("[models.\"m\"]\ninput_per_mtok = 0\noutput_per_mtok = 0\n").unwrap();
        assert_eq!(zero.price("m").unwrap().output_per_mtok, 0.0);
    }
}
