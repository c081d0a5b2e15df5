//! `cli:openhands`: OpenHands (PyPI `openhands-sdk` and `openhands-tools` 1.58.2), seed 002's
//! general scaffold, run by specgap's driver (`openhands_driver.py`, written into the home
//! before each start) inside the episode's sandbox.
//!
//! | what | how |
//! | --- | --- |
//! | installation | a Python 3.12 virtual environment made by `specgap agents install openhands` (its releases need Python ≥ 3.12); it and its Python prefix are mounted read-only |
//! | start | `python ~/.specgap/openhands_driver.py` in the workspace: OpenHands' default agent of its CLI mode (`get_default_agent(cli_mode=True)`: terminal, file editor, task tracker, its built-in `finish` and `think`, its condenser; no browser) in a local conversation over the workspace (the local runtime: no container) |
//! | model endpoint | its `LLM` with litellm's OpenAI provider, `base_url` = the gateway, `api_key` = the gateway token (OpenAI chat completions) |
//! | step limit | at most 200 agent steps over the whole episode (seed 002 App. A.9: `max_iterations` 200), counted across starts: each start's `max_iteration_per_run` is what is left |
//! | ask channel | `text` (its default): when the agent stops with a message instead of `finish`, the driver ends and the engine's text exchange answers that message, then starts it again with the answers as the user's next message — OpenHands' user-response callback, served by the harness (seed 002 App. A.9.3) |
//! | completion signal | its `finish` tool: an agent-declared `submit` with the finish message as summary |
//! | tool output | its terminal results (`[The command completed with exit code N.]`) become the harness's `exit status N` form |
//! | log | `~/.specgap/openhands-result.json` (status, steps, final text) and `~/.specgap/openhands-events-<n>.jsonl` (each tool observation) |
//! | resume | the persisted conversation (`~/.specgap/openhands`, its id in `~/.specgap/openhands-conversation`) with the new message |

use std::path::{Path, PathBuf};

use serde_json::Value;
use specgap_engine::session::ObservedResult;

use super::adapter::{Adapter, Launch, LogReport, SANDBOX_HOME, SPECGAP_HOME_DIR, command_result, shell_quote};
use super::channel::AskChannel;
use super::home;
use super::venv::Venv;

/// The default version `specgap agents install openhands` installs.
pub const DEFAULT_VERSION: &str = "1.58.2";
/// The agent steps of one episode (seed 002 App. A.9: OpenHands' `max_iterations`).
pub const MAX_STEPS: u32 = 200;
/// The driver, written into the home before each start.
pub const DRIVER: &str = include_str!("openhands_driver.py");
const DRIVER_FILE: &str = ".specgap/openhands_driver.py";
const RESULT_FILE: &str = ".specgap/openhands-result.json";
const LOG_LIMIT: u64 = 64 << 20;

/// The adapter over one installed virtual environment.
#[derive(Debug, Clone)]
pub struct OpenHands {
    venv: Venv,
    version: String,
}

impl OpenHands {
    /// The adapter over the virtual environment `venv` of `version`.
    ///
    /// # Errors
    /// A message when `venv` has no `bin/python`, no OpenHands or no readable `pyvenv.cfg`.
    pub fn new(venv: &Path, version: &str) -> Result<Self, String> {
        if !venv.join("bin/python").exists() {
            return Err(format!("{} holds no Python (bin/python is missing)", venv.display()));
        }
        let env = Venv::open(venv)?;
        let site = venv.join(format!("lib/python{}/site-packages/openhands/sdk", env.cfg_value("version").map_or("3.12", short)));
        if !site.is_dir() {
            return Err(format!("{} holds no openhands-sdk ({} is missing)", venv.display(), site.display()));
        }
        Ok(OpenHands { venv: env, version: version.to_string() })
    }
}

/// `3.12.1` → `3.12`.
fn short(version: &str) -> &str {
    match version.match_indices('.').nth(1) {
        Some((i, _)) => &version[..i],
        None => version,
    }
}

impl Adapter for OpenHands {
    fn spec(&self) -> String {
        format!("cli:openhands@{}", self.version)
    }

    fn mounts(&self) -> Vec<PathBuf> {
        self.venv.mounts()
    }

    fn path_dirs(&self) -> Vec<PathBuf> {
        vec![self.venv.bin()]
    }

