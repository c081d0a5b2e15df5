//! The episode's network tripwire (issue 15; specgap-gateway `tripwire`): armed in the
//! agent's sandbox's network namespace right after the sandbox comes up, disarmed once the
//! sandbox's processes are gone and before the namespace can go to another sandbox, and
//! turned into `network_attempt` events as the attempts happen (written at the next turn,
//! stamped with the moment each arrived) and one `network_tripwire` event at the end.
//!
//! Where it cannot be armed (the harness is not root, a port is taken) the episode runs on
//! without it — the agent still has no network — and `network_tripwire` says so
//! (`armed: false` with the reason); the tests that need it fail under
//! `SPECGAP_REQUIRE_EXTERNAL=1`.

use std::sync::Arc;
use std::time::Instant;

use specgap_gateway::{NetworkAttempt, Tripwire};
use specgap_protocol::event::EventKind;
use specgap_sandbox::AgentSandbox;

/// The tripwire of one episode.
#[derive(Debug)]
pub(super) enum EpisodeTripwire {
    /// Armed; the sandbox disarms it when it is released.
    Armed(Arc<Tripwire>),
    /// Not armed, and why.
    Unavailable(String),
}

/// Arms a tripwire in `sandbox`'s network namespace and has the sandbox disarm it on release.
pub(super) fn arm(sandbox: &mut AgentSandbox) -> EpisodeTripwire {
    match Tripwire::arm_in_path(&sandbox.network_namespace()) {
        Ok(tripwire) => {
            let tripwire = Arc::new(tripwire);
            let held = tripwire.clone();
            sandbox.before_release(move || held.disarm());
            EpisodeTripwire::Armed(tripwire)
        }
        Err(e) => {
            let reason = error_chain(&e);
            tracing::warn!("the episode runs without a network tripwire: {reason}");
            EpisodeTripwire::Unavailable(format!("unavailable: {reason}"))
        }
    }
}

/// The `network_attempt` events of the attempts completed since the `taken` first ones that
/// arrived before `until` (all of them without it), each with the moment it arrived; `taken`
/// grows by their number. Called at every turn, and once more after the sandbox is gone (the
/// tripwire is disarmed then, so every record is complete).
pub(super) fn new_attempts(tripwire: &EpisodeTripwire, taken: &mut usize, until: Option<Instant>) -> Vec<(Instant, EventKind)> {
    let EpisodeTripwire::Armed(tripwire) = tripwire else { return Vec::new() };
    let settled = arrived_before(tripwire.settled_since(*taken), until);
    *taken += settled.len();
    settled.into_iter().map(|(at, attempt)| (at, attempt_event(attempt))).collect()
}

/// The leading `records` (in arrival order) that arrived before `until`; all without it.
fn arrived_before<T>(mut records: Vec<(Instant, T)>, until: Option<Instant>) -> Vec<(Instant, T)> {
    if let Some(until) = until {
        let before = records.iter().take_while(|(at, _)| *at < until).count();
        records.truncate(before);
    }
    records
}

/// The `network_tripwire` event for the end (the tripwire disarmed first): armed or not, and
/// how many attempts it recorded.
pub(super) fn summary(tripwire: &EpisodeTripwire) -> EventKind {
    match tripwire {
        EpisodeTripwire::Armed(tripwire) => {
            tripwire.disarm();
            let note = if tripwire.catches_any_address() {
                String::new()
            } else {
                "names only: connections to addresses no lookup gave were not caught".to_string()
            };
            let count = u32::try_from(tripwire.attempts().len()).unwrap_or(u32::MAX);
            EventKind::NetworkTripwire { armed: true, attempts: count, note }
        }
        EpisodeTripwire::Unavailable(note) => EventKind::NetworkTripwire { armed: false, attempts: 0, note: note.clone() },
    }
}

fn attempt_event(attempt: NetworkAttempt) -> EventKind {
    EventKind::NetworkAttempt {
        protocol: attempt.protocol.as_str().to_string(),
        name: attempt.name,
        record_type: attempt.record_type,
        address: attempt.address.to_string(),
        port: attempt.port,
        sni: attempt.sni,
        http_host: attempt.http_host,
    }
}

fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_episode_without_a_tripwire_says_so_and_why() {
        let unavailable = EpisodeTripwire::Unavailable(
            "unavailable: cannot arm the network tripwire in network namespace /proc/7/ns/net: Operation not permitted (os error 1)".into(),
        );
        assert_eq!(
            summary(&unavailable),
            EventKind::NetworkTripwire {
                armed: false,
                attempts: 0,
                note:
                    "unavailable: cannot arm the network tripwire in network namespace /proc/7/ns/net: Operation not permitted (os error 1)"
                        .into(),
            }
        );
        assert_eq!(new_attempts(&unavailable, &mut 0, None), Vec::new());
    }

    /// An attempt made after the exchange the engine has yet to write waits for the next
    /// turn, so it is never written before that exchange (a race under load).
    #[test]
    fn only_attempts_made_before_the_exchange_handed_out_go_first() {
        let t0 = Instant::now();
        let at = |ms| t0 + std::time::Duration::from_millis(ms);
        let records = vec![(at(1), "a"), (at(5), "b"), (at(9), "c")];
        assert_eq!(arrived_before(records.clone(), Some(at(5))), vec![(at(1), "a")]);
        assert_eq!(arrived_before(records.clone(), Some(at(10))), records);
        assert_eq!(arrived_before(records.clone(), Some(at(0))), Vec::new());
        assert_eq!(arrived_before(records.clone(), None), records);
    }

    #[test]
    fn the_sandbox_resolves_through_the_tripwire() {
        assert_eq!(specgap_sandbox::AGENT_NAMESERVER, specgap_gateway::tripwire::RESOLVER.to_string());
    }
}
