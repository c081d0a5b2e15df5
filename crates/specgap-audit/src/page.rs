//! One self-contained HTML page per audit item: no script, no external resource, every text
//! escaped, so whatever an agent wrote (a `<script>`, an `onerror=`) is shown as text and runs
//! nothing.
//!
//! A page always shows what the agent saw and did — the request (the opening message), its
//! turns, tool calls and results, the messages it got, its submissions and their diffs — and
//! what the rater needs for the unit (the questions of a target, the question and reply of a
//! reply, the original and the resample of a resample; for an extraction, the delivered
//! submission's diff, the case's submission schema, each extractor's session and what it
//! wrote, and — when the rubric shows judgements — the panel's verdict). Anything private (requirements,
//! observations, evaluation results, the evaluator, the authors' notes, the full instruction,
//! what the simulated user knows, clarification targets and their answers, who the agent was,
//! automatic judges' verdicts) appears only when the rubric's `shows` names it
//! ([`crate::rubric::Disclosure`]): a rater must not be biased by what the rubric does not ask
//! for. Long texts are cut at [`TEXT_LIMIT`] characters, with a note saying so.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use specgap_protocol::event::{EventKind, UserMessageKind};
use specgap_store::{EpisodeRow, Store};
use specgap_task::TaskPackage;

use crate::rubric::{Disclosure, Rubric};
use crate::unit::{Subject, Unit};

/// Characters of one text shown at most (a tool output, a diff, a file).
pub const TEXT_LIMIT: usize = 20_000;

/// The packages of a run by task name, from `run.toml`: a package that cannot be read or
/// whose content hash differs from the run's is an error text (its pages say so).
pub fn packages(store: &Store) -> BTreeMap<String, Result<TaskPackage, String>> {
    store
        .config()
        .tasks
        .iter()
        .map(|t| {
            let loaded = specgap_task::load(&t.path)
                .map_err(|e| format!("cannot read the package at {}: {e}", t.path))
                .and_then(|p| if p.hash() == t.hash { Ok(p) } else { Err(format!("the package at {} changed since the run", t.path)) });
            (t.name.clone(), loaded)
        })
        .collect()
}

/// `text` with `&`, `<`, `>`, `"` and `'` escaped for HTML text and attribute values: the
/// escaper every renderer uses (`specgap_protocol::escape`).
pub use specgap_protocol::escape::html as escape;

fn cut(text: &str) -> String {
    match text.char_indices().nth(TEXT_LIMIT) {
        Some((at, _)) => format!("{}\n[… cut: {} more characters]", &text[..at], text[at..].chars().count()),
        None => text.to_string(),
    }
}

/// A page being written: sections of escaped text.
pub(crate) struct Page {
    pub(crate) body: String,
}

impl Page {
    /// The heading, the item's ids, the rubric's instructions and its label guide.
    pub(crate) fn opening(rubric: &Rubric, number: usize, sample: &str, item: &str) -> Page {
        let mut page = Page { body: String::new() };
        let _ = writeln!(page.body, "<h1>{} — item {}</h1>", escape(&rubric.title), number);
        let _ = writeln!(page.body, "<p class=\"meta\">sample {} · item {}</p>", escape(sample), escape(item));
        page.heading("What to judge");
        page.pre("instructions", &rubric.instructions);
        guide(&mut page, rubric);
        page
    }

    /// The whole self-contained document.
    pub(crate) fn finish(self, rubric: &Rubric, number: usize) -> String {
        format!(
            "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\
<title>{} — item {}</title><style>{STYLE}</style></head>\n<body>\n{}</body></html>\n",
            escape(&rubric.title),
            number,
            self.body
        )
    }

    pub(crate) fn heading(&mut self, text: &str) {
        let _ = writeln!(self.body, "<h2>{}</h2>", escape(text));
    }
    pub(crate) fn para(&mut self, text: &str) {
        let _ = writeln!(self.body, "<p>{}</p>", escape(text));
    }
    pub(crate) fn pre(&mut self, class: &str, text: &str) {
        let _ = writeln!(self.body, "<pre class=\"{class}\">{}</pre>", escape(&cut(text)));
    }
    pub(crate) fn block(&mut self, who: &str, class: &str, text: &str) {
        let _ = writeln!(self.body, "<div class=\"turn {class}\"><div class=\"who\">{}</div>", escape(who));
        self.pre("text", text);
        self.body.push_str("</div>\n");
    }
}

const STYLE: &str = "body{font-family:sans-serif;max-width:60rem;margin:1rem auto;padding:0 1rem;color:#222}\
pre{white-space:pre-wrap;word-wrap:break-word;background:#f6f6f6;padding:.5rem;border-radius:4px}\
.turn{border-left:4px solid #ccc;margin:.6rem 0;padding-left:.6rem}.agent{border-color:#4a7}.user{border-color:#47a}\
.tool{border-color:#aa7}.private{border:2px dashed #a44;padding:.5rem;margin:1rem 0}.who{font-weight:bold;font-size:.9rem}\
table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.2rem .5rem;text-align:left;vertical-align:top}";

