/**
 * Opens a URL in the person's browser with the platform's opener. Best effort: false (never an
 * exception) when it cannot, so the caller falls back to printing the URL.
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

/** True when the opener started (not that a browser showed the page); false for a non-http(s) URL or no opener. */
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
      child.once('spawn', () => resolve(true));
      child.once('error', () => resolve(false));
      child.unref();
    } catch {
      resolve(false);
    }
  });
}
