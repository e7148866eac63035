/* core/train/kernels/kernels_x86_layers_tmpl.h — the generic layers of one SIMD layer
 * kernel set (kernels_layers.h): layernorm, cross-entropy, exp, softmax;
 * instantiated by kernels_x86.c once per x86 instruction set right after
 * kernels_x86_tmpl.h, and by kernels_layers_wasm.c for wasm SIMD128 (never
 * included elsewhere). The atome pathways follow in kernels_x86_atome_tmpl.h.
 *
 * Besides the matmul template's macros (KX_ATTR KX_SUFFIX KX_VL KX_V KX_MASK
 * KX_ZERO KX_LOAD KX_LOADM KX_STORE KX_STOREM KX_ADD KX_TAILMASK KX_HSUM) the
 * includer defines:
 *   KX_SET1(x) KX_SUB(a,b) KX_MUL(a,b) KX_MAX(a,b)
 *   KX_MASKZ(m,v)        v with the lanes outside m zeroed
 *   KX_LOADM_OR(p,m,f)   masked load, lanes outside m taken from vector f
 *   KX_HMAX(v)           largest lane
 *   KX_EXP(v)            the vector exp (kernels_x86.c)
 *   KX_HSUMT(v)          sum of the lanes by the fixed tree of kernels_x86.c
 *                        (the softmax's; kernels_x86_atome_tmpl.h repeats it
 *                        across vectors)
 *   KX_SQRT1(x)          correctly rounded sqrt of one float (= sqrtf)
 *   KX_VZEROUPPER()      what ends an entry point (vzeroupper on x86)
 * and may define:
 *   KX_LIBM_SOFTMAX      the set's softmax is atm_softmax_ref (no atm_softmax
 *                        here; kl_softmax calls the reference)
 *   KX_LN_ROWS           layernorm forward rows side by side (1..4; default 1)
 *   KX_LN_KEEP           layernorm backward keeps a row of up to this many
 *                        floats on the stack between its passes (default 0)
 *   KX_MAX_CHAINS4       the cross-entropy row max in four chains (only where
 *                        KX_MAX never replaces a number by a NaN)
 * KX_TAILMASK(n) must accept n in 0..KX_VL.
 *
 * Every row is computed on its own, in a fixed order that depends only on
 * the row length, so results never depend on N, on the row's position or on
 * pointer alignment. Entry points end with vzeroupper (see kernels_x86_tmpl.h)
 * and call no libm function while upper vector halves may be dirty. */
#include "../kernels_layers.h"

#define KL_CAT2(a, b) a##_##b
#define KL_CAT(a, b) KL_CAT2(a, b)
#define KL(name) KL_CAT(name, KX_SUFFIX)
#define KL_INLINE static inline __attribute__((always_inline)) KX_ATTR


/* Rows per pass of the layernorm forward (KX_LN_ROWS, 1..4): R rows side by
 * side, each row's operations as for one row alone, so the sums' latency
 * chains of the rows overlap where the set asks for it. */
#if defined(KX_LN_ROWS)
#define KL_LNR KX_LN_ROWS
#else
#define KL_LNR 1
#endif

