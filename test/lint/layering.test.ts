/**
 * The layering rules of eslint.config.js, each shown failing on a deliberate violation and
 * staying quiet on the import the layer is allowed: a rule that is removed or mistyped fails here.
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { ESLint } from 'eslint';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const eslint = new ESLint({ cwd: root });

/** The messages of no-restricted-imports for `source` linted as if it were the file `file`. */
async function restrictedImports(file: string, source: string): Promise<string[]> {
  const [result] = await eslint.lintText(`${source}\nexport const used = x;\n`, { filePath: path.join(root, file) });
  assert.ok(result);
  return result.messages.filter((m) => m.ruleId === 'no-restricted-imports').map((m) => m.message);
}

const cases: Array<{ layer: string; file: string; refused: string[]; allowed: string[] }> = [
  {
    layer: 'core imports no framework, driver, store or role',
    file: 'src/core/example.ts',
    refused: [
      "import x from 'hono';",
      "import x from 'better-sqlite3';",
      "import x from 'pg';",
      "import x from '../store/store.js';",
      "import x from '../client/index.js';",
      "import x from '../node/request.js';",
    ],
    allowed: ["import x from './errors.js';", "import x from 'node:crypto';"],
  },
  {
    layer: 'the store imports nothing above it',
    file: 'src/store/example.ts',
    refused: [
      "import x from '../authorization-server/index.js';",
      "import x from '../resource-server/guard.js';",
      "import x from 'hono';",
      "import x from '../node/request.js';",
    ],
    allowed: ["import x from '../core/protocol.js';", "import x from 'pg';"],
  },
  {
    layer: 'the store contract imports core and its own aggregates only',
    file: 'src/store/contract/example.ts',
    refused: [
      "import x from '../sql/dialect.js';",
      "import x from '../memory.js';",
      "import x from 'pg';",
      "import x from 'hono';",
      "import x from '../../authorization-server/index.js';",
    ],
    allowed: ["import x from '../../core/protocol.js';", "import x from './grants.js';"],
  },
  {
    layer: "the SQL store written once imports no driver and no database's own files",
    file: 'src/store/sql/example.ts',
    refused: [
      "import x from 'pg';",
      "import x from 'better-sqlite3';",
      "import x from '../postgres-refresh-batch.js';",
      "import x from '../sqlite.js';",
      "import x from '../../authorization-server/index.js';",
    ],
    allowed: ["import x from './dialect.js';", "import x from '../internal.js';", "import x from '../../core/secrets.js';"],
  },
  {
    layer: 'node/ (the Node request behind a Web Request) imports core only, no framework',
    file: 'src/node/example.ts',
    refused: [
      "import x from '@hono/node-server';",
      "import x from 'hono';",
      "import x from '../authorization-server/http/body.js';",
      "import x from '../resource-server/guard.js';",
      "import x from '../store/store.js';",
    ],
    allowed: ["import x from '../core/errors.js';", "import x from 'node:http';", "import x from './request.js';"],
  },
  {
    layer: 'the authorization server answers Web Requests: no Node listener outside node-server/',
    file: 'src/authorization-server/example.ts',
    refused: ["import x from '@hono/node-server';", "import x from '../resource-server/guard.js';"],
    allowed: ["import x from 'hono';", "import x from './node-server/start.js';", "import x from '../node/request.js';"],
  },
  {
    layer: 'node-server/ runs the authorization server on a Node listener, within its role',
    file: 'src/authorization-server/node-server/example.ts',
    refused: ["import x from '../../cli/serve.js';", "import x from '../../resource-server/guard.js';"],
    allowed: ["import x from '@hono/node-server';", "import x from '../config.js';", "import x from '../../core/uri.js';"],
  },
  {
    layer: 'no endpoint imports another',
    file: 'src/authorization-server/endpoints/example.ts',
    refused: ["import x from './authorize.js';", "import x from '../../client/index.js';", "import x from '@hono/node-server';"],
    allowed: ["import x from '../http/responses.js';", "import x from '../../core/errors.js';", "import x from '../../node/request.js';"],
  },
  {
    layer: 'the roles stay apart',
    file: 'src/resource-server/example.ts',
    refused: ["import x from '../authorization-server/tokens.js';", "import x from '../store/store.js';", "import x from 'pg';"],
    allowed: ["import x from '../core/uri.js';", "import x from './guard.js';", "import x from '../node/request.js';"],
  },
  {
    layer: 'the client runs without servers or databases',
    file: 'src/client/example.ts',
    refused: [
      "import x from 'hono';",
      "import x from '../authorization-server/index.js';",
      "import x from 'better-sqlite3';",
      "import x from '../node/request.js';",
    ],
    allowed: ["import x from 'oauth4webapi';", "import x from '../core/uri.js';"],
  },
  {
    layer: 'the CLI uses the public entry points, and runs no listener of its own',
    file: 'src/cli/example.ts',
    refused: [
      "import x from '../authorization-server/keys.js';",
      "import x from '../client/session.js';",
      "import x from '../store/store.js';",
      "import x from '../authorization-server/node-server/listener.js';",
      "import x from '@hono/node-server';",
    ],
    allowed: [
      "import x from '../authorization-server/index.js';",
      "import x from '../admin/index.js';",
      "import x from '../store/sqlite.js';",
      "import x from '../demo/mcp-server.js';",
      "import x from '../cli-support.js';",
      "import x from './args.js';",
    ],
  },
  {
    layer: "the operators' API works on the store it is given, through the authorization server's operations",
    file: 'src/admin/example.ts',
    refused: [
      "import x from 'hono';",
      "import x from 'pg';",
      "import x from '../client/index.js';",
      "import x from '../resource-server/guard.js';",
      "import x from '../cli/data.js';",
    ],
    allowed: [
      "import x from '../authorization-server/admin/operations.js';",
      "import x from '../store/store.js';",
      "import x from '../core/passwords.js';",
      "import x from './users.js';",
    ],
  },
  {
    layer: "below the operators' API, nothing imports it",
    file: 'src/store/example.ts',
    refused: ["import x from '../admin/index.js';"],
    allowed: [],
  },
  {
    layer: 'the gateway is built on the public entry points, without a database',
    file: 'src/gateway/example.ts',
    refused: [
      "import x from '../resource-server/guard.js';",
      "import x from '../authorization-server/keys.js';",
      "import x from '../store/store.js';",
      "import x from 'pg';",
    ],
    allowed: [
      "import x from '../resource-server/index.js';",
      "import x from '../core/index.js';",
      "import x from './forward.js';",
      "import x from 'hono/cors';",
    ],
  },
  {
    layer: 'benchmarks use the public entry points',
    file: 'bench/example.ts',
    refused: ["import x from '../src/store/memory.js';", "import x from '../src/authorization-server/clients.js';"],
    allowed: ["import x from '../src/store/index.js';", "import x from '../test/helpers/harness.js';"],
  },
  {
    layer: 'examples import the package by its name',
    file: 'examples/example.ts',
    refused: ["import x from '../src/resource-server/index.js';", "import x from '../dist/client/index.js';", "import x from './helpers.js';"],
    allowed: ["import x from 'context-auth/resource-server';", "import x from '@modelcontextprotocol/sdk/server/mcp.js';"],
  },
];

