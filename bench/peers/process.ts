/**
 * The driver's side of a server under test: start it in its own process (bench/peers/*.ts),
 * ask it for its CPU time and RSS, send it refresh_token grants, flows and other token requests,
 * stop it. Shared by the peers benches and the test that checks each peer is set up as the README
 * says.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import http from 'node:http';
import { resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { Browser, pkcePair, signInAndConsent } from '../../test/helpers/harness.js';
import { chains, READY, type Ready, type Usage } from './child.js';

export interface Peer {
  name: string;
  script: string;
  args?: string[];
  env?: Record<string, string>;
  /** Flags for node itself (`--cpu-prof`, to see where the time goes; NODE_OPTIONS refuses it). */
  nodeFlags?: string[];
}

export interface Running extends Ready {
  name: string;
  child: ChildProcess;
  usage(): Promise<Usage>;
}

/** Starts a server under test in its own process (pinned to core 0 when `pin`) and waits until it is ready. */
export async function startPeer(peer: Peer, pin: boolean): Promise<Running> {
  const command = [process.execPath, ...(peer.nodeFlags ?? []), '--import', 'tsx', resolve(import.meta.dirname, peer.script), ...(peer.args ?? [])];
  const [file, ...args] = pin ? ['taskset', '-c', '0', ...command] : command;
  const child = spawn(file!, args, { stdio: ['ignore', 'pipe', 'pipe', 'ipc'], env: { ...process.env, ...peer.env, BENCH_CHAINS: String(chains()) } });
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => void (stderr += chunk.toString()));
  const lines = createInterface({ input: child.stdout! });
  const ready = await new Promise<Ready>((resolveReady, reject) => {
    lines.on('line', (line) => line.startsWith(READY) && resolveReady(JSON.parse(line.slice(READY.length)) as Ready));
    child.once('exit', (code) => reject(new Error(`${peer.name} exited (${code}) before it was ready:\n${stderr}`)));
  });
  const usage = async (): Promise<Usage> => {
    child.send('usage');
    const [message] = (await once(child, 'message')) as [Usage];
    return message;
  };
  return { ...ready, name: peer.name, child, usage };
}

export async function stopPeer(server: Running): Promise<void> {
  const exited = once(server.child, 'exit');
  server.child.disconnect();
  await exited;
}

/** One keep-alive connection per chain: a client keeps its connection, as a real one would. */
const agent = new http.Agent({ keepAlive: true, maxSockets: chains() });

export function closeConnections(): void {
  agent.destroy();
}

/** One refresh_token grant (with `headers`, e.g. DPoP); resolves with the rotated refresh token, rejects on any other answer. */
export async function refresh(server: Running, refreshToken: string, headers: Record<string, string> = {}): Promise<string> {
  const form = { grant_type: 'refresh_token', refresh_token: refreshToken, client_id: server.clientId, ...server.extra };
  const token = (await tokenGrant(server, form, headers)).refresh_token;
  if (typeof token !== 'string') throw new Error(`${server.name}: refresh answered no refresh_token`);
  return token;
}

/** One POST /token with `form` (and `headers`, e.g. Basic); resolves with the JSON answer, rejects on any answer but 200 with an access token. */
export async function tokenGrant(server: Running, form: Record<string, string>, headers: Record<string, string> = {}): Promise<Record<string, unknown>> {
  const body = new URLSearchParams(form).toString();
  const answer = await exchange(server, 'POST', server.tokenPath ?? '/token', { 'content-type': 'application/x-www-form-urlencoded', ...headers }, body);
  const parsed = answer.status === 200 ? (JSON.parse(answer.text) as Record<string, unknown>) : {};
  if (typeof parsed.access_token !== 'string') throw new Error(`${server.name}: token answered ${answer.status} ${answer.text.slice(0, 300)}`);
  return parsed;
}

/** One HTTP exchange on the keep-alive agent; resolves with status, headers and body text. */
function exchange(
  server: Running,
  method: 'GET' | 'POST',
  path: string,
  headers: Record<string, string>,
  body?: string,
  retried = false,
): Promise<{ status: number; headers: http.IncomingHttpHeaders; text: string }> {
  return new Promise((resolveAnswer, reject) => {
    const request = http.request(
      {
        host: '127.0.0.1',
        port: server.port,
        path,
        method,
        agent,
        headers: body === undefined ? headers : { ...headers, 'content-length': Buffer.byteLength(body) },
      },
      (response) => {
        let text = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => (text += chunk));
        response.on('end', () => resolveAnswer({ status: response.statusCode ?? 0, headers: response.headers, text }));
      },
    );
    request.on('error', (error: NodeJS.ErrnoException) => {
      // A kept-alive connection the server closed while it sat idle (between rounds, the servers'
      // keep-alive timeout passes): the request never reached it, so it is sent again once.
      if (request.reusedSocket && error.code === 'ECONNRESET' && !retried) resolveAnswer(exchange(server, method, path, headers, body, true));
      else reject(error);
    });
    request.end(body);
  });
}

/**
 * One authorization code flow of a client reconnecting for a signed-in person whose consent is
 * remembered: GET /authorize (PKCE S256, resource) with the chain's cookies must redirect straight
 * to the redirect URI with a code, and the code must redeem at /token for an access token and a
 * refresh token. The chain's cookies are updated from Set-Cookie as a browser would. Resolves with
 * the token response; rejects on any other answer.
 */
