import { listSigningKeys, rotateSigningKeys } from '../admin/index.js';
import { parseArgs } from 'node:util';
import { COMMON_OPTIONS, STORE_OPTIONS, isoTime, parsed, print, table } from './args.js';
import { nowSeconds, withStore } from './data.js';
import { didYouMean, usageError } from './errors.js';

export const KEYS_HELP = `context-auth keys list     signing keys (current, previous, retired); public parts only
context-auth keys rotate   make a new current key; the old one stays published until the next rotation`;

export const KEYS_OPTIONS = { ...COMMON_OPTIONS, ...STORE_OPTIONS } as const;

export async function keysCommand(args: string[]): Promise<void> {
  const { values, positionals } = parsed(() => parseArgs({ args, options: KEYS_OPTIONS, allowPositionals: true, strict: true }));
  const [action, ...rest] = positionals;
  if (values.help || !action) return print(KEYS_HELP);
  if (rest.length > 0) throw usageError(`unexpected argument ${rest[0]}`);
  if (action === 'rotate') {
    const key = await withStore(values, (store) => rotateSigningKeys(store, nowSeconds()));
    return print(
      values.json
        ? { kid: key.kid, alg: key.alg, status: key.status }
        : `New current signing key ${key.kid} (${key.alg}). Running servers pick it up within seconds.`,
    );
  }
  if (action === 'list') {
    const keys = await withStore(values, (store) => listSigningKeys(store));
    if (values.json) return print(keys.map((k) => ({ kid: k.kid, alg: k.alg, status: k.status, created_at: k.createdAt, public_jwk: k.publicJwk })));
    return print(
      table(
        keys.map((k) => ({ kid: k.kid, alg: k.alg, status: k.status, created: isoTime(k.createdAt) })),
        ['kid', 'alg', 'status', 'created'],
      ),
    );
  }
  throw usageError(`unknown keys action ${action}${didYouMean(action, ['list', 'rotate'])}`);
}
