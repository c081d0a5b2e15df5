//! `cli:opencode`: OpenCode (npm `opencode-ai` 1.18.33, its linux x86_64 build
//! `opencode-linux-x64`), one of seed 002's general scaffolds, run as `opencode run` inside the
//! episode's sandbox against the gateway's OpenAI chat completions.
//!
//! | what | how |
//! | --- | --- |
//! | installation | `specgap agents install opencode`: the native program `node_modules/opencode-linux-x64/bin/opencode` (a Bun build), mounted read-only; its grep and glob tools need ripgrep (`rg`) from the system, which it would otherwise download into its cache at run time |
//! | start | `opencode run --format json -m specgap/<model>` with the message on standard input (a positional message is quoted by opencode when it has spaces); its JSON events go to `~/.specgap/opencode-events.jsonl` |
//! | start under `--ask-channel native` (the default) | `opencode serve --hostname 127.0.0.1 --port 4096` in the background (log `~/.specgap/opencode-serve.log`), a wait for the harness's ready file `~/.specgap/opencode-server-ready-<n>`, then `opencode run --attach http://127.0.0.1:4096 --session <id> --format json -m specgap/<model>` (same events), the server stopped when it ends (`served_command`) |
//! | question tool | under `native` its own `question` tool, which plain `run` never offers (it creates its session with `question: deny`): the harness creates the session through the server without rules and answers each request through `POST /question/<id>/reply`, one `ask_user` round a request ([`super::opencode_server`]); under `mcp` / `text` the tool is not offered |
//! | model endpoint | a provider `specgap` in `~/.config/opencode/opencode.json` through its bundled `@ai-sdk/openai-compatible` package: `baseURL` = the gateway, `apiKey` = `{env:OPENAI_API_KEY}` (the gateway token); streamed chat completions with `stream_options.include_usage` |
//! | network | `autoupdate` off, sharing off, models.dev list not fetched (`OPENCODE_DISABLE_MODELS_FETCH`), default plug-ins, LSP downloads, Claude Code files and external skills off, project configuration ignored (the harness's file is the configuration); its configuration directory `~/.config/opencode` is read-only to it ([`CONFIG_DIR_MODE`]), because opencode otherwise installs `@opencode-ai/plugin` there from the npm registry at every start (no switch exists; it skips a directory it cannot write); the network tripwire's tests show 1.18.33 so configured tries no connection |
//! | harness tools | the bridge's MCP server as a `local` server in its `mcp` configuration (its tools appear to the model as `specgap_ask_user`, `specgap_submit`); the commands `ask_user` and `submit` are on `PATH` for its shell tool |
//! | permissions | `"*": "allow"` (no prompt can block `run`), `webfetch` and `websearch` denied; opencode has no sandbox of its own |
//! | system prompt | its `instructions` option (files appended to its system prompt): the condition's prompt file; `blind` adds nothing |
//! | side requests | the title of a new session: a generating request without tools, a side request |
//! | resume | `opencode run --session <id>` with the new message; the id is the one its first start's events carry, kept in `~/.specgap/opencode-session` (under `native`: the session the harness created, in the same file; each start serves again and attaches) |
//! | tool output | its tool results are kept as sent (its shell tool's result has no exit status; that is in its events) |
//! | ask channel | default `native` (seed 002 A.9.3: the paper's opencode asks with its own tool) |
//! | normalized actions | its structured tools (read → read, write → write, edit → edit, grep → one search per file it shows, glob / list → list) mapped as their results arrive in its requests, so a run the harness ends keeps them; a chat completions result has no error flag, so a failed call counts as done there; its `bash` calls are read from the model traffic as every shell call is |
//! | log | the JSON events of each start, read without following links once it ended on its own: the actions (with their real status) and results of the last turn's calls, which no request carried; the last `text` part is its final reply |
//! | completion signal | none: it ends its run when the model stops calling tools; the workspace is then submitted automatically unless it called `submit` (`run --attach` exits when its prompt call returns, so the last text-only step's events may be missing; the final reply then comes from the gateway's record) |
//! | plan mode | not applicable |
//!
//! A version this adapter does not know is refused when the agent is configured, naming the
//! adapter and the version (an infrastructure error, never a score): its event format is
//! what the log mapping reads.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use specgap_engine::session::ObservedResult;
use specgap_protocol::action::{ActionKind, FileAction};
use specgap_sandbox::WORKSPACE_MOUNT;

