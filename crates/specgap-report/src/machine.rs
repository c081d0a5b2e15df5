//! Kept over a whole machine (seed 001 App. D.2 "Kept", on the Terminal-Bench track's
//! whole-machine residual states; issue 25 item 4).
//!
//! A whole-machine state's predecessor changed files outside the workspace; its
//! `residual/<id>/machine.tar` holds them as an OCI layer over the task's image, and each
//! submission of a continuation stores its own changes over that (`submissions/<k>/machine.tar`,
//! absent when it changed nothing). For Kept, a machine file counts like a workspace file,
//! keyed by its absolute path (`/etc/tool.conf`): P is the lines the predecessor's layer added
//! or replaced relative to the image's version of the file, and the final state's added lines
//! are those of the file as the continuation left it (its own layer's version, else the
//! predecessor's; deleted by a whiteout or an opaque directory: none) against the image's.
//!
//! The image's version comes from the user's environment cache when the task's root filesystem
//! is there; without it every line of a changed file counts as added (a warning says so).

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// What a layer does to one path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Change {
    /// A regular file with these bytes.
    File(Vec<u8>),
    /// Deleted (a `.wh.` whiteout).
    Deleted,
}

/// The regular files, whiteouts and opaque directories of one layer, by absolute path.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct LayerFiles {
    files: BTreeMap<String, Change>,
    /// Directories whose lower contents the layer hides (`.wh..wh..opq`).
    opaque: Vec<String>,
}

impl LayerFiles {
    /// Reads the layer tarball at `path`; `None` when it cannot be read.
    pub(crate) fn read(path: &Path) -> Option<LayerFiles> {
        let mut archive = tar::Archive::new(fs_err::File::open(path).ok()?);
        let mut layer = LayerFiles::default();
        for entry in archive.entries().ok()? {
            let mut entry = entry.ok()?;
            let rel = entry.path().ok()?.to_string_lossy().trim_start_matches("./").trim_end_matches('/').to_string();
            let (dir, name) = rel.rsplit_once('/').map_or(("", rel.as_str()), |(d, n)| (d, n));
            let absolute = |name: &str| if dir.is_empty() { format!("/{name}") } else { format!("/{dir}/{name}") };
            if name == ".wh..wh..opq" {
                layer.opaque.push(if dir.is_empty() { "/".into() } else { format!("/{dir}") });
            } else if let Some(target) = name.strip_prefix(".wh.") {
                layer.files.insert(absolute(target), Change::Deleted);
            } else if entry.header().entry_type().is_file() {
                let mut bytes = Vec::new();
                entry.read_to_end(&mut bytes).ok()?;
                layer.files.insert(absolute(name), Change::File(bytes));
            }
        }
        Some(layer)
    }

    /// Whether the layer hides `path` of the layers below it (a whiteout of it or of a parent,
    /// or an opaque parent directory).
    fn hides(&self, path: &str) -> bool {
        let under = |dir: &str| dir == "/" || path.starts_with(&format!("{dir}/"));
        self.opaque.iter().any(|dir| under(dir))
            || self.files.iter().any(|(p, change)| *change == Change::Deleted && (p == path || path.starts_with(&format!("{p}/"))))
    }
}

/// A whole-machine state's layer and the image it lies over. The layer is read, and P
/// computed, once per state, however many continuations start from it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MachineState {
    /// `residual/<id>/machine.tar`.
    pub layer: PathBuf,
    /// The task's root filesystem in the user's environment cache, when it is there.
    pub image_root: Option<PathBuf>,
    files: OnceLock<Option<LayerFiles>>,
    inherited: OnceLock<Option<BTreeMap<String, Vec<String>>>>,
}

impl MachineState {
    /// The state whose layer is `layer`, over the image at `image_root` (when cached).
    pub fn new(layer: PathBuf, image_root: Option<PathBuf>) -> MachineState {
        MachineState { layer, image_root, files: OnceLock::new(), inherited: OnceLock::new() }
    }

    /// The predecessor's layer, read on first use; `None` when it cannot be read.
    fn files(&self) -> Option<&LayerFiles> {
        self.files.get_or_init(|| LayerFiles::read(&self.layer)).as_ref()
    }

    /// P of the machine: per absolute path, the lines the predecessor's layer added or
    /// replaced relative to the image's version. `None` when the layer cannot be read.
    pub(crate) fn inherited(&self) -> Option<&BTreeMap<String, Vec<String>>> {
        self.inherited
            .get_or_init(|| {
                let layer = self.files()?;
                Some(
                    layer
                        .files
                        .iter()
                        .filter_map(|(path, change)| match change {
                            Change::File(bytes) => Some((path.clone(), self.added(path, bytes, layer.hides(path)))),
                            Change::Deleted => None,
                        })
                        .collect(),
                )
            })
            .as_ref()
    }

