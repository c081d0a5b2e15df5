//! The calibration rollouts' trajectories as a `chat:` Calibrator reads them (seed 000 App.
//! E.4: it classifies each failure and early success citing turns).
//!
//! Each rollout's trajectory (`<episode_dir>/trajectory.jsonl.zst`, read with the run store's
//! reader) is rendered by the audit summarizer's compact transcript
//! ([`specgap_audit::summary::compact_transcript`]): the request the agent got, then
//! `[turn N]` lines with their calls, each tool result, each message to the agent and each
//! submission — only what the agent saw and did; the private evaluation stays out (the
//! rollout's summary already gives its score and success).
//!
//! Bounds, both exact and deterministic:
//! * a tool result longer than [`MAX_OUTPUT_BYTES`] (after trimming) keeps its head and ends
//!   `[… <n> more bytes of this output cut]`;
//! * a rendering longer than [`MAX_TRAJECTORY_BYTES`] keeps its head and ends
//!   `[… <n> more bytes of this trajectory cut]`.
//!
//! A head is cut at the last character boundary within the bound; `<n>` counts the bytes cut.

use std::path::Path;

use specgap_protocol::event::EventKind;
use specgap_protocol::text::head;
use specgap_store::{StoreError, TRAJECTORY_FILE, Trajectory, read_trajectory_file};

/// Bytes of one tool result shown to a chat Calibrator.
pub const MAX_OUTPUT_BYTES: usize = 2_000;

/// Bytes of one rollout's rendered trajectory shown to a chat Calibrator.
pub const MAX_TRAJECTORY_BYTES: usize = 32 * 1024;

/// A tool result as shown: trimmed, cut at [`MAX_OUTPUT_BYTES`] with the marker.
pub fn cut_output(output: &str) -> String {
    match head(output.trim(), MAX_OUTPUT_BYTES) {
        (whole, 0) => whole.to_owned(),
        (kept, cut) => format!("{kept}[… {cut} more bytes of this output cut]"),
    }
}

/// The compact rendering of `trajectory`, cut at [`MAX_TRAJECTORY_BYTES`] with the marker.
pub fn render(trajectory: &Trajectory) -> String {
    let events: Vec<&EventKind> = trajectory.events.iter().map(|e| &e.kind).collect();
    let mut text = specgap_audit::summary::compact_transcript(&events, &cut_output);
    if let Some(tail) = &trajectory.truncated {
        text.push_str(&format!("[the trajectory ends in a damaged frame: its last {} bytes were not readable]\n", tail.bytes));
    }
    match head(&text, MAX_TRAJECTORY_BYTES) {
        (_, 0) => text,
        (kept, cut) => format!("{kept}\n[… {cut} more bytes of this trajectory cut]\n"),
    }
}

/// The rendering of the trajectory in `episode_dir`; `(no trajectory recorded)` when the
/// episode wrote none.
///
/// # Errors
/// [`StoreError`] when the trajectory exists but cannot be read.
pub fn render_episode(episode_dir: &Path) -> Result<String, StoreError> {
    let path = episode_dir.join(TRAJECTORY_FILE);
    if !path.exists() {
        return Ok("(no trajectory recorded)\n".to_owned());
    }
    Ok(render(&read_trajectory_file(&path)?))
}
