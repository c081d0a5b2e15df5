// Browser tests of `specgap view`, in Debian's Chromium driven by playwright-core (never a
// downloaded browser). Run by crates/specgap-cli/tests/it/view.rs:
//
//   node viewer.test.mjs <viewer URL with token> <static site dir> <screenshot dir> <facts.json>
//
// facts.json names what run 0 holds: {"agent": replay agent spec, "hostile_agent": spec,
// "task": "examples/payment-retry", "delivery_agent": spec, "delivery_episode": id (with
// panel ballots and a model_exchange event)}; run 1 is a plan-mode run of one episode. Every
// step asserts on the page's content; a failure prints the step and exits 1.

import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import {chromium} from 'playwright-core';

const [url, staticDir, shots, factsFile] = process.argv.slice(2);
const facts = JSON.parse(fs.readFileSync(factsFile, 'utf8'));
const origin = new URL(url).origin;
const results = [];

function check(condition, message) {
  if (!condition) throw new Error(message);
}

async function step(name, fn) {
  try {
    await fn();
    results.push({name, ok: true});
    console.log(`ok   ${name}`);
  } catch (e) {
    results.push({name, ok: false, error: e.message});
    console.log(`FAIL ${name}: ${e.stack || e.message}`);
  }
}

const browser = await chromium.launch({
  executablePath: '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run', '--disable-sync'],
});

/** A page that records dialogs, console errors and uncaught errors. */
async function watchedPage(context) {
  const page = await context.newPage({viewport: {width: 1400, height: 1000}});
  page.dialogs = [];
  page.errors = [];
  page.on('dialog', async (d) => { page.dialogs.push(d.message()); await d.dismiss(); });
  page.on('pageerror', (e) => page.errors.push(`pageerror: ${e.message}`));
  page.on('console', (m) => { if (m.type() === 'error') page.errors.push(`console: ${m.text()}`); });
  return page;
}

const context = await browser.newContext({viewport: {width: 1400, height: 1000}});
const page = await watchedPage(context);

