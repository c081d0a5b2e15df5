//! Audit rows (schema version 5): samples stored once, a rater's sheet once, resamples tied to
//! an episode, and `merge` refusing an audited run.

use serde_json::json;
use specgap_protocol::event::Usage;
use specgap_store::{AuditItemRecord, AuditLabelRecord, AuditSampleRecord, AuditSheetRecord, ResampleRecord, Store, StoreError, merge};

use crate::{config, run_episode};

fn sample() -> (AuditSampleRecord, Vec<AuditItemRecord>) {
    let record =
        AuditSampleRecord { id: "sample:000000000001".into(), unit: "episode".into(), rubric: "r".into(), manifest: json!({"seed": 1}) };
    let item = |item: &str, position| AuditItemRecord {
        item: item.into(),
        position,
        run: 0,
        episode: None,
        stratum: "all".into(),
        cluster: "t".into(),
        weight: 1.5,
        judges: json!({"offline:2": {"coverage": "covered"}}),
    };
    (record, vec![item("i1", 0), item("i2", 1)])
}

fn sheet(rater: &str) -> AuditSheetRecord {
    AuditSheetRecord { rater: rater.into(), path: "s.csv".into(), sha256: "ab".into(), rows: 2 }
}

fn label(item: &str, rater: &str, value: &str) -> AuditLabelRecord {
    AuditLabelRecord { item: item.into(), rater: rater.into(), label: "ok".into(), value: value.into() }
}

#[test]
fn samples_are_stored_once_and_each_raters_sheet_once() {
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::create(&tmp.path().join("run"), &config(7, None)).unwrap();
    let (record, items) = sample();
    store.record_audit_sample(&record, &items).unwrap();
    store.record_audit_sample(&record, &items[..1]).unwrap();
    assert_eq!(store.audit_samples().unwrap(), vec![record.clone()]);
    assert_eq!(store.audit_items(&record.id).unwrap(), items);
    let labels = [label("i1", "ann", "yes"), label("i2", "ann", "no")];
    store.record_audit_labels(&record.id, &sheet("ann"), &labels).unwrap();
    let again = store.record_audit_labels(&record.id, &sheet("ann"), &labels[..1]).unwrap_err();
    assert!(matches!(again, StoreError::DuplicateRater { .. }), "{again}");
    assert_eq!(
        again.to_string(),
        "rater ann has labelled audit sample sample:000000000001 already; to replace those labels with a corrected sheet, import it with --replace (another rater needs another name)"
    );
    // A label of an item not in the sample is refused, and the sheet with it.
    assert!(store.record_audit_labels(&record.id, &sheet("ben"), &[label("i9", "ben", "yes")]).is_err());
    assert_eq!(store.audit_sheets(&record.id).unwrap(), vec![sheet("ann")]);
    assert_eq!(store.audit_labels(&record.id).unwrap(), labels.to_vec());
}

#[test]
fn resamples_belong_to_an_episode_and_merge_refuses_an_audited_run() {
    let tmp = tempfile::tempdir().unwrap();
    let s1 = Store::create(&tmp.path().join("s1"), &config(7, Some([1, 2]))).unwrap();
    let s2 = Store::create(&tmp.path().join("s2"), &config(7, Some([2, 2]))).unwrap();
    let id = run_episode(&s1, 0, 1.0, 10);
    run_episode(&s2, 1, 0.0, 10);
    let row = ResampleRecord {
        episode: id.clone(),
        batch: "resample:1".into(),
        request: 0,
        k: 1,
        purpose: "feedback".into(),
        reply: Some("again".into()),
        error: None,
        usage: Usage { requests: 1, input_tokens: 10, ..Usage::default() },
    };
    s1.record_resample(&row).unwrap();
    assert_eq!(s1.resamples().unwrap(), vec![row.clone()]);
    let stranger = ResampleRecord { episode: "nope".into(), ..row };
    assert!(matches!(s1.record_resample(&stranger), Err(StoreError::UnknownEpisode { .. })));
    let (record, items) = sample();
    s2.record_audit_sample(&record, &items).unwrap();
    let refused = merge(&[s1.dir(), s2.dir()], &tmp.path().join("merged")).unwrap_err();
    assert_eq!(
        refused.to_string(),
        format!("{} holds audit samples; merge the shards first, then draw audit samples from the merged run", s2.dir().display())
    );
}
