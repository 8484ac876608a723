import { createInterface } from 'node:readline/promises';
import { CLI_CLIENT_NAME } from '../cli-support.js';
import { ClientError, enterpriseAssertion, FileTokenStore, tokenFile, workloadTokenFile, type ContextClientOptions } from '../client/index.js';
import { usageError } from './errors.js';

/** How a program (no person, no browser) authenticates: its private key, or a JWT it presents. */
export const MACHINE_IDENTITY_OPTIONS = {
  'private-key': { type: 'string' },
  'key-id': { type: 'string' },
  'key-alg': { type: 'string' },
  'assertion-file': { type: 'string' },
  'id-token-file': { type: 'string' },
  idp: { type: 'string' },
  'idp-client-id': { type: 'string' },
  'idp-client-secret': { type: 'string' },
} as const;

/** Options of the client verbs (login, call, logout, status). */
export const CLIENT_OPTIONS = {
  'client-id': { type: 'string' },
  'client-secret': { type: 'string' },
  'grant-type': { type: 'string' },
  scope: { type: 'string' },
  'no-browser': { type: 'boolean' },
  dpop: { type: 'boolean' },
  quiet: { type: 'boolean' },
  credentials: { type: 'string' },
  ...MACHINE_IDENTITY_OPTIONS,
} as const;

/** The line of login's and call's help that describes --dpop. */
export const DPOP_HELP = `  --dpop  bind the tokens to a key pair made for this login (DPoP, RFC 9449), kept with them; later
          calls use it, and a server that asks for DPoP gets it without the flag`;

/** The lines of login's and call's help that describe MACHINE_IDENTITY_OPTIONS. */
export const MACHINE_IDENTITY_HELP = `  --grant-type authorization_code (default: a person, in the browser), or for a program (client --client-id),
    whose tokens are kept apart from the person's and renewed by its own grant, never by a sign-in:
    client_credentials  with --client-secret S, or --private-key FILE (PEM; signs a JWT per request)
                        [--key-id KID] [--key-alg ALG (default from the key)]
    jwt-bearer          presents a JWT (RFC 7523); the client authenticates by secret, private key or not at all:
      --assertion-file FILE  a workload identity token (e.g. Kubernetes), read again when it changes
      --id-token-file FILE --idp ISSUER  an ID token from the identity provider ISSUER, exchanged there
                        for an ID-JAG [--idp-client-id ID (default --client-id)] [--idp-client-secret S]`;

type MachineFlags = { [K in keyof typeof MACHINE_IDENTITY_OPTIONS]?: string };

interface ClientFlags extends MachineFlags {
  'client-id'?: string;
  'client-secret'?: string;
  'grant-type'?: string;
  scope?: string;
  'no-browser'?: boolean;
  dpop?: boolean;
  quiet?: boolean;
  json?: boolean;
  credentials?: string;
}

const GRANT_TYPES = ['authorization_code', 'client_credentials', 'jwt-bearer'] as const;

/** Asks the person for a client they registered themselves, when the server offers no registration. */
async function askForClient(issuer: string): Promise<{ clientId: string; clientSecret?: string } | undefined> {
  if (!process.stdin.isTTY) return undefined;
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  try {
    process.stderr.write(`${issuer} does not let clients register themselves. Register one there, then:\n`);
    const clientId = (await rl.question('Client id: ')).trim();
    if (!clientId) return undefined;
    const clientSecret = (await rl.question('Client secret (empty for a public client): ')).trim();
    return clientSecret ? { clientId, clientSecret } : { clientId };
  } finally {
    rl.close();
  }
}

/** Refuses a flag given without the one it belongs to. */
function needs(flags: ClientFlags, flag: keyof ClientFlags, present: boolean, what: string): void {
  if (flags[flag] !== undefined && !present) throw usageError(`--${flag} is for ${what}`);
}

/** What logout gives a jwt-bearer program in place of its assertion: revoking presents none. */
const NO_ASSERTION: NonNullable<ContextClientOptions['assertion']> = () => {
  throw new ClientError('assertion_unavailable', 'logout presents no assertion');
};

/**
 * The grant and credentials the flags describe, each missing or conflicting flag a usage error.
 * `tokens` false (logout): the identity and how its client authenticates, without the assertion.
 */
