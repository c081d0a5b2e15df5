// One episode: its key and outcome, usage per role, errors, the inherited state of a residual
// start, each submission with its private evaluation and workspace diff, the questions of a
// delivery case with their coverage judgements, the model panels' ballots and extraction
// verdicts, the timeline, and the transcript.

import {source} from './api.js';
import {h, clear, num, pct, count, dollars, duration, scoreBadge, table, route, note, privateBox, hasCustomer, markPainted, foldable} from './dom.js';
import {diffView} from './highlight.js';
import {transcript} from './transcript.js';

/** Episode header lines (shared with the compare page). */
export function summaryTable(d) {
  const e = d.episode;
  const total = {input: 0, output: 0, cost: 0};
  for (const u of d.usage) {
    total.input += u.input_tokens;
    total.output += u.output_tokens;
    total.cost += u.cost_usd;
  }
  return table(['', ''], [
    ['task', e.task], ['agent', e.agent], ['user', e.user], ['condition', e.condition], ['start', e.start], ['repeat', String(e.repeat)],
    ['status', {cell: e.status, class: `st-${e.status}`}], ['end reason', e.end_reason || '—'],
    ['final score', e.final_score === null ? '—' : scoreBadge(e.final_score, e.final_success)],
    ['submissions', String(e.submissions)], ['turns / tool calls', `${e.turns} / ${e.tool_calls}`], ['attempts', String(e.attempts)],
    ['wall time', duration(e.wall_ms)], ['tokens in / out', `${count(total.input)} / ${count(total.output)}`], ['cost', dollars(total.cost, d.priced)],
    ...(e.error ? [['error', e.error]] : []),
  ], 'kv');
}

function usageSection(d) {
  if (!d.usage.length) return null;
  return h('section', null, h('h2', null, 'Model usage per attempt and role'),
    table(['attempt', 'role', 'requests', 'retries', 'input tokens', 'cached', 'output tokens', 'reasoning', 'latency', 'cost'],
      d.usage.map((u) => [String(u.attempt), u.role, count(u.requests), count(u.retries), count(u.input_tokens), count(u.cached_tokens), count(u.output_tokens), count(u.reasoning_tokens), duration(u.latency_ms), dollars(u.cost_usd, d.priced)])));
}

function errorsSection(d) {
  if (!d.errors.length) return null;
  return h('section', null, h('h2', null, 'Errors (all attempts)'),
    table(['attempt', '#', 'class', 'deterministic', 'message', 'stderr'],
      d.errors.map((e) => [String(e.attempt), String(e.idx), e.class, e.deterministic ? 'yes' : 'no', e.message, e.stderr_tail ? h('pre', {class: 'out'}, e.stderr_tail) : ''])));
}

/** A private file (diff or result.json) behind a button, fetched when asked for. */
function lazyFile(label, load, render) {
  const box = h('div', {class: 'lazy'});
  const button = h('button', {type: 'button', class: 'fold'}, label);
  button.addEventListener('click', async () => {
    button.disabled = true;
    button.textContent = 'loading…';
    try {
      const text = await load();
      button.remove();
      box.appendChild(render(text));
    } catch (e) {
      button.disabled = false;
      button.textContent = `could not load: ${e.message}`;
    }
  });
  box.appendChild(button);
  return box;
}

