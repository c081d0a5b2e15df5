//! Reading a Harbor task directory (Harbor 0.25.0's task format: `task.toml`,
//! `instruction.md`, `environment/`, `tests/test.sh`, `solution/solve.sh`, and for multi-step
//! tasks `[[steps]]` with `steps/<name>/{instruction.md,tests/,solution/,workdir/}`) and
//! deciding how it maps to a specgap package: a [`Plan`], or a [`Refusal`] with its reasons.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use fs_err as fs;
use specgap_protocol::package::MinReward;
use toml::{Table, Value};

use crate::dockerfile;
use crate::error::{HarborError, io, walk};

/// The Harbor version whose task model this importer follows, whose models the export is
/// validated with, and which the ATIF tests pin.
pub const HARBOR_VERSION: &str = "0.25.0";

/// Compose files Harbor reads from `environment/` (multi-container tasks).
const COMPOSE_FILES: [&str; 4] = ["docker-compose.yaml", "docker-compose.yml", "compose.yaml", "compose.yml"];

/// Words in a verifier script that mean it downloads at verification time (specgap's
/// sandbox has no network).
const DOWNLOADERS: [&str; 8] = ["curl ", "wget ", "pip install", "pip3 install", "uv pip", "uvx ", "apt-get ", "apt "];

/// A task specgap cannot run, with every reason found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The task directory.
    pub dir: PathBuf,
    /// Why, one sentence each.
    pub reasons: Vec<String>,
}

/// Where the imported task runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EnvironmentPlan {
    /// On the host's programs: the Dockerfile is trivial (or absent); `files` are the
    /// build-context paths it copies under the work directory: (source in the task directory,
    /// destination relative to the work directory, "" for the directory itself).
    Host {
        /// (source, destination) pairs.
        files: Vec<(PathBuf, String)>,
    },
    /// On an image (issue 25's `[environment]` keys): `dockerfile` (relative to the task
    /// directory) or a `docker_image` reference.
    Image {
        /// `environment/Dockerfile`, if the task has one.
        dockerfile: Option<String>,
        /// `[environment].docker_image`.
        docker_image: Option<String>,
        /// Why it is not a host task.
        why: String,
    },
}

/// One step of the episode (a single-step task has one, named `main`).
#[derive(Debug, Clone, PartialEq)]
pub struct StepPlan {
    /// The step's name.
    pub name: String,
    /// Its instruction, verbatim.
    pub instruction: String,
    /// Its tests directory, relative to the task directory (`tests`, `steps/<name>/tests`).
    pub tests: String,
    /// Its `solve.sh`, relative to the task directory, if it has one.
    pub solve: Option<String>,
    /// Its staged files (`steps/<name>/workdir`), relative to the task directory.
    pub staged: Option<String>,
    /// Its `min_reward`: a number in [0, 1] (gating the step's reward), or a table of reward
    /// keys with finite minimums (gating those keys of its `reward.json`).
    pub min_reward: Option<MinReward>,
}

/// How one Harbor task maps to a specgap package.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// The task directory.
    pub dir: PathBuf,
    /// `[task].name`, or `harbor/<directory name>`.
    pub name: String,
    /// `[task].version`, or `0`.
    pub version: String,
    /// `[task].description`, or the instruction's first line.
    pub description: String,
    /// The specgap family, from `[metadata].category`.
    pub family: &'static str,
    /// The subfamily: `[metadata].category` as a label.
    pub subfamily: Option<String>,
    /// `[task].keywords`, `[metadata].tags` and `difficulty-<d>`, as labels, each once.
    pub tags: Vec<String>,
    /// `[agent].timeout_sec`, rounded up.
    pub wall_sec: Option<u64>,
    /// `[verifier].timeout_sec` (Harbor's default 600), rounded up, per step.
    pub verifier_timeout_sec: u64,
    /// `[verifier].env`.
    pub verifier_env: BTreeMap<String, String>,
    /// `[environment].env` and the trivial Dockerfile's `ENV`.
    pub env: BTreeMap<String, String>,
    /// The task's work directory: `[environment].workdir`, else the Dockerfile's `WORKDIR`,
    /// else `/app`.
    pub workdir: String,
    /// Where it runs.
    pub environment: EnvironmentPlan,
    /// `[verifier.environment].docker_image` of a separate verifier.
    pub verifier_image: Option<String>,
    /// The steps, in order.
    pub steps: Vec<StepPlan>,
    /// `multi_step_reward_strategy` (`mean` unless `final`), or `single`.
    pub strategy: &'static str,
    /// File names under `/logs/verifier` the tests' files name (`reward.txt`, `ctrf.json`).
    pub declared_outputs: Vec<String>,
    /// What could not be mapped, one sentence each.
    pub unmapped: Vec<String>,
}

