/* core/train/kernels_x86_atome_tmpl.h — the atome pathway primitives of one
 * SIMD layer kernel set (atome_layers.h, kernels_layers.h), instantiated by
 * kernels_x86.c once per instruction set after kernels_x86_layers_tmpl.h
 * (whose kl_softmax it uses; never included elsewhere).
 *
 * Contract: the bits of the _ref functions of atome.c. Every output element
 * goes through the reference's operations in the reference's order, only
 * several elements at a time: separate multiply and add (the file is built
 * with -ffp-contract=off and uses no fused multiply-add here), sums over
 * taps, paths, kept positions and time in the reference's order, and dot
 * products in dotf's eight lanes (ka_dot8, 256-bit vectors on both sets).
 * Loops may run in another order where that order does not reach any single
 * element (e.g. vector chunks outermost in the SSM scans). The one exception:
 * attention and router mixing normalise with this set's softmax (vector exp)
 * where the reference calls libm's; generation (gen_step) uses the same
 * atm_softmax, so generation and the batch forward still agree bit for bit.
 *
 * Macros: as kernels_x86_layers_tmpl.h, plus
 *   KX_GT_BITS(a,b)      bit l set where a[l] > b[l] (ordered: NaN gives 0)
 *   KX_EQ_BITS(a,b)      bit l set where a[l] == b[l] (ordered)
 *   KX_NAN_BITS(a)       bit l set where a[l] is NaN
 *   KX_SELECT(bits,v,f)  lane l from v where bit l of bits is set, else from f
 *   KX_DIV(a,b)          lane-wise a / b
 *   KX_BM                a lane predicate (mask register or all-ones lanes),
 *                        with KX_BM_ZERO() KX_BM_GT(a,b) KX_BM_NAN(a)
 *                        KX_BM_AND(x,y) KX_BM_OR(x,y) KX_BM_ANDNOT(x,y) (= ~x & y)
 *                        KX_BM_BITS(x) KX_BM_FROM(bits) KX_BM_KEEP(m,v) (v, 0
 *                        outside m) KX_BLEND(m,a,b) (b where m, else a)
 *   KX_VI KX_SET1I(x) KX_BLENDI(m,a,b) KX_STOREI(p,v)   the same for int32 lanes
 */
#include "atome_layers.h"

#define KA_CAT2(a, b) a##_##b
#define KA_CAT(a, b) KA_CAT2(a, b)
#define KA(name) KA_CAT(name, KX_SUFFIX)
#define KA_INLINE static inline __attribute__((always_inline)) KX_ATTR
/* Loops over a register array must unroll completely (kernels_x86_tmpl.h). */
#if defined(__clang__)
#define KA_UNROLL _Pragma("clang loop unroll(full)")
#else
#define KA_UNROLL _Pragma("GCC unroll 8")
#endif
/* Vectors in a group of 64 positions of the attention selection. */
#define KA_NB (64 / KX_VL)
/* Key positions scored per pass of the blocked attention forward: as many
 * independent accumulator chains as the register file comfortably holds
 * next to the top-k slots (32 zmm, 16 ymm). */
#define KA_JG (KX_VL == 16 ? 8 : 4)

/* y[i] += a * x[i], i < n: axpyf of atome.c. */
KA_INLINE void KA(ka_axpy)(float *y, float a, const float *x, int n) {
    const KX_V av = KX_SET1(a);
    int i = 0;
    for (; i + KX_VL <= n; i += KX_VL) KX_STORE(y + i, KX_ADD(KX_LOAD(y + i), KX_MUL(av, KX_LOAD(x + i))));
    if (i < n) {
        const KX_MASK m = KX_TAILMASK(n - i);
        KX_STOREM(y + i, m, KX_ADD(KX_LOADM(y + i, m), KX_MUL(av, KX_LOADM(x + i, m))));
    }
}

/* dotf of atome.c: lane l (of 8) sums a[i]*b[i] over i = l mod 8 in order,
 * the tail past the last full 8 goes to lane 0, and the lanes combine as
 * ((l0+l4)+(l1+l5)) + ((l2+l6)+(l3+l7)). */
KA_INLINE float KA(ka_dot8)(const float *a, const float *b, int n) {
    __m256 acc = _mm256_setzero_ps();
    int i = 0;
    for (; i + 8 <= n; i += 8) acc = _mm256_add_ps(acc, _mm256_mul_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i)));
    if (i < n) {
        float l0 = _mm_cvtss_f32(_mm256_castps256_ps128(acc));
        for (; i < n; i++) l0 += a[i] * b[i];
        acc = _mm256_blend_ps(acc, _mm256_castps128_ps256(_mm_set_ss(l0)), 1);
    }
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(acc), _mm256_extractf128_ps(acc, 1)); /* l0+l4 .. l3+l7 */
    s = _mm_hadd_ps(s, s);                                                              /* (0+1), (2+3) */
    return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
}

