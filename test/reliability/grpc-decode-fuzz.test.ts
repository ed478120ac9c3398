import * as grpc from '@grpc/grpc-js';
import fc from 'fast-check';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toyModelOnnx, writeRepository } from '../serve/repository-fixture.js';
import { startGrpcTestServer, type GrpcTestServer } from '../serve/grpc-helpers.js';
import { PATIENCE_MS } from '../patience.js';
import {
  decodeInferResponse,
  decodeStreamResponse,
  type GrpcProbe,
  mutatedGrpcProbe,
  validGrpcProbe,
} from './grpc-decode-fuzz-requests.js';
import { GREET_MODEL, TRIPLE_MODEL } from './decode-fuzz-rules.js';
import { type MethodProbe, mutatedMethodProbe, validMethodProbe } from './grpc-method-probes.js';
import { tableRow } from './table.js';

/**
 * The decode fuzz over gRPC: valid `ModelInferRequest`s of the same three models, mutated (in
 * the message and in its bytes), sent as raw bytes with grpc-js beside valid ones that share
 * their batches. Every call gets exactly one answer: a mutated one INVALID_ARGUMENT or NOT_FOUND
 * with a message (or the right answer, when the rules call it valid), never INTERNAL or
 * UNKNOWN; the valid ones always the right answer. BATCHLINE_FUZZ_RUNS rounds, from
 * BATCHLINE_FUZZ_SEED, as decode-fuzz.test.ts.
 */
const ROUNDS = Number(process.env.BATCHLINE_FUZZ_RUNS ?? 40);
const SEED = Number(process.env.BATCHLINE_FUZZ_SEED ?? 20261206);

let server: GrpcTestServer;
let client: grpc.Client;
beforeAll(async () => {
  const repository = await writeRepository({
    'toy/1/model.onnx': toyModelOnnx(),
    'triple/1/model.mjs': TRIPLE_MODEL,
    'greet/1/model.mjs': GREET_MODEL,
  });
  server = await startGrpcTestServer({
    modelRepository: repository,
    defaultModel: 'toy',
    batchWindowMs: 5,
    maxBatchSize: 4,
  });
  client = new grpc.Client(server.target, grpc.credentials.createInsecure());
});
afterAll(async () => {
  client?.close();
  await server?.close();
});

interface CallAnswer {
  /** How many times grpc-js called back: one, or a fault. */
  callbacks: number;
  code: grpc.status;
  details: string;
  message?: Buffer;
}

/** One ModelInfer call of `bytes` as they are (identity serializers), answered within PATIENCE_MS. */
function call(bytes: Buffer): Promise<CallAnswer> {
  return new Promise((resolve) => {
    const answer: CallAnswer = { callbacks: 0, code: grpc.status.OK, details: '' };
    client.makeUnaryRequest(
      '/inference.GRPCInferenceService/ModelInfer',
      (value: Buffer) => value,
      (value: Buffer) => value,
      bytes,
      new grpc.Metadata(),
      { deadline: Date.now() + PATIENCE_MS },
      (error, message) => {
        answer.callbacks++;
        if (error !== null) {
          answer.code = error.code;
          answer.details = error.details;
        } else answer.message = message;
        // A second callback would land on the same object before the round is judged.
        if (answer.callbacks === 1) setImmediate(() => resolve(answer));
      },
    );
  });
}

/** What is wrong with a probe's answer, if anything. */
function fault(probe: GrpcProbe, answer: CallAnswer): string | undefined {
  if (answer.callbacks !== 1) return `${answer.callbacks} answers`;
  if (answer.code === grpc.status.OK) {
    if (probe.check === undefined) return 'answered OK, expected a refusal';
    try {
      return probe.check(decodeInferResponse(answer.message!));
    } catch (error) {
      return `could not read the answer (${(error as Error).message})`;
    }
  }
  const said = `${grpc.status[answer.code]} ${JSON.stringify(answer.details.slice(0, 200))}`;
  if (!probe.refusals.includes(answer.code))
    return `answered ${said}, expected ${[...(probe.check === undefined ? [] : ['OK']), ...probe.refusals.map((c) => grpc.status[c])].join(' or ')}`;
  return answer.details === '' ? `answered ${grpc.status[answer.code]} without a message` : undefined;
}

