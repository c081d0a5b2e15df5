//! `without_local_paths`: what a `cli:command=` agent's label and public export keep of its
//! command (docs/decisions.md "Portable agent names").

use specgap_protocol::run::without_local_paths;

#[test]
fn absolute_paths_are_reduced_to_their_file_names_and_the_rest_is_kept() {
    let cases = [
        ("/opt/me/bin/agent --rules=/home/me/r.md {instruction_file}", "agent --rules=r.md {instruction_file}"),
        ("python3  '/srv/a b.py'", "python3  'a b.py'"),
        ("sh -c \"/usr/local/bin/run --x\"", "sh -c \"run --x\""),
        ("./relative/agent.sh --out=out/dir", "./relative/agent.sh --out=out/dir"),
        ("/ --flag=/", "/ --flag=/"),
        ("/trailing/dir/ x", "dir x"),
        ("a/b=/c/d", "a/b=d"),
        // A quoted path with a space keeps what follows the space: words are split first.
        ("x '/srv/p q/r.py'", "x 'p q/r.py'"),
        ("--key=/x/y:/z", "--key=z"),
        ("\t/a/b\n", "\tb\n"),
        ("", ""),
    ];
    for (template, expected) in cases {
        assert_eq!(without_local_paths(template), expected, "template {template:?}");
    }
}
