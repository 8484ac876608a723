import { parseArgs } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { z } from 'zod';
import { checkContextServerUrl, ClientError, ContextClient } from '../client/index.js';
import { describeNetworkFailure, failureReason } from '../cli-support.js';
import { findBearerChallenge, findChallenge } from '../core/index.js';
import { COMMON_OPTIONS, parsed, print } from './args.js';
import { CLIENT_OPTIONS, clientOptions, DPOP_HELP, MACHINE_IDENTITY_HELP } from './client-options.js';
import { CliError, usageError } from './errors.js';
import { NO_SDK_TIMEOUT, RequestClock } from './request-clock.js';

/** How long the server has to answer one request; time spent signing in does not count. */
const REQUEST_TIMEOUT_MS = 60_000;

export const CALL_HELP = `context-auth call URL METHOD [PARAMS_JSON] [--client-id ID] [--client-secret S] [--scope "a b"]
                      [--no-browser] [--grant-type TYPE] [--dpop] [--credentials FILE] [--quiet] [--json]
    one MCP JSON-RPC call (initialize handled), logging in and refreshing as needed, e.g.
    context-auth call http://127.0.0.1:8080/mcp tools/call '{"name":"whoami"}'
  --no-browser  print the sign-in URL instead of opening a browser; with no terminal either, nobody
                could sign in, so a call that needs a person fails at once (login_required)
${DPOP_HELP}
${MACHINE_IDENTITY_HELP}`;

function parseParams(text: string | undefined): Record<string, unknown> | undefined {
  if (text === undefined) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw usageError('PARAMS_JSON is not valid JSON');
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw usageError('PARAMS_JSON must be a JSON object');
  return value as Record<string, unknown>;
}

export const CALL_OPTIONS = { ...COMMON_OPTIONS, ...CLIENT_OPTIONS } as const;

export async function callCommand(args: string[]): Promise<void> {
  const { values, positionals } = parsed(() => parseArgs({ args, options: CALL_OPTIONS, allowPositionals: true, strict: true }));
  if (values.help) return print(CALL_HELP);
  const [url, method, paramsText, ...rest] = positionals;
  if (!url || !method) throw usageError('call needs the server URL and a method');
  if (rest.length > 0) throw usageError(`unexpected argument ${rest[0]}`);
  const params = parseParams(paramsText);

  const clock = new RequestClock(REQUEST_TIMEOUT_MS);
  // With no browser to open and no terminal, nobody could sign in: a call that needs a person fails at once.
  const interactive = !(values['no-browser'] && !process.stdin.isTTY);
  const auth = new ContextClient({ ...(await clientOptions(url, values)), interactive, onSignIn: clock.onSignIn });
  const client = new Client({ name: 'context-auth', version: '0.1.0' }, { capabilities: {} });
  const refusals = lastRefusal(auth.fetch);
  const transport = new StreamableHTTPClientTransport(new URL(url), { fetch: refusals.fetch });
  try {
    await clock.run('initialize failed', (signal) => client.connect(transport, { signal, timeout: NO_SDK_TIMEOUT }));
    if (method === 'initialize') {
      return print({ serverInfo: client.getServerVersion(), capabilities: client.getServerCapabilities(), instructions: client.getInstructions() });
    }
    const result = await clock.run(`${method} failed`, (signal) =>
      client.request({ method, ...(params ? { params } : {}) }, z.looseObject({}), { signal, timeout: NO_SDK_TIMEOUT }),
    );
    print(result);
    if ((result as { isError?: unknown }).isError === true) process.exitCode = 1;
  } catch (error) {
    if (error instanceof CliError) throw error;
    throw await callFailure(error, url, method, auth, refusals.said());
  } finally {
    await transport.close().catch(() => {});
  }
}

/**
 * `fetch` that keeps what the context server said in its last refusal (401, 403): its challenge's
 * OAuth error and description, which the MCP SDK does not report.
 */
function lastRefusal(fetchImpl: (input: string | URL | Request, init?: RequestInit) => Promise<Response>): {
  fetch: typeof fetch;
  said: () => string | undefined;
} {
  let said: string | undefined;
  const remembering = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const response = await fetchImpl(input, init);
    const header = response.headers.get('www-authenticate');
    const challenge = response.status === 401 || response.status === 403 ? (findBearerChallenge(header) ?? findChallenge(header, 'dpop')) : undefined;
    said = challenge?.error
      ? `${challenge.error}${challenge.error_description ? ` (${challenge.error_description})` : ''}${response.status === 403 && challenge.scope ? `; it needs the scope ${challenge.scope}` : ''}`
      : undefined;
    return response;
  };
  return { fetch: remembering as typeof fetch, said: () => said };
}

/**
 * What a failed call reports. A client error keeps its code: one that needs a person says how to
 * sign in. A refusal by the context server is given as it said it. Another answer the MCP SDK
 * could not take (an HTTP error, not JSON-RPC) is checked for a wrong URL: nothing there, an
 * authorization server's, or not a context server.
 */
async function callFailure(error: unknown, url: string, method: string, auth: ContextClient, refused: string | undefined): Promise<Error> {
  if (error instanceof ClientError) {
    const signIn = error.code === 'login_required' ? `: with --no-browser and no terminal nobody can sign in here; run \`context-auth login ${url}\`` : '';
    return new ClientError(error.code, `${method} failed: ${error.message}${auth.identity.kind === 'person' ? signIn : ''}`, { cause: error });
  }
  if (error instanceof StreamableHTTPError && (error.code === 401 || error.code === 403) && refused) {
    return new CliError(`${method} failed: ${url} refused the request (HTTP ${error.code}): ${refused}`, 1, { cause: error });
  }
  if (error instanceof StreamableHTTPError && describeNetworkFailure(error) === undefined) {
    const wrong = await checkContextServerUrl(url).catch(() => undefined);
    if (wrong) return wrong;
  }
  return new CliError(`${method} failed: ${failureReason(error, url)}`, 1, { cause: error });
}
