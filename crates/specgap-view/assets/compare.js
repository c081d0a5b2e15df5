// Two episodes side by side (clean against residual, partial against full, two agents):
// their keys and outcomes in one table, then each one's submissions and transcript.

import {source} from './api.js';
import {h, clear, pct, num, count, dollars, duration, scoreBadge, table, route, note, privateBox, hasCustomer, sortable} from './dom.js';
import {transcript} from './transcript.js';

function parseRef(text) {
  const m = /^(\d+):([0-9a-f]{16})$/.exec(text || '');
  return m ? {run: Number(m[1]), id: m[2]} : null;
}

function totals(d) {
  const t = {input: 0, output: 0, cost: 0};
  for (const u of d.usage) {
    t.input += u.input_tokens;
    t.output += u.output_tokens;
    t.cost += u.cost_usd;
  }
  return t;
}

/** The compare page. */
export async function renderCompare(app, ctx, params) {
  const a = parseRef(params.a);
  const b = parseRef(params.b);
  if (!a || !b) {
    app.appendChild(note('Compare needs two episodes: #/compare?a=RUN:ID&b=RUN:ID (pick them in an episode list).', 'error'));
    return;
  }
  const [da, db] = await Promise.all([source.detail(a.run, a.id), source.detail(b.run, b.id)]);
  if (!ctx.alive()) return;
  app.appendChild(h('h1', null, 'Compare two episodes'));
  const ta = totals(da);
  const tb = totals(db);
  const ea = da.episode;
  const eb = db.episode;
  const row = (label, x, y) => {
    const differs = (x instanceof Node || y instanceof Node) ? false : String(x) !== String(y);
    return [label, {cell: x, class: differs ? 'differs' : ''}, {cell: y, class: differs ? 'differs' : ''}];
  };
  app.appendChild(table(['', 'A', 'B'], [
    ['episode', h('a', {href: route(`run/${a.run}/episode/${a.id}`)}, a.id), h('a', {href: route(`run/${b.run}/episode/${b.id}`)}, b.id)],
    row('task', ea.task, eb.task), row('agent', ea.agent, eb.agent), row('condition', ea.condition, eb.condition), row('start', ea.start, eb.start),
    row('repeat', ea.repeat, eb.repeat), row('status', ea.status, eb.status), row('end reason', ea.end_reason || '—', eb.end_reason || '—'),
    ['final score', ea.final_score === null ? '—' : scoreBadge(ea.final_score, ea.final_success), eb.final_score === null ? '—' : scoreBadge(eb.final_score, eb.final_success)],
    row('submissions', ea.submissions, eb.submissions),
    row('scores by submission', da.submissions.map((s) => pct(s.score)).join(' → ') || '—', db.submissions.map((s) => pct(s.score)).join(' → ') || '—'),
    row('turns', ea.turns, eb.turns), row('tool calls', ea.tool_calls, eb.tool_calls), row('events', count(da.events), count(db.events)),
    row('tokens in / out', `${count(ta.input)} / ${count(ta.output)}`, `${count(tb.input)} / ${count(tb.output)}`),
    row('cost', dollars(ta.cost, da.priced), dollars(tb.cost, db.priced)), row('wall time', duration(ea.wall_ms), duration(eb.wall_ms)),
  ], 'grid compare-table'));
  if (ea.task !== eb.task) app.appendChild(note('These episodes are of different tasks.', 'warn'));
  const column = (ref, d, label) => {
    const col = h('div', {class: 'compare-col', id: `compare-${label}`}, h('h2', null, `${label}: ${d.episode.agent} · ${d.episode.condition} · ${d.episode.start}`));
    if (d.private) {
      const reqs = new Map();
      for (const r of d.requirement_outcomes || []) {
        if (!reqs.has(r.requirement)) reqs.set(r.requirement, []);
        reqs.get(r.requirement).push(`${r.k}:${r.pass ? 'pass' : 'FAIL'}`);
      }
      if (reqs.size) col.appendChild(privateBox('requirement verdicts by submission', table(['requirement', 'k:verdict'], [...reqs].map(([id, v]) => [h('code', null, id), v.join(' ')]))));
      const tests = (d.tests || []).filter((t) => t.outcome === 'fail' || t.outcome === 'error');
      if ((d.tests || []).length) col.appendChild(privateBox('failing tests by submission', h('p', null, tests.length ? tests.map((t) => `${t.k}:${t.test}`).join(', ') : 'none')));
    }
    const box = h('div');
    col.append(h('h3', null, 'Transcript'), box);
    transcript(box, ctx, {run: ref.run, id: ref.id, priced: d.priced, customer: hasCustomer(d.episode), total: d.events});
    return col;
  };
  app.appendChild(h('div', {class: 'compare'}, column(a, da, 'A'), column(b, db, 'B')));
}

