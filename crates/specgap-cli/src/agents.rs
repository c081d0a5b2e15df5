//! `specgap agents install <adapter>[@version]` and `specgap agents list`: external agent
//! CLIs (`cli:<adapter>`) installed from the package registries into a versioned cache
//! (`specgap_adapters`).

use std::process::ExitCode;

use anyhow::Context as _;
use specgap_adapters::install::{InstallOptions, Installed, ListedState, note_to_stderr};
use specgap_adapters::{ADAPTERS, AdapterVersion};

/// Arguments of `specgap agents`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: AgentsCommand,
}

#[derive(Debug, clap::Subcommand)]
enum AgentsCommand {
    /// Install an agent CLI at its pinned version (or `@<version>` with a committed lock)
    /// into $XDG_CACHE_HOME/specgap/agents/<adapter>/<version>/ (default ~/.cache/...).
    Install {
        /// `<adapter>[@<version>]`: mini-swe-agent, claude-code, codex, opencode, gemini-cli, openhands.
        adapter: String,
        /// Install again even when a complete, unchanged installation exists.
        #[arg(long)]
        force: bool,
    },
    /// List installed agent CLIs: version, tree hash, whether it is the pinned default.
    List,
}

/// Runs `specgap agents`.
pub fn exec(args: Args) -> anyhow::Result<ExitCode> {
    match args.command {
        AgentsCommand::Install { adapter, force } => install(&adapter, force),
        AgentsCommand::List => list(),
    }
}

fn install(reference: &str, force: bool) -> anyhow::Result<ExitCode> {
    let version = AdapterVersion::parse(reference)?;
    let root = specgap_adapters::default_root()?;
    let (installation, what) =
        specgap_adapters::install(&root, &version, &InstallOptions { force, ..InstallOptions::default() }, &mut note_to_stderr)
            .with_context(|| format!("cannot install {}", version.label()))?;
    let verb = match what {
        Installed::Made => "installed",
        Installed::AlreadyThere => "already installed",
    };
    println!("{} {verb} in {} (tree hash {})", version.label(), installation.dir().display(), installation.tree_hash());
    Ok(ExitCode::SUCCESS)
}

fn list() -> anyhow::Result<ExitCode> {
    let root = specgap_adapters::default_root()?;
    let listed = specgap_adapters::list(&root)?;
    println!("agents in {}", root.display());
    println!("{:<16} {:<10} {:<8} {:<14} state", "adapter", "version", "pinned", "tree hash");
    for entry in &listed {
        let (hash, state) = match &entry.state {
            ListedState::Ready(m) => (short(&m.tree_hash), "ready".to_string()),
            ListedState::Modified(m) => (short(&m.tree_hash), "files changed since installed (checked again before a run)".to_string()),
            ListedState::Incomplete => {
                ("-".to_string(), format!("incomplete: install again with `specgap agents install {}@{}`", entry.adapter, entry.version))
            }
            ListedState::Unreadable(why) => ("-".to_string(), why.clone()),
        };
        let pinned = if entry.is_default { "yes" } else { "no" };
        println!("{:<16} {:<10} {:<8} {:<14} {}", entry.adapter, entry.version, pinned, hash, state);
    }
    let missing: Vec<String> = ADAPTERS
        .iter()
        .filter(|a| !listed.iter().any(|l| l.adapter == a.name && l.version == a.default_version))
        .map(|a| format!("{}@{}", a.name, a.default_version))
        .collect();
    if listed.is_empty() {
        println!("(none installed)");
    }
    if !missing.is_empty() {
        println!("not installed at their pinned version: {} (specgap agents install <adapter>)", missing.join(", "));
    }
    Ok(ExitCode::SUCCESS)
}

fn short(hash: &str) -> String {
    hash.chars().take(12).collect()
}
