//! Scale-out as the schedulers run it (docs/scale-out.md, issue 19): the documented Kubernetes
//! Indexed Job's pod command run once per index with the variables Kubernetes sets, the
//! documented Slurm array script run once per array task with the variables Slurm sets, and
//! the documented submission on a real one-node Slurm cluster (`scripts/slurm-local-cluster`).
//! Each merged study must equal the unsharded run of the same study table by table
//! (timestamps aside); a missing shard and a shard published twice with different results are
//! refused by name.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use crate::support::*;

/// The study every test shards: two tasks, three scripted agents, two conditions, the clean
/// start, two repeats — twelve episodes (the combinations a scripted agent has no overlay for
/// are not applicable), three per shard of four.
fn write_study(dir: &Path) -> PathBuf {
    fs_create(dir);
    let study = dir.join("study.toml");
    let text = format!(
        r#"suites = ["{}", "{}"]
conditions = ["partial", "full"]
starts = ["clean"]
repeats = 2
seed = 11

[[agent]]
kind = "scripted"
solution = "gold"

[[agent]]
kind = "scripted"
solution = "literal"

[[agent]]
kind = "scripted"
solution = "starter"
"#,
        task_fixture("req-basic").display(),
        task_fixture("test-basic").display()
    );
    std::fs::write(&study, text).unwrap();
    study
}

fn fs_create(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
}

/// The study run in one process, as the reference every merge must equal.
fn unsharded_run(study: &Path, out: &Path) {
    run_ok(["run".as_ref(), "--config".as_ref(), study.as_os_str(), "--out".as_ref(), out.as_os_str(), "--no-report".as_ref()]);
    assert_eq!(episodes(out).len(), 12);
}

