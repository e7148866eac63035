/* core/engine_m3.c — the Cortex-M3 / M4 set's elementwise kernels
 * (engine_kernels.h): the twins' 64-bit rounding shifts from the one-
 * instruction 32 x 32 -> 64 multiply (SMULL / SMLAL) and 32-bit shifts of
 * its two words, instead of the variable 64-bit shifts the C of the twins
 * compiles to. Plain C: built everywhere (the host tests compare it with
 * the twins), run by the M3 kernel set (core/engine_select.c). Each kernel covers
 * the shift ranges the shipped models use and a good deal more, and calls
 * its twin outside them. Freestanding, integers only. */
#include "engine.h"
#include "engine_kernels.h"
#include "fixmath.h"

static const int32_t X_LIM = (1 << 30) - 1;   /* as engine.c: the residual / state clamp */

/* clamp(v, +-X_LIM): on the M3 one SSAT to [-2^30, 2^30 - 1] and the low end
 * moved up by one */
static inline int32_t clamp31(int32_t v) {
#if defined(__ARM_ARCH_7M__) || defined(__ARM_ARCH_7EM__)
    int32_t r;
    __asm__("ssat %0, #31, %1" : "=r"(r) : "r"(v));
    return r + (r == -(1 << 30));
#else
    return v > X_LIM ? X_LIM : (v < -X_LIM ? -X_LIM : v);
#endif
}

/* clamp(H:L, +-X_LIM) for a 64-bit value given as its two words */
static inline int32_t clamp_hl(uint32_t L, int32_t H) {
    if (H != ((int32_t)L >> 31)) return H < 0 ? -X_LIM : X_LIM;
    return clamp31((int32_t)L);
}

/* (p + 2^(s-1)) >> s for 1 <= s <= 31 as two words: p = v * mul + half */
#define RSH_HL(p, s, sl, rlo, rhi)                                               \
    const uint32_t rlo = ((uint32_t)(p) >> (s)) | ((uint32_t)((uint64_t)(p) >> 32) << (sl)); \
    const int32_t rhi = (int32_t)((uint64_t)(p) >> 32) >> (s)

/* atm_ek_addsc_ref for 1 <= s <= 31 (|x| <= X_LIM, as the engine keeps it) */
void atm_ek_addsc_m3(int32_t *x, const int32_t *v, int n, int32_t mul, int s) {
    if (s < 1 || s > 31) { atm_ek_addsc_ref(x, v, n, mul, s); return; }
    if (mul >= 0 && mul < 65536 && s >= 17) {
        /* a 16-bit multiplier (the SSM's router weight): v = 2^16 vh + vl
         * (vl unsigned), 2^(s-1) = 2^16 H, so the rounded quotient is
         * (vh mul + H + (vl mul >> 16)) >> (s - 16), every term within int32
         * and |r| <= 2^30, so x + r fits too */
        const int32_t H = (int32_t)1 << (s - 17);
        const int sh = s - 16;
        for (int c = 0; c < n; c++) {
            const int32_t vv = v[c];
            const int32_t r = ((vv >> 16) * mul + H + (int32_t)((((uint32_t)vv & 0xFFFFu) * (uint32_t)mul) >> 16)) >> sh;
            x[c] = clamp31(x[c] + r);
        }
        return;
    }
    const int64_t half = (int64_t)1 << (s - 1);
    const int sl = 32 - s;
    for (int c = 0; c < n; c++) {
        const int32_t vv = v[c], vs = (int32_t)((uint32_t)vv << sl);
        if ((vs >> sl) == vv) {
            /* v 2^(32-s) fits int32: the rounded quotient is the high word of
             * v 2^(32-s) mul + 2^31, that is the product's high word plus its
             * low word's top bit; |r| <= 2^30, so x + r fits int32 and one
             * SSAT (and the low end's fix) clamps */
            const int64_t p = (int64_t)vs * mul;
            const int32_t r = (int32_t)((uint64_t)p >> 32) + (int32_t)((uint32_t)p >> 31);
            x[c] = clamp31(x[c] + r);
            continue;
        }
        const int64_t p = (int64_t)vv * mul + half;
        RSH_HL(p, s, sl, rlo, rhi);
        const uint64_t sum = ((uint64_t)(uint32_t)rhi << 32 | rlo) + (uint64_t)(int64_t)x[c];
        x[c] = clamp_hl((uint32_t)sum, (int32_t)(sum >> 32));
    }
}

