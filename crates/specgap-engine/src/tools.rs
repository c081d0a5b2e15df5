//! The agent's tools (DESIGN §3 tool table; names and arguments are normative): their
//! [`ToolSpec`]s per profile, argument parsing, output caps, and the file tools.
//!
//! The command tools (`run_experiment`, `bash`, `run_project`) and the session tools
//! (`ask_user`, `submit`, `write_plan`) are executed by the episode loop, which owns the
//! sandbox, the user and the budgets; this module only parses their arguments.

use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use specgap_protocol::event::ToolSpec;
use specgap_protocol::path_quote;

use crate::condition::{Ask, Budgets, Condition, Profile};
use crate::confine::WorkspaceRoot;
use crate::prompt_files::{PromptFile, Replacements};

/// Largest tool result given back to the agent, in bytes; longer text keeps its head and tail
/// and states the cut.
pub const OUTPUT_CAP: usize = 16 * 1024;
/// Default `depth` of `list_files`.
pub const DEFAULT_LIST_DEPTH: u32 = 2;
/// Most entries `list_files` prints.
pub const LIST_ENTRY_CAP: usize = 1000;
/// Default `limit` of `read_text`, in lines.
pub const DEFAULT_READ_LIMIT: usize = 2000;
/// Default `timeout_sec` of `run_experiment`, `bash` and `run_project`.
pub const DEFAULT_COMMAND_TIMEOUT_SEC: u64 = 120;
/// Largest `timeout_sec` a command may ask for (further capped by the remaining wall budget).
pub const MAX_COMMAND_TIMEOUT_SEC: u64 = 1800;

/// Tool names.
pub mod names {
    /// `list_files`.
    pub const LIST_FILES: &str = "list_files";
    /// `read_text`.
    pub const READ_TEXT: &str = "read_text";
    /// `write_text`.
    pub const WRITE_TEXT: &str = "write_text";
    /// `replace_text`.
    pub const REPLACE_TEXT: &str = "replace_text";
    /// `run_project`.
    pub const RUN_PROJECT: &str = "run_project";
    /// `run_experiment`.
    pub const RUN_EXPERIMENT: &str = "run_experiment";
    /// `ask_user`.
    pub const ASK_USER: &str = "ask_user";
    /// `submit`.
    pub const SUBMIT: &str = "submit";
    /// `write_plan`.
    pub const WRITE_PLAN: &str = "write_plan";
    /// `bash`.
    pub const BASH: &str = "bash";
    /// The harness action of scripted agents (not offered as a tool).
    pub const APPLY_OVERLAY: &str = "apply_overlay";
}

/// A tool-description prompt file (`--prompts DIR`): `tool_<name>.md` replaces that tool's
/// description, so a replaced prompt set can describe the tools (and the protocol's end rules)
/// in its own words. Placeholders: `{who}` (`owner` or `client`), `{submission_budget}` (what
/// `submit`'s built-in description says about the budget), `{submissions}`. The built-in text
/// of a file is the description the tool has without it (for `ask_user` and `submit`, the
/// template they are filled from).
const fn tool_file(name: &'static str, builtin: &'static str, purpose: &'static str) -> PromptFile {
    PromptFile { name, builtin, purpose }
}

/// `tool_list_files.md`.
pub const TOOL_LIST_FILES_FILE: PromptFile = tool_file("tool_list_files.md", LIST_FILES_DESCRIPTION, "description of the list_files tool");
/// `tool_read_text.md`.
pub const TOOL_READ_TEXT_FILE: PromptFile = tool_file("tool_read_text.md", READ_TEXT_DESCRIPTION, "description of the read_text tool");
/// `tool_write_text.md`.
pub const TOOL_WRITE_TEXT_FILE: PromptFile = tool_file("tool_write_text.md", WRITE_TEXT_DESCRIPTION, "description of the write_text tool");
/// `tool_replace_text.md`.
pub const TOOL_REPLACE_TEXT_FILE: PromptFile =
    tool_file("tool_replace_text.md", REPLACE_TEXT_DESCRIPTION, "description of the replace_text tool");
