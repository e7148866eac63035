/* core/engine_m0.c — kernels for targets without a 32 x 32 -> 64-bit
 * multiply (the Cortex-M0 / M0+ kernel set, engine_select.c): the same integers as
 * their twins in engine_ref.c, computed from 32-bit products. Built on every
 * target so that tests/test_engine_kernels.c checks them on the host; the
 * boards compile this file for speed (-O2, mcu/CMakeLists.txt: small leaf
 * frames) even where the engine is compiled for size. The Thumb-1 assembly
 * kernels are in engine_m0.S. Freestanding, integers only. */
#include "engine.h"
#include "engine_kernels.h"
#include "fixmath.h"

static const int32_t X_LIM = (1 << 30) - 1;   /* as engine.c: the residual / state clamp */

/* ---- 32-bit versions of ln_out and ssm ----
 * The Cortex-M0 builds a 64-bit product from four 16-bit ones (atm_smull)
 * and shifts it through libgcc; these compute the same integers from 32-bit
 * products, splitting the one wide factor at bit 16 (w = 2^16 wh + wl with wl
 * unsigned): u w = 2^16 (u wh) + u wl, each part fitting int32 for a 16-bit
 * u, and floor((2^16 A + B + h) / 2^s) = floor((A + floor((B + h) / 2^16))
 * / 2^(s - 16)) for s >= 16. Outside the ranges noted they call the twins.
 * tests/test_engine_kernels.c compares them with the twins on the host and
 * the boards run them (the M0 kernel set in engine_select.c). */

/* atm_ek_ln_out_ref for 17 <= sg <= 46 (beyond 46 every product rounds to
 * 0: |u gr| < 2^45) and sb >= -14 (|beta| <= 2^29, so the sum fits int32) */
#if defined(__ARM_ARCH_6M__) && defined(ATM_M0_ASM)
void atm_ek_lnout_m0(int16_t *u, const int16_t *g, const int16_t *b, int d, int32_t r15, int sg, int sb);   /* engine_m0.S */
#endif
void atm_ek_ln_out_i32(int16_t *u, const uint8_t *g, const uint8_t *b, int d, int32_t r15, int sg, int sb) {
    if (sg < 17 || sg > 46 || sb < -14) { atm_ek_ln_out_ref(u, g, b, d, r15, sg, sb); return; }
#if defined(__ARM_ARCH_6M__) && defined(ATM_M0_ASM)
    /* sb >= 1 (the shipped models') with the vectors on halfword boundaries: Thumb-1 */
    if (sb >= 1 && sb <= 30 && d >= 1 && (((uintptr_t)g | (uintptr_t)b | (uintptr_t)u) & 1u) == 0) {
        atm_ek_lnout_m0(u, (const int16_t *)(const void *)g, (const int16_t *)(const void *)b, d, r15, sg, sb);
        return;
    }
#endif
    const int32_t hg = (int32_t)1 << (sg - 17);                  /* 2^(sg-1) / 2^16 */
    const int s2 = sg - 16;
    const int32_t hb = sb >= 1 ? (int32_t)1 << (sb - 1) : 0, mb = sb >= 1 ? 1 : (int32_t)1 << -sb;
    const int s_b = sb >= 1 ? sb : 0;
    for (int i = 0; i < d; i++) {
        const int32_t gr = r15 * atm_rd_i16le(g + 2 * i);            /* |gr| <= 2^30 */
        const int32_t bt = atm_asr32(atm_rd_i16le(b + 2 * i) * mb + hb, s_b);
        const int32_t ui = u[i];
        const int32_t A = ui * (gr >> 16);                           /* |.| <= 2^29 */
        const int32_t B = ui * (int32_t)((uint32_t)gr & 0xFFFFu);    /* |.| < 2^31 */
        const int32_t q = atm_asr32(A + atm_asr32(B, 16) + hg, s2) + bt;   /* |.| < 2^30 + 2^29 */
        u[i] = (int16_t)(q > 32767 ? 32767 : (q < -32767 ? -32767 : q));
    }
}

/* atm_ek_ssm_ref for -1 <= sb <= 31 (|bc|, |u| <= 32767, as the reader
 * and LayerNorm guarantee: |bc u| < 2^30) */
