/* core/engine.c — integer inference of the atome family, one byte per step.
 * Contract in engine.h; formats, rounding and the derivation of every shift
 * in docs/fixed-point.md. Freestanding: integers only, no library calls
 * (the compiler may emit its own helpers for 64-bit multiply/divide).
 *
 * Notation in comments: "Qn" = integer / 2^n. FX = residual fractional bits
 * (header), FU = fractional bits of a LayerNorm output (aux of its gamma
 * entry), FS = SSM state fractional bits (aux of SSM_A). A ternary tensor's
 * scale is alpha = mant * 2^-exp; an int16 vector's element is v * 2^-exp.
 *
 * Speed: the hot loops go through a kernel set (engine_kernels.h): the
 * plain-C kernels at the end of this file everywhere, instruction-set
 * versions (core/engine_x86.c, core/engine_wasm.c) where the CPU has them,
 * all bit-identical
 * (docs/fixed-point.md §9). */
#include "engine.h"
#include "engine_kernels.h"
#include "fixmath.h"

/* ---- tensor views ---- */

/* The fields of a tensor the engine uses, read straight from its table
 * entry (the reader validated the table; docs/format.md §3). */
typedef struct {
    const uint8_t *data;
    const uint8_t *en;         /* the table entry (tview_bytes) */
    uint32_t mant;
    int exp, aux;
} tview;

/* the tensor of a kind (present: the caller checked the pathways) */
static tview tensor(const atm_model *m, int kind, int layer) {
    const int idx = atm_model_tensor_index(m, kind, layer);
    const uint8_t *en = m->blob + ATM_CONTAINER_HEADER_BYTES + (size_t)idx * ATM_CONTAINER_ENTRY_BYTES;
    tview t;
    t.data = m->blob + atm_rd_u32le(en + 12);
    t.aux = en[3];
    t.exp = en[4];
    t.mant = atm_rd_u16le(en + 6);
    t.en = en;
    return t;
}

/* ---- trit decoding -------------------------------------------------------
 * Rows are decoded in chunks of up to CH trits into a small stack buffer and
 * then dotted with int16 activations. ATOME01 bytes map through T2 (4 trits
 * per byte), ATOME02 bytes through T5 (5 trits per byte); a chunk may start
 * at any trit (rows are not byte aligned in general) so the buffer holds the
 * whole first and last bytes: CH + 8 entries cover skip (<= 4) + CH + the
 * tail of the last byte (<= 4). The tables hold 0 for codes that validation
 * rejects (ATOME01 code 10, ATOME02 bytes 243..255). */
#define CH 64
#define BUF (CH + 16)
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
/* decode()'s buffers are word arrays (ATOME01 stores a word per byte) */
#define DECODE_BUF(name, n) uint32_t name##_w[((n) + 3) / 4]; int8_t *const name = (int8_t *)(void *)name##_w
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

#if defined(__SSE2__) && !defined(ATM_ENGINE_PORTABLE)
/* x86-64 kernel for ATOME01 rows of a multiple of 64 columns (byte aligned):
 * the 16 bytes of a 64-trit chunk are split into the four code positions
 * (trit 4i + p sits in byte i, bits 2p..2p+1), each turned into 16 int8
 * trits (code 01 -> 1, 11 -> -1, else 0), widened to int16 and multiplied
 * with x deinterleaved the same way (xd[16 p + i] = x[4 i + p]). Integer
 * sums are exact, so the result equals the portable kernel's bit for bit
 * (tests/test_engine.c compares ATOME01 with ATOME02, which never takes
 * this path). */
#include <emmintrin.h>
#define ATM_T2_SIMD 1
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

#if !defined(ATM_ENGINE_PORTABLE) && !defined(__ARM_ARCH_6M__)
/* Cortex-M3/M4 kernel for ATOME01 rows of a multiple of 4 columns (byte
 * aligned) when d <= ATM_LUT_MAX_D: per input vector a table of the 16
 * possible sums of each column pair, lut[16 g + (c0 | c1 << 2)] =
 * v(c0) x[2g] + v(c1) x[2g+1] with v = {0, +1, 0, -1} for the 2-bit codes;
 * a row byte (4 columns = 2 nibbles) then costs two table loads and two adds
 * instead of four multiply-adds. The table sits on the stack (4 KiB at
 * d = 128), so the Cortex-M0 build (16 KiB of RAM) leaves it out. It is the
 * default where no SIMD kernel exists (Cortex-M3/M4, wasm without SIMD) and
 * is built on hosts too so the tests can compare it with the others.
 * Exact integer sums: the result equals the portable kernel's. */
#define ATM_T2_LUT 1
#define ATM_LUT_MAX_D 128
#endif

/* the bit-plane kernel (below): built everywhere but the portable engine */
#ifndef ATM_ENGINE_PORTABLE
#define ATM_PLANES 1
#endif
#ifdef ATM_SMALL_RAM
#define PLANE_COLS 32
#else
#define PLANE_COLS 128
#endif

/* ATOME02 payloads reach the row kernels re-encoded as ATOME01: T10[b] is
 * the 10-bit ATOME01 code of the 5 trits of ATOME02 byte b (0 for the
 * invalid bytes 243..255), so 4 ATOME02 bytes (20 trits) become 5 ATOME01
 * bytes with two shifts and ORs. Blocks of whole rows are re-encoded into a
 * stack buffer (RECODE_GROUPS * 5 bytes) starting at a trit index that is a
 * multiple of 20; with cols % 4 == 0 every row then starts on a byte of the
 * buffer. Left out on Cortex-M0 (no row kernel there, and little stack). */
#if !defined(ATM_ENGINE_PORTABLE) && !defined(__ARM_ARCH_6M__)
#define ATM_T5_RECODE 1
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

/* A matvec input: the int16 vector, the row kernel chosen for it (NULL: the
 * decode path below) and what that kernel prepares from the vector once per
 * LayerNorm output (used by up to five matvecs). */
typedef struct vin vin;
typedef void (*row_kernel)(const uint8_t *b, uint32_t rows, uint32_t cols, const vin *in, int32_t *out);
typedef void (*recoder)(const uint8_t *p, uint32_t nbytes, uint32_t g0, uint32_t ng, uint8_t *out);
struct vin {
    const int16_t *x;            /* [cols] */
    row_kernel     rk;
    recoder        t5;           /* ATOME02 -> ATOME01 for rk */
#ifdef ATM_T2_SIMD
    int16_t xd[ATM_MAX_D];       /* SSE2: xd[64 k + 16 p + i] = x[64 k + 4 i + p] */
#endif
#ifdef ATM_EK_X86
    atm_ek_vec xv;               /* AVX2 / AVX-512 */
#endif
#ifdef ATM_EK_WASM
    atm_ek_wvec wv;              /* wasm SIMD128 */
#endif
#ifdef ATM_T2_LUT
    int32_t lut[ATM_LUT_MAX_D / 2 * 16];
    const int32_t *t8;           /* the byte tables (in the engine's table RAM), NULL: the pair table */
#endif
#ifdef ATM_PLANES
    int32_t planes;              /* 1: the bit-plane kernel */
    int32_t pchunk;              /* the column chunk whose tables ptab holds, -1 none */
    uintptr_t oxd;               /* offset stream: a model byte b's pair at oxd + 2 b; 0 none */
    int32_t ptab[PLANE_COLS * 4];
#endif
};

