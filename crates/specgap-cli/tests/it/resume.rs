//! A run killed (SIGKILL) or interrupted (SIGINT) mid-way and resumed gives the same results
//! as an uninterrupted run of the same seed, and leaves no sandboxed process behind.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::Duration;

use serde_json::json;
use specgap_store::Status;

use crate::support::*;

/// A replay agent whose episodes each hold a sandboxed `sleep` whose command line carries
/// `marker`, so a kill always lands while some sandboxed process runs.
fn slow_script(dir: &Path, marker: &str) -> PathBuf {
    write_script(
        dir,
        "slow.jsonl",
        &[
            json!({"tool": "run_experiment", "arguments": {"command": format!("sleep 2; echo {marker}")}}),
            json!({"tool": "write_text", "arguments": {"path": "notes.txt", "content": "looked around\n"}}),
            json!({"tool": "submit", "arguments": {"summary": "done"}}),
        ],
    )
}

fn run_args(script: &Path, out: &Path) -> Vec<OsString> {
    let agents = format!("scripted:gold,replay:{}", script.display());
    [
        OsStr::new("run"),
        task_fixture("req-basic").as_os_str(),
        OsStr::new("--agent"),
        OsStr::new(&agents),
        OsStr::new("--condition"),
        OsStr::new("partial,full"),
        OsStr::new("--repeats"),
        OsStr::new("2"),
        OsStr::new("--jobs"),
        OsStr::new("2"),
        OsStr::new("--seed"),
        OsStr::new("11"),
        OsStr::new("--out"),
        out.as_os_str(),
        OsStr::new("--no-report"),
    ]
    .iter()
    .map(|s| s.to_os_string())
    .collect()
}

/// Starts the run in the background and waits until at least one episode has finished and a
/// sandboxed process of a later one is running.
/// The runner's stderr goes to `stderr_file` (a pipe nobody reads could fill up and stall it).
fn start_and_wait(script: &Path, out: &Path, marker: &str, stderr_file: &Path) -> Child {
    let stderr = std::fs::File::create(stderr_file).unwrap();
    let mut child = specgap().args(run_args(script, out)).stdout(Stdio::null()).stderr(stderr).spawn().unwrap();
    let ready = wait_for(Duration::from_secs(120), || finished_count(out) >= 1 && !processes_with(marker).is_empty());
    if !ready {
        let _ = child.kill();
        let _ = child.wait();
        panic!(
            "the run never reached a finished episode with a sandboxed process running; episodes {:#?}\nstderr:\n{}",
            episodes(out),
            std::fs::read_to_string(stderr_file).unwrap_or_default()
        );
    }
    child
}

fn assert_resume_matches(script: &Path, reference: &Path, out: &Path) {
    run_ok([OsStr::new("run"), OsStr::new("--resume"), out.as_os_str(), OsStr::new("--jobs"), OsStr::new("2")]);
    let rows = episodes(out);
    assert_eq!(rows.len(), 8);
    assert!(rows.iter().all(|e| e.status == Status::Finished), "{rows:#?}");
    assert!(rows.iter().any(|e| e.attempts == 2), "some episode was cut mid-way and restarted");
    let _ = script;
    let (expected, got) = (tables_without_attempts(reference), tables_without_attempts(out));
    for (table, rows) in &expected {
        assert_eq!(Some(rows), got.get(table), "table {table} of the resumed run differs");
    }
    assert_eq!(expected.len(), got.len());
}

