//! `cli:gemini-cli`: Google's Gemini CLI (npm `@google/gemini-cli` 0.61.0, its bundled
//! `bundle/gemini.js` under node), one of seed 002's vendor CLIs, run headless (`gemini -p`)
//! inside the episode's sandbox against the gateway's Gemini API, passed through as it is.
//!
//! | what | how |
//! | --- | --- |
//! | installation | `specgap agents install gemini-cli`: the package's `node_modules`, mounted read-only with the installation's other mounts, started with the `node` the installation recorded |
//! | start | `node gemini.js --prompt="<message>" -m <model> --yolo --skip-trust -o stream-json`, standard input empty (the `=` form, since a message may start with `-`); its stream-JSON events go to `~/.specgap/gemini-events.jsonl` |
//! | model endpoint | `GOOGLE_GEMINI_BASE_URL` = the gateway (`http://127.0.0.1:<port>`), `GEMINI_API_KEY` = the gateway token, `security.auth.selectedType = "gemini-api-key"`; requests are `POST /v1beta/models/<model>:streamGenerateContent?alt=sse` with `x-goog-api-key` |
//! | network | `~/.gemini/settings.json`: usage statistics and telemetry off, auto-update and its notice off, `tools.exclude` its `google_web_search` and `web_fetch` (the upstream runs them: Gemini's search grounding and URL context); the system-wide settings paths point at a file that does not exist, so no host file configures it |
//! | harness tools | the bridge's MCP server in `mcpServers` of its settings, `trust: true`, with `--rename ask_user=ask_question`: 0.61.0 withholds every tool called `ask_user` in headless mode (its own, and an MCP server's whose unqualified name matches), so the model sees `mcp_specgap_ask_question` and `mcp_specgap_submit`; the commands `ask_user` and `submit` are on `PATH` for its shell tool |
//! | permissions, sandbox | `--yolo` approves every tool call; its own sandbox off (`tools.sandbox = false`, `GEMINI_SANDBOX=false`); `--skip-trust` and `GEMINI_CLI_TRUST_WORKSPACE` trust the workspace without asking |
//! | system prompt | its global context file `~/.gemini/GEMINI.md`, which it appends to its system instruction: the condition's prompt is copied there before each start; `blind` leaves it empty |
//! | side requests | generating requests without tools (its loop and next-speaker checks) are side requests; with `-m` naming the model it routes nothing to another model |
//! | resume | `--resume latest`: the home holds this episode's sessions alone |
//! | tool output | kept as sent (its shell tool wraps output, exit code and process group in `<untrusted_context>`) |
//! | normalized actions | its structured tools (read_file and read_many_files → read, write_file → write, replace → edit, grep_search → search, glob and list_directory → list) mapped as their `functionResponse`s arrive in its requests (one with an `error` is a failed call), so a run the harness ends keeps them; its shell calls are read from the model traffic |
//! | log | the stream-JSON events of each start, read without following links once it ended on its own: the actions and results of the last turn's calls, which no request carried (each paired with the start's last calls of its tool, its event ids being its own), the assistant's last message its final reply |
//! | resumed history | 0.61.0 rebuilds a resumed session's history with each earlier call's `functionResponse` twice, the same both times; the harness records each result once |
//! | completion signal | none: it ends when the model stops calling tools |
//! | plan mode | not applicable |
//!
//! Gemini's function calls carry no id on the wire; the harness names them
//! `r<request>-<index>` and matches the `functionResponse` parts of the next request to them
//! by tool name, in order (`exchange`).

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use specgap_engine::session::{AgentError, ObservedResult};
use specgap_protocol::action::{ActionKind, FileAction};

use super::adapter::{Adapter, EventsReading, Launch, LogReport, McpServer, SANDBOX_HOME, SystemPromptRoute, shell_quote};
use super::home;
use super::opencode::workspace_path;

