import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { clientDocumentLimitsBanner, parseRateLimit, rateLimitBanner, rateLimitOptions, trustProxyOption } from '../../src/cli/rate-limit-options.js';

describe('serve --rate-limit and --trust-proxy', () => {
  it('N/unit sets the rate and a burst of N; ,burst=B sets the burst; off turns a limit off', () => {
    assert.deepEqual(parseRateLimit('register=20/hour'), ['register', { perMinute: 20 / 60, burst: 20 }]);
    assert.deepEqual(parseRateLimit('token=1200/minute,burst=600'), ['token', { perMinute: 1200, burst: 600 }]);
    assert.deepEqual(parseRateLimit('sign-in=2/s'), ['sign-in', { perMinute: 120, burst: 2 }]);
    assert.deepEqual(parseRateLimit('register=0.5/min'), ['register', { perMinute: 0.5, burst: 1 }], 'a fraction: at least a burst of one');
    assert.deepEqual(parseRateLimit('sign-in=off'), ['sign-in', false]);
    assert.deepEqual(rateLimitOptions(['sign-in=off', 'token=10/second']), { signIn: false, token: { perMinute: 600, burst: 10 } });
    assert.deepEqual(rateLimitOptions(['client-document=10/hour', 'client-document-total=off']), {
      clientDocument: { perMinute: 10 / 60, burst: 10 },
      clientDocumentTotal: false,
    });
    assert.deepEqual(rateLimitOptions(['gateway=120/minute,burst=30']), { gateway: { perMinute: 120, burst: 30 } });
  });

  it('anything else is a usage error (exit code 2) naming the flag', () => {
    for (const flag of [
      'login=1/min',
      'register',
      'register=',
      'register=10',
      'register=10/fortnight',
      'register=0/min',
      'register=-1/min',
      'token=10/min,burst=0',
      'token=10/min,burst=2000000',
      'token=10/min,bust=5',
    ]) {
      assert.throws(
        () => parseRateLimit(flag),
        (error: Error & { exitCode?: number }) => error.exitCode === 2 && /--rate-limit/.test(error.message),
        flag,
      );
    }
  });

  it('--trust-proxy: repeatable and comma-separated; checked at start', () => {
    assert.deepEqual(trustProxyOption(['10.0.0.0/8, 192.0.2.1', '::1']), ['10.0.0.0/8', '192.0.2.1', '::1']);
    assert.deepEqual(trustProxyOption(undefined), []);
    assert.throws(
      () => trustProxyOption(['10.0.0.0/8,lb.internal']),
      (error: Error & { exitCode?: number }) => error.exitCode === 2 && /"lb\.internal"/.test(error.message),
    );
  });

  it('the banner says what is limited, and where the buckets live', () => {
    assert.equal(
      rateLimitBanner({ token: false }, true, ['10.0.0.0/8']),
      'register 1/min,burst=30, token off, sign-in 60/min,burst=60 per address (shared by replicas); X-Forwarded-For from 10.0.0.0/8',
    );
    assert.equal(clientDocumentLimitsBanner({}), 'new ones 1/min,burst=30 per address, 1/min,burst=100 in all');
    assert.equal(
      clientDocumentLimitsBanner({ clientDocument: { perMinute: 0.5, burst: 5 }, clientDocumentTotal: false }),
      'new ones 0.5/min,burst=5 per address, off in all',
    );
  });
});
