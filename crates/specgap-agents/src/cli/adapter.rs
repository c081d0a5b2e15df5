//! What an adapter declares (docs/adapters.md): how its CLI is found and mounted, started
//! non-interactively with the opening message, pointed at the gateway, resumed, and how its
//! tool output and its own log are read. One file per adapter implements [`Adapter`].

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};
use specgap_engine::session::{AgentError, ObservedResult};
use specgap_gateway::Protocol;
use specgap_protocol::action::FileAction;
use specgap_sandbox::WORKSPACE_MOUNT;

/// Where the agent's private home is mounted inside the sandbox (`HOME`).
pub const SANDBOX_HOME: &str = "/home/specgap";
/// Where the harness's files for the agent (the opening message, the system prompt, resume
/// messages) are mounted read-only inside the sandbox.
pub const SANDBOX_TASK_DIR: &str = "/run/specgap/task";
/// The variable holding the gateway token inside the sandbox (also the OpenAI SDKs' key
/// variable, so most CLIs need nothing else).
pub const TOKEN_ENV: &str = "OPENAI_API_KEY";

/// How the condition's system prompt reaches the agent (issue 14 item 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SystemPromptRoute {
    /// The CLI has an option that appends a system prompt: the prompt goes into its own file
    /// and the adapter's command passes it.
    Option,
    /// No such option: the prompt is a preamble of the opening message.
    Preamble,
}

/// What one start of the agent's program gets.
#[derive(Debug, Clone)]
pub struct Launch {
    /// The gateway's base URL for the adapter's first protocol ([`Adapter::protocols`]):
    /// `http://127.0.0.1:<port>/v1` for the OpenAI ones, `http://127.0.0.1:<port>` for
    /// Anthropic and Gemini.
    pub base_url: String,
    /// The per-episode gateway token (never the real key).
    pub token: String,
    /// The model name the gateway serves.
    pub model: String,
    /// The message this start is about (the opening message, or the message a resume
    /// answers), as a sandbox path.
    pub message_file: String,
    /// The harness tools' MCP server (`ask_user`, `submit`, `write_plan` as the condition
    /// offers them), for the CLI's MCP configuration.
    pub mcp: McpServer,
    /// The condition's system prompt as a sandbox path, when it goes through the CLI's own
    /// option ([`SystemPromptRoute::Option`]) and the condition adds one.
    pub system_prompt_file: Option<String>,
    /// Whether this start resumes the agent with a new message.
    pub resumed: bool,
    /// Extra model request fields (`--model-arg`).
    pub model_args: Map<String, Value>,
    /// The gateway's base URL for each protocol the adapter speaks
    /// ([`Adapter::protocols`]), as that protocol's SDKs want it (`.../v1` for OpenAI's,
    /// the bare origin for Anthropic's).
    pub protocol_urls: Vec<(Protocol, String)>,
    /// The condition's system prompt itself, when it goes through the CLI's own option (for
    /// CLIs that take it in a configuration file rather than a file path).
    pub system_prompt: Option<String>,
}

impl Launch {
    /// The gateway's base URL for `protocol` (empty when the adapter does not speak it).
    pub fn url(&self, protocol: Protocol) -> &str {
        self.protocol_urls.iter().find(|(p, _)| *p == protocol).map_or("", |(_, url)| url.as_str())
    }

    /// The number of this start (1 for the first; from the message file's name
    /// `message-<n>.md`), 1 when the name has no number.
    pub fn start_number(&self) -> u32 {
        Path::new(&self.message_file)
            .file_stem()
            .and_then(|s| s.to_str())
            .and_then(|s| s.strip_prefix("message-"))
            .and_then(|n| n.parse().ok())
            .unwrap_or(1)
    }
}

/// The harness tools' MCP server inside the sandbox (stdio): what an adapter writes into its
/// CLI's MCP configuration. The harness also writes the common `{"mcpServers": …}` form to
/// [`McpServer::config_file`] for every agent.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct McpServer {
    /// The server's name in the configuration (`specgap`).
    pub name: String,
    /// The program to start (a sandbox path).
    pub command: String,
    /// Its arguments (`mcp`).
    pub args: Vec<String>,
    /// The variables it needs (the bridge socket and token; also in every process's
    /// environment, for CLIs that do not pass an MCP server's own).
    pub env: Vec<(String, String)>,
    /// The common MCP configuration file the harness wrote (a sandbox path).
    pub config_file: String,
}

