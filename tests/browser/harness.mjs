// The browser tests' harness: a real `acs serve` (the debug build, a fresh
// SQLite database in a temp dir, machines holding the scripted ACP agent),
// accounts made through the API, Debian's Chromium driven by playwright-core,
// and a check on every page: no console errors or warnings, no failed
// requests, no uncaught exceptions, every input labelled.

import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const TARGET = process.env.CARGO_TARGET_DIR || path.join(ROOT, 'target');
export const AGENT = '/opt/acs/bin/scripted-agent';
/** The scripted ACP agent on the host (tests/scripted-agent), bound into every machine at AGENT. */
const SCRIPTED = process.env.ACS_SCRIPTED_AGENT || `${TARGET}/debug/scripted-agent`;
const CHROMIUM = process.env.ACS_CHROMIUM || '/usr/bin/chromium';

/** A free TCP port on 127.0.0.1 (the server is told to listen on it). */
async function freePort() {
  const srv = net.createServer();
  await new Promise((r) => srv.listen(0, '127.0.0.1', r));
  const { port } = srv.address();
  await new Promise((r) => srv.close(r));
  return port;
}

/**
 * Starts `acs serve` on a free port with a fresh SQLite database in a temp
 * dir, and waits until `/api/health/ready` answers 200. `extraEnv` adds or
 * overrides settings (ACS_<SECTION>__<KEY>).
 */
