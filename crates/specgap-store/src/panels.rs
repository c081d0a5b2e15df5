//! Model-panel rows (schema version 4; docs/store-schema.md "Version 4"): the panel
//! configurations verdicts were made with, every ballot, and the extraction panel's verdicts.
//!
//! A judge or extractor step writes one episode at a time in one transaction — its ballots
//! together with the verdicts they make — so an interrupted step leaves whole episodes or
//! nothing, and running it again picks up where it stopped. A live question detector writes
//! its ballots through [`crate::EpisodeWriter::record_ballots`] as each reply is voted on.

use rusqlite::{OptionalExtension, Transaction, params};

use crate::error::{ExecuteCached, SqlContext, StoreError, json_error};
use crate::read;
use crate::rows::{Ballot, BallotRow, Extraction, ExtractionRow, Judgement, PanelRecord, VoteRow};
use crate::store::Store;

const INSERT_BALLOT: &str = "INSERT OR REPLACE INTO ballots (episode, panel, subject, seat, model, position,
        prompt_version, outcome, vote, request, response, error)
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)";

const INSERT_JUDGEMENT: &str = "INSERT OR REPLACE INTO judgements (episode, judge, target, verdict, matched_question_indices)
     VALUES (?1, ?2, ?3, ?4, ?5)";

const INSERT_EXTRACTION: &str = "INSERT OR REPLACE INTO extractions (episode, panel, k, status, score, success, valid,
        objective, signature, routes, agreeing)
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)";

impl Store {
    /// Records (or replaces) a panel configuration. Its name is a hash of its content, so
    /// recording the same panel again changes nothing.
    ///
    /// # Errors
    /// JSON and SQLite errors.
    pub fn record_panel(&self, panel: &PanelRecord) -> Result<(), StoreError> {
        let config = serde_json::to_string(&panel.config).map_err(json_error("panels.config"))?;
        self.conn()
            .execute_cached(
                "INSERT OR REPLACE INTO panels (name, use, config, prompt_version, prompt_hash) VALUES (?1, ?2, ?3, ?4, ?5)",
                params![panel.name, panel.use_.as_str(), config, panel.prompt_version, panel.prompt_hash],
            )
            .at(self.db_path())?;
        Ok(())
    }

    /// Records a coverage panel's work on episode `id` in one transaction: its `ballots` and
    /// the `judgements` they make (replacing earlier rows with the same keys).
    ///
    /// # Errors
    /// [`StoreError::UnknownEpisode`] when the episode is not in the store (nothing is
    /// written); JSON and SQLite errors.
    pub fn record_panel_judgements(&self, id: &str, ballots: &[Ballot], judgements: &[Judgement]) -> Result<(), StoreError> {
        self.in_episode_transaction(id, |tx, path| {
            insert_ballots(tx, path, id, ballots)?;
            for j in judgements {
                let indices =
                    serde_json::to_string(&j.matched_question_indices).map_err(json_error("judgements.matched_question_indices"))?;
                tx.execute_cached(INSERT_JUDGEMENT, params![id, j.judge, j.target, j.verdict, indices]).at(path)?;
            }
            Ok(())
        })
    }

    /// Records an extraction panel's work on one submission of episode `id` in one
    /// transaction: its `ballots` and the `extractions` verdict they make.
    ///
    /// # Errors
    /// [`StoreError::UnknownEpisode`]; JSON and SQLite errors.
    pub fn record_extraction(&self, id: &str, ballots: &[Ballot], extraction: &Extraction) -> Result<(), StoreError> {
        self.in_episode_transaction(id, |tx, path| {
            insert_ballots(tx, path, id, ballots)?;
            let e = extraction;
            tx.execute_cached(
                INSERT_EXTRACTION,
                params![
                    id,
                    e.panel,
                    e.k,
                    e.status.as_str(),
                    e.score,
                    e.success,
                    e.valid,
                    e.objective,
                    e.signature.map(signature_text),
                    e.routes,
                    e.agreeing
                ],
            )
            .at(path)?;
            Ok(())
        })
    }

    /// Records ballots of episode `id` (a live detector's, one agent reply at a time).
    ///
    /// # Errors
    /// [`StoreError::UnknownEpisode`]; JSON and SQLite errors.
    pub fn record_ballots(&self, id: &str, ballots: &[Ballot]) -> Result<(), StoreError> {
        self.in_episode_transaction(id, |tx, path| insert_ballots(tx, path, id, ballots))
    }

    /// Every panel configuration, by name.
    ///
    /// # Errors
    /// SQLite and JSON errors.
    pub fn panels(&self) -> Result<Vec<PanelRecord>, StoreError> {
        read::PANELS.read(&self.conn(), self.db_path(), None)
    }

    /// Every ballot with its request and response, by (episode, panel, subject, seat).
    ///
    /// # Errors
    /// SQLite and JSON errors.
    pub fn ballots(&self) -> Result<Vec<BallotRow>, StoreError> {
        read::BALLOTS.read(&self.conn(), self.db_path(), None)
    }

    /// The ballots of episode `id`, with requests and responses.
    ///
    /// # Errors
    /// SQLite and JSON errors.
    pub fn ballots_of(&self, id: &str) -> Result<Vec<BallotRow>, StoreError> {
        read::BALLOTS.read(&self.conn(), self.db_path(), Some(id))
    }

    /// Every ballot without its request and response.
    ///
    /// # Errors
    /// SQLite and JSON errors.
    pub fn votes(&self) -> Result<Vec<VoteRow>, StoreError> {
        read::VOTES.read(&self.conn(), self.db_path(), None)
    }

    /// Every extraction verdict, by (episode, panel, k).
    ///
    /// # Errors
    /// SQLite errors; [`StoreError::BadValue`] for an unknown status or signature.
    pub fn extractions(&self) -> Result<Vec<ExtractionRow>, StoreError> {
        read::EXTRACTIONS.read(&self.conn(), self.db_path(), None)
    }

    /// Runs `write` in one transaction after checking that episode `id` exists.
    fn in_episode_transaction(
        &self,
        id: &str,
        write: impl FnOnce(&Transaction<'_>, &std::path::Path) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        let path = self.db_path().to_path_buf();
        let mut conn = self.conn();
        let tx = conn.transaction().at(&path)?;
        let known: Option<i64> = tx.query_row("SELECT 1 FROM episodes WHERE id = ?1", [id], |r| r.get(0)).optional().at(&path)?;
        if known.is_none() {
            return Err(StoreError::UnknownEpisode { id: id.to_string() });
        }
        write(&tx, &path)?;
        tx.commit().at(&path)
    }
}

fn insert_ballots(tx: &Transaction<'_>, path: &std::path::Path, id: &str, ballots: &[Ballot]) -> Result<(), StoreError> {
    for b in ballots {
        let vote = b.vote.as_ref().map(serde_json::to_string).transpose().map_err(json_error("ballots.vote"))?;
        let request = serde_json::to_string(&b.request).map_err(json_error("ballots.request"))?;
        let response = serde_json::to_string(&b.response).map_err(json_error("ballots.response"))?;
        tx.execute_cached(
            INSERT_BALLOT,
            params![
                id,
                b.panel,
                b.subject,
                b.seat,
                b.model,
                b.position,
                b.prompt_version,
                b.outcome.as_str(),
                vote,
                request,
                response,
                b.error
            ],
        )
        .at(path)?;
    }
    Ok(())
}

/// A signature's stored text (its serde name).
fn signature_text(signature: specgap_protocol::result::Signature) -> String {
    serde_json::to_value(signature).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default()
}
