//! Run-level shapes (DESIGN §6): the resolved configuration in `run.toml`, the episode key and
//! its derived id, and end reasons.

use serde::{Deserialize, Serialize};

/// The episode protocol this build follows, recorded in `run.toml` as `protocol_version`
/// (DESIGN §6). It names what a condition means — end rules, budgets, tools, what the user is
/// told and how submissions are judged — so a run is resumed or merged only by a build of
/// the same protocol: `--resume` and `specgap merge` refuse runs of another version. Bumped
/// by any change that can change the outcome of an episode under an unchanged condition,
/// task, agent and seed (docs/decisions.md "Protocol version").
///
/// * **1** — stores written before the field existed (specgap 0.1); a `run.toml` without
///   `protocol_version` reads as 1.
/// * **2** — specgap 0.2.0: the wall budget binds during model requests (a request in flight
///   when it ends is abandoned and the episode ends `wall_budget` with its automatic
///   submission, where 0.1 waited for the reply and ran its calls); a reply that comes after
///   the budget ended runs none of its calls.
/// * **3** — `interact-req` prompts to clarify first and withholds nothing (the hard gate only
///   as `+gate=on`); past the clarification-round limit the customer tells the agent to
///   proceed and the episode goes on (no `clarification_limit` end); `ask_user` takes a
///   `questions` list, one call being one round; an evaluation error re-evaluates the frozen
///   submission instead of running the agent again; an evaluator failure on a delivered
///   artifact whose gold evaluates is the delivery's (Score 0, signature `execution`).
/// * **4** — seed 000 fidelity (issue 13): `full` and `partial` share one system prompt and
///   the submission budget is told in `submit`'s description; plan mode offers editing and
///   `submit` only after `write_plan`, which switches the system prompt and the tools (a call
///   to a tool not yet offered is an unknown tool); in a turn with several calls, `submit`,
///   `ask_user` and `write_plan` end the turn — the calls before them run, the calls after them
///   do not and are not charged to the tool-call budget (they used to refuse the whole turn and
///   be charged); the `relay` owner adds the observation's `request` to its feedback (format-2
///   packages) and answers an owner's question from the linked sentences of `user.toml`.
/// * **5** — named paper protocols (issue 24): each end rule, budget and default belongs to one
///   protocol and acts only under it. Seed 000's conditions have 120 turns, 360 tool calls, no
///   wall clock and no end for replies without a tool call; seed 002's have 43,200 s, no step
///   cap and none of seed 000's loop rules; seed 001's have no harness loop rule. The prompts
///   state the protocol's rules.
pub const PROTOCOL_VERSION: u32 = 5;

/// The protocol version of a `run.toml` that does not name one (see [`PROTOCOL_VERSION`]).
pub const PROTOCOL_VERSION_UNRECORDED: u32 = 1;

fn protocol_version_unrecorded() -> u32 {
    PROTOCOL_VERSION_UNRECORDED
}

