/* core/train/kernels/kernels_x86_tmpl.h — one SIMD matmul kernel set, instantiated
 * by kernels_x86.c once per x86 instruction set (AVX2, AVX-512) and by
 * kernels_wasm.c for wasm SIMD128 (macros of kernels_wasm_lanes.h; never
 * included elsewhere). The name predates the wasm instance.
 *
 * The includer defines:
 *   KX_ATTR            function attribute enabling the instruction set
 *   KX_SUFFIX          name suffix (avx2, avx512, wasm)
 *   KX_V, KX_MASK      vector type (KX_VL floats) and tail-mask type
 *   KX_ZERO() KX_LOAD(p) KX_LOADM(p,m) KX_STORE(p,v) KX_STOREM(p,m,v)
 *   KX_BCAST(p) KX_FMA(a,b,c) (= a*b + c, fused) KX_ADD(a,b) KX_TAILMASK(n)
 *   KX_NVMAX           vectors per column block
 *   KX_MR1..KX_MR4     rows per register tile for 1..4 column vectors
 *   KX_KC              depth of one packed weight panel (forward)
 *   KX_NSLAB           rows of N summed per pass of dw
 *   KX_SMALLN          forward with N <= this uses dot products, no packing
 *   KX_VI KX_IOTA_TIMES(s) KX_GATHERM(p,idx,m) KX_HSUM(v)
 *                      int32 index vector, lane l -> l*s; masked gather of
 *                      p[idx[l]] (0 where masked); sum of the lanes
 *   KX_VZEROUPPER()    what ends an entry point (vzeroupper on x86)
 * and may define (else the x86 defaults below):
 *   KX_NBT KX_BT(cols) KX_LOADB(p,bt,m)   kinds of B tail as constants
 *   KX_NBLOCK(rows)    columns per block of a product with `rows` rows
 *
 * Everything is one GEMM shape: C[rows][cols] (+)= A[rows][k] . B[k][cols],
 * with A read by scalar broadcast at a[r*ars + k*aks] (any strides, so dout^T
 * needs no transpose), B read by rows of vectors at b + k*ldb, C row-major.
 * The register tile holds MR x NV vectors of C for the whole k loop, so every
 * C element is one chain of fused multiply-adds over k, added to C at the end
 * when C accumulates. The three matmuls map onto it as:
 *   forward  out[N][OC]  = inp[N][IC] . w^T   B = w^T, packed per panel
 *   dinp     dinp[N][IC] += dout[N][OC] . w   B = w (rows already contiguous)
 *   dw       dw[OC][IC]  += dout^T . inp      A = dout^T by stride, B = inp
 * The last vector of a column block is loaded/stored with a mask, so any
 * column count works; row tails use smaller tiles. A forward of at most
 * KX_SMALLN rows skips the packing and takes dot products instead. Summation order depends
 * only on the shapes, never on pointer alignment. */

#define KX_CAT2(a, b) a##_##b
#define KX_CAT(a, b) KX_CAT2(a, b)
#define KX(name) KX_CAT(name, KX_SUFFIX)
/* Tile loops must unroll completely so the accumulators live in registers. */
#if defined(__clang__)
#define KX_UNROLL _Pragma("clang loop unroll(full)")
#else
#define KX_UNROLL _Pragma("GCC unroll 32")
#endif
#define KX_INLINE static inline __attribute__((always_inline)) KX_ATTR

/* Kinds of B tail (KX_NBT): 0 = the last B vector is whole (or padded); on
 * x86 1 = it is loaded with mask m; where masks are lane counts (wasm) bt =
 * 1..VL-1 is the count, a constant in each tile. KX_BT(cols): the kind for
 * a block of cols columns of unpadded B. KX_LOADB(p, bt, m) loads it. */
#if !defined(KX_NBT)
#define KX_NBT 2
#define KX_BT(cols) ((cols) % KX_VL != 0)
#define KX_LOADB(p, bt, m) KX_LOADM((p), (m))
#endif
/* Columns per block for a product of `rows` rows (default: KX_NB). */
#if !defined(KX_NBLOCK)
#define KX_NBLOCK(rows) KX_NB
#endif

/* Register tile: MR rows x NV vectors. BMASK: the kind of the last B vector
 * (above). The last C vector holds the columns of mask m. addc: C += tile,
 * else C = tile. */
