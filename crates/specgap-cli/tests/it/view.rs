//! `specgap view` end to end: a run made by the example replay scripts (and a hostile one;
//! model panels' ballots and a newer event kind added to its delivery episode) and a
//! plan-mode run, the viewer started as the binary over both, its refusals over raw HTTP, and the pages driven in
//! Debian's Chromium by `crates/specgap-view/tests/browser/viewer.test.mjs` (playwright-core
//! from npm, installed by `npm ci` into a cached directory under the target directory).
//! Without chromium, node or npm the browser part is skipped with a note — unless
//! `SPECGAP_REQUIRE_EXTERNAL=1` (CI), where it fails.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use serde_json::json;

use crate::support::*;

const CHROMIUM: &str = "/usr/bin/chromium";

fn required() -> bool {
    std::env::var("SPECGAP_REQUIRE_EXTERNAL").is_ok_and(|v| v == "1")
}

fn has_program(name: &str) -> bool {
    Command::new(name).arg("--version").stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok_and(|s| s.success())
}

/// Why the browser tests cannot run here, if they cannot.
fn missing_externals() -> Option<String> {
    let mut missing = Vec::new();
    if !Path::new(CHROMIUM).exists() {
        missing.push(CHROMIUM);
    }
    for program in ["node", "npm"] {
        if !has_program(program) {
            missing.push(program);
        }
    }
    (!missing.is_empty()).then(|| format!("missing {}", missing.join(", ")))
}

fn browser_src() -> PathBuf {
    repo().join("crates/specgap-view/tests/browser")
}

/// The cached directory with `node_modules` from `npm ci` (rerun when the lock file changes).
fn node_dir() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from).unwrap_or_else(|| repo().join("target"));
    let dir = target.join("view-browser");
    fs_err::create_dir_all(&dir).unwrap();
    for file in ["package.json", "viewer.test.mjs"] {
        fs_err::copy(browser_src().join(file), dir.join(file)).unwrap();
    }
    let lock = fs_err::read(browser_src().join("package-lock.json")).unwrap();
    let marker = dir.join(".installed-lock");
    if std::fs::read(&marker).ok().as_deref() != Some(lock.as_slice()) || !dir.join("node_modules/playwright-core").is_dir() {
        fs_err::write(dir.join("package-lock.json"), &lock).unwrap();
        let status = Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund", "--loglevel=error"])
            .env("PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD", "1")
            .current_dir(&dir)
            .status()
            .expect("run npm ci");
        assert!(status.success(), "npm ci failed in {}", dir.display());
        fs_err::write(&marker, &lock).unwrap();
    }
    dir
}

/// The replay agent whose outputs hold markup and `javascript:` links.
fn hostile_script(dir: &Path) -> PathBuf {
    write_script(
        dir,
        "hostile.jsonl",
        &[
            json!({"tool": "run_experiment", "arguments": {"command": "printf '%s\\n' \"<script>window.__pwned='script'</script>\" \"see [the docs](javascript:window.__pwned='link')\" '<img src=x onerror=\"window.__pwned=1\">' '<a href=\"javascript:window.__pwned=2\">click</a>'"}}),
            json!({"tool": "write_text", "arguments": {"path": "NOTES.md", "content": "<script>window.__pwned='notes'</script>\n[x](javascript:alert(1))\n"}}),
            json!({"tool": "read_text", "arguments": {"path": "NOTES.md"}}),
            json!({"tool": "submit", "arguments": {"summary": "<img src=x onerror=alert(6)>"}}),
        ],
    )
}

