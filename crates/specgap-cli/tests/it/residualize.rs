//! `specgap residualize` end to end (seed 001 §3.2, App. B): predecessors generated on the
//! bundled `interval-tree` package — replay scripts that leave a failing state, a passing
//! state, only a `__pycache__` change, a duplicate of the failing state (plus a cache file),
//! two more failing states the reviewers turn down, a run that never submits, and a chat
//! predecessor whose model server answers HTTP 500 — then filtered, reviewed from sheets
//! written here, rebuilt and verified: exactly the first failing state becomes a residual
//! state, `specgap check` accepts the package, and the funnel counts every exclusion.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::support::*;

use crate::chat::mock_server::{MockServer, Scripted};

fn interval_tree() -> PathBuf {
    repo().join("examples/tasks/interval-tree")
}

/// `cmd <<'SPECGAP_EOF'` with `body` as the here-document.
fn heredoc(cmd: &str, body: &str) -> String {
    let body = if body.ends_with('\n') { body.to_string() } else { format!("{body}\n") };
    format!("{cmd} <<'SPECGAP_EOF'\n{body}SPECGAP_EOF")
}

fn bash(command: &str) -> Value {
    json!({"tool": "bash", "arguments": {"command": command}})
}

fn submit() -> Value {
    json!({"tool": "submit", "arguments": {"summary": "done"}})
}

fn state_patch(id: &str) -> String {
    fs_err::read_to_string(interval_tree().join("residual").join(id).join("state.patch")).unwrap()
}

/// One bash call writing every file of the gold overlay (a passing state).
fn write_gold() -> String {
    let gold = interval_tree().join("solutions/gold");
    let files = ["CHANGELOG.md", "README.md", "ivtree/node.py", "ivtree/tree.py", "tests/test_chop.py"];
    let writes: Vec<String> =
        files.iter().map(|f| heredoc(&format!("cat > {f}"), &fs_err::read_to_string(gold.join(f)).unwrap())).collect();
    format!("{}\necho written", writes.join("\n"))
}

/// The predecessors, in the order of `--agent`: (name, script).
fn scripts() -> Vec<(&'static str, Vec<Value>)> {
    vec![
        // (a) the trim-only state: chop() keeps only the left piece of a straddling interval.
        ("a-failing", vec![bash(&heredoc("git apply", &state_patch("trim-only"))), submit()]),
        // (b) the gold: passes.
        ("b-passing", vec![bash(&write_gold()), submit()]),
        // (c) only a cache file.
        (
            "c-cache-only",
            vec![bash("mkdir -p ivtree/__pycache__ && printf 'cache' > ivtree/__pycache__/tree.cpython-311.pyc && echo cached"), submit()],
        ),
        // (d) the same state as (a), reached another way, plus a cache file.
        (
            "d-duplicate",
            vec![
                bash("ls"),
                bash(&format!(
                    "{}\nmkdir -p ivtree/__pycache__ && printf 'x' > ivtree/__pycache__/node.cpython-311.pyc && echo applied",
                    heredoc("git apply", &state_patch("trim-only"))
                )),
                submit(),
            ],
        ),
        // (f) fails, but only touches the README (one reviewer finds it not task-directed);
        // its text tries to inject markup into the review pages.
        ("f-readme-only", vec![bash("printf '\\n<script>alert(1)</script> chop() is planned.\\n' >> README.md && echo noted"), submit()]),
        // (g) the root-refresh state (both reviewers find the request and tests inconsistent).
        ("g-root-refresh", vec![bash(&heredoc("git apply", &state_patch("root-refresh"))), submit()]),
        // (h) changes a file and stops without submitting: an automatic submission.
        ("h-no-submit", vec![bash("echo draft > notes.txt && echo saved")]),
    ]
}

struct Generated {
    dir: PathBuf,
    agents: Vec<String>,
    server: MockServer,
}

