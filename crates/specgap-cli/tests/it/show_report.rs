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
        OsStr::new("--out"),
        out.as_os_str(),
        OsStr::new("--no-report"),
    ]);
    let table = String::from_utf8(run_ok([OsStr::new("show"), out.as_os_str()]).stdout).unwrap();
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines.len(), 4, "{table}");
    assert!(lines[0].starts_with("id "), "{table}");
    assert_eq!(lines[3], "2 episode(s)");
    let literal = episodes(&out).into_iter().find(|e| e.agent == "scripted:literal").unwrap();
    assert!(table.contains(&literal.id));

    let prefix = &literal.id[..6];
    let transcript = String::from_utf8(run_ok([OsStr::new("show"), out.as_os_str(), OsStr::new(prefix)]).stdout).unwrap();
    assert!(transcript.starts_with(&format!("Episode {}\n", literal.id)), "{transcript}");
    for part in ["-- system prompt --", "-- opening message --", "-- tools --", "apply_overlay", "[submission 1: submitted by the agent]", "[owner reports back]"] {
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

#[test]
fn markdown_report_has_the_measures_and_end_reasons() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    run_ok([
        OsStr::new("run"),
        task_fixture("req-basic").as_os_str(),
        OsStr::new("--agent"),
        OsStr::new("scripted:gold"),
        OsStr::new("--condition"),
        OsStr::new("partial"),
        OsStr::new("--out"),
        out.as_os_str(),
        OsStr::new("--no-report"),
    ]);
    let md = String::from_utf8(run_ok([OsStr::new("report"), out.as_os_str()]).stdout).unwrap();
    assert!(
        md.contains("| scripted:gold | partial | clean | 1 | 1 | 100.0 | 100.0 | 100.0 | 100.0 | 100.0 | 100.0 | 100.0 | 100.0 |"),
        "{md}"
    );
    assert!(md.contains("| scripted:gold | partial | clean | 1 | accepted 1 | 0 | 0 | 0 | 0 |"), "{md}");
}
