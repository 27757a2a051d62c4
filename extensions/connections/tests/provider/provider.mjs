// A real OAuth 2.0 / OpenID provider for the connections extension's tests:
// panva's oidc-provider (certified OpenID implementation) on 127.0.0.1, with
// discovery, authorization code + PKCE, refresh tokens and revocation, and
// its stock development login and consent forms.
//
// Configuration comes as JSON in PROVIDER_CONFIG:
//   {clients: [{client_id, client_secret, redirect_uris, token_endpoint_auth_method?}],
//    access_token_ttl?: seconds, refresh_token_ttl?: seconds,
//    no_refresh_tokens?: true (codes give access tokens only)}
// Once listening it prints one line, {"issuer": "http://127.0.0.1:PORT"}.
//
// Test-only routes beside the provider's own:
//   POST /test/revoke-grants  revokes every grant it issued (as an account
//                             revoking the app at the provider would): the
//                             next refresh answers invalid_grant
//   GET  /test/stats          {token_requests, refreshes, revocations, grants}
import http from 'node:http';
import Provider from 'oidc-provider';

const config = JSON.parse(process.env.PROVIDER_CONFIG || '{}');
const grants = new Set();
const stats = { token_requests: 0, refreshes: 0, revocations: 0 };

const server = http.createServer();
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const issuer = `http://127.0.0.1:${server.address().port}`;

const provider = new Provider(issuer, {
  clients: (config.clients || []).map((c) => ({
    client_id: c.client_id,
    client_secret: c.client_secret,
    redirect_uris: c.redirect_uris,
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    token_endpoint_auth_method: c.token_endpoint_auth_method || 'client_secret_basic',
  })),
  features: {
    devInteractions: { enabled: true },
    revocation: { enabled: true },
    introspection: { enabled: true },
  },
  pkce: { required: () => true },
  // Every code grant of a client allowed to refresh gets a refresh token
  // (the stock rule also wants the offline_access scope and consent prompt).
  issueRefreshToken: async (_ctx, client) => !config.no_refresh_tokens && client.grantTypeAllowed('refresh_token'),
  // A refresh answers a new refresh token, as many providers do.
  rotateRefreshToken: () => true,
  ttl: {
    AccessToken: config.access_token_ttl || 3600,
    RefreshToken: config.refresh_token_ttl || 86400,
    AuthorizationCode: 60,
    Interaction: 600,
    Session: 3600,
    Grant: 86400,
  },
  cookies: { keys: ['acs-connections-test-provider'] },
  findAccount: async (_ctx, sub) => ({ accountId: sub, claims: async () => ({ sub }) }),
});

provider.on('access_token.saved', (t) => grants.add(t.grantId));
provider.on('refresh_token.saved', (t) => grants.add(t.grantId));
provider.on('grant.success', (ctx) => {
  stats.token_requests += 1;
  if (ctx.oidc.params?.grant_type === 'refresh_token') stats.refreshes += 1;
});
provider.on('grant.revoked', () => { stats.revocations += 1; });
provider.on('server_error', (_ctx, err) => console.error('provider error', err));

const callback = provider.callback();

server.on('request', async (req, res) => {
  const send = (status, body) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };
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
    send(200, { ...stats, grants: grants.size });
    return;
  }
  callback(req, res);
});

console.log(JSON.stringify({ issuer }));
