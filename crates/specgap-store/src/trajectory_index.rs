//! Random access to a trajectory file: where each event's zstd frame starts, found without
//! decoding, so a viewer decodes only the events it shows.
//!
//! A trajectory is one complete zstd frame per event (see `trajectory.rs`). The frame sizes
//! are read from the frame and block headers (`ZSTD_findFrameCompressedSize`), which costs a
//! small fraction of decoding. [`TrajectoryIndex::refresh`] continues from where the last scan
//! stopped, so an episode that is still running is followed by reading only what was
//! appended. A frame that is not complete yet (the writer is in the middle of its one
//! `write`, or a crash cut it) is not indexed; [`TrajectoryIndex::pending_tail`] says how many
//! bytes follow the last complete frame.
//!
//! Events are returned as raw JSON values (`serde_json::Value`), not as
//! [`specgap_protocol::event::Event`]: a store written by a newer build may hold event kinds
//! this build does not know, and a reader must show them rather than fail.

use std::io::{Read, Seek, SeekFrom};
use std::ops::Range;
use std::path::Path;

use crate::error::StoreError;
use crate::trajectory::{TruncatedTail, decode_frame};

/// Bytes read per step while scanning for frames.
const SCAN_CHUNK: usize = 1 << 20;

/// Where each complete event frame of one trajectory file is.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TrajectoryIndex {
    /// `(byte offset, compressed length)` of each complete frame, in file order.
    frames: Vec<(u64, u32)>,
    /// Bytes of the file covered by complete frames.
    indexed: u64,
    /// Bytes after the last complete frame at the last scan.
    pending: u64,
}

impl TrajectoryIndex {
    /// Scans the trajectory file at `path`.
    ///
    /// # Errors
    /// [`StoreError::Io`] when it cannot be read.
    pub fn build(path: &Path) -> Result<TrajectoryIndex, StoreError> {
        let mut index = TrajectoryIndex::default();
        index.refresh(path)?;
        Ok(index)
    }

    /// Indexes the frames appended since the last scan; returns how many were added. A file
    /// shorter than what was indexed (rewritten by a restarted attempt) is scanned anew.
    ///
    /// # Errors
    /// [`StoreError::Io`] when the file cannot be read.
    pub fn refresh(&mut self, path: &Path) -> Result<usize, StoreError> {
        let mut file = fs_err::File::open(path)?;
        let len = file.metadata()?.len();
        if len < self.indexed {
            *self = TrajectoryIndex::default();
        }
        let before = self.frames.len();
        file.seek(SeekFrom::Start(self.indexed))?;
        let mut buffer: Vec<u8> = Vec::new();
        let mut base = self.indexed;
        let mut chunk = vec![0u8; SCAN_CHUNK];
        let mut at_end = false;
        loop {
            // Walk every complete frame in the buffer.
            let mut pos = 0usize;
            while pos < buffer.len() {
                let rest = &buffer[pos..];
                match zstd::zstd_safe::find_frame_compressed_size(rest) {
                    Ok(n) if n > 0 && n <= rest.len() => {
                        let length = u32::try_from(n).unwrap_or(u32::MAX);
                        self.frames.push((base + pos as u64, length));
                        pos += n;
                    }
                    _ => break,
                }
            }
            buffer.drain(..pos);
            base += pos as u64;
            if at_end {
                break;
            }
            let read = file.read(&mut chunk)?;
            if read == 0 {
                at_end = true;
                continue;
            }
            buffer.extend_from_slice(&chunk[..read]);
        }
        self.indexed = base;
        self.pending = buffer.len() as u64;
        Ok(self.frames.len() - before)
    }

    /// Complete events indexed.
    pub fn len(&self) -> usize {
        self.frames.len()
    }

    /// Whether no complete event was found.
    pub fn is_empty(&self) -> bool {
        self.frames.is_empty()
    }

    /// Bytes of the file covered by complete frames.
    pub fn indexed_bytes(&self) -> u64 {
        self.indexed
    }

    /// The bytes after the last complete frame, if any: a frame being written now, or (in a
    /// finished episode) a cut last frame left by a crash.
    pub fn pending_tail(&self) -> Option<TruncatedTail> {
        (self.pending > 0).then_some(TruncatedTail { offset: self.indexed, bytes: self.pending })
    }

    /// Decodes the events at positions `range` (clamped to what is indexed), as raw JSON.
    ///
    /// # Errors
    /// [`StoreError::Io`]; [`StoreError::TrajectoryFrame`] when a frame does not decode;
    /// [`StoreError::TrajectoryEvent`] when it is not one JSON value.
    pub fn read(&self, path: &Path, range: Range<usize>) -> Result<Vec<serde_json::Value>, StoreError> {
        self.read_as(path, range)
    }

    /// Decodes the events at positions `range` as `T`: a struct naming only the fields it
    /// needs skips the rest without building them (a timeline of 10,000 events with 64 KiB
    /// outputs never allocates the outputs).
    ///
    /// # Errors
    /// As [`TrajectoryIndex::read`]; [`StoreError::TrajectoryEvent`] when an event does not
    /// have `T`'s shape.
    pub fn read_as<T: serde::de::DeserializeOwned>(&self, path: &Path, range: Range<usize>) -> Result<Vec<T>, StoreError> {
        let end = range.end.min(self.frames.len());
        let start = range.start.min(end);
        let frames = &self.frames[start..end];
        let Some(&(first, _)) = frames.first() else {
            return Ok(Vec::new());
        };
        let (last, last_len) = frames[frames.len() - 1];
        let span = usize::try_from(last + u64::from(last_len) - first).unwrap_or(usize::MAX);
        let mut file = fs_err::File::open(path)?;
        file.seek(SeekFrom::Start(first))?;
        let mut bytes = vec![0u8; span];
        file.read_exact(&mut bytes)?;
        let mut out = Vec::with_capacity(frames.len());
        for &(offset, length) in frames {
            let at = (offset - first) as usize;
            let frame = &bytes[at..at + length as usize];
            out.push(decode_as(path, offset, frame)?);
        }
        Ok(out)
    }
}

fn decode_as<T: serde::de::DeserializeOwned>(path: &Path, offset: u64, frame: &[u8]) -> Result<T, StoreError> {
    let line = decode_frame(frame).map_err(|source| StoreError::TrajectoryFrame { path: path.to_path_buf(), offset, source })?;
    serde_json::from_slice(&line).map_err(|source| StoreError::TrajectoryEvent { path: path.to_path_buf(), offset, source })
}

/// Every event of the trajectory file at `path` as raw JSON, and the cut last frame, if
/// any (as [`crate::read_trajectory_file`], without requiring known event kinds).
///
/// # Errors
/// As [`TrajectoryIndex::read`].
pub fn read_trajectory_values(path: &Path) -> Result<(Vec<serde_json::Value>, Option<TruncatedTail>), StoreError> {
    let index = TrajectoryIndex::build(path)?;
    let events = index.read(path, 0..index.len())?;
    Ok((events, index.pending_tail()))
}
