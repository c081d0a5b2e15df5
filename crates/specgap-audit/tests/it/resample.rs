//! `resample` against a scripted mock user model: the stored requests are sent byte for byte,
//! K times each, replies and usage stored under the user's role, and the sheet's import gives
//! seed 000 App. G's summaries.

use specgap_audit::agreement::sample_report;
use specgap_audit::import::import;
use specgap_audit::resample::{ResampleOptions, resample_run};
use specgap_protocol::event::UserMessageKind::{Answer, Feedback};

use crate::fixture::{Conversation, chat_user_run};
use crate::mock::{MockServer, completion};

fn conversations() -> Vec<Conversation> {
    vec![
        Conversation {
            repeat: 0,
            turns: vec![
                (Answer, "The engineer asks: which ledger?", "The drift ledger."),
                (Feedback, "What happened: two rows for one drift.", "I see two rows for the same drift; keep one."),
            ],
        },
        Conversation { repeat: 1, turns: vec![(Feedback, "What happened: é \"quoted\" \u{1}", "The night scan shows a new row.")] },
    ]
}

#[test]
fn resample_sends_every_stored_request_byte_for_byte_k_times_and_records_user_usage() {
    let server = MockServer::start(move |request, n| {
        assert_eq!(request.target, "/v1/chat/completions");
        (200, completion(&format!("  resample {n}  ")))
    });
    let (run, bytes) = chat_user_run(&server.url, &conversations());
    let out = tempfile::tempdir().unwrap();
    let options = ResampleOptions {
        checkpoints: 2,
        samples: 3,
        seed: 5,
        purpose: Some("feedback".into()),
        finding: None,
        out: out.path().to_path_buf(),
    };
    let summary = resample_run(&run.store, &options).unwrap();
    assert_eq!((summary.available, summary.checkpoints, summary.sent, summary.failed, summary.already), (2, 2, 6, 0, 0));
    let requests = server.requests();
    assert_eq!(requests.len(), 6);
    // The two feedback checkpoints: episode 0's request 1 and episode 1's request 0, in
    // (episode, request) order, each sent 3 times in a row, exactly as recorded.
    let mut order: Vec<(&String, usize, usize)> = vec![(&run.ids[0], 0, 1), (&run.ids[1], 1, 0)];
    order.sort();
    let expected: Vec<&Vec<u8>> = order.iter().flat_map(|(_, e, r)| std::iter::repeat_n(&bytes[*e][*r], 3)).collect();
    for (request, want) in requests.iter().zip(&expected) {
        assert_eq!(&request.body, *want, "the stored request is re-sent byte for byte");
        assert_eq!(request.header("content-type"), Some("application/json"));
        assert_eq!(request.header("authorization"), None, "no key variable is set");
    }
    let rows = run.store.resamples().unwrap();
    assert_eq!(rows.len(), 6);
    for (i, row) in rows.iter().enumerate() {
        assert_eq!(row.batch, summary.batch);
        assert_eq!(row.purpose, "feedback");
        assert_eq!(row.k as usize, i % 3 + 1);
        assert!(row.reply.as_deref().unwrap().starts_with("resample "), "trimmed reply: {:?}", row.reply);
        assert_eq!((row.usage.requests, row.usage.input_tokens, row.usage.output_tokens), (1, 100, 20));
    }
    assert_eq!((summary.usage.requests, summary.usage.input_tokens), (6, 600));
    // The resamples' usage stays out of the episodes' own usage rows.
    assert!(run.store.usage().unwrap().is_empty());

    // Asked again, nothing is sent: every resample is stored.
    let again = resample_run(&run.store, &options).unwrap();
    assert_eq!((again.sent, again.already, again.batch.as_str()), (0, 6, summary.batch.as_str()));
    assert_eq!(server.requests().len(), 6);

    // The sheet: one row per resample, rubric seed000-resample; labelled, its import gives the
    // share of faithful resamples and the checkpoints where every resample is acceptable.
    let sheet = std::fs::read_to_string(&summary.sheet).unwrap();
    let lines: Vec<&str> = sheet.lines().collect();
    assert_eq!(lines[0], "sample,item,page,faithful,consistent,note");
    assert_eq!(lines.len(), 7);
    let page = std::fs::read_to_string(out.path().join("pages/0001.html")).unwrap();
    assert!(page.contains("OWNER-SYSTEM-PROMPT"), "the rubric shows what the user was given");
    let mut labelled = vec![lines[0].to_string()];
    for line in &lines[1..] {
        let cells: Vec<&str> = line.split(',').collect();
        // One resample of episode 1's checkpoint is rejected as unfaithful.
        let faithful = if cells[1].starts_with(run.ids[1].as_str()) && cells[1].ends_with("#k=2") { "reject" } else { "accept" };
        labelled.push(format!("{},{},{},{faithful},accept,", cells[0], cells[1], cells[2]));
    }
    let filled = out.path().join("rater.csv");
    std::fs::write(&filled, labelled.join("\n") + "\n").unwrap();
    import(&run.store, &filled, "rater-1").unwrap();
    let report = sample_report(&run.store, &summary.sample).unwrap();
    let stability = &report.stability[0];
    assert_eq!((stability.resamples, stability.checkpoints, stability.consistent_checkpoints, stability.stable_checkpoints), (6, 2, 2, 1));
    assert_eq!((stability.faithful, stability.consistent, stability.both), (5.0 / 6.0, 1.0, 5.0 / 6.0));
}

