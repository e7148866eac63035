/* core/train/kernels_layers_wasm.c — wasm SIMD128 layer kernels (wasm
 * -msimd128 only): layernorm forward/backward, softmax + cross-entropy
 * forward/backward, the vector exp, the attention row selection and
 * forward, the SSM scans, the depthwise conv and the router mixing of
 * kernels_layers.h (softmax and attention backward are the references).
 *
 * Contract: the contract of kernels_layers.h for every function here, with
 * the x86 sets' algorithms (kernels_x86_layers_tmpl.h) on 4-float vectors:
 *   layernorm   the reference's formulas and per-element rounding; only the
 *               row sums are taken in 4 lanes, then across lanes as
 *               (l0 + l2) + (l1 + l3). The forward takes 4 rows side by side
 *               (each row's operations unchanged) so their sums overlap; the
 *               backward keeps a row's (x - mean) * rstd and g * dout (C <=
 *               256, on the stack) for its second pass.
 *   xent        exp is atm_exp_wasm below; row max, row sum (lanes, then
 *               across), 1/sum and libm logf of the sum as the reference;
 *               the backward is bit-identical to the reference.
 *   exp         2^n e^r with Cody-Waite reduction and Cephes expf's degree-5
 *               polynomial, as the x86 sets, but with a separate multiply and
 *               add (wasm has no FMA); measured error in
 *               tests/node/wasm-layers.test.mjs and docs/wasm.md.
 *   attn_select bit-identical to the reference: the scores of 4 positions
 *               per vector summed over e in order (multiply, then add; up to
 *               4 vectors as independent chains in one pass), then scaled;
 *               the reference's insertion sequence, where a group of 4
 *               scores none of which exceeds the current threshold is
 *               skipped with one compare (the threshold never decreases, so
 *               the reference would reject them too).
 *   attn_forward bit-identical to the reference. TK <= 8 and DH <= 64: four
 *               rows at once, one per lane, with a sorted slot list per lane
 *               that obeys the insertion rule (the x86 sets' block scheme,
 *               every slot updated from the old slots at once); a row that
 *               met a NaN score redoes the reference's selection. The
 *               softmax of the 4 rows runs across the slots with libm's
 *               expf reproduced bit for bit on 4 lanes (kl_expf4), so the
 *               weights are atm_softmax_ref's (the set's softmax); the
 *               output sums a vector of every kept row at a time. Otherwise
 *               the reference's loop with the selection above, libm's
 *               softmax and 4-lane axpy.
 *   ssm_forward, ssm_backward  bit-identical to the reference: the x86
 *               sets' loops on 4 channels per vector (the backward keeps the
 *               carry and the three sums of 4 channels in registers for the
 *               whole scan, two such scans side by side).
 *   conv        bit-identical to the reference: 4 channels at a time down
 *               the batch with the K <= 8 taps (and the backward's tap
 *               gradients) in registers; row-major 4-lane ports of the x86
 *               kernels had measured slower than the references.
 *   mix_forward, mix_backward  bit-identical to the reference: the router
 *               softmax of 4 rows at once with kl_expf4 (libm's bits), the
 *               output in one pass; the backward takes dotf's 8 lanes as two
 *               vectors and the dpaths axpy in the same pass (C % 8 == 0,
 *               else the reference).
 * Attention backward stays the reference: a 4-lane port of the x86 kernel
 * and two wasm versions (one pass per row; all dots, then the axpys)
 * measured no faster than clang's vectorisation of it in this build.
 * Rows are independent and computed in an order that depends only on their
 * length; column tails use lane loads/stores (no reads or writes outside the
 * buffers). Functions of the layer set without a vector version here are the
 * references themselves (kernels_layers.c). */
#if defined(__wasm_simd128__)
#include <math.h>
#include <stddef.h>
#include <wasm_simd128.h>
#include "wasm_lanes.h"
#include "atome_layers.h"
#include "kernels_layers.h"

#define KL_INLINE static inline __attribute__((always_inline))

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
 * n = round(x * log2e) to even by adding 1.5 * 2^23 (every sum then lies in
 * [2^23, 2^24), where floats are the integers: f32.nearest's value, and the
 * sum's bits minus those of 1.5 * 2^23 are n as an integer). 2^n = 2^n1 *
 * 2^n2 with n1 = max(n, -125): p * 2^n1 is exact and only the second
 * product can round (into the subnormals). */
#define KL_EXP_RND 12582912.0f           /* 1.5 * 2^23 */
#define KL_EXP_RND_BITS 0x4b400000
KL_INLINE v128_t kl_exp(v128_t x) {
    x = wasm_f32x4_pmax(x, wasm_f32x4_splat(KL_EXP_LO));   /* x < LO ? LO : x, so NaN stays */
    const v128_t t = wasm_f32x4_add(wasm_f32x4_mul(x, wasm_f32x4_splat(KL_LOG2E)), wasm_f32x4_splat(KL_EXP_RND));
    const v128_t n = wasm_f32x4_sub(t, wasm_f32x4_splat(KL_EXP_RND));
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
    /* biased exponents n + 127 and n1 + 127 = max(n + 127, 2) */
    const v128_t e = wasm_i32x4_sub(t, wasm_i32x4_splat(KL_EXP_RND_BITS - 127));
    const v128_t e1 = wasm_i32x4_max(e, wasm_i32x4_splat(2));
    const v128_t s1 = wasm_i32x4_shl(e1, 23);
    const v128_t s2 = wasm_i32x4_shl(wasm_i32x4_add(wasm_i32x4_sub(e, e1), wasm_i32x4_splat(127)), 23);
    return wasm_f32x4_mul(wasm_f32x4_mul(p, s1), s2);
}

void atm_exp_wasm(float *y, const float *x, int n) {
    int i = 0;
    for (; i + 4 <= n; i += 4) wasm_v128_store(y + i, kl_exp(wasm_v128_load(x + i)));
    if (i < n) atm_wl_store(y + i, kl_exp(atm_wl_load(x + i, n - i)), n - i);
}

/* ---- layernorm ---- */

/* R = 1..4 rows n .. n+R-1 side by side: each row's operations as for one
 * row alone, so the sums' latency chains of the rows overlap. */
KL_INLINE void kl_ln_fwd_rows(const int R, float *out, float *mean, float *rstd, const float *inp,
                              const float *g, const float *b, int n, int C) {
    const int full = C / 4 * 4, tail = C - full;
    const v128_t m = kl_mask(tail);
    const float *x[4];
    float *o[4];
    v128_t acc[4], mv[4], sv[4];
    float mu[4], s[4];
    int i;
    for (int r = 0; r < R; r++) {
        x[r] = inp + (size_t)(n + r) * C;
        o[r] = out + (size_t)(n + r) * C;
        acc[r] = wasm_f32x4_splat(0.0f);
    }
    for (i = 0; i < full; i += 4)
        for (int r = 0; r < R; r++) acc[r] = wasm_f32x4_add(acc[r], wasm_v128_load(x[r] + i));
    if (tail)
        for (int r = 0; r < R; r++) acc[r] = wasm_f32x4_add(acc[r], atm_wl_load(x[r] + i, tail));
    for (int r = 0; r < R; r++) {
        mu[r] = kl_hsum(acc[r]) / (float)C;
        mv[r] = wasm_f32x4_splat(mu[r]);
        acc[r] = wasm_f32x4_splat(0.0f);
    }
    for (i = 0; i < full; i += 4)
        for (int r = 0; r < R; r++) {
            v128_t d = wasm_f32x4_sub(wasm_v128_load(x[r] + i), mv[r]);
            acc[r] = wasm_f32x4_add(acc[r], wasm_f32x4_mul(d, d));
        }
    if (tail)
        for (int r = 0; r < R; r++) {
            v128_t d = wasm_v128_and(wasm_f32x4_sub(atm_wl_load(x[r] + i, tail), mv[r]), m);
            acc[r] = wasm_f32x4_add(acc[r], wasm_f32x4_mul(d, d));
        }
    for (int r = 0; r < R; r++) {
        const float var = kl_hsum(acc[r]) / (float)C;
        s[r] = 1.0f / sqrtf(var + ATM_LN_EPS);            /* f32.sqrt: correctly rounded */
        sv[r] = wasm_f32x4_splat(s[r]);
    }
    /* ((x - mu) * s) * g + b, rounded after each operation as the reference */
    for (i = 0; i < full; i += 4) {
        const v128_t gv = wasm_v128_load(g + i), bv = wasm_v128_load(b + i);
        for (int r = 0; r < R; r++)
            wasm_v128_store(o[r] + i, wasm_f32x4_add(wasm_f32x4_mul(wasm_f32x4_mul(wasm_f32x4_sub(
                wasm_v128_load(x[r] + i), mv[r]), sv[r]), gv), bv));
    }
    if (tail) {
        const v128_t gv = atm_wl_load(g + i, tail), bv = atm_wl_load(b + i, tail);
        for (int r = 0; r < R; r++)
            atm_wl_store(o[r] + i, wasm_f32x4_add(wasm_f32x4_mul(wasm_f32x4_mul(wasm_f32x4_sub(
                atm_wl_load(x[r] + i, tail), mv[r]), sv[r]), gv), bv), tail);
    }
    for (int r = 0; r < R; r++) {
        if (mean) mean[n + r] = mu[r];
        if (rstd) rstd[n + r] = s[r];
    }
}

void atm_layernorm_forward_wasm(float *out, float *mean, float *rstd, const float *inp,
                                const float *g, const float *b, int N, int C) {
    if (N <= 0) return;
    if (C <= 0) { atm_layernorm_forward_ref(out, mean, rstd, inp, g, b, N, C); return; }
    int n = 0;
    for (; n + 4 <= N; n += 4) kl_ln_fwd_rows(4, out, mean, rstd, inp, g, b, n, C);
    switch (N - n) {
    case 1: kl_ln_fwd_rows(1, out, mean, rstd, inp, g, b, n, C); break;
    case 2: kl_ln_fwd_rows(2, out, mean, rstd, inp, g, b, n, C); break;
    case 3: kl_ln_fwd_rows(3, out, mean, rstd, inp, g, b, n, C); break;
    default: break;
    }
}

/* Rows of any length: xh and g * dout recomputed in the second pass. */
static void kl_ln_bwd_plain(float *dinp, float *dg, float *db, const float *dout,
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
            v128_t xh = wasm_f32x4_mul(wasm_f32x4_sub(atm_wl_load(x + i, tail), mv), sv);
            v128_t dn = wasm_f32x4_mul(atm_wl_load(g + i, tail), atm_wl_load(d + i, tail));
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
            v128_t dv = atm_wl_load(d + i, tail);
            v128_t xh = wasm_f32x4_mul(wasm_f32x4_sub(atm_wl_load(x + i, tail), mv), sv);
            if (db) atm_wl_store(db + i, wasm_f32x4_add(atm_wl_load(db + i, tail), dv), tail);
            if (dg) atm_wl_store(dg + i, wasm_f32x4_add(atm_wl_load(dg + i, tail), wasm_f32x4_mul(xh, dv)), tail);
            if (di) {
                v128_t dn = wasm_f32x4_mul(atm_wl_load(g + i, tail), dv);
                v128_t r = wasm_f32x4_mul(wasm_f32x4_sub(wasm_f32x4_sub(dn, dm), wasm_f32x4_mul(xh, dnm)), sv);
                atm_wl_store(di + i, wasm_f32x4_add(atm_wl_load(di + i, tail), r), tail);
            }
        }
    }
}