/// A PATH on which `specgap` is the binary under test.
fn path_with_specgap() -> String {
    let bin = Path::new(env!("CARGO_BIN_EXE_specgap")).parent().unwrap().display().to_string();
    format!("{bin}:{}", std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".into()))
}

/// Waits for every child, asserting each succeeded.
fn wait_all(children: Vec<(String, std::process::Child)>) {
    for (what, child) in children {
        let output = child.wait_with_output().unwrap();
        assert!(
            output.status.success(),
            "{what} failed with {:?}\nstdout:\n{}\nstderr:\n{}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }
}

fn assert_same_tables(merged: &Path, whole: &Path) {
    let (m, w) = (tables(merged), tables(whole));
    assert_eq!(m.keys().collect::<Vec<_>>(), w.keys().collect::<Vec<_>>());
    for (table, rows) in &w {
        assert_eq!(Some(rows), m.get(table), "table {table} of the merged study differs from the unsharded run");
    }
}

fn published_shards(shards: &Path) -> Vec<String> {
    let mut names: Vec<String> =
        std::fs::read_dir(shards).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    names
}

// ---------------------------------------------------------------------------------------
// Kubernetes: the manifest's pod command, per index.

/// What a test needs of a Job manifest of docs/scale-out: the pod's script (the one `args`
/// entry of `command: ["/bin/sh", "-c"]`), the literal environment, the names of variables
/// taken from secrets, the volume mount paths and `completions`. A line reader for the
/// manifests we ship, not a YAML parser: it fails loudly on anything else.
#[derive(Debug, Default)]
struct PodSpec {
    script: String,
    env: BTreeMap<String, String>,
    secret_env: Vec<String>,
    mounts: Vec<String>,
    completions: Option<u32>,
    completion_mode: Option<String>,
}

fn read_manifest(path: &Path) -> PodSpec {
    let text = std::fs::read_to_string(path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let mut pod = PodSpec::default();
    let value = |line: &str, key: &str| line.trim().strip_prefix(key).map(|v| v.trim().trim_matches('"').to_string());
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        if let Some(v) = value(line, "completions:") {
            pod.completions = Some(v.parse().unwrap());
        } else if let Some(v) = value(line, "completionMode:") {
            pod.completion_mode = Some(v);
        } else if line.trim() == r#"command: ["/bin/sh", "-c"]"# {
            assert_eq!(lines[i + 1].trim(), "args:", "{}: args must follow the command", path.display());
            assert_eq!(lines[i + 2].trim(), "- |", "{}: the pod script must be a literal block", path.display());
            let body_indent = lines[i + 3].len() - lines[i + 3].trim_start().len();
            i += 3;
            while i < lines.len() && (lines[i].trim().is_empty() || lines[i].len() - lines[i].trim_start().len() >= body_indent) {
                pod.script.push_str(lines[i].get(body_indent..).unwrap_or(""));
                pod.script.push('\n');
                i += 1;
            }
            continue;
        } else if let Some(name) = line.trim().strip_prefix("- name: ") {
            let next = lines.get(i + 1).map_or("", |l| l.trim());
            if let Some(v) = next.strip_prefix("value: ") {
                pod.env.insert(name.to_string(), v.trim_matches('"').to_string());
            } else if next == "valueFrom:" {
                assert_eq!(lines[i + 2].trim(), "secretKeyRef:", "{}: {name} must come from a secret", path.display());
                pod.secret_env.push(name.to_string());
            } else if let Some(mount) = next.strip_prefix("mountPath: ") {
                pod.mounts.push(mount.to_string());
            }
        }
        i += 1;
    }
    assert!(!pod.script.is_empty(), "{}: no pod script found", path.display());
    pod
}

/// Runs a pod's script as Kubernetes would, with `JOB_COMPLETION_INDEX` when the Job is
/// Indexed: every volume mount path replaced by a directory of `volumes` (shared ones the same
/// for every pod, `/scratch` the pod's own), the literal environment, each secret variable set
/// to a dummy value, `specgap` on PATH.
fn spawn_pod(pod: &PodSpec, volumes: &BTreeMap<String, PathBuf>, index: Option<u32>) -> std::process::Child {
    let mut script = pod.script.clone();
    // Longest mount paths first, so /study/x would be replaced before /study.
    let mut mounts: Vec<&String> = pod.mounts.iter().collect();
    mounts.sort_by_key(|m| std::cmp::Reverse(m.len()));
    for mount in mounts {
        let dir = volumes.get(mount).unwrap_or_else(|| panic!("no volume for mount {mount}"));
        script = script.replace(&format!("{mount}/"), &format!("{}/", dir.display()));
        script = script.replace(&format!("{mount} "), &format!("{} ", dir.display()));
    }
    let mut cmd = Command::new("/bin/sh");
    cmd.arg("-c").arg(&script).env("PATH", path_with_specgap()).env_remove("SPECGAP_LOG");
    for (name, value) in &pod.env {
        cmd.env(name, value);
    }
    for name in &pod.secret_env {
        cmd.env(name, "dummy-secret-for-the-test");
    }
    if let Some(index) = index {
        cmd.env("JOB_COMPLETION_INDEX", index.to_string()).env("HOSTNAME", format!("specgap-study-{index}-abcde"));
    }
    cmd.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).spawn().unwrap()
}

#[test]
fn the_documented_indexed_job_run_pod_by_pod_merges_into_the_unsharded_run() {
    let docs = repo().join("docs/scale-out");
    let job = read_manifest(&docs.join("indexed-job.yaml"));
    let merge = read_manifest(&docs.join("merge-job.yaml"));
    assert_eq!(job.completion_mode.as_deref(), Some("Indexed"));
    let completions = job.completions.unwrap();
    assert_eq!(completions, 4);
    // Kubernetes does not tell a pod the Job's completions: the manifest must.
    assert_eq!(job.env.get("SPECGAP_SHARDS"), Some(&completions.to_string()));
    // API keys come from secrets, never from the manifest.
    assert_eq!(job.secret_env, ["HOSTED_KEY"]);
    assert!(job.env.keys().all(|k| !k.ends_with("_KEY")), "{:?}", job.env);
    assert!(job.script.contains("--shard auto") && job.script.contains("--publish /study/shards"), "{}", job.script);

    let tmp = tempfile::tempdir().unwrap();
    let config = tmp.path().join("configmap");
    write_study(&config);
    let whole = tmp.path().join("whole");
    unsharded_run(&config.join("study.toml"), &whole);

    let study = tmp.path().join("pvc");
    fs_create(&study);
    let pods: Vec<_> = (0..completions)
        .map(|index| {
            let scratch = tmp.path().join(format!("pod-{index}-emptydir"));
            fs_create(&scratch);
            let volumes = BTreeMap::from([
                ("/config".to_string(), config.clone()),
                ("/study".to_string(), study.clone()),
                ("/scratch".to_string(), scratch),
            ]);
            (format!("pod of index {index}"), spawn_pod(&job, &volumes, Some(index)))
        })
        .collect();
    wait_all(pods);
    assert_eq!(published_shards(&study.join("shards")), ["shard-1-of-4", "shard-2-of-4", "shard-3-of-4", "shard-4-of-4"]);
    // Index i runs shard i + 1 (JOB_COMPLETION_INDEX is 0-based, --shard i/n 1-based).
    for i in 1..=4u32 {
        let run_toml = std::fs::read_to_string(study.join(format!("shards/shard-{i}-of-4/run.toml"))).unwrap();
        assert!(run_toml.contains(&format!("shard = [{i}, 4]")), "{run_toml}");
        assert!(run_toml.contains("plan_hash = "), "{run_toml}");
        assert_eq!(episodes(&study.join(format!("shards/shard-{i}-of-4"))).len(), 3);
    }

    let merge_scratch = tmp.path().join("merge-emptydir");
    fs_create(&merge_scratch);
    let volumes = BTreeMap::from([("/study".to_string(), study.clone()), ("/scratch".to_string(), merge_scratch)]);
    wait_all(vec![("the merge pod".to_string(), spawn_pod(&merge, &volumes, None))]);
    assert_same_tables(&study.join("merged"), &whole);
    assert!(study.join("merged/report.md").is_file());
    assert!(!study.join(".merged.tmp").exists());
}

// ---------------------------------------------------------------------------------------
// Slurm: the array script, per array task.

/// Runs `docs/scale-out/<script>` as a Slurm task would, with `vars` (the SLURM_* variables)
/// and STUDY / SPECGAP.
fn spawn_slurm_script(script: &str, study: &Path, cwd: &Path, vars: &[(&str, String)]) -> std::process::Child {
    let mut cmd = Command::new("bash");
    cmd.arg(repo().join("docs/scale-out").join(script))
        .current_dir(cwd)
        .env("STUDY", study)
        .env("SPECGAP", env!("CARGO_BIN_EXE_specgap"))
        .env("TMPDIR", cwd)
        .env_remove("SPECGAP_LOG");
    for (name, value) in vars {
        cmd.env(name, value);
    }
    cmd.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).spawn().unwrap()
}

