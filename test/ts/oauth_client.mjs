// The official TypeScript MCP SDK client against the real gateway binary.
// test/e2e TestOAuthTypeScriptClient starts the gateway, the identity
// provider and the emulated GitHub with alice's project (a runtime document
// and a catalog profile), runs this script, and plays the browser: each
// time the SDK sends the user to the authorization endpoint, this script
// prints
//   AUTHORIZE <url>
// and reads one line back: the URL the browser was redirected to after the
// scripted login and the consent (a plain 303). At the end it prints
//   RESULT <json>
// with what it saw. Any failed expectation throws: the exit code is 1.
//
// Environment: GATEWAY_URL (the gateway's public URL), PROFILE_ID (the
// profile workflow_dispatch dispatches).

import { createInterface } from 'node:readline';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { auth, UnauthorizedError, refreshAuthorization } from '@modelcontextprotocol/sdk/client/auth.js';

const gateway = process.env.GATEWAY_URL;
if (!gateway) throw new Error('GATEWAY_URL is not set');
const profileID = process.env.PROFILE_ID;
if (!profileID) throw new Error('PROFILE_ID is not set');
const endpoint = new URL(gateway + '/mcp/documents');

const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();

function expect(cond, what) {
  if (!cond) throw new Error('expectation failed: ' + what);
}

// Provider is an in-memory OAuthClientProvider. Like the SDK's own
// examples it has no state(): the SDK then sends no state, and relies on
// PKCE. withoutResource makes validateResourceURL answer undefined, so the
// SDK sends no RFC 8707 resource, as clients written for MCP 2025-03-26 do.
// withoutRefresh keeps no refresh token: SDK 1.32.2 answers a 403
// insufficient_scope by refreshing when it holds one, which cannot widen a
// token (typescript-sdk#2255); without one it re-authorizes, as a step-up
// should.
class Provider {
  constructor(name, redirect, { withoutResource = false, withoutRefresh = false } = {}) {
    this.name = name;
    this.redirect = redirect;
    this.authorizationURLs = [];
    this.saved = {};
    this.withoutRefresh = withoutRefresh;
    if (withoutResource) this.validateResourceURL = async () => undefined;
  }
  get redirectUrl() { return this.redirect; }
  get clientMetadata() {
    return {
      client_name: this.name,
      redirect_uris: [this.redirect],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  }
  clientInformation() { return this.saved.client; }
  saveClientInformation(info) { this.saved.client = info; }
  tokens() { return this.saved.tokens; }
  saveTokens(tokens) { this.saved.tokens = tokens && this.withoutRefresh ? { ...tokens, refresh_token: undefined } : tokens; }
  codeVerifier() { return this.saved.verifier; }
  saveCodeVerifier(v) { this.saved.verifier = v; }
  async redirectToAuthorization(url) {
    this.authorizationURLs.push(url);
    process.stdout.write('AUTHORIZE ' + url.href + '\n');
    const { value, done } = await lines.next();
    if (done) throw new Error('no redirect came back for ' + url.href);
    this.lastRedirect = new URL(value.trim());
  }
}

// connect runs the SDK's whole flow: the first connect meets the 401 and
// sends the user to authorize; finishAuth trades the code; a new transport
// then connects with the token.
async function connect(provider) {
  let transport = new StreamableHTTPClientTransport(endpoint, { authProvider: provider });
  let client = new Client({ name: provider.name, version: '1.0.0' });
  try {
    await client.connect(transport);
    throw new Error('the first connect did not ask for authorization');
  } catch (e) {
    if (!(e instanceof UnauthorizedError)) throw e;
  }
  const code = provider.lastRedirect?.searchParams.get('code');
  expect(code, 'the redirect carries a code: ' + provider.lastRedirect);
  await transport.finishAuth(code);
  await transport.close();
  transport = new StreamableHTTPClientTransport(endpoint, { authProvider: provider });
  client = new Client({ name: provider.name, version: '1.0.0' });
  await client.connect(transport);
  return client;
}

// call calls one tool and returns what a model would see of it: whether it
// failed, its error code, and the members of its result named in keep.
async function call(client, name, args, keep = []) {
  const res = await client.callTool({ name, arguments: args });
  const out = JSON.parse(res.content[0].text);
  const seen = { isError: !!res.isError, code: out.error?.code };
  for (const k of keep) seen[k] = out[k] !== undefined;
  return seen;
}

// everyTool calls a documents tool, a catalog tool and workflow_dispatch.
async function everyTool(client) {
  return {
    runtime_bootstrap_get: await call(client, 'runtime_bootstrap_get', {}, ['sources']),
    catalog_profiles_list: await call(client, 'catalog_profiles_list', {}, ['profiles']),
    workflow_dispatch: await call(client, 'workflow_dispatch', { profile_id: profileID }, ['workflow_id', 'instructions']),
  };
}

async function status(bearer) {
  const res = await fetch(endpoint, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2025-06-18',
      authorization: 'Bearer ' + bearer,
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tools/list' }),
  });
  await res.arrayBuffer();
  return res.status;
}

