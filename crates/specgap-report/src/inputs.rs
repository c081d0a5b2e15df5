//! Checks on the runs given to one report, before their episodes are trusted as a sample:
//!
//! - [`distinct_run_dirs`]: a run directory given twice is an error (its episodes would count
//!   twice and pose as seed replicates of themselves, ± 0).
//! - [`distinct_episodes`]: an episode held by two runs (a run and a merge holding it, two runs
//!   of one configuration and seed) is an error for the same reason.
//! - a run that is a shard (`run.toml` `shard`) holds only part of its run's plan: warning.
//! - a run whose store lacks results for part of its plan (interrupted, stopped by
//!   `--max-cost` or `--max-tokens`, merged from some shards only): warning with the count ([`planned_episode_ids`]).
//! - runs pooled as seed replicates (seed 000 §5.6: one replicate per run) whose
//!   configurations differ in more than the seed, or that share the seed: warning naming the
//!   field.
//!
//! Warnings are sentences for `Report::warnings` (docs/report-schema.md lists them).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use specgap_protocol::package::Budget;
use specgap_protocol::run::{ComponentRef, EpisodeKey, RunConfig, TaskRef};
use specgap_store::Status;

use crate::ReportError;
use crate::episode::Dim;
use crate::keyed::{KeyedMap, KeyedSet};
use crate::run::RunData;

/// Refuses a run directory given more than once. Directories are compared canonicalized
/// (symlinks, `.`/`..`, trailing slashes resolved); one that cannot be canonicalized (it does
/// not exist) is compared as given, and loading it reports the real problem.
///
/// # Errors
/// [`ReportError::DuplicateRun`] naming the directory as first given and as given again.
pub fn distinct_run_dirs<P: AsRef<Path>>(dirs: &[P]) -> Result<(), ReportError> {
    let mut seen: KeyedMap<PathBuf, &Path> = KeyedMap::default();
    for dir in dirs.iter().map(AsRef::as_ref) {
        let canonical = fs_err::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
        if let Some(first) = seen.insert(canonical, dir) {
            return Err(ReportError::DuplicateRun { dir: first.to_path_buf(), again: dir.to_path_buf() });
        }
    }
    Ok(())
}

/// Checks that no episode is held by two of the runs: a report would count it twice (and
/// take it for a seed replicate of itself). A merge keeps one copy of identical episodes, so
/// the message points there.
///
/// # Errors
/// [`ReportError::SharedEpisodes`] for the first pair of runs holding one episode.
pub fn distinct_episodes(runs: &[RunData]) -> Result<(), ReportError> {
    let mut holder: KeyedMap<&str, usize> = KeyedMap::default();
    for (index, run) in runs.iter().enumerate() {
        let mut shared: BTreeMap<usize, (usize, &str)> = BTreeMap::new();
        for row in &run.rows.episodes {
            if let Some(&first) = holder.get(row.id.as_str()) {
                let entry = shared.entry(first).or_insert((0, row.id.as_str()));
                entry.0 += 1;
            } else {
                holder.insert(row.id.as_str(), index);
            }
        }
        if let Some((&first, &(count, example))) = shared.iter().next() {
            return Err(ReportError::SharedEpisodes {
                first: runs[first].dir.clone(),
                again: run.dir.clone(),
                shared: count,
                example: example.to_string(),
            });
        }
    }
    Ok(())
}

/// The ids of the episodes `run.toml` plans for this store, rebuilt the way `specgap run`
/// plans (docs/decisions.md "Runner: plan order and shards"): tasks × agents × conditions ×
/// starts (`residual:all` expanded to the task's residual states, sorted) × repeats in that
/// order, without the combinations the store records as not applicable, and for a shard `i/n`
/// the positions `i − 1` mod `n`. Ids are [`EpisodeKey::id`], so they match the store's.
///
/// # Errors
/// Why the plan cannot be rebuilt, as a phrase: no user in `run.toml`, a shard count of 0,
/// or `residual:all` on a task whose package cannot be read (its states are unknown).
pub fn planned_episode_ids(run: &RunData) -> Result<BTreeSet<String>, String> {
    Ok(planned_episodes(run)?.iter().map(EpisodeKey::id).collect())
}

