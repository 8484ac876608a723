/**
 * grant_type=urn:ietf:params:oauth:grant-type:token-exchange (RFC 8693): what is asked for is told
 * by the requested and subject token types. An ID-JAG is issued for a person's refresh token of
 * ours (token-exchange-id-jag.ts); an access token of ours is exchanged for a delegated token for
 * another resource (token-exchange-delegation.ts); nothing else is exchanged.
 */
import { OAuthError } from '../../core/errors.js';
import { ID_JAG_TOKEN_TYPE, TOKEN_EXCHANGE_GRANT_TYPE } from '../../core/id-jag.js';
import { ACCESS_TOKEN_TYPE } from '../../core/token-exchange.js';
import { delegatedToken, type DelegationServices, type ExchangedToken } from './token-exchange-delegation.js';
import { issueIdJag, type IdJagIssuingServices } from './token-exchange-id-jag.js';
import type { TokenRequest } from './token-request.js';

/** What token exchange needs: what a delegation needs and what issuing an ID-JAG needs. */
export type TokenExchangeServices = DelegationServices & IdJagIssuingServices;

export async function tokenExchangeGrant(ctx: TokenExchangeServices, request: TokenRequest): Promise<ExchangedToken> {
  const { client, params } = request;
  const settings = ctx.config.tokenExchange;
  if (!settings) throw new OAuthError('unsupported_grant_type', `grant_type ${TOKEN_EXCHANGE_GRANT_TYPE} is not supported: no token exchange is configured`);
  // RFC 8693 §2.1: exchanged tokens are issued to clients that prove who they are.
  if (client.tokenEndpointAuthMethod === 'none') throw new OAuthError('unauthorized_client', 'token exchange is for confidential clients only');
  const subjectToken = params.get('subject_token');
  const subjectTokenType = params.get('subject_token_type');
  if (!subjectToken) throw new OAuthError('invalid_request', 'subject_token is required');
  if (!subjectTokenType) throw new OAuthError('invalid_request', 'subject_token_type is required');
  // The client that authenticates is the actor: a separate actor token would name a second one.
  if (params.has('actor_token') || params.has('actor_token_type'))
    throw new OAuthError('invalid_request', 'actor_token is not supported: the authenticated client is the actor');
  if (params.get('requested_token_type') === ID_JAG_TOKEN_TYPE) return issueIdJag(ctx, request, subjectToken, subjectTokenType, settings);
  if (subjectTokenType === ACCESS_TOKEN_TYPE) return delegatedToken(ctx, request, subjectToken, settings);
  throw new OAuthError('invalid_request', `subject_token_type ${subjectTokenType} is not one this server exchanges (${ACCESS_TOKEN_TYPE})`);
}
