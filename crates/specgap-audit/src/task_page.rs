//! The page of a `task` unit (seed 000 §4.2: experts review every task package on four
//! criteria). It has no episode: it shows what every agent is given — the opening instruction
//! and the workspace's text files — and, as the rubric's `shows` allows, the full instruction,
//! the requirements and observations, the clarification targets (and their answers), the
//! outcomes of the run's finished episodes of the task (`evaluation`; who ran them only under
//! `identity`), what the simulated user knows, the authors' notes and the evaluator. The
//! solutions are never shown: no criterion needs them, and a reference patch would tell a
//! rater what the evaluator wants before they judge whether the evidence says it.

use specgap_store::{Status, Store};
use specgap_task::TaskPackage;

use crate::page::{Page, author_sections, spec_sections, text_files, user_knowledge_of};
use crate::rubric::{Disclosure, Rubric};
use crate::unit::Unit;

/// What a task page is made from.
pub(crate) struct TaskPageInput<'a> {
    /// The unit.
    pub unit: &'a Unit,
    /// Its row in the sheet (1-based).
    pub number: usize,
    /// The sample id.
    pub sample: &'a str,
    /// The store of its run.
    pub store: &'a Store,
    /// Its package, or why it cannot be read.
    pub package: Option<&'a Result<TaskPackage, String>>,
    /// The rubric.
    pub rubric: &'a Rubric,
}

/// The page of one task unit (module guide).
pub(crate) fn render(input: &TaskPageInput<'_>) -> String {
    let rubric = input.rubric;
    let mut page = Page::opening(rubric, input.number, input.sample, &input.unit.id);
    match input.package {
        Some(Ok(package)) => sections(&mut page, input, package),
        Some(Err(why)) => page.para(why),
        None => page.para(&format!("The run names no package for {}.", input.unit.cluster)),
    }
    page.finish(rubric, input.number)
}

fn sections(page: &mut Page, input: &TaskPageInput<'_>, package: &TaskPackage) {
    let rubric = input.rubric;
    page.heading(&format!("Task {}", package.name()));
    page.heading("The opening instruction");
    page.pre("instruction", package.instruction());
    page.heading("The workspace the agent is given");
    let files = text_files(&package.workspace_dir());
    if files.is_empty() {
        page.para("The workspace has no text file.");
    }
    for (name, text) in &files {
        page.block(name, "workspace", text);
    }
    spec_sections(page, rubric, package);
    if rubric.shows(Disclosure::Targets) && !package.clarifications().is_empty() {
        page.heading("Clarification targets (private)");
        for target in package.clarifications() {
            let mut text = target.description.trim().to_string();
            if rubric.shows(Disclosure::TargetAnswers) {
                text.push_str(&format!("\n\nRegistered answer: {}", target.answer.trim()));
            }
            page.block(&target.id, "private", &text);
        }
    }
    if rubric.shows(Disclosure::Evaluation) {
        outcomes(page, input);
    }
    if rubric.shows(Disclosure::UserKnowledge) {
        user_knowledge_of(page, package);
    }
    author_sections(page, rubric, package);
}

/// The finished episodes of the task in this run, with their final outcomes.
fn outcomes(page: &mut Page, input: &TaskPageInput<'_>) {
    page.heading("Outcomes of the run's episodes (private)");
    let episodes = match input.store.episodes() {
        Ok(rows) => rows,
        Err(e) => {
            page.para(&format!("The episodes cannot be read: {e}"));
            return;
        }
    };
    let mine: Vec<_> = episodes.into_iter().filter(|e| e.task == input.unit.cluster && e.status == Status::Finished).collect();
    if mine.is_empty() {
        page.para("No episode of this task finished in the run.");
    }
    let identity = input.rubric.shows(Disclosure::Identity);
    for e in &mine {
        let score = e.final_score.map_or("none".to_string(), |s| s.to_string());
        let success = e.final_success.map_or("none".to_string(), |s| s.to_string());
        let who = if identity { format!("agent {}, ", e.agent) } else { String::new() };
        page.para(&format!(
            "{who}condition {}, start {}, repeat {}: final score {score}, success {success}",
            e.condition, e.start, e.repeat
        ));
    }
}
