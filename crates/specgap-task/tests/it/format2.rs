//! Package format 2 (DESIGN §2): a package that says `format = 2` may use `[task].tags`,
//! `[task].subfamily`, `[delivery].schema` and `[[observation]].request`; each is validated;
//! a format-1 package using one is rejected at that key; unknown keys stay errors.

use specgap_protocol::package::FORMAT_2_KEYS;

use crate::support::{Copy, add_probes};

/// req-basic as format 2 with tags, a sub-family and an owner's request on one observation.
fn req_format_2() -> Copy {
    let copy = Copy::of("req-basic");
    copy.replace("task.toml", "format = 1\n", "format = 2\n");
    copy.replace("task.toml", "family = \"swe\"\n", "family = \"swe\"\ntags = [\"billing\", \"late-fees\"]\nsubfamily = \"invoicing\"\n");
    copy.replace(
        "observations.toml",
        "failure_mode = \"fee-over-cap\"\n",
        "failure_mode = \"fee-over-cap\"\nrequest = \"Next month no customer should pay a late fee that big for an invoice that small.\"\n",
    );
    copy
}

/// delivery-basic as format 2 with a submission schema at `schema/plan.schema.json`.
fn delivery_format_2(schema_text: &str) -> Copy {
    let copy = Copy::of("delivery-basic");
    copy.replace("task.toml", "format = 1\n", "format = 2\n");
    copy.replace("task.toml", "artifact = \"plan.json\"\n", "artifact = \"plan.json\"\nschema = \"schema/plan.schema.json\"\n");
    copy.write("schema/plan.schema.json", schema_text);
    copy
}

const SCHEMA: &str = r#"{"type": "object", "required": ["boxes"], "properties": {"boxes": {"type": "array"}}}"#;

#[test]
fn format_2_package_with_every_addition_loads() {
    let copy = req_format_2();
    let package = specgap_task::load(&copy.root).unwrap();
    assert_eq!(package.format(), 2);
    assert_eq!(package.tags(), ["billing", "late-fees"]);
    assert_eq!(package.subfamily(), Some("invoicing"));
    let requests: Vec<(&str, Option<&str>)> =
        package.observations().iter().map(|o| (o.failure_mode.as_str(), o.request.as_deref())).collect();
    assert_eq!(
        requests,
        [
            ("disputed-charged", None),
            ("fee-over-cap", Some("Next month no customer should pay a late fee that big for an invoice that small.")),
            ("fee-miscounted", None),
            ("charged-on-time", None),
        ]
    );
    assert_eq!(package.delivery_schema(), None);

    let delivery = delivery_format_2(SCHEMA);
    let package = specgap_task::load(&delivery.root).unwrap();
    let schema = package.delivery_schema().unwrap();
    assert_eq!(schema.path, delivery.path("schema/plan.schema.json"));
    assert_eq!(schema.schema, serde_json::from_str::<serde_json::Value>(SCHEMA).unwrap());
    assert_eq!(package.manifest().delivery.as_ref().unwrap().schema.as_deref(), Some("schema/plan.schema.json"));
    assert!(package.tags().is_empty());
    assert_eq!(package.subfamily(), None);
}

#[test]
fn format_1_packages_load_unchanged_and_say_format_1() {
    let copy = Copy::of("req-basic");
    let package = specgap_task::load(&copy.root).unwrap();
    assert_eq!(package.format(), 1);
    assert!(package.tags().is_empty());
    assert!(package.observations().iter().all(|o| o.request.is_none()));
    // Declaring format 2 without using anything of it changes nothing but the format.
    copy.replace("task.toml", "format = 1\n", "format = 2\n");
    let two = specgap_task::load(&copy.root).unwrap();
    assert_eq!(two.format(), 2);
    assert_eq!(two.observations(), package.observations());
    assert_eq!(two.requirements(), package.requirements());
}

