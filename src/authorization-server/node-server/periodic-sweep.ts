/**
 * The running server's sweep, every `intervalMs`. A sweep of millions of rows can outlast the
 * interval (it rests several times as long as each batch takes): a tick that finds one still
 * running starts none, since two at once would only compete for the same rows. stop() aborts a
 * running sweep after its batch in flight and resolves once it has ended, so the store is closed
 * under no sweep.
 */
export interface PeriodicSweep {
  stop(): Promise<void>;
}

export function periodicSweep(
  sweep: (options: { signal: AbortSignal }) => Promise<number>,
  intervalMs: number,
  onError: (error: unknown) => void,
): PeriodicSweep {
  const controller = new AbortController();
  let running: Promise<void> | undefined;
  const timer = setInterval(() => {
    if (running) return;
    running = sweep({ signal: controller.signal })
      .then(() => undefined, onError)
      .finally(() => (running = undefined));
  }, intervalMs);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      controller.abort();
      await running;
    },
  };
}