/* Rows n .. n+R-1. */
KL_INLINE void KL(kl_ln_fwd_rows)(const int R, float *out, float *mean, float *rstd, const float *inp,
                                  const float *g, const float *b, int n, int C) {
    const int full = C / KX_VL * KX_VL, tail = C - full;
    const KX_MASK m = KX_TAILMASK(tail);
    const float *x[4];
    KX_V acc[4], mv[4], sv[4];
    float mu[4], s[4];
    int i;
    for (int r = 0; r < R; r++) { x[r] = inp + (size_t)(n + r) * C; acc[r] = KX_ZERO(); }
    for (i = 0; i < full; i += KX_VL)
        for (int r = 0; r < R; r++) acc[r] = KX_ADD(acc[r], KX_LOAD(x[r] + i));
    if (tail)
        for (int r = 0; r < R; r++) acc[r] = KX_ADD(acc[r], KX_LOADM(x[r] + i, m));
    for (int r = 0; r < R; r++) { mu[r] = KX_HSUM(acc[r]) / (float)C; mv[r] = KX_SET1(mu[r]); acc[r] = KX_ZERO(); }
    for (i = 0; i < full; i += KX_VL)
        for (int r = 0; r < R; r++) {
            KX_V d = KX_SUB(KX_LOAD(x[r] + i), mv[r]);
            acc[r] = KX_ADD(acc[r], KX_MUL(d, d));
        }
    if (tail)
        for (int r = 0; r < R; r++) {
            KX_V d = KX_MASKZ(m, KX_SUB(KX_LOADM(x[r] + i, m), mv[r]));
            acc[r] = KX_ADD(acc[r], KX_MUL(d, d));
        }
    for (int r = 0; r < R; r++) {
        const float var = KX_HSUM(acc[r]) / (float)C;
        s[r] = 1.0f / KX_SQRT1(var + ATM_LN_EPS);
        sv[r] = KX_SET1(s[r]);
    }
    /* ((x - mu) * s) * g + b, rounded after each operation as the reference */
    for (i = 0; i < full; i += KX_VL) {
        const KX_V gv = KX_LOAD(g + i), bv = KX_LOAD(b + i);
        for (int r = 0; r < R; r++)
            KX_STORE(out + (size_t)(n + r) * C + i,
                     KX_ADD(KX_MUL(KX_MUL(KX_SUB(KX_LOAD(x[r] + i), mv[r]), sv[r]), gv), bv));
    }
    if (tail) {
        const KX_V gv = KX_LOADM(g + i, m), bv = KX_LOADM(b + i, m);
        for (int r = 0; r < R; r++)
            KX_STOREM(out + (size_t)(n + r) * C + i, m,
                      KX_ADD(KX_MUL(KX_MUL(KX_SUB(KX_LOADM(x[r] + i, m), mv[r]), sv[r]), gv), bv));
    }
    for (int r = 0; r < R; r++) {
        if (mean) mean[n + r] = mu[r];
        if (rstd) rstd[n + r] = s[r];
    }
}

KX_ATTR void KL(atm_layernorm_forward)(float *out, float *mean, float *rstd, const float *inp,
                                       const float *g, const float *b, int N, int C) {
    if (N <= 0) return;
    if (C <= 0) { atm_layernorm_forward_ref(out, mean, rstd, inp, g, b, N, C); return; }
    int n = 0;
    for (; n + KL_LNR <= N; n += KL_LNR) KL(kl_ln_fwd_rows)(KL_LNR, out, mean, rstd, inp, g, b, n, C);
    switch (N - n) {
    case 1: KL(kl_ln_fwd_rows)(1, out, mean, rstd, inp, g, b, n, C); break;
#if KL_LNR > 2
    case 2: KL(kl_ln_fwd_rows)(2, out, mean, rstd, inp, g, b, n, C); break;
#endif
#if KL_LNR > 3
    case 3: KL(kl_ln_fwd_rows)(3, out, mean, rstd, inp, g, b, n, C); break;
#endif
    default: break;
    }
    KX_VZEROUPPER();
}

/* Rows of C <= KX_LN_KEEP (0 if undefined) keep the first pass's normalised
 * inputs xh and g * dout (xb, nb) for the second instead of recomputing
 * them (the same values): for a set whose loads are cheaper than the
 * arithmetic. */
#if defined(KX_LN_KEEP)
#define KL_LNKEEP KX_LN_KEEP
#else
#define KL_LNKEEP 0
#endif

