/* core/engine_select.c — which kernels a step of the integer engine runs:
 * the kernel sets (engine_select.h's atm_kset, the one dispatch table), the
 * choice among them (the forced kernel, else the best this build and CPU
 * have that fits the model), the preparation of a product's input for its
 * row kernel and the ternary products themselves (atm_matvec), the byte
 * tables and the bit-plane offset stream (engine.h). The model's step is in
 * core/engine.c; the plain-C kernels in core/engine_ref.c; the instruction-
 * set kernels in core/engine_x86.c, engine_wasm.c, engine_m0.c / .S,
 * engine_m3.c / .S and engine_arm.S. All bit-identical (docs/fixed-point.md
 * §9). Freestanding: integers only. */
#include "engine_select.h"
#include "fixmath.h"

#define CH ATM_EK_CH
#define BUF ATM_EK_BUF
#define DECODE_BUF ATM_EK_DECODE_BUF
#define PLANE_COLS ATM_PLANE_COLS


/* ---- trit decoding -------------------------------------------------------
 * Rows are decoded in chunks of up to CH trits into a small stack buffer and
 * then dotted with int16 activations. ATOME01 bytes map through T2 (4 trits
 * per byte), ATOME02 bytes through T5 (5 trits per byte); a chunk may start
 * at any trit (rows are not byte aligned in general) so the buffer holds the
 * whole first and last bytes: CH + 8 entries cover skip (<= 4) + CH + the
 * tail of the last byte (<= 4). The tables hold 0 for codes that validation
 * rejects (ATOME01 code 10, ATOME02 bytes 243..255). */
#define C2(b) ((((b) & 3) == 1) ? 1 : ((((b) & 3) == 3) ? -1 : 0))
#define T2ROW(b) { C2(b), C2((b) >> 2), C2((b) >> 4), C2((b) >> 6) }
#define D5(b, p) ((b) < 243 ? (((b) / (p)) % 3) - 1 : 0)
#define T5ROW(b) { D5(b, 1), D5(b, 3), D5(b, 9), D5(b, 27), D5(b, 81), 0, 0, 0 }
#define REP4(R, b) R(b), R((b) + 1), R((b) + 2), R((b) + 3)
#define REP16(R, b) REP4(R, b), REP4(R, (b) + 4), REP4(R, (b) + 8), REP4(R, (b) + 12)
#define REP64(R, b) REP16(R, b), REP16(R, (b) + 16), REP16(R, (b) + 32), REP16(R, (b) + 48)
#define REP256(R) REP64(R, 0), REP64(R, 64), REP64(R, 128), REP64(R, 192)
static const int8_t T2[256][4] = { REP256(T2ROW) };
/* the same 4 trits as the bytes of one word (byte k = trit k as uint8) */
#define U8(t) ((uint32_t)(uint8_t)(int8_t)(t))
#define T2WORD(b) (U8(C2(b)) | U8(C2((b) >> 2)) << 8 | U8(C2((b) >> 4)) << 16 | U8(C2((b) >> 6)) << 24)
static const uint32_t T2W[256] = { REP256(T2WORD) };
/* 8 entries per row (5 used) so one 8-byte move copies a byte's trits; the
 * next copy, 5 entries further, overwrites the 3 padding entries. */
static const int8_t T5[256][8] = { REP256(T5ROW) };

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "decode() stores T2W's words as little-endian bytes"
#endif
/* Trits [first, first + n) (n <= CH) of a payload; returns a pointer into
 * buf[BUF] where they start (ATOME02 copies write up to 3 entries past the
 * last decoded byte: skip 4 + CH + 4 + 3 < BUF). */
static const int8_t *decode(const uint8_t *p, int enc, uint32_t first, int n, int8_t *buf) {
    int skip, nbytes;
    if (enc == ATM_ENC_ATOME01) {
        const uint8_t *b = p + (first >> 2);
        skip = (int)(first & 3u);
        nbytes = (skip + n + 3) >> 2;
        /* one word store a byte (buf is a word array, see DECODE_BUF; the
         * trits are read through int8_t, which may alias anything; T2W's
         * words are little-endian, as every target is) */
        uint32_t *o = (uint32_t *)(void *)buf;
        for (int i = 0; i < nbytes; i++) o[i] = T2W[b[i]];
    } else {
        uint32_t j = first / 5u;
        const uint8_t *b = p + j;
        skip = (int)(first - 5u * j);
        nbytes = (skip + n + 4) / 5;
        for (int i = 0; i < nbytes; i++) {
            const int8_t *t = T5[b[i]];
            int8_t *o = buf + 5 * i;
            for (int k = 0; k < 8; k++) o[k] = t[k];        /* merged into one 8-byte move */
        }
    }
    return buf + skip;
}
const int8_t *atm_ek_decode(const uint8_t *p, int enc, uint32_t first, int n, int8_t *buf) {
    return decode(p, enc, first, n, buf);
}

/* sum t[i] * x[i]; |sum| <= n * 32767 < 2^31 for n <= 2^16. The constant
 * trip count lets compilers vectorise the full-chunk version. */
static int32_t dot_full(const int8_t *t, const int16_t *x) {
    int32_t acc = 0;
    for (int i = 0; i < CH; i++) acc += t[i] * x[i];
    return acc;
}
static int32_t dot_n(const int8_t *t, const int16_t *x, int n) {
    int32_t acc = 0;
    for (int i = 0; i < n; i++) acc += t[i] * x[i];
    return acc;
}

#ifdef ATM_T2_SIMD
/* x86-64 kernel for ATOME01 rows of a multiple of 64 columns (byte aligned):
 * the 16 bytes of a 64-trit chunk are split into the four code positions
 * (trit 4i + p sits in byte i, bits 2p..2p+1), each turned into 16 int8
 * trits (code 01 -> 1, 11 -> -1, else 0), widened to int16 and multiplied
 * with x deinterleaved the same way (xd[16 p + i] = x[4 i + p]). Integer
 * sums are exact, so the result equals the portable kernel's bit for bit
 * (tests/test_engine.c compares ATOME01 with ATOME02, which never takes
 * this path). */
