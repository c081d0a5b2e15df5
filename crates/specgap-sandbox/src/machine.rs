//! Copy-on-write machines for image environments (issue 25 item 4; seed 001 §3, the
//! Terminal-Bench track's residual states of a whole machine).
//!
//! A [`Machine`] is one episode's changes to an image's root filesystem: a kernel overlayfs
//! with the image's cached root as its lower layer and an upper directory of the machine's
//! own. A view made with [`crate::HostView::with_machine`] runs every sandbox on the merged
//! tree, so the agent may change any file of the image (install a package, edit `/etc`); the
//! image itself is never written, and no per-episode copy of it is made.
//!
//! The overlay is mounted in a mount namespace of the sandbox's own, just before bubblewrap
//! starts: util-linux `unshare` (adding a user namespace where the harness is not root) runs
//! `mount -t overlay` and then execs bubblewrap in the same process, so the mount disappears
//! with the sandbox and nothing is mounted in the harness's namespace. bubblewrap 0.8.0 has no
//! `--overlay` of its own. The image's top-level entries are bound writable from the merged
//! tree into bubblewrap's root, which stays read-only: a new top-level directory cannot be made.
//!
//! [`Machine::write_layer`] turns the upper directory into an OCI image layer (a tarball,
//! whiteouts as `.wh.` names), byte-identical for identical changes: entries sorted by name,
//! owner 0, mtime 0. Stacked on the image (`specgap-env`'s `EnvCache::layered`), it is the
//! machine an evaluator judges and the start of a continuation.

use std::ffi::OsStr;
use std::fs::File;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use crate::error::SandboxError;
use crate::scratch;

/// The prefix of a machine's scratch directory (`<prefix><pid>-<random>`, [`crate::scratch`]).
pub const MACHINE_PREFIX: &str = "specgap-machine-";

/// One episode's copy-on-write root filesystem: `upper/` holds what its sandboxes changed,
/// `work/` is overlayfs's own, `merged/` is where the overlay is mounted (in the sandbox's
/// mount namespace only). Removed on drop.
#[derive(Debug)]
pub struct Machine {
    dir: tempfile::TempDir,
}

/// What a layer written by [`Machine::write_layer`] holds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LayerSummary {
    /// Absolute paths (in the machine) of the regular files, links and directories the layer
    /// adds or replaces, sorted.
    pub changed: Vec<String>,
    /// Absolute paths the layer deletes (whiteouts), sorted.
    pub deleted: Vec<String>,
    /// Bytes of regular-file content in the layer.
    pub bytes: u64,
}

impl LayerSummary {
    /// Whether the layer changes nothing.
    pub fn is_empty(&self) -> bool {
        self.changed.is_empty() && self.deleted.is_empty()
    }
}

/// The overlay a sandbox of a [`Machine`] mounts: `lowerdir`, `upperdir`, `workdir` and the
/// mount point.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Overlay {
    pub lower: PathBuf,
    pub upper: PathBuf,
    pub work: PathBuf,
    pub merged: PathBuf,
}

impl Machine {
    /// A machine with no changes yet, under the harness's scratch directory.
    ///
    /// # Errors
    /// [`SandboxError::Overlay`] when overlayfs cannot be mounted here (checked once per
    /// process with a throw-away overlay: no `unshare`, no overlay support, or an unprivileged
    /// harness on a kernel without unprivileged overlay mounts); [`SandboxError::Io`].
    pub fn new() -> Result<Machine, SandboxError> {
        overlay_support()?;
        let dir = tempfile::Builder::new().prefix(&format!("{MACHINE_PREFIX}{}-", std::process::id())).tempdir_in(scratch::parent())?;
        for sub in ["upper", "work", "merged"] {
            fs_err::create_dir(dir.path().join(sub))?;
        }
        // The sandbox user must reach the merged tree's top through the machine's directory.
        fs_err::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755))?;
        Ok(Machine { dir })
    }

    /// The directory of the machine's changes (overlayfs's upper directory).
    pub fn upper(&self) -> PathBuf {
        self.dir.path().join("upper")
    }

    pub(crate) fn overlay(&self, lower: &Path) -> Result<Overlay, SandboxError> {
        let overlay = Overlay {
            lower: lower.to_path_buf(),
            upper: self.upper(),
            work: self.dir.path().join("work"),
            merged: self.dir.path().join("merged"),
        };
        for path in [&overlay.lower, &overlay.upper, &overlay.work] {
            if path.as_os_str().as_bytes().iter().any(|b| matches!(b, b',' | b':' | b'\\')) {
                return Err(SandboxError::BadBind {
                    path: path.clone(),
                    reason: "an overlay layer's path may not contain `,`, `:` or `\\`".into(),
                });
            }
        }
        Ok(overlay)
    }

    /// Writes the machine's changes over `lower` (the root filesystem its sandboxes ran on) to
    /// `out` as an OCI image layer (uncompressed tar) and says what it holds. Left out: empty
    /// directories that `lower` has too (mount points bubblewrap made, or a change of a
    /// directory's metadata only), and `skip` (absolute machine paths, e.g. the workspace's
    /// mount point) with everything under them. Identical changes give identical bytes.
    ///
    /// # Errors
    /// [`SandboxError::Io`] when the upper directory cannot be read or `out` written.
    pub fn write_layer(&self, lower: &Path, out: impl Write, skip: &[PathBuf]) -> Result<LayerSummary, SandboxError> {
        let upper = self.upper();
        let mut builder = tar::Builder::new(out);
        builder.mode(tar::HeaderMode::Deterministic);
        let mut summary = LayerSummary::default();
        let mut walker = walkdir::WalkDir::new(&upper).min_depth(1).sort_by(|a, b| a.file_name().cmp(b.file_name())).into_iter();
        while let Some(entry) = walker.next() {
            let entry = entry.map_err(|e| std::io::Error::other(e.to_string()))?;
            let rel = entry.path().strip_prefix(&upper).map_err(|e| std::io::Error::other(e.to_string()))?.to_path_buf();
            let absolute = Path::new("/").join(&rel);
            if skip.iter().any(|s| absolute.starts_with(s)) {
                if entry.file_type().is_dir() {
                    walker.skip_current_dir();
                }
                continue;
            }
            append_entry(&mut builder, Entry { path: entry.path(), rel: &rel, absolute: &absolute, lower }, &mut summary)?;
        }
        builder.into_inner()?.flush()?;
        Ok(summary)
    }
}

