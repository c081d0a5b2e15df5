// An episode's transcript, loaded in pages: what the agent was told (and, in plan mode, what
// it is told from a phase change on), each turn with its tool calls and their results (long
// outputs folded), the owner's or customer's messages, submissions and, fenced as private,
// their evaluations. Event kinds this viewer does not know are shown named, as recorded;
// kinds withheld from a public site say so.

import {source, EVENT_PAGE} from './api.js';
import {h, clear, count, dollars, duration, foldable, privateBox, atPointer, num, pct} from './dom.js';

function speakerOf(kind, customer) {
  const who = customer ? 'customer' : 'owner';
  return {answer: `${who} answers`, feedback: `${who} reports back`, reminder: 'harness reminder', continuation: `${who} continues`, stage: 'next stage of the task'}[kind] || `${who} (${kind})`;
}

/** A string field of an event, folded when long; `pointer` names it for fetching the whole. */
function textField(ctx, item, pointer, cls = 'out') {
  const value = atPointer(item.event, pointer);
  const text = typeof value === 'string' ? value : JSON.stringify(value, null, 2);
  const total = item.folded && item.folded[pointer] !== undefined ? item.folded[pointer] : null;
  const full = total === null ? null : async () => {
    const whole = await source.event(ctx.run, ctx.id, item.index);
    const v = atPointer(whole, pointer);
    return typeof v === 'string' ? v : JSON.stringify(v, null, 2);
  };
  return foldable(text, {totalChars: total, full, cls});
}

function argumentsView(ctx, item, callIndex, args) {
  if (!args || typeof args !== 'object' || Array.isArray(args)) {
    return h('pre', {class: 'args'}, JSON.stringify(args));
  }
  return h('div', {class: 'args'}, Object.entries(args).map(([key, value]) => {
    const pointer = `/tool_calls/${callIndex}/arguments/${key.replace(/~/g, '~0').replace(/\//g, '~1')}`;
    if (typeof value === 'string' && (value.includes('\n') || value.length > 120 || (item.folded && item.folded[pointer] !== undefined))) {
      return h('div', {class: 'arg'}, h('span', {class: 'arg-key'}, `${key}:`), textField(ctx, item, pointer, 'out arg-text'));
    }
    return h('div', {class: 'arg'}, h('span', {class: 'arg-key'}, `${key}: `), h('code', null, typeof value === 'string' ? value : JSON.stringify(value)));
  }));
}

function usageLine(u, priced) {
  if (!u) return null;
  return h('span', {class: 'usage'}, `${count(u.input_tokens)} in (${count(u.cached_tokens)} cached) / ${count(u.output_tokens)} out tokens · ${dollars(u.cost_usd, priced)} · ${duration(u.latency_ms)} model time`);
}

/** The tools offered (at the start, or from a phase change on), folded. */
function toolList(tools) {
  const list = Array.isArray(tools) ? tools : [];
  return h('details', {class: 'tools'}, h('summary', null, `Tools offered (${list.length})`),
    h('ul', null, list.map((t) => h('li', null, h('code', null, String(t.name)), `(${Object.keys((t.parameters && t.parameters.properties) || {}).join(', ')}) — `, String(t.description || '')))));
}

/** A kind this viewer does not know (a newer specgap's, e.g. a cli: agent's model exchange):
 *  named, with its fields as recorded (long strings folded; the whole event on demand). */
function genericCard(ctx, item, card) {
  const e = item.event;
  const text = JSON.stringify(e, null, 2);
  const cut = Object.entries(item.folded || {});
  const folded = cut.length > 0;
  // The whole event's length: the page's text plus what each folded string left out.
  const total = cut.reduce((n, [pointer, chars]) => n + chars - String(atPointer(e, pointer) || '').length, text.length);
  const full = async () => JSON.stringify(await source.event(ctx.run, ctx.id, item.index), null, 2);
  const name = typeof e.type === 'string' && e.type ? e.type.replace(/_/g, ' ') : '(no kind)';
  return card('ev-unknown', `Event: ${name}`, h('p', {class: 'muted'}, `This viewer does not know events of kind ${e.type || '(none)'} (written by a newer specgap); here it is as recorded:`),
    foldable(text, {totalChars: folded ? total : null, full: folded ? full : null, cls: 'out raw'}));
}

