//! Joining shards of one run (`--shard i/n`) into one store (DESIGN §6; docs/decisions.md
//! "Merge: what must agree").
//!
//! Each run given holds some shards of its run: a shard store `i/n` holds shard `i`, a run
//! made without `--shard` holds shard 1 of 1, and a merged run holds the shards its
//! `run.toml` `[merge]` record does not list as missing. The merge refuses runs of different
//! configurations or plans, runs split into different shard counts, a shard given twice in
//! copies that differ (identical copies — a retried shard published again — are merged once),
//! and, unless a partial merge is allowed, a set missing a shard; it records the count and
//! the missing shards in the merged `run.toml`, so a later merge with the missing shards, the
//! report's missing-results warning and `specgap run --resume` all know what is there.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use rusqlite::types::{Value, ValueRef};
use specgap_protocol::run::MergeRecord;

use crate::config::{self, RUN_TOML, SHARDS};
use crate::error::{SqlContext, StoreError, shard_list};
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
    /// The shard count n of the runs merged (1 for whole runs).
    pub shards: u32,
    /// The shard numbers no run held (only with [`MergeOptions::allow_partial`]; recorded in
    /// the merged `run.toml`). Empty when the merge is complete.
    pub missing_shards: Vec<u32>,
    /// Runs left out as identical copies of a shard another run holds: (shard, the copy left
    /// out, the copy kept).
    pub identical_copies: Vec<(u32, PathBuf, PathBuf)>,
}

/// How [`merge_with`] treats an incomplete set.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MergeOptions {
    /// Merge even when some shards are missing, recording them (`specgap merge
    /// --allow-partial`); without it a missing shard is an error.
    pub allow_partial: bool,
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

/// Which shards one input holds.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Holding {
    /// The shard count n.
    count: u32,
    /// 1-based shard numbers held.
    shards: Vec<u32>,
    /// Whether the input is itself a merge (it may hold several shards, and only it knows
    /// which of its episodes are whose).
    merged: bool,
}

impl Holding {
    fn of(store: &Store) -> Holding {
        let config = store.config();
        match (&config.merge, config.shard) {
            (Some(record), _) => Holding { count: record.shards, shards: record.held(), merged: true },
            (None, Some([index, count])) => Holding { count, shards: vec![index], merged: false },
            (None, None) => Holding { count: 1, shards: vec![1], merged: false },
        }
    }
}

/// The run directories named by `paths`: each path that holds `run.toml` is a run; any other
/// directory stands for the runs directly inside it (entries holding `run.toml`, sorted by
/// name, hidden ones skipped — a `--publish` copy in progress is hidden), so `specgap merge
/// DIR` merges every shard published into DIR.
///
/// # Errors
/// [`StoreError::MergeNoRunsIn`] for a directory that is no run and holds none; I/O errors.
pub fn run_dirs<P: AsRef<Path>>(paths: &[P]) -> Result<Vec<PathBuf>, StoreError> {
    let mut out = Vec::new();
    for path in paths.iter().map(AsRef::as_ref) {
        if path.join(RUN_TOML).is_file() || !path.is_dir() {
            // Not a directory at all: opening it reports the real problem.
            out.push(path.to_path_buf());
            continue;
        }
        let mut inside: Vec<PathBuf> = Vec::new();
        for entry in fs_err::read_dir(path)? {
            let entry = entry?;
            let hidden = entry.file_name().to_string_lossy().starts_with('.');
            if !hidden && entry.path().join(RUN_TOML).is_file() {
                inside.push(entry.path());
            }
        }
        if inside.is_empty() {
            return Err(StoreError::MergeNoRunsIn { dir: path.to_path_buf() });
        }
        inside.sort();
        out.extend(inside);
    }
    Ok(out)
}

