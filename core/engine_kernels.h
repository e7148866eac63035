/* core/engine_kernels.h — internal interface between the integer engine
 * (core/engine.c, its kernel sets in core/engine_select.c) and its kernels
 * (core/engine_x86.c with core/engine_x86_tmpl.h, core/engine_wasm.c,
 * core/engine_m0.c, core/engine_m0.S, core/engine_m3.c, core/engine_m3.S,
 * core/engine_arm.S; the plain-C twins in core/engine_ref.c). Not a public
 * header: front ends use engine.h.
 *
 * Contract. Every kernel computes exactly the integers its plain-C twin
 * computes, for every length, odd ones included: the choice of kernel
 * changes speed, never a bit of the logits. The twins are the atm_ek_*_ref
 * functions below (engine_ref.c; the portable engine runs all of them except
 * atm_ek_matvec_ref, whose job its decode path does) and, for
 * atm_ek_softmax_q15, fixmath's atm_softmax_q15. tests/test_engine_kernels.c
 * compares each kernel with its twin on random inputs, extreme values and
 * odd lengths. Kernel sets and measurements: docs/fixed-point.md §9.
 *
 * Trit rows are ATOME01 bytes (docs/format.md: 4 trits per byte, codes
 * 00 = 0, 01 = +1, 11 = -1, first trit in the low bits) whose column count
 * is a multiple of 4, so every row starts on a byte; ATOME02 payloads reach
 * the row kernels re-encoded as ATOME01 (atm_ek_t5_to_t2_*). Code 10 never
 * occurs (the container reader rejects it); the kernels may treat it as any
 * value. */
#ifndef ATOME_ENGINE_KERNELS_H
#define ATOME_ENGINE_KERNELS_H
#include <stdint.h>
#include "container.h"

/* ---- trit decoding ----
 * atm_ek_decode: trits [first, first + n) (n <= ATM_EK_CH) of a payload of
 * encoding enc, decoded into buf (ATM_EK_DECODE_BUF(buf, ATM_EK_BUF): a
 * word array, as ATOME01 stores a word per byte); returns a pointer into buf
 * where they start (ATOME02 copies write up to 3 entries past the last
 * decoded byte: skip 4 + CH + 4 + 3 < ATM_EK_BUF). A larger buffer of n +
 * 16 entries takes n > ATM_EK_CH trits at once. */
#define ATM_EK_CH 64
#define ATM_EK_BUF (ATM_EK_CH + 16)
#define ATM_EK_DECODE_BUF(name, n) uint32_t name##_w[((n) + 3) / 4]; int8_t *const name = (int8_t *)(void *)name##_w
const int8_t *atm_ek_decode(const uint8_t *p, int enc, uint32_t first, int n, int8_t *buf);

/* ---- plain-C twins (engine_ref.c) ----
 * Shifts s are "round half up" shifts: round(v / 2^s) = (v + 2^(s-1)) >> s
 * with an arithmetic (floor) shift; every clamp is symmetric. The ranges
 * stated are preconditions the engine guarantees (docs/fixed-point.md). */

/* out[r] = sum_c trit(b, r * cols + c) * x[c], rows x cols, cols % 4 == 0. */
void atm_ek_matvec_ref(const uint8_t *b, uint32_t rows, uint32_t cols, const int16_t *x, int32_t *out);

/* The portable row product: the same for any encoding and any cols, rows
 * starting at any trit (the decode buffer; on the Cortex-M0 atm_ek_rowdot) */
void atm_ek_matvec_portable(const uint8_t *w, int enc, uint32_t rows, uint32_t cols, const int16_t *x, int32_t *out);

/* The pair-sum table's rows: out[r] = sum_j lut[32 j + (v & 15)] + lut[32 j +
 * 16 + (v >> 4)], v = b[r nb + j]: with the engine's table of x (16 pair sums
 * per 2 columns, engine_select.c), atm_ek_matvec_ref; atm_ek_lut_rows4_m3
 * (engine_m3.S) is its Thumb-2 version for groups of 4 rows, nb % 4 == 0. */