/* Rows of C <= 256: the normalised inputs xh and g * dout of the first pass
 * are kept (xb, nb) for the second instead of recomputed (same values). */
KL_INLINE void kl_ln_bwd_row(float *di, float *dg, float *db, const float *d, const float *x, const float *g,
                             v128_t mv, v128_t sv, int C, float *xb, float *nb) {
    const int full = C / 4 * 4, tail = C - full;
    const v128_t m = kl_mask(tail);
    v128_t a1 = wasm_f32x4_splat(0.0f), a2 = a1;
    int i;
    for (i = 0; i < full; i += 4) {
        v128_t xh = wasm_f32x4_mul(wasm_f32x4_sub(wasm_v128_load(x + i), mv), sv);
        v128_t dn = wasm_f32x4_mul(wasm_v128_load(g + i), wasm_v128_load(d + i));
        wasm_v128_store(xb + i, xh);
        wasm_v128_store(nb + i, dn);
        a1 = wasm_f32x4_add(a1, dn);
        a2 = wasm_f32x4_add(a2, wasm_f32x4_mul(dn, xh));
    }
    if (tail) {
        v128_t xh = wasm_f32x4_mul(wasm_f32x4_sub(atm_wl_load(x + i, tail), mv), sv);
        v128_t dn = wasm_f32x4_mul(atm_wl_load(g + i, tail), atm_wl_load(d + i, tail));
        wasm_v128_store(xb + i, xh);
        wasm_v128_store(nb + i, dn);
        a1 = wasm_f32x4_add(a1, dn);
        a2 = wasm_f32x4_add(a2, wasm_v128_and(wasm_f32x4_mul(dn, xh), m));
    }
    const v128_t dm = wasm_f32x4_splat(kl_hsum(a1) / (float)C), dnm = wasm_f32x4_splat(kl_hsum(a2) / (float)C);
    /* the reference's per-element expressions, operation for operation */
    for (i = 0; i < full; i += 4) {
        v128_t dv = wasm_v128_load(d + i), xh = wasm_v128_load(xb + i);
        if (db) wasm_v128_store(db + i, wasm_f32x4_add(wasm_v128_load(db + i), dv));
        if (dg) wasm_v128_store(dg + i, wasm_f32x4_add(wasm_v128_load(dg + i), wasm_f32x4_mul(xh, dv)));
        if (di) {
            v128_t r = wasm_f32x4_mul(wasm_f32x4_sub(wasm_f32x4_sub(wasm_v128_load(nb + i), dm), wasm_f32x4_mul(xh, dnm)), sv);
            wasm_v128_store(di + i, wasm_f32x4_add(wasm_v128_load(di + i), r));
        }
    }
    if (tail) {
        v128_t dv = atm_wl_load(d + i, tail), xh = wasm_v128_load(xb + i);
        if (db) atm_wl_store(db + i, wasm_f32x4_add(atm_wl_load(db + i, tail), dv), tail);
        if (dg) atm_wl_store(dg + i, wasm_f32x4_add(atm_wl_load(dg + i, tail), wasm_f32x4_mul(xh, dv)), tail);
        if (di) {
            v128_t r = wasm_f32x4_mul(wasm_f32x4_sub(wasm_f32x4_sub(wasm_v128_load(nb + i), dm), wasm_f32x4_mul(xh, dnm)), sv);
            atm_wl_store(di + i, wasm_f32x4_add(atm_wl_load(di + i, tail), r), tail);
        }
    }
}