/// The resolved configuration of a run, written as `run.toml`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunConfig {
    /// specgap version that made the run.
    pub specgap_version: String,
    /// The episode protocol the run follows ([`PROTOCOL_VERSION`] for a new run); absent in
    /// stores written before the field existed, which read as
    /// [`PROTOCOL_VERSION_UNRECORDED`].
    #[serde(default = "protocol_version_unrecorded")]
    pub protocol_version: u32,
    /// Run seed; every random choice derives from it.
    pub seed: u64,
    /// Repeats per (task, agent, condition, start).
    pub repeats: u32,
    /// Retries of infrastructure / evaluation errors per episode.
    pub retries: u32,
    /// Whether commands ran under bubblewrap.
    pub sandbox: bool,
    /// `[i, n]` when this store is shard i of n (1-based i).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<[u32; 2]>,
    /// [`plan_hash`] of the run's unsharded plan: the same in every shard of one run, so
    /// `specgap merge` can tell shards of different plans apart. Absent in stores written
    /// before the field existed (their plans are then compared through the configuration
    /// only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan_hash: Option<String>,
    /// Written by `specgap merge`: which shards the merged run was joined from. Absent in a
    /// run that `specgap run` made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merge: Option<MergeRecord>,
    /// `--max-cost` of the run, US dollars: new episodes stop starting once the run's summed
    /// model cost passes it. Kept so that `--resume` keeps the cap; a `--max-cost` given to
    /// `--resume` replaces it for that invocation. Absent without a cap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_cost_usd: Option<f64>,
    /// `--max-tokens` of the run, prompt + completion tokens (`input_tokens + output_tokens`
    /// of the store's `usage` rows): new episodes stop starting once the run's summed tokens
    /// pass it. Kept and replaced on `--resume` as [`RunConfig::max_cost_usd`] is. Absent
    /// without a cap (and in stores written before the field existed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
    /// Tasks with their content hashes.
    pub tasks: Vec<TaskRef>,
    /// Agents with their full configuration.
    pub agents: Vec<ComponentRef>,
    /// Users with their full configuration.
    pub users: Vec<ComponentRef>,
    /// Canonical condition strings.
    pub conditions: Vec<String>,
    /// Starts: `clean`, `residual:<id>` or `residual:all`.
    pub starts: Vec<String>,
    /// Budget flags of the run (`--turns`, `--tool-calls`, `--wall-sec`); an absent key
    /// defers to each task's `[budget]`, then the defaults (DESIGN §4 precedence). Omitted
    /// from `run.toml` when no flag was given.
    #[serde(default, skip_serializing_if = "is_default_budget")]
    pub budget: crate::package::Budget,
    /// `--clarification-rounds`: answered clarification rounds allowed per delivery episode
    /// (an `ask_user` call or a text-channel exchange each; seed 002 A.3); absent: the
    /// engine's default of 30. Omitted from `run.toml` when the flag was not given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clarification_rounds: Option<u32>,
    /// The paper protocols the run follows (`[[protocols]]`; issue 24): one named by
    /// `--protocol`, or, without it, one per paper whose conditions the run has. Each with its
    /// name, every rule as resolved, and what the run changed or stood in for. Empty in stores
    /// written before protocols were named (their conditions ran under the rules of their
    /// protocol version).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub protocols: Vec<ProtocolRecord>,
}

/// One of `run.toml`'s `[[protocols]]`: a paper protocol the run follows (`specgap_rules`), the
/// conditions it governs, and how far the run is faithful to it. `--resume` runs under the
/// stored rules; `specgap merge` refuses runs whose records differ.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProtocolRecord {
    /// `tiganeval`, `swe-residual`, `fde-bench` or `custom`.
    pub name: String,
    /// Whether `--protocol` named it (false: chosen as the paper of the run's conditions).
    pub named: bool,
    /// `--allow-stand-in` was given: offline stand-ins for model roles run, as deviations.
    #[serde(default)]
    pub allow_stand_in: bool,
    /// The run's canonical conditions this protocol governs.
    #[serde(default)]
    pub conditions: Vec<String>,
    /// Settings of the run that differ from the protocol's rules, in words
    /// (`turns = 10 (--turns; the protocol's: 120)`).
    #[serde(default)]
    pub overrides: Vec<String>,
    /// Model-backed roles of the protocol that the run plays with an offline stand-in, in
    /// words (`owner: relay (offline) stands in for one model`).
    #[serde(default)]
    pub stand_ins: Vec<String>,
    /// Other ways the run leaves the protocol, in words (a residual start under a condition of
    /// another paper, which no paper runs).
    #[serde(default)]
    pub departures: Vec<String>,
    /// Every rule of the protocol, as `specgap_rules::Protocol::to_toml` writes it.
    pub rules: toml::Table,
}

