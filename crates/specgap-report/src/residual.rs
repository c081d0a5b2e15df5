//! Measures of seed 001 (SWE-Residual): Res, Clean, Residual Gap, CondFail and
//! per-predecessor groups (App. C.2 eqs. 3–5), and the acceptance-bias measures of App. D
//! (Same failing, Initially failing, Kept, Left-out files, Steps, inspection, split by Kept).
//!
//! Outcomes y of Res, Clean, CondFail and the predecessor groups are
//! [`Episode::declared_success`]: a run succeeds only when the agent declared the work complete
//! and that submission passes; a run that exhausted a budget or ended in a loop counts as a
//! failure (App. C.1, D.1), whatever an automatic submission of its workspace scored. The
//! acceptance-bias measures use normally submitted runs only (App. D.1), which excludes those
//! runs. Repeats are averaged within each (task, state) first, then states within the task,
//! then tasks, so every task weighs the same.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::sync::atomic::{AtomicUsize, Ordering as AtomicOrdering};

use serde::Serialize;
use specgap_store::read_trajectory;

use crate::diff::{DiffChanges, kept_lines, parse_diff};
use crate::episode::{Episode, indicator, mean};
use crate::keyed::{KeyedMap, KeyedSet};
use crate::machine::LayerFiles;
use crate::opened::{Measured, Tree, file_actions, inspects_inherited, measured_reads, opened_files};
use crate::reset::resets_all_inherited;
use specgap_protocol::action::FileAction;

/// A residual state that passed the verifier before the first turn of an episode
/// (`start_results.success = 1`): not a valid residual state (seed 001 §3.1, App. B.3, which
/// exclude such states before evaluation). Its episodes are left out of every residual measure
/// and listed here instead.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct InvalidResidualState {
    /// Task name.
    pub task: String,
    /// Residual state id (`residual:<id>` without the prefix).
    pub state: String,
    /// Episodes that started from it and were left out.
    pub episodes: usize,
}

/// The invalid residual states among `episodes`, sorted by task and state.
pub fn invalid_states(episodes: &[Episode<'_>]) -> Vec<InvalidResidualState> {
    let mut counts: BTreeMap<(&str, &str), usize> = BTreeMap::new();
    for e in episodes.iter().filter(|e| e.start_passed) {
        if let Some(state) = e.state() {
            *counts.entry((e.row.task.as_str(), state)).or_default() += 1;
        }
    }
    counts
        .into_iter()
        .map(|((task, state), episodes)| InvalidResidualState { task: task.to_string(), state: state.to_string(), episodes })
        .collect()
}

/// Residual Gap in percentage points, `100 · (Clean − Res)`, from unrounded rates in [0, 1]
/// (seed 001 App. C.2; Table 3 "Gap", computed before rounding).
pub fn residual_gap_points(clean: f64, res: f64) -> f64 {
    100.0 * (clean - res)
}

/// Res(A), Clean(A) and the Residual Gap on the tasks that have both a clean and a residual
/// start (seed 001 App. C.2 eqs. 3–4).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ResidualRates {
    /// N: tasks with scored episodes from both starts.
    pub tasks: usize,
    /// Res(A) in [0, 1]: success averaged over repeats and states within a task, then tasks.
    pub res: f64,
    /// Clean(A) in [0, 1] on the same tasks.
    pub clean: f64,
    /// [`residual_gap_points`], in percentage points.
    pub gap_points: f64,
}

