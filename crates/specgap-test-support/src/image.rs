//! Image environments for tests: a root filesystem of Debian's busybox-static (one static
//! program, its applets as links; no libc, no loader), optionally with Debian's bash-static as
//! `/bin/bash`, packed as a tarball; and a format-2 task package on such an image, scored by a
//! shell `test.sh` that writes Harbor's `result.json` (workdir `/app`, tests at `/tests`,
//! verifier output at `/logs/verifier`).

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::external;
use crate::files::write_file;

/// Debian's busybox-static.
pub const BUSYBOX: &str = "/bin/busybox";
/// Debian's bash-static.
pub const BASH_STATIC: &str = "/bin/bash-static";

/// Whether busybox-static is installed; `false` after [`external::missing`].
///
/// # Panics
/// When it is missing and `SPECGAP_REQUIRE_EXTERNAL=1`.
pub fn have_busybox() -> bool {
    external::have_file(Path::new(BUSYBOX), &format!("{BUSYBOX} (Debian's busybox-static) is missing"))
}

/// Whether busybox-static and bash-static are both installed; `false` after
/// [`external::missing`].
///
/// # Panics
/// When one is missing and `SPECGAP_REQUIRE_EXTERNAL=1`.
pub fn have_busybox_and_static_bash() -> bool {
    have_busybox() && external::have_file(Path::new(BASH_STATIC), &format!("{BASH_STATIC} (Debian's bash-static) is missing"))
}

/// A busybox root filesystem to write: `bin/busybox`, a link per applet, empty directories,
/// text files, optionally a static bash.
#[derive(Debug, Clone, Default)]
pub struct BusyboxImage {
    applets: Vec<String>,
    dirs: Vec<String>,
    files: Vec<(String, String)>,
    static_bash: bool,
}

impl BusyboxImage {
    /// An image whose `/bin` links each of `applets` (`sh`, `cat`, …) to busybox.
    pub fn new(applets: &[&str]) -> Self {
        Self { applets: applets.iter().map(|a| (*a).to_string()).collect(), ..Self::default() }
    }

    /// Adds the empty directories `dirs` (relative, like `tmp`).
    #[must_use]
    pub fn dirs(mut self, dirs: &[&str]) -> Self {
        self.dirs.extend(dirs.iter().map(|d| (*d).to_string()));
        self
    }

    /// Adds the text file `path` (relative, like `etc/image-release`) holding `text`.
    #[must_use]
    pub fn file(mut self, path: &str, text: &str) -> Self {
        self.files.push((path.to_string(), text.to_string()));
        self
    }

    /// Adds bash-static as `/bin/bash`.
    #[must_use]
    pub fn with_static_bash(mut self) -> Self {
        self.static_bash = true;
        self
    }

    /// Writes the tree at `tree`.
    ///
    /// # Panics
    /// When busybox (or bash-static) is missing or a file cannot be written.
    pub fn write_tree(&self, tree: &Path) {
        for dir in ["bin", "etc"].into_iter().chain(self.dirs.iter().map(String::as_str)) {
            std::fs::create_dir_all(tree.join(dir)).unwrap_or_else(|e| panic!("create {}: {e}", tree.join(dir).display()));
        }
        copy(Path::new(BUSYBOX), &tree.join("bin/busybox"));
        for applet in &self.applets {
            std::os::unix::fs::symlink("busybox", tree.join("bin").join(applet)).unwrap_or_else(|e| panic!("link {applet}: {e}"));
        }
        if self.static_bash {
            copy(Path::new(BASH_STATIC), &tree.join("bin/bash"));
        }
        for (path, text) in &self.files {
            write_file(&tree.join(path), text);
        }
    }

    /// Writes the tree beside `tarball` (its name with the extension `tree`) and packs it as the
    /// tarball; returns the tree's path.
    ///
    /// # Panics
    /// As [`write_tree`](Self::write_tree), or when `tar` fails.
    pub fn write_tarball(&self, tarball: &Path) -> PathBuf {
        let tree = tarball.with_extension("tree");
        self.write_tree(&tree);
        if let Some(parent) = tarball.parent() {
            std::fs::create_dir_all(parent).unwrap_or_else(|e| panic!("create {}: {e}", parent.display()));
        }
        tar(&tree, tarball, ".");
        tree
    }
}

fn copy(from: &Path, to: &Path) {
    std::fs::copy(from, to).unwrap_or_else(|e| panic!("copy {} to {}: {e}", from.display(), to.display()));
}

/// Packs `what` (a path relative to `tree`, `.` for all) of `tree` into the tarball `out` and
/// returns the tarball's bytes.
///
/// # Panics
/// When `tar` fails or the tarball cannot be read.
pub fn tar(tree: &Path, out: &Path, what: &str) -> Vec<u8> {
    let status = Command::new("tar")
        .arg("-C")
        .arg(tree)
        .arg("-cf")
        .arg(out)
        .arg(what)
        .status()
        .unwrap_or_else(|e| panic!("run tar -C {} -cf {} {what}: {e}", tree.display(), out.display()));
    assert!(status.success(), "tar -C {} -cf {} {what}: {status}", tree.display(), out.display());
    std::fs::read(out).unwrap_or_else(|e| panic!("read {}: {e}", out.display()))
}

/// A format-2 task package on a busybox image, scored by `evaluator/test.sh` (run as
/// `sh test.sh` in `/tests`, writing `/logs/verifier/result.json`, 30 s), its workspace one
/// `README` saying `answers go here`.
#[derive(Debug, Clone)]
pub struct ImageTask<'a> {
    /// `[task] name`.
    pub name: &'a str,
    /// `[task] description`.
    pub description: &'a str,
    /// `instruction.md`.
    pub instruction: &'a str,
    /// `evaluator/test.sh`.
    pub test_sh: &'a str,
}

impl ImageTask<'_> {
    /// Writes the package at `root`, its rootfs `environment/rootfs.tar` from `image`.
    ///
    /// # Panics
    /// As [`BusyboxImage::write_tarball`], or when a file cannot be written.
    pub fn write(&self, root: &Path, image: &BusyboxImage) {
        image.write_tarball(&root.join("environment/rootfs.tar"));
        let task_toml = format!(
            "format = 2\n\n[task]\nname = \"{}\"\nversion = \"1.0.0\"\ndescription = \"{}\"\nfamily = \"terminal\"\n\n\
             [environment]\nrootfs = \"environment/rootfs.tar\"\nworkdir = \"/app\"\n\n\
             [evaluator]\ncommand = \"sh test.sh\"\ndir = \"/tests\"\nout = \"/logs/verifier\"\ntimeout_sec = 30\n",
            self.name, self.description
        );
        write_file(&root.join("task.toml"), &task_toml);
        write_file(&root.join("instruction.md"), self.instruction);
        write_file(&root.join("workspace/README"), "answers go here\n");
        write_file(&root.join("evaluator/test.sh"), self.test_sh);
    }
}

/// A `test.sh` writing reward 1.0 when `/app/answer.txt` says 42, else 0.0.
pub const REWARD_FOR_42: &str = "if test \"$(cat /app/answer.txt 2>/dev/null)\" = 42; then r=1.0; else r=0.0; fi\n\
     echo \"{\\\"version\\\": 1, \\\"reward\\\": $r}\" > /logs/verifier/result.json\n";
