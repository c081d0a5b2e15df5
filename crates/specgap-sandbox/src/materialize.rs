//! Materialization (DESIGN §3.1): the base cache, per-episode workspaces, overlays, diffs and
//! frozen submissions.
//!
//! The harness keeps one private git repository per task package in a [`BaseCache`], holding
//! the package's `workspace/` and a single base commit with a fixed author, committer, date
//! (2000-01-01T00:00:00Z) and message, so the commit id depends on the files alone and is the
//! same on every machine. An episode's workspace is a plain copy of that repository (files and
//! `.git`, objects packed so the copy is a handful of git files); no `git add` runs per
//! episode. From then on the agent owns the workspace's `.git`: every later diff is computed
//! from the work tree against the cache's copy of the base, never with the agent's `.git`.

use std::collections::HashMap;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use fs_err as fs;

use crate::error::MaterializeError;
use crate::fsutil::{self, EntryKind, GitEntries, copy_tree};
use crate::git::{self, Git};

/// Name of the commit-id file inside a cache entry.
const COMMIT_FILE: &str = "commit";
/// Name of the repository directory (work tree + `.git`) inside a cache entry.
const REPO_DIR: &str = "repo";
/// The branch the base commit is on.
const BRANCH: &str = "main";

/// A directory the harness owns that holds one base repository per task package, keyed by the
/// package content hash. Safe to share between threads and processes: an entry is built in a
/// temporary directory and renamed into place, so a reader sees a complete entry or none.
#[derive(Debug, Clone)]
pub struct BaseCache {
    root: PathBuf,
    /// One lock per key being built in this process, so that threads asking for the same new
    /// base at once build it once (other processes still race safely through the rename).
    building: Arc<Mutex<HashMap<String, Arc<Mutex<()>>>>>,
}

/// The cached base of one task package: a repository whose single commit holds the package's
/// `workspace/`. Cheap to clone; valid as long as the [`BaseCache`] directory exists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Base {
    key: String,
    repo: PathBuf,
    commit: String,
}

impl BaseCache {
    /// Opens (creating if needed) a base cache in `dir`.
    ///
    /// # Errors
    /// [`MaterializeError::Io`] when the directory cannot be created.
    pub fn new(dir: impl Into<PathBuf>) -> Result<Self, MaterializeError> {
        let root = dir.into();
        fs::create_dir_all(&root)?;
        let root = fs::canonicalize(&root)?;
        Ok(BaseCache { root, building: Arc::default() })
    }

    /// The cache directory.
    pub fn dir(&self) -> &Path {
        &self.root
    }

    /// The base of the package whose content hash is `key`, built from `workspace_src` (the
    /// package's `workspace/`) the first time and reused after. Entries named `.git` (any
    /// case, any depth) and special files in `workspace_src` are not part of the base.
    ///
    /// # Errors
    /// [`MaterializeError::InvalidKey`] for a key that is not a plain name; I/O and git
    /// failures otherwise.
    pub fn base(&self, key: &str, workspace_src: &Path) -> Result<Base, MaterializeError> {
        validate_key(key)?;
        let entry = self.root.join(key);
        if let Some(base) = read_entry(key, &entry)? {
            return Ok(base);
        }
        let key_lock = Arc::clone(self.building.lock().unwrap_or_else(PoisonError::into_inner).entry(key.to_string()).or_default());
        let _building = key_lock.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(base) = read_entry(key, &entry)? {
            return Ok(base);
        }
        let staging = tempfile::Builder::new().prefix(".building-").tempdir_in(&self.root)?;
        let repo = staging.path().join(REPO_DIR);
        copy_tree(workspace_src, &repo, GitEntries::Skip)?;
        let commit = commit_base(&repo)?;
        fs::write(staging.path().join(COMMIT_FILE), format!("{commit}\n"))?;
        let staged = staging.keep();
        match std::fs::rename(&staged, &entry) {
            Ok(()) => {}
            Err(_) if entry.join(COMMIT_FILE).exists() => {
                // Another builder won the race; ours is identical by construction.
                let _ = std::fs::remove_dir_all(&staged);
            }
            Err(e) => {
                let _ = std::fs::remove_dir_all(&staged);
                return Err(fsutil::annotate(e, "move the built base into", &entry).into());
            }
        }
        read_entry(key, &entry)?
            .ok_or_else(|| MaterializeError::Io(io::Error::other(format!("base cache entry {} vanished", entry.display()))))
    }
}

impl Base {
    /// The base commit id (40 hex digits); identical for identical `workspace/` trees.
    pub fn commit_id(&self) -> &str {
        &self.commit
    }