/// A coverage panel's ballots (one counted, one malformed) and an extraction panel's verdict
/// on the delivery episode `id`, recorded as `specgap judge` / `extract` record them, and a
/// `model_exchange` event (a cli: agent's, issue 14; a kind this build does not know) appended
/// to its trajectory.
fn panel_work(run: &Path, id: &str) {
    use specgap_store::{Ballot, BallotOutcome, Extraction, ExtractionStatus, PanelRecord, PanelUse, Store};
    let store = Store::open(run).unwrap();
    for (name, use_) in [("panel:00000000000a", PanelUse::Judge), ("panel:00000000000b", PanelUse::Extractor)] {
        store
            .record_panel(&PanelRecord {
                name: name.into(),
                use_,
                config: json!({"models": [{"model": "m"}]}),
                prompt_version: "v1".into(),
                prompt_hash: "00".into(),
            })
            .unwrap();
    }
    let ballot = |panel: &str, subject: &str, seat: u32, outcome: BallotOutcome, vote: Option<serde_json::Value>| Ballot {
        panel: panel.into(),
        subject: subject.into(),
        seat,
        model: format!("model-{seat}"),
        position: seat,
        prompt_version: "v1".into(),
        outcome,
        vote,
        request: json!([{"messages": [{"role": "user", "content": "covered?"}]}]),
        response: json!(["<script>window.__pwned='ballot'</script>"]),
        error: (outcome != BallotOutcome::Ballot).then(|| "the reply is not the json asked for".to_string()),
    };
    let target = "same-city-first";
    store
        .record_ballots(
            id,
            &[
                ballot("panel:00000000000a", target, 0, BallotOutcome::Ballot, Some(json!({"covered": true, "question_indices": [0]}))),
                ballot("panel:00000000000a", target, 1, BallotOutcome::Malformed, None),
            ],
        )
        .unwrap();
    let extraction = Extraction {
        panel: "panel:00000000000b".into(),
        k: 1,
        status: ExtractionStatus::Scored,
        score: Some(0.75),
        success: Some(false),
        valid: Some(true),
        objective: Some(3.0),
        signature: None,
        routes: 3,
        agreeing: 3,
    };
    store
        .record_extraction(
            id,
            &[ballot("panel:00000000000b", "submission:1", 0, BallotOutcome::Ballot, Some(json!({"score": 0.75})))],
            &extraction,
        )
        .unwrap();
    let path = specgap_store::trajectory_path(run, id);
    let seq = specgap_store::read_trajectory(run, id).unwrap().events.len();
    let line = format!(
        "{}\n",
        json!({"seq": seq, "ts_ms": 1, "elapsed_ms": 1, "type": "model_exchange", "model": "m", "request": {"messages": [{"role": "user", "content": "<script>window.__pwned='exchange'</script>"}]}})
    );
    let frame = zstd::bulk::compress(line.as_bytes(), 3).unwrap();
    std::fs::OpenOptions::new().append(true).open(&path).unwrap().write_all(&frame).unwrap();
}

/// A second run: one plan-mode episode whose replay agent writes its plan (a phase change).
fn plan_mode_run(dir: &Path) -> PathBuf {
    let script = write_script(
        dir,
        "plan.jsonl",
        &[
            json!({"tool": "write_plan", "arguments": {"plan": "read, then fix"}}),
            json!({"tool": "read_text", "arguments": {"path": "README.md", "limit": 1}}),
        ],
    );
    let out = dir.join("plan-run");
    let agent = format!("replay:{}", script.display());
    run_ok([
        "run".as_ref(),
        repo().join("examples/tasks/payment-retry").as_os_str(),
        "--agent".as_ref(),
        agent.as_ref(),
        "--condition".as_ref(),
        "plan".as_ref(),
        "--no-report".as_ref(),
        "--out".as_ref(),
        out.as_os_str(),
    ]);
    out
}

/// A `specgap view` child and the URL it printed.
struct Viewer {
    child: Child,
    url: String,
    /// Kept open: a closed pipe would end the viewer at its next line of output (SIGPIPE).
    _stdout: BufReader<std::process::ChildStdout>,
}

impl Drop for Viewer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_viewer(runs: &[&Path]) -> Viewer {
    let mut child = specgap().arg("view").args(runs).stdout(Stdio::piped()).stderr(Stdio::inherit()).spawn().expect("spawn specgap view");
    let mut line = String::new();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    stdout.read_line(&mut line).unwrap();
    let url = line.trim().strip_prefix("specgap view: ").unwrap_or_else(|| panic!("unexpected first line: {line:?}")).to_string();
    Viewer { child, url, _stdout: stdout }
}

/// One raw request (status and body), so the Host header can be anything.
fn raw(port: u16, target: &str, host: &str) -> (u16, String) {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(stream, "GET {target} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n").unwrap();
    let mut text = String::new();
    stream.read_to_string(&mut text).unwrap();
    let status = text.split_whitespace().nth(1).unwrap().parse().unwrap();
    let body = text.split_once("\r\n\r\n").map(|(_, b)| b.to_string()).unwrap_or_default();
    (status, body)
}

/// Whether `/proc/net/tcp` lists a listening socket on 127.0.0.1:`port` and none on another
/// address with that port.
fn listens_on_loopback_only(port: u16) -> bool {
    let table = std::fs::read_to_string("/proc/net/tcp").unwrap() + &std::fs::read_to_string("/proc/net/tcp6").unwrap_or_default();
    let suffix = format!(":{port:04X}");
    let listening: Vec<String> = table
        .lines()
        .skip(1)
        .filter_map(|l| {
            let cols: Vec<&str> = l.split_whitespace().collect();
            (cols.len() > 3 && cols[1].ends_with(&suffix) && cols[3] == "0A").then(|| cols[1].to_string())
        })
        .collect();
    !listening.is_empty() && listening.iter().all(|a| a == &format!("0100007F{suffix}"))
}

