//! `specgap import harbor`: one line per task, the summary table, the packages it writes, and
//! `specgap check` on them (Harbor's oracle check: gold scores 1, the starter 0).

use specgap_task::check::{Verdict, check_package};
use specgap_task::{SandboxJudge, Submission};

use crate::support::{dataset, import_dataset, import_one};

#[test]
fn a_dataset_imports_every_task_it_can_and_refuses_the_rest_with_reasons() {
    let (_out, outcomes) = import_dataset();
    let lines: Vec<String> = outcomes.iter().map(|o| o.line()).collect();
    assert_eq!(
        lines,
        [
            "imported app-workdir: fixtures/app-workdir (host environment, gold solutions/gold/ from solve.sh (1 files, 0 deleted), 7 not mapped, verifier trusts the workspace)",
            "imported hello-file: fixtures/hello-file (host environment, gold solutions/gold/ from solve.sh (1 files, 0 deleted), 1 not mapped, verifier trusts the workspace)",
            "imported needs-image: fixtures/needs-image (image environment, starter incomplete (the image was not built: [environment].dockerfile `environment/Dockerfile` needs a container engine (podman or docker) on PATH, and none was found; `--engine none` was given), gold none (no solution/solve.sh), 0 not mapped, verifier trusts the workspace)",
            "imported several-keys: fixtures/several-keys (host environment, gold solutions/gold/ from solve.sh (1 files, 0 deleted), 1 not mapped, verifier trusts the workspace)",
            "imported two-steps: fixtures/two-steps (host environment, gold solutions/gold/ from solve.sh (2 files, 0 deleted), 1 not mapped, verifier trusts the workspace)",
            "refused with-compose: environment/docker-compose.yaml: multi-container (compose) tasks cannot run here; the task asks for GPUs or TPUs; tests/test.sh downloads at verification time (`curl`); specgap's sandbox has no network",
        ]
    );
    // Harbor's protocol, beside the packages, as a custom protocol file specgap run reads.
    let protocol = specgap_rules::load_custom(&_out.path().join(specgap_harbor::PROTOCOL_FILE)).unwrap();
    assert_eq!(
        (protocol.conditions.clone(), protocol.starts.clone(), protocol.budgets.submissions),
        (vec!["hidden".to_string()], vec!["clean".to_string()], 1)
    );
    assert_eq!(
        specgap_harbor::summary(&outcomes),
        "| outcome | tasks |\n| --- | ---: |\n| tasks | 6 |\n| imported, host environment | 4 |\n| imported, image environment | 1 |\n| imported, starter incomplete (image not built) | 1 |\n| with a gold overlay | 4 |\n| refused | 1 |\n| not a Harbor task (no task.toml) | 0 |\n"
    );
}

#[test]
fn the_manifest_maps_task_metadata_agent_verifier_and_environment() {
    let (_out, package) = import_one("hello-file");
    let loaded = specgap_task::load(&package).unwrap();
    let manifest = loaded.manifest();
    assert_eq!(loaded.format(), 2);
    assert_eq!(manifest.task.name, "fixtures/hello-file");
    assert_eq!(manifest.task.version, "1.0.0");
    assert_eq!(manifest.task.description, "Write a greeting into a file");
    assert_eq!(manifest.task.family.as_str(), "terminal");
    assert_eq!(manifest.task.tags, ["files", "warm-up", "shell", "difficulty-easy"]);
    assert_eq!(manifest.task.subfamily.as_deref(), Some("file-operations"));
    assert_eq!(manifest.budget.wall_sec, Some(120));
    assert_eq!(manifest.evaluator.command, "python3 harbor_verify.py");
    assert_eq!(manifest.evaluator.timeout_sec, 90);
    assert!(manifest.evaluator.trusts_workspace);
    assert_eq!(manifest.environment.commands, ["bash", "python3"]);
    assert_eq!(
        loaded.instruction(),
        "Create a file named greeting.txt in your working directory. It must hold exactly one line: Hello, specgap!\n"
    );
    assert!(loaded.solutions().gold.is_some());
    let config: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(package.join("evaluator/harbor.json")).unwrap()).unwrap();
    assert_eq!(config["workdir"], "/workspace");
    assert_eq!(config["declared_outputs"], serde_json::json!(["reward.txt"]));
    assert_eq!(config["steps"], serde_json::json!([{"name": "main", "tests": "harbor/tests"}]));
    // The Harbor task is kept verbatim, privately.
    assert_eq!(
        std::fs::read(package.join("evaluator/harbor/tests/test.sh")).unwrap(),
        std::fs::read(dataset().join("hello-file/tests/test.sh")).unwrap()
    );
}

