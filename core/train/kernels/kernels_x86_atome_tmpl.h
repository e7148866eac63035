/* core/train/kernels/kernels_x86_atome_tmpl.h — the atome pathway primitives of one
 * SIMD layer kernel set (atome_layers.h, kernels_layers.h), instantiated by
 * kernels_x86.c once per x86 instruction set and by kernels_layers_wasm.c for
 * wasm SIMD128, after kernels_x86_layers_tmpl.h (whose kl_softmax it uses;
 * never included elsewhere).
 *
 * Contract: the bits of the _ref functions of pathways_ref.c. Every output element
 * goes through the reference's operations in the reference's order, only
 * several elements at a time: separate multiply and add (the file is built
 * with -ffp-contract=off and uses no fused multiply-add here), sums over
 * taps, paths, kept positions and time in the reference's order, and dot
 * products in dotf's eight lanes (KX_DOT8).
 * Loops may run in another order where that order does not reach any single
 * element (e.g. vector chunks outermost in the SSM scans). The one exception:
 * attention and router mixing normalise with this set's softmax (vector exp
 * on x86) where the reference calls libm's; generation (gen_step) uses the
 * same atm_softmax, so generation and the batch forward still agree bit for
 * bit. A set whose softmax is the reference's (KX_LIBM_SOFTMAX, wasm) has no
 * exception.
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
 *   KX_DOT8(a,b,n)       dotf of vecf.h (its eight lanes, combined as there)
 *   KX_DOT8_AXPY(a,b,n,y,r)  the same, and y[i] += r * a[i] in the same pass
 * and may define:
 *   KX_LIBM_SOFTMAX      the set's softmax is atm_softmax_ref (libm expf):
 *                        then KX_EXPF(v) is libm's expf on each lane, and the
 *                        softmax across vectors (ka_vsoftmax) sums in order
 *   KX_SCORES_NV         vectors per pass of the selection's scores (default:
 *                        a whole group of 64 positions)
 *   KX_CONV_NV           conv forward vectors side by side (default 1)
 *   KX_NO_ATTN_BACKWARD  the set uses the reference attention backward
 */
#include "../atome_layers.h"

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
/* Vectors scored per pass of kl_scores_n: a whole group on x86; a set with
 * fewer vector registers than it needs accumulators sets KX_SCORES_NV. */
#if defined(KX_SCORES_NV)
#define KA_SNV KX_SCORES_NV
#else
#define KA_SNV KA_NB
#endif
/* Key positions scored per pass of the blocked attention forward: as many
 * independent accumulator chains as the register file comfortably holds
 * next to the top-k slots (32 zmm, 16 ymm). */
#define KA_JG (KX_VL == 16 ? 8 : 4)

