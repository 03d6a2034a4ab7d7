// A bounded fuzz of request bodies: 10^4 mutations (seeded, so a failure replays) of valid chat, completion,
// batch, cancel and configure bodies, structural (values swapped for other types, extremes, deleted or
// unknown keys, deep nesting) and textual (truncated, bytes flipped, invalid UTF-8), plus mutated X-Session /
// X-Priority headers. Every answer must be 2xx or 4xx, never 5xx or a dropped connection, and the server
// must be healthy after. The fake backend with a 256-position context bounds what an accepted body generates.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { fakeServer, get, post, status, rowsBusy, until, TINY_ID } from './harness.mjs';

const N = Number(process.env.FUZZ_N ?? 10000);
const BUDGET_MS = Number(process.env.FUZZ_BUDGET_MS ?? 120000);
const SEED = Number(process.env.FUZZ_SEED ?? 13);

let srv;
before(async () => { srv = await fakeServer(['--fake-context', '256', '--threads', '48']); });
after(async () => { await srv.stop(); });

// xorshift32: deterministic per seed.
let s = SEED >>> 0 || 1;
const rnd = () => { s ^= s << 13; s >>>= 0; s ^= s >>> 17; s ^= s << 5; s >>>= 0; return s / 4294967296; };
const pick = (a) => a[Math.floor(rnd() * a.length)];

const msgs = [{ role: 'system', content: 'be brief' }, { role: 'user', content: 'hello' }];
const seeds = [
  ['/v1/chat/completions', { model: TINY_ID, messages: msgs, max_tokens: 4, temperature: 0.5, top_p: 0.9, seed: 7,
    stop: ['x'], logit_bias: { '5': 1 }, logprobs: true, top_logprobs: 2, priority: 'normal', session: 's',
    preemptible: false, stream: false, stream_options: { include_usage: true }, n: 1, user: 'u' }],
  ['/v1/chat/completions', { messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }], stream: true, max_tokens: 3 }],
  ['/v1/completions', { model: TINY_ID, prompt: 'Once', max_tokens: 3, logprobs: 1, echo: false, stream: true }],
  ['/v1/engine/batch', { requests: [{ messages: msgs, max_tokens: 2 }, { prompt: 'x', max_tokens: 2 }], stream: false }],
  ['/v1/engine/cancel', { session: 'nobody' }],
  ['/v1/engine/cancel', { id: 999999 }],
  ['/v1/engine/configure', { decode_steps: 4, task_share: 0.5 }],
];

const weird = () => pick([
  null, true, false, 0, -1, 1.5, 1e308, -1e308, 2 ** 53, 2 ** 64, Number.MAX_SAFE_INTEGER, '', 'x', 'interactive',
  'background', '\u0000', '\ud83d\ude00', 'é'.repeat(300), 'a'.repeat(5000), [], [1], ['a', 'b'], {}, { a: 1 },
  { type: 'json_schema' }, [{ role: 'user', content: 'x' }], [{ role: 'user' }], [[[[[]]]]],
]);
const keys = ['model', 'messages', 'prompt', 'max_tokens', 'max_completion_tokens', 'temperature', 'top_p', 'top_k',
  'stop', 'seed', 'stream', 'stream_options', 'logit_bias', 'logprobs', 'top_logprobs', 'n', 'tools', 'tool_choice',
  'response_format', 'priority', 'session', 'task', 'preemptible', 'requests', 'id', 'rows', 'decode_steps',
  'task_share', 'frequency_penalty', 'presence_penalty', '__proto__', 'constructor', '', 'ünïcode', 'content', 'role'];

function mutateValue(v, depth = 0) {
  if (depth > 4 || rnd() < 0.3) return weird();
  if (Array.isArray(v)) {
    const a = v.map((x) => (rnd() < 0.3 ? mutateValue(x, depth + 1) : x));
    if (rnd() < 0.2) a.push(weird());
    if (rnd() < 0.2) a.splice(0, 1);
    return a;
  }
  if (v && typeof v === 'object') return mutateObject(v, depth + 1);
  return weird();
}

