/* core/train/kernels_x86_layers_tmpl.h — one SIMD layer kernel set
 * (kernels_layers.h), instantiated by kernels_x86.c once per instruction set
 * right after kernels_x86_tmpl.h (never included elsewhere).
 *
 * Besides the matmul template's macros (KX_ATTR KX_SUFFIX KX_VL KX_V KX_MASK
 * KX_ZERO KX_LOAD KX_LOADM KX_STORE KX_STOREM KX_ADD KX_TAILMASK KX_HSUM) the
 * includer defines:
 *   KX_SET1(x) KX_SUB(a,b) KX_MUL(a,b) KX_MAX(a,b)
 *   KX_MASKZ(m,v)        v with the lanes outside m zeroed
 *   KX_LOADM_OR(p,m,f)   masked load, lanes outside m taken from vector f
 *   KX_HMAX(v)           largest lane
 *   KX_GT_BITS(a,b)      bit l set where a[l] > b[l] (ordered: NaN gives 0)
 *   KX_EQ_BITS(a,b)      bit l set where a[l] == b[l] (ordered)
 *   KX_NAN_BITS(a)       bit l set where a[l] is NaN
 *   KX_SELECT(bits,v,f)  lane l from v where bit l of bits is set, else from f
 *   KX_EXP(v)            the vector exp (kernels_x86.c)
 * KX_TAILMASK(n) must accept n in 0..KX_VL.
 *
 * Every row is computed on its own, in a fixed order that depends only on
 * the row length, so results never depend on N, on the row's position or on
 * pointer alignment. Entry points end with vzeroupper (see kernels_x86_tmpl.h)
 * and call no libm function while upper vector halves may be dirty. */
#include "atome_layers.h"
#include "kernels_layers.h"

#define KL_CAT2(a, b) a##_##b
#define KL_CAT(a, b) KL_CAT2(a, b)
#define KL(name) KL_CAT(name, KX_SUFFIX)
#define KL_INLINE static inline __attribute__((always_inline)) KX_ATTR
/* Loops over a register array must unroll completely (kernels_x86_tmpl.h). */
#if defined(__clang__)
#define KL_UNROLL _Pragma("clang loop unroll(full)")
#else
#define KL_UNROLL _Pragma("GCC unroll 8")
#endif
/* Vectors in a group of 64 positions of the attention selection. */
#define KL_NB (64 / KX_VL)

/* sqrt as one correctly rounded instruction (same value as sqrtf, without
 * the errno path that would call libm for a negative argument). */
KL_INLINE float KL(kl_sqrt)(float x) { return _mm_cvtss_f32(_mm_sqrt_ss(_mm_set_ss(x))); }

KX_ATTR void KL(atm_layernorm_forward)(float *out, float *mean, float *rstd, const float *inp,
                                       const float *g, const float *b, int N, int C) {
    if (N <= 0) return;
    if (C <= 0) { atm_layernorm_forward_ref(out, mean, rstd, inp, g, b, N, C); return; }
    const int full = C / KX_VL * KX_VL, tail = C - full;
    const KX_MASK m = KX_TAILMASK(tail);
    for (int n = 0; n < N; n++) {
        const float *x = inp + (size_t)n * C;
        float *o = out + (size_t)n * C;
        int i;
        KX_V acc = KX_ZERO();
        for (i = 0; i < full; i += KX_VL) acc = KX_ADD(acc, KX_LOAD(x + i));
        if (tail) acc = KX_ADD(acc, KX_LOADM(x + i, m));
        const float mu = KX_HSUM(acc) / (float)C;
        const KX_V mv = KX_SET1(mu);
        acc = KX_ZERO();
        for (i = 0; i < full; i += KX_VL) {
            KX_V d = KX_SUB(KX_LOAD(x + i), mv);
            acc = KX_ADD(acc, KX_MUL(d, d));
        }
        if (tail) {
            KX_V d = KX_MASKZ(m, KX_SUB(KX_LOADM(x + i, m), mv));
            acc = KX_ADD(acc, KX_MUL(d, d));
        }
        const float var = KX_HSUM(acc) / (float)C;
        const float s = 1.0f / KL(kl_sqrt)(var + ATM_LN_EPS);
        const KX_V sv = KX_SET1(s);
        /* ((x - mu) * s) * g + b, rounded after each operation as the reference */
        for (i = 0; i < full; i += KX_VL)
            KX_STORE(o + i, KX_ADD(KX_MUL(KX_MUL(KX_SUB(KX_LOAD(x + i), mv), sv), KX_LOAD(g + i)), KX_LOAD(b + i)));
        if (tail)
            KX_STOREM(o + i, m, KX_ADD(KX_MUL(KX_MUL(KX_SUB(KX_LOADM(x + i, m), mv), sv), KX_LOADM(g + i, m)),
                                      KX_LOADM(b + i, m)));
        if (mean) mean[n] = mu;
        if (rstd) rstd[n] = s;
    }
    _mm256_zeroupper();
}

