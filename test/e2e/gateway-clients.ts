/** What the gateway's end-to-end tests do as clients: machine clients, their tokens, MCP requests by hand. */
import assert from 'node:assert/strict';
import { Client, ClientCredentialsProvider, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { cli } from './serve-process.js';

export interface MachineClient {
  client_id: string;
  client_secret: string;
}

export async function addClient(data: string, name: string, extra: string[] = []): Promise<MachineClient> {
  const added = await cli(['clients', 'add', '--data', data, '--grant-type', 'client_credentials', '--name', name, ...extra]);
  assert.equal(added.code, 0, added.stderr);
  return JSON.parse(added.stdout) as MachineClient;
}

export async function tokenFor(issuer: string, client: MachineClient, resource: string): Promise<string> {
  const response = await fetch(`${issuer}/token`, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      authorization: `Basic ${Buffer.from(`${client.client_id}:${client.client_secret}`).toString('base64')}`,
    },
    body: new URLSearchParams({ grant_type: 'client_credentials', resource }),
  });
  const body = (await response.json()) as { access_token?: string };
  assert.equal(response.status, 200, JSON.stringify(body));
  return body.access_token!;
}

/** The SDK v2 client with its client-credentials provider: discovery and the token, all from the 401. */
export async function sdkClient(url: string, client: MachineClient, issuer: string): Promise<{ sdk: Client; transport: StreamableHTTPClientTransport }> {
  const sdk = new Client({ name: 'gateway-e2e', version: '1.0.0' });
  const authProvider = new ClientCredentialsProvider({ clientId: client.client_id, clientSecret: client.client_secret, expectedIssuer: issuer });
  const transport = new StreamableHTTPClientTransport(new URL(url), { authProvider });
  await sdk.connect(transport);
  return { sdk, transport };
}

export const textOf = (result: unknown): string => (result as { content: { text: string }[] }).content[0]!.text;

export const MCP_HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };

export function initialize(id: number): unknown {
  return {
    jsonrpc: '2.0',
    id,
    method: 'initialize',
    params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'gateway-e2e', version: '1.0.0' } },
  };
}

/** Reads an event stream until `pattern` shows up; what was read, and the reader to go on with. */
export async function readUntil(body: ReadableStream<Uint8Array>, pattern: RegExp): Promise<{ text: string; reader: ReadableStreamDefaultReader<Uint8Array> }> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let text = '';
  while (!pattern.test(text)) {
    const { done, value } = await reader.read();
    if (done) throw new Error(`the stream ended before ${pattern}: ${text}`);
    text += decoder.decode(value, { stream: true });
  }
  return { text, reader };
}
