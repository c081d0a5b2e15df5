//! DESIGN §3.1: base cache, materialization, residual patches, overlays, diffs, freezing.

use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use specgap_sandbox::{
    BaseCache, BoundedDiff, EvaluatorRun, MaterializeError, WHOLE_READ_MAX_BYTES, apply_overlay, diff, diff_within, freeze, materialize,
    run_evaluator,
};

use crate::support::{make_executable, sandbox, system_host, write_tree};

/// The fixture: a text file, an executable, a symbolic link and a binary file.
fn fixture(root: &Path) {
    write_tree(root, &[("README.md", "hello\n"), ("src/main.py", "print('hi')\n")]);
    make_executable(&root.join("src/main.py"));
    symlink("README.md", root.join("link")).unwrap();
    std::fs::write(root.join("data.bin"), b"\x00\x01\x02binary").unwrap();
}

/// Runs git in `dir` as a person would (only tests do this to a workspace).
fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// Every file of a tree (no `.git`) with its kind and content, for comparisons.
fn snapshot(root: &Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for entry in walkdir::WalkDir::new(root).sort_by_file_name().min_depth(1) {
        let entry = entry.unwrap();
        let rel = entry.path().strip_prefix(root).unwrap().to_string_lossy().into_owned();
        if rel == ".git" || rel.starts_with(".git/") {
            continue;
        }
        let meta = std::fs::symlink_metadata(entry.path()).unwrap();
        let what = if meta.file_type().is_symlink() {
            format!("link -> {}", std::fs::read_link(entry.path()).unwrap().display())
        } else if meta.is_dir() {
            "dir".to_string()
        } else {
            format!("{:o} {:?}", meta.permissions().mode() & 0o777, std::fs::read(entry.path()).unwrap())
        };
        out.push((rel, what));
    }
    out
}

#[test]
fn base_commit_id_is_fixed() {
    // Pinned: the same tree committed by plain git with author/committer
    // `specgap <specgap@localhost>`, date 946684800 +0000 and message "specgap base".
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    fixture(&src);
    let cache = BaseCache::new(dir.path().join("cache")).unwrap();
    let base = cache.base("pkg-hash-1", &src).unwrap();
    assert_eq!(base.commit_id(), "22ecd2465f36e3e39ab74e55a68931dc226ba438");
    // A second cache elsewhere and a second lookup give the same id.
    let other = BaseCache::new(dir.path().join("other")).unwrap();
    assert_eq!(other.base("pkg-hash-1", &src).unwrap().commit_id(), base.commit_id());
    assert_eq!(cache.base("pkg-hash-1", &src).unwrap(), base);
}

#[test]
fn base_ignores_gitignore_attributes_and_nested_git() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    write_tree(
        &src,
        &[
            (".gitignore", "*.log\n"),
            (".gitattributes", "* text eol=lf\n"),
            ("build.log", "kept\n"),
            ("crlf.txt", "a\r\nb\r\n"),
            (".git/config", "[core]\n\tbare = false\n"),
            ("sub/.git/HEAD", "ref: refs/heads/x\n"),
            ("sub/file.txt", "sub\n"),
        ],
    );
    let cache = BaseCache::new(dir.path().join("cache")).unwrap();
    let base = cache.base("k", &src).unwrap();
    let ws = dir.path().join("ws");
    materialize(&base, &ws, None).unwrap();
    let files = git(&ws, &["ls-tree", "-r", "--name-only", "HEAD"]);
    assert_eq!(files, ".gitattributes\n.gitignore\nbuild.log\ncrlf.txt\nsub/file.txt\n");
    // Bytes are committed as they are: CRLF survives despite `text`.
    assert_eq!(git(&ws, &["cat-file", "-p", "HEAD:crlf.txt"]), "a\r\nb\r\n");
    assert!(!ws.join("sub/.git").exists());
}

#[test]
fn clean_materialization_has_one_commit_and_a_clean_status() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    fixture(&src);
    let base = BaseCache::new(dir.path().join("cache")).unwrap().base("k", &src).unwrap();
    let ws = dir.path().join("ws");
    materialize(&base, &ws, None).unwrap();
    assert_eq!(snapshot(&ws), snapshot(&src));
    assert_eq!(
        git(&ws, &["log", "--format=%H %an %ad %s", "--date=raw"]),
        format!("{} specgap 946684800 +0000 specgap base\n", base.commit_id())
    );
    assert_eq!(git(&ws, &["status", "--porcelain"]), "");
    assert_eq!(git(&ws, &["rev-parse", "--abbrev-ref", "HEAD"]), "main\n");
    assert_eq!(diff(&base, &ws).unwrap(), b"");
    // A second episode is independent of the first.
    std::fs::write(ws.join("README.md"), "changed\n").unwrap();
    let ws2 = dir.path().join("ws2");
    materialize(&base, &ws2, None).unwrap();
    assert_eq!(std::fs::read_to_string(ws2.join("README.md")).unwrap(), "hello\n");
    // The destination must be fresh.
    assert!(matches!(materialize(&base, &ws, None), Err(MaterializeError::DestinationNotEmpty(_))));
}

