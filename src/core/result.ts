/**
 * What a check returns instead of throwing: the value it vouches for, or the defect it found. A
 * defect has a stable `code`, which the caller maps to its own answer in one exhaustive `switch`
 * (an OAuth error, a 401, a log line), and a `description` written to be shown: it never echoes
 * what was checked. Exceptions are left for what no check decides: a store or a network down.
 */
export type Result<T, D> = { ok: true; value: T } | { ok: false; defect: D };

/** A defect of one of the codes `C`; `description` is safe to return as an error_description. */
export interface Defect<C extends string> {
  code: C;
  description: string;
}

export function ok<T>(value: T): { ok: true; value: T } {
  return { ok: true, value };
}

export function fail<D>(defect: D): { ok: false; defect: D } {
  return { ok: false, defect };
}

/** The end of an exhaustive switch: TypeScript refuses the call while a case is missing. */
export function unreachable(value: never): never {
  throw new Error(`unexpected case ${JSON.stringify(value)}`);
}
