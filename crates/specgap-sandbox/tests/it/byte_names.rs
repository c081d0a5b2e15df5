//! File names are bytes (issue 10 item 3): any tree of names (not UTF-8, spaces, quotes,
//! backslashes, newlines, tabs, leading dashes), contents (text, binary, empty, no final
//! newline, not UTF-8) and modes (regular, executable, symbolic link) survives materialize →
//! edit → diff → apply to a fresh materialization unchanged, and the diff quotes names as git
//! does.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use proptest::prelude::*;
use proptest::test_runner::Config;
use specgap_sandbox::{BaseCache, diff, materialize};

/// What a tree entry is: the only things git records.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Node {
    /// A regular file with its content and whether its owner may execute it.
    File { bytes: Vec<u8>, exec: bool },
    /// A symbolic link with its target.
    Link(Vec<u8>),
}

/// A tree: workspace-relative path (as bytes) → entry. Directories are implied, as in git.
type Tree = BTreeMap<Vec<u8>, Node>;

fn os(bytes: &[u8]) -> &Path {
    Path::new(OsStr::from_bytes(bytes))
}

/// Every file and link under `root` (no `.git`), byte for byte; directories are left out.
fn snapshot(root: &Path) -> Tree {
    let mut tree = Tree::new();
    let walker = walkdir::WalkDir::new(root).min_depth(1).follow_links(false).into_iter();
    for entry in walker.filter_entry(|e| e.depth() != 1 || e.file_name() != ".git") {
        let entry = entry.unwrap();
        let rel = entry.path().strip_prefix(root).unwrap().as_os_str().as_bytes().to_vec();
        let meta = std::fs::symlink_metadata(entry.path()).unwrap();
        if meta.file_type().is_symlink() {
            tree.insert(rel, Node::Link(std::fs::read_link(entry.path()).unwrap().as_os_str().as_bytes().to_vec()));
        } else if meta.is_file() {
            let exec = meta.permissions().mode() & 0o100 != 0;
            tree.insert(rel, Node::File { bytes: std::fs::read(entry.path()).unwrap(), exec });
        }
    }
    tree
}

/// Writes `node` at `root/rel`, replacing whatever is there (an empty directory left behind
/// by deletions, a file, a link).
fn write_node(root: &Path, rel: &[u8], node: &Node) {
    let path = root.join(os(rel));
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    match std::fs::symlink_metadata(&path) {
        Ok(meta) if meta.is_dir() => std::fs::remove_dir_all(&path).unwrap(),
        Ok(_) => std::fs::remove_file(&path).unwrap(),
        Err(_) => {}
    }
    match node {
        Node::File { bytes, exec } => {
            std::fs::write(&path, bytes).unwrap();
            let mode = if *exec { 0o755 } else { 0o644 };
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        }
        Node::Link(target) => symlink(os(target), &path).unwrap(),
    }
}

/// One piece of a name: a plain letter or one of the bytes that need care.
fn name_piece() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        6 => (b'a'..=b'z').prop_map(|b| vec![b]),
        1 => Just(b" ".to_vec()),
        1 => Just(b"\"".to_vec()),
        1 => Just(b"\\".to_vec()),
        1 => Just(b"\n".to_vec()),
        1 => Just(b"\t".to_vec()),
        1 => Just(b"-".to_vec()),
        1 => Just(b".".to_vec()),
        1 => Just("é".as_bytes().to_vec()),
        1 => (0x80u8..=0xff).prop_map(|b| vec![b]),
        1 => (1u8..0x20).prop_map(|b| vec![b]),
    ]
}

/// A file name: any bytes but `/` and NUL, and not `.`, `..` or `.git` (any case).
fn name() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(name_piece(), 1..5)
        .prop_map(|pieces| pieces.concat())
        .prop_filter("a name git tracks", |n| n != b"." && n != b".." && !n.eq_ignore_ascii_case(b".git"))
}

/// A path of one or two names.
fn path() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(name(), 1..=2).prop_map(|names| names.join(&b'/'))
}