/// `tool_run_project.md`.
pub const TOOL_RUN_PROJECT_FILE: PromptFile =
    tool_file("tool_run_project.md", RUN_PROJECT_DESCRIPTION, "description of the run_project tool");
/// `tool_run_experiment.md`.
pub const TOOL_RUN_EXPERIMENT_FILE: PromptFile =
    tool_file("tool_run_experiment.md", COMMAND_DESCRIPTION, "description of the run_experiment tool");
/// `tool_bash.md`.
pub const TOOL_BASH_FILE: PromptFile = tool_file("tool_bash.md", COMMAND_DESCRIPTION, "description of the bash tool");
/// `tool_ask_user.md`.
pub const TOOL_ASK_USER_FILE: PromptFile = tool_file("tool_ask_user.md", ASK_USER_DESCRIPTION, "description of the ask_user tool");
/// `tool_submit.md`.
pub const TOOL_SUBMIT_FILE: PromptFile = tool_file("tool_submit.md", SUBMIT_DESCRIPTION, "description of the submit tool");
/// `tool_write_plan.md`.
pub const TOOL_WRITE_PLAN_FILE: PromptFile =
    tool_file("tool_write_plan.md", WRITE_PLAN_DESCRIPTION, "description of plan mode's write_plan tool");

const LIST_FILES_DESCRIPTION: &str = "List the files and directories under a workspace directory, down to a given depth. Directories end in `/`; links show where they point. A name that is not plain text (not UTF-8, a control character such as a newline, a quote or backslash, a leading or trailing space, or ` -> `) is shown in double quotes with C escapes (`\\n`, `\\t`, `\\\"`, `\\\\`, octal such as `\\351`); give such a path back to any file tool in the same quoted form.";
const READ_TEXT_DESCRIPTION: &str =
    "Read a text file of the workspace, with line numbers. Use offset and limit to page through long files.";
const WRITE_TEXT_DESCRIPTION: &str = "Create a file or replace its whole content. Missing parent directories are created.";
const REPLACE_TEXT_DESCRIPTION: &str = "Replace one passage of a file. `old` must occur exactly once in the file; otherwise nothing changes and the error says how many times it occurs.";
const RUN_PROJECT_DESCRIPTION: &str = "Replay one of the project's recorded runs and show what it prints.";
const COMMAND_DESCRIPTION: &str =
    "Run a shell command in the workspace, isolated and without network access, and show its exit status and output.";
const ASK_USER_DESCRIPTION: &str = "Send the {who} one message or question (`question`), or several questions at once (`questions`); give exactly one of the two. Each question is answered on its own and the replies are the result; one call is one round of questions. Must be the only call in its turn.";
const SUBMIT_DESCRIPTION: &str =
    "Deliver the current workspace to the {who} for review. {submission_budget} Must be the only call in its turn.";
const WRITE_PLAN_DESCRIPTION: &str = "Save your plan as PLAN.md and move from planning to execution. Must be the only call in its turn.";

/// Replaces the description of every tool in `tools` whose `tool_<name>.md` the run replaces
/// (module [`TOOL_LIST_FILES_FILE`] and siblings), filling its placeholders for `condition`.
pub fn describe_with(tools: &mut [ToolSpec], prompts: &Replacements, condition: &Condition, budgets: &Budgets) {
    for tool in tools.iter_mut() {
        if let Some(text) = prompts.get(&format!("tool_{}.md", tool.name)) {
            tool.description = fill_description(text.trim(), condition, budgets);
        }
    }
}

fn who(condition: &Condition) -> &'static str {
    if condition.is_delivery() { "client" } else { "owner" }
}

fn fill_description(template: &str, condition: &Condition, budgets: &Budgets) -> String {
    template
        .replace("{who}", who(condition))
        .replace("{submission_budget}", &submission_budget(condition, budgets))
        .replace("{submissions}", &budgets.submissions.to_string())
}

fn spec(name: &str, description: &str, parameters: Value) -> ToolSpec {
    ToolSpec { name: name.into(), description: description.into(), parameters }
}

fn object(properties: Value, required: &[&str]) -> Value {
    json!({ "type": "object", "properties": properties, "required": required, "additionalProperties": false })
}

