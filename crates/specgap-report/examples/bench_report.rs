//! Benchmark of `specgap report` on a synthetic store (BENCHMARKS.md, "Reports").
//!
//! ```text
//! cargo run --release -p specgap-report --example bench_report -- /tmp/specgap-bench 100000
//! ```
//!
//! With a third argument, a directory, the first pass's Markdown, HTML and JSON reports are
//! written there (`report.md`, `report.html`, `report.json`): two builds' reports of one
//! store can then be compared byte for byte (`cmp`), as every speed-up must leave them.
//!
//! The first call writes the store (with the store's writer API) and its task packages under
//! the directory; later calls reuse it. Each call then times reading the run (the first read
//! also runs the offline judge and records its verdicts), building the report and rendering
//! Markdown, HTML and JSON, and prints the timings and the resident memory after loading, after
//! the measures and at its peak (`/proc/self/status`). `bench/report/interleave.sh` runs two
//! builds of this example in alternation and checks that their reports are identical.
//!
//! Composition, cycled until the episode count is reached: 4 agents × (20 requirement-scored
//! tasks under partial / full / literal with 1–4 submissions; 10 test-scored tasks from a clean
//! start and two residual states, with per-test results, diffs and a short trajectory; 20
//! delivery cases with 3 clarification targets under interact (2 questions) and hidden).
//!
//! The data repeat with period [`TEMPLATE_REPEATS`] (every value derives from the repeat modulo
//! 10), so a store of more episodes than that writes the first 10 repeats with the writer API
//! and copies the rest from them: each later episode's rows are its template's rows under its
//! own key and id, and its files are hard links to the template's (only the files a report
//! reads: those of test-scored episodes; directories cost a disk block each). `--check-copy`
//! writes one store both ways and compares their reports byte for byte.

use std::path::{Path, PathBuf};
use std::time::Instant;

use serde_json::json;
use specgap_protocol::event::{EventKind, ToolCall};
use specgap_protocol::package::Family;
use specgap_protocol::result::{EvalResult, Scored, ScoringKind};
use specgap_protocol::run::{EndReason, EpisodeKey, RunConfig};
use specgap_report::render::{render_html, render_json, render_markdown};
use specgap_report::{ReportOptions, RunData, build_report};
use specgap_store::{EpisodeMeta, EpisodeSummary, Question, Status, Store, SubmissionRecord};

const AGENTS: [&str; 4] = ["model-a", "model-b", "model-c", "model-d"];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let root = PathBuf::from(args.next().unwrap_or_else(|| "/tmp/specgap-bench".into()));
    let episodes: usize = args.next().map_or(Ok(100_000), |n| n.parse())?;
    // Where to write the first pass's reports, to compare two builds byte for byte.
    let keep = args.next().map(PathBuf::from);
    if episodes == 0 {
        return check_copy(&root);
    }
    let run_dir = root.join(format!("run-{episodes}"));
    if !run_dir.join("run.toml").exists() {
        let started = Instant::now();
        generate(&root, &run_dir, episodes, true)?;
        println!("generated {episodes} episodes in {:.1} s", started.elapsed().as_secs_f64());
    }
    for pass in 1..=2 {
        let t0 = Instant::now();
        let run = RunData::load(&run_dir)?;
        let t1 = Instant::now();
        let rss_loaded = memory("VmRSS");
        let report = build_report(std::slice::from_ref(&run), &ReportOptions::default())?;
        let t2 = Instant::now();
        let rss_measured = memory("VmRSS");
        let md = render_markdown(&report, "bench");
        let t3 = Instant::now();
        let html = render_html(&report, "bench");
        let t4 = Instant::now();
        let json = render_json(&report)?;
        let t5 = Instant::now();
        if let (1, Some(dir)) = (pass, &keep) {
            fs_err::create_dir_all(dir)?;
            for (name, text) in [("report.md", &md), ("report.html", &html), ("report.json", &json)] {
                fs_err::write(dir.join(name), text)?;
            }
        }
        println!(
            "pass {pass}: {} episodes, judged now {}; load {:.3} s, measures {:.3} s, markdown {:.3} s ({} B), html {:.3} s ({} B), json {:.3} s ({} B); total {:.3} s",
            run.rows.episodes.len(),
            run.judge.judged,
            (t1 - t0).as_secs_f64(),
            (t2 - t1).as_secs_f64(),
            (t3 - t2).as_secs_f64(),
            md.len(),
            (t4 - t3).as_secs_f64(),
            html.len(),
            (t5 - t4).as_secs_f64(),
            json.len(),
            (t5 - t0).as_secs_f64(),
        );
        println!(
            "pass {pass}: resident after loading {rss_loaded} MB, after the measures {rss_measured} MB, peak so far {} MB",
            memory("VmHWM")
        );
    }
    Ok(())
}

