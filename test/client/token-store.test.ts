import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { ClientError } from '../../src/client/errors.js';
import { checkFolder, openPrivateFile } from '../../src/client/private-file.js';
import { CLI_CLIENT_NAME, defaultCredentialsPath, FileTokenStore, MemoryTokenStore } from '../../src/client/token-store.js';
import type { StoredClient, StoredGrant, TokenStore } from '../../src/client/types.js';
import { personGrant } from './selectors.js';
import { PERSON } from '../../src/client/grants.js';

const MODULE = fileURLToPath(new URL('../../src/client/token-store.ts', import.meta.url));
const PROJECT = fileURLToPath(new URL('../../', import.meta.url));
const SERVER = 'https://context.example/mcp';
const ISSUER = 'https://auth.example';
const OTHER_ISSUER = 'https://login.example';
const APP = 'My App';

function makeClient(overrides: Partial<StoredClient> = {}): StoredClient {
  return {
    application: APP,
    issuer: ISSUER,
    clientId: 'client-1',
    tokenEndpointAuthMethod: 'none',
    redirectUris: ['http://127.0.0.1/callback'],
    source: 'dynamic',
    createdAt: 1_700_000_000,
    ...overrides,
  };
}

function makeGrant(overrides: Partial<StoredGrant> = {}): StoredGrant {
  return {
    application: APP,
    identity: PERSON,
    serverUrl: SERVER,
    issuer: ISSUER,
    resource: SERVER,
    revision: 'B',
    clientId: 'client-1',
    accessToken: 'access-1',
    expiresAt: 1_700_003_600,
    refreshToken: 'refresh-1',
    scope: 'read',
    updatedAt: 1_700_000_000,
    ...overrides,
  };
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

let tempRoot: string;
let folderCount = 0;
before(async () => {
  tempRoot = await fs.mkdtemp(path.join(os.tmpdir(), 'context-auth-token-store-'));
});
after(async () => {
  await fs.rm(tempRoot, { recursive: true, force: true });
});

/** A fresh folder per test; the credentials file inside it does not exist yet. */
async function freshFolder(): Promise<string> {
  const folder = path.join(tempRoot, `case-${++folderCount}`);
  await fs.mkdir(folder, { mode: 0o700 });
  return folder;
}

const kinds: { name: string; open: () => Promise<TokenStore> }[] = [
  { name: 'MemoryTokenStore', open: async () => new MemoryTokenStore() },
  { name: 'FileTokenStore', open: async () => new FileTokenStore(path.join(await freshFolder(), 'credentials.json')) },
];

for (const kind of kinds) {
  describe(`${kind.name}: behaviour every TokenStore shares`, () => {
    it('starts empty', async () => {
      const store = await kind.open();
      assert.equal(await store.getClient(APP, ISSUER), undefined);
      assert.equal(await store.getGrant(personGrant(APP, SERVER)), undefined);
      assert.equal(await store.getGrant(personGrant(APP, SERVER, ISSUER)), undefined);
      assert.deepEqual(await store.listGrants(), []);
      assert.equal(await store.deleteGrant(personGrant(APP, SERVER)), 0);
      await store.deleteClient(APP, ISSUER);
    });

    it('saves, replaces and deletes clients per issuer', async () => {
      const store = await kind.open();
      const client = makeClient({ clientSecret: 'secret', tokenEndpointAuthMethod: 'client_secret_basic' });
      await store.saveClient(client);
      await store.saveClient(makeClient({ issuer: OTHER_ISSUER, clientId: 'other' }));
      assert.deepEqual(await store.getClient(APP, ISSUER), client);
      await store.saveClient({ ...client, clientId: 'client-2' });
      assert.equal((await store.getClient(APP, ISSUER))?.clientId, 'client-2');
      await store.deleteClient(APP, ISSUER);
      assert.equal(await store.getClient(APP, ISSUER), undefined);
      assert.equal((await store.getClient(APP, OTHER_ISSUER))?.clientId, 'other');
    });

    it('keeps one grant per (server, issuer) and finds it by issuer', async () => {
      const store = await kind.open();
      const grant = makeGrant();
      await store.saveGrant(grant);
      await store.saveGrant(makeGrant({ issuer: OTHER_ISSUER, accessToken: 'other', updatedAt: 1 }));
      await store.saveGrant(makeGrant({ serverUrl: 'https://elsewhere.example/mcp', accessToken: 'elsewhere' }));
      assert.deepEqual(await store.getGrant(personGrant(APP, SERVER, ISSUER)), grant);
      assert.equal((await store.getGrant(personGrant(APP, SERVER, OTHER_ISSUER)))?.accessToken, 'other');
      assert.equal(await store.getGrant(personGrant(APP, SERVER, 'https://unknown.example')), undefined);
      await store.saveGrant({ ...grant, accessToken: 'access-2', updatedAt: grant.updatedAt + 10 });
      assert.equal((await store.getGrant(personGrant(APP, SERVER, ISSUER)))?.accessToken, 'access-2');
      assert.equal((await store.listGrants()).length, 3);
    });

    it('without an issuer, returns the most recently updated grant for the server', async () => {
      const store = await kind.open();
      await store.saveGrant(makeGrant({ issuer: ISSUER, accessToken: 'older', updatedAt: 100 }));
      await store.saveGrant(makeGrant({ issuer: OTHER_ISSUER, accessToken: 'newer', updatedAt: 200 }));
      await store.saveGrant(makeGrant({ serverUrl: 'https://elsewhere.example/mcp', accessToken: 'newest', updatedAt: 300 }));
      assert.equal((await store.getGrant(personGrant(APP, SERVER)))?.accessToken, 'newer');
      await store.saveGrant(makeGrant({ issuer: ISSUER, accessToken: 'refreshed', updatedAt: 250 }));
      assert.equal((await store.getGrant(personGrant(APP, SERVER)))?.accessToken, 'refreshed');
    });

    it('deletes grants for one issuer or for the whole server, counting them', async () => {
      const store = await kind.open();
      await store.saveGrant(makeGrant({ issuer: ISSUER }));
      await store.saveGrant(makeGrant({ issuer: OTHER_ISSUER }));
      await store.saveGrant(makeGrant({ serverUrl: 'https://elsewhere.example/mcp' }));
      assert.equal(await store.deleteGrant(personGrant(APP, SERVER, ISSUER)), 1);
      assert.equal(await store.deleteGrant(personGrant(APP, SERVER, ISSUER)), 0);
      await store.saveGrant(makeGrant({ issuer: ISSUER }));
      assert.equal(await store.deleteGrant(personGrant(APP, SERVER)), 2);
      assert.equal(await store.getGrant(personGrant(APP, SERVER)), undefined);
      assert.deepEqual(
        (await store.listGrants()).map((grant) => grant.serverUrl),
        ['https://elsewhere.example/mcp'],
      );
    });

    it('keeps each application’s registrations and grants apart, on one issuer and one server', async () => {
      const store = await kind.open();
      const other = 'Other App';
      await store.saveClient(makeClient());
      await store.saveClient(makeClient({ application: other, clientId: 'other-client' }));
      await store.saveGrant(makeGrant());
      await store.saveGrant(makeGrant({ application: other, clientId: 'other-client', accessToken: 'other-access', updatedAt: 1_800_000_000 }));
      assert.equal((await store.getClient(APP, ISSUER))?.clientId, 'client-1');
      assert.equal((await store.getClient(other, ISSUER))?.clientId, 'other-client');
      assert.equal(await store.getClient('Third App', ISSUER), undefined);
      // The other application's grant is newer, and still not this one's.
      assert.equal((await store.getGrant(personGrant(APP, SERVER)))?.accessToken, 'access-1');
      assert.equal((await store.getGrant(personGrant(other, SERVER, ISSUER)))?.accessToken, 'other-access');
      assert.equal(await store.getGrant(personGrant('Third App', SERVER)), undefined);
      assert.deepEqual((await store.listGrants()).map((grant) => grant.application).sort(), [APP, other]);

      assert.equal(await store.deleteGrant(personGrant(APP, SERVER)), 1);
      await store.deleteClient(APP, ISSUER);
      assert.equal(await store.getGrant(personGrant(APP, SERVER)), undefined);
      assert.equal(await store.getClient(APP, ISSUER), undefined);
      assert.equal((await store.getGrant(personGrant(other, SERVER)))?.accessToken, 'other-access');
      assert.equal((await store.getClient(other, ISSUER))?.clientId, 'other-client');
    });

    it('keeps each identity’s grant apart on one application, server and issuer: the person’s and each program’s', async () => {
      const store = await kind.open();
      const robot = { kind: 'program', grantType: 'client_credentials', clientId: 'robot' } as const;
      const agent = { kind: 'program', grantType: 'jwt-bearer', clientId: 'robot' } as const;
      await store.saveGrant(makeGrant({ accessToken: 'person', updatedAt: 100 }));
      await store.saveGrant(makeGrant({ identity: robot, clientId: 'robot', accessToken: 'robot', updatedAt: 200 }));
      await store.saveGrant(makeGrant({ identity: agent, clientId: 'robot', accessToken: 'agent', updatedAt: 300 }));
      const of = (identity: StoredGrant['identity']) => ({ application: APP, serverUrl: SERVER, identity });
      // The newest grant for the server is a program's, and still not the person's.
      assert.equal((await store.getGrant(of(PERSON)))?.accessToken, 'person');
      assert.equal((await store.getGrant(of(robot)))?.accessToken, 'robot');
      assert.equal((await store.getGrant({ ...of(agent), issuer: ISSUER }))?.accessToken, 'agent');
      assert.equal(await store.getGrant(of({ kind: 'program', grantType: 'client_credentials', clientId: 'other' })), undefined);
      assert.equal((await store.listGrants()).length, 3);

      assert.equal(await store.deleteGrant(of(robot)), 1);
      assert.equal(await store.getGrant(of(robot)), undefined);
      assert.equal((await store.getGrant(of(PERSON)))?.accessToken, 'person');
      assert.equal((await store.getGrant(of(agent)))?.accessToken, 'agent');
      assert.equal(await store.deleteGrant(of(PERSON)), 1);
      assert.equal((await store.getGrant(of(agent)))?.accessToken, 'agent');
    });

    it('hands out copies: changing a saved or returned object changes nothing stored', async () => {
      const store = await kind.open();
      const grant = makeGrant();
      await store.saveGrant(grant);
      grant.accessToken = 'changed after save';
      const returned = await store.getGrant(personGrant(APP, SERVER, ISSUER));
      assert.equal(returned?.accessToken, 'access-1');
      returned!.accessToken = 'changed after get';
      assert.equal((await store.getGrant(personGrant(APP, SERVER, ISSUER)))?.accessToken, 'access-1');
      const client = makeClient();
      await store.saveClient(client);
      client.redirectUris.push('http://127.0.0.1/other');
      assert.deepEqual((await store.getClient(APP, ISSUER))?.redirectUris, ['http://127.0.0.1/callback']);
    });

    it('keeps concurrent saves of different keys', async () => {
      const store = await kind.open();
      await Promise.all(Array.from({ length: 15 }, (_, i) => store.saveGrant(makeGrant({ serverUrl: `https://s${i}.example/mcp` }))));
      assert.equal((await store.listGrants()).length, 15);
    });

    it('withLock runs actions with one name one at a time, and returns their results', async () => {
      const store = await kind.open();
      const events: string[] = [];
      const results = await Promise.all(
        [0, 1, 2].map((i) =>
          store.withLock('refresh https://context.example', async () => {
            events.push(`start ${i}`);
            await sleep(15);
            events.push(`end ${i}`);
            return i * 10;
          }),
        ),
      );
      assert.deepEqual(results, [0, 10, 20]);
      // One at a time: each start is followed by its own end. Which waiter gets the lock next is
      // not promised (a lock held by another process is polled), so the order is not asserted.
      assert.equal(events.length, 6);
      for (let at = 0; at < events.length; at += 2) assert.equal(events[at + 1], events[at]!.replace('start', 'end'));
      assert.deepEqual(events.filter((event) => event.startsWith('start')).sort(), ['start 0', 'start 1', 'start 2']);
    });

    it('withLock lets different names run at the same time', async () => {
      const store = await kind.open();
      // Each action waits inside its lock until all three are inside: only locks that let
      // different names in together get there (a fixed sleep would make this a race with load).
      let inside = 0;
      let allInside!: () => void;
      let timer: NodeJS.Timeout | undefined;
      const together = new Promise<void>((resolve, reject) => {
        allInside = resolve;
        timer = setTimeout(() => reject(new Error(`only ${inside} of 3 got inside at once`)), 10_000);
      });
      const waitForAll = (): Promise<void> => together;
      await Promise.all(
        ['a', 'b', 'c'].map((name) =>
          store.withLock(name, async () => {
            if (++inside === 3) allInside();
            await waitForAll();
          }),
        ),
      ).finally(() => clearTimeout(timer));
      assert.equal(inside, 3);
    });

    it('withLock releases the lock when the action throws', async () => {
      const store = await kind.open();
      await assert.rejects(
        store.withLock('x', async () => {
          throw new Error('boom');
        }),
        /boom/,
      );
      assert.equal(await store.withLock('x', async () => 'again'), 'again');
    });

    it('allows the store’s own methods inside withLock', async () => {
      const store = await kind.open();
      await store.withLock('refresh', async () => {
        await store.saveGrant(makeGrant());
        assert.equal((await store.getGrant(personGrant(APP, SERVER)))?.accessToken, 'access-1');
      });
    });
  });
}

// ---------------------------------------------------------------------------------------------
// FileTokenStore only

/** Runs `body` in `count` node processes importing the store; each starts once all are ready. */
async function runChildren(count: number, folder: string, body: string): Promise<void> {
  const children = Array.from({ length: count }, (_, index) => {
    const script = `
      import fs from 'node:fs';
      const { FileTokenStore } = await import(${JSON.stringify(pathToFileURL(MODULE).href)});
      const index = ${index};
      const folder = ${JSON.stringify(folder)};
      const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
      fs.writeFileSync(folder + '/ready-' + index, '');
      while (fs.readdirSync(folder).filter((name) => name.startsWith('ready-')).length < ${count}) await sleep(5);
      ${body}
    `;
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      cwd: PROJECT,
      stdio: ['ignore', 'inherit', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    return new Promise<void>((resolve, reject) => {
      child.on('error', reject);
      child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`child ${index} exited with ${code}: ${stderr}`))));
    });
  });
  await Promise.all(children);
  for (let index = 0; index < count; index++) await fs.rm(path.join(folder, `ready-${index}`));
}

