//! Paired comparisons of runs (or selections of runs) task by task: per-task values of each
//! measure, the mean difference B − A with a seeded paired bootstrap interval, and a two-sided
//! Wilcoxon signed-rank test, with Holm's correction over a **family** of tests — the procedure
//! of seed 002 §5.1 and App. A.6 (Tables 11 and 12(b)), paired by case.
//!
//! A family is what one call compares: every measure of the one pair `specgap compare RUN_A
//! RUN_B` is given, or every (comparison, measure) of a family file ([`FamilyFile`], TOML), so
//! that Table 11's 24 tests (8 systems × Δreq, Δremain, Δtotal of Quality) are adjusted
//! together as the paper adjusts them.
//!
//! Per-task values are means over the side's scored episodes of that task (repeats pooled).
//! Only tasks where both sides define the measure are paired; a measure with no pair is left
//! out.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use specgap_stats::{BootstrapConfig, IntervalMethod, WilcoxonOptions, bootstrap_paired, holm_adjust, wilcoxon_paired};

use crate::ReportError;
use crate::clarification::episode_clarification;
use crate::episode::{Dim, Episode, index_episodes, indicator, mean, per_task_means};
use crate::judge::OFFLINE_JUDGE;
use crate::run::RunData;

/// The `schema` field of a JSON comparison.
pub const COMPARE_SCHEMA: &str = "specgap-compare";
/// The JSON comparison's version. Version 2: a comparison holds a list of pairs
/// (`comparisons`), each with its measures, and Holm runs over the whole family.
pub const COMPARE_VERSION: u32 = 2;

/// Episodes a side keeps: `key=value` filters on report dimensions, all of which must hold.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Selection {
    /// (dimension, required value) pairs.
    pub filters: Vec<(Dim, String)>,
}

impl Selection {
    /// Parses `key=value[,key=value…]` (keys: agent, condition, start, family, task); the
    /// empty string selects everything. Errors name it as "the selection"; use
    /// [`Selection::parse_flag`] for a selection given on the command line.
    ///
    /// # Errors
    /// [`ReportError::BadSelection`] or [`ReportError::UnknownSelectionKey`].
    pub fn parse(text: &str) -> Result<Selection, ReportError> {
        Selection::parse_flag("", text)
    }

    /// [`Selection::parse`] for a selection given with `flag` (`--a`, `--b`): errors name the
    /// flag and the text, so a user who typed `--a agnt=x` reads about `--a`.
    ///
    /// # Errors
    /// [`ReportError::BadSelection`] for a part without `=`;
    /// [`ReportError::UnknownSelectionKey`] for a key that is not a dimension.
    pub fn parse_flag(flag: &str, text: &str) -> Result<Selection, ReportError> {
        let mut filters = Vec::new();
        for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (key, value) = part.split_once('=').ok_or_else(|| ReportError::BadSelection {
                flag: flag.to_string(),
                text: text.to_string(),
                part: part.to_string(),
            })?;
            let dim = Dim::parse(key).map_err(|_| ReportError::UnknownSelectionKey {
                flag: flag.to_string(),
                text: text.to_string(),
                key: key.trim().to_string(),
            })?;
            filters.push((dim, value.trim().to_string()));
        }
        Ok(Selection { filters })
    }

    pub(crate) fn matches(&self, e: &Episode<'_>) -> bool {
        self.filters.iter().all(|(dim, value)| dim.value(e) == *value)
    }

    fn describe(&self) -> String {
        if self.filters.is_empty() {
            return "all episodes".into();
        }
        self.filters.iter().map(|(d, v)| format!("{}={v}", d.as_str())).collect::<Vec<_>>().join(",")
    }
}

/// Settings of a comparison.
#[derive(Debug, Clone, PartialEq)]
pub struct CompareOptions {
    /// Episodes of run A to use.
    pub select_a: Selection,
    /// Episodes of run B to use.
    pub select_b: Selection,
    /// Seed of the bootstrap's xoshiro256++ stream (seed 002 uses 12345).
    pub seed: u64,
    /// Bootstrap resamples (seed 002 uses 2,000).
    pub resamples: usize,
    /// Two-sided confidence level of the interval.
    pub confidence: f64,
    /// Judge behind the clarification measures.
    pub judge: String,
    /// The measures to compare (names of [`MEASURE_NAMES`]); empty: every measure that applies.
    pub measures: Vec<String>,
}

