/** A listener of the server: the HTTP one, the admin API's own (--admin-port), the gRPC one. */
export type Listener = 'http' | 'admin' | 'grpc';

/**
 * Why a listener turned a connection away past --max-connections, and the listeners that can:
 * no route runs for these, so nothing else counts them, and an operator alerting on refused
 * connections had nothing to alert on.
 */
export const CONNECTION_REFUSALS = {
  /** Closed as it arrived: past the cap (gRPC), past the cap and the probe room (HTTP). */
  closed_at_cap: ['http', 'admin', 'grpc'],
  /** HTTP: a connection in the probe room whose first request was no health probe, answered 503 too_many_connections (once a connection, however many it pipelines). */
  too_many_connections: ['http', 'admin'],
  /** HTTP: a connection in the probe room that sent no request in time, closed. */
  probe_room_idle: ['http', 'admin'],
} as const satisfies Record<string, readonly Listener[]>;

export type ConnectionRefusalReason = keyof typeof CONNECTION_REFUSALS;

/** A listener's count of one more connection refused. */
export type CountRefusal = (reason: ConnectionRefusalReason) => void;

/** The connections the server's listeners refused, by listener and reason; /metrics reads them. */
export class ConnectionRefusals {
  /** By listener, then reason; a listener's reasons are there at 0 from the start (a rate over a series that appears at its first count misses it). */
  readonly counts = new Map<Listener, Map<ConnectionRefusalReason, number>>();

  constructor(listeners: readonly Listener[]) {
    for (const listener of listeners) this.start(listener);
  }

  /** The counting function for `listener`. */
  of(listener: Listener): CountRefusal {
    const counts = this.counts.get(listener) ?? this.start(listener);
    return (reason) => void counts.set(reason, (counts.get(reason) ?? 0) + 1);
  }

  private start(listener: Listener): Map<ConnectionRefusalReason, number> {
    const reasons = Object.entries(CONNECTION_REFUSALS).filter(([, listeners]) =>
      (listeners as readonly Listener[]).includes(listener),
    );
    const counts = new Map(reasons.map(([reason]) => [reason as ConnectionRefusalReason, 0]));
    this.counts.set(listener, counts);
    return counts;
  }
}