function mutateObject(o, depth = 0) {
  const out = { ...o };
  const n = 1 + Math.floor(rnd() * 3);
  for (let i = 0; i < n; i++) {
    const ks = Object.keys(out);
    const r = rnd();
    if (r < 0.25 && ks.length) delete out[pick(ks)];
    else if (r < 0.45) out[pick(keys)] = weird();
    else if (ks.length) { const k = pick(ks); out[k] = mutateValue(out[k], depth); }
  }
  if (rnd() < 0.02) { let d = out; for (let i = 0; i < 200; i++) d = d.nest = {}; }  // deep nesting
  return out;
}

function mutateText(t) {
  const b = Buffer.from(t);
  const r = rnd();
  if (r < 0.3) return b.subarray(0, Math.floor(rnd() * b.length));
  if (r < 0.6) { const c = Buffer.from(b); for (let i = 0; i < 3; i++) c[Math.floor(rnd() * c.length)] = Math.floor(rnd() * 256); return c; }
  if (r < 0.8) { const at = Math.floor(rnd() * b.length); return Buffer.concat([b.subarray(0, at), Buffer.from([0xff, 0xc3]), b.subarray(at)]); }
  return Buffer.from(t.replace(/[{}\[\]",:]/, pick(['', '{', '"', '\\', ']'])));
}

function makeCase() {
  const [path, body] = pick(seeds);
  const headers = { 'content-type': 'application/json' };
  if (rnd() < 0.1) headers['x-session'] = pick(['a', '', 'é', 'x'.repeat(300)]);
  if (rnd() < 0.1) headers['x-priority'] = pick(['interactive', 'background', 'normal', 'urgent', '']);
  const text = JSON.stringify(mutateObject(body));
  return { path, headers, body: rnd() < 0.3 ? mutateText(text) : text };
}

test(`fuzz: ${N} mutated bodies answer 2xx/4xx and the server stays healthy`, async () => {
  const cases = Array.from({ length: N }, makeCase);
  const counts = {};
  const bad = [];
  const t0 = Date.now();
  let next = 0;
  await Promise.all(Array.from({ length: 16 }, async () => {
    while (next < cases.length && Date.now() - t0 < BUDGET_MS) {
      const c = cases[next++];
      let st;
      try {
        const res = await fetch(`${srv.url}${c.path}`, { method: 'POST', headers: c.headers, body: c.body,
                                                          signal: AbortSignal.timeout(20000) });
        await res.arrayBuffer();
        st = res.status;
      } catch (e) {
        st = `error ${e.cause?.code ?? e.message}`;
      }
      counts[st] = (counts[st] ?? 0) + 1;
      if (!(typeof st === 'number' && st >= 200 && st < 500) && bad.length < 5) bad.push({ st, ...c, body: String(c.body).slice(0, 300) });
    }
  }));
  const done = Object.values(counts).reduce((a, b) => a + b, 0);
  console.log(`fuzz: ${done} bodies in ${((Date.now() - t0) / 1000).toFixed(1)} s, statuses ${JSON.stringify(counts)}`);
  assert.deepEqual(bad, []);
  assert.equal(done, N, 'every body sent within the budget');
  assert.ok((counts[200] ?? 0) > 100 && (counts[400] ?? 0) > 1000, JSON.stringify(counts));
  assert.equal((await get(`${srv.url}/health`)).status, 200);
  await until(async () => rowsBusy(await status(srv.url)) === 0, { timeoutMs: 20000, everyMs: 20 });
  await post(`${srv.url}/v1/engine/configure`, { decode_steps: 16, rows: 4, task_share: 0.5 });
  const r = await post(`${srv.url}/v1/chat/completions`, { messages: msgs, max_tokens: 3 });
  assert.equal(r.json.choices[0].message.content, '0 1 2 ');
});