KX_ATTR void KL(atm_layernorm_backward)(float *dinp, float *dg, float *db, const float *dout,
                                        const float *inp, const float *g, const float *mean,
                                        const float *rstd, int N, int C) {
    if (N <= 0 || C <= 0) return;
    const int full = C / KX_VL * KX_VL, tail = C - full;
    const KX_MASK m = KX_TAILMASK(tail);
    for (int n = 0; n < N; n++) {
        const float *x = inp + (size_t)n * C, *d = dout + (size_t)n * C;
        const KX_V mv = KX_SET1(mean[n]), sv = KX_SET1(rstd[n]);
        KX_V a1 = KX_ZERO(), a2 = KX_ZERO();
        int i;
        for (i = 0; i < full; i += KX_VL) {
            KX_V xh = KX_MUL(KX_SUB(KX_LOAD(x + i), mv), sv);
            KX_V dn = KX_MUL(KX_LOAD(g + i), KX_LOAD(d + i));
            a1 = KX_ADD(a1, dn);
            a2 = KX_ADD(a2, KX_MUL(dn, xh));
        }
        if (tail) {
            KX_V xh = KX_MUL(KX_SUB(KX_LOADM(x + i, m), mv), sv);
            KX_V dn = KX_MUL(KX_LOADM(g + i, m), KX_LOADM(d + i, m));
            a1 = KX_ADD(a1, dn);
            a2 = KX_ADD(a2, KX_MASKZ(m, KX_MUL(dn, xh)));
        }
        const KX_V dm = KX_SET1(KX_HSUM(a1) / (float)C), dnm = KX_SET1(KX_HSUM(a2) / (float)C);
        float *di = dinp ? dinp + (size_t)n * C : NULL;
        /* the reference's per-element expressions, operation for operation */
        for (i = 0; i < full; i += KX_VL) {
            KX_V dv = KX_LOAD(d + i);
            KX_V xh = KX_MUL(KX_SUB(KX_LOAD(x + i), mv), sv);
            if (db) KX_STORE(db + i, KX_ADD(KX_LOAD(db + i), dv));
            if (dg) KX_STORE(dg + i, KX_ADD(KX_LOAD(dg + i), KX_MUL(xh, dv)));
            if (di) {
                KX_V dn = KX_MUL(KX_LOAD(g + i), dv);
                KX_V r = KX_MUL(KX_SUB(KX_SUB(dn, dm), KX_MUL(xh, dnm)), sv);
                KX_STORE(di + i, KX_ADD(KX_LOAD(di + i), r));
            }
        }
        if (tail) {
            KX_V dv = KX_LOADM(d + i, m);
            KX_V xh = KX_MUL(KX_SUB(KX_LOADM(x + i, m), mv), sv);
            if (db) KX_STOREM(db + i, m, KX_ADD(KX_LOADM(db + i, m), dv));
            if (dg) KX_STOREM(dg + i, m, KX_ADD(KX_LOADM(dg + i, m), KX_MUL(xh, dv)));
            if (di) {
                KX_V dn = KX_MUL(KX_LOADM(g + i, m), dv);
                KX_V r = KX_MUL(KX_SUB(KX_SUB(dn, dm), KX_MUL(xh, dnm)), sv);
                KX_STOREM(di + i, m, KX_ADD(KX_LOADM(di + i, m), r));
            }
        }
    }
    _mm256_zeroupper();
}

