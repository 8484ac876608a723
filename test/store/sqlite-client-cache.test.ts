/**
 * The SQLite store's clients kept in memory: a client looked up again is not read again, and each
 * caller gets a copy of its own; a change by this store is seen at once, and a change another connection commits to the file (as
 * a CLI verb or `sqlite3` by hand does) from the next turn of the event loop.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { after, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { openSqliteStore } from '../../src/store/sqlite.js';
import { makeClient, NOW } from '../../src/store/testing/records.js';
import { countSqliteStatements } from '../helpers/sqlite-statements.js';

const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'ca-client-cache-'));
after(() => fs.rmSync(folder, { recursive: true, force: true }));
let files = 0;
const newFile = () => path.join(folder, `db-${++files}.db`);

describe('clients kept in memory by the SQLite store', () => {
  it('answers a client looked up again from memory, a copy for each caller', async () => {
    const file = newFile();
    const store = openSqliteStore({ path: file });
    try {
      // Metadata as registration parses it from JSON, a `__proto__` key included.
      const client = makeClient({
        metadata: JSON.parse('{"client_name":"Example App","__proto__":{"polluted":true},"nested":{"a":[1,2]}}') as Record<string, unknown>,
      });
      await store.createClient(client);
      const reads = countSqliteStatements(/FROM clients WHERE client_id/);
      let first, again;
      try {
        first = await store.getClient(client.clientId);
        await nextTurn();
        again = await store.getClient(client.clientId);
      } finally {
        reads.restore();
      }
      assert.equal(reads.count, 1, 'read once');
      assert.deepEqual(again, client);
      assert.notEqual(again, first, 'each caller its own record');
      assert.notEqual(again!.metadata, first!.metadata);
      assert.ok(Object.hasOwn(again!.metadata, '__proto__'), 'a __proto__ key stays an own key');
      assert.equal(Object.getPrototypeOf(again!.metadata), Object.prototype);
    } finally {
      await store.close();
    }
  });

  it('sees its own change of a client at once', async () => {
    const store = openSqliteStore({ path: newFile() });
    try {
      const client = makeClient();
      await store.createClient(client);
      await store.getClient(client.clientId);
      await store.saveClient({ ...client, clientName: 'Renamed' });
      assert.equal((await store.getClient(client.clientId))?.clientName, 'Renamed');
      await store.touchClient(client.clientId, NOW + 86_400 * 2);
      assert.equal((await store.getClient(client.clientId))?.lastUsedAt, NOW + 86_400 * 2);
      assert.equal(await store.deleteClient(client.clientId), true);
      assert.equal(await store.getClient(client.clientId), undefined);
    } finally {
      await store.close();
    }
  });

  it('sees a change another process commits to the file from the next turn on', async () => {
    const file = newFile();
    const serving = openSqliteStore({ path: file });
    const verb = openSqliteStore({ path: file });
    const byHand = new Database(file);
    try {
      const [kept, removed] = [makeClient(), makeClient()];
      await serving.createClient(kept);
      await serving.createClient(removed);
      assert.ok(await serving.getClient(kept.clientId));
      assert.ok(await serving.getClient(removed.clientId));
      await nextTurn();

      assert.equal(await verb.deleteClient(removed.clientId), true);
      await nextTurn();
      assert.equal(await serving.getClient(removed.clientId), undefined, 'removed by another connection');

      byHand.prepare('UPDATE clients SET client_name = ? WHERE client_id = ?').run('Edited by hand', kept.clientId);
      await nextTurn();
      assert.equal((await serving.getClient(kept.clientId))?.clientName, 'Edited by hand');
    } finally {
      byHand.close();
      await verb.close();
      await serving.close();
    }
  });

  it('after the store is closed, a lookup fails as the store says, not from memory', async () => {
    const store = openSqliteStore({ path: newFile() });
    const client = makeClient();
    await store.createClient(client);
    await store.getClient(client.clientId);
    await store.close();
    await assert.rejects(store.getClient(client.clientId), /SQLite store is closed/);
  });
});