/// The variables Slurm sets in task `id` of `sbatch --array=1-7:2` (four tasks: 1, 3, 5, 7).
fn slurm_array_task(id: u32) -> Vec<(&'static str, String)> {
    vec![
        ("SLURM_JOB_ID", (100 + id).to_string()),
        ("SLURM_ARRAY_JOB_ID", "100".into()),
        ("SLURM_ARRAY_TASK_ID", id.to_string()),
        ("SLURM_ARRAY_TASK_MIN", "1".into()),
        ("SLURM_ARRAY_TASK_MAX", "7".into()),
        ("SLURM_ARRAY_TASK_STEP", "2".into()),
        ("SLURM_ARRAY_TASK_COUNT", "4".into()),
        ("SLURM_CPUS_PER_TASK", "2".into()),
    ]
}

fn merge_output(inputs: &[&Path], out: &Path) -> Output {
    let mut cmd = specgap();
    cmd.arg("merge").args(inputs).arg("--out").arg(out);
    cmd.output().unwrap()
}

#[test]
fn the_documented_slurm_array_script_run_task_by_task_merges_into_the_unsharded_run() {
    let tmp = tempfile::tempdir().unwrap();
    let study = tmp.path().join("study");
    write_study(&study);
    let whole = tmp.path().join("whole");
    unsharded_run(&study.join("study.toml"), &whole);

    let tasks: Vec<_> = [1u32, 3, 5, 7]
        .into_iter()
        .map(|id| (format!("array task {id}"), spawn_slurm_script("slurm-array.sh", &study, tmp.path(), &slurm_array_task(id))))
        .collect();
    wait_all(tasks);
    let shards = study.join("shards");
    assert_eq!(published_shards(&shards), ["shard-1-of-4", "shard-2-of-4", "shard-3-of-4", "shard-4-of-4"]);
    // Task 5 of 1-7:2 is shard (5 − 1) / 2 + 1 = 3.
    let third = std::fs::read_to_string(shards.join("shard-3-of-4/run.toml")).unwrap();
    assert!(third.contains("shard = [3, 4]"), "{third}");
    // The local run stores are removed once published.
    assert!(std::fs::read_dir(tmp.path()).unwrap().all(|e| !e.unwrap().file_name().to_string_lossy().starts_with("specgap-100-")));

    wait_all(vec![(
        "the merge job".to_string(),
        spawn_slurm_script("slurm-merge.sh", &study, tmp.path(), &[("SLURM_JOB_ID", "200".into())]),
    )]);
    assert_same_tables(&study.join("merged"), &whole);
    assert!(study.join("merged/report.md").is_file());

    // A requeued task that published its shard again: identical copies, merged once.
    let again = spawn_slurm_script("slurm-array.sh", &study, tmp.path(), &slurm_array_task(3));
    wait_all(vec![("array task 3 requeued".to_string(), again)]);
    assert!(shards.join("shard-2-of-4.2").is_dir());
    let with_copy = tmp.path().join("with-copy");
    let merged = merge_output(&[&shards], &with_copy);
    assert!(merged.status.success(), "{merged:?}");
    assert_same_tables(&with_copy, &whole);
    refusals(&shards, tmp.path());
}