/// What `specgap merge` joined (`run.toml` `[merge]`): the shard count of its inputs and the
/// shards none of them held (a merge with `--allow-partial`). The report names the missing
/// shards next to the episodes they leave without a result; a later merge of this run with
/// the missing shards counts this run as holding every other shard.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MergeRecord {
    /// `n` of the merged shards `i/n` (1 when whole runs were merged).
    pub shards: u32,
    /// 1-based numbers of the shards no input held, ascending; empty when the merge was
    /// complete.
    #[serde(default)]
    pub missing: Vec<u32>,
}

impl MergeRecord {
    /// The 1-based shard numbers the merged run holds: `1..=shards` without `missing`.
    pub fn held(&self) -> Vec<u32> {
        (1..=self.shards).filter(|i| !self.missing.contains(i)).collect()
    }
}

/// The hash of a run's plan (docs/decisions.md "Scale-out: the plan hash"): hex sha256 over
/// the canonical JSON `{"episodes": [...], "not_applicable": [...]}` of the unsharded plan,
/// `episodes` the applicable episodes' ids ([`EpisodeKey::id`]) in plan order and
/// `not_applicable` the `[task, agent, condition, start]` of every combination recorded as not
/// applicable, sorted (their reasons are words, not part of the plan). Two runs with one
/// plan hash plan the same episodes at the same positions, so their shards `i/n` partition
/// the same set.
pub fn plan_hash<'a>(episode_ids: impl IntoIterator<Item = &'a str>, not_applicable: impl IntoIterator<Item = [&'a str; 4]>) -> String {
    use sha2::{Digest, Sha256};
    let episodes: Vec<&str> = episode_ids.into_iter().collect();
    let mut skipped: Vec<[&str; 4]> = not_applicable.into_iter().collect();
    skipped.sort_unstable();
    skipped.dedup();
    let canonical = serde_json::json!({ "episodes": episodes, "not_applicable": skipped });
    // Serializing a JSON value of strings cannot fail.
    let bytes = serde_json::to_vec(&canonical).unwrap_or_default();
    Sha256::digest(&bytes).iter().map(|b| format!("{b:02x}")).collect()
}

fn is_default_budget(budget: &crate::package::Budget) -> bool {
    *budget == crate::package::Budget::default()
}

/// A task in a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskRef {
    /// Task name (`org/name`).
    pub name: String,
    /// Package content hash (hex sha256).
    pub hash: String,
    /// Where the package was read from.
    pub path: String,
    /// The digest of each image environment the task runs on (format 2; none for a
    /// host-command environment, and absent in stores written before the field existed):
    /// `--resume` refuses a run whose environments have other digests now.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub environments: Vec<EnvironmentRef>,
}

/// One image environment of a task, as a run recorded it (`[[tasks.environments]]`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EnvironmentRef {
    /// Which environment: `task` (the agent's commands, and the evaluator's unless it has its
    /// own) or `evaluator` (`[evaluator.environment]`).
    pub role: String,
    /// The source key: `image`, `dockerfile`, `rootfs` or `oci_layout`.
    pub source: String,
    /// The source's value as the package writes it.
    pub value: String,
    /// Its digest, the environment cache's key: `image-<engine image id>`,
    /// `build-<sha256 of the build context>`, `rootfs-<sha256 of the tarball>` or
    /// `oci-<manifest digest>`.
    pub digest: String,
}

/// An agent or user with its configuration and the hash of that configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ComponentRef {
    /// Spec as given (`scripted:gold`, `chat:qwen3`, `cli:mini-swe-agent`, `relay`): the kind
    /// and what the agent factory builds.
    pub spec: String,
    /// The name a run configuration file gave the agent (`[[agent]] name`), when it gave one:
    /// two agents of one spec on different endpoints or models need names to be told apart.
    /// Absent in `run.toml` when not given (and in every store written before it existed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Full configuration (model, base URL, arguments, prompt version); never an API key.
    pub config: toml::Table,
    /// Hex sha256 of the canonical JSON of `spec` and `config` (the name is not part of it;
    /// it is part of the episode key as [`EpisodeKey::agent`]).
    pub hash: String,
}