/// Reads `dir/task.toml` and decides how the task maps.
///
/// # Errors
/// [`HarborError::Io`] when a file that exists cannot be read. A task.toml that does not
/// parse, and everything specgap cannot run, is a [`Refusal`].
pub fn plan(dir: &Path) -> Result<Result<Plan, Refusal>, HarborError> {
    let refuse = |reasons: Vec<String>| Ok(Err(Refusal { dir: dir.to_path_buf(), reasons }));
    let text = fs::read_to_string(dir.join("task.toml")).map_err(io(dir.join("task.toml")))?;
    let config: Table = match text.parse() {
        Ok(table) => table,
        Err(e) => return refuse(vec![format!("task.toml does not parse: {}", e.message())]),
    };
    if let Some(reason) = specgap_manifest(&config) {
        return refuse(vec![reason]);
    }
    let mut planner = Planner { dir, config: &config, reasons: Vec::new(), unmapped: Vec::new() };
    let plan = planner.plan()?;
    if planner.reasons.is_empty() {
        let mut plan = plan;
        plan.unmapped = planner.unmapped;
        Ok(Ok(plan))
    } else {
        refuse(planner.reasons)
    }
}

/// Why a `task.toml` is a specgap package's manifest rather than a Harbor task's: it has
/// specgap's `format` and `[evaluator]`, keys Harbor's task model does not have.
fn specgap_manifest(config: &Table) -> Option<String> {
    let format = config.get("format")?.as_integer()?;
    config.get("evaluator")?;
    Some(format!(
        "task.toml is a specgap package manifest (format = {format}, [evaluator]), not a Harbor task; run it with specgap as it is"
    ))
}

struct Planner<'a> {
    dir: &'a Path,
    config: &'a Table,
    reasons: Vec<String>,
    unmapped: Vec<String>,
}

