/* core/train/kernels/kernels_wasm_lanes.h — the wasm SIMD128 lanes of the shared
 * kernel templates (kernels_x86_tmpl.h for the matmuls, kernels_x86_layers_tmpl.h
 * and kernels_x86_atome_tmpl.h for the layers): the KX_* macros those
 * templates take from their includer, defined on 4-float v128_t vectors,
 * plus the two vector exps of the wasm set. Included by kernels_wasm.c and
 * kernels_layers_wasm.c only, under __wasm_simd128__.
 *
 * What differs from the x86 instances (kernels_x86.c) and why:
 *   masks     wasm has no masked loads: a mask (KX_MASK) is the count n of
 *             low lanes, 1..4, and KX_LOADM / KX_STOREM are the lane loads and
 *             stores of wasm_lanes.h, which touch nothing outside the caller's
 *             buffer; a lane predicate (KX_BM) is an all-ones lane vector.
 *   max       KX_MAX(a, b) is pmax (b > a ? b : a): a NaN never replaces a
 *             number, as the references' "if (x > mx) mx = x".
 *   sums      KX_HSUM(v) = (l0 + l2) + (l1 + l3).
 *   exp       KX_EXP is kx_exp_wasm: the x86 sets' algorithm with a separate
 *             multiply and add (wasm has no fused multiply-add).
 *   softmax   the set's softmax is atm_softmax_ref (KX_LIBM_SOFTMAX), so the
 *             attention and router weights need libm's expf on lanes bit for
 *             bit: KX_EXPF is kx_expf4.
 *   gathers   KX_GATHERM reads lane by lane (no gather instruction).
 *   dotf      KX_DOT8 takes dotf's 8 lanes as two vectors.
 * Nothing here has to end an entry point (KX_VZEROUPPER is empty). */
#ifndef ATOME_TRAIN_KERNELS_WASM_LANES_H
#define ATOME_TRAIN_KERNELS_WASM_LANES_H
#include <math.h>
#include <stdint.h>
#include <wasm_simd128.h>
#include "wasm_lanes.h"

#define KX_INL static inline __attribute__((always_inline))

/* All-ones in lanes 0..n-1 (n = 0..4). */
KX_INL v128_t kx_mask_wasm(int n) { return wasm_i32x4_gt(wasm_i32x4_splat(n), wasm_i32x4_make(0, 1, 2, 3)); }

/* All-ones in lane l where bit l of bits is set. */
KX_INL v128_t kx_bits_wasm(unsigned bits) {
    const v128_t b = wasm_i32x4_make(1, 2, 4, 8);
    return wasm_i32x4_eq(wasm_v128_and(wasm_i32x4_splat((int)bits), b), b);
}

KX_INL float kx_hsum_wasm(v128_t v) {
    v128_t s = wasm_f32x4_add(v, wasm_i32x4_shuffle(v, v, 2, 3, 0, 1));
    return wasm_f32x4_extract_lane(s, 0) + wasm_f32x4_extract_lane(s, 1);
}

/* Largest lane by pmax (never a NaN over a number). */
KX_INL float kx_hmax_wasm(v128_t v) {
    v128_t m = wasm_f32x4_pmax(v, wasm_i32x4_shuffle(v, v, 2, 3, 0, 1));
    m = wasm_f32x4_pmax(m, wasm_i32x4_shuffle(m, m, 1, 0, 3, 2));
    return wasm_f32x4_extract_lane(m, 0);
}

/* p[idx[l]] in lanes l < n (n = 1..4), 0 above. */
KX_INL v128_t kx_gather_wasm(const float *p, v128_t idx, int n) {
    v128_t v = wasm_f32x4_make(p[wasm_i32x4_extract_lane(idx, 0)], 0.0f, 0.0f, 0.0f);
    if (n > 1) v = wasm_f32x4_replace_lane(v, 1, p[wasm_i32x4_extract_lane(idx, 1)]);
    if (n > 2) v = wasm_f32x4_replace_lane(v, 2, p[wasm_i32x4_extract_lane(idx, 2)]);
    if (n > 3) v = wasm_f32x4_replace_lane(v, 3, p[wasm_i32x4_extract_lane(idx, 3)]);
    return v;
}

/* dotf of vecf.h: lane l (of 8: lanes 0-3 in lo, 4-7 in hi) sums a[i]*b[i]
 * over i = l mod 8 in order, the tail past the last full 8 goes to lane 0,
 * and the lanes combine as ((l0+l4)+(l1+l5)) + ((l2+l6)+(l3+l7)). */
