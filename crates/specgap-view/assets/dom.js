// Building the page safely: every text goes in through textContent (never parsed as HTML),
// and links are made only to the viewer's own routes and files.

/** Whether `url` may be a link target: one of the viewer's routes (`#/...`) or a relative
 *  path to its own API or data files. Anything with a scheme (`javascript:`, `http:`) is not. */
export function safeHref(url) {
  if (typeof url !== 'string') return false;
  if (url.startsWith('#')) return true;
  if (!(url.startsWith('api/') || url.startsWith('data/'))) return false;
  const colon = url.indexOf(':');
  const slash = url.indexOf('/');
  return colon === -1 || (slash !== -1 && slash < colon);
}

/** An element: `h('td', {class: 'x', title: 't'}, 'text', child, [more])`. Attributes are
 *  set through the DOM; `on` holds event listeners; strings become text nodes. */
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  if (attrs) {
    for (const [key, value] of Object.entries(attrs)) {
      if (value === undefined || value === null || value === false) continue;
      if (key === 'on') {
        for (const [event, fn] of Object.entries(value)) el.addEventListener(event, fn);
      } else if (key === 'class') {
        el.className = value;
      } else if (key === 'href') {
        if (safeHref(value)) el.setAttribute('href', value);
      } else if (key === 'dataset') {
        for (const [k, v] of Object.entries(value)) el.dataset[k] = String(v);
      } else if (key === 'text') {
        el.textContent = String(value);
      } else if (['id', 'title', 'type', 'value', 'name', 'placeholder', 'min', 'max', 'step', 'for', 'colspan', 'rowspan', 'role', 'download', 'target', 'rel', 'selected', 'checked', 'disabled', 'open', 'hidden'].includes(key) || key.startsWith('aria-')) {
        if (value === true) el.setAttribute(key, '');
        else el.setAttribute(key, String(value));
        if (key === 'value' && 'value' in el) el.value = String(value);
        if (key === 'checked') el.checked = true;
        if (key === 'selected') el.selected = true;
      }
    }
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children) {
    if (child === undefined || child === null || child === false) continue;
    if (Array.isArray(child)) append(el, child);
    else if (child instanceof Node) el.appendChild(child);
    else el.appendChild(document.createTextNode(String(child)));
  }
}

/** Removes every child of `el`. */
export function clear(el) {
  while (el.firstChild) el.removeChild(el.firstChild);
  return el;
}

/** A number with `digits` decimals, or an em dash for null. */
export function num(x, digits = 3) {
  return x === null || x === undefined || Number.isNaN(x) ? '—' : Number(x).toFixed(digits);
}

/** A score or rate in [0, 1] as a percentage with one decimal and its sign ("66.7%"): the
 *  viewer's one convention for scores, success rates, DSR, recall and F1, as the report's
 *  (docs/decisions.md "Viewer: one number convention"). */
export function pct(x) {
  return x === null || x === undefined || Number.isNaN(x) ? '—' : `${(100 * x).toFixed(1)}%`;
}

/** A whole number with thousands separators. */
export function count(x) {
  return x === null || x === undefined ? '—' : Number(x).toLocaleString('en-US');
}

/** A run's progress (`run/{r}/progress`) in words: planned, finished, running, failed
 *  (and interrupted, not started when any), then the time left while a runner goes on
 *  ("ETA unknown" before the first episode ends), "done" once nothing is left, or "stopped"
 *  when episodes are left and no runner is alive. */
export function progressText(p) {
  if (!p) return '';
  const parts = [`planned ${p.planned === null ? '?' : count(p.planned)}`, `finished ${count(p.finished)}`,
    `running ${count(p.running)}`, `failed ${count(p.failed)}`];
  if (p.interrupted) parts.push(`interrupted ${count(p.interrupted)}`);
  if (p.not_started) parts.push(`not started ${count(p.not_started)}`);
  if (p.state === 'done') parts.push('done');
  else if (p.state === 'running') parts.push(p.eta_ms === null ? 'ETA unknown' : `ETA ${duration(p.eta_ms)}`);
  else parts.push('stopped (specgap run --resume continues it)');
  return parts.join(' · ');
}