    fn env(&self, launch: &Launch) -> Vec<(String, String)> {
        let args = serde_json::to_string(&launch.model_args).unwrap_or_else(|_| "{}".into());
        [
            ("SPECGAP_OH_MODEL", launch.model.as_str()),
            ("SPECGAP_OH_BASE_URL", launch.base_url.as_str()),
            ("SPECGAP_OH_MAX_STEPS", &MAX_STEPS.to_string()),
            ("SPECGAP_OH_MCP_CONFIG", launch.mcp.config_file.as_str()),
            ("SPECGAP_OH_MODEL_ARGS", &args),
            ("OPENHANDS_SUPPRESS_BANNER", "1"),
            ("LITELLM_LOCAL_MODEL_COST_MAP", "True"),
            ("LITELLM_TELEMETRY", "False"),
            ("LITELLM_LOG", "ERROR"),
            ("ANONYMIZED_TELEMETRY", "false"),
            ("BROWSER_USE_CLOUD_SYNC", "false"),
            ("POSTHOG_DISABLED", "1"),
            ("HF_HUB_OFFLINE", "1"),
            ("TRANSFORMERS_OFFLINE", "1"),
            ("PYTHONUNBUFFERED", "1"),
            ("PYTHONDONTWRITEBYTECODE", "1"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
    }

    fn prepare_home(&self, home_dir: &Path, _launch: &Launch) -> Result<(), specgap_engine::session::AgentError> {
        home::write_file(home_dir, Path::new(DRIVER_FILE), DRIVER.as_bytes()).map_err(|e| {
            specgap_engine::session::AgentError::with_source("cannot write the OpenHands driver into the agent's home", false, e)
        })
    }

    fn command(&self, launch: &Launch) -> String {
        format!(
            "mkdir -p {home}/{SPECGAP_HOME_DIR} && SPECGAP_OH_MESSAGE_FILE={message} SPECGAP_OH_START={start} SPECGAP_OH_MODEL={model} SPECGAP_OH_BASE_URL={base} exec python {home}/{DRIVER_FILE}",
            home = SANDBOX_HOME,
            message = shell_quote(&launch.message_file),
            start = launch.start_number(),
            model = shell_quote(&launch.model),
            base = shell_quote(&launch.base_url),
        )
    }

    fn can_resume(&self) -> bool {
        true
    }

    fn default_ask_channel(&self) -> AskChannel {
        AskChannel::Text
    }

    fn tool_result(&self, tool: &str, content: &str) -> (String, bool) {
        if tool == "terminal" {
            return terminal_result(content);
        }
        (content.to_string(), false)
    }

    fn read_log(&self, home_dir: &Path, unanswered: &[(String, String)]) -> LogReport {
        let mut report = LogReport::default();
        let Some(bytes) = home::read_log(home_dir, Path::new(RESULT_FILE), LOG_LIMIT, &mut report.note) else {
            return report;
        };
        let Ok(result) = serde_json::from_slice::<Value>(&bytes) else {
            report.note = format!("{RESULT_FILE} in the agent's home is not JSON");
            return report;
        };
        let text = result["final_text"].as_str().map(str::to_string);
        if result["finished"].as_bool() == Some(true) {
            report.signalled_submit = Some(text.clone().filter(|t| !t.trim().is_empty()));
        }
        report.final_text = text;
        let mut notes = Vec::new();
        if let Some(error) = result["error"].as_str() {
            notes.push(format!("OpenHands stopped with an error: {error}"));
        }
        if result["status"].as_str() == Some("step_limit") || result["steps"].as_u64() >= Some(u64::from(MAX_STEPS)) {
            notes.push(format!("OpenHands reached its step limit ({MAX_STEPS} agent steps)"));
        }
        let start = result["start"].as_u64().unwrap_or(1);
        let events = home::read_file(home_dir, Path::new(&format!("{SPECGAP_HOME_DIR}/openhands-events-{start}.jsonl")), LOG_LIMIT)
            .unwrap_or_default();
        let observations: Vec<Value> =
            String::from_utf8_lossy(&events).lines().filter_map(|l| serde_json::from_str::<Value>(l).ok()).collect();
        for (call_id, tool) in unanswered {
            if let Some(found) = observations.iter().rev().find(|o| o["tool_call_id"].as_str() == Some(call_id.as_str())) {
                let (output, blank_success) = self.tool_result(tool, found["text"].as_str().unwrap_or_default());
                report.results.push(ObservedResult {
                    call_id: call_id.clone(),
                    tool: tool.clone(),
                    output,
                    is_error: false,
                    blank_success,
                });
            }
        }
        report.note = notes.join("; ");
        report
    }
}

/// OpenHands' terminal observation in the harness's form: the output before its
/// `[The command completed with exit code N.]` line, that status, and whether it is blank.
fn terminal_result(content: &str) -> (String, bool) {
    const MARK: &str = "[The command completed with exit code ";
    let Some(at) = content.find(MARK) else { return (content.to_string(), false) };
    let code = content[at + MARK.len()..].split(|c: char| !c.is_ascii_digit() && c != '-').next().and_then(|n| n.parse::<i64>().ok());
    let output = content[..at].trim_end_matches('\n');
    let output = if output.is_empty() { String::new() } else { format!("{output}\n") };
    let blank = code == Some(0) && output.trim().is_empty();
    (command_result(code, &output), blank)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terminal_observations_read_as_command_results() {
        assert_eq!(
            terminal_result(
                "a.txt\n[The command completed with exit code 0.]\n[Current working directory: /workspace]\n[Command finished with exit code 0]"
            ),
            ("exit status 0\n--- stdout ---\na.txt\n".into(), false)
        );
        assert_eq!(
            terminal_result("[The command completed with exit code 0.]\n[Current working directory: /workspace]"),
            ("exit status 0\n(no output)".into(), true)
        );
        assert_eq!(
            terminal_result("no such file\n[The command completed with exit code 2.]"),
            ("exit status 2\n--- stdout ---\nno such file\n".into(), false)
        );
        assert_eq!(terminal_result("still running"), ("still running".into(), false));
        assert_eq!(short("3.12.1"), "3.12");
    }
}
