/* core/engine_x86.c — x86-64 kernels of the integer engine: SSE2, AVX2 and
 * AVX-512 (F, BW, VL, VNNI). Contract in engine_kernels.h: each function
 * returns exactly what its plain-C twin in engine_ref.c returns, for any
 * length.
 *
 * The file compiles without -march flags: every function carries a target
 * attribute, and engine_select.c picks a set only after
 * atm_ek_x86_supported() has confirmed that this CPU (and OS) run it. On
 * every other target (Cortex-M, wasm, non-x86 hosts) it compiles to
 * nothing. Freestanding like the rest of core/: no library calls, integers
 * only.
 *
 * The kernels with an AVX2 and an AVX-512 version (the row products, the
 * ATOME02 re-encoder, the elementwise kernels with 64-bit lanes, the
 * attention scores) are written once in engine_x86_tmpl.h and instantiated
 * here twice, each after its set's hooks; the rest are AVX2 only and serve
 * both sets.
 *
 * Ternary rows (ATOME01, cols % 4 == 0) are processed 64 columns (16 bytes)
 * at a time. The 16 bytes are broadcast to every 128-bit lane and lane p is
 * shifted right by 2p, so after masking with 3 byte i of lane p holds the
 * code of column 4 i + p; a byte shuffle maps codes to trits. The prepared
 * input (atm_ek_vec) stores the activations in the same order.
 *  - AVX2: trits widened to int16, vpmaddwd with the int16 activations.
 *  - AVX-512 VNNI: x = 256 hi + lo with lo unsigned and hi signed bytes;
 *    vpdpbusd(lo, t) sums t * lo exactly, vpdpbusd(t + 1, hi) sums
 *    (t + 1) * hi = t * hi + hi exactly, and the row result is
 *    sum t lo + 256 (sum (t + 1) hi - hsum). Every product and partial sum
 *    fits int32 (|row sum| <= 1024 * 32767 < 2^25), so nothing saturates or
 *    wraps and the total is the exact integer.
 * A row's last partial chunk (cols % 64 != 0) is read through a byte mask
 * (AVX-512) or copied into a zeroed 16-byte block (AVX2): missing bytes are
 * code 0, and the activations past cols are 0. */
#include "engine.h"
#include "engine_kernels.h"
#include "fixmath.h"

#ifdef ATM_T2_SIMD
#include <emmintrin.h>
/* x86-64 kernel for ATOME01 rows of a multiple of 64 columns (byte aligned):
 * the 16 bytes of a 64-trit chunk are split into the four code positions
 * (trit 4i + p sits in byte i, bits 2p..2p+1), each turned into 16 int8
 * trits (code 01 -> 1, 11 -> -1, else 0), widened to int16 and multiplied
 * with x deinterleaved the same way (xd[16 p + i] = x[4 i + p]). Integer
 * sums are exact, so the result equals the portable kernel's bit for bit
 * (tests/test_engine.c compares ATOME01 with ATOME02, which never takes
 * this path). */
static __m128i t2_codes(__m128i c, __m128i m3, __m128i one) {
    __m128i t = _mm_or_si128(_mm_and_si128(_mm_cmpeq_epi8(c, one), one), _mm_cmpeq_epi8(c, m3));
    return t;
}
static __m128i t2_madd(__m128i t, const int16_t *xd, __m128i acc) {
    const __m128i sg = _mm_cmpgt_epi8(_mm_setzero_si128(), t);
    acc = _mm_add_epi32(acc, _mm_madd_epi16(_mm_unpacklo_epi8(t, sg), _mm_loadu_si128((const __m128i *)xd)));
    return _mm_add_epi32(acc, _mm_madd_epi16(_mm_unpackhi_epi8(t, sg), _mm_loadu_si128((const __m128i *)(xd + 8))));
}
void atm_ek_matvec_sse2(const uint8_t *b, uint32_t rows, uint32_t cols, const int16_t *xd, int32_t *out) {
    const __m128i m3 = _mm_set1_epi8(3), one = _mm_set1_epi8(1);
    for (uint32_t r = 0; r < rows; r++) {
        __m128i acc = _mm_setzero_si128();
        for (uint32_t k = 0; k < cols; k += 64, b += 16) {
            const __m128i v = _mm_loadu_si128((const __m128i *)b);
            const int16_t *xk = xd + k;
            acc = t2_madd(t2_codes(_mm_and_si128(v, m3), m3, one), xk, acc);
            acc = t2_madd(t2_codes(_mm_and_si128(_mm_srli_epi16(v, 2), m3), m3, one), xk + 16, acc);
            acc = t2_madd(t2_codes(_mm_and_si128(_mm_srli_epi16(v, 4), m3), m3, one), xk + 32, acc);
            acc = t2_madd(t2_codes(_mm_and_si128(_mm_srli_epi16(v, 6), m3), m3, one), xk + 48, acc);
        }
        acc = _mm_add_epi32(acc, _mm_shuffle_epi32(acc, 0x4E));
        acc = _mm_add_epi32(acc, _mm_shuffle_epi32(acc, 0xB1));
        out[r] = _mm_cvtsi128_si32(acc);
    }
}
#endif

#ifdef ATM_EK_X86
#include <immintrin.h>

#define ATTR_AVX2 __attribute__((target("avx2")))
#define ATTR_AVX512 __attribute__((target("avx2,avx512f,avx512bw,avx512vl,avx512vnni")))
/* loops over the 8 rows / keys of a group must unroll fully so that their
 * accumulators live in registers */
#if defined(__clang__)
#define UNROLL8 _Pragma("clang loop unroll(full)")
#else
#define UNROLL8 _Pragma("GCC unroll 8")
#endif
#define LOADU(p) _mm256_loadu_si256((const __m256i *)(const void *)(p))
#define LOAD128(p) _mm_loadu_si128((const __m128i *)(const void *)(p))
#define LOAD256(p) _mm256_loadu_si256((const __m256i *)(const void *)(p))

static const int32_t XLIM = (1 << 30) - 1;   /* the residual / state clamp */


int atm_ek_x86_supported(int kernel) {
    __builtin_cpu_init();
    if (kernel == ATM_KERNEL_AVX2) return __builtin_cpu_supports("avx2") != 0;
    if (kernel == ATM_KERNEL_AVX512)
        return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("avx512f") &&
               __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
               __builtin_cpu_supports("avx512vnni");
    return 0;
}

/* ---- prepared input ---- */

/* Entry 64 g + 16 p + i <- column 64 g + 4 i + p. A whole chunk of 64
 * columns: within each 128-bit lane the words are grouped by p (a byte
 * shuffle), a 4 x 4 transpose of 32-bit pairs gathers each p, and a dword
 * permutation puts i in order; lo / hi are the bytes of the result
 * (packs are exact: lo in 0..255, hi in -128..127). A partial last chunk
 * (cols % 64) is filled in scalar code with zeros past cols. */