KX_INLINE void KX(tile)(const int MR, const int NV, const int BMASK, int kc,
                        const float *a, ptrdiff_t ars, ptrdiff_t aks,
                        const float *b, ptrdiff_t ldb,
                        float *c, ptrdiff_t ldc, KX_MASK m, int addc) {
    KX_V acc[16][4];
    KX_UNROLL for (int r = 0; r < MR; r++)
        KX_UNROLL for (int v = 0; v < NV; v++) acc[r][v] = KX_ZERO();
    for (int k = 0; k < kc; k++) {
        KX_V bv[4];
        KX_UNROLL for (int v = 0; v < NV; v++)
            bv[v] = (BMASK && v == NV - 1) ? KX_LOADB(b + v * KX_VL, BMASK, m) : KX_LOAD(b + v * KX_VL);
        KX_UNROLL for (int r = 0; r < MR; r++) {
            KX_V av = KX_BCAST(a + r * ars);
            KX_UNROLL for (int v = 0; v < NV; v++) acc[r][v] = KX_FMA(av, bv[v], acc[r][v]);
        }
        a += aks;
        b += ldb;
    }
    KX_UNROLL for (int r = 0; r < MR; r++) {
        float *cr = c + r * ldc;
        KX_UNROLL for (int v = 0; v < NV; v++) {
            if (v == NV - 1) {
                if (addc) acc[r][v] = KX_ADD(KX_LOADM(cr + v * KX_VL, m), acc[r][v]);
                KX_STOREM(cr + v * KX_VL, m, acc[r][v]);
            } else {
                if (addc) acc[r][v] = KX_ADD(KX_LOAD(cr + v * KX_VL), acc[r][v]);
                KX_STORE(cr + v * KX_VL, acc[r][v]);
            }
        }
    }
}

/* All `rows` rows of one column block of NV_ vectors (B tail kind BT_, the
 * last vector masked by m): full MR_-row tiles, then one smaller tile for
 * the remainder (cases of MR_ rows or more cannot happen and compile to
 * nothing). */
#define KX_TAIL_CASE(R_, NV_, MR_) \
    case R_: if (R_ < MR_) KX(tile)(R_ < MR_ ? R_ : 1, NV_, BT_, kc, a, ars, aks, b, ldb, c, ldc, m, addc); break;
KX_INLINE void KX(rows_bt)(const int NV_, const int MR_, const int BT_, int rows, int kc, const float *a,
                           ptrdiff_t ars, ptrdiff_t aks, const float *b, ptrdiff_t ldb, float *c, ptrdiff_t ldc,
                           KX_MASK m, int addc) {
    int r0 = 0;
    for (; r0 + MR_ <= rows; r0 += MR_)
        KX(tile)(MR_, NV_, BT_, kc, a + r0 * ars, ars, aks, b, ldb, c + r0 * ldc, ldc, m, addc);
    a += r0 * ars;
    c += r0 * ldc;
    switch (rows - r0) {
        KX_TAIL_CASE(1, NV_, MR_) KX_TAIL_CASE(2, NV_, MR_) KX_TAIL_CASE(3, NV_, MR_) KX_TAIL_CASE(4, NV_, MR_)
        KX_TAIL_CASE(5, NV_, MR_) KX_TAIL_CASE(6, NV_, MR_) KX_TAIL_CASE(7, NV_, MR_) KX_TAIL_CASE(8, NV_, MR_)
        KX_TAIL_CASE(9, NV_, MR_) KX_TAIL_CASE(10, NV_, MR_) KX_TAIL_CASE(11, NV_, MR_)
        KX_TAIL_CASE(12, NV_, MR_) KX_TAIL_CASE(13, NV_, MR_) KX_TAIL_CASE(14, NV_, MR_)
        KX_TAIL_CASE(15, NV_, MR_)
        default: break;
    }
}
/* One function per (NV, B tail kind), not inlined: V8 compiles one function
 * holding every tile markedly worse (matmul steps ~1.5x slower measured). */
#define KX_DEF_ROWS_BT(NV_, MR_, BT_)                                                                 \
    static KX_ATTR __attribute__((noinline)) void KX(rows##NV_##_##BT_)(                              \
        int rows, int kc, const float *a, ptrdiff_t ars, ptrdiff_t aks, const float *b, ptrdiff_t ldb, \
        float *c, ptrdiff_t ldc, KX_MASK m, int addc) {                                               \
        KX(rows_bt)(NV_, MR_, BT_, rows, kc, a, ars, aks, b, ldb, c, ldc, m, addc);                   \
    }
#if KX_NBT > 2
#define KX_DEF_ROWS(NV_, MR_) \
    KX_DEF_ROWS_BT(NV_, MR_, 0) KX_DEF_ROWS_BT(NV_, MR_, 1) KX_DEF_ROWS_BT(NV_, MR_, 2) KX_DEF_ROWS_BT(NV_, MR_, 3)
#define KX_ROWS_ENTRY(NV_) { KX(rows##NV_##_0), KX(rows##NV_##_1), KX(rows##NV_##_2), KX(rows##NV_##_3) }
#else
#define KX_DEF_ROWS(NV_, MR_) KX_DEF_ROWS_BT(NV_, MR_, 0) KX_DEF_ROWS_BT(NV_, MR_, 1)
#define KX_ROWS_ENTRY(NV_) { KX(rows##NV_##_0), KX(rows##NV_##_1) }
#endif

