import { ClientError } from './errors.js';

/**
 * Servers started over STDIO do not use this OAuth flow at all (spec, "Scope", rule 3): the
 * process that starts them hands over credentials through the environment. This reads them, by
 * name, and says clearly which one is missing.
 *
 *   const { token } = stdioCredentials({ token: 'GITHUB_TOKEN' });
 */
export function stdioCredentials<Names extends Record<string, string>>(
  names: Names,
  options: { env?: NodeJS.ProcessEnv; optional?: (keyof Names)[] } = {},
): { [K in keyof Names]: string } {
  const env = options.env ?? process.env;
  const result = {} as { [K in keyof Names]: string };
  const missing: string[] = [];
  for (const [key, variable] of Object.entries(names) as [keyof Names & string, string][]) {
    const value = env[variable];
    if (value === undefined || value === '') {
      if (!options.optional?.includes(key)) missing.push(variable);
      continue;
    }
    result[key] = value;
  }
  if (missing.length > 0) {
    throw new ClientError('login_required', `set ${missing.join(', ')} in the environment of this STDIO server (it does not use OAuth)`);
  }
  return result;
}
