import type { Server } from 'node:http';
import { BatchlineError } from '../errors.js';
import { answerRequest } from './node-answers.js';
import { gateRequests } from './request-gate.js';

/** True for the addresses of this machine's loopback interface: a server there is for local clients. */
export function isLoopbackAddress(host: string): boolean {
  const name = host.toLowerCase().replace(/^\[|\]$/g, '');
  return name === 'localhost' || name === '::1' || /^127(\.\d{1,3}){3}$/.test(name);
}

/** The host of a Host header: `name`, `name:port`, `[v6]` or `[v6]:port`. */
function hostName(header: string): string {
  if (header.startsWith('[')) return header.slice(0, header.indexOf(']') + 1);
  const colon = header.lastIndexOf(':');
  return (colon < 0 ? header : header.slice(0, colon)).replace(/\.$/, '');
}

/** How many Host values `answerOnlyLoopbackHosts` keeps its judgement of. */
const JUDGED_HOSTS_KEPT = 64;

/**
 * A server that listens on loopback answers only requests whose Host names this machine
 * (`localhost`, `127.x.x.x`, `[::1]`, any port) or one of `extraHosts` (`*`: any). Against DNS
 * rebinding: a web page from evil.example, once its name resolves to 127.0.0.1, is the same
 * origin as the server for the browser, and could read `/v1/stats` and run the model; its
 * requests say `Host: evil.example`. Others get 421 Misdirected Request. A request without Host
 * (HTTP/1.0) is answered. The check wraps Node's request listener (Fastify's): a function call
 * and a few string operations per request, no hook.
 */
export function answerOnlyLoopbackHosts(server: Server, extraHosts: readonly string[]): void {
  if (extraHosts.includes('*')) return;
  const allowed = new Set(extraHosts.map((host) => host.toLowerCase()));
  // A client sends the same Host on every request: each value is judged once. Bounded, so a
  // client that varies its Host costs a judgement a request, as before, and no memory.
  const judged = new Map<string, boolean>();
  const answered = (host: string): boolean => {
    let ok = judged.get(host);
    if (ok === undefined) {
      ok = isLoopbackAddress(hostName(host)) || allowed.has(hostName(host).toLowerCase());
      if (judged.size >= JUDGED_HOSTS_KEPT) judged.clear();
      judged.set(host, ok);
    }
    return ok;
  };
  gateRequests(server, (request, response) => {
    const host = request.headers.host;
    if (host === undefined || answered(host)) return false;
    // In the protocol of the path, as every error is: a /v2 client reads {"error": message} only.
    answerRequest(request, response, new BatchlineError('MISDIRECTED_REQUEST', host), false);
    return true;
  });
}