ATTR_AVX2 void atm_ek_prep_avx2(const int16_t *x, uint32_t cols, atm_ek_vec *v) {
    const __m256i grp = _mm256_setr_epi8(0, 1, 8, 9, 2, 3, 10, 11, 4, 5, 12, 13, 6, 7, 14, 15,
                                         0, 1, 8, 9, 2, 3, 10, 11, 4, 5, 12, 13, 6, 7, 14, 15);
    const __m256i ord = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    const __m256i m8 = _mm256_set1_epi16(0xFF), ones = _mm256_set1_epi16(1);
    __m256i hs = _mm256_setzero_si256();
    uint32_t g = 0;
    for (; g + 64 <= cols; g += 64) {
        __m256i y[4], f[4];
        for (int q = 0; q < 4; q++) y[q] = _mm256_shuffle_epi8(LOADU(x + g + 16 * q), grp);
        const __m256i a0 = _mm256_unpacklo_epi32(y[0], y[1]), a1 = _mm256_unpackhi_epi32(y[0], y[1]);
        const __m256i b0 = _mm256_unpacklo_epi32(y[2], y[3]), b1 = _mm256_unpackhi_epi32(y[2], y[3]);
        f[0] = _mm256_unpacklo_epi64(a0, b0); f[1] = _mm256_unpackhi_epi64(a0, b0);
        f[2] = _mm256_unpacklo_epi64(a1, b1); f[3] = _mm256_unpackhi_epi64(a1, b1);
        for (int p = 0; p < 4; p++) {
            f[p] = _mm256_permutevar8x32_epi32(f[p], ord);
            _mm256_storeu_si256((__m256i *)(void *)(v->xd + g + 16 * p), f[p]);
        }
        for (int h = 0; h < 2; h++) {
            const __m256i l = _mm256_packus_epi16(_mm256_and_si256(f[2 * h], m8), _mm256_and_si256(f[2 * h + 1], m8));
            const __m256i s0 = _mm256_srai_epi16(f[2 * h], 8), s1 = _mm256_srai_epi16(f[2 * h + 1], 8);
            _mm256_storeu_si256((__m256i *)(void *)(v->lo + g + 32 * h), _mm256_permute4x64_epi64(l, 0xD8));
            _mm256_storeu_si256((__m256i *)(void *)(v->hi + g + 32 * h),
                                _mm256_permute4x64_epi64(_mm256_packs_epi16(s0, s1), 0xD8));
            hs = _mm256_add_epi32(hs, _mm256_add_epi32(_mm256_madd_epi16(s0, ones), _mm256_madd_epi16(s1, ones)));
        }
    }
    int32_t t[8];
    _mm256_storeu_si256((__m256i *)(void *)t, hs);
    int32_t hsum = t[0] + t[1] + t[2] + t[3] + t[4] + t[5] + t[6] + t[7];
    if (g < cols)
        for (uint32_t p = 0; p < 4; p++)
            for (uint32_t i = 0; i < 16; i++) {
                const uint32_t c = g + 4 * i + p, e = g + 16 * p + i;
                const int32_t xv = c < cols ? x[c] : 0;
                const int32_t lo = xv & 255, hi = (xv - lo) / 256;    /* exact: xv - lo is a multiple of 256 */
                v->xd[e] = (int16_t)xv;
                v->lo[e] = (uint8_t)lo;
                v->hi[e] = (int8_t)hi;
                hsum += hi;
            }
    v->hsum = hsum;
}

/* ---- helpers of both sets ---- */

/* sums of the lanes of a[0..7]: lane u of the result is the sum of a[u]
 * (a hadd tree: 9 instructions for 8 vectors) */
static ATTR_AVX2 inline __m256i hsum8_avx2(const __m256i *a) {
    const __m256i h0 = _mm256_hadd_epi32(a[0], a[1]), h1 = _mm256_hadd_epi32(a[2], a[3]);
    const __m256i h2 = _mm256_hadd_epi32(a[4], a[5]), h3 = _mm256_hadd_epi32(a[6], a[7]);
    const __m256i g0 = _mm256_hadd_epi32(h0, h1), g1 = _mm256_hadd_epi32(h2, h3);
    return _mm256_add_epi32(_mm256_permute2x128_si256(g0, g1, 0x20), _mm256_permute2x128_si256(g0, g1, 0x31));
}

/* floor(v / 2^s), 1 <= s <= 63 (cnt = s, cntl = 64 - s) */
static ATTR_AVX2 inline __m256i sra64(__m256i v, __m128i cnt, __m128i cntl) {
    const __m256i sign = _mm256_cmpgt_epi64(_mm256_setzero_si256(), v);
    return _mm256_or_si256(_mm256_srl_epi64(v, cnt), _mm256_sll_epi64(sign, cntl));
}
static ATTR_AVX2 inline __m256i clamp64(__m256i v, __m256i lim) {
    const __m256i nlim = _mm256_sub_epi64(_mm256_setzero_si256(), lim);
    v = _mm256_blendv_epi8(v, lim, _mm256_cmpgt_epi64(v, lim));
    return _mm256_blendv_epi8(v, nlim, _mm256_cmpgt_epi64(nlim, v));
}
/* four int64 lanes holding int32 values -> four int32 */
static ATTR_AVX2 inline __m128i narrow64(__m256i v) {
    return _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(v, _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6)));
}
/* even / odd int32 lanes of v sign-extended to int64 */
static ATTR_AVX2 inline __m256i even64(__m256i v) { return _mm256_mul_epi32(v, _mm256_set1_epi64x(1)); }
static ATTR_AVX2 inline __m256i odd64(__m256i v) { return _mm256_mul_epi32(_mm256_srli_epi64(v, 32), _mm256_set1_epi64x(1)); }
/* int64 lanes of an even and an odd result (each fitting int32) -> eight int32 in order */
static ATTR_AVX2 inline __m256i join64(__m256i ev, __m256i od) {
    return _mm256_blend_epi32(ev, _mm256_slli_epi64(od, 32), 0xAA);
}
/* eight int32 in [-127, 127] -> eight int8 stored at p */
static ATTR_AVX2 inline void store8x8(int8_t *p, __m256i v) {
    const __m256i w = _mm256_packs_epi16(_mm256_packs_epi32(v, v), _mm256_setzero_si256());
    const __m256i b = _mm256_permutevar8x32_epi32(w, _mm256_setr_epi32(0, 4, 0, 4, 0, 4, 0, 4));
    _mm_storel_epi64((__m128i *)(void *)p, _mm256_castsi256_si128(b));
}
/* eight int32 in int16 range -> eight int16 stored at p */
static ATTR_AVX2 inline void store8x16(int16_t *p, __m256i v) {
    const __m256i w = _mm256_permute4x64_epi64(_mm256_packs_epi32(v, v), 0x08);
    _mm_storeu_si128((__m128i *)(void *)p, _mm256_castsi256_si128(w));
}

/* ATOME02 -> ATOME01: the ATOME01 codes of base-3 digit pairs */
#define C3V(d) ((d) == 0 ? 3 : ((d) == 1 ? 0 : 1))
#define T9V(l) (C3V((l) % 3) | C3V((l) / 3) << 2)

/* ---- AVX2: the template's hooks ----
 * Rows: trits widened to int16, vpmaddwd with the int16 activations xd;
 * 64-column rows: vpmaddubsw of the unsigned low bytes by t and of t + 1
 * by the signed high bytes (pairs of products: |t lo + t lo| <= 510,
 * |(t+1) hi + (t+1) hi| <= 512, no saturation; the four fields sum to at
 * most 2048 in int16), widened once per row pair, two rows per vector.
 * Elementwise: 64-bit lanes as the even and odd int32 lanes (vpmuldq:
 * signed 32 x 32 -> 64 of the low halves); AVX2 has no 64-bit arithmetic
 * right shift: it is the logical shift with the sign bits put back
 * (sra64). A row's last partial chunk is copied into a zeroed 16-byte
 * block; lengths not a multiple of 8 finish with the twin's formula. */

/* the 16 bytes of a chunk broadcast to both 128-bit lanes, shifted by 2p
 * per 32-bit lane group so that fields 0, 1 (low lane) and 2, 3 (high
 * lane) of byte i land in byte i of t01 / t23 */