/** The private verdicts of submission `k` (0: the starting state). */
function verdicts(d, k) {
  const parts = [];
  const reqText = new Map((d.requirements || []).map((r) => [r.id, r]));
  const reqs = (d.requirement_outcomes || []).filter((r) => r.k === k);
  if (reqs.length) {
    parts.push(table(['requirement', 'verdict', 'failure mode', 'measured', 'the rule (requirements.toml)'], reqs.map((r) => {
      const t = reqText.get(r.requirement);
      return [h('code', null, r.requirement), {cell: r.pass ? 'pass' : 'FAIL', class: r.pass ? 'pass' : 'fail'}, r.failure_mode || '—',
        Object.keys(r.measured || {}).length ? JSON.stringify(r.measured) : '—', t ? `${t.stated ? '[stated] ' : ''}${t.description}` : '—'];
    })));
  }
  const tests = (d.tests || []).filter((t) => t.k === k);
  if (tests.length) {
    const failing = tests.filter((t) => t.outcome === 'fail' || t.outcome === 'error');
    parts.push(h('p', null, `${tests.length} tests reported; failing: `, failing.length ? failing.map((t) => h('code', {class: 'fail'}, `${t.test} (${t.outcome}) `)) : 'none'));
  }
  for (const del of (d.deliveries || []).filter((x) => x.k === k)) {
    parts.push(h('p', null, `delivery: ${del.valid ? 'valid' : 'not valid'} · objective ${del.objective === null ? '—' : del.objective} · signature ${del.signature || '—'} · ${del.violations.length} violation(s)`),
      del.violations.length ? table(['rule', 'count', 'detail'], del.violations.map((v) => [v.rule, String(v.count), v.detail || ''])) : null);
  }
  return parts;
}

function residualSection(ctx, run, d) {
  if (!d.residual) return null;
  const body = [h('p', null, `The agent started from the residual state `, h('code', null, d.episode.start.replace(/^residual:/, '')), ' a predecessor left (submitted as complete while the verifier still failed).')];
  if (d.private && d.start) {
    const inner = [...verdicts(d, 0)];
    if (d.start.score !== null && d.start.score !== undefined) inner.push(h('p', null, 'Score of the starting state: ', h('strong', null, pct(d.start.score)), d.start.success ? ' — it passes the verifier, so it is not a valid residual state (seed 001 §3.1)' : ''));
    if (d.start.reward !== null && d.start.reward !== undefined) inner.push(h('p', null, `reward on the starting state: ${d.start.reward}`));
    if (d.start.has_result) inner.push(lazyFile('show start/result.json', () => source.resultText(run, d.episode.id, 0), (t) => h('pre', {class: 'out'}, t)));
    if (d.start.has_diff) inner.push(lazyFile('show the inherited changes (start/workspace.diff)', () => source.diffText(run, d.episode.id, 0), diffView));
    body.push(privateBox('the inherited state and its starting evaluation', inner.length ? inner : note('No starting evaluation was recorded.')));
  }
  return h('section', {id: 'residual'}, h('h2', null, 'Inherited state (residual start)'), ...body);
}

function submissionsSection(ctx, run, d) {
  if (!d.submissions.length) return h('section', {id: 'submissions'}, h('h2', null, 'Submissions'), note('No submission.'));
  return h('section', {id: 'submissions'}, h('h2', null, 'Submissions'),
    d.submissions.map((s) => h('div', {class: 'submission'},
      h('h3', null, `Submission ${s.k} · ${s.automatic ? 'automatic final submission' : s.agent_declared ? 'submitted by the agent' : 'submitted'} · `,
        s.valid_evaluation ? scoreBadge(s.score, s.success) : h('span', {class: 'fail'}, 'no valid evaluation')),
      d.private ? h('details', {class: 'private-details', open: s.k === d.submissions.length}, h('summary', null, `private evaluation and workspace diff of submission ${s.k}`), privateBox(`evaluation of submission ${s.k} and its workspace`,
        s.failing_requirement ? h('p', null, 'highest-priority failing requirement (the one fed back): ', h('code', null, s.failing_requirement)) : null,
        s.error ? h('p', {class: 'fail'}, `evaluation error: ${s.error}`) : null,
        ...verdicts(d, s.k),
        s.has_result ? lazyFile('show result.json', () => source.resultText(run, d.episode.id, s.k), (t) => h('pre', {class: 'out'}, t)) : null,
        s.has_diff ? lazyFile(`show the workspace diff (${count(s.diff_bytes)} bytes)`, () => source.diffText(run, d.episode.id, s.k), diffView) : null)) : null)));
}

