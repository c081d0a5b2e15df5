//! Whether a file a command read reached the agent, decided without holding the file
//! (issue 31 item 1: the runner never reads a whole workspace file into memory; an agent's
//! `cat` of a 64 MiB file must not cost the runner 64 MiB).
//!
//! A file is read in windows of at most [`WINDOW_BYTES`] that end at a line break, and each
//! window is given to [`Observation::shows`]; the file is shown when one window is. For a file
//! with a distinct line in every window this is exactly the whole-file rule (some distinct
//! line ends an observation line). The edge cases, where the rule is applied per window rather
//! than to the whole file: a window with no distinct line uses the short-file rule on its own
//! lines, and a line longer than a window is split (its pieces are compared as lines, so it can
//! only be shown when a piece ends an observation line; tool results are far shorter than a
//! window). A file of at most one window is decided exactly as before.

use std::io::Read;
use std::path::Path;

use specgap_protocol::reads::Observation;

/// The most bytes of a file held at once (1 MiB, plus the line carried into the next window).
pub(crate) const WINDOW_BYTES: usize = 1024 * 1024;

/// Whether `seen` shows the content of the file at `path`; `false` when it cannot be read
/// (a file the agent removed reached nobody through this observation's measure).
pub(crate) fn file_shown(path: &Path, seen: &Observation<'_>) -> bool {
    let Ok(mut file) = std::fs::File::open(path) else { return false };
    let mut window: Vec<u8> = Vec::with_capacity(WINDOW_BYTES);
    let mut chunk = vec![0u8; WINDOW_BYTES];
    loop {
        let n = match file.read(&mut chunk) {
            Ok(0) => return !window.is_empty() && seen.shows(&String::from_utf8_lossy(&window)),
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => return false,
        };
        window.extend_from_slice(&chunk[..n]);
        if window.len() < WINDOW_BYTES {
            continue;
        }
        // The window ends at its last line break; the partial line after it starts the next.
        let cut = window.iter().rposition(|&b| b == b'\n').map_or(window.len(), |at| at + 1);
        if seen.shows(&String::from_utf8_lossy(&window[..cut])) {
            return true;
        }
        window.drain(..cut);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_past_the_first_window_is_found_and_small_files_keep_the_whole_file_rule() {
        let dir = tempfile::tempdir().unwrap();
        let big = dir.path().join("big.txt");
        let mut text = String::new();
        for i in 0..100_000 {
            text.push_str(&format!("line number {i:06} of the file\n"));
        }
        assert!(text.len() > 2 * WINDOW_BYTES);
        std::fs::write(&big, &text).unwrap();
        assert!(file_shown(&big, &Observation::new("exit status 0\n--- stdout ---\nline number 099999 of the file\n")));
        assert!(file_shown(&big, &Observation::new("big.txt:1:line number 000000 of the file")));
        assert!(!file_shown(&big, &Observation::new("line number 100000 of the file")));

        let short = dir.path().join("short.txt");
        std::fs::write(&short, "42\nok\n").unwrap();
        assert!(file_shown(&short, &Observation::new("d.txt:1:42\nd.txt:2:ok")));
        assert!(!file_shown(&short, &Observation::new("42")));
        assert!(!file_shown(&dir.path().join("absent"), &Observation::new("42")));
    }
}
