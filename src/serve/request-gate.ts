import type { IncomingMessage, Server, ServerResponse } from 'node:http';

/** A check before any route: true when it answered the request itself (the routes never see it). */
export type RequestGate = (request: IncomingMessage, response: ServerResponse) => boolean;

/**
 * Puts `gate` in front of the server's request listeners (Fastify's, and the gates put there
 * before it, which then run after it): one function call a request, no Fastify hook. The checks
 * Node's server makes no room for (the Host, the framing, the probe room) stand here, each a gate.
 */
export function gateRequests(server: Server, gate: RequestGate): void {
  const handlers = server.listeners('request') as ((request: IncomingMessage, response: ServerResponse) => void)[];
  server.removeAllListeners('request');
  server.on('request', (request: IncomingMessage, response: ServerResponse) => {
    if (gate(request, response)) return;
    for (const handler of handlers) handler.call(server, request, response);
  });
}