use super::adapter::{Adapter, EventsReading, Launch, LogReport, SANDBOX_HOME, SystemPromptRoute, TOKEN_ENV, shell_quote};
use super::channel::AskChannel;
use super::home;
use super::opencode_server::{QuestionServer, SERVER_PORT};

/// The default version `specgap agents install opencode` installs.
pub const DEFAULT_VERSION: &str = "1.18.33";
/// The versions whose JSON event output this adapter reads.
pub const KNOWN_VERSIONS: &[&str] = &["1.18.33"];
/// The program, relative to the installation directory.
pub const PROGRAM: &str = "node_modules/opencode-linux-x64/bin/opencode";
/// The name of opencode's own question tool, as its model sees it (seed 002 A.9.3).
pub const NATIVE_QUESTION_TOOL: &str = "question";
/// The provider name the configuration gives the gateway.
pub const PROVIDER: &str = "specgap";
/// The events of the latest start, relative to the home.
pub const EVENTS_LOG: &str = ".specgap/opencode-events.jsonl";
/// The session id a resume continues, relative to the home.
pub const SESSION_FILE: &str = ".specgap/opencode-session";
/// Its configuration file, relative to the home.
pub const CONFIG_FILE: &str = ".config/opencode/opencode.json";
/// The stem of the harness's ready files under `--ask-channel native`, relative to the home
/// ([`QuestionServer::ready_file`]).
pub const READY_STEM: &str = ".specgap/opencode-server-ready";
/// The server's log of each start under `--ask-channel native`, relative to the home.
pub const SERVER_LOG: &str = ".specgap/opencode-serve.log";
/// The mode of opencode's configuration directory: readable, not writable (module guide,
/// "network").
pub const CONFIG_DIR_MODE: libc::mode_t = 0o555;
/// The output limit of each model call, tokens (seed 002 A.3 "Runtime" sets opencode's at
/// 131,072): the model's `limit.output` and [`OUTPUT_TOKEN_MAX_ENV`], since opencode caps every
/// call at the smaller of the two (32,000 without the variable).
pub const OUTPUT_TOKEN_LIMIT: u64 = 131_072;
/// The context window, tokens, the configuration gives the model (seed 002 A.3 "Runtime": one
/// million).
pub const CONTEXT_TOKEN_LIMIT: u64 = 1_000_000;
/// The variable that lifts opencode's own output cap (32,000 tokens when unset).
pub const OUTPUT_TOKEN_MAX_ENV: &str = "OPENCODE_EXPERIMENTAL_OUTPUT_TOKEN_MAX";
/// Largest events log read back.
const EVENTS_LIMIT: u64 = 64 << 20;

/// The adapter over one installation directory.
#[derive(Debug, Clone)]
pub struct OpenCode {
    dir: PathBuf,
    version: String,
    /// Whether its own question tool is served (`--ask-channel native`).
    native_questions: bool,
}

impl OpenCode {
    /// The adapter over the installation `dir` of `version`.
    ///
    /// # Errors
    /// A message naming the adapter and version when the version's event format is not known,
    /// the program is missing, its package says another version, or ripgrep is not installed.
    pub fn new(dir: &Path, version: &str) -> Result<Self, String> {
        if !KNOWN_VERSIONS.contains(&version) {
            return Err(format!(
                "cli:opencode@{version}: this adapter reads the JSON events of opencode {} only; use one of those versions",
                KNOWN_VERSIONS.join(", ")
            ));
        }
        let program = dir.join(PROGRAM);
        if !program.is_file() {
            return Err(format!(
                "cli:opencode@{version} is not installed ({} is missing); run `specgap agents install opencode@{version}`",
                program.display()
            ));
        }
        let manifest = dir.join("node_modules/opencode-linux-x64/package.json");
        let installed = std::fs::read(&manifest)
            .ok()
            .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
            .and_then(|v| v["version"].as_str().map(str::to_string));
        if installed.as_deref() != Some(version) {
            return Err(format!(
                "cli:opencode@{version}: {} says version {}; reinstall with `specgap agents install opencode@{version}`",
                manifest.display(),
                installed.unwrap_or_else(|| "nothing readable".into())
            ));
        }
        if !on_path("rg") {
            return Err(format!(
                "cli:opencode@{version} needs ripgrep (`rg`) on PATH for its grep and glob tools (it would download it at run time); install it, e.g. Debian's ripgrep"
            ));
        }
        Ok(OpenCode { dir: dir.to_path_buf(), version: version.to_string(), native_questions: false })
    }

