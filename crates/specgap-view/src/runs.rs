//! The runs a viewer serves: each run directory opened read-only once, with what its pages
//! reuse between requests — trajectory indexes (so the next page of a 10,000-event episode
//! reads only that page), the report of the run (computed once per change of the store, in
//! the background), and the private text of its task packages.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::Value;
use specgap_store::{Store, TrajectoryIndex};

use crate::error::ViewError;
use crate::synthesis::{RolloutRun, SynthesisEntry, is_synthesis, rollout_dirs};

/// A trajectory index shared by the requests that read its episode.
pub(crate) type SharedIndex = Arc<Mutex<TrajectoryIndex>>;

/// Trajectory indexes kept per run (least recently built dropped first).
const INDEX_CACHE: usize = 64;

/// The runs of one viewer, in the order given, and the syntheses given (each synthesis's
/// rollout runs follow it among the runs).
#[derive(Debug)]
pub struct RunSet {
    pub(crate) runs: Vec<RunEntry>,
    pub(crate) syntheses: Vec<SynthesisEntry>,
}

impl RunSet {
    /// Opens every run directory read-only; a directory holding `journal.json` is a synthesis
    /// ([`crate::synthesis`]): its journal is read and its rollouts' run stores opened.
    ///
    /// # Errors
    /// [`ViewError::NoRuns`]; [`ViewError::Run`] naming the first directory that is not a
    /// readable run store; [`ViewError::Synthesis`] for a journal that does not read.
    pub fn open(dirs: &[PathBuf]) -> Result<RunSet, ViewError> {
        if dirs.is_empty() {
            return Err(ViewError::NoRuns);
        }
        let mut set = RunSet { runs: Vec::with_capacity(dirs.len()), syntheses: Vec::new() };
        for dir in dirs {
            if is_synthesis(dir) {
                set.open_synthesis(dir)?;
            } else {
                set.runs.push(open_run(dir)?);
            }
        }
        Ok(set)
    }

    /// Opens the synthesis at `dir` and its rollouts' run stores (as runs).
    fn open_synthesis(&mut self, dir: &Path) -> Result<(), ViewError> {
        let mut rollouts = Vec::new();
        for (design, iteration, path) in rollout_dirs(dir)? {
            rollouts.push(RolloutRun { design, iteration, run: self.runs.len() });
            self.runs.push(open_run(&path)?);
        }
        self.syntheses.push(SynthesisEntry::open(dir, rollouts)?);
        Ok(())
    }

    /// Runs served.
    pub fn len(&self) -> usize {
        self.runs.len()
    }

    /// Whether no run is served (a synthesis without rollouts serves none).
    pub fn is_empty(&self) -> bool {
        self.runs.is_empty()
    }

    /// Syntheses served.
    pub fn syntheses(&self) -> usize {
        self.syntheses.len()
    }
}

/// `dir` opened read-only as a run store.
fn open_run(dir: &Path) -> Result<RunEntry, ViewError> {
    // The store first: for a directory that is missing or no run, its message says what a run
    // directory is, as every other verb's does.
    let store = Store::open_read_only(dir).map_err(|source| ViewError::Run { dir: dir.to_owned(), source: Box::new(source) })?;
    let canonical = fs_err::canonicalize(dir).map_err(|e| ViewError::Run { dir: dir.to_owned(), source: Box::new(e.into()) })?;
    Ok(RunEntry::new(dir.to_owned(), canonical, store))
}

/// One run and its caches.
#[derive(Debug)]
pub(crate) struct RunEntry {
    /// The directory as given on the command line.
    pub(crate) given: PathBuf,
    /// Its canonical path: every file the viewer reads is checked to lie under it.
    pub(crate) dir: PathBuf,
    pub(crate) store: Store,
    /// Indexes by episode id, with the clock tick of their last use.
    indexes: Mutex<HashMap<String, (u64, SharedIndex)>>,
    index_clock: Mutex<u64>,
    pub(crate) summary: Mutex<SummaryState>,
    /// Timeline events read so far per episode (extended as its trajectory grows).
    pub(crate) timelines: Mutex<HashMap<String, Arc<Vec<crate::events::TimelineEvent>>>>,
    packages: Mutex<HashMap<String, Option<Arc<PackageText>>>>,
    /// The plan rebuilt from `run.toml` (progress).
    pub(crate) plan: Mutex<Option<crate::progress::PlanCache>>,
}

