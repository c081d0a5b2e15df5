//! Table readers of `results.sqlite`: one [`Reader`] per table, run on any connection.
//!
//! Bulk reads (every row of a table, for reports) scan the table in storage order and sort
//! in memory by the primary key. `ORDER BY <primary key>` on these rowid tables walks the
//! primary-key index and looks each row up in the table by rowid — one B-tree search per row
//! (BENCHMARKS.md, "Reports"). The in-memory order is SQLite's: text compares bytewise (BINARY
//! collation) and integers numerically, which is how Rust orders `String` and `u32`. Reads of
//! one episode (`WHERE episode = ?1`) keep `ORDER BY`, which the index serves directly.
//!
//! Enum columns are parsed from the borrowed column text with serde's string deserializer
//! (no intermediate `String` or `serde_json::Value`).

use std::cmp::Ordering;
use std::path::Path;

use rusqlite::types::ValueRef;
use rusqlite::{Connection, Row};
use serde::Deserialize;
use serde::de::value::{Error as NameError, StrDeserializer};

use crate::error::{SqlContext, StoreError, json_error};
use crate::rows::*;

/// How to read one table: the SELECT (no WHERE, no ORDER BY), the column naming the episode
/// (for reads of one episode), the primary-key order as SQL and as a comparator, the text of
/// the key's first column (for sorting, [`sort_by_key_order`]), and the row mapper. Columns
/// are read by index, in the SELECT's order.
pub(crate) struct Reader<T> {
    sql: &'static str,
    filter_column: &'static str,
    order: &'static str,
    cmp: fn(&T, &T) -> Ordering,
    first_key: fn(&T) -> &str,
    map: fn(&Row<'_>, &Path) -> Result<T, StoreError>,
}

impl<T> Reader<T> {
    /// Every row (with `filter`: the rows whose filter column equals it), in primary-key
    /// order. Statements are prepared once per connection (rusqlite's statement cache).
    ///
    /// # Errors
    /// SQLite errors at `path`; whatever the row mapper returns.
    pub(crate) fn read(&self, conn: &Connection, path: &Path, filter: Option<&str>) -> Result<Vec<T>, StoreError> {
        let mut out = Vec::new();
        match filter {
            Some(value) => {
                let sql = format!("{} WHERE {} = ?1 ORDER BY {}", self.sql, self.filter_column, self.order);
                let mut stmt = conn.prepare_cached(&sql).at(path)?;
                let mut rows = stmt.query([value]).at(path)?;
                while let Some(row) = rows.next().at(path)? {
                    out.push(self.map_row(row, path)?);
                }
            }
            None => {
                let mut stmt = conn.prepare_cached(self.sql).at(path)?;
                let mut rows = stmt.query([]).at(path)?;
                while let Some(row) = rows.next().at(path)? {
                    out.push(self.map_row(row, path)?);
                }
                sort_by_key_order(&mut out, self.first_key, self.cmp);
            }
        }
        Ok(out)
    }
}

impl<T> Reader<T> {
    /// Maps one row; a row that cannot be read is named by its key (the first column: the
    /// episode id for every table but `panels` and `not_applicable`).
    fn map_row(&self, row: &Row<'_>, path: &Path) -> Result<T, StoreError> {
        (self.map)(row, path).map_err(|source| StoreError::BadRow {
            path: path.to_path_buf(),
            table: self.table(),
            key_name: match self.filter_column {
                "id" | "episode" => "episode",
                "name" => "panel",
                other => other,
            },
            key: match row.get_ref(0) {
                Ok(ValueRef::Text(bytes)) => String::from_utf8_lossy(bytes).into_owned(),
                Ok(ValueRef::Integer(n)) => n.to_string(),
                _ => "?".into(),
            },
            source: Box::new(source),
        })
    }

    /// The table the SELECT reads (its last word).
    fn table(&self) -> &'static str {
        self.sql.rsplit(' ').next().unwrap_or(self.sql)
    }

