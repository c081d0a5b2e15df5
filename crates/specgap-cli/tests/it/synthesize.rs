//! `specgap synthesize` end to end with the bundled scripted roles on payment-retry (issue 27,
//! examples/synthesize/payment-retry/README.md's command).

use crate::support::{repo, specgap};

/// `scripted:<repo>/examples/synthesize/payment-retry/<role>.json`.
fn bundled(role: &str) -> String {
    format!("scripted:{}", repo().join(format!("examples/synthesize/payment-retry/{role}.json")).display())
}

#[test]
fn synthesize_with_the_bundled_scripted_roles_writes_the_package_and_the_journal() {
    let tmp = tempfile::tempdir().unwrap();
    let source = repo().join("examples/tasks/payment-retry");
    let [planner, builder, auditor, calibrator, implementer] = ["planner", "builder", "auditor", "calibrator", "implementer"].map(bundled);
    let out = tmp.path().join("out");

    let output = specgap()
        .arg("synthesize")
        .arg(&source)
        .arg("--out")
        .arg(&out)
        .args(["--planner", &planner, "--builder", &builder, "--auditor", &auditor, "--calibrator", &calibrator])
        .args(["--implementer", &implementer])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{stdout}{}", String::from_utf8_lossy(&output.stderr));
    let package = out.join("package");
    assert_eq!(
        stdout,
        format!("ready: {} (design 1, builder iteration 1); journal {}\n", package.display(), out.join("journal.json").display())
    );
    let journal: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out.join("journal.json")).unwrap()).unwrap();
    let stages: Vec<&str> = journal["entries"].as_array().unwrap().iter().map(|e| e["stage"].as_str().unwrap()).collect();
    assert_eq!(stages, ["planner", "builder", "acceptance", "implementer", "sufficiency", "auditor", "calibrator"]);
    assert_eq!(journal["entries"][4]["detail"], serde_json::json!({"failing": [], "failure": null}));
    assert_eq!(journal["outcome"]["status"], "ready");
    assert_eq!(journal["entries"][1]["detail"]["package"], ".");
    assert_eq!(journal["entries"][5]["detail"]["evidence"].as_array().unwrap().len(), 4);
    assert!(package.join("solutions/mutants/charge-once").is_dir());

    // `check` reports the recorded sufficiency test and the (missing) review.
    let synthesis_rows = |package: &std::path::Path| -> Vec<(String, String)> {
        let check = specgap().args(["check", "--strict", "--json"]).arg(package).output().unwrap();
        let summary: serde_json::Value = serde_json::from_slice(&check.stdout).unwrap();
        summary["tasks"][0]["checks"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["check"].as_str().unwrap().starts_with("synthesis:"))
            .map(|r| (r["check"].as_str().unwrap().to_owned(), r["result"].as_str().unwrap().to_owned()))
            .collect()
    };
    let row = |check: &str, result: &str| (check.to_owned(), result.to_owned());
    assert_eq!(synthesis_rows(&package), [row("synthesis:sufficiency", "pass"), row("synthesis:review", "warn")]);

    // Review pages, then one reviewer's sheet passing every criterion: version 1, reviewed.
    let pages = tmp.path().join("pages");
    let written = specgap().arg("synthesis-review").arg(&package).arg("--pages").arg(&pages).output().unwrap();
    assert_eq!(written.status.code(), Some(0), "{}", String::from_utf8_lossy(&written.stderr));
    let blank = std::fs::read_to_string(pages.join("sheet.csv")).unwrap();
    let filled: String = blank
        .lines()
        .enumerate()
        .map(|(i, line)| if i == 0 { format!("{line}\n") } else { format!("{},pass,\n", line.trim_end_matches(',')) })
        .collect();
    let sheet = tmp.path().join("ana.csv");
    std::fs::write(&sheet, filled).unwrap();
    let imported =
        specgap().arg("synthesis-review").arg(&package).arg("--review").arg(format!("ana={}", sheet.display())).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&imported.stdout), "review version 1: reviewed\n", "{}", String::from_utf8_lossy(&imported.stderr));
    assert_eq!(imported.status.code(), Some(0));
    assert_eq!(synthesis_rows(&package), [row("synthesis:sufficiency", "pass"), row("synthesis:review", "pass")]);

    // The same output directory is refused now that it holds a synthesis; an agent kind the
    // pipeline cannot play yet is refused by name.
    let again = specgap()
        .arg("synthesize")
        .arg(&source)
        .arg("--out")
        .arg(&out)
        .args(["--planner", &planner, "--builder", &builder, "--auditor", &auditor, "--calibrator", &calibrator])
        .output()
        .unwrap();
    assert_eq!(again.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&again.stderr),
        format!("error: the output directory {} is not empty; choose a new one\n", out.display())
    );
    let unsupported = specgap()
        .arg("synthesize")
        .arg(&source)
        .arg("--out")
        .arg(tmp.path().join("out2"))
        .args(["--planner", "replay:x.jsonl", "--builder", &builder, "--auditor", &auditor, "--calibrator", &calibrator])
        .output()
        .unwrap();
    assert_eq!(unsupported.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&unsupported.stderr),
        "error: --planner: `replay:x.jsonl` cannot play a synthesize role: a replay: script replays an episode's tool calls, and a role answers with a hand-off; for the offline path write a `scripted:<file>` role script (docs/synthesize.md \"Roles\")\n"
    );
    // A cli: role is resolved as `specgap run --agent` resolves it: it needs --model.
    let no_model = specgap()
        .arg("synthesize")
        .arg(&source)
        .arg("--out")
        .arg(tmp.path().join("out3"))
        .args(["--planner", "cli:command=true", "--builder", &builder, "--auditor", &auditor, "--calibrator", &calibrator])
        .output()
        .unwrap();
    assert_eq!(no_model.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&no_model.stderr),
        "error: --planner: a cli: agent needs --model <name>: the model its gateway forwards to http://127.0.0.1:8000/v1\n"
    );
}