KX_INL float kx_dot8_wasm(const float *a, const float *b, int n) {
    v128_t lo = wasm_f32x4_splat(0.0f), hi = lo;
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        lo = wasm_f32x4_add(lo, wasm_f32x4_mul(wasm_v128_load(a + i), wasm_v128_load(b + i)));
        hi = wasm_f32x4_add(hi, wasm_f32x4_mul(wasm_v128_load(a + i + 4), wasm_v128_load(b + i + 4)));
    }
    if (i < n) {
        float l0 = wasm_f32x4_extract_lane(lo, 0);
        for (; i < n; i++) l0 += a[i] * b[i];
        lo = wasm_f32x4_replace_lane(lo, 0, l0);
    }
    const v128_t t = wasm_f32x4_add(lo, hi);             /* l0+l4, l1+l5, l2+l6, l3+l7 */
    return (wasm_f32x4_extract_lane(t, 0) + wasm_f32x4_extract_lane(t, 1)) +
           (wasm_f32x4_extract_lane(t, 2) + wasm_f32x4_extract_lane(t, 3));
}

/* The same dot product, and y[i] += r * a[i] in the same pass. */
KX_INL float kx_dot8_axpy_wasm(const float *a, const float *b, int n, float *y, float r) {
    v128_t lo = wasm_f32x4_splat(0.0f), hi = lo;
    const v128_t rv = wasm_f32x4_splat(r);
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        const v128_t a0 = wasm_v128_load(a + i), a1 = wasm_v128_load(a + i + 4);
        lo = wasm_f32x4_add(lo, wasm_f32x4_mul(a0, wasm_v128_load(b + i)));
        hi = wasm_f32x4_add(hi, wasm_f32x4_mul(a1, wasm_v128_load(b + i + 4)));
        wasm_v128_store(y + i, wasm_f32x4_add(wasm_v128_load(y + i), wasm_f32x4_mul(rv, a0)));
        wasm_v128_store(y + i + 4, wasm_f32x4_add(wasm_v128_load(y + i + 4), wasm_f32x4_mul(rv, a1)));
    }
    if (i < n) {
        float l0 = wasm_f32x4_extract_lane(lo, 0);
        for (; i < n; i++) { l0 += a[i] * b[i]; y[i] += r * a[i]; }
        lo = wasm_f32x4_replace_lane(lo, 0, l0);
    }
    const v128_t t = wasm_f32x4_add(lo, hi);
    return (wasm_f32x4_extract_lane(t, 0) + wasm_f32x4_extract_lane(t, 1)) +
           (wasm_f32x4_extract_lane(t, 2) + wasm_f32x4_extract_lane(t, 3));
}

/* ---- vector exp (constants of kernels_x86.c: Cephes expf, S. Moshier) ----
 * exp of 4 lanes for x <= 88 (the callers pass x <= 0). NaN stays NaN.
 * n = round(x * log2e) to even by adding 1.5 * 2^23 (every sum then lies in
 * [2^23, 2^24), where floats are the integers: f32.nearest's value, and the
 * sum's bits minus those of 1.5 * 2^23 are n as an integer). 2^n = 2^n1 *
 * 2^n2 with n1 = max(n, -125): p * 2^n1 is exact and only the second
 * product can round (into the subnormals). */
