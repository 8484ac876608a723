/**
 * What went wrong under a failed fetch, in words. Node's fetch says only "fetch failed" for a
 * server that is down, a name that does not resolve and a certificate it does not trust alike;
 * the reason is in its `cause` (a system error code, or an OpenSSL verification code).
 */

/** OpenSSL's verification failures (Node's `err.code` on the TLS socket), in words. */
const CERTIFICATE_PROBLEMS: Record<string, string> = {
  DEPTH_ZERO_SELF_SIGNED_CERT: 'it is self-signed',
  SELF_SIGNED_CERT_IN_CHAIN: 'its chain ends in a self-signed certificate that is not trusted',
  UNABLE_TO_VERIFY_LEAF_SIGNATURE: 'its issuer is not trusted',
  UNABLE_TO_GET_ISSUER_CERT: 'its issuer is not trusted',
  UNABLE_TO_GET_ISSUER_CERT_LOCALLY: 'its issuer is not trusted',
  CERT_HAS_EXPIRED: 'it has expired',
  CERT_NOT_YET_VALID: 'it is not valid yet',
  ERR_TLS_CERT_ALTNAME_INVALID: 'it is for another host name',
  CERT_REVOKED: 'it was revoked',
};

interface SystemError {
  code?: string;
  address?: string;
  port?: number;
  hostname?: string;
  message?: string;
}

/** The innermost error with a code along the `cause` chain. */
function rootCause(error: unknown): SystemError | undefined {
  let found: SystemError | undefined;
  for (let at = error, depth = 0; at instanceof Error && depth < 8; at = at.cause, depth++) {
    if (typeof (at as SystemError).code === 'string') found = at as SystemError;
  }
  return found;
}

/**
 * One sentence on why a request to `url` failed, or undefined when the error is not a network
 * failure we know. `url` names the place when the error itself does not.
 */
export function describeNetworkFailure(error: unknown, url?: string | URL): string | undefined {
  const cause = rootCause(error);
  if (!cause?.code) return undefined;
  const target = url ? new URL(url) : undefined;
  const where = cause.address && cause.port ? `${cause.address}:${cause.port}` : (target?.host ?? 'the server');
  switch (cause.code) {
    case 'ECONNREFUSED':
      return `could not connect to ${where} (connection refused): is the server running, and on that port?`;
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return `could not find the host ${cause.hostname ?? target?.hostname ?? where} (DNS lookup failed): check the URL`;
    case 'ECONNRESET':
    case 'UND_ERR_SOCKET':
      return `the connection to ${where} was closed before an answer came`;
    case 'ETIMEDOUT':
    case 'UND_ERR_CONNECT_TIMEOUT':
      return `could not connect to ${where} in time`;
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
      return `${where} cannot be reached from this machine (no route)`;
  }
  const problem = CERTIFICATE_PROBLEMS[cause.code];
  if (problem || /CERT/.test(cause.code)) {
    return `the TLS certificate of ${target?.host ?? where} is not trusted: ${problem ?? cause.message ?? cause.code} (${cause.code}); if it is yours, give its CA to Node with NODE_EXTRA_CA_CERTS=/path/to/ca.pem`;
  }
  return undefined;
}

/** The network reason when there is one, else the error's own message. */
export function failureReason(error: unknown, url?: string | URL): string {
  return describeNetworkFailure(error, url) ?? (error instanceof Error ? error.message : String(error));
}