/* atm_ek_scale_ref for 1 <= s <= 31 */
void atm_ek_scale_m3(int32_t *v, int n, int32_t mul, int s) {
    if (s < 1 || s > 31) { atm_ek_scale_ref(v, n, mul, s); return; }
    const int64_t half = (int64_t)1 << (s - 1);
    const int sl = 32 - s;
    for (int c = 0; c < n; c++) {
        const int64_t p = (int64_t)v[c] * mul + half;
        RSH_HL(p, s, sl, rlo, rhi);
        v[c] = clamp_hl(rlo, rhi);
    }
}

static inline int16_t sat16_hl(uint32_t L, int32_t H) {
    if (H != ((int32_t)L >> 31)) return H < 0 ? -32767 : 32767;
    const int32_t q = (int32_t)L;
    return (int16_t)(q > 32767 ? 32767 : (q < -32767 ? -32767 : q));
}

/* atm_ek_ln_out_ref for 1 <= sg <= 62, -16 <= sb <= 30 (|gr| <= 2^30, |u| <= 2^15:
 * |u gr| < 2^45, so for sg >= 32 the rounded quotient is the product's high
 * word plus the half's share, shifted) */
#if (defined(__ARM_ARCH_7M__) || defined(__ARM_ARCH_7EM__)) && defined(ATM_M3_ASM)
void atm_ek_ln_out_m3s(int16_t *u, const uint8_t *g, const uint8_t *b, int d, int32_t r15, int sg, int sb);   /* engine_m3.S */
#endif
void atm_ek_ln_out_m3(int16_t *u, const uint8_t *g, const uint8_t *b, int d, int32_t r15, int sg, int sb) {
    if (sg < 1 || sg > 62 || sb < -16 || sb > 30) { atm_ek_ln_out_ref(u, g, b, d, r15, sg, sb); return; }
    const int32_t hb = sb >= 1 ? (int32_t)1 << (sb - 1) : 0, mb = sb >= 1 ? 1 : (int32_t)1 << -sb;
    const int s_b = sb >= 1 ? sb : 0;
    if (sg >= 15 && sg <= 31 && sb >= 1) {
#if (defined(__ARM_ARCH_7M__) || defined(__ARM_ARCH_7EM__)) && defined(ATM_M3_ASM)
        if (d >= 1) atm_ek_ln_out_m3s(u, g, b, d, r15, sg, sb);   /* the same loop in Thumb-2 */
        return;
#endif
        /* |u gr| < 2^45: the quotient fits int32 (|.| <= 2^30), |bt| <= 2^14, their sum too */
        const int64_t hg = (int64_t)1 << (sg - 1);
        const int sl = 32 - sg;
        for (int i = 0; i < d; i++) {
            const int32_t gr = r15 * atm_rd_i16le(g + 2 * i);
            const int64_t p = (int64_t)u[i] * gr + hg;
            const int32_t r = (int32_t)(((uint32_t)p >> sg) | ((uint32_t)((uint64_t)p >> 32) << sl));
            const int32_t q = r + atm_asr32(atm_rd_i16le(b + 2 * i) + hb, sb);
            u[i] = (int16_t)(q > 32767 ? 32767 : (q < -32767 ? -32767 : q));
        }
        return;
    }
    if (sg <= 31) {
        const int64_t hg = (int64_t)1 << (sg - 1);
        const int sl = 32 - sg;
        for (int i = 0; i < d; i++) {
            const int32_t gr = r15 * atm_rd_i16le(g + 2 * i);
            const int32_t bt = atm_asr32(atm_rd_i16le(b + 2 * i) * mb + hb, s_b);   /* |.| < 2^31 */
            const int64_t p = (int64_t)u[i] * gr + hg;
            RSH_HL(p, sg, sl, rlo, rhi);
            const uint64_t sum = ((uint64_t)(uint32_t)rhi << 32 | rlo) + (uint64_t)(int64_t)bt;
            u[i] = sat16_hl((uint32_t)sum, (int32_t)(sum >> 32));
        }
        return;
    }
    /* sg >= 32: (p + 2^(sg-1)) >> sg = (hi + 2^(sg-33)) >> (sg - 32) for sg >= 33,
     * hi + (lo >> 31) for sg = 32; |hi| < 2^13 */
    const int s2 = sg - 32;
    const int32_t hh = sg >= 33 ? (int32_t)1 << (sg - 33) : 0;
    for (int i = 0; i < d; i++) {
        const int32_t gr = r15 * atm_rd_i16le(g + 2 * i);
        const int32_t bt = atm_asr32(atm_rd_i16le(b + 2 * i) * mb + hb, s_b);
        const int64_t p = (int64_t)u[i] * gr;
        const int32_t hi = (int32_t)((uint64_t)p >> 32);
        const int32_t r = sg == 32 ? hi + (int32_t)((uint32_t)p >> 31) : (hi + hh) >> s2;
        const int32_t q = r + bt;                                            /* |.| < 2^31 */
        u[i] = (int16_t)(q > 32767 ? 32767 : (q < -32767 ? -32767 : q));
    }
}

