//! The episode's network tripwire (issue 15; specgap-gateway `tripwire`): armed in the
//! agent's sandbox's network namespace right after the sandbox comes up, disarmed once the
//! sandbox's processes are gone and before the namespace can go to another sandbox, and
//! turned into `network_attempt` events and one `network_tripwire` event at the end.
//!
//! Where it cannot be armed (the harness is not root, a port is taken) the episode runs on
//! without it — the agent still has no network — and `network_tripwire` says so
//! (`armed: false` with the reason); the tests that need it fail under
//! `SPECGAP_REQUIRE_EXTERNAL=1`.

use std::sync::Arc;

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

/// The events for the end: each attempt, then the summary.
pub(super) fn records(tripwire: &EpisodeTripwire) -> Vec<EventKind> {
    match tripwire {
        EpisodeTripwire::Armed(tripwire) => {
            tripwire.disarm();
            let attempts = tripwire.attempts();
            let note = if tripwire.catches_any_address() {
                String::new()
            } else {
                "names only: connections to addresses no lookup gave were not caught".to_string()
            };
            let count = u32::try_from(attempts.len()).unwrap_or(u32::MAX);
            let mut events: Vec<EventKind> = attempts.into_iter().map(attempt_event).collect();
            events.push(EventKind::NetworkTripwire { armed: true, attempts: count, note });
            events
        }
        EpisodeTripwire::Unavailable(note) => vec![EventKind::NetworkTripwire { armed: false, attempts: 0, note: note.clone() }],
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
        let unavailable = EpisodeTripwire::Unavailable("unavailable: cannot arm the network tripwire in network namespace /proc/7/ns/net: Operation not permitted (os error 1)".into());
        assert_eq!(
            records(&unavailable),
            [EventKind::NetworkTripwire {
                armed: false,
                attempts: 0,
                note: "unavailable: cannot arm the network tripwire in network namespace /proc/7/ns/net: Operation not permitted (os error 1)".into(),
            }]
        );
    }

    #[test]
    fn the_sandbox_resolves_through_the_tripwire() {
        assert_eq!(specgap_sandbox::AGENT_NAMESERVER, specgap_gateway::tripwire::RESOLVER.to_string());
    }
}