export async function flow(server: Running, chain: number): Promise<{ access_token: string; refresh_token: string }> {
  const setup = server.flow;
  if (!setup) throw new Error(`${server.name}: started without BENCH_FLOWS=1`);
  const verifier = randomBytes(32).toString('base64url');
  const challenge = createHash('sha256').update(verifier).digest('base64url');
  const query = new URLSearchParams({
    response_type: 'code',
    client_id: server.clientId,
    redirect_uri: setup.redirectUri,
    scope: setup.scope,
    resource: setup.resource,
    code_challenge: challenge,
    code_challenge_method: 'S256',
    state: `s${chain}`,
  });
  const cookie = setup.cookies[chain];
  const answer = await exchange(server, 'GET', `${setup.authorizePath}?${query}`, cookie ? { cookie } : {});
  const location = answer.headers.location;
  if ((answer.status !== 302 && answer.status !== 303) || !location?.startsWith(setup.redirectUri)) {
    throw new Error(`${server.name}: authorize answered ${answer.status} ${location ?? answer.text.slice(0, 300)}`);
  }
  if (cookie && answer.headers['set-cookie']) setup.cookies[chain] = updatedCookies(cookie, answer.headers['set-cookie']);
  const callback = new URL(location);
  const code = callback.searchParams.get('code');
  if (!code || callback.searchParams.get('state') !== `s${chain}`) throw new Error(`${server.name}: no code (or wrong state) in ${location}`);
  const body = new URLSearchParams({
    grant_type: 'authorization_code',
    code,
    code_verifier: verifier,
    redirect_uri: setup.redirectUri,
    client_id: server.clientId,
    resource: setup.resource,
  }).toString();
  const tokens = await exchange(server, 'POST', server.tokenPath ?? '/token', { 'content-type': 'application/x-www-form-urlencoded' }, body);
  const parsed = tokens.status === 200 ? (JSON.parse(tokens.text) as { access_token?: string; refresh_token?: string }) : {};
  if (!parsed.access_token || !parsed.refresh_token) throw new Error(`${server.name}: token answered ${tokens.status} ${tokens.text.slice(0, 300)}`);
  return parsed as { access_token: string; refresh_token: string };
}

/** A Cookie header with the values Set-Cookie replaced (an emptied or expired cookie dropped). */
function updatedCookies(header: string, setCookies: string[]): string {
  const jar = new Map(header.split('; ').map((pair) => [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1)]));
  for (const line of setCookies) {
    const pair = line.split(';')[0]!;
    const name = pair.slice(0, pair.indexOf('='));
    const value = pair.slice(pair.indexOf('=') + 1);
    if (!jar.has(name)) continue; // cookies for other paths (interactions) are not part of the reconnect
    if (value === '' || /expires=Thu, 01 Jan 1970/i.test(line)) jar.delete(name);
    else jar.set(name, value);
  }
  return [...jar].map(([k, v]) => `${k}=${v}`).join('; ');
}

/**
 * A person's first sign-in in a fresh browser (ours only: the server names a user): /authorize,
 * the login page, the password (scrypt), the remembered consent, the code redeemed. Resolves with
 * the token response; rejects on any other answer.
 */
export async function firstSignIn(server: Running): Promise<{ access_token: string; refresh_token: string }> {
  const setup = server.flow;
  if (!setup?.user) throw new Error(`${server.name}: names no user to sign in`);
  const origin = `http://127.0.0.1:${server.port}`;
  const browser = new Browser((path, init) => fetch(new URL(path, origin), init));
  const { verifier, challenge } = pkcePair();
  const query = new URLSearchParams({
    response_type: 'code',
    client_id: server.clientId,
    redirect_uri: setup.redirectUri,
    scope: setup.scope,
    resource: setup.resource,
    code_challenge: challenge,
    code_challenge_method: 'S256',
    state: 's',
  });
  const first = await browser.fetch(`${setup.authorizePath}?${query}`);
  if (first.status !== 303 || !first.headers.get('location')?.includes('/interaction/'))
    throw new Error(`${server.name}: a fresh browser was not sent to sign in (${first.status})`);
  const callback = await signInAndConsent(browser, first, setup.user, 'approve', origin);
  const code = callback.searchParams.get('code');
  if (!code || !callback.href.startsWith(setup.redirectUri)) throw new Error(`${server.name}: first sign-in ended at ${callback}`);
  const tokens = await fetch(`${origin}/token`, {
    method: 'POST',
    body: new URLSearchParams({
      grant_type: 'authorization_code',
      code,
      code_verifier: verifier,
      redirect_uri: setup.redirectUri,
      client_id: server.clientId,
      resource: setup.resource,
    }),
  });
  const text = await tokens.text();
  const parsed = tokens.status === 200 ? (JSON.parse(text) as { access_token?: string; refresh_token?: string }) : {};
  if (!parsed.access_token || !parsed.refresh_token) throw new Error(`${server.name}: token answered ${tokens.status} ${text.slice(0, 300)}`);
  return parsed as { access_token: string; refresh_token: string };
}
