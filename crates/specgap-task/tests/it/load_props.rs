//! Loader properties (issue 10): packages generated with random and malformed task.toml,
//! requirements, observations, clarifications, user profiles, residual states, odd files and
//! links. `load` never panics or blocks; every error names a file of the package (its text
//! holds the package root); every package it accepts holds the invariants of DESIGN §2.
//!
//! Each TOML file starts from a valid document, format 1 or 2, and gets random mutations
//! (a key removed, a value replaced by a random one, an unknown key added) or is replaced by
//! random text; then odd entries are added (symlinks that loop, escape or dangle, fifos,
//! stray files, non-UTF-8 names, parts replaced by files or links).

use std::collections::HashSet;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt as _;
use std::path::Path;

use proptest::prelude::*;
use proptest::sample::Index;
use specgap_protocol::package::FORMAT_2;
use specgap_task::{LoadError, TaskPackage, format2::is_label, is_requirement_id};
use toml::{Table, Value};

use crate::proptest_config;

/// Values a mutation may write: right and wrong types, edge numbers, odd strings and paths.
fn toml_value() -> impl Strategy<Value = Value> {
    let strings = prop::sample::select(vec![
        "",
        " ",
        "x",
        "r-1",
        "r-2",
        "R_1",
        "a--b",
        "p/t",
        "/abs",
        "../up",
        "workspace/s.json",
        "s.json",
        "[",
        "*.json",
        "swe",
        "research",
        "min",
        "max",
        "missing",
        "ambiguous",
        "data-semantics",
        "ml-experiment",
        "Bad Tag",
        "café",
    ]);
    prop_oneof![
        prop_oneof![Just(0i64), Just(1), Just(2), Just(3), Just(-1), Just(i64::MAX), any::<i64>()].prop_map(Value::Integer),
        prop_oneof![Just(0.0f64), Just(f64::NAN), Just(f64::INFINITY), Just(-4.0), any::<f64>()].prop_map(Value::Float),
        any::<bool>().prop_map(Value::Boolean),
        strings.clone().prop_map(|s| Value::String(s.to_owned())),
        prop::collection::vec(strings.prop_map(|s| Value::String(s.to_owned())), 0..3).prop_map(Value::Array),
        Just(Value::Table(Table::new())),
    ]
}

/// Keys a mutation may add or replace (real ones of every file, and unknown ones).
const KEYS: [&str; 34] = [
    "format",
    "name",
    "version",
    "description",
    "family",
    "tags",
    "subfamily",
    "commands",
    "binds",
    "env",
    "records",
    "replay",
    "command",
    "timeout_sec",
    "turns",
    "reference",
    "direction",
    "artifact",
    "schema",
    "id",
    "priority",
    "stated",
    "discovery",
    "requirement",
    "failure_mode",
    "scene",
    "incident",
    "detail",
    "request",
    "answer",
    "triggers",
    "failing_tests",
    "steps",
    "unknown",
];

#[derive(Debug, Clone)]
enum Mutation {
    Remove(Index, Index),
    Set(Index, Index, Value),
    Add(Index, &'static str, Value),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<Index>(), any::<Index>()).prop_map(|(t, k)| Mutation::Remove(t, k)),
        (any::<Index>(), any::<Index>(), toml_value()).prop_map(|(t, k, v)| Mutation::Set(t, k, v)),
        (any::<Index>(), prop::sample::select(KEYS.to_vec()), toml_value()).prop_map(|(t, k, v)| Mutation::Add(t, k, v)),
    ]
}

/// One file: a valid document with mutations, or random text.
#[derive(Debug, Clone)]
enum FileSpec {
    Mutated(Vec<Mutation>),
    Text(String),
}

fn file_spec() -> impl Strategy<Value = FileSpec> {
    prop_oneof![
        6 => prop::collection::vec(mutation(), 1..3).prop_map(FileSpec::Mutated),
        1 => "(\\PC|\n|=|\\[|\\]|\"){0,40}".prop_map(FileSpec::Text),
    ]
}

