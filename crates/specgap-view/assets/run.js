// A run's pages: the overview (the report's groups, the task × agent matrix, usage and cost
// per agent and role, errors and not-applicable combinations apart) and the episode list
// (filters, pages, transcript search, picking two episodes to compare).

import {source, FILTER_KEYS} from './api.js';
import {h, clear, num, pct, count, dollars, duration, scoreClass, scoreBadge, table, route, note, markPainted, progressText, sortable, histogram} from './dom.js';

const PAGE = 100;

function header(run, info) {
  return h('div', {class: 'run-head'},
    h('h1', null, 'Run ', h('code', null, info.label)),
    h('p', {class: 'muted'},
      `seed ${info.seed} · specgap ${info.specgap_version} · protocol ${info.protocol_version} · `,
      `${info.tasks.length} task(s), agents ${info.agents.join(', ')}, conditions ${info.conditions.join(', ')}, starts ${info.starts.join(', ')}`),
    h('p', {id: 'progress', class: 'progress', title: info.progress && info.progress.planned_error ? `plan unknown: ${info.progress.planned_error}` : undefined},
      progressText(info.progress)),
    h('p', {class: 'statuses'}, Object.entries(info.statuses).map(([status, n]) =>
      h('a', {class: `status st-${status}`, href: route(`run/${run}/episodes`, {status})}, `${status} ${count(n)}`))));
}

async function runInfo(run) {
  const runs = await source.runs();
  const info = runs[run];
  if (!info) throw new Error(`no run ${run}`);
  return info;
}

/** The run overview. */
export async function renderOverview(app, ctx, run) {
  const info = await runInfo(run);
  if (!ctx.alive()) return;
  let head = header(run, info);
  app.appendChild(head);
  // The header follows the run: polled, since a run's end changes no data the other
  // listeners watch.
  ctx.every(2000, async () => {
    try {
      const fresh = header(run, await runInfo(run));
      if (!ctx.alive()) return;
      head.replaceWith(fresh);
      head = fresh;
    } catch (e) {
      // A failed poll is retried by the next one.
    }
  });
  const groups = h('section', {id: 'groups'}, h('h2', null, 'Groups (agent × condition × start)'), note('Computing the measures…'));
  const matrix = h('section', {id: 'matrix'}, h('h2', null, 'Outcomes per task and agent'));
  const usage = h('section', {id: 'usage'}, h('h2', null, 'Model usage and cost per agent and role'));
  const errors = h('section', {id: 'errors'}, h('h2', null, 'Errors and unfinished episodes'));
  const na = h('section', {id: 'not-applicable'}, h('h2', null, 'Not applicable'));
  app.append(groups, matrix, usage, errors, na);
  renderMatrix(matrix, ctx, run, info, '');
  let timer = null;
  const refresh = async () => {
    const s = await source.summary(run);
    if (!ctx.alive()) return;
    fillGroups(groups, run, s);
    fillUsage(usage, s);
    fillErrors(errors, run, s);
    fillNotApplicable(na, s);
    if (timer) clearTimeout(timer);
    if (s.report_state === 'computing' || s.report_state === 'stale') timer = setTimeout(refresh, 1000);
  };
  ctx.onChange(() => {
    refresh();
    renderMatrix(matrix, ctx, run, info, matrix.dataset.condition || '');
  });
  await refresh();
}

/** A mean defined over some runs (`{mean, n}`), or a dash when undefined. */
function defined(m) {
  return m ? `${pct(m.mean)} (n=${m.n})` : '—';
}