/// What a page is made from: the unit, its episode row and package, the rubric.
pub struct PageInput<'a> {
    /// The unit.
    pub unit: &'a Unit,
    /// Its row in the sheet (1-based, shown as the item number).
    pub number: usize,
    /// The sample id.
    pub sample: &'a str,
    /// The store of its run.
    pub store: &'a Store,
    /// Its episode.
    pub episode: &'a EpisodeRow,
    /// Its task package, or why it is missing.
    pub package: Option<&'a Result<TaskPackage, String>>,
    /// The rubric.
    pub rubric: &'a Rubric,
    /// A model's summary of the trajectory (`crate::summary`), or why it failed; episode
    /// units only.
    pub summary: Option<(&'a str, &'a Result<String, String>)>,
}

/// The page of one item (module guide).
pub fn render(input: &PageInput<'_>) -> String {
    let rubric = input.rubric;
    let mut page = Page::opening(rubric, input.number, input.sample, &input.unit.id);
    if rubric.shows(Disclosure::Identity) {
        page.para(&format!("agent: {} · user: {} · condition: {}", input.episode.agent, input.episode.user, input.episode.condition));
    }
    let trajectory = specgap_store::read_trajectory(input.store.dir(), &input.episode.id);
    let events = match &trajectory {
        Ok(t) => t.events.iter().map(|e| &e.kind).collect::<Vec<_>>(),
        Err(e) => {
            page.para(&format!("The trajectory cannot be read: {e}"));
            Vec::new()
        }
    };
    match &input.unit.subject {
        Subject::Episode => episode_sections(&mut page, input, &events),
        Subject::Target(target) => target_sections(&mut page, input, target),
        Subject::Reply(idx) => reply_sections(&mut page, input, *idx, &events),
        Subject::Resample { request, k, batch } => resample_sections(&mut page, input, &events, *request, *k, batch),
        Subject::Extraction { panel, k } => crate::extraction_page::sections(&mut page, input, &events, panel, *k),
        Subject::Candidate { final_submission, failing, changed_files, substantive_files } => {
            crate::candidate_page::sections(&mut page, input, &events, *final_submission, failing, changed_files, substantive_files)
        }
        // Task units have pages of their own (`crate::task_page`).
        Subject::Task => {}
    }
    private_sections(&mut page, input);
    page.finish(rubric, input.number)
}

/// The label columns and their values, for the rater.
fn guide(page: &mut Page, rubric: &Rubric) {
    page.body.push_str("<table><tr><th>column</th><th>question</th><th>values</th></tr>\n");
    for label in &rubric.labels {
        let values: Vec<String> = label.values.iter().map(|v| format!("<b>{}</b>: {}", escape(&v.name), escape(&v.meaning))).collect();
        let _ = writeln!(
            page.body,
            "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(&label.name),
            escape(&label.question),
            values.join("<br>")
        );
    }
    page.body.push_str("</table>\n");
}

/// The opening message, the transcript and the diffs.
fn episode_sections(page: &mut Page, input: &PageInput<'_>, events: &[&EventKind]) {
    let evaluation = input.rubric.shows(Disclosure::Evaluation);
    if let Some((model, summary)) = input.summary {
        page.heading(&format!("A model's summary of the trajectory ({model}; read the transcript for what happened)"));
        match summary {
            Ok(text) => page.pre("summary", text),
            Err(why) => page.para(&format!("The summary failed: {why}")),
        }
    }
    page.heading("Transcript");
    for event in events {
        match event {
            EventKind::EpisodeStart { opening_message, .. } => page.block("request (the opening message)", "user", opening_message),
            EventKind::AgentTurn { turn, text, tool_calls, .. } => {
                let mut shown = text.clone().unwrap_or_default();
                for call in tool_calls {
                    let _ = write!(shown, "\n→ {} {}", call.tool, call.arguments);
                }
                page.block(&format!("agent, turn {turn}"), "agent", shown.trim_start());
            }
            EventKind::ToolResult { tool, output, is_error, .. } => {
                let who = if *is_error { format!("{tool} (error)") } else { tool.clone() };
                page.block(&who, "tool", output);
            }
            EventKind::UserMessage { kind, text, .. } => page.block(&format!("message to the agent ({})", kind_name(*kind)), "user", text),
            EventKind::Submission { k, summary, automatic } => {
                let how = if *automatic { "automatic" } else { "by the agent" };
                page.block(&format!("submission {k} ({how})"), "agent", summary.as_deref().unwrap_or(""));
            }
            EventKind::Evaluation { k, score, success, failing_requirement } if evaluation => {
                let failing = failing_requirement.as_deref().map(|r| format!(", failing requirement {r}")).unwrap_or_default();
                page.block(
                    &format!("evaluation of submission {k} (private)"),
                    "private",
                    &format!("score {score}, success {success}{failing}"),
                );
            }
            EventKind::End { reason, detail } => page.para(&format!("The episode ended: {reason} {detail}")),
            _ => {}
        }
    }
    page.heading("Diffs of the submissions");
    let dir = input.store.episode_dir(&input.episode.id).join("submissions");
    for k in 1..=input.episode.submissions {
        let path = dir.join(k.to_string()).join("workspace.diff");
        match fs_err::read(&path) {
            Ok(bytes) => page.block(&format!("submission {k}"), "diff", &String::from_utf8_lossy(&bytes)),
            Err(_) => page.para(&format!("submission {k}: no diff stored")),
        }
    }
}

