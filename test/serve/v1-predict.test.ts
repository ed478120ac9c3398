/**
 * TensorFlow Serving's REST predict, KServe's V1 protocol: `POST /v1/models/{name}[/versions/{v}]:predict`
 * on a real server, with the bodies TF Serving's and KServe's docs show (row form `instances`,
 * columnar form `inputs`), the answers they describe (`predictions`, `outputs`) and their error
 * body (`{"error": "<message>"}`), for the embedded model, code models of one and several inputs
 * and outputs, and a JSON code model.
 */
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { CODE_MODELS, codeModelDir } from '../model/code-model-fixtures.js';
import { PATIENCE } from '../patience.js';
import { startTestServer, type TestServer } from './test-server.js';

/** TF Serving's example model, half_plus_three: one scalar input, one scalar output. */
const HALF_PLUS_THREE = `
export const inputs = [{ name: 'x', datatype: 'FP32', shape: [] }];
export const outputs = [{ name: 'y', datatype: 'FP32', shape: [] }];
export function execute(items) { return items.map(({ x }) => ({ y: [x[0] / 2 + 3] })); }
`;

/** Two named inputs of TF Serving's row-form example, one output: the sum of both. */
const SIGNALS = `
export const inputs = [{ name: 'signal', datatype: 'FP32', shape: [5] }, { name: 'sensor', datatype: 'FP32', shape: [2, 2] }];
export const outputs = [{ name: 'sum', datatype: 'FP64', shape: [] }];
export function execute(items) {
  return items.map(({ signal, sensor }) => ({ sum: [[...signal, ...sensor].reduce((a, b) => a + b, 0)] }));
}
`;

interface V1Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  json: any;
}