#[test]
fn format_1_package_using_a_format_2_key_is_rejected_at_that_key() {
    let needs = |at: String, key: &str| {
        format!("{at}: {key} is a format-2 key, and this package says `format = 1`; set `format = 2` in task.toml to use it")
    };
    let copy = req_format_2();
    copy.replace("task.toml", "format = 2\n", "format = 1\n");
    assert_eq!(copy.load_error(), needs(format!("{}:8:8", copy.path("task.toml").display()), "[task].tags"));
    copy.replace("task.toml", "tags = [\"billing\", \"late-fees\"]\n", "");
    assert_eq!(copy.load_error(), needs(format!("{}:8:13", copy.path("task.toml").display()), "[task].subfamily"));
    copy.replace("task.toml", "subfamily = \"invoicing\"\n", "");
    assert_eq!(copy.load_error(), needs(format!("{}:11:11", copy.path("observations.toml").display()), "[[observation]].request"));

    let delivery = delivery_format_2(SCHEMA);
    delivery.replace("task.toml", "format = 2\n", "format = 1\n");
    assert_eq!(delivery.load_error(), needs(format!("{}:20:10", delivery.path("task.toml").display()), "[delivery].schema"));
    // The message names every key format 2 adds in the protocol's list.
    assert_eq!(
        FORMAT_2_KEYS,
        [
            "task.toml [task].tags",
            "task.toml [task].subfamily",
            "task.toml [delivery].schema",
            "observations.toml [[observation]].request",
            "task.toml [project].probes",
            "task.toml [environment].image",
            "task.toml [environment].dockerfile",
            "task.toml [environment].rootfs",
            "task.toml [environment].oci_layout",
            "task.toml [environment].workdir",
            "task.toml [evaluator].dir",
            "task.toml [evaluator].out",
            "task.toml [evaluator.environment]",
            "task.toml [evaluator].trusts_workspace",
            "task.toml [stages]"
        ]
    );
}

