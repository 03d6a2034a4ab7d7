// Starts a real server on a free loopback port for the node tests and stops it after. The fake-backend server
// (EWGPU_FAKE_SERVE) generates "0 1 2 ..." with no GPU; EWGPU_BIN is the real `ewgpu`.
import { spawn } from 'node:child_process';
import http from 'node:http';
import path from 'node:path';

export const SOURCE_DIR = process.env.EWGPU_SOURCE_DIR ?? path.resolve(import.meta.dirname, '../..');
export const TINY = path.join(SOURCE_DIR, 'tests/fixtures/qwen3_5_tiny/q4f16_1');
export const TINY_ID = 'qwen3_5_tiny-q4f16_1';
const BUILD = path.join(SOURCE_DIR, 'build');
export const FAKE_SERVE = process.env.EWGPU_FAKE_SERVE ?? path.join(BUILD, 'ewgpu_fake_serve');
export const EWGPU = process.env.EWGPU_BIN ?? path.join(BUILD, 'ewgpu');

// Spawns `bin args --port 0` and resolves once it listens (and, with models, once they are loaded).
export async function startServer({ bin = FAKE_SERVE, args = [], timeoutMs = 120000 } = {}) {
  const proc = spawn(bin, [...args, '--port', '0'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '', err = '';
  proc.stderr.on('data', (d) => { err += d; });
  const wantReady = args.includes('--model');
  const url = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start in ${timeoutMs} ms: ${out}${err}`)), timeoutMs);
    let base = null;
    proc.stdout.on('data', (d) => {
      out += d;
      const m = out.match(/listening on (http:\/\/[^\s]+)/);
      if (m) base = m[1];
      if (base && (!wantReady || /ewgpu serve: ready/.test(out))) {
        clearTimeout(timer);
        resolve(base);
      }
    });
    proc.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`server exited (${code}) before it was ready: ${out}${err}`));
    });
  });
  const stop = async () => {
    if (proc.exitCode !== null) return proc.exitCode;
    const done = new Promise((r) => proc.on('exit', (code, sig) => r(code ?? sig)));
    proc.kill('SIGTERM');
    const t = setTimeout(() => proc.kill('SIGKILL'), 10000);
    const code = await done;
    clearTimeout(t);
    return code;
  };
  return { url, proc, stop, stderr: () => err };
}

export async function fakeServer(extra = []) {
  return startServer({ args: ['--model', TINY, '--quiet', ...extra] });
}

// fetch with a JSON body; resolves { status, headers, json, text }.
export async function post(url, body, headers = {}) {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  let json = null;
  try { json = JSON.parse(text); } catch {}
  return { status: res.status, headers: res.headers, json, text };
}

export async function get(url, headers = {}) {
  const res = await fetch(url, { headers });
  const text = await res.text();
  let json = null;
  try { json = JSON.parse(text); } catch {}
  return { status: res.status, headers: res.headers, json, text };
}

// Reads an SSE response and returns its data payloads (parsed JSON, or the raw string for [DONE]).
export async function sse(url, body, headers = {}) {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  const events = [];
  for (const block of text.split('\n\n')) {
    const lines = block.split('\n');
    const ev = (lines.find((l) => l.startsWith('event: ')) ?? '').slice(7);
    const data = lines.filter((l) => l.startsWith('data: ')).map((l) => l.slice(6)).join('\n');
    if (!data) continue;
    let parsed = data;
    try { parsed = JSON.parse(data); } catch {}
    events.push({ event: ev, data: parsed });
  }
  return { status: res.status, events, text };
}

// Polls `fn` until it returns truthy, every `everyMs`, for at most `timeoutMs`; returns the value or throws.
export async function until(fn, { timeoutMs = 10000, everyMs = 2 } = {}) {
  const t0 = Date.now();
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() - t0 > timeoutMs) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

export async function status(base) {
  return (await get(`${base}/v1/engine/status`)).json;
}

export function rowsBusy(st) {
  return st.state.models.reduce((n, m) => n + m.rowsBusy, 0);
}

// A raw HTTP request whose socket the caller can destroy (the disconnect tests).
export function rawRequest(base, pathname, body) {
  const u = new URL(base);
  return http.request({ host: u.hostname, port: u.port, path: pathname, method: 'POST',
    headers: { 'content-type': 'application/json' } }, () => {}).end(JSON.stringify(body));
}