void atm_layernorm_backward_wasm(float *dinp, float *dg, float *db, const float *dout,
                                 const float *inp, const float *g, const float *mean,
                                 const float *rstd, int N, int C) {
    if (N <= 0 || C <= 0) return;
    if (C > 256) { kl_ln_bwd_plain(dinp, dg, db, dout, inp, g, mean, rstd, N, C); return; }
    float xb[256], nb[256];
    for (int n = 0; n < N; n++)
        kl_ln_bwd_row(dinp ? dinp + (size_t)n * C : NULL, dg, db, dout + (size_t)n * C, inp + (size_t)n * C, g,
                      wasm_f32x4_splat(mean[n]), wasm_f32x4_splat(rstd[n]), C, xb, nb);
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
        /* four independent max chains: the same largest value (only the
         * sign of a zero maximum can differ, which no result depends on) */
        v128_t mx = ninf, m1 = ninf, m2 = ninf, m3 = ninf;
        for (i = 0; i + 16 <= full; i += 16) {
            mx = wasm_f32x4_pmax(mx, wasm_v128_load(l + i));
            m1 = wasm_f32x4_pmax(m1, wasm_v128_load(l + i + 4));
            m2 = wasm_f32x4_pmax(m2, wasm_v128_load(l + i + 8));
            m3 = wasm_f32x4_pmax(m3, wasm_v128_load(l + i + 12));
        }
        mx = wasm_f32x4_pmax(wasm_f32x4_pmax(mx, m1), wasm_f32x4_pmax(m2, m3));
        for (; i < full; i += 4) mx = wasm_f32x4_pmax(mx, wasm_v128_load(l + i));
        if (tail) mx = wasm_f32x4_pmax(mx, wasm_v128_bitselect(atm_wl_load(l + i, tail), ninf, m));
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
            v128_t e = wasm_v128_and(kl_exp(wasm_f32x4_sub(atm_wl_load(l + i, tail), mv)), m);
            atm_wl_store(p + i, e, tail);
            acc = wasm_f32x4_add(acc, e);
        }
        const float s = kl_hsum(acc);
        const v128_t inv = wasm_f32x4_splat(1.0f / s);
        for (i = 0; i < full; i += 4) wasm_v128_store(p + i, wasm_f32x4_mul(wasm_v128_load(p + i), inv));
        if (tail) atm_wl_store(p + i, wasm_f32x4_mul(atm_wl_load(p + i, tail), inv), tail);
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
        if (tail) atm_wl_store(d + i, wasm_f32x4_add(atm_wl_load(d + i, tail), wasm_f32x4_mul(sv, atm_wl_load(p + i, tail))), tail);
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
        acc = wasm_f32x4_add(acc, wasm_f32x4_mul(wasm_v128_load32_splat(q + e), atm_wl_load(col + e * ldk, n)));
    return acc;
}

/* NV = 1..4 whole groups of 4 positions in one pass over e: independent
 * accumulator chains, each still summed over e in order. */
KL_INLINE void kl_scores_full(float *sc, const float *q, const float *kT, ptrdiff_t ldk, int DH, const int NV,
                              v128_t sv) {
    v128_t acc[4];
    for (int v = 0; v < NV; v++) acc[v] = wasm_f32x4_splat(0.0f);
    for (int e = 0; e < DH; e++) {
        const v128_t qe = wasm_v128_load32_splat(q + e);
        const float *row = kT + e * ldk;
        for (int v = 0; v < NV; v++) acc[v] = wasm_f32x4_add(acc[v], wasm_f32x4_mul(qe, wasm_v128_load(row + 4 * v)));
    }
    for (int v = 0; v < NV; v++) wasm_v128_store(sc + 4 * v, wasm_f32x4_mul(acc[v], sv));
}

