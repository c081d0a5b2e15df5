//! DESIGN §2 evaluator protocol: the evaluator runner, the candidate launcher, and every
//! evaluation error with its stderr tail.

use std::path::Path;
use std::time::Duration;

use specgap_protocol::result::{EvalResult, ResultProblem};
use specgap_sandbox::{EvalError, EvaluatorRun, run_evaluator};

use crate::support::{SECRET, package, sandbox, system_host, write_tree};

/// Writes `script` as `evaluator/eval.sh` next to the package's workspace and returns a run of
/// `sh eval.sh` on that workspace.
fn evaluator_run(pkg_root: &Path, workspace: &Path, script: &str, timeout: Duration) -> EvaluatorRun {
    let evaluator = pkg_root.join("evaluator");
    write_tree(&evaluator, &[("eval.sh", script)]);
    EvaluatorRun::new("examples/probe", &evaluator, "sh eval.sh", timeout, workspace)
}

fn evaluate(run: &EvaluatorRun) -> Result<specgap_sandbox::Evaluation, EvalError> {
    run_evaluator(run, &system_host(), &sandbox())
}

#[test]
fn evaluator_sees_its_copy_the_submission_and_the_protocol_variables() {
    let pkg = package();
    write_tree(&pkg.workspace, &[("answer.txt", "42\n")]);
    let script = r#"
set -e
echo "task=$SPECGAP_TASK ws=$SPECGAP_WORKSPACE out=$SPECGAP_OUT cwd=$(pwd)" >&2
ls "$SPECGAP_OUT" | wc -l >&2
cat expected-7f3a9d.txt > /dev/null
echo scratch > scratch.txt
if touch "$SPECGAP_WORKSPACE/x" 2>/dev/null; then echo submission-writable >&2; fi
if cat ../requirements.toml 2>/dev/null; then echo package-visible >&2; fi
if [ -e "$SPECGAP_WORKSPACE/.git" ]; then echo git-visible >&2; fi
a=$(cat "$SPECGAP_WORKSPACE/answer.txt")
if [ "$a" = 42 ]; then p=true; else p=false; fi
printf '{"version":1,"requirements":{"answer":{"pass":%s,"measured":{"value":%s}}}}' "$p" "$a" > "$SPECGAP_OUT/result.json"
"#;
    let mut run = evaluator_run(pkg.dir.path(), &pkg.workspace, script, Duration::from_secs(30));
    run.requirement_ids = vec!["answer".into()];
    std::fs::create_dir_all(pkg.workspace.join(".git")).unwrap();
    let evaluation = evaluate(&run).unwrap();
    assert_eq!(evaluation.stderr_tail, "task=examples/probe ws=/workspace out=/out cwd=/evaluator\n0\n");
    let expected: EvalResult =
        serde_json::from_str(r#"{"version":1,"requirements":{"answer":{"pass":true,"measured":{"value":42}}}}"#).unwrap();
    assert_eq!(evaluation.result, expected);
    assert_eq!(evaluation.candidate_calls, 0);
    // The package's evaluator/ was copied, not modified.
    assert!(!pkg.dir.path().join("evaluator/scratch.txt").exists());
}

#[test]
fn candidate_sees_only_a_fresh_copy_of_the_submission() {
    let pkg = package();
    let probe = r#"
echo "cwd=$(pwd)"
echo "files=$(ls | tr '\n' ' ')"
echo "secret=${EVAL_SECRET:-}"
echo "specgap_vars=$(env | grep -c '^SPECGAP_')"
for p in /evaluator /out /run/specgap; do [ -e $p ] && echo "visible $p"; done
find / \( -path /proc -o -path /sys -o -path /usr \) -prune -o -name '*7f3a9d*' -print 2>/dev/null
echo "earlier=$(cat left-behind.txt 2>/dev/null)"
echo left > left-behind.txt
echo "stdin=$(cat)"
echo to-stderr >&2
exit 3
"#;
    write_tree(&pkg.workspace, &[("probe.sh", probe)]);
    let script = r#"
export EVAL_SECRET=SECRET-7f3a9d-private
printf 'first' | "$SPECGAP_CANDIDATE" sh probe.sh > first.out 2> first.err; echo "status=$?" >> first.out
printf 'second' | "$SPECGAP_CANDIDATE" sh probe.sh > second.out 2>/dev/null
"$SPECGAP_CANDIDATE" sh -c 'printf "%s|" "$@"' sh 'a b' '' "c'd" > argv.out
python3 - <<'EOF'
import json, os
detail = {name: open(name).read() for name in ["first.out", "first.err", "second.out", "argv.out"]}
json.dump({"version": 1, "requirements": {"probe": {"pass": True, "measured": detail}}}, open(os.environ["SPECGAP_OUT"] + "/result.json", "w"))
EOF
"#;
    let mut run = evaluator_run(pkg.dir.path(), &pkg.workspace, script, Duration::from_secs(60));
    run.requirement_ids = vec!["probe".into()];
    let evaluation = evaluate(&run).unwrap();
    assert_eq!(evaluation.candidate_calls, 3);
    let measured = &evaluation.result.requirements.as_ref().unwrap()["probe"].measured;
    let text = |k: &str| measured[k].as_str().unwrap().to_string();
    let expected_run =
        |stdin: &str| format!("cwd=/workspace\nfiles=notes.txt probe.sh \nsecret=\nspecgap_vars=0\nearlier=\nstdin={stdin}\n");
    assert_eq!(text("first.out"), format!("{}status=3\n", expected_run("first")));
    assert_eq!(text("first.err"), "to-stderr\n");
    assert_eq!(text("second.out"), expected_run("second"));
    assert_eq!(text("argv.out"), "a b||c'd|");
    assert!(!evaluation.stderr_tail.contains(SECRET));
    // Candidates wrote into their own copies only.
    assert!(!pkg.workspace.join("left-behind.txt").exists());
}

#[test]
fn candidate_timeout_is_reported_as_124() {
    let pkg = package();
    let script = r#"
"$SPECGAP_CANDIDATE" sleep 100 2> err.txt
s=$?
echo "status=$s" >&2
cat err.txt >&2
echo '{"version":1,"reward":0.0}' > "$SPECGAP_OUT/result.json"
"#;
    let mut run = evaluator_run(pkg.dir.path(), &pkg.workspace, script, Duration::from_secs(30));
    run.candidate_limits.timeout = Duration::from_millis(500);
    let evaluation = evaluate(&run).unwrap();
    assert_eq!(evaluation.stderr_tail, "status=124\nspecgap-candidate: timed out after 0.5 s\n");
}

#[test]
fn non_zero_exit_is_an_evaluation_error() {
    let pkg = package();
    let run = evaluator_run(
        pkg.dir.path(),
        &pkg.workspace,
        "echo boom >&2\necho '{\"version\":1,\"reward\":1.0}' > $SPECGAP_OUT/result.json\nexit 3\n",
        Duration::from_secs(30),
    );
    match evaluate(&run) {
        Err(EvalError::NonZeroExit { code, stderr_tail }) => {
            assert_eq!(code, Some(3));
            assert_eq!(stderr_tail, "boom\n");
        }
        other => panic!("expected NonZeroExit, got {other:?}"),
    }
}

#[test]
fn timeout_is_an_evaluation_error_and_kills_the_evaluator() {
    let pkg = package();
    let run = evaluator_run(pkg.dir.path(), &pkg.workspace, "echo waiting >&2\nsleep 918276\n", Duration::from_secs(2));
    match evaluate(&run) {
        Err(e @ EvalError::Timeout { .. }) => {
            assert_eq!(e.stderr_tail(), "waiting\n");
            assert_eq!(e.reason(), "timeout");
            assert_eq!(e.to_string(), "evaluator timed out after 2 s");
        }
        other => panic!("expected Timeout, got {other:?}"),
    }
    assert_eq!(crate::support::processes_with("918276"), Vec::<u32>::new());
}

#[test]
fn missing_result_is_an_evaluation_error() {
    let pkg = package();
    let run = evaluator_run(pkg.dir.path(), &pkg.workspace, "echo nothing written >&2\n", Duration::from_secs(30));
    match evaluate(&run) {
        Err(EvalError::MissingResult { stderr_tail, hint }) => {
            assert_eq!(stderr_tail, "nothing written\n");
            assert_eq!(hint, None);
        }
        other => panic!("expected MissingResult, got {other:?}"),
    }
}

/// Issue 10 item 7: a lone Harbor-style reward.txt gave no hint that specgap wants result.json.
#[test]
fn lone_harbor_reward_txt_gets_a_hint_to_write_result_json() {
    let pkg = package();
    let run = evaluator_run(pkg.dir.path(), &pkg.workspace, "echo 0.75 > $SPECGAP_OUT/reward.txt\n", Duration::from_secs(30));
    let err = evaluate(&run).unwrap_err();
    assert_eq!(err.reason(), "missing-result");
    assert_eq!(
        err.to_string(),
        "evaluator wrote no result.json; it wrote reward.txt (Harbor's format); specgap reads \
         $SPECGAP_OUT/result.json (DESIGN §2), so write {\"version\": 1, \"reward\": 0.75} there instead"
    );
    let run = evaluator_run(pkg.dir.path(), &pkg.workspace, "echo '{\"reward\": 1}' > $SPECGAP_OUT/reward.json\n", Duration::from_secs(30));
    assert_eq!(
        evaluate(&run).unwrap_err().to_string(),
        "evaluator wrote no result.json; it wrote reward.json (Harbor's format); specgap reads \
         $SPECGAP_OUT/result.json (DESIGN §2), so write {\"version\": 1, \"reward\": <value>} there instead, \
         with the reward as a number from 0 to 1"
    );
}

/// Issue 10 item 7: a top-level list said "invalid type: map, expected u32".
#[test]
fn top_level_list_in_result_json_says_it_must_be_an_object() {
    let pkg = package();
    let script = "echo '[{\"version\": 1, \"reward\": 1.0}]' > $SPECGAP_OUT/result.json\n";
    let run = evaluator_run(pkg.dir.path(), &pkg.workspace, script, Duration::from_secs(30));
    let err = evaluate(&run).unwrap_err();
    assert_eq!(err.reason(), "malformed-result");
    assert_eq!(
        err.to_string(),
        "malformed result.json: result.json must be a JSON object with `version` and the fields of DESIGN §2 \
         (`requirements`, `tests`, `delivery`, `reward`), such as {\"version\": 1, \"reward\": 1.0}; found a list"
    );
}

/// Issue 10 item 7: a NaN was reported only by its column.
#[test]
fn nan_in_result_json_is_reported_with_its_json_path() {
    let pkg = package();
    let script = "printf '%s' '{\"version\": 1, \"requirements\": {\"a\": {\"pass\": false, \"measured\": {\"open_rows\": NaN}}}}' > $SPECGAP_OUT/result.json\n";
    let mut run = evaluator_run(pkg.dir.path(), &pkg.workspace, script, Duration::from_secs(30));
    run.requirement_ids = vec!["a".into()];
    assert_eq!(
        evaluate(&run).unwrap_err().to_string(),
        "malformed result.json: NaN at `requirements.a.measured.open_rows` (line 1, column 80) is not a JSON number; \
         report a finite number or leave the value out"
    );
}

/// Issue 10 item 4: a reward of 5.0 was accepted (and averaged into Score@1 as 500%).
#[test]
fn reward_out_of_range_is_an_evaluation_error() {
    let pkg = package();
    let script = "echo '{\"version\": 1, \"reward\": 5.0}' > $SPECGAP_OUT/result.json\n";
    let run = evaluator_run(pkg.dir.path(), &pkg.workspace, script, Duration::from_secs(30));
    match evaluate(&run) {
        Err(e @ EvalError::InvalidResult { .. }) => {
            assert_eq!(e.reason(), "invalid-result");
            assert_eq!(
                e.to_string(),
                "invalid result.json: result.json reports reward 5, outside [0, 1]; a reward is a fraction from 0 (nothing) to 1 (full)"
            );
        }
        other => panic!("expected InvalidResult, got {other:?}"),
    }
}

#[test]
fn malformed_result_carries_serdes_message_and_the_json_path() {
    let pkg = package();
    let bad = r#"{"version": 1, "reward": "high"}"#;
    let run = evaluator_run(
        pkg.dir.path(),
        &pkg.workspace,
        &format!("echo writing >&2\necho '{bad}' > $SPECGAP_OUT/result.json\n"),
        Duration::from_secs(30),
    );
    let serde_message = serde_json::from_str::<EvalResult>(&format!("{bad}\n")).unwrap_err().to_string();
    match evaluate(&run) {
        Err(EvalError::MalformedResult { message, stderr_tail }) => {
            assert_eq!(message, format!("at `reward`: {serde_message}"));
            assert_eq!(message, "at `reward`: invalid type: string \"high\", expected f64 at line 1 column 31");
            assert_eq!(stderr_tail, "writing\n");
        }
        other => panic!("expected MalformedResult, got {other:?}"),
    }
}

#[test]
fn unknown_and_missing_requirement_ids_are_evaluation_errors() {
    let pkg = package();
    let script = "echo checked >&2\necho '{\"version\":1,\"requirements\":{\"a\":{\"pass\":true},\"z\":{\"pass\":false}}}' > $SPECGAP_OUT/result.json\n";
    let mut run = evaluator_run(pkg.dir.path(), &pkg.workspace, script, Duration::from_secs(30));
    run.requirement_ids = vec!["a".into(), "z-other".into()];
    match evaluate(&run) {
        Err(EvalError::InvalidResult { problem, stderr_tail }) => {
            assert_eq!(problem, ResultProblem::UnknownRequirement("z".into()));
            assert_eq!(stderr_tail, "checked\n");
        }
        other => panic!("expected InvalidResult, got {other:?}"),
    }
    run.requirement_ids = vec!["a".into(), "b".into(), "z".into()];
    match evaluate(&run) {
        Err(EvalError::InvalidResult { problem, .. }) => assert_eq!(problem, ResultProblem::MissingRequirement("b".into())),
        other => panic!("expected InvalidResult, got {other:?}"),
    }
}

#[test]
fn stderr_tail_is_the_last_2048_bytes() {
    let pkg = package();
    let run = evaluator_run(pkg.dir.path(), &pkg.workspace, "seq 1 3000 >&2\nexit 1\n", Duration::from_secs(30));
    let full: String = (1..=3000).map(|i| format!("{i}\n")).collect();
    let err = evaluate(&run).unwrap_err();
    assert_eq!(err.stderr_tail(), &full[full.len() - 2048..]);
}

#[test]
fn planted_links_in_a_call_directory_are_never_followed() {
    let pkg = package();
    let secret = pkg.dir.path().join("requirements.toml");
    let victim = pkg.dir.path().join("victim.txt");
    std::fs::write(&victim, "untouched\n").unwrap();
    // The evaluator speaks the launcher protocol by hand: its stdin is a link to a host secret,
    // and a second call pre-plants `stdout` as a link to a host file.
    let script = format!(
        r#"
calls=/run/specgap/calls
mkdir $calls/a && printf 'cat\0' > $calls/a/argv && ln -s '{secret}' $calls/a/stdin && : > $calls/a/ready
mkdir $calls/b && printf 'echo\0hi\0' > $calls/b/argv && : > $calls/b/stdin && ln -s '{victim}' $calls/b/stdout && : > $calls/b/ready
while [ ! -e $calls/a/done ]; do sleep 0.01; done
echo "a: $(cat $calls/a/status) $(cat $calls/a/stdout) $(cat $calls/a/stderr)" >&2
sleep 0.5
[ -e $calls/b/done ] && echo "b answered" >&2
echo '{{"version":1,"reward":1.0}}' > "$SPECGAP_OUT/result.json"
"#,
        secret = secret.display(),
        victim = victim.display()
    );
    let run = evaluator_run(pkg.dir.path(), &pkg.workspace, &script, Duration::from_secs(30));
    let evaluation = evaluate(&run).unwrap();
    assert!(!evaluation.stderr_tail.contains(SECRET), "{}", evaluation.stderr_tail);
    assert!(evaluation.stderr_tail.starts_with("a: 125  specgap-candidate: unreadable call: stdin: "), "{}", evaluation.stderr_tail);
    assert!(!evaluation.stderr_tail.contains("b answered"));
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "untouched\n");
}

