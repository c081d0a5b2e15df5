//! Trajectory files: one zstd frame per event, a cut last frame tolerated and reported.

use specgap_protocol::event::{EventKind, ToolCall, UserMessageKind};
use specgap_store::{Store, TruncatedTail, read_trajectory, read_trajectory_file, trajectory_path};

use crate::{config, key, meta};

fn three_events(store: &Store) -> (String, Vec<u64>) {
    let mut w = store.begin_episode(&key(0, "clean"), &meta()).unwrap();
    let path = trajectory_path(store.dir(), w.id());
    let mut sizes = Vec::new();
    w.event(EventKind::Overlay { name: "gold".into() }).unwrap();
    sizes.push(std::fs::metadata(&path).unwrap().len());
    w.event(EventKind::AgentTurn {
        turn: 1,
        text: Some("looking".into()),
        tool_calls: vec![ToolCall { id: "call-1".into(), tool: "list_files".into(), arguments: serde_json::json!({"path": "."}) }],
        usage: None,
    })
    .unwrap();
    sizes.push(std::fs::metadata(&path).unwrap().len());
    w.event(EventKind::UserMessage { kind: UserMessageKind::Answer, text: "yes".into(), usage: None }).unwrap();
    sizes.push(std::fs::metadata(&path).unwrap().len());
    // Dropped without finish: as if the process died.
    (w.id().to_string(), sizes)
}

#[test]
fn events_get_consecutive_sequence_numbers_and_are_on_disk_at_once() {
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::create(tmp.path(), &config(7, None)).unwrap();
    let (id, sizes) = three_events(&store);
    assert!(sizes[0] > 0 && sizes[0] < sizes[1] && sizes[1] < sizes[2]);
    let t = read_trajectory(store.dir(), &id).unwrap();
    assert_eq!(t.truncated, None);
    let seqs: Vec<u64> = t.events.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, vec![0, 1, 2]);
    assert_eq!(t.events[0].kind, EventKind::Overlay { name: "gold".into() });
    assert_eq!(t.events[2].kind, EventKind::UserMessage { kind: UserMessageKind::Answer, text: "yes".into(), usage: None });
    assert!(t.events.windows(2).all(|w| w[0].elapsed_ms <= w[1].elapsed_ms));
}

#[test]
fn the_file_is_one_plain_zstd_stream_of_json_lines() {
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::create(tmp.path(), &config(7, None)).unwrap();
    let (id, _) = three_events(&store);
    let bytes = std::fs::read(trajectory_path(store.dir(), &id)).unwrap();
    let text = String::from_utf8(zstd::stream::decode_all(&bytes[..]).unwrap()).unwrap();
    let types: Vec<String> =
        text.lines().map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["type"].as_str().unwrap().to_string()).collect();
    assert_eq!(types, vec!["overlay", "agent_turn", "user_message"]);
}

#[test]
fn a_cut_last_frame_is_skipped_and_reported() {
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::create(tmp.path(), &config(7, None)).unwrap();
    let (id, sizes) = three_events(&store);
    let path = trajectory_path(store.dir(), &id);
    let bytes = std::fs::read(&path).unwrap();
    // Keep the first two frames and 5 bytes of the third.
    let cut = sizes[1] as usize + 5;
    std::fs::write(&path, &bytes[..cut]).unwrap();
    let t = read_trajectory_file(&path).unwrap();
    assert_eq!(t.events.iter().map(|e| e.seq).collect::<Vec<_>>(), vec![0, 1]);
    assert_eq!(t.truncated, Some(TruncatedTail { offset: sizes[1], bytes: 5 }));
    // A cut one byte short of the end is also only the last frame's loss.
    std::fs::write(&path, &bytes[..bytes.len() - 1]).unwrap();
    let t = read_trajectory_file(&path).unwrap();
    assert_eq!(t.events.len(), 2);
    assert_eq!(t.truncated, Some(TruncatedTail { offset: sizes[1], bytes: sizes[2] - sizes[1] - 1 }));
}

#[test]
fn an_empty_trajectory_has_no_events() {
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::create(tmp.path(), &config(7, None)).unwrap();
    let w = store.begin_episode(&key(0, "clean"), &meta()).unwrap();
    let t = read_trajectory(store.dir(), w.id()).unwrap();
    assert_eq!((t.events.len(), t.truncated), (0, None));
}

#[test]
fn a_complete_frame_that_is_not_an_event_is_an_error() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("trajectory.jsonl.zst");
    let mut bytes = zstd::bulk::compress(b"{\"not\":\"an event\"}\n", 3).unwrap();
    bytes.extend(zstd::bulk::compress(b"{}\n", 3).unwrap());
    std::fs::write(&path, &bytes).unwrap();
    let err = read_trajectory_file(&path).unwrap_err();
    assert_eq!(err.to_string(), format!("{}: frame at byte 0 is not one json event", path.display()));
}