impl Default for CompareOptions {
    fn default() -> Self {
        CompareOptions {
            select_a: Selection::default(),
            select_b: Selection::default(),
            seed: 12345,
            resamples: 2000,
            confidence: 0.95,
            judge: OFFLINE_JUDGE.to_string(),
            measures: Vec::new(),
        }
    }
}

/// One side of a comparison.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Side {
    /// Run directory.
    pub dir: String,
    /// The selection applied.
    pub selection: String,
    /// Scored episodes used.
    pub episodes: usize,
    /// The agent × condition × start groups pooled.
    pub groups: Vec<String>,
}

/// One task's values on both sides.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TaskPair {
    /// Task name.
    pub task: String,
    /// Value on side A.
    pub a: f64,
    /// Value on side B.
    pub b: f64,
    /// Side A's episodes behind `a` (repeats of the task).
    pub repeats_a: usize,
    /// Side B's episodes behind `b`.
    pub repeats_b: usize,
}

/// One measure compared.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MeasureComparison {
    /// Measure name.
    pub measure: String,
    /// Paired tasks.
    pub tasks: usize,
    /// Mean over paired tasks on side A.
    pub mean_a: f64,
    /// Mean over paired tasks on side B.
    pub mean_b: f64,
    /// mean_b − mean_a.
    pub difference: f64,
    /// Percentile bootstrap interval of the difference (paired by task); absent with fewer
    /// than two tasks or a degenerate distribution.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interval: Option<[f64; 2]>,
    /// Two-sided Wilcoxon signed-rank p-value of B − A (scipy defaults); absent when the test
    /// gives NaN.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wilcoxon_p: Option<f64>,
    /// Holm-adjusted p-value over every test of the family with a Wilcoxon p-value.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub holm_p: Option<f64>,
    /// Per-task values, by task.
    pub per_task: Vec<TaskPair>,
    /// The minimum detectable difference of this design at 80% power ([`crate::detectable`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detectable: Option<crate::detectable::Detectable>,
}

/// One pair of sides compared.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PairComparison {
    /// The pair's name (from the family file; `B − A` for the one pair of a call).
    pub name: String,
    /// Side A.
    pub a: Side,
    /// Side B.
    pub b: Side,
    /// The measures, in a fixed order.
    pub measures: Vec<MeasureComparison>,
}

/// The family of tests Holm adjusts together.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Family {
    /// `call` (the measures of one pair given on the command line) or the family file's path.
    pub source: String,
    /// Tests in the family: measures with a finite Wilcoxon p-value.
    pub tests: usize,
    /// Always `holm`.
    pub correction: &'static str,
}

/// A whole comparison.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    /// Always [`COMPARE_SCHEMA`].
    pub schema: &'static str,
    /// [`COMPARE_VERSION`].
    pub version: u32,
    /// Bootstrap resamples.
    pub resamples: usize,
    /// Bootstrap seed.
    pub seed: u64,
    /// Interval confidence level.
    pub confidence: f64,
    /// The family Holm adjusts over.
    pub family: Family,
    /// The pairs.
    pub comparisons: Vec<PairComparison>,
}

type Measure = (&'static str, fn(&Episode<'_>, &str) -> Option<f64>);

/// The compared measures: Score@k / Success@k for requirement-, test- and reward-scored tasks
/// (seed 000), Quality / DSR / validity for delivery tasks and the clarification measures
/// (seed 002).
const MEASURES: &[Measure] = &[
    ("Score@1", |e, _| (!e.is_delivery()).then(|| e.score_at(1))),
    ("Score@4", |e, _| (!e.is_delivery()).then(|| e.score_at(4))),
    ("Success@1", |e, _| (!e.is_delivery()).then(|| indicator(e.success_at(1)))),
    ("Success@4", |e, _| (!e.is_delivery()).then(|| indicator(e.success_at(4)))),
    ("Quality", |e, _| e.is_delivery().then(|| e.delivery_score())),
    ("DSR", |e, _| e.is_delivery().then(|| indicator(e.delivery_success()))),
    ("Valid", |e, _| e.is_delivery().then(|| indicator(e.delivery_valid()))),
    ("Recall", |e, judge| episode_clarification(e, judge)?.recall),
    ("Precision", |e, judge| episode_clarification(e, judge)?.precision),
    ("Ask-F1", |e, judge| episode_clarification(e, judge)?.ask_f1),
];

