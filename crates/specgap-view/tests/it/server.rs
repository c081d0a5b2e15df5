//! The live server: refusals (no token, a wrong one, a foreign or missing Host, writes, paths
//! outside the run directories), the security headers of every response, loopback by
//! default, and the API's answers (pages, folding, private parts, search, live updates,
//! unknown event kinds).

use std::time::Duration;

use specgap_view::{ViewerConfig, serve};

use crate::fixture::{self, EXTRACTOR_PANEL, HOSTILE_OUTPUT, JUDGE_PANEL, NEEDLE};
use crate::http::{get, request};

fn start(dir: &std::path::Path) -> specgap_view::ViewerHandle {
    serve(ViewerConfig::new(vec![dir.to_path_buf()])).unwrap()
}

#[test]
fn the_viewer_binds_loopback_by_default_and_prints_a_url_with_its_token() {
    let run = fixture::run();
    let viewer = start(&run.dir);
    assert!(viewer.addr().ip().is_loopback());
    assert_ne!(viewer.addr().port(), 0);
    assert_eq!(viewer.token().len(), 32);
    assert!(viewer.token().bytes().all(|b| b.is_ascii_hexdigit()));
    assert_eq!(viewer.url(), format!("http://127.0.0.1:{}/?token={}", viewer.addr().port(), viewer.token()));
    let other = start(&run.dir);
    assert_ne!(other.token(), viewer.token(), "every viewer draws its own token");
}

#[test]
fn requests_without_the_token_or_with_a_foreign_host_are_refused() {
    let run = fixture::run();
    let viewer = start(&run.dir);
    let addr = viewer.addr();
    let host = format!("127.0.0.1:{}", addr.port());
    let token = viewer.token().to_string();
    for target in ["/", "/assets/app.js", "/api/runs", &format!("/api/run/0/episode/{}", run.hostile)] {
        let r = request(addr, "GET", target, &[("Host", &host)]);
        assert_eq!(r.status, 401, "{target}: {}", r.text());
        assert_eq!(r.text(), "refused: this viewer needs the token of the URL `specgap view` printed\n");
        let wrong = request(addr, "GET", &format!("{target}?token=0123456789abcdef0123456789abcdef"), &[("Host", &host)]);
        assert_eq!(wrong.status, 401, "{target}");
        let cookie_wrong = request(addr, "GET", target, &[("Host", &host), ("Cookie", &format!("specgap_view_{}=nope", addr.port()))]);
        assert_eq!(cookie_wrong.status, 401, "{target}");
    }
    // DNS rebinding: the right token, but the page's own name in Host.
    for bad in ["evil.example:80", &format!("evil.example:{}", addr.port()), "127.0.0.1", &format!("127.0.0.2:{}", addr.port())] {
        let r = request(addr, "GET", &format!("/api/runs?token={token}"), &[("Host", bad)]);
        assert_eq!(r.status, 403, "{bad}");
        assert!(r.text().starts_with("refused: the Host header"), "{}", r.text());
    }
    let no_host = request(addr, "GET", &format!("/api/runs?token={token}"), &[]);
    assert_eq!(no_host.status, 403);
    // localhost names the same server.
    let local = request(addr, "GET", &format!("/api/runs?token={token}"), &[("Host", &format!("localhost:{}", addr.port()))]);
    assert_eq!(local.status, 200);
    // Read-only: no other method.
    let post = request(addr, "POST", &format!("/api/runs?token={token}"), &[("Host", &host), ("Content-Length", "0")]);
    assert_eq!(post.status, 405);
}

