// tests/node/wasm-engine.test.mjs — packed `.atome` models in atome.wasm:
// export from a trained float model, the integer engine's generation through
// the JS API and the Node CLI, and the shared setting parser's rules.
// (Byte-for-byte agreement with the firmware under QEMU and with the native
// CLI is the parity harness's job; here the wasm side is pinned on its own.)
import test from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { load, corpus, nodeCli, firstDiff } from './artifacts.mjs';
import { fileKind } from '../../wasm/atome.mjs';

const dir = mkdtempSync(path.join(tmpdir(), 'atome-wasm-engine-'));
test.after(() => rmSync(dir, { recursive: true, force: true }));

const a = await load('simd');
const TEXT = corpus(200000);
const trained = a.createModel('atome-60k', { seed: 6, steps: 30, lr: 3e-3 });
trained.setData(TEXT);
trained.trainSteps(30);
const blob1 = trained.exportAtome({ encoding: 1 });
const blob2 = trained.exportAtome({ encoding: 2 });
const calibrated = trained.exportAtome({ encoding: 1, calibration: TEXT.subarray(0, 8000) });
writeFileSync(path.join(dir, 'm.atome'), blob1);

test('export: deterministic, both trit encodings, calibration changes only the formats; wrong family refused', () => {
  assert.equal(fileKind(blob1), 'atome');
  assert.equal(firstDiff(trained.exportAtome({ encoding: 1 }), blob1), -1);
  assert.ok(blob2.length < blob1.length, 'ATOME02 (5 trits per byte) is not smaller than ATOME01');
  const p1 = a.loadModel(blob1), p2 = a.loadModel(blob2), pc = a.loadModel(calibrated);
  assert.equal(p1.nParams, p2.nParams);
  // the page shows nParams: the model's parameter count, as the trainer and `atome inspect` give it
  assert.equal(p1.nParams, trained.nParams);
  assert.equal(p1.nParams, 60800);
  assert.ok(p1.storedValues > 0 && p1.storedValues < p1.nParams, 'the file stores fewer values (SSM output folded)');
  assert.equal(p1.encoding, 1);
  assert.equal(p2.encoding, 2);
  assert.equal(p1.window, 64);            // the training seq
  assert.equal(p1.trainSeq, 64);
  // Same trits and vectors in another packing: the engine computes the same.
  const opts = { n: 120, temperature: '0.9', topK: 30, seed: 5 };
  assert.deepEqual(p2.generateBytes('Once upon a time', opts), p1.generateBytes('Once upon a time', opts));
  assert.ok(pc.generateBytes('Once', { n: 40 }).length === 40);
  const v = a.createModel('vanilla-tiny');
  assert.throws(() => v.exportAtome(), /only the atome family can be packed/);
  assert.throws(() => trained.exportAtome({ encoding: 3 }), /encoding/);
  v.free(); p1.free(); p2.free(); pc.free();
});