    /// The rows matching `clause` (a ` WHERE ...` with `?` placeholders bound to `values`, or
    /// empty) in `order` (SQL), at most `page.0` of them after skipping `page.1`.
    ///
    /// # Errors
    /// SQLite errors at `path`; whatever the row mapper returns.
    pub(crate) fn read_where(
        &self,
        conn: &Connection,
        path: &Path,
        clause: &str,
        order: &str,
        values: &[rusqlite::types::Value],
        page: (u64, u64),
    ) -> Result<Vec<T>, StoreError> {
        let sql = format!("{}{clause} ORDER BY {order} LIMIT ? OFFSET ?", self.sql);
        let mut bound: Vec<rusqlite::types::Value> = values.to_vec();
        bound.push(rusqlite::types::Value::Integer(crate::query::clamp(page.0)));
        bound.push(rusqlite::types::Value::Integer(crate::query::clamp(page.1)));
        let mut stmt = conn.prepare_cached(&sql).at(path)?;
        let mut rows = stmt.query(rusqlite::params_from_iter(bound.iter())).at(path)?;
        let mut out = Vec::new();
        while let Some(row) = rows.next().at(path)? {
            out.push(self.map_row(row, path)?);
        }
        Ok(out)
    }
}

/// Borrowed text of column `i` (NULL is an error: use [`opt_text`] for nullable columns).
fn text<'r>(r: &'r Row<'_>, i: usize, path: &Path) -> Result<&'r str, StoreError> {
    let value = r.get_ref(i).at(path)?;
    value.as_str().map_err(|e| rusqlite::Error::FromSqlConversionFailure(i, value.data_type(), Box::new(e))).at(path)
}

/// Borrowed text of nullable column `i`.
fn opt_text<'r>(r: &'r Row<'_>, i: usize, path: &Path) -> Result<Option<&'r str>, StoreError> {
    match r.get_ref(i).at(path)? {
        ValueRef::Null => Ok(None),
        _ => text(r, i, path).map(Some),
    }
}

/// Column `i` parsed as JSON, named `what` in errors. `empty` is the text the writer stores
/// for an empty value (`{}` or `[]`), which most rows hold: it maps to `T::default()` without
/// the parser (a million-episode store has over four million `requirement_outcomes.measured`
/// of `{}`).
fn json_column<T: for<'de> Deserialize<'de> + Default>(
    r: &Row<'_>,
    i: usize,
    path: &Path,
    what: &'static str,
    empty: &str,
) -> Result<T, StoreError> {
    let column = text(r, i, path)?;
    if column == empty {
        return Ok(T::default());
    }
    serde_json::from_str(column).map_err(json_error(what))
}

/// Parses a snake_case / lowercase enum name through its serde form, straight from the
/// borrowed column text.
fn parse_name<T: for<'de> Deserialize<'de>>(table: &'static str, column: &'static str, text: &str) -> Result<T, StoreError> {
    T::deserialize(StrDeserializer::<NameError>::new(text)).map_err(|_| StoreError::BadValue { table, column, value: text.to_string() })
}

/// Orders two texts exactly as `str::cmp` does (bytewise: SQLite's BINARY collation), faster
/// for the short keys of these tables: sorting a million episodes' rows by episode id spent
/// most of its time calling `memcmp` for 16-byte ids. The first eight bytes compare as one
/// integer ([`text_prefix`]); only texts equal there are compared whole.
fn text_cmp(a: &str, b: &str) -> Ordering {
    text_prefix(a).cmp(&text_prefix(b)).then_with(|| a.cmp(b))
}

/// The first eight bytes of `text` as a big-endian integer, zero-padded: `a <= b` implies
/// `text_prefix(a) <= text_prefix(b)` under bytewise order, so texts whose prefixes differ
/// are ordered by them alone.
fn text_prefix(text: &str) -> u64 {
    let mut bytes = [0u8; 8];
    let head = &text.as_bytes()[..text.len().min(8)];
    bytes[..head.len()].copy_from_slice(head);
    u64::from_be_bytes(bytes)
}

