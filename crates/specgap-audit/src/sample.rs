//! The seeded stratified draw and the label sheet (`specgap audit sample`).
//!
//! The population is every unit of the asked kind in the given runs ([`crate::unit`]). Units
//! are grouped into strata by the values of the `--by` fields (one stratum, `all`, without
//! `--by`); from each stratum, in stratum order, `n` units are drawn without replacement (all
//! of them when the stratum has fewer): the stratum's units sorted by id, shuffled with a
//! ChaCha8 stream seeded from the seed and the stratum's name, the first `n` kept. Each item
//! weighs its stratum's population over its stratum's sample size, so rates can be reweighted
//! to the population ([`crate::agreement`]). The sheet's rows come in one more seeded shuffle,
//! so a rater does not meet the strata in blocks.
//!
//! The sample's id is `sample:` and 12 hex digits of the SHA-256 of its manifest (unit,
//! rubric, runs, `--by`, `n`, seed, resample batch): the same request gives the same id, and
//! drawing it again changes nothing stored.
//!
//! Output, in `--out DIR`: `sheet.csv` (header `sample,item,page,<labels…>,note`, one row per
//! item, label cells empty) and `pages/<row>.html` ([`crate::page`]).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use rand::SeedableRng as _;
use rand::seq::SliceRandom as _;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};
use specgap_store::{AuditItemRecord, AuditSampleRecord, Store};

use crate::error::AuditError;
use crate::page::{PageInput, packages, render};
use crate::rubric::Rubric;
use crate::summary::Summarizer;
use crate::unit::{Subject, Unit, UnitKind, fields_of, population};

/// What a sample is drawn from and how (stored as the sample's manifest).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// The unit kind.
    pub unit: UnitKind,
    /// The rubric, whole (a rubric file may change later; its sheets are checked against this).
    pub rubric: Rubric,
    /// The run directories, as given; the first is the sample's home.
    pub runs: Vec<PathBuf>,
    /// The stratum fields.
    pub by: Vec<String>,
    /// Units drawn per stratum; `None`: every unit.
    pub n: Option<usize>,
    /// The seed of the draw, the row order and the report's bootstraps.
    pub seed: u64,
    /// For resample units: the `resamples.batch` drawn from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch: Option<String>,
}

/// A drawn sample (not yet written).
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// `sample:` + 12 hex digits.
    pub id: String,
    /// How it was drawn.
    pub manifest: Manifest,
    /// Its items, in sheet order, with their units.
    pub items: Vec<(AuditItemRecord, Unit)>,
    /// Population and sample size per stratum.
    pub strata: BTreeMap<String, (usize, usize)>,
}

/// The file name of the label sheet in the output directory.
pub const SHEET_FILE: &str = "sheet.csv";

impl Manifest {
    /// The sample id of this manifest (module guide).
    ///
    /// # Errors
    /// [`AuditError::Serialize`].
    pub fn id(&self) -> Result<String, AuditError> {
        let text =
            serde_json::to_string(self).map_err(|e| AuditError::Serialize { what: "the manifest".into(), message: e.to_string() })?;
        let digest = Sha256::digest(text.as_bytes());
        let mut id = String::from("sample:");
        for byte in &digest[..6] {
            let _ = write!(id, "{byte:02x}");
        }
        Ok(id)
    }
}

/// A `u64` seed for one stratum (or the row order) from the sample's seed.
fn derived_seed(seed: u64, name: &str) -> u64 {
    let mut hasher = Sha256::new();
    hasher.update(seed.to_le_bytes());
    hasher.update(name.as_bytes());
    let digest = hasher.finalize();
    let mut bytes = [0u8; 8];
    bytes.copy_from_slice(&digest[..8]);
    u64::from_le_bytes(bytes)
}