static ATTR_AVX2 inline __m256i chunk_avx2(__m256i acc, __m128i bytes, const int16_t *xd) {
    const __m256i sh01 = _mm256_setr_epi32(0, 0, 0, 0, 2, 2, 2, 2);
    const __m256i sh23 = _mm256_setr_epi32(4, 4, 4, 4, 6, 6, 6, 6);
    const __m256i m3 = _mm256_set1_epi8(3);
    const __m256i lut = _mm256_setr_epi8(0, 1, 0, -1, 0, 1, 0, -1, 0, 1, 0, -1, 0, 1, 0, -1,
                                         0, 1, 0, -1, 0, 1, 0, -1, 0, 1, 0, -1, 0, 1, 0, -1);
    const __m256i w = _mm256_broadcastsi128_si256(bytes);
    const __m256i t01 = _mm256_shuffle_epi8(lut, _mm256_and_si256(_mm256_srlv_epi32(w, sh01), m3));
    const __m256i t23 = _mm256_shuffle_epi8(lut, _mm256_and_si256(_mm256_srlv_epi32(w, sh23), m3));
    const __m256i *xv = (const __m256i *)(const void *)xd;
    acc = _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_cvtepi8_epi16(_mm256_castsi256_si128(t01)),
                                                  _mm256_loadu_si256(xv)));
    acc = _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_cvtepi8_epi16(_mm256_extracti128_si256(t01, 1)),
                                                  _mm256_loadu_si256(xv + 1)));
    acc = _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_cvtepi8_epi16(_mm256_castsi256_si128(t23)),
                                                  _mm256_loadu_si256(xv + 2)));
    acc = _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_cvtepi8_epi16(_mm256_extracti128_si256(t23, 1)),
                                                  _mm256_loadu_si256(xv + 3)));
    return acc;
}
static ATTR_AVX2 inline __m128i tail_bytes_avx2(const uint8_t *p, uint32_t n) {
    uint8_t tmp[16] = { 0 };
    for (uint32_t i = 0; i < n; i++) tmp[i] = p[i];
    return LOAD128(tmp);
}
static ATTR_AVX2 inline void store_rows_avx2(int32_t *out, uint32_t m, __m256i s) {
    if (m == 8) { _mm256_storeu_si256((__m256i *)(void *)out, s); return; }
    int32_t r[8];
    _mm256_storeu_si256((__m256i *)(void *)r, s);
    for (uint32_t u = 0; u < m; u++) out[u] = r[u];
}
/* rows 2h, 2h + 1 of a group of m rows (16 bytes each): the dwords of missing rows are masked (not read) */
static ATTR_AVX2 inline __m256i load_rows_avx2(const uint8_t *g, uint32_t m, int h) {
    if (m == 8) return LOADU(g + 32 * h);
    const __m256i dw = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const int nd = 4 * ((int)m - 2 * h);
    return _mm256_maskload_epi32((const int *)(const void *)(g + 32 * h), _mm256_cmpgt_epi32(_mm256_set1_epi32(nd), dw));
}
/* the unsigned bytes of u times the signed bytes of s, pairs of products
 * summed into the int16 lanes of acc */
static ATTR_AVX2 inline __m256i dp_avx2(__m256i acc, __m256i u, __m256i s) {
    return _mm256_add_epi16(acc, _mm256_maddubs_epi16(u, s));
}
/* t lo sums (int16) + 256 x (t + 1) hi sums (int16) -> int32 */
static ATTR_AVX2 inline __m256i fin64_avx2(__m256i lo, __m256i hi) {
    return _mm256_add_epi32(_mm256_madd_epi16(lo, _mm256_set1_epi16(1)), _mm256_madd_epi16(hi, _mm256_set1_epi16(256)));
}
/* acc[h] = (row 2h | row 2h + 1) -> lane u = row u */
static ATTR_AVX2 inline __m256i reduce64_avx2(const __m256i *acc) {
    const __m256i ord = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    const __m256i g0 = _mm256_hadd_epi32(acc[0], acc[1]), g1 = _mm256_hadd_epi32(acc[2], acc[3]);
    return _mm256_permutevar8x32_epi32(_mm256_hadd_epi32(g0, g1), ord);
}
/* 10 bytes of each 128-bit lane: 20 bytes */
static ATTR_AVX2 inline void t5_store_avx2(uint8_t *out, __m256i by) {
    const __m128i r0 = _mm256_castsi256_si128(by), r1 = _mm256_extracti128_si256(by, 1);
    _mm_storeu_si128((__m128i *)(void *)out, _mm_or_si128(r0, _mm_slli_si128(r1, 10)));
    const uint32_t last = (uint32_t)_mm_cvtsi128_si32(_mm_srli_si128(r1, 6));
    out[16] = (uint8_t)last; out[17] = (uint8_t)(last >> 8); out[18] = (uint8_t)(last >> 16); out[19] = (uint8_t)(last >> 24);
}
/* eight int64 as the even and odd lanes; a shift count and its complement */
typedef struct { __m256i e, o; } l64_avx2;
typedef struct { __m128i c, cl; } sh_avx2;
static ATTR_AVX2 inline sh_avx2 shift_avx2(int s) {
    sh_avx2 r;
    r.c = _mm_cvtsi32_si128(s);
    r.cl = _mm_cvtsi32_si128(64 - s);
    return r;
}
static ATTR_AVX2 inline l64_avx2 l64_avx2_of(__m256i e, __m256i o) {
    l64_avx2 r;
    r.e = e;
    r.o = o;
    return r;
}
static ATTR_AVX2 inline l64_avx2 lmulb_avx2(__m256i a, __m256i m) {
    return l64_avx2_of(_mm256_mul_epi32(a, m), _mm256_mul_epi32(_mm256_srli_epi64(a, 32), m));
}
static ATTR_AVX2 inline l64_avx2 lmul_avx2(__m256i a, __m256i b) {
    return l64_avx2_of(_mm256_mul_epi32(a, b), _mm256_mul_epi32(_mm256_srli_epi64(a, 32), _mm256_srli_epi64(b, 32)));
}
static ATTR_AVX2 inline l64_avx2 lext_avx2(__m256i a) { return l64_avx2_of(even64(a), odd64(a)); }
static ATTR_AVX2 inline l64_avx2 ladd_avx2(l64_avx2 a, l64_avx2 b) {
    return l64_avx2_of(_mm256_add_epi64(a.e, b.e), _mm256_add_epi64(a.o, b.o));
}
static ATTR_AVX2 inline l64_avx2 laddb_avx2(l64_avx2 a, __m256i b) {
    return l64_avx2_of(_mm256_add_epi64(a.e, b), _mm256_add_epi64(a.o, b));
}
static ATTR_AVX2 inline l64_avx2 lsra_avx2(l64_avx2 a, sh_avx2 s) {
    return l64_avx2_of(sra64(a.e, s.c, s.cl), sra64(a.o, s.c, s.cl));
}
static ATTR_AVX2 inline l64_avx2 lsll_avx2(l64_avx2 a, __m128i c) {
    return l64_avx2_of(_mm256_sll_epi64(a.e, c), _mm256_sll_epi64(a.o, c));
}
static ATTR_AVX2 inline l64_avx2 lclamp_avx2(l64_avx2 a, __m256i lim) {
    return l64_avx2_of(clamp64(a.e, lim), clamp64(a.o, lim));
}
static ATTR_AVX2 inline void lst32_avx2(int32_t *p, l64_avx2 a) {
    _mm256_storeu_si256((__m256i *)(void *)p, join64(a.e, a.o));
}
static ATTR_AVX2 inline void lst16_avx2(int16_t *p, l64_avx2 a) { store8x16(p, join64(a.e, a.o)); }
/* four kexp bytes as 64-bit lanes */
static ATTR_AVX2 inline __m256i q_ldu8_avx2(const uint8_t *k) {
    const uint32_t k4 = (uint32_t)k[0] | (uint32_t)k[1] << 8 | (uint32_t)k[2] << 16 | (uint32_t)k[3] << 24;
    return _mm256_cvtepu8_epi64(_mm_cvtsi32_si128((int)k4));
}
static ATTR_AVX2 inline int q_bad_avx2(__m256i sv) {
    const __m256i out = _mm256_or_si256(_mm256_cmpgt_epi64(_mm256_set1_epi64x(1), sv),
                                        _mm256_cmpgt_epi64(sv, _mm256_set1_epi64x(62)));
    return !_mm256_testz_si256(out, _mm256_set1_epi64x(-1));
}
/* floor(v / 2^sv) per lane, 1 <= sv <= 62 */
static ATTR_AVX2 inline __m256i srav64_avx2(__m256i v, __m256i sv) {
    const __m256i sign = _mm256_cmpgt_epi64(_mm256_setzero_si256(), v);
    return _mm256_or_si256(_mm256_srlv_epi64(v, sv), _mm256_sllv_epi64(sign, _mm256_sub_epi64(_mm256_set1_epi64x(64), sv)));
}

