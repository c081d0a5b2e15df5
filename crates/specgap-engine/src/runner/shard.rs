//! Shards of a run (`--shard i/n`, `--shard auto`): which planned episodes one process runs,
//! and where a batch scheduler says which shard a process is (docs/scale-out.md).
//!
//! `--shard auto` reads the scheduler's environment:
//!
//! | scheduler | variables | shard (0-based) | count |
//! | --- | --- | --- | --- |
//! | Kubernetes Indexed Job | `JOB_COMPLETION_INDEX` | the index | `--shards N` or `SPECGAP_SHARDS` (the Job's `completions`; Kubernetes does not expose it) |
//! | Slurm job array | `SLURM_ARRAY_TASK_ID`, `_MIN`, `_STEP`, `_COUNT` (and `_MAX` when set) | (ID − MIN) / STEP | `SLURM_ARRAY_TASK_COUNT` |
//!
//! The 0-based index becomes the 1-based `i` of `--shard i/n` (index + 1). A missing or
//! inconsistent environment is an error naming the variables, never a guess: a shard that
//! guessed wrong would run another shard's episodes.

use crate::runner::RunnerError;

/// Shard `index` of `count` (`--shard i/n`, 1-based `index`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    /// 1-based shard number, `1..=count`.
    pub index: u32,
    /// Number of shards, at least 1.
    pub count: u32,
}

/// The Kubernetes Indexed Job's 0-based completion index.
pub const JOB_COMPLETION_INDEX: &str = "JOB_COMPLETION_INDEX";
/// The shard count of a Kubernetes Indexed Job (its `completions`), or a cross-check of a
/// Slurm array's `SLURM_ARRAY_TASK_COUNT`; `--shards N` takes its place.
pub const SPECGAP_SHARDS: &str = "SPECGAP_SHARDS";
/// The Slurm array task's id.
pub const SLURM_ARRAY_TASK_ID: &str = "SLURM_ARRAY_TASK_ID";
/// The number of tasks of the Slurm array.
pub const SLURM_ARRAY_TASK_COUNT: &str = "SLURM_ARRAY_TASK_COUNT";
/// The lowest task id of the Slurm array.
pub const SLURM_ARRAY_TASK_MIN: &str = "SLURM_ARRAY_TASK_MIN";
/// The highest task id of the Slurm array.
pub const SLURM_ARRAY_TASK_MAX: &str = "SLURM_ARRAY_TASK_MAX";
/// The step between the Slurm array's task ids.
pub const SLURM_ARRAY_TASK_STEP: &str = "SLURM_ARRAY_TASK_STEP";
/// Set in every Slurm job, array or not.
pub const SLURM_JOB_ID: &str = "SLURM_JOB_ID";

/// The scheduler `--shard auto` found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheduler {
    /// A Kubernetes Indexed Job (`JOB_COMPLETION_INDEX`).
    Kubernetes,
    /// A Slurm job array (`SLURM_ARRAY_TASK_*`).
    Slurm,
}

impl Scheduler {
    /// "Kubernetes Indexed Job" or "Slurm array".
    pub fn describe(self) -> &'static str {
        match self {
            Scheduler::Kubernetes => "Kubernetes Indexed Job",
            Scheduler::Slurm => "Slurm array",
        }
    }
}

/// The shard `--shard auto` read, where from, and the variables it read (`NAME=value`, for
/// the run's log).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScheduledShard {
    /// The shard, 1-based as `--shard i/n`.
    pub shard: Shard,
    /// Which scheduler's variables gave it.
    pub scheduler: Scheduler,
    /// The variables read, `NAME=value`, in the order read.
    pub read: Vec<String>,
}