#include <emmintrin.h>
static __m128i t2_codes(__m128i c, __m128i m3, __m128i one) {
    __m128i t = _mm_or_si128(_mm_and_si128(_mm_cmpeq_epi8(c, one), one), _mm_cmpeq_epi8(c, m3));
    return t;
}
static __m128i t2_madd(__m128i t, const int16_t *xd, __m128i acc) {
    const __m128i sg = _mm_cmpgt_epi8(_mm_setzero_si128(), t);
    acc = _mm_add_epi32(acc, _mm_madd_epi16(_mm_unpacklo_epi8(t, sg), _mm_loadu_si128((const __m128i *)xd)));
    return _mm_add_epi32(acc, _mm_madd_epi16(_mm_unpackhi_epi8(t, sg), _mm_loadu_si128((const __m128i *)(xd + 8))));
}
static void matvec_t2_sse2(const uint8_t *b, uint32_t rows, uint32_t cols, const int16_t *xd, int32_t *out) {
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

/* ATOME02 payloads reach the row kernels re-encoded as ATOME01: T10[b] is
 * the 10-bit ATOME01 code of the 5 trits of ATOME02 byte b (0 for the
 * invalid bytes 243..255), so 4 ATOME02 bytes (20 trits) become 5 ATOME01
 * bytes with two shifts and ORs. Blocks of whole rows are re-encoded into a
 * stack buffer (RECODE_GROUPS * 5 bytes) starting at a trit index that is a
 * multiple of 20; with cols % 4 == 0 every row then starts on a byte of the
 * buffer. Left out on Cortex-M0 (no row kernel there, and little stack). */
#ifdef ATM_T5_RECODE
#define C3(d) ((d) == 0 ? 3u : ((d) == 1 ? 0u : 1u))      /* base-3 digit (trit + 1) -> ATOME01 code */
#define T10E(b) ((b) < 243 ? (uint16_t)(C3((b) % 3) | C3((b) / 3 % 3) << 2 | C3((b) / 9 % 3) << 4 \
                                        | C3((b) / 27 % 3) << 6 | C3((b) / 81 % 3) << 8) : (uint16_t)0)
static const uint16_t T10[256] = { REP256(T10E) };
/* 52 groups = 260 bytes = 1040 trits: one row of the widest model (1024
 * columns) plus the up to 16 trits the block start lies before its row;
 * 820 groups (4,100 bytes of stack) on x86, where fewer and longer kernel
 * calls pay */
#ifdef ATM_EK_X86
#define RECODE_GROUPS 820
#else
#define RECODE_GROUPS 52
#endif

/* The plain-C twin of engine_kernels.h's re-encoder. */
void atm_ek_t5_to_t2_ref(const uint8_t *p, uint32_t nbytes, uint32_t g0, uint32_t ng, uint8_t *out) {
    uint32_t j = 4 * g0;
    /* whole groups inside the payload first (one loop condition), then the rest */
    uint32_t full = j + 4 <= nbytes ? (nbytes - j) / 4 : 0;
    if (full > ng) full = ng;
    const uint8_t *q = p + j;
    for (uint32_t g = 0; g < full; g++, q += 4, out += 5) {
        const uint32_t c3 = T10[q[3]];
        const uint32_t w = T10[q[0]] | (uint32_t)T10[q[1]] << 10 | (uint32_t)T10[q[2]] << 20 | c3 << 30;
        atm_wr_u32le(out, w);
        out[4] = (uint8_t)(c3 >> 2);
    }
    j += 4 * full;
    for (uint32_t g = full; g < ng; g++, j += 4, out += 5) {
        uint32_t c[4];
        for (int k = 0; k < 4; k++) c[k] = j + (uint32_t)k < nbytes ? T10[p[j + (uint32_t)k]] : 0u;
        const uint32_t w = c[0] | c[1] << 10 | c[2] << 20 | c[3] << 30;
        atm_wr_u32le(out, w);
        out[4] = (uint8_t)(c[3] >> 2);
    }
}
#endif

/* Plain-C twin of the row kernels (engine_kernels.h): each byte's 4 trits
 * through T2, times x. */
void atm_ek_matvec_ref(const uint8_t *b, uint32_t rows, uint32_t cols, const int16_t *x, int32_t *out) {
    const uint32_t nb = cols / 4;
    for (uint32_t r = 0; r < rows; r++, b += nb) {
        int32_t acc = 0;
        for (uint32_t j = 0; j < nb; j++) {
            const int8_t *t = T2[b[j]];
            const int16_t *xj = x + 4 * j;
            acc += t[0] * xj[0] + t[1] * xj[1] + t[2] * xj[2] + t[3] * xj[3];
        }
        out[r] = acc;
    }
}

#ifdef ATM_T2_SIMD
static void rk_sse2(const uint8_t *b, uint32_t rows, uint32_t cols, atm_vin *in, int32_t *out) {
    matvec_t2_sse2(b, rows, cols, in->xd, out);
}
#endif
#ifdef ATM_EK_X86
static void rk_avx2(const uint8_t *b, uint32_t rows, uint32_t cols, atm_vin *in, int32_t *out) {
    atm_ek_matvec_avx2(b, rows, cols, &in->xv, out);
}
static void rk_avx512(const uint8_t *b, uint32_t rows, uint32_t cols, atm_vin *in, int32_t *out) {
    atm_ek_matvec_avx512(b, rows, cols, &in->xv, out);
}
#endif
#ifdef ATM_EK_WASM
static void rk_wasm(const uint8_t *b, uint32_t rows, uint32_t cols, atm_vin *in, int32_t *out) {
    atm_ek_matvec_wasm(b, rows, cols, &in->wv, out);
}
#endif
#ifdef ATM_T2_LUT
#if defined(ATM_M3_ASM) && (defined(__ARM_ARCH_7M__) || defined(__ARM_ARCH_7EM__))
/* core/engine_m3.S: four rows at a time in Thumb-2 (rows of a multiple of 16 columns) */
#define LUT_ROWS4_ASM 1
void atm_ek_lut_rows4_m3(const uint8_t *b, uint32_t nb, uint32_t groups, const int32_t *lut, int32_t *out);
#endif
/* two rows at a time: they share the walk through the table */
static void rk_lut(const uint8_t *b, uint32_t rows, uint32_t cols, atm_vin *in, int32_t *out) {
    const uint32_t nb = cols / 4;
    uint32_t r = 0;
#ifdef LUT_ROWS4_ASM
    if (nb % 4u == 0 && nb > 0 && rows >= 4) {
        r = rows & ~3u;
        atm_ek_lut_rows4_m3(b, nb, rows / 4, in->lut, out);
    }
#endif
    for (; r + 2 <= rows; r += 2) {
        const uint8_t *b0 = b + (size_t)r * nb, *b1 = b0 + nb;
        const int32_t *lt = in->lut;
        int32_t a0 = 0, a1 = 0;
        for (uint32_t j = 0; j < nb; j++, lt += 32) {
            const unsigned v0 = b0[j], v1 = b1[j];
            a0 += lt[v0 & 15u] + lt[16 + (v0 >> 4)];
            a1 += lt[v1 & 15u] + lt[16 + (v1 >> 4)];
        }
        out[r] = a0;
        out[r + 1] = a1;
    }
    if (r < rows) {
        const uint8_t *b0 = b + (size_t)r * nb;
        const int32_t *lt = in->lut;
        int32_t a0 = 0;
        for (uint32_t j = 0; j < nb; j++, lt += 32) {
            const unsigned v0 = b0[j];
            a0 += lt[v0 & 15u] + lt[16 + (v0 >> 4)];
        }
        out[r] = a0;
    }
}
#endif