static void kl_scores16(float *sc, const float *q, const float *kT, ptrdiff_t ldk, int DH, int cnt, v128_t sv) {
    const int v = cnt / 4;
    switch (v) {
    case 1: kl_scores_full(sc, q, kT, ldk, DH, 1, sv); break;
    case 2: kl_scores_full(sc, q, kT, ldk, DH, 2, sv); break;
    case 3: kl_scores_full(sc, q, kT, ldk, DH, 3, sv); break;
    case 4: kl_scores_full(sc, q, kT, ldk, DH, 4, sv); break;
    default: break;
    }
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

/* out[n] = sum over i < keff, in order, of ps[i] * v[n0 + is[i]] (from 0,
 * multiply then add: axpyf's bits). */
KL_INLINE void kl_attn_out(float *o, const float *ps, const int32_t *is, const float *v, size_t n0, int C,
                           int keff) {
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

/* ---- libm's expf on 4 lanes, bit for bit ----
 * musl's expf (ARM optimized-routines, also glibc's; what atm_softmax_ref
 * calls in this build) in double lanes, operation for operation: z =
 * x * 32/ln2, k = round(z) by the 1.5*2^52 shift, r = z - k, 2^(k/32) from
 * the 32-entry table plus k << 47 in the exponent, the cubic in r, one
 * rounding to float. A vector with any lane where libm leaves that path
 * (|x| >= 88, inf, NaN) calls expf per lane. Table and constants:
 * musl src/math/exp2f_data.c (Copyright (c) 2017-2018, Arm Limited, MIT). */
static const uint64_t KL_EXP2F_TAB[32] = {
    0x3ff0000000000000, 0x3fefd9b0d3158574, 0x3fefb5586cf9890f, 0x3fef9301d0125b51,
    0x3fef72b83c7d517b, 0x3fef54873168b9aa, 0x3fef387a6e756238, 0x3fef1e9df51fdee1,
    0x3fef06fe0a31b715, 0x3feef1a7373aa9cb, 0x3feedea64c123422, 0x3feece086061892d,
    0x3feebfdad5362a27, 0x3feeb42b569d4f82, 0x3feeab07dd485429, 0x3feea47eb03a5585,
    0x3feea09e667f3bcd, 0x3fee9f75e8ec5f74, 0x3feea11473eb0187, 0x3feea589994cce13,
    0x3feeace5422aa0db, 0x3feeb737b0cdc5e5, 0x3feec49182a3f090, 0x3feed503b23e255d,
    0x3feee89f995ad3ad, 0x3feeff76f2fb5e47, 0x3fef199bdd85529c, 0x3fef3720dcef9069,
    0x3fef5818dcfba487, 0x3fef7c97337b9b5f, 0x3fefa4afa2a490da, 0x3fefd0765b6e4540,
};
#define KL_EXPF_INVLN2N (0x1.71547652b82fep+0 * 32)
#define KL_EXPF_SHIFT 0x1.8p+52
#define KL_EXPF_C0 (0x1.c6af84b912394p-5 / 32 / 32 / 32)
#define KL_EXPF_C1 (0x1.ebfce50fac4f3p-3 / 32 / 32)
#define KL_EXPF_C2 (0x1.62e42ff0c52d6p-1 / 32)

/* expf of 2 floats already widened to double (|x| < 88): 2 doubles. */
KL_INLINE v128_t kl_expf_d2(v128_t xd) {
    const v128_t z = wasm_f64x2_mul(wasm_f64x2_splat(KL_EXPF_INVLN2N), xd);
    const v128_t ki = wasm_f64x2_add(z, wasm_f64x2_splat(KL_EXPF_SHIFT));
    const v128_t r = wasm_f64x2_sub(z, wasm_f64x2_sub(ki, wasm_f64x2_splat(KL_EXPF_SHIFT)));
    v128_t t = wasm_v128_load64_zero(&KL_EXP2F_TAB[wasm_i64x2_extract_lane(ki, 0) & 31]);
    t = wasm_v128_load64_lane(&KL_EXP2F_TAB[wasm_i64x2_extract_lane(ki, 1) & 31], t, 1);
    t = wasm_i64x2_add(t, wasm_i64x2_shl(ki, 47));
    const v128_t zz = wasm_f64x2_add(wasm_f64x2_mul(wasm_f64x2_splat(KL_EXPF_C0), r), wasm_f64x2_splat(KL_EXPF_C1));
    const v128_t r2 = wasm_f64x2_mul(r, r);
    v128_t y = wasm_f64x2_add(wasm_f64x2_mul(wasm_f64x2_splat(KL_EXPF_C2), r), wasm_f64x2_splat(1.0));
    y = wasm_f64x2_add(wasm_f64x2_mul(zz, r2), y);
    return wasm_f64x2_mul(y, t);
}

KL_INLINE v128_t kl_expf4(v128_t x) {
    if (wasm_v128_any_true(wasm_i32x4_ge(wasm_v128_and(x, wasm_i32x4_splat(0x7fffffff)),
                                         wasm_i32x4_splat(0x42b00000)))) {   /* top12(88.0f) */
        float l[4];
        wasm_v128_store(l, x);
        for (int i = 0; i < 4; i++) l[i] = expf(l[i]);
        return wasm_v128_load(l);
    }
    const v128_t lo = wasm_f32x4_demote_f64x2_zero(kl_expf_d2(wasm_f64x2_promote_low_f32x4(x)));
    const v128_t hi = wasm_f32x4_demote_f64x2_zero(kl_expf_d2(wasm_f64x2_promote_low_f32x4(
        wasm_i32x4_shuffle(x, x, 2, 3, 2, 3))));
    return wasm_i32x4_shuffle(lo, hi, 0, 1, 4, 5);
}

/* Attention forward for the rows t0 .. t0+3 of one sequence at once, one
 * row per lane (TKC = TK <= 8 kept positions, DH <= 64), after the scheme of
 * ka_attn_block in kernels_x86_atome_tmpl.h. For each key position j, lane
 * t gets the score (q_t . k_j) * scale (e in order, multiply then add: the
 * reference's bits) and, if j <= t, offers it to a sorted list of TKC slots
 * per lane that obeys atm_atome_topk_insert: a candidate goes in front of the
 * first slot holding a strictly smaller score (or into the first empty slot)
 * and everything below shifts down one place, the last falling out; so equal
 * scores keep the earlier position first and the slots end as the kept
 * scores in the reference's order. Every lane offered position j has been
 * offered exactly 0..j-1 before, so min(j, TKC) of its slots are full: the
 * same for all lanes. The slots hold scores in non-increasing order, so
 * "c > slot r" holds for a suffix of the full slots and every slot's new
 * content follows from the old contents at once (no chain through the
 * slots). A lane that met a NaN score is redone by the reference's
 * selection. The weights are atm_softmax_ref's across the slots of 4 rows
 * at once: the max is slot 0 (the others are not above it), libm's expf
 * (kl_expf4) of the differences, the sum in slot order from 0, 1/sum, the
 * products. sc: T floats. */
KL_INLINE void kl_attn_block(const int TKC, float *out, int32_t *idx, float *p, const float *q, const float *k,
                             const float *v, int T, int DH, int C, size_t n0, int t0, float scale, float *sc) {
    const int rows = T - t0 < 4 ? T - t0 : 4;
    float qT[64 * 4];                                     /* qT[e][l] = q[t0 + l][e], 0 past the rows */
    for (int e = 0; e < DH; e++)
        for (int l = 0; l < 4; l++) qT[e * 4 + l] = l < rows ? q[(n0 + (size_t)(t0 + l)) * DH + e] : 0.0f;
    v128_t top[8], ti[8];
    for (int r = 0; r < TKC; r++) { top[r] = wasm_f32x4_splat(0.0f); ti[r] = wasm_i32x4_splat(-1); }
    v128_t nanl = wasm_i32x4_splat(0);
    const v128_t lane_t = wasm_i32x4_add(wasm_i32x4_splat(t0), wasm_i32x4_make(0, 1, 2, 3));
    const v128_t rowm = kl_mask(rows), sv = wasm_f32x4_splat(scale);
    /* Offer score vector S_ of position J_ to the lanes t >= J_: take[r] =
     * slot r gets a new content (c if slot r-1 does not, else slot r-1's). */
#define KL_OFFER(S_, J_)                                                                                   \
    do {                                                                                                   \
        const int jj_ = (J_), nf_ = jj_ < TKC ? jj_ : TKC;                                                 \
        const v128_t cv = jj_ < t0 ? rowm : wasm_v128_and(rowm, wasm_i32x4_ge(lane_t, wasm_i32x4_splat(jj_))); \
        const v128_t c = (S_), ci = wasm_i32x4_splat(jj_);                                                 \
        nanl = wasm_v128_or(nanl, wasm_v128_and(cv, wasm_f32x4_ne(c, c)));                                 \
        v128_t take[8];                                                                                    \
        for (int r = 0; r < TKC; r++) take[r] = r < nf_ ? wasm_v128_and(cv, wasm_f32x4_gt(c, top[r])) : cv; \
        for (int r = TKC - 1; r > 0; r--) {                                                                \
            top[r] = wasm_v128_bitselect(wasm_v128_bitselect(top[r - 1], c, take[r - 1]), top[r], take[r]); \
            ti[r] = wasm_v128_bitselect(wasm_v128_bitselect(ti[r - 1], ci, take[r - 1]), ti[r], take[r]);  \
        }                                                                                                  \
        top[0] = wasm_v128_bitselect(c, top[0], take[0]);                                                  \
        ti[0] = wasm_v128_bitselect(ci, ti[0], take[0]);                                                   \
    } while (0)
    /* Four positions per pass: each score is its own chain over e, so the
     * chains overlap. */
    const int jend = t0 + rows;
    int j = 0;
    for (; j + 4 <= jend; j += 4) {
        const float *kb = k + (n0 + (size_t)j) * DH;
        v128_t s0 = wasm_f32x4_splat(0.0f), s1 = s0, s2 = s0, s3 = s0;
        for (int e = 0; e < DH; e++) {
            const v128_t qe = wasm_v128_load(qT + e * 4);
            s0 = wasm_f32x4_add(s0, wasm_f32x4_mul(qe, wasm_v128_load32_splat(kb + e)));
            s1 = wasm_f32x4_add(s1, wasm_f32x4_mul(qe, wasm_v128_load32_splat(kb + DH + e)));
            s2 = wasm_f32x4_add(s2, wasm_f32x4_mul(qe, wasm_v128_load32_splat(kb + 2 * DH + e)));
            s3 = wasm_f32x4_add(s3, wasm_f32x4_mul(qe, wasm_v128_load32_splat(kb + 3 * DH + e)));
        }
        KL_OFFER(wasm_f32x4_mul(s0, sv), j);
        KL_OFFER(wasm_f32x4_mul(s1, sv), j + 1);
        KL_OFFER(wasm_f32x4_mul(s2, sv), j + 2);
        KL_OFFER(wasm_f32x4_mul(s3, sv), j + 3);
    }
    for (; j < jend; j++) {
        const float *kj = k + (n0 + (size_t)j) * DH;
        v128_t s0 = wasm_f32x4_splat(0.0f);
        for (int e = 0; e < DH; e++) s0 = wasm_f32x4_add(s0, wasm_f32x4_mul(wasm_v128_load(qT + e * 4), wasm_v128_load32_splat(kj + e)));
        KL_OFFER(wasm_f32x4_mul(s0, sv), j);
    }
#undef KL_OFFER
    /* softmax across the slots; slot r of lane t is kept iff r <= t, an
     * empty slot adds +0 to the sum (which is >= 1: slot 0 gives expf(0)) */
    float pb[8 * 4];
    int32_t ib[8 * 4];
    {
        const v128_t mx = top[0];
        v128_t s = wasm_f32x4_splat(0.0f);
        for (int r = 0; r < TKC; r++) {
            v128_t e = kl_expf4(wasm_f32x4_sub(top[r], mx));
            if (r > t0) e = wasm_v128_and(e, wasm_i32x4_ge(lane_t, wasm_i32x4_splat(r)));
            top[r] = e;
            s = wasm_f32x4_add(s, e);
        }
        const v128_t inv = wasm_f32x4_div(wasm_f32x4_splat(1.0f), s);
        for (int r = 0; r < TKC; r++) {
            wasm_v128_store(pb + r * 4, wasm_f32x4_mul(top[r], inv));
            wasm_v128_store(ib + r * 4, ti[r]);
        }
    }
    const int nanbits = wasm_i32x4_bitmask(nanl);
    for (int l = 0; l < rows; l++) {
        const int t = t0 + l, keff = TKC < t + 1 ? TKC : t + 1;
        const size_t n = n0 + (size_t)t;
        float *ps = p + n * TKC;
        int32_t *is = idx + n * TKC;
        if (nanbits >> l & 1) {                           /* the reference's rule */
            const float *qt = q + n * DH;
            for (int jj = 0; jj <= t; jj++) {
                float dot = 0.0f;
                for (int e = 0; e < DH; e++) dot += qt[e] * k[(n0 + (size_t)jj) * DH + e];
                sc[jj] = dot * scale;
            }
            int jj = 0, cnt = 0;
            for (; jj < keff; jj++) atm_atome_topk_insert(ps, is, &cnt, keff, sc[jj], jj);
            float thr = ps[keff - 1];
            for (; jj <= t; jj++)
                if (sc[jj] > thr) { atm_atome_topk_insert(ps, is, &cnt, keff, sc[jj], jj); thr = ps[keff - 1]; }
            atm_softmax_ref(ps, keff);
        } else {
            for (int i = 0; i < keff; i++) { ps[i] = pb[i * 4 + l]; is[i] = ib[i * 4 + l]; }
        }
        for (int i = keff; i < TKC; i++) { ps[i] = 0.0f; is[i] = -1; }
        /* out[n] = sum over i < keff, in order, of ps[i] * v[n0 + is[i]]
         * (from 0, multiply then add: axpyf's bits), a vector at a time */
        const float *vr[8];
        v128_t pv[8];
        for (int i = 0; i < TKC; i++) {
            vr[i] = v + (n0 + (size_t)(i < keff ? is[i] : 0)) * C;
            pv[i] = wasm_f32x4_splat(ps[i]);
        }
        float *o = out + n * C;
        int c = 0;
        if (keff == TKC) {
            for (; c + 4 <= C; c += 4) {
                v128_t acc = wasm_f32x4_splat(0.0f);
                for (int i = 0; i < TKC; i++) acc = wasm_f32x4_add(acc, wasm_f32x4_mul(pv[i], wasm_v128_load(vr[i] + c)));
                wasm_v128_store(o + c, acc);
            }
        } else {
            for (; c + 4 <= C; c += 4) {
                v128_t acc = wasm_f32x4_splat(0.0f);
                for (int i = 0; i < keff; i++) acc = wasm_f32x4_add(acc, wasm_f32x4_mul(pv[i], wasm_v128_load(vr[i] + c)));
                wasm_v128_store(o + c, acc);
            }
        }
        for (; c < C; c++) {
            float a = 0.0f;
            for (int i = 0; i < keff; i++) a += ps[i] * vr[i][c];
            o[c] = a;
        }
    }
}

/* One function per kept count: V8 compiled the eight inlined copies in one
 * function markedly worse (atome-60k shapes, TK = 4: 228 vs 182 us per
 * call). */
#define KL_NOINLINE static __attribute__((noinline))
typedef void (*kl_attn_seq_fn)(float *out, int32_t *idx, float *p, const float *q, const float *k,
                               const float *v, int T, int DH, int C, size_t n0, float scale, float *sc);
#define KL_ATTN_SEQ(K_)                                                                                  \
    KL_NOINLINE void kl_attn_seq_##K_(float *out, int32_t *idx, float *p, const float *q, const float *k, \
                                      const float *v, int T, int DH, int C, size_t n0, float scale,      \
                                      float *sc) {                                                       \
        for (int t0 = 0; t0 < T; t0 += 4) kl_attn_block(K_, out, idx, p, q, k, v, T, DH, C, n0, t0, scale, sc); \
    }
KL_ATTN_SEQ(1) KL_ATTN_SEQ(2) KL_ATTN_SEQ(3) KL_ATTN_SEQ(4)
KL_ATTN_SEQ(5) KL_ATTN_SEQ(6) KL_ATTN_SEQ(7) KL_ATTN_SEQ(8)
#undef KL_ATTN_SEQ

void atm_atome_attn_forward_wasm(float *out, int32_t *idx, float *p, const float *q,
                                 const float *k, const float *v, float *scratch,
                                 int B, int T, int DH, int C, int TK) {
    const float scale = 1.0f / sqrtf((float)DH);
    if (TK >= 1 && TK <= 8 && DH <= 64) {
        static const kl_attn_seq_fn seq[8] = { kl_attn_seq_1, kl_attn_seq_2, kl_attn_seq_3, kl_attn_seq_4,
                                               kl_attn_seq_5, kl_attn_seq_6, kl_attn_seq_7, kl_attn_seq_8 };
        for (int b = 0; b < B; b++) seq[TK - 1](out, idx, p, q, k, v, T, DH, C, (size_t)b * T, scale, scratch);
        return;
    }
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
            kl_attn_out(out + n * C, ps, is, v, n0, C, keff);
        }
    }
}