#[test]
fn what_cannot_be_mapped_is_recorded_in_the_package() {
    let (_out, package) = import_one("app-workdir");
    let notes = std::fs::read_to_string(package.join("NOTES.md")).unwrap();
    let not_mapped: Vec<&str> = notes.split("## Not mapped\n\n").nth(1).unwrap().lines().collect();
    assert_eq!(
        not_mapped,
        [
            "- [environment].cpus = 1: CPUs; specgap's sandbox limits apply",
            "- [environment].memory_mb = 2048: memory (MB); specgap's sandbox limits apply",
            "- [agent].user = \"agent\": specgap runs every command as its sandbox user (uid 1000)",
            "- [verifier].user = \"root\": specgap runs every command as its sandbox user (uid 1000)",
            "- base image python:3.12-slim: replaced by the host's programs (bash, python3)",
            "- Dockerfile `CMD [\"bash\"]`: not applied",
            "- work directory /app: the agent works in /workspace (a host-command environment); the tests see the submission at /app",
        ]
    );
    assert!(notes.contains("Trust: the verifier trusts the workspace."));
    let workspace: Vec<String> = walk(&package.join("workspace"));
    assert_eq!(workspace, ["counter.py"]);
    let loaded = specgap_task::load(&package).unwrap();
    assert_eq!(loaded.manifest().environment.env.len(), 0);
    assert_eq!(loaded.manifest().task.family.as_str(), "swe");
}

#[test]
fn an_image_task_names_its_dockerfile_workdir_and_separate_verifier_image() {
    let (_out, package) = import_one("needs-image");
    let manifest = std::fs::read_to_string(package.join("task.toml")).unwrap();
    let table: toml::Table = manifest.parse().unwrap();
    assert_eq!(table["environment"]["dockerfile"].as_str(), Some("environment/Dockerfile"));
    assert_eq!(table["environment"]["workdir"].as_str(), Some("/srv"));
    assert_eq!(table["evaluator"]["environment"]["image"].as_str(), Some("python:3.12-slim"));
    assert!(package.join("environment/Dockerfile").is_file());
    // The image keys are issue 25's: the package loads.
    let loaded = specgap_task::load(&package).unwrap();
    assert_eq!(loaded.manifest().environment.workdir(), "/srv");
    let notes = std::fs::read_to_string(package.join("NOTES.md")).unwrap();
    assert!(notes.contains("Environment: an image, because its Dockerfile is not trivial: its instruction `RUN apt-get update && apt-get install -y jq` changes the image;"), "{notes}");
}

