import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import globals from 'globals';

// ---------------------------------------------------------------------------------------------
// Layering (docs/architecture.md), checked on every `npm test`: data flows one way, and a layer that
// reaches up or sideways fails the lint. One `no-restricted-imports` entry per folder, because a
// later flat-config entry replaces an earlier one's options rather than adding to them.

const FRAMEWORKS = ['hono', 'hono/*', '@hono/*', 'express', '@modelcontextprotocol/*'];
const DRIVERS = ['better-sqlite3', 'pg'];

/** A relative import into one of `folders` (siblings of the importing file's top folder). */
const into = (folders, message) => ({ regex: `^(\\.\\./)+(${folders.join('|')})(/|$)`, message });
const packages = (names, message) => ({ group: names, message });

/** What the CLI, the benchmarks and the conformance entry may import: the package's public entry points. */
const PUBLIC_ENTRY = '(authorization-server|resource-server|client|core|store|admin|gateway)/index\\.js$|store/(sqlite|postgres)\\.js$';
const onlyPublic = (prefix, extra = '') => ({
  regex: `^${prefix}(?!${PUBLIC_ENTRY}${extra})`,
  message: 'import the public entry point (index.js, store/sqlite.js, store/postgres.js), as a user of the package would',
});

const AS_ROLE = into(
  ['resource-server', 'client', 'cli', 'demo'],
  'the authorization server is a role of its own; share code through core (or node/, for the Node request)',
);
/** The server answers Web Requests; a Node listener, and the order of start and stop around it, are node-server/'s alone. */
const AS_WEB_STANDARD = packages(
  ['@hono/node-server'],
  "the authorization server answers Web Requests; running it on a Node listener is node-server/'s job (startAuthorizationServer)",
);

const restrict = (files, patterns) => ({ files, rules: { 'no-restricted-imports': ['error', { patterns }] } });

const layering = [
  restrict(
    ['src/core/**'],
    [
      packages([...FRAMEWORKS, ...DRIVERS], 'core is pure protocol: no HTTP framework, no database driver'),
      into(
        ['store', 'node', 'authorization-server', 'resource-server', 'client', 'admin', 'cli', 'demo'],
        'core sits below everything; it imports nothing of ours but core',
      ),
    ],
  ),
  restrict(
    ['src/store/**'],
    [
      packages(FRAMEWORKS, 'the store knows nothing of HTTP'),
      into(['node', 'authorization-server', 'resource-server', 'client', 'admin', 'cli', 'demo'], 'the store sits below the roles; it may import core only'),
    ],
  ),
  // The contract is records and interfaces: core's types and its own aggregates, nothing of a store.
  restrict(
    ['src/store/contract/**'],
    [
      packages([...FRAMEWORKS, ...DRIVERS], 'the contract is what every store implements: no framework, no database driver'),
      { regex: '^\\.\\./(?!\\.\\./core/)', message: 'the contract imports core and its own aggregates only, nothing of a store' },
    ],
  ),
  // The SQL store written once: a driver and the PostgreSQL decorators sit beside it, never under it.
  restrict(
    ['src/store/sql/**'],
    [
      packages([...FRAMEWORKS, ...DRIVERS], 'the SQL store is written once for every database: the drivers (sqlite.ts, postgres.ts) bring the database'),
      into(['node', 'authorization-server', 'resource-server', 'client', 'admin', 'cli', 'demo'], 'the store sits below the roles; it may import core only'),
      {
        regex: '^\\.\\./(sqlite|postgres)',
        message: 'the SQL store is written once for every database: what one database does differently is data in dialect.ts',
      },
    ],
  ),
  // The Node adapter helpers both servers use: beside core, below the roles.
  restrict(
    ['src/node/**'],
    [
      packages([...FRAMEWORKS, ...DRIVERS], 'node/ is handed the Node request; it needs no HTTP framework, no database driver'),
      into(['store', 'authorization-server', 'resource-server', 'client', 'admin', 'cli', 'demo'], 'node/ sits below the roles; it may import core only'),
    ],
  ),
  restrict(['src/authorization-server/**'], [AS_ROLE, AS_WEB_STANDARD]),
  // Endpoints are assembled from checks, grants and http helpers, never from each other.
  restrict(
    ['src/authorization-server/endpoints/**'],
    [AS_ROLE, AS_WEB_STANDARD, { regex: '^\\./', message: 'no endpoint imports another: move what they share below the endpoints' }],
  ),
  // The one place that runs the server on a Node listener, and owns its start and stop.
  restrict(['src/authorization-server/node-server/**'], [AS_ROLE]),
  restrict(
    ['src/resource-server/**'],
    [
      packages(DRIVERS, 'the resource server needs no database'),
      into(
        ['authorization-server', 'client', 'store', 'admin', 'cli', 'demo'],
        'the resource server is a role of its own; share code through core (or node/, for the Node request)',
      ),
    ],
  ),
  restrict(
    ['src/client/**'],
    [
      packages(['hono', 'hono/*', '@hono/*', 'express', ...DRIVERS], 'the client runs without a server framework or a database'),
      into(['authorization-server', 'resource-server', 'store', 'node', 'admin', 'cli', 'demo'], 'the client is a role of its own; share code through core'),
    ],
  ),
  // What an operator does to a store: above the authorization server, whose operations it reuses.
  restrict(
    ['src/admin/**'],
    [
      packages([...FRAMEWORKS, ...DRIVERS], "the operators' API works on any store it is given: no HTTP framework, no database driver"),
      into(['resource-server', 'client', 'node', 'cli', 'demo'], "the operators' API uses the authorization server, the store and core only"),
    ],
  ),
  restrict(['src/demo/**'], [onlyPublic('\\.\\./', '|cli-support\\.js$')]),
  // The gateway is the resource server's guard in front of servers of others: built on the public entry points.
  restrict(['src/gateway/**'], [onlyPublic('\\.\\./'), packages(DRIVERS, 'the gateway needs no database')]),
  // The CLI is a thin shell over the public APIs (plus the demo server it runs): `serve` runs the
  // library's listener, whose start and stop order a user embedding the server gets too.
  restrict(
    ['src/cli/**'],
    [
      onlyPublic('\\.\\./', '|demo/|cli-support\\.js$'),
      packages(['@hono/node-server'], 'serve runs the server with startAuthorizationServer, as a program embedding it would'),
    ],
  ),
  restrict(['bench/**', 'conformance/**'], [onlyPublic('\\.\\./src/')]),
  // The examples are what users copy: the package by its public name (context-auth/…), never a path.
  restrict(['examples/**'], [{ regex: '^\\.\\.?/', message: "import the package by its name, 'context-auth/…', as the reader's own code will" }]),
];