/// Refuses `runs` when two of them lead to one directory: the same path twice, or two paths
/// (a symbolic link, `..`) to one run. A path that cannot be resolved is left for opening it
/// to report.
fn refuse_a_run_twice<P: AsRef<Path>>(runs: &[P]) -> Result<(), StoreError> {
    let mut seen: Vec<(PathBuf, &Path)> = Vec::new();
    for run in runs.iter().map(AsRef::as_ref) {
        let Ok(dir) = fs_err::canonicalize(run) else { continue };
        if let Some((_, first)) = seen.iter().find(|(d, _)| *d == dir) {
            return Err(StoreError::MergeSameRunTwice { first: first.to_path_buf(), second: run.to_path_buf(), dir });
        }
        seen.push((dir, run));
    }
    Ok(())
}

/// [`merge_with`] without a partial merge: a missing shard is an error.
///
/// # Errors
/// As [`merge_with`].
pub fn merge<P: AsRef<Path>>(runs: &[P], out: &Path) -> Result<MergeSummary, StoreError> {
    merge_with(runs, out, MergeOptions::default())
}

/// Joins the run stores `runs` into a new store at `out`: one `run.toml` (the first run's,
/// without `shard`, with a `[merge]` record of the shard count and the missing shards),
/// every episode's rows, every not-applicable row, and every episode directory copied. An
/// episode found in several runs is kept once when its rows agree (volatile `_ts` / `_ms`
/// columns aside); a shard given twice is kept once when the copies agree (for two shard
/// stores: the same episodes with the same rows; for a merged run and a shard store: every
/// episode of the shard in the merged run with the same rows). Merging a merged run again,
/// alone or with shards it holds, gives the same store.
///
/// # Errors
/// [`StoreError::MergeNoRuns`]; [`StoreError::MergeOutputNotEmpty`];
/// [`StoreError::MergeSameRunTwice`] when two of `runs` are one directory;
/// [`StoreError::MergeMismatch`] when a run's configuration differs from the first run's in
/// anything but `shard` and task paths (the message names the field, task, agent or user);
/// [`StoreError::MergePlanMismatch`] for different plan hashes;
/// [`StoreError::MergeShardCounts`]; [`StoreError::MergeDuplicateShard`] naming the shard and
/// both copies; [`StoreError::MergeMissingShards`] unless `options.allow_partial`;
/// [`StoreError::MergeConflict`] naming an episode whose results differ between runs; file and
/// SQLite errors. A refused merge writes nothing.
pub fn merge_with<P: AsRef<Path>>(runs: &[P], out: &Path, options: MergeOptions) -> Result<MergeSummary, StoreError> {
    if runs.is_empty() {
        return Err(StoreError::MergeNoRuns);
    }
    if !files::is_missing_or_empty(out)? {
        return Err(StoreError::MergeOutputNotEmpty { dir: out.to_path_buf() });
    }
    refuse_a_run_twice(runs)?;
    let stores = runs.iter().map(|p| Store::open(p.as_ref())).collect::<Result<Vec<_>, _>>()?;
    let dirs: Vec<PathBuf> = runs.iter().map(|p| p.as_ref().to_path_buf()).collect();
    check_configs(&stores, &dirs)?;
    for (store, dir) in stores.iter().zip(&dirs) {
        if !read_table(store, "audit_samples")?.rows.is_empty() {
            return Err(StoreError::MergeAudited { dir: dir.clone() });
        }
    }
    check_plans(&stores, &dirs)?;
    let holdings: Vec<Holding> = stores.iter().map(Holding::of).collect();
    let count = check_counts(&holdings, &dirs)?;

    let mut columns: BTreeMap<&'static str, Vec<String>> = BTreeMap::new();
    let per_run = stores.iter().map(|s| read_episodes(s, &mut columns)).collect::<Result<Vec<_>, _>>()?;
    let copies = identical_copies(&holdings, &per_run, &dirs, &columns, count)?;
    let missing = missing_shards(&holdings, count);
    if !missing.is_empty() && !options.allow_partial {
        return Err(StoreError::MergeMissingShards { count, missing, given: holdings_text(&holdings, &dirs) });
    }
    let left_out: BTreeSet<usize> = copies.iter().map(|(_, dropped, _)| *dropped).collect();

    let mut episodes: BTreeMap<String, EpisodeRows> = BTreeMap::new();
    let mut not_applicable: BTreeMap<Vec<String>, Vec<Value>> = BTreeMap::new();
    let mut panels: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    let mut duplicates = 0;
    for (source, (store, tables_by_episode)) in stores.iter().zip(per_run).enumerate() {
        if left_out.contains(&source) {
            duplicates += tables_by_episode.len();
            continue;
        }
        for (episode, tables) in tables_by_episode {
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
            let key = row.iter().take(4).map(|v| render_value(ValueRef::from(v))).collect();
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
    merged_config.plan_hash = stores.iter().find_map(|s| s.config().plan_hash.clone());
    merged_config.merge = Some(MergeRecord { shards: count, missing: missing.clone() });
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
        shards: count,
        missing_shards: missing,
        identical_copies: copies.into_iter().map(|(shard, dropped, kept)| (shard, dirs[dropped].clone(), dirs[kept].clone())).collect(),
    })
}

