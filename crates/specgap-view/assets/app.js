// The viewer's router: hash routes, one view at a time, live updates by polling the store's
// data version while a runner is alive.
//
//   #/                              the runs
//   #/run/R                         a run: groups, task × agent matrix, usage, errors
//   #/run/R/episodes?FILTER         the episode list, filters and transcript search
//   #/run/R/episode/ID?at=N         one episode (N: an event to open at)
//   #/compare?a=R:ID&b=R:ID         two episodes side by side
//   #/compare-runs?a=R&b=R&select_a&select_b   run B against run A (specgap compare)
//   #/synthesis/S                   a synthesis: its journal, limits, usage, outcome, rollout runs

import {source} from './api.js';
import {h, clear, note, route, count, progressText} from './dom.js';
import {renderOverview, renderEpisodeList} from './run.js';
import {renderEpisode} from './episode.js';
import {renderCompare, renderCompareRuns, compareRunsForm} from './compare.js';
import {renderSynthesis} from './synthesis.js';

const app = document.getElementById('app');
const nav = document.getElementById('nav');
const liveBadge = document.getElementById('live');

let generation = 0;
let poll = null;
/** Intervals of the current view (`ctx.every`), cleared when another route renders. */
let viewTimers = [];

/** The current view's context: `alive()` turns false as soon as another route renders, so
 *  late answers of an earlier view are dropped; `onChange` registers what to do when the
 *  run's store changes (live runs). */
function context() {
  const mine = ++generation;
  const listeners = [];
  viewTimers.forEach(clearInterval);
  viewTimers = [];
  const alive = () => mine === generation;
  return {
    alive,
    onChange: (fn) => listeners.push(fn),
    // Calls `fn` every `ms` while this view is shown (live sources only: a static site's
    // data never changes).
    every: (ms, fn) => {
      if (!source.live) return;
      viewTimers.push(setInterval(() => { if (alive()) fn(); }, ms));
    },
    listeners,
  };
}

function parse() {
  const hash = location.hash.replace(/^#\/?/, '');
  const [path, q] = hash.split('?');
  return {parts: path.split('/').filter(Boolean).map(decodeURIComponent), params: Object.fromEntries(new URLSearchParams(q || ''))};
}

function setNav(run) {
  clear(nav);
  if (run === null) return;
  nav.appendChild(h('a', {href: route(`run/${run}`)}, 'Overview'));
  nav.appendChild(h('a', {href: route(`run/${run}/episodes`)}, 'Episodes'));
  nav.appendChild(h('a', {href: route('compare-runs', {a: run})}, 'Compare runs'));
}

async function startPolling(run, ctx) {
  if (poll) clearInterval(poll);
  poll = null;
  liveBadge.hidden = true;
  if (!source.live || run === null) return;
  let last = null;
  const tick = async () => {
    if (!ctx.alive()) return;
    try {
      const v = await source.version(run);
      liveBadge.hidden = !v.live;
      if (last !== null && v.data_version !== last) ctx.listeners.forEach((fn) => fn());
      last = v.data_version;
    } catch (e) {
      // A transient failure of one poll is not worth a message; the next poll retries.
    }
  };
  await tick();
  poll = setInterval(tick, 2000);
}

async function render() {
  const {parts, params} = parse();
  const ctx = context();
  clear(app);
  try {
    if (parts.length === 0) {
      setNav(null);
      await renderRuns(ctx);
    } else if (parts[0] === 'run' && parts.length >= 2) {
      const run = Number(parts[1]);
      setNav(run);
      startPolling(run, ctx);
      if (parts.length === 2) await renderOverview(app, ctx, run);
      else if (parts[2] === 'episodes') await renderEpisodeList(app, ctx, run, params);
      else if (parts[2] === 'episode' && parts[3]) await renderEpisode(app, ctx, run, parts[3], params);
      else app.appendChild(note(`No such page: ${location.hash}`, 'error'));
    } else if (parts[0] === 'synthesis' && parts.length === 2) {
      setNav(null);
      await renderSynthesis(app, ctx, Number(parts[1]));
    } else if (parts[0] === 'compare-runs') {
      setNav(null);
      await renderCompareRuns(app, ctx, params);
    } else if (parts[0] === 'compare') {
      // The nav of the run the first episode (or run) is of: the page is reached from it.
      const first = /^(\d+)(:|$)/.exec(params.a || '');
      setNav(first ? Number(first[1]) : null);
      await renderCompare(app, ctx, params);
    } else {
      app.appendChild(note(`No such page: ${location.hash}`, 'error'));
    }
  } catch (e) {
    if (ctx.alive()) app.appendChild(note(`Could not load this page: ${e.message}`, 'error'));
  }
}

async function renderRuns(ctx) {
  const [runs, syntheses] = await Promise.all([source.runs(), source.syntheses()]);
  if (!ctx.alive()) return;
  // One synthesis given alone (its rollout runs are its own): its page.
  const rollouts = new Map();
  for (const s of syntheses) for (const r of s.rollouts) rollouts.set(r.run, {...r, synthesis: s});
  if (syntheses.length === 1 && runs.every((r) => rollouts.has(r.index))) {
    location.replace(route('synthesis/0'));
    return;
  }
  if (syntheses.length === 0 && runs.length === 1) {
    location.replace(route('run/0'));
    return;
  }
  if (syntheses.length) {
    app.appendChild(h('h1', null, 'Syntheses'));
    app.appendChild(h('ul', {class: 'syntheses'}, syntheses.map((s) => h('li', null,
      h('a', {href: route(`synthesis/${s.index}`)}, s.label),
      ` · ${count(s.entries)} journal entries · ${s.status || 'not ended'}`))));
  }
  app.appendChild(h('h1', null, 'Runs'));
  let list = runList(runs);
  app.appendChild(list);
  app.appendChild(compareRunsForm(runs, {}));
  // The counts follow the runs while they go on (and once more after they end).
  ctx.every(2000, async () => {
    try {
      const fresh = runList(await source.runs());
      if (!ctx.alive()) return;
      list.replaceWith(fresh);
      list = fresh;
    } catch (e) {
      // A failed poll is retried by the next one.
    }
  });
}

function runList(runs) {
  return h('ul', {class: 'runs'}, runs.map((r) => h('li', null,
    h('a', {href: route(`run/${r.index}`)}, r.label),
    ` · seed ${r.seed} · `, h('span', {class: 'progress'}, progressText(r.progress)),
    r.live ? h('span', {class: 'live'}, 'live') : null)));
}

window.addEventListener('hashchange', render);
render();
