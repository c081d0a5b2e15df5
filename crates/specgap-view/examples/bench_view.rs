//! Benchmark server of the viewer (BENCHMARKS.md, "Viewer"): serves an episode of 10,000
//! events with 64 KiB tool outputs and, when given, the report benchmark's 100,000-episode
//! store, for `bench/view/run.sh` to time the first paint of their pages in Chromium.
//!
//! ```text
//! cargo run --release -p specgap-view --example bench_view -- /tmp/specgap-view-bench [/tmp/specgap-bench/run-100000]
//! ```
//!
//! The first call writes `<root>/episode-10k` (one episode: the start, then 5,000 turns each
//! with one `run_experiment` call and its 64 KiB result, then the end) with the store's writer
//! API. Every call then prints `url <URL>` and `episode <id>` and serves until stdin closes.

use std::io::BufRead;
use std::path::{Path, PathBuf};

use serde_json::json;
use specgap_protocol::event::{EventKind, ToolCall, ToolSpec, Usage};
use specgap_protocol::package::Family;
use specgap_protocol::result::ScoringKind;
use specgap_protocol::run::{EndReason, EpisodeKey, RunConfig};
use specgap_store::{EpisodeMeta, EpisodeSummary, Status, Store};

const TURNS: u32 = 5_000;
const OUTPUT_BYTES: usize = 64 << 10;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let root = PathBuf::from(args.next().unwrap_or_else(|| "/tmp/specgap-view-bench".into()));
    let big = args.next().map(PathBuf::from);
    let episode_run = root.join("episode-10k");
    if !episode_run.join("run.toml").exists() {
        let started = std::time::Instant::now();
        write_long_episode(&episode_run)?;
        println!("generated in {:.1} s", started.elapsed().as_secs_f64());
    }
    let id = Store::open_read_only(&episode_run)?.episodes()?.remove(0).id;
    let mut runs = vec![episode_run];
    runs.extend(big);
    let viewer = specgap_view::serve(specgap_view::ViewerConfig::new(runs))?;
    println!("url {}", viewer.url());
    println!("episode {id}");
    // Serve until whoever started us closes our stdin.
    for _ in std::io::stdin().lock().lines() {}
    viewer.stop();
    Ok(())
}

/// Text that compresses like a tool's output (words from a small vocabulary, numbers), from
/// a fixed linear congruential sequence.
fn output(turn: u32) -> String {
    const WORDS: [&str; 24] = [
        "checkout", "payment", "retry", "order", "gateway", "timeout", "captured", "declined", "ledger", "invoice", "status", "request",
        "response", "pending", "settled", "customer", "amount", "currency", "session", "worker", "queue", "batch", "trace", "error",
    ];
    let mut state = u64::from(turn).wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    let mut text = String::with_capacity(OUTPUT_BYTES + 80);
    let mut line = 0u64;
    while text.len() < OUTPUT_BYTES {
        line += 1;
        text.push_str(&format!("{turn:05}:{line:04} "));
        for _ in 0..9 {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let word = WORDS[(state >> 59) as usize % WORDS.len()];
            text.push_str(word);
            text.push_str(&format!("={} ", (state >> 40) % 10_000));
        }
        text.push('\n');
    }
    text.truncate(OUTPUT_BYTES);
    text
}

fn write_long_episode(dir: &Path) -> Result<(), Box<dyn std::error::Error>> {
    let config: RunConfig = toml::from_str(
        "specgap_version = \"0.2.0\"\nprotocol_version = 2\nseed = 1\nrepeats = 1\nretries = 0\nsandbox = true\nconditions = [\"partial\"]\nstarts = [\"clean\"]\n\n[[tasks]]\nname = \"bench/long\"\nhash = \"h\"\npath = \"/nonexistent\"\n\n[[agents]]\nspec = \"chat:bench-model\"\nhash = \"a\"\nconfig = {}\n\n[[users]]\nspec = \"relay\"\nhash = \"u\"\nconfig = {}\n",
    )?;
    let store = Store::create(dir, &config)?;
    let key = EpisodeKey {
        task: "bench/long".into(),
        task_hash: "h".into(),
        agent: "chat:bench-model".into(),
        agent_hash: "a".into(),
        user_hash: "u".into(),
        condition: "partial".into(),
        start: "clean".into(),
        repeat: 0,
        seed: 1,
    };
    let meta = EpisodeMeta { user: "relay".into(), family: Family::Swe, scoring_kind: ScoringKind::Requirement };
    let mut w = store.begin_episode(&key, &meta)?;
    let id = w.id().to_string();
    w.event(EventKind::EpisodeStart {
        episode: id,
        task: "bench/long".into(),
        condition: "partial".into(),
        start: "clean".into(),
        agent: "chat:bench-model".into(),
        system_prompt: "You are an engineer.".into(),
        opening_message: "Find out why checkouts fail.".into(),
        tools: vec![ToolSpec {
            name: "run_experiment".into(),
            description: "Run a command.".into(),
            parameters: json!({"type": "object", "properties": {"command": {"type": "string"}}}),
        }],
    })?;
    for turn in 1..=TURNS {
        let call = format!("call-{turn}");
        w.event(EventKind::AgentTurn {
            turn,
            text: Some(format!("Looking at batch {turn}.")),
            tool_calls: vec![ToolCall {
                id: call.clone(),
                tool: "run_experiment".into(),
                arguments: json!({"command": format!("python3 -m shop.replay batch-{turn}.json")}),
            }],
            usage: Some(Usage {
                input_tokens: 2_000 + u64::from(turn),
                output_tokens: 60,
                cached_tokens: 1_500,
                requests: 1,
                latency_ms: 700,
                ..Usage::default()
            }),
        })?;
        w.event(EventKind::ToolResult { call_id: call, tool: "run_experiment".into(), output: output(turn), is_error: false })?;
    }
    w.event(EventKind::End { reason: "turn_budget".into(), detail: String::new() })?;
    w.finish(EpisodeSummary {
        status: Status::Finished,
        end_reason: Some(EndReason::TurnBudget),
        turns: TURNS,
        tool_calls: TURNS,
        wall_ms: 3_600_000,
        error: None,
    })?;
    Ok(())
}
