/**
 * `context-auth client-key`: a program's own key pair, for a client that proves itself with a
 * signed assertion (private_key_jwt) instead of a secret. Not the server's signing keys (`keys`):
 * nothing here touches a store. The private key is for the program (call and login
 * --private-key), the public key set for the operator (clients add --jwks).
 */
import { createPrivateKey } from 'node:crypto';
import { unlinkSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { calculateJwkThumbprint, type JWK } from 'jose';
import { generateJwkPair } from '../core/index.js';
import { COMMON_OPTIONS, parsed, print, shellQuoted } from './args.js';
import { CliError, usageError } from './errors.js';

export const CLIENT_KEY_HELP = `context-auth client-key --private-key FILE --jwks FILE [--alg ES256|RS256] [--kid KID]
    make a key pair for a program that signs in with its own key (private_key_jwt) instead of a
    secret: the private key as PEM in the --private-key FILE (readable by you alone), for call and
    login --private-key; its public key as a JSON Web Key Set in the --jwks FILE, for clients add
    --jwks. ES256 unless --alg RS256; the key id is the key's thumbprint (RFC 7638) unless --kid.
    Neither file may exist already`;

export const CLIENT_KEY_OPTIONS = {
  ...COMMON_OPTIONS,
  'private-key': { type: 'string' },
  jwks: { type: 'string' },
  alg: { type: 'string' },
  kid: { type: 'string' },
} as const;

const ALGORITHMS = ['ES256', 'RS256'] as const;

/** Writes a new file (never over one), `mode` for its owner's eyes or everyone's. */
function writeNew(file: string, text: string, mode: number, flag: string): void {
  try {
    writeFileSync(file, text, { mode, flag: 'wx' });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    // A key pair replaced by mistake locks out the client registered with it.
    if (code === 'EEXIST') throw new CliError(`${flag} ${file} exists already: client-key writes new files only, so that no key is replaced by mistake.`);
    throw new CliError(`Cannot write ${flag} ${file}: ${code ?? (error as Error).message}.`);
  }
}

export async function clientKeyCommand(args: string[]): Promise<void> {
  const { values, positionals } = parsed(() => parseArgs({ args, options: CLIENT_KEY_OPTIONS, allowPositionals: true, strict: true }));
  if (values.help) return print(CLIENT_KEY_HELP);
  if (positionals.length > 0) throw usageError(`unexpected argument ${positionals[0]}`);
  const privateKeyFile = values['private-key'];
  const jwksFile = values.jwks;
  if (!privateKeyFile || !jwksFile) throw usageError('client-key needs --private-key FILE and --jwks FILE, the two files it writes');
  if (resolve(privateKeyFile) === resolve(jwksFile)) throw usageError('--private-key and --jwks must be two files: the private key is never published');
  const alg = values.alg ?? 'ES256';
  if (!(ALGORITHMS as readonly string[]).includes(alg)) throw usageError(`--alg is ${ALGORITHMS.join(' or ')}, not ${alg}`);
  if (values.kid !== undefined && !/^[\x21-\x7e]{1,128}$/.test(values.kid)) throw usageError('--kid is 1 to 128 printable characters without spaces');

  const pair = generateJwkPair(alg === 'ES256' ? { type: 'ec', namedCurve: 'P-256' } : { type: 'rsa', modulusLength: 2048 });
  const privateKey = createPrivateKey({ key: pair.privateJwk, format: 'jwk' });
  const publicJwk = pair.publicJwk as JWK;
  const kid = values.kid ?? (await calculateJwkThumbprint(publicJwk));
  const jwks = { keys: [{ ...publicJwk, kid, alg, use: 'sig' }] };

  writeNew(privateKeyFile, privateKey.export({ format: 'pem', type: 'pkcs8' }).toString(), 0o600, '--private-key');
  try {
    writeNew(jwksFile, `${JSON.stringify(jwks, null, 2)}\n`, 0o644, '--jwks');
  } catch (error) {
    // Half a pair is of no use: the private key goes too.
    unlinkSync(privateKeyFile);
    throw error;
  }
  if (values.json) return print({ private_key: privateKeyFile, jwks: jwksFile, alg, kid });
  print(`Wrote the private key to ${privateKeyFile} (${alg}, readable by you alone) and its public key to ${jwksFile} (kid ${kid}).
Register the program with:  context-auth clients add --name NAME --grant-type client_credentials --jwks ${shellQuoted(jwksFile)}
then call as it:            context-auth call URL METHOD --grant-type client_credentials --client-id CLIENT_ID --private-key ${shellQuoted(privateKeyFile)}`);
}