function questionsSection(d) {
  if (!d.questions.length && !(d.judgements || []).length) return null;
  const body = [];
  if (d.questions.length) {
    body.push(table(['#', 'turn', 'question', 'answer', ...(d.private ? ['matched targets (private)'] : [])],
      d.questions.map((q) => [String(q.idx), String(q.turn), q.text, q.answer, ...(d.private ? [(q.matched_targets || []).join(', ') || '—'] : [])])));
  }
  if (d.private && (d.judgements || []).length) {
    const targets = new Map((d.targets || []).map((t) => [t.id, t]));
    const byJudge = new Map();
    for (const j of d.judgements) {
      if (!byJudge.has(j.judge)) byJudge.set(j.judge, []);
      byJudge.get(j.judge).push(j);
    }
    for (const [judge, rows] of byJudge) {
      body.push(privateBox(`coverage judgements of ${judge}`, table(['target', 'verdict', 'question units', 'type / domain', 'what the customer holds', 'registered answer'],
        rows.map((j) => {
          const t = targets.get(j.target);
          return [h('code', null, j.target), {cell: j.verdict, class: j.verdict === 'covered' ? 'pass' : 'fail'}, j.matched_question_indices.join(', ') || '—',
            t ? `${t.issue_type} / ${t.domain}` : '—', t ? t.description : '—', t ? t.answer : '—'];
        }))));
    }
  }
  return h('section', {id: 'questions'}, h('h2', null, `Questions to the ${hasCustomer(d.episode) ? 'customer' : 'owner'}`), ...body);
}

/** What a panel's use is, in words. */
const PANEL_USE = {judge: 'coverage judge (seed 002 §4.1)', extractor: 'artifact extraction (seed 002 §4.1, A.3)', detector: 'question detector (seed 002 A.9.3)'};

/** A ballot's vote in words: covered or not with the question units (judge), asking with
 *  its questions (detector), a score (extractor); anything else as recorded. */
function voteText(b) {
  if (b.outcome !== 'ballot') return `${b.outcome}: ${b.error || 'no reason recorded'}`;
  const v = b.vote;
  if (v && typeof v === 'object') {
    if ('covered' in v) return `${v.covered ? 'covered' : 'not covered'}${Array.isArray(v.question_indices) && v.question_indices.length ? ` by question(s) ${v.question_indices.join(', ')}` : ''}`;
    if ('asking' in v) return `${v.asking ? 'asks' : 'does not ask'}${Array.isArray(v.questions) && v.questions.length ? `: ${v.questions.join(' | ')}` : ''}`;
    if (typeof v.score === 'number') return `score ${pct(v.score)}${typeof v.valid === 'boolean' ? (v.valid ? ', valid' : ', not valid') : ''}`;
  }
  return JSON.stringify(v);
}

/** One ballot's request and response, folded behind a summary. */
function exchangeView(b) {
  const cut = Object.keys(b.folded || {}).length;
  return h('details', null, h('summary', null, `model exchange${cut ? ` (${cut} long text(s) cut to their first 1,500 characters; whole in results.sqlite, table ballots)` : ''}`),
    foldable(JSON.stringify(b.exchange, null, 2), {cls: 'out raw'}));
}

/** The model panels' work on this episode (private): each panel with its configuration, its
 *  extraction verdicts, and every ballot with its vote and model exchange. */