/// Draws the sample of `manifest` from `stores` (in the manifest's run order).
///
/// # Errors
/// [`AuditError::Request`] when the rubric does not apply to the unit, a `--by` field is
/// unknown, `n` is 0 or the population is empty; store errors.
pub fn draw(stores: &[Store], manifest: Manifest) -> Result<Sample, AuditError> {
    if !manifest.rubric.applies_to(manifest.unit) {
        return Err(AuditError::Request(format!(
            "rubric {} judges {}, not {}",
            manifest.rubric.name,
            manifest.rubric.units.iter().map(|u| u.name()).collect::<Vec<_>>().join(", "),
            manifest.unit.name()
        )));
    }
    let known = fields_of(manifest.unit);
    if let Some(bad) = manifest.by.iter().find(|f| !known.contains(&f.as_str())) {
        return Err(AuditError::Request(format!(
            "cannot stratify {} units by `{bad}`; the fields are {}",
            manifest.unit.name(),
            known.join(", ")
        )));
    }
    if manifest.n == Some(0) {
        return Err(AuditError::Request("--n must be at least 1".into()));
    }
    let mut strata: BTreeMap<String, Vec<Unit>> = BTreeMap::new();
    let mut seen = std::collections::BTreeSet::new();
    for (i, store) in stores.iter().enumerate() {
        let run = u32::try_from(i).unwrap_or(u32::MAX);
        for unit in population(store, run, manifest.unit, manifest.batch.as_deref())? {
            // A task shared by several runs is one unit (its first run's).
            if !seen.insert(unit.id.clone()) {
                continue;
            }
            strata.entry(stratum_of(&unit, &manifest.by)).or_default().push(unit);
        }
    }
    if strata.is_empty() {
        return Err(AuditError::Request(format!("the runs hold no {} unit to sample", manifest.unit.name())));
    }
    let mut drawn: Vec<(String, f64, Unit)> = Vec::new();
    let mut sizes = BTreeMap::new();
    for (name, mut units) in strata {
        let population = units.len();
        units.sort_by(|a, b| (a.run, &a.id).cmp(&(b.run, &b.id)));
        units.shuffle(&mut ChaCha8Rng::seed_from_u64(derived_seed(manifest.seed, &name)));
        let take = manifest.n.map_or(population, |n| n.min(population));
        let weight = population as f64 / take as f64;
        sizes.insert(name.clone(), (population, take));
        drawn.extend(units.into_iter().take(take).map(|u| (name.clone(), weight, u)));
    }
    drawn.shuffle(&mut ChaCha8Rng::seed_from_u64(derived_seed(manifest.seed, "\0rows")));
    let items = drawn
        .into_iter()
        .enumerate()
        .map(|(position, (stratum, weight, unit))| {
            let record = AuditItemRecord {
                item: unit.id.clone(),
                position: u32::try_from(position).unwrap_or(u32::MAX),
                run: unit.run,
                episode: unit.episode.clone(),
                stratum,
                cluster: unit.cluster.clone(),
                weight,
                judges: serde_json::Value::Object(unit.judges.clone()),
            };
            (record, unit)
        })
        .collect();
    Ok(Sample { id: manifest.id()?, manifest, items, strata: sizes })
}

/// The stratum name of a unit: its `by` values joined with ` / ` (`all` without fields).
fn stratum_of(unit: &Unit, by: &[String]) -> String {
    if by.is_empty() {
        return "all".into();
    }
    by.iter().map(|f| unit.fields.get(f).map_or("", String::as_str)).collect::<Vec<_>>().join(" / ")
}

/// The page file of row `position` (0-based), relative to the output directory.
pub fn page_path(position: u32) -> String {
    format!("pages/{:04}.html", position + 1)
}

/// Records `sample` in the home store (`stores[0]`) and writes its sheet and pages into `out`.
/// Returns the sheet's path.
///
/// # Errors
/// I/O errors naming the file; store errors.
pub fn write(stores: &[Store], sample: &Sample, out: &Path) -> Result<PathBuf, AuditError> {
    write_with(stores, sample, out, None)
}