#define KX_WEXP_LO -104.0f               /* exp(x) < 2^-150 rounds to 0 below */
#define KX_WEXP_LOG2E 1.44269504088896341f
#define KX_WEXP_LN2_HI 0.693359375f      /* 8 significant bits: n * LN2_HI is exact */
#define KX_WEXP_LN2_LO -2.12194440e-4f   /* ln 2 - LN2_HI */
#define KX_WEXP_RND 12582912.0f          /* 1.5 * 2^23 */
#define KX_WEXP_RND_BITS 0x4b400000
KX_INL v128_t kx_exp_wasm(v128_t x) {
    x = wasm_f32x4_pmax(x, wasm_f32x4_splat(KX_WEXP_LO));   /* x < LO ? LO : x, so NaN stays */
    const v128_t t = wasm_f32x4_add(wasm_f32x4_mul(x, wasm_f32x4_splat(KX_WEXP_LOG2E)), wasm_f32x4_splat(KX_WEXP_RND));
    const v128_t n = wasm_f32x4_sub(t, wasm_f32x4_splat(KX_WEXP_RND));
    v128_t r = wasm_f32x4_sub(x, wasm_f32x4_mul(n, wasm_f32x4_splat(KX_WEXP_LN2_HI)));
    r = wasm_f32x4_sub(r, wasm_f32x4_mul(n, wasm_f32x4_splat(KX_WEXP_LN2_LO)));
    v128_t p = wasm_f32x4_splat(1.9875691500e-4f);
    p = wasm_f32x4_add(wasm_f32x4_mul(p, r), wasm_f32x4_splat(1.3981999507e-3f));
    p = wasm_f32x4_add(wasm_f32x4_mul(p, r), wasm_f32x4_splat(8.3334519073e-3f));
    p = wasm_f32x4_add(wasm_f32x4_mul(p, r), wasm_f32x4_splat(4.1665795894e-2f));
    p = wasm_f32x4_add(wasm_f32x4_mul(p, r), wasm_f32x4_splat(1.6666665459e-1f));
    p = wasm_f32x4_add(wasm_f32x4_mul(p, r), wasm_f32x4_splat(5.0000001201e-1f));
    p = wasm_f32x4_add(wasm_f32x4_mul(p, wasm_f32x4_mul(r, r)), r);
    p = wasm_f32x4_add(p, wasm_f32x4_splat(1.0f));
    /* biased exponents n + 127 and n1 + 127 = max(n + 127, 2) */
    const v128_t e = wasm_i32x4_sub(t, wasm_i32x4_splat(KX_WEXP_RND_BITS - 127));
    const v128_t e1 = wasm_i32x4_max(e, wasm_i32x4_splat(2));
    const v128_t s1 = wasm_i32x4_shl(e1, 23);
    const v128_t s2 = wasm_i32x4_shl(wasm_i32x4_add(wasm_i32x4_sub(e, e1), wasm_i32x4_splat(127)), 23);
    return wasm_f32x4_mul(wasm_f32x4_mul(p, s1), s2);
}

/* ---- libm's expf on 4 lanes, bit for bit ----
 * musl's expf (ARM optimized-routines, also glibc's; what atm_softmax_ref
 * calls in this build) in double lanes, operation for operation: z =
 * x * 32/ln2, k = round(z) by the 1.5*2^52 shift, r = z - k, 2^(k/32) from
 * the 32-entry table plus k << 47 in the exponent, the cubic in r, one
 * rounding to float. A vector with any lane where libm leaves that path
 * (|x| >= 88, inf, NaN) calls expf per lane. Table and constants:
 * musl src/math/exp2f_data.c (Copyright (c) 2017-2018, Arm Limited, MIT). */
#define KX_EXPF_INVLN2N (0x1.71547652b82fep+0 * 32)
#define KX_EXPF_SHIFT 0x1.8p+52
#define KX_EXPF_C0 (0x1.c6af84b912394p-5 / 32 / 32 / 32)
#define KX_EXPF_C1 (0x1.ebfce50fac4f3p-3 / 32 / 32)
#define KX_EXPF_C2 (0x1.62e42ff0c52d6p-1 / 32)

/* expf of 2 floats already widened to double (|x| < 88): 2 doubles. */
KX_INL v128_t kx_expf_d2(v128_t xd) {
    static const uint64_t KX_EXP2F_TAB[32] = {
        0x3ff0000000000000, 0x3fefd9b0d3158574, 0x3fefb5586cf9890f, 0x3fef9301d0125b51,
        0x3fef72b83c7d517b, 0x3fef54873168b9aa, 0x3fef387a6e756238, 0x3fef1e9df51fdee1,
        0x3fef06fe0a31b715, 0x3feef1a7373aa9cb, 0x3feedea64c123422, 0x3feece086061892d,
        0x3feebfdad5362a27, 0x3feeb42b569d4f82, 0x3feeab07dd485429, 0x3feea47eb03a5585,
        0x3feea09e667f3bcd, 0x3fee9f75e8ec5f74, 0x3feea11473eb0187, 0x3feea589994cce13,
        0x3feeace5422aa0db, 0x3feeb737b0cdc5e5, 0x3feec49182a3f090, 0x3feed503b23e255d,
        0x3feee89f995ad3ad, 0x3feeff76f2fb5e47, 0x3fef199bdd85529c, 0x3fef3720dcef9069,
        0x3fef5818dcfba487, 0x3fef7c97337b9b5f, 0x3fefa4afa2a490da, 0x3fefd0765b6e4540,
    };
    const v128_t z = wasm_f64x2_mul(wasm_f64x2_splat(KX_EXPF_INVLN2N), xd);
    const v128_t ki = wasm_f64x2_add(z, wasm_f64x2_splat(KX_EXPF_SHIFT));
    const v128_t r = wasm_f64x2_sub(z, wasm_f64x2_sub(ki, wasm_f64x2_splat(KX_EXPF_SHIFT)));
    v128_t t = wasm_v128_load64_zero(&KX_EXP2F_TAB[wasm_i64x2_extract_lane(ki, 0) & 31]);
    t = wasm_v128_load64_lane(&KX_EXP2F_TAB[wasm_i64x2_extract_lane(ki, 1) & 31], t, 1);
    t = wasm_i64x2_add(t, wasm_i64x2_shl(ki, 47));
    const v128_t zz = wasm_f64x2_add(wasm_f64x2_mul(wasm_f64x2_splat(KX_EXPF_C0), r), wasm_f64x2_splat(KX_EXPF_C1));
    const v128_t r2 = wasm_f64x2_mul(r, r);
    v128_t y = wasm_f64x2_add(wasm_f64x2_mul(wasm_f64x2_splat(KX_EXPF_C2), r), wasm_f64x2_splat(1.0));
    y = wasm_f64x2_add(wasm_f64x2_mul(zz, r2), y);
    return wasm_f64x2_mul(y, t);
}

