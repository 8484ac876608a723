/**
 * The loopback redirect of a native client (RFC 8252 §7.3): a one-shot HTTP server on 127.0.0.1
 * that waits for the browser to come back with `code` (or `error`), shows a short page and closes.
 * Only the answer carrying the `state` of the sign-in in progress ends the wait: the port is
 * predictable (a registered one is reused), and any local program or web page can send a request
 * to it. The issuer, and the state again, are the caller's to verify.
 */
import { createHash } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { safeEqual } from '../core/secrets.js';
import { ClientError } from './errors.js';

export interface LoopbackOptions {
  /** 0 (default) lets the system pick a free port. */
  port?: number;
  /** Default '/callback'. */
  path?: string;
  /** How long wait() waits for the browser (default 5 minutes). */
  timeoutMs?: number;
}

export interface LoopbackCallback {
  redirectUri: string;
  /**
   * The `state` of the authorization request in progress, set before the person is sent to the
   * browser: only a callback carrying it ends the wait; any other is answered 400 and ignored.
   * A later call (a new authorization request) replaces it.
   */
  expectState(state: string): void;
  /** The callback's query parameters, `code` or `error` among them; the server is closed by then. */
  wait(): Promise<URLSearchParams>;
  /** Stops listening; a wait() still pending rejects. Safe to call more than once. */
  close(): Promise<void>;
}

// The look of the authorization server's pages (a card on a quiet background, light or dark), so
// that the last page of a sign-in does not look like an error.
const STYLE = [
  ':root{color-scheme:light dark;--fg:#1b1f24;--muted:#57606a;--bg:#f6f8fa;--card:#fff;--line:#d0d7de;--ok:#1a7f37;--bad:#cf222e}',
  '@media (prefers-color-scheme:dark){:root{--fg:#e6edf3;--muted:#9da7b3;--bg:#0d1117;--card:#161b22;--line:#30363d;--ok:#3fb950;--bad:#f85149}}',
  '*{box-sizing:border-box}',
  'body{margin:0;padding:16px 0;min-height:100vh;display:grid;place-items:center;background:var(--bg);color:var(--fg);font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif}',
  'main{width:min(420px,calc(100vw - 32px));background:var(--card);border:1px solid var(--line);border-radius:12px;padding:28px;box-shadow:0 8px 24px rgba(0,0,0,.08);overflow-wrap:anywhere}',
  '.brand{color:var(--muted);font-size:.8rem;letter-spacing:.08em;text-transform:uppercase;margin-bottom:16px}',
  'h1{font-size:1.35rem;margin:0 0 8px}h1.ok{color:var(--ok)}h1.bad{color:var(--bad)}',
  'p{margin:8px 0}.muted{color:var(--muted);font-size:.9rem}',
  'code{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:.9em}',
].join('');
// Nothing may load: no scripts, no images, no frames; only the one inline style, by its hash.
const CSP = [
  "default-src 'none'",
  `style-src 'sha256-${createHash('sha256').update(STYLE).digest('base64')}'`,
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

const escapeHtml = (text: string): string => text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

/** What a page says: a heading, a sentence, and how the heading is coloured. */
interface PageText {
  title: string;
  message: string;
  /** Optional second line, in grey. */
  hint?: string;
  tone?: 'ok' | 'bad';
}

function sendPage(response: http.ServerResponse, status: number, text: PageText, headers: Record<string, string> = {}): void {
  const heading = `<h1${text.tone ? ` class="${text.tone}"` : ''}>${escapeHtml(text.title)}</h1>`;
  const hint = text.hint ? `<p class="muted">${escapeHtml(text.hint)}</p>` : '';
  const body = `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>${escapeHtml(text.title)}</title><style>${STYLE}</style></head><body><main><div class="brand">context-auth</div>${heading}<p>${escapeHtml(text.message)}</p>${hint}</main></body></html>`;
  response.writeHead(status, {
    'content-type': 'text/html; charset=utf-8',
    'content-length': Buffer.byteLength(body),
    'content-security-policy': CSP,
    'cache-control': 'no-store',
    'x-content-type-options': 'nosniff',
    'x-frame-options': 'DENY',
    // The page's URL carries the code: it must not travel anywhere as a Referer.
    'referrer-policy': 'no-referrer',
    ...headers,
  });
  response.end(body);
}

/** The page for the authorization server's answer: signed in, denied, or another refusal. */
function answerPage(error: string | null): PageText {
  const back = 'You can close this window and return to the terminal.';
  if (error === null) return { title: 'Signed in', message: back, tone: 'ok' };
  if (error === 'access_denied')
    return {
      title: 'Access denied',
      message: 'You denied access; the application was not authorized.',
      hint: `${back} Run the command again to retry.`,
      tone: 'bad',
    };
  return { title: 'Authorization failed', message: `The authorization server answered: ${error.slice(0, 200)}`, hint: back, tone: 'bad' };
}

/** Whether the callback carries exactly one `state`, the one expected (compared in constant time). */
function isExpectedState(params: URLSearchParams, expected: string | undefined): boolean {
  const states = params.getAll('state');
  return expected !== undefined && states.length === 1 && safeEqual(states[0]!, expected);
}

function listen(server: http.Server, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const onError = (error: NodeJS.ErrnoException): void => {
      const message =
        error.code === 'EADDRINUSE'
          ? `cannot listen for the authorization callback: port ${port} on 127.0.0.1 is in use; choose another port, or none to use a free one`
          : `cannot listen for the authorization callback on 127.0.0.1:${port}: ${error.message}`;
      reject(new ClientError('authorization_failed', message, { cause: error }));
    };
    server.once('error', onError);
    server.listen(port, '127.0.0.1', () => {
      server.off('error', onError);
      resolve((server.address() as AddressInfo).port);
    });
  });
}

