//! Filtered, paged and aggregated reads of `episodes` (and `usage`), for viewers that must
//! answer on runs of 100,000 episodes without reading every row into memory.
//!
//! [`EpisodeFilter`] narrows the rows (each field `None` means "any"); [`Store::episode_page`]
//! returns one page of them in an [`EpisodeOrder`] with the total count;
//! [`Store::episode_facets`] lists the values each filter can take; [`Store::outcome_matrix`]
//! aggregates final outcomes per task × agent; [`Store::usage_by_agent`] sums usage per agent
//! and role. Every statement binds its values as parameters (no text from a request is ever
//! spliced into SQL).

use std::collections::BTreeMap;

use rusqlite::params_from_iter;
use rusqlite::types::Value as SqlValue;
use specgap_protocol::event::Usage;

use crate::error::{SqlContext, StoreError};
use crate::rows::{EpisodeRow, Role, Status};
use crate::store::Store;

/// Which episodes a paged read returns. `None` fields do not filter.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EpisodeFilter {
    /// Task name, exactly.
    pub task: Option<String>,
    /// Agent spec, exactly.
    pub agent: Option<String>,
    /// Canonical condition, exactly.
    pub condition: Option<String>,
    /// Start (`clean`, `residual:<id>`), exactly.
    pub start: Option<String>,
    /// Lifecycle status.
    pub status: Option<Status>,
    /// End reason as stored (`accepted`, `submission_budget`, …).
    pub end_reason: Option<String>,
    /// Lowest final Score kept (inclusive); episodes without a final score are left out when
    /// either bound is given.
    pub min_score: Option<f64>,
    /// Highest final Score kept (inclusive).
    pub max_score: Option<f64>,
    /// 0-based repeat, exactly.
    pub repeat: Option<u32>,
}

/// The order of a paged read; ties are broken by episode id, so pages never overlap.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum EpisodeOrder {
    /// Task, agent, condition, start, repeat, id (the order `specgap show` lists).
    #[default]
    Key,
    /// Final score, lowest first (episodes without one last), then key order.
    ScoreAscending,
    /// Final score, highest first (episodes without one last), then key order.
    ScoreDescending,
    /// Start of the last attempt, latest first.
    Latest,
}

impl EpisodeOrder {
    fn sql(self) -> &'static str {
        match self {
            EpisodeOrder::Key => "task, agent, condition, start, repeat, id",
            EpisodeOrder::ScoreAscending => "final_score IS NULL, final_score ASC, task, agent, condition, start, repeat, id",
            EpisodeOrder::ScoreDescending => "final_score IS NULL, final_score DESC, task, agent, condition, start, repeat, id",
            EpisodeOrder::Latest => "started_ts DESC, id",
        }
    }
}

/// One page of episodes and how many match in all.
#[derive(Debug, Clone, PartialEq)]
pub struct EpisodePage {
    /// Episodes matching the filter, all pages together.
    pub total: u64,
    /// The rows of this page, in the requested order.
    pub rows: Vec<EpisodeRow>,
}

/// The values each filter can take in a store, each list sorted, with episode counts.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EpisodeFacets {
    /// Task name → episodes.
    pub tasks: BTreeMap<String, u64>,
    /// Agent spec → episodes.
    pub agents: BTreeMap<String, u64>,
    /// Condition → episodes.
    pub conditions: BTreeMap<String, u64>,
    /// Start → episodes.
    pub starts: BTreeMap<String, u64>,
    /// Status text → episodes.
    pub statuses: BTreeMap<String, u64>,
    /// End reason text → episodes (episodes without one are not counted).
    pub end_reasons: BTreeMap<String, u64>,
    /// The highest repeat in the store (`None` without episodes).
    pub max_repeat: Option<u32>,
    /// Every episode.
    pub episodes: u64,
}

