// docs/deploy.md's nginx configuration, verbatim but for the ports: two servers behind Debian's nginx with
// `hash $http_x_session consistent`. nginx is started by this test on a free loopback port and stopped after.
// Checks: a session always reaches the same server, sessions spread over both, and a second request with the
// same X-Session supersedes the first through the proxy.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fakeServer, post, get, sse, until, status, rowsBusy, SOURCE_DIR, TINY_ID } from './harness.mjs';

const NGINX = process.env.NGINX || '/usr/sbin/nginx';
let a, b, nginx, dir, base;

function freePort() {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => resolve(p)); });
  });
}

before(async () => {
  a = await fakeServer(['--fake-step-ms', '10']);
  b = await fakeServer(['--fake-step-ms', '10']);
  const page = fs.readFileSync(path.join(SOURCE_DIR, 'docs/deploy.md'), 'utf8');
  let site = page.match(/```nginx\n([\s\S]*?)```/)[1];
  const port = await freePort();
  site = site.replace('127.0.0.1:8081', new URL(a.url).host).replace('127.0.0.1:8082', new URL(b.url).host)
             .replace('listen 127.0.0.1:8080', `listen 127.0.0.1:${port}`);
  assert.ok(!/808[012]/.test(site), 'every port of the page was replaced');
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ewgpu-nginx-'));
  fs.writeFileSync(path.join(dir, 'ewgpu.conf'), site);
  // The smallest main configuration around the page's conf.d file: no daemon, files in the test's folder.
  fs.writeFileSync(path.join(dir, 'nginx.conf'), `
worker_processes 1;
daemon off;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 512; }
http {
  access_log off;
  client_body_temp_path ${dir}/body; proxy_temp_path ${dir}/proxy; fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi; scgi_temp_path ${dir}/scgi;
  include ${dir}/ewgpu.conf;
}
`);
  nginx = spawn(NGINX, ['-p', dir, '-c', path.join(dir, 'nginx.conf'), '-e', path.join(dir, 'error.log')], { stdio: 'ignore' });
  base = `http://127.0.0.1:${port}`;
  await until(async () => { try { return (await fetch(`${base}/health`)).status === 200; } catch { return false; } },
              { timeoutMs: 10000, everyMs: 50 });
});

after(async () => {
  if (nginx && nginx.exitCode === null) {
    const done = new Promise((r) => nginx.on('exit', r));
    nginx.kill('SIGQUIT');
    const t = setTimeout(() => nginx.kill('SIGKILL'), 5000);
    await done;
    clearTimeout(t);
  }
  await a?.stop();
  await b?.stop();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

const completed = async (srv) => (await status(srv.url)).state.jobs.completed;
const chat = (extra = {}) => ({ model: TINY_ID, messages: [{ role: 'user', content: 'hi' }], max_tokens: 2, ...extra });

test('a session always reaches the same server, and sessions spread over both', async () => {
  const perServer = [];
  for (let i = 0; i < 12; i++) {
    const [ca, cb] = [await completed(a), await completed(b)];
    for (let k = 0; k < 3; k++) {
      const r = await post(`${base}/v1/chat/completions`, chat(), { 'X-Session': `user-${i}` });
      assert.equal(r.status, 200, r.text);
      assert.equal(r.json.choices[0].message.content, '0 1 ');
    }
    const [da, db] = [(await completed(a)) - ca, (await completed(b)) - cb];
    assert.ok((da === 3 && db === 0) || (da === 0 && db === 3), `session user-${i}: ${da} on a, ${db} on b`);
    perServer.push(da ? 'a' : 'b');
  }
  assert.ok(perServer.includes('a') && perServer.includes('b'), perServer.join(''));
});

test('supersession works through the proxy (X-Session), and streams pass unbuffered', async () => {
  const first = sse(`${base}/v1/chat/completions`, chat({ max_tokens: 2000, stream: true }), { 'X-Session': 'ghost' });
  await until(async () => rowsBusy(await status(a.url)) + rowsBusy(await status(b.url)) === 1);
  const second = await post(`${base}/v1/chat/completions`, chat({ max_tokens: 3 }), { 'X-Session': 'ghost' });
  assert.equal(second.json.choices[0].message.content, '0 1 2 ');
  const r = await first;
  const fin = r.events.map((e) => e.data).find((d) => d?.choices?.[0]?.finish_reason);
  assert.equal(fin.choices[0].finish_reason, 'abort');
  assert.equal(fin.ewgpu.outcome, 'superseded');
  assert.equal(r.events.at(-1).data, '[DONE]');
});
