// A fake vendor for the subscriptions extension's tests: panva's
// oidc-provider (a certified OpenID implementation) on 127.0.0.1 with the
// RFC 8628 device flow, refresh tokens rotating on use, and a usage endpoint
// the test controls.
//
// Configuration comes as JSON in PROVIDER_CONFIG:
//   {client_id, access_token_ttl?: seconds, device_code_ttl?: seconds, interval?: seconds}
// Once listening it prints one line, {"issuer": "http://127.0.0.1:PORT"}.
//
// Endpoints acs is configured with: POST /device/auth (device
// authorization), POST /token, GET /usage (Bearer access token; answers
// {exhausted, resets_at?} as set by /test/usage).
//
// Test-only routes:
//   POST /test/approve {user_code, login, deny?}  a person's browser at the
//        verification page: enters the code, confirms (or aborts), signs in
//        as `login` (the vendor account's subject) and consents
//   POST /test/outage {on}       while on, /token and /device/auth requests get their connection dropped
//   POST /test/slow-down {count}  the next `count` /token requests answer slow_down (RFC 8628 3.5)
//   POST /test/usage {exhausted, resets_at?, status?}  what /usage answers
//   POST /test/revoke-grants     revokes every grant (the next refresh answers invalid_grant)
//   GET  /test/stats             {token_requests, refreshes, usage_calls, last_usage_token}
import http from 'node:http';
import Provider from 'oidc-provider';

const config = JSON.parse(process.env.PROVIDER_CONFIG || '{}');
const grants = new Set();
const stats = { token_requests: 0, refreshes: 0, usage_calls: 0, last_usage_token: null };
let outage = false;
let slowDowns = 0;
let usage = { status: 200, body: { exhausted: false } };

const server = http.createServer();
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const issuer = `http://127.0.0.1:${server.address().port}`;

const provider = new Provider(issuer, {
  clients: [{
    client_id: config.client_id || 'acs-test-client',
    grant_types: ['urn:ietf:params:oauth:grant-type:device_code', 'refresh_token'],
    response_types: [],
    redirect_uris: [],
    token_endpoint_auth_method: 'none',
  }],
  features: {
    devInteractions: { enabled: true },
    deviceFlow: { enabled: true },
    revocation: { enabled: true },
  },
  claims: { openid: ['sub', 'plan'], email: ['email'] },
  // The ID token carries the claims of the granted scopes (email, plan):
  // acs reads the vendor account from it.
  conformIdTokenClaims: false,
  issueRefreshToken: async (_ctx, client) => client.grantTypeAllowed('refresh_token'),
  rotateRefreshToken: () => true,
  ttl: {
    AccessToken: config.access_token_ttl || 3600,
    RefreshToken: 86400,
    DeviceCode: config.device_code_ttl || 600,
    IdToken: 3600,
    Interaction: 600,
    Session: 3600,
    Grant: 86400,
  },
  cookies: { keys: ['acs-subscriptions-test-provider'] },
  findAccount: async (_ctx, sub) => ({
    accountId: sub,
    claims: async () => ({ sub, email: `${sub}@vendor.test`, plan: 'plus' }),
  }),
});

provider.on('access_token.saved', (t) => grants.add(t.grantId));
provider.on('refresh_token.saved', (t) => grants.add(t.grantId));
provider.on('grant.success', (ctx) => {
  stats.token_requests += 1;
  if (ctx.oidc.params?.grant_type === 'refresh_token') stats.refreshes += 1;
});
provider.on('server_error', (_ctx, err) => console.error('provider error', err));

const callback = provider.callback();

async function readBody(req) {
  let raw = '';
  for await (const chunk of req) raw += chunk;
  return raw ? JSON.parse(raw) : {};
}

