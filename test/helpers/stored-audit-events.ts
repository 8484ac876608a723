/**
 * Stored audit events for the console's tests: records made the way the store keeps them, and
 * the two stores they run on (memory, a real SQLite file).
 */
import { createMemoryStore } from '../../src/store/memory.js';
import type { AuditEventRecord, FullStore } from '../../src/store/store.js';
import { makeAuditEvent } from '../../src/store/testing/records.js';
import { SQLITE } from './stores.js';

/** A stored event: a refusal unless said, at the time given. */
export function storedEvent(fields: Partial<AuditEventRecord> & { event: string; occurredAt: number }): AuditEventRecord {
  return makeAuditEvent({ outcome: 'failure', ...fields });
}

export interface ConsoleStoreKind {
  name: string;
  open(): Promise<{ store: FullStore; close(): Promise<void> }>;
}

export const CONSOLE_STORES: readonly ConsoleStoreKind[] = [
  { name: 'memory', open: async () => ({ store: createMemoryStore(), close: async () => {} }) },
  { name: 'SQLite', open: () => SQLITE.open() },
];
