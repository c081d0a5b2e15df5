//! The per-episode caps on what an agent may leave in its workspace (issue 31 item 1).
//!
//! Workspaces live in shared memory (`/dev/shm`, [`crate::scratch`]): every byte the agent
//! writes there costs RAM, and every byte of a changed file is read again to diff, store and
//! evaluate it. Real blocks are charged to the memory cgroup of the process that wrote them
//! (tmpfs pages count in `memory.usage`), but a *sparse* file costs no blocks and can claim
//! any apparent size. So the harness measures the **apparent** size (`st_size`) of every
//! regular file, never the blocks, and refuses to read a tree that is over a cap:
//! [`over_limit`] walks the tree without following links or reading any file, and stops at
//! the first cap passed. The engine measures after every agent turn and before every diff,
//! and ends the episode `workspace_limit` with the phrase this module returns
//! (docs/decisions.md "issue 31 item 1").

use std::io;
use std::path::Path;

/// One mebibyte, in bytes.
const MIB: u64 = 1024 * 1024;

/// Default `--max-workspace-bytes`: 512 MiB of apparent size over the whole workspace (and
/// the machine's copy-on-write layer of an image episode).
pub const DEFAULT_MAX_WORKSPACE_BYTES: u64 = 512 * MIB;
/// Default `--max-file-bytes`: 64 MiB of apparent size for any one file.
pub const DEFAULT_MAX_FILE_BYTES: u64 = 64 * MIB;
/// Default `--max-diff-bytes`: 64 MiB for one submission's patch.
pub const DEFAULT_MAX_DIFF_BYTES: u64 = 64 * MIB;

/// The caps of one episode, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WorkspaceLimits {
    /// Sum of the apparent sizes of every regular file in the measured trees.
    pub max_workspace_bytes: u64,
    /// Apparent size of any one regular file.
    pub max_file_bytes: u64,
    /// Bytes of one submission's patch.
    pub max_diff_bytes: u64,
}

impl Default for WorkspaceLimits {
    fn default() -> Self {
        WorkspaceLimits {
            max_workspace_bytes: DEFAULT_MAX_WORKSPACE_BYTES,
            max_file_bytes: DEFAULT_MAX_FILE_BYTES,
            max_diff_bytes: DEFAULT_MAX_DIFF_BYTES,
        }
    }
}

impl WorkspaceLimits {
    /// Why a patch of `bytes` bytes may not be stored, or `None` when it may.
    pub fn diff_over(&self, bytes: u64) -> Option<String> {
        (bytes > self.max_diff_bytes)
            .then(|| format!("the submission's diff is {bytes} bytes, over the cap of {} bytes (--max-diff-bytes)", self.max_diff_bytes))
    }
}

/// Why the trees `roots` (a workspace, and an image episode's machine upper directory) pass
/// a cap of `limits`, or `None` when they do not: the first file whose apparent size is over
/// `max_file_bytes`, or the running sum of apparent sizes once it is over
/// `max_workspace_bytes`. Symbolic links are not followed (a link counts its own length);
/// entries that vanish while the tree is walked (a running agent deletes them) are skipped.
///
/// # Errors
/// I/O errors other than a vanished entry, naming the path.
pub fn over_limit(roots: &[&Path], limits: &WorkspaceLimits) -> io::Result<Option<String>> {
    let mut total: u64 = 0;
    let mut pending: Vec<std::path::PathBuf> = roots.iter().map(|root| root.to_path_buf()).collect();
    while let Some(dir) = pending.pop() {
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => return Err(crate::fsutil::annotate(e, "read", &dir)),
        };
        for entry in entries {
            let entry = entry.map_err(|e| crate::fsutil::annotate(e, "read", &dir))?;
            let path = entry.path();
            let meta = match std::fs::symlink_metadata(&path) {
                Ok(meta) => meta,
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) => return Err(crate::fsutil::annotate(e, "inspect", &path)),
            };
            if meta.is_dir() {
                pending.push(path);
                continue;
            }
            let size = meta.len();
            if meta.is_file() && size > limits.max_file_bytes {
                return Ok(Some(format!(
                    "the file {} is {size} bytes (apparent size), over the per-file cap of {} bytes (--max-file-bytes)",
                    shown(roots, &path),
                    limits.max_file_bytes
                )));
            }
            total = total.saturating_add(size);
            if total > limits.max_workspace_bytes {
                return Ok(Some(format!(
                    "the workspace holds more than {} bytes (apparent size of its files), over the cap of {} bytes (--max-workspace-bytes)",
                    limits.max_workspace_bytes, limits.max_workspace_bytes
                )));
            }
        }
    }
    Ok(None)
}

/// `path` relative to the root it is under, as the agent sees it.
fn shown(roots: &[&Path], path: &Path) -> String {
    let rel = roots.iter().find_map(|root| path.strip_prefix(root).ok()).unwrap_or(path);
    format!("`{}`", rel.display())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(workspace: u64, file: u64) -> WorkspaceLimits {
        WorkspaceLimits { max_workspace_bytes: workspace, max_file_bytes: file, max_diff_bytes: 0 }
    }

    #[test]
    fn a_sparse_file_counts_its_apparent_size_and_links_are_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let sparse = std::fs::File::create(dir.path().join("sparse.bin")).unwrap();
        sparse.set_len(1 << 30).unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("big.txt"), vec![b'x'; 4096]).unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("link")).unwrap();
        let over = over_limit(&[dir.path()], &limits(u64::MAX, 1 << 29)).unwrap();
        assert_eq!(
            over.as_deref(),
            Some("the file `sparse.bin` is 1073741824 bytes (apparent size), over the per-file cap of 536870912 bytes (--max-file-bytes)")
        );
        // Exactly at the caps is within them: 2^30 bytes of the file plus the link's own length.
        let link_len = std::fs::symlink_metadata(dir.path().join("link")).unwrap().len();
        assert_eq!(over_limit(&[dir.path()], &limits((1 << 30) + link_len, 1 << 30)).unwrap(), None);
        let over = over_limit(&[dir.path()], &limits(1 << 30, 1 << 30)).unwrap();
        assert_eq!(
            over.as_deref(),
            Some(
                "the workspace holds more than 1073741824 bytes (apparent size of its files), over the cap of 1073741824 bytes (--max-workspace-bytes)"
            )
        );
    }

    #[test]
    fn every_root_counts_and_a_missing_root_is_empty() {
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        std::fs::create_dir(a.path().join("sub")).unwrap();
        std::fs::write(a.path().join("sub/one.txt"), [0u8; 600]).unwrap();
        std::fs::write(b.path().join("two.txt"), [0u8; 600]).unwrap();
        let missing = a.path().join("absent");
        assert_eq!(over_limit(&[a.path(), &missing], &limits(1000, 1000)).unwrap(), None);
        assert!(over_limit(&[a.path(), b.path()], &limits(1000, 1000)).unwrap().is_some());
        assert_eq!(WorkspaceLimits::default().diff_over(64 << 20), None);
        assert_eq!(
            WorkspaceLimits::default().diff_over((64 << 20) + 1).as_deref(),
            Some("the submission's diff is 67108865 bytes, over the cap of 67108864 bytes (--max-diff-bytes)")
        );
    }
}