    /// The final machine's added lines per absolute path, relative to the image, with
    /// `last` (the continuation's last submission layer, `None` when it changed nothing) over
    /// the predecessor's layer. `None` when the predecessor's layer cannot be read.
    pub(crate) fn final_added(&self, last: Option<&LayerFiles>) -> Option<BTreeMap<String, Vec<String>>> {
        let inherited = self.files()?;
        let empty = LayerFiles::default();
        let last = last.unwrap_or(&empty);
        let mut out = BTreeMap::new();
        let paths = inherited.files.keys().chain(last.files.keys());
        for path in paths {
            let bytes = match last.files.get(path) {
                Some(Change::File(bytes)) => Some(bytes),
                Some(Change::Deleted) => None,
                None if last.hides(path) => None,
                None => match inherited.files.get(path) {
                    Some(Change::File(bytes)) => Some(bytes),
                    _ => None,
                },
            };
            if let Some(bytes) = bytes {
                let hidden = last.hides(path) || inherited.hides(path);
                out.insert(path.clone(), self.added(path, bytes, hidden));
            }
        }
        Some(out)
    }

    /// The lines of `bytes` that are not in the image's version of `path` (an order-preserving
    /// diff), or all of them when the image's version is unknown, hidden or absent.
    fn added(&self, path: &str, bytes: &[u8], hidden: bool) -> Vec<String> {
        let new = String::from_utf8_lossy(bytes);
        let image = (!hidden)
            .then(|| self.image_root.as_ref().and_then(|root| std::fs::read(root.join(path.trim_start_matches('/'))).ok()))
            .flatten();
        let Some(old) = image else { return new.lines().map(str::to_string).collect() };
        let old = String::from_utf8_lossy(&old);
        let diff = similar::TextDiff::configure().algorithm(similar::Algorithm::Myers).diff_lines(old.as_ref(), new.as_ref());
        diff.iter_all_changes()
            .filter(|c| c.tag() == similar::ChangeTag::Insert)
            .map(|c| c.value().trim_end_matches('\n').to_string())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diff::kept_lines;

    /// A layer tarball of `(path, content)` regular files (whiteouts and `.wh..wh..opq` by name).
    fn layer(dir: &Path, name: &str, files: &[(&str, &str)]) -> PathBuf {
        let path = dir.join(name);
        let mut builder = tar::Builder::new(std::fs::File::create(&path).unwrap());
        for (file, text) in files {
            let mut header = tar::Header::new_gnu();
            header.set_size(text.len() as u64);
            header.set_mode(0o644);
            header.set_cksum();
            builder.append_data(&mut header, file, text.as_bytes()).unwrap();
        }
        builder.finish().unwrap();
        path
    }

    fn lines(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    /// Image `/etc/conf` = "a b"; the predecessor appended `c` and added `/etc/new` = "x y".
    fn state(dir: &Path) -> MachineState {
        let image = dir.join("image");
        std::fs::create_dir_all(image.join("etc")).unwrap();
        std::fs::write(image.join("etc/conf"), "a\nb\n").unwrap();
        let layer = layer(dir, "state.tar", &[("etc/conf", "a\nb\nc\n"), ("etc/new", "x\ny\n")]);
        MachineState::new(layer, Some(image))
    }

    #[test]
    fn p_is_what_the_predecessor_added_over_the_image_and_an_untouched_machine_keeps_it_all() {
        let dir = tempfile::tempdir().unwrap();
        let state = state(dir.path());
        let p = state.inherited().unwrap().clone();
        assert_eq!(p, BTreeMap::from([("/etc/conf".to_string(), lines(&["c"])), ("/etc/new".to_string(), lines(&["x", "y"]))]));
        assert_eq!(kept_lines(&p, &state.final_added(None).unwrap()), (3, 3));
        // Without the image every line of a changed file is the predecessor's.
        let unknown = MachineState::new(state.layer.clone(), None);
        assert_eq!(unknown.inherited().unwrap()["/etc/conf"], lines(&["a", "b", "c"]));
    }

    #[test]
    fn rewrites_whiteouts_and_opaque_directories_of_the_continuation_take_lines_away() {
        let dir = tempfile::tempdir().unwrap();
        let state = state(dir.path());
        let p = state.inherited().unwrap().clone();
        let rewrote = LayerFiles::read(&layer(dir.path(), "rewrote.tar", &[("etc/conf", "a\nz\n"), ("etc/.wh.new", "")])).unwrap();
        let finals = state.final_added(Some(&rewrote)).unwrap();
        assert_eq!(finals, BTreeMap::from([("/etc/conf".to_string(), lines(&["z"]))]));
        assert_eq!(kept_lines(&p, &finals), (0, 3));
        // An opaque /etc hides the image's and the predecessor's files: the continuation's
        // /etc/conf is all new lines, of which `c` is the predecessor's.
        let opaque = LayerFiles::read(&layer(dir.path(), "opaque.tar", &[("etc/.wh..wh..opq", ""), ("etc/conf", "a\nb\nc\n")])).unwrap();
        let finals = state.final_added(Some(&opaque)).unwrap();
        assert_eq!(finals, BTreeMap::from([("/etc/conf".to_string(), lines(&["a", "b", "c"]))]));
        assert_eq!(kept_lines(&p, &finals), (1, 3));
    }
}