    /// The cache key (package content hash) this base was built for.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The harness's copy of the base work tree (read it, never hand it to an agent).
    pub fn tree_dir(&self) -> &Path {
        &self.repo
    }

    fn git_dir(&self) -> PathBuf {
        self.repo.join(".git")
    }
}

fn validate_key(key: &str) -> Result<(), MaterializeError> {
    let ok = !key.is_empty()
        && key.len() <= 128
        && !key.starts_with('.')
        && key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'_' || b == b'-');
    if ok { Ok(()) } else { Err(MaterializeError::InvalidKey(key.to_string())) }
}

fn read_entry(key: &str, entry: &Path) -> Result<Option<Base>, MaterializeError> {
    let commit_file = entry.join(COMMIT_FILE);
    match std::fs::read_to_string(&commit_file) {
        Ok(text) => Ok(Some(Base { key: key.to_string(), repo: entry.join(REPO_DIR), commit: text.trim().to_string() })),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(fsutil::annotate(e, "read", &commit_file).into()),
    }
}

/// `git init` in `repo`, index every file, write the fixed base commit, pack the objects.
fn commit_base(repo: &Path) -> Result<String, MaterializeError> {
    Git::new(repo).args(["init", "--quiet", "--template=", "--initial-branch", BRANCH, "."]).run()?;
    let git_dir = repo.join(".git");
    let index = git_dir.join("index");
    stage_tree(&git_dir, repo, &index, None)?;
    let tree = Git::new(repo).env("GIT_DIR", &git_dir).env("GIT_INDEX_FILE", &index).args(["write-tree"]).run_text()?;
    let commit = Git::new(repo)
        .env("GIT_DIR", &git_dir)
        .env("GIT_AUTHOR_NAME", git::BASE_IDENT_NAME)
        .env("GIT_AUTHOR_EMAIL", git::BASE_IDENT_EMAIL)
        .env("GIT_AUTHOR_DATE", git::BASE_DATE)
        .env("GIT_COMMITTER_NAME", git::BASE_IDENT_NAME)
        .env("GIT_COMMITTER_EMAIL", git::BASE_IDENT_EMAIL)
        .env("GIT_COMMITTER_DATE", git::BASE_DATE)
        .args(["commit-tree", &tree, "-m", git::BASE_MESSAGE])
        .run_text()?;
    Git::new(repo).env("GIT_DIR", &git_dir).args(["update-ref", &format!("refs/heads/{BRANCH}"), &commit]).run()?;
    // Packing turns thousands of loose objects into one file, so each episode copies a handful
    // of git files besides the work tree.
    Git::new(repo).env("GIT_DIR", &git_dir).args(["repack", "-a", "-d", "-q"]).run()?;
    Ok(commit)
}

/// Writes every regular file and symbolic link of `work_tree` (no `.git` entries) into the
/// index `index`, storing blobs in `object_dir` when given (else in `git_dir`). Content is
/// taken byte for byte: work-tree attributes and ignore rules are not consulted.
fn stage_tree(git_dir: &Path, work_tree: &Path, index: &Path, object_dir: Option<&Path>) -> Result<(), MaterializeError> {
    let mut paths = Vec::new();
    for entry in fsutil::walk(work_tree, GitEntries::Skip)? {
        if matches!(entry.kind, EntryKind::File | EntryKind::Symlink) {
            paths.extend_from_slice(entry.rel.as_os_str().as_bytes());
            paths.push(0);
        }
    }
    if paths.is_empty() {
        return Ok(());
    }
    let mut git =
        Git::new(work_tree).no_work_tree_attributes().env("GIT_DIR", git_dir).env("GIT_WORK_TREE", work_tree).env("GIT_INDEX_FILE", index);
    if let Some(objects) = object_dir {
        git = git.env("GIT_OBJECT_DIRECTORY", objects).env("GIT_ALTERNATE_OBJECT_DIRECTORIES", git_dir.join("objects"));
    }
    git.args(["update-index", "--add", "-z", "--stdin"]).stdin(paths).run()?;
    Ok(())
}

/// Makes a fresh episode workspace at `dest` (absent or empty): the base files plus a `.git`
/// holding the one base commit on branch `main`. With `residual_patch` (a residual state's
/// `state.patch`), the patch is applied to the files with `git apply --binary` and nothing is
/// committed, so `git status` in the workspace shows the inherited work.
///
/// # Errors
/// [`MaterializeError::DestinationNotEmpty`], [`MaterializeError::PatchFailed`], I/O errors.
pub fn materialize(base: &Base, dest: &Path, residual_patch: Option<&Path>) -> Result<(), MaterializeError> {
    if !fsutil::is_absent_or_empty(dest)? {
        return Err(MaterializeError::DestinationNotEmpty(dest.to_path_buf()));
    }
    copy_tree(&base.repo, dest, GitEntries::Keep)?;
    if let Some(patch) = residual_patch {
        apply_patch(base, dest, patch)?;
    }
    Ok(())
}

