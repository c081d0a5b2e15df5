//! The network tripwire's record in a report (issue 15): how many `cli:` episodes tried to
//! reach anything but the model gateway, and how many ran without a tripwire, read from the
//! `network_attempt` and `network_tripwire` events of their trajectories
//! (docs/store-schema.md). Episodes of other agents have neither and are not read.

use std::collections::BTreeMap;

use specgap_protocol::event::{EventKind, network_attempt_line};
use specgap_store::read_trajectory;

use crate::episode::Episode;

/// What one episode's trajectory says about its network.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct EpisodeNetwork {
    /// Whether it has a `network_tripwire` event (stores made before the tripwire have none).
    known: bool,
    armed: bool,
    note: String,
    attempts: Vec<String>,
}

fn read_network(episode: &Episode<'_>) -> Option<EpisodeNetwork> {
    let trajectory = read_trajectory(episode.run_dir, &episode.row.id).ok()?;
    let mut network = EpisodeNetwork::default();
    for event in &trajectory.events {
        match &event.kind {
            EventKind::NetworkAttempt { .. } => network.attempts.extend(network_attempt_line(&event.kind)),
            EventKind::NetworkTripwire { armed, note, .. } => {
                network.known = true;
                network.armed = *armed;
                network.note = note.clone();
            }
            _ => {}
        }
    }
    network.known.then_some(network)
}

/// The warnings of `episodes` (only `cli:` agents' are read): one counting the episodes
/// with network attempts outside the gateway, with the most frequent attempts; one counting
/// the episodes that ran without a tripwire, with the first reason.
pub fn network_warnings(episodes: &[Episode<'_>]) -> Vec<String> {
    let read: Vec<EpisodeNetwork> = episodes.iter().filter(|e| e.row.agent.starts_with("cli:")).filter_map(read_network).collect();
    warnings_of(&read)
}

fn warnings_of(read: &[EpisodeNetwork]) -> Vec<String> {
    let mut warnings = Vec::new();
    let tried: Vec<&EpisodeNetwork> = read.iter().filter(|n| !n.attempts.is_empty()).collect();
    if !tried.is_empty() {
        let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
        for attempt in tried.iter().flat_map(|n| &n.attempts) {
            *counts.entry(attempt.as_str()).or_default() += 1;
        }
        let total: usize = counts.values().sum();
        let mut common: Vec<(&str, usize)> = counts.into_iter().collect();
        common.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        let shown: Vec<String> = common.iter().take(3).map(|(line, n)| format!("{line} ×{n}")).collect();
        let more = if common.len() > 3 { format!(", and {} other(s)", common.len() - 3) } else { String::new() };
        warnings.push(format!(
            "{} of {} cli: episodes tried to reach the network outside the model gateway ({total} attempt(s), none got through: {}{more}); `specgap show` lists them",
            tried.len(),
            read.len(),
            shown.join(", ")
        ));
    }
    let unarmed: Vec<&EpisodeNetwork> = read.iter().filter(|n| !n.armed).collect();
    if let Some(first) = unarmed.first() {
        warnings.push(format!(
            "{} of {} cli: episodes ran without the network tripwire, so their attempts to reach the network (if any) went unrecorded: {}",
            unarmed.len(),
            read.len(),
            first.note
        ));
    }
    warnings
}

#[cfg(test)]
mod tests {
    use super::*;

    fn episode(armed: bool, note: &str, attempts: &[&str]) -> EpisodeNetwork {
        EpisodeNetwork { known: true, armed, note: note.into(), attempts: attempts.iter().map(|a| a.to_string()).collect() }
    }

    #[test]
    fn episodes_with_attempts_and_without_a_tripwire_are_counted() {
        let read = [
            episode(true, "", &["dns A registry.npmjs.org", "tcp 127.0.0.2:443 tls registry.npmjs.org"]),
            episode(true, "", &["dns A registry.npmjs.org", "dns A a.example", "dns A b.example"]),
            episode(true, "", &[]),
            episode(false, "unavailable: not root", &[]),
        ];
        assert_eq!(
            warnings_of(&read),
            [
                "2 of 4 cli: episodes tried to reach the network outside the model gateway (5 attempt(s), none got through: dns A registry.npmjs.org ×2, dns A a.example ×1, dns A b.example ×1, and 1 other(s)); `specgap show` lists them",
                "1 of 4 cli: episodes ran without the network tripwire, so their attempts to reach the network (if any) went unrecorded: unavailable: not root",
            ]
        );
        assert_eq!(warnings_of(&read[2..3]), Vec::<String>::new());
    }
}
