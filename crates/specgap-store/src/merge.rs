//! Joining shards of one run (`--shard i/n`) into one store (DESIGN §6).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use rusqlite::types::{Value, ValueRef};

use crate::config::{self, SHARDS};
use crate::error::{SqlContext, StoreError};
use crate::files;
use crate::schema::{self, TABLES};
use crate::store::{Store, render_value};

/// What [`merge`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MergeSummary {
    /// Run directories read.
    pub runs: usize,
    /// Episodes in the merged store.
    pub episodes: usize,
    /// Episodes found in more than one run with identical results (kept once).
    pub duplicates: usize,
    /// Not-applicable rows in the merged store.
    pub not_applicable: usize,
    /// When every input is a shard `i/n` of the same n: the shard numbers not given, so a
    /// partial merge is visible. Empty otherwise.
    pub missing_shards: Vec<u32>,
}

/// One episode's rows, keyed by table.
type TablesOfEpisode = BTreeMap<&'static str, Vec<Vec<Value>>>;

/// Rows of one table: column names and values.
#[derive(Debug, Clone, Default)]
struct TableRows {
    columns: Vec<String>,
    rows: Vec<Vec<Value>>,
}

/// One episode's rows, table by table, and the run they came from.
#[derive(Debug)]
struct EpisodeRows {
    source: usize,
    tables: TablesOfEpisode,
}

/// Joins the run stores `runs` into a new store at `out`: one `run.toml` (the first run's,
/// without `shard`), every episode's rows, every not-applicable row, and every episode
/// directory copied. An episode found in several runs is kept once when its rows agree
/// (volatile `_ts` / `_ms` columns aside).
///
/// # Errors
/// [`StoreError::MergeNoRuns`]; [`StoreError::MergeOutputNotEmpty`];
/// [`StoreError::MergeMismatch`] when a run's configuration differs from the first run's in
/// anything but `shard` and task paths (the message names the field, task, agent or user);
/// [`StoreError::MergeConflict`] naming an episode whose results differ between runs; file and
/// SQLite errors.
pub fn merge<P: AsRef<Path>>(runs: &[P], out: &Path) -> Result<MergeSummary, StoreError> {
    if runs.is_empty() {
        return Err(StoreError::MergeNoRuns);
    }
    if !files::is_missing_or_empty(out)? {
        return Err(StoreError::MergeOutputNotEmpty {
            dir: out.to_path_buf(),
        });
    }
    let stores = runs
        .iter()
        .map(|p| Store::open(p.as_ref()))
        .collect::<Result<Vec<_>, _>>()?;
    let dirs: Vec<PathBuf> = runs.iter().map(|p| p.as_ref().to_path_buf()).collect();
    check_configs(&stores, &dirs)?;
    for (store, dir) in stores.iter().zip(&dirs) {
        if !read_table(store, "audit_samples")?.rows.is_empty() {
            return Err(StoreError::MergeAudited { dir: dir.clone() });
        }
    }

    let mut episodes: BTreeMap<String, EpisodeRows> = BTreeMap::new();
    let mut columns: BTreeMap<&'static str, Vec<String>> = BTreeMap::new();
    let mut not_applicable: BTreeMap<Vec<String>, Vec<Value>> = BTreeMap::new();
    let mut panels: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    let mut duplicates = 0;
    for (source, store) in stores.iter().enumerate() {
        for (episode, tables) in read_episodes(store, &mut columns)? {
            match episodes.get(&episode) {
                None => {
                    episodes.insert(episode, EpisodeRows { source, tables });
                }
                Some(existing) => {
                    if let Some(table) = first_conflict(&existing.tables, &tables, &columns) {
                        return Err(StoreError::MergeConflict {
                            id: episode,
                            first: dirs[existing.source].clone(),
                            other: dirs[source].clone(),
                            table,
                        });
                    }
                    duplicates += 1;
                }
            }
        }
        let na = read_table(store, "not_applicable")?;
        columns.insert("not_applicable", na.columns.clone());
        for row in na.rows {
            // Keyed by (task, agent, condition, start); the first run's reason wins.
            let key = row
                .iter()
                .take(4)
                .map(|v| render_value(ValueRef::from(v)))
                .collect();
            not_applicable.entry(key).or_insert(row);
        }
        let named = read_table(store, "panels")?;
        columns.insert("panels", named.columns.clone());
        for row in named.rows {
            // Keyed by name, which is a hash of the whole configuration: equal names hold
            // equal rows, so the first run's is kept.
            let key = render_value(ValueRef::from(&row[0]));
            panels.entry(key).or_insert(row);
        }
    }

    let mut merged_config = stores[0].config().clone();
    merged_config.shard = None;
    let target = Store::create(out, &merged_config)?;
    write_rows(&target, &episodes, &columns, &RunLevel { not_applicable: &not_applicable, panels: &panels })?;
    for (id, rows) in &episodes {
        let src = stores[rows.source].episode_dir(id);
        if src.is_dir() {
            files::copy_dir(&src, &target.episode_dir(id))?;
        }
    }
    Ok(MergeSummary {
        runs: stores.len(),
        episodes: episodes.len(),
        duplicates,
        not_applicable: not_applicable.len(),
        missing_shards: missing_shards(&stores),
    })
}

