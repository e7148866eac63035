// tests/node/web-harness.mjs — what the page tests share (not a test file):
// Debian's Chromium driven by playwright-core, headless, against tools/serve
// on a free loopback port; a fresh browser context per open() with every
// request recorded; screenshots at laptop and phone widths; the helpers that
// fill Generate's and the training panel's fields and wait for results.
// useBrowser() registers the suite's before/after hooks (call it once, at the
// top of a test file) and returns { origin(), browser(), tmp(), requests, site }.
//
// ATOME_WEB_SITE=1 runs the same tests against tools/build-site's folder
// served by staticServer() (a plain static server: no COOP/COEP, no CSP), at
// ATOME_WEB_BASE (default /; e.g. /atome/ for a sub-path): open() then loads
// the page, waits for its service worker's offline copy and reloads, so the
// page is cross-origin isolated by the service worker (unless the suite asked
// for isolated: false). origin() includes the sub-path.
import { before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { createRequire } from 'node:module';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { repo, native, firstDiff, generateArgs } from './artifacts.mjs';
import { startServer, missingArtifacts } from '../../tools/web/serve.mjs';
import { CHROMIUM, launchChromium, playwrightChromium } from '../../tools/web/chromium.mjs';
import { buildSite } from '../../tools/web/build-site.mjs';

// Against the built site (ATOME_WEB_SITE=1) instead of tools/serve, at this sub-path.
export const SITE = process.env.ATOME_WEB_SITE === '1';
export const BASE = (process.env.ATOME_WEB_BASE ?? '/').replace(/^\/*/, '/').replace(/\/*$/, '/');

// A plain static server, as python3 -m http.server or a static host: files
// of root (replaceable: server.root) under base, a folder's index.html, the
// type by extension, and no other header (no COOP/COEP, no CSP, no caching
// rules). server.log holds every path asked for.
const STATIC_TYPES = { '.html': 'text/html', '.mjs': 'text/javascript', '.js': 'text/javascript', '.css': 'text/css',
  '.wasm': 'application/wasm', '.json': 'application/json', '.svg': 'image/svg+xml', '.png': 'image/png', '.txt': 'text/plain',
  '.md': 'text/markdown', '.webmanifest': 'application/manifest+json' };
export function staticServer(root, { base = '/', port = 0 } = {}) {
  const server = createServer((req, res) => {
    const p = decodeURIComponent(new URL(req.url, 'http://x').pathname);
    server.log.push(p);
    if (p === base.slice(0, -1)) { res.writeHead(301, { Location: base }).end(); return; }
    const rel = p.startsWith(base) ? p.slice(base.length) : null;
    if (rel === null || rel.split('/').some((x) => x === '..' || x.startsWith('.'))) { res.writeHead(404).end('not found\n'); return; }
    let file = path.join(server.root, rel);
    let st = null;
    try { st = statSync(file); } catch { /* missing */ }
    if (st?.isDirectory()) {
      if (!p.endsWith('/')) { res.writeHead(301, { Location: `${p}/` }).end(); return; }
      file = path.join(file, 'index.html');
    }
    let body;
    try { body = readFileSync(file); } catch { res.writeHead(404).end('not found\n'); return; }
    res.writeHead(200, { 'Content-Type': STATIC_TYPES[path.extname(file)] ?? 'application/octet-stream', 'Content-Length': body.length });
    res.end(req.method === 'HEAD' ? undefined : body);
  });
  server.root = root;
  server.log = [];
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve(server));
  });
}

export { CHROMIUM };
export const SHOTS = path.join(repo, 'build/screenshots');
export const MODEL = path.join(repo, 'models/atome-60k.atome');
export const RUN_QEMU = path.join(repo, 'tools/mcu/run-qemu');
export const hex = (b) => Buffer.from(b).toString('hex');

let server, origin, browser, tmp, warm = false;
export const requests = [];      // every URL any page or worker of the suite asked for

