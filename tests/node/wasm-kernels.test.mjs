// tests/node/wasm-kernels.test.mjs — the wasm SIMD matmul kernels
// (core/train/kernels/kernels_wasm.c) against the plain-C reference kernels
// (atm_matmul_*_ref of core/train/kernels/layers.c) and against a product computed
// in double, on every combination of N, IC, OC in {1, 3, 5, 15, 17, 63, 64,
// 65, 256}: sizes below, at and around the 4-float vector, the 16-column
// block and the 128-row dw slab; plus every row count left over by the
// 2/3/4/6-row tiles next to full and partial 16-column blocks.
//
// Accuracy: every result must be within Higham's bound of the exact value,
//   |computed - exact| <= gamma(K+1) * sum |terms|,  gamma(n) = n u / (1 - n u), u = 2^-24,
// where K is the length of the dot product (+1 for the initial value a
// backward accumulates onto). Any summation order of rounded products and
// sums satisfies it, so it is the right relative tolerance for kernels that
// reorder the sum; a dropped or doubled term breaks it by orders of magnitude
// (the exact value moves by a whole |term|, the bound is ~K*6e-8 of all
// terms). The products are exact in double (24+24 bits), so the double sum is
// the exact value to ~1e-16 relative.
import test from 'node:test';
import assert from 'node:assert/strict';
import { load, rng01 as rng } from './artifacts.mjs';

const SIZES = [1, 3, 5, 15, 17, 63, 64, 65, 256];
const U = 2 ** -24;
const gamma = (n) => (n * U) / (1 - n * U);

const fill = (f, r) => { for (let i = 0; i < f.length; i++) f[i] = Math.fround(2 * r() - 1); return f; };

// Exact products in double: out[N][OC] = inp . w^T, plus the bound per element.
function refForward(inp, w, N, IC, OC) {
  const val = new Float64Array(N * OC), bnd = new Float64Array(N * OC);
  for (let n = 0; n < N; n++)
    for (let o = 0; o < OC; o++) {
      let s = 0, a = 0;
      for (let i = 0; i < IC; i++) { const t = inp[n * IC + i] * w[o * IC + i]; s += t; a += Math.abs(t); }
      val[n * OC + o] = s; bnd[n * OC + o] = gamma(IC + 1) * a;
    }
  return { val, bnd };
}
function refDinp(dinp0, dout, w, N, IC, OC) {
  const val = Float64Array.from(dinp0), abs = Float64Array.from(dinp0, Math.abs), bnd = new Float64Array(N * IC);
  for (let n = 0; n < N; n++)
    for (let o = 0; o < OC; o++) {
      const g = dout[n * OC + o];
      for (let i = 0; i < IC; i++) { const t = g * w[o * IC + i]; val[n * IC + i] += t; abs[n * IC + i] += Math.abs(t); }
    }
  for (let j = 0; j < bnd.length; j++) bnd[j] = gamma(OC + 1) * abs[j];
  return { val, bnd };
}
function refDw(dw0, dout, inp, N, IC, OC) {
  const val = Float64Array.from(dw0), abs = Float64Array.from(dw0, Math.abs), bnd = new Float64Array(OC * IC);
  for (let n = 0; n < N; n++)
    for (let o = 0; o < OC; o++) {
      const g = dout[n * OC + o];
      for (let i = 0; i < IC; i++) { const t = g * inp[n * IC + i]; val[o * IC + i] += t; abs[o * IC + i] += Math.abs(t); }
    }
  for (let j = 0; j < bnd.length; j++) bnd[j] = gamma(N + 1) * abs[j];
  return { val, bnd };
}

function checkBound(got, ref, what) {
  for (let j = 0; j < got.length; j++) {
    const err = Math.abs(got[j] - ref.val[j]);
    if (!(err <= ref.bnd[j]))
      assert.fail(`${what}: element ${j} = ${got[j]}, exact ${ref.val[j]}, error ${err} > bound ${ref.bnd[j]}`);
  }
}
const sameBits = (a, b) => {
  const x = new Uint32Array(a.buffer, a.byteOffset, a.length), y = new Uint32Array(b.buffer, b.byteOffset, b.length);
  for (let i = 0; i < x.length; i++) if (x[i] !== y[i]) return i;
  return -1;
};