    /// The adapter with its own question tool served through its server when `on`
    /// (`--ask-channel native`; module guide of [`super::opencode_server`]).
    #[must_use]
    pub fn with_native_questions(mut self, on: bool) -> Self {
        self.native_questions = on;
        self
    }

    /// The route of its question tool: `opencode serve` on the sandbox's loopback.
    pub fn server() -> QuestionServer {
        QuestionServer { port: SERVER_PORT, session_file: SESSION_FILE, ready_stem: READY_STEM }
    }

    /// Its configuration for one start: the gateway as the only provider, the switches, the
    /// permissions and the condition's system prompt as instructions.
    pub fn config(&self, launch: &Launch) -> Value {
        let mut model = json!({
            "name": launch.model,
            "tool_call": true,
            "limit": { "context": CONTEXT_TOKEN_LIMIT, "output": OUTPUT_TOKEN_LIMIT },
        });
        if !launch.model_args.is_empty() {
            model["options"] = Value::Object(launch.model_args.clone());
        }
        let mut config = json!({
            "$schema": "https://opencode.ai/config.json",
            "autoupdate": false,
            "share": "disabled",
            "model": format!("{PROVIDER}/{}", launch.model),
            "small_model": format!("{PROVIDER}/{}", launch.model),
            "enabled_providers": [PROVIDER],
            "provider": {
                PROVIDER: {
                    "npm": "@ai-sdk/openai-compatible",
                    "name": "specgap gateway",
                    "options": { "baseURL": launch.base_url, "apiKey": format!("{{env:{TOKEN_ENV}}}") },
                    "models": { launch.model.clone(): model },
                }
            },
            "permission": { "*": "allow", "webfetch": "deny", "websearch": "deny" },
        });
        if let Some(file) = &launch.system_prompt_file {
            config["instructions"] = json!([file]);
        }
        if !launch.mcp.command.is_empty() {
            let mut command = vec![launch.mcp.command.clone()];
            command.extend(launch.mcp.args.iter().cloned());
            let environment: serde_json::Map<String, Value> =
                launch.mcp.env.iter().map(|(k, v)| (k.clone(), Value::String(v.clone()))).collect();
            config["mcp"] =
                json!({ launch.mcp.name.clone(): { "type": "local", "command": command, "environment": environment, "enabled": true } });
        }
        config
    }
}

/// The command under `--ask-channel native` (module guide of [`super::opencode_server`]):
/// `opencode serve` on the sandbox's loopback, a wait for the harness's ready file (the
/// session it created, its questions watched), `opencode run --attach` on that session with
/// the same JSON events, then the server stopped; the run's exit status is the command's.
fn served_command(launch: &Launch) -> String {
    let home_file = |relative: &str| shell_quote(&format!("{SANDBOX_HOME}/{relative}"));
    let ready = home_file(&OpenCode::server().ready_file(launch.start_number()));
    format!(
        "mkdir -p {home}/.specgap\n\
         opencode serve --hostname 127.0.0.1 --port {SERVER_PORT} >> {log} 2>&1 &\n\
         server=$!\n\
         while [ ! -s {ready} ]; do kill -0 $server 2>/dev/null || exit 3; sleep 0.05; done\n\
         read -r state < {ready}\n\
         if [ \"$state\" != ready ]; then echo \"specgap: $state\" >&2; kill $server; exit 3; fi\n\
         opencode run --attach http://127.0.0.1:{SERVER_PORT} --session \"$(cat {session})\" --format json -m {model} < {message} > {events}\n\
         status=$?\n\
         kill $server 2>/dev/null\n\
         wait $server 2>/dev/null\n\
         exit $status",
        home = SANDBOX_HOME,
        log = home_file(SERVER_LOG),
        session = home_file(SESSION_FILE),
        model = shell_quote(&format!("{PROVIDER}/{}", launch.model)),
        message = shell_quote(&launch.message_file),
        events = home_file(EVENTS_LOG),
    )
}