/// Final outcomes of one task × agent cell (over the conditions and starts selected).
#[derive(Debug, Clone, PartialEq)]
pub struct MatrixCell {
    /// Task name.
    pub task: String,
    /// Agent spec.
    pub agent: String,
    /// Episodes in the cell, whatever their status.
    pub episodes: u64,
    /// Finished episodes with a final score.
    pub scored: u64,
    /// Mean final Score of the scored episodes (`None` without one); for delivery cases this
    /// is the delivery score (DESIGN §2).
    pub mean_score: Option<f64>,
    /// Scored episodes whose final submission succeeded.
    pub successes: u64,
    /// Episodes ended by an infrastructure or evaluation error.
    pub errors: u64,
    /// Episodes running or interrupted.
    pub unfinished: u64,
}

/// Summed model usage of one agent spec and role, every attempt of every episode.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentUsage {
    /// Agent spec.
    pub agent: String,
    /// Whose model calls.
    pub role: Role,
    /// Episodes with usage of this role.
    pub episodes: u64,
    /// Summed usage.
    pub usage: Usage,
}

/// The WHERE clause of `filter` (empty when it filters nothing) and its parameters.
fn where_clause(filter: &EpisodeFilter) -> (String, Vec<SqlValue>) {
    let mut terms: Vec<&'static str> = Vec::new();
    let mut values: Vec<SqlValue> = Vec::new();
    let mut text = |column: &'static str, value: &Option<String>| {
        if let Some(v) = value {
            terms.push(column);
            values.push(SqlValue::Text(v.clone()));
        }
    };
    text("task = ?", &filter.task);
    text("agent = ?", &filter.agent);
    text("condition = ?", &filter.condition);
    text("start = ?", &filter.start);
    text("end_reason = ?", &filter.end_reason);
    if let Some(status) = filter.status {
        terms.push("status = ?");
        values.push(SqlValue::Text(status.as_str().to_string()));
    }
    if let Some(min) = filter.min_score {
        terms.push("final_score >= ?");
        values.push(SqlValue::Real(min));
    }
    if let Some(max) = filter.max_score {
        terms.push("final_score <= ?");
        values.push(SqlValue::Real(max));
    }
    if let Some(repeat) = filter.repeat {
        terms.push("repeat = ?");
        values.push(SqlValue::Integer(i64::from(repeat)));
    }
    if terms.is_empty() { (String::new(), values) } else { (format!(" WHERE {}", terms.join(" AND ")), values) }
}

impl Store {
    /// Episodes matching `filter` in `order`, skipping `offset` and returning at most `limit`,
    /// with the number matching in all.
    ///
    /// # Errors
    /// SQLite errors; [`StoreError::BadValue`] for unknown enum texts.
    pub fn episode_page(&self, filter: &EpisodeFilter, order: EpisodeOrder, offset: u64, limit: u64) -> Result<EpisodePage, StoreError> {
        let conn = self.conn();
        let path = self.db_path();
        let (clause, values) = where_clause(filter);
        let total: i64 = conn
            .prepare_cached(&format!("SELECT COUNT(*) FROM episodes{clause}"))
            .at(path)?
            .query_row(params_from_iter(values.iter()), |r| r.get(0))
            .at(path)?;
        let rows = crate::read::EPISODES.read_where(&conn, path, &clause, order.sql(), &values, (limit, offset))?;
        Ok(EpisodePage { total: u64::try_from(total).unwrap_or(0), rows })
    }

    /// Ids of the episodes matching `filter` in `order` (for scanning them in parts).
    ///
    /// # Errors
    /// SQLite errors.
    pub fn episode_ids(&self, filter: &EpisodeFilter, order: EpisodeOrder, offset: u64, limit: u64) -> Result<Vec<String>, StoreError> {
        let conn = self.conn();
        let path = self.db_path();
        let (clause, mut values) = where_clause(filter);
        values.push(SqlValue::Integer(clamp(limit)));
        values.push(SqlValue::Integer(clamp(offset)));
        let sql = format!("SELECT id FROM episodes{clause} ORDER BY {} LIMIT ? OFFSET ?", order.sql());
        let mut stmt = conn.prepare_cached(&sql).at(path)?;
        let ids =
            stmt.query_map(params_from_iter(values.iter()), |r| r.get::<_, String>(0)).at(path)?.collect::<Result<Vec<_>, _>>().at(path)?;
        Ok(ids)
    }