#[test]
fn a_multi_step_task_becomes_stages_one_per_step() {
    let (_out, package) = import_one("two-steps");
    let loaded = specgap_task::load(&package).unwrap();
    // The first step's instruction opens the episode; the second is stage 2's message.
    assert_eq!(loaded.instruction(), "Create list.txt with the line: apples\n");
    let stages = loaded.stages().unwrap();
    assert_eq!(stages.score, specgap_protocol::package::StageScore::Mean);
    let summary: Vec<(String, Option<String>, Option<f64>)> =
        stages.stages.iter().map(|s| (s.name.clone(), s.instruction.clone(), s.min_reward)).collect();
    assert_eq!(
        summary,
        [
            ("create".to_string(), None, None),
            ("extend".to_string(), Some("Append the line \"pears\" to list.txt, after the lines from notes.txt.\n".to_string()), Some(1.0)),
        ]
    );
    let table: toml::Table = std::fs::read_to_string(package.join("task.toml")).unwrap().parse().unwrap();
    assert_eq!(table["stages"]["stage"][1]["instruction"].as_str(), Some("stages/extend.md"));
    // A later step's workdir is its stage's files, not the starter's (Harbor uploads it when the
    // step begins); each step's solve.sh change is its stage's gold.
    assert_eq!(walk(&package.join("workspace")), Vec::<String>::new());
    assert_eq!(walk(&package.join("stages/extend/files")), ["notes.txt"]);
    assert_eq!(table["stages"]["stage"][1]["files"].as_str(), Some("stages/extend/files"));
    assert_eq!(table["stages"]["stage"][0]["gold"].as_str(), Some("stages/create/gold"));
    assert_eq!(table["stages"]["stage"][1]["gold"].as_str(), Some("stages/extend/gold"));
    assert_eq!(walk(&package.join("stages/create/gold")), ["list.txt"]);
    assert_eq!(walk(&package.join("stages/extend/gold")), ["list.txt"]);
    assert_eq!(walk(&package.join("solutions/gold")), ["list.txt", "notes.txt"]);
    let config: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(package.join("evaluator/harbor.json")).unwrap()).unwrap();
    assert_eq!(config["strategy"], "mean");
    assert_eq!(config["steps"][1]["tests"], "harbor/steps/extend/tests");
    let notes = std::fs::read_to_string(package.join("NOTES.md")).unwrap();
    assert!(notes.contains("Steps: 2 stages (`[stages]`), one per Harbor step:"), "{notes}");
    assert!(!notes.contains("staged into the starter"), "{notes}");
    assert!(!notes.contains("min_reward"), "{notes}");
}

#[test]
fn the_evaluator_runs_only_the_step_specgap_stage_names() {
    let (_out, package) = import_one("two-steps");
    let loaded = specgap_task::load(&package).unwrap();
    let workspace = tempfile::tempdir().unwrap();
    // Step 1 passes on this workspace, step 2 fails.
    std::fs::write(workspace.path().join("list.txt"), "apples\nfigs\n").unwrap();
    let reward = |stage: Option<u32>| {
        let mut run = specgap_sandbox::EvaluatorRun::new(
            loaded.name(),
            loaded.evaluator_dir(),
            loaded.manifest().evaluator.command.clone(),
            std::time::Duration::from_secs(loaded.manifest().evaluator.timeout_sec),
            workspace.path(),
        );
        run.stage = stage;
        let view = specgap_sandbox::HostView::resolve(&loaded.manifest().environment).unwrap();
        let evaluation = specgap_sandbox::run_evaluator(&run, &view, &specgap_sandbox::SandboxConfig { enabled: true }).unwrap();
        evaluation.result.reward
    };
    assert_eq!([reward(Some(1)), reward(Some(2)), reward(None)], [Some(1.0), Some(0.0), Some(0.5)]);
}

/// Runs `check` on an imported package; returns (check, verdict) pairs.
fn check_rows(package: &std::path::Path) -> Vec<(String, Verdict)> {
    let loaded = specgap_task::load(package).unwrap();
    let judge = SandboxJudge::new(true).unwrap();
    let report = check_package(&loaded, &judge);
    report.checks.into_iter().map(|r| (r.check, r.result)).collect()
}