/// Whether `program` is an executable file in a directory of `PATH`.
fn on_path(program: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|path| std::env::split_paths(&path).any(|d| d.join(program).is_file()))
}

impl Adapter for OpenCode {
    fn spec(&self) -> String {
        format!("cli:opencode@{}", self.version)
    }

    fn mounts(&self) -> Vec<PathBuf> {
        vec![self.dir.clone()]
    }

    fn path_dirs(&self) -> Vec<PathBuf> {
        vec![self.dir.join(PROGRAM).parent().map(Path::to_path_buf).unwrap_or_default()]
    }

    fn env(&self, _launch: &Launch) -> Vec<(String, String)> {
        let output_cap = OUTPUT_TOKEN_LIMIT.to_string();
        [
            (OUTPUT_TOKEN_MAX_ENV, output_cap.as_str()),
            ("OPENCODE_DISABLE_AUTOUPDATE", "1"),
            ("OPENCODE_DISABLE_MODELS_FETCH", "1"),
            ("OPENCODE_DISABLE_DEFAULT_PLUGINS", "1"),
            ("OPENCODE_DISABLE_LSP_DOWNLOAD", "1"),
            ("OPENCODE_DISABLE_SHARE", "1"),
            ("OPENCODE_DISABLE_CLAUDE_CODE", "1"),
            ("OPENCODE_DISABLE_EXTERNAL_SKILLS", "1"),
            ("OPENCODE_DISABLE_PROJECT_CONFIG", "1"),
            ("OPENCODE_DISABLE_TERMINAL_TITLE", "1"),
            ("XDG_STATE_HOME", &format!("{SANDBOX_HOME}/.local/state")),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
    }

    fn system_prompt_route(&self) -> SystemPromptRoute {
        SystemPromptRoute::Option
    }

    fn prepare_home(&self, home_dir: &Path, launch: &Launch) -> Result<(), specgap_engine::session::AgentError> {
        let text = serde_json::to_vec_pretty(&self.config(launch)).unwrap_or_default();
        let error =
            |e| specgap_engine::session::AgentError::with_source("cannot write opencode's configuration into the agent's home", false, e);
        home::write_file(home_dir, Path::new(CONFIG_FILE), &text).map_err(error)?;
        // opencode installs `@opencode-ai/plugin` from the npm registry into every configuration
        // directory it may write (its `Npm.install` skips one it cannot write), and has no
        // switch for it: its configuration directory is read-only for the agent's programs
        // (the harness, root outside, still rewrites the file before each start).
        let dir = Path::new(CONFIG_FILE).parent().unwrap_or(Path::new(".config/opencode"));
        home::set_dir_mode(home_dir, dir, CONFIG_DIR_MODE).map_err(error)
    }

    fn command(&self, launch: &Launch) -> String {
        if self.native_questions {
            return served_command(launch);
        }
        let session = if launch.resumed {
            format!(" --session \"$(cat {})\"", shell_quote(&format!("{SANDBOX_HOME}/{SESSION_FILE}")))
        } else {
            String::new()
        };
        format!(
            "mkdir -p {home}/.specgap && exec opencode run --format json -m {model}{session} < {message} > {events}",
            home = SANDBOX_HOME,
            model = shell_quote(&format!("{PROVIDER}/{}", launch.model)),
            message = shell_quote(&launch.message_file),
            events = shell_quote(&format!("{SANDBOX_HOME}/{EVENTS_LOG}")),
        )
    }

    fn default_ask_channel(&self) -> AskChannel {
        AskChannel::Native
    }

    fn question_server(&self) -> Option<QuestionServer> {
        self.native_questions.then(Self::server)
    }

    fn native_question_tool(&self) -> Option<String> {
        self.native_questions.then(|| NATIVE_QUESTION_TOOL.to_string())
    }

    fn can_resume(&self) -> bool {
        true
    }

    fn toolless_requests_are_side(&self) -> bool {
        true
    }

    /// opencode names MCP tools `<server>_<tool>`.
    fn harness_tool_name(&self, tool: &str) -> String {
        format!("{}_{tool}", super::bridge::MCP_SERVER_NAME)
    }

    fn tool_result(&self, _tool: &str, content: &str) -> (String, bool) {
        (content.to_string(), false)
    }

    /// Its structured tools' actions as their results arrive, so a start the harness ends
    /// (an accepted submission, a budget) keeps them. A chat completions tool message has no
    /// error flag: a failed call counts as done here (its events would say it failed, but
    /// they are read only once the program has ended on its own).
    fn call_actions(&self, tool: &str, arguments: &Value, result: &str, is_error: bool) -> Vec<FileAction> {
        tool_actions(tool, arguments, result, !is_error)
    }

    fn read_log(&self, home_dir: &Path, unanswered: &[(String, String)]) -> LogReport {
        let mut report = LogReport::default();
        let Some(bytes) = home::read_log(home_dir, Path::new(EVENTS_LOG), EVENTS_LIMIT, &mut report.note) else {
            return report;
        };
        let log = read_events(&String::from_utf8_lossy(&bytes), unanswered);
        // Only the first start's session is kept: a resume continues it.
        if let Some(session) = &log.session
            && matches!(home::read_file(home_dir, Path::new(SESSION_FILE), 4096), Err(home::HomeError::Missing(_)))
            && let Err(e) = home::write_file(home_dir, Path::new(SESSION_FILE), session.as_bytes())
        {
            report.note = format!("cannot keep opencode's session id: {e}");
        }
        report.results = log.results;
        report.actions = log.actions;
        report.final_text = log.final_text;
        if !log.notes.is_empty() {
            report.note = [report.note, log.notes.join("; ")].into_iter().filter(|n| !n.is_empty()).collect::<Vec<_>>().join("; ");
        }
        report
    }
}

/// Reads opencode's `--format json` output (one event a line: `step_start`, `tool_use`,
/// `text`, `reasoning`, `step_finish`, `error`), `unanswered` being the last turn's calls (id,
/// tool) whose results no request carried.
pub fn read_events(text: &str, unanswered: &[(String, String)]) -> EventsReading {
    let mut reading = EventsReading::default();
    let mut unparsed = 0;
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let Ok(event) = serde_json::from_str::<Value>(line) else {
            unparsed += 1;
            continue;
        };
        if reading.session.is_none() {
            reading.session = event["sessionID"].as_str().map(str::to_string);
        }
        let part = &event["part"];
        match event["type"].as_str().unwrap_or_default() {
            "tool_use" => {
                let tool = part["tool"].as_str().unwrap_or_default();
                let state = &part["state"];
                let ok = state["status"] == "completed";
                let output = if ok { state["output"].as_str() } else { state["error"].as_str() }.unwrap_or_default();
                let call_id = part["callID"].as_str().unwrap_or_default();
                // The calls whose results a request carried were mapped as they arrived
                // (`call_actions`); the log adds those of its last turn.
                if let Some((id, called)) = unanswered.iter().find(|(id, _)| id == call_id) {
                    reading.actions.extend(tool_actions(tool, &state["input"], output, ok));
                    reading.results.push(ObservedResult {
                        call_id: id.clone(),
                        tool: called.clone(),
                        output: output.to_string(),
                        is_error: !ok,
                        blank_success: false,
                    });
                }
            }
            "text" => {
                if let Some(text) = part["text"].as_str().filter(|t| !t.trim().is_empty()) {
                    reading.final_text = Some(text.to_string());
                }
            }
            "step_start" | "step_finish" | "reasoning" => {}
            "error" => {
                let message = event["error"]["data"]["message"].as_str().or_else(|| event["error"]["name"].as_str()).unwrap_or("an error");
                reading.notes.push(format!("opencode reported {message}"));
            }
            other => reading.notes.push(format!("opencode event `{other}` is not one this adapter knows")),
        }
    }
    if unparsed > 0 {
        reading.notes.push(format!("{unparsed} lines of {EVENTS_LOG} are not JSON and were left out"));
    }
    reading
}

