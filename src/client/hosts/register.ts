/**
 * `doctor --register`: one throwaway dynamic registration with a host's own body, to see whether
 * the server takes it; deleted again where the server offers RFC 7592 management on its own
 * origin, otherwise named so that its operator can delete it.
 */
import type { HostDiscovery, StepFailure } from './discover.js';
import { answered, type Prober } from './prober.js';
import { registrationBody, type HostContext } from './requests.js';
import type { HostProfile } from './types.js';

export interface ThrowawayRegistration {
  host: string;
  profile: string;
  endpoint: string;
  /** The client the server made; absent when it refused. */
  clientId?: string;
  /** Deleted again through its registration_client_uri (RFC 7592). */
  deleted?: boolean;
}

/** The fix for a refused registration: a private-use redirect scheme has a switch of its own in serve. */
function refusalFix(profile: HostProfile, body: Record<string, unknown>, error: unknown): string {
  const uris = Array.isArray(body.redirect_uris) ? (body.redirect_uris as string[]) : [];
  const privateUse = uris.find((uri) => !/^https?:/i.test(uri));
  if (error === 'invalid_redirect_uri' && privateUse) {
    const scheme = privateUse.slice(0, privateUse.indexOf(':'));
    return `accept ${profile.host}'s redirect URI ${privateUse}, a private-use scheme (RFC 8252 §7.1; context-auth serve: --allow-redirect-scheme ${scheme})`;
  }
  return `accept ${profile.host}'s registration request (${JSON.stringify(body)})`;
}

/** A loopback port for `{port}`: any will do, since nothing listens in a registration. */
const THROWAWAY_PORT = 54321;

export async function registerAsHost(
  profile: HostProfile,
  discovery: HostDiscovery,
  mcpUrl: string,
  prober: Prober,
  fetchImpl: typeof fetch,
): Promise<{ registration: ThrowawayRegistration; failure?: StepFailure }> {
  const endpoint = String(discovery.authorizationServer?.registration_endpoint);
  const context: HostContext = { mcpUrl, discovery, port: THROWAWAY_PORT };
  const body = registrationBody(profile, context);
  const answer = await prober.request({ method: 'POST', url: endpoint, body, follow: false });
  const registration: ThrowawayRegistration = { host: profile.host, profile: profile.id, endpoint };
  const clientId = answer.json?.client_id;
  if ((answer.status !== 201 && answer.status !== 200) || typeof clientId !== 'string') {
    return { registration, failure: { step: 'registration', answered: `POST ${endpoint}: ${answered(answer)}`, fix: refusalFix(profile, body, answer.json?.error) } };
  }
  registration.clientId = clientId;
  const manage = answer.json?.registration_client_uri;
  const token = answer.json?.registration_access_token;
  // The management token goes only back to the server that gave it, on the registration's origin.
  if (typeof manage === 'string' && typeof token === 'string' && URL.canParse(manage) && new URL(manage).origin === new URL(endpoint).origin) {
    try {
      const deleted = await fetchImpl(manage, { method: 'DELETE', headers: { authorization: `Bearer ${token}` }, redirect: 'manual', signal: AbortSignal.timeout(10_000) });
      await deleted.body?.cancel();
      registration.deleted = deleted.status === 204 || deleted.status === 200;
    } catch {
      registration.deleted = false;
    }
  }
  return { registration };
}
