//! Format 2's image environments: `[environment]` names one of `image`, `dockerfile`,
//! `rootfs`, `oci_layout`, with `workdir`, `[evaluator].dir` / `out` and an optional
//! `[evaluator.environment]`; each rule refuses with the key's location.

use std::path::PathBuf;

use specgap_protocol::package::ImageSource;

use crate::support::Copy;

/// req-basic as format 2 whose `[environment]` is `env_table` (the lines after the header)
/// and whose `[evaluator]` gains `evaluator_extra`.
fn with_environment(env_table: &str, evaluator_extra: &str) -> Copy {
    let copy = Copy::of("req-basic");
    copy.replace("task.toml", "format = 1\n", "format = 2\n");
    copy.replace("task.toml", "commands = [\"python3\"]\nenv = { PYTHONDONTWRITEBYTECODE = \"1\" }\n", env_table);
    copy.replace("task.toml", "timeout_sec = 60\n", &format!("timeout_sec = 60\n{evaluator_extra}"));
    copy.write("environment/Dockerfile", "FROM specgap-test/debian:bookworm\n");
    copy.write("environment/rootfs.tar", "");
    copy.write("environment/oci/oci-layout", "{\"imageLayoutVersion\": \"1.0.0\"}");
    copy.write("environment/oci/index.json", "{\"schemaVersion\": 2, \"manifests\": []}");
    copy
}

fn task_toml_at(copy: &Copy, line: usize, column: usize) -> String {
    format!("{}:{line}:{column}", copy.path("task.toml").display())
}

#[test]
fn each_image_source_loads_with_its_path_resolved() {
    let cases = [
        ("image = \"python:3.12-slim\"\n", ImageSource::Image("python:3.12-slim".into()), None),
        (
            "dockerfile = \"environment/Dockerfile\"\n",
            ImageSource::Dockerfile("environment/Dockerfile".into()),
            Some("environment/Dockerfile"),
        ),
        ("rootfs = \"environment/rootfs.tar\"\n", ImageSource::Rootfs("environment/rootfs.tar".into()), Some("environment/rootfs.tar")),
        ("oci_layout = \"environment/oci\"\n", ImageSource::OciLayout("environment/oci".into()), Some("environment/oci")),
    ];
    for (table, source, path) in cases {
        let copy = with_environment(table, "");
        let package = specgap_task::load(&copy.root).unwrap();
        let image = package.image_environment().unwrap();
        assert_eq!(image.source.source, source);
        assert_eq!(image.source.path, path.map(|p| copy.path(p)));
        assert_eq!(image.workdir, PathBuf::from("/workspace"));
        assert_eq!(image.evaluator_dir, None);
        assert_eq!(image.evaluator_out, None);
        assert_eq!(image.evaluator_image(), &image.source);
        assert_eq!(package.manifest().environment.image_source(), Some(source));
    }
    let copy = with_environment("dockerfile = \"environment/Dockerfile\"\n", "");
    let image = specgap_task::load(&copy.root).unwrap().image_environment().cloned().unwrap();
    assert_eq!(image.source.build_context(), Some(copy.path("environment").as_path()));
}

#[test]
fn harbor_style_paths_and_a_separate_verifier_image_load() {
    let copy = with_environment(
        "dockerfile = \"environment/Dockerfile\"\nworkdir = \"/app\"\nenv = { LANG = \"C.UTF-8\" }\n",
        "dir = \"/tests\"\nout = \"/logs/verifier\"\n\n[evaluator.environment]\nrootfs = \"environment/rootfs.tar\"\n",
    );
    let package = specgap_task::load(&copy.root).unwrap();
    let image = package.image_environment().unwrap();
    assert_eq!(image.workdir, PathBuf::from("/app"));
    assert_eq!(image.evaluator_dir, Some(PathBuf::from("/tests")));
    assert_eq!(image.evaluator_out, Some(PathBuf::from("/logs/verifier")));
    let verifier = image.evaluator_source.as_ref().unwrap();
    assert_eq!(verifier.source, ImageSource::Rootfs("environment/rootfs.tar".into()));
    assert_eq!(image.evaluator_image(), verifier);
    assert_eq!(package.manifest().environment.workdir(), "/app");
}

#[test]
fn host_command_packages_have_no_image_environment() {
    let package = specgap_task::load(Copy::of("req-basic").root).unwrap();
    assert_eq!(package.image_environment(), None);
    assert_eq!(package.manifest().environment.image_source(), None);
    assert_eq!(package.manifest().environment.workdir(), "/workspace");
}