export function useBrowser({ headers = null, isolated = true } = {}) {
before(async () => {
  const missing = await missingArtifacts();
  assert.deepEqual(missing, [], `the page needs ${missing.map(([f]) => f).join(', ')}: run tools/setup`);
  await playwrightChromium();   // throws, saying how to get it, if Chromium or playwright-core is missing
  tmp = mkdtempSync(path.join(tmpdir(), 'atome-web-'));
  if (SITE) {
    buildSite(path.join(tmp, 'site'));
    server = await staticServer(path.join(tmp, 'site'), { base: BASE });
    origin = `http://127.0.0.1:${server.address().port}${BASE.slice(0, -1)}`;
    warm = isolated;
  } else {
    server = await startServer({ port: 0, host: '127.0.0.1', isolated });
    origin = `http://127.0.0.1:${server.address().port}`;
  }
  browser = await launchChromium();
  mkdirSync(SHOTS, { recursive: true });
});

after(async () => {
  if (shotTime.n) console.log(`# screenshots: ${shotTime.n} states, ${(shotTime.ms / 1000).toFixed(1)} s (axe-core ${(shotTime.axeMs / 1000).toFixed(1)} s)`);
  await browser?.close();
  server?.close();
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});
return { origin: () => origin, browser: () => browser, tmp: () => tmp, requests, site: SITE };
}

// A fresh browser context (its own IndexedDB) and page; every request of it
// (page and workers) is recorded.
export async function open(query = '', { initScript = null, width = 1280, height = 900 } = {}) {
  const ctx = await browser.newContext({ viewport: { width, height }, acceptDownloads: true });
  if (initScript) await ctx.addInitScript(initScript);
  await ctx.route('**/*', (route) => { requests.push(route.request().url()); route.continue(); });
  // a page under its service worker: its requests (and its workers') are answered there, unseen by route()
  ctx.on('request', (r) => requests.push(r.url()));
  const page = await ctx.newPage();
  const logs = [];
  page.on('console', (m) => logs.push(`console.${m.type()}: ${m.text()}`));
  page.on('pageerror', (e) => logs.push(`pageerror: ${e.message}`));
  page.logs = logs;
  // the page opens the web model first; these tests compare with atome-60k unless told otherwise
  const q = /[?&]model-select=/.test(query) ? query : `${query}${query.includes('?') ? '&' : '?'}model-select=atome-60k.atome`;
  await page.goto(`${origin}/${q}`);
  await waitReady(page);
  if (warm) await warmUp(page);
  return { ctx, page };
}

// The page's service worker has its offline copy; a reload then puts the page
// under it (cross-origin isolated by its headers).
export async function waitOffline(page) {
  await page.waitForFunction(() => document.getElementById('site-status').dataset.offline === 'ready', null, { timeout: 120000 })
    .catch((e) => { throw new Error(`no offline copy: ${e.message}\n${page.logs.join('\n')}`); });
}
export async function warmUp(page) {
  await waitOffline(page);
  await page.reload();
  await waitReady(page);
  assert.equal(await page.evaluate(() => crossOriginIsolated), true, 'not cross-origin isolated after the reload');
}

export async function waitReady(page) {
  await page.waitForFunction(() => !document.getElementById('generate').disabled &&
    !document.getElementById('train-start').disabled && document.getElementById('runs').dataset.loaded === '1', null, { timeout: 30000 }).catch((e) => {
    throw new Error(`page not ready: ${e.message}\n${page.logs.join('\n')}`);
  });
}

// Laptop- and phone-width screenshots of the whole page (and, for docs/web.md,
// laptop-width ones of the named sections). Every state photographed is also
// checked by axe-core at both widths: a serious or critical violation fails
// the test that reached it (ATOME_AXE=0 turns the check off while debugging).
const shotTime = { n: 0, ms: 0, axeMs: 0 };   // what shot() and its axe-core checks cost this file (printed at its end)
export async function shot(page, name, sections = []) {
  const t0 = Date.now();
  try { await shotNow(page, name, sections); } finally { shotTime.n++; shotTime.ms += Date.now() - t0; }
}
async function shotNow(page, name, sections) {
  for (const sec of sections) await page.locator(`#${sec}`).screenshot({ path: path.join(SHOTS, `${name}-${sec}.png`) });
  const vp = page.viewportSize();
  await page.screenshot({ path: path.join(SHOTS, `${name}-laptop.png`), fullPage: true });
  const bad = await axeProblems(page, `${name} (${vp.width} px)`);
  await page.setViewportSize({ width: 390, height: 844 });
  await page.waitForTimeout(150);
  await page.screenshot({ path: path.join(SHOTS, `${name}-phone.png`), fullPage: true });
  bad.push(...await axeProblems(page, `${name} (390 px)`));
  await page.setViewportSize(vp);
  assert.deepEqual(bad, [], `axe-core: serious or critical violations in state ${name}`);
}

