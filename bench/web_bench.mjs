// Browser vs native decode speed on the same model folder, prompt and settings (greedy, one row, K = 16 decode
// steps per submission), both on SwiftShader here: `ewgpu run --json` natively, the page module in Debian's
// chromium through playwright-core. Prints one JSON object: native and browser decode tok/s (the engine's own
// timings.decode_tok_s of each), their ratio, the browser's load time (register + load, and the first completion,
// which is when the browser compiles the pipelines) and the greedy texts' equality.
//   scripts/build-web.sh && node bench/web_bench.mjs [--tokens 128] [--folder tests/fixtures/qwen3_tiny/q4f16_1]
import {spawnSync} from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import {createRequire} from 'node:module';
import {openBrowser, serve} from '../tests/web/harness.mjs';

const args = Object.fromEntries(process.argv.slice(2).reduce((acc, a, i, all) => {
  if (a.startsWith('--')) acc.push([a.slice(2), all[i + 1]]);
  return acc;
}, []));
const folder = path.resolve(args.folder || 'tests/fixtures/qwen3_tiny/q4f16_1');
const webDir = path.resolve(args.web || 'build/web');
const ewgpu = path.resolve(args.ewgpu || 'build/ewgpu');
const tokens = Number(args.tokens || 128);
const prompt = args.prompt || 'Once upon a time';
const repeats = Number(args.repeats || 3);
const pw = createRequire(import.meta.url)('playwright-core');

// Native: the same CLI path users take; the best of `repeats` runs (the first pays pipeline compiles unless cached).
const nativeRuns = [];
let nativeText = null;
for (let i = 0; i < repeats; i++) {
  const r = spawnSync(ewgpu, ['run', folder, prompt, '-n', String(tokens), '--temperature', '0', '--steps', '16', '--json'],
    {encoding: 'utf8'});
  if (r.status !== 0) { console.error(r.stdout, r.stderr); process.exit(1); }
  const j = JSON.parse(r.stdout.slice(r.stdout.indexOf('{')));
  nativeRuns.push(j.timings.decode_tok_s);
  nativeText = j.text;
}

const files = fs.readdirSync(folder).filter((n) => n !== 'reference.json');
const {server, base} = await serve(webDir, folder);
const {context, close} = await openBrowser(pw, args.chromium || '/usr/bin/chromium', args.profile);
let browser;
try {
  const page = await context.newPage();
  await page.goto(base + 'index.html');
  await page.waitForFunction(() => document.body.dataset.ready === '1', null, {timeout: 60000});
  browser = await page.evaluate(async ({names, prompt, tokens, repeats}) => {
    const e = window.demo.engine;
    const t0 = performance.now();
    const list = [];
    for (const n of names) list.push({name: n, data: await (await fetch('/fixture/' + n)).arrayBuffer()});
    await e.registerModel({modelId: 'bench', files: list, persist: false});
    await e.load('bench', {rows: 1, decode_steps: 16, max_steps: 32});
    const loadMs = performance.now() - t0;
    const t1 = performance.now();
    await e.completions.create({prompt, max_tokens: 1, temperature: 0});
    const firstMs = performance.now() - t1;
    const runs = [];
    let text = null;
    for (let i = 0; i < repeats; i++) {
      const r = await e.completions.create({prompt, max_tokens: tokens, temperature: 0});
      runs.push(r.ewgpu.timings.decode_tok_s);
      text = r.choices[0].text;
    }
    await e.unload('bench');
    const mem = await e.memory();
    return {loadMs, firstMs, runs, text, wasmHeap: mem.wasm_heap_bytes};
  }, {names: files, prompt, tokens, repeats});
} finally {
  await close();
  server.close();
}
const best = (xs) => Math.max(...xs);
console.log(JSON.stringify({
  folder: path.relative(process.cwd(), folder), prompt, tokens,
  native_decode_tok_s: nativeRuns, browser_decode_tok_s: browser.runs,
  ratio_best: best(browser.runs) / best(nativeRuns),
  browser_register_and_load_ms: Math.round(browser.loadMs),
  browser_first_completion_ms: Math.round(browser.firstMs),
  browser_wasm_heap_bytes: browser.wasmHeap,
  same_text: browser.text === nativeText,
}, null, 2));
