import { bearerChallenge, type Defect } from '../core/index.js';
import type { VerifiedToken } from '../resource-server/index.js';

/** How long a token for an upstream lives at most, in seconds. */
export const UPSTREAM_TOKEN_SECONDS = 300;

/**
 * The token the upstream gets for a request the guard let through, or why there is none: the
 * person's token is no longer good (`invalid_token`), cannot be delegated (`refused`), or the
 * authorization server's store could not be reached (`unavailable`).
 */
export type UpstreamTokenResult = { ok: true; value: { token: string } } | { ok: false; defect: Defect<'invalid_token' | 'refused' | 'unavailable'> };

/**
 * Obtains the upstream's token from the person's verified token. In `serve`, the authorization
 * server's token exchange (`AuthorizationServer.gatewayToken`): a delegated token for the
 * upstream's audience, naming the gateway in `act`.
 */
export type UpstreamTokenSource = (auth: VerifiedToken) => Promise<UpstreamTokenResult>;

/**
 * The gateway's answer when the upstream's token is refused. A token that ended or was revoked
 * since the guard took it is what the guard would have refused: 401 with its challenge, and the
 * client gets another. A token the authorization server will not delegate is valid but cannot
 * be used here, whatever the client asks for next: 403, with no challenge (a step-up would not
 * help), saying why. Nothing reaches the upstream either way.
 */
export function upstreamTokenRefusal(defect: Extract<UpstreamTokenResult, { ok: false }>['defect'], metadataUrl: string): Response {
  const headers: Record<string, string> = { 'Cache-Control': 'no-store' };
  switch (defect.code) {
    case 'invalid_token':
      headers['WWW-Authenticate'] = bearerChallenge({ resourceMetadata: metadataUrl, error: 'invalid_token', errorDescription: defect.description });
      return Response.json({ error: 'invalid_token', error_description: defect.description }, { status: 401, headers });
    case 'refused':
      return Response.json(
        { error: 'access_denied', error_description: `the upstream context server cannot be called with this token: ${defect.description}` },
        { status: 403, headers },
      );
    case 'unavailable':
      headers['Retry-After'] = '5';
      return Response.json({ error: 'temporarily_unavailable', error_description: defect.description }, { status: 503, headers });
  }
}