await step('the overview shows the groups, the matrix and the usage tables', async () => {
  // Two runs are served: the first page lists them.
  await page.goto(url);
  await page.locator('ul.runs li').nth(1).waitFor();
  check((await page.locator('ul.runs li').count()) === 2, 'both runs are listed');
  const listed = await page.locator('ul.runs li').first().innerText();
  check(/planned \d+ · finished \d+ · running 0 · failed \d+/.test(listed) && listed.includes('done'), `the runs index shows each run's progress: ${listed}`);
  await page.locator('ul.runs li a').first().click();
  await page.waitForURL(/#\/run\/0$/);
  await page.locator('#groups table').waitFor();
  const progress = await page.locator('#progress').innerText();
  check(/^planned \d+ · finished \d+ · running 0 · failed \d+/.test(progress) && progress.endsWith('done') && !progress.includes('ETA'), `the header's progress: ${progress}`);
  const groups = await page.locator('#groups').innerText();
  check(groups.includes('Score@1') && groups.includes('scripted:gold') && groups.includes(facts.agent), `groups: ${groups.slice(0, 400)}`);
  check(groups.includes('delivery scores of cases with a submission schema: extraction panel panel:00000000000b'), `the verdicts behind the measures: ${groups.slice(-400)}`);
  const matrix = await page.locator('#matrix table').innerText();
  check(matrix.includes(facts.task) && matrix.includes('scripted:gold'), `matrix: ${matrix.slice(0, 300)}`);
  const cell = page.locator('#matrix td.cell a').first();
  check((await cell.getAttribute('href')).startsWith('#/run/0/episodes?'), 'matrix cells link to their episodes');
  check((await page.locator('#not-applicable').innerText()).includes('needs'), 'not-applicable combinations are listed apart');
  await page.screenshot({path: path.join(shots, 'overview.png')});
});

await step('the overview header and the runs index follow a run while it goes on', async () => {
  await page.goto(`${origin}/#/run/0`);
  const before = await page.locator('#progress').innerText();
  const real = await (await page.request.get(`${origin}/api/runs`)).json();
  // The run "goes on": later polls answer with more episodes planned, two running and an
  // estimate, as a runner writing to the store would make them.
  const going = JSON.parse(JSON.stringify(real));
  going[0].progress = {...going[0].progress, planned: going[0].progress.planned + 5, running: 2, not_started: 3, state: 'running', live: true, eta_ms: 90000};
  await page.route('**/api/runs', (r) => r.fulfill({json: going}));
  try {
    await page.locator('#progress', {hasText: 'ETA 90.0 s'}).waitFor({timeout: 10000});
    const now = await page.locator('#progress').innerText();
    check(now.includes('running 2') && now.includes('not started 3') && now !== before, `header: ${before} → ${now}`);
    await page.goto(`${origin}/#/`);
    await page.locator('ul.runs li:first-child .progress', {hasText: 'ETA 90.0 s'}).waitFor({timeout: 10000});
    // The run ends: the next polls say so, and the estimate goes.
    await page.route('**/api/runs', (r) => r.fulfill({json: real}));
    await page.locator('ul.runs li:first-child .progress', {hasText: 'done'}).waitFor({timeout: 10000});
    check(!(await page.locator('ul.runs li .progress').first().innerText()).includes('ETA'), 'no estimate once done');
  } finally {
    await page.unroute('**/api/runs');
  }
});

await step('the episode list filters to one agent', async () => {
  await page.goto(`${origin}/#/run/0`);
  await page.click('#nav a:has-text("Episodes")');
  await page.locator('#episode-list table').waitFor();
  await page.selectOption('select[name=agent]', facts.agent);
  await page.click('#filters button[type=submit]');
  await page.waitForURL((u) => decodeURIComponent(u.hash).includes(`agent=${facts.agent}`));
  await page.locator('#episode-list table').waitFor();
  const agents = await page.locator('#episode-list table.episodes tbody tr td:nth-child(4)').allInnerTexts();
  check(agents.length > 0 && agents.every((a) => a === facts.agent), `agents listed: ${agents}`);
  const info = await page.locator('#page-info').first().innerText();
  check(new RegExp(`of ${agents.length}\\b`).test(info), `page info: ${info}`);
  await page.screenshot({path: path.join(shots, 'episodes.png')});
});

await step('the transcript search finds an episode', async () => {
  await page.fill('#search', 'Kettle & Crumb');
  await page.click('form.search button');
  await page.locator('#search-status').filter({hasText: /scanned$/}).waitFor({timeout: 20000}).catch(() => {});
  await page.locator('#search-results ul.hits > li').first().waitFor();
  const text = await page.locator('#search-results').innerText();
  check(/matching episode/.test(text) && text.includes(facts.task), `search: ${text.slice(0, 300)}`);
});

let episodeUrl = null;
await step('an episode opens with what the agent was told and its turns', async () => {
  const row = page.locator('#episode-list table.episodes tbody tr', {hasText: facts.task}).filter({hasText: 'partial'}).first();
  await row.locator('td:nth-child(2) a').click();
  await page.locator('#transcript article.ev').first().waitFor();
  episodeUrl = page.url();
  const side = await page.locator('.episode-side').innerText();
  check(side.includes(facts.task) && side.includes(facts.agent) && side.includes('partial'), `header: ${side}`);
  const transcript = await page.locator('#transcript').innerText();
  check(transcript.includes('What the agent was told') && transcript.includes('Turn 1') && transcript.includes('read_text'), 'transcript content');
  check((await page.locator('#timeline .tl').count()) > 0, 'a timeline is drawn');
});

await step('a folded tool result expands', async () => {
  const result = page.locator('article.ev-result').filter({has: page.locator('button.fold')}).first();
  const pre = result.locator('pre');
  const before = (await pre.innerText()).length;
  check(await pre.evaluate((el) => el.classList.contains('clamped')), 'the long result starts folded');
  await result.locator('button.fold').click();
  await page.waitForFunction((el) => !el.classList.contains('clamped'), await pre.elementHandle());
  const after = (await pre.innerText()).length;
  check(after >= before && (await result.locator('button.fold').innerText()) === 'show less', `expanded ${before} → ${after}`);
});

await step('a submission shows its fenced private evaluation and its highlighted diff', async () => {
  const box = page.locator('#submissions details[open] .private').last();
  const text = await box.innerText();
  check(text.startsWith('PRIVATE — evaluation of submission'), `private label: ${text.slice(0, 120)}`);
  check(text.includes('never shown to the agent') && /pass|FAIL/.test(text) && text.includes('the rule (requirements.toml)'), 'verdicts with the requirement text');
  await box.locator('button:has-text("show the workspace diff")').click();
  await box.locator('.diff .d-add').first().waitFor();
  const added = await box.locator('.diff .d-add').count();
  const files = await box.locator('.diff .d-file').allInnerTexts();
  check(added > 0 && files.some((f) => f.startsWith('diff --git a/shop/checkout.py')), `diff: ${added} added lines, files ${files.slice(0, 3)}`);
  check((await box.locator('.diff .tk-keyword').count()) > 0, 'python keywords are highlighted');
  await box.scrollIntoViewIfNeeded();
  await page.screenshot({path: path.join(shots, 'episode.png')});
});

await step('the compare page shows the two episodes side by side', async () => {
  const options = await page.locator('#compare-with option').allInnerTexts();
  check(options.length > 1, `compare options: ${options}`);
  const value = await page.locator('#compare-with option').nth(1).getAttribute('value');
  await page.selectOption('#compare-with', value);
  await page.waitForURL(/#\/compare\?/);
  await page.locator('#compare-A article.ev').first().waitFor();
  await page.locator('#compare-B article.ev').first().waitFor();
  const table = await page.locator('table.compare-table').innerText();
  check(table.includes(facts.task) && table.includes('final score') && table.includes('scores by submission'), `compare table: ${table.slice(0, 300)}`);
  check((await page.locator('.compare-col').count()) === 2, 'two columns');
  const nav = await page.locator('#nav').innerText();
  check(nav.includes('Overview') && nav.includes('Episodes'), `the nav bar stays on the compare page: "${nav}"`);
  await page.screenshot({path: path.join(shots, 'compare.png')});
});

await step('the episode list sorts by a column, draws the score histogram and exports its CSV', async () => {
  await page.goto(`${origin}/#/run/0/episodes`);
  await page.locator('#episode-list table.episodes').waitFor();
  const total = Number(/of (\d+)/.exec(await page.locator('#page-info').first().innerText())[1]);
  const turns = () => page.locator('#episode-list table.episodes tbody tr td:nth-child(12)').allInnerTexts();
  await page.click('#episode-list table.episodes th:has-text("turns")');
  const up = (await turns()).map(Number);
  check(up.every((x, i) => i === 0 || up[i - 1] <= x), `ascending turns: ${up}`);
  await page.click('#episode-list table.episodes th:has-text("turns")');
  const down = (await turns()).map(Number);
  check(down.every((x, i) => i === 0 || down[i - 1] >= x) && down.length === up.length, `descending turns: ${down}`);
  await page.locator('#score-histogram').waitFor();
  const caption = await page.locator('#score-histogram figcaption').innerText();
  const bars = await page.locator('#score-histogram .hist-n').allInnerTexts();
  const scored = bars.map(Number).reduce((x, y) => x + y, 0);
  check(bars.length === 10 && caption.includes(`(${scored} scored,`), `histogram: ${bars} / ${caption}`);
  const [download] = await Promise.all([page.waitForEvent('download'), page.click('#csv-export')]);
  const csv = fs.readFileSync(await download.path(), 'utf8').trimEnd().split('\n');
  check(csv[0].startsWith('id,task,agent,user,condition,start,repeat,status') && csv.length === total + 1, `csv: ${csv.length} lines for ${total} episodes: ${csv[0]}`);
});

await step('two runs compare as specgap compare compares them, by sortable measures', async () => {
  await page.goto(`${origin}/#/run/0`);
  await page.click('#nav a:has-text("Compare runs")');
  await page.waitForURL(/#\/compare-runs\?a=0$/);
  await page.selectOption('#compare-runs-form select[name=b]', '0');
  await page.click('#compare-runs-form button[type=submit]');
  await page.locator('table.compare-runs-table, #app p.error').first().waitFor({timeout: 30000})
    .catch(async () => { throw new Error(`no comparison shown at ${page.url()}: ${(await page.locator('#app').innerText()).slice(0, 400)}`); });
  const text = await page.locator('#app').innerText();
  check(text.includes('Score@1') && text.includes('0.0 pp') && text.includes('the same numbers as specgap compare'), `comparison: ${text.slice(0, 500)}`);
  await page.click('table.compare-runs-table th:has-text("measure")');
  const names = await page.locator('table.compare-runs-table tbody td:first-child').allInnerTexts();
  check(names.join() === [...names].sort((x, y) => x.localeCompare(y)).join(), `sorted measures: ${names}`);
  check((await overflowingTables(page)).length === 0, `run comparison: ${await overflowingTables(page)}`);
});

await step('a delivery episode shows its questions and coverage judgements', async () => {
  await page.goto(`${origin}/#/run/0/episodes?agent=${encodeURIComponent(facts.delivery_agent)}&condition=interact`);
  await page.locator('#episode-list table.episodes').waitFor();
  await page.locator('#episode-list table.episodes tbody tr', {hasText: 'examples/retail-replenishment'}).first().locator('td:nth-child(2) a').click();
  await page.locator('#questions').waitFor();
  const text = await page.locator('#questions').innerText();
  check(text.includes('Questions to the customer') && text.includes('PRIVATE — coverage judgements of offline:3') && text.includes('covered'), `questions: ${text.slice(0, 300)}`);
  const said = await page.locator('#transcript').innerText();
  check(said.includes('← ask_user') && said.includes('write_text'), 'the questions and the delivery are in the transcript');
});

await step('the delivery episode shows the model panels\' ballots and verdicts, fenced as private', async () => {
  await page.goto(`${origin}/#/run/0/episode/${facts.delivery_episode}`);
  await page.locator('#panels').waitFor();
  const text = await page.locator('#panels').innerText();
  check(text.includes('PRIVATE — ballots and verdicts of the model panels'), `panels: ${text.slice(0, 300)}`);
  check(text.includes('panel:00000000000a') && text.includes('coverage judge') && text.includes('covered by question(s) 0'), `judge ballots: ${text.slice(0, 600)}`);
  check(text.includes('malformed: the reply is not the json asked for'), 'the malformed ballot says why it does not count');
  check(text.includes('panel:00000000000b') && text.includes('artifact extraction') && text.includes('scored') && text.includes('3 / 3'), `extraction: ${text.slice(0, 800)}`);
  await page.locator('#panels details summary', {hasText: 'model exchange'}).first().click();
  check((await page.locator('#panels').innerText()).includes("<script>window.__pwned='ballot'</script>"), 'the exchange is shown as text');
  // The newer event kind (a cli: agent's model exchange) is a named card, not a broken page.
  await page.locator('#transcript article.ev-unknown').first().waitFor();
  const unknown = await page.locator('#transcript article.ev-unknown').first().innerText();
  check(unknown.includes('Event: model exchange') && unknown.includes("window.__pwned='exchange'"), `unknown kind: ${unknown.slice(0, 300)}`);
  check(await page.evaluate(() => window.__pwned) === undefined, 'nothing ran');
  await page.screenshot({path: path.join(shots, 'panels.png'), fullPage: false});
});

await step('a plan-mode episode shows its phase change with the new prompt and tools', async () => {
  await page.goto(`${origin}/#/run/1/episodes`);
  await page.locator('#episode-list table.episodes tbody tr td:nth-child(2) a').first().click();
  await page.locator('#transcript article.ev-phase').waitFor();
  const card = await page.locator('#transcript article.ev-phase').innerText();
  check(card.includes('Phase change: execute') && card.includes('System prompt') && /Tools offered \(\d+\)/.test(card), `phase change: ${card.slice(0, 300)}`);
  const kinds = await page.locator('#transcript article.ev').evaluateAll((els) => els.map((e) => e.dataset.type));
  check(kinds.indexOf('phase_change') > kinds.indexOf('tool_result') && kinds.indexOf('tool_result') > 0, `order: ${kinds}`);
});

await step('an episode whose outputs hold <script> and javascript: links runs nothing', async () => {
  const hostile = await watchedPage(context);
  await hostile.goto(`${origin}/#/run/0/episodes?agent=${encodeURIComponent(facts.hostile_agent)}&condition=partial`);
  await hostile.locator('#episode-list table.episodes').waitFor();
  await hostile.locator('#episode-list table.episodes tbody tr', {hasText: facts.task}).first().locator('td:nth-child(2) a').click();
  await hostile.locator('#transcript article.ev-result').first().waitFor();
  // Unfold every folded text of the transcript (each button then reads "show less").
  const folded = hostile.locator('#transcript button.fold', {hasText: /^show all/});
  for (let i = 0; i < 50 && (await folded.count()) > 0; i++) {
    await folded.first().click();
    await hostile.locator('#transcript button.fold', {hasText: 'loading'}).waitFor({state: 'detached'}).catch(() => {});
  }
  const text = await hostile.locator('#transcript').innerText();
  check(text.includes("<script>window.__pwned='script'</script>"), 'the script is shown as text');
  check(text.includes("javascript:window.__pwned='link'"), 'the javascript: link is shown as text');
  const pwned = await hostile.evaluate(() => window.__pwned);
  check(pwned === undefined, `something ran: window.__pwned = ${pwned}`);
  check(hostile.dialogs.length === 0, `dialogs opened: ${hostile.dialogs}`);
  const injected = await hostile.evaluate(() => ({
    scripts: [...document.scripts].map((s) => s.src),
    jsLinks: [...document.querySelectorAll('a[href]')].filter((a) => /^\s*javascript:/i.test(a.getAttribute('href'))).length,
    images: document.querySelectorAll('#app img, #app iframe').length,
  }));
  check(injected.scripts.length === 1 && injected.scripts[0].endsWith('/assets/app.js'), `scripts: ${injected.scripts}`);
  check(injected.jsLinks === 0 && injected.images === 0, `injected elements: ${JSON.stringify(injected)}`);
  check(hostile.errors.length === 0, `console or page errors: ${hostile.errors}`);
  await hostile.screenshot({path: path.join(shots, 'hostile.png')});
  await hostile.close();
});

await step('a page without the token is refused', async () => {
  const fresh = await browser.newContext();
  const bare = await fresh.newPage();
  const response = await bare.goto(`${origin}/`);
  check(response.status() === 401, `status ${response.status()}`);
  check((await bare.locator('body').innerText()).startsWith('refused: this viewer needs the token'), 'refusal text');
  const outside = await bare.goto(`${origin}/api/run/0/episode/..%2F..%2Fetc%2Fpasswd?token=${new URL(url).searchParams.get('token')}`);
  check(outside.status() === 404 && !(await bare.locator('body').innerText()).includes('root:'), 'a path outside the run is refused');
  await fresh.close();
});

/** Tables of the page wider than their container or than the window, as "what: widths". */
async function overflowingTables(p) {
  return p.evaluate(() => [...document.querySelectorAll('table')].flatMap((t) => {
    const box = t.parentElement;
    const what = `${box.id || box.className || box.tagName} table`;
    if (t.offsetParent === null) return [];
    if (t.scrollWidth > box.clientWidth + 1) return [`${what}: ${t.scrollWidth} px in a ${box.clientWidth} px box`];
    if (t.getBoundingClientRect().right > window.innerWidth + 1) return [`${what}: ends at ${Math.round(t.getBoundingClientRect().right)} px of ${window.innerWidth}`];
    return [];
  }));
}

await step('at 1400 px no table spills out of its box or the window', async () => {
  await page.goto(`${origin}/#/run/0`);
  await page.locator('#groups table').waitFor();
  await page.locator('#matrix table').waitFor();
  check((await overflowingTables(page)).length === 0, `overview: ${await overflowingTables(page)}`);
  check((await page.evaluate(() => document.documentElement.scrollWidth)) <= 1400, 'the overview scrolls sideways');
  await page.goto(episodeUrl);
  await page.locator('#submissions details[open] .private table').first().waitFor();
  for (const details of await page.locator('#submissions details').all()) {
    await details.evaluate((el) => { el.open = true; });
  }
  check((await overflowingTables(page)).length === 0, `episode: ${await overflowingTables(page)}`);
});

await step('the live pages logged no error', async () => {
  check(page.errors.length === 0, `errors: ${page.errors}`);
});

// The static site, served from a plain file server on loopback.
const server = http.createServer((req, res) => {
  const rel = decodeURIComponent(new URL(req.url, 'http://x').pathname).replace(/^\/+/, '') || 'index.html';
  const file = path.resolve(staticDir, rel);
  if (!file.startsWith(path.resolve(staticDir)) || !fs.existsSync(file) || fs.statSync(file).isDirectory()) {
    res.writeHead(404);
    res.end('not found');
    return;
  }
  const types = {'.html': 'text/html', '.js': 'text/javascript', '.css': 'text/css', '.json': 'application/json'};
  res.writeHead(200, {'content-type': types[path.extname(file)] || 'text/plain'});
  fs.createReadStream(file).pipe(res);
});
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const staticOrigin = `http://127.0.0.1:${server.address().port}`;

await step('the static site shows the same pages without private parts', async () => {
  const s = await watchedPage(await browser.newContext());
  await s.goto(`${staticOrigin}/index.html`);
  await s.locator('#groups table').waitFor();
  await s.goto(`${staticOrigin}/index.html#/run/0/episodes?agent=${encodeURIComponent(facts.agent)}`);
  await s.locator('#episode-list table.episodes').waitFor();
  const agents = await s.locator('#episode-list table.episodes tbody tr td:nth-child(4)').allInnerTexts();
  check(agents.length > 0 && agents.every((a) => a === facts.agent), `static filter: ${agents}`);
  // The histogram and the CSV are made in the page from the published list, filtered.
  await s.locator('#score-histogram').waitFor();
  const staticBars = (await s.locator('#score-histogram .hist-n').allInnerTexts()).map(Number);
  const staticCaption = await s.locator('#score-histogram figcaption').innerText();
  check(staticCaption.includes(`(${staticBars.reduce((x, y) => x + y, 0)} scored,`), `static histogram: ${staticCaption}`);
  const [staticDownload] = await Promise.all([s.waitForEvent('download'), s.click('#csv-export')]);
  const staticCsv = fs.readFileSync(await staticDownload.path(), 'utf8').trimEnd().split('\n');
  check(staticCsv.length === agents.length + 1 && staticCsv.slice(1).every((line) => line.split(',')[2] === facts.agent), `static csv: ${staticCsv.slice(0, 3)}`);
  await s.locator('#episode-list table.episodes tbody tr', {hasText: facts.task}).filter({hasText: 'partial'}).first().locator('td:nth-child(2) a').click();
  await s.locator('#transcript article.ev').first().waitFor();
  await s.locator('#transcript article.ev-withheld').first().waitFor();
  check((await s.locator('.private').count()) === 0, 'no private box on a public site');
  const published = await watchedPage(await browser.newContext());
  await published.goto(`${staticOrigin}/index.html#/run/0/episode/${facts.delivery_episode}`);
  await published.locator('#transcript article.ev').first().waitFor();
  check((await published.locator('#panels').count()) === 0 && (await published.locator('.private').count()) === 0, 'no panel ballots on a public site');
  await published.close();
  check((await s.locator('#transcript').innerText()).includes('Withheld from this published site'), 'evaluations are marked withheld');
  await s.screenshot({path: path.join(shots, 'static-episode.png')});
  // The run comparison is published for every pair of runs; selections are the live viewer's.
  await s.goto(`${staticOrigin}/index.html#/compare-runs?a=0&b=1`);
  await s.locator('table.compare-runs-table, #app p.error, #compare-runs p.muted').first().waitFor({timeout: 10000});
  check((await s.locator('#compare-runs-form input').count()) === 0, 'no selection inputs on a published site');
  const refused = await s.locator('#app').innerText();
  check(refused.includes('this site holds the comparisons of each two of its 1 run(s)'), `a site of one run: ${refused.slice(0, 300)}`);
  check(s.errors.length === 0, `errors: ${s.errors}`);
});

server.close();
await browser.close();
const failed = results.filter((r) => !r.ok);
console.log(`${results.length - failed.length} passed, ${failed.length} failed`);
process.exit(failed.length ? 1 : 0);
