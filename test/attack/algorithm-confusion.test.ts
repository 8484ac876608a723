/**
 * JWT algorithm confusion against the co-hosted /mcp (RFC 8725 §2.1, §3.1, §3.11; RFC 9068 §4,
 * the JWT side of RFC 9700 §4.6/§4.10). A token is accepted only when signed by a key the
 * issuer publishes, with that key's algorithm, and typed `at+jwt`: `alg: none`, HMAC keyed with
 * our public key, a key the token carries itself, an attacker's key under our `kid` or its own
 * `kid`, and an ID-token-style `typ` are all refused, while the same claims signed properly pass.
 */
import { createHmac, createPublicKey, generateKeyPairSync } from 'node:crypto';
import { it } from 'node:test';
import { exportJWK, SignJWT, type JWK } from 'jose';
import { obtainTokens, REVISIONS, type Harness } from '../helpers/harness.js';
import { jwtClaims } from '../helpers/harness.js';
import { expectRefused, expectServed, onEveryStore, whoami } from './setup.js';

const b64 = (value: unknown) => Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)).toString('base64url');

/** A token hand-assembled from a header, claims and a signature function (for what jose refuses to make). */
function assemble(header: Record<string, unknown>, claims: Record<string, unknown>, sign: (input: string) => string): string {
  const input = `${b64(header)}.${b64(claims)}`;
  return `${input}.${sign(input)}`;
}

/** The claims of a real token of ours, with `sub` changed: what a forger wants accepted. */
async function forgery(h: Harness): Promise<{ claims: Record<string, unknown>; kid: string; publicJwk: JWK }> {
  const { tokens } = await obtainTokens(h, REVISIONS[1]);
  const { kid } = await h.server.keys.current();
  const publicJwk = (await h.server.keys.publicJwks()).keys.find((key) => key.kid === kid)!;
  return { claims: { ...jwtClaims(tokens.access_token), sub: 'user-admin', scope: 'mcp:tools mcp:admin' }, kid, publicJwk };
}

onEveryStore('algorithm confusion (JWT)', (env) => {
  it('the forged claims pass when signed with our key, as at+jwt (the control)', async () => {
    const h = await env.target();
    const { claims } = await forgery(h);
    const { kid, alg, key } = await h.server.keys.current();
    const token = await new SignJWT(claims).setProtectedHeader({ alg, kid, typ: 'at+jwt' }).sign(key);
    await expectServed(await whoami(h, `Bearer ${token}`));
  });

  it('alg: none is refused', async () => {
    const h = await env.target();
    const { claims, kid } = await forgery(h);
    for (const alg of ['none', 'None', 'NONE']) {
      await expectRefused(await whoami(h, `Bearer ${assemble({ alg, typ: 'at+jwt', kid }, claims, () => '')}`), 401, 'invalid_token');
    }
  });

  it('HS256 keyed with our public key (PEM, JWK JSON, raw point) is refused', async () => {
    const h = await env.target();
    const { claims, kid, publicJwk } = await forgery(h);
    const pem = createPublicKey({ key: publicJwk as import('node:crypto').JsonWebKey, format: 'jwk' })
      .export({ type: 'spki', format: 'pem' })
      .toString();
    const secrets = [pem, JSON.stringify(publicJwk), Buffer.concat([Buffer.from(publicJwk.x!, 'base64url'), Buffer.from(publicJwk.y!, 'base64url')])];
    for (const secret of secrets) {
      for (const alg of ['HS256', 'HS384', 'HS512']) {
        const hash = `sha${alg.slice(2)}`;
        const token = assemble({ alg, typ: 'at+jwt', kid }, claims, (input) => createHmac(hash, secret).update(input).digest('base64url'));
        await expectRefused(await whoami(h, `Bearer ${token}`), 401, 'invalid_token');
      }
    }
  });

  it("an attacker's key, under our kid, under its own kid, or embedded in the header (jwk), is refused", async () => {
    const h = await env.target();
    const { claims, kid } = await forgery(h);
    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const attackerJwk = { ...(await exportJWK(publicKey)), kid: 'attacker', alg: 'ES256' };
    for (const header of [
      { kid },
      { kid: 'attacker' },
      { kid: 'attacker', jwk: attackerJwk },
      { jwk: attackerJwk },
      { kid, jku: 'https://evil.example/jwks' },
    ]) {
      const token = await new SignJWT(claims).setProtectedHeader({ alg: 'ES256', typ: 'at+jwt', ...header }).sign(privateKey);
      await expectRefused(await whoami(h, `Bearer ${token}`), 401, 'invalid_token');
    }
  });

  it('our key with another typ (an ID token, a plain JWT, none) is refused', async () => {
    const h = await env.target();
    const { claims } = await forgery(h);
    const { kid, alg, key } = await h.server.keys.current();
    for (const typ of ['JWT', 'id_token+jwt', 'application/jwt', undefined]) {
      const header = typ === undefined ? { alg, kid } : { alg, kid, typ };
      const token = await new SignJWT(claims).setProtectedHeader(header).sign(key);
      await expectRefused(await whoami(h, `Bearer ${token}`), 401, 'invalid_token');
    }
  });

  it('our signature over other claims (a swapped payload) is refused', async () => {
    const h = await env.target();
    const { tokens } = await obtainTokens(h, REVISIONS[1]);
    const [header, , signature] = String(tokens.access_token).split('.');
    const claims = { ...jwtClaims(tokens.access_token), sub: 'user-admin' };
    await expectRefused(await whoami(h, `Bearer ${header}.${b64(claims)}.${signature}`), 401, 'invalid_token');
  });
});
