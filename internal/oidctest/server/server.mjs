// The authorization server of the tests that need a real one (package
// internal/oidctest): oidc-provider (the certified Node OpenID provider)
// with its development login and consent pages, introspection and
// revocation. It listens on a free loopback port and prints one JSON line,
// {"issuer": "http://127.0.0.1:PORT"}, once it is ready; it stops when its
// standard input closes (the test process ended).
//
// Clients come from the OIDC_CLIENTS environment variable (a JSON array of
// client metadata). Every client with the refresh_token grant type gets
// refresh tokens, which rotate; PKCE (S256) is required of every client.
// OIDC_ACCESS_TOKEN_TTL (seconds, default 3600) is the lifetime of access
// tokens, short for the tests that watch a token expire. OIDC_RESOURCE,
// when set, is a resource server (an MCP endpoint) for which a client that
// asks for it (RFC 8707 resource parameter) gets JWT access tokens with
// the scope mcp; tokens asked without a resource stay opaque.
import http from 'node:http';
import Provider, { errors } from 'oidc-provider';

const clients = JSON.parse(process.env.OIDC_CLIENTS || '[]');
const accessTokenTTL = Number(process.env.OIDC_ACCESS_TOKEN_TTL || 3600);
const resource = process.env.OIDC_RESOURCE || '';

const server = http.createServer();
server.listen(0, '127.0.0.1', () => {
  const { port } = server.address();
  const issuer = `http://127.0.0.1:${port}`;
  const provider = new Provider(issuer, {
    clients,
    scopes: ['openid', 'offline_access', 'pets:read', 'pets:write'],
    features: {
      devInteractions: { enabled: true },
      introspection: { enabled: true },
      revocation: { enabled: true },
      resourceIndicators: {
        enabled: true,
        useGrantedResource: async () => true,
        getResourceServerInfo: async (ctx, indicator) => {
          if (resource === '' || indicator !== resource) throw new errors.InvalidTarget();
          return { scope: 'mcp', audience: indicator, accessTokenFormat: 'jwt', jwt: { sign: { alg: 'RS256' } } };
        },
      },
    },
    pkce: { required: () => true },
    issueRefreshToken: async (ctx, client) => client.grantTypeAllowed('refresh_token'),
    rotateRefreshToken: true,
    ttl: {
      AccessToken: accessTokenTTL,
      AuthorizationCode: 60,
      Grant: 86400,
      Interaction: 600,
      RefreshToken: 86400,
      Session: 86400,
    },
    cookies: { keys: ['connect-test-only-cookie-key'] },
  });
  server.on('request', provider.callback());
  process.stdout.write(JSON.stringify({ issuer }) + '\n');
});

process.stdin.resume();
process.stdin.on('end', () => process.exit(0));
process.stdin.on('close', () => process.exit(0));