/// Stage I: every script and `chat:mock` (HTTP 500) as predecessors on interval-tree.
fn generate(tmp: &Path) -> Generated {
    let server = MockServer::start(|_, _| Scripted::status(500, "model service unavailable"));
    let mut agents: Vec<String> = Vec::new();
    for (name, turns) in scripts() {
        let path = write_script(tmp, &format!("{name}.jsonl"), &turns);
        agents.push(format!("replay:{}", path.display()));
    }
    // (e) an infrastructure failure, between the replays.
    agents.insert(4, "chat:mock".to_string());
    let dir = tmp.join("gen");
    let output = run_ok([
        "residualize".to_string(),
        "generate".to_string(),
        interval_tree().display().to_string(),
        "--agent".to_string(),
        agents.join(","),
        "--base-url".to_string(),
        server.url.clone(),
        "--max-retries".to_string(),
        "0".to_string(),
        "--retries".to_string(),
        "0".to_string(),
        "--jobs".to_string(),
        "2".to_string(),
        "--out".to_string(),
        dir.display().to_string(),
    ]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("8 episodes: 7 finished, 0 evaluation errors, 1 infrastructure error,"), "{stderr}");
    Generated { dir, agents, server }
}

fn episode_of(dir: &Path, agent: &str) -> String {
    episodes(dir).into_iter().find(|e| e.agent == crate::support::label_of(agent)).unwrap_or_else(|| panic!("no episode of {agent}")).id
}

fn funnel_json(dir: &Path, extra: &[&str]) -> (Value, String) {
    let mut args: Vec<String> = vec!["residualize".into(), dir.display().to_string(), "--json".into()];
    args.extend(extra.iter().map(|s| s.to_string()));
    let output = run_ok(&args);
    (serde_json::from_slice(&output.stdout).expect("funnel json"), String::from_utf8_lossy(&output.stderr).into_owned())
}

/// `{reason: count}` of a stage, zero counts included.
fn exclusions(funnel: &Value, stage: usize) -> Vec<(String, u64)> {
    funnel["stages"][stage]["excluded"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["reason"].as_str().unwrap().to_string(), e["count"].as_u64().unwrap()))
        .collect()
}

fn counts(pairs: &[(&str, u64)]) -> Vec<(String, u64)> {
    pairs.iter().map(|(r, n)| (r.to_string(), *n)).collect()
}

/// The lines of a Markdown text that are not inside a fenced code block.
fn outside_code_fences(markdown: &str) -> String {
    let mut fence: Option<String> = None;
    let mut out = String::new();
    for line in markdown.lines() {
        let ticks: String = line.chars().take_while(|c| *c == '`').collect();
        match &fence {
            Some(open) if line.trim_end() == open => fence = None,
            Some(_) => {}
            None if ticks.len() >= 3 => fence = Some(ticks),
            None => {
                out.push_str(line);
                out.push('\n');
            }
        }
    }
    out
}