#ifdef ATM_T2_LUT
#if defined(ATM_M3_ASM) && (defined(__ARM_ARCH_7M__) || defined(__ARM_ARCH_7EM__))
#define LUT8_ROWS4_ASM 1
#endif
/* the byte tables: four rows at a time in Thumb-2 on the M3, the twin for the rest */
static void rk_lut8(const uint8_t *b, uint32_t rows, uint32_t cols, atm_vin *in, int32_t *out) {
    const uint32_t nb = cols / 4;
    uint32_t r = 0;
#ifdef LUT8_ROWS4_ASM
    if (nb > 0 && rows >= 4) {
        r = rows & ~3u;
        atm_ek_lut8_rows4_m3(b, nb, rows / 4, in->t8, out);
    }
#endif
    atm_ek_lut8_rows(b + (size_t)r * nb, nb, rows - r, nb, in->t8, out + r);
}
#endif

/* Bit-plane kernel ("planes") for ATOME01 rows of a multiple of 4 columns,
 * every target. An ATOME01 code is bit0 - 2 bit1 (00 = 0, 01 = +1, 11 = -1;
 * 10, which never occurs, would count -2), so a row byte v times columns
 * 4g .. 4g+3 is S_g(n0(v)) - 2 S_g(n1(v)): n0 / n1 gather v's even / odd
 * bits (one bit per trit) into a nibble, and S_g(m) = the sum of x[4g + k]
 * over the bits k of m, a 16-entry table per group of 4 columns built once
 * per input vector (cols * 16 bytes). A byte then costs two flash lookups
 * (PL0, PL1: 4 n0(v) and 4 n1(v), byte offsets into the group's table), two
 * table loads and two adds; no multiply, which the Cortex-M0 needs most.
 * Exact integer sums (|a0|, |a1| <= cols * 2^15): the result equals
 * atm_ek_matvec_ref's. Tables for at most PLANE_COLS columns at a time: the
 * micro:bit (16 KiB of RAM) keeps 512 bytes on the stack and runs a wider
 * row as column chunks added up. */
#define N0(v) (((v) & 1) | ((v) >> 1 & 2) | ((v) >> 2 & 4) | ((v) >> 3 & 8))
#define PL0E(v) ((uint8_t)(4 * N0(v)))
#define PL1E(v) ((uint8_t)(4 * N0((v) >> 1)))
const uint8_t atm_ek_pl[512] = { REP256(PL0E), REP256(PL1E) };   /* PL0, then PL1 */
#define PL0 atm_ek_pl
#define PL1 (atm_ek_pl + 256)

#if defined(__ARM_ARCH_6M__) && defined(ATM_M0_ASM)
/* Cortex-M0 / M0+: core/engine_m0.S, this function's Thumb-1 version (the
 * boards' builds define ATM_M0_ASM and assemble it) */
#define PLANES_ROWS_ASM 1
void atm_ek_planes_rows_m0(const uint8_t *b, uint32_t stride, uint32_t rows, uint32_t nbytes,
                           const int32_t *tab, int32_t *out, int add);
void atm_ek_planes_build_m0(const int16_t *x, uint32_t cols, int32_t *tab);
void atm_ek_planes_pairs16_m0(const uint8_t *b, uint32_t pairs, uint32_t nbytes, const int32_t *tab,
                              int32_t *out, int add);
void atm_ek_planes_pairso_m0(const uint8_t *o, uint32_t stride, uint32_t pairs, uint32_t nbytes,
                             const int32_t *tab, int32_t *out, int add);
#endif

void atm_ek_planes_build(const int16_t *x, uint32_t cols, int32_t *tab) {
#ifdef PLANES_ROWS_ASM
    if (cols >= 4 && ((uintptr_t)x & 3u) == 0) { atm_ek_planes_build_m0(x, cols & ~3u, tab); return; }
#endif
    for (uint32_t g = 0; g < cols / 4; g++, x += 4, tab += 16) {
        const int32_t a = x[0], b = x[1], c = x[2], d = x[3];
        tab[0] = 0; tab[1] = a; tab[2] = b; tab[3] = a + b;
        for (int i = 0; i < 4; i++) tab[4 + i] = tab[i] + c;
        for (int i = 0; i < 8; i++) tab[8 + i] = tab[i] + d;
    }
}


void atm_ek_planes_rows(const uint8_t *b, uint32_t stride, uint32_t rows, uint32_t nbytes,
                        const int32_t *tab, int32_t *out, int add) {
#ifdef PLANES_ROWS_ASM
    if (rows > 0 && nbytes > 0 && nbytes % 4u == 0) {
        if (stride == 16 && nbytes <= 16 && rows >= 2) {        /* 64-column rows: two at a time */
            const uint32_t pairs = rows / 2;
            atm_ek_planes_pairs16_m0(b, pairs, nbytes, tab, out, add);
            if ((rows & 1u) == 0) return;
            b += 32 * pairs; out += 2 * pairs; rows = 1;
        }
        atm_ek_planes_rows_m0(b, stride, rows, nbytes, tab, out, add);
        return;
    }
#endif
    for (uint32_t r = 0; r < rows; r++, b += stride) {
        const uint8_t *t = (const uint8_t *)tab;
        int32_t a0 = 0, a1 = 0;
        for (uint32_t j = 0; j < nbytes; j++, t += 64) {
            const unsigned v = b[j];
            a0 += *(const int32_t *)(const void *)(t + PL0[v]);
            a1 += *(const int32_t *)(const void *)(t + PL1[v]);
        }
        const int32_t s = a0 - 2 * a1;
        out[r] = add ? out[r] + s : s;
    }
}