interface StreamAnswers {
  /** Each message of the stream: an encoded `ModelStreamInferResponse`. */
  messages: Buffer[];
  code: grpc.status;
  details: string;
}

/** One ModelStreamInfer stream carrying `requests` as they are, half-closed after them, read to its end. */
function stream(requests: readonly Buffer[]): Promise<StreamAnswers> {
  return new Promise((resolve) => {
    const answers: StreamAnswers = { messages: [], code: grpc.status.UNKNOWN, details: '' };
    const call = client.makeBidiStreamRequest(
      '/inference.GRPCInferenceService/ModelStreamInfer',
      (value: Buffer) => value,
      (value: Buffer) => value,
      new grpc.Metadata(),
      { deadline: Date.now() + PATIENCE_MS },
    );
    call.on('data', (message: Buffer) => answers.messages.push(message));
    call.on('error', () => {}); // its status comes as 'status' too
    call.on('status', ({ code, details }: grpc.StatusObject) => {
      answers.code = code;
      answers.details = details;
      resolve(answers);
    });
    for (const bytes of requests) call.write(bytes);
    call.end();
  });
}

/**
 * What is wrong with a stream's answer to a probe: a stream's failed request carries only
 * `error_message` (no status), so a refusal is judged by the probe allowing one and the message
 * being a reason, not INTERNAL's pointer to the log.
 */
function streamFault(probe: GrpcProbe, message: Buffer | undefined): string | undefined {
  if (message === undefined) return 'no answer on the stream';
  let answer: ReturnType<typeof decodeStreamResponse>;
  try {
    answer = decodeStreamResponse(message);
  } catch (error) {
    return `could not read the answer (${(error as Error).message})`;
  }
  if (answer.error_message === '') {
    if (probe.check === undefined) return 'answered, expected a refusal';
    return probe.check(answer.infer_response as Parameters<NonNullable<GrpcProbe['check']>>[0]);
  }
  if (probe.refusals.length === 0)
    return `refused ${JSON.stringify(answer.error_message.slice(0, 200))}, expected an answer`;
  return answer.error_message.startsWith('see the server log')
    ? `answered INTERNAL: ${answer.error_message}`
    : undefined;
}

/** The class of answer the server counts a gRPC status under (the HTTP status of its table row). */
const classOfCode = (code: grpc.status): string =>
  code === grpc.status.OK
    ? 'ok'
    : code === grpc.status.NOT_FOUND
      ? 'not found'
      : code === grpc.status.DEADLINE_EXCEEDED
        ? 'deadline'
        : 'refused';
const classOfStatus = (status: string): string =>
  status === '200' ? 'ok' : status === '404' ? 'not found' : status === '504' ? 'deadline' : 'refused';

