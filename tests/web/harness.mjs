// What the browser test and the browser benchmark share: a static server for build/web and one model folder
// (under /fixture/), and Debian's chromium with WebGPU on SwiftShader through playwright-core.
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';

export const CHROMIUM_FLAGS = ['--no-sandbox', '--disable-quic', '--no-first-run', '--disable-background-networking',
  '--disable-component-update', '--disable-sync', '--enable-unsafe-webgpu', '--enable-features=Vulkan',
  '--use-webgpu-adapter=swiftshader', '--enable-unsafe-swiftshader'];

const TYPES = {'.js': 'text/javascript', '.mjs': 'text/javascript', '.wasm': 'application/wasm', '.html': 'text/html',
  '.json': 'application/json', '.ts': 'text/plain'};

// Serves webDir at / and the folder's files at /fixture/<name> (the "remote" base URL of the model-source checks:
// loopback only); more = {prefix: folder} serves further folders at /<prefix>/<name>. Resolves to
// {server, base, hits}: hits counts the requests per path.
export async function serve(webDir, folder, more = {}) {
  const hits = new Map();
  const folders = {fixture: folder, ...more};
  const server = http.createServer((req, res) => {
    const url = new URL(req.url, 'http://x');
    hits.set(url.pathname, (hits.get(url.pathname) || 0) + 1);
    const prefix = url.pathname.split('/')[1];
    let file;
    if (folders[prefix] && url.pathname.startsWith(`/${prefix}/`)) file = path.join(folders[prefix], path.basename(url.pathname));
    else file = path.join(webDir, path.normalize(url.pathname === '/' ? '/index.html' : url.pathname));
    if (!file.startsWith(webDir) && !Object.values(folders).some((f) => file.startsWith(f))) { res.writeHead(403); res.end(); return; }
    fs.readFile(file, (err, data) => {
      if (err) { res.writeHead(404); res.end(); return; }
      res.writeHead(200, {'Content-Type': TYPES[path.extname(file)] || 'application/octet-stream', 'Cache-Control': 'no-store'});
      res.end(data);
    });
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return {server, hits, base: `http://127.0.0.1:${server.address().port}/`};
}

// A browser context; with a profile folder, a persistent one (Chromium's compiled-shader cache then survives
// between runs: SwiftShader compiles each pipeline for seconds). close() ends everything.
export async function openBrowser(pw, chromium, profile) {
  const launch = {executablePath: chromium, headless: true, args: CHROMIUM_FLAGS, viewport: {width: 1000, height: 820}};
  const plain = profile ? null : await pw.chromium.launch(launch);
  const context = plain ? await plain.newContext({viewport: launch.viewport})
    : await pw.chromium.launchPersistentContext(path.resolve(profile), launch);
  return {context, close: async () => { await context.close(); if (plain) await plain.close(); }};
}

// A second "remote" origin for the resume checks: serves the folder's files at /<mode>/<name> on loopback (port 0,
// CORS open, Content-Range exposed). Each mode's first request for a shard (params_shard_*) breaks: the headers
// promise the whole file, half of it is sent, then the socket is destroyed (in mode stall: kept open, silent).
// After that:
//   range, stall: a `Range: bytes=N-` request gets 206 with the rest;
//   norange:      Range is ignored, 200 with the whole file;
//   corrupt:      200 with the whole file, one byte flipped (its md5 no longer matches the manifest).
// Modes whose first requests fail before any response (nothing is cut; entries have refused / silent set):
//   busy:    the first two requests of every file get 503, then the file is served;
//   refuse:  the shard's first two requests have their socket closed before any response, then it is served;
//   silent:  the shard's first request gets no response at all (the socket held open), then it is served;
//   down:    every request for the shard gets 503.
// Resolves to {server, base, log, close}: log lists every request as {mode, name, range, status, cut}.
export async function serveFlaky(folder) {
  const log = [];
  const cut = new Set();
  const held = [];
  const seen = new Map();  // `${mode}/${name}` -> requests so far
  const server = http.createServer((req, res) => {
    const [, mode, name] = new URL(req.url, 'http://x').pathname.split('/');
    const entry = {mode, name, range: req.headers.range || null, status: 0, cut: false};
    log.push(entry);
    const headers = {'Access-Control-Allow-Origin': '*', 'Access-Control-Expose-Headers': 'Content-Range, Content-Length',
      'Cache-Control': 'no-store', 'Content-Type': 'application/octet-stream'};
    const send = (status, body, extra) => {
      entry.status = status;
      res.writeHead(status, {...headers, ...extra, 'Content-Length': body.length});
      res.end(body);
    };
    if (req.method === 'OPTIONS') {
      entry.status = 204;
      res.writeHead(204, {...headers, 'Access-Control-Allow-Headers': 'Range'});
      res.end();
      return;
    }
    const modes = ['range', 'stall', 'norange', 'corrupt', 'busy', 'refuse', 'silent', 'down'];
    if (!modes.includes(mode) || !name || name.includes('..')) { send(404, Buffer.alloc(0)); return; }
    let data;
    try { data = fs.readFileSync(path.join(folder, name)); } catch (e) { send(404, Buffer.alloc(0)); return; }
    const nth = (seen.get(`${mode}/${name}`) || 0) + 1;
    seen.set(`${mode}/${name}`, nth);
    const shard = /^params_shard_/.test(name);
    if ((mode === 'busy' && nth <= 2) || (mode === 'down' && shard)) { send(503, Buffer.alloc(0)); return; }
    if (mode === 'refuse' && shard && nth <= 2) {
      entry.refused = true;
      req.socket.destroy();
      return;
    }
    if (mode === 'silent' && shard && nth === 1) {
      entry.silent = true;
      held.push(req.socket);
      return;
    }
    if (shard && ['range', 'stall', 'norange', 'corrupt'].includes(mode) && !cut.has(mode)) {
      cut.add(mode);
      entry.status = 200;
      entry.cut = true;
      res.writeHead(200, {...headers, 'Content-Length': data.length});
      res.write(data.subarray(0, data.length >> 1));
      if (mode === 'stall') held.push(res.socket);
      else setTimeout(() => res.socket.destroy(), 300);  // the half has reached the browser by then
      return;
    }
    if (mode === 'corrupt' && /^params_shard_/.test(name)) {
      data = Buffer.from(data);
      data[data.length >> 1] ^= 0xff;
    }
    const m = (mode === 'range' || mode === 'stall') && /^bytes=(\d+)-$/.exec(req.headers.range || '');
    if (m && Number(m[1]) < data.length) {
      const from = Number(m[1]);
      send(206, data.subarray(from), {'Content-Range': `bytes ${from}-${data.length - 1}/${data.length}`});
      return;
    }
    send(200, data);
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const close = () => {
    for (const s of held) s.destroy();
    server.close();
  };
  return {server, log, close, base: `http://127.0.0.1:${server.address().port}/`};
}