function fillGroups(section, run, s) {
  clear(section).appendChild(h('h2', null, 'Groups (agent × condition × start)'));
  if (s.report_state === 'computing') {
    section.appendChild(note('Computing the measures (the report of the whole run)…'));
    return;
  }
  if (s.report_state.startsWith('error')) {
    section.appendChild(note(`The measures could not be computed: ${s.report_state}`, 'error'));
    return;
  }
  if (s.report_state === 'stale') section.appendChild(note('The run changed; updating the measures…'));
  const all = (s.report && s.report.groups) || [];
  // Groups made only of not-applicable combinations are listed under "Not applicable".
  const groups = all.filter((g) => g.episodes > 0);
  const anyDelivery = groups.some((g) => g.delivery);
  const anyClar = groups.some((g) => g.clarification);
  const headers = ['agent', 'condition', 'start', 'episodes', 'scored', 'Score@1', 'Score@2', 'Score@3', 'Score@4', 'Success@1', 'Success@4', 'eval err', 'infra err', 'unfinished', 'n/a'];
  if (anyDelivery) headers.push('Quality', 'DSR');
  if (anyClar) headers.push('Recall', 'Ask-F1');
  const rows = groups.map((g) => {
    const k = g.key;
    const o = g.outcomes;
    const link = h('a', {href: route(`run/${run}/episodes`, {agent: k.agent, condition: k.condition, start: k.start})}, k.agent || '—');
    const row = [link, k.condition, k.start, count(g.episodes), count(o.scored),
      ...o.score_at.map((x) => ({cell: pct(x), class: `num ${scoreClass(x)}`})),
      {cell: pct(o.success_at[0]), class: 'num'}, {cell: pct(o.success_at[3]), class: 'num'},
      count(g.evaluation_errors), count(g.infrastructure_errors), count(g.unfinished), count(g.not_applicable)];
    if (anyDelivery) row.push(g.delivery ? num(g.delivery.quality, 4) : '—', g.delivery ? pct(g.delivery.dsr) : '—');
    if (anyClar) row.push(defined(g.clarification && g.clarification.recall), defined(g.clarification && g.clarification.ask_f1));
    return row;
  });
  section.appendChild(rows.length ? sortable(table(headers, rows)) : note('No episodes yet.'));
  section.appendChild(note('Scores and rates in percent (Score@k, Success@k: seed 000; DSR, Recall, Ask-F1: seed 002); Quality is a ratio to the reference solution (1 = as good); Quality and DSR over the planned runs; the full report: specgap report RUN.'));
  // Which verdicts the seed 002 measures rest on (specgap report's defaults).
  if (anyClar || anyDelivery) {
    section.appendChild(note(`Clarification verdicts: ${s.report.judge}; delivery scores of cases with a submission schema: ${s.report.extraction ? `extraction panel ${s.report.extraction}` : 'the direct artifacts'}.`));
  }
}

async function renderMatrix(section, ctx, run, info, condition) {
  section.dataset.condition = condition;
  const cells = await source.matrix(run, condition);
  if (!ctx.alive()) return;
  clear(section).appendChild(h('h2', null, 'Outcomes per task and agent'));
  const select = h('select', {id: 'matrix-condition', on: {change: () => renderMatrix(section, ctx, run, info, select.value)}},
    h('option', {value: ''}, 'all conditions'),
    info.conditions.map((c) => h('option', {value: c, selected: c === condition}, c)));
  section.appendChild(h('label', null, 'condition ', select));
  const tasks = [...new Set(cells.map((c) => c.task))].sort();
  const agents = [...new Set(cells.map((c) => c.agent))].sort();
  const at = new Map(cells.map((c) => [`${c.task}\u0000${c.agent}`, c]));
  const rows = tasks.map((task) => [task, ...agents.map((agent) => {
    const c = at.get(`${task}\u0000${agent}`);
    if (!c) return {cell: '', class: 'cell-empty'};
    const link = h('a', {href: route(`run/${run}/episodes`, {task, agent, condition})},
      c.scored ? pct(c.mean_score) : '—',
      h('small', null, ` ${c.successes}/${c.scored}`, c.errors ? ` · ${c.errors} err` : '', c.unfinished ? ` · ${c.unfinished} running` : ''));
    return {cell: link, class: `cell ${scoreClass(c.scored ? c.mean_score : null)}`, title: `${c.episodes} episodes, ${c.scored} scored, ${c.successes} successes`};
  })]);
  section.appendChild(tasks.length ? table(['task', ...agents], rows, 'grid matrix') : note('No episodes.'));
  section.appendChild(note('Mean final Score in percent (the delivery score for delivery cases) of the finished episodes; successes / scored. Each cell opens its episodes.'));
}

function fillUsage(section, s) {
  clear(section).appendChild(h('h2', null, 'Model usage and cost per agent and role'));
  if (!s.usage_by_agent.length) {
    section.appendChild(note('No model was called (scripted and replay agents, relay user).'));
    return;
  }
  section.appendChild(sortable(table(['agent', 'role', 'episodes', 'requests', 'retries', 'input tokens', 'cached', 'output tokens', 'reasoning', 'latency', 'cost'],
    s.usage_by_agent.map((u) => [u.agent, u.role, count(u.episodes), count(u.requests), count(u.retries), count(u.input_tokens), count(u.cached_tokens), count(u.output_tokens), count(u.reasoning_tokens), duration(u.latency_ms), dollars(u.cost_usd, s.priced)]))));
  if (!s.priced) section.appendChild(note('The run had no price table (--prices): costs are unknown.'));
}

function fillErrors(section, run, s) {
  clear(section).appendChild(h('h2', null, 'Errors and unfinished episodes'));
  const any = s.errors.filter((e) => e.total > 0);
  if (!any.length) {
    section.appendChild(note('None: every episode finished.'));
    return;
  }
  for (const e of any) {
    section.appendChild(h('h3', null, `${e.status} (${count(e.total)})`, ' ', h('a', {href: route(`run/${run}/episodes`, {status: e.status})}, 'list')));
    section.appendChild(table(['episode', 'task', 'agent', 'condition', 'start', 'repeat', 'attempts', 'error'],
      e.rows.map((r) => [h('a', {href: route(`run/${run}/episode/${r.id}`)}, r.id), r.task, r.agent, r.condition, r.start, String(r.repeat), String(r.attempts), r.error || ''])));
  }
}