    /// The values each [`EpisodeFilter`] field can take, with episode counts.
    ///
    /// # Errors
    /// SQLite errors.
    pub fn episode_facets(&self) -> Result<EpisodeFacets, StoreError> {
        let conn = self.conn();
        let path = self.db_path();
        // One scan grouped by every faceted column (a few thousand combinations at most in a
        // run of 100,000 episodes), summed per column here: six GROUP BY scans cost six times
        // as much.
        let mut stmt = conn
            .prepare_cached(
                "SELECT task, agent, condition, start, status, end_reason, COUNT(*), MAX(repeat)
                 FROM episodes GROUP BY task, agent, condition, start, status, end_reason",
            )
            .at(path)?;
        let mut rows = stmt.query([]).at(path)?;
        let mut facets = EpisodeFacets::default();
        while let Some(r) = rows.next().at(path)? {
            let n = u64::try_from(r.get::<_, i64>(6).at(path)?).unwrap_or(0);
            let add = |map: &mut BTreeMap<String, u64>, value: String| *map.entry(value).or_insert(0) += n;
            add(&mut facets.tasks, r.get(0).at(path)?);
            add(&mut facets.agents, r.get(1).at(path)?);
            add(&mut facets.conditions, r.get(2).at(path)?);
            add(&mut facets.starts, r.get(3).at(path)?);
            add(&mut facets.statuses, r.get(4).at(path)?);
            if let Some(reason) = r.get::<_, Option<String>>(5).at(path)? {
                add(&mut facets.end_reasons, reason);
            }
            let repeat = r.get::<_, Option<i64>>(7).at(path)?.and_then(|x| u32::try_from(x).ok());
            facets.max_repeat = facets.max_repeat.max(repeat);
            facets.episodes += n;
        }
        Ok(facets)
    }

    /// Final outcomes per task × agent over the episodes matching `filter` (its task and
    /// agent fields narrow the cells), cells sorted by task, then agent.
    ///
    /// # Errors
    /// SQLite errors.
    pub fn outcome_matrix(&self, filter: &EpisodeFilter) -> Result<Vec<MatrixCell>, StoreError> {
        let conn = self.conn();
        let path = self.db_path();
        let (clause, values) = where_clause(filter);
        let sql = format!(
            "SELECT task, agent, COUNT(*),
                SUM(status = 'finished' AND final_score IS NOT NULL),
                AVG(CASE WHEN status = 'finished' THEN final_score END),
                SUM(status = 'finished' AND final_score IS NOT NULL AND final_success = 1),
                SUM(status IN ('infra_error', 'eval_error')),
                SUM(status IN ('running', 'interrupted'))
             FROM episodes{clause} GROUP BY task, agent ORDER BY task, agent"
        );
        let mut stmt = conn.prepare_cached(&sql).at(path)?;
        let cells = stmt
            .query_map(params_from_iter(values.iter()), |r| {
                Ok(MatrixCell {
                    task: r.get(0)?,
                    agent: r.get(1)?,
                    episodes: r.get::<_, i64>(2)?.max(0) as u64,
                    scored: r.get::<_, Option<i64>>(3)?.unwrap_or(0).max(0) as u64,
                    mean_score: r.get(4)?,
                    successes: r.get::<_, Option<i64>>(5)?.unwrap_or(0).max(0) as u64,
                    errors: r.get::<_, Option<i64>>(6)?.unwrap_or(0).max(0) as u64,
                    unfinished: r.get::<_, Option<i64>>(7)?.unwrap_or(0).max(0) as u64,
                })
            })
            .at(path)?
            .collect::<Result<Vec<_>, _>>()
            .at(path)?;
        Ok(cells)
    }

