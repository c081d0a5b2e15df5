//! The network tripwire of a `cli:` episode, read from its events.

use specgap_protocol::event::{Event, EventKind, network_attempt_line};

/// The network tripwire's record of an episode: each `network_attempt` in its one-line form
/// (`dns A api.openai.com`, `tcp 127.0.0.2:443 tls api.openai.com`), and the
/// `network_tripwire` event's `(armed, attempts, note)`.
///
/// # Panics
/// When the episode has no `network_tripwire` event (every `cli:` episode ends with one).
pub fn network_record(events: &[Event]) -> (Vec<String>, (bool, u32, String)) {
    let attempts = events.iter().filter_map(|e| network_attempt_line(&e.kind)).collect();
    let tripwire = events.iter().find_map(|e| match &e.kind {
        EventKind::NetworkTripwire { armed, attempts, note } => Some((*armed, *attempts, note.clone())),
        _ => None,
    });
    let Some(tripwire) = tripwire else { panic!("the episode has no network_tripwire event (every cli: episode records one)") };
    (attempts, tripwire)
}

/// Asserts that the episode's tripwire was armed and recorded no attempt: the agent's program
/// tried to reach nothing but its gateway.
///
/// # Panics
/// When it was not armed, or recorded an attempt.
pub fn assert_no_network_attempt(events: &[Event]) {
    let (attempts, tripwire) = network_record(events);
    assert_eq!(tripwire, (true, 0, String::new()), "the tripwire was armed and caught nothing (attempts: {attempts:?})");
    assert_eq!(attempts, Vec::<String>::new());
}
