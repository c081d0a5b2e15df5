//! `cli:codex`: OpenAI's Codex CLI (npm `@openai/codex` 0.171.0, the native linux x86_64
//! build of its platform package), run as `codex exec` inside the episode's sandbox. It
//! speaks the OpenAI Responses protocol (streamed) through a model provider of its own
//! configuration that points at the gateway.
//!
//! | what | how |
//! | --- | --- |
//! | installation | `specgap agents install codex`: `node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex` in the versioned cache (the npm launcher `bin/codex.js` only picks this file), mounted read-only, with its `codex-path` directory (its `rg`) on `PATH` |
//! | start | `codex exec --json --skip-git-repo-check --dangerously-bypass-approvals-and-sandbox -` with the message on standard input, events into `~/.specgap/codex-events-<n>.jsonl` |
//! | model endpoint | `~/.codex/config.toml` (`CODEX_HOME`): `model`, `model_provider = "specgap"`, `[model_providers.specgap]` with the gateway's `/v1` as `base_url`, `env_key = "OPENAI_API_KEY"` (the gateway token), `wire_api = "responses"` |
//! | network | `web_search = "disabled"` (else it offers the model the Responses API's hosted `web_search` tool with `external_web_access`, which the upstream would run), `check_for_update_on_startup = false`, `[analytics] enabled = false` (else it resolves `ab.chatgpt.com`), `[features] plugins = false` (else it syncs its curated plugins from `api.github.com`), `[feedback] enabled = false`, `[otel] exporter = "none"`; measured against a scripted server in a network namespace of its own, 0.171.0 so configured connected to nothing else and sent no side request |
//! | permissions and its own sandbox | `--dangerously-bypass-approvals-and-sandbox` (its bubblewrap sandbox would nest in ours and fail closed), `approval_policy = "never"`, `sandbox_mode = "danger-full-access"` |
//! | system prompt | `developer_instructions` in its configuration (appended to its own instructions as a developer message); nothing under `blind` |
//! | resume | `codex exec resume --last …` (the private home holds this episode's session alone), the new message on standard input |
//! | tool output | `exec_command` / `shell` results (`Process exited with code N` … `Output:`) become the harness's `exit status N` form |
//! | log | the JSON-lines events of each start (read without following links): `thread.started`, `item.started` / `item.completed` (`agent_message`, `command_execution`, `file_change`, `mcp_tool_call`), `turn.completed`; a log that does not start with `thread.started` is an unknown format, an infrastructure error naming the version |
//! | results no request carried | the last turn's unanswered command calls (`exec_command`, `shell`, `shell_command`) take the start's last `command_execution` items in order (the items' ids are not the calls'): `exit_code` and `aggregated_output` in the harness's command form; an item that never completed gives none |
//! | normalized actions | `file_change` items → write (`add`) or edit (`update`, `delete`); commands are read by the shell analysis from the turns' `exec_command` calls |
//! | model arguments | not passed (its provider configuration has no request-body option); a warning says so |
//! | completion signal | none: it ends its turn and exits; the changed workspace is submitted (`agent_exit`) unless it called `submit` |
//! | MCP | `[mcp_servers.specgap]` with `command`, `args` and `env_vars = ["SPECGAP_BRIDGE_SOCKET", "SPECGAP_BRIDGE_TOKEN"]` (it starts MCP servers with a filtered environment); its tools reach the model as the namespace `mcp__specgap` (checked against the bridge: `ask_user` reached the harness) |
//! | plan mode | not applicable |

use std::path::{Path, PathBuf};

use serde_json::Value;
use specgap_engine::session::{AgentError, ObservedResult};
use specgap_gateway::Protocol;
use specgap_protocol::action::{ActionKind, FileAction};

use super::adapter::{
    Adapter, Launch, LogReport, SANDBOX_HOME, SPECGAP_HOME_DIR, StartEvents, SystemPromptRoute, TOKEN_ENV, command_result, shell_quote,
    workspace_path,
};
use super::home;

