//! `cli:claude-code`: Anthropic's agent CLI (npm `@anthropic-ai/claude-code` 2.1.332, its
//! linux x86_64 native build), run in its print mode inside the episode's sandbox. It speaks
//! the Anthropic Messages protocol only, so its gateway forwards to an upstream that speaks
//! it (`--base-url` of an Anthropic-compatible server; the gateway never translates).
//!
//! | what | how |
//! | --- | --- |
//! | installation | `specgap agents install claude-code`: `node_modules/@anthropic-ai/claude-code-linux-x64/claude` in the versioned cache, mounted read-only |
//! | start | `claude -p --output-format stream-json --verbose --model <m> --session-id <id> --dangerously-skip-permissions --mcp-config ~/.specgap/claude-mcp.json --strict-mcp-config --disallowedTools WebSearch,WebFetch < message`, standard output into `~/.specgap/claude-events-<n>.jsonl`; `WebSearch` is disallowed because the upstream would run it (a server-side web search, out of the sandbox), `WebFetch` because Claude Code would fetch from the machine's network itself |
//! | model endpoint | `ANTHROPIC_BASE_URL` = the gateway's origin, `ANTHROPIC_API_KEY` = the gateway token; each `--model-arg` goes into every request body through `CLAUDE_CODE_EXTRA_BODY` |
//! | network | `CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1` (no title, quota or feature-flag requests: every request it makes is a main-loop turn), `DISABLE_AUTOUPDATER`, `DISABLE_TELEMETRY`, `DISABLE_ERROR_REPORTING`; measured against a scripted server in a network namespace of its own, 2.1.332 connected to nothing else |
//! | permissions and its own sandbox | `--dangerously-skip-permissions` (bypass mode; allowed because the sandbox runs it as uid 1000, not root); its bash sandbox is off by default and stays off: it runs inside ours |
//! | system prompt | `--append-system-prompt "$(cat system-prompt.md)"`; nothing under `blind` |
//! | resume | `--resume <id>` with the same fixed session id (one session per private home), the new message on standard input |
//! | tool output | `Bash` results (`Exit code N` first when it failed, `(Bash completed with no output)` when blank) become the harness's `exit status N` form, a call Claude Code refused (`<tool_use_error>…`) a `not run:` result without exit status; the `<system-reminder>` blocks it appends are cut |
//! | log | the stream-JSON events of each start (read without following links): `system/init`, `assistant` (its `tool_use` blocks), `user` (`tool_result` blocks), `result`; a log that does not start with `system/init` is an unknown format, an infrastructure error naming the version |
//! | normalized actions | `Read` → read, `Write` → write, `Edit` / `MultiEdit` / `NotebookEdit` → edit, `Grep` → search (list for file names), `Glob` / `LS` → list; `Bash` commands are read by the shell analysis from the turns |
//! | completion signal | none: it ends its turn and exits; the changed workspace is submitted (`agent_exit`) unless it called `submit` |
//! | MCP | the harness's server as `specgap` in `~/.specgap/claude-mcp.json` (it inherits the bridge's socket and token from the environment); `ENABLE_TOOL_SEARCH=false` lists its tools (`mcp__specgap__ask_user`, `mcp__specgap__submit`) in every request instead of deferring them behind `ToolSearch` (checked against the bridge: `ask_user` reached the harness) |
//! | plan mode | not applicable |

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use specgap_engine::session::{AgentError, ObservedResult};
use specgap_gateway::Protocol;
use specgap_protocol::action::{ActionKind, FileAction};

use super::adapter::{
    Adapter, Launch, LogReport, SANDBOX_HOME, SPECGAP_HOME_DIR, StartEvents, SystemPromptRoute, command_result, shell_quote,
    without_reminders, workspace_path,
};
use super::home;

/// The default version `specgap agents install claude-code` installs.
pub const DEFAULT_VERSION: &str = "2.1.332";
/// The program inside the installation directory.
pub const ENTRY: &str = "node_modules/@anthropic-ai/claude-code-linux-x64/claude";
/// The session id of every episode: each episode has its own private home, so one fixed id
/// keeps runs deterministic and makes the resume command known in advance.
pub const SESSION_ID: &str = "5ec9a900-0000-4000-8000-000000000001";
/// The directory in the home for the harness's files about this agent.
const SPECGAP_DIR: &str = SPECGAP_HOME_DIR;
/// Each start's events go to `{SPECGAP_DIR}/claude-events-<n>.jsonl` ([`StartEvents`]).
const EVENTS_STEM: &str = "claude-events";
/// Its MCP configuration, relative to the home.
const MCP_CONFIG: &str = ".specgap/claude-mcp.json";
/// Largest events file read back.
const EVENTS_LIMIT: u64 = 64 << 20;
/// What its `Bash` tool answers for a command that printed nothing.
const BASH_BLANK: &str = "(Bash completed with no output)";

