//! Integration tests of specgap-harbor: import (mapping, refusals, gold), the evaluator and
//! its trust model (forged rewards), export and the round trip.

mod export;
mod harbor;
mod image_gold;
mod image_starter;
mod image_verifier;
mod import;
mod min_reward;
mod support;
mod trust;
