//! Staged tasks (`[stages]`, Harbor's `[[steps]]`): stage k+1's instruction arrives only after
//! submission k was scored, the evaluator learns the stage from `SPECGAP_STAGE`, the episode's
//! score aggregates the stage submissions (`mean` or `final`), and a stage scoring below its
//! `min_reward` (a Score, or a table of reward keys) ends the episode there.
//!
//! The package is written here: its evaluator reads the reward from the workspace file
//! `stage<SPECGAP_STAGE>.txt` (0 when the variable or the file is missing), so a score
//! other than 0 proves the evaluator was told the stage it scores.

use std::path::Path;

use serde_json::json;
use specgap_engine::session::Incoming;
use specgap_protocol::event::{EventKind, UserMessageKind};
use specgap_protocol::run::EndReason;
use specgap_task::TaskPackage;

use crate::support::{Options, TestAgent, one, run};

const EVALUATOR: &str = r#"#!/bin/sh
file="$SPECGAP_WORKSPACE/stage${SPECGAP_STAGE:-none}.txt"
reward=0
if [ -n "$SPECGAP_STAGE" ] && [ -f "$file" ]; then reward=$(cat "$file"); fi
printf '{"version": 1, "reward": %s}\n' "$reward" > "$SPECGAP_OUT/result.json"
"#;

pub(crate) const STAGE_2: &str = "Now write the second part.\n";
const STAGE_3: &str = "Finally, write the third part.\n";

/// A three-stage reward-scored package; `stages_toml` is its `[stages]` table.
pub(crate) fn staged(dir: &Path, stages_toml: &str) -> TaskPackage {
    let root = dir.join("staged");
    fs_err::create_dir_all(root.join("workspace")).unwrap();
    fs_err::create_dir_all(root.join("evaluator")).unwrap();
    fs_err::create_dir_all(root.join("stages")).unwrap();
    fs_err::write(root.join("workspace/README.md"), "parts go here\n").unwrap();
    fs_err::write(root.join("evaluator/eval.sh"), EVALUATOR).unwrap();
    fs_err::write(root.join("instruction.md"), "Write the first part.\n").unwrap();
    fs_err::write(root.join("stages/second.md"), STAGE_2).unwrap();
    fs_err::write(root.join("stages/third.md"), STAGE_3).unwrap();
    let manifest = format!(
        "format = 2\n\n[task]\nname = \"test/staged\"\nversion = \"1\"\ndescription = \"three parts\"\nfamily = \"terminal\"\n\n\
         [environment]\ncommands = [\"sh\", \"cat\", \"printf\"]\n\n[evaluator]\ncommand = \"sh eval.sh\"\ntimeout_sec = 60\n\n{stages_toml}"
    );
    fs_err::write(root.join("task.toml"), manifest).unwrap();
    specgap_task::load(&root).unwrap()
}

pub(crate) const THREE_STAGES: &str = "[[stages.stage]]\nname = \"first\"\n\n\
    [[stages.stage]]\nname = \"second\"\ninstruction = \"stages/second.md\"\n\n\
    [[stages.stage]]\nname = \"third\"\ninstruction = \"stages/third.md\"\n";

/// Writes `stage<k>.txt` with `reward`, then submits.
fn part(k: u32, reward: &str) -> Vec<specgap_engine::session::AgentReply> {
    vec![
        one("write_text", json!({"path": format!("stage{k}.txt"), "content": reward})),
        one("submit", json!({"summary": format!("part {k}")})),
    ]
}

fn final_score(r: &crate::support::Run) -> (Option<f64>, Option<bool>) {
    let row = r.store.episode(&r.id).unwrap().unwrap();
    (row.final_score, row.final_success)
}

