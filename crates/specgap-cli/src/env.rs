//! `specgap env build|list|prune`: task environments from container images turned into
//! read-only root filesystems in a content-addressed cache (`specgap_env`).

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::Context as _;
use specgap_env::{EngineChoice, EnvCache};

/// Arguments of `specgap env`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: EnvCommand,
}

#[derive(Debug, clap::Subcommand)]
enum EnvCommand {
    /// Build (or find) the root filesystem of every image environment below the paths, the
    /// evaluator's own image included, in $XDG_CACHE_HOME/specgap/env/ (default ~/.cache/...).
    Build {
        /// Task packages or suites.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// Container engine for `image` and `dockerfile` environments: auto (podman, else
        /// docker, else none), podman, docker, or none (specgap pulls an `image` from its
        /// registry itself; a `dockerfile` cannot be built).
        #[arg(long, default_value = "auto")]
        engine: EngineChoice,
    },
    /// List the cached root filesystems: key, source, who built it, size.
    List,
    /// Remove cached root filesystems, all but the keys given with --keep, and the engine's
    /// tags of the images `env build` built from Dockerfiles (localhost/specgap-env/build:*),
    /// all but those of kept keys.
    Prune {
        /// A cache key to keep (repeatable), as `specgap env list` prints it.
        #[arg(long)]
        keep: Vec<String>,
        /// Container engine whose build tags are removed: auto (podman, else docker), podman,
        /// docker, or none (the cache only).
        #[arg(long, default_value = "auto")]
        engine: EngineChoice,
    },
}

/// Runs `specgap env`.
pub fn exec(args: Args) -> anyhow::Result<ExitCode> {
    let cache = EnvCache::new(EnvCache::default_root()?);
    match args.command {
        EnvCommand::Build { paths, engine } => build(&cache, &paths, engine),
        EnvCommand::List => list(&cache),
        EnvCommand::Prune { keep, engine } => prune(&cache, keep, engine),
    }
}

fn build(cache: &EnvCache, paths: &[PathBuf], engine: EngineChoice) -> anyhow::Result<ExitCode> {
    let packages = specgap_task::discover(paths)?;
    let mut built_any = false;
    for package in &packages {
        let Some(image) = package.image_environment() else {
            println!("{}: host-command environment (nothing to build)", package.name());
            continue;
        };
        let mut sources = vec![("environment", &image.source)];
        if let Some(own) = &image.evaluator_source {
            sources.push(("evaluator environment", own));
        }
        for (what, source) in sources {
            let started = Instant::now();
            let built = cache.build(&source.source, source.path.as_deref(), engine).with_context(|| {
                format!("{}: cannot build its {what} ({} `{}`)", package.name(), source.source.key(), source.source.value())
            })?;
            let how = if built.cached { "cached".to_string() } else { format!("built in {:.1} s", started.elapsed().as_secs_f64()) };
            println!("{}: {what} {} {how}: {}", package.name(), built.key, built.rootfs.display());
            if let Some(manifest) = &built.manifest {
                println!("{}: {what} pulled from its registry without an engine: manifest {manifest}", package.name());
            }
            built_any = true;
        }
    }
    if !built_any {
        println!("no image environment below the given paths");
    }
    Ok(ExitCode::SUCCESS)
}

fn list(cache: &EnvCache) -> anyhow::Result<ExitCode> {
    let entries = cache.list()?;
    println!("environments in {}", cache.root().display());
    println!("{:<24} {:<10} {:<8} {:>10}  first built from", "key", "source", "by", "MiB");
    for entry in &entries {
        let meta = &entry.meta;
        let key: String = meta.key.chars().take(24).collect();
        let mib = meta.bytes as f64 / (1024.0 * 1024.0);
        println!("{key:<24} {:<10} {:<8} {mib:>10.1}  {}", meta.source, meta.built_by, meta.value);
    }
    if entries.is_empty() {
        println!("(none)");
    }
    Ok(ExitCode::SUCCESS)
}

fn prune(cache: &EnvCache, keep: Vec<String>, engine: EngineChoice) -> anyhow::Result<ExitCode> {
    let keep: BTreeSet<String> = keep.into_iter().collect();
    let pruned = cache.prune(&keep)?;
    let removed = pruned.entries;
    for key in &removed {
        println!("removed {key}");
    }
    for name in &pruned.staging_removed {
        println!("removed {name} (the staging tree of a build that was killed)");
    }
    for name in &pruned.staging_kept {
        println!("kept {name} (the staging tree of a build that may still run)");
    }
    let untagged = specgap_env::prune_build_tags(engine, &keep).context("cannot remove the engine's build tags")?;
    for tag in &untagged {
        println!("untagged {tag}");
    }
    println!("{} removed, {} kept", removed.len(), keep.len());
    Ok(ExitCode::SUCCESS)
}
