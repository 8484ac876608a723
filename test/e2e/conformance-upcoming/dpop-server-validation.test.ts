/**
 * The MCP conformance suite's DPoP proof validation scenario for servers (SEP-1932), not in a
 * release yet: `auth/dpop-server-validation` of
 * https://github.com/modelcontextprotocol/conformance/pull/395
 * (src/scenarios/server/auth/dpop.ts and its proof and token helpers at commit
 * c51d0606d3da3d6a85b48aae1a26e9509204e6e9). The scenario's token issuer (an ES256 key, the
 * tokens typ at+jwt with cnf.jkt, no kid and no client_id) is one the server trusts, here by its
 * RFC 8414 metadata and key set on loopback; the server is the official MCP SDK behind our guard,
 * once as configured by default and once asking every proof for a nonce. A valid DPoP-bound token
 * and proof must be accepted; each defect below must get 401 with a `DPoP` challenge (a bound
 * token under the Bearer scheme: anything but 2xx). Every probe carries the latest nonce the
 * server gave, as the scenario's do, so a defect is judged for itself and never by the nonce.
 *
 * As the scenario reports the checks after the first not testable when the valid request is
 * refused (a server that refuses everything would pass them), they are skipped then.
 */
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { calculateJwkThumbprint, exportJWK, generateKeyPair, SignJWT, type JWK, type JWTHeaderParameters } from 'jose';
import { startProtectedMcpServer, type ProtectedMcpServer } from './protected-mcp-server.js';
import { startSigningAuthorizationServer, type SigningAuthorizationServer } from './signing-authorization-server.js';

interface ProofOptions {
  htm?: string;
  htu?: string;
  accessToken?: string;
  nonce?: string;
  iat?: number;
  typ?: string;
  omit?: ('jti' | 'htm' | 'htu' | 'iat' | 'jwk')[];
  athOverride?: string;
  embedPrivateKey?: boolean;
  tamperSignature?: boolean;
  unsigned?: boolean;
  symmetric?: boolean;
}

interface ProofKey {
  privateKey: CryptoKey;
  publicJwk: JWK;
  thumbprint: string;
}

async function proofKey(): Promise<ProofKey> {
  const { privateKey, publicKey } = await generateKeyPair('ES256', { extractable: true });
  const publicJwk = await exportJWK(publicKey);
  return { privateKey, publicJwk, thumbprint: await calculateJwkThumbprint(publicJwk, 'sha256') };
}

const base64urlJson = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

/** The scenario's proof builder, with its knobs for defective proofs. */
async function buildProof(key: ProofKey, options: ProofOptions): Promise<string> {
  const omit = new Set(options.omit ?? []);
  const payload: Record<string, unknown> = {};
  if (!omit.has('jti')) payload.jti = randomBytes(16).toString('base64url');
  if (!omit.has('htm')) payload.htm = options.htm;
  if (!omit.has('htu')) payload.htu = options.htu;
  if (!omit.has('iat')) payload.iat = options.iat ?? Math.floor(Date.now() / 1000);
  if (options.athOverride !== undefined) payload.ath = options.athOverride;
  else if (options.accessToken !== undefined) payload.ath = createHash('sha256').update(options.accessToken, 'ascii').digest('base64url');
  if (options.nonce !== undefined) payload.nonce = options.nonce;
  const alg = options.unsigned ? 'none' : options.symmetric ? 'HS256' : 'ES256';
  const header: Record<string, unknown> = { alg, typ: options.typ ?? 'dpop+jwt' };
  if (!omit.has('jwk')) header.jwk = options.embedPrivateKey ? await exportJWK(key.privateKey) : key.publicJwk;
  if (options.unsigned) return `${base64urlJson(header)}.${base64urlJson(payload)}.`;
  const signer = new SignJWT(payload).setProtectedHeader(header as JWTHeaderParameters);
  const jwt = options.symmetric ? await signer.sign(new Uint8Array(randomBytes(32))) : await signer.sign(key.privateKey);
  if (!options.tamperSignature) return jwt;
  const [head, body, signature] = jwt.split('.');
  return `${head}.${body}.${signature![0] === 'A' ? 'B' : 'A'}${signature!.slice(1)}`;
}

interface Answer {
  status: number;
  wwwAuthenticate: string;
  nonce: string | null;
}

const dpopChallenge = (answer: Answer) => /(?:^|,)\s*dpop(?:\s|$|,)/i.test(answer.wwwAuthenticate);
const properlyRejected = (answer: Answer) => answer.status === 401 && dpopChallenge(answer);
const accepted = (answer: Answer) => answer.status >= 200 && answer.status < 300;