/* ---- depthwise causal conv ----
 * One sequence at a time, in it four channels at a time (eight in the
 * forward) down the sequence with their K taps in registers:
 * the forward sums a row's taps in j order from 0; the backward gathers
 * du[m] += w_j d[m+j] in j order (the reference's scatter from row n = m+j
 * reaches du[m] in the same order) and keeps the K tap gradients of the 4
 * channels in registers over a sequence, continuing from and returning to
 * dwT, so each sums over (b, t) ascending from 0 as the reference's zeroed
 * dwT. Channels past the last whole vector take the same operations one at
 * a time. */
/* NV = 1 or 2 vectors (4 or 8 channels from i) down sequence b. */
KL_INLINE void kl_conv_fwd_cols(const int K, const int NV, float *out, const float *u, const float *wT,
                                int b, int T, int C, int i) {
    v128_t wv[2][8];
    for (int v = 0; v < NV; v++)
        for (int j = 0; j < K; j++) wv[v][j] = wasm_v128_load(wT + (size_t)j * C + i + 4 * v);
    const float *ub = u + (size_t)b * T * C + i;
    float *ob = out + (size_t)b * T * C + i;
    int t = 0;
    for (; t < T && t < K - 1; t++)
        for (int v = 0; v < NV; v++) {
            v128_t acc = wasm_f32x4_splat(0.0f);
            for (int j = 0; j <= t; j++)
                acc = wasm_f32x4_add(acc, wasm_f32x4_mul(wv[v][j], wasm_v128_load(ub + (size_t)(t - j) * C + 4 * v)));
            wasm_v128_store(ob + (size_t)t * C + 4 * v, acc);
        }
    for (; t < T; t++) {
        const float *ut = ub + (size_t)t * C;
        v128_t acc[2];
        for (int v = 0; v < NV; v++) acc[v] = wasm_f32x4_splat(0.0f);
        for (int j = 0; j < K; j++)
            for (int v = 0; v < NV; v++)
                acc[v] = wasm_f32x4_add(acc[v], wasm_f32x4_mul(wv[v][j], wasm_v128_load(ut - (size_t)j * C + 4 * v)));
        for (int v = 0; v < NV; v++) wasm_v128_store(ob + (size_t)t * C + 4 * v, acc[v]);
    }
}

/* Sequences outermost, so one sequence's rows stay in cache over its
 * channel chunks. */