impl Planner<'_> {
    fn table(&self, key: &str) -> Table {
        self.config.get(key).and_then(Value::as_table).cloned().unwrap_or_default()
    }

    fn plan(&mut self) -> Result<Plan, HarborError> {
        let info = self.table("task");
        let metadata = self.table("metadata");
        let agent = self.table("agent");
        let verifier = self.table("verifier");
        let environment = self.table("environment");
        self.note_unknown_root();
        self.note_unknown("task", &info, &["name", "version", "description", "keywords", "authors"]);
        self.note_unknown("agent", &agent, &["timeout_sec", "user", "network_mode", "allowed_hosts"]);
        self.note_unknown(
            "verifier",
            &verifier,
            &["timeout_sec", "env", "user", "environment_mode", "environment", "network_mode", "allowed_hosts"],
        );
        self.note_unknown(
            "environment",
            &environment,
            &[
                "docker_image",
                "cpus",
                "memory_mb",
                "memory",
                "storage_mb",
                "storage",
                "workdir",
                "env",
                "os",
                "gpus",
                "gpu_types",
                "tpu",
                "network_mode",
                "allowed_hosts",
                "allow_internet",
                "build_timeout_sec",
            ],
        );
        if !info.get("authors").is_none_or(|a| a.as_array().is_some_and(Vec::is_empty)) {
            self.unmapped.push("[task].authors: kept in the Harbor copy only".into());
        }
        self.refuse_what_cannot_run(&agent, &verifier, &environment);
        let instruction = self.read_optional("instruction.md")?;
        let steps = self.steps(instruction)?;
        let name = info.get("name").and_then(Value::as_str).map(str::to_string).unwrap_or_else(|| format!("harbor/{}", dir_name(self.dir)));
        if !is_task_name(&name) {
            self.reasons.push(format!("[task].name `{name}` is not an org/name of letters, digits, `.`, `_`, `-`"));
        }
        let description = info
            .get("description")
            .and_then(Value::as_str)
            .filter(|d| !d.trim().is_empty())
            .map(|d| d.trim().to_string())
            .unwrap_or_else(|| steps.first().map(|s| first_line(&s.instruction)).unwrap_or_default());
        let category = metadata.get("category").and_then(Value::as_str).map(label);
        let mut tags = Vec::new();
        for value in info.get("keywords").into_iter().chain(metadata.get("tags")).filter_map(Value::as_array).flatten() {
            if let Some(tag) = value.as_str().map(label).filter(|t| !t.is_empty() && t.len() <= 64) {
                push_once(&mut tags, tag);
            }
        }
        if let Some(difficulty) = metadata.get("difficulty").and_then(Value::as_str) {
            push_once(&mut tags, format!("difficulty-{}", label(difficulty)));
        }
        for key in metadata.keys().filter(|k| !["category", "tags", "difficulty"].contains(&k.as_str())) {
            self.unmapped.push(format!("[metadata].{key}: kept in the Harbor copy only"));
        }
        let mut env = string_map(environment.get("env"));
        let (environment_plan, dockerfile_workdir) = self.environment(&environment, &mut env)?;
        let workdir = environment
            .get("workdir")
            .and_then(Value::as_str)
            .map(str::to_string)
            .or(dockerfile_workdir)
            .unwrap_or_else(|| "/app".to_string());
        if matches!(environment_plan, EnvironmentPlan::Host { .. }) && workdir != "/workspace" {
            self.unmapped.push(format!(
                "work directory {workdir}: the agent works in /workspace (a host-command environment); the tests see the submission at {workdir}"
            ));
        }
        self.note_env_templates(&env, "[environment].env");
        let verifier_env = string_map(verifier.get("env"));
        self.note_env_templates(&verifier_env, "[verifier].env");
        let declared_outputs = self.declared_outputs(&steps)?;
        let strategy = match (steps.len(), self.config.get("multi_step_reward_strategy").and_then(Value::as_str)) {
            (1, _) => "single",
            (_, Some("final")) => "final",
            _ => "mean",
        };
        let verifier_image = verifier
            .get("environment")
            .and_then(Value::as_table)
            .and_then(|t| t.get("docker_image"))
            .and_then(Value::as_str)
            .map(str::to_string);
        if verifier.get("environment").is_some() && verifier_image.is_none() {
            self.unmapped.push("[verifier.environment] without docker_image: the verifier runs in the task's environment".into());
        }
        Ok(Plan {
            dir: self.dir.to_path_buf(),
            name,
            version: info.get("version").and_then(Value::as_str).unwrap_or("0").to_string(),
            description,
            family: family(category.as_deref()),
            subfamily: category.filter(|c| !c.is_empty()),
            tags,
            wall_sec: agent.get("timeout_sec").and_then(number).map(|s| s.ceil() as u64),
            verifier_timeout_sec: verifier.get("timeout_sec").and_then(number).unwrap_or(600.0).ceil() as u64,
            verifier_env,
            env,
            workdir,
            environment: environment_plan,
            verifier_image,
            steps,
            strategy,
            declared_outputs,
            unmapped: Vec::new(),
        })
    }

    fn note_unknown_root(&mut self) {
        let known = [
            "schema_version",
            "version",
            "task",
            "metadata",
            "verifier",
            "agent",
            "environment",
            "solution",
            "source",
            "multi_step_reward_strategy",
            "steps",
            "artifacts",
        ];
        for key in self.config.keys().filter(|k| !known.contains(&k.as_str())) {
            self.unmapped.push(format!("`{key}`: not in Harbor {HARBOR_VERSION}'s task model; ignored"));
        }
        if self.config.get("artifacts").and_then(Value::as_array).is_some_and(|a| !a.is_empty()) {
            self.unmapped.push("artifacts: specgap keeps the whole workspace of every submission instead".into());
        }
        if self.table("solution").get("env").is_some() {
            self.unmapped.push("[solution].env: not passed to solve.sh".into());
        }
        if let Some(source) = self.config.get("source").and_then(Value::as_str) {
            self.unmapped.push(format!("source = {source:?}: kept in the Harbor copy only"));
        }
    }

    fn note_unknown(&mut self, section: &str, table: &Table, known: &[&str]) {
        for key in table.keys().filter(|k| !known.contains(&k.as_str())) {
            self.unmapped.push(format!("[{section}].{key}: not mapped"));
        }
    }

    fn refuse_what_cannot_run(&mut self, agent: &Table, verifier: &Table, environment: &Table) {
        for file in COMPOSE_FILES {
            if self.dir.join("environment").join(file).exists() {
                self.reasons.push(format!("environment/{file}: multi-container (compose) tasks cannot run here"));
            }
        }
        if environment.get("os").and_then(Value::as_str).is_some_and(|os| os.eq_ignore_ascii_case("windows")) {
            self.reasons.push("[environment].os = windows: only Linux tasks run here".into());
        }
        if environment.get("gpus").and_then(Value::as_integer).is_some_and(|g| g > 0)
            || environment.get("gpu_types").is_some()
            || environment.get("tpu").is_some()
        {
            self.reasons.push("the task asks for GPUs or TPUs".into());
        }
        for (section, table) in [("environment", environment), ("agent", agent), ("verifier", verifier)] {
            if let Some(mode @ ("public" | "allowlist")) = table.get("network_mode").and_then(Value::as_str) {
                self.reasons.push(format!("[{section}].network_mode = {mode}: the task needs the network at run time"));
            }
        }
        if environment.get("allow_internet").and_then(Value::as_bool) == Some(true) {
            self.reasons.push("[environment].allow_internet = true: the task needs the network at run time".into());
        }
        if environment.get("mcp_servers").is_some() {
            self.reasons.push("[environment].mcp_servers: MCP servers for the agent cannot be provided".into());
        }
        for (key, what) in
            [("cpus", "CPUs"), ("memory_mb", "memory (MB)"), ("memory", "memory"), ("storage_mb", "storage (MB)"), ("storage", "storage")]
        {
            if let Some(value) = environment.get(key) {
                self.unmapped.push(format!("[environment].{key} = {value}: {what}; specgap's sandbox limits apply"));
            }
        }
        for (section, table) in [("agent", agent), ("verifier", verifier)] {
            if let Some(user) = table.get("user") {
                self.unmapped.push(format!("[{section}].user = {user}: specgap runs every command as its sandbox user (uid 1000)"));
            }
        }
        if environment.get("healthcheck").is_some() {
            self.unmapped.push("[environment].healthcheck: not run".into());
        }
    }

    fn read_optional(&self, rel: &str) -> Result<Option<String>, HarborError> {
        let path = self.dir.join(rel);
        if !path.is_file() {
            return Ok(None);
        }
        fs::read_to_string(&path).map(Some).map_err(io(&path))
    }

    fn steps(&mut self, instruction: Option<String>) -> Result<Vec<StepPlan>, HarborError> {
        let Some(steps) = self.config.get("steps").and_then(Value::as_array).filter(|s| !s.is_empty()) else {
            let Some(instruction) = instruction else {
                self.reasons.push("no instruction.md".into());
                return Ok(Vec::new());
            };
            self.require_script("tests/test.sh", "tests/test.bat");
            let solve = self.dir.join("solution/solve.sh").is_file().then(|| "solution/solve.sh".to_string());
            return Ok(vec![StepPlan { name: "main".into(), instruction, tests: "tests".into(), solve, staged: None, min_reward: None }]);
        };
        let mut plans = Vec::new();
        for (index, step) in steps.iter().enumerate() {
            let Some(name) = step.get("name").and_then(Value::as_str) else {
                self.reasons.push(format!("[[steps]] {} has no name", index + 1));
                continue;
            };
            if !name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')) || name.starts_with('.') {
                self.reasons.push(format!("step name `{name}` is not a plain directory name"));
                continue;
            }
            let base = format!("steps/{name}");
            let Some(step_instruction) = self.read_optional(&format!("{base}/instruction.md"))? else {
                self.reasons.push(format!("{base}/instruction.md is missing"));
                continue;
            };
            self.require_script(&format!("{base}/tests/test.sh"), &format!("{base}/tests/test.bat"));
            if self.dir.join(&base).join("workdir/setup.sh").exists() {
                self.unmapped.push(format!(
                    "{base}/workdir/setup.sh: not run (its step's other files are added to the workspace when the stage begins)"
                ));
            }
            let min_reward = step.get("min_reward").and_then(|value| {
                let mapped = min_reward(value);
                if mapped.is_none() {
                    self.unmapped.push(format!(
                        "[[steps]] {name}: min_reward {value}: only a number in [0, 1] (gating the reward) or a table of reward keys \
                         with finite numbers is mapped; this step never ends the episode"
                    ));
                }
                mapped
            });
            let solve = self.dir.join(&base).join("solution/solve.sh").is_file().then(|| format!("{base}/solution/solve.sh"));
            let staged = self.dir.join(&base).join("workdir").is_dir().then(|| format!("{base}/workdir"));
            plans.push(StepPlan {
                name: name.to_string(),
                instruction: step_instruction,
                tests: format!("{base}/tests"),
                solve,
                staged,
                min_reward,
            });
        }
        Ok(plans)
    }

    fn require_script(&mut self, sh: &str, bat: &str) {
        if self.dir.join(bat).exists() && !self.dir.join(sh).exists() {
            self.reasons.push(format!("{bat}: Windows verifiers cannot run here"));
        } else if !self.dir.join(sh).is_file() {
            self.reasons.push(format!("{sh} is missing"));
        }
    }

    fn environment(
        &mut self,
        environment: &Table,
        env: &mut BTreeMap<String, String>,
    ) -> Result<(EnvironmentPlan, Option<String>), HarborError> {
        let docker_image = environment.get("docker_image").and_then(Value::as_str).map(str::to_string);
        let dockerfile_path = self.dir.join("environment/Dockerfile");
        let dockerfile = dockerfile_path.is_file().then(|| "environment/Dockerfile".to_string());
        if let Some(image) = &docker_image {
            return Ok((
                EnvironmentPlan::Image { dockerfile, docker_image: docker_image.clone(), why: format!("it runs on the image {image}") },
                None,
            ));
        }
        let Some(_) = &dockerfile else {
            self.unmapped.push("no environment/Dockerfile: runs on the host's programs".into());
            return Ok((EnvironmentPlan::Host { files: Vec::new() }, None));
        };
        let text = fs::read_to_string(&dockerfile_path).map_err(io(dockerfile_path))?;
        let trivial = match dockerfile::parse(&text) {
            Ok(trivial) => trivial,
            Err(why) => {
                let why = format!("its Dockerfile is not trivial: {why}");
                return Ok((EnvironmentPlan::Image { dockerfile, docker_image: None, why }, dockerfile::last_workdir(&text)));
            }
        };
        let workdir = environment
            .get("workdir")
            .and_then(Value::as_str)
            .map(str::to_string)
            .or(trivial.workdir.clone())
            .unwrap_or_else(|| "/app".into());
        let mut files = Vec::new();
        for (source, destination) in &trivial.copies {
            let Some(rel) = below(destination, &workdir) else {
                let why = format!("its Dockerfile copies {source} to {destination}, outside the work directory {workdir}");
                return Ok((EnvironmentPlan::Image { dockerfile, docker_image: None, why }, trivial.workdir));
            };
            let from = self.dir.join("environment").join(source.trim_end_matches('/'));
            if !from.exists() {
                self.reasons.push(format!("its Dockerfile copies {source}, which environment/ does not hold"));
                continue;
            }
            // A file copied to a directory (a trailing `/`, or the work directory itself, which
            // WORKDIR made) lands inside it.
            let rel = if from.is_file() && (destination.ends_with('/') || rel.is_empty()) {
                let file = Path::new(source).file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default();
                if rel.is_empty() { file } else { format!("{rel}/{file}") }
            } else {
                rel
            };
            files.push((from, rel));
        }
        for (key, value) in trivial.env {
            env.entry(key).or_insert(value);
        }
        self.unmapped.push(format!("base image {}: replaced by the host's programs (bash, python3)", trivial.base));
        for ignored in trivial.ignored {
            self.unmapped.push(format!("Dockerfile `{ignored}`: not applied"));
        }
        Ok((EnvironmentPlan::Host { files }, trivial.workdir))
    }

    fn note_env_templates(&mut self, env: &BTreeMap<String, String>, table: &str) {
        for (key, value) in env {
            if value.contains("${") {
                self.reasons.push(format!("{table}.{key} = {value:?} is taken from the host at run time, which specgap does not do"));
            }
        }
    }

    /// The `/logs/verifier` files the tests name, and refuses tests that download.
    fn declared_outputs(&mut self, steps: &[StepPlan]) -> Result<Vec<String>, HarborError> {
        let mut declared = Vec::new();
        // A step without its tests directory is refused already (its test.sh is missing).
        for step in steps.iter().filter(|s| self.dir.join(&s.tests).is_dir()) {
            for entry in walkdir::WalkDir::new(self.dir.join(&step.tests)).sort_by_file_name() {
                let entry = entry.map_err(walk(self.dir.join(&step.tests)))?;
                if !entry.file_type().is_file() {
                    continue;
                }
                let bytes = fs::read(entry.path()).map_err(io(entry.path()))?;
                let text = String::from_utf8_lossy(&bytes);
                for name in verifier_file_names(&text) {
                    push_once(&mut declared, name);
                }
                if entry.file_name() == "test.sh" {
                    for word in DOWNLOADERS {
                        if text.lines().any(|l| !l.trim_start().starts_with('#') && l.contains(word)) {
                            let rel = entry.path().strip_prefix(self.dir).unwrap_or(entry.path()).display().to_string();
                            self.reasons.push(format!(
                                "{rel} downloads at verification time (`{}`); specgap's sandbox has no network",
                                word.trim()
                            ));
                            break;
                        }
                    }
                }
            }
        }
        declared.sort();
        Ok(declared)
    }
}

