//! Planning a run: the cross product tasks × agents × conditions × starts × repeats in a fixed
//! order, each combination either an episode (with its key and id, DESIGN §6) or a
//! not-applicable record (DESIGN §4), and the shard's share of the episodes.

use specgap_protocol::run::{ComponentRef, EpisodeKey};
use specgap_store::NotApplicableRow;
use specgap_task::TaskPackage;

use crate::condition::{Condition, NotApplicable, Start, applicability, expand_starts};
use crate::runner::RunnerError;

/// Shard `index` of `count` (`--shard i/n`, 1-based `index`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    /// 1-based shard number, `1..=count`.
    pub index: u32,
    /// Number of shards, at least 1.
    pub count: u32,
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
}

/// Decides which agents can run on which task beyond the condition's own rules: a scripted
/// agent needs its solution overlay (`scripted:mutant:<id>` without that mutant is not
/// applicable, DESIGN §4). Implemented by whoever knows the agent specs (the CLI, through
/// `specgap-agents`).
pub trait AgentApplicability {
    /// `Ok` when `agent` can run on `package`, else why not.
    ///
    /// # Errors
    /// [`NotApplicable`] with the reason recorded in the store.
    fn applicable(&self, agent: &ComponentRef, package: &TaskPackage) -> Result<(), NotApplicable>;
}

/// Every agent applies everywhere.
#[derive(Debug, Clone, Copy, Default)]
pub struct AllAgentsApply;

impl AgentApplicability for AllAgentsApply {
    fn applicable(&self, _agent: &ComponentRef, _package: &TaskPackage) -> Result<(), NotApplicable> {
        Ok(())
    }
}

/// What a plan is made of.
#[derive(Debug, Clone, Copy)]
pub struct PlanInput<'a> {
    /// Tasks, in run order (sorted by name, as `specgap_task::discover` returns them).
    pub tasks: &'a [TaskPackage],
    /// Agents with their configuration hashes, in the order given.
    pub agents: &'a [ComponentRef],
    /// The user every episode gets.
    pub user: &'a ComponentRef,
    /// Conditions, in the order given.
    pub conditions: &'a [Condition],
    /// Starts as given (`clean`, `residual:<id>`, `residual:all`), in order.
    pub starts: &'a [String],
    /// Repeats per combination (at least 1).
    pub repeats: u32,
    /// Run seed.
    pub seed: u64,
    /// This store's shard, if the run is sharded.
    pub shard: Option<Shard>,
}

/// One episode to run.
#[derive(Debug, Clone, PartialEq)]
pub struct PlannedEpisode {
    /// The key (DESIGN §6).
    pub key: EpisodeKey,
    /// `key.id()`.
    pub id: String,
    /// Index into [`PlanInput::tasks`].
    pub task: usize,
    /// Index into [`PlanInput::agents`].
    pub agent: usize,
    /// The condition.
    pub condition: Condition,
    /// The start.
    pub start: Start,
    /// 0-based position among all applicable episodes of the unsharded plan.
    pub position: usize,
}

/// A combination that does not apply (DESIGN §4), with its reason: the store's row, so the
/// plan records it as it is.
pub type Skipped = NotApplicableRow;

/// A run's plan.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// This shard's episodes, in plan order.
    pub episodes: Vec<PlannedEpisode>,
    /// Every not-applicable combination (the same in every shard, so each shard's store is
    /// complete about them and merging keeps one copy).
    pub not_applicable: Vec<Skipped>,
    /// Applicable episodes over all shards.
    pub total_episodes: usize,
}

/// Plans a run: for each task (in order), agent, condition, start (with `residual:all`
/// expanded to the task's states, sorted) and repeat, either an episode or a not-applicable
/// record. A combination is not applicable when [`applicability`] or `agents` says so; its
/// repeats are not planned. Then the shard keeps the episodes it [`Shard::owns`].
///
/// # Errors
/// [`RunnerError::Condition`] for a bad start; [`RunnerError::NothingApplies`] when no
/// combination applies (DESIGN §4: a run where nothing applies is an error).
pub fn plan(input: &PlanInput<'_>, agents: &dyn AgentApplicability) -> Result<Plan, RunnerError> {
    let mut all = Vec::new();
    let mut not_applicable = Vec::new();
    for (task_index, package) in input.tasks.iter().enumerate() {
        for (agent_index, agent) in input.agents.iter().enumerate() {
            let agent_verdict = agents.applicable(agent, package);
            for condition in input.conditions {
                for start_spec in input.starts {
                    // `residual:all` on a task without residual states expands to no start
                    // at all: an empty set, not an inapplicable combination (docs/decisions.md).
                    let starts = expand_starts(start_spec, package)?;
                    for start in starts {
                        let verdict = agent_verdict.clone().and_then(|()| applicability(package, condition, &start));
                        if let Err(why) = verdict {
                            not_applicable.push(Skipped {
                                task: package.name().to_string(),
                                agent: agent.label().to_string(),
                                condition: condition.canonical(),
                                start: start.canonical(),
                                reason: why.reason,
                            });
                            continue;
                        }
                        for repeat in 0..input.repeats {
                            let key = EpisodeKey {
                                task: package.name().to_string(),
                                task_hash: package.hash().to_string(),
                                agent: agent.label().to_string(),
                                agent_hash: agent.hash.clone(),
                                user_hash: input.user.hash.clone(),
                                condition: condition.canonical(),
                                start: start.canonical(),
                                repeat,
                                seed: input.seed,
                            };
                            let id = key.id();
                            let position = all.len();
                            all.push(PlannedEpisode {
                                key,
                                id,
                                task: task_index,
                                agent: agent_index,
                                condition: *condition,
                                start: start.clone(),
                                position,
                            });
                        }
                    }
                }
            }
        }
    }
    if all.is_empty() {
        let mut reasons: Vec<String> = Vec::new();
        for skipped in &not_applicable {
            if !reasons.contains(&skipped.reason) {
                reasons.push(skipped.reason.clone());
            }
        }
        return Err(RunnerError::NothingApplies { not_applicable: not_applicable.len(), reasons });
    }
    let total_episodes = all.len();
    let episodes = match input.shard {
        Some(shard) => all.into_iter().filter(|e| shard.owns(e.position)).collect(),
        None => all,
    };
    Ok(Plan { episodes, not_applicable, total_episodes })
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
