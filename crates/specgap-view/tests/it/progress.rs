//! A run's progress (`run/{r}/progress`, each entry of `runs`, the static site's
//! `progress.json`): planned, finished, running and failed episodes, and the time left.

use std::path::Path;

use specgap_protocol::package::Family;
use specgap_protocol::result::ScoringKind;
use specgap_protocol::run::{EndReason, EpisodeKey, RunConfig};
use specgap_store::{EpisodeMeta, EpisodeSummary, Status, Store};
use specgap_view::progress::estimate_ms;
use specgap_view::{StaticOptions, ViewerConfig, serve, write_static};

use crate::http::get;

/// One task, one agent, one condition, one start, three repeats: three planned episodes.
fn config(package: &Path) -> RunConfig {
    let hash = specgap_task::load(package).unwrap().hash().to_string();
    toml::from_str(&format!(
        r#"
specgap_version = "0.2.0-test"
protocol_version = 2
seed = 9
repeats = 3
retries = 0
sandbox = true
conditions = ["partial"]
starts = ["clean"]

[[tasks]]
name = "fixtures/req-basic"
hash = "{hash}"
path = "{}"

[[agents]]
spec = "scripted:gold"
hash = "ag"
config = {{}}

[[users]]
spec = "relay"
hash = "u"
config = {{}}
"#,
        package.display()
    ))
    .unwrap()
}

fn planned_key(store: &Store, repeat: u32) -> EpisodeKey {
    let c = store.config();
    EpisodeKey {
        task: c.tasks[0].name.clone(),
        task_hash: c.tasks[0].hash.clone(),
        agent: "scripted:gold".into(),
        agent_hash: "ag".into(),
        user_hash: "u".into(),
        condition: "partial".into(),
        start: "clean".into(),
        repeat,
        seed: 9,
    }
}

fn meta() -> EpisodeMeta {
    EpisodeMeta { user: "relay".into(), family: Family::Swe, scoring_kind: ScoringKind::Requirement }
}

fn summary(status: Status, wall_ms: u64) -> EpisodeSummary {
    let end_reason = if status == Status::Finished { Some(EndReason::Accepted) } else { Some(EndReason::InfrastructureError) };
    let error = (status != Status::Finished).then(|| "the sandbox broke".to_string());
    EpisodeSummary { status, end_reason, turns: 1, tool_calls: 1, wall_ms, error }
}

fn package_copy(root: &Path) -> std::path::PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../specgap-task/tests/fixtures/req-basic");
    let dst = root.join("pkg");
    let status = std::process::Command::new("cp").arg("-r").arg(&src).arg(&dst).status().unwrap();
    assert!(status.success());
    dst
}

#[test]
fn the_estimate_divides_the_work_left_among_the_running_episodes() {
    // Nothing running: every episode left takes the mean, one after the other.
    assert_eq!(estimate_ms(1_000.0, 3, &[]), 3_000);
    // Two running, 400 ms and 1,500 ms in: 600 ms and nothing left of them, two not started.
    assert_eq!(estimate_ms(1_000.0, 2, &[400, 1_500]), 1_300);
    assert_eq!(estimate_ms(1_000.0, 0, &[250]), 750);
}

