//! The HTML report: self-contained (no script, no external resource), with the three charts,
//! and — when Chromium is installed at /usr/bin/chromium — rendered headless without console
//! errors into a screenshot that is not blank.

use std::path::Path;
use std::process::Command;

use specgap_protocol::result::ScoringKind;
use specgap_protocol::run::EndReason;
use specgap_report::Dim;
use specgap_report::render::{render_html, render_json, render_markdown};

use crate::fixture::{Ep, Sub, TaskSpec, delivery, reward, run_with, tests};
use crate::report_of;

const CHROMIUM: &str = "/usr/bin/chromium";

fn scored(task: &str, agent: &str, condition: &str, values: &[f64]) -> Ep {
    let mut ep = Ep::new(task, agent, condition).kind(ScoringKind::Reward);
    for v in values {
        ep = ep.sub(Sub::scored(*v, *v >= 1.0, reward(*v)));
    }
    ep.end(EndReason::SubmissionBudget)
}

fn full_fixture() -> crate::fixture::Run {
    let mut state = TaskSpec::new("org/res");
    state.states = vec![("s", "deepseek", "diff --git a/x b/x\n".into(), Some(vec![]))];
    let mut d = TaskSpec::new("org/del");
    d.delivery = true;
    d.targets = vec![("unit", "Which unit the report uses", vec!["Which unit should I use?"])];
    let run = run_with(31, &[state, d], &[]);
    for (agent, p, l, f) in [("luna", [0.2, 0.6, 0.8, 1.0], [0.0; 4], 1.0), ("sol", [0.4; 4], [0.2; 4], 0.9)] {
        run.episode(&scored("org/t", agent, "partial", &p));
        run.episode(&scored("org/t", agent, "literal", &l));
        run.episode(&scored("org/t", agent, "full", &[f]));
        for (start, ok) in [("clean", true), ("residual:s", false)] {
            let outcome = if ok { "pass" } else { "fail" };
            run.episode(&Ep::new("org/res", agent, "partial").kind(ScoringKind::Test).start(start).sub(Sub::scored(
                f64::from(u8::from(ok)),
                ok,
                tests(&[("t", outcome)]),
            )));
        }
    }
    for (agent, condition, score, question) in [
        ("luna", "interact", 0.9, "Which unit should I use?"),
        ("sol", "interact", 0.4, "Is it <ok> & fine?"),
        ("kimi", "interact", 0.2, "Anything else?"),
    ] {
        let mut ep =
            Ep::new("org/del", agent, condition).kind(ScoringKind::Delivery).sub(Sub::scored(score, false, delivery(true, score, None, 0)));
        ep.questions = vec![(1, question.to_string())];
        run.episode(&ep);
    }
    run
}

#[test]
fn html_is_self_contained_with_three_charts() {
    let run = full_fixture();
    let report = report_of(&[&run], &[Dim::Agent, Dim::Condition, Dim::Start]);
    let html = render_html(&report, "Run <synthetic>");
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(html.contains("<title>Run &lt;synthetic&gt;</title>"));
    assert_eq!(html.matches("<svg ").count(), 3, "Figure 4 of 000, Figure 1 of 001, Recall–Quality of 002");
    assert!(html.contains("Score across submissions"));
    assert!(html.contains("Clean against Residual"));
    assert!(html.contains("Recall against Quality"));
    assert!(!html.contains("<script"), "no script");
    // Markdown code spans in section texts become <code> elements, never literal backticks.
    assert!(!html.contains('`'), "literal backtick in the page");
    // The only URL is the SVG namespace, which is never fetched.
    assert_eq!(html.matches("http").count(), html.matches("http://www.w3.org/2000/svg").count());
    assert!(!html.contains(" src="));
    // Question text never reaches the page unescaped (and questions are not shown at all).
    assert!(!html.contains("<ok>"));
    let md = render_markdown(&report, "run");
    assert!(md.contains("## Residual starts (seed 001)"));
    let json: serde_json::Value = serde_json::from_str(&render_json(&report).unwrap()).unwrap();
    assert_eq!((json["schema"].as_str(), json["version"].as_u64()), (Some("specgap-report"), Some(3)));
    assert_eq!(json["recall_quality"]["groups"].as_u64(), Some(3));

    if !Path::new(CHROMIUM).exists() {
        // CI sets SPECGAP_REQUIRE_EXTERNAL=1: there a missing browser is a failure, not a skip.
        assert!(
            std::env::var_os("SPECGAP_REQUIRE_EXTERNAL").is_none_or(|v| v != "1"),
            "{CHROMIUM} is required (SPECGAP_REQUIRE_EXTERNAL=1) but not installed: apt-get install -y chromium"
        );
        println!("skipped: {CHROMIUM} not installed (apt-get install -y chromium) — headless rendering not checked");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("report.html");
    let shot = dir.path().join("shot.png");
    std::fs::write(&page, &html).unwrap();
    let output = Command::new(CHROMIUM)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--no-first-run",
            "--enable-logging=stderr",
            "--v=0",
            "--window-size=1000,1400",
        ])
        .arg(format!("--user-data-dir={}", dir.path().join("profile").display()))
        .arg(format!("--screenshot={}", shot.display()))
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "chromium failed: {stderr}");
    let console: Vec<&str> = stderr.lines().filter(|l| l.contains("CONSOLE") || l.contains("Uncaught")).collect();
    assert!(console.is_empty(), "console messages: {console:?}");
    let png = std::fs::read(&shot).unwrap();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    let share = non_background_share(&shot);
    assert!(share > 0.01, "screenshot looks blank: {share} of pixels differ from the background");
}

/// Share of pixels that differ from the top-left pixel, decoding the PNG with Python's zlib
/// (the workspace has no PNG decoder; python3 is on every machine this project runs on).
fn non_background_share(png: &Path) -> f64 {
    const SCRIPT: &str = r#"
import struct, sys, zlib
data = open(sys.argv[1], 'rb').read()
pos, idat, width, height, channels = 8, b'', 0, 0, 4
while pos < len(data):
    length, kind = struct.unpack('>I4s', data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + length]
    if kind == b'IHDR':
        width, height, depth, color = struct.unpack('>IIBB', body[:10])
        channels = {2: 3, 6: 4, 0: 1, 4: 2}[color]
    elif kind == b'IDAT':
        idat += body
    pos += 12 + length
raw = zlib.decompress(idat)
stride = width * channels
rows, prev = [], bytearray(stride)
for y in range(height):
    f = raw[y * (stride + 1)]
    line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
    for i in range(stride):
        a = line[i - channels] if i >= channels else 0
        b = prev[i]
        c = prev[i - channels] if i >= channels else 0
        if f == 1: line[i] = (line[i] + a) & 255
        elif f == 2: line[i] = (line[i] + b) & 255
        elif f == 3: line[i] = (line[i] + (a + b) // 2) & 255
        elif f == 4:
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    rows.append(bytes(line))
    prev = line
background = rows[0][:channels]
differ = sum(1 for row in rows for x in range(width) if row[x * channels:(x + 1) * channels] != background)
print(differ / (width * height))
"#;
    let output = Command::new("python3").arg("-c").arg(SCRIPT).arg(png).output().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8_lossy(&output.stdout).trim().parse().unwrap()
}
