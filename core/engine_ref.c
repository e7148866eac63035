/* core/engine_ref.c — the engine's plain-C kernels (engine_kernels.h):
 * every twin of an instruction-set kernel (x86, wasm, Cortex-M0 / M3 C and
 * assembly), the trit decoder, the portable row product and the kernels of
 * the portable, pair-sum table, byte-table and bit-plane sets. Which of
 * them a step runs is core/engine_select.c's choice. Freestanding,
 * integers only. */
#include "engine.h"
#include "engine_kernels.h"
#include "fixmath.h"
#include "le.h"

#define CH ATM_EK_CH
#define BUF ATM_EK_BUF
#define DECODE_BUF ATM_EK_DECODE_BUF

static const int32_t X_LIM = (1 << 30) - 1;   /* as engine.c: the residual / state clamp */

/* ---- plain-C kernels (engine_kernels.h): the twins of the SIMD kernels,
 * run by the portable, pair-sum table and SSE2 sets ---- */

/* 16-entry blocks with a constant trip count, which compilers vectorise
 * where the target has SIMD */
void atm_ek_dots_ref(const int16_t *q, const int8_t *k, int dh, int n, int32_t *out) {
    for (int j = 0; j < n; j++, k += dh) {
        int32_t acc = 0;
        int t = 0;
        for (; t + 16 <= dh; t += 16) {
            int32_t a = 0;
            for (int i = 0; i < 16; i++) a += q[t + i] * k[t + i];
            acc += a;
        }
        for (; t < dh; t++) acc += q[t] * k[t];
        out[j] = acc;
    }
}

void atm_ek_mix_ref(const int32_t *w, const int32_t *idx, const int8_t *base, int n, int d, int32_t *out) {
    for (int c = 0; c < d; c++) out[c] = 0;
    for (int i = 0; i < n; i++) {
        const int32_t wi = w[i];
        const int8_t *vi = base + (size_t)idx[i] * (size_t)d;
        for (int c = 0; c < d; c++) out[c] += wi * vi[c];
    }
}

void atm_ek_addsc_ref(int32_t *x, const int32_t *v, int n, int32_t mul, int s) {
    const int64_t half = (int64_t)1 << (s - 1);
    for (int c = 0; c < n; c++)
        x[c] = atm_clamp32((int64_t)x[c] + atm_asr64(atm_smull(v[c], mul) + half, s), X_LIM);
}

void atm_ek_scale_ref(int32_t *v, int n, int32_t mul, int s) {
    const int64_t half = (int64_t)1 << (s - 1);
    for (int c = 0; c < n; c++) v[c] = atm_clamp32(atm_asr64(atm_smull(v[c], mul) + half, s), X_LIM);
}

uint8_t atm_ek_quant32_ref(const int32_t *src, int n, int8_t *dst) {
    uint32_t mx = 0;
    for (int i = 0; i < n; i++) { uint32_t a = atm_abs32(src[i]); if (a > mx) mx = a; }
    const int sh = atm_fit_shift(mx, 127);
    const int32_t half = (int32_t)(((uint32_t)1 << sh) >> 1);
    for (int i = 0; i < n; i++) dst[i] = (int8_t)atm_clamp32(atm_asr32(src[i] + half, sh), 127);
    return (uint8_t)sh;
}

uint8_t atm_ek_quant16_ref(const int16_t *src, int n, int8_t *dst) {
    uint32_t mx = 0;
    for (int i = 0; i < n; i++) { uint32_t a = atm_abs32(src[i]); if (a > mx) mx = a; }
    const int sh = atm_fit_shift(mx, 127);
    const int32_t half = (1 << sh) >> 1;
    for (int i = 0; i < n; i++) dst[i] = (int8_t)atm_clamp32(atm_asr32(src[i] + half, sh), 127);
    return (uint8_t)sh;
}

void atm_ek_ln_stats_ref(const int32_t *x, int d, int64_t *sum, int32_t *lo, int32_t *hi) {
    int64_t s = 0;
    int32_t l = x[0], h = x[0];
    for (int i = 0; i < d; i++) {
        s += x[i];
        l = x[i] < l ? x[i] : l;
        h = x[i] > h ? x[i] : h;
    }
    *sum = s; *lo = l; *hi = h;
}

