/**
 * Opening the browser through the platform's opener (xdg-open here), with stand-in openers on
 * PATH that behave like the real one: exit 0 once a browser took the URL, exit non-zero when
 * there is none, or stay while the browser runs.
 */
import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, it } from 'node:test';
import { openBrowser, presentAuthorizationUrl } from '../../src/client/open-browser.js';

const savedPath = process.env.PATH;

/** A folder holding only an `xdg-open` that runs `body`; PATH is set to it. */
function opener(body: string | null): void {
  const bin = mkdtempSync(join(tmpdir(), 'ca-opener-'));
  if (body !== null) {
    writeFileSync(join(bin, 'xdg-open'), `#!/bin/sh\n${body}\n`);
    chmodSync(join(bin, 'xdg-open'), 0o755);
  }
  process.env.PATH = bin;
}

const URL_TO_OPEN = new URL('http://127.0.0.1:9/authorize?client_id=x');

async function present(): Promise<string[]> {
  const lines: string[] = [];
  await presentAuthorizationUrl(URL_TO_OPEN, { onProgress: (line) => lines.push(line) });
  return lines;
}

describe('openBrowser and presentAuthorizationUrl', { skip: process.platform !== 'linux' && 'xdg-open is the Linux opener' }, () => {
  afterEach(() => {
    process.env.PATH = savedPath;
  });

  it('an opener that finds no browser (non-zero exit): not opened, the URL is printed to open by hand', async () => {
    opener('echo "xdg-open: no method available for opening" >&2; exit 3');
    assert.equal(await openBrowser(URL_TO_OPEN.href), false);
    const lines = await present();
    assert.equal(lines.length, 1);
    assert.equal(lines[0], `Could not open a browser. Open this URL in a browser to authorize:\n${URL_TO_OPEN.href}`);
  });

  it('no opener at all: not opened', async () => {
    opener(null);
    assert.equal(await openBrowser(URL_TO_OPEN.href), false);
    assert.match((await present())[0]!, /^Could not open a browser\./);
  });

  it('an opener that succeeds: opened, and the URL is still shown in case nothing appears', async () => {
    opener('exit 0');
    assert.equal(await openBrowser(URL_TO_OPEN.href), true);
    assert.match((await present())[0]!, /^Opened the browser at http:\/\/127\.0\.0\.1:9; if nothing appears, open:\nhttp/);
  });

  it('an opener that stays (the browser runs in it): opened after a moment', async () => {
    opener('exec /bin/sleep 5');
    const started = Date.now();
    assert.equal(await openBrowser(URL_TO_OPEN.href), true);
    assert.ok(Date.now() - started < 5_000);
  });
});