/// What the agent's own log says once its program has ended.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct LogReport {
    /// `Some` when the agent gave its completion signal (an agent-declared `submit`), with
    /// what it gave as its final output.
    pub signalled_submit: Option<Option<String>>,
    /// Results of the last turn's calls that no request carried.
    pub results: Vec<ObservedResult>,
    /// Actions its structured tools did, from its log.
    pub actions: Vec<FileAction>,
    /// Its final reply text, when the log has one.
    pub final_text: Option<String>,
    /// What could not be read (a link refused, a file too large, a line that does not
    /// parse), for the trajectory.
    pub note: String,
    /// `Some` when the log is in a format this adapter does not know (another version of
    /// the CLI): the episode ends as an infrastructure error with this message, which names
    /// the adapter and version, never as a score.
    pub unknown_format: Option<String>,
}

/// What one start's JSON-lines event output says (opencode's `--format json`, gemini-cli's
/// `-o stream-json`), as the adapters' `read_events` return it.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct EventsReading {
    /// The CLI's session id, from the first event that names one.
    pub session: Option<String>,
    /// Normalized actions of its structured tools, in order of their results.
    pub actions: Vec<FileAction>,
    /// Results of the `unanswered` calls (the last turn's, whose results no request carried).
    pub results: Vec<ObservedResult>,
    /// Its last reply text (an assistant message's deltas joined).
    pub final_text: Option<String>,
    /// Lines that do not parse, event types not known, errors it reported.
    pub notes: Vec<String>,
}

/// The event log of an adapter's latest start: each start of the program writes its events to
/// `.specgap/<stem>-<n>.jsonl` in the private home (n = the start's number), and the log read
/// after the program ends is the latest start's. Shared by the adapters whose CLI prints its
/// events to standard output (claude-code, codex).
#[derive(Debug)]
pub struct StartEvents {
    stem: &'static str,
    latest: std::sync::Mutex<String>,
}

impl StartEvents {
    /// The logs named `<stem>-<n>.jsonl`, the first start's being the latest so far.
    pub fn new(stem: &'static str) -> Self {
        StartEvents { stem, latest: std::sync::Mutex::new(Self::file_of(stem, 1)) }
    }

    /// The log of start `start`, relative to the home.
    pub fn file(&self, start: u32) -> String {
        Self::file_of(self.stem, start)
    }

    /// Records start `start` as the latest and returns its log, relative to the home.
    pub fn begin(&self, start: u32) -> String {
        let file = self.file(start);
        if let Ok(mut latest) = self.latest.lock() {
            latest.clone_from(&file);
        }
        file
    }

    /// The latest start's log, relative to the home.
    pub fn latest(&self) -> String {
        self.latest.lock().map(|e| e.clone()).unwrap_or_else(|p| p.into_inner().clone())
    }

    fn file_of(stem: &str, start: u32) -> String {
        format!("{SPECGAP_HOME_DIR}/{stem}-{start}.jsonl")
    }
}

/// The harness's own directory in a `cli:` agent's private home (logs, configuration files).
pub const SPECGAP_HOME_DIR: &str = ".specgap";

/// One `cli:` adapter (module guide).
pub trait Adapter: Send + Sync + std::fmt::Debug {
    /// The agent spec (`cli:mini-swe-agent`, `cli:command=...`).
    fn spec(&self) -> String;

    /// Host paths of its installation, mounted read-only at the same path.
    fn mounts(&self) -> Vec<PathBuf>;

    /// Directories put first on the program's `PATH` (inside the sandbox).
    fn path_dirs(&self) -> Vec<PathBuf>;

