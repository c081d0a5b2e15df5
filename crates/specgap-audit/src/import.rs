//! Reading a rater's filled label sheet (`specgap audit import RUN SHEET.csv --rater NAME`).
//!
//! The sheet must be the one `sample` wrote, filled in: the same header (`sample`, `item`,
//! `page`, the rubric's label columns, `note`), every row naming the same stored sample, every
//! item of the sample exactly once, every label cell one of its column's values (trimmed,
//! case-insensitive; stored in the rubric's spelling). The `note` is free text, stored when not
//! empty, and is no label: [`Imported`] counts labels and notes apart. Any problem is an error
//! naming the file and the row as a spreadsheet numbers it (the header is row 1; a cell holding
//! a line break does not start a new row, an empty line is a row), and nothing is stored. A
//! rater's sheet for a sample is stored once; a corrected sheet replaces it with
//! [`ImportMode::Replace`] (`--replace`), and another rater's sheet needs another name.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use sha2::{Digest as _, Sha256};
use specgap_store::{AuditLabelRecord, AuditSheetRecord, Store};

use crate::error::AuditError;
use crate::sample::Manifest;

/// What an import stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Imported {
    /// The sample.
    pub sample: String,
    /// The rater.
    pub rater: String,
    /// Item rows read.
    pub rows: usize,
    /// Labels stored (one per item and label column; notes not counted).
    pub labels: usize,
    /// Notes stored (items whose `note` is not empty).
    pub notes: usize,
    /// Whether the rater's earlier sheet for the sample was replaced.
    pub replaced: bool,
}

/// Whether an import may replace the rater's earlier sheet for the sample.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ImportMode {
    /// A rater's second sheet for a sample is refused.
    #[default]
    New,
    /// The sheet replaces the rater's earlier labels and notes of the sample (a corrected sheet).
    Replace,
}

/// The spreadsheet row of each byte offset of a CSV file: rows start after every line break
/// outside a quoted cell. Holds the byte offset where each row starts (row 1 at 0).
struct SheetRows(Vec<u64>);

impl SheetRows {
    fn of(bytes: &[u8]) -> SheetRows {
        let mut starts = vec![0u64];
        let mut quoted = false;
        for (i, b) in bytes.iter().enumerate() {
            match b {
                b'"' => quoted = !quoted,
                b'\n' if !quoted => starts.push(i as u64 + 1),
                _ => {}
            }
        }
        SheetRows(starts)
    }

    /// The 1-based row holding byte `offset`.
    fn row(&self, offset: u64) -> u64 {
        self.0.partition_point(|start| *start <= offset) as u64
    }
}

/// The stored manifest of sample `id`.
///
/// # Errors
/// [`AuditError::Request`] for a sample not in the store; store and JSON errors.
pub fn manifest_of(store: &Store, id: &str) -> Result<Manifest, AuditError> {
    let sample = store
        .audit_samples()
        .map_err(AuditError::store(store.dir()))?
        .into_iter()
        .find(|s| s.id == id)
        .ok_or_else(|| AuditError::Request(format!("run {} holds no audit sample {id}", store.dir().display())))?;
    serde_json::from_value(sample.manifest)
        .map_err(|e| AuditError::Serialize { what: format!("the manifest of {id}"), message: e.to_string() })
}

/// Checks and stores `sheet` as rater `rater`'s labels (module guide); a rater's second sheet
/// for a sample is refused.
///
/// # Errors
/// [`AuditError::Sheet`] naming the row for every problem of the sheet; store errors,
/// [`specgap_store::StoreError::DuplicateRater`] among them.
pub fn import(store: &Store, sheet: &Path, rater: &str) -> Result<Imported, AuditError> {
    import_sheet(store, sheet, rater, ImportMode::New)
}