KX_INL v128_t kx_expf4(v128_t x) {
    if (wasm_v128_any_true(wasm_i32x4_ge(wasm_v128_and(x, wasm_i32x4_splat(0x7fffffff)),
                                         wasm_i32x4_splat(0x42b00000)))) {   /* top12(88.0f) */
        float l[4];
        wasm_v128_store(l, x);
        for (int i = 0; i < 4; i++) l[i] = expf(l[i]);
        return wasm_v128_load(l);
    }
    const v128_t lo = wasm_f32x4_demote_f64x2_zero(kx_expf_d2(wasm_f64x2_promote_low_f32x4(x)));
    const v128_t hi = wasm_f32x4_demote_f64x2_zero(kx_expf_d2(wasm_f64x2_promote_low_f32x4(
        wasm_i32x4_shuffle(x, x, 2, 3, 2, 3))));
    return wasm_i32x4_shuffle(lo, hi, 0, 1, 4, 5);
}
#undef KX_INL

/* ---- the macros of the templates (see their header comments) ----
 * Matmul (kernels_x86_tmpl.h). Columns go in blocks of 16 (4 vectors); a
 * register tile keeps MR rows x NV vectors of C for the whole k loop: 2 x 4
 * for full blocks, 3 x 3, 4 x 2 and 6 x 1 for the last block. V8 keeps 15
 * vector registers on x86-64 and issues every load of a k step (NV B
 * vectors, MR broadcasts) before the arithmetic, and needs one more register
 * for the product being added, so a tile fits when MR*NV + NV + MR + 1 <= 15.
 * The former 12-column blocks of 3 x 3 tiles (16: one accumulator lives on
 * the stack) took ~3-4% more matmul time per atome-60k step than 2 x 4 (15)
 * in interleaved replays; 4 x 2 measured within noise of 3 x 3. 3 x 3 stays
 * for a last block of 3 vectors (fewer loads per product than 2 x 3,
 * measured faster on the vanilla attention shapes), and a product with 3
 * rows (dw of a 3-output layer) uses 12-column blocks (KX_NBLOCK): one 3 x 3
 * pass over B instead of 2 x 4 + 1 x 4. A B tail of 1..3 columns is a
 * constant of its tile (KX_NBT = 4 kinds), so its lane loads are fixed
 * instructions in the k loop. "FMA" is a rounded multiply then a rounded
 * add (wasm has no fused multiply-add). Packing A as well (broadcasts at
 * fixed offsets) measured no faster on the large shapes and slower on small
 * ones, so A is read in place. */
