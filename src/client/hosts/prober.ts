/**
 * The HTTP requests a host profile's discovery makes, for `doctor`: each with a time limit and a
 * bounded body, never with credentials, and each answered once per run (seventeen profiles ask
 * for the same few documents; the server is asked once).
 */
import { failureReason } from '../network-errors.js';

/** Enough for any metadata document; a longer body is cut off and read as not JSON. */
const MAX_BODY_BYTES = 256 * 1024;
const DEFAULT_TIMEOUT_MS = 10_000;

export interface ProbeRequest {
  method: 'GET' | 'HEAD' | 'POST';
  url: string;
  headers?: Record<string, string>;
  /** A JSON body (POST). */
  body?: unknown;
  /** Follow redirects (metadata documents); the probe of the MCP URL does not. */
  follow?: boolean;
}

export interface ProbeAnswer {
  /** 0 when no answer came: `failure` says why. */
  status: number;
  headers: Headers;
  /** The body as text, at most MAX_BODY_BYTES of it. */
  text: string;
  /** The body parsed, when it is a JSON object. */
  json?: Record<string, unknown>;
  failure?: string;
  /** Why the body was not read to its end. */
  cut?: 'too long' | 'unfinished';
}

export interface ProbedRequest extends ProbeRequest {
  status: number;
}

export class Prober {
  private readonly answers = new Map<string, Promise<ProbeAnswer>>();
  /** Every request sent, in order, with its answer's status. */
  readonly log: ProbedRequest[] = [];

  constructor(
    private readonly fetchImpl: typeof fetch = fetch,
    private readonly timeoutMs = DEFAULT_TIMEOUT_MS,
  ) {}

  request(request: ProbeRequest): Promise<ProbeAnswer> {
    const key = JSON.stringify([request.method, request.url, Object.entries(request.headers ?? {}).sort(), request.body ?? null, request.follow ?? false]);
    let answer = this.answers.get(key);
    if (!answer) {
      answer = this.send(request);
      this.answers.set(key, answer);
    }
    return answer;
  }

  private async send(request: ProbeRequest): Promise<ProbeAnswer> {
    const headers = new Headers(request.headers);
    if (request.body !== undefined) headers.set('content-type', 'application/json');
    if (!headers.has('accept')) headers.set('accept', 'application/json, text/event-stream');
    let response: Response;
    try {
      response = await this.fetchImpl(request.url, {
        method: request.method,
        headers,
        ...(request.body !== undefined ? { body: JSON.stringify(request.body) } : {}),
        redirect: request.follow ? 'follow' : 'manual',
        // A probe never carries what a browser or the process holds for the server.
        credentials: 'omit',
        signal: AbortSignal.timeout(this.timeoutMs),
      });
    } catch (error) {
      const failure = failureReason(error, request.url);
      this.log.push({ ...request, status: 0 });
      return { status: 0, headers: new Headers(), text: '', failure };
    }
    this.log.push({ ...request, status: response.status });
    const { text, cut } = request.method === 'HEAD' ? { text: '' } : await boundedText(response);
    let json: Record<string, unknown> | undefined;
    try {
      const parsed = JSON.parse(text) as unknown;
      if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)) json = parsed as Record<string, unknown>;
    } catch {
      // Not JSON: callers say what they expected.
    }
    return { status: response.status, headers: response.headers, text, ...(json ? { json } : {}), ...(cut ? { cut } : {}) };
  }
}

async function boundedText(response: Response): Promise<{ text: string; cut?: 'too long' | 'unfinished' }> {
  if (!response.body) return { text: '' };
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  let cut: 'too long' | 'unfinished' | undefined;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      size += value.byteLength;
      if (size > MAX_BODY_BYTES) {
        cut = 'too long';
        break;
      }
    }
  } catch {
    // The time limit ran out while the body came: read as far as it came.
    cut = 'unfinished';
  } finally {
    await reader.cancel().catch(() => {});
  }
  return { text: Buffer.concat(chunks).subarray(0, MAX_BODY_BYTES).toString('utf8'), ...(cut ? { cut } : {}) };
}

/** What a server answered, in a few words for a table: `404`, `200 (not JSON)`, `no answer: <why>`. */
export function answered(answer: ProbeAnswer): string {
  if (answer.status === 0) return `no answer: ${answer.failure ?? 'the request failed'}`;
  const error =
    typeof answer.json?.error === 'string'
      ? ` ${answer.json.error}${typeof answer.json.error_description === 'string' ? `: ${answer.json.error_description}` : ''}`
      : '';
  const body =
    answer.cut === 'too long'
      ? `, over ${MAX_BODY_BYTES / 1024} KiB`
      : answer.cut === 'unfinished'
        ? ', its body unfinished within the time limit'
        : answer.status === 200 && !answer.json && answer.text !== ''
          ? ', not a JSON object'
          : '';
  return `${answer.status}${error}${body}`;
}
