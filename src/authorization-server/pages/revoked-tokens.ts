/**
 * What revoking does to the access tokens an application already holds, as the pages say it.
 * They are JWTs each context server checks on its own: the server can stop issuing at once, but a
 * context server refuses one only when it learns of the revocation (serve's own at once, one
 * following the revocation list at its next read), or else when the token expires.
 */
export function revokedAccessTokens(accessTokenTtl: number, held = 'it already holds'): string {
  return `Access tokens ${held} are refused by servers that follow this server's revocations when they next check (usually within seconds), and by other servers only when they expire, at most ${durationShown(accessTokenTtl)} later.`;
}

/** A lifetime in seconds as a person reads it: "10 minutes", "1 hour", "90 seconds". */
export function durationShown(seconds: number): string {
  const [count, unit] = seconds % 3600 === 0 ? [seconds / 3600, 'hour'] : seconds % 60 === 0 ? [seconds / 60, 'minute'] : [seconds, 'second'];
  return `${count} ${unit}${count === 1 ? '' : 's'}`;
}