#[test]
fn an_altered_trajectory_message_is_refused_before_anything_is_sent() {
    let server = MockServer::start(|_, _| (200, completion("x")));
    let (run, _) = chat_user_run(&server.url, &conversations()[..1]);
    // Rewrite the stored first message of the trajectory (the system prompt) in place.
    let path = specgap_store::trajectory_path(&run.run, &run.ids[0]);
    let trajectory = specgap_store::read_trajectory(&run.run, &run.ids[0]).unwrap();
    let mut encoded = Vec::new();
    for event in &trajectory.events {
        let line = serde_json::to_string(event).unwrap().replace("OWNER-SYSTEM-PROMPT", "OWNER-SYSTEM-PROMPX");
        encoded.extend(zstd::encode_all(format!("{line}\n").as_bytes(), 3).unwrap());
    }
    std::fs::write(&path, encoded).unwrap();
    let out = tempfile::tempdir().unwrap();
    let options = ResampleOptions { checkpoints: 5, samples: 2, seed: 1, purpose: None, finding: None, out: out.path().to_path_buf() };
    let error = resample_run(&run.store, &options).unwrap_err();
    assert_eq!(error.to_string(), format!("episode {}, user request 0", run.ids[0]));
    assert!(std::error::Error::source(&error).unwrap().to_string().ends_with("does not hash to its id; the trajectory was altered"));
    assert!(server.requests().is_empty());
}

/// Regression (issue 30 item 7): when the user model answered none of the requests, resample
/// succeeded and wrote a sheet of items without a reply to label.
#[test]
fn a_batch_whose_every_request_failed_writes_no_sheet_and_says_so() {
    let server = MockServer::start(|_, _| (500, "{\"error\": \"down\"}".into()));
    let (run, _) = chat_user_run(&server.url, &conversations());
    let out = tempfile::tempdir().unwrap();
    let sheet_dir = out.path().join("sheet");
    let options =
        ResampleOptions { checkpoints: 2, samples: 2, seed: 5, purpose: Some("feedback".into()), finding: None, out: sheet_dir.clone() };
    let error = resample_run(&run.store, &options).unwrap_err();
    let text = error.to_string();
    let batch = run.store.resamples().unwrap()[0].batch.clone();
    assert!(
        text.starts_with(&format!(
            "every one of the 4 resample requests of {batch} failed, so there is nothing to label and no label sheet was written (first error: "
        )),
        "{text}"
    );
    assert!(
        text.ends_with("fix the user model's endpoint or key and run the same command again: failed requests are sent again"),
        "{text}"
    );
    assert!(!sheet_dir.exists(), "no sheet directory is made");
    assert_eq!(server.requests().len(), 4);
    assert!(run.store.resamples().unwrap().iter().all(|r| r.reply.is_none() && r.error.is_some()));
}

