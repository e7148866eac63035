// tests/node/browser.test.mjs — the wasm module and its ES-module loader in a
// real browser: Debian's Chromium (never a downloaded browser), driven
// headless through playwright-core, opens tests/browser/index.html from a
// node:http static server on 127.0.0.1. The page loads build/wasm/atome.wasm
// through wasm/atome.mjs on the main thread and, in a module Web Worker,
// generates from models/atome-60k.atome with the integer engine, and the
// Worker also trains a small float model for a few steps. Both byte streams
// must equal `build/native/atome generate` with the same flags, byte for byte.
// The Worker also trains atome-60k on one thread and on 2 threads
// (atome-threads.wasm on shared memory; the server is cross-origin isolated):
// same losses, held-out loss and exported model.
// A missing Chromium or playwright-core (tools/setup installs both) fails the
// test; nothing is skipped.
import test from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { existsSync, mkdtempSync, rmSync, statSync, createReadStream } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { repo, wasmFile, native, firstDiff, generateArgs } from './artifacts.mjs';
import { launchChromium, playwrightChromium } from '../../tools/web/chromium.mjs';

// Module scripts are MIME-checked, and instantiateStreaming needs
// application/wasm; an unknown type must not be octet-stream for the page
// itself (Chromium would download it instead of rendering it).
const TYPES = { '.wasm': 'application/wasm', '.mjs': 'text/javascript', '.js': 'text/javascript', '.txt': 'text/plain',
  '.html': 'text/html; charset=utf-8', '.atome': 'application/octet-stream', '.md': 'text/plain; charset=utf-8' };

function serve(root) {
  const server = createServer((req, res) => {
    const rel = decodeURIComponent(new URL(req.url, 'http://x').pathname);
    const file = path.resolve(root, '.' + rel);
    const type = TYPES[path.extname(file)];
    if (!file.startsWith(root) || !type || !existsSync(file) || !statSync(file).isFile()) {
      res.writeHead(404, { 'Content-Type': 'text/plain' }).end('not found');
      return;
    }
    // cross-origin isolated (COOP + COEP), as tools/serve: shared memory for
    // the trainer's threads
    res.writeHead(200, { 'Content-Type': type, 'Cache-Control': 'no-store', 'Cross-Origin-Opener-Policy': 'same-origin',
      'Cross-Origin-Embedder-Policy': 'require-corp' });
    createReadStream(file).pipe(res);
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

const hex = (s) => Buffer.from(s).toString('hex');

// Greedy, top-k, top-p with an empty prompt and window 32, and a multi-byte
// UTF-8 prompt longer than window 8: the sampler paths and the window reset.
const CASES = [
  { promptHex: hex('Once upon a time'), n: 200 },
  { promptHex: hex('The little dog'), n: 200, temperature: '0.8', topK: 40, seed: 7 },
  { promptHex: '', n: 150, temperature: '1.2', topP: '0.9', seed: 12345, window: 32 },
  { promptHex: hex('Lily saw a café — “hello” 🐱 and ran'), n: 120, temperature: '0.7', topK: 5, seed: 3, window: 8 },
];
// atome-tiny on the repository's README: small enough for a handful of steps
// to take milliseconds, with a learning rate high enough to move the loss.
const TRAIN = { config: 'atome-tiny', dataUrl: 'web/data/tinystories-2m.txt', dataBytes: 500000, steps: 8,
  options: { seed: 1, lr: 3e-3, batch: 4, seq: 32, warmup: 0 } };

// atome-60k at batch 8 x seq 64: large enough that the kernels split.
const THREADS = { config: 'atome-60k', dataUrl: 'web/data/tinystories-2m.txt', dataBytes: 500000, steps: 6, threads: 2,
  options: { seed: 3, lr: 3e-3, batch: 8, seq: 64 } };

const cliArgs = (c) => generateArgs(path.join(repo, 'models/atome-60k.atome'), c);

test('page and module Worker: atome.wasm via wasm/atome.mjs generates the native CLI bytes; the Worker trains', async (t) => {
  await playwrightChromium();   // throws, saying how to get it, if Chromium or playwright-core is missing
  wasmFile('simd');
  const expected = await Promise.all(CASES.map(async (c) => {
    const r = await native(cliArgs(c));
    assert.equal(r.code, 0, `native atome ${cliArgs(c).join(' ')}: ${r.stderr}`);
    assert.equal(r.stdout.length, c.n);
    return r.stdout;
  }));

  const server = await serve(repo);
  const profile = mkdtempSync(path.join(tmpdir(), 'atome-chromium-'));
  t.after(() => { server.close(); rmSync(profile, { recursive: true, force: true }); });
  const ctx = await launchChromium({ profile });
  try {
    const page = await ctx.newPage();
    const logs = [];
    page.on('console', (m) => logs.push(`console.${m.type()}: ${m.text()}`));
    page.on('pageerror', (e) => logs.push(`pageerror: ${e.message}`));
    const spec = encodeURIComponent(JSON.stringify({ cases: CASES, train: TRAIN, threads: THREADS }));
    const url = `http://127.0.0.1:${server.address().port}/tests/browser/index.html?spec=${spec}`;
    await page.goto(url);
    await page.waitForFunction(() => window.__result, null, { timeout: 15000 }).catch((e) => {
      throw new Error(`${e.message}\n${logs.join('\n')}`);
    });
    const r = await page.evaluate(() => window.__result);
    assert.equal(r.error, undefined, `${r.error}\n${logs.join('\n')}`);

    assert.equal(r.worker.scope, 'DedicatedWorkerGlobalScope');
    for (const [where, got] of [['main thread', r.main], ['worker', r.worker.gen]]) {
      assert.equal(got.length, CASES.length);
      CASES.forEach((c, i) => {
        const bytes = Buffer.from(got[i], 'hex');
        const d = firstDiff(bytes, expected[i]);
        assert.equal(d, -1, `${where}, case ${JSON.stringify(c)}: first differing byte at offset ${d}`);
      });
    }

    const { losses, step } = r.worker.train;
    assert.equal(step, TRAIN.steps);
    assert.equal(losses.length, TRAIN.steps);
    assert.ok(losses.every(Number.isFinite), `non-finite loss: ${losses}`);
    // Initial loss of a byte model is about ln 256 = 5.55 nats; 8 steps at
    // lr 3e-3 take it clearly below the start (not to a converged value).
    assert.ok(losses[0] > 4.5 && losses[0] < 7, `first loss ${losses[0]} is not near ln 256`);
    assert.ok(losses.at(-1) < losses[0] - 0.05, `loss did not fall: ${losses.map((l) => l.toFixed(4)).join(' ')}`);

    // the trainer's threads in a Worker: 2 threads give one thread's bits
    const th = r.worker.threads;
    assert.equal(th.isolated, true, 'the test page is not cross-origin isolated');
    assert.deepEqual(th.runs.map((x) => x.threads), [1, THREADS.threads]);
    assert.deepEqual(th.runs[1].losses, th.runs[0].losses, 'threaded step losses differ');
    assert.equal(th.runs[1].eval, th.runs[0].eval, 'threaded held-out loss differs');
    assert.ok(th.runs[1].model === th.runs[0].model, 'threaded export differs');
  } finally {
    await ctx.close();
  }
});