/// File names written under `/logs/verifier/` in a script's text (`reward.txt`,
/// `reward.json`, a CTRF file).
fn verifier_file_names(text: &str) -> Vec<String> {
    let mut names = Vec::new();
    for (at, _) in text.match_indices("/logs/verifier/") {
        let rest = &text[at + "/logs/verifier/".len()..];
        let name: String = rest.chars().take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')).collect();
        // A sentence may end right after the name.
        let name = name.trim_end_matches('.');
        if !name.is_empty() {
            push_once(&mut names, name.to_string());
        }
    }
    names
}

/// `destination` relative to `workdir` ("" for the directory itself), or `None` outside it.
fn below(destination: &str, workdir: &str) -> Option<String> {
    let destination = destination.trim_end_matches('/');
    let workdir = workdir.trim_end_matches('/');
    if destination == workdir {
        return Some(String::new());
    }
    destination.strip_prefix(&format!("{workdir}/")).map(str::to_string)
}

/// A step's `min_reward` as specgap can gate on it: a number in [0, 1], or a non-empty table
/// whose every value is a finite number (Harbor's `dict[str, float]`, any range).
fn min_reward(value: &Value) -> Option<MinReward> {
    if let Some(table) = value.as_table() {
        let keys: Option<BTreeMap<String, f64>> = table
            .iter()
            .map(|(key, min)| {
                let min = min.as_float().or_else(|| min.as_integer().map(|i| i as f64)).filter(|m| m.is_finite())?;
                (!key.is_empty()).then(|| (key.clone(), min))
            })
            .collect();
        return keys.filter(|keys| !keys.is_empty()).map(MinReward::Keys);
    }
    number(value).filter(|min| (0.0..=1.0).contains(min)).map(MinReward::Score)
}

