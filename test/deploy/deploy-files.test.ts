/**
 * The files under deploy/ agree with the code they start: every path the Dockerfile copies or
 * runs exists (or is what the build makes), every `serve` flag they pass is one serve knows, the
 * compose file parses with the services and wiring docs/deployment.md describes, and the proxies
 * point at those services. The image itself is not built here: no Docker daemon runs in CI.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, it } from 'node:test';
import { parse } from 'yaml';
import { SERVE_HELP } from '../../src/cli/serve.js';

const ROOT = resolve(import.meta.dirname, '../..');
const read = (path: string): string => readFileSync(join(ROOT, path), 'utf8');

/** The Dockerfile's instructions, continuation lines joined. */
function instructions(dockerfile: string): { op: string; args: string }[] {
  return dockerfile
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line && !line.startsWith('#'))
    .map((line) => {
      const [op, ...rest] = line.split(/\s+/);
      return { op: op!.toUpperCase(), args: rest.join(' ') };
    });
}

/** The --flags in a command line, without their values. */
const flagsOf = (args: string[]): string[] => args.filter((arg) => arg.startsWith('--')).map((arg) => arg.split('=')[0]!);

/** Fails for a flag serve's help does not list. */
function assertServeFlags(flags: string[], where: string): void {
  assert.ok(flags.length > 0, `${where}: no flags found`);
  for (const flag of flags) assert.match(SERVE_HELP, new RegExp(`(^|\\s)${flag}(\\s|$)`, 'm'), `${where}: serve has no ${flag}`);
}

describe('deploy/Dockerfile', () => {
  const steps = instructions(read('deploy/Dockerfile'));
  const final = steps.slice(steps.map((s) => s.op).lastIndexOf('FROM'));

  it('copies only files that exist in the repository', () => {
    const copies = steps.filter((s) => s.op === 'COPY' && !s.args.startsWith('--from'));
    assert.ok(copies.length >= 3);
    for (const copy of copies) {
      const sources = copy.args.split(/\s+/).slice(0, -1);
      for (const source of sources) assert.ok(existsSync(join(ROOT, source)), `COPY ${source}: no such file`);
    }
    // .dockerignore keeps local builds and dependencies out of the context.
    const ignored = read('.dockerignore').split('\n');
    for (const entry of ['node_modules', 'dist']) assert.ok(ignored.includes(entry), `.dockerignore lacks ${entry}`);
  });

  it('runs the CLI the build makes, as a user that is not root, with /data as its volume', () => {
    const outDir = (JSON.parse(read('tsconfig.build.json')) as { compilerOptions: { outDir: string; rootDir?: string } }).compilerOptions;
    const entry = final.find((s) => s.op === 'ENTRYPOINT');
    assert.ok(entry);
    const [node, script] = JSON.parse(entry.args) as string[];
    assert.equal(node, 'node');
    // /app/dist/cli/main.js is what tsc makes of src/cli/main.ts.
    assert.equal(script, `/app/${outDir.outDir.replace(/^\.\//, '')}/cli/main.js`);
    assert.ok(existsSync(join(ROOT, 'src/cli/main.ts')));
    const user = final.filter((s) => s.op === 'USER').at(-1);
    assert.ok(user && user.args !== 'root' && user.args !== '0', `USER ${user?.args}`);
    assert.ok(final.some((s) => s.op === 'VOLUME' && s.args.includes('/data')));
    assert.ok(
      final.some((s) => s.op === 'ENV' && /CONTEXT_AUTH_DATA=\/data/.test(s.args)),
      'the data folder is the volume',
    );
    assert.match(final.find((s) => s.op === 'HEALTHCHECK')?.args ?? '', /http:\/\/127\.0\.0\.1:8080\/readyz/);
  });

  it('keeps the optional peer dependencies (pg for the replicas of compose.yaml, prom-client for --metrics) when it prunes', () => {
    const peers = Object.keys((JSON.parse(read('package.json')) as { peerDependencies: Record<string, string> }).peerDependencies);
    assert.ok(peers.includes('pg') && peers.includes('prom-client'), peers.join(', '));
    const run = steps.find((s) => s.op === 'RUN' && s.args.includes('npm prune'));
    assert.ok(run, 'no RUN prunes the dev dependencies');
    const prune = run.args.indexOf('npm prune');
    // npm prunes a package that is a dev dependency, whatever else it is: each peer becomes a dependency first.
    assert.ok(run.args.indexOf('npm pkg set') >= 0 && run.args.indexOf('npm pkg set') < prune, 'the peers are made dependencies before the prune');
    assert.ok(run.args.indexOf('npm pkg delete') >= 0 && run.args.indexOf('npm pkg delete') < prune, 'and stop being dev dependencies');
    assert.match(run.args, /peerDependencies\)\.map\(\(\[name, range\]\) => 'dependencies\.' \+ name/);
  });

  it('passes serve only flags it knows', () => {
    const cmd = JSON.parse(final.find((s) => s.op === 'CMD')!.args) as string[];
    assert.equal(cmd[0], 'serve');
    assertServeFlags(flagsOf(cmd), 'CMD');
  });
});

