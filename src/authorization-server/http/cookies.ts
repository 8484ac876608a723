export const SESSION_COOKIE = 'ca_session';
export const BROWSER_COOKIE = 'ca_browser';

export function readCookie(request: Request, name: string): string | undefined {
  const header = request.headers.get('cookie');
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    if (part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

/**
 * Our cookies are always HttpOnly and SameSite=Lax (the consent POST is same-site; the return
 * from the client is a top-level GET), and Secure whenever the issuer is https.
 */
export function setCookie(name: string, value: string, options: { path: string; maxAge: number; secure: boolean }): string {
  const parts = [`${name}=${value}`, `Path=${options.path}`, `Max-Age=${options.maxAge}`, 'HttpOnly', 'SameSite=Lax'];
  if (options.secure) parts.push('Secure');
  return parts.join('; ');
}
