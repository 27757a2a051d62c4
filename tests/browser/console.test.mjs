// The console in a real Chromium against a real `acs serve` (one server for
// this file, one account per test): sign-in and the way back to the page
// asked for, device approval and OAuth consent by clicks, a live turn
// appearing without reload (sent from the page and from the API), interrupt,
// a permission answered by a click, a file on the sandbox page with its secret
// redacted, a webhook created and tested from the page reaching a real
// receiver, a key created and revoked, every page reachable from the
// navigation, an agent made, edited, rolled back and started from its forms,
// and older turns loading on scroll. On every page (harness.mjs): no console
// errors or warnings, no failed requests, no uncaught exceptions, every input
// labelled.
//
// Run: npm ci --prefix tests/browser && node --test tests/browser/console.test.mjs
// (needs target/debug/acs and target/debug/scripted-agent, and /usr/bin/chromium).

import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { after, before, test } from 'node:test';

import {
  AGENT, account, api, clean, conversation, launch, receiver, say, scriptedAgent, signIn, startServer, until, watchedPage,
} from './harness.mjs';

let server;
let browser;
before(async () => {
  server = await startServer();
  browser = await launch();
});
after(async () => {
  await browser?.close();
  await server?.stop();
});

/** A new account, and a page signed in to it at `next`. */
async function session(t, next = '/') {
  const who = await account(server.base);
  const watched = await watchedPage(browser);
  t.after(() => watched.context.close());
  await signIn(watched.page, server.base, who, next);
  return { who, ...watched };
}

/** Counts the main frame's navigations from now on. */
function navigations(page) {
  const seen = [];
  page.on('framenavigated', (f) => { if (f === page.mainFrame()) seen.push(f.url()); });
  return seen;
}

/** The last turn on the conversation page. */
const lastTurn = (page) => page.locator('#transcript article.turn').last();

/** Opens a conversation page (its first turn ended) and waits until its stream is live. */
async function openConversation(page, conv) {
  await page.goto(`${server.base}/conversations/${conv.id}`);
  await page.locator('#live[data-state=live]').waitFor();
  assert.equal((await page.locator('#live').textContent()).trim(), 'live');
}

/** Types a message in the Message box and sends it with the Send button. */
async function send(page, text) {
  await page.getByLabel('Message').fill(text);
  await page.getByRole('button', { name: 'Send' }).click();
}

