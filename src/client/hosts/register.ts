/**
 * `doctor --register`: one throwaway dynamic registration with a host's own body, to see whether
 * the server takes it; deleted again where the server offers RFC 7592 management on its own
 * origin, otherwise named so that its operator can delete it.
 */
import type { HostDiscovery, StepFailure } from './discover.js';
import { answered, type Prober } from './prober.js';
import { redirectUriOf, registrationBody, type HostContext } from './requests.js';
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
  if (error === 'invalid_redirect_uri' && privateUse) return privateUseFix(profile, privateUse);
  return `accept ${profile.host}'s registration request (${JSON.stringify(body)})`;
}

function privateUseFix(profile: HostProfile, uri: string): string {
  const scheme = uri.slice(0, uri.indexOf(':'));
  return `accept ${profile.host}'s redirect URI ${uri}, a private-use scheme (RFC 8252 §7.1; context-auth serve: --allow-redirect-scheme ${scheme})`;
}

/**
 * Whether the registered client kept the redirect URI the host returns to (a server may leave out
 * some of those asked for, RFC 7591 §2); a loopback URI matches whatever its port (RFC 8252 §7.3).
 */
function keeps(registered: unknown, uri: string): boolean {
  if (!Array.isArray(registered)) return true; // the answer does not say: taken as kept
  const portless = (value: string): string => value.replace(/^(http:\/\/(?:127\.0\.0\.1|localhost|\[::1\]))(?::\d+)?/i, '$1');
  return registered.some((value) => typeof value === 'string' && (value === uri || portless(value) === portless(uri)));
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
    return {
      registration,
      failure: { step: 'registration', answered: `POST ${endpoint}: ${answered(answer)}`, fix: refusalFix(profile, body, answer.json?.error) },
    };
  }
  registration.clientId = clientId;
  const returnsTo = redirectUriOf(profile, context);
  const failure: StepFailure | undefined = keeps(answer.json?.redirect_uris, returnsTo)
    ? undefined
    : {
        step: 'registration',
        answered: `POST ${endpoint}: registered without ${returnsTo}, the redirect URI ${profile.host} returns to (kept: ${JSON.stringify(answer.json?.redirect_uris)})`,
        fix: /^https?:/i.test(returnsTo) ? `accept ${profile.host}'s redirect URI ${returnsTo}` : privateUseFix(profile, returnsTo),
      };
  const manage = answer.json?.registration_client_uri;
  const token = answer.json?.registration_access_token;
  // The management token goes only back to the server that gave it, on the registration's origin.
  if (typeof manage === 'string' && typeof token === 'string' && URL.canParse(manage) && new URL(manage).origin === new URL(endpoint).origin) {
    try {
      const deleted = await fetchImpl(manage, {
        method: 'DELETE',
        headers: { authorization: `Bearer ${token}` },
        redirect: 'manual',
        signal: AbortSignal.timeout(10_000),
      });
      await deleted.body?.cancel();
      registration.deleted = deleted.status === 204 || deleted.status === 200;
    } catch {
      registration.deleted = false;
    }
  }
  return failure ? { registration, failure } : { registration };
}