/// Two episodes whose user turns interleave answers and feedback: `review-user` numbers the
/// answers first (turns 1..=Q), then the feedback messages.
fn interleaved() -> Vec<Conversation> {
    vec![
        Conversation {
            repeat: 0,
            turns: vec![
                (Answer, "The engineer asks: which ledger?", "The drift ledger."),
                (Feedback, "What happened: two rows for one drift.", "Keep one row per drift."),
                (Answer, "The engineer asks: which region?", "Only eu-west."),
            ],
        },
        Conversation {
            repeat: 1,
            turns: vec![
                (Feedback, "What happened: a new row.", "The night scan shows a new row."),
                (Answer, "The engineer asks: keep it?", "Yes, keep it."),
            ],
        },
    ]
}

#[test]
fn resample_with_a_finding_picks_the_requests_on_turns_the_user_review_tagged() {
    let server = MockServer::start(move |_, n| (200, completion(&format!("resample {n}"))));
    let (run, bytes) = chat_user_run(&server.url, &interleaved());
    let out = tempfile::tempdir().unwrap();
    let options = |finding: &str| ResampleOptions {
        checkpoints: 10,
        samples: 1,
        seed: 2,
        purpose: None,
        finding: Some(finding.into()),
        out: out.path().join(finding),
    };
    let err = resample_run(&run.store, &options("any")).unwrap_err().to_string();
    assert_eq!(
        err,
        format!("--finding any: run {} has no user review; run `specgap review-user {}` first", run.run.display(), run.run.display())
    );
    // Episode 0: turn 1 = "The drift ledger." (request 0), turn 2 = "Only eu-west." (request
    // 2), turn 3 = the feedback (request 1). Episode 1: turn 1 = "Yes, keep it." (request 1),
    // turn 2 = the feedback (request 0).
    let review = serde_json::json!({"episodes": [
        {"episode": run.ids[0], "findings": [{"turn": 3, "tag": "volunteered"}, {"turn": 2, "tag": "contradiction"}]},
        {"episode": run.ids[1], "findings": [{"turn": 2, "tag": "volunteered"}]},
    ]});
    std::fs::create_dir_all(run.run.join("reviews")).unwrap();
    std::fs::write(run.run.join("reviews/user-rules.json"), review.to_string()).unwrap();

    let volunteered = resample_run(&run.store, &options("volunteered")).unwrap();
    assert_eq!((volunteered.available, volunteered.checkpoints, volunteered.sent), (2, 2, 2));
    let mut want: Vec<(&String, &Vec<u8>)> = vec![(&run.ids[0], &bytes[0][1]), (&run.ids[1], &bytes[1][0])];
    want.sort();
    let sent: Vec<Vec<u8>> = server.requests().into_iter().map(|r| r.body).collect();
    assert_eq!(sent, want.iter().map(|(_, b)| (*b).clone()).collect::<Vec<_>>());

    let contradiction = resample_run(&run.store, &options("contradiction")).unwrap();
    assert_eq!((contradiction.available, contradiction.sent), (1, 1));
    assert_eq!(server.requests()[2].body, bytes[0][2], "the answer on turn 2 is request 2, asked after the feedback");
    let any = resample_run(&run.store, &options("any")).unwrap();
    assert_eq!((any.available, any.sent, any.already), (3, 3, 0), "a batch of its own: its id names the finding");
    assert_ne!(any.batch, volunteered.batch);

    let err = resample_run(&run.store, &options("revealed")).unwrap_err().to_string();
    assert_eq!(
        err,
        format!(
            "--finding revealed: no recorded request of a model-played user in run {} is on a user turn its reviews tag `revealed`",
            run.run.display()
        )
    );
}
