import { BatchlineError } from '../errors.js';
import type { ModelVersion } from './model-version.js';

/** A model's versions, highest first, and the highest that takes work. */
interface ModelEntry {
  versions: ModelVersion[];
  latestReady: ModelVersion | undefined;
}

/**
 * Every model version the server holds, by name and version number. `resolve(name)` is the
 * highest version that takes work (so while version 2 loads, version 1 answers, and once 2 is
 * ready, 2 does); `resolve(name, version)` is that exact version, in whatever state.
 */
/**
 * A registration of a version the registry holds: VERSION_EXISTS, saying when it is one being
 * removed (its DELETE drains it), which a retry after that DELETE's answer registers.
 */
export function versionExists(existing: Pick<ModelVersion, 'name' | 'version' | 'state'>): BatchlineError {
  const which = `${existing.name} version ${existing.version}`;
  return new BatchlineError(
    'VERSION_EXISTS',
    existing.state === 'draining'
      ? `${which}, which is being removed (its requests in flight are answered first); register it again once its DELETE has answered`
      : which,
  );
}

export class Registry {
  private readonly byName = new Map<string, ModelEntry>();

  constructor(
    /** The model POST /v1/infer serves; undefined when there are several and none was named. */
    public defaultModel: string | undefined = undefined,
  ) {}

  /** Adds a version (in any state); a version that exists is VERSION_EXISTS. */
  add(version: ModelVersion): void {
    let entry = this.byName.get(version.name);
    if (entry === undefined) this.byName.set(version.name, (entry = { versions: [], latestReady: undefined }));
    const existing = entry.versions.find((v) => v.version === version.version);
    if (existing !== undefined) throw versionExists(existing);
    entry.versions.push(version);
    entry.versions.sort((a, b) => b.version - a.version);
    this.refresh(version.name);
  }

  /** Removes `version` (this very object); false when the registry did not hold it. */
  remove(version: ModelVersion): boolean {
    if (!this.holds(version)) return false;
    const entry = this.byName.get(version.name)!;
    entry.versions = entry.versions.filter((v) => v !== version);
    if (entry.versions.length === 0) this.byName.delete(version.name);
    else this.refresh(version.name);
    return true;
  }

  /** True when the registry holds `version` (this very object, not another of its name and number). */
  holds(version: ModelVersion): boolean {
    return this.byName.get(version.name)?.versions.includes(version) ?? false;
  }

  /** Re-reads which version of `name` is the latest that takes work (after a state change). */
  refresh(name: string): void {
    const entry = this.byName.get(name);
    if (entry !== undefined) entry.latestReady = entry.versions.find((v) => v.acceptsWork);
  }

  /**
   * `(name, version | latest) → ModelVersion`: the exact version when one is given (in any
   * state); else the highest version that takes work, else the highest that is not being
   * removed (loading or unavailable: the caller answers why it cannot serve). Undefined when
   * there is none: a version being removed (draining) is never "the latest".
   */
  resolve(name: string, version?: number): ModelVersion | undefined {
    const entry = this.byName.get(name);
    if (entry === undefined) return undefined;
    if (version !== undefined) return entry.versions.find((v) => v.version === version);
    return entry.latestReady ?? entry.versions.find((v) => v.state !== 'draining');
  }

  /** The model names, sorted. */
  names(): string[] {
    return [...this.byName.keys()].sort();
  }

  /** Every version of `name`, highest first (empty when there is no such model). */
  versionsOf(name: string): readonly ModelVersion[] {
    return this.byName.get(name)?.versions ?? [];
  }

  /** Every version of every model, by name, highest version first. */
  all(): ModelVersion[] {
    return this.names().flatMap((name) => this.versionsOf(name));
  }
}
