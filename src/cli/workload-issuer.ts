/**
 * `context-auth workload-issuer`: a stand-in for a workload platform (a Kubernetes API server, a
 * SPIFFE issuer) on this machine, to try the jwt-bearer grant without one. It publishes what a
 * platform publishes — OpenID Connect Discovery and its key set — on 127.0.0.1 only, and writes a
 * token signed with a key that lives in its memory alone. `serve` takes it only with
 * --allow-insecure-idp (http on loopback).
 */
import { createPrivateKey } from 'node:crypto';
import { chmodSync, renameSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';
import { parseArgs } from 'node:util';
import { calculateJwkThumbprint, SignJWT, type JWK } from 'jose';
import { generateJwkPair } from '../core/index.js';
import { COMMON_OPTIONS, isoTime, parsed, print } from './args.js';
import { CliError, usageError } from './errors.js';
import { onStopSignal } from './stop-signal.js';

export const WORKLOAD_ISSUER_HELP = `context-auth workload-issuer --subject SUB --token-file FILE [--port N] [--audience AUD] [--ttl S]
    a stand-in for a workload platform (Kubernetes, SPIFFE) on this machine, to try the jwt-bearer
    grant with serve --workload-config FILE --allow-insecure-idp; not for production. It serves
    OpenID discovery and its public key at http://127.0.0.1:PORT (--port, default 8090), writes a
    token for the workload SUB (its sub) to the --token-file FILE (readable by you alone) for
    call --assertion-file, and runs until stopped (Ctrl-C). --audience: the token's aud (default
    http://127.0.0.1:8080, serve's default issuer); --ttl S: its lifetime (60 to 86400, default
    3600). The token has no jti, as many platforms' tokens, so serve takes it again while it is
    valid. The signing key lives in memory only, and is gone when this stops`;

export const WORKLOAD_ISSUER_OPTIONS = {
  ...COMMON_OPTIONS,
  subject: { type: 'string' },
  'token-file': { type: 'string' },
  port: { type: 'string' },
  audience: { type: 'string' },
  ttl: { type: 'string' },
} as const;

const DEFAULT_PORT = 8090;
const DEFAULT_AUDIENCE = 'http://127.0.0.1:8080';

function whole(name: string, value: string | undefined, fallback: number, min: number, max: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < min || n > max) throw usageError(`--${name} must be a whole number from ${min} to ${max}`);
  return n;
}

/** Replaces `file` at once (a reader never sees half a token), readable by its owner alone. */
function writeToken(file: string, token: string): void {
  const temporary = join(dirname(file), `.${Date.now()}-${process.pid}.token`);
  try {
    writeFileSync(temporary, `${token}\n`, { mode: 0o600, flag: 'wx' });
    chmodSync(temporary, 0o600);
    renameSync(temporary, file);
  } catch (error) {
    throw new CliError(`Cannot write --token-file ${file}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}.`);
  }
}

export async function workloadIssuerCommand(args: string[]): Promise<void> {
  const { values, positionals } = parsed(() => parseArgs({ args, options: WORKLOAD_ISSUER_OPTIONS, allowPositionals: true, strict: true }));
  if (values.help) return print(WORKLOAD_ISSUER_HELP);
  if (positionals.length > 0) throw usageError(`unexpected argument ${positionals[0]}`);
  const { subject, 'token-file': tokenFile } = values;
  if (!subject || !tokenFile) throw usageError('workload-issuer needs --subject SUB and --token-file FILE');
  const port = whole('port', values.port, DEFAULT_PORT, 0, 65535);
  const ttl = whole('ttl', values.ttl, 3600, 60, 86400);
  const audience = values.audience ?? DEFAULT_AUDIENCE;

  const pair = generateJwkPair({ type: 'ec', namedCurve: 'P-256' });
  const privateKey = createPrivateKey({ key: pair.privateJwk, format: 'jwk' });
  const publicJwk = pair.publicJwk as JWK;
  const kid = await calculateJwkThumbprint(publicJwk);
  const jwks = JSON.stringify({ keys: [{ ...publicJwk, kid, alg: 'ES256', use: 'sig' }] });

  let issuer = '';
  // What a platform publishes, and nothing else: discovery and the keys it names.
  const server = createServer((request, response) => {
    const path = new URL(request.url ?? '/', 'http://127.0.0.1').pathname;
    const body =
      request.method !== 'GET'
        ? undefined
        : path === '/.well-known/openid-configuration'
          ? JSON.stringify({ issuer, jwks_uri: `${issuer}/jwks` })
          : path === '/jwks'
            ? jwks
            : undefined;
    response.writeHead(body ? 200 : 404, { 'content-type': 'application/json', 'cache-control': 'no-store' });
    response.end(body ?? '{"error":"not_found"}');
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) =>
      reject(
        new CliError(
          error.code === 'EADDRINUSE'
            ? `Port ${port} on 127.0.0.1 is in use; choose another with --port.`
            : `Cannot listen on 127.0.0.1:${port}: ${error.message}`,
        ),
      ),
    );
    server.listen(port, '127.0.0.1', () => resolve());
  });
  issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  const now = Math.floor(Date.now() / 1000);
  const token = await new SignJWT({ sub: subject, aud: audience })
    .setProtectedHeader({ alg: 'ES256', kid, typ: 'JWT' })
    .setIssuer(issuer)
    .setIssuedAt(now)
    .setExpirationTime(now + ttl)
    .sign(privateKey);
  try {
    writeToken(tokenFile, token);
  } catch (error) {
    server.close();
    throw error;
  }

  const stopped = new Promise<void>((resolve) => onStopSignal(() => server.close(() => resolve())));
  if (values.json) print({ issuer, token_file: tokenFile, subject, audience, expires_at: now + ttl });
  else {
    print(`context-auth workload-issuer (a stand-in workload platform for trying serve --workload-config; not for production)
  issuer        ${issuer}   (a workload rule's "issuer")
  discovery     ${issuer}/.well-known/openid-configuration
  token         ${tokenFile}   (sub ${subject}, aud ${audience}, until ${isoTime(now + ttl)})
Listening on ${issuer} (Ctrl-C to stop)`);
  }
  await stopped;
  if (!values.json) print('Stopped.');
}