int64_t atm_ek_ln_center_ref(const int32_t *x, int d, int32_t mean, int k, int16_t *u) {
    int64_t vs = 0;
    if (k > 0) {
        for (int i = 0; i < d; i++) {
            const int32_t y = atm_asr32(x[i] - mean, k);
            u[i] = (int16_t)y;
            vs += (int64_t)(y * y);                   /* |y| <= 2^15: y^2 fits int32 */
        }
    } else {
        const int32_t m = (int32_t)1 << -k;
        for (int i = 0; i < d; i++) {
            const int32_t y = (x[i] - mean) * m;
            u[i] = (int16_t)y;
            vs += (int64_t)(y * y);                   /* |y| <= 2^15: y^2 fits int32 */
        }
    }
    return vs;
}

void atm_ek_ln_out_ref(int16_t *u, const uint8_t *g, const uint8_t *b, int d, int32_t r15, int sg, int sb) {
    const int64_t hg = (int64_t)1 << (sg - 1);
    const int32_t hb = sb >= 1 ? (int32_t)1 << (sb - 1) : 0, mb = sb >= 1 ? 1 : (int32_t)1 << -sb;
    const int s_b = sb >= 1 ? sb : 0;
    for (int i = 0; i < d; i++) {
        const int32_t gr = r15 * atm_rd_i16le(g + 2 * i);            /* |gr| <= 2^30 */
        const int32_t bt = atm_asr32(atm_rd_i16le(b + 2 * i) * mb + hb, s_b);   /* |b| 2^16 < 2^31 */
        u[i] = atm_sat16(atm_asr64(atm_smull(u[i], gr) + hg, sg) + bt);
    }
}

void atm_ek_ssm_ref(int32_t *s, const uint8_t *a, const uint8_t *bc, const int16_t *u, int d, int sb) {
    const int64_t hb = sb >= 1 ? (int64_t)1 << (sb - 1) : 0, mb = sb >= 1 ? 1 : (int64_t)1 << -sb;
    const int s_b = sb >= 1 ? sb : 0;
    for (int c = 0; c < d; c++) {
        /* a s: Q15 times Q(FS), rounded back to Q(FS) (|a s| < 2^45) */
        const int64_t v = atm_asr64(atm_smull(atm_rd_i16le(a + 2 * c), s[c]) + (1 << 14), 15)
                        + atm_asr64((int64_t)(atm_rd_i16le(bc + 2 * c) * u[c]) * mb + hb, s_b);
        s[c] = atm_clamp32(v, X_LIM);
    }
}

void atm_ek_conv_ref(const int8_t *t, int K, int nc, const int16_t *u, const int8_t *ring, int ld,
                     const uint8_t *rexp, int next, int kh, int taps, int32_t *acc) {
    for (int c = 0; c < nc; c++) acc[c] = t[c * K] * u[c];
    int slot = next;
    for (int j = 1; j < taps; j++) {
        slot = slot == 0 ? kh - 1 : slot - 1;
        const int8_t *rp = ring + (size_t)slot * (size_t)ld;
        const int s = rexp[slot];
        for (int c = 0; c < nc; c++) acc[c] += t[c * K + j] * (rp[c] * (1 << s));
    }
}

void atm_ek_softmax_q15(const int32_t *z, int n, int32_t *p, uint32_t *e) {
    int32_t mx = z[0];
    for (int i = 1; i < n; i++) if (z[i] > mx) mx = z[i];
    uint64_t sum = 0;
    for (int i = 0; i < n; i++) { e[i] = atm_exp_q16(atm_sat32((int64_t)z[i] - mx)); sum += e[i]; }
    const int ns = atm_bitlen64(sum) - 16;
    const uint32_t r = 0x7FFFFFFFu / (uint32_t)(sum >> ns);
    /* e r >> (16 + ns) from 32-bit products: e <= 2^24 = 2^16 eh + el, r <= 2^16 */
    for (int i = 0; i < n; i++)
        p[i] = (int32_t)(((e[i] >> 16) * r + (((e[i] & 0xFFFFu) * r) >> 16)) >> ns);
}

void atm_ek_scores_ref(const int32_t *dots, const uint8_t *kexp, int n, int64_t ms, int sbase, int32_t *out) {
    for (int j = 0; j < n; j++)
        out[j] = atm_clamp32(atm_rnd64(atm_smull(dots[j], (int32_t)ms), sbase - kexp[j]), X_LIM);   /* ms < 2^30 */
}

int atm_ek_topk_ins_ref(const int32_t *sc, int run, int32_t t0, int32_t *pr, int cnt, int keff) {
    for (int i = 0; i < run; i++) {
        const int32_t v = sc[i];
        int pos;                              /* the free slot, 1-based */
        if (cnt < keff) pos = ++cnt;
        else if (v > pr[2 * keff]) pos = keff;
        else continue;
        while (pr[2 * (pos - 1)] < v) {       /* the sentinel stops it at 1 */
            pr[2 * pos] = pr[2 * (pos - 1)];
            pr[2 * pos + 1] = pr[2 * pos - 1];
            pos--;
        }
        pr[2 * pos] = v;
        pr[2 * pos + 1] = t0 + i;
    }
    return cnt;
}