/// Odd entries added after the files.
#[derive(Debug, Clone)]
enum Odd {
    Symlink(&'static str, &'static str),
    Fifo(&'static str),
    File(&'static str, Vec<u8>),
    NonUtf8Name(&'static str),
    Remove(&'static str),
}

const PLACES: [&str; 14] = [
    "workspace/l",
    "workspace/d/l",
    "workspace/m",
    "evaluator/l",
    "solutions/gold/l",
    "solutions/mutants/r-1/l",
    "l",
    "m",
    "residual/s/l",
    "instruction.md",
    "task.toml",
    "schema.json",
    "solutions/gold/delete.txt",
    "residual/s/state.patch",
];
const TARGETS: [&str; 11] = ["l", "m", "../m", "..", ".", "../..", "/etc/passwd", "missing", "../evaluator/evaluate.py", "d", "d/l"];
const FILES: [&str; 12] = [
    "requirement.toml",
    "solutions/extra/x",
    "solutions/mutants/r-9/x",
    "residual/bad id/x",
    "residual/t/state.patch",
    "solutions/gold/delete.txt",
    "solutions/mutants/r-1/delete.txt",
    "workspace/d/a.txt",
    "NOTES.md",
    "information.md",
    "instruction.full.md",
    "schema.json",
];
const CONTENTS: [&[u8]; 7] = [b"", b"x\n", b"../x\n/abs\n#c\n\n.\nd/a.txt\n", b"{\"type\": \"object\"}", b"[1]", b"\xff\xfe", b"{"];
const REMOVABLE: [&str; 6] = ["instruction.md", "task.toml", "workspace", "evaluator", "observations.toml", "residual/s/meta.toml"];

fn odd() -> impl Strategy<Value = Odd> {
    prop_oneof![
        (prop::sample::select(PLACES.to_vec()), prop::sample::select(TARGETS.to_vec())).prop_map(|(p, t)| Odd::Symlink(p, t)),
        prop::sample::select(PLACES.to_vec()).prop_map(Odd::Fifo),
        (prop::sample::select(FILES.to_vec()), prop::sample::select(CONTENTS.to_vec())).prop_map(|(p, c)| Odd::File(p, c.to_vec())),
        prop::sample::select(vec!["", "workspace", "solutions", "residual", "solutions/mutants"]).prop_map(Odd::NonUtf8Name),
        prop::sample::select(REMOVABLE.to_vec()).prop_map(Odd::Remove),
    ]
}

/// The files a damage can hit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Part {
    Task,
    Requirements,
    Observations,
    Clarifications,
    User,
    ResidualMeta,
}

#[derive(Debug, Clone)]
struct PackageSpec {
    format_2: bool,
    delivery: bool,
    requirements: usize,
    clarifications: bool,
    user: bool,
    residual: bool,
    /// Each file starts valid; these change some of them.
    damage: Vec<(Part, FileSpec)>,
    odd: Vec<Odd>,
}

impl PackageSpec {
    fn file(&self, part: Part) -> FileSpec {
        let damage = self.damage.iter().rev().find(|(p, _)| *p == part);
        damage.map_or(FileSpec::Mutated(vec![]), |(_, spec)| spec.clone())
    }
}

fn part() -> impl Strategy<Value = Part> {
    prop::sample::select(vec![Part::Task, Part::Requirements, Part::Observations, Part::Clarifications, Part::User, Part::ResidualMeta])
}

fn package_spec() -> impl Strategy<Value = PackageSpec> {
    (
        (any::<bool>(), any::<bool>(), 0usize..3, any::<bool>(), any::<bool>(), any::<bool>()),
        prop_oneof![2 => Just(vec![]), 2 => prop::collection::vec((part(), file_spec()), 1..2), 1 => prop::collection::vec((part(), file_spec()), 2..4)],
        prop_oneof![1 => Just(vec![]), 1 => prop::collection::vec(odd(), 1..4)],
    )
        .prop_map(|((format_2, delivery, requirements, clarifications, user, residual), damage, odd)| PackageSpec {
            format_2,
            delivery,
            requirements,
            clarifications,
            user,
            residual,
            damage,
            odd,
        })
}

// ---- valid documents ------------------------------------------------------------------------

fn parse(text: &str) -> Table {
    text.parse::<Table>().unwrap()
}

fn task_toml(spec: &PackageSpec) -> Table {
    let format = if spec.format_2 { 2 } else { 1 };
    let mut text = format!("format = {format}\n[task]\nname = \"p/t\"\nversion = \"1\"\ndescription = \"d\"\nfamily = \"research\"\n");
    if spec.format_2 {
        text.push_str("tags = [\"a\", \"b-2\"]\nsubfamily = \"ml-experiment\"\n");
    }
    text.push_str("[environment]\ncommands = []\n[evaluator]\ncommand = \"true\"\ntimeout_sec = 5\n[budget]\nturns = 3\n");
    if spec.delivery {
        text.push_str("[delivery]\nreference = 4.0\ndirection = \"min\"\nartifact = \"plan.json\"\n");
        if spec.format_2 {
            text.push_str("schema = \"schema.json\"\n");
        }
    }
    parse(&text)
}

fn requirements_toml(n: usize) -> Table {
    let mut text = String::new();
    for i in 1..=n {
        text.push_str(&format!(
            "[[requirement]]\nid = \"r-{i}\"\npriority = {i}\nstated = {}\ndescription = \"rule {i}\"\ndiscovery = \"file {i}\"\n",
            i == 1
        ));
    }
    parse(&text)
}

fn observations_toml(n: usize, format_2: bool) -> Table {
    let mut text = String::new();
    for i in 1..=n {
        text.push_str(&format!(
            "[[observation]]\nrequirement = \"r-{i}\"\nfailure_mode = \"m-{i}\"\nscene = \"s\"\nincident = \"i\"\ndetail = \"d {{k}}\"\n"
        ));
        if format_2 {
            text.push_str("request = \"please make it right\"\n");
        }
    }
    parse(&text)
}

fn clarifications_toml() -> Table {
    parse(
        "[[target]]\nid = \"c-1\"\ndescription = \"d\"\nissue_type = \"missing\"\ndomain = \"data-semantics\"\n\
         rule_source = \"r-1\"\nanswer = \"a\"\ntriggers = [\"q?\"]\n",
    )
}

fn user_toml() -> Table {
    parse("persona = \"p\"\nunderstanding = \"u\"\neditable_surface = \"e\"\nstyle = \"s\"\n")
}

fn meta_toml() -> Table {
    parse("predecessor = \"m\"\ndeclared_complete = true\nsteps = 3\nfailing_tests = [\"t\"]\nnotes = \"n\"\n")
}

/// How many tables a document holds (the root, sub-tables, array-of-table items).
fn count_tables(table: &Table) -> usize {
    1 + table
        .values()
        .map(|value| match value {
            Value::Table(t) => count_tables(t),
            Value::Array(items) => items.iter().map(|i| if let Value::Table(t) = i { count_tables(t) } else { 0 }).sum(),
            _ => 0,
        })
        .sum::<usize>()
}

/// The `n`th table of a document, depth first (0 is the root).
fn nth_table(table: &mut Table, mut n: usize) -> Option<&mut Table> {
    if n == 0 {
        return Some(table);
    }
    n -= 1;
    for (_, value) in table.iter_mut() {
        let children: Vec<&mut Table> = match value {
            Value::Table(t) => vec![t],
            Value::Array(items) => items.iter_mut().filter_map(|i| if let Value::Table(t) = i { Some(t) } else { None }).collect(),
            _ => vec![],
        };
        for child in children {
            let size = count_tables(child);
            if n < size {
                return nth_table(child, n);
            }
            n -= size;
        }
    }
    None
}

fn apply(mut doc: Table, mutations: &[Mutation]) -> Table {
    for mutation in mutations {
        let count = count_tables(&doc);
        let (Mutation::Remove(t, _) | Mutation::Set(t, _, _) | Mutation::Add(t, _, _)) = mutation;
        let Some(table) = nth_table(&mut doc, t.index(count)) else { continue };
        let key_at = |table: &Table, k: &Index| table.keys().nth(k.index(table.len().max(1))).cloned();
        match mutation {
            Mutation::Remove(_, k) => {
                if let Some(key) = key_at(table, k) {
                    table.remove(&key);
                }
            }
            Mutation::Set(_, k, value) => {
                if let Some(key) = key_at(table, k) {
                    table.insert(key, value.clone());
                }
            }
            Mutation::Add(_, key, value) => {
                table.insert((*key).to_owned(), value.clone());
            }
        }
    }
    doc
}

/// The file's text: the valid document mutated (NaN and infinity become TOML's `nan`/`inf`),
/// or random text.
fn render(valid: Table, spec: &FileSpec) -> Vec<u8> {
    match spec {
        FileSpec::Text(text) => text.clone().into_bytes(),
        FileSpec::Mutated(mutations) => toml::to_string(&apply(valid, mutations)).unwrap_or_default().into_bytes(),
    }
}

// ---- writing the package --------------------------------------------------------------------

fn write(root: &Path, rel: &str, bytes: &[u8]) {
    let path = root.join(rel);
    if let Some(parent) = path.parent() {
        let _ = fs_err::create_dir_all(parent);
    }
    let _ = std::fs::remove_file(&path);
    let _ = std::fs::write(&path, bytes);
}

fn build(root: &Path, spec: &PackageSpec) {
    let n = spec.requirements;
    write(root, "task.toml", &render(task_toml(spec), &spec.file(Part::Task)));
    write(root, "instruction.md", b"Do the work.\n");
    write(root, "workspace/d/a.txt", b"a\n");
    write(root, "evaluator/evaluate.py", b"print('x')\n");
    write(root, "solutions/gold/d/a.txt", b"b\n");
    if n > 0 {
        write(root, "requirements.toml", &render(requirements_toml(n), &spec.file(Part::Requirements)));
        write(root, "observations.toml", &render(observations_toml(n, spec.format_2), &spec.file(Part::Observations)));
        write(root, "solutions/mutants/r-1/d/a.txt", b"c\n");
    }
    if spec.clarifications {
        write(root, "clarifications.toml", &render(clarifications_toml(), &spec.file(Part::Clarifications)));
    }
    if spec.user {
        write(root, "user.toml", &render(user_toml(), &spec.file(Part::User)));
    }
    if spec.residual {
        write(root, "residual/s/meta.toml", &render(meta_toml(), &spec.file(Part::ResidualMeta)));
        write(root, "residual/s/state.patch", b"");
    }
    if spec.delivery {
        write(root, "schema.json", b"{\"type\": \"object\"}");
    }
    for odd in &spec.odd {
        add_odd(root, odd);
    }
}

fn add_odd(root: &Path, odd: &Odd) {
    match odd {
        Odd::Symlink(at, target) => {
            let path = root.join(at);
            let _ = fs_err::create_dir_all(path.parent().unwrap_or(root));
            let _ = remove_any(&path);
            let _ = std::os::unix::fs::symlink(target, &path);
        }
        Odd::Fifo(at) => {
            let path = root.join(at);
            let _ = fs_err::create_dir_all(path.parent().unwrap_or(root));
            let _ = remove_any(&path);
            let _ = std::process::Command::new("mkfifo").arg(&path).status();
        }
        Odd::File(at, bytes) => {
            let _ = remove_any(&root.join(at));
            write(root, at, bytes);
        }
        Odd::NonUtf8Name(dir) => {
            let dir = root.join(dir);
            let _ = fs_err::create_dir_all(&dir);
            let _ = std::fs::write(dir.join(OsStr::from_bytes(b"caf\xe9")), b"x");
        }
        Odd::Remove(at) => {
            let _ = remove_any(&root.join(at));
        }
    }
}

fn remove_any(path: &Path) -> std::io::Result<()> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.is_dir() => std::fs::remove_dir_all(path),
        Ok(_) => std::fs::remove_file(path),
        Err(e) => Err(e),
    }
}

// ---- the properties -------------------------------------------------------------------------

/// What every accepted package satisfies (DESIGN §2 and docs/decisions.md "Task packages").
fn check_accepted(package: &TaskPackage, root: &Path) -> Result<(), TestCaseError> {
    prop_assert!(matches!(package.format(), 1 | 2));
    if package.format() < FORMAT_2 {
        prop_assert!(package.tags().is_empty() && package.subfamily().is_none() && package.delivery_schema().is_none());
        prop_assert!(package.observations().iter().all(|o| o.request.is_none()));
    }
    let mut tags = HashSet::new();
    for tag in package.tags() {
        prop_assert!(is_label(tag) && tags.insert(tag), "tag {tag}");
    }
    prop_assert!(package.subfamily().is_none_or(is_label));
    let mut ids = HashSet::new();
    let mut priorities = HashSet::new();
    for requirement in package.requirements() {
        prop_assert!(is_requirement_id(&requirement.id) && ids.insert(requirement.id.as_str()));
        prop_assert!(requirement.priority >= 1 && priorities.insert(requirement.priority));
    }
    prop_assert!(package.requirements().windows(2).all(|w| w[0].priority < w[1].priority));
    for observation in package.observations() {
        prop_assert!(ids.contains(observation.requirement.as_str()));
        prop_assert!(observation.request.as_deref().is_none_or(|r| !r.trim().is_empty()));
    }
    for id in &ids {
        prop_assert!(package.observations().iter().any(|o| o.requirement == *id));
    }
    for mutant in package.solutions().mutants.keys() {
        prop_assert!(ids.contains(mutant.as_str()));
    }
    for state in package.residual_states().values() {
        prop_assert!(!state.meta.failing_tests.is_empty());
        prop_assert!(state.patch.is_file());
    }
    if let Some(schema) = package.delivery_schema() {
        prop_assert!(schema.schema.is_object() || schema.schema.is_boolean());
        prop_assert!(schema.path.starts_with(root) && !schema.path.starts_with(root.join("workspace")));
    }
    prop_assert!(package.hash().len() == 64 && package.hash().bytes().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()));
    // Loading is deterministic.
    let again = specgap_task::load(root).map(|p| p.hash().to_owned()).ok();
    prop_assert_eq!(again.as_deref(), Some(package.hash()));
    Ok(())
}