#[test]
fn format_1_package_using_an_environment_key_is_rejected_at_that_key() {
    let copy = with_environment("image = \"python:3.12-slim\"\n", "");
    copy.replace("task.toml", "format = 2\n", "format = 1\n");
    assert_eq!(
        copy.load_error(),
        format!(
            "{}: [environment].image is a format-2 key, and this package says `format = 1`; set `format = 2` in task.toml to use it",
            task_toml_at(&copy, 10, 9)
        )
    );
    let copy = with_environment("", "dir = \"/tests\"\n");
    copy.replace("task.toml", "format = 2\n", "format = 1\n");
    assert_eq!(
        copy.load_error(),
        format!(
            "{}: [evaluator].dir is a format-2 key, and this package says `format = 1`; set `format = 2` in task.toml to use it",
            task_toml_at(&copy, 18, 7)
        )
    );
}

#[test]
fn two_sources_and_host_keys_beside_an_image_are_refused() {
    let copy = with_environment("image = \"a\"\nrootfs = \"environment/rootfs.tar\"\n", "");
    assert_eq!(
        copy.load_error(),
        format!("{}: [environment] names its image by `image` and `rootfs`; expected exactly one of them", task_toml_at(&copy, 10, 9))
    );
    let copy = with_environment("image = \"a\"\ncommands = [\"python3\"]\n", "");
    assert_eq!(
        copy.load_error(),
        format!(
            "{}: [environment].commands and binds name host programs and paths, and this environment is an image \
             ([environment].image); install what the task needs in the image instead",
            task_toml_at(&copy, 11, 12)
        )
    );
    let copy = with_environment("image = \"a\"\n", "\n[evaluator.environment]\n");
    assert_eq!(
        copy.load_error(),
        format!(
            "{}: [evaluator.environment] names no image; expected one of `image`, `dockerfile`, `rootfs`, `oci_layout`, \
             or `commands` (the evaluator on the host's programs), or no table: the task's image",
            task_toml_at(&copy, 20, 1)
        )
    );
}

#[test]
fn evaluator_commands_run_the_evaluator_on_host_programs_and_its_candidates_on_the_image() {
    // Alone: the candidates run on the task's image.
    let copy = with_environment("image = \"a\"\n", "\n[evaluator.environment]\ncommands = [\"python3\"]\n");
    let package = specgap_task::load(&copy.root).unwrap();
    let image = package.image_environment().unwrap();
    assert_eq!(image.evaluator_commands, ["python3"]);
    assert!(image.evaluator_on_host());
    assert_eq!(image.evaluator_image(), &image.source);
    // Beside an image of its own: the candidates run on that one.
    let copy = with_environment("image = \"a\"\n", "\n[evaluator.environment]\ncommands = [\"python3\"]\nimage = \"b\"\n");
    let package = specgap_task::load(&copy.root).unwrap();
    let image = package.image_environment().unwrap();
    assert_eq!(image.evaluator_image().source, ImageSource::Image("b".into()));
    assert!(image.evaluator_on_host());
    // Without the key nothing changes.
    let copy = with_environment("image = \"a\"\n", "");
    assert!(!specgap_task::load(&copy.root).unwrap().image_environment().unwrap().evaluator_on_host());
}

#[test]
fn evaluator_commands_beside_a_place_in_the_image_or_naming_a_path_are_refused() {
    let copy = with_environment("image = \"a\"\n", "dir = \"/tests\"\n\n[evaluator.environment]\ncommands = [\"python3\"]\n");
    assert_eq!(
        copy.load_error(),
        format!(
            "{}: [evaluator].dir places the evaluator's files inside an image, and [evaluator.environment].commands runs the \
             evaluator on the host's programs; remove [evaluator].dir (its candidate calls still run on the image)",
            task_toml_at(&copy, 19, 7)
        )
    );
    let copy = with_environment("image = \"a\"\n", "\n[evaluator.environment]\ncommands = [\"/usr/bin/python3\"]\n");
    assert_eq!(
        copy.load_error(),
        format!(
            "{}: [evaluator.environment].commands names `/usr/bin/python3`; expected command names (e.g. `python3`)",
            task_toml_at(&copy, 20, 1)
        )
    );
}

