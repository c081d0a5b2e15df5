//! `--static`: the same pages as files; without `--include-private`, no private text in any
//! file (canaries planted in the packages' private files, evaluations, diffs, errors and an
//! unknown event kind); a public site written over a private one keeps no private file.

use std::path::Path;

use specgap_view::{StaticOptions, write_static};

use crate::fixture::{self, CANARIES};

/// Every file under `dir` with its bytes.
fn files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                out.push((path.strip_prefix(dir).unwrap().display().to_string(), std::fs::read(&path).unwrap()));
            }
        }
    }
    out.sort();
    out
}

fn containing<'a>(all: &'a [(String, Vec<u8>)], needle: &str) -> Vec<&'a str> {
    all.iter().filter(|(_, bytes)| bytes.windows(needle.len()).any(|w| w == needle.as_bytes())).map(|(name, _)| name.as_str()).collect()
}

#[test]
fn a_public_static_site_holds_no_private_text() {
    let run = fixture::run();
    let out = tempfile::tempdir().unwrap();
    let site = out.path().join("site");
    let summary = write_static(std::slice::from_ref(&run.dir), &site, StaticOptions::default()).unwrap();
    assert_eq!(summary.episodes, 4);
    let all = files(&site);
    for canary in CANARIES.iter().chain(["disputed-exempt", "packaging-weight", "fee-on-dispute"].iter()) {
        assert_eq!(containing(&all, canary), Vec::<&str>::new(), "{canary} was published");
    }
    let names: Vec<&str> = all.iter().map(|(n, _)| n.as_str()).collect();
    assert!(names.iter().all(|n| !n.contains("diff-") && !n.contains("result-")), "{names:?}");
    // The pages are there, and what the agent saw is published.
    for expected in [
        "index.html",
        "assets/app.js",
        "assets/style.css",
        "data/runs.json",
        "data/run-0/summary.json",
        "data/run-0/episodes.json",
        "data/run-0/matrix.json",
    ] {
        assert!(names.contains(&expected), "{expected} missing from {names:?}");
    }
    let ep = format!("data/run-0/ep/{}", run.hostile);
    for expected in ["detail.json", "events-0.json", "event-2.json", "timeline.json", "search.json", "trajectory.jsonl", "atif.json"] {
        assert!(names.contains(&format!("{ep}/{expected}").as_str()), "{ep}/{expected}");
    }
    assert!(!containing(&all, "Invoices still look wrong").is_empty(), "the owner's message is public");
    let index = std::fs::read_to_string(site.join("index.html")).unwrap();
    assert!(index.contains("<meta name=\"specgap-source\" content=\"static\">"));
    assert!(index.contains("<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; script-src 'self';"));
    // The unknown event is a placeholder; the evaluation a withheld marker.
    let events: serde_json::Value = serde_json::from_slice(&std::fs::read(site.join(&ep).join("events-0.json")).unwrap()).unwrap();
    assert_eq!(
        events["events"][5]["event"],
        serde_json::json!({"seq": 5, "ts_ms": events["events"][5]["event"]["ts_ms"], "elapsed_ms": events["events"][5]["event"]["elapsed_ms"], "type": "withheld", "kind": "evaluation"})
    );
    assert_eq!(events["events"][8]["event"]["type"], "withheld");
    assert_eq!(events["events"][8]["event"]["kind"], "judge_ballot");
    let residual: serde_json::Value =
        serde_json::from_slice(&std::fs::read(site.join(format!("data/run-0/ep/{}/events-0.json", run.residual))).unwrap()).unwrap();
    assert_eq!(
        (residual["events"][1]["event"]["type"].as_str(), residual["events"][1]["event"]["kind"].as_str()),
        (Some("withheld"), Some("start_evaluation"))
    );
    // Plan mode's phase change is what the agent was told: public. A kind this build does not
    // know (a cli: agent's model exchange) is withheld.
    let delivery: serde_json::Value =
        serde_json::from_slice(&std::fs::read(site.join(format!("data/run-0/ep/{}/events-0.json", run.delivery))).unwrap()).unwrap();
    assert_eq!(
        (delivery["events"][3]["event"]["type"].as_str(), delivery["events"][3]["event"]["phase"].as_str()),
        (Some("phase_change"), Some("execute"))
    );
    assert_eq!(
        (delivery["events"][5]["event"]["type"].as_str(), delivery["events"][5]["event"]["kind"].as_str()),
        (Some("withheld"), Some("model_exchange"))
    );
    let detail: serde_json::Value =
        serde_json::from_slice(&std::fs::read(site.join(format!("data/run-0/ep/{}/detail.json", run.delivery))).unwrap()).unwrap();
    assert_eq!((detail.get("ballots"), detail.get("extractions"), detail.get("panels")), (None, None, None));
    let runs: serde_json::Value = serde_json::from_slice(&std::fs::read(site.join("data/runs.json")).unwrap()).unwrap();
    assert_eq!(runs[0]["label"], "run", "a published site names no local directory");
}

#[test]
fn include_private_writes_them_and_a_public_site_over_it_removes_them() {
    let run = fixture::run();
    let out = tempfile::tempdir().unwrap();
    let site = out.path().join("site");
    write_static(std::slice::from_ref(&run.dir), &site, StaticOptions { include_private: true }).unwrap();
    let all = files(&site);
    for canary in CANARIES {
        assert!(!containing(&all, canary).is_empty(), "{canary} missing from the private site");
    }
    let diff = site.join(format!("data/run-0/ep/{}/diff-1.txt", run.hostile));
    assert!(std::fs::read_to_string(&diff).unwrap().contains("CANARY-DIFF"));
    write_static(std::slice::from_ref(&run.dir), &site, StaticOptions::default()).unwrap();
    let all = files(&site);
    for canary in CANARIES {
        assert_eq!(containing(&all, canary), Vec::<&str>::new(), "{canary} stayed behind");
    }
    assert!(!diff.exists());
}

#[test]
fn a_directory_that_is_not_an_earlier_site_is_refused() {
    let run = fixture::run();
    let out = tempfile::tempdir().unwrap();
    std::fs::write(out.path().join("notes.txt"), "mine").unwrap();
    let err = write_static(std::slice::from_ref(&run.dir), out.path(), StaticOptions::default()).err().map(|e| e.to_string());
    assert_eq!(
        err,
        Some(format!(
            "{} is not empty and holds no earlier static site (no index.html with the viewer's marker); give an empty or new directory",
            out.path().display()
        ))
    );
    assert_eq!(std::fs::read_to_string(out.path().join("notes.txt")).unwrap(), "mine");
}
