import fc from 'fast-check';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ERROR_TABLE } from '../../src/errors.js';
import { toyModelOnnx, writeRepository } from '../serve/repository-fixture.js';
import { startTestServer, type TestServer } from '../serve/test-server.js';
import { PATIENCE_MS } from '../patience.js';
import { mutatedProbe, type Probe, validProbe } from './decode-fuzz-requests.js';
import { GREET_MODEL, judged, TRIPLE_MODEL } from './decode-fuzz-rules.js';
import { type Exchange, exchange } from './one-exchange.js';
import { tableRow } from './table.js';

/**
 * A seeded fuzz of serve's request decoding over real sockets: valid requests of every inference
 * route and encoding, mutated (datatypes, shapes, numbers as strings, NaN, lengths that lie, bytes
 * cut or flipped, keys twice, other content types), sent at once beside valid ones that share
 * their batches. Every request gets exactly one answer; a mutated one a 4xx in the error table's
 * shape (or the right answer, when the rules call it valid); the valid ones always the right one.
 * BATCHLINE_FUZZ_RUNS rounds (a few requests each), from BATCHLINE_FUZZ_SEED.
 */
const ROUNDS = Number(process.env.BATCHLINE_FUZZ_RUNS ?? 40);
const SEED = Number(process.env.BATCHLINE_FUZZ_SEED ?? 20261206);

/** The codes as answers write them (the table's keys in lower case). */
const CODES = new Set(Object.keys(ERROR_TABLE).map((code) => code.toLowerCase()));
const CLIENT_STATUSES = new Set<number>(
  Object.values(ERROR_TABLE)
    .map((row) => row.httpStatus)
    .filter((s) => s < 500),
);

let server: TestServer;
let port: number;
beforeAll(async () => {
  const repository = await writeRepository({
    'toy/1/model.onnx': toyModelOnnx(),
    'triple/1/model.mjs': TRIPLE_MODEL,
    'greet/1/model.mjs': GREET_MODEL,
  });
  // A window long enough for a round's requests to share batches, a limit that splits some.
  server = await startTestServer({
    modelRepository: repository,
    defaultModel: 'toy',
    batchWindowMs: 5,
    maxBatchSize: 4,
  });
  port = Number(new URL(server.url).port);
});
afterAll(() => server?.close());

/** What is wrong with an error answer: its status outside the table's 4xx, or its body not the route's error shape. */
function refusalFault(probe: Probe, answer: Exchange['answers'][number]): string | undefined {
  if (!CLIENT_STATUSES.has(answer.status)) return `answered ${answer.status}, not a client error of the table`;
  let body: any;
  try {
    body = JSON.parse(answer.body.toString('utf8'));
  } catch {
    return `error body is not JSON: ${answer.body.toString('latin1', 0, 120)}`;
  }
  const path = probe.request.path;
  if (path.startsWith('/v2/'))
    return typeof body.error === 'string' && body.error !== '' ? undefined : 'a /v2 error without its message';
  const code = path.startsWith('/v1/models/') ? body.code : body.error?.code;
  return CODES.has(code) ? undefined : `error code ${JSON.stringify(code)} is not in the table`;
}

/** What is wrong with the one exchange of a probe, if anything. */
function fault(probe: Probe, mutated: boolean, result: Exchange): string | undefined {
  if (result.answers.length !== 1 || result.leftover.length > 0 || result.error !== undefined)
    return `${result.answers.length} answers, ${result.leftover.length} bytes left over${result.error ? `, ${result.error}` : ''}`;
  const answer = result.answers[0] as Exchange['answers'][number];
  if (answer.status === 200) {
    if (probe.check === undefined) return `answered 200 (${answer.body.toString('utf8', 0, 200)}), expected a refusal`;
    return judged(probe.check, answer);
  }
  if (!mutated || (probe.check !== undefined && !probe.mayRefuse))
    return `answered ${answer.status} ${answer.body.toString('utf8', 0, 200)}, expected 200`;
  return refusalFault(probe, answer);
}

describe('fuzzing the decoding of every inference route, mutated requests beside valid ones', () => {
  it('answers each request once: the mutated with a 4xx of the table or the right answer, the valid right', async () => {
    const sentByStatus: Record<string, number> = {};
    let sent = 0;
    let mutatedSent = 0;
    const round = fc.tuple(
      fc.array(mutatedProbe, { minLength: 1, maxLength: 4 }),
      fc.array(validProbe, { minLength: 1, maxLength: 3 }),
    );
    await fc.assert(
      fc.asyncProperty(round, async ([mutated, valid]) => {
        const probes = [
          ...mutated.map((probe) => ({ probe, mutated: true })),
          ...valid.map((probe) => ({ probe, mutated: false })),
        ];
        const results = await Promise.all(probes.map(({ probe }) => exchange(port, probe.request, PATIENCE_MS)));
        sent += probes.length;
        mutatedSent += mutated.length;
        const faults = probes.flatMap(({ probe, mutated }, i) => {
          const result = results[i] as Exchange;
          for (const answer of result.answers) sentByStatus[answer.status] = (sentByStatus[answer.status] ?? 0) + 1;
          const wrong = fault(probe, mutated, result);
          return wrong === undefined ? [] : [`${mutated ? 'mutated' : 'valid'} ${probe.label}: ${wrong}`];
        });
        expect(faults).toStrictEqual([]);
      }),
      { numRuns: ROUNDS, seed: SEED, endOnFailure: true },
    );
    // Still serving, and its counts add up to what was sent.
    const stats = await request(`${server.url}/v1/stats`);
    const { responsesByStatus } = (await stats.body.json()) as { responsesByStatus: Record<string, number> };
    expect(responsesByStatus).toStrictEqual(sentByStatus);
    const health = await request(`${server.url}/healthz`);
    await health.body.dump();
    expect(health.statusCode).toBe(200);
    tableRow(
      `mutated requests beside valid ones on every inference route (${ROUNDS} rounds, seed ${SEED})`,
      'one answer each: 4xx of the table or the right answer; valid ones right',
      `${sent} requests (${mutatedSent} mutated): ${Object.entries(sentByStatus)
        .map(([status, count]) => `${count} × ${status}`)
        .join(', ')}; /v1/stats agrees`,
    );
  });
});