export const axeStates = [];     // [state, violation ids] of every state checked (web-axe.test.mjs reads it)

// axe-core's WCAG 2.x A/AA and best-practice rules over the page as it is:
// the serious and critical violations, one line each. axe-core (the copy
// @axe-core/playwright pins) is injected once a document and axe.run() called
// in place, as AxeBuilder's analyze() in its same-origin mode does: analyze()
// injects the 500 KB source again and opens a blank page for each check,
// most of a check's time. The page has no frames; one that had would be
// checked by AxeBuilder itself, frames and all.
const AXE_TAGS = ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice'];
// Every node is checked, the scored text's spans (one a character) too: on 6,000 of them
// (3,000 bytes in both panes) axe.run took 1.5 s; excluding all but their first 200
// took 4 to 6 s (axe-core compares each node with each excluded one).
const AXE_EXCLUDE = [];
let axeSource = null, axeOffSaid = false;
export async function axeProblems(page, state) {
  if (process.env.ATOME_AXE === '0') {
    if (!axeOffSaid) console.log('# ATOME_AXE=0: axe-core checks are OFF in this file (a debugging switch; the suite never sets it)');
    axeOffSaid = true;
    return [];
  }
  const t0 = Date.now();
  try { return await axeCheck(page, state); } finally { shotTime.axeMs += Date.now() - t0; }
}
async function axeCheck(page, state) {
  let r;
  if (await page.evaluate(() => document.querySelector('iframe, frame') !== null)) {
    const { default: AxeBuilder } = await import('@axe-core/playwright');
    r = await new AxeBuilder({ page }).withTags(AXE_TAGS).exclude(AXE_EXCLUDE).analyze();
  } else {
    axeSource ??= createRequire(createRequire(import.meta.url).resolve('@axe-core/playwright'))('axe-core').source;
    if (!await page.evaluate(() => typeof window.axe?.run === 'function')) await page.evaluate(axeSource);
    // resultTypes: only the violations are needed (passes and incomplete ones are not gathered: faster)
    r = await page.evaluate(({ tags, exclude }) => window.axe.run({ include: [], exclude },
      { runOnly: { type: 'tag', values: tags }, resultTypes: ['violations'] }), { tags: AXE_TAGS, exclude: AXE_EXCLUDE });
  }
  axeStates.push([state, r.violations.map((v) => `${v.id}:${v.impact}`)]);
  return r.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${state}: ${v.id} (${v.impact}) at ${v.nodes.slice(0, 3).map((n) => n.target.join(' ')).join(', ')}`);
}

export const errorText = (page) => page.evaluate(() => (document.getElementById('error').hidden ? null :
  document.getElementById('error-text').textContent));

export async function expectError(page, pattern, what) {
  await page.waitForFunction(() => !document.getElementById('error').hidden, null, { timeout: 20000 }).catch(() => {
    throw new Error(`${what}: #error never appeared\n${page.logs.join('\n')}`);
  });
  const t = await errorText(page);
  assert.match(t, pattern, `${what}: #error says '${t}'`);
  assert.ok(!t.includes('\n'), `${what}: #error is one line`);
}

