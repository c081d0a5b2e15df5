//! File names are bytes (issue 10 item 3) in a real episode: `list_files` shows names that are
//! not plain text quoted, one entry per line; the quoted form resolves back; and every stored
//! `workspace.diff` re-applies to a fresh materialization as the exact tree the agent
//! submitted (names, contents, modes, links).

use std::collections::BTreeMap;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use serde_json::json;
use specgap_sandbox::{BaseCache, materialize};

use crate::support::{Options, TestAgent, fixture, one, run};

/// A tree entry as git records it: a file (content, owner-executable) or a link (target).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Node {
    File(Vec<u8>, bool),
    Link(Vec<u8>),
}

/// Every file and link under `root` (no top-level `.git`), keyed by path bytes.
fn snapshot(root: &Path) -> BTreeMap<Vec<u8>, Node> {
    let mut tree = BTreeMap::new();
    let walker = walkdir::WalkDir::new(root).min_depth(1).follow_links(false).into_iter();
    for entry in walker.filter_entry(|e| e.depth() != 1 || e.file_name() != ".git") {
        let entry = entry.unwrap();
        let rel = entry.path().strip_prefix(root).unwrap().as_os_str().as_bytes().to_vec();
        let meta = std::fs::symlink_metadata(entry.path()).unwrap();
        if meta.file_type().is_symlink() {
            tree.insert(rel, Node::Link(std::fs::read_link(entry.path()).unwrap().as_os_str().as_bytes().to_vec()));
        } else if meta.is_file() {
            tree.insert(rel, Node::File(std::fs::read(entry.path()).unwrap(), meta.permissions().mode() & 0o100 != 0));
        }
    }
    tree
}

/// Runs `commands` with the host's `sh` in `dir`, one after another.
fn sh(dir: &Path, commands: &[&str]) {
    for command in commands {
        let status = std::process::Command::new("/bin/sh").arg("-c").arg(command).current_dir(dir).status().unwrap();
        assert!(status.success(), "{command}");
    }
}

/// The first edits: names that are not UTF-8, hold a newline, a tab, quotes, a backslash,
/// leading spaces or a leading dash; an executable; a binary file; a link with such a name;
/// a changed package file made executable.
const FIRST: &str = r#"printf 'un\n' > "$(printf 'caf\351.txt')"
printf 'deux' > "$(printf 'caf\352.txt')"
printf 'x\n' > 'two
lines.txt'
printf '#!/bin/sh\n' > ' lead "q" \back.sh' && chmod +x ' lead "q" \back.sh'
printf 'a\000b' > "$(printf 'bin\tary')"
ln -s "$(printf 'caf\351.txt')" "$(printf 'l\351nk')"
mkdir -- -dir && printf 'dash\n' > -dir/-x
printf 'changed\n' >> README.md && chmod +x README.md"#;

/// The second edits: a rename, a deletion, new content without a final newline, a mode
/// taken back, a dangling link whose name holds the listing's arrow.
const SECOND: &str = r#"mv "$(printf 'caf\352.txt')" "$(printf 'r\344name.txt')"
rm 'two
lines.txt'
printf 'no newline' > "$(printf 'caf\351.txt')"
chmod -x ' lead "q" \back.sh'
ln -s 'target with space' 'link -> arrow'"#;

#[test]
fn stored_submissions_reapply_to_the_exact_tree_with_byte_names() {
    let package = fixture("req-basic");
    let mut agent = TestAgent::new(vec![
        one("run_experiment", json!({ "command": FIRST })),
        one("list_files", json!({ "depth": 1 })),
        one("read_text", json!({ "path": r#""caf\351.txt""# })),
        one("submit", json!({})),
        one("run_experiment", json!({ "command": SECOND })),
        one("list_files", json!({ "path": "-dir" })),
        one("submit", json!({})),
    ]);
    let r = run(&package, "partial", &mut agent, Options::default());
    assert_eq!(r.ok().submissions.len(), 2);
    let results = r.results();
    assert_eq!(results[0].1, "exit status 0\n(no output)");
    let listing: Vec<&str> = results[1].1.lines().collect();
    assert_eq!(
        listing,
        [
            r#"" lead \"q\" \\back.sh""#,
            "-dir/",
            ".git/",
            "README.md",
            "billing/",
            r#""bin\tary""#,
            r#""caf\351.txt""#,
            r#""caf\352.txt""#,
            r#""l\351nk" -> "caf\351.txt""#,
            "project_records/",
            r#""two\nlines.txt""#,
        ]
    );
    assert_eq!((results[2].1.as_str(), results[2].2), ("     1\tun", false));
    assert_eq!(results[5].1, "-dir/-x");

    // Each stored diff, applied to a fresh materialization, gives the tree the agent had when
    // it submitted: the package's files with the same commands run on them.
    let scratch = tempfile::tempdir().unwrap();
    let cache = BaseCache::new(scratch.path().join("bases")).unwrap();
    let base = cache.base(package.hash(), &package.workspace_dir()).unwrap();
    for (k, commands) in [(1, vec![FIRST]), (2, vec![FIRST, SECOND])] {
        let expected = scratch.path().join(format!("expected-{k}"));
        materialize(&base, &expected, None).unwrap();
        sh(&expected, &commands);
        let stored = r.episode_dir().join(format!("submissions/{k}/workspace.diff"));
        let replayed = scratch.path().join(format!("replayed-{k}"));
        materialize(&base, &replayed, Some(&stored)).unwrap();
        assert_eq!(snapshot(&replayed), snapshot(&expected), "submission {k}");
        // Names are quoted as git quotes them: no raw byte above 0x7f in a name line (a link's
        // target is content and stays raw).
        let patch = std::fs::read(&stored).unwrap();
        let names = patch.split(|&b| b == b'\n').filter(|l| [b"diff --git ".as_slice(), b"--- ", b"+++ "].iter().any(|p| l.starts_with(p)));
        assert!(names.clone().count() > 5 && names.clone().all(|l| l.is_ascii()), "submission {k}");
    }
    assert_eq!(snapshot(&r.workspace()), snapshot(&scratch.path().join("expected-2")), "the final workspace");
    let second = std::fs::read(r.episode_dir().join("submissions/2/workspace.diff")).unwrap();
    let text = String::from_utf8_lossy(&second);
    assert!(text.contains("diff --git \"a/r\\344name.txt\" \"b/r\\344name.txt\"\nnew file mode 100644\n"), "{text}");
    assert!(text.contains("diff --git a/link -> arrow b/link -> arrow\nnew file mode 120000\n"), "{text}");
    assert!(text.contains("+++ b/link -> arrow\t\n"), "{text}");
    assert!(!text.contains("two\\nlines"), "the deleted file is not in the second submission: {text}");
}
