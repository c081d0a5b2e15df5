//! Benchmark of the sandbox and of materialization (run by `bench/sandbox.sh`).
//!
//! Prints a Markdown table of medians over repeated runs:
//! - per-command cost of `true`: no sandbox (`/bin/sh -c true` spawned directly), bare
//!   `bwrap --unshare-all ... true`, and `specgap_sandbox::run` (with and without the cgroup
//!   limits);
//! - per-episode materialization of workspaces with 10, 1,000 and 10,000 files from a cached
//!   base, against `cp -r` of the same tree; plus `freeze`, `diff` and the one-time base build.
//!
//! Usage: `sandbox_bench [--runs N] [--commands-only]` (default 30; at most 10 for the 10,000-file
//! tree). `--commands-only` stops after the per-command table.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use specgap_sandbox::{BaseCache, CommandSpec, HostView, Limits, SandboxConfig, diff, freeze, materialize, run};

type BenchResult<T> = Result<T, Box<dyn std::error::Error>>;

/// A named thing to time; called with the repetition index (usize::MAX for the warm-up).
type Variant<'a> = (&'a str, Box<dyn FnMut(usize) -> BenchResult<()> + 'a>);

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

/// Warms every variant up once, then runs them `runs` times *interleaved* (A B C A B C ...),
/// so load from other processes on the shared machine hits every variant alike; returns the
/// median of each.
fn measure(runs: usize, variants: &mut [Variant<'_>]) -> BenchResult<Vec<Duration>> {
    for (_, f) in variants.iter_mut() {
        f(usize::MAX)?;
    }
    let mut samples = vec![Vec::with_capacity(runs); variants.len()];
    for i in 0..runs {
        for (k, (_, f)) in variants.iter_mut().enumerate() {
            let start = Instant::now();
            f(i)?;
            samples[k].push(start.elapsed());
        }
    }
    Ok(samples.into_iter().map(median).collect())
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

/// Per-command cost on an image (a busybox tree) read-only and on a copy-on-write machine over
/// it (the overlay mounted by `unshare` before bubblewrap; issue 25 item 4), with the cost of
/// writing an untouched machine's layer. Skipped without `/bin/busybox`.
fn image_rows(runs: usize, ws: &Path, config: &SandboxConfig) -> BenchResult<()> {
    if !Path::new("/bin/busybox").is_file() {
        println!("(image rows skipped: /bin/busybox is missing)\n");
        return Ok(());
    }
    let dir = tempfile::Builder::new().prefix("specgap-bench-image-").tempdir()?;
    let image = dir.path().join("image");
    std::fs::create_dir_all(image.join("bin"))?;
    std::fs::create_dir_all(image.join("etc"))?;
    std::fs::copy("/bin/busybox", image.join("bin/busybox"))?;
    for applet in ["sh", "true"] {
        std::os::unix::fs::symlink("busybox", image.join("bin").join(applet))?;
    }
    let view = HostView::on_rootfs(&image, &Default::default(), &specgap_sandbox::ImagePlacement::workdir("/app"))?;
    let machine = specgap_sandbox::Machine::new()?;
    let on_machine = view.with_machine(&machine)?;
    let spec = CommandSpec::argv(vec!["true".into()], ws);
    let ours = |view: &HostView| -> BenchResult<()> {
        let out = run(&spec, view, config)?;
        if !out.success() {
            return Err(format!("`true` failed: {}", out.stderr.text()).into());
        }
        Ok(())
    };
    let mut variants: Vec<Variant<'_>> = vec![
        ("`run` on an image, read-only", Box::new(|_| ours(&view))),
        ("`run` on a copy-on-write machine over the image", Box::new(|_| ours(&on_machine))),
        (
            "`Machine::write_layer` of an untouched machine",
            Box::new(|_| Ok(machine.write_layer(&image, std::io::sink(), &view.machine_mount_points()).map(|_| ())?)),
        ),
    ];
    let medians = measure(runs, &mut variants)?;
    println!("| on an image (`true`, default limits) | median | / read-only image |\n| --- | --- | --- |");
    for ((name, _), m) in variants.iter().zip(&medians) {
        println!("| {name} | {} | {:.2} |", ms(*m), m.as_secs_f64() / medians[0].as_secs_f64());
    }
    println!();
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

    println!("runs per measurement: {runs} (median; variants interleaved A B C A B C after one warm-up each)\n");
    let spec = CommandSpec::argv(vec!["true".into()], &ws);
    let mut no_limits = spec.clone();
    no_limits.limits = Limits { max_processes: None, memory_bytes: None, ..Limits::default() };
    let mut pids_only = spec.clone();
    pids_only.limits = Limits { memory_bytes: None, ..Limits::default() };
    let shell = CommandSpec::shell("true", &ws);
    let ours = |spec: &CommandSpec| -> BenchResult<()> {
        let out = run(spec, &host, &config)?;
        if !out.success() {
            return Err(format!("{:?} failed: {}", spec.program, out.stderr.text()).into());
        }
        Ok(())
    };
    let mut variants: Vec<Variant<'_>> = vec![
        ("no sandbox: spawn `/bin/sh -c true`", Box::new(|_| status_ok(Command::new("/bin/sh").args(["-c", "true"])))),
        ("bare `bwrap --unshare-all ... /bin/true`", Box::new(|_| status_ok(&mut bare_bwrap()))),
        ("`run`, argv `true`, no process or memory limit (no cgroups)", Box::new(|_| ours(&no_limits))),
        ("`run`, argv `true`, process limit", Box::new(|_| ours(&pids_only))),
        ("`run`, argv `true`, default limits (process + memory)", Box::new(|_| ours(&spec))),
        ("`run`, shell string `true`, default limits", Box::new(|_| ours(&shell))),
    ];
    let medians = measure(runs, &mut variants)?;
    let bare = medians[1];
    println!("| per command (`true`) | median | / bare bwrap |\n| --- | --- | --- |");
    for ((name, _), m) in variants.iter().zip(&medians) {
        println!("| {name} | {} | {:.2} |", ms(*m), m.as_secs_f64() / bare.as_secs_f64());
    }
    println!();
    if args.iter().any(|a| a == "--commands-only") {
        return Ok(());
    }
    image_rows(runs, &ws, &config)?;

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
        // 10,000-file trees are I/O-bound and slow: fewer repetitions.
        let runs = if files >= 10_000 { runs.min(10) } else { runs };
        let first = out_dir.join("first");
        materialize(&base, &first, None)?;
        let mut variants: Vec<Variant<'_>> = vec![
            ("cp", Box::new(|i| status_ok(Command::new("cp").arg("-r").arg(&src).arg(dest("cp", i))))),
            ("materialize", Box::new(|i| Ok(materialize(&base, &dest("mat", i), None)?))),
            ("freeze", Box::new(|i| Ok(freeze(&first, &dest("frz", i))?))),
            (
                "diff",
                Box::new(|_| {
                    if !diff(&base, &first)?.is_empty() {
                        return Err("unexpected diff".into());
                    }
                    Ok(())
                }),
            ),
        ];
        let m = measure(runs, &mut variants)?;
        println!(
            "| {files} | {} | {} | {:.2} | {} | {} | {} |",
            ms(m[0]),
            ms(m[1]),
            m[1].as_secs_f64() / m[0].as_secs_f64(),
            ms(m[2]),
            ms(m[3]),
            ms(build)
        );
        std::fs::remove_dir_all(&out_dir)?;
    }
    Ok(())
}
