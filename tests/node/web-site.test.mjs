// tests/node/web-site.test.mjs — the page anywhere (issue #42): the folder
// tools/build-site writes, served by a plain static server that sends no
// COOP, COEP or CSP header (web-harness.mjs staticServer), at / and under a
// sub-path, in headless Chromium:
//  - the first load is one thread and says so, and Chromium finds the page
//    installable (its manifest read without error); after its service worker has
//    its offline copy, a reload is cross-origin isolated (by the service
//    worker's headers) and trains on two threads; Generate equals the CLI;
//  - with the server stopped, a reload still loads the page, generates the
//    CLI's bytes, opens another shipped model, downloads a board file and
//    finishes a short training run;
//  - a new build (its atome.wasm stamped with a custom section) served over
//    the old one shows "a new version is ready — reload"; after the reload
//    the page is the new version and runs the new version's wasm, and the
//    old version's cache is gone.
// Screenshots of the notices (laptop and phone widths) go to build/screenshots/.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { repo, run } from './artifacts.mjs';
import { buildSite } from '../../tools/web/build-site.mjs';
import { staticServer, waitReady, waitOffline, generate, nativeHex, assertSameHex, waitTrain, shot, MODEL, SHOTS } from './web-harness.mjs';
import { launchChromium, playwrightChromium } from '../../tools/web/chromium.mjs';

const CASE = { prompt: 'Once upon a time', n: 160, temperature: '0.8', topK: 40, topP: '0.95', seed: 5 };
let browser, tmp;

before(async () => {
  await playwrightChromium();
  browser = await launchChromium();
  tmp = mkdtempSync(path.join(tmpdir(), 'atome-site-'));
  mkdirSync(SHOTS, { recursive: true });
});
after(async () => {
  await browser?.close();
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

const status = (page) => page.evaluate(() => ({ ...document.getElementById('site-status').dataset,
  text: document.getElementById('site-status').textContent.replace(/\s+/g, ' ').trim(), isolated: crossOriginIsolated }));
const scriptDir = (page) => page.evaluate(() => /app-[0-9a-f]+/.exec(document.querySelector('script[type=module]').src)?.[0]);

async function openPage(url) {
  const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 }, acceptDownloads: true });
  const page = await ctx.newPage();
  page.logs = [];
  page.on('console', (m) => page.logs.push(`console.${m.type()}: ${m.text()}`));
  page.on('pageerror', (e) => page.logs.push(`pageerror: ${e.message}`));
  await page.goto(url);
  await waitReady(page);
  return { ctx, page };
}

// A short run on `threads` threads: done, a sane bpb, and two threads really offered.
async function shortRun(page, threads) {
  await page.fill('#steps', '30');
  await page.fill('#train-threads', String(threads));
  await page.click('#train-start');
  const st = await waitTrain(page, 'done', 240000);
  assert.ok(Number(st.valBpb) > 0 && Number(st.valBpb) < 8, `validation bpb ${st.valBpb}`);
  return st;
}

// the whole page at both widths, and its top (the notices): at laptop width (docs/web.md), and
// the first screen of a phone
async function shots(page, name) {
  await shot(page, name);
  await page.evaluate(() => window.scrollTo(0, 0));
  await page.screenshot({ path: path.join(SHOTS, `${name}-top.png`), clip: { x: 0, y: 0, width: 1280, height: 240 } });
  const vp = page.viewportSize();
  await page.setViewportSize({ width: 390, height: 844 });
  await page.waitForTimeout(150);
  await page.screenshot({ path: path.join(SHOTS, `${name}-phone-top.png`) });
  await page.setViewportSize(vp);
}

async function stop(server) {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
}

// A wasm module with a custom section appended (a valid module that differs
// in its bytes): the mark of the second build.
function stamped(file, mark) {
  const name = Buffer.from('atome-test-build');
  const payload = Buffer.concat([Buffer.from([name.length]), name, Buffer.from(mark)]);
  assert.ok(payload.length < 128);
  return Buffer.concat([readFileSync(file), Buffer.from([0, payload.length]), payload]);
}

