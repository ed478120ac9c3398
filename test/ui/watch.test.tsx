import { afterEach, describe, expect, it } from 'vitest';
import { vi } from 'vitest';
import { startWatchDashboard } from '../../src/ui/watch-dashboard.js';
import { isServerStats, isStatsAnswer } from '../../src/stats-contract/is-server-stats.js';
import { describeError, statsUrlFor } from '../../src/stats-contract/stats-poller.js';
import { runWatchPlain } from '../../src/watch/watch-plain.js';
import { applyRead, describeConnection, INITIAL_WATCH_STATE } from '../../src/watch/watch-state.js';
import type { StatsAnswer } from '../../src/stats-contract/server-stats.js';
import { FakeStatsServer } from './fake-stats-server.js';
import { busyStats, emptyStats, multiModelStats, noModelStats } from './fixtures.js';
import { FakeTerminalIn, FakeTerminalOut, stripAnsi, widestLine } from './terminal-frames.js';
import { PATIENCE, PATIENCE_MS } from '../patience.js';
import { refusedPort } from '../bench/servers.js';

/**
 * A read's timeout. These tests claim what watch shows for a good read, a refusal, a 503 or an
 * answer that is not stats: a read timeout a stalled host outruns would show 'timed out' instead
 * (a 500 ms one did, under load). A read of the fake server ends at once, so the bound costs nothing.
 */
const READ_TIMEOUT_MS = PATIENCE_MS;

const servers: FakeStatsServer[] = [];
const stops: AbortController[] = [];
afterEach(async () => {
  for (const stop of stops.splice(0)) stop.abort();
  for (const server of servers.splice(0)) await server.close();
});

async function fakeServer(stats: () => StatsAnswer = () => busyStats()): Promise<FakeStatsServer> {
  const server = new FakeStatsServer(stats);
  await server.open();
  servers.push(server);
  return server;
}

/** `batchline watch --no-ui` on `statsUrl`, reading every 40 ms; `lines` are what it printed. */
function watchPlain(statsUrl: string, wallClock?: () => number) {
  const lines: string[] = [];
  const stop = new AbortController();
  stops.push(stop);
  const done = runWatchPlain({
    statsUrl,
    intervalMs: 40,
    timeoutMs: READ_TIMEOUT_MS,
    signal: stop.signal,
    out: { write: (text: string) => lines.push(text) },
    ...(wallClock === undefined ? {} : { wallClock }),
  });
  /** Stops it and resolves when it has ended. */
  const end = (): Promise<void> => {
    stop.abort();
    return done;
  };
  return { lines, end };
}

/** At 12:00:00 UTC, for lines that do not move. */
const NOON = () => Date.UTC(2026, 0, 1, 12, 0, 0);

/** `batchline watch`'s dashboard of `target` on an 80×24 terminal, reading every 40 ms and drawing every 30. */
function watchDashboard(target: string, statsUrl: string) {
  const stdout = new FakeTerminalOut(80, 24);
  const stdin = new FakeTerminalIn();
  const stop = new AbortController();
  stops.push(stop);
  const done = startWatchDashboard({
    target,
    statsUrl,
    intervalMs: 40,
    timeoutMs: READ_TIMEOUT_MS,
    frameMs: 30,
    stdout: stdout.asStream(),
    stdin: stdin.asStream(),
    signal: stop.signal,
  });
  /** The last frames drawn, as text. */
  const latest = () => stripAnsi(stdout.writes.slice(-3).join(''));
  return { stdout, stdin, stop, done, latest };
}

