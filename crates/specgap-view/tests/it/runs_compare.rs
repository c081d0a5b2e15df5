//! Whole runs in the viewer: run against run (`compare`, the numbers of `specgap compare`),
//! the score histogram of a filtered list and its CSV export, live and in a static site.

use specgap_report::{CompareOptions, RunData, compare};
use specgap_view::{StaticOptions, ViewerConfig, serve, write_static};

use crate::fixture::{self, CANARIES};
use crate::http::get;

/// The comparison `specgap compare DIR DIR` computes, read-only.
fn expected_comparison(dir: &std::path::Path) -> serde_json::Value {
    let store = specgap_store::Store::open_read_only(dir).unwrap();
    let data = RunData::from_rows(dir, store.config().clone(), store.rows().unwrap(), None);
    serde_json::to_value(compare(&data, &data, &CompareOptions::default()).unwrap()).unwrap()
}

#[test]
fn two_runs_are_compared_as_specgap_compare_compares_them() {
    let run = fixture::run();
    let viewer = serve(ViewerConfig::new(vec![run.dir.clone(), run.dir.clone()])).unwrap();
    let (addr, token) = (viewer.addr(), viewer.token());
    let answer = get(addr, token, "/api/compare?a=0&b=1");
    assert_eq!(answer.status, 200, "{}", answer.text());
    let mut expected = expected_comparison(&run.dir);
    for side in ["a", "b"] {
        expected["comparisons"][0][side]["dir"] = run.dir.display().to_string().into();
    }
    expected["runs"] = serde_json::json!([0, 1]);
    assert_eq!(answer.json(), expected);
    let measures: Vec<&str> =
        expected["comparisons"][0]["measures"].as_array().unwrap().iter().map(|m| m["measure"].as_str().unwrap()).collect();
    assert!(measures.contains(&"Score@1"), "{measures:?}");

    let bad = get(addr, token, "/api/compare?a=0&b=2");
    assert_eq!((bad.status, bad.text()), (400, "`b` must name a run of this viewer (0 to 1), not `2`\n".to_string()));
    let selection = get(addr, token, "/api/compare?a=0&b=1&select_a=agent");
    assert_eq!(selection.status, 400, "{}", selection.text());
    assert!(selection.text().contains("select_a"), "{}", selection.text());
}

#[test]
fn the_histogram_bins_the_final_scores_of_the_filtered_episodes() {
    let run = fixture::run();
    let viewer = serve(ViewerConfig::new(vec![run.dir.clone()])).unwrap();
    let (addr, token) = (viewer.addr(), viewer.token());
    // Scores 2/3, 1.0 and 0.9; the residual episode has none.
    assert_eq!(get(addr, token, "/api/run/0/histogram").json(), serde_json::json!({"bins": [0, 0, 0, 0, 0, 0, 1, 0, 0, 2], "unscored": 1}));
    assert_eq!(
        get(addr, token, "/api/run/0/histogram?agent=scripted:gold").json(),
        serde_json::json!({"bins": [0, 0, 0, 0, 0, 0, 0, 0, 0, 1], "unscored": 1})
    );
}

#[test]
fn a_filtered_list_exports_as_csv_with_every_matching_episode() {
    let run = fixture::run();
    let viewer = serve(ViewerConfig::new(vec![run.dir.clone()])).unwrap();
    let (addr, token) = (viewer.addr(), viewer.token());
    let csv = get(addr, token, "/api/run/0/episodes.csv?agent=scripted:gold&condition=full");
    assert_eq!(csv.status, 200);
    assert_eq!(csv.header("content-type"), Some("text/csv; charset=utf-8"));
    let row = &get(addr, token, "/api/run/0/episodes?agent=scripted:gold&condition=full").json()["rows"][0];
    assert_eq!(
        csv.text(),
        format!(
            "id,task,agent,user,condition,start,repeat,status,end_reason,attempts,submissions,final_score,final_success,turns,tool_calls,wall_ms,started_ts,error\n{},fixtures/req-basic,scripted:gold,relay,full,clean,0,finished,accepted,1,1,1.0,true,1,1,1200,{},\n",
            run.gold, row["started_ts"]
        )
    );
    let all = get(addr, token, "/api/run/0/episodes.csv").text();
    assert_eq!(all.lines().count(), 5, "a header and the four episodes: {all}");
    // A misspelt filter is refused rather than exporting everything.
    assert_eq!(get(addr, token, "/api/run/0/episodes.csv?agnet=x").status, 400);
}

#[test]
fn a_static_site_of_two_runs_holds_their_comparisons_and_nothing_private() {
    let run = fixture::run();
    let out = tempfile::tempdir().unwrap();
    let site = out.path().join("site");
    write_static(&[run.dir.clone(), run.dir.clone()], &site, StaticOptions::default()).unwrap();
    let read = |name: &str| -> serde_json::Value { serde_json::from_slice(&std::fs::read(site.join(name)).unwrap()).unwrap() };
    let mut expected = expected_comparison(&run.dir);
    for side in ["a", "b"] {
        expected["comparisons"][0][side]["dir"] = "run".into();
    }
    expected["runs"] = serde_json::json!([0, 1]);
    assert_eq!(read("data/compare-0-1.json"), expected, "the publisher's directories are not named");
    expected["runs"] = serde_json::json!([1, 0]);
    assert_eq!(read("data/compare-1-0.json"), expected);
    let dir = run.dir.display().to_string();
    for name in ["data/compare-0-1.json", "data/compare-1-0.json", "data/run-1/progress.json"] {
        let text = std::fs::read_to_string(site.join(name)).unwrap();
        for canary in CANARIES.iter().chain([dir.as_str(), "disputed-exempt", "packaging-weight"].iter()) {
            assert!(!text.contains(canary), "{canary} in {name}");
        }
    }
}