#define EX_SUFFIX avx2
#define EX_ATTR ATTR_AVX2
#define EX_V __m256i
#define EX_ZERO _mm256_setzero_si256
#define EX_SET1_8 _mm256_set1_epi8
#define EX_SET1_16 _mm256_set1_epi16
#define EX_SET1_32 _mm256_set1_epi32
#define EX_SET1_64 _mm256_set1_epi64x
#define EX_BCAST128 _mm256_broadcastsi128_si256
#define EX_AND _mm256_and_si256
#define EX_OR _mm256_or_si256
#define EX_SUB16 _mm256_sub_epi16
#define EX_SLLI16 _mm256_slli_epi16
#define EX_SRLI16 _mm256_srli_epi16
#define EX_MULHI_U16 _mm256_mulhi_epu16
#define EX_MULLO16 _mm256_mullo_epi16
#define EX_SHUF8 _mm256_shuffle_epi8
#define EX_MADD16 _mm256_madd_epi16
#define EX_SLLI64 _mm256_slli_epi64
#define EX_SRLI64 _mm256_srli_epi64
#define EX_ADD64 _mm256_add_epi64
#define EX_SUB64 _mm256_sub_epi64
#define EX_SLLV64 _mm256_sllv_epi64
#define EX_MUL32 _mm256_mul_epi32
#define EX_RACC __m256i
#define EX_RACC_ZERO _mm256_setzero_si256
#define EX_CHUNK(a, bytes, v, g) chunk_avx2((a), (bytes), (v)->xd + 64 * (g))
#define EX_RACC_SUM(a) (a)
#define EX_TAIL_BYTES tail_bytes_avx2
#define EX_CORR(v) _mm256_setzero_si256()
#define EX_CORR64(v) _mm256_set1_epi32(256 * (v)->hsum)
#define EX_STORE_ROWS store_rows_avx2
#define EX_R64 2
#define EX_LOAD_ROWS load_rows_avx2
#define EX_DP dp_avx2
#define EX_FIN64 fin64_avx2
#define EX_REDUCE64 reduce64_avx2
#define EX_T5_BYTES 16
#define EX_LOAD_U8W(p) _mm256_cvtepu8_epi16(LOAD128(p))
#define EX_T5_VALID(b, bad, c) _mm256_andnot_si256(_mm256_cmpgt_epi16((b), (bad)), (c))
#define EX_T5_STORE t5_store_avx2
#define EX_T5_REST atm_ek_t5_to_t2_ref
#define EX_M8 int
#define EX_M8_ALL 0xFF
#define EX_TAIL_MASKED 0
#define EX_LD32(p, k) ((void)(k), LOADU(p))
#define EX_LD16(p, k) ((void)(k), _mm256_cvtepi16_epi32(LOAD128(p)))
#define EX_L l64_avx2
#define EX_LB __m256i
#define EX_SH sh_avx2
#define EX_LSET1 _mm256_set1_epi64x
#define EX_SHIFT shift_avx2
#define EX_LMULB lmulb_avx2
#define EX_LMUL lmul_avx2
#define EX_LEXT lext_avx2
#define EX_LADD ladd_avx2
#define EX_LADDB laddb_avx2
#define EX_LSRA lsra_avx2
#define EX_LSLL lsll_avx2
#define EX_LCLAMP lclamp_avx2
#define EX_LST32(p, k, a) ((void)(k), lst32_avx2((p), (a)))
#define EX_LST16(p, k, a) ((void)(k), lst16_avx2((p), (a)))
#define EX_QN 4
#define EX_Q_LDI32(p) _mm256_cvtepi32_epi64(LOAD128(p))
#define EX_Q_LDU8 q_ldu8_avx2
#define EX_Q_BAD q_bad_avx2
#define EX_SRAV64 srav64_avx2
#define EX_CLAMP64 clamp64
#define EX_Q_ST32(p, v) _mm_storeu_si128((__m128i *)(void *)(p), narrow64(v))
#include "engine_x86_tmpl.h"

/* ---- AVX-512 VNNI: the template's hooks ----
 * Rows: x = 256 hi + lo with lo unsigned and hi signed bytes;
 * vpdpbusd(lo, t) sums t * lo exactly, vpdpbusd(t + 1, hi) sums (t + 1) *
 * hi = t * hi + hi exactly, and the row result is sum t lo + 256 (sum (t +
 * 1) hi - hsum) (EX_CORR). Every product and partial sum fits int32 (|row
 * sum| <= 1024 * 32767 < 2^25), so nothing saturates or wraps. A chunk's
 * 16 bytes go to the four 128-bit lanes, lane p shifted by 2p; 64-column
 * rows: four rows per vector. Elementwise: native 64-bit arithmetic
 * shifts, min / max and narrowing stores; tails through masks. */

static ATTR_AVX512 inline __m512i clamp512(__m512i v, __m512i lim) {
    return _mm512_max_epi64(_mm512_min_epi64(v, lim), _mm512_sub_epi64(_mm512_setzero_si512(), lim));
}
/* int32 lanes: the sum of t lo + 256 x the sum of (t + 1) hi */
static ATTR_AVX512 inline __m512i fin64_avx512(__m512i lo, __m512i hi) {
    return _mm512_add_epi32(lo, _mm512_slli_epi32(hi, 8));
}
/* the trit codes of a chunk's 16 bytes: lane p holds field p */
static ATTR_AVX512 inline __m512i codes_avx512(__m128i bytes) {
    const __m512i shifts = _mm512_setr_epi64(0, 0, 0x0002000200020002LL, 0x0002000200020002LL,
                                             0x0004000400040004LL, 0x0004000400040004LL,
                                             0x0006000600060006LL, 0x0006000600060006LL);
    return _mm512_and_si512(_mm512_srlv_epi16(_mm512_broadcast_i32x4(bytes), shifts), _mm512_set1_epi8(3));
}
/* a row's eight int32 partial sums */
static ATTR_AVX512 inline __m256i sum_avx512(__m512i lo, __m512i hi) {
    const __m512i t = fin64_avx512(lo, hi);
    return _mm256_add_epi32(_mm512_castsi512_si256(t), _mm512_extracti64x4_epi64(t, 1));
}
/* rows 4h .. 4h + 3 of a group of m rows (16 bytes each), loads masked to the matrix */
static ATTR_AVX512 inline __m512i load_rows_avx512(const uint8_t *g, uint32_t m, int h) {
    const uint32_t first = 4 * (uint32_t)h;
    const uint32_t nr = first >= m ? 0 : (m - first < 4 ? m - first : 4);
    const __mmask64 mk = nr == 4 ? ~(__mmask64)0 : (((__mmask64)1 << (16 * nr)) - 1);
    return _mm512_maskz_loadu_epi8(mk, g + (size_t)first * 16);
}
/* per 128-bit lane: rows (lane, 4 + lane); sum each lane's 4 entries */
static ATTR_AVX512 inline __m256i reduce64_avx512(const __m512i *acc) {
    const __m512i pick = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 0, 0, 0, 0, 0, 0, 0, 0);
    const __m512i t = _mm512_add_epi32(_mm512_unpacklo_epi32(acc[0], acc[1]), _mm512_unpackhi_epi32(acc[0], acc[1]));
    const __m512i u = _mm512_add_epi32(t, _mm512_shuffle_epi32(t, (_MM_PERM_ENUM)0x4E));
    return _mm512_castsi512_si256(_mm512_permutexvar_epi32(pick, u));
}
/* 10 bytes of each 128-bit lane: 40 bytes */
static ATTR_AVX512 inline void t5_store_avx512(uint8_t *out, __m512i by) {
    _mm_mask_storeu_epi8(out, 0x3FF, _mm512_castsi512_si128(by));
    _mm_mask_storeu_epi8(out + 10, 0x3FF, _mm512_extracti32x4_epi32(by, 1));
    _mm_mask_storeu_epi8(out + 20, 0x3FF, _mm512_extracti32x4_epi32(by, 2));
    _mm_mask_storeu_epi8(out + 30, 0x3FF, _mm512_extracti32x4_epi32(by, 3));
}
static ATTR_AVX512 inline int q_bad_avx512(__m512i sv) {
    return (_mm512_cmplt_epi64_mask(sv, _mm512_set1_epi64(1)) | _mm512_cmpgt_epi64_mask(sv, _mm512_set1_epi64(62))) != 0;
}

