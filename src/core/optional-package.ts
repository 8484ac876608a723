/**
 * Peer dependencies that only one optional feature needs (the PostgreSQL driver, prom-client) are
 * loaded when that feature is first used, so a program that never uses it need not install them;
 * when one is missing, the error names the package to install instead of Node's "Cannot find
 * module".
 */
import { createRequire } from 'node:module';

/** Loads a package by name, as `require` does; the tests resolve from a folder without it. */
export type PackageLoader = (name: string) => unknown;

const requireFromHere: PackageLoader = createRequire(import.meta.url);

/** An optional peer dependency and the feature that needs it, as the error names them. */
export interface OptionalPackage {
  name: string;
  feature: string;
}

export const PG: OptionalPackage = { name: 'pg', feature: 'The PostgreSQL store (context-auth/store/postgres, --store postgres://…)' };
export const PROM_CLIENT: OptionalPackage = { name: 'prom-client', feature: 'The metrics option (serve --metrics)' };

/** The `code` of the error a missing optional package raises. */
export const MISSING_PACKAGE = 'ERR_CONTEXT_AUTH_MISSING_PACKAGE';

/** Whether `error`, or one of its causes, is a missing optional package. */
export function isMissingPackage(error: unknown): boolean {
  for (let at = error, depth = 0; at instanceof Error && depth < 8; at = at.cause, depth++) {
    if ((at as NodeJS.ErrnoException).code === MISSING_PACKAGE) return true;
  }
  return false;
}

/** The package, or an error (`code` MISSING_PACKAGE) that says which package to install for which feature. */
export function loadOptionalPackage<T>({ name, feature }: OptionalPackage, load: PackageLoader = requireFromHere): T {
  try {
    return load(name) as T;
  } catch (error) {
    // Only the package itself missing: a package that is there but fails to load says so itself.
    const missing = (error as NodeJS.ErrnoException | null)?.code === 'MODULE_NOT_FOUND' && (error as Error).message.includes(`'${name}'`);
    if (!missing) throw error;
    throw Object.assign(new Error(`${feature} needs the package ${name}, which is not installed: run npm install ${name}`, { cause: error }), {
      code: MISSING_PACKAGE,
    });
  }
}
