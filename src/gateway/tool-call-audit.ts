/**
 * One audit event per `tools/call` through a gateway path (docs/audit.md): who (the token's
 * subject and client), where (the path), which tool, and what came of it: the upstream's status,
 * the upstream's failure, or the gateway's own refusal. Never a token; the tool's arguments only
 * when the operator asks for them. A tool name and the arguments come from the client, so both
 * are cut to a length: a request cannot make one line as large as its body.
 */
import type { VerifiedToken } from '../resource-server/index.js';
import type { Forwarded } from './forward.js';

/** Characters of a tool name kept in an event. */
export const MAX_TOOL_NAME_CHARS = 200;
/** Characters of the arguments (as JSON) kept in an event, when they are logged. */
export const MAX_ARGUMENTS_CHARS = 2000;

/** An event the gateway logs, in the shape of the authorization server's audit events (`AuditEvent`). */
export type GatewayAuditEvent = {
  event: 'gateway_tool_called' | 'gateway_tool_failed' | 'gateway_tool_refused';
  /** The token's `sub`. */
  user_id: string;
  client_id: string;
  path: string;
  tool: string;
  /** The upstream's status (called), or the gateway's (failed, refused). */
  status: number;
  /** Why the upstream gave no answer: unreachable, timeout, refused (the gateway), cancelled (the client went away). */
  failure?: string;
  /** Why the gateway refused, as its OAuth error. */
  reason?: string;
  /** The scopes the refused call needs. */
  scope?: string;
  /** The tool's arguments as JSON, cut to MAX_ARGUMENTS_CHARS; only when the operator asks. */
  arguments?: string;
};

interface ToolCall {
  name: string;
  arguments: unknown;
}

/** The `tools/call` messages of a JSON-RPC message or batch. */
export function toolCalls(body: unknown): ToolCall[] {
  const calls: ToolCall[] = [];
  for (const message of Array.isArray(body) ? body : [body]) {
    if (typeof message !== 'object' || message === null || (message as { method?: unknown }).method !== 'tools/call') continue;
    const params = (message as { params?: unknown }).params;
    const name = typeof params === 'object' && params !== null ? (params as { name?: unknown }).name : undefined;
    calls.push({ name: typeof name === 'string' ? name : '', arguments: (params as { arguments?: unknown } | undefined)?.arguments });
  }
  return calls;
}

export class ToolCallAudit {
  constructor(
    private readonly log: (event: GatewayAuditEvent) => void,
    private readonly path: string,
    private readonly withArguments: boolean,
  ) {}

  /** The gateway refused the calls: the token lacks `scopes`. */
  refused(auth: VerifiedToken, calls: ToolCall[], status: number, scopes: string[]): void {
    for (const call of calls)
      this.log({ ...this.common(auth, call), event: 'gateway_tool_refused', status, reason: 'insufficient_scope', scope: scopes.join(' ') });
  }

  /** The calls went upstream: its answer's status, or why there was none (and the gateway's status). */
  forwarded(auth: VerifiedToken, calls: ToolCall[], outcome: Forwarded['outcome'], status: number): void {
    for (const call of calls) {
      if (outcome.kind === 'answered') this.log({ ...this.common(auth, call), event: 'gateway_tool_called', status: outcome.status });
      else this.log({ ...this.common(auth, call), event: 'gateway_tool_failed', status, failure: outcome.failure });
    }
  }

  private common(auth: VerifiedToken, call: ToolCall): Omit<GatewayAuditEvent, 'event' | 'status'> {
    return {
      user_id: auth.subject,
      client_id: auth.clientId,
      path: this.path,
      tool: cut(call.name, MAX_TOOL_NAME_CHARS),
      ...(this.withArguments && call.arguments !== undefined ? { arguments: cut(JSON.stringify(call.arguments), MAX_ARGUMENTS_CHARS) } : {}),
    };
  }
}

function cut(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max)}…` : text;
}