#define EX_SUFFIX avx512
#define EX_ATTR ATTR_AVX512
#define EX_V __m512i
#define EX_ZERO _mm512_setzero_si512
#define EX_SET1_8 _mm512_set1_epi8
#define EX_SET1_16 _mm512_set1_epi16
#define EX_SET1_32 _mm512_set1_epi32
#define EX_SET1_64 _mm512_set1_epi64
#define EX_BCAST128 _mm512_broadcast_i32x4
#define EX_AND _mm512_and_si512
#define EX_OR _mm512_or_si512
#define EX_SUB16 _mm512_sub_epi16
#define EX_SLLI16 _mm512_slli_epi16
#define EX_SRLI16 _mm512_srli_epi16
#define EX_MULHI_U16 _mm512_mulhi_epu16
#define EX_MULLO16 _mm512_mullo_epi16
#define EX_SHUF8 _mm512_shuffle_epi8
#define EX_MADD16 _mm512_madd_epi16
#define EX_SLLI64 _mm512_slli_epi64
#define EX_SRLI64 _mm512_srli_epi64
#define EX_ADD64 _mm512_add_epi64
#define EX_SUB64 _mm512_sub_epi64
#define EX_SLLV64 _mm512_sllv_epi64
#define EX_MUL32 _mm512_mul_epi32
#define EX_RACC EX(acc2)
#define EX_RACC_ZERO EX(acc2_zero)
#define EX_CHUNK(a, bytes, v, g) \
    EX(dot2)((a), _mm512_loadu_si512((v)->lo + 64 * (g)), _mm512_loadu_si512((v)->hi + 64 * (g)), codes_avx512(bytes))
#define EX_RACC_SUM(a) sum_avx512((a).lo, (a).hi)
#define EX_TAIL_BYTES(p, n) _mm_maskz_loadu_epi8((__mmask16)((1u << (n)) - 1u), (p))
#define EX_CORR(v) _mm256_set1_epi32(256 * (v)->hsum)
#define EX_CORR64 EX_CORR
#define EX_STORE_ROWS(out, m, s) _mm256_mask_storeu_epi32((out), (__mmask8)((1u << (m)) - 1u), (s))
#define EX_R64 4
#define EX_LOAD_ROWS load_rows_avx512
#define EX_DP(acc, u, s) _mm512_dpbusd_epi32((acc), (u), (s))
#define EX_FIN64 fin64_avx512
#define EX_REDUCE64 reduce64_avx512
#define EX_T5_BYTES 32
#define EX_LOAD_U8W(p) _mm512_cvtepu8_epi16(LOAD256(p))
#define EX_T5_VALID(b, bad, c) _mm512_maskz_mov_epi16(_mm512_cmple_epu16_mask((b), (bad)), (c))
#define EX_T5_STORE t5_store_avx512
#define EX_T5_REST atm_ek_t5_to_t2_avx2
#define EX_M8 __mmask8
#define EX_M8_ALL ((__mmask8)0xFF)
#define EX_M8_FIRST(n) ((__mmask8)((1u << (n)) - 1u))
#define EX_TAIL_MASKED 1
#define EX_LD32(p, k) _mm256_maskz_loadu_epi32((k), (p))
#define EX_LD16(p, k) _mm256_cvtepi16_epi32(_mm_maskz_loadu_epi16((k), (p)))
#define EX_L __m512i
#define EX_LB __m512i
#define EX_SH __m128i
#define EX_LSET1 _mm512_set1_epi64
#define EX_SHIFT _mm_cvtsi32_si128
#define EX_LMULB(a, m) _mm512_mul_epi32(_mm512_cvtepi32_epi64(a), (m))
#define EX_LMUL(a, b) _mm512_mul_epi32(_mm512_cvtepi32_epi64(a), _mm512_cvtepi32_epi64(b))
#define EX_LEXT _mm512_cvtepi32_epi64
#define EX_LADD _mm512_add_epi64
#define EX_LADDB _mm512_add_epi64
#define EX_LSRA _mm512_sra_epi64
#define EX_LSLL _mm512_sll_epi64
#define EX_LCLAMP clamp512
#define EX_LST32 _mm512_mask_cvtepi64_storeu_epi32
#define EX_LST16 _mm512_mask_cvtepi64_storeu_epi16
#define EX_QN 8
#define EX_Q_LDI32(p) _mm512_cvtepi32_epi64(LOAD256(p))
#define EX_Q_LDU8(p) _mm512_cvtepu8_epi64(_mm_loadl_epi64((const __m128i *)(const void *)(p)))
#define EX_Q_BAD q_bad_avx512
#define EX_SRAV64 _mm512_srav_epi64
#define EX_CLAMP64 clamp512
#define EX_Q_ST32(p, v) _mm256_storeu_si256((__m256i *)(void *)(p), _mm512_cvtepi64_epi32(v))
#include "engine_x86_tmpl.h"

/* ---- AVX2 kernels of both sets ---- */



/* q . k over the 16-entry blocks of q (nq >= 1 of them), as a vector of
 * partial sums */
static ATTR_AVX2 inline __m256i key_dot(const int16_t *q, const int8_t *kj, int nq) {
    __m256i s = _mm256_madd_epi16(LOADU(q), _mm256_cvtepi8_epi16(LOAD128(kj)));
    for (int b = 1; b < nq; b++)
        s = _mm256_add_epi32(s, _mm256_madd_epi16(LOADU(q + 16 * b), _mm256_cvtepi8_epi16(LOAD128(kj + 16 * b))));
    return s;
}

/* out[j] = q . k_j: groups of 8 keys reduced together by hsum8, the keys
 * past the last whole group one by one; the rest of each key (dh % 16) in
 * scalar code. */