impl Drop for Machine {
    fn drop(&mut self) {
        // overlayfs leaves `work/work` with mode 0, which an unprivileged owner cannot empty.
        let inner = self.dir.path().join("work").join("work");
        let _ = std::fs::set_permissions(inner, std::fs::Permissions::from_mode(0o700));
    }
}

/// One entry of the upper directory: where it is, its path inside the upper directory and in
/// the machine, and the lower root it changes.
struct Entry<'a> {
    path: &'a Path,
    rel: &'a Path,
    absolute: &'a Path,
    lower: &'a Path,
}

/// Appends one entry of the upper directory in OCI layer form.
fn append_entry<W: Write>(builder: &mut tar::Builder<W>, entry: Entry<'_>, summary: &mut LayerSummary) -> Result<(), SandboxError> {
    let Entry { path, rel, absolute, lower } = entry;
    let meta = fs_err::symlink_metadata(path)?;
    let kind = meta.file_type();
    let mode = meta.permissions().mode() & 0o7777;
    if kind.is_char_device() && meta.rdev() == 0 {
        let name = rel.file_name().map(OsStr::as_bytes).unwrap_or_default();
        let whiteout = rel.with_file_name(OsStr::from_bytes(&[b".wh.", name].concat()));
        append_plain(builder, &whiteout, 0o644, &mut std::io::empty(), 0)?;
        summary.deleted.push(absolute.display().to_string());
    } else if kind.is_dir() {
        let opaque = is_opaque(path);
        if !opaque && is_empty_dir(path)? && lower.join(rel).is_dir() {
            // A mount point bubblewrap made, or a directory whose only change was its
            // metadata: nothing of the machine's contents.
            return Ok(());
        }
        let mut header = header(tar::EntryType::Directory, mode, 0);
        builder.append_data(&mut header, rel, &mut std::io::empty())?;
        if opaque {
            append_plain(builder, &rel.join(".wh..wh..opq"), 0o644, &mut std::io::empty(), 0)?;
        }
        summary.changed.push(absolute.display().to_string());
    } else if kind.is_symlink() {
        let target = fs_err::read_link(path)?;
        let mut header = header(tar::EntryType::Symlink, 0o777, 0);
        builder.append_link(&mut header, rel, &target)?;
        summary.changed.push(absolute.display().to_string());
    } else if kind.is_file() {
        let mut file = File::open(path)?;
        append_plain(builder, rel, mode, &mut file, meta.len())?;
        summary.bytes += meta.len();
        summary.changed.push(absolute.display().to_string());
    }
    // Sockets, fifos and devices are not part of a layer (the sandbox has its own `/dev`).
    Ok(())
}

fn header(kind: tar::EntryType, mode: u32, size: u64) -> tar::Header {
    let mut header = tar::Header::new_gnu();
    header.set_entry_type(kind);
    header.set_mode(mode);
    header.set_size(size);
    header.set_uid(0);
    header.set_gid(0);
    header.set_mtime(0);
    header
}

fn append_plain<W: Write>(
    builder: &mut tar::Builder<W>,
    rel: &Path,
    mode: u32,
    data: &mut impl std::io::Read,
    size: u64,
) -> Result<(), SandboxError> {
    let mut header = header(tar::EntryType::Regular, mode, size);
    builder.append_data(&mut header, rel, data)?;
    Ok(())
}

/// Whether overlayfs marked `dir` opaque (its lower contents hidden): `trusted.overlay.opaque`
/// when mounted by root, `user.overlay.opaque` in a user namespace.
fn is_opaque(dir: &Path) -> bool {
    ["trusted.overlay.opaque", "user.overlay.opaque"].iter().any(|name| xattr_is_y(dir, name))
}

