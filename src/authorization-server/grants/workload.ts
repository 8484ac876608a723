/**
 * Workload identity federation: a platform's token for a workload (a Kubernetes service account's
 * projected token, a SPIFFE JWT-SVID) presented as a jwt-bearer grant. The token authenticates
 * the workload; no client secret is needed. Its issuer's keys come from OpenID Connect Discovery;
 * the first configured rule whose issuer, audience and subject fit says which client it acts as
 * and which scopes it may have.
 */
import { OAuthError } from '../../core/errors.js';
import { hasTyp, type CompactJwt } from '../../core/jwt.js';
import { JWT_BEARER_GRANT_TYPE } from '../../core/protocol.js';
import { parseScope, resolveScope } from '../../core/scopes.js';
import type { ClientRecord } from '../../store/store.js';
import { fail, ok, type Result } from '../../core/result.js';
import { spendAssertion, verifyAssertion, type VerifiedAssertion } from '../assertions/verify-assertion.js';
import { workloadClient } from '../assertions/workload-clients.js';
import { subjectMatches, type WorkloadRule } from '../assertions/workload-rules.js';
import { allowedScopes, machineScopeNote, resolveResource } from '../checks/authorization-request.js';
import type { IssuerKeys } from '../assertions/issuer-keys.js';
import type { ResolvedJwtBearerConfig } from '../config.js';
import type { BaseServices } from '../services.js';
import type { IssuedTokens } from '../tokens.js';
import { jwtBearerError, type JwtBearerDefect } from './jwt-bearer-errors.js';
import type { TokenRequest } from './token-request.js';
import { issueSingleAccessToken, type TokenIssuing } from './token-response.js';

/** What the workload grant needs: the workload issuers' keys, and issuing tokens; a rule's client is created at `now` on first use. */
export type WorkloadServices = TokenIssuing & Pick<BaseServices, 'now'> & { issuerKeys: IssuerKeys | null };

const NAME = 'workload token';
const CLOCK_TOLERANCE_SECONDS = 60;
/** The longest a workload token may live: platforms issue them for minutes to hours (Kubernetes: one hour by default). */
const MAX_LIFETIME_SECONDS = 24 * 3600;

export async function workloadGrant(
  ctx: WorkloadServices,
  request: TokenRequest<ClientRecord | null>,
  jwt: CompactJwt,
  settings: ResolvedJwtBearerConfig,
): Promise<IssuedTokens> {
  const { params, now } = request;
  const checked = await checkWorkloadToken(ctx, request.client, jwt, settings, now);
  if (!checked.ok) throw jwtBearerError(ctx, checked.defect);
  const { assertion: verified, rule } = checked.value;
  const iss = verified.iss;

  const client = await workloadClient(ctx, rule.client);
  if (!client.grantTypes.includes(JWT_BEARER_GRANT_TYPE))
    throw new OAuthError('unauthorized_client', `the workload's client is not registered for the ${JWT_BEARER_GRANT_TYPE} grant`);
  const allowed = allowedScopes(client, ctx.config, 'client').filter((scope) => rule.scopes.includes(scope));
  const scope = resolveScope(parseScope(params.get('scope')), allowed, allowed, machineScopeNote(client, ctx.config));
  if (scope.length === 0) throw new OAuthError('invalid_scope', 'the workload may have no scope this client is allowed');
  const resource = resolveResource(params.has('resource') ? [params.get('resource')!] : [], ctx.config);
  if (rule.singleUse && verified.jti !== '') {
    const spent = await spendAssertion(ctx.store, verified, NAME, now, CLOCK_TOLERANCE_SECONDS);
    if (!spent.ok) throw jwtBearerError(ctx, spent.defect);
  }

  // No refresh token: the workload presents a fresh platform token instead, which the platform
  // stops issuing the moment the workload is gone.
  return issueSingleAccessToken(
    ctx,
    request,
    { clientId: client.clientId, userId: null, scope, resource },
    {
      grant_type: JWT_BEARER_GRANT_TYPE,
      profile: 'workload',
      workload_issuer: iss,
      workload_subject: verified.sub,
    },
  );
}

/** The token's checks, and the first rule whose issuer, audience and subject fit it. */
async function checkWorkloadToken(
  ctx: WorkloadServices,
  presenter: ClientRecord | null,
  jwt: CompactJwt,
  settings: ResolvedJwtBearerConfig,
  now: number,
): Promise<Result<{ assertion: VerifiedAssertion; rule: WorkloadRule }, JwtBearerDefect>> {
  // The caller found the issuer among the rules: only a configured issuer's keys are ever fetched.
  const iss = jwt.claims.iss as string;
  const rules = settings.workloads.filter((rule) => rule.issuer === iss);
  // A platform token may have no typ (Kubernetes) or JWT (SPIFFE); one typed for another use (an access token) is no workload's grant.
  if (jwt.header.typ !== undefined && !hasTyp(jwt.header, 'JWT')) return fail({ code: 'header', description: "the workload token's typ is not JWT" });
  const verified = await verifyAssertion(
    jwt,
    ctx.issuerKeys!.keysOf(iss, ['openid-configuration']),
    {
      name: NAME,
      audiences: [...new Set(rules.map((rule) => rule.audience))],
      // Platforms put even one audience in a list (Kubernetes); one that also names another service is refused.
      audienceList: true,
      maxLifetimeSeconds: MAX_LIFETIME_SECONDS,
      clockToleranceSeconds: CLOCK_TOLERANCE_SECONDS,
      // Older Kubernetes tokens and many JWT-SVIDs carry none: accepted, with no record of use.
      jtiOptional: true,
    },
    now,
  );
  if (!verified.ok) return verified;
  const aud = verified.value.claims.aud;
  const audiences = typeof aud === 'string' ? [aud] : (aud as unknown[]);
  const rule = rules.find((candidate) => audiences.includes(candidate.audience) && subjectMatches(candidate.subject, verified.value.sub));
  if (!rule) return fail({ code: 'rule', description: "the workload token's subject matches no configured workload rule" });
  // A client the request named or authenticated must be the one the rule makes of the workload.
  if (presenter && presenter.clientId !== rule.client)
    return fail({ code: 'client', description: 'the workload token is for another client than the one the request names' });
  return ok({ assertion: verified.value, rule });
}
