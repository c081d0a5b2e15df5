//! Prompt files a user can replace (`specgap run --prompts DIR`), so a run can use a paper's
//! exact wording while specgap's own prompts stay in its own words (DESIGN §4 "Prompts").
//!
//! Every prompt specgap sends is one *prompt file* with a fixed name: the engine's system
//! prompts and condition blocks ([`SYSTEM_PROMPT_FILES`], the files of `src/prompts/`) and the
//! simulated owner's and customer's prompts (`specgap_agents::chat::user::USER_PROMPT_FILES`).
//! A [`Replacements`] set maps some of those names to the user's texts. Replacement texts are
//! templates like the built-in ones: the same `{name}` placeholders are filled (each module
//! documents its placeholders; an unknown `{word}` stays as written).
//!
//! A run stores its replacements in the configuration of each component that uses them —
//! every agent's table gets the system prompts, a `chat:` user's table the user prompts — under
//! the key [`CONFIG_KEY`], as `name = { sha256 = "…", text = "…" }`
//! ([`Replacements::to_config`]). The component hash covers them, so replaced prompts key new
//! episodes, and `--resume` reads the stored texts back ([`Replacements::from_config`]) instead
//! of the directory.

use std::collections::BTreeMap;

use sha2::{Digest as _, Sha256};

/// The key of a component's configuration table that holds its replaced prompts.
pub const CONFIG_KEY: &str = "prompts";

/// One prompt file: its name in a `--prompts` directory, its built-in text, and what it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PromptFile {
    /// File name (`evidence.md`).
    pub name: &'static str,
    /// The built-in text (a template).
    pub builtin: &'static str,
    /// What the prompt is, in a few words (for `--help` and errors).
    pub purpose: &'static str,
}

/// The engine's prompt files: the system prompt of each condition and the condition blocks of
/// the delivery prompt (`crates/specgap-engine/src/prompts/`).
pub const SYSTEM_PROMPT_FILES: &[PromptFile] = &[
    PromptFile {
        name: "evidence.md",
        builtin: include_str!("prompts/evidence.md"),
        purpose: "system prompt of partial and full (seed 000 F.1)",
    },
    PromptFile { name: "literal.md", builtin: include_str!("prompts/literal.md"), purpose: "system prompt of literal (seed 000 F.2)" },
    PromptFile {
        name: "plan.md",
        builtin: include_str!("prompts/plan.md"),
        purpose: "system prompt of plan's planning phase (seed 000 F.3)",
    },
    PromptFile {
        name: "plan_execute.md",
        builtin: include_str!("prompts/plan_execute.md"),
        purpose: "system prompt of plan's execution phase, after write_plan (seed 000 F.3)",
    },
    PromptFile {
        name: "neutral.md",
        builtin: include_str!("prompts/neutral.md"),
        purpose: "system prompt of blind: neutral, nothing about missing information or earlier work (seed 001 §3.2)",
    },
    PromptFile {
        name: "delivery.md",
        builtin: include_str!("prompts/delivery.md"),
        purpose: "system prompt of the delivery conditions, around their condition block (seed 002 A.9.1)",
    },
    PromptFile { name: "delivery_hidden.md", builtin: include_str!("prompts/delivery_hidden.md"), purpose: "condition block of hidden" },
    PromptFile {
        name: "delivery_interact.md",
        builtin: include_str!("prompts/delivery_interact.md"),
        purpose: "condition block of interact",
    },
    PromptFile {
        name: "delivery_interact_req.md",
        builtin: include_str!("prompts/delivery_interact_req.md"),
        purpose: "condition block of interact-req",
    },
    PromptFile {
        name: "delivery_full_info.md",
        builtin: include_str!("prompts/delivery_full_info.md"),
        purpose: "condition block of full-info",
    },
    PromptFile { name: "delivery_oracle.md", builtin: include_str!("prompts/delivery_oracle.md"), purpose: "condition block of oracle:R" },
    ROUND_LIMIT_REPLY_FILE,
    NO_TOOL_REMINDER_FILE,
    NO_TOOL_REMINDER_GOES_ON_FILE,
    REFUSAL_REMINDER_FILE,
    CONTINUATION_FILE,
    PLAN_SAVED_FILE,
    UNLOCK_FILE,
    crate::tools::TOOL_LIST_FILES_FILE,
    crate::tools::TOOL_READ_TEXT_FILE,
    crate::tools::TOOL_WRITE_TEXT_FILE,
    crate::tools::TOOL_REPLACE_TEXT_FILE,
    crate::tools::TOOL_RUN_PROJECT_FILE,
    crate::tools::TOOL_RUN_EXPERIMENT_FILE,
    crate::tools::TOOL_BASH_FILE,
    crate::tools::TOOL_ASK_USER_FILE,
    crate::tools::TOOL_SUBMIT_FILE,
    crate::tools::TOOL_WRITE_PLAN_FILE,
];