/* The bit-plane rows from the offset stream (engine.h): row r's byte j at
 * o + 2 (r stride + j), its two table offsets already include 64 (j % 4),
 * so the table walker moves by 256 bytes every 4 row bytes (the stream
 * holds 64 (i % 4) of the file offset i: callers pass b 4-aligned; a
 * stride that is not a multiple of 4 runs from the model's bytes). b is
 * the same rows' model bytes (the Thumb-1 path runs an odd last row and
 * the chunks its pair loop does not take from them); the result equals
 * atm_ek_planes_rows'. */
void atm_ek_planes_rows_ox(const uint8_t *b, const uint8_t *o, uint32_t stride, uint32_t rows, uint32_t nbytes,
                           const int32_t *tab, int32_t *out, int add) {
    if (stride & 3u) {   /* rows not all 4-aligned: the stream's 64 (i % 4) is not 64 (j % 4) */
        atm_ek_planes_rows(b, stride, rows, nbytes, tab, out, add);
        return;
    }
#ifdef PLANES_ROWS_ASM
    /* Thumb-1: row pairs from the stream, an odd last row from the model's
     * bytes; chunks the pair loop does not take, from the model's bytes */
    if ((nbytes == 4 || nbytes == 8 || nbytes == 16) && stride <= 63 && rows >= 2) {
        const uint32_t pairs = rows / 2;
        atm_ek_planes_pairso_m0(o, stride, pairs, nbytes, tab, out, add);
        if ((rows & 1u) == 0) return;
        atm_ek_planes_rows_m0(b + 2 * pairs * stride, stride, 1, nbytes, tab, out + 2 * pairs, add);
        return;
    }
    atm_ek_planes_rows(b, stride, rows, nbytes, tab, out, add);
    return;
#else
    (void)b;
#endif
    for (uint32_t r = 0; r < rows; r++, o += 2 * stride) {
        int32_t a0 = 0, a1 = 0;
        for (uint32_t j = 0; j < nbytes; j++) {
            const uint8_t *t = (const uint8_t *)tab + 256 * (j / 4);
            a0 += *(const int32_t *)(const void *)(t + o[2 * j]);
            a1 += *(const int32_t *)(const void *)(t + o[2 * j + 1]);
        }
        const int32_t s = a0 - 2 * a1;
        out[r] = add ? out[r] + s : s;
    }
}

size_t atm_engine_offsets_bytes(size_t model_len) { return 2 * model_len; }

/* the stream's byte 2 i + plane: model byte i's table offset in that bit plane */
static uint8_t ox_byte(const uint8_t *model, size_t i, int plane) {
    return (uint8_t)(atm_ek_pl[256 * plane + model[i]] + 64 * (i & 3u));
}

void atm_engine_offsets_make(const uint8_t *model, size_t n, uint8_t *out) {
    for (size_t i = 0; i < 2 * n; i++) out[i] = ox_byte(model, i / 2, (int)(i & 1u));
}

int atm_engine_set_offsets(atm_engine *e, const uint8_t *o, size_t len) {
    if (!e || !e->m) return -1;
    if (!o) { e->ox = 0; return 0; }
#ifdef ATM_PLANES
    const uint8_t *m = e->m->blob;
    const size_t n = e->m->size;
    if (len != atm_engine_offsets_bytes(n) || ((uintptr_t)m & 3u) != 0) return -1;
    for (size_t i = 0; i < 2 * n; i++)
        if (o[i] != ox_byte(m, i / 2, (int)(i & 1u))) return -1;
    e->ox = o;
    return 0;
#else
    (void)len;
    return -1;
#endif
}

/* The byte-table kernel (engine_kernels.h): per group of 4 columns, the
 * dots of the 81 valid ATOME01 bytes, 9 pair sums of the low two columns
 * (codes c0 | c1 << 2) plus 9 of the high two (shifted by 4 bits); a row
 * byte then costs one table load and one add. */
#if defined(ATM_M3_ASM) && (defined(__ARM_ARCH_7M__) || defined(__ARM_ARCH_7EM__))
#define LUT8_BUILD_ASM 1
#endif
void atm_ek_lut8_build(const int16_t *x, uint32_t cols, int32_t *t) {
#ifdef LUT8_BUILD_ASM
    if (cols >= 4) { atm_ek_lut8_build_m3(x, cols & ~3u, t); return; }
#endif
    atm_ek_lut8_build_ref(x, cols, t);
}

void atm_ek_lut8_build_ref(const int16_t *x, uint32_t cols, int32_t *t) {
    static const uint8_t off[9] = { 0, 1, 3, 4, 5, 7, 12, 13, 15 };   /* c0 | c1 << 2, codes 0, 1, 3 */
    for (uint32_t g = 0; g < cols / 4; g++, x += 4, t += 256) {
        const int32_t a = x[0], b = x[1], c = x[2], d = x[3];
        const int32_t p[9] = { 0, a, -a, b, a + b, b - a, -b, a - b, -a - b };
        const int32_t q[9] = { 0, c, -c, d, c + d, d - c, -d, c - d, -c - d };
        for (int j = 0; j < 9; j++) {
            int32_t *tj = t + 16 * off[j];
            for (int i = 0; i < 9; i++) tj[off[i]] = q[j] + p[i];
        }
    }
}

void atm_ek_lut8_rows(const uint8_t *b, uint32_t stride, uint32_t rows, uint32_t nbytes,
                      const int32_t *t, int32_t *out) {
    for (uint32_t r = 0; r < rows; r++, b += stride) {
        const int32_t *tj = t;
        int32_t acc = 0;
        for (uint32_t j = 0; j < nbytes; j++, tj += 256) acc += tj[b[j]];
        out[r] = acc;
    }
}

/* The portable kernel: rows x cols trits of a payload (any encoding, any
 * cols) times x. */
