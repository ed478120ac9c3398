import Fastify, { type FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { BatchlineError, ERROR_TABLE, errorRow, type ErrorCode } from '../../src/errors.js';
import type { AnswerCounters, ErrorStage } from '../../src/serve/answer-counters.js';
import { Answer, answersOf, RouteAnswers } from '../../src/serve/answer.js';
import { BATCHLINE_JSON } from '../../src/serve/json-protocol.js';
import type { ErrorFormat } from '../../src/serve/protocol.js';

class Counters implements AnswerCounters {
  responses: number[] = [];
  rejections: string[] = [];
  countResponse(status: number): void {
    this.responses.push(status);
  }
  countRejection(reason: string): void {
    this.rejections.push(reason);
  }
}

/** A format with OIP's error shape, `{"error": "<message>"}`, to show a second one plugging in. */
const OIP_LIKE: ErrorFormat = {
  contentType: 'application/json',
  encodeError: (error) => JSON.stringify({ error: error.message }),
};

let app: FastifyInstance | undefined;
afterEach(async () => {
  await app?.close();
  app = undefined;
});

/** An app whose one route answers whatever the test says, and whose error handler is serve's. */
function appAnswering(counters: Counters, send: (answer: Answer) => void): FastifyInstance {
  app = Fastify({ genReqId: () => 'req-1' });
  const answers = new RouteAnswers(
    () => OIP_LIKE,
    () => counters,
  );
  app.setErrorHandler((error, request, reply) => {
    answersOf(request).for(request, reply).error(error);
  });
  app.post('/answer', (_request, reply) => send(new Answer(reply, BATCHLINE_JSON, counters)));
  app.post('/oip', { config: { answers } }, (request, reply) =>
    answers.for(request, reply).send(200, '{"outputs":[]}'),
  );
  return app;
}

describe('Answer.error, row by row', () => {
  const rows = Object.keys(ERROR_TABLE) as ErrorCode[];
  const stages: ErrorStage[] = ['refused', 'admitted'];
  const combinations = rows.flatMap((code) => stages.map((stage) => [code, stage] as const));

  it.each(combinations)('%s (%s)', async (code, stage) => {
    const counters = new Counters();
    const error = new BatchlineError(code, 'detail');
    appAnswering(counters, (answer) => void answer.error(error, stage));
    const response = await app!.inject({ method: 'POST', url: '/answer' });
    const row = errorRow(code);
    expect(response.statusCode).toBe(row.httpStatus);
    expect(response.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(response.json()).toEqual({ error: { code: code.toLowerCase(), message: error.message } });
    expect(response.headers['x-request-id']).toBe('req-1');
    expect(response.headers['retry-after']).toBe(row.retryAfterS === undefined ? undefined : String(row.retryAfterS));
    expect(response.headers.connection).not.toBe('close');
    expect(counters.responses).toEqual([row.httpStatus]);
    // A refusal counts its row's reason; an admitted request's outcome was counted by the batcher.
    expect(counters.rejections).toEqual(stage === 'refused' && row.reason !== undefined ? [row.reason] : []);
  });
});

describe('Answer', () => {
  it('leaves Connection to the drain while the server drains (a pipelined answer must not close early)', async () => {
    const counters = new Counters();
    appAnswering(counters, (answer) => answer.send(200, '{}'));
    const ok = await app!.inject({ method: 'POST', url: '/answer' });
    // drain-connections.ts closes each connection after its last answer (test/reliability/drain-pipelined.test.ts).
    expect([ok.statusCode, ok.headers.connection === 'close', ok.headers['x-request-id']]).toEqual([
      200,
      false,
      'req-1',
    ]);
    expect(counters.responses).toEqual([200]);
  });

  it('sends an encoded body with its own content type and headers', async () => {
    const counters = new Counters();
    const body = Buffer.from([1, 2, 3]);
    appAnswering(counters, (answer) =>
      answer.send(200, {
        body,
        contentType: 'application/octet-stream',
        headers: { 'inference-header-content-length': '0' },
      }),
    );
    const response = await app!.inject({ method: 'POST', url: '/answer' });
    expect(response.headers['content-type']).toBe('application/octet-stream');
    expect(response.headers['inference-header-content-length']).toBe('0');
    expect(response.rawPayload).toEqual(body);
  });

  it('answers once: a second answer is dropped and not counted', async () => {
    const counters = new Counters();
    appAnswering(counters, (answer) => {
      answer.send(200, '{"first":true}');
      answer.error(new BatchlineError('INTERNAL', 'late'), 'admitted');
    });
    const response = await app!.inject({ method: 'POST', url: '/answer' });
    expect(response.json()).toEqual({ first: true });
    expect(counters.responses).toEqual([200]);
  });

  it("answers Fastify's own errors in the route's protocol, counted against the route's target", async () => {
    const counters = new Counters();
    appAnswering(counters, () => {});
    const bad = await app!.inject({
      method: 'POST',
      url: '/oip',
      headers: { 'content-type': 'application/json' },
      payload: '{"inputs": [',
    });
    expect(bad.statusCode).toBe(400);
    expect(bad.json()).toEqual({ error: expect.stringMatching(/^request body is not valid JSON/) });
    expect(bad.headers['x-request-id']).toBe('req-1');
    const media = await app!.inject({
      method: 'POST',
      url: '/oip',
      headers: { 'content-type': 'text/csv' },
      payload: 'a,b',
    });
    expect(media.statusCode).toBe(415);
    expect(counters.responses).toEqual([400, 415]);
    expect(counters.rejections).toEqual(['bad_json', 'unsupported_media_type']);
    // A route without its RouteAnswers answers in batchline's JSON and counts nothing.
    const plain = await app!.inject({
      method: 'POST',
      url: '/answer',
      headers: { 'content-type': 'application/json' },
      payload: '{',
    });
    expect(plain.json().error.code).toBe('bad_json');
    expect(counters.responses).toHaveLength(2);
  });
});
