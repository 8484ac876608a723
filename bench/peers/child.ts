/**
 * What every server under test shares, run in its own process: it tells the driver where it
 * listens and what to refresh (one marked line of JSON on stdout), and answers the driver's questions
 * about its own CPU time and RSS over the IPC channel, so no HTTP route is added to the servers
 * and the answer costs the server nothing while the load runs.
 */
import type { DpopKeyPair } from '../../src/core/index.js';

export interface Ready {
  port: number;
  clientId: string;
  /** One refresh token per concurrent chain. */
  refreshTokens: string[];
  /** Path of the token endpoint; `/token` when absent. */
  tokenPath?: string;
  /** Extra form fields the refresh request carries (e.g. `resource`). */
  extra?: Record<string, string>;
  /** A peer's SQLite settings as its connection reports them (`PRAGMA journal_mode`, `synchronous`), for the README's claims. */
  sqlite?: { journalMode: string; synchronous: number };
  /** Present when started with BENCH_FLOWS=1: what a reconnecting client's browser holds. */
  flow?: FlowSetup;
  /** Present when started with BENCH_MACHINE_JWK: the clients of the machine-grants bench. */
  machine?: MachineSetup;
  /** Present when started with BENCH_DPOP_KEY: chains of refresh tokens bound to that DPoP key, and the `htu` of its proofs. */
  dpop?: { tokenUrl: string; refreshTokens: string[] };
}

/**
 * Two confidential clients allowed the client_credentials grant, registered before the server
 * listens: one with a secret (client_secret_basic), one with the load generator's public key
 * (private_key_jwt), so the load generator signs the assertions.
 */
export interface MachineSetup {
  /** What an assertion's `aud` names: the server's issuer identifier. */
  audience: string;
  resource: string;
  scope: string;
  secretClient: { clientId: string; secret: string };
  keyClientId: string;
  /**
   * When the server trusts the load generator as an assertion issuer (BENCH_ASSERTION_ISSUER): the
   * workload client its workload tokens map to. The secret client may then present ID-JAGs too.
   */
  workloadClientId?: string;
}

/**
 * A signed-in person whose consent is remembered, one per chain: /authorize with the chain's
 * cookies answers with a redirect carrying a code, no page.
 */
export interface FlowSetup {
  /** Path of the authorization endpoint (`/authorize`, oidc-provider's `/auth`). */
  authorizePath: string;
  redirectUri: string;
  scope: string;
  resource: string;
  /** One Cookie header per chain (a browser each), or none when the server needs no person. */
  cookies: string[];
  /** For a first sign-in (ours only): the person's username and password. */
  user?: { username: string; password: string };
}

export interface Usage {
  /** User + system CPU time of this process, µs. */
  cpu: number;
  rss: number;
  /** V8's heap in use and reserved, and memory held outside it (Buffers, native objects), bytes. */
  heapUsed?: number;
  heapTotal?: number;
  external?: number;
  /** CPU time of the database server's backends serving this process, µs, when it can be read. */
  dbCpu?: number;
}

/** How many chains the driver runs at once; each server makes one refresh token per chain. */
export const chains = (): number => Number(process.env.BENCH_CHAINS ?? 16);

/** Set by the flows bench: the server also prepares signed-in sessions with remembered consent. */
export const flowsWanted = (): boolean => process.env.BENCH_FLOWS === '1';

/** Set by the machine-grants bench: the load generator's public key (a JWK), for the private_key_jwt client. */
export function machineJwk(): Record<string, unknown> | undefined {
  const jwk = process.env.BENCH_MACHINE_JWK;
  return jwk ? (JSON.parse(jwk) as Record<string, unknown>) : undefined;
}

/** Set by the refresh bench: the load generator's DPoP key pair (core/dpop.ts DpopKeyPair, JSON), for chains bound to it. */
export function dpopKeyPair(): DpopKeyPair | undefined {
  const pair = process.env.BENCH_DPOP_KEY;
  return pair ? (JSON.parse(pair) as DpopKeyPair) : undefined;
}

/** The issuer the load generator serves (discovery and keys) for the jwt-bearer rows, if any. */
export function assertionIssuer(): string | undefined {
  return process.env.BENCH_ASSERTION_ISSUER || undefined;
}

/** Marks the one stdout line the driver reads. */
export const READY = 'bench-ready ';

/** `dbCpu`, when given, reads the database server's CPU time for this process's connections. */
export function announce(ready: Ready, close: () => Promise<void> | void, dbCpu?: () => Promise<number | undefined>): void {
  process.on('message', (message) => {
    if (message !== 'usage') return;
    const { user, system } = process.cpuUsage();
    const { rss, heapUsed, heapTotal, external } = process.memoryUsage();
    const usage: Usage = { cpu: user + system, rss, heapUsed, heapTotal, external };
    void (dbCpu?.() ?? Promise.resolve(undefined)).then((db) => process.send!({ ...usage, dbCpu: db } satisfies Usage));
  });
  process.on('disconnect', () => void Promise.resolve(close()).finally(() => process.exit(0)));
  process.on('SIGTERM', () => void Promise.resolve(close()).finally(() => process.exit(0)));
  // A marked line: a peer may write its own notices to stdout too.
  process.stdout.write(`${READY}${JSON.stringify(ready)}\n`);
}
