// tests/node/wasm-engine-kernels.test.mjs — the integer engine's wasm SIMD128
// ternary row kernel (core/engine_wasm.c, ATM_KERNEL_WASM) against its
// plain-C twin atm_ek_matvec_ref (core/engine_ref.c) and against the exact sum
// computed here in JS, through atome.wasm's test entry atome_ek_matvec.
// Integer kernels: the results must be equal bit for bit, not close.
//
// Sizes: cols from 4 to ATM_MAX_D (1024), every multiple of 4 up to 140
// (partial 64-column chunks of every length 1..15 bytes, alone and after
// full chunks) and then around the chunk multiples up to 1024; rows 1..9
// (the 4-row groups and every leftover) and larger counts up to 300.
// Values: random trits and int16 activations, plus the extremes (all +1 or
// all -1 trits against all +-32767 and -32768; the engine's LayerNorm never
// produces -32768, atm_sat16 being symmetric, but the kernel takes it).
// Reads: the matrix and the vector placed flush against the end of linear
// memory (a read past either traps), outputs between guard words.
// Engine: atome.wasm's AUTO picks the kernel (6) for models/atome-60k.atome
// and atome-scalar.wasm the pair-sum table (2), and the logits of a packed
// model are the same under the SIMD kernel, the table and the portable
// decoder, for both trit encodings (the shipped model is ATOME02, which
// reaches the row kernels re-encoded; an exported ATOME01 one goes direct).
import test from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { load, repo, corpus, mulberry32 as rng } from './artifacts.mjs';

const KERNEL = { PORTABLE: 1, LUT: 2, WASM: 6 };
const MAX_D = 1024;

// ATOME01 rows: code 00 = 0, 01 = +1, 11 = -1 (10 never occurs), first trit in the low bits.
const CODE = [3, 0, 1];   // index trit + 1 -> code
function packRows(trits, rows, cols) {
  const nb = cols / 4, b = new Uint8Array(rows * nb);
  for (let i = 0; i < rows * cols; i++) b[i >> 2] |= CODE[trits[i] + 1] << (2 * (i & 3));
  return b;
}
function exact(trits, x, rows, cols) {
  const out = new Int32Array(rows);
  for (let r = 0; r < rows; r++) {
    let s = 0;
    for (let c = 0; c < cols; c++) s += trits[r * cols + c] * x[c];
    out[r] = s;
  }
  return out;
}

const simd = await load('simd');
const scalar = await load('scalar');
const ex = simd.ex;

const GUARD = 4, SENTINEL = 0x5a5a5a5a;
// Runs kernel `which` with b and x at the given addresses; returns the outputs.
function run(which, pb, px, rows, cols) {
  const po = ex.atome_alloc(4 * (rows + 2 * GUARD));
  assert.ok(po, 'wasm out of memory');
  try {
    new Uint32Array(ex.memory.buffer, po, rows + 2 * GUARD).fill(SENTINEL);
    const o = po + 4 * GUARD;
    assert.equal(ex.atome_ek_matvec(which, pb, rows, cols, px, o), 0, `kernel ${which} refused cols ${cols}`);
    const g = new Uint32Array(ex.memory.buffer, po, rows + 2 * GUARD);
    for (let i = 0; i < GUARD; i++)
      assert.ok(g[i] === SENTINEL && g[rows + GUARD + i] === SENTINEL, `kernel ${which} wrote outside out[${rows}]`);
    return new Int32Array(ex.memory.buffer, o, rows).slice();
  } finally { ex.atome_free(po); }
}
function put(bytes) {
  const p = ex.atome_alloc(bytes.length);
  assert.ok(p, 'wasm out of memory');
  new Uint8Array(ex.memory.buffer, p, bytes.length).set(bytes);
  return p;
}
const asBytes = (x) => new Uint8Array(x.buffer, x.byteOffset, x.byteLength);

// Both kernels on one case, matrix and vector in malloc blocks; the SIMD one
// again with each of them flush against the end of memory (the top of the
// fixed memory is never reached by malloc here: a few MiB in use).
function check(trits, x, rows, cols, tag) {
  const b = packRows(trits, rows, cols), want = exact(trits, x, rows, cols);
  const pb = put(b), px = put(asBytes(x));
  try {
    const ref = run(0, pb, px, rows, cols), got = run(1, pb, px, rows, cols);
    assert.deepEqual(ref, want, `${tag}: reference != exact sum`);
    assert.deepEqual(got, want, `${tag}: wasm kernel != exact sum`);
    const end = ex.memory.buffer.byteLength;
    const eb = end - b.length;
    new Uint8Array(ex.memory.buffer, eb, b.length).set(b);
    assert.deepEqual(run(1, eb, px, rows, cols), want, `${tag}: matrix at the end of memory`);
    const exx = end - 2 * cols;
    new Uint8Array(ex.memory.buffer, exx, 2 * cols).set(asBytes(x));
    assert.deepEqual(run(1, pb, exx, rows, cols), want, `${tag}: vector at the end of memory`);
  } finally { ex.atome_free(pb); ex.atome_free(px); }
}

