/**
 * The pages a person sees, rendered by the real page functions and served with their real headers
 * on loopback, for the layout tests: the consent page with realistic long values, the console's
 * re-authentication with a change waiting for it, and the client's loopback callback pages.
 */
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { consentPage } from '../../src/authorization-server/pages/consent.js';
import { adminSignInPage } from '../../src/authorization-server/pages/admin/sign-in.js';

/** A dynamically registered client (a UUID) and a metadata-document client (a URL), as the server issues them. */
export const CONSENT_CASES = {
  registered: {
    clientName: 'Claude Desktop',
    clientId: '5d9c2f8e-7b1a-4c3e-9f0d-2a6b8e4c1d7f',
    clientNameUnverified: true,
    redirectHost: '127.0.0.1:53682',
    resource: 'http://127.0.0.1:8080/mcp',
  },
  document: {
    clientName: 'Example MCP client',
    clientId: 'https://mcp-client.example.com/.well-known/oauth-client/metadata.json',
    clientHost: 'mcp-client.example.com',
    redirectHost: 'mcp-client.example.com',
    resource: 'https://context.example.org/tenants/acme/mcp',
  },
} as const;

/** The console's re-authentication, a password and a provider offered, with the change it waits for. */
export const REAUTH_CHANGE = `Remove the client Claude Desktop (${CONSENT_CASES.registered.clientId})`;

export async function serveConsentPages(): Promise<{ url: (name: keyof typeof CONSENT_CASES | 'reauth') => string; server: Server }> {
  const server = createServer((request, response) => {
    if (request.url === '/reauth') {
      const page = adminSignInPage({
        action: '/admin',
        csrfToken: 'csrf',
        mode: 'reauth',
        username: 'root',
        returnTo: 'clients',
        localUsers: true,
        providers: [{ id: 'corp', name: 'Corp SSO' }],
        pending: { description: REAUTH_CHANGE, fields: { then: 'remove-client', 'then.client_id': CONSENT_CASES.registered.clientId } },
        status: 401,
      });
      response.writeHead(page.status, page.headers).end(page.body);
      return;
    }
    const name = (request.url ?? '/').slice(1) as keyof typeof CONSENT_CASES;
    const input = CONSENT_CASES[name];
    if (!input) {
      response.writeHead(404).end();
      return;
    }
    const page = consentPage({ action: '/interaction/x', csrfToken: 'csrf', username: 'alice', scopes: ['mcp:tools', 'mcp:admin'], formTargets: [], ...input });
    response.writeHead(page.status, page.headers).end(page.body);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as AddressInfo).port;
  return { url: (name) => `http://127.0.0.1:${port}/${name}`, server };
}
