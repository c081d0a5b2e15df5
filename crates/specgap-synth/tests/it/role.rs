//! Role specs and `scripted:` files: what is refused, and how a script answers.

use std::path::PathBuf;

use serde_json::json;
use specgap_synth::role::{Role, RoleError, RoleName, RoleRequest, ScriptedRole, role_from_spec};

fn script(dir: &tempfile::TempDir, body: serde_json::Value) -> PathBuf {
    let path = dir.path().join("role.json");
    fs_err::write(&path, body.to_string()).unwrap();
    path
}

fn request(role: RoleName, work_dir: Option<PathBuf>) -> RoleRequest {
    RoleRequest { role, prompt: "p".into(), inputs: json!({}), work_dir, retry_reason: None }
}

#[test]
fn agent_kinds_not_wired_yet_are_refused_by_name() {
    let Err(err) = role_from_spec("replay:run.jsonl") else { panic!("replay accepted") };
    assert_eq!(
        err.to_string(),
        "`replay:run.jsonl` cannot play a synthesize role: a replay: script replays an episode's tool calls, and a role answers with a hand-off; for the offline path write a `scripted:<file>` role script (docs/synthesize.md \"Roles\")"
    );
    let Err(err) = role_from_spec("gold") else { panic!("gold accepted") };
    assert_eq!(
        err.to_string(),
        "`gold` cannot play a synthesize role: only `scripted:<file>`, `chat:<model>` and `cli:<adapter>` roles are supported"
    );
    let Err(err) = role_from_spec("cli:claude-code") else { panic!("cli accepted unresolved") };
    assert_eq!(
        err.to_string(),
        "`cli:claude-code` is a cli: role: resolve its agent configuration and play it with CliRole (specgap synthesize does)"
    );
}

#[test]
fn malformed_scripts_are_refused_naming_the_field() {
    let tmp = tempfile::tempdir().unwrap();
    let path = script(&tmp, json!({"format": 2, "steps": []}));
    assert_eq!(
        ScriptedRole::load(&path).unwrap_err().to_string(),
        format!("role script {} is malformed at `format`: format 2 is not supported; this specgap reads format 1", path.display())
    );
    let path = script(&tmp, json!({"format": 1, "steps": [{"reply": {}, "reply_text": "x"}]}));
    assert_eq!(
        ScriptedRole::load(&path).unwrap_err().to_string(),
        format!("role script {} is malformed at `steps[0]`: needs exactly one of `reply` and `reply_text`", path.display())
    );
    let path = script(&tmp, json!({"format": 1, "steps": [{"answer": "x"}]}));
    let message = ScriptedRole::load(&path).unwrap_err().to_string();
    assert!(
        message.starts_with(&format!("role script {} is malformed at `steps[0].answer`: unknown field `answer`", path.display())),
        "{message}"
    );
}

#[test]
fn a_script_answers_in_order_and_refuses_to_write_for_a_read_only_role() {
    let tmp = tempfile::tempdir().unwrap();
    fs_err::create_dir_all(tmp.path().join("files/pkg")).unwrap();
    fs_err::write(tmp.path().join("files/pkg/task.toml"), "x").unwrap();
    let path = script(
        &tmp,
        json!({"format": 1, "steps": [
            {"reply": {"a": 1}},
            {"reply_text": "free text"},
            {"write_from": "files", "reply": {"b": 2}},
            {"write_from": "files", "reply": {"c": 3}}
        ]}),
    );
    let mut role = ScriptedRole::load(&path).unwrap();
    assert_eq!(role.label(), format!("scripted:{}", path.display()));
    assert_eq!(role.answer(&request(RoleName::Planner, None)).unwrap(), r#"{"a":1}"#);
    assert_eq!(role.answer(&request(RoleName::Planner, None)).unwrap(), "free text");
    let work = tmp.path().join("work");
    assert_eq!(role.answer(&request(RoleName::Builder, Some(work.clone()))).unwrap(), r#"{"b":2}"#);
    assert_eq!(fs_err::read_to_string(work.join("pkg/task.toml")).unwrap(), "x");
    let err = role.answer(&request(RoleName::Auditor, None)).unwrap_err();
    assert!(matches!(err, RoleError::ReadOnly { step: 4, .. }), "{err:?}");
    assert_eq!(err.to_string(), format!("step 4 of role script {} writes files, but the auditor is read-only", path.display()));
}
