//! Whole-machine residual states (issue 25 item 4; seed 001's Terminal-Bench track): a
//! predecessor on an image task that changed files outside the workspace leaves a state whose
//! `machine.tar` is part of it — screened apart from the same workspace without it, rebuilt and
//! re-verified on the image with the layer over it, and installed with the state.

use std::path::{Path, PathBuf};
use std::process::Command;

use specgap_residualize::build::BuildExclusion;
use specgap_residualize::pipeline::{Request, TargetRequest};

use crate::support::{Final, Predecessor, harness_diff, run, sheet, write_run};

const BUSYBOX: &str = "/bin/busybox";

fn write_file(path: &Path, text: &str) {
    fs_err::create_dir_all(path.parent().unwrap()).unwrap();
    fs_err::write(path, text).unwrap();
}

fn tar_of(tree: &Path, out: &Path, what: &str) -> Vec<u8> {
    assert!(Command::new("tar").arg("-C").arg(tree).arg("-cf").arg(out).arg(what).status().unwrap().success());
    fs_err::read(out).unwrap()
}

/// A test-scored image task (a busybox rootfs) whose tests are `answer` (answer.txt says 42)
/// and `tool` (/etc/tool.conf, outside the workspace, says `on`); `None` without busybox.
fn machine_task(root: &Path) -> Option<specgap_task::TaskPackage> {
    if !Path::new(BUSYBOX).is_file() {
        if std::env::var("SPECGAP_REQUIRE_EXTERNAL").is_ok_and(|v| v == "1") {
            panic!("SPECGAP_REQUIRE_EXTERNAL=1 and {BUSYBOX} (Debian's busybox-static) is missing");
        }
        eprintln!("skipped: {BUSYBOX} (Debian's busybox-static) is missing");
        return None;
    }
    let image = root.with_extension("image-tree");
    fs_err::create_dir_all(image.join("bin")).unwrap();
    fs_err::create_dir_all(image.join("etc")).unwrap();
    fs_err::copy(BUSYBOX, image.join("bin/busybox")).unwrap();
    for applet in ["sh", "cat", "test", "echo", "ls"] {
        std::os::unix::fs::symlink("busybox", image.join("bin").join(applet)).unwrap();
    }
    fs_err::create_dir_all(root.join("environment")).unwrap();
    tar_of(&image, &root.join("environment/rootfs.tar"), ".");
    write_file(
        &root.join("task.toml"),
        "format = 2\n\n[task]\nname = \"fixtures/machine\"\nversion = \"1.0.0\"\ndescription = \"Configure the tool and answer\"\n\
         family = \"terminal\"\n\n[environment]\nrootfs = \"environment/rootfs.tar\"\nworkdir = \"/app\"\n\n\
         [evaluator]\ncommand = \"sh test.sh\"\ndir = \"/tests\"\nout = \"/logs/verifier\"\ntimeout_sec = 30\n",
    );
    write_file(&root.join("instruction.md"), "Turn the tool on and put the answer in answer.txt.\n");
    write_file(&root.join("workspace/README"), "answers go here\n");
    write_file(
        &root.join("evaluator/test.sh"),
        "a=fail; test \"$(cat /app/answer.txt 2>/dev/null)\" = 42 && a=pass\n\
         t=fail; test \"$(cat /etc/tool.conf 2>/dev/null)\" = on && t=pass\n\
         echo \"{\\\"version\\\": 1, \\\"tests\\\": {\\\"answer\\\": \\\"$a\\\", \\\"tool\\\": \\\"$t\\\"}}\" > /logs/verifier/result.json\n",
    );
    Some(specgap_task::load(root).unwrap())
}

#[test]
fn a_predecessors_machine_is_part_of_its_state_from_screening_to_the_installed_package() {
    let tmp = tempfile::tempdir().unwrap();
    // SAFETY: this test binary reads XDG_CACHE_HOME only through the environment cache.
    unsafe { std::env::set_var("XDG_CACHE_HOME", tmp.path().join("cache")) };
    let Some(package) = machine_task(&tmp.path().join("pkg")) else { return };
    let patch = tmp.path().join("wrong.patch");
    write_file(&patch, "diff --git a/answer.txt b/answer.txt\nnew file mode 100644\n--- /dev/null\n+++ b/answer.txt\n@@ -0,0 +1 @@\n+41\n");
    let diff = harness_diff(&package, &patch);
    let layer_tree = tmp.path().join("layer");
    write_file(&layer_tree.join("etc/tool.conf"), "on\n");
    let layer = tar_of(&layer_tree, &tmp.path().join("machine.tar"), "etc");
    let name = package.name().to_string();
    let runs = vec![
        // Turned the tool on (outside the workspace) and wrote a wrong answer.
        Predecessor::submitted(&name, "p:machine", 0, Final { machine: Some(layer.clone()), ..Final::failing(&["answer"], diff.clone()) }),
        // The same workspace without the machine change: another state, which also fails `tool`.
        Predecessor::submitted(&name, "p:workspace-only", 0, Final::failing(&["answer"], diff.clone())),
    ];
    let gen_dir = tmp.path().join("gen");
    let ids = write_run(&gen_dir, &[&package], &runs);
    let (screened, _) = run(&Request { dir: gen_dir.clone(), sandbox: true, ..Request::default() }).unwrap();
    assert_eq!(screened.funnel.stages[1].output, 2, "the machine tells the two states apart");
    let rows: Vec<(&str, &str, &str)> = ids.iter().map(|id| (id.as_str(), "yes", "yes")).collect();
    let packages = tmp.path().join("packages");
    let request = Request {
        dir: gen_dir.clone(),
        reviews: vec![("alice".into(), sheet(&tmp.path().join("a.csv"), &rows)), ("bob".into(), sheet(&tmp.path().join("b.csv"), &rows))],
        target: Some(TargetRequest::WriteTo(packages.clone())),
        sandbox: true,
        ..Request::default()
    };
    run(&request).unwrap();
    let record: specgap_residualize::build::BuildRecord =
        serde_json::from_slice(&fs_err::read(gen_dir.join(specgap_residualize::pipeline::WORK_DIR).join("build.json")).unwrap()).unwrap();
    let verdict = |id: &str| {
        let state = record.state(id).unwrap();
        (state.excluded, state.detail.clone())
    };
    assert_eq!(verdict(&ids[0]), (None, "fails answer as recorded".to_string()));
    assert_eq!(
        verdict(&ids[1]),
        (
            Some(BuildExclusion::FailingSetChanged),
            "recorded as failing but passing now: none; failing now but not recorded: tool".to_string()
        )
    );
    let installed: PathBuf = packages.join(&name);
    let copy = specgap_task::load(&installed).unwrap();
    let state = copy.residual(&ids[0]).unwrap();
    assert_eq!(fs_err::read(state.machine.as_ref().unwrap()).unwrap(), layer);
    assert!(copy.residual(&ids[1]).is_none());
}