impl ComponentRef {
    /// How episodes, reports and stores name the component: its [`ComponentRef::name`] when
    /// given, else its spec. Unique among a run's agents.
    pub fn label(&self) -> &str {
        self.name.as_deref().unwrap_or(&self.spec)
    }

    /// The model endpoint settings of a component that calls a model: a `chat` agent's or
    /// user's own configuration, a `cli` agent's `endpoint` table (the upstream its gateway
    /// forwards to); `None` for scripted, replay and relay components.
    pub fn endpoint(&self) -> Option<&toml::Table> {
        match self.config.get("kind").and_then(toml::Value::as_str) {
            Some("chat") => Some(&self.config),
            Some("cli") => self.config.get("endpoint").and_then(toml::Value::as_table),
            _ => None,
        }
    }

    /// The model the component calls ([`ComponentRef::endpoint`]'s `model`).
    pub fn model(&self) -> Option<&str> {
        self.endpoint()?.get("model").and_then(toml::Value::as_str)
    }

    /// Whether the component's model has a price (`price` is stored only when the price table
    /// or the configuration gave one): without one its calls' cost is unknown, not 0.
    pub fn has_price(&self) -> bool {
        self.endpoint().is_some_and(|e| e.contains_key("price"))
    }
}

/// How the spec of an agent that runs the user's own command begins: `cli:command=<template>`.
pub const COMMAND_AGENT_PREFIX: &str = "cli:command=";

/// `text` (a `cli:command=<template>` agent's command) with every absolute path reduced to its
/// last component, so a label or a public export does not carry the machine's directories:
/// `/opt/me/bin/agent --rules=/home/me/r.md {instruction_file}` becomes
/// `agent --rules=r.md {instruction_file}`. A path is recognised where a whitespace-separated
/// word starts with `/`, or continues with `/` right after `=` or an opening quote; it ends at
/// the word's end or a quote. `/` alone is kept; a quoted path with a space keeps what follows
/// the space (words are split first). (docs/decisions.md "Portable agent names".)
pub fn without_local_paths(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while !rest.is_empty() {
        let word_end = rest.find(char::is_whitespace).unwrap_or(rest.len());
        out.push_str(&word_without_local_path(&rest[..word_end]));
        let after = &rest[word_end..];
        let space_end = after.find(|c: char| !c.is_whitespace()).unwrap_or(after.len());
        out.push_str(&after[..space_end]);
        rest = &after[space_end..];
    }
    out
}

/// One word of [`without_local_paths`]: its first absolute path reduced to the file name.
fn word_without_local_path(word: &str) -> String {
    let starts_path = |(i, c): &(usize, char)| *c == '/' && (*i == 0 || word[..*i].ends_with(['=', '"', '\'']));
    let Some((start, _)) = word.char_indices().find(starts_path) else {
        return word.to_string();
    };
    let path_and_tail = &word[start..];
    let end = path_and_tail.find(['"', '\'']).unwrap_or(path_and_tail.len());
    let file_name = path_and_tail[..end].trim_end_matches('/').rsplit('/').next().unwrap_or_default();
    if file_name.is_empty() {
        return word.to_string();
    }
    format!("{}{file_name}{}", &word[..start], &path_and_tail[end..])
}

/// The key of an episode (DESIGN §6); its id is derived from it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct EpisodeKey {
    /// Task name.
    pub task: String,
    /// Task content hash.
    pub task_hash: String,
    /// The agent's [`ComponentRef::label`]: its name from a run configuration file, else its
    /// spec.
    pub agent: String,
    /// Agent configuration hash.
    pub agent_hash: String,
    /// User configuration hash.
    pub user_hash: String,
    /// Canonical condition with overrides.
    pub condition: String,
    /// `clean` or `residual:<id>`.
    pub start: String,
    /// 0-based repeat.
    pub repeat: u32,
    /// Run seed.
    pub seed: u64,
}