fn command_spec(name: &str, description: &str) -> ToolSpec {
    spec(
        name,
        description,
        object(
            json!({
                "command": { "type": "string", "description": "Shell command line, run by sh with the workspace as working directory." },
                "timeout_sec": { "type": "integer", "minimum": 1, "description": "Seconds before the command is killed (default 120, at most 1800)." }
            }),
            &["command"],
        ),
    )
}

/// The tools offered when the episode opens (DESIGN §3): profile `owner` = list_files,
/// read_text, write_text, replace_text, run_project (only with `[project]`), run_experiment,
/// ask_user (unless ask is off), submit; profile `shell` = bash, ask_user, submit. In that
/// order. In plan mode's planning phase (seed 000 App. F.3) the editing tools and submit are
/// not offered and write_plan is added last; [`execution_tool_specs`] are the tools after it.
/// `submit`'s description states the submission budget, which the system prompt leaves out so
/// that `full` and `partial` share one (seed 000 §5.1).
pub fn tool_specs(condition: &Condition, budgets: &Budgets, has_project: bool) -> Vec<ToolSpec> {
    toolset(condition, budgets, has_project, condition.is_plan())
}

/// Plan mode's tools after a successful `write_plan`: the full toolset of
/// [`tool_specs`] without the planning phase's restrictions and without write_plan.
pub fn execution_tool_specs(condition: &Condition, budgets: &Budgets, has_project: bool) -> Vec<ToolSpec> {
    toolset(condition, budgets, has_project, false)
}

fn toolset(condition: &Condition, budgets: &Budgets, has_project: bool, planning: bool) -> Vec<ToolSpec> {
    let mut tools = Vec::new();
    match condition.profile() {
        Profile::Owner => {
            tools.push(spec(
                names::LIST_FILES,
                LIST_FILES_DESCRIPTION,
                object(
                    json!({
                        "path": { "type": "string", "description": "Directory relative to the workspace (default `.`)." },
                        "depth": { "type": "integer", "minimum": 1, "description": "How many levels to descend (default 2)." }
                    }),
                    &[],
                ),
            ));
            tools.push(spec(
                names::READ_TEXT,
                READ_TEXT_DESCRIPTION,
                object(
                    json!({
                        "path": { "type": "string", "description": "File relative to the workspace." },
                        "offset": { "type": "integer", "minimum": 1, "description": "First line to show, counting from 1 (default 1)." },
                        "limit": { "type": "integer", "minimum": 1, "description": "Most lines to show (default 2000)." }
                    }),
                    &["path"],
                ),
            ));
            if !planning {
                tools.push(spec(
                    names::WRITE_TEXT,
                    WRITE_TEXT_DESCRIPTION,
                    object(
                        json!({
                            "path": { "type": "string", "description": "File relative to the workspace." },
                            "content": { "type": "string", "description": "The complete new content." }
                        }),
                        &["path", "content"],
                    ),
                ));
                tools.push(spec(
                    names::REPLACE_TEXT,
                    REPLACE_TEXT_DESCRIPTION,
                    object(
                        json!({
                            "path": { "type": "string", "description": "File relative to the workspace." },
                            "old": { "type": "string", "description": "The exact text to replace." },
                            "new": { "type": "string", "description": "The text to put in its place." }
                        }),
                        &["path", "old", "new"],
                    ),
                ));
            }
            if has_project {
                tools.push(spec(
                    names::RUN_PROJECT,
                    RUN_PROJECT_DESCRIPTION,
                    object(
                        json!({
                            "record": { "type": "string", "description": "The record, relative to the project's records directory (or to the workspace)." }
                        }),
                        &["record"],
                    ),
                ));
            }
            tools.push(command_spec(names::RUN_EXPERIMENT, COMMAND_DESCRIPTION));
        }
        Profile::Shell => tools.push(command_spec(names::BASH, COMMAND_DESCRIPTION)),
    }
    if condition.ask() != Ask::Off {
        tools.push(spec(
            names::ASK_USER,
            &ASK_USER_DESCRIPTION.replace("{who}", who(condition)),
            object(
                json!({
                    "question": { "type": "string", "description": "One message or question." },
                    "questions": {
                        "type": "array",
                        "items": { "type": "string" },
                        "minItems": 1,
                        "description": "Several questions, each answered separately."
                    }
                }),
                &[],
            ),
        ));
    }
    if !planning {
        tools.push(spec(
            names::SUBMIT,
            &submit_description(condition, budgets),
            object(json!({ "summary": { "type": "string", "description": "A short note on what you delivered." } }), &[]),
        ));
    }
    if planning {
        tools.push(spec(
            names::WRITE_PLAN,
            WRITE_PLAN_DESCRIPTION,
            object(json!({ "plan": { "type": "string", "description": "The complete plan." } }), &["plan"]),
        ));
    }
    tools
}