/* Scores of NV vectors of positions j0 .. j0 + rem - 1 (rem > (NV-1)*VL)
 * into sc: for each lane the sum over e in order from 0 of q[e] * kT[e][j],
 * multiply then add, then times scale; lanes past rem hold 0. */
KA_INLINE void KA(kl_scores)(const int NV, float *sc, const float *q, const float *kT, ptrdiff_t ldk,
                             int DH, int rem, KX_V sv) {
    KX_V acc[KA_NB];
    KX_MASK mk[KA_NB];
    KA_UNROLL for (int v = 0; v < NV; v++) {
        int c = rem - v * KX_VL;
        acc[v] = KX_ZERO();
        mk[v] = KX_TAILMASK(c < KX_VL ? c : KX_VL);
    }
    for (int e = 0; e < DH; e++) {
        const KX_V qe = KX_SET1(q[e]);
        const float *row = kT + e * ldk;
        KA_UNROLL for (int v = 0; v < NV; v++) acc[v] = KX_ADD(acc[v], KX_MUL(qe, KX_LOADM(row + v * KX_VL, mk[v])));
    }
    KA_UNROLL for (int v = 0; v < NV; v++) KX_STORE(sc + v * KX_VL, KX_MUL(acc[v], sv));
}

#define KA_SCORES_CASE(NV_) case NV_: KA(kl_scores)(NV_, sc, q, kb, ldk, DH, rem, sv); break;
/* kl_scores for nv = ceil(min(rem, 64) / VL) vectors (nv >= 1). */
static KX_ATTR void KA(kl_scores_n)(int nv, float *sc, const float *q, const float *kb, ptrdiff_t ldk, int DH,
                                    int rem, KX_V sv) {
    switch (nv) {
        KA_SCORES_CASE(1) KA_SCORES_CASE(2) KA_SCORES_CASE(3)
#if KA_NB > 4
        KA_SCORES_CASE(4) KA_SCORES_CASE(5) KA_SCORES_CASE(6) KA_SCORES_CASE(7)
#endif
        default: KA(kl_scores)(KA_NB, sc, q, kb, ldk, DH, rem, sv); break;
    }
}
#undef KA_SCORES_CASE

/* The top keff of n <= 64 scores without NaN, in the order the insertion
 * sequence leaves them: by score descending, equal scores by position
 * ascending (-0 and +0 compare equal there as here). Each round takes the
 * largest live score and the first live position holding a score equal to
 * it, then retires that position: no data-dependent branch. */
