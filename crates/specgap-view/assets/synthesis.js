// A synthesis (`specgap synthesize --out DIR`): who played each role, the limits, usage per
// role and in total, the outcome, its journal's entries in order (each entry's hand-off on
// demand) and links to its calibration rollouts' runs, which the viewer shows as any run.

import {source} from './api.js';
import {h, count, dollars, note, route, table, privateBox, foldable} from './dom.js';

/** The synthesis page `#/synthesis/S`; followed while the synthesis goes on (live viewer). */
export async function renderSynthesis(app, ctx, s) {
  let j = await source.synthesis(s);
  if (!ctx.alive()) return;
  const page = h('div', {id: 'synthesis'});
  app.appendChild(page);
  fill(page, s, j);
  ctx.every(3000, async () => {
    try {
      const fresh = await source.synthesis(s);
      if (!ctx.alive()) return;
      const status = (x) => (x.outcome ? x.outcome.status : null);
      if (fresh.entries.length !== j.entries.length || status(fresh) !== status(j)) {
        j = fresh;
        fill(page, s, j);
      }
    } catch (e) {
      // A journal caught while it is rewritten does not parse; the next poll retries.
    }
  });
}

function fill(page, s, j) {
  while (page.firstChild) page.removeChild(page.firstChild);
  page.appendChild(h('h1', null, `Synthesis ${j.label}`));
  page.appendChild(overview(j));
  page.appendChild(h('h2', null, 'Limits'));
  page.appendChild(limitsTable(j.limits));
  page.appendChild(h('h2', null, `Usage (${count(j.total.tokens)} tokens, ${dollars(j.total.cost_usd, true)})`));
  page.appendChild(usageTable(j));
  page.appendChild(h('h2', null, 'Calibration rollouts'));
  page.appendChild(j.rollouts.length
    ? h('ul', {class: 'rollout-runs'}, j.rollouts.map((r) => h('li', null,
      h('a', {href: route(`run/${r.run}`)}, `design ${r.design}, iteration ${r.iteration}`), ' · ',
      h('a', {href: route(`run/${r.run}/episodes`)}, 'episodes'))))
    : note('No rollouts run store (no --reference, or the synthesis has not reached them).'));
  page.appendChild(h('h2', null, `Journal (${count(j.entries.length)} entries)`));
  page.appendChild(entriesTable(s, j));
}

function overview(j) {
  const o = j.outcome;
  const outcome = o
    ? [h('span', {class: o.status === 'ready' ? 'pass' : 'fail'}, o.status), o.message ? ` — ${o.message}` : '']
    : h('span', {class: 'warn'}, 'not ended (in progress, or interrupted)');
  const rows = [['outcome', outcome]];
  if (o && o.package) rows.push(['package', o.package]);
  rows.push(['source', j.source]);
  for (const [role, label] of Object.entries(j.roles)) rows.push([role, label]);
  rows.push(['resumed', `${count(j.resumed)} time(s)`]);
  return table(['', ''], rows, 'kv');
}

function limitsTable(l) {
  const none = (x) => (x === undefined || x === null ? 'none' : x);
  return table(['limit', 'value'], [
    ['--max-iterations', l.max_iterations],
    ['--max-redesigns', l.max_redesigns],
    ['--max-retries', l.max_retries],
    ['--requirements', l.brief.requirements],
    ['--min-withheld', l.brief.min_withheld],
    ['--max-tokens', none(l.max_tokens) === 'none' ? 'none' : count(l.max_tokens)],
    ['--max-cost', none(l.max_cost_usd) === 'none' ? 'none' : `$${l.max_cost_usd}`],
  ], 'kv');
}

const USAGE_KEYS = ['input_tokens', 'output_tokens', 'cached_tokens', 'reasoning_tokens', 'requests', 'retries', 'latency_ms'];