const COLS = [];
for (let c = 4; c <= 140; c += 4) COLS.push(c);
for (const c of [188, 192, 196, 252, 256, 260, 316, 320, 508, 512, 516, 764, 768, 960, 964, 1020, 1024]) COLS.push(c);
const ROWS = [1, 2, 3, 4, 5, 6, 7, 8, 9, 13, 64, 300];

test('atome_ek_matvec: the wasm kernel equals the reference and the exact sum, random trits and inputs', () => {
  const r = rng(17);
  for (const cols of COLS)
    for (const rows of ROWS) {
      if (rows * cols > 120000 && rows !== 300) continue;
      const trits = Int8Array.from({ length: rows * cols }, () => (r() % 3) - 1);
      const x = Int16Array.from({ length: cols }, () => (r() % 65535) - 32767);
      check(trits, x, rows, cols, `rows ${rows} cols ${cols}`);
    }
});

test('atome_ek_matvec: extreme values (all +1 / -1 / mixed trits against +-32767, -32768)', () => {
  const r = rng(5);
  for (const cols of [4, 12, 20, 60, 64, 68, 252, 256, 1020, 1024])
    for (const rows of [1, 4, 7, 300]) {
      for (const xv of [32767, -32767, -32768])
        for (const kind of ['+1', '-1', 'rand']) {
          const trits = Int8Array.from({ length: rows * cols }, () => kind === '+1' ? 1 : kind === '-1' ? -1 : (r() % 3) - 1);
          check(trits, new Int16Array(cols).fill(xv), rows, cols, `rows ${rows} cols ${cols} x ${xv} trits ${kind}`);
        }
      // alternating extremes: every lane pair of a dot holds the largest magnitudes
      const x = Int16Array.from({ length: cols }, (_, i) => (i & 1 ? -32768 : 32767));
      const trits = Int8Array.from({ length: rows * cols }, (_, i) => (i & 1 ? -1 : 1));
      check(trits, x, rows, cols, `rows ${rows} cols ${cols} alternating`);
    }
});

test('atome_ek_matvec: bad cols refused; atome-scalar.wasm has no SIMD kernel', () => {
  for (const cols of [0, 2, 6, MAX_D + 4]) assert.equal(ex.atome_ek_matvec(1, 0, 1, cols, 0, 0), -1, `cols ${cols}`);
  assert.equal(ex.atome_ek_matvec(2, 0, 1, 4, 0, 0), -1);
  assert.equal(scalar.ex.atome_ek_matvec(1, 0, 1, 4, 0, 0), -1);
});

// The logits of n steps of a packed model under a forced kernel.
function logits(m, kernel, bytes) {
  assert.equal(m.ex.atome_engine_set_kernel(m.h, kernel), 0, `kernel ${kernel} refused`);
  m.ex.atome_engine_feed(m.h, 0, 0);
  const all = [];
  for (const b of bytes) all.push(m.step(b));
  return all;
}

test('engine: AUTO picks the wasm kernel in atome.wasm, the table in atome-scalar.wasm; same logits under each', () => {
  const blob = new Uint8Array(readFileSync(path.join(repo, 'models/atome-60k.atome')));
  const ms = simd.loadModel(blob), mc = scalar.loadModel(blob);
  try {
    assert.equal(ms.encoding, 2);
    assert.equal(ex.atome_engine_kernel(ms.h), KERNEL.WASM);
    assert.equal(scalar.ex.atome_engine_kernel(mc.h), KERNEL.LUT);
    assert.equal(scalar.ex.atome_engine_set_kernel(mc.h, KERNEL.WASM), -1);
    const text = corpus(96);
    const w = logits(ms, KERNEL.WASM, text);
    assert.equal(ex.atome_engine_kernel(ms.h), KERNEL.WASM);
    assert.deepEqual(logits(ms, KERNEL.LUT, text), w, 'pair-sum table != wasm kernel');
    assert.deepEqual(logits(ms, KERNEL.PORTABLE, text), w, 'portable != wasm kernel');
    assert.deepEqual(logits(mc, 0, text), w, 'atome-scalar.wasm != atome.wasm');
  } finally { ms.free(); mc.free(); }
});

test('engine: an ATOME01 model (rows read in place) gives the same logits under the wasm kernel and portable', () => {
  const tm = simd.createModel('atome-60k', { seed: 3, steps: 4, lr: 3e-3 });
  tm.setData(corpus(20000));
  tm.trainSteps(4);
  const m2 = simd.loadModel(tm.exportAtome({ encoding: 1 }));
  try {
    assert.equal(m2.encoding, 1);
    assert.equal(ex.atome_engine_kernel(m2.h), KERNEL.WASM);
    const text = corpus(64);
    assert.deepEqual(logits(m2, KERNEL.PORTABLE, text), logits(m2, KERNEL.WASM, text));
  } finally { m2.free(); tm.free?.(); }
});