fn kind_name(kind: UserMessageKind) -> &'static str {
    match kind {
        UserMessageKind::Answer => "answer",
        UserMessageKind::Feedback => "feedback",
        UserMessageKind::Reminder => "reminder",
        UserMessageKind::Continuation => "continuation",
        UserMessageKind::Stage => "stage",
    }
}

pub(crate) fn package_of<'a>(input: &'a PageInput<'_>) -> Option<&'a TaskPackage> {
    input.package.and_then(|p| p.as_ref().ok())
}

/// A clarification target (when shown) and every question of the episode.
fn target_sections(page: &mut Page, input: &PageInput<'_>, target_id: &str) {
    let rubric = input.rubric;
    if rubric.shows(Disclosure::Targets) {
        match package_of(input).and_then(|p| p.clarifications().iter().find(|t| t.id == target_id)) {
            Some(target) => {
                page.heading("The clarification target");
                page.pre("target", &target.description);
                if !target.triggers.is_empty() {
                    page.para("Questions that would reach it, as examples:");
                    page.pre("triggers", &target.triggers.join("\n"));
                }
                if rubric.shows(Disclosure::TargetAnswers) {
                    page.heading("Its registered answer");
                    page.pre("answer", &target.answer);
                }
            }
            None => page.para(&format!("The target {target_id} cannot be read from the package.")),
        }
    }
    page.heading("Questions the agent asked");
    let questions = episode_questions(input);
    if questions.is_empty() {
        page.para("The agent asked no question.");
    }
    for (idx, q) in &questions {
        page.block(&format!("question {} (turn {})", idx + 1, q.turn), "agent", &q.text);
    }
    if rubric.shows(Disclosure::Judgements) {
        page.heading("Automatic judges");
        for (judge, labels) in &input.unit.judges {
            page.para(&format!("{judge}: {labels}"));
        }
    }
}

fn episode_questions(input: &PageInput<'_>) -> Vec<(u32, specgap_store::Question)> {
    input
        .store
        .questions()
        .map(|rows| rows.into_iter().filter(|q| q.episode == input.episode.id).map(|q| (q.idx, q.question)).collect())
        .unwrap_or_default()
}

/// What the user knew (when shown), the conversation before, the question and the reply.
fn reply_sections(page: &mut Page, input: &PageInput<'_>, idx: u32, events: &[&EventKind]) {
    if input.rubric.shows(Disclosure::UserKnowledge) {
        user_knowledge(page, input);
    }
    if let Some(EventKind::EpisodeStart { opening_message, .. }) = events.iter().find(|e| matches!(e, EventKind::EpisodeStart { .. })) {
        page.heading("The request");
        page.pre("request", opening_message);
    }
    page.heading("The conversation");
    for (i, q) in episode_questions(input) {
        if i > idx {
            break;
        }
        let here = if i == idx { " — the reply to judge" } else { "" };
        page.block(&format!("question {}", i + 1), "agent", &q.text);
        page.block(&format!("reply {}{here}", i + 1), "user", &q.answer);
    }
}

/// What the simulated user was given: `user.toml`, `information.md`.
fn user_knowledge(page: &mut Page, input: &PageInput<'_>) {
    if let Some(package) = package_of(input) {
        user_knowledge_of(page, package);
    }
}

/// What the simulated user of `package` is given.
pub(crate) fn user_knowledge_of(page: &mut Page, package: &TaskPackage) {
    page.heading("What the simulated user knows (private)");
    if let Some(profile) = package.user() {
        page.block("persona", "private", &profile.persona);
        page.block("understanding", "private", &profile.understanding);
    }
    if let Some(information) = package.information() {
        page.block("information", "private", information);
    }
}

