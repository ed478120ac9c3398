import { Command } from 'commander';
import { SERVE_OPTIONS, withModelLatencyDefault } from '../options/serve.js';
import { withOptionsAsGiven } from '../options/named-as-given.js';
import { addOptions } from '../options/command-flags.js';
import { resolveOptions } from '../options/schema.js';
import { keepOldGenerationRoom } from '../serve/old-generation-room.js';
import { keepYoungGenerationSmall } from '../serve/young-generation.js';

export function makeServeCommand(): Command {
  const command = new Command('serve').description(
    'Serve an ONNX model, or a model written in JavaScript, over HTTP with dynamic batching (POST /v1/infer, /healthz, /readyz, /metrics).',
  );
  addOptions(command, SERVE_OPTIONS);
  command.option('--no-ui', 'plain log lines instead of the live dashboard (also off a terminal and with CI=true)');
  command.action((raw: Record<string, unknown>) =>
    withOptionsAsGiven(SERVE_OPTIONS, raw, async () => {
      const latencyEnv = process.env[SERVE_OPTIONS.modelLatencyMs.env];
      const latencyGiven = raw.modelLatencyMs !== undefined || (latencyEnv !== undefined && latencyEnv !== '');
      const config = withModelLatencyDefault(resolveOptions(SERVE_OPTIONS, raw), latencyGiven);
      // Before serve's modules load, while V8's young generation is still small; only when models run
      // off the main thread (inline: `auto` with the embedded model, as in resolveExecution).
      const inline =
        config.execution === 'inline' ||
        (config.execution === 'auto' && config.model === undefined && config.modelRepository === undefined);
      if (!inline) {
        keepYoungGenerationSmall();
        keepOldGenerationRoom();
      }
      const { shouldUseDashboard } = await import('../ui/terminal.js');
      const { runServer } = await import('../serve/run-server.js');
      const { startServeOutput } = await import('./serve-output.js');
      const dashboard = shouldUseDashboard(process.stdout, process.env, raw.ui === false);
      await runServer(config, {
        stdout: process.stdout,
        stderr: process.stderr,
        startOutput: (server) => startServeOutput({ ...server, dashboard, stdout: process.stdout }),
      });
    }),
  );
  return command;
}