/// The default version `specgap agents install codex` installs.
pub const DEFAULT_VERSION: &str = "0.171.0";
/// The platform directory of the native build inside the installation directory.
const PLATFORM_DIR: &str = "node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl";
/// The program inside the installation directory.
pub const ENTRY: &str = "node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex";
/// Its configuration directory in the home (`CODEX_HOME`).
const CODEX_HOME: &str = ".codex";
/// The directory in the home for the harness's files about this agent.
const SPECGAP_DIR: &str = SPECGAP_HOME_DIR;
/// Each start's events go to `{SPECGAP_DIR}/codex-events-<n>.jsonl` ([`StartEvents`]).
const EVENTS_STEM: &str = "codex-events";
/// The model provider the configuration defines.
const PROVIDER: &str = "specgap";
/// Largest events file read back.
const EVENTS_LIMIT: u64 = 64 << 20;

/// The adapter over one installation.
#[derive(Debug)]
pub struct Codex {
    dir: PathBuf,
    version: String,
    /// The event log of each start.
    events: StartEvents,
}

impl Codex {
    /// The adapter over the installation directory `dir` of `version`.
    ///
    /// # Errors
    /// A message when `dir` holds no program.
    pub fn new(dir: &Path, version: &str) -> Result<Self, String> {
        if !dir.join(ENTRY).is_file() {
            return Err(format!("{} holds no Codex CLI ({ENTRY} is missing)", dir.display()));
        }
        Ok(Codex { dir: dir.to_path_buf(), version: version.to_string(), events: StartEvents::new(EVENTS_STEM) })
    }

    fn unknown_format(&self, why: &str) -> String {
        format!(
            "cli:codex@{} wrote an event log this adapter cannot read ({why}); the adapter knows Codex CLI {DEFAULT_VERSION}'s `exec --json` output",
            self.version
        )
    }

    /// Its `config.toml` for `launch`.
    fn config(&self, launch: &Launch) -> toml::Table {
        let mut provider = toml::Table::new();
        provider.insert("name".into(), "specgap gateway".into());
        provider.insert("base_url".into(), launch.url(Protocol::OpenaiResponses).into());
        provider.insert("env_key".into(), TOKEN_ENV.into());
        provider.insert("wire_api".into(), "responses".into());
        let mut providers = toml::Table::new();
        providers.insert(PROVIDER.into(), provider.into());
        let switch = |key: &str, value: toml::Value| {
            let mut table = toml::Table::new();
            table.insert(key.into(), value);
            toml::Value::Table(table)
        };
        let mut config = toml::Table::new();
        config.insert("model".into(), launch.model.clone().into());
        config.insert("model_provider".into(), PROVIDER.into());
        config.insert("approval_policy".into(), "never".into());
        config.insert("sandbox_mode".into(), "danger-full-access".into());
        config.insert("check_for_update_on_startup".into(), false.into());
        // Else it offers the model the Responses API's hosted `web_search` tool (with
        // `external_web_access`), which the upstream would run: a way out to the web that
        // bypasses the sandbox.
        config.insert("web_search".into(), "disabled".into());
        if let Some(prompt) = launch.system_prompt.as_ref().filter(|p| !p.trim().is_empty()) {
            config.insert("developer_instructions".into(), prompt.clone().into());
        }
        config.insert("model_providers".into(), providers.into());
        config.insert("analytics".into(), switch("enabled", false.into()));
        config.insert("feedback".into(), switch("enabled", false.into()));
        config.insert("otel".into(), switch("exporter", "none".into()));
        config.insert("features".into(), switch("plugins", false.into()));
        let mcp = &launch.mcp;
        if !mcp.command.is_empty() {
            let mut server = toml::Table::new();
            server.insert("command".into(), mcp.command.clone().into());
            server.insert("args".into(), toml::Value::Array(mcp.args.iter().map(|a| a.clone().into()).collect()));
            // Codex starts MCP servers with a filtered environment: the bridge's socket and
            // token must be named to reach it.
            let passed = mcp.env.iter().map(|(k, _)| toml::Value::from(k.as_str())).collect();
            server.insert("env_vars".into(), toml::Value::Array(passed));
            let mut servers = toml::Table::new();
            servers.insert(mcp.name.clone(), server.into());
            config.insert("mcp_servers".into(), servers.into());
        }
        config
    }
}

