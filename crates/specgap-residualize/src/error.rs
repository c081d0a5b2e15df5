//! The one error type of the pipeline: every failure names the directory, file, row or state
//! concerned, and loses nothing already stored (each stage writes its result only once it is
//! complete, and the build records each state as soon as it is validated).

use std::path::PathBuf;

/// Everything that can stop a stage of the pipeline. A candidate that fails a criterion is
/// not an error: it is counted in the funnel.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ResidualizeError {
    /// A file operation failed; `fs_err` errors already name the path.
    #[error(transparent)]
    Io(#[from] std::io::Error),

    /// A source run could not be read.
    #[error("cannot read the run in {dir}")]
    Store {
        /// The run directory.
        dir: PathBuf,
        /// The store's error.
        #[source]
        source: Box<specgap_store::StoreError>,
    },

    /// A source run is still being generated (its runner lock is held).
    #[error("episodes are still running into {dir}; wait for `specgap run` / `residualize generate` to end, then run this again")]
    SourceRunning {
        /// The run directory.
        dir: PathBuf,
    },

    /// Another `specgap residualize` works on the same directory.
    #[error("another specgap residualize process{} works on {dir}; wait for it to end", pid.map_or_else(String::new, |p| format!(" (pid {p})")))]
    Busy {
        /// The pipeline directory.
        dir: PathBuf,
        /// The holder's pid, when its lock file says.
        pid: Option<u32>,
    },

    /// No source run was given and the pipeline directory is not a run either.
    #[error(
        "{dir} is not a run directory and no --from RUN was given; name the predecessor runs with --from (or run `specgap residualize generate` into {dir})"
    )]
    NoSources {
        /// The pipeline directory.
        dir: PathBuf,
    },

    /// An ignore rule is not a glob.
    #[error(transparent)]
    BadIgnoreRule(#[from] Box<crate::ignore::BadIgnoreRule>),

    /// A stored stage file could not be parsed.
    #[error("{path} is damaged or was written by another specgap: {message}")]
    BadStageFile {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        message: String,
    },

    /// This invocation asks for something other than what the pipeline directory was made
    /// with (other source runs, other ignore rules, another build target).
    #[error("{dir} was made with {what} {stored}, not {given}; use a new directory to change it")]
    ConfigMismatch {
        /// The pipeline directory.
        dir: PathBuf,
        /// Which setting differs, in words.
        what: &'static str,
        /// The stored value.
        stored: String,
        /// The value given now.
        given: String,
    },

    /// The candidates computed now differ from those already reviewed: a source run gained or
    /// changed episodes after the review sheets were imported.
    #[error(
        "the candidates of the source runs changed since they were reviewed ({detail}); reviews cannot be carried over: use a new directory"
    )]
    CandidatesChanged {
        /// What changed, in words.
        detail: String,
    },

    /// One task name appears with two package versions among the candidates.
    #[error(
        "task {task} appears with two package versions among the candidates ({first} and {second}); residualize runs of one version at a time"
    )]
    TaskVersions {
        /// Task name.
        task: String,
        /// One content hash.
        first: String,
        /// The other.
        second: String,
    },

    /// A review sheet is malformed or does not cover the candidates.
    #[error("review sheet {path}{}: {message}", row.map_or_else(String::new, |r| format!(" row {r}")))]
    Sheet {
        /// The sheet.
        path: PathBuf,
        /// 1-based line of the row concerned (the header is line 1), if any.
        row: Option<u64>,
        /// What is wrong, lowercase.
        message: String,
    },

    /// The review flags are not two distinct `NAME=SHEET` pairs.
    #[error("{0}")]
    ReviewFlags(String),

    /// Reviews differ from those the build already used.
    #[error(
        "states were already built from the reviews imported on {dir}; importing other sheets now would mix verdicts: use a new directory"
    )]
    ReviewsFrozen {
        /// The pipeline directory.
        dir: PathBuf,
    },

    /// A task package of a candidate cannot be loaded or is not the version the run used.
    #[error("task {task}: {message}")]
    Package {
        /// Task name.
        task: String,
        /// What is wrong, lowercase.
        message: String,
    },

    /// A package failed to load.
    #[error("cannot load task package {path}")]
    Load {
        /// The package directory.
        path: PathBuf,
        /// The loader's error.
        #[source]
        source: Box<specgap_task::LoadError>,
    },

    /// The build target holds something this pipeline did not write.
    #[error("{path} exists and was not written by this pipeline; choose another --write-to directory")]
    TargetOccupied {
        /// The occupied path.
        path: PathBuf,
    },

    /// A residual state directory in the target package exists with other contents.
    #[error("residual state {id} already exists in {package} with other contents; remove it or choose another target")]
    StateExists {
        /// State id.
        id: String,
        /// The target package directory.
        package: PathBuf,
    },

    /// The sandbox or evaluator cannot be set up at all (not one state's failure).
    #[error("cannot prepare the sandbox for validation")]
    Sandbox(#[source] Box<dyn std::error::Error + Send + Sync>),

    /// A stage file could not be written as JSON or TOML.
    #[error("cannot write {path}: {message}")]
    Serialize {
        /// The file.
        path: PathBuf,
        /// The serializer's complaint.
        message: String,
    },
}

impl ResidualizeError {
    pub(crate) fn store(dir: &std::path::Path) -> impl FnOnce(specgap_store::StoreError) -> ResidualizeError + '_ {
        move |source| ResidualizeError::Store { dir: dir.to_path_buf(), source: Box::new(source) }
    }
}
