//! `specgap show` (the episode table, a transcript with the private evaluation apart) and the
//! Markdown report.

use std::ffi::OsStr;

use crate::support::*;

#[test]
fn show_lists_episodes_and_prints_a_transcript_with_the_private_evaluation_apart() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    run_ok([
        OsStr::new("run"),
        task_fixture("req-basic").as_os_str(),
        OsStr::new("--agent"),
        OsStr::new("scripted:gold,scripted:literal"),
        OsStr::new("--condition"),
        OsStr::new("partial"),
        OsStr::new("--repeats"),
        OsStr::new("2"),
        OsStr::new("--out"),
        out.as_os_str(),
        OsStr::new("--no-report"),
    ]);
    let table = String::from_utf8(run_ok([OsStr::new("show"), out.as_os_str()]).stdout).unwrap();
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines.len(), 6, "{table}");
    assert!(lines[0].starts_with("id "), "{table}");
    assert_eq!(lines[5], "4 episode(s)");
    // Sorted by task, agent, condition, start, repeat (not by the random-looking id).
    let agent_and_repeat: Vec<(&str, &str)> = lines[1..5]
        .iter()
        .map(|l| {
            let cells: Vec<&str> = l.split_whitespace().collect();
            (cells[2], cells[5])
        })
        .collect();
    assert_eq!(agent_and_repeat, [("scripted:gold", "0"), ("scripted:gold", "1"), ("scripted:literal", "0"), ("scripted:literal", "1")]);
    assert_show_into_a_closed_pipe_ends_quietly(&out);
    let literal = episodes(&out).into_iter().find(|e| e.agent == "scripted:literal").unwrap();
    assert!(table.contains(&literal.id));

    let prefix = &literal.id[..6];
    let transcript = String::from_utf8(run_ok([OsStr::new("show"), out.as_os_str(), OsStr::new(prefix)]).stdout).unwrap();
    assert!(transcript.starts_with(&format!("Episode {}\n", literal.id)), "{transcript}");
    for part in [
        "-- system prompt --",
        "-- opening message --",
        "-- tools --",
        "apply_overlay",
        "[submission 1: submitted by the agent]",
        "[owner reports back]",
    ] {
        assert!(transcript.contains(part), "missing {part:?} in\n{transcript}");
    }
    let private = transcript.find("PRIVATE evaluation of submission 1 (never shown to the agent").expect("private block");
    let feedback = transcript.find("[owner reports back]").unwrap();
    assert!(private < feedback, "the private evaluation comes before the owner's message");
    assert!(transcript.contains("│ highest-priority failing requirement: "), "{transcript}");

    let ambiguous = specgap().args([OsStr::new("show"), out.as_os_str(), OsStr::new("")]).output().unwrap();
    assert_eq!(ambiguous.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&ambiguous.stderr).contains("is ambiguous"));
}

/// `specgap show RUN | head`: a reader that is gone before the table is written ends the
/// process by SIGPIPE, as for other tools, instead of a "failed printing to stdout" panic.
fn assert_show_into_a_closed_pipe_ends_quietly(out: &std::path::Path) {
    use std::os::fd::FromRawFd as _;
    use std::os::unix::process::ExitStatusExt as _;
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors pipe2 writes.
    assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
    // SAFETY: both descriptors were just created and are owned here alone.
    let write_end = unsafe {
        libc::close(fds[0]);
        std::os::fd::OwnedFd::from_raw_fd(fds[1])
    };
    let output = specgap().args([OsStr::new("show"), out.as_os_str()]).stdout(std::process::Stdio::from(write_end)).output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(output.status.signal(), Some(libc::SIGPIPE), "{:?} {stderr}", output.status);
}

#[test]
fn markdown_report_has_the_measures_and_end_reasons() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    run_gold_on_req_basic(&out);
    let md = String::from_utf8(run_ok([OsStr::new("report"), out.as_os_str()]).stdout).unwrap();
    assert!(
        md.contains("| scripted:gold | partial | clean | 1 | 1 | 100.0 | 100.0 | 100.0 | 100.0 | 100.0 | 100.0 | 100.0 | 100.0 |"),
        "{md}"
    );
    assert!(md.contains("| scripted:gold | partial | clean | 1 | accepted 1 | 0 | 0 | 0 | 0 |"), "{md}");

    // With --out the report goes to the file, and stderr says where.
    let html_path = tmp.path().join("report.html");
    let written = run_ok([
        OsStr::new("report"),
        out.as_os_str(),
        OsStr::new("--format"),
        OsStr::new("html"),
        OsStr::new("--out"),
        html_path.as_os_str(),
    ]);
    assert!(written.stdout.is_empty());
    let stderr = String::from_utf8_lossy(&written.stderr);
    assert_eq!(stderr.trim_end(), format!("report written to {}", html_path.display()), "{stderr}");
    assert!(fs_err::read_to_string(&html_path).unwrap().starts_with("<!DOCTYPE html>"));
}

#[test]
fn show_prints_plan_mode_s_phase_change() {
    let tmp = tempfile::tempdir().unwrap();
    let script = write_script(
        tmp.path(),
        "plan.jsonl",
        &[
            serde_json::json!({"tool": "write_plan", "arguments": {"plan": "read, then fix"}}),
            serde_json::json!({"tool": "read_text", "arguments": {"path": "README.md", "limit": 1}}),
        ],
    );
    let out = tmp.path().join("run");
    let agent = format!("replay:{}", script.display());
    run_ok([
        OsStr::new("run"),
        task_fixture("req-basic").as_os_str(),
        OsStr::new("--agent"),
        OsStr::new(&agent),
        OsStr::new("--condition"),
        OsStr::new("plan"),
        OsStr::new("--out"),
        out.as_os_str(),
        OsStr::new("--no-report"),
    ]);
    let id = episodes(&out)[0].id.clone();
    let transcript = String::from_utf8(run_ok([OsStr::new("show"), out.as_os_str(), OsStr::new(&id)]).stdout).unwrap();
    let change = transcript.find("[phase change: execute; the agent is told from here on]").expect(&transcript);
    let plan_result = transcript.find("  ← call-1 write_plan\n").unwrap();
    assert!(plan_result < change, "{transcript}");
    let after = &transcript[change..];
    assert!(after.contains("  -- system prompt --\n    You are the engineer a project owner has brought in"), "{transcript}");
    assert!(after.contains("\n    submit(summary): Deliver the current workspace to the owner for review."), "{transcript}");
    // PLAN.md changed the workspace, so the script's end submits it automatically.
    assert!(transcript.contains("[submission 1: automatic final submission]"), "{transcript}");
}