/// The stage messages of the trajectory, in order.
fn stage_messages(r: &crate::support::Run) -> Vec<String> {
    r.events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::UserMessage { kind: UserMessageKind::Stage, text, .. } => Some(text.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn each_stage_arrives_after_the_previous_submission_is_scored_and_mean_aggregates() {
    let dir = tempfile::tempdir().unwrap();
    let package = staged(dir.path(), &format!("[stages]\nscore = \"mean\"\n\n{THREE_STAGES}"));
    let mut replies = part(1, "0.5");
    replies.extend(part(2, "1"));
    replies.extend(part(3, "0"));
    let mut agent = TestAgent::new(replies);
    let seen = std::sync::Arc::clone(&agent.seen);
    let r = run(&package, "hidden", &mut agent, Options::default());
    let outcome = r.ok();
    assert_eq!(r.scores(), [0.5, 1.0, 0.0]);
    assert_eq!(outcome.end_reason, EndReason::Submitted);
    assert_eq!(final_score(&r), (Some(0.5), Some(false)));
    assert_eq!(stage_messages(&r), [STAGE_2, STAGE_3]);
    // Order in the trajectory: submission k, its evaluation, the result, then stage k+1.
    let order: Vec<String> = r
        .events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Submission { k, .. } => Some(format!("submission {k}")),
            EventKind::Evaluation { k, score, .. } => Some(format!("evaluation {k} {score}")),
            EventKind::ToolResult { tool, output, .. } if tool == "submit" => Some(output.clone()),
            EventKind::UserMessage { kind: UserMessageKind::Stage, text, .. } => Some(format!("stage: {}", text.trim())),
            _ => None,
        })
        .collect();
    assert_eq!(
        order,
        [
            "submission 1",
            "evaluation 1 0.5",
            "The delivery for stage 1 of 3 was received. The instruction for stage 2 follows.",
            "stage: Now write the second part.",
            "submission 2",
            "evaluation 2 1",
            "The delivery for stage 2 of 3 was received. The instruction for stage 3 follows.",
            "stage: Finally, write the third part.",
            "submission 3",
            "evaluation 3 0",
            "The delivery for stage 3 of 3, the last, was received. The work is finished.",
        ]
    );
    // The agent got stage 2 in the inbox of its turn after the first submit (its 3rd turn),
    // after the submit's result, and nothing of it before.
    let seen = seen.lock().unwrap();
    let stage_of =
        |inbox: &Vec<Incoming>| inbox.iter().position(|i| matches!(i, Incoming::UserMessage { kind: UserMessageKind::Stage, .. }));
    let with_stage: Vec<usize> = seen.inboxes.iter().enumerate().filter(|(_, i)| stage_of(i).is_some()).map(|(n, _)| n).collect();
    assert_eq!(with_stage, [2, 4]);
    assert!(matches!(&seen.inboxes[2][0], Incoming::ToolResult { tool, .. } if tool == "submit"));
    assert_eq!(stage_of(&seen.inboxes[2]), Some(1));
    assert!(!seen.opening.as_ref().unwrap().message.contains("second part"));
}

#[test]
fn final_takes_the_last_stage_submission() {
    let dir = tempfile::tempdir().unwrap();
    let package = staged(dir.path(), &format!("[stages]\nscore = \"final\"\n\n{THREE_STAGES}"));
    let mut replies = part(1, "0.5");
    replies.extend(part(2, "0"));
    replies.extend(part(3, "0.25"));
    let mut agent = TestAgent::new(replies);
    let r = run(&package, "hidden", &mut agent, Options::default());
    assert_eq!(r.scores(), [0.5, 0.0, 0.25]);
    assert_eq!(final_score(&r), (Some(0.25), Some(false)));
}

#[test]
fn mean_succeeds_only_when_every_stage_succeeded() {
    let dir = tempfile::tempdir().unwrap();
    let package = staged(dir.path(), THREE_STAGES);
    let mut replies = part(1, "1");
    replies.extend(part(2, "1"));
    replies.extend(part(3, "1"));
    let mut agent = TestAgent::new(replies);
    // Under a feedback condition too, a stage's success neither ends the episode nor brings
    // feedback: the next stage follows.
    let r = run(&package, "hidden+feedback=on+submissions=1", &mut agent, Options::default());
    assert_eq!(r.scores(), [1.0, 1.0, 1.0]);
    assert_eq!(r.ok().end_reason, EndReason::Submitted);
    assert_eq!(stage_messages(&r).len(), 2);
    assert_eq!(final_score(&r), (Some(1.0), Some(true)));
}