void atm_ek_lut_rows(const uint8_t *b, uint32_t nb, uint32_t rows, const int32_t *lut, int32_t *out);
void atm_ek_lut_rows4_m3(const uint8_t *b, uint32_t nb, uint32_t groups, const int32_t *lut, int32_t *out);

/* The bit-plane row kernel (engine_select.c picks engine_m0.S's Thumb-1
 * versions on the Cortex-M0, the _ref twins of engine_ref.c elsewhere): build fills tab[cols * 4] (16
 * subset sums per group of 4 columns of x, cols % 4 == 0); rows computes
 * out[r] (= or += with add) = the dot of nbytes ATOME01 bytes at b + r *
 * stride with the columns the table was built from. Together they equal
 * atm_ek_matvec_ref. */
void atm_ek_planes_build(const int16_t *x, uint32_t cols, int32_t *tab);
extern const uint8_t atm_ek_pl[512];   /* the byte -> table offset maps (engine_ref.c) */
void atm_ek_planes_rows(const uint8_t *b, uint32_t stride, uint32_t rows, uint32_t nbytes,
                        const int32_t *tab, int32_t *out, int add);
/* the same rows from the model's offset stream (engine.h, atm_engine_set_offsets):
 * o = the stream at row 0's first byte b (b 4-aligned in the model) */
void atm_ek_planes_rows_ox(const uint8_t *b, const uint8_t *o, uint32_t stride, uint32_t rows, uint32_t nbytes,
                           const int32_t *tab, int32_t *out, int add);
void atm_ek_planes_build_ref(const int16_t *x, uint32_t cols, int32_t *tab);
void atm_ek_planes_rows_ref(const uint8_t *b, uint32_t stride, uint32_t rows, uint32_t nbytes,
                            const int32_t *tab, int32_t *out, int add);
void atm_ek_planes_rows_ox_ref(const uint8_t *b, const uint8_t *o, uint32_t stride, uint32_t rows, uint32_t nbytes,
                               const int32_t *tab, int32_t *out, int add);

/* The byte-table row kernel (engine_ref.c; the Cortex-M3 default where the
 * caller gives the engine table RAM, atm_engine_set_tables): build fills
 * t[cols * 64] with, per group g of 4 columns, t[256 g + v] = the dot of
 * ATOME01 byte v's four trits with x[4g .. 4g+3], for the 81 bytes whose
 * codes are 0, 1 or 3 (the other entries are left as they were: code 10
 * never reaches a kernel); rows computes out[r] = sum_j t[256 j + b[r *
 * stride + j]] over nbytes bytes. Together they equal atm_ek_matvec_ref.
 * atm_ek_lut8_rows4_m3 (core/engine_m3.S) does groups of 4 rows of nb >= 1
 * bytes in Thumb-2. */
void atm_ek_lut8_build(const int16_t *x, uint32_t cols, int32_t *t);
void atm_ek_lut8_build_ref(const int16_t *x, uint32_t cols, int32_t *t);   /* its plain-C twin */
void atm_ek_lut8_rows(const uint8_t *b, uint32_t stride, uint32_t rows, uint32_t nbytes,
                      const int32_t *t, int32_t *out);
void atm_ek_lut8_rows4_m3(const uint8_t *b, uint32_t nb, uint32_t groups, const int32_t *t, int32_t *out);
void atm_ek_lut8_build_m3(const int16_t *x, uint32_t cols, int32_t *t);

/* sum_{i < n} trit_i * x[i] where trit_i is trit skip + i of the payload
 * bytes b (enc ATM_ENC_ATOME01: 0 <= skip < 4; ATOME02: 0 <= skip < 5):
 * the portable engine's row product, straight from the bytes (reads only
 * the bytes holding those trits). atm_ek_rowdot_ref is its twin through the
 * decode buffer; n * 32767 < 2^31. */
int32_t atm_ek_rowdot(const uint8_t *b, int skip, int n, const int16_t *x, int enc);
int32_t atm_ek_rowdot_ref(const uint8_t *b, int skip, int n, const int16_t *x, int enc);