/// `submit`'s description: what a delivery does and the submission budget.
fn submit_description(condition: &Condition, budgets: &Budgets) -> String {
    fill_description(SUBMIT_DESCRIPTION, condition, budgets)
}

/// What `submit`'s description says about the submission budget (`{submission_budget}`).
fn submission_budget(condition: &Condition, budgets: &Budgets) -> String {
    if !condition.feedback() {
        "You deliver once: your first submission ends the work.".to_string()
    } else if budgets.submissions == 1 {
        "You have 1 submission.".to_string()
    } else {
        format!("You have {} submissions in all; each delivery that is returned uses one up.", budgets.submissions)
    }
}

/// Arguments of `list_files`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListFilesArgs {
    /// Directory (default `.`).
    #[serde(default)]
    pub path: Option<String>,
    /// Depth (default 2).
    #[serde(default)]
    pub depth: Option<u32>,
}

/// Arguments of `read_text`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReadTextArgs {
    /// File.
    pub path: String,
    /// First line, 1-based.
    #[serde(default)]
    pub offset: Option<usize>,
    /// Most lines.
    #[serde(default)]
    pub limit: Option<usize>,
}

/// Arguments of `write_text`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WriteTextArgs {
    /// File.
    pub path: String,
    /// New content.
    pub content: String,
}

/// Arguments of `replace_text`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReplaceTextArgs {
    /// File.
    pub path: String,
    /// Text to replace (exactly one occurrence).
    pub old: String,
    /// Replacement.
    pub new: String,
}

/// Arguments of `run_project`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunProjectArgs {
    /// Record path.
    pub record: String,
}

/// Arguments of `run_experiment` and `bash`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommandArgs {
    /// Shell command line.
    pub command: String,
    /// Seconds before the command is killed.
    #[serde(default)]
    pub timeout_sec: Option<u64>,
}

/// Arguments of `ask_user` (DESIGN §3 tool table): exactly one of `question` (one message)
/// and `questions` (a list, seed 002 A.9.3's `questions` array); see [`AskUserArgs::asked`].
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AskUserArgs {
    /// One message or question.
    #[serde(default)]
    pub question: Option<String>,
    /// Several questions, each answered separately.
    #[serde(default)]
    pub questions: Option<Vec<String>>,
    /// The request of a CLI's own question tool this call stands for (opencode's `questions`
    /// array with each question's header and options, seed 002 A.9.3), put there by the
    /// adapter that served it so the trajectory's `bridge_call` keeps it; never shown to the
    /// user, who gets `questions`.
    #[serde(default)]
    pub native: Option<serde_json::Value>,
}

/// The questions of one `ask_user` call: one clarification round however many it holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Asked {
    /// The questions, in order, as written (never empty, none blank).
    pub questions: Vec<String>,
    /// Whether they came as a `questions` list, whose result shows each question with its
    /// answer; a single `question` gets the answer alone.
    pub listed: bool,
}

impl AskUserArgs {
    /// Validates the arguments into the questions asked.
    ///
    /// # Errors
    /// A tool error text when both or neither argument is given, the list is empty, or a
    /// question is blank.
    pub fn asked(self) -> Result<Asked, String> {
        match (self.question, self.questions) {
            (Some(_), Some(_)) => Err("give either `question` (one question) or `questions` (a list), not both".into()),
            (None, None) => Err("ask_user needs `question` (one question) or `questions` (a list of questions)".into()),
            (Some(question), None) if question.trim().is_empty() => Err("`question` is empty".into()),
            (Some(question), None) => Ok(Asked { questions: vec![question], listed: false }),
            (None, Some(questions)) if questions.is_empty() => Err("`questions` is empty; give at least one question".into()),
            (None, Some(questions)) => match questions.iter().position(|q| q.trim().is_empty()) {
                Some(i) => Err(format!("`questions` item {} is empty", i + 1)),
                None => Ok(Asked { questions, listed: true }),
            },
        }
    }
}

