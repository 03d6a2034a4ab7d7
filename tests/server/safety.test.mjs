// Safety: the API key (Bearer, all but /health), the CORS allowlist, the body limit, the header timeout, a
// warning for a non-loopback --host, static files with --web, and bad inputs answered 4xx naming the field.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import OpenAI from 'openai';
import { fakeServer, startServer, post, get, TINY, TINY_ID, FAKE_SERVE } from './harness.mjs';

const chat = (extra = {}) => ({ model: TINY_ID, messages: [{ role: 'user', content: 'hi' }], max_tokens: 2, ...extra });

test('--api-key: every route but /health needs "Authorization: Bearer KEY"', async () => {
  const srv = await fakeServer(['--api-key', 's3cret']);
  try {
    assert.equal((await get(`${srv.url}/health`)).status, 200);
    for (const p of ['/v1/models', '/metrics', '/v1/engine/status', '/v1/engine/events']) {
      const r = await get(`${srv.url}${p}`);
      assert.equal(r.status, 401, p);
      assert.equal(r.json.error.code, 'UNAUTHORIZED');
      assert.equal((await get(`${srv.url}${p}`, { authorization: 'Bearer wrong' })).status, 401, p);
    }
    assert.equal((await post(`${srv.url}/v1/chat/completions`, chat())).status, 401);
    const ok = await post(`${srv.url}/v1/chat/completions`, chat(), { authorization: 'Bearer s3cret' });
    assert.equal(ok.status, 200);
    const good = new OpenAI({ baseURL: `${srv.url}/v1`, apiKey: 's3cret', maxRetries: 0 });
    assert.equal((await good.chat.completions.create(chat())).choices[0].message.content, '0 1 ');
    const bad = new OpenAI({ baseURL: `${srv.url}/v1`, apiKey: 'nope', maxRetries: 0 });
    await assert.rejects(bad.models.list(), OpenAI.AuthenticationError);
  } finally {
    await srv.stop();
  }
});

test('CORS: off by default (a page origin is refused); --cors allows listed origins only', async () => {
  const plain = await fakeServer();
  try {
    const r = await get(`${plain.url}/v1/models`, { origin: 'http://example.com' });
    assert.equal(r.status, 403);
    assert.equal(r.headers.get('access-control-allow-origin'), null);
    assert.equal((await get(`${plain.url}/v1/models`)).status, 200);  // no Origin: not a page
  } finally {
    await plain.stop();
  }
  const srv = await fakeServer(['--cors', 'http://localhost:3000', '--cors', 'moz-extension://abc']);
  try {
    const pre = await fetch(`${srv.url}/v1/chat/completions`, {
      method: 'OPTIONS',
      headers: { origin: 'http://localhost:3000', 'access-control-request-method': 'POST',
                 'access-control-request-headers': 'content-type, x-session' },
    });
    assert.equal(pre.status, 204);
    assert.equal(pre.headers.get('access-control-allow-origin'), 'http://localhost:3000');
    assert.match(pre.headers.get('access-control-allow-headers'), /X-Session/);
    const ok = await post(`${srv.url}/v1/chat/completions`, chat(), { origin: 'moz-extension://abc' });
    assert.equal(ok.status, 200);
    assert.equal(ok.headers.get('access-control-allow-origin'), 'moz-extension://abc');
    const no = await post(`${srv.url}/v1/chat/completions`, chat(), { origin: 'http://evil.example' });
    assert.equal(no.status, 403);
    assert.equal(no.json.error.code, 'FORBIDDEN_ORIGIN');
  } finally {
    await srv.stop();
  }
});