/// Success of each task's clean start, averaged over repeats (scored episodes only).
fn clean_by_task(clean: &[&Episode<'_>]) -> BTreeMap<String, f64> {
    crate::episode::per_task_means(clean.iter().copied(), |e| e.is_scored().then(|| indicator(e.declared_success())))
}

/// Success of each task's residual starts: repeats averaged per state, then states (eq. 3's
/// inner mean over R_i).
fn residual_by_task(residual: &[&Episode<'_>]) -> BTreeMap<String, f64> {
    // Borrowed keys order as the owned ones would (`str` and `String` compare alike).
    let mut by_state: BTreeMap<(&str, &str), (f64, usize)> = BTreeMap::new();
    for e in residual.iter().filter(|e| e.is_scored()) {
        let Some(state) = e.state() else { continue };
        let slot = by_state.entry((e.row.task.as_str(), state)).or_insert((0.0, 0));
        slot.0 += indicator(e.declared_success());
        slot.1 += 1;
    }
    let mut by_task: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    for ((task, _), (sum, n)) in by_state {
        by_task.entry(task).or_default().push(sum / n as f64);
    }
    by_task.into_iter().filter_map(|(t, v)| mean(v).map(|m| (t.to_string(), m))).collect()
}

/// [`ResidualRates`] from an agent's clean and residual episodes; `None` when no task has
/// both.
pub fn residual_rates(clean: &[&Episode<'_>], residual: &[&Episode<'_>]) -> Option<ResidualRates> {
    let clean = clean_by_task(clean);
    let residual = residual_by_task(residual);
    let tasks: Vec<&String> = residual.keys().filter(|t| clean.contains_key(*t)).collect();
    let res = mean(tasks.iter().map(|t| residual[*t]))?;
    let clean_rate = mean(tasks.iter().map(|t| clean[*t]))?;
    Some(ResidualRates { tasks: tasks.len(), res, clean: clean_rate, gap_points: residual_gap_points(clean_rate, res) })
}

/// Conditional failure rate (seed 001 App. C.2 eq. 5): on the tasks the agent completes from
/// a clean start — here, every clean repeat succeeded — the mean over tasks of the residual
/// failure rate (averaged over repeats and states).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CondFail {
    /// |C_A|: tasks whose clean starts all succeeded and that have residual starts.
    pub tasks: usize,
    /// CondFail(A) in [0, 1].
    pub rate: f64,
}

/// [`CondFail`]; `None` when C_A is empty.
pub fn cond_fail(clean: &[&Episode<'_>], residual: &[&Episode<'_>]) -> Option<CondFail> {
    let clean = clean_by_task(clean);
    let residual = residual_by_task(residual);
    let completed: Vec<f64> = residual.iter().filter(|(t, _)| clean.get(*t).is_some_and(|c| *c >= 1.0)).map(|(_, r)| 1.0 - r).collect();
    let n = completed.len();
    mean(completed).map(|rate| CondFail { tasks: n, rate })
}

/// Rates of the residual states produced by one predecessor (seed 001 App. C.2 "Predecessor
/// groups", Table 8): tasks with at least one state from it, only its states averaged, and
/// the clean reference on the same tasks.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PredecessorGroup {
    /// `meta.toml` `predecessor`, or `unknown` when the package could not be read.
    pub predecessor: String,
    /// The rates on this group's tasks.
    pub rates: ResidualRates,
}

/// [`PredecessorGroup`]s, sorted by predecessor.
pub fn predecessor_groups(clean: &[&Episode<'_>], residual: &[&Episode<'_>]) -> Vec<PredecessorGroup> {
    let mut by_predecessor: BTreeMap<String, Vec<&Episode>> = BTreeMap::new();
    for e in residual {
        let predecessor = e
            .state()
            .and_then(|s| e.context.and_then(|c| c.states.get(s)))
            .map_or_else(|| "unknown".to_string(), |s| s.predecessor.clone());
        by_predecessor.entry(predecessor).or_default().push(e);
    }
    by_predecessor
        .into_iter()
        .filter_map(|(predecessor, episodes)| residual_rates(clean, &episodes).map(|rates| PredecessorGroup { predecessor, rates }))
        .collect()
}

/// The acceptance-bias measures of seed 001 App. D.2 over normally submitted episodes (App.
/// D.1). Each run-level value is averaged within its task, then across tasks; every value is
/// a fraction in [0, 1] except `steps_ratio`. A value is absent when no run defines it (for
/// example Same failing without per-test results, Kept without the task package).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct AcceptanceBias {
    /// Normally submitted continuations.
    pub continuations: usize,
    /// Failed continuations that end with exactly the tests failing in their residual state.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub same_failing: Option<f64>,
    /// Share of the state's failing tests that pass at the end of the agent's clean runs on the
    /// same task (each continuation paired with the mean over those runs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub initially_failing_clean: Option<f64>,
    /// Share of the state's failing tests that pass at the end of the continuation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub initially_failing_residual: Option<f64>,
    /// The same share restricted to failed continuations (seed 001 §5.4 "repair rate").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repair_rate_failed: Option<f64>,
    /// Share of the predecessor's added lines (P, from the harness's diff of the state) still
    /// in the final diff, over failed continuations (longest-common-subsequence line match per
    /// file).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kept_failed: Option<f64>,
    /// Over states with left-out files: share of the agent's clean runs that change one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub left_out_clean: Option<f64>,
    /// Share of continuations that change a left-out file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub left_out_residual: Option<f64>,
    /// Share of continuations that open a left-out file (App. D.2 rules): by the measured
    /// reads where the episode has them ([`crate::opened::measured_reads`]), else by the
    /// commands' text ([`crate::opened`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub left_out_opened: Option<f64>,
    /// [`AcceptanceBias::left_out_opened`] by the commands' text alone (the trajectory reader),
    /// kept beside it: the two differ where shell text misleads.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub left_out_opened_by_text: Option<f64>,
    /// Continuations whose reads were measured (every shell command watched).
    pub reads_measured: usize,
    /// Median over tasks of the task-mean ratio of continuation turns to the mean turns of the
    /// agent's clean runs on the task.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub steps_ratio: Option<f64>,
    /// Share of continuations that inspect the inherited changes (measured reads where the
    /// episode has them, as [`AcceptanceBias::left_out_opened`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inspected: Option<f64>,
    /// [`AcceptanceBias::inspected`] by the commands' text alone.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inspected_by_text: Option<f64>,
    /// Continuations split at the median Kept.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kept_split: Option<KeptSplit>,
    /// Over failed continuations: share of the tests passing in the residual state that fail
    /// or error at the end (§5.4 "break almost none of the passing ones").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub broken_failed: Option<f64>,
    /// Share of continuations that discard all inherited work: none of the predecessor's
    /// added lines remains in the final diff (Kept = 0), or their commands reset every
    /// inherited change to the base before rewriting ([`crate::reset`]; §5.4, App. B.1 "none
    /// discarded the inherited work in its entirety"), over continuations whose state added
    /// lines.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub discarded_all: Option<f64>,
    /// Why some values rest on weaker inputs (moved into the report's warnings, not part of
    /// the JSON row).
    #[serde(skip)]
    pub warnings: Vec<String>,
}

