//! An image episode's whole machine (issue 25 item 4; seed 001 §3 and App. B, the
//! Terminal-Bench track).
//!
//! Every sandboxed episode of an image task runs on a copy-on-write machine
//! ([`specgap_sandbox::Machine`]): the agent's commands may change any of the image's files,
//! and those changes are part of what it delivers. At each submission, while the agent is
//! suspended, the machine's changes are written as an OCI layer (`submissions/<k>/machine.tar`
//! in the store when there are any) and the evaluator runs on the image with that layer over
//! it — a copy, so nothing the evaluator does reaches the agent's machine. A residual start
//! whose state has a `machine.tar` starts from the image with that layer over it.
//!
//! The layer holds files only: processes do not survive from a predecessor to its
//! continuation (seed 001 restores process-level checkpoints; docs/fidelity.md lists the
//! deviation).

use std::path::{Path, PathBuf};

use specgap_env::EnvCache;
use specgap_sandbox::{HostView, LayerSummary, Machine};

use crate::episode::EpisodeError;

/// An episode's machine: the copy-on-write root its commands run on, and the plain view of
/// the root it starts from (the image, or the image with a residual state's layer).
#[derive(Debug)]
pub(crate) struct EpisodeMachine {
    machine: Machine,
    plain: HostView,
    /// The sha256 of the layer last submitted (`None`: nothing submitted with changes yet).
    submitted: Option<String>,
}

/// A submission's machine: its layer on disk and the view its evaluator runs on.
pub(crate) struct MachineSnapshot {
    /// The layer written (absent from the store when it changes nothing).
    pub layer: PathBuf,
    /// What it holds.
    pub summary: LayerSummary,
    /// The view to evaluate on: `plain` with the layer over it, or `plain` itself.
    pub host: HostView,
}

impl EpisodeMachine {
    /// The machine of an episode whose commands' view is `plain`, or `None` for a host-command
    /// task or an unsandboxed run (which runs no image).
    ///
    /// # Errors
    /// A deterministic infrastructure error when overlayfs cannot be mounted here.
    pub(crate) fn for_view(plain: &HostView, sandboxed: bool) -> Result<Option<EpisodeMachine>, EpisodeError> {
        if plain.rootfs().is_none() || !sandboxed {
            return Ok(None);
        }
        let machine =
            Machine::new().map_err(|e| EpisodeError::infrastructure("cannot make the episode's copy-on-write machine", true, e))?;
        Ok(Some(EpisodeMachine { machine, plain: plain.clone(), submitted: None }))
    }

    /// The machine's upper directory (what its sandboxes changed), measured with the
    /// workspace against the episode's caps (issue 31 item 1).
    pub(crate) fn upper(&self) -> PathBuf {
        self.machine.upper()
    }

    /// The view the agent's commands run on: the plain view on the machine.
    ///
    /// # Errors
    /// An infrastructure error for a layer path overlayfs cannot take.
    pub(crate) fn view(&self) -> Result<HostView, EpisodeError> {
        self.plain.with_machine(&self.machine).map_err(|e| EpisodeError::infrastructure("cannot place the episode's machine", true, e))
    }

    /// Writes the machine's changes to `layer` and returns the view to evaluate them on.
    ///
    /// # Errors
    /// Infrastructure errors writing the layer or stacking it on the image.
    pub(crate) fn snapshot(&self, layer: &Path) -> Result<MachineSnapshot, EpisodeError> {
        let summary = self.write(layer)?;
        let host = if summary.is_empty() { self.plain.clone() } else { layered_view(&self.plain, layer)? };
        Ok(MachineSnapshot { layer: layer.to_path_buf(), summary, host })
    }

    /// Whether the machine differs from what the last submission delivered (checked by
    /// writing its layer to `scratch`, then removed).
    ///
    /// # Errors
    /// Infrastructure errors writing the layer.
    pub(crate) fn changed_since_submission(&self, scratch: &Path) -> Result<bool, EpisodeError> {
        let summary = self.write(scratch)?;
        let digest = if summary.is_empty() { None } else { Some(file_digest(scratch)?) };
        let _ = std::fs::remove_file(scratch);
        Ok(digest != self.submitted)
    }

    /// Records that `snapshot` was delivered by a submission.
    pub(crate) fn submitted(&mut self, snapshot: &MachineSnapshot) -> Result<(), EpisodeError> {
        self.submitted = if snapshot.summary.is_empty() { None } else { Some(file_digest(&snapshot.layer)?) };
        Ok(())
    }

    fn write(&self, layer: &Path) -> Result<LayerSummary, EpisodeError> {
        let failed = |e: std::io::Error| EpisodeError::infrastructure("cannot write the machine's layer", false, e);
        if let Some(parent) = layer.parent() {
            fs_err::create_dir_all(parent).map_err(failed)?;
        }
        let file = fs_err::File::create(layer).map_err(failed)?;
        let lower = self.plain.rootfs().unwrap_or(Path::new("/"));
        self.machine
            .write_layer(lower, std::io::BufWriter::new(file), &self.plain.machine_mount_points())
            .map_err(|e| EpisodeError::infrastructure("cannot write the machine's layer", false, e))
    }
}

/// `plain` (an image view) with `layer` over its root, stacked in the user's environment cache.
///
/// # Errors
/// Infrastructure errors of the cache and the view.
pub(crate) fn layered_view(plain: &HostView, layer: &Path) -> Result<HostView, EpisodeError> {
    let root = plain.rootfs().ok_or_else(|| EpisodeError::Infrastructure {
        message: "a machine layer needs an image environment".into(),
        deterministic: true,
        source: None,
    })?;
    let cache = EnvCache::default_root().map_err(|e| EpisodeError::infrastructure("cannot place the environment cache", true, e))?;
    let layered = EnvCache::new(cache)
        .layered(root, layer)
        .map_err(|e| EpisodeError::infrastructure("cannot stack the machine layer on the image", false, e))?;
    plain.with_root(&layered.rootfs).map_err(|e| EpisodeError::infrastructure("cannot place the machine layer", true, e))
}

fn file_digest(path: &Path) -> Result<String, EpisodeError> {
    specgap_env::oci::sha256_file(path).map_err(|e| EpisodeError::infrastructure("cannot read the machine's layer", false, e))
}
