// Package connect is the gateway's OAuth client of the upstream APIs
// (credentials mode "oauth" for an API): each user grants the gateway
// access to their own account at the API's authorization server once, and
// the gateway then calls the API with that user's access token.
//
// It owns the whole life of such a grant:
//
//   - asking: [Connector.Decorator] wraps an API's tools; a caller without a
//     grant gets an MRTR round with a URL-mode elicitation whose link is the
//     gateway's own /connect/<api> page (a client without URL mode gets a
//     tool error naming the same link);
//   - the authorization: [Connector.Handler] serves the confirmation page,
//     starts the authorization code flow with PKCE (S256) and takes the
//     callback (endpoints and scopes from the document's oauth2 security
//     scheme, [Provider.FromDocument], or configuration);
//   - keeping: grants are sealed with [secretbox] (AES-256-GCM, subkeys of
//     the state key ring, bound to API, tenant and subject) in a [Store]:
//     [MemoryStore], sqlite.GrantStore or postgres.GrantStore;
//   - using: [Connector.AuthResolver] puts the token on upstream requests,
//     refreshed before it expires; [Connector.Transport] notices an
//     upstream's 401 to it, and the grant is renewed or the user asked again;
//   - ending: [Connector.Revoke] and [Connector.List] (for `mcpgate grants
//     list|revoke`), [Connector.DisconnectTool] for the user, and
//     [Connector.Reseal] after a key rotation.
//
// # Registering the gateway at an API
//
// Register one OAuth client per API at its authorization server, with the
// redirect URI [Connector.RedirectURL] (BaseURL + "/connect/<api>/callback")
// and the scopes the API's tools need. For GitHub: create a GitHub App (its
// user tokens expire after 8 hours and come with refresh tokens, which the
// gateway uses) or an OAuth App (tokens that never expire and cannot be
// refreshed: a revoked one is noticed at the upstream's first 401), set its
// callback URL to https://mcp.example.com/connect/github/callback, and
// configure the API with that client id and secret, AuthURL
// https://github.com/login/oauth/authorize and TokenURL
// https://github.com/login/oauth/access_token (GitHub's revocation is not
// RFC 7009: leave RevocationURL empty; disconnecting then deletes the
// grant here and the user revokes it in GitHub's settings). PKCE is always
// sent; an authorization server that ignores it still works.
//
// [Provider.FromDocument] takes the provider from the document's oauth2
// security scheme with an authorizationCode flow and fails without one,
// even when AuthURL and TokenURL are both configured. GitHub's published
// OpenAPI description declares no security scheme, so a gateway serving it
// in this mode needs one added to its copy of the document.
//
// # Who completes the flow (threat model)
//
// MCP requires the server to verify that the person completing a URL-mode
// flow is the user who triggered it. The attack is phishing for a grant:
// Mallory calls a tool, gets a connect link bound to herself, and sends it
// to Alice; if Alice completes it, Alice's upstream account is stored under
// Mallory's identity and Mallory's agent acts as Alice. A second attack is
// a leaked link (logs, browser history, an agent that reads it) used by
// someone else, and a third a stolen or replayed callback.
//
// What this package does about each:
//
//   - The link carries nothing readable: the caller's subject and tenant, a
//     flow id, a confirmation code and a 10-minute expiry are sealed inside
//     (secretbox, bound to the API). It is not pre-authenticated: it only
//     leads to the upstream's own login.
//   - The confirmation code is shown only in the elicitation's message (the
//     client's UI, not the URL). The page asks for it before anything else;
//     a link is spent by the first attempt, right or wrong (one guess of 40
//     bits per link, across replicas through the replay cache). A leaked
//     link alone is useless.
//   - The page says, on the gateway's origin, what is being connected and
//     warns not to continue a link someone else sent. It sends no Referer,
//     cannot be framed and runs no script.
//   - The authorization is bound to the browser that confirmed it: a fresh
//     random state, and a cookie (HttpOnly, SameSite=Lax, __Host- on https)
//     holding the sealed subject and PKCE verifier for that state. A
//     callback without the matching cookie, with a forged or expired one, or
//     a second time (the replay cache), is refused. The code is redeemed
//     with the verifier, so a code issued to another client or for another
//     flow is refused by the authorization server; an iss parameter naming
//     another issuer is refused (RFC 9207).
//   - The grant is stored under the subject sealed at step one, never under
//     anything the browser says.
//
// What the code cannot do: if Mallory persuades Alice to type the code too
// (she sends both), Alice's account ends up under Mallory's identity. The
// code turns a silent click into a deliberate step that the page warns
// about, but only an identity check of the browser closes the gap. So the
// two deployment modes guarantee different things:
//
//   - With [Options.Login] (for gateways whose MCP callers are OAuth
//     authenticated, auth mode oauth): the connect page signs the browser in
//     at the callers' identity provider (OpenID Connect, PKCE, nonce, the ID
//     token verified like an access token) and goes on only if the signed-in
//     subject and tenant are the link's. The person completing the flow is
//     then proven to be the caller, as far as the identity provider
//     authenticates; the code form is closed. A phished link fails for its
//     victim; one attempt spends it.
//   - Without it (bearer-token callers, no auth mode): there is no user
//     identity to compare, only the token; the guarantee is that a link
//     alone, a replayed or forged callback, another browser or a code for
//     another client connects nothing, and that a grant only ever lands
//     under the subject that asked. A user who is talked into typing
//     someone else's code is not protected.
//
// Invariants:
//
//   - Tokens are never in a URL, a log line, an error or a tool result, and
//     never leave the gateway except to the API's token, revocation and
//     upstream endpoints. A Store only ever sees sealed tokens.
//   - Nothing lives only in one process: links and flow state travel sealed
//     (in the URL and the cookie), single use is the shared replay cache,
//     grants are in the shared store. Any replica can start a flow, take the
//     callback and use the grant.
//   - One refresh per grant at a time across replicas (a lease on the row's
//     version): a rotated refresh token is never spent twice.
//   - A refused refresh drops the grant and the call asks the user again;
//     an unreachable authorization server keeps it.
package connect