#[test]
fn the_token_in_the_url_sets_a_cookie_that_later_requests_use() {
    let run = fixture::run();
    let viewer = start(&run.dir);
    let addr = viewer.addr();
    let host = format!("127.0.0.1:{}", addr.port());
    let page = request(addr, "GET", &format!("/?token={}", viewer.token()), &[("Host", &host)]);
    assert_eq!(page.status, 200);
    let cookie = page.header("set-cookie").unwrap().to_string();
    assert_eq!(cookie, format!("specgap_view_{}={}; HttpOnly; SameSite=Strict; Path=/", addr.port(), viewer.token()));
    let pair = cookie.split(';').next().unwrap();
    let js = request(addr, "GET", "/assets/app.js", &[("Host", &host), ("Cookie", pair)]);
    assert_eq!(js.status, 200);
    assert_eq!(js.header("content-type"), Some("text/javascript; charset=utf-8"));
    assert!(js.header("set-cookie").is_none(), "only a token in the URL sets the cookie");
    let html = page.text();
    assert!(html.contains("<script type=\"module\" src=\"assets/app.js\"></script>"));
    // No inline script anywhere in the page: every <script> has a src and no body.
    assert_eq!(html.matches("<script").count(), 1);
}

#[test]
fn every_response_carries_the_content_security_policy_and_nosniff() {
    let run = fixture::run();
    let viewer = start(&run.dir);
    let addr = viewer.addr();
    let token = viewer.token();
    let diff = format!("/api/run/0/episode/{}/diff/1", run.hostile);
    for target in ["/", "/assets/style.css", "/api/runs", "/nowhere", diff.as_str()] {
        let r = get(addr, token, target);
        let csp = r.header("content-security-policy").unwrap_or_else(|| panic!("{target} has no CSP"));
        assert!(csp.contains("script-src 'self'"), "{target}: {csp}");
        assert!(!csp.contains("unsafe-inline") && !csp.contains("unsafe-eval"), "{target}: {csp}");
        assert!(csp.contains("default-src 'none'"), "{target}: {csp}");
        assert_eq!(r.header("x-content-type-options"), Some("nosniff"), "{target}");
        assert_eq!(r.header("referrer-policy"), Some("no-referrer"), "{target}");
    }
    let d = get(addr, token, &diff);
    assert_eq!(d.status, 200);
    assert_eq!(d.header("content-type"), Some("text/plain; charset=utf-8"));
    assert!(d.header("content-security-policy").unwrap().ends_with("; sandbox"));
    assert!(d.text().contains("+FEE = 2  # CANARY-DIFF"));
}

#[test]
fn paths_outside_the_run_directories_are_refused() {
    let run = fixture::run();
    // A link inside the run pointing outside it: never followed.
    let sub = run.dir.join("episodes").join(&run.gold).join("submissions/1");
    std::fs::remove_file(sub.join("workspace.diff")).unwrap();
    std::os::unix::fs::symlink("/etc/passwd", sub.join("workspace.diff")).unwrap();
    let viewer = start(&run.dir);
    let addr = viewer.addr();
    let token = viewer.token();
    let attempts = [
        "/../../../../etc/passwd".to_string(),
        "/assets/../../../../etc/passwd".to_string(),
        "/assets/%2e%2e%2f%2e%2e%2fCargo.toml".to_string(),
        "/api/run/0/episode/..%2F..%2F..%2F..%2Fetc%2Fpasswd".to_string(),
        "/api/run/0/episode/../../../../etc/passwd/events".to_string(),
        format!("/api/run/0/episode/{}/diff/1/../../../../../../etc/passwd", run.hostile),
        format!("/api/run/0/episode/{}/diff/..%2F..%2F..%2F..%2Fetc%2Fpasswd", run.hostile),
        format!("/api/run/0/episode/{}/diff/1", run.gold),
        "/api/run/1/facets".to_string(),
        "/api/run/-1/facets".to_string(),
        "/api/run/0/episode/0000000000000000".to_string(),
        "/etc/passwd".to_string(),
    ];
    for target in &attempts {
        let r = get(addr, token, target);
        assert!(matches!(r.status, 400 | 404), "{target}: {} {}", r.status, r.text());
        assert!(!r.text().contains("root:"), "{target} leaked a file outside the run");
    }
    let r = get(addr, token, &format!("/api/run/0/episode/{}/diff/1", run.gold));
    assert_eq!(r.text(), format!("episode {} has no workspace.diff for submission 1\n", run.gold));
    let r = get(addr, token, "/api/run/0/episode/..%2F..%2Fetc");
    assert_eq!(r.text(), "`../../etc` is not an episode id (16 hexadecimal digits)\n");
}

