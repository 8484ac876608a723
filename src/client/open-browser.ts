/**
 * Shows the authorization URL to the person. Opening the browser with the platform's opener is
 * best effort: false (never an exception) when it cannot, and the URL is printed instead.
 */
import { spawn, type SpawnOptions } from 'node:child_process';

/** cmd.exe parses its command line itself: its metacharacters are escaped with ^ (as cross-spawn does). */
const escapeForCmd = (text: string): string => text.replace(/[\^&|<>()%!"]/g, '^$&');

function opener(url: string): { command: string; args: string[]; options: SpawnOptions } {
  const options: SpawnOptions = { detached: true, stdio: 'ignore' };
  switch (process.platform) {
    case 'darwin':
      return { command: 'open', args: [url], options };
    case 'win32':
      // `start` takes a first quoted argument as the window title, hence the empty "".
      return {
        command: 'cmd',
        args: ['/d', '/c', 'start', '""', escapeForCmd(url)],
        options: { ...options, windowsVerbatimArguments: true, windowsHide: true },
      };
    default:
      return { command: 'xdg-open', args: [url], options };
  }
}

/**
 * How long an opener that has not exited yet is given before we take it that a browser came up:
 * xdg-open stays while some browsers run, but fails within moments when it finds none.
 */
const OPENER_VERDICT_MS = 3_000;

/**
 * True when the opener started and did not report failure (exit code 0, or still running after
 * a moment), not that a person sees the page; false for a non-http(s) URL, no opener, or one
 * that failed (xdg-open without any browser exits non-zero).
 */
export async function openBrowser(url: string): Promise<boolean> {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return false;
  }
  // Only web pages: an opener handed file:, javascript: or a custom scheme would run other programs.
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') return false;
  const { command, args, options } = opener(parsed.href);
  return new Promise((resolve) => {
    try {
      const child = spawn(command, args, options);
      // Not unref'd: the verdict must come even when nothing else keeps the process alive.
      const verdict = setTimeout(() => resolve(true), OPENER_VERDICT_MS);
      child.once('exit', (code) => {
        clearTimeout(verdict);
        resolve(code === 0);
      });
      child.once('error', () => {
        clearTimeout(verdict);
        resolve(false);
      });
      child.unref();
    } catch {
      resolve(false);
    }
  });
}

export interface PresentOptions {
  /**
   * Shows the authorization URL to the person. Default: the system browser, or the URL printed
   * through `onProgress` when there is none. Tests and headless runners pass their own.
   */
  openAuthorizationUrl?: (url: URL) => Promise<void>;
  /** Never open a browser: print the URL instead (`--no-browser`). */
  noBrowser?: boolean;
  /** Progress for people: one line per step of a first login. */
  onProgress?: (message: string) => void;
}

/**
 * Shows the authorization URL to the person: through the caller's own opener, else the system
 * browser, else printed. The URL is printed after opening too: the browser may not come up.
 */
export async function presentAuthorizationUrl(url: URL, options: PresentOptions): Promise<void> {
  if (options.openAuthorizationUrl) return options.openAuthorizationUrl(url);
  if (!options.noBrowser && (await openBrowser(url.href))) {
    options.onProgress?.(`Opened the browser at ${url.origin}; if nothing appears, open:\n${url.href}`);
    return;
  }
  options.onProgress?.(`${options.noBrowser ? '' : 'Could not open a browser. '}Open this URL in a browser to authorize:\n${url.href}`);
}