test('bad inputs: 4xx naming the field, and the server stays healthy', async () => {
  const srv = await fakeServer(['--fake-context', '512', '--timeout', '1']);
  const u = `${srv.url}/v1/chat/completions`;
  try {
    const cases = [
      ['{"messages": [', 400, 'body'],
      ['[1, 2, 3]', 400, 'body'],
      ['', 400, 'body'],
      [Buffer.from([0x7b, 0x22, 0x6d, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d]), 400, 'body'],  // invalid UTF-8
      [JSON.stringify(chat({ messages: 'hi' })), 400, 'messages'],
      [JSON.stringify(chat({ temperature: 'hot' })), 400, 'temperature'],
      [JSON.stringify(chat({ max_tokens: 1e12 })), 400, 'max_tokens'],
      [JSON.stringify(chat({ max_tokens: -1 })), 400, 'max_tokens'],
      [JSON.stringify(chat({ model: 'gpt-4' })), 404, 'model'],
      [JSON.stringify(chat({ stream: 'yes' })), 400, 'stream'],
      [JSON.stringify(chat({ logit_bias: { abc: 1 } })), 400, 'logit_bias'],
      [JSON.stringify(chat({ seed: 1.5 })), 400, 'seed'],
      [JSON.stringify(chat({ messages: [{ role: 'user', content: 'word '.repeat(3000) }] })), 400, 'messages'],  // > context
    ];
    for (const [body, status, param] of cases) {

      const r = await fetch(u, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
      const j = await r.json();
      assert.equal(r.status, status, `${String(body).slice(0, 60)}: ${JSON.stringify(j)}`);
      assert.equal(j.error.param, param, JSON.stringify(j));
      assert.equal(typeof j.error.message, 'string');
    }
    // Header values are bytes: a session that is not UTF-8 is refused, naming the header.
    const latin1 = await post(u, chat(), { 'X-Session': 'caf\u00e9' });
    assert.equal(latin1.status, 400);
    assert.equal(latin1.json.error.param, 'X-Session');
    const long = await post(u, chat({ messages: [{ role: 'user', content: 'word '.repeat(3000) }] }));
    assert.equal(long.json.error.code, 'CONTEXT_TOO_LONG');
    // A body over the limit (8 MiB) is 413 before it is parsed.
    const big = await post(u, JSON.stringify(chat({ messages: [{ role: 'user', content: 'x'.repeat(9 << 20) }] })));
    assert.equal(big.status, 413);
    assert.equal(big.json.error.param, null);
    // Unknown routes and methods are JSON errors too.
    const nf = await get(`${srv.url}/v2/everything`);
    assert.equal(nf.status, 404);
    assert.equal(nf.json.error.code, 'NOT_FOUND');
    assert.ok((await get(u)).status >= 400);
    // A client that sends half a request header is dropped after --timeout; others are served meanwhile.
    const port = Number(new URL(srv.url).port);
    const slow = net.connect(port, '127.0.0.1');
    const closed = new Promise((r) => slow.on('close', r));
    slow.on('error', () => {});
    slow.resume();
    slow.write('POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n');
    const t0 = Date.now();
    assert.equal((await get(`${srv.url}/health`)).status, 200);
    await closed;
    const waited = Date.now() - t0;
    // httplib waits up to its keep-alive time (5 s) for a request to begin, then --timeout for the rest.
    assert.ok(waited >= 500 && waited < 5000 + 1000 + 2000, `closed after ${waited} ms`);
    assert.equal((await post(u, chat())).json.choices[0].message.content, '0 1 ');
  } finally {
    await srv.stop();
  }
});

test('a --host that is not loopback is warned about (127.0.0.2 stays on this machine)', async () => {
  const srv = await startServer({ bin: FAKE_SERVE, args: ['--host', '127.0.0.2', '--model', TINY] });
  try {
    assert.match(srv.stderr(), /warning: .*127\.0\.0\.2/);
    assert.equal((await get(`${srv.url}/health`)).status, 200);
  } finally {
    await srv.stop();
  }
});

test('--web serves a static folder beside the API', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ewgpu-web-'));
  fs.writeFileSync(path.join(dir, 'index.html'), '<!doctype html><title>ewgpu</title>');
  const srv = await fakeServer(['--web', dir]);
  try {
    const r = await get(`${srv.url}/index.html`);
    assert.equal(r.status, 200);
    assert.match(r.text, /<title>ewgpu<\/title>/);
    assert.equal((await get(`${srv.url}/v1/models`)).status, 200);
    // A page's module scripts come with its Origin: static files are served to any origin; the API still is not.
    const mod = await get(`${srv.url}/index.html`, { origin: 'http://127.0.0.1:1' });
    assert.equal(mod.status, 200);
    assert.equal(mod.headers.get('access-control-allow-origin'), null);
    assert.equal((await get(`${srv.url}/v1/models`, { origin: 'http://127.0.0.1:1' })).status, 403);
  } finally {
    await srv.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('flags are checked: a bad value names the flag and the server does not start', async () => {
  await assert.rejects(startServer({ args: ['--threads', 'many'] }), /--threads/);
  await assert.rejects(startServer({ args: ['--frobnicate', '1'] }), /--frobnicate/);
});
