/* core/train/kernels_wasm.c — wasm SIMD128 matmul kernels (wasm -msimd128 only).
 *
 * Contract: atm_matmul_forward_wasm / atm_matmul_backward_wasm compute what
 * atm_matmul_forward_ref / atm_matmul_backward_ref (layers.c) compute, with
 * the conventions of layers.h and kernels.h (forward overwrites out, backward
 * ADDS into dinp and dw, NULL skips a gradient, any N, IC, OC >= 0), up to
 * float rounding: the summation order differs from the reference. wasm has
 * no fused multiply-add, so every step is a rounded multiply then a rounded
 * add. The order depends only on (N, IC, OC), never on pointer alignment,
 * so a call is deterministic. Nothing is read or written outside the
 * caller's buffers: column tails use lane loads and lane stores
 * (load32_zero, load64_zero, load32_lane, store32/64_lane) instead of the
 * masked loads wasm lacks.
 *
 * Algorithm (the one of kernels_x86_tmpl.h, with 4-float vectors): every
 * product is C[rows][cols] (+)= A[rows][k] . B[k][cols], A read by scalar
 * broadcast at a[r*ars + k*aks], B read as rows of vectors at b + k*ldb:
 *   forward  out[N][OC]  = inp[N][IC] . w^T   B = w^T, packed per panel
 *   dinp     dinp[N][IC] += dout[N][OC] . w   B = w
 *   dw       dw[OC][IC]  += dout^T . inp      A = dout^T by stride, B = inp
 * Columns go in blocks of 16 (4 vectors); a register tile keeps MR rows x NV
 * vectors of C for the whole k loop: 2 x 4 for full blocks, 3 x 3, 4 x 2 and
 * 6 x 1 for the last block. V8 keeps 15 vector registers on x86-64 and
 * issues every load of a k step (NV B vectors, MR broadcasts) before the
 * arithmetic, and needs one more register for the product being added, so a
 * tile fits when MR*NV + NV + MR + 1 <= 15. The former 12-column blocks of
 * 3 x 3 tiles (16: one accumulator lives on the stack) took ~3-4% more
 * matmul time per atome-60k step than 2 x 4 (15) in interleaved replays;
 * 4 x 2 measured within noise of 3 x 3. 3 x 3 stays for a last block of 3
 * vectors (fewer loads per product than 2 x 3, measured faster on the
 * vanilla attention shapes), and a product with 3 rows (dw of a 3-output
 * layer) uses 12-column blocks: one 3 x 3 pass over B instead of 2 x 4 + 1 x 4.
 * Packing A as well (broadcasts at fixed offsets, no lea) measured no faster
 * on the large shapes and slower on small ones (packing cost), so A is read
 * in place.
 * A forward of at most KW_SMALLN rows (token-by-token generation) takes dot
 * products of contiguous rows instead of packing w.
 *
 * Peak. The kernels reach ~26-31 GFLOP/s on the project's VM. A
 * register-only loop of six independent a += x * y (no loads; y changed by
 * an opaque xor every round so the products cannot be hoisted:
 * atome_bench_muladd, printed by `node tools/bench-wasm-train.mjs
 * --matmul`) runs at ~31-35 GFLOP/s there, so the tiles, which also load
 * their operands, are at ~85-90% of it. Timings on the VM drift by up to 2x
 * with the load of other guests; compare builds
 * interleaved in one process. Tests: tests/node/wasm-kernels.test.mjs. */
#if defined(__wasm_simd128__)
#include <stddef.h>
#include <wasm_simd128.h>
#include "wasm_lanes.h"
#include "kernels.h"

#define KW_INLINE static inline __attribute__((always_inline))
#define KW_UNROLL _Pragma("clang loop unroll(full)")

