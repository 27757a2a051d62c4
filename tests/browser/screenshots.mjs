// Screenshots of the console for docs/console/: a fresh server with some
// realistic content (agents, an environment whose setup makes a git
// repository, a conversation with thinking, tool calls, a plan, a permission
// answered and a usage report, a key and a webhook endpoint), then the main
// pages at 1280x800 in light and dark, and the conversation on a phone
// (390x844).
//
// Run: node tests/browser/screenshots.mjs   (after npm ci --prefix tests/browser;
// needs target/debug/acs and target/debug/scripted-agent, and /usr/bin/chromium)

import fs from 'node:fs';
import path from 'node:path';

import { ROOT, account, api, conversation, launch, receiver, say, scriptedAgent, signIn, startServer } from './harness.mjs';

const OUT = path.join(ROOT, 'docs/console');

const server = await startServer();
const browser = await launch();
const hook = await receiver();
try {
  const { base } = server;
  const who = await account(base, 'dana@example.com');
  const key = who.key;
  const must = (r, what) => { if (r.status >= 300) throw new Error(`${what}: ${r.status} ${r.text}`); return r.json?.data; };

  // A project the agent works on: a small repository made by the environment's setup.
  const setup = [
    'mkdir -p /workspace/shop/src && cd /workspace/shop',
    'printf "# shop\\n\\nA tiny order service.\\n" > README.md',
    'printf "pub fn total(prices: &[u32]) -> u32 {\\n    prices[1..].iter().sum()\\n}\\n" > src/lib.rs',
    'git init -q -b main . && git add -A && git -c user.email=dev@example.com -c user.name=dev commit -q -m "First version"',
  ].join('\n');
  const env = must(await api(base, 'POST', '/api/environments', key, {
    name: 'shop', setup_script: setup, env_vars: { RUST_BACKTRACE: '1' },
  }), 'environment');
  const vault = must(await api(base, 'POST', '/api/vaults', key, { name: 'deploy keys' }), 'vault');
  must(await api(base, 'PUT', `/api/vaults/${vault.id}/secrets/REGISTRY_TOKEN`, key, { value: 'reg-7f3a9c1e' }), 'secret');

  const coder = await scriptedAgent(base, key, {
    name: 'shop-coder', environment_id: env.id, vault_id: vault.id, system_prompt: 'You maintain the shop service.',
    permission_policy: { default: 'ask', ask_timeout: 600 },
  });
  const notes = await scriptedAgent(base, key, { name: 'release-notes', system_prompt: 'Write release notes from merged changes.' });
  await scriptedAgent(base, key, { name: 'triage', system_prompt: 'Label new issues.' });

  const conv = await conversation(base, key, coder, [
    'think: The user reports that total() ignores the first price. Let me read the code.',
    'tool: t1 read Read src/lib.rs',
    'say: `total` starts summing at index 1, so the first item is never counted. I will fix the slice and add a test.',
  ].join('\n'));
  const fix = [
    'plan: Fix the slice in total(); Add a test for a single price; Run cargo test',
    'tool: t2 edit Edit src/lib.rs',
    'write: /workspace/shop/src/lib.rs pub fn total(prices: &[u32]) -> u32 { prices.iter().sum() }',
    'tool: t3 execute cargo test',
    'usage: 1840 312 1200 0',
    'say: Fixed: `total` now sums every price. The new test `single_price` passes, and so do the other 12.',
  ].join('\n');
  await say(base, key, conv.id, fix);

  // A permission asked and answered, on the page (by a click).
  const ctx0 = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const p0 = await ctx0.newPage();
  await signIn(p0, base, who, `/conversations/${conv.id}`);
  await p0.locator('#live[data-state=live]').waitFor();
  await p0.getByLabel('Message').fill('permission: t4 git push origin main\nsay: Pushed to main.');
  await p0.getByRole('button', { name: 'Send' }).click();
  await p0.getByRole('button', { name: 'Allow once' }).click();
  await p0.locator('.blk.text', { hasText: 'Pushed to main.' }).waitFor();
  const state = await ctx0.storageState();
  await ctx0.close();

  // Another conversation, so lists have more than one row.
  await conversation(base, key, notes, 'say: Release 1.4: totals count every item again; faster checkout page.');
  // Keys and a webhook endpoint with a delivery.
  must(await api(base, 'POST', '/api/keys', key, { name: 'CI pipeline', scope: 'restricted' }), 'key');
  must(await api(base, 'POST', '/api/keys', key, { name: 'laptop', scope: 'full' }), 'key');
  const wh = must(await api(base, 'POST', '/api/webhooks', key, {
    url: `${hook.url}/acs`, event_types: ['conversation.turn.*'], description: 'Team chat notifier',
  }), 'webhook');
  await api(base, 'POST', `/api/webhooks/${wh.id}/test`, key, {});

  fs.mkdirSync(OUT, { recursive: true });
  const pages = [
    ['overview', '/'],
    ['agents', '/agents'],
    ['conversation', `/conversations/${conv.id}`],
    ['sandbox', `/sandboxes/${conv.sandbox_id}/diff?path=${encodeURIComponent('/workspace/shop')}`],
    ['keys', '/account/keys'],
    ['webhooks', `/account/webhooks/${wh.id}`],
  ];
  const shots = [];
  for (const scheme of ['light', 'dark']) {
    const ctx = await browser.newContext({ viewport: { width: 1280, height: 800 }, colorScheme: scheme, storageState: state });
    const page = await ctx.newPage();
    for (const [name, href] of pages) {
      await page.goto(base + href);
      if (name === 'conversation') await page.locator('#live[data-state=live]').waitFor();
      const file = path.join(OUT, `${name}-${scheme}.png`);
      await page.screenshot({ path: file });
      shots.push(file);
    }
    await ctx.close();
  }
  const phone = await browser.newContext({
    viewport: { width: 390, height: 844 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true, storageState: state,
  });
  const page = await phone.newPage();
  await page.goto(`${base}/conversations/${conv.id}`);
  await page.locator('#live[data-state=live]').waitFor();
  // The page opens at its end (the composer); show the last turns instead.
  await page.locator('#transcript article.turn').nth(1).evaluate((e) => e.scrollIntoView({ block: 'start' }));
  const file = path.join(OUT, 'conversation-phone.png');
  await page.screenshot({ path: file });
  shots.push(file);
  await phone.close();
  for (const s of shots) console.log(path.relative(ROOT, s));
} finally {
  await browser.close();
  await hook.close();
  await server.stop();
}
