//! Helpers: the payment-retry brief, scripted roles written into a temporary directory, and
//! copies of the bundled package to plant defects in.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use specgap_synth::pipeline::{Config, Limits, Roles, SynthError, Synthesized, synthesize};
use specgap_synth::role::{Role, ScriptedRole};

/// `examples/tasks/payment-retry`.
pub fn payment_retry() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/tasks/payment-retry")
}

/// The brief payment-retry answers: its five requirements by priority, one stated.
pub fn brief() -> Value {
    let requirement = |id: &str| json!({"id": id, "predicate": format!("{id} holds on the held-out workload"), "discovery": format!("records show {id}")});
    let mode = |requirement: &str, id: &str| json!({"requirement": requirement, "id": id, "incident": format!("{id} seen"), "detail": format!("{id} counted")});
    let requirements = ["charge-once", "retry-timeouts", "declines-final", "respect-busy-wait", "checkout-deadline"].map(requirement);
    json!({
        "terminal_outcome": "Every checkout ends with the order paid exactly once or clearly declined, within the request deadline.",
        "requirements": requirements,
        "persona": {
            "role": "Sam, the shop owner",
            "understanding": "Paylane is flaky; retrying fixes it.",
            "mistaken_hypothesis": "Retry every failed payment call three times."
        },
        "stated": ["retry-timeouts"],
        "withheld": ["charge-once", "declines-final", "respect-busy-wait", "checkout-deadline"],
        "failure_modes": [
            mode("charge-once", "charged-twice"),
            mode("retry-timeouts", "timeout-ended-checkout"),
            mode("declines-final", "decline-retried"),
            mode("respect-busy-wait", "busy-retried-early"),
            mode("checkout-deadline", "deadline-exceeded")
        ],
        "leak_risks": [{"risk": "a docstring says to reuse the idempotency key", "countermeasure": "the gateway documents the parameter, never when to use it"}]
    })
}

/// A Builder step that writes `package` into the working directory as `payment-retry/`.
pub fn build_step(package: &Path, summary: &str) -> Value {
    let parent = package.parent().unwrap();
    json!({"write_from": parent, "reply": {"package": package.file_name().unwrap().to_str().unwrap(), "summary": summary}})
}

/// An Auditor `pass` with evidence for each withheld requirement.
pub fn audit_pass() -> Value {
    let evidence = ["charge-once", "declines-final", "respect-busy-wait", "checkout-deadline"]
        .map(|id| json!({"requirement": id, "source": "workspace/records", "quote": format!("a record showing {id}")}));
    json!({"reply": {"verdict": "pass", "evidence": evidence}})
}

/// An Auditor `fix`.
pub fn audit_fix(fixes: &[&str]) -> Value {
    json!({"reply": {"verdict": "fix", "fixes": fixes, "evidence": []}})
}

/// A Calibrator `ready` with one classified rollout.
pub fn calibrate_ready() -> Value {
    json!({"reply": {"verdict": "ready", "rollouts": [{"rollout": "partial-1", "condition": "partial", "class": "legitimate-inference", "turns": [4, 7], "note": "read the settlements before editing"}]}})
}

/// Four scripted roles and an output directory in one temporary directory.
pub struct Scripts {
    /// Holds everything.
    pub tmp: tempfile::TempDir,
}

impl Scripts {
    /// A fresh temporary directory.
    pub fn new() -> Scripts {
        Scripts { tmp: tempfile::tempdir().unwrap() }
    }

    /// Writes the script of `role` with these steps and returns the role.
    pub fn role(&self, role: &str, steps: Vec<Value>) -> Box<ScriptedRole> {
        let path = self.tmp.path().join(format!("{role}.json"));
        fs_err::write(&path, json!({"format": 1, "steps": steps}).to_string()).unwrap();
        Box::new(ScriptedRole::load(&path).unwrap())
    }

    /// `<tmp>/out`.
    pub fn out(&self) -> PathBuf {
        self.tmp.path().join("out")
    }

    /// Runs the pipeline with these role scripts.
    pub fn run(&self, steps: [Vec<Value>; 4], limits: Limits) -> Result<Synthesized, SynthError> {
        self.run_with(steps, limits, false)
    }

    /// [`Scripts::run`], resuming the synthesis in `<tmp>/out` when `resume`.
    pub fn run_with(&self, steps: [Vec<Value>; 4], limits: Limits, resume: bool) -> Result<Synthesized, SynthError> {
        self.run_all(steps, None, limits, resume)
    }