    /// Model usage summed per agent spec and role over every attempt of every episode,
    /// sorted by agent, then role (agent, user, judge, extractor, detector).
    ///
    /// # Errors
    /// SQLite errors; [`StoreError::BadValue`] for an unknown role.
    pub fn usage_by_agent(&self) -> Result<Vec<AgentUsage>, StoreError> {
        let conn = self.conn();
        let path = self.db_path();
        let mut stmt = conn
            .prepare_cached(
                "SELECT e.agent, u.role, COUNT(DISTINCT u.episode), SUM(u.input_tokens),
                    SUM(u.output_tokens), SUM(u.cached_tokens), SUM(u.reasoning_tokens),
                    SUM(u.requests), SUM(u.retries), SUM(u.latency_ms), SUM(u.cost_usd)
                 FROM usage u JOIN episodes e ON e.id = u.episode
                 GROUP BY e.agent, u.role",
            )
            .at(path)?;
        let raw = stmt
            .query_map([], |r| {
                let count = |i: usize| r.get::<_, Option<i64>>(i).map(|v| v.unwrap_or(0).max(0) as u64);
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    count(2)?,
                    Usage {
                        input_tokens: count(3)?,
                        output_tokens: count(4)?,
                        cached_tokens: count(5)?,
                        reasoning_tokens: count(6)?,
                        requests: count(7)?,
                        retries: count(8)?,
                        latency_ms: count(9)?,
                        cost_usd: r.get::<_, Option<f64>>(10)?.unwrap_or(0.0),
                    },
                ))
            })
            .at(path)?
            .collect::<Result<Vec<_>, _>>()
            .at(path)?;
        let mut out = Vec::with_capacity(raw.len());
        for (agent, role, episodes, usage) in raw {
            out.push(AgentUsage { agent, role: Role::parse(&role)?, episodes, usage });
        }
        out.sort_by(|a, b| (&a.agent, a.role).cmp(&(&b.agent, b.role)));
        Ok(out)
    }

    /// Final scores of the episodes matching `filter` in `bins` equal bins over [0, 1] (a
    /// score of 1 falls in the last), and the matching episodes without a score.
    ///
    /// # Errors
    /// SQLite errors.
    pub fn score_histogram(&self, filter: &EpisodeFilter, bins: u32) -> Result<(Vec<u64>, u64), StoreError> {
        let bins = bins.max(1);
        let conn = self.conn();
        let path = self.db_path();
        let (clause, values) = where_clause(filter);
        let sql = format!(
            "SELECT CASE WHEN final_score IS NULL THEN -1 ELSE MAX(0, MIN({last}, CAST(final_score * {bins} AS INTEGER))) END AS bin, COUNT(*) FROM episodes{clause} GROUP BY bin",
            last = bins - 1
        );
        let mut stmt = conn.prepare_cached(&sql).at(path)?;
        let mut rows = stmt.query(params_from_iter(values.iter())).at(path)?;
        let mut counts = vec![0u64; bins as usize];
        let mut unscored = 0;
        while let Some(r) = rows.next().at(path)? {
            let bin: i64 = r.get(0).at(path)?;
            let n = u64::try_from(r.get::<_, i64>(1).at(path)?).unwrap_or(0);
            match usize::try_from(bin).ok().and_then(|b| counts.get_mut(b)) {
                Some(slot) => *slot += n,
                None => unscored += n,
            }
        }
        Ok((counts, unscored))
    }

    /// How many episodes have ended (every status but `running` and `not_applicable`) and the
    /// sum of their final attempts' wall-clock durations in milliseconds: what a progress
    /// display estimates the time left from.
    ///
    /// # Errors
    /// SQLite errors.
    pub fn ended_wall_ms(&self) -> Result<(u64, u64), StoreError> {
        let conn = self.conn();
        let (n, sum): (i64, i64) = conn
            .query_row(
                "SELECT COUNT(*), COALESCE(SUM(wall_ms), 0) FROM episodes WHERE status NOT IN ('running', 'not_applicable')",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .at(self.db_path())?;
        Ok((u64::try_from(n).unwrap_or(0), u64::try_from(sum).unwrap_or(0)))
    }

    /// A number that changes whenever another connection commits to `results.sqlite`
    /// (SQLite's `PRAGMA data_version`): a viewer polls it to learn that a running `specgap
    /// run` wrote something.
    ///
    /// # Errors
    /// SQLite errors.
    pub fn data_version(&self) -> Result<i64, StoreError> {
        let conn = self.conn();
        conn.query_row("PRAGMA data_version", [], |r| r.get(0)).at(self.db_path())
    }
}

/// A page bound as SQLite's signed integer (a bound past `i64::MAX` is as good as no bound).
pub(crate) fn clamp(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}
