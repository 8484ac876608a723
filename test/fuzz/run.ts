/**
 * The fuzz run: starts the target on a fresh store, builds the corpus with real flows, then sends
 * `count` generated requests over loopback, a few at a time, and judges every answer (check.ts).
 * Step N's request comes from its own generator seeded by (seed, N), so a failure names the seed
 * and the step, and `npm run fuzz -- --seed S --count N+1 --store <store>` runs up to it again
 * (the requests are the same; the tokens and codes in them are new ones from the same flows).
 * Besides the answers it watches the process: an unhandled rejection or uncaught exception, an
 * `internal_error` in the server's log, or the server no longer listening is a failure too.
 */
import { CorpusBuilder, type Corpus } from './corpus.js';
import { startDocumentServer } from './documents.js';
import { generate } from './generators.js';
import { describeRequest, encodeRequest, exchange, type FuzzRequest, type FuzzResponse } from './http.js';
import { problemWith } from './check.js';
import { Random, stepSeed } from './random.js';
import { startTarget } from './target.js';
import type { StoreKind } from '../helpers/stores.js';

export interface FuzzOptions {
  store: StoreKind;
  seed: number;
  count: number;
  /** Requests in flight at once. Default 6. */
  concurrency?: number;
  /** Steps between corpus refreshes (new code, tokens and pages). Default 250. */
  refreshEvery?: number;
  /** Stop after this many failures. Default 5. */
  maxFailures?: number;
  /** Seconds without an answer before a request counts as hung. Default 15. */
  timeoutSeconds?: number;
  progress?: (done: number, result: FuzzResult) => void;
}

export interface FuzzFailure {
  store: string;
  seed: number;
  /** The step whose request failed, or null for a crash not tied to one. */
  step: number | null;
  problem: string;
  request?: string;
  response?: string;
}

export interface FuzzResult {
  store: string;
  seed: number;
  requests: number;
  /** Answers by status (0: none). */
  statuses: Record<number, number>;
  /** Requests by what the generator meant (endpoint, message broken or not). */
  labels: Record<string, number>;
  /** Milliseconds spent per label, summed over the requests (the run's cost, by kind). */
  labelMs: Record<string, number>;
  corpusRefreshFailures: number;
  /** Why the last corpus refresh failed, if one did. */
  corpusRefreshError?: string;
  failures: FuzzFailure[];
  seconds: number;
}

function describeResponse(response: FuzzResponse | null): string {
  if (!response) return '(no answer)';
  const body = response.body.toString('utf8');
  return `HTTP ${response.status} ${response.headers.get('content-type') ?? '(no content-type)'}\n  ${body.length > 800 ? `${body.slice(0, 800)}…` : body}`;
}

/** One failure as a block to print: what, where, the replay command, the request and the answer. */
export function formatFailure(failure: FuzzFailure): string {
  const store = failure.store === 'PostgreSQL' ? 'postgres' : 'sqlite';
  const replay =
    failure.step === null
      ? `npm run fuzz -- --seed ${failure.seed} --store ${store}`
      : `npm run fuzz -- --seed ${failure.seed} --count ${failure.step + 1} --store ${store}`;
  return [
    `FUZZ FAILURE on ${failure.store}, seed ${failure.seed}${failure.step === null ? '' : `, step ${failure.step}`}: ${failure.problem}`,
    `replay: ${replay}`,
    ...(failure.request ? [`request: ${failure.request}`] : []),
    ...(failure.response ? [`answer: ${failure.response}`] : []),
  ].join('\n');
}