/// A memory figure of this process from `/proc/self/status` (`VmRSS`: resident now; `VmHWM`:
/// the peak resident so far), in MB (10^6 bytes); 0 where it cannot be read.
fn memory(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kb = status
        .lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .unwrap_or(0);
    kb * 1024 / 1_000_000
}

fn write(path: &Path, text: &str) -> std::io::Result<()> {
    fs_err::create_dir_all(path.parent().unwrap_or(Path::new(".")))?;
    fs_err::write(path, text)
}

/// Writes a minimal package; returns its path.
fn package(suite: &Path, name: &str, extra: &[(&str, String)], delivery: bool) -> std::io::Result<PathBuf> {
    let dir = suite.join(name.replace('/', "_"));
    let delivery = if delivery { "\n[delivery]\nreference = 10.0\ndirection = \"max\"\nartifact = \"plan.json\"\n" } else { "" };
    write(
        &dir.join("task.toml"),
        &format!(
            "format = 1\n\n[task]\nname = \"{name}\"\nversion = \"1.0.0\"\ndescription = \"synthetic\"\nfamily = \"swe\"\n\n[environment]\ncommands = []\n\n[evaluator]\ncommand = \"true\"\ntimeout_sec = 5\n{delivery}"
        ),
    )?;
    write(&dir.join("instruction.md"), "Do the work.\n")?;
    write(&dir.join("evaluator/judge.sh"), "true\n")?;
    write(&dir.join("workspace/src/a.py"), "base\n")?;
    for (path, text) in extra {
        write(&dir.join(path), text)?;
    }
    Ok(dir)
}

fn patch(lines: &[&str]) -> String {
    let mut text = format!("diff --git a/src/a.py b/src/a.py\n--- a/src/a.py\n+++ b/src/a.py\n@@ -1 +1,{} @@\n base\n", lines.len() + 1);
    for l in lines {
        text.push_str(&format!("+{l}\n"));
    }
    text
}

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Requirement,
    Test,
    Delivery,
}

/// The data's period in repeats (the `seed` of [`generate`] is a function of `repeat % 10`).
const TEMPLATE_REPEATS: u32 = 10;

/// Writes the 10,400-episode store twice under ROOT/check — every episode with the writer API,
/// and the first 10 repeats with it plus copies — and fails unless their reports (Markdown,
/// HTML, JSON) are identical but for the directory's name. Run as `bench_report ROOT 0`.
fn check_copy(root: &Path) -> Result<(), Box<dyn std::error::Error>> {
    let episodes = 2 * 520 * TEMPLATE_REPEATS as usize;
    let mut outputs = Vec::new();
    for copy in [false, true] {
        let dir = root.join(format!("check-{copy}"));
        let run_dir = dir.join("run");
        if !run_dir.join("run.toml").exists() {
            generate(&dir, &run_dir, episodes, copy)?;
        }
        let run = RunData::load(&run_dir)?;
        let report = build_report(std::slice::from_ref(&run), &ReportOptions::default())?;
        // The reports name their run directory and task paths: the one difference allowed.
        let same_dir = |text: String| text.replace(&dir.display().to_string(), "DIR");
        outputs.push((
            same_dir(render_markdown(&report, "bench")),
            same_dir(render_html(&report, "bench")),
            same_dir(render_json(&report)?),
        ));
    }
    if outputs[0] != outputs[1] {
        return Err("the copied store's report differs from the written store's".into());
    }
    println!("copied and written stores of {episodes} episodes give identical reports");
    Ok(())
}