/// The keys of the episodes `run.toml` plans for this store, in plan order (see
/// [`planned_episode_ids`], which gives their ids). When `run.toml` records the plan's hash
/// (`plan_hash`), the rebuilt unsharded plan must have it.
///
/// # Errors
/// As [`planned_episode_ids`], and a rebuilt plan whose hash differs from `plan_hash` (a
/// package changed since the run, or another specgap build planned it).
pub fn planned_episodes(run: &RunData) -> Result<Vec<EpisodeKey>, String> {
    let config = &run.config;
    let user = config.users.first().ok_or("run.toml names no user")?;
    let not_applicable: KeyedSet<(&str, &str, &str, &str)> =
        run.rows.not_applicable.iter().map(|n| (n.task.as_str(), n.agent.as_str(), n.condition.as_str(), n.start.as_str())).collect();
    let owns = shard_filter(config.shard)?;
    let mut all = Vec::new();
    for task in &config.tasks {
        let starts = expanded_starts(run, task)?;
        for agent in &config.agents {
            for condition in &config.conditions {
                for start in &starts {
                    let combination = (task.name.as_str(), agent.label(), condition.as_str(), start.as_str());
                    if not_applicable.contains(&combination) {
                        continue;
                    }
                    for repeat in 0..config.repeats {
                        all.push(EpisodeKey {
                            task: task.name.clone(),
                            task_hash: task.hash.clone(),
                            agent: agent.label().to_string(),
                            agent_hash: agent.hash.clone(),
                            user_hash: user.hash.clone(),
                            condition: condition.clone(),
                            start: start.clone(),
                            repeat,
                            seed: config.seed,
                        });
                    }
                }
            }
        }
    }
    if let Some(stored) = &config.plan_hash {
        let ids: Vec<String> = all.iter().map(EpisodeKey::id).collect();
        let rebuilt =
            specgap_protocol::run::plan_hash(ids.iter().map(String::as_str), not_applicable.iter().map(|&(t, a, c, s)| [t, a, c, s]));
        if rebuilt != *stored {
            return Err(format!(
                "the plan rebuilt from run.toml has hash {rebuilt}, not the recorded plan_hash {stored} (a package changed since the run, or another specgap build planned it)"
            ));
        }
    }
    Ok(all.into_iter().enumerate().filter(|(position, _)| owns(*position)).map(|(_, key)| key).collect())
}

/// Which plan positions a store holds: all, or shard `i/n`'s.
fn shard_filter(shard: Option<[u32; 2]>) -> Result<impl Fn(usize) -> bool, String> {
    let (index, count) = match shard {
        None => (1, 1),
        Some([_, 0]) => return Err("run.toml names a shard of 0 shards".into()),
        Some([index, count]) => (index as usize, count as usize),
    };
    Ok(move |position: usize| position % count + 1 == index)
}

/// The run's starts for one task, `residual:all` expanded to the task's residual states.
fn expanded_starts(run: &RunData, task: &TaskRef) -> Result<Vec<String>, String> {
    let mut starts = Vec::new();
    for spec in &run.config.starts {
        if spec == "residual:all" {
            let context = run
                .tasks
                .get(&task.name)
                .ok_or_else(|| format!("the package of task {} cannot be read to expand residual:all", task.name))?;
            starts.extend(context.states.keys().map(|id| format!("residual:{id}")));
        } else {
            starts.push(spec.clone());
        }
    }
    Ok(starts)
}

/// Every input warning of a report on `runs` grouped by `dims`; `pooled` holds, per group of
/// the main table, the runs with scored episodes in it (the seed replicates of that group).
pub(crate) fn input_warnings(runs: &[RunData], dims: &[Dim], pooled: &[BTreeSet<usize>]) -> Vec<String> {
    let mut warnings = Vec::new();
    for run in runs {
        warnings.extend(shard_warning(run));
        warnings.extend(missing_results_warning(run));
    }
    warnings.extend(replicate_warnings(runs, dims, pooled));
    warnings
}

