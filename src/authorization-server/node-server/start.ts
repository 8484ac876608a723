/**
 * An authorization server running on a Node listener, which owns the order of its start and of its
 * stop, so that a program embedding it (and `serve`) writes neither.
 *
 * Start: listen (so that a default issuer can name the port picked; every request is answered 503
 * until the server is ready), build the server, create the workload rules' clients, make sure a
 * signing key exists, follow the store's revocations, resolve the identity providers (a provider
 * that cannot be reached is a warning: it is retried on use), serve, and sweep periodically. A
 * step that fails undoes what was started, the store included, and the start rejects naming it.
 *
 * Stop: no new connections, and the requests in flight finished (for a bounded time), since one
 * cut off after its refresh token rotated would lose the new token, and the client's retry with
 * the old one would revoke its whole grant as a reuse; then the sweeps, the revocation feed, the
 * audit events still waiting (written while the store is open), and the store. Every step runs
 * even when one before it failed, and the stop rejects once, naming each that did.
 */
import type { Server } from 'node:http';
import { normalizeIssuer } from '../../core/uri.js';
import { auditRecord } from '../audit.js';
import type { AuthorizationServerOptions } from '../config.js';
import type { Store } from '../../store/store.js';
import { createListener, type FetchApp, type ListenOptions } from './listener.js';
import { periodicSweep, type PeriodicSweep } from './periodic-sweep.js';

/** How often expired rows are swept by default. */
export const SWEEP_INTERVAL_MS = 10 * 60 * 1000;

/** What the lifecycle needs of the server it runs (createAuthorizationServer's). */
export interface Startable {
  app: FetchApp;
  keys: { publicJwks(): Promise<unknown> };
  revocations: { start(): Promise<void>; stop(): Promise<void> };
  workloadClientsReady(): Promise<void>;
  upstreamReady(): Promise<void>;
  sweep(options: { signal: AbortSignal }): Promise<number>;
  close(): Promise<void>;
}

/** createAuthorizationServer's options, but the client address (the socket's peer), and how to run it. */
export interface StartOptions<S extends Startable> extends Omit<AuthorizationServerOptions, 'issuer' | 'resources' | 'clientAddress'> {
  /** The store, handed over: the server closes it when it stops, and when its start fails. */
  store: Store;
  /** The public URL. Default: the URL it listens at (`url`), which names the port picked when `listen.port` is 0. */
  issuer?: string;
  /** The context servers tokens may be issued for, or a function of the issuer (when it is not known before listening). */
  resources: string[] | ((issuer: string) => string[]);
  /** Where and how to listen (`serve`'s defaults). The client address is the socket's peer, `trustProxy` taken into account. */
  listen?: ListenOptions;
  /** What to serve, given the server: by default its own `app`; a Hono app that mounts it beside routes of yours, for instance. */
  app?: (server: S) => FetchApp;
  /** Milliseconds between sweeps of expired rows (a failure is logged as `sweep_failed`); 0 sweeps never. Default 10 minutes. */
  sweepIntervalMs?: number;
}

/** The step of a start that failed. */
export type StartStep = 'listen' | 'options' | 'workload-clients' | 'signing-keys' | 'revocations' | 'app';

const STEP_WORDS: Record<StartStep, string> = {
  listen: 'cannot listen',
  options: 'invalid options',
  'workload-clients': 'the workload clients',
  'signing-keys': 'the signing keys',
  revocations: 'the revocation feed',
  app: 'the app',
};

const messageOf = (error: unknown): string => (error instanceof Error ? error.message : String(error));

/**
 * A start that failed, after undoing what it had started: which step, why (`cause`), and what
 * went wrong while undoing, if anything did.
 */
export class StartError extends Error {
  constructor(
    readonly step: StartStep,
    cause: unknown,
    readonly undoErrors: readonly Error[] = [],
  ) {
    const undo = undoErrors.length > 0 ? `; undoing the start failed too: ${undoErrors.map((error) => error.message).join('; ')}` : '';
    super(`${STEP_WORDS[step]}: ${messageOf(cause)}${undo}`, { cause });
    this.name = 'StartError';
  }
}

