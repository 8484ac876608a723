/** The CLI's verbs; main.ts (the bin) runs them, `serve` on a thread with a sized heap (serve-thread.ts). */
import { createRequire } from 'node:module';
import { print } from './args.js';
import { CLIENTS_HELP, CLIENTS_OPTIONS, clientsCommand } from './clients.js';
import { CONSENTS_HELP, CONSENTS_OPTIONS, consentsCommand } from './consents.js';
import { CliError, describeFailure, didYouMean, usageError } from './errors.js';
import { CALL_HELP, CALL_OPTIONS, callCommand } from './call.js';
import { CLIENT_KEY_HELP, CLIENT_KEY_OPTIONS, clientKeyCommand } from './client-key.js';
import { DOCTOR_HELP, DOCTOR_OPTIONS, doctorCommand } from './doctor.js';
import { KEYS_HELP, KEYS_OPTIONS, keysCommand } from './keys.js';
import { LOGIN_HELP, LOGIN_OPTIONS, loginCommand } from './login.js';
import { LOGOUT_HELP, LOGOUT_OPTIONS, logoutCommand } from './logout.js';
import { STATUS_HELP, STATUS_OPTIONS, statusCommand } from './status.js';
import { SERVE_HELP, SERVE_OPTIONS, serveCommand } from './serve.js';
import { USERS_HELP, USERS_OPTIONS, usersCommand } from './users.js';
import { WORKLOAD_ISSUER_HELP, WORKLOAD_ISSUER_OPTIONS, workloadIssuerCommand } from './workload-issuer.js';

export interface Verb {
  run(args: string[]): Promise<void>;
  /** What `context-auth VERB --help` prints. */
  help: string;
  /** The options its parser takes: an unknown one is answered with the nearest of these. */
  options: Readonly<Record<string, unknown>>;
}

export const VERBS: Readonly<Record<string, Verb>> = {
  serve: { run: serveCommand, help: SERVE_HELP, options: SERVE_OPTIONS },
  users: { run: usersCommand, help: USERS_HELP, options: USERS_OPTIONS },
  clients: { run: clientsCommand, help: CLIENTS_HELP, options: CLIENTS_OPTIONS },
  keys: { run: keysCommand, help: KEYS_HELP, options: KEYS_OPTIONS },
  consents: { run: consentsCommand, help: CONSENTS_HELP, options: CONSENTS_OPTIONS },
  login: { run: loginCommand, help: LOGIN_HELP, options: LOGIN_OPTIONS },
  call: { run: callCommand, help: CALL_HELP, options: CALL_OPTIONS },
  logout: { run: logoutCommand, help: LOGOUT_HELP, options: LOGOUT_OPTIONS },
  status: { run: statusCommand, help: STATUS_HELP, options: STATUS_OPTIONS },
  doctor: { run: doctorCommand, help: DOCTOR_HELP, options: DOCTOR_OPTIONS },
  'client-key': { run: clientKeyCommand, help: CLIENT_KEY_HELP, options: CLIENT_KEY_OPTIONS },
  'workload-issuer': { run: workloadIssuerCommand, help: WORKLOAD_ISSUER_HELP, options: WORKLOAD_ISSUER_OPTIONS },
};

/** The closing lines of `context-auth --help`: the options every verb, or every server-side verb, takes. */
export const COMMON_HELP = `Every command takes --json (its result, or its error, as JSON on stdout) and --help.
serve, users, clients, keys and consents take --data DIR (the SQLite data folder; default
$CONTEXT_AUTH_DATA or ~/.local/share/context-auth) or --store postgres://… (also $CONTEXT_AUTH_STORE).`;

/** `context-auth --help`: each verb in a line, grouped; a verb's own help has its options. */
export const HELP = `context-auth: OAuth 2.1 authorization for context (MCP) servers

Server side, on the store (--data or --store, below):
  serve            run the authorization server, with a demo MCP server at <issuer>/mcp
  users            add, list and remove users; make administrators
  clients          add, list and remove clients (apps and programs)
  keys             list and rotate the server's signing keys
  consents         list and revoke what people approved

Client side (tokens in ~/.config/context-auth/credentials.json, or $CONTEXT_AUTH_CREDENTIALS):
  login            sign in to a context server and keep its tokens
  call             one MCP call to a context server, signing in first when needed
  logout           revoke and forget the tokens for a context server
  status           the stored sign-ins, and when they expire

A program's own identity, made on this machine:
  client-key       a key pair: the private key for --private-key, the public key for clients add --jwks
  workload-issuer  a stand-in workload platform, to try serve --workload-config (not for production)

Any context server, as the MCP hosts see it:
  doctor           whether each MCP host would connect, and what stops the ones that would not

context-auth VERB --help (or context-auth help VERB) shows what a verb does and its options.

${COMMON_HELP}`;

/** The verb of that name; never a property every object has (`toString`). */
function verbNamed(name: string): Verb | undefined {
  return Object.hasOwn(VERBS, name) ? VERBS[name] : undefined;
}

/** The version in package.json (beside dist/, or beside src/ when run from source). */
function version(): string {
  return (createRequire(import.meta.url)('../../package.json') as { version: string }).version;
}

async function main(argv: string[]): Promise<void> {
  const [command, ...rest] = argv;
  if (!command || command === '--help' || command === '-h') return print(HELP);
  if (command === 'help') {
    const [topic, ...extra] = rest;
    if (topic === undefined) return print(HELP);
    if (extra.length > 0) throw usageError(`unexpected argument ${extra[0]}`);
    const verb = verbNamed(topic);
    if (!verb) throw usageError(`unknown command ${topic}${didYouMean(topic, Object.keys(VERBS))}`);
    return print(verb.help);
  }
  if (command === '--version') return print(version());
  const verb = verbNamed(command);
  if (!verb) throw usageError(`unknown command ${command}${didYouMean(command, Object.keys(VERBS))}`);
  try {
    await verb.run(rest);
  } catch (error) {
    if (!(error instanceof CliError) || !error.unknownOption?.startsWith('--')) throw error;
    const typed = error.unknownOption.slice(2).split('=')[0]!;
    throw usageError(`${error.message}${didYouMean(typed, Object.keys(verb.options), '--')}`);
  }
}

/** Runs one command line (the arguments after `context-auth`) and exits with its outcome on failure. */
export function runCli(argv: string[]): void {
  main(argv).catch((error: unknown) => {
    const command = argv[0];
    const failure = describeFailure(error, command !== undefined && verbNamed(command) ? command : undefined);
    // With --json, stdout always holds one JSON document: the result, or this error object.
    if (argv.includes('--json')) process.stdout.write(`${JSON.stringify({ error: failure.error, message: failure.message })}\n`);
    else process.stderr.write(`context-auth: ${failure.message}\n`);
    // CONTEXT_AUTH_DEBUG=1 shows the stack of a bug.
    if (failure.unexpected && process.env.CONTEXT_AUTH_DEBUG) console.error(error);
    process.exit(failure.exitCode);
  });
}
