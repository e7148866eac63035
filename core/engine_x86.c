/* core/engine_x86.c — x86-64 kernels of the integer engine: AVX2 and
 * AVX-512 (F, BW, VL, VNNI). Contract in engine_kernels.h: each function
 * returns exactly what its plain-C twin in engine.c returns, for any length.
 *
 * The file compiles without -march flags: every function carries a target
 * attribute, and engine.c calls a set only after atm_ek_x86_supported() has
 * confirmed that this CPU (and OS) run it. On every other target (Cortex-M,
 * wasm, non-x86 hosts) it compiles to nothing. Freestanding like the rest of
 * core/: no library calls, integers only.
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

#ifdef ATM_EK_X86
#include <immintrin.h>

#define ATTR_AVX2 __attribute__((target("avx2")))
#define ATTR_AVX512 __attribute__((target("avx2,avx512f,avx512bw,avx512vl,avx512vnni")))

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

/* entry 64 g + 16 p + i <- column 64 g + 4 i + p (0 past cols), over whole chunks */
static uint32_t chunked(uint32_t cols) { return (cols + 63u) & ~63u; }

void atm_ek_prep_avx2(const int16_t *x, uint32_t cols, atm_ek_vec *v) {
    const uint32_t n = chunked(cols);
    for (uint32_t g = 0; g < n; g += 64)
        for (uint32_t p = 0; p < 4; p++)
            for (uint32_t i = 0; i < 16; i++) {
                const uint32_t c = g + 4 * i + p;
                v->xd[g + 16 * p + i] = c < cols ? x[c] : 0;
            }
}

void atm_ek_prep_avx512(const int16_t *x, uint32_t cols, atm_ek_vec *v) {
    const uint32_t n = chunked(cols);
    int32_t hs = 0;
    for (uint32_t g = 0; g < n; g += 64)
        for (uint32_t p = 0; p < 4; p++)
            for (uint32_t i = 0; i < 16; i++) {
                const uint32_t c = g + 4 * i + p;
                const int32_t xv = c < cols ? x[c] : 0;
                const int32_t lo = xv & 255, hi = (xv - lo) / 256;    /* exact: xv - lo is a multiple of 256 */
                v->lo[g + 16 * p + i] = (uint8_t)lo;
                v->hi[g + 16 * p + i] = (int8_t)hi;
                hs += hi;
            }
    v->hsum = hs;
}

/* ---- AVX2 ---- */

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

static ATTR_AVX2 inline int32_t hsum_avx2(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
    return _mm_cvtsi128_si32(s);
}

ATTR_AVX2 void atm_ek_matvec_avx2(const uint8_t *b, uint32_t rows, uint32_t cols, const atm_ek_vec *v,
                                  int32_t *out) {
    const uint32_t nb = cols / 4, nfull = nb / 16, tail = nb % 16;
    for (uint32_t r = 0; r < rows; r++, b += nb) {
        __m256i acc = _mm256_setzero_si256();
        for (uint32_t g = 0; g < nfull; g++)
            acc = chunk_avx2(acc, _mm_loadu_si128((const __m128i *)(const void *)(b + 16 * g)), v->xd + 64 * g);
        if (tail) {
            uint8_t tmp[16] = { 0 };
            for (uint32_t i = 0; i < tail; i++) tmp[i] = b[16 * nfull + i];
            acc = chunk_avx2(acc, _mm_loadu_si128((const __m128i *)(const void *)tmp), v->xd + 64 * nfull);
        }
        out[r] = hsum_avx2(acc);
    }
}

/* out[j] = q . k_j: 8 keys at a time, their int32 partial vectors summed
 * by a hadd tree; 16-entry blocks of the query in registers, the rest of
 * each key (dh % 16) in scalar code. */