async function machineIdentity(flags: ClientFlags, clientSecret: string | undefined, tokens: boolean): Promise<Partial<ContextClientOptions>> {
  const grantType = flags['grant-type'];
  if (grantType !== undefined && !(GRANT_TYPES as readonly string[]).includes(grantType)) {
    throw usageError(`--grant-type is one of ${GRANT_TYPES.join(', ')}, not ${grantType}`);
  }
  const program = grantType === 'client_credentials' || grantType === 'jwt-bearer';
  const jwtBearer = grantType === 'jwt-bearer';
  needs(flags, 'private-key', program, '--grant-type client_credentials or jwt-bearer');
  needs(flags, 'key-id', flags['private-key'] !== undefined, '--private-key');
  needs(flags, 'key-alg', flags['private-key'] !== undefined, '--private-key');
  for (const flag of ['assertion-file', 'id-token-file', 'idp'] as const) needs(flags, flag, jwtBearer, '--grant-type jwt-bearer');
  needs(flags, 'idp-client-id', flags.idp !== undefined, '--idp');
  needs(flags, 'idp-client-secret', flags.idp !== undefined, '--idp');
  if (!program) return grantType === 'authorization_code' ? { grantType } : {};

  if (!flags['client-id']) throw usageError(`--grant-type ${grantType} needs --client-id`);
  if (flags['private-key'] !== undefined && clientSecret)
    throw usageError('give either --client-secret (or CONTEXT_AUTH_CLIENT_SECRET) or --private-key, not both');
  if (grantType === 'client_credentials' && flags['private-key'] === undefined && !clientSecret) {
    throw usageError('--grant-type client_credentials needs --client-secret (or CONTEXT_AUTH_CLIENT_SECRET) or --private-key');
  }
  const key =
    flags['private-key'] === undefined
      ? {}
      : {
          privateKey: await tokenFile(flags['private-key'], 'private key file')(),
          ...(flags['key-id'] ? { keyId: flags['key-id'] } : {}),
          ...(flags['key-alg'] ? { privateKeyAlg: flags['key-alg'] } : {}),
        };
  if (!jwtBearer) return { grantType, ...key };
  return { grantType, ...key, assertion: tokens ? assertionOf(flags) : NO_ASSERTION };
}

/** The jwt-bearer grant's assertion: the workload token file, or an ID-JAG for the ID token file. */
function assertionOf(flags: ClientFlags): ContextClientOptions['assertion'] {
  const assertionFile = flags['assertion-file'];
  const idTokenFile = flags['id-token-file'];
  if (assertionFile !== undefined && (idTokenFile !== undefined || flags.idp !== undefined)) {
    throw usageError('give either --assertion-file or --id-token-file with --idp, not both');
  }
  if (assertionFile !== undefined) return workloadTokenFile(assertionFile);
  if (idTokenFile === undefined) throw usageError('--grant-type jwt-bearer needs --assertion-file FILE, or --id-token-file FILE with --idp ISSUER');
  const idp = flags.idp;
  if (idp === undefined) throw usageError('--id-token-file needs --idp ISSUER, the identity provider that issued the ID token');
  if (!URL.canParse(idp)) throw usageError(`--idp is the identity provider's issuer URL, not ${idp}`);
  const idpClientSecret = flags['idp-client-secret'] ?? process.env.CONTEXT_AUTH_IDP_CLIENT_SECRET;
  return enterpriseAssertion({
    issuer: idp,
    clientId: flags['idp-client-id'] ?? flags['client-id']!,
    ...(idpClientSecret ? { clientSecret: idpClientSecret } : {}),
    idToken: tokenFile(idTokenFile, 'ID token file'),
  });
}

/**
 * The ContextClient options a client verb's flags describe; progress goes to stderr unless --quiet
 * or --json. The flags that name an identity (--grant-type, --client-id) select it: without them,
 * the person's. `tokens` false (logout): nothing is asked for, so no assertion is needed.
 */
export async function clientOptions(serverUrl: string, flags: ClientFlags, tokens = true): Promise<ContextClientOptions> {
  const quiet = Boolean(flags.quiet || flags.json);
  const clientSecret = flags['client-secret'] ?? process.env.CONTEXT_AUTH_CLIENT_SECRET;
  return {
    serverUrl,
    store: new FileTokenStore(flags.credentials),
    ...(flags['client-id'] ? { clientId: flags['client-id'] } : {}),
    ...(clientSecret ? { clientSecret } : {}),
    ...(await machineIdentity(flags, clientSecret, tokens)),
    ...(flags.scope ? { scope: flags.scope } : {}),
    ...(flags.dpop ? { dpop: true } : {}),
    noBrowser: Boolean(flags['no-browser']),
    askForClient,
    clientName: CLI_CLIENT_NAME,
    // The URL to open (on a line of its own) is printed even with --quiet: without it nobody could
    // finish the login. Other progress lines mention URLs too, so it is the line break that tells.
    onProgress: (message) => {
      if (!quiet || message.includes('\nhttp')) process.stderr.write(`${message}\n`);
    },
  };
}
