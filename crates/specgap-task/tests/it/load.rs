//! The loader on valid fixtures, and one broken copy per rejection of DESIGN §2.

use std::path::PathBuf;

use specgap_protocol::package::Direction;
use specgap_protocol::result::ScoringKind;
use specgap_task::LoadError;

use crate::support::{Copy, fixture};

#[test]
fn req_basic_loads_every_file() {
    let package = specgap_task::load(fixture("req-basic")).unwrap();
    assert_eq!(package.name(), "fixtures/req-basic");
    assert_eq!(package.manifest().evaluator.command, "python3 evaluate.py");
    assert!(package.instruction().starts_with("Hi,\n\nOur late fees are wrong"));
    assert!(package.instruction_full().unwrap().contains("Disputed invoices"));
    let ids: Vec<&str> = package.requirements().iter().map(|r| r.id.as_str()).collect();
    assert_eq!(ids, ["disputed-exempt", "fee-cap", "monthly-rate"]);
    assert_eq!(package.requirement_ids(), ["disputed-exempt", "fee-cap", "monthly-rate"]);
    let stated: Vec<bool> = package.requirements().iter().map(|r| r.stated).collect();
    assert_eq!(stated, [false, false, true]);
    assert!(package.is_requirement_scored());
    assert_eq!(package.static_scoring_kind(), Some(ScoringKind::Requirement));
    assert_eq!(package.observations().len(), 4);
    assert_eq!(package.observations_for("monthly-rate").count(), 2);
    assert_eq!(package.observation("monthly-rate", Some("charged-on-time")).unwrap().failure_mode, "charged-on-time");
    // No or an unregistered failure mode: the requirement's first observation.
    assert_eq!(package.observation("monthly-rate", None).unwrap().failure_mode, "fee-miscounted");
    assert_eq!(package.observation("monthly-rate", Some("nope")).unwrap().failure_mode, "fee-miscounted");
    assert!(package.user().unwrap().persona.starts_with("Dana Okafor"));
    assert_eq!(package.information(), None);
    assert!(package.clarifications().is_empty());
    assert!(package.notes().unwrap().starts_with("Private notes"));
    let gold = package.solutions().gold.as_ref().unwrap();
    assert_eq!(gold.dir, fixture("req-basic").join("solutions/gold"));
    assert_eq!(gold.delete, [PathBuf::from("billing/fees_draft.py")]);
    assert!(package.solutions().literal.as_ref().unwrap().delete.is_empty());
    let mutants: Vec<&str> = package.solutions().mutants.keys().map(String::as_str).collect();
    assert_eq!(mutants, ["disputed-exempt", "fee-cap", "monthly-rate"]);
    assert_eq!(package.solution("mutant:fee-cap").unwrap().dir, fixture("req-basic").join("solutions/mutants/fee-cap"));
    assert!(package.residual_states().is_empty());
    let ctx = package.scoring_context();
    assert_eq!(ctx.requirement_ids, ["disputed-exempt", "fee-cap", "monthly-rate"]);
    assert_eq!(ctx.delivery, None);
    assert_eq!(package.workspace_dir(), fixture("req-basic").join("workspace"));
    assert_eq!(package.hash().len(), 64);
}

#[test]
fn test_basic_loads_its_residual_state() {
    let package = specgap_task::load(fixture("test-basic")).unwrap();
    assert!(!package.is_requirement_scored());
    assert_eq!(package.static_scoring_kind(), None);
    let state = package.residual("half-done").unwrap();
    assert_eq!(state.patch, fixture("test-basic").join("residual/half-done/state.patch"));
    assert_eq!(state.meta.failing_tests, ["line_count_trailing", "top_words_ties"]);
    assert!(state.meta.declared_complete);
    assert_eq!(state.meta.steps, 14);
}