#[test]
fn residualize_turns_exactly_the_failing_predecessor_state_into_a_residual_state_and_counts_every_exclusion() {
    let tmp = tempfile::tempdir().unwrap();
    let generated = generate(tmp.path());
    let gen_dir = &generated.dir;
    let [a, b, c, d, e, f, g, h] = <[String; 8]>::try_from(generated.agents.clone()).unwrap();
    let ids: Vec<String> = [&a, &f, &g].iter().map(|agent| episode_of(gen_dir, agent)).collect();
    let (id_a, id_f, id_g) = (&ids[0], &ids[1], &ids[2]);

    // The chat predecessor got the generation protocol (`blind`: shell tools, nothing to ask)
    // and sent one request: --max-retries 0, --retries 0.
    let config: toml::Table = toml::from_str(&fs_err::read_to_string(gen_dir.join("run.toml")).unwrap()).unwrap();
    assert_eq!(config["conditions"], toml::Value::Array(vec!["blind".into()]));
    assert_eq!(config["starts"], toml::Value::Array(vec!["clean".into()]));
    let budget = config["budget"].as_table().unwrap();
    assert_eq!(
        (budget["turns"].as_integer(), budget["tool_calls"].as_integer(), budget["wall_sec"].as_integer()),
        (Some(1000), Some(3000), Some(28_800))
    );
    let requests = generated.server.requests();
    assert_eq!(requests.len(), 1);
    let tools: Vec<&str> = requests[0].body["tools"].as_array().unwrap().iter().map(|t| t["function"]["name"].as_str().unwrap()).collect();
    assert_eq!(tools, ["bash", "submit"]);

    // Stage II and the bundles: three candidates await review.
    let (funnel, stderr) = funnel_json(gen_dir, &[]);
    assert!(stderr.contains("3 candidate(s) await review"), "{stderr}");
    assert_eq!(funnel["stages"][0]["in"], 8);
    assert_eq!(
        exclusions(&funnel, 1),
        counts(&[
            ("not-clean-start", 0),
            ("unfinished", 0),
            ("infrastructure-failure", 1),
            ("not-declared-complete", 1),
            ("no-valid-verdict", 0),
            ("passed", 1),
            ("no-failing-tests", 0),
            ("unchanged", 1),
            ("duplicate", 1),
        ])
    );
    assert_eq!(funnel["stages"][1]["out"], 3);
    assert_eq!((funnel["stages"][2]["pending"].as_u64(), funnel["stages"][2]["out"].as_u64()), (Some(3), Some(0)));
    assert_eq!(funnel["included"], Value::Null);

    let work = gen_dir.join("residualize");
    let candidates: Vec<Value> = serde_json::from_slice(&fs_err::read(work.join("candidates.json")).unwrap()).unwrap();
    let verdict_of = |agent: &str| -> (String, String) {
        let run = candidates.iter().find(|r| r["agent"] == crate::support::label_of(agent).as_str()).unwrap();
        (run["verdict"].as_str().unwrap().to_string(), run["reason"].as_str().unwrap_or("").to_string())
    };
    assert!(candidates.iter().all(|r| r["condition"] == "blind" && r["start"] == "clean"), "generation runs blind from the clean state");
    assert_eq!(verdict_of(&a), ("candidate".into(), String::new()));
    assert_eq!(verdict_of(&b), ("excluded".into(), "passed".into()));
    assert_eq!(verdict_of(&c), ("excluded".into(), "unchanged".into()));
    assert_eq!(verdict_of(&d), ("excluded".into(), "duplicate".into()));
    assert_eq!(verdict_of(&e), ("excluded".into(), "infrastructure-failure".into()));
    assert_eq!(verdict_of(&h), ("excluded".into(), "not-declared-complete".into()));
    let duplicate = candidates.iter().find(|r| r["agent"] == crate::support::label_of(&d).as_str()).unwrap();
    assert_eq!(duplicate["detail"], format!("same final state as episode {id_a}"));

    let sheet = fs_err::read_to_string(work.join("review/sheet.csv")).unwrap();
    let sheet_ids: Vec<&str> = sheet.lines().skip(1).map(|l| l.split(',').next().unwrap()).collect();
    assert_eq!(sheet_ids, [id_g.as_str(), id_a.as_str(), id_f.as_str()]);
    assert!(sheet.starts_with("candidate,task,predecessor,task_directed,consistent,note\n"));
    // The agent's text is escaped on both pages.
    let page = fs_err::read_to_string(work.join("review").join(id_f).join("review.html")).unwrap();
    assert!(page.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    assert!(!page.contains("<script"), "review.html holds a script element");
    let markdown = fs_err::read_to_string(work.join("review").join(id_f).join("review.md")).unwrap();
    assert!(markdown.contains("+<script>alert(1)</script> chop() is planned."));
    assert!(!outside_code_fences(&markdown).contains("<script"), "markup outside a code block:\n{markdown}");
    assert_eq!(
        fs_err::read(work.join("review").join(id_a).join("state.diff")).unwrap(),
        fs_err::read(gen_dir.join("episodes").join(id_a).join("submissions/1/workspace.diff")).unwrap()
    );

    // Stage III: two reviewers. Verdicts (keep = both labels yes):
    //   a: alice keep, bob keep;  f: alice keep, bob not task-directed;  g: both inconsistent.
    let alice = tmp.path().join("alice.csv");
    let bob = tmp.path().join("bob.csv");
    fs_err::write(&alice, format!("candidate,task_directed,consistent,note\n{id_a},yes,yes,\"coherent, fails straddling chops\"\n{id_f},yes,yes,\n{id_g},yes,no,tests ask more\n")).unwrap();
    fs_err::write(&bob, format!("note,consistent,candidate,task_directed\n,YES,{id_a},yes\nreadme only,yes,{id_f},no\n,no,{id_g},Yes\n"))
        .unwrap();
    let packages = tmp.path().join("packages");
    let (funnel, stderr) = funnel_json(
        gen_dir,
        &[
            "--review",
            &format!("alice={}", alice.display()),
            "--review",
            &format!("bob={}", bob.display()),
            "--write-to",
            &packages.display().to_string(),
        ],
    );
    assert!(stderr.contains("1 residual state(s) included"), "{stderr}");
    assert_eq!(exclusions(&funnel, 2), counts(&[("not-task-directed", 1), ("task-verifier-inconsistent", 1)]));
    assert_eq!((funnel["stages"][2]["in"].as_u64(), funnel["stages"][2]["out"].as_u64()), (Some(3), Some(1)));
    assert_eq!(
        exclusions(&funnel, 3),
        counts(&[
            ("patch-failed", 0),
            ("environment-unusable", 0),
            ("no-valid-verdict", 0),
            ("no-longer-failing", 0),
            ("failing-set-changed", 0)
        ])
    );
    assert_eq!(funnel["included"], 1);
    // Reference values: sklearn.metrics.cohen_kappa_score (scikit-learn 1.9.1) on the same
    // labels — verdict ['keep','keep','drop'] vs ['keep','drop','drop'] → 0.3999999999999999;
    // task_directed ['yes','yes','yes'] vs ['yes','no','yes'] → 0.0; consistent ['yes','yes','no']
    // vs ['yes','yes','no'] → 1.0.
    let kappa = |label: &str| funnel["agreement"][label]["kappa"].as_f64().unwrap();
    assert!((kappa("verdict") - 0.399_999_999_999_999_9).abs() < 1e-12, "{}", kappa("verdict"));
    assert!((kappa("task_directed") - 0.0).abs() < 1e-12);
    assert!((kappa("consistent") - 1.0).abs() < 1e-12);
    assert!((funnel["agreement"]["verdict"]["observed"].as_f64().unwrap() - 2.0 / 3.0).abs() < 1e-12);
    assert_eq!(funnel["reviewers"], json!(["alice", "bob"]));
    let by_agent = |agent: &str| {
        let label = crate::support::label_of(agent);
        funnel["predecessors"].as_array().unwrap().iter().find(|p| p["predecessor"] == label.as_str()).unwrap().clone()
    };
    let (label_a, label_g) = (crate::support::label_of(&a), crate::support::label_of(&g));
    assert_eq!(by_agent(&a), json!({"predecessor": label_a, "runs": 1, "candidates": 1, "passed_review": 1, "included": 1}));
    assert_eq!(by_agent(&g), json!({"predecessor": label_g, "runs": 1, "candidates": 1, "passed_review": 0, "included": 0}));

    // Stage IV: exactly (a) is a state of the copy; the source package is untouched.
    let copy = packages.join("examples/interval-tree");
    let mut states: Vec<String> =
        fs_err::read_dir(copy.join("residual")).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    states.sort();
    let mut expected = vec![id_a.clone(), "root-refresh".to_string(), "trim-only".to_string()];
    expected.sort();
    assert_eq!(states, expected);
    assert_eq!(fs_err::read_dir(interval_tree().join("residual")).unwrap().count(), 2);
    assert_eq!(
        fs_err::read(copy.join("residual").join(id_a).join("state.patch")).unwrap(),
        fs_err::read(gen_dir.join("episodes").join(id_a).join("submissions/1/workspace.diff")).unwrap(),
        "state.patch is the stored workspace.diff, byte for byte"
    );
    let meta: toml::Table = toml::from_str(&fs_err::read_to_string(copy.join("residual").join(id_a).join("meta.toml")).unwrap()).unwrap();
    assert_eq!(meta["predecessor"].as_str(), Some(label_a.as_str()), "a package names its predecessor without the machine's path");
    assert_eq!(meta["declared_complete"].as_bool(), Some(true));
    assert_eq!(meta["steps"].as_integer(), Some(2));
    assert_eq!(meta["failing_tests"], toml::Value::Array(vec!["chop_splits_straddling".into(), "random_chop_matches_model".into()]));
    assert_eq!(meta["left_out"], toml::Value::Array(vec![]));
    assert!(meta["notes"].as_str().unwrap().contains(&format!("episode {id_a}")));

    let check = specgap().arg("check").arg(&packages).output().unwrap();
    let table = String::from_utf8_lossy(&check.stdout);
    assert!(check.status.success(), "{table}");
    assert!(table.contains(&format!("residual:{id_a}  ")) && table.contains("1 checked, 0 failed"), "{table}");

    // Resumed with nothing left to do: the same funnel, the build record untouched.
    let build = fs_err::read(work.join("build.json")).unwrap();
    let (again, _) = funnel_json(gen_dir, &[]);
    assert_eq!(again, funnel);
    assert_eq!(fs_err::read(work.join("build.json")).unwrap(), build);
    // Other sheets cannot replace the ones the build used.
    fs_err::write(&bob, format!("candidate,task_directed,consistent\n{id_a},yes,yes\n{id_f},yes,yes\n{id_g},yes,yes\n")).unwrap();
    let refused = specgap()
        .args([
            "residualize".as_ref(),
            gen_dir.as_os_str(),
            "--review".as_ref(),
            format!("alice={}", alice.display()).as_ref(),
            "--review".as_ref(),
            format!("bob={}", bob.display()).as_ref(),
        ] as [&std::ffi::OsStr; 6])
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("states were already built from the reviews imported"),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );
}