for (const nonces of [false, true]) {
  describe(`upcoming conformance: auth/dpop-server-validation against our guard${nonces ? ' asking for nonces' : ''}`, { timeout: 300_000 }, () => {
    let issuer: SigningAuthorizationServer;
    let server: ProtectedMcpServer;
    let key: ProofKey;
    let token: string;
    /** The latest DPoP-Nonce the server sent (RFC 9449 §8.2: the newest wins). */
    let held: string | undefined;
    /** Whether the valid request was accepted: the checks after it are attributable only then. */
    let baselineAccepted = false;
    const NOT_ATTRIBUTABLE = 'the valid DPoP request was refused, so a refusal cannot be told from refusing everything';

    function mint(options: { audience?: string; jkt?: string } = {}): Promise<string> {
      const iat = Math.floor(Date.now() / 1000);
      return new SignJWT({ cnf: { jkt: options.jkt ?? key.thumbprint } })
        .setProtectedHeader({ alg: 'ES256', typ: 'at+jwt' })
        .setIssuer(issuer.issuer)
        .setAudience(options.audience ?? server.url)
        .setSubject('conformance-test-subject')
        .setIssuedAt(iat)
        .setExpirationTime(iat + 3600)
        .sign(issuer.privateKey);
    }

    /** A proof for the MCP request, with the held nonce unless `options.nonce` says otherwise. */
    const proof = (options: ProofOptions = {}, signer: ProofKey = key) =>
      buildProof(signer, { htm: 'POST', htu: server.url, accessToken: token, ...(held ? { nonce: held } : {}), ...options });

    async function send(authorization: string, dpop: string | string[] | undefined): Promise<Answer> {
      const headers = new Headers({ 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization });
      for (const value of dpop === undefined ? [] : [dpop].flat()) headers.append('dpop', value);
      const response = await fetch(server.url, {
        method: 'POST',
        headers,
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'initialize',
          params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'conformance-dpop-server-test', version: '1.0.0' } },
        }),
      });
      await response.body?.cancel();
      const answer = { status: response.status, wwwAuthenticate: response.headers.get('www-authenticate') ?? '', nonce: response.headers.get('dpop-nonce') };
      if (answer.nonce) held = answer.nonce;
      return answer;
    }

    /** A defect's verdict: 401 with a DPoP challenge, and not a nonce challenge (then the defect was not what was judged). */
    function assertRejected(answer: Answer, predicate = properlyRejected): void {
      assert.ok(!(answer.status === 401 && /use_dpop_nonce/i.test(answer.wwwAuthenticate)), `a nonce challenge, not the defect: ${answer.wwwAuthenticate}`);
      assert.ok(predicate(answer), `${answer.status} ${answer.wwwAuthenticate}`);
    }

    before(async () => {
      issuer = await startSigningAuthorizationServer({ alg: 'ES256', jwksPath: '/jwks' });
      server = await startProtectedMcpServer({ authorizationServers: [issuer.issuer], dpop: { nonces } });
      key = await proofKey();
      token = await mint();
    });

    after(async () => {
      await server?.close();
      await issuer?.close();
    });

    it('sep-1932-server-validate-proof: accepts a valid DPoP-bound token and proof (after one nonce challenge, where asked)', async () => {
      let answer = await send(`DPoP ${token}`, await proof());
      if (answer.status === 401 && answer.nonce && answer.wwwAuthenticate.includes('use_dpop_nonce')) answer = await send(`DPoP ${token}`, await proof());
      assert.ok(accepted(answer), `${answer.status} ${answer.wwwAuthenticate}`);
      baselineAccepted = true;
    });

    const defects: [string, () => Promise<[string, string | string[]]>, ((answer: Answer) => boolean)?][] = [
      ['tampered-signature', async () => [`DPoP ${token}`, await proof({ tamperSignature: true })]],
      ['missing-jti', async () => [`DPoP ${token}`, await proof({ omit: ['jti'] })]],
      ['wrong-typ', async () => [`DPoP ${token}`, await proof({ typ: 'jwt' })]],
      ['htu-mismatch', async () => [`DPoP ${token}`, await proof({ htu: 'https://wrong.example.com/mcp' })]],
      ['htm-mismatch', async () => [`DPoP ${token}`, await proof({ htm: 'GET' })]],
      ['private-key-in-jwk', async () => [`DPoP ${token}`, await proof({ embedPrivateKey: true })]],
      ['wrong-ath', async () => [`DPoP ${token}`, await proof({ athOverride: 'not-the-right-hash' })]],
      ['bearer-scheme', async () => [`Bearer ${token}`, await proof()], (answer) => !accepted(answer)],
      ['duplicate-dpop-header', async () => [`DPoP ${token}`, [await proof(), await proof()]]],
      ['missing-htm', async () => [`DPoP ${token}`, await proof({ omit: ['htm'] })]],
      ['missing-htu', async () => [`DPoP ${token}`, await proof({ omit: ['htu'] })]],
      ['missing-iat', async () => [`DPoP ${token}`, await proof({ omit: ['iat'] })]],
      ['missing-jwk', async () => [`DPoP ${token}`, await proof({ omit: ['jwk'] })]],
      ['ath-absent', async () => [`DPoP ${token}`, await buildProof(key, { htm: 'POST', htu: server.url, ...(held ? { nonce: held } : {}) })]],
      ['malformed-not-a-jwt', async () => [`DPoP ${token}`, 'this-is-not-a-jwt']],
    ];
    for (const [name, request, predicate] of defects) {
      it(`sep-1932-server-validate-proof: rejects ${name}`, async (t) => {
        if (!baselineAccepted) return t.skip(NOT_ATTRIBUTABLE);
        const [authorization, dpop] = await request();
        assertRejected(await send(authorization, dpop), predicate);
      });
    }

    it('sep-1932-server-validate-proof: rejects cnf-jkt-mismatch', async (t) => {
      if (!baselineAccepted) return t.skip(NOT_ATTRIBUTABLE);
      const foreign = await proofKey();
      const mismatched = await mint({ jkt: foreign.thumbprint });
      assertRejected(await send(`DPoP ${mismatched}`, await proof({ accessToken: mismatched })));
    });

    for (const [label, delta] of [
      ['stale', -303],
      ['future', 303],
    ] as const) {
      it(`sep-1932-server-iat-window: rejects a proof whose iat is ${label}, just outside ±5 minutes`, async (t) => {
        if (!baselineAccepted) return t.skip(NOT_ATTRIBUTABLE);
        assertRejected(await send(`DPoP ${token}`, await proof({ iat: Math.floor(Date.now() / 1000) + delta })));
      });
    }

    for (const [label, options] of [
      ['none', { unsigned: true }],
      ['symmetric', { symmetric: true }],
    ] as const) {
      it(`sep-1932-asymmetric-alg-only: rejects a proof signed with ${label}`, async (t) => {
        if (!baselineAccepted) return t.skip(NOT_ATTRIBUTABLE);
        assertRejected(await send(`DPoP ${token}`, await proof(options)));
      });
    }

    it('sep-1932-server-audience-validation: rejects a token for another server, even with a valid proof', async (t) => {
      if (!baselineAccepted) return t.skip(NOT_ATTRIBUTABLE);
      const foreign = await mint({ audience: 'https://not-this-server.example.com/mcp' });
      assertRejected(await send(`DPoP ${foreign}`, await proof({ accessToken: foreign })));
    });

    it('sep-1932-server-reject-401: a failed validation is 401 with a WWW-Authenticate: DPoP challenge', async (t) => {
      if (!baselineAccepted) return t.skip(NOT_ATTRIBUTABLE);
      assertRejected(await send(`DPoP ${token}`, await proof({ tamperSignature: true })));
    });

    it(`sep-1932-server-nonce: ${nonces ? 'use_dpop_nonce with DPoP-Nonce, the matching retry accepted, a wrong nonce refused' : 'no nonce asked for (the scenario skips the check)'}`, async (t) => {
      if (!baselineAccepted) return t.skip(NOT_ATTRIBUTABLE);
      const first = await send(`DPoP ${token}`, await buildProof(key, { htm: 'POST', htu: server.url, accessToken: token }));
      const requiresNonce = first.status === 401 && first.wwwAuthenticate.includes('use_dpop_nonce');
      assert.equal(requiresNonce, nonces, `${first.status} ${first.wwwAuthenticate}`);
      if (!nonces) return;
      assert.ok(first.nonce, 'use_dpop_nonce comes with a DPoP-Nonce header');
      const retry = await send(`DPoP ${token}`, await buildProof(key, { htm: 'POST', htu: server.url, accessToken: token, nonce: first.nonce }));
      const wrong = await send(
        `DPoP ${token}`,
        await buildProof(key, { htm: 'POST', htu: server.url, accessToken: token, nonce: 'definitely-not-the-server-nonce' }),
      );
      assert.ok(accepted(retry), `retry ${retry.status} ${retry.wwwAuthenticate}`);
      assert.ok(properlyRejected(wrong), `wrong nonce ${wrong.status} ${wrong.wwwAuthenticate}`);
    });
  });
}
