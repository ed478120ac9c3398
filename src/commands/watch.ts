import { Command } from 'commander';
import { invalidOptionValue } from '../options/invalid-option-value.js';
import { addOptions } from '../options/command-flags.js';
import { parseHeaderLines } from '../options/header-lines.js';
import { withOptionsAsGiven } from '../options/named-as-given.js';
import { resolveOptions } from '../options/schema.js';
import { WATCH_OPTIONS } from '../options/watch.js';
import { trapInterrupt } from './interrupt.js';

export function makeWatchCommand(): Command {
  const command = new Command('watch')
    .description('Show the live dashboard of a batchline server running elsewhere (reads its GET /v1/stats).')
    .argument(
      '<url>',
      'the server, e.g. http://10.0.0.5:8080 or localhost:8080 (or a route of it, such as the /v1/infer URL bench loads)',
    );
  addOptions(command, WATCH_OPTIONS);
  command.action((target: string, raw: Record<string, unknown>) =>
    withOptionsAsGiven(WATCH_OPTIONS, raw, async () => {
      const resolved = resolveOptions(WATCH_OPTIONS, raw);
      const options = {
        intervalMs: resolved.interval,
        timeoutMs: resolved.timeout,
        headers: parseHeaderLines(resolved.header, '--header', 'watch sends GETs without a body'),
        insecureTls: resolved.insecure,
      };
      const { statsUrlFor } = await import('../stats-contract/stats-poller.js');
      const statsUrl = statsUrlFor(target);
      if (statsUrl === undefined) invalidOptionValue('<url>', target, 'an http(s) URL such as http://localhost:8080');
      const { shouldUseDashboard } = await import('../ui/terminal.js');

      const stop = new AbortController();
      // The first Ctrl-C ends watch (exit 0), a second quits at once, as bench and serve do.
      const untrap = trapInterrupt(stop);
      try {
        if (shouldUseDashboard(process.stdout, process.env, !resolved.ui)) {
          const { startWatchDashboard } = await import('../ui/watch-dashboard.js');
          await startWatchDashboard({
            target,
            statsUrl,
            intervalMs: options.intervalMs,
            timeoutMs: options.timeoutMs,
            headers: options.headers,
            insecureTls: options.insecureTls,
            signal: stop.signal,
          });
        } else {
          const { runWatchPlain } = await import('../watch/watch-plain.js');
          await runWatchPlain({
            statsUrl,
            intervalMs: options.intervalMs,
            timeoutMs: options.timeoutMs,
            headers: options.headers,
            insecureTls: options.insecureTls,
            signal: stop.signal,
          });
        }
      } finally {
        untrap();
      }
    }),
  );
  return command;
}
