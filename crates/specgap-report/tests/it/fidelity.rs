//! docs/fidelity.md names code locations as `crates/<path>.rs::item` (or `::Type::item`); each
//! must exist: the file, and in it a definition of the item's last name.

use std::path::Path;

/// Every `crates/….rs::…` location in backquotes.
fn locations(text: &str) -> Vec<String> {
    text.split('`').skip(1).step_by(2).filter(|s| s.starts_with("crates/") && s.contains(".rs::")).map(str::to_string).collect()
}

#[test]
fn every_code_location_in_fidelity_md_exists() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let text = std::fs::read_to_string(root.join("docs/fidelity.md")).expect("docs/fidelity.md");
    let found = locations(&text);
    assert!(found.len() >= 20, "too few locations: {found:?}");
    for location in found {
        let (path, item) = location.split_once(".rs::").unwrap();
        let file = root.join(format!("{path}.rs"));
        let source = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{location}: {e}"));
        let name = item.rsplit("::").next().unwrap();
        let defined = ["fn ", "struct ", "enum ", "type ", "const ", "trait "].iter().any(|kind| source.contains(&format!("{kind}{name}")));
        assert!(defined, "{location}: no definition of `{name}` in {}", file.display());
    }
}
