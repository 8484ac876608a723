/**
 * A crash under load: the built `context-auth serve` is SIGKILLed five times, at seeded random
 * moments, while twelve clients refresh in closed loops over HTTP, and is restarted each time on
 * the same SQLite file or PostgreSQL database; then the same with SIGTERM, the graceful stop of
 * every restart and deploy, which must moreover answer every request it took on. Every request is recorded: the token presented and
 * what came back (200 with new tokens, an OAuth error, or no answer at all). Afterwards:
 * - nothing was spent twice: no refresh token was answered 200 twice, and in the store every
 *   family's only live token is the one its client holds;
 * - nothing committed was lost: a token a client received always works when presented, each
 *   family's spent records are exactly its rotations, the user, client and grants are all there;
 * - a request cut off by a kill is retried with the same token after the restart and answered
 *   200 either way: a rotation, if it had not committed, else a retry of that rotation, answered
 *   with the token its lost answer carried; no one is signed out;
 * - access tokens from before a kill still verify at the co-hosted /mcp, and revocations made
 *   before a kill still apply;
 * - every restart is quick and clean, and the SQLite file passes integrity_check after a crash.
 * CONTEXT_AUTH_TEST_CRASH_SEED=<n> replays a run's kill moments.
 */
import assert from 'node:assert/strict';
import { randomInt } from 'node:crypto';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import pg from 'pg';
import { hashSecret } from '../../src/core/secrets.js';
import { spentKey } from '../../src/store/internal.js';
import { Browser, pkcePair, signInAndConsent } from '../helpers/harness.js';
import { startPostgres } from '../helpers/postgres.js';
import { cli, freePort, startServe, tempDataFolder, type RunningServer } from './serve-process.js';

const USER = { username: 'alice', password: 'correct horse battery staple' };
const CALLBACK = 'http://127.0.0.1:45678/callback';
const CHAINS = 12;
/** How serve is stopped under load: a crash, and the stop every restart or deploy sends. */
const STOPS = [
  { signal: 'SIGKILL', times: 5, exitCode: null, graceful: false },
  { signal: 'SIGTERM', times: 3, exitCode: 0, graceful: true },
] as const;
/** Load before each kill, in ms (seeded). */
const LOAD_MS = [300, 1500] as const;
/** Load after the last restart, so the last restart is shown serving refreshes too. */
const TAIL_MS = 500;
const SEED = Number(process.env['CONTEXT_AUTH_TEST_CRASH_SEED'] ?? randomInt(2 ** 31));
/** Every request from 127.0.0.1: the per-address token limit is raised so that 429s never interfere. */
const RAISED_LIMIT = ['--rate-limit', 'token=1000000/minute,burst=1000000'];
/** What a restart's output must never say. */
const TROUBLE = /database is locked|SQLITE_|migrat|error|warning|an empty database was created/i;