impl Adapter for Codex {
    fn spec(&self) -> String {
        format!("cli:codex@{}", self.version)
    }

    fn mounts(&self) -> Vec<PathBuf> {
        vec![self.dir.clone()]
    }

    fn path_dirs(&self) -> Vec<PathBuf> {
        vec![self.dir.join(PLATFORM_DIR).join("bin"), self.dir.join(PLATFORM_DIR).join("codex-path")]
    }

    fn protocols(&self) -> Vec<Protocol> {
        vec![Protocol::OpenaiResponses]
    }

    fn env(&self, _launch: &Launch) -> Vec<(String, String)> {
        [("CODEX_HOME", format!("{SANDBOX_HOME}/{CODEX_HOME}")), ("RUST_LOG", "error".to_string()), ("NO_COLOR", "1".to_string())]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect()
    }

    fn system_prompt_route(&self) -> SystemPromptRoute {
        SystemPromptRoute::Option
    }

    fn prepare_home(&self, home_dir: &Path, launch: &Launch) -> Result<(), AgentError> {
        if !launch.model_args.is_empty() {
            tracing::warn!(
                "cli:codex does not pass --model-arg values to the model (its provider configuration has no request-body option)"
            );
        }
        let text = toml::to_string(&self.config(launch))
            .map_err(|e| AgentError::with_source("cannot write the Codex CLI configuration", false, e))?;
        home::write_file(home_dir, &Path::new(CODEX_HOME).join("config.toml"), text.as_bytes())
            .map_err(|e| AgentError::with_source("cannot write the Codex CLI configuration", false, e))
    }

    fn command(&self, launch: &Launch) -> String {
        let events = self.events.begin(launch.start_number());
        let verb = if launch.resumed { "codex exec resume --last" } else { "codex exec" };
        format!(
            "mkdir -p {}\nexec {verb} --json --skip-git-repo-check --dangerously-bypass-approvals-and-sandbox - < {} > {}",
            shell_quote(&format!("{SANDBOX_HOME}/{SPECGAP_DIR}")),
            shell_quote(&launch.message_file),
            shell_quote(&format!("{SANDBOX_HOME}/{events}")),
        )
    }

    fn can_resume(&self) -> bool {
        true
    }

    /// The paper runs the vendor CLIs with text exchanges (seed 002 App. A.9.3).
    fn default_ask_channel(&self) -> super::channel::AskChannel {
        super::channel::AskChannel::Text
    }

    fn toolless_requests_are_side(&self) -> bool {
        true
    }

    fn tool_result(&self, tool: &str, content: &str) -> (String, bool) {
        match tool {
            "exec_command" | "shell" | "shell_command" => exec_result(content).unwrap_or_else(|| (content.to_string(), false)),
            _ => (content.to_string(), false),
        }
    }

    fn read_log(&self, home_dir: &Path, unanswered: &[(String, String)]) -> LogReport {
        let mut report = LogReport::default();
        let file = self.events.latest();
        let bytes = match home::read_file(home_dir, Path::new(&file), EVENTS_LIMIT) {
            Ok(bytes) => bytes,
            Err(home::HomeError::Missing(_)) => {
                report.note = format!("no event log ({file}): the program wrote nothing");
                return report;
            }
            Err(e) => {
                report.note = e.to_string();
                return report;
            }
        };
        match parse_events(&bytes) {
            Ok(log) => {
                report.results = last_turn_results(&log.commands, unanswered);
                report.actions = log.actions;
                report.final_text = log.final_text;
                report.note = log.note;
            }
            Err(why) => report.unknown_format = Some(self.unknown_format(&why)),
        }
        report
    }
}

/// An `exec_command` result (`Chunk ID`, `Wall time`, `Process exited with code N`,
/// `Original token count`, `Output:` and the output) in the harness's form; `None` for a
/// command still running (`Process running with session ID …`) or another shape.
fn exec_result(content: &str) -> Option<(String, bool)> {
    let (head, output) = content.split_once("Output:\n").unwrap_or((content, ""));
    let code = head.lines().find_map(|l| l.strip_prefix("Process exited with code ")).and_then(|c| c.trim().parse::<i64>().ok())?;
    Some((command_result(Some(code), output), code == 0 && output.trim().is_empty()))
}

