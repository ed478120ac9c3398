// Calls the Fastify app: a burst it takes, one bad item, an overload it refuses with 429, and a
// client that hangs up.
const url = process.argv[2] ?? 'http://127.0.0.1:3000';
let failed = false;
const check = (ok, what) => {
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}`);
  if (!ok) failed = true;
};
const post = async (text) => {
  const response = await fetch(`${url}/embed`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ text }),
  });
  return { status: response.status, retryAfter: response.headers.get('retry-after'), body: await response.json() };
};
const count = (answers) => {
  const counts = {};
  for (const { status } of answers) counts[status] = (counts[status] ?? 0) + 1;
  return counts;
};

const burst = await Promise.all(Array.from({ length: 48 }, (_, i) => post(`request ${i}`)));
const stats = await (await fetch(`${url}/stats`)).json();
check(
  burst.every((a) => a.status === 200 && a.body.embedding.length === 16),
  `48 at once: ${JSON.stringify(count(burst))}, in ${stats.counts.batches} batches (sizes ${JSON.stringify(stats.recentBatchSizes)})`,
);

const empty = await post('');
check(
  empty.status === 400 && empty.body.message === 'cannot embed an empty text',
  `an empty text: ${empty.status}, the function's own error: ${empty.body.message}`,
);

const flood = await Promise.all(Array.from({ length: 400 }, (_, i) => post(`flood ${i}`)));
const refused = flood.filter((a) => a.status === 429);
check(
  refused.length > 0 &&
    refused.every((a) => a.body.error.code === 'queue_full' && a.retryAfter === '1') &&
    flood.every((a) => a.status === 200 || a.status === 429),
  `400 at once, a queue of 64: ${JSON.stringify(count(flood))}; each 429 is queue_full with Retry-After: ${refused[0]?.retryAfter}`,
);
// A client that hangs up while its call waits (behind the stand-in's 50 ms batch): the app aborts
// the call's signal, so the model never runs it, or its result is dropped (counted `cancelled`).
const readStats = async () => (await fetch(`${url}/stats`)).json();
const waitFor = async (done, what) => {
  for (let tries = 0; tries < 1000; tries++) {
    const now = await readStats();
    if (done(now)) return now;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`the app's /stats never showed ${what}`);
};
// The waits read counters that only grow, so none can miss its moment; but on a loaded host the
// polls can take longer than the 50 ms batch, and the call is answered before the hang-up reaches
// the app (the client may not have its answer yet): then the client tries again, a few times at
// most. With the signal not passed to the call, every try answers it, and the check fails.
const hangUpOnce = async () => {
  const before = await readStats();
  const busy = post('keeps the model busy');
  await waitFor((now) => now.counts.admitted > before.counts.admitted, 'the first call admitted');
  const hangUp = new AbortController();
  const abandoned = fetch(`${url}/embed`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ text: 'a client that hangs up' }),
    signal: hangUp.signal,
  }).catch((error) => error.name);
  await waitFor((now) => now.counts.admitted > before.counts.admitted + 1, 'the second call admitted');
  hangUp.abort();
  await abandoned;
  await busy;
  const after = await waitFor(
    (now) => Object.values(now.counts.outcomes).reduce((sum, n) => sum + n, 0) === now.counts.admitted,
    'every call answered',
  );
  return { cancelled: after.counts.outcomes.cancelled - before.counts.outcomes.cancelled };
};
let hungUp = await hangUpOnce();
for (let tries = 1; hungUp.cancelled === 0 && tries < 5; tries++) hungUp = await hangUpOnce();
check(hungUp.cancelled === 1, `a client that hangs up: its call cancelled (${hungUp.cancelled})`);
process.exit(failed ? 1 : 0);