/// Every run must equal the first in all but `shard`, task paths, `plan_hash` and `merge`.
fn check_configs(stores: &[Store], dirs: &[PathBuf]) -> Result<(), StoreError> {
    let first = stores[0].config();
    let first_label = dirs[0].display().to_string();
    for (store, dir) in stores.iter().zip(dirs).skip(1) {
        let label = dir.display().to_string();
        if let Some(difference) = config::config_difference(first, &first_label, store.config(), &label, SHARDS) {
            return Err(StoreError::MergeMismatch { first: dirs[0].clone(), other: dir.clone(), difference });
        }
    }
    Ok(())
}

/// Every run that records a plan hash must record the same one (stores written before the
/// field existed record none and are compared through their configuration only).
fn check_plans(stores: &[Store], dirs: &[PathBuf]) -> Result<(), StoreError> {
    let mut first: Option<(usize, &str)> = None;
    for (i, store) in stores.iter().enumerate() {
        let Some(hash) = store.config().plan_hash.as_deref() else { continue };
        match first {
            None => first = Some((i, hash)),
            Some((f, first_hash)) if first_hash != hash => {
                return Err(StoreError::MergePlanMismatch {
                    first: dirs[f].clone(),
                    first_hash: first_hash.to_string(),
                    other: dirs[i].clone(),
                    other_hash: hash.to_string(),
                });
            }
            Some(_) => {}
        }
    }
    Ok(())
}

/// The shared shard count of the runs.
fn check_counts(holdings: &[Holding], dirs: &[PathBuf]) -> Result<u32, StoreError> {
    let count = holdings[0].count;
    match holdings.iter().position(|h| h.count != count) {
        Some(i) => Err(StoreError::MergeShardCounts {
            first: dirs[0].clone(),
            first_count: count,
            other: dirs[i].clone(),
            other_count: holdings[i].count,
        }),
        None => Ok(count),
    }
}

/// Shards of `1..=count` no run holds.
fn missing_shards(holdings: &[Holding], count: u32) -> Vec<u32> {
    let held: BTreeSet<u32> = holdings.iter().flat_map(|h| h.shards.iter().copied()).collect();
    (1..=count).filter(|i| !held.contains(i)).collect()
}

/// What each run holds, in words: `shard 1 (runs/s1), shards 2, 4 (runs/m)`.
fn holdings_text(holdings: &[Holding], dirs: &[PathBuf]) -> String {
    let parts: Vec<String> = holdings
        .iter()
        .zip(dirs)
        .map(|(h, dir)| {
            if h.shards.is_empty() {
                format!("no shard ({})", dir.display())
            } else {
                format!("{} ({})", shard_list(&h.shards), dir.display())
            }
        })
        .collect();
    parts.join(", ")
}

