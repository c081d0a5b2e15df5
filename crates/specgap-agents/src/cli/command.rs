//! `cli:command=<template>`: any agent that can read a file, run shell commands and call the
//! harness commands on its PATH, started from a command template the user gives, e.g.
//! `--agent 'cli:command=my-agent --task-file {instruction_file}'`.
//!
//! Placeholders (each replaced by its value quoted for `/bin/sh`):
//!
//! | placeholder | value |
//! | --- | --- |
//! | `{instruction_file}` | the file holding the message of this start: the opening message (with the condition's system prompt as its preamble unless the condition is `blind`), or on a resume the new message |
//! | `{system_prompt_file}` | a file holding the condition's system prompt alone (empty under `blind`) |
//! | `{base_url}` | the gateway's OpenAI-compatible base URL, `http://127.0.0.1:<port>/v1` |
//! | `{token_env}` | the name of the variable that holds the gateway token (`OPENAI_API_KEY`) |
//! | `{model}` | the model name the gateway serves |
//! | `{workspace}` | the workspace (`/workspace`, also the working directory) |
//! | `{home}` | the agent's private home (`/home/specgap`, also `HOME`) |
//! | `{mcp_config}` | the harness tools' MCP configuration (`~/.specgap/mcp.json`, `{"mcpServers": {"specgap": …}}`), for agents that speak MCP |
//!
//! The same values are in the environment: `OPENAI_BASE_URL` and `OPENAI_API_BASE`,
//! `OPENAI_API_KEY`, `SPECGAP_MODEL`, `SPECGAP_INSTRUCTION_FILE`, `SPECGAP_SYSTEM_PROMPT_FILE`,
//! `SPECGAP_MCP_CONFIG` and `SPECGAP_RESUMED` (`1` on a resume). The harness commands
//! `ask_user "<question>"` and `submit ["<summary>"]` are on `PATH` (DESIGN §5). The template runs under `/bin/sh -c` in the
//! workspace; an absolute path in it that names a host file outside the system directories
//! (the agent's own script) is mounted read-only at the same path, that file alone.
//!
//! Resume: the template is run again with `{instruction_file}` holding the new message (the
//! customer's answers, a continuation) and `SPECGAP_RESUMED=1`; the home and `/tmp` are kept.
//! Log: the agent may append what its structured tools did, one
//! `specgap_protocol::action::FileAction` JSON object per line, to `$SPECGAP_ACTIONS_LOG`
//! (`~/.specgap/actions.jsonl`); the harness reads it after each exit, without following links.
//! Tool results its requests carry are kept as sent, except that results in the harness's own
//! `exit status N` form count toward the blank-output rule.

use std::path::{Path, PathBuf};

use super::adapter::{Adapter, Launch, LogReport, SANDBOX_HOME, SANDBOX_TASK_DIR, TOKEN_ENV, shell_quote};
use super::home;
use specgap_protocol::action::FileAction;
use specgap_sandbox::WORKSPACE_MOUNT;

/// The actions log, relative to the home.
const ACTIONS_LOG: &str = ".specgap/actions.jsonl";
/// Largest actions log read back.
const ACTIONS_LIMIT: u64 = 16 << 20;
/// The placeholders a template may use.
pub const PLACEHOLDERS: &[&str] =
    &["instruction_file", "system_prompt_file", "base_url", "token_env", "model", "workspace", "home", "mcp_config"];

/// The adapter over one command template.
#[derive(Debug, Clone)]
pub struct CommandAdapter {
    template: String,
}

impl CommandAdapter {
    /// The adapter for `template`.
    ///
    /// # Errors
    /// A message naming an unknown `{placeholder}`, or an empty template.
    pub fn new(template: &str) -> Result<Self, String> {
        if template.trim().is_empty() {
            return Err("cli:command needs a command template after `=`, e.g. cli:command=my-agent --task-file {instruction_file}".into());
        }
        let mut rest = template;
        while let Some(open) = rest.find('{') {
            let after = &rest[open + 1..];
            let Some(close) = after.find('}') else { break };
            let name = &after[..close];
            if name.chars().all(|c| c.is_ascii_lowercase() || c == '_') && !name.is_empty() && !PLACEHOLDERS.contains(&name) {
                return Err(format!(
                    "unknown placeholder {{{name}}} in the cli:command template; the placeholders are {}",
                    PLACEHOLDERS.iter().map(|p| format!("{{{p}}}")).collect::<Vec<_>>().join(", ")
                ));
            }
            rest = &after[close + 1..];
        }
        if let Some(word) = template
            .split_whitespace()
            .map(unquoted)
            .find(|w| w.starts_with('/') && Path::new(w).components().any(|c| c == std::path::Component::ParentDir))
        {
            return Err(format!(
                "the cli:command template names {word}, which has `..`; give its path without `..` (it is mounted read-only at that path)"
            ));
        }
        Ok(CommandAdapter { template: template.to_string() })
    }

