// The console's benchmark, run by hand: `node bench/console.mjs` (after
// `npm ci --prefix tests/browser`; needs target/debug/acs and
// target/debug/scripted-agent, or ACS_BIN / ACS_SCRIPTED_AGENT, and
// /usr/bin/chromium). Prints a small table.
//
// (a) Live latency: the conversation page is open; a prompt sent through the
//     API makes the agent `say:` a unique marker (at most 16 bytes, so one
//     output event carries it whole). A MutationObserver in the page records
//     Date.now() when the marker appears in #transcript; that is compared with
//     the `ts` of the output event holding it (GET /api/conversations/{id}/events).
//     p50 and p90 over 20 turns. Goal: p50 < 100 ms.
// (b) First load of a conversation of ~10,000 events (50 turns, each a
//     `say:` of 3200 bytes, split by the agent into 200 chunks of 16 bytes,
//     one event each; the count is read back through the API): navigation to
//     `load` and to the transcript drawn (its last turn in the DOM and laid
//     out), p50 of 5 fresh loads, and the server's RSS (VmRSS) before and
//     after. Goal: p50 < 1 s.
//
// Knobs: BENCH_TURNS (20), BENCH_BIG_TURNS (50), BENCH_LOADS (5).

import { account, api, conversation, launch, say, scriptedAgent, signIn, startServer, until } from '../tests/browser/harness.mjs';

const TURNS = Number(process.env.BENCH_TURNS || 20);
const BIG_TURNS = Number(process.env.BENCH_BIG_TURNS || 50);
const LOADS = Number(process.env.BENCH_LOADS || 5);

const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))];
};
const ms = (x) => `${x.toFixed(1)} ms`;
const mb = (kb) => `${(kb / 1024).toFixed(1)} MB`;

/** Every event of a conversation (pages of 5000). */
async function allEvents(base, key, conv, extra = '') {
  const out = [];
  let after = 0;
  for (;;) {
    const r = await api(base, 'GET', `/api/conversations/${conv}/events?limit=5000&after=${after}${extra}`, key);
    if (r.status !== 200) throw new Error(`events: ${r.status} ${r.text}`);
    out.push(...r.json.data);
    if (!r.json.meta.has_more) return out;
    after = r.json.meta.next_cursor;
  }
}