#[test]
fn progress_counts_planned_finished_running_and_failed_and_follows_the_run() {
    let tmp = tempfile::tempdir().unwrap();
    let package = package_copy(tmp.path());
    let dir = tmp.path().join("run");
    let (store, lock) = Store::create_for_runner(&dir, &config(&package)).unwrap();
    let viewer = serve(ViewerConfig::new(vec![dir.clone()])).unwrap();
    let (addr, token) = (viewer.addr(), viewer.token());
    let progress = || get(addr, token, "/api/run/0/progress").json();

    // The first episode runs: nothing has ended, so no estimate yet.
    let first = store.begin_episode(&planned_key(&store, 0), &meta()).unwrap();
    let p = progress();
    assert_eq!(
        (&p["planned"], &p["finished"], &p["running"], &p["failed"], &p["not_started"], &p["state"], &p["eta_ms"]),
        (&3.into(), &0.into(), &1.into(), &0.into(), &2.into(), &"running".into(), &serde_json::Value::Null),
        "{p}"
    );
    // It ends after a minute (its recorded duration); the second fails; the third runs.
    first.finish(summary(Status::Finished, 60_000)).unwrap();
    store.begin_episode(&planned_key(&store, 1), &meta()).unwrap().finish(summary(Status::InfraError, 20_000)).unwrap();
    let _third = store.begin_episode(&planned_key(&store, 2), &meta()).unwrap();
    let p = progress();
    assert_eq!(
        (&p["planned"], &p["finished"], &p["running"], &p["failed"], &p["not_started"], &p["ended"], &p["state"]),
        (&3.into(), &1.into(), &1.into(), &1.into(), &0.into(), &2.into(), &"running".into()),
        "{p}"
    );
    // The mean of the ended ones is 40 s; the third is a few ms into its attempt.
    let eta = p["eta_ms"].as_u64().unwrap();
    assert!((39_000..=40_000).contains(&eta), "{p}");
    // The runs list carries the same counts, for the index page.
    assert_eq!(get(addr, token, "/api/runs").json()[0]["progress"]["finished"], 1);

    // The runner goes away with the third still recorded as running: it was interrupted,
    // and nothing estimates a time any more.
    drop(lock);
    let p = progress();
    assert_eq!(
        (&p["running"], &p["interrupted"], &p["state"], &p["eta_ms"], &p["live"]),
        (&0.into(), &1.into(), &"stopped".into(), &serde_json::Value::Null, &false.into()),
        "{p}"
    );
}

#[test]
fn a_finished_run_is_done_without_an_estimate_and_its_site_holds_the_final_counts() {
    let tmp = tempfile::tempdir().unwrap();
    let package = package_copy(tmp.path());
    let dir = tmp.path().join("run");
    let store = Store::create(&dir, &config(&package)).unwrap();
    for repeat in 0..3 {
        store.begin_episode(&planned_key(&store, repeat), &meta()).unwrap().finish(summary(Status::Finished, 1_000)).unwrap();
    }
    let expected = serde_json::json!({
        "planned": 3, "planned_error": null, "finished": 3, "running": 0, "failed": 0, "interrupted": 0,
        "not_started": 0, "live": false, "state": "done", "ended": 3, "eta_ms": null,
    });
    let viewer = serve(ViewerConfig::new(vec![dir.clone()])).unwrap();
    assert_eq!(get(viewer.addr(), viewer.token(), "/api/run/0/progress").json(), expected);
    let site = tmp.path().join("site");
    write_static(std::slice::from_ref(&dir), &site, StaticOptions::default()).unwrap();
    let written: serde_json::Value = serde_json::from_slice(&std::fs::read(site.join("data/run-0/progress.json")).unwrap()).unwrap();
    assert_eq!(written, expected);
    let runs: serde_json::Value = serde_json::from_slice(&std::fs::read(site.join("data/runs.json")).unwrap()).unwrap();
    assert_eq!(runs[0]["progress"], expected);
}

#[test]
fn a_plan_that_cannot_be_rebuilt_leaves_planned_unknown_and_says_why() {
    let tmp = tempfile::tempdir().unwrap();
    let package = package_copy(tmp.path());
    let dir = tmp.path().join("run");
    let mut config = config(&package);
    config.starts = vec!["residual:all".into()];
    Store::create(&dir, &config).unwrap();
    std::fs::remove_dir_all(&package).unwrap();
    let viewer = serve(ViewerConfig::new(vec![dir.clone()])).unwrap();
    let p = get(viewer.addr(), viewer.token(), "/api/run/0/progress").json();
    assert_eq!(p["planned"], serde_json::Value::Null, "{p}");
    assert_eq!(p["planned_error"], "the package of task fixtures/req-basic cannot be read to expand residual:all");
    assert_eq!(p["state"], "stopped");
}