#[test]
fn residual_start_shows_inherited_work_and_diff_round_trips() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    fixture(&src);
    let base = BaseCache::new(dir.path().join("cache")).unwrap().base("k", &src).unwrap();

    // Build a residual state by hand and record it as the predecessor's state.patch.
    let work = dir.path().join("predecessor");
    materialize(&base, &work, None).unwrap();
    std::fs::write(work.join("README.md"), "hello\nmore\n").unwrap();
    std::fs::remove_file(work.join("data.bin")).unwrap();
    std::fs::write(work.join("new.bin"), [0u8, 255, 1, 2, 3]).unwrap();
    std::fs::set_permissions(work.join("src/main.py"), std::fs::Permissions::from_mode(0o644)).unwrap();
    let patch = dir.path().join("state.patch");
    std::fs::write(&patch, diff(&base, &work).unwrap()).unwrap();

    let ws = dir.path().join("ws");
    materialize(&base, &ws, Some(&patch)).unwrap();
    assert_eq!(snapshot(&ws), snapshot(&work));
    assert_eq!(git(&ws, &["status", "--porcelain"]), " M README.md\n D data.bin\n M src/main.py\n?? new.bin\n");
    assert_eq!(git(&ws, &["rev-list", "--count", "HEAD"]), "1\n");
    assert_eq!(diff(&base, &ws).unwrap(), std::fs::read(&patch).unwrap());
}

#[test]
fn bad_residual_patch_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    fixture(&src);
    let base = BaseCache::new(dir.path().join("cache")).unwrap().base("k", &src).unwrap();
    let patch = dir.path().join("state.patch");
    std::fs::write(&patch, "diff --git a/README.md b/README.md\n--- a/README.md\n+++ b/README.md\n@@ -1 +1 @@\n-not there\n+x\n").unwrap();
    let err = materialize(&base, &dir.path().join("ws"), Some(&patch)).unwrap_err();
    assert!(matches!(err, MaterializeError::PatchFailed { .. }), "{err}");
}

#[test]
fn diff_covers_untracked_deleted_binary_links_and_modes_but_not_git() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    fixture(&src);
    let base = BaseCache::new(dir.path().join("cache")).unwrap().base("k", &src).unwrap();
    let ws = dir.path().join("ws");
    materialize(&base, &ws, None).unwrap();
    std::fs::remove_file(ws.join("README.md")).unwrap();
    std::fs::write(ws.join("ignored.log"), "untracked\n").unwrap();
    std::fs::write(ws.join(".gitignore"), "*.log\n").unwrap();
    std::fs::write(ws.join("data.bin"), b"\x00\x00changed").unwrap();
    std::fs::remove_file(ws.join("link")).unwrap();
    symlink("/etc/passwd", ws.join("link")).unwrap();
    std::fs::create_dir_all(ws.join("nested/.git")).unwrap();
    std::fs::write(ws.join("nested/.git/config"), "x").unwrap();
    std::fs::write(ws.join(".git/extra"), "agent's own git data").unwrap();
    let d = String::from_utf8(diff(&base, &ws).unwrap()).unwrap();
    let headers: Vec<&str> = d.lines().filter(|l| l.starts_with("diff --git")).collect();
    assert_eq!(
        headers,
        [
            "diff --git a/.gitignore b/.gitignore",
            "diff --git a/README.md b/README.md",
            "diff --git a/data.bin b/data.bin",
            "diff --git a/ignored.log b/ignored.log",
            "diff --git a/link b/link",
        ]
    );
    assert!(d.contains("deleted file mode 100644"));
    assert!(d.contains("GIT binary patch"));
    assert!(d.contains("+/etc/passwd"), "links are stored as their target text");
    assert!(!d.contains("root:x:0:0"), "a link is never followed");

    // Applying the diff to a fresh materialization reproduces the work tree.
    let patch = dir.path().join("p.patch");
    std::fs::write(&patch, diff(&base, &ws).unwrap()).unwrap();
    let again = dir.path().join("again");
    materialize(&base, &again, Some(&patch)).unwrap();
    let without_nested = |v: Vec<(String, String)>| v.into_iter().filter(|(p, _)| !p.starts_with("nested")).collect::<Vec<_>>();
    assert_eq!(without_nested(snapshot(&again)), without_nested(snapshot(&ws)));
}

