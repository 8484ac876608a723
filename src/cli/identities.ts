/** The identities of stored grants as the CLI shows them, and the flags that select one. */
import type { GrantIdentity } from '../client/index.js';

/** The flags that select the identity: none for the person. */
export function identityFlags(identity: GrantIdentity): string {
  return identity.kind === 'person' ? '' : ` --grant-type ${identity.grantType} --client-id ${identity.clientId}`;
}

/** As `status` shows it: person, or program: GRANT. */
export function identityLabel(identity: GrantIdentity): string {
  return identity.kind === 'person' ? 'person' : `program: ${identity.grantType}`;
}
