import type { FastifyRequest } from 'fastify';
import type { AnswerCounters } from './answer.js';
import { BATCHLINE_JSON } from './json-protocol.js';
import type { Protocol } from './protocol.js';

/**
 * What the HTTP layer knows of a route when it answers an error the route's handler never saw
 * (bad JSON, 413, 415): set as the route's Fastify `config`. Routes without it (health,
 * metrics, unknown URLs) answer in batchline's JSON and count nothing.
 */
export interface AnswerRoute {
  // biome-ignore lint/suspicious/noExplicitAny: a route's protocol is read for its encoder only; the Protocol split types it
  protocol: Protocol<any>;
  /** The protocol of this request when it depends on the request (the answer's format by Accept). */
  // biome-ignore lint/suspicious/noExplicitAny: as above
  protocolOf?(request: FastifyRequest): Protocol<any>;
  /** The counters of the request's target (its model version), when it is an inference request. */
  countersOf(request: FastifyRequest): AnswerCounters | undefined;
}

/** The AnswerRoute of `request`'s route, or the default for routes without one. */
export function answerRouteOf(request: FastifyRequest): {
  // biome-ignore lint/suspicious/noExplicitAny: as above
  protocol: Protocol<any>;
  counters: AnswerCounters | undefined;
} {
  const config = request.routeOptions.config as Partial<AnswerRoute> | undefined;
  if (config?.protocol === undefined) return { protocol: BATCHLINE_JSON, counters: undefined };
  return { protocol: config.protocolOf?.(request) ?? config.protocol, counters: config.countersOf?.(request) };
}
