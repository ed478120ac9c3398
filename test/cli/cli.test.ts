import { createServer } from 'node:net';
import { request } from 'undici';
import { describe, expect, it } from 'vitest';
import { runBatchline, spawnBatchline } from '../batchline-cli.js';
import { linearModelOnnx, writeRepository } from '../serve/repository-fixture.js';

const run = (args: string[], env: NodeJS.ProcessEnv = {}) => runBatchline(args, { env });

describe('batchline serve options', () => {
  it.each([
    [['serve', '--max-batch-size', '0'], '--max-batch-size', 'from 1 to 4096'],
    [['serve', '--port', 'http'], '--port', 'from 0 to 65535'],
    [['serve', '--batch-window-ms', '-1'], '--batch-window-ms', 'from 0 to 60000'],
    // Was exit 1 after "starting on …", as a load failure naming no option.
    [['serve', '--model', '/nonexistent/model.onnx'], '--model', 'cannot read /nonexistent/model.onnx (ENOENT)'],
  ])('%j exits 2 naming the option and its range', async (args, flag, range) => {
    const result = await run(args);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(flag);
    expect(result.stderr).toContain(range);
  });

  it('names the environment variable when the bad value came from there', async () => {
    const result = await run(['serve'], { MAX_QUEUE_SIZE: 'lots' });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('MAX_QUEUE_SIZE (--max-queue-size)');
  });

  // Checked after the options resolve (a file that is not there): it said '--model', which was not given.
  it.each(['serve', 'profile'])('%s names MODEL when the model that is not there came from it', async (command) => {
    const fromEnv = await run([command], { MODEL: '/nonexistent/model.onnx' });
    expect(fromEnv.code).toBe(2);
    expect(fromEnv.stderr).toContain('MODEL (--model): cannot read /nonexistent/model.onnx (ENOENT)');
    // Given on the command line, it is the flag's, whatever the environment holds.
    const fromFlag = await run([command, '--model', '/nonexistent/other.onnx'], { MODEL: '/nonexistent/model.onnx' });
    expect(fromFlag.stderr).toContain('invalid option --model: cannot read /nonexistent/other.onnx (ENOENT)');
  });

  // The same for every check after the options resolve: the option the refusal is about, named as given.
  it('serve names MODEL_REPOSITORY and MODEL_NAME when their bad values came from the environment', async () => {
    const repository = await run(['serve'], { MODEL_REPOSITORY: '/nonexistent/repository' });
    expect(repository.code).toBe(2);
    expect(repository.stderr).toContain('MODEL_REPOSITORY (--model-repository): cannot read /nonexistent/repository');
    const root = await writeRepository({ 'm/1/model.onnx': linearModelOnnx([1]) });
    const name = await run(['serve', '--model', `${root}/m/1/model.onnx`], { MODEL_NAME: 'a b' });
    expect(name.code).toBe(2);
    expect(name.stderr).toContain("MODEL_NAME (--model-name): got 'a b'");
  });

  it('exits 2 at start-up for a bad config.json in --model-repository, naming the file, the field and the range', async () => {
    const root = await writeRepository({
      'm/1/model.onnx': linearModelOnnx([1]),
      'm/config.json': { max_batch_size: 5000 },
    });
    const result = await run(['serve', '--port', '0', '--model-repository', root]);
    expect(result.code).toBe(2);
    expect(result.stderr).toBe(
      `batchline: invalid model configuration: ${root}/m/config.json: max_batch_size: got 5000, expected an integer from 1 to 4096\n`,
    );
  });

  it.each([
    [['serve', '--pipeline', 'false'], "--pipeline: it takes no value (got 'false')"],
    [['serve', '--hold-retries=0'], "--hold-retries: it takes no value (got '0')"],
    // Any word, for a command that takes no argument: it was commander's "too many arguments" alone.
    [['serve', '--pipeline', 'maybe'], "--pipeline: it takes no value (got 'maybe')"],
  ])('%j exits 2 naming the switch and how to write it (the option table allows true/false)', async (args, says) => {
    const result = await run(args);
    expect(result.code).toBe(2);
    // commander alone said "too many arguments for 'serve'" or "unknown option '--hold-retries=0'".
    expect(result.stderr).toContain(`batchline: invalid option ${says}; write --`);
    expect(result.stderr).toMatch(/to turn it on or --no-[a-z-]+ to turn it off\n$/);
  });

  // A variable set in another terminal left empty: `serve --model $MODEL --model-latency-ms 0`.
  it.each([
    // Was commander's "too many arguments for 'serve'" (the 0), naming no option.
    [['serve', '--model', '--model-latency-ms', '0'], '--model', '--model-latency-ms'],
    // Was "invalid option --model-name: got '--no-ui'", an option not given.
    [['serve', '--port', '0', '--model', '--no-ui'], '--model', '--no-ui'],
    // Was a 10 s run sending the body '--quiet'.
    [['bench', '--body', '--quiet', 'localhost:1/v1/infer'], '--body', '--quiet'],
    [['simulate', '--latency-profile', '--rate=300'], '--latency-profile', '--rate'],
  ])('%j exits 2 naming the option left without its value', async (args, flag, next) => {
    const result = await run(args);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(
      `batchline: invalid option ${flag}: it needs a value, and the word after it is the option ${next}`,
    );
    expect(result.stdout).toBe('');
  });

  it('blames an unknown option after a switch on itself, not on the switch', async () => {
    const result = await run(['serve', '--pipeline', '8080', '--frob']);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain("unknown option '--frob'");
    expect(result.stderr).not.toContain('takes no value');
  });

  // Only the top level pointed to --help: `serve --frob` said "unknown option '--frob'" and no more.
  it.each([
    ['serve'],
    ['bench', 'localhost:1'],
    ['bench', 'compare', 'a.json', 'b.json'],
    ['simulate'],
    ['profile'],
    ['watch', 'localhost:1'],
  ])('%j with an unknown option exits 2 and points to --help', async (...args) => {
    const result = await run([...args, '--frob']);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("unknown option '--frob'");
    expect(result.stderr).toContain('(run with --help for the options)');
  });

  it('rejects an unknown flag', async () => {
    const result = await run(['serve', '--max-batch', '4']);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain("unknown option '--max-batch'");
  });

  it('documents every option with its env variable and default in --help', async () => {
    const result = await run(['serve', '--help']);
    expect(result.code).toBe(0);
    for (const text of [
      '--max-batch-size',
      'MAX_BATCH_SIZE',
      'default 8',
      '--drain-timeout-ms',
      '--instances',
      '--model ',
    ]) {
      expect(result.stdout).toContain(text);
    }
  });
});