#[test]
fn sigkill_then_resume_equals_an_uninterrupted_run_and_nothing_survives() {
    let tmp = tempfile::tempdir().unwrap();
    let marker = marker("sigkill");
    let script = slow_script(tmp.path(), &marker);
    let reference = tmp.path().join("reference");
    run_ok(run_args(&script, &reference));
    assert_eq!(episodes(&reference).len(), 8);

    let out = tmp.path().join("killed");
    let mut child = start_and_wait(&script, &out, &marker, &tmp.path().join("stderr.txt"));
    // Stopped, it cannot finish its last episodes and release the store before the second
    // runner looks (on a loaded machine it did: CI of 2026-12-07); SIGKILL ends it stopped.
    send_signal(child.id(), libc::SIGSTOP);
    // While it runs, a second runner on the same store is refused, and `show` raises no alarm.
    let second = specgap().args([OsStr::new("run"), OsStr::new("--resume"), out.as_os_str()]).output().unwrap();
    assert_eq!(second.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&second.stderr),
        format!(
            "error: another specgap process (pid {}) is running episodes into {}; wait for it to end (or stop it) before running or resuming this run\n",
            child.id(),
            out.display()
        )
    );
    let listing = |out: &Path| String::from_utf8(run_ok([OsStr::new("show"), out.as_os_str()]).stdout).unwrap();
    assert!(!listing(&out).contains("note:"));
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let gone = wait_for(Duration::from_secs(30), || processes_with(&marker).is_empty());
    assert!(gone, "sandboxed processes outlived the runner: {:?}", processes_with(&marker));
    assert!(episodes(&out).iter().any(|e| e.status != Status::Finished), "the kill came too late to test anything");
    // The episode that was running stays marked so; `show` says its runner is gone.
    let running = episodes(&out).iter().filter(|e| e.status == Status::Running).count();
    assert!(running >= 1);
    let note = format!(
        "note: {running} episode{} marked running, but no specgap process is running this store (its runner stopped without finishing them); continue with `specgap run --resume {}`\n",
        if running == 1 { " is" } else { "s are" },
        out.display()
    );
    assert!(listing(&out).ends_with(&note), "{}", listing(&out));

    assert_resume_matches(&script, &reference, &out);
}

#[test]
fn ctrl_c_interrupts_exits_130_and_resume_completes_the_run() {
    let tmp = tempfile::tempdir().unwrap();
    let marker = marker("sigint");
    let script = slow_script(tmp.path(), &marker);
    let reference = tmp.path().join("reference");
    run_ok(run_args(&script, &reference));

    let out = tmp.path().join("interrupted");
    let stderr_file = tmp.path().join("stderr.txt");
    let mut child = start_and_wait(&script, &out, &marker, &stderr_file);
    send_signal(child.id(), libc::SIGINT);
    let status = child.wait().unwrap();
    let stderr = std::fs::read_to_string(&stderr_file).unwrap();
    assert_eq!(status.code(), Some(130), "{stderr}");
    assert!(stderr.contains(&format!("specgap run --resume {}", out.display())), "{stderr}");
    assert!(processes_with(&marker).is_empty(), "a sandboxed process outlived the interrupted run");
    let rows = episodes(&out);
    assert!(rows.iter().any(|e| e.status == Status::Interrupted), "{rows:#?}");
    assert!(rows.len() < 8 || rows.iter().any(|e| e.status != Status::Finished));

    assert_resume_matches(&script, &reference, &out);
}

#[test]
fn resume_of_a_run_made_under_another_protocol_version_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    run_gold_on_req_basic(&out);
    let run_toml = out.join("run.toml");
    let text = std::fs::read_to_string(&run_toml).unwrap();
    let line = format!("protocol_version = {}\n", specgap_protocol::run::PROTOCOL_VERSION);
    assert!(text.contains(&line), "{text}");
    // A store written before the field existed names no version: protocol 1.
    std::fs::write(&run_toml, text.replace(&line, "")).unwrap();
    let resumed = specgap().args([OsStr::new("run"), OsStr::new("--resume"), out.as_os_str()]).output().unwrap();
    assert_eq!(resumed.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&resumed.stderr),
        format!(
            "error: cannot resume {0}: {0} was run under protocol version 1, and this specgap follows protocol version 5: \
             resuming would mix episodes whose conditions mean different things. Finish it with the specgap release \
             that started it, or start a new run (specgap run ... --out <new directory>)\n",
            out.display()
        )
    );
    // It can still be read.
    run_ok([OsStr::new("show"), out.as_os_str()]);
}

#[test]
fn a_relative_replay_path_is_stored_absolute_so_resume_works_from_another_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let here = tmp.path().join("here");
    let elsewhere = tmp.path().join("elsewhere");
    std::fs::create_dir_all(&here).unwrap();
    std::fs::create_dir_all(&elsewhere).unwrap();
    write_script(&here, "careful.jsonl", &[json!({"tool": "submit", "arguments": {"summary": "done"}})]);
    let out = tmp.path().join("run");
    let output = specgap()
        .current_dir(&here)
        .args(["run", "--agent", "replay:careful.jsonl", "--condition", "partial", "--no-report", "--out"])
        .arg(&out)
        .arg(task_fixture("req-basic"))
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let stored = std::fs::read_to_string(out.join("run.toml")).unwrap();
    let absolute = format!("spec = \"replay:{}\"", here.canonicalize().unwrap().join("careful.jsonl").display());
    assert!(stored.contains(&absolute), "{stored}");
    let output = specgap().current_dir(&elsewhere).args(["run", "--no-report", "--resume"]).arg(&out).output().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("1 already done"), "{stderr}");
}