#[test]
fn a_stage_below_its_min_reward_ends_the_episode() {
    let dir = tempfile::tempdir().unwrap();
    let stages = THREE_STAGES.replace("name = \"first\"\n", "name = \"first\"\nmin_reward = 0.6\n");
    let package = staged(dir.path(), &stages);
    let mut replies = part(1, "0.5");
    replies.extend(part(2, "1"));
    let mut agent = TestAgent::new(replies);
    let r = run(&package, "hidden", &mut agent, Options::default());
    assert_eq!(r.scores(), [0.5]);
    assert_eq!(r.ok().end_reason, EndReason::Submitted);
    assert!(stage_messages(&r).is_empty());
    assert!(agent.user_messages().is_empty());
    let end = r.events.iter().rev().find_map(|e| match &e.kind {
        EventKind::End { reason, detail } => Some((reason.clone(), detail.clone())),
        _ => None,
    });
    assert_eq!(end, Some(("submitted".into(), "stage 1 `first` scored 0.5, below its min_reward 0.6: stages 2-3 were not given".into())));
    assert_eq!(final_score(&r), (Some(0.5), Some(false)));
}

#[test]
fn an_open_stage_is_scored_at_the_end_even_when_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let package = staged(dir.path(), THREE_STAGES);
    // Stage 1 is submitted; the script then ends during stage 2 without changing anything.
    let mut agent = TestAgent::new(part(1, "1"));
    let r = run(&package, "hidden", &mut agent, Options::default());
    let outcome = r.ok();
    assert_eq!(outcome.end_reason, EndReason::AgentDone);
    assert_eq!(r.scores(), [1.0, 0.0]);
    assert_eq!(outcome.submissions.iter().map(|s| s.automatic).collect::<Vec<_>>(), [false, true]);
    assert_eq!(final_score(&r), (Some(0.5), Some(false)));
}

/// The Harbor fixture `two-steps` (specgap-harbor's tests): step `create` asks for list.txt
/// starting with `apples`, step `extend` (min_reward 1) for a last line `pears`.
fn imported_two_steps(dir: &Path) -> TaskPackage {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("../specgap-harbor/tests/fixtures/dataset/two-steps");
    let destination = dir.join("two-steps");
    let options = specgap_harbor::ImportOptions { gold: false, ..Default::default() };
    match specgap_harbor::import_task(&source, &destination, &options).unwrap() {
        specgap_harbor::Outcome::Imported { .. } => {}
        other => panic!("not imported: {other:?}"),
    }
    specgap_task::load(&destination).unwrap()
}

#[test]
fn an_imported_harbor_multi_step_task_runs_stage_by_stage() {
    let dir = tempfile::tempdir().unwrap();
    let package = imported_two_steps(dir.path());
    assert_eq!(package.instruction(), "Create list.txt with the line: apples\n");
    let extend = "Append the line \"pears\" to list.txt, after the lines from notes.txt.\n";
    let mut agent = TestAgent::new(vec![
        one("write_text", json!({"path": "list.txt", "content": "apples\n"})),
        one("submit", json!({})),
        // Stage 2's tests see only the last line; stage 1's would still pass too.
        one("write_text", json!({"path": "list.txt", "content": "apples\nfigs\npears\n"})),
        one("submit", json!({})),
    ]);
    let r = run(&package, "hidden", &mut agent, Options::default());
    assert_eq!(r.scores(), [1.0, 1.0]);
    assert_eq!(stage_messages(&r), [extend]);
    assert_eq!(r.ok().end_reason, EndReason::Submitted);
    assert_eq!(final_score(&r), (Some(1.0), Some(true)));
}

#[test]
fn an_imported_step_scores_only_its_own_tests() {
    let dir = tempfile::tempdir().unwrap();
    let package = imported_two_steps(dir.path());
    // Stage 1 passes; stage 2's delivery breaks nothing of stage 1's tests but misses `pears`:
    // were every step's tests run, the second submission would score 0.5, not 0.
    let mut agent = TestAgent::new(vec![
        one("write_text", json!({"path": "list.txt", "content": "apples\n"})),
        one("submit", json!({})),
        one("write_text", json!({"path": "list.txt", "content": "apples\nfigs\n"})),
        one("submit", json!({})),
    ]);
    let r = run(&package, "hidden", &mut agent, Options::default());
    assert_eq!(r.scores(), [1.0, 0.0]);
    assert_eq!(final_score(&r), (Some(0.5), Some(false)));
    // Below the last step's min_reward: nothing is left to withhold, so no stop detail.
    let detail = r.events.iter().rev().find_map(|e| match &e.kind {
        EventKind::End { detail, .. } => Some(detail.clone()),
        _ => None,
    });
    assert_eq!(detail.as_deref(), Some(""));
}