static KX_ATTR void KA(kl_topk_small)(float *ps, int32_t *is, const float *sc, int n, int keff) {
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

KA_INLINE void KA(ka_select)(float *ps, int32_t *is, const float *q, const float *kT, int ldk, int DH, int n,
                             float scale, int keff) {
    float sc[64] __attribute__((aligned(64)));
    const KX_V sv = KX_SET1(scale);
    int cnt = 0;
    if (n <= 64 && keff <= 8) {
        const int nv = (n + KX_VL - 1) / KX_VL;
        KA(kl_scores_n)(nv, sc, q, kT, ldk, DH, n, sv);
        unsigned nan = 0;
        for (int v = 0; v < nv; v++) {
            int c = n - v * KX_VL;
            nan |= (unsigned)KX_NAN_BITS(KX_LOAD(sc + v * KX_VL)) & (c >= KX_VL ? ~0u : (1u << c) - 1u);
        }
        if (!nan) {
            KA(kl_topk_small)(ps, is, sc, n, keff);
        } else {                               /* the insertion sequence itself */
            int j = 0;
            for (; j < keff; j++) atm_atome_topk_insert(ps, is, &cnt, keff, sc[j], j);
            float thr = ps[keff - 1];
            for (; j < n; j++)
                if (sc[j] > thr) { atm_atome_topk_insert(ps, is, &cnt, keff, sc[j], j); thr = ps[keff - 1]; }
        }
        return;
    }
    float thr = 0.0f;                          /* ps[keff - 1] once cnt == keff */
    for (int j0 = 0; j0 < n; j0 += 64) {
        const int rem = n - j0, lanes = rem < 64 ? rem : 64;
        const int nv = (lanes + KX_VL - 1) / KX_VL;
        KA(kl_scores_n)(nv, sc, q, kT + j0, ldk, DH, rem, sv);
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
}

KX_ATTR void KA(atm_atome_attn_select)(float *ps, int32_t *is, const float *q, const float *kT, int ldk,
                                       int DH, int n, float scale, int keff, float *scratch) {
    (void)scratch;
    KA(ka_select)(ps, is, q, kT, ldk, DH, n, scale, keff);
    _mm256_zeroupper();
}


KX_ATTR void KA(atm_atome_conv_forward)(float *out, const float *u, const float *w, float *scratch,
                                        int B, int T, int C, int K) {
    float *wT = scratch;                                  /* [K][C]: wT[j][c] = w[c][j] */
    for (int c = 0; c < C; c++)
        for (int j = 0; j < K; j++) wT[(size_t)j * C + c] = w[(size_t)c * K + j];
    const int full = C / KX_VL * KX_VL, tail = C - full;
    const KX_MASK m = KX_TAILMASK(tail);
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            const size_t n = (size_t)b * T + t;
            const int jmax = t < K - 1 ? t : K - 1;
            float *o = out + n * C;
            int i;
            for (i = 0; i < full; i += KX_VL) {
                KX_V acc = KX_ZERO();
                for (int j = 0; j <= jmax; j++)
                    acc = KX_ADD(acc, KX_MUL(KX_LOAD(wT + (size_t)j * C + i), KX_LOAD(u + (n - (size_t)j) * C + i)));
                KX_STORE(o + i, acc);
            }
            if (tail) {
                KX_V acc = KX_ZERO();
                for (int j = 0; j <= jmax; j++)
                    acc = KX_ADD(acc, KX_MUL(KX_LOADM(wT + (size_t)j * C + i, m), KX_LOADM(u + (n - (size_t)j) * C + i, m)));
                KX_STOREM(o + i, m, acc);
            }
        }
    _mm256_zeroupper();
}

/* The reference scatters row n's gradient to rows n-j (j = 0..K-1). Here row
 * m gathers from rows m+j, j ascending: du[m] then receives the same terms in
 * the same order (the reference's n = m+j ascending), and so does each tap
 * of dwT (m ascending is n ascending for a fixed j). */
KX_ATTR void KA(atm_atome_conv_backward)(float *du, float *dw, const float *dout, const float *u,
                                         const float *w, float *scratch, int B, int T, int C, int K) {
    const size_t KC = (size_t)K * C;
    float *wT = scratch, *dwT = scratch + KC;            /* [K][C] each */
    for (int c = 0; c < C; c++)
        for (int j = 0; j < K; j++) wT[(size_t)j * C + c] = w[(size_t)c * K + j];
    for (size_t i = 0; i < KC; i++) dwT[i] = 0.0f;
    const int full = C / KX_VL * KX_VL, tail = C - full;
    const KX_MASK mt = KX_TAILMASK(tail);
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            const size_t m = (size_t)b * T + t;
            const int jmax = T - 1 - t < K - 1 ? T - 1 - t : K - 1;
            const float *um = u + m * C;
            float *dum = du ? du + m * C : NULL;
            for (int i = 0; i < full + (tail ? KX_VL : 0); i += KX_VL) {
                const int last = i >= full;
                const KX_MASK mk = last ? mt : KX_TAILMASK(KX_VL);
                KX_V acc = KX_ZERO(), uv = KX_ZERO();
                if (dum) acc = last ? KX_LOADM(dum + i, mk) : KX_LOAD(dum + i);
                if (dw) uv = last ? KX_LOADM(um + i, mk) : KX_LOAD(um + i);
                for (int j = 0; j <= jmax; j++) {
                    const float *dn = dout + (m + (size_t)j) * C + i;
                    const KX_V dv = last ? KX_LOADM(dn, mk) : KX_LOAD(dn);
                    if (dum) {
                        const float *wj = wT + (size_t)j * C + i;
                        acc = KX_ADD(acc, KX_MUL(last ? KX_LOADM(wj, mk) : KX_LOAD(wj), dv));
                    }
                    if (dw) {
                        float *g = dwT + (size_t)j * C + i;
                        if (last) KX_STOREM(g, mk, KX_ADD(KX_LOADM(g, mk), KX_MUL(dv, uv)));
                        else KX_STORE(g, KX_ADD(KX_LOAD(g), KX_MUL(dv, uv)));
                    }
                }
                if (dum) {
                    if (last) KX_STOREM(dum + i, mk, acc);
                    else KX_STORE(dum + i, acc);
                }
            }
        }
    _mm256_zeroupper();
    if (dw)
        for (int c = 0; c < C; c++)
            for (int j = 0; j < K; j++) dw[(size_t)c * K + j] += dwT[(size_t)j * C + c];
}

