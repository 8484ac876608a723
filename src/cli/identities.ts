/** The identities of stored grants, in the CLI's words: what to call one, and the flags that select it. */
import type { GrantIdentity } from '../client/index.js';

/** "the person", or "the program ID (GRANT)". */
export function identityName(identity: GrantIdentity): string {
  return identity.kind === 'person' ? 'the person' : `the program ${identity.clientId} (${identity.grantType})`;
}

/** The flags that select the identity: none for the person. */
export function identityFlags(identity: GrantIdentity): string {
  return identity.kind === 'person' ? '' : ` --grant-type ${identity.grantType} --client-id ${identity.clientId}`;
}

/** As `status` shows it: person, or program: GRANT. */
export function identityLabel(identity: GrantIdentity): string {
  return identity.kind === 'person' ? 'person' : `program: ${identity.grantType}`;
}
