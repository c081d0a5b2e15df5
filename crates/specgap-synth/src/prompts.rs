//! The role prompts (the four roles and the Auditor's sufficiency episode): built-in files in this project's own words (following seed 000
//! App. E.1–E.4's role contracts), replaceable by files of the same name in a `--prompts`
//! directory.
//!
//! A prompt is a template: `{name}` placeholders listed in `docs/synthesize.md` are filled by
//! [`fill`]; any other `{word}` stays as written.

use std::path::{Path, PathBuf};

use crate::role::RoleName;

/// The file names a `--prompts` directory may hold.
pub const PROMPT_FILES: [&str; 5] = ["planner.md", "builder.md", "auditor.md", "calibrator.md", "implementer.md"];

/// Why a prompts directory cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PromptError {
    /// The directory or a file in it could not be read.
    #[error("cannot read the prompts at {}", path.display())]
    Read {
        /// The directory or file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The directory holds a file that replaces no prompt.
    #[error("{} replaces no synthesize prompt; the names are {}", path.display(), PROMPT_FILES.join(", "))]
    Unknown {
        /// The stray entry.
        path: PathBuf,
    },
}

/// The prompt of each role.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prompts {
    /// `planner.md`.
    pub planner: String,
    /// `builder.md`.
    pub builder: String,
    /// `auditor.md`.
    pub auditor: String,
    /// `calibrator.md`.
    pub calibrator: String,
    /// `implementer.md` (the sufficiency episode).
    pub implementer: String,
}

impl Default for Prompts {
    fn default() -> Self {
        Prompts {
            planner: include_str!("../prompts/planner.md").to_owned(),
            builder: include_str!("../prompts/builder.md").to_owned(),
            auditor: include_str!("../prompts/auditor.md").to_owned(),
            calibrator: include_str!("../prompts/calibrator.md").to_owned(),
            implementer: include_str!("../prompts/implementer.md").to_owned(),
        }
    }
}

impl Prompts {
    /// The built-in prompts with each file of `dir` replacing the one of its name.
    ///
    /// # Errors
    /// [`PromptError::Read`] for an unreadable directory or file, [`PromptError::Unknown`] for
    /// an entry that is not one of [`PROMPT_FILES`].
    pub fn with_dir(dir: &Path) -> Result<Prompts, PromptError> {
        let read_err = |path: &Path| {
            let path = path.to_owned();
            move |source| PromptError::Read { path, source }
        };
        let mut prompts = Prompts::default();
        let mut entries: Vec<PathBuf> =
            fs_err::read_dir(dir).map_err(read_err(dir))?.map(|e| e.map(|e| e.path())).collect::<Result<_, _>>().map_err(read_err(dir))?;
        entries.sort();
        for path in entries {
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
            let slot = match name {
                "planner.md" => &mut prompts.planner,
                "builder.md" => &mut prompts.builder,
                "auditor.md" => &mut prompts.auditor,
                "calibrator.md" => &mut prompts.calibrator,
                "implementer.md" => &mut prompts.implementer,
                _ => return Err(PromptError::Unknown { path }),
            };
            *slot = fs_err::read_to_string(&path).map_err(read_err(path.as_path()))?;
        }
        Ok(prompts)
    }

    /// The template of `role`.
    pub fn template(&self, role: RoleName) -> &str {
        match role {
            RoleName::Planner => &self.planner,
            RoleName::Builder => &self.builder,
            RoleName::Auditor => &self.auditor,
            RoleName::Calibrator => &self.calibrator,
            RoleName::Implementer => &self.implementer,
        }
    }
}

/// Replaces each `{name}` of `values` in `template`.
pub fn fill(template: &str, values: &[(&str, String)]) -> String {
    values.iter().fold(template.to_owned(), |text, (name, value)| text.replace(&format!("{{{name}}}"), value))
}
