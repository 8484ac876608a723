import { createInterface } from 'node:readline';
import { CliError } from './errors.js';

/** Reads all of stdin (for `echo pw | context-auth users add alice`), without the final newline. */
async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks)
    .toString('utf8')
    .replace(/\r?\n$/, '');
}

/** Asks on the terminal without echoing what is typed; rejects when the terminal closes (Ctrl-D) before an answer. */
function askHidden(question: string, closed: () => CliError): Promise<string> {
  return new Promise((resolve, reject) => {
    const rl = createInterface({ input: process.stdin, output: process.stderr, terminal: true });
    const output = rl as unknown as { _writeToOutput: (text: string) => void };
    let muted = false;
    let answered = false;
    output._writeToOutput = (text: string) => {
      if (!muted || text.includes('\n')) process.stderr.write(muted ? '\n' : text);
    };
    rl.question(question, (answer) => {
      answered = true;
      rl.close();
      resolve(answer);
    });
    muted = true;
    rl.on('SIGINT', () => {
      answered = true;
      rl.close();
      reject(new CliError('Cancelled.'));
    });
    // Without this, the end of input leaves the promise pending and the command ends at once, saying nothing.
    rl.on('close', () => {
      if (answered) return;
      process.stderr.write('\n');
      reject(closed());
    });
  });
}

/**
 * A password: from stdin when it is not a terminal, else typed twice at a hidden prompt. `command`
 * is the command line that asks for it, for the message that says how to give one.
 */
export async function readPassword(command: string): Promise<string> {
  const noPassword = (where: string) =>
    new CliError(`No password given ${where}: pipe one in (echo "$PW" | ${command}), or run it in a terminal to be asked for one.`);
  if (!process.stdin.isTTY) {
    const password = await readStdin();
    if (password === '') throw noPassword('on standard input');
    // The sign-in form takes one line: a password of several could never be typed there.
    if (/[\r\n]/.test(password)) throw new CliError('The password on standard input is more than one line: give it alone, on one line.');
    return password;
  }
  const closed = () => new CliError('No password given: the input ended (Ctrl-D) before one was typed.');
  const first = await askHidden('Password: ', closed);
  const second = await askHidden('Repeat password: ', closed);
  if (first !== second) throw new CliError('The two passwords differ.');
  return first;
}