KX_DEF_ROWS(1, KX_MR1)
#if KX_NVMAX >= 2
KX_DEF_ROWS(2, KX_MR2)
#endif
#if KX_NVMAX >= 3
KX_DEF_ROWS(3, KX_MR3)
#endif
#if KX_NVMAX >= 4
KX_DEF_ROWS(4, KX_MR4)
#endif

typedef void (*KX(rows_fn))(int, int, const float *, ptrdiff_t, ptrdiff_t, const float *, ptrdiff_t, float *,
                            ptrdiff_t, KX_MASK, int);
/* [nv - 1][B tail kind] */
static const KX(rows_fn) KX(rows_tab)[KX_NVMAX][KX_NBT] = {
    KX_ROWS_ENTRY(1),
#if KX_NVMAX >= 2
    KX_ROWS_ENTRY(2),
#endif
#if KX_NVMAX >= 3
    KX_ROWS_ENTRY(3),
#endif
#if KX_NVMAX >= 4
    KX_ROWS_ENTRY(4),
#endif
};

/* C[rows][col0 .. col0+cols) with cols <= KX_NVMAX * KX_VL. */
static KX_ATTR void KX(block)(int cols, int rows, int bt, int kc, const float *a,
                              ptrdiff_t ars, ptrdiff_t aks, const float *b, ptrdiff_t ldb,
                              float *c, ptrdiff_t ldc, int addc) {
    int nv = (cols + KX_VL - 1) / KX_VL;
    KX_MASK m = KX_TAILMASK(cols - (nv - 1) * KX_VL);
    KX(rows_tab)[nv - 1][bt](rows, kc, a, ars, aks, b, ldb, c, ldc, m, addc);
}

#define KX_NB (KX_NVMAX * KX_VL)

/* Forward for a handful of rows (token-by-token generation): packing w
 * would cost more than the product, so each output is a dot product of two
 * contiguous rows, four outputs at a time, reduced across lanes at the end. */
static KX_ATTR void KX(dots)(float *out, const float *inp, const float *w, int N, int IC, int OC) {
    int full = IC / KX_VL * KX_VL;
    KX_MASK m = KX_TAILMASK(IC - full > 0 ? IC - full : KX_VL);
    for (int n = 0; n < N; n++) {
        const float *x = inp + (size_t)n * IC;
        float *o = out + (size_t)n * OC;
        int oc = 0;
        for (; oc + 4 <= OC; oc += 4) {
            const float *w0 = w + (size_t)oc * IC, *w1 = w0 + IC, *w2 = w1 + IC, *w3 = w2 + IC;
            KX_V a0 = KX_ZERO(), a1 = KX_ZERO(), a2 = KX_ZERO(), a3 = KX_ZERO();
            int i = 0;
            for (; i < full; i += KX_VL) {
                KX_V xv = KX_LOAD(x + i);
                a0 = KX_FMA(xv, KX_LOAD(w0 + i), a0);
                a1 = KX_FMA(xv, KX_LOAD(w1 + i), a1);
                a2 = KX_FMA(xv, KX_LOAD(w2 + i), a2);
                a3 = KX_FMA(xv, KX_LOAD(w3 + i), a3);
            }
            if (i < IC) {
                KX_V xv = KX_LOADM(x + i, m);
                a0 = KX_FMA(xv, KX_LOADM(w0 + i, m), a0);
                a1 = KX_FMA(xv, KX_LOADM(w1 + i, m), a1);
                a2 = KX_FMA(xv, KX_LOADM(w2 + i, m), a2);
                a3 = KX_FMA(xv, KX_LOADM(w3 + i, m), a3);
            }
            o[oc] = KX_HSUM(a0);
            o[oc + 1] = KX_HSUM(a1);
            o[oc + 2] = KX_HSUM(a2);
            o[oc + 3] = KX_HSUM(a3);
        }
        for (; oc < OC; oc++) {
            const float *w0 = w + (size_t)oc * IC;
            KX_V a0 = KX_ZERO();
            int i = 0;
            for (; i < full; i += KX_VL) a0 = KX_FMA(KX_LOAD(x + i), KX_LOAD(w0 + i), a0);
            if (i < IC) a0 = KX_FMA(KX_LOADM(x + i, m), KX_LOADM(w0 + i, m), a0);
            o[oc] = KX_HSUM(a0);
        }
    }
}

/* Both entry points end with vzeroupper: GCC 12 does not insert it in
 * functions whose AVX comes from a target attribute, and leaving the upper
 * halves dirty made every later SSE instruction (libm expf, the scalar
 * layers) several times slower (measured: a 5x slower training step). */