export async function startServer(extraEnv = {}) {
  const bin = process.env.ACS_BIN || `${TARGET}/debug/acs`;
  for (const f of [bin, SCRIPTED]) {
    if (!fs.existsSync(f)) throw new Error(`${f} is missing: cargo build -p acs -p acs-scripted-agent`);
  }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'acs-browser-'));
  const port = await freePort();
  const env = {
    ...process.env,
    ACS_LISTEN: `127.0.0.1:${port}`,
    ACS_DATABASE__URL: `sqlite://${dir}/acs.db`,
    ACS_SANDBOX__DIR: `${dir}/sandboxes`,
    ACS_SECRETS__MASTER_KEY_FILE: `${dir}/acs.key`,
    ACS_EMAIL__TRANSPORT: 'file',
    ACS_EMAIL__OUTBOX_DIR: `${dir}/outbox`,
    ACS_RUNTIMES__DIR: `${dir}/runtimes`,
    // Machines hold the scripted ACP agent, as testkit's scripted_app binds it.
    ACS_SANDBOX__RO_BINDS: JSON.stringify([`${SCRIPTED}:${AGENT}`]),
    // The tests poll the API; one key's default 600 requests a minute is not the point here.
    ACS_LIMITS__REQUESTS_PER_KEY: '1000000',
    ACS_LIMITS__REQUESTS_PER_ADDRESS: '1000000',
    ACS_LIMITS__FAILED_AUTH_PER_ADDRESS: '1000000',
    // The webhook receiver of the tests listens on plain http at 127.0.0.1.
    ACS_WEBHOOKS__ALLOW_HTTP: 'true',
    ACS_WEBHOOKS__ALLOWED_PRIVATE_CIDRS: '["127.0.0.1/32"]',
    RUST_LOG: process.env.RUST_LOG || 'warn',
    NO_COLOR: '1',
    ...extraEnv,
  };
  const child = spawn(bin, ['serve'], { env, cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
  // However this process ends, the server ends with it.
  const orphan = () => { try { child.kill('SIGTERM'); } catch { /* gone */ } };
  process.once('exit', orphan);
  let log = '';
  child.stdout.on('data', (c) => { log += c; });
  child.stderr.on('data', (c) => { log += c; });
  let exited = null;
  const gone = new Promise((r) => child.once('exit', (code, signal) => { exited = { code, signal }; r(); }));
  const base = `http://127.0.0.1:${port}`;
  const end = Date.now() + 60000;
  for (;;) {
    if (exited) throw new Error(`acs exited (${JSON.stringify(exited)}):\n${log}`);
    try {
      const r = await fetch(`${base}/api/health/ready`);
      if (r.status === 200) break;
    } catch { /* not listening yet */ }
    if (Date.now() > end) {
      child.kill('SIGTERM');
      throw new Error(`acs did not answer /api/health/ready within 60 s:\n${log}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    base,
    pid: child.pid,
    dir,
    log: () => log,
    /** The server's resident memory in kB (VmRSS of /proc/<pid>/status). */
    rssKb() {
      const m = fs.readFileSync(`/proc/${child.pid}/status`, 'utf8').match(/^VmRSS:\s+(\d+) kB/m);
      return m ? Number(m[1]) : null;
    },
    async stop() {
      process.removeListener('exit', orphan);
      if (!exited) {
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), 20000);
        await gone;
        clearTimeout(timer);
      }
      // Machines outlive their server on purpose; stop this server's before
      // removing their disks (docs/sandboxes.md, "Operator tools").
      const reap = spawnSync(bin, ['sandboxes', 'reap'], { env, cwd: dir, encoding: 'utf8', timeout: 60000 });
      if (reap.status !== 0) process.stderr.write(`acs sandboxes reap: ${reap.status}\n${reap.stdout}${reap.stderr}\n`);
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A JSON request to the API. */
export async function api(base, method, p, key, body) {
  const res = await fetch(base + p, {
    method,
    headers: { ...(key ? { authorization: `Bearer ${key}` } : {}), ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  let json = null;
  try { json = JSON.parse(text); } catch { /* not JSON */ }
  return { status: res.status, json, text };
}

let accounts = 0;
/** A new account: email, password and a full-scope key. */
export async function account(base, email = null) {
  accounts += 1;
  email ??= `person${accounts}-${Date.now()}@example.com`;
  const password = 'correct horse battery';
  const r = await api(base, 'POST', '/api/auth/register', null, { email, password });
  if (r.status !== 201) throw new Error(`register: ${r.status} ${r.text}`);
  const l = await api(base, 'POST', '/api/auth/login', null, { email, password });
  return { email, password, key: l.json.data.api_key };
}

/** An agent running the scripted ACP agent. */
export async function scriptedAgent(base, key, extra = {}) {
  const r = await api(base, 'POST', '/api/agents', key, {
    name: `agent-${Math.random().toString(16).slice(2, 8)}`, runtime: 'acp', command: [AGENT], ...extra,
  });
  if (r.status !== 201) throw new Error(`agent: ${r.status} ${r.text}`);
  return r.json.data.id;
}

/** Polls `check` until it returns a truthy value (or fails after `ms`). */
export async function until(check, ms = 15000, what = 'the condition') {
  const end = Date.now() + ms;
  for (;;) {
    const v = await check();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Sends a prompt to a conversation through the API and waits until its turn has ended; the turns. */
export async function say(base, key, conv, prompt, ms = 30000) {
  const before = (await api(base, 'GET', `/api/conversations/${conv}/turns`, key)).json.data.length;
  const r = await api(base, 'POST', `/api/conversations/${conv}/prompts`, key, { prompt });
  if (r.status !== 202) throw new Error(`prompt: ${r.status} ${r.text}`);
  return until(async () => {
    const t = (await api(base, 'GET', `/api/conversations/${conv}/turns`, key)).json.data;
    return t.length > before && t.every((x) => x.status !== 'running') ? t : null;
  }, ms, 'the turn to end');
}

/** A conversation whose first turn has ended. */
export async function conversation(base, key, agent, prompt) {
  const r = await api(base, 'POST', '/api/conversations', key, { agent_id: agent, prompt });
  if (r.status !== 201) throw new Error(`conversation: ${r.status} ${r.text}`);
  const c = r.json.data;
  await until(async () => {
    const t = await api(base, 'GET', `/api/conversations/${c.id}/turns`, key);
    return t.json.data.length > 0 && t.json.data.every((x) => x.status !== 'running');
  }, 20000, 'the first turn');
  return c;
}

export async function launch() {
  return chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
}

/**
 * Runs in every page before its own script: reports each input, select and
 * textarea (but type=hidden and type=submit) that has no accessible label (a
 * <label for>, an enclosing <label>, aria-label or aria-labelledby), at load
 * and whenever the page inserts new controls (a streamed permission form).
 */
function labelWatch() {
  const seen = new WeakSet();
  const scan = () => {
    for (const e of document.querySelectorAll('input, select, textarea')) {
      if (seen.has(e) || ['hidden', 'submit'].includes(e.type)) continue;
      seen.add(e);
      const named = (e.labels && [...e.labels].some((l) => l.textContent.trim()))
        || (e.getAttribute('aria-label') || '').trim()
        || (e.getAttribute('aria-labelledby') || '').split(/\s+/).some((id) => id && document.getElementById(id)?.textContent.trim());
      if (!named) window.__acsReport(`unlabelled ${e.outerHTML.slice(0, 200)}`);
    }
  };
  document.addEventListener('DOMContentLoaded', () => {
    scan();
    new MutationObserver(scan).observe(document.documentElement, { childList: true, subtree: true });
  });
}

/**
 * A page that records what a person would never want to see: console errors
 * and warnings, uncaught exceptions, failed requests, answers of 400 and more
 * to anything but the page's own address, and inputs without a label.
 * `problems` lists them; `clean(watched)` asserts there are none.
 */
export async function watchedPage(browser, options = {}) {
  const context = await browser.newContext(options);
  const problems = [];
  const visited = new Set();
  await context.exposeBinding('__acsReport', ({ page: p }, what) => { problems.push(`${p.url()}: ${what}`); });
  await context.addInitScript(labelWatch);
  const page = await context.newPage();
  // Pages whose own answer was an error on purpose (a wrong password is a 401 page): Chromium
  // logs those as failed loads; the tests check such statuses themselves.
  const documents = new Set();
  page.on('console', (m) => {
    if (m.type() !== 'error' && m.type() !== 'warning') return;
    if (m.text().startsWith('Failed to load resource') && documents.has(m.location()?.url)) return;
    problems.push(`${page.url()}: console ${m.type()}: ${m.text()}${m.location()?.url ? ` (${m.location().url})` : ''}`);
  });
  page.on('pageerror', (e) => problems.push(`${page.url()}: uncaught ${e.message}`));
  page.on('requestfailed', (r) => {
    const why = r.failure()?.errorText || '';
    // A live stream (or any request) cut short by leaving the page is not a failure.
    if (why === 'net::ERR_ABORTED' && (r.url().includes('/live') || r.isNavigationRequest())) return;
    problems.push(`${r.url()}: request failed: ${why}`);
  });
  page.on('response', (r) => {
    if (r.request().isNavigationRequest()) {
      documents.add(r.url());
      if (r.status() >= 500) problems.push(`${r.url()}: the page answered ${r.status()}`);
    } else if (r.status() >= 400) {
      problems.push(`${r.url()}: answered ${r.status()}`);
    }
  });
  page.on('framenavigated', (f) => { if (f === page.mainFrame()) visited.add(new URL(f.url()).pathname); });
  return { page, context, problems, visited };
}

/** Fails when the page recorded any problem (see watchedPage). */
export function clean(watched) {
  assert.deepEqual(watched.problems, [], 'no console errors or warnings, failed requests or unlabelled inputs');
}

export async function signIn(page, base, who, next = '/') {
  await page.goto(`${base}/login?next=${encodeURIComponent(next)}`);
  await page.getByLabel('Email').fill(who.email);
  await page.getByLabel('Password').fill(who.password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForURL(`${base}${next}`);
}

/** A plain HTTP server that records every request (a webhook or OAuth receiver). */
export async function receiver() {
  const seen = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => { body += c; });
    req.on('end', () => {
      seen.push({ method: req.method, url: req.url, headers: req.headers, body });
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end('ok');
    });
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${server.address().port}`, seen, close: () => new Promise((r) => server.close(r)) };
}