/* y[i] += a * x[i], i < n: axpyf of vecf.h. */
KA_INLINE void KA(ka_axpy)(float *y, float a, const float *x, int n) {
    const KX_V av = KX_SET1(a);
    int i = 0;
    for (; i + KX_VL <= n; i += KX_VL) KX_STORE(y + i, KX_ADD(KX_LOAD(y + i), KX_MUL(av, KX_LOAD(x + i))));
    if (i < n) {
        const KX_MASK m = KX_TAILMASK(n - i);
        KX_STOREM(y + i, m, KX_ADD(KX_LOADM(y + i, m), KX_MUL(av, KX_LOADM(x + i, m))));
    }
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

#define KA_SCORES_CASE(NV_) case NV_: KA(kl_scores)(NV_, s, q, kb + v0 * KX_VL, ldk, DH, r, sv); break;
/* kl_scores for nv = ceil(min(rem, 64) / VL) vectors (nv >= 1), in passes of
 * at most KA_SNV vectors (each lane's sum is its own chain, so the passes
 * give the same bits as one). */
static KX_ATTR void KA(kl_scores_n)(int nv, float *sc, const float *q, const float *kb, ptrdiff_t ldk, int DH,
                                    int rem, KX_V sv) {
    for (int v0 = 0; v0 < nv; v0 += KA_SNV) {
        float *s = sc + v0 * KX_VL;
        const int r = rem - v0 * KX_VL;
        switch (nv - v0) {
            KA_SCORES_CASE(1) KA_SCORES_CASE(2) KA_SCORES_CASE(3)
#if KA_SNV > 4
            KA_SCORES_CASE(4) KA_SCORES_CASE(5) KA_SCORES_CASE(6) KA_SCORES_CASE(7)
#endif
            default: KA(kl_scores)(KA_SNV, s, q, kb + v0 * KX_VL, ldk, DH, r, sv); break;
        }
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
    KX_VZEROUPPER();
}


/* ---- depthwise causal conv ----
 * One sequence at a time, in it NV vectors of channels at a time down the
 * sequence with their K taps in registers (K <= 8; more taps take the same
 * loops with K not a constant): the forward sums a row's taps in j order
 * from 0; the backward gathers du[m] += w_j d[m+j] in j order (the
 * reference's scatter from row n = m+j reaches du[m] in the same order) and
 * keeps the K tap gradients of the channels in registers over a sequence,
 * continuing from and returning to dwT, so each sums over (b, t) ascending
 * from 0 as the reference's zeroed dwT. With TAIL the last vector holds the
 * channels of mask mk. The row-major loops of the first x86 kernels (every
 * tap reloaded per row) measured slower than the references as 4-lane
 * ports. KX_CONV_NV (default 1) vectors side by side in the forward. */
#if defined(KX_CONV_NV)
#define KA_CNV KX_CONV_NV
#else
#define KA_CNV 1
#endif
/* Taps (the config's limit, core/train/config.c); more go to the reference. */
#define KA_KMAX 64
#define KA_LD(p, v_) ((TAIL && (v_) == NV - 1) ? KX_LOADM((p), mk) : KX_LOAD(p))
#define KA_ST(p, v_, x_)                                                      \
    do {                                                                      \
        if (TAIL && (v_) == NV - 1) KX_STOREM((p), mk, (x_));                 \
        else KX_STORE((p), (x_));                                             \
    } while (0)

/* Channels i .. of sequence b (NV vectors). */
KA_INLINE void KA(ka_conv_fwd_cols)(const int K, const int NV, const int TAIL, float *out, const float *u,
                                    const float *wT, int b, int T, int C, int i, KX_MASK mk) {
    KX_V wv[2][KA_KMAX];
    for (int v = 0; v < NV; v++)
        for (int j = 0; j < K; j++) wv[v][j] = KA_LD(wT + (size_t)j * C + i + v * KX_VL, v);
    const float *ub = u + (size_t)b * T * C + i;
    float *ob = out + (size_t)b * T * C + i;
    int t = 0;
    for (; t < T && t < K - 1; t++)
        for (int v = 0; v < NV; v++) {
            KX_V acc = KX_ZERO();
            for (int j = 0; j <= t; j++)
                acc = KX_ADD(acc, KX_MUL(wv[v][j], KA_LD(ub + (size_t)(t - j) * C + v * KX_VL, v)));
            KA_ST(ob + (size_t)t * C + v * KX_VL, v, acc);
        }
    for (; t < T; t++) {
        const float *ut = ub + (size_t)t * C;
        KX_V acc[2];
        for (int v = 0; v < NV; v++) acc[v] = KX_ZERO();
        for (int j = 0; j < K; j++)
            for (int v = 0; v < NV; v++)
                acc[v] = KX_ADD(acc[v], KX_MUL(wv[v][j], KA_LD(ut - (size_t)j * C + v * KX_VL, v)));
        for (int v = 0; v < NV; v++) KA_ST(ob + (size_t)t * C + v * KX_VL, v, acc[v]);
    }
}

/* Sequences outermost, so one sequence's rows stay in cache over its
 * channel chunks. */
KA_INLINE void KA(ka_conv_fwd_k)(const int K, float *out, const float *u, const float *wT, int B, int T, int C) {
    const KX_MASK all = KX_TAILMASK(KX_VL);
    for (int b = 0; b < B; b++) {
        int i = 0;
        for (; i + KA_CNV * KX_VL <= C; i += KA_CNV * KX_VL) KA(ka_conv_fwd_cols)(K, KA_CNV, 0, out, u, wT, b, T, C, i, all);
#if KA_CNV > 1
        for (; i + KX_VL <= C; i += KX_VL) KA(ka_conv_fwd_cols)(K, 1, 0, out, u, wT, b, T, C, i, all);
#endif
        if (i < C) KA(ka_conv_fwd_cols)(K, 1, 1, out, u, wT, b, T, C, i, KX_TAILMASK(C - i));
    }
}

#define KA_CONV_CASE(K_) case K_: KA(ka_conv_fwd_k)(K_, out, u, wT, B, T, C); break;
KX_ATTR void KA(atm_atome_conv_forward)(float *out, const float *u, const float *w, float *scratch,
                                        int B, int T, int C, int K) {
    if (K < 1 || K > KA_KMAX) { atm_atome_conv_forward_ref(out, u, w, scratch, B, T, C, K); return; }
    float *wT = scratch;                                  /* [K][C]: wT[j][c] = w[c][j] */
    for (int c = 0; c < C; c++)
        for (int j = 0; j < K; j++) wT[(size_t)j * C + c] = w[(size_t)c * K + j];
    switch (K) {
        KA_CONV_CASE(1) KA_CONV_CASE(2) KA_CONV_CASE(3) KA_CONV_CASE(4)
        KA_CONV_CASE(5) KA_CONV_CASE(6) KA_CONV_CASE(7) KA_CONV_CASE(8)
        default: KA(ka_conv_fwd_k)(K, out, u, wT, B, T, C); break;
    }
    KX_VZEROUPPER();
}
#undef KA_CONV_CASE

/* du of channels i .. (one vector) of sequence b. */
KA_INLINE void KA(ka_conv_bwd_du)(const int K, const int TAIL, float *du, const float *dout, const float *wT,
                                  int b, int T, int C, int ld, int i, KX_MASK mk) {
    const int NV = 1;
    const float *db = dout + (size_t)b * T * ld + i;
    float *dub = du + (size_t)b * T * ld + i;
    KX_V wv[KA_KMAX];
    for (int j = 0; j < K; j++) wv[j] = KA_LD(wT + (size_t)j * C + i, 0);
    int m = 0;
    for (; m + K - 1 < T; m++) {
        KX_V acc = KA_LD(dub + (size_t)m * ld, 0);
        for (int j = 0; j < K; j++) acc = KX_ADD(acc, KX_MUL(wv[j], KA_LD(db + (size_t)(m + j) * ld, 0)));
        KA_ST(dub + (size_t)m * ld, 0, acc);
    }
    for (; m < T; m++) {
        KX_V acc = KA_LD(dub + (size_t)m * ld, 0);
        for (int j = 0; m + j < T; j++) acc = KX_ADD(acc, KX_MUL(wv[j], KA_LD(db + (size_t)(m + j) * ld, 0)));
        KA_ST(dub + (size_t)m * ld, 0, acc);
    }
}

/* The tap gradients of channels i .. (one vector) over sequence b,
 * continuing from dwT and going back there. */
KA_INLINE void KA(ka_conv_bwd_dw)(const int K, const int TAIL, float *dwT, const float *dout, const float *u,
                                  int b, int T, int C, int ld, int i, KX_MASK mk) {
    const int NV = 1;
    const float *db = dout + (size_t)b * T * ld + i, *ub = u + (size_t)b * T * ld + i;
    KX_V dwv[KA_KMAX];
    for (int j = 0; j < K; j++) dwv[j] = KA_LD(dwT + (size_t)j * C + i, 0);
    int t = 0;
    for (; t < T && t < K - 1; t++) {
        const KX_V dv = KA_LD(db + (size_t)t * ld, 0);
        for (int j = 0; j <= t; j++) dwv[j] = KX_ADD(dwv[j], KX_MUL(dv, KA_LD(ub + (size_t)(t - j) * ld, 0)));
    }
    for (; t < T; t++) {
        const KX_V dv = KA_LD(db + (size_t)t * ld, 0);
        for (int j = 0; j < K; j++) dwv[j] = KX_ADD(dwv[j], KX_MUL(dv, KA_LD(ub + (size_t)(t - j) * ld, 0)));
    }
    for (int j = 0; j < K; j++) KA_ST(dwT + (size_t)j * C + i, 0, dwv[j]);
}

KA_INLINE void KA(ka_conv_bwd_k)(const int K, float *du, float *dwT, const float *dout, const float *u,
                                 const float *wT, int B, int T, int C, int ld) {
    const KX_MASK all = KX_TAILMASK(KX_VL), mt = KX_TAILMASK(C % KX_VL);
    const int full = C / KX_VL * KX_VL;
    for (int b = 0; b < B; b++) {
        for (int i = 0; i < full; i += KX_VL) {
            if (du) KA(ka_conv_bwd_du)(K, 0, du, dout, wT, b, T, C, ld, i, all);
            if (dwT) KA(ka_conv_bwd_dw)(K, 0, dwT, dout, u, b, T, C, ld, i, all);
        }
        if (full < C) {
            if (du) KA(ka_conv_bwd_du)(K, 1, du, dout, wT, b, T, C, ld, full, mt);
            if (dwT) KA(ka_conv_bwd_dw)(K, 1, dwT, dout, u, b, T, C, ld, full, mt);
        }
    }
}

#define KA_CONV_CASE(K_) case K_: KA(ka_conv_bwd_k)(K_, du, dwT, dout, u, wT, B, T, C, ld); break;
KX_ATTR void KA(atm_atome_conv_backward)(float *du, float *dw, const float *dout, const float *u,
                                         const float *w, float *scratch, int B, int T, int C, int K, int ld) {
    if (K < 1 || K > KA_KMAX) {
        atm_atome_conv_backward_ref(du, dw, dout, u, w, scratch, B, T, C, K, ld);
        return;
    }
    const size_t KC = (size_t)K * C;
    float *wT = scratch, *dwT = dw ? scratch + KC : NULL; /* [K][C] each */
    for (int c = 0; c < C; c++)
        for (int j = 0; j < K; j++) wT[(size_t)j * C + c] = w[(size_t)c * K + j];
    if (dwT)
        for (size_t x = 0; x < KC; x++) dwT[x] = 0.0f;
    switch (K) {
        KA_CONV_CASE(1) KA_CONV_CASE(2) KA_CONV_CASE(3) KA_CONV_CASE(4)
        KA_CONV_CASE(5) KA_CONV_CASE(6) KA_CONV_CASE(7) KA_CONV_CASE(8)
        default: KA(ka_conv_bwd_k)(K, du, dwT, dout, u, wT, B, T, C, ld); break;
    }
    KX_VZEROUPPER();
    if (dw)
        for (int c = 0; c < C; c++)
            for (int j = 0; j < K; j++) dw[(size_t)c * K + j] += dwT[(size_t)j * C + c];
}
#undef KA_CONV_CASE
#undef KA_LD
#undef KA_ST
#undef KA_CNV
#undef KA_KMAX

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
    KX_VZEROUPPER();
}

/* The backward scan keeps NV vector chunks of channels from i in registers
 * (carry and the three per-channel sums) for the whole scan, chunks
 * outermost; every channel sees the reference's ssm_bwd_step in the
 * reference's order (b ascending, t descending). With TAIL the last vector
 * holds the channels of mask mk. NV = KX_SSM_NV (default 1) scans run side
 * by side as independent carry chains. */
#if defined(KX_SSM_NV)
#define KA_SSMNV KX_SSM_NV
#else
#define KA_SSMNV 1
#endif
#define KA_LD(p, v_) ((TAIL && (v_) == NV - 1) ? KX_LOADM((p), mk) : KX_LOAD(p))
#define KA_ST(p, v_, x_)                                                      \
    do {                                                                      \
        if (TAIL && (v_) == NV - 1) KX_STOREM((p), mk, (x_));                 \
        else KX_STORE((p), (x_));                                             \
    } while (0)
KA_INLINE void KA(ka_ssm_bwd_chunk)(const int NV, const int TAIL, float *du, float *da_raw, float *db, float *dc,
                                    const float *dout, const float *u, const float *s, const float *a,
                                    const float *b, const float *c_out, int B, int T, int ld, int i, KX_MASK mk) {
    KX_V av[2], bv[2], cov[2], acc_da[2], acc_db[2], acc_dc[2], carry[2];
    KA_UNROLL for (int v = 0; v < NV; v++) {
        const int o = i + v * KX_VL;
        av[v] = KA_LD(a + o, v); bv[v] = KA_LD(b + o, v); cov[v] = KA_LD(c_out + o, v);
        acc_da[v] = KX_ZERO(); acc_db[v] = KX_ZERO(); acc_dc[v] = KX_ZERO();
    }
    for (int bb = 0; bb < B; bb++) {
        KA_UNROLL for (int v = 0; v < NV; v++) carry[v] = KX_ZERO();   /* a * dL/ds_{t+1} */
        for (int t = T - 1; t >= 0; t--) {
            KA_UNROLL for (int v = 0; v < NV; v++) {
                const size_t n = ((size_t)bb * T + t) * ld + i + v * KX_VL;
                const KX_V g = KA_LD(dout + n, v), sv = KA_LD(s + n, v);
                const KX_V sp = t > 0 ? KA_LD(s + n - ld, v) : KX_ZERO();
                const KX_V ds = KX_ADD(KX_MUL(g, cov[v]), carry[v]);
                carry[v] = KX_MUL(av[v], ds);
                if (du) KA_ST(du + n, v, KX_ADD(KA_LD(du + n, v), KX_MUL(bv[v], ds)));
                acc_dc[v] = KX_ADD(acc_dc[v], KX_MUL(g, sv));
                acc_db[v] = KX_ADD(acc_db[v], KX_MUL(ds, KA_LD(u + n, v)));
                acc_da[v] = KX_ADD(acc_da[v], KX_MUL(ds, sp));
            }
        }
    }
    KA_UNROLL for (int v = 0; v < NV; v++) {
        const int o = i + v * KX_VL;
        if (da_raw)
            KA_ST(da_raw + o, v, KX_ADD(KA_LD(da_raw + o, v),
                                        KX_MUL(acc_da[v], KX_SUB(KX_SET1(1.0f), KX_MUL(av[v], av[v])))));
        if (db) KA_ST(db + o, v, KX_ADD(KA_LD(db + o, v), acc_db[v]));
        if (dc) KA_ST(dc + o, v, KX_ADD(KA_LD(dc + o, v), acc_dc[v]));
    }
}
#undef KA_LD
#undef KA_ST

KX_ATTR void KA(atm_atome_ssm_backward)(float *du, float *da_raw, float *db, float *dc,
                                        const float *dout, const float *u, const float *s,
                                        const float *a_raw, const float *b, const float *c_out,
                                        float *scratch, int B, int T, int C, int ld) {
    float *a = scratch;                                   /* [C] tanh(a_raw) */
    for (int c = 0; c < C; c++) a[c] = tanhf(a_raw[c]);
    const KX_MASK all = KX_TAILMASK(KX_VL);
    int i = 0;
    for (; i + KA_SSMNV * KX_VL <= C; i += KA_SSMNV * KX_VL)
        KA(ka_ssm_bwd_chunk)(KA_SSMNV, 0, du, da_raw, db, dc, dout, u, s, a, b, c_out, B, T, ld, i, all);
#if KA_SSMNV > 1
    for (; i + KX_VL <= C; i += KX_VL)
        KA(ka_ssm_bwd_chunk)(1, 0, du, da_raw, db, dc, dout, u, s, a, b, c_out, B, T, ld, i, all);
#endif
    if (i < C)
        KA(ka_ssm_bwd_chunk)(1, 1, du, da_raw, db, dc, dout, u, s, a, b, c_out, B, T, ld, i, KX_TAILMASK(C - i));
    KX_VZEROUPPER();
}
#undef KA_SSMNV

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

/* Softmax across P <= 8 vectors x (one row per lane) whose lane-wise max is
 * mx, into w[0 .. P); keep (or NULL: every lane) marks the lanes of each x
 * that take part, the others weigh 0. */
#if defined(KX_LIBM_SOFTMAX)
/* atm_softmax_ref's arithmetic on lanes (the set's softmax is the
 * reference): libm's expf of the differences (KX_EXPF), the sum from 0 in
 * order, 1/sum, the products. */
KA_INLINE void KA(ka_vsoftmax)(const int P, KX_V *w, const KX_V *x, KX_V mx, const KX_BM *keep) {
    KX_V s = KX_ZERO();
    for (int r = 0; r < P; r++) {
        KX_V e = KX_EXPF(KX_SUB(x[r], mx));
        if (keep) e = KX_BM_KEEP(keep[r], e);
        w[r] = e;
        s = KX_ADD(s, e);
    }
    const KX_V inv = KX_DIV(KX_SET1(1.0f), s);
    for (int r = 0; r < P; r++) w[r] = KX_MUL(w[r], inv);
}
#else
/* kl_softmax's arithmetic across vectors: the set's exp of the
 * differences, the sum by kl_softmax's lane tree (KX_HSUMT) over the
 * vectors (absent ones count as 0), 1/sum, the products; so each lane gets
 * atm_softmax's bits (what gen_step computes). */
KA_INLINE void KA(ka_vsoftmax)(const int P, KX_V *w, const KX_V *x, KX_V mx, const KX_BM *keep) {
    KX_V ex[8];
    KA_UNROLL for (int r = 0; r < 8; r++) {
        ex[r] = KX_ZERO();
        if (r < P) {
            ex[r] = KX_EXP(KX_SUB(x[r], mx));
            if (keep) ex[r] = KX_BM_KEEP(keep[r], ex[r]);
        }
    }
    const KX_V sum = KX_ADD(KX_ADD(KX_ADD(ex[0], ex[4]), KX_ADD(ex[2], ex[6])),
                            KX_ADD(KX_ADD(ex[1], ex[5]), KX_ADD(ex[3], ex[7])));
    const KX_V inv = KX_DIV(KX_SET1(1.0f), sum);
    KA_UNROLL for (int r = 0; r < 8; r++) w[r] = r < P ? KX_MUL(ex[r], inv) : KX_ZERO();
}
#endif

/* Attention forward for the rows t0 .. t0+VL-1 of one sequence at once, one
 * row per lane (TKC = TK <= 8 kept positions, DH <= 64), in the steps below.
 * For each key position j, lane t gets the score (q_t . k_j) * scale (e in
 * order, multiply then add: the reference's bits) and, if j <= t, offers it
 * to a sorted list of TKC slots per lane (ka_offer). The list obeys the
 * insertion rule of atm_atome_topk_insert: a candidate goes in front of the
 * first slot holding a strictly smaller score (or into the first empty slot)
 * and everything below shifts down one place, the last falling out; so equal
 * scores keep the earlier position first, and the slots end as the kept
 * scores in the reference's order. The weights are the set's softmax over
 * the slots done across vectors (ka_vsoftmax, max = slot 0, empty slots
 * weigh 0), so they equal atm_softmax of the kept scores bit for bit (what
 * gen_step computes). A lane that met a NaN score is recomputed by the
 * scalar rule (ka_attn_row_ref). */

/* qT[e][l] = q[t0 + l][e] (qb = row t0), 0 past the rows. */
KA_INLINE void KA(ka_qT)(float *qT, const float *qb, int DH, int rows) {
    const KX_VI lane_row = KX_IOTA_TIMES(DH);
    const KX_MASK mr = KX_TAILMASK(rows);
    for (int e = 0; e < DH; e++) KX_STORE(qT + e * KX_VL, KX_GATHERM(qb + e, lane_row, mr));
}

/* The lanes of the block (rows t0 .., rowbits: the lanes that are rows)
 * whose row t is >= j. */
KA_INLINE KX_BM KA(ka_from)(int j, int t0, unsigned rowbits) {
    return KX_BM_FROM(j <= t0 ? rowbits : rowbits & ~((1u << (j - t0)) - 1u));
}

/* Offer score vector c of position jj to the lanes t >= jj of the block:
 * top, ti are the slots' scores and positions, nanl collects NaN lanes.
 * Every lane offered jj has been offered exactly 0 .. jj-1 before, so
 * min(jj, TKC) of its slots are full: the same for all lanes. The full slots
 * hold scores in non-increasing order, so "c > slot r" holds for a suffix
 * of them, and take[r] (slot r gets a new content: c if slot r-1 does not
 * take, else slot r-1's) follows from the old slots at once. */
KA_INLINE void KA(ka_offer)(const int TKC, KX_V *top, KX_VI *ti, KX_BM *nanl, KX_V c, int jj, int t0,
                            unsigned rowbits) {
    const int nf = jj < TKC ? jj : TKC;
    const KX_BM cv = KA(ka_from)(jj, t0, rowbits);
    const KX_VI ci = KX_SET1I(jj);
    *nanl = KX_BM_OR(*nanl, KX_BM_AND(cv, KX_BM_NAN(c)));
    KX_BM take[8];
    KA_UNROLL for (int r = 0; r < TKC; r++) take[r] = r < nf ? KX_BM_AND(cv, KX_BM_GT(c, top[r])) : cv;
    KA_UNROLL for (int r = TKC - 1; r > 0; r--) {
        top[r] = KX_BLEND(take[r], top[r], KX_BLEND(take[r - 1], c, top[r - 1]));
        ti[r] = KX_BLENDI(take[r], ti[r], KX_BLENDI(take[r - 1], ci, ti[r - 1]));
    }
    top[0] = KX_BLEND(take[0], top[0], c);
    ti[0] = KX_BLENDI(take[0], ti[0], ci);
}

/* Every key position j < t0 + rows of the sequence (keys kq) offered to the
 * block. KA_JG positions per pass: each score is its own chain over e (the
 * order within a score is fixed), so the chains overlap. */
KA_INLINE void KA(ka_attn_scores)(const int TKC, KX_V *top, KX_VI *ti, KX_BM *nanl,
                                  const float *qT, const float *kq, int DH, int t0, int rows, KX_V sv) {
    const unsigned rowbits = (1u << rows) - 1u;
    const int jend = t0 + rows;
    int j = 0;
    for (; j + KA_JG <= jend; j += KA_JG) {
        const float *kb = kq + (size_t)j * DH;
        KX_V sj[KA_JG];
        KA_UNROLL for (int g = 0; g < KA_JG; g++) sj[g] = KX_ZERO();
        for (int e = 0; e < DH; e++) {
            const KX_V qe = KX_LOAD(qT + e * KX_VL);
            KA_UNROLL for (int g = 0; g < KA_JG; g++) sj[g] = KX_ADD(sj[g], KX_MUL(qe, KX_SET1(kb[g * DH + e])));
        }
        KA_UNROLL for (int g = 0; g < KA_JG; g++)
            KA(ka_offer)(TKC, top, ti, nanl, KX_MUL(sj[g], sv), j + g, t0, rowbits);
    }
    for (; j < jend; j++) {
        const float *kj = kq + (size_t)j * DH;
        KX_V s0 = KX_ZERO();
        for (int e = 0; e < DH; e++) s0 = KX_ADD(s0, KX_MUL(KX_LOAD(qT + e * KX_VL), KX_SET1(kj[e])));
        KA(ka_offer)(TKC, top, ti, nanl, KX_MUL(s0, sv), j, t0, rowbits);
    }
}

/* Row t (n = n0 + t) by the reference's rule, scalar: the scores of
 * positions 0 .. t into sc, the insertion sequence, the set's softmax. */
static KX_ATTR void KA(ka_attn_row_ref)(float *ps, int32_t *is, const float *q, const float *k, int DH,
                                        size_t n0, int t, int keff, float scale, float *sc) {
    const float *qt = q + (n0 + (size_t)t) * DH;
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
}

/* o = sum over i < keff, in order, of ps[i] * v rows is[i] (vb = v + n0*C). */
KA_INLINE void KA(ka_attn_row_out)(const int TKC, float *o, const float *ps, const int32_t *is, const float *vb,
                                   int C, int keff) {
    const float *vr[8];
    KX_V pv[8];
    KA_UNROLL for (int i = 0; i < TKC; i++) {
        vr[i] = vb + (size_t)(i < keff ? is[i] : 0) * C;
        pv[i] = KX_SET1(ps[i]);
    }
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

/* One block (rows t0 .. t0 + VL - 1) of sequence n0; qT: DH * VL floats;
 * sc: T floats. */
KA_INLINE void KA(ka_attn_block)(const int TKC, float *out, int32_t *idx, float *p, const float *q,
                                 const float *k, const float *v, int T, int DH, int C, size_t n0, int t0,
                                 float scale, float *qT, float *sc) {
    const int rows = T - t0 < KX_VL ? T - t0 : KX_VL;
    KA(ka_qT)(qT, q + (n0 + (size_t)t0) * DH, DH, rows);
    const unsigned rowbits = (1u << rows) - 1u;
    KX_V top[8], w[8];
    KX_VI ti[8];
    KX_BM keep[8], nanl = KX_BM_ZERO();
    KA_UNROLL for (int r = 0; r < TKC; r++) { top[r] = KX_ZERO(); ti[r] = KX_SET1I(-1); }
    KA(ka_attn_scores)(TKC, top, ti, &nanl, qT, k + n0 * DH, DH, t0, rows, KX_SET1(scale));
    KA_UNROLL for (int r = 0; r < TKC; r++) keep[r] = KA(ka_from)(r, t0, rowbits);   /* slot r full: t >= r */
    KA(ka_vsoftmax)(TKC, w, top, top[0], keep);
    float pb[8 * KX_VL] __attribute__((aligned(64)));
    int32_t ib[8 * KX_VL] __attribute__((aligned(64)));
    KA_UNROLL for (int r = 0; r < TKC; r++) {
        KX_STORE(pb + r * KX_VL, w[r]);
        KX_STOREI(ib + r * KX_VL, ti[r]);
    }
    const unsigned nanbits = KX_BM_BITS(nanl);
    for (int l = 0; l < rows; l++) {
        const int t = t0 + l, keff = TKC < t + 1 ? TKC : t + 1;
        const size_t n = n0 + (size_t)t;
        float *ps = p + n * TKC;
        int32_t *is = idx + n * TKC;
        if (nanbits >> l & 1u) KA(ka_attn_row_ref)(ps, is, q, k, DH, n0, t, keff, scale, sc);
        else
            for (int i = 0; i < keff; i++) { ps[i] = pb[i * KX_VL + l]; is[i] = ib[i * KX_VL + l]; }
        for (int i = keff; i < TKC; i++) { ps[i] = 0.0f; is[i] = -1; }
        if (keff == TKC) KA(ka_attn_row_out)(TKC, out + n * C, ps, is, v + n0 * C, C, TKC);
        else KA(ka_attn_row_out)(TKC, out + n * C, ps, is, v + n0 * C, C, keff);
    }
}

/* One sequence of blocks, one function per kept count (noinline: V8
 * compiled the eight copies inlined into one function markedly worse, 228
 * vs 182 us per call on atome-60k shapes with TK = 4). */
#define KA_ATTN_SEQ(K_)                                                                                 \
    static KX_ATTR __attribute__((noinline)) void KA(ka_attn_seq##K_)(                                  \
        float *out, int32_t *idx, float *p, const float *q, const float *k, const float *v, int T,       \
        int DH, int C, size_t n0, float scale, float *sc) {                                             \
        float qT[64 * KX_VL] __attribute__((aligned(64)));                                              \
        for (int t0 = 0; t0 < T; t0 += KX_VL)                                                           \
            KA(ka_attn_block)(K_, out, idx, p, q, k, v, T, DH, C, n0, t0, scale, qT, sc);               \
    }
KA_ATTN_SEQ(1) KA_ATTN_SEQ(2) KA_ATTN_SEQ(3) KA_ATTN_SEQ(4)
KA_ATTN_SEQ(5) KA_ATTN_SEQ(6) KA_ATTN_SEQ(7) KA_ATTN_SEQ(8)
#undef KA_ATTN_SEQ

KX_ATTR void KA(atm_atome_attn_forward)(float *out, int32_t *idx, float *p, const float *q,
                                        const float *k, const float *v, float *scratch,
                                        int B, int T, int DH, int C, int TK) {
    const float scale = 1.0f / KX_SQRT1((float)DH);
    if (TK <= 8 && DH <= 64) {
        typedef void (*seq_fn)(float *, int32_t *, float *, const float *, const float *, const float *, int,
                               int, int, size_t, float, float *);
        static const seq_fn seq[8] = { KA(ka_attn_seq1), KA(ka_attn_seq2), KA(ka_attn_seq3), KA(ka_attn_seq4),
                                       KA(ka_attn_seq5), KA(ka_attn_seq6), KA(ka_attn_seq7), KA(ka_attn_seq8) };
        if (TK >= 1)
            for (int b = 0; b < B; b++) seq[TK - 1](out, idx, p, q, k, v, T, DH, C, (size_t)b * T, scale, scratch);
        KX_VZEROUPPER();
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
    KX_VZEROUPPER();
}

#if !defined(KX_NO_ATTN_BACKWARD)
KX_ATTR void KA(atm_atome_attn_backward)(float *dq, float *dk, float *dv, const float *dout,
                                         const int32_t *idx, const float *p, const float *q,
                                         const float *k, const float *v,
                                         int B, int T, int DH, int C, int TK) {
    const float scale = 1.0f / KX_SQRT1((float)DH);
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
                dp[i] = KX_DOT8(d, v + m * C, C);
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
    KX_VZEROUPPER();
}
#endif

/* The router weights of rows n0 .. n0 + rows - 1 (rb = r + n0*P) into wb
 * [p][lane]: for P <= 8 the softmax of VL rows at once (row per lane),
 * ka_vsoftmax after the max from p = 0 up, written back to rb; else rb
 * already holds the set's softmax of each row, copied. */
KA_INLINE void KA(ka_mix_weights)(float *wb, float *rb, int rows, int P, KX_VI lane_row) {
    if (P <= 8) {
        const KX_MASK mr = KX_TAILMASK(rows);
        KX_V x[8], w[8];
        KA_UNROLL for (int pp = 0; pp < 8; pp++) x[pp] = pp < P ? KX_GATHERM(rb + pp, lane_row, mr) : KX_ZERO();
        KX_V mx = x[0];
        KA_UNROLL for (int pp = 1; pp < 8; pp++) if (pp < P) mx = KX_MAX(mx, x[pp]);
        KA(ka_vsoftmax)(P, w, x, mx, NULL);
        KA_UNROLL for (int pp = 0; pp < 8; pp++) if (pp < P) KX_STORE(wb + pp * KX_VL, w[pp]);
        for (int l = 0; l < rows; l++)
            for (int pp = 0; pp < P; pp++) rb[(size_t)l * P + pp] = wb[pp * KX_VL + l];
    } else {
        for (int l = 0; l < rows; l++)
            for (int pp = 0; pp < P; pp++) wb[pp * KX_VL + l] = rb[(size_t)l * P + pp];
    }
}

/* Row n of the router output: hout = hin + sum over p, in order, of
 * w_p * path_p (w_p = wb[p][l]), a vector of columns at a time. */
KA_INLINE void KA(ka_mix_row)(const int P, float *ho, const float *hi, const float *const *paths, size_t n,
                              int C, const float *wb, int l) {
    const float *pa[8];
    KX_V wv[8];
    KA_UNROLL for (int pp = 0; pp < P; pp++) { pa[pp] = paths[pp] + n * C; wv[pp] = KX_SET1(wb[pp * KX_VL + l]); }
    int c = 0;
    for (; c + KX_VL <= C; c += KX_VL) {
        KX_V acc = KX_LOAD(hi + c);
        KA_UNROLL for (int pp = 0; pp < P; pp++) acc = KX_ADD(acc, KX_MUL(wv[pp], KX_LOAD(pa[pp] + c)));
        KX_STORE(ho + c, acc);
    }
    if (c < C) {
        const KX_MASK mk = KX_TAILMASK(C - c);
        KX_V acc = KX_LOADM(hi + c, mk);
        KA_UNROLL for (int pp = 0; pp < P; pp++) acc = KX_ADD(acc, KX_MUL(wv[pp], KX_LOADM(pa[pp] + c, mk)));
        KX_STOREM(ho + c, mk, acc);
    }
}

#define KA_MIX_CASE(P_) case P_: KA(ka_mix_row)(P_, ho, hi, paths, n, C, wb, l); break;
/* ka_mix_row for P = 1..8 paths (one copy per count); more (never: P <=
 * ATM_ATOME_MAX_PATHS) by the same sums, path by path. */
KA_INLINE void KA(ka_mix_row_n)(int P, float *ho, const float *hi, const float *const *paths, size_t n, int C,
                                const float *wb, int l) {
    switch (P) {
        KA_MIX_CASE(1) KA_MIX_CASE(2) KA_MIX_CASE(3) KA_MIX_CASE(4)
        KA_MIX_CASE(5) KA_MIX_CASE(6) KA_MIX_CASE(7) KA_MIX_CASE(8)
    default:
        for (int c = 0; c < C; c += KX_VL) {
            const KX_MASK mk = KX_TAILMASK(C - c < KX_VL ? C - c : KX_VL);
            KX_V acc = KX_LOADM(hi + c, mk);
            for (int pp = 0; pp < P; pp++)
                acc = KX_ADD(acc, KX_MUL(KX_SET1(wb[pp * KX_VL + l]), KX_LOADM(paths[pp] + n * C + c, mk)));
            KX_STOREM(ho + c, mk, acc);
        }
        break;
    }
}
#undef KA_MIX_CASE

/* The router softmax of each row (ka_mix_weights: atm_softmax's bits, what
 * gen_step computes), then hout = hin + sum over p, in order, of r_p * path_p. */
KX_ATTR void KA(atm_atome_mix_forward)(float *hout, float *r, const float *hin,
                                       const float *const *paths, int N, int C, int P) {
    if (P > 8) {                                          /* never: P <= ATM_ATOME_MAX_PATHS */
        for (int n = 0; n < N; n++) KA(kl_softmax)(r + (size_t)n * P, P);
    }
    const KX_VI lane_row = KX_IOTA_TIMES(P);
    float wb[8 * KX_VL] __attribute__((aligned(64)));     /* [p][lane] normalised weights */
    for (int n0 = 0; n0 < N; n0 += KX_VL) {
        const int rows = N - n0 < KX_VL ? N - n0 : KX_VL;
        KA(ka_mix_weights)(wb, r + (size_t)n0 * P, rows, P, lane_row);
        for (int l = 0; l < rows; l++) {
            const size_t n = (size_t)n0 + l;
            KA(ka_mix_row_n)(P, hout + n * C, hin + n * C, paths, n, C, wb, l);
        }
    }
    KX_VZEROUPPER();
}

KX_ATTR void KA(atm_atome_mix_backward)(float *drl, float *const *dpaths, const float *dhout,
                                        const float *r, const float *const *paths,
                                        int N, int C, int P) {
    float dr[ATM_ATOME_MAX_PATHS];
    for (int n = 0; n < N; n++) {
        const float *d = dhout + (size_t)n * C, *rn = r + (size_t)n * P;
        float sum = 0.0f;
        for (int pp = 0; pp < P; pp++) {
            const float *pa = paths[pp] + (size_t)n * C;
            dr[pp] = dpaths[pp] ? KX_DOT8_AXPY(d, pa, C, dpaths[pp] + (size_t)n * C, rn[pp]) : KX_DOT8(d, pa, C);
            sum += rn[pp] * dr[pp];
        }
        for (int pp = 0; pp < P; pp++) drl[(size_t)n * P + pp] += rn[pp] * (dr[pp] - sum);
    }
    KX_VZEROUPPER();
}

#undef KA_NB
#undef KA_SNV
#undef KA_JG
#undef KA_UNROLL
#undef KA_INLINE
#undef KA
#undef KA_CAT
#undef KA_CAT2