/** The pid of a process that has exited. */
async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ['-e', '0'], { stdio: 'ignore' });
  await new Promise((resolve) => child.on('exit', resolve));
  assert.ok(child.pid);
  return child.pid;
}

const lockPathFor = (file: string, name: string): string => `${file}.${createHash('sha256').update(name).digest('hex').slice(0, 16)}.lock`;

describe('FileTokenStore: the file', () => {
  const posix = process.platform !== 'win32';

  it('writes the documented format', async () => {
    const file = path.join(await freshFolder(), 'credentials.json');
    const store = new FileTokenStore(file);
    await store.saveClient(makeClient());
    await store.saveGrant(makeGrant());
    await store.saveClient(makeClient({ application: CLI_CLIENT_NAME, clientId: 'cli' }));
    const document = JSON.parse(await fs.readFile(file, 'utf8')) as Record<string, unknown>;
    const { application: _app, ...client } = makeClient();
    const { application: _same, ...grant } = makeGrant();
    const { application: _cli, ...cliClient } = makeClient({ clientId: 'cli' });
    assert.deepEqual(document, {
      version: 3,
      applications: {
        [APP]: { clients: { [ISSUER]: client }, grants: { [`${SERVER} ${ISSUER} person`]: grant } },
        [CLI_CLIENT_NAME]: { clients: { [ISSUER]: cliClient }, grants: {} },
      },
    });
  });

  it('creates its folder 0700 and the file 0600', { skip: !posix }, async () => {
    const folder = path.join(await freshFolder(), 'nested', 'context-auth');
    const file = path.join(folder, 'credentials.json');
    await new FileTokenStore(file).saveGrant(makeGrant());
    assert.equal((await fs.stat(folder)).mode & 0o777, 0o700);
    assert.equal((await fs.stat(file)).mode & 0o777, 0o600);
  });

  it('tightens an existing file’s mode to 0600', { skip: !posix }, async () => {
    const file = path.join(await freshFolder(), 'credentials.json');
    await fs.writeFile(file, JSON.stringify({ version: 1, clients: {}, grants: {} }), { mode: 0o644 });
    await fs.chmod(file, 0o644);
    assert.equal(await new FileTokenStore(file).getClient(APP, ISSUER), undefined);
    assert.equal((await fs.stat(file)).mode & 0o777, 0o600);
  });

  it('writes atomically and leaves no temporary or lock files behind', async () => {
    const folder = await freshFolder();
    const store = new FileTokenStore(path.join(folder, 'credentials.json'));
    await Promise.all(Array.from({ length: 10 }, (_, i) => store.saveGrant(makeGrant({ serverUrl: `https://s${i}.example` }))));
    await store.deleteGrant(personGrant(APP, 'https://s0.example'));
    await store.withLock('refresh', async () => undefined);
    assert.deepEqual(await fs.readdir(folder), ['credentials.json']);
  });

  it('is read again by every call: a new instance, or another writer, is seen', async () => {
    const file = path.join(await freshFolder(), 'credentials.json');
    const first = new FileTokenStore(file);
    const second = new FileTokenStore(file);
    await first.saveClient(makeClient());
    await first.saveGrant(makeGrant());
    assert.deepEqual(await second.getClient(APP, ISSUER), makeClient());
    assert.deepEqual(await new FileTokenStore(file).getGrant(personGrant(APP, SERVER)), makeGrant());
    await second.saveGrant(makeGrant({ accessToken: 'from second', updatedAt: 2_000_000_000 }));
    assert.equal((await first.getGrant(personGrant(APP, SERVER)))?.accessToken, 'from second');
  });

  it('refuses a corrupt file and leaves it untouched', async () => {
    const file = path.join(await freshFolder(), 'credentials.json');
    const store = new FileTokenStore(file);
    for (const content of [
      '{"version": 2, "applications": {',
      '[]',
      '{"version": 4, "applications": {}}',
      '{"version": 3, "applications": {"My App": {"grants": {"x": {"serverUrl": "s", "issuer": "i", "accessToken": "a", "updatedAt": 1}}}}}',
      '{"version": 3, "applications": {"My App": {"grants": {"x": {"serverUrl": "s", "issuer": "i", "accessToken": "a", "updatedAt": 1, "identity": {"kind": "program", "grantType": "password", "clientId": "c"}}}}}}',
      '{"version": 1, "grants": {"x": {"serverUrl": 1}}}',
      '{"version": 2, "applications": {"My App": {"grants": {"x": {"serverUrl": 1}}}}}',
      '{"version": 2, "applications": {"My App": []}}',
      '{"version": 2, "applications": []}',
      '{"version": 2, "clients": {}, "grants": {}}',
    ]) {
      await fs.writeFile(file, content);
      const isStorageFailure = (error: unknown): boolean => {
        assert.ok(error instanceof ClientError);
        assert.equal(error.code, 'storage_failed');
        assert.ok(error.message.includes(file), error.message);
        return true;
      };
      await assert.rejects(store.getClient(APP, ISSUER), isStorageFailure);
      await assert.rejects(store.listGrants(), isStorageFailure);
      await assert.rejects(store.saveGrant(makeGrant()), isStorageFailure);
      await assert.rejects(store.deleteClient(APP, ISSUER), isStorageFailure);
      assert.equal(await fs.readFile(file, 'utf8'), content);
    }
  });

  it('treats an empty file as empty', async () => {
    const file = path.join(await freshFolder(), 'credentials.json');
    await fs.writeFile(file, '');
    const store = new FileTokenStore(file);
    assert.deepEqual(await store.listGrants(), []);
    await store.saveGrant(makeGrant());
    assert.equal((await store.listGrants()).length, 1);
  });

  it('keeps an issuer or an application named "__proto__" as data', async () => {
    const file = path.join(await freshFolder(), 'credentials.json');
    await new FileTokenStore(file).saveClient(makeClient({ issuer: '__proto__' }));
    await new FileTokenStore(file).saveGrant(makeGrant({ application: '__proto__' }));
    assert.equal((await new FileTokenStore(file).getClient(APP, '__proto__'))?.clientId, 'client-1');
    assert.equal((await new FileTokenStore(file).getGrant(personGrant('__proto__', SERVER)))?.accessToken, 'access-1');
  });

  it('reads a version 1 file (no applications) as the CLI’s, and upgrades it in place on the first write', async () => {
    const file = path.join(await freshFolder(), 'credentials.json');
    // What the CLI wrote before applications were told apart.
    const { application: _client, ...v1Client } = makeClient({ clientId: 'cli-client' });
    const { application: _grant, identity: _identity, ...v1Grant } = makeGrant({ clientId: 'cli-client', accessToken: 'cli-access' });
    const v1 = `${JSON.stringify({ version: 1, clients: { [ISSUER]: v1Client }, grants: { [`${SERVER} ${ISSUER}`]: v1Grant } }, null, 2)}\n`;
    await fs.writeFile(file, v1, { mode: 0o600 });

    const store = new FileTokenStore(file);
    assert.deepEqual(await store.getClient(CLI_CLIENT_NAME, ISSUER), { ...v1Client, application: CLI_CLIENT_NAME });
    assert.deepEqual(await store.getGrant(personGrant(CLI_CLIENT_NAME, SERVER)), { ...v1Grant, identity: PERSON, application: CLI_CLIENT_NAME });
    assert.equal(await store.getClient(APP, ISSUER), undefined, 'another application does not find the CLI’s registration');
    assert.equal(await store.getGrant(personGrant(APP, SERVER)), undefined, 'nor its tokens');
    assert.equal(await fs.readFile(file, 'utf8'), v1, 'reading changes nothing');

    await store.saveClient(makeClient());
    const document = JSON.parse(await fs.readFile(file, 'utf8')) as {
      version: number;
      applications: Record<string, { clients: Record<string, unknown>; grants: Record<string, unknown> }>;
    };
    assert.equal(document.version, 3);
    assert.deepEqual(document.applications[CLI_CLIENT_NAME], {
      clients: { [ISSUER]: v1Client },
      grants: { [`${SERVER} ${ISSUER} person`]: { ...v1Grant, identity: PERSON } },
    });
    assert.deepEqual(Object.keys(document.applications[APP]!.clients), [ISSUER]);
    assert.equal((await store.getGrant(personGrant(CLI_CLIENT_NAME, SERVER)))?.accessToken, 'cli-access', 'the CLI still finds its tokens');
    assert.equal((await store.getClient(APP, ISSUER))?.clientId, 'client-1');
  });

  it('reads a version 2 file (no identities): the person’s grants stay the person’s, a program’s is not carried over', async () => {
    const file = path.join(await freshFolder(), 'credentials.json');
    const filed = (grant: StoredGrant) => {
      const { application: _application, identity: _identity, ...rest } = grant;
      return rest;
    };
    const { application: _client, ...registered } = makeClient({ application: CLI_CLIENT_NAME, clientId: 'cli-client' });
    // One (server, issuer) pair each: the old layout kept a single grant per pair, whoever held it.
    const browser = makeGrant({ application: CLI_CLIENT_NAME, serverUrl: 'https://a.example/mcp', clientId: 'pre-registered', accessToken: 'person-a' });
    const noRefresh = makeGrant({
      application: CLI_CLIENT_NAME,
      serverUrl: 'https://b.example/mcp',
      clientId: 'cli-client',
      refreshToken: undefined,
      accessToken: 'person-b',
    });
    const program = makeGrant({
      application: CLI_CLIENT_NAME,
      serverUrl: 'https://c.example/mcp',
      clientId: 'robot',
      refreshToken: undefined,
      accessToken: 'robot-c',
    });
    delete noRefresh.refreshToken;
    delete program.refreshToken;
    const v2 = `${JSON.stringify(
      {
        version: 2,
        applications: {
          [CLI_CLIENT_NAME]: {
            clients: { [ISSUER]: registered },
            grants: Object.fromEntries([browser, noRefresh, program].map((grant) => [`${grant.serverUrl} ${grant.issuer}`, filed(grant)])),
          },
        },
      },
      null,
      2,
    )}\n`;
    await fs.writeFile(file, v2, { mode: 0o600 });

    const store = new FileTokenStore(file);
    // A refresh token is a person's sign-in; so is a grant of the client the application registered.
    assert.deepEqual(await store.getGrant(personGrant(CLI_CLIENT_NAME, browser.serverUrl)), browser);
    assert.deepEqual(await store.getGrant(personGrant(CLI_CLIENT_NAME, noRefresh.serverUrl)), noRefresh);
    // Another client without a refresh token was a program's: not the person's, and of no known program grant.
    assert.equal(await store.getGrant(personGrant(CLI_CLIENT_NAME, program.serverUrl)), undefined);
    for (const grantType of ['client_credentials', 'jwt-bearer'] as const) {
      assert.equal(
        await store.getGrant({ application: CLI_CLIENT_NAME, serverUrl: program.serverUrl, identity: { kind: 'program', grantType, clientId: 'robot' } }),
        undefined,
      );
    }
    assert.deepEqual((await store.listGrants()).map((grant) => grant.accessToken).sort(), ['person-a', 'person-b']);
    assert.equal(await fs.readFile(file, 'utf8'), v2, 'reading changes nothing');

    await store.saveClient(makeClient());
    const document = JSON.parse(await fs.readFile(file, 'utf8')) as {
      version: number;
      applications: Record<string, { grants: Record<string, { identity: unknown }> }>;
    };
    assert.equal(document.version, 3);
    assert.deepEqual(Object.keys(document.applications[CLI_CLIENT_NAME]!.grants).sort(), [
      `https://a.example/mcp ${ISSUER} person`,
      `https://b.example/mcp ${ISSUER} person`,
    ]);
    assert.deepEqual(
      Object.values(document.applications[CLI_CLIENT_NAME]!.grants).map((grant) => grant.identity),
      [PERSON, PERSON],
    );
  });

  it('finds its default path from the environment', () => {
    assert.equal(defaultCredentialsPath({ CONTEXT_AUTH_CREDENTIALS: '/tmp/x/creds.json', XDG_CONFIG_HOME: '/cfg' }), path.resolve('/tmp/x/creds.json'));
    assert.equal(defaultCredentialsPath({ XDG_CONFIG_HOME: '/cfg' }), path.join('/cfg', 'context-auth', 'credentials.json'));
    const home = path.join(os.homedir(), '.config', 'context-auth', 'credentials.json');
    assert.equal(defaultCredentialsPath({}), home);
    assert.equal(defaultCredentialsPath({ XDG_CONFIG_HOME: 'relative' }), home);
  });
});