/** The running server: the server's own parts, where it listens, and the one stop. */
export type Running<S extends Startable> = Omit<S, 'close'> & {
  /** `http(s)://host:port`, where it listens (the port as picked). */
  url: string;
  /** The Node server, for what the options do not cover. */
  httpServer: Server;
  /** Stops in order (above) and closes the store; resolves once stopped. Calling it again returns the same stop. */
  close(): Promise<void>;
  /** `close()`, for `await using`. */
  [Symbol.asyncDispose](): Promise<void>;
};

type Step = readonly [name: string, run: () => unknown];

/** Runs every step in order, whatever the ones before did; the failures, each naming its step. */
async function runAll(steps: readonly Step[]): Promise<Error[]> {
  const errors: Error[] = [];
  for (const [name, run] of steps) {
    try {
      await run();
    } catch (error) {
      errors.push(new Error(`${name}: ${messageOf(error)}`, { cause: error }));
    }
  }
  return errors;
}

// The disposal symbol where the runtime has it (Node from 20.4), else the registered one that
// transpilers' `using` falls back on.
const asyncDispose: typeof Symbol.asyncDispose = Symbol.asyncDispose ?? (Symbol.for('Symbol.asyncDispose') as typeof Symbol.asyncDispose);

export async function startOnNode<S extends Startable>(create: (options: AuthorizationServerOptions) => S, options: StartOptions<S>): Promise<Running<S>> {
  const { listen = {}, app: appOf, sweepIntervalMs = SWEEP_INTERVAL_MS, issuer, resources, ...serverOptions } = options;
  const { store } = options;
  const listener = createListener(listen, options.trustProxy ?? []);
  // What has been started so far, for the stop.
  const parts: { server?: S; sweeper?: PeriodicSweep } = {};

  const stop = async (): Promise<Error[]> => {
    const { server, sweeper } = parts;
    // A running sweep is told now, and ends after its batch in flight while connections drain.
    const sweepsStopped = sweeper?.stop();
    return runAll([
      ['connections', () => listener.drain()],
      ['sweeps', () => sweepsStopped],
      ['revocation feed', () => server?.revocations.stop()],
      ['audit events', () => server?.close()],
      ['store', () => store.close()],
    ]);
  };
  const attempt = async <T>(step: StartStep, run: () => T | Promise<T>): Promise<T> => {
    try {
      return await run();
    } catch (error) {
      throw new StartError(step, error, await stop());
    }
  };

  await attempt('listen', () => listener.listen());
  const started = await attempt('options', () => {
    const resolvedIssuer = normalizeIssuer(issuer ?? listener.url);
    return create({
      ...serverOptions,
      issuer: resolvedIssuer,
      resources: typeof resources === 'function' ? resources(resolvedIssuer) : resources,
      clientAddress: listener.clientAddress,
    });
  });
  parts.server = started;
  // The clients workload rules name, made now so that they are listed before their first token.
  await attempt('workload-clients', () => started.workloadClientsReady());
  // The first signing key, made now rather than on the first request.
  await attempt('signing-keys', () => started.keys.publicJwks());
  // Revoked tokens are refused at once: this process's before the response, other processes'
  // (the CLI, replicas) within a second (SQLite) or at once (PostgreSQL).
  await attempt('revocations', () => started.revocations.start());
  // Discovery now, so a mistyped provider shows at start; one that is down is retried on use.
  await started.upstreamReady().catch((error: unknown) => console.warn(`warning: ${messageOf(error)}`));
  const app = await attempt('app', () => (appOf ? appOf(started) : started.app));
  listener.serve(app);
  if (sweepIntervalMs > 0) {
    parts.sweeper = periodicSweep(started.sweep, sweepIntervalMs, (error) =>
      options.log?.(auditRecord({ event: 'sweep_failed', message: messageOf(error) }, Date.now())),
    );
  }

  let stopping: Promise<void> | undefined;
  const close = (): Promise<void> =>
    (stopping ??= stop().then((errors) => {
      if (errors.length > 0) throw new AggregateError(errors, `stopping the authorization server: ${errors.map((error) => error.message).join('; ')}`);
    }));
  return { ...started, url: listener.url, httpServer: listener.server, close, [asyncDispose]: close };
}
