import type { BenchResult } from './result.js';

/**
 * Whether bench's mean service time and the server's mean times may be set against each other
 * (the report's `outside` line, the CSV's `Network+Server Send/Recv`): not when some answers were
 * not 2xx, since the service time covers every answer (a 429 refused in a millisecond too) and
 * the server's times its inferences only (with 429s, `outside` read −45 ms and the CSV's cell 0).
 */
export function serviceComparesWithServer(r: BenchResult): boolean {
  return r.server !== undefined && r.service.count > 0 && r.requests.ok === r.requests.completed;
}