static void matvec_portable(const uint8_t *w, int enc, uint32_t rows, uint32_t cols, const int16_t *x, int32_t *out) {
#if defined(__ARM_ARCH_6M__)
    /* Cortex-M0: each row's trits straight from the payload bytes
     * (atm_ek_rowdot), no decode buffer; ATOME02 row starts advance by
     * cols = 5 q + rm trits without a division per row. Elsewhere the
     * portable kernel keeps the decode buffer, whose fixed-length dot
     * compilers vectorise (2x faster on x86-64 than the fused loop). */
    if (enc == ATM_ENC_ATOME01) {
        for (uint32_t r = 0; r < rows; r++)
            out[r] = atm_ek_rowdot(w + ((r * cols) >> 2), (int)((r * cols) & 3u), (int)cols, x, enc);
        return;
    }
    const uint32_t q = cols / 5u, rm = cols - 5u * q;
    const uint8_t *b = w;
    uint32_t skip = 0;
    for (uint32_t r = 0; r < rows; r++) {
        out[r] = atm_ek_rowdot(b, (int)skip, (int)cols, x, enc);
        b += q; skip += rm;
        if (skip >= 5u) { skip -= 5u; b++; }
    }
#else
    DECODE_BUF(buf, BUF);
    if (cols == CH) {
        for (uint32_t r = 0; r < rows; r++) out[r] = dot_full(decode(w, enc, r * CH, CH, buf), x);
        return;
    }
    for (uint32_t r = 0; r < rows; r++) {
        uint32_t first = r * cols;
        int32_t acc = 0;
        for (uint32_t c = 0; c < cols; c += CH) {
            int n = cols - c < CH ? (int)(cols - c) : CH;
            const int8_t *t = decode(w, enc, first + c, n, buf);
            acc += n == CH ? dot_full(t, x + c) : dot_n(t, x + c, n);
        }
        out[r] = acc;
    }
#endif
}

/* engine_kernels.h: sum over n trits of a payload starting at trit skip of
 * byte b[0], times x[0 .. n). */
static int32_t rowdot_t2(const uint8_t *b, int skip, int n, const int16_t *x) {
    int32_t acc = 0;
    const int16_t *end = x + n;
    if (skip) {
        const int8_t *t = T2[*b++] + skip;
        for (int k = skip; k < 4 && x < end; k++) acc += *t++ * *x++;
    }
    for (; end - x >= 4; x += 4) {
        const int8_t *t = T2[*b++];
        acc += t[0] * x[0] + t[1] * x[1] + t[2] * x[2] + t[3] * x[3];
    }
    if (x < end) {
        const int8_t *t = T2[*b];
        while (x < end) acc += *t++ * *x++;
    }
    return acc;
}
static int32_t rowdot_t5(const uint8_t *b, int skip, int n, const int16_t *x) {
    int32_t acc = 0;
    const int16_t *end = x + n;
    if (skip) {
        const int8_t *t = T5[*b++] + skip;
        for (int k = skip; k < 5 && x < end; k++) acc += *t++ * *x++;
    }
    for (; end - x >= 5; x += 5) {
        const int8_t *t = T5[*b++];
        acc += t[0] * x[0] + t[1] * x[1] + t[2] * x[2] + t[3] * x[3] + t[4] * x[4];
    }
    if (x < end) {
        const int8_t *t = T5[*b];
        while (x < end) acc += *t++ * *x++;
    }
    return acc;
}
int32_t atm_ek_rowdot(const uint8_t *b, int skip, int n, const int16_t *x, int enc) {
    return enc == ATM_ENC_ATOME01 ? rowdot_t2(b, skip, n, x) : rowdot_t5(b, skip, n, x);
}

/* Its plain-C twin: the trits through decode() in chunks of CH, dotted. */
int32_t atm_ek_rowdot_ref(const uint8_t *b, int skip, int n, const int16_t *x, int enc) {
    DECODE_BUF(buf, BUF);
    int32_t acc = 0;
    for (int c = 0; c < n; c += CH) {
        const int m = n - c < CH ? n - c : CH;
        const int8_t *t = decode(b, enc, (uint32_t)skip + (uint32_t)c, m, buf);
        acc += m == CH ? dot_full(t, x + c) : dot_n(t, x + c, m);
    }
    return acc;
}

/* ---- preparing an input for its row kernel ---- */

#ifdef ATM_T2_SIMD
static void prep_sse2(atm_vin *in, const int16_t *x, uint32_t d, int32_t *tab) {
    (void)tab;
    for (uint32_t k = 0; k < d; k += 64)
        for (int p = 0; p < 4; p++)
            for (int i = 0; i < 16; i++) in->xd[k + 16 * (uint32_t)p + (uint32_t)i] = x[k + 4 * (uint32_t)i + (uint32_t)p];
}
#endif
#ifdef ATM_EK_X86
static void prep_x86(atm_vin *in, const int16_t *x, uint32_t d, int32_t *tab) {
    (void)tab;
    atm_ek_prep_avx2(x, d, &in->xv);
}
#endif
#ifdef ATM_EK_WASM
static void prep_wasm(atm_vin *in, const int16_t *x, uint32_t d, int32_t *tab) {
    (void)tab;
    atm_ek_prep_wasm(x, d, &in->wv);
}
#endif
#ifdef ATM_T2_LUT
/* the pair-sum table: index c0 | c1 << 2; codes 0 and 2 mean 0, 1 means +1, 3 means -1 */
static void prep_lut(atm_vin *in, const int16_t *x, uint32_t d, int32_t *tab) {
    (void)tab;
    for (uint32_t g = 0; g < d / 2; g++) {
        const int32_t a = x[2 * g], b = x[2 * g + 1];
        int32_t *t = in->lut + 16 * g;
        const int32_t va[4] = { 0, a, 0, -a };
        for (int c1 = 0; c1 < 4; c1++) {
            const int32_t vb = c1 == 1 ? b : (c1 == 3 ? -b : 0);
            t[4 * c1 + 0] = vb; t[4 * c1 + 1] = va[1] + vb;
            t[4 * c1 + 2] = vb; t[4 * c1 + 3] = va[3] + vb;
        }
    }
}
/* the byte tables, in the engine's table RAM (atm_engine_set_tables) */
static void prep_lut8(atm_vin *in, const int16_t *x, uint32_t d, int32_t *tab) {
    atm_ek_lut8_build(x, d, tab);
    in->t8 = tab;
}
#endif