/* One row: d = dout, x = inp, di = dinp (or NULL) of the row. */
KL_INLINE void KL(kl_ln_bwd_row)(const int KEEP, float *di, float *dg, float *db, const float *d, const float *x,
                                 const float *g, KX_V mv, KX_V sv, int C, float *xb, float *nb) {
    const int full = C / KX_VL * KX_VL, tail = C - full;
    const KX_MASK m = KX_TAILMASK(tail);
    KX_V a1 = KX_ZERO(), a2 = KX_ZERO();
    int i;
    for (i = 0; i < full; i += KX_VL) {
        KX_V xh = KX_MUL(KX_SUB(KX_LOAD(x + i), mv), sv);
        KX_V dn = KX_MUL(KX_LOAD(g + i), KX_LOAD(d + i));
        if (KEEP) { KX_STORE(xb + i, xh); KX_STORE(nb + i, dn); }
        a1 = KX_ADD(a1, dn);
        a2 = KX_ADD(a2, KX_MUL(dn, xh));
    }
    if (tail) {
        KX_V xh = KX_MUL(KX_SUB(KX_LOADM(x + i, m), mv), sv);
        KX_V dn = KX_MUL(KX_LOADM(g + i, m), KX_LOADM(d + i, m));
        if (KEEP) { KX_STORE(xb + i, xh); KX_STORE(nb + i, dn); }
        a1 = KX_ADD(a1, dn);
        a2 = KX_ADD(a2, KX_MASKZ(m, KX_MUL(dn, xh)));
    }
    const KX_V dm = KX_SET1(KX_HSUM(a1) / (float)C), dnm = KX_SET1(KX_HSUM(a2) / (float)C);
    /* the reference's per-element expressions, operation for operation */
    for (i = 0; i < full; i += KX_VL) {
        KX_V dv = KX_LOAD(d + i);
        KX_V xh = KEEP ? KX_LOAD(xb + i) : KX_MUL(KX_SUB(KX_LOAD(x + i), mv), sv);
        if (db) KX_STORE(db + i, KX_ADD(KX_LOAD(db + i), dv));
        if (dg) KX_STORE(dg + i, KX_ADD(KX_LOAD(dg + i), KX_MUL(xh, dv)));
        if (di) {
            KX_V dn = KEEP ? KX_LOAD(nb + i) : KX_MUL(KX_LOAD(g + i), dv);
            KX_V r = KX_MUL(KX_SUB(KX_SUB(dn, dm), KX_MUL(xh, dnm)), sv);
            KX_STORE(di + i, KX_ADD(KX_LOAD(di + i), r));
        }
    }
    if (tail) {
        KX_V dv = KX_LOADM(d + i, m);
        KX_V xh = KEEP ? KX_LOAD(xb + i) : KX_MUL(KX_SUB(KX_LOADM(x + i, m), mv), sv);
        if (db) KX_STOREM(db + i, m, KX_ADD(KX_LOADM(db + i, m), dv));
        if (dg) KX_STOREM(dg + i, m, KX_ADD(KX_LOADM(dg + i, m), KX_MUL(xh, dv)));
        if (di) {
            KX_V dn = KEEP ? KX_LOAD(nb + i) : KX_MUL(KX_LOADM(g + i, m), dv);
            KX_V r = KX_MUL(KX_SUB(KX_SUB(dn, dm), KX_MUL(xh, dnm)), sv);
            KX_STOREM(di + i, m, KX_ADD(KX_LOADM(di + i, m), r));
        }
    }
}

KX_ATTR void KL(atm_layernorm_backward)(float *dinp, float *dg, float *db, const float *dout,
                                        const float *inp, const float *g, const float *mean,
                                        const float *rstd, int N, int C) {
    if (N <= 0 || C <= 0) return;
#if KL_LNKEEP > 0
    if (C <= KL_LNKEEP) {
        float xb[KL_LNKEEP + KX_VL], nb[KL_LNKEEP + KX_VL];
        for (int n = 0; n < N; n++)
            KL(kl_ln_bwd_row)(1, dinp ? dinp + (size_t)n * C : NULL, dg, db, dout + (size_t)n * C,
                              inp + (size_t)n * C, g, KX_SET1(mean[n]), KX_SET1(rstd[n]), C, xb, nb);
        KX_VZEROUPPER();
        return;
    }
#endif
    for (int n = 0; n < N; n++)
        KL(kl_ln_bwd_row)(0, dinp ? dinp + (size_t)n * C : NULL, dg, db, dout + (size_t)n * C,
                          inp + (size_t)n * C, g, KX_SET1(mean[n]), KX_SET1(rstd[n]), C, NULL, NULL);
    KX_VZEROUPPER();
}