/// Arguments of `submit`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SubmitArgs {
    /// Optional summary.
    #[serde(default)]
    pub summary: Option<String>,
}

/// Arguments of `write_plan`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WritePlanArgs {
    /// The plan.
    pub plan: String,
}

/// Arguments of the `apply_overlay` harness action.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApplyOverlayArgs {
    /// `gold`, `literal`, `starter` or `mutant:<id>`.
    pub name: String,
}

/// Parses a tool's arguments; `null` counts as `{}`. The error is the tool error text.
///
/// # Errors
/// A message naming the tool and what serde could not accept.
pub fn parse_args<T: DeserializeOwned>(tool: &str, arguments: &Value) -> Result<T, String> {
    let value = if arguments.is_null() { json!({}) } else { arguments.clone() };
    serde_json::from_value(value).map_err(|e| format!("bad arguments for {tool}: {e}"))
}

/// A tool's result text and whether it is an error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolOutput {
    /// Text for the agent (capped with [`cap_output`]).
    pub output: String,
    /// Whether it is an error result.
    pub is_error: bool,
}

impl ToolOutput {
    /// A successful result.
    pub fn ok(output: impl Into<String>) -> Self {
        ToolOutput { output: cap_output(&output.into(), OUTPUT_CAP), is_error: false }
    }

    /// An error result.
    pub fn error(output: impl Into<String>) -> Self {
        ToolOutput { output: cap_output(&output.into(), OUTPUT_CAP), is_error: true }
    }
}

/// Caps text at `cap` bytes, the way every cut shown to the agent is made
/// ([`specgap_sandbox::Captured::render`]): the head and the tail are kept (never splitting a
/// character, moved to a line boundary when one is near) around one marker line that states
/// the bytes and line breaks left out, `[... N bytes (L lines) cut ...]`.
pub fn cap_output(text: &str, cap: usize) -> String {
    if text.len() <= cap {
        return text.to_string();
    }
    specgap_sandbox::Captured::whole(text.as_bytes()).render(cap)
}

fn io_text(e: &io::Error) -> String {
    e.kind().to_string()
}

/// `list_files`: entries under `path` to `depth` levels, one per line, workspace-relative and
/// sorted; directories end in `/`, links print ` -> target` and are not followed; `.git` is
/// listed but not entered. At most [`LIST_ENTRY_CAP`] entries, then a count of the rest.
/// Names are bytes: one that is not plain text is shown quoted
/// ([`specgap_protocol::path_quote::shown_quoted`], a directory's `/` inside the quotes), so one
/// line is always one entry, and the quoted form resolves back to the same file.
pub fn list_files(ws: &WorkspaceRoot, args: &ListFilesArgs) -> ToolOutput {
    let rel = args.path.clone().unwrap_or_else(|| ".".into());
    let dir = match ws.resolve(&rel) {
        Ok(dir) => dir,
        Err(refusal) => return ToolOutput::error(refusal.to_string()),
    };
    if dir.is_file() {
        return ToolOutput::ok(shown_path(ws.relative(&dir).unwrap_or(&dir), ""));
    }
    if !dir.is_dir() {
        return ToolOutput::error(format!("`{rel}` does not exist"));
    }
    let depth = args.depth.unwrap_or(DEFAULT_LIST_DEPTH).max(1) as usize;
    let mut walker = walkdir::WalkDir::new(&dir).min_depth(1).max_depth(depth).follow_links(false).sort_by_file_name().into_iter();
    let mut lines = Vec::new();
    let mut total = 0usize;
    while let Some(entry) = walker.next() {
        let entry = match entry {
            Ok(entry) => entry,
            Err(e) => {
                return ToolOutput::error(format!("cannot list `{rel}`: {}", e.io_error().map(io_text).unwrap_or_default()));
            }
        };
        let file_type = entry.file_type();
        if file_type.is_dir() && entry.file_name() == ".git" {
            walker.skip_current_dir();
        }
        total += 1;
        if lines.len() >= LIST_ENTRY_CAP {
            continue;
        }
        let rel = ws.relative(entry.path()).unwrap_or(entry.path());
        lines.push(if file_type.is_symlink() {
            let target = fs_err::read_link(entry.path()).map(|t| shown_path(&t, "")).unwrap_or_default();
            format!("{} -> {target}", shown_path(rel, ""))
        } else if file_type.is_dir() {
            shown_path(rel, "/")
        } else {
            shown_path(rel, "")
        });
    }
    if total > lines.len() {
        lines.push(format!("[{} more entries not shown]", total - lines.len()));
    }
    if lines.is_empty() {
        return ToolOutput::ok(format!("`{rel}` is empty"));
    }
    ToolOutput::ok(lines.join("\n"))
}