fn check_rejected(error: &LoadError, root: &Path) -> Result<(), TestCaseError> {
    let message = error.to_string();
    prop_assert!(message.contains(&root.display().to_string()), "the error names no file of the package: {message}");
    prop_assert!(!message.trim().is_empty());
    Ok(())
}

proptest! {
    #![proptest_config(proptest_config())]

    #[test]
    fn random_packages_never_panic_and_every_error_names_a_file(spec in package_spec()) {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("pkg");
        build(&root, &spec);
        match specgap_task::load(&root) {
            Ok(package) => check_accepted(&package, &root)?,
            Err(error) => check_rejected(&error, &root)?,
        }
    }
}

/// The generator reaches both outcomes: an unmutated spec loads (format 1 and 2, with and
/// without delivery and requirements), and a mutated one can fail.
#[test]
fn unmutated_generated_packages_load() {
    for (format_2, delivery, requirements) in [(false, false, 0), (true, true, 2), (true, false, 1), (false, true, 2)] {
        let spec =
            PackageSpec { format_2, delivery, requirements, clarifications: true, user: true, residual: true, damage: vec![], odd: vec![] };
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("pkg");
        build(&root, &spec);
        let package = specgap_task::load(&root).unwrap_or_else(|e| panic!("{spec:?}: {e}"));
        check_accepted(&package, &root).unwrap();
        assert_eq!(package.format(), if format_2 { 2 } else { 1 });
        assert_eq!(package.delivery_schema().is_some(), format_2 && delivery);
    }
    let spec = PackageSpec {
        format_2: false,
        delivery: false,
        requirements: 0,
        clarifications: false,
        user: false,
        residual: false,
        damage: vec![(Part::Task, FileSpec::Text("format = [".into()))],
        odd: vec![Odd::Symlink("workspace/l", "l")],
    };
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("pkg");
    build(&root, &spec);
    let error = specgap_task::load(&root).unwrap_err();
    check_rejected(&error, &root).unwrap();
}
