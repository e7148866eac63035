/* core/train/kernels/kernels_x86.c — AVX2+FMA and AVX-512 kernels (x86 only): the
 * matmuls and the layer kernels.
 *
 * Contract: atm_matmul_{forward,backward}_{avx2,avx512} compute what the _ref
 * functions of layers.h compute, up to float rounding (see kernels.h), for
 * any N, IC, OC; the layer kernels (layernorm, cross-entropy, exp, softmax,
 * atome pathways; _avx2 and _avx512) follow kernels_layers.h. The file
 * compiles without -march flags: each function carries a target attribute,
 * and kernels.c / kernels_layers.c call a set only after
 * __builtin_cpu_supports() has confirmed the CPU (and OS) support it. The
 * algorithms are written once in kernels_x86_tmpl.h (matmul),
 * kernels_x86_layers_tmpl.h (layers) and kernels_x86_atome_tmpl.h (atome
 * pathways) and instantiated here per instruction set with its vector width,
 * register-tile shape and vector exp; kernels_wasm.c and
 * kernels_layers_wasm.c are their third instance (wasm SIMD128). */
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#include <math.h>
#include <stddef.h>
#include "../kernels.h"

/* ------------------------------------------------------------ vector exp
 * exp(x) = 2^n * e^r, n = round(x / ln 2), r = x - n ln 2 in [-ln2/2, ln2/2]
 * (ln 2 split in two, Cody-Waite, so r is exact to a few ulp), e^r =
 * 1 + r + r^2 P(r) with Cephes expf's degree-5 P (S. Moshier, Cephes Math
 * Library, expf.c), evaluated with fused multiply-adds. x is clamped below at
 * -104, where exp(x) < 2^-150 rounds to 0. The 2^n scaling rounds once: scalef
 * on AVX-512; on AVX2 2^n = 2^n1 * 2^n2 with n1 = max(n, -125), so p * 2^n1
 * is exact and only the second product can round (into the subnormals).
 * Measured error over every float in [-104, 0]: docs/kernels.md. */
#define KX_EXP_LO -104.0f
#define KX_LOG2E 1.44269504088896341f
#define KX_LN2_HI 0.693359375f          /* 8 significant bits: n * LN2_HI is exact */
#define KX_LN2_LO -2.12194440e-4f       /* ln 2 - LN2_HI */
#define KX_EXP_P0 1.9875691500e-4f
#define KX_EXP_P1 1.3981999507e-3f
#define KX_EXP_P2 8.3334519073e-3f
#define KX_EXP_P3 4.1665795894e-2f
#define KX_EXP_P4 1.6666665459e-1f
#define KX_EXP_P5 5.0000001201e-1f

static inline __attribute__((always_inline, target("avx2,fma"))) __m256 kx_exp_avx2(__m256 x) {
    x = _mm256_max_ps(_mm256_set1_ps(KX_EXP_LO), x); /* NaN (2nd operand) passes through */
    __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(KX_LOG2E)),
                               _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(KX_LN2_HI), x);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(KX_LN2_LO), r);
    __m256 p = _mm256_set1_ps(KX_EXP_P0);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(KX_EXP_P1));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(KX_EXP_P2));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(KX_EXP_P3));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(KX_EXP_P4));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(KX_EXP_P5));
    p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), r);
    p = _mm256_add_ps(p, _mm256_set1_ps(1.0f));
    __m256i ni = _mm256_cvtps_epi32(n);
    __m256i n1 = _mm256_max_epi32(ni, _mm256_set1_epi32(-125));
    __m256i n2 = _mm256_sub_epi32(ni, n1);
    __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n1, _mm256_set1_epi32(127)), 23));
    __m256 s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n2, _mm256_set1_epi32(127)), 23));
    return _mm256_mul_ps(_mm256_mul_ps(p, s1), s2);
}