function fillNotApplicable(section, s) {
  clear(section).appendChild(h('h2', null, 'Not applicable'));
  if (!s.not_applicable.length) {
    section.appendChild(note('Every combination applied.'));
    return;
  }
  section.appendChild(table(['task', 'agent', 'condition', 'start', 'why'], s.not_applicable.map((n) => [n.task, n.agent, n.condition, n.start, n.reason])));
}

function filterOf(params) {
  const f = {};
  for (const k of FILTER_KEYS) if (params[k] !== undefined && params[k] !== '') f[k] = params[k];
  return f;
}

function filterForm(run, facets, params) {
  const select = (key, label) => h('label', null, label, ' ', h('select', {name: key},
    h('option', {value: ''}, 'any'),
    Object.entries(facets[key] || {}).map(([v, n]) => h('option', {value: v, selected: params[key] === v}, `${v} (${count(n)})`))));
  const input = (key, label, attrs) => h('label', null, label, ' ', h('input', {name: key, value: params[key] || '', ...attrs}));
  const form = h('form', {id: 'filters', class: 'filters'},
    select('task', 'task'), select('agent', 'agent'), select('condition', 'condition'), select('start', 'start'),
    select('status', 'status'), select('end_reason', 'end reason'),
    input('min_score', 'score ≥', {type: 'number', step: 'any', min: '0', max: '1'}),
    input('max_score', '≤', {type: 'number', step: 'any', min: '0', max: '1'}),
    input('repeat', 'repeat', {type: 'number', min: '0', max: String(facets.max_repeat ?? 0)}),
    h('label', null, 'order ', h('select', {name: 'order'},
      [['key', 'task, agent, condition, start, repeat'], ['score_desc', 'score, highest first'], ['score_asc', 'score, lowest first'], ['latest', 'latest first']]
        .map(([v, t]) => h('option', {value: v, selected: (params.order || 'key') === v}, t)))),
    h('button', {type: 'submit'}, 'apply'),
    h('a', {href: route(`run/${run}/episodes`), class: 'reset'}, 'reset'));
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const next = {};
    for (const el of form.elements) if (el.name && el.value !== '') next[el.name] = el.value;
    location.hash = route(`run/${run}/episodes`, next);
  });
  return form;
}

