// Where the pages get their data: the live server's /api/ (token in an HttpOnly cookie), or a
// static site's data/ files. Both sources answer the same calls with the same shapes.

export const EVENT_PAGE = 200;
const SEARCH_BUDGET_MS = 300;
const SEARCH_MATCHES = 50;
const SEARCH_HITS = 3;

async function getJson(url) {
  const response = await fetch(url, {credentials: 'same-origin', cache: 'no-store'});
  if (!response.ok) {
    const words = (await response.text()).trim();
    throw new Error(words || `${response.status} ${response.statusText}`);
  }
  return response.json();
}

async function getText(url) {
  const response = await fetch(url, {credentials: 'same-origin', cache: 'no-store'});
  if (!response.ok) throw new Error((await response.text()).trim() || `${response.status}`);
  return response.text();
}

function query(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params || {})) {
    if (v !== undefined && v !== null && v !== '') q.set(k, String(v));
  }
  const s = q.toString();
  return s ? `?${s}` : '';
}

/** The filter keys of an episode list. */
export const FILTER_KEYS = ['task', 'agent', 'condition', 'start', 'status', 'end_reason', 'min_score', 'max_score', 'repeat'];

/** The columns of an episode list's CSV (the server's `csv::COLUMNS`). */
export const CSV_COLUMNS = ['id', 'task', 'agent', 'user', 'condition', 'start', 'repeat', 'status', 'end_reason', 'attempts', 'submissions',
  'final_score', 'final_success', 'turns', 'tool_calls', 'wall_ms', 'started_ts', 'error'];