test('tools/build-site: usage, a folder it did not write is left alone, relative URLs only', async () => {
  const tool = path.join(repo, 'tools/build-site');
  let r = await run(tool, [], { timeout: 30000 });
  assert.equal(r.code, 2);
  assert.match(r.stderr, /^build-site: --out DIR is required/);
  assert.equal((await run(tool, ['--bogus'], { timeout: 30000 })).code, 2);
  const foreign = path.join(tmp, 'foreign');
  mkdirSync(foreign);
  writeFileSync(path.join(foreign, 'notes.txt'), 'mine');
  r = await run(tool, ['--out', foreign], { timeout: 60000 });
  assert.equal(r.code, 1);
  assert.match(r.stderr, /is not a site this tool wrote/);
  assert.equal(readFileSync(path.join(foreign, 'notes.txt'), 'utf8'), 'mine');
  // another web app's folder (it has an index.html and a sw.js of its own) is not ours either
  writeFileSync(path.join(foreign, 'index.html'), '<p>mine</p>');
  writeFileSync(path.join(foreign, 'sw.js'), '// mine');
  r = await run(tool, ['--out', foreign], { timeout: 60000 });
  assert.equal(r.code, 1);
  assert.match(r.stderr, /is not a site this tool wrote \(no \.atome-site in it\)/);
  assert.equal(readFileSync(path.join(foreign, 'index.html'), 'utf8'), '<p>mine</p>');
  const out = path.join(tmp, 'cli-site');
  r = await run(tool, ['--out', out], { timeout: 60000 });
  assert.equal(r.code, 0, r.stderr);
  const m = /version ([0-9a-f]{12})/.exec(r.stdout);
  assert.ok(m, r.stdout);
  const html = readFileSync(path.join(out, 'index.html'), 'utf8');
  assert.doesNotMatch(html, /\b(?:href|src)="\//, 'an absolute URL in index.html');
  assert.match(html, new RegExp(`src="app-${m[1]}/web/app\\.mjs"`));
  for (const d of ['web', 'wasm']) {
    for (const f of readdirSync(path.join(out, `app-${m[1]}`, d)).filter((x) => x.endsWith('.mjs'))) {
      const js = readFileSync(path.join(out, `app-${m[1]}`, d, f), 'utf8');
      assert.doesNotMatch(js, /(?:from |import\(|fetch\(|new URL\(|url: )['`]\/(?!\/)/, `an absolute URL in ${d}/${f}`);
    }
  }
  for (const f of ['sw.js', 'manifest.webmanifest', '.nojekyll', `app-${m[1]}/models/index.json`, `app-${m[1]}/build/wasm/atome-threads.wasm`,
    `app-${m[1]}/build/mcu/mcu/atome-fw-pico.elf`, `app-${m[1]}/web/data/tinystories-2m.txt`, `app-${m[1]}/vendor/uplot/uPlot.esm.js`])
    assert.ok(readdirSync(path.dirname(path.join(out, f))).includes(path.basename(f)), `${f} is missing`);
  // a second build replaces it
  r = await run(tool, ['--out', out], { timeout: 60000 });
  assert.equal(r.code, 0, r.stderr);
});

test('without a service worker and without the network, what needs the network says so', { timeout: 300000 }, async () => {
  const dir = path.join(tmp, 'site-nosw');
  buildSite(dir);
  const server = await staticServer(dir);
  const ctx = await browser.newContext({ serviceWorkers: 'block' });
  const page = await ctx.newPage();
  page.logs = [];
  try {
    await page.goto(`http://127.0.0.1:${server.address().port}/?model-select=atome-60k.atome`);
    await waitReady(page);
    await page.waitForFunction(() => document.getElementById('site-status').dataset.offline === 'failed');
    assert.match(await page.textContent('#site-offline'), /^No offline copy: /);
    await stop(server);
    await page.selectOption('#model-select', 'atome-944k.atome');
    await page.waitForFunction(() => !document.getElementById('error').hidden);
    assert.match(await page.textContent('#error-text'),
      /cannot fetch atome-944k\.atome: the server cannot be reached \(no network\?\) and this browser has no offline copy of it/);
    // the model open before still generates
    await page.waitForFunction(() => document.getElementById('model-select').value === 'atome-60k.atome' && !document.getElementById('generate').disabled);
    assertSameHex(await generate(page, CASE), await nativeHex(MODEL, CASE), 'the open model, offline without a copy');
  } finally {
    await ctx.close();
    server.close();
  }
});

for (const base of ['/', '/atome/']) {
  test(`the built site at ${base}: isolated after a reload, the CLI's bytes, offline, and an update`, { timeout: 900000 }, async () => {
    const dir = path.join(tmp, `site${base.replace(/\//g, '-')}`);
    const v1 = buildSite(dir).version;
    let server = await staticServer(dir, { base });
    const port = server.address().port;
    const url = `http://127.0.0.1:${port}${base}?model-select=atome-60k.atome`;
    const { ctx, page } = await openPage(url);
    try {
      // first load: no isolation headers from this server, one thread, said so
      let s = await status(page);
      assert.equal(s.isolated, false);
      assert.equal(s.mode, 'none');
      assert.match(s.text, /One thread for now: this host sends no cross-origin isolation headers.*reload to train on up to \d+ threads/);
      await waitOffline(page);
      s = await status(page);
      assert.match(s.text, new RegExp(`Offline copy saved \\(version ${v1}\\)`));
      if (base !== '/') await shots(page, 'site-first-load');
      // installable: Chromium reads the manifest without error and names no reason it could not install
      // the page (but the test's own: a fresh context is an incognito one)
      const cdp = await ctx.newCDPSession(page);
      const man = await cdp.send('Page.getAppManifest');
      assert.equal(man.url, `http://127.0.0.1:${port}${base}manifest.webmanifest`);
      assert.deepEqual(man.errors, []);
      const { installabilityErrors } = await cdp.send('Page.getInstallabilityErrors');
      assert.deepEqual(installabilityErrors.filter((e) => e.errorId !== 'in-incognito'), []);
      // second load: isolated by the service worker, two threads, the CLI's bytes
      await page.reload();
      await waitReady(page);
      s = await status(page);
      assert.equal(s.isolated, true, `not isolated after the reload: ${s.text}`);
      assert.equal(s.mode, 'service-worker');
      await page.waitForFunction(() => /^Up to 2 threads here/.test(document.getElementById('train-threads-note').textContent), null, { timeout: 30000 });
      const want = await nativeHex(MODEL, CASE);
      assertSameHex(await generate(page, CASE), want, 'isolated page');
      await shortRun(page, 2);
      assert.equal(await page.inputValue('#train-threads'), '2');

      // the server stopped: the page still loads, generates, downloads and trains
      await stop(server);
      const asked = server.log.length;
      await page.reload();
      await waitReady(page);
      s = await status(page);
      assert.equal(s.isolated, true);
      assertSameHex(await generate(page, CASE), want, 'offline page');
      const other = (await page.evaluate(() => [...document.getElementById('model-select').options].map((o) => o.value)))
        .find((v) => v !== 'atome-60k.atome' && v.endsWith('.atome'));
      if (other) {
        await page.selectOption('#model-select', other);
        await page.waitForFunction((v) => new RegExp(`^${v.replace('.', '\\.')}:`).test(document.getElementById('model-info').textContent), other);
        await page.selectOption('#model-select', 'atome-60k.atome');
        await page.waitForFunction(() => /^atome-60k\.atome:/.test(document.getElementById('model-info').textContent));
      }
      const [d] = await Promise.all([page.waitForEvent('download'), page.click('#download-fw-microbit')]);
      assert.match(d.suggestedFilename(), /\.elf$/);
      await shortRun(page, 2);
      assert.equal(server.log.length, asked, 'a request reached the stopped server');
      // a file the offline copy lacks: the words, with the name as text (never markup), even for a malformed %-escape
      const miss = await page.evaluate(async () => Promise.all(['./%E0%A4%A', './%3Cb%3Ex.txt'].map(async (u) => {
        const r = await fetch(u);
        return [r.status, r.headers.get('content-type'), await r.text()];
      })));
      assert.deepEqual(miss.map((m) => m[0]), [503, 503]);
      assert.match(miss[0][2], /%E0%A4%A is not in this browser's offline copy/);
      assert.match(miss[1][2], /and <b>x\.txt is not in this browser's offline copy/);
      const lost = await page.context().newPage();
      await lost.goto(new URL('%3Cb%3Ex', page.url()).href);
      assert.equal(await lost.locator('b').count(), 0, 'a name in the offline page became markup');
      assert.match(await lost.textContent('p'), /^Offline: .*<b>x is not in this browser's offline copy/);
      await lost.close();

      // a new build over the old one: the notice, then the new version's wasm
      if (base === '/') return;
      const wasm2 = path.join(tmp, 'wasm2');
      mkdirSync(wasm2, { recursive: true });
      for (const f of readdirSync(path.join(repo, 'build/wasm')).filter((x) => x.endsWith('.wasm'))) copyFileSync(path.join(repo, 'build/wasm', f), path.join(wasm2, f));
      writeFileSync(path.join(wasm2, 'atome.wasm'), stamped(path.join(repo, 'build/wasm/atome.wasm'), 'second build'));
      const v2 = buildSite(dir, { wasmDir: wasm2 }).version;
      assert.notEqual(v2, v1);
      server = await staticServer(dir, { base, port });
      await page.reload();
      await waitReady(page);
      assert.equal(await scriptDir(page), `app-${v1}`, 'the old version still runs until the reload');
      await page.waitForFunction(() => !document.getElementById('update-banner').hidden, null, { timeout: 120000 });
      assert.match(await page.textContent('#update-banner'), /A new version is ready — reload/);
      // the new version's copy fetched what changed, and took the rest from the old copy
      assert.ok(server.log.includes(`${base}app-${v2}/build/wasm/atome.wasm`), 'the new wasm was never fetched');
      assert.deepEqual(server.log.filter((p) => /tinystories|\.elf$|\.atome$/.test(p)), [], 'unchanged files fetched again');
      await shots(page, 'site-update-notice');
      await Promise.all([page.waitForEvent('load'), page.click('#update-reload')]);
      await waitReady(page);
      assert.equal(await scriptDir(page), `app-${v2}`);
      await waitOffline(page);
      const wasmUrl = await page.evaluate(() => document.getElementById('module-status').dataset.wasm);
      assert.ok(wasmUrl.includes(`/app-${v2}/build/wasm/atome.wasm`), `the page runs ${wasmUrl}`);
      const hasMark = await page.evaluate(async (u) => new TextDecoder().decode(new Uint8Array(await (await fetch(u)).arrayBuffer())).includes('second build'), wasmUrl);
      assert.ok(hasMark, 'the wasm the page runs is not the second build\'s');
      assertSameHex(await generate(page, CASE), want, 'the new version');
      assert.equal(await page.isVisible('#update-banner'), false);
      const caches = await page.evaluate(() => caches.keys());
      assert.deepEqual(caches, [`atome-site-${v2}`], 'the old version\'s cache is dropped');
      s = await status(page);
      assert.equal(s.isolated, true);
      assert.match(s.text, new RegExp(`Offline copy saved \\(version ${v2}\\)`));
      await stop(server);
    } catch (e) {
      e.message += `\n${page.logs.join('\n')}`;
      throw e;
    } finally {
      await ctx.close();
      server.close();
    }
  });
}
