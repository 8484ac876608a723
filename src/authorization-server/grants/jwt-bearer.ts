/**
 * grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer (RFC 7521, RFC 7523 §2.1): a JWT signed
 * by an issuer the operator trusts, presented as the grant. Two kinds are accepted:
 * - an ID-JAG (typ oauth-id-jag+jwt) from a trusted enterprise identity provider, presented by a
 *   confidential client for a person (grants/id-jag.ts);
 * - a platform's workload token (Kubernetes, SPIFFE) from a configured workload issuer, which
 *   authenticates the workload itself (grants/workload.ts).
 * Anything else is refused with invalid_grant naming what is wrong with it, never echoing it.
 */
import { OAuthError } from '../../core/errors.js';
import { ID_JAG_TYP } from '../../core/id-jag.js';
import { hasTyp } from '../../core/jwt.js';
import type { ClientRecord } from '../../store/store.js';
import { readAssertion } from '../assertions/verify-assertion.js';
import type { ResolvedJwtBearerConfig } from '../config.js';
import type { IssuedTokens } from '../tokens.js';
import { idJagGrant, type IdJagServices } from './id-jag.js';
import { jwtBearerError, type JwtBearerDefect } from './jwt-bearer-errors.js';
import type { TokenRequest } from './token-request.js';
import { workloadGrant, type WorkloadServices } from './workload.js';

/** `client` is null when the request authenticated none (a workload's token authenticates it: RFC 7521 §4.1). */
export async function jwtBearerGrant(ctx: IdJagServices & WorkloadServices, request: TokenRequest<ClientRecord | null>): Promise<IssuedTokens> {
  const { params } = request;
  const settings = ctx.config.jwtBearer;
  if (!settings)
    throw new OAuthError(
      'unsupported_grant_type',
      'grant_type urn:ietf:params:oauth:grant-type:jwt-bearer is not supported: no trusted identity provider or workload issuer is configured',
    );
  const assertion = params.get('assertion');
  if (!assertion) throw new OAuthError('invalid_request', 'assertion is required');
  const read = readAssertion(assertion, 'assertion');
  if (!read.ok) throw jwtBearerError(ctx, read.defect);
  const jwt = read.value;
  const iss = typeof jwt.claims.iss === 'string' ? jwt.claims.iss : undefined;
  if (hasTyp(jwt.header, ID_JAG_TYP)) return idJagGrant(ctx, request, jwt, settings);
  if (iss !== undefined && settings.workloads.some((rule) => rule.issuer === iss)) return workloadGrant(ctx, request, jwt, settings);
  throw jwtBearerError(ctx, whyRefused(iss, settings));
}

function whyRefused(iss: string | undefined, settings: ResolvedJwtBearerConfig): JwtBearerDefect {
  if (iss === undefined) return { code: 'claims', description: 'the assertion has no iss' };
  if (settings.trustedIdps.includes(iss))
    return { code: 'header', description: `the assertion's typ is not ${ID_JAG_TYP}, as an identity provider's authorization grant must be` };
  return { code: 'issuer', description: "the assertion's issuer is not trusted" };
}
