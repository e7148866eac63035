/* core/train/kernels_layers_wasm.c — wasm SIMD128 layer kernels (wasm
 * -msimd128 only): layernorm forward/backward, softmax + cross-entropy
 * forward/backward and the vector exp of kernels_layers.h.
 *
 * Contract: the contract of kernels_layers.h for every function here, with
 * the x86 sets' algorithms (kernels_x86_layers_tmpl.h) on 4-float vectors:
 *   layernorm   the reference's formulas and per-element rounding; only the
 *               row sums are taken in 4 lanes, then across lanes as
 *               (l0 + l2) + (l1 + l3).
 *   xent        exp is atm_exp_wasm below; row max, row sum (lanes, then
 *               across), 1/sum and libm logf of the sum as the reference;
 *               the backward is bit-identical to the reference.
 *   exp         2^n e^r with Cody-Waite reduction and Cephes expf's degree-5
 *               polynomial, as the x86 sets, but with a separate multiply and
 *               add (wasm has no FMA); measured error in
 *               tests/node/wasm-layers.test.mjs and docs/wasm.md.
 *   attn_select bit-identical to the reference: the scores of 4 positions
 *               at a time summed over e in order (multiply, then add), then
 *               scaled; the reference's insertion sequence, where a group of
 *               4 scores none of which exceeds the current threshold is
 *               skipped with one compare (the threshold never decreases, so
 *               the reference would reject them too).
 *   attn_forward the reference's loop with the selection above, libm's
 *               softmax (the set's softmax is the reference: its vector exp
 *               would buy nothing on 4 scores) and 4-lane axpy: bit-identical
 *               to the reference.
 * Rows are independent and computed in an order that depends only on their
 * length; column tails use lane loads/stores (no reads or writes outside the
 * buffers). Functions of the layer set without a vector version here are the
 * references themselves (kernels_layers.c). */
#if defined(__wasm_simd128__)
#include <math.h>
#include <stddef.h>
#include <wasm_simd128.h>
#include "atome_layers.h"
#include "kernels_layers.h"

#define KL_INLINE static inline __attribute__((always_inline))

/* n = 1..4 floats at p into the low lanes, zeros above. */
KL_INLINE v128_t kl_load(const float *p, const int n) {
    switch (n) {
    case 1: return wasm_v128_load32_zero(p);
    case 2: return wasm_v128_load64_zero(p);
    case 3: return wasm_v128_load32_lane(p + 2, wasm_v128_load64_zero(p), 2);
    default: return wasm_v128_load(p);
    }
}

/* The low n = 1..4 lanes of v to p. */
KL_INLINE void kl_store(float *p, v128_t v, const int n) {
    switch (n) {
    case 1: wasm_v128_store32_lane(p, v, 0); break;
    case 2: wasm_v128_store64_lane(p, v, 0); break;
    case 3: wasm_v128_store64_lane(p, v, 0); wasm_v128_store32_lane(p + 2, v, 2); break;
    default: wasm_v128_store(p, v); break;
    }
}

/* All-ones in lanes 0..n-1 (n = 0..4). */
KL_INLINE v128_t kl_mask(int n) {
    return wasm_i32x4_gt(wasm_i32x4_splat(n), wasm_i32x4_make(0, 1, 2, 3));
}

KL_INLINE float kl_hsum(v128_t v) {
    v128_t s = wasm_f32x4_add(v, wasm_i32x4_shuffle(v, v, 2, 3, 0, 1));
    return wasm_f32x4_extract_lane(s, 0) + wasm_f32x4_extract_lane(s, 1);
}

/* Largest lane; pmax (b > a ? b : a) never picks a NaN over a number, as
 * the reference's "if (x > mx) mx = x". */
KL_INLINE float kl_hmax(v128_t v) {
    v128_t m = wasm_f32x4_pmax(v, wasm_i32x4_shuffle(v, v, 2, 3, 0, 1));
    m = wasm_f32x4_pmax(m, wasm_i32x4_shuffle(m, m, 1, 0, 3, 2));
    return wasm_f32x4_extract_lane(m, 0);
}