/// [`write`], with a model summary of each episode unit's trajectory on its page when
/// `summarizer` is given (`crate::summary`; a failed summary is said on the page).
///
/// # Errors
/// As [`write`].
pub fn write_with(stores: &[Store], sample: &Sample, out: &Path, summarizer: Option<&Summarizer>) -> Result<PathBuf, AuditError> {
    let home = stores.first().ok_or_else(|| AuditError::Request("no run given".into()))?;
    let record = AuditSampleRecord {
        id: sample.id.clone(),
        unit: sample.manifest.unit.name().to_string(),
        rubric: sample.manifest.rubric.name.clone(),
        manifest: serde_json::to_value(&sample.manifest)
            .map_err(|e| AuditError::Serialize { what: "the manifest".into(), message: e.to_string() })?,
    };
    let items: Vec<AuditItemRecord> = sample.items.iter().map(|(r, _)| r.clone()).collect();
    home.record_audit_sample(&record, &items).map_err(AuditError::store(home.dir()))?;

    fs_err::create_dir_all(out.join("pages"))?;
    let rubric = &sample.manifest.rubric;
    let mut sheet = csv::Writer::from_writer(Vec::new());
    let csv_error = |e: csv::Error| AuditError::Serialize { what: "the label sheet".into(), message: e.to_string() };
    sheet.write_record(rubric.header()).map_err(csv_error)?;
    let mut package_cache: BTreeMap<u32, BTreeMap<String, Result<specgap_task::TaskPackage, String>>> = BTreeMap::new();
    for (record, unit) in &sample.items {
        let store = &stores[record.run as usize];
        let packages = package_cache.entry(record.run).or_insert_with(|| packages(store));
        let page = page_path(record.position);
        let Some(episode_id) = &unit.episode else {
            let html = crate::task_page::render(&crate::task_page::TaskPageInput {
                unit,
                number: record.position as usize + 1,
                sample: &sample.id,
                store,
                package: packages.get(&unit.cluster),
                rubric,
            });
            fs_err::write(out.join(&page), html)?;
            sheet.write_record(row_of(sample, record, rubric, page)).map_err(csv_error)?;
            continue;
        };
        let episode = store
            .episode(episode_id)
            .map_err(AuditError::store(store.dir()))?
            .ok_or_else(|| AuditError::Request(format!("episode {episode_id} vanished from {}", store.dir().display())))?;
        let summary = match (summarizer, &unit.subject) {
            (Some(s), Subject::Episode) => Some(summarize(s, store, &episode.id)?),
            _ => None,
        };
        let model = summarizer.map(|s| format!("chat:{}", s.config.model)).unwrap_or_default();
        let html = render(&PageInput {
            summary: summary.as_ref().map(|s| (model.as_str(), s)),
            unit,
            number: record.position as usize + 1,
            sample: &sample.id,
            store,
            episode: &episode,
            package: packages.get(&episode.task),
            rubric,
        });
        fs_err::write(out.join(&page), html)?;
        sheet.write_record(row_of(sample, record, rubric, page)).map_err(csv_error)?;
    }
    let bytes = sheet.into_inner().map_err(|e| AuditError::Serialize { what: "the label sheet".into(), message: e.to_string() })?;
    let path = out.join(SHEET_FILE);
    fs_err::write(&path, bytes)?;
    Ok(path)
}

/// The sheet row of one item: its sample, item id, page, empty labels and note.
fn row_of(sample: &Sample, record: &AuditItemRecord, rubric: &Rubric, page: String) -> Vec<String> {
    let mut row = vec![sample.id.clone(), record.item.clone(), page];
    row.extend(rubric.labels.iter().map(|_| String::new()));
    row.push(String::new());
    row
}

/// The summary of one episode, or why it failed (a failed request is shown on the page; a
/// store error is returned).
fn summarize(summarizer: &Summarizer, store: &Store, episode: &str) -> Result<Result<String, String>, AuditError> {
    let trajectory = specgap_store::read_trajectory(store.dir(), episode).map_err(AuditError::store(store.dir()))?;
    let events: Vec<&specgap_protocol::event::EventKind> = trajectory.events.iter().map(|e| &e.kind).collect();
    match summarizer.summarize(store, episode, &events) {
        Ok(text) => Ok(Ok(text)),
        Err(AuditError::Request(why)) => Ok(Err(why)),
        Err(other) => Err(other),
    }
}
