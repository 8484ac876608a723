/**
 * Shared setup of the attack suite: every attack file runs its tests once per real store (SQLite
 * file, PostgreSQL database), against the authorization server and the co-hosted /mcp exactly as
 * `serve` wires them, and proves refusals by what the database holds afterwards as well as by
 * the answer's status and error code.
 */
import assert from 'node:assert/strict';
import { after, before, describe } from 'node:test';
import type { AuthorizationServerOptions } from '../../src/authorization-server/index.js';
import { coHostedServer, type CoHosted, type CoHostedOptions } from '../helpers/co-hosted.js';
import { hashPassword } from '../../src/core/passwords.js';
import type { Harness } from '../helpers/harness.js';
import { STORE_KINDS, type OpenedStore, type RowCounts, type StoreKind, type Table } from '../helpers/stores.js';

export const USER = { username: 'alice', password: 'correct horse battery' };

export interface AttackEnv {
  kind: StoreKind;
  /** A fresh server (own clock, own in-memory throttles) on this describe's store; alice exists. */
  target(overrides?: Partial<AuthorizationServerOptions>, mcp?: CoHostedOptions): Promise<CoHosted>;
  counts(): Promise<RowCounts>;
}

/** `describe(title — <store>)` once per store, the store opened before and removed after. */
export function onEveryStore(title: string, body: (env: AttackEnv) => void): void {
  for (const kind of STORE_KINDS) {
    describe(`${title} — ${kind.name}`, () => {
      let opened: OpenedStore | undefined;
      before(async () => {
        opened = await kind.open();
        await opened.store.createUser({ id: 'user-alice', username: USER.username, passwordHash: await hashPassword(USER.password), createdAt: 1_800_000_000 });
      });
      after(async () => {
        await opened?.close();
      });
      body({
        kind,
        target: async (overrides, mcp) => coHostedServer(opened!.store, overrides, mcp),
        counts: () => opened!.counts(),
      });
    });
  }
}

/** Asserts that these tables hold exactly as many rows as before (nothing issued, nothing removed). */
export function assertUnchanged(before: RowCounts, afterwards: RowCounts, tables: readonly Table[], what: string): void {
  for (const table of tables) assert.equal(afterwards[table], before[table], `${what}: ${table} changed (${before[table]} → ${afterwards[table]})`);
}

/** Everything a token, code or grant leaves in the store. */
export const ISSUED: readonly Table[] = ['grants', 'authorization_codes', 'refresh_tokens', 'spent_refresh_tokens', 'revocations'];

/** A JSON-RPC tools/call of `whoami` at the co-hosted /mcp, with or without a bearer token. */
export function whoami(h: Harness, authorization?: string): Promise<Response> {
  return h.request('/mcp', {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2025-06-18',
      ...(authorization === undefined ? {} : { authorization }),
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'whoami', arguments: {} } }),
  });
}

/** Asserts /mcp served the call (200, a JSON-RPC result, not an error). */
export async function expectServed(response: Response): Promise<void> {
  const text = await response.text();
  assert.equal(response.status, 200, text);
  assert.match(text, /"result"/, text);
}

/** Asserts the guard's refusal: this status, this error in the body and in the Bearer challenge. */
export async function expectRefused(response: Response, status: 401 | 403, error: string, description?: RegExp): Promise<void> {
  const text = await response.text();
  assert.equal(response.status, status, text);
  const body = JSON.parse(text) as { error: string; error_description: string };
  assert.equal(body.error, error, text);
  assert.match(response.headers.get('www-authenticate') ?? '', new RegExp(`^Bearer .*error="${error}"`));
  if (description) assert.match(body.error_description, description);
}
