import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { CountingResponse } from '../../src/serve/drain-connections.js';

let server: Server | undefined;
afterEach(async () => {
  await new Promise((resolve) => server?.close(resolve));
  server = undefined;
});

/** Each of Node's writeHead overloads, by path. */
const FORMS: Record<string, (response: ServerResponse) => void> = {
  '/status': (response) => response.writeHead(204),
  '/headers': (response) => response.writeHead(200, { 'x-given': 'h' }),
  '/reason': (response) => response.writeHead(200, 'Fine'),
  '/reason-headers': (response) => response.writeHead(200, 'Fine', { 'x-given': 'rh' }),
  '/undefined-headers': (response) => response.writeHead(200, undefined, { 'x-given': 'uh' }),
  '/array': (response) => response.writeHead(200, ['x-given', 'a']),
};

describe('CountingResponse.writeHead', () => {
  it("says nosniff under every one of Node's overloads, and keeps their reason and headers", async () => {
    // As build-server.ts passes it: Node's types want the generic constructor.
    const listening = createServer({ ServerResponse: CountingResponse as typeof ServerResponse }, (req, response) => {
      FORMS[req.url!]!(response);
      response.end();
    });
    server = listening;
    await new Promise<void>((resolve) => listening.listen(0, '127.0.0.1', resolve));
    const base = `http://127.0.0.1:${(listening.address() as AddressInfo).port}`;
    const seen: Record<string, unknown> = {};
    for (const path of Object.keys(FORMS)) {
      const response = await request(`${base}${path}`);
      await response.body.dump();
      seen[path] = [response.statusCode, response.headers['x-content-type-options'], response.headers['x-given']];
    }
    expect(seen).toEqual({
      '/status': [204, 'nosniff', undefined],
      '/headers': [200, 'nosniff', 'h'],
      '/reason': [200, 'nosniff', undefined],
      '/reason-headers': [200, 'nosniff', 'rh'],
      '/undefined-headers': [200, 'nosniff', 'uh'],
      '/array': [200, 'nosniff', 'a'],
    });
  });
});
