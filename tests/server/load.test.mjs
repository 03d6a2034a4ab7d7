// A bounded load test: 64 clients x 20 requests (every other one streamed) against one server. Zero lost or
// duplicated responses (every completion id and engine job id unique, every text whole), the server healthy
// after, and the throughput and latency printed. The fake backend by default (CI); LOAD_MODEL=DIR runs the
// same load on a real model through `ewgpu serve` (LOAD_ARGS adds flags, e.g. "--adapter swiftshader"; LOAD_ROWS its
// decode rows, 8 by default): CTest server_load_model runs the llama fixture with 32 rows.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, get, status, rowsBusy, TINY, FAKE_SERVE, EWGPU } from './harness.mjs';

const CLIENTS = Number(process.env.LOAD_CLIENTS ?? 64), PER_CLIENT = Number(process.env.LOAD_PER_CLIENT ?? 20);
const MAX_TOKENS = Number(process.env.LOAD_MAX_TOKENS ?? 8);
const REAL = process.env.LOAD_MODEL;
const ROWS = Number(process.env.LOAD_ROWS ?? 8);
const BUDGET_MS = Number(process.env.LOAD_BUDGET_MS ?? 120000);

let srv, model;
before(async () => {
  const args = [...(REAL ? ['serve'] : []), '--model', REAL ?? TINY, '--rows', String(ROWS), '--threads', String(CLIENTS + 32), '--quiet'];
  if (REAL) args.push(...(process.env.LOAD_ARGS ?? '').split(' ').filter(Boolean));
  else args.push('--fake-step-ms', '2');
  srv = await startServer({ bin: REAL ? EWGPU : FAKE_SERVE, args, timeoutMs: 300000 });
  model = (await get(`${srv.url}/v1/models`)).json.data[0].id;
});
after(async () => { await srv.stop(); });

async function one(c, i) {
  const stream = (c + i) % 2 === 1;
  // On a real model a short raw prompt (/v1/completions) keeps the prefill small; the fake takes chat.
  const route = REAL ? 'completions' : 'chat/completions';
  const body = REAL ? { model, prompt: `client ${c} request ${i}:`, max_tokens: MAX_TOKENS, temperature: 0, stream }
                    : { model, messages: [{ role: 'user', content: `client ${c} request ${i}` }], max_tokens: MAX_TOKENS,
                        temperature: 0, stream };
  const t0 = performance.now();
  const res = await fetch(`${srv.url}/v1/${route}`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body),
  });
  const text = await res.text();
  const ms = performance.now() - t0;
  assert.equal(res.status, 200, text);
  if (!stream) {
    const j = JSON.parse(text);
    const ch = j.choices[0];
    return { ms, id: j.id, job: j.ewgpu.job, text: ch.message?.content ?? ch.text, reason: ch.finish_reason };
  }
  const frames = text.split('\n\n').filter((f) => f.startsWith('data: ')).map((f) => f.slice(6));
  assert.equal(frames.at(-1), '[DONE]');
  const chunks = frames.slice(0, -1).map((f) => JSON.parse(f));
  assert.ok(chunks.every((ch) => ch.id === chunks[0].id));
  const fin = chunks.find((ch) => ch.choices[0]?.finish_reason);
  return { ms, id: chunks[0].id, job: fin.ewgpu.job, reason: fin.choices[0].finish_reason,
           text: chunks.map((ch) => ch.choices[0]?.delta?.content ?? ch.choices[0]?.text ?? '').join('') };
}

test(`load: ${CLIENTS} clients x ${PER_CLIENT} requests, none lost or duplicated`, async () => {
  const before = await status(srv.url);
  const t0 = performance.now();
  const deadline = Date.now() + BUDGET_MS;
  const results = await Promise.all(Array.from({ length: CLIENTS }, async (_, c) => {
    const mine = [];
    for (let i = 0; i < PER_CLIENT && Date.now() < deadline; i++) mine.push(await one(c, i));
    return mine;
  }));
  const wall = performance.now() - t0;
  const all = results.flat();
  assert.equal(all.length, CLIENTS * PER_CLIENT, 'every request answered within the budget');
  assert.equal(new Set(all.map((r) => r.id)).size, all.length, 'completion ids unique');
  assert.equal(new Set(all.map((r) => r.job)).size, all.length, 'engine jobs unique');
  if (!REAL) {
    const expected = Array.from({ length: MAX_TOKENS }, (_, k) => `${k} `).join('');
    for (const r of all) {
      assert.equal(r.text, expected);
      assert.equal(r.reason, 'length');
    }
  } else {
    for (const r of all) assert.ok(['stop', 'length'].includes(r.reason), r.reason);
  }
  const keyed = new Map(results.flatMap((mine, c) => mine.map((r, i) => [`${c}/${i}`, r])));
  const lat = all.map((r) => r.ms).sort((a, b) => a - b);
  const pct = (p) => lat[Math.min(lat.length - 1, Math.floor(p * lat.length))];
  console.log(`load (${REAL ? 'model ' + model : 'fake backend, 2 ms/submission'}, rows ${ROWS}, max_tokens ${MAX_TOKENS}): ` +
              `${all.length} requests in ${(wall / 1000).toFixed(2)} s = ${(all.length / (wall / 1000)).toFixed(1)} req/s; ` +
              `latency p50 ${pct(0.5).toFixed(1)} ms, p99 ${pct(0.99).toFixed(1)} ms, max ${lat.at(-1).toFixed(1)} ms`);
  // Healthy after: nothing queued or running, every job counted once, and a new request still works.
  assert.equal((await get(`${srv.url}/health`)).status, 200);
  const st = await status(srv.url);
  assert.equal(rowsBusy(st), 0);
  assert.deepEqual(st.state.queued, { interactive: 0, normal: 0, background: 0 });
  assert.equal(st.state.jobs.completed - before.state.jobs.completed, all.length);
  assert.equal(st.server.streamsOpen, 0);
  const m = (await get(`${srv.url}/metrics`)).text;
  const ok = Number(m.match(new RegExp(`ewgpu_http_requests_total\\{route="POST /v1/${REAL ? 'completions' : 'chat/completions'}",code="200"\\} (\\d+)`))[1]);
  assert.equal(ok, all.length);
  if (REAL) {
    // Greedy text under load equals the same request alone (8 of them, spread over the clients).
    for (let k = 0; k < 8; k++) {
      const c = (k * 9) % CLIENTS, i = (k * 7) % PER_CLIENT;
      const alone = await one(c, i);
      assert.equal(keyed.get(`${c}/${i}`).text, alone.text, `client ${c} request ${i}: under load vs alone`);
    }
  }
});
