//! Shared set-up of the tests that run a real pinned agent CLI through the `specgap` binary
//! (`cli_opencode`, `cli_gemini`): installing it into the shared test cache, the `run`
//! command line against a scripted mock, and readers for what the run stored (the agent's
//! usage, the engine's messages, the actions mapped from the CLI's log).

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

use serde_json::Value;
use specgap_gateway::mock::ReceivedRequest;
use specgap_protocol::action::FileAction;
use specgap_protocol::event::{Event, EventKind, UserMessageKind};

use crate::agents::test_cache;
use crate::support::*;

/// Installs `adapter` at its pinned `version` into the shared test cache with `specgap agents
/// install` once per process (its lock lets processes share it) and returns the installation's
/// directory, or `None` when the registry cannot be reached (the test is then skipped, or
/// fails under `SPECGAP_REQUIRE_EXTERNAL=1`, as in CI, where `.ci/run` installs it first).
pub fn installed(adapter: &str, version: &str) -> Option<PathBuf> {
    specgap_test_support::installs::installed_once(adapter, || {
        let output =
            specgap().args(["agents", "install", adapter]).env("XDG_CACHE_HOME", test_cache()).output().map_err(|e| e.to_string())?;
        if output.status.success() {
            Ok(test_cache().join("specgap/agents").join(adapter).join(version))
        } else {
            Err(String::from_utf8_lossy(&output.stderr).into_owned())
        }
    })
}

pub use specgap_test_support::files::walk;

/// The JSON body of a request (`null` when it is not JSON).
pub fn body(request: &ReceivedRequest) -> Value {
    serde_json::from_slice(&request.body).unwrap_or(Value::Null)
}

/// Whether the request offers tools (a main-loop turn; the CLIs' title requests offer none).
pub fn offers_tools(request: &ReceivedRequest) -> bool {
    body(request)["tools"].as_array().is_some_and(|t| !t.is_empty())
}

/// One real CLI's run through `specgap run`: the agent spec, its model and the variable the
/// upstream key is read from.
pub struct CliUnderTest {
    /// `cli:<adapter>`.
    pub agent: &'static str,
    /// The model the mock answers as.
    pub model: &'static str,
    /// The variable holding the upstream key.
    pub key_env: &'static str,
    /// The upstream key (a test value, searched for in the store afterwards).
    pub key: &'static str,
}

impl CliUnderTest {
    /// `specgap run <package> --agent … --condition <condition> --out <out>` against the mock at
    /// `base_url`, then `extra` arguments.
    pub fn run_args(&self, package: &Path, base_url: &str, condition: &str, out: &Path, extra: &[&str]) -> Vec<OsString> {
        let mut args: Vec<OsString> = vec![OsString::from("run"), package.as_os_str().to_owned()];
        for (flag, value) in [
            ("--agent", self.agent),
            ("--model", self.model),
            ("--base-url", base_url),
            ("--api-key-env", self.key_env),
            ("--condition", condition),
        ] {
            args.extend([OsString::from(flag), OsString::from(value)]);
        }
        args.extend([OsString::from("--no-report"), OsString::from("--out"), out.as_os_str().to_owned()]);
        args.extend(extra.iter().map(OsString::from));
        args
    }

    /// Runs `specgap` with `args`, the key in its variable and the shared test cache; asserts it
    /// succeeded.
    pub fn run<I: IntoIterator<Item = S>, S: AsRef<OsStr>>(&self, args: I) {
        assert_succeeded(specgap().args(args).env(self.key_env, self.key).env("XDG_CACHE_HOME", test_cache()).output().unwrap());
    }

    /// Asserts that no file of the run directory `out` holds the key.
    pub fn assert_key_nowhere(&self, out: &Path) {
        for entry in walk(out) {
            let bytes = std::fs::read(&entry).unwrap();
            assert!(!bytes.windows(self.key.len()).any(|w| w == self.key.as_bytes()), "{} holds the key", entry.display());
        }
    }
}