fn generate(root: &Path, run_dir: &Path, episodes: usize, copy: bool) -> Result<(), Box<dyn std::error::Error>> {
    let suite = root.join("suite");
    let mut tasks: Vec<(String, Kind, String, String)> = Vec::new();
    for i in 0..20 {
        tasks.push((format!("bench/req-{i:02}"), Kind::Requirement, String::new(), format!("/nonexistent/req-{i}")));
    }
    for i in 0..10 {
        let name = format!("bench/test-{i:02}");
        let mut extra = vec![("solutions/gold/src/a.py", "base\nfixed\n".to_string()), ("solutions/gold/src/b.py", "b\n".to_string())];
        for s in ["s1", "s2"] {
            extra.push((if s == "s1" { "residual/s1/state.patch" } else { "residual/s2/state.patch" }, patch(&["l1", "l2", "l3"])));
            extra.push((
                if s == "s1" { "residual/s1/meta.toml" } else { "residual/s2/meta.toml" },
                format!("predecessor = \"pred-{s}\"\ndeclared_complete = true\nsteps = 10\nfailing_tests = [\"t1\"]\nnotes = \"\"\n"),
            ));
        }
        let path = package(&suite, &name, &extra, false)?;
        tasks.push((name, Kind::Test, String::new(), path.display().to_string()));
    }
    for i in 0..20 {
        let name = format!("bench/case-{i:02}");
        let targets = "[[target]]\nid = \"weight\"\ndescription = \"Whether the weight limit counts the box\"\nissue_type = \"missing\"\ndomain = \"constraint-rule\"\nanswer = \"yes\"\ntriggers = [\"Does the weight limit include the box?\"]\n\n[[target]]\nid = \"today\"\ndescription = \"Whether every order ships today\"\nissue_type = \"ambiguous\"\ndomain = \"data-semantics\"\nanswer = \"yes\"\ntriggers = [\"Can some orders wait until tomorrow?\"]\n\n[[target]]\nid = \"currency\"\ndescription = \"Which currency the report uses\"\nissue_type = \"missing\"\ndomain = \"scoring-convention\"\nanswer = \"EUR\"\ntriggers = [\"Which currency should amounts use?\"]\n".to_string();
        let extra = vec![
            ("clarifications.toml", targets),
            ("user.toml", "persona = \"customer\"\nunderstanding = \"all\"\neditable_surface = \"all\"\n".to_string()),
            ("information.md", "rules\n".to_string()),
        ];
        let path = package(&suite, &name, &extra, true)?;
        tasks.push((name, Kind::Delivery, String::new(), path.display().to_string()));
    }
    let mut refs = String::new();
    for (name, _, hash, path) in &mut tasks {
        *hash = match specgap_task::load(path.as_str()) {
            Ok(p) => p.hash().to_string(),
            Err(_) => "00".to_string(),
        };
        refs.push_str(&format!("[[tasks]]\nname = \"{name}\"\nhash = \"{hash}\"\npath = \"{path}\"\n\n"));
    }
    let agents: String = AGENTS.iter().map(|a| format!("[[agents]]\nspec = \"{a}\"\nhash = \"{a}\"\nconfig = {{}}\n\n")).collect();
    let config: RunConfig = toml::from_str(&format!(
        "specgap_version = \"0.1.0\"\nseed = 1\nrepeats = 1\nretries = 0\nsandbox = false\nconditions = [\"partial\", \"full\", \"literal\", \"interact\", \"hidden\"]\nstarts = [\"clean\", \"residual:all\"]\n\n{refs}{agents}[[users]]\nspec = \"relay\"\nhash = \"u\"\nconfig = {{}}\n"
    ))?;
    let store = Store::create(run_dir, &config)?;
    let mut written = 0usize;
    let mut repeat = 0u32;
    while written < episodes {
        if copy && repeat == TEMPLATE_REPEATS {
            drop(store);
            return copy_repeats(run_dir, episodes - written);
        }
        for (t, (name, kind, hash, _)) in tasks.iter().enumerate() {
            for (a, agent) in AGENTS.iter().enumerate() {
                let plans: Vec<(&str, &str)> = match kind {
                    Kind::Requirement => vec![("partial", "clean"), ("full", "clean"), ("literal", "clean")],
                    Kind::Test => vec![("partial", "clean"), ("partial", "residual:s1"), ("partial", "residual:s2")],
                    Kind::Delivery => vec![("interact", "clean"), ("hidden", "clean")],
                };
                for (condition, start) in plans {
                    if written == episodes {
                        return Ok(());
                    }
                    let seed = (t * 31 + a * 7 + repeat as usize * 13) % 10;
                    let key = EpisodeKey {
                        task: name.clone(),
                        task_hash: hash.clone(),
                        agent: agent.to_string(),
                        agent_hash: agent.to_string(),
                        user_hash: "u".into(),
                        condition: condition.into(),
                        start: start.into(),
                        repeat,
                        seed: 1,
                    };
                    episode(&store, &key, *kind, seed)?;
                    written += 1;
                }
            }
        }
        repeat += 1;
    }
    Ok(())
}