    /// [`Scripts::run_with`] with a scripted sufficiency implementer when `implementer` is some.
    pub fn run_all(
        &self,
        steps: [Vec<Value>; 4],
        implementer: Option<Vec<Value>>,
        limits: Limits,
        resume: bool,
    ) -> Result<Synthesized, SynthError> {
        let [planner, builder, auditor, calibrator] = steps;
        let mut roles = Roles {
            planner: self.role("planner", planner),
            builder: self.role("builder", builder),
            auditor: self.role("auditor", auditor),
            calibrator: self.role("calibrator", calibrator),
            implementer: implementer.map(|steps| self.role("implementer", steps) as Box<dyn specgap_synth::role::Role>),
            reference: None,
        };
        let config = Config { source: payment_retry(), out: self.out(), limits, prompts: Default::default(), resume };
        let judge = specgap_task::SandboxJudge::new(true).unwrap();
        synthesize(&config, &mut roles, &judge)
    }

    /// Runs the pipeline with `planner` and `auditor` (e.g. `cli:` roles) beside a scripted
    /// Builder that hands over `good` and a Calibrator that says ready.
    pub fn run_planner_and_auditor(&self, planner: Box<dyn Role>, auditor: Box<dyn Role>, good: &Path) -> Result<Synthesized, SynthError> {
        let mut roles = Roles {
            planner,
            builder: self.role("builder", vec![build_step(good, "built payment-retry")]),
            auditor,
            calibrator: self.role("calibrator", vec![calibrate_ready()]),
            implementer: None,
            reference: None,
        };
        let config =
            Config { source: payment_retry(), out: self.out(), limits: Limits::default(), prompts: Default::default(), resume: false };
        let judge = specgap_task::SandboxJudge::new(true).unwrap();
        synthesize(&config, &mut roles, &judge)
    }

    /// The journal written to `<tmp>/out/journal.json`.
    pub fn journal(&self) -> Value {
        serde_json::from_str(&fs_err::read_to_string(self.out().join("journal.json")).unwrap()).unwrap()
    }
}

/// `(stage, design, iteration, attempt, status)` of every journal entry.
pub fn steps(journal: &Value) -> Vec<(String, u64, u64, u64, String)> {
    journal["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["stage"].as_str().unwrap().to_owned(),
                e["design"].as_u64().unwrap(),
                e["iteration"].as_u64().unwrap(),
                e["attempt"].as_u64().unwrap(),
                e["status"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

/// Shorthand for one expected journal step.
pub fn step(stage: &str, design: u64, iteration: u64, attempt: u64, status: &str) -> (String, u64, u64, u64, String) {
    (stage.to_owned(), design, iteration, attempt, status.to_owned())
}

/// The journal steps of one design accepted at its first iteration, the Planner answering at
/// its `planner_attempt`-th attempt (earlier attempts are not included).
pub fn accepted_at_first_iteration(planner_attempt: u64) -> Vec<(String, u64, u64, u64, String)> {
    vec![
        step("planner", 1, 0, planner_attempt, "accepted"),
        step("builder", 1, 1, 1, "accepted"),
        step("acceptance", 1, 1, 1, "passed"),
        step("auditor", 1, 1, 1, "accepted"),
        step("calibrator", 1, 1, 1, "accepted"),
    ]
}

/// A shell command writing `value` to a role's hand-off file when `guard` holds (so a role
/// that sees the wrong mounts writes nothing, and the synthesis fails).
pub fn write_handoff(guard: &str, value: &Value) -> String {
    format!("{guard} && cat > /handoff/handoff.json <<'SPECGAP_EOF'\n{value}\nSPECGAP_EOF")
}

/// A journaled usage without its `latency_ms` (which is measured, not scripted).
pub fn without_latency(mut usage: Value) -> Value {
    usage.as_object_mut().unwrap().remove("latency_ms");
    usage
}

/// A copy of payment-retry at `<dir>/payment-retry`, to plant a defect in.
pub fn package_copy(dir: &Path) -> PathBuf {
    fs_err::create_dir_all(dir).unwrap();
    let root = dir.join("payment-retry");
    let status = std::process::Command::new("cp").arg("-r").arg(payment_retry()).arg(&root).status().unwrap();
    assert!(status.success());
    root
}

/// Replaces a file of a package copy with another file of the same copy.
pub fn copy_within(root: &Path, from: &str, to: &str) {
    fs_err::copy(root.join(from), root.join(to)).unwrap();
}