function usageTable(j) {
  const roles = Object.keys(j.usage);
  if (!roles.length) return note('Nothing spent (scripted roles and checks spend nothing).');
  const row = (name, u) => [name, ...USAGE_KEYS.map((k) => ({cell: count(u[k]), class: 'num'})), {cell: dollars(u.cost_usd, true), class: 'num'}];
  const rows = roles.map((role) => row(role, j.usage[role]));
  const total = {cost_usd: j.total.cost_usd};
  for (const k of USAGE_KEYS) total[k] = roles.reduce((sum, role) => sum + (j.usage[role][k] || 0), 0);
  rows.push(row('total', total));
  const out = [table(['role', 'input', 'output', 'cached', 'reasoning', 'requests', 'retries', 'latency ms', 'cost'], rows)];
  const carried = Object.keys(j.carried);
  if (carried.length) {
    out.push(h('p', {class: 'muted'}, 'Carried from earlier runs of this synthesis (requests that gave no answer; included above): ',
      carried.map((role) => `${role} ${count(j.carried[role].input_tokens + j.carried[role].output_tokens)} tokens`).join(', ')));
  }
  return h('div', null, out);
}

function entriesTable(s, j) {
  const headers = ['seq', 'stage', 'design', 'iteration', 'attempt', 'status', 'tokens', 'cost', 'hand-off'];
  const body = h('tbody');
  for (const e of j.entries) {
    const tr = h('tr', {class: 'entry', dataset: {seq: e.seq}},
      h('td', {class: 'num'}, e.seq), h('td', null, e.stage), h('td', {class: 'num'}, e.design),
      h('td', {class: 'num'}, e.iteration), h('td', {class: 'num'}, e.attempt),
      h('td', {class: statusClass(e.status)}, e.status, e.retried ? ' (retry)' : ''),
      h('td', {class: 'num'}, e.tokens === null ? '—' : count(e.tokens)),
      h('td', {class: 'num'}, dollars(e.cost_usd, e.cost_usd !== null)),
      h('td', null, handoffCell(s, j, e, body)));
    body.appendChild(tr);
  }
  return h('table', {class: 'grid journal'}, h('thead', null, h('tr', null, headers.map((x) => h('th', null, x)))), body);
}

function statusClass(status) {
  if (status === 'accepted' || status === 'passed' || status === 'ran') return 'pass';
  if (status === 'malformed' || status === 'failed' || status === 'error') return 'fail';
  return '';
}

function handoffCell(s, j, e, body) {
  const run = e.run === null ? null : h('a', {href: route(`run/${e.run}/episodes`)}, `run ${e.run}`);
  if (!j.handoffs) return [run, run ? ' · ' : '', h('span', {class: 'muted'}, 'private (not in this site)')];
  let shown = null;
  const button = h('button', {type: 'button', class: 'show-entry'}, 'show');
  button.addEventListener('click', async () => {
    if (shown) {
      shown.remove();
      shown = null;
      button.textContent = 'show';
      return;
    }
    button.disabled = true;
    try {
      const whole = await source.synthesisEntry(s, e.seq);
      const row = button.closest('tr');
      shown = h('tr', {class: 'entry-detail'}, h('td', {colspan: 9}, entryDetail(whole)));
      row.after(shown);
      button.textContent = 'hide';
    } catch (err) {
      button.textContent = `could not load: ${err.message}`;
    }
    button.disabled = false;
  });
  return [run, run ? ' · ' : '', button];
}

function pretty(value) {
  return JSON.stringify(value, null, 2);
}

function entryDetail(e) {
  const parts = [];
  if (e.retry_reason !== null) parts.push(h('h4', null, 'Retry reason'), foldable(e.retry_reason));
  if (e.inputs !== null) parts.push(h('h4', null, 'Inputs'), foldable(pretty(e.inputs)));
  if (e.reply !== null) parts.push(h('h4', null, 'Reply'), foldable(e.reply));
  parts.push(h('h4', null, 'Detail'), typeof e.detail === 'string' ? foldable(e.detail) : foldable(pretty(e.detail)));
  if (e.run !== null && e.detail && Array.isArray(e.detail.rollouts)) {
    parts.push(h('h4', null, 'Rollout episodes'), h('ul', null, e.detail.rollouts.map((r) => h('li', null,
      h('a', {href: route(`run/${e.run}/episode/${r.rollout}`)}, r.rollout), ` · ${r.condition} · ${r.status} · score ${r.score}`))));
  }
  if (e.usage) parts.push(h('h4', null, 'Usage'), foldable(pretty(e.usage)));
  return privateBox(`journal entry ${e.seq}: the ${e.stage} hand-off`, ...parts);
}