#if defined(__ARM_ARCH_6M__) && defined(ATM_M0_ASM)
void atm_ek_ssm0_m0(int32_t *s, const int16_t *a, const int16_t *bc, const int16_t *u, int d, int ls);   /* engine_m0.S */
#endif
void atm_ek_ssm_i32(int32_t *s, const uint8_t *a, const uint8_t *bc, const int16_t *u, int d, int sb) {
    if (sb < -1 || sb > 31) { atm_ek_ssm_ref(s, a, bc, u, d, sb); return; }
#if defined(__ARM_ARCH_6M__) && defined(ATM_M0_ASM)
    /* sb 0 and -1 (the shipped models'), little-endian int16 on halfword
     * boundaries: Thumb-1 */
    if (sb <= 0 && d >= 1 && (((uintptr_t)a | (uintptr_t)bc | (uintptr_t)u) & 1u) == 0) {
        atm_ek_ssm0_m0(s, (const int16_t *)(const void *)a, (const int16_t *)(const void *)bc, u, d, -sb);
        return;
    }
#endif
    const int32_t hb = sb >= 1 ? (int32_t)1 << (sb - 1) : 0;
    for (int c = 0; c < d; c++) {
        const int32_t ac = atm_rd_i16le(a + 2 * c), sc = s[c];
        /* (a s + 2^14) >> 15 = 2 (a sh) + ((a sl + 2^14) >> 15), sc = 2^16 sh + sl */
        const int32_t A = ac * (sc >> 16);                           /* |.| <= 2^29 */
        const int32_t B = ac * (int32_t)((uint32_t)sc & 0xFFFFu);    /* + 2^14 < 2^31 */
        const int32_t t1 = 2 * A + atm_asr32(B + (1 << 14), 15);
        const int32_t p = atm_rd_i16le(bc + 2 * c) * u[c];            /* |.| <= 2^30 */
        /* |t1| <= 2^30 + 2^16 and |t2| <= 2 |p| < 2^31: both fit int32, their
         * sum may not; a wrapped sum (operands of one sign, result of the
         * other) lies beyond the clamp on the operands' side */
        const int32_t t2 = sb >= 1 ? atm_asr32(p + hb, sb) : (sb == 0 ? p : (int32_t)((uint32_t)p << 1));
        const int32_t v = (int32_t)((uint32_t)t1 + (uint32_t)t2);
        s[c] = ((t1 ^ v) & (t2 ^ v)) < 0 ? (t2 < 0 ? -X_LIM : X_LIM) : (v > X_LIM ? X_LIM : (v < -X_LIM ? -X_LIM : v));
    }
}

/* ---- attention: the mix and the dot products ----
 * Four int8 values are one aligned word load (little endian: value k in
 * bits 8k .. 8k + 7); both need 4-aligned rows (base and the row length a
 * multiple of 4, as the engine's caches are) and call the twins otherwise. */
static inline int32_t sb0(uint32_t v) { return (int32_t)(int8_t)(uint8_t)v; }
static inline int32_t sb1(uint32_t v) { return (int32_t)(v << 16) >> 24; }
static inline int32_t sb2(uint32_t v) { return (int32_t)(v << 8) >> 24; }
static inline int32_t sb3(uint32_t v) { return (int32_t)v >> 24; }
typedef uint32_t __attribute__((may_alias)) u32_alias;   /* int8 cache words read as one word */
static inline uint32_t ld32(const int8_t *p) { return *(const u32_alias *)(const void *)p; }

/* atm_ek_mix_ref: four output columns at a time, the rows' words summed
 * with their weights in four registers (no stack arrays: the micro:bit's
 * stack is nearly full where attention runs) */
#if defined(__ARM_ARCH_6M__) && defined(ATM_M0_ASM)
void atm_ek_mix4_m0(const int32_t *w, const int32_t *idx, const int8_t *base, int n, int d, int32_t *out);   /* engine_m0.S */
#endif
void atm_ek_mix_m0(const int32_t *w, const int32_t *idx, const int8_t *base, int n, int d, int32_t *out) {
    if ((((uintptr_t)base | (uint32_t)d) & 3u) != 0) { atm_ek_mix_ref(w, idx, base, n, d, out); return; }
#if defined(__ARM_ARCH_6M__) && defined(ATM_M0_ASM)
    if (n >= 1 && d >= 4) { atm_ek_mix4_m0(w, idx, base, n, d, out); return; }
#endif
    for (int c = 0; c < d; c += 4) {
        int32_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;
        const int8_t *col = base + c;
        for (int i = 0; i < n; i++) {
            const uint32_t v = ld32(col + (size_t)idx[i] * (size_t)d);
            const int32_t wi = w[i];
            a0 += wi * sb0(v); a1 += wi * sb1(v); a2 += wi * sb2(v); a3 += wi * sb3(v);
        }
        out[c] = a0; out[c + 1] = a1; out[c + 2] = a2; out[c + 3] = a3;
    }
}

