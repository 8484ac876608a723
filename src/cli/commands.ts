/** The CLI's verbs; main.ts (the bin) runs them, `serve` on a thread with a sized heap (serve-thread.ts). */
import { createRequire } from 'node:module';
import { print } from './args.js';
import { CLIENTS_HELP, clientsCommand } from './clients.js';
import { CONSENTS_HELP, consentsCommand } from './consents.js';
import { describeFailure, usageError } from './errors.js';
import { CALL_HELP, callCommand } from './call.js';
import { DOCTOR_HELP, doctorCommand } from './doctor.js';
import { KEYS_HELP, keysCommand } from './keys.js';
import { LOGIN_HELP, loginCommand } from './login.js';
import { LOGOUT_HELP, logoutCommand } from './logout.js';
import { STATUS_HELP, statusCommand } from './status.js';
import { SERVE_HELP, serveCommand } from './serve.js';
import { USERS_HELP, usersCommand } from './users.js';

const commands: Record<string, (args: string[]) => Promise<void>> = {
  serve: serveCommand,
  users: usersCommand,
  clients: clientsCommand,
  keys: keysCommand,
  consents: consentsCommand,
  login: loginCommand,
  call: callCommand,
  logout: logoutCommand,
  status: statusCommand,
  doctor: doctorCommand,
};

/** The closing lines of `context-auth --help`: the options every verb, or every server-side verb, takes. */
export const COMMON_HELP = `Every command takes --json (its result, or its error, as JSON on stdout) and --help.
serve, users, clients, keys and consents take --data DIR (the SQLite data folder; default
$CONTEXT_AUTH_DATA or ~/.local/share/context-auth) or --store postgres://… (also $CONTEXT_AUTH_STORE).`;

const HELP = `context-auth: OAuth 2.1 authorization for context (MCP) servers

${SERVE_HELP}

${USERS_HELP}

${CLIENTS_HELP}

${KEYS_HELP}

${CONSENTS_HELP}

Client side (tokens in ~/.config/context-auth/credentials.json, or $CONTEXT_AUTH_CREDENTIALS, or --credentials FILE):

${LOGIN_HELP}

${CALL_HELP}

${LOGOUT_HELP}

${STATUS_HELP}

Any context server, as the MCP hosts see it:

${DOCTOR_HELP}

${COMMON_HELP}`;

async function main(argv: string[]): Promise<void> {
  const [command, ...rest] = argv;
  if (!command || command === '--help' || command === '-h' || command === 'help') return print(HELP);
  if (command === '--version') {
    const pkg = createRequire(import.meta.url)('../../package.json') as { version: string };
    return print(pkg.version);
  }
  const run = commands[command];
  if (!run) throw usageError(`unknown command ${command}`);
  await run(rest);
}

/** Runs one command line (the arguments after `context-auth`) and exits with its outcome on failure. */
export function runCli(argv: string[]): void {
  main(argv).catch((error: unknown) => {
    const failure = describeFailure(error);
    // With --json, stdout always holds one JSON document: the result, or this error object.
    if (argv.includes('--json')) process.stdout.write(`${JSON.stringify({ error: failure.error, message: failure.message })}\n`);
    else process.stderr.write(`context-auth: ${failure.message}\n`);
    // CONTEXT_AUTH_DEBUG=1 shows the stack of a bug.
    if (failure.unexpected && process.env.CONTEXT_AUTH_DEBUG) console.error(error);
    process.exit(failure.exitCode);
  });
}
