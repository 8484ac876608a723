/**
 * Audit events kept in the store, for the admin console: each record the server logs is also
 * queued here and written in batches, one `recordAuditEvents` call (one transaction) per write,
 * so a request never waits on it and a busy server makes one write where it logged a hundred
 * events. A store that cannot be reached keeps the events waiting for the next write, up to a
 * bound; beyond it the oldest are dropped and counted. Nothing here is ever logged as an audit
 * event itself: a failing write would then queue more events to write.
 */
import type { AuditEventRecord, AuditEventStore } from '../store/store.js';
import { AUDIT_EVENTS, type AuditEvent } from './audit.js';

/** Write once this many events wait. */
export const AUDIT_BATCH_SIZE = 100;
/** Write at most this long (ms) after the first event began to wait. */
export const AUDIT_FLUSH_DELAY_MS = 1000;
/** Events kept waiting while the store cannot be written; beyond, the oldest are dropped. */
export const AUDIT_MAX_PENDING = 10_000;

type Details = NonNullable<AuditEventRecord['details']>;

/**
 * The store's form of a logged event, made from the event itself (not its log record, which a
 * server without a `log` never makes): the fields every event may have in their columns, its
 * outcome as its name says, the others in `details`, as the log record has them.
 */
export function auditEventRecord(event: AuditEvent, occurredAt: number): AuditEventRecord {
  let details: Details | null = null;
  for (const key in event) {
    if (COLUMNS.has(key)) continue;
    const value = event[key];
    if (value !== undefined) (details ??= {})[key] = value;
  }
  return {
    occurredAt,
    event: event.event,
    outcome: AUDIT_EVENTS[event.event].outcome,
    reason: event.reason ?? null,
    clientId: event.client_id ?? null,
    userId: event.user_id ?? null,
    grantId: event.grant_id ?? null,
    address: event.address ?? null,
    provider: event.provider ?? null,
    details,
  };
}

/** The fields that are columns (or, as `time` and `outcome`, stamped on the log record), so not details. */
const COLUMNS = new Set(['time', 'event', 'outcome', 'reason', 'client_id', 'user_id', 'grant_id', 'address', 'provider']);

export interface AuditEventWriterOptions {
  batchSize?: number;
  flushDelayMs?: number;
  maxPending?: number;
  /** One line when writes start failing, when events start being dropped, and when writes succeed again. */
  warn: (message: string) => void;
  /** Called with how many of the oldest waiting events were just dropped. */
  dropped?: (count: number) => void;
  /** Runs `write` after `ms` unless cancelled (an unref'd setTimeout by default); tests give their own. */
  after?: (ms: number, write: () => void) => () => void;
}

const unrefTimeout = (ms: number, run: () => void): (() => void) => {
  const timer = setTimeout(run, ms);
  timer.unref();
  return () => clearTimeout(timer);
};

export class AuditEventWriter {
  private waiting: AuditEventRecord[] = [];
  /** Cancels the delayed write, while one is due. */
  private timer: (() => void) | undefined;
  private soon: ReturnType<typeof setImmediate> | undefined;
  private writing: Promise<void> | undefined;
  /** Set from a failed write until one succeeds: the warnings of one outage are said once. */
  private failing = false;
  private droppedInOutage = 0;
  private closed = false;
  private readonly batchSize: number;
  private readonly flushDelayMs: number;
  private readonly maxPending: number;
  private readonly after: (ms: number, write: () => void) => () => void;

  constructor(
    private readonly store: AuditEventStore,
    private readonly options: AuditEventWriterOptions,
  ) {
    this.batchSize = options.batchSize ?? AUDIT_BATCH_SIZE;
    this.flushDelayMs = options.flushDelayMs ?? AUDIT_FLUSH_DELAY_MS;
    this.maxPending = options.maxPending ?? AUDIT_MAX_PENDING;
    this.after = options.after ?? unrefTimeout;
  }

  /** Events waiting to be written. */
  get pending(): number {
    return this.waiting.length;
  }

  /** Queues the event; never writes before returning (the caller is a request). */
  add(event: AuditEvent, occurredAt: number): void {
    if (this.closed) {
      this.drop(1);
      return;
    }
    this.waiting.push(auditEventRecord(event, occurredAt));
    if (this.waiting.length > this.maxPending) this.dropOldest();
    this.schedule();
  }

  /** Writes what waits now (after a write in flight); resolves once written or kept for the next try. */
  async flush(): Promise<void> {
    this.clearTimers();
    while (this.writing) await this.writing;
    if (this.waiting.length === 0) return;
    const writing = (this.writing = this.write());
    await writing;
    this.writing = undefined;
    // What came meanwhile, or what a failed write kept, waits for the next turn.
    if (this.waiting.length > 0 && !this.closed) this.schedule();
  }

  /** Writes what waits and takes no more; call before the store closes. */
  async close(): Promise<void> {
    this.closed = true;
    await this.flush();
    if (this.waiting.length > 0) {
      this.options.warn(`${this.waiting.length} audit events could not be written to the store before it closed`);
      this.drop(this.waiting.length);
      this.waiting = [];
    }
  }

  private schedule(): void {
    if (this.writing) return; // the write in flight schedules the next
    // While the store fails, a full batch waits for the timer too: no retry faster than the delay.
    if (this.waiting.length >= this.batchSize && !this.failing) {
      if (this.soon) return;
      this.timer?.();
      this.timer = undefined;
      // After the current request's turn: a synchronous store would otherwise write inside it.
      this.soon = setImmediate(() => void this.flush());
      this.soon.unref();
    } else if (!this.timer && !this.soon) {
      this.timer = this.after(this.flushDelayMs, () => void this.flush());
    }
  }

  private async write(): Promise<void> {
    const batch = this.waiting;
    this.waiting = [];
    try {
      await this.store.recordAuditEvents(batch);
      if (this.failing) {
        const lost = this.droppedInOutage > 0 ? `; ${this.droppedInOutage} were dropped meanwhile` : '';
        this.options.warn(`audit events are written to the store again${lost}`);
      }
      this.failing = false;
      this.droppedInOutage = 0;
    } catch (error) {
      // Kept, older first, for the next try; the bound applies to the whole.
      this.waiting = batch.concat(this.waiting);
      if (this.waiting.length > this.maxPending) this.dropOldest();
      if (!this.failing) {
        this.options.warn(`cannot write audit events to the store (${(error as Error).message}); keeping up to ${this.maxPending} to retry`);
      }
      this.failing = true;
    }
  }

  private dropOldest(): void {
    const excess = this.waiting.length - this.maxPending;
    this.waiting.splice(0, excess);
    if (this.droppedInOutage === 0) this.options.warn(`more than ${this.maxPending} audit events wait for the store: dropping the oldest`);
    this.droppedInOutage += excess;
    this.drop(excess);
  }

  private drop(count: number): void {
    this.options.dropped?.(count);
  }

  private clearTimers(): void {
    this.timer?.();
    if (this.soon) clearImmediate(this.soon);
    this.timer = undefined;
    this.soon = undefined;
  }
}
