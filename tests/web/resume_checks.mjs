// Loads the model from base (fetching it into Cache Storage, with the fetch progress), runs a greedy completion,
// unloads it and deletes it from Cache Storage: {text, loadMs, progress, cached (the keys under base before the
// delete)}.
const loadFromBase = (page, base, prompt, tokens) => page.evaluate(async ({base, prompt, n}) => {
  const e = window.demo.engine;
  const progress = [];
  const off = e.subscribe((m) => { if (m.type === 'progress' && m.stage === 'fetch' && m.model === base) progress.push([m.loaded, m.total]); });
  const t = performance.now();
  try {
    await e.load(base, {rows: 1});
  } finally {
    off();
  }
  const loadMs = performance.now() - t;
  const a = await e.completions.create({model: base, prompt, max_tokens: n, temperature: 0});
  await e.unload(base);
  const cached = (await (await caches.open('webllm/model')).keys()).map((r) => r.url).filter((u) => u.startsWith(base));
  await e.deleteModel(base);
  return {text: a.choices[0].text, loadMs, progress, cached};
}, {base, prompt, n: tokens});

// fetchModel(base) that is expected to fail: {err: {name, code, reason, status} of the rejection or null, model (the
// webllm/model keys under base right after it)}; then every entry under base is removed from both scopes.
const failedFetch = (page, base) => page.evaluate(async ({base}) => {
  const e = window.demo.engine;
  let err = null;
  try { await e.fetchModel(base, base); } catch (x) {
    err = {name: x.name, code: x.code, reason: x.detail && x.detail.reason, status: x.detail && x.detail.http_status};
  }
  const model = (await (await caches.open('webllm/model')).keys()).map((r) => r.url).filter((u) => u.startsWith(base));
  for (const scope of ['webllm/model', 'webllm/config']) {
    const c = await caches.open(scope);
    for (const k of await c.keys()) if (k.url.startsWith(base)) await c.delete(k);
  }
  return {err, model};
}, {base});

// Resumable, verified shards (browser_test.mjs calls this): the fixture served from a second loopback origin
// (harness.mjs serveFlaky) whose first response for the shard breaks after half of it. The load must complete from
// a `Range: bytes=N-` request (206), or from a whole refetch where the server ignores Range (200), with fetch
// progress counting every byte once, and the greedy text equal to the unbroken load's; a transfer that stalls (the
// socket kept open, silent) is aborted after stall_timeout_s and resumed the same way; a shard whose md5 does not
// match is rejected with NETWORK_ERROR md5_mismatch and nothing of it is kept in Cache Storage.
//   await checkResume(page, check, {flaky, prompt, nativeText, tokens, shardBytes})
export async function checkResume(page, check, {flaky, prompt, nativeText, tokens, shardBytes}) {
  const loadFrom = (base) => loadFromBase(page, base, prompt, tokens);
  const shardLog = (mode) => flaky.log.filter((r) => r.mode === mode && /^params_shard_/.test(r.name));
  const counted = (progress) => progress.length > 0 && progress.every(([l, t], i) => l <= t && (i === 0 || l >= progress[i - 1][0])) &&
    progress[progress.length - 1][0] === shardBytes && progress[progress.length - 1][1] === shardBytes;

  const r = await loadFrom(flaky.base + 'range/');
  const rl = shardLog('range');
  const from = rl[1] && /^bytes=(\d+)-$/.exec(rl[1].range || '');
  check(rl.length === 2 && rl[0].cut && from && Number(from[1]) > 0 && Number(from[1]) <= shardBytes / 2 && rl[1].status === 206,
    'a shard cut after half resumes with a Range request from the bytes received (206)', rl);
  check(r.text === nativeText && counted(r.progress) && r.cached.some((u) => u.endsWith('params_shard_0.bin')),
    'the resumed load completes: the greedy text equals the unbroken load\'s, progress counts each byte once',
    {text: r.text, progress: r.progress, load_ms: r.loadMs});

  const n = await loadFrom(flaky.base + 'norange/');
  const nl = shardLog('norange');
  check(nl.length === 2 && nl[0].cut && nl[1].range && nl[1].status === 200 && n.text === nativeText && counted(n.progress),
    'a server that ignores Range (200): the shard is fetched again whole, same text, progress still right',
    {log: nl, text: n.text, progress: n.progress});

  const st = await page.evaluate(async ({base}) => {
    const e = window.demo.engine;
    let badOption = null;
    try { await e.fetchModel(base, base, {stall_timeout_s: 0}); } catch (x) { badOption = {code: x.code, field: x.detail.field}; }
    const t = performance.now();
    const rec = await e.fetchModel(base, base, {stall_timeout_s: 1});
    const ms = performance.now() - t;
    const model = (await (await caches.open('webllm/model')).keys()).map((r) => r.url).filter((u) => u.startsWith(base));
    await e.deleteModel(base);
    return {ms, cache: rec.cache, model, badOption};
  }, {base: flaky.base + 'stall/'});
  const sl = shardLog('stall');
  check(sl.length === 2 && sl[0].cut && /^bytes=\d+-$/.test(sl[1].range || '') && sl[1].status === 206 && st.ms >= 1000 &&
    st.cache === 'cached' && st.model.some((u) => u.endsWith('params_shard_0.bin')),
  'a stalled transfer is aborted after stall_timeout_s (1 s) and resumed with Range', {log: sl, ms: st.ms, cache: st.cache});
  check(st.badOption && st.badOption.code === 'BAD_REQUEST' && st.badOption.field === 'stall_timeout_s',
    'stall_timeout_s 0 is BAD_REQUEST', st.badOption);

  const bad = await failedFetch(page, flaky.base + 'corrupt/');
  check(bad.err && bad.err.code === 'NETWORK_ERROR' && bad.err.reason === 'md5_mismatch' &&
    !bad.model.some((u) => u.includes('params_shard')) && shardLog('corrupt').length === 2,
  'a resumed shard whose md5 does not match is NETWORK_ERROR md5_mismatch and is not kept in Cache Storage',
  {err: bad.err, kept: bad.model, log: shardLog('corrupt')});
  return {range: r, norange: n, stall: st, corrupt: bad};
}

