//! Reading the reference fixture and comparing floats.

use serde_json::Value;
use std::sync::OnceLock;

/// The parsed fixture, embedded at compile time so the tests need no working directory.
pub fn reference() -> &'static Value {
    static REFERENCE: OnceLock<Value> = OnceLock::new();
    REFERENCE.get_or_init(|| serde_json::from_str(include_str!("../fixtures/reference.json")).expect("reference.json parses"))
}

/// The cases of one section, e.g. `"wilcoxon"`.
pub fn cases(section: &str) -> &'static [Value] {
    reference()[section].as_array().unwrap_or_else(|| panic!("section {section} is a list"))
}

/// A fixture number: JSON numbers, or the strings "nan", "inf", "-inf".
pub fn num(value: &Value) -> f64 {
    match value {
        Value::Number(n) => n.as_f64().expect("finite JSON number"),
        Value::String(s) if s == "nan" => f64::NAN,
        Value::String(s) if s == "inf" => f64::INFINITY,
        Value::String(s) if s == "-inf" => f64::NEG_INFINITY,
        other => panic!("not a fixture number: {other}"),
    }
}

/// An array argument, following `{"input": NAME}` references into the `inputs` section.
pub fn floats(value: &Value) -> Vec<f64> {
    let array = match value.get("input") {
        Some(name) => &reference()["inputs"][name.as_str().expect("input name")],
        None => value,
    };
    array.as_array().unwrap_or_else(|| panic!("not an array: {value}")).iter().map(num).collect()
}

/// The `origin.arguments` object of a case.
pub fn arguments(case: &Value) -> &Value {
    &case["origin"]["arguments"]
}

/// Asserts `actual` equals `expected` within a relative tolerance (absolute when `expected` is
/// 0). NaN matches only NaN; infinities only themselves.
pub fn assert_close(actual: f64, expected: f64, relative: f64, context: &str) {
    let ok = if expected.is_nan() {
        actual.is_nan()
    } else if expected.is_infinite() || expected == 0.0 {
        actual == expected || (expected == 0.0 && actual.abs() <= relative)
    } else {
        (actual - expected).abs() <= relative * expected.abs()
    };
    assert!(ok, "{context}: got {actual:e}, expected {expected:e} (relative tolerance {relative:e})");
}