describe('deploy/compose.yaml', () => {
  const compose = parse(read('deploy/compose.yaml')) as {
    services: Record<
      string,
      {
        image?: string;
        build?: { context: string; dockerfile: string };
        command?: string[];
        environment?: Record<string, string>;
        volumes?: string[];
        depends_on?: unknown;
        healthcheck?: unknown;
      }
    >;
    networks: Record<string, { ipam: { config: { subnet: string }[] } }>;
  };

  it('has PostgreSQL, two serve replicas built from the Dockerfile, and Caddy', () => {
    assert.deepEqual(Object.keys(compose.services).sort(), ['auth-1', 'auth-2', 'caddy', 'postgres']);
    for (const name of ['auth-1', 'auth-2']) {
      const service = compose.services[name]!;
      assert.equal(service.build?.dockerfile, 'deploy/Dockerfile');
      assert.ok(existsSync(join(ROOT, 'deploy', service.build!.context, service.build!.dockerfile)));
      assert.match(service.environment?.CONTEXT_AUTH_STORE ?? '', /^postgres:\/\/[^@]+@postgres:5432\//, 'the replicas share the postgres service');
      assert.equal(service.command?.[0], 'serve');
      assertServeFlags(flagsOf(service.command!), name);
    }
    // Same issuer and store on both: a token from one replica is good at the other.
    assert.deepEqual(compose.services['auth-1'], compose.services['auth-2']);
  });

  it('refuses to start without a database password: none is written down as a default', () => {
    const text = read('deploy/compose.yaml');
    const uses = [...text.matchAll(/\$\{POSTGRES_PASSWORD([^}]*)\}/g)].map((m) => m[1]!);
    assert.ok(uses.length >= 2, 'the database and the replicas both take POSTGRES_PASSWORD');
    // ${VAR:?message} makes compose stop with the message when VAR is unset or empty.
    for (const use of uses) assert.match(use, /^:\?/, `\${POSTGRES_PASSWORD${use}} lets compose start without a password`);
    assert.equal(compose.services.postgres!.environment?.POSTGRES_PASSWORD, '${POSTGRES_PASSWORD:?set POSTGRES_PASSWORD}');
  });

  it('trusts the network the proxy is on, and the proxy serves the Caddyfile', () => {
    const subnet = Object.values(compose.networks)[0]!.ipam.config[0]!.subnet;
    assert.ok(compose.services['auth-1']!.command!.includes(`--trust-proxy=${subnet}`), `--trust-proxy=${subnet}`);
    const mount = compose.services.caddy!.volumes!.find((v) => v.endsWith(':/etc/caddy/Caddyfile:ro'));
    assert.ok(mount && existsSync(join(ROOT, 'deploy', mount.split(':')[0]!)));
    const caddyfile = read('deploy/Caddyfile');
    assert.match(caddyfile, /reverse_proxy auth-1:8080 auth-2:8080/);
    assert.match(caddyfile, /health_uri \/readyz/);
    assert.match(JSON.stringify(compose.services['auth-1']!.healthcheck), /http:\/\/127\.0\.0\.1:8080\/readyz/);
  });
});

describe('deploy/context-auth.service and deploy/nginx.conf', () => {
  it('start serve as an unprivileged user with flags serve knows', () => {
    const unit = read('deploy/context-auth.service');
    const exec = /^ExecStart=(.+)$/m.exec(unit)?.[1]?.split(/\s+/) ?? [];
    assert.ok(exec.includes('serve'), exec.join(' '));
    assertServeFlags(flagsOf(exec), 'ExecStart');
    assert.match(unit, /^User=context-auth$/m);
    assert.match(unit, /^StateDirectory=context-auth$/m);
    assert.match(unit, /^Environment=CONTEXT_AUTH_DATA=\/var\/lib\/context-auth$/m, 'the data folder is the state directory');
  });

  it('nginx passes the client address and proxies to the port serve listens on', () => {
    const conf = read('deploy/nginx.conf');
    assert.match(conf, /proxy_set_header X-Forwarded-For \$remote_addr;/);
    assert.match(conf, /server 127\.0\.0\.1:8080;/);
    assertServeFlags(flagsOf(/#\s+context-auth (serve .+)$/m.exec(conf)![1]!.split(/\s+/)), 'nginx.conf comment');
  });
});