/// File content: empty, lines of text (with or without the last newline), binary (a NUL),
/// or text that is not UTF-8.
fn content() -> impl Strategy<Value = Vec<u8>> {
    let text_byte = prop_oneof![6 => b'a'..=b'z', 2 => Just(b'\n'), 1 => Just(b' ')];
    prop_oneof![
        1 => Just(Vec::new()),
        3 => prop::collection::vec(text_byte, 1..60),
        1 => prop::collection::vec(any::<u8>(), 0..40).prop_map(|mut b| {
            b.insert(b.len() / 2, 0);
            b
        }),
        1 => prop::collection::vec(prop_oneof![b'a'..=b'z', 0x80u8..=0xff, Just(b'\n')], 1..40),
    ]
}

fn node() -> impl Strategy<Value = Node> {
    prop_oneof![
        4 => (content(), any::<bool>()).prop_map(|(bytes, exec)| Node::File { bytes, exec }),
        1 => (any::<bool>(), name()).prop_map(|(up, target)| Node::Link(if up { [b"../".as_slice(), &target].concat() } else { target })),
    ]
}

/// An edit of the workspace; indices pick an existing entry (modulo the count).
#[derive(Debug, Clone)]
enum Edit {
    Add(Vec<u8>, Node),
    Modify(usize, Vec<u8>),
    Delete(usize),
    Chmod(usize),
    Rename(usize, Vec<u8>),
    Retype(usize, Node),
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        (path(), node()).prop_map(|(p, n)| Edit::Add(p, n)),
        (any::<usize>(), content()).prop_map(|(i, c)| Edit::Modify(i, c)),
        any::<usize>().prop_map(Edit::Delete),
        any::<usize>().prop_map(Edit::Chmod),
        (any::<usize>(), name()).prop_map(|(i, n)| Edit::Rename(i, n)),
        (any::<usize>(), node()).prop_map(|(i, n)| Edit::Retype(i, n)),
    ]
}

/// Whether `path` can join `tree`: it is not inside an entry and no entry is inside it.
fn fits(tree: &Tree, path: &[u8]) -> bool {
    let inside = |outer: &[u8], inner: &[u8]| inner.len() > outer.len() && inner.starts_with(outer) && inner[outer.len()] == b'/';
    !tree.keys().any(|k| inside(k, path) || inside(path, k))
}

/// A consistent tree from generated entries (later entries that clash are dropped).
fn build(entries: Vec<(Vec<u8>, Node)>) -> Tree {
    let mut tree = Tree::new();
    for (path, node) in entries {
        if !tree.contains_key(&path) && fits(&tree, &path) {
            tree.insert(path, node);
        }
    }
    tree
}

/// Applies `edit` to the model `tree` and to the workspace `root` alike.
fn apply_edit(tree: &mut Tree, root: &Path, edit: Edit) {
    let pick = |tree: &Tree, i: usize| (!tree.is_empty()).then(|| tree.keys().nth(i % tree.len()).cloned()).flatten();
    match edit {
        Edit::Add(path, node) => {
            if !tree.contains_key(&path) && fits(tree, &path) {
                write_node(root, &path, &node);
                tree.insert(path, node);
            }
        }
        Edit::Modify(i, bytes) | Edit::Retype(i, Node::File { bytes, .. }) => {
            if let Some(path) = pick(tree, i) {
                let exec = matches!(tree[&path], Node::File { exec: true, .. });
                let node = Node::File { bytes, exec };
                write_node(root, &path, &node);
                tree.insert(path, node);
            }
        }
        Edit::Retype(i, link @ Node::Link(_)) => {
            if let Some(path) = pick(tree, i) {
                write_node(root, &path, &link);
                tree.insert(path, link);
            }
        }
        Edit::Delete(i) => {
            if let Some(path) = pick(tree, i) {
                std::fs::remove_file(root.join(os(&path))).unwrap();
                tree.remove(&path);
            }
        }
        Edit::Chmod(i) => {
            if let Some(path) = pick(tree, i)
                && let Some(Node::File { bytes, exec }) = tree.get(&path).cloned()
            {
                let node = Node::File { bytes, exec: !exec };
                write_node(root, &path, &node);
                tree.insert(path, node);
            }
        }
        Edit::Rename(i, name) => {
            let Some(from) = pick(tree, i) else { return };
            let to = match from.iter().rposition(|&b| b == b'/') {
                Some(slash) => [&from[..=slash], name.as_slice()].concat(),
                None => name,
            };
            let mut rest = tree.clone();
            let node = rest.remove(&from).unwrap_or(Node::Link(b"x".to_vec()));
            if !rest.contains_key(&to) && fits(&rest, &to) {
                std::fs::remove_file(root.join(os(&from))).unwrap();
                write_node(root, &to, &node);
                rest.insert(to, node);
                *tree = rest;
            }
        }
    }
}