/// `lines` numbered lines of 50 bytes each (`line 0000001 ` and padding), as one text.
fn numbered_lines(lines: u32) -> Vec<u8> {
    let mut text = Vec::with_capacity(lines as usize * 50);
    for i in 0..lines {
        text.extend_from_slice(format!("line {i:07} {}\n", "x".repeat(36)).as_bytes());
    }
    text
}

/// Issue 31 item 1: files far above the in-process limit diff exactly as plain git diffs
/// them (an unchanged 3 MB file compared in chunks writes nothing; a 3 MB file with one line
/// changed and a new 50 MB file are git's), and one byte of cap less than the patch keeps
/// nothing but still counts it exactly.
#[test]
fn big_files_diff_exactly_and_a_patch_over_the_cap_is_only_counted() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    let three_mb = numbered_lines(60_000);
    assert!(three_mb.len() as u64 > 2 * WHOLE_READ_MAX_BYTES);
    std::fs::create_dir_all(&src).unwrap();
    std::fs::write(src.join("big.txt"), &three_mb).unwrap();
    std::fs::write(src.join("same.txt"), &three_mb).unwrap();
    let base = BaseCache::new(dir.path().join("cache")).unwrap().base("k", &src).unwrap();
    let ws = dir.path().join("ws");
    materialize(&base, &ws, None).unwrap();
    assert_eq!(diff_within(&base, &ws, 64 << 20).unwrap(), BoundedDiff { patch: Some(Vec::new()), bytes: 0 });

    // One line in the middle changed, the size kept: the chunked comparison finds it.
    let mut edited = three_mb.clone();
    let at = 30_000 * 50;
    edited[at..at + 12].copy_from_slice(b"LINE 0030000");
    std::fs::write(ws.join("big.txt"), &edited).unwrap();
    let fifty_mb = numbered_lines(1_000_000);
    assert_eq!(fifty_mb.len(), 50_000_000);
    std::fs::write(ws.join("new.txt"), &fifty_mb).unwrap();
    drop((edited, fifty_mb));

    git(&ws, &["add", "-A"]);
    let expected = Command::new("git")
        .args(["diff", "--cached", "--binary", "--full-index", "--no-renames", "HEAD"])
        .current_dir(&ws)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .unwrap()
        .stdout;
    std::fs::remove_file(ws.join(".git/index")).unwrap();
    let header = "diff --git a/big.txt b/big.txt\n";
    assert!(expected.starts_with(header.as_bytes()));
    assert!(expected.len() > 50_000_000, "{}", expected.len());
    let len = expected.len() as u64;

    let within = diff_within(&base, &ws, 64 << 20).unwrap();
    assert_eq!(within.bytes, len);
    assert!(within.patch.as_ref() == Some(&expected), "the patch differs from git's");
    assert_eq!(diff_within(&base, &ws, len).unwrap().bytes, len);
    assert_eq!(diff_within(&base, &ws, len - 1).unwrap(), BoundedDiff { patch: None, bytes: len });
}

#[test]
fn freeze_copies_links_as_links_and_leaves_out_git_and_fifos() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    write_tree(&ws, &[("a.txt", "a\n"), (".git/config", "x"), ("d/.GIT/x", "y"), ("d/b.txt", "b\n")]);
    symlink("/etc", ws.join("etc-link")).unwrap();
    symlink("/etc/passwd", ws.join("passwd-link")).unwrap();
    let fifo = std::ffi::CString::new(ws.join("pipe").to_str().unwrap()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o644) }, 0);
    let frozen = dir.path().join("frozen");
    freeze(&ws, &frozen).unwrap();
    assert_eq!(
        snapshot(&frozen),
        [
            ("a.txt".to_string(), format!("644 {:?}", b"a\n")),
            ("d".to_string(), "dir".to_string()),
            ("d/b.txt".to_string(), format!("644 {:?}", b"b\n")),
            ("etc-link".to_string(), "link -> /etc".to_string()),
            ("passwd-link".to_string(), "link -> /etc/passwd".to_string()),
        ]
    );
}

