//! `cli:` agents in image environments (issue 25 item 3): the real mini-swe-agent (its
//! virtual environment and the host's pyenv Python, read-only from the harness's
//! installation) completes an episode of a task whose environment is a rootfs tarball with no
//! libc and no loader at all (Debian's busybox-static and its applets). It runs through the
//! host's own dynamic loader at `/run/specgap/host`; its commands run with the image's shell.
//! The gateway is its only network, the key is nowhere in the sandbox; the image is writable
//! only through the episode's copy-on-write machine, the harness's `/run/specgap` not at all. A CLI whose shell tool
//! needs `bash` is refused on that image before anything starts, naming the adapter and the
//! image. Claude Code, Codex, opencode, gemini-cli and OpenHands run in the same image with a
//! static bash added. Skipped with a note when busybox-static, bash-static or an installation is missing, unless
//! `SPECGAP_REQUIRE_EXTERNAL=1`.

use std::path::{Path, PathBuf};

use serde_json::json;
use specgap_engine::condition::BudgetFlags;
use specgap_gateway::mock::MockUpstream;
use specgap_gateway::mock::replies::{self, Call, Tokens};
use specgap_protocol::event::EventKind;
use specgap_protocol::run::EndReason;

use specgap_test_support::image::{BusyboxImage, ImageTask, REWARD_FOR_42, have_busybox, have_busybox_and_static_bash};

use crate::cli_support::*;

/// busybox's applets the image gets (all links to the one static program).
const APPLETS: &[&str] =
    &["sh", "cat", "echo", "ls", "pwd", "readlink", "grep", "tr", "wc", "touch", "test", "tail", "cut", "env", "mkdir", "id"];

/// The tool results of `run`, after asserting it was accepted with Score 1.
fn accepted_results(run: &CliRun) -> Vec<String> {
    let results: Vec<String> = run
        .events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ToolResult { output, .. } => Some(output.clone()),
            _ => None,
        })
        .collect();
    let exits: Vec<String> =
        run.events.iter().filter(|e| matches!(e.kind, EventKind::AgentExit { .. })).map(|e| format!("{:?}", e.kind)).collect();
    assert_eq!(run.detail.episode.end_reason, Some(EndReason::Accepted), "{results:?} {exits:?} {:?}", run.detail.episode.error);
    assert_eq!(run.detail.submissions.iter().map(|s| s.score).collect::<Vec<_>>(), [Some(1.0)]);
    results
}

/// No network attempt was recorded and the key is nowhere in the store.
fn assert_no_network_and_no_key(run: &CliRun) {
    assert_no_network_attempt(&run.events);
    let stored = run.everything_stored();
    assert!(!stored.windows(canary_key().len()).any(|w| w == canary_key().as_bytes()), "the key is nowhere in the store");
}

/// A reward-scored format-2 package at `root` whose environment is a rootfs tarball of
/// busybox-static (no `/lib`, no `/usr`, no loader), workdir `/app`, tests at `/tests`.
fn busybox_package(root: &Path) -> specgap_task::TaskPackage {
    busybox_package_with(root, false)
}

/// [`busybox_package`] with a static bash (Debian's `bash-static`) as `/bin/bash` when
/// `static_bash`.
fn busybox_package_with(root: &Path, static_bash: bool) -> specgap_task::TaskPackage {
    let mut image = BusyboxImage::new(APPLETS)
        .dirs(&["home", "run", "root", "tmp"])
        .file("etc/image-release", "busybox-static test image\n")
        .file("etc/passwd", "root:x:0:0:root:/root:/bin/sh\n");
    if static_bash {
        image = image.with_static_bash();
    }
    let task = ImageTask {
        name: "fixtures/busybox-answer",
        description: "Write the answer",
        instruction: "Put the answer, 42, in answer.txt.\n",
        test_sh: REWARD_FOR_42,
    };
    task.write(root, &image);
    specgap_task::load(root).unwrap()
}

