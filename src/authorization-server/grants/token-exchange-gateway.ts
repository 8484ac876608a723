/**
 * The token exchange grant's delegation for a gateway beside this server (`mountGateway`, `serve
 * --gateway-token signed`), in process: the person's access token for the gateway's resource,
 * which the gateway's guard accepted, is exchanged for a token for the upstream the gateway
 * forwards to. The gateway is the actor (A) and the upstream the target (B): the rule is the
 * operator's gateway configuration, so it needs no delegation rule, and every other rule of the
 * grant applies as at the token endpoint (token-exchange-delegation.ts), with two differences a
 * gateway's place makes. The new token is bound to no key: the gateway, not the client, presents
 * it, and the client's proof was checked by the gateway's guard. And a client's own token
 * (client credentials) is exchanged too, the client as subject: the gateway forwards a machine
 * client's requests as it forwards a person's.
 */
import { OAuthError } from '../../core/errors.js';
import { fail, ok, unreachable, type Defect, type Result } from '../../core/result.js';
import { TOKEN_EXCHANGE_GRANT_TYPE } from '../../core/id-jag.js';
import { canonicalizeResourceUri } from '../../core/uri.js';
import { toOAuthError } from '../http/errors.js';
import { accessTokenExpiry } from '../tokens.js';
import { checkSubjectToken, issueDelegatedToken, type DelegationServices, type SubjectDefect } from './token-exchange-delegation.js';

export interface GatewayTokenRequest {
  /** The access token the gateway's guard accepted. */
  subjectToken: string;
  /** For a DPoP-bound token, the thumbprint of the key whose proof the guard checked (`VerifiedToken.jkt`). */
  proofJkt?: string | undefined;
  /** The gateway's resource: the subject token's audience, and the actor the new token names. */
  gateway: string;
  /** The upstream's identifier: the new token's audience. */
  audience: string;
  /** The most the new token lives, in seconds; never past the subject token nor the access token lifetime either. */
  maxLifetime: number;
}

/**
 * Why no token was made: the subject token is no longer good (`invalid_token`: it ended or was
 * revoked since the guard accepted it), the grant refuses it (`refused`: a rule of the grant, or
 * a token that is not ours), or the store could not be reached (`unavailable`).
 */
export type GatewayTokenDefect = Defect<'invalid_token' | 'refused' | 'unavailable'>;

export type GatewayTokenResult = Result<{ token: string; expiresIn: number; scope: string }, GatewayTokenDefect>;

/**
 * The token for the upstream, or the defect that refuses it. Each token issued is logged as at
 * the token endpoint (`token_issued`, naming the gateway as `actor`), and so is each refusal
 * (`token_refused`, with the OAuth error the grant gives).
 */
export async function gatewayToken(ctx: DelegationServices, request: GatewayTokenRequest, now: number): Promise<GatewayTokenResult> {
  const gateway = canonicalizeResourceUri(request.gateway);
  const refuse = (defect: GatewayTokenDefect, error: string, clientId: string | undefined): GatewayTokenResult => {
    ctx.log({
      event: 'token_refused',
      grant_type: TOKEN_EXCHANGE_GRANT_TYPE,
      error,
      reason: defect.description,
      ...(clientId === undefined ? {} : { client_id: clientId }),
      actor: gateway,
    });
    return fail(defect);
  };
  try {
    const checked = await checkSubjectToken(ctx, request.subjectToken, request.proofJkt, now);
    if (!checked.ok) return refuse(subjectDefect(checked.defect), 'invalid_grant', undefined);
    const subject = checked.value;
    const clientId = subject.claims.client_id;
    if (subject.claims.aud !== gateway)
      return refuse({ code: 'refused', description: 'the access token is not for this gateway' }, 'unauthorized_client', clientId);
    try {
      const issued = await issueDelegatedToken(ctx, subject, {
        actor: gateway,
        // The client the person uses, whose request the gateway forwards: the upstream sees who asked.
        clientId,
        to: request.audience,
        allowedScopes: undefined,
        requestedScope: undefined,
        maxDepth: ctx.config.tokenExchange?.maxDelegationDepth ?? 1,
        dpopKey: undefined,
        expiresAt: Math.min(now + request.maxLifetime, accessTokenExpiry(ctx.config, now)),
        now,
      });
      return ok({ token: issued.token, expiresIn: issued.expiresIn, scope: issued.scope.join(' ') });
    } catch (error) {
      if (!(error instanceof OAuthError)) throw error;
      return refuse({ code: 'refused', description: asTheAccessToken(error.description) }, error.code, clientId);
    }
  } catch (error) {
    // The one translation of a failure of ours (http/errors.ts), which logs it: the store's is a defect, any other thrown on.
    const translated = toOAuthError(error, ctx.log);
    if (translated.code === 'temporarily_unavailable') return fail({ code: 'unavailable', description: translated.description });
    throw error;
  }
}

/**
 * A token that ended or was revoked since the guard accepted it is no longer good: the client
 * gets another. One that is not ours, or whose key no proof was shown for, never will be here.
 */
function subjectDefect(defect: SubjectDefect): GatewayTokenDefect {
  const description = asTheAccessToken(defect.description);
  switch (defect.code) {
    case 'expired':
    case 'revoked':
      return { code: 'invalid_token', description };
    case 'not_ours':
    case 'unproven_key':
      return { code: 'refused', description };
    default:
      return unreachable(defect.code);
  }
}

/** The grant's words for its client, a program; the gateway's client knows the token as its access token. */
const asTheAccessToken = (description: string): string => description.replaceAll('the subject token', 'the access token');