async function form(url, params) {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(params),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : {} };
}

const result = {};

// 1. A loopback client, no state, no resource: discovery from the 401
// (whose scope hint the SDK asks for: every scope the endpoint's tools
// check), registration, authorization, token, tools/list, and after that
// one login a documents tool, a catalog tool and workflow_dispatch.
const loopback = new Provider('ts-sdk loopback', 'http://127.0.0.1:9/callback', { withoutResource: true });
const c1 = await connect(loopback);
const a1 = loopback.authorizationURLs[0].searchParams;
result.loopbackAuthorize = {
  scope: a1.get('scope'), hasState: a1.has('state'), hasResource: a1.has('resource'),
  method: a1.get('code_challenge_method'),
};
result.loopbackRedirectHasState = loopback.lastRedirect.searchParams.has('state');
result.loopbackTools = (await c1.listTools()).tools.map((t) => t.name);
result.loopbackCalls = await everyTool(c1);
result.loopbackLogins = loopback.authorizationURLs.length;
await c1.close();

// 2. A native client with a private-use redirect, asking for every scope
// the server lists; the SDK sends the resource this time.
const md = await (await fetch(gateway + '/.well-known/oauth-authorization-server')).json();
const native = new Provider('ts-sdk native', 'com.example.agw-test:/oauth/callback');
const allScopes = md.scopes_supported.join(' ');
expect((await auth(native, { serverUrl: endpoint, scope: allScopes })) === 'REDIRECT', 'auth() redirects');
const a2 = native.authorizationURLs[0].searchParams;
result.nativeAuthorize = { hasState: a2.has('state'), resource: a2.get('resource'), scope: a2.get('scope') };
result.nativeRedirect = native.lastRedirect.protocol + native.lastRedirect.pathname;
expect((await auth(native, { serverUrl: endpoint, authorizationCode: native.lastRedirect.searchParams.get('code') })) === 'AUTHORIZED', 'the code is traded');
const full = native.saved.tokens;
result.nativeScope = full.scope;

// 3. A narrowing refresh: the access token carries only documents:read;
// the access token issued before it is refused from then on.
const narrowed = await form(md.token_endpoint, {
  grant_type: 'refresh_token', refresh_token: full.refresh_token, client_id: native.saved.client.client_id, scope: 'documents:read',
});
expect(narrowed.status === 200, 'narrowing refresh: ' + JSON.stringify(narrowed.body));
result.narrowedScope = narrowed.body.scope;
result.narrowedTokenStatus = await status(narrowed.body.access_token);
result.oldTokenStatus = await status(full.access_token);