/// The tools whose calls Codex CLI runs as a `command_execution` item.
const COMMAND_TOOLS: &[&str] = &["exec_command", "shell", "shell_command"];

/// What one start's events say.
#[derive(Debug, Default)]
struct CodexLog {
    /// Its `file_change` items as actions.
    actions: Vec<FileAction>,
    /// Its last `agent_message`.
    final_text: Option<String>,
    /// Each `command_execution` item in the order it started: its exit code and aggregated
    /// output once it completed with one (`None` while it ran, or when it was declined).
    commands: Vec<Option<(i64, String)>>,
    /// What could not be read.
    note: String,
}

/// The results of the last turn's command calls that no request carried (`unanswered`, in
/// order), from the start's `command_execution` items: its item ids are not the calls' ids, so
/// the k unanswered command calls are the start's last k items, in order; an item that never
/// completed gives none. The result is in the harness's command form, as
/// [`Adapter::tool_result`] makes it of the text the model would have read.
fn last_turn_results(commands: &[Option<(i64, String)>], unanswered: &[(String, String)]) -> Vec<ObservedResult> {
    let calls: Vec<&(String, String)> = unanswered.iter().filter(|(_, tool)| COMMAND_TOOLS.contains(&tool.as_str())).collect();
    let first = commands.len().saturating_sub(calls.len());
    let paired = calls.len().min(commands.len());
    calls[calls.len() - paired..]
        .iter()
        .zip(&commands[first..])
        .filter_map(|((call_id, tool), command)| {
            let (code, output) = command.as_ref()?;
            Some(ObservedResult {
                call_id: call_id.clone(),
                tool: tool.clone(),
                output: command_result(Some(*code), output),
                is_error: false,
                blank_success: *code == 0 && output.trim().is_empty(),
            })
        })
        .collect()
}

/// One start's events; `Err` names what makes the format unknown.
fn parse_events(bytes: &[u8]) -> Result<CodexLog, String> {
    let text = String::from_utf8_lossy(bytes);
    let mut lines = text.lines().filter(|l| !l.trim().is_empty()).peekable();
    let Some(first) = lines.peek() else { return Ok(CodexLog::default()) };
    let first: Value = serde_json::from_str(first).map_err(|_| "its first line is not JSON".to_string())?;
    if first["type"] != "thread.started" {
        return Err("its first event is not thread.started".into());
    }
    let mut log = CodexLog::default();
    let mut command_ids: Vec<String> = Vec::new();
    let mut unreadable = 0usize;
    for line in lines {
        let Ok(event) = serde_json::from_str::<Value>(line) else {
            unreadable += 1;
            continue;
        };
        let item = &event["item"];
        let completed = event["type"] == "item.completed";
        if item["type"] == "command_execution" && (completed || event["type"] == "item.started") {
            let id = item["id"].as_str().unwrap_or_default().to_string();
            let at = command_ids.iter().position(|c| *c == id).unwrap_or_else(|| {
                command_ids.push(id);
                log.commands.push(None);
                log.commands.len() - 1
            });
            if completed && let Some(code) = item["exit_code"].as_i64() {
                log.commands[at] = Some((code, item["aggregated_output"].as_str().unwrap_or_default().to_string()));
            }
            continue;
        }
        if !completed {
            continue;
        }
        match item["type"].as_str() {
            Some("agent_message") => log.final_text = item["text"].as_str().map(str::to_string),
            Some("file_change") => log.actions.extend(file_changes(item)),
            _ => {}
        }
    }
    if unreadable > 0 {
        log.note = format!("{unreadable} line(s) of the event log are not JSON");
    }
    Ok(log)
}

