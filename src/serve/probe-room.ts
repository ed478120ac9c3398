import type { IncomingMessage, Server } from 'node:http';
import type { Socket } from 'node:net';
import { BatchlineError } from '../errors.js';
import type { CountRefusal } from './connection-refusals.js';
import { answerRequest } from './node-answers.js';
import { gateRequests } from './request-gate.js';

/** Connections taken past --max-connections, for health probes only. */
export const PROBE_ROOM = 8;
/** How long a connection in the probe room may take to send its request (a probe sends it at once). */
const PROBE_HEADERS_MS = 1000;
/** What a liveness or readiness probe asks (GET or HEAD), batchline's paths and the protocol's. */
const PROBE_PATHS = new Set(['/healthz', '/health', '/readyz', '/v2/health/live', '/v2/health/ready']);

/** On a connection in the room: its idle timer until its first request, then null (it stays in the room). */
const kProbeRoom = Symbol('batchline.probeRoom');
type RoomSocket = Socket & { [kProbeRoom]?: NodeJS.Timeout | null };

function isProbe(request: IncomingMessage): boolean {
  if (request.method !== 'GET' && request.method !== 'HEAD') return false;
  const url = request.url ?? '';
  const query = url.indexOf('?');
  return PROBE_PATHS.has(query < 0 ? url : url.slice(0, query));
}

/**
 * At most `maxConnections` connections, and `PROBE_ROOM` more for health probes: a Kubernetes
 * liveness probe through a full listener was closed unanswered with the clients' connections,
 * and the pod restarted exactly when busy (or under a slowloris). A connection past the cap may
 * send one probe, answered and then closed; any other request is answered 503
 * `too_many_connections` and closed, and one that sends nothing within `PROBE_HEADERS_MS` (or
 * `headersTimeoutMs`, if shorter) is closed. Past the room, Node closes new connections as they
 * arrive, as before. A gate before the routes (request-gate.ts). Each refusal is `refused`.
 */
export function capConnectionsWithProbeRoom(
  server: Server,
  maxConnections: number,
  headersTimeoutMs: number,
  refused: CountRefusal = () => {},
): void {
  server.maxConnections = maxConnections + PROBE_ROOM;
  server.on('drop', () => refused('closed_at_cap'));
  const waitMs = Math.min(PROBE_HEADERS_MS, headersTimeoutMs);
  let open = 0;
  server.prependListener('connection', (socket: RoomSocket) => {
    open++;
    socket.once('close', () => {
      open--;
      clearTimeout(socket[kProbeRoom] ?? undefined);
    });
    if (open > maxConnections)
      socket[kProbeRoom] = setTimeout(() => {
        refused('probe_room_idle');
        socket.destroy();
      }, waitMs);
  });
  gateRequests(server, (request, response) => {
    const socket = request.socket as RoomSocket;
    const timer = socket[kProbeRoom];
    if (timer === undefined) return false;
    // The connection is refused once: requests pipelined behind its first are answered alike, not counted.
    const first = timer !== null;
    if (first) {
      clearTimeout(timer);
      socket[kProbeRoom] = null;
    }
    if (!isProbe(request)) {
      if (first) refused('too_many_connections');
      answerRequest(request, response, new BatchlineError('TOO_MANY_CONNECTIONS', String(maxConnections)));
      return true;
    }
    // Answered as ever, then closed: the room is for the next probe.
    response.setHeader('connection', 'close');
    return false;
  });
}