/// Sorts `rows` by `cmp` (a primary-key order, so no two rows are equal and the unstable
/// sort gives SQLite's order). Sorts a dense array of (prefix of the first key column, row
/// index) pairs, going to the rows only when two prefixes tie, then moves each row once: the
/// rows of `requirement_outcomes` are over a hundred bytes, and sorting them in place spent
/// most of a million-episode load's sort moving them between cache misses. A table already
/// in key order costs one linear pass.
fn sort_by_key_order<T>(rows: &mut [T], first_key: fn(&T) -> &str, cmp: fn(&T, &T) -> Ordering) {
    if rows.is_sorted_by(|a, b| cmp(a, b) != Ordering::Greater) {
        return;
    }
    let mut order: Vec<(u64, usize)> = rows.iter().enumerate().map(|(i, row)| (text_prefix(first_key(row)), i)).collect();
    order.sort_unstable_by(|a, b| a.0.cmp(&b.0).then_with(|| cmp(&rows[a.1], &rows[b.1])));
    let mut source: Vec<usize> = order.into_iter().map(|(_, i)| i).collect();
    permute(rows, &mut source);
}

/// Rearranges `rows` so that position `i` holds the row that was at `source[i]` (a
/// permutation of the positions), by following each cycle with swaps; `source` is used up.
fn permute<T>(rows: &mut [T], source: &mut [usize]) {
    for start in 0..rows.len() {
        let mut hole = start;
        // A position whose source is itself is in place, or was filled by an earlier cycle.
        while source[hole] != hole {
            let from = source[hole];
            source[hole] = hole;
            if from == start {
                break;
            }
            rows.swap(hole, from);
            hole = from;
        }
    }
}

/// `episodes`, by id.
pub(crate) const EPISODES: Reader<EpisodeRow> = Reader {
    sql: "SELECT id, task, task_hash, agent, agent_hash, user, user_hash, condition, start,
        repeat, seed, family, scoring_kind, status, end_reason, attempts, submissions, final_score,
        final_success, turns, tool_calls, wall_ms, started_ts, ended_ts, error FROM episodes",
    filter_column: "id",
    order: "id",
    cmp: |a, b| text_cmp(&a.id, &b.id),
    first_key: |r| &r.id,
    map: episode_row,
};

fn episode_row(r: &Row<'_>, path: &Path) -> Result<EpisodeRow, StoreError> {
    let seed = text(r, 10, path)?;
    Ok(EpisodeRow {
        id: r.get(0).at(path)?,
        task: r.get(1).at(path)?,
        task_hash: r.get(2).at(path)?,
        agent: r.get(3).at(path)?,
        agent_hash: r.get(4).at(path)?,
        user: r.get(5).at(path)?,
        user_hash: r.get(6).at(path)?,
        condition: r.get(7).at(path)?,
        start: r.get(8).at(path)?,
        repeat: r.get(9).at(path)?,
        seed: seed.parse().map_err(|_| StoreError::BadValue { table: "episodes", column: "seed", value: seed.to_string() })?,
        family: parse_name("episodes", "family", text(r, 11, path)?)?,
        scoring_kind: parse_name("episodes", "scoring_kind", text(r, 12, path)?)?,
        status: Status::parse(text(r, 13, path)?)?,
        end_reason: opt_text(r, 14, path)?.map(|e| parse_name("episodes", "end_reason", e)).transpose()?,
        attempts: r.get(15).at(path)?,
        submissions: r.get(16).at(path)?,
        final_score: r.get(17).at(path)?,
        final_success: r.get(18).at(path)?,
        turns: r.get(19).at(path)?,
        tool_calls: r.get(20).at(path)?,
        wall_ms: r.get(21).at(path)?,
        started_ts: r.get(22).at(path)?,
        ended_ts: r.get(23).at(path)?,
        error: r.get(24).at(path)?,
    })
}

