//! `[stages]` (format 2): ordered stages, the first opened by instruction.md, each later one
//! by a private instruction file; every rule of `specgap_task::stages` at its key.

use specgap_protocol::package::StageScore;

use crate::support::Copy;

const TWO_STAGES: &str = "\n[stages]\nscore = \"final\"\n\n[[stages.stage]]\nname = \"first\"\nmin_reward = 0.5\n\n\
    [[stages.stage]]\nname = \"second\"\ninstruction = \"stages/second.md\"\n";

/// req-basic as format 2 with `stages` appended to task.toml and stage 2's file written.
fn staged(stages: &str) -> Copy {
    let copy = Copy::of("req-basic");
    copy.replace("task.toml", "format = 1\n", "format = 2\n");
    let manifest = copy.read("task.toml");
    copy.write("task.toml", &format!("{manifest}{stages}"));
    copy.write("stages/second.md", "Now the second part.\n");
    copy
}

#[test]
fn stages_load_with_their_instructions_and_score() {
    let copy = staged(TWO_STAGES);
    let package = specgap_task::load(&copy.root).unwrap();
    let stages = package.stages().unwrap();
    assert_eq!(stages.score, StageScore::Final);
    assert_eq!(stages.len(), 2);
    let read: Vec<(&str, Option<&str>, Option<f64>)> =
        stages.stages.iter().map(|s| (s.name.as_str(), s.instruction.as_deref(), s.min_reward)).collect();
    assert_eq!(read, [("first", None, Some(0.5)), ("second", Some("Now the second part.\n"), None)]);
    assert_eq!(stages.stage(2).map(|s| s.name.as_str()), Some("second"));
    assert_eq!(stages.stage(0), None);
    assert_eq!(stages.stage(3), None);
    // The stage's file is part of the package's content.
    let before = package.hash().to_string();
    copy.write("stages/second.md", "Now the other part.\n");
    assert_ne!(specgap_task::load(&copy.root).unwrap().hash(), before);
    // Without [stages] a package has none.
    assert!(specgap_task::load(Copy::of("req-basic").root).unwrap().stages().is_none());
}

#[test]
fn a_min_reward_table_loads_as_per_key_thresholds() {
    // Harbor's per-key table: keys of the result's `rewards`, any finite minimum.
    let copy = staged(&TWO_STAGES.replace("min_reward = 0.5", "min_reward = { accuracy = 0.8, tokens = 3 }"));
    let package = specgap_task::load(&copy.root).unwrap();
    let first = &package.stages().unwrap().stages[0];
    assert_eq!(first.min_reward, None);
    let keys: Vec<(&str, f64)> = first.min_reward_keys.iter().map(|(k, v)| (k.as_str(), *v)).collect();
    assert_eq!(keys, [("accuracy", 0.8), ("tokens", 3.0)]);
}

#[test]
fn mean_is_the_default_score() {
    let copy = staged(&TWO_STAGES.replace("score = \"final\"\n", ""));
    assert_eq!(specgap_task::load(&copy.root).unwrap().stages().unwrap().score, StageScore::Mean);
}

#[test]
fn a_format_1_package_cannot_have_stages() {
    let copy = staged(TWO_STAGES);
    copy.replace("task.toml", "format = 2\n", "format = 1\n");
    let error = copy.load_error();
    assert!(
        error.ends_with(": [stages] is a format-2 key, and this package says `format = 1`; set `format = 2` in task.toml to use it"),
        "{error}"
    );
}