/// Why an episode ended (DESIGN §3.5), stored as its snake_case name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EndReason {
    /// A submission succeeded.
    Accepted,
    /// A submission was made under a condition without feedback; for a staged task
    /// (`[stages]`), the last stage's submission, or a stage's below its `min_reward`.
    Submitted,
    /// The submission budget is used up.
    SubmissionBudget,
    /// The turn budget is used up.
    TurnBudget,
    /// The tool-call budget is used up.
    ToolCallBudget,
    /// The wall-clock budget is used up.
    WallBudget,
    /// The 4th consecutive identical call.
    LoopRepeatedCall,
    /// The 4th consecutive command with blank output.
    LoopBlankOutput,
    /// The 4th consecutive `ask_user` under an owner condition.
    LoopAskUser,
    /// The clarification-round limit of delivery conditions.
    ClarificationLimit,
    /// Two consecutive replies without a tool call.
    NoToolCall,
    /// The model's context overflowed.
    ContextOverflow,
    /// Three consecutive refusals or content-filter stops.
    Refusals,
    /// A replay script or scripted agent had nothing more to do.
    AgentDone,
    /// An external (`cli:`) agent's program exited while the episode went on: without
    /// submitting, or when the protocol expected another turn that its adapter cannot resume
    /// (issue 14 item 6). The changed workspace is submitted automatically.
    AgentExit,
    /// The workspace (with an image episode's machine layer) passed a cap of its apparent
    /// size, of one file's, or of the submission's diff (`--max-workspace-bytes`,
    /// `--max-file-bytes`, `--max-diff-bytes`; issue 31 item 1). Scored: the agent made it so;
    /// the over-cap tree is never read, so no automatic submission is made.
    WorkspaceLimit,
    /// An infrastructure error after retries.
    InfrastructureError,
    /// An evaluation error after retries.
    EvaluationError,
    /// The run was interrupted.
    Interrupted,
}

impl EndReason {
    /// The snake_case name used in the store and reports.
    pub fn as_str(self) -> &'static str {
        match self {
            EndReason::Accepted => "accepted",
            EndReason::Submitted => "submitted",
            EndReason::SubmissionBudget => "submission_budget",
            EndReason::TurnBudget => "turn_budget",
            EndReason::ToolCallBudget => "tool_call_budget",
            EndReason::WallBudget => "wall_budget",
            EndReason::LoopRepeatedCall => "loop_repeated_call",
            EndReason::LoopBlankOutput => "loop_blank_output",
            EndReason::LoopAskUser => "loop_ask_user",
            EndReason::ClarificationLimit => "clarification_limit",
            EndReason::NoToolCall => "no_tool_call",
            EndReason::ContextOverflow => "context_overflow",
            EndReason::Refusals => "refusals",
            EndReason::AgentDone => "agent_done",
            EndReason::AgentExit => "agent_exit",
            EndReason::WorkspaceLimit => "workspace_limit",
            EndReason::InfrastructureError => "infrastructure_error",
            EndReason::EvaluationError => "evaluation_error",
            EndReason::Interrupted => "interrupted",
        }
    }

    /// Whether this end makes the automatic final submission of the current workspace
    /// (seed 000 Alg. 1 line 18, DESIGN §3.5): every budget and loop end, `no_tool_call`,
    /// `context_overflow`, `refusals` and `agent_done` — not `accepted`, `submitted`,
    /// `submission_budget` (a submission just ended the episode), `workspace_limit` (the
    /// over-cap workspace is never read), `interrupted` or the error ends. The submission is made only when the workspace changed since the last submission
    /// (or since the start); so an episode with such an end and no automatic submission row
    /// ended with its workspace unchanged, and its `end` event's detail says so
    /// (docs/decisions.md "Engine: automatic final submission").
    pub fn makes_automatic_submission(self) -> bool {
        !matches!(
            self,
            EndReason::Accepted
                | EndReason::Submitted
                | EndReason::SubmissionBudget
                | EndReason::WorkspaceLimit
                | EndReason::Interrupted
                | EndReason::InfrastructureError
                | EndReason::EvaluationError
        )
    }

    /// Whether the episode counts in measures (errors and interruptions do not).
    pub fn is_scored(self) -> bool {
        !matches!(self, EndReason::InfrastructureError | EndReason::EvaluationError | EndReason::Interrupted)
    }
}