/// The name the bridge's MCP server gives `ask_user` for gemini-cli, which withholds any tool
/// called `ask_user` in headless mode (its own and every MCP server's): the model sees
/// `mcp_specgap_ask_question`.
pub const ASK_USER_AS: &str = "ask_question";

/// Its tools that the upstream runs (`google_web_search` asks the Gemini API to search with
/// Google, `web_fetch` to fetch through its URL context): excluded in its settings, since they
/// reach the web from outside the sandbox.
pub const UPSTREAM_WEB_TOOLS: [&str; 2] = ["google_web_search", "web_fetch"];

/// The default version `specgap agents install gemini-cli` installs.
pub const DEFAULT_VERSION: &str = "0.61.0";
/// The versions whose stream-JSON output this adapter reads.
pub const KNOWN_VERSIONS: &[&str] = &["0.61.0"];
/// The script, relative to the installation directory.
pub const SCRIPT: &str = "node_modules/@google/gemini-cli/bundle/gemini.js";
/// The events of the latest start, relative to the home.
pub const EVENTS_LOG: &str = ".specgap/gemini-events.jsonl";
/// Its settings, relative to the home.
pub const SETTINGS_FILE: &str = ".gemini/settings.json";
/// Where its system-wide settings and defaults are looked for instead of the host's `/etc`: a
/// path of the read-only task directory that never exists (a file in the agent's home would
/// be skipped as not owned by root, with a warning).
const NO_SYSTEM_SETTINGS: &str = "/run/specgap/task/no-gemini-system-settings.json";
/// Its global context file, relative to the home.
pub const CONTEXT_FILE: &str = ".gemini/GEMINI.md";
/// Largest events log read back.
const EVENTS_LIMIT: u64 = 64 << 20;

/// The adapter over one installation directory.
#[derive(Debug, Clone)]
pub struct GeminiCli {
    dir: PathBuf,
    node: PathBuf,
    /// What the installation says the sandbox mounts (the directory, node's prefix).
    mounts: Vec<PathBuf>,
    version: String,
}

impl GeminiCli {
    /// The adapter over the installation `dir` of `version`, run with `node` (the one the
    /// installation recorded; else the one on `PATH`), the sandbox mounting `mounts` (the
    /// installation's; its directory and node's prefix when empty).
    ///
    /// # Errors
    /// A message naming the adapter and version when the version's output format is not
    /// known, the package is missing or says another version, or no `node` is found.
    pub fn new(dir: &Path, version: &str, node: Option<PathBuf>, mounts: &[PathBuf]) -> Result<Self, String> {
        if !KNOWN_VERSIONS.contains(&version) {
            return Err(format!(
                "cli:gemini-cli@{version}: this adapter reads the stream-JSON events of gemini-cli {} only; use one of those versions",
                KNOWN_VERSIONS.join(", ")
            ));
        }
        let script = dir.join(SCRIPT);
        if !script.is_file() {
            return Err(format!(
                "cli:gemini-cli@{version} is not installed ({} is missing); run `specgap agents install gemini-cli@{version}`",
                script.display()
            ));
        }
        let manifest = dir.join("node_modules/@google/gemini-cli/package.json");
        let installed = std::fs::read(&manifest)
            .ok()
            .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
            .and_then(|v| v["version"].as_str().map(str::to_string));
        if installed.as_deref() != Some(version) {
            return Err(format!(
                "cli:gemini-cli@{version}: {} says version {}; reinstall with `specgap agents install gemini-cli@{version}`",
                manifest.display(),
                installed.unwrap_or_else(|| "nothing readable".into())
            ));
        }
        let node = node
            .filter(|n| n.is_file())
            .or_else(|| find_on_path("node"))
            .ok_or_else(|| format!("cli:gemini-cli@{version} needs Node.js (`node` on PATH)"))?;
        let mut mounts = mounts.to_vec();
        if mounts.is_empty() {
            mounts.push(dir.to_path_buf());
            // A node outside the system directories (nvm, a tarball) is mounted with its prefix.
            mounts.extend(node.parent().and_then(Path::parent).filter(|p| !is_system(p)).map(Path::to_path_buf));
        }
        Ok(GeminiCli { dir: dir.to_path_buf(), node, mounts, version: version.to_string() })
    }