/// mini's answer running `command` with its `bash` tool.
fn mini_bash(n: u64, command: &str) -> specgap_gateway::mock::MockReply {
    let call = [Call::new(&format!("call-{n}"), "bash", json!({ "command": command }))];
    replies::openai_chat(MODEL, &format!("THOUGHT: step {n}."), &call, Tokens { input: 1000 + n, output: 20 + n, ..Tokens::default() })
}

/// A mini-swe-agent configuration against `mock`.
fn mini_config(mock: &MockUpstream) -> specgap_agents::cli::CliConfig {
    let mut config = specgap_agents::cli::CliConfig::new("mini-swe-agent", MODEL);
    config.version = Some(specgap_agents::cli::mini_swe_agent::DEFAULT_VERSION.into());
    config.endpoint.base_url = format!("{}/v1", mock.url());
    config.endpoint.api_key_env = KEY_ENV.into();
    config.endpoint.retry_base_ms = 1;
    config.stop_grace_ms = 500;
    config
}

/// What the agent's first command shows about where it runs.
const PROBE: &str = "echo 42 > answer.txt; pwd; cat /etc/image-release; ls /usr /lib /lib64 2>&1; ls /run/specgap/host; \
     readlink /proc/$PPID/exe; (cat /proc/[0-9]*/environ /proc/[0-9]*/cmdline; env) 2>/dev/null | tr '\\0' '\\n' | grep -c 'sk-canar[y]-'; \
     touch /etc/x /bin/x /run/specgap/x 2>&1; tail -n +3 /proc/net/dev | cut -d: -f1; cat /etc/resolv.conf";

