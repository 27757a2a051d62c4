// The command line's and the runners' benchmark, run by hand as root
// (`node bench/cli.mjs`) or by bench/run (step 17), against a real
// `acs serve` (ACS_BIN, default the debug build) on SQLite with the scripted
// agent:
//   1. `acs run CONVERSATION "prompt"` on an awake conversation, from the
//      process's spawn to its first line of output, beside the server's own
//      figure for the same prompt (POST /prompts to the first output event on
//      an SSE stream already open). Goal: under 50 ms over the server's.
//   2. turn start on a runner against the local provider: a new conversation
//      with a prompt to its first output event, and a later prompt on the
//      awake conversation to its first output, for an agent on the server's
//      own host and one on an `acs runner` on the same host (loopback).
// Prints a small table (p50 and p95 of N runs each).

import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { AGENT, ROOT, account, api, scriptedAgent, startServer, until } from '../tests/browser/harness.mjs';

const N = Number(process.env.BENCH_CLI_RUNS || 15);
const TARGET = process.env.CARGO_TARGET_DIR || path.join(ROOT, 'target');
const BIN = process.env.ACS_BIN || `${TARGET}/debug/acs`;
const SCRIPTED = process.env.ACS_SCRIPTED_AGENT || `${TARGET}/debug/scripted-agent`;

const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};
const ms = (x) => `${x.toFixed(1)} ms`;

/** Reads an SSE response until a frame carrying agent output; resolves with performance.now() then. */
async function firstOutput(res) {
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let buf = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) throw new Error('the stream ended before any output');
    buf += decoder.decode(value, { stream: true });
    let cut;
    while ((cut = buf.indexOf('\n\n')) >= 0) {
      const frame = buf.slice(0, cut);
      buf = buf.slice(cut + 2);
      const data = frame.split('\n').filter((l) => l.startsWith('data:')).map((l) => l.slice(5).trim()).join('\n');
      if (data.includes('"stream":"stdout"')) {
        const at = performance.now();
        reader.cancel().catch(() => {});
        return at;
      }
    }
  }
}

function stream(base, key, conv, after) {
  const headers = { authorization: `Bearer ${key}`, accept: 'text/event-stream' };
  if (after != null) headers['last-event-id'] = String(after);
  return fetch(`${base}/api/conversations/${conv}/stream`, { headers });
}

async function newest(base, key, conv) {
  const r = await api(base, 'GET', `/api/conversations/${conv}/events?order=desc&limit=1`, key);
  return r.json.page.newest_cursor;
}

async function idle(base, key, conv) {
  await until(async () => {
    const t = (await api(base, 'GET', `/api/conversations/${conv}/turns`, key)).json.data;
    return t.length > 0 && t.every((x) => x.status !== 'running');
  }, 60000, 'the turn to end');
}

/** A later prompt on an awake conversation: POST to first output, the stream opened before. */
async function laterPrompt(base, key, conv) {
  const res = await stream(base, key, conv, await newest(base, key, conv));
  const t0 = performance.now();
  const r = await api(base, 'POST', `/api/conversations/${conv}/prompts`, key, { prompt: 'say: again' });
  if (r.status !== 202) throw new Error(`prompt: ${r.status} ${r.text}`);
  const t1 = await firstOutput(res);
  await idle(base, key, conv);
  return t1 - t0;
}

/** A new conversation with a prompt: create to its first output event. */
async function newConversation(base, key, agent) {
  const t0 = performance.now();
  const r = await api(base, 'POST', '/api/conversations', key, { agent_id: agent, prompt: 'say: hello' });
  if (r.status !== 201) throw new Error(`conversation: ${r.status} ${r.text}`);
  const t1 = await firstOutput(await stream(base, key, r.json.data.id, null));
  await idle(base, key, r.json.data.id);
  return { ms: t1 - t0, conv: r.json.data.id };
}

/** `acs run CONV "say: again"`: spawn to the first byte on its standard output. */
function cliRun(base, key, conv) {
  return new Promise((resolve, reject) => {
    const env = { ...process.env, XDG_CONFIG_HOME: '/nonexistent', NO_COLOR: '1' };
    const t0 = performance.now();
    const child = spawn(BIN, ['run', conv, 'say: again', '--url', base, '--key', key], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let first = null;
    let err = '';
    child.stdout.on('data', () => { first ??= performance.now(); });
    child.stderr.on('data', (c) => { err += c; });
    child.on('exit', (code) => (code === 0 && first ? resolve(first - t0) : reject(new Error(`acs run: ${code} ${err}`))));
  });
}

const server = await startServer({ ACS_LIMITS__SANDBOXES_PER_ACCOUNT: '100' });
let runner = null;
try {
  const who = await account(server.base);
  const rows = [];

  // 1. acs run against the server's own figure, on one awake conversation.
  const local = await scriptedAgent(server.base, who.key);
  const first = await newConversation(server.base, who.key, local);
  const serverFig = [];
  const cliFig = [];
  for (let i = 0; i < N; i++) {
    serverFig.push(await laterPrompt(server.base, who.key, first.conv));
    cliFig.push(await cliRun(server.base, who.key, first.conv));
    await idle(server.base, who.key, first.conv);
  }
  const over = pct(cliFig, 50) - pct(serverFig, 50);
  rows.push(['later prompt to first output, server (SSE open)', serverFig, '']);
  rows.push(['`acs run CONV` spawn to first output line', cliFig, `p50 ${ms(over)} over the server's (goal < 50 ms)`]);

  // 2. turn start on a runner against the local provider.
  const made = await api(server.base, 'POST', '/api/runners', who.key, { name: 'bench' });
  const root = path.join(server.dir, 'runner');
  const env = {
    ...process.env,
    ACS_SANDBOX__RO_BINDS: JSON.stringify([`${SCRIPTED}:${AGENT}`]),
    ACS_RUNTIMES__DIR: `${server.dir}/runtimes`,
    RUST_LOG: 'warn',
  };
  runner = spawn(BIN, ['runner', '--url', server.base, '--token', made.json.data.token, '--root', root], { env, stdio: ['ignore', 'ignore', 'pipe'] });
  await until(async () => (await api(server.base, 'GET', `/api/runners/${made.json.data.runner.id}`, who.key)).json.data.online, 30000, 'the runner');
  const remote = await scriptedAgent(server.base, who.key, { provider: 'runner', runner_id: made.json.data.runner.id });
  for (const [where, agent] of [['local provider', local], ['runner (same host)', remote]]) {
    const starts = [];
    const later = [];
    const convs = [];
    for (let i = 0; i < N; i++) {
      const c = await newConversation(server.base, who.key, agent);
      starts.push(c.ms);
      later.push(await laterPrompt(server.base, who.key, c.conv));
      convs.push(c.conv);
    }
    for (const c of convs) await api(server.base, 'POST', `/api/conversations/${c}/terminate`, who.key);
    rows.push([`new conversation to first output, ${where}`, starts, '']);
    rows.push([`later prompt to first output, ${where}`, later, '']);
  }

  console.log(`acs CLI and runner benchmark: ${BIN}, SQLite, scripted agent, ${N} runs each`);
  console.log('| measure | p50 | p95 | note |');
  console.log('| --- | ---: | ---: | --- |');
  for (const [what, xs, note] of rows) console.log(`| ${what} | ${ms(pct(xs, 50))} | ${ms(pct(xs, 95))} | ${note} |`);
} finally {
  if (runner) {
    // Its machines were reclaimed with their conversations; the process goes now.
    runner.kill('SIGTERM');
  }
  await server.stop();
  fs.rmSync(path.join(server.dir, 'runner'), { recursive: true, force: true });
}
