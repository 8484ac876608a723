import { cspHash, html, SafeHtml } from './html.js';
import { STYLE } from './style.js';
import { respond, type Answer } from '../http/responses.js';

const STYLE_HASH = cspHash(STYLE);

export interface Page {
  status: number;
  body: string;
  headers: Record<string, string>;
}

/**
 * Wraps page content in the document and the headers every page carries: no framing, a CSP that
 * allows no script and only our stylesheet, no referrer to any other origin, no caching. The
 * referrer goes to our own origin only (`same-origin`, not `no-referrer`): under `no-referrer` a
 * browser sends `Origin: null` with our own forms, and a form post is checked by its Origin
 * (http/page-form.ts). `formTargets` are the origins
 * a form on the page may end up at: Chromium applies form-action to the redirect after a POST too,
 * so the client's redirect origin must be listed for approve/deny to arrive. `wide` is for the
 * admin console's tables.
 */
export function page(title: string, content: SafeHtml, options: { status?: number; formTargets?: string[]; wide?: boolean } = {}): Page {
  const formAction = ["'self'", ...(options.formTargets ?? [])].join(' ');
  const document = html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="same-origin">
<title>${title}</title>
<style>${new SafeHtml(STYLE)}</style>
</head>
<body>
<main${options.wide ? new SafeHtml(' class="wide"') : ''}>
<div class="brand">context-auth</div>
${content}
</main>
</body>
</html>
`;
  return {
    status: options.status ?? 200,
    body: document.value,
    headers: {
      'Content-Type': 'text/html; charset=utf-8',
      'Content-Security-Policy': `default-src 'none'; style-src ${STYLE_HASH}; img-src 'self'; form-action ${formAction}; frame-ancestors 'none'; base-uri 'none'`,
      'X-Frame-Options': 'DENY',
      'X-Content-Type-Options': 'nosniff',
      'Referrer-Policy': 'same-origin',
      'Cache-Control': 'no-store',
      Pragma: 'no-cache',
    },
  };
}

/** A page as the endpoint's answer. */
export function pageAnswer(result: Page, extraHeaders: Record<string, string> = {}): Answer {
  return respond(result.body, result.status, { ...result.headers, ...extraHeaders });
}