static inline __attribute__((always_inline, target("avx512f"))) __m512 kx_exp_avx512(__m512 x) {
    x = _mm512_max_ps(_mm512_set1_ps(KX_EXP_LO), x);
    __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(KX_LOG2E)),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(KX_LN2_HI), x);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(KX_LN2_LO), r);
    __m512 p = _mm512_set1_ps(KX_EXP_P0);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(KX_EXP_P1));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(KX_EXP_P2));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(KX_EXP_P3));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(KX_EXP_P4));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(KX_EXP_P5));
    p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), r);
    p = _mm512_add_ps(p, _mm512_set1_ps(1.0f));
    return _mm512_scalef_ps(p, n);
}

/* dotf of vecf.h (the atome template's KX_DOT8): lane l (of 8) sums
 * a[i]*b[i] over i = l mod 8 in order, the tail past the last full 8 goes to
 * lane 0, and the lanes combine as ((l0+l4)+(l1+l5)) + ((l2+l6)+(l3+l7)).
 * 256-bit vectors on both sets, multiply then add (no FMA). */
#define KX_DEF_DOT8(SFX_, TARGET_)                                                                      \
    static inline __attribute__((always_inline, target(TARGET_))) float kx_dot8_##SFX_(const float *a,   \
                                                                                       const float *b,   \
                                                                                       int n) {          \
        __m256 acc = _mm256_setzero_ps();                                                               \
        int i = 0;                                                                                      \
        for (; i + 8 <= n; i += 8)                                                                      \
            acc = _mm256_add_ps(acc, _mm256_mul_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i)));    \
        if (i < n) {                                                                                    \
            float l0 = _mm_cvtss_f32(_mm256_castps256_ps128(acc));                                      \
            for (; i < n; i++) l0 += a[i] * b[i];                                                       \
            acc = _mm256_blend_ps(acc, _mm256_castps128_ps256(_mm_set_ss(l0)), 1);                      \
        }                                                                                               \
        __m128 s = _mm_add_ps(_mm256_castps256_ps128(acc), _mm256_extractf128_ps(acc, 1));              \
        s = _mm_hadd_ps(s, s);                                                                          \
        return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));                                        \
    }
/* The same dot product, and y[i] += r * a[i] in the same pass (KX_DOT8_AXPY). */
#define KX_DEF_DOT8_AXPY(SFX_, TARGET_)                                                                 \
    static inline __attribute__((always_inline, target(TARGET_))) float kx_dot8_axpy_##SFX_(            \
        const float *a, const float *b, int n, float *y, float r) {                                     \
        __m256 acc = _mm256_setzero_ps();                                                               \
        const __m256 rv = _mm256_set1_ps(r);                                                            \
        int i = 0;                                                                                      \
        for (; i + 8 <= n; i += 8) {                                                                    \
            const __m256 av = _mm256_loadu_ps(a + i);                                                   \
            acc = _mm256_add_ps(acc, _mm256_mul_ps(av, _mm256_loadu_ps(b + i)));                        \
            _mm256_storeu_ps(y + i, _mm256_add_ps(_mm256_loadu_ps(y + i), _mm256_mul_ps(rv, av)));      \
        }                                                                                               \
        if (i < n) {                                                                                    \
            float l0 = _mm_cvtss_f32(_mm256_castps256_ps128(acc));                                      \
            for (; i < n; i++) { l0 += a[i] * b[i]; y[i] += r * a[i]; }                                 \
            acc = _mm256_blend_ps(acc, _mm256_castps128_ps256(_mm_set_ss(l0)), 1);                      \
        }                                                                                               \
        __m128 s = _mm_add_ps(_mm256_castps256_ps128(acc), _mm256_extractf128_ps(acc, 1));              \
        s = _mm_hadd_ps(s, s);                                                                          \
        return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));                                        \
    }
KX_DEF_DOT8(avx2, "avx2,fma")
KX_DEF_DOT8(avx512, "avx512f")
KX_DEF_DOT8_AXPY(avx2, "avx2,fma")
KX_DEF_DOT8_AXPY(avx512, "avx512f")
#undef KX_DEF_DOT8
#undef KX_DEF_DOT8_AXPY

/* Hooks of the layer templates shared by both sets: sqrt as one correctly
 * rounded instruction (same value as sqrtf, without the errno path that
 * would call libm for a negative argument), and the vzeroupper that ends
 * every entry point (kernels_x86_tmpl.h). */