fn xattr_is_y(path: &Path, name: &str) -> bool {
    let (Ok(path), Ok(name)) = (std::ffi::CString::new(path.as_os_str().as_bytes()), std::ffi::CString::new(name)) else { return false };
    let mut value = [0u8; 4];
    // SAFETY: NUL-terminated path and name; `value` is a buffer of the length passed.
    let len = unsafe { libc::lgetxattr(path.as_ptr(), name.as_ptr(), value.as_mut_ptr().cast(), value.len()) };
    len == 1 && value[0] == b'y'
}

fn is_empty_dir(dir: &Path) -> Result<bool, SandboxError> {
    Ok(fs_err::read_dir(dir)?.next().is_none())
}

/// The programs that mount a machine's overlay: util-linux `unshare` and `mount`, and a shell.
#[derive(Debug, Clone)]
pub(crate) struct OverlayTools {
    unshare: PathBuf,
    mount: PathBuf,
    shell: PathBuf,
}

/// The shell script run between `unshare` and bubblewrap: mount, then become bubblewrap
/// (same pid, so the harness's cgroup moves and kills still apply to it).
const MOUNT_SCRIPT: &str = "\"$1\" -t overlay specgap-machine -o \"$2\" \"$3\" || exit 125; shift 3; exec \"$@\"";

impl OverlayTools {
    fn find() -> Result<OverlayTools, SandboxError> {
        let find = |name: &str| {
            crate::host::find_on_path(name).ok_or_else(|| SandboxError::Overlay(format!("`{name}` (util-linux) is not on PATH")))
        };
        Ok(OverlayTools { unshare: find("unshare")?, mount: find("mount")?, shell: PathBuf::from("/bin/sh") })
    }

    /// `program args…` run with `overlay` mounted first: the program to spawn and its
    /// arguments after `argv[0]`.
    pub(crate) fn wrap(&self, overlay: &Overlay, program: &Path, args: &[Vec<u8>]) -> (PathBuf, Vec<Vec<u8>>) {
        let mut wrapped: Vec<Vec<u8>> = vec![b"--mount".to_vec(), b"--propagation".to_vec(), b"private".to_vec()];
        if !is_root() {
            wrapped.extend([b"--user".to_vec(), b"--map-root-user".to_vec()]);
        }
        wrapped.extend([b"--".to_vec(), self.shell.as_os_str().as_bytes().to_vec(), b"-c".to_vec(), MOUNT_SCRIPT.as_bytes().to_vec()]);
        wrapped.push(b"specgap-machine".to_vec());
        wrapped.push(self.mount.as_os_str().as_bytes().to_vec());
        wrapped.push(options(overlay).into_bytes());
        wrapped.push(overlay.merged.as_os_str().as_bytes().to_vec());
        wrapped.push(program.as_os_str().as_bytes().to_vec());
        wrapped.extend(args.iter().cloned());
        (self.unshare.clone(), wrapped)
    }
}

/// overlayfs's mount options. Directory renames are copies (`redirect_dir=off`) and copy-up
/// copies data (`metacopy=off`), so the upper directory alone says what changed; in a user
/// namespace the `user.` xattrs replace the `trusted.` ones.
fn options(overlay: &Overlay) -> String {
    let mut options = format!(
        "lowerdir={},upperdir={},workdir={},redirect_dir=off,metacopy=off,index=off",
        overlay.lower.display(),
        overlay.upper.display(),
        overlay.work.display()
    );
    if !is_root() {
        options.push_str(",userxattr");
    }
    options
}

fn is_root() -> bool {
    // SAFETY: geteuid cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// The overlay tools, once overlayfs was shown to mount here.
pub(crate) fn overlay_support() -> Result<&'static OverlayTools, SandboxError> {
    static SUPPORT: OnceLock<Result<OverlayTools, String>> = OnceLock::new();
    SUPPORT.get_or_init(|| probe().map_err(|e| e.to_string())).as_ref().map_err(|why| SandboxError::Overlay(why.clone()))
}

/// Mounts a throw-away overlay the way a sandbox would, and runs `true` on it.
fn probe() -> Result<OverlayTools, SandboxError> {
    let tools = OverlayTools::find()?;
    let dir = tempfile::Builder::new().prefix("specgap-overlay-probe-").tempdir_in(scratch::parent())?;
    for sub in ["lower", "upper", "work", "merged"] {
        fs_err::create_dir(dir.path().join(sub))?;
    }
    let overlay = Overlay {
        lower: dir.path().join("lower"),
        upper: dir.path().join("upper"),
        work: dir.path().join("work"),
        merged: dir.path().join("merged"),
    };
    let (program, args) = tools.wrap(&overlay, Path::new("/bin/true"), &[]);
    let output = Command::new(&program).args(args.iter().map(|a| OsStr::from_bytes(a))).output()?;
    let _ = std::fs::set_permissions(overlay.work.join("work"), std::fs::Permissions::from_mode(0o700));
    if output.status.success() {
        Ok(tools)
    } else {
        Err(SandboxError::Overlay(format!(
            "overlayfs cannot be mounted here ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        )))
    }
}
