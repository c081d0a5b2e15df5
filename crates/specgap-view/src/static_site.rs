//! `specgap view RUN... --static DIR`: the same pages as files, for publishing (a synthesis's
//! journal page too, [`crate::synthesis`]). The scripts
//! read `data/` instead of `/api/` (one file per API answer; episode lists whole, filtered in
//! the page; each episode's events in pages of [`EVENT_PAGE`](crate::api::EVENT_PAGE)).
//!
//! Without `include_private` ([`Access::PUBLIC`]) nothing private is written (see
//! [`crate::access`]); a directory that held an earlier site is emptied of its `data/` and
//! `assets/` first, so a public export over a private one leaves no private file behind.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Value, json};
use specgap_store::{EpisodeFilter, EpisodeOrder};

use crate::access::{Access, visible_event};
use crate::api::{self, EVENT_PAGE};
use crate::assets;
use crate::error::ViewError;
use crate::events::{fold, searchable_text};
use crate::runs::{RunSet, lock};

/// What a static site includes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StaticOptions {
    /// Write private evaluations, requirement and target text and diffs too.
    pub include_private: bool,
}

/// What [`write_static`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StaticSummary {
    /// The page to open.
    pub index: PathBuf,
    /// Episodes written, over all runs.
    pub episodes: usize,
    /// Files written.
    pub files: usize,
}

struct Writer {
    root: PathBuf,
    files: usize,
}

impl Writer {
    fn bytes(&mut self, relative: &str, bytes: &[u8]) -> Result<(), ViewError> {
        let path = self.root.join(relative);
        if let Some(parent) = path.parent() {
            fs_err::create_dir_all(parent).map_err(ViewError::Write)?;
        }
        fs_err::write(&path, bytes).map_err(ViewError::Write)?;
        self.files += 1;
        Ok(())
    }

    fn json(&mut self, relative: &str, value: &Value) -> Result<(), ViewError> {
        let bytes = serde_json::to_vec(value).map_err(|source| ViewError::Json { what: relative.to_string(), source })?;
        self.bytes(relative, &bytes)
    }
}

/// Writes the static site of `runs` into `out`.
///
/// # Errors
/// [`ViewError::OutputNotEmpty`] when `out` holds files that are not an earlier site; the
/// runs' errors; [`ViewError::Write`].
pub fn write_static(runs: &[PathBuf], out: &Path, options: StaticOptions) -> Result<StaticSummary, ViewError> {
    let set = Arc::new(RunSet::open(runs)?);
    prepare(out)?;
    let access = if options.include_private { Access::PRIVATE } else { Access::PUBLIC };
    let mut w = Writer { root: out.to_path_buf(), files: 0 };
    w.bytes("index.html", assets::index_html(true).as_bytes())?;
    for (name, _, body) in assets::FILES {
        w.bytes(&format!("assets/{name}"), body.as_bytes())?;
    }
    w.json("data/runs.json", &api::runs_json(&set, access)?)?;
    let mut episodes = 0;
    for (r, run) in set.runs.iter().enumerate() {
        let base = format!("data/run-{r}");
        w.json(&format!("{base}/version.json"), &json!({"data_version": 0, "live": false}))?;
        w.json(&format!("{base}/facets.json"), &api::facets_json(run)?)?;
        // The final counts: no runner writes to a store a site is made of, so no estimate.
        w.json(&format!("{base}/progress.json"), &crate::progress::progress_json(run, api::now_ms())?)?;
        w.json(&format!("{base}/summary.json"), &api::summary_json_now(&set, r, access)?)?;
        let mut matrices = serde_json::Map::new();
        matrices.insert(String::new(), api::matrix_json(run, &EpisodeFilter::default())?);
        for condition in &run.store.config().conditions {
            let filter = EpisodeFilter { condition: Some(condition.clone()), ..EpisodeFilter::default() };
            matrices.insert(condition.clone(), api::matrix_json(run, &filter)?);
        }
        w.json(&format!("{base}/matrix.json"), &Value::Object(matrices))?;
        let all = run.store.episode_page(&EpisodeFilter::default(), EpisodeOrder::Key, 0, u64::MAX)?;
        let rows: Vec<Value> = all.rows.iter().map(|r| api::episode_row_json(r, access)).collect();
        w.json(&format!("{base}/episodes.json"), &Value::Array(rows))?;
        for row in &all.rows {
            write_episode(&mut w, run, row, &format!("{base}/ep/{}", row.id), access)?;
            episodes += 1;
        }
    }
    write_comparisons(&mut w, &set, access)?;
    write_syntheses(&mut w, &set, access)?;
    Ok(StaticSummary { index: out.join("index.html"), episodes, files: w.files })
}

