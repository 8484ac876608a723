import { createInterface } from 'node:readline';
import { CliError } from './errors.js';

/** Reads all of stdin (for `echo pw | context-auth users add alice`), without the final newline. */
async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8').replace(/\r?\n$/, '');
}

/** Asks on the terminal without echoing what is typed. */
function askHidden(question: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const rl = createInterface({ input: process.stdin, output: process.stderr, terminal: true });
    const output = rl as unknown as { _writeToOutput: (text: string) => void };
    let muted = false;
    output._writeToOutput = (text: string) => {
      if (!muted || text.includes('\n')) process.stderr.write(muted ? '\n' : text);
    };
    rl.question(question, (answer) => {
      rl.close();
      resolve(answer);
    });
    muted = true;
    rl.on('SIGINT', () => {
      rl.close();
      reject(new CliError('Cancelled.'));
    });
  });
}

/** A password: from stdin when it is not a terminal, else typed twice at a hidden prompt. */
export async function readPassword(): Promise<string> {
  if (!process.stdin.isTTY) return readStdin();
  const first = await askHidden('Password: ');
  const second = await askHidden('Repeat password: ');
  if (first !== second) throw new CliError('The two passwords differ.');
  return first;
}