const server = await startServer();
const browser = await launch();
const chromiumVersion = browser.version();
const rows = [];
try {
  const { base } = server;
  const who = await account(base);
  const key = who.key;
  const agent = await scriptedAgent(base, key);

  // (a) live latency.
  const conv = await conversation(base, key, agent, 'say: ready');
  const context = await browser.newContext();
  const page = await context.newPage();
  await signIn(page, base, who, `/conversations/${conv.id}`);
  await page.locator('#live[data-state=live]').waitFor();
  await page.evaluate(() => {
    window.__seen = {};
    window.__want = new Set();
    const t = document.getElementById('transcript');
    new MutationObserver(() => {
      if (!window.__want.size) return;
      const text = t.textContent;
      for (const m of window.__want) {
        if (text.includes(m)) { window.__seen[m] = Date.now(); window.__want.delete(m); }
      }
    }).observe(t, { childList: true, subtree: true, characterData: true });
  });
  const lat = [];
  const e2e = [];
  for (let i = 0; i < TURNS; i += 1) {
    const marker = `mk${i}z${Math.random().toString(36).slice(2, 9)}`; // <= 16 bytes: one chunk, one event
    await page.evaluate((m) => window.__want.add(m), marker);
    const sent = Date.now();
    const r = await api(base, 'POST', `/api/conversations/${conv.id}/prompts`, key, { prompt: `say: ${marker}` });
    if (r.status !== 202) throw new Error(`prompt: ${r.status} ${r.text}`);
    const seen = await until(() => page.evaluate((m) => window.__seen[m], marker), 10000, `${marker} on the page`);
    e2e.push(seen - sent);
    await until(async () => (await api(base, 'GET', `/api/conversations/${conv.id}/turns`, key)).json.data
      .every((t) => t.status !== 'running'), 10000, 'the turn to end');
    const events = await api(base, 'GET', `/api/conversations/${conv.id}/events?order=desc&limit=50`, key);
    const ev = events.json.data.find((e) => e.kind === 'output' && e.data.includes(marker));
    if (!ev) throw new Error(`no output event holds ${marker}`);
    lat.push(seen - Date.parse(ev.ts));
  }
  await context.close();
  rows.push(['(a) output event -> text on the page, p50', ms(pct(lat, 50)), '< 100 ms', pct(lat, 50) < 100]);
  rows.push(['(a) output event -> text on the page, p90', ms(pct(lat, 90)), '', null]);
  rows.push(['(a) prompt POSTed -> text on the page, p50 / p90', `${ms(pct(e2e, 50))} / ${ms(pct(e2e, 90))}`, '', null]);
  rows.push(['(a) turns measured', String(lat.length), '', null]);

  // (b) first load of a long conversation.
  const line = 'abcdefghijklmno '.repeat(200); // 3200 bytes: 200 chunks of 16
  const big = await conversation(base, key, agent, `say: ${line}`);
  for (let i = 1; i < BIG_TURNS; i += 1) await say(base, key, big.id, `say: ${line}`, 60000);
  const events = await allEvents(base, key, big.id);
  const outputs = events.filter((e) => e.kind === 'output').length;
  const rssBefore = server.rssKb();
  const load = [];
  const drawn = [];
  let bytes = 0;
  for (let i = 0; i < LOADS; i += 1) {
    const ctx = await browser.newContext();
    const p = await ctx.newPage();
    await signIn(p, base, who, '/');
    // Records when the transcript's last turn is in the document and laid out (checked every frame).
    await p.addInitScript(() => {
      const check = () => {
        const turns = document.querySelectorAll('#transcript article.turn');
        const last = turns[turns.length - 1];
        if (last && document.getElementById('prompt-form') && last.getBoundingClientRect().height > 0) {
          window.__drawn = performance.now();
        } else {
          requestAnimationFrame(check);
        }
      };
      requestAnimationFrame(check);
    });
    const res = await p.goto(`${base}/conversations/${big.id}`, { waitUntil: 'load' });
    bytes = (await res.body()).length;
    await p.waitForFunction(() => window.__drawn !== undefined);
    const nav = await p.evaluate(() => {
      const n = performance.getEntriesByType('navigation')[0];
      return { load: n.loadEventEnd - n.startTime, drawn: window.__drawn - n.startTime };
    });
    load.push(nav.load);
    drawn.push(nav.drawn);
    await ctx.close();
  }
  const rssAfter = server.rssKb();
  rows.push(['(b) events in the conversation (output / all)', `${outputs} / ${events.length}`, '~10,000', null]);
  rows.push(['(b) page size (HTML)', `${(bytes / 1024).toFixed(0)} KB`, '', null]);
  rows.push([`(b) navigation -> load, p50 of ${LOADS}`, ms(pct(load, 50)), '< 1 s', pct(load, 50) < 1000]);
  rows.push([`(b) navigation -> transcript drawn, p50 of ${LOADS}`, ms(pct(drawn, 50)), '< 1 s', pct(drawn, 50) < 1000]);
  rows.push(['(b) server RSS before / after the loads', `${mb(rssBefore)} / ${mb(rssAfter)}`, '', null]);
} finally {
  await browser.close();
  await server.stop();
}

const head = ['measure', 'value', 'goal', 'met'];
const cells = rows.map((r) => [r[0], r[1], r[2], r[3] === null ? '' : r[3] ? 'yes' : 'NO']);
const width = head.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i].length)));
const fmt = (r) => `| ${r.map((c, i) => c.padEnd(width[i])).join(' | ')} |`;
console.log(`acs console benchmark: ${process.env.ACS_BIN || 'target/debug/acs'}, Chromium ${chromiumVersion}`);
console.log(fmt(head));
console.log(`|${width.map((w) => '-'.repeat(w + 2)).join('|')}|`);
for (const c of cells) console.log(fmt(c));