/// Success of normally submitted continuations that keep more of the earlier work against
/// those that keep less, split at the median Kept (seed 001 App. D.2 "Split by Kept", §5.4),
/// run-level rates in [0, 1].
///
/// The split puts continuations with Kept above the median in the `high` half and the rest
/// (at or below) in the `low` half. When no value exceeds the median — the median is the
/// maximum, as when most continuations keep everything — that split would leave `high` empty,
/// so it moves to the median itself: `high` holds Kept at the median (the maximum) and `low`
/// the values below it ([`KeptSplitRule::AtOrAboveMedian`]). With every Kept equal there is no
/// split.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KeptSplit {
    /// The median Kept over normally submitted continuations.
    pub median_kept: f64,
    /// Where the halves divide.
    pub rule: KeptSplitRule,
    /// Continuations in the half that keeps more.
    pub high: usize,
    /// Continuations in the half that keeps less.
    pub low: usize,
    /// Success rate of the `high` half.
    pub success_high: f64,
    /// Success rate of the `low` half.
    pub success_low: f64,
}

/// How [`KeptSplit`] divides continuations at the median Kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum KeptSplitRule {
    /// High: Kept > median; low: Kept ≤ median (seed 001's split).
    AboveMedian,
    /// High: Kept ≥ median; low: Kept < median — used when no Kept exceeds the median.
    AtOrAboveMedian,
}

/// Per-task accumulation of run-level values, averaged within tasks, then across tasks.
#[derive(Default)]
struct TaskAverage(BTreeMap<String, Vec<f64>>);

impl TaskAverage {
    fn add(&mut self, task: &str, value: f64) {
        self.0.entry(task.to_string()).or_default().push(value);
    }

    fn task_means(&self) -> Vec<f64> {
        self.0.values().filter_map(|v| mean(v.iter().copied())).collect()
    }

    fn macro_mean(&self) -> Option<f64> {
        mean(self.task_means())
    }
}

/// Final diffs and trajectory actions read from the run directories, once each, by as many
/// threads as the machine has cores (reports read thousands of small files).
#[derive(Default)]
struct Artifacts<'a> {
    diffs: KeyedMap<&'a str, DiffChanges>,
    /// The harness's diffs of the starting states (`start/workspace.diff`), with their sizes.
    start_diffs: KeyedMap<&'a str, (DiffChanges, u64)>,
    actions: KeyedMap<&'a str, Vec<FileAction>>,
    /// The measured reads of each trajectory, or why it has none.
    measured: KeyedMap<&'a str, Result<Measured, String>>,
    /// Continuations whose commands reset every inherited change ([`crate::reset`]).
    reset_all: KeyedSet<&'a str>,
    /// The last submission's machine layer of continuations from whole-machine states
    /// (`None`: that submission changed nothing outside the workspace).
    machine_finals: KeyedMap<&'a str, Option<LayerFiles>>,
}

/// What to read for one episode.
#[derive(Clone, Copy)]
enum Need {
    Diff,
    DiffAndActions,
}

/// Episodes each reader thread takes from the shared queue at a time.
const READ_BATCH: usize = 64;