/** The episode list. */
export async function renderEpisodeList(app, ctx, run, params) {
  const filter = filterOf(params);
  const order = params.order || 'key';
  const offset = Math.max(0, Number(params.offset || 0));
  // The first page is asked for at once, beside the filter menus.
  let firstPage = source.episodes(run, filter, order, offset, PAGE);
  firstPage.catch(() => {});
  const facets = await source.facets(run);
  if (!ctx.alive()) return;
  app.appendChild(h('h1', null, 'Episodes'));
  app.appendChild(filterForm(run, facets, params));
  const searchBox = h('input', {id: 'search', type: 'search', placeholder: 'search transcripts (agent text, tool calls and results, messages)', value: params.q || ''});
  const searchOut = h('div', {id: 'search-results'});
  const searchForm = h('form', {class: 'search'}, searchBox, h('button', {type: 'submit'}, 'search'));
  app.append(searchForm, searchOut);
  const tools = h('div', {class: 'list-tools'});
  const csvButton = h('button', {type: 'button', id: 'csv-export'}, 'download these episodes as CSV');
  csvButton.addEventListener('click', () => downloadCsv(csvButton, run, filter));
  const histBox = h('div', {id: 'histogram-box'});
  tools.append(csvButton, histBox);
  app.appendChild(tools);
  const drawHistogram = async () => {
    const hist = await source.histogram(run, filter);
    if (ctx.alive()) clear(histBox).appendChild(histogram(hist));
  };
  drawHistogram().catch((e) => histBox.appendChild(note(`No histogram: ${e.message}`, 'error')));
  ctx.onChange(() => drawHistogram().catch(() => {}));
  const compareBar = h('div', {class: 'compare-bar'});
  const list = h('div', {id: 'episode-list'}, note('Loading…'));
  app.append(compareBar, list);
  const picked = [];
  const updateCompare = () => {
    clear(compareBar);
    if (picked.length === 2) {
      compareBar.appendChild(h('a', {class: 'button', id: 'compare-link', href: route('compare', {a: `${run}:${picked[0]}`, b: `${run}:${picked[1]}`})}, 'compare the two selected episodes'));
    } else {
      compareBar.appendChild(note(`Select two episodes to compare them side by side (${picked.length} selected).`));
    }
  };
  updateCompare();
  const load = async () => {
    const page = await (firstPage || source.episodes(run, filter, order, offset, PAGE));
    firstPage = null;
    if (!ctx.alive()) return;
    clear(list);
    const first = page.total ? offset + 1 : 0;
    const last = Math.min(offset + page.rows.length, page.total);
    const pager = h('div', {class: 'pager'},
      offset > 0 ? h('a', {href: route(`run/${run}/episodes`, {...params, offset: Math.max(0, offset - PAGE)})}, '← previous') : null,
      h('span', {id: 'page-info'}, ` episodes ${count(first)}–${count(last)} of ${count(page.total)} `),
      last < page.total ? h('a', {href: route(`run/${run}/episodes`, {...params, offset: offset + PAGE})}, 'next →') : null);
    list.appendChild(pager);
    const rows = page.rows.map((r) => {
      const box = h('input', {type: 'checkbox', title: 'select to compare', checked: picked.includes(r.id)});
      box.addEventListener('change', () => {
        const at = picked.indexOf(r.id);
        if (box.checked && at < 0) picked.push(r.id);
        if (!box.checked && at >= 0) picked.splice(at, 1);
        while (picked.length > 2) picked.shift();
        updateCompare();
        for (const other of list.querySelectorAll('input[type=checkbox]')) other.checked = picked.includes(other.dataset.id);
      });
      box.dataset.id = r.id;
      return [box, h('a', {href: route(`run/${run}/episode/${r.id}`)}, r.id), r.task, r.agent, r.condition, r.start, String(r.repeat),
        {cell: r.status, class: `st-${r.status}`}, r.end_reason || '—', String(r.submissions),
        r.final_score === null ? '—' : scoreBadge(r.final_score, r.final_success), String(r.turns), duration(r.wall_ms)];
    });
    list.appendChild(rows.length
      ? sortable(table(['', 'episode', 'task', 'agent', 'condition', 'start', 'repeat', 'status', 'end reason', 'subs', 'score', 'turns', 'wall'], rows, 'grid episodes'))
      : note('No episode matches these filters.'));
    list.appendChild(pager.cloneNode(true));
    markPainted('specgap:episode-list');
  };
  ctx.onChange(load);
  await load();
  searchForm.addEventListener('submit', (event) => {
    event.preventDefault();
    runSearch(searchOut, ctx, run, filter, searchBox.value);
  });
  if (params.q) runSearch(searchOut, ctx, run, filter, params.q);
}

/** Saves the filtered episodes (all pages) as `run-R-episodes.csv`. */
async function downloadCsv(button, run, filter) {
  button.disabled = true;
  try {
    const text = await source.csv(run, filter);
    const url = URL.createObjectURL(new Blob([text], {type: 'text/csv'}));
    // A link to the page's own blob; `h` makes links only to the viewer's routes.
    const a = document.createElement('a');
    a.href = url;
    a.download = `run-${run}-episodes.csv`;
    document.body.appendChild(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10000);
  } catch (e) {
    button.after(note(`Could not export: ${e.message}`, 'error'));
  } finally {
    button.disabled = false;
  }
}

/** Searches the filtered episodes' transcripts part by part, showing matches as they come. */
async function runSearch(out, ctx, run, filter, q) {
  clear(out);
  if (!q.trim()) return;
  const status = h('p', {class: 'muted', id: 'search-status'}, 'searching…');
  let stopped = false;
  const stop = h('button', {type: 'button', on: {click: () => { stopped = true; }}}, 'stop');
  const results = h('ul', {class: 'hits'});
  out.append(h('div', {class: 'search-head'}, status, stop), results);
  let cursor = 0;
  let found = 0;
  while (cursor !== null && !stopped && ctx.alive()) {
    const part = await source.search(run, filter, q, cursor);
    if (!ctx.alive()) return;
    for (const m of part.matches) {
      found += 1;
      results.appendChild(h('li', null,
        h('a', {href: route(`run/${run}/episode/${m.id}`, {at: m.hits[0].index})}, m.id),
        ` ${m.task} · ${m.agent} · ${m.condition} · ${m.start} · repeat ${m.repeat}`,
        h('ul', null, m.hits.map((hit) => h('li', null,
          h('a', {href: route(`run/${run}/episode/${m.id}`, {at: hit.index})}, `event ${hit.seq} (${hit.type})`), ': ',
          h('span', {class: 'snippet'}, hit.snippet))))));
    }
    cursor = part.next;
    status.textContent = `${count(found)} matching episode(s); ${count(part.scanned)} of ${count(part.total)} scanned${cursor === null ? '' : '…'}`;
  }
  stop.remove();
}