/// The adapter over one installation.
#[derive(Debug)]
pub struct ClaudeCode {
    dir: PathBuf,
    version: String,
    /// The event log of each start.
    events: StartEvents,
}

impl ClaudeCode {
    /// The adapter over the installation directory `dir` of `version`.
    ///
    /// # Errors
    /// A message when `dir` holds no program.
    pub fn new(dir: &Path, version: &str) -> Result<Self, String> {
        if !dir.join(ENTRY).is_file() {
            return Err(format!("{} holds no Claude Code ({ENTRY} is missing)", dir.display()));
        }
        Ok(ClaudeCode { dir: dir.to_path_buf(), version: version.to_string(), events: StartEvents::new(EVENTS_STEM) })
    }

    fn unknown_format(&self, why: &str) -> String {
        format!(
            "cli:claude-code@{} wrote an event log this adapter cannot read ({why}); the adapter knows Claude Code {DEFAULT_VERSION}'s stream-json output",
            self.version
        )
    }
}

impl Adapter for ClaudeCode {
    fn spec(&self) -> String {
        format!("cli:claude-code@{}", self.version)
    }

    fn mounts(&self) -> Vec<PathBuf> {
        vec![self.dir.clone()]
    }

    fn path_dirs(&self) -> Vec<PathBuf> {
        self.dir.join(ENTRY).parent().map(Path::to_path_buf).into_iter().collect()
    }

    fn protocols(&self) -> Vec<Protocol> {
        vec![Protocol::AnthropicMessages]
    }