function panelsSection(d) {
  if (!d.private || !((d.ballots || []).length || (d.extractions || []).length)) return null;
  const names = [...new Set([...(d.panels || []).map((p) => p.name), ...d.ballots.map((b) => b.panel), ...d.extractions.map((x) => x.panel)])];
  const byName = new Map((d.panels || []).map((p) => [p.name, p]));
  const body = names.map((name) => {
    const p = byName.get(name);
    const ballots = d.ballots.filter((b) => b.panel === name);
    const extractions = d.extractions.filter((x) => x.panel === name);
    return h('div', {class: 'panel', dataset: {panel: name}},
      h('h3', null, h('code', null, name), p ? ` · ${PANEL_USE[p.use] || p.use} · prompts ${p.prompt_version}` : ' · (configuration not recorded)'),
      p ? h('details', null, h('summary', null, 'configuration'), h('pre', {class: 'out'}, JSON.stringify(p.config, null, 2))) : null,
      extractions.length ? table(['submission', 'status', 'score', 'success', 'valid', 'objective', 'signature', 'agreeing / sessions'],
        extractions.map((x) => [String(x.k), {cell: x.status, class: x.status === 'scored' ? 'pass' : 'fail'}, x.score === null ? '—' : scoreBadge(x.score, x.success),
          x.success === null ? '—' : x.success ? 'yes' : 'no', x.valid === null ? '—' : x.valid ? 'yes' : 'no', x.objective === null ? '—' : String(x.objective), x.signature || '—', `${x.agreeing} / ${x.routes}`])) : null,
      ballots.length ? table(['subject', 'seat', 'model', 'order', 'vote', 'exchange'],
        ballots.map((b) => [h('code', null, b.subject), String(b.seat), b.model, String(b.position), {cell: voteText(b), class: b.outcome === 'ballot' ? null : 'fail'}, exchangeView(b)])) : null);
  });
  return h('section', {id: 'panels'}, h('h2', null, 'Model panels'), privateBox('ballots and verdicts of the model panels', ...body));
}

const KIND_CLASS = {episode_start: 'k-start', phase_change: 'k-start', agent_turn: 'k-turn', tool_result: 'k-result', user_message: 'k-user', submission: 'k-sub', evaluation: 'k-eval', start_evaluation: 'k-eval', error: 'k-err', end: 'k-end', budget: 'k-err'};

/** The timeline: events bucketed along elapsed time; a click opens the transcript there.
 *  Loaded once `after` resolves (the first page of the transcript comes first). */
function timelineSection(ctx, run, id, onJump, after) {
  const section = h('section', {id: 'timeline'}, h('h2', null, 'Timeline'), note('Loading…'));
  after.then(() => source.timeline(run, id)).then((t) => {
    if (!ctx.alive()) return;
    clear(section).appendChild(h('h2', null, 'Timeline'));
    const events = t.events;
    if (!events.length) {
      section.appendChild(note('No event.'));
      return;
    }
    const end = Math.max(1, ...events.map((e) => e[2] || 0));
    const buckets = Math.min(120, events.length);
    const bars = Array.from({length: buckets}, () => ({n: 0, first: null, kinds: new Map(), tokens: 0}));
    events.forEach((e, index) => {
      const b = bars[Math.min(buckets - 1, Math.floor(((e[2] || 0) / end) * buckets))];
      b.n += 1;
      if (b.first === null) b.first = index;
      b.kinds.set(e[1], (b.kinds.get(e[1]) || 0) + 1);
      b.tokens += e[4] || 0;
    });
    const most = Math.max(...bars.map((b) => b.n));
    const strip = h('div', {class: 'timeline'});
    bars.forEach((b, i) => {
      const top = [...b.kinds.entries()].sort((x, y) => y[1] - x[1])[0];
      const bar = h('button', {type: 'button', class: `tl ${top ? KIND_CLASS[top[0]] || 'k-other' : 'k-none'}`, disabled: b.n === 0,
        title: b.n ? `${duration(Math.round((i / buckets) * end))}: ${b.n} events (${[...b.kinds.entries()].map(([k, n]) => `${n} ${k}`).join(', ')}), ${count(b.tokens)} tokens` : ''});
      bar.style.height = `${b.n ? 8 + Math.round((b.n / most) * 40) : 2}px`;
      if (b.n) bar.addEventListener('click', () => onJump(b.first));
      strip.appendChild(bar);
    });
    const turns = events.filter((e) => e[1] === 'agent_turn').length;
    section.append(strip, h('p', {class: 'muted'}, `${count(events.length)} events, ${count(turns)} turns over ${duration(end)}; a bar opens the transcript at its first event.`));
  }).catch((e) => { if (ctx.alive()) clear(section).appendChild(note(`timeline unavailable: ${e.message}`, 'error')); });
  return section;
}