describe('fuzzing the decoding of ModelInfer, mutated messages and bytes beside valid ones', () => {
  it('answers each call once: the mutated INVALID_ARGUMENT or NOT_FOUND or right, the valid right', async () => {
    const byCode: Record<string, number> = {};
    let sent = 0;
    let mutatedSent = 0;
    const round = fc.tuple(
      fc.array(mutatedGrpcProbe, { minLength: 1, maxLength: 4 }),
      fc.array(validGrpcProbe, { minLength: 1, maxLength: 3 }),
    );
    await fc.assert(
      fc.asyncProperty(round, async ([mutated, valid]) => {
        const probes = [
          ...mutated.map((probe) => ({ probe, mutated: true })),
          ...valid.map((probe) => ({ probe, mutated: false })),
        ];
        const answers = await Promise.all(probes.map(({ probe }) => call(probe.bytes)));
        sent += probes.length;
        mutatedSent += mutated.length;
        const faults = probes.flatMap(({ probe, mutated }, i) => {
          const answer = answers[i] as CallAnswer;
          byCode[grpc.status[answer.code]] = (byCode[grpc.status[answer.code]] ?? 0) + 1;
          const wrong = fault(probe, answer);
          return wrong === undefined ? [] : [`${mutated ? 'mutated' : 'valid'} ${probe.label}: ${wrong}`];
        });
        expect(faults).toStrictEqual([]);
      }),
      { numRuns: ROUNDS, seed: SEED, endOnFailure: true },
    );
    // Still serving, and its gRPC counts add up to the answers received, class by class.
    const stats = await request(`${server.url}/v1/stats`);
    const { responsesByProtocol } = (await stats.body.json()) as {
      responsesByProtocol: { grpc: Record<string, number> };
    };
    const counted: Record<string, number> = {};
    for (const [status, count] of Object.entries(responsesByProtocol.grpc)) {
      const key = classOfStatus(status);
      counted[key] = (counted[key] ?? 0) + count;
    }
    const received: Record<string, number> = {};
    for (const [code, count] of Object.entries(byCode)) {
      const key = classOfCode(grpc.status[code as keyof typeof grpc.status] as grpc.status);
      received[key] = (received[key] ?? 0) + count;
    }
    expect(counted).toStrictEqual(received);
    const health = await request(`${server.url}/healthz`);
    await health.body.dump();
    expect(health.statusCode).toBe(200);
    tableRow(
      `mutated ModelInfer messages and bytes beside valid ones (${ROUNDS} rounds, seed ${SEED})`,
      'one answer each: INVALID_ARGUMENT/NOT_FOUND with a message, or the right answer; valid ones right',
      `${sent} calls (${mutatedSent} mutated): ${Object.entries(byCode)
        .map(([code, count]) => `${count} × ${code}`)
        .join(', ')}; /v1/stats agrees`,
    );
  });

  it('answers each request of a ModelStreamInfer stream once, in order: the mutated refused with a reason or right, the valid right', async () => {
    const countedBefore = await grpcCounts();
    let sent = 0;
    let refused = 0;
    const round = fc
      .tuple(
        fc.array(mutatedGrpcProbe, { minLength: 1, maxLength: 4 }),
        fc.array(validGrpcProbe, { minLength: 1, maxLength: 3 }),
      )
      .chain(([mutated, valid]) =>
        fc.shuffledSubarray(
          [...mutated.map((probe) => ({ probe, mutated: true })), ...valid.map((probe) => ({ probe, mutated: false }))],
          { minLength: mutated.length + valid.length },
        ),
      );
    await fc.assert(
      fc.asyncProperty(round, async (probes) => {
        const answers = await stream(probes.map(({ probe }) => probe.bytes));
        sent += probes.length;
        expect(`${grpc.status[answers.code]} ${answers.details}`).toBe('OK OK');
        expect(answers.messages).toHaveLength(probes.length);
        const faults = probes.flatMap(({ probe, mutated }, i) => {
          const message = answers.messages[i];
          if (message !== undefined && decodeStreamResponse(message).error_message !== '') refused++;
          const wrong = streamFault(probe, message);
          return wrong === undefined ? [] : [`${mutated ? 'mutated' : 'valid'} ${probe.label}: ${wrong}`];
        });
        expect(faults).toStrictEqual([]);
      }),
      { numRuns: Math.ceil(ROUNDS / 2), seed: SEED, endOnFailure: true },
    );
    // Each request of the streams counted once, its answers' OKs as 200.
    const countedAfter = await grpcCounts();
    const total = (counts: Record<string, number>) => Object.values(counts).reduce((sum, n) => sum + n, 0);
    expect(total(countedAfter) - total(countedBefore)).toBe(sent);
    expect((countedAfter['200'] ?? 0) - (countedBefore['200'] ?? 0)).toBe(sent - refused);
    tableRow(
      `mutated ModelInferRequests on ModelStreamInfer streams (${Math.ceil(ROUNDS / 2)} streams, seed ${SEED})`,
      'one answer each, in order: a refusal with a reason or the right answer; valid ones right; the stream ends OK',
      `${sent} requests, ${refused} refused; /v1/stats agrees`,
    );
  });
});