/// `start_results`, by episode.
pub(crate) const START_RESULTS: Reader<StartResultRow> = Reader {
    sql: "SELECT episode, state, reward, score, success FROM start_results",
    filter_column: "episode",
    order: "episode",
    cmp: |a, b| a.episode.cmp(&b.episode),
    first_key: |r| &r.episode,
    map: |r, path| {
        Ok(StartResultRow {
            episode: r.get(0).at(path)?,
            state: r.get(1).at(path)?,
            reward: r.get(2).at(path)?,
            score: r.get(3).at(path)?,
            success: r.get(4).at(path)?,
        })
    },
};

/// `submissions`, by (episode, k).
pub(crate) const SUBMISSIONS: Reader<SubmissionRow> = Reader {
    sql: "SELECT episode, k, automatic, agent_declared, valid_evaluation, kind, score, success,
        reward, failing_requirement, error, diff_bytes FROM submissions",
    filter_column: "episode",
    order: "episode, k",
    cmp: |a, b| text_cmp(&a.episode, &b.episode).then(a.k.cmp(&b.k)),
    first_key: |r| &r.episode,
    map: |r, path| {
        Ok(SubmissionRow {
            episode: r.get(0).at(path)?,
            k: r.get(1).at(path)?,
            automatic: r.get(2).at(path)?,
            agent_declared: r.get(3).at(path)?,
            valid_evaluation: r.get(4).at(path)?,
            kind: opt_text(r, 5, path)?.map(|k| parse_name("submissions", "kind", k)).transpose()?,
            score: r.get(6).at(path)?,
            success: r.get(7).at(path)?,
            reward: r.get(8).at(path)?,
            failing_requirement: r.get(9).at(path)?,
            error: r.get(10).at(path)?,
            diff_bytes: r.get(11).at(path)?,
        })
    },
};

/// `requirement_outcomes`, by (episode, k, requirement).
pub(crate) const REQUIREMENT_OUTCOMES: Reader<RequirementOutcomeRow> = Reader {
    sql: "SELECT episode, k, requirement, pass, failure_mode, measured, detail
        FROM requirement_outcomes",
    filter_column: "episode",
    order: "episode, k, requirement",
    cmp: |a, b| text_cmp(&a.episode, &b.episode).then(a.k.cmp(&b.k)).then_with(|| a.requirement.cmp(&b.requirement)),
    first_key: |r| &r.episode,
    map: |r, path| {
        Ok(RequirementOutcomeRow {
            episode: r.get(0).at(path)?,
            k: r.get(1).at(path)?,
            requirement: r.get(2).at(path)?,
            pass: r.get(3).at(path)?,
            failure_mode: r.get(4).at(path)?,
            measured: json_column(r, 5, path, "requirement_outcomes.measured", "{}")?,
            detail: r.get(6).at(path)?,
        })
    },
};

/// `tests`, by (episode, k, test).
pub(crate) const TESTS: Reader<TestRow> = Reader {
    sql: "SELECT episode, k, test, outcome FROM tests",
    filter_column: "episode",
    order: "episode, k, test",
    cmp: |a, b| text_cmp(&a.episode, &b.episode).then(a.k.cmp(&b.k)).then_with(|| a.test.cmp(&b.test)),
    first_key: |r| &r.episode,
    map: |r, path| {
        Ok(TestRow {
            episode: r.get(0).at(path)?,
            k: r.get(1).at(path)?,
            test: r.get(2).at(path)?,
            outcome: parse_name("tests", "outcome", text(r, 3, path)?)?,
        })
    },
};

/// `deliveries`, by (episode, k).
pub(crate) const DELIVERIES: Reader<DeliveryRow> = Reader {
    sql: "SELECT episode, k, valid, objective, signature, violations FROM deliveries",
    filter_column: "episode",
    order: "episode, k",
    cmp: |a, b| (&a.episode, a.k).cmp(&(&b.episode, b.k)),
    first_key: |r| &r.episode,
    map: |r, path| {
        Ok(DeliveryRow {
            episode: r.get(0).at(path)?,
            k: r.get(1).at(path)?,
            valid: r.get(2).at(path)?,
            objective: r.get(3).at(path)?,
            signature: opt_text(r, 4, path)?.map(|s| parse_name("deliveries", "signature", s)).transpose()?,
            violations: json_column(r, 5, path, "deliveries.violations", "[]")?,
        })
    },
};

