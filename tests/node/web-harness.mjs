// tests/node/web-harness.mjs — what the page tests share (not a test file):
// Debian's Chromium driven by playwright-core, headless, against tools/serve
// on a free loopback port; a fresh browser context per open() with every
// request recorded; screenshots at laptop and phone widths; the helpers that
// fill Generate's and the training panel's fields and wait for results.
// useBrowser() registers the suite's before/after hooks (call it once, at the
// top of a test file) and returns { origin(), browser(), tmp(), requests }.
import { before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { repo, native, firstDiff, generateArgs } from './artifacts.mjs';
import { startServer, missingArtifacts } from '../../tools/serve.mjs';

export const CHROMIUM = ['/usr/lib/chromium/chromium', '/usr/bin/chromium'].find((f) => existsSync(f));
export const SHOTS = path.join(repo, 'build/screenshots');
export const MODEL = path.join(repo, 'models/atome-60k.atome');
export const RUN_QEMU = path.join(repo, 'tools/run-qemu');
export const hex = (b) => Buffer.from(b).toString('hex');

let server, origin, browser, tmp;
export const requests = [];      // every URL any page or worker of the suite asked for

export function useBrowser({ headers = null, isolated = true } = {}) {
before(async () => {
  assert.ok(CHROMIUM, 'Chromium not found (/usr/lib/chromium/chromium, /usr/bin/chromium): run tools/setup');
  const missing = missingArtifacts();
  assert.deepEqual(missing, [], `the page needs ${missing.map(([f]) => f).join(', ')}: run tools/setup`);
  let chromium;
  try { ({ chromium } = await import('playwright-core')); } catch (e) {
    assert.fail(`playwright-core cannot be imported (${e.message}): run tools/setup (npm ci)`);
  }
  server = await startServer({ port: 0, host: '127.0.0.1', isolated });
  origin = `http://127.0.0.1:${server.address().port}`;
  browser = await chromium.launch({ executablePath: CHROMIUM, headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync'] });
  mkdirSync(SHOTS, { recursive: true });
  tmp = mkdtempSync(path.join(tmpdir(), 'atome-web-'));
});

after(async () => {
  await browser?.close();
  server?.close();
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});
return { origin: () => origin, browser: () => browser, tmp: () => tmp, requests };
}

// A fresh browser context (its own IndexedDB) and page; every request of it
// (page and workers) is recorded.
export async function open(query = '', { initScript = null, width = 1280, height = 900 } = {}) {
  const ctx = await browser.newContext({ viewport: { width, height }, acceptDownloads: true });
  if (initScript) await ctx.addInitScript(initScript);
  await ctx.route('**/*', (route) => { requests.push(route.request().url()); route.continue(); });
  const page = await ctx.newPage();
  const logs = [];
  page.on('console', (m) => logs.push(`console.${m.type()}: ${m.text()}`));
  page.on('pageerror', (e) => logs.push(`pageerror: ${e.message}`));
  page.logs = logs;
  // the page opens the web model first; these tests compare with atome-60k unless told otherwise
  const q = /[?&]model-select=/.test(query) ? query : `${query}${query.includes('?') ? '&' : '?'}model-select=atome-60k.atome`;
  await page.goto(`${origin}/${q}`);
  await waitReady(page);
  return { ctx, page };
}

export async function waitReady(page) {
  await page.waitForFunction(() => !document.getElementById('generate').disabled &&
    !document.getElementById('train-start').disabled && document.getElementById('runs').dataset.loaded === '1', null, { timeout: 30000 }).catch((e) => {
    throw new Error(`page not ready: ${e.message}\n${page.logs.join('\n')}`);
  });
}

// Laptop- and phone-width screenshots of the whole page (and, for docs/web.md,
// laptop-width ones of the named sections).
export async function shot(page, name, sections = []) {
  for (const sec of sections) await page.locator(`#${sec}`).screenshot({ path: path.join(SHOTS, `${name}-${sec}.png`) });
  const vp = page.viewportSize();
  await page.screenshot({ path: path.join(SHOTS, `${name}-laptop.png`), fullPage: true });
  await page.setViewportSize({ width: 390, height: 844 });
  await page.waitForTimeout(150);
  await page.screenshot({ path: path.join(SHOTS, `${name}-phone.png`), fullPage: true });
  await page.setViewportSize(vp);
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

export async function waitTrain(page, want = 'done', timeout = 180000) {
  await page.waitForFunction((w) => {
    const s = document.getElementById('train-status').dataset.state;
    return s === w || s === 'error';
  }, want, { timeout }).catch((e) => { throw new Error(`training never reached '${want}': ${e.message}\n${page.logs.join('\n')}`); });
  const st = await state(page);
  assert.equal(st.state, want, `training: ${await errorText(page)}`);
  return st;
}