/* The forward scan runs over time with all channels of a step in the inner
 * loop, as the reference (the previous state is read back from s), so the
 * vector chunks of a step overlap. */
KX_ATTR void KA(atm_atome_ssm_forward)(float *s, float *out, const float *u, const float *a_raw,
                                       const float *b, const float *c_out, float *scratch,
                                       int B, int T, int C) {
    float *a = scratch;                                   /* [C] tanh(a_raw) */
    for (int c = 0; c < C; c++) a[c] = tanhf(a_raw[c]);
    const int full = C / KX_VL * KX_VL;
    const KX_MASK mt = KX_TAILMASK(C - full);
    for (int bb = 0; bb < B; bb++)
        for (int t = 0; t < T; t++) {
            const size_t n = ((size_t)bb * T + t) * C;
            int i = 0;
            for (; i < full; i += KX_VL) {
                KX_V st = KX_MUL(KX_LOAD(b + i), KX_LOAD(u + n + i));               /* b*u_t ... */
                if (t > 0) st = KX_ADD(st, KX_MUL(KX_LOAD(a + i), KX_LOAD(s + n - C + i))); /* ... + a*s_{t-1} */
                KX_STORE(s + n + i, st);
                KX_STORE(out + n + i, KX_MUL(KX_LOAD(c_out + i), st));
            }
            if (i < C) {
                KX_V st = KX_MUL(KX_LOADM(b + i, mt), KX_LOADM(u + n + i, mt));
                if (t > 0) st = KX_ADD(st, KX_MUL(KX_LOADM(a + i, mt), KX_LOADM(s + n - C + i, mt)));
                KX_STOREM(s + n + i, mt, st);
                KX_STOREM(out + n + i, mt, KX_MUL(KX_LOADM(c_out + i, mt), st));
            }
        }
    _mm256_zeroupper();
}

/* The backward scan keeps each vector chunk of channels in registers
 * (carry and the three per-channel sums) for the whole scan, chunks
 * outermost; every channel sees the reference's ssm_bwd_step in the
 * reference's order (b ascending, t descending). */
KX_ATTR void KA(atm_atome_ssm_backward)(float *du, float *da_raw, float *db, float *dc,
                                        const float *dout, const float *u, const float *s,
                                        const float *a_raw, const float *b, const float *c_out,
                                        float *scratch, int B, int T, int C) {
    float *a = scratch;                                   /* [C] tanh(a_raw) */
    for (int c = 0; c < C; c++) a[c] = tanhf(a_raw[c]);
    for (int i = 0; i < C; i += KX_VL) {
        const KX_MASK mk = KX_TAILMASK(C - i < KX_VL ? C - i : KX_VL);
        const KX_V av = KX_LOADM(a + i, mk), bv = KX_LOADM(b + i, mk), cov = KX_LOADM(c_out + i, mk);
        KX_V acc_da = KX_ZERO(), acc_db = KX_ZERO(), acc_dc = KX_ZERO();
        for (int bb = 0; bb < B; bb++) {
            KX_V carry = KX_ZERO();                       /* a * dL/ds_{t+1} */
            for (int t = T - 1; t >= 0; t--) {
                const size_t n = ((size_t)bb * T + t) * C + i;
                const KX_V g = KX_LOADM(dout + n, mk), sv = KX_LOADM(s + n, mk);
                const KX_V sp = t > 0 ? KX_LOADM(s + n - C, mk) : KX_ZERO();
                const KX_V ds = KX_ADD(KX_MUL(g, cov), carry);
                carry = KX_MUL(av, ds);
                if (du) KX_STOREM(du + n, mk, KX_ADD(KX_LOADM(du + n, mk), KX_MUL(bv, ds)));
                acc_dc = KX_ADD(acc_dc, KX_MUL(g, sv));
                acc_db = KX_ADD(acc_db, KX_MUL(ds, KX_LOADM(u + n, mk)));
                acc_da = KX_ADD(acc_da, KX_MUL(ds, sp));
            }
        }
        if (da_raw)
            KX_STOREM(da_raw + i, mk, KX_ADD(KX_LOADM(da_raw + i, mk),
                                            KX_MUL(acc_da, KX_SUB(KX_SET1(1.0f), KX_MUL(av, av)))));
        if (db) KX_STOREM(db + i, mk, KX_ADD(KX_LOADM(db + i, mk), acc_db));
        if (dc) KX_STOREM(dc + i, mk, KX_ADD(KX_LOADM(dc + i, mk), acc_dc));
    }
    _mm256_zeroupper();
}

