import { createInterface } from 'node:readline/promises';
import { CLI_CLIENT_NAME, FileTokenStore, type ContextClientOptions } from '../client/index.js';

/** Options of the client verbs (login, call, logout, status). */
export const CLIENT_OPTIONS = {
  'client-id': { type: 'string' },
  'client-secret': { type: 'string' },
  'grant-type': { type: 'string' },
  scope: { type: 'string' },
  'no-browser': { type: 'boolean' },
  quiet: { type: 'boolean' },
  credentials: { type: 'string' },
} as const;

interface ClientFlags {
  'client-id'?: string;
  'client-secret'?: string;
  'grant-type'?: string;
  scope?: string;
  'no-browser'?: boolean;
  quiet?: boolean;
  json?: boolean;
  credentials?: string;
}

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

/** The ContextClient options a client verb's flags describe; progress goes to stderr unless --quiet or --json. */
export function clientOptions(serverUrl: string, flags: ClientFlags): ContextClientOptions {
  const quiet = Boolean(flags.quiet || flags.json);
  const clientSecret = flags['client-secret'] ?? process.env.CONTEXT_AUTH_CLIENT_SECRET;
  return {
    serverUrl,
    store: new FileTokenStore(flags.credentials),
    ...(flags['client-id'] ? { clientId: flags['client-id'] } : {}),
    ...(clientSecret ? { clientSecret } : {}),
    ...(flags['grant-type'] === 'client_credentials' ? { grantType: 'client_credentials' as const } : {}),
    ...(flags.scope ? { scope: flags.scope } : {}),
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