/// `questions`, by (episode, idx).
pub(crate) const QUESTIONS: Reader<QuestionRow> = Reader {
    sql: "SELECT episode, idx, turn, text, answer, matched_targets FROM questions",
    filter_column: "episode",
    order: "episode, idx",
    cmp: |a, b| (&a.episode, a.idx).cmp(&(&b.episode, b.idx)),
    first_key: |r| &r.episode,
    map: |r, path| {
        Ok(QuestionRow {
            episode: r.get(0).at(path)?,
            idx: r.get(1).at(path)?,
            question: Question {
                turn: r.get(2).at(path)?,
                text: r.get(3).at(path)?,
                answer: r.get(4).at(path)?,
                matched_targets: json_column(r, 5, path, "questions.matched_targets", "[]")?,
            },
        })
    },
};

/// `judgements`, by (episode, judge, target).
pub(crate) const JUDGEMENTS: Reader<JudgementRow> = Reader {
    sql: "SELECT episode, judge, target, verdict, matched_question_indices FROM judgements",
    filter_column: "episode",
    order: "episode, judge, target",
    cmp: |a, b| {
        let (x, y) = (&a.judgement, &b.judgement);
        text_cmp(&a.episode, &b.episode).then_with(|| (&x.judge, &x.target).cmp(&(&y.judge, &y.target)))
    },
    first_key: |r| &r.episode,
    map: |r, path| {
        Ok(JudgementRow {
            episode: r.get(0).at(path)?,
            judgement: Judgement {
                judge: r.get(1).at(path)?,
                target: r.get(2).at(path)?,
                verdict: r.get(3).at(path)?,
                matched_question_indices: json_column(r, 4, path, "judgements.matched_question_indices", "[]")?,
            },
        })
    },
};

/// `usage`, by (episode, attempt, role).
pub(crate) const USAGE: Reader<UsageRow> = Reader {
    sql: "SELECT episode, attempt, role, input_tokens, output_tokens, cached_tokens,
        reasoning_tokens, requests, retries, latency_ms, cost_usd FROM usage",
    filter_column: "episode",
    order: "episode, attempt, role",
    // SQLite orders `role` by its text; compare the text, not the enum's declaration order.
    cmp: |a, b| (&a.episode, a.attempt, a.role.as_str()).cmp(&(&b.episode, b.attempt, b.role.as_str())),
    first_key: |r| &r.episode,
    map: |r, path| {
        Ok(UsageRow {
            episode: r.get(0).at(path)?,
            attempt: r.get(1).at(path)?,
            role: Role::parse(text(r, 2, path)?)?,
            usage: specgap_protocol::event::Usage {
                input_tokens: r.get(3).at(path)?,
                output_tokens: r.get(4).at(path)?,
                cached_tokens: r.get(5).at(path)?,
                reasoning_tokens: r.get(6).at(path)?,
                requests: r.get(7).at(path)?,
                retries: r.get(8).at(path)?,
                latency_ms: r.get(9).at(path)?,
                cost_usd: r.get(10).at(path)?,
            },
        })
    },
};

/// `errors`, by (episode, attempt, idx).
pub(crate) const ERRORS: Reader<ErrorRow> = Reader {
    sql: "SELECT episode, attempt, idx, class, message, stderr_tail, deterministic FROM errors",
    filter_column: "episode",
    order: "episode, attempt, idx",
    cmp: |a, b| (&a.episode, a.attempt, a.idx).cmp(&(&b.episode, b.attempt, b.idx)),
    first_key: |r| &r.episode,
    map: |r, path| {
        Ok(ErrorRow {
            episode: r.get(0).at(path)?,
            attempt: r.get(1).at(path)?,
            idx: r.get(2).at(path)?,
            error: ErrorRecord {
                class: ErrorClass::parse(text(r, 3, path)?)?,
                message: r.get(4).at(path)?,
                stderr_tail: r.get(5).at(path)?,
                deterministic: r.get(6).at(path)?,
            },
        })
    },
};