/* One attention row from its kept weights: zero fill past keff, then
 * out[n] = sum over i < keff, in order, of ps[i] * v[n0 + is[i]]. */
KA_INLINE void KA(ka_attn_out)(float *o, float *ps, int32_t *is, const float *v, size_t n0, int C, int TK,
                               int keff) {
    for (int i = keff; i < TK; i++) { ps[i] = 0.0f; is[i] = -1; }
    for (int c = 0; c < C; c += KX_VL) {
        const KX_MASK mk = KX_TAILMASK(C - c < KX_VL ? C - c : KX_VL);
        KX_V acc = KX_ZERO();
        for (int i = 0; i < keff; i++)
            acc = KX_ADD(acc, KX_MUL(KX_SET1(ps[i]), KX_LOADM(v + (n0 + (size_t)is[i]) * C + c, mk)));
        KX_STOREM(o + c, mk, acc);
    }
}

/* Attention forward for the rows t0 .. t0+VL-1 of one sequence at once, one
 * row per lane (TKC = TK <= 8 kept positions, DH <= 64).
 * For each key position j, lane t gets the score (q_t . k_j) * scale (e in
 * order, multiply then add: the reference's bits) and, if j <= t, offers it
 * to a sorted list of TKC slots per lane. The list obeys the insertion rule of
 * atm_atome_topk_insert: a candidate goes in front of the first slot holding
 * a strictly smaller score (or into the first empty slot) and everything
 * below shifts down one place, the last falling out; so equal scores keep
 * the earlier position first, and the slots end as the kept scores in the
 * reference's order. The softmax over the slots is kl_softmax's arithmetic
 * done across vectors: the max is slot 0, exp of the differences, the sum
 * over slots by kl_softmax's lane tree (KX_HSUMT), 1/sum, products; so the
 * weights equal atm_softmax of the kept scores bit for bit (what gen_step
 * computes). A lane that met a NaN score is recomputed by the scalar rule.
 * qT: DH * VL floats; sc: T floats. */