/* atm_ek_ssm_ref for -1 <= sb <= 31: a s rounded to Q(FS) from the 64-bit
 * product's words (|a s| < 2^45, so the quotient fits int32), plus
 * atm_ek_ssm_i32's 32-bit b c u term and wrap-aware clamp */
#if (defined(__ARM_ARCH_7M__) || defined(__ARM_ARCH_7EM__)) && defined(ATM_M3_ASM)
void atm_ek_ssm_m3s(int32_t *s, const uint8_t *a, const uint8_t *bc, const int16_t *u, int d, int sb);   /* engine_m3.S */
#endif
void atm_ek_ssm_m3(int32_t *s, const uint8_t *a, const uint8_t *bc, const int16_t *u, int d, int sb) {
    if (sb < -1 || sb > 31) { atm_ek_ssm_ref(s, a, bc, u, d, sb); return; }
#if (defined(__ARM_ARCH_7M__) || defined(__ARM_ARCH_7EM__)) && defined(ATM_M3_ASM)
    if (d >= 1) atm_ek_ssm_m3s(s, a, bc, u, d, sb);   /* the same loop in Thumb-2 */
    return;
#endif
    /* b c u / 2^sb rounded as (b c u 2^(1 - sh) + 2^(sb' - 1)) >> sb' with
     * one loop body: sb >= 1 shifts by sb after adding 2^(sb-1); sb = 0
     * and -1 shift left by 0 or 1 first and add nothing */
    const int rs = sb >= 1 ? sb : 0, ls = sb >= 1 ? 0 : -sb;
    const int32_t hb = sb >= 1 ? (int32_t)1 << (sb - 1) : 0;
    for (int c = 0; c < d; c++) {
        const uint64_t p = (uint64_t)((int64_t)atm_rd_i16le(a + 2 * c) * s[c] + (1 << 14));
        const int32_t t1 = (int32_t)(((uint32_t)p >> 15) | ((uint32_t)(p >> 32) << 17));   /* |.| <= 2^30 + 2^16 */
        const int32_t pb = atm_rd_i16le(bc + 2 * c) * u[c];                                /* |.| <= 2^30 */
        const int32_t t2 = atm_asr32((int32_t)((uint32_t)pb << ls) + hb, rs);
        const int32_t v = (int32_t)((uint32_t)t1 + (uint32_t)t2);
        s[c] = ((t1 ^ v) & (t2 ^ v)) < 0 ? (t2 < 0 ? -X_LIM : X_LIM) : (v > X_LIM ? X_LIM : (v < -X_LIM ? -X_LIM : v));
    }
}