KX_ATTR void KL(atm_exp)(float *y, const float *x, int n) {
    int i = 0;
    for (; i + KX_VL <= n; i += KX_VL) KX_STORE(y + i, KX_EXP(KX_LOAD(x + i)));
    if (i < n) {
        KX_MASK m = KX_TAILMASK(n - i);
        KX_STOREM(y + i, m, KX_EXP(KX_LOADM(x + i, m)));
    }
    _mm256_zeroupper();
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
            for (i = 0; i < full; i += KX_VL) mx = KX_MAX(mx, KX_LOAD(l + i));
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
        _mm256_zeroupper();
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
    _mm256_zeroupper();
}

/* Scores of NV vectors of positions j0 .. j0 + rem - 1 (rem > (NV-1)*VL)
 * into sc: for each lane the sum over e in order from 0 of q[e] * kT[e][j],
 * multiply then add, then times scale; lanes past rem hold 0. */
KL_INLINE void KL(kl_scores)(const int NV, float *sc, const float *q, const float *kT, ptrdiff_t ldk,
                             int DH, int rem, KX_V sv) {
    KX_V acc[KL_NB];
    KX_MASK mk[KL_NB];
    KL_UNROLL for (int v = 0; v < NV; v++) {
        int c = rem - v * KX_VL;
        acc[v] = KX_ZERO();
        mk[v] = KX_TAILMASK(c < KX_VL ? c : KX_VL);
    }
    for (int e = 0; e < DH; e++) {
        const KX_V qe = KX_SET1(q[e]);
        const float *row = kT + e * ldk;
        KL_UNROLL for (int v = 0; v < NV; v++) acc[v] = KX_ADD(acc[v], KX_MUL(qe, KX_LOADM(row + v * KX_VL, mk[v])));
    }
    KL_UNROLL for (int v = 0; v < NV; v++) KX_STORE(sc + v * KX_VL, KX_MUL(acc[v], sv));
}

#define KL_SCORES_CASE(NV_) case NV_: KL(kl_scores)(NV_, sc, q, kb, ldk, DH, rem, sv); break;
/* kl_scores for nv = ceil(min(rem, 64) / VL) vectors (nv >= 1). */
static KX_ATTR void KL(kl_scores_n)(int nv, float *sc, const float *q, const float *kb, ptrdiff_t ldk, int DH,
                                    int rem, KX_V sv) {
    switch (nv) {
        KL_SCORES_CASE(1) KL_SCORES_CASE(2) KL_SCORES_CASE(3)
#if KL_NB > 4
        KL_SCORES_CASE(4) KL_SCORES_CASE(5) KL_SCORES_CASE(6) KL_SCORES_CASE(7)
#endif
        default: KL(kl_scores)(KL_NB, sc, q, kb, ldk, DH, rem, sv); break;
    }
}
#undef KL_SCORES_CASE

/* The top keff of n <= 64 scores without NaN, in the order the insertion
 * sequence leaves them: by score descending, equal scores by position
 * ascending (-0 and +0 compare equal there as here). Each round takes the
 * largest live score and the first live position holding a score equal to
 * it, then retires that position: no data-dependent branch. */
