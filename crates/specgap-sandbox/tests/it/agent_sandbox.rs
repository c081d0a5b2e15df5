//! `AgentSandbox`: an external agent's long-running program. Each test checks one promise of
//! issue 14 item 3: the program runs with the isolation of every command, may start
//! background work that lives until the program exits, can be frozen (nothing it runs moves
//! while frozen) and thawed, and is ended whole — a program that ignores SIGTERM included.

use std::time::{Duration, Instant};

use specgap_sandbox::{AgentSandbox, CommandSpec, Mount, SandboxConfig, SandboxError};

use crate::support::{SECRET, package, processes_with, sandbox, system_host};

fn start(workspace: &std::path::Path, home: &std::path::Path) -> AgentSandbox {
    let mut template = CommandSpec::shell("", workspace);
    template.mounts.push(Mount { host: home.to_path_buf(), sandbox: "/home/specgap".into(), writable: true });
    template.env.insert("HOME".into(), "/home/specgap".into());
    AgentSandbox::start(&template, &system_host(), &sandbox()).unwrap()
}

fn wait(sandbox: &mut AgentSandbox) -> Option<i32> {
    sandbox.wait_exit(Instant::now() + Duration::from_secs(60)).unwrap().expect("the program ends within a minute").status
}

/// Waits (at most 30 s) until `path` holds a number above `above`, and returns it.
fn counter_above(path: &std::path::Path, above: u64) -> u64 {
    let until = Instant::now() + Duration::from_secs(30);
    loop {
        let now = std::fs::read_to_string(path).ok().and_then(|t| t.trim().parse::<u64>().ok()).unwrap_or(0);
        if now > above {
            return now;
        }
        assert!(Instant::now() < until, "the counter in {} stayed at {now}", path.display());
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn the_program_runs_isolated_with_its_home_and_can_run_again() {
    let pkg = package();
    let home = tempfile::tempdir().unwrap();
    let mut sandbox = start(&pkg.workspace, home.path());
    assert!(!sandbox.is_running());
    sandbox
        .run("id -u; pwd; echo $HOME; echo note > $HOME/kept; echo work > made.txt; cat ../evaluator/* 2>&1 | head -1; tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '")
        .unwrap();
    assert_eq!(wait(&mut sandbox), Some(0));
    let out = sandbox.stdout().text();
    assert!(out.starts_with("1000\n/workspace\n/home/specgap\n"), "{out}");
    assert!(!out.contains(SECRET), "a private file leaked: {out}");
    assert!(out.ends_with("lo\n"), "only loopback: {out}");
    assert_eq!(std::fs::read_to_string(pkg.workspace.join("made.txt")).unwrap(), "work\n");
    assert_eq!(std::fs::read_to_string(home.path().join("kept")).unwrap(), "note\n");
    // A second program in the same sandbox (a resumed session) sees the same home and /tmp.
    sandbox.run("echo t > /tmp/t; cat $HOME/kept; exit 7").unwrap();
    assert_eq!(wait(&mut sandbox), Some(7));
    sandbox.run("cat /tmp/t").unwrap();
    assert_eq!(wait(&mut sandbox), Some(0));
    assert!(sandbox.stdout().text().ends_with("note\nt\n"), "{}", sandbox.stdout().text());
    assert!(matches!(sandbox.run("true; true"), Ok(())));
    assert!(matches!(sandbox.run("second"), Err(SandboxError::InvalidSpec(_))), "one program at a time");
}

/// The exit status and the output travel on different pipes: the exit is reported only once
/// the program's last output is in the capture (before the fix, `stdout()` right after an exit
/// missed the last line now and then, under load). Many short programs, each checked at once.
#[test]
fn a_reported_exit_comes_with_all_the_output_written_before_it() {
    let pkg = package();
    let home = tempfile::tempdir().unwrap();
    let mut sandbox = start(&pkg.workspace, home.path());
    let mut expected = String::new();
    for i in 0..40 {
        sandbox.run(&format!("echo out-{i}; echo err-{i} >&2")).unwrap();
        assert_eq!(wait(&mut sandbox), Some(0));
        expected.push_str(&format!("out-{i}\n"));
        assert_eq!(sandbox.stdout().text(), expected, "after program {i}");
        assert!(sandbox.stderr().text().ends_with(&format!("err-{i}\n")), "after program {i}");
    }
}

#[test]
fn background_work_lives_until_the_program_exits_and_not_after() {
    let pkg = package();
    let home = tempfile::tempdir().unwrap();
    let mut sandbox = start(&pkg.workspace, home.path());
    // The background job outlives the shell that started it while the program runs.
    sandbox.run("(sleep 827361; echo never) & sleep 0.2; kill -0 $! && echo alive").unwrap();
    assert_eq!(wait(&mut sandbox), Some(0));
    assert!(sandbox.stdout().text().contains("alive"));
    assert_eq!(processes_with("827361"), Vec::<u32>::new(), "the program's background job survived it");
}

#[test]
fn a_frozen_program_writes_nothing_until_it_is_thawed() {
    let pkg = package();
    let home = tempfile::tempdir().unwrap();
    let mut sandbox = start(&pkg.workspace, home.path());
    sandbox.run("i=0; while :; do i=$((i + 1)); echo $i > counter.tmp; mv counter.tmp counter; sleep 0.01; done").unwrap();
    let counter = pkg.workspace.join("counter");
    counter_above(&counter, 3);
    sandbox.freeze();
    assert!(sandbox.is_frozen());
    let frozen_at = std::fs::read_to_string(&counter).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(std::fs::read_to_string(&counter).unwrap(), frozen_at, "the counter moved while frozen");
    sandbox.thaw();
    counter_above(&counter, frozen_at.trim().parse().unwrap());
    let exit = sandbox.terminate(Duration::from_millis(500)).unwrap();
    assert_eq!(exit.status, Some(143), "the loop's shell died of SIGTERM (128 + 15)");
}

#[test]
fn a_program_that_ignores_sigterm_is_killed_whole_after_the_grace() {
    let pkg = package();
    let home = tempfile::tempdir().unwrap();
    let mut sandbox = start(&pkg.workspace, home.path());
    sandbox.run("trap 'echo got-term >&2' TERM; sleep 736251 & while :; do sleep 0.05; done").unwrap();
    std::thread::sleep(Duration::from_millis(200));
    assert!(!processes_with("736251").is_empty(), "the background sleep runs");
    sandbox.freeze();
    let exit = sandbox.terminate(Duration::from_millis(300)).unwrap();
    assert_eq!(exit.status, None, "killed by the harness, not exited");
    assert!(sandbox.stderr().text().contains("got-term"), "SIGTERM reached the thawed program: {}", sandbox.stderr().text());
    assert_eq!(processes_with("736251"), Vec::<u32>::new());
    assert!(sandbox.processes().is_empty());
    assert!(matches!(sandbox.run("true"), Err(SandboxError::InvalidSpec(_))));
}

#[test]
fn an_external_agent_never_runs_unsandboxed() {
    let pkg = package();
    let template = CommandSpec::shell("", &pkg.workspace);
    let err = AgentSandbox::start(&template, &system_host(), &SandboxConfig { enabled: false }).unwrap_err();
    assert!(err.to_string().contains("cannot run without the sandbox"), "{err}");
}

/// Issue 24 item 4: what an external agent's programs read in the workspace is measured too
/// (its home is another mount and is not counted); each take starts afresh.
#[test]
fn the_workspace_files_an_agents_programs_read_are_measured() {
    let pkg = package();
    std::fs::write(pkg.workspace.join("other.txt"), "other\n").unwrap();
    let home = tempfile::tempdir().unwrap();
    let mut sandbox = start(&pkg.workspace, home.path());
    sandbox.run("echo notes.txt | xargs cat; echo x > $HOME/h; cat $HOME/h; false && cat other.txt").unwrap();
    assert_eq!(wait(&mut sandbox), Some(1));
    let first = sandbox.take_reads();
    if let specgap_sandbox::Reads::Unmeasured(why) = &first {
        assert!(std::env::var("SPECGAP_REQUIRE_EXTERNAL").as_deref() != Ok("1"), "reads not measured: {why}");
        eprintln!("skipped: reads cannot be measured here ({why})");
        return;
    }
    assert_eq!(first, specgap_sandbox::Reads::Measured(["notes.txt".to_string()].into()));
    sandbox.run("python3 -c 'open(\"other.txt\").read()'").unwrap();
    assert_eq!(wait(&mut sandbox), Some(0));
    assert_eq!(sandbox.take_reads(), specgap_sandbox::Reads::Measured(["other.txt".to_string()].into()));
}
