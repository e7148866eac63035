/* core/engine_m0.c — kernels for targets without a 32 x 32 -> 64-bit
 * multiply (the Cortex-M0 / M0+ kernel set, engine.c): the same integers as
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
 * the boards run them (the M0 kernel set in engine.c). */

/* atm_ek_ln_out_ref for 17 <= sg <= 46 (beyond 46 every product rounds to
 * 0: |u gr| < 2^45) and sb >= -14 (|beta| <= 2^29, so the sum fits int32) */
void atm_ek_ln_out_i32(int16_t *u, const uint8_t *g, const uint8_t *b, int d, int32_t r15, int sg, int sb) {
    if (sg < 17 || sg > 46 || sb < -14) { atm_ek_ln_out_ref(u, g, b, d, r15, sg, sb); return; }
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

#define SSM_T2_LIM ((1 << 30) + (1 << 17))
/* atm_ek_ssm_ref for -1 <= sb <= 31 */
void atm_ek_ssm_i32(int32_t *s, const uint8_t *a, const uint8_t *bc, const int16_t *u, int d, int sb) {
    if (sb < -1 || sb > 31) { atm_ek_ssm_ref(s, a, bc, u, d, sb); return; }
    const int32_t hb = sb >= 1 ? (int32_t)1 << (sb - 1) : 0;
    for (int c = 0; c < d; c++) {
        const int32_t ac = atm_rd_i16le(a + 2 * c), sc = s[c];
        /* (a s + 2^14) >> 15 = 2 (a sh) + ((a sl + 2^14) >> 15), sc = 2^16 sh + sl */
        const int32_t A = ac * (sc >> 16);                           /* |.| <= 2^29 */
        const int32_t B = ac * (int32_t)((uint32_t)sc & 0xFFFFu);    /* + 2^14 < 2^31 */
        const int32_t t1 = 2 * A + atm_asr32(B + (1 << 14), 15);
        const int32_t p = atm_rd_i16le(bc + 2 * c) * u[c];            /* |.| <= 2^30 */
        int32_t t2 = sb >= 1 ? atm_asr32(p + hb, sb) : (sb == 0 ? p : 2 * p);
        /* |t1| <= 2^30 + 2^16: a |t2| beyond 2^30 + 2^17 saturates the sum
         * whatever its exact value, so it may be cut there and the sum fits */
        t2 = t2 > SSM_T2_LIM ? SSM_T2_LIM : (t2 < -SSM_T2_LIM ? -SSM_T2_LIM : t2);
        const int32_t v = t1 + t2;
        s[c] = v > X_LIM ? X_LIM : (v < -X_LIM ? -X_LIM : v);
    }
}