describe('statsUrlFor', () => {
  it('accepts host:port, a base URL or the stats URL itself', () => {
    expect(statsUrlFor('localhost:8080')).toBe('http://localhost:8080/v1/stats');
    expect(statsUrlFor('http://10.0.0.5:8080/')).toBe('http://10.0.0.5:8080/v1/stats');
    expect(statsUrlFor('https://models.example/batchline')).toBe('https://models.example/batchline/v1/stats');
    expect(statsUrlFor('http://h:1/v1/stats')).toBe('http://h:1/v1/stats');
    // A route of the server (what bench loads) names the server: its stats sit beside it.
    expect(statsUrlFor('localhost:8080/v1/infer')).toBe('http://localhost:8080/v1/stats');
    expect(statsUrlFor('http://h:1/api/models/cls/predict?version=2')).toBe('http://h:1/api/v1/stats');
    expect(statsUrlFor('http://h:1/v2/models/cls/infer')).toBe('http://h:1/v1/stats');
    expect(statsUrlFor('http://h:1/metrics')).toBe('http://h:1/v1/stats');
    expect(statsUrlFor('ftp://h')).toBeUndefined();
    expect(statsUrlFor('http://')).toBeUndefined();
  });
});

describe('watch state', () => {
  it('counts failures in a row and forgets them on a good read', () => {
    let state = applyRead(INITIAL_WATCH_STATE, { ok: false, error: 'connection refused', atMs: 100 });
    expect(describeConnection(state, 1100, 500)).toEqual({
      tone: 'unreachable',
      text: 'unreachable (connection refused) for 1.0 s, retrying every 500 ms',
    });
    state = applyRead(state, { ok: true, stats: emptyStats(), atMs: 1500 });
    expect(describeConnection(state, 1750, 500)).toEqual({ tone: 'live', text: 'last good read 0.3 s ago' });
    state = applyRead(state, { ok: false, error: 'timed out after 2000 ms', atMs: 4000 });
    state = applyRead(state, { ok: false, error: 'connection refused', atMs: 4500 });
    expect(state.failure).toEqual({ error: 'connection refused', sinceMs: 4000, count: 2 });
    expect(describeConnection(state, 6000, 500).text).toBe(
      'connection refused for 2.0 s · retrying every 500 ms · figures 4.5 s old',
    );
  });

  it('tells a batchline stats document from other JSON and names network errors', () => {
    expect(isServerStats(busyStats())).toBe(true);
    expect(isServerStats({ status: 'ok' })).toBe(false);
    const old = busyStats() as unknown as { snapshot: Record<string, unknown> };
    delete old.snapshot.queueWaitMs; // a server from before the field existed
    expect(isServerStats(old)).toBe(false);
    // A server serving no model: its own figures, no model's; half of one is neither.
    expect(isStatsAnswer(noModelStats())).toBe(true);
    expect(isStatsAnswer({ ...noModelStats(), snapshot: {} })).toBe(false);
    expect(isStatsAnswer({ ...noModelStats(), models: [{}] })).toBe(false);
    expect(isStatsAnswer({ ...noModelStats(), responsesByStatus: { 200: -1 } })).toBe(false);
    // A version's requests in flight, as its answer counts are: counts when there, absent from older servers.
    const withInFlight = (requestsInFlight: unknown) => {
      const stats = multiModelStats();
      return { ...stats, models: stats.models!.map((entry) => ({ ...entry, requestsInFlight })) };
    };
    expect(isServerStats(withInFlight({ queued: 1, running: 2 }))).toBe(true);
    expect(isServerStats(withInFlight(undefined))).toBe(true);
    expect(isServerStats(withInFlight({ queued: -1, running: 2 }))).toBe(false);
    expect(isServerStats(withInFlight({ queued: 1, running: Number.POSITIVE_INFINITY }))).toBe(false);
    expect(isServerStats(withInFlight({ queued: '1', running: 2 }))).toBe(false);
    expect(isServerStats(withInFlight('many'))).toBe(false);
    expect(describeError(Object.assign(new Error('x'), { code: 'ECONNREFUSED' }), 2000)).toBe('connection refused');
    expect(describeError(Object.assign(new Error('x'), { name: 'TimeoutError' }), 2000)).toBe(
      'timed out after 2000 ms',
    );
  });
});