#if defined(__ARM_ARCH_6M__) && defined(ATM_M0_ASM)
void atm_ek_dots16_m0(const int16_t *q, const int8_t *k, int n, int32_t *out);   /* engine_m0.S, dh = 16 */
void atm_ek_dots16x2_m0(const int16_t *q, const int8_t *k, int pairs, int32_t *out);   /* two keys at a time */
#endif
/* atm_ek_dots_ref, each key row read a word (four values) at a time (on the
 * M0 board builds, dh = 16 with aligned q and k: engine_m0.S) */
void atm_ek_dots_m0(const int16_t *q, const int8_t *k, int dh, int n, int32_t *out) {
    if ((((uintptr_t)k | (uint32_t)dh) & 3u) != 0) { atm_ek_dots_ref(q, k, dh, n, out); return; }
#if defined(__ARM_ARCH_6M__) && defined(ATM_M0_ASM)
    if (dh == 16 && n >= 1 && ((uintptr_t)q & 3u) == 0) {
        if (n >= 2) atm_ek_dots16x2_m0(q, k, n / 2, out);
        if (n & 1) atm_ek_dots16_m0(q, k + 16 * (n - 1), 1, out + n - 1);
        return;
    }
#endif
    for (int j = 0; j < n; j++, k += dh) {
        int32_t acc = 0;
        for (int t = 0; t < dh; t += 4) {
            const uint32_t v = ld32(k + t);
            acc += q[t] * sb0(v) + q[t + 1] * sb1(v) + q[t + 2] * sb2(v) + q[t + 3] * sb3(v);
        }
        out[j] = acc;
    }
}

/* ---- the residual update and the logit scale ----
 * round(v mul / 2^s) for 1 <= s <= 31 from the 64-bit product built as
 * (hi, lo) words from four 16-bit products, and shifted as two 32-bit words
 * (libgcc's variable 64-bit shift is a call); a quotient that does not fit
 * int32 is beyond every clamp (|x| <= 2^30 - 1), so only its sign counts.
 * Other shifts: the twins. */
static inline int64_t mulsh(int32_t v, uint32_t ml, int32_t mh, uint32_t half, int s) {
    const uint32_t vl = (uint32_t)v & 0xFFFFu;
    const int32_t vh = v >> 16;
    uint32_t lo = vl * ml;
    int32_t hi = vh * mh;
    const int32_t m1 = (int32_t)vl * mh, m2 = vh * (int32_t)ml;     /* |.| < 2^31 */
    uint32_t t = (uint32_t)m1 << 16;
    lo += t; hi += (m1 >> 16) + (int32_t)(lo < t);
    t = (uint32_t)m2 << 16;
    lo += t; hi += (m2 >> 16) + (int32_t)(lo < t);
    lo += half; hi += (int32_t)(lo < half);
    const uint32_t rlo = (lo >> s) | ((uint32_t)hi << (32 - s));
    const int32_t rhi = hi >> s;
    if (rhi != ((int32_t)rlo >> 31)) return rhi < 0 ? -((int64_t)1 << 32) : ((int64_t)1 << 32);
    return (int32_t)rlo;
}

#if defined(__ARM_ARCH_6M__) && defined(ATM_M0_ASM)
/* engine_m0.S: the same in Thumb-1, 45 instructions an element */
#define ADDSC_ASM 1
void atm_ek_addsc_m0(int32_t *x, const int32_t *v, int n, int32_t mul, int s);
void atm_ek_scale_m0(int32_t *v, int n, int32_t mul, int s);
/* and for 0 <= mul < 2^16 in two products: 18 (addsc, 17 <= s <= 31) and
 * 24 (scale, 2 <= s <= 16) instructions an element */
void atm_ek_addsc16_m0(int32_t *x, const int32_t *v, int n, int32_t mul, int s);
/* any mul, 17 <= s <= 31: two products where v fits int16, else MULSH */
void atm_ek_addscv_m0(int32_t *x, const int32_t *v, int n, int32_t mul, int s);
void atm_ek_scale16_m0(int32_t *v, int n, int32_t mul, int s);
#endif

