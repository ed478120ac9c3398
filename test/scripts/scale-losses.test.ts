/** test:scale's verdict (scripts/lib/scale-losses.ts): what fails it, as docs/scaling.md says. */
import { describe, expect, it } from 'vitest';
import { scaleLosses } from '../../scripts/lib/scale-losses.js';

const steady = { name: 'steady (60 s)', sent: 9000, ok: 9000 };
const update = { name: 'rolling update', sent: 2458, ok: 2458 };

describe("test:scale's losses", () => {
  it('fails on a request lost under steady load or in the rolling update', () => {
    expect(scaleLosses([{ ...steady, ok: 8999 }, update]).kept).toBe(false);
    expect(scaleLosses([steady, { ...update, ok: 2457 }]).kept).toBe(false);
  });

  it("reports the kill's losses, in flight or not, without failing on them", () => {
    // A run here: HAProxy had no request open on the replica the moment before the SIGKILL, and
    // two client connections were reset over the kill; it exited 1 though scaling.md promises
    // only the steady load and the update.
    const kill = { name: 'SIGKILL r2', sent: 1503, ok: 1501, inFlightOnKilled: 0 };
    const losses = scaleLosses([steady, update, kill]);
    expect(losses).toMatchObject({ lost: 2, sent: 12961, inFlight: 0, kept: true });
    expect(losses.byPhase).toEqual(['steady (60 s) 0', 'rolling update 0', 'SIGKILL r2 2']);
    expect(scaleLosses([steady, update, { ...kill, inFlightOnKilled: 2 }])).toMatchObject({ lost: 0, inFlight: 2 });
  });
});
