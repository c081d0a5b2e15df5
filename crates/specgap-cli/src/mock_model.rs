//! `specgap mock-model SCRIPT`: a scripted model server (specgap_gateway::mock_model) so a
//! user or CI can dry-run any agent or adapter end to end without a model (docs/mock-model.md).

use std::io::Write as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::Context;
use specgap_gateway::mock_model::{Answer, MockModel, MockModelScript, OnRequest, ServedRequest};

const AFTER_HELP: &str = "\
SCRIPT is a TOML file (format 1, docs/mock-model.md): one [[turn]] per generation request, in
order, each with `text`, `[[turn.call]]` tool calls (name, arguments), `tokens`, `expect`ed
request text, or an error `status`. The server answers in the protocol each request uses
(OpenAI chat completions, Responses, Anthropic Messages, Gemini), streamed when asked; token
counts and model listings use no turn. The first line on stdout is the base URL to give the
agent (up to /v1). It runs until Ctrl-C, or with --exit-when-done until the last turn was
answered. Exit status 0 when every turn was used and no request went unanswered, 1 otherwise.

Example:
  specgap mock-model examples/mock-model/chat-payment-retry.toml --port 8123 &
  specgap run examples/tasks/payment-retry --agent chat:mock-model \\
      --base-url http://127.0.0.1:8123/v1 --condition full --out runs/dry";

/// Arguments of `specgap mock-model`.
#[derive(Debug, clap::Args)]
#[command(after_help = AFTER_HELP)]
pub struct Args {
    /// The script (TOML).
    pub script: PathBuf,
    /// Port on 127.0.0.1 (0: any free port, printed).
    #[arg(long, default_value_t = 0)]
    pub port: u16,
    /// Check the script and exit.
    #[arg(long)]
    pub check: bool,
    /// Exit once the last turn has been answered.
    #[arg(long)]
    pub exit_when_done: bool,
    /// Append one JSON line per request (what it was, how it was answered) to this file.
    #[arg(long, value_name = "FILE")]
    pub log: Option<PathBuf>,
}

/// Runs `specgap mock-model`.
pub fn exec(args: Args) -> anyhow::Result<ExitCode> {
    let script = read_script(&args.script)?;
    if args.check {
        println!("{}: format {}, {} turns, model {:?}", args.script.display(), script.format, script.turns.len(), script.model);
        return Ok(ExitCode::SUCCESS);
    }
    let log = args.log.as_deref().map(open_log).transpose()?;
    let on_request: OnRequest = Box::new(move |served| report_request(served, log.as_ref()));
    let addr = SocketAddr::from(([127, 0, 0, 1], args.port));
    let server = MockModel::start(script, addr, Some(on_request)).with_context(|| format!("cannot serve the mock model on {addr}"))?;
    println!("{}/v1", server.url());
    std::io::stdout().flush().context("cannot write the base URL to stdout")?;
    let stop = Arc::new(AtomicBool::new(false));
    crate::run::install_stop_handler(&stop, "mock-model: stopping")?;
    wait(&server, &stop, args.exit_when_done);
    Ok(summarize(&server))
}

fn read_script(path: &Path) -> anyhow::Result<MockModelScript> {
    let text = fs_err::read_to_string(path)?;
    let script: MockModelScript = toml::from_str(&text).with_context(|| format!("{}: not a mock-model script", path.display()))?;
    script.validate().with_context(|| format!("{}: not a usable mock-model script", path.display()))?;
    Ok(script)
}

fn open_log(path: &Path) -> anyhow::Result<std::sync::Mutex<fs_err::File>> {
    let file = fs_err::OpenOptions::new().create(true).append(true).open(path)?;
    Ok(std::sync::Mutex::new(file))
}

/// One stderr line per request, and its JSON line in the log.
fn report_request(served: &ServedRequest, log: Option<&std::sync::Mutex<fs_err::File>>) {
    let how = match &served.answer {
        Answer::Turn { turn } => format!("turn {turn}"),
        Answer::Unmet { turn, missing } => format!("400: turn {turn} expected {missing:?}"),
        Answer::Exhausted => "no turn left".to_string(),
        Answer::Local => "answered locally".to_string(),
    };
    eprintln!("mock-model: request {} {} {} -> {how}", served.number, served.method, served.target);
    if let Some(log) = log
        && let Ok(line) = serde_json::to_string(served)
    {
        let mut file = log.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Err(e) = writeln!(file, "{line}") {
            eprintln!("mock-model: cannot write the request log: {e}");
        }
    }
}

fn wait(server: &MockModel, stop: &AtomicBool, exit_when_done: bool) {
    while !stop.load(Ordering::SeqCst) {
        if exit_when_done && server.turns_used() == server.turn_count() {
            // The last turn's reply is written after the request was counted.
            let answered = server.served().len();
            server.wait_for_replies(answered, Duration::from_secs(5));
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn summarize(server: &MockModel) -> ExitCode {
    let served = server.served();
    let failed = served.iter().filter(|s| matches!(s.answer, Answer::Unmet { .. } | Answer::Exhausted)).count();
    let (used, total) = (server.turns_used(), server.turn_count());
    eprintln!("mock-model: {used} of {total} turns used, {} requests, {failed} not answered with a turn", served.len());
    if used == total && failed == 0 { ExitCode::SUCCESS } else { ExitCode::from(1) }
}