#[test]
fn check_proves_the_gold_scores_one_and_the_starter_zero() {
    for task in ["hello-file", "app-workdir", "two-steps", "several-keys"] {
        let (_out, package) = import_one(task);
        let rows = check_rows(&package);
        let get = |name: &str| rows.iter().find(|(c, _)| c == name).map(|(_, v)| *v);
        assert_eq!(get("gold"), Some(Verdict::Pass), "{task}: {rows:?}");
        assert_eq!(get("starter"), Some(Verdict::Pass), "{task}: {rows:?}");
        assert_eq!(get("verifier-trust"), Some(Verdict::Warn), "{task}: {rows:?}");
    }
}

#[test]
fn the_evaluator_converts_reward_txt_and_several_reward_json_keys() {
    let judge = SandboxJudge::new(true).unwrap();
    let (_out, package) = import_one("several-keys");
    let loaded = specgap_task::load(&package).unwrap();
    let gold = loaded.solutions().gold.clone().unwrap();
    let judged = specgap_task::Judge::evaluate(&judge, &loaded, Submission::Overlay("gold", &gold)).unwrap();
    assert_eq!(judged.result.reward, Some(1.0));
    // {"title": 1, "summary": 0}: no `reward` key, so their mean.
    let partial = tempfile::tempdir().unwrap();
    std::fs::write(partial.path().join("report.md"), "# Report\n").unwrap();
    let judged = specgap_task::Judge::evaluate(&judge, &loaded, Submission::Directory(partial.path())).unwrap();
    assert_eq!(judged.result.reward, Some(0.5));
    let starter = specgap_task::Judge::evaluate(&judge, &loaded, Submission::Starter).unwrap();
    assert_eq!(starter.result.reward, Some(0.0));
}

fn walk(root: &std::path::Path) -> Vec<String> {
    let mut files: Vec<String> = walkdir::WalkDir::new(root)
        .into_iter()
        .flatten()
        .filter(|e| e.file_type().is_file())
        .map(|e| e.path().strip_prefix(root).unwrap().display().to_string())
        .collect();
    files.sort();
    files
}

#[test]
fn a_directory_without_any_task_is_one_not_a_task_outcome_naming_task_toml() {
    let source = tempfile::tempdir().unwrap();
    std::fs::create_dir(source.path().join("notes")).unwrap();
    std::fs::write(source.path().join("notes/readme.txt"), "not a task\n").unwrap();
    let out = tempfile::tempdir().unwrap();
    let outcomes = specgap_harbor::import(source.path(), out.path(), &specgap_harbor::ImportOptions::default()).unwrap();
    let lines: Vec<String> = outcomes.iter().map(|o| o.line()).collect();
    assert_eq!(
        lines,
        [format!(
            "not a Harbor task {}: no task.toml in it or in any directory below it (a Harbor task is a directory with task.toml, instruction.md and tests/test.sh)",
            source.path().display()
        )]
    );
    assert!(outcomes[0].is_failure());
    assert!(!out.path().join(specgap_harbor::PROTOCOL_FILE).exists());
    assert!(specgap_harbor::summary(&outcomes).ends_with("| tasks | 0 |\n| imported, host environment | 0 |\n| imported, image environment | 0 |\n| imported, starter incomplete (image not built) | 0 |\n| with a gold overlay | 0 |\n| refused | 0 |\n| not a Harbor task (no task.toml) | 1 |\n"));
}

