import { parseArgs } from 'node:util';
import { ClientError, ContextClient, type DeviceCodeInfo } from '../client/index.js';
import { COMMON_OPTIONS, parsed, print } from './args.js';
import { CLIENT_OPTIONS, clientOptions, DPOP_HELP, MACHINE_IDENTITY_HELP } from './client-options.js';
import { CliError, usageError } from './errors.js';

export const LOGIN_HELP = `context-auth login URL [--client-id ID] [--client-secret S] [--scope "a b"] [--no-browser]
                      [--device] [--grant-type TYPE] [--dpop] [--credentials FILE] [--quiet] [--json]
    authorize this machine for a context server (discovery, registration, browser, tokens)
  --device  sign in on another device (RFC 8628), for a machine without a browser (SSH, a container):
            prints a page to open and a code to enter there, then waits for it (Ctrl-C stops)
${DPOP_HELP}
${MACHINE_IDENTITY_HELP}`;

function minutes(expiresAt: number | undefined): string {
  if (expiresAt === undefined) return 'no stated expiry';
  return `expires in ${Math.max(0, Math.round((expiresAt - Date.now() / 1000) / 60))} min`;
}

export const LOGIN_OPTIONS = { ...COMMON_OPTIONS, ...CLIENT_OPTIONS, device: { type: 'boolean' } } as const;

/**
 * What the person needs to sign in elsewhere, on stderr, printed even with --quiet or --json:
 * without it nobody could finish.
 */
function printDeviceCode(code: DeviceCodeInfo): void {
  const lines = [
    'To sign in, open this page on any device with a browser:',
    `  ${code.verificationUri}`,
    `and enter the code ${code.userCode}`,
    ...(code.verificationUriComplete ? ['or open this page, with the code already filled in:', `  ${code.verificationUriComplete}`] : []),
    `Waiting for you to sign in (the code expires in ${Math.max(1, Math.round(code.expiresIn / 60))} min; Ctrl-C to stop)…`,
  ];
  process.stderr.write(`${lines.join('\n')}\n`);
}

/** Runs `action` with a signal that Ctrl-C (or SIGTERM) aborts, so a waiting sign-in stops cleanly. */
async function stoppable<T>(action: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const controller = new AbortController();
  const stop = () => controller.abort();
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  try {
    return await action(controller.signal);
  } catch (error) {
    if (error instanceof ClientError && error.code === 'authorization_aborted') throw new CliError('stopped; not logged in', 130, { cause: error });
    throw error;
  } finally {
    process.off('SIGINT', stop);
    process.off('SIGTERM', stop);
  }
}

export async function loginCommand(args: string[]): Promise<void> {
  const { values, positionals } = parsed(() => parseArgs({ args, options: LOGIN_OPTIONS, allowPositionals: true, strict: true }));
  if (values.help) return print(LOGIN_HELP);
  const [url, ...rest] = positionals;
  if (!url) throw usageError('login needs the context server URL');
  if (rest.length > 0) throw usageError(`unexpected argument ${rest[0]}`);
  if (values.device && values['grant-type'] !== undefined && values['grant-type'] !== 'authorization_code') {
    throw usageError(`--device is a person's sign-in; it does not go with --grant-type ${values['grant-type']}`);
  }
  const options = await clientOptions(url, values);
  const client = new ContextClient(values.device ? { ...options, grantType: 'device_code', onDeviceCode: printDeviceCode } : options);
  const grant = values.device
    ? await stoppable((signal) => client.login({ ...(values.scope ? { scope: values.scope } : {}), signal }))
    : await client.login(values.scope ? { scope: values.scope } : {});
  if (values.json) {
    return print({
      server: grant.serverUrl,
      issuer: grant.issuer,
      revision: grant.revision,
      client_id: grant.clientId,
      token_type: grant.tokenType ?? 'Bearer',
      scope: grant.scope ?? null,
      expires_at: grant.expiresAt ?? null,
      refresh_token: Boolean(grant.refreshToken),
    });
  }
  print(`Logged in to ${grant.serverUrl}
  authorization server  ${grant.issuer} (revision ${grant.revision})
  client                ${grant.clientId}
  scopes                ${grant.scope ?? '(none stated)'}
  access token          ${grant.tokenType === 'DPoP' ? 'DPoP-bound, ' : ''}${minutes(grant.expiresAt)}${grant.refreshToken ? ', refreshed automatically' : ''}`);
}