/// The merge refuses a missing shard and a shard published twice with different results,
/// naming them, and writes nothing.
fn refusals(shards: &Path, tmp: &Path) {
    let s = |name: &str| shards.join(name);
    let out = tmp.join("refused-missing");
    let refused = merge_output(&[&s("shard-1-of-4"), &s("shard-3-of-4"), &s("shard-4-of-4")], &out);
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success());
    assert!(stderr.contains("shard 2 of 4 is missing"), "{stderr}");
    assert!(!out.exists());

    // The copy of shard 2 now differs from the first in one episode's score.
    let db = s("shard-2-of-4.2").join("results.sqlite");
    let connection = rusqlite::Connection::open(&db).unwrap();
    let changed = connection.execute("UPDATE episodes SET final_score = 0.25 WHERE rowid = (SELECT min(rowid) FROM episodes)", []).unwrap();
    assert_eq!(changed, 1);
    drop(connection);
    let out = tmp.join("refused-duplicate");
    let refused = merge_output(&[shards], &out);
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success());
    assert!(stderr.contains("shard 2/4 is given twice"), "{stderr}");
    assert!(stderr.contains("shard-2-of-4.2") && stderr.contains(&s("shard-2-of-4").display().to_string()), "{stderr}");
    assert!(!out.exists());
}

// ---------------------------------------------------------------------------------------
// A real one-node Slurm cluster.

/// Stops the cluster of `scripts/slurm-local-cluster` when the test ends, however it ends.
struct LocalSlurm {
    dir: PathBuf,
}

impl Drop for LocalSlurm {
    fn drop(&mut self) {
        let _ = Command::new("bash").arg(repo().join("scripts/slurm-local-cluster")).arg("stop").arg(&self.dir).status();
    }
}

fn slurm_installed() -> bool {
    ["sbatch", "squeue", "slurmctld", "slurmd", "munged"]
        .iter()
        .all(|p| Command::new("sh").arg("-c").arg(format!("command -v {p}")).output().is_ok_and(|o| o.status.success()))
}

#[test]
fn the_documented_slurm_submission_runs_on_a_local_slurm_cluster() {
    // The local cluster's slurmd starts jobs as their owners, which takes root.
    let missing = if !slurm_installed() {
        Some("Slurm (sbatch, squeue, slurmctld, slurmd, munged) is required: apt-get install slurmctld slurmd slurm-client munge")
    } else if !is_root() {
        Some("the local Slurm cluster needs root (its slurmd starts jobs as their owners)")
    } else {
        None
    };
    if let Some(missing) = missing {
        assert_ne!(std::env::var("SPECGAP_REQUIRE_EXTERNAL").as_deref(), Ok("1"), "{missing}");
        eprintln!("skipped: {missing} (SPECGAP_REQUIRE_EXTERNAL=1 makes this a failure)");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let study = tmp.path().join("study");
    write_study(&study);
    let whole = tmp.path().join("whole");
    unsharded_run(&study.join("study.toml"), &whole);

    let cluster = LocalSlurm { dir: tmp.path().join("slurm") };
    let started = Command::new("bash").arg(repo().join("scripts/slurm-local-cluster")).arg("start").arg(&cluster.dir).output().unwrap();
    assert!(started.status.success(), "the local Slurm cluster did not start: {}", String::from_utf8_lossy(&started.stderr));
    let conf = cluster.dir.join("slurm.conf");

    let submit = Command::new("bash")
        .arg(repo().join("docs/scale-out/slurm-submit.sh"))
        .arg("4")
        .current_dir(tmp.path())
        .env("SLURM_CONF", &conf)
        .env("STUDY", &study)
        .env("SPECGAP", env!("CARGO_BIN_EXE_specgap"))
        .env("PATH", path_with_specgap())
        .env_remove("SPECGAP_LOG")
        .output()
        .unwrap();
    let submitted = assert_succeeded(submit);
    let ids = String::from_utf8_lossy(&submitted.stdout).to_string();
    let job_ids: Vec<&str> = ids.split_whitespace().skip(1).step_by(2).collect();
    assert_eq!(job_ids.len(), 2, "{ids}");

    // A bound on waiting, not an assertion about speed: the jobs must end at all.
    let deadline = Instant::now() + Duration::from_secs(900);
    loop {
        let queue = Command::new("squeue").args(["-h", "-o", "%i %T", "-j", &job_ids.join(",")]).env("SLURM_CONF", &conf).output().unwrap();
        let listed = String::from_utf8_lossy(&queue.stdout).to_string();
        if queue.status.success() && listed.trim().is_empty() {
            break;
        }
        assert!(Instant::now() < deadline, "jobs {ids} still queued after 900 s:\n{listed}\n{}", slurm_logs(tmp.path()));
        std::thread::sleep(Duration::from_millis(500));
    }
    assert!(study.join("merged/report.md").is_file(), "the merge job did not finish:\n{}", slurm_logs(tmp.path()));
    assert_eq!(published_shards(&study.join("shards")), ["shard-1-of-4", "shard-2-of-4", "shard-3-of-4", "shard-4-of-4"]);
    assert_same_tables(&study.join("merged"), &whole);
}

/// The job logs sbatch wrote in `dir`, for a failure message.
fn slurm_logs(dir: &Path) -> String {
    let mut text = String::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.ends_with(".log") {
            text.push_str(&format!("== {name}\n{}\n", std::fs::read_to_string(entry.path()).unwrap_or_default()));
        }
    }
    text
}