/** The form that picks two runs (and, live, a selection of each) to compare. */
export function compareRunsForm(runs, params) {
  const pick = (name, chosen) => h('select', {name},
    runs.map((r) => h('option', {value: String(r.index), selected: String(r.index) === String(chosen)}, `${r.index}: ${r.label}`)));
  const selection = (name) => source.live
    ? h('label', null, `${name === 'select_a' ? 'A' : 'B'} keeps `, h('input', {name, value: params[name] || '', placeholder: 'agent=…,condition=… (empty: all)'}))
    : null;
  const form = h('form', {id: 'compare-runs-form', class: 'filters'},
    h('strong', null, 'Compare two runs'), h('label', null, 'A ', pick('a', params.a ?? 0)), h('label', null, 'B ', pick('b', params.b ?? Math.min(1, runs.length - 1))),
    selection('select_a'), selection('select_b'), h('button', {type: 'submit'}, 'compare'));
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const next = {};
    for (const el of form.elements) if (el.name && el.value !== '') next[el.name] = el.value;
    location.hash = route('compare-runs', next);
  });
  return form;
}

/** A p-value with three decimals (below 0.001 as "< 0.001"). */
function pValue(p) {
  if (p === null || p === undefined) return '—';
  return p < 0.001 ? '< 0.001' : num(p, 3);
}

/** A difference of two fractions in percentage points, signed. */
function points(x) {
  if (x === null || x === undefined) return '—';
  const v = 100 * x;
  return `${v > 0 ? '+' : ''}${v.toFixed(1)} pp`;
}

/** A measure's values: Quality is a ratio to the reference, every other one a fraction. */
function measureValue(measure, x) {
  return measure === 'Quality' ? num(x, 3) : pct(x);
}

/** The whole-run comparison page: run B against run A, task by task (specgap compare). */
export async function renderCompareRuns(app, ctx, params) {
  const runs = await source.runs();
  if (!ctx.alive()) return;
  app.appendChild(h('h1', null, 'Compare two runs'));
  app.appendChild(compareRunsForm(runs, params));
  if (params.a === undefined || params.b === undefined) {
    app.appendChild(note('Pick run A and run B.'));
    return;
  }
  const out = h('div', {id: 'compare-runs'}, note('Comparing (a paired bootstrap over the tasks)…'));
  app.appendChild(out);
  let c;
  try {
    c = await source.compareRuns(params.a, params.b, params.select_a, params.select_b);
  } catch (e) {
    if (ctx.alive()) clear(out).appendChild(note(`No comparison: ${e.message}`, 'error'));
    return;
  }
  if (!ctx.alive()) return;
  clear(out);
  const pair = c.comparisons[0];
  const side = (label, s) => `${label}: ${s.dir}${s.selection ? ` (${s.selection})` : ''} · ${count(s.episodes)} scored episodes · groups ${s.groups.join(', ') || '—'}`;
  out.append(h('p', null, side('A', pair.a)), h('p', null, side('B', pair.b)));
  if (!pair.measures.length) {
    out.appendChild(note('No measure is defined on a task of both runs.'));
    return;
  }
  out.appendChild(sortable(table(['measure', 'tasks', 'A', 'B', 'B − A', `${Math.round(c.confidence * 100)}% interval`, 'Wilcoxon p', 'Holm p'],
    pair.measures.map((m) => {
      const ratio = m.measure === 'Quality';
      const diff = ratio ? (m.difference > 0 ? '+' : '') + num(m.difference, 3) : points(m.difference);
      const interval = m.interval ? (ratio ? `[${num(m.interval[0], 3)}, ${num(m.interval[1], 3)}]` : `[${points(m.interval[0])}, ${points(m.interval[1])}]`) : '—';
      return [m.measure, {cell: String(m.tasks), class: 'num'}, {cell: measureValue(m.measure, m.mean_a), class: 'num'}, {cell: measureValue(m.measure, m.mean_b), class: 'num'},
        {cell: diff, class: 'num'}, interval, {cell: pValue(m.wilcoxon_p), class: 'num'}, {cell: pValue(m.holm_p), class: 'num'}];
    }), 'grid compare-runs-table')));
  out.appendChild(note(`Per-task means paired by task, B − A with a paired bootstrap interval (${count(c.resamples)} resamples, seed ${c.seed}), two-sided Wilcoxon signed-rank p, Holm over the ${c.family.tests} tests (seed 002 §5.1, App. A.6); the same numbers as specgap compare.`));
  for (const m of pair.measures) {
    out.appendChild(h('details', {class: 'per-task'}, h('summary', null, `${m.measure} per task (${m.tasks})`),
      sortable(table(['task', 'A', 'B', 'B − A', 'repeats A', 'repeats B'], m.per_task.map((t) => [t.task,
        {cell: measureValue(m.measure, t.a), class: 'num'}, {cell: measureValue(m.measure, t.b), class: 'num'},
        {cell: m.measure === 'Quality' ? num(t.b - t.a, 3) : points(t.b - t.a), class: 'num'}, String(t.repeats_a), String(t.repeats_b)])))));
  }
}
