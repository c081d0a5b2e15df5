//! Whole-machine residual states (issue 25 item 4; seed 001's Terminal-Bench track): a
//! predecessor on an image task that changed files outside the workspace leaves a state whose
//! `machine.tar` is part of it — screened apart from the same workspace without it, rebuilt and
//! re-verified on the image with the layer over it, and installed with the state.

use std::path::{Path, PathBuf};

use specgap_residualize::build::BuildExclusion;
use specgap_residualize::pipeline::{Request, TargetRequest};

use specgap_test_support::files::write_file;
use specgap_test_support::image::{BusyboxImage, ImageTask, have_busybox, tar};

use crate::support::{Final, Predecessor, harness_diff, run, sheet, write_run};

/// A test-scored image task (a busybox rootfs) whose tests are `answer` (answer.txt says 42)
/// and `tool` (/etc/tool.conf, outside the workspace, says `on`); `None` without busybox.
fn machine_task(root: &Path) -> Option<specgap_task::TaskPackage> {
    if !have_busybox() {
        return None;
    }
    let task = ImageTask {
        name: "fixtures/machine",
        description: "Configure the tool and answer",
        instruction: "Turn the tool on and put the answer in answer.txt.\n",
        test_sh: "a=fail; test \"$(cat /app/answer.txt 2>/dev/null)\" = 42 && a=pass\n\
         t=fail; test \"$(cat /etc/tool.conf 2>/dev/null)\" = on && t=pass\n\
         echo \"{\\\"version\\\": 1, \\\"tests\\\": {\\\"answer\\\": \\\"$a\\\", \\\"tool\\\": \\\"$t\\\"}}\" > /logs/verifier/result.json\n",
    };
    task.write(root, &BusyboxImage::new(&["sh", "cat", "test", "echo", "ls"]));
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
    let layer = tar(&layer_tree, &tmp.path().join("machine.tar"), "etc");
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