/** US dollars with four decimals; an em dash when the run had no price table. */
export function dollars(x, priced) {
  return priced ? `$${Number(x || 0).toFixed(4)}` : '—';
}

/** Milliseconds as seconds (or minutes) for people. */
export function duration(ms) {
  if (ms === null || ms === undefined) return '—';
  if (ms < 1000) return `${ms} ms`;
  const s = ms / 1000;
  if (s < 120) return `${s.toFixed(1)} s`;
  return `${Math.floor(s / 60)} min ${Math.round(s % 60)} s`;
}

/** A CSS class for a score in [0, 1]: `s0` … `s10`, or `s-none`. */
export function scoreClass(score) {
  if (score === null || score === undefined) return 's-none';
  return `s${Math.max(0, Math.min(10, Math.round(score * 10)))}`;
}

/** A score badge: its value (a percentage), coloured, with success marked. */
export function scoreBadge(score, success) {
  return h('span', {class: `score ${scoreClass(score)}`, title: success ? 'success' : undefined}, pct(score), success ? ' ✓' : '');
}

/** The box every private item goes in: never shown to the agent or the user model. */
export function privateBox(title, ...children) {
  return h('section', {class: 'private'},
    h('div', {class: 'private-label'}, 'PRIVATE — ', title, ' (never shown to the agent or the user model)'),
    ...children);
}

/** Lines in `text`. */
export function lineCount(text) {
  let n = 1;
  for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) === 10) n++;
  return n;
}

/** A long text shown folded: the first lines, and a button to show it all. `full` (when the
 *  server folded the text) is a function that fetches the whole text. */
export function foldable(text, {totalChars = null, full = null, lines = 12, cls = 'out'} = {}) {
  const pre = h('pre', {class: cls}, text);
  const long = totalChars !== null || lineCount(text) > lines;
  if (!long) return pre;
  pre.classList.add('clamped');
  const label = totalChars !== null ? `show all ${count(totalChars)} characters` : `show all ${count(lineCount(text))} lines`;
  const button = h('button', {class: 'fold', type: 'button'}, label);
  let loaded = totalChars === null;
  button.addEventListener('click', async () => {
    if (pre.classList.contains('clamped')) {
      if (!loaded && full) {
        button.disabled = true;
        button.textContent = 'loading…';
        try {
          pre.textContent = await full();
          loaded = true;
        } catch (e) {
          button.disabled = false;
          button.textContent = `could not load: ${e.message}`;
          return;
        }
        button.disabled = false;
      }
      pre.classList.remove('clamped');
      button.textContent = 'show less';
    } else {
      pre.classList.add('clamped');
      button.textContent = label;
    }
  });
  return h('div', {class: 'foldable'}, pre, button);
}

/** A table: `headers` (strings) and rows (arrays of cells: strings, nodes, or
 *  `{cell, class}` objects). */
export function table(headers, rows, cls = 'grid') {
  return h('table', {class: cls},
    h('thead', null, h('tr', null, headers.map((x) => h('th', null, x)))),
    h('tbody', null, rows.map((row) => h('tr', null, row.map((c) => {
      if (c && typeof c === 'object' && !(c instanceof Node) && 'cell' in c) return h('td', {class: c.class, title: c.title}, c.cell);
      return h('td', null, c);
    })))));
}

/** The number a cell's text stands for ("66.7%", "$0.0100", "1,200", "3 (n=2)"), or null. */
function cellNumber(text) {
  const m = /^[$]?(-?[\d,]*\.?\d+)/.exec(text.trim());
  return m ? Number(m[1].replace(/,/g, '')) : null;
}

/** Makes `tableEl`'s columns sortable: a click on a header sorts the rows by that column
 *  (numbers as numbers, text as text, empty cells last), a second click reverses. The header
 *  shows ▲ or ▼. Sorts the rows the table holds. */
