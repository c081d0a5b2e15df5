//! `cli:mini-swe-agent`: the SWE-agent team's bash-only agent (PyPI `mini-swe-agent` 2.4,
//! seed 001's harness for DeepSWE), run as its own `mini` command with its default `mini.yaml`
//! configuration — native tool calling of one `bash` tool, the scaffold's own prompts, its
//! completion marker — inside the episode's sandbox.
//!
//! | what | how |
//! | --- | --- |
//! | installation | a virtual environment made by `specgap agents install mini-swe-agent`; it and its Python prefix are mounted read-only |
//! | start | `mini -y --exit-immediately -m openai/<model> -t "<opening message>" -c mini.yaml -l 0 -o ~/trajectory.json`, with the gateway as `model.model_kwargs.api_base` and each `--model-arg` as `model.model_kwargs.<key>` |
//! | model endpoint | litellm's OpenAI provider against the gateway (OpenAI chat completions, not streamed); the key is the gateway token |
//! | network | litellm's bundled cost map (`LITELLM_LOCAL_MODEL_COST_MAP`), its telemetry off, mini's cost tracking told to ignore unknown models (`MSWEA_COST_TRACKING=ignore_errors`), its first-run setup skipped (`MSWEA_CONFIGURED`), Hugging Face offline |
//! | system prompt | no option to append one: the condition's prompt is a preamble of the task text; `blind` adds nothing (seed 001 keeps the scaffold's prompts) |
//! | completion signal | `echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT` ends mini with exit status `Submitted`; the adapter reads that from its trajectory file and makes it an agent-declared `submit` with the text after the marker as its summary (seed 001 App. D.1: the scaffold's own signal counts as normally submitted); the marker command's result is what it printed, since mini's log pads it as "not executed" (it stops inside that command) |
//! | tool output | mini's JSON observations (`returncode`, `output`, or `output_head` / `output_tail` when long; standard error merged into `output`) become the harness's `exit status N` form |
//! | log | `~/trajectory.json`, read without following links: the results of the last turn's calls, which no request carried |
//! | resume | not possible: mini starts every run afresh, so feedback reaches it only as `submit`'s result |
//! | plan mode | not applicable (its one tool cannot be switched per phase) |

use std::path::{Path, PathBuf};

use serde_json::Value;
use specgap_engine::session::ObservedResult;

use super::adapter::{Adapter, Launch, LogReport, SANDBOX_HOME, command_result, shell_quote};
use super::home;
use super::venv::Venv;

/// The default version `specgap agents install mini-swe-agent` installs.
pub const DEFAULT_VERSION: &str = "2.4.6";
/// The trajectory file mini writes, relative to the home.
const TRAJECTORY: &str = "trajectory.json";
/// Largest trajectory file read back.
const TRAJECTORY_LIMIT: u64 = 64 << 20;
/// mini's completion marker (its `mini.yaml`).
pub const COMPLETION_MARKER: &str = "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT";

/// The adapter over one installed virtual environment.
#[derive(Debug, Clone)]
pub struct MiniSweAgent {
    /// The virtual environment (holds `bin/mini`).
    venv: Venv,
    version: String,
}

impl MiniSweAgent {
    /// The adapter over the virtual environment `venv` of `version`.
    ///
    /// # Errors
    /// A message when `venv` has no `bin/mini` or no readable `pyvenv.cfg`.
    pub fn new(venv: &Path, version: &str) -> Result<Self, String> {
        if !venv.join("bin/mini").is_file() {
            return Err(format!("{} holds no mini-swe-agent (bin/mini is missing)", venv.display()));
        }
        Ok(MiniSweAgent { venv: Venv::open(venv)?, version: version.to_string() })
    }
}

impl Adapter for MiniSweAgent {
    fn spec(&self) -> String {
        format!("cli:mini-swe-agent@{}", self.version)
    }

    fn mounts(&self) -> Vec<PathBuf> {
        self.venv.mounts()
    }

    fn path_dirs(&self) -> Vec<PathBuf> {
        vec![self.venv.bin()]
    }

    fn entry_programs(&self) -> Vec<PathBuf> {
        // Its command starts `mini` alone; the environment's `python` stays off an image's PATH.
        vec![self.venv.bin().join("mini")]
    }