/// The final submission's diff against the base, or `None` when it cannot be read.
fn read_final_diff(e: &Episode<'_>) -> Option<DiffChanges> {
    let k = e.submissions.last()?.k;
    let path = e.run_dir.join(specgap_store::EPISODES_DIR).join(&e.row.id).join("submissions").join(k.to_string()).join("workspace.diff");
    read_diff(&path).map(|(changes, _)| changes)
}

/// The final submission's machine layer (`submissions/<k>/machine.tar`), or `None` when that
/// submission changed nothing outside the workspace (or the layer cannot be read).
fn read_final_machine(e: &Episode<'_>) -> Option<LayerFiles> {
    let k = e.submissions.last()?.k;
    let dir = e.run_dir.join(specgap_store::EPISODES_DIR).join(&e.row.id).join("submissions").join(k.to_string());
    LayerFiles::read(&dir.join(specgap_store::MACHINE_LAYER_FILE))
}

/// The harness's diff of a residual episode's starting state (`start/workspace.diff`), or
/// `None` for a store written before it existed.
fn read_start_diff(e: &Episode<'_>) -> Option<(DiffChanges, u64)> {
    let path = e.run_dir.join(specgap_store::EPISODES_DIR).join(&e.row.id).join("start").join(specgap_store::START_DIFF_FILE);
    read_diff(&path)
}

/// The files of an episode's starting state: the package's `workspace/`, with a residual
/// state's created files added and deleted files removed (globs of App. D.2's rules are
/// expanded against it).
fn start_tree(e: &Episode<'_>) -> Tree {
    let Some(context) = e.context else {
        return Tree::default();
    };
    let state = e.state().and_then(|s| context.states.get(s));
    let mut files = context.workspace_files.clone();
    if let Some(state) = state {
        files.extend(state.changes.created.iter().cloned());
        for gone in &state.changes.deleted {
            files.remove(gone);
        }
    }
    Tree::new(files)
}

/// A diff file parsed, with its size in bytes.
fn read_diff(path: &std::path::Path) -> Option<(DiffChanges, u64)> {
    // Read without `fs::read`'s size hint (two `statx` and an `lseek` per file, most of the
    // cost of a diff of a few hundred bytes).
    let mut bytes = Vec::with_capacity(8 << 10);
    fs_err::File::open(path).ok()?.read_to_end(&mut bytes).ok()?;
    Some((parse_diff(&String::from_utf8_lossy(&bytes)), bytes.len() as u64))
}