/// Scratch directories for one case, under one temporary root.
struct Case {
    dir: tempfile::TempDir,
}

impl Case {
    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
}

fn cases() -> u32 {
    std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(64)
}

/// Materializes `start`, makes `edits`, stores the diff, applies it to a fresh
/// materialization, and returns (expected tree, workspace tree, replayed tree, patch).
fn round_trip(start: &Tree, edits: Vec<Edit>) -> (Tree, Tree, Tree, Vec<u8>) {
    static KEY: AtomicUsize = AtomicUsize::new(0);
    let case = Case { dir: tempfile::tempdir().unwrap() };
    let src = case.path("src");
    std::fs::create_dir_all(&src).unwrap();
    for (path, node) in start {
        write_node(&src, path, node);
    }
    let cache = BaseCache::new(case.path("bases")).unwrap();
    let base = cache.base(&format!("k{}", KEY.fetch_add(1, Ordering::Relaxed)), &src).unwrap();
    let ws = case.path("ws");
    materialize(&base, &ws, None).unwrap();
    assert_eq!(&snapshot(&ws), start, "the materialized workspace is the package's");
    let mut expected = start.clone();
    for edit in edits {
        apply_edit(&mut expected, &ws, edit);
    }
    let patch = diff(&base, &ws).unwrap();
    let stored = case.path("workspace.diff");
    std::fs::write(&stored, &patch).unwrap();
    let replayed = case.path("replayed");
    materialize(&base, &replayed, (!patch.is_empty()).then_some(stored.as_path())).unwrap();
    (expected, snapshot(&ws), snapshot(&replayed), patch)
}

proptest! {
    #![proptest_config(Config { cases: cases(), failure_persistence: None, max_shrink_iters: 256, ..Config::default() })]

    #[test]
    fn any_tree_of_byte_names_survives_materialize_edit_diff_apply(
        entries in prop::collection::vec((path(), node()), 0..8),
        edits in prop::collection::vec(edit(), 0..8),
    ) {
        let start = build(entries);
        let (expected, workspace, replayed, patch) = round_trip(&start, edits);
        prop_assert_eq!(&workspace, &expected);
        prop_assert_eq!(&replayed, &expected, "patch:\n{}", String::from_utf8_lossy(&patch));
        // Names in the patch are quoted as git quotes them: never a raw byte above 0x7f or a
        // control character in a header line.
        for line in patch.split(|&b| b == b'\n').filter(|l| l.starts_with(b"diff --git ")) {
            prop_assert!(line.iter().all(|&b| (0x20..0x7f).contains(&b)), "{:?}", String::from_utf8_lossy(line));
        }
    }
}

#[test]
fn a_latin1_name_is_stored_quoted_and_reapplies() {
    // Two names that a lossy conversion would both turn into "caf\u{fffd}.txt".
    let start = build(vec![(b"caf\xe9.txt".to_vec(), Node::File { bytes: b"one\n".to_vec(), exec: false })]);
    let edits =
        vec![Edit::Add(b"caf\xea.txt".to_vec(), Node::File { bytes: b"two\n".to_vec(), exec: true }), Edit::Modify(0, b"uno\n".to_vec())];
    let (expected, workspace, replayed, patch) = round_trip(&start, edits);
    assert_eq!(workspace, expected);
    assert_eq!(replayed, expected);
    let text = String::from_utf8(patch).unwrap();
    assert!(text.contains("diff --git \"a/caf\\351.txt\" \"b/caf\\351.txt\"\n"), "{text}");
    assert!(text.contains("diff --git \"a/caf\\352.txt\" \"b/caf\\352.txt\"\nnew file mode 100755\n"), "{text}");
}