#ifdef ATM_PLANES
/* The bit-plane kernel over column chunks of at most PLANE_COLS, starting
 * with the chunk whose tables are built (the sums are exact, so the order
 * of the chunks changes nothing), for nm matrices T[j] of rows[j] rows of
 * the same input at once (their sums one after another in out): a chunk's
 * tables are built once for all of them. */
static void planes_matvecs(const atm_tview *T, const uint32_t *rows, int nm, uint32_t cols, atm_vin *in,
                           int32_t *out) {
    const uint32_t nb = cols / 4, nch = (cols + PLANE_COLS - 1) / PLANE_COLS;
    uint32_t k = in->pchunk >= 0 && (uint32_t)in->pchunk < nch ? (uint32_t)in->pchunk : 0;
    for (uint32_t i = 0; i < nch; i++) {
        const uint32_t c0 = k * PLANE_COLS, cc = cols - c0 < PLANE_COLS ? cols - c0 : PLANE_COLS;
        if (in->pchunk != (int32_t)k) {
            atm_ek_planes_build(in->x + c0, cc, in->ptab);
            in->pchunk = (int32_t)k;
        }
        int32_t *o = out;
        for (int j = 0; j < nm; j++) {
            const uint8_t *b = T[j].data + c0 / 4;
            /* every row 4-aligned (checked here too: the fallback inside
             * atm_ek_planes_rows_ox is one frame deeper than the micro:bit's stack has room for) */
            if (in->oxd && ((uintptr_t)b & 3u) == 0 && (nb & 3u) == 0)
                atm_ek_planes_rows_ox(b, (const uint8_t *)(in->oxd + 2 * (uintptr_t)b), nb, rows[j], cc / 4,
                                      in->ptab, o, i != 0);
            else
                atm_ek_planes_rows(b, nb, rows[j], cc / 4, in->ptab, o, i != 0);
            o += rows[j];
        }
        if (++k == nch) k = 0;
    }
}
static void rk_planes(const uint8_t *b, uint32_t rows, uint32_t cols, atm_vin *in, int32_t *out) {
    atm_tview t;
    t.data = b;
    planes_matvecs(&t, &rows, 1, cols, in, out);
}
#endif

/* ---- the kernel sets ----
 * The elementwise and attention kernels of the target (the plain-C twins
 * on hosts and wasm; the Cortex-M0 set: no 32 x 32 -> 64 multiply, the
 * 32-bit versions where they exist, the twins elsewhere; the Cortex-M3 /
 * M4 set: the word-at-a-time mix and dots and the channel-major conv taps
 * of the M0 set (engine_m0.c; unaligned word loads are allowed there,
 * aligned ones the rule) and engine_m3.c / engine_m3.S), shared by every
 * row kernel of the build but the x86 ones, which have their own. */
#if defined(ATM_KS_M3) && defined(ATM_M3_ASM)
/* engine_m3.S for dh = 8, 16, 32, 64 on word-aligned keys, the word-at-a-time C otherwise */
static void dots_m3(const int16_t *q, const int8_t *k, int dh, int n, int32_t *out) {
    if (n <= 0 || ((uintptr_t)k & 3u) != 0 || atm_ek_dots_m3(q, k, dh, n, out) != 0) atm_ek_dots_m0(q, k, dh, n, out);
}
/* engine_m3.S for d % 8 == 0 and up to 32 kept positions, the word-at-a-time C otherwise */
static void mix_m3(const int32_t *w, const int32_t *idx, const int8_t *base, int n, int d, int32_t *out) {
    if (atm_ek_mix_m3(w, idx, base, n, d, out) != 0) atm_ek_mix_m0(w, idx, base, n, d, out);
}
#define DOTS_M3 dots_m3
#define MIX_M3 mix_m3
#else
#define DOTS_M3 atm_ek_dots_m0
#define MIX_M3 atm_ek_mix_m0
#endif

#if defined(ATM_KS_M0)
#define EW_TARGET                                                                                          \
    .dots = atm_ek_dots_m0, .mix = atm_ek_mix_m0, .addsc = atm_ek_addsc_i32, .scale = atm_ek_scale_i32,       \
    .quant32 = atm_ek_quant32_i32, .quant16 = atm_ek_quant16_i32, .ln_stats = atm_ek_ln_stats_i32,          \
    .ln_center = atm_ek_ln_center_i32, .ln_out = atm_ek_ln_out_i32, .ssm = atm_ek_ssm_i32,                  \
    .conv = atm_ek_conv_m0, .scores = atm_ek_scores_m3, .conv_ch = CH, .softmax = atm_ek_softmax_h
#elif defined(ATM_KS_M3)
#define EW_TARGET                                                                                          \
    .dots = DOTS_M3, .mix = MIX_M3, .addsc = atm_ek_addsc_m3, .scale = atm_ek_scale_m3,                       \
    .quant32 = atm_ek_quant32_i32, .quant16 = atm_ek_quant16_i32, .ln_stats = atm_ek_ln_stats_i32,          \
    .ln_center = atm_ek_ln_center_i32, .ln_out = atm_ek_ln_out_m3, .ssm = atm_ek_ssm_m3,                    \
    .conv = atm_ek_conv_m3, .scores = atm_ek_scores_m3, .conv_ch = ATM_CONV_CH_M3, .softmax = atm_ek_softmax_w
#else
#define EW_TARGET                                                                                          \
    .dots = atm_ek_dots_ref, .mix = atm_ek_mix_ref, .addsc = atm_ek_addsc_ref, .scale = atm_ek_scale_ref,     \
    .quant32 = atm_ek_quant32_ref, .quant16 = atm_ek_quant16_ref, .ln_stats = atm_ek_ln_stats_ref,          \
    .ln_center = atm_ek_ln_center_ref, .ln_out = atm_ek_ln_out_ref, .ssm = atm_ek_ssm_ref,                  \
    .conv = atm_ek_conv_ref, .scores = atm_ek_scores_ref, .conv_ch = CH, .softmax = atm_ek_softmax_q15
#endif

static const atm_kset KS_PORTABLE = { .kernel = ATM_KERNEL_PORTABLE, EW_TARGET };
#ifdef ATM_PLANES
static const atm_kset KS_PLANES = { .kernel = ATM_KERNEL_PLANES, .rows = rk_planes, .matvecs = planes_matvecs,
                                    EW_TARGET };