export function sortable(tableEl) {
  const heads = [...tableEl.querySelectorAll('thead th')];
  heads.forEach((th, column) => {
    th.classList.add('sortable');
    th.title = 'sort by this column';
    th.addEventListener('click', () => {
      const dir = th.dataset.sorted === 'asc' ? -1 : 1;
      heads.forEach((x) => { delete x.dataset.sorted; x.classList.remove('sorted-asc', 'sorted-desc'); });
      th.dataset.sorted = dir === 1 ? 'asc' : 'desc';
      th.classList.add(dir === 1 ? 'sorted-asc' : 'sorted-desc');
      const body = tableEl.querySelector('tbody');
      const rows = [...body.rows];
      const key = (row) => {
        const text = row.cells[column] ? row.cells[column].textContent : '';
        return {text, n: cellNumber(text), empty: text.trim() === '' || text.trim() === '—'};
      };
      rows.sort((x, y) => {
        const a = key(x);
        const b = key(y);
        if (a.empty !== b.empty) return a.empty ? 1 : -1;
        if (a.n !== null && b.n !== null && a.n !== b.n) return dir * (a.n - b.n);
        return dir * a.text.localeCompare(b.text);
      });
      for (const row of rows) body.appendChild(row);
    });
  });
  return tableEl;
}

/** A small histogram of final scores: `hist` {bins: ten counts over [0, 1], unscored}. Bars
 *  are sized through the CSS object model (no inline style attribute, which the policy
 *  forbids). */
export function histogram(hist) {
  const most = Math.max(1, ...hist.bins);
  const bars = hist.bins.map((n, i) => {
    const label = `${i * 10}–${i === 9 ? 100 : (i + 1) * 10}%`;
    const bar = h('div', {class: `bar ${scoreClass((i + 0.5) / 10)}`, title: `${label}: ${count(n)} episode(s)`});
    bar.style.height = `${Math.round((100 * n) / most)}%`;
    return h('div', {class: 'hist-col'}, h('div', {class: 'hist-bar'}, bar), h('div', {class: 'hist-n'}, count(n)), h('div', {class: 'hist-label'}, label));
  });
  return h('figure', {class: 'histogram', id: 'score-histogram'},
    h('div', {class: 'hist-cols'}, bars),
    h('figcaption', {class: 'muted'}, `Final scores of the listed episodes (${count(hist.bins.reduce((a, b) => a + b, 0))} scored, ${count(hist.unscored)} without a score).`));
}

/** A route link: `#/` + path, with `params` as its query. */
export function route(path, params) {
  const q = params ? new URLSearchParams(Object.entries(params).filter(([, v]) => v !== undefined && v !== null && v !== '')).toString() : '';
  return `#/${path}${q ? `?${q}` : ''}`;
}

/** A message for an error or an empty state. */
export function note(text, cls = 'muted') {
  return h('p', {class: cls}, text);
}

/** Whether an episode's user is a customer: the task is a delivery case (seed 002, scored as
 *  a delivery), whose user holds the business facts. Every other task's user is its owner
 *  (seeds 000, 001), whatever the condition. */
export function hasCustomer(episode) {
  return Boolean(episode) && episode.scoring_kind === 'delivery';
}

/** The value at JSON pointer `pointer` in `value`. */
export function atPointer(value, pointer) {
  if (pointer === '') return value;
  let v = value;
  for (const raw of pointer.split('/').slice(1)) {
    const key = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    if (v === null || typeof v !== 'object') return undefined;
    v = v[key];
  }
  return v;
}

/** Marks `name` in the page's performance timeline now, and `name:painted` once the content
 *  has been painted (two animation frames later), for the benchmark. */
export function markPainted(name) {
  performance.mark(name);
  requestAnimationFrame(() => requestAnimationFrame(() => performance.mark(`${name}:painted`)));
}
