// tests/node/wasm-train.test.mjs — the float trainer inside atome.wasm:
// training lowers the held-out loss, the build flavours agree, a resumed run
// is bit-identical, checkpoints round-trip, float generation streams, and the
// options behave like the CLI's.
import test from 'node:test';
import assert from 'node:assert/strict';
import { load, corpus, ckptWeights, firstDiff } from './artifacts.mjs';

const TEXT = corpus(300000);   // 4,687 chunks of 64 bytes: 4,218 train / 469 held out
const bitsEqual = (a, b) => firstDiff(new Uint8Array(a.buffer, a.byteOffset, a.byteLength),
  new Uint8Array(b.buffer, b.byteOffset, b.byteLength)) === -1;
const f64bits = (x) => new Uint8Array(Float64Array.of(x).buffer);

const simd = await load('simd');

test('atome-60k: 40 steps in slices of 8 lower the held-out loss; the run stops at its total steps', () => {
  const m = simd.createModel('atome-60k', { seed: 1, steps: 40, lr: 3e-3 });
  assert.deepEqual(m.setData(TEXT, { split: 0.9 }), { trainChunks: 4218, evalChunks: 469 });
  assert.equal(m.quant, 'ternary');
  const before = m.evaluate({ maxChunks: 64 }).natsPerByte;
  // ln 256 = 5.545 nats is a uniform byte; an untrained model is near it.
  assert.ok(before > 5 && before < 6.5, `untrained loss ${before}`);
  let first = null;
  for (let i = 0; i < 5; i++) {
    const r = m.trainSteps(8);
    assert.equal(r.done, 8);
    first ??= r.loss;
  }
  assert.equal(m.trainSteps(100).done, 0, 'trained past --steps');
  assert.equal(m.step, 40);
  const after = m.evaluate({ maxChunks: 64 }).natsPerByte;
  // 40 steps at lr 3e-3 take TinyStories from ~5.6 to ~3 nats/byte (the
  // unigram entropy of the text is ~3.0); 1 nat of progress is a margin that
  // a broken gradient or optimiser cannot reach by chance.
  assert.ok(after < before - 1, `held-out loss ${before} -> ${after}`);
  assert.ok(m.loss < first, `train loss ${first} -> ${m.loss}`);
  m.free();
});

test('with the reference kernels, atome.wasm and atome-scalar.wasm train to the same bits', async () => {
  const scalar = await load('scalar');
  const ref = await load('simd', { env: { ATOME_KERNELS: 'ref' } });
  for (const config of ['atome-tiny', 'vanilla-tiny', 'gssm-tiny']) {
    const runs = [ref, scalar].map((a) => {
      const m = a.createModel(config, { seed: 5, steps: 4 });
      m.setData(TEXT);
      const losses = [];
      for (let i = 0; i < 4; i++) losses.push(m.trainSteps(1).loss);
      const w = ckptWeights(m.saveCheckpoint());
      m.free();
      return { losses, w };
    });
    assert.ok(bitsEqual(runs[0].w, runs[1].w), `${config}: weights differ between the -msimd128 and scalar builds`);
    runs[0].losses.forEach((l, i) => assert.ok(bitsEqual(f64bits(l), f64bits(runs[1].losses[i])), `${config}: loss of step ${i} differs`));
  }
});

test('wasm SIMD kernels and the reference kernels give the same losses to 1e-6 relative over 8 steps', async () => {
  // The kernels differ only in summation order (~1e-7 relative per product);
  // measured step losses agree to <= 5e-9 relative over 20 steps for
  // atome-60k, vanilla-60k and gssm-60k, so 1e-6 is a 200x margin that a
  // wrong gradient (a percent-level change) cannot meet.
  const ref = await load('simd', { env: { ATOME_KERNELS: 'ref' } });
  for (const config of ['atome-60k', 'vanilla-60k']) {
    const losses = [simd, ref].map((a) => {
      const m = a.createModel(config, { seed: 11, steps: 8, batch: 4 });
      m.setData(TEXT);
      const l = [];
      for (let i = 0; i < 8; i++) l.push(m.trainSteps(1).loss);
      m.free();
      return l;
    });
    losses[0].forEach((l, i) => {
      const rel = Math.abs(l - losses[1][i]) / losses[1][i];
      assert.ok(rel <= 1e-6, `${config} step ${i}: ${l} vs ${losses[1][i]} (relative ${rel})`);
    });
  }
});

test('a resumed run is bit-identical to an uninterrupted one', () => {
  for (const config of ['atome-tiny', 'vanilla-tiny']) {
    const straight = simd.createModel(config, { seed: 9, steps: 12, warmup: 3, cosine: true });
    straight.setData(TEXT);
    straight.trainSteps(6);
    const half = straight.saveCheckpoint();
    straight.trainSteps(6);
    const resumed = simd.loadCheckpoint(half);
    resumed.setData(TEXT);
    assert.equal(resumed.step, 6);
    resumed.trainSteps(6);
    assert.equal(resumed.step, 12);
    assert.ok(bitsEqual(ckptWeights(straight.saveCheckpoint()), ckptWeights(resumed.saveCheckpoint())), `${config}: weights differ`);
    assert.ok(bitsEqual(f64bits(straight.loss), f64bits(resumed.loss)), `${config}: last loss differs`);
    assert.equal(straight.lr, resumed.lr);
    straight.free(); resumed.free();
  }
});