#[test]
fn synthesize_runs_the_reference_agents_rollouts_and_hands_their_summaries_to_the_calibrator() {
    let tmp = tempfile::tempdir().unwrap();
    let source = repo().join("examples/tasks/payment-retry");
    let [planner, builder, auditor, calibrator] = ["planner", "builder", "auditor", "calibrator"].map(bundled);
    let reference = format!("replay:{}", repo().join("examples/scripts/payment-retry-careful.jsonl").display());
    let out = tmp.path().join("out");

    let output = specgap()
        .arg("synthesize")
        .arg(&source)
        .arg("--out")
        .arg(&out)
        .args(["--planner", &planner, "--builder", &builder, "--auditor", &auditor, "--calibrator", &calibrator])
        .args(["--reference", &reference, "--rollouts", "1"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    let journal: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out.join("journal.json")).unwrap()).unwrap();
    let stages: Vec<&str> = journal["entries"].as_array().unwrap().iter().map(|e| e["stage"].as_str().unwrap()).collect();
    assert_eq!(stages, ["planner", "builder", "acceptance", "auditor", "rollouts", "calibrator"]);
    let rollouts = &journal["entries"][4];
    assert_eq!(rollouts["status"], "ran");
    assert_eq!(rollouts["detail"]["store"], serde_json::json!(out.join("rollouts/design-1/iteration-1")));
    // payment-retry-careful (examples/scripts/README.md): Score 0.2 under full (one
    // submission), 1.0 under partial and literal (three submissions, the third all five).
    let rows: Vec<(String, u64, String, f64, bool, u64)> = rollouts["detail"]["rollouts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["condition"].as_str().unwrap().to_owned(),
                r["repeat"].as_u64().unwrap(),
                r["status"].as_str().unwrap().to_owned(),
                r["score"].as_f64().unwrap(),
                r["success"].as_bool().unwrap(),
                r["submissions"].as_u64().unwrap(),
            )
        })
        .collect();
    let row = |c: &str, score: f64, success: bool, submissions: u64| (c.to_owned(), 0, "finished".to_owned(), score, success, submissions);
    assert_eq!(rows, vec![row("full", 0.2, false, 1), row("partial", 1.0, true, 3), row("literal", 1.0, true, 3)]);
    // The Calibrator was given the same summaries, and the run store holds the episodes.
    assert_eq!(journal["entries"][5]["inputs"]["rollouts"], rollouts["detail"]["rollouts"]);
    assert!(out.join("rollouts/design-1/iteration-1/run.toml").is_file());
    assert_eq!(journal["roles"]["reference"], format!("{reference} x 1 per condition"));
}