static KX_ATTR void KL(kl_topk_small)(float *ps, int32_t *is, const float *sc, int n, int keff) {
    const int nv = (n + KX_VL - 1) / KX_VL;
    const KX_V ninf = KX_SET1(-INFINITY);
    uint64_t live = n >= 64 ? ~(uint64_t)0 : (((uint64_t)1 << n) - 1u);
    for (int r = 0; r < keff; r++) {
        KX_V mx = ninf;
        for (int v = 0; v < nv; v++)
            mx = KX_MAX(mx, KX_SELECT((unsigned)(live >> (v * KX_VL)), KX_LOAD(sc + v * KX_VL), ninf));
        const KX_V mv = KX_SET1(KX_HMAX(mx));
        uint64_t eq = 0;
        for (int v = 0; v < nv; v++) eq |= (uint64_t)(unsigned)KX_EQ_BITS(KX_LOAD(sc + v * KX_VL), mv) << (v * KX_VL);
        eq &= live;
        const int j = __builtin_ctzll(eq);
        ps[r] = sc[j];
        is[r] = j;
        live &= ~((uint64_t)1 << j);
    }
}

KX_ATTR void KL(atm_atome_attn_select)(float *ps, int32_t *is, const float *q, const float *kT, int ldk,
                                       int DH, int n, float scale, int keff, float *scratch) {
    (void)scratch;
    float sc[64] __attribute__((aligned(64)));
    const KX_V sv = KX_SET1(scale);
    int cnt = 0;
    if (n <= 64 && keff <= 8) {
        const int nv = (n + KX_VL - 1) / KX_VL;
        KL(kl_scores_n)(nv, sc, q, kT, ldk, DH, n, sv);
        unsigned nan = 0;
        for (int v = 0; v < nv; v++) {
            int c = n - v * KX_VL;
            nan |= (unsigned)KX_NAN_BITS(KX_LOAD(sc + v * KX_VL)) & (c >= KX_VL ? ~0u : (1u << c) - 1u);
        }
        if (!nan) {
            KL(kl_topk_small)(ps, is, sc, n, keff);
        } else {                               /* the insertion sequence itself */
            int j = 0;
            for (; j < keff; j++) atm_atome_topk_insert(ps, is, &cnt, keff, sc[j], j);
            float thr = ps[keff - 1];
            for (; j < n; j++)
                if (sc[j] > thr) { atm_atome_topk_insert(ps, is, &cnt, keff, sc[j], j); thr = ps[keff - 1]; }
        }
        _mm256_zeroupper();
        return;
    }
    float thr = 0.0f;                          /* ps[keff - 1] once cnt == keff */
    for (int j0 = 0; j0 < n; j0 += 64) {
        const int rem = n - j0, lanes = rem < 64 ? rem : 64;
        const int nv = (lanes + KX_VL - 1) / KX_VL;
        KL(kl_scores_n)(nv, sc, q, kT + j0, ldk, DH, rem, sv);
        int l = 0;
        if (cnt < keff) {
            for (; l < lanes && cnt < keff; l++) atm_atome_topk_insert(ps, is, &cnt, keff, sc[l], j0 + l);
            if (cnt < keff) continue;          /* every lane of this group went in */
            thr = ps[keff - 1];
        }
        /* The rest of the lanes in j order; a lane not above the threshold
         * it is compared with here is not above the current (never lower)
         * one either, and is rejected without the insertion call. */
        for (int v = l / KX_VL; v < nv; v++) {
            int lo = l - v * KX_VL, hi = lanes - v * KX_VL;
            if (lo < 0) lo = 0;
            if (hi > KX_VL) hi = KX_VL;
            unsigned bits = (unsigned)KX_GT_BITS(KX_LOAD(sc + v * KX_VL), KX_SET1(thr));
            bits &= ((1u << hi) - 1u) & ~((1u << lo) - 1u);
            while (bits) {
                int ln = __builtin_ctz(bits);
                float s = sc[v * KX_VL + ln];
                if (s > thr) {
                    atm_atome_topk_insert(ps, is, &cnt, keff, s, j0 + v * KX_VL + ln);
                    thr = ps[keff - 1];
                }
                bits &= bits - 1u;
            }
        }
    }
    _mm256_zeroupper();
}

#undef KL_XCH
#undef KL_NB
#undef KL_UNROLL
#undef KL_INLINE
#undef KL
#undef KL_CAT
#undef KL_CAT2
