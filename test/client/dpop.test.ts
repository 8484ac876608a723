/**
 * DPoP in the client (RFC 9449): an authorization server and a resource server scripted here
 * check every proof with core's DpopProofVerifier, and can ask for nonces, decline DPoP, or
 * advertise what they like. What is checked: one key pair per grant, kept with it in the 0600
 * file and never shown; a fresh proof at every token and resource request; one retry with a nonce
 * asked for, never a loop; a bearer answer used as one; what the client does with metadata that
 * offers no algorithm it signs with.
 */
import { PERSON } from '../../src/client/grants.js';
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { DpopProofVerifier, jwkThumbprint } from '../../src/core/dpop.js';
import { ClientError } from '../../src/client/errors.js';
import { McpSdkOAuthProvider } from '../../src/client/mcp-sdk.js';
import { ContextClient, type ContextClientOptions } from '../../src/client/session.js';
import { FileTokenStore, MemoryTokenStore } from '../../src/client/token-store.js';
import type { TokenStore } from '../../src/client/types.js';
import { serveHandler, type ServedApp } from './setup.js';

interface PeerOptions {
  /** The AS metadata's dpop_signing_alg_values_supported; undefined leaves it out. */
  algs?: unknown;
  /** The token endpoint asks for a nonce: 'once' (then takes the one it gave), 'always' (a new one each time). */
  asNonce?: 'once' | 'always';
  /** The resource asks for a nonce, likewise. */
  rsNonce?: 'once' | 'always';
  /** The token endpoint ignores proofs and answers token_type Bearer. */
  declineDpop?: boolean;
  /** How the resource challenges a request without a token. */
  challenge?: 'DPoP' | 'Bearer';
}

interface TokenRequestSeen {
  grantType: string;
  jkt?: string;
  nonce?: string;
}

interface ResourceRequestSeen {
  authorization: string | null;
  jkt?: string;
  proofError?: string;
}