/** One CSV field, as the server writes it: quoted when needed, kept from being a formula. */
function csvField(v) {
  if (v === null || v === undefined) return '';
  if (typeof v !== 'string') return String(v);
  const text = /^[=+\-@]/.test(v) ? `'${v}` : v;
  return /[,"\n\r]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

/** Episode rows as CSV. */
export function csvOf(rows) {
  const lines = [CSV_COLUMNS.join(',')];
  for (const row of rows) lines.push(CSV_COLUMNS.map((c) => csvField(row[c])).join(','));
  return `${lines.join('\n')}\n`;
}

/** Final scores in ten bins over [0, 1] (1.0 in the last) and the unscored, as the server's
 *  `run/{r}/histogram`. */
export function histogramOf(rows) {
  const bins = new Array(10).fill(0);
  let unscored = 0;
  for (const r of rows) {
    if (r.final_score === null || r.final_score === undefined) unscored += 1;
    else bins[Math.max(0, Math.min(9, Math.floor(r.final_score * 10)))] += 1;
  }
  return {bins, unscored};
}

class LiveSource {
  constructor() { this.live = true; }
  compareRuns(a, b, selectA, selectB) { return getJson(`api/compare${query({a, b, select_a: selectA, select_b: selectB})}`); }
  histogram(r, filter) { return getJson(`${this.base(r)}/histogram${query(filter)}`); }
  csv(r, filter) { return getText(`${this.base(r)}/episodes.csv${query(filter)}`); }
  base(r) { return `api/run/${r}`; }
  runs() { return getJson('api/runs'); }
  syntheses() { return getJson('api/syntheses'); }
  synthesis(s) { return getJson(`api/synthesis/${s}`); }
  synthesisEntry(s, seq) { return getJson(`api/synthesis/${s}/entry/${seq}`); }
  version(r) { return getJson(`${this.base(r)}/version`); }
  progress(r) { return getJson(`${this.base(r)}/progress`); }
  facets(r) { return getJson(`${this.base(r)}/facets`); }
  episodes(r, filter, order, offset, limit) { return getJson(`${this.base(r)}/episodes${query({...filter, order, offset, limit})}`); }
  matrix(r, condition) { return getJson(`${this.base(r)}/matrix${query({condition})}`); }
  summary(r) { return getJson(`${this.base(r)}/summary`); }
  search(r, filter, q, cursor) { return getJson(`${this.base(r)}/search${query({...filter, q, cursor})}`); }
  detail(r, id) { return getJson(`${this.base(r)}/episode/${id}`); }
  episodeVersion(r, id) { return getJson(`${this.base(r)}/episode/${id}/version`); }
  events(r, id, offset, limit = EVENT_PAGE) { return getJson(`${this.base(r)}/episode/${id}/events${query({offset, limit})}`); }
  event(r, id, i) { return getJson(`${this.base(r)}/episode/${id}/event/${i}`); }
  timeline(r, id) { return getJson(`${this.base(r)}/episode/${id}/timeline`); }
  diffText(r, id, k) { return getText(this.diffUrl(r, id, k)); }
  resultText(r, id, k) { return getText(this.resultUrl(r, id, k)); }
  diffUrl(r, id, k) { return `${this.base(r)}/episode/${id}/diff/${k}`; }
  resultUrl(r, id, k) { return `${this.base(r)}/episode/${id}/result/${k}`; }
  trajectoryUrl(r, id) { return `${this.base(r)}/episode/${id}/trajectory.jsonl`; }
  atifUrl(r, id) { return `${this.base(r)}/episode/${id}/atif.json`; }
}

/** Whether `row` passes `filter` (the same rule as the store's SQL: exact values, an
 *  inclusive score range that leaves unscored episodes out). */
export function matches(row, filter) {
  for (const key of ['task', 'agent', 'condition', 'start', 'status', 'end_reason']) {
    if (filter[key] && row[key] !== filter[key]) return false;
  }
  if (filter.repeat !== undefined && filter.repeat !== '' && row.repeat !== Number(filter.repeat)) return false;
  const hasMin = filter.min_score !== undefined && filter.min_score !== '';
  const hasMax = filter.max_score !== undefined && filter.max_score !== '';
  if (hasMin || hasMax) {
    if (row.final_score === null) return false;
    if (hasMin && row.final_score < Number(filter.min_score)) return false;
    if (hasMax && row.final_score > Number(filter.max_score)) return false;
  }
  return true;
}

function keyOrder(a, b) {
  for (const k of ['task', 'agent', 'condition', 'start']) {
    if (a[k] !== b[k]) return a[k] < b[k] ? -1 : 1;
  }
  if (a.repeat !== b.repeat) return a.repeat - b.repeat;
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

function ordered(rows, order) {
  const out = rows.slice();
  const byScore = (dir) => (a, b) => {
    if ((a.final_score === null) !== (b.final_score === null)) return a.final_score === null ? 1 : -1;
    if (a.final_score !== b.final_score) return dir * (a.final_score - b.final_score);
    return keyOrder(a, b);
  };
  if (order === 'score_asc') out.sort(byScore(1));
  else if (order === 'score_desc') out.sort(byScore(-1));
  else if (order === 'latest') out.sort((a, b) => (b.started_ts - a.started_ts) || (a.id < b.id ? -1 : 1));
  else out.sort(keyOrder);
  return out;
}

/** A snippet of about 120 characters around the first occurrence of `needle` (lowercase). */
export function snippet(text, needle) {
  const at = text.toLowerCase().indexOf(needle);
  if (at < 0 || !needle) return null;
  const start = Math.max(0, at - 50);
  const end = Math.min(text.length, at + needle.length + 70);
  let s = text.slice(start, end).replace(/\n/g, ' ⏎ ');
  if (start > 0) s = `…${s}`;
  if (end < text.length) s = `${s}…`;
  return s;
}

class StaticSource {
  constructor() { this.live = false; this.cache = new Map(); }
  base(r) { return `data/run-${r}`; }
  cached(url) {
    if (!this.cache.has(url)) this.cache.set(url, getJson(url).catch((e) => { this.cache.delete(url); throw e; }));
    return this.cache.get(url);
  }
  runs() { return this.cached('data/runs.json'); }
  syntheses() { return this.cached('data/syntheses.json'); }
  synthesis(s) { return this.cached(`data/synthesis-${s}/journal.json`); }
  synthesisEntry(s, seq) { return this.cached(`data/synthesis-${s}/entry-${seq}.json`); }
  async compareRuns(a, b, selectA, selectB) {
    if (selectA || selectB) throw new Error('a published site holds the comparisons of whole runs only: selections need the live viewer (specgap view) or specgap compare --a/--b');
    const runs = await this.runs();
    const known = (x) => Number.isInteger(Number(x)) && Number(x) >= 0 && Number(x) < runs.length;
    if (!known(a) || !known(b) || Number(a) === Number(b)) {
      throw new Error(`this site holds the comparisons of each two of its ${runs.length} run(s): pick two different runs`);
    }
    const c = await this.cached(`data/compare-${a}-${b}.json`);
    if (c.error) throw new Error(c.error);
    return c;
  }
  async histogram(r, filter) {
    const all = await this.cached(`${this.base(r)}/episodes.json`);
    return histogramOf(all.filter((row) => matches(row, filter)));
  }
  async csv(r, filter) {
    const all = await this.cached(`${this.base(r)}/episodes.json`);
    return csvOf(ordered(all.filter((row) => matches(row, filter)), 'key'));
  }
  version() { return Promise.resolve({data_version: 0, live: false}); }
  progress(r) { return this.cached(`${this.base(r)}/progress.json`); }
  facets(r) { return this.cached(`${this.base(r)}/facets.json`); }
  async episodes(r, filter, order, offset, limit) {
    const all = await this.cached(`${this.base(r)}/episodes.json`);
    const rows = ordered(all.filter((row) => matches(row, filter)), order);
    return {total: rows.length, offset, limit, rows: rows.slice(offset, offset + limit)};
  }
  async matrix(r, condition) {
    const all = await this.cached(`${this.base(r)}/matrix.json`);
    return all[condition || ''] || [];
  }
  summary(r) { return this.cached(`${this.base(r)}/summary.json`); }
  async search(r, filter, q, cursor) {
    const needle = q.trim().toLowerCase();
    const all = ordered((await this.cached(`${this.base(r)}/episodes.json`)).filter((row) => matches(row, filter)), 'key');
    if (!needle) return {matches: [], next: null, scanned: 0, total: all.length};
    const started = performance.now();
    const found = [];
    let position = cursor || 0;
    while (position < all.length) {
      const row = all[position];
      position += 1;
      const texts = await getJson(`${this.base(r)}/ep/${row.id}/search.json`);
      const hits = [];
      for (const [index, seq, type, text] of texts) {
        const s = snippet(text, needle);
        if (s !== null) hits.push({index, seq, type, snippet: s});
        if (hits.length >= SEARCH_HITS) break;
      }
      if (hits.length) found.push({...row, hits});
      if (found.length >= SEARCH_MATCHES || performance.now() - started >= SEARCH_BUDGET_MS) break;
    }
    return {matches: found, next: position < all.length ? position : null, scanned: position, total: all.length};
  }
  detail(r, id) { return this.cached(`${this.base(r)}/ep/${id}/detail.json`); }
  async episodeVersion(r, id) {
    const d = await this.detail(r, id);
    return {events: d.events, status: d.episode.status, live: false};
  }
  events(r, id, offset) { return this.cached(`${this.base(r)}/ep/${id}/events-${Math.floor(offset / EVENT_PAGE)}.json`); }
  event(r, id, i) { return this.cached(`${this.base(r)}/ep/${id}/event-${i}.json`); }
  timeline(r, id) { return this.cached(`${this.base(r)}/ep/${id}/timeline.json`); }
  diffText(r, id, k) { return getText(this.diffUrl(r, id, k)); }
  resultText(r, id, k) { return getText(this.resultUrl(r, id, k)); }
  diffUrl(r, id, k) { return `${this.base(r)}/ep/${id}/diff-${k}.txt`; }
  resultUrl(r, id, k) { return `${this.base(r)}/ep/${id}/result-${k}.json`; }
  trajectoryUrl(r, id) { return `${this.base(r)}/ep/${id}/trajectory.jsonl`; }
  atifUrl(r, id) { return `${this.base(r)}/ep/${id}/atif.json`; }
}

const meta = document.querySelector('meta[name="specgap-source"]');
/** The data source of this page. */
export const source = meta && meta.content === 'static' ? new StaticSource() : new LiveSource();