#ifdef ATM_T2_SIMD
static void rk_sse2(const uint8_t *b, uint32_t rows, uint32_t cols, const vin *in, int32_t *out) {
    matvec_t2_sse2(b, rows, cols, in->xd, out);
}
#endif
#ifdef ATM_EK_X86
static void rk_avx2(const uint8_t *b, uint32_t rows, uint32_t cols, const vin *in, int32_t *out) {
    atm_ek_matvec_avx2(b, rows, cols, &in->xv, out);
}
static void rk_avx512(const uint8_t *b, uint32_t rows, uint32_t cols, const vin *in, int32_t *out) {
    atm_ek_matvec_avx512(b, rows, cols, &in->xv, out);
}
#endif
#ifdef ATM_EK_WASM
static void rk_wasm(const uint8_t *b, uint32_t rows, uint32_t cols, const vin *in, int32_t *out) {
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
static void rk_lut(const uint8_t *b, uint32_t rows, uint32_t cols, const vin *in, int32_t *out) {
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
static void rk_lut8(const uint8_t *b, uint32_t rows, uint32_t cols, const vin *in, int32_t *out) {
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

/* The kernel used for a model of width d: the requested one if this build
 * and CPU have it and d fits it, else the best that does (AUTO: AVX-512,
 * AVX2, SSE2, wasm SIMD128, pair-sum table, portable). Row kernels need
 * d % 4 == 0 (rows start on a byte); SSE2 needs d % 64 == 0, the table
 * d <= 128. */
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

/* the offset stream for the bit-plane kernel (after vin_prep) */
#ifdef ATM_PLANES
#define VIN_OX(in, e) ((in)->oxd = (e)->ox ? (uintptr_t)(e)->ox - 2 * (uintptr_t)(e)->m->blob : 0)
#else
#define VIN_OX(in, e) ((void)0)
#endif

static void vin_prep(vin *in, const int16_t *x, int d, int kernel, int32_t *tab) {
    in->x = x;
    in->rk = 0;
#ifdef ATM_PLANES
    in->planes = kernel == ATM_KERNEL_PLANES;
    in->pchunk = -1;
#endif
#ifdef ATM_T5_RECODE
    in->t5 = atm_ek_t5_to_t2_ref;
#endif
    (void)d;
    (void)tab;
    switch (kernel) {
#ifdef ATM_T2_SIMD
    case ATM_KERNEL_SSE2:
        for (int k = 0; k < d; k += 64)
            for (int p = 0; p < 4; p++)
                for (int i = 0; i < 16; i++) in->xd[k + 16 * p + i] = x[k + 4 * i + p];
        in->rk = rk_sse2;
        break;
#endif
#ifdef ATM_EK_X86
    case ATM_KERNEL_AVX2:
    case ATM_KERNEL_AVX512:
        atm_ek_prep_avx2(x, (uint32_t)d, &in->xv);
        in->rk = kernel == ATM_KERNEL_AVX2 ? rk_avx2 : rk_avx512;
        in->t5 = kernel == ATM_KERNEL_AVX2 ? atm_ek_t5_to_t2_avx2 : atm_ek_t5_to_t2_avx512;
        break;
#endif
#ifdef ATM_EK_WASM
    case ATM_KERNEL_WASM:
        atm_ek_prep_wasm(x, (uint32_t)d, &in->wv);
        in->rk = rk_wasm;
        break;
#endif
#ifdef ATM_T2_LUT
    case ATM_KERNEL_LUT:
        if (tab) {                                    /* the byte tables (atm_engine_set_tables) */
            atm_ek_lut8_build(x, (uint32_t)d, tab);
            in->t8 = tab;
            in->rk = rk_lut8;
            break;
        }
        for (int g = 0; g < d / 2; g++) {
            const int32_t a = x[2 * g], b = x[2 * g + 1];
            int32_t *t = in->lut + 16 * g;
            /* index c0 | c1 << 2; codes 0 and 2 mean 0, 1 means +1, 3 means -1 */
            const int32_t va[4] = { 0, a, 0, -a };
            for (int c1 = 0; c1 < 4; c1++) {
                const int32_t vb = c1 == 1 ? b : (c1 == 3 ? -b : 0);
                t[4 * c1 + 0] = vb; t[4 * c1 + 1] = va[1] + vb;
                t[4 * c1 + 2] = vb; t[4 * c1 + 3] = va[3] + vb;
            }
        }
        in->rk = rk_lut;
        break;
#endif
    default:
        break;
    }
}

#ifdef ATM_PLANES
/* one matrix of a bit-plane product: its ATOME01 rows and their count */
typedef struct { const uint8_t *b; uint32_t rows; } prow;

/* The bit-plane kernel over column chunks of at most PLANE_COLS, starting
 * with the chunk whose tables are built (the sums are exact, so the order
 * of the chunks changes nothing), for nm matrices of the same input at
 * once (their sums one after another in out): a chunk's tables are built
 * once for all of them. */
static void planes_matvecs(const prow *p, int nm, uint32_t cols, vin *in, int32_t *out) {
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
            const uint8_t *b = p[j].b + c0 / 4;
            /* every row 4-aligned (checked here too: the fallback inside
             * atm_ek_planes_rows_ox is one frame deeper than the micro:bit's stack has room for) */
            if (in->oxd && ((uintptr_t)b & 3u) == 0 && (nb & 3u) == 0)
                atm_ek_planes_rows_ox(b, (const uint8_t *)(in->oxd + 2 * (uintptr_t)b), nb, p[j].rows, cc / 4,
                                      in->ptab, o, i != 0);
            else
                atm_ek_planes_rows(b, nb, p[j].rows, cc / 4, in->ptab, o, i != 0);
            o += p[j].rows;
        }
        if (++k == nch) k = 0;
    }
}
#endif

#ifdef ATM_T5_RECODE
/* a tensor's payload length (computed where needed: a division by 5) */
static uint32_t tview_bytes(int enc, const tview *t) {
    const uint32_t count = atm_rd_u32le(t->en + 8);
    return t->en[2] != ATM_DT_TRITS ? 2 * count : (enc == ATM_ENC_ATOME01 ? (count + 3) / 4 : (count + 4) / 5);
}
#endif

/* out[r] = sum_c T[r][c] * x[c] for r < rows (T is rows x cols). */
static void matvec(const tview *T, int enc, uint32_t rows, uint32_t cols,
                   vin *in, int32_t *out) {
    const int16_t *x = in->x;
#ifdef ATM_PLANES
    if (in->planes && enc == ATM_ENC_ATOME01 && cols % 4u == 0) {
        const prow p = { T->data, rows };
        planes_matvecs(&p, 1, cols, in, out);
        return;
    }
#endif
    if (in->rk && cols % 4u == 0) {
        if (enc == ATM_ENC_ATOME01) { in->rk(T->data, rows, cols, in, out); return; }
#ifdef ATM_T5_RECODE
        uint8_t buf[RECODE_GROUPS * 5];
        const uint32_t maxr = (RECODE_GROUPS * 20 - 16) / cols, tb = tview_bytes(enc, T);
        for (uint32_t r0 = 0; r0 < rows; ) {
            const uint32_t nr = rows - r0 < maxr ? rows - r0 : maxr;
            const uint32_t first = r0 * cols, g0 = first / 20;
            const uint32_t ng = ((r0 + nr) * cols - 20 * g0 + 19) / 20;
            in->t5(T->data, tb, g0, ng, buf);
            in->rk(buf + (first - 20 * g0) / 4, nr, cols, in, out + r0);
            r0 += nr;
        }
        return;
#endif
    }
#if defined(__ARM_ARCH_6M__)
    /* Cortex-M0: each row's trits straight from the payload bytes
     * (atm_ek_rowdot), no decode buffer; ATOME02 row starts advance by
     * cols = 5 q + rm trits without a division per row. Elsewhere the
     * portable kernel keeps the decode buffer, whose fixed-length dot
     * compilers vectorise (2x faster on x86-64 than the fused loop). */
    if (enc == ATM_ENC_ATOME01) {
        for (uint32_t r = 0; r < rows; r++)
            out[r] = atm_ek_rowdot(T->data + ((r * cols) >> 2), (int)((r * cols) & 3u), (int)cols, x, enc);
        return;
    }
    const uint32_t q = cols / 5u, rm = cols - 5u * q;
    const uint8_t *b = T->data;
    uint32_t skip = 0;
    for (uint32_t r = 0; r < rows; r++) {
        out[r] = atm_ek_rowdot(b, (int)skip, (int)cols, x, enc);
        b += q; skip += rm;
        if (skip >= 5u) { skip -= 5u; b++; }
    }
#else
    DECODE_BUF(buf, BUF);
    if (cols == CH) {
        for (uint32_t r = 0; r < rows; r++) out[r] = dot_full(decode(T->data, enc, r * CH, CH, buf), x);
        return;
    }
    for (uint32_t r = 0; r < rows; r++) {
        uint32_t first = r * cols;
        int32_t acc = 0;
        for (uint32_t c = 0; c < cols; c += CH) {
            int n = cols - c < CH ? (int)(cols - c) : CH;
            const int8_t *t = decode(T->data, enc, first + c, n, buf);
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

/* ---- small helpers ---- */

static const int32_t X_LIM = (1 << 30) - 1;   /* residual / state clamp: differences fit int32 */

static int16_t rd16(const tview *t, uint32_t i) { return atm_rd_i16le(t->data + 2 * i); }

/* v * mul rounded to 2^-s (half up). fast: 1 <= s <= 62 and mul fits int32
 * (every well-formed model: the multipliers are products of a Q15 weight
 * and a 16-bit mantissa, < 2^31), computed as (v mul + 2^(s-1)) >> s with
 * a 32 x 32 -> 64-bit product; otherwise atm_rnd64 (saturating left shifts,
 * s >= 63 -> 0). Both give the same value where both apply. */
typedef struct { int64_t mul; int s, fast; } scaler;
static scaler mk_scaler(int64_t mul, int s) {
    scaler k;
    k.mul = mul; k.s = s; k.fast = s >= 1 && s <= 62 && mul >= -INT32_MAX && mul <= INT32_MAX;
    return k;
}
/* (the half is made here, not in mk_scaler: the kernels take mul and s, and
 * a 64-bit shift is a libgcc call on the M0) */
static int64_t scale(const scaler *k, int64_t v) {
    return k->fast ? atm_asr64(v * k->mul + ((int64_t)1 << (k->s - 1)), k->s) : atm_rnd64(v * k->mul, k->s);
}
/* atm_rnd64(v, s) for |v| < 2^30 and s >= 0 in 32-bit arithmetic (for s
 * >= 31 every such v rounds to 0) */
static int32_t rnd32(int32_t v, int s) {
    if (s <= 0) return v;
    if (s >= 31) return 0;
    return (v + ((int32_t)1 << (s - 1))) >> s;
}
/* residual update with its clamp */
static int32_t add_x(int32_t x, const scaler *k, int64_t v) {
    return atm_clamp32((int64_t)x + scale(k, v), X_LIM);
}
/* The elementwise and attention kernels of a kernel set (engine_kernels.h):
 * the plain-C twins everywhere, their AVX2 versions in the x86 sets. conv_ch
 * is how many trits the conv pathway decodes per chunk for the set's conv
 * kernel (the portable chunk fits a small stack). */
typedef struct {
    void (*dots)(const int16_t *q, const int8_t *k, int dh, int n, int32_t *out);
    void (*mix)(const int32_t *w, const int32_t *idx, const int8_t *base, int n, int d, int32_t *out);
    void (*addsc)(int32_t *x, const int32_t *v, int n, int32_t mul, int s);
    void (*scale)(int32_t *v, int n, int32_t mul, int s);
    uint8_t (*quant32)(const int32_t *src, int n, int8_t *dst);
    uint8_t (*quant16)(const int16_t *src, int n, int8_t *dst);
    void (*ln_stats)(const int32_t *x, int d, int64_t *sum, int32_t *lo, int32_t *hi);
    int64_t (*ln_center)(const int32_t *x, int d, int32_t mean, int k, int16_t *u);
    void (*ln_out)(int16_t *u, const uint8_t *g, const uint8_t *b, int d, int32_t r15, int sg, int sb);
    void (*ssm)(int32_t *s, const uint8_t *a, const uint8_t *bc, const int16_t *u, int d, int sb);
    void (*conv)(const int8_t *t, int K, int nc, const int16_t *u, const int8_t *ring, int ld,
                 const uint8_t *rexp, int next, int kh, int taps, int32_t *acc);
    void (*scores)(const int32_t *dots, const uint8_t *kexp, int n, int64_t ms, int sbase, int32_t *out);
    int conv_ch;
    void (*softmax)(const int32_t *z, int n, int32_t *p, uint32_t *e);
} kset;

#if !(defined(__ARM_ARCH_6M__) || defined(__ARM_ARCH_7M__) || defined(__ARM_ARCH_7EM__)) || defined(ATM_ENGINE_PORTABLE)
static const kset KS_REF = {
    atm_ek_dots_ref, atm_ek_mix_ref, atm_ek_addsc_ref, atm_ek_scale_ref, atm_ek_quant32_ref,
    atm_ek_quant16_ref, atm_ek_ln_stats_ref, atm_ek_ln_center_ref, atm_ek_ln_out_ref, atm_ek_ssm_ref,
    atm_ek_conv_ref, atm_ek_scores_ref, CH, atm_ek_softmax_q15
};
#endif
#if defined(__ARM_ARCH_6M__) && !defined(ATM_ENGINE_PORTABLE)
/* Cortex-M0 / M0+: no 32 x 32 -> 64 multiply; the 32-bit versions where
 * they exist (engine_kernels.h), the twins elsewhere */
#define ATM_KS_M0 1
static const kset KS_M0 = {
    atm_ek_dots_m0, atm_ek_mix_m0, atm_ek_addsc_i32, atm_ek_scale_i32, atm_ek_quant32_i32,
    atm_ek_quant16_i32, atm_ek_ln_stats_i32, atm_ek_ln_center_i32, atm_ek_ln_out_i32, atm_ek_ssm_i32,
    atm_ek_conv_m0, atm_ek_scores_m3, CH, atm_ek_softmax_h
};
#endif
#ifdef ATM_EK_X86
#define CONV_CH_X86 1024      /* trits per conv chunk on x86 (a 1 KiB stack buffer) */
static const kset KS_AVX2 = {
    atm_ek_dots_avx2, atm_ek_mix_avx2, atm_ek_addsc_avx2, atm_ek_scale_avx2, atm_ek_quant32_avx2,
    atm_ek_quant16_avx2, atm_ek_ln_stats_avx2, atm_ek_ln_center_avx2, atm_ek_ln_out_avx2, atm_ek_ssm_avx2,
    atm_ek_conv_avx2, atm_ek_scores_avx2, CONV_CH_X86, atm_ek_softmax_avx2
};
static const kset KS_AVX512 = {
    atm_ek_dots_avx2, atm_ek_mix_avx2, atm_ek_addsc_avx512, atm_ek_scale_avx512, atm_ek_quant32_avx2,
    atm_ek_quant16_avx2, atm_ek_ln_stats_avx2, atm_ek_ln_center_avx2, atm_ek_ln_out_avx512, atm_ek_ssm_avx512,
    atm_ek_conv_avx2, atm_ek_scores_avx512, CONV_CH_X86, atm_ek_softmax_avx2
};
#endif


#if (defined(__ARM_ARCH_7M__) || defined(__ARM_ARCH_7EM__)) && !defined(ATM_ENGINE_PORTABLE)
/* Cortex-M3 / M4: the word-at-a-time mix and dots and the channel-major
 * conv taps of the M0 set (engine_m0.c; unaligned word loads are allowed
 * here, aligned ones the rule), the twins elsewhere */
#define ATM_KS_M3 1
#ifdef ATM_M3_ASM
/* engine_m3.S for dh = 8, 16, 32, 64 on word-aligned keys, the word-at-a-time C otherwise */
static void dots_m3(const int16_t *q, const int8_t *k, int dh, int n, int32_t *out) {
    if (n <= 0 || ((uintptr_t)k & 3u) != 0 || atm_ek_dots_m3(q, k, dh, n, out) != 0) atm_ek_dots_m0(q, k, dh, n, out);
}
#define DOTS_M3 dots_m3
/* engine_m3.S for d % 8 == 0 and up to 32 kept positions, the word-at-a-time C otherwise */
static void mix_m3(const int32_t *w, const int32_t *idx, const int8_t *base, int n, int d, int32_t *out) {
    if (atm_ek_mix_m3(w, idx, base, n, d, out) != 0) atm_ek_mix_m0(w, idx, base, n, d, out);
}
#define MIX_M3 mix_m3
#else
#define DOTS_M3 atm_ek_dots_m0
#define MIX_M3 atm_ek_mix_m0
#endif
#define CONV_CH_M3 320    /* trits per conv chunk on the M3: 64 channels of 5 (engine_m3.S's loop) */
static const kset KS_M3 = {
    DOTS_M3, MIX_M3, atm_ek_addsc_m3, atm_ek_scale_m3, atm_ek_quant32_i32,
    atm_ek_quant16_i32, atm_ek_ln_stats_i32, atm_ek_ln_center_i32, atm_ek_ln_out_m3, atm_ek_ssm_m3,
    atm_ek_conv_m3, atm_ek_scores_m3, CONV_CH_M3, atm_ek_softmax_w
};
#endif

static const kset *pick_kset(int kernel) {
#ifdef ATM_EK_X86
    if (kernel == ATM_KERNEL_AVX2) return &KS_AVX2;
    if (kernel == ATM_KERNEL_AVX512) return &KS_AVX512;
#else
    (void)kernel;
#endif
#ifdef ATM_KS_M0
    return &KS_M0;
#elif defined(ATM_KS_M3)
    return &KS_M3;
#else
    return &KS_REF;
#endif
}

/* x[c] = clamp(x[c] + round(v[c] * mul / 2^s)) for c < n */
static void add_scaled(const kset *ks, int32_t *x, const int32_t *v, int n, const scaler *k) {
    if (k->fast) ks->addsc(x, v, n, (int32_t)k->mul, k->s);
    else for (int c = 0; c < n; c++) x[c] = add_x(x[c], k, v[c]);
}

#if defined(__ARM_ARCH_6M__)
#define NO_HW_DIV 1   /* the Cortex-M0 divides in libgcc */
#else
#define NO_HW_DIV 0
#endif
/* floor(a / b + 1/2) for b >= 1: by a shift for a power-of-two b where there
 * is no divider (d = 64), else in 32-bit arithmetic where a and b fit (the
 * usual case: libgcc's 64-bit division is a long routine on the M0) */
static int64_t div_round(int64_t a, int64_t b) {
    if (NO_HW_DIV && b > 0 && (b & (b - 1)) == 0 && a > -((int64_t)1 << 62) && a < ((int64_t)1 << 62))
        return atm_asr64(a + b / 2, atm_bitlen32((uint32_t)b) - 1);
    if (a > -((int64_t)1 << 30) && a < ((int64_t)1 << 30) && b < (1 << 16)) {
        const int32_t a2 = (int32_t)a + (int32_t)b / 2, q = a2 / (int32_t)b;
        return a2 - q * (int32_t)b < 0 ? q - 1 : q;
    }
    int64_t q = (a + b / 2) / b, r = (a + b / 2) - q * b;
    return r < 0 ? q - 1 : q;
}

/* floor(a / d + 1/2) for a < 2^62, d >= 1: in 32 bits where a fits (one
 * division where there is a divider), by a shift for a power-of-two d where
 * the division would be a libgcc call (the 64-bit one everywhere but x86 and
 * wasm64, any one on the M0) */
static uint64_t udiv_round(uint64_t a, uint32_t d) {
    const int pow2 = (d & (d - 1u)) == 0;
    if (a < ((uint64_t)1 << 31) && !(NO_HW_DIV && pow2)) return ((uint32_t)a + d / 2u) / d;
    if (pow2) return (a + d / 2u) >> (atm_bitlen32(d) - 1);
    return (a + d / 2u) / d;
}

/* ---- LayerNorm ------------------------------------------------------------
 * u = (x - mean) / sqrt(var + eps) * gamma + beta, biased variance, eps 1e-5
 * as the trainer. x is centred, scaled by 2^-k (floor) so that max |y| is
 * 2^14..2^15 - 1 (k may be negative), var = sum y^2 / d (64-bit), eps is converted to the
 * units of y, 1/sqrt comes from atm_rsqrt64, and each output is
 * y * (r >> 15) * g rescaled to Q(FU) plus beta rescaled to Q(FU). */
#define EPS_Q32 42950   /* round(1e-5 * 2^32) */

static void layernorm(const kset *ks, const int32_t *x, int d, int fx, const tview *G, const tview *B,
                      int16_t *u) {
    const int fu = G->aux;
    int64_t sum;
    int32_t lo, hi;
    ks->ln_stats(x, d, &sum, &lo, &hi);
    const int32_t mean = (int32_t)div_round(sum, d);
    /* max |x - mean| is reached at the smallest or the largest x */
    const uint32_t a0 = atm_abs32(hi - mean), a1 = atm_abs32(lo - mean);
    const uint32_t maxabs = a0 > a1 ? a0 : a1;
    const scaler sb = mk_scaler(1, B->exp - fu);
    if (maxabs == 0) {
        for (int i = 0; i < d; i++) u[i] = atm_sat16(scale(&sb, rd16(B, (uint32_t)i)));
        return;
    }
    /* y = (x - mean) * 2^-k, floor for k > 0: -2^15 <= y < 2^15 fits int16 (kept in u) */
    const int k = atm_bitlen32(maxabs) - 15;
    const int64_t vs = ks->ln_center(x, d, mean, k, u);
    uint64_t var = udiv_round((uint64_t)vs, (uint32_t)d);
    /* eps in units of y^2: 1e-5 * 2^(2 (fx - k)) = EPS_Q32 * 2^(2 (fx - k) - 32) */
    const int e2 = 2 * (fx - k) - 32;
    uint64_t eps = e2 >= 0 ? (uint64_t)EPS_Q32 << (e2 > 46 ? 46 : e2) : (uint64_t)atm_rnd64(EPS_Q32, -e2);
    int sh;
    const uint32_t r = atm_rsqrt64(var + eps, &sh);
    const int32_t r15 = (int32_t)(r >> 15);                 /* [2^14, 2^15] */
    const scaler sg = mk_scaler(1, sh + G->exp - fu - 15);
    if (sg.fast && sb.s >= -16 && sb.s <= 30) {             /* the kernel's ranges */
        ks->ln_out(u, G->data, B->data, d, r15, sg.s, sb.s);
    } else {
        for (int i = 0; i < d; i++) {
            const int32_t gr = r15 * rd16(G, (uint32_t)i);  /* |gr| <= 2^30 */
            u[i] = atm_sat16(scale(&sg, (int64_t)u[i] * gr) + scale(&sb, rd16(B, (uint32_t)i)));
        }
    }
}

/* ---- arena ---- */

static uint32_t max3(uint32_t a, uint32_t b, uint32_t c) {
    uint32_t m = a > b ? a : b;
    return m > c ? m : c;
}

typedef struct {
    size_t x, ssm, wide, sel_s, sel_i, rw, u, q, kc, vc, kexp, vexp, ring, ringexp, total;
} arena_plan;

static size_t round4(size_t n) { return (n + 3u) & ~(size_t)3u; }

/* Words of `wide` before the top-k selection stored in its tail: at least
 * d (the mixed row) and tk (the softmax scratch), and at least max(vocab, d,
 * dh) (the logits, the q/k/v rows) when the model has no attention. */
static uint32_t wide_cap(const atm_mconfig *c) {
    const uint32_t d = (uint32_t)c->d_model, at = (c->pathways & ATM_PATH_ATTN) != 0;
    const uint32_t dh = at ? (uint32_t)c->d_head : 0, tk = at ? (uint32_t)c->top_k : 0;
    const uint32_t wl = max3(max3((uint32_t)c->vocab, d, dh), d + 2 * tk, 3 * tk);
    return wl - 2 * tk;
}

static void plan(const atm_model *m, uint32_t W, arena_plan *p) {
    const atm_mconfig *c = &m->cfg;
    const size_t d = (size_t)c->d_model, L = (size_t)c->n_layers;
    const int at = (c->pathways & ATM_PATH_ATTN) != 0, sm = (c->pathways & ATM_PATH_SSM) != 0;
    const size_t dh = at ? (size_t)c->d_head : 0, tk = at ? (size_t)c->top_k : 0, w = at ? W : 0;
    const size_t kh = (c->pathways & ATM_PATH_CONV) ? (size_t)c->kernel - 1 : 0;
    size_t o = 0;
    p->x = o; o += 4 * d;
    p->ssm = o; o += sm ? 4 * L * d : 0;
    /* wide: the logits, the q/k/v rows, and in attention the scores of a
     * run of slots, the softmax scratch and the mixed row; the top-k
     * selection (scores and slots, 2 * tk words) lives in its last words, so
     * wide holds at least d + 2 tk and 3 tk words (see wide_cap) */
    const size_t wl = max3(max3((uint32_t)c->vocab, (uint32_t)d, (uint32_t)dh), (uint32_t)(d + 2 * tk), (uint32_t)(3 * tk));
    p->wide = o; o += 4 * wl;
    p->sel_s = p->wide + 4 * (wl - 2 * tk);
    p->sel_i = p->wide + 4 * (wl - tk);
    p->rw = o; o += 16;
    p->u = o; o += 2 * d;
    p->q = o; o = round4(o + 2 * dh);
    p->kc = o; o += L * w * dh;
    p->vc = o; o += L * w * d;
    p->kexp = o; o += L * w;
    p->vexp = o; o += L * w;
    p->ring = o; o += L * kh * d;
    p->ringexp = o; o += L * kh;
    p->total = round4(o);
}

size_t atm_engine_arena_bytes(const atm_model *m, int window) {
    if (!m) return 0;
    if (window == 0) window = m->cfg.window;
    if (window < 1 || window > ATM_MAX_WINDOW) return 0;
    arena_plan p;
    plan(m, (uint32_t)window, &p);
    return p.total;
}

atm_status atm_engine_init(atm_engine *e, const atm_model *m, int window, void *arena, size_t arena_len) {
    if (!e || !m || !arena) return ATM_E_ARG;
    if (window == 0) window = m->cfg.window;
    if (window < 1 || window > ATM_MAX_WINDOW) return ATM_E_WINDOW;
    arena_plan p;
    plan(m, (uint32_t)window, &p);
    if (arena_len < p.total || ((uintptr_t)arena & 3u) != 0) return ATM_E_ARENA;
    uint8_t *b = (uint8_t *)arena;
    e->m = m;
    e->window = window;
    e->kernel = ATM_KERNEL_AUTO;
    e->x = (int32_t *)(void *)(b + p.x);
    e->ssm = (int32_t *)(void *)(b + p.ssm);
    e->wide = (int32_t *)(void *)(b + p.wide);
    e->sel_s = (int32_t *)(void *)(b + p.sel_s);
    e->sel_i = (int32_t *)(void *)(b + p.sel_i);
    e->rw = (int32_t *)(void *)(b + p.rw);
    e->u = (int16_t *)(void *)(b + p.u);
    e->q = (int16_t *)(void *)(b + p.q);
    e->kc = (int8_t *)(b + p.kc);
    e->vc = (int8_t *)(b + p.vc);
    e->kexp = b + p.kexp;
    e->vexp = b + p.vexp;
    e->ring = (int8_t *)(b + p.ring);
    e->ringexp = b + p.ringexp;
    e->tab = 0;
    e->ox = 0;
    for (size_t i = 0; i < p.total; i++) b[i] = 0;
    atm_engine_reset(e);
    return ATM_OK;
}

/* The conv trits of every layer, decoded once into the table RAM after the
 * byte tables (L K d int8, rounded to a word; 0 without a conv pathway):
 * conv_path then reads them instead of decoding its layer's trits at every
 * step. The same trits, so the same sums. */
static size_t conv_cache_bytes(const atm_mconfig *c) {
    if (!(c->pathways & ATM_PATH_CONV) || c->kernel < 1) return 0;
    return ((size_t)c->n_layers * (size_t)c->kernel * (size_t)c->d_model + 3u) & ~(size_t)3u;
}

static const int8_t *conv_cache(const atm_engine *e, int l) {
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
        const tview C = tensor(m, ATM_T_CONV, l);
        int8_t *o = (int8_t *)(e->tab + 64 * m->cfg.d_model) + (size_t)l * (size_t)n;
        for (int i = 0; i < n; i += CH) {
            const int k = n - i < CH ? n - i : CH;
            const int8_t *t = decode(C.data, m->encoding, (uint32_t)i, k, tb);
            for (int j = 0; j < k; j++) o[i + j] = t[j];
        }
    }
    return 0;
}

/* The kernel a step runs, and whether it uses the byte tables: the pair-sum
 * table or bit-plane kernel become the byte tables when the engine has
 * table RAM. */
static int resolve_kernel(const atm_engine *e, int32_t **tab) {
    const int d = e->m->cfg.d_model;
    int k = pick_kernel(e->kernel, d);
    *tab = 0;
#ifdef ATM_T2_LUT
    if (e->tab && d % 4 == 0 && (k == ATM_KERNEL_LUT || k == ATM_KERNEL_PLANES)) {
        *tab = e->tab;
        k = ATM_KERNEL_LUT;
    }
#endif
    return k;
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
    return resolve_kernel(e, &tab);
}

void atm_engine_reset(atm_engine *e) {
    if (!e || !e->m) return;
    const atm_mconfig *c = &e->m->cfg;
    if (c->pathways & ATM_PATH_SSM)
        for (int32_t i = 0; i < c->n_layers * c->d_model; i++) e->ssm[i] = 0;
    e->kv_next = e->kv_count = 0;
    e->ring_next = e->ring_count = 0;
    e->pos_lo = e->pos_hi = 0;
}

/* ---- pathways ---- */

/* conv: acc[c] = sum_j trit[c][j] * u_{t-j}[c] in Q(FU) (ring rows are
 * int8 << exponent), x += r * alpha * acc; then u_t enters the ring. The
 * trits are decoded in chunks of whole channels (ks->conv_ch trits at
 * most) and summed tap by tap (atm_ek_conv_*); acc collects in `wide`
 * (free until the attention pathway). */
static void conv_path(atm_engine *e, const kset *ks, int l, int32_t r, int fu) {
    const atm_model *m = e->m;
    const int d = m->cfg.d_model, K = m->cfg.kernel, kh = K - 1;
    const tview C = tensor(m, ATM_T_CONV, l);
#ifdef ATM_EK_X86
    DECODE_BUF(buf, CONV_CH_X86 + 16);
#elif defined(ATM_KS_M3)
    DECODE_BUF(buf, CONV_CH_M3 + 16);
#else
    DECODE_BUF(buf, BUF);
#endif
    int8_t *ring = e->ring + (size_t)l * (size_t)kh * (size_t)d;
    uint8_t *rexp = e->ringexp + (size_t)l * (size_t)kh;
    const scaler sc = mk_scaler(atm_smull(r, (int32_t)C.mant), C.exp + fu + 15 - m->cfg.fx);
    const int taps = 1 + ((int)e->ring_count < kh ? (int)e->ring_count : kh);
    int32_t *acc = e->wide;
    const int g = ks->conv_ch / K;                         /* channels per decoded chunk */
    const int8_t *cached = conv_cache(e, l);   /* the layer's trits in the table RAM, or NULL */
#if defined(__ARM_ARCH_6M__) && defined(ATM_M0_ASM)
    /* the M0's Thumb-1 taps (K = 5, all taps) straight from step: the ring
     * rows and shifts found once a layer, not once a chunk, and kept in
     * wide after conv's sums (the micro:bit's stack has no room) */
    if (ks->conv == atm_ek_conv_m0 && K == 5 && taps == 5 && kh == 4 && (uint32_t)d + 8u <= wide_cap(&m->cfg)) {
        const int8_t **rp = (const int8_t **)(void *)(acc + d);
        int32_t *ex = acc + d + 4;
        atm_ek_conv_rows4(ring, d, rexp, (int)e->ring_next, rp, ex);
        if ((uint32_t)d + 8u + ((uint32_t)(d * K) + BUF - CH + 3u) / 4u <= wide_cap(&m->cfg)) {
            /* the layer's trits decoded at once, after them in wide */
            const int8_t *t = decode(C.data, m->encoding, 0, d * K, (int8_t *)(void *)(acc + d + 8));
            atm_ek_conv5_m0(t, d, e->u, rp, ex, acc);
        } else
            for (int c0 = 0; c0 < d; c0 += g) {
                const int nc = d - c0 < g ? d - c0 : g;
                const int8_t *t = decode(C.data, m->encoding, (uint32_t)c0 * (uint32_t)K, nc * K, buf);
                atm_ek_conv5_m0(t, nc, e->u + c0, rp, ex, acc + c0);
                for (int j = 0; j < 4; j++) rp[j] += nc;
            }
    } else
#endif
    for (int c0 = 0; c0 < d; c0 += g) {
        const int nc = d - c0 < g ? d - c0 : g;
        const int8_t *t = cached ? cached + c0 * K : decode(C.data, m->encoding, (uint32_t)c0 * (uint32_t)K, nc * K, buf);
        ks->conv(t, K, nc, e->u + c0, ring + c0, d, rexp, (int)e->ring_next, kh, taps, acc + c0);
    }
    add_scaled(ks, e->x, acc, d, &sc);
    if (kh > 0) rexp[e->ring_next] = ks->quant16(e->u, d, ring + (size_t)e->ring_next * (size_t)d);
}

/* ssm: s = a * s + (b c) * u in Q(FS); x += r * s. */
static void ssm_path(atm_engine *e, const kset *ks, int l, int32_t r, int fu) {
    const atm_model *m = e->m;
    const int d = m->cfg.d_model;
    const tview A = tensor(m, ATM_T_SSM_A, l), BC = tensor(m, ATM_T_SSM_BC, l);
    const int fs = A.aux;
    const scaler sb = mk_scaler(1, BC.exp + fu - fs);
    const scaler sx = mk_scaler(r, 15 + fs - m->cfg.fx);
    int32_t *s = e->ssm + (size_t)l * (size_t)d;
    if (sb.s >= -32 && sb.s <= 62) {                        /* the kernel's range */
        ks->ssm(s, A.data, BC.data, e->u, d, sb.s);
    } else {
        for (int c = 0; c < d; c++) {
            /* a s: Q15 times Q(FS), rounded back to Q(FS) (|a s| < 2^45) */
            const int64_t v = atm_asr64((int64_t)rd16(&A, (uint32_t)c) * s[c] + (1 << 14), 15)
                            + scale(&sb, (int64_t)rd16(&BC, (uint32_t)c) * e->u[c]);
            s[c] = atm_clamp32(v, X_LIM);
        }
    }
    add_scaled(ks, e->x, s, d, &sx);
}

/* The k-th highest of a[0, n) (1 <= k <= n), by selection (Hoare
 * partitions, middle pivot) over a copy in t[n]. */
static int32_t kth_largest(const int32_t *a, int n, int k, int32_t *t) {
    for (int i = 0; i < n; i++) t[i] = a[i];
    int lo = 0, hi = n - 1;
    const int want = k - 1;
    while (lo < hi) {
        const int32_t pv = t[lo + (hi - lo) / 2];
        int i = lo, j = hi;
        while (i <= j) {
            while (t[i] > pv) i++;
            while (t[j] < pv) j--;
            if (i <= j) { const int32_t x = t[i]; t[i] = t[j]; t[j] = x; i++; j--; }
        }
        /* t[lo..j] >= pv >= t[i..hi], and t(j..i) == pv */
        if (want <= j) hi = j;
        else if (want >= i) lo = i;
        else return pv;
    }
    return t[want];
}

void atm_ek_topk_set(const int32_t *sc, int n, int k, int32_t *scratch, int32_t *sel_s, int32_t *sel_t) {
    const int32_t T = kth_largest(sc, n, k, scratch);
    int cnt = 0, ties = k;
    for (int t = 0; t < n; t++) ties -= sc[t] > T;
    for (int t = 0; t < n && cnt < k; t++)
        if (sc[t] > T || (sc[t] == T && ties-- > 0)) { sel_s[cnt] = sc[t]; sel_t[cnt++] = t; }
}

#define TOPK_PAIRS 32   /* the M3's insertion on the stack: at most 32 kept */

/* the scores of `run` cached positions from slot j into out */
static void run_scores(atm_engine *e, const kset *ks, const int8_t *kc, const uint8_t *kexp, int dh, int64_t ms,
                       int sbase, uint32_t j, uint32_t run, int32_t *out) {
    ks->dots(e->q, kc + (size_t)j * (size_t)dh, dh, (int)run, out);
    ks->scores(out, kexp + j, (int)run, ms, sbase, out);
}

/* the window's scores, oldest first, into wide[0, n) (the ring wraps at most once) */
static void window_scores(atm_engine *e, const kset *ks, const int8_t *kc, const uint8_t *kexp, int dh,
                          int64_t ms, int sbase, uint32_t n, uint32_t oldest) {
    const uint32_t W = (uint32_t)e->window;
    const uint32_t run = W - oldest < n ? W - oldest : n;
    run_scores(e, ks, kc, kexp, dh, ms, sbase, oldest, run, e->wide);
    if (run < n) run_scores(e, ks, kc, kexp, dh, ms, sbase, 0, n - run, e->wide + run);
}

/* positions counted from the oldest -> cache slots */
static void to_slots(int32_t *si, int cnt, uint32_t oldest, uint32_t W) {
    for (int k = 0; k < cnt; k++) {
        const uint32_t s = oldest + (uint32_t)si[k];          /* < 2 W */
        si[k] = (int32_t)(s >= W ? s - W : s);
    }
}

#if (defined(ATM_KS_M3) && defined(ATM_M3_ASM)) || (defined(__ARM_ARCH_6M__) && defined(ATM_M0_ASM))
/* the kept pairs pr[2 ..] (score, position) -> sel_s, sel_i */
static void unpair(const int32_t *pr, int cnt, int32_t *ss, int32_t *si) {
    for (int k = 0; k < cnt; k++) { ss[k] = pr[2 * k + 2]; si[k] = pr[2 * k + 3]; }
}
#endif

/* the sorted insertion a run of at most cap slots at a time: a later
 * position replaces the last kept one only if strictly greater (ties keep
 * the older); on the M3 engine_m3.S's, over (score, slot) pairs behind a
 * sentinel on the stack */
static void insert_runs(atm_engine *e, const kset *ks, const int8_t *kc, const uint8_t *kexp, int dh, int64_t ms,
                        int sbase, uint32_t n, uint32_t oldest, int keff, uint32_t cap) {
    const uint32_t W = (uint32_t)e->window;
    int32_t *wide = e->wide, *ss = e->sel_s, *si = e->sel_i;
#if defined(ATM_KS_M3) && defined(ATM_M3_ASM)
    int32_t pr[2 * TOPK_PAIRS + 2];
    pr[0] = INT32_MAX;
    pr[1] = 0;
#endif
    int cnt = 0;
    uint32_t j = oldest, left = n;
    while (left > 0) {
        uint32_t run = W - j < left ? W - j : left;
        if (run > cap) run = cap;
        run_scores(e, ks, kc, kexp, dh, ms, sbase, j, run, wide);
#if defined(ATM_KS_M3) && defined(ATM_M3_ASM)
        if (keff <= TOPK_PAIRS) cnt = atm_ek_topk_ins_m3(wide, (int)run, (int32_t)j, pr, cnt, keff);
        else
#endif
        for (uint32_t i = 0; i < run; i++) {
            const int32_t sc = wide[i];
            int pos;
            if (cnt < keff) pos = cnt++;
            else if (sc > ss[keff - 1]) pos = keff - 1;
            else continue;
            for (; pos > 0 && ss[pos - 1] < sc; pos--) { ss[pos] = ss[pos - 1]; si[pos] = si[pos - 1]; }
            ss[pos] = sc;
            si[pos] = (int32_t)(j + i);
        }
        j += run;
        if (j == W) j = 0;
        left -= run;
    }
#if defined(ATM_KS_M3) && defined(ATM_M3_ASM)
    if (keff <= TOPK_PAIRS) unpair(pr, cnt, ss, si);
#endif
}

/* attention's kept set: the keff best of the n cached positions into
 * sel_s / sel_i (slots), their scores computed into wide (see attn_path) */
static void select_topk(atm_engine *e, const kset *ks, const int8_t *kc, const uint8_t *kexp, int dh, int64_t ms,
                        int sbase, uint32_t n, uint32_t oldest, int keff, uint32_t cap) {
    const uint32_t W = (uint32_t)e->window;
    int32_t *wide = e->wide;
    int32_t *ss = e->sel_s, *si = e->sel_i;
#if defined(__ARM_ARCH_6M__)
    const int select = 2 * n <= cap;
#elif defined(ATM_EK_X86)
    /* x86: the branch-free ranks of atm_ek_topk_avx2 where the window's scores fit (n <= 64) */
    const int select = (ks == &KS_AVX2 || ks == &KS_AVX512) && n <= 64 && n <= cap;
#else
    const int select = 0;
#endif
#if defined(__ARM_ARCH_6M__) && defined(ATM_M0_ASM)
    /* the Cortex-M0: the window's scores into wide[0, n), then engine_m0.S's
     * insertion over (score, position) pairs behind a sentinel in wide's
     * words after them (the micro:bit's stack has no room for them) */
    if (n + 2u * (uint32_t)keff + 2u <= cap) {
        window_scores(e, ks, kc, kexp, dh, ms, sbase, n, oldest);
        int32_t *pr = wide + n;
        pr[0] = INT32_MAX;
        pr[1] = 0;
        const int cnt = atm_ek_topk_ins_m0(wide, (int)n, 0, pr, 0, keff);
        unpair(pr, cnt, ss, si);
        to_slots(si, cnt, oldest, W);
        return;
    }
#endif
    if (!select) {
        insert_runs(e, ks, kc, kexp, dh, ms, sbase, n, oldest, keff, cap);
        return;
    }
    window_scores(e, ks, kc, kexp, dh, ms, sbase, n, oldest);
#ifdef ATM_EK_X86
    if (atm_ek_topk_avx2(wide, (int)n, keff, ss, si) != 0)
#endif
    atm_ek_topk_set(wide, (int)n, keff, wide + n, ss, si);
    to_slots(si, keff, oldest, W);
}

/* q: int16 with the smallest exponent that fits, returned; q =
 * atm_sat16(rnd32(w, qe)) without the branches: below 31 the shift leaves
 * every |rounded value| <= 32767 (round(-a) >= -round(a)), at 31 rnd32
 * gives 0 */
static inline int quant_q(int16_t *q, const int32_t *w, int dh) {
    uint32_t mx = 0;
    for (int i = 0; i < dh; i++) { uint32_t a = atm_abs32(w[i]); if (a > mx) mx = a; }
    const int qe = atm_fit_shift(mx, 32767);
    if (qe == 0) for (int i = 0; i < dh; i++) q[i] = (int16_t)w[i];
    else if (qe < 31) {
        const int32_t h = (int32_t)1 << (qe - 1);
        for (int i = 0; i < dh; i++) q[i] = (int16_t)((w[i] + h) >> qe);
    } else for (int i = 0; i < dh; i++) q[i] = 0;
    return qe;
}

/* attention: k, v of the current position enter cache slot `slot`; scores
 * q . k_j / sqrt(dh) over the n cached positions, oldest first, in Q16; the
 * top_k highest are kept (a later position replaces the last kept one only
 * if strictly greater, so ties keep the older); softmax in Q15; the kept
 * value rows are mixed with the weights realigned to the largest exponent.
 * The scores are computed a run of consecutive slots at a time into `wide`
 * (at most cap of them: the ring wraps at most once, wide holds cap). */
static void attn_path(atm_engine *e, const kset *ks, int l, int32_t r, int fu, vin *in,
                      uint32_t slot, uint32_t n, uint32_t oldest) {
    const atm_model *m = e->m;
    const int d = m->cfg.d_model, dh = m->cfg.d_head, W = e->window;
    const int tk = m->cfg.top_k;
    const tview Q = tensor(m, ATM_T_WQ, l), Kt = tensor(m, ATM_T_WK, l), V = tensor(m, ATM_T_WV, l);
    int32_t *wide = e->wide;
    int8_t *kc = e->kc + (size_t)l * (size_t)W * (size_t)dh;
    int8_t *vc = e->vc + (size_t)l * (size_t)W * (size_t)d;
    uint8_t *kexp = e->kexp + (size_t)l * (size_t)W, *vexp = e->vexp + (size_t)l * (size_t)W;

    /* q, k, v sums into wide[0, dh), [dh, 2 dh), [2 dh, 2 dh + d): by the
     * bit-plane kernel, one table build a chunk for the three */
    int32_t *wk = wide, *wv = wide;
#ifdef ATM_PLANES
    if (in->planes && m->encoding == ATM_ENC_ATOME01 && d % 4 == 0 && (uint32_t)(2 * dh + d) <= wide_cap(&m->cfg)) {
        const prow p[3] = { { Q.data, (uint32_t)dh }, { Kt.data, (uint32_t)dh }, { V.data, (uint32_t)d } };
        planes_matvecs(p, 3, (uint32_t)d, in, wide);
        wk = wide + dh;
        wv = wide + 2 * dh;
    } else
#endif
    matvec(&Q, m->encoding, (uint32_t)dh, (uint32_t)d, in, wide);
    const int qe = quant_q(e->q, wide, dh);
    /* k, v rows: int8 with their exponents (|matvec sums| < 2^25) */
    if (wk == wide) matvec(&Kt, m->encoding, (uint32_t)dh, (uint32_t)d, in, wide);
    kexp[slot] = ks->quant32(wk, dh, kc + (size_t)slot * (size_t)dh);
    if (wv == wide) matvec(&V, m->encoding, (uint32_t)d, (uint32_t)d, in, wide);
    vexp[slot] = ks->quant32(wv, d, vc + (size_t)slot * (size_t)d);

    /* score scale: alpha_q alpha_k / sqrt(dh) * 2^(16 - 2 FU)
     *   = ms * 2^(32 - Q.exp - K.exp - rsh) * 2^(16 - 2 FU), ms <= 2^30 */
    int rsh;
    const uint32_t rs = atm_rsqrt64((uint64_t)dh, &rsh);
    /* mantissas below 2^16: their product fits 32 bits (atm_umull: no libgcc 64-bit multiply on the M0) */
    const int64_t ms = (int64_t)(atm_umull((Q.mant * Kt.mant) >> 2, rs >> 14) >> 16);
    const int sbase = Q.exp + Kt.exp + rsh + 2 * fu - 48 - qe;
    const int keff = (uint32_t)tk < n ? tk : (int)n;
    const uint32_t cap = wide_cap(&m->cfg);   /* wide's words before the selection */
    /* The keff best positions by (score, older first): a position ranks
     * above another if its score is higher or, equal, if it is older. Only
     * the set matters (the softmax and the mix are exact integer sums), not
     * its order. On the Cortex-M0, when the window's scores fit in wide twice
     * over, they are computed oldest first into wide[0, n) and the set is
     * taken by selection (atm_ek_topk_set: 2 % fewer instructions a byte on
     * the micro:bit); elsewhere, and otherwise, run by run by sorted insertion
     * (a later position replaces the last kept one only if strictly greater,
     * so ties keep the older), which is faster on the M3 and on x86. */
    select_topk(e, ks, kc, kexp, dh, ms, sbase, n, oldest, keff, cap);
    ks->softmax(e->sel_s, keff, e->sel_s, (uint32_t *)wide);   /* weights, Q15; wide is free */
    int emax = 0;
    for (int i = 0; i < keff; i++) if (vexp[e->sel_i[i]] > emax) emax = vexp[e->sel_i[i]];
    /* realigned weights that round to 0 add nothing: their rows are left
     * out of the mix (about one in ten for the board model at window 32) */
    int nz = 0;
    for (int i = 0; i < keff; i++) {
        const int32_t w = rnd32(e->sel_s[i], emax - vexp[e->sel_i[i]]);
        if (w == 0) continue;
        e->sel_s[nz] = w;
        e->sel_i[nz++] = e->sel_i[i];
    }
    /* x += r * alpha_v * 2^(emax - FU) * sum_i w_i v_i / 2^15, r in Q15;
     * the sums (|.| < 2^22) collect in wide, free again after the scores */
    const scaler sv = mk_scaler(atm_smull(r, (int32_t)V.mant), V.exp + fu + 30 - m->cfg.fx - emax);
#if defined(__ARM_ARCH_6M__) && defined(ATM_M0_ASM)
    /* the M0: the pairs in wide after the mixed row (cap: the selection's
     * sel_s / sel_i, which the mix reads, lie beyond) */
    if (nz > 0 && ks->mix == atm_ek_mix_m0 && d >= 4 && d % 4 == 0 && ((uintptr_t)vc & 3u) == 0 &&
        (uint32_t)(d + 2 * nz) <= cap)
        atm_ek_mix4w_m0(e->sel_s, e->sel_i, vc, nz, d, wide, wide + d);
    else
#endif
    if (nz > 0) ks->mix(e->sel_s, e->sel_i, vc, nz, d, wide);
    else for (int c = 0; c < d; c++) wide[c] = 0;
    add_scaled(ks, e->x, wide, d, &sv);
}

/* ---- one step ---- */

/* What a step computes after the blocks: the V logits (STEP_LOGITS, returns
 * them), only the index of their first maximum (STEP_ARGMAX, returns
 * e->wide + that index), or nothing (STEP_FEED, returns e->wide: the final
 * LayerNorm and the output head change no state). Four arguments and a
 * pointer back, so the wrappers below are tail calls or nearly (the
 * micro:bit's stack has little room to spare). */
enum { STEP_LOGITS, STEP_ARGMAX, STEP_FEED };
static const int32_t *step(atm_engine *e, int byte, int32_t *trace, int mode);

const int32_t *atm_engine_step(atm_engine *e, int byte) { return step(e, byte, 0, STEP_LOGITS); }

const int32_t *atm_engine_step_traced(atm_engine *e, int byte, int32_t *trace) {
    return step(e, byte, trace, STEP_LOGITS);
}

int atm_engine_step_argmax(atm_engine *e, int byte) {
    const int32_t *p = step(e, byte, 0, STEP_ARGMAX);
    return p ? (int)(p - e->wide) : -1;
}

int atm_engine_feed(atm_engine *e, int byte) { return step(e, byte, 0, STEP_FEED) ? 0 : -1; }

#ifdef ATM_ARM_ASM
#define FIRST_ABOVE atm_ek_first_above        /* engine_arm.S */
#else
#define FIRST_ABOVE atm_ek_first_above_ref
#endif
int atm_ek_argmax_scaled(const int32_t *v, int n, int32_t mul, int s,
                         void (*sc)(int32_t *v, int n, int32_t mul, int s)) {
    if (n < 1) return 0;
    int best = 0;
    int32_t braw = v[0], bf = v[0];
    sc(&bf, 1, mul, s);
    for (int i = 1; i < n; i++) {
        i += FIRST_ABOVE(v + i, n - i, braw);   /* below: f(v) <= f(braw) = bf, no new maximum */
        if (i == n) break;
        int32_t f = v[i];
        sc(&f, 1, mul, s);
        braw = v[i];
        if (f > bf) { bf = f; best = i; }
    }
    return best;
}

/* final LayerNorm and unembedding: the logits in Q16 into e->wide, or
 * (STEP_ARGMAX) only the index of their first maximum, returned. Inlined
 * into step: the micro:bit's stack has no room for another frame. */
static inline __attribute__((always_inline)) int head(atm_engine *e, const kset *ks, vin *in, int kern,
                                                      int32_t *tab, int mode) {
    const atm_model *m = e->m;
    const int d = m->cfg.d_model, V = m->cfg.vocab;
    const tview G = tensor(m, ATM_T_LNF_G, 0), B = tensor(m, ATM_T_LNF_B, 0);
    layernorm(ks, e->x, d, m->cfg.fx, &G, &B, e->u);
    vin_prep(in, e->u, d, kern, tab);
    VIN_OX(in, e);
    const tview U = tensor(m, ATM_T_UNEMBED, 0);
    matvec(&U, m->encoding, (uint32_t)V, (uint32_t)d, in, e->wide);
    const scaler sl = mk_scaler(U.mant, U.exp + G.aux - ATM_LOGIT_FRAC);
    /* the scale is monotone: for the argmax only the raw values that set a record are scaled */
    if (mode == STEP_ARGMAX && sl.fast && sl.mul > 0) return atm_ek_argmax_scaled(e->wide, V, (int32_t)sl.mul, sl.s, ks->scale);
    if (sl.fast) ks->scale(e->wide, V, (int32_t)sl.mul, sl.s);
    else for (int v = 0; v < V; v++) e->wide[v] = atm_clamp32(scale(&sl, e->wide[v]), X_LIM);
    int best = 0;
    if (mode == STEP_ARGMAX)
        for (int v = 1; v < V; v++) if (e->wide[v] > e->wide[best]) best = v;
    return best;
}

static const int32_t *step(atm_engine *e, int byte, int32_t *trace, int mode) {
    if (!e || !e->m) return 0;
    const atm_model *m = e->m;
    const atm_mconfig *c = &m->cfg;
    const int d = c->d_model, V = c->vocab, pw = c->pathways, P = m->n_paths;
    const int enc = m->encoding;
    if (byte < 0 || byte >= V) byte = 0;
    vin in;
    int32_t *tab;
    const int kern = resolve_kernel(e, &tab);
    const kset *ks = pick_kset(kern);

    /* embedding: x = trit * round(alpha_E * 2^FX) */
    {
        const tview T = tensor(m, ATM_T_EMBED, 0);
        const int64_t me = atm_clamp32(atm_rnd64(T.mant, T.exp - c->fx), X_LIM);
        DECODE_BUF(buf, BUF);
        for (int i = 0; i < d; i += CH) {
            int nn = d - i < CH ? d - i : CH;
            const int8_t *t = decode(T.data, enc, (uint32_t)byte * (uint32_t)d + (uint32_t)i, nn, buf);
            for (int k = 0; k < nn; k++) e->x[i + k] = (int32_t)(t[k] * me);
        }
    }

    const uint32_t W = (uint32_t)e->window;
    const uint32_t slot = e->kv_next;
    const uint32_t n = e->kv_count + 1 < W ? e->kv_count + 1 : W;
    const uint32_t oldest = (slot + 1u + W - n) % W;

    for (int l = 0; l < c->n_layers; l++) {
        const tview G = tensor(m, ATM_T_LN_G, l), B = tensor(m, ATM_T_LN_B, l);
        const int fu = G.aux;
        layernorm(ks, e->x, d, c->fx, &G, &B, e->u);
        vin_prep(&in, e->u, d, kern, tab);
        VIN_OX(&in, e);
        /* router: logits in Q16, weights in Q15 */
        const tview R = tensor(m, ATM_T_ROUTER, l);
        matvec(&R, enc, (uint32_t)P, (uint32_t)d, &in, e->rw);
        for (int p = 0; p < P; p++)
            e->rw[p] = atm_clamp32(atm_rnd64(atm_smull(e->rw[p], (int32_t)R.mant), R.exp + fu - 16), X_LIM);
        uint32_t ex[4];                               /* P <= 3 */
        ks->softmax(e->rw, P, e->rw, ex);
        int np = 0;
        if (pw & ATM_PATH_CONV) conv_path(e, ks, l, e->rw[np++], fu);
        if (pw & ATM_PATH_SSM) ssm_path(e, ks, l, e->rw[np++], fu);
        if (pw & ATM_PATH_ATTN) attn_path(e, ks, l, e->rw[np++], fu, &in, slot, n, oldest);
        if (trace) {
            int32_t *t = trace + 3 * l;
            np = 0;
            t[0] = (pw & ATM_PATH_CONV) ? e->rw[np++] : 0;
            t[1] = (pw & ATM_PATH_SSM) ? e->rw[np++] : 0;
            t[2] = (pw & ATM_PATH_ATTN) ? e->rw[np++] : 0;
        }
    }

    const int best = mode == STEP_FEED ? 0 : head(e, ks, &in, kern, tab, mode);

    /* advance the windows */
    if (pw & ATM_PATH_ATTN) {
        e->kv_next = slot + 1 == W ? 0 : slot + 1;
        e->kv_count = n;
    }
    if ((pw & ATM_PATH_CONV) && c->kernel > 1) {
        const uint32_t kh = (uint32_t)c->kernel - 1;
        e->ring_next = e->ring_next + 1 == kh ? 0 : e->ring_next + 1;
        if (e->ring_count < kh) e->ring_count++;
    }
    if (++e->pos_lo == 0) e->pos_hi++;
    return e->wide + best;
}

/* The plain-C kernels (the twins of the SIMD kernels, run by the portable,
 * pair-sum table, bit-plane and SSE2 sets) are in core/engine_ref.c. */
