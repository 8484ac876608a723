/**
 * What every file of the suite shares: how a test is registered (with the capabilities it needs),
 * the store of the running test, the probes, and the steps many tests begin with.
 */
import assert from 'node:assert/strict';
import type { StoreCapability } from '../capabilities.js';
import type { ClientRecord, ConsumeResult, FullStore, GrantRecord, RefreshResult, RefreshTokenRecord, UserRecord } from '../store.js';
import { RECORD_KINDS, type RecordKind } from './probes.js';
import { addUser, issueFirstToken, makeClient, makeGrant, makeRefreshToken, refreshOf } from './records.js';

/** What the refresh tests read a refreshGrant result as: the spent token's record when it succeeded. */
export type RotateResult = Exclude<RefreshResult, { status: 'ok' | 'upstream' }> | { status: 'ok'; record: RefreshTokenRecord };

export interface Suite {
  describe(name: string, body: () => void): void;
  /** A test of the core contract. */
  it(name: string, body: () => Promise<void>): void;
  /** A test that needs optional capabilities of the store: skipped, saying why, on a store without them. */
  itNeeds(needs: StoreCapability | StoreCapability[], name: string, body: () => Promise<void>): void;
  /** Calls `use` with the store of each test, before the test runs: typed with every capability, of which a test uses only those it declared. */
  eachStore(use: (store: FullStore) => void): void;
  /** Whether the store's sweepExpired deletes in batches, resting through `options.pause` (StoreSuiteOptions.batchedSweep). */
  readonly batchedSweep: boolean;
  /** How many records of each kind the store holds, where its author gave probes; undefined otherwise (the check is then left out). */
  counts(): Promise<Record<RecordKind, number> | undefined>;
}

/** The counts as they are, then as they are after `step`, for a test to compare (both undefined without probes). */
export async function countsAround<T>(
  suite: Suite,
  step: () => Promise<T>,
): Promise<{ before: Record<RecordKind, number> | undefined; after: Record<RecordKind, number> | undefined; result: T }> {
  const before = await suite.counts();
  const result = await step();
  return { before, after: await suite.counts(), result };
}

/** Asserts that, where the store has probes, `after` differs from `before` exactly by `changes` (kinds not named are unchanged). */
export function assertCounts(
  before: Record<RecordKind, number> | undefined,
  after: Record<RecordKind, number> | undefined,
  changes: Partial<Record<RecordKind, number>> = {},
  message?: string,
): void {
  if (!before || !after) return;
  const expected = Object.fromEntries(RECORD_KINDS.map((kind) => [kind, before[kind] + (changes[kind] ?? 0)]));
  assert.deepEqual(after, expected, message);
}

/** Asserts the status of a consume/rotate result and returns its record. */
export function expectRecord<T>(result: ConsumeResult<T> | { status: 'revoked'; record: T }, status: string): T;
export function expectRecord<S extends RotateResult['status']>(
  result: RotateResult,
  status: S,
): Extract<RotateResult, { status: S; record: unknown }>['record'];
export function expectRecord(result: { status: string; record?: unknown }, status: string): unknown {
  assert.equal(result.status, status);
  assert.ok('record' in result, `a ${status} result carries the record`);
  return result.record;
}

/** Runs `make` `count` times, a few at a time (as many as a small pool of connections serves at once). */
export async function inBatches<T>(count: number, make: (index: number) => Promise<T>): Promise<T[]> {
  const made: T[] = [];
  for (let from = 0; from < count; from += 8) {
    made.push(...(await Promise.all(Array.from({ length: Math.min(8, count - from) }, (_, i) => make(from + i)))));
  }
  return made;
}

/** The steps many tests begin with, on the store of the running test. */
export function steps(suite: Suite) {
  let store!: FullStore;
  suite.eachStore((current) => (store = current));

  /** A client and a user (the user saved through the core contract: one who signs in upstream). */
  async function parties(): Promise<{ client: ClientRecord; user: UserRecord }> {
    const client = makeClient();
    await store.createClient(client);
    return { client, user: await addUser(store) };
  }

  /** A client, a user and an authorization_code grant between them. */
  async function seed(grantOverrides: Partial<GrantRecord> = {}) {
    const { client, user } = await parties();
    const grant = makeGrant(client.clientId, user.id, grantOverrides);
    await store.createGrant(grant);
    return { client, user, grant };
  }

  /**
   * A grant of `client` and `user` whose code was redeemed at NOW for its first refresh token
   * (`tokenOverrides`) and an access token expiring at `accessExpiresAt` (0: none to speak of).
   */
  async function familyOf(
    client: ClientRecord,
    user: UserRecord,
    grantOverrides: Partial<GrantRecord> = {},
    tokenOverrides: Partial<RefreshTokenRecord> = {},
    accessExpiresAt = 0,
  ) {
    const made = makeGrant(client.clientId, user.id, grantOverrides);
    const token = makeRefreshToken(made, tokenOverrides);
    const code = await issueFirstToken(store, made, token, { accessExpiresAt });
    const grant: GrantRecord = { ...made, accessExpiresAt: Math.max(made.accessExpiresAt ?? 0, accessExpiresAt) };
    return { grant, token, code };
  }

  /** familyOf a new client and user. */
  async function family(grantOverrides: Partial<GrantRecord> = {}, tokenOverrides: Partial<RefreshTokenRecord> = {}, accessExpiresAt = 0) {
    const { client, user } = await parties();
    return { client, user, ...(await familyOf(client, user, grantOverrides, tokenOverrides, accessExpiresAt)) };
  }

  /** A redemption that issues nothing: the code's consumption alone. */
  const consume = (codeHash: string, now: number) => store.redeemAuthorizationCode(codeHash, now, () => undefined);

  /** A refresh from `next`'s client, read as a rotation: the spent record, or why nothing was spent. */
  async function rotate(oldHash: string, next: RefreshTokenRecord, now: number, accessExpiresAt = now + 600): Promise<RotateResult> {
    const live = await store.getRefreshToken(oldHash);
    const result = await store.refreshGrant(refreshOf(oldHash, next, now, { accessExpiresAt }));
    if (result.status === 'upstream') throw new Error('no upstream grants here');
    return result.status === 'ok' ? { status: 'ok', record: live! } : result;
  }

  return { parties, seed, familyOf, family, consume, rotate };
}