/* ATOME02 -> ATOME01: out[0 .. 5 ng) = the ATOME01 bytes of the trits
 * [20 g0, 20 (g0 + ng)) of an ATOME02 payload p[nbytes] (4 ATOME02 bytes
 * per 5 ATOME01 bytes); payload bytes past nbytes read as 0 and invalid
 * bytes (243..255) as 5 zero trits. Not built for Cortex-M0. */
void atm_ek_t5_to_t2_ref(const uint8_t *p, uint32_t nbytes, uint32_t g0, uint32_t ng, uint8_t *out);

/* out[j] = sum_i q[i] * k[j * dh + i] for j < n (int8 keys, int16 query;
 * dh <= 512 keeps |out| < 2^31). */
void atm_ek_dots_ref(const int16_t *q, const int8_t *k, int dh, int n, int32_t *out);

/* out[c] = sum_{i < n} w[i] * row_i[c] for c < d, row_i = base + idx[i] * d
 * (int8 rows, int32 weights with sum |w| <= 2^15, so |out| < 2^22). */
void atm_ek_mix_ref(const int32_t *w, const int32_t *idx, const int8_t *base, int n, int d, int32_t *out);

/* x[c] = clamp(x[c] + round(v[c] * mul / 2^s), +-(2^30 - 1)) for c < n;
 * 1 <= s <= 62, |x| <= 2^30 - 1, |v| <= 2^31 - 1, |mul| <= 2^31 - 1. */
void atm_ek_addsc_ref(int32_t *x, const int32_t *v, int n, int32_t mul, int s);

/* v[c] = clamp(round(v[c] * mul / 2^s), +-(2^30 - 1)); same ranges. */
void atm_ek_scale_ref(int32_t *v, int n, int32_t mul, int s);

/* Per-row exponent quantisation to int8: sh = the smallest shift with
 * round(max |src| / 2^sh) <= 127, dst[i] = clamp(round(src[i] / 2^sh),
 * +-127); returns sh. |src| <= 2^30. */
uint8_t atm_ek_quant32_ref(const int32_t *src, int n, int8_t *dst);
uint8_t atm_ek_quant16_ref(const int16_t *src, int n, int8_t *dst);

/* LayerNorm pieces (engine.c, layernorm). stats: *sum = sum x, *lo / *hi
 * = min / max x (d >= 1, |x| <= 2^30). center: u[i] = (x[i] - mean) >> k
 * for k > 0, (x[i] - mean) * 2^-k for k <= 0 (the result fits int16 by the
 * choice of k), returns sum u[i]^2. out: u[i] = sat16(round(u[i] * r15 *
 * g[i] / 2^sg) + round(b[i] / 2^sb)) with g, b little-endian int16 at any
 * address; 1 <= sg <= 62, -16 <= sb <= 30 (sb <= 0: b * 2^-sb, exact),
 * |r15| <= 2^15, |g|, |b| <= 32767. */
void atm_ek_ln_stats_ref(const int32_t *x, int d, int64_t *sum, int32_t *lo, int32_t *hi);
int64_t atm_ek_ln_center_ref(const int32_t *x, int d, int32_t mean, int k, int16_t *u);
void atm_ek_ln_out_ref(int16_t *u, const uint8_t *g, const uint8_t *b, int d, int32_t r15, int sg, int sb);

/* SSM update: s[c] = clamp(round(a[c] * s[c] / 2^15) + round(bc[c] * u[c] /
 * 2^sb), +-(2^30 - 1)), a and bc little-endian int16 at any address;
 * -32 <= sb <= 62 (sb <= 0: bc u * 2^-sb, exact in 64 bits as |bc u| <=
 * 2^30), |s| <= 2^30 - 1. */
void atm_ek_ssm_ref(int32_t *s, const uint8_t *a, const uint8_t *bc, const int16_t *u, int d, int sb);

/* The same integers as atm_ek_ln_out_ref / atm_ek_ssm_ref / atm_ek_addsc_ref
 * / atm_ek_scale_ref from 32-bit products only (engine_m0.c; the Cortex-M0
 * set) within the twins' ranges above, plus |bc|, |u| <= 32767 for ssm (the
 * reader rejects -32768 in a vector, LayerNorm saturates at +-32767);
 * outside their fast ranges (engine_m0.c) they call the twins. */