#endif
#ifdef ATM_T2_LUT
static const atm_kset KS_LUT = { .kernel = ATM_KERNEL_LUT, .prep = prep_lut, .rows = rk_lut,
                                 .t5 = atm_ek_t5_to_t2_ref, EW_TARGET };
static const atm_kset KS_LUT8 = { .kernel = ATM_KERNEL_LUT, .prep = prep_lut8, .rows = rk_lut8,
                                  .t5 = atm_ek_t5_to_t2_ref, EW_TARGET };
#endif
#ifdef ATM_T2_SIMD
static const atm_kset KS_SSE2 = { .kernel = ATM_KERNEL_SSE2, .prep = prep_sse2, .rows = rk_sse2,
                                  .t5 = atm_ek_t5_to_t2_ref, EW_TARGET };
#endif
#ifdef ATM_EK_WASM
static const atm_kset KS_WASM = { .kernel = ATM_KERNEL_WASM, .prep = prep_wasm, .rows = rk_wasm,
                                  .t5 = atm_ek_t5_to_t2_ref, EW_TARGET };
#endif
#ifdef ATM_EK_X86
/* the x86 sets: their row kernel and re-encoder, the AVX2 elementwise
 * kernels (AVX-512: its own where 64-bit lanes pay), conv chunks of
 * ATM_CONV_CH_X86 trits and the vector top-k */
#define EW_X86 .prep = prep_x86, .dots = atm_ek_dots_avx2, .mix = atm_ek_mix_avx2, .quant32 = atm_ek_quant32_avx2, \
    .quant16 = atm_ek_quant16_avx2, .ln_stats = atm_ek_ln_stats_avx2, .ln_center = atm_ek_ln_center_avx2,        \
    .conv = atm_ek_conv_avx2, .conv_ch = ATM_CONV_CH_X86, .softmax = atm_ek_softmax_avx2, .topk = atm_ek_topk_avx2
static const atm_kset KS_AVX2 = {
    .kernel = ATM_KERNEL_AVX2, .rows = rk_avx2, .t5 = atm_ek_t5_to_t2_avx2, .addsc = atm_ek_addsc_avx2,
    .scale = atm_ek_scale_avx2, .ln_out = atm_ek_ln_out_avx2, .ssm = atm_ek_ssm_avx2, .scores = atm_ek_scores_avx2,
    EW_X86
};
static const atm_kset KS_AVX512 = {
    .kernel = ATM_KERNEL_AVX512, .rows = rk_avx512, .t5 = atm_ek_t5_to_t2_avx512, .addsc = atm_ek_addsc_avx512,
    .scale = atm_ek_scale_avx512, .ln_out = atm_ek_ln_out_avx512, .ssm = atm_ek_ssm_avx512,
    .scores = atm_ek_scores_avx512, EW_X86
};
#endif

/* ---- the choice ----
 * The kernel used for a model of width d: the requested one if this build
 * and CPU have it and d fits it, else the best that does (AUTO: AVX-512,
 * AVX2, SSE2, wasm SIMD128, pair-sum table, bit-plane, portable). Row
 * kernels need d % 4 == 0 (rows start on a byte); SSE2 needs d % 64 == 0,
 * the table d <= 128. */
static int kernel_fits(int k, int d) {
    (void)d;
    switch (k) {
    case ATM_KERNEL_PORTABLE: return 1;
#ifdef ATM_PLANES
    case ATM_KERNEL_PLANES: return d % 4 == 0;
#endif
#ifdef ATM_T2_LUT
    case ATM_KERNEL_LUT: return d % 4 == 0 && d <= ATM_LUT_MAX_D;
#endif
#ifdef ATM_T2_SIMD
    case ATM_KERNEL_SSE2: return d % 64 == 0;
#endif
#ifdef ATM_EK_X86
    case ATM_KERNEL_AVX2: case ATM_KERNEL_AVX512: return d % 4 == 0 && atm_ek_x86_supported(k);
#endif
#ifdef ATM_EK_WASM
    case ATM_KERNEL_WASM: return d % 4 == 0;
#endif
    default: return 0;
    }
}
static int pick_kernel(int want, int d) {
    static const int order[] = { ATM_KERNEL_AVX512, ATM_KERNEL_AVX2, ATM_KERNEL_SSE2, ATM_KERNEL_WASM,
                                 ATM_KERNEL_LUT, ATM_KERNEL_PLANES };
    if (want != ATM_KERNEL_AUTO) return kernel_fits(want, d) ? want : ATM_KERNEL_PORTABLE;
    for (unsigned i = 0; i < sizeof order / sizeof order[0]; i++)
        if (kernel_fits(order[i], d)) return order[i];
    return ATM_KERNEL_PORTABLE;
}
/* the set of a kernel this build has */
static const atm_kset *set_of(int k) {
    switch (k) {
#ifdef ATM_PLANES
    case ATM_KERNEL_PLANES: return &KS_PLANES;
#endif
#ifdef ATM_T2_LUT
    case ATM_KERNEL_LUT: return &KS_LUT;
#endif
#ifdef ATM_T2_SIMD
    case ATM_KERNEL_SSE2: return &KS_SSE2;
#endif
#ifdef ATM_EK_X86
    case ATM_KERNEL_AVX2: return &KS_AVX2;
    case ATM_KERNEL_AVX512: return &KS_AVX512;
#endif
#ifdef ATM_EK_WASM
    case ATM_KERNEL_WASM: return &KS_WASM;
#endif
    default: return &KS_PORTABLE;
    }
}

/* The set a step runs, and whether it uses the byte tables: the pair-sum
 * table or bit-plane kernel become the byte tables when the engine has
 * table RAM. */
const atm_kset *atm_select_kset(const atm_engine *e, int32_t **tab) {
    const int d = e->m->cfg.d_model;
    const int k = pick_kernel(e->kernel, d);
    *tab = 0;
#ifdef ATM_T2_LUT
    if (e->tab && d % 4 == 0 && (k == ATM_KERNEL_LUT || k == ATM_KERNEL_PLANES)) {
        *tab = e->tab;
        return &KS_LUT8;
    }
#endif
    return set_of(k);
}

void atm_vin_prep(atm_vin *in, const atm_engine *e, const atm_kset *ks, const int16_t *x, int d, int32_t *tab) {
    in->x = x;
    in->ks = ks;
#ifdef ATM_PLANES
    in->pchunk = -1;
    in->oxd = e->ox ? (uintptr_t)e->ox - 2 * (uintptr_t)e->m->blob : 0;   /* the offset stream */
#else
    (void)e;
#endif
    if (ks->prep) ks->prep(in, x, (uint32_t)d, tab);
}