// The SDK's own refresh then gets every scope back with the rotated
// refresh token, and its client lists the tools.
const rotated = await refreshAuthorization(new URL(md.issuer), {
  metadata: md, clientInformation: native.saved.client, refreshToken: narrowed.body.refresh_token, resource: endpoint,
});
native.saveTokens(rotated);
result.sdkRefreshScope = rotated.scope;
result.narrowedAfterSdkRefresh = await status(narrowed.body.access_token);
{
  const client = new Client({ name: native.name, version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(endpoint, { authProvider: native }));
  result.nativeTools = (await client.listTools()).tools.map((t) => t.name);
  await client.close();
}

// 4. Revocation (RFC 7009): the refresh token ends the whole family.
const revoked = await form(md.revocation_endpoint, { token: rotated.refresh_token, client_id: native.saved.client.client_id });
result.revokeStatus = revoked.status;
result.afterRevokeStatus = await status(rotated.access_token);

// 5. Step-up: a client authorized for documents:read alone calls
// workflow_dispatch; the 403 names the scope it holds with the one needed,
// the SDK re-authorizes for exactly that set, and the retried call and a
// documents call both work.
const stepUp = new Provider('ts-sdk step-up', 'http://127.0.0.1:9/callback', { withoutRefresh: true });
expect((await auth(stepUp, { serverUrl: endpoint, scope: 'documents:read' })) === 'REDIRECT', 'step-up: auth() redirects');
expect((await auth(stepUp, { serverUrl: endpoint, authorizationCode: stepUp.lastRedirect.searchParams.get('code') })) === 'AUTHORIZED', 'step-up: the code is traded');
result.stepUpFirstScope = stepUp.saved.tokens.scope;
{
  let transport = new StreamableHTTPClientTransport(endpoint, { authProvider: stepUp });
  let client = new Client({ name: stepUp.name, version: '1.0.0' });
  await client.connect(transport);
  try {
    await client.callTool({ name: 'workflow_dispatch', arguments: { profile_id: profileID } });
    throw new Error('workflow_dispatch with documents:read alone did not ask for authorization');
  } catch (e) {
    if (!(e instanceof UnauthorizedError)) throw e;
  }
  result.stepUpAuthorize = stepUp.authorizationURLs[1].searchParams.get('scope');
  await transport.finishAuth(stepUp.lastRedirect.searchParams.get('code'));
  await transport.close();
  transport = new StreamableHTTPClientTransport(endpoint, { authProvider: stepUp });
  client = new Client({ name: stepUp.name, version: '1.0.0' });
  await client.connect(transport);
  result.stepUpCalls = {
    workflow_dispatch: await call(client, 'workflow_dispatch', { profile_id: profileID }, ['workflow_id']),
    runtime_bootstrap_get: await call(client, 'runtime_bootstrap_get', {}, ['sources']),
  };
  await client.close();
}
result.stepUpScope = stepUp.saved.tokens.scope;

// 6. The same client authorizes again for documents:read alone: the token
// keeps the scopes granted to it before.
stepUp.saveTokens(undefined);
expect((await auth(stepUp, { serverUrl: endpoint, scope: 'documents:read' })) === 'REDIRECT', 'again: auth() redirects');
expect((await auth(stepUp, { serverUrl: endpoint, authorizationCode: stepUp.lastRedirect.searchParams.get('code') })) === 'AUTHORIZED', 'again: the code is traded');
result.againScope = stepUp.saved.tokens.scope;
{
  const client = new Client({ name: stepUp.name, version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(endpoint, { authProvider: stepUp }));
  result.againCalls = {
    runtime_bootstrap_get: await call(client, 'runtime_bootstrap_get', {}, ['sources']),
    workflow_dispatch: await call(client, 'workflow_dispatch', { profile_id: profileID }, ['workflow_id']),
  };
  await client.close();
}
result.stepUpLogins = stepUp.authorizationURLs.length;

process.stdout.write('RESULT ' + JSON.stringify(result) + '\n');
process.exit(0);
