import { JWT_BEARER_GRANT_TYPE } from '../../core/protocol.js';
import { formatScope } from '../../core/scopes.js';
import { isStoreConflict, type ClientRecord } from '../../store/store.js';
import type { BaseServices } from '../services.js';
import type { WorkloadRule } from './workload-rules.js';

/**
 * The clients workloads act as. Each exists in the store like any other client, so tokens,
 * introspection and `clients list` name it: created by the server (as an operator would) when it
 * is missing, with no secret (the workload's platform token is what authenticates it), no
 * redirect URI and only the jwt-bearer grant. One that exists already is used as it is, if it is
 * registered for the jwt-bearer grant.
 */
export async function workloadClient(ctx: Pick<BaseServices, 'store' | 'now' | 'log' | 'config'>, clientId: string): Promise<ClientRecord> {
  const existing = await ctx.store.getClient(clientId);
  if (existing) return existing;
  const rules = ctx.config.jwtBearer?.workloads.filter((rule) => rule.client === clientId) ?? [];
  const client = newWorkloadClient(clientId, rules, ctx.now());
  try {
    await ctx.store.createClient(client);
  } catch (error) {
    // Another replica made it first: theirs is the same.
    if (!isStoreConflict(error)) throw error;
    const raced = await ctx.store.getClient(clientId);
    if (raced) return raced;
    throw error;
  }
  ctx.log({ event: 'client_created', client_id: clientId, registered_by: 'admin', reason: 'workload rule' });
  return client;
}

/** Makes sure every workload rule's client exists and can use the grant; throws naming the first that cannot. */
export async function ensureWorkloadClients(ctx: Pick<BaseServices, 'store' | 'now' | 'log' | 'config'>): Promise<void> {
  const clientIds = new Set(ctx.config.jwtBearer?.workloads.map((rule) => rule.client) ?? []);
  for (const clientId of clientIds) {
    const client = await workloadClient(ctx, clientId);
    if (!client.grantTypes.includes(JWT_BEARER_GRANT_TYPE)) {
      throw new Error(
        `the workload client ${clientId} exists already and is not registered for the ${JWT_BEARER_GRANT_TYPE} grant; name another client in the workload rules`,
      );
    }
  }
}

function newWorkloadClient(clientId: string, rules: WorkloadRule[], now: number): ClientRecord {
  const name = rules[0]?.name ?? clientId;
  const scope = formatScope(rules.flatMap((rule) => rule.scopes));
  return {
    clientId,
    clientSecretHash: null,
    tokenEndpointAuthMethod: 'none',
    redirectUris: [],
    grantTypes: [JWT_BEARER_GRANT_TYPE],
    responseTypes: [],
    clientName: name,
    scope: scope === '' ? null : scope,
    metadata: { client_name: name, redirect_uris: [], token_endpoint_auth_method: 'none', grant_types: [JWT_BEARER_GRANT_TYPE], response_types: [], scope },
    canIntrospect: false,
    registeredBy: 'admin',
    createdAt: now,
    lastUsedAt: null,
  };
}
