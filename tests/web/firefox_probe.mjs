// Firefox ESR on the same page, without a WebDriver: Debian's firefox-esr in headless mode opens the demo page in
// its self-test mode (index.html?selftest=...), which registers the fixture folder, loads it and runs one greedy
// completion, then reports through dump() to stdout. Prints what happened as JSON: whether WebGPU came up (and
// on which Vulkan driver) and whether the text equals the native engine's. A report, not a CTest: setup does not
// install Firefox.
//   node tests/web/firefox_probe.mjs [--icd /usr/lib/chromium/vk_swiftshader_icd.json] [--native-text TEXT]
import {spawn, spawnSync} from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {serve} from './harness.mjs';

const args = Object.fromEntries(process.argv.slice(2).reduce((acc, a, i, all) => {
  if (a.startsWith('--')) acc.push([a.slice(2), all[i + 1]]);
  return acc;
}, []));
const firefox = args.firefox || '/usr/bin/firefox-esr';
const webDir = path.resolve(args.web || 'build/web');
const fixture = path.resolve(args.fixture || 'tests/fixtures/qwen3_tiny/q4f16_1');
const ewgpu = path.resolve(args.ewgpu || 'build/ewgpu');
const PROMPT = 'Once upon a time';
const N = 12;
if (!fs.existsSync(firefox)) { console.log(JSON.stringify({firefox: 'absent'})); process.exit(77); }

let nativeText = args['native-text'];
if (nativeText === undefined) {
  const r = spawnSync(ewgpu, ['run', fixture, PROMPT, '-n', String(N), '--temperature', '0', '--json'], {encoding: 'utf8'});
  nativeText = JSON.parse(r.stdout.slice(r.stdout.indexOf('{'))).text;
}
const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'ewgpu-firefox-'));
fs.writeFileSync(path.join(profile, 'user.js'), [
  'user_pref("browser.dom.window.dump.enabled", true);', 'user_pref("dom.webgpu.enabled", true);',
  'user_pref("gfx.webgpu.ignore-blocklist", true);', 'user_pref("browser.shell.checkDefaultBrowser", false);',
  'user_pref("datareporting.policy.dataSubmissionEnabled", false);', 'user_pref("app.update.enabled", false);',
].join('\n'));
const files = fs.readdirSync(fixture).filter((n) => n !== 'reference.json');
const {server, base} = await serve(webDir, fixture);
const url = `${base}index.html?selftest=/fixture/&files=${files.join(',')}&prompt=${encodeURIComponent(PROMPT)}&n=${N}`;
const env = {...process.env};
if (args.icd !== 'system') env.VK_ICD_FILENAMES = args.icd || '/usr/lib/chromium/vk_swiftshader_icd.json';
const ff = spawn(firefox, ['--headless', '--no-remote', '--profile', profile, url], {env});
const report = await new Promise((resolve) => {
  let buf = '';
  const timer = setTimeout(() => resolve({ok: false, error: 'no report within the time limit'}), Number(args.timeout || 600) * 1000);
  ff.stdout.on('data', (d) => {
    buf += d;
    const m = buf.match(/EWGPU-SELFTEST (.*)\n/);
    if (m) { clearTimeout(timer); resolve(JSON.parse(m[1])); }
  });
  ff.on('exit', () => { clearTimeout(timer); resolve({ok: false, error: 'firefox exited without a report'}); });
});
ff.kill();
server.close();
fs.rmSync(profile, {recursive: true, force: true});
const out = {firefox: spawnSync(firefox, ['--version'], {encoding: 'utf8'}).stdout.trim(), vk_icd: env.VK_ICD_FILENAMES || 'system',
  report, native_text: nativeText, same_text: report.ok === true && report.text === nativeText};
console.log(JSON.stringify(out, null, 2));
process.exit(out.same_text ? 0 : 1);
