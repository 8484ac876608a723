/**
 * The rate limiters themselves: a token bucket per key that refills continuously, allows a burst,
 * says exactly how long to wait, and forgets the least recently seen keys beyond a bound; the
 * store-backed limiter that replicas share, leasing tokens from the store and refusing a flood
 * from memory.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MemoryRateLimiter } from '../../src/authorization-server/rate-limit/memory-limiter.js';
import { StoreRateLimiter, leaseSize } from '../../src/authorization-server/rate-limit/store-limiter.js';
import { DEFAULT_RATE_LIMITS, resolveRateLimits } from '../../src/authorization-server/rate-limit/limits.js';
import { createMemoryStore } from '../../src/store/memory.js';
import type { FullStore } from '../../src/store/store.js';

const T0 = 1_800_000_000_000;

describe('memory token bucket', () => {
  it('allows the burst at once, then refuses with the exact wait until the next token', () => {
    const clock = { ms: T0 };
    const limiter = new MemoryRateLimiter({ burst: 3, perMinute: 6 }, () => clock.ms, 100);
    for (let i = 0; i < 3; i++) assert.deepEqual(limiter.take('a'), { allowed: true });
    // 6 a minute is one every 10 s.
    assert.deepEqual(limiter.take('a'), { allowed: false, retryAfter: 10 });
    clock.ms += 4_000;
    assert.deepEqual(limiter.take('a'), { allowed: false, retryAfter: 6 }, 'refused requests spend nothing');
    clock.ms += 5_500;
    assert.deepEqual(limiter.take('a'), { allowed: false, retryAfter: 1 }, 'rounded up: never "retry after 0"');
    clock.ms += 500;
    assert.deepEqual(limiter.take('a'), { allowed: true });
    assert.equal(limiter.take('a').allowed, false);
  });

  it('refills at the rate, never beyond the burst', () => {
    const clock = { ms: T0 };
    const limiter = new MemoryRateLimiter({ burst: 2, perMinute: 60 }, () => clock.ms, 100);
    limiter.take('a');
    limiter.take('a');
    clock.ms += 3_600_000;
    assert.equal(limiter.take('a').allowed, true);
    assert.equal(limiter.take('a').allowed, true);
    assert.equal(limiter.take('a').allowed, false, 'an hour idle still only refills the burst');
  });

  it('keys are separate buckets', () => {
    const limiter = new MemoryRateLimiter({ burst: 1, perMinute: 1 }, () => T0, 100);
    assert.equal(limiter.take('a').allowed, true);
    assert.equal(limiter.take('a').allowed, false);
    assert.equal(limiter.take('b').allowed, true);
  });

  it('a clock set back refills nothing', () => {
    const clock = { ms: T0 };
    const limiter = new MemoryRateLimiter({ burst: 1, perMinute: 60 }, () => clock.ms, 100);
    limiter.take('a');
    clock.ms -= 60_000;
    assert.equal(limiter.take('a').allowed, false);
  });

  it('memory is bounded: an attacker rotating addresses keeps at most the bound, forgetting the least recently seen', () => {
    const limiter = new MemoryRateLimiter({ burst: 1, perMinute: 1 }, () => T0, 1000);
    limiter.take('victim-drained');
    for (let i = 0; i < 50_000; i++) limiter.take(`attacker-${i}`);
    assert.equal(limiter.size, 1000);
    // The recently seen are remembered: the last attacker address is still drained.
    assert.equal(limiter.take('attacker-49999').allowed, false);
  });
});

/** The memory store, counting the round trips the limiter makes to it. */
function countingStore(): { store: FullStore; calls: () => number } {
  const store = createMemoryStore();
  let calls = 0;
  const take = store.takeRateTokens.bind(store);
  store.takeRateTokens = (request) => {
    calls++;
    return take(request);
  };
  return { store, calls: () => calls };
}