/// [`import`], with `mode` saying whether the sheet may replace the rater's earlier one.
///
/// # Errors
/// As [`import`]; with [`ImportMode::Replace`] no duplicate-rater error.
pub fn import_sheet(store: &Store, sheet: &Path, rater: &str, mode: ImportMode) -> Result<Imported, AuditError> {
    let rater = rater.trim();
    let fail = |row: Option<u64>, message: String| AuditError::Sheet { path: sheet.to_path_buf(), row, message };
    if rater.is_empty() || rater.contains(['\n', '\r']) {
        return Err(AuditError::Request("--rater must be a non-empty name on one line".into()));
    }
    let bytes = fs_err::read(sheet)?;
    let rows = SheetRows::of(&bytes);
    let row_of = |position: Option<&csv::Position>| position.map(|p| rows.row(p.byte()));
    let mut reader = csv::ReaderBuilder::new().has_headers(true).flexible(false).from_reader(bytes.as_slice());
    let header: Vec<String> = reader.headers().map_err(|e| fail(Some(1), e.to_string()))?.iter().map(|h| h.trim().to_string()).collect();
    let records: Vec<(u64, csv::StringRecord)> = reader
        .records()
        .map(|r| r.map(|r| (row_of(r.position()).unwrap_or(0), r)).map_err(|e| fail(row_of(e.position()), e.to_string())))
        .collect::<Result<_, _>>()?;
    let (first_line, first) = records.first().ok_or_else(|| fail(None, "the sheet has no item rows".into()))?;
    let sample_id = first.get(0).unwrap_or("").trim().to_string();
    let manifest = manifest_of(store, &sample_id).map_err(|e| fail(Some(*first_line), e.to_string()))?;
    let rubric = &manifest.rubric;
    if header != rubric.header() {
        return Err(fail(Some(1), format!("the header must be `{}` (rubric {})", rubric.header().join(","), rubric.name)));
    }
    let items = store.audit_items(&sample_id).map_err(AuditError::store(store.dir()))?;
    let known: BTreeSet<&str> = items.iter().map(|i| i.item.as_str()).collect();
    let mut seen: BTreeMap<String, u64> = BTreeMap::new();
    let mut labels = Vec::new();
    let mut notes = 0;
    for (line, record) in &records {
        let row = Some(*line);
        let cell = |i: usize| record.get(i).unwrap_or("").trim();
        if cell(0) != sample_id {
            return Err(fail(row, format!("names sample `{}`, but the sheet's first row names {sample_id}", cell(0))));
        }
        let item = cell(1).to_string();
        if !known.contains(item.as_str()) {
            return Err(fail(row, format!("item `{item}` is not in sample {sample_id}")));
        }
        if let Some(earlier) = seen.insert(item.clone(), *line) {
            return Err(fail(row, format!("item `{item}` appears again (first on row {earlier})")));
        }
        for (c, column) in rubric.labels.iter().enumerate() {
            let text = cell(3 + c);
            if text.is_empty() {
                return Err(fail(row, format!("label `{}` is empty; give one of {}", column.name, column.names().join(", "))));
            }
            let value = column.value(text).ok_or_else(|| {
                fail(row, format!("`{text}` is not a value of label `{}`; give one of {}", column.name, column.names().join(", ")))
            })?;
            labels.push(AuditLabelRecord {
                item: item.clone(),
                rater: rater.to_string(),
                label: column.name.clone(),
                value: value.to_string(),
            });
        }
        let note = cell(3 + rubric.labels.len());
        if !note.is_empty() {
            labels.push(AuditLabelRecord { item: item.clone(), rater: rater.to_string(), label: "note".into(), value: note.to_string() });
            notes += 1;
        }
    }
    if let Some(missing) = items.iter().find(|i| !seen.contains_key(&i.item)) {
        return Err(fail(
            None,
            format!(
                "item `{}` (row {} of the sheet as drawn) is missing; every item of the sample needs a row",
                missing.item,
                missing.position + 2
            ),
        ));
    }
    let sha256 = Sha256::digest(&bytes).iter().fold(String::new(), |mut s, b| {
        use std::fmt::Write as _;
        let _ = write!(s, "{b:02x}");
        s
    });
    let record = AuditSheetRecord {
        rater: rater.to_string(),
        path: sheet.display().to_string(),
        sha256,
        rows: u32::try_from(records.len()).unwrap_or(u32::MAX),
    };
    let replaced = match mode {
        ImportMode::New => store.record_audit_labels(&sample_id, &record, &labels).map(|()| false),
        ImportMode::Replace => store.replace_audit_labels(&sample_id, &record, &labels),
    }
    .map_err(AuditError::store(store.dir()))?;
    Ok(Imported { sample: sample_id, rater: rater.to_string(), rows: records.len(), labels: labels.len() - notes, notes, replaced })
}