/** One origin playing both servers: PRM, AS metadata, /token, and /mcp. */
async function startPeer(options: PeerOptions = {}) {
  const verifier = new DpopProofVerifier();
  const tokenRequests: TokenRequestSeen[] = [];
  const resourceRequests: ResourceRequestSeen[] = [];
  /** access token → the jkt it is bound to ('' for a bearer token). */
  const issued = new Map<string, string>();
  let count = 0;
  let asNonce = 'as-nonce-0';
  let rsNonce = 'rs-nonce-0';
  // Requests arrive only once the server listens, so `app` is set by the time they are answered.
  const origin = (): string => app.origin;
  const now = () => Math.floor(Date.now() / 1000);
  const json = (body: unknown, status = 200, headers: Record<string, string> = {}) =>
    new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json', ...headers } });

  const app: ServedApp = await serveHandler(async (request) => {
    const url = new URL(request.url);
    if (url.pathname === '/.well-known/oauth-protected-resource/mcp') {
      return json({ resource: `${origin()}/mcp`, authorization_servers: [origin()] });
    }
    if (url.pathname === '/.well-known/oauth-authorization-server') {
      return json({
        issuer: origin(),
        token_endpoint: `${origin()}/token`,
        grant_types_supported: ['client_credentials', 'refresh_token'],
        token_endpoint_auth_methods_supported: ['client_secret_basic'],
        ...(options.algs === undefined ? {} : { dpop_signing_alg_values_supported: options.algs }),
      });
    }
    if (url.pathname === '/token') {
      const body = new URLSearchParams(await request.text());
      const proof = request.headers.get('dpop');
      const seen: TokenRequestSeen = { grantType: body.get('grant_type') ?? '' };
      tokenRequests.push(seen);
      if (proof && !options.declineDpop) {
        const checked = verifier.check({
          proof,
          method: 'POST',
          url: `${origin()}/token`,
          now: now(),
          ...(options.asNonce ? { nonce: (nonce: string | undefined) => options.asNonce === 'once' && nonce === asNonce } : {}),
        });
        if (!checked.ok) {
          if (checked.error === 'use_dpop_nonce') {
            if (options.asNonce === 'always') asNonce = `as-nonce-${++count}`;
            return json({ error: 'use_dpop_nonce', error_description: checked.description }, 400, { 'dpop-nonce': asNonce });
          }
          return json({ error: 'invalid_dpop_proof', error_description: checked.description }, 400);
        }
        seen.jkt = checked.proof.jkt;
      }
      const token = `token-${++count}`;
      issued.set(token, seen.jkt ?? '');
      return json({
        access_token: token,
        token_type: seen.jkt ? 'DPoP' : 'Bearer',
        expires_in: 3600,
        ...(seen.grantType === 'refresh_token' ? { refresh_token: `refresh-${count}` } : {}),
      });
    }
    if (url.pathname === '/mcp') {
      const authorization = request.headers.get('authorization');
      const seen: ResourceRequestSeen = { authorization };
      resourceRequests.push(seen);
      const unauthorized = (params: string, headers: Record<string, string> = {}) =>
        json({ error: 'unauthorized' }, 401, { 'www-authenticate': `${options.challenge ?? 'DPoP'} ${params}`, ...headers });
      const metadata = `resource_metadata="${origin()}/.well-known/oauth-protected-resource/mcp"`;
      if (!authorization) return unauthorized(metadata);
      const [scheme, token] = authorization.split(' ') as [string, string];
      const boundTo = issued.get(token);
      if (boundTo === undefined) return unauthorized(`${metadata}, error="invalid_token"`);
      if (boundTo === '') return scheme === 'Bearer' ? json({ ok: true }) : unauthorized('error="invalid_token"');
      if (scheme !== 'DPoP') return unauthorized('error="invalid_token"');
      const checked = verifier.check({
        proof: request.headers.get('dpop') ?? '',
        method: request.method,
        url: request.url,
        now: now(),
        accessToken: token,
        ...(options.rsNonce ? { nonce: (nonce: string | undefined) => options.rsNonce === 'once' && nonce === rsNonce } : {}),
      });
      if (!checked.ok) {
        seen.proofError = checked.error;
        if (checked.error === 'use_dpop_nonce') {
          if (options.rsNonce === 'always') rsNonce = `rs-nonce-${++count}`;
          return unauthorized('error="use_dpop_nonce"', { 'dpop-nonce': rsNonce });
        }
        return unauthorized('error="invalid_dpop_proof"');
      }
      seen.jkt = checked.proof.jkt;
      if (checked.proof.jkt !== boundTo) return unauthorized('error="invalid_token"');
      return json({ ok: true });
    }
    return new Response('not found', { status: 404 });
  });
  return { origin: app.origin, serverUrl: `${app.origin}/mcp`, tokenRequests, resourceRequests, close: () => app.close() };
}

type Peer = Awaited<ReturnType<typeof startPeer>>;

function programFor(peer: Peer, extra: Partial<ContextClientOptions> & { store?: TokenStore } = {}, progress: string[] = []): ContextClient {
  return new ContextClient({
    serverUrl: peer.serverUrl,
    store: new MemoryTokenStore(),
    grantType: 'client_credentials',
    clientId: 'robot',
    clientSecret: 'robot-secret',
    onProgress: (message) => progress.push(message),
    ...extra,
  });
}

const post = (client: ContextClient, url: string) => client.fetch(url, { method: 'POST', body: '{}', headers: { 'content-type': 'application/json' } });