describe('store-backed limiter (shared by replicas)', () => {
  it('leases: a burst of 300 asks the store once per 10 requests; a flood is then refused from memory', async () => {
    const { store, calls } = countingStore();
    const clock = { ms: T0 };
    const limiter = new StoreRateLimiter(
      store,
      'token',
      { burst: 300, perMinute: 600 },
      () => clock.ms,
      100,
      () => {},
    );
    assert.equal(leaseSize({ burst: 300, perMinute: 600 }), 10);
    let allowed = 0;
    for (let i = 0; i < 1000; i++) if ((await limiter.take('a')).allowed) allowed++;
    assert.equal(allowed, 300);
    assert.ok(calls() <= 31, `${calls()} store round trips`);
    const refused = await limiter.take('a');
    assert.deepEqual(refused, { allowed: false, retryAfter: 1 }, '10 a second: the next token in 0.1 s');
    clock.ms += 1000;
    const before = calls();
    allowed = 0;
    for (let i = 0; i < 100; i++) if ((await limiter.take('a')).allowed) allowed++;
    assert.equal(allowed, 10, 'a second refills 10');
    assert.ok(calls() - before <= 3);
  });

  it('two limiters on one store (two replicas) share the budget exactly when leases are single', async () => {
    const store = createMemoryStore();
    const limit = { burst: 5, perMinute: 1 };
    const a = new StoreRateLimiter(
      store,
      'register',
      limit,
      () => T0,
      100,
      () => {},
    );
    const b = new StoreRateLimiter(
      store,
      'register',
      limit,
      () => T0,
      100,
      () => {},
    );
    let allowed = 0;
    for (let i = 0; i < 20; i++) if ((await (i % 2 ? a : b).take('x')).allowed) allowed++;
    assert.equal(allowed, 5);
    const refused = await a.take('x');
    assert.deepEqual(refused, { allowed: false, retryAfter: 60 });
  });

  it('concurrent requests for one address share one lease request', async () => {
    const { store, calls } = countingStore();
    const limiter = new StoreRateLimiter(
      store,
      'register',
      { burst: 3, perMinute: 1 },
      () => T0,
      100,
      () => {},
    );
    const decisions = await Promise.all(Array.from({ length: 10 }, () => limiter.take('x')));
    assert.equal(decisions.filter((d) => d.allowed).length, 3);
    assert.ok(calls() <= 4, `${calls()} store round trips`);
  });

  it('a store that fails lets requests through (no 5xx from the limiter) and says so in the log', async () => {
    const store = createMemoryStore();
    store.takeRateTokens = () => Promise.reject(new Error('database down'));
    const log: Record<string, unknown>[] = [];
    const limiter = new StoreRateLimiter(
      store,
      'token',
      { burst: 1, perMinute: 1 },
      () => T0,
      100,
      (event) => log.push(event),
    );
    assert.deepEqual(await limiter.take('x'), { allowed: true });
    assert.equal(log[0]?.event, 'rate_limit_unavailable');
  });

  it('memory is bounded here too', async () => {
    const limiter = new StoreRateLimiter(
      createMemoryStore(),
      'register',
      { burst: 1, perMinute: 1 },
      () => T0,
      100,
      () => {},
    );
    for (let i = 0; i < 1000; i++) await limiter.take(`a${i}`);
    assert.equal(limiter.size, 100);
  });
});

describe('limit options', () => {
  it('defaults; a limit turned off; shared follows the store unless told', () => {
    const resolved = resolveRateLimits({ token: false, register: { burst: 2, perMinute: 0.5 } }, true);
    assert.deepEqual(resolved.limits, {
      register: { burst: 2, perMinute: 0.5 },
      token: null,
      signIn: DEFAULT_RATE_LIMITS.signIn,
      clientDocument: DEFAULT_RATE_LIMITS.clientDocument,
      clientDocumentTotal: DEFAULT_RATE_LIMITS.clientDocumentTotal,
      gateway: DEFAULT_RATE_LIMITS.gateway,
    });
    assert.equal(resolved.shared, true);
    assert.equal(resolveRateLimits({ shared: false }, true).shared, false);
    assert.equal(resolveRateLimits({}, false).shared, false);
    assert.throws(() => resolveRateLimits({ register: { burst: 0, perMinute: 1 } }, false), /burst/);
    assert.throws(() => resolveRateLimits({ token: { burst: 1, perMinute: 0 } }, false), /perMinute/);
  });
});
