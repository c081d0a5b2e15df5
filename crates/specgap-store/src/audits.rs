//! Audit rows (schema version 5; docs/store-schema.md "Version 5"): drawn audit samples and
//! their items, every rater's imported labels, and the replies `specgap resample` got.
//!
//! What the rows mean belongs to `specgap-audit` (rubrics, units, strata); the store only
//! keeps them, one transaction per sample drawn, per sheet imported and per resample.

use rusqlite::{OptionalExtension, params};
use serde_json::Value;
use specgap_protocol::event::Usage;

use crate::error::{ExecuteCached, SqlContext, StoreError, json_error};
use crate::store::Store;

/// A drawn audit sample (`audit_samples`).
#[derive(Debug, Clone, PartialEq)]
pub struct AuditSampleRecord {
    /// `sample:` and 12 hex digits of the SHA-256 of its manifest.
    pub id: String,
    /// The unit kind sampled (`episode`, `failed-episode`, `question`, …).
    pub unit: String,
    /// The rubric's name.
    pub rubric: String,
    /// Everything that drew it (JSON object; `specgap-audit`'s `Manifest`).
    pub manifest: Value,
}

/// One item of a sample (`audit_items`).
#[derive(Debug, Clone, PartialEq)]
pub struct AuditItemRecord {
    /// The item's id, unique in the sample (the unit's id).
    pub item: String,
    /// 0-based row of the item in the label sheet.
    pub position: u32,
    /// 0-based index of the run it comes from among the sample's runs.
    pub run: u32,
    /// The episode it belongs to, when any.
    pub episode: Option<String>,
    /// Its stratum: the values of the sample's `--by` fields, joined.
    pub stratum: String,
    /// Its case (the cluster the bootstrap resamples).
    pub cluster: String,
    /// Its weight: the stratum's population over its sample size.
    pub weight: f64,
    /// Automatic judges' labels of the item (JSON object: judge → label column → value).
    pub judges: Value,
}

/// One rater's imported sheet (`audit_sheets`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditSheetRecord {
    /// The rater's name.
    pub rater: String,
    /// The sheet file as given.
    pub path: String,
    /// Hex SHA-256 of its bytes.
    pub sha256: String,
    /// Item rows read.
    pub rows: u32,
}

/// One label one rater gave one item (`audit_labels`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditLabelRecord {
    /// The item.
    pub item: String,
    /// The rater.
    pub rater: String,
    /// The rubric's label column.
    pub label: String,
    /// The value given (one of the column's values, or free text for a note).
    pub value: String,
}

/// One resample of a recorded user-model request (`resamples`).
#[derive(Debug, Clone, PartialEq)]
pub struct ResampleRecord {
    /// The episode whose trajectory holds the request.
    pub episode: String,
    /// The audit sample the resamples were drawn for (their label sheet).
    pub batch: String,
    /// The request's number (`user_request.request`).
    pub request: u32,
    /// 1-based resample number.
    pub k: u32,
    /// What the recorded reply was for: `answer` or `feedback` (`user_request.purpose`).
    pub purpose: String,
    /// The reply text (trimmed), or `None` when the request failed.
    pub reply: Option<String>,
    /// Why it failed, lowercase.
    pub error: Option<String>,
    /// Its usage, all of it the user model's (`resamples.role` is `user`).
    pub usage: Usage,
}

impl Store {
    /// Records a drawn sample with its items in one transaction. A sample already stored
    /// under the same id (the same manifest) is left as it is.
    ///
    /// # Errors
    /// JSON and SQLite errors.
    pub fn record_audit_sample(&self, sample: &AuditSampleRecord, items: &[AuditItemRecord]) -> Result<(), StoreError> {
        let path = self.db_path().to_path_buf();
        let mut conn = self.conn();
        let tx = conn.transaction().at(&path)?;
        let known: Option<i64> =
            tx.query_row("SELECT 1 FROM audit_samples WHERE id = ?1", [&sample.id], |r| r.get(0)).optional().at(&path)?;
        if known.is_some() {
            return Ok(());
        }
        let manifest = serde_json::to_string(&sample.manifest).map_err(json_error("audit_samples.manifest"))?;
        tx.execute_cached(
            "INSERT INTO audit_samples (id, unit, rubric, manifest) VALUES (?1, ?2, ?3, ?4)",
            params![sample.id, sample.unit, sample.rubric, manifest],
        )
        .at(&path)?;
        for item in items {
            let judges = serde_json::to_string(&item.judges).map_err(json_error("audit_items.judges"))?;
            tx.execute_cached(
                "INSERT INTO audit_items (sample, item, position, run, episode, stratum, cluster, weight, judges)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
                params![sample.id, item.item, item.position, item.run, item.episode, item.stratum, item.cluster, item.weight, judges],
            )
            .at(&path)?;
        }
        tx.commit().at(&path)
    }