void atm_ek_addsc_i32(int32_t *x, const int32_t *v, int n, int32_t mul, int s) {
    if (s < 1 || s > 31) { atm_ek_addsc_ref(x, v, n, mul, s); return; }
#ifdef ADDSC_ASM
    if (n > 0) {
        if (mul >= 0 && mul < 65536 && s >= 17) atm_ek_addsc16_m0(x, v, n, mul, s);
        else if (s >= 17) atm_ek_addscv_m0(x, v, n, mul, s);
        else atm_ek_addsc_m0(x, v, n, mul, s);
    }
    return;
#endif
    const uint32_t ml = (uint32_t)mul & 0xFFFFu, half = (uint32_t)1 << (s - 1);
    const int32_t mh = mul >> 16;
    for (int c = 0; c < n; c++)
        x[c] = atm_clamp32((int64_t)x[c] + mulsh(v[c], ml, mh, half, s), X_LIM);
}

void atm_ek_scale_i32(int32_t *v, int n, int32_t mul, int s) {
    if (s < 1 || s > 31) { atm_ek_scale_ref(v, n, mul, s); return; }
#ifdef ADDSC_ASM
    if (n > 0) {
        if (mul >= 0 && mul < 65536 && s >= 2 && s <= 16) atm_ek_scale16_m0(v, n, mul, s);
        else atm_ek_scale_m0(v, n, mul, s);
    }
    return;
#endif
    const uint32_t ml = (uint32_t)mul & 0xFFFFu, half = (uint32_t)1 << (s - 1);
    const int32_t mh = mul >> 16;
    for (int c = 0; c < n; c++) v[c] = atm_clamp32(mulsh(v[c], ml, mh, half, s), X_LIM);
}

/* ---- the conv pathway's taps ----
 * atm_ek_conv_ref channel by channel: each channel's K trits and its taps'
 * ring values summed in a register (the twin walks tap by tap over all
 * channels, loading and storing acc each time); up to 5 taps, else the twin. */
void atm_ek_conv_m0(const int8_t *t, int K, int nc, const int16_t *u, const int8_t *ring, int ld,
                    const uint8_t *rexp, int next, int kh, int taps, int32_t *acc) {
    if (taps > 5 || taps < 1) { atm_ek_conv_ref(t, K, nc, u, ring, ld, rexp, next, kh, taps, acc); return; }
#if defined(__ARM_ARCH_6M__) && defined(ATM_M0_ASM)
    if (K == 5 && taps == 5 && kh == 4 && nc >= 1 && ((uintptr_t)u & 1u) == 0) {
        const int8_t *rp[4];
        int32_t e[4];
        atm_ek_conv_rows4(ring, ld, rexp, next, rp, e);
        atm_ek_conv5_m0(t, nc, u, rp, e, acc);
        return;
    }
#endif
    const int8_t *r1 = ring, *r2 = ring, *r3 = ring, *r4 = ring;
    int e1 = 0, e2 = 0, e3 = 0, e4 = 0;
    int slot = next;
    for (int j = 1; j < taps; j++) {
        slot = slot == 0 ? kh - 1 : slot - 1;
        const int8_t *rp = ring + (size_t)slot * (size_t)ld;
        const int e = rexp[slot];
        if (j == 1) { r1 = rp; e1 = e; } else if (j == 2) { r2 = rp; e2 = e; }
        else if (j == 3) { r3 = rp; e3 = e; } else { r4 = rp; e4 = e; }
    }
    switch (taps) {
    case 5:
        for (int c = 0; c < nc; c++, t += K)
            acc[c] = t[0] * u[c] + t[1] * (r1[c] * (1 << e1)) + t[2] * (r2[c] * (1 << e2))
                   + t[3] * (r3[c] * (1 << e3)) + t[4] * (r4[c] * (1 << e4));
        break;
    case 4:
        for (int c = 0; c < nc; c++, t += K)
            acc[c] = t[0] * u[c] + t[1] * (r1[c] * (1 << e1)) + t[2] * (r2[c] * (1 << e2)) + t[3] * (r3[c] * (1 << e3));
        break;
    case 3:
        for (int c = 0; c < nc; c++, t += K)
            acc[c] = t[0] * u[c] + t[1] * (r1[c] * (1 << e1)) + t[2] * (r2[c] * (1 << e2));
        break;
    case 2:
        for (int c = 0; c < nc; c++, t += K) acc[c] = t[0] * u[c] + t[1] * (r1[c] * (1 << e1));
        break;
    default:
        for (int c = 0; c < nc; c++, t += K) acc[c] = t[0] * u[c];
    }
}