/* atm_ek_scores_ref: shifts 32 .. 62 from the product's high word (|p| <
 * 2^61, so |hi| < 2^29 and the rounded quotient needs no clamp; the half
 * added to hi is exact as in ln_out), the others through atm_rnd64. The M0
 * set runs it too (atm_smull: no libgcc 64 x 64 multiply). */
#if (defined(__ARM_ARCH_7M__) || defined(__ARM_ARCH_7EM__)) && defined(ATM_M3_ASM)
/* engine_m3.S: the keys with 32 <= sh <= 62, up to the first other one */
int atm_ek_scores_m3s(const int32_t *dots, const uint8_t *kexp, int n, int32_t m, int sbase, int32_t *out);
#elif defined(__ARM_ARCH_6M__) && defined(ATM_M0_ASM)
/* engine_m0.S: the same for |dot| < 2^26, from 16-bit halves */
int atm_ek_scores16_m0(const int32_t *dots, const uint8_t *kexp, int n, int32_t m, int sbase, int32_t *out);
#endif
void atm_ek_scores_m3(const int32_t *dots, const uint8_t *kexp, int n, int64_t ms, int sbase, int32_t *out) {
    const int32_t m = (int32_t)ms;                                           /* 0 <= ms < 2^30 */
#if (defined(__ARM_ARCH_7M__) || defined(__ARM_ARCH_7EM__)) && defined(ATM_M3_ASM)
    const int done = atm_ek_scores_m3s(dots, kexp, n, m, sbase, out);
    dots += done; kexp += done; out += done; n -= done;
#elif defined(__ARM_ARCH_6M__) && defined(ATM_M0_ASM)
    const int done = atm_ek_scores16_m0(dots, kexp, n, m, sbase, out);
    dots += done; kexp += done; out += done; n -= done;
#endif
    for (int j = 0; j < n; j++) {
        const int sh = sbase - kexp[j];
        const int64_t p = atm_smull(dots[j], m);           /* the M0's 16-bit halves, one SMULL elsewhere */
        const int32_t hi = (int32_t)((uint64_t)p >> 32);
        if (sh >= 33 && sh <= 62) out[j] = (hi + ((int32_t)1 << (sh - 33))) >> (sh - 32);
        else if (sh == 32) out[j] = hi + (int32_t)((uint32_t)p >> 31);
        else out[j] = atm_clamp32(atm_rnd64(p, sh), X_LIM);
    }
}

/* The conv taps: engine_m3.S's channel loop for K = 5 with all five taps
 * (the shipped models once four positions are in the ring), the M0 set's C
 * otherwise and off the board */
#if (defined(__ARM_ARCH_7M__) || defined(__ARM_ARCH_7EM__)) && defined(ATM_M3_ASM)
void atm_ek_conv5_m3(const int8_t *t, int nc, const int16_t *u, const int8_t *const *rp, const int32_t *e, int32_t *acc);
#endif
void atm_ek_conv_m3(const int8_t *t, int K, int nc, const int16_t *u, const int8_t *ring, int ld,
                    const uint8_t *rexp, int next, int kh, int taps, int32_t *acc) {
#if (defined(__ARM_ARCH_7M__) || defined(__ARM_ARCH_7EM__)) && defined(ATM_M3_ASM)
    if (K == 5 && taps == 5 && kh == 4 && nc >= 1) {
        const int8_t *rp[4];
        int32_t e[4];
        atm_ek_conv_rows4(ring, ld, rexp, next, rp, e);
        atm_ek_conv5_m3(t, nc, u, rp, e, acc);
        return;
    }
#endif
    atm_ek_conv_m0(t, K, nc, u, ring, ld, rexp, next, kh, taps, acc);
}
