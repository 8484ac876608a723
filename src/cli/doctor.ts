import { parseArgs } from 'node:util';
import { hostNames } from '../cli-support.js';
import { HOST_PROFILES, runDoctor, type DoctorReport, type HostVerdict } from '../client/index.js';
import { COMMON_OPTIONS, parsed, print, table } from './args.js';
import { usageError } from './errors.js';

export const DOCTOR_HELP = `context-auth doctor URL [--host NAME ...] [--register] [--timeout S] [--json]
    probe a context server (this one or anyone's) as each MCP host would, and print for each host
    whether it would connect, or the first step that stops it, what the server answered and the
    fix; then the server-wide checks. Signs nobody in and sends no token. The hosts: ChatGPT,
    Claude, Claude Code, Cursor, VS Code, Copilot CLI, Codex, Gemini CLI, Goose, mcp-remote,
    MCP Inspector; --host NAME: only these (repeatable). --register also registers a throwaway
    client for each host that registers dynamically (said on stderr first; listed at the end,
    and deleted where the server allows it). --timeout S: each request's limit (default 10).
    Exits 0 when every host would connect, 1 when one would not`;

export const DOCTOR_OPTIONS = {
  ...COMMON_OPTIONS,
  host: { type: 'string', multiple: true },
  register: { type: 'boolean' },
  timeout: { type: 'string' },
} as const;

function verdictText(verdict: HostVerdict): string {
  if (verdict.connects) return 'connects';
  const failure = verdict.failure!;
  return `fails at ${failure.step}: ${failure.answered} \u2014 fix: ${failure.fix}`;
}

export function renderReport(report: DoctorReport): string {
  const lines = [
    `${report.url}: ${report.connects ? 'every host would connect' : `${report.hosts.filter((host) => !host.connects).length} of ${report.hosts.length} hosts would not connect`}`,
    '',
    table(
      report.hosts.map((host) => ({ host: host.host, way: host.way ?? '', verdict: verdictText(host) })),
      ['host', 'way', 'verdict'],
    ),
    '',
    table(
      report.checks.map((check) => ({ check: check.check, result: check.result, detail: check.detail })),
      ['check', 'result', 'detail'],
    ),
  ];
  if (report.registrations.length > 0) {
    lines.push('', 'Throwaway registrations:');
    for (const registration of report.registrations) {
      const outcome = !registration.clientId
        ? 'refused'
        : registration.deleted
          ? `client ${registration.clientId}, deleted again`
          : `client ${registration.clientId}, still registered: delete it (context-auth clients remove ${registration.clientId}, on a context-auth server)`;
      lines.push(`  ${registration.host}: ${registration.endpoint}: ${outcome}`);
    }
  }
  lines.push('', `Not checked: ${report.notChecked.join('; ')}.`);
  return lines.join('\n');
}

export async function doctorCommand(args: string[]): Promise<void> {
  const { values, positionals } = parsed(() => parseArgs({ args, options: DOCTOR_OPTIONS, allowPositionals: true, strict: true }));
  if (values.help) return print(DOCTOR_HELP);
  const [url, ...rest] = positionals;
  if (!url) throw usageError('doctor needs the context server URL');
  if (rest.length > 0) throw usageError(`unexpected argument ${rest[0]}`);
  if (!/^https?:\/\/[^/]/i.test(url) || !URL.canParse(url)) throw usageError(`not an http or https URL: ${url}`);
  let timeoutMs = 10_000;
  if (values.timeout !== undefined) {
    const seconds = Number(values.timeout);
    if (!Number.isFinite(seconds) || seconds <= 0 || seconds > 300) throw usageError('--timeout must be a number of seconds above 0, at most 300');
    timeoutMs = seconds * 1000;
  }
  const known = hostNames(HOST_PROFILES).map((host) => host.toLowerCase());
  const unknown = (values.host ?? []).find((host) => !known.includes(host.toLowerCase()));
  if (unknown !== undefined) throw usageError(`unknown host ${unknown}; the hosts are ${hostNames(HOST_PROFILES).join(', ')}`);
  if (values.register) {
    process.stderr.write(
      `context-auth doctor: --register: each host that registers dynamically will now register a throwaway client at ${url}'s authorization server; they are listed at the end.\n`,
    );
  }
  const report = await runDoctor(url, { timeoutMs, register: values.register ?? false, ...(values.host ? { hosts: values.host } : {}) });
  print(values.json ? report : renderReport(report));
  if (!report.connects) process.exitCode = 1;
}