KA_INLINE void KA(ka_attn_block)(const int TKC, float *out, int32_t *idx, float *p, const float *q,
                                 const float *k, const float *v, int T, int DH, int C, size_t n0, int t0,
                                 float scale, float *qT, float *sc) {
    const int rows = T - t0 < KX_VL ? T - t0 : KX_VL;
    const unsigned rowbits = (1u << rows) - 1u;
    {                                                     /* qT[e][l] = q[t0 + l][e], 0 past the rows */
        const KX_VI lane_row = KX_IOTA_TIMES(DH);
        const KX_MASK mr = KX_TAILMASK(rows);
        const float *qb = q + (n0 + (size_t)t0) * DH;
        for (int e = 0; e < DH; e++) KX_STORE(qT + e * KX_VL, KX_GATHERM(qb + e, lane_row, mr));
    }
    KX_V top[8];
    KX_VI ti[8];
    KX_BM val[8];
    KA_UNROLL for (int r = 0; r < TKC; r++) { top[r] = KX_ZERO(); ti[r] = KX_SET1I(-1); val[r] = KX_BM_ZERO(); }
    KX_BM nanl = KX_BM_ZERO();
    const KX_V sv = KX_SET1(scale);
    /* Offer score vector S_ of position J_ to the lanes t >= J_. */
#define KA_OFFER(S_, J_)                                                                                   \
    do {                                                                                                   \
        const int jj_ = (J_);                                                                              \
        KX_BM cv = KX_BM_FROM(jj_ <= t0 ? rowbits : rowbits & ~((1u << (jj_ - t0)) - 1u));                \
        KX_V c = (S_);                                                                                     \
        KX_VI ci = KX_SET1I(jj_);                                                                          \
        KX_BM sh = KX_BM_ZERO();                          /* shifting down from an earlier slot */         \
        nanl = KX_BM_OR(nanl, KX_BM_AND(cv, KX_BM_NAN(c)));                                                \
        KA_UNROLL for (int r = 0; r < TKC; r++) {                                                          \
            const KX_BM take =                                                                             \
                KX_BM_OR(KX_BM_ANDNOT(val[r], cv), KX_BM_AND(cv, KX_BM_OR(sh, KX_BM_GT(c, top[r]))));      \
            const KX_V nt = KX_BLEND(take, top[r], c);                                                     \
            c = KX_BLEND(take, c, top[r]);                                                                 \
            top[r] = nt;                                                                                   \
            const KX_VI nti = KX_BLENDI(take, ti[r], ci);                                                  \
            ci = KX_BLENDI(take, ci, ti[r]);                                                               \
            ti[r] = nti;                                                                                   \
            cv = KX_BM_OR(KX_BM_AND(take, val[r]), KX_BM_ANDNOT(take, cv));                                \
            val[r] = KX_BM_OR(val[r], take);                                                               \
            sh = take;                                                                                     \
        }                                                                                                  \
    } while (0)
    /* Scores of KA_JG positions per pass: each is its own chain over e (the
     * order within a score is fixed), so the chains overlap. */
    const int jend = t0 + rows;
    int j = 0;
    for (; j + KA_JG <= jend; j += KA_JG) {
        const float *kb = k + (n0 + (size_t)j) * DH;
        KX_V sj[KA_JG];
        KA_UNROLL for (int g = 0; g < KA_JG; g++) sj[g] = KX_ZERO();
        for (int e = 0; e < DH; e++) {
            const KX_V qe = KX_LOAD(qT + e * KX_VL);
            KA_UNROLL for (int g = 0; g < KA_JG; g++) sj[g] = KX_ADD(sj[g], KX_MUL(qe, KX_SET1(kb[g * DH + e])));
        }
        KA_UNROLL for (int g = 0; g < KA_JG; g++) KA_OFFER(KX_MUL(sj[g], sv), j + g);
    }
    for (; j < jend; j++) {
        const float *kj = k + (n0 + (size_t)j) * DH;
        KX_V s0 = KX_ZERO();
        for (int e = 0; e < DH; e++) s0 = KX_ADD(s0, KX_MUL(KX_LOAD(qT + e * KX_VL), KX_SET1(kj[e])));
        KA_OFFER(KX_MUL(s0, sv), j);
    }
#undef KA_OFFER
    /* softmax across slots (empty slots weigh 0, as masked lanes there) */
    KX_V ex[8];
    KA_UNROLL for (int r = 0; r < 8; r++)
        ex[r] = r < TKC ? KX_BM_KEEP(val[r], KX_EXP(KX_SUB(top[r], top[0]))) : KX_ZERO();
    const KX_V sum = KX_ADD(KX_ADD(KX_ADD(ex[0], ex[4]), KX_ADD(ex[2], ex[6])),
                            KX_ADD(KX_ADD(ex[1], ex[5]), KX_ADD(ex[3], ex[7])));
    const KX_V inv = KX_DIV(KX_SET1(1.0f), sum);
    float pb[8 * KX_VL] __attribute__((aligned(64)));
    int32_t ib[8 * KX_VL] __attribute__((aligned(64)));
    KA_UNROLL for (int r = 0; r < TKC; r++) {
        KX_STORE(pb + r * KX_VL, KX_MUL(ex[r], inv));
        KX_STOREI(ib + r * KX_VL, ti[r]);
    }
    const unsigned nanbits = KX_BM_BITS(nanl);
    for (int l = 0; l < rows; l++) {
        const int t = t0 + l, keff = TKC < t + 1 ? TKC : t + 1;
        const size_t n = n0 + (size_t)t;
        float *ps = p + n * TKC;
        int32_t *is = idx + n * TKC;
        if (nanbits >> l & 1u) {                          /* the reference's rule, scalar */
            const float *qt = q + n * DH;
            for (int j = 0; j <= t; j++) {
                float dot = 0.0f;
                for (int e = 0; e < DH; e++) dot += qt[e] * k[(n0 + (size_t)j) * DH + e];
                sc[j] = dot * scale;
            }
            int j = 0, cnt = 0;
            for (; j < keff; j++) atm_atome_topk_insert(ps, is, &cnt, keff, sc[j], j);
            float thr = ps[keff - 1];
            for (; j <= t; j++)
                if (sc[j] > thr) { atm_atome_topk_insert(ps, is, &cnt, keff, sc[j], j); thr = ps[keff - 1]; }
            KA(kl_softmax)(ps, keff);
        } else {
            for (int i = 0; i < keff; i++) { ps[i] = pb[i * KX_VL + l]; is[i] = ib[i * KX_VL + l]; }
        }
        for (int i = keff; i < TKC; i++) { ps[i] = 0.0f; is[i] = -1; }
        /* out[n] = sum over i < keff, in order, of ps[i] * v[n0 + is[i]] */
        const float *vr[8];
        KX_V pv[8];
        KA_UNROLL for (int i = 0; i < TKC; i++) {
            vr[i] = v + (n0 + (size_t)(i < keff ? is[i] : 0)) * C;
            pv[i] = KX_SET1(ps[i]);
        }
        float *o = out + n * C;
        int c = 0;
        for (; c + KX_VL <= C; c += KX_VL) {
            KX_V acc = KX_ZERO();
            KA_UNROLL for (int i = 0; i < TKC; i++)
                if (i < keff) acc = KX_ADD(acc, KX_MUL(pv[i], KX_LOAD(vr[i] + c)));
            KX_STORE(o + c, acc);
        }
        if (c < C) {
            const KX_MASK mk = KX_TAILMASK(C - c);
            KX_V acc = KX_ZERO();
            KA_UNROLL for (int i = 0; i < TKC; i++)
                if (i < keff) acc = KX_ADD(acc, KX_MUL(pv[i], KX_LOADM(vr[i] + c, mk)));
            KX_STOREM(o + c, mk, acc);
        }
    }
}