impl<'a> Artifacts<'a> {
    /// Reads what `work` needs. Threads take batches from a shared counter rather than fixed
    /// halves, so a thread that drew the continuations (two files each) does not finish long
    /// after one that drew clean runs (one file each).
    fn read(work: &[(&Episode<'a>, Need)]) -> Artifacts<'a> {
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(work.len().div_ceil(READ_BATCH).max(1));
        let next = AtomicUsize::new(0);
        let parts: Vec<Artifacts<'a>> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..threads).map(|_| scope.spawn(|| Artifacts::read_batches(work, &next))).collect();
            // A panicking reader thread loses its part; the values it held stay undefined.
            handles.into_iter().filter_map(|h| h.join().ok()).collect()
        });
        let mut all = Artifacts::default();
        for part in parts {
            all.diffs.extend(part.diffs);
            all.start_diffs.extend(part.start_diffs);
            all.actions.extend(part.actions);
            all.measured.extend(part.measured);
            all.reset_all.extend(part.reset_all);
            all.machine_finals.extend(part.machine_finals);
        }
        all
    }

    /// One reader thread: batches of `work` from `next` until none is left.
    fn read_batches(work: &[(&Episode<'a>, Need)], next: &AtomicUsize) -> Artifacts<'a> {
        let mut out = Artifacts::default();
        loop {
            let start = next.fetch_add(READ_BATCH, AtomicOrdering::Relaxed);
            let Some(batch) = work.get(start..(start + READ_BATCH).min(work.len())) else {
                return out;
            };
            if batch.is_empty() {
                return out;
            }
            for (e, need) in batch {
                let id = e.row.id.as_str();
                if let Some(diff) = read_final_diff(e) {
                    out.diffs.insert(id, diff);
                }
                let machine_state = e.state().and_then(|s| e.context.and_then(|c| c.states.get(s))).is_some_and(|s| s.machine.is_some());
                if machine_state {
                    out.machine_finals.insert(id, read_final_machine(e));
                }
                if matches!(need, Need::DiffAndActions) {
                    if let Ok(t) = read_trajectory(e.run_dir, id) {
                        let tree = start_tree(e);
                        out.measured.insert(id, measured_reads(&t.events, &tree));
                        let state = e.state().and_then(|s| e.context.and_then(|c| c.states.get(s)));
                        if let Some(state) = state {
                            let changes = &state.changes;
                            let added = changes.created.clone();
                            let modified = changes.files.difference(&added).cloned().collect();
                            if resets_all_inherited(&t.events, &modified, &added) {
                                out.reset_all.insert(id);
                            }
                        }
                        out.actions.insert(id, file_actions(&t.events, &tree));
                    }
                    if let Some(start) = read_start_diff(e) {
                        out.start_diffs.insert(id, start);
                    }
                }
            }
        }
    }
}

/// [`AcceptanceBias`] of one agent from its clean and residual episodes. Reads final diffs
/// and trajectories of normally submitted episodes from their run directories; a file that
/// cannot be read leaves that run's value undefined.
pub fn acceptance_bias(clean: &[&Episode<'_>], residual: &[&Episode<'_>]) -> AcceptanceBias {
    // The agent's normally submitted clean runs by task: each continuation's partners.
    let mut clean_by_task: KeyedMap<&str, Vec<&Episode>> = KeyedMap::default();
    for c in clean.iter().copied().filter(|e| e.normally_submitted()) {
        clean_by_task.entry(c.row.task.as_str()).or_default().push(c);
    }
    let continuations: Vec<&Episode> = residual.iter().copied().filter(|e| e.normally_submitted()).collect();
    let has_state = |e: &Episode| e.state().is_some_and(|s| e.context.is_some_and(|c| c.states.contains_key(s)));
    let mut work: Vec<(&Episode, Need)> =
        continuations.iter().copied().filter(|e| has_state(e)).map(|e| (e, Need::DiffAndActions)).collect();
    // Clean runs' diffs serve only Left-out files: read them for tasks where a continuation
    // starts from a state with left-out files.
    let left_out_tasks: KeyedSet<&str> = continuations
        .iter()
        .filter(|e| e.state().and_then(|s| e.context.and_then(|c| c.states.get(s))).is_some_and(|state| !state.left_out.is_empty()))
        .map(|e| e.row.task.as_str())
        .collect();
    work.extend(
        clean_by_task.iter().filter(|(task, _)| left_out_tasks.contains(*task)).flat_map(|(_, runs)| runs.iter().map(|e| (*e, Need::Diff))),
    );
    let artifacts = Artifacts::read(&work);
    // Partner values depend only on the task and the state, so they are computed once.
    let mut clean_turns: KeyedMap<&str, Option<f64>> = KeyedMap::default();
    let mut clean_repair: KeyedMap<(&str, Vec<&str>), Option<f64>> = KeyedMap::default();
    let mut clean_left_out: KeyedMap<(&str, &str), Option<f64>> = KeyedMap::default();

    let mut same_failing = TaskAverage::default();
    let mut if_clean = TaskAverage::default();
    let mut if_residual = TaskAverage::default();
    let mut repair_failed = TaskAverage::default();
    let mut kept_failed = TaskAverage::default();
    let mut left_clean = TaskAverage::default();
    let mut left_residual = TaskAverage::default();
    let mut left_opened = TaskAverage::default();
    let mut left_opened_text = TaskAverage::default();
    let mut inspected_text = TaskAverage::default();
    let mut reads_measured = 0usize;
    let mut unmeasured: BTreeSet<String> = BTreeSet::new();
    let mut reading_differs: Vec<String> = Vec::new();
    let mut steps = TaskAverage::default();
    let mut inspected = TaskAverage::default();
    let mut kept_all: Vec<(f64, bool)> = Vec::new();
    let mut warnings: BTreeSet<String> = BTreeSet::new();
    let mut broken_failed = TaskAverage::default();
    let mut discarded_all = TaskAverage::default();

    for e in &continuations {
        let task = e.row.task.as_str();
        let failed = !e.final_success();
        let partners: &[&Episode] = clean_by_task.get(task).map_or(&[], Vec::as_slice);
        let state = e.state().and_then(|s| e.context.and_then(|c| c.states.get(s)));
        // Same failing / Initially failing: per-test results at k = 0 and at the end.
        if let (Some(start_failing), Some(final_k)) = (e.failing_tests(0), e.final_k()) {
            if let Some(end_failing) = e.failing_tests(final_k)
                && failed
            {
                same_failing.add(task, indicator(end_failing == start_failing));
            }
            // Passing tests broken: passing in the state, failing or erroring at the end
            // (§5.4), over failed continuations.
            if failed && let (Some(start), Some(end_failing)) = (e.tests.get(0), e.failing_tests(final_k)) {
                let passing: Vec<&str> =
                    start.iter().filter(|(_, o)| *o == specgap_protocol::result::TestOutcome::Pass).map(|(t, _)| t).collect();
                if !passing.is_empty() {
                    let broken = passing.iter().filter(|t| end_failing.contains(*t)).count();
                    broken_failed.add(task, broken as f64 / passing.len() as f64);
                }
            }
            if !start_failing.is_empty() {
                let share = |ep: &Episode| -> Option<f64> {
                    let k = ep.final_k()?;
                    ep.tests.get(k)?;
                    Some(start_failing.iter().filter(|t| ep.test_passes(k, t)).count() as f64 / start_failing.len() as f64)
                };
                if let Some(v) = share(e) {
                    if_residual.add(task, v);
                    if failed {
                        repair_failed.add(task, v);
                    }
                }
                let key = (task, start_failing.iter().copied().collect::<Vec<&str>>());
                let clean_value = *clean_repair.entry(key).or_insert_with(|| mean(partners.iter().filter_map(|c| share(c))));
                if let Some(v) = clean_value {
                    if_clean.add(task, v);
                }
            }
        }
        // Steps: turns relative to the agent's clean runs on the task.
        let turns = *clean_turns.entry(task).or_insert_with(|| mean(partners.iter().map(|c| f64::from(c.row.turns))).filter(|t| *t > 0.0));
        if let Some(turns) = turns {
            steps.add(task, f64::from(e.row.turns) / turns);
        }
        let (Some(state), Some(state_id)) = (state, e.state()) else {
            continue;
        };
        let final_changes = artifacts.diffs.get(e.row.id.as_str());
        // Kept: the predecessor's added lines (P, from the harness's own diff of the state)
        // that remain in the final diff.
        let inherited = match artifacts.start_diffs.get(e.row.id.as_str()) {
            Some((changes, _)) => changes,
            None => match state.harness_changes() {
                Ok((changes, _)) => changes,
                Err(why) => {
                    warnings.insert(format!(
                        "task {task}: residual state {state_id}: the episodes have no start/workspace.diff and the state could not be rebuilt ({why}); Kept takes the predecessor's lines from state.patch as written, which depends on the diff algorithm its author used"
                    ));
                    &state.changes
                }
            },
        };
        if let Some(final_changes) = final_changes {
            // A whole-machine state's files outside the workspace count like its own.
            let (inherited_added, final_added) =
                with_machine(state, &inherited.added, &final_changes.added, artifacts.machine_finals.get(e.row.id.as_str()));
            let (kept, total) = kept_lines(&inherited_added, &final_added);
            if total > 0 {
                let value = kept as f64 / total as f64;
                // A reset to the base followed by a rewrite discards the earlier work even
                // where the rewrite repeats some of its lines (docs/decisions.md "Report:
                // Discarded all").
                let reset = artifacts.reset_all.contains(e.row.id.as_str());
                discarded_all.add(task, indicator(kept == 0 || reset));
                kept_all.push((value, e.final_success()));
                if failed {
                    kept_failed.add(task, value);
                }
            }
        }
        let trajectory = artifacts.actions.get(e.row.id.as_str());
        let measured = match artifacts.measured.get(e.row.id.as_str()) {
            Some(Ok(measured)) => {
                reads_measured += 1;
                Some(measured)
            }
            Some(Err(why)) => {
                unmeasured.insert(why.clone());
                None
            }
            None => None,
        };
        if let Some(actions) = trajectory {
            let by_text = inspects_inherited(actions, &state.changes.files);
            let value = measured.map_or(by_text, |m| m.inspects(actions, &state.changes.files));
            if value != by_text {
                reading_differs.push(format!("{}: inspected {value} measured, {by_text} by the commands' text", e.row.id));
            }
            inspected.add(task, indicator(value));
            inspected_text.add(task, indicator(by_text));
        }
        // Left-out files: states with a non-empty L and clean partners normally submitted.
        if state.left_out.is_empty() || partners.is_empty() {
            continue;
        }
        let changes_left_out = |changes: &DiffChanges| state.left_out.iter().any(|f| changes.files.contains(f));
        let clean_value = match clean_left_out.get(&(task, state_id)) {
            Some(value) => *value,
            None => {
                let values: Vec<f64> = partners
                    .iter()
                    .filter_map(|c| artifacts.diffs.get(c.row.id.as_str()).map(|d| indicator(changes_left_out(d))))
                    .collect();
                let value = mean(values);
                clean_left_out.insert((task, state_id), value);
                value
            }
        };
        if let (Some(final_changes), Some(clean_value)) = (final_changes, clean_value) {
            left_clean.add(task, clean_value);
            left_residual.add(task, indicator(changes_left_out(final_changes)));
            if let Some(actions) = trajectory {
                let by_text = opened_files(actions, &state.left_out);
                let value = measured.map_or_else(|| by_text.clone(), |m| m.opened_of(&state.left_out));
                if value != by_text {
                    let list = |files: &BTreeSet<String>| {
                        if files.is_empty() { "none".to_string() } else { files.iter().cloned().collect::<Vec<_>>().join(", ") }
                    };
                    reading_differs.push(format!(
                        "{}: left-out files opened {} measured, {} by the commands' text",
                        e.row.id,
                        list(&value),
                        list(&by_text)
                    ));
                }
                left_opened.add(task, indicator(!value.is_empty()));
                left_opened_text.add(task, indicator(!by_text.is_empty()));
            }
        }
    }

    AcceptanceBias {
        continuations: continuations.len(),
        same_failing: same_failing.macro_mean(),
        initially_failing_clean: if_clean.macro_mean(),
        initially_failing_residual: if_residual.macro_mean(),
        repair_rate_failed: repair_failed.macro_mean(),
        kept_failed: kept_failed.macro_mean(),
        left_out_clean: left_clean.macro_mean(),
        left_out_residual: left_residual.macro_mean(),
        left_out_opened: left_opened.macro_mean(),
        left_out_opened_by_text: left_opened_text.macro_mean(),
        reads_measured,
        inspected_by_text: inspected_text.macro_mean(),
        steps_ratio: {
            let per_task = steps.task_means();
            specgap_stats::median(&per_task).ok()
        },
        inspected: inspected.macro_mean(),
        kept_split: kept_split(&kept_all),
        broken_failed: broken_failed.macro_mean(),
        discarded_all: discarded_all.macro_mean(),
        warnings: {
            for why in unmeasured {
                warnings.insert(format!(
                    "opened and inspected read from the commands' text for some continuations ({why}); the others' reads were measured"
                ));
            }
            if !reading_differs.is_empty() {
                warnings.insert(format!(
                    "measured reads and the commands' text differ for {} continuation(s): {}",
                    reading_differs.len(),
                    reading_differs.join("; ")
                ));
            }
            warnings.into_iter().collect()
        },
    }
}

/// The predecessor's and the final state's added lines per file, with a whole-machine state's
/// machine files (keyed by absolute path, [`crate::machine`]) beside the workspace's.
fn with_machine<'m>(
    state: &crate::context::StateContext,
    inherited: &'m BTreeMap<String, Vec<String>>,
    finals: &'m BTreeMap<String, Vec<String>>,
    machine_final: Option<&Option<LayerFiles>>,
) -> (Cow<'m, BTreeMap<String, Vec<String>>>, Cow<'m, BTreeMap<String, Vec<String>>>) {
    let Some(machine) = &state.machine else { return (Cow::Borrowed(inherited), Cow::Borrowed(finals)) };
    let (mut inherited, mut finals) = (inherited.clone(), finals.clone());
    inherited.extend(machine.inherited().cloned().unwrap_or_default());
    finals.extend(machine.final_added(machine_final.and_then(Option::as_ref)).unwrap_or_default());
    (Cow::Owned(inherited), Cow::Owned(finals))
}

/// One continuation's Kept and final success.
type KeptRun = (f64, bool);

/// Splits (Kept, success) pairs at the median Kept ([`KeptSplit`]); `None` without values or
/// when every Kept is equal.
pub fn kept_split(values: &[(f64, bool)]) -> Option<KeptSplit> {
    let kept: Vec<f64> = values.iter().map(|(k, _)| *k).collect();
    let median_kept = specgap_stats::median(&kept).ok()?;
    let rule = if kept.iter().any(|k| *k > median_kept) { KeptSplitRule::AboveMedian } else { KeptSplitRule::AtOrAboveMedian };
    let in_high = |k: f64| match rule {
        KeptSplitRule::AboveMedian => k > median_kept,
        KeptSplitRule::AtOrAboveMedian => k >= median_kept,
    };
    let (high, low): (Vec<&KeptRun>, Vec<&KeptRun>) = values.iter().partition(|(k, _)| in_high(*k));
    let rate = |half: &[&KeptRun]| mean(half.iter().map(|(_, s)| indicator(*s)));
    Some(KeptSplit { median_kept, rule, high: high.len(), low: low.len(), success_high: rate(&high)?, success_low: rate(&low)? })
}

/// Every seed 001 measure of one agent (and condition, family… per the report's grouping):
/// what [`crate::report`] shows per row of its residual table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ResidualMeasures {
    /// Res, Clean and Gap over all states.
    pub rates: ResidualRates,
    /// CondFail, when some task's clean starts all succeeded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cond_fail: Option<CondFail>,
    /// Per-predecessor groups.
    pub predecessors: Vec<PredecessorGroup>,
    /// Acceptance-bias measures.
    pub acceptance: AcceptanceBias,
}

/// [`ResidualMeasures`]; `None` when no task has both a clean and a residual start.
pub fn residual_measures(clean: &[&Episode<'_>], residual: &[&Episode<'_>]) -> Option<ResidualMeasures> {
    let rates = residual_rates(clean, residual)?;
    // Restrict everything else to the matched tasks, as App. C.2 does.
    let both: BTreeSet<&str> = {
        let c: BTreeSet<&str> = clean.iter().filter(|e| e.is_scored()).map(|e| e.row.task.as_str()).collect();
        residual.iter().filter(|e| e.is_scored() && c.contains(e.row.task.as_str())).map(|e| e.row.task.as_str()).collect()
    };
    let clean: Vec<&Episode> = clean.iter().copied().filter(|e| both.contains(e.row.task.as_str())).collect();
    let residual: Vec<&Episode> = residual.iter().copied().filter(|e| both.contains(e.row.task.as_str())).collect();
    Some(ResidualMeasures {
        rates,
        cond_fail: cond_fail(&clean, &residual),
        predecessors: predecessor_groups(&clean, &residual),
        acceptance: acceptance_bias(&clean, &residual),
    })
}

/// One agent's place in the clean and residual rankings (seed 001 §5.2 "Clean-start rankings
/// reverse"): rank 1 is the highest rate; ties share their average rank.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AgentRank {
    /// Agent.
    pub agent: String,
    /// Clean(A), in [0, 1].
    pub clean: f64,
    /// Res(A), in [0, 1].
    pub res: f64,
    /// Rank by Clean.
    pub clean_rank: f64,
    /// Rank by Res.
    pub res_rank: f64,
}

/// Whether clean and residual starts rank agents alike: Spearman ρ between Clean(A) and Res(A)
/// over agents (with its two-sided p-value; `specgap_stats::spearman`, scipy's), and the agent
/// pairs the two orders disagree on.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RankingReversal {
    /// Agents by Clean rank.
    pub agents: Vec<AgentRank>,
    /// Spearman ρ; absent where undefined (a constant column, fewer than three agents for
    /// the p-value too).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rho: Option<f64>,
    /// Its two-sided p-value; absent where undefined.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub p_value: Option<f64>,
    /// Agent pairs ordered strictly one way by Clean and strictly the other way by Res.
    pub reversed_pairs: usize,
    /// Agent pairs.
    pub pairs: usize,
}

