/**
 * A request the guard let through, as the gateway's route read it, once: what an upstream is
 * handed. Plain data, so an upstream over HTTP sends it on without a Web Request of its own.
 */
export interface GatewayRequest {
  method: string;
  /** The URL the client asked for: its query goes on to an HTTP upstream. */
  url: string;
  /** The client's headers: each upstream passes on only those it names (upstream-headers.ts). */
  headers: Headers;
  /** The body, read to its end within the path's cap; undefined for GET and HEAD. */
  body: Uint8Array | undefined;
  /** Calls `listener` once if the client goes away before its answer is complete; the function returned stops listening. */
  whenGone(listener: () => void): () => void;
}
