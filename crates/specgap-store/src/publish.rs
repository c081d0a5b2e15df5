//! Copying a finished run from the machine's local disk to shared storage (`specgap run
//! --publish DIR`; docs/scale-out.md "Local disk while running").
//!
//! A run store is SQLite in WAL mode, which needs working POSIX locks and shared memory: on
//! NFS and most cluster file systems those are unreliable across machines, and a store
//! written there can be corrupted. So a shard runs into local disk and, once it has ended,
//! its store is published: the WAL is checkpointed into the database file (nothing is left
//! only in `results.sqlite-wal`), the run directory is copied under a hidden temporary name
//! inside `DIR` (so on `DIR`'s own file system) with every file and directory fsynced, and
//! the copy is renamed into place. A reader of `DIR` sees no copy or a whole one, never half
//! of one; `specgap merge DIR` skips the hidden names.

use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use crate::error::{SqlContext, StoreError};
use crate::runner_lock::RUNNER_LOCK;
use crate::store::Store;

/// Files of a run directory that are not copied: the runner's lock, and SQLite's WAL and
/// shared-memory index, which hold nothing after the checkpoint.
const NOT_PUBLISHED: &[&str] = &[RUNNER_LOCK, "results.sqlite-wal", "results.sqlite-shm"];

/// Copies the run `store` into `dir/name` atomically (see the module documentation) and
/// returns where it went. When `dir/name` exists already (a retried shard published again),
/// the copy goes to `dir/name.2`, `dir/name.3`, …: nothing published is ever replaced, and
/// `specgap merge` keeps one of identical copies and refuses copies that differ. Call it when
/// no episode is running: the caller holds the runner lock and its run has ended.
///
/// # Errors
/// [`StoreError::CheckpointBusy`] when another connection keeps the WAL from being
/// checkpointed; [`StoreError::BadPublishName`] for a `name` that is empty, hidden or holds a
/// `/`; file errors naming the path (the temporary copy is removed).
pub fn publish(store: &Store, dir: &Path, name: &str) -> Result<PathBuf, StoreError> {
    if name.is_empty() || name.starts_with('.') || name.contains('/') {
        return Err(StoreError::BadPublishName { name: name.to_string() });
    }
    checkpoint(store)?;
    fs_err::create_dir_all(dir)?;
    let staging = dir.join(format!(".{name}.partial-{}-{}", std::process::id(), nanos()));
    let copied = copy_synced(store.dir(), &staging).and_then(|()| place(&staging, dir, name));
    if copied.is_err() {
        let _ = fs_err::remove_dir_all(&staging);
    }
    copied
}

/// Moves every page of the WAL into the database file and empties the WAL
/// (`PRAGMA wal_checkpoint(TRUNCATE)`).
fn checkpoint(store: &Store) -> Result<(), StoreError> {
    let path = store.db_path();
    let conn = store.conn();
    let busy: i64 = conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |row| row.get(0)).at(path)?;
    if busy != 0 {
        return Err(StoreError::CheckpointBusy { path: path.to_path_buf() });
    }
    Ok(())
}

/// Renames `staging` to `dir/name`, or the first free `dir/name.N` (N from 2), then syncs
/// `dir` so the new entry survives a crash.
fn place(staging: &Path, dir: &Path, name: &str) -> Result<PathBuf, StoreError> {
    for n in 1u32.. {
        let target = if n == 1 { dir.join(name) } else { dir.join(format!("{name}.{n}")) };
        if target.exists() {
            continue;
        }
        match std::fs::rename(staging, &target) {
            Ok(()) => {
                sync_dir(dir)?;
                return Ok(target);
            }
            // Another copy took the name between the check and the rename: rename(2) does not
            // replace a non-empty directory.
            Err(e) if matches!(e.kind(), ErrorKind::DirectoryNotEmpty | ErrorKind::AlreadyExists) => continue,
            Err(source) => {
                return Err(StoreError::Io(std::io::Error::new(
                    source.kind(),
                    format!("cannot rename {} to {}: {source}", staging.display(), target.display()),
                )));
            }
        }
    }
    unreachable!("u32 names run out only after four billion copies")
}