export async function startLoopback(options: LoopbackOptions = {}): Promise<LoopbackCallback> {
  const callbackPath = options.path ?? '/callback';
  if (!callbackPath.startsWith('/') || /[?#\s]/.test(callbackPath)) {
    throw new ClientError('authorization_failed', `the loopback path must start with "/" and hold no query, fragment or spaces: ${callbackPath}`);
  }
  const timeoutMs = options.timeoutMs ?? 5 * 60_000;

  let settle: { resolve: (params: URLSearchParams) => void; reject: (error: Error) => void } | undefined;
  const result = new Promise<URLSearchParams>((resolve, reject) => (settle = { resolve, reject }));
  // Nobody may be waiting yet when the timeout fires: that must not be an unhandled rejection.
  result.catch(() => undefined);

  let port = 0;
  let closing: Promise<void> | undefined;
  let expectedState: string | undefined;

  const server = http.createServer((request, response) => {
    const url = new URL(request.url ?? '/', 'http://127.0.0.1');
    // Only the redirect URI's own host: a web page that rebinds its name to 127.0.0.1 sends another Host.
    if (request.headers.host !== `127.0.0.1:${port}`) {
      sendPage(response, 400, { title: 'Bad request', message: 'This address only answers the sign-in redirect.' });
      return;
    }
    if (url.pathname !== callbackPath) {
      sendPage(response, 404, { title: 'Not found', message: 'Nothing here.' });
      return;
    }
    if (request.method !== 'GET') {
      sendPage(response, 405, { title: 'Method not allowed', message: 'Only GET is accepted here.' }, { allow: 'GET' });
      return;
    }
    const params = url.searchParams;
    const error = params.get('error');
    if (params.get('code') === null && error === null) {
      sendPage(response, 400, { title: 'Bad request', message: 'This page expects the authorization server’s answer (a code or an error).' });
      return;
    }
    if (!isExpectedState(params, expectedState)) {
      sendPage(response, 400, { title: 'Not this sign-in', message: 'This callback was not for the sign-in in progress; it was ignored.' });
      return;
    }
    if (!settle) {
      sendPage(response, 409, { title: 'Already answered', message: 'This sign-in has already been completed. You can close this window.' });
      return;
    }
    const { resolve } = settle;
    settle = undefined;
    clearTimeout(timer);
    // Resolve once the server is closed, so that the caller knows nothing more can arrive.
    response.once('close', () => void shutDown().then(() => resolve(params)));
    response.setHeader('connection', 'close');
    sendPage(response, 200, answerPage(error));
  });

  function shutDown(): Promise<void> {
    closing ??= new Promise((resolve) => {
      clearTimeout(timer);
      server.close(() => resolve());
      // Browsers keep spare connections open; they would hold close() up until they idle out.
      server.closeAllConnections();
    });
    return closing;
  }

  function fail(error: ClientError): Promise<void> {
    const pending = settle;
    settle = undefined;
    return shutDown().then(() => pending?.reject(error));
  }

  port = await listen(server, options.port ?? 0);
  // Started once listening (before any request can be handled: this runs in the same turn).
  const timer = setTimeout(() => {
    void fail(new ClientError('authorization_timeout', `no answer from the browser within ${Math.round(timeoutMs / 1000)} s; run the sign-in again`));
  }, timeoutMs);
  // The listening server keeps the process alive while it waits; the timer alone need not.
  timer.unref();

  return {
    redirectUri: `http://127.0.0.1:${port}${callbackPath}`,
    expectState: (state) => {
      if (state === '') throw new ClientError('authorization_failed', 'the expected state of the authorization request is empty');
      expectedState = state;
    },
    wait: () => result,
    close: () => fail(new ClientError('authorization_failed', 'the authorization callback listener was closed before the browser returned')),
  };
}