/* ---- vector exp (constants of kernels_x86.c: Cephes expf, S. Moshier) ---- */
#define KL_EXP_LO -104.0f                /* exp(x) < 2^-150 rounds to 0 below */
#define KL_LOG2E 1.44269504088896341f
#define KL_LN2_HI 0.693359375f           /* 8 significant bits: n * LN2_HI is exact */
#define KL_LN2_LO -2.12194440e-4f        /* ln 2 - LN2_HI */
#define KL_EXP_P0 1.9875691500e-4f
#define KL_EXP_P1 1.3981999507e-3f
#define KL_EXP_P2 8.3334519073e-3f
#define KL_EXP_P3 4.1665795894e-2f
#define KL_EXP_P4 1.6666665459e-1f
#define KL_EXP_P5 5.0000001201e-1f

/* exp of 4 lanes for x <= 88 (the callers pass x <= 0). NaN stays NaN.
 * 2^n = 2^n1 * 2^n2 with n1 = max(n, -125): p * 2^n1 is exact and only the
 * second product can round (into the subnormals). */
KL_INLINE v128_t kl_exp(v128_t x) {
    x = wasm_f32x4_pmax(x, wasm_f32x4_splat(KL_EXP_LO));   /* x < LO ? LO : x, so NaN stays */
    v128_t n = wasm_f32x4_nearest(wasm_f32x4_mul(x, wasm_f32x4_splat(KL_LOG2E)));
    v128_t r = wasm_f32x4_sub(x, wasm_f32x4_mul(n, wasm_f32x4_splat(KL_LN2_HI)));
    r = wasm_f32x4_sub(r, wasm_f32x4_mul(n, wasm_f32x4_splat(KL_LN2_LO)));
    v128_t p = wasm_f32x4_splat(KL_EXP_P0);
    p = wasm_f32x4_add(wasm_f32x4_mul(p, r), wasm_f32x4_splat(KL_EXP_P1));
    p = wasm_f32x4_add(wasm_f32x4_mul(p, r), wasm_f32x4_splat(KL_EXP_P2));
    p = wasm_f32x4_add(wasm_f32x4_mul(p, r), wasm_f32x4_splat(KL_EXP_P3));
    p = wasm_f32x4_add(wasm_f32x4_mul(p, r), wasm_f32x4_splat(KL_EXP_P4));
    p = wasm_f32x4_add(wasm_f32x4_mul(p, r), wasm_f32x4_splat(KL_EXP_P5));
    p = wasm_f32x4_add(wasm_f32x4_mul(p, wasm_f32x4_mul(r, r)), r);
    p = wasm_f32x4_add(p, wasm_f32x4_splat(1.0f));
    v128_t ni = wasm_i32x4_trunc_sat_f32x4(n);              /* n is integral and in range */
    v128_t n1 = wasm_i32x4_max(ni, wasm_i32x4_splat(-125));
    v128_t n2 = wasm_i32x4_sub(ni, n1);
    v128_t s1 = wasm_i32x4_shl(wasm_i32x4_add(n1, wasm_i32x4_splat(127)), 23);
    v128_t s2 = wasm_i32x4_shl(wasm_i32x4_add(n2, wasm_i32x4_splat(127)), 23);
    return wasm_f32x4_mul(wasm_f32x4_mul(p, s1), s2);
}

void atm_exp_wasm(float *y, const float *x, int n) {
    int i = 0;
    for (; i + 4 <= n; i += 4) wasm_v128_store(y + i, kl_exp(wasm_v128_load(x + i)));
    if (i < n) kl_store(y + i, kl_exp(kl_load(x + i, n - i)), n - i);
}

/* ---- layernorm ---- */