#[test]
fn residualize_names_what_is_missing_from_its_flags() {
    let tmp = tempfile::tempdir().unwrap();
    let cases: [(&[&str], &str); 6] = [
        (
            &["residualize", "generate", "--agent", "scripted:gold", "--start", "residual:all", "--out", "o"],
            "error: predecessors start from the clean state; residualize generate takes no --start",
        ),
        (
            &["residualize", "generate", "--agent", "scripted:gold"],
            "error: name the run directory of the predecessors: residualize generate ... --out RUN",
        ),
        (&["residualize"], "error: give the pipeline directory: specgap residualize DIR"),
        (
            &["residualize", "DIR", "--review", "alice"],
            "error: --review takes NAME=SHEET.csv (the reviewer's name and their filled sheet), not `alice`",
        ),
        (
            &["residualize", "DIR", "--review", "=a.csv"],
            "error: --review takes NAME=SHEET.csv with a reviewer name and a file, not `=a.csv`",
        ),
        (&["residualize", "DIR"], "is not a run directory and no --from RUN was given"),
    ];
    for (args, message) in cases {
        let output = specgap().current_dir(tmp.path()).args(args).output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(message), "{args:?}: {stderr}");
    }
    let both = specgap().current_dir(tmp.path()).args(["residualize", "DIR", "--write-to", "p", "--in-place"]).output().unwrap();
    assert_eq!(both.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&both.stderr).contains("cannot be used with"), "{}", String::from_utf8_lossy(&both.stderr));
}
