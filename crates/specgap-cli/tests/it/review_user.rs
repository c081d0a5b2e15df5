//! `specgap review-user` on real relay transcripts: runs of the bundled retail case with the
//! retail-ask-first script, once as bundled (no finding), once with the package edited so the
//! relay volunteers an unasked target, once so it contradicts itself; then `report` shows the
//! review and `--exclude-user-findings` leaves the episode out. Also `plan-study --assume`.

use std::path::{Path, PathBuf};

use crate::support::*;

/// Copies the retail case into `dir/<name>` and applies `edit` to its clarifications.toml.
fn edited_retail(dir: &Path, name: &str, edit: impl FnOnce(String) -> String) -> PathBuf {
    let target = dir.join(name);
    let source = repo().join("examples/tasks/retail-replenishment");
    let status = std::process::Command::new("cp").arg("-r").arg(&source).arg(&target).status().unwrap();
    assert!(status.success());
    let path = target.join("clarifications.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, edit(text)).unwrap();
    target
}

fn run_and_review(dir: &Path, package: &Path) -> (PathBuf, serde_json::Value) {
    let out = dir.join(format!("{}-run", package.file_name().unwrap().to_str().unwrap()));
    let script = format!("replay:{}", repo().join("examples/scripts/retail-ask-first.jsonl").display());
    run_ok([
        "run".as_ref(),
        package.as_os_str(),
        "--agent".as_ref(),
        script.as_ref(),
        "--condition".as_ref(),
        "interact-req".as_ref(),
        "--no-report".as_ref(),
        "--jobs".as_ref(),
        "1".as_ref(),
        "--out".as_ref(),
        out.as_os_str(),
    ] as [&std::ffi::OsStr; 11]);
    run_ok(["review-user".as_ref(), out.as_os_str()] as [&std::ffi::OsStr; 2]);
    let review = std::fs::read_to_string(out.join("reviews/user-rules-1.json")).unwrap();
    (out, serde_json::from_str(&review).unwrap())
}

fn findings(review: &serde_json::Value) -> Vec<(u64, String, String)> {
    review["episodes"][0]["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["turn"].as_u64().unwrap(), f["tag"].as_str().unwrap().to_string(), f["severity"].as_str().unwrap().to_string()))
        .collect()
}

#[test]
fn rule_review_of_relay_runs_finds_the_edited_packages_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let bundled = edited_retail(tmp.path(), "bundled", |text| text);
    let (_, clean) = run_and_review(tmp.path(), &bundled);
    // The ask-first script's one message: two question rows, both answered from the profile.
    assert_eq!(clean["episodes"][0]["turns"].as_array().unwrap().len(), 2);
    assert_eq!(findings(&clean), []);

    let volunteering = edited_retail(tmp.path(), "volunteering", |text| {
        let text = text.replacen("has to go through Harbor.\"", "has to go through Harbor. The delivery trucks are painted green.\"", 1);
        format!(
            "{text}\n[[target]]\nid = \"truck-colour\"\ndescription = \"The delivery trucks are painted green.\"\nissue_type = \"missing\"\ndomain = \"data-semantics\"\nanswer = \"The delivery trucks are painted green.\"\ntriggers = [\"What colour are the delivery trucks?\"]\n"
        )
    });
    let (out, review) = run_and_review(tmp.path(), &volunteering);
    assert_eq!(findings(&review), [(1, "volunteered".to_string(), "helped".to_string())]);
    assert_eq!(review["episodes"][0]["findings"][0]["evidence"], "not asked about: truck-colour");
    // The report shows the review; the exclusion leaves the episode out and says so.
    let report = run_ok(["report".as_ref(), out.as_os_str()] as [&std::ffi::OsStr; 2]);
    let text = String::from_utf8(report.stdout).unwrap();
    assert!(text.contains("## Simulated user quality"), "{text}");
    let excluded =
        run_ok(["report".as_ref(), out.as_os_str(), "--exclude-user-findings".as_ref(), "rules:1".as_ref()] as [&std::ffi::OsStr; 4]);
    let text = String::from_utf8(excluded.stdout).unwrap();
    assert!(text.contains("Excluded from every measure: 1 episodes with a severe finding of rules:1"), "{text}");
    // An audit sample drawn by the review's findings: reply units carry `finding`.
    let sheet = out.parent().unwrap().join("audit-volunteering");
    let sampled = run_ok([
        "audit".as_ref(),
        "sample".as_ref(),
        out.as_os_str(),
        "--unit".as_ref(),
        "reply".as_ref(),
        "--rubric".as_ref(),
        "seed002-customer".as_ref(),
        "--by".as_ref(),
        "finding".as_ref(),
        "--seed".as_ref(),
        "7".as_ref(),
        "--out".as_ref(),
        sheet.as_os_str(),
    ] as [&std::ffi::OsStr; 13]);
    let text = String::from_utf8(sampled.stdout).unwrap() + &String::from_utf8(sampled.stderr).unwrap();
    assert!(text.contains("volunteered: 1 of 1") && text.contains("none: 1 of 1"), "{text}");

    let contradicting = edited_retail(tmp.path(), "contradicting", |text| {
        let start = text.find("id = \"pinecrest-millbrook-lane-closed\"").unwrap();
        let end = start + text[start..].find("[[target]]").unwrap();
        let block = text[start..end].replace("id = \"pinecrest-millbrook-lane-closed\"", "id = \"lanes-all-open\"");
        let answer_start = block.find("answer = \"").unwrap();
        let answer_end = answer_start + 10 + block[answer_start + 10..].find('"').unwrap() + 1;
        let block = format!("{}answer = \"Every lane in lanes.csv is open all week.\"{}", &block[..answer_start], &block[answer_end..]);
        format!("{text}\n[[target]]\n{block}")
    });
    let (_, review) = run_and_review(tmp.path(), &contradicting);
    assert_eq!(findings(&review), [(1, "contradiction".to_string(), "hindered".to_string())]);
    assert_eq!(
        review["episodes"][0]["findings"][0]["evidence"],
        "pinecrest-millbrook-lane-closed and lanes-all-open answer the same question differently"
    );
}

#[test]
fn plan_study_from_assumed_sds() {
    let out =
        run_ok(["plan-study", "--assume", "task-sd=0.1,repeat-sd=0.2", "--difference", "0.1", "--max-repeats", "3", "--format", "json"]);
    let plan: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(plan["schema"], "specgap-plan-study");
    let tasks: Vec<u64> = plan["measures"][0]["designs"].as_array().unwrap().iter().map(|d| d["tasks"].as_u64().unwrap()).collect();
    // statsmodels TTestPower().solve_power: 72.58, 41.21, 30.76 tasks.
    assert_eq!(tasks, [73, 42, 31]);
}
