/**
 * The real browser of the end-to-end tests: Debian's Chromium (or CHROMIUM_PATH) driven by
 * playwright-core, launched the same way by every test, with what a CI container needs.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/**
 * Launches Chromium headless; fails with how to install it when it is missing. `args` adds to the
 * usual ones (e.g. --host-resolver-rules, for sites with names of their own on this machine).
 */
export async function launchChromium(args: string[] = []): Promise<Browser> {
  assert.ok(existsSync(CHROMIUM), `Chromium not found at ${CHROMIUM}. Install it (apt-get install -y chromium) or set CHROMIUM_PATH.`);
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      ...args,
    ],
  });
}