ATTR_AVX2 void atm_ek_dots_avx2(const int16_t *q, const int8_t *k, int dh, int n, int32_t *out) {
    const int nq = dh / 16, rest = dh - 16 * nq;
    int j = 0;
    if (nq > 0 && nq <= 4) {
        __m256i qv[4];
        for (int b = 0; b < nq; b++) qv[b] = _mm256_loadu_si256((const __m256i *)(const void *)(q + 16 * b));
        for (; j + 8 <= n; j += 8) {
            __m256i a[8];
            for (int u = 0; u < 8; u++) {
                const int8_t *kj = k + (size_t)(j + u) * (size_t)dh;
                __m256i s = _mm256_madd_epi16(qv[0], _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(const void *)kj)));
                for (int b = 1; b < nq; b++)
                    s = _mm256_add_epi32(s, _mm256_madd_epi16(qv[b],
                            _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(const void *)(kj + 16 * b)))));
                a[u] = s;
            }
            const __m256i h0 = _mm256_hadd_epi32(a[0], a[1]), h1 = _mm256_hadd_epi32(a[2], a[3]);
            const __m256i h2 = _mm256_hadd_epi32(a[4], a[5]), h3 = _mm256_hadd_epi32(a[6], a[7]);
            const __m256i g0 = _mm256_hadd_epi32(h0, h1), g1 = _mm256_hadd_epi32(h2, h3);
            __m256i s = _mm256_add_epi32(_mm256_permute2x128_si256(g0, g1, 0x20), _mm256_permute2x128_si256(g0, g1, 0x31));
            if (rest) {
                int32_t tail[8];
                for (int u = 0; u < 8; u++) {
                    const int8_t *kj = k + (size_t)(j + u) * (size_t)dh + 16 * nq;
                    int32_t t = 0;
                    for (int i = 0; i < rest; i++) t += q[16 * nq + i] * kj[i];
                    tail[u] = t;
                }
                s = _mm256_add_epi32(s, _mm256_loadu_si256((const __m256i *)(void *)tail));
            }
            _mm256_storeu_si256((__m256i *)(void *)(out + j), s);
        }
    }
    for (; j < n; j++) {
        const int8_t *kj = k + (size_t)j * (size_t)dh;
        int32_t t = 0;
        for (int i = 0; i < dh; i++) t += q[i] * kj[i];
        out[j] = t;
    }
}

/* out[c] = sum_i w[i] rows[i][c], 8 columns per vector (vpmulld: |w| may be 2^15) */
ATTR_AVX2 void atm_ek_mix_avx2(const int32_t *w, const int8_t *const *rows, int n, int d, int32_t *out) {
    int c = 0;
    for (; c + 8 <= d; c += 8) {
        __m256i acc = _mm256_setzero_si256();
        for (int i = 0; i < n; i++) {
            const __m256i r = _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(const void *)(rows[i] + c)));
            acc = _mm256_add_epi32(acc, _mm256_mullo_epi32(r, _mm256_set1_epi32(w[i])));
        }
        _mm256_storeu_si256((__m256i *)(void *)(out + c), acc);
    }
    for (; c < d; c++) {
        int32_t acc = 0;
        for (int i = 0; i < n; i++) acc += w[i] * rows[i][c];
        out[c] = acc;
    }
}

/* ---- AVX-512 VNNI ---- */

ATTR_AVX512 void atm_ek_matvec_avx512(const uint8_t *b, uint32_t rows, uint32_t cols, const atm_ek_vec *v,
                                      int32_t *out) {
    const uint32_t nb = cols / 4, nfull = nb / 16, tail = nb % 16;
    const __mmask16 tmask = (__mmask16)((1u << tail) - 1u);
    const __m512i shifts = _mm512_setr_epi64(0, 0, 0x0002000200020002LL, 0x0002000200020002LL,
                                             0x0004000400040004LL, 0x0004000400040004LL,
                                             0x0006000600060006LL, 0x0006000600060006LL);
    const __m512i m3 = _mm512_set1_epi8(3);
    const __m512i lut_t = _mm512_set1_epi32(-0x00FFFF00);   /* bytes 0, 1, 0, -1 (0xFF000100) */
    const __m512i lut_t1 = _mm512_set1_epi32(0x00010201);    /* bytes 1, 2, 1, 0: t + 1 */
    const __m512i *lo = (const __m512i *)(const void *)v->lo, *hi = (const __m512i *)(const void *)v->hi;
    const int32_t corr = 256 * v->hsum;
    for (uint32_t r = 0; r < rows; r++, b += nb) {
        __m512i alo = _mm512_setzero_si512(), ahi = _mm512_setzero_si512();
        for (uint32_t g = 0; g <= nfull; g++) {
            __m128i bytes;
            if (g < nfull) bytes = _mm_loadu_si128((const __m128i *)(const void *)(b + 16 * g));
            else if (tail) bytes = _mm_maskz_loadu_epi8(tmask, b + 16 * g);
            else break;
            const __m512i code = _mm512_and_si512(_mm512_srlv_epi16(_mm512_broadcast_i32x4(bytes), shifts), m3);
            alo = _mm512_dpbusd_epi32(alo, _mm512_loadu_si512(lo + g), _mm512_shuffle_epi8(lut_t, code));
            ahi = _mm512_dpbusd_epi32(ahi, _mm512_shuffle_epi8(lut_t1, code), _mm512_loadu_si512(hi + g));
        }
        out[r] = _mm512_reduce_add_epi32(_mm512_add_epi32(alo, _mm512_slli_epi32(ahi, 8))) - corr;
    }
}

#else
typedef int atm_engine_x86_unused;   /* ISO C: a translation unit needs a declaration */
#endif