describe('watch without a terminal', () => {
  it('prints plain lines, says when the server is gone and when it is back', async () => {
    const server = await fakeServer();
    const { lines, end } = watchPlain(`${server.url}/v1/stats`, NOON);
    await vi.waitFor(
      () =>
        expect(lines.join('')).toMatch(
          /12:00:00 ready up 3m12s queue 12\/128 running 8\+5 .*p50 31\.2 ms p99 44\.7 ms 200=38,000 429=0 504=0 5xx=0 4xx=3/,
        ),
      PATIENCE,
    );

    await server.close();
    await vi.waitFor(
      () => expect(lines.join('')).toMatch(/unreachable \(connection (refused|reset)\), retrying every 40 ms/),
      PATIENCE,
    );
    server.stats = () => emptyStats();
    await server.open(); // the same port
    await vi.waitFor(
      () => expect(lines.join('')).toMatch(/reachable again after [\d.]+ m?s\n12:00:00 ready up 2s queue 0\/128/),
      PATIENCE,
    );

    await end();
    expect(lines.join('')).not.toMatch(/\x1b\[/);
    // One line when it went away (a reset seen first may be followed by one 'still unreachable').
    expect(lines.filter((l) => /^\d\d:\d\d:\d\d unreachable \(/.test(l))).toHaveLength(1);
  });

  it('says a server serves no model once every version was removed, with its totals, and follows it back', async () => {
    const server = await fakeServer();
    const { lines, end } = watchPlain(`${server.url}/v1/stats`, NOON);
    await vi.waitFor(() => expect(lines.join('')).toContain('ready up 3m12s queue 12/128'), PATIENCE);
    server.stats = () => noModelStats();
    await vi.waitFor(
      () =>
        expect(lines.join('')).toContain(
          '12:00:00 ready up 3m20s no model served 200=38,000 429=0 504=0 5xx=0 4xx=3\n',
        ),
      PATIENCE,
    );
    server.stats = () => busyStats(1.1);
    await vi.waitFor(() => expect(lines.slice(-1)[0]).toMatch(/ready up 3m12s queue 12\/128/), PATIENCE);
    await end();
    expect(lines.join('')).not.toContain('unreachable');
  });

  it("prints a line for every version of a server of several, under the server's, as serve --no-ui does", async () => {
    const server = await fakeServer(() => multiModelStats());
    const { lines, end } = watchPlain(`${server.url}/v1/stats`, NOON);
    // A second read gives each version its rates (nothing moved between the two: 0/s).
    await vi.waitFor(
      () => expect(lines.join('')).toContain('model=cls version=1 ready queue 12/128 running 8+5 ok 0/s'),
      PATIENCE,
    );
    await end();
    const read = lines.join('').split('12:00:00 ready up 3m12s 3 versions ')[2];
    expect(read).toBeDefined();
    expect(`12:00:00 ready up 3m12s 3 versions ${read}`.split('\n').slice(0, 4)).toEqual([
      '12:00:00 ready up 3m12s 3 versions 200=40,000 429=120,000 504=350 5xx=2',
      '12:00:00 model=cls version=1 ready queue 12/128 running 8+5 ok 0/s batches 0/s p50 31.2 ms p99 44.7 ms 200=38,000 429=0 504=0 5xx=0 4xx=3',
      '12:00:00 model=linear version=2 ready queue 128/128 running 8+8 ok 0/s batches 0/s p50 190 ms p99 1.99 s 200=40,000 429=120,000 504=350 5xx=2',
      '12:00:00 model=toy version=1 ready queue 0/128 running 0 ok 0/s batches 0/s p50 - p99 - 200=0 429=0 504=0 5xx=0',
    ]);
  });

  it('shows why a server that is up does not give its stats yet', async () => {
    const server = await fakeServer();
    server.failWith = { status: 503, message: 'server is not ready: the model is loading' };
    const { lines, end } = watchPlain(`${server.url}/v1/stats`);
    await vi.waitFor(
      () => expect(lines.join('')).toContain('unreachable (HTTP 503: server is not ready: the model is loading)'),
      PATIENCE,
    );
    server.failWith = undefined;
    await vi.waitFor(() => expect(lines.join('')).toContain('reachable again'), PATIENCE);
    await end();
  });

  it('reports a server that answers something else than batchline stats', async () => {
    const server = await fakeServer(() => ({ hello: 'world' }) as never);
    const { lines, end } = watchPlain(`${server.url}/v1/stats`);
    await vi.waitFor(
      () =>
        expect(lines.join('')).toContain(
          'unreachable (the answer is not batchline stats (is this a batchline server?))',
        ),
      PATIENCE,
    );
    await end();
  });
});

describe('watch dashboard', () => {
  it('survives the server going away and coming back on the same port', async () => {
    const server = await fakeServer();
    const { stdout, stdin, done, latest } = watchDashboard(server.url, `${server.url}/v1/stats`);
    await vi.waitFor(() => expect(latest()).toMatch(/last good read \d/), PATIENCE);
    expect(latest()).toMatch(/#0 █{8} 8\/8/);

    await server.close();
    // A read in flight as the server closes may see a reset; the ones after it see a refusal.
    await vi.waitFor(() => {
      expect(latest()).toMatch(/batchline watch http:\/\/127\.0\.0\.1:\d+ · unreachable/);
      expect(latest()).toMatch(/\nconnection refused for [\d.]+ s · retrying every 40 ms · figures [\d.]+ s old\n/);
    }, PATIENCE);

    await server.open();
    await vi.waitFor(() => expect(latest()).toMatch(/· ready · up 3m12s.*\n.*\nlast good read/), PATIENCE);

    stdin.type('q');
    await done;
    for (const write of stdout.writes) expect(widestLine(write)).toBeLessThanOrEqual(80);
  });

  it('draws a server that serves no model (every version removed): its state and answers, not unreachable', async () => {
    const server = await fakeServer(() => noModelStats());
    const { stdout, stdin, done, latest } = watchDashboard(server.url, `${server.url}/v1/stats`);
    await vi.waitFor(() => expect(latest()).toMatch(/last good read \d/), PATIENCE);
    expect(latest()).toMatch(/· ready · up 3m20s · no model served\n/);
    expect(latest()).toContain('No model is served: every version was removed');
    expect(latest()).toMatch(/200 ok +38,000/);
    // A model is loaded again: the full dashboard is back.
    server.stats = () => busyStats();
    await vi.waitFor(() => expect(latest()).toMatch(/#0 █{8} 8\/8/), PATIENCE);
    stdin.type('q');
    await done;
    for (const write of stdout.writes) expect(widestLine(write)).toBeLessThanOrEqual(80);
  });

  it('shows a server that was never reachable without crashing', async () => {
    // A port released just now, not port 1: on a shared host something may listen there.
    const port = await refusedPort();
    const { stdout, stop, done } = watchDashboard(`localhost:${port}`, `http://127.0.0.1:${port}/v1/stats`);
    await vi.waitFor(() => expect(stripAnsi(stdout.text)).toContain('unreachable (connection refused) for'), PATIENCE);
    expect(stripAnsi(stdout.text)).toContain(`GET http://127.0.0.1:${port}/v1/stats every 40 ms`);
    stop.abort();
    await done;
  });
});

describe('batchline watch options', () => {
  it('refuses a URL that is not http(s) and an interval out of range, naming what it expected', async () => {
    const { buildProgram } = await import('../../src/cli.js');
    await expect(buildProgram().parseAsync(['node', 'batchline', 'watch', 'ftp://host'])).rejects.toThrow(
      /<url>: got 'ftp:\/\/host', expected an http\(s\) URL/,
    );
    await expect(
      buildProgram().parseAsync(['node', 'batchline', 'watch', 'localhost:1', '--interval', '5ms']),
    ).rejects.toThrow(/--interval: got '5ms'/);
  });
});