KL_INLINE void kl_conv_fwd_k(const int K, float *out, const float *u, const float *wT, int B, int T, int C) {
    const int full = C / 4 * 4;
    for (int b = 0; b < B; b++) {
        int i = 0;
        for (; i + 8 <= full; i += 8) kl_conv_fwd_cols(K, 2, out, u, wT, b, T, C, i);
        if (i < full) kl_conv_fwd_cols(K, 1, out, u, wT, b, T, C, i);
    }
    for (int c = full; c < C; c++)
        for (int b = 0; b < B; b++)
            for (int t = 0; t < T; t++) {
                const size_t n = (size_t)b * T + t;
                const int jmax = t < K - 1 ? t : K - 1;
                float acc = 0.0f;
                for (int j = 0; j <= jmax; j++) acc += wT[(size_t)j * C + c] * u[(n - (size_t)j) * C + c];
                out[n * C + c] = acc;
            }
}

void atm_atome_conv_forward_wasm(float *out, const float *u, const float *w, float *scratch,
                                 int B, int T, int C, int K) {
    if (K < 1 || K > 8) { atm_atome_conv_forward_ref(out, u, w, scratch, B, T, C, K); return; }
    float *wT = scratch;                                  /* [K][C]: wT[j][c] = w[c][j] */
    for (int c = 0; c < C; c++)
        for (int j = 0; j < K; j++) wT[(size_t)j * C + c] = w[(size_t)c * K + j];
    switch (K) {
    case 1: kl_conv_fwd_k(1, out, u, wT, B, T, C); break;
    case 2: kl_conv_fwd_k(2, out, u, wT, B, T, C); break;
    case 3: kl_conv_fwd_k(3, out, u, wT, B, T, C); break;
    case 4: kl_conv_fwd_k(4, out, u, wT, B, T, C); break;
    case 5: kl_conv_fwd_k(5, out, u, wT, B, T, C); break;
    case 6: kl_conv_fwd_k(6, out, u, wT, B, T, C); break;
    case 7: kl_conv_fwd_k(7, out, u, wT, B, T, C); break;
    default: kl_conv_fwd_k(8, out, u, wT, B, T, C); break;
    }
}

/* Channels i .. i+3 of sequence b; the tap gradients continue from dwT and
 * go back there (so each still sums over (b, t) ascending from 0). */
KL_INLINE void kl_conv_bwd_cols(const int K, float *du, float *dwT, const float *dout, const float *u,
                                const float *wT, int b, int T, int C, int i) {
    const float *db = dout + (size_t)b * T * C + i, *ub = u + (size_t)b * T * C + i;
    if (du) {
        v128_t wv[8];
        for (int j = 0; j < K; j++) wv[j] = wasm_v128_load(wT + (size_t)j * C + i);
        float *dub = du + (size_t)b * T * C + i;
        int m = 0;
        for (; m + K - 1 < T; m++) {
            v128_t acc = wasm_v128_load(dub + (size_t)m * C);
            for (int j = 0; j < K; j++)
                acc = wasm_f32x4_add(acc, wasm_f32x4_mul(wv[j], wasm_v128_load(db + (size_t)(m + j) * C)));
            wasm_v128_store(dub + (size_t)m * C, acc);
        }
        for (; m < T; m++) {
            v128_t acc = wasm_v128_load(dub + (size_t)m * C);
            for (int j = 0; m + j < T; j++)
                acc = wasm_f32x4_add(acc, wasm_f32x4_mul(wv[j], wasm_v128_load(db + (size_t)(m + j) * C)));
            wasm_v128_store(dub + (size_t)m * C, acc);
        }
    }
    if (dwT) {
        v128_t dwv[8];
        for (int j = 0; j < K; j++) dwv[j] = wasm_v128_load(dwT + (size_t)j * C + i);
        int t = 0;
        for (; t < T && t < K - 1; t++) {
            const v128_t dv = wasm_v128_load(db + (size_t)t * C);
            for (int j = 0; j <= t; j++)
                dwv[j] = wasm_f32x4_add(dwv[j], wasm_f32x4_mul(dv, wasm_v128_load(ub + (size_t)(t - j) * C)));
        }
        for (; t < T; t++) {
            const v128_t dv = wasm_v128_load(db + (size_t)t * C);
            for (int j = 0; j < K; j++)
                dwv[j] = wasm_f32x4_add(dwv[j], wasm_f32x4_mul(dv, wasm_v128_load(ub + (size_t)(t - j) * C)));
        }
        for (int j = 0; j < K; j++) wasm_v128_store(dwT + (size_t)j * C + i, dwv[j]);
    }
}

KL_INLINE void kl_conv_bwd_k(const int K, float *du, float *dwT, const float *dout, const float *u,
                             const float *wT, int B, int T, int C) {
    const int full = C / 4 * 4;
    if (dwT)
        for (size_t x = 0; x < (size_t)K * C; x++) dwT[x] = 0.0f;
    for (int b = 0; b < B; b++)
        for (int i = 0; i < full; i += 4) kl_conv_bwd_cols(K, du, dwT, dout, u, wT, b, T, C, i);
    for (int c = full; c < C; c++)
        for (int b = 0; b < B; b++)
            for (int t = 0; t < T; t++) {
                const size_t n = (size_t)b * T + t;
                const int jmax = t < K - 1 ? t : K - 1;
                for (int j = 0; j <= jmax; j++) {
                    const size_t m = (n - (size_t)j) * C + c;
                    if (du) du[m] += wT[(size_t)j * C + c] * dout[n * C + c];
                    if (dwT) dwT[(size_t)j * C + c] += dout[n * C + c] * u[m];
                }
            }
}

void atm_atome_conv_backward_wasm(float *du, float *dw, const float *dout, const float *u,
                                  const float *w, float *scratch, int B, int T, int C, int K) {
    if (K < 1 || K > 8) { atm_atome_conv_backward_ref(du, dw, dout, u, w, scratch, B, T, C, K); return; }
    const size_t KC = (size_t)K * C;
    float *wT = scratch, *dwT = dw ? scratch + KC : NULL; /* [K][C] each */
    for (int c = 0; c < C; c++)
        for (int j = 0; j < K; j++) wT[(size_t)j * C + c] = w[(size_t)c * K + j];
    switch (K) {
    case 1: kl_conv_bwd_k(1, du, dwT, dout, u, wT, B, T, C); break;
    case 2: kl_conv_bwd_k(2, du, dwT, dout, u, wT, B, T, C); break;
    case 3: kl_conv_bwd_k(3, du, dwT, dout, u, wT, B, T, C); break;
    case 4: kl_conv_bwd_k(4, du, dwT, dout, u, wT, B, T, C); break;
    case 5: kl_conv_bwd_k(5, du, dwT, dout, u, wT, B, T, C); break;
    case 6: kl_conv_bwd_k(6, du, dwT, dout, u, wT, B, T, C); break;
    case 7: kl_conv_bwd_k(7, du, dwT, dout, u, wT, B, T, C); break;
    default: kl_conv_bwd_k(8, du, dwT, dout, u, wT, B, T, C); break;
    }
    if (dw)
        for (int c = 0; c < C; c++)
            for (int j = 0; j < K; j++) dw[(size_t)c * K + j] += dwT[(size_t)j * C + c];
}

/* ---- router mixing ---- */

/* atm_softmax_ref of the P <= 3 router logits of 4 rows at once (row per
 * lane): the first largest logit, libm's expf of the differences (kl_expf4),
 * the sum from 0 in p order, 1/sum, the products; then every row's output
 * hin + r_0 path_0 + r_1 path_1 + ... in p order, a vector at a time. */
