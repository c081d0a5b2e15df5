//! Helpers: fixture paths and broken copies of fixtures in temporary directories.

use std::path::{Path, PathBuf};

/// `tests/fixtures/<name>`.
pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name)
}

/// A copy of a fixture in a fresh temporary directory; the package is `<tmp>/<name>`.
pub struct Copy {
    _tmp: tempfile::TempDir,
    /// The copied package root.
    pub root: PathBuf,
}

impl Copy {
    /// Copies `tests/fixtures/<name>` (symlinks kept as symlinks).
    pub fn of(name: &str) -> Copy {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join(name);
        copy_tree(&fixture(name), &root);
        Copy { _tmp: tmp, root }
    }

    /// Copies the bundled example package `examples/tasks/<name>`.
    pub fn of_example(name: &str) -> Copy {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join(name);
        let source = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/tasks").join(name);
        copy_tree(&source, &root);
        Copy { _tmp: tmp, root }
    }

    /// A path inside the copy.
    pub fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    /// Overwrites (or creates) a file of the copy.
    pub fn write(&self, rel: &str, text: &str) {
        let path = self.path(rel);
        fs_err::create_dir_all(path.parent().unwrap()).unwrap();
        fs_err::write(path, text).unwrap();
    }

    /// Reads a file of the copy.
    pub fn read(&self, rel: &str) -> String {
        fs_err::read_to_string(self.path(rel)).unwrap()
    }

    /// Replaces the one occurrence of `old` in a file; panics unless there is exactly one.
    pub fn replace(&self, rel: &str, old: &str, new: &str) {
        let text = self.read(rel);
        assert_eq!(text.matches(old).count(), 1, "`{old}` in {rel}");
        self.write(rel, &text.replacen(old, new, 1));
    }

    /// Removes a file or directory of the copy.
    pub fn remove(&self, rel: &str) {
        let path = self.path(rel);
        if path.is_dir() {
            fs_err::remove_dir_all(path).unwrap();
        } else {
            fs_err::remove_file(path).unwrap();
        }
    }

    /// Creates a symlink at `rel` pointing to `target`.
    pub fn symlink(&self, target: &str, rel: &str) {
        std::os::unix::fs::symlink(target, self.path(rel)).unwrap();
    }

    /// The load error of the copy, as text.
    pub fn load_error(&self) -> String {
        specgap_task::load(&self.root).map(|p| p.name().to_owned()).unwrap_err().to_string()
    }
}

/// Copies a tree, recreating directories, files (with permissions) and symlinks.
pub fn copy_tree(from: &Path, to: &Path) {
    for entry in walkdir::WalkDir::new(from) {
        let entry = entry.unwrap();
        let dest = to.join(entry.path().strip_prefix(from).unwrap());
        let file_type = entry.file_type();
        if file_type.is_dir() {
            fs_err::create_dir_all(&dest).unwrap();
        } else if file_type.is_symlink() {
            std::os::unix::fs::symlink(fs_err::read_link(entry.path()).unwrap(), &dest).unwrap();
        } else {
            fs_err::copy(entry.path(), &dest).unwrap();
        }
    }
}

/// Adds `probes = <list>` (a TOML array) to a req-basic copy's `[project]`, after its replay.
pub fn add_probes(copy: &Copy, list: &str) {
    let replay = "replay = \"python3 -m billing.replay {record}\"\n";
    copy.replace("task.toml", replay, &format!("{replay}probes = {list}\n"));
}
