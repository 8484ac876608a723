import assert from 'node:assert/strict';
import type { TokenDefect, TokenVerification, VerifiedToken } from '../../src/resource-server/types.js';

/** The facts of a token the verifier accepted; fails the test when it refused it. */
export async function accepted(verification: Promise<TokenVerification>, message?: string): Promise<VerifiedToken> {
  const result = await verification;
  assert.ok(result.ok, `${message ?? 'refused'}: ${result.ok ? '' : `${result.defect.code} ${result.defect.description}`}`);
  return result.value;
}

/** Asserts the verifier refused the token with `code`, its description matching `description` when given. */
export async function refused(
  verification: Promise<TokenVerification>,
  code: TokenDefect['code'],
  description?: RegExp,
  message?: string,
): Promise<TokenDefect> {
  const result = await verification;
  assert.ok(!result.ok, message ?? 'accepted');
  assert.equal(result.defect.code, code, message);
  if (description) assert.match(result.defect.description, description, message);
  return result.defect;
}