/// Every file under `dir` (recursively) that contains `needle`.
fn files_containing(dir: &Path, needle: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for entry in fs_err::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            found.extend(files_containing(&path, needle));
        } else if String::from_utf8_lossy(&fs_err::read(&path).unwrap()).contains(needle) {
            found.push(path);
        }
    }
    found
}

/// Regression (issue 30 item 3): a replay agent was labelled by its script's absolute path in
/// the store, the static site and ATIF, and copies of one script in two places keyed different
/// episodes.
#[test]
fn a_replay_agent_is_named_by_its_file_and_copies_in_two_places_key_the_same_episodes() {
    let tmp = tempfile::tempdir().unwrap();
    let turns = [json!({"tool": "submit", "arguments": {"summary": "done"}})];
    let run = |place: &str| {
        let dir = tmp.path().join(place).join("scripts-of-a-private-place");
        fs_err::create_dir_all(&dir).unwrap();
        let script = write_script(&dir, "careful.jsonl", &turns);
        let out = tmp.path().join(format!("run-{place}"));
        let agent = format!("replay:{}", script.display());
        run_ok([
            OsStr::new("run"),
            task_fixture("req-basic").as_os_str(),
            OsStr::new("--agent"),
            OsStr::new(&agent),
            OsStr::new("--condition"),
            OsStr::new("partial"),
            OsStr::new("--seed"),
            OsStr::new("3"),
            OsStr::new("--no-report"),
            OsStr::new("--out"),
            out.as_os_str(),
        ]);
        out
    };
    let (a, b) = (run("a"), run("b"));
    let (in_a, in_b) = (episodes(&a), episodes(&b));
    assert_eq!(in_a.iter().map(|e| e.agent.as_str()).collect::<Vec<_>>(), ["replay:careful.jsonl"]);
    assert_eq!(
        in_a.iter().map(|e| (&e.id, &e.agent_hash)).collect::<Vec<_>>(),
        in_b.iter().map(|e| (&e.id, &e.agent_hash)).collect::<Vec<_>>(),
        "one script, one agent: the same episodes"
    );
    let stored = fs_err::read_to_string(a.join("run.toml")).unwrap();
    assert!(stored.contains("name = \"replay:careful.jsonl\""), "{stored}");

    // Published forms carry no path of the machine.
    let atif = tmp.path().join("atif");
    let site = tmp.path().join("site");
    run_ok([OsStr::new("export"), a.as_os_str(), OsStr::new("--format"), OsStr::new("atif"), OsStr::new("--out"), atif.as_os_str()]);
    run_ok([OsStr::new("view"), a.as_os_str(), OsStr::new("--static"), site.as_os_str()]);
    for dir in [&atif, &site] {
        assert_eq!(files_containing(dir, "scripts-of-a-private-place"), Vec::<PathBuf>::new());
        assert!(!files_containing(dir, "replay:careful.jsonl").is_empty(), "the agent is named in {}", dir.display());
    }
    // A real episode's submit result is its call's observation (issue 30 item 4), not a step
    // of its own.
    assert_eq!(files_containing(&atif, "answering no call"), Vec::<PathBuf>::new());
    assert!(
        !files_containing(&atif, "\"source_call_id\": \"call-1\"").is_empty()
            || !files_containing(&atif, "\"source_call_id\":\"call-1\"").is_empty()
    );
    // Resuming and merging still match the agent.
    run_ok([OsStr::new("run"), OsStr::new("--no-report"), OsStr::new("--resume"), a.as_os_str()]);
    let merged = tmp.path().join("merged");
    run_ok([OsStr::new("merge"), a.as_os_str(), b.as_os_str(), OsStr::new("--out"), merged.as_os_str()]);
    assert_eq!(episodes(&merged).len(), 1);
}