/* ---- int8 quantisation and the LayerNorm sums, 32-bit ----
 * The twins' integers without their 64-bit arithmetic (the Cortex-M0 builds
 * it from libgcc calls) and without the quantisers' clamp, which cannot
 * bind: with sh from atm_fit_shift(max |src|, 127), round(v / 2^sh) <= 127
 * for every 0 <= v <= max, and for -max <= v < 0 floor(-a + 1/2) >=
 * -floor(a + 1/2) (a = |v| / 2^sh), so the result is never below -127.
 * Used by the M0 and M3 sets; outside the twins' ranges they call them. */
/* atm_fit_shift(mx, 127) without its loop: every s below bitlen(mx) - 7
 * leaves mx / 2^s >= 128, and bitlen(mx) - 6 always fits */
static inline int fit127(uint32_t mx) {
    int sh = atm_bitlen32(mx) - 7;
    if (sh < 0) sh = 0;
    if (((mx + (((uint32_t)1 << sh) >> 1)) >> sh) > 127) sh++;
    return sh;
}
/* the quantisers' two loops four elements at a time */
#if defined(ATM_ARM_ASM)
/* engine_arm.S (Thumb-1, both boards): the extremes two values a load, the
 * stores four */
void atm_ek_minmax32_m0(const int32_t *v, int n, int32_t *mm);
void atm_ek_minmax16_m0(const int16_t *v, int n, int32_t *mm);
void atm_ek_qstore32_m0(const int32_t *src, int n, int8_t *dst, int sh);
void atm_ek_qstore16_m0(const int16_t *src, int n, int8_t *dst, int sh);
#define MINMAX_ASM(F, OK)                                                               \
    if (OK) { int32_t mm[2]; F(src, n, mm); lo = mm[0] < 0 ? mm[0] : 0; hi = mm[1] > 0 ? mm[1] : 0; i = n; }
#define QSTORE_ASM(G, OK) if (OK) { G(src, n, dst, sh); return (uint8_t)sh; }
#else
#define MINMAX_ASM(F, OK)
#define QSTORE_ASM(G, OK)
#endif
#define MINMAX32 atm_ek_minmax32_m0
#define MINMAX16 atm_ek_minmax16_m0
/* the assembly's conditions: int16 values as whole aligned words */
#define OK32 (n >= 1)
#define OK16 (n >= 2 && (n & 1) == 0 && ((uintptr_t)src & 3u) == 0)
#define QUANT_BODY(T, F, G, OK)                                                         \
    int32_t lo = 0, hi = 0;                                                             \
    int i = 0;                                                                          \
    MINMAX_ASM(F, OK)                                                                   \
    for (; i + 4 <= n; i += 4) {                                                        \
        const int32_t a = src[i], b = src[i + 1], c = src[i + 2], e = src[i + 3];       \
        if (a > hi) hi = a;                                                             \
        if (a < lo) lo = a;                                                             \
        if (b > hi) hi = b;                                                             \
        if (b < lo) lo = b;                                                             \
        if (c > hi) hi = c;                                                             \
        if (c < lo) lo = c;                                                             \
        if (e > hi) hi = e;                                                             \
        if (e < lo) lo = e;                                                             \
    }                                                                                   \
    for (; i < n; i++) {                                                                \
        const int32_t v = src[i];                                                       \
        if (v > hi) hi = v;                                                             \
        if (v < lo) lo = v;                                                             \
    }                                                                                   \
    const uint32_t nl = 0u - (uint32_t)lo, mx = (uint32_t)hi > nl ? (uint32_t)hi : nl;  \
    if (mx > (1u << 30)) return T(src, n, dst);                                         \
    const int sh = fit127(mx);                                                          \
    QSTORE_ASM(G, OK)                                                                   \
    const int32_t half = (int32_t)(((uint32_t)1 << sh) >> 1);                           \
    i = 0;                                                                              \
    for (; i + 4 <= n; i += 4) {                                                        \
        dst[i] = (int8_t)((src[i] + half) >> sh);                                       \
        dst[i + 1] = (int8_t)((src[i + 1] + half) >> sh);                               \
        dst[i + 2] = (int8_t)((src[i + 2] + half) >> sh);                               \
        dst[i + 3] = (int8_t)((src[i + 3] + half) >> sh);                               \
    }                                                                                   \
    for (; i < n; i++) dst[i] = (int8_t)((src[i] + half) >> sh);                        \
    return (uint8_t)sh

uint8_t atm_ek_quant32_i32(const int32_t *src, int n, int8_t *dst) {
    QUANT_BODY(atm_ek_quant32_ref, MINMAX32, atm_ek_qstore32_m0, OK32);
}
uint8_t atm_ek_quant16_i32(const int16_t *src, int n, int8_t *dst) {
    QUANT_BODY(atm_ek_quant16_ref, MINMAX16, atm_ek_qstore16_m0, OK16);
}

