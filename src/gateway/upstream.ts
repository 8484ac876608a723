import type { Forwarded } from './forward.js';

export type { Forwarded } from './forward.js';

/** Where a gateway path sends the requests its guard let through: a server over HTTP, or stdio children. */
export interface Upstream {
  /** `authorization`: what the upstream gets in its Authorization header, if anything (HTTP only). */
  forward(request: Request, authorization?: string): Promise<Forwarded>;
  close?(): Promise<void>;
}