KL_INLINE void kl_mix_fwd_p(const int P, float *hout, float *r, const float *hin, const float *const *paths,
                            int N, int C) {
    for (int n0 = 0; n0 < N; n0 += 4) {
        const int rows = N - n0 < 4 ? N - n0 : 4;
        float *rb = r + (size_t)n0 * P;
        float xb[3 * 4], wb[3 * 4];                      /* [p][lane] */
        for (int pp = 0; pp < P; pp++)
            for (int l = 0; l < 4; l++) xb[pp * 4 + l] = l < rows ? rb[(size_t)l * P + pp] : 0.0f;
        v128_t x[3], mx = wasm_v128_load(xb);
        for (int pp = 0; pp < P; pp++) x[pp] = wasm_v128_load(xb + pp * 4);
        for (int pp = 1; pp < P; pp++) mx = wasm_v128_bitselect(x[pp], mx, wasm_f32x4_gt(x[pp], mx));
        v128_t sum = wasm_f32x4_splat(0.0f);
        for (int pp = 0; pp < P; pp++) {
            x[pp] = kl_expf4(wasm_f32x4_sub(x[pp], mx));
            sum = wasm_f32x4_add(sum, x[pp]);
        }
        const v128_t inv = wasm_f32x4_div(wasm_f32x4_splat(1.0f), sum);
        for (int pp = 0; pp < P; pp++) wasm_v128_store(wb + pp * 4, wasm_f32x4_mul(x[pp], inv));
        for (int l = 0; l < rows; l++) {
            const size_t n = (size_t)n0 + l;
            for (int pp = 0; pp < P; pp++) rb[(size_t)l * P + pp] = wb[pp * 4 + l];
            const float *hi = hin + n * C, *pa[3];
            float *ho = hout + n * C;
            v128_t wv[3];
            for (int pp = 0; pp < P; pp++) { pa[pp] = paths[pp] + n * C; wv[pp] = wasm_f32x4_splat(wb[pp * 4 + l]); }
            int c = 0;
            for (; c + 4 <= C; c += 4) {
                v128_t acc = wasm_v128_load(hi + c);
                for (int pp = 0; pp < P; pp++) acc = wasm_f32x4_add(acc, wasm_f32x4_mul(wv[pp], wasm_v128_load(pa[pp] + c)));
                wasm_v128_store(ho + c, acc);
            }
            for (; c < C; c++) {
                float a = hi[c];
                for (int pp = 0; pp < P; pp++) a += wb[pp * 4 + l] * pa[pp][c];
                ho[c] = a;
            }
        }
    }
}

void atm_atome_mix_forward_wasm(float *hout, float *r, const float *hin, const float *const *paths,
                                int N, int C, int P) {
    switch (P) {
    case 1: kl_mix_fwd_p(1, hout, r, hin, paths, N, C); break;
    case 2: kl_mix_fwd_p(2, hout, r, hin, paths, N, C); break;
    case 3: kl_mix_fwd_p(3, hout, r, hin, paths, N, C); break;
    default: atm_atome_mix_forward_ref(hout, r, hin, paths, N, C, P); break;
    }
}

/* One pass over a row for every path: dotf's 8 partial sums (lanes 0-3 in
 * one vector, 4-7 in another, combined as dotf) and the axpy into dpaths. */
KL_INLINE void kl_mix_bwd_p(const int P, float *drl, float *const *dpaths, const float *dhout, const float *r,
                            const float *const *paths, int N, int C) {
    for (int n = 0; n < N; n++) {
        const float *d = dhout + (size_t)n * C, *rn = r + (size_t)n * P, *pa[3];
        float *dp[3];
        v128_t lo[3], hi[3], rv[3];
        for (int pp = 0; pp < P; pp++) {
            pa[pp] = paths[pp] + (size_t)n * C;
            dp[pp] = dpaths[pp] ? dpaths[pp] + (size_t)n * C : NULL;
            lo[pp] = hi[pp] = wasm_f32x4_splat(0.0f);
            rv[pp] = wasm_f32x4_splat(rn[pp]);
        }
        for (int c = 0; c < C; c += 8) {
            const v128_t d0 = wasm_v128_load(d + c), d1 = wasm_v128_load(d + c + 4);
            for (int pp = 0; pp < P; pp++) {
                lo[pp] = wasm_f32x4_add(lo[pp], wasm_f32x4_mul(d0, wasm_v128_load(pa[pp] + c)));
                hi[pp] = wasm_f32x4_add(hi[pp], wasm_f32x4_mul(d1, wasm_v128_load(pa[pp] + c + 4)));
                if (dp[pp]) {
                    wasm_v128_store(dp[pp] + c, wasm_f32x4_add(wasm_v128_load(dp[pp] + c), wasm_f32x4_mul(rv[pp], d0)));
                    wasm_v128_store(dp[pp] + c + 4, wasm_f32x4_add(wasm_v128_load(dp[pp] + c + 4), wasm_f32x4_mul(rv[pp], d1)));
                }
            }
        }
        float dr[3], sum = 0.0f;
        for (int pp = 0; pp < P; pp++) {
            const v128_t t = wasm_f32x4_add(lo[pp], hi[pp]);     /* l0+l4, l1+l5, l2+l6, l3+l7 */
            dr[pp] = (wasm_f32x4_extract_lane(t, 0) + wasm_f32x4_extract_lane(t, 1)) +
                     (wasm_f32x4_extract_lane(t, 2) + wasm_f32x4_extract_lane(t, 3));
            sum += rn[pp] * dr[pp];
        }
        for (int pp = 0; pp < P; pp++) drl[(size_t)n * P + pp] += rn[pp] * (dr[pp] - sum);
    }
}

void atm_atome_mix_backward_wasm(float *drl, float *const *dpaths, const float *dhout, const float *r,
                                 const float *const *paths, int N, int C, int P) {
    if (C % 8 == 0) {
        switch (P) {
        case 1: kl_mix_bwd_p(1, drl, dpaths, dhout, r, paths, N, C); return;
        case 2: kl_mix_bwd_p(2, drl, dpaths, dhout, r, paths, N, C); return;
        case 3: kl_mix_bwd_p(3, drl, dpaths, dhout, r, paths, N, C); return;
        default: break;
        }
    }
    atm_atome_mix_backward_ref(drl, dpaths, dhout, r, paths, N, C, P);
}

/* ---- SSM scans ----
 * The x86 sets' scheme (kernels_x86_atome_tmpl.h) on 4-float vectors, and so
 * the bits of the references of atome.c: separate multiply and add, the
 * reference's operands in the reference's order per element. */

void atm_atome_ssm_forward_wasm(float *s, float *out, const float *u, const float *a_raw,
                                const float *b, const float *c_out, float *scratch, int B, int T, int C) {
    float *a = scratch;                                   /* [C] tanh(a_raw) */
    for (int c = 0; c < C; c++) a[c] = tanhf(a_raw[c]);
    for (int bb = 0; bb < B; bb++)
        for (int t = 0; t < T; t++) {
            const size_t n = ((size_t)bb * T + t) * C;
            int i = 0;
            for (; i + 4 <= C; i += 4) {
                v128_t st = wasm_f32x4_mul(wasm_v128_load(b + i), wasm_v128_load(u + n + i));   /* b*u_t ... */
                if (t > 0) st = wasm_f32x4_add(st, wasm_f32x4_mul(wasm_v128_load(a + i), wasm_v128_load(s + n - C + i)));
                wasm_v128_store(s + n + i, st);
                wasm_v128_store(out + n + i, wasm_f32x4_mul(wasm_v128_load(c_out + i), st));
            }
            for (; i < C; i++) {
                float st = b[i] * u[n + i];
                if (t > 0) st += a[i] * s[n - C + i];
                s[n + i] = st;
                out[n + i] = c_out[i] * st;
            }
        }
}

/* The backward scan keeps 4 channels' carry and three sums in registers for
 * the whole scan, chunks outermost; every channel sees the reference's
 * ssm_bwd_step in the reference's order (b ascending, t descending). */