#define KW_NVMAX 4    /* vectors per column block: 16 columns */
#define KW_MR1 6      /* rows per tile for 1, 2, 3, 4 column vectors */
#define KW_MR2 4
#define KW_MR3 3
#define KW_MR4 2
#define KW_NB (KW_NVMAX * 4)
/* 256 x 16 floats = 16 KiB panel (stack): stays in L1 beside the streamed rows. */
#define KW_KC 256
/* dw sums N in slabs of 128 rows so that slab of inp and dout stays in cache
 * (the x86 kernels measured the same choice, docs/kernels.md). */
#define KW_NSLAB 128
#define KW_SMALLN 4

/* Register tile: MR rows x NV vectors. TAIL = 0: every vector is full;
 * TAIL = 1..3: the last vector holds TAIL columns (partial loads of B and
 * C, partial stores). addc: C += tile, else C = tile. */
KW_INLINE void kw_tile(const int MR, const int NV, const int TAIL, int kc,
                       const float *a, ptrdiff_t ars, ptrdiff_t aks,
                       const float *b, ptrdiff_t ldb, float *c, ptrdiff_t ldc, int addc) {
    v128_t acc[8][KW_NVMAX];
    KW_UNROLL for (int r = 0; r < MR; r++)
        KW_UNROLL for (int v = 0; v < NV; v++) acc[r][v] = wasm_f32x4_splat(0.0f);
    for (int k = 0; k < kc; k++) {
        v128_t bv[KW_NVMAX];
        KW_UNROLL for (int v = 0; v < NV; v++)
            bv[v] = (TAIL && v == NV - 1) ? atm_wl_load(b + 4 * v, TAIL) : wasm_v128_load(b + 4 * v);
        KW_UNROLL for (int r = 0; r < MR; r++) {
            v128_t av = wasm_v128_load32_splat(a + r * ars);
            KW_UNROLL for (int v = 0; v < NV; v++)
                acc[r][v] = wasm_f32x4_add(acc[r][v], wasm_f32x4_mul(av, bv[v]));
        }
        a += aks;
        b += ldb;
    }
    KW_UNROLL for (int r = 0; r < MR; r++) {
        float *cr = c + r * ldc;
        KW_UNROLL for (int v = 0; v < NV; v++) {
            const int n = (TAIL && v == NV - 1) ? TAIL : 4;
            v128_t x = acc[r][v];
            if (addc) x = wasm_f32x4_add(atm_wl_load(cr + 4 * v, n), x);
            atm_wl_store(cr + 4 * v, x, n);
        }
    }
}

/* All `rows` rows of one column block: full MR_-row tiles, then one tile of
 * the remaining rows (cases of MR_ rows or more cannot happen and compile to
 * nothing). */
#define KW_TAIL_CASE(R_, NV_, T_, MR_) \
    case R_:                                                                    \
        if (R_ < MR_) kw_tile(R_ < MR_ ? R_ : 1, NV_, T_, kc, a, ars, aks, b, ldb, c, ldc, addc); \
        break;
#define KW_DEF_ROWS(NV_, T_, MR_)                                                                \
    static void kw_rows_##NV_##_##T_(int rows, int kc, const float *a, ptrdiff_t ars,           \
                                     ptrdiff_t aks, const float *b, ptrdiff_t ldb, float *c,     \
                                     ptrdiff_t ldc, int addc) {                                  \
        int r0 = 0;                                                                              \
        for (; r0 + MR_ <= rows; r0 += MR_)                                                      \
            kw_tile(MR_, NV_, T_, kc, a + r0 * ars, ars, aks, b, ldb, c + r0 * ldc, ldc, addc);   \
        a += r0 * ars;                                                                           \
        c += r0 * ldc;                                                                           \
        switch (rows - r0) {                                                                     \
            KW_TAIL_CASE(1, NV_, T_, MR_) KW_TAIL_CASE(2, NV_, T_, MR_)                          \
            KW_TAIL_CASE(3, NV_, T_, MR_) KW_TAIL_CASE(4, NV_, T_, MR_)                          \
            KW_TAIL_CASE(5, NV_, T_, MR_) KW_TAIL_CASE(6, NV_, T_, MR_)                          \
            KW_TAIL_CASE(7, NV_, T_, MR_)                                                        \
            default: break;                                                                      \
        }                                                                                        \
    }