/// `git apply --binary` of `patch` onto the files of `workspace`, using the cache's git
/// directory (the workspace's `.git` is not read) and touching no index. The package's own
/// `.gitattributes` apply here (git 2.47's `apply` crashes with `--attr-source`); the package
/// is trusted, and without such a file the patch lands byte for byte.
fn apply_patch(base: &Base, workspace: &Path, patch: &Path) -> Result<(), MaterializeError> {
    let patch = fs::canonicalize(patch)?;
    let scratch = tempfile::Builder::new().prefix("specgap-apply-").tempdir()?;
    let result = Git::new(workspace)
        .env("GIT_DIR", base.git_dir())
        .env("GIT_WORK_TREE", workspace)
        .env("GIT_INDEX_FILE", scratch.path().join("index"))
        .args([std::ffi::OsStr::new("apply"), "--binary".as_ref(), "--whitespace=nowarn".as_ref(), patch.as_os_str()])
        .run();
    match result {
        Ok(_) => Ok(()),
        Err(MaterializeError::Git { stderr, .. }) => Err(MaterializeError::PatchFailed { patch, stderr }),
        Err(other) => Err(other),
    }
}

/// Copies a solution overlay (DESIGN §2: `solutions/gold/`, `solutions/literal/`,
/// `solutions/mutants/<id>/`) over `workspace`, then removes the workspace-relative paths
/// listed one per line in the overlay's `delete.txt` (blank lines and `#` comments ignored;
/// a listed path that does not exist is skipped). `delete.txt` itself is not copied. Nothing is
/// written or removed through a symbolic link.
///
/// # Errors
/// [`MaterializeError::PathEscapes`] for a `delete.txt` entry that is absolute, uses `..` or
/// passes through a symbolic link (checked before anything is removed); I/O errors.
pub fn apply_overlay(workspace: &Path, overlay: &Path) -> Result<(), MaterializeError> {
    let delete_list = overlay.join("delete.txt");
    let deletions = read_delete_list(workspace, &delete_list)?;
    let staging = tempfile::Builder::new().prefix("specgap-overlay-").tempdir()?;
    // Copy through a staging tree without delete.txt, so copy_tree's rules apply unchanged.
    for entry in fs::read_dir(overlay)? {
        let entry = entry?;
        if entry.file_name() == "delete.txt" {
            continue;
        }
        let name = entry.file_name();
        let from = overlay.join(&name);
        let meta = fs::symlink_metadata(&from)?;
        if meta.is_dir() {
            copy_tree(&from, &staging.path().join(&name), GitEntries::Skip)?;
        } else if meta.file_type().is_symlink() {
            std::os::unix::fs::symlink(fs::read_link(&from)?, staging.path().join(&name))?;
        } else if meta.is_file() {
            fs::copy(&from, staging.path().join(&name))?;
        }
    }
    copy_tree(staging.path(), workspace, GitEntries::Skip)?;
    for target in deletions {
        fsutil::remove_existing(&target)?;
    }
    Ok(())
}

fn read_delete_list(workspace: &Path, list: &Path) -> Result<Vec<PathBuf>, MaterializeError> {
    let text = match std::fs::read_to_string(list) {
        Ok(text) => text,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(fsutil::annotate(e, "read", list).into()),
    };
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let target = fsutil::confined_join(workspace, line)
            .ok_or_else(|| MaterializeError::PathEscapes { path: line.to_string(), source_file: list.to_path_buf() })?;
        out.push(target);
    }
    Ok(out)
}

/// The work tree of `workspace` against the base, as the exact bytes of a `git diff --binary
/// --full-index` patch (full blob ids, so the text never depends on how many objects the base
/// holds) that `git apply --binary` reproduces on a fresh materialization: modified, added
/// (untracked), deleted and binary files, symbolic links as links, file names of any bytes
/// (quoted as git quotes them, C-style with octal escapes); `.git` entries and special files
/// left out. Computed only from the cache's copy of the base with a temporary index and object
/// directory; the workspace's own `.git` is never read. Empty when nothing changed.
///
/// The patch is bytes, not text: a text file need not be UTF-8, and a lossy conversion would
/// make the patch apply to other files than the submitted ones. When only text files changed,
/// the patch is written in process (`crate::patch`, byte for byte what git writes); otherwise
/// git computes it. No file is read whole unless it changed and is at most
/// [`WHOLE_READ_MAX_BYTES`]; see [`diff_within`] for a bound on the patch itself.
///
/// # Errors
/// I/O and git failures.
pub fn diff(base: &Base, workspace: &Path) -> Result<Vec<u8>, MaterializeError> {
    let within = diff_within(base, workspace, u64::MAX)?;
    Ok(within.patch.unwrap_or_default())
}