test('1. a page asked for without a session signs in and comes back', async (t) => {
  const who = await account(server.base);
  const w = await watchedPage(browser);
  t.after(() => w.context.close());
  const { page } = w;
  const res = await page.goto(`${server.base}/agents`);
  assert.equal(res.status(), 200);
  assert.equal(page.url(), `${server.base}/login?next=%2Fagents`);
  await page.getByLabel('Email').fill(who.email);
  await page.getByLabel('Password').fill('not the password');
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.locator('main .error, .error').first().waitFor();
  await page.getByLabel('Email').fill(who.email);
  await page.getByLabel('Password').fill(who.password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForURL(`${server.base}/agents`);
  await page.getByRole('heading', { name: 'Agents', level: 1 }).waitFor();
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.waitForURL((u) => u.pathname === '/login');
  await page.goto(`${server.base}/agents`);
  assert.equal(new URL(page.url()).pathname, '/login', 'signed out: the pages ask to sign in again');
  clean(w);
});

test('2. a device login is approved by clicks and its poll then gets a key', async (t) => {
  const start = await api(server.base, 'POST', '/api/auth/device', null, { name: 'browser-test CLI' });
  assert.equal(start.status, 200, start.text);
  const { device_code, user_code, verification_uri, interval } = start.json;
  const pending = await api(server.base, 'POST', '/api/auth/device/token', null, { device_code });
  assert.equal(pending.status, 428, pending.text);
  const polledAt = Date.now();

  const w = await session(t);
  const { page } = w;
  await page.goto(verification_uri);
  await page.getByLabel('Code').fill(user_code);
  await page.getByRole('button', { name: 'Continue' }).click();
  await page.getByText(user_code).waitFor();
  await page.getByText('browser-test CLI').waitFor();
  await page.getByRole('button', { name: 'Approve' }).click();
  await page.waitForLoadState('load');

  // The device polls no faster than `interval`.
  await new Promise((r) => setTimeout(r, Math.max(0, polledAt + interval * 1000 + 100 - Date.now())));
  const done = await api(server.base, 'POST', '/api/auth/device/token', null, { device_code });
  assert.equal(done.status, 200, done.text);
  const me = await api(server.base, 'GET', '/api/auth/me', done.json.data.api_key);
  assert.equal(me.status, 200, me.text);
  assert.equal(me.json.data.email ?? me.json.data.account?.email ?? w.who.email, w.who.email);
  clean(w);
});

test('3. an OAuth app is approved by a click and exchanges its code', async (t) => {
  const app = await receiver();
  t.after(() => app.close());
  const w = await session(t);
  const { page } = w;
  const redirect = `${app.url}/cb`;
  const client = await api(server.base, 'POST', '/api/oauth/clients', w.who.key, { name: 'Notes app', redirect_uris: [redirect] });
  assert.equal(client.status, 201, client.text);
  const clientId = client.json.data.client_id;
  const verifier = crypto.randomBytes(32).toString('base64url');
  const challenge = crypto.createHash('sha256').update(verifier).digest('base64url');
  const q = new URLSearchParams({
    response_type: 'code', client_id: clientId, redirect_uri: redirect, state: 'st-1',
    code_challenge: challenge, code_challenge_method: 'S256',
  });
  await page.goto(`${server.base}/oauth/authorize?${q}`);
  await page.getByText('Notes app').first().waitFor();
  await page.getByRole('button', { name: 'Approve' }).click();
  await page.waitForURL((u) => u.href.startsWith(redirect));
  const back = new URL(page.url());
  assert.equal(back.searchParams.get('state'), 'st-1');
  assert.ok(app.seen.some((r) => r.url.startsWith('/cb?')), 'the browser reached the app');
  const token = await fetch(`${server.base}/api/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'authorization_code', code: back.searchParams.get('code'), redirect_uri: redirect,
      client_id: clientId, code_verifier: verifier,
    }),
  });
  const granted = await token.json();
  assert.equal(token.status, 200, JSON.stringify(granted));
  assert.equal(granted.token_type, 'Bearer');
  assert.equal((await api(server.base, 'GET', '/api/auth/me', granted.access_token)).status, 200);
  // The app's page (our receiver) is not the console: only the console's pages are checked.
  w.problems.splice(0, w.problems.length, ...w.problems.filter((p) => !p.startsWith(app.url)));
  clean(w);
});

test('4. a live turn appears in the transcript without a reload', async (t) => {
  const w = await session(t);
  const { page } = w;
  const agent = await scriptedAgent(server.base, w.who.key);
  const conv = await conversation(server.base, w.who.key, agent, 'say: ready');
  await openConversation(page, conv);
  const navs = navigations(page);

  await send(page, 'think: looking around\nsay: hello from the agent\ntool: t1 read Read README.md\nplan: read; write; test\nusage: 120 40');
  const turn = lastTurn(page);
  await page.locator('#transcript .blk.text', { hasText: 'hello from the agent' }).waitFor();
  await turn.locator('.blk.thinking', { hasText: 'looking around' }).waitFor();
  await turn.locator('.blk.tool[data-status=completed]', { hasText: 'Read README.md' }).waitFor();
  await turn.locator('.blk.plan li', { hasText: 'write' }).waitFor();
  await until(async () => (await turn.getAttribute('data-status')) === 'done', 15000, 'the turn to end');
  assert.match(await turn.locator('header .prompt').textContent(), /say: hello from the agent/);
  assert.match(await turn.locator('header .status').textContent(), /done/);
  await until(async () => (await turn.locator('header .usage').count()) === 1, 5000, 'the usage in the header');
  assert.match(await turn.locator('header .usage').textContent(), /120 in/);
  assert.deepEqual(navs, [], 'no navigation: the turn came over the live stream');
  assert.equal(await page.getByLabel('Message').inputValue(), '', 'the box is cleared after sending');

  // A turn started elsewhere (the API, with a client_request_id) appears too.
  const r = await api(server.base, 'POST', `/api/conversations/${conv.id}/prompts`, w.who.key,
    { prompt: 'say: sent through the API', client_request_id: 'crid-browser-1' });
  assert.equal(r.status, 202, r.text);
  await page.locator('#transcript .blk.text', { hasText: 'sent through the API' }).waitFor();
  await lastTurn(page).locator('header .crid', { hasText: 'crid-browser-1' }).waitFor();
  assert.deepEqual(navs, []);

  // A reload draws the same transcript from the server.
  await page.reload();
  await page.locator('#transcript .blk.text', { hasText: 'hello from the agent' }).waitFor();
  assert.equal(await page.locator('#transcript .blk.tool[data-status=completed]').count(), 1);
  clean(w);
});

test('5. Interrupt stops a running turn', async (t) => {
  const w = await session(t);
  const { page } = w;
  const agent = await scriptedAgent(server.base, w.who.key);
  const conv = await conversation(server.base, w.who.key, agent, 'say: ready');
  await openConversation(page, conv);
  const navs = navigations(page);

  await send(page, 'say: going to sleep\nsleep: 30000');
  const turn = lastTurn(page);
  await turn.locator('.blk.text', { hasText: 'going to sleep' }).waitFor();
  assert.equal(await turn.getAttribute('data-status'), 'running');
  const clicked = Date.now();
  await page.getByRole('button', { name: 'Interrupt' }).click();
  await until(async () => /^(interrupted|cancelled)$/.test(await turn.getAttribute('data-status')), 15000, 'the turn to stop');
  assert.ok(Date.now() - clicked < 15000);
  assert.match(await turn.locator('header .status').textContent(), /interrupted|cancelled/);
  assert.deepEqual(navs, []);
  const turns = await api(server.base, 'GET', `/api/conversations/${conv.id}/turns`, w.who.key);
  assert.equal(turns.json.data.at(-1).status, 'interrupted', turns.text);
  clean(w);
});

test('6. a permission request is answered by a click', async (t) => {
  const w = await session(t);
  const { page } = w;
  const agent = await scriptedAgent(server.base, w.who.key, { permission_policy: { default: 'ask', ask_timeout: 120 } });
  const conv = await conversation(server.base, w.who.key, agent, 'say: ready');
  await openConversation(page, conv);
  const navs = navigations(page);

  await send(page, 'permission: t2 rm -rf build');
  const block = page.locator('#transcript .blk.permission');
  await block.getByText('rm -rf build').waitFor();
  await block.getByRole('button', { name: 'Allow once' }).click();
  await page.locator('#transcript .blk.text', { hasText: 'permission: allow-once' }).waitFor();
  await page.locator('#transcript .blk.permission[data-answered]').waitFor();
  assert.equal(await block.getByRole('button').count(), 0, 'an answered request offers no buttons');
  await until(async () => (await lastTurn(page).getAttribute('data-status')) === 'done', 15000, 'the turn to end');
  assert.deepEqual(navs, []);
  clean(w);
});

test('7. a file on the sandbox page shows its secret as [REDACTED]', async (t) => {
  const w = await session(t);
  const { page } = w;
  const key = w.who.key;
  const vault = await api(server.base, 'POST', '/api/vaults', key, { name: 'deploy' });
  assert.equal(vault.status, 201, vault.text);
  const secret = `tok-${crypto.randomBytes(12).toString('hex')}`;
  const put = await api(server.base, 'PUT', `/api/vaults/${vault.json.data.id}/secrets/DEPLOY_TOKEN`, key, { value: secret });
  assert.ok(put.status < 300, put.text);
  const agent = await scriptedAgent(server.base, key, { vault_id: vault.json.data.id });
  const conv = await conversation(server.base, key, agent, `write: /workspace/settings.txt token=${secret}\nsay: saved`);
  const turns = await api(server.base, 'GET', `/api/conversations/${conv.id}/turns`, key);
  assert.equal(turns.json.data[0].status, 'done', turns.text);

  await page.goto(`${server.base}/sandboxes`);
  await page.locator(`main a[href="/sandboxes/${conv.sandbox_id}"]`).click();
  await page.waitForURL(`${server.base}/sandboxes/${conv.sandbox_id}`);
  await page.getByRole('link', { name: 'settings.txt' }).click();
  await page.waitForURL((u) => u.pathname === `/sandboxes/${conv.sandbox_id}/file`);
  assert.equal(await page.locator('#file-content').textContent(), 'token=[REDACTED]');
  assert.ok(!(await page.content()).includes(secret), 'the value is nowhere on the page');
  for (const view of ['Diff', 'Status', 'Egress', 'Files']) {
    await page.getByRole('navigation', { name: 'Sandbox views' }).getByRole('link', { name: view }).click();
    await page.waitForLoadState('load');
    assert.ok(!(await page.content()).includes(secret), view);
  }
  clean(w);
});

test('8. a webhook created and tested from the page reaches a real receiver', async (t) => {
  const hook = await receiver();
  t.after(() => hook.close());
  const w = await session(t, '/account/webhooks');
  const { page } = w;
  const url = `${hook.url}/acs`;
  await page.getByLabel('URL').fill(url);
  await page.getByLabel('Event types').fill('conversation.turn.*, conversation.provision.*');
  await page.getByRole('button', { name: 'Create endpoint' }).click();
  const secret = (await page.locator('#shown-once').textContent()).trim();
  assert.match(secret, /^whsec_/);
  await page.getByRole('link', { name: url }).click();
  await page.getByRole('button', { name: 'Send test' }).click();
  const got = await until(() => hook.seen.find((r) => r.url === '/acs'), 15000, 'the test delivery');
  assert.equal(got.method, 'POST');
  assert.equal(JSON.parse(got.body).type, 'webhook.test');
  // Signed with the secret the page showed once: HMAC-SHA256 over "<t>.<body>" (docs/webhooks.md).
  const sig = Object.fromEntries(got.headers['service-signature'].split(',').map((kv) => kv.split('=')));
  const expected = crypto.createHmac('sha256', secret).update(`${sig.t}.${got.body}`).digest('hex');
  assert.equal(sig.v1, expected, 'the signature verifies with the secret shown once');

  await until(async () => {
    await page.goto(`${server.base}/account/webhooks`);
    await page.getByRole('link', { name: url }).click();
    return (await page.getByRole('row').filter({ hasText: 'webhook.test' }).textContent()).includes('succeeded');
  }, 15000, 'the delivery log to show it');
  await page.getByRole('link', { name: 'webhook.test' }).click();
  await page.getByRole('cell', { name: '200', exact: true }).first().waitFor();
  clean(w);
});

test('9. a key is created (its value shown once) and revoked', async (t) => {
  const w = await session(t, '/account/keys');
  const { page } = w;
  const name = `laptop-${crypto.randomBytes(3).toString('hex')}`;
  await page.getByLabel('Name').fill(name);
  await page.getByLabel('Scope').selectOption('restricted');
  await page.getByRole('button', { name: 'Create key' }).click();
  const key = (await page.locator('#shown-once').textContent()).trim();
  assert.match(key, /^acs_/);
  const me = await api(server.base, 'GET', '/api/auth/me', key);
  assert.equal(me.status, 200, me.text);

  await page.goto(`${server.base}/account/keys`);
  assert.equal(await page.locator('#shown-once').count(), 0);
  assert.ok(!(await page.content()).includes(key), 'shown once only');
  const row = page.getByRole('row').filter({ hasText: name });
  assert.match(await row.textContent(), /restricted/);
  await row.getByRole('button', { name: 'Revoke' }).click();
  await page.waitForURL(`${server.base}/account/keys`);
  assert.equal(await page.getByRole('row').filter({ hasText: name }).count(), 0);
  assert.equal((await api(server.base, 'GET', '/api/auth/me', key)).status, 401);
  clean(w);
});

test('10. every page of the navigation, and every page linked from them, loads cleanly', async (t) => {
  const w = await session(t);
  const { page, who } = w;
  // Some content, so the pages have rows and links to follow.
  const agent = await scriptedAgent(server.base, who.key, { name: 'crawler' });
  const conv = await conversation(server.base, who.key, agent,
    'write: /workspace/notes.md # Notes\nsay: some content\ntool: t1 read Read notes.md\nplan: one; two');
  for (const [p, body] of [['/api/vaults', { name: 'vault-one' }], ['/api/environments', { name: 'env-one' }],
    ['/api/webhooks', { url: 'http://127.0.0.1:9/hook', event_types: ['conversation.turn.*'] }]]) {
    const r = await api(server.base, 'POST', p, who.key, body);
    assert.equal(r.status, 201, `${p}: ${r.text}`);
  }
  // A teammate with a schedule and a credential set, made by clicks.
  await page.goto(`${server.base}/team`);
  await page.getByLabel('Agent').selectOption({ label: 'crawler' });
  await page.getByRole('button', { name: 'Add to team' }).click();
  await page.getByRole('link', { name: 'crawler' }).click();
  await page.getByLabel('Cron').fill('0 9 * * 1-5');
  await page.getByLabel('Name').fill('standup');
  await page.getByLabel('Prompt').fill('say: good morning');
  await page.getByRole('button', { name: 'Create schedule' }).click();
  await page.getByRole('cell', { name: 'standup' }).waitFor();
  await page.goto(`${server.base}/account/credentials`);
  await page.getByLabel('Name').fill('team keys');
  await page.getByRole('button', { name: 'Create set' }).click();
  await page.waitForLoadState('load');

  await page.goto(`${server.base}/`);
  const nav = await page.locator('nav[aria-label=Main] a').evaluateAll((as) => as.map((a) => a.getAttribute('href')));
  for (const expected of ['/', '/agents', '/conversations', '/sandboxes', '/environments', '/vaults',
    '/account/credentials', '/team', '/account/keys', '/account/webhooks']) {
    assert.ok(nav.includes(expected), `the navigation links ${expected}: ${nav}`);
  }
  // Breadth first over same-origin links (GET only: every action is a form post).
  const queue = [...nav];
  const done = new Set();
  while (queue.length && done.size < 80) {
    const href = queue.shift();
    const u = new URL(href, server.base);
    if (u.origin !== server.base) continue;
    // The file browser reaches the machine's whole tree (/dev/zero included): stay in /workspace.
    const inside = u.searchParams.get('path');
    if (inside !== null && u.pathname.startsWith('/sandboxes/') && !inside.startsWith('/workspace')) continue;
    const key = u.pathname + u.search;
    if (done.has(key)) continue;
    done.add(key);
    const res = await page.goto(u.href);
    assert.equal(res.status(), 200, `${key}: ${res.status()}`);
    await page.waitForLoadState('load');
    assert.equal(await page.locator('nav[aria-label=Main] a[aria-current=page]').count() <= 1, true);
    for (const next of await page.locator('main a[href]').evaluateAll((as) => as.map((a) => a.getAttribute('href')))) {
      if (!next.startsWith('#') && !next.startsWith('mailto:')) queue.push(next);
    }
  }
  t.diagnostic(`visited ${done.size} pages: ${[...done].join(' ')}`);
  assert.ok(done.size >= 15, `visited ${[...done].join(' ')}`);
  for (const p of [`/conversations/${conv.id}`, `/sandboxes/${conv.sandbox_id}`, `/agents/${agent}`, `/team/${agent}`,
    `/sandboxes/${conv.sandbox_id}/file?path=%2Fworkspace%2Fnotes.md`]) {
    assert.ok(done.has(p), `${p} was reached from the navigation`);
  }
  clean(w);
});

test('11. an agent made and started from its forms, edited and rolled back', async (t) => {
  const w = await session(t, '/agents');
  const { page } = w;
  await page.getByLabel('Name').fill('helper');
  await page.getByLabel('Runtime').selectOption('acp');
  await page.getByLabel('Command').fill(AGENT);
  await page.getByLabel('System prompt').fill('Be brief.');
  await page.getByRole('button', { name: 'Create agent' }).click();
  await page.waitForURL((u) => /^\/agents\/[0-9a-f-]{36}$/.test(u.pathname));
  await page.getByRole('heading', { name: 'helper', level: 1 }).waitFor();

  await page.getByLabel('Name').fill('helper two');
  await page.getByRole('button', { name: 'Save' }).click();
  await page.getByRole('heading', { name: 'helper two', level: 1 }).waitFor();
  await page.getByRole('row').filter({ hasText: /^1/ }).getByRole('button', { name: 'Roll back' }).click();
  await page.getByRole('heading', { name: 'helper', exact: true, level: 1 }).waitFor();

  await page.getByLabel('Prompt', { exact: true }).fill('say: started from the page');
  await page.getByRole('button', { name: 'Start' }).click();
  await page.waitForURL((u) => /^\/conversations\/[0-9a-f-]{36}$/.test(u.pathname));
  await page.locator('#transcript .blk.text', { hasText: 'started from the page' }).waitFor();
  clean(w);
});

test('12. older turns load when the reader scrolls up, without a reload', async (t) => {
  const w = await session(t);
  const { page, who } = w;
  const agent = await scriptedAgent(server.base, who.key);
  // Each turn is ~200 events (16-byte chunks); the page draws about 300 events of whole turns.
  const long = (n) => `say: turn-${n}-start ${'x'.repeat(3000)} turn-${n}-end`;
  const conv = await conversation(server.base, who.key, agent, long(1));
  await say(server.base, who.key, conv.id, long(2));
  await say(server.base, who.key, conv.id, long(3));
  await openConversation(page, conv);
  const navs = navigations(page);
  assert.equal(await page.locator('#transcript .blk.text', { hasText: 'turn-1-end' }).count(), 0, 'the first turn waits');
  await page.locator('#transcript .blk.text', { hasText: 'turn-3-end' }).waitFor();
  await page.getByRole('link', { name: 'Load older turns' }).scrollIntoViewIfNeeded();
  await page.locator('#transcript .blk.text', { hasText: 'turn-1-end' }).waitFor();
  assert.equal(await page.locator('#transcript article.turn').count(), 3);
  assert.equal(await page.getByRole('link', { name: 'Load older turns' }).count(), 0, 'nothing older is left');
  assert.deepEqual(navs, []);
  clean(w);
});