    /// The programs its command starts by name, as host paths: in an image environment each
    /// gets a wrapper that starts it through the host's loader ([`super::image`]), and the
    /// directories of [`Adapter::path_dirs`] are left off `PATH`. By default every executable
    /// file in those directories outside the host's system directories.
    fn entry_programs(&self) -> Vec<PathBuf> {
        let system = ["/usr", "/bin", "/sbin", "/lib", "/lib64"];
        let mut programs = Vec::new();
        for dir in self.path_dirs().into_iter().filter(|d| !system.iter().any(|s| d.starts_with(s))) {
            let Ok(entries) = std::fs::read_dir(&dir) else { continue };
            let mut found: Vec<PathBuf> = entries
                .flatten()
                .map(|e| e.path())
                .filter(|p| {
                    use std::os::unix::fs::PermissionsExt as _;
                    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
                })
                .collect();
            found.sort();
            programs.extend(found);
        }
        programs
    }

    /// Environment of the program besides the common one: configuration locations, and every
    /// switch that turns telemetry, update checks and anything else that would wait on the
    /// network off.
    fn env(&self, launch: &Launch) -> Vec<(String, String)>;

    /// The model protocols its program speaks, whose upstreams the gateway serves (OpenAI
    /// chat completions and Responses unless the adapter says otherwise).
    fn protocols(&self) -> Vec<Protocol> {
        vec![Protocol::OpenaiChat, Protocol::OpenaiResponses]
    }

    /// How the condition's system prompt reaches it.
    fn system_prompt_route(&self) -> SystemPromptRoute {
        SystemPromptRoute::Preamble
    }

    /// Writes its configuration files into the private home (`home` on the host) before a
    /// start; every write goes through [`super::home::write_file`], which never follows a link.
    ///
    /// # Errors
    /// [`AgentError`] when a file cannot be written.
    fn prepare_home(&self, _home: &Path, _launch: &Launch) -> Result<(), AgentError> {
        Ok(())
    }

    /// The shell command (run by `/bin/sh -c` in the workspace) that starts the program,
    /// non-interactively.
    fn command(&self, launch: &Launch) -> String;

    /// The start command in an image environment ([`super::image`]), where host paths of the
    /// host's system directories are the image's: the same as [`Adapter::command`] unless the
    /// command names such a program by its host path.
    fn command_on_image(&self, launch: &Launch) -> String {
        self.command(launch)
    }

    /// Whether it can be started again with a new message when the protocol expects another
    /// turn after its program ended.
    fn can_resume(&self) -> bool;

    /// Its ask channel when the run names none (module guide of [`super::channel`]; seed 002
    /// App. A.9.3): `mcp` unless the adapter says otherwise.
    fn default_ask_channel(&self) -> super::channel::AskChannel {
        super::channel::AskChannel::Mcp
    }

    /// The CLI's own question tool, when this adapter serves it (`--ask-channel native`,
    /// seed 002 App. A.9.3): the local server of the CLI's that the harness answers its
    /// questions through ([`super::opencode_server`]). `None` (the default): the CLI has none,
    /// or the agent was configured with another channel.
    fn question_server(&self) -> Option<super::opencode_server::QuestionServer> {
        None
    }

    /// The name the model sees the CLI's own question tool under, when the harness serves it
    /// ([`Adapter::question_server`]), so the condition's prompts name that tool under
    /// `--ask-channel native`. `None` (the default): no native tool is served.
    fn native_question_tool(&self) -> Option<String> {
        None
    }

    /// The name under which the model sees the harness's MCP tool `tool` (`ask_user`,
    /// `submit`) of the server [`super::bridge::MCP_SERVER_NAME`], as the condition's prompts
    /// name it. Default: `tool` itself (an agent that runs the harness's commands, or one whose
    /// CLI offers MCP tools by their own names).
    fn harness_tool_name(&self, tool: &str) -> String {
        tool.to_string()
    }

    /// Whether generating requests that offer no tools are side requests (titles, summaries)
    /// rather than turns.
    fn toolless_requests_are_side(&self) -> bool {
        false
    }

    /// A tool result as the agent's conversation holds it, in the harness's command-result
    /// form where the adapter knows its tool's output (`exit status N`, `--- stdout ---`, …),
    /// and whether it is a shell command that exited 0 with blank output.
    fn tool_result(&self, tool: &str, content: &str) -> (String, bool);

    /// What one of its structured tools did, in the normalized vocabulary
    /// (`specgap_protocol::action`), from the call's arguments and its result as the next
    /// request carried it (`result` as sent, `is_error` as the protocol marked it). Called as
    /// results arrive, so an episode that ends while the program runs keeps them; shell tools
    /// are left to the report's shell analysis (none by default).
    fn call_actions(&self, _tool: &str, _arguments: &Value, _result: &str, _is_error: bool) -> Vec<FileAction> {
        Vec::new()
    }