async function comparePicker(run, d) {
  const box = h('span', {class: 'compare-pick'});
  const page = await source.episodes(run, {task: d.episode.task}, 'key', 0, 200);
  const others = page.rows.filter((r) => r.id !== d.episode.id);
  if (!others.length) return box;
  const select = h('select', {id: 'compare-with'}, h('option', {value: ''}, 'compare with another episode of this task…'),
    others.map((r) => h('option', {value: r.id}, `${r.agent} · ${r.condition} · ${r.start} · repeat ${r.repeat} · score ${pct(r.final_score)}`)));
  select.addEventListener('change', () => {
    if (select.value) location.hash = route('compare', {a: `${run}:${d.episode.id}`, b: `${run}:${select.value}`});
  });
  box.appendChild(select);
  return box;
}

/** The episode page. */
export async function renderEpisode(app, ctx, run, id, params) {
  const d = await source.detail(run, id);
  if (!ctx.alive()) return;
  const e = d.episode;
  const liveNote = h('span', {class: 'live', hidden: !d.live}, 'running');
  app.appendChild(h('div', {class: 'episode-head'},
    h('h1', null, 'Episode ', h('code', null, e.id), ' ', liveNote),
    h('p', {class: 'links'},
      h('a', {href: route(`run/${run}/episodes`, {task: e.task})}, 'episodes of this task'), ' · ',
      h('a', {href: source.trajectoryUrl(run, id), target: '_blank', rel: 'noopener'}, 'raw trajectory (JSON Lines)'), ' · ',
      h('a', {href: source.atifUrl(run, id), target: '_blank', rel: 'noopener'}, 'ATIF trajectory'), ' · ',
      await comparePicker(run, d))));
  const side = h('div', {class: 'episode-side'}, summaryTable(d));
  const body = h('div', {class: 'episode-body'});
  app.appendChild(h('div', {class: 'episode'}, side, body));
  if (d.pending_tail && !d.live) body.appendChild(note(`The trajectory ends in a damaged frame (${d.pending_tail.bytes} bytes at byte ${d.pending_tail.offset}): the run was killed while writing.`, 'error'));
  const box = h('section', {id: 'transcript'}, h('h2', null, 'Transcript'));
  const events = h('div');
  box.appendChild(events);
  let t = null;
  const jump = (index) => t && t.jump(index);
  let transcriptReady;
  const firstPage = new Promise((resolve) => { transcriptReady = resolve; });
  body.append(...[timelineSection(ctx, run, id, jump, firstPage), residualSection(ctx, run, d), submissionsSection(ctx, run, d), questionsSection(d), panelsSection(d), usageSection(d), errorsSection(d)].filter(Boolean), box);
  t = transcript(events, ctx, {run, id, priced: d.priced, customer: hasCustomer(e), total: d.events, at: params.at});
  await t.ready;
  markPainted('specgap:episode-events');
  transcriptReady();
  if (d.live) {
    const timer = setInterval(async () => {
      if (!ctx.alive()) { clearInterval(timer); return; }
      try {
        const v = await source.episodeVersion(run, id);
        await t.refresh(v.events);
        if (!v.live) {
          clearInterval(timer);
          liveNote.hidden = true;
          const fresh = await source.detail(run, id);
          if (ctx.alive()) {
            side.replaceWith(h('div', {class: 'episode-side'}, summaryTable(fresh)));
          }
        }
      } catch (err) {
        // The next poll retries.
      }
    }, 1500);
  }
}