/// `panels`, by name; never read per episode.
pub(crate) const PANELS: Reader<PanelRecord> = Reader {
    sql: "SELECT name, use, config, prompt_version, prompt_hash FROM panels",
    filter_column: "name",
    order: "name",
    cmp: |a, b| a.name.cmp(&b.name),
    first_key: |r| &r.name,
    map: |r, path| {
        Ok(PanelRecord {
            name: r.get(0).at(path)?,
            use_: parse_name("panels", "use", text(r, 1, path)?)?,
            config: serde_json::from_str(text(r, 2, path)?).map_err(json_error("panels.config"))?,
            prompt_version: r.get(3).at(path)?,
            prompt_hash: r.get(4).at(path)?,
        })
    },
};

fn vote_of(r: &Row<'_>, i: usize, path: &Path) -> Result<Option<serde_json::Value>, StoreError> {
    opt_text(r, i, path)?.map(|v| serde_json::from_str(v).map_err(json_error("ballots.vote"))).transpose()
}

/// `ballots` with requests and responses, by (episode, panel, subject, seat).
pub(crate) const BALLOTS: Reader<BallotRow> = Reader {
    sql: "SELECT episode, panel, subject, seat, model, position, prompt_version, outcome, vote,
        request, response, error FROM ballots",
    filter_column: "episode",
    order: "episode, panel, subject, seat",
    cmp: |a, b| {
        let (x, y) = (&a.ballot, &b.ballot);
        (&a.episode, &x.panel, &x.subject, x.seat).cmp(&(&b.episode, &y.panel, &y.subject, y.seat))
    },
    first_key: |r| &r.episode,
    map: |r, path| {
        Ok(BallotRow {
            episode: r.get(0).at(path)?,
            ballot: Ballot {
                panel: r.get(1).at(path)?,
                subject: r.get(2).at(path)?,
                seat: r.get(3).at(path)?,
                model: r.get(4).at(path)?,
                position: r.get(5).at(path)?,
                prompt_version: r.get(6).at(path)?,
                outcome: parse_name("ballots", "outcome", text(r, 7, path)?)?,
                vote: vote_of(r, 8, path)?,
                request: serde_json::from_str(text(r, 9, path)?).map_err(json_error("ballots.request"))?,
                response: serde_json::from_str(text(r, 10, path)?).map_err(json_error("ballots.response"))?,
                error: r.get(11).at(path)?,
            },
        })
    },
};

/// `ballots` without requests and responses (reports), by (episode, panel, subject, seat).
pub(crate) const VOTES: Reader<VoteRow> = Reader {
    sql: "SELECT episode, panel, subject, seat, model, outcome, vote FROM ballots",
    filter_column: "episode",
    order: "episode, panel, subject, seat",
    cmp: |a, b| (&a.episode, &a.panel, &a.subject, a.seat).cmp(&(&b.episode, &b.panel, &b.subject, b.seat)),
    first_key: |r| &r.episode,
    map: |r, path| {
        Ok(VoteRow {
            episode: r.get(0).at(path)?,
            panel: r.get(1).at(path)?,
            subject: r.get(2).at(path)?,
            seat: r.get(3).at(path)?,
            model: r.get(4).at(path)?,
            outcome: parse_name("ballots", "outcome", text(r, 5, path)?)?,
            vote: vote_of(r, 6, path)?,
        })
    },
};