// Buffers in wasm memory, with 8 guard floats on each side of every output.
const GUARD = 8, SENTINEL = 0x7fa5a5a5; // a NaN pattern no kernel computes
class Arena {
  constructor(a) { this.a = a; this.blocks = []; }
  put(src, guarded = false) {
    const n = src.length, g = guarded ? GUARD : 0;
    const p = this.a.ex.atome_alloc(4 * (n + 2 * g) + 4); // +4: room to shift by one float
    assert.ok(p, 'wasm out of memory');
    this.blocks.push(p);
    const base = p + 4 * g;
    if (g) new Uint32Array(this.a.memory.buffer, p, n + 2 * g).fill(SENTINEL);
    this.a.f32(base, n).set(src);
    return base;
  }
  guardsIntact(base, n) {
    const u = new Uint32Array(this.a.memory.buffer, base - 4 * GUARD, n + 2 * GUARD);
    for (let i = 0; i < GUARD; i++) if (u[i] !== SENTINEL || u[n + GUARD + i] !== SENTINEL) return false;
    return true;
  }
  get(base, n) { return this.a.f32(base, n).slice(); }
  free() { for (const p of this.blocks) this.a.ex.atome_free(p); this.blocks = []; }
}

// Copies src flush against the end of linear memory: a kernel that reads one
// float past its input traps ("memory access out of bounds"). The top of the
// fixed memory is never reached by malloc in this test (a few MiB in use).
function atEnd(a, src) {
  const end = a.memory.buffer.byteLength, p = end - 4 * src.length;
  a.f32(p, src.length).set(src);
  return p;
}

const simd = await load('simd');
const scalar = await load('scalar');

test('module kernel sets: atome.wasm dispatches to wasm-simd, atome-scalar.wasm to ref', () => {
  assert.equal(simd.kernels(), 'wasm-simd');
  assert.equal(scalar.kernels(), 'ref');
  assert.throws(() => scalar.useKernels('wasm-simd'), /not available/);
});

test('forward, dinp and dw on every size combination: within the rounding bound, reference bits equal in both modules', () => {
  const r = rng(1234);
  let cases = 0;
  for (const N of SIZES) for (const IC of SIZES) for (const OC of SIZES) {
    const inp = fill(new Float32Array(N * IC), r), w = fill(new Float32Array(OC * IC), r);
    const dout = fill(new Float32Array(N * OC), r);
    const dinp0 = fill(new Float32Array(N * IC), r), dw0 = fill(new Float32Array(OC * IC), r);
    const rf = refForward(inp, w, N, IC, OC), rdi = refDinp(dinp0, dout, w, N, IC, OC), rdw = refDw(dw0, dout, inp, N, IC, OC);
    const results = {};
    for (const [mod, which, label] of [[simd, 1, 'simd'], [simd, 0, 'ref(simd module)'], [scalar, 0, 'ref(scalar module)']]) {
      const A = new Arena(mod);
      const pi = A.put(inp), pw = A.put(w), pd = A.put(dout);
      const po = A.put(new Float32Array(N * OC).fill(NaN), true);
      const pdi = A.put(dinp0, true), pdw = A.put(dw0, true);
      const tag = `${label} N=${N} IC=${IC} OC=${OC}`;
      mod.ex.atome_matmul_fwd(which, po, pi, pw, N, IC, OC);
      mod.ex.atome_matmul_bwd(which, pdi, pdw, pd, pi, pw, N, IC, OC);
      assert.ok(A.guardsIntact(po, N * OC) && A.guardsIntact(pdi, N * IC) && A.guardsIntact(pdw, OC * IC), `${tag}: wrote outside an output`);
      const out = A.get(po, N * OC), di = A.get(pdi, N * IC), dw = A.get(pdw, OC * IC);
      checkBound(out, rf, `${tag} forward`);
      checkBound(di, rdi, `${tag} dinp`);
      checkBound(dw, rdw, `${tag} dw`);
      results[label] = { out, di, dw };
      A.free();
    }
    for (const k of ['out', 'di', 'dw'])
      assert.equal(sameBits(results['ref(simd module)'][k], results['ref(scalar module)'][k]), -1,
        `N=${N} IC=${IC} OC=${OC} ${k}: the reference kernels differ between the -msimd128 and scalar builds`);
    cases++;
  }
  assert.equal(cases, SIZES.length ** 3);
});

