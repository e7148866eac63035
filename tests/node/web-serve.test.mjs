// tests/node/web-serve.test.mjs — tools/serve's own checks (moved here from
// web-page.test.mjs, which tools/test runs against the built site): the page
// is served with its CSP in tools/build-site's layout (relative links into
// app-<version>/, the wasm as application/wasm, the service worker, the model
// list, also at /api/models); what is outside the page, or climbs out of it,
// is 404; a request for another host name (DNS rebinding) is refused with
// 421; tools/serve refuses a non-loopback host without --allow-remote and a
// port that is not a number. No browser: plain HTTP requests.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { repo, run } from './artifacts.mjs';
import { startServer, missingArtifacts, CSP } from '../../tools/web/serve.mjs';

let server, origin;
before(async () => {
  const missing = await missingArtifacts();
  assert.deepEqual(missing, [], `the page needs ${missing.map(([f]) => f).join(', ')}: run tools/setup`);
  server = await startServer({ port: 0, host: '127.0.0.1' });
  origin = `http://127.0.0.1:${server.address().port}`;
});
after(() => server?.close());

test('the page serves with its CSP, names what is missing and refuses a non-loopback host', async () => {
  const r = await fetch(`${origin}/`);
  assert.equal(r.status, 200);
  assert.equal(r.headers.get('content-security-policy'), CSP);
  assert.match(CSP, /connect-src 'self'/);
  assert.match(CSP, /script-src 'self' 'wasm-unsafe-eval'/);
  // the layout of tools/build-site: relative links into app-<version>/
  const html = await r.text();
  const dir = /<script type="module" src="(app-[0-9a-f]{12})\/web\/app\.mjs"><\/script>/.exec(html)?.[1];
  assert.ok(dir, 'index.html loads app-<version>/web/app.mjs');
  assert.equal((await fetch(`${origin}/${dir}/build/wasm/atome.wasm`)).headers.get('content-type'), 'application/wasm');
  assert.equal((await fetch(`${origin}/sw.js`)).status, 200);
  const list = await (await fetch(`${origin}/${dir}/models/index.json`)).json();
  assert.ok(list.models.some((m) => m.name === 'atome-60k.atome'));
  for (const bad of ['/models/../README.md', `/${dir}/web/%2e%2e/README.md`, `/${dir}/models/README.md`, '/build/native/atome', '/.git/config',
    '/node_modules/playwright-core/package.json', '/web/app.mjs', `/${dir}/web/sw.js`, '/.nojekyll'])
    assert.equal((await fetch(`${origin}${bad}`)).status, 404, bad);
  // a request for another host name (DNS rebinding) is not answered
  const { request } = await import('node:http');
  const rebound = await new Promise((resolve, reject) => {
    const rq = request({ host: '127.0.0.1', port: Number(new URL(origin).port), path: '/', headers: { Host: 'evil.example:80' } },
      (res) => { res.resume(); resolve(res.statusCode); });
    rq.on('error', reject);
    rq.end();
  });
  assert.equal(rebound, 421);
  assert.deepEqual(await (await fetch(`${origin}/api/models`)).json(), list);
  const serve = path.join(repo, 'tools/serve');
  const remote = await run(serve, ['--host', '0.0.0.0', '--port', '0'], { timeout: 10000 });
  assert.equal(remote.code, 2);
  assert.match(remote.stderr, /not a loopback address.*--allow-remote/);
  const badPort = await run(serve, ['--port', 'eighty'], { timeout: 10000 });
  assert.equal(badPort.code, 2);
  assert.match(badPort.stderr, /--port must be an integer/);
});