/// The names of the measures a comparison can compare, in their fixed order.
pub const MEASURE_NAMES: [&str; 10] =
    ["Score@1", "Score@4", "Success@1", "Success@4", "Quality", "DSR", "Valid", "Recall", "Precision", "Ask-F1"];

/// Compares run `b` against run `a` (differences are B − A); the family is the call's
/// measures.
///
/// # Errors
/// [`ReportError::EmptySide`] when a selection keeps no scored episode;
/// [`ReportError::UnknownMeasure`] for a measure name not in [`MEASURE_NAMES`];
/// [`ReportError::Stats`] when a statistic rejects its input.
pub fn compare(a: &RunData, b: &RunData, options: &CompareOptions) -> Result<Comparison, ReportError> {
    let pair = compare_pair("B − A", a, b, options)?;
    finish(vec![pair], "call".to_string(), options)
}

/// Holm over every test of `pairs`, and the comparison around them.
fn finish(mut pairs: Vec<PairComparison>, source: String, options: &CompareOptions) -> Result<Comparison, ReportError> {
    let tests: Vec<(usize, usize, f64)> = pairs
        .iter()
        .enumerate()
        .flat_map(|(i, pair)| pair.measures.iter().enumerate().filter_map(move |(j, m)| m.wilcoxon_p.map(|p| (i, j, p))))
        .collect();
    if !tests.is_empty() {
        let adjusted = holm_adjust(&tests.iter().map(|t| t.2).collect::<Vec<_>>())
            .map_err(|source| ReportError::Stats { measure: "Holm adjustment".into(), source })?;
        for ((i, j, _), p) in tests.iter().zip(adjusted) {
            pairs[*i].measures[*j].holm_p = Some(p);
        }
    }
    for measure in pairs.iter_mut().flat_map(|p| p.measures.iter_mut()) {
        measure.detectable = Some(crate::detectable::detectable(measure, tests.len(), options.seed));
    }
    Ok(Comparison {
        schema: COMPARE_SCHEMA,
        version: COMPARE_VERSION,
        resamples: options.resamples,
        seed: options.seed,
        confidence: options.confidence,
        family: Family { source, tests: tests.len(), correction: "holm" },
        comparisons: pairs,
    })
}

/// One pair's measures, without Holm.
fn compare_pair(name: &str, a: &RunData, b: &RunData, options: &CompareOptions) -> Result<PairComparison, ReportError> {
    for measure in &options.measures {
        if !MEASURE_NAMES.contains(&measure.as_str()) {
            return Err(ReportError::UnknownMeasure { measure: measure.clone() });
        }
    }
    let episodes = index_episodes(&[a, b]);
    let side = |run: usize, selection: &Selection| -> Vec<&Episode> {
        episodes.iter().filter(|e| e.run == run && e.is_scored() && selection.matches(e)).collect()
    };
    let side_a = side(0, &options.select_a);
    let side_b = side(1, &options.select_b);
    if side_a.is_empty() {
        return Err(ReportError::EmptySide { side: "A" });
    }
    if side_b.is_empty() {
        return Err(ReportError::EmptySide { side: "B" });
    }
    let several_submissions = side_a.iter().chain(&side_b).any(|e| e.scores.len() > 1);
    let mut measures = Vec::new();
    for (name, value) in MEASURES {
        let named = options.measures.iter().any(|m| m == name);
        if !options.measures.is_empty() && !named {
            continue;
        }
        if name.ends_with("@4") && !several_submissions && !named {
            continue;
        }
        let va = per_task_means(side_a.iter().copied(), |e| value(e, &options.judge));
        let vb = per_task_means(side_b.iter().copied(), |e| value(e, &options.judge));
        let na = per_task_counts(&side_a, |e| value(e, &options.judge));
        let nb = per_task_counts(&side_b, |e| value(e, &options.judge));
        let per_task: Vec<TaskPair> = va
            .iter()
            .filter_map(|(task, x)| {
                vb.get(task).map(|y| TaskPair {
                    task: task.clone(),
                    a: *x,
                    b: *y,
                    repeats_a: na.get(task.as_str()).copied().unwrap_or(0),
                    repeats_b: nb.get(task.as_str()).copied().unwrap_or(0),
                })
            })
            .collect();
        if per_task.is_empty() {
            continue;
        }
        measures.push(compare_measure(name, per_task, options)?);
    }
    Ok(PairComparison {
        name: name.to_string(),
        a: describe_side(a, &options.select_a, &side_a),
        b: describe_side(b, &options.select_b, &side_b),
        measures,
    })
}

