//! The sandbox mounts each role would get (seed 000 App. E): exactly the table of
//! `specgap_synth::sandbox_view`.

use std::path::{Path, PathBuf};

use serde_json::json;
use specgap_sandbox::Mount;
use specgap_synth::role::{RoleName, RoleRequest};
use specgap_synth::sandbox_view::{ViewError, role_view};

fn request(role: RoleName, inputs: serde_json::Value, work_dir: Option<&str>) -> RoleRequest {
    RoleRequest { role, prompt: String::new(), inputs, work_dir: work_dir.map(PathBuf::from), retry_reason: None }
}

fn mount(host: &str, sandbox: &str, writable: bool) -> Mount {
    Mount { host: host.into(), sandbox: sandbox.into(), writable }
}

fn view(request: &RoleRequest) -> (Vec<Mount>, PathBuf) {
    let view = role_view(request, Path::new("/h")).unwrap();
    (view.mounts, view.cwd)
}

#[test]
fn each_role_sees_only_what_the_paper_gives_it() {
    let handoff = mount("/h", "/handoff", true);
    let planner = request(RoleName::Planner, json!({"source": "/src/task", "limits": {}}), None);
    assert_eq!(view(&planner), (vec![mount("/src/task", "/source", false), handoff.clone()], "/source".into()));

    let builder = request(RoleName::Builder, json!({"brief": {}, "source": "/src/task"}), Some("/out/work/design-1/iteration-1"));
    assert_eq!(
        view(&builder),
        (vec![mount("/out/work/design-1/iteration-1", "/work", true), handoff.clone()], "/work".into()),
        "the Builder does not see the source"
    );

    let auditor = request(RoleName::Auditor, json!({"package": "/out/work/design-1/iteration-1"}), None);
    assert_eq!(view(&auditor), (vec![mount("/out/work/design-1/iteration-1", "/package", false), handoff.clone()], "/package".into()));

    let implementer =
        request(RoleName::Implementer, json!({"instruction": "...", "work_dir": "/w"}), Some("/out/work/design-1/iteration-1-sufficiency"));
    assert_eq!(
        view(&implementer),
        (vec![mount("/out/work/design-1/iteration-1-sufficiency", "/work", true), handoff.clone()], "/work".into()),
        "the implementer sees its workspace copy only"
    );

    let rollouts = json!([{"rollout": "full-1", "episode_dir": "/r/e1"}, {"rollout": "partial-1", "episode_dir": "/r/e2"}]);
    let calibrator = request(RoleName::Calibrator, json!({"package": "/p", "rollouts": rollouts}), None);
    assert_eq!(
        view(&calibrator),
        (vec![mount("/r/e1", "/rollouts/full-1", false), mount("/r/e2", "/rollouts/partial-1", false), handoff], "/handoff".into())
    );
}

#[test]
fn a_request_without_the_path_its_role_needs_is_refused() {
    let err = role_view(&request(RoleName::Planner, json!({}), None), Path::new("/h")).unwrap_err();
    assert_eq!(err, ViewError::Missing { role: "planner", what: "inputs.source" });
    assert_eq!(err.to_string(), "the planner's request has no inputs.source, so its sandbox cannot be set up");
    let err = role_view(&request(RoleName::Builder, json!({}), None), Path::new("/h")).unwrap_err();
    assert_eq!(err.to_string(), "the builder's request has no working directory, so its sandbox cannot be set up");
}