void atm_ek_ln_out_i32(int16_t *u, const uint8_t *g, const uint8_t *b, int d, int32_t r15, int sg, int sb);
void atm_ek_ssm_i32(int32_t *s, const uint8_t *a, const uint8_t *bc, const int16_t *u, int d, int sb);
void atm_ek_addsc_i32(int32_t *x, const int32_t *v, int n, int32_t mul, int s);
void atm_ek_scale_i32(int32_t *v, int n, int32_t mul, int s);
/* atm_ek_quant32_ref / quant16_ref / ln_stats_ref / ln_center_ref from
 * 32-bit arithmetic only (engine_m0.c; the M0 and M3 sets) */
uint8_t atm_ek_quant32_i32(const int32_t *src, int n, int8_t *dst);
uint8_t atm_ek_quant16_i32(const int16_t *src, int n, int8_t *dst);
void atm_ek_ln_stats_i32(const int32_t *x, int d, int64_t *sum, int32_t *lo, int32_t *hi);
int64_t atm_ek_ln_center_i32(const int32_t *x, int d, int32_t mean, int k, int16_t *u);
/* atm_exp_q16 and atm_ek_softmax_q15, the same integers: Horner steps from
 * 16-bit halves (_h, the M0 set) or one 64-bit product each (_w, the M3) */
uint32_t atm_ek_exp_q16_h(int32_t x);
uint32_t atm_ek_exp_q16_w(int32_t x);
void atm_ek_softmax_h(const int32_t *z, int n, int32_t *p, uint32_t *e);
void atm_ek_softmax_w(const int32_t *z, int n, int32_t *p, uint32_t *e);
/* The Cortex-M3 set's elementwise kernels (engine_m3.c): the twins from
 * 32 x 32 -> 64 products and 32-bit shifts of their words; each calls its
 * twin outside its fast range (addsc, scale: 1 <= s <= 31; ln_out: 1 <= sg
 * <= 62, -16 <= sb <= 30; ssm: -1 <= sb <= 31; scores: shifts 32 .. 62,
 * atm_rnd64 for the others). addsc needs |x| <= 2^30 - 1, as the engine's
 * residual always is. */
void atm_ek_addsc_m3(int32_t *x, const int32_t *v, int n, int32_t mul, int s);
void atm_ek_scale_m3(int32_t *v, int n, int32_t mul, int s);
void atm_ek_ln_out_m3(int16_t *u, const uint8_t *g, const uint8_t *b, int d, int32_t r15, int sg, int sb);
void atm_ek_ssm_m3(int32_t *s, const uint8_t *a, const uint8_t *bc, const int16_t *u, int d, int sb);
void atm_ek_scores_m3(const int32_t *dots, const uint8_t *kexp, int n, int64_t ms, int sbase, int32_t *out);
/* The first i < n with v[i] > t, or n (n >= 0): the twin, and
 * engine_arm.S's Thumb-1 scan on the boards (M0 and M3 alike) */
int atm_ek_first_above_ref(const int32_t *v, int n, int32_t t);
int atm_ek_first_above(const int32_t *v, int n, int32_t t);
/* Attention's kept set by sorted insertion, over (score, position) pairs:
 * pr[0] a sentinel pair (score INT32_MAX), pr[2 + 2 k], pr[3 + 2 k] the
 * score and position of the k-th kept (k < cnt), highest score first and
 * equal scores older first. sc[0, run) enter in turn with positions t0 + i:
 * while fewer than keff are kept a score is inserted after the scores not
 * below it; then only one strictly above the last kept is, and the last
 * kept drops out. Scores below INT32_MAX; returns the new count. The twin
 * (engine_ref.c), engine_m3.S's Thumb-2 and engine_m0.S's Thumb-1 versions
 * (tests/mcu/kernels.c). */