/** The card of one event. `next` is the event after it in the page (for a turn's time). */
export function eventCard(ctx, item, next) {
  const e = item.event;
  const at = h('span', {class: 'at', title: `event ${e.seq}`}, `#${e.seq} · ${duration(e.elapsed_ms)}`);
  const card = (cls, title, ...body) => h('article', {class: `ev ${cls}`, id: `ev-${item.index}`, dataset: {index: item.index, type: e.type}}, h('header', null, h('strong', null, title), ' ', at), ...body);
  switch (e.type) {
    case 'episode_start':
      return card('ev-start', 'What the agent was told',
        h('h4', null, 'System prompt'), textField(ctx, item, '/system_prompt'),
        h('h4', null, 'Opening message'), textField(ctx, item, '/opening_message'),
        toolList(e.tools));
    case 'agent_turn': {
      const spent = next && next.event && typeof next.event.elapsed_ms === 'number' ? next.event.elapsed_ms - e.elapsed_ms : null;
      return card('ev-turn', `Turn ${e.turn}`,
        h('div', {class: 'meta'}, [usageLine(e.usage, ctx.priced), spent !== null ? h('span', {class: 'spent'}, `${duration(spent)} until the next event`) : null].filter(Boolean).map((x, i) => (i ? [' · ', x] : x))),
        e.text ? textField(ctx, item, '/text', 'out says') : null,
        (e.tool_calls || []).length === 0 ? h('p', {class: 'muted'}, '(no tool call)') : null,
        (e.tool_calls || []).map((call, i) => h('div', {class: 'call'}, h('div', {class: 'call-head'}, '→ ', h('code', null, call.tool), h('span', {class: 'muted'}, ` ${call.id}`)), argumentsView(ctx, item, i, call.arguments))));
    }
    case 'tool_result':
      return card(`ev-result${e.is_error ? ' is-error' : ''}`, `← ${e.tool}${e.is_error ? ' (error)' : ''} · answers ${e.call_id}`, textField(ctx, item, '/output'));
    case 'user_message':
      return card(`ev-user ev-${e.kind}`, speakerOf(e.kind, ctx.customer), textField(ctx, item, '/text', 'out said'), e.usage ? h('div', {class: 'meta'}, 'user model: ', usageLine(e.usage, ctx.priced)) : null);
    case 'phase_change':
      return card('ev-start ev-phase', `Phase change: ${e.phase} — what the agent is told from here on`,
        h('h4', null, 'System prompt'), textField(ctx, item, '/system_prompt'),
        toolList(e.tools));
    case 'overlay':
      return card('ev-harness', 'Harness action apply_overlay', h('p', null, 'The solution overlay ', h('code', null, e.name), ' was copied over the workspace (scripted agent).'));
    case 'submission':
      return card('ev-submission', `Submission ${e.k}: ${e.automatic ? 'automatic final submission' : 'submitted by the agent'}`, e.summary ? textField(ctx, item, '/summary') : null);
    case 'evaluation':
      return card('ev-evaluation', `Evaluation of submission ${e.k}`,
        privateBox(`evaluation of submission ${e.k}`,
          h('p', null, 'score ', h('strong', null, pct(e.score)), ` · ${e.success ? 'success' : 'not a success'}`,
            e.failing_requirement ? [' · highest-priority failing requirement ', h('code', null, e.failing_requirement)] : null)));
    case 'start_evaluation':
      return card('ev-evaluation', `Evaluation of the inherited state ${e.state}`,
        privateBox('evaluation of the residual starting state',
          h('p', null, 'score ', h('strong', null, pct(e.score)), ` · ${e.success ? 'passes the verifier: not a valid residual state' : 'fails the verifier, as a residual state must'}`)));
    case 'budget':
      return card('ev-budget', 'Budget exhausted', h('p', null, `${e.which}: ${count(e.used)} of ${count(e.limit)}`));
    case 'error':
      return card('ev-error', `${e.class} error`, h('p', null, e.message), e.stderr_tail ? textField(ctx, item, '/stderr_tail') : null);
    case 'end':
      return card('ev-end', `Episode ended: ${e.reason}`, e.detail ? h('p', null, e.detail) : null);
    case 'network_attempt': {
      const where = e.name ? `${e.record_type || ''} ${e.name}`.trim() : `${String(e.address).includes(':') ? `[${e.address}]` : e.address}:${e.port}`;
      const told = [e.sni ? `TLS server name ${e.sni}` : null, e.http_host ? `HTTP Host ${e.http_host}` : null].filter(Boolean).join(' · ');
      return card('ev-error ev-network', `Network attempt outside the gateway (${e.protocol})`, h('p', null, h('code', null, where), told ? ` · ${told}` : null),
        h('p', {class: 'muted'}, 'Caught by the network tripwire: nothing reached the network.'));
    }
    case 'file_reads': {
      const files = (list) => ((list || []).length ? list.join(', ') : 'none');
      return card('ev-harness ev-reads', `Files read by ${e.call_id}`, e.unmeasured
        ? h('p', {class: 'muted'}, `Not measured (${e.unmeasured}); the report reads the command instead.`)
        : h('p', null, 'read: ', h('code', null, files(e.read)), ' · shown to the agent: ', h('code', null, files(e.shown))));
    }
    case 'network_tripwire':
      return card('ev-budget', e.armed ? `Network tripwire: ${count(e.attempts)} attempt(s) recorded` : 'Network tripwire: not armed', e.note ? h('p', null, e.note) : null);
    case 'withheld':
      return card('ev-withheld', `A private event (${e.kind})`, h('p', {class: 'muted'}, 'Withheld from this published site: it may hold private evaluation data.'));
    default:
      return genericCard(ctx, item, card);
  }
}

