//! `episodes/<id>/trajectory.jsonl.zst`: one JSON event per line, each line its own zstd frame.
//!
//! Writing every event as a separate, complete zstd frame appended with one `write` call makes
//! the file crash-safe: a process killed at any moment leaves every earlier event readable, and
//! at worst a cut last frame, which [`read_trajectory_file`] skips and reports. Concatenated
//! frames are a valid zstd stream, so `zstdcat trajectory.jsonl.zst` prints the JSON Lines.

use std::io::Write;
use std::path::{Path, PathBuf};

use specgap_protocol::event::Event;

use crate::error::{StoreError, json_error};

/// File name of a trajectory inside an episode directory.
pub const TRAJECTORY_FILE: &str = "trajectory.jsonl.zst";

/// zstd level for trajectory frames (the library default: fast, good on JSON).
const FRAME_LEVEL: i32 = 3;

/// A trajectory read back from disk.
#[derive(Debug, Clone, PartialEq)]
pub struct Trajectory {
    /// Events in file order (their `seq` counts 0, 1, 2, …).
    pub events: Vec<Event>,
    /// Set when the file ends in a cut frame (a crash while writing): what was skipped.
    pub truncated: Option<TruncatedTail>,
}

/// The undecodable end of a trajectory file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TruncatedTail {
    /// Byte offset where the cut frame starts.
    pub offset: u64,
    /// Bytes skipped from there to the end of the file.
    pub bytes: u64,
}

/// The trajectory path of episode `id` in run directory `run_dir`.
pub fn trajectory_path(run_dir: &Path, id: &str) -> PathBuf {
    run_dir.join("episodes").join(id).join(TRAJECTORY_FILE)
}

/// Reads the trajectory of episode `id` in run directory `run_dir`.
///
/// # Errors
/// See [`read_trajectory_file`].
pub fn read_trajectory(run_dir: &Path, id: &str) -> Result<Trajectory, StoreError> {
    read_trajectory_file(&trajectory_path(run_dir, id))
}

/// Reads a trajectory file frame by frame. A cut last frame is not an error: the events
/// before it are returned and [`Trajectory::truncated`] says what was skipped.
///
/// # Errors
/// [`StoreError::Io`] when the file cannot be read; [`StoreError::TrajectoryFrame`] when a
/// complete frame fails to decode; [`StoreError::TrajectoryEvent`] when a frame is not one JSON
/// event line.
pub fn read_trajectory_file(path: &Path) -> Result<Trajectory, StoreError> {
    let data = crate::files::read_whole(path)?;
    let mut events = Vec::new();
    let mut pos = 0usize;
    while pos < data.len() {
        let rest = &data[pos..];
        let frame_len = match zstd::zstd_safe::find_frame_compressed_size(rest) {
            Ok(len) if len > 0 && len <= rest.len() => len,
            // The frame header or body runs past the end of the file: a cut last frame.
            _ => {
                let truncated = TruncatedTail { offset: pos as u64, bytes: rest.len() as u64 };
                return Ok(Trajectory { events, truncated: Some(truncated) });
            }
        };
        let offset = pos as u64;
        let line =
            decode_frame(&rest[..frame_len]).map_err(|source| StoreError::TrajectoryFrame { path: path.to_path_buf(), offset, source })?;
        let event: Event =
            serde_json::from_slice(&line).map_err(|source| StoreError::TrajectoryEvent { path: path.to_path_buf(), offset, source })?;
        events.push(event);
        pos += frame_len;
    }
    Ok(Trajectory { events, truncated: None })
}

/// Frames that say they decode to more than this are decoded by streaming instead of into one
/// buffer of the announced size (a damaged header must not allocate gigabytes).
const MAX_FRAME_BUFFER: u64 = 64 << 20;

thread_local! {
    /// One decompression context per thread, reused for every frame: creating a zstd context
    /// costs more than decoding a typical event, and reports read many trajectories.
    static DECOMPRESSOR: std::cell::RefCell<Option<zstd::bulk::Decompressor<'static>>> =
        const { std::cell::RefCell::new(None) };
}

/// Decodes one complete frame, with the thread's reused context when the frame records its
/// content size (frames written by [`FrameWriter`] do).
pub(crate) fn decode_frame(frame: &[u8]) -> std::io::Result<Vec<u8>> {
    let size = match zstd::zstd_safe::get_frame_content_size(frame) {
        Ok(Some(size)) if size <= MAX_FRAME_BUFFER => size as usize,
        _ => return zstd::stream::decode_all(frame),
    };
    DECOMPRESSOR.with_borrow_mut(|slot| {
        let decompressor = match slot {
            Some(d) => d,
            None => slot.insert(zstd::bulk::Decompressor::new()?),
        };
        decompressor.decompress(frame, size)
    })
}

/// `bytes` as one complete zstd frame at [`FRAME_LEVEL`]. One compression context per thread,
/// reused for every frame: creating a context allocates and clears several hundred KiB, which
/// per event cost more than compressing the event itself.
fn compress_frame(bytes: &[u8]) -> std::io::Result<Vec<u8>> {
    thread_local! {
        static COMPRESSOR: std::cell::RefCell<Option<zstd::bulk::Compressor<'static>>> =
            const { std::cell::RefCell::new(None) };
    }
    COMPRESSOR.with(|cell| {
        let mut slot = cell.borrow_mut();
        let compressor = match slot.as_mut() {
            Some(c) => c,
            None => slot.insert(zstd::bulk::Compressor::new(FRAME_LEVEL)?),
        };
        compressor.compress(bytes)
    })
}

/// Appends events to a trajectory file, one zstd frame each.
#[derive(Debug)]
pub(crate) struct FrameWriter {
    file: fs_err::File,
}

impl FrameWriter {
    /// Creates (truncating) the trajectory file.
    pub(crate) fn create(path: &Path) -> Result<Self, StoreError> {
        let file = fs_err::File::create(path)?;
        Ok(FrameWriter { file })
    }

    /// Writes one event as one frame with a single `write_all`, so the kernel holds it even if
    /// the process is killed right after.
    pub(crate) fn append(&mut self, event: &Event) -> Result<(), StoreError> {
        let mut line = serde_json::to_vec(event).map_err(|e| json_error(format!("trajectory event {}", event.seq))(e))?;
        line.push(b'\n');
        let frame = compress_frame(&line)?;
        self.file.write_all(&frame)?;
        Ok(())
    }

    /// Flushes file contents to disk (called when the episode finishes).
    pub(crate) fn sync(&mut self) -> Result<(), StoreError> {
        self.file.sync_data()?;
        Ok(())
    }
}