/* the sum as 2^16 (sum of the high halves) + (sum of the low halves):
 * |x| <= 2^30 and d < 2^16 keep both in 32 bits */
#if (defined(__ARM_ARCH_7M__) || defined(__ARM_ARCH_7EM__)) && defined(ATM_M3_ASM)
void atm_ek_ln_stats_m3s(const int32_t *x, int d, int64_t *sum, int32_t *lo, int32_t *hi);   /* engine_m3.S */
#endif
#if defined(__ARM_ARCH_6M__) && defined(ATM_M0_ASM)
void atm_ek_ln_stats_m0(const int32_t *x, int d, int64_t *sum, int32_t *lo, int32_t *hi);   /* engine_m0.S */
int64_t atm_ek_ln_center_m0(const int32_t *x, int d, int32_t mean, int k, int16_t *u);
#endif
void atm_ek_ln_stats_i32(const int32_t *x, int d, int64_t *sum, int32_t *lo, int32_t *hi) {
#if (defined(__ARM_ARCH_7M__) || defined(__ARM_ARCH_7EM__)) && defined(ATM_M3_ASM)
    if (d >= 1) { atm_ek_ln_stats_m3s(x, d, sum, lo, hi); return; }   /* the M3: ADDS / ADC and branches */
#elif defined(__ARM_ARCH_6M__) && defined(ATM_M0_ASM)
    if (d >= 1) { atm_ek_ln_stats_m0(x, d, sum, lo, hi); return; }    /* the M0: ADDS / ADCS and branches */
#endif
    if (d >= 65536) { atm_ek_ln_stats_ref(x, d, sum, lo, hi); return; }
    int32_t sh = 0, l = x[0], h = x[0];
    uint32_t sl = 0;
    for (int i = 0; i < d; i++) {
        const int32_t v = x[i];
        sh += v >> 16;
        sl += (uint32_t)v & 0xFFFFu;
        if (v < l) l = v;
        if (v > h) h = v;
    }
    *sum = (int64_t)sh * 65536 + (int64_t)sl;
    *lo = l; *hi = h;
}

/* y^2 <= 2^30 summed in a 32-bit word whose carries count in a second
 * (the M3: one SMLAL each, two elements a round) */
int64_t atm_ek_ln_center_i32(const int32_t *x, int d, int32_t mean, int k, int16_t *u) {
#if defined(__ARM_ARCH_6M__) && defined(ATM_M0_ASM)
    if (k > 0 && d >= 1) return atm_ek_ln_center_m0(x, d, mean, k, u);   /* engine_m0.S */
#endif
#if defined(__ARM_ARCH_7M__) || defined(__ARM_ARCH_7EM__)
    if (k > 0) {
        int64_t vs = 0;
        int i = 0;
        for (; i + 2 <= d; i += 2) {
            const int32_t y0 = (x[i] - mean) >> k, y1 = (x[i + 1] - mean) >> k;
            u[i] = (int16_t)y0;
            u[i + 1] = (int16_t)y1;
            vs += (int64_t)y0 * y0;
            vs += (int64_t)y1 * y1;
        }
        if (i < d) {
            const int32_t y = (x[i] - mean) >> k;
            u[i] = (int16_t)y;
            vs += (int64_t)y * y;
        }
        return vs;
    }
#endif
    uint32_t vl = 0, vh = 0;
    if (k > 0) {
        for (int i = 0; i < d; i++) {
            const int32_t y = (x[i] - mean) >> k;
            u[i] = (int16_t)y;
            const uint32_t t = vl + (uint32_t)(y * y);
            vh += t < vl;
            vl = t;
        }
    } else {
        const int s = -k;
        for (int i = 0; i < d; i++) {
            const int32_t y = (int32_t)((uint32_t)(x[i] - mean) << s);
            u[i] = (int16_t)y;
            const uint32_t t = vl + (uint32_t)(y * y);
            vh += t < vl;
            vl = t;
        }
    }
    return (int64_t)(((uint64_t)vh << 32) | vl);
}

/* ---- exp and softmax ----
 * atm_exp_q16's integers: its Horner steps round(p g / 2^30) from 16-bit
 * halves (the M0's 32-bit multiplies; mr30_h) or from one 32 x 32 -> 64
 * product (mr32_w, the M3: below), one wide product for y and one for the sqrt(2)
 * factor, and the final rounding shift by 6 - n in [7, 32] as 32-bit words.
 * x < -2^21 gives n < -46 (0 as in atm_exp_q16, without its product). */