/// `extractions`, by (episode, panel, k).
pub(crate) const EXTRACTIONS: Reader<ExtractionRow> = Reader {
    sql: "SELECT episode, panel, k, status, score, success, valid, objective, signature, routes,
        agreeing FROM extractions",
    filter_column: "episode",
    order: "episode, panel, k",
    cmp: |a, b| {
        let (x, y) = (&a.extraction, &b.extraction);
        (&a.episode, &x.panel, x.k).cmp(&(&b.episode, &y.panel, y.k))
    },
    first_key: |r| &r.episode,
    map: |r, path| {
        Ok(ExtractionRow {
            episode: r.get(0).at(path)?,
            extraction: Extraction {
                panel: r.get(1).at(path)?,
                k: r.get(2).at(path)?,
                status: parse_name("extractions", "status", text(r, 3, path)?)?,
                score: r.get(4).at(path)?,
                success: r.get(5).at(path)?,
                valid: r.get(6).at(path)?,
                objective: r.get(7).at(path)?,
                signature: opt_text(r, 8, path)?.map(|s| parse_name("extractions", "signature", s)).transpose()?,
                routes: r.get(9).at(path)?,
                agreeing: r.get(10).at(path)?,
            },
        })
    },
};

/// `not_applicable`, by (task, agent, condition, start); never read per episode.
pub(crate) const NOT_APPLICABLE: Reader<NotApplicableRow> = Reader {
    sql: "SELECT task, agent, condition, start, reason FROM not_applicable",
    filter_column: "task",
    order: "task, agent, condition, start",
    cmp: |a, b| (&a.task, &a.agent, &a.condition, &a.start).cmp(&(&b.task, &b.agent, &b.condition, &b.start)),
    first_key: |r| &r.task,
    map: |r, path| {
        Ok(NotApplicableRow {
            task: r.get(0).at(path)?,
            agent: r.get(1).at(path)?,
            condition: r.get(2).at(path)?,
            start: r.get(3).at(path)?,
            reason: r.get(4).at(path)?,
        })
    },
};

#[cfg(test)]
mod tests {
    use super::*;
    use specgap_protocol::result::{Signature, TestOutcome};
    use specgap_protocol::run::EndReason;
    use std::collections::BTreeMap;

    #[test]
    fn parse_name_reads_serde_names_and_rejects_others() {
        assert_eq!(parse_name::<EndReason>("episodes", "end_reason", "submission_budget").ok(), Some(EndReason::SubmissionBudget));
        assert_eq!(parse_name::<TestOutcome>("tests", "outcome", "skip").ok(), Some(TestOutcome::Skip));
        assert_eq!(parse_name::<Signature>("deliveries", "signature", "none").ok(), Some(Signature::None));
        let err = parse_name::<TestOutcome>("tests", "outcome", "Pass").err();
        assert_eq!(
            err.map(|e| e.to_string()),
            Some(StoreError::BadValue { table: "tests", column: "outcome", value: "Pass".into() }.to_string())
        );
    }

    #[test]
    fn text_cmp_orders_as_str_cmp() {
        let texts = [
            "",
            "a",
            "ab",
            "abcdefg",
            "abcdefgh",
            "abcdefgh0",
            "abcdefgi",
            "abcdefgh\u{0}",
            "abcdefghé",
            "abcdefgé",
            "d60176c8e39f1fb2",
            "d60176c8e39f1fb3",
            "d60176c8e39f1fb",
            "d60176c9",
            "D60176c8e39f1fb2",
            "é",
            "\u{7f}zzzzzzzz",
            "zzzzzzzz",
            "zzzzzzz",
            "ffffffffffffffff1",
            "ffffffffffffffff",
        ];
        for a in texts {
            for b in texts {
                assert_eq!(text_cmp(a, b), a.cmp(b), "{a:?} against {b:?}");
            }
        }
    }

    #[test]
    fn text_prefix_never_orders_two_texts_against_bytewise_order() {
        let texts = ["", "a", "a\u{0}", "ab", "abcdefgh", "abcdefgh0", "abcdefgi", "abcdefgé", "é", "zzzzzzz", "zzzzzzzz"];
        for a in texts {
            for b in texts {
                if a <= b {
                    assert!(text_prefix(a) <= text_prefix(b), "{a:?} before {b:?}");
                }
            }
        }
        assert_eq!(text_prefix("ab"), 0x6162_0000_0000_0000);
        assert_eq!(text_prefix("abcdefghij"), 0x6162_6364_6566_6768);
    }