describe('FileTokenStore: only a file and folder of the user’s own', { skip: process.platform === 'win32' && 'no POSIX modes or user ids' }, () => {
  /** A ClientError storage_failed whose message names `where` and matches `why`. */
  const refusal =
    (where: string, why: RegExp) =>
    (error: unknown): boolean => {
      assert.ok(error instanceof ClientError, String(error));
      assert.equal(error.code, 'storage_failed');
      assert.ok(error.message.includes(where), error.message);
      assert.match(error.message, why);
      return true;
    };

  /**
   * Every way in is refused: reads, writes, and work under a lock. A folder that is not private
   * refuses the lock itself (the lock files would be made in it); a bad file, what reads it.
   */
  async function assertRefused(store: FileTokenStore, kind: 'file' | 'folder', where: string, why: RegExp): Promise<void> {
    await assert.rejects(store.getClient(APP, ISSUER), refusal(where, why));
    await assert.rejects(store.listGrants(), refusal(where, why));
    await assert.rejects(store.saveGrant(makeGrant()), refusal(where, why));
    await assert.rejects(store.deleteGrant(personGrant(APP, SERVER)), refusal(where, why));
    await assert.rejects(
      store.withLock('refresh', () => store.getGrant(personGrant(APP, SERVER))),
      refusal(where, why),
    );
    if (kind === 'folder')
      await assert.rejects(
        store.withLock('refresh', async () => 'ran'),
        refusal(where, why),
      );
  }

  const content = `${JSON.stringify({ version: 1, clients: {}, grants: {} })}\n`;

  it('refuses a credentials file that is a symbolic link, and leaves its target alone', async () => {
    const elsewhere = path.join(await freshFolder(), 'real.json');
    await fs.writeFile(elsewhere, content, { mode: 0o600 });
    const file = path.join(await freshFolder(), 'credentials.json');
    await fs.symlink(elsewhere, file);
    await assertRefused(new FileTokenStore(file), 'file', file, /credentials file .* is a symbolic link.*CONTEXT_AUTH_CREDENTIALS/);
    assert.equal(await fs.readFile(elsewhere, 'utf8'), content);
    assert.ok((await fs.lstat(file)).isSymbolicLink(), 'the link is not replaced');
  });

  it('refuses a dangling symbolic link instead of writing through it', async () => {
    const target = path.join(await freshFolder(), 'planted.json');
    const file = path.join(await freshFolder(), 'credentials.json');
    await fs.symlink(target, file);
    await assertRefused(new FileTokenStore(file), 'file', file, /is a symbolic link/);
    await assert.rejects(fs.stat(target), { code: 'ENOENT' });
  });

  it('refuses a credentials folder that is a symbolic link', async () => {
    const real = await freshFolder();
    const linked = path.join(await freshFolder(), 'context-auth');
    await fs.symlink(real, linked);
    await assertRefused(new FileTokenStore(path.join(linked, 'credentials.json')), 'folder', linked, /credentials folder .* is a symbolic link/);
    assert.deepEqual(await fs.readdir(real), [], 'no file or lock was made through the link');
  });

  for (const mode of [0o620, 0o602, 0o666]) {
    it(`refuses a file others may write (mode ${mode.toString(8)}), saying how to fix it, and changes nothing`, async () => {
      const file = path.join(await freshFolder(), 'credentials.json');
      await fs.writeFile(file, content);
      await fs.chmod(file, mode);
      await assertRefused(
        new FileTokenStore(file),
        'file',
        file,
        new RegExp(`may be written by group or others \\(mode 0${mode.toString(8)}\\).*chmod 600 '${file}'`),
      );
      assert.equal((await fs.stat(file)).mode & 0o777, mode);
      assert.equal(await fs.readFile(file, 'utf8'), content);
    });
  }

  for (const mode of [0o770, 0o707, 0o777]) {
    it(`refuses a folder others may write (mode ${mode.toString(8)}), before making anything in it`, async () => {
      const folder = await freshFolder();
      await fs.chmod(folder, mode);
      const file = path.join(folder, 'credentials.json');
      await assertRefused(
        new FileTokenStore(file),
        'folder',
        folder,
        new RegExp(`credentials folder .* may be written by group or others \\(mode 0${mode.toString(8)}\\).*chmod 700 '${folder}'`),
      );
      assert.deepEqual(await fs.readdir(folder), [], 'no file or lock file was made');
    });
  }

  it('refuses a file and folder another account owns', async () => {
    const file = path.join(await freshFolder(), 'credentials.json');
    await fs.writeFile(file, content, { mode: 0o600 });
    const mine = (await fs.stat(file)).uid;
    const someoneElse = mine + 12_345;
    await assertRefused(
      new FileTokenStore(file, { ownerUid: someoneElse }),
      'folder',
      path.dirname(file),
      new RegExp(`folder .* belongs to another account \\(uid ${mine}; you are uid ${someoneElse}\\)`),
    );
    // The file's own check, with the folder passing: the folder is checked apart, then the file.
    await checkFolder(path.dirname(file), mine);
    await assert.rejects(
      openPrivateFile(file, someoneElse),
      refusal(file, new RegExp(`file .* belongs to another account \\(uid ${mine}; you are uid ${someoneElse}\\).*delete it`)),
    );
    const handle = await openPrivateFile(file, mine);
    assert.ok(handle);
    await handle.close();
  });

  it('takes the current user as the owner by default', async () => {
    const file = path.join(await freshFolder(), 'credentials.json');
    const store = new FileTokenStore(file);
    await store.saveGrant(makeGrant());
    assert.equal((await fs.stat(file)).uid, process.getuid!());
    assert.equal((await store.getGrant(personGrant(APP, SERVER)))?.accessToken, 'access-1');
  });

  it('without user ids (Windows), checks no owner or mode, but still refuses a link', async () => {
    const folder = await freshFolder();
    const file = path.join(folder, 'credentials.json');
    await fs.writeFile(file, content);
    await fs.chmod(file, 0o666);
    await fs.chmod(folder, 0o777);
    await checkFolder(folder, undefined);
    const handle = await openPrivateFile(file, undefined);
    assert.ok(handle);
    await handle.close();
    const link = path.join(folder, 'link.json');
    await fs.symlink(file, link);
    await assert.rejects(openPrivateFile(link, undefined), refusal(link, /symbolic link/));
  });

  it('refuses a lock file that is a symbolic link', async () => {
    const folder = await freshFolder();
    const file = path.join(folder, 'credentials.json');
    const target = path.join(await freshFolder(), 'target');
    await fs.writeFile(target, 'not a lock');
    await fs.symlink(target, lockPathFor(file, 'refresh'));
    const store = new FileTokenStore(file, { lockTimeoutMs: 2_000 });
    await assert.rejects(
      store.withLock('refresh', async () => 'ran'),
      refusal(lockPathFor(file, 'refresh'), /lock file .* is a symbolic link/),
    );
    assert.equal(await fs.readFile(target, 'utf8'), 'not a lock');
  });
});