/// With `--max-cost`, the rollouts' run gets the cost the roles left as its own `--max-cost`
/// (stored in its run.toml): scripted roles and a replay reference spend nothing, so the run
/// has the whole $0.5 and every rollout runs.
#[test]
fn synthesize_passes_the_cost_the_caps_leave_to_the_rollouts_run() {
    let tmp = tempfile::tempdir().unwrap();
    let source = repo().join("examples/tasks/payment-retry");
    let [planner, builder, auditor, calibrator] = ["planner", "builder", "auditor", "calibrator"].map(bundled);
    let reference = format!("replay:{}", repo().join("examples/scripts/payment-retry-careful.jsonl").display());
    let out = tmp.path().join("out");
    let output = specgap()
        .arg("synthesize")
        .arg(&source)
        .arg("--out")
        .arg(&out)
        .args(["--planner", &planner, "--builder", &builder, "--auditor", &auditor, "--calibrator", &calibrator])
        .args(["--reference", &reference, "--rollouts", "1", "--max-cost", "0.5", "--max-tokens", "100"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    let journal: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out.join("journal.json")).unwrap()).unwrap();
    assert_eq!(journal["entries"][4]["detail"]["rollouts"].as_array().unwrap().len(), 3);
    let run_toml = std::fs::read_to_string(out.join("rollouts/design-1/iteration-1/run.toml")).unwrap();
    assert!(run_toml.contains("max_cost_usd = 0.5"), "{run_toml}");
    assert!(run_toml.contains("max_tokens = 100\n"), "{run_toml}");
}

/// A `cli:command` Planner (specgap-agents' test agent) for `specgap synthesize`, against a
/// scripted mock model that answers its two requests (1001 + 101 and 1002 + 102 tokens): it
/// writes the bundled payment-retry brief to /handoff/handoff.json from inside its sandbox.
/// Returns the mock, the Planner's spec and the brief.
fn cli_planner_on_a_mock() -> (specgap_gateway::mock::MockUpstream, String, serde_json::Value) {
    use specgap_gateway::mock::MockUpstream;
    use specgap_gateway::mock::replies::{self, Call, Tokens};
    let planner_script: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(repo().join("examples/synthesize/payment-retry/planner.json")).unwrap()).unwrap();
    let brief = planner_script["steps"][0]["reply"].clone();
    let tokens = |n: u64| Tokens { input: 1000 + n, output: 100 + n, ..Tokens::default() };
    let write = format!("test -f /source/instruction.full.md && cat > /handoff/handoff.json <<'SPECGAP_EOF'\n{brief}\nSPECGAP_EOF");
    let mock = MockUpstream::start([
        replies::openai_chat("role-model", "step 1", &[Call::new("call-1", "bash", serde_json::json!({ "command": write }))], tokens(1)),
        replies::openai_chat("role-model", "brief written", &[], tokens(2)),
    ])
    .unwrap();
    let agent = std::fs::canonicalize(repo().join("crates/specgap-agents/tests/fixtures/cli-agent.py")).unwrap();
    (mock, format!("cli:command=python3 {}", agent.display()), brief)
}

/// `specgap synthesize` of payment-retry into `out` with `planner` on `mock` (model
/// `role-model`, key from SYNTH_TEST_KEY), the bundled scripts in the other roles, and `extra`.
fn synthesize_with_planner(
    out: &std::path::Path,
    planner: &str,
    mock: &specgap_gateway::mock::MockUpstream,
    extra: &[&std::ffi::OsStr],
) -> std::process::Output {
    let [builder, auditor, calibrator] = ["builder", "auditor", "calibrator"].map(bundled);
    specgap()
        .env("SYNTH_TEST_KEY", "sk-synth-test")
        .arg("synthesize")
        .arg(repo().join("examples/tasks/payment-retry"))
        .arg("--out")
        .arg(out)
        .args(["--planner", planner, "--builder", &builder, "--auditor", &auditor, "--calibrator", &calibrator])
        .args(["--model", "role-model", "--base-url", &format!("{}/v1", mock.url()), "--api-key-env", "SYNTH_TEST_KEY"])
        .args(extra)
        .output()
        .unwrap()
}