int atm_ek_topk_ins_ref(const int32_t *sc, int run, int32_t t0, int32_t *pr, int cnt, int keff);
int atm_ek_topk_ins_m3(const int32_t *sc, int run, int32_t t0, int32_t *pr, int cnt, int keff);
int atm_ek_topk_ins_m0(const int32_t *sc, int run, int32_t t0, int32_t *pr, int cnt, int keff);
/* atm_ek_mix_ref / atm_ek_dots_ref a word of int8 values at a time (engine_m0.c) */
void atm_ek_mix_m0(const int32_t *w, const int32_t *idx, const int8_t *base, int n, int d, int32_t *out);
void atm_ek_dots_m0(const int16_t *q, const int8_t *k, int dh, int n, int32_t *out);
/* engine_m3.S: the same for dh = 8, 16, 32 or 64, word-aligned k and n >= 1;
 * returns 1 (nothing done) for another dh */
int atm_ek_dots_m3(const int16_t *q, const int8_t *k, int dh, int n, int32_t *out);
/* engine_m3.S: atm_ek_mix_ref for d % 8 == 0, word-aligned base and 1 <= n
 * <= 32; returns 1 (nothing done) otherwise */
int atm_ek_mix_m3(const int32_t *w, const int32_t *idx, const int8_t *base, int n, int d, int32_t *out);
/* conv's four ring rows back from slot next (K = 5, kh = 4) and their
 * shifts, the arguments of the assembly taps of both boards */
/* engine_m0.S: attention's mix (atm_ek_mix_ref) with the (weight, row)
 * pairs of all n positions in pairs[0, 2 n): n >= 1, d >= 4 a multiple of
 * 4, base word aligned (the Cortex-M0 board builds) */
void atm_ek_mix4w_m0(const int32_t *w, const int32_t *idx, const int8_t *base, int n, int d, int32_t *out,
                     int32_t *pairs);
/* engine_m0.S: the taps for K = 5 with all 5, rp / e as atm_ek_conv_rows4
 * gives them (the Cortex-M0 board builds) */
void atm_ek_conv5_m0(const int8_t *t, int nc, const int16_t *u, const int8_t *const *rp, const int32_t *e,
                     int32_t *acc);
static inline void atm_ek_conv_rows4(const int8_t *ring, int ld, const uint8_t *rexp, int next,
                                     const int8_t **rp, int32_t *e) {
    int sl = next;
    for (int j = 0; j < 4; j++) {
        sl = sl == 0 ? 3 : sl - 1;
        rp[j] = ring + (size_t)sl * (size_t)ld;
        e[j] = rexp[sl];
    }
}
/* atm_ek_conv_ref: engine_m3.S for K = 5 with 5 taps on the M3, else
 * atm_ek_conv_m0 (engine_m3.c) */
void atm_ek_conv_m3(const int8_t *t, int K, int nc, const int16_t *u, const int8_t *ring, int ld,
                    const uint8_t *rexp, int next, int kh, int taps, int32_t *acc);
/* atm_ek_conv_ref channel by channel (engine_m0.c) */
void atm_ek_conv_m0(const int8_t *t, int K, int nc, const int16_t *u, const int8_t *ring, int ld,
                    const uint8_t *rexp, int next, int kh, int taps, int32_t *acc);

/* Conv taps of channels [0, nc): acc[c] = t[c K] u[c] + sum_{j=1}^{taps-1}
 * t[c K + j] * (ring_j[c] << e_j), where ring_j = ring + slot_j * ld is the
 * row of the position j back, slot_j = (next - j) mod kh, e_j = rexp[slot_j]
 * (0 <= e_j <= 31 and |ring << e| <= 2^16, as the ring holds int16 values
 * rounded to 8 bits). t: trits (int8 -1/0/1), readable up to t[nc K + 5]
 * (the AVX2 kernel loads 16 bytes at 10-byte steps; the engine's buffers
 * have 16 bytes past the trits). */
void atm_ek_conv_ref(const int8_t *t, int K, int nc, const int16_t *u, const int8_t *ring, int ld,
                     const uint8_t *rexp, int next, int kh, int taps, int32_t *acc);