export async function runFuzz(options: FuzzOptions): Promise<FuzzResult> {
  const { seed, count } = options;
  const concurrency = options.concurrency ?? 6;
  const refreshEvery = options.refreshEvery ?? 250;
  const maxFailures = options.maxFailures ?? 5;
  const timeoutMs = (options.timeoutSeconds ?? 15) * 1000;
  const started = Date.now();
  const result: FuzzResult = {
    store: options.store.name,
    seed,
    requests: 0,
    statuses: {},
    labels: {},
    labelMs: {},
    corpusRefreshFailures: 0,
    failures: [],
    seconds: 0,
  };
  const fail = (failure: Omit<FuzzFailure, 'store' | 'seed'>) => {
    if (result.failures.length < maxFailures) result.failures.push({ store: result.store, seed, ...failure });
  };
  const onRejection = (reason: unknown) => fail({ step: null, problem: `unhandled rejection: ${reason instanceof Error ? reason.stack : String(reason)}` });
  const onException = (error: Error) => fail({ step: null, problem: `uncaught exception: ${error.stack}` });
  process.on('unhandledRejection', onRejection);
  process.on('uncaughtException', onException);

  const opened = await options.store.open();
  const documents = await startDocumentServer();
  // Requests on their way, by step: a bug the server only logs (its answer may never arrive, the
  // client having gone) is reported at the end of the batch with every request that could have
  // caused it — unless a 5xx answer, which names its request, came after it.
  const inFlight = new Map<number, FuzzRequest>();
  let logged: FuzzFailure[] = [];
  const target = await startTarget(opened.store, (event) => {
    const suspects = [...inFlight].map(([step, request]) => `step ${step}: ${describeRequest(request)}`).join('\n');
    logged.push({
      store: result.store,
      seed,
      step: Math.min(...inFlight.keys()),
      problem: `the server logged ${JSON.stringify(event)} while these were in flight`,
      request: suspects,
    });
  });
  const host = `127.0.0.1:${target.port}`;
  try {
    const builder = new CorpusBuilder(opened.store, target.issuer, target.resource, documents.base, target.upstreamIssuer);
    let corpus: Corpus = await builder.build();

    const sendStep = async (step: number): Promise<void> => {
      const r = new Random(stepSeed(seed, step));
      let request: FuzzRequest;
      try {
        request = generate(r, corpus);
      } catch (error) {
        fail({ step, problem: `the generator failed: ${(error as Error).stack}` });
        return;
      }
      const bytes = encodeRequest(request, host, () => 1 + r.int(64));
      inFlight.set(step, request);
      const sent = Date.now();
      const { response, timedOut } = await exchange(target.port, bytes, timeoutMs);
      inFlight.delete(step);
      result.labelMs[request.label] = (result.labelMs[request.label] ?? 0) + Date.now() - sent;
      result.requests++;
      const status = response?.status ?? 0;
      result.statuses[status] = (result.statuses[status] ?? 0) + 1;
      result.labels[request.label] = (result.labels[request.label] ?? 0) + 1;
      const problem = problemWith(request.method, request.target, response, timedOut);
      if (status >= 500) logged = [];
      if (problem) fail({ step, problem, request: describeRequest(request), response: describeResponse(response) });
    };

    for (let batch = 0; batch < count && result.failures.length < maxFailures; batch += refreshEvery) {
      if (batch > 0) {
        // The fuzz spends codes, rotates refresh tokens and revokes grants: mutate fresh ones.
        corpus = await builder.build().catch((error: unknown) => {
          result.corpusRefreshFailures++;
          result.corpusRefreshError = (error as Error).message;
          return corpus;
        });
      }
      let next = batch;
      const end = Math.min(count, batch + refreshEvery);
      const worker = async () => {
        while (next < end && result.failures.length < maxFailures) await sendStep(next++);
      };
      await Promise.all(Array.from({ length: concurrency }, worker));
      for (const failure of logged) fail(failure);
      logged = [];
      options.progress?.(end, result);
    }
    if (!target.listening()) fail({ step: null, problem: 'the server stopped listening' });
    // Still answering properly after all that.
    const { response } = await exchange(
      target.port,
      encodeRequest({ label: 'metadata', method: 'GET', target: '/.well-known/oauth-authorization-server', headers: [] }, host, () => 1),
      timeoutMs,
    );
    if (response?.status !== 200) fail({ step: null, problem: `the metadata endpoint no longer answers 200 after the run (${describeResponse(response)})` });
  } finally {
    await target.stop();
    await documents.stop();
    await opened.close();
    // A late rejection from the last requests still counts: give it a turn to arrive.
    await new Promise((resolve) => setImmediate(resolve));
    process.off('unhandledRejection', onRejection);
    process.off('uncaughtException', onException);
    result.seconds = (Date.now() - started) / 1000;
  }
  return result;
}
