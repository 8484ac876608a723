/**
 * What the suite registers its tests with: `describe` and `it` of any runner that has them
 * (node:test's, Vitest's, Jest's, Mocha's). The suite opens and closes a store inside each test,
 * so it needs no hooks of the runner.
 */
import { describe as nodeDescribe, it as nodeIt } from 'node:test';

export interface TestRunner {
  describe(name: string, body: () => void): unknown;
  /** The body declares no parameter (Jest and Mocha would take one for a done callback); it reads the runner's context from its arguments. */
  it(name: string, body: (...args: never[]) => Promise<void>): unknown;
}

/** node:test, where the caller gives no runner. */
export const NODE_TEST: TestRunner = {
  describe: (name, body) => nodeDescribe(name, body),
  it: (name, body) => nodeIt(name, body as (...args: unknown[]) => Promise<void>),
};

/**
 * Skips the running test, saying why, as its runner allows: node:test's and Vitest's test context
 * (`skip(reason)`, the body's first argument), or Mocha's (`this.skip()`). A runner with neither
 * (Jest) cannot skip a test once it runs: the test fails, saying so, and the caller names what the
 * store lacks in `lacks`, whose tests are then not registered.
 */
export function skipTest(context: unknown, self: unknown, reason: string, lacking: string): void {
  for (const holder of [context, self]) {
    const skip = (holder as { skip?: unknown } | null | undefined)?.skip;
    if (typeof skip === 'function') {
      (skip as (reason: string) => void).call(holder, reason);
      return;
    }
  }
  throw new Error(`${reason}; this runner cannot skip a test once it runs: give lacks: ['${lacking}'] to leave these tests out`);
}
