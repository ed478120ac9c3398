import type { ModelVersionState, ModelVersionStats, ServerStats } from '../stats-contract/server-stats.js';
import { StatsHistory, type StatsTrends } from '../stats-contract/stats-history.js';

/** One model version as the dashboards show it: its identity, state, figures and trends. */
export interface VersionRow {
  /** `name/version`: how a version is selected. */
  key: string;
  name: string;
  version: number;
  state: ModelVersionState;
  reason?: string;
  /** The server's stats seen through this version: its model, config, answers and snapshot. */
  stats: ServerStats;
  trends: StatsTrends;
}

/** `name/version`. */
function versionKey(entry: Pick<ModelVersionStats, 'name' | 'version'>): string {
  return `${entry.name}/${entry.version}`;
}

/** The server's stats with one version's figures in the places the single-model view reads. */
function versionView(stats: ServerStats, entry: ModelVersionStats): ServerStats {
  return {
    ...stats,
    model: entry.model,
    config: entry.config,
    responsesByStatus: entry.responsesByStatus,
    snapshot: entry.snapshot,
  };
}

/**
 * A StatsHistory per model version, fed from the same reads as the server's: the rates and the
 * queue sparkline of each version. Versions that leave the server leave the histories.
 */
export class ModelHistories {
  private readonly histories = new Map<string, StatsHistory>();

  push(stats: ServerStats, nowMs: number): void {
    const seen = new Set<string>();
    for (const entry of stats.models ?? []) {
      const key = versionKey(entry);
      seen.add(key);
      let history = this.histories.get(key);
      if (history === undefined) this.histories.set(key, (history = new StatsHistory()));
      history.push(versionView(stats, entry), nowMs);
    }
    for (const key of this.histories.keys()) if (!seen.has(key)) this.histories.delete(key);
  }

  /** One row per version of `stats`, in its order (by name, highest version first). */
  rows(stats: ServerStats): VersionRow[] {
    return (stats.models ?? []).map((entry) => {
      const key = versionKey(entry);
      const history = this.histories.get(key) ?? new StatsHistory();
      return {
        key,
        name: entry.name,
        version: entry.version,
        state: entry.state,
        ...(entry.reason === undefined ? {} : { reason: entry.reason }),
        stats: versionView(stats, entry),
        trends: history.trends(),
      };
    });
  }
}

/**
 * The row a dashboard details: the one chosen (by key) if it is still there, else the default
 * model's first version, else the first.
 */
export function selectedRow(
  rows: readonly VersionRow[],
  chosen: string | undefined,
  defaultModel: string | undefined,
): VersionRow | undefined {
  return rows.find((row) => row.key === chosen) ?? rows.find((row) => row.name === defaultModel) ?? rows[0];
}

/** The key `step` rows away from the selected one, wrapping around (Tab and → are +1, ← is -1). */
export function stepSelection(
  rows: readonly VersionRow[],
  current: string | undefined,
  step: number,
): string | undefined {
  if (rows.length === 0) return current;
  const index = Math.max(
    0,
    rows.findIndex((row) => row.key === current),
  );
  return rows[(index + step + rows.length) % rows.length]!.key;
}
