//! Benchmark of the sandbox and of materialization (run by `bench/sandbox.sh`).
//!
//! Prints a Markdown table of medians over repeated runs:
//! - per-command cost of `true`: no sandbox (`/bin/sh -c true` spawned directly), bare
//!   `bwrap --unshare-all ... true`, and `specgap_sandbox::run` (with and without the cgroup
//!   limits);
//! - per-episode materialization of workspaces with 10, 1,000 and 10,000 files from a cached
//!   base, against `cp -r` of the same tree; plus `freeze`, `diff` and the one-time base build.
//!
//! Usage: `sandbox_bench [--runs N]` (default 30).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use specgap_sandbox::{BaseCache, CommandSpec, HostView, Limits, SandboxConfig, diff, freeze, materialize, run};

type BenchResult<T> = Result<T, Box<dyn std::error::Error>>;

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

/// Runs `f` once to warm up, then `runs` times, returning the median.
fn measure(runs: usize, mut f: impl FnMut(usize) -> BenchResult<()>) -> BenchResult<Duration> {
    f(usize::MAX)?;
    let mut samples = Vec::with_capacity(runs);
    for i in 0..runs {
        let start = Instant::now();
        f(i)?;
        samples.push(start.elapsed());
    }
    Ok(median(samples))
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1e3)
}

fn status_ok(cmd: &mut Command) -> BenchResult<()> {
    let status = cmd.stdout(Stdio::null()).stderr(Stdio::null()).status()?;
    if !status.success() {
        return Err(format!("{cmd:?} failed: {status}").into());
    }
    Ok(())
}

fn bare_bwrap() -> Command {
    let mut cmd = Command::new("bwrap");
    cmd.args(["--unshare-all", "--unshare-user", "--uid", "1000", "--gid", "1000", "--cap-drop", "ALL"])
        .args(["--die-with-parent", "--new-session", "--ro-bind", "/usr", "/usr"])
        .args(["--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64", "--symlink", "usr/bin", "/bin"])
        .args(["--proc", "/proc", "--dev", "/dev", "--", "/bin/true"]);
    cmd
}

/// A tree of `files` files of 200 bytes, 100 per directory.
fn make_tree(root: &Path, files: usize) -> BenchResult<()> {
    for i in 0..files {
        let dir = root.join(format!("d{:03}", i / 100));
        std::fs::create_dir_all(&dir)?;
        let line = format!("file {i} {}\n", "x".repeat(180));
        std::fs::write(dir.join(format!("f{i:05}.txt")), &line.as_bytes()[..200.min(line.len())])?;
    }
    Ok(())
}

fn main() -> BenchResult<()> {
    let args: Vec<String> = std::env::args().collect();
    let runs = args.iter().position(|a| a == "--runs").and_then(|i| args.get(i + 1)).and_then(|v| v.parse().ok()).unwrap_or(30);
    let scratch = tempfile::Builder::new().prefix("specgap-bench-").tempdir()?;
    let ws = scratch.path().join("ws");
    std::fs::create_dir(&ws)?;
    let host = HostView::system()?;
    let config = SandboxConfig::default();

    println!("runs per measurement: {runs} (median, after one warm-up)\n");
    println!("| per command (`true`) | median |\n| --- | --- |");
    let bare_sh = measure(runs, |_| status_ok(Command::new("/bin/sh").args(["-c", "true"])))?;
    println!("| no sandbox: spawn `/bin/sh -c true` | {} |", ms(bare_sh));
    let bare = measure(runs, |_| status_ok(&mut bare_bwrap()))?;
    println!("| bare `bwrap --unshare-all ... /bin/true` | {} |", ms(bare))
    ;
    let spec = CommandSpec::argv(vec!["true".into()], &ws);
    let ours = measure(runs, |_| {
        let out = run(&spec, &host, &config)?;
        if !out.success() {
            return Err("true failed".into());
        }
        Ok(())
    })?;
    println!("| `specgap_sandbox::run` (default limits: pids + memory cgroups) | {} |", ms(ours));
    let mut light = spec.clone();
    light.limits = Limits { max_processes: None, memory_bytes: None, ..Limits::default() };
    let ours_light = measure(runs, |_| {
        run(&light, &host, &config)?;
        Ok(())
    })?;
    println!("| `specgap_sandbox::run` (no process or memory limit) | {} |", ms(ours_light));
    let shell = CommandSpec::shell("true", &ws);
    let ours_shell = measure(runs, |_| {
        run(&shell, &host, &config)?;
        Ok(())
    })?;
    println!("| `specgap_sandbox::run` of a shell string `true` | {} |", ms(ours_shell));
    println!("\nratio run / bare bwrap: {:.2} (default limits), {:.2} (no limits)\n", ours.as_secs_f64() / bare.as_secs_f64(), ours_light.as_secs_f64() / bare.as_secs_f64());

    let cache = BaseCache::new(scratch.path().join("cache"))?;
    println!("| files | `cp -r` | materialize (cached base) | ratio | freeze | diff (unchanged) | base build (once) |");
    println!("| --- | --- | --- | --- | --- | --- | --- |");
    for files in [10usize, 1_000, 10_000] {
        let src = scratch.path().join(format!("src-{files}"));
        make_tree(&src, files)?;
        let build_start = Instant::now();
        let base = cache.base(&format!("bench-{files}"), &src)?;
        let build = build_start.elapsed();
        let out_dir = scratch.path().join(format!("out-{files}"));
        std::fs::create_dir(&out_dir)?;
        let dest = |kind: &str, i: usize| -> PathBuf { out_dir.join(format!("{kind}-{i}")) };
        let cp = measure(runs, |i| status_ok(Command::new("cp").arg("-r").arg(&src).arg(dest("cp", i))))?;
        let mat = measure(runs, |i| Ok(materialize(&base, &dest("mat", i), None)?))?;
        let frz = measure(runs, |i| Ok(freeze(&dest("mat", 0), &dest("frz", i))?))?;
        let dff = measure(runs.min(10), |_| {
            let d = diff(&base, &dest("mat", 0))?;
            if !d.is_empty() {
                return Err("unexpected diff".into());
            }
            Ok(())
        })?;
        println!(
            "| {files} | {} | {} | {:.2} | {} | {} | {} |",
            ms(cp),
            ms(mat),
            mat.as_secs_f64() / cp.as_secs_f64(),
            ms(frz),
            ms(dff),
            ms(build)
        );
        std::fs::remove_dir_all(&out_dir)?;
    }
    Ok(())
}
