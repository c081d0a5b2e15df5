//! The page sections of an `extraction` unit (seed 002 §4.3, A.8: does the normalized form an
//! extractor wrote say what the delivered artifact says?).
//!
//! Shown always: the request, the delivered artifact (the submission's diff against the clean
//! workspace, which is what extractors were given), the case's submission schema (the
//! extractors' contract, needed for every fidelity judgement), and for each extractor in its
//! call order its session — turns, tool calls with their arguments (the files it wrote are in
//! them; the written directory itself is not kept), results — with the files it left and its
//! summary. Shown only when the rubric asks: the panel's verdict (scored or unavailable,
//! agreeing extractions; `judgements`), every score, validity, objective and evaluation error
//! (`evaluation`), the extractor model names (`identity`). Extractor prompts (the ballot's
//! request) are never shown: they hold nothing a rater needs.

use serde_json::Value;
use specgap_protocol::event::EventKind;
use specgap_store::{BallotRow, ExtractionRow};

use crate::page::{Page, PageInput, package_of};
use crate::rubric::Disclosure;

/// The sections of the extraction of submission `k` by `panel`.
pub(crate) fn sections(page: &mut Page, input: &PageInput<'_>, events: &[&EventKind], panel: &str, k: u32) {
    if let Some(EventKind::EpisodeStart { opening_message, .. }) = events.iter().find(|e| matches!(e, EventKind::EpisodeStart { .. })) {
        page.heading("The request");
        page.pre("request", opening_message);
    }
    delivered(page, input, k);
    schema(page, input);
    let subject = format!("submission:{k}");
    let mut ballots: Vec<BallotRow> = input
        .store
        .ballots_of(&input.episode.id)
        .map(|rows| rows.into_iter().filter(|b| b.ballot.panel == panel && b.ballot.subject == subject).collect())
        .unwrap_or_default();
    ballots.sort_by_key(|b| b.ballot.position);
    page.heading("The extractors' sessions");
    if ballots.is_empty() {
        page.para("No extractor ballot of this submission is stored.");
    }
    for row in &ballots {
        extractor(page, input, row);
    }
    let verdict =
        input.store.extractions().ok().and_then(|rows| {
            rows.into_iter().find(|x| x.episode == input.episode.id && x.extraction.panel == panel && x.extraction.k == k)
        });
    verdict_section(page, input, verdict.as_ref());
}

/// The submission's stored diff: what the agent delivered.
fn delivered(page: &mut Page, input: &PageInput<'_>, k: u32) {
    page.heading(&format!("The delivered artifact (submission {k}, as a diff of the workspace)"));
    let path = input.store.episode_dir(&input.episode.id).join("submissions").join(k.to_string()).join("workspace.diff");
    match fs_err::read(&path) {
        Ok(bytes) if bytes.is_empty() => page.para("The submission changed nothing in the workspace."),
        Ok(bytes) => page.pre("diff", &String::from_utf8_lossy(&bytes)),
        Err(_) => page.para(&format!("Submission {k} has no stored diff.")),
    }
}

/// The `[delivery] schema` of the case.
fn schema(page: &mut Page, input: &PageInput<'_>) {
    page.heading("The submission schema");
    match package_of(input).and_then(|p| p.delivery_schema()) {
        Some(schema) => {
            let text = serde_json::to_string_pretty(&schema.schema).unwrap_or_else(|_| schema.schema.to_string());
            page.pre("schema", &text);
        }
        None => page.para("The package names no submission schema."),
    }
}

/// One extractor's session and what it left.
fn extractor(page: &mut Page, input: &PageInput<'_>, row: &BallotRow) {
    let ballot = &row.ballot;
    let rubric = input.rubric;
    let who = if rubric.shows(Disclosure::Identity) {
        format!("Extractor {} (seat {}, {})", ballot.position + 1, ballot.seat, ballot.model)
    } else {
        format!("Extractor {} (seat {})", ballot.position + 1, ballot.seat)
    };
    page.heading(&who);
    if let Some(error) = &ballot.error {
        page.para(&format!("No extraction: {error}"));
    }
    for entry in ballot.response.as_array().map(Vec::as_slice).unwrap_or_default() {
        transcript_entry(page, entry);
    }
    let Some(vote) = &ballot.vote else { return };
    let files: Vec<&str> = vote["files"].as_array().map(|f| f.iter().filter_map(Value::as_str).collect()).unwrap_or_default();
    page.para(&format!("Files it wrote: {}", if files.is_empty() { "none".to_string() } else { files.join(", ") }));
    if let Some(summary) = vote["summary"].as_str() {
        page.block("its summary", "agent", summary);
    }
    if rubric.shows(Disclosure::Evaluation) {
        match vote.get("evaluation_error").and_then(Value::as_str) {
            Some(error) => page.block("its evaluation (private)", "private", &format!("the evaluator could not score it: {error}")),
            None => page.block(
                "its evaluation (private)",
                "private",
                &format!("score {}, success {}, valid {}, objective {}", vote["score"], vote["success"], vote["valid"], vote["objective"]),
            ),
        }
    }
}

/// One entry of a side-session transcript (`specgap_engine::side_session`): a turn with its
/// calls, a tool result, a refusal or a closing message.
fn transcript_entry(page: &mut Page, entry: &Value) {
    if let Some(turn) = entry.get("turn") {
        if let Some(refusal) = entry.get("refusal").and_then(Value::as_str) {
            page.block(&format!("turn {turn} (refusal)"), "agent", refusal);
            return;
        }
        let mut shown = entry["text"].as_str().unwrap_or_default().to_string();
        for call in entry["calls"].as_array().map(Vec::as_slice).unwrap_or_default() {
            let tool = call["tool"].as_str().unwrap_or("?");
            let arguments = serde_json::to_string_pretty(&call["arguments"]).unwrap_or_default();
            shown.push_str(&format!("\n→ {tool} {arguments}"));
        }
        page.block(&format!("turn {turn}"), "agent", shown.trim_start());
    } else if let Some(output) = entry.get("output").and_then(Value::as_str) {
        let tool = entry["tool"].as_str().unwrap_or("tool");
        let who = if entry["is_error"].as_bool() == Some(true) { format!("{tool} (error)") } else { tool.to_string() };
        page.block(&who, "tool", output);
    } else if let Some(text) = entry.get("text").and_then(Value::as_str) {
        let kind = entry["message"].as_str().unwrap_or("message");
        page.block(&format!("message to the extractor ({kind})"), "user", text);
    }
}

/// The panel's verdict: its agreement (judgements) and its score (evaluation).
fn verdict_section(page: &mut Page, input: &PageInput<'_>, verdict: Option<&ExtractionRow>) {
    let rubric = input.rubric;
    if !rubric.shows(Disclosure::Judgements) && !rubric.shows(Disclosure::Evaluation) {
        return;
    }
    page.heading("The panel's verdict (private)");
    let Some(row) = verdict else {
        page.para("The verdict is not in the store.");
        return;
    };
    let x = &row.extraction;
    if rubric.shows(Disclosure::Judgements) {
        page.para(&format!("{}: {} of {} extractions agreed on the score", x.status.as_str(), x.agreeing, x.routes));
    }
    if rubric.shows(Disclosure::Evaluation) {
        let number = |v: Option<f64>| v.map_or("none".to_string(), |v| v.to_string());
        let flag = |v: Option<bool>| v.map_or("none".to_string(), |v| v.to_string());
        page.para(&format!(
            "score {}, success {}, valid {}, objective {}",
            number(x.score),
            flag(x.success),
            flag(x.valid),
            number(x.objective)
        ));
    }
}