/// For every shard held by more than one run: checks that the other copies agree with the
/// first (a merged run's copy preferred, as it may hold more) and returns the shard stores
/// that add nothing, as (shard, copy left out, copy kept) by input index. A merged run that
/// shares a shard with another merged run is not left out (it may hold other shards); the
/// episode-by-episode comparison of the merge checks what they share.
fn identical_copies(
    holdings: &[Holding],
    per_run: &[BTreeMap<String, TablesOfEpisode>],
    dirs: &[PathBuf],
    columns: &BTreeMap<&'static str, Vec<String>>,
    count: u32,
) -> Result<Vec<(u32, usize, usize)>, StoreError> {
    let mut left_out: Vec<(u32, usize, usize)> = Vec::new();
    for shard in 1..=count {
        let holders: Vec<usize> = (0..holdings.len()).filter(|&i| holdings[i].shards.contains(&shard)).collect();
        let Some(&kept) = holders.iter().find(|&&i| holdings[i].merged).or(holders.first()) else { continue };
        for &other in holders.iter().filter(|&&i| i != kept && !holdings[i].merged) {
            if left_out.iter().any(|(_, dropped, _)| *dropped == other) {
                continue;
            }
            let both_ways = !holdings[kept].merged;
            if let Some(difference) = copy_difference(&per_run[kept], &per_run[other], both_ways, columns, (&dirs[kept], &dirs[other])) {
                return Err(StoreError::MergeDuplicateShard {
                    shard,
                    count,
                    first: dirs[kept].clone(),
                    other: dirs[other].clone(),
                    difference,
                });
            }
            left_out.push((shard, other, kept));
        }
    }
    Ok(left_out)
}

/// How copy `other` of a shard differs from copy `kept`: an episode only in `other` (or, with
/// `both_ways`, only in `kept`), or an episode whose rows differ. `None` when they agree.
fn copy_difference(
    kept: &BTreeMap<String, TablesOfEpisode>,
    other: &BTreeMap<String, TablesOfEpisode>,
    both_ways: bool,
    columns: &BTreeMap<&'static str, Vec<String>>,
    (kept_dir, other_dir): (&Path, &Path),
) -> Option<String> {
    for (id, tables) in other {
        match kept.get(id) {
            None => return Some(format!("episode {id} is in {} only", other_dir.display())),
            Some(first) => {
                if let Some(table) = first_conflict(first, tables, columns) {
                    return Some(format!("episode {id} has different results (table {table})"));
                }
            }
        }
    }
    if both_ways && let Some(id) = kept.keys().find(|id| !other.contains_key(*id)) {
        return Some(format!("episode {id} is in {} only", kept_dir.display()));
    }
    None
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
        let at = rows.columns.iter().position(|c| c == episode_column).unwrap_or(0);
        for row in rows.rows {
            let id = render_value(ValueRef::from(&row[at]));
            by_episode.entry(id).or_default().entry(*table).or_default().push(row);
        }
        columns.insert(*table, rows.columns);
    }
    Ok(by_episode)
}

/// The first table whose non-volatile rows differ between two copies of an episode.
fn first_conflict(a: &TablesOfEpisode, b: &TablesOfEpisode, columns: &BTreeMap<&'static str, Vec<String>>) -> Option<&'static str> {
    let empty = Vec::new();
    TABLES.iter().filter(|(_, episode)| episode.is_some()).map(|(table, _)| *table).find(|table| {
        let names = columns.get(table).map(Vec::as_slice).unwrap_or(&[]);
        stable_rows(a.get(table).unwrap_or(&empty), names) != stable_rows(b.get(table).unwrap_or(&empty), names)
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
        let sql = format!("INSERT INTO {table} ({}) VALUES ({placeholders})", names.join(", "));
        let mut stmt = tx.prepare(&sql).at(&path)?;
        let rows: Box<dyn Iterator<Item = &Vec<Value>>> = if *table == "not_applicable" {
            Box::new(run_level.not_applicable.values())
        } else if *table == "panels" {
            Box::new(run_level.panels.values())
        } else {
            Box::new(episodes.values().filter_map(|e| e.tables.get(table)).flatten())
        };
        for row in rows {
            stmt.execute(rusqlite::params_from_iter(row.iter())).at(&path)?;
        }
    }
    tx.commit().at(&path)
}
