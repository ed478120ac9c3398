import { Command } from 'commander';
import { SERVE_OPTIONS } from '../options/serve.js';
import { addOptions, resolveOptions } from '../options/schema.js';

export function makeServeCommand(): Command {
  const command = new Command('serve').description(
    'Serve an ONNX model over HTTP with dynamic batching (POST /v1/infer, /healthz, /readyz, /metrics).',
  );
  addOptions(command, SERVE_OPTIONS);
  command.action(async (raw: Record<string, unknown>) => {
    const config = resolveOptions(SERVE_OPTIONS, raw);
    const { runServer } = await import('../serve/run-server.js');
    await runServer(config);
  });
  return command;
}
