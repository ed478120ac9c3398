import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runBatchline } from '../batchline-cli.js';
import { startTestServer, type TestServer } from '../serve/test-server.js';
import { RawConnection } from './raw-http.js';
import { tableRow } from './table.js';
import { PATIENCE_MS } from '../patience.js';

let server: TestServer;
let open: TestServer;
beforeAll(async () => {
  server = await startTestServer();
  // Listening on every address: Host names are the operator's business there.
  open = await startTestServer({ host: '0.0.0.0' });
});
afterAll(async () => {
  await server.close();
  await open.close();
});

async function raw(target: TestServer, bytes: string) {
  const connection = new RawConnection(Number(new URL(target.url).port));
  await connection.write(bytes);
  const [response] = await connection.untilResponses(1, PATIENCE_MS);
  await connection.settle(0);
  return response!;
}

describe('hygiene (#11)', () => {
  it.each([
    ['a 12 KB path (404)', `GET /${'p'.repeat(12_000)} HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n`, 404],
    [
      'an 8 KB X-Request-Timeout-Ms (400)',
      `POST /v1/infer HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\nx-request-timeout-ms: ${'9x'.repeat(4000)}\r\ncontent-length: 18\r\n\r\n{"inputs":[1,2,3]}`,
      400,
    ],
    [
      'an 8 KB content type (415)',
      `POST /v1/infer HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: text/${'x'.repeat(8000)}\r\ncontent-length: 2\r\n\r\n{}`,
      415,
    ],
  ])('echoes at most a short part of %s', async (_what, bytes, status) => {
    const response = await raw(server, bytes);
    expect(response.status).toBe(status);
    expect(JSON.parse(response.body).error.message.length).toBeLessThan(600);
    tableRow(
      `#11 error echoing ${_what}`,
      'the echo cut short',
      `${status}, message of ${JSON.parse(response.body).error.message.length} characters`,
    );
  });

  it('says X-Content-Type-Options: nosniff on every answer', async () => {
    for (const path of ['/healthz', '/v1/stats', '/metrics', '/nope']) {
      const response = await request(`${server.url}${path}`);
      await response.body.dump();
      expect(response.headers['x-content-type-options'], path).toBe('nosniff');
    }
    const inferred = await request(`${server.url}/v1/infer`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"inputs":[1,2,3]}',
    });
    await inferred.body.dump();
    expect(inferred.headers['x-content-type-options']).toBe('nosniff');
  });

  it('answers only Host names of this machine when it listens on loopback (DNS rebinding)', async () => {
    for (const host of [
      'localhost',
      `localhost:${new URL(server.url).port}`,
      '127.0.0.1',
      '127.0.0.1:1',
      '[::1]:8080',
      'LOCALHOST',
    ]) {
      expect((await raw(server, `GET /healthz HTTP/1.1\r\nhost: ${host}\r\n\r\n`)).status, host).toBe(200);
    }
    const rebound = await raw(
      server,
      `GET /v1/stats HTTP/1.1\r\nhost: evil.example:${new URL(server.url).port}\r\nx-request-id: rebound-1\r\n\r\n`,
    );
    expect(rebound.status).toBe(421);
    expect(rebound.headers['x-request-id']).toBe('rebound-1'); // echoed on every answer (api.md)
    // On a /v2 path, in the protocol's {"error": message}, as every /v2 error is.
    for (const path of ['/v2/health/ready', '/v2']) {
      const oip = await raw(server, `GET ${path} HTTP/1.1\r\nhost: evil.example\r\n\r\n`);
      expect([oip.status, Object.keys(JSON.parse(oip.body)), typeof JSON.parse(oip.body).error], path).toEqual([
        421,
        ['error'],
        'string',
      ]);
    }
    expect(JSON.parse(rebound.body).error.code).toBe('misdirected_request');
    expect((await raw(open, 'GET /healthz HTTP/1.1\r\nhost: evil.example\r\n\r\n')).status).toBe(200);
    tableRow(
      '#11 Host: evil.example on a loopback server (DNS rebinding)',
      '421; answered on 0.0.0.0',
      `${rebound.status} ${JSON.parse(rebound.body).error.code}; 200 on 0.0.0.0`,
    );
  });

  it('judges a Host again the same way, also after more distinct Hosts than it keeps judgements of', async () => {
    for (let i = 1; i <= 70; i++)
      expect((await raw(server, `GET /healthz HTTP/1.1\r\nhost: 127.0.0.${i}\r\n\r\n`)).status, `127.0.0.${i}`).toBe(
        200,
      );
    for (const host of ['evil.example', 'evil.example', 'localhost', 'evil.example'])
      expect((await raw(server, `GET /healthz HTTP/1.1\r\nhost: ${host}\r\n\r\n`)).status, host).toBe(
        host === 'localhost' ? 200 : 421,
      );
  });

  it.each(['latin1', 'ISO-8859-1', 'utf-16'])('refuses a JSON body in charset=%s with 415', async (charset) => {
    const response = await request(`${server.url}/v1/infer`, {
      method: 'POST',
      headers: { 'content-type': `application/json; charset=${charset}` },
      body: '{"inputs":[1,2,3]}',
    });
    const body = JSON.parse(await response.body.text());
    expect([response.statusCode, body.error.code]).toEqual([415, 'unsupported_media_type']);
    expect(body.error.message).toMatch(/charset/);
    tableRow(`#11 JSON in charset=${charset}`, '415', `${response.statusCode} ${body.error.code}`);
  });

  it.each(['utf-8', 'UTF-8', 'utf8', '"utf-8"'])('takes charset=%s', async (charset) => {
    const response = await request(`${server.url}/v1/infer`, {
      method: 'POST',
      headers: { 'content-type': `application/json; charset=${charset}` },
      body: '{"inputs":[1,2,3]}',
    });
    await response.body.dump();
    expect(response.statusCode).toBe(200);
  });

  it('keeps control characters of a model name out of its messages', async () => {
    const failed = await runBatchline(['serve', '--port', '0', '--model-name', 'evil\u001b[2J\u0007name']);
    expect(failed.code).toBe(2);
    expect(failed.stderr).toMatch(/--model-name/);
    // eslint-disable-next-line no-control-regex
    expect(failed.stderr).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f]/);
  });
});