#define KW_DEF_ROWS_ALL(NV_, MR_) \
    KW_DEF_ROWS(NV_, 0, MR_) KW_DEF_ROWS(NV_, 1, MR_) KW_DEF_ROWS(NV_, 2, MR_) KW_DEF_ROWS(NV_, 3, MR_)

KW_DEF_ROWS_ALL(1, KW_MR1)
KW_DEF_ROWS_ALL(2, KW_MR2)
KW_DEF_ROWS_ALL(3, KW_MR3)
KW_DEF_ROWS_ALL(4, KW_MR4)

typedef void (*kw_rows_fn)(int, int, const float *, ptrdiff_t, ptrdiff_t, const float *,
                           ptrdiff_t, float *, ptrdiff_t, int);
static const kw_rows_fn KW_ROWS[KW_NVMAX][4] = {
    { kw_rows_1_0, kw_rows_1_1, kw_rows_1_2, kw_rows_1_3 },
    { kw_rows_2_0, kw_rows_2_1, kw_rows_2_2, kw_rows_2_3 },
    { kw_rows_3_0, kw_rows_3_1, kw_rows_3_2, kw_rows_3_3 },
    { kw_rows_4_0, kw_rows_4_1, kw_rows_4_2, kw_rows_4_3 },
};

/* Columns per block for `rows` rows: 12 when all rows fit one 3 x 3 tile
 * (one pass over B instead of a 2 x 4 and a 1 x 4 tile), else KW_NB. */
KW_INLINE int kw_nb(int rows) { return rows == 3 ? 12 : KW_NB; }

/* C[rows][0 .. cols) for cols <= KW_NB. */
static void kw_block(int cols, int rows, int kc, const float *a, ptrdiff_t ars, ptrdiff_t aks,
                     const float *b, ptrdiff_t ldb, float *c, ptrdiff_t ldc, int addc) {
    int nv = (cols + 3) / 4;
    KW_ROWS[nv - 1][cols % 4](rows, kc, a, ars, aks, b, ldb, c, ldc, addc);
}

/* Sum of the four lanes as (l0 + l2) + (l1 + l3). */
KW_INLINE float kw_hsum(v128_t v) {
    v128_t s = wasm_f32x4_add(v, wasm_i32x4_shuffle(v, v, 2, 3, 0, 1));
    return wasm_f32x4_extract_lane(s, 0) + wasm_f32x4_extract_lane(s, 1);
}

/* Forward for a handful of rows: each output is a dot product of two
 * contiguous rows, four outputs at a time; the IC tail is a partial load
 * (zeros in the unused lanes of both operands). */