    fn fill(&self, launch: &Launch) -> String {
        let system = launch.system_prompt_file.clone().unwrap_or_else(|| format!("{SANDBOX_TASK_DIR}/system-prompt.md"));
        let values = [
            ("instruction_file", launch.message_file.clone()),
            ("system_prompt_file", system),
            ("base_url", launch.base_url.clone()),
            ("token_env", TOKEN_ENV.to_string()),
            ("model", launch.model.clone()),
            ("workspace", WORKSPACE_MOUNT.to_string()),
            ("home", SANDBOX_HOME.to_string()),
            ("mcp_config", launch.mcp.config_file.clone()),
        ];
        let mut filled = self.template.clone();
        for (name, value) in values {
            filled = filled.replace(&format!("{{{name}}}"), &shell_quote(&value));
        }
        filled
    }
}

impl Adapter for CommandAdapter {
    fn spec(&self) -> String {
        format!("cli:command={}", self.template)
    }

    fn mounts(&self) -> Vec<PathBuf> {
        self.template
            .split_whitespace()
            .map(unquoted)
            .filter(|w| w.starts_with('/'))
            .map(PathBuf::from)
            .filter(|p| p.is_file() && !["/usr", "/bin", "/lib", "/sbin", "/etc", "/proc", "/dev"].iter().any(|s| p.starts_with(s)))
            .collect()
    }

    fn path_dirs(&self) -> Vec<PathBuf> {
        Vec::new()
    }

    fn env(&self, launch: &Launch) -> Vec<(String, String)> {
        let system = launch.system_prompt_file.clone().unwrap_or_default();
        vec![
            ("SPECGAP_MODEL".into(), launch.model.clone()),
            ("SPECGAP_INSTRUCTION_FILE".into(), launch.message_file.clone()),
            ("SPECGAP_SYSTEM_PROMPT_FILE".into(), system),
            ("SPECGAP_RESUMED".into(), if launch.resumed { "1" } else { "0" }.into()),
            ("SPECGAP_ACTIONS_LOG".into(), format!("{SANDBOX_HOME}/{ACTIONS_LOG}")),
            ("SPECGAP_MCP_CONFIG".into(), launch.mcp.config_file.clone()),
        ]
    }

    fn command(&self, launch: &Launch) -> String {
        self.fill(launch)
    }

    fn can_resume(&self) -> bool {
        true
    }

    fn tool_result(&self, _tool: &str, content: &str) -> (String, bool) {
        let blank = content.starts_with("exit status 0\n") && content.ends_with("(no output)");
        (content.to_string(), blank)
    }

    fn read_log(&self, home_dir: &Path, _unanswered: &[(String, String)]) -> LogReport {
        let mut report = LogReport::default();
        let Some(bytes) = home::read_log(home_dir, Path::new(ACTIONS_LOG), ACTIONS_LIMIT, &mut report.note) else {
            return report;
        };
        let text = String::from_utf8_lossy(&bytes);
        let mut bad = 0;
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            match serde_json::from_str::<FileAction>(line) {
                Ok(action) => report.actions.push(action),
                Err(_) => bad += 1,
            }
        }
        if bad > 0 {
            report.note = format!("{bad} lines of {ACTIONS_LOG} are not actions and were left out");
        }
        // Read once: the next exit reports only what was added after.
        let _ = home::write_file(home_dir, Path::new(ACTIONS_LOG), b"");
        report
    }
}

/// A template word without the quotes around it.
fn unquoted(word: &str) -> &str {
    word.trim_matches(|c| c == '\'' || c == '"')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn launch() -> Launch {
        Launch {
            base_url: "http://127.0.0.1:4000/v1".into(),
            token: "t".into(),
            model: "m".into(),
            message_file: "/run/specgap/task/message-1.md".into(),
            mcp: crate::cli::adapter::McpServer::default(),
            system_prompt_file: Some("/run/specgap/task/system-prompt.md".into()),
            resumed: false,
            model_args: serde_json::Map::new(),
            protocol_urls: Vec::new(),
            system_prompt: None,
        }
    }

    #[test]
    fn placeholders_are_filled_quoted_and_unknown_ones_refused() {
        let adapter =
            CommandAdapter::new("my-agent --task {instruction_file} --url {base_url} --key-var {token_env} -m {model} -C {workspace}")
                .unwrap();
        assert_eq!(
            adapter.command(&launch()),
            "my-agent --task '/run/specgap/task/message-1.md' --url 'http://127.0.0.1:4000/v1' --key-var 'OPENAI_API_KEY' -m 'm' -C '/workspace'"
        );
        let err = CommandAdapter::new("x {task_file}").unwrap_err();
        assert!(err.contains("unknown placeholder {task_file}"), "{err}");
        assert!(CommandAdapter::new("  ").is_err());
        assert!(CommandAdapter::new("python3 /a/b/../agent.py").unwrap_err().contains("has `..`"));
        // Braces that are not placeholders (shell or JSON) stay as written.
        assert_eq!(CommandAdapter::new("echo '{\"a\": 1}' ${HOME}").unwrap().command(&launch()), "echo '{\"a\": 1}' ${HOME}");
    }
}