describe('DPoP in the client', () => {
  let tempRoot: string;
  const peers: Peer[] = [];
  const peer = async (options: PeerOptions = {}) => {
    const started = await startPeer(options);
    peers.push(started);
    return started;
  };
  before(async () => {
    tempRoot = await fs.mkdtemp(path.join(os.tmpdir(), 'context-auth-dpop-'));
  });
  after(async () => {
    await Promise.all(peers.map((p) => p.close()));
    await fs.rm(tempRoot, { recursive: true, force: true });
  });

  it('turns DPoP on when the resource challenges with DPoP, and proves one key at the token and resource requests', async () => {
    const p = await peer({ algs: ['ES256'] });
    const client = programFor(p);
    const response = await post(client, p.serverUrl);
    assert.equal(response.status, 200);
    const grant = (await client.grant())!;
    assert.equal(grant.tokenType, 'DPoP');
    const jkt = jwkThumbprint(grant.dpopKey!.publicJwk as Record<string, unknown>);
    assert.equal(p.tokenRequests.at(-1)!.jkt, jkt);
    const last = p.resourceRequests.at(-1)!;
    assert.match(last.authorization!, /^DPoP /);
    assert.equal(last.jkt, jkt);
  });

  it('stays bearer when neither the option nor the resource asks for DPoP, though the AS offers it', async () => {
    const p = await peer({ algs: ['ES256'], challenge: 'Bearer' });
    const client = programFor(p);
    assert.equal((await post(client, p.serverUrl)).status, 200);
    assert.equal((await client.grant())!.dpopKey, undefined);
    assert.equal(p.tokenRequests.at(-1)!.jkt, undefined);
    assert.match(p.resourceRequests.at(-1)!.authorization!, /^Bearer /);
  });

  it('keeps the key with the grant in the 0600 file: a restarted client proves the same key, a new login makes a new one, and no progress line or error shows it', async () => {
    const p = await peer({ algs: ['ES256'], challenge: 'Bearer' });
    const file = path.join(tempRoot, 'restart', 'credentials.json');
    const progress: string[] = [];
    const first = programFor(p, { store: new FileTokenStore(file), dpop: true }, progress);
    assert.equal((await post(first, p.serverUrl)).status, 200);
    const stat = await fs.stat(file);
    assert.equal(stat.mode & 0o777, 0o600);
    const stored = (await first.grant())!;
    const privateD = (stored.dpopKey!.privateJwk as { d: string }).d;
    assert.ok(privateD, 'the private key is stored with the grant');
    assert.ok((await fs.readFile(file, 'utf8')).includes(privateD));
    const jkt = jwkThumbprint(stored.dpopKey!.publicJwk as Record<string, unknown>);

    // A new process: same file, no --dpop; the grant is still DPoP-bound and no token is asked for.
    const tokenRequestsBefore = p.tokenRequests.length;
    const restarted = programFor(p, { store: new FileTokenStore(file) }, progress);
    assert.equal((await post(restarted, p.serverUrl)).status, 200);
    assert.equal(p.tokenRequests.length, tokenRequestsBefore);
    assert.equal(p.resourceRequests.at(-1)!.jkt, jkt);

    // A new login (the grant it replaces was DPoP-bound: it stays DPoP) gets a key of its own.
    const renewed = await restarted.login();
    assert.equal(renewed.tokenType, 'DPoP');
    assert.notEqual(jwkThumbprint(renewed.dpopKey!.publicJwk as Record<string, unknown>), jkt);
    assert.equal((await fs.stat(file)).mode & 0o777, 0o600);

    // Nothing the client said names the key or the token.
    assert.ok(progress.length > 0);
    for (const line of progress) {
      assert.ok(!line.includes(privateD) && !line.includes(stored.accessToken) && !line.includes(renewed.accessToken), line);
    }
  });

  it('refreshes a DPoP-bound grant with a proof of its own key, and keeps the key', async () => {
    const p = await peer({ algs: ['ES256'] });
    const store = new MemoryTokenStore();
    const client = programFor(p, { store, grantType: 'authorization_code', clientId: 'person-app', clientSecret: undefined, interactive: false });
    // A grant as an earlier login left it, about to expire (the peer issues DPoP-bound tokens to a program only).
    const seed = programFor(p, { store: new MemoryTokenStore(), dpop: true });
    await seed.login();
    const key = (await seed.grant())!.dpopKey!;
    await store.saveGrant({
      ...(await seed.grant())!,
      application: client.application,
      identity: PERSON,
      clientId: 'person-app',
      refreshToken: 'refresh-0',
      expiresAt: Math.floor(Date.now() / 1000) + 5,
    });
    assert.equal((await post(client, p.serverUrl)).status, 200);
    const refresh = p.tokenRequests.at(-1)!;
    assert.equal(refresh.grantType, 'refresh_token');
    assert.equal(refresh.jkt, jwkThumbprint(key.publicJwk as Record<string, unknown>));
    assert.deepEqual((await client.grant())!.dpopKey, key);
  });

  it('answers a use_dpop_nonce from the token endpoint and from the resource once each, with the nonce given', async () => {
    const p = await peer({ algs: ['ES256'], asNonce: 'once', rsNonce: 'once' });
    const client = programFor(p);
    assert.equal((await post(client, p.serverUrl)).status, 200);
    // The token request: once without the nonce, once with it.
    assert.equal(p.tokenRequests.length, 2);
    assert.equal(p.tokenRequests[1]!.jkt !== undefined, true);
    // The resource: no token (401), then the proof without the nonce, then with it.
    assert.deepEqual(
      p.resourceRequests.map((r) => r.proofError ?? (r.jkt ? 'ok' : 'no token')),
      ['no token', 'use_dpop_nonce', 'ok'],
    );
    // The nonce is remembered: the next request carries it at once.
    assert.equal((await post(client, p.serverUrl)).status, 200);
    assert.equal(p.resourceRequests.at(-1)!.proofError, undefined);
    assert.equal(p.resourceRequests.length, 4);
  });

  it('does not loop on a server that refuses every nonce: one retry, then its refusal is the answer', async () => {
    const asPeer = await peer({ algs: ['ES256'], asNonce: 'always' });
    const refusing = programFor(asPeer, { dpop: true });
    const failure = await refusing.login().then(
      () => undefined,
      (error: unknown) => error,
    );
    assert.ok(failure instanceof ClientError && failure.code === 'token_request_failed' && /use_dpop_nonce/.test(failure.message), String(failure));
    // The error names neither a proof nor the key.
    assert.doesNotMatch(failure.message, /eyJ|"d"/);
    assert.equal(asPeer.tokenRequests.length, 2);

    const rsPeer = await peer({ algs: ['ES256'], rsNonce: 'always' });
    const client = programFor(rsPeer);
    await client.login();
    const before = rsPeer.resourceRequests.length;
    const response = await post(client, rsPeer.serverUrl);
    assert.equal(response.status, 401);
    assert.equal(rsPeer.resourceRequests.length - before, 2, 'the request and one retry with the nonce, and no new login');
    assert.equal(rsPeer.tokenRequests.length, 1);
  });

  it('uses a bearer token as one when the AS declines DPoP (token_type Bearer), and says so', async () => {
    const p = await peer({ algs: ['ES256'], declineDpop: true, challenge: 'Bearer' });
    const progress: string[] = [];
    const client = programFor(p, { dpop: true }, progress);
    assert.equal((await post(client, p.serverUrl)).status, 200);
    const grant = (await client.grant())!;
    assert.equal(grant.tokenType, undefined);
    assert.equal(grant.dpopKey, undefined);
    assert.match(p.resourceRequests.at(-1)!.authorization!, /^Bearer /);
    assert.ok(
      progress.some((line) => /declined DPoP/.test(line)),
      progress.join('\n'),
    );
  });

  for (const [what, algs] of [
    ['omits dpop_signing_alg_values_supported', undefined],
    ['lists no algorithm', []],
    ['lists only none', ['none']],
    ['lists only HS256', ['HS256']],
  ] as const) {
    it(`refuses DPoP before any token request when the AS ${what}`, async () => {
      const p = await peer({ algs });
      await assert.rejects(programFor(p, { dpop: true }).login(), (error: unknown) => error instanceof ClientError && error.code === 'dpop_unsupported');
      assert.equal(p.tokenRequests.length, 0);
    });
  }

  it('never signs with none: a list with none and ES256 gets ES256', async () => {
    const p = await peer({ algs: ['none', 'ES256'] });
    const grant = await programFor(p, { dpop: true }).login();
    assert.equal(grant.dpopKey!.alg, 'ES256');
    assert.ok(p.tokenRequests.at(-1)!.jkt);
  });

  it('the MCP SDK provider refuses to hand a DPoP-bound grant to the SDK, which would send it as a bearer token', async () => {
    const p = await peer({ algs: ['ES256'] });
    const store = new MemoryTokenStore();
    const provider = await McpSdkOAuthProvider.create({ serverUrl: p.serverUrl, store, clientName: 'sdk-app' });
    try {
      const client = programFor(p, { store, applicationId: provider.application, dpop: true });
      // A person's DPoP-bound grant, as a browser login with dpop leaves it (the peer issues to a program only).
      await store.saveGrant({ ...(await client.login()), identity: PERSON });
      await assert.rejects(provider.tokens(), (error: unknown) => error instanceof ClientError && error.code === 'dpop_unsupported');
    } finally {
      await provider.close();
    }
  });
});