/// Issue 10 item 7: a reward-scored task was planned (and, with every evaluation failing,
/// stored) as test-scored.
#[test]
fn planned_scoring_kind_of_a_reward_task_is_reward_not_test() {
    let kind = |name: &str| specgap_task::load(fixture(name)).unwrap().planned_scoring_kind();
    assert_eq!(kind("req-basic"), ScoringKind::Requirement);
    // Residual states list failing tests, so the verifier reports tests.
    assert_eq!(kind("test-basic"), ScoringKind::Test);
    assert_eq!(kind("delivery-basic"), ScoringKind::Delivery);
    let reward = Copy::of("test-basic");
    reward.remove("residual");
    assert_eq!(specgap_task::load(&reward.root).unwrap().planned_scoring_kind(), ScoringKind::Reward);
}

#[test]
fn delivery_basic_loads_its_case() {
    let package = specgap_task::load(fixture("delivery-basic")).unwrap();
    assert!(package.is_delivery());
    assert_eq!(package.scoring_context().delivery, Some((4.0, Direction::Min)));
    let ids: Vec<&str> = package.clarifications().iter().map(|t| t.id.as_str()).collect();
    assert_eq!(ids, ["packaging-weight", "all-items-today"]);
    assert!(package.information().unwrap().contains("0.5 kg"));
}