/// The harness's reminder after a reply without a tool call under a protocol whose
/// no-tool-call rule ends the episode on the next ([`crate::episode::NO_TOOL_REMINDER`]).
/// Harness messages are used trimmed and have no placeholders.
pub const NO_TOOL_REMINDER_FILE: PromptFile = PromptFile {
    name: "no_tool_reminder.md",
    builtin: crate::episode::NO_TOOL_REMINDER,
    purpose: "the reminder after a reply without a tool call, when the next such reply ends the work",
};
/// The reminder after a reply without a tool call under a protocol without that end rule
/// ([`crate::episode::NO_TOOL_REMINDER_GOES_ON`]; seed 000).
pub const NO_TOOL_REMINDER_GOES_ON_FILE: PromptFile = PromptFile {
    name: "no_tool_reminder_goes_on.md",
    builtin: crate::episode::NO_TOOL_REMINDER_GOES_ON,
    purpose: "the reminder after a reply without a tool call, under a protocol where the work goes on (seed 000)",
};
/// The reminder after a refusal ([`crate::episode::REFUSAL_REMINDER`]).
pub const REFUSAL_REMINDER_FILE: PromptFile = PromptFile {
    name: "refusal_reminder.md",
    builtin: crate::episode::REFUSAL_REMINDER,
    purpose: "the reminder after a refusal or content-filter stop",
};
/// The push to deliver after a text-only reply while no deliverable exists
/// ([`crate::text_channel::CONTINUATION`]; seed 002 A.9.3).
pub const CONTINUATION_FILE: PromptFile = PromptFile {
    name: "continuation.md",
    builtin: crate::text_channel::CONTINUATION,
    purpose: "the message after a delivery reply without a tool call or a question while no deliverable exists (seed 002 A.9.3)",
};
/// The result of a successful `write_plan` ([`crate::episode::PLAN_SAVED`]; seed 000 App. F.3).
pub const PLAN_SAVED_FILE: PromptFile = PromptFile {
    name: "plan_saved.md",
    builtin: crate::episode::PLAN_SAVED,
    purpose: "the result of a successful write_plan (seed 000 App. F.3)",
};
/// The `ask_user` result that unlocks work under `interact-req+gate=on`
/// ([`crate::episode::UNLOCK_ACKNOWLEDGEMENT`]).
pub const UNLOCK_FILE: PromptFile = PromptFile {
    name: "unlock_acknowledgement.md",
    builtin: crate::episode::UNLOCK_ACKNOWLEDGEMENT,
    purpose: "the reply that unlocks the work under interact-req+gate=on",
};

/// The customer's reply to a clarification round past the delivery round limit, on every
/// channel (the text exchange, `ask_user`, a CLI's own question tool; seed 002 §4.1, A.9.3).
/// Its built-in text is [`crate::episode::PROCEED_REPLY`]; a replacement is used trimmed.
pub const ROUND_LIMIT_REPLY_FILE: PromptFile = PromptFile {
    name: "round_limit_reply.md",
    builtin: crate::episode::PROCEED_REPLY,
    purpose: "the customer's reply to questions past the clarification-round limit (seed 002 A.9.3)",
};

/// Lowercase hex sha256 of a text.
pub fn sha256_hex(text: &str) -> String {
    Sha256::digest(text.as_bytes()).iter().map(|b| format!("{b:02x}")).collect()
}

/// Why stored replacements cannot be read back.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PromptFileError {
    /// The `prompts` table or one of its entries does not have the stored shape.
    #[error("the stored prompt `{name}` is not a table with `sha256` and `text` strings")]
    Shape {
        /// The entry (or `prompts` for the table itself).
        name: String,
    },
    /// A stored text whose sha256 is not the one stored beside it (an edited run.toml).
    #[error("the stored prompt `{name}` does not match its sha256 (run.toml was edited?)")]
    Hash {
        /// The entry.
        name: String,
    },
}

/// Replaced prompt texts by file name (module guide). Names are not checked here: whoever
/// builds the set from a directory rejects unknown names (`specgap_agents::prompt_dir`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Replacements {
    texts: BTreeMap<String, String>,
}

impl Replacements {
    /// No replacements: every prompt is specgap's own.
    pub fn none() -> Self {
        Replacements::default()
    }