// Settings of `atome generate`, filled into the page; returns the hex of the
// generated bytes once #output says it is complete.
// Generate's settings fields from a case (missing: greedy, seed 1, the model's window)
export async function fillSettings(page, c, { explain = true } = {}) {
  await page.fill('#prompt', c.prompt ?? '');
  await page.fill('#n', String(c.n));
  await page.fill('#temperature', c.temperature ?? '0');
  await page.fill('#top-k', String(c.topK ?? 0));
  await page.fill('#top-p', c.topP ?? '1');
  await page.fill('#seed', String(c.seed ?? 1));
  await page.fill('#window', c.window ? String(c.window) : '');
  await page.setChecked('#explain', explain);
}

export async function generate(page, c, opts) {
  await fillSettings(page, c, opts);
  await page.click('#generate');
  return finished(page);
}

export async function finished(page) {
  await page.waitForFunction(() => document.getElementById('output').dataset.done === '1' ||
    !document.getElementById('error').hidden, null, { timeout: 60000 });
  const err = await errorText(page);
  assert.equal(err, null, `generation failed: ${err}`);
  return page.evaluate(() => document.getElementById('output').dataset.hex);
}

export const cliArgs = (model, c) => generateArgs(model, { ...c, promptHex: hex(Buffer.from(c.prompt ?? '')) });

export async function nativeHex(model, c, extra = []) {
  const r = await native([...cliArgs(model, c), ...extra]);
  assert.equal(r.code, 0, `native ${cliArgs(model, c).join(' ')}: ${r.stderr}`);
  return hex(r.stdout);
}

export function assertSameHex(got, want, what) {
  const d = firstDiff(Buffer.from(got, 'hex'), Buffer.from(want, 'hex'));
  assert.equal(d, -1, `${what}: first differing byte at offset ${d} (page ${got.length / 2} bytes, native ${want.length / 2})`);
}

export async function grab(page, selector) {
  const [d] = await Promise.all([page.waitForEvent('download', { timeout: 30000 }), page.click(selector)]);
  const file = path.join(tmp, `${Date.now()}-${d.suggestedFilename()}`);
  await d.saveAs(file);
  return { file, name: d.suggestedFilename(), bytes: readFileSync(file) };
}

// Drops a file on an element, as a person dragging it from their desktop.
export async function drop(page, selector, name, bytes) {
  const dt = await page.evaluateHandle(({ b64, name }) => {
    const d = new DataTransfer();
    d.items.add(new File([Uint8Array.from(atob(b64), (c) => c.charCodeAt(0))], name));
    return d;
  }, { b64: Buffer.from(bytes).toString('base64'), name });
  await page.dispatchEvent(selector, 'dragover', { dataTransfer: dt });
  await page.dispatchEvent(selector, 'drop', { dataTransfer: dt });
}

export const state = (page) => page.evaluate(() => ({ ...document.getElementById('train-status').dataset }));

export async function setTrain(page, s) {
  await page.click('details.more summary');
  for (const [id, v] of Object.entries(s)) {
    if (id === 'train-config' || id === 'train-quant') await page.selectOption(`#${id}`, v);
    else await page.fill(`#${id}`, String(v));
  }
}

// A page opened with query (its ?steps=...) and a training started there
// without evaluations or samples: { ctx, page } (ctx closed if that fails).
export async function openTraining(query) {
  const { ctx, page } = await open(query);
  try {
    await setTrain(page, { 'eval-every': 0, 'sample-every': 0 });
    await page.click('#train-start');
  } catch (e) {
    await ctx.close();
    throw e;
  }
  return { ctx, page };
}

// (a run that ends while 'running' or 'paused' is awaited fails at once, not at the timeout)
// Polled every 100 ms, not at every animation frame (playwright's default):
// a frame-by-frame poll keeps the page drawing frames, CPU the training
// threads then lose.
export async function waitTrain(page, want = 'done', timeout = 180000) {
  await page.waitForFunction((w) => {
    const s = document.getElementById('train-status').dataset.state;
    return s === w || s === 'error' || s === 'done';
  }, want, { timeout, polling: 100 }).catch((e) => { throw new Error(`training never reached '${want}': ${e.message}\n${page.logs.join('\n')}`); });
  const st = await state(page);
  assert.equal(st.state, want, `training: ${st.state} at step ${st.step} (${await errorText(page)})`);
  return st;
}