    /// Every stored sample, by id.
    ///
    /// # Errors
    /// SQLite and JSON errors.
    pub fn audit_samples(&self) -> Result<Vec<AuditSampleRecord>, StoreError> {
        let path = self.db_path();
        let conn = self.conn();
        let mut stmt = conn.prepare("SELECT id, unit, rubric, manifest FROM audit_samples ORDER BY id").at(path)?;
        let rows = stmt
            .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?, r.get::<_, String>(2)?, r.get::<_, String>(3)?)))
            .at(path)?
            .collect::<Result<Vec<_>, _>>()
            .at(path)?;
        rows.into_iter()
            .map(|(id, unit, rubric, manifest)| {
                let manifest = serde_json::from_str(&manifest).map_err(json_error("audit_samples.manifest"))?;
                Ok(AuditSampleRecord { id, unit, rubric, manifest })
            })
            .collect()
    }

    /// The items of sample `id`, in sheet order.
    ///
    /// # Errors
    /// SQLite and JSON errors.
    pub fn audit_items(&self, id: &str) -> Result<Vec<AuditItemRecord>, StoreError> {
        let path = self.db_path();
        let conn = self.conn();
        let mut stmt = conn
            .prepare(
                "SELECT item, position, run, episode, stratum, cluster, weight, judges FROM audit_items
                 WHERE sample = ?1 ORDER BY position",
            )
            .at(path)?;
        let rows = stmt
            .query_map([id], |r| {
                Ok((
                    AuditItemRecord {
                        item: r.get(0)?,
                        position: r.get(1)?,
                        run: r.get(2)?,
                        episode: r.get(3)?,
                        stratum: r.get(4)?,
                        cluster: r.get(5)?,
                        weight: r.get(6)?,
                        judges: Value::Null,
                    },
                    r.get::<_, String>(7)?,
                ))
            })
            .at(path)?
            .collect::<Result<Vec<_>, _>>()
            .at(path)?;
        rows.into_iter()
            .map(|(mut item, judges)| {
                item.judges = serde_json::from_str(&judges).map_err(json_error("audit_items.judges"))?;
                Ok(item)
            })
            .collect()
    }

    /// Records one rater's labels of sample `sample` in one transaction.
    ///
    /// # Errors
    /// [`StoreError::DuplicateRater`] when the rater's labels of the sample are stored already
    /// (nothing is written); SQLite errors, also for an item not in the sample.
    pub fn record_audit_labels(&self, sample: &str, sheet: &AuditSheetRecord, labels: &[AuditLabelRecord]) -> Result<(), StoreError> {
        self.store_audit_labels(sample, sheet, labels, false).map(|_| ())
    }

    /// Records one rater's labels of sample `sample` in one transaction, in place of the
    /// labels and sheet that rater imported for it before (a corrected sheet); returns whether
    /// there were any.
    ///
    /// # Errors
    /// SQLite errors, also for an item not in the sample (nothing is changed then).
    pub fn replace_audit_labels(&self, sample: &str, sheet: &AuditSheetRecord, labels: &[AuditLabelRecord]) -> Result<bool, StoreError> {
        self.store_audit_labels(sample, sheet, labels, true)
    }

    fn store_audit_labels(
        &self,
        sample: &str,
        sheet: &AuditSheetRecord,
        labels: &[AuditLabelRecord],
        replace: bool,
    ) -> Result<bool, StoreError> {
        let path = self.db_path().to_path_buf();
        let mut conn = self.conn();
        let tx = conn.transaction().at(&path)?;
        let known: Option<i64> = tx
            .query_row("SELECT 1 FROM audit_sheets WHERE sample = ?1 AND rater = ?2", [sample, &sheet.rater], |r| r.get(0))
            .optional()
            .at(&path)?;
        match (known.is_some(), replace) {
            (true, false) => return Err(StoreError::DuplicateRater { sample: sample.to_string(), rater: sheet.rater.clone() }),
            (true, true) => {
                tx.execute("DELETE FROM audit_labels WHERE sample = ?1 AND rater = ?2", [sample, &sheet.rater]).at(&path)?;
                tx.execute("DELETE FROM audit_sheets WHERE sample = ?1 AND rater = ?2", [sample, &sheet.rater]).at(&path)?;
            }
            (false, _) => {}
        }
        let now = i64::try_from(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis()))
            .unwrap_or(i64::MAX);
        tx.execute_cached(
            "INSERT INTO audit_sheets (sample, rater, path, sha256, rows, imported_ts) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![sample, sheet.rater, sheet.path, sheet.sha256, sheet.rows, now],
        )
        .at(&path)?;
        for l in labels {
            tx.execute_cached(
                "INSERT INTO audit_labels (sample, item, rater, label, value) VALUES (?1, ?2, ?3, ?4, ?5)",
                params![sample, l.item, l.rater, l.label, l.value],
            )
            .at(&path)?;
        }
        tx.commit().at(&path)?;
        Ok(known.is_some())
    }

    /// The sheets imported for sample `sample`, by rater.
    ///
    /// # Errors
    /// SQLite errors.
    pub fn audit_sheets(&self, sample: &str) -> Result<Vec<AuditSheetRecord>, StoreError> {
        let path = self.db_path();
        let conn = self.conn();
        let mut stmt = conn.prepare("SELECT rater, path, sha256, rows FROM audit_sheets WHERE sample = ?1 ORDER BY rater").at(path)?;
        stmt.query_map([sample], |r| Ok(AuditSheetRecord { rater: r.get(0)?, path: r.get(1)?, sha256: r.get(2)?, rows: r.get(3)? }))
            .at(path)?
            .collect::<Result<Vec<_>, _>>()
            .at(path)
    }

    /// Every label of sample `sample`, by (item, rater, label).
    ///
    /// # Errors
    /// SQLite errors.
    pub fn audit_labels(&self, sample: &str) -> Result<Vec<AuditLabelRecord>, StoreError> {
        let path = self.db_path();
        let conn = self.conn();
        let mut stmt =
            conn.prepare("SELECT item, rater, label, value FROM audit_labels WHERE sample = ?1 ORDER BY item, rater, label").at(path)?;
        stmt.query_map([sample], |r| Ok(AuditLabelRecord { item: r.get(0)?, rater: r.get(1)?, label: r.get(2)?, value: r.get(3)? }))
            .at(path)?
            .collect::<Result<Vec<_>, _>>()
            .at(path)
    }

    /// Records (or replaces) one resample.
    ///
    /// # Errors
    /// [`StoreError::UnknownEpisode`]; JSON and SQLite errors.
    pub fn record_resample(&self, row: &ResampleRecord) -> Result<(), StoreError> {
        let usage = serde_json::to_string(&row.usage).map_err(json_error("resamples.usage"))?;
        let path = self.db_path();
        let conn = self.conn();
        let known: Option<i64> =
            conn.query_row("SELECT 1 FROM episodes WHERE id = ?1", [&row.episode], |r| r.get(0)).optional().at(path)?;
        if known.is_none() {
            return Err(StoreError::UnknownEpisode { id: row.episode.clone() });
        }
        conn.execute_cached(
            "INSERT OR REPLACE INTO resamples (episode, batch, request, k, purpose, role, reply, error, usage)
             VALUES (?1, ?2, ?3, ?4, ?5, 'user', ?6, ?7, ?8)",
            params![row.episode, row.batch, row.request, row.k, row.purpose, row.reply, row.error, usage],
        )
        .at(path)?;
        Ok(())
    }

    /// Every resample, by (episode, batch, request, k).
    ///
    /// # Errors
    /// SQLite and JSON errors.
    pub fn resamples(&self) -> Result<Vec<ResampleRecord>, StoreError> {
        let path = self.db_path();
        let conn = self.conn();
        let mut stmt = conn
            .prepare("SELECT episode, batch, request, k, purpose, reply, error, usage FROM resamples ORDER BY episode, batch, request, k")
            .at(path)?;
        let rows = stmt
            .query_map([], |r| {
                Ok((
                    ResampleRecord {
                        episode: r.get(0)?,
                        batch: r.get(1)?,
                        request: r.get(2)?,
                        k: r.get(3)?,
                        purpose: r.get(4)?,
                        reply: r.get(5)?,
                        error: r.get(6)?,
                        usage: Usage::default(),
                    },
                    r.get::<_, String>(7)?,
                ))
            })
            .at(path)?
            .collect::<Result<Vec<_>, _>>()
            .at(path)?;
        rows.into_iter()
            .map(|(mut row, usage)| {
                row.usage = serde_json::from_str(&usage).map_err(json_error("resamples.usage"))?;
                Ok(row)
            })
            .collect()
    }
}
