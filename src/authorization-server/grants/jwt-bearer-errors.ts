import { OAuthError, temporarilyUnavailable } from '../../core/errors.js';
import { unreachable, type Defect } from '../../core/result.js';
import type { AssertionDefect } from '../assertions/verify-assertion.js';
import type { AuditLog } from '../audit.js';

/**
 * What the jwt-bearer grant finds wrong with its assertion: a defect of the JWT itself, or of what
 * it says for this request: an `issuer` not trusted for it, a `client` other than the one it is
 * for, a `resource` or `scope` claim we cannot honour, no workload `rule` that fits it.
 */
export type JwtBearerDefect = AssertionDefect | Defect<'issuer' | 'client' | 'resource' | 'scope' | 'rule'>;

/**
 * The grant's one mapping to OAuth errors: the assertion's fault is invalid_grant with its
 * description (RFC 7521 §4.1.1); keys that could not be fetched are ours, for now: 503, logged.
 */
export function jwtBearerError(ctx: { log: AuditLog }, defect: JwtBearerDefect): OAuthError {
  switch (defect.code) {
    case 'keys_unavailable':
      ctx.log({ event: 'assertion_keys_unavailable', ...('log' in defect ? defect.log : {}) });
      return temporarilyUnavailable(defect.description);
    case 'malformed':
    case 'algorithm':
    case 'header':
    case 'claims':
    case 'audience':
    case 'time':
    case 'key':
    case 'signature':
    case 'replayed':
    case 'issuer':
    case 'client':
    case 'resource':
    case 'scope':
    case 'rule':
      return new OAuthError('invalid_grant', defect.description);
    default:
      return unreachable(defect);
  }
}