/// Every run must equal the first in all but `shard` and task paths.
fn check_configs(stores: &[Store], dirs: &[PathBuf]) -> Result<(), StoreError> {
    let first = stores[0].config();
    let first_label = dirs[0].display().to_string();
    for (store, dir) in stores.iter().zip(dirs).skip(1) {
        let label = dir.display().to_string();
        if let Some(difference) =
            config::config_difference(first, &first_label, store.config(), &label, SHARDS)
        {
            return Err(StoreError::MergeMismatch {
                first: dirs[0].clone(),
                other: dir.clone(),
                difference,
            });
        }
    }
    Ok(())
}

/// Reads a whole table.
fn read_table(store: &Store, table: &str) -> Result<TableRows, StoreError> {
    let path = store.db_path();
    let conn = store.conn();
    let mut stmt = conn.prepare(&format!("SELECT * FROM {table}")).at(path)?;
    let columns: Vec<String> = stmt.column_names().iter().map(|c| c.to_string()).collect();
    let mut rows = stmt.query([]).at(path)?;
    let mut out = Vec::new();
    while let Some(row) = rows.next().at(path)? {
        let mut values = Vec::with_capacity(columns.len());
        for i in 0..columns.len() {
            values.push(row.get::<_, Value>(i).at(path)?);
        }
        out.push(values);
    }
    Ok(TableRows { columns, rows: out })
}

/// Every episode-level table of a store, grouped by episode id.
fn read_episodes(
    store: &Store,
    columns: &mut BTreeMap<&'static str, Vec<String>>,
) -> Result<BTreeMap<String, TablesOfEpisode>, StoreError> {
    let mut by_episode: BTreeMap<String, TablesOfEpisode> = BTreeMap::new();
    for (table, episode_column) in TABLES {
        let Some(episode_column) = episode_column else {
            continue;
        };
        let rows = read_table(store, table)?;
        let at = rows
            .columns
            .iter()
            .position(|c| c == episode_column)
            .unwrap_or(0);
        for row in rows.rows {
            let id = render_value(ValueRef::from(&row[at]));
            by_episode
                .entry(id)
                .or_default()
                .entry(*table)
                .or_default()
                .push(row);
        }
        columns.insert(*table, rows.columns);
    }
    Ok(by_episode)
}

/// The first table whose non-volatile rows differ between two copies of an episode.
fn first_conflict(
    a: &TablesOfEpisode,
    b: &TablesOfEpisode,
    columns: &BTreeMap<&'static str, Vec<String>>,
) -> Option<&'static str> {
    let empty = Vec::new();
    TABLES
        .iter()
        .filter(|(_, episode)| episode.is_some())
        .map(|(table, _)| *table)
        .find(|table| {
            let names = columns.get(table).map(Vec::as_slice).unwrap_or(&[]);
            stable_rows(a.get(table).unwrap_or(&empty), names)
                != stable_rows(b.get(table).unwrap_or(&empty), names)
        })
}

/// Rows rendered without volatile columns, sorted.
fn stable_rows(rows: &[Vec<Value>], names: &[String]) -> Vec<Vec<String>> {
    let mut out: Vec<Vec<String>> = rows
        .iter()
        .map(|row| {
            row.iter()
                .zip(names)
                .filter(|(_, name)| !schema::is_volatile_column(name))
                .map(|(value, _)| render_value(ValueRef::from(value)))
                .collect()
        })
        .collect();
    out.sort();
    out
}

/// The kept rows of the run-level tables (no episode column).
struct RunLevel<'a> {
    not_applicable: &'a BTreeMap<Vec<String>, Vec<Value>>,
    panels: &'a BTreeMap<String, Vec<Value>>,
}

/// Inserts every kept row into the merged store in one transaction, parents first.
fn write_rows(
    target: &Store,
    episodes: &BTreeMap<String, EpisodeRows>,
    columns: &BTreeMap<&'static str, Vec<String>>,
    run_level: &RunLevel<'_>,
) -> Result<(), StoreError> {
    let path = target.db_path().to_path_buf();
    let mut conn = target.conn();
    let tx = conn.transaction().at(&path)?;
    for (table, _) in TABLES {
        let Some(names) = columns.get(table) else {
            continue;
        };
        let placeholders = vec!["?"; names.len()].join(", ");
        let sql = format!(
            "INSERT INTO {table} ({}) VALUES ({placeholders})",
            names.join(", ")
        );
        let mut stmt = tx.prepare(&sql).at(&path)?;
        let rows: Box<dyn Iterator<Item = &Vec<Value>>> = if *table == "not_applicable" {
            Box::new(run_level.not_applicable.values())
        } else if *table == "panels" {
            Box::new(run_level.panels.values())
        } else {
            Box::new(
                episodes
                    .values()
                    .filter_map(|e| e.tables.get(table))
                    .flatten(),
            )
        };
        for row in rows {
            stmt.execute(rusqlite::params_from_iter(row.iter()))
                .at(&path)?;
        }
    }
    tx.commit().at(&path)
}

fn missing_shards(stores: &[Store]) -> Vec<u32> {
    let shards: Vec<Option<[u32; 2]>> = stores.iter().map(|s| s.config().shard).collect();
    let Some(Some([_, n])) = shards.first().copied() else {
        return Vec::new();
    };
    if shards.iter().any(|s| s.is_none_or(|[_, m]| m != n)) {
        return Vec::new();
    }
    let present: BTreeSet<u32> = shards.iter().flatten().map(|[i, _]| *i).collect();
    (1..=n).filter(|i| !present.contains(i)).collect()
}
