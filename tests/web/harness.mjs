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
// loopback only). Resolves to {server, base, hits}: hits counts the requests per path.
export async function serve(webDir, folder) {
  const hits = new Map();
  const server = http.createServer((req, res) => {
    const url = new URL(req.url, 'http://x');
    hits.set(url.pathname, (hits.get(url.pathname) || 0) + 1);
    let file;
    if (url.pathname.startsWith('/fixture/')) file = path.join(folder, path.basename(url.pathname));
    else file = path.join(webDir, path.normalize(url.pathname === '/' ? '/index.html' : url.pathname));
    if (!file.startsWith(webDir) && !file.startsWith(folder)) { res.writeHead(403); res.end(); return; }
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