#[test]
fn candidate_layout_places_the_submission_the_evaluators_files_and_an_output_directory() {
    let pkg = package();
    let evaluator_files = pkg.dir.path().join("evaluator/tests");
    write_tree(&evaluator_files, &[("test.sh", "echo 1 > /logs/verifier/reward.txt\n")]);
    let probe = r#"
echo "cwd=$(pwd) answer=$(cat answer.txt) files=$(ls /tests | tr '\n' ' ')"
if touch /tests/x 2>/dev/null; then echo tests-writable; fi
[ -e /workspace ] && echo workspace-visible
sh /tests/test.sh
echo '{"a": 1}' > /logs/verifier/reward.json
mkdir /logs/verifier/sub && echo no > /logs/verifier/sub/file
ln -s /etc/passwd /logs/verifier/link
echo hidden > /logs/verifier/.hidden
"#;
    write_tree(&pkg.workspace, &[("answer.txt", "42\n"), ("probe.sh", probe)]);
    let script = r#"
mkdir got
printf 'workdir /app\nro tests /tests\n# comment\nout /logs/verifier\n' > layout
SPECGAP_CANDIDATE_LAYOUT=$PWD/layout SPECGAP_CANDIDATE_OUT=$PWD/got "$SPECGAP_CANDIDATE" sh probe.sh > probe.out 2> probe.err
echo "status=$?" >> probe.out
printf 'workdir /tmp/x\n' > bad
SPECGAP_CANDIDATE_LAYOUT=$PWD/bad "$SPECGAP_CANDIDATE" true 2> bad.err; echo "bad=$?" >> probe.out
python3 - <<'PY'
import json, os
got = {name: open("got/" + name).read() for name in sorted(os.listdir("got"))}
detail = {"out": open("probe.out").read(), "err": open("probe.err").read(), "bad": open("bad.err").read(), "got": got}
json.dump({"version": 1, "requirements": {"probe": {"pass": True, "measured": detail}}}, open(os.environ["SPECGAP_OUT"] + "/result.json", "w"))
PY
"#;
    let mut run = evaluator_run(pkg.dir.path(), &pkg.workspace, script, Duration::from_secs(60));
    run.requirement_ids = vec!["probe".into()];
    let evaluation = evaluate(&run).unwrap();
    let measured = &evaluation.result.requirements.as_ref().unwrap()["probe"].measured;
    assert_eq!(measured["out"], "cwd=/app answer=42 files=test.sh \nstatus=0\nbad=125\n");
    assert_eq!(
        measured["err"],
        "specgap-candidate: left out .hidden of the output directory\nspecgap-candidate: left out link of the output directory\nspecgap-candidate: left out sub of the output directory\n"
    );
    assert_eq!(measured["bad"], "specgap-candidate: layout line 1: /tmp/x would be at or under /tmp\n");
    assert_eq!(measured["got"], serde_json::json!({"reward.json": "{\"a\": 1}\n", "reward.txt": "1\n"}));
}