test('tile edges: every leftover row count of the 2/3/4/6-row tiles, with 1..4-vector column blocks', () => {
  const r = rng(4321);
  for (const N of [2, 4, 6, 7, 8, 9, 10, 11, 12, 13]) for (const OC of [4, 8, 12, 16, 20, 24, 28, 30]) for (const IC of [2, 16]) {
    const inp = fill(new Float32Array(N * IC), r), w = fill(new Float32Array(OC * IC), r);
    const dout = fill(new Float32Array(N * OC), r);
    const dinp0 = fill(new Float32Array(N * IC), r), dw0 = fill(new Float32Array(OC * IC), r);
    const A = new Arena(simd);
    const pi = A.put(inp), pw = A.put(w), pd = A.put(dout);
    const po = A.put(new Float32Array(N * OC).fill(NaN), true), pdi = A.put(dinp0, true), pdw = A.put(dw0, true);
    const tag = `N=${N} IC=${IC} OC=${OC}`;
    simd.ex.atome_matmul_fwd(1, po, pi, pw, N, IC, OC);
    simd.ex.atome_matmul_bwd(1, pdi, pdw, pd, pi, pw, N, IC, OC);
    assert.ok(A.guardsIntact(po, N * OC) && A.guardsIntact(pdi, N * IC) && A.guardsIntact(pdw, OC * IC), `${tag}: wrote outside an output`);
    checkBound(A.get(po, N * OC), refForward(inp, w, N, IC, OC), `${tag} forward`);
    checkBound(A.get(pdi, N * IC), refDinp(dinp0, dout, w, N, IC, OC), `${tag} dinp`);
    checkBound(A.get(pdw, OC * IC), refDw(dw0, dout, inp, N, IC, OC), `${tag} dw`);
    A.free();
  }
});

test('no reads past any input (inputs flush against the end of memory)', () => {
  const r = rng(99);
  for (const [N, IC, OC] of [[1, 1, 1], [3, 5, 17], [17, 15, 3], [63, 65, 5], [65, 3, 64], [256, 17, 15], [5, 256, 1]]) {
    const inp = fill(new Float32Array(N * IC), r), w = fill(new Float32Array(OC * IC), r), dout = fill(new Float32Array(N * OC), r);
    const A = new Arena(simd);
    const pi = A.put(inp), pw = A.put(w), pd = A.put(dout);
    const po = A.put(new Float32Array(N * OC)), pdi = A.put(new Float32Array(N * IC)), pdw = A.put(new Float32Array(OC * IC));
    const tag = `N=${N} IC=${IC} OC=${OC}`;
    assert.doesNotThrow(() => simd.ex.atome_matmul_fwd(1, po, atEnd(simd, inp), pw, N, IC, OC), `${tag} forward reads past inp`);
    assert.doesNotThrow(() => simd.ex.atome_matmul_fwd(1, po, pi, atEnd(simd, w), N, IC, OC), `${tag} forward reads past w`);
    assert.doesNotThrow(() => simd.ex.atome_matmul_bwd(1, pdi, pdw, atEnd(simd, dout), pi, pw, N, IC, OC), `${tag} backward reads past dout`);
    assert.doesNotThrow(() => simd.ex.atome_matmul_bwd(1, pdi, pdw, pd, atEnd(simd, inp), pw, N, IC, OC), `${tag} backward reads past inp`);
    assert.doesNotThrow(() => simd.ex.atome_matmul_bwd(1, pdi, pdw, pd, pi, atEnd(simd, w), N, IC, OC), `${tag} backward reads past w`);
    A.free();
  }
  // The check itself works: reading one float beyond the end traps.
  const p = atEnd(simd, new Float32Array(4));
  assert.throws(() => simd.ex.atome_matmul_fwd(1, p, p + 4, p, 1, 4, 1), /out of bounds/);
});

