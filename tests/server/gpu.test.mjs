// `ewgpu serve` on a real tiny model (tests/fixtures/qwen3_5_tiny/q4f16_1; SwiftShader where there is no GPU),
// with 4 rows: greedy streamed text == greedy text not streamed (chat and completions), the same seed gives the
// same text, 16 concurrent greedy requests each give the text the same request gives alone, a stop string cuts
// the text where it occurs; a client that disconnects frees its row within about one decode submission
// (measured against the model's own step time); and `ewgpu chat` keeps a multi-turn session with /system and /reset.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { spawn } from 'node:child_process';
import OpenAI from 'openai';
import { startServer, EWGPU, TINY, post, status, rowsBusy, until } from './harness.mjs';

const ADAPTER = process.env.EWGPU_ADAPTER ?? 'swiftshader';
let srv, client, model;
before(async () => {
  srv = await startServer({ bin: EWGPU, args: ['serve', '--model', TINY, '--adapter', ADAPTER, '--rows', '4', '--quiet'],
                            timeoutMs: 300000 });
  client = new OpenAI({ baseURL: `${srv.url}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 300000 });
  model = (await client.models.list()).data[0].id;
});
after(async () => { await srv.stop(); });

const prompt = (i) => `Story ${i}: once`;
async function complete(p, extra = {}) {
  const r = await client.completions.create({ model, prompt: p, max_tokens: 4, temperature: 0, ...extra });
  return r.choices[0].text;
}
async function completeStreamed(p, extra = {}) {
  const s = await client.completions.create({ model, prompt: p, max_tokens: 4, temperature: 0, stream: true, ...extra });
  let text = '';
  for await (const c of s) text += c.choices[0]?.text ?? '';
  return text;
}

test('greedy: streamed text == text not streamed (completions and chat)', async () => {
  for (const i of [1]) {
    const whole = await complete(prompt(i));
    assert.ok(whole.length > 0);
    assert.equal(await completeStreamed(prompt(i)), whole);
  }
  const messages = [{ role: 'user', content: 'Hi' }];
  const whole = await client.chat.completions.create({ model, messages, max_tokens: 4, temperature: 0 });
  const s = await client.chat.completions.create({ model, messages, max_tokens: 4, temperature: 0, stream: true });
  let text = '';
  for await (const c of s) text += c.choices[0]?.delta?.content ?? '';
  assert.equal(text, whole.choices[0].message.content);
  assert.equal(whole.usage.completion_tokens, 4);
});

test('the same seed gives the same text', async () => {
  const opts = { temperature: 1.0, top_p: 1, seed: 1234 };
  const a = await complete(prompt(3), opts);
  const b = await complete(prompt(3), opts);
  assert.equal(a, b);
  assert.equal(await completeStreamed(prompt(3), opts), a);
});

test('16 concurrent greedy requests each give the text the same request gives alone', async () => {
  const alone = [];
  for (let i = 0; i < 16; i++) alone.push(await complete(prompt(10 + i)));
  const together = await Promise.all(Array.from({ length: 16 }, (_, i) => complete(prompt(10 + i))));
  assert.deepEqual(together, alone);
});

test('a stop string ends the text before it, with finish_reason stop', async () => {
  const r = await client.completions.create({ model, prompt: prompt(4), max_tokens: 8, temperature: 0 });
  const text = r.choices[0].text;
  // A stop string from the middle of the greedy text (past its first character).
  const cut = Math.max(1, Math.floor(text.length / 2));
  const stop = text.slice(cut, cut + 2);
  const s = await client.completions.create({ model, prompt: prompt(4), max_tokens: 8, temperature: 0, stop: [stop] });
  assert.equal(s.choices[0].finish_reason, 'stop');
  assert.equal(s.choices[0].text, text.slice(0, text.indexOf(stop)));
});

// One decode submission is min(K steps, as many as fit the engine's 8 ms cap, at least one): on SwiftShader a
// step of this model takes tens of ms, so a submission is one step. A disconnect is seen within the server's
// 10 ms poll; the row is free once the submission in flight ends.
test('a disconnect frees its row within about one decode submission (real model)', async () => {
  const lone = await post(`${srv.url}/v1/completions`, { model, prompt: prompt(90), max_tokens: 17, temperature: 0 });
  assert.equal(lone.status, 200, lone.text);
  const stepMs = lone.json.ewgpu.timings.decode_ms / (lone.json.usage.completion_tokens - 1);
  const submissionMs = Math.max(stepMs, Math.min(8, 16 * stepMs));
  const trials = [];
  for (const stream of [true, false, true, false]) {
    let socket, sawData = false;
    const req = http.request(`${srv.url}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' } },
      (res) => res.on('data', () => { sawData = true; }));
    req.on('socket', (so) => { socket = so; });
    req.on('error', () => {});
    req.end(JSON.stringify({ model, prompt: prompt(91), max_tokens: 2000, temperature: 0, stream }));
    await until(async () => rowsBusy(await status(srv.url)) === 1, { timeoutMs: 60000 });
    // Past the prefill: a streamed reply has sent text; one not streamed has had its first token's time.
    if (stream) await until(async () => sawData, { timeoutMs: 60000 });
    else await new Promise((r) => setTimeout(r, 5 * stepMs));
    const t0 = performance.now();
    socket.destroy();
    await until(async () => rowsBusy(await status(srv.url)) === 0, { timeoutMs: 60000, everyMs: 1 });
    trials.push(performance.now() - t0);
  }
  const sorted = [...trials].sort((a, b) => a - b);
  const median = (sorted[1] + sorted[2]) / 2;
  console.log(`# real model: decode step ${stepMs.toFixed(1)} ms, submission ~${submissionMs.toFixed(1)} ms; ` +
              `disconnect -> row free (ms) [${trials.map((x) => x.toFixed(1)).join(', ')}], median ` +
              `${median.toFixed(1)} ms = ${(median / submissionMs).toFixed(2)} submissions`);
  // The submission in flight, the 10 ms poll and the status requests' own time; generous for a loaded machine.
  assert.ok(median <= 2 * submissionMs + 60, `median ${median.toFixed(1)} ms for a ${submissionMs.toFixed(1)} ms submission`);
  const st = await status(srv.url);
  assert.equal(rowsBusy(st), 0);
});

