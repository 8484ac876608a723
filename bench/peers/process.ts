/**
 * The driver's side of a server under test: start it in its own process (bench/peers/*.ts),
 * ask it for its CPU time and RSS, send it refresh_token grants, stop it. Shared by
 * bench/refresh-peers.ts and the test that checks each peer is set up as the README says.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import http from 'node:http';
import { resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { chains, READY, type Ready, type Usage } from './child.js';

export interface Peer {
  name: string;
  script: string;
  args?: string[];
  env?: Record<string, string>;
}

export interface Running extends Ready {
  name: string;
  child: ChildProcess;
  usage(): Promise<Usage>;
}

/** Starts a server under test in its own process (pinned to core 0 when `pin`) and waits until it is ready. */
export async function startPeer(peer: Peer, pin: boolean): Promise<Running> {
  const command = [process.execPath, '--import', 'tsx', resolve(import.meta.dirname, peer.script), ...(peer.args ?? [])];
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

/** One refresh_token grant; resolves with the rotated refresh token, rejects on any other answer. */
export function refresh(server: Running, refreshToken: string, retried = false): Promise<string> {
  const body = new URLSearchParams({ grant_type: 'refresh_token', refresh_token: refreshToken, client_id: server.clientId, ...server.extra }).toString();
  return new Promise((resolveToken, reject) => {
    const request = http.request(
      { host: '127.0.0.1', port: server.port, path: '/token', method: 'POST', agent, headers: { 'content-type': 'application/x-www-form-urlencoded', 'content-length': Buffer.byteLength(body) } },
      (response) => {
        let text = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => (text += chunk));
        response.on('end', () => {
          const token = response.statusCode === 200 ? (JSON.parse(text) as { refresh_token?: string }).refresh_token : undefined;
          if (token) resolveToken(token);
          else reject(new Error(`${server.name}: refresh answered ${response.statusCode} ${text.slice(0, 300)}`));
        });
      },
    );
    request.on('error', (error: NodeJS.ErrnoException) => {
      // A kept-alive connection the server closed while it sat idle (between rounds, the servers'
      // keep-alive timeout passes): the request never reached it, so it is sent again once.
      if (request.reusedSocket && error.code === 'ECONNRESET' && !retried) resolveToken(refresh(server, refreshToken, true));
      else reject(error);
    });
    request.end(body);
  });
}
