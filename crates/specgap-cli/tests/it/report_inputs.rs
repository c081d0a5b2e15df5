//! Input checks of `specgap report` and `specgap compare` on real runs: a run directory given
//! twice is refused, a selection error names its flag, shards are named as shards, and a run
//! merged from some of its shards says how many planned episodes have no result — the count
//! the runner's own plan gives, since `--resume` then runs exactly those.

use std::ffi::{OsStr, OsString};
use std::path::Path;
use std::process::Output;

use crate::support::*;

fn run_failing(args: &[&OsStr]) -> Output {
    let output = specgap().args(args).output().expect("spawn specgap");
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    output
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn a_run_given_twice_is_refused_and_a_selection_error_names_its_flag() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    run_gold_on_req_basic(&out);
    let twice = run_failing(&[OsStr::new("report"), out.as_os_str(), out.as_os_str()]);
    assert_eq!(
        stderr(&twice),
        format!("error: run directory {0} is given twice; give each run once (seed replicates are different runs)\n", out.display())
    );
    let dotted = out.join(".");
    let spelled = run_failing(&[OsStr::new("report"), out.as_os_str(), dotted.as_os_str()]);
    assert_eq!(
        stderr(&spelled),
        format!(
            "error: run directory {} is given twice (again as {}); give each run once (seed replicates are different runs)\n",
            out.display(),
            dotted.display()
        )
    );

    let compare = |flag: &str, selection: &str| {
        stderr(&run_failing(&[OsStr::new("compare"), out.as_os_str(), out.as_os_str(), OsStr::new(flag), OsStr::new(selection)]))
    };
    assert_eq!(
        compare("--a", "agnt=x"),
        "error: unknown key `agnt` in `--a agnt=x`; expected key=value pairs, comma-separated, with key agent, condition, start, family or task\n"
    );
    assert_eq!(
        compare("--b", "agent"),
        "error: `agent` in `--b agent` is not key=value; expected key=value pairs, comma-separated, with key agent, condition, start, family or task\n"
    );
}

#[test]
fn compare_takes_a_family_file_or_two_runs_never_both() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    run_gold_on_req_basic(&out);
    let family = tmp.path().join("family.toml");
    std::fs::write(
        &family,
        "measures = [\"Score@1\"]\n\n[[comparison]]\nname = \"gold vs gold\"\na = { run = \"run\", select = \"agent=scripted:gold\" }\nb = { run = \"run\" }\n",
    )
    .unwrap();
    let output = run_ok([OsStr::new("compare"), OsStr::new("--family"), family.as_os_str(), OsStr::new("--format"), OsStr::new("json")]);
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!((json["schema"].as_str(), json["version"].as_u64()), (Some("specgap-compare"), Some(2)));
    assert_eq!(json["family"]["source"], family.display().to_string());
    assert_eq!(json["comparisons"][0]["name"], "gold vs gold");
    assert_eq!(json["comparisons"][0]["measures"][0]["measure"], "Score@1");
    let both = run_failing(&[OsStr::new("compare"), out.as_os_str(), out.as_os_str(), OsStr::new("--family"), family.as_os_str()]);
    assert!(stderr(&both).contains("cannot be used with"), "{}", stderr(&both));
    let neither = run_failing(&[OsStr::new("compare")]);
    assert!(stderr(&neither).contains("required"), "{}", stderr(&neither));
}

/// `specgap run` over req-basic and test-basic, agents gold and mutant:fee-cap, conditions
/// partial and full with `--feedback off`, starts `clean,residual:all`, seed 5. The plan, in
/// order: req-basic (no residual state) gold × {partial, full} and fee-cap × {partial, full}
/// from clean (positions 0–3); test-basic gold × partial from clean and from residual:half-done
/// (positions 4–5); test-basic has no instruction.full.md and no fee-cap mutant, so its other
/// six combinations are not applicable. Six episodes: shard i/3 holds positions i − 1 and
/// i + 2.
fn shard_args(out: &Path, shard: &str) -> Vec<OsString> {
    let mut args: Vec<OsString> = vec![OsString::from("run"), task_fixture("req-basic").into(), task_fixture("test-basic").into()];
    let flags = [
        ("--agent", "scripted:gold,scripted:mutant:fee-cap"),
        ("--condition", "partial,full"),
        ("--feedback", "off"),
        ("--seed", "5"),
        ("--jobs", "2"),
        ("--shard", shard),
    ];
    for (flag, value) in flags {
        args.extend([OsString::from(flag), OsString::from(value)]);
    }
    args.extend([OsString::from("--out"), out.as_os_str().to_os_string(), OsString::from("--no-report")]);
    args
}