#define KX_SQRT1(x) _mm_cvtss_f32(_mm_sqrt_ss(_mm_set_ss(x)))
#define KX_VZEROUPPER() _mm256_zeroupper()

/* ---------------------------------------------------------------- AVX2+FMA
 * 16 ymm registers: a tile of MR rows x NV vectors needs MR*NV accumulators
 * + NV B vectors + 1 broadcast; 6 x 2 (15 registers) is the classic shape. */
#define KX_ATTR __attribute__((target("avx2,fma")))
#define KX_SUFFIX avx2
#define KX_VL 8
#define KX_V __m256
#define KX_MASK __m256i
#define KX_ZERO() _mm256_setzero_ps()
#define KX_LOAD(p) _mm256_loadu_ps(p)
#define KX_LOADM(p, m) _mm256_maskload_ps((p), (m))
#define KX_STORE(p, v) _mm256_storeu_ps((p), (v))
#define KX_STOREM(p, m, v) _mm256_maskstore_ps((p), (m), (v))
#define KX_BCAST(p) _mm256_broadcast_ss(p)
#define KX_FMA(a, b, c) _mm256_fmadd_ps((a), (b), (c))
#define KX_ADD(a, b) _mm256_add_ps((a), (b))
/* lanes 0..n-1 set (n in 1..8) */
#define KX_TAILMASK(n) _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7))
#define KX_NVMAX 2
#define KX_MR1 8
#define KX_MR2 6
#define KX_MR3 4
#define KX_MR4 3
/* 256 x 16 floats = 16 KiB panel: stays in L1 next to the streamed rows. */
#define KX_KC 256
/* 128 rows: best measured for dw (docs/kernels.md); 1008-row slabs were up to 25% slower. */
#define KX_NSLAB 128
#define KX_SMALLN 4
#define KX_VI __m256i
#define KX_IOTA_TIMES(s) _mm256_mullo_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), _mm256_set1_epi32(s))
#define KX_GATHERM(p, idx, m) _mm256_mask_i32gather_ps(_mm256_setzero_ps(), (p), (idx), _mm256_castsi256_ps(m), 4)
#define KX_HSUM(v) kx_hsum_avx2(v)
static __attribute__((target("avx2,fma"))) inline float kx_hsum_avx2(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}
#include "kernels_x86_tmpl.h"
#define KX_SET1(x) _mm256_set1_ps(x)
#define KX_SUB(a, b) _mm256_sub_ps((a), (b))
#define KX_MUL(a, b) _mm256_mul_ps((a), (b))
#define KX_MAX(a, b) _mm256_max_ps((a), (b))
#define KX_MASKZ(m, v) _mm256_and_ps((v), _mm256_castsi256_ps(m))
#define KX_LOADM_OR(p, m, f) _mm256_blendv_ps((f), _mm256_maskload_ps((p), (m)), _mm256_castsi256_ps(m))
#define KX_HMAX(v) kx_hmax_avx2(v)
#define KX_GT_BITS(a, b) _mm256_movemask_ps(_mm256_cmp_ps((a), (b), _CMP_GT_OQ))
#define KX_EQ_BITS(a, b) _mm256_movemask_ps(_mm256_cmp_ps((a), (b), _CMP_EQ_OQ))
#define KX_NAN_BITS(a) _mm256_movemask_ps(_mm256_cmp_ps((a), (a), _CMP_UNORD_Q))
#define KX_SELECT(bits, v, f) _mm256_blendv_ps((f), (v), kx_bits_avx2(bits))
#define KX_EXP(v) kx_exp_avx2(v)
#define KX_DOT8(a, b, n) kx_dot8_avx2((a), (b), (n))
#define KX_DOT8_AXPY(a, b, n, y, r) kx_dot8_axpy_avx2((a), (b), (n), (y), (r))
#define KX_HSUMT(v) kx_hsum_avx2(v)
#define KX_DIV(a, b) _mm256_div_ps((a), (b))
#define KX_BM __m256
#define KX_BM_ZERO() _mm256_setzero_ps()
#define KX_BM_GT(a, b) _mm256_cmp_ps((a), (b), _CMP_GT_OQ)
#define KX_BM_NAN(a) _mm256_cmp_ps((a), (a), _CMP_UNORD_Q)
#define KX_BM_AND(x, y) _mm256_and_ps((x), (y))
#define KX_BM_OR(x, y) _mm256_or_ps((x), (y))
#define KX_BM_ANDNOT(x, y) _mm256_andnot_ps((x), (y))
#define KX_BM_BITS(x) ((unsigned)_mm256_movemask_ps(x))
#define KX_BM_FROM(bits) kx_bits_avx2(bits)
#define KX_BM_KEEP(m, v) _mm256_and_ps((v), (m))
#define KX_BLEND(m, a, b) _mm256_blendv_ps((a), (b), (m))
#define KX_SET1I(x) _mm256_set1_epi32(x)
#define KX_BLENDI(m, a, b) \
    _mm256_castps_si256(_mm256_blendv_ps(_mm256_castsi256_ps(a), _mm256_castsi256_ps(b), (m)))