pub use crate::patch::WHOLE_READ_MAX_BYTES;

/// A patch computed under a cap on its size ([`diff_within`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BoundedDiff {
    /// The patch ([`diff`]'s bytes), or `None` when it is longer than the cap: then nothing of
    /// it is kept.
    pub patch: Option<Vec<u8>>,
    /// The patch's exact length in bytes, also when it passed the cap (counted as git wrote
    /// it, never held).
    pub bytes: u64,
}

/// [`diff`] holding at most `max_bytes` of the patch in memory (issue 31 item 1, the
/// `--max-diff-bytes` cap): a patch longer than that is counted as git writes it and dropped,
/// so a submission near the per-file cap costs the runner a bounded buffer, not the file or
/// its patch. Files of equal size on both sides are compared in 64 KiB chunks; a changed file
/// above [`WHOLE_READ_MAX_BYTES`] is diffed by git, whose output is read in chunks.
///
/// # Errors
/// I/O and git failures.
pub fn diff_within(base: &Base, workspace: &Path, max_bytes: u64) -> Result<BoundedDiff, MaterializeError> {
    if let Some(patch) = crate::patch::text_patch(&base.repo, workspace, max_bytes)? {
        let bytes = patch.len() as u64;
        return Ok(BoundedDiff { patch: Some(patch), bytes });
    }
    let (patch, bytes) = git_diff(base, workspace)?.run_bounded(max_bytes)?;
    Ok(BoundedDiff { patch, bytes })
}

/// [`diff`] computed by git from a temporary index of the work tree.
#[cfg(test)]
pub(crate) fn git_diff_bytes(base: &Base, workspace: &Path) -> Result<Vec<u8>, MaterializeError> {
    Ok(git_diff(base, workspace)?.run_bounded(u64::MAX)?.0.unwrap_or_default())
}

/// The `git diff --cached` of a temporary index of the work tree against the base. The index
/// and its objects live in a scratch directory that lives as long as the returned call.
fn git_diff(base: &Base, workspace: &Path) -> Result<ScratchGit, MaterializeError> {
    let scratch = tempfile::Builder::new().prefix("specgap-diff-").tempdir()?;
    let index = scratch.path().join("index");
    let objects = scratch.path().join("objects");
    fs::create_dir(&objects)?;
    let git_dir = base.git_dir();
    stage_tree(&git_dir, workspace, &index, Some(&objects))?;
    let git = Git::new(workspace)
        .no_work_tree_attributes()
        .env("GIT_DIR", &git_dir)
        .env("GIT_WORK_TREE", workspace)
        .env("GIT_INDEX_FILE", &index)
        .env("GIT_OBJECT_DIRECTORY", &objects)
        .env("GIT_ALTERNATE_OBJECT_DIRECTORIES", git_dir.join("objects"))
        .args([
            "diff",
            "--cached",
            "--binary",
            "--full-index",
            "--no-ext-diff",
            "--no-textconv",
            "--no-color",
            "--no-renames",
            &base.commit,
            "--",
        ]);
    Ok(ScratchGit { git, _scratch: scratch })
}

/// A git call and the scratch directory its index lives in (removed when dropped).
struct ScratchGit {
    git: Git,
    _scratch: tempfile::TempDir,
}

impl ScratchGit {
    fn run_bounded(self, keep: u64) -> Result<(Option<Vec<u8>>, u64), MaterializeError> {
        self.git.run_bounded(keep)
    }
}

/// Copies the work tree of `workspace` to `dest` (absent or empty) for evaluation: regular
/// files with their permission bits, symbolic links as links (never followed), no `.git`
/// entries and no special files.
///
/// # Errors
/// [`MaterializeError::DestinationNotEmpty`], I/O errors.
pub fn freeze(workspace: &Path, dest: &Path) -> Result<(), MaterializeError> {
    if !fsutil::is_absent_or_empty(dest)? {
        return Err(MaterializeError::DestinationNotEmpty(dest.to_path_buf()));
    }
    copy_tree(workspace, dest, GitEntries::Skip)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_plain_names() {
        assert!(validate_key("abc-123_x.y").is_ok());
        for bad in ["", ".hidden", "a/b", "..", "a b", &"x".repeat(129)] {
            assert!(matches!(validate_key(bad), Err(MaterializeError::InvalidKey(_))), "{bad:?}");
        }
    }
}