/// The agent's usage rows of the run in `out`: (requests, input tokens, output tokens).
pub fn agent_usage(out: &Path) -> Vec<(u64, u64, u64)> {
    let store = specgap_store::Store::open(out).unwrap();
    store
        .usage()
        .unwrap()
        .into_iter()
        .filter(|u| u.role == specgap_store::Role::Agent)
        .map(|u| (u.usage.requests, u.usage.input_tokens, u.usage.output_tokens))
        .collect()
}

/// The texts of the engine's messages of `kind` (answers, feedback), in order.
pub fn user_messages(events: &[Event], kind: UserMessageKind) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::UserMessage { kind: k, text, .. } if *k == kind => Some(text.clone()),
            _ => None,
        })
        .collect()
}

/// The normalized actions of the trajectory (those mapped from the CLI's log and its tools).
pub fn logged_actions(events: &[Event]) -> Vec<FileAction> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Actions { actions, .. } => Some(actions.clone()),
            _ => None,
        })
        .flatten()
        .collect()
}

/// How many times the agent's program exited.
pub fn exits(events: &[Event]) -> usize {
    events.iter().filter(|e| matches!(e.kind, EventKind::AgentExit { .. })).count()
}

/// The harness calls that arrived through the bridge: (tool, arguments), in order.
pub fn bridge_calls(events: &[Event]) -> Vec<(String, Value)> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::BridgeCall { call, .. } => Some((call.tool.clone(), call.arguments.clone())),
            _ => None,
        })
        .collect()
}

/// The recorded result of call `call_id`.
pub fn result_of(events: &[Event], call_id: &str) -> String {
    events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::ToolResult { call_id: id, output, .. } if id == call_id => Some(output.clone()),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no result of {call_id}"))
}

/// The submissions of episode `id` of the run in `out`: (k, automatic, success), in order.
pub fn submissions(out: &Path, id: &str) -> Vec<(u32, bool, Option<bool>)> {
    let store = specgap_store::Store::open(out).unwrap();
    store.episode_detail(id).unwrap().unwrap().submissions.iter().map(|s| (s.k, s.automatic, s.success)).collect()
}

/// The message the engine resumes a CLI with after its submission `k` was returned: it names
/// the returned delivery and repeats the owner's `feedback`.
pub fn assert_is_the_feedback_resume(message: &str, k: u32, feedback: &str) {
    assert!(message.contains(&format!("Your delivery (submission {k}) was returned.")), "{message}");
    assert!(message.contains(feedback.trim()), "the resume repeats the owner's feedback: {message}");
}

/// The checks of a partial episode of `req-basic` whose CLI asked the owner once through MCP,
/// ended its run after its first submission was returned and was resumed with the feedback
/// (the run in `out`): accepted at k = 2 with the gold fix, one exit, the three harness calls
/// through the bridge, the owner's answer as the first one's result. Returns the trajectory and
/// the feedback the engine sent.
pub fn check_resumed_after_a_returned_submission(out: &Path) -> (Vec<Event>, String) {
    let rows = episodes(out);
    let row = &rows[0];
    assert_eq!(row.end_reason.map(|r| r.as_str()), Some("accepted"), "{row:?}");
    assert_eq!((row.final_score, row.final_success), (Some(1.0), Some(true)), "{row:?}");
    assert_eq!(submissions(out, &row.id), vec![(1, false, Some(false)), (2, false, Some(true))]);
    let events = events(out, &row.id);
    assert_eq!(exits(&events), 1, "it exited once, after the returned submission, and was resumed");
    assert_no_network_attempt(&events);
    let mut feedback = user_messages(&events, UserMessageKind::Feedback);
    assert_eq!(feedback.len(), 1, "one returned submission");
    let calls: Vec<String> = bridge_calls(&events).into_iter().map(|(tool, _)| tool).collect();
    assert_eq!(calls, ["ask_user", "submit", "submit"], "the owner asked and both deliveries made through MCP");
    let answer = result_of(&events, "bridge-1");
    assert!(answer.starts_with("Dana believes the only problem"), "{answer}");
    (events, feedback.remove(0))
}
