/**
 * `npm test`'s last step: the unit suite and the end-to-end suite, both run whatever the other's
 * outcome, each one's result said at the end; the exit status fails when either failed.
 */
import { spawnSync } from 'node:child_process';

const suites = ['test:unit', 'test:e2e'];
const results = suites.map((script) => {
  const started = Date.now();
  const run = spawnSync('npm', ['run', script], { stdio: 'inherit' });
  return { script, status: run.status ?? 1, minutes: (Date.now() - started) / 60_000 };
});
for (const { script, status, minutes } of results) {
  process.stdout.write(`${script}: ${status === 0 ? 'passed' : `FAILED (exit ${status})`} in ${minutes.toFixed(1)} min\n`);
}
process.exit(results.every((result) => result.status === 0) ? 0 : 1);
