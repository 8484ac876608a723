/**
 * The key that seals upstream tokens at rest: $CONTEXT_AUTH_SECRET_KEY when set (required with a
 * shared PostgreSQL store, where every replica must hold the same key), else a key file in the
 * data folder, created on first use with mode 0600 and refused if others can read it.
 */
import fs from 'node:fs';
import { join } from 'node:path';
import { SecretBox, generateSecretKey, parseSecretKeys } from '../core/index.js';
import { CliError } from './errors.js';

export const SECRET_KEY_FILE = 'secret.key';

export function loadSecretBox(options: { dataFolder: string | null; env?: NodeJS.ProcessEnv }): { box: SecretBox; source: string } {
  const env = options.env ?? process.env;
  const { text, source } = env.CONTEXT_AUTH_SECRET_KEY
    ? { text: env.CONTEXT_AUTH_SECRET_KEY, source: '$CONTEXT_AUTH_SECRET_KEY' }
    : keyFile(options.dataFolder);
  try {
    return { box: new SecretBox(parseSecretKeys(text, source)), source };
  } catch (error) {
    // What is wrong with the key, in the operator's terms.
    throw new CliError((error as Error).message);
  }
}

/** The key file's text, the file made first when there is none. */
function keyFile(dataFolder: string | null): { text: string; source: string } {
  if (dataFolder === null) {
    throw new CliError(
      'Upstream sign-in with a PostgreSQL store needs $CONTEXT_AUTH_SECRET_KEY, the same on every replica (make one with: openssl rand -base64 32).',
    );
  }
  const file = join(dataFolder, SECRET_KEY_FILE);
  try {
    fs.mkdirSync(dataFolder, { recursive: true, mode: 0o700 });
    try {
      // 'wx': only the first process to get here writes a key; the others read it.
      fs.writeFileSync(file, `${generateSecretKey()}\n`, { mode: 0o600, flag: 'wx' });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    const mode = fs.statSync(file).mode & 0o077;
    if (mode !== 0) throw new CliError(`${file} can be read by other users; run: chmod 600 ${file}`);
    return { text: fs.readFileSync(file, 'utf8'), source: file };
  } catch (error) {
    if (error instanceof CliError) throw error;
    throw new CliError(`Cannot read or create the secret key: ${(error as Error).message}`);
  }
}