void atm_layernorm_forward_wasm(float *out, float *mean, float *rstd, const float *inp,
                                const float *g, const float *b, int N, int C) {
    if (N <= 0) return;
    if (C <= 0) { atm_layernorm_forward_ref(out, mean, rstd, inp, g, b, N, C); return; }
    const int full = C / 4 * 4, tail = C - full;
    const v128_t m = kl_mask(tail);
    for (int n = 0; n < N; n++) {
        const float *x = inp + (size_t)n * C;
        float *o = out + (size_t)n * C;
        int i;
        v128_t acc = wasm_f32x4_splat(0.0f);
        for (i = 0; i < full; i += 4) acc = wasm_f32x4_add(acc, wasm_v128_load(x + i));
        if (tail) acc = wasm_f32x4_add(acc, kl_load(x + i, tail));
        const float mu = kl_hsum(acc) / (float)C;
        const v128_t mv = wasm_f32x4_splat(mu);
        acc = wasm_f32x4_splat(0.0f);
        for (i = 0; i < full; i += 4) {
            v128_t d = wasm_f32x4_sub(wasm_v128_load(x + i), mv);
            acc = wasm_f32x4_add(acc, wasm_f32x4_mul(d, d));
        }
        if (tail) {
            v128_t d = wasm_v128_and(wasm_f32x4_sub(kl_load(x + i, tail), mv), m);
            acc = wasm_f32x4_add(acc, wasm_f32x4_mul(d, d));
        }
        const float var = kl_hsum(acc) / (float)C;
        const float s = 1.0f / sqrtf(var + ATM_LN_EPS);   /* f32.sqrt: correctly rounded */
        const v128_t sv = wasm_f32x4_splat(s);
        /* ((x - mu) * s) * g + b, rounded after each operation as the reference */
        for (i = 0; i < full; i += 4)
            wasm_v128_store(o + i, wasm_f32x4_add(wasm_f32x4_mul(wasm_f32x4_mul(wasm_f32x4_sub(
                wasm_v128_load(x + i), mv), sv), wasm_v128_load(g + i)), wasm_v128_load(b + i)));
        if (tail)
            kl_store(o + i, wasm_f32x4_add(wasm_f32x4_mul(wasm_f32x4_mul(wasm_f32x4_sub(
                kl_load(x + i, tail), mv), sv), kl_load(g + i, tail)), kl_load(b + i, tail)), tail);
        if (mean) mean[n] = mu;
        if (rstd) rstd[n] = s;
    }
}

void atm_layernorm_backward_wasm(float *dinp, float *dg, float *db, const float *dout,
                                 const float *inp, const float *g, const float *mean,
                                 const float *rstd, int N, int C) {
    if (N <= 0 || C <= 0) return;
    const int full = C / 4 * 4, tail = C - full;
    const v128_t m = kl_mask(tail);
    for (int n = 0; n < N; n++) {
        const float *x = inp + (size_t)n * C, *d = dout + (size_t)n * C;
        const v128_t mv = wasm_f32x4_splat(mean[n]), sv = wasm_f32x4_splat(rstd[n]);
        v128_t a1 = wasm_f32x4_splat(0.0f), a2 = a1;
        int i;
        for (i = 0; i < full; i += 4) {
            v128_t xh = wasm_f32x4_mul(wasm_f32x4_sub(wasm_v128_load(x + i), mv), sv);
            v128_t dn = wasm_f32x4_mul(wasm_v128_load(g + i), wasm_v128_load(d + i));
            a1 = wasm_f32x4_add(a1, dn);
            a2 = wasm_f32x4_add(a2, wasm_f32x4_mul(dn, xh));
        }
        if (tail) {
            v128_t xh = wasm_f32x4_mul(wasm_f32x4_sub(kl_load(x + i, tail), mv), sv);
            v128_t dn = wasm_f32x4_mul(kl_load(g + i, tail), kl_load(d + i, tail));
            a1 = wasm_f32x4_add(a1, dn);
            a2 = wasm_f32x4_add(a2, wasm_v128_and(wasm_f32x4_mul(dn, xh), m));
        }
        const v128_t dm = wasm_f32x4_splat(kl_hsum(a1) / (float)C), dnm = wasm_f32x4_splat(kl_hsum(a2) / (float)C);
        float *di = dinp ? dinp + (size_t)n * C : NULL;
        /* the reference's per-element expressions, operation for operation */
        for (i = 0; i < full; i += 4) {
            v128_t dv = wasm_v128_load(d + i);
            v128_t xh = wasm_f32x4_mul(wasm_f32x4_sub(wasm_v128_load(x + i), mv), sv);
            if (db) wasm_v128_store(db + i, wasm_f32x4_add(wasm_v128_load(db + i), dv));
            if (dg) wasm_v128_store(dg + i, wasm_f32x4_add(wasm_v128_load(dg + i), wasm_f32x4_mul(xh, dv)));
            if (di) {
                v128_t dn = wasm_f32x4_mul(wasm_v128_load(g + i), dv);
                v128_t r = wasm_f32x4_mul(wasm_f32x4_sub(wasm_f32x4_sub(dn, dm), wasm_f32x4_mul(xh, dnm)), sv);
                wasm_v128_store(di + i, wasm_f32x4_add(wasm_v128_load(di + i), r));
            }
        }
        if (tail) {
            v128_t dv = kl_load(d + i, tail);
            v128_t xh = wasm_f32x4_mul(wasm_f32x4_sub(kl_load(x + i, tail), mv), sv);
            if (db) kl_store(db + i, wasm_f32x4_add(kl_load(db + i, tail), dv), tail);
            if (dg) kl_store(dg + i, wasm_f32x4_add(kl_load(dg + i, tail), wasm_f32x4_mul(xh, dv)), tail);
            if (di) {
                v128_t dn = wasm_f32x4_mul(kl_load(g + i, tail), dv);
                v128_t r = wasm_f32x4_mul(wasm_f32x4_sub(wasm_f32x4_sub(dn, dm), wasm_f32x4_mul(xh, dnm)), sv);
                kl_store(di + i, wasm_f32x4_add(kl_load(di + i, tail), r), tail);
            }
        }
    }
}