#[test]
fn view_serves_a_run_of_the_example_scripts_in_chromium() {
    let tmp = tempfile::tempdir().unwrap();
    let careful = repo().join("examples/scripts/payment-retry-careful.jsonl");
    let retail = repo().join("examples/scripts/retail-ask-first.jsonl");
    let hostile = hostile_script(tmp.path());
    let spec = |p: &Path| format!("replay:{}", p.display());
    let agents = [spec(&careful), spec(&retail), spec(&hostile), "scripted:gold".to_string()].join(",");
    let run = tmp.path().join("run");
    run_ok([
        "run".as_ref(),
        repo().join("examples/tasks").as_os_str(),
        "--agent".as_ref(),
        agents.as_ref(),
        "--condition".as_ref(),
        "partial,interact".as_ref(),
        "--jobs".as_ref(),
        "2".as_ref(),
        "--out".as_ref(),
        run.as_os_str(),
    ]);
    let delivery = episodes(&run)
        .into_iter()
        .find(|e| e.agent == label_of(&spec(&retail)) && e.task == "examples/retail-replenishment" && e.condition == "interact")
        .expect("the delivery episode")
        .id;
    panel_work(&run, &delivery);
    let plan_run = plan_mode_run(tmp.path());
    let site = tmp.path().join("site");
    let written = run_ok(["view".as_ref(), run.as_os_str(), "--static".as_ref(), site.as_os_str()]);
    assert!(String::from_utf8_lossy(&written.stdout).contains("nothing private"));

    let viewer = start_viewer(&[&run, &plan_run]);
    let parsed = viewer.url.strip_prefix("http://127.0.0.1:").expect("a loopback URL");
    let (port, token) = parsed.split_once("/?token=").unwrap();
    let port: u16 = port.parse().unwrap();
    assert_eq!(token.len(), 32);
    assert!(listens_on_loopback_only(port), "the viewer must listen on 127.0.0.1 only");
    let host = format!("127.0.0.1:{port}");
    assert_eq!(raw(port, "/api/runs", &host).0, 401);
    let (status, body) = raw(port, &format!("/api/runs?token={token}"), &format!("attacker.example:{port}"));
    assert_eq!(status, 403, "{body}");
    let (status, body) = raw(port, &format!("/api/run/0/episode/..%2F..%2F..%2Fetc%2Fpasswd/events?token={token}"), &host);
    assert_eq!(status, 404);
    assert!(!body.contains("root:"));
    let (status, body) = raw(port, &format!("/api/runs?token={token}"), &host);
    assert_eq!(status, 200);
    assert!(body.contains("\"episodes\""));

    if let Some(why) = missing_externals() {
        assert!(!required(), "SPECGAP_REQUIRE_EXTERNAL=1 and the browser tests cannot run: {why}");
        eprintln!("note: browser tests of the viewer skipped: {why}");
        return;
    }
    let node = node_dir();
    let shots = node.parent().unwrap().join("view-browser-screens");
    fs_err::create_dir_all(&shots).unwrap();
    let facts = tmp.path().join("facts.json");
    fs_err::write(
        &facts,
        json!({"agent": label_of(&spec(&careful)), "delivery_agent": label_of(&spec(&retail)), "hostile_agent": label_of(&spec(&hostile)), "task": "examples/payment-retry", "delivery_episode": delivery}).to_string(),
    )
    .unwrap();
    let output = Command::new("node")
        .arg(node.join("viewer.test.mjs"))
        .arg(&viewer.url)
        .arg(&site)
        .arg(&shots)
        .arg(&facts)
        .current_dir(&node)
        .output()
        .expect("run node");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "browser tests failed:\n{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    assert!(stdout.lines().last().is_some_and(|l| l.ends_with("passed, 0 failed")), "{stdout}");
    for shot in ["overview.png", "episodes.png", "episode.png", "compare.png", "panels.png", "hostile.png", "static-episode.png"] {
        assert!(fs_err::metadata(shots.join(shot)).unwrap().len() > 10_000, "{shot} looks blank");
    }
}

#[test]
fn view_of_a_directory_that_is_not_a_run_says_so() {
    let tmp = tempfile::tempdir().unwrap();
    let output = specgap().arg("view").arg(tmp.path()).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&output.stderr),
        format!(
            "error: starting the viewer: cannot open the run {0}: {0} is not a specgap run directory: expected run.toml and results.sqlite in it\n",
            tmp.path().display()
        )
    );
    // A directory that does not exist gets the same message (it used to be "failed to
    // canonicalize path", a fresh user's finding).
    let missing = tmp.path().join("nope");
    let output = specgap().arg("view").arg(&missing).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&output.stderr),
        format!(
            "error: starting the viewer: cannot open the run {0}: {0} is not a specgap run directory: expected run.toml and results.sqlite in it\n",
            missing.display()
        )
    );
    let output = specgap().arg("view").arg(tmp.path()).arg("--include-private").output().unwrap();
    assert_eq!(output.status.code(), Some(2), "--include-private needs --static");
}