test('checkpoints round-trip byte for byte; a corrupt one is refused with the reader\'s reason', () => {
  const m = simd.createModel('atome-tiny', { seed: 4, steps: 3 });
  const fresh = m.saveCheckpoint();
  const again = simd.loadCheckpoint(fresh);
  assert.equal(firstDiff(fresh, again.saveCheckpoint()), -1, 'untrained model');
  m.setData(TEXT, { trainName: 'tinystories-train.txt' });
  m.trainSteps(3);
  const trained = m.saveCheckpoint();
  const back = simd.loadCheckpoint(trained);
  assert.equal(firstDiff(trained, back.saveCheckpoint()), -1, 'trained model');
  assert.equal(back.step, 3);
  const bad = trained.slice();
  bad[100] ^= 1;
  assert.throws(() => simd.loadCheckpoint(bad), /CRC/);
  assert.throws(() => simd.loadCheckpoint(trained.subarray(0, 50)), /truncat|short|bytes/i);
  m.free(); again.free(); back.free();
});

test('float generation: pieces of any size give the same bytes; seeds, windows and prompts behave like the CLI', () => {
  const m = simd.createModel('atome-tiny', { seed: 2, steps: 5 });
  m.setData(TEXT);
  m.trainSteps(5);
  const opts = { n: 50, temperature: 0.9, topK: 20, seed: 7 };
  const whole = m.generateBytes('Once upon', { ...opts, chunk: 50 });
  assert.equal(whole.length, 50);
  for (const chunk of [1, 3, 16]) assert.deepEqual(m.generateBytes('Once upon', { ...opts, chunk }), whole, `chunk ${chunk}`);
  assert.notDeepEqual(m.generateBytes('Once upon', { ...opts, seed: 8 }), whole);
  // An empty prompt is one '\n', as the CLI.
  assert.deepEqual(m.generateBytes('', { n: 20 }), m.generateBytes('\n', { n: 20 }));
  const streamed = [];
  m.generateBytes('Once', { n: 10, chunk: 4 }, (p) => streamed.push(p.length));
  assert.deepEqual(streamed, [4, 4, 2]);
  const v = simd.createModel('vanilla-tiny', { seed: 1 });
  assert.throws(() => v.generate('x', { window: 65 }), (e) => e.usage && /exceeds the model's 64 learned positions/.test(e.message));
  m.free(); v.free();
});

test('options: CLI names and defaults, vanilla heads, errors', () => {
  const a = simd.createModel('atome-60k', { batch: 2 });
  assert.equal(a.quant, 'ternary');
  assert.equal(a.nParams, 60800);   // docs/cli.md: atome params --config atome-60k
  const v = simd.createModel('vanilla-60k', { dModel: 48, 'd-head': 12, batch: 2 });
  assert.equal(v.quant, 'fp32');
  assert.equal(v.nParams, simd.createModel('vanilla-60k', { dModel: 48, heads: 4, batch: 2 }).nParams);
  const g = simd.createModel('gssm-60k', { quant: 'ternary', d_inner: 40, batch: 4, seq: 32 });
  assert.equal(g.quant, 'ternary');
  assert.equal(g.batch, 4);
  assert.equal(g.seq, 32);
  const p = simd.createModel('atome-tiny', { pathways: 'conv,attn' });
  const full = simd.createModel('atome-tiny');
  assert.ok(p.nParams < full.nParams);
  full.free();
  assert.throws(() => simd.createModel('atome-1b'), /unknown config 'atome-1b'/);
  assert.throws(() => simd.createModel('atome-60k', { layers: 0 }), /layers must be 1\.\.64/);
  assert.throws(() => simd.createModel('vanilla-60k', { dHead: 7 }), /does not divide d-model 44/);
  assert.throws(() => simd.createModel('vanilla-60k', { seq: 80 }), /seq 80 needs 79 positions/);
  assert.throws(() => simd.createModel('atome-60k', { colour: 3 }), /unknown model option 'colour'/);
  assert.throws(() => simd.createModel('atome-60k', { pathways: 'conv,mlp' }), /pathways/);
  assert.throws(() => a.trainSteps(1), /no data/);
  assert.throws(() => a.setData(new Uint8Array(10)), /chunk/);
  a.free(); v.free(); g.free(); p.free();
});

// Activation sizes past 2^32 bytes (batch 2048 x seq 4096) are refused
// cleanly in 32-bit wasm (they once wrapped around and corrupted the heap,
// after which nothing else could be built); the memory grows for a large
// but possible model and is reused afterwards.
test('a model too large for the memory is refused cleanly; the next one builds, trains and scores', async () => {
  const a = await load('simd');
  for (const family of ['atome-60k', 'vanilla-60k', 'gssm-60k']) {
    const seq = family === 'vanilla-60k' ? 64 : 4096;
    assert.throws(() => a.createModel(family, { batch: 65536 / (family === 'vanilla-60k' ? 1 : 32), seq, steps: 2 }), /out of memory/, family);
  }
  const m = a.createModel('atome-60k', { batch: 16, seq: 1024, steps: 2 });
  try {
    m.setData(TEXT, { split: 0.9 });
    m.trainSteps(1);
    assert.ok(Number.isFinite(m.evaluate({ maxChunks: 2 }).natsPerByte));
  } finally { m.free(); }
});