/// Episodes per task where `value` is defined (the repeats behind [`per_task_means`]).
fn per_task_counts<'a>(episodes: &[&Episode<'a>], value: impl Fn(&Episode<'a>) -> Option<f64>) -> BTreeMap<&'a str, usize> {
    let mut counts = BTreeMap::new();
    for e in episodes.iter().filter(|e| value(e).is_some()) {
        *counts.entry(e.row.task.as_str()).or_insert(0) += 1;
    }
    counts
}

/// A family file (TOML): the comparisons Holm adjusts together.
///
/// ```toml
/// # Seed 002 Table 11: three contrasts for each system, Holm over all of them.
/// seed = 12345          # optional: bootstrap seed (default 12345)
/// resamples = 2000      # optional: bootstrap resamples (default 2000)
/// confidence = 0.95     # optional
/// measures = ["Quality"] # optional: default measures of every comparison (default: all)
///
/// [[comparison]]
/// name = "codex + gpt: Δreq"
/// a = { run = "runs/ablation", select = "agent=chat:gpt,condition=hidden" }
/// b = { run = "runs/main", select = "agent=chat:gpt,condition=interact-req" }
/// # measures = ["Quality", "DSR"]   # optional, overrides the default
/// ```
///
/// Run directories are relative to the file's directory. Every (comparison, measure) with a
/// finite Wilcoxon p-value is one test of the family.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FamilyFile {
    /// Bootstrap seed.
    #[serde(default)]
    pub seed: Option<u64>,
    /// Bootstrap resamples.
    #[serde(default)]
    pub resamples: Option<usize>,
    /// Confidence level of the intervals.
    #[serde(default)]
    pub confidence: Option<f64>,
    /// Default measures of every comparison.
    #[serde(default)]
    pub measures: Vec<String>,
    /// The comparisons.
    #[serde(rename = "comparison", default)]
    pub comparisons: Vec<FamilyComparison>,
}

/// One `[[comparison]]` of a [`FamilyFile`].
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FamilyComparison {
    /// Name shown in the output.
    pub name: String,
    /// Side A (the reference).
    pub a: FamilySide,
    /// Side B.
    pub b: FamilySide,
    /// Measures of this comparison; empty: the file's default.
    #[serde(default)]
    pub measures: Vec<String>,
}

/// One side of a [`FamilyComparison`].
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FamilySide {
    /// Run directory, relative to the family file.
    pub run: PathBuf,
    /// Selection (`key=value,…`); empty: every episode.
    #[serde(default)]
    pub select: String,
}

impl FamilyFile {
    /// Reads and parses a family file.
    ///
    /// # Errors
    /// [`ReportError::FamilyFile`] naming the path when it cannot be read or parsed, or has no
    /// comparison.
    pub fn load(path: &Path) -> Result<FamilyFile, ReportError> {
        let bad = |reason: String| ReportError::FamilyFile { path: path.to_path_buf(), reason };
        let text = fs_err::read_to_string(path).map_err(|e| bad(e.to_string()))?;
        let file: FamilyFile = toml::from_str(&text).map_err(|e| {
            bad(match e.span() {
                Some(span) => {
                    let line = text[..span.start.min(text.len())].matches('\n').count() + 1;
                    format!("line {line}: {}", e.message())
                }
                None => e.message().to_string(),
            })
        })?;
        if file.comparisons.is_empty() {
            return Err(bad("it has no [[comparison]]".into()));
        }
        Ok(file)
    }
}