#[test]
fn specgap_packages_and_task_lookalikes_are_named_one_line_each_among_real_tasks() {
    let source = tempfile::tempdir().unwrap();
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    copy(&repo.join("examples/tasks/payment-retry"), &source.path().join("a-package"));
    copy(&dataset().join("hello-file"), &source.path().join("b-hello"));
    std::fs::create_dir_all(source.path().join("c-lookalike/tests")).unwrap();
    std::fs::write(source.path().join("c-lookalike/instruction.md"), "Do it.\n").unwrap();
    std::fs::write(source.path().join("c-lookalike/tests/test.sh"), "exit 0\n").unwrap();
    let out = tempfile::tempdir().unwrap();
    let options = specgap_harbor::ImportOptions { gold: false, ..Default::default() };
    let outcomes = specgap_harbor::import(source.path(), out.path(), &options).unwrap();
    let lines: Vec<String> = outcomes.iter().map(|o| o.line()).collect();
    assert_eq!(
        lines,
        [
            "refused a-package: task.toml is a specgap package manifest (format = 2, [evaluator]), not a Harbor task; run it with specgap as it is",
            "imported b-hello: fixtures/hello-file (host environment, gold not made (--no-gold), 1 not mapped, verifier trusts the workspace)",
            "not a Harbor task c-lookalike: no task.toml, though it holds instruction.md, tests/test.sh",
        ]
    );
    assert_eq!(outcomes.iter().map(|o| o.is_failure()).collect::<Vec<_>>(), [true, false, true]);
}

#[test]
fn a_missing_source_is_one_error_naming_it() {
    let out = tempfile::tempdir().unwrap();
    let missing = out.path().join("no-such-dataset");
    let error = specgap_harbor::import(&missing, &out.path().join("o"), &specgap_harbor::ImportOptions::default()).unwrap_err();
    assert_eq!(
        error.to_string(),
        format!("{}: not a directory; give a Harbor task directory (with a task.toml) or a dataset directory", missing.display())
    );
}

fn copy(from: &std::path::Path, to: &std::path::Path) {
    for entry in walkdir::WalkDir::new(from).into_iter().flatten() {
        let target = to.join(entry.path().strip_prefix(from).unwrap());
        if entry.file_type().is_dir() {
            std::fs::create_dir_all(&target).unwrap();
        } else if entry.file_type().is_file() {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

#[test]
fn a_harbor_persona_becomes_the_packages_user_profile() {
    let out = tempfile::tempdir().unwrap();
    let package = out.path().join("hello-file");
    let persona = "You are Dana, a night-shift operator who types in short bursts.\n";
    let options = specgap_harbor::ImportOptions { gold: false, persona: Some(persona.into()), ..Default::default() };
    let outcome = specgap_harbor::import_task(&dataset().join("hello-file"), &package, &options).unwrap();
    assert!(!outcome.is_failure(), "{}", outcome.line());
    let loaded = specgap_task::load(&package).unwrap();
    let profile = loaded.user().unwrap();
    assert_eq!(
        profile,
        &specgap_protocol::package::UserProfile {
            persona: "You are Dana, a night-shift operator who types in short bursts.".into(),
            understanding: "Create a file named greeting.txt in your working directory. It must hold exactly one line: Hello, specgap!"
                .into(),
            editable_surface: "Anything in the work directory the task needs changed.".into(),
            style: None,
        }
    );
    let notes = std::fs::read_to_string(package.join("NOTES.md")).unwrap();
    assert!(notes.contains("\nUser: `user.toml` holds the Harbor simulated user's persona"), "{notes}");
    // Without a persona there is no user.toml.
    let (_plain, plain) = import_one("hello-file");
    assert!(!plain.join("user.toml").exists());
}

#[test]
fn check_has_one_stage_row_per_step_and_each_stage_gold_passes_where_the_starter_fails() {
    let (_out, package) = import_one("two-steps");
    let loaded = specgap_task::load(&package).unwrap();
    let judge = SandboxJudge::new(true).unwrap();
    let rows: Vec<(String, Verdict, String)> = check_package(&loaded, &judge)
        .checks
        .into_iter()
        .filter(|r| r.check.starts_with("stage:"))
        .map(|r| (r.check, r.result, r.reason))
        .collect();
    assert_eq!(
        rows,
        [
            ("stage:create".to_string(), Verdict::Pass, "stage 1 of 2: the gold has score 1, the starter score 0".to_string()),
            ("stage:extend".to_string(), Verdict::Pass, "stage 2 of 2: the gold has score 1, the starter score 0".to_string()),
        ]
    );
}
