// Two episodes side by side (clean against residual, partial against full, two agents):
// their keys and outcomes in one table, then each one's submissions and transcript.

import {source} from './api.js';
import {h, pct, count, dollars, duration, scoreBadge, table, route, note, privateBox, hasCustomer} from './dom.js';
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