static void kw_dots(float *out, const float *inp, const float *w, int N, int IC, int OC) {
    int full = IC / 4 * 4, rem = IC - full;
    for (int n = 0; n < N; n++) {
        const float *x = inp + (size_t)n * IC;
        float *o = out + (size_t)n * OC;
        int oc = 0;
        for (; oc + 4 <= OC; oc += 4) {
            const float *w0 = w + (size_t)oc * IC, *w1 = w0 + IC, *w2 = w1 + IC, *w3 = w2 + IC;
            v128_t a0 = wasm_f32x4_splat(0.0f), a1 = a0, a2 = a0, a3 = a0;
            int i = 0;
            for (; i < full; i += 4) {
                v128_t xv = wasm_v128_load(x + i);
                a0 = wasm_f32x4_add(a0, wasm_f32x4_mul(xv, wasm_v128_load(w0 + i)));
                a1 = wasm_f32x4_add(a1, wasm_f32x4_mul(xv, wasm_v128_load(w1 + i)));
                a2 = wasm_f32x4_add(a2, wasm_f32x4_mul(xv, wasm_v128_load(w2 + i)));
                a3 = wasm_f32x4_add(a3, wasm_f32x4_mul(xv, wasm_v128_load(w3 + i)));
            }
            if (rem) {
                v128_t xv = atm_wl_load(x + i, rem);
                a0 = wasm_f32x4_add(a0, wasm_f32x4_mul(xv, atm_wl_load(w0 + i, rem)));
                a1 = wasm_f32x4_add(a1, wasm_f32x4_mul(xv, atm_wl_load(w1 + i, rem)));
                a2 = wasm_f32x4_add(a2, wasm_f32x4_mul(xv, atm_wl_load(w2 + i, rem)));
                a3 = wasm_f32x4_add(a3, wasm_f32x4_mul(xv, atm_wl_load(w3 + i, rem)));
            }
            o[oc] = kw_hsum(a0);
            o[oc + 1] = kw_hsum(a1);
            o[oc + 2] = kw_hsum(a2);
            o[oc + 3] = kw_hsum(a3);
        }
        for (; oc < OC; oc++) {
            const float *w0 = w + (size_t)oc * IC;
            v128_t a0 = wasm_f32x4_splat(0.0f);
            int i = 0;
            for (; i < full; i += 4)
                a0 = wasm_f32x4_add(a0, wasm_f32x4_mul(wasm_v128_load(x + i), wasm_v128_load(w0 + i)));
            if (rem) a0 = wasm_f32x4_add(a0, wasm_f32x4_mul(atm_wl_load(x + i, rem), atm_wl_load(w0 + i, rem)));
            o[oc] = kw_hsum(a0);
        }
    }
}

void atm_matmul_forward_wasm(float *out, const float *inp, const float *w, int N, int IC, int OC) {
    if (N <= 0 || OC <= 0) return;
    if (IC <= 0) {
        for (size_t i = 0; i < (size_t)N * (size_t)OC; i++) out[i] = 0.0f;
        return;
    }
    if (N <= KW_SMALLN) {
        kw_dots(out, inp, w, N, IC, OC);
        return;
    }
    /* panel[k][j] = w[oc0 + j][k0 + k]: KW_KC x KW_NB floats; columns past
     * OC are never read (the tail tile loads only its TAIL lanes). */
    float panel[KW_KC * KW_NB];
    for (int oc0 = 0; oc0 < OC; oc0 += KW_NB) {
        int nc = OC - oc0 < KW_NB ? OC - oc0 : KW_NB;
        for (int k0 = 0; k0 < IC; k0 += KW_KC) {
            int kc = IC - k0 < KW_KC ? IC - k0 : KW_KC;
            for (int j = 0; j < nc; j++) {
                const float *wr = w + (size_t)(oc0 + j) * IC + k0;
                for (int k = 0; k < kc; k++) panel[k * KW_NB + j] = wr[k];
            }
            kw_block(nc, N, kc, inp + k0, IC, 1, panel, KW_NB, out + oc0, OC, k0 > 0);
        }
    }
}

void atm_matmul_backward_wasm(float *dinp, float *dw, const float *dout, const float *inp,
                              const float *w, int N, int IC, int OC) {
    if (N <= 0 || IC <= 0 || OC <= 0) return;
    if (dinp)
        for (int ic0 = 0, nb = kw_nb(N); ic0 < IC; ic0 += nb) {
            int nc = IC - ic0 < nb ? IC - ic0 : nb;
            kw_block(nc, N, OC, dout, OC, 1, w + ic0, IC, dinp + ic0, IC, 1);
        }
    if (dw)
        for (int n0 = 0; n0 < N; n0 += KW_NSLAB) {
            int nn = N - n0 < KW_NSLAB ? N - n0 : KW_NSLAB;
            const float *d = dout + (size_t)n0 * OC, *x = inp + (size_t)n0 * IC;
            for (int ic0 = 0, nb = kw_nb(OC); ic0 < IC; ic0 += nb) {
                int nc = IC - ic0 < nb ? IC - ic0 : nb;
                kw_block(nc, OC, nn, d, 1, OC, x + ic0, IC, dw + ic0, IC, 1);
            }
        }
}

#else
/* ISO C wants at least one declaration in a translation unit. */
typedef int atm_kernels_wasm_unused;
#endif