#define KX_BCAST(p) wasm_v128_load32_splat(p)
#define KX_FMA(a, b, c) wasm_f32x4_add((c), wasm_f32x4_mul((a), (b)))
#define KX_NVMAX 4
#define KX_MR1 6
#define KX_MR2 4
#define KX_MR3 3
#define KX_MR4 2
/* 256 x 16 floats = 16 KiB panel (stack): stays in L1 beside the streamed rows. */
#define KX_KC 256
/* dw sums N in slabs of 128 rows (the x86 kernels measured the same, docs/kernels.md). */
#define KX_NSLAB 128
#define KX_SMALLN 4
#define KX_NBT 4
#define KX_BT(cols) ((cols) % 4)
#define KX_LOADB(p, bt, m) atm_wl_load((p), (bt))
#define KX_NBLOCK(rows) ((rows) == 3 ? 12 : 16)
/* Layer kernels (kernels_x86_layers_tmpl.h, kernels_x86_atome_tmpl.h). */
#define KX_ATTR
#define KX_SUFFIX wasm
#define KX_VL 4
#define KX_V v128_t
#define KX_MASK int                      /* lanes 0 .. m-1 */
#define KX_TAILMASK(n) (n)
#define KX_ZERO() wasm_f32x4_splat(0.0f)
#define KX_LOAD(p) wasm_v128_load(p)
#define KX_LOADM(p, m) atm_wl_load((p), (m))
#define KX_STORE(p, v) wasm_v128_store((p), (v))
#define KX_STOREM(p, m, v) atm_wl_store((p), (v), (m))
#define KX_SET1(x) wasm_f32x4_splat(x)
#define KX_ADD(a, b) wasm_f32x4_add((a), (b))
#define KX_SUB(a, b) wasm_f32x4_sub((a), (b))
#define KX_MUL(a, b) wasm_f32x4_mul((a), (b))
#define KX_DIV(a, b) wasm_f32x4_div((a), (b))
#define KX_MAX(a, b) wasm_f32x4_pmax((a), (b))
#define KX_MASKZ(m, v) wasm_v128_and((v), kx_mask_wasm(m))
#define KX_LOADM_OR(p, m, f) wasm_v128_bitselect(atm_wl_load((p), (m)), (f), kx_mask_wasm(m))
#define KX_HSUM(v) kx_hsum_wasm(v)
#define KX_HMAX(v) kx_hmax_wasm(v)
#define KX_EXP(v) kx_exp_wasm(v)
#define KX_EXPF(v) kx_expf4(v)
#define KX_SQRT1(x) sqrtf(x)             /* f32.sqrt: correctly rounded */
#define KX_VZEROUPPER() ((void)0)
#define KX_DOT8(a, b, n) kx_dot8_wasm((a), (b), (n))
#define KX_DOT8_AXPY(a, b, n, y, r) kx_dot8_axpy_wasm((a), (b), (n), (y), (r))
#define KX_GT_BITS(a, b) wasm_i32x4_bitmask(wasm_f32x4_gt((a), (b)))
#define KX_EQ_BITS(a, b) wasm_i32x4_bitmask(wasm_f32x4_eq((a), (b)))
#define KX_NAN_BITS(a) wasm_i32x4_bitmask(wasm_f32x4_ne((a), (a)))
#define KX_SELECT(bits, v, f) wasm_v128_bitselect((v), (f), kx_bits_wasm(bits))
#define KX_BM v128_t
#define KX_BM_ZERO() wasm_i32x4_splat(0)
#define KX_BM_GT(a, b) wasm_f32x4_gt((a), (b))
#define KX_BM_NAN(a) wasm_f32x4_ne((a), (a))
#define KX_BM_AND(x, y) wasm_v128_and((x), (y))
#define KX_BM_OR(x, y) wasm_v128_or((x), (y))
#define KX_BM_ANDNOT(x, y) wasm_v128_andnot((y), (x))   /* ~x & y */
#define KX_BM_BITS(x) ((unsigned)wasm_i32x4_bitmask(x))
#define KX_BM_FROM(bits) kx_bits_wasm(bits)
#define KX_BM_KEEP(m, v) wasm_v128_and((v), (m))
#define KX_BLEND(m, a, b) wasm_v128_bitselect((b), (a), (m))
#define KX_VI v128_t
#define KX_SET1I(x) wasm_i32x4_splat(x)
#define KX_BLENDI(m, a, b) wasm_v128_bitselect((b), (a), (m))
#define KX_STOREI(p, v) wasm_v128_store((p), (v))
#define KX_IOTA_TIMES(s) wasm_i32x4_make(0, (s), 2 * (s), 3 * (s))
#define KX_GATHERM(p, idx, m) kx_gather_wasm((p), (idx), (m))
/* The set's softmax is the reference's; 4 score vectors per pass keep the
 * accumulators in V8's registers; 4 layernorm rows, 4 max chains and 2 SSM
 * backward scans side by side overlap their latency chains (4-lane vectors
 * give a row many dependent operations), and so do 2 conv forward chunks;
 * the layernorm backward keeps a row of up to 256 on the stack; attention
 * backward is the reference. */
#define KX_LIBM_SOFTMAX 1
#define KX_SCORES_NV 4
#define KX_LN_ROWS 4
#define KX_LN_KEEP 256
#define KX_MAX_CHAINS4 1
#define KX_SSM_NV 2
#define KX_CONV_NV 2
#define KX_NO_ATTN_BACKWARD 1

#endif