/// Copies the run directory `src` to `dst` (created), files fsynced as written and every
/// directory fsynced after its entries, leaving out [`NOT_PUBLISHED`] at the top level.
fn copy_synced(src: &Path, dst: &Path) -> Result<(), StoreError> {
    copy_tree(src, dst, true)
}

fn copy_tree(src: &Path, dst: &Path, top: bool) -> Result<(), StoreError> {
    fs_err::create_dir(dst)?;
    for entry in fs_err::read_dir(src)? {
        let entry = entry?;
        let file_name = entry.file_name();
        if top && NOT_PUBLISHED.iter().any(|skip| file_name == *skip) {
            continue;
        }
        let target = dst.join(&file_name);
        let kind = entry.file_type()?;
        if kind.is_dir() {
            copy_tree(&entry.path(), &target, false)?;
        } else if kind.is_file() {
            fs_err::copy(entry.path(), &target)?;
            fs_err::File::open(&target)?.sync_all()?;
        }
        // A store holds no links or special files; anything else is not part of the run.
    }
    sync_dir(dst)
}

fn sync_dir(dir: &Path) -> Result<(), StoreError> {
    fs_err::File::open(dir)?.sync_all()?;
    Ok(())
}

fn nanos() -> u128 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos())
}

/// The name of the file system kind holding `path` (or its nearest existing ancestor) when
/// it is a network or cluster file system on which SQLite's locking is unreliable — `nfs`,
/// `cifs`, `smb2`, `ceph`, `lustre`, `gpfs`, `beegfs`, `afs`, `9p`, `fuse` (sshfs, object-store
/// mounts) — else `None` (local disks, tmpfs, overlay, unknown kinds).
pub fn network_filesystem(path: &Path) -> Option<&'static str> {
    let existing = path.ancestors().find(|p| p.exists())?;
    let text = std::ffi::CString::new(std::os::unix::ffi::OsStrExt::as_bytes(existing.as_os_str())).ok()?;
    let mut stat: libc::statfs = zeroed_statfs();
    // SAFETY: statfs(2) writes into `stat`, a properly sized and aligned struct; `text` is a
    // NUL-terminated path that outlives the call.
    let rc = unsafe { libc::statfs(text.as_ptr(), &mut stat) };
    if rc != 0 {
        return None;
    }
    // `f_type`'s integer type differs between architectures (i64 here, u32 or i32 elsewhere).
    #[allow(clippy::useless_conversion)]
    let magic = i64::from(stat.f_type);
    network_kind(magic)
}

fn zeroed_statfs() -> libc::statfs {
    // SAFETY: `statfs` is a plain C struct of integers, for which all-zero bytes are valid.
    unsafe { std::mem::zeroed() }
}

/// The network file system of a `statfs` magic number (linux/magic.h and the file systems'
/// own headers), if it is one.
fn network_kind(magic: i64) -> Option<&'static str> {
    Some(match magic {
        0x6969 => "nfs",
        0x517B => "smb",
        0xFF53_4D42 => "cifs",
        0xFE53_4D42 => "smb2",
        0x00C3_6400 => "ceph",
        0x0BD0_0BD0 => "lustre",
        0x4750_4653 => "gpfs",
        0x1983_0326 => "beegfs",
        0x5346_414F => "afs",
        0x0102_1997 => "9p",
        0x6573_5546 => "fuse",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn network_file_systems_are_named_and_local_ones_are_not() {
        assert_eq!(network_kind(0x6969), Some("nfs"));
        assert_eq!(network_kind(0x0BD0_0BD0), Some("lustre"));
        assert_eq!(network_kind(0xEF53), None, "ext4");
        assert_eq!(network_kind(0x0102_1994), None, "tmpfs");
        assert_eq!(network_filesystem(Path::new("/dev/shm/surely/not/there")), None);
    }

    #[test]
    fn results_db_is_published() {
        assert!(!NOT_PUBLISHED.contains(&crate::store::RESULTS_DB));
    }
}
