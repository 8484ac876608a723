/**
 * `serve` keeps the audit events in its store (for the admin console), on the built CLI: events a
 * stop catches still waiting are written before the store closes; `--audit-retention 0` keeps
 * none; a retention that is not a whole number of days is refused. And `--metrics-token` may come
 * from CONTEXT_AUTH_METRICS_TOKEN, out of the process list, the flag winning when both are set.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { openSqliteStore } from '../../src/store/sqlite.js';
import { DATABASE_FILE } from '../../src/cli/data.js';
import { cli, cliWithEnv, freePort, openSignInForm, startServe, tempDataFolder, type RunningServer } from './serve-process.js';

const TOKEN = 'env-scrape-token-0123456789';
const FLAG_TOKEN = 'flag-scrape-token-0123456789';

async function failSignIn(server: RunningServer): Promise<void> {
  const { browser, action, csrf } = await openSignInForm(server);
  const response = await browser.submit(action, { csrf, step: 'login', username: 'nobody', password: 'a wrong password' });
  assert.equal(response.status, 401);
}

/** The events kept in the data folder's database, read after serve has stopped. */
async function keptEvents(data: string): Promise<string[]> {
  const store = openSqliteStore({ path: join(data, DATABASE_FILE) });
  try {
    return (await store.listAuditEvents({ limit: 100 })).map((event) => event.event);
  } finally {
    await store.close();
  }
}

describe('serve: audit events in the store', { timeout: 300_000 }, () => {
  const servers: RunningServer[] = [];
  after(async () => {
    for (const server of servers) await server.stop();
  });

  it('writes the events still waiting when it is stopped, before the store closes', async () => {
    const data = tempDataFolder();
    const server = await startServe(['--data', data, '--port', String(await freePort()), '--quiet']);
    servers.push(server);
    await failSignIn(server);
    await failSignIn(server);
    // Stopped at once, within the writer's delay: the events are still waiting.
    assert.equal(await server.stop(), 0);
    assert.deepEqual(
      (await keptEvents(data)).filter((name) => name === 'login_failed'),
      ['login_failed', 'login_failed'],
    );
  });

  it('keeps none with --audit-retention 0', async () => {
    const data = tempDataFolder();
    const server = await startServe(['--data', data, '--port', String(await freePort()), '--quiet', '--audit-retention', '0']);
    servers.push(server);
    await failSignIn(server);
    assert.equal(await server.stop(), 0);
    assert.deepEqual(await keptEvents(data), []);
  });

  it('refuses a retention that is not a whole number of days', async () => {
    for (const value of ['-1', '1.5', 'thirty']) {
      const result = await cli(['serve', '--data', tempDataFolder(), '--port', '0', `--audit-retention=${value}`]);
      assert.equal(result.code, 2, result.stderr);
      assert.match(result.stderr, /--audit-retention must be a whole number from 0 to/);
    }
  });
});

describe('serve: the metrics token from the environment', { timeout: 300_000 }, () => {
  const servers: RunningServer[] = [];
  after(async () => {
    for (const server of servers) await server.stop();
  });

  /** serve started with CONTEXT_AUTH_METRICS_TOKEN set (spawn copies the environment when it starts). */
  async function startWithEnvToken(args: string[]): Promise<RunningServer> {
    process.env.CONTEXT_AUTH_METRICS_TOKEN = TOKEN;
    try {
      const server = await startServe(['--data', tempDataFolder(), '--port', String(await freePort()), '--quiet', ...args]);
      servers.push(server);
      return server;
    } finally {
      delete process.env.CONTEXT_AUTH_METRICS_TOKEN;
    }
  }

  const scrape = (server: RunningServer, token: string) => fetch(`${server.issuer}/metrics`, { headers: { authorization: `Bearer ${token}` } });

  it('serves the metrics to the token the environment names', async () => {
    const server = await startWithEnvToken(['--metrics']);
    assert.match(server.output(), /with the --metrics-token/);
    assert.equal((await scrape(server, TOKEN)).status, 200);
    assert.equal((await scrape(server, FLAG_TOKEN)).status, 401);
    assert.equal((await fetch(`${server.issuer}/metrics`)).status, 401, 'no loopback pass once a token is set');
  });

  it('the flag wins over the environment', async () => {
    const server = await startWithEnvToken(['--metrics', '--metrics-token', FLAG_TOKEN]);
    assert.equal((await scrape(server, FLAG_TOKEN)).status, 200);
    assert.equal((await scrape(server, TOKEN)).status, 401);
  });

  it('refuses a short token from the environment, or one without --metrics, naming the variable', async () => {
    const short = await cliWithEnv(['serve', '--data', tempDataFolder(), '--port', '0', '--metrics'], { env: { CONTEXT_AUTH_METRICS_TOKEN: 'short' } });
    assert.equal(short.code, 2);
    assert.match(short.stderr, /CONTEXT_AUTH_METRICS_TOKEN must be at least 16 characters/);
    const alone = await cliWithEnv(['serve', '--data', tempDataFolder(), '--port', '0'], { env: { CONTEXT_AUTH_METRICS_TOKEN: TOKEN } });
    assert.equal(alone.code, 2);
    assert.match(alone.stderr, /CONTEXT_AUTH_METRICS_TOKEN goes with --metrics/);
  });
});