/* ---- the products ---- */

#ifdef ATM_T5_RECODE
/* a tensor's payload length (computed where needed: a division by 5) */
static uint32_t tview_bytes(int enc, const atm_tview *t) {
    const uint32_t count = atm_rd_u32le(t->en + 8);
    return t->en[2] != ATM_DT_TRITS ? 2 * count : (enc == ATM_ENC_ATOME01 ? (count + 3) / 4 : (count + 4) / 5);
}
/* ATOME02 rows through the row kernel: blocks of whole rows re-encoded
 * into a stack buffer */
static void matvec_recoded(const atm_tview *T, int enc, uint32_t rows, uint32_t cols, atm_vin *in, int32_t *out) {
    const atm_kset *ks = in->ks;
    uint8_t buf[RECODE_GROUPS * 5];
    const uint32_t maxr = (RECODE_GROUPS * 20 - 16) / cols, tb = tview_bytes(enc, T);
    for (uint32_t r0 = 0; r0 < rows; ) {
        const uint32_t nr = rows - r0 < maxr ? rows - r0 : maxr;
        const uint32_t first = r0 * cols, g0 = first / 20;
        const uint32_t ng = ((r0 + nr) * cols - 20 * g0 + 19) / 20;
        ks->t5(T->data, tb, g0, ng, buf);
        ks->rows(buf + (first - 20 * g0) / 4, nr, cols, in, out + r0);
        r0 += nr;
    }
}
#endif

void atm_matvec(const atm_tview *T, int enc, uint32_t rows, uint32_t cols, atm_vin *in, int32_t *out) {
    const atm_kset *ks = in->ks;
    if (ks->rows && cols % 4u == 0) {
        if (enc == ATM_ENC_ATOME01) { ks->rows(T->data, rows, cols, in, out); return; }
#ifdef ATM_T5_RECODE
        if (ks->t5) { matvec_recoded(T, enc, rows, cols, in, out); return; }
#endif
    }
    matvec_portable(T->data, enc, rows, cols, in->x, out);
}

void atm_matvecs(const atm_tview *T, const uint32_t *rows, int nm, int enc, uint32_t cols, atm_vin *in,
                 int32_t *out) {
    if (in->ks->matvecs && enc == ATM_ENC_ATOME01 && cols % 4u == 0) {
        in->ks->matvecs(T, rows, nm, cols, in, out);
        return;
    }
    for (int j = 0; j < nm; j++) {
        atm_matvec(&T[j], enc, rows[j], cols, in, out);
        out += rows[j];
    }
}

/* ---- the table RAM (engine.h) ----
 * The conv trits of every layer, decoded once into the table RAM after the
 * byte tables (L K d int8, rounded to a word; 0 without a conv pathway):
 * conv_path then reads them instead of decoding its layer's trits at every
 * step. The same trits, so the same sums. */
static size_t conv_cache_bytes(const atm_mconfig *c) {
    if (!(c->pathways & ATM_PATH_CONV) || c->kernel < 1) return 0;
    return ((size_t)c->n_layers * (size_t)c->kernel * (size_t)c->d_model + 3u) & ~(size_t)3u;
}

const int8_t *atm_conv_cache(const atm_engine *e, int l) {
#ifdef ATM_T2_LUT
    const atm_mconfig *c = &e->m->cfg;
    if (!e->tab || conv_cache_bytes(c) == 0) return 0;
    return (const int8_t *)(e->tab + 64 * c->d_model) + (size_t)l * (size_t)c->kernel * (size_t)c->d_model;
#else
    (void)e; (void)l;
    return 0;   /* no table RAM in this build */
#endif
}

size_t atm_engine_tables_bytes(const atm_model *m) {
#ifdef ATM_T2_LUT
    if (m && m->cfg.d_model % 4 == 0) return (size_t)256 * (size_t)m->cfg.d_model + conv_cache_bytes(&m->cfg);
#else
    (void)m;
#endif
    return 0;
}

int atm_engine_set_tables(atm_engine *e, void *buf, size_t len) {
    if (!e || !e->m) return -1;
    if (!buf) { e->tab = 0; return 0; }
    const size_t need = atm_engine_tables_bytes(e->m);
    if (need == 0 || len < need || ((uintptr_t)buf & 3u) != 0) return -1;
    e->tab = (int32_t *)buf;
    const atm_model *m = e->m;
    const int n = m->cfg.kernel * m->cfg.d_model;
    if (conv_cache_bytes(&m->cfg) == 0) return 0;
    DECODE_BUF(tb, BUF);
    for (int l = 0; l < m->cfg.n_layers; l++) {
        const atm_tview C = atm_tensor(m, ATM_T_CONV, l);
        int8_t *o = (int8_t *)(e->tab + 64 * m->cfg.d_model) + (size_t)l * (size_t)n;
        for (int i = 0; i < n; i += CH) {
            const int k = n - i < CH ? n - i : CH;
            const int8_t *t = decode(C.data, m->encoding, (uint32_t)i, k, tb);
            for (int j = 0; j < k; j++) o[i + j] = t[j];
        }
    }
    return 0;
}

int atm_engine_set_kernel(atm_engine *e, int kernel) {
    if (!e) return -1;
    switch (kernel) {
    case ATM_KERNEL_AUTO: case ATM_KERNEL_PORTABLE: break;
#ifdef ATM_PLANES
    case ATM_KERNEL_PLANES: break;
#endif
#ifdef ATM_T2_LUT
    case ATM_KERNEL_LUT: break;
#endif
#ifdef ATM_T2_SIMD
    case ATM_KERNEL_SSE2: break;
#endif
#ifdef ATM_EK_X86
    case ATM_KERNEL_AVX2: case ATM_KERNEL_AVX512:
        if (!atm_ek_x86_supported(kernel)) return -1;
        break;
#endif
#ifdef ATM_EK_WASM
    case ATM_KERNEL_WASM: break;
#endif
    default: return -1;
    }
    e->kernel = kernel;
    return 0;
}

int atm_engine_kernel(const atm_engine *e) {
    if (!e || !e->m) return ATM_KERNEL_PORTABLE;
    int32_t *tab;
    return atm_select_kset(e, &tab)->kernel;
}