/* ---- softmax + cross-entropy ---- */

double atm_xent_forward_wasm(float *probs, const float *logits, const uint8_t *tgt, int N, int V) {
    if (N <= 0) return 0.0;
    if (V <= 0) return atm_xent_forward_ref(probs, logits, tgt, N, V);
    const int full = V / 4 * 4, tail = V - full;
    const v128_t m = kl_mask(tail), ninf = wasm_f32x4_splat(-INFINITY);
    double sum = 0.0;
    for (int n = 0; n < N; n++) {
        const float *l = logits + (size_t)n * V;
        float *p = probs + (size_t)n * V;
        int i;
        v128_t mx = ninf;
        for (i = 0; i < full; i += 4) mx = wasm_f32x4_pmax(mx, wasm_v128_load(l + i));
        if (tail) mx = wasm_f32x4_pmax(mx, wasm_v128_bitselect(kl_load(l + i, tail), ninf, m));
        const float mxs = kl_hmax(mx);
        const float zt = tgt ? l[tgt[n]] - mxs : 0.0f;   /* read before p (which may alias l) is written */
        const v128_t mv = wasm_f32x4_splat(mxs);
        v128_t acc = wasm_f32x4_splat(0.0f);
        for (i = 0; i < full; i += 4) {
            v128_t e = kl_exp(wasm_f32x4_sub(wasm_v128_load(l + i), mv));
            wasm_v128_store(p + i, e);
            acc = wasm_f32x4_add(acc, e);
        }
        if (tail) {
            v128_t e = wasm_v128_and(kl_exp(wasm_f32x4_sub(kl_load(l + i, tail), mv)), m);
            kl_store(p + i, e, tail);
            acc = wasm_f32x4_add(acc, e);
        }
        const float s = kl_hsum(acc);
        const v128_t inv = wasm_f32x4_splat(1.0f / s);
        for (i = 0; i < full; i += 4) wasm_v128_store(p + i, wasm_f32x4_mul(wasm_v128_load(p + i), inv));
        if (tail) kl_store(p + i, wasm_f32x4_mul(kl_load(p + i, tail), inv), tail);
        /* -log softmax from the logits, not from the rounded probability */
        if (tgt) sum += (double)(logf(s) - zt);
    }
    return sum;
}

void atm_xent_backward_wasm(float *dlogits, const float *probs, const uint8_t *tgt, int N, int V,
                            float scale) {
    if (N <= 0 || V <= 0) return;
    const int full = V / 4 * 4, tail = V - full;
    const v128_t sv = wasm_f32x4_splat(scale);
    for (int n = 0; n < N; n++) {
        const float *p = probs + (size_t)n * V;
        float *d = dlogits + (size_t)n * V;
        int i;
        for (i = 0; i < full; i += 4)
            wasm_v128_store(d + i, wasm_f32x4_add(wasm_v128_load(d + i), wasm_f32x4_mul(sv, wasm_v128_load(p + i))));
        if (tail) kl_store(d + i, wasm_f32x4_add(kl_load(d + i, tail), wasm_f32x4_mul(sv, kl_load(p + i, tail))), tail);
        d[tgt[n]] -= scale;
    }
}

/* ---- attention row selection ---- */

/* Scores of positions j0 .. j0 + cnt - 1 (1 <= cnt <= 16) into sc[0 .. cnt):
 * one accumulator per group of 4 positions, summed over e in order; a last
 * group of fewer than 4 positions takes lane loads (zeros above, never
 * read back), with the tail size switched outside the e loop. */
KL_INLINE v128_t kl_score4(const float *q, const float *col, ptrdiff_t ldk, int DH, const int n) {
    v128_t acc = wasm_f32x4_splat(0.0f);
    for (int e = 0; e < DH; e++)
        acc = wasm_f32x4_add(acc, wasm_f32x4_mul(wasm_v128_load32_splat(q + e), kl_load(col + e * ldk, n)));
    return acc;
}