int atm_ek_first_above_ref(const int32_t *v, int n, int32_t t) {
    int i = 0;
    while (i < n && v[i] <= t) i++;
    return i;
}

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

/* ATOME02 payloads reach the row kernels re-encoded as ATOME01: T10[b] is
 * the 10-bit ATOME01 code of the 5 trits of ATOME02 byte b (0 for the
 * invalid bytes 243..255), so 4 ATOME02 bytes (20 trits) become 5 ATOME01
 * bytes with two shifts and ORs. Blocks of whole rows are re-encoded into a
 * stack buffer (RECODE_GROUPS * 5 bytes) starting at a trit index that is a
 * multiple of 20; with cols % 4 == 0 every row then starts on a byte of the
 * buffer. Left out on Cortex-M0 (no row kernel there, and little stack). */
#if !defined(ATM_ENGINE_PORTABLE) && !defined(__ARM_ARCH_6M__)   /* as engine_select.h's ATM_T5_RECODE */
#define C3(d) ((d) == 0 ? 3u : ((d) == 1 ? 0u : 1u))      /* base-3 digit (trit + 1) -> ATOME01 code */
#define T10E(b) ((b) < 243 ? (uint16_t)(C3((b) % 3) | C3((b) / 3 % 3) << 2 | C3((b) / 9 % 3) << 4 \
                                        | C3((b) / 27 % 3) << 6 | C3((b) / 81 % 3) << 8) : (uint16_t)0)
static const uint16_t T10[256] = { REP256(T10E) };

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

/* The pair-sum table's rows (the twin of engine_m3.S's atm_ek_lut_rows4_m3):
 * lut[32 j + 16 h + n] = the dot of nibble n (two codes) of row byte j with
 * the columns 4 j + 2 h, 4 j + 2 h + 1; two rows at a time, sharing the walk
 * through the table. */
void atm_ek_lut_rows(const uint8_t *b, uint32_t nb, uint32_t rows, const int32_t *lut, int32_t *out) {
    uint32_t r = 0;
    for (; r + 2 <= rows; r += 2) {
        const uint8_t *b0 = b + (size_t)r * nb, *b1 = b0 + nb;
        const int32_t *lt = lut;
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
        const int32_t *lt = lut;
        int32_t a0 = 0;
        for (uint32_t j = 0; j < nb; j++, lt += 32) {
            const unsigned v0 = b0[j];
            a0 += lt[v0 & 15u] + lt[16 + (v0 >> 4)];
        }
        out[r] = a0;
    }
}

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

void atm_ek_planes_build_ref(const int16_t *x, uint32_t cols, int32_t *tab) {
    for (uint32_t g = 0; g < cols / 4; g++, x += 4, tab += 16) {
        const int32_t a = x[0], b = x[1], c = x[2], d = x[3];
        tab[0] = 0; tab[1] = a; tab[2] = b; tab[3] = a + b;
        for (int i = 0; i < 4; i++) tab[4 + i] = tab[i] + c;
        for (int i = 0; i < 8; i++) tab[8 + i] = tab[i] + d;
    }
}

void atm_ek_planes_rows_ref(const uint8_t *b, uint32_t stride, uint32_t rows, uint32_t nbytes,
                            const int32_t *tab, int32_t *out, int add) {
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
 * stride that is not a multiple of 4 runs from the model's bytes, b). The
 * result equals atm_ek_planes_rows_ref's. */
void atm_ek_planes_rows_ox_ref(const uint8_t *b, const uint8_t *o, uint32_t stride, uint32_t rows, uint32_t nbytes,
                               const int32_t *tab, int32_t *out, int add) {
    if (stride & 3u) {   /* rows not all 4-aligned: the stream's 64 (i % 4) is not 64 (j % 4) */
        atm_ek_planes_rows_ref(b, stride, rows, nbytes, tab, out, add);
        return;
    }
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

/* The byte-table kernel (engine_kernels.h): per group of 4 columns, the
 * dots of the 81 valid ATOME01 bytes, 9 pair sums of the low two columns
 * (codes c0 | c1 << 2) plus 9 of the high two (shifted by 4 bits); a row
 * byte then costs one table load and one add. */
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
void atm_ek_matvec_portable(const uint8_t *w, int enc, uint32_t rows, uint32_t cols, const int16_t *x, int32_t *out) {
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

/* ---- attention's kept set (engine_kernels.h): the twin of atm_ek_topk_avx2 ---- */

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