test('NULL gradients are skipped; each gradient is the same bits alone or together; results do not depend on alignment', () => {
  const r = rng(7);
  for (const [N, IC, OC] of [[63, 17, 5], [64, 64, 3], [1008, 64, 16], [5, 65, 256]]) {
    const inp = fill(new Float32Array(N * IC), r), w = fill(new Float32Array(OC * IC), r), dout = fill(new Float32Array(N * OC), r);
    const dinp0 = fill(new Float32Array(N * IC), r), dw0 = fill(new Float32Array(OC * IC), r);
    const A = new Arena(simd);
    const pi = A.put(inp), pw = A.put(w), pd = A.put(dout);
    const both = [A.put(dinp0), A.put(dw0)], onlyDi = A.put(dinp0), onlyDw = A.put(dw0);
    simd.ex.atome_matmul_bwd(1, both[0], both[1], pd, pi, pw, N, IC, OC);
    simd.ex.atome_matmul_bwd(1, onlyDi, 0, pd, pi, pw, N, IC, OC);
    simd.ex.atome_matmul_bwd(1, 0, onlyDw, pd, pi, pw, N, IC, OC);
    const tag = `N=${N} IC=${IC} OC=${OC}`;
    assert.equal(sameBits(A.get(both[0], N * IC), A.get(onlyDi, N * IC)), -1, `${tag}: dinp depends on dw being requested`);
    assert.equal(sameBits(A.get(both[1], OC * IC), A.get(onlyDw, OC * IC)), -1, `${tag}: dw depends on dinp being requested`);
    // Shifted copies (one float later: 4-byte instead of 8/16-byte alignment).
    const sh = (p, n) => { const q = p + 4; simd.f32(q, n).set(simd.f32(p, n).slice()); return q; };
    const pi2 = sh(A.put(inp), N * IC), pw2 = sh(A.put(w), OC * IC), pd2 = sh(A.put(dout), N * OC);
    const o1 = A.put(new Float32Array(N * OC)), o2 = sh(A.put(new Float32Array(N * OC)), N * OC);
    const di2 = sh(A.put(dinp0), N * IC), dw2 = sh(A.put(dw0), OC * IC);
    simd.ex.atome_matmul_fwd(1, o1, pi, pw, N, IC, OC);
    simd.ex.atome_matmul_fwd(1, o2, pi2, pw2, N, IC, OC);
    simd.ex.atome_matmul_bwd(1, di2, dw2, pd2, pi2, pw2, N, IC, OC);
    assert.equal(sameBits(A.get(o1, N * OC), A.get(o2, N * OC)), -1, `${tag}: forward depends on alignment`);
    assert.equal(sameBits(A.get(both[0], N * IC), A.get(di2, N * IC)), -1, `${tag}: dinp depends on alignment`);
    assert.equal(sameBits(A.get(both[1], OC * IC), A.get(dw2, OC * IC)), -1, `${tag}: dw depends on alignment`);
    A.free();
  }
});

test('degenerate sizes: IC = 0 writes zeros; N = 0 or OC = 0 touches nothing', () => {
  const A = new Arena(simd);
  const out = A.put(new Float32Array(6).fill(NaN), true), x = A.put(new Float32Array(6).fill(1));
  simd.ex.atome_matmul_fwd(1, out, x, x, 2, 0, 3);
  assert.deepEqual([...A.get(out, 6)], [0, 0, 0, 0, 0, 0]);
  const d = A.put(new Float32Array(6).fill(5), true);
  simd.ex.atome_matmul_fwd(1, d, x, x, 0, 3, 2);
  simd.ex.atome_matmul_fwd(1, d, x, x, 2, 3, 0);
  simd.ex.atome_matmul_bwd(1, d, d, x, x, x, 0, 3, 2);
  simd.ex.atome_matmul_bwd(1, d, d, x, x, x, 2, 3, 0);
  simd.ex.atome_matmul_bwd(1, d, d, x, x, x, 2, 0, 3);
  assert.deepEqual([...A.get(d, 6)], [5, 5, 5, 5, 5, 5]);
  assert.ok(A.guardsIntact(out, 6) && A.guardsIntact(d, 6));
  A.free();
});
