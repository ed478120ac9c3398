import { PassThrough } from 'node:stream';
import { deflateSync, gzipSync } from 'node:zlib';
import type { FastifyRequest } from 'fastify';
import { describe, expect, it } from 'vitest';
import type { BodyChunks } from '../../src/protocol/body-chunks.js';
import { collectBody } from '../../src/serve/oip-body.js';

/** A request as the parser reads it: its headers and its route's body limit. */
function requestWith(headers: Record<string, string>, bodyLimit: number): FastifyRequest {
  return { headers, routeOptions: { bodyLimit }, url: '/v2/models/m/infer' } as unknown as FastifyRequest;
}

/** Runs the parser over `parts`, ending the body after them unless `end` is false (a client still sending). */
async function parse(
  parts: Buffer[],
  headers: Record<string, string>,
  bodyLimit: number,
  end = true,
): Promise<{ error: Error | null; body?: BodyChunks }> {
  const payload = new PassThrough();
  const result = new Promise<{ error: Error | null; body?: BodyChunks }>((resolve) =>
    collectBody(requestWith(headers, bodyLimit), payload, (error, body) => resolve({ error, body }), true),
  );
  for (const part of parts) payload.write(part);
  if (end) payload.end();
  // Bounded: a parser that waits for the end of a body that never ends answers nothing.
  const never = new Promise<{ error: Error | null }>((resolve) =>
    setTimeout(() => resolve({ error: new Error('no answer in 20 s') }), 20_000).unref(),
  );
  return Promise.race([result, never]);
}

const whole = (body: BodyChunks | undefined): Buffer => Buffer.concat(body?.chunks ?? []);

describe('the Open Inference Protocol body parser', () => {
  it('inflates gzip and deflate bodies as they arrive, in steps, not in one piece (#7)', async () => {
    const json = Buffer.from(JSON.stringify({ inputs: [{ data: Array.from({ length: 200_000 }, (_, i) => i) }] }));
    for (const [encoding, compressed] of [
      ['gzip', gzipSync(json)],
      ['deflate', deflateSync(json)],
    ] as const) {
      const { error, body } = await parse([compressed], { 'content-encoding': encoding }, 64 << 20);
      expect(error).toBeNull();
      expect(whole(body).equals(json)).toBe(true);
      expect(body!.length).toBe(json.length);
      expect(body!.chunks.length).toBeGreaterThan(1);
    }
  });

  it('refuses a bomb with 413 as soon as its inflated bytes pass the limit, while the client still sends (#7)', async () => {
    // 64 MiB of zeros: 65 KB of gzip, of which the client has sent half; the limit is 1 MiB.
    const bomb = gzipSync(Buffer.alloc(64 << 20));
    const { error } = await parse([bomb.subarray(0, bomb.length / 2)], { 'content-encoding': 'gzip' }, 1 << 20, false);
    expect((error as { code?: string }).code).toBe('PAYLOAD_TOO_LARGE');
    expect(error!.message).toBe(
      'request body is larger than 1048576 bytes uncompressed (--oip-body-limit-bytes sets the limit)',
    );
  });

  it('answers a body that does not decompress with 400, and keeps other bodies as the socket gave them', async () => {
    const bad = await parse([Buffer.from('not gzip at all')], { 'content-encoding': 'gzip' }, 1 << 20);
    expect((bad.error as { code?: string }).code).toBe('BAD_REQUEST');
    expect(bad.error!.message).toContain('the gzip body does not decompress');
    const plain = await parse([Buffer.from('{"a":'), Buffer.from('1}')], {}, 1 << 20);
    expect(plain.body!.chunks.map(String)).toEqual(['{"a":', '1}']);
  });
});