fn number(value: &Value) -> Option<f64> {
    value.as_float().or_else(|| value.as_integer().map(|i| i as f64)).filter(|v| v.is_finite() && *v >= 0.0)
}

fn string_map(value: Option<&Value>) -> BTreeMap<String, String> {
    value
        .and_then(Value::as_table)
        .map(|t| t.iter().map(|(k, v)| (k.clone(), v.as_str().map_or_else(|| v.to_string(), str::to_string))).collect())
        .unwrap_or_default()
}

fn push_once(list: &mut Vec<String>, item: String) {
    if !list.contains(&item) {
        list.push(item);
    }
}

/// A free text as a specgap label: lowercase letters and digits, words joined by single
/// hyphens.
pub(crate) fn label(text: &str) -> String {
    let lowered: String = text.to_lowercase().chars().map(|c| if c.is_ascii_alphanumeric() { c } else { ' ' }).collect();
    lowered.split_whitespace().collect::<Vec<_>>().join("-")
}

/// `[metadata].category` to a specgap family (seed 000 §4's five).
fn family(category: Option<&str>) -> &'static str {
    match category.unwrap_or("") {
        c if c.contains("software") || c == "swe" || c.contains("coding") || c.contains("programming") || c.contains("debugging") => "swe",
        c if c.contains("machine-learning") || c == "ml" || c.contains("model-training") => "ml",
        c if c.contains("research") || c.contains("data-science") || c.contains("analysis") => "research",
        c if c.contains("optimization") || c.contains("scheduling") => "optimization",
        _ => "terminal",
    }
}

fn is_task_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .split('/')
            .all(|s| !s.is_empty() && s != "." && s != ".." && s.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')))
}

fn first_line(text: &str) -> String {
    let line = text.lines().map(|l| l.trim().trim_start_matches('#').trim()).find(|l| !l.is_empty()).unwrap_or("Harbor task");
    line.chars().take(120).collect()
}

pub(crate) fn dir_name(dir: &Path) -> String {
    dir.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_else(|| "task".into())
}

/// Whether `dir` is a Harbor task directory (holds `task.toml`).
pub fn is_task_dir(dir: &Path) -> bool {
    dir.join("task.toml").is_file()
}

/// The parts of a Harbor task besides `task.toml`, as [`task_parts`] names them.
const TASK_PARTS: [&str; 4] = ["instruction.md", "tests/test.sh", "environment/Dockerfile", "solution/solve.sh"];

/// The parts of a Harbor task (`instruction.md`, `tests/test.sh`, `environment/Dockerfile`,
/// `solution/solve.sh`) that `dir` holds.
pub fn task_parts(dir: &Path) -> Vec<&'static str> {
    TASK_PARTS.into_iter().filter(|part| dir.join(part).is_file()).collect()
}