#define KX_STOREI(p, v) _mm256_storeu_si256((__m256i *)(void *)(p), (v))
/* all-ones in lane l where bit l of bits is set */
static __attribute__((target("avx2,fma"))) inline __m256 kx_bits_avx2(unsigned bits) {
    const __m256i b = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
    return _mm256_castsi256_ps(_mm256_cmpeq_epi32(_mm256_and_si256(_mm256_set1_epi32((int)bits), b), b));
}
static __attribute__((target("avx2,fma"))) inline float kx_hmax_avx2(__m256 v) {
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}
#include "kernels_x86_layers_tmpl.h"
#include "kernels_x86_atome_tmpl.h"
#undef KX_SET1
#undef KX_SUB
#undef KX_MUL
#undef KX_MAX
#undef KX_MASKZ
#undef KX_LOADM_OR
#undef KX_HMAX
#undef KX_GT_BITS
#undef KX_SELECT
#undef KX_NAN_BITS
#undef KX_EQ_BITS
#undef KX_EXP
#undef KX_DOT8
#undef KX_DOT8_AXPY
#undef KX_HSUMT
#undef KX_STOREI
#undef KX_BLENDI
#undef KX_SET1I
#undef KX_BLEND
#undef KX_BM_KEEP
#undef KX_BM_FROM
#undef KX_BM_BITS
#undef KX_BM_ANDNOT
#undef KX_BM_OR
#undef KX_BM_AND
#undef KX_BM_NAN
#undef KX_BM_GT
#undef KX_BM_ZERO
#undef KX_BM
#undef KX_DIV
#undef KX_ATTR
#undef KX_SUFFIX
#undef KX_VL
#undef KX_V
#undef KX_MASK
#undef KX_ZERO
#undef KX_LOAD
#undef KX_LOADM
#undef KX_STORE
#undef KX_STOREM
#undef KX_BCAST
#undef KX_FMA
#undef KX_ADD
#undef KX_TAILMASK
#undef KX_NVMAX
#undef KX_MR1
#undef KX_MR2
#undef KX_MR3
#undef KX_MR4
#undef KX_KC
#undef KX_NSLAB
#undef KX_SMALLN
#undef KX_VI
#undef KX_IOTA_TIMES
#undef KX_GATHERM
#undef KX_HSUM

/* ----------------------------------------------------------------- AVX-512
 * 32 zmm registers: up to 24 accumulators + NV B vectors + 1 broadcast. */