test('ewgpu chat: Ctrl-C stops the reply and keeps the session; /system, /reset; exit at end of input', async () => {
  const p = spawn(EWGPU, ['chat', TINY, '--adapter', ADAPTER, '--max-tokens', '2000', '--temperature', '0'],
                  { stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '';
  p.stdout.on('data', (d) => { out += d; });
  const exited = new Promise((r) => {
    const t = setTimeout(() => p.kill('SIGKILL'), 240000);
    p.on('exit', (c) => { clearTimeout(t); r(c); });
  });
  const waitFor = async (pred) => { const t0 = Date.now(); while (!pred() && Date.now() - t0 < 200000) await new Promise((r) => setTimeout(r, 20)); };
  await waitFor(() => /chatting with .*\n/.test(out));
  const banner = out.length;
  p.stdin.write('Hello\n');
  await waitFor(() => out.length > banner);  // the reply has begun (2000 tokens would take minutes)
  p.kill('SIGINT');
  await waitFor(() => out.includes('[stopped]'));
  p.stdin.end('/system You are terse.\n/reset\n/nope\n');
  const code = await exited;
  assert.equal(code, 0, out);
  assert.match(out, /chatting with qwen3_5_tiny-q4f16_1/);
  assert.match(out, /\[stopped\]\n/);
  assert.match(out, /\(system message set\)/);
  assert.match(out, /\(history cleared\)/);
  assert.match(out, /\(unknown command \/nope/);
});