static inline int32_t mr30_h(int32_t p, int32_t gh, uint32_t gl) {
    /* p g = 2^32 A + 2^16 (B + C) + D with p = 2^16 ph + pl, g = 2^16 gh + gl
     * (|g| <= 2^29: |A| <= 2^28, |B| < 2^31, |C| <= 2^29, D < 2^32);
     * (p g + 2^29) >> 30 = 4 A + (B + C + (D >> 16) + 2^13) >> 14, B split
     * at bit 14 so that the sum fits int32 */
    const int32_t ph = p >> 16;
    const uint32_t pl = (uint32_t)p & 0xFFFFu;
    const int32_t A = ph * gh, B = ph * (int32_t)gl, C = (int32_t)pl * gh;
    const uint32_t D = pl * gl;
    return 4 * A + (B >> 14) + (((B & 0x3FFF) + C + (int32_t)(D >> 16) + (1 << 13)) >> 14);
}
/* The exponential's two wide products from 16-bit halves in 32-bit words
 * (the M0 has no 32 x 32 -> 64 multiply, and atm_smull's general one is a
 * call and twice the work):
 *  - y = x log2(e) in Q30 for -2^21 <= x < 0: x = 2^16 xh + xl, log2(e) =
 *    2^16 LH + LL; floor(y / 2^16) = 2^16 A + S with A = xh LH and S = xh LL
 *    + xl LH + (xl LL >> 16) (|S| < 2^31), so n = y >> 46 = (A + (S >> 16))
 *    >> 14 and y's bits 16 .. 45 are the low 30 bits of 2^16 A + S;
 *  - v = round(p sqrt(2) / 2^30) for 0 < p < 2^31, unsigned: p = 2^16 ph +
 *    pl, sqrt(2) = 2^16 SH + SL; v = 4 ph SH + (M + ((pl SL + 2^29) >> 16))
 *    >> 14, M = ph SL + pl SH < 2^32 - 2^16.
 * Exact: every x in [-2^22, 0] gives atm_exp_q16's integers
 * (tests/test_engine_kernels.c; on the board tests/mcu/kernels.c). */
#define LOG2E_H 23637
#define LOG2E_L 7573
#define SQRT2_H 23170u
#define SQRT2_L 31130u
typedef char exp_halves_ok[(LOG2E_H * 65536 + LOG2E_L == ATM_LOG2E_Q30 &&
                            SQRT2_H * 65536u + SQRT2_L == (uint32_t)ATM_SQRT2_Q30) ? 1 : -1];
static inline int32_t exp_n(int32_t x, int32_t *g) {
    const int32_t xh = x >> 16, xl = (int32_t)((uint32_t)x & 0xFFFFu);
    const int32_t A = xh * LOG2E_H;
    const int32_t S = xh * LOG2E_L + xl * LOG2E_H + (int32_t)(((uint32_t)xl * LOG2E_L) >> 16);
    *g = (int32_t)((((uint32_t)A << 16) + (uint32_t)S) & 0x3FFFFFFFu) - (1 << 29);
    return (A + (S >> 16)) >> 14;
}
static inline uint32_t exp_sqrt2(int32_t p) {
    const uint32_t ph = (uint32_t)p >> 16, pl = (uint32_t)p & 0xFFFFu;
    const uint32_t M = ph * SQRT2_L + pl * SQRT2_H;
    return 4u * ph * SQRT2_H + ((M + ((pl * SQRT2_L + (1u << 29)) >> 16)) >> 14);
}

#if defined(__ARM_ARCH_6M__) && defined(ATM_M0_ASM)
/* engine_m0.S: the seven Horner steps in Thumb-1, with the coefficients
 * less 2^14 (c[7], the start, as it is); the tests compare the result with
 * atm_exp_q16 on the board (tests/mcu/kernels.c) */