describe('FileTokenStore: several processes', () => {
  it('keeps every grant when two processes save 20 each at the same time', async () => {
    const folder = await freshFolder();
    const file = path.join(folder, 'credentials.json');
    await runChildren(
      2,
      folder,
      `const store = new FileTokenStore(${JSON.stringify(file)});
       await Promise.all(Array.from({ length: 20 }, (_, i) => store.saveGrant({
         application: 'My App', identity: { kind: 'person' }, serverUrl: 'https://p' + index + '-' + i + '.example/mcp', issuer: 'https://auth.example', revision: 'B',
         clientId: 'c', accessToken: 'a' + index + '-' + i, updatedAt: i,
       })));`,
    );
    const grants = await new FileTokenStore(file).listGrants();
    assert.equal(grants.length, 40);
    assert.deepEqual((await fs.readdir(folder)).sort(), ['credentials.json']);
  });

  it('withLock excludes across processes', async () => {
    const folder = await freshFolder();
    const file = path.join(folder, 'credentials.json');
    const markers = path.join(folder, 'markers.txt');
    await runChildren(
      2,
      folder,
      `const store = new FileTokenStore(${JSON.stringify(file)});
       for (let round = 0; round < 8; round++) {
         await store.withLock('refresh https://context.example', async () => {
           fs.appendFileSync(${JSON.stringify(markers)}, index + ' start\\n');
           await sleep(5 + Math.random() * 10);
           fs.appendFileSync(${JSON.stringify(markers)}, index + ' end\\n');
         });
         await sleep(Math.random() * 5);
       }`,
    );
    const lines = (await fs.readFile(markers, 'utf8')).trim().split('\n');
    assert.equal(lines.length, 32);
    for (let i = 0; i < lines.length; i += 2) {
      const [who, what] = lines[i]!.split(' ');
      assert.equal(what, 'start', `line ${i}: ${lines[i]}`);
      assert.equal(lines[i + 1], `${who} end`, `line ${i + 1} interleaves: ${lines.join(' | ')}`);
    }
  });

  it('takes over a lock left by a process that died', async () => {
    const file = path.join(await freshFolder(), 'credentials.json');
    const lockPath = lockPathFor(file, 'refresh');
    await fs.writeFile(lockPath, JSON.stringify({ pid: await deadPid(), at: Date.now() }));
    const store = new FileTokenStore(file, { lockTimeoutMs: 2_000 });
    const started = Date.now();
    assert.equal(await store.withLock('refresh', async () => 'taken'), 'taken');
    assert.ok(Date.now() - started < 1_000);
    await assert.rejects(fs.stat(lockPath), { code: 'ENOENT' });
  });

  it('takes over a lock untouched for longer than the stale age, even of a live pid', async () => {
    const file = path.join(await freshFolder(), 'credentials.json');
    const lockPath = lockPathFor(file, 'refresh');
    const old = new Date(Date.now() - 120_000);
    await fs.writeFile(lockPath, JSON.stringify({ pid: process.pid, at: old.getTime() }));
    await fs.utimes(lockPath, old, old);
    assert.equal(await new FileTokenStore(file, { lockTimeoutMs: 2_000 }).withLock('refresh', async () => 'taken'), 'taken');
  });

  it('times out on a lock a live process holds', async () => {
    const file = path.join(await freshFolder(), 'credentials.json');
    const lockPath = lockPathFor(file, 'refresh');
    await fs.writeFile(lockPath, JSON.stringify({ pid: process.pid, at: Date.now() }));
    const store = new FileTokenStore(file, { lockTimeoutMs: 200 });
    await assert.rejects(
      store.withLock('refresh', async () => 'never'),
      (error: unknown) => {
        assert.ok(error instanceof ClientError);
        assert.equal(error.code, 'storage_failed');
        assert.match(error.message, /timed out waiting for the credentials lock/);
        return true;
      },
    );
    // Someone else's lock is left alone.
    assert.ok((await fs.stat(lockPath)).isFile());
  });

  it('keeps a long-held lock fresh, so it is not taken as stale', async () => {
    const file = path.join(await freshFolder(), 'credentials.json');
    const holder = new FileTokenStore(file, { lockStaleMs: 150 });
    const waiter = new FileTokenStore(file, { lockStaleMs: 150, lockTimeoutMs: 2_000 });
    // A second instance in the same process shares the in-process queue; to test the file itself,
    // judge staleness the way another process would: by the lock file's age while the holder works.
    const lockPath = lockPathFor(file, 'long');
    await holder.withLock('long', async () => {
      await sleep(400);
      const age = Date.now() - (await fs.stat(lockPath)).mtimeMs;
      assert.ok(age < 150, `lock file untouched for ${age} ms`);
    });
    assert.equal(await waiter.withLock('long', async () => 'after'), 'after');
  });
});