#[test]
fn episode_pages_fold_long_outputs_and_the_whole_event_is_fetched_apart() {
    let run = fixture::run();
    let viewer = start(&run.dir);
    let (addr, token) = (viewer.addr(), viewer.token());
    let page = get(addr, token, &format!("/api/run/0/episode/{}/events?offset=0&limit=3", run.hostile)).json();
    assert_eq!(page["total"], 9, "eight events and one of a kind this build does not know");
    let events = page["events"].as_array().unwrap();
    assert_eq!(events.len(), 3);
    let result = &events[2];
    assert_eq!(result["event"]["type"], "tool_result");
    let full_len = result["folded"]["/output"].as_u64().unwrap();
    let head = result["event"]["output"].as_str().unwrap();
    assert!(head.starts_with(HOSTILE_OUTPUT), "the head keeps the output's beginning as text");
    assert!(head.len() <= 1_500 && full_len > 60_000, "{} of {full_len}", head.len());
    let whole = get(addr, token, &format!("/api/run/0/episode/{}/event/2", run.hostile)).json();
    assert_eq!(whole["output"].as_str().unwrap().chars().count() as u64, full_len);
    // The tail: the end event, then the unknown kind, passed on raw.
    let tail = get(addr, token, &format!("/api/run/0/episode/{}/events?offset=7", run.hostile)).json();
    assert_eq!(
        tail["events"][1]["event"],
        serde_json::json!({"seq": 8, "ts_ms": 1764580260123u64, "elapsed_ms": 1300, "type": "judge_ballot", "target": "t", "note": "CANARY-UNKNOWN-EVENT"})
    );
    let timeline = get(addr, token, &format!("/api/run/0/episode/{}/timeline", run.hostile)).json();
    assert_eq!(timeline["events"][1], serde_json::json!([1, "agent_turn", timeline["events"][1][2], 1, 1280]));
    assert_eq!(get(addr, token, &format!("/api/run/0/episode/{}/event/99", run.hostile)).status, 404);
    let raw = get(addr, token, &format!("/api/run/0/episode/{}/trajectory.jsonl", run.hostile));
    assert_eq!(raw.text().lines().count(), 9);
    let atif = get(addr, token, &format!("/api/run/0/episode/{}/atif.json", run.hostile)).json();
    assert_eq!(atif["schema_version"], "ATIF-v1.7");
}

#[test]
fn the_live_viewer_shows_private_parts_with_the_package_text() {
    let run = fixture::run();
    let viewer = start(&run.dir);
    let (addr, token) = (viewer.addr(), viewer.token());
    let d = get(addr, token, &format!("/api/run/0/episode/{}", run.hostile)).json();
    assert_eq!(d["private"], true);
    assert_eq!(d["submissions"][0]["failing_requirement"], "disputed-exempt");
    assert_eq!(d["submissions"][0]["has_diff"], true);
    let outcome = d["requirement_outcomes"].as_array().unwrap().iter().find(|r| r["requirement"] == "disputed-exempt").unwrap().clone();
    assert_eq!(outcome["detail"], "CANARY-EVAL-DETAIL");
    let rule = d["requirements"].as_array().unwrap().iter().find(|r| r["id"] == "disputed-exempt").unwrap().clone();
    assert!(rule["description"].as_str().unwrap().ends_with("whatever the delay. CANARY-REQ-TEXT"));
    assert_eq!(d["errors"][0]["message"], "first try: CANARY-EVAL-ERROR");
    let del = get(addr, token, &format!("/api/run/0/episode/{}", run.delivery)).json();
    assert_eq!(del["questions"][0]["matched_targets"], serde_json::json!(["packaging-weight"]));
    assert_eq!(del["judgements"].as_array().unwrap().len(), 2);
    assert!(del["targets"][0]["answer"].as_str().unwrap().ends_with("CANARY-TARGET-ANSWER"));
    let res = get(addr, token, &format!("/api/run/0/episode/{}", run.residual)).json();
    assert_eq!(res["residual"], true);
    assert_eq!(res["start"]["has_diff"], true);
    assert_eq!(res["start"]["has_result"], true);
    assert_eq!(
        get(addr, token, &format!("/api/run/0/episode/{}/diff/0", run.residual)).text(),
        "diff --git a/billing/fees.py b/billing/fees.py\n+# CANARY-START-DIFF\n"
    );
    let start_result = get(addr, token, &format!("/api/run/0/episode/{}/result/0", run.residual)).json();
    assert_eq!(start_result["tests"]["t1"], "fail");
}

