// Bulk apply's benchmark, run by hand (`node bench/apply.mjs`) or by
// bench/run (step 16): a 200-document manifest (40 environments with a
// secret each, 40 vaults, 40 agents bound to them by name, 40 teammates,
// 40 schedules) against a real `acs serve` (ACS_BIN, default the debug
// build) on SQLite: the first apply (everything created), a second
// (everything unchanged), a dry run, and one with every agent changed.
// Goal: a 200-document manifest under 2 s. Prints a small table.

import { account, api, startServer } from '../tests/browser/harness.mjs';

const N = Number(process.env.BENCH_APPLY_EACH || 40);

function manifest(prompt) {
  const docs = [];
  for (let i = 0; i < N; i++) {
    docs.push({ kind: 'Environment', name: `env-${i}`, spec: { setup_script: 'true', env_vars: { N: String(i) }, secrets: { TOKEN: `tok-${i}` } } });
    docs.push({ kind: 'Vault', name: `vault-${i}`, spec: { description: `vault ${i}` } });
    docs.push({ kind: 'Agent', name: `agent-${i}`, spec: { runtime: 'acp', command: ['/bin/true'], system_prompt: prompt, environment: `env-${i}`, vault: `vault-${i}` } });
    docs.push({ kind: 'Teammate', name: `agent-${i}`, spec: { environment: `env-${i}`, vault: `vault-${i}` } });
    docs.push({ kind: 'Schedule', name: `nightly-${i}`, spec: { agent: `agent-${i}`, cron: `${i % 60} 3 * * *`, prompt: 'say: nightly' } });
  }
  return docs;
}

async function timed(base, key, docs, dryRun) {
  const t0 = performance.now();
  const r = await api(base, 'POST', `/api/apply${dryRun ? '?dry_run=true' : ''}`, key, { documents: docs });
  const ms = performance.now() - t0;
  if (r.status !== 200) throw new Error(`apply: ${r.status} ${r.text}`);
  const counts = {};
  for (const row of r.json.data) counts[row.result] = (counts[row.result] || 0) + 1;
  return { ms, counts };
}

const server = await startServer();
try {
  const who = await account(server.base);
  const runs = [
    ['first apply (all created)', manifest('Review.'), false],
    ['again (all unchanged)', manifest('Review.'), false],
    ['dry run of a change to every agent', manifest('Review again.'), true],
    ['every agent changed', manifest('Review again.'), false],
  ];
  console.log(`acs apply benchmark: ${process.env.ACS_BIN || 'target/debug/acs'}, SQLite, ${N * 5} documents`);
  console.log('| run | time | rows | goal |');
  console.log('| --- | ---: | --- | --- |');
  for (const [what, docs, dry] of runs) {
    const { ms, counts } = await timed(server.base, who.key, docs, dry);
    const rows = Object.entries(counts).map(([k, v]) => `${v} ${k}`).join(', ');
    console.log(`| ${what} | ${(ms / 1000).toFixed(2)} s | ${rows} | ${what.startsWith('first') ? '< 2 s' : ''} |`);
  }
} finally {
  await server.stop();
}