/** mulberry32: a small seeded generator, so a failing run's kill moments can be replayed. */
function seeded(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface TokenBody {
  access_token: string;
  refresh_token: string;
  error?: string;
  error_description?: string;
}

interface Rows {
  /** Grants of the client: id → revoked. */
  grants: Map<string, boolean>;
  /** Live refresh tokens: hash → grant. */
  live: Map<string, string>;
  /** Spent records: key (hash prefix) → grant. */
  spent: Map<string, string>;
  /** Spent records: key → the key of the successor it names. */
  successors: Map<string, string | null>;
}

interface SpentRow {
  token_key: string;
  grant_id: string;
  successor_key: string | null;
}

const spentRows = (rows: SpentRow[]): Pick<Rows, 'spent' | 'successors'> => ({
  spent: new Map(rows.map((r) => [r.token_key, r.grant_id])),
  successors: new Map(rows.map((r) => [r.token_key, r.successor_key])),
});

/** A database `serve` runs on, and a way to read it behind serve's back. */
interface Backend {
  flags: string[];
  /** The rows that say what was rotated, read with the database's own driver. */
  rows(clientId: string): Promise<Rows>;
  /** What is wrong with the database once serve has been killed for the last time (empty: nothing). */
  afterCrash(): Promise<string[]>;
  cleanup(): Promise<void>;
}

const BACKENDS: { name: string; open(): Promise<Backend> }[] = [
  {
    name: 'SQLite',
    open: async () => {
      const data = tempDataFolder();
      const file = join(data, 'context-auth.db');
      const read = <T>(fn: (db: Database.Database) => T): T => {
        const db = new Database(file, { readonly: true, fileMustExist: true });
        try {
          return fn(db);
        } finally {
          db.close();
        }
      };
      return {
        flags: ['--data', data],
        rows: async (clientId) =>
          read((db) => ({
            grants: new Map(
              (db.prepare('SELECT id, revoked_at FROM grants WHERE client_id = ?').all(clientId) as { id: string; revoked_at: number | null }[]).map((r) => [
                r.id,
                r.revoked_at !== null,
              ]),
            ),
            live: new Map(
              (db.prepare('SELECT token_hash, grant_id FROM refresh_tokens').all() as { token_hash: string; grant_id: string }[]).map((r) => [
                r.token_hash,
                r.grant_id,
              ]),
            ),
            ...spentRows(db.prepare('SELECT token_key, grant_id, successor_key FROM spent_refresh_tokens').all() as SpentRow[]),
          })),
        afterCrash: async () => {
          // Opened read-write, as the next serve would: SQLite recovers the WAL the crash left behind.
          const db = new Database(file, { fileMustExist: true });
          try {
            const problems: string[] = [];
            const integrity = db.pragma('integrity_check', { simple: true });
            if (integrity !== 'ok') problems.push(`integrity_check: ${String(integrity)}`);
            const orphans = db.pragma('foreign_key_check') as unknown[];
            if (orphans.length > 0) problems.push(`foreign_key_check: ${JSON.stringify(orphans.slice(0, 5))}`);
            return problems;
          } finally {
            db.close();
          }
        },
        cleanup: async () => {},
      };
    },
  },
  {
    name: 'PostgreSQL',
    open: async () => {
      const database = await startPostgres();
      const query = async <T extends pg.QueryResultRow>(sql: string, values: unknown[] = []): Promise<T[]> => {
        const client = new pg.Client({ connectionString: database.connectionString });
        await client.connect();
        try {
          return (await client.query<T>(sql, values)).rows;
        } finally {
          await client.end();
        }
      };
      return {
        flags: ['--store', database.connectionString],
        rows: async (clientId) => ({
          grants: new Map(
            (await query<{ id: string; revoked_at: string | null }>('SELECT id, revoked_at FROM grants WHERE client_id = $1', [clientId])).map((r) => [
              r.id,
              r.revoked_at !== null,
            ]),
          ),
          live: new Map(
            (await query<{ token_hash: string; grant_id: string }>('SELECT token_hash, grant_id FROM refresh_tokens')).map((r) => [r.token_hash, r.grant_id]),
          ),
          ...spentRows(await query<SpentRow>('SELECT token_key, grant_id, successor_key FROM spent_refresh_tokens')),
        }),
        afterCrash: async () => {
          // The killed process's sessions end as soon as PostgreSQL sees their sockets close; a
          // transaction left open (and its row locks) would block the next serve.
          const deadline = Date.now() + 5000;
          let left: { state: string | null }[] = [];
          do {
            left = await query<{ state: string | null }>('SELECT state FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()');
            if (left.length === 0) return [];
            await sleep(100);
          } while (Date.now() < deadline);
          return [`sessions still open 5 s after the kill: ${left.map((s) => s.state).join(', ')}`];
        },
        cleanup: () => database.stop(),
      };
    },
  },
];

/** One token request of the load, and what came of it. */
interface Attempt {
  chain: number;
  token: string;
  /** Kills before the request was sent. */
  epoch: number;
  outcome?: 'ok' | 'refused' | 'no-answer' | 'unexpected';
  /** The refresh token a 200 carried. */
  next?: string;
  detail?: string;
}

/** One client's grant: the refresh tokens it received, in order, and the access tokens. */
interface Chain {
  index: number;
  received: string[];
  access: string[];
  /** The first access token, from before any kill. */
  firstAccess: string;
  /** Set once the server refused the chain's token: the chain stops there. */
  ended?: Attempt;
}

const current = (chain: Chain): string => chain.received.at(-1)!;

/** Held closed while serve is down, so that clients wait instead of spinning on refused connections. */
class Gate {
  private opened: Promise<void> = Promise.resolve();
  private release: () => void = () => {};
  private announce: () => void = () => {};
  private reopened: Promise<void> = new Promise((resolve) => (this.announce = resolve));
  close(): void {
    this.opened = new Promise((resolve) => (this.release = resolve));
  }
  open(): void {
    this.release();
    this.announce();
    this.reopened = new Promise((resolve) => (this.announce = resolve));
  }
  /** Open now, or once serve is back. */
  wait(): Promise<void> {
    return this.opened;
  }
  /** The next time the gate opens (after the next restart, or at the end). */
  next(): Promise<void> {
    return this.reopened;
  }
}

for (const [stopIndex, { signal, times: KILLS, exitCode, graceful }] of STOPS.entries())
  for (const [backendIndex, kind] of BACKENDS.entries()) {
    describe(`serve stopped by ${signal} ${KILLS} times under refresh load, ${kind.name}`, { timeout: 300_000 }, () => {
      const random = seeded(SEED ^ (backendIndex * 0x9e3779b9) ^ (stopIndex * 0x85ebca6b));
      let backend: Backend;
      let port: number;
      let flags: string[];
      let server: RunningServer | undefined;
      let issuer: string;
      let clientId: string;
      let kids: string[];
      /** Every grant a client refreshed, in order of creation. */
      const chains: Chain[] = [];
      /** The clients: each refreshes its current chain; one whose session was lost signs in again at the next restart. */
      const slots: Chain[] = [];
      const attempts: Attempt[] = [];
      /** Access tokens that must stay refused across every restart, and one that must stay accepted. */
      const refused: { why: string; token: string }[] = [];
      let survivor: string;
      let kills = 0;
      const browser = new Browser((path, init) => fetch(new URL(path, issuer), init));
      const seed = `seed ${SEED} (CONTEXT_AUTH_TEST_CRASH_SEED)`;

      const post = (path: string, values: Record<string, string>) =>
        fetch(new URL(path, issuer), {
          method: 'POST',
          body: new URLSearchParams(values),
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          signal: AbortSignal.timeout(10_000),
        });
      const refresh = (token: string) => post('/token', { grant_type: 'refresh_token', refresh_token: token, client_id: clientId });

      async function mcpStatus(accessToken: string): Promise<number> {
        const response = await fetch(`${issuer}/mcp`, {
          method: 'POST',
          headers: { authorization: `Bearer ${accessToken}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
          body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
        });
        await response.body?.cancel();
        return response.status;
      }

      async function authorizeOnce(signIn: Browser): Promise<TokenBody> {
        const { verifier, challenge } = pkcePair();
        const query = new URLSearchParams({
          response_type: 'code',
          client_id: clientId,
          redirect_uri: CALLBACK,
          code_challenge: challenge,
          code_challenge_method: 'S256',
          state: 'crash',
          resource: `${issuer}/mcp`,
        });
        const callback = await signInAndConsent(signIn, await signIn.fetch(`/authorize?${query}`), USER, 'approve', issuer);
        const code = callback.searchParams.get('code');
        assert.ok(code, `no code: ${callback}`);
        const response = await post('/token', {
          grant_type: 'authorization_code',
          code,
          code_verifier: verifier,
          redirect_uri: CALLBACK,
          client_id: clientId,
          resource: `${issuer}/mcp`,
        });
        assert.equal(response.status, 200);
        return (await response.json()) as TokenBody;
      }

      async function jwksKids(): Promise<string[]> {
        const response = await fetch(`${issuer}/jwks`);
        assert.equal(response.status, 200);
        return ((await response.json()) as { keys: { kid: string }[] }).keys.map((key) => key.kid).sort();
      }

      /** A new grant for a client, through the browser whose session and consent make it immediate. */
      async function newChain(): Promise<Chain> {
        const tokens = await authorizeOnce(browser);
        const chain = { index: chains.length, received: [tokens.refresh_token], access: [tokens.access_token], firstAccess: tokens.access_token };
        chains.push(chain);
        return chain;
      }

      const start = () => startServe(['--port', String(port), ...flags, '--quiet', ...RAISED_LIMIT]);

      before(async () => {
        backend = await kind.open();
        port = await freePort();
        flags = backend.flags;
        const added = await cli(['users', 'add', USER.username, ...flags], `${USER.password}\n`);
        assert.equal(added.code, 0, added.stderr);
        server = await start();
        issuer = server.issuer;
        const registration = await fetch(`${issuer}/register`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({
            client_name: 'Crash',
            redirect_uris: [CALLBACK],
            token_endpoint_auth_method: 'none',
            grant_types: ['authorization_code', 'refresh_token'],
          }),
        });
        assert.equal(registration.status, 201);
        clientId = ((await registration.json()) as { client_id: string }).client_id;

        for (let slot = 0; slot < CHAINS; slot++) slots.push(await newChain());

        // Revocations made before any kill, of three kinds.
        const reused = await authorizeOnce(browser);
        const rotated = (await (await refresh(reused.refresh_token)).json()) as TokenBody;
        // Its successor used, the token presented again is a reuse, not the retry of a lost answer.
        const newest = (await (await refresh(rotated.refresh_token)).json()) as TokenBody;
        assert.equal((await refresh(reused.refresh_token)).status, 400, 'the reuse revokes the family');
        refused.push(
          { why: 'grant revoked by a reused refresh token', token: reused.access_token },
          { why: 'its rotation', token: rotated.access_token },
          { why: 'its newest rotation', token: newest.access_token },
        );
        const loggedOut = await authorizeOnce(browser);
        assert.equal((await post('/revoke', { token: loggedOut.refresh_token, token_type_hint: 'refresh_token', client_id: clientId })).status, 200);
        refused.push({ why: 'grant revoked by a logout', token: loggedOut.access_token });
        const single = await authorizeOnce(browser);
        const sibling = (await (await refresh(single.refresh_token)).json()) as TokenBody;
        assert.equal((await post('/revoke', { token: single.access_token, token_type_hint: 'access_token', client_id: clientId })).status, 200);
        refused.push({ why: 'access token revoked by itself', token: single.access_token });
        survivor = sibling.access_token;
        for (const { why, token } of refused) assert.equal(await mcpStatus(token), 401, `before any kill: ${why}`);
        assert.equal(await mcpStatus(survivor), 200);
        for (const chain of chains) assert.equal(await mcpStatus(chain.firstAccess), 200);
        kids = await jwksKids();
        assert.equal((await backend.rows(clientId)).grants.size, CHAINS + 3);
      });

      after(async () => {
        await server?.stop('SIGKILL');
        await backend?.cleanup();
      });

      /**
       * A token the client received is refused only when the request that presented it before was
       * cut off by a kill after its rotation committed: anything else is a committed rotation lost.
       */
      function assertRefusalsExplained(when: string): void {
        for (const a of attempts.filter((x) => x.outcome === 'refused')) {
          const cutOff = attempts.some((b) => b.chain === a.chain && b.token === a.token && b.outcome === 'no-answer' && b.epoch < a.epoch);
          assert.ok(cutOff, `${when}: chain ${a.chain}: a token the client received was refused (${a.detail}) with no crash to explain it (${seed})`);
        }
      }

      /** After each restart, before the clients go on: nothing lost so far; keys, access tokens and revocations as they were. */
      async function checkAfterRestart(kill: number): Promise<void> {
        spentAtRestart.set(kill, new Set((await backend.rows(clientId)).spent.keys()));
        assertRefusalsExplained(`kill ${kill}`);
        assert.deepEqual(await jwksKids(), kids, `kill ${kill}: the signing keys survived`);
        for (const chain of chains) {
          const expected = chain.ended ? 401 : 200;
          assert.equal(await mcpStatus(chain.firstAccess), expected, `kill ${kill}: chain ${chain.index}'s first access token (${seed})`);
          assert.equal(await mcpStatus(chain.access.at(-1)!), expected, `kill ${kill}: chain ${chain.index}'s latest access token (${seed})`);
        }
        for (const { why, token } of refused) assert.equal(await mcpStatus(token), 401, `kill ${kill}: still refused: ${why}`);
        assert.equal(await mcpStatus(survivor), 200, `kill ${kill}: the revoked access token's sibling still accepted`);
      }

      /**
       * One client: refreshes in a closed loop until told to stop; after no answer, retries the same
       * token once serve is back; once refused, waits for the next restart to be given a new grant.
       */
      async function runClient(slot: number, gate: Gate, stopping: { now: boolean }): Promise<void> {
        while (!stopping.now) {
          await gate.wait();
          const chain = slots[slot]!;
          if (chain.ended) {
            await gate.next();
            continue;
          }
          if (stopping.now) return;
          const attempt: Attempt = { chain: chain.index, token: current(chain), epoch: kills };
          attempts.push(attempt);
          let status: number;
          let body: TokenBody;
          try {
            const response = await refresh(attempt.token);
            status = response.status;
            body = (await response.json()) as TokenBody;
          } catch (error) {
            const cause = (error as Error & { cause?: { code?: string } }).cause;
            attempt.detail = `${(error as Error).name}: ${cause?.code ?? (error as Error).message}`;
            // A timeout is a server that hung, not one that died.
            attempt.outcome = (error as Error).name === 'TimeoutError' ? 'unexpected' : 'no-answer';
            if (attempt.outcome === 'unexpected') chain.ended = attempt;
            continue;
          }
          if (status === 200) {
            attempt.outcome = 'ok';
            attempt.next = body.refresh_token;
            chain.received.push(body.refresh_token);
            chain.access.push(body.access_token);
          } else {
            attempt.outcome = status === 400 && body.error === 'invalid_grant' ? 'refused' : 'unexpected';
            attempt.detail = `${status} ${body.error}: ${body.error_description}`;
            chain.ended = attempt;
          }
        }
      }

      const restarts: { exitMs: number; startMs: number; inFlight: number }[] = [];
      /** The spent records' keys at each restart (by kill), read before any client went on: what had committed. */
      const spentAtRestart = new Map<number, Set<string>>();

      it(`keeps serving through ${KILLS} ${signal}s under load: quick clean restarts, keys and revocations intact`, async (t) => {
        t.diagnostic(`${seed}`);
        const gate = new Gate();
        const stopping = { now: false };
        const loops = slots.map((_, slot) => runClient(slot, gate, stopping));
        try {
          for (let kill = 1; kill <= KILLS; kill++) {
            await sleep(LOAD_MS[0] + random() * (LOAD_MS[1] - LOAD_MS[0]));
            gate.close();
            const inFlight = attempts.filter((a) => a.outcome === undefined).length;
            const killed = server!;
            const killedAt = performance.now();
            assert.equal(await killed.stop(signal), exitCode, `kill ${kill}: the exit after ${signal}`);
            const exitMs = performance.now() - killedAt;
            kills = kill;
            assert.doesNotMatch(killed.output(), TROUBLE, `kill ${kill}: the killed process's output`);
            const startedAt = performance.now();
            server = await start();
            const startMs = performance.now() - startedAt;
            assert.equal(server.issuer, issuer);
            restarts.push({ exitMs, startMs, inFlight });
            // A few seconds, with room for a busy machine: a stop waiting out its drain deadline, or a
            // start waiting on a lock, takes longer.
            assert.ok(exitMs < 5000, `kill ${kill}: exited ${exitMs.toFixed(0)} ms after ${signal}`);
            assert.ok(startMs < 8000, `kill ${kill}: restart took ${startMs.toFixed(0)} ms`);
            await checkAfterRestart(kill);
            // The clients whose sessions were lost sign in again (the browser's session makes it immediate).
            for (const [slot, chain] of slots.entries()) if (chain.ended) slots[slot] = await newChain();
            gate.open();
          }
          await sleep(TAIL_MS);
        } finally {
          stopping.now = true;
          gate.open();
          await Promise.all(loops);
        }
        assert.doesNotMatch(server!.output(), TROUBLE, "the last restart's output");
        const ok = attempts.filter((a) => a.outcome === 'ok').length;
        const afterLastKill = attempts.filter((a) => a.epoch === KILLS && a.outcome === 'ok').length;
        t.diagnostic(`${attempts.length} token requests, ${ok} rotations answered 200, ${afterLastKill} of them after the last restart`);
        for (const [i, r] of restarts.entries()) {
          t.diagnostic(`kill ${i + 1}: ${r.inFlight} requests in flight; exit ${r.exitMs.toFixed(0)} ms, restart ${r.startMs.toFixed(0)} ms`);
        }
        assert.ok(afterLastKill > 0, 'refreshes go on after the last restart');
      });

      it('answers every request with 200, invalid_grant or (only at a kill) nothing: no 5xx, no 429, no hang', () => {
        const unexpected = attempts.filter((a) => a.outcome === 'unexpected');
        assert.deepEqual(
          unexpected.map((a) => a.detail),
          [],
          seed,
        );
        // Outside a kill, a request without an answer would be a connection the server dropped.
        const stray = attempts.filter(
          (a) => a.outcome === 'no-answer' && !attempts.some((b) => b.chain === a.chain && b.token === a.token && b.epoch > a.epoch),
        );
        assert.deepEqual(
          stray.map((a) => `chain ${a.chain}, epoch ${a.epoch}: ${a.detail}`),
          [],
          `every unanswered request was followed by a restart and a retry (${seed})`,
        );
      });

      it("spends no refresh token twice: one 200 per token, and each family's only live token is its client's", async () => {
        const answered = new Map<string, number>();
        for (const a of attempts) if (a.outcome === 'ok') answered.set(a.token, (answered.get(a.token) ?? 0) + 1);
        const twice = [...answered].filter(([, n]) => n > 1);
        assert.equal(twice.length, 0, `${twice.length} refresh tokens were answered 200 more than once (${seed})`);

        const rows = await backend.rows(clientId);
        for (const chain of chains) {
          const grant = grantOf(chain, rows);
          const live = [...rows.live].filter(([, g]) => g === grant).map(([hash]) => hash);
          if (!chain.ended) {
            assert.deepEqual(live, [hashSecret(current(chain))], `chain ${chain.index}: the client's token is its family's only live one (${seed})`);
          } else {
            // The response that carried the family's newest token was lost with the process.
            assert.equal(live.length, 1, `chain ${chain.index} (ended): one live token, the one never delivered (${seed})`);
            assert.ok(!chain.received.some((token) => hashSecret(token) === live[0]));
          }
        }
      });

      it('loses nothing committed: every token received is live or spent in its family, and refused only after a lost answer', async () => {
        assertRefusalsExplained('after the run');
        const rows = await backend.rows(clientId);
        assert.equal(rows.grants.size, chains.length + 3, 'every grant is there, and no other');
        for (const chain of chains) {
          const grant = grantOf(chain, rows);
          const hashes = chain.received.map(hashSecret);
          const last = hashes.at(-1)!;
          for (const hash of hashes.slice(0, -1)) {
            assert.equal(rows.spent.get(spentKey(hash)), grant, `chain ${chain.index}: a rotation answered 200 is recorded as spent (${seed})`);
            assert.ok(!rows.live.has(hash));
          }
          if (chain.ended) {
            assert.equal(rows.spent.get(spentKey(last)), grant, `chain ${chain.index}: the cut-off rotation had committed (${seed})`);
            assert.equal(rows.grants.get(grant), true, `chain ${chain.index}: and the retry revoked the grant`);
          } else {
            assert.equal(rows.live.get(last), grant, `chain ${chain.index}: the client's token is live (${seed})`);
            assert.equal(rows.grants.get(grant), false);
          }
          // Spent records: one per rotation answered 200 (plus the cut-off one that ended the chain),
          // each naming the token the client received next: a retry of a rotation whose answer a
          // kill lost is answered with that rotation's token, so no token goes unseen.
          const ofGrant = [...rows.spent].filter(([, g]) => g === grant).map(([key]) => key);
          const receivedKeys = new Set(hashes.map((hash) => spentKey(hash)));
          assert.deepEqual(
            ofGrant.filter((key) => !receivedKeys.has(key)),
            [],
            `chain ${chain.index}: every spent token is one the client received (${seed})`,
          );
          for (const [i, hash] of hashes.slice(0, -1).entries()) {
            assert.equal(
              rows.successors.get(spentKey(hash)),
              spentKey(hashes[i + 1]!),
              `chain ${chain.index}: each spent record names the token received next (${seed})`,
            );
          }
          assert.equal(ofGrant.length, hashes.length - 1 + (chain.ended ? 1 : 0), `chain ${chain.index}: spent records match its rotations (${seed})`);
        }

        // Black box, after the last restart: each client's token still refreshes, the user signs in anew.
        for (const chain of chains.filter((c) => !c.ended)) {
          const response = await refresh(current(chain));
          assert.equal(response.status, 200, `chain ${chain.index}: the token it holds still refreshes (${seed})`);
          const body = (await response.json()) as TokenBody;
          chain.received.push(body.refresh_token);
          chain.access.push(body.access_token);
        }
        const stranger = new Browser((path, init) => fetch(new URL(path, issuer), init));
        const fresh = await authorizeOnce(stranger);
        assert.equal(await mcpStatus(fresh.access_token), 200, 'a new sign-in with the password, for the same client');
      });

      const cutOffTitle = graceful
        ? 'a graceful stop answers every request it began: one without an answer was never begun, and its retry gets 200'
        : 'a request cut off by a kill: retried with the same token, answered 200 whether or not its rotation had committed: no one is signed out';
      it(cutOffTitle, async (t) => {
        const cutOff = attempts.filter((a) => a.outcome === 'no-answer');
        // The first answer to a token after its request was cut off (once, or again by the next kill).
        const retries = new Set<Attempt>();
        const tally = { rotated: 0, retried: 0, refused: 0, none: 0 };
        for (const a of cutOff) {
          const retry = attempts.find((b) => b.chain === a.chain && b.token === a.token && b.epoch > a.epoch && b.outcome !== 'no-answer');
          if (retry) retries.add(retry);
          else tally.none++;
        }
        // The retried token's spent record names the token the retry's answer carried, whether the
        // retry rotated it (the cut-off request had not committed) or a cut-off request had (its
        // answer lost) and the retry was answered with the token that rotation issued.
        const rows = await backend.rows(clientId);
        for (const retry of retries) {
          if (retry.outcome === 'ok') {
            const key = spentKey(hashSecret(retry.token));
            assert.equal(
              rows.successors.get(key),
              spentKey(hashSecret(retry.next!)),
              `chain ${retry.chain}: the retry's answer is the token's successor (${seed})`,
            );
            if (spentAtRestart.get(retry.epoch)?.has(key)) tally.retried++;
            else tally.rotated++;
          } else {
            assert.equal(retry.outcome, 'refused', `chain ${retry.chain}: ${retry.detail}`);
            tally.refused++;
          }
        }
        assert.equal(tally.none, 0, 'every cut-off request was retried');
        const ended = chains.filter((c) => c.ended).length;
        assert.equal(tally.refused, 0, `${signal}: ${tally.refused} retries of a cut-off refresh refused, ${ended} people signed out (${seed})`);
        assert.equal(ended, 0, 'no chain ends: no one is signed out');
        // A graceful stop finishes what it started: a request it took on is answered, or was never begun.
        if (graceful) assert.equal(tally.retried, 0, `${signal}: a rotation committed and its answer dropped (${seed})`);
        t.diagnostic(
          `${cutOff.length} requests cut off by ${KILLS} ${signal}s, ${retries.size} tokens retried: ${tally.rotated} rotated (not committed before), ` +
            `${tally.retried} answered, as the retry of a committed rotation whose answer was lost, with that rotation's token: ${ended} sessions lost, of ${chains.length} grants refreshed`,
        );
      });

      it('a spent token replayed after the restarts still revokes its family, at /mcp at once', async () => {
        for (const chain of chains.filter((c) => !c.ended)) {
          // The token the chain spent last before the final kill: its spent record went through a crash.
          const spent = attempts.filter((a) => a.chain === chain.index && a.outcome === 'ok' && a.epoch < KILLS).at(-1)?.token ?? chain.received[0]!;
          const replay = await refresh(spent);
          assert.equal(replay.status, 400, `chain ${chain.index}: a spent token is refused (${seed})`);
          assert.equal(((await replay.json()) as TokenBody).error, 'invalid_grant');
          assert.equal((await refresh(current(chain))).status, 400, `chain ${chain.index}: the family is revoked`);
          assert.equal(await mcpStatus(chain.access.at(-1)!), 401, `chain ${chain.index}: its access token is refused`);
        }
      });

      it('leaves a sound database after a final SIGKILL', async () => {
        assert.equal(await server!.stop('SIGKILL'), null);
        assert.deepEqual(await backend.afterCrash(), []);
      });
    });
  }

/** The grant a chain's tokens belong to, from the first token's live or spent row; every token must agree. */
function grantOf(chain: Chain, rows: Rows): string {
  const grants = new Set(chain.received.map((token) => rows.live.get(hashSecret(token)) ?? rows.spent.get(spentKey(hashSecret(token)))));
  assert.equal(grants.size, 1, `chain ${chain.index}: its tokens belong to one grant, found ${[...grants].join(', ')}`);
  const [grant] = grants;
  assert.ok(grant, `chain ${chain.index}: its tokens are in the store`);
  return grant;
}