test('greedy generation is the argmax of the engine logits, fed back byte by byte', () => {
  const p = a.loadModel(blob1);
  const out = p.generateBytes('The cat', { n: 40 });
  p.open(blob1);                          // fresh state
  let logits;
  for (const b of Buffer.from('The cat')) logits = p.step(b);
  for (let i = 0; i < 40; i++) {
    let best = 0;
    for (let v = 1; v < logits.length; v++) if (logits[v] > logits[best]) best = v;
    assert.equal(out[i], best, `byte ${i}`);
    logits = p.step(best);
  }
  // a byte outside the vocabulary is refused with the reason, not fed as 0
  for (const bad of [-1, 256, 1000]) assert.throws(() => p.step(bad), /^Error: byte -?\d+ is outside the model's vocabulary of 256$/);
  p.free();
});

test('pieces of any size give the same bytes; seed, window and empty prompt behave like the CLI', () => {
  const p = a.loadModel(blob1);
  const opts = { n: 64, temperature: 1, topP: 0.9, seed: 42 };
  const whole = p.generateBytes('Lily', { ...opts, chunk: 64 });
  for (const chunk of [1, 5, 17]) assert.deepEqual(p.generateBytes('Lily', { ...opts, chunk }), whole, `chunk ${chunk}`);
  assert.notDeepEqual(p.generateBytes('Lily', { ...opts, seed: 43 }), whole);
  assert.deepEqual(p.generateBytes('', { n: 30 }), p.generateBytes('\n', { n: 30 }));
  // A long prompt at window 8 differs from the default window 64.
  const long = 'Once upon a time there was a little girl who loved to play.';
  const s = { n: 60, temperature: 1, seed: 1 };
  const w8 = p.generateBytes(long, { ...s, window: 8 });
  assert.equal(p.window, 8);
  assert.notDeepEqual(p.generateBytes(long, s), w8);
  assert.equal(p.window, 64);
  assert.deepEqual(p.generateBytes(long, { ...s, window: 8 }), w8);
  p.free();
});

test('settings are decimal text for the shared fixed-point parser (numbers are written as text)', () => {
  const p = a.loadModel(blob1);
  const gen = (t, extra = {}) => p.generateBytes('Once', { n: 30, seed: 9, temperature: t, ...extra });
  assert.deepEqual(gen(0.8), gen('0.8'));
  assert.deepEqual(gen('0.80'), gen('.8'));
  assert.deepEqual(gen(0), gen(null));   // 0 = greedy = default
  for (const bad of ['1e-1', '-1', '+1', ' 1', 'nan', '100.00001', '0x1', '0.1234567891'])
    assert.throws(() => gen(bad), (e) => e.usage && /--temperature must be a decimal number in 0\.\.100, at most 9 decimals/.test(e.message), bad);
  assert.throws(() => gen(1, { topP: '1.01' }), (e) => e.usage && /--top-p must be a decimal number in 0\.\.1/.test(e.message));
  assert.throws(() => gen(1, { topK: '-3' }), (e) => e.usage && /--top-k must be an integer in 0\.\.2147483647/.test(e.message));
  // top-p 0 keeps only the most likely byte: greedy.
  assert.deepEqual(gen(1, { topP: '0' }), gen(0));
  assert.throws(() => p.generateBytes('x', { window: 70000 }), (e) => e.usage && /exceeds the engine's 65535 positions/.test(e.message));
  const bad = blob1.slice();
  bad[bad.length - 1] ^= 1;
  assert.throws(() => a.loadModel(bad), /CRC/);
  p.free();
});

test('node wasm/atome.mjs generate on a .atome file writes what the JS API generates', async () => {
  const p = a.loadModel(blob1);
  const file = path.join(dir, 'm.atome');
  for (const [args, opts] of [
    [['--prompt', 'Once upon a time', '--n', '100'], { n: 100 }],
    [['--prompt-hex', 'c3a9e282ac', '--n', '64', '--temperature', '0.7', '--top-k', '12', '--seed', '3', '--window', '32'],
      { n: 64, temperature: '0.7', topK: 12, seed: 3, window: 32 }],
    [['--prompt-hex=', '--n', '50', '--temperature=1', '--top-p', '0.5', '--seed', '0'], { n: 50, temperature: '1', topP: '0.5', seed: 0 }],
  ]) {
    const r = await nodeCli(['generate', '--model', file, ...args]);
    assert.equal(r.code, 0, r.stderr);
    const want = p.generateBytes(args[0] === '--prompt' ? args[1] : Buffer.from((args[1] ?? '').replace(/^$/, ''), 'hex'), opts);
    assert.equal(firstDiff(r.stdout, want), -1, args.join(' '));
  }
  for (const [args, msg] of [
    [['--temperature', '1e-1'], "atome: generate: --temperature must be a decimal number in 0..100, at most 9 decimals (got '1e-1')\n"],
    [['--top-p', '2'], "atome: generate: --top-p must be a decimal number in 0..1, at most 9 decimals (got '2')\n"],
    [['--window', '65536'], "atome: generate: --window 65536 exceeds the engine's 65535 positions\n"],
  ]) {
    const r = await nodeCli(['generate', '--model', file, '--prompt', 'a', '--n', '5', ...args]);
    assert.deepEqual({ code: r.code, stderr: r.stderr, out: r.stdout.length }, { code: 2, stderr: msg, out: 0 });
  }
  p.free();
});