KX_ATTR void KL(atm_exp)(float *y, const float *x, int n) {
    int i = 0;
    for (; i + KX_VL <= n; i += KX_VL) KX_STORE(y + i, KX_EXP(KX_LOAD(x + i)));
    if (i < n) {
        KX_MASK m = KX_TAILMASK(n - i);
        KX_STOREM(y + i, m, KX_EXP(KX_LOADM(x + i, m)));
    }
    KX_VZEROUPPER();
}

/* Rows per pass of the cross-entropy forward: the vector part of a pass
 * leaves each row's sum and target logit here, and libm logf runs on them
 * after vzeroupper. */
#define KL_XCH 64

KX_ATTR double KL(atm_xent_forward)(float *probs, const float *logits, const uint8_t *tgt, int N, int V) {
    if (N <= 0) return 0.0;
    if (V <= 0) return atm_xent_forward_ref(probs, logits, tgt, N, V);
    const int full = V / KX_VL * KX_VL, tail = V - full;
    const KX_MASK m = KX_TAILMASK(tail);
    const KX_V ninf = KX_SET1(-INFINITY);
    float ssum[KL_XCH], zt[KL_XCH];           /* per row: sum of exp, target logit - max */
    double sum = 0.0;
    for (int n0 = 0; n0 < N; n0 += KL_XCH) {
        const int nn = N - n0 < KL_XCH ? N - n0 : KL_XCH;
        for (int r = 0; r < nn; r++) {
            const int n = n0 + r;
            const float *l = logits + (size_t)n * V;
            float *p = probs + (size_t)n * V;
            int i;
            KX_V mx = ninf;
            i = 0;
#if defined(KX_MAX_CHAINS4)
            {   /* four independent max chains: the same largest value (only
                 * the sign of a zero maximum can differ, which no result
                 * depends on), for a KX_MAX that never lets a NaN in */
                KX_V m1 = ninf, m2 = ninf, m3 = ninf;
                for (; i + 4 * KX_VL <= full; i += 4 * KX_VL) {
                    mx = KX_MAX(mx, KX_LOAD(l + i));
                    m1 = KX_MAX(m1, KX_LOAD(l + i + KX_VL));
                    m2 = KX_MAX(m2, KX_LOAD(l + i + 2 * KX_VL));
                    m3 = KX_MAX(m3, KX_LOAD(l + i + 3 * KX_VL));
                }
                mx = KX_MAX(KX_MAX(mx, m1), KX_MAX(m2, m3));
            }
#endif
            for (; i < full; i += KX_VL) mx = KX_MAX(mx, KX_LOAD(l + i));
            if (tail) mx = KX_MAX(mx, KX_LOADM_OR(l + i, m, ninf));
            const float mxs = KX_HMAX(mx);
            if (tgt) zt[r] = l[tgt[n]] - mxs;
            const KX_V mv = KX_SET1(mxs);
            KX_V acc = KX_ZERO();
            for (i = 0; i < full; i += KX_VL) {
                KX_V e = KX_EXP(KX_SUB(KX_LOAD(l + i), mv));
                KX_STORE(p + i, e);
                acc = KX_ADD(acc, e);
            }
            if (tail) {
                KX_V e = KX_MASKZ(m, KX_EXP(KX_SUB(KX_LOADM(l + i, m), mv)));
                KX_STOREM(p + i, m, e);
                acc = KX_ADD(acc, e);
            }
            const float s = KX_HSUM(acc);
            ssum[r] = s;
            const KX_V inv = KX_SET1(1.0f / s);
            for (i = 0; i < full; i += KX_VL) KX_STORE(p + i, KX_MUL(KX_LOAD(p + i), inv));
            if (tail) KX_STOREM(p + i, m, KX_MUL(KX_LOADM(p + i, m), inv));
        }
        KX_VZEROUPPER();
        /* -log softmax from the logits, not from the rounded probability */
        if (tgt)
            for (int r = 0; r < nn; r++) sum += (double)(logf(ssum[r]) - zt[r]);
    }
    return sum;
}