#define KA_BLOCK_CASE(K_) \
    case K_: KA(ka_attn_block)(K_, out, idx, p, q, k, v, T, DH, C, n0, t0, scale, qT, scratch); break;

KX_ATTR void KA(atm_atome_attn_forward)(float *out, int32_t *idx, float *p, const float *q,
                                        const float *k, const float *v, float *scratch,
                                        int B, int T, int DH, int C, int TK) {
    const float scale = 1.0f / _mm_cvtss_f32(_mm_sqrt_ss(_mm_set_ss((float)DH)));  /* = sqrtf */
    if (TK <= 8 && DH <= 64) {
        float qT[64 * KX_VL] __attribute__((aligned(64)));
        for (int b = 0; b < B; b++) {
            const size_t n0 = (size_t)b * T;
            for (int t0 = 0; t0 < T; t0 += KX_VL) {
                switch (TK) {
                    KA_BLOCK_CASE(1) KA_BLOCK_CASE(2) KA_BLOCK_CASE(3) KA_BLOCK_CASE(4)
                    KA_BLOCK_CASE(5) KA_BLOCK_CASE(6) KA_BLOCK_CASE(7) KA_BLOCK_CASE(8)
                    default: break;
                }
            }
        }
        _mm256_zeroupper();
        return;
    }
    float *kT = scratch;                                  /* [DH][T] keys of one sequence */
    for (int b = 0; b < B; b++) {
        const size_t n0 = (size_t)b * T;
        for (int j = 0; j < T; j++)
            for (int e = 0; e < DH; e++) kT[(size_t)e * T + j] = k[(n0 + j) * DH + e];
        for (int t = 0; t < T; t++) {
            const size_t n = n0 + t;
            float *ps = p + n * TK;
            int32_t *is = idx + n * TK;
            const int keff = TK < t + 1 ? TK : t + 1;
            KA(ka_select)(ps, is, q + n * DH, kT, T, DH, t + 1, scale, keff);
            KA(kl_softmax)(ps, keff);
            KA(ka_attn_out)(out + n * C, ps, is, v, n0, C, TK, keff);
        }
    }
    _mm256_zeroupper();
}
#undef KA_BLOCK_CASE

KX_ATTR void KA(atm_atome_attn_backward)(float *dq, float *dk, float *dv, const float *dout,
                                         const int32_t *idx, const float *p, const float *q,
                                         const float *k, const float *v,
                                         int B, int T, int DH, int C, int TK) {
    const float scale = 1.0f / _mm_cvtss_f32(_mm_sqrt_ss(_mm_set_ss((float)DH)));
    float dp[ATM_ATOME_MAX_TOPK];
    for (int b = 0; b < B; b++) {
        const size_t n0 = (size_t)b * T;
        for (int t = 0; t < T; t++) {
            const size_t n = n0 + t;
            const float *d = dout + n * C, *ps = p + n * TK, *qt = q + n * DH;
            const int32_t *is = idx + n * TK;
            const int keff = TK < t + 1 ? TK : t + 1;
            float sum = 0.0f;
            for (int i = 0; i < keff; i++) {
                const size_t m = n0 + (size_t)is[i];
                dp[i] = KA(ka_dot8)(d, v + m * C, C);
                sum += ps[i] * dp[i];
                if (dv) KA(ka_axpy)(dv + m * C, ps[i], d, C);
            }
            for (int i = 0; i < keff; i++) {
                const size_t m = n0 + (size_t)is[i];
                const float ds = ps[i] * (dp[i] - sum) * scale;   /* dL / d(q.k) */
                if (dq) KA(ka_axpy)(dq + n * DH, ds, k + m * DH, DH);
                if (dk) KA(ka_axpy)(dk + m * DH, ds, qt, DH);
            }
        }
    }
    _mm256_zeroupper();
}

