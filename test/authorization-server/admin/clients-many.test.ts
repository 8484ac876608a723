/**
 * The clients page on a real SQLite store holding 100,000 clients: the first page, a page in the
 * middle reached with `after=`, and a search, each 50 rows, while the store refuses to list every
 * client or user (the page must never load them all).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { openSqliteStore } from '../../../src/store/sqlite.js';
import type { FullStore } from '../../../src/store/store.js';
import { signInToConsole, type SignedIn } from '../../helpers/admin-console.js';
import { createHarness } from '../../helpers/harness.js';

const COUNT = 100_000;
const id = (n: number): string => `client-${String(n).padStart(6, '0')}`;

/** The store, except that listing everything fails the test. */
function withoutFullListings(store: FullStore): FullStore {
  return new Proxy(store, {
    get(target, property, receiver) {
      if (property === 'listClients' || property === 'listUsers') {
        return () => Promise.reject(new Error(`the console called ${property}(), which loads every row`));
      }
      const value: unknown = Reflect.get(target, property, receiver);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

const clientIdsOn = (html: string): string[] => [...html.matchAll(/name="client_id" value="([^"]+)"/g)].map((m) => m[1]!);

describe('admin console: the clients page on 100,000 clients (SQLite)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'ca-admin-clients-'));
  const path = join(dir, 'store.db');
  let store: FullStore;
  let admin: SignedIn;

  before(async () => {
    store = openSqliteStore({ path });
    await store.listClientsPage({ limit: 1 });
    // A direct bulk insert: 100,000 registrations through the server would only slow the test down.
    const db = new Database(path);
    const insert = db.prepare(
      `INSERT INTO clients (client_id, client_secret_hash, token_endpoint_auth_method, redirect_uris, grant_types, response_types, client_name, scope, metadata, can_introspect, registered_by, created_at, last_used_at)
       VALUES (?, NULL, 'none', '["http://127.0.0.1:33333/callback"]', '["authorization_code","refresh_token"]', '["code"]', ?, NULL, '{}', 0, ?, 1800000000, NULL)`,
    );
    db.transaction(() => {
      for (let n = 0; n < COUNT; n++) insert.run(id(n), n % 1000 === 7 ? `Needle ${n}` : `App ${n}`, n % 2 === 0 ? 'dynamic' : 'admin');
    })();
    db.close();
    const h = createHarness({ store: withoutFullListings(store) });
    admin = await signInToConsole(h);
  });

  after(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('shows the first 50, with a link to the next page', async () => {
    const html = await (await admin.browser.fetch('/admin/clients')).text();
    assert.deepEqual(
      clientIdsOn(html),
      Array.from({ length: 50 }, (_, n) => id(n)),
    );
    assert.match(html, /<a href="\/admin\/clients\?after=client-000049" rel="next">Next page<\/a>/);
    assert.ok(!html.includes('First page'), 'already on the first page');
  });

  it('shows a page in the middle, after a given client, with links to the first and the next page', async () => {
    const html = await (await admin.browser.fetch(`/admin/clients?after=${id(54_321)}`)).text();
    assert.deepEqual(
      clientIdsOn(html),
      Array.from({ length: 50 }, (_, n) => id(54_322 + n)),
    );
    assert.match(html, /<a href="\/admin\/clients">First page<\/a>/);
    assert.match(html, /<a href="\/admin\/clients\?after=client-054371" rel="next">Next page<\/a>/);
  });

  it('searches by name across all of them, a page at a time, keeping the search in the links', async () => {
    const html = await (await admin.browser.fetch('/admin/clients?q=needle')).text();
    const expected = Array.from({ length: 100 }, (_, n) => id(n * 1000 + 7));
    assert.deepEqual(clientIdsOn(html), expected.slice(0, 50));
    assert.match(html, /value="needle"/);
    assert.match(html, /<a href="\/admin\/clients\?q=needle&amp;after=client-049007" rel="next">Next page<\/a>/);
    const second = await (await admin.browser.fetch('/admin/clients?q=needle&after=client-049007')).text();
    assert.deepEqual(clientIdsOn(second), expected.slice(50));
    assert.ok(!second.includes('Next page'), 'the last page of the search');
    assert.match(second, /<a href="\/admin\/clients\?q=needle">First page<\/a>/);
  });
});
