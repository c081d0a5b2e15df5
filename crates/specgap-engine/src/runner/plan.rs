//! Planning a run: the cross product tasks × agents × conditions × starts × repeats in a fixed
//! order, each combination either an episode (with its key and id, DESIGN §6) or a
//! not-applicable record (DESIGN §4), and the shard's share of the episodes.

use specgap_protocol::run::{ComponentRef, EpisodeKey, plan_hash};
use specgap_store::NotApplicableRow;
use specgap_task::TaskPackage;

use crate::condition::{Condition, NotApplicable, Start, applicability, expand_starts};
use crate::runner::RunnerError;
use crate::runner::shard::Shard;

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

    /// `Ok` when `agent` can run under `condition`, else why not (an external agent that
    /// cannot switch its tools between planning and execution under `plan`). Default: `Ok`.
    ///
    /// # Errors
    /// [`NotApplicable`] with the reason recorded in the store.
    fn applicable_under(&self, agent: &ComponentRef, condition: &Condition) -> Result<(), NotApplicable> {
        let _ = (agent, condition);
        Ok(())
    }
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
    /// [`specgap_protocol::run::plan_hash`] of the unsharded plan (the same in every shard),
    /// recorded in `run.toml` as `plan_hash`.
    pub hash: String,
}

/// A warning for each `residual:<id>` start that no task of the suite has: a misspelt state
/// would otherwise only show as not-applicable rows. Such starts still plan as not applicable
/// (DESIGN §4); the CLI prints these before the run.
pub fn unknown_residual_states(input: &PlanInput<'_>) -> Vec<String> {
    let mut warnings = Vec::new();
    for start in input.starts {
        let Some(id) = start.strip_prefix("residual:").filter(|id| *id != "all") else { continue };
        if input.tasks.iter().any(|p| p.residual(id).is_some()) {
            continue;
        }
        let known: Vec<String> = input
            .tasks
            .iter()
            .filter(|p| !p.residual_states().is_empty())
            .map(|p| format!("{}: {}", p.name(), p.residual_states().keys().cloned().collect::<Vec<_>>().join(", ")))
            .collect();
        let known = if known.is_empty() { "none".to_string() } else { known.join("; ") };
        warnings.push(format!("start residual:{id}: no task of the suite has a residual state `{id}` (states: {known})"));
    }
    warnings
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
                        let verdict = agent_verdict
                            .clone()
                            .and_then(|()| agents.applicable_under(agent, condition))
                            .and_then(|()| applicability(package, condition, &start));
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
        let no_states = input.tasks.iter().all(|p| p.residual_states().is_empty());
        if no_states && not_applicable.is_empty() && input.starts.iter().any(|s| s == "residual:all") {
            reasons.insert(0, "start residual:all: no task of the suite has residual states".into());
        }
        return Err(RunnerError::NothingApplies { not_applicable: not_applicable.len(), reasons });
    }
    let total_episodes = all.len();
    let hash = plan_hash(
        all.iter().map(|e| e.id.as_str()),
        not_applicable.iter().map(|n| [n.task.as_str(), n.agent.as_str(), n.condition.as_str(), n.start.as_str()]),
    );
    let episodes = match input.shard {
        Some(shard) => all.into_iter().filter(|e| shard.owns(e.position)).collect(),
        None => all,
    };
    Ok(Plan { episodes, not_applicable, total_episodes, hash })
}