KX_ATTR void KL(atm_xent_backward)(float *dlogits, const float *probs, const uint8_t *tgt, int N, int V,
                                   float scale) {
    if (N <= 0 || V <= 0) return;
    const int full = V / KX_VL * KX_VL, tail = V - full;
    const KX_MASK m = KX_TAILMASK(tail);
    const KX_V sv = KX_SET1(scale);
    for (int n = 0; n < N; n++) {
        const float *p = probs + (size_t)n * V;
        float *d = dlogits + (size_t)n * V;
        int i;
        for (i = 0; i < full; i += KX_VL) KX_STORE(d + i, KX_ADD(KX_LOAD(d + i), KX_MUL(sv, KX_LOAD(p + i))));
        if (tail) KX_STOREM(d + i, m, KX_ADD(KX_LOADM(d + i, m), KX_MUL(sv, KX_LOADM(p + i, m))));
        d[tgt[n]] -= scale;
    }
    KX_VZEROUPPER();
}

#if defined(KX_LIBM_SOFTMAX)
/* The set's softmax is the reference's (libm expf): atm_softmax_ref, also
 * for the attention and router code of kernels_x86_atome_tmpl.h. */
KL_INLINE void KL(kl_softmax)(float *x, int n) { atm_softmax_ref(x, n); }
#else
/* Softmax of one row in place (max-subtracted); kept inline for the
 * attention and router code of kernels_x86_atome_tmpl.h. */
KL_INLINE void KL(kl_softmax)(float *x, int n) {
    if (n <= 0) return;
    const int full = n / KX_VL * KX_VL, tail = n - full;
    const KX_MASK m = KX_TAILMASK(tail);
    const KX_V ninf = KX_SET1(-INFINITY);
    int i;
    KX_V mx = ninf;
    for (i = 0; i < full; i += KX_VL) mx = KX_MAX(mx, KX_LOAD(x + i));
    if (tail) mx = KX_MAX(mx, KX_LOADM_OR(x + i, m, ninf));
    const KX_V mv = KX_SET1(KX_HMAX(mx));
    KX_V acc = KX_ZERO();
    for (i = 0; i < full; i += KX_VL) {
        KX_V e = KX_EXP(KX_SUB(KX_LOAD(x + i), mv));
        KX_STORE(x + i, e);
        acc = KX_ADD(acc, e);
    }
    if (tail) {
        KX_V e = KX_MASKZ(m, KX_EXP(KX_SUB(KX_LOADM(x + i, m), mv)));
        KX_STOREM(x + i, m, e);
        acc = KX_ADD(acc, e);
    }
    const KX_V inv = KX_SET1(1.0f / KX_HSUMT(acc));
    for (i = 0; i < full; i += KX_VL) KX_STORE(x + i, KX_MUL(KX_LOAD(x + i), inv));
    if (tail) KX_STOREM(x + i, m, KX_MUL(KX_LOADM(x + i, m), inv));
}

KX_ATTR void KL(atm_softmax)(float *x, int n) {
    KL(kl_softmax)(x, n);
    KX_VZEROUPPER();
}
#endif

#undef KL_XCH
#undef KL_LNR
#undef KL_LNKEEP
#undef KL_INLINE
#undef KL
#undef KL_CAT
#undef KL_CAT2
