/**
 * Stored audit events for the console's tests: records made the way the store keeps them, and
 * the two stores they run on (memory, a real SQLite file).
 */
import { createMemoryStore } from '../../src/store/memory.js';
import type { AuditEventRecord, FullStore } from '../../src/store/store.js';
import { SQLITE } from './stores.js';

export function storedEvent(fields: Partial<AuditEventRecord> & { event: string; occurredAt: number }): AuditEventRecord {
  return {
    outcome: 'failure',
    reason: null,
    clientId: null,
    userId: null,
    grantId: null,
    address: null,
    provider: null,
    details: null,
    ...fields,
  };
}

/** A stored record of a logged event (what the store's writer makes of each line). */
export function fromLogged(logged: Record<string, unknown>, occurredAt: number): AuditEventRecord {
  const { event, outcome, time: _time, reason, client_id, user_id, grant_id, address, provider, ...details } = logged as Record<string, string | number | boolean | null>;
  const text = (value: unknown) => (typeof value === 'string' ? value : null);
  return {
    occurredAt,
    event: String(event),
    outcome: outcome === 'success' ? 'success' : 'failure',
    reason: text(reason),
    clientId: text(client_id),
    userId: text(user_id),
    grantId: text(grant_id),
    address: text(address),
    provider: text(provider),
    details: Object.keys(details).length > 0 ? details : null,
  };
}

export interface ConsoleStoreKind {
  name: string;
  open(): Promise<{ store: FullStore; close(): Promise<void> }>;
}

export const CONSOLE_STORES: readonly ConsoleStoreKind[] = [
  { name: 'memory', open: async () => ({ store: createMemoryStore(), close: async () => {} }) },
  { name: 'SQLite', open: () => SQLITE.open() },
];