describe('fuzzing the decoding of the other methods, their requests mutated byte by byte beside valid ones', () => {
  const token = 'fuzz-token';
  let admin: GrpcTestServer;
  let adminClient: grpc.Client;
  beforeAll(async () => {
    const repository = await writeRepository({
      'toy/1/model.onnx': toyModelOnnx(),
      'triple/1/model.mjs': TRIPLE_MODEL,
      'greet/1/model.mjs': GREET_MODEL,
    });
    // The repository calls served (they load and unload the models), on a server of their own.
    admin = await startGrpcTestServer({ modelRepository: repository, defaultModel: 'toy', adminToken: token });
    adminClient = new grpc.Client(admin.target, grpc.credentials.createInsecure());
  });
  afterAll(async () => {
    adminClient?.close();
    await admin?.close();
  });

  /** One call of `probe`'s method with its bytes as they are, the admin token in its metadata. */
  const callMethod = (probe: MethodProbe): Promise<CallAnswer> =>
    new Promise((resolve) => {
      const answer: CallAnswer = { callbacks: 0, code: grpc.status.OK, details: '' };
      const metadata = new grpc.Metadata();
      metadata.set('authorization', `Bearer ${token}`);
      adminClient.makeUnaryRequest(
        probe.path,
        (value: Buffer) => value,
        (value: Buffer) => value,
        probe.bytes,
        metadata,
        { deadline: Date.now() + PATIENCE_MS },
        (error, message) => {
          answer.callbacks++;
          if (error !== null) {
            answer.code = error.code;
            answer.details = error.details;
          } else answer.message = message;
          if (answer.callbacks === 1) setImmediate(() => resolve(answer));
        },
      );
    });

  /** What is wrong with an answer of any method: more or less than one, INTERNAL/UNKNOWN, none in time, a refusal without a message. */
  const methodFault = (answer: CallAnswer): string | undefined => {
    if (answer.callbacks !== 1) return `${answer.callbacks} answers`;
    if (answer.code === grpc.status.OK) return undefined;
    const said = `${grpc.status[answer.code]} ${JSON.stringify(answer.details.slice(0, 200))}`;
    if ([grpc.status.INTERNAL, grpc.status.UNKNOWN, grpc.status.DEADLINE_EXCEEDED].includes(answer.code))
      return `answered ${said}`;
    return answer.details === '' ? `answered ${grpc.status[answer.code]} without a message` : undefined;
  };

  it('answers each call once, never INTERNAL or UNKNOWN, and stays serving', async () => {
    const byCode: Record<string, number> = {};
    let sent = 0;
    let mutatedSent = 0;
    const round = fc.tuple(
      fc.array(mutatedMethodProbe, { minLength: 1, maxLength: 4 }),
      fc.array(validMethodProbe, { minLength: 1, maxLength: 2 }),
    );
    await fc.assert(
      fc.asyncProperty(round, async ([mutated, valid]) => {
        const probes = [
          ...mutated.map((probe) => ({ probe, mutated: true })),
          ...valid.map((probe) => ({ probe, mutated: false })),
        ];
        const answers = await Promise.all(probes.map(({ probe }) => callMethod(probe)));
        sent += probes.length;
        mutatedSent += mutated.length;
        const faults = probes.flatMap(({ probe, mutated }, i) => {
          const answer = answers[i] as CallAnswer;
          byCode[grpc.status[answer.code]] = (byCode[grpc.status[answer.code]] ?? 0) + 1;
          const wrong = methodFault(answer);
          return wrong === undefined ? [] : [`${mutated ? 'mutated' : 'valid'} ${probe.label}: ${wrong}`];
        });
        expect(faults).toStrictEqual([]);
      }),
      { numRuns: ROUNDS, seed: SEED, endOnFailure: true },
    );
    const live = await callMethod({
      path: '/inference.GRPCInferenceService/ServerLive',
      label: 'live',
      bytes: Buffer.alloc(0),
    });
    expect(methodFault(live)).toBeUndefined();
    expect(live.code).toBe(grpc.status.OK);
    const health = await request(`${admin.url}/healthz`);
    await health.body.dump();
    expect(health.statusCode).toBe(200);
    tableRow(
      `the other gRPC methods' requests mutated byte by byte beside valid ones (${ROUNDS} rounds, seed ${SEED})`,
      'one answer each, never INTERNAL or UNKNOWN, a refusal with a message; the server serving after',
      `${sent} calls (${mutatedSent} mutated): ${Object.entries(byCode)
        .map(([code, count]) => `${count} × ${code}`)
        .join(', ')}`,
    );
  });
});

/** The server's gRPC answers by HTTP status (/v1/stats' responsesByProtocol.grpc). */
async function grpcCounts(): Promise<Record<string, number>> {
  const stats = await request(`${server.url}/v1/stats`);
  const { responsesByProtocol } = (await stats.body.json()) as {
    responsesByProtocol: { grpc: Record<string, number> };
  };
  return responsesByProtocol.grpc;
}