/// Every run against every other (`data/compare-{a}-{b}.json`, B − A, every episode): the
/// site cannot compute a comparison, so it holds them all; one the report refuses holds
/// `{"error": why}`.
fn write_comparisons(w: &mut Writer, set: &RunSet, access: Access) -> Result<(), ViewError> {
    for a in 0..set.len() {
        for b in (0..set.len()).filter(|b| *b != a) {
            let value = crate::compare_runs::compare_json(set, a, b, "", "", access).unwrap_or_else(|why| json!({"error": why}));
            w.json(&format!("data/compare-{a}-{b}.json"), &value)?;
        }
    }
    Ok(())
}

/// `data/syntheses.json`, each synthesis's page (`data/synthesis-{s}/journal.json`) and, with
/// private access only, each entry whole (`data/synthesis-{s}/entry-{seq}.json`).
fn write_syntheses(w: &mut Writer, set: &RunSet, access: Access) -> Result<(), ViewError> {
    w.json("data/syntheses.json", &crate::synthesis::syntheses_json(&set.syntheses, access)?)?;
    for (s, synthesis) in set.syntheses.iter().enumerate() {
        w.json(&format!("data/synthesis-{s}/journal.json"), &crate::synthesis::synthesis_json(synthesis, s, access)?)?;
        if !access.private {
            continue;
        }
        for entry in &synthesis.read()?.entries {
            w.json(&format!("data/synthesis-{s}/entry-{}.json", entry.seq), &crate::synthesis::entry_whole(synthesis, entry))?;
        }
    }
    Ok(())
}

/// Makes `out` ready: created when missing; an earlier site's `data/` and `assets/` removed.
fn prepare(out: &Path) -> Result<(), ViewError> {
    if out.exists() {
        let empty = fs_err::read_dir(out).map_err(ViewError::Write)?.next().is_none();
        if !empty {
            let index = fs_err::read_to_string(out.join("index.html")).unwrap_or_default();
            if !index.contains(assets::GENERATOR) {
                return Err(ViewError::OutputNotEmpty { dir: out.to_path_buf() });
            }
            for dir in ["data", "assets"] {
                if out.join(dir).exists() {
                    fs_err::remove_dir_all(out.join(dir)).map_err(ViewError::Write)?;
                }
            }
        }
    }
    fs_err::create_dir_all(out).map_err(ViewError::Write)
}

fn write_episode(
    w: &mut Writer,
    run: &crate::runs::RunEntry,
    row: &specgap_store::EpisodeRow,
    base: &str,
    access: Access,
) -> Result<(), ViewError> {
    w.json(&format!("{base}/detail.json"), &api::detail_json(run, row, access)?)?;
    let (events, index_len) = match run.index(&row.id)? {
        Some((path, index)) => {
            let index = lock(&index);
            (index.read(&path, 0..index.len())?, index.len())
        }
        None => (Vec::new(), 0),
    };
    let visible: Vec<Value> = events.into_iter().map(|e| visible_event(e, access)).collect();
    let pages = index_len.div_ceil(EVENT_PAGE).max(1);
    for page in 0..pages {
        let start = page * EVENT_PAGE;
        let slice = visible.get(start..(start + EVENT_PAGE).min(visible.len())).unwrap_or(&[]);
        let mut items = Vec::with_capacity(slice.len());
        for (i, event) in slice.iter().enumerate() {
            let (folded_event, folded) = fold(event.clone());
            if !folded.is_empty() {
                w.json(&format!("{base}/event-{}.json", start + i), event)?;
            }
            items.push(json!({"index": start + i, "event": folded_event, "folded": folded}));
        }
        w.json(&format!("{base}/events-{page}.json"), &json!({"total": index_len, "offset": start, "events": items, "live": false}))?;
    }
    let timeline: Vec<Value> = visible.iter().map(crate::events::timeline_entry).collect();
    w.json(&format!("{base}/timeline.json"), &json!({"events": timeline}))?;
    let search: Vec<Value> = visible.iter().enumerate().map(|(i, e)| json!([i, e.get("seq"), e.get("type"), searchable_text(e)])).collect();
    w.json(&format!("{base}/search.json"), &Value::Array(search))?;
    w.bytes(&format!("{base}/trajectory.jsonl"), &api::raw_trajectory(run, &row.id, access)?)?;
    let atif = specgap_atif::episode_trajectory(&run.store, &row.id, specgap_atif::ExportOptions { include_private: access.private })?;
    let atif = serde_json::to_value(&atif).map_err(|source| ViewError::Json { what: "the ATIF trajectory".into(), source })?;
    w.json(&format!("{base}/atif.json"), &atif)?;
    if access.private {
        for k in 0..=row.submissions {
            if let Some(diff) = api::private_file(run, &row.id, k, true) {
                w.bytes(&format!("{base}/diff-{k}.txt"), &diff)?;
            }
            if let Some(result) = api::private_file(run, &row.id, k, false) {
                w.bytes(&format!("{base}/result-{k}.json"), &result)?;
            }
        }
    }
    Ok(())
}