/// A workspace path (plus `suffix`) as listings show it: as it is when plain text, else quoted.
fn shown_path(path: &Path, suffix: &str) -> String {
    let mut bytes = path.as_os_str().as_bytes().to_vec();
    bytes.extend_from_slice(suffix.as_bytes());
    path_quote::shown_quoted(&bytes)
}

/// `read_text`: lines `offset..offset+limit` with 1-based numbers (`{n:>6}\t{line}`), and a
/// closing note when the file has lines outside the range. The file is read a line at a time
/// and only the lines in the range are kept (issue 31 item 1: a file near the per-file cap
/// costs the runner its longest line, not its size); lines are those of `str::lines`.
pub fn read_text(ws: &WorkspaceRoot, args: &ReadTextArgs) -> ToolOutput {
    let path = match ws.resolve(&args.path) {
        Ok(path) => path,
        Err(refusal) => return ToolOutput::error(refusal.to_string()),
    };
    if path.is_dir() {
        return ToolOutput::error(format!("`{}` is a directory; use list_files", args.path));
    }
    let offset = args.offset.unwrap_or(1).max(1);
    let limit = args.limit.unwrap_or(DEFAULT_READ_LIMIT).max(1);
    let (lines, count) = match lines_in_range(&path, offset, limit) {
        Ok(Some(found)) => found,
        Ok(None) => return ToolOutput::error(format!("`{}` is not UTF-8 text", args.path)),
        Err(e) => return ToolOutput::error(format!("cannot read `{}`: {}", args.path, io_text(&e))),
    };
    if count == 0 {
        return ToolOutput::ok(format!("`{}` is empty", args.path));
    }
    if offset > count {
        return ToolOutput::error(format!("offset {offset} is past the end; `{}` has {count} lines", args.path));
    }
    let end = (offset - 1 + limit).min(count);
    let mut out: Vec<String> = lines.iter().enumerate().map(|(i, line)| format!("{:>6}\t{line}", offset + i)).collect();
    if offset > 1 || end < count {
        out.push(format!("[lines {offset}-{end} of {count}]"));
    }
    ToolOutput::ok(out.join("\n"))
}

/// The lines `offset..offset+limit` (1-based) of the file at `path` and its number of lines,
/// read a line at a time; `None` when the file is not UTF-8 (a line break is never inside a
/// UTF-8 sequence, so checking each line checks the file). Lines end at `\n` or `\r\n`, as
/// `str::lines` splits them.
fn lines_in_range(path: &Path, offset: usize, limit: usize) -> std::io::Result<Option<(Vec<String>, usize)>> {
    use std::io::BufRead;
    let mut reader = std::io::BufReader::new(fs_err::File::open(path)?);
    let (mut kept, mut count, mut line) = (Vec::new(), 0usize, Vec::new());
    loop {
        line.clear();
        if reader.read_until(b'\n', &mut line)? == 0 {
            return Ok(Some((kept, count)));
        }
        if line.ends_with(b"\n") {
            line.pop();
            if line.ends_with(b"\r") {
                line.pop();
            }
        }
        let Ok(text) = std::str::from_utf8(&line) else { return Ok(None) };
        count += 1;
        if count >= offset && count - offset < limit {
            kept.push(text.to_string());
        }
    }
}

