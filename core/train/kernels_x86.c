/* core/train/kernels_x86.c — AVX2+FMA and AVX-512 matmul kernels (x86 only).
 *
 * Contract: atm_matmul_{forward,backward}_{avx2,avx512} compute what the _ref
 * functions of layers.h compute, up to float rounding (see kernels.h), for
 * any N, IC, OC. The file compiles without -march flags: each function
 * carries a target attribute, and kernels.c calls a set only after
 * __builtin_cpu_supports() has confirmed the CPU (and OS) support it. The
 * algorithm is written once in kernels_x86_tmpl.h and instantiated here per
 * instruction set with its vector width and register-tile shape. */
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#include <stddef.h>
#include "kernels.h"

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

#else
/* Not x86: the dispatcher never references these kernels. */
typedef int atm_kernels_x86_unused;
#endif