#[test]
fn mini_swe_agent_completes_an_episode_in_a_busybox_image_through_the_host_loader() {
    if !have_busybox() {
        return;
    }
    let Some(_) = installed("mini-swe-agent") else { return };
    let dir = tempfile::tempdir().unwrap();
    let package = busybox_package(&dir.path().join("pkg"));
    let mock = MockUpstream::start([mini_bash(1, PROBE), mini_bash(2, "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT")]).unwrap();
    let config = mini_config(&mock);
    let run = run_cli(package, "blind", "clean", "cli:mini-swe-agent", &config, &mock, BudgetFlags::default());
    let results: Vec<String> = run
        .events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ToolResult { output, .. } => Some(output.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(
        results.first().map(String::as_str),
        Some(
            "exit status 0\n--- stdout ---\n/app\nbusybox-static test image\n\
             ls: /usr: No such file or directory\nls: /lib: No such file or directory\nls: /lib64: No such file or directory\n\
             bin\nlib\n/run/specgap/host/lib/ld-linux-x86-64.so.2\n0\n\
             touch: /run/specgap/x: Read-only file system\n    lo\n\
             nameserver 127.0.0.53\noptions timeout:2 attempts:1\n"
        ),
        "the image's shell, no libc of the image's, mini under the host's loader, no key, the image writable only through the episode's machine \
         (/etc, /bin) and the harness's /run/specgap read-only, loopback alone, names through the tripwire: {results:?} {:?}",
        run.events.iter().filter(|e| matches!(e.kind, EventKind::AgentExit { .. })).map(|e| format!("{:?}", e.kind)).collect::<Vec<_>>()
    );
    assert_eq!(run.detail.episode.end_reason, Some(EndReason::Accepted), "{results:?}");
    let scores: Vec<Option<f64>> = run.detail.submissions.iter().map(|s| s.score).collect();
    assert_eq!(scores, [Some(1.0)]);
    assert_eq!(run.requests.len(), 2, "mini ends at its marker");
    check_requests(&run.requests);
    assert_no_network_and_no_key(&run);
}

#[test]
fn a_cli_whose_shell_tool_needs_bash_is_refused_on_a_busybox_image_naming_the_adapter_and_the_image() {
    if !have_busybox() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let package = busybox_package(&dir.path().join("pkg"));
    let cache = specgap_env::EnvCache::new(dir.path().join("env-cache"));
    let image = package.image_environment().unwrap();
    let built = cache.build(&image.source.source, image.source.path.as_deref(), specgap_env::EngineChoice::None).unwrap();
    let rootfs: PathBuf = built.rootfs;
    for adapter in ["claude-code", "codex", "opencode", "gemini-cli", "openhands"] {
        assert_eq!(
            specgap_agents::cli::image::check(adapter, &rootfs),
            Err("its shell tool runs bash, which the image lacks (looked in /usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin)"
                .to_string()),
            "{adapter}"
        );
    }
    assert_eq!(specgap_agents::cli::image::check("mini-swe-agent", &rootfs), Ok(()));
    assert_eq!(specgap_agents::cli::image::check("command", &rootfs), Ok(()));
    // Without /bin/sh nothing can start there.
    std::fs::remove_file(rootfs.join("bin/sh")).unwrap();
    assert_eq!(
        specgap_agents::cli::image::check("mini-swe-agent", &rootfs),
        Err("the image has no /bin/sh, which starts the CLI and the harness tools".to_string())
    );
}

#[test]
fn claude_code_runs_its_bash_tool_in_a_busybox_image_with_a_static_bash_and_submits_through_mcp() {
    if !have_busybox_and_static_bash() {
        return;
    }
    let Some(_) = installed("claude-code") else { return };
    let dir = tempfile::tempdir().unwrap();
    let package = busybox_package_with(&dir.path().join("pkg"), true);
    let call = |n: u64, name: &str, input: serde_json::Value| {
        replies::anthropic_stream(
            MODEL,
            "",
            &[Call::new(&format!("toolu_{n}"), name, input)],
            Tokens { input: 100 + n, output: 10 + n, ..Tokens::default() },
        )
    };
    let mock = MockUpstream::start([
        call(1, "Bash", json!({"command": "echo 42 > answer.txt; cat /etc/image-release; ls /usr 2>&1", "description": "answer"})),
        call(2, "mcp__specgap__submit", json!({"summary": "the answer is written"})),
    ])
    .unwrap();
    refuse_unscripted_anthropic(&mock);
    let config = vendor_config("claude-code", specgap_agents::cli::claude_code::DEFAULT_VERSION, &mock);
    let run = run_cli(package, "blind", "clean", "cli:claude-code", &config, &mock, BudgetFlags::default());
    let results = accepted_results(&run);
    assert_eq!(
        results[0], "exit status 1\n--- stdout ---\nbusybox-static test image\nls: /usr: No such file or directory",
        "the image's own files, by the image's bash"
    );
    assert_no_network_and_no_key(&run);
}

#[test]
fn an_episode_of_a_cli_the_image_cannot_serve_ends_before_the_cli_starts_naming_the_adapter_and_the_image() {
    // A caller that plans on its own (no `specgap run` check first) gets the reason as the
    // episode's infrastructure error; the CLI never starts, so no model request is made.
    if !have_busybox() {
        return;
    }
    let Some(_) = installed("claude-code") else { return };
    let dir = tempfile::tempdir().unwrap();
    let package = busybox_package(&dir.path().join("pkg"));
    let mock = MockUpstream::start([]).unwrap();
    let mut config = specgap_agents::cli::CliConfig::new("claude-code", MODEL);
    config.version = Some(specgap_agents::cli::claude_code::DEFAULT_VERSION.into());
    config.endpoint.base_url = format!("{}/v1", mock.url());
    config.endpoint.api_key_env = KEY_ENV.into();
    let run = run_cli(package, "blind", "clean", "cli:claude-code", &config, &mock, BudgetFlags::default());
    let error = run.detail.episode.error.clone().unwrap_or_default();
    assert!(
        error.contains(&format!(
            "agent cli:claude-code@{} cannot run in this task's image (",
            specgap_agents::cli::claude_code::DEFAULT_VERSION
        )) && error.contains(
            "/rootfs): its shell tool runs bash, which the image lacks (looked in /usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin)"
        ),
        "{error}"
    );
    assert_eq!(run.requests.len(), 0, "the CLI never started");
}

#[test]
fn codex_runs_its_shell_tool_in_a_busybox_image_with_a_static_bash_and_submits_through_mcp() {
    // Codex's own program is a static (musl) binary: it runs as it is; its commands run in the
    // image's bash, its MCP server (the harness's bridge) through the host's loader.
    if !have_busybox_and_static_bash() {
        return;
    }
    let Some(_) = installed("codex") else { return };
    let dir = tempfile::tempdir().unwrap();
    let package = busybox_package_with(&dir.path().join("pkg"), true);
    let exec = |n: u64, cmd: &str| {
        replies::responses_stream(
            MODEL,
            "",
            &[Call::new(&format!("call_{n}"), "exec_command", json!({"cmd": cmd}))],
            Tokens { input: 100 + n, output: 10 + n, ..Tokens::default() },
        )
    };
    let mock = MockUpstream::start([
        exec(1, "echo 42 > answer.txt; cat /etc/image-release; ls /usr 2>&1"),
        crate::cli_vendors::namespaced_call(2, "submit", json!({"summary": "the answer is written"})),
    ])
    .unwrap();
    refuse_unscripted_openai(&mock);
    let config = vendor_config("codex", specgap_agents::cli::codex::DEFAULT_VERSION, &mock);
    let run = run_cli(package, "blind", "clean", "cli:codex", &config, &mock, BudgetFlags::default());
    let results = accepted_results(&run);
    assert_eq!(
        results[0], "exit status 1\n--- stdout ---\nbusybox-static test image\nls: /usr: No such file or directory\n",
        "the image's own files, by the image's bash"
    );
    assert_no_network_and_no_key(&run);
}

#[test]
fn opencode_runs_its_bash_tool_in_a_busybox_image_with_a_static_bash_and_submits_through_mcp() {
    // opencode's own program is a Bun executable linked against glibc: started through the
    // host's loader; its bash tool runs the image's bash.
    if !have_busybox_and_static_bash() {
        return;
    }
    let Some(_) = installed("opencode") else { return };
    let dir = tempfile::tempdir().unwrap();
    let package = busybox_package_with(&dir.path().join("pkg"), true);
    let mock = MockUpstream::start([]).unwrap();
    mock.set_responder(|request: &specgap_gateway::mock::ReceivedRequest| {
        let body: serde_json::Value = serde_json::from_slice(&request.body).unwrap_or_default();
        let tokens = Tokens { input: 100, output: 10, ..Tokens::default() };
        if body["tools"].as_array().is_none_or(|t| t.is_empty()) {
            return replies::openai_chat_stream(MODEL, "Answer", &[], tokens);
        }
        let step = body["messages"].as_array().map_or(0, |m| m.iter().filter(|m| m["role"] == "assistant").count());
        let call = |id: &str, tool: &str, arguments: serde_json::Value| {
            replies::openai_chat_stream(MODEL, "", &[Call::new(id, tool, arguments)], tokens)
        };
        match step {
            0 => call(
                "c-bash",
                "bash",
                json!({"command": "echo 42 > answer.txt; cat /etc/image-release; ls /usr 2>&1", "description": "answer"}),
            ),
            1 => call("c-submit", "specgap_submit", json!({"summary": "the answer is written"})),
            _ => replies::openai_chat_stream(MODEL, "Done.", &[], tokens),
        }
    });
    let config = vendor_config("opencode", specgap_agents::cli::opencode::DEFAULT_VERSION, &mock);
    let run = run_cli(package, "blind", "clean", "cli:opencode", &config, &mock, BudgetFlags::default());
    let results = accepted_results(&run);
    assert_eq!(
        results[0], "busybox-static test image\nls: /usr: No such file or directory\n",
        "the image's own files, by the image's bash"
    );
    assert_no_network_and_no_key(&run);
}

#[test]
fn gemini_cli_runs_its_shell_tool_in_a_busybox_image_with_a_static_bash_and_submits_through_mcp() {
    // The host's node (a host system program) is bound at /run/specgap/host/exe/node and
    // started by name through its wrapper; the bundle runs under it, its shell tool in the
    // image's bash.
    if !have_busybox_and_static_bash() {
        return;
    }
    let Some(_) = installed("gemini-cli") else { return };
    let dir = tempfile::tempdir().unwrap();
    let package = busybox_package_with(&dir.path().join("pkg"), true);
    let mock = MockUpstream::start([]).unwrap();
    mock.set_responder(|request: &specgap_gateway::mock::ReceivedRequest| {
        let body: serde_json::Value = serde_json::from_slice(&request.body).unwrap_or_default();
        let step = body["contents"].as_array().map_or(0, |c| c.iter().filter(|c| c["role"] == "model").count());
        let tokens = Tokens { input: 100, output: 10, ..Tokens::default() };
        let call = |tool: &str, arguments: serde_json::Value| replies::gemini_stream("", &[Call::new("", tool, arguments)], tokens);
        match step {
            0 => call("run_shell_command", json!({"command": "echo 42 > answer.txt; cat /etc/image-release; ls /usr 2>&1"})),
            1 => call("mcp_specgap_submit", json!({"summary": "the answer is written"})),
            _ => replies::gemini_stream("Done.", &[], tokens),
        }
    });
    let config = vendor_config("gemini-cli", specgap_agents::cli::gemini_cli::DEFAULT_VERSION, &mock);
    let run = run_cli(package, "blind", "clean", "cli:gemini-cli", &config, &mock, BudgetFlags::default());
    let results = accepted_results(&run);
    // The process group id that follows is the sandbox's to choose.
    assert!(
        results[0]
            .starts_with("<untrusted_context>\nOutput: busybox-static test image\nls: /usr: No such file or directory\nExit Code: 1\n"),
        "the image's own files, by the image's bash: {results:?}"
    );
    assert_no_network_and_no_key(&run);
}

#[test]
fn openhands_runs_its_terminal_in_a_busybox_image_with_a_static_bash_and_finishes() {
    // OpenHands' virtual environment (a pyenv Python 3.12) through the host's loader; its
    // terminal tool runs the image's bash; its `finish` is the agent-declared submit.
    if !have_busybox_and_static_bash() {
        return;
    }
    let Some(_) = installed("openhands") else { return };
    let dir = tempfile::tempdir().unwrap();
    let package = busybox_package_with(&dir.path().join("pkg"), true);
    let tokens = |n: u64| Tokens { input: 100 + n, output: 10 + n, ..Tokens::default() };
    let call = |n: u64, tool: &str, arguments: serde_json::Value| {
        replies::openai_chat(MODEL, "", &[Call::new(&format!("call_{n}"), tool, arguments)], tokens(n))
    };
    let mock = MockUpstream::start([
        call(
            1,
            "terminal",
            json!({"command": "echo 42 > answer.txt; cat /etc/image-release", "security_risk": "LOW", "summary": "answer"}),
        ),
        call(2, "finish", json!({"message": "The answer is written.", "summary": "done"})),
    ])
    .unwrap();
    refuse_unscripted_openai(&mock);
    let config = vendor_config("openhands", specgap_agents::cli::openhands::DEFAULT_VERSION, &mock);
    let run = run_cli(package, "blind", "clean", "cli:openhands", &config, &mock, BudgetFlags::default());
    let results = accepted_results(&run);
    assert_eq!(
        results[0], "exit status 0\n--- stdout ---\nbusybox-static test image\n",
        "the image's own file, by the image's bash: {results:?}"
    );
    assert_no_network_and_no_key(&run);
}