    /// Reads its own log from the home once the program has ended; `unanswered` are the last
    /// turn's calls (id, tool) whose results no request carried.
    fn read_log(&self, home: &Path, unanswered: &[(String, String)]) -> LogReport;
}

/// `text` quoted for `/bin/sh` (single quotes, a single quote as `'\''`).
pub fn shell_quote(text: &str) -> String {
    let mut quoted = String::with_capacity(text.len() + 2);
    quoted.push('\'');
    for c in text.chars() {
        if c == '\'' {
            quoted.push_str("'\\''");
        } else {
            quoted.push(c);
        }
    }
    quoted.push('\'');
    quoted
}

/// A command result in the harness's form (what `run_experiment` / `bash` results look like,
/// so the report's shell reader reads external agents' commands alike): the status line, then
/// standard output; `merged` says the agent's tool mixes standard error into it.
pub fn command_result(status: Option<i64>, output: &str) -> String {
    let head = match status {
        Some(code) => format!("exit status {code}"),
        None => "killed".to_string(),
    };
    if output.is_empty() { format!("{head}\n(no output)") } else { format!("{head}\n--- stdout ---\n{output}") }
}

/// A path an agent's tool named, as the measures name workspace files: relative to the
/// workspace when it is inside it (`/workspace/src/a.py` → `src/a.py`), else as given.
pub fn workspace_path(path: &str) -> String {
    let inside = path.strip_prefix(WORKSPACE_MOUNT).and_then(|rest| rest.strip_prefix('/'));
    match inside {
        Some(rest) if !rest.is_empty() => rest.to_string(),
        _ => path.to_string(),
    }
}

/// A tool result without the `<system-reminder>…</system-reminder>` blocks some CLIs append to
/// what their tools printed (Claude Code adds its token count that way), trailing blank lines
/// of the cut included.
pub fn without_reminders(text: &str) -> String {
    const OPEN: &str = "<system-reminder>";
    const CLOSE: &str = "</system-reminder>";
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    let mut cut = false;
    while let Some(start) = rest.find(OPEN) {
        let Some(len) = rest[start..].find(CLOSE) else { break };
        out.push_str(&rest[..start]);
        rest = &rest[start + len + CLOSE.len()..];
        cut = true;
    }
    out.push_str(rest);
    if cut { out.trim_end_matches('\n').to_string() } else { out }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_quoting_survives_every_character() {
        assert_eq!(shell_quote("plain"), "'plain'");
        assert_eq!(shell_quote("it's $HOME `x`"), "'it'\\''s $HOME `x`'");
        let out =
            std::process::Command::new("/bin/sh").arg("-c").arg(format!("printf %s {}", shell_quote("a'b\"c$d\\e\nf"))).output().unwrap();
        assert_eq!(String::from_utf8(out.stdout).unwrap(), "a'b\"c$d\\e\nf");
    }

    #[test]
    fn workspace_paths_and_reminders() {
        assert_eq!(workspace_path("/workspace/src/a.py"), "src/a.py");
        assert_eq!(workspace_path("/workspace"), "/workspace");
        assert_eq!(workspace_path("/workspacex/a"), "/workspacex/a");
        assert_eq!(workspace_path("/etc/passwd"), "/etc/passwd");
        assert_eq!(without_reminders("hello\n\n<system-reminder>\n<total_tokens>9 left</total_tokens>\n</system-reminder>"), "hello");
        assert_eq!(without_reminders("a<system-reminder>x</system-reminder>b"), "ab");
        assert_eq!(without_reminders("kept\n"), "kept\n");
        assert_eq!(without_reminders("open <system-reminder> never closed"), "open <system-reminder> never closed");
    }

    #[test]
    fn command_results_read_like_the_harness_ones() {
        assert_eq!(command_result(Some(0), "a\n"), "exit status 0\n--- stdout ---\na\n");
        assert_eq!(command_result(Some(2), ""), "exit status 2\n(no output)");
        assert_eq!(command_result(None, "x"), "killed\n--- stdout ---\nx");
    }
}