#[test]
fn overlay_copies_then_deletes_and_refuses_escapes() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    write_tree(&ws, &[("keep.txt", "keep\n"), ("old.txt", "old\n"), ("gone/x.txt", "x\n"), ("src/a.py", "a = 1\n")]);
    let overlay = dir.path().join("gold");
    write_tree(
        &overlay,
        &[("src/a.py", "a = 2\n"), ("src/new.py", "n = 1\n"), ("delete.txt", "# comment\nold.txt\n\ngone\nnot-there.txt\n")],
    );
    apply_overlay(&ws, &overlay).unwrap();
    assert_eq!(
        snapshot(&ws),
        [
            ("keep.txt".to_string(), format!("644 {:?}", b"keep\n")),
            ("src".to_string(), "dir".to_string()),
            ("src/a.py".to_string(), format!("644 {:?}", b"a = 2\n")),
            ("src/new.py".to_string(), format!("644 {:?}", b"n = 1\n")),
        ]
    );

    // Escaping entries are refused before anything changes.
    let outside = dir.path().join("outside.txt");
    std::fs::write(&outside, "outside\n").unwrap();
    symlink(dir.path(), ws.join("up")).unwrap();
    for (i, entry) in ["../outside.txt", "/etc/hostname", "up/outside.txt", "src/../../outside.txt"].into_iter().enumerate() {
        let bad = dir.path().join(format!("bad-{i}"));
        write_tree(&bad, &[("delete.txt", &format!("{entry}\n")), ("added.txt", "added\n")]);
        let err = apply_overlay(&ws, &bad).unwrap_err();
        match err {
            MaterializeError::PathEscapes { path, .. } => assert_eq!(path, entry),
            other => panic!("{entry}: {other}"),
        }
        assert!(!ws.join("added.txt").exists());
    }
    assert!(outside.exists());

    // Overlay files are never written through a link in the workspace.
    std::fs::remove_file(ws.join("up")).unwrap();
    symlink(dir.path(), ws.join("src2")).unwrap();
    let through = dir.path().join("through");
    write_tree(&through, &[("src2/outside.txt", "overwritten\n")]);
    apply_overlay(&ws, &through).unwrap();
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "outside\n");
    assert_eq!(std::fs::read_to_string(ws.join("src2/outside.txt")).unwrap(), "overwritten\n");
}

/// A `.git` set up to run a marker-writing command on fsmonitor queries and every hook.
fn arm_git(git_dir: &Path, marker: &Path) {
    let script = git_dir.join("fsmon.sh");
    std::fs::create_dir_all(git_dir.join("hooks")).unwrap();
    std::fs::write(&script, format!("#!/bin/sh\ntouch '{}'\n", marker.display())).unwrap();
    make_executable(&script);
    for hook in ["pre-commit", "post-checkout", "post-index-change", "pre-auto-gc", "reference-transaction", "post-commit"] {
        std::fs::copy(&script, git_dir.join("hooks").join(hook)).unwrap();
    }
    let config = std::fs::read_to_string(git_dir.join("config")).unwrap_or_default();
    std::fs::write(
        git_dir.join("config"),
        format!(
            "{config}[core]\n\tfsmonitor = {}\n\thooksPath = {}\n[diff]\n\texternal = {}\n",
            script.display(),
            git_dir.join("hooks").display(),
            script.display()
        ),
    )
    .unwrap();
}

#[test]
fn armed_git_dirs_never_run_anything() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("MARKER");

    // The package's own workspace/ ships an armed .git: materializing must not run it.
    let src = dir.path().join("src");
    write_tree(&src, &[("a.txt", "a\n")]);
    std::fs::create_dir_all(src.join(".git")).unwrap();
    arm_git(&src.join(".git"), &marker);
    let base = BaseCache::new(dir.path().join("cache")).unwrap().base("k", &src).unwrap();
    let ws = dir.path().join("ws");
    materialize(&base, &ws, None).unwrap();

    // The agent arms its own .git: diffing, freezing and evaluating must not run it.
    arm_git(&ws.join(".git"), &marker);
    std::fs::write(ws.join("a.txt"), "changed\n").unwrap();
    let d = String::from_utf8(diff(&base, &ws).unwrap()).unwrap();
    assert!(d.contains("+changed"));
    freeze(&ws, &dir.path().join("frozen")).unwrap();
    let evaluator = dir.path().join("evaluator");
    write_tree(
        &evaluator,
        &[("eval.sh", "cat \"$SPECGAP_WORKSPACE/a.txt\" >&2\necho '{\"version\":1,\"reward\":1.0}' > \"$SPECGAP_OUT/result.json\"\n")],
    );
    let run = EvaluatorRun::new("t", &evaluator, "sh eval.sh", Duration::from_secs(30), &ws);
    let evaluation = run_evaluator(&run, &system_host(), &sandbox()).unwrap();
    assert_eq!(evaluation.stderr_tail, "changed\n");
    assert!(!marker.exists(), "the harness ran the agent's git configuration");

    // The test can fail: plain `git status` in the armed workspace does create the marker.
    git(&ws, &["status", "--porcelain"]);
    assert!(marker.exists());
}