/* Softmax of the P <= 8 router logits of VL rows at once (row per lane),
 * kl_softmax's arithmetic across vectors as in ka_attn_block: max, exp of
 * the differences, the KX_HSUMT tree over p (absent p count as 0), 1/sum,
 * products; so each row gets atm_softmax's bits (what gen_step computes). */
KX_ATTR void KA(atm_atome_mix_forward)(float *hout, float *r, const float *hin,
                                       const float *const *paths, int N, int C, int P) {
    if (P > 8) {                                          /* never: P <= ATM_ATOME_MAX_PATHS */
        for (int n = 0; n < N; n++) KA(kl_softmax)(r + (size_t)n * P, P);
    }
    const KX_VI lane_row = KX_IOTA_TIMES(P);
    float wb[8 * KX_VL] __attribute__((aligned(64)));     /* [p][lane] normalised weights */
    for (int n0 = 0; n0 < N; n0 += KX_VL) {
        const int rows = N - n0 < KX_VL ? N - n0 : KX_VL;
        float *rb = r + (size_t)n0 * P;
        if (P <= 8) {
            const KX_MASK mr = KX_TAILMASK(rows);
            KX_V x[8], ex[8];
            KA_UNROLL for (int pp = 0; pp < 8; pp++) x[pp] = pp < P ? KX_GATHERM(rb + pp, lane_row, mr) : KX_ZERO();
            KX_V mx = x[0];
            KA_UNROLL for (int pp = 1; pp < 8; pp++) if (pp < P) mx = KX_MAX(mx, x[pp]);
            KA_UNROLL for (int pp = 0; pp < 8; pp++) ex[pp] = pp < P ? KX_EXP(KX_SUB(x[pp], mx)) : KX_ZERO();
            const KX_V sum = KX_ADD(KX_ADD(KX_ADD(ex[0], ex[4]), KX_ADD(ex[2], ex[6])),
                                    KX_ADD(KX_ADD(ex[1], ex[5]), KX_ADD(ex[3], ex[7])));
            const KX_V inv = KX_DIV(KX_SET1(1.0f), sum);
            KA_UNROLL for (int pp = 0; pp < 8; pp++) if (pp < P) KX_STORE(wb + pp * KX_VL, KX_MUL(ex[pp], inv));
            for (int l = 0; l < rows; l++)
                for (int pp = 0; pp < P; pp++) rb[(size_t)l * P + pp] = wb[pp * KX_VL + l];
        } else {
            for (int l = 0; l < rows; l++)
                for (int pp = 0; pp < P; pp++) wb[pp * KX_VL + l] = rb[(size_t)l * P + pp];
        }
        /* hout = hin + sum over p, in order, of r_p * path_p */
        for (int l = 0; l < rows; l++) {
            const size_t n = (size_t)n0 + l;
            const float *hi = hin + n * C;
            float *ho = hout + n * C;
            for (int c = 0; c < C; c += KX_VL) {
                const KX_MASK mk = KX_TAILMASK(C - c < KX_VL ? C - c : KX_VL);
                KX_V acc = KX_LOADM(hi + c, mk);
                for (int pp = 0; pp < P; pp++)
                    acc = KX_ADD(acc, KX_MUL(KX_SET1(wb[pp * KX_VL + l]), KX_LOADM(paths[pp] + n * C + c, mk)));
                KX_STOREM(ho + c, mk, acc);
            }
        }
    }
    _mm256_zeroupper();
}

KX_ATTR void KA(atm_atome_mix_backward)(float *drl, float *const *dpaths, const float *dhout,
                                        const float *r, const float *const *paths,
                                        int N, int C, int P) {
    float dr[ATM_ATOME_MAX_PATHS];
    for (int n = 0; n < N; n++) {
        const float *d = dhout + (size_t)n * C, *rn = r + (size_t)n * P;
        float sum = 0.0f;
        for (int pp = 0; pp < P; pp++) {
            dr[pp] = KA(ka_dot8)(d, paths[pp] + (size_t)n * C, C);
            sum += rn[pp] * dr[pp];
            if (dpaths[pp]) KA(ka_axpy)(dpaths[pp] + (size_t)n * C, rn[pp], d, C);
        }
        for (int pp = 0; pp < P; pp++) drl[(size_t)n * P + pp] += rn[pp] * (dr[pp] - sum);
    }
    _mm256_zeroupper();
}

#undef KA_NB
#undef KA_JG
#undef KA_UNROLL
#undef KA_INLINE
#undef KA
#undef KA_CAT
#undef KA_CAT2