ATTR_AVX2 void atm_ek_dots_avx2(const int16_t *q, const int8_t *k, int dh, int n, int32_t *out) {
    const int nq = dh / 16, rest = dh - 16 * nq;
    int j = 0;
    if (nq > 0) {
        for (; j + 8 <= n; j += 8) {
            const int8_t *kj = k + (size_t)j * (size_t)dh;
            __m256i a[8];
            UNROLL8
            for (int u = 0; u < 8; u++) a[u] = key_dot(q, kj + (size_t)u * (size_t)dh, nq);
            __m256i s = hsum8_avx2(a);
            if (rest) {
                int32_t t[8];
                for (int u = 0; u < 8; u++) {
                    const int8_t *kr = kj + (size_t)u * (size_t)dh + 16 * nq;
                    int32_t r = 0;
                    for (int i = 0; i < rest; i++) r += q[16 * nq + i] * kr[i];
                    t[u] = r;
                }
                s = _mm256_add_epi32(s, LOADU(t));
            }
            _mm256_storeu_si256((__m256i *)(void *)(out + j), s);
        }
    }
    for (; j < n; j++) {
        const int8_t *kj = k + (size_t)j * (size_t)dh;
        int32_t r = 0;
        if (nq > 0) {
            const __m256i v = key_dot(q, kj, nq);
            __m128i h = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
            h = _mm_add_epi32(h, _mm_shuffle_epi32(h, 0x4E));
            h = _mm_add_epi32(h, _mm_shuffle_epi32(h, 0xB1));
            r = _mm_cvtsi128_si32(h);
        }
        for (int i = 16 * nq; i < dh; i++) r += q[i] * kj[i];
        out[j] = r;
    }
}

/* out[c] = sum_i w[i] rows[i][c], 8 columns per vector (vpmulld: |w| may be 2^15) */
ATTR_AVX2 void atm_ek_mix_avx2(const int32_t *w, const int32_t *idx, const int8_t *base, int n, int d,
                               int32_t *out) {
    int c = 0;
    for (; c + 8 <= d; c += 8) {
        __m256i acc = _mm256_setzero_si256();
        for (int i = 0; i < n; i++) {
            const __m256i r = _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(const void *)(base + (size_t)idx[i] * (size_t)d + c)));
            acc = _mm256_add_epi32(acc, _mm256_mullo_epi32(r, _mm256_set1_epi32(w[i])));
        }
        _mm256_storeu_si256((__m256i *)(void *)(out + c), acc);
    }
    for (; c < d; c++) {
        int32_t acc = 0;
        for (int i = 0; i < n; i++) acc += w[i] * base[(size_t)idx[i] * (size_t)d + (size_t)c];
        out[c] = acc;
    }
}

static ATTR_AVX2 inline uint32_t hmax_epu32(__m256i v) {
    __m128i m = _mm_max_epu32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    m = _mm_max_epu32(m, _mm_shuffle_epi32(m, 0x4E));
    m = _mm_max_epu32(m, _mm_shuffle_epi32(m, 0xB1));
    return (uint32_t)_mm_cvtsi128_si32(m);
}

/* dst[i] = clamp((src[i] + half) >> sh, +-127) for eight int32 */
static ATTR_AVX2 inline __m256i q8(__m256i v, __m256i half, __m128i cnt) {
    v = _mm256_sra_epi32(_mm256_add_epi32(v, half), cnt);
    return _mm256_max_epi32(_mm256_min_epi32(v, _mm256_set1_epi32(127)), _mm256_set1_epi32(-127));
}

ATTR_AVX2 uint8_t atm_ek_quant32_avx2(const int32_t *src, int n, int8_t *dst) {
    __m256i vm = _mm256_setzero_si256();
    int i = 0;
    for (; i + 8 <= n; i += 8) vm = _mm256_max_epu32(vm, _mm256_abs_epi32(LOADU(src + i)));
    uint32_t mx = hmax_epu32(vm);
    for (; i < n; i++) { const uint32_t a = src[i] < 0 ? 0u - (uint32_t)src[i] : (uint32_t)src[i]; if (a > mx) mx = a; }
    const int sh = atm_fit_shift(mx, 127);
    const int32_t half = (int32_t)(((uint32_t)1 << sh) >> 1);
    const __m256i H = _mm256_set1_epi32(half);
    const __m128i cnt = _mm_cvtsi32_si128(sh);
    for (i = 0; i + 8 <= n; i += 8) store8x8(dst + i, q8(LOADU(src + i), H, cnt));
    for (; i < n; i++) dst[i] = (int8_t)atm_clamp32((src[i] + half) >> sh, 127);
    return (uint8_t)sh;
}

ATTR_AVX2 uint8_t atm_ek_quant16_avx2(const int16_t *src, int n, int8_t *dst) {
    __m256i vm = _mm256_setzero_si256();
    int i = 0;
    for (; i + 16 <= n; i += 16) vm = _mm256_max_epu16(vm, _mm256_abs_epi16(LOADU(src + i)));
    vm = _mm256_max_epu32(_mm256_and_si256(vm, _mm256_set1_epi32(0xFFFF)), _mm256_srli_epi32(vm, 16));
    uint32_t mx = hmax_epu32(vm);
    for (; i < n; i++) { const uint32_t a = (uint32_t)(src[i] < 0 ? -src[i] : src[i]); if (a > mx) mx = a; }
    const int sh = atm_fit_shift(mx, 127);
    const int32_t half = (1 << sh) >> 1;
    const __m256i H = _mm256_set1_epi32(half);
    const __m128i cnt = _mm_cvtsi32_si128(sh);
    for (i = 0; i + 8 <= n; i += 8) store8x8(dst + i, q8(_mm256_cvtepi16_epi32(LOAD128(src + i)), H, cnt));
    for (; i < n; i++) dst[i] = (int8_t)atm_clamp32((src[i] + half) >> sh, 127);
    return (uint8_t)sh;
}

ATTR_AVX2 void atm_ek_ln_stats_avx2(const int32_t *x, int d, int64_t *sum, int32_t *lo, int32_t *hi) {
    __m256i s = _mm256_setzero_si256(), mn = _mm256_set1_epi32(x[0]), mxv = mn;
    int i = 0;
    for (; i + 8 <= d; i += 8) {
        const __m256i v = LOADU(x + i);
        s = _mm256_add_epi64(s, _mm256_add_epi64(_mm256_cvtepi32_epi64(_mm256_castsi256_si128(v)),
                                                 _mm256_cvtepi32_epi64(_mm256_extracti128_si256(v, 1))));
        mn = _mm256_min_epi32(mn, v);
        mxv = _mm256_max_epi32(mxv, v);
    }
    int64_t t[4];
    int32_t a[8], b[8];
    _mm256_storeu_si256((__m256i *)(void *)t, s);
    _mm256_storeu_si256((__m256i *)(void *)a, mn);
    _mm256_storeu_si256((__m256i *)(void *)b, mxv);
    int64_t sm = t[0] + t[1] + t[2] + t[3];
    int32_t l = a[0], h = b[0];
    for (int k = 1; k < 8; k++) { l = a[k] < l ? a[k] : l; h = b[k] > h ? b[k] : h; }
    for (; i < d; i++) { sm += x[i]; l = x[i] < l ? x[i] : l; h = x[i] > h ? x[i] : h; }
    *sum = sm; *lo = l; *hi = h;
}