    fn env(&self, _launch: &Launch) -> Vec<(String, String)> {
        [
            ("MSWEA_CONFIGURED", "true"),
            ("MSWEA_SILENT_STARTUP", "1"),
            ("MSWEA_COST_TRACKING", "ignore_errors"),
            ("MSWEA_GLOBAL_CONFIG_DIR", &format!("{SANDBOX_HOME}/.config/mini-swe-agent")),
            ("LITELLM_LOCAL_MODEL_COST_MAP", "True"),
            ("LITELLM_TELEMETRY", "False"),
            ("LITELLM_LOG", "ERROR"),
            ("HF_HUB_OFFLINE", "1"),
            ("HF_DATASETS_OFFLINE", "1"),
            ("TRANSFORMERS_OFFLINE", "1"),
            ("PYTHONUNBUFFERED", "1"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
    }

    fn command(&self, launch: &Launch) -> String {
        let mut args = vec![
            "exec mini -y --exit-immediately".to_string(),
            format!("-m {}", shell_quote(&format!("openai/{}", launch.model))),
            format!("-t \"$(cat {})\"", shell_quote(&launch.message_file)),
            "-l 0 -c mini.yaml".to_string(),
            format!("-c {}", shell_quote(&format!("model.model_kwargs.api_base={}", launch.base_url))),
        ];
        for (key, value) in &launch.model_args {
            args.push(format!("-c {}", shell_quote(&format!("model.model_kwargs.{key}={value}"))));
        }
        args.push(format!("-o {}", shell_quote(&format!("{SANDBOX_HOME}/{TRAJECTORY}"))));
        args.join(" ")
    }

    fn can_resume(&self) -> bool {
        false
    }

    fn tool_result(&self, _tool: &str, content: &str) -> (String, bool) {
        observation(content).unwrap_or_else(|| (content.to_string(), false))
    }

    fn read_log(&self, home_dir: &Path, unanswered: &[(String, String)]) -> LogReport {
        let mut report = LogReport::default();
        let Some(bytes) = home::read_log(home_dir, Path::new(TRAJECTORY), TRAJECTORY_LIMIT, &mut report.note) else {
            return report;
        };
        let Ok(log) = serde_json::from_slice::<Value>(&bytes) else {
            report.note = format!("{TRAJECTORY} in the agent's home is not JSON");
            return report;
        };
        let info = &log["info"];
        let messages = log["messages"].as_array().cloned().unwrap_or_default();
        let mut marker_call = None;
        if info["exit_status"].as_str() == Some("Submitted") {
            let text = info["submission"].as_str().unwrap_or_default();
            marker_call = completion_call(&messages).map(|id| (id, completion_output(text)));
            let text = text.trim().to_string();
            report.signalled_submit = Some((!text.is_empty()).then_some(text));
        }
        for (call_id, tool) in unanswered {
            let found = messages.iter().find(|m| m["role"] == "tool" && m["tool_call_id"].as_str() == Some(call_id.as_str()));
            if let Some(message) = found {
                let content = message["content"].as_str().unwrap_or_default();
                let (output, blank_success) = match &marker_call {
                    Some((id, output)) if id == call_id => (output.clone(), false),
                    _ => self.tool_result(tool, content),
                };
                report.results.push(ObservedResult {
                    call_id: call_id.clone(),
                    tool: tool.clone(),
                    output,
                    is_error: false,
                    blank_success,
                });
            }
        }
        report.final_text =
            messages.iter().rev().find(|m| m["role"] == "assistant").and_then(|m| m["content"].as_str()).map(str::to_string);
        report
    }
}

/// mini's padding for an action it did not run (`format_toolcall_observation_messages`).
const NOT_EXECUTED: &str = "action was not executed";

/// The call that printed the completion marker. mini stops inside that command's execution
/// (its environment raises `Submitted` on the output), so the command's own observation is
/// the same padding as for the actions after it that really never ran: the first padded
/// result after the last assistant message is the marker's, which ran and succeeded (mini
/// only ends on a marker printed with exit status 0).
fn completion_call(messages: &[Value]) -> Option<String> {
    let last_assistant = messages.iter().rposition(|m| m["role"] == "assistant")?;
    messages[last_assistant..]
        .iter()
        .filter(|m| m["role"] == "tool")
        .find(|m| {
            let content = m["content"].as_str().unwrap_or_default();
            serde_json::from_str::<Value>(content.trim()).is_ok_and(|v| v["exception_info"].as_str() == Some(NOT_EXECUTED))
        })
        .and_then(|m| m["tool_call_id"].as_str().map(str::to_string))
}

/// What the completion command printed, rebuilt from mini's submission (the lines after the
/// marker; leading blank space before the marker is not kept).
fn completion_output(submission: &str) -> String {
    command_result(Some(0), &format!("{COMPLETION_MARKER}\n{submission}"))
}

/// mini's observation (`mini.yaml`'s JSON template) in the harness's form.
fn observation(content: &str) -> Option<(String, bool)> {
    let value: Value = serde_json::from_str(content.trim()).ok()?;
    let code = value.get("returncode")?.as_i64();
    let output = match value.get("output").and_then(Value::as_str) {
        Some(output) => output.to_string(),
        None => {
            let head = value.get("output_head").and_then(Value::as_str).unwrap_or_default();
            let tail = value.get("output_tail").and_then(Value::as_str).unwrap_or_default();
            let elided = value.get("elided_chars").and_then(Value::as_u64).unwrap_or(0);
            format!("{head}\n[... {elided} characters cut by the agent ...]\n{tail}")
        }
    };
    let mut shown = command_result(code, &output);
    if let Some(exception) = value.get("exception_info").and_then(Value::as_str).filter(|e| !e.is_empty()) {
        shown.push_str(&format!("\n--- stderr ---\n{exception}"));
    }
    let blank = code == Some(0) && output.trim().is_empty();
    Some((shown, blank))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn observations_read_as_command_results() {
        assert_eq!(
            observation("{\n  \"returncode\": 0,\n  \"output\": \"a.py\\n\"\n}"),
            Some(("exit status 0\n--- stdout ---\na.py\n".into(), false))
        );
        assert_eq!(observation("{\"returncode\": 0, \"output\": \"\"}"), Some(("exit status 0\n(no output)".into(), true)));
        assert_eq!(
            observation("{\"returncode\": -1, \"output\": \"\", \"exception_info\": \"action was not executed\"}"),
            Some(("exit status -1\n(no output)\n--- stderr ---\naction was not executed".into(), false))
        );
        assert_eq!(
            observation(
                "{\"returncode\": 1, \"output_head\": \"ab\", \"output_tail\": \"yz\", \"elided_chars\": 5, \"warning\": \"Output too long.\"}"
            ),
            Some(("exit status 1\n--- stdout ---\nab\n[... 5 characters cut by the agent ...]\nyz".into(), false))
        );
        assert_eq!(observation("not json"), None);
    }

    #[test]
    fn the_completion_command_ran_and_the_actions_after_it_did_not() {
        let padded = |id: &str| json!({ "role": "tool", "tool_call_id": id, "content": "{\"returncode\": -1, \"output\": \"\", \"exception_info\": \"action was not executed\"}" });
        let messages = vec![
            json!({ "role": "assistant", "content": "first" }),
            padded("old"),
            json!({ "role": "assistant", "content": "done" }),
            json!({ "role": "tool", "tool_call_id": "ran", "content": "{\"returncode\": 0, \"output\": \"x\"}" }),
            padded("marker"),
            padded("after"),
            json!({ "role": "exit", "content": "" }),
        ];
        assert_eq!(completion_call(&messages).as_deref(), Some("marker"));
        assert_eq!(completion_output(""), "exit status 0\n--- stdout ---\nCOMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\n");
        assert_eq!(completion_call(&messages[..4]), None, "no padded result after the last assistant message");
    }

    #[test]
    fn the_command_points_mini_at_the_gateway_with_the_message_file() {
        let dir = tempfile::tempdir().unwrap();
        let venv = dir.path().join("venv");
        std::fs::create_dir_all(venv.join("bin")).unwrap();
        std::fs::write(venv.join("bin/mini"), "").unwrap();
        std::fs::write(venv.join("pyvenv.cfg"), "home = /usr/bin\nversion = 3.11\n").unwrap();
        let adapter = MiniSweAgent::new(&venv, "2.4.6").unwrap();
        assert_eq!(adapter.mounts(), vec![venv.clone()], "a system Python needs no mount");
        let mut model_args = serde_json::Map::new();
        model_args.insert("temperature".into(), serde_json::json!(0));
        let launch = Launch {
            base_url: "http://127.0.0.1:4000/v1".into(),
            token: "t".into(),
            model: "Qwen/Qwen3-8B".into(),
            message_file: "/run/specgap/task/message-1.md".into(),
            mcp: crate::cli::adapter::McpServer::default(),
            system_prompt_file: None,
            resumed: false,
            model_args,
            protocol_urls: Vec::new(),
            system_prompt: None,
        };
        assert_eq!(
            adapter.command(&launch),
            "exec mini -y --exit-immediately -m 'openai/Qwen/Qwen3-8B' -t \"$(cat '/run/specgap/task/message-1.md')\" -l 0 -c mini.yaml \
             -c 'model.model_kwargs.api_base=http://127.0.0.1:4000/v1' -c 'model.model_kwargs.temperature=0' -o '/home/specgap/trajectory.json'"
        );
        assert!(MiniSweAgent::new(dir.path(), "2.4.6").unwrap_err().contains("bin/mini is missing"));
    }
}