    /// Its settings: the gateway's API key auth, every network switch off, its sandbox off,
    /// and the harness tools' MCP server (trusted: its calls need no confirmation).
    pub fn settings(mcp: &McpServer) -> Value {
        let mut settings = json!({
            "security": { "auth": { "selectedType": "gemini-api-key" }, "folderTrust": { "enabled": false } },
            "general": { "disableAutoUpdate": true, "disableUpdateNag": true },
            "privacy": { "usageStatisticsEnabled": false },
            "telemetry": { "enabled": false },
            // Its web tools have the upstream search or fetch (Gemini's grounding tools), out of
            // the sandbox.
            "tools": { "sandbox": false, "exclude": UPSTREAM_WEB_TOOLS },
        });
        if !mcp.command.is_empty() {
            let env: serde_json::Map<String, Value> = mcp.env.iter().map(|(k, v)| (k.clone(), Value::String(v.clone()))).collect();
            // 0.61.0 withholds every tool named `ask_user` in headless mode, an MCP server's
            // too: the bridge serves it under another name.
            let mut args = mcp.args.clone();
            args.extend(["--rename".to_string(), format!("ask_user={ASK_USER_AS}")]);
            settings["mcpServers"] = json!({ mcp.name.clone(): { "command": mcp.command, "args": args, "env": env, "trust": true } });
        }
        settings
    }
}

/// `program` in a directory of `PATH`, resolved.
fn find_on_path(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|d| d.join(program)).find(|p| p.is_file()).and_then(|p| std::fs::canonicalize(p).ok())
}

fn is_system(path: &Path) -> bool {
    ["/usr", "/bin", "/lib", "/lib64", "/sbin"].iter().any(|s| path.starts_with(s))
}

impl GeminiCli {
    /// The start command with `node` (shell-quoted) as the program running the bundle.
    fn command_with_node(&self, launch: &Launch, node: &str) -> String {
        let context = format!("{SANDBOX_HOME}/{CONTEXT_FILE}");
        let prompt = match &launch.system_prompt_file {
            Some(file) => format!("cp {} {} && ", shell_quote(file), shell_quote(&context)),
            None => format!(": > {} && ", shell_quote(&context)),
        };
        format!(
            "mkdir -p {home}/.specgap {home}/.gemini && {prompt}exec {node} {script} --prompt=\"$(cat {message})\" -m {model} --yolo --skip-trust{resume} -o stream-json < /dev/null > {events}",
            home = SANDBOX_HOME,
            node = node,
            script = shell_quote(&self.dir.join(SCRIPT).display().to_string()),
            message = shell_quote(&launch.message_file),
            model = shell_quote(&launch.model),
            resume = if launch.resumed { " --resume latest" } else { "" },
            events = shell_quote(&format!("{SANDBOX_HOME}/{EVENTS_LOG}")),
        )
    }
}

impl Adapter for GeminiCli {
    fn spec(&self) -> String {
        format!("cli:gemini-cli@{}", self.version)
    }

    fn mounts(&self) -> Vec<PathBuf> {
        self.mounts.clone()
    }

    fn path_dirs(&self) -> Vec<PathBuf> {
        self.node.parent().map(Path::to_path_buf).into_iter().collect()
    }

    fn protocols(&self) -> Vec<specgap_gateway::Protocol> {
        vec![specgap_gateway::Protocol::Gemini]
    }