ATTR_AVX2 int64_t atm_ek_ln_center_avx2(const int32_t *x, int d, int32_t mean, int k, int16_t *u) {
    const __m256i M = _mm256_set1_epi32(mean);
    const __m128i cnt = _mm_cvtsi32_si128(k > 0 ? k : -k);
    __m256i acc = _mm256_setzero_si256();
    int i = 0;
    for (; i + 16 <= d; i += 16) {
        __m256i y0 = _mm256_sub_epi32(LOADU(x + i), M), y1 = _mm256_sub_epi32(LOADU(x + i + 8), M);
        if (k > 0) { y0 = _mm256_sra_epi32(y0, cnt); y1 = _mm256_sra_epi32(y1, cnt); }
        else { y0 = _mm256_sll_epi32(y0, cnt); y1 = _mm256_sll_epi32(y1, cnt); }
        /* -2^15 <= y < 2^15: the saturating pack is exact; a pair of squares
         * is at most 2^31 (two y = -2^15), so it is read as unsigned */
        const __m256i y = _mm256_permute4x64_epi64(_mm256_packs_epi32(y0, y1), 0xD8);
        _mm256_storeu_si256((__m256i *)(void *)(u + i), y);
        const __m256i q = _mm256_madd_epi16(y, y);
        acc = _mm256_add_epi64(acc, _mm256_add_epi64(_mm256_cvtepu32_epi64(_mm256_castsi256_si128(q)),
                                                     _mm256_cvtepu32_epi64(_mm256_extracti128_si256(q, 1))));
    }
    int64_t t[4];
    _mm256_storeu_si256((__m256i *)(void *)t, acc);
    int64_t vs = t[0] + t[1] + t[2] + t[3];
    for (; i < d; i++) {
        const int32_t y = k > 0 ? (x[i] - mean) >> k : (x[i] - mean) * ((int32_t)1 << -k);
        u[i] = (int16_t)y;
        vs += (int64_t)y * y;
    }
    return vs;
}

/* conv taps for K = 5, channels [0, nc - nc % 8): the two words of eight
 * channels' taps (taps 0-3 in one, tap 4 in the low byte of the other)
 * from four 16-byte loads 10 bytes apart and byte shuffles, without
 * gathers (their latency was most of this kernel); reads up to t[5 nc + 5];
 * returns the channels done */
static ATTR_AVX2 int conv5_avx2(const int8_t *t, int nc, const int16_t *u, const int8_t *const *rp,
                                const __m128i *sh, int taps, int32_t *acc) {
    const __m128i a_lo = _mm_setr_epi8(0, 1, 2, 3, 5, 6, 7, 8, -1, -1, -1, -1, -1, -1, -1, -1);
    const __m128i a_hi = _mm_setr_epi8(-1, -1, -1, -1, -1, -1, -1, -1, 0, 1, 2, 3, 5, 6, 7, 8);
    const __m128i b_lo = _mm_setr_epi8(4, -1, -1, -1, 9, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
    const __m128i b_hi = _mm_setr_epi8(-1, -1, -1, -1, -1, -1, -1, -1, 4, -1, -1, -1, 9, -1, -1, -1);
    int c = 0;
    for (; c + 8 <= nc; c += 8) {
        const int8_t *p = t + 5 * c;
        const __m128i L0 = LOAD128(p), L1 = LOAD128(p + 10), L2 = LOAD128(p + 20), L3 = LOAD128(p + 30);
        const __m256i w = _mm256_set_m128i(_mm_or_si128(_mm_shuffle_epi8(L2, a_lo), _mm_shuffle_epi8(L3, a_hi)),
                                           _mm_or_si128(_mm_shuffle_epi8(L0, a_lo), _mm_shuffle_epi8(L1, a_hi)));
        __m256i a = _mm256_sign_epi32(_mm256_cvtepi16_epi32(LOAD128(u + c)), _mm256_srai_epi32(_mm256_slli_epi32(w, 24), 24));
        for (int j = 1; j < taps && j < 4; j++) {
            const __m256i tj = _mm256_srai_epi32(_mm256_sll_epi32(w, _mm_cvtsi32_si128(24 - 8 * j)), 24);
            const __m256i v = _mm256_sll_epi32(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(const void *)(rp[j] + c))),
                                               sh[j]);
            a = _mm256_add_epi32(a, _mm256_sign_epi32(v, tj));
        }
        if (taps == 5) {
            const __m256i w4 = _mm256_set_m128i(_mm_or_si128(_mm_shuffle_epi8(L2, b_lo), _mm_shuffle_epi8(L3, b_hi)),
                                                _mm_or_si128(_mm_shuffle_epi8(L0, b_lo), _mm_shuffle_epi8(L1, b_hi)));
            const __m256i t4 = _mm256_srai_epi32(_mm256_slli_epi32(w4, 24), 24);
            const __m256i v = _mm256_sll_epi32(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(const void *)(rp[4] + c))),
                                               sh[4]);
            a = _mm256_add_epi32(a, _mm256_sign_epi32(v, t4));
        }
        _mm256_storeu_si256((__m256i *)(void *)(acc + c), a);
    }
    return c;
}

ATTR_AVX2 void atm_ek_conv_avx2(const int8_t *t, int K, int nc, const int16_t *u, const int8_t *ring, int ld,
                                const uint8_t *rexp, int next, int kh, int taps, int32_t *acc) {
    const int8_t *rp[ATM_MAX_KERNEL];
    __m128i sh[ATM_MAX_KERNEL];
    int slot = next;
    for (int j = 1; j < taps; j++) {
        slot = slot == 0 ? kh - 1 : slot - 1;
        rp[j] = ring + (size_t)slot * (size_t)ld;
        sh[j] = _mm_cvtsi32_si128(rexp[slot]);
    }
    const __m256i lane = _mm256_mullo_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), _mm256_set1_epi32(K));
    int c = K == 5 ? conv5_avx2(t, nc, u, rp, sh, taps, acc) : 0;
    for (; c + 8 <= nc; c += 8) {
        const __m256i base = _mm256_add_epi32(lane, _mm256_set1_epi32(c * K));
        /* one gather brings four taps of each channel (its word's bytes) */
        __m256i w = _mm256_i32gather_epi32((const int *)(const void *)t, base, 1);
        __m256i a = _mm256_sign_epi32(_mm256_cvtepi16_epi32(LOAD128(u + c)), _mm256_srai_epi32(_mm256_slli_epi32(w, 24), 24));
        for (int j = 1; j < taps; j++) {
            if ((j & 3) == 0) w = _mm256_i32gather_epi32((const int *)(const void *)t, _mm256_add_epi32(base, _mm256_set1_epi32(j)), 1);
            const __m256i tj = _mm256_srai_epi32(_mm256_sll_epi32(w, _mm_cvtsi32_si128(24 - 8 * (j & 3))), 24);
            const __m256i v = _mm256_sll_epi32(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(const void *)(rp[j] + c))),
                                               sh[j]);
            a = _mm256_add_epi32(a, _mm256_sign_epi32(v, tj));
        }
        _mm256_storeu_si256((__m256i *)(void *)(acc + c), a);
    }
    for (; c < nc; c++) {
        int32_t a = t[c * K] * u[c];
        for (int j = 1; j < taps; j++) a += t[c * K + j] * (rp[j][c] * (1 << _mm_cvtsi128_si32(sh[j])));
        acc[c] = a;
    }
}

/* ---- attention's kept set ----
 * atm_ek_topk_set's outputs (the k best of sc[0, n) by score, older first,
 * in position order) for n <= 64 with few data-dependent branches (the
 * insertion and the selection mispredict on most candidates): the k-th
 * highest score T by taking the maximum of the window's vectors and
 * masking its copies out until k are counted, then the positions above T
 * and the oldest of those equal to T, from compare masks. Scores of
 * INT32_MIN (the pad and mask value) are refused: the engine's are clamped
 * to +-(2^30 - 1). */