#[test]
fn a_staged_episode_is_deterministic() {
    let dir = tempfile::tempdir().unwrap();
    let package = staged(dir.path(), THREE_STAGES);
    let episode = || {
        let mut replies = part(1, "0.5");
        replies.extend(part(2, "1"));
        let mut agent = TestAgent::new(replies);
        let r = run(&package, "hidden", &mut agent, Options::default());
        let kinds: Vec<EventKind> = r.kinds().into_iter().cloned().collect();
        let rows: Vec<(u32, Option<f64>, bool)> = r.store.submissions().unwrap().into_iter().map(|s| (s.k, s.score, s.automatic)).collect();
        (kinds, rows, final_score(&r))
    };
    let first = episode();
    assert_eq!(first.1, [(1, Some(0.5), false), (2, Some(1.0), false), (3, Some(0.0), true)]);
    assert_eq!(first, episode());
}

#[test]
fn a_later_stage_file_is_absent_in_stage_one_and_present_after_its_message() {
    let dir = tempfile::tempdir().unwrap();
    let stages = THREE_STAGES
        .replace("instruction = \"stages/second.md\"\n", "instruction = \"stages/second.md\"\nfiles = \"stages/second/files\"\n");
    let root = dir.path().join("staged");
    fs_err::create_dir_all(root.join("stages/second/files")).unwrap();
    fs_err::write(root.join("stages/second/files/extra.txt"), "added by stage 2\n").unwrap();
    let package = staged(dir.path(), &stages);
    let read = || one("read_text", json!({"path": "extra.txt"}));
    let mut replies = vec![read()];
    replies.extend(part(1, "1"));
    replies.push(read());
    replies.extend(part(2, "1"));
    let mut agent = TestAgent::new(replies);
    let r = run(&package, "hidden", &mut agent, Options::default());
    let reads: Vec<(String, bool)> =
        r.results().into_iter().filter(|(tool, _, _)| tool == "read_text").map(|(_, output, error)| (output, error)).collect();
    assert_eq!(reads.len(), 2, "{reads:?}");
    assert!(reads[0].1, "stage 1 must not see stage 2's file: {reads:?}");
    assert_eq!(reads[1], ("     1\tadded by stage 2".to_string(), false));
    assert_eq!(r.scores(), [1.0, 1.0, 0.0]);
    assert_eq!(stage_messages(&r), [STAGE_2, STAGE_3]);
}

/// The Harbor fixture `keyed-steps` (specgap-harbor's tests): step `draft` writes reward.json
/// with `title` (0 or 1) and `length` (a quarter per line of report.md), gated on the table
/// `{ title = 1.0, length = 0.5 }`; step `finish` asks for a last line `Done.`.
fn imported_keyed_steps(dir: &Path) -> TaskPackage {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("../specgap-harbor/tests/fixtures/keyed-steps");
    let destination = dir.join("keyed-steps");
    let options = specgap_harbor::ImportOptions { gold: false, ..Default::default() };
    match specgap_harbor::import_task(&source, &destination, &options).unwrap() {
        specgap_harbor::Outcome::Imported { .. } => {}
        other => panic!("not imported: {other:?}"),
    }
    specgap_task::load(&destination).unwrap()
}

fn end_detail(r: &crate::support::Run) -> Option<String> {
    r.events.iter().rev().find_map(|e| match &e.kind {
        EventKind::End { detail, .. } => Some(detail.clone()),
        _ => None,
    })
}

#[test]
fn a_stage_short_of_one_key_of_its_min_reward_table_ends_the_episode() {
    let dir = tempfile::tempdir().unwrap();
    let package = imported_keyed_steps(dir.path());
    // title 1, length 0.25: the step's reward (their mean, 0.625) would pass a min_reward of
    // 0.6, but the table gates each key, and `length` is short.
    let mut agent = TestAgent::new(vec![
        one("write_text", json!({"path": "report.md", "content": "# Report\n"})),
        one("submit", json!({})),
        one("write_text", json!({"path": "report.md", "content": "# Report\nDone.\n"})),
        one("submit", json!({})),
    ]);
    let r = run(&package, "hidden", &mut agent, Options::default());
    assert_eq!(r.scores(), [0.625]);
    assert!(stage_messages(&r).is_empty());
    assert_eq!(
        end_detail(&r).as_deref(),
        Some("stage 1 `draft` reward key `length` is 0.25, below its min_reward 0.5: stage 2 was not given")
    );
    assert_eq!(final_score(&r), (Some(0.625), Some(false)));
}