async function call(
  url: string,
  body: unknown,
  headers: Record<string, string> = { 'content-type': 'application/json' },
  method: 'POST' | 'GET' = 'POST',
): Promise<V1Reply> {
  const response = await request(url, {
    method,
    headers,
    ...(method === 'GET' ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
  });
  const text = await response.body.text();
  return { status: response.statusCode, headers: response.headers, json: text === '' ? undefined : JSON.parse(text) };
}

let server: TestServer;

/** `batchline_admitted_total` of `model`'s version 1, from the Prometheus text. */
async function admittedOf(model: string): Promise<number> {
  const text = await (await request(`${server.url}/metrics`)).body.text();
  const line = text.split('\n').find((l) => l.startsWith(`batchline_admitted_total{model="${model}",version="1"}`));
  return Number(line?.split(' ')[1]);
}

const predict = (model: string, body: unknown, headers?: Record<string, string>): Promise<V1Reply> =>
  call(`${server.url}/v1/models/${model}:predict`, body, headers);

beforeAll(async () => {
  const repository = await codeModelDir({
    'half_plus_three/1/model.mjs': HALF_PLUS_THREE,
    'signals/1/model.mjs': SIGNALS,
    'double/1/model.mjs': CODE_MODELS.double,
    'echo/1/model.mjs': CODE_MODELS.echo,
  });
  server = await startTestServer({ modelRepository: repository, maxBatchSize: 2, batchWindowMs: 2 });
});

afterAll(async () => {
  await server?.close();
});

describe('POST /v1/models/{name}:predict, the row form', () => {
  it("answers TF Serving's own example as its docs show it", async () => {
    // The exact command of TF Serving's REST API page: curl -d (a form's Content-Type).
    const answer = await predict('half_plus_three', '{"instances": [1.0,2.0,5.0]}', {
      'content-type': 'application/x-www-form-urlencoded',
    });
    expect([answer.status, answer.json]).toStrictEqual([200, { predictions: [3.5, 4.0, 5.5] }]);
    // One instance, and no Content-Type at all.
    expect((await predict('half_plus_three', '{"instances": [4]}', {})).json).toStrictEqual({ predictions: [5] });
  });

  it('takes an object of named inputs per instance, and the version in the path', async () => {
    const instances = [
      {
        signal: [1, 2, 3, 4, 5],
        sensor: [
          [1, 2],
          [3, 4],
        ],
      },
      {
        signal: [3, 4, 1, 2, 5],
        sensor: [
          [4, 5],
          [6, 8],
        ],
      },
      {
        signal: [0, 0, 0, 0, 1],
        sensor: [
          [0, 0],
          [0, 1],
        ],
      },
    ];
    const answer = await predict('signals', { signature_name: 'serving_default', instances });
    expect([answer.status, answer.json]).toStrictEqual([200, { predictions: [25, 38, 2] }]);
    const versioned = await call(`${server.url}/v1/models/signals/versions/1:predict`, { instances });
    expect(versioned.json).toStrictEqual({ predictions: [25, 38, 2] });
  });

  it('answers an object per instance for a model of several outputs', async () => {
    const answer = await predict('double', {
      instances: [
        [1, 2, 3],
        [0.5, 0, -0],
      ],
    });
    expect(answer.status).toBe(200);
    expect(answer.json.predictions).toHaveLength(2);
    expect(answer.json.predictions.map((p: { y: number[] }) => p.y)).toStrictEqual([
      [3, 5, 7],
      [2, 1, 1],
    ]);
    expect(Object.keys(answer.json.predictions[0]).sort()).toStrictEqual(['instance', 'y']);
  });

  it("takes a JSON code model's values as its instances", async () => {
    const answer = await predict('echo', { instances: [{ text: 'ab' }, { text: 'c', repeat: 3 }] });
    expect(answer.status).toBe(200);
    expect(answer.json.predictions.map((p: { echo: string }) => p.echo)).toStrictEqual(['abab', 'ccc']);
    const refused = await predict('echo', { instances: [{ text: 'ab' }, { text: 7 }] });
    expect([refused.status, refused.json.code]).toStrictEqual([400, 'bad_input']);
    expect(refused.json.error).toMatch(/^invalid inputs: instances\[1\]: .*text/);
  });

  it('answers the embedded model with its score per instance', async () => {
    const toy = await startTestServer();
    try {
      const answer = await call(`${toy.url}/v1/models/toy-logistic-v1:predict`, {
        instances: [
          [0.2, 1.5, -0.3],
          [0, 0, 0],
        ],
      });
      expect(answer.status).toBe(200);
      const [[first], [second]] = answer.json.predictions;
      expect(first).toBeCloseTo(0.682799, 5);
      expect(second).toBeGreaterThan(0);
      expect(answer.json.predictions.map((p: number[]) => p.length)).toStrictEqual([1, 1]);
    } finally {
      await toy.close();
    }
  });
});

describe('POST /v1/models/{name}:predict, the columnar form', () => {
  it('takes each input with the batch first and answers "outputs"', async () => {
    const inputs = {
      signal: [
        [1, 2, 3, 4, 5],
        [3, 4, 1, 2, 5],
      ],
      sensor: [
        [
          [1, 2],
          [3, 4],
        ],
        [
          [4, 5],
          [6, 8],
        ],
      ],
    };
    const answer = await predict('signals', { inputs });
    expect([answer.status, answer.json]).toStrictEqual([200, { outputs: [25, 38] }]);
    const several = await predict('double', {
      inputs: [
        [1, 2, 3],
        [4, 5, 6],
      ],
    });
    expect(several.json.outputs.y).toStrictEqual([
      [3, 5, 7],
      [9, 11, 13],
    ]);
    expect(several.json.outputs.instance).toHaveLength(2);
  });

  it('refuses inputs whose first dimensions differ, naming them', async () => {
    const answer = await predict('signals', {
      inputs: {
        signal: [[1, 2, 3, 4, 5]],
        sensor: [
          [
            [1, 2],
            [3, 4],
          ],
          [
            [4, 5],
            [6, 8],
          ],
        ],
      },
    });
    expect([answer.status, answer.json.code]).toStrictEqual([400, 'bad_input']);
    expect(answer.json.error).toMatch(/"signal" has 1 rows and "sensor" 2/);
  });
});

describe('refusals, in the V1 error shape', () => {
  it('refuses a bad instance 400 naming it and its input, and admits none of the request', async () => {
    const admittedBefore = await admittedOf('signals');
    const answer = await predict('signals', {
      instances: [
        {
          signal: [1, 2, 3, 4, 5],
          sensor: [
            [1, 2],
            [3, 4],
          ],
        },
        {
          signal: [1, 2, 3, 4, 5],
          sensor: [
            [1, 2, 3],
            [3, 4, 5],
          ],
        },
      ],
    });
    expect(answer.status).toBe(400);
    expect(Object.keys(answer.json).sort()).toStrictEqual(['code', 'error']);
    expect(answer.json.code).toBe('bad_input');
    expect(answer.json.error).toMatch(/^invalid inputs: instances\[1\]: input "sensor" must have shape \[2, 2\]/);
    expect(await admittedOf('signals')).toBe(admittedBefore);
    // The model still answers the next request.
    const next = await predict('signals', {
      instances: [
        {
          signal: [1, 1, 1, 1, 1],
          sensor: [
            [1, 1],
            [1, 1],
          ],
        },
      ],
    });
    expect(next.json).toStrictEqual({ predictions: [9] });
  });

  it.each([
    ['an unknown model', 'nosuch', { instances: [1] }, 404, 'model_not_found', /'nosuch'/],
    [
      'another signature',
      'half_plus_three',
      { signature_name: 'predict', instances: [1] },
      400,
      'bad_input',
      /signature_name: .*"serving_default"/,
    ],
    [
      'both forms',
      'half_plus_three',
      { instances: [1], inputs: [1] },
      400,
      'bad_input',
      /"instances" .* or "inputs" .*not both/,
    ],
    ['neither form', 'half_plus_three', { instance: [1] }, 400, 'bad_input', /neither "instances" nor "inputs"/],
    ['no instance', 'half_plus_three', { instances: [] }, 400, 'bad_input', /"instances" is empty/],
    ['instances that are no list', 'half_plus_three', { instances: 1 }, 400, 'bad_input', /"instances" must be a list/],
    // Quoted as sent: the numbers' list was quoted as the body reader holds it ({"values":{"0":1},"shape":[1]}).
    [
      'instances as an object of lists',
      'half_plus_three',
      { instances: { x: [1, 2] } },
      400,
      'bad_input',
      /"instances" must be a list of items, got \{"x":\[1,2\]\}$/,
    ],
    ['a bad JSON body', 'half_plus_three', '{"instances": [1,', 400, 'bad_json', /JSON/],
    [
      'a missing input',
      'signals',
      { instances: [{ signal: [1, 2, 3, 4, 5] }] },
      400,
      'bad_input',
      /instances\[0\]: missing input "sensor"/,
    ],
  ])('refuses %s', async (_what, model, body, status, code, message) => {
    const answer = await predict(model, body, { 'content-type': 'application/json', 'x-request-id': 'v1-err' });
    expect([answer.status, answer.json.code]).toStrictEqual([status, code]);
    expect(answer.json.error).toMatch(message);
    expect(answer.headers['x-request-id']).toBe('v1-err');
  });

  it("answers TF Serving's other verbs 404 saying they are not served, and a version that is not there 404", async () => {
    const classify = await call(`${server.url}/v1/models/signals:classify`, { examples: [] });
    expect([classify.status, classify.json.code]).toStrictEqual([404, 'not_found']);
    expect(classify.json.error).toMatch(/classify API is not served/);
    const version = await call(`${server.url}/v1/models/signals/versions/9:predict`, { instances: [] });
    expect([version.status, version.json.code]).toStrictEqual([404, 'model_not_found']);
  });

  it('answers a verb no route takes 404 in the V1 shape too (it was batchline\'s {"error": {"code", "message"}})', async () => {
    for (const path of ['signals:foo', 'signals:', 'signals/versions/1:foo', 'signals:predict:predict']) {
      const answer = await call(`${server.url}/v1/models/${path}`, { instances: [] });
      expect([answer.status, answer.json.code]).toStrictEqual([404, 'not_found']);
      expect(answer.json.error).toBe(`not found: POST /v1/models/${path}`);
    }
    // Batchline's own /v1 routes keep batchline's shape.
    const other = await call(`${server.url}/v1/nosuch`, {});
    expect([other.status, other.json.error.code]).toStrictEqual([404, 'not_found']);
  });

  it('refuses a full queue 429 with Retry-After, all instances of a request together, and a passed deadline 504', async () => {
    const slow = await startTestServer({ maxBatchSize: 1, maxQueueSize: 2, batchWindowMs: 0, modelLatencyMs: 300 });
    try {
      const url = `${slow.url}/v1/models/toy-logistic-v1:predict`;
      const one = { instances: [[1, 2, 3]] };
      const late = await call(url, one, { 'content-type': 'application/json', 'x-request-timeout-ms': '50' });
      expect([late.status, late.json.code]).toStrictEqual([504, 'deadline_exceeded']);
      const batcher = slow.runtime.registry.resolve('toy-logistic-v1')!.batcher;
      await vi.waitFor(() => expect(batcher.idle).toBe(true), PATIENCE);
      // One running and one queued, the instance held: a request of two instances finds room for one.
      const started = new Promise<void>((resolve) => batcher.addObserver({ batchStarted: () => resolve() }));
      const busy = [call(url, one)];
      await started;
      batcher.setInstanceUp(0, false);
      try {
        busy.push(call(url, one));
        await vi.waitFor(() => expect(batcher.queueDepth).toBe(1), PATIENCE);
        const refused = await call(url, {
          instances: [
            [1, 2, 3],
            [4, 5, 6],
          ],
        });
        expect([refused.status, refused.json.code, refused.headers['retry-after']]).toStrictEqual([
          429,
          'queue_full',
          '1',
        ]);
        expect(refused.json.error).toMatch(/queue is full/);
        expect(batcher.queueDepth).toBe(1);
      } finally {
        batcher.setInstanceUp(0, true);
      }
      expect((await Promise.all(busy)).map((a) => a.status)).toStrictEqual([200, 200]);
      const stats = (await call(`${slow.url}/v1/stats`, undefined, {}, 'GET')).json;
      expect(stats.responsesByStatus).toMatchObject({ '200': 2, '429': 1, '504': 1 });
    } finally {
      await slow.close();
    }
  });
});

describe('GET /v1/models/{name}', () => {
  it("keeps batchline's metadata and adds KServe V1's ready and TF Serving's model_version_status", async () => {
    const answer = await call(`${server.url}/v1/models/signals`, undefined, {}, 'GET');
    expect(answer.status).toBe(200);
    expect(answer.json).toMatchObject({
      name: 'signals',
      version: 1,
      state: 'ready',
      ready: true,
      model_version_status: [{ version: '1', state: 'AVAILABLE', status: { error_code: 'OK', error_message: '' } }],
    });
    expect(answer.json.inputs.map((input: { name: string }) => input.name)).toStrictEqual(['signal', 'sensor']);
    expect(answer.json.config).toBeDefined();
    const versioned = await call(`${server.url}/v1/models/signals/versions/1`, undefined, {}, 'GET');
    expect(versioned.json).toMatchObject({ name: 'signals', ready: true, model_version_status: [{ version: '1' }] });
    const ready = await call(`${server.url}/v1/models/signals/ready`, undefined, {}, 'GET');
    expect([ready.status, ready.json]).toStrictEqual([200, { name: 'signals', version: 1, state: 'ready' }]);
    // A POST without a verb is no route.
    const bare = await call(`${server.url}/v1/models/signals`, { instances: [] });
    expect(bare.status).toBe(404);
  });
});