__attribute__((target("avx2,popcnt,bmi"))) int atm_ek_topk_avx2(const int32_t *sc, int n, int k, int32_t *sel_s, int32_t *sel_t) {
    if (n < 1 || n > 64 || k < 1 || k > n) return -1;
    int32_t buf[64];
    int minval = 0;
    for (int i = 0; i < 64; i++) {
        buf[i] = i < n ? sc[i] : INT32_MIN;
        minval |= i < n && sc[i] == INT32_MIN;
    }
    if (minval) return -1;
    const int nv = (n + 7) >> 3;
    const __m256i lo = _mm256_set1_epi32(INT32_MIN);
    __m256i v[8], w[8];
    for (int q = 0; q < 8; q++) w[q] = v[q] = q < nv ? LOADU(buf + 8 * q) : lo;
    int left = k;
    __m256i t;
    for (;;) {
        __m256i m = w[0];
        for (int q = 1; q < nv; q++) m = _mm256_max_epi32(m, w[q]);
        m = _mm256_max_epi32(m, _mm256_permute2x128_si256(m, m, 1));
        m = _mm256_max_epi32(m, _mm256_shuffle_epi32(m, 0x4E));
        m = _mm256_max_epi32(m, _mm256_shuffle_epi32(m, 0xB1));
        int c = 0;
        for (int q = 0; q < nv; q++) {
            const __m256i e = _mm256_cmpeq_epi32(w[q], m);
            c += __builtin_popcount((unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(e)));
            w[q] = _mm256_blendv_epi8(w[q], lo, e);
        }
        if (c >= left) { t = m; break; }
        left -= c;
    }
    uint64_t gt = 0, eq = 0;
    for (int q = 0; q < nv; q++) {
        gt |= (uint64_t)(uint32_t)_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpgt_epi32(v[q], t))) << (8 * q);
        eq |= (uint64_t)(uint32_t)_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(v[q], t))) << (8 * q);
    }
    for (int j = 0; j < left; j++) { gt |= eq & (0 - eq); eq &= eq - 1; }   /* the oldest `left` equal to T */
    int cnt = 0;
    while (gt) {
        const int i = __builtin_ctzll(gt);
        gt &= gt - 1;
        sel_s[cnt] = buf[i];
        sel_t[cnt++] = i;
    }
    return 0;
}

/* ---- softmax ----
 * atm_ek_softmax_q15 with atm_exp_q16 four lanes at a time (fixmath.c's
 * steps on 64-bit lanes: _mm256_mul_epi32 is its 32 x 32 -> 64 product; an
 * arithmetic shift whose result fits 32 bits has the same low word as a
 * logical one, which AVX2 has; the final shift is per lane). The exact
 * integers of the twin. */
static ATTR_AVX2 __m256i exp_q16_x4(__m256i x) {            /* x: int32 in each 64-bit lane's low word */
    const __m256i y = _mm256_mul_epi32(x, _mm256_set1_epi64x(ATM_LOG2E_Q30));
    const __m256i n = _mm256_sub_epi64(_mm256_srli_epi64(y, 46), _mm256_set1_epi64x((int64_t)1 << 18));   /* floor(y / 2^46), y < 0 */
    const __m256i g = _mm256_sub_epi64(_mm256_and_si256(_mm256_srli_epi64(y, 16), _mm256_set1_epi64x(0x3FFFFFFF)),
                                       _mm256_set1_epi64x((int64_t)1 << 29));
    const __m256i half = _mm256_set1_epi64x((int64_t)1 << 29);
    __m256i p = _mm256_set1_epi64x(atm_exp2_c[7]);
    for (int k = 6; k >= 0; k--)
        p = _mm256_add_epi32(_mm256_srli_epi64(_mm256_add_epi64(_mm256_mul_epi32(p, g), half), 30), _mm256_set1_epi64x(atm_exp2_c[k]));
    const __m256i v = _mm256_srli_epi64(_mm256_add_epi64(_mm256_mul_epi32(p, _mm256_set1_epi64x(ATM_SQRT2_Q30)), half), 30);
    const __m256i sh = _mm256_sub_epi64(_mm256_set1_epi64x(6), n);                                      /* >= 7 */
    const __m256i hs = _mm256_sllv_epi64(_mm256_set1_epi64x(1), _mm256_sub_epi64(sh, _mm256_set1_epi64x(1)));
    __m256i r = _mm256_srlv_epi64(_mm256_add_epi64(v, hs), sh);
    const __m256i xs = _mm256_srai_epi32(_mm256_slli_epi64(x, 32), 31);                                   /* x's sign, high words */
    const __m256i neg = _mm256_shuffle_epi32(xs, 0xF5);                                                   /* x < 0, whole lane */
    const __m256i zero = _mm256_cmpgt_epi64(_mm256_set1_epi64x(-26), n);                                  /* n < -26 */
    r = _mm256_andnot_si256(zero, r);
    return _mm256_blendv_epi8(_mm256_set1_epi64x((int64_t)1 << 24), r, neg);
}
ATTR_AVX2 void atm_ek_softmax_avx2(const int32_t *z, int n, int32_t *p, uint32_t *e) {
    int32_t mx = z[0];
    for (int i = 1; i < n; i++) if (z[i] > mx) mx = z[i];
    /* z - mx in 64-bit lanes, saturated at -(2^31 - 1) as atm_sat32; the
     * exponentials' low words to e and their sum in four 64-bit lanes */
    const __m256i M = _mm256_set1_epi64x(mx), LIM = _mm256_set1_epi64x(-(int64_t)INT32_MAX);
    const __m256i LOW = _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6);
    __m256i S = _mm256_setzero_si256();
    int i = 0;
    for (; i + 4 <= n; i += 4) {
        __m256i x = _mm256_sub_epi64(_mm256_cvtepi32_epi64(LOAD128(z + i)), M);
        x = _mm256_blendv_epi8(x, LIM, _mm256_cmpgt_epi64(LIM, x));
        const __m256i r = exp_q16_x4(x);
        S = _mm256_add_epi64(S, r);
        _mm_storeu_si128((__m128i *)(void *)(e + i), _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(r, LOW)));
    }
    uint64_t s4[4];
    _mm256_storeu_si256((__m256i *)(void *)s4, S);
    uint64_t sum = s4[0] + s4[1] + s4[2] + s4[3];
    if (i < n) {                               /* the last 1-3 in one vector, lanes past n at x = 0 */
        int64_t xs[4] = { 0, 0, 0, 0 };
        for (int k = 0; i + k < n; k++) xs[k] = atm_sat32((int64_t)z[i + k] - mx);
        uint64_t r[4];
        _mm256_storeu_si256((__m256i *)(void *)r, exp_q16_x4(_mm256_loadu_si256((const __m256i *)(const void *)xs)));
        for (int k = 0; i + k < n; k++) { e[i + k] = (uint32_t)r[k]; sum += r[k]; }
    }
    const int ns = atm_bitlen64(sum) - 16;
    const uint32_t r = 0x7FFFFFFFu / (uint32_t)(sum >> ns);
    /* e r >> (16 + ns) from 32-bit products, eight at a time: (e >> 16) r
     * < 2^24, (e & 0xFFFF) r < 2^32 (its low word is the whole product) */
    const __m256i R = _mm256_set1_epi32((int)r), MASK = _mm256_set1_epi32(0xFFFF);
    const __m128i NS = _mm_cvtsi32_si128(ns);
    for (i = 0; i + 8 <= n; i += 8) {
        const __m256i ev = _mm256_loadu_si256((const __m256i *)(const void *)(e + i));
        const __m256i hi = _mm256_mullo_epi32(_mm256_srli_epi32(ev, 16), R);
        const __m256i lo = _mm256_srli_epi32(_mm256_mullo_epi32(_mm256_and_si256(ev, MASK), R), 16);
        _mm256_storeu_si256((__m256i *)(void *)(p + i), _mm256_srl_epi32(_mm256_add_epi32(hi, lo), NS));
    }
    for (; i < n; i++)
        p[i] = (int32_t)(((e[i] >> 16) * r + (((e[i] & 0xFFFFu) * r) >> 16)) >> ns);
}

#else
typedef int atm_engine_x86_unused;   /* ISO C: a translation unit needs a declaration */
#endif