describe('batchline serve as a process', () => {
  // grpc-js wrote its own 'E No address added out of total 1 resolved' before batchline's line.
  it('says in one line of its own which port is in use, --port or --grpc-port (or the variable that set it), and exits 1 for both', async () => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const port = (taken.address() as { port: number }).port;
    try {
      for (const flags of [
        ['--port', String(port)],
        ['--port', '0', '--grpc-port', String(port)],
      ]) {
        const result = await run(['serve', '--no-ui', ...flags]);
        expect([result.code, result.stderr]).toEqual([
          1,
          `batchline: 127.0.0.1:${port} (${flags.at(-2)}) is already in use (another server? choose another port)\n`,
        ]);
      }
      // Set by its variable, the port is named as other options so given are: it said (--port).
      for (const [env, flags, named] of [
        [{ PORT: String(port) }, [], 'PORT (--port)'],
        [{ GRPC_PORT: String(port) }, ['--port', '0'], 'GRPC_PORT (--grpc-port)'],
        [{ PORT: '1' }, ['--port', String(port)], '--port'],
      ] as const) {
        const result = await run(['serve', '--no-ui', ...flags], env);
        expect([result.code, result.stderr]).toEqual([
          1,
          `batchline: 127.0.0.1:${port} (${named}) is already in use (another server? choose another port)\n`,
        ]);
      }
    } finally {
      taken.close();
    }
  });

  // The quick start's first screen: a framework's deprecation warning there (Fastify 5.12's
  // FSTDEP022, for an option given at the top level) reads as a fault of the user's set-up.
  it('starts and stops on the embedded model without a warning on stderr', async () => {
    const child = spawnBatchline(['serve', '--port', '0']);
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => (stdout += chunk));
    child.stderr.on('data', (chunk) => (stderr += chunk));
    const closed = new Promise<number | null>((resolve) => child.on('close', resolve));
    await new Promise<void>((resolve, reject) => {
      child.stdout.on('data', () => {
        if (stdout.includes('listening on ')) resolve();
      });
      child.once('exit', (code) => reject(new Error(`serve exited with ${code} before listening: ${stderr}`)));
    });
    child.kill('SIGTERM');
    expect(await closed).toBe(0);
    expect(stderr).not.toMatch(/warning/i);
  });

  // What a drain owes is an answer to every request it read. A keep-alive connection with no
  // answer owed is closed once no request has come for a moment, and a request a client writes on
  // it after that (a client slower than the moment, as on a loaded machine) was never read: the
  // client sees the connection closed (UND_ERR_SOCKET), the race RFC 9112 §9.6 leaves to clients.
  // So the answers are checked against what the server read, by request id (its request log).
  it('drains on SIGTERM under load: every request it read answered 200 or 503, exit 0', async () => {
    const child = spawnBatchline(['serve', '--port', '0', '--drain-timeout-ms', '300', '--log-requests'], {
      env: { MODEL_LATENCY_MS: '50', MAX_BATCH_SIZE: '4' },
    });
    let stdout = '';
    child.stdout.on('data', (chunk) => (stdout += chunk));
    const url = await new Promise<string>((resolve, reject) => {
      child.stdout.on('data', () => {
        const match = /listening on (\S+)/.exec(stdout);
        if (match) resolve(match[1]!);
      });
      child.once('exit', (code) => reject(new Error(`serve exited with ${code} before listening: ${stdout}`)));
    });
    // 'close', not 'exit': the log's last lines may still be in the pipe when the process exits.
    const closed = new Promise<number | null>((resolve) => child.on('close', resolve));
    const answers = new Map<string, number>();
    const failures = new Map<string, string>();
    // 16 keep-alive clients loop until the server stops answering them; each loop is bounded.
    const client = async (c: number): Promise<void> => {
      for (let i = 0; i < 200; i++) {
        const id = `c${c}-${i}`;
        try {
          const response = await request(`${url}/v1/infer`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', 'x-request-id': id },
            body: '{"inputs":[0.2,1.5,-0.3]}',
          });
          await response.body.text();
          answers.set(id, response.statusCode);
          if (response.statusCode === 503) return;
        } catch (error) {
          // Refused (the listener has closed) or cut before the server read it: checked below.
          failures.set(id, (error as { code?: string }).code ?? String(error));
          return;
        }
      }
    };
    const clients = Array.from({ length: 16 }, (_, c) => client(c));
    for (let i = 0; i < 1_000_000 && answers.size < 32 && failures.size === 0; i++)
      await new Promise((resolve) => setImmediate(resolve));
    child.kill('SIGTERM');
    await Promise.all(clients);
    expect(await closed).toBe(0);
    const read = new Set(
      [...stdout.matchAll(/"reqId":"([^"]+)"[^\n]*"msg":"incoming request"/g)].map((match) => match[1]!),
    );
    const statuses = [...answers.values()];
    expect([...read].filter((id) => !answers.has(id))).toEqual([]);
    expect([...failures].filter(([id]) => read.has(id))).toEqual([]);
    expect([...answers.keys()].filter((id) => !read.has(id))).toEqual([]);
    expect(statuses.every((s) => s === 200 || s === 503)).toBe(true);
    expect(statuses.filter((s) => s === 200).length).toBeGreaterThanOrEqual(32);
    expect(stdout).toContain('draining');
    // The request log shares stdout with serve's own lines; docs/deploy.md ("Logs") tells them
    // apart by their first character.
    const lines = stdout.split('\n').filter((line) => line !== '');
    expect(lines.filter((line) => !line.startsWith('{') && !line.startsWith('batchline serve: '))).toEqual([]);
    for (const line of lines.filter((l) => l.startsWith('{'))) expect(JSON.parse(line)).toHaveProperty('time');
  });
});