fn shard_warning(run: &RunData) -> Option<String> {
    let [index, count] = run.config.shard?;
    Some(format!(
        "run {} is shard {index}/{count} of a sharded run: it holds only that shard's episodes, and shards are not seed replicates — join the shards with `specgap merge SHARD... --out DIR` and report the merged run",
        run.dir.display()
    ))
}

/// Episodes without a result: absent from the store, or begun and never ended (`running`,
/// `interrupted`). Finished episodes and those ended by an error have their result.
fn missing_results_warning(run: &RunData) -> Option<String> {
    let open = |status: Status| matches!(status, Status::Running | Status::Interrupted);
    let stored: KeyedMap<&str, Status> = run.rows.episodes.iter().map(|e| (e.id.as_str(), e.status)).collect();
    let dir = run.dir.display();
    // A run still going is not to be resumed: a second runner would be refused.
    let resume = if specgap_store::runner_alive(&run.dir).unwrap_or(false) {
        "a specgap process is still running it; report again when it ends".to_string()
    } else {
        format!("resume with `specgap run --resume {}`", shell_word(&dir.to_string()))
    };
    let planned = planned_episode_ids(run).and_then(|planned| {
        if stored.keys().all(|id| planned.contains(*id)) {
            Ok(planned)
        } else {
            Err("the store holds episodes its run.toml does not plan".to_string())
        }
    });
    match planned {
        Ok(planned) => {
            let absent = planned.iter().filter(|id| !stored.contains_key(id.as_str())).count();
            let unfinished = stored.values().filter(|s| open(**s)).count();
            let missing = absent + unfinished;
            if missing == 0 {
                return None;
            }
            let not_merged = run.config.merge.as_ref().filter(|m| absent > 0 && !m.missing.is_empty());
            let mut parts = Vec::new();
            if absent > 0 {
                parts.push(match not_merged {
                    Some(record) => {
                        format!("{absent} absent from the store, which was merged without {}", shards_text(&record.missing, record.shards))
                    }
                    None => format!("{absent} absent from the store"),
                });
            }
            if unfinished > 0 {
                parts.push(format!("{unfinished} interrupted or still running"));
            }
            let verb = if missing == 1 { "has" } else { "have" };
            let or_merge = if not_merged.is_some() {
                format!(", or merge it with the missing shards (`specgap merge {} SHARD... --out NEW`)", shell_word(&dir.to_string()))
            } else {
                String::new()
            };
            Some(format!(
                "run {dir}: {missing} of {} planned episodes {verb} no result ({}); the measures use the other {} — {resume}{or_merge}",
                planned.len(),
                parts.join(", "),
                planned.len() - missing
            ))
        }
        Err(reason) => {
            let unfinished = stored.values().filter(|s| open(**s)).count();
            (unfinished > 0).then(|| {
                let noun = if unfinished == 1 { "episode" } else { "episodes" };
                format!(
                    "run {dir}: {unfinished} {noun} unfinished (interrupted or still running); episodes that never started are not counted because {reason} — {resume}"
                )
            })
        }
    }
}

/// `shard 3 of 4` or `shards 2, 4 of 4`.
fn shards_text(shards: &[u32], count: u32) -> String {
    let numbers: Vec<String> = shards.iter().map(u32::to_string).collect();
    let noun = if shards.len() == 1 { "shard" } else { "shards" };
    format!("{noun} {} of {count}", numbers.join(", "))
}

/// Quotes a path for a POSIX shell when it holds anything but plain path characters.
fn shell_word(text: &str) -> String {
    let plain = !text.is_empty() && text.chars().all(|c| c.is_ascii_alphanumeric() || "/._-+:=@".contains(c));
    if plain { text.to_string() } else { format!("'{}'", text.replace('\'', r"'\''")) }
}

