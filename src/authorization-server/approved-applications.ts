import { DEVICE_CODE_GRANT_TYPE } from '../core/protocol.js';
import { isLoopbackHost } from '../core/uri.js';
import type { ClientRecord, StoreAdministration } from '../store/store.js';
import type { BaseServices } from './services.js';
import { clientOrigin } from './interaction/page-parts.js';
import type { ApprovedApplication, RunsOn } from './pages/account.js';

/**
 * A person's consents, one entry per application (a client may have been approved for several
 * servers), with what the consent page showed of each: the account page and the admin console
 * list them the same way.
 */
export async function approvedApplications(
  ctx: BaseServices,
  admin: Pick<StoreAdministration, 'listConsents'>,
  userId: string,
): Promise<ApprovedApplication[]> {
  const consents = await admin.listConsents({ userId });
  const byClient = new Map<string, ApprovedApplication>();
  for (const consent of consents) {
    let app = byClient.get(consent.clientId);
    if (!app) {
      const client = await ctx.store.getClient(consent.clientId);
      const runsOn = client ? runsOnOf(client) : undefined;
      const softwareId = client?.metadata.software_id;
      app = {
        clientId: consent.clientId,
        clientName: client?.clientName ?? consent.clientId,
        ...(client ? clientOrigin(client) : {}),
        ...(runsOn ? { runsOn } : {}),
        ...(typeof softwareId === 'string' ? { softwareId } : {}),
        lastUsedAt: client?.lastUsedAt ?? null,
        access: [],
      };
      byClient.set(consent.clientId, app);
    }
    app.access.push({ resource: consent.resource, scopes: consent.scope, approvedAt: consent.createdAt });
  }
  return [...byClient.values()];
}

/**
 * Where a registered program's sign-ins end, as its registration allows them to: only at the
 * loopback (RFC 8252 §7.3: a program on the computer whose browser signed in), only with a code
 * entered in a browser (RFC 8628: a program on a device), or either. Undefined for a client that
 * may also return to a website or an app's own scheme.
 */
function runsOnOf(client: ClientRecord): RunsOn | undefined {
  const browser = client.grantTypes.includes('authorization_code');
  const device = client.grantTypes.includes(DEVICE_CODE_GRANT_TYPE);
  if (browser && !(client.redirectUris.length > 0 && client.redirectUris.every(isLoopbackRedirect))) return undefined;
  if (browser) return device ? 'loopback-or-device' : 'loopback';
  return device ? 'device' : undefined;
}

function isLoopbackRedirect(uri: string): boolean {
  if (!URL.canParse(uri)) return false;
  const url = new URL(uri);
  return url.protocol === 'http:' && isLoopbackHost(url.hostname);
}

/**
 * The approved applications as the account page shows them: registrations that name themselves
 * alike (the same self-chosen name and software id), such as a command-line program registered
 * once per computer or credentials file, in one group; any other application on its own.
 */
export function groupedApplications(applications: ApprovedApplication[]): ApprovedApplication[][] {
  const groups = new Map<string, ApprovedApplication[]>();
  for (const app of applications) {
    const key = app.clientNameUnverified ? `unverified\n${app.clientName}\n${app.softwareId ?? ''}` : `client\n${app.clientId}`;
    groups.set(key, [...(groups.get(key) ?? []), app]);
  }
  return [...groups.values()];
}