/** The generic SQL asks its dialect for data, never which database it runs on. */
const dialectNeutral = {
  files: ['src/store/sql/**'],
  rules: {
    'no-restricted-syntax': [
      'error',
      {
        selector: 'BinaryExpression > Literal[value=/^(sqlite|postgres)$/]',
        message: 'the SQL store is written once: put what this database does differently in its dialect, as data (dialect.ts)',
      },
    ],
  },
};

/**
 * Requests are read once at the edge (docs/architecture.md): past it, the authorization server
 * sees an EndpointRequest, never the Web Request. The edge is the route and its two adapters, the
 * Node listener, and the public entry and options (`handle`, the `clientAddress` option).
 */
const AS_EDGE = [
  'src/authorization-server/http/routes.ts',
  'src/authorization-server/http/from-web.ts',
  'src/authorization-server/node-server/**',
  'src/authorization-server/index.ts',
  'src/authorization-server/config.ts',
];
const requestsAtTheEdge = {
  files: ['src/authorization-server/**'],
  ignores: AS_EDGE,
  rules: {
    'no-restricted-syntax': [
      'error',
      {
        selector: "TSTypeReference > Identifier.typeName[name='Request']",
        message:
          'past the edge a request is an EndpointRequest (http/request.ts); only the edge (http/routes.ts, http/from-web.ts, node-server/) reads a Web Request',
      },
    ],
  },
};

/**
 * Peer dependencies that only an optional feature needs are loaded when the feature is used
 * (core/optional-package.ts), so that a program without them can import every entry point; their
 * types may be imported anywhere.
 */
const OPTIONAL_PEERS = ['pg', 'prom-client'];
const optionalPeers = {
  files: ['src/**'],
  rules: {
    '@typescript-eslint/no-restricted-imports': [
      'error',
      {
        paths: OPTIONAL_PEERS.map((name) => ({
          name,
          allowTypeImports: true,
          message: `${name} is an optional peer dependency: load it with loadOptionalPackage (core/optional-package.ts) where its feature is used`,
        })),
      },
    ],
  },
};

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', 'test-results/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-console': ['error', { allow: ['error', 'warn'] }],
      eqeqeq: ['error', 'always'],
    },
  },
  {
    files: ['**/*.js', '**/*.mjs'],
    languageOptions: { globals: globals.node },
  },
  {
    files: ['src/cli/**', 'bench/**', 'test/**', 'conformance/**', 'examples/**'],
    rules: { 'no-console': 'off' },
  },
  ...layering,
  dialectNeutral,
  requestsAtTheEdge,
  optionalPeers,
);