#define KX_ATTR __attribute__((target("avx512f")))
#define KX_SUFFIX avx512
#define KX_VL 16
#define KX_V __m512
#define KX_MASK __mmask16
#define KX_ZERO() _mm512_setzero_ps()
#define KX_LOAD(p) _mm512_loadu_ps(p)
#define KX_LOADM(p, m) _mm512_maskz_loadu_ps((m), (p))
#define KX_STORE(p, v) _mm512_storeu_ps((p), (v))
#define KX_STOREM(p, m, v) _mm512_mask_storeu_ps((p), (m), (v))
#define KX_BCAST(p) _mm512_set1_ps(*(p))
#define KX_FMA(a, b, c) _mm512_fmadd_ps((a), (b), (c))
#define KX_ADD(a, b) _mm512_add_ps((a), (b))
/* lanes 0..n-1 set (n in 1..16) */
#define KX_TAILMASK(n) ((__mmask16)((1u << (n)) - 1u))
#define KX_NVMAX 4
#define KX_MR1 12
#define KX_MR2 12
#define KX_MR3 8
#define KX_MR4 6
/* 128 x 64 floats = 32 KiB panel (L1 is 48 KiB on current cores). */
#define KX_KC 128
#define KX_NSLAB 128
#define KX_SMALLN 4
#define KX_VI __m512i
#define KX_IOTA_TIMES(s) _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15), _mm512_set1_epi32(s))
#define KX_GATHERM(p, idx, m) _mm512_mask_i32gather_ps(_mm512_setzero_ps(), (m), (idx), (p), 4)
#define KX_HSUM(v) _mm512_reduce_add_ps(v)
#include "kernels_x86_tmpl.h"
#define KX_SET1(x) _mm512_set1_ps(x)
#define KX_SUB(a, b) _mm512_sub_ps((a), (b))
#define KX_MUL(a, b) _mm512_mul_ps((a), (b))
#define KX_MAX(a, b) _mm512_max_ps((a), (b))
#define KX_MASKZ(m, v) _mm512_maskz_mov_ps((m), (v))
#define KX_LOADM_OR(p, m, f) _mm512_mask_loadu_ps((f), (m), (p))
#define KX_HMAX(v) _mm512_reduce_max_ps(v)
#define KX_GT_BITS(a, b) _mm512_cmp_ps_mask((a), (b), _CMP_GT_OQ)
#define KX_EQ_BITS(a, b) _mm512_cmp_ps_mask((a), (b), _CMP_EQ_OQ)
#define KX_NAN_BITS(a) _mm512_cmp_ps_mask((a), (a), _CMP_UNORD_Q)
#define KX_SELECT(bits, v, f) _mm512_mask_mov_ps((f), (__mmask16)(bits), (v))
#define KX_EXP(v) kx_exp_avx512(v)
#define KX_DOT8(a, b, n) kx_dot8_avx512((a), (b), (n))
#define KX_DOT8_AXPY(a, b, n, y, r) kx_dot8_axpy_avx512((a), (b), (n), (y), (r))
/* ((l0+l4)+(l2+l6)) + ((l1+l5)+(l3+l7)) after l_i += l_{i+8}: the AVX2 tree
 * (kx_hsum_avx2) on the folded halves, written out so it cannot change. */
#define KX_HSUMT(v) kx_hsumt_avx512(v)
#define KX_DIV(a, b) _mm512_div_ps((a), (b))
#define KX_BM __mmask16
#define KX_BM_ZERO() ((__mmask16)0)
#define KX_BM_GT(a, b) _mm512_cmp_ps_mask((a), (b), _CMP_GT_OQ)
#define KX_BM_NAN(a) _mm512_cmp_ps_mask((a), (a), _CMP_UNORD_Q)
#define KX_BM_AND(x, y) _mm512_kand((x), (y))
#define KX_BM_OR(x, y) _mm512_kor((x), (y))
#define KX_BM_ANDNOT(x, y) _mm512_kandn((x), (y))
#define KX_BM_BITS(x) ((unsigned)(x))
#define KX_BM_FROM(bits) ((__mmask16)(bits))
#define KX_BM_KEEP(m, v) _mm512_maskz_mov_ps((m), (v))
#define KX_BLEND(m, a, b) _mm512_mask_blend_ps((m), (a), (b))
#define KX_SET1I(x) _mm512_set1_epi32(x)
#define KX_BLENDI(m, a, b) _mm512_mask_blend_epi32((m), (a), (b))
#define KX_STOREI(p, v) _mm512_storeu_si512((void *)(p), (v))
static __attribute__((target("avx512f"))) inline float kx_hsumt_avx512(__m512 v) {
    __m256 h = _mm256_add_ps(_mm512_castps512_ps256(v), _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}
#include "kernels_x86_layers_tmpl.h"
#include "kernels_x86_atome_tmpl.h"

#else
/* Not x86: the dispatcher never references these kernels. */
typedef int atm_kernels_x86_unused;
#endif