/// Ranks of `values`, 1 for the largest, ties averaged.
fn descending_ranks(values: &[f64]) -> Vec<f64> {
    values
        .iter()
        .map(|v| {
            let above = values.iter().filter(|w| *w > v).count() as f64;
            let equal = values.iter().filter(|w| *w == v).count() as f64;
            above + (equal + 1.0) / 2.0
        })
        .collect()
}

/// [`RankingReversal`] of (agent, Clean, Res) triples; `None` with fewer than two agents.
///
/// # Errors
/// [`specgap_stats::StatsError`] for non-finite rates.
pub fn ranking_reversal(agents: &[(String, f64, f64)]) -> Result<Option<RankingReversal>, specgap_stats::StatsError> {
    if agents.len() < 2 {
        return Ok(None);
    }
    let clean: Vec<f64> = agents.iter().map(|a| a.1).collect();
    let res: Vec<f64> = agents.iter().map(|a| a.2).collect();
    let correlation = specgap_stats::spearman(&clean, &res)?;
    let (clean_ranks, res_ranks) = (descending_ranks(&clean), descending_ranks(&res));
    let mut ranked: Vec<AgentRank> = agents
        .iter()
        .enumerate()
        .map(|(i, (agent, c, r))| AgentRank {
            agent: agent.clone(),
            clean: *c,
            res: *r,
            clean_rank: clean_ranks[i],
            res_rank: res_ranks[i],
        })
        .collect();
    ranked.sort_by(|a, b| a.clean_rank.total_cmp(&b.clean_rank).then(a.agent.cmp(&b.agent)));
    let mut reversed = 0;
    let mut pairs = 0;
    for i in 0..agents.len() {
        for j in i + 1..agents.len() {
            pairs += 1;
            let by_clean = clean[i].total_cmp(&clean[j]);
            let by_res = res[i].total_cmp(&res[j]);
            if by_clean != std::cmp::Ordering::Equal && by_res != std::cmp::Ordering::Equal && by_clean != by_res {
                reversed += 1;
            }
        }
    }
    let defined = |v: f64| v.is_finite().then_some(v);
    Ok(Some(RankingReversal {
        agents: ranked,
        rho: defined(correlation.rho),
        p_value: defined(correlation.p_value),
        reversed_pairs: reversed,
        pairs,
    }))
}