// ---------------------------------------------------------------------------------------
// Clusters run shards as non-root users, often where cgroups cannot be written.

/// `specgap run` of `scripted:gold` on `req-basic` as uid/gid 65534 (nobody), the way a
/// cluster runs it: no root, so no cgroup of this machine's can be made for the per-command
/// limits. Run directly when the tests themselves are not root.
fn run_as_nobody(out_parent: &Path, out: &Path, extra: &[&str]) -> Output {
    let root = is_root();
    let mut cmd = if root {
        let mut cmd = Command::new("setpriv");
        cmd.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"]).arg(env!("CARGO_BIN_EXE_specgap"));
        cmd
    } else {
        Command::new(env!("CARGO_BIN_EXE_specgap"))
    };
    cmd.arg("run")
        .arg(task_fixture("req-basic"))
        .args(["--agent", "scripted:gold", "--condition", "partial", "--no-report", "--out"])
        .arg(out)
        .args(extra)
        .env("HOME", out_parent)
        .env("XDG_CACHE_HOME", out_parent.join("cache"))
        .env("TMPDIR", out_parent)
        .env_remove("SPECGAP_LOG");
    cmd.output().unwrap()
}

fn is_root() -> bool {
    Command::new("id").arg("-u").output().is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

#[test]
fn a_non_root_run_warns_that_the_limits_are_missing_and_require_limits_refuses_it() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    fs_create(&home);
    if is_root() {
        let chowned = Command::new("chown").args(["-R", "65534:65534"]).arg(&home).status().unwrap();
        assert!(chowned.success());
    }
    let refused_out = home.join("refused");
    let refused = run_as_nobody(&home, &refused_out, &["--require-limits"]);
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success(), "{stderr}");
    assert!(
        stderr.contains("--require-limits: the per-command limits cannot be applied here: the process limit (cgroup `pids`): "),
        "{stderr}"
    );
    assert!(stderr.contains("; the memory limit (cgroup `memory`): "), "{stderr}");
    assert!(stderr.contains("Permission denied") || stderr.contains("not available") || stderr.contains("is mounted"), "{stderr}");
    assert!(!refused_out.exists(), "a refused run left a store behind");

    let out = home.join("run");
    let ran = run_as_nobody(&home, &out, &[]);
    let stderr = String::from_utf8_lossy(&ran.stderr);
    assert!(ran.status.success(), "{stderr}");
    assert!(
        stderr.contains("warning: sandboxed commands will run without their per-command limits, which cannot be applied here: the process limit (cgroup `pids`): "),
        "{stderr}"
    );
    // The sandbox itself still runs unprivileged (user namespaces), and the episode is scored.
    let done = episodes(&out);
    assert_eq!(done.len(), 1);
    assert_eq!(done[0].final_score, Some(1.0), "{stderr}");
}