#[test]
fn candidate_layout_refuses_overlaps_links_and_unknown_lines() {
    use specgap_sandbox::CandidateLayout;
    assert_eq!(CandidateLayout::parse("workdir /app\nout /app/logs\n"), Err("layout places /app and /app/logs overlap".into()));
    assert_eq!(
        CandidateLayout::parse("rw x /y\n"),
        Err(
            "layout line 1: expected `workdir PATH`, `ro SOURCE PATH`, `out PATH` or `timeout SECONDS` (each but ro once), found `rw x /y`"
                .into()
        )
    );
    assert_eq!(CandidateLayout::parse("timeout 0\n"), Err("layout line 1: timeout 0 is not a whole number of seconds, at least 1".into()));
    assert_eq!(CandidateLayout::parse("timeout 90\n").unwrap().timeout, Some(Duration::from_secs(90)));
    assert_eq!(CandidateLayout::parse("ro ../up /tests\n"), Err("layout line 1: ../up must be a relative path of plain names".into()));
    assert_eq!(
        CandidateLayout::parse("out /logs/../etc\n"),
        Err("layout line 1: /logs/../etc must be an absolute path of plain names other than /".into())
    );
    let layout = CandidateLayout::parse("workdir /app\nro tests /tests\n").unwrap();
    assert_eq!(layout.workdir.as_deref(), Some(Path::new("/app")));
    assert_eq!(layout.read_only, vec![("tests".into(), "/tests".into())]);
}

#[test]
fn a_layout_timeout_replaces_the_candidate_limit() {
    let pkg = package();
    let script = r#"
printf 'timeout 20\n' > layout
SPECGAP_CANDIDATE_LAYOUT=$PWD/layout "$SPECGAP_CANDIDATE" sleep 1; echo "long=$?" >&2
"$SPECGAP_CANDIDATE" sleep 1 2>/dev/null; echo "short=$?" >&2
echo '{"version":1,"reward":0.0}' > "$SPECGAP_OUT/result.json"
"#;
    let mut run = evaluator_run(pkg.dir.path(), &pkg.workspace, script, Duration::from_secs(30));
    run.candidate_limits.timeout = Duration::from_millis(300);
    let evaluation = evaluate(&run).unwrap();
    assert_eq!(evaluation.stderr_tail, "long=0\nshort=124\n");
}