    fn env(&self, launch: &Launch) -> Vec<(String, String)> {
        let mut env: Vec<(String, String)> = [
            ("ANTHROPIC_BASE_URL", launch.url(Protocol::AnthropicMessages)),
            ("ANTHROPIC_API_KEY", launch.token.as_str()),
            ("CLAUDE_CONFIG_DIR", &format!("{SANDBOX_HOME}/.claude")),
            ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1"),
            ("DISABLE_AUTOUPDATER", "1"),
            ("DISABLE_TELEMETRY", "1"),
            ("DISABLE_ERROR_REPORTING", "1"),
            ("CLAUDE_CODE_DISABLE_FEEDBACK_SURVEY", "1"),
            ("CLAUDE_CODE_DISABLE_TERMINAL_TITLE", "1"),
            // Its MCP tools would otherwise be deferred behind its ToolSearch tool (named in a
            // system message, their schemas fetched on demand); the harness tools are offered
            // in the tool list like every agent's.
            ("ENABLE_TOOL_SEARCH", "false"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        if !launch.model_args.is_empty() {
            env.push(("CLAUDE_CODE_EXTRA_BODY".into(), Value::Object(launch.model_args.clone()).to_string()));
        }
        env
    }

    fn system_prompt_route(&self) -> SystemPromptRoute {
        SystemPromptRoute::Option
    }

    fn prepare_home(&self, home_dir: &Path, launch: &Launch) -> Result<(), AgentError> {
        let mcp = &launch.mcp;
        let servers = if mcp.command.is_empty() {
            json!({})
        } else {
            let env: serde_json::Map<String, Value> = mcp.env.iter().map(|(k, v)| (k.clone(), Value::String(v.clone()))).collect();
            json!({ mcp.name.clone(): { "type": "stdio", "command": mcp.command, "args": mcp.args, "env": env } })
        };
        let config = json!({ "mcpServers": servers });
        home::write_file(home_dir, Path::new(MCP_CONFIG), config.to_string().as_bytes())
            .map_err(|e| AgentError::with_source("cannot write Claude Code's MCP configuration", false, e))
    }

    fn command(&self, launch: &Launch) -> String {
        let events = self.events.begin(launch.start_number());
        let mut args = vec![
            "exec claude -p --output-format stream-json --verbose --dangerously-skip-permissions".to_string(),
            format!("--model {}", shell_quote(&launch.model)),
            if launch.resumed { format!("--resume {SESSION_ID}") } else { format!("--session-id {SESSION_ID}") },
            format!("--mcp-config {}", shell_quote(&format!("{SANDBOX_HOME}/{MCP_CONFIG}"))),
            "--strict-mcp-config".to_string(),
            // Its WebSearch asks the upstream to search the web (a server tool the upstream
            // runs): a way out of the sandbox that the gateway would pass through. Its WebFetch
            // makes Claude Code itself resolve and connect to its vendor's host (the tripwire
            // catches it, but the tool only wastes the agent's turns): both are off.
            "--disallowedTools WebSearch,WebFetch".to_string(),
        ];
        if let Some(file) = &launch.system_prompt_file {
            args.push(format!("--append-system-prompt \"$(cat {})\"", shell_quote(file)));
        }
        args.push(format!("< {}", shell_quote(&launch.message_file)));
        args.push(format!("> {}", shell_quote(&format!("{SANDBOX_HOME}/{events}"))));
        format!("mkdir -p {}\n{}", shell_quote(&format!("{SANDBOX_HOME}/{SPECGAP_DIR}")), args.join(" "))
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

    /// Claude Code names MCP tools `mcp__<server>__<tool>`.
    fn harness_tool_name(&self, tool: &str) -> String {
        format!("mcp__{}__{tool}", super::bridge::MCP_SERVER_NAME)
    }

    fn tool_result(&self, tool: &str, content: &str) -> (String, bool) {
        let content = without_reminders(content);
        if tool != "Bash" {
            return (content, false);
        }
        bash_result(&content)
    }

    fn call_actions(&self, tool: &str, arguments: &Value, result: &str, is_error: bool) -> Vec<FileAction> {
        let call = LoggedCall { id: String::new(), name: tool.to_string(), input: arguments.clone() };
        tool_actions(&call, &LoggedResult { id: String::new(), text: result.to_string(), is_error })
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
        let log = match EventLog::parse(&bytes) {
            Ok(log) => log,
            Err(why) => {
                report.unknown_format = Some(self.unknown_format(&why));
                return report;
            }
        };
        report.note = log.note.clone();
        for (call_id, tool) in unanswered {
            if let Some(result) = log.results.iter().find(|r| &r.id == call_id) {
                let (output, blank_success) = self.tool_result(tool, &result.text);
                report.results.push(ObservedResult {
                    call_id: call_id.clone(),
                    tool: tool.clone(),
                    output,
                    is_error: result.is_error,
                    blank_success,
                });
            }
        }
        // The calls whose results a request carried were mapped as they arrived
        // (`call_actions`); the log adds those of its last turn.
        let tail: Vec<&str> = unanswered.iter().map(|(id, _)| id.as_str()).collect();
        report.actions = log.actions(&tail);
        report.final_text = log.final_text;
        report
    }
}

/// A `Bash` result in the harness's form, and whether it is a blank success.
fn bash_result(content: &str) -> (String, bool) {
    if let Some(refusal) = refused_call(content) {
        // Claude Code itself refused to run the command (a blocked pattern, a permission
        // rule): nothing ran, so no exit status is recorded (issue 29 item 4).
        return (format!("not run: Claude Code refused the call\n{refusal}"), false);
    }
    if content.trim() == BASH_BLANK {
        return (command_result(Some(0), ""), true);
    }
    if let Some(rest) = content.strip_prefix("Exit code ") {
        let (code, output) = rest.split_once('\n').unwrap_or((rest, ""));
        if let Ok(code) = code.trim().parse::<i64>() {
            return (command_result(Some(code), output), false);
        }
    }
    (command_result(Some(0), content), false)
}

/// The message of a call Claude Code refused to run (its result is
/// `<tool_use_error>…</tool_use_error>`), without the tags.
fn refused_call(content: &str) -> Option<&str> {
    let inner = content.trim().strip_prefix("<tool_use_error>")?;
    Some(inner.strip_suffix("</tool_use_error>").unwrap_or(inner).trim())
}

/// One tool call of the log.
#[derive(Debug, Clone, PartialEq)]
struct LoggedCall {
    id: String,
    name: String,
    input: Value,
}

/// One tool result of the log.
#[derive(Debug, Clone, PartialEq)]
struct LoggedResult {
    id: String,
    text: String,
    is_error: bool,
}

/// What one start's stream-JSON events say.
#[derive(Debug, Default)]
struct EventLog {
    calls: Vec<LoggedCall>,
    results: Vec<LoggedResult>,
    final_text: Option<String>,
    note: String,
}

impl EventLog {
    /// Parses the events; `Err` names what makes the format unknown.
    fn parse(bytes: &[u8]) -> Result<EventLog, String> {
        let text = String::from_utf8_lossy(bytes);
        let mut log = EventLog::default();
        let mut lines = text.lines().filter(|l| !l.trim().is_empty()).peekable();
        let Some(first) = lines.peek() else { return Ok(log) };
        let first: Value = serde_json::from_str(first).map_err(|_| "its first line is not JSON".to_string())?;
        if first["type"] != "system" || first["subtype"] != "init" {
            return Err("its first event is not system/init".into());
        }
        let mut unreadable = 0usize;
        for line in lines {
            let Ok(event) = serde_json::from_str::<Value>(line) else {
                unreadable += 1;
                continue;
            };
            match event["type"].as_str() {
                Some("assistant") => log.calls.extend(blocks(&event, "tool_use").map(|b| LoggedCall {
                    id: b["id"].as_str().unwrap_or_default().to_string(),
                    name: b["name"].as_str().unwrap_or_default().to_string(),
                    input: b["input"].clone(),
                })),
                Some("user") => log.results.extend(blocks(&event, "tool_result").map(|b| LoggedResult {
                    id: b["tool_use_id"].as_str().unwrap_or_default().to_string(),
                    text: content_text(&b["content"]),
                    is_error: b["is_error"].as_bool().unwrap_or(false),
                })),
                Some("result") => log.final_text = event["result"].as_str().map(str::to_string),
                _ => {}
            }
        }
        if unreadable > 0 {
            log.note = format!("{unreadable} line(s) of the event log are not JSON");
        }
        Ok(log)
    }

    /// The normalized actions of the structured tools of the calls `ids`, in call order
    /// (calls without a result did not run).
    fn actions(&self, ids: &[&str]) -> Vec<FileAction> {
        let mut actions = Vec::new();
        for call in self.calls.iter().filter(|c| ids.contains(&c.id.as_str())) {
            let Some(result) = self.results.iter().find(|r| r.id == call.id) else { continue };
            actions.extend(tool_actions(call, result));
        }
        actions
    }
}

/// The content blocks of `kind` in an event's message.
fn blocks<'a>(event: &'a Value, kind: &'a str) -> impl Iterator<Item = &'a Value> + 'a {
    event["message"]["content"].as_array().into_iter().flatten().filter(move |b| b["type"] == kind)
}

/// A tool result's text (a string, or text blocks).
fn content_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts.iter().filter_map(|p| p["text"].as_str()).collect::<Vec<_>>().join(""),
        _ => String::new(),
    }
}