// A browser: keeps cookies, follows redirects, submits the device flow's
// forms. Returns the last page's text.
async function approve({ user_code, login, deny }) {
  const jar = new Map();
  const hidden = (html, formId) => {
    let part = html;
    if (formId) {
      const at = html.indexOf(`id="${formId}"`);
      part = html.slice(at, html.indexOf('</form>', at));
    }
    const fields = {};
    for (const m of part.matchAll(/<input[^>]*type="hidden"[^>]*>/g)) {
      const name = /name="([^"]*)"/.exec(m[0]);
      const value = /value="([^"]*)"/.exec(m[0]);
      if (name) fields[name[1]] = value ? value[1] : '';
    }
    return fields;
  };
  const action = (html, formId) => {
    const at = formId ? html.indexOf(`id="${formId}"`) : 0;
    const start = html.lastIndexOf('<form', at);
    const tag = html.slice(start, html.indexOf('>', start));
    const m = /action="([^"]*)"/.exec(tag);
    // A form without an action posts back to the page's own address.
    return m ? m[1].replace(/&amp;/g, '&') : '';
  };
  let url = `${issuer}/device`;
  let body = null;
  let aborted = false;
  for (let i = 0; i < 20; i += 1) {
    const headers = { cookie: [...jar].map(([k, v]) => `${k}=${v}`).join('; ') };
    if (body) headers['content-type'] = 'application/x-www-form-urlencoded';
    const res = await fetch(url, { method: body ? 'POST' : 'GET', headers, body: body ? new URLSearchParams(body).toString() : undefined, redirect: 'manual' });
    for (const c of res.headers.getSetCookie()) {
      const [pair] = c.split(';');
      const eq = pair.indexOf('=');
      jar.set(pair.slice(0, eq).trim(), pair.slice(eq + 1).trim());
    }
    body = null;
    if (res.status >= 300 && res.status < 400) {
      url = new URL(res.headers.get('location'), url).toString();
      continue;
    }
    const html = await res.text();
    // After an abort the provider shows its code entry page again: done.
    if (aborted) return { status: res.status, page: html };
    if (html.includes('id="op.deviceInputForm"')) {
      body = { ...hidden(html, 'op.deviceInputForm'), user_code };
      url = new URL(action(html, 'op.deviceInputForm'), url).toString();
    } else if (html.includes('id="op.deviceConfirmForm"')) {
      body = hidden(html, 'op.deviceConfirmForm');
      if (deny) {
        body.abort = 'yes';
        aborted = true;
      }
      url = new URL(action(html, 'op.deviceConfirmForm'), url).toString();
    } else if (html.includes('name="prompt" value="login"')) {
      body = { prompt: 'login', login, password: 'anything' };
      url = new URL(action(html), url).toString();
    } else if (html.includes('name="prompt" value="consent"')) {
      body = { prompt: 'consent' };
      url = new URL(action(html), url).toString();
    } else {
      return { status: res.status, page: html };
    }
  }
  throw new Error('the device flow never ended');
}

server.on('request', async (req, res) => {
  const send = (status, body) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };
  try {
    if (req.url === '/test/approve' && req.method === 'POST') {
      send(200, await approve(await readBody(req)));
      return;
    }
    if (req.url === '/test/outage' && req.method === 'POST') {
      outage = Boolean((await readBody(req)).on);
      send(200, { outage });
      return;
    }
    if (req.url === '/test/slow-down' && req.method === 'POST') {
      slowDowns = Number((await readBody(req)).count || 0);
      send(200, { slowDowns });
      return;
    }
    if (req.url === '/test/usage' && req.method === 'POST') {
      const b = await readBody(req);
      usage = { status: b.status || 200, body: { exhausted: Boolean(b.exhausted), ...(b.resets_at ? { resets_at: b.resets_at } : {}) } };
      send(200, usage);
      return;
    }
    if (req.url === '/test/revoke-grants' && req.method === 'POST') {
      for (const grantId of grants) {
        await provider.AccessToken.revokeByGrantId(grantId);
        await provider.RefreshToken.revokeByGrantId(grantId);
        await provider.Grant.adapter.destroy(grantId);
      }
      send(200, { revoked: grants.size });
      return;
    }
    if (req.url === '/test/stats') {
      send(200, stats);
      return;
    }
    if (req.url === '/usage' && req.method === 'GET') {
      stats.usage_calls += 1;
      stats.last_usage_token = (req.headers.authorization || '').replace(/^Bearer /, '');
      send(usage.status, usage.body);
      return;
    }
    if ((req.url.startsWith('/token') || req.url.startsWith('/device/auth')) && outage) {
      req.socket.destroy();
      return;
    }
    if (req.url === '/token' && slowDowns > 0) {
      slowDowns -= 1;
      send(400, { error: 'slow_down', error_description: 'you are polling too quickly' });
      return;
    }
  } catch (e) {
    console.error('test route error', e);
    send(500, { error: String(e) });
    return;
  }
  callback(req, res);
});

console.log(JSON.stringify({ issuer }));