/** A paged transcript in `box`: `opts` {run, id, priced, customer, total, at}. Returns a
 *  controller with `jump(index)` and `refresh(total)` (new events of a running episode). */
export function transcript(box, ctx, opts) {
  const state = {first: 0, next: 0, total: opts.total, loading: false};
  const tctx = {run: opts.run, id: opts.id, priced: opts.priced, customer: opts.customer};
  const info = h('p', {class: 'muted page-info'});
  const earlier = h('button', {type: 'button', class: 'fold', hidden: true}, 'load earlier events');
  const list = h('div', {class: 'events'});
  const more = h('button', {type: 'button', class: 'fold more', hidden: true}, 'load more events');
  clear(box).append(info, earlier, list, more);
  let lastItem = null;
  let lastCard = null;

  const describe = () => {
    info.textContent = state.total === 0 ? 'No event recorded.' : `events ${count(state.first + 1)}–${count(state.next)} of ${count(state.total)}`;
    earlier.hidden = state.first === 0;
    more.hidden = state.next >= state.total;
  };

  const page = async (offset) => {
    const p = await source.events(opts.run, opts.id, offset, EVENT_PAGE);
    state.total = Math.max(state.total, p.total);
    return p.events;
  };

  const appendItems = (items) => {
    const frag = document.createDocumentFragment();
    items.forEach((item, i) => {
      if (lastItem && lastItem.event.type === 'agent_turn' && lastCard) {
        // The previous page's last turn learns its time now.
        const replacement = eventCard(tctx, lastItem, item);
        lastCard.replaceWith(replacement);
      }
      const card = eventCard(tctx, item, items[i + 1]);
      frag.appendChild(card);
      lastItem = item;
      lastCard = card;
    });
    list.appendChild(frag);
  };

  const loadNext = async () => {
    if (state.loading || state.next >= state.total) return;
    state.loading = true;
    try {
      const items = await page(state.next);
      if (!ctx.alive()) return;
      appendItems(items);
      state.next += items.length;
      describe();
    } finally {
      state.loading = false;
    }
  };

  const jump = async (index) => {
    const start = Math.floor(index / EVENT_PAGE) * EVENT_PAGE;
    state.first = start;
    state.next = start;
    lastItem = null;
    lastCard = null;
    clear(list);
    await loadNext();
    const target = document.getElementById(`ev-${index}`);
    if (target) {
      target.classList.add('target');
      target.scrollIntoView({block: 'start'});
    }
  };

  earlier.addEventListener('click', async () => {
    const start = Math.max(0, state.first - EVENT_PAGE);
    const items = await page(start);
    if (!ctx.alive()) return;
    const frag = document.createDocumentFragment();
    items.forEach((item, i) => frag.appendChild(eventCard(tctx, item, items[i + 1])));
    list.insertBefore(frag, list.firstChild);
    state.first = start;
    describe();
  });
  more.addEventListener('click', loadNext);
  const observer = new IntersectionObserver((entries) => {
    if (entries.some((e) => e.isIntersecting)) loadNext();
  });
  observer.observe(more);

  const ready = (async () => {
    if (opts.at) await jump(Number(opts.at));
    else await loadNext();
    describe();
  })();
  return {
    ready,
    jump,
    /** A running episode wrote more events: load them when the list is at its end. */
    async refresh(total) {
      const atEnd = state.next >= state.total;
      state.total = Math.max(state.total, total);
      if (atEnd) await loadNext();
      describe();
    },
  };
}