/// Claude Code's structured tools in the normalized vocabulary (module guide).
fn tool_actions(call: &LoggedCall, result: &LoggedResult) -> Vec<FileAction> {
    let ok = !result.is_error;
    let path_of = |key: &str| call.input[key].as_str().map(workspace_path);
    let on = |kind: ActionKind, key: &str| path_of(key).map(|p| FileAction::on(kind, p, &call.name, ok)).into_iter().collect();
    match call.name.as_str() {
        "Read" => on(ActionKind::Read, "file_path"),
        "Write" => on(ActionKind::Write, "file_path"),
        "Edit" | "MultiEdit" => on(ActionKind::Edit, "file_path"),
        "NotebookEdit" => on(ActionKind::Edit, "notebook_path"),
        "Glob" | "LS" => vec![FileAction::bare(ActionKind::List, &call.name, ok)],
        "Grep" => grep_actions(call, result),
        _ => Vec::new(),
    }
}

/// `Grep` in content mode shows lines (`path:line:text`): a search of each file shown; in its
/// other modes it names files: a listing.
fn grep_actions(call: &LoggedCall, result: &LoggedResult) -> Vec<FileAction> {
    let ok = !result.is_error;
    if call.input["output_mode"] != "content" || !ok {
        return vec![FileAction::bare(ActionKind::List, &call.name, ok)];
    }
    let mut files: Vec<String> = Vec::new();
    for line in without_reminders(&result.text).lines() {
        if let Some((file, _)) = line.split_once(':') {
            let file = workspace_path(file);
            if !file.is_empty() && !files.contains(&file) {
                files.push(file);
            }
        }
    }
    if files.is_empty() {
        return vec![FileAction::bare(ActionKind::Search, &call.name, ok)];
    }
    files.into_iter().map(|f| FileAction::on(ActionKind::Search, f, &call.name, ok)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::adapter::McpServer;

    fn adapter(dir: &Path) -> ClaudeCode {
        let program = dir.join(ENTRY);
        std::fs::create_dir_all(program.parent().unwrap()).unwrap();
        std::fs::write(&program, "").unwrap();
        ClaudeCode::new(dir, DEFAULT_VERSION).unwrap()
    }

    fn launch(resumed: bool, system: bool) -> Launch {
        Launch {
            base_url: "http://127.0.0.1:4000/v1".into(),
            token: "sgw-t".into(),
            model: "claude-x".into(),
            message_file: format!("/run/specgap/task/message-{}.md", if resumed { 2 } else { 1 }),
            mcp: McpServer::default(),
            system_prompt_file: system.then(|| "/run/specgap/task/system-prompt.md".into()),
            resumed,
            model_args: serde_json::Map::new(),
            protocol_urls: vec![(Protocol::AnthropicMessages, "http://127.0.0.1:4000".into())],
            system_prompt: None,
        }
    }

    #[test]
    fn the_command_starts_print_mode_with_a_fixed_session_and_resumes_it() {
        let dir = tempfile::tempdir().unwrap();
        let adapter = adapter(dir.path());
        assert_eq!(
            adapter.command(&launch(false, true)),
            "mkdir -p '/home/specgap/.specgap'\nexec claude -p --output-format stream-json --verbose --dangerously-skip-permissions \
             --model 'claude-x' --session-id 5ec9a900-0000-4000-8000-000000000001 --mcp-config '/home/specgap/.specgap/claude-mcp.json' \
             --strict-mcp-config --disallowedTools WebSearch,WebFetch --append-system-prompt \"$(cat '/run/specgap/task/system-prompt.md')\" \
             < '/run/specgap/task/message-1.md' > '/home/specgap/.specgap/claude-events-1.jsonl'"
        );
        let resumed = adapter.command(&launch(true, false));
        assert!(resumed.contains("--resume 5ec9a900-0000-4000-8000-000000000001 "), "{resumed}");
        assert!(resumed.ends_with("< '/run/specgap/task/message-2.md' > '/home/specgap/.specgap/claude-events-2.jsonl'"), "{resumed}");
        assert_eq!(adapter.events.latest(), ".specgap/claude-events-2.jsonl");
        let env = adapter.env(&launch(false, false));
        let get = |k: &str| env.iter().find(|(key, _)| key == k).map(|(_, v)| v.as_str());
        assert_eq!(get("ANTHROPIC_BASE_URL"), Some("http://127.0.0.1:4000"));
        assert_eq!(get("ANTHROPIC_API_KEY"), Some("sgw-t"));
        assert_eq!(get("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"), Some("1"));
        assert_eq!(get("CLAUDE_CODE_EXTRA_BODY"), None);
        assert_eq!(get("ENABLE_TOOL_SEARCH"), Some("false"));
        let mut with_args = launch(false, false);
        with_args.model_args.insert("temperature".into(), json!(0));
        assert_eq!(adapter.env(&with_args).last().unwrap(), &("CLAUDE_CODE_EXTRA_BODY".to_string(), "{\"temperature\":0}".to_string()));
        assert!(ClaudeCode::new(&dir.path().join("none"), "2.1.332").unwrap_err().contains("claude-code-linux-x64/claude is missing"));
    }

    #[test]
    fn the_mcp_configuration_names_the_harness_server() {
        let dir = tempfile::tempdir().unwrap();
        let home_dir = dir.path().join("home");
        std::fs::create_dir_all(&home_dir).unwrap();
        let adapter = adapter(dir.path());
        let mut with_mcp = launch(false, false);
        with_mcp.mcp = McpServer {
            name: "specgap".into(),
            command: "/run/specgap/bin/specgap-bridge".into(),
            args: vec!["mcp".into()],
            env: vec![("SPECGAP_BRIDGE_SOCKET".into(), "/run/specgap/bridge.sock".into())],
            config_file: "/home/specgap/.specgap/mcp.json".into(),
        };
        adapter.prepare_home(&home_dir, &with_mcp).unwrap();
        let written: Value = serde_json::from_slice(&std::fs::read(home_dir.join(MCP_CONFIG)).unwrap()).unwrap();
        assert_eq!(
            written,
            json!({"mcpServers": {"specgap": {"type": "stdio", "command": "/run/specgap/bin/specgap-bridge", "args": ["mcp"],
                   "env": {"SPECGAP_BRIDGE_SOCKET": "/run/specgap/bridge.sock"}}}})
        );
        adapter.prepare_home(&home_dir, &launch(false, false)).unwrap();
        let none: Value = serde_json::from_slice(&std::fs::read(home_dir.join(MCP_CONFIG)).unwrap()).unwrap();
        assert_eq!(none, json!({"mcpServers": {}}), "no server when the harness offers none");
    }

    #[test]
    fn bash_results_read_as_command_results() {
        assert_eq!(bash_result("(Bash completed with no output)"), ("exit status 0\n(no output)".into(), true));
        assert_eq!(
            bash_result("Exit code 2\nls: cannot access 'nope': No such file or directory"),
            ("exit status 2\n--- stdout ---\nls: cannot access 'nope': No such file or directory".into(), false)
        );
        assert_eq!(bash_result("hello world"), ("exit status 0\n--- stdout ---\nhello world".into(), false));
        // A command Claude Code refused never ran: no exit status (it was `exit status 0`).
        assert_eq!(
            bash_result("<tool_use_error>Blocked: cd outside the working directories is not allowed</tool_use_error>"),
            ("not run: Claude Code refused the call\nBlocked: cd outside the working directories is not allowed".into(), false)
        );
        let dir = tempfile::tempdir().unwrap();
        let adapter = adapter(dir.path());
        assert_eq!(
            adapter.tool_result("Bash", "hello\n\n<system-reminder>\n<total_tokens>9 left</total_tokens>\n</system-reminder>"),
            ("exit status 0\n--- stdout ---\nhello".into(), false)
        );
        assert_eq!(adapter.tool_result("Read", "1\thello\n"), ("1\thello\n".into(), false));
    }

    /// Events as 2.1.332 wrote them against the scripted server (trimmed to the fields read).
    const EVENTS: &str = r#"{"type":"system","subtype":"init","cwd":"/workspace","session_id":"5ec9a900-0000-4000-8000-000000000001","tools":["Bash","Read"],"model":"claude-x"}
{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t1","name":"Read","input":{"file_path":"/workspace/README.md"}}]}}
{"type":"user","message":{"role":"user","content":[{"tool_use_id":"t1","type":"tool_result","content":"1\thello\n"}]}}
{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t2","name":"Grep","input":{"pattern":"rate","output_mode":"content"}},{"type":"tool_use","id":"t3","name":"Edit","input":{"file_path":"/workspace/src/a.py","old_string":"a","new_string":"b"}},{"type":"tool_use","id":"t4","name":"Write","input":{"file_path":"/workspace/NOTES.md","content":"x"}},{"type":"tool_use","id":"t5","name":"Read","input":{"file_path":"/workspace/missing.txt"}},{"type":"tool_use","id":"t6","name":"Bash","input":{"command":"true"}}]}}
{"type":"user","message":{"role":"user","content":[{"tool_use_id":"t2","type":"tool_result","content":"/workspace/src/a.py:3:rate = 1\n/workspace/src/a.py:9:rate += 1\nsrc/b.py:1:rate"}]}}
{"type":"user","message":{"role":"user","content":[{"tool_use_id":"t3","type":"tool_result","content":"The file has been updated"},{"tool_use_id":"t4","type":"tool_result","content":"File created"}]}}
{"type":"user","message":{"role":"user","content":[{"tool_use_id":"t5","type":"tool_result","content":"File does not exist.","is_error":true},{"tool_use_id":"t6","type":"tool_result","content":"(Bash completed with no output)","is_error":false}]}}
not json
{"type":"result","subtype":"success","is_error":false,"result":"Fixed the rate.","session_id":"5ec9a900-0000-4000-8000-000000000001"}
"#;

    #[test]
    fn the_event_log_becomes_results_actions_and_the_final_text() {
        let dir = tempfile::tempdir().unwrap();
        let home_dir = dir.path().join("home");
        std::fs::create_dir_all(home_dir.join(SPECGAP_DIR)).unwrap();
        std::fs::write(home_dir.join(StartEvents::new(EVENTS_STEM).file(1)), EVENTS).unwrap();
        let adapter = adapter(dir.path());
        let unanswered: Vec<(String, String)> =
            [("t1", "Read"), ("t2", "Grep"), ("t3", "Edit"), ("t4", "Write"), ("t5", "Read"), ("t6", "Bash"), ("t9", "Bash")]
                .iter()
                .map(|(id, tool)| (id.to_string(), tool.to_string()))
                .collect();
        let report = adapter.read_log(&home_dir, &unanswered);
        assert_eq!(report.unknown_format, None);
        assert_eq!(report.final_text.as_deref(), Some("Fixed the rate."));
        assert_eq!(report.note, "1 line(s) of the event log are not JSON");
        assert_eq!(report.results.len(), 6, "every unanswered call with a result in the log");
        assert_eq!(
            report.results[5],
            ObservedResult {
                call_id: "t6".into(),
                tool: "Bash".into(),
                output: "exit status 0\n(no output)".into(),
                is_error: false,
                blank_success: true
            }
        );
        let answered_by_requests = adapter.read_log(&home_dir, &[("t6".into(), "Bash".into())]);
        assert!(answered_by_requests.actions.is_empty(), "calls answered in requests were mapped then, not again");
        assert_eq!(
            report.actions,
            vec![
                FileAction::on(ActionKind::Read, "README.md", "Read", true),
                FileAction::on(ActionKind::Search, "src/a.py", "Grep", true),
                FileAction::on(ActionKind::Search, "src/b.py", "Grep", true),
                FileAction::on(ActionKind::Edit, "src/a.py", "Edit", true),
                FileAction::on(ActionKind::Write, "NOTES.md", "Write", true),
                FileAction::on(ActionKind::Read, "missing.txt", "Read", false),
            ]
        );
    }

    #[test]
    fn calls_answered_in_requests_map_to_actions() {
        let dir = tempfile::tempdir().unwrap();
        let adapter = adapter(dir.path());
        assert_eq!(
            adapter.call_actions("Read", &json!({"file_path": "/workspace/a.py"}), "1\tx", false),
            [FileAction::on(ActionKind::Read, "a.py", "Read", true)]
        );
        assert_eq!(
            adapter.call_actions("Grep", &json!({"pattern": "x", "output_mode": "content"}), "/workspace/a.py:1:x\n", false),
            [FileAction::on(ActionKind::Search, "a.py", "Grep", true)]
        );
        assert_eq!(
            adapter.call_actions("Write", &json!({"file_path": "/workspace/b"}), "denied", true),
            [FileAction::on(ActionKind::Write, "b", "Write", false)]
        );
        assert!(
            adapter.call_actions("Bash", &json!({"command": "cat a.py"}), "x", false).is_empty(),
            "shell commands go to the shell analysis"
        );
    }

    #[test]
    fn a_log_of_an_unknown_format_names_the_adapter_and_version() {
        let dir = tempfile::tempdir().unwrap();
        let home_dir = dir.path().join("home");
        std::fs::create_dir_all(home_dir.join(SPECGAP_DIR)).unwrap();
        std::fs::write(home_dir.join(StartEvents::new(EVENTS_STEM).file(1)), "{\"kind\":\"session_start\",\"version\":3}\n").unwrap();
        let mut adapter = adapter(dir.path());
        adapter.version = "3.0.0".into();
        let report = adapter.read_log(&home_dir, &[]);
        assert_eq!(
            report.unknown_format.as_deref(),
            Some(
                "cli:claude-code@3.0.0 wrote an event log this adapter cannot read (its first event is not system/init); \
                 the adapter knows Claude Code 2.1.332's stream-json output"
            )
        );
        std::fs::write(home_dir.join(StartEvents::new(EVENTS_STEM).file(1)), "").unwrap();
        assert_eq!(adapter.read_log(&home_dir, &[]).unknown_format, None, "an empty log is no format at all");
    }

    #[test]
    fn a_linked_event_log_is_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let home_dir = dir.path().join("home");
        std::fs::create_dir_all(home_dir.join(SPECGAP_DIR)).unwrap();
        let secret = dir.path().join("secret.jsonl");
        std::fs::write(&secret, EVENTS).unwrap();
        std::os::unix::fs::symlink(&secret, home_dir.join(StartEvents::new(EVENTS_STEM).file(1))).unwrap();
        let report = adapter(dir.path()).read_log(&home_dir, &[("t6".into(), "Bash".into())]);
        assert!(report.results.is_empty() && report.actions.is_empty() && report.final_text.is_none(), "{report:?}");
        assert!(!report.note.is_empty());
    }
}