/* atm_softmax_q15 (fixmath.h) with each exponential computed once and kept
 * in e[n] (scratch); the same values bit for bit. p may alias z. */
void atm_ek_softmax_q15(const int32_t *z, int n, int32_t *p, uint32_t *e);

/* Attention's kept set (engine_ref.c): the k best of sc[0, n) (1 <= k <= n)
 * ranked by score, the lower index first among equal scores — every index
 * scoring above the k-th highest score and the lowest of those scoring it —
 * into sel_s / sel_t (scores and indices, ascending index); scratch[n]. */
/* The first index of the maximum of f(v[0, n)), f(x) = what sc(&x, 1, mul,
 * s) makes of x (a set's logit scale; mul >= 1, so f never decreases):
 * f is computed only where v[i] is above every earlier v (a later v that is
 * not has f <= the maximum so far, and ties keep the first). The same index
 * as scaling every v and taking the first maximum. n >= 1. */
int atm_ek_argmax_scaled(const int32_t *v, int n, int32_t mul, int s,
                         void (*sc)(int32_t *v, int n, int32_t mul, int s));
void atm_ek_topk_set(const int32_t *sc, int n, int k, int32_t *scratch, int32_t *sel_s, int32_t *sel_t);

/* Attention scores: out[j] = clamp(atm_rnd64(dots[j] * ms, sbase - kexp[j]),
 * +-(2^30 - 1)) for j < n; 0 <= ms < 2^30; out may alias dots. */
void atm_ek_scores_ref(const int32_t *dots, const uint8_t *kexp, int n, int64_t ms, int sbase, int32_t *out);

#if defined(__SSE2__) && !defined(ATM_ENGINE_PORTABLE)
#define ATM_T2_SIMD 1
/* SSE2 (engine_x86.c): atm_ek_matvec_ref for cols % 64 == 0 with x
 * deinterleaved per chunk of 64, xd[64 k + 16 p + i] = x[64 k + 4 i + p] */
void atm_ek_matvec_sse2(const uint8_t *b, uint32_t rows, uint32_t cols, const int16_t *xd, int32_t *out);
#endif

#if defined(__x86_64__) && !defined(ATM_ENGINE_PORTABLE)
#define ATM_EK_X86 1

/* A matvec input prepared once per vector for the x86 kernels. Columns are
 * grouped in chunks of 64; within chunk g, entry 64 g + 16 p + i holds
 * column 64 g + 4 i + p (the p-th trit of row byte 16 g + i), and entries
 * past cols are 0.
 *   xd   int16 value (AVX2, any width)
 *   lo   its low byte, unsigned; hi its high byte, signed: x = 256 hi + lo
 *        (vpmaddubsw / vpdpbusd multiply unsigned by signed bytes)
 *   hsum sum of hi over the columns */
typedef struct {
    int16_t xd[ATM_MAX_D];
    uint8_t lo[ATM_MAX_D];
    int8_t  hi[ATM_MAX_D];
    int32_t hsum;
} atm_ek_vec;

/* Which x86 kernel sets this CPU runs (ATM_KERNEL_AVX2 / ATM_KERNEL_AVX512
 * of engine.h): 1 or 0. */
int atm_ek_x86_supported(int kernel);

/* Fills v from x[cols] (cols <= ATM_MAX_D) for the AVX2 and AVX-512 kernels. */
void atm_ek_prep_avx2(const int16_t *x, uint32_t cols, atm_ek_vec *v);

/* atm_ek_matvec_ref with the prepared input (cols % 4 == 0, cols <= ATM_MAX_D). */
void atm_ek_matvec_avx2(const uint8_t *b, uint32_t rows, uint32_t cols, const atm_ek_vec *v, int32_t *out);
void atm_ek_matvec_avx512(const uint8_t *b, uint32_t rows, uint32_t cols, const atm_ek_vec *v, int32_t *out);

