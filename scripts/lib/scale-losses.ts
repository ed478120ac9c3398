/** One phase of test:scale: what bench sent and got a 2xx for. */
export interface ScalePhase {
  name: string;
  sent: number;
  ok: number;
  /** Only on the phase that SIGKILLs a replica: the requests HAProxy had open on it just before. */
  inFlightOnKilled?: number;
}

/**
 * What test:scale lost: per phase, the requests without a 2xx answer less those in flight on the
 * killed replica (shown apart); `kept` is its promise, nothing lost under steady load or in the
 * rolling update. The kill's own losses are reported, never the verdict.
 */
export function scaleLosses(phases: readonly ScalePhase[]): {
  lost: number;
  sent: number;
  inFlight: number;
  byPhase: string[];
  kept: boolean;
} {
  let lost = 0;
  let sent = 0;
  let inFlight = 0;
  let lostOutsideKill = 0;
  const byPhase: string[] = [];
  for (const phase of phases) {
    const inFlightOnKilled = phase.inFlightOnKilled ?? 0;
    const phaseLost = phase.sent - phase.ok - inFlightOnKilled;
    sent += phase.sent;
    lost += phaseLost;
    inFlight += inFlightOnKilled;
    if (phase.inFlightOnKilled === undefined) lostOutsideKill += phaseLost;
    byPhase.push(`${phase.name} ${phaseLost}`);
  }
  return { lost, sent, inFlight, byPhase, kept: lostOutsideKill === 0 };
}