/// Compares every pair of a family file, with Holm over the whole family. `options` gives the
/// judge and the defaults the file does not set; its selections and measures are not used.
///
/// # Errors
/// [`ReportError::FamilyFile`] for an unreadable or invalid file or a bad selection in it
/// (naming the comparison); [`ReportError::Store`] for a run that cannot be read; otherwise as
/// [`compare`], with an empty side naming its comparison.
pub fn compare_family(path: &Path, options: &CompareOptions) -> Result<Comparison, ReportError> {
    let file = FamilyFile::load(path)?;
    let base = path.parent().unwrap_or(Path::new("."));
    let mut runs: Vec<(PathBuf, RunData)> = Vec::new();
    let mut index_of = |dir: &Path| -> Result<usize, ReportError> {
        let canonical = fs_err::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
        if let Some(i) = runs.iter().position(|(p, _)| *p == canonical) {
            return Ok(i);
        }
        runs.push((canonical, RunData::load(dir)?));
        Ok(runs.len() - 1)
    };
    let settings = CompareOptions {
        seed: file.seed.unwrap_or(options.seed),
        resamples: file.resamples.unwrap_or(options.resamples),
        confidence: file.confidence.unwrap_or(options.confidence),
        ..options.clone()
    };
    let mut planned = Vec::new();
    for c in &file.comparisons {
        let selection = |side: &FamilySide, label: &str| {
            Selection::parse(&side.select).map_err(|e| ReportError::FamilyFile {
                path: path.to_path_buf(),
                reason: format!("comparison `{}`, side {label}: {e}", c.name),
            })
        };
        let pair_options = CompareOptions {
            select_a: selection(&c.a, "a")?,
            select_b: selection(&c.b, "b")?,
            measures: if c.measures.is_empty() { file.measures.clone() } else { c.measures.clone() },
            ..settings.clone()
        };
        let a = index_of(&base.join(&c.a.run))?;
        let b = index_of(&base.join(&c.b.run))?;
        planned.push((c.name.clone(), a, b, pair_options));
    }
    let mut pairs = Vec::new();
    for (name, a, b, pair_options) in planned {
        let pair = compare_pair(&name, &runs[a].1, &runs[b].1, &pair_options).map_err(|e| match e {
            ReportError::EmptySide { side } => ReportError::FamilyFile {
                path: path.to_path_buf(),
                reason: format!("comparison `{name}`: run {side} has no scored episode matching its selection"),
            },
            other => other,
        })?;
        pairs.push(pair);
    }
    finish(pairs, path.display().to_string(), &settings)
}

