//! `specgap run` on a batch scheduler (docs/scale-out.md): `--shard auto` from the
//! scheduler's environment, the plan hash every shard records, `--publish DIR` once a shard
//! has ended, and a warning when the run store would sit on a network file system.

use std::path::Path;

use anyhow::{Context as _, bail};
use specgap_engine::runner::{Plan, Shard};
use specgap_protocol::run::RunConfig;
use specgap_store::Store;

/// The shard of `--shard i/n` or `--shard auto` (with `--shards N`), `None` without `--shard`.
/// `auto` reads the scheduler's variables ([`Shard::from_scheduler`]) and says on stderr
/// which shard it found and from what.
pub fn shard_flag(shard: Option<&str>, shards: Option<u32>) -> anyhow::Result<Option<Shard>> {
    match shard {
        Some("auto") => {
            let scheduled = Shard::from_scheduler(|name| std::env::var(name).ok(), shards)?;
            let Shard { index, count } = scheduled.shard;
            eprintln!("shard {index}/{count} from the {} ({})", scheduled.scheduler.describe(), scheduled.read.join(", "));
            Ok(Some(scheduled.shard))
        }
        Some(text) => {
            if shards.is_some() {
                bail!("--shards N goes with --shard auto (the count of `--shard {text}` is its own n)");
            }
            Ok(Some(Shard::parse(text)?))
        }
        None if shards.is_some() => bail!("--shards N goes with --shard auto"),
        None => Ok(None),
    }
}

/// Checks that the sandbox's per-command process and memory limits can be applied here: with
/// `--require-limits` a limit that cannot is an error naming it and why; without, a warning on
/// stderr says the commands will run without it. With `cpu_limited` (a `--cpu-per-sandbox`
/// other than `off`), a note says once when the CPU limit falls back to a lower priority.
pub fn check_limits(required: bool, cpu_limited: bool) -> anyhow::Result<()> {
    if let Some(why) = specgap_sandbox::cpu_unavailable().filter(|_| cpu_limited) {
        eprintln!(
            "note: the per-sandbox CPU limit (cgroup `cpu`) cannot be applied here ({why}); sandboxed commands run at a lower scheduling priority (nice {}) instead",
            specgap_sandbox::FALLBACK_NICE
        );
    }
    let missing = specgap_sandbox::runner::Limits::default().unavailable();
    if missing.is_empty() {
        return Ok(());
    }
    let list = missing.join("; ");
    if required {
        bail!(
            "--require-limits: the per-command limits cannot be applied here: {list}. Run as root, or in a cgroup with `pids` and `memory` delegated (docs/scale-out.md \"Process and memory limits\")"
        );
    }
    eprintln!(
        "warning: sandboxed commands will run without their per-command limits, which cannot be applied here: {list}. Only the scheduler's limits on the whole run bind them; pass --require-limits to refuse instead (docs/scale-out.md \"Process and memory limits\")"
    );
    Ok(())
}

/// Records the plan's hash in a new run's configuration (`run.toml` `plan_hash`).
pub fn record_plan(config: &mut RunConfig, plan: &Plan) {
    config.plan_hash = Some(plan.hash.clone());
}

/// Checks that the plan rebuilt for `--resume` is the plan the run was made with (when the
/// run recorded one): its tasks and agents are checked already, so a difference means this
/// build plans differently, and resuming would run episodes the stored ones do not belong with.
pub fn check_resumed_plan(config: &RunConfig, plan: &Plan) -> anyhow::Result<()> {
    match &config.plan_hash {
        Some(stored) if *stored != plan.hash => bail!(
            "the plan rebuilt from run.toml differs from the plan the run was made with (plan hash {stored} in run.toml, {} now); this build of specgap plans the run differently, so resuming would mix plans",
            plan.hash
        ),
        _ => Ok(()),
    }
}

/// Warns when `out` is on a network file system, where SQLite's locking is unreliable.
pub fn warn_if_network_store(out: &Path) {
    if let Some(kind) = specgap_store::network_filesystem(out) {
        eprintln!(
            "warning: the run store {} is on a network file system ({kind}); SQLite's locks are unreliable there and the store can be corrupted — keep --out on this machine's local disk and copy the finished run to shared storage with --publish DIR (docs/scale-out.md)",
            out.display()
        );
    }
}

/// The name a run is published under in `--publish DIR`: `shard-<i>-of-<n>` for a shard (so
/// the shards of one run sit side by side and `specgap merge DIR` finds them), else the run
/// directory's own name.
pub fn publish_name(config: &RunConfig, out: &Path) -> anyhow::Result<String> {
    if let Some([index, count]) = config.shard {
        return Ok(format!("shard-{index}-of-{count}"));
    }
    let dir = fs_err::canonicalize(out)?;
    let name = dir.file_name().context("the run directory has no name to publish it under")?;
    Ok(name.to_string_lossy().into_owned())
}

/// Publishes the ended run `store` into `dir` and says where it went.
pub fn publish(store: &Store, dir: &Path) -> anyhow::Result<()> {
    let name = publish_name(store.config(), store.dir())?;
    let published = specgap_store::publish(store, dir, &name)
        .with_context(|| format!("cannot publish {} to {}", store.dir().display(), dir.display()))?;
    eprintln!("published the run to {}", published.display());
    Ok(())
}