/* The twins above, AVX2 (the AVX-512 set uses them too). */
void atm_ek_t5_to_t2_avx2(const uint8_t *p, uint32_t nbytes, uint32_t g0, uint32_t ng, uint8_t *out);
void atm_ek_dots_avx2(const int16_t *q, const int8_t *k, int dh, int n, int32_t *out);
void atm_ek_mix_avx2(const int32_t *w, const int32_t *idx, const int8_t *base, int n, int d, int32_t *out);
void atm_ek_addsc_avx2(int32_t *x, const int32_t *v, int n, int32_t mul, int s);
void atm_ek_scale_avx2(int32_t *v, int n, int32_t mul, int s);
uint8_t atm_ek_quant32_avx2(const int32_t *src, int n, int8_t *dst);
uint8_t atm_ek_quant16_avx2(const int16_t *src, int n, int8_t *dst);
void atm_ek_ln_stats_avx2(const int32_t *x, int d, int64_t *sum, int32_t *lo, int32_t *hi);
int64_t atm_ek_ln_center_avx2(const int32_t *x, int d, int32_t mean, int k, int16_t *u);
void atm_ek_ln_out_avx2(int16_t *u, const uint8_t *g, const uint8_t *b, int d, int32_t r15, int sg, int sb);
void atm_ek_ssm_avx2(int32_t *s, const uint8_t *a, const uint8_t *bc, const int16_t *u, int d, int sb);
void atm_ek_conv_avx2(const int8_t *t, int K, int nc, const int16_t *u, const int8_t *ring, int ld,
                      const uint8_t *rexp, int next, int kh, int taps, int32_t *acc);
void atm_ek_scores_avx2(const int32_t *dots, const uint8_t *kexp, int n, int64_t ms, int sbase, int32_t *out);
/* atm_ek_topk_set's outputs from vector maxima and compare masks, for
 * 1 <= k <= n <= 64 and scores above INT32_MIN; returns -1 (nothing
 * written) otherwise */
int atm_ek_topk_avx2(const int32_t *sc, int n, int k, int32_t *sel_s, int32_t *sel_t);
/* atm_ek_softmax_q15 with four exponentials at a time */
void atm_ek_softmax_avx2(const int32_t *z, int n, int32_t *p, uint32_t *e);

/* The AVX-512 set's own versions of the 64-bit-lane kernels (the others are
 * the AVX2 ones). */
void atm_ek_addsc_avx512(int32_t *x, const int32_t *v, int n, int32_t mul, int s);
void atm_ek_scale_avx512(int32_t *v, int n, int32_t mul, int s);
void atm_ek_ln_out_avx512(int16_t *u, const uint8_t *g, const uint8_t *b, int d, int32_t r15, int sg, int sb);
void atm_ek_ssm_avx512(int32_t *s, const uint8_t *a, const uint8_t *bc, const int16_t *u, int d, int sb);
void atm_ek_scores_avx512(const int32_t *dots, const uint8_t *kexp, int n, int64_t ms, int sbase, int32_t *out);
void atm_ek_t5_to_t2_avx512(const uint8_t *p, uint32_t nbytes, uint32_t g0, uint32_t ng, uint8_t *out);
#endif

#if defined(__wasm_simd128__) && !defined(ATM_ENGINE_PORTABLE)
#define ATM_EK_WASM 1

/* A matvec input prepared once per vector for the wasm SIMD128 kernel
 * (core/engine_wasm.c): columns in chunks of 64, entry 64 g + 8 q + k holds
 * column 64 g + 8 k + q (the q-th trit of the int16 lane k of the chunk's
 * 16 row bytes); entries past cols (in the last chunk) are 0. */
typedef struct {
    int16_t xd[ATM_MAX_D];
} atm_ek_wvec;

/* Fills v from x[cols] (cols % 4 == 0, cols <= ATM_MAX_D; reads x[0 .. cols) only). */
void atm_ek_prep_wasm(const int16_t *x, uint32_t cols, atm_ek_wvec *v);

/* atm_ek_matvec_ref with the prepared input (cols % 4 == 0, cols <=
 * ATM_MAX_D); reads b[0 .. rows * cols / 4) only. */
void atm_ek_matvec_wasm(const uint8_t *b, uint32_t rows, uint32_t cols, const atm_ek_wvec *v, int32_t *out);
#endif

#endif
