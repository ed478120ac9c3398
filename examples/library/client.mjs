// Calls the Fastify app: a burst it takes, one bad item, and an overload it refuses with 429.
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
  empty.status === 500 && empty.body.error.code === 'model_failure',
  `an empty text: ${empty.status} ${empty.body.error.code}: ${empty.body.error.message}`,
);

const flood = await Promise.all(Array.from({ length: 400 }, (_, i) => post(`flood ${i}`)));
const refused = flood.filter((a) => a.status === 429);
check(
  refused.length > 0 &&
    refused.every((a) => a.body.error.code === 'queue_full' && a.retryAfter === '1') &&
    flood.every((a) => a.status === 200 || a.status === 429),
  `400 at once, a queue of 64: ${JSON.stringify(count(flood))}; each 429 is queue_full with Retry-After: ${refused[0]?.retryAfter}`,
);
process.exit(failed ? 1 : 0);