/// Adds `more` episodes to the store in `run_dir`, repeats 10, 11, … in the order [`generate`]
/// writes them, each a copy of the episode of repeat `r % 10` with the same task, agent,
/// condition and start.
fn copy_repeats(run_dir: &Path, more: usize) -> Result<(), Box<dyn std::error::Error>> {
    let mut db = rusqlite::Connection::open(run_dir.join("results.sqlite"))?;
    let tx = db.transaction()?;
    let templates = template_keys(&tx)?;
    let per_repeat = templates.len() / TEMPLATE_REPEATS as usize;
    let copiers = row_copiers(&tx)?;
    let mut episode_copy = tx.prepare(&copy_sql(&tx, "episodes", "id", Some("repeat"))?)?;
    let mut statements: Vec<rusqlite::Statement<'_>> = copiers.iter().map(|sql| tx.prepare(sql)).collect::<Result<_, _>>()?;
    for n in 0..more {
        let repeat = TEMPLATE_REPEATS + (n / per_repeat) as u32;
        let (old_id, key, scoring) = &templates[(repeat % TEMPLATE_REPEATS) as usize * per_repeat + n % per_repeat];
        let new_id = EpisodeKey { repeat, ..key.clone() }.id();
        episode_copy.execute(rusqlite::params![new_id, old_id, repeat])?;
        for statement in &mut statements {
            statement.execute(rusqlite::params![new_id, old_id])?;
        }
        if scoring == "test" {
            link_tree(&run_dir.join("episodes").join(old_id), &run_dir.join("episodes").join(&new_id))?;
        }
    }
    drop(statements);
    drop(episode_copy);
    tx.commit()?;
    Ok(())
}

/// The stored episodes in the order they were written: id, key, scoring kind.
fn template_keys(db: &rusqlite::Connection) -> rusqlite::Result<Vec<(String, EpisodeKey, String)>> {
    let mut statement = db.prepare(
        "SELECT id, task, task_hash, agent, agent_hash, user_hash, condition, start, repeat, seed, scoring_kind FROM episodes ORDER BY rowid",
    )?;
    let rows = statement.query_map([], |row| {
        let key = EpisodeKey {
            task: row.get(1)?,
            task_hash: row.get(2)?,
            agent: row.get(3)?,
            agent_hash: row.get(4)?,
            user_hash: row.get(5)?,
            condition: row.get(6)?,
            start: row.get(7)?,
            repeat: row.get(8)?,
            seed: row.get::<_, String>(9)?.parse().unwrap_or(1),
        };
        Ok((row.get(0)?, key, row.get(10)?))
    })?;
    rows.collect()
}

/// One `INSERT … SELECT` per table with an `episode` column, copying an episode's rows
/// (`?2`) under another id (`?1`).
fn row_copiers(db: &rusqlite::Connection) -> rusqlite::Result<Vec<String>> {
    let mut statement = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name != 'episodes'")?;
    let tables: Vec<String> = statement.query_map([], |row| row.get(0))?.collect::<Result<_, _>>()?;
    let mut copiers = Vec::new();
    for table in tables {
        if columns(db, &table)?.iter().any(|c| c == "episode") {
            copiers.push(copy_sql(db, &table, "episode", None)?);
        }
    }
    Ok(copiers)
}

/// `INSERT INTO t (…) SELECT ?1, … FROM t WHERE key_column = ?2`, with `?3` for `override_column`.
fn copy_sql(db: &rusqlite::Connection, table: &str, key_column: &str, override_column: Option<&str>) -> rusqlite::Result<String> {
    let columns = columns(db, table)?;
    let values: Vec<String> = columns
        .iter()
        .map(|c| {
            if c == key_column {
                "?1".to_string()
            } else if Some(c.as_str()) == override_column {
                "?3".to_string()
            } else {
                format!("\"{c}\"")
            }
        })
        .collect();
    let names: Vec<String> = columns.iter().map(|c| format!("\"{c}\"")).collect();
    Ok(format!("INSERT INTO \"{table}\" ({}) SELECT {} FROM \"{table}\" WHERE \"{key_column}\" = ?2", names.join(", "), values.join(", ")))
}

fn columns(db: &rusqlite::Connection, table: &str) -> rusqlite::Result<Vec<String>> {
    let mut statement = db.prepare(&format!("SELECT name FROM pragma_table_info('{table}')"))?;
    statement.query_map([], |row| row.get(0))?.collect()
}

/// Recreates the tree `from` at `to` with hard links to its files.
fn link_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    for entry in walkdir::WalkDir::new(from) {
        let entry = entry.map_err(std::io::Error::other)?;
        let target = to.join(entry.path().strip_prefix(from).map_err(std::io::Error::other)?);
        if entry.file_type().is_dir() {
            fs_err::create_dir_all(&target)?;
        } else {
            fs_err::hard_link(entry.path(), &target)?;
        }
    }
    Ok(())
}