static void kl_scores16(float *sc, const float *q, const float *kT, ptrdiff_t ldk, int DH, int cnt, v128_t sv) {
    int v = 0;
    for (; 4 * v + 4 <= cnt; v++) wasm_v128_store(sc + 4 * v, wasm_f32x4_mul(kl_score4(q, kT + 4 * v, ldk, DH, 4), sv));
    switch (cnt - 4 * v) {
    case 1: wasm_v128_store(sc + 4 * v, wasm_f32x4_mul(kl_score4(q, kT + 4 * v, ldk, DH, 1), sv)); break;
    case 2: wasm_v128_store(sc + 4 * v, wasm_f32x4_mul(kl_score4(q, kT + 4 * v, ldk, DH, 2), sv)); break;
    case 3: wasm_v128_store(sc + 4 * v, wasm_f32x4_mul(kl_score4(q, kT + 4 * v, ldk, DH, 3), sv)); break;
    default: break;
    }
}

void atm_atome_attn_select_wasm(float *ps, int32_t *is, const float *q, const float *kT, int ldk,
                                int DH, int n, float scale, int keff, float *scratch) {
    (void)scratch;
    float sc[16];   /* whole vectors are stored: 16 floats for up to 16 positions */
    const v128_t sv = wasm_f32x4_splat(scale);
    int cnt = 0;
    float thr = 0.0f;                     /* ps[keff - 1] once cnt == keff */
    for (int j0 = 0; j0 < n; j0 += 16) {
        const int m = n - j0 < 16 ? n - j0 : 16;
        kl_scores16(sc, q, kT + j0, ldk, DH, m, sv);
        int l = 0;
        if (cnt < keff) {
            for (; l < m && cnt < keff; l++) atm_atome_topk_insert(ps, is, &cnt, keff, sc[l], j0 + l);
            if (cnt < keff) continue;
            thr = ps[keff - 1];
        }
        for (; l < m; l++) {
            /* At a group boundary with a whole group left: skip it when no
             * lane exceeds the threshold (NaN compares false, as in the
             * reference's test). */
            if ((l & 3) == 0 && l + 4 <= m &&
                !wasm_i32x4_bitmask(wasm_f32x4_gt(wasm_v128_load(sc + l), wasm_f32x4_splat(thr)))) {
                l += 3;
                continue;
            }
            if (sc[l] > thr) { atm_atome_topk_insert(ps, is, &cnt, keff, sc[l], j0 + l); thr = ps[keff - 1]; }
        }
    }
}

void atm_atome_attn_forward_wasm(float *out, int32_t *idx, float *p, const float *q,
                                 const float *k, const float *v, float *scratch,
                                 int B, int T, int DH, int C, int TK) {
    const float scale = 1.0f / sqrtf((float)DH);
    float *kT = scratch; /* [DH][T] keys of one sequence */
    for (int b = 0; b < B; b++) {
        size_t n0 = (size_t)b * T;
        for (int j = 0; j < T; j++)
            for (int e = 0; e < DH; e++) kT[(size_t)e * T + j] = k[(n0 + j) * DH + e];
        for (int t = 0; t < T; t++) {
            size_t n = n0 + t;
            float *ps = p + n * TK;
            int32_t *is = idx + n * TK;
            int keff = TK < t + 1 ? TK : t + 1;
            atm_atome_attn_select_wasm(ps, is, q + n * DH, kT, T, DH, t + 1, scale, keff, NULL);
            for (int i = keff; i < TK; i++) { ps[i] = 0.0f; is[i] = -1; }
            atm_softmax_ref(ps, keff);
            float *o = out + n * C;
            int c = 0;
            for (; c + 4 <= C; c += 4) wasm_v128_store(o + c, wasm_f32x4_splat(0.0f));
            for (; c < C; c++) o[c] = 0.0f;
            for (int i = 0; i < keff; i++) {
                const float *vr = v + (n0 + (size_t)is[i]) * C;
                const v128_t a = wasm_f32x4_splat(ps[i]);
                for (c = 0; c + 4 <= C; c += 4)
                    wasm_v128_store(o + c, wasm_f32x4_add(wasm_v128_load(o + c), wasm_f32x4_mul(a, wasm_v128_load(vr + c))));
                for (; c < C; c++) o[c] += ps[i] * vr[c];
            }
        }
    }
}

#else
/* ISO C wants at least one declaration in a translation unit. */
typedef int atm_kernels_layers_wasm_unused;
#endif
