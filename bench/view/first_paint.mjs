// Time to first paint of the viewer's pages in headless Chromium (BENCHMARKS.md, "Viewer").
//
//   node first_paint.mjs <viewer URL> <episode id> <repeats> [list run index]
//
// Each repeat opens a fresh browser context (no cache, no cookie but the token's) and reads
// the page's own performance mark, set when its content is in the document: the first page
// of events of the 10,000-event episode (`specgap:episode-events`), and the first page of the
// episode list of run 1 (`specgap:episode-list`), and the same name with `:painted`, set two
// animation frames later (the frame holding the content has been painted). Times are
// milliseconds from the navigation's start. The first visit (the server's first read of the
// files: the trajectory's frame index, SQLite's pages) is reported apart as "cold".
// Prints every time and the medians.

import {chromium} from 'playwright-core';

const [url, episode, repeatsText, listRun = '1'] = process.argv.slice(2);
const repeats = Number(repeatsText || 7);
const base = new URL(url);
const token = base.searchParams.get('token');

const browser = await chromium.launch({
  executablePath: '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run', '--disable-sync'],
});

async function time(hash, mark, selector) {
  const context = await browser.newContext({viewport: {width: 1400, height: 1000}});
  const page = await context.newPage();
  await page.goto(`${base.origin}/?token=${token}${hash}`);
  await page.waitForFunction((m) => performance.getEntriesByName(`${m}:painted`).length > 0, mark, {timeout: 60000, polling: 'raf'});
  const ms = await page.evaluate((m) => ({
    mark: performance.getEntriesByName(m)[0].startTime,
    painted: performance.getEntriesByName(`${m}:painted`)[0].startTime,
    fcp: (performance.getEntriesByName('first-contentful-paint')[0] || {}).startTime,
  }), mark);
  const count = await page.locator(selector).count();
  await context.close();
  return {...ms, count};
}

function median(xs) {
  const s = xs.slice().sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
}

const cases = [
  ['episode page, 10,000 events with 64 KiB outputs', `#/run/0/episode/${episode}`, 'specgap:episode-events', '#transcript article.ev'],
];
if (listRun !== 'none') cases.push(['episode list, 100,000-episode run', `#/run/${listRun}/episodes`, 'specgap:episode-list', '#episode-list table.episodes tbody tr']);
for (const [name, hash, mark, selector] of cases) {
  const cold = await time(hash, mark, selector);
  console.log(`${name}: cold (first visit) ${cold.painted.toFixed(0)} ms painted`);
  const runs = [];
  for (let i = 0; i < repeats; i++) runs.push(await time(hash, mark, selector));
  const painted = runs.map((r) => r.painted);
  console.log(`${name}: median ${median(painted).toFixed(0)} ms painted (min ${Math.min(...painted).toFixed(0)}, max ${Math.max(...painted).toFixed(0)}, n=${repeats}); content in the document at ${median(runs.map((r) => r.mark)).toFixed(0)} ms; first contentful paint (the page's frame) ${median(runs.map((r) => r.fcp)).toFixed(0)} ms; ${runs[0].count} items drawn`);
  console.log(`  each (painted): ${painted.map((x) => x.toFixed(0)).join(' ')}`);
}
await browser.close();