/** The messages of no-restricted-syntax for `source` linted as if it were the file `file`. */
async function restrictedSyntax(file: string, source: string): Promise<string[]> {
  const [result] = await eslint.lintText(`${source}\n`, { filePath: path.join(root, file) });
  assert.ok(result);
  return result.messages.filter((m) => m.ruleId === 'no-restricted-syntax').map((m) => m.message);
}

describe('layering lint rules', () => {
  it('the SQL store never asks which database it runs on', async () => {
    const declared = 'declare const d: { name: string; writesInWith: boolean };\n';
    for (const source of ["export const pg = d.name === 'postgres';", "export const lite = 'sqlite' !== d.name;"]) {
      assert.equal((await restrictedSyntax('src/store/sql/example.ts', declared + source)).length, 1, source);
    }
    assert.deepEqual(await restrictedSyntax('src/store/sql/example.ts', `${declared}export const one = d.writesInWith;`), []);
    // A driver is where a database is named.
    assert.deepEqual(await restrictedSyntax('src/store/postgres.ts', `${declared}export const pg = d.name === 'postgres';`), []);
  });

  it('past the edge, the authorization server never takes a Web Request', async () => {
    const source = 'export function f(request: Request): string { return request.url; }';
    for (const file of [
      'src/authorization-server/endpoints/example.ts',
      'src/authorization-server/grants/example.ts',
      'src/authorization-server/http/params.ts',
    ]) {
      assert.equal((await restrictedSyntax(file, source)).length, 1, file);
    }
    assert.deepEqual(
      await restrictedSyntax(
        'src/authorization-server/endpoints/example.ts',
        "import type { EndpointRequest } from '../http/request.js';\nexport function f(request: EndpointRequest): URL { return request.url; }",
      ),
      [],
    );
    for (const file of ['src/authorization-server/http/from-web.ts', 'src/authorization-server/node-server/listener.ts']) {
      assert.deepEqual(await restrictedSyntax(file, source), [], file);
    }
  });

  it('an optional peer dependency is never a value import: its feature loads it when used', async () => {
    const messages = async (file: string, source: string) => {
      const [result] = await eslint.lintText(`${source}\nexport const used = x;\n`, { filePath: path.join(root, file) });
      assert.ok(result);
      return result.messages.filter((m) => m.ruleId === '@typescript-eslint/no-restricted-imports').map((m) => m.message);
    };
    for (const [file, source] of [
      ['src/store/postgres.ts', "import x from 'pg';"],
      ['src/authorization-server/metrics/metrics.ts', "import { Registry as x } from 'prom-client';"],
    ] as const) {
      assert.equal((await messages(file, source)).length, 1, `${file}: ${source} should be refused`);
    }
    assert.deepEqual(await messages('src/store/postgres.ts', "import type x from 'pg';"), []);
    assert.deepEqual(await messages('src/authorization-server/index.ts', "import type { Registry as x } from 'prom-client';"), []);
  });

  for (const { layer, file, refused, allowed } of cases) {
    it(layer, async () => {
      for (const source of refused) {
        assert.equal((await restrictedImports(file, source)).length, 1, `${file}: ${source} should be refused`);
      }
      for (const source of allowed) {
        assert.deepEqual(await restrictedImports(file, source), [], `${file}: ${source} should be allowed`);
      }
    });
  }
});