    /// Replaces prompt `name` by `text`.
    pub fn insert(&mut self, name: impl Into<String>, text: impl Into<String>) {
        self.texts.insert(name.into(), text.into());
    }

    /// The replacement of `name`, if any.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.texts.get(name).map(String::as_str)
    }

    /// The text of `file`: its replacement, else its built-in text.
    pub fn text(&self, file: &PromptFile) -> &str {
        self.get(file.name).unwrap_or(file.builtin)
    }

    /// Whether nothing is replaced.
    pub fn is_empty(&self) -> bool {
        self.texts.is_empty()
    }

    /// The replaced names, sorted.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.texts.keys().map(String::as_str)
    }

    /// The replacements among `files` only.
    pub fn among(&self, files: &[PromptFile]) -> Replacements {
        let texts = self
            .texts
            .iter()
            .filter(|(name, _)| files.iter().any(|f| f.name == name.as_str()))
            .map(|(name, text)| (name.clone(), text.clone()))
            .collect();
        Replacements { texts }
    }

    /// The table stored under [`CONFIG_KEY`]: `name = { sha256, text }` per replacement.
    pub fn to_config(&self) -> toml::Table {
        self.texts
            .iter()
            .map(|(name, text)| {
                let mut entry = toml::Table::new();
                entry.insert("sha256".into(), toml::Value::String(sha256_hex(text)));
                entry.insert("text".into(), toml::Value::String(text.clone()));
                (name.clone(), toml::Value::Table(entry))
            })
            .collect()
    }

    /// Adds the [`CONFIG_KEY`] table to a component's configuration (nothing when empty).
    pub fn store_in(&self, config: &mut toml::Table) {
        if !self.is_empty() {
            config.insert(CONFIG_KEY.into(), toml::Value::Table(self.to_config()));
        }
    }

    /// The replacements stored in a component's configuration (none without [`CONFIG_KEY`]).
    ///
    /// # Errors
    /// [`PromptFileError`] when the table has another shape or a text does not match its hash.
    pub fn from_config(config: &toml::Table) -> Result<Self, PromptFileError> {
        let Some(value) = config.get(CONFIG_KEY) else { return Ok(Replacements::none()) };
        let table = value.as_table().ok_or_else(|| PromptFileError::Shape { name: CONFIG_KEY.into() })?;
        let mut texts = BTreeMap::new();
        for (name, entry) in table {
            let shape = || PromptFileError::Shape { name: name.clone() };
            let entry = entry.as_table().ok_or_else(shape)?;
            let text = entry.get("text").and_then(toml::Value::as_str).ok_or_else(shape)?;
            let hash = entry.get("sha256").and_then(toml::Value::as_str).ok_or_else(shape)?;
            if hash != sha256_hex(text) {
                return Err(PromptFileError::Hash { name: name.clone() });
            }
            texts.insert(name.clone(), text.to_string());
        }
        Ok(Replacements { texts })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replacements_round_trip_through_a_config_table_with_their_hashes() {
        let mut r = Replacements::none();
        r.insert("evidence.md", "Be careful.\n");
        let mut config = toml::Table::new();
        r.store_in(&mut config);
        let entry = config["prompts"]["evidence.md"].as_table().unwrap();
        // sha256 of "Be careful.\n" (printf 'Be careful.\n' | sha256sum).
        assert_eq!(entry["sha256"].as_str(), Some("82e0757e52fd9e2295f9f005460633ad3f3e6eb41af7acef9a6f4997f9ae4b41"));
        assert_eq!(entry["text"].as_str(), Some("Be careful.\n"));
        assert_eq!(Replacements::from_config(&config).unwrap(), r);
        assert_eq!(Replacements::from_config(&toml::Table::new()).unwrap(), Replacements::none());
    }

    #[test]
    fn an_edited_stored_text_is_refused() {
        let mut r = Replacements::none();
        r.insert("plan.md", "Plan first.");
        let mut config = toml::Table::new();
        r.store_in(&mut config);
        let text = "Plan later.".to_string();
        config
            .get_mut("prompts")
            .and_then(|p| p.get_mut("plan.md"))
            .and_then(toml::Value::as_table_mut)
            .unwrap()
            .insert("text".into(), toml::Value::String(text));
        assert_eq!(Replacements::from_config(&config), Err(PromptFileError::Hash { name: "plan.md".into() }));
    }

    #[test]
    fn every_system_prompt_file_exists_once() {
        let mut names: Vec<_> = SYSTEM_PROMPT_FILES.iter().map(|f| f.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), SYSTEM_PROMPT_FILES.len());
        assert!(SYSTEM_PROMPT_FILES.iter().all(|f| !f.builtin.trim().is_empty()));
    }
}