/// The recorded request's instructions and latest item (when shown), the original reply and
/// the resample.
fn resample_sections(page: &mut Page, input: &PageInput<'_>, events: &[&EventKind], request: u32, k: u32, batch: &str) {
    let recorded = crate::resample::recorded_requests(events);
    let Some(original) = recorded.iter().find(|r| r.request == request) else {
        page.para(&format!("Request {request} is not in the trajectory."));
        return;
    };
    if input.rubric.shows(Disclosure::UserKnowledge) {
        page.heading("What the simulated user was given (private)");
        match &original.bytes {
            Ok(bytes) => {
                let messages = crate::resample::messages_of(bytes);
                if let Some((_, system)) = messages.iter().find(|(role, _)| role == "system") {
                    page.block("its instructions", "private", system);
                }
                if let Some((_, latest)) = messages.iter().rev().find(|(role, _)| role == "user") {
                    page.block("the latest item (what it was asked to reply to)", "private", latest);
                }
            }
            Err(e) => page.para(&format!("The request cannot be rebuilt: {e}")),
        }
    }
    page.heading("The original reply");
    page.block("original", "user", &original.reply);
    let resample =
        input.store.resamples().ok().and_then(|rows| {
            rows.into_iter().find(|r| r.episode == input.episode.id && r.batch == batch && r.request == request && r.k == k)
        });
    page.heading(&format!("Resample {k}"));
    match resample {
        Some(r) => match (r.reply, r.error) {
            (Some(reply), _) => page.block(&format!("resample {k}"), "user", &reply),
            (None, error) => page.para(&format!("The resample failed: {}", error.unwrap_or_default())),
        },
        None => page.para("The resample is not in the store."),
    }
}

/// Private package material the rubric asks for, after the unit's own sections.
fn private_sections(page: &mut Page, input: &PageInput<'_>) {
    let rubric = input.rubric;
    let Some(package) = package_of(input) else {
        if let Some(Err(why)) = input.package {
            page.para(why);
        }
        return;
    };
    spec_sections(page, rubric, package);
    if rubric.shows(Disclosure::Evaluation) && !matches!(input.unit.subject, Subject::Episode | Subject::Candidate { .. }) {
        let e = input.episode;
        page.heading("Evaluation (private)");
        page.para(&format!("final score {:?}, success {:?}", e.final_score, e.final_success));
    }
    if rubric.shows(Disclosure::UserKnowledge) && matches!(input.unit.subject, Subject::Episode | Subject::Target(_)) {
        user_knowledge(page, input);
    }
    author_sections(page, rubric, package);
}

/// The full instruction, the requirements and the observations, as far as `rubric` shows them.
pub(crate) fn spec_sections(page: &mut Page, rubric: &Rubric, package: &TaskPackage) {
    let wanted = |d: Disclosure| rubric.shows(d);
    if let Some(full) = package.instruction_full().filter(|_| wanted(Disclosure::FullInstruction)) {
        page.heading("The full instruction (private)");
        page.pre("private", full);
    }
    if wanted(Disclosure::Requirements) && !package.requirements().is_empty() {
        page.heading("Requirements (private)");
        for r in package.requirements() {
            page.block(
                &format!("{} (priority {})", r.id, r.priority),
                "private",
                &format!("{}\n\nEvidence: {}", r.description.trim(), r.discovery.trim()),
            );
        }
    }
    if wanted(Disclosure::Observations) && !package.observations().is_empty() {
        page.heading("Observations (private)");
        for o in package.observations() {
            page.block(
                &format!("{} / {}", o.requirement, o.failure_mode),
                "private",
                &format!("{}\n{}\n{}", o.scene.trim(), o.incident.trim(), o.detail.trim()),
            );
        }
    }
}

/// The authors' notes and the evaluator's files, as far as `rubric` shows them.
pub(crate) fn author_sections(page: &mut Page, rubric: &Rubric, package: &TaskPackage) {
    let wanted = |d: Disclosure| rubric.shows(d);
    if let Some(notes) = package.notes().filter(|_| wanted(Disclosure::Notes)) {
        page.heading("The authors' notes (private)");
        page.pre("private", notes);
    }
    if wanted(Disclosure::Evaluator) {
        page.heading("The evaluator (private)");
        for (name, text) in text_files(&package.evaluator_dir()) {
            page.block(&name, "private", &text);
        }
    }
}

/// The text files under `dir` (the evaluator, a workspace), by relative path; binary files are
/// skipped.
pub(crate) fn text_files(dir: &Path) -> Vec<(String, String)> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(at) = stack.pop() {
        let Ok(entries) = fs_err::read_dir(&at) else { continue };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if let Ok(text) = fs_err::read_to_string(&path) {
                let name = path.strip_prefix(dir).unwrap_or(&path).display().to_string();
                files.push((name, text));
            }
        }
    }
    files.sort();
    files
}
