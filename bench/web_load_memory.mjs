// Peak memory of the browser build while it loads a large model folder (docs/web.md, "Memory while loading").
// Serves build/web and FOLDER on loopback, opens the demo page in headless Chromium (SwiftShader) with a fresh
// profile, and samples the RSS of every Chromium process from /proc every 100 ms (grouped by --type: browser,
// renderer — the page and its worker, i.e. JS + wasm —, gpu-process — SwiftShader's "VRAM" lives here —, utility).
//   phase fetch:  engine.fetchModel(id, <base URL>): every file fetched into Cache Storage, md5-checked;
//   phase load:   after a page reload (a new worker and wasm heap), engine.load(id, {upload_only: true}): the
//                 folder mounted from Cache Storage and every weight written to GPU buffers; pipelines are not
//                 built (a 1B model's pipelines take minutes on SwiftShader), so this measures the load's memory.
// Prints one JSON document. Not a test (too slow for CI).
//   node bench/web_load_memory.mjs --folder build/big/llama1b [--web build/web] [--chromium /usr/bin/chromium]
import fs from 'node:fs';
import path from 'node:path';
import {createRequire} from 'node:module';
import {openBrowser, serve} from '../tests/web/harness.mjs';

const args = Object.fromEntries(process.argv.slice(2).reduce((acc, a, i, all) => {
  if (a.startsWith('--')) acc.push([a.slice(2), all[i + 1]]);
  return acc;
}, []));
const webDir = path.resolve(args.web || 'build/web');
const folder = path.resolve(args.folder || 'build/big/llama1b');
const chromium = args.chromium || '/usr/bin/chromium';
const pw = createRequire(import.meta.url)('playwright-core');
const MiB = 1048576;

const files = fs.readdirSync(folder);
const folderBytes = files.reduce((n, f) => n + fs.statSync(path.join(folder, f)).size, 0);

// Chromium's processes: the descendants of this node process whose cmdline is chromium's.
function chromiumProcs() {
  const out = [];
  for (const d of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      // Chromium rewrites a child's argv into one space-separated string (its process title).
      const cmd = fs.readFileSync(`/proc/${d}/cmdline`, 'utf8').split(/[\0 ]/);
      if (!cmd[0] || !/chromium|chrome/.test(path.basename(cmd[0]))) continue;
      const status = fs.readFileSync(`/proc/${d}/status`, 'utf8');
      const ppid = Number(/PPid:\s+(\d+)/.exec(status)[1]);
      const rss = Number((/VmRSS:\s+(\d+) kB/.exec(status) || [0, 0])[1]) * 1024;
      // PSS: shared pages (libraries, shared memory between processes) divided among their users, so a sum over
      // processes counts each page once.
      let pss = 0;
      try { pss = Number((/Pss:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${d}/smaps_rollup`, 'utf8')) || [0, 0])[1]) * 1024; } catch (e) { /* no rollup */ }
      const t = cmd.find((a) => a.startsWith('--type='));
      out.push({pid: Number(d), ppid, rss, pss, type: t ? t.slice(7) : 'browser'});
    } catch (e) { /* gone */ }
  }
  return out;
}

class Sampler {
  constructor() { this.timer = null; }
  sample() {
    const rss = {}, pss = {};
    let total = 0;
    for (const p of chromiumProcs()) {
      rss[p.type] = (rss[p.type] || 0) + p.rss;
      pss[p.type] = (pss[p.type] || 0) + p.pss;
      total += p.pss;
    }
    for (const [k, v] of Object.entries(rss)) this.peakRss[k] = Math.max(this.peakRss[k] || 0, v);
    for (const [k, v] of Object.entries(pss)) this.peakPss[k] = Math.max(this.peakPss[k] || 0, v);
    this.peakTotal = Math.max(this.peakTotal, total);
    this.last = pss;
  }
  start() {
    this.peakRss = {};
    this.peakPss = {};
    this.peakTotal = 0;
    this.sample();
    this.timer = setInterval(() => this.sample(), 100);
  }
  stop() {
    clearInterval(this.timer);
    this.sample();
    const mib = (o) => Object.fromEntries(Object.entries(o).map(([k, v]) => [k, Math.round(v / MiB)]));
    return {peak_rss_mib: mib(this.peakRss), peak_pss_mib: mib(this.peakPss), peak_total_pss_mib: Math.round(this.peakTotal / MiB),
      end_pss_mib: mib(this.last)};
  }
}

const {server, base} = await serve(webDir, folder);
const {context, close} = await openBrowser(pw, chromium, null);
const report = {folder, folder_mib: Math.round(folderBytes / MiB), files: files.length};
try {
  const page = await context.newPage();
  page.on('pageerror', (e) => console.error(`[page error] ${e.message}`));
  await page.goto(base + 'index.html');
  await page.waitForFunction(() => document.body.dataset.ready, null, {timeout: 120000});
  const s = new Sampler();
  s.start();
  report.idle = s.stop();

  s.start();
  let t = Date.now();
  const fetched = await page.evaluate(async (u) => window.demo.engine.fetchModel('big', u), base + 'fixture/');
  report.fetch = {ms: Date.now() - t, weight_mib: Math.round(fetched.weight_bytes / MiB), ...s.stop(),
    wasm_heap_mib: Math.round((await page.evaluate(() => window.demo.engine.memory())).wasm_heap_bytes / MiB)};

  await page.reload();
  await page.waitForFunction(() => document.body.dataset.ready, null, {timeout: 120000});
  await new Promise((r) => setTimeout(r, 1000));
  s.start();
  t = Date.now();
  const info = await page.evaluate(async () => window.demo.engine.load('big', {upload_only: true}));
  report.load = {ms: Date.now() - t, stages: info.stages, weight_mib: Math.round(info.weight_bytes / MiB), ...s.stop(),
    wasm_heap_mib: Math.round((await page.evaluate(() => window.demo.engine.memory())).wasm_heap_bytes / MiB)};
  await page.evaluate(() => window.demo.engine.deleteModel('big'));
} catch (e) {
  report.error = String(e && e.stack || e);
} finally {
  await close();
  server.close();
}
console.log(JSON.stringify(report, null, 2));
process.exit(report.error ? 1 : 0);
