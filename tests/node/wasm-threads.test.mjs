// tests/node/wasm-threads.test.mjs — the trainer's thread pool in wasm:
// atome-threads.wasm with 2 and 3 threads (worker instances on one shared
// memory) trains every family to the bits of atome.wasm on one thread
// (weights, AdamW moments, losses, held-out loss, the exported model), a
// run paused, saved and resumed on another thread count equals an
// uninterrupted one, and the count is clamped to the workers started.
import test from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { loadAtome } from '../../wasm/atome.mjs';
import { wasmFile, corpus, ckptSections } from './artifacts.mjs';

const TEXT = corpus(200000);
const one = await loadAtome(readFileSync(wasmFile('simd')));
const threaded = {};
for (const n of [2, 3]) threaded[n] = await loadAtome(undefined, { threads: n, threadsSource: readFileSync(wasmFile('threads')) });
test.after(() => { for (const a of Object.values(threaded)) a.close(); });

const hex = (u8) => Buffer.from(u8).toString('hex');
// A checkpoint without its informative elapsed-time field: every section but RUNI's time.
function state(img) {
  const s = ckptSections(img);
  return ['WGHT', 'ADAM'].map((t) => hex(s.get(t) ?? new Uint8Array())).join('/');
}

function run(a, config, steps, opts = {}) {
  const m = a.createModel(config, { seed: 7, steps, batch: 8, seq: 64, ...opts });
  m.setData(TEXT, { split: 0.9 });
  const losses = [];
  for (let i = 0; i < steps; i += 3) losses.push(m.trainSteps(3).loss);
  const r = { losses, ckpt: state(m.saveCheckpoint()), eval: m.evaluate({ maxChunks: 48 }).natsPerByte };
  m.free();
  return r;
}

test('threads are what was asked, within the workers started', () => {
  assert.equal(one.threads, 1);
  assert.equal(threaded[2].threads, 2);
  assert.equal(threaded[3].threads, 3);
  assert.equal(threaded[2].setThreads(8), 2);
  assert.equal(threaded[3].setThreads(1), 1);
  assert.equal(threaded[3].setThreads(3), 3);
});

for (const [config, quant] of [['atome-60k', 'ternary'], ['atome-60k', 'fp32'], ['vanilla-60k', 'fp32'], ['gssm-60k', 'ternary']]) {
  test(`${config} ${quant}: 2 and 3 threads train the bits of one`, () => {
    const base = run(one, config, 9, { quant });
    for (const n of [2, 3]) {
      const calls = threaded[n].ex.atome_thread_calls();
      const r = run(threaded[n], config, 9, { quant });
      assert.ok(threaded[n].ex.atome_thread_calls() > calls + 9, `${n} threads: the pool was not used`);
      assert.deepEqual(r.losses, base.losses, `${n} threads: step losses`);
      assert.equal(r.eval, base.eval, `${n} threads: held-out loss`);
      assert.ok(r.ckpt === base.ckpt, `${n} threads: weights or AdamW moments differ`);
    }
  });
}

test('a run stopped on 3 threads and resumed on 2 equals an uninterrupted one-thread run', () => {
  const base = run(one, 'atome-60k', 12);
  const a = threaded[3].createModel('atome-60k', { seed: 7, steps: 12, batch: 8, seq: 64 });
  a.setData(TEXT, { split: 0.9 });
  a.trainSteps(3); a.trainSteps(3);
  const mid = a.saveCheckpoint();
  a.free();
  const b = threaded[2].loadCheckpoint(mid);
  b.setData(TEXT, { split: 0.9 });
  b.trainSteps(3); b.trainSteps(3);
  assert.ok(state(b.saveCheckpoint()) === base.ckpt, 'resumed threaded run differs');
  b.free();
});

// Fresh pools trained at once: a worker that enters its loop late must not
// miss the first calls (the caller would wait for ever), and the caller's
// wait must leave its stack intact. Before core/train/pool.c's fixes 4 of 10
// such runs of atome-944k on 2 threads trapped (memory access out of bounds).
test('eight fresh 2-thread pools train atome-944k at once, with the bits of one thread', { timeout: 120000 }, () => {
  const steps = 6, opts = { seed: 7, steps, batch: 8, seq: 64 };
  const lossesOf = (a) => {
    const m = a.createModel('atome-944k', opts);
    m.setData(TEXT, { split: 0.9 });
    const losses = [];
    while (m.step < steps) losses.push(m.trainSteps(3).loss);
    m.free();
    return losses;
  };
  const base = lossesOf(one);
  return (async () => {
    for (let i = 0; i < 8; i++) {
      const a = await loadAtome(undefined, { threads: 2, threadsSource: readFileSync(wasmFile('threads')) });
      try { assert.deepEqual(lossesOf(a), base, `fresh pool ${i}: step losses`); } finally { a.close(); }
    }
  })();
});