#[test]
fn every_stage_rule_is_an_error_naming_the_stage() {
    let cases = [
        (
            TWO_STAGES.replace("name = \"second\"", "name = \"Second_Part\""),
            "stage 2's name `Second_Part` is not usable; expected lowercase letters and digits in words joined by single hyphens",
        ),
        (
            TWO_STAGES.replace("name = \"second\"", "name = \"first\""),
            "[[stages.stage]] names `first` twice; expected each stage name once",
        ),
        (TWO_STAGES.replace("min_reward = 0.5", "min_reward = 1.5"), "stage `first` has min_reward = 1.5; expected a number in [0, 1]"),
        (
            TWO_STAGES.replace("min_reward = 0.5", "min_reward = {}"),
            "stage `first` has an empty min_reward table; expected reward keys with their minimums, such as { reward = 1.0 }",
        ),
        (
            TWO_STAGES.replace("min_reward = 0.5", "min_reward = { \"\" = 0.5 }"),
            "stage `first` has min_reward key `` = 0.5; expected a non-empty key and a finite number",
        ),
        (
            TWO_STAGES.replace("min_reward = 0.5", "min_reward = { accuracy = nan }"),
            "stage `first` has min_reward key `accuracy` = NaN; expected a non-empty key and a finite number",
        ),
        (
            TWO_STAGES.replace("min_reward = 0.5\n", "instruction = \"instruction.md\"\n"),
            "the first stage `first` names instruction `instruction.md`; the first stage's instruction is the opening message (instruction.md), so leave the key out",
        ),
        (
            TWO_STAGES.replace("instruction = \"stages/second.md\"\n", ""),
            "stage 2 `second` has no instruction; expected a file such as `stages/second.md`",
        ),
        (
            TWO_STAGES.replace("stages/second.md", "workspace/README.md"),
            "stage `second`'s instruction `workspace/README.md` is inside workspace/, which the agent sees from the start; keep it outside",
        ),
        (
            TWO_STAGES.replace("stages/second.md", "stages/missing.md"),
            "stage `second`'s instruction `stages/missing.md`: no such file in the package",
        ),
        (
            TWO_STAGES.replace("stages/second.md", "/etc/passwd"),
            "stage `second`'s instruction `/etc/passwd` is absolute; expected a path relative to the package root",
        ),
        (
            TWO_STAGES.replace("stages/second.md", "../outside.md"),
            "stage `second`'s instruction `../outside.md` does not name a file inside the package",
        ),
        (TWO_STAGES.replace("stages/second.md", "stages"), "stage `second`'s instruction `stages` is not a regular file"),
        ("\n[stages]\nstage = []\n".to_string(), "[stages] lists no [[stages.stage]]; expected at least one stage"),
    ];
    for (stages, message) in cases {
        let copy = staged(&stages);
        let error = copy.load_error();
        let task_toml = copy.path("task.toml").display().to_string();
        assert!(error.starts_with(&task_toml), "{error}");
        assert!(error.ends_with(&format!(": {message}")), "{error}\nexpected: {message}");
    }
}

#[test]
fn stage_files_and_gold_load_as_overlays_and_every_rule_names_the_stage() {
    let with_keys = TWO_STAGES.replace(
        "instruction = \"stages/second.md\"\n",
        "instruction = \"stages/second.md\"\nfiles = \"stages/second/files\"\ngold = \"stages/second/gold\"\n",
    );
    let copy = staged(&with_keys);
    copy.write("stages/second/files/extra.txt", "more\n");
    copy.write("stages/second/gold/answer.txt", "done\n");
    let package = specgap_task::load(&copy.root).unwrap();
    let stages = package.stages().unwrap();
    assert!(stages.has_stage_files());
    assert!(stages.has_stage_golds());
    assert!(stages.stage(1).unwrap().files.is_none());
    assert!(stages.stage(2).unwrap().files.is_some());
    assert!(stages.stage(2).unwrap().gold.is_some());
    let cases = [
        (
            with_keys.replace("min_reward = 0.5\n", "files = \"stages/second/files\"\n"),
            "the first stage `first` names files `stages/second/files`; the first stage's files are workspace/, so leave the key out",
        ),
        (
            with_keys.replace("stages/second/gold", "workspace"),
            "stage `second`'s gold `workspace` is inside workspace/, which the agent sees from the start; keep it outside",
        ),
        (with_keys.replace("stages/second/files", "stages/none"), "stage `second`'s files `stages/none`: no such directory in the package"),
        (with_keys.replace("stages/second/gold", "stages/second.md"), "stage `second`'s gold `stages/second.md` is not a directory"),
    ];
    for (stages, message) in cases {
        let copy = staged(&stages);
        copy.write("stages/second/files/extra.txt", "more\n");
        copy.write("stages/second/gold/answer.txt", "done\n");
        let error = copy.load_error();
        assert!(error.ends_with(&format!(": {message}")), "{error}\nexpected: {message}");
    }
}