/// With `--max-tokens`, the rollouts' run gets the tokens the roles left as its own
/// `--max-tokens` (stored in its run.toml): the `cli:command` Planner spends 1001 + 101 and
/// 1002 + 102 tokens on its two requests, so of 3000 the rollouts have 3000 - 2206 = 794; the
/// replay reference spends none, so every rollout runs.
#[test]
fn synthesize_passes_the_tokens_the_cap_leaves_to_the_rollouts_run() {
    let tmp = tempfile::tempdir().unwrap();
    let (mock, planner, _) = cli_planner_on_a_mock();
    let reference = format!("replay:{}", repo().join("examples/scripts/payment-retry-careful.jsonl").display());
    let out = tmp.path().join("out");
    let extra = ["--reference", &reference, "--rollouts", "1", "--max-tokens", "3000"].map(std::ffi::OsStr::new);
    let output = synthesize_with_planner(&out, &planner, &mock, &extra);
    assert_eq!(output.status.code(), Some(0), "{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    let journal: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out.join("journal.json")).unwrap()).unwrap();
    let usage = &journal["usage"]["planner"];
    assert_eq!((usage["input_tokens"].as_u64(), usage["output_tokens"].as_u64()), (Some(2003), Some(203)));
    let stages: Vec<&str> = journal["entries"].as_array().unwrap().iter().map(|e| e["stage"].as_str().unwrap()).collect();
    assert_eq!(stages, ["planner", "builder", "acceptance", "auditor", "rollouts", "calibrator"]);
    assert_eq!(journal["entries"][4]["detail"]["rollouts"].as_array().unwrap().len(), 3);
    let run_toml = std::fs::read_to_string(out.join("rollouts/design-1/iteration-1/run.toml")).unwrap();
    assert!(run_toml.contains("max_tokens = 794\n"), "{run_toml}");
    assert!(!run_toml.contains("max_cost_usd"), "{run_toml}");
}

/// `specgap synthesize` with a `cli:command` Planner (specgap-agents' test agent) against a
/// scripted mock model: the planner writes the bundled brief to /handoff/handoff.json from
/// inside its sandbox, `--prices` prices its two requests, and the journal says so exactly.
#[test]
fn synthesize_plays_a_cli_planner_in_its_sandbox_and_prices_it_with_prices() {
    let tmp = tempfile::tempdir().unwrap();
    let (mock, planner, brief) = cli_planner_on_a_mock();
    let prices = tmp.path().join("prices.toml");
    std::fs::write(&prices, "[models.\"role-model\"]\ninput_per_mtok = 1.0\noutput_per_mtok = 10.0\n").unwrap();
    let out = tmp.path().join("out");
    let extra = [std::ffi::OsStr::new("--prices"), prices.as_os_str(), "--max-cost".as_ref(), "1".as_ref()];
    let output = synthesize_with_planner(&out, &planner, &mock, &extra);
    assert_eq!(output.status.code(), Some(0), "{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    let journal: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out.join("journal.json")).unwrap()).unwrap();
    let stages: Vec<&str> = journal["entries"].as_array().unwrap().iter().map(|e| e["stage"].as_str().unwrap()).collect();
    assert_eq!(stages, ["planner", "builder", "acceptance", "auditor", "calibrator"]);
    assert_eq!(journal["entries"][0]["detail"], brief);
    assert_eq!(journal["roles"]["planner"], planner);
    let usage = &journal["usage"]["planner"];
    assert_eq!(
        (usage["requests"].as_u64(), usage["input_tokens"].as_u64(), usage["output_tokens"].as_u64()),
        (Some(2), Some(2003), Some(203))
    );
    // 2003 prompt tokens at $1/Mtok + 203 completion tokens at $10/Mtok.
    assert!((usage["cost_usd"].as_f64().unwrap() - 0.004033).abs() < 1e-12, "{usage}");
    assert!(out.join("roles/planner-1/record/trajectory.jsonl").is_file());
    assert_eq!(mock.requests().len(), 2);
    assert!(mock.requests().iter().all(|r| r.header("authorization") == Some("Bearer sk-synth-test")));
}

/// `specgap view` over a synthesis's output directory (issue 27 item 1): the static site of a
/// synthesis with calibration rollouts holds its journal page (every entry in order with its
/// usage, the limits, usage per role, the outcome), each entry's hand-off, and the rollouts'
/// run store as an ordinary run; a malformed journal is refused naming the file.
#[test]
fn view_shows_a_synthesis_its_journal_entries_and_its_rollouts_run() {
    let tmp = tempfile::tempdir().unwrap();
    let source = repo().join("examples/tasks/payment-retry");
    let [planner, builder, auditor, calibrator] = ["planner", "builder", "auditor", "calibrator"].map(bundled);
    let reference = format!("replay:{}", repo().join("examples/scripts/payment-retry-careful.jsonl").display());
    let out = tmp.path().join("out");
    let output = specgap()
        .arg("synthesize")
        .arg(&source)
        .arg("--out")
        .arg(&out)
        .args(["--planner", &planner, "--builder", &builder, "--auditor", &auditor, "--calibrator", &calibrator])
        .args(["--reference", &reference, "--rollouts", "1", "--max-iterations", "2"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));

    let site = tmp.path().join("site");
    let viewed = specgap().arg("view").arg(&out).arg("--static").arg(&site).arg("--include-private").output().unwrap();
    assert_eq!(viewed.status.code(), Some(0), "{}", String::from_utf8_lossy(&viewed.stderr));
    let stdout = String::from_utf8_lossy(&viewed.stdout);
    assert!(stdout.contains(" files (3 episodes, private parts included) into "), "{stdout}");
    let read = |relative: &str| -> serde_json::Value { serde_json::from_slice(&std::fs::read(site.join(relative)).unwrap()).unwrap() };

    let page = read("data/synthesis-0/journal.json");
    let rows: Vec<(u64, String, u64, u64, u64, String, serde_json::Value, serde_json::Value)> = page["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["seq"].as_u64().unwrap(),
                e["stage"].as_str().unwrap().to_owned(),
                e["design"].as_u64().unwrap(),
                e["iteration"].as_u64().unwrap(),
                e["attempt"].as_u64().unwrap(),
                e["status"].as_str().unwrap().to_owned(),
                e["tokens"].clone(),
                e["run"].clone(),
            )
        })
        .collect();
    let null = serde_json::Value::Null;
    let row = |seq: u64, stage: &str, iteration: u64, status: &str, tokens: serde_json::Value, run: serde_json::Value| {
        (seq, stage.to_owned(), 1, iteration, 1, status.to_owned(), tokens, run)
    };
    assert_eq!(
        rows,
        vec![
            row(1, "planner", 0, "accepted", null.clone(), null.clone()),
            row(2, "builder", 1, "accepted", null.clone(), null.clone()),
            row(3, "acceptance", 1, "passed", null.clone(), null.clone()),
            row(4, "auditor", 1, "accepted", null.clone(), null.clone()),
            // A replay reference spends nothing (no usage); the entry links its run, run 0.
            row(5, "rollouts", 1, "ran", null.clone(), serde_json::json!(0)),
            row(6, "calibrator", 1, "accepted", null.clone(), null.clone()),
        ]
    );
    assert_eq!(
        page["limits"],
        serde_json::json!({"max_iterations": 2, "max_redesigns": 1, "max_retries": 2, "brief": {"requirements": 5, "min_withheld": 3}})
    );
    assert_eq!(
        page["outcome"],
        serde_json::json!({"status": "ready", "message": "the package passed every stage", "package": out.join("package")})
    );
    assert_eq!(page["rollouts"], serde_json::json!([{"design": 1, "iteration": 1, "run": 0}]));
    assert_eq!(page["total"], serde_json::json!({"tokens": 0, "cost_usd": 0.0}));
    assert_eq!(page["handoffs"], true);
    // Each entry whole, as the journal holds it.
    let journal: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out.join("journal.json")).unwrap()).unwrap();
    for (i, entry) in journal["entries"].as_array().unwrap().iter().enumerate() {
        let whole = read(&format!("data/synthesis-0/entry-{}.json", i + 1));
        for key in ["inputs", "reply", "detail"] {
            assert_eq!(whole[key], entry.get(key).cloned().unwrap_or(serde_json::Value::Null), "entry {} {key}", i + 1);
        }
    }
    // The rollouts' run store is run 0 of the site, its three episodes written as any run's.
    let runs = read("data/runs.json");
    assert_eq!(runs[0]["label"], serde_json::json!(out.join("rollouts/design-1/iteration-1").display().to_string()));
    assert_eq!(read("data/run-0/episodes.json").as_array().unwrap().len(), 3);

    // A malformed journal: refused, naming the file.
    let broken = tmp.path().join("broken");
    std::fs::create_dir_all(&broken).unwrap();
    std::fs::write(broken.join("journal.json"), "{\"format\": 1}").unwrap();
    let refused = specgap().arg("view").arg(&broken).output().unwrap();
    assert_eq!(refused.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&refused.stderr),
        format!(
            "error: starting the viewer: cannot open the synthesis {0}: {0}/journal.json is not a synthesis journal: missing field `source` at line 1 column 13\n",
            broken.display()
        )
    );
}