KX_ATTR void KX(atm_matmul_forward)(float *out, const float *inp, const float *w, int N, int IC, int OC) {
    if (N <= 0 || OC <= 0) return;
    if (IC <= 0) {
        for (size_t i = 0; i < (size_t)N * (size_t)OC; i++) out[i] = 0.0f;
        return;
    }
    if (N <= KX_SMALLN) {
        KX(dots)(out, inp, w, N, IC, OC);
        KX_VZEROUPPER();
        return;
    }
    /* panel[k][j] = w[oc0 + j][k0 + k]: KX_KC x KX_NB floats, zero past OC. */
    float panel[KX_KC * KX_NB] __attribute__((aligned(64)));
    KX_VI lane_row = KX_IOTA_TIMES(IC); /* lane l -> offset of row l of w */
    for (int oc0 = 0; oc0 < OC; oc0 += KX_NB) {
        int nc = OC - oc0 < KX_NB ? OC - oc0 : KX_NB;
        int nv = (nc + KX_VL - 1) / KX_VL;
        for (int k0 = 0; k0 < IC; k0 += KX_KC) {
            int kc = IC - k0 < KX_KC ? IC - k0 : KX_KC;
            for (int v = 0; v < nv; v++) {
                int rem = nc - v * KX_VL < KX_VL ? nc - v * KX_VL : KX_VL;
                KX_MASK m = KX_TAILMASK(rem);
                const float *base = w + (size_t)(oc0 + v * KX_VL) * IC + k0;
                for (int k = 0; k < kc; k++)
                    KX_STORE(panel + (size_t)k * KX_NB + v * KX_VL, KX_GATHERM(base + k, lane_row, m));
            }
            KX(block)(nc, N, 0, kc, inp + k0, IC, 1, panel, KX_NB, out + oc0, OC, k0 > 0);
        }
    }
    KX_VZEROUPPER();
}

KX_INLINE void KX(mm_dw)(float *dw, const float *dout, int ldd, const float *inp, int N, int IC, int OC);

KX_ATTR void KX(atm_matmul_backward)(float *dinp, float *dw, const float *dout, const float *inp,
                             const float *w, int N, int IC, int OC) {
    if (N <= 0 || IC <= 0 || OC <= 0) return;
    if (dinp)
        for (int ic0 = 0, nb = KX_NBLOCK(N); ic0 < IC; ic0 += nb) {
            int nc = IC - ic0 < nb ? IC - ic0 : nb;
            KX(block)(nc, N, KX_BT(nc), OC, dout, OC, 1, w + ic0, IC, dinp + ic0, IC, 1);
        }
    if (dw) KX(mm_dw)(dw, dout, OC, inp, N, IC, OC);
    KX_VZEROUPPER();
}

/* dw[OC][IC] += dout^T . inp with dout's rows ldd floats apart (the
 * thread pool's share of a backward: rows oc0.. of dw from columns oc0.. of
 * dout, kernels.c). dw sums over N in slabs of KX_NSLAB rows so the slab of
 * inp and dout the tiles stream through stays in L2 (1008 x 256 floats is
 * 1 MiB); an element's chain depends on N only. */
KX_INLINE void KX(mm_dw)(float *dw, const float *dout, int ldd, const float *inp, int N, int IC, int OC) {
    for (int n0 = 0; n0 < N; n0 += KX_NSLAB) {
        int nn = N - n0 < KX_NSLAB ? N - n0 : KX_NSLAB;
        const float *d = dout + (size_t)n0 * ldd, *x = inp + (size_t)n0 * IC;
        for (int ic0 = 0, nb = KX_NBLOCK(OC); ic0 < IC; ic0 += nb) {
            int nc = IC - ic0 < nb ? IC - ic0 : nb;
            KX(block)(nc, OC, KX_BT(nc), nn, d, 1, ldd, x + ic0, IC, dw + ic0, IC, 1);
        }
    }
}

KX_ATTR void KX(atm_matmul_backward_dw)(float *dw, const float *dout, int ldd, const float *inp, int N, int IC, int OC) {
    if (N <= 0 || IC <= 0 || OC <= 0) return;
    KX(mm_dw)(dw, dout, ldd, inp, N, IC, OC);
    KX_VZEROUPPER();
}

#undef KX_NBT
#undef KX_BT
#undef KX_LOADB
#undef KX_NBLOCK
#undef KX_TAIL_CASE
#undef KX_DEF_ROWS_BT
#undef KX_ROWS_ENTRY
#undef KX_DEF_ROWS
#undef KX_NB
#undef KX_INLINE
#undef KX_UNROLL
#undef KX
#undef KX_CAT
#undef KX_CAT2