/// The normalized actions of one of opencode's structured tools (its `bash` calls are read
/// from the model traffic by the report's shell reader, so they add nothing here).
fn tool_actions(tool: &str, input: &Value, output: &str, ok: bool) -> Vec<FileAction> {
    let path = |key: &str| input[key].as_str().and_then(workspace_path);
    let on = |kind: ActionKind, path: Option<String>| match path {
        Some(path) => FileAction::on(kind, path, tool, ok),
        None => FileAction::bare(kind, tool, ok),
    };
    match tool {
        "read" => vec![on(ActionKind::Read, path("filePath"))],
        "write" => vec![on(ActionKind::Write, path("filePath"))],
        "edit" => vec![on(ActionKind::Edit, path("filePath"))],
        "glob" | "list" => vec![on(ActionKind::List, path("path"))],
        "grep" => {
            let shown: Vec<String> = if ok { grep_files(output) } else { Vec::new() };
            if shown.is_empty() {
                vec![FileAction::bare(ActionKind::Search, tool, ok)]
            } else {
                shown.into_iter().map(|p| FileAction::on(ActionKind::Search, p, tool, true)).collect()
            }
        }
        _ => Vec::new(),
    }
}

/// The workspace files a grep result shows lines of: its lines `<absolute path>:` that head
/// each file's `  Line N: …` matches.
fn grep_files(output: &str) -> Vec<String> {
    let lines: Vec<&str> = output.lines().collect();
    let mut files = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let Some(file) = line.strip_suffix(':').filter(|f| f.starts_with('/')) else { continue };
        let shows_lines = lines.get(i + 1).is_some_and(|next| next.trim_start().starts_with("Line "));
        if let Some(path) = workspace_path(file).filter(|_| shows_lines)
            && !files.contains(&path)
        {
            files.push(path);
        }
    }
    files
}

