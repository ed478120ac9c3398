import { readFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { benchMain } from '../../src/commands/bench-main.js';
import { ExitWithCode } from '../../src/errors.js';
import { startTestServer } from '../serve/test-server.js';
import { validated } from './plan-helper.js';
import { TextSink } from './text-sink.js';

/** A certificate for localhost and 127.0.0.1 that no CA signed (openssl req -x509, 100 years). */
const fixture = (name: string) => readFileSync(new URL(`./fixtures/${name}`, import.meta.url));

let server: Server | undefined;
afterEach(async () => {
  await new Promise((resolve) => server?.close(resolve) ?? resolve(undefined));
  server = undefined;
});

describe('bench https:// against a self-signed certificate', () => {
  it('names the certificate before sending anything, and loads it with --insecure', async () => {
    let requests = 0;
    server = createServer(
      { key: fixture('self-signed-key.pem'), cert: fixture('self-signed-cert.pem') },
      (req, res) => {
        // The load's, not the probe's for a batchline server (which --insecure lets through too).
        if (req.url !== '/v1/stats') requests++;
        res.end('ok');
      },
    );
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
    const url = `https://127.0.0.1:${(server.address() as AddressInfo).port}/`;
    const run = async (raw: Record<string, string | boolean>) => {
      const stdout = new TextSink();
      let exit: unknown;
      await benchMain(
        validated(url, { requests: '20', warmup: '0', ...raw }),
        { json: '-', hdrLog: undefined, sweep: undefined, slo: 'p99<100ms', quiet: true },
        { stdout, stderr: new TextSink(), env: {} },
      ).catch((error: unknown) => (exit = error));
      return { stdout: stdout.text, exit };
    };

    // Every request failed as `other`, with no word of why.
    const refused = await run({});
    expect(refused.exit).toBeInstanceOf(ExitWithCode);
    expect((refused.exit as ExitWithCode).exitCode).toBe(1);
    expect((refused.exit as ExitWithCode).message).toMatch(
      /^batchline bench: the certificate of 127\.0\.0\.1:\d+ does not verify \(DEPTH_ZERO_SELF_SIGNED_CERT: self[- ]signed certificate\); no request was sent: pass --insecure to load it anyway/,
    );
    expect(requests).toBe(0);

    const insecure = await run({ insecure: true });
    expect(insecure.exit).toBeUndefined();
    expect(JSON.parse(insecure.stdout).requests).toMatchObject({ sent: 20, ok: 20, errors: 0 });
    expect(requests).toBe(20);
  });
});

// A batchline server behind TLS of its own certificate and a gateway's authorization: bench's
// probe for a body (GET /v1/stats) went without --insecure and -H, was refused, and the run was
// one of GETs, each answered 404, instead of the model's body.
describe('bench https:// --insecure -H against a batchline server behind a gateway', () => {
  it('finds the body its model takes, its probe going as the requests do', async () => {
    const batchline = await startTestServer({ modelLatencyMs: 0 });
    const backend = new URL(batchline.url);
    const methods: string[] = [];
    try {
      server = createServer(
        { key: fixture('self-signed-key.pem'), cert: fixture('self-signed-cert.pem') },
        (req, res) => {
          if (req.headers.authorization !== 'Bearer t') {
            res.statusCode = 401;
            return void res.end();
          }
          if (req.url === '/v1/infer') methods.push(req.method ?? '');
          const onward = httpRequest(
            { host: backend.hostname, port: backend.port, path: req.url, method: req.method, headers: req.headers },
            (answer) => {
              res.writeHead(answer.statusCode ?? 502, answer.headers);
              answer.pipe(res);
            },
          );
          req.pipe(onward);
        },
      );
      await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
      const url = `https://127.0.0.1:${(server.address() as AddressInfo).port}/v1/infer`;
      const stdout = new TextSink();
      await benchMain(
        validated(url, { requests: '10', warmup: '0', connections: '2', insecure: true }, ['authorization: Bearer t']),
        { json: '-', hdrLog: undefined, sweep: undefined, slo: 'p99<1s', quiet: true },
        { stdout, stderr: new TextSink(), env: {} },
      );
      const report = JSON.parse(stdout.text);
      expect(report.method).toBe('POST');
      expect(report.status).toStrictEqual({ 200: 10 });
      expect(new Set(methods)).toStrictEqual(new Set(['POST']));
      expect(report.server).toMatchObject({ model: 'toy-logistic-v1', inferences: 10 });
    } finally {
      server?.closeAllConnections();
      await batchline.close();
    }
  });
});