/// Why `--shard auto` cannot tell the shard.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShardEnvError {
    /// Neither scheduler's variables are set.
    #[error(
        "--shard auto found no batch scheduler: neither {JOB_COMPLETION_INDEX} (a Kubernetes Indexed Job) nor {SLURM_ARRAY_TASK_ID} (a Slurm array) is set{}",
        if *.slurm_job { "; SLURM_JOB_ID is set, so this is a Slurm job that is not an array: submit it with sbatch --array=0-<N-1>" } else { "" }
    )]
    NoScheduler {
        /// Whether `SLURM_JOB_ID` is set (a Slurm job without `--array`).
        slurm_job: bool,
    },
    /// Both schedulers' variables are set.
    #[error(
        "--shard auto cannot tell the scheduler: both {JOB_COMPLETION_INDEX} and {SLURM_ARRAY_TASK_ID} are set; unset one, or give the shard as --shard i/n"
    )]
    BothSchedulers,
    /// A variable the scheduler sets is missing.
    #[error("--shard auto: {variable} is not set, but {scheduler} variables are ({present}); {hint}")]
    Missing {
        /// The missing variable.
        variable: &'static str,
        /// Which scheduler's variables are present.
        scheduler: &'static str,
        /// The variables that are set, `NAME=value`.
        present: String,
        /// What to do.
        hint: &'static str,
    },
    /// A variable is not a non-negative integer (or the count is 0).
    #[error("--shard auto: {variable}={value:?} is not {expected}")]
    NotANumber {
        /// The variable (or `--shards`).
        variable: &'static str,
        /// Its value.
        value: String,
        /// What it should be.
        expected: &'static str,
    },
    /// Two sources of the shard count disagree.
    #[error("--shard auto: the shard count {first} ({first_source}) disagrees with {second} ({second_source})")]
    CountsDisagree {
        /// One count.
        first: u32,
        /// Where it came from.
        first_source: &'static str,
        /// The other count.
        second: u32,
        /// Where it came from.
        second_source: &'static str,
    },
    /// The index is not below the count.
    #[error("--shard auto: shard index {index} from {read} is not below the shard count {count}")]
    OutOfRange {
        /// The 0-based index.
        index: u64,
        /// The count.
        count: u32,
        /// The variables it was computed from, `NAME=value`.
        read: String,
    },
    /// The Slurm array's ids are not the evenly stepped range `MIN, MIN+STEP, …` of `COUNT`
    /// ids (a list such as `--array=1,4,9`), so its ids do not number shards.
    #[error(
        "--shard auto: the Slurm array is not an evenly stepped range ({read}); the task's shard (ID − MIN) / STEP must be a whole number below COUNT — submit with --array=0-<N-1> (optionally :STEP)"
    )]
    UnevenArray {
        /// The variables read, `NAME=value`.
        read: String,
    },
}

impl Shard {
    /// Parses `i/n` with `1 <= i <= n`.
    ///
    /// # Errors
    /// [`RunnerError::BadShard`] naming the text.
    pub fn parse(text: &str) -> Result<Self, RunnerError> {
        let bad = || RunnerError::BadShard(text.to_string());
        let (i, n) = text.split_once('/').ok_or_else(bad)?;
        let index: u32 = i.trim().parse().map_err(|_| bad())?;
        let count: u32 = n.trim().parse().map_err(|_| bad())?;
        if count == 0 || index == 0 || index > count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }

    /// Whether the episode at 0-based `position` of the full plan belongs to this shard:
    /// `position mod count == index − 1`. Positions count applicable episodes only, in plan
    /// order, so shards get near-equal shares and every shard of one run (same suite, same
    /// flags) agrees on them.
    pub fn owns(&self, position: usize) -> bool {
        position % self.count as usize == (self.index - 1) as usize
    }

    /// `[i, n]`, as `run.toml` stores it.
    pub fn as_pair(&self) -> [u32; 2] {
        [self.index, self.count]
    }

    /// The shard a batch scheduler gives this process (`--shard auto`; see the module
    /// documentation for the variables). `env` looks a variable up (`std::env::var(..).ok()`
    /// in the binary); a variable set to the empty string counts as unset. `shards` is
    /// `--shards N`, which names a Kubernetes Job's count and must agree with
    /// `SPECGAP_SHARDS` and a Slurm array's `SLURM_ARRAY_TASK_COUNT` when those are set.
    ///
    /// # Errors
    /// [`ShardEnvError`]: no scheduler or both, a missing or malformed variable, counts that
    /// disagree, an index not below the count, a Slurm array whose ids are not an evenly
    /// stepped range.
    pub fn from_scheduler(env: impl Fn(&str) -> Option<String>, shards: Option<u32>) -> Result<ScheduledShard, ShardEnvError> {
        let get = |name: &str| env(name).filter(|v| !v.is_empty());
        if shards == Some(0) {
            return Err(ShardEnvError::NotANumber { variable: "--shards", value: "0".into(), expected: "a shard count of at least 1" });
        }
        let declared = declared_count(get(SPECGAP_SHARDS), shards)?;
        match (get(JOB_COMPLETION_INDEX), get(SLURM_ARRAY_TASK_ID)) {
            (Some(_), Some(_)) => Err(ShardEnvError::BothSchedulers),
            (Some(index), None) => kubernetes(&index, declared),
            (None, Some(_)) => slurm(&get, declared),
            (None, None) => Err(ShardEnvError::NoScheduler { slurm_job: get(SLURM_JOB_ID).is_some() }),
        }
    }
}