fn json_warnings(runs: &[&Path]) -> Vec<String> {
    let mut args = vec![OsStr::new("report")];
    args.extend(runs.iter().map(|r| r.as_os_str()));
    args.extend([OsStr::new("--format"), OsStr::new("json")]);
    let report: serde_json::Value = serde_json::from_slice(&run_ok(args).stdout).unwrap();
    serde_json::from_value(report["warnings"].clone()).unwrap()
}

fn shard_warning(dir: &Path, shard: &str) -> String {
    format!(
        "run {} is shard {shard} of a sharded run: it holds only that shard's episodes, and shards are not seed replicates — join the shards with `specgap merge SHARD... --out DIR` and report the merged run",
        dir.display()
    )
}

#[test]
fn shards_are_named_and_a_merge_of_some_shards_counts_the_missing_episodes() {
    let tmp = tempfile::tempdir().unwrap();
    let (s1, s2, merged) = (tmp.path().join("s1"), tmp.path().join("s2"), tmp.path().join("merged"));
    run_ok(shard_args(&s1, "1/3"));
    run_ok(shard_args(&s2, "2/3"));
    assert_eq!(episodes(&s1).len(), 2);
    assert_eq!(episodes(&s2).len(), 2);

    // Each shard holds its whole share of the plan: only the shard warning.
    assert_eq!(json_warnings(&[&s1]), [shard_warning(&s1, "1/3")]);
    // Two shards of one run: both named, and neither a "same seed" nor a configuration warning.
    assert_eq!(json_warnings(&[&s1, &s2]), [shard_warning(&s1, "1/3"), shard_warning(&s2, "2/3")]);

    // Merged without shard 3 (a partial merge must be asked for): two of the six planned
    // episodes have no result, and the warning says which shard was not merged.
    let merge_two = [OsStr::new("merge"), s1.as_os_str(), s2.as_os_str(), OsStr::new("--out"), merged.as_os_str()];
    let refused = specgap().args(merge_two).output().unwrap();
    assert_eq!(refused.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("shard 3 of 3 is missing"), "{refused:?}");
    assert!(!merged.exists());
    let partial = assert_succeeded(specgap().args(merge_two).arg("--allow-partial").output().unwrap());
    assert!(
        String::from_utf8_lossy(&partial.stderr).contains("warning: the merged run is incomplete: shard 3 of 3 missing"),
        "{partial:?}"
    );
    assert_eq!(
        json_warnings(&[&merged]),
        [format!(
            "run {0}: 2 of 6 planned episodes have no result (2 absent from the store, which was merged without shard 3 of 3); the measures use the other 4 — resume with `specgap run --resume {0}`, or merge it with the missing shards (`specgap merge {0} SHARD... --out NEW`)",
            merged.display()
        )]
    );
    // The Markdown report carries it too, under Warnings.
    let md = String::from_utf8(run_ok([OsStr::new("report"), merged.as_os_str()]).stdout).unwrap();
    assert!(md.contains("2 of 6 planned episodes have no result (2 absent from the store, which was merged without shard 3 of 3)"), "{md}");

    let merge_record = || -> toml::Value {
        let text = std::fs::read_to_string(merged.join("run.toml")).unwrap();
        toml::from_str::<toml::Table>(&text).unwrap()["merge"].clone()
    };
    assert_eq!(merge_record()["missing"], toml::Value::Array(vec![toml::Value::Integer(3)]));

    // The suggested resume runs exactly the missing two; then nothing is missing, and run.toml
    // says so too (it kept `missing = [3]` after the resume had run shard 3's episodes).
    let resumed = run_ok([OsStr::new("run"), OsStr::new("--resume"), merged.as_os_str(), OsStr::new("--no-report")]);
    assert!(
        String::from_utf8_lossy(&resumed.stderr)
            .contains("the run now holds every shard its merge lacked; run.toml no longer lists missing shards"),
        "{resumed:?}"
    );
    assert_eq!(episodes(&merged).len(), 6);
    assert_eq!(json_warnings(&[&merged]), Vec::<String>::new());
    assert_eq!(merge_record()["missing"], toml::Value::Array(Vec::new()));
    assert_eq!(merge_record()["shards"], toml::Value::Integer(3));
}