KL_INLINE void kl_ssm_bwd_chunk(float *du, float *da_raw, float *db, float *dc, const float *dout,
                                const float *u, const float *s, const float *a, const float *b,
                                const float *c_out, int B, int T, int C, int i, const int w) {
    const v128_t av = atm_wl_load(a + i, w), bv = atm_wl_load(b + i, w), cov = atm_wl_load(c_out + i, w);
    v128_t acc_da = wasm_f32x4_splat(0.0f), acc_db = acc_da, acc_dc = acc_da;
    for (int bb = 0; bb < B; bb++) {
        v128_t carry = wasm_f32x4_splat(0.0f);           /* a * dL/ds_{t+1} */
        for (int t = T - 1; t >= 0; t--) {
            const size_t n = ((size_t)bb * T + t) * C + i;
            const v128_t g = atm_wl_load(dout + n, w), sv = atm_wl_load(s + n, w);
            const v128_t sp = t > 0 ? atm_wl_load(s + n - C, w) : wasm_f32x4_splat(0.0f);
            const v128_t ds = wasm_f32x4_add(wasm_f32x4_mul(g, cov), carry);
            carry = wasm_f32x4_mul(av, ds);
            if (du) atm_wl_store(du + n, wasm_f32x4_add(atm_wl_load(du + n, w), wasm_f32x4_mul(bv, ds)), w);
            acc_dc = wasm_f32x4_add(acc_dc, wasm_f32x4_mul(g, sv));
            acc_db = wasm_f32x4_add(acc_db, wasm_f32x4_mul(ds, atm_wl_load(u + n, w)));
            acc_da = wasm_f32x4_add(acc_da, wasm_f32x4_mul(ds, sp));
        }
    }
    if (da_raw)
        atm_wl_store(da_raw + i, wasm_f32x4_add(atm_wl_load(da_raw + i, w), wasm_f32x4_mul(acc_da,
                 wasm_f32x4_sub(wasm_f32x4_splat(1.0f), wasm_f32x4_mul(av, av)))), w);
    if (db) atm_wl_store(db + i, wasm_f32x4_add(atm_wl_load(db + i, w), acc_db), w);
    if (dc) atm_wl_store(dc + i, wasm_f32x4_add(atm_wl_load(dc + i, w), acc_dc), w);
}

/* Two whole chunks (channels i .. i+7) in one scan: two independent carry
 * chains, each channel's operations and order as kl_ssm_bwd_chunk's. */
KL_INLINE void kl_ssm_bwd_chunk2(float *du, float *da_raw, float *db, float *dc, const float *dout,
                                 const float *u, const float *s, const float *a, const float *b,
                                 const float *c_out, int B, int T, int C, int i) {
    const v128_t av0 = wasm_v128_load(a + i), bv0 = wasm_v128_load(b + i), co0 = wasm_v128_load(c_out + i);
    const v128_t av1 = wasm_v128_load(a + i + 4), bv1 = wasm_v128_load(b + i + 4), co1 = wasm_v128_load(c_out + i + 4);
    v128_t da0 = wasm_f32x4_splat(0.0f), db0 = da0, dc0 = da0, da1 = da0, db1 = da0, dc1 = da0;
    for (int bb = 0; bb < B; bb++) {
        v128_t carry0 = wasm_f32x4_splat(0.0f), carry1 = carry0;
        for (int t = T - 1; t >= 0; t--) {
            const size_t n = ((size_t)bb * T + t) * C + i;
            const v128_t g0 = wasm_v128_load(dout + n), g1 = wasm_v128_load(dout + n + 4);
            const v128_t ds0 = wasm_f32x4_add(wasm_f32x4_mul(g0, co0), carry0);
            const v128_t ds1 = wasm_f32x4_add(wasm_f32x4_mul(g1, co1), carry1);
            carry0 = wasm_f32x4_mul(av0, ds0);
            carry1 = wasm_f32x4_mul(av1, ds1);
            if (du) {
                wasm_v128_store(du + n, wasm_f32x4_add(wasm_v128_load(du + n), wasm_f32x4_mul(bv0, ds0)));
                wasm_v128_store(du + n + 4, wasm_f32x4_add(wasm_v128_load(du + n + 4), wasm_f32x4_mul(bv1, ds1)));
            }
            dc0 = wasm_f32x4_add(dc0, wasm_f32x4_mul(g0, wasm_v128_load(s + n)));
            dc1 = wasm_f32x4_add(dc1, wasm_f32x4_mul(g1, wasm_v128_load(s + n + 4)));
            db0 = wasm_f32x4_add(db0, wasm_f32x4_mul(ds0, wasm_v128_load(u + n)));
            db1 = wasm_f32x4_add(db1, wasm_f32x4_mul(ds1, wasm_v128_load(u + n + 4)));
            const v128_t sp0 = t > 0 ? wasm_v128_load(s + n - C) : wasm_f32x4_splat(0.0f);
            const v128_t sp1 = t > 0 ? wasm_v128_load(s + n - C + 4) : wasm_f32x4_splat(0.0f);
            da0 = wasm_f32x4_add(da0, wasm_f32x4_mul(ds0, sp0));
            da1 = wasm_f32x4_add(da1, wasm_f32x4_mul(ds1, sp1));
        }
    }
    const v128_t one = wasm_f32x4_splat(1.0f);
    if (da_raw) {
        wasm_v128_store(da_raw + i, wasm_f32x4_add(wasm_v128_load(da_raw + i),
                        wasm_f32x4_mul(da0, wasm_f32x4_sub(one, wasm_f32x4_mul(av0, av0)))));
        wasm_v128_store(da_raw + i + 4, wasm_f32x4_add(wasm_v128_load(da_raw + i + 4),
                        wasm_f32x4_mul(da1, wasm_f32x4_sub(one, wasm_f32x4_mul(av1, av1)))));
    }
    if (db) {
        wasm_v128_store(db + i, wasm_f32x4_add(wasm_v128_load(db + i), db0));
        wasm_v128_store(db + i + 4, wasm_f32x4_add(wasm_v128_load(db + i + 4), db1));
    }
    if (dc) {
        wasm_v128_store(dc + i, wasm_f32x4_add(wasm_v128_load(dc + i), dc0));
        wasm_v128_store(dc + i + 4, wasm_f32x4_add(wasm_v128_load(dc + i + 4), dc1));
    }
}

void atm_atome_ssm_backward_wasm(float *du, float *da_raw, float *db, float *dc, const float *dout,
                                 const float *u, const float *s, const float *a_raw, const float *b,
                                 const float *c_out, float *scratch, int B, int T, int C) {
    float *a = scratch;                                   /* [C] tanh(a_raw) */
    for (int c = 0; c < C; c++) a[c] = tanhf(a_raw[c]);
    int i = 0;
    for (; i + 8 <= C; i += 8) kl_ssm_bwd_chunk2(du, da_raw, db, dc, dout, u, s, a, b, c_out, B, T, C, i);
    for (; i + 4 <= C; i += 4) kl_ssm_bwd_chunk(du, da_raw, db, dc, dout, u, s, a, b, c_out, B, T, C, i, 4);
    switch (C - i) {
    case 1: kl_ssm_bwd_chunk(du, da_raw, db, dc, dout, u, s, a, b, c_out, B, T, C, i, 1); break;
    case 2: kl_ssm_bwd_chunk(du, da_raw, db, dc, dout, u, s, a, b, c_out, B, T, C, i, 2); break;
    case 3: kl_ssm_bwd_chunk(du, da_raw, db, dc, dout, u, s, a, b, c_out, B, T, C, i, 3); break;
    default: break;
    }
}

#else
/* ISO C wants at least one declaration in a translation unit. */
typedef int atm_kernels_layers_wasm_unused;
#endif
