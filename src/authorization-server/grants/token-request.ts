import type { ClientRecord } from '../../store/store.js';
import type { DpopKey } from '../dpop.js';
import type { Params } from '../http/params.js';

/**
 * One token request as the token endpoint hands it to a grant, made once per request: what the
 * request brought and what the endpoint learnt of it. The server's services travel apart, and a
 * grant takes only those it uses.
 */
export interface TokenRequest<Client extends ClientRecord | null = ClientRecord> {
  /** The authenticated client; null only where the grant itself authenticates (a workload's token). */
  client: Client;
  params: Params;
  /**
   * The key of the request's DPoP proof, checked: the grant's tokens are bound to it. Spent
   * already when a client authenticated; else the grant spends it before any token is made.
   */
  dpopKey: DpopKey | undefined;
  /** The client's address, proxies taken into account; undefined when the server is not told. */
  address: string | undefined;
  /** The instant of the request, in seconds: read once, so every step of the grant sees the same time. */
  now: number;
}