/// `write_text`: creates parents and writes the whole content.
pub fn write_text(ws: &WorkspaceRoot, args: &WriteTextArgs) -> ToolOutput {
    match write_file(ws, &args.path, &args.content) {
        Ok(()) => ToolOutput::ok(format!("wrote {} bytes to `{}`", args.content.len(), args.path)),
        Err(message) => ToolOutput::error(message),
    }
}

/// Writes a workspace file through confinement (used by `write_text` and `write_plan`).
///
/// # Errors
/// The tool error text.
pub fn write_file(ws: &WorkspaceRoot, rel: &str, content: &str) -> Result<(), String> {
    let path = ws.resolve(rel).map_err(|r| r.to_string())?;
    if path.is_dir() {
        return Err(format!("`{rel}` is a directory"));
    }
    if let Some(parent) = path.parent() {
        fs_err::create_dir_all(parent).map_err(|e| format!("cannot create the directories of `{rel}`: {}", io_text(&e)))?;
    }
    fs_err::write(&path, content).map_err(|e| format!("cannot write `{rel}`: {}", io_text(&e)))
}

/// `replace_text`: replaces the one occurrence of `old`; zero or several occurrences is an
/// error that says how many.
pub fn replace_text(ws: &WorkspaceRoot, args: &ReplaceTextArgs) -> ToolOutput {
    if args.old.is_empty() {
        return ToolOutput::error("`old` is empty; give the exact text to replace");
    }
    let path = match ws.resolve(&args.path) {
        Ok(path) => path,
        Err(refusal) => return ToolOutput::error(refusal.to_string()),
    };
    let text = match fs_err::read_to_string(&path) {
        Ok(text) => text,
        Err(e) => return ToolOutput::error(format!("cannot read `{}`: {}", args.path, io_text(&e))),
    };
    let count = text.matches(args.old.as_str()).count();
    if count != 1 {
        return ToolOutput::error(format!(
            "`old` occurs {count} times in `{}`; it must occur exactly once, nothing was changed",
            args.path
        ));
    }
    let updated = text.replacen(args.old.as_str(), &args.new, 1);
    match fs_err::write(&path, updated) {
        Ok(()) => ToolOutput::ok(format!("replaced 1 occurrence in `{}`", args.path)),
        Err(e) => ToolOutput::error(format!("cannot write `{}`: {}", args.path, io_text(&e))),
    }
}

/// The record path for `run_project`: relative to the records directory, or to the workspace
/// when it already starts with the records directory. Must name an existing file or directory
/// inside the records directory.
///
/// # Errors
/// The tool error text.
pub fn project_record(ws: &WorkspaceRoot, records_dir: &str, record: &str) -> Result<String, String> {
    let records_root = ws.resolve(records_dir).map_err(|r| r.to_string())?;
    let records_prefix = Path::new(records_dir);
    let rel =
        if Path::new(record).starts_with(records_prefix) { record.to_string() } else { records_prefix.join(record).display().to_string() };
    let path = ws.resolve(&rel).map_err(|r| r.to_string())?;
    if !path.starts_with(&records_root) || !path.exists() {
        return Err(format!("no record `{record}` under `{records_dir}`; list it with list_files"));
    }
    Ok(rel)
}