fn result(json: serde_json::Value) -> Result<EvalResult, serde_json::Error> {
    serde_json::from_value(json)
}

fn episode(store: &Store, key: &EpisodeKey, kind: Kind, seed: usize) -> Result<(), Box<dyn std::error::Error>> {
    let scoring = match kind {
        Kind::Requirement => ScoringKind::Requirement,
        Kind::Test => ScoringKind::Test,
        Kind::Delivery => ScoringKind::Delivery,
    };
    let meta = EpisodeMeta { user: "relay".into(), family: Family::Swe, scoring_kind: scoring };
    let mut w = store.begin_episode(key, &meta)?;
    let mut subs: Vec<(f64, bool, EvalResult, Option<String>, String)> = Vec::new();
    match kind {
        Kind::Requirement => {
            let n = if key.condition == "full" { 1 } else { 1 + seed % 4 };
            for k in 0..n {
                let passed = ((seed + k) % 5).min(4) + usize::from(k + 1 == n && seed.is_multiple_of(3));
                let verdicts: serde_json::Map<String, serde_json::Value> =
                    (0..5).map(|r| (format!("r{r}"), json!({ "pass": r < passed }))).collect();
                let failing = (passed < 5).then(|| format!("r{passed}"));
                subs.push((
                    passed as f64 / 5.0,
                    passed == 5,
                    result(json!({ "version": 1, "requirements": verdicts }))?,
                    failing,
                    String::new(),
                ));
            }
        }
        Kind::Test => {
            if key.start != "clean" {
                w.write_start_result(&result(json!({ "version": 1, "tests": { "t1": "fail", "t2": "fail", "t3": "pass" } }))?)?;
                for (turn, command) in [(1, "git status"), (2, "cat src/a.py")] {
                    let id = format!("call-{turn}");
                    w.event(EventKind::AgentTurn {
                        turn,
                        text: None,
                        tool_calls: vec![ToolCall { id: id.clone(), tool: "bash".into(), arguments: json!({ "command": command }) }],
                        usage: None,
                    })?;
                    w.event(EventKind::ToolResult { call_id: id, tool: "bash".into(), output: "base\nl1\n".into(), is_error: false })?;
                }
            }
            let t1 = if seed.is_multiple_of(2) { "pass" } else { "fail" };
            let t2 = if seed.is_multiple_of(3) { "pass" } else { "fail" };
            let ok = t1 == "pass" && t2 == "pass";
            let diff = patch(if seed.is_multiple_of(2) { &["l1", "l2", "x"] } else { &["l1"] });
            subs.push((
                if ok { 1.0 } else { 0.5 },
                ok,
                result(json!({ "version": 1, "tests": { "t1": t1, "t2": t2, "t3": "pass" } }))?,
                None,
                diff,
            ));
        }
        Kind::Delivery => {
            if key.condition == "interact" {
                for (turn, text) in
                    [(1, "Does the weight limit include the box? Which carrier?"), (3, "Can some orders wait until tomorrow?")]
                {
                    w.record_question(&Question { turn, text: text.into(), answer: "yes".into(), matched_targets: vec![] })?;
                }
            }
            let valid = !seed.is_multiple_of(4);
            let score = if valid { 0.1 * seed as f64 } else { 0.0 };
            subs.push((score, score >= 1.0, result(json!({ "version": 1, "delivery": { "valid": valid, "objective": score * 10.0, "violations": [], "signature": if valid { "none" } else { "constraint" } } }))?, None, String::new()));
        }
    }
    for (k, (score, success, res, failing, diff)) in subs.iter().enumerate() {
        let record = SubmissionRecord {
            automatic: false,
            agent_declared: true,
            result: Some(res.clone()),
            scored: Some(Scored { kind: scoring, score: *score, success: *success }),
            failing_requirement: failing.clone(),
            error: None,
            diff: diff.clone().into_bytes(),
        };
        w.write_submission(k as u32 + 1, &record)?;
    }
    let success = subs.last().is_some_and(|s| s.1);
    let end = if success {
        EndReason::Accepted
    } else if subs.len() == 4 {
        EndReason::SubmissionBudget
    } else {
        EndReason::Submitted
    };
    w.finish(EpisodeSummary {
        status: Status::Finished,
        end_reason: Some(end),
        turns: 10 + (seed as u32),
        tool_calls: 20,
        wall_ms: 1000,
        error: None,
    })?;
    Ok(())
}