/// `path` relative to the workspace, normalized; `None` outside it or for the root itself.
pub fn workspace_path(path: &str) -> Option<String> {
    let rest = path
        .strip_prefix(WORKSPACE_MOUNT)
        .filter(|r| r.is_empty() || r.starts_with('/'))
        .map(|r| r.trim_start_matches('/'))
        .or_else(|| (!path.starts_with('/')).then_some(path))?;
    let mut parts: Vec<&str> = Vec::new();
    for part in rest.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            part => parts.push(part),
        }
    }
    (!parts.is_empty()).then(|| parts.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn launch(resumed: bool) -> Launch {
        Launch {
            base_url: "http://127.0.0.1:4000/v1".into(),
            token: "t".into(),
            model: "qwen3-8b".into(),
            message_file: "/run/specgap/task/message-2.md".into(),
            mcp: super::super::adapter::McpServer {
                name: "specgap".into(),
                command: "/run/specgap/bin/specgap-bridge".into(),
                args: vec!["mcp".into()],
                env: vec![("SPECGAP_BRIDGE_TOKEN".into(), "b".into())],
                config_file: "/home/specgap/.specgap/mcp.json".into(),
            },
            system_prompt_file: Some("/run/specgap/task/system-prompt.md".into()),
            resumed,
            model_args: serde_json::Map::new(),
            protocol_urls: Vec::new(),
            system_prompt: None,
        }
    }

    fn installed(version: &str) -> (tempfile::TempDir, OpenCode) {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("node_modules/opencode-linux-x64/bin");
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::write(bin.join("opencode"), "").unwrap();
        std::fs::write(dir.path().join("node_modules/opencode-linux-x64/package.json"), format!("{{\"version\":\"{version}\"}}")).unwrap();
        let adapter = OpenCode { dir: dir.path().to_path_buf(), version: version.into(), native_questions: false };
        (dir, adapter)
    }

    #[test]
    fn an_unknown_version_is_refused_naming_the_adapter_and_version() {
        let (dir, _) = installed("1.19.0");
        let err = OpenCode::new(dir.path(), "1.19.0").unwrap_err();
        assert_eq!(err, "cli:opencode@1.19.0: this adapter reads the JSON events of opencode 1.18.33 only; use one of those versions");
        let err = OpenCode::new(&dir.path().join("none"), "1.18.33").unwrap_err();
        assert!(err.starts_with("cli:opencode@1.18.33 is not installed ("), "{err}");
        let err = OpenCode::new(dir.path(), "1.18.33").unwrap_err();
        assert!(err.contains("says version 1.19.0"), "{err}");
    }

    #[test]
    fn the_command_reads_the_message_from_standard_input_and_resumes_its_session() {
        let (_dir, adapter) = installed("1.18.33");
        assert_eq!(
            adapter.command(&launch(false)),
            "mkdir -p /home/specgap/.specgap && exec opencode run --format json -m 'specgap/qwen3-8b' < '/run/specgap/task/message-2.md' > '/home/specgap/.specgap/opencode-events.jsonl'"
        );
        assert_eq!(
            adapter.command(&launch(true)),
            "mkdir -p /home/specgap/.specgap && exec opencode run --format json -m 'specgap/qwen3-8b' --session \"$(cat '/home/specgap/.specgap/opencode-session')\" < '/run/specgap/task/message-2.md' > '/home/specgap/.specgap/opencode-events.jsonl'"
        );
    }

    #[test]
    fn under_native_questions_the_command_serves_waits_for_the_harness_and_attaches() {
        let (_dir, adapter) = installed("1.18.33");
        assert_eq!(adapter.question_server(), None, "no route unless the channel is native");
        assert_eq!(adapter.default_ask_channel(), AskChannel::Native, "the paper's channel for opencode");
        let adapter = adapter.with_native_questions(true);
        assert_eq!(adapter.question_server(), Some(QuestionServer { port: 4096, session_file: SESSION_FILE, ready_stem: READY_STEM }));
        let expected = "mkdir -p /home/specgap/.specgap
opencode serve --hostname 127.0.0.1 --port 4096 >> '/home/specgap/.specgap/opencode-serve.log' 2>&1 &
server=$!
while [ ! -s '/home/specgap/.specgap/opencode-server-ready-2' ]; do kill -0 $server 2>/dev/null || exit 3; sleep 0.05; done
read -r state < '/home/specgap/.specgap/opencode-server-ready-2'
if [ \"$state\" != ready ]; then echo \"specgap: $state\" >&2; kill $server; exit 3; fi
opencode run --attach http://127.0.0.1:4096 --session \"$(cat '/home/specgap/.specgap/opencode-session')\" --format json -m 'specgap/qwen3-8b' < '/run/specgap/task/message-2.md' > '/home/specgap/.specgap/opencode-events.jsonl'
status=$?
kill $server 2>/dev/null
wait $server 2>/dev/null
exit $status";
        assert_eq!(adapter.command(&launch(true)), expected);
    }

    #[test]
    fn the_configuration_names_the_gateway_the_token_variable_and_the_instructions() {
        let (_dir, adapter) = installed("1.18.33");
        let config = adapter.config(&launch(false));
        assert_eq!(
            config["provider"]["specgap"]["options"],
            json!({ "baseURL": "http://127.0.0.1:4000/v1", "apiKey": "{env:OPENAI_API_KEY}" })
        );
        assert_eq!(config["model"], "specgap/qwen3-8b");
        assert_eq!(
            config["provider"]["specgap"]["models"]["qwen3-8b"]["limit"],
            json!({ "context": 1_000_000, "output": 131_072 }),
            "seed 002 A.3 Runtime"
        );
        assert_eq!(config["instructions"], json!(["/run/specgap/task/system-prompt.md"]));
        assert_eq!(config["autoupdate"], false);
        assert_eq!(config["permission"], json!({ "*": "allow", "webfetch": "deny", "websearch": "deny" }));
        assert_eq!(
            config["mcp"],
            json!({ "specgap": { "type": "local", "command": ["/run/specgap/bin/specgap-bridge", "mcp"], "environment": { "SPECGAP_BRIDGE_TOKEN": "b" }, "enabled": true } })
        );
        assert!(!config.to_string().contains("\"t\""), "the token itself is never written");
        let mut blind = launch(false);
        blind.system_prompt_file = None;
        assert!(adapter.config(&blind).get("instructions").is_none());
    }

    #[test]
    fn the_output_cap_is_the_papers_131072_tokens_in_the_model_limit_and_opencodes_own_cap() {
        let (_dir, adapter) = installed("1.18.33");
        let env = adapter.env(&launch(false));
        let cap: Vec<&(String, String)> = env.iter().filter(|(k, _)| k == "OPENCODE_EXPERIMENTAL_OUTPUT_TOKEN_MAX").collect();
        assert_eq!(cap, vec![&("OPENCODE_EXPERIMENTAL_OUTPUT_TOKEN_MAX".to_string(), "131072".to_string())]);
        let config = adapter.config(&launch(false));
        assert_eq!(config["provider"]["specgap"]["models"]["qwen3-8b"]["limit"]["output"], 131_072);
    }

    #[test]
    fn tool_use_events_become_normalized_actions_and_missing_results() {
        let log = r#"{"type":"step_start","sessionID":"ses_A","part":{"type":"step-start"}}
{"type":"tool_use","sessionID":"ses_A","part":{"tool":"read","callID":"c1","state":{"status":"completed","input":{"filePath":"/workspace/src/a.py"},"output":"<content>x</content>"}}}
{"type":"tool_use","sessionID":"ses_A","part":{"tool":"read","callID":"c2","state":{"status":"error","input":{"filePath":"/workspace/none.py"},"error":"File not found"}}}
{"type":"tool_use","sessionID":"ses_A","part":{"tool":"grep","callID":"c3","state":{"status":"completed","input":{"pattern":"x"},"output":"Found 2 matches\n/workspace/notes.txt:\n  Line 1: x\n\n/workspace/src/b.py:\n  Line 2: x y\n"}}}
{"type":"tool_use","sessionID":"ses_A","part":{"tool":"glob","callID":"c4","state":{"status":"completed","input":{"pattern":"*.py","path":"/workspace/src"},"output":"/workspace/src/a.py"}}}
{"type":"tool_use","sessionID":"ses_A","part":{"tool":"bash","callID":"c5","state":{"status":"completed","input":{"command":"cat a"},"output":"x"}}}
{"type":"tool_use","sessionID":"ses_A","part":{"tool":"write","callID":"c6","state":{"status":"completed","input":{"filePath":"/workspace/new.txt","content":"n"},"output":"Wrote file successfully."}}}
{"type":"tool_use","sessionID":"ses_A","part":{"tool":"edit","callID":"c7","state":{"status":"completed","input":{"filePath":"/etc/passwd"},"output":"Edit applied successfully."}}}
{"type":"text","sessionID":"ses_A","part":{"type":"text","text":"Done."}}
{"type":"surprise","sessionID":"ses_A"}
not json
"#;
        let unanswered = vec![("c7".to_string(), "edit".to_string())];
        let reading = read_events(log, &unanswered);
        assert_eq!(reading.session.as_deref(), Some("ses_A"));
        assert_eq!(reading.actions, vec![FileAction::bare(ActionKind::Edit, "edit", true)], "the last turn's calls alone");
        let all: Vec<(String, String)> = (1..=7).map(|n| (format!("c{n}"), String::new())).collect();
        assert_eq!(
            read_events(log, &all).actions,
            vec![
                FileAction::on(ActionKind::Read, "src/a.py", "read", true),
                FileAction::on(ActionKind::Read, "none.py", "read", false),
                FileAction::on(ActionKind::Search, "notes.txt", "grep", true),
                FileAction::on(ActionKind::Search, "src/b.py", "grep", true),
                FileAction::on(ActionKind::List, "src", "glob", true),
                FileAction::on(ActionKind::Write, "new.txt", "write", true),
                FileAction::bare(ActionKind::Edit, "edit", true),
            ]
        );
        assert_eq!(
            reading.results,
            vec![ObservedResult {
                call_id: "c7".into(),
                tool: "edit".into(),
                output: "Edit applied successfully.".into(),
                is_error: false,
                blank_success: false
            }]
        );
        assert_eq!(reading.final_text.as_deref(), Some("Done."));
        assert_eq!(
            reading.notes,
            vec![
                "opencode event `surprise` is not one this adapter knows".to_string(),
                format!("1 lines of {EVENTS_LOG} are not JSON and were left out")
            ]
        );
    }

    #[test]
    fn workspace_paths_are_relative_and_normalized() {
        assert_eq!(workspace_path("/workspace/a/./b/../c.py").as_deref(), Some("a/c.py"));
        assert_eq!(workspace_path("src/x.py").as_deref(), Some("src/x.py"));
        assert_eq!(workspace_path("/workspace"), None);
        assert_eq!(workspace_path("/workspacex/a"), None);
        assert_eq!(workspace_path("/workspace/../etc/passwd"), None);
        assert_eq!(workspace_path("/tmp/a"), None);
    }
}