#[test]
fn hash_covers_content_not_location() {
    let original = specgap_task::load(fixture("req-basic")).unwrap();
    let copy = Copy::of("req-basic");
    let copied = specgap_task::load(&copy.root).unwrap();
    assert_eq!(copied.hash(), original.hash());

    copy.write("workspace/README.md", "# billing\n");
    let edited = specgap_task::load(&copy.root).unwrap().hash().to_owned();
    assert_ne!(edited, original.hash());

    // The executable bit is content too.
    use std::os::unix::fs::PermissionsExt as _;
    fs_err::set_permissions(copy.path("workspace/README.md"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let chmodded = specgap_task::load(&copy.root).unwrap().hash().to_owned();
    assert_ne!(chmodded, edited);

    // A symlink is hashed by its target.
    copy.symlink("README.md", "workspace/LINK.md");
    let linked = specgap_task::load(&copy.root).unwrap().hash().to_owned();
    assert_ne!(linked, chmodded);
}

#[test]
fn workspace_hash_covers_the_workspace_alone() {
    let original = specgap_task::load(fixture("req-basic")).unwrap();
    assert_ne!(original.workspace_hash(), original.hash());
    assert_eq!(original.workspace_hash().len(), 64);

    // Another instruction: another package, the same workspace (so one git base serves both).
    let copy = Copy::of("req-basic");
    copy.write("instruction.md", "Fix the late fees.\n");
    let reworded = specgap_task::load(&copy.root).unwrap();
    assert_ne!(reworded.hash(), original.hash());
    assert_eq!(reworded.workspace_hash(), original.workspace_hash());

    copy.write("workspace/README.md", "# billing\n");
    let edited = specgap_task::load(&copy.root).unwrap();
    assert_ne!(edited.workspace_hash(), original.workspace_hash());
}

// ---- rejections: one broken copy each, asserting the exact message --------------------------

#[test]
fn missing_format_is_rejected() {
    let copy = Copy::of("req-basic");
    copy.replace("task.toml", "format = 1\n", "");
    assert_eq!(
        copy.load_error(),
        format!(
            "{}: missing `format`; this specgap reads task package formats 1 and 2 (`format = 1` unless the package uses a format-2 key)",
            copy.path("task.toml").display()
        )
    );
}

#[test]
fn other_format_is_rejected_with_its_line() {
    let copy = Copy::of("req-basic");
    copy.replace("task.toml", "format = 1\n", "\nformat = 3\n");
    assert_eq!(
        copy.load_error(),
        format!("{}:2:10: format = 3 is not supported; expected `format = 1` or `format = 2`", copy.path("task.toml").display())
    );
}

#[test]
fn missing_required_parts_are_rejected() {
    let cases = [
        ("task.toml", "no task.toml; a task package is a directory with a task.toml"),
        ("instruction.md", "missing instruction.md; every package needs its opening instruction"),
        ("workspace", "missing workspace/ directory; it may be empty but must exist"),
        ("evaluator", "missing evaluator/ directory; every package needs its private evaluator"),
        ("observations.toml", "missing observations.toml; a package with requirements.toml needs an observation for every requirement"),
    ];
    for (part, message) in cases {
        let copy = Copy::of("req-basic");
        copy.remove(part);
        assert_eq!(copy.load_error(), format!("{}: {message}", copy.root.display()), "without {part}");
    }
}

#[test]
fn workspace_that_is_a_file_is_rejected() {
    let copy = Copy::of("req-basic");
    copy.remove("workspace");
    copy.write("workspace", "not a directory");
    assert_eq!(copy.load_error(), format!("{}: expected a directory, found a regular file", copy.path("workspace").display()));
}

#[test]
fn unknown_key_is_rejected_with_line_and_column() {
    let copy = Copy::of("req-basic");
    copy.replace("task.toml", "timeout_sec = 60\n", "timeout_sec = 60\ntimeout = 5\n");
    let err = copy.load_error();
    let prefix = format!(
        "{}:20:1: unknown field `timeout`, expected one of `command`, `timeout_sec`, `dir`, `out`, `environment`",
        copy.path("task.toml").display()
    );
    assert!(err.starts_with(&prefix), "{err}");
}

#[test]
fn unknown_requirement_key_is_rejected() {
    let copy = Copy::of("req-basic");
    copy.replace("requirements.toml", "priority = 2\n", "priority = 2\nweight = 3\n");
    let err = copy.load_error();
    let prefix = format!("{}:11:1: unknown field `weight`, expected one of", copy.path("requirements.toml").display());
    assert!(err.starts_with(&prefix), "{err}");
}

#[test]
fn empty_evaluator_command_is_rejected() {
    let copy = Copy::of("req-basic");
    copy.replace("task.toml", r#"command = "python3 evaluate.py""#, r#"command = "  ""#);
    assert_eq!(
        copy.load_error(),
        format!(
            "{}:18:11: [evaluator].command is empty; expected the shell command that runs the evaluator",
            copy.path("task.toml").display()
        )
    );
}

#[test]
fn duplicate_requirement_id_is_rejected() {
    let copy = Copy::of("req-basic");
    copy.replace("requirements.toml", r#"id = "fee-cap""#, r#"id = "disputed-exempt""#);
    assert_eq!(
        copy.load_error(),
        format!(
            "{}:8:1: requirement id `disputed-exempt` is defined twice; ids must be unique in a task",
            copy.path("requirements.toml").display()
        )
    );
}

#[test]
fn shared_priority_is_rejected() {
    let copy = Copy::of("req-basic");
    copy.replace("requirements.toml", "priority = 3", "priority = 1");
    assert_eq!(
        copy.load_error(),
        format!(
            "{}:15:1: requirements `disputed-exempt` and `monthly-rate` both have priority 1; priorities must be unique in a task",
            copy.path("requirements.toml").display()
        )
    );
}

#[test]
fn non_hyphenated_requirement_id_is_rejected() {
    let copy = Copy::of("req-basic");
    copy.replace("requirements.toml", r#"id = "fee-cap""#, r#"id = "Fee_Cap""#);
    assert_eq!(
        copy.load_error(),
        format!(
            "{}:8:1: requirement id `Fee_Cap` is not lowercase-hyphenated; expected letters a-z and digits in words joined by single hyphens, starting with a letter (e.g. `charge-once`)",
            copy.path("requirements.toml").display()
        )
    );
}

#[test]
fn observation_of_unknown_requirement_is_rejected() {
    let copy = Copy::of("req-basic");
    copy.replace("observations.toml", r#"requirement = "fee-cap""#, r#"requirement = "fee-limit""#);
    assert_eq!(
        copy.load_error(),
        format!(
            "{}:8:1: observation names requirement `fee-limit`, which requirements.toml does not define",
            copy.path("observations.toml").display()
        )
    );
}

#[test]
fn requirement_without_observation_is_rejected() {
    let copy = Copy::of("req-basic");
    let text = copy.read("observations.toml");
    let kept: Vec<&str> = text.split("[[observation]]").filter(|block| !block.contains(r#""fee-cap""#)).collect();
    copy.write("observations.toml", &kept.join("[[observation]]"));
    assert_eq!(
        copy.load_error(),
        format!(
            "{}: requirement `fee-cap` has no observation; expected at least one [[observation]] naming it",
            copy.path("observations.toml").display()
        )
    );
}

#[test]
fn mutant_of_unknown_requirement_is_rejected() {
    let copy = Copy::of("req-basic");
    fs_err::rename(copy.path("solutions/mutants/fee-cap"), copy.path("solutions/mutants/fee-limit")).unwrap();
    assert_eq!(
        copy.load_error(),
        format!(
            "{}: mutant directory names requirement `fee-limit`, which requirements.toml does not define",
            copy.path("solutions/mutants/fee-limit").display()
        )
    );
}

#[test]
fn clarification_naming_unknown_requirement_is_rejected() {
    let copy = Copy::of("req-basic");
    copy.write(
        "clarifications.toml",
        "[[target]]\nid = \"cap\"\ndescription = \"d\"\nissue_type = \"missing\"\ndomain = \"constraint-rule\"\nrule_source = \"fee-limit\"\nanswer = \"a\"\ntriggers = [\"q?\"]\n",
    );
    assert_eq!(
        copy.load_error(),
        format!(
            "{}:1:1: clarification target `cap` rule_source names requirement `fee-limit`, which requirements.toml does not define",
            copy.path("clarifications.toml").display()
        )
    );
    // A known requirement, or free text, is accepted.
    copy.replace("clarifications.toml", "fee-limit", "fee-cap");
    assert!(specgap_task::load(&copy.root).is_ok());
    copy.replace("clarifications.toml", "fee-cap", "the accountants");
    assert!(specgap_task::load(&copy.root).is_ok());
}

#[test]
fn delete_entry_leaving_the_workspace_is_rejected() {
    let cases = [
        ("../../task.toml", "leaves the workspace"),
        ("billing/../../x", "leaves the workspace"),
        ("/etc/passwd", "is absolute"),
        ("billing/..", "names the workspace itself"),
    ];
    for (entry, why) in cases {
        let copy = Copy::of("req-basic");
        copy.write("solutions/gold/delete.txt", &format!("# stale files\nbilling/fees_draft.py\n\n{entry}\n"));
        assert_eq!(
            copy.load_error(),
            format!(
                "{}:4:1: delete.txt entry `{entry}` {why}; expected a relative path inside the workspace",
                copy.path("solutions/gold/delete.txt").display()
            )
        );
    }
}

#[test]
fn symlinks_leaving_their_tree_are_rejected() {
    let cases = [
        ("workspace/billing/escape.py", "../../evaluator/evaluate.py", "workspace/"),
        ("workspace/abs", "/etc/passwd", "workspace/"),
        ("solutions/gold/billing/policy.py", "../../../workspace/billing/policy.py", "solutions/gold/"),
        ("solutions/mutants/fee-cap/up", "..", "solutions/mutants/fee-cap/"),
    ];
    for (link, target, tree) in cases {
        let copy = Copy::of("req-basic");
        copy.symlink(target, link);
        assert_eq!(
            copy.load_error(),
            format!("{}: symlink to `{target}` leaves {tree}; links must stay inside it", copy.path(link).display())
        );
    }
}

#[test]
fn symlink_escaping_through_another_link_is_rejected() {
    let copy = Copy::of("req-basic");
    // `up` points to the workspace, so `up/../..` looks lexically inside billing/'s parent
    // but resolves through the link to the package's parent directory.
    copy.symlink("..", "workspace/billing/up");
    copy.symlink("up/../..", "workspace/billing/sneaky");
    let err = copy.load_error();
    assert_eq!(
        err,
        format!("{}: symlink to `up/../..` leaves workspace/; links must stay inside it", copy.path("workspace/billing/sneaky").display())
    );
}

/// Issue 10 item 8: a symlink loop passed load and `check`, although links are resolved.
#[test]
fn symlink_loop_is_rejected_naming_the_link() {
    for (links, named, target) in [
        (&[("b", "workspace/a"), ("a", "workspace/b")][..], "workspace/a", "b"),
        (&[("self", "workspace/self")][..], "workspace/self", "self"),
        (&[("../evaluator/y", "evaluator/x"), ("x", "evaluator/y")][..], "evaluator/x", "../evaluator/y"),
        // A link through a loop never resolves either.
        (&[("loop/file", "workspace/billing/via"), ("loop", "workspace/billing/loop")][..], "workspace/billing/loop", "loop"),
    ] {
        let copy = Copy::of("req-basic");
        for (target, link) in links {
            copy.symlink(target, link);
        }
        assert_eq!(
            copy.load_error(),
            format!(
                "{}: symlink to `{target}` never resolves: it is part of a symlink loop; links must lead to a file, a directory or nothing",
                copy.path(named).display()
            )
        );
    }
}

#[test]
fn in_tree_symlink_is_accepted() {
    let copy = Copy::of("req-basic");
    copy.symlink("../README.md", "workspace/billing/README.md");
    copy.symlink("missing-but-inside", "workspace/dangling");
    assert!(specgap_task::load(&copy.root).is_ok());
}

/// Found by the loader's property test: a fifo where the loader reads a file (here
/// instruction.md, read before the tree walk rejects special files) blocked `load` forever.
#[test]
fn a_fifo_where_a_file_is_read_is_refused_without_blocking() {
    for file in ["task.toml", "instruction.md", "requirements.toml", "solutions/gold/delete.txt"] {
        let copy = Copy::of("req-basic");
        copy.remove(file);
        let status = std::process::Command::new("mkfifo").arg(copy.path(file)).status().unwrap();
        assert!(status.success());
        let expected = if file == "task.toml" || file == "instruction.md" {
            format!("{}: expected a regular file, found a fifo", copy.path(file).display())
        } else {
            // Files read after the walk meet its rule first.
            format!("{}: is a fifo; a package may hold only regular files, directories and symlinks", copy.path(file).display())
        };
        assert_eq!(copy.load_error(), expected, "{file}");
    }
    let copy = Copy::of("req-basic");
    copy.remove("instruction.md");
    fs_err::create_dir(copy.path("instruction.md")).unwrap();
    assert_eq!(copy.load_error(), format!("{}: expected a regular file, found a directory", copy.path("instruction.md").display()));
    let copy = Copy::of("test-basic");
    copy.remove("residual/half-done/state.patch");
    fs_err::create_dir(copy.path("residual/half-done/state.patch")).unwrap();
    assert_eq!(
        copy.load_error(),
        format!("{}: expected a regular file, found a directory", copy.path("residual/half-done/state.patch").display())
    );
}

#[test]
fn fifo_and_socket_in_workspace_are_rejected() {
    let copy = Copy::of("req-basic");
    let fifo = copy.path("workspace/pipe");
    let status = std::process::Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(status.success());
    assert_eq!(
        copy.load_error(),
        format!("{}: is a fifo; a package may hold only regular files, directories and symlinks", fifo.display())
    );

    let copy = Copy::of("req-basic");
    let socket = copy.path("workspace/billing/control.sock");
    let _listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    assert_eq!(
        copy.load_error(),
        format!("{}: is a socket; a package may hold only regular files, directories and symlinks", socket.display())
    );
}

#[test]
fn malformed_residual_meta_is_rejected() {
    let copy = Copy::of("test-basic");
    copy.replace("residual/half-done/meta.toml", "steps = 14\n", "steps = \"many\"\n");
    let err = copy.load_error();
    assert_eq!(err, format!("{}:3:9: invalid type: string \"many\", expected u32", copy.path("residual/half-done/meta.toml").display()));

    let copy = Copy::of("test-basic");
    copy.replace("residual/half-done/meta.toml", "declared_complete = true\n", "");
    assert_eq!(
        copy.load_error(),
        format!("{}:1:1: missing field `declared_complete`", copy.path("residual/half-done/meta.toml").display())
    );

    let copy = Copy::of("test-basic");
    copy.replace("residual/half-done/meta.toml", r#"["line_count_trailing", "top_words_ties"]"#, "[]");
    assert_eq!(
        copy.load_error(),
        format!(
            "{}: failing_tests is empty; a residual state is one the verifier still fails, so list those tests",
            copy.path("residual/half-done/meta.toml").display()
        )
    );

    let copy = Copy::of("test-basic");
    copy.remove("residual/half-done/state.patch");
    assert_eq!(
        copy.load_error(),
        format!("{}: missing state.patch; a residual state needs state.patch and meta.toml", copy.path("residual/half-done").display())
    );
}

#[test]
fn unusable_delivery_reference_is_rejected() {
    for (value, shown) in [("0.0", "0"), ("nan", "NaN"), ("inf", "inf"), ("-inf", "-inf")] {
        let copy = Copy::of("delivery-basic");
        copy.replace("task.toml", "reference = 4.0", &format!("reference = {value}"));
        assert_eq!(
            copy.load_error(),
            format!(
                "{}:17:13: [delivery].reference = {shown} is unusable; expected a finite, non-zero number",
                copy.path("task.toml").display()
            ),
            "reference = {value}"
        );
    }
}

#[test]
fn misspelt_package_toml_is_rejected() {
    let copy = Copy::of("req-basic");
    fs_err::rename(copy.path("user.toml"), copy.path("users.toml")).unwrap();
    assert_eq!(
        copy.load_error(),
        format!(
            "{}: unexpected toml file; expected only task.toml, requirements.toml, observations.toml, user.toml, clarifications.toml and synthesis.toml at the package top level",
            copy.path("users.toml").display()
        )
    );
}

#[test]
fn synthesis_toml_is_read_and_checked() {
    let copy = Copy::of("req-basic");
    assert!(specgap_task::load(copy.path("")).unwrap().synthesis().is_none());
    copy.write("synthesis.toml", "format = 1\nsource = \"src\"\n\n[sufficiency]\nresult = \"fail\"\nfailing = [\"a\"]\n");
    let loaded = specgap_task::load(copy.path("")).unwrap();
    let record = loaded.synthesis().unwrap();
    assert_eq!(record.sufficiency.result, specgap_task::synthesis::SufficiencyResult::Fail);
    assert_eq!(record.sufficiency.failing, ["a"]);
    assert_eq!(record.to_toml().unwrap(), copy.read("synthesis.toml"), "what is written reads back the same");
    copy.write("synthesis.toml", "format = 2\nsource = \"src\"\n\n[sufficiency]\nresult = \"pass\"\n");
    assert_eq!(
        copy.load_error(),
        format!("{}: synthesis.toml format 2 is not supported; this specgap reads format 1", copy.path("synthesis.toml").display())
    );
    copy.write("synthesis.toml", "format = 1\nsource = \"src\"\nreviewed = true\n\n[sufficiency]\nresult = \"pass\"\n");
    assert!(copy.load_error().contains("unknown field `reviewed`"), "{}", copy.load_error());
}

#[test]
fn unknown_solution_directory_is_rejected() {
    let copy = Copy::of("req-basic");
    fs_err::rename(copy.path("solutions/gold"), copy.path("solutions/golden")).unwrap();
    assert_eq!(
        copy.load_error(),
        format!(
            "{}: unexpected entry; expected only gold/, literal/ and mutants/ under solutions/",
            copy.path("solutions/golden").display()
        )
    );
}

#[test]
fn bad_task_name_is_rejected() {
    let copy = Copy::of("req-basic");
    copy.replace("task.toml", r#"name = "fixtures/req-basic""#, r#"name = "fixtures//req basic""#);
    let err = copy.load_error();
    assert!(err.starts_with(&format!("{}:4:8: task name `fixtures//req basic` is not usable", copy.path("task.toml").display())), "{err}");
}

#[test]
fn load_error_is_typed() {
    let copy = Copy::of("req-basic");
    copy.replace("requirements.toml", "priority = 3", "priority = 0");
    match specgap_task::load(&copy.root) {
        Err(LoadError::ZeroPriority { id, .. }) => assert_eq!(id, "monthly-rate"),
        other => panic!("expected ZeroPriority, got {other:?}"),
    }
}

#[test]
fn toml_syntax_error_names_line_and_column() {
    let copy = Copy::of("req-basic");
    copy.replace("user.toml", "persona = \"Dana", "persona = Dana");
    let err = copy.load_error();
    assert!(err.starts_with(&format!("{}:1:22: unexpected key or value, expected newline", copy.path("user.toml").display())), "{err}");
}

#[test]
fn smaller_format_rules_are_enforced() {
    let cases: [(&str, &str, &str, &str); 4] = [
        ("task.toml", "timeout_sec = 60", "timeout_sec = 0", "{task}:19:15: [evaluator].timeout_sec = 0; expected at least 1 second"),
        (
            "task.toml",
            "commands = [\"python3\"]",
            "commands = [\"python3\"]\nbinds = [\"data\"]",
            "{task}: [environment].binds entry `data` is relative; expected an absolute host path",
        ),
        (
            "requirements.toml",
            "",
            "",
            "{requirements}: defines no requirement; expected at least one [[requirement]] (or no requirements.toml)",
        ),
        (
            "observations.toml",
            "failure_mode = \"charged-on-time\"",
            "failure_mode = \"fee-miscounted\"",
            "{observations}:22:1: requirement `monthly-rate` has two observations for failure mode `fee-miscounted`; expected one per failure mode",
        ),
    ];
    for (file, old, new, expected) in cases {
        let copy = Copy::of("req-basic");
        if old.is_empty() {
            copy.write(file, "# nothing yet\n");
        } else {
            copy.replace(file, old, new);
        }
        let expected = expected
            .replace("{task}", &copy.path("task.toml").display().to_string())
            .replace("{requirements}", &copy.path("requirements.toml").display().to_string())
            .replace("{observations}", &copy.path("observations.toml").display().to_string());
        assert_eq!(copy.load_error(), expected, "{file}: {new}");
    }
}

#[test]
fn bad_artifact_glob_and_duplicate_clarification_are_rejected() {
    let copy = Copy::of("delivery-basic");
    copy.replace("task.toml", r#"artifact = "plan.json""#, r#"artifact = "plan[.json""#);
    let err = copy.load_error();
    assert!(
        err.starts_with(&format!("{}:19:12: [delivery].artifact `plan[.json` is not a usable glob", copy.path("task.toml").display())),
        "{err}"
    );

    let copy = Copy::of("delivery-basic");
    copy.replace("clarifications.toml", r#"id = "all-items-today""#, r#"id = "packaging-weight""#);
    assert_eq!(
        copy.load_error(),
        format!(
            "{}:10:1: clarification target id `packaging-weight` is defined twice; ids must be unique in a task",
            copy.path("clarifications.toml").display()
        )
    );
}

#[test]
fn stray_entries_in_solutions_and_residual_are_rejected() {
    let copy = Copy::of("req-basic");
    copy.write("solutions/mutants/README", "notes\n");
    assert_eq!(
        copy.load_error(),
        format!(
            "{}: unexpected non-directory; expected one directory per requirement id under solutions/mutants/",
            copy.path("solutions/mutants/README").display()
        )
    );

    let copy = Copy::of("test-basic");
    fs_err::rename(copy.path("residual/half-done"), copy.path("residual/half done")).unwrap();
    assert_eq!(
        copy.load_error(),
        format!(
            "{}: unexpected entry; expected one directory per residual state under residual/, named with letters, digits, `.`, `_` or `-`",
            copy.path("residual/half done").display()
        )
    );
}

#[test]
fn workspace_symlink_is_not_a_workspace() {
    let copy = Copy::of("req-basic");
    fs_err::rename(copy.path("workspace"), copy.path("real-workspace")).unwrap();
    copy.symlink("real-workspace", "workspace");
    assert_eq!(copy.load_error(), format!("{}: expected a directory, found a symlink", copy.path("workspace").display()));
}