// The first request for a file is tried again as a resume is (browser_test.mjs calls this, after checkResume): two
// 503s for every file (busy), the shard's first two connections closed before any response (refuse), no response at
// all for the shard's first request (silent, stall_timeout_s 1) each still load, with the unbroken load's greedy
// text; a shard that is always 503 (down) fails after 1 + 4 requests with NETWORK_ERROR http_status 503, and nothing
// of it is kept in Cache Storage.
//   await checkFirstRequests(page, check, {flaky, prompt, nativeText, tokens})
export async function checkFirstRequests(page, check, {flaky, prompt, nativeText, tokens}) {
  const logOf = (mode, shardOnly) => flaky.log.filter((r) => r.mode === mode && (!shardOnly || /^params_shard_/.test(r.name)));
  const busy = await loadFromBase(page, flaky.base + 'busy/', prompt, tokens);
  const bl = logOf('busy', false);
  const byName = new Map();
  for (const r of bl) byName.set(r.name, [...(byName.get(r.name) || []), r.status]);
  const threeEach = byName.size >= 3 && [...byName.values()].every((st) => st.length === 3 && st[0] === 503 && st[1] === 503 && st[2] === 200);
  check(busy.text === nativeText && threeEach && byName.has('params_shard_0.bin'),
    'two 503s for every file\'s first requests: each file is asked again, the load completes with the same text',
    {text: busy.text, statuses: Object.fromEntries(byName)});

  const refuse = await loadFromBase(page, flaky.base + 'refuse/', prompt, tokens);
  const rl = logOf('refuse', true);
  check(refuse.text === nativeText && rl.length === 3 && rl[0].refused && rl[1].refused && rl[2].status === 200,
    'the shard\'s first two connections closed before any response: asked again, same text', {text: refuse.text, log: rl});

  const silent = await page.evaluate(async ({base}) => {
    const e = window.demo.engine;
    const t = performance.now();
    const rec = await e.fetchModel(base, base, {stall_timeout_s: 1});
    const ms = performance.now() - t;
    const model = (await (await caches.open('webllm/model')).keys()).map((r) => r.url).filter((u) => u.startsWith(base));
    await e.deleteModel(base);
    return {ms, cache: rec.cache, model};
  }, {base: flaky.base + 'silent/'});
  const sl = logOf('silent', true);
  check(sl.length === 2 && sl[0].silent && sl[1].status === 200 && silent.ms >= 1000 && silent.cache === 'cached' &&
    silent.model.some((u) => u.endsWith('params_shard_0.bin')),
  'no response to the shard\'s first request: aborted after stall_timeout_s (1 s) and asked again', {log: sl, ...silent});

  const down = await failedFetch(page, flaky.base + 'down/');
  const dl = logOf('down', true);
  check(down.err && down.err.code === 'NETWORK_ERROR' && down.err.reason === 'http_status' && down.err.status === 503 &&
    dl.length === 5 && !down.model.some((u) => u.includes('params_shard')),
  'a shard that is always 503: NETWORK_ERROR http_status 503 after 1 + 4 requests, nothing of it kept', {err: down.err, requests: dl.length, kept: down.model});
  return {busy, refuse, silent, down};
}