#[test]
fn the_live_viewer_shows_panel_ballots_and_extractions_of_an_episode() {
    let run = fixture::run();
    let viewer = start(&run.dir);
    let (addr, token) = (viewer.addr(), viewer.token());
    let d = get(addr, token, &format!("/api/run/0/episode/{}", run.delivery)).json();
    let panels: Vec<(&str, &str)> =
        d["panels"].as_array().unwrap().iter().map(|p| (p["name"].as_str().unwrap(), p["use"].as_str().unwrap())).collect();
    assert_eq!(panels, vec![(JUDGE_PANEL, "judge"), (EXTRACTOR_PANEL, "extractor")]);
    assert_eq!(d["panels"][0]["config"]["models"][1]["model"], "judge-b");
    let ballots = d["ballots"].as_array().unwrap();
    let keys: Vec<(&str, &str, u64, &str)> = ballots
        .iter()
        .map(|b| {
            (b["panel"].as_str().unwrap(), b["subject"].as_str().unwrap(), b["seat"].as_u64().unwrap(), b["outcome"].as_str().unwrap())
        })
        .collect();
    assert_eq!(
        keys,
        vec![
            (JUDGE_PANEL, "packaging-weight", 0, "ballot"),
            (JUDGE_PANEL, "packaging-weight", 1, "malformed"),
            (EXTRACTOR_PANEL, "submission:1", 0, "ballot")
        ]
    );
    assert_eq!(ballots[0]["vote"], serde_json::json!({"covered": true, "question_indices": [0]}));
    assert_eq!(ballots[1]["vote"], serde_json::Value::Null);
    assert_eq!(ballots[1]["error"], "the reply is not the json asked for");
    assert_eq!(ballots[1]["exchange"]["response"][0], "<script>window.__pwned='ballot'</script>");
    // The long response is folded to its head, with its full length.
    let head = ballots[0]["exchange"]["response"][0].as_str().unwrap();
    assert!(head.starts_with("covered: CANARY-BALLOT xxx") && head.chars().count() == 1_500, "{}", head.len());
    assert_eq!(ballots[0]["folded"], serde_json::json!({"/response/0": 5_023}));
    assert_eq!(ballots[0]["exchange"]["request"][0]["messages"][0]["content"], "Is packaging-weight covered?");
    assert_eq!(
        d["extractions"],
        serde_json::json!([{"panel": EXTRACTOR_PANEL, "k": 1, "status": "scored", "score": 0.9, "success": false, "valid": true, "objective": 9.0, "signature": null, "routes": 3, "agreeing": 3}])
    );
    // An episode no panel looked at has none.
    let hostile = get(addr, token, &format!("/api/run/0/episode/{}", run.hostile)).json();
    assert_eq!((hostile["panels"].as_array().map(Vec::len), hostile["ballots"].as_array().map(Vec::len)), (Some(0), Some(0)));
}

