/**
 * "fetch failed" explained: real fetches on loopback to a closed port and to an https server
 * whose certificate nobody trusts; the DNS failure is built like Node's own (tests make no DNS
 * lookups).
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { describe, it } from 'node:test';
import { describeNetworkFailure, failureReason } from '../../src/client/network-errors.js';
import { freePort } from '../e2e/serve-process.js';
import { selfSignedCertificate } from '../helpers/self-signed.js';

async function fetchError(url: string): Promise<unknown> {
  try {
    await fetch(url);
  } catch (error) {
    return error;
  }
  throw new Error(`${url} answered`);
}

describe('describeNetworkFailure', () => {
  it('a refused connection: could not connect to the address and port', async () => {
    const port = await freePort();
    const error = await fetchError(`http://127.0.0.1:${port}/mcp`);
    assert.equal((error as Error).message, 'fetch failed');
    assert.equal(describeNetworkFailure(error), `could not connect to 127.0.0.1:${port} (connection refused): is the server running, and on that port?`);
  });

  it('an untrusted certificate: names the problem and NODE_EXTRA_CA_CERTS', async () => {
    const { certPath, keyPath } = selfSignedCertificate();
    const server = createServer({ cert: readFileSync(certPath), key: readFileSync(keyPath) }, (_, response) => response.end('ok'));
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    try {
      const url = `https://127.0.0.1:${(server.address() as AddressInfo).port}/`;
      const message = describeNetworkFailure(await fetchError(url), url);
      assert.equal(
        message,
        `the TLS certificate of ${new URL(url).host} is not trusted: it is self-signed (DEPTH_ZERO_SELF_SIGNED_CERT); if it is yours, give its CA to Node with NODE_EXTRA_CA_CERTS=/path/to/ca.pem`,
      );
    } finally {
      server.close();
    }
  });

  it('a name that does not resolve: names the host', () => {
    const dns = Object.assign(new Error('getaddrinfo ENOTFOUND mcp.example.invalid'), {
      code: 'ENOTFOUND',
      syscall: 'getaddrinfo',
      hostname: 'mcp.example.invalid',
    });
    const error = new TypeError('fetch failed', { cause: dns });
    assert.equal(describeNetworkFailure(error), 'could not find the host mcp.example.invalid (DNS lookup failed): check the URL');
  });

  it('anything else is left alone', () => {
    assert.equal(describeNetworkFailure(new Error('invalid_grant')), undefined);
    assert.equal(failureReason(new Error('invalid_grant')), 'invalid_grant');
    assert.equal(failureReason(new DOMException('The operation was aborted due to timeout', 'TimeoutError')), 'The operation was aborted due to timeout');
  });
});