int32_t atm_ek_exp2poly_m0(int32_t g, const int32_t *c);
static const int32_t EXP2_C14[8] = {
    1073741824 - 16384, 744261118 - 16384, 257941248 - 16384, 59597083 - 16384,
    10327387 - 16384, 1431680 - 16384, 165394 - 16384, 16377
};
#define EXP2POLY(g) atm_ek_exp2poly_m0(g, EXP2_C14)
#else
static int32_t exp2poly_h(int32_t g) {
    int32_t p = atm_exp2_c[7];
    for (int k = 6; k >= 0; k--) p = mr30_h(p, g >> 16, (uint32_t)g & 0xFFFFu) + atm_exp2_c[k];
    return p;
}
#define EXP2POLY(g) exp2poly_h(g)
#endif
uint32_t atm_ek_exp_q16_h(int32_t x) {
    if (x >= 0) return 1u << 24;
    if (x < -(1 << 21)) return 0;
    int32_t g;
    const int32_t n = exp_n(x, &g);
    if (n < -26) return 0;
    const uint32_t v = exp_sqrt2(EXP2POLY(g));
    const int s = 6 - n;
    return s >= 32 ? v >> 31 : (v >> s) + ((v >> (s - 1)) & 1u);
}
/* The M3's: each Horner step round(p g / 2^30) = floor((p 4g + 2^31) / 2^32)
 * (|g| <= 2^29, so 4g fits int32) is one SMULL's high word plus its low
 * word's top bit, the sqrt(2) factor the same from UMULL of 2p and 2 sqrt(2)
 * in Q30 (p > 0: 2^g in Q30 for |g| <= 1/2; both below 2^32); the same
 * integers as atm_exp_q16 (every x in [-2^22, 0], tests/test_engine_kernels.c) */
static inline int32_t mr32_w(int32_t p, int32_t g4) {
    const int64_t q = (int64_t)p * g4;
    return (int32_t)((uint64_t)q >> 32) + (int32_t)((uint32_t)q >> 31);
}
uint32_t atm_ek_exp_q16_w(int32_t x) {
    if (x >= 0) return 1u << 24;
    if (x < -(1 << 21)) return 0;
    const int64_t y = (int64_t)x * ATM_LOG2E_Q30;
    const int32_t n = (int32_t)(y >> 46);
    if (n < -26) return 0;
    const int32_t g4 = (int32_t)((((uint32_t)((uint64_t)y >> 16) & 0x3FFFFFFFu) - (1u << 29)) << 2);
    const int32_t *c = atm_exp2_c;   /* the seven steps unrolled: no loop compare a step */
    int32_t p = mr32_w(c[7], g4) + c[6];
    p = mr32_w(p, g4) + c[5];
    p = mr32_w(p, g4) + c[4];
    p = mr32_w(p, g4) + c[3];
    p = mr32_w(p, g4) + c[2];
    p = mr32_w(p, g4) + c[1];
    p = mr32_w(p, g4) + c[0];
    const uint64_t w = (uint64_t)(2u * (uint32_t)p) * (2u * (uint32_t)ATM_SQRT2_Q30);
    const uint32_t v = (uint32_t)(w >> 32) + ((uint32_t)w >> 31);
    const int s = 6 - n;
    return s >= 32 ? v >> 31 : (v >> s) + ((v >> (s - 1)) & 1u);
}

/* atm_ek_softmax_q15 with these exps and a 32-bit sum (n <= 255: the sum
 * is below 255 2^24); the twin beyond */
#define SOFTMAX_BODY(EXP)                                                               \
    if (n > 255) { atm_ek_softmax_q15(z, n, p, e); return; }                           \
    int32_t mx = z[0];                                                                  \
    for (int i = 1; i < n; i++) if (z[i] > mx) mx = z[i];                               \
    uint32_t sum = 0;                                                                   \
    for (int i = 0; i < n; i++) {                                                       \
        /* dd = mx - z[i] in [0, 2^32): exp(sat32(-dd)) is 0 beyond 2^21 (a    */       \
        /* saturated -2^31 included), so no 64-bit difference is needed         */       \
        const uint32_t dd = (uint32_t)mx - (uint32_t)z[i];                             \
        e[i] = dd > (1u << 21) ? 0u : EXP(-(int32_t)dd);                                 \
        sum += e[i];                                                                    \
    }                                                                                   \
    const int ns = atm_bitlen32(sum) - 16;                                              \
    const uint32_t r = 0x7FFFFFFFu / (sum >> ns);                                       \
    for (int i = 0; i < n; i++)                                                         \
        p[i] = (int32_t)(((e[i] >> 16) * r + (((e[i] & 0xFFFFu) * r) >> 16)) >> ns)

void atm_ek_softmax_h(const int32_t *z, int n, int32_t *p, uint32_t *e) { SOFTMAX_BODY(atm_ek_exp_q16_h); }
void atm_ek_softmax_w(const int32_t *z, int n, int32_t *p, uint32_t *e) { SOFTMAX_BODY(atm_ek_exp_q16_w); }