/// The cached run summary (the report's groups and the other run-page tables).
#[derive(Debug, Default)]
pub(crate) struct SummaryState {
    /// The store's data version the cached value was computed at.
    pub(crate) version: Option<i64>,
    /// The last computed value (public and private variants are cut from it on the way out).
    pub(crate) value: Option<Arc<Value>>,
    /// Whether a computation is under way.
    pub(crate) computing: bool,
    /// The last computation's error, if it failed.
    pub(crate) error: Option<String>,
}

/// The private text of one task package: requirement and clarification-target descriptions.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PackageText {
    /// `(id, priority, stated, description)` in file order.
    pub(crate) requirements: Vec<(String, u32, bool, String)>,
    /// `(id, issue type, domain, description, registered answer)` in file order.
    pub(crate) targets: Vec<(String, String, String, String, String)>,
}

/// Locks a mutex; a poisoned lock (a panic elsewhere) still holds consistent caches.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl RunEntry {
    fn new(given: PathBuf, dir: PathBuf, store: Store) -> RunEntry {
        RunEntry {
            given,
            dir,
            store,
            indexes: Mutex::new(HashMap::new()),
            index_clock: Mutex::new(0),
            summary: Mutex::new(SummaryState::default()),
            timelines: Mutex::new(HashMap::new()),
            packages: Mutex::new(HashMap::new()),
            plan: Mutex::new(None),
        }
    }

    /// `relative` under the run directory, when it exists and (links resolved) stays inside
    /// it; `None` otherwise.
    pub(crate) fn confined(&self, relative: &Path) -> Option<PathBuf> {
        let path = fs_err::canonicalize(self.dir.join(relative)).ok()?;
        path.starts_with(&self.dir).then_some(path)
    }

    /// The trajectory index of episode `id` brought up to date with its file, or `None`
    /// when the episode has no trajectory file.
    ///
    /// # Errors
    /// Store errors reading the file.
    pub(crate) fn index(&self, id: &str) -> Result<Option<(PathBuf, SharedIndex)>, ViewError> {
        let Some(path) = self.confined(&Path::new(specgap_store::EPISODES_DIR).join(id).join(specgap_store::TRAJECTORY_FILE)) else {
            return Ok(None);
        };
        let tick = {
            let mut clock = lock(&self.index_clock);
            *clock += 1;
            *clock
        };
        let cached = lock(&self.indexes).get(id).map(|(_, index)| Arc::clone(index));
        let index = match cached {
            Some(index) => {
                lock(&index).refresh(&path)?;
                index
            }
            None => {
                let index = Arc::new(Mutex::new(TrajectoryIndex::build(&path)?));
                let mut all = lock(&self.indexes);
                if all.len() >= INDEX_CACHE
                    && let Some(oldest) = all.iter().min_by_key(|(_, (t, _))| *t).map(|(k, _)| k.clone())
                {
                    all.remove(&oldest);
                }
                all.insert(id.to_string(), (tick, Arc::clone(&index)));
                index
            }
        };
        if let Some(entry) = lock(&self.indexes).get_mut(id) {
            entry.0 = tick;
        }
        Ok(Some((path, index)))
    }

    /// The private text of task `task`'s package, when `run.toml` names a package at a path
    /// that still holds it (same content hash).
    pub(crate) fn package_text(&self, task: &str) -> Option<Arc<PackageText>> {
        if let Some(cached) = lock(&self.packages).get(task) {
            return cached.clone();
        }
        let loaded = self.load_package_text(task).map(Arc::new);
        lock(&self.packages).insert(task.to_string(), loaded.clone());
        loaded
    }

    fn load_package_text(&self, task: &str) -> Option<PackageText> {
        let task_ref = self.store.config().tasks.iter().find(|t| t.name == task)?;
        let package = specgap_task::load(&task_ref.path).ok()?;
        if package.hash() != task_ref.hash {
            return None;
        }
        let label = |v: &dyn erased::Label| v.label();
        Some(PackageText {
            requirements: package.requirements().iter().map(|r| (r.id.clone(), r.priority, r.stated, r.description.clone())).collect(),
            targets: package
                .clarifications()
                .iter()
                .map(|t| (t.id.clone(), label(&t.issue_type), label(&t.domain), t.description.clone(), t.answer.clone()))
                .collect(),
        })
    }
}

/// serde names of the package enums (`missing`, `constraint-rule`, …).
mod erased {
    pub(crate) trait Label {
        fn label(&self) -> String;
    }

    impl<T: serde::Serialize> Label for T {
        fn label(&self) -> String {
            serde_json::to_value(self).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default()
        }
    }
}