/// Quotes a string for `sh` (single quotes, embedded quotes escaped): the rule `check` uses
/// to replay the same records ([`specgap_task::heard::shell_quote`]).
pub fn shell_quote(text: &str) -> String {
    specgap_task::heard::shell_quote(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn submit_of(condition: &str) -> String {
        let c = Condition::parse(condition).unwrap();
        let b = Budgets::resolve(&c, &specgap_protocol::package::Budget::default(), &crate::condition::BudgetFlags::default());
        tool_specs(&c, &b, true).into_iter().find(|t| t.name == names::SUBMIT).unwrap().description
    }

    /// The lines and count `str::lines` gives for the same range (the whole-file reading
    /// `lines_in_range` replaced).
    fn whole_file_lines(bytes: &[u8], offset: usize, limit: usize) -> Option<(Vec<String>, usize)> {
        let text = std::str::from_utf8(bytes).ok()?;
        let lines: Vec<&str> = text.lines().collect();
        let kept = lines.iter().skip(offset - 1).take(limit).map(|l| l.to_string()).collect();
        Some((kept, lines.len()))
    }

    #[test]
    fn lines_are_read_in_a_range_as_str_lines_splits_the_whole_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.txt");
        let mut big = Vec::new();
        for i in 0..200_000 {
            big.extend_from_slice(format!("line {i}\r\n").as_bytes());
        }
        let cases: [&[u8]; 9] = [b"", b"\n", b"a\nb", b"a\r\nb\r", b"a\r\n\r\n", b"\r", b"ok\n\xff\n", b"one\ntwo\nthree\n", &big];
        for (i, bytes) in cases.iter().enumerate() {
            std::fs::write(&path, bytes).unwrap();
            for (offset, limit) in [(1, 2000), (2, 1), (3, 5), (150_000, 3)] {
                assert_eq!(
                    lines_in_range(&path, offset, limit).unwrap(),
                    whole_file_lines(bytes, offset, limit),
                    "case {i}, {offset}+{limit}"
                );
            }
        }
    }

    #[test]
    fn check_hears_the_commands_for_as_long_as_run_project_runs_them() {
        assert_eq!(specgap_task::heard::HEARD_TIMEOUT_SEC, DEFAULT_COMMAND_TIMEOUT_SEC);
    }

    #[test]
    fn submit_states_the_submission_budget() {
        assert_eq!(
            submit_of("partial"),
            "Deliver the current workspace to the owner for review. You have 4 submissions in all; each delivery that \
             is returned uses one up. Must be the only call in its turn."
        );
        assert_eq!(
            submit_of("full"),
            "Deliver the current workspace to the owner for review. You deliver once: your first submission ends the \
             work. Must be the only call in its turn."
        );
        assert_eq!(
            submit_of("partial+submissions=1"),
            "Deliver the current workspace to the owner for review. You have 1 submission. Must be the only call in its turn."
        );
        assert!(submit_of("hidden").starts_with("Deliver the current workspace to the client for review. You deliver once"));
    }

    #[test]
    fn plan_mode_withholds_editing_and_submit_until_the_execution_phase() {
        let c = Condition::parse("plan").unwrap();
        let b = Budgets::resolve(&c, &specgap_protocol::package::Budget::default(), &crate::condition::BudgetFlags::default());
        let names = |tools: Vec<ToolSpec>| tools.into_iter().map(|t| t.name).collect::<Vec<_>>();
        assert_eq!(names(tool_specs(&c, &b, false)), ["list_files", "read_text", "run_experiment", "ask_user", "write_plan"]);
        assert_eq!(
            names(execution_tool_specs(&c, &b, false)),
            ["list_files", "read_text", "write_text", "replace_text", "run_experiment", "ask_user", "submit"]
        );
        let shell = Condition::parse("plan+profile=shell").unwrap();
        assert_eq!(names(tool_specs(&shell, &b, false)), ["bash", "ask_user", "write_plan"]);
    }

    #[test]
    fn cap_keeps_head_and_tail() {
        let text = "a".repeat(100) + &"b".repeat(100);
        assert_eq!(cap_output(&text, 60), format!("{}\n[... 175 bytes (0 lines) cut ...]\n{}", "a".repeat(12), "b".repeat(13)));
        assert_eq!(cap_output("short", 8), "short");
        // Multi-byte characters are never split: 12 bytes of room hold 6 of the 2-byte "é"s.
        let wide = "é".repeat(100);
        assert_eq!(cap_output(&wide, 47), format!("{}\n[... 188 bytes (0 lines) cut ...]\n{}", "é".repeat(3), "é".repeat(3)));
    }

    #[test]
    fn quoting() {
        assert_eq!(shell_quote("records/a.json"), "records/a.json");
        assert_eq!(shell_quote("a b"), "'a b'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
    }

    #[test]
    fn bad_arguments_are_named() {
        let e = parse_args::<ReadTextArgs>("read_text", &json!({"file": "x"})).unwrap_err();
        assert!(e.starts_with("bad arguments for read_text: unknown field `file`"), "{e}");
        let ok: SubmitArgs = parse_args("submit", &Value::Null).unwrap();
        assert_eq!(ok.summary, None);
    }
}