#[test]
fn a_phase_change_and_a_model_exchange_reach_the_page_as_recorded() {
    let run = fixture::run();
    let viewer = start(&run.dir);
    let (addr, token) = (viewer.addr(), viewer.token());
    let page = get(addr, token, &format!("/api/run/0/episode/{}/events", run.delivery)).json();
    let kinds: Vec<&str> = page["events"].as_array().unwrap().iter().map(|e| e["event"]["type"].as_str().unwrap()).collect();
    assert_eq!(kinds, vec!["episode_start", "agent_turn", "tool_result", "phase_change", "end", "model_exchange"]);
    let phase = &page["events"][3]["event"];
    assert_eq!((phase["phase"].as_str(), phase["tools"][0]["name"].as_str()), (Some("execute"), Some("run_experiment")));
    assert_eq!(page["events"][5]["event"]["request"]["messages"][0]["content"], "<script>window.__pwned='exchange'</script>");
    let timeline = get(addr, token, &format!("/api/run/0/episode/{}/timeline", run.delivery)).json();
    let kinds: Vec<&str> = timeline["events"].as_array().unwrap().iter().map(|e| e[1].as_str().unwrap()).collect();
    assert_eq!(kinds, vec!["episode_start", "agent_turn", "tool_result", "phase_change", "end", "model_exchange"]);
}

#[test]
fn lists_filter_and_page_and_the_search_continues_from_its_cursor() {
    let run = fixture::run();
    let viewer = start(&run.dir);
    let (addr, token) = (viewer.addr(), viewer.token());
    let all = get(addr, token, "/api/run/0/episodes").json();
    assert_eq!(all["total"], 4);
    let hostile = get(addr, token, "/api/run/0/episodes?agent=replay:hostile&limit=1").json();
    assert_eq!(hostile["total"], 2);
    assert_eq!(hostile["rows"].as_array().unwrap().len(), 1);
    let bad = get(addr, token, "/api/run/0/episodes?status=done");
    assert_eq!(bad.status, 400);
    assert_eq!(bad.text(), "`done` is not a status (running, finished, not_applicable, infra_error, eval_error, interrupted)\n");
    assert_eq!(get(addr, token, "/api/run/0/episodes?min_score=x").status, 400);
    // A misspelt filter is named, not ignored (it listed every episode as if they matched).
    let misspelt = get(addr, token, "/api/run/0/episodes?agnet=replay:hostile");
    assert_eq!(misspelt.status, 400);
    assert_eq!(
        misspelt.text(),
        "unknown query parameter `agnet`: run/0/episodes takes task, agent, condition, start, status, end_reason, min_score, max_score, repeat, order, offset, limit\n"
    );
    let on_facets = get(addr, token, "/api/run/0/facets?agent=x");
    assert_eq!((on_facets.status, on_facets.text().as_str()), (400, "unknown query parameter `agent`: run/0/facets takes none\n"));
    assert_eq!(get(addr, token, &format!("/api/run/0/facets?token={token}")).status, 200, "the viewer's token is no API parameter");
    let ranged = get(addr, token, "/api/run/0/episodes?min_score=0.5&max_score=0.95").json();
    let ids: Vec<&str> = ranged["rows"].as_array().unwrap().iter().map(|r| r["id"].as_str().unwrap()).collect();
    assert_eq!(ids.len(), 2, "{ids:?}");
    assert!(ids.contains(&run.hostile.as_str()) && ids.contains(&run.delivery.as_str()));
    let facets = get(addr, token, "/api/run/0/facets").json();
    assert_eq!(facets["agent"]["replay:hostile"], 2);
    let matrix = get(addr, token, "/api/run/0/matrix").json();
    assert_eq!(matrix.as_array().unwrap().len(), 3);
    // The search: one episode holds the word; searched in parts, every episode is scanned.
    let mut cursor = 0u64;
    let mut found = Vec::new();
    for _ in 0..10 {
        let part = get(addr, token, &format!("/api/run/0/search?q={}&cursor={cursor}", NEEDLE.to_uppercase())).json();
        for m in part["matches"].as_array().unwrap() {
            found.push((
                m["id"].as_str().unwrap().to_string(),
                m["hits"][0]["index"].as_u64().unwrap(),
                m["hits"][0]["snippet"].as_str().unwrap().to_string(),
            ));
        }
        match part["next"].as_u64() {
            Some(next) => cursor = next,
            None => {
                assert_eq!(part["scanned"], 4);
                break;
            }
        }
    }
    assert_eq!(found, vec![(run.delivery.clone(), 2, format!("q1 ⏎ Yes, it does ({NEEDLE}). ⏎ ask_user ⏎ "))]);
    // Keys are not searched: every event has a "type".
    let keys = get(addr, token, "/api/run/0/search?q=call_id").json();
    assert_eq!(keys["matches"].as_array().unwrap().len(), 0);
}

