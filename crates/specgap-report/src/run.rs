//! [`RunData`]: one run store read for reporting — its configuration, every row, the context
//! of each task package it ran, and the offline judgements added at report time.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use specgap_protocol::run::RunConfig;
use specgap_store::{RunRows, Store};

use crate::ReportError;
use crate::context::TaskContext;
use crate::judge::{JudgeSummary, judge_missing};

/// One run, read for reporting.
#[derive(Debug, Clone)]
pub struct RunData {
    /// The run directory.
    pub dir: PathBuf,
    /// `run.toml`.
    pub config: RunConfig,
    /// Every row of `results.sqlite` (plus offline judgements computed now).
    pub rows: RunRows,
    /// Context of each task whose package could be read, by task name.
    pub tasks: BTreeMap<String, TaskContext>,
    /// Why some measures may be left out (unreadable packages, failed writes).
    pub warnings: Vec<String>,
    /// What the offline judge did while loading.
    pub judge: JudgeSummary,
}

impl RunData {
    /// Opens the run store in `dir`, reads every row, loads the task packages named in
    /// `run.toml`, and runs the offline judge (seed 002 coverage) on delivery episodes that
    /// have no offline judgement yet, recording its verdicts in the store.
    ///
    /// # Errors
    /// [`ReportError::Store`] when the store cannot be opened or read.
    pub fn load(dir: &Path) -> Result<RunData, ReportError> {
        let store = Store::open(dir).map_err(|source| ReportError::Store { dir: dir.to_path_buf(), source: Box::new(source) })?;
        let rows = store.rows().map_err(|source| ReportError::Store { dir: dir.to_path_buf(), source: Box::new(source) })?;
        Ok(RunData::from_rows(dir, store.config().clone(), rows, Some(&store)))
    }

    /// Builds run data from rows already read; with `store`, offline judgements are recorded
    /// there too.
    pub fn from_rows(dir: &Path, config: RunConfig, mut rows: RunRows, store: Option<&Store>) -> RunData {
        let (tasks, mut warnings) = load_task_contexts(&config);
        let judge = judge_missing(store, &mut rows, &tasks);
        warnings.extend(judge.warning.clone());
        RunData { dir: dir.to_path_buf(), config, rows, tasks, warnings, judge }
    }
}

/// Loads the context of every task of `config` from its package path. A package that cannot
/// be read, or whose content hash differs from the one the run recorded, is skipped with a
/// warning (its measures that need the package are left out).
pub fn load_task_contexts(config: &RunConfig) -> (BTreeMap<String, TaskContext>, Vec<String>) {
    let mut tasks = BTreeMap::new();
    let mut warnings = Vec::new();
    for task in &config.tasks {
        match specgap_task::load(&task.path) {
            Ok(package) if package.hash() == task.hash => {
                let (context, more) = TaskContext::from_package(&package);
                warnings.extend(more);
                tasks.insert(task.name.clone(), context);
            }
            Ok(_) => warnings.push(format!(
                "task {}: the package at {} changed since the run (content hash differs); measures that need it are left out",
                task.name, task.path
            )),
            Err(err) => warnings
                .push(format!("task {}: cannot read the package at {} ({err}); measures that need it are left out", task.name, task.path)),
        }
    }
    (tasks, warnings)
}