#[test]
fn image_only_keys_need_an_image() {
    let copy = with_environment("workdir = \"/app\"\n", "");
    assert_eq!(
        copy.load_error(),
        format!(
            "{}: [environment].workdir places files inside an image environment, and [environment] names no image; \
             add one of `image`, `dockerfile`, `rootfs`, `oci_layout` to [environment]",
            task_toml_at(&copy, 10, 11)
        )
    );
}

#[test]
fn source_paths_must_be_files_of_the_package_outside_workspace_and_evaluator() {
    let cases = [
        (
            "dockerfile = \"/etc/Dockerfile\"\n",
            "[environment].dockerfile `/etc/Dockerfile` is absolute; expected a path relative to the package root",
        ),
        ("rootfs = \"../rootfs.tar\"\n", "[environment].rootfs `../rootfs.tar` does not name a path inside the package"),
        (
            "rootfs = \"workspace/rootfs.tar\"\n",
            "[environment].rootfs `workspace/rootfs.tar` is inside workspace/; keep the environment's files outside workspace/ and evaluator/ (e.g. environment/)",
        ),
        (
            "dockerfile = \"evaluator/Dockerfile\"\n",
            "[environment].dockerfile `evaluator/Dockerfile` is inside evaluator/; keep the environment's files outside workspace/ and evaluator/ (e.g. environment/)",
        ),
        ("rootfs = \"environment/missing.tar\"\n", "[environment].rootfs `environment/missing.tar`: no such path in the package"),
        ("rootfs = \"environment\"\n", "[environment].rootfs `environment` is not a regular file"),
        ("oci_layout = \"environment/Dockerfile\"\n", "[environment].oci_layout `environment/Dockerfile` is not a directory"),
        (
            "oci_layout = \"environment\"\n",
            "[environment].oci_layout `environment` has no `oci-layout`; expected an OCI image layout directory",
        ),
        (
            "image = \"python 3\"\n",
            "[environment].image `python 3` is not an image reference; expected one without whitespace (e.g. `python:3.12-slim`)",
        ),
    ];
    for (table, message) in cases {
        let copy = with_environment(table, "");
        assert_eq!(copy.load_error(), format!("{}: {message}", task_toml_at(&copy, 10, table.find('=').unwrap() + 3)), "{table}");
    }
}

#[test]
fn mount_paths_are_absolute_plain_and_apart() {
    let cases = [
        (
            "workdir = \"app\"\n",
            "",
            11,
            11,
            "[environment].workdir `app` is not usable; expected an absolute path of plain names other than / (e.g. `/app`)",
        ),
        (
            "workdir = \"/\"\n",
            "",
            11,
            11,
            "[environment].workdir `/` is not usable; expected an absolute path of plain names other than / (e.g. `/app`)",
        ),
        (
            "workdir = \"/app/../etc\"\n",
            "",
            11,
            11,
            "[environment].workdir `/app/../etc` is not usable; expected an absolute path of plain names other than / (e.g. `/app`)",
        ),
        ("workdir = \"/proc/app\"\n", "", 11, 11, "[environment].workdir `/proc/app` is under /proc, which the sandbox provides itself"),
        (
            "workdir = \"/app\"\n",
            "dir = \"/app/tests\"\n",
            20,
            7,
            "[evaluator].dir `/app/tests` overlaps [environment].workdir `/app`; expected separate directories, neither inside the other",
        ),
        (
            "",
            "dir = \"/tests\"\nout = \"/tests\"\n",
            20,
            7,
            "[evaluator].out `/tests` overlaps [evaluator].dir `/tests`; expected separate directories, neither inside the other",
        ),
    ];
    for (extra_env, evaluator, line, column, message) in cases {
        let copy = with_environment(&format!("image = \"a\"\n{extra_env}"), evaluator);
        assert_eq!(copy.load_error(), format!("{}: {message}", task_toml_at(&copy, line, column)), "{extra_env}{evaluator}");
    }
}

#[test]
fn the_image_environment_example_loads() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/environments/word-count");
    let package = specgap_task::load(&root).unwrap();
    let image = package.image_environment().unwrap();
    assert_eq!(image.source.source, ImageSource::Dockerfile("environment/Dockerfile".into()));
    assert_eq!(image.source.build_context(), Some(root.join("environment").as_path()));
    assert_eq!(image.workdir, PathBuf::from("/app"));
    assert_eq!(image.evaluator_dir, Some(PathBuf::from("/tests")));
    assert_eq!(image.evaluator_out, Some(PathBuf::from("/logs/verifier")));
}
