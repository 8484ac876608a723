/** An audit event as the store keeps it: the fields every event may have, and the rest as details. */
export interface AuditEventRecord {
  /** Its place in the log, given by the store (increasing); absent when recording. */
  seq?: number;
  /** When it occurred, epoch milliseconds. */
  occurredAt: number;
  event: string;
  outcome: 'success' | 'failure';
  reason: string | null;
  clientId: string | null;
  userId: string | null;
  grantId: string | null;
  /** The client address's bucket, as logged; never more of it. */
  address: string | null;
  provider: string | null;
  /** The event's other fields: plain values only. */
  details: Record<string, string | number | boolean | null> | null;
}

/** Which audit events to list: newest first, before `beforeSeq`, matching every filter given. */
export interface AuditEventQuery {
  beforeSeq?: number;
  limit: number;
  event?: string;
  outcome?: 'success' | 'failure';
  userId?: string;
  clientId?: string;
  address?: string;
  /** Only events at or after this time (epoch milliseconds). */
  since?: number;
}

/** Audit events kept for the console, swept after their retention (SweepOptions.auditEventsBefore). */
export interface AuditEventStore {
  /** Records the events, in order, in one transaction. */
  recordAuditEvents(events: AuditEventRecord[]): Promise<void>;
  listAuditEvents(query: AuditEventQuery): Promise<AuditEventRecord[]>;
}
