/** The stored grant of the person (the application's sign-in), as tests select it. */
import { PERSON } from '../../src/client/grants.js';
import type { GrantSelector } from '../../src/client/types.js';

export function personGrant(application: string, serverUrl: string, issuer?: string): GrantSelector {
  return { application, serverUrl, identity: PERSON, ...(issuer === undefined ? {} : { issuer }) };
}