/// The count `--shards` and `SPECGAP_SHARDS` give, with where it came from.
fn declared_count(variable: Option<String>, flag: Option<u32>) -> Result<Option<(u32, &'static str)>, ShardEnvError> {
    let from_variable = variable
        .map(|value| match value.trim().parse::<u32>() {
            Ok(n) if n >= 1 => Ok(n),
            _ => Err(ShardEnvError::NotANumber { variable: SPECGAP_SHARDS, value, expected: "a shard count of at least 1" }),
        })
        .transpose()?;
    match (flag, from_variable) {
        (Some(a), Some(b)) if a != b => {
            Err(ShardEnvError::CountsDisagree { first: a, first_source: "--shards", second: b, second_source: SPECGAP_SHARDS })
        }
        (Some(n), _) => Ok(Some((n, "--shards"))),
        (None, Some(n)) => Ok(Some((n, SPECGAP_SHARDS))),
        (None, None) => Ok(None),
    }
}

fn kubernetes(index_text: &str, declared: Option<(u32, &'static str)>) -> Result<ScheduledShard, ShardEnvError> {
    let index = number(JOB_COMPLETION_INDEX, index_text)?;
    let read = format!("{JOB_COMPLETION_INDEX}={index_text}");
    let Some((count, source)) = declared else {
        return Err(ShardEnvError::Missing {
            variable: SPECGAP_SHARDS,
            scheduler: "Kubernetes Indexed Job",
            present: read,
            hint: "Kubernetes does not tell a pod the Job's completions: pass --shards N or set SPECGAP_SHARDS to it",
        });
    };
    let shard = shard_of(index, count, &read)?;
    Ok(ScheduledShard { shard, scheduler: Scheduler::Kubernetes, read: vec![read, format!("{source}={count}")] })
}

fn slurm(get: &impl Fn(&str) -> Option<String>, declared: Option<(u32, &'static str)>) -> Result<ScheduledShard, ShardEnvError> {
    let present = || {
        [SLURM_ARRAY_TASK_ID, SLURM_ARRAY_TASK_COUNT, SLURM_ARRAY_TASK_MIN, SLURM_ARRAY_TASK_MAX, SLURM_ARRAY_TASK_STEP]
            .iter()
            .filter_map(|name| get(name).map(|v| format!("{name}={v}")))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let required = |name: &'static str| {
        let value = get(name).ok_or_else(|| ShardEnvError::Missing {
            variable: name,
            scheduler: "Slurm array",
            present: present(),
            hint: "Slurm sets all of SLURM_ARRAY_TASK_ID, _COUNT, _MIN and _STEP in an array task (sbatch --array); is this an older Slurm, or were some unset?",
        })?;
        Ok::<_, ShardEnvError>((number(name, &value)?, value))
    };
    let (id, _) = required(SLURM_ARRAY_TASK_ID)?;
    let (count, count_text) = required(SLURM_ARRAY_TASK_COUNT)?;
    let (min, _) = required(SLURM_ARRAY_TASK_MIN)?;
    let (step, _) = required(SLURM_ARRAY_TASK_STEP)?;
    let max = get(SLURM_ARRAY_TASK_MAX).map(|v| number(SLURM_ARRAY_TASK_MAX, &v)).transpose()?;
    let read = present();
    let count = u32::try_from(count).ok().filter(|n| *n >= 1).ok_or(ShardEnvError::NotANumber {
        variable: SLURM_ARRAY_TASK_COUNT,
        value: count_text,
        expected: "a task count of at least 1",
    })?;
    if let Some((declared, source)) = declared
        && declared != count
    {
        return Err(ShardEnvError::CountsDisagree {
            first: declared,
            first_source: source,
            second: count,
            second_source: SLURM_ARRAY_TASK_COUNT,
        });
    }
    let uneven = || ShardEnvError::UnevenArray { read: read.clone() };
    if step == 0 || id < min || (id - min) % step != 0 {
        return Err(uneven());
    }
    // With MAX known, the ids must be exactly MIN, MIN+STEP, …, MAX: COUNT of them.
    if let Some(max) = max
        && (max < min || (max - min) % step != 0 || (max - min) / step + 1 != u64::from(count))
    {
        return Err(uneven());
    }
    let shard = shard_of((id - min) / step, count, &read)?;
    let read = read.split(", ").map(str::to_string).collect();
    Ok(ScheduledShard { shard, scheduler: Scheduler::Slurm, read })
}

fn number(variable: &'static str, value: &str) -> Result<u64, ShardEnvError> {
    value.trim().parse().map_err(|_| ShardEnvError::NotANumber { variable, value: value.to_string(), expected: "a non-negative integer" })
}

/// The 1-based shard of 0-based `index` among `count`.
fn shard_of(index: u64, count: u32, read: &str) -> Result<Shard, ShardEnvError> {
    match u32::try_from(index) {
        Ok(i) if i < count => Ok(Shard { index: i + 1, count }),
        _ => Err(ShardEnvError::OutOfRange { index, count, read: read.to_string() }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let pairs: Vec<(String, String)> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        move |name| pairs.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
    }

    fn slurm_env(id: &str, count: &str, min: &str, step: &str) -> Vec<(&'static str, String)> {
        vec![
            (SLURM_JOB_ID, "77".into()),
            (SLURM_ARRAY_TASK_ID, id.into()),
            (SLURM_ARRAY_TASK_COUNT, count.into()),
            (SLURM_ARRAY_TASK_MIN, min.into()),
            (SLURM_ARRAY_TASK_STEP, step.into()),
        ]
    }

    fn auto(pairs: &[(&str, String)], shards: Option<u32>) -> Result<Shard, ShardEnvError> {
        let borrowed: Vec<(&str, &str)> = pairs.iter().map(|(k, v)| (*k, v.as_str())).collect();
        Shard::from_scheduler(env(&borrowed), shards).map(|s| s.shard)
    }

    #[test]
    fn shard_parse_and_ownership() {
        let s = Shard::parse("2/3").unwrap();
        assert_eq!(s, Shard { index: 2, count: 3 });
        let owned: Vec<usize> = (0..7).filter(|p| s.owns(*p)).collect();
        assert_eq!(owned, [1, 4]);
        for bad in ["0/3", "4/3", "1/0", "x/2", "3"] {
            assert!(matches!(Shard::parse(bad), Err(RunnerError::BadShard(_))), "{bad}");
        }
    }

    #[test]
    fn a_kubernetes_index_is_zero_based_and_takes_its_count_from_the_flag_or_the_variable() {
        let index = |i: &str| vec![(JOB_COMPLETION_INDEX, i.to_string())];
        assert_eq!(auto(&index("0"), Some(4)), Ok(Shard { index: 1, count: 4 }));
        assert_eq!(auto(&index("3"), Some(4)), Ok(Shard { index: 4, count: 4 }));
        let mut with_variable = index("2");
        with_variable.push((SPECGAP_SHARDS, "4".into()));
        assert_eq!(auto(&with_variable, None), Ok(Shard { index: 3, count: 4 }));
        assert_eq!(auto(&with_variable, Some(4)), Ok(Shard { index: 3, count: 4 }));
        let scheduled = Shard::from_scheduler(env(&[(JOB_COMPLETION_INDEX, "2"), (SPECGAP_SHARDS, "4")]), None).unwrap();
        assert_eq!(scheduled.scheduler, Scheduler::Kubernetes);
        assert_eq!(scheduled.read, ["JOB_COMPLETION_INDEX=2", "SPECGAP_SHARDS=4"]);
    }

    #[test]
    fn a_kubernetes_environment_without_a_count_or_out_of_range_is_refused_by_name() {
        let err = auto(&[(JOB_COMPLETION_INDEX, "1".into())], None).unwrap_err();
        assert_eq!(
            err.to_string(),
            "--shard auto: SPECGAP_SHARDS is not set, but Kubernetes Indexed Job variables are (JOB_COMPLETION_INDEX=1); Kubernetes does not tell a pod the Job's completions: pass --shards N or set SPECGAP_SHARDS to it"
        );
        let err = auto(&[(JOB_COMPLETION_INDEX, "4".into())], Some(4)).unwrap_err();
        assert_eq!(err.to_string(), "--shard auto: shard index 4 from JOB_COMPLETION_INDEX=4 is not below the shard count 4");
        let err = auto(&[(JOB_COMPLETION_INDEX, "1".into()), (SPECGAP_SHARDS, "3".into())], Some(4)).unwrap_err();
        assert_eq!(err.to_string(), "--shard auto: the shard count 4 (--shards) disagrees with 3 (SPECGAP_SHARDS)");
        let err = auto(&[(JOB_COMPLETION_INDEX, "one".into())], Some(4)).unwrap_err();
        assert_eq!(err.to_string(), "--shard auto: JOB_COMPLETION_INDEX=\"one\" is not a non-negative integer");
        let err = auto(&[(JOB_COMPLETION_INDEX, "0".into())], Some(0)).unwrap_err();
        assert_eq!(err.to_string(), "--shard auto: --shards=\"0\" is not a shard count of at least 1");
    }

    #[test]
    fn a_slurm_task_is_its_step_from_the_lowest_id() {
        assert_eq!(auto(&slurm_env("0", "4", "0", "1"), None), Ok(Shard { index: 1, count: 4 }));
        assert_eq!(auto(&slurm_env("4", "4", "1", "1"), None), Ok(Shard { index: 4, count: 4 }));
        // --array=10-16:2 has ids 10, 12, 14, 16.
        let mut stepped = slurm_env("14", "4", "10", "2");
        stepped.push((SLURM_ARRAY_TASK_MAX, "16".into()));
        assert_eq!(auto(&stepped, None), Ok(Shard { index: 3, count: 4 }));
        assert_eq!(auto(&stepped, Some(4)), Ok(Shard { index: 3, count: 4 }));
    }

    #[test]
    fn an_inconsistent_slurm_environment_is_refused_naming_the_variables() {
        let mut partial = slurm_env("2", "4", "0", "1");
        partial.retain(|(k, _)| *k != SLURM_ARRAY_TASK_STEP);
        assert_eq!(
            auto(&partial, None).unwrap_err().to_string(),
            "--shard auto: SLURM_ARRAY_TASK_STEP is not set, but Slurm array variables are (SLURM_ARRAY_TASK_ID=2, SLURM_ARRAY_TASK_COUNT=4, SLURM_ARRAY_TASK_MIN=0); Slurm sets all of SLURM_ARRAY_TASK_ID, _COUNT, _MIN and _STEP in an array task (sbatch --array); is this an older Slurm, or were some unset?"
        );
        // --array=1,4,9: COUNT 3, MIN 1, MAX 9, STEP 1.
        let mut list = slurm_env("4", "3", "1", "1");
        list.push((SLURM_ARRAY_TASK_MAX, "9".into()));
        assert_eq!(
            auto(&list, None).unwrap_err().to_string(),
            "--shard auto: the Slurm array is not an evenly stepped range (SLURM_ARRAY_TASK_ID=4, SLURM_ARRAY_TASK_COUNT=3, SLURM_ARRAY_TASK_MIN=1, SLURM_ARRAY_TASK_MAX=9, SLURM_ARRAY_TASK_STEP=1); the task's shard (ID − MIN) / STEP must be a whole number below COUNT — submit with --array=0-<N-1> (optionally :STEP)"
        );
        assert!(matches!(auto(&slurm_env("3", "4", "0", "2"), None), Err(ShardEnvError::UnevenArray { .. })));
        assert!(matches!(auto(&slurm_env("0", "4", "1", "1"), None), Err(ShardEnvError::UnevenArray { .. })));
        assert_eq!(
            auto(&slurm_env("5", "4", "1", "1"), None).unwrap_err().to_string(),
            "--shard auto: shard index 4 from SLURM_ARRAY_TASK_ID=5, SLURM_ARRAY_TASK_COUNT=4, SLURM_ARRAY_TASK_MIN=1, SLURM_ARRAY_TASK_STEP=1 is not below the shard count 4"
        );
        assert_eq!(
            auto(&slurm_env("1", "4", "0", "1"), Some(3)).unwrap_err().to_string(),
            "--shard auto: the shard count 3 (--shards) disagrees with 4 (SLURM_ARRAY_TASK_COUNT)"
        );
    }

    #[test]
    fn no_scheduler_or_both_is_refused() {
        assert_eq!(
            auto(&[], Some(4)).unwrap_err().to_string(),
            "--shard auto found no batch scheduler: neither JOB_COMPLETION_INDEX (a Kubernetes Indexed Job) nor SLURM_ARRAY_TASK_ID (a Slurm array) is set"
        );
        assert_eq!(
            auto(&[(SLURM_JOB_ID, "9".into())], None).unwrap_err().to_string(),
            "--shard auto found no batch scheduler: neither JOB_COMPLETION_INDEX (a Kubernetes Indexed Job) nor SLURM_ARRAY_TASK_ID (a Slurm array) is set; SLURM_JOB_ID is set, so this is a Slurm job that is not an array: submit it with sbatch --array=0-<N-1>"
        );
        // An empty variable counts as unset.
        assert!(matches!(auto(&[(JOB_COMPLETION_INDEX, String::new())], Some(2)), Err(ShardEnvError::NoScheduler { slurm_job: false })));
        let mut both = slurm_env("0", "4", "0", "1");
        both.push((JOB_COMPLETION_INDEX, "0".into()));
        assert_eq!(auto(&both, Some(4)), Err(ShardEnvError::BothSchedulers));
    }
}