fn describe_side(run: &RunData, selection: &Selection, episodes: &[&Episode<'_>]) -> Side {
    let mut groups: Vec<String> = episodes.iter().map(|e| format!("{} · {} · {}", e.row.agent, e.row.condition, e.row.start)).collect();
    groups.sort();
    groups.dedup();
    Side { dir: run.dir.display().to_string(), selection: selection.describe(), episodes: episodes.len(), groups }
}

fn compare_measure(name: &str, per_task: Vec<TaskPair>, options: &CompareOptions) -> Result<MeasureComparison, ReportError> {
    let xs: Vec<f64> = per_task.iter().map(|p| p.a).collect();
    let ys: Vec<f64> = per_task.iter().map(|p| p.b).collect();
    let stats_error = |source| ReportError::Stats { measure: name.to_string(), source };
    let mean_a = mean(xs.iter().copied()).unwrap_or(0.0);
    let mean_b = mean(ys.iter().copied()).unwrap_or(0.0);
    let interval = if per_task.len() >= 2 {
        let config = BootstrapConfig {
            confidence_level: options.confidence,
            n_resamples: options.resamples,
            method: IntervalMethod::Percentile,
            seed: options.seed,
        };
        let difference = |a: &[f64], b: &[f64]| (b.iter().sum::<f64>() - a.iter().sum::<f64>()) / a.len() as f64;
        let i = bootstrap_paired(&xs, &ys, difference, &config).map_err(stats_error)?;
        (i.low.is_finite() && i.high.is_finite()).then_some([i.low, i.high])
    } else {
        None
    };
    let test = wilcoxon_paired(&ys, &xs, &WilcoxonOptions::default()).map_err(stats_error)?;
    Ok(MeasureComparison {
        measure: name.to_string(),
        tasks: per_task.len(),
        mean_a,
        mean_b,
        difference: mean_b - mean_a,
        interval,
        wilcoxon_p: test.p_value.is_finite().then_some(test.p_value),
        holm_p: None,
        per_task,
        detectable: None,
    })
}

fn opt(v: Option<f64>, digits: usize) -> String {
    v.map_or_else(|| crate::render::ABSENT.to_string(), |v| format!("{v:.digits$}"))
}

/// The comparison as Markdown: the family, then per pair its sides, summary table and per-task
/// values.
pub fn render_comparison_markdown(c: &Comparison) -> String {
    let mut out = String::from("# Comparison B − A\n\n");
    let _ = write!(
        out,
        "Paired by task. Interval: {:.0}% percentile bootstrap of the mean difference ({} resamples, seed {}). Wilcoxon signed-rank, two-sided; Holm over the family's {} tests ({}).\n\n",
        c.confidence * 100.0,
        c.resamples,
        c.seed,
        c.family.tests,
        if c.family.source == "call" { "every measure of this call".to_string() } else { format!("family file `{}`", c.family.source) }
    );
    for pair in &c.comparisons {
        if c.comparisons.len() > 1 {
            let _ = write!(out, "## {}\n\n", pair.name);
        }
        render_pair(&mut out, pair);
    }
    out
}

fn render_pair(out: &mut String, pair: &PairComparison) {
    for (label, side) in [("A", &pair.a), ("B", &pair.b)] {
        let _ = writeln!(
            out,
            "- **{label}**: `{}` ({}; {} scored episodes; groups: {})",
            side.dir,
            side.selection,
            side.episodes,
            side.groups.join("; ")
        );
    }
    out.push_str("\n| measure | tasks | A | B | B − A | interval | Wilcoxon p | Holm p |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
    for m in &pair.measures {
        let interval = m.interval.map_or_else(|| crate::render::ABSENT.to_string(), |[l, h]| format!("[{l:+.4}, {h:+.4}]"));
        let _ = writeln!(
            out,
            "| {} | {} | {:.4} | {:.4} | {:+.4} | {} | {} | {} |",
            m.measure,
            m.tasks,
            m.mean_a,
            m.mean_b,
            m.difference,
            interval,
            opt(m.wilcoxon_p, 4),
            opt(m.holm_p, 4)
        );
    }
    crate::detectable::render_detectable(out, &pair.measures);
    out.push_str("\nPer-task values:\n\n");
    let mut by_task: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for (i, m) in pair.measures.iter().enumerate() {
        for p in &m.per_task {
            let row = by_task.entry(p.task.as_str()).or_insert_with(|| vec![crate::render::ABSENT.to_string(); pair.measures.len()]);
            row[i] = format!("{:.4} → {:.4}", p.a, p.b);
        }
    }
    let names: Vec<&str> = pair.measures.iter().map(|m| m.measure.as_str()).collect();
    let _ = writeln!(out, "| task | {} |", names.join(" | "));
    let _ = writeln!(out, "| --- |{}", " ---: |".repeat(names.len()));
    for (task, cells) in by_task {
        let _ = writeln!(out, "| {task} | {} |", cells.join(" | "));
    }
    out.push('\n');
}

/// The comparison as pretty JSON (schema `specgap-compare`, docs/report-schema.md).
///
/// # Errors
/// [`ReportError::Json`].
pub fn render_comparison_json(c: &Comparison) -> Result<String, ReportError> {
    let mut text = crate::render::unsigned_zeros(&serde_json::to_string_pretty(c).map_err(ReportError::Json)?);
    text.push('\n');
    Ok(text)
}