#[test]
fn project_probes_are_a_format_2_list_of_commands() {
    let copy = req_format_2();
    add_probes(&copy, r#"["python3 -m billing.fees", "ls project_records"]"#);
    let package = specgap_task::load(&copy.root).unwrap();
    let project = package.manifest().project.as_ref().unwrap();
    assert_eq!(project.probes, ["python3 -m billing.fees", "ls project_records"]);
    copy.replace("task.toml", "\"ls project_records\"", "\"  \"");
    assert_eq!(
        copy.load_error(),
        format!("{}:18:10: [project].probes has a blank command; expected a shell command in each entry", copy.path("task.toml").display())
    );
    // In a format-1 package the key is refused where it stands.
    let one = Copy::of("req-basic");
    add_probes(&one, r#"["ls"]"#);
    assert_eq!(
        one.load_error(),
        format!(
            "{}:16:10: [project].probes is a format-2 key, and this package says `format = 1`; set `format = 2` in task.toml to use it",
            one.path("task.toml").display()
        )
    );
}

#[test]
fn unknown_keys_stay_errors_in_format_2() {
    let copy = req_format_2();
    copy.replace("task.toml", "tags = [", "tag = [");
    assert_eq!(
        copy.load_error(),
        format!(
            "{}:8:1: unknown field `tag`, expected one of `name`, `version`, `description`, `family`, `tags`, `subfamily`",
            copy.path("task.toml").display()
        )
    );
    let copy = req_format_2();
    copy.replace("observations.toml", "request = ", "requests = ");
    assert_eq!(
        copy.load_error(),
        format!(
            "{}:11:1: unknown field `requests`, expected one of `requirement`, `failure_mode`, `scene`, `incident`, `detail`, `request`",
            copy.path("observations.toml").display()
        )
    );
}

#[test]
fn tags_and_subfamily_are_validated() {
    let label_rule =
        "expected lowercase letters and digits in words joined by single hyphens, at most 64 characters (e.g. `ml-experiment`)";
    let task_toml = |copy: &Copy| copy.path("task.toml").display().to_string();
    let copy = req_format_2();
    copy.replace("task.toml", "\"late-fees\"", "\"Late Fees\"");
    assert_eq!(copy.load_error(), format!("{}:8:8: [task].tags entry `Late Fees` is not usable; {label_rule}", task_toml(&copy)));
    let copy = req_format_2();
    copy.replace("task.toml", "\"late-fees\"", "\"billing\"");
    assert_eq!(copy.load_error(), format!("{}:8:8: [task].tags lists `billing` twice; expected each tag once", task_toml(&copy)));
    let copy = req_format_2();
    copy.replace("task.toml", "subfamily = \"invoicing\"", "subfamily = \"ml_experiment\"");
    assert_eq!(copy.load_error(), format!("{}:9:13: [task].subfamily `ml_experiment` is not usable; {label_rule}", task_toml(&copy)));
    let copy = req_format_2();
    copy.replace("task.toml", "tags = [\"billing\", \"late-fees\"]", "tags = \"billing\"");
    assert_eq!(copy.load_error(), format!("{}:8:8: invalid type: string \"billing\", expected a sequence", task_toml(&copy)));
}

#[test]
fn blank_request_is_rejected() {
    let copy = req_format_2();
    copy.replace("observations.toml", "\"Next month no customer should pay a late fee that big for an invoice that small.\"", "\"  \"");
    assert_eq!(
        copy.load_error(),
        format!(
            "{}:11:11: request is blank; expected what the owner needs to be different, in the owner's words (or no `request`)",
            copy.path("observations.toml").display()
        )
    );
}

#[test]
fn delivery_schema_must_be_a_private_json_schema_file() {
    let at = |copy: &Copy| format!("{}:20:10", copy.path("task.toml").display());
    let with_path = |path: &str| {
        let copy = delivery_format_2(SCHEMA);
        copy.replace("task.toml", "\"schema/plan.schema.json\"", &format!("\"{path}\""));
        copy
    };
    let copy = with_path("/etc/passwd");
    assert_eq!(
        copy.load_error(),
        format!("{}: [delivery].schema `/etc/passwd` is absolute; expected a path relative to the package root", at(&copy))
    );
    for escaping in ["../plan.schema.json", ".", "schema/../.."] {
        let copy = with_path(escaping);
        assert_eq!(copy.load_error(), format!("{}: [delivery].schema `{escaping}` does not name a file inside the package", at(&copy)));
    }
    let copy = with_path("workspace/plan.schema.json");
    copy.write("workspace/plan.schema.json", SCHEMA);
    assert_eq!(
        copy.load_error(),
        format!(
            "{}: [delivery].schema `workspace/plan.schema.json` is inside workspace/, which the agent sees; keep the schema outside it (it is private)",
            at(&copy)
        )
    );
    // Through a link that stays in the package but lands in the workspace.
    let copy = with_path("schema/visible.json");
    copy.write("workspace/plan.schema.json", SCHEMA);
    copy.symlink("../workspace/plan.schema.json", "schema/visible.json");
    assert_eq!(
        copy.load_error(),
        format!(
            "{}: [delivery].schema `schema/visible.json` is inside workspace/, which the agent sees; keep the schema outside it (it is private)",
            at(&copy)
        )
    );
    let copy = with_path("schema/missing.json");
    assert_eq!(copy.load_error(), format!("{}: [delivery].schema `schema/missing.json`: no such file in the package", at(&copy)));
    let copy = with_path("schema");
    assert_eq!(copy.load_error(), format!("{}: [delivery].schema `schema` is not a regular file", at(&copy)));
}

#[test]
fn delivery_schema_must_parse_as_a_json_schema() {
    let copy = delivery_format_2("{\"type\": \"object\",\n  \"required\": [\"boxes\"\n}");
    assert_eq!(
        copy.load_error(),
        format!("{}:3:1: not JSON, so not a JSON Schema: expected `,` or `]`", copy.path("schema/plan.schema.json").display())
    );
    let copy = delivery_format_2("[\"boxes\"]");
    assert_eq!(
        copy.load_error(),
        format!("{}: a JSON Schema is an object (or `true` / `false`); found a list", copy.path("schema/plan.schema.json").display())
    );
    let copy = delivery_format_2("true");
    assert_eq!(specgap_task::load(&copy.root).unwrap().delivery_schema().unwrap().schema, serde_json::Value::Bool(true));
}