#[test]
fn the_summary_is_computed_in_the_background_and_follows_new_commits() {
    let run = fixture::run();
    let tables = || specgap_store::Store::open(&run.dir).unwrap().dump_tables(false).unwrap();
    let stored = tables();
    let viewer = start(&run.dir);
    let (addr, token) = (viewer.addr(), viewer.token());
    let mut summary = get(addr, token, "/api/run/0/summary").json();
    for _ in 0..200 {
        if summary["report_state"] == "ready" {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
        summary = get(addr, token, "/api/run/0/summary").json();
    }
    assert_eq!(summary["report_state"], "ready", "{summary}");
    let groups = summary["report"]["groups"].as_array().unwrap();
    assert!(
        groups
            .iter()
            .any(|g| g["key"]["agent"] == "scripted:gold" && g["key"]["condition"] == "full" && g["outcomes"]["score_at"][0] == 1.0),
        "{groups:?}"
    );
    assert_eq!(summary["not_applicable"][0]["reason"], "condition full needs instruction.full.md");
    assert_eq!(summary["usage_by_agent"][0]["agent"], "replay:hostile");
    assert_eq!(summary["usage_by_agent"][0]["input_tokens"], 1200);
    // The report judged the delivery episode offline (it has only a chat judge's verdicts),
    // in memory: the store is as it was.
    assert_eq!(summary["report"]["judge"], "offline:3");
    // The one extraction panel with verdicts scores the delivery case, as `specgap report`'s
    // default (`--extraction auto`) does.
    assert_eq!(summary["report"]["extraction"], EXTRACTOR_PANEL);
    assert_eq!(tables(), stored);
    let before = get(addr, token, "/api/run/0/version").json()["data_version"].clone();
    // A commit by the runner (here: a new episode) changes the version the pages poll.
    let store = specgap_store::Store::open(&run.dir).unwrap();
    let key = specgap_protocol::run::EpisodeKey { repeat: 3, ..store.episodes().unwrap()[0].key() };
    let meta = specgap_store::EpisodeMeta {
        user: "relay".into(),
        family: specgap_protocol::package::Family::Swe,
        scoring_kind: specgap_protocol::result::ScoringKind::Requirement,
    };
    let mut w = store.begin_episode(&key, &meta).unwrap();
    let id = w.id().to_string();
    w.event(specgap_protocol::event::EventKind::Overlay { name: "gold".into() }).unwrap();
    let after = get(addr, token, "/api/run/0/version").json()["data_version"].clone();
    assert_ne!(before, after);
    assert_eq!(get(addr, token, &format!("/api/run/0/episode/{id}/version")).json()["events"], 1);
    assert_eq!(get(addr, token, &format!("/api/run/0/episode/{id}/timeline")).json()["events"].as_array().unwrap().len(), 1);
    w.event(specgap_protocol::event::EventKind::Overlay { name: "again".into() }).unwrap();
    let v = get(addr, token, &format!("/api/run/0/episode/{id}/version")).json();
    assert_eq!((v["events"].as_u64(), v["status"].as_str()), (Some(2), Some("running")));
    let timeline = get(addr, token, &format!("/api/run/0/episode/{id}/timeline")).json();
    assert_eq!(
        timeline["events"][1],
        serde_json::json!([1, "overlay", timeline["events"][1][2], -1, 0]),
        "the cached timeline grows with the file"
    );
    let page = get(addr, token, &format!("/api/run/0/episode/{id}/events?offset=1")).json();
    assert_eq!(page["events"][0]["event"]["name"], "again");
}
