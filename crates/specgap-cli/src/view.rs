//! `specgap view RUN...`: the browser viewer of `specgap-view` (runs, and syntheses), live on 127.0.0.1, or
//! `--static DIR` to write the same pages as files. This module parses arguments and prints
//! the URL; the server, the pages and the static writer live in `specgap-view`.

use std::net::IpAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;

const AFTER_HELP: &str = "\
The viewer reads the run stores and never writes to them; it follows a run in progress. It
listens on 127.0.0.1 and prints a URL with a random token: requests without it, or whose Host
header names another site, are refused. Private evaluations, requirement text and workspace
diffs are shown fenced as private.

A directory holding journal.json is a synthesis (specgap synthesize --out DIR): its page lists
the journal's entries with their tokens and cost, the limits, usage per role, the outcome and
each hand-off, and its calibration rollouts' run stores are shown as runs.

--static DIR writes the pages as files to publish; without --include-private it leaves out
private evaluations, requirement and clarification-target text, diffs, coverage judgements,
model panels' ballots and extraction verdicts, evaluation-error details and event kinds this
build does not know.

Examples:
  specgap view runs/latest
  specgap view runs/demo runs/other --port 8765
  specgap view synth-demo/
  specgap view runs/demo --static site/ && python3 -m http.server -d site 8000 --bind 127.0.0.1";

/// Arguments of `specgap view`.
#[derive(Debug, clap::Args)]
#[command(after_help = AFTER_HELP)]
pub struct Args {
    /// Run directories (or synthesis output directories) to view.
    #[arg(value_name = "RUN", required = true, num_args = 1..)]
    pub runs: Vec<PathBuf>,
    /// Port to listen on (default: one the system chooses).
    #[arg(long, default_value_t = 0)]
    pub port: u16,
    /// Address to listen on. Anything but loopback exposes the runs to the network, protected
    /// only by the token over plain HTTP.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1")]
    pub bind: IpAddr,
    /// Write a static site into DIR instead of serving.
    #[arg(long = "static", value_name = "DIR")]
    pub static_dir: Option<PathBuf>,
    /// With --static: include private evaluations, requirement text and diffs.
    #[arg(long, requires = "static_dir")]
    pub include_private: bool,
}

/// Runs `specgap view`.
pub fn exec(args: Args) -> anyhow::Result<ExitCode> {
    if let Some(dir) = &args.static_dir {
        let options = specgap_view::StaticOptions { include_private: args.include_private };
        let summary = specgap_view::write_static(&args.runs, dir, options)
            .with_context(|| format!("writing the static site into {}", dir.display()))?;
        println!(
            "wrote {} files ({} episodes{}) into {}; open {} through any static web server",
            summary.files,
            summary.episodes,
            if args.include_private { ", private parts included" } else { ", nothing private" },
            dir.display(),
            summary.index.display()
        );
        return Ok(ExitCode::SUCCESS);
    }
    if !args.bind.is_loopback() {
        eprintln!("warning: listening on {} exposes these runs to the network over plain HTTP, protected only by the token", args.bind);
    }
    let mut config = specgap_view::ViewerConfig::new(args.runs.clone());
    config.ip = args.bind;
    config.port = args.port;
    let handle = specgap_view::serve(config).context("starting the viewer")?;
    println!("specgap view: {}", handle.url());
    match handle.served() {
        (runs, 0) => println!("serving {runs} run(s) read-only; press Ctrl-C to stop"),
        (runs, syntheses) => println!("serving {syntheses} synthesis(es) and {runs} run(s) read-only; press Ctrl-C to stop"),
    }
    handle.wait();
    Ok(ExitCode::SUCCESS)
}