/// Pairs each run with the earliest run it is pooled with in some group, then says how their
/// configurations differ in a way that matters to that pooling.
fn replicate_warnings(runs: &[RunData], dims: &[Dim], pooled: &[BTreeSet<usize>]) -> Vec<String> {
    let mut warnings = Vec::new();
    for (b, run_b) in runs.iter().enumerate().skip(1) {
        let partner = pooled.iter().filter(|set| set.contains(&b)).filter_map(|set| set.iter().copied().find(|a| *a < b)).min();
        let Some(a) = partner else { continue };
        let run_a = &runs[a];
        let names = (run_a.dir.display().to_string(), run_b.dir.display().to_string());
        let both_whole = run_a.config.shard.is_none() && run_b.config.shard.is_none();
        if both_whole && run_a.config.seed == run_b.config.seed {
            warnings.push(format!(
                "runs {} and {} are pooled as seed replicates but have the same seed ({}): they are not independent replicates (is one a copy of the other?) — give each replicate run its own --seed",
                names.0, names.1, run_a.config.seed
            ));
        }
        for (field, detail) in config_differences(&run_a.config, &run_b.config, dims, &names) {
            warnings.push(format!(
                "runs {} and {} are pooled as seed replicates but differ in {field} ({detail}), not only in the seed: their mean ± sd mixes configurations",
                names.0, names.1
            ));
        }
    }
    warnings
}

/// The fields of `run.toml` in which `a` and `b` differ beyond the seed, with a short account
/// of the difference. Ignored: `seed`, `shard` and `tasks[].path` (as `specgap merge` does),
/// and `retries` (it repeats failed attempts, it does not change what is measured). For a list
/// whose dimension is in `dims` (tasks, agents, conditions, starts), entries present in one run
/// only are never pooled with the other run, so only same-named entries with different content
/// count.
fn config_differences(a: &RunConfig, b: &RunConfig, dims: &[Dim], names: &(String, String)) -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    let mut scalar = |field: &'static str, x: String, y: String| {
        if x != y {
            out.push((field, format!("{}: {x}, {}: {y}", names.0, names.1)));
        }
    };
    scalar("specgap_version", a.specgap_version.clone(), b.specgap_version.clone());
    scalar("protocol_version", a.protocol_version.to_string(), b.protocol_version.to_string());
    scalar("repeats", a.repeats.to_string(), b.repeats.to_string());
    scalar("sandbox", a.sandbox.to_string(), b.sandbox.to_string());
    scalar("budget", budget_text(&a.budget), budget_text(&b.budget));
    let rounds = |r: Option<u32>| r.map_or_else(|| "default".to_string(), |n| n.to_string());
    scalar("clarification_rounds", rounds(a.clarification_rounds), rounds(b.clarification_rounds));
    let grouped = |dim: Dim| dims.contains(&dim);
    let tasks = |c: &RunConfig| -> BTreeMap<String, String> { c.tasks.iter().map(|t| (t.name.clone(), t.hash.clone())).collect() };
    let components =
        |list: &[ComponentRef]| -> BTreeMap<String, String> { list.iter().map(|c| (c.label().to_string(), c.hash.clone())).collect() };
    let plain = |list: &[String]| -> BTreeMap<String, String> { list.iter().map(|s| (s.clone(), String::new())).collect() };
    let lists = [
        ("tasks", tasks(a), tasks(b), grouped(Dim::Task), "different content"),
        ("agents", components(&a.agents), components(&b.agents), grouped(Dim::Agent), "configured differently"),
        ("users", components(&a.users), components(&b.users), false, "configured differently"),
        ("conditions", plain(&a.conditions), plain(&b.conditions), grouped(Dim::Condition), ""),
        ("starts", plain(&a.starts), plain(&b.starts), grouped(Dim::Start), ""),
    ];
    for (field, x, y, is_grouped, changed_word) in lists {
        if let Some(detail) = list_difference(&x, &y, is_grouped, changed_word, names) {
            out.push((field, detail));
        }
    }
    out
}

