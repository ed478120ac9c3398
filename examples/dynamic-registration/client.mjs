// Registers, calls, replaces under load and deregisters versions of a model while the server
// runs, through the admin API, with the middleware's own registration body.
const [url, token] = process.argv.slice(2);
const auth = { authorization: `Bearer ${token}` };

async function admin(method, path, body) {
  const response = await fetch(`${url}${path}`, {
    method,
    headers: body === undefined ? auth : { ...auth, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: response.status, body: await response.json() };
}
async function greet(name, version) {
  const query = version === undefined ? '' : `?version=${version}`;
  const response = await fetch(`${url}/models/greeter/predict${query}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ data: { name } }),
  });
  return { status: response.status, body: await response.json() };
}
const versions = async () =>
  (await admin('GET', '/admin/models')).body.models
    .find((m) => m.name === 'greeter')
    .versions.map((v) => `${v.version}:${v.state}`);
let failed = false;
const check = (ok, what) => {
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}`);
  if (!ok) failed = true;
};

console.log('versions at start:', (await versions()).join(' '));

// 1. Register version 2 as the middleware's README writes it (seconds, workers, "v2").
const registered = await admin('POST', '/admin/models/greeter', {
  module: 'greeter/2/model.mjs',
  function: 'execute',
  version: 'v2',
  max_batch_size: 16,
  max_wait_time: 0.01,
  workers: 2,
  target_latency: 0.05,
});
const { batch_window_ms, instances, target_latency_ms } = registered.body.config ?? {};
check(
  registered.status === 201,
  `register v2: ${registered.status}, batch_window_ms=${batch_window_ms} instances=${instances} target_latency_ms=${target_latency_ms}`,
);
// The middleware's target_latency without "batch_policy": "adaptive": the answer says it is not read.
const warnings = registered.body.warnings ?? [];
check(
  warnings.length === 1 && warnings[0].code === 'target_without_policy',
  `its warnings: ${warnings.map((w) => w.code).join(', ') || 'none'}`,
);

// 2. Call it: the latest version answers; v1 still answers when asked for.
const latest = await greet('Ada');
const first = await greet('Ada', 'v1');
check(latest.body.outputs?.version === 2, `latest: ${JSON.stringify(latest.body.outputs)}`);
check(first.body.outputs?.version === 1, `?version=v1: ${JSON.stringify(first.body.outputs)}`);

// 3. Replace v2 by v3 under load: 8 clients keep calling the latest while v3 is registered and v2 deleted.
let running = true;
const statuses = {};
const byVersion = {};
const clients = Array.from({ length: 8 }, async (_, i) => {
  while (running) {
    const answer = await greet(`client ${i}`);
    statuses[answer.status] = (statuses[answer.status] ?? 0) + 1;
    const version = answer.body.outputs?.version;
    byVersion[version] = (byVersion[version] ?? 0) + 1;
  }
});
await new Promise((resolve) => setTimeout(resolve, 300));
const v3 = await admin('POST', '/admin/models/greeter', { module: 'greeter/3/model.mjs', version: 3 });
await new Promise((resolve) => setTimeout(resolve, 300));
const removed = await admin('DELETE', '/admin/models/greeter/v2');
await new Promise((resolve) => setTimeout(resolve, 300));
running = false;
await Promise.all(clients);
check(v3.status === 201 && removed.status === 200, `register v3: ${v3.status}; delete v2: ${removed.status}`);
const total = Object.values(statuses).reduce((a, b) => a + b, 0);
check(
  statuses[200] === total,
  `under load: ${total} requests, statuses ${JSON.stringify(statuses)}, answered by versions ${JSON.stringify(byVersion)}`,
);
console.log('versions now:', (await versions()).join(' '));

// 4. Deregister v3: v1 is the latest again.
const gone = await admin('DELETE', '/admin/models/greeter/3');
const back = await greet('Grace');
check(
  gone.status === 200 && back.body.outputs?.version === 1,
  `delete v3: ${gone.status}; latest is v${back.body.outputs?.version} again`,
);

// 5. A registration whose module cannot load (here: no export of that name; a throw on import or in
//    initialize alike) is refused with 422 and its message; nothing else is disturbed.
const bad = await admin('POST', '/admin/models/greeter', {
  module: 'greeter/1/model.mjs',
  version: 4,
  function: 'missing',
});
check(bad.status === 422, `a module without that function: ${bad.status} ${bad.body.error?.message}`);
console.log('versions at the end:', (await versions()).join(' '));
process.exit(failed ? 1 : 0);