#[test]
fn a_stage_meeting_every_key_of_its_min_reward_table_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let package = imported_keyed_steps(dir.path());
    let mut agent = TestAgent::new(vec![
        one("write_text", json!({"path": "report.md", "content": "# Report\nAll fine.\n"})),
        one("submit", json!({})),
        one("write_text", json!({"path": "report.md", "content": "# Report\nAll fine.\nDone.\n"})),
        one("submit", json!({})),
    ]);
    let r = run(&package, "hidden", &mut agent, Options::default());
    assert_eq!(r.scores(), [0.75, 1.0]);
    assert_eq!(stage_messages(&r), ["End report.md with the line: Done.\n"]);
    assert_eq!(r.ok().end_reason, EndReason::Submitted);
    assert_eq!(final_score(&r), (Some(0.875), Some(false)));
}

#[test]
fn a_missing_key_never_reaches_its_minimum() {
    let stage = specgap_task::StageText {
        name: "gated".into(),
        instruction: None,
        min_reward: None,
        min_reward_keys: [("accuracy".to_string(), 0.5), ("style".to_string(), 0.0)].into_iter().collect(),
        files: None,
        gold: None,
    };
    let shortfall = specgap_engine::episode::stage_shortfall;
    let rewards = |pairs: &[(&str, f64)]| pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect::<std::collections::BTreeMap<_, _>>();
    // No `rewards` at all (an evaluator that writes none, a refused reward): the first key is short.
    assert_eq!(shortfall(&stage, 1.0, None).as_deref(), Some("reward key `accuracy` is missing, below its min_reward 0.5"));
    assert_eq!(
        shortfall(&stage, 1.0, Some(&rewards(&[("accuracy", 0.9)]))).as_deref(),
        Some("reward key `style` is missing, below its min_reward 0")
    );
    assert_eq!(shortfall(&stage, 0.0, Some(&rewards(&[("accuracy", 0.5), ("style", 0.0)]))), None);
    // A number is compared with the Score, as before.
    let scored = specgap_task::StageText { min_reward: Some(0.6), min_reward_keys: Default::default(), ..stage };
    assert_eq!(shortfall(&scored, 0.5, None).as_deref(), Some("scored 0.5, below its min_reward 0.6"));
    assert_eq!(shortfall(&scored, 0.6, None), None);
}

#[test]
fn a_specgap_staged_package_exported_to_harbor_and_imported_back_runs_stage_by_stage() {
    let dir = tempfile::tempdir().unwrap();
    let native = Path::new(env!("CARGO_MANIFEST_DIR")).join("../specgap-harbor/tests/fixtures/staged-native");
    let harbor = dir.path().join("harbor");
    specgap_harbor::export::export_task(&native, &harbor).unwrap();
    let destination = dir.path().join("imported");
    let options = specgap_harbor::ImportOptions { gold: false, ..Default::default() };
    match specgap_harbor::import_task(&harbor, &destination, &options).unwrap() {
        specgap_harbor::Outcome::Imported { .. } => {}
        other => panic!("not imported: {other:?}"),
    }
    let package = specgap_task::load(&destination).unwrap();
    let mut agent = TestAgent::new(vec![
        one("write_text", json!({"path": "a.txt", "content": "one\n"})),
        one("submit", json!({})),
        // Stage 2 scores b.txt and notes.txt, the file stage 2 added when it began.
        one("write_text", json!({"path": "b.txt", "content": "two\n"})),
        one("submit", json!({})),
    ]);
    let r = run(&package, "hidden", &mut agent, Options::default());
    assert_eq!(r.scores(), [1.0, 1.0]);
    assert_eq!(stage_messages(&r), ["Write b.txt holding the word: two. Keep notes.txt as it is.\n"]);
    assert_eq!(final_score(&r), (Some(1.0), Some(true)));
}