/// A `file_change` item's changes as actions.
fn file_changes(item: &Value) -> Vec<FileAction> {
    let ok = item["status"].as_str().is_none_or(|s| s == "completed");
    item["changes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|change| {
            let path = workspace_path(change["path"].as_str()?);
            let kind = if change["kind"] == "add" { ActionKind::Write } else { ActionKind::Edit };
            Some(FileAction::on(kind, path, "file_change", ok))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::adapter::McpServer;

    fn adapter(dir: &Path) -> Codex {
        let program = dir.join(ENTRY);
        std::fs::create_dir_all(program.parent().unwrap()).unwrap();
        std::fs::write(&program, "").unwrap();
        Codex::new(dir, DEFAULT_VERSION).unwrap()
    }

    fn launch(resumed: bool, system: Option<&str>) -> Launch {
        Launch {
            base_url: "http://127.0.0.1:4000/v1".into(),
            token: "sgw-t".into(),
            model: "gpt-x".into(),
            message_file: format!("/run/specgap/task/message-{}.md", if resumed { 2 } else { 1 }),
            mcp: McpServer::default(),
            system_prompt_file: system.map(|_| "/run/specgap/task/system-prompt.md".into()),
            resumed,
            model_args: serde_json::Map::new(),
            protocol_urls: vec![(Protocol::OpenaiResponses, "http://127.0.0.1:4000/v1".into())],
            system_prompt: system.map(str::to_string),
        }
    }

    #[test]
    fn the_command_runs_exec_and_resumes_the_last_session() {
        let dir = tempfile::tempdir().unwrap();
        let adapter = adapter(dir.path());
        assert_eq!(
            adapter.command(&launch(false, None)),
            "mkdir -p '/home/specgap/.specgap'\nexec codex exec --json --skip-git-repo-check --dangerously-bypass-approvals-and-sandbox - \
             < '/run/specgap/task/message-1.md' > '/home/specgap/.specgap/codex-events-1.jsonl'"
        );
        assert_eq!(
            adapter.command(&launch(true, None)),
            "mkdir -p '/home/specgap/.specgap'\nexec codex exec resume --last --json --skip-git-repo-check --dangerously-bypass-approvals-and-sandbox - \
             < '/run/specgap/task/message-2.md' > '/home/specgap/.specgap/codex-events-2.jsonl'"
        );
        assert_eq!(adapter.events.latest(), ".specgap/codex-events-2.jsonl");
        assert!(Codex::new(&dir.path().join("none"), "0.171.0").unwrap_err().contains("bin/codex is missing"));
    }

    #[test]
    fn the_configuration_points_at_the_gateway_and_switches_the_network_off() {
        let dir = tempfile::tempdir().unwrap();
        let home_dir = dir.path().join("home");
        std::fs::create_dir_all(&home_dir).unwrap();
        let adapter = adapter(dir.path());
        let mut with_mcp = launch(false, Some("Ask before you change \"rates\".\n"));
        with_mcp.mcp = McpServer {
            name: "specgap".into(),
            command: "/opt/specgap-bridge".into(),
            args: vec!["mcp".into()],
            env: vec![("SPECGAP_BRIDGE_SOCKET".into(), "/s".into()), ("SPECGAP_BRIDGE_TOKEN".into(), "t".into())],
            config_file: String::new(),
        };
        adapter.prepare_home(&home_dir, &with_mcp).unwrap();
        let written: toml::Table = std::fs::read_to_string(home_dir.join(".codex/config.toml")).unwrap().parse().unwrap();
        let expected: toml::Table = r#"
            model = "gpt-x"
            model_provider = "specgap"
            approval_policy = "never"
            sandbox_mode = "danger-full-access"
            check_for_update_on_startup = false
            web_search = "disabled"
            developer_instructions = "Ask before you change \"rates\".\n"
            [model_providers.specgap]
            name = "specgap gateway"
            base_url = "http://127.0.0.1:4000/v1"
            env_key = "OPENAI_API_KEY"
            wire_api = "responses"
            [analytics]
            enabled = false
            [feedback]
            enabled = false
            [otel]
            exporter = "none"
            [features]
            plugins = false
            [mcp_servers.specgap]
            command = "/opt/specgap-bridge"
            args = ["mcp"]
            env_vars = ["SPECGAP_BRIDGE_SOCKET", "SPECGAP_BRIDGE_TOKEN"]
        "#
        .parse()
        .unwrap();
        assert_eq!(written, expected);
        adapter.prepare_home(&home_dir, &launch(false, None)).unwrap();
        let again: toml::Table = std::fs::read_to_string(home_dir.join(".codex/config.toml")).unwrap().parse().unwrap();
        assert!(!again.contains_key("developer_instructions"), "blind adds nothing");
    }

    #[test]
    fn exec_results_read_as_command_results() {
        let dir = tempfile::tempdir().unwrap();
        let adapter = adapter(dir.path());
        assert_eq!(
            adapter.tool_result(
                "exec_command",
                "Chunk ID: fd06e4\nWall time: 0.0000 seconds\nProcess exited with code 0\nOriginal token count: 3\nOutput:\nhello world\n"
            ),
            ("exit status 0\n--- stdout ---\nhello world\n".into(), false)
        );
        assert_eq!(
            adapter.tool_result(
                "exec_command",
                "Chunk ID: 1e9f37\nWall time: 0.0000 seconds\nProcess exited with code 0\nOriginal token count: 0\nOutput:\n"
            ),
            ("exit status 0\n(no output)".into(), true)
        );
        assert_eq!(
            adapter.tool_result(
                "exec_command",
                "Chunk ID: 8\nWall time: 0.0 seconds\nProcess exited with code 2\nOriginal token count: 13\nOutput:\nls: nope\n"
            ),
            ("exit status 2\n--- stdout ---\nls: nope\n".into(), false)
        );
        let running = "Chunk ID: 9\nWall time: 10.0 seconds\nProcess running with session ID 3\nOutput:\npartial";
        assert_eq!(adapter.tool_result("exec_command", running), (running.into(), false));
        assert_eq!(adapter.tool_result("view_image", "x"), ("x".into(), false));
    }

    /// Events as 0.171.0 wrote them against the scripted server (file changes trimmed).
    const EVENTS: &str = r#"{"type":"thread.started","thread_id":"01a23154-8594-7701-872c-1f199f6e8cd1"}
{"type":"item.completed","item":{"id":"item_0","type":"error","message":"Model metadata for `gpt-x` not found."}}
{"type":"turn.started"}
{"type":"item.started","item":{"id":"item_1","type":"command_execution","command":"/bin/bash -lc 'cat hello.txt'","aggregated_output":"","exit_code":null,"status":"in_progress"}}
{"type":"item.completed","item":{"id":"item_1","type":"command_execution","command":"/bin/bash -lc 'cat hello.txt'","aggregated_output":"hello world\n","exit_code":0,"status":"completed"}}
{"type":"item.completed","item":{"id":"item_2","type":"file_change","changes":[{"path":"/workspace/src/a.py","kind":"update"},{"path":"/workspace/NOTES.md","kind":"add"}],"status":"completed"}}
{"type":"item.completed","item":{"id":"item_3","type":"agent_message","text":"First done."}}
{"type":"turn.completed","usage":{"input_tokens":300,"cached_input_tokens":0,"output_tokens":30,"reasoning_output_tokens":0}}
"#;

    #[test]
    fn the_event_log_becomes_actions_and_the_final_text() {
        let dir = tempfile::tempdir().unwrap();
        let home_dir = dir.path().join("home");
        std::fs::create_dir_all(home_dir.join(SPECGAP_DIR)).unwrap();
        std::fs::write(home_dir.join(StartEvents::new(EVENTS_STEM).file(1)), EVENTS).unwrap();
        let report = adapter(dir.path()).read_log(&home_dir, &[]);
        assert_eq!(report.unknown_format, None);
        assert_eq!(report.final_text.as_deref(), Some("First done."));
        assert_eq!(
            report.actions,
            vec![
                FileAction::on(ActionKind::Edit, "src/a.py", "file_change", true),
                FileAction::on(ActionKind::Write, "NOTES.md", "file_change", true)
            ]
        );
        assert_eq!(report.note, "");
    }

    /// Events 0.171.0 wrote against the scripted server, copied when it sent the request that
    /// carried its third command's result: three commands run (exit 0 with output, exit 2,
    /// exit 0 with none).
    const RECORDED: &str = include_str!("../../tests/fixtures/codex-0.171.0-events-before-the-last-result.jsonl");

    fn read_recorded(events: &str, unanswered: &[(&str, &str)]) -> LogReport {
        let dir = tempfile::tempdir().unwrap();
        let home_dir = dir.path().join("home");
        std::fs::create_dir_all(home_dir.join(SPECGAP_DIR)).unwrap();
        std::fs::write(home_dir.join(StartEvents::new(EVENTS_STEM).file(1)), events).unwrap();
        let unanswered: Vec<(String, String)> = unanswered.iter().map(|(id, tool)| (id.to_string(), tool.to_string())).collect();
        adapter(dir.path()).read_log(&home_dir, &unanswered)
    }

    #[test]
    fn the_last_turns_command_results_that_no_request_carried_are_read_from_its_command_items() {
        let blank = ObservedResult {
            call_id: "call_3".into(),
            tool: "exec_command".into(),
            output: "exit status 0\n(no output)".into(),
            is_error: false,
            blank_success: true,
        };
        let report = read_recorded(RECORDED, &[("call_3", "exec_command")]);
        assert_eq!((report.unknown_format.as_deref(), report.note.as_str()), (None, ""));
        assert_eq!(report.results, vec![blank.clone()]);
        // Two unanswered commands are the start's last two items, in order; a harness call
        // among them (its result came through the bridge) takes none.
        let report = read_recorded(RECORDED, &[("call_2", "exec_command"), ("call_9", "mcp__specgap__submit"), ("call_3", "exec_command")]);
        let failed = ObservedResult {
            call_id: "call_2".into(),
            tool: "exec_command".into(),
            output: "exit status 2\n--- stdout ---\nls: cannot access 'nothing-here': No such file or directory\n".into(),
            is_error: false,
            blank_success: false,
        };
        assert_eq!(report.results, vec![failed, blank]);
        // The same result as the one the request would have carried, read by `tool_result`.
        let adapter_dir = tempfile::tempdir().unwrap();
        let carried = "Chunk ID: 1\nWall time: 0.0 seconds\nProcess exited with code 2\nOriginal token count: 14\nOutput:\nls: cannot access 'nothing-here': No such file or directory\n";
        assert_eq!(adapter(adapter_dir.path()).tool_result("exec_command", carried).0, report.results[0].output);
        // A command the program was stopped in gives nothing; the others keep their places.
        let cut: String = RECORDED.lines().take(RECORDED.lines().count() - 1).map(|l| format!("{l}\n")).collect();
        let report = read_recorded(&cut, &[("call_2", "exec_command"), ("call_3", "exec_command")]);
        assert_eq!(report.results.iter().map(|r| r.call_id.as_str()).collect::<Vec<_>>(), ["call_2"]);
        // More unanswered calls than items: the last ones pair with the items.
        let report = read_recorded(
            RECORDED,
            &[("call_0", "shell"), ("call_a", "exec_command"), ("call_b", "exec_command"), ("call_c", "exec_command")],
        );
        assert_eq!(report.results.iter().map(|r| r.call_id.as_str()).collect::<Vec<_>>(), ["call_a", "call_b", "call_c"]);
    }

    #[test]
    fn a_log_of_an_unknown_format_names_the_adapter_and_version() {
        let dir = tempfile::tempdir().unwrap();
        let home_dir = dir.path().join("home");
        std::fs::create_dir_all(home_dir.join(SPECGAP_DIR)).unwrap();
        std::fs::write(home_dir.join(StartEvents::new(EVENTS_STEM).file(1)), "{\"event\":\"session\",\"v\":2}\n").unwrap();
        let mut adapter = adapter(dir.path());
        adapter.version = "0.200.0".into();
        assert_eq!(
            adapter.read_log(&home_dir, &[]).unknown_format.as_deref(),
            Some(
                "cli:codex@0.200.0 wrote an event log this adapter cannot read (its first event is not thread.started); \
                 the adapter knows Codex CLI 0.171.0's `exec --json` output"
            )
        );
    }
}