impl EpisodeKey {
    /// The episode id: the first 16 hex digits of sha256 over the key's canonical JSON
    /// (field order as declared). Stable across machines and runs, so shards merge.
    pub fn id(&self) -> String {
        use sha2::{Digest, Sha256};
        // Serializing a struct of strings and integers cannot fail.
        let canonical = serde_json::to_vec(self).unwrap_or_default();
        let digest = Sha256::digest(&canonical);
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let mut id = String::with_capacity(16);
        for byte in digest.iter().take(8) {
            id.push(char::from(HEX[usize::from(byte >> 4)]));
            id.push(char::from(HEX[usize::from(byte & 0x0f)]));
        }
        id
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_toml_without_protocol_version_reads_as_version_1() {
        let text = "specgap_version = \"0.1.0\"\nseed = 1\nrepeats = 1\nretries = 0\nsandbox = true\ntasks = []\nagents = []\nusers = []\nconditions = [\"partial\"]\nstarts = [\"clean\"]\n";
        let old: RunConfig = toml::from_str(text).unwrap();
        assert_eq!(old.protocol_version, 1);
        let mut new = old.clone();
        new.protocol_version = PROTOCOL_VERSION;
        let written = toml::to_string(&new).unwrap();
        assert!(written.contains("protocol_version = 5\n"), "{written}");
        assert_eq!(toml::from_str::<RunConfig>(&written).unwrap(), new);
    }

    #[test]
    fn the_plan_hash_follows_episode_order_and_ignores_not_applicable_order() {
        let a = plan_hash(["e1", "e2"], [["t", "a", "full", "clean"], ["t", "b", "full", "clean"]]);
        assert_eq!(a.len(), 64);
        assert_eq!(a, plan_hash(["e1", "e2"], [["t", "b", "full", "clean"], ["t", "a", "full", "clean"]]));
        assert_ne!(a, plan_hash(["e2", "e1"], [["t", "a", "full", "clean"], ["t", "b", "full", "clean"]]));
        assert_ne!(a, plan_hash(["e1", "e2"], [["t", "a", "full", "clean"]]));
        // sha256 of `{"episodes":[],"not_applicable":[]}` (printf '%s' ... | sha256sum).
        assert_eq!(plan_hash([], []), "8391920dc87b3dd6574d30a5bb4661469b527f3898beadfb8b1007c6302abc81");
    }

    #[test]
    fn a_merge_record_holds_every_shard_but_the_missing() {
        let record = MergeRecord { shards: 4, missing: vec![3] };
        assert_eq!(record.held(), [1, 2, 4]);
    }

    #[test]
    fn episode_id_is_stable() {
        let key = EpisodeKey {
            task: "examples/x".into(),
            task_hash: "ab".into(),
            agent: "scripted:gold".into(),
            agent_hash: "cd".into(),
            user_hash: "ef".into(),
            condition: "partial".into(),
            start: "clean".into(),
            repeat: 0,
            seed: 7,
        };
        let id = key.id();
        // The first 8 bytes of SHA-256 over the compact JSON of the key, in lowercase hex:
        // python3 hashlib.sha256(json.dumps(key, separators=(",", ":")).encode()).hexdigest()[:16]
        assert_eq!(id, "bfa18214eb7fb177");
        assert_eq!(id, key.clone().id());
        let mut other = key;
        other.repeat = 1;
        assert_ne!(id, other.id());
    }
}