/// How two name → content maps differ, or `None` when they do not in a way that matters:
/// with `grouped`, names in one map only are left out (they form groups of their own).
fn list_difference(
    x: &BTreeMap<String, String>,
    y: &BTreeMap<String, String>,
    grouped: bool,
    changed_word: &str,
    names: &(String, String),
) -> Option<String> {
    let only = |p: &BTreeMap<String, String>, q: &BTreeMap<String, String>| -> Vec<String> {
        p.keys().filter(|k| !q.contains_key(*k)).cloned().collect()
    };
    let changed: Vec<String> = x.iter().filter(|(k, v)| y.get(*k).is_some_and(|w| w != *v)).map(|(k, _)| k.clone()).collect();
    let mut parts = Vec::new();
    if !grouped {
        let (only_x, only_y) = (only(x, y), only(y, x));
        if !only_x.is_empty() {
            parts.push(format!("only in {}: {}", names.0, only_x.join(", ")));
        }
        if !only_y.is_empty() {
            parts.push(format!("only in {}: {}", names.1, only_y.join(", ")));
        }
    }
    if !changed.is_empty() {
        parts.push(format!("{changed_word}: {}", changed.join(", ")));
    }
    (!parts.is_empty()).then(|| parts.join("; "))
}

/// The budget flags of a run as they were given, or `no budget flags`.
fn budget_text(budget: &Budget) -> String {
    let mut parts = Vec::new();
    if let Some(turns) = budget.turns {
        parts.push(format!("--turns {turns}"));
    }
    if let Some(calls) = budget.tool_calls {
        parts.push(format!("--tool-calls {calls}"));
    }
    if let Some(secs) = budget.wall_sec {
        parts.push(format!("--wall-sec {secs}"));
    }
    if parts.is_empty() { "no budget flags".into() } else { parts.join(" ") }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shard_filter_keeps_positions_of_the_shard() {
        let second_of_three = shard_filter(Some([2, 3])).unwrap();
        let kept: Vec<usize> = (0..7).filter(|p| second_of_three(*p)).collect();
        assert_eq!(kept, [1, 4]);
        let whole = shard_filter(None).unwrap();
        assert_eq!((0..4).filter(|p| whole(*p)).count(), 4);
        assert_eq!(shard_filter(Some([1, 0])).err().unwrap(), "run.toml names a shard of 0 shards");
    }

    #[test]
    fn shell_word_quotes_only_when_needed() {
        assert_eq!(shell_word("runs/2024-01-01"), "runs/2024-01-01");
        assert_eq!(shell_word("my runs/it's"), r"'my runs/it'\''s'");
    }

    #[test]
    fn list_difference_ignores_one_sided_entries_of_a_grouped_dimension() {
        let names = ("A".to_string(), "B".to_string());
        let map =
            |pairs: &[(&str, &str)]| -> BTreeMap<String, String> { pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect() };
        let x = map(&[("gold", "h1"), ("chat:q", "h2")]);
        let y = map(&[("gold", "h1"), ("chat:q", "h3"), ("literal", "h4")]);
        assert_eq!(
            list_difference(&x, &y, false, "configured differently", &names).as_deref(),
            Some("only in B: literal; configured differently: chat:q")
        );
        assert_eq!(list_difference(&x, &y, true, "configured differently", &names).as_deref(), Some("configured differently: chat:q"));
        let same = map(&[("gold", "h1")]);
        let more = map(&[("gold", "h1"), ("literal", "h4")]);
        assert_eq!(list_difference(&same, &more, true, "", &names), None);
    }

    #[test]
    fn budget_text_lists_given_flags() {
        assert_eq!(budget_text(&Budget::default()), "no budget flags");
        let budget = Budget { turns: Some(30), tool_calls: None, wall_sec: Some(600) };
        assert_eq!(budget_text(&budget), "--turns 30 --wall-sec 600");
    }
}