    #[test]
    fn permute_puts_each_source_row_in_its_place() {
        // Cycles (0 2 4), (1 3), a fixed point 5, and a 2-cycle (6 7).
        let mut rows = vec!["a", "b", "c", "d", "e", "f", "g", "h"];
        let mut source = vec![2, 3, 4, 1, 0, 5, 7, 6];
        permute(&mut rows, &mut source);
        assert_eq!(rows, ["c", "d", "e", "b", "a", "f", "h", "g"]);
        let mut empty: Vec<u8> = Vec::new();
        permute(&mut empty, &mut []);
        assert!(empty.is_empty());
    }

    #[test]
    fn sorting_by_key_order_breaks_prefix_ties_with_the_whole_key() {
        let row = |episode: &str, k: u32, test: &str| TestRow { episode: episode.into(), k, test: test.into(), outcome: TestOutcome::Pass };
        let mut rows = vec![
            row("abcdefgh2", 1, "t"),
            row("abcdefgh10", 0, "t"),
            row("abcdefgh2", 0, "u"),
            row("abc", 3, "t"),
            row("abcdefgh2", 0, "t"),
        ];
        sort_by_key_order(&mut rows, TESTS.first_key, TESTS.cmp);
        let keys: Vec<(&str, u32, &str)> = rows.iter().map(|t| (t.episode.as_str(), t.k, t.test.as_str())).collect();
        assert_eq!(keys, [("abc", 3, "t"), ("abcdefgh10", 0, "t"), ("abcdefgh2", 0, "t"), ("abcdefgh2", 0, "u"), ("abcdefgh2", 1, "t")]);
    }

    #[test]
    fn json_columns_read_the_empty_text_as_the_default_and_parse_the_rest() {
        let conn = Connection::open_in_memory().unwrap();
        let read = |text: &str| -> Result<BTreeMap<String, serde_json::Value>, String> {
            conn.query_row("SELECT ?1", [text], |r| {
                Ok(json_column(r, 0, Path::new("t.sqlite"), "t.measured", "{}").map_err(|e| e.to_string()))
            })
            .unwrap()
        };
        assert_eq!(read("{}"), Ok(BTreeMap::new()));
        assert_eq!(read(r#"{"n": 2}"#), Ok(BTreeMap::from([("n".to_string(), serde_json::json!(2))])));
        let err = read("[]").unwrap_err();
        assert!(err.starts_with("t.measured"), "{err}");
    }

    #[test]
    fn in_memory_order_is_sqlites_primary_key_order() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(
            "CREATE TABLE t (episode TEXT NOT NULL, k INTEGER NOT NULL, test TEXT NOT NULL,
                 PRIMARY KEY (episode, k, test)) STRICT;
             INSERT INTO t VALUES ('b', 2, 'x'), ('a', 10, 'z'), ('a', 9, 'Z'), ('B', 1, 'a'),
                 ('a', 10, 'y'), ('é', 0, 'a'), ('ab', 0, 'a'), ('a', 10, 'Y');",
        )
        .unwrap();
        let mut stmt = conn.prepare("SELECT episode, k, test FROM t ORDER BY episode, k, test").unwrap();
        let sqlite: Vec<(String, u32, String)> =
            stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?))).unwrap().collect::<Result<_, _>>().unwrap();
        let mut ours: Vec<TestRow> = sqlite
            .iter()
            .rev()
            .map(|(episode, k, test)| TestRow { episode: episode.clone(), k: *k, test: test.clone(), outcome: TestOutcome::Pass })
            .collect();
        sort_by_key_order(&mut ours, TESTS.first_key, TESTS.cmp);
        let ours: Vec<(String, u32, String)> = ours.into_iter().map(|t| (t.episode, t.k, t.test)).collect();
        assert_eq!(ours, sqlite);
    }
}