    fn env(&self, launch: &Launch) -> Vec<(String, String)> {
        let mut env: Vec<(String, String)> = [
            ("GEMINI_SANDBOX", "false"),
            ("GEMINI_CLI_TRUST_WORKSPACE", "true"),
            ("GEMINI_CLI_NO_RELAUNCH", "true"),
            ("GEMINI_CLI_SYSTEM_SETTINGS_PATH", NO_SYSTEM_SETTINGS),
            ("GEMINI_CLI_SYSTEM_DEFAULTS_PATH", NO_SYSTEM_SETTINGS),
            ("NO_COLOR", "1"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        if !launch.base_url.is_empty() {
            env.push(("GOOGLE_GEMINI_BASE_URL".into(), launch.base_url.clone()));
        }
        if !launch.token.is_empty() {
            env.push(("GEMINI_API_KEY".into(), launch.token.clone()));
        }
        env
    }

    fn system_prompt_route(&self) -> SystemPromptRoute {
        SystemPromptRoute::Option
    }

    fn prepare_home(&self, home_dir: &Path, launch: &Launch) -> Result<(), AgentError> {
        let settings = serde_json::to_vec_pretty(&Self::settings(&launch.mcp)).unwrap_or_default();
        home::write_file(home_dir, Path::new(SETTINGS_FILE), &settings)
            .map_err(|e| AgentError::with_source("cannot write gemini-cli's settings into the agent's home", false, e))
    }

    fn entry_programs(&self) -> Vec<PathBuf> {
        // Its one host program is node (the bundle is a script it runs).
        vec![self.node.clone()]
    }

    fn command(&self, launch: &Launch) -> String {
        self.command_with_node(launch, &shell_quote(&self.node.display().to_string()))
    }

    fn command_on_image(&self, launch: &Launch) -> String {
        // node by name: the wrapper on PATH that starts the host's node through its loader
        // (the host path is the image's own inside the sandbox).
        let name = self.node.file_name().map_or_else(|| "node".to_string(), |n| n.to_string_lossy().into_owned());
        self.command_with_node(launch, &shell_quote(&name))
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

    /// gemini-cli names MCP tools `mcp_<server>_<tool>`; `ask_user` is served as
    /// [`ASK_USER_AS`].
    fn harness_tool_name(&self, tool: &str) -> String {
        let served = if tool == "ask_user" { ASK_USER_AS } else { tool };
        format!("mcp_{}_{served}", super::bridge::MCP_SERVER_NAME)
    }

    fn tool_result(&self, _tool: &str, content: &str) -> (String, bool) {
        (content.to_string(), false)
    }

    /// Its structured tools' actions as their results arrive (a `functionResponse` with an
    /// `error` is a failed call), so a start the harness ends keeps them.
    fn call_actions(&self, tool: &str, arguments: &Value, _result: &str, is_error: bool) -> Vec<FileAction> {
        tool_actions(tool, arguments, !is_error)
    }

    fn read_log(&self, home_dir: &Path, unanswered: &[(String, String)]) -> LogReport {
        let mut report = LogReport::default();
        let Some(bytes) = home::read_log(home_dir, Path::new(EVENTS_LOG), EVENTS_LIMIT, &mut report.note) else {
            return report;
        };
        let reading = read_events(&String::from_utf8_lossy(&bytes), unanswered);
        report.actions = reading.actions;
        report.results = reading.results;
        report.final_text = reading.final_text;
        report.note = reading.notes.join("; ");
        report
    }
}

/// Reads gemini-cli's `-o stream-json` output (one event a line: `init`, `message`,
/// `tool_use`, `tool_result`, `error`, `result`), `unanswered` being the last turn's calls (id,
/// tool) whose results no request carried. Its event ids are its own, so each unanswered call
/// is paired with one of the start's last calls of the same tool, in order; the actions and
/// results are those of the paired calls that finished.
pub fn read_events(text: &str, unanswered: &[(String, String)]) -> EventsReading {
    let mut reading = EventsReading::default();
    let mut uses: Vec<LoggedCall> = Vec::new();
    let mut assistant = String::new();
    let mut unparsed = 0;
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let Ok(event) = serde_json::from_str::<Value>(line) else {
            unparsed += 1;
            continue;
        };
        match event["type"].as_str().unwrap_or_default() {
            "message" if event["role"] == "assistant" => {
                if event["delta"] != true {
                    assistant.clear();
                }
                assistant.push_str(event["content"].as_str().unwrap_or_default());
            }
            "message" => assistant.clear(),
            "tool_use" => {
                if !assistant.trim().is_empty() {
                    reading.final_text = Some(std::mem::take(&mut assistant));
                }
                assistant.clear();
                let id = event["tool_id"].as_str().unwrap_or_default().to_string();
                let tool = event["tool_name"].as_str().unwrap_or_default().to_string();
                uses.push(LoggedCall { id, tool, parameters: event["parameters"].clone(), finished: None });
            }
            "tool_result" => {
                let id = event["tool_id"].as_str().unwrap_or_default();
                let Some(call) = uses.iter_mut().find(|u| u.id == id) else { continue };
                let ok = event["status"] == "success";
                let output = if ok { event["output"].as_str() } else { event["error"]["message"].as_str() }.unwrap_or_default();
                call.finished = Some((ok, output.to_string()));
            }
            "init" => reading.session = event["session_id"].as_str().map(str::to_string),
            "result" => {}
            "error" => reading.notes.push(format!("gemini-cli reported {}", event["message"].as_str().unwrap_or("an error"))),
            other => reading.notes.push(format!("gemini-cli event `{other}` is not one this adapter knows")),
        }
    }
    if !assistant.trim().is_empty() {
        reading.final_text = Some(assistant);
    }
    // The calls whose results a request carried were mapped as they arrived (`call_actions`);
    // the log adds those of its last turn.
    for (call_id, tool, n) in last_calls_of_each_tool(unanswered) {
        let Some(call) = uses.iter().filter(|u| &u.tool == tool).rev().nth(n) else { continue };
        let Some((ok, output)) = &call.finished else { continue };
        reading.actions.extend(tool_actions(tool, &call.parameters, *ok));
        reading.results.push(ObservedResult {
            call_id: call_id.clone(),
            tool: tool.clone(),
            output: output.clone(),
            is_error: !ok,
            blank_success: false,
        });
    }
    if unparsed > 0 {
        reading.notes.push(format!("{unparsed} lines of {EVENTS_LOG} are not JSON and were left out"));
    }
    reading
}

/// One call of a start's events.
struct LoggedCall {
    /// Its event id (`tool_id`, gemini-cli's own).
    id: String,
    tool: String,
    parameters: Value,
    /// Whether it succeeded and its output (or error message), once it finished.
    finished: Option<(bool, String)>,
}

/// Each of `calls` (id, tool) with its place from the end among the calls of its tool (0 for
/// the last), in the order given.
fn last_calls_of_each_tool(calls: &[(String, String)]) -> Vec<(&String, &String, usize)> {
    calls.iter().enumerate().map(|(i, (id, tool))| (id, tool, calls[i + 1..].iter().filter(|(_, t)| t == tool).count())).collect()
}

/// The normalized actions of one of gemini-cli's structured tools.
fn tool_actions(tool: &str, parameters: &Value, ok: bool) -> Vec<FileAction> {
    let on = |kind: ActionKind, path: Option<&str>| match path.and_then(workspace_path) {
        Some(path) => FileAction::on(kind, path, tool, ok),
        None => FileAction::bare(kind, tool, ok),
    };
    let text = |key: &str| parameters[key].as_str();
    match tool {
        "read_file" => vec![on(ActionKind::Read, text("file_path"))],
        "read_many_files" => {
            let paths: Vec<&str> = parameters["include"]
                .as_array()
                .or_else(|| parameters["paths"].as_array())
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            if paths.is_empty() {
                vec![on(ActionKind::Read, None)]
            } else {
                paths.into_iter().map(|p| on(ActionKind::Read, Some(p))).collect()
            }
        }
        "write_file" => vec![on(ActionKind::Write, text("file_path"))],
        "replace" => vec![on(ActionKind::Edit, text("file_path"))],
        "grep_search" => vec![on(ActionKind::Search, None)],
        "glob" => vec![on(ActionKind::List, text("dir_path").or_else(|| text("path")))],
        "list_directory" => vec![on(ActionKind::List, text("dir_path").or_else(|| text("path")))],
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn launch(resumed: bool, system: bool) -> Launch {
        Launch {
            base_url: "http://127.0.0.1:4000".into(),
            token: "tok".into(),
            model: "gemini-2.5-pro".into(),
            message_file: "/run/specgap/task/message-1.md".into(),
            mcp: McpServer::default(),
            system_prompt_file: system.then(|| "/run/specgap/task/system-prompt.md".into()),
            resumed,
            model_args: serde_json::Map::new(),
            protocol_urls: Vec::new(),
            system_prompt: None,
        }
    }

    #[test]
    fn an_unknown_version_is_refused_naming_the_adapter_and_version() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(
            GeminiCli::new(dir.path(), "0.70.0", None, &[]).unwrap_err(),
            "cli:gemini-cli@0.70.0: this adapter reads the stream-JSON events of gemini-cli 0.61.0 only; use one of those versions"
        );
        assert!(GeminiCli::new(dir.path(), "0.61.0", None, &[]).unwrap_err().starts_with("cli:gemini-cli@0.61.0 is not installed ("));
    }

    #[test]
    fn the_command_copies_the_prompt_into_its_context_file_and_resumes_the_latest_session() {
        let dir = PathBuf::from("/cache/gemini-cli/0.61.0");
        let adapter = GeminiCli { dir: dir.clone(), node: PathBuf::from("/usr/bin/node"), mounts: vec![dir], version: "0.61.0".into() };
        assert_eq!(
            adapter.command(&launch(false, true)),
            "mkdir -p /home/specgap/.specgap /home/specgap/.gemini && cp '/run/specgap/task/system-prompt.md' '/home/specgap/.gemini/GEMINI.md' && \
             exec '/usr/bin/node' '/cache/gemini-cli/0.61.0/node_modules/@google/gemini-cli/bundle/gemini.js' --prompt=\"$(cat '/run/specgap/task/message-1.md')\" \
             -m 'gemini-2.5-pro' --yolo --skip-trust -o stream-json < /dev/null > '/home/specgap/.specgap/gemini-events.jsonl'"
        );
        let resumed = adapter.command(&launch(true, false));
        assert!(
            resumed.starts_with(
                "mkdir -p /home/specgap/.specgap /home/specgap/.gemini && : > '/home/specgap/.gemini/GEMINI.md' && exec '/usr/bin/node'"
            ),
            "{resumed}"
        );
        assert!(resumed.contains(" --skip-trust --resume latest -o stream-json"), "{resumed}");
        let env = adapter.env(&launch(false, true));
        let mcp = McpServer {
            name: "specgap".into(),
            command: "/run/specgap/bin/specgap-bridge".into(),
            args: vec!["mcp".into()],
            env: vec![("K".into(), "v".into())],
            config_file: String::new(),
        };
        assert_eq!(
            GeminiCli::settings(&mcp)["mcpServers"],
            json!({ "specgap": { "command": "/run/specgap/bin/specgap-bridge", "args": ["mcp", "--rename", "ask_user=ask_question"], "env": { "K": "v" }, "trust": true } })
        );
        assert!(GeminiCli::settings(&McpServer::default()).get("mcpServers").is_none());
        assert_eq!(GeminiCli::settings(&mcp)["tools"], json!({ "sandbox": false, "exclude": ["google_web_search", "web_fetch"] }));
        assert!(env.contains(&("GOOGLE_GEMINI_BASE_URL".into(), "http://127.0.0.1:4000".into())));
        assert!(env.contains(&("GEMINI_API_KEY".into(), "tok".into())));
    }

    #[test]
    fn an_unanswered_call_gets_the_result_of_the_last_call_of_its_tool_not_an_earlier_answered_one() {
        let log = r#"{"type":"init","session_id":"s2","model":"m"}
{"type":"tool_use","tool_name":"write_file","tool_id":"w1","parameters":{"file_path":"a.txt"}}
{"type":"tool_result","tool_id":"w1","status":"success","output":"wrote a"}
{"type":"tool_use","tool_name":"write_file","tool_id":"w2","parameters":{"file_path":"b.txt"}}
{"type":"tool_result","tool_id":"w2","status":"success","output":"wrote b"}
{"type":"tool_use","tool_name":"read_file","tool_id":"r3","parameters":{"file_path":"c.txt"}}
"#;
        let unanswered = [("r2-0".to_string(), "write_file".to_string()), ("r2-1".to_string(), "read_file".to_string())];
        let reading = read_events(log, &unanswered);
        assert_eq!(
            reading.results,
            vec![ObservedResult {
                call_id: "r2-0".into(),
                tool: "write_file".into(),
                output: "wrote b".into(),
                is_error: false,
                blank_success: false
            }]
        );
        assert_eq!(
            reading.actions,
            vec![FileAction::on(ActionKind::Write, "b.txt", "write_file", true)],
            "the read never finished: no action, no result"
        );
    }

    #[test]
    fn stream_json_events_become_actions_results_and_the_final_reply() {
        let log = r#"{"type":"init","session_id":"s1","model":"m"}
{"type":"message","role":"user","content":"Pack"}
{"type":"message","role":"assistant","content":"Let me ","delta":true}
{"type":"message","role":"assistant","content":"look.","delta":true}
{"type":"tool_use","tool_name":"read_file","tool_id":"read_file__a","parameters":{"file_path":"orders.csv"}}
{"type":"tool_result","tool_id":"read_file__a","status":"success","output":""}
{"type":"tool_use","tool_name":"write_file","tool_id":"write_file__b","parameters":{"file_path":"/workspace/plan.json","content":"{}"}}
{"type":"tool_result","tool_id":"write_file__b","status":"success"}
{"type":"tool_use","tool_name":"replace","tool_id":"replace__c","parameters":{"file_path":"/etc/hosts"}}
{"type":"tool_result","tool_id":"replace__c","status":"error","error":{"type":"x","message":"outside the workspace"}}
{"type":"message","role":"assistant","content":"Done.","delta":true}
{"type":"result","status":"success"}
{"type":"novel"}
"#;
        let reading = read_events(log, &[("r4-0".into(), "replace".into())]);
        assert_eq!(reading.actions, vec![FileAction::bare(ActionKind::Edit, "replace", false)], "the last turn's calls alone");
        let all: Vec<(String, String)> = [("r1-0", "read_file"), ("r2-0", "write_file"), ("r4-0", "replace")]
            .iter()
            .map(|(i, t)| (i.to_string(), t.to_string()))
            .collect();
        assert_eq!(
            read_events(log, &all).actions,
            vec![
                FileAction::on(ActionKind::Read, "orders.csv", "read_file", true),
                FileAction::on(ActionKind::Write, "plan.json", "write_file", true),
                FileAction::bare(ActionKind::Edit, "replace", false),
            ]
        );
        assert_eq!(
            reading.results,
            vec![ObservedResult {
                call_id: "r4-0".into(),
                tool: "replace".into(),
                output: "outside the workspace".into(),
                is_error: true,
                blank_success: false
            }]
        );
        assert_eq!(reading.session.as_deref(), Some("s1"));
        assert_eq!(reading.final_text.as_deref(), Some("Done."));
        assert_eq!(reading.notes, vec!["gemini-cli event `novel` is not one this adapter knows".to_string()]);
    }
}
