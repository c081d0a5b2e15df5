//! # specgap-atif
//!
//! Exports the episodes of a run store as ATIF trajectories — Harbor's Agent Trajectory
//! Interchange Format ([`schema::ATIF_VERSION`]), so Harbor's viewer and the other tools
//! that read ATIF read specgap runs.
//!
//! - [`schema`]: the document's serde types, shaped as Harbor's pydantic models
//!   (`harbor.models.trajectories`, harbor 0.25.0), which the tests validate every export
//!   against.
//! - [`convert`]: one episode → one [`schema::Trajectory`] (the mapping table is there);
//!   private evaluations are left out unless asked for.
//! - [`export_run`]: every episode of a store → `OUT/<episode id>/agent/trajectory.json`
//!   (the path Harbor's trial directories give an agent's trajectory) and `OUT/index.json`
//!   listing the episodes with their keys.
//!
//! The store is read through [`specgap_store::Store::open_read_only`] and its raw trajectory
//! reader, so an export never writes to the run and passes on event kinds this build does
//! not know (as named `system` steps).
#![deny(missing_docs)]

pub mod convert;
pub mod schema;
mod time;

use std::path::{Path, PathBuf};

use serde_json::json;
use specgap_store::{Store, StoreError};

pub use convert::{ExportOptions, trajectory};
pub use schema::{ATIF_VERSION, Trajectory};

/// What can go wrong in an export.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// Reading the store failed.
    #[error("cannot read the run store")]
    Store(#[from] StoreError),
    /// The episode id is not in the store.
    #[error("episode {id} is not in the store")]
    NoSuchEpisode {
        /// The id asked for.
        id: String,
    },
    /// Writing an output file failed (the `fs_err` error names the path).
    #[error("cannot write the export")]
    Write(#[source] std::io::Error),
    /// A trajectory could not be serialized.
    #[error("cannot serialize the trajectory of episode {id}")]
    Serialize {
        /// The episode.
        id: String,
        /// serde_json's error.
        #[source]
        source: serde_json::Error,
    },
}

/// The ATIF trajectory of episode `id` of `store`.
///
/// # Errors
/// [`ExportError::NoSuchEpisode`]; [`ExportError::Store`] when its rows or trajectory cannot
/// be read. An episode without a trajectory file (not begun) exports one placeholder step.
pub fn episode_trajectory(store: &Store, id: &str, options: ExportOptions) -> Result<Trajectory, ExportError> {
    let detail = store.episode_detail(id)?.ok_or_else(|| ExportError::NoSuchEpisode { id: id.to_string() })?;
    let path = specgap_store::trajectory_path(store.dir(), id);
    let (events, tail) = if path.is_file() { specgap_store::read_trajectory_values(&path)? } else { (Vec::new(), None) };
    let finished = detail.episode.status != specgap_store::Status::Running;
    Ok(trajectory(store.config(), &detail, &events, tail.is_some() && finished, options))
}

/// What [`export_run`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportSummary {
    /// Trajectory files written.
    pub trajectories: usize,
    /// The index file.
    pub index: PathBuf,
}

/// Writes every episode of the run in `run_dir` (not-applicable combinations have no
/// episode) to `out`: `out/<id>/agent/trajectory.json` and `out/index.json`.
///
/// # Errors
/// As [`episode_trajectory`]; [`ExportError::Write`].
pub fn export_run(run_dir: &Path, out: &Path, options: ExportOptions) -> Result<ExportSummary, ExportError> {
    let store = Store::open_read_only(run_dir)?;
    let episodes = store.episodes()?;
    let mut index = Vec::with_capacity(episodes.len());
    for episode in &episodes {
        let trajectory = episode_trajectory(&store, &episode.id, options)?;
        let text = serde_json::to_string_pretty(&trajectory).map_err(|source| ExportError::Serialize { id: episode.id.clone(), source })?;
        let dir = out.join(&episode.id).join("agent");
        fs_err::create_dir_all(&dir).map_err(ExportError::Write)?;
        fs_err::write(dir.join("trajectory.json"), text).map_err(ExportError::Write)?;
        index.push(json!({
            "episode": episode.id,
            "trajectory": format!("{}/agent/trajectory.json", episode.id),
            "task": episode.task,
            "agent": episode.agent,
            "condition": episode.condition,
            "start": episode.start,
            "repeat": episode.repeat,
            "status": episode.status.as_str(),
            "final_score": episode.final_score,
        }));
    }
    let index_path = out.join("index.json");
    let text = serde_json::to_string_pretty(&json!({
        "format": ATIF_VERSION,
        "run": run_dir.display().to_string(),
        "include_private": options.include_private,
        "episodes": index,
    }))
    .map_err(|source| ExportError::Serialize { id: "index".into(), source })?;
    fs_err::create_dir_all(out).map_err(ExportError::Write)?;
    fs_err::write(&index_path, text).map_err(ExportError::Write)?;
    Ok(ExportSummary { trajectories: episodes.len(), index: index_path })
}
