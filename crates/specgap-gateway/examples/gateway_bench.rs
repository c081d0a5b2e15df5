//! Gateway overhead per model request (BENCHMARKS.md, "Model gateway").
//!
//! The same chat-completions request is sent by one keep-alive client straight to the mock
//! upstream and through the gateway (journal file on, the default allow-list and checks),
//! streamed and not, interleaved in rounds; the overhead is the difference of the medians.
//! Run with `bench/gateway/run.sh` (release build).
//!
//! Options: `--requests N` per variant and round (default 200), `--rounds R` (default 5),
//! `--history-kb K` size of the conversation each request re-sends (default 10; repeated
//! with 100), `--starts S` gateway starts timed (default 20).

use std::net::TcpListener;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use specgap_gateway::mock::MockUpstream;
use specgap_gateway::mock::replies::{self, Call, Tokens};
use specgap_gateway::{AdmitAll, GatewayConfig, Protocol, Secret, Upstream, serve_tcp};

const MODEL: &str = "bench-model";
const KEY: &str = "sk-bench-0123456789abcdefghijkl";

fn arg(name: &str, default: usize) -> usize {
    let args: Vec<String> = std::env::args().collect();
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    if n % 2 == 1 { values[n / 2] } else { (values[n / 2 - 1] + values[n / 2]) / 2.0 }
}

/// A chat request whose history is about `kb` kilobytes (messages of ~500 bytes).
fn request_body(kb: usize, stream: bool) -> Vec<u8> {
    let mut messages = vec![json!({"role": "system", "content": "You are a careful software engineer."})];
    let filler = "The test output shows a failing assertion in the parser module. ".repeat(7);
    for i in 0..(kb * 2).max(1) {
        let role = if i % 2 == 0 { "user" } else { "assistant" };
        messages.push(json!({"role": role, "content": format!("turn {i}: {filler}")}));
    }
    let mut body = json!({
        "model": MODEL,
        "messages": messages,
        "tools": [{"type": "function", "function": {"name": "bash", "description": "run a shell command",
                   "parameters": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}}}],
        "stream": stream,
    });
    if stream {
        body["stream_options"] = json!({"include_usage": true});
    }
    body.to_string().into_bytes()
}

fn time_one(client: &reqwest::blocking::Client, url: &str, token: Option<&str>, body: &[u8]) -> f64 {
    let mut request = client.post(url).header("content-type", "application/json").body(body.to_vec());
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let started = Instant::now();
    let response = request.send().expect("request");
    assert_eq!(response.status(), 200, "benchmark request failed");
    let bytes = response.bytes().expect("body");
    let micros = started.elapsed().as_secs_f64() * 1e6;
    assert!(!bytes.is_empty());
    micros
}

fn main() {
    let per_round = arg("--requests", 200);
    let rounds = arg("--rounds", 5);
    let starts = arg("--starts", 20);
    let history_kb = arg("--history-kb", 10);
    let tokens = Tokens { input: 2000, output: 50, cached: 1500, cache_creation: 0, reasoning: 0 };
    let calls = [Call::new("call_1", "bash", json!({"command": "cargo test"}))];
    let dir = std::env::temp_dir().join(format!("specgap-gateway-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let client = reqwest::blocking::Client::builder().no_proxy().build().expect("client");

    println!(
        "| request | variant | direct to mock (µs) | through the gateway (µs) | difference of medians (µs) | median of pair differences (µs) (per round) |"
    );
    println!("| ---: | --- | ---: | ---: | ---: | ---: |");
    for kb in [history_kb, history_kb * 10] {
        for stream in [false, true] {
            let reply = if stream {
                replies::openai_chat_stream(MODEL, "I will run the tests now.", &calls, tokens)
            } else {
                replies::openai_chat(MODEL, "I will run the tests now.", &calls, tokens)
            };
            let mock = MockUpstream::start([]).expect("mock");
            mock.set_fallback(reply);
            let token = Secret::random_token().expect("token");
            let upstream = Upstream::new(Protocol::OpenaiChat, format!("{}/v1", mock.url()), Some(Secret::new(KEY)), vec![MODEL.into()]);
            let mut config = GatewayConfig::new(vec![upstream], token.clone());
            config.journal_path = Some(dir.join(format!("journal-{kb}-{stream}.jsonl")));
            let gateway = serve_tcp(TcpListener::bind("127.0.0.1:0").expect("bind"), config, Arc::new(AdmitAll)).expect("gateway");
            let direct_url = format!("{}/v1/chat/completions", mock.url());
            let gateway_url = format!("{}/chat/completions", gateway.base_url(Protocol::OpenaiChat).expect("url"));
            let body = request_body(kb, stream);
            // Warm both connections.
            for _ in 0..20 {
                time_one(&client, &direct_url, None, &body);
                time_one(&client, &gateway_url, Some(token.expose()), &body);
            }
            // Direct and gateway requests alternate, so a load change on the machine touches
            // both sides alike; the per-pair difference is reported beside the medians.
            let (mut direct, mut through, mut pairs) = (Vec::new(), Vec::new(), Vec::new());
            let mut round_medians = Vec::new();
            for _ in 0..rounds {
                let mut round = Vec::with_capacity(per_round);
                for _ in 0..per_round {
                    let d = time_one(&client, &direct_url, None, &body);
                    let g = time_one(&client, &gateway_url, Some(token.expose()), &body);
                    direct.push(d);
                    through.push(g);
                    round.push(g - d);
                }
                round_medians.push(median(round.clone()));
                pairs.extend(round);
            }
            let (d, g) = (median(direct), median(through));
            let rounds_text: Vec<String> = round_medians.iter().map(|m| format!("{m:.0}")).collect();
            println!(
                "| {} kB | {} | {d:.0} | {g:.0} | {:.0} | **{:.0}** ({}) |",
                body.len() / 1000,
                if stream { "streamed" } else { "not streamed" },
                g - d,
                median(pairs),
                rounds_text.join(" / ")
            );
            let report = gateway.shutdown().expect("shutdown");
            assert_eq!(report.exchanges as usize, 20 + rounds * per_round);
            assert_eq!(report.main_requests, report.exchanges);
        }
    }

    let mock = MockUpstream::start([]).expect("mock");
    let mut start_times = Vec::new();
    for _ in 0..starts {
        let upstream = Upstream::new(Protocol::OpenaiChat, format!("{}/v1", mock.url()), None, vec![MODEL.into()]);
        let config = GatewayConfig::new(vec![upstream], Secret::random_token().expect("token"));
        let started = Instant::now();
        let gateway = serve_tcp(TcpListener::bind("127.0.0.1:0").expect("bind"), config, Arc::new(AdmitAll)).expect("gateway");
        let ready = started.elapsed();
        gateway.shutdown().expect("shutdown");
        start_times.push((ready.as_secs_f64() * 1e6, started.elapsed().as_secs_f64() * 1e6));
        if std::env::var("GATEWAY_BENCH_VERBOSE").is_ok() {
            eprintln!("start {:?}", ready);
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    println!();
    println!(
        "gateway start (serve_tcp until ready): median {:.0} µs; start + shutdown: median {:.0} µs ({starts} starts)",
        median(start_times.iter().map(|t| t.0).collect()),
        median(start_times.iter().map(|t| t.1).collect())
    );
    let _ = std::fs::remove_dir_all(&dir);
}
