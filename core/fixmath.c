/* core/fixmath.c — integer exp, reciprocal square root and softmax of the
 * engine. Contract and error bounds in fixmath.h; derivations in
 * docs/fixed-point.md. Freestanding, integer only. */
#include "fixmath.h"

/* Taylor coefficients of 2^g = e^(g ln 2): round((ln 2)^k / k! * 2^30),
 * k = 0..7. Degree 7 on |g| <= 1/2 leaves a truncation error below
 * (ln2/2)^8 / 8! = 5e-9, under the Q30 rounding of the steps. */
const int32_t atm_exp2_c[8] = {
    1073741824, 744261118, 257941248, 59597083, 10327387, 1431680, 165394, 16377
};

uint32_t atm_exp_q16(int32_t x) {
    if (x >= 0) return 1u << 24;
    /* y = x * log2(e) in Q46 exactly (|y| < 2^62): n = floor(y), the
     * fraction is kept to Q30 (floor). Every product below is 32 x 32 bits
     * (atm_smull: the Cortex-M0 builds it from 16-bit halves instead of a
     * 64 x 64 libgcc multiply) and every shift a constant. */
    const int64_t y = atm_smull(x, ATM_LOG2E_Q30);
    const int64_t n = atm_asr64(y, 46);            /* integer part, <= -1 */
    if (n < -26) return 0;
    /* g = f - 1/2 in Q30, f = y - n 2^46 (in [0, 2^46)) >> 16: [-2^29, 2^29) */
    const int32_t g = (int32_t)((uint64_t)y >> 16 & 0x3FFFFFFFu) - (1 << 29);
    /* Horner: |p| < 2^31 at every step (2^g in [2^-1/2, 2^1/2] in Q30) */
    int32_t p = atm_exp2_c[7];
    for (int k = 6; k >= 0; k--) p = (int32_t)atm_asr64(atm_smull(p, g) + ((int64_t)1 << 29), 30) + atm_exp2_c[k];
    /* 2^f = sqrt(2) * 2^g in Q30, in [2^30, 2^31] */
    const int64_t v = atm_asr64(atm_smull(p, ATM_SQRT2_Q30) + ((int64_t)1 << 29), 30);
    /* Q30 -> Q24 and times 2^n */
    return (uint32_t)atm_rnd64(v, 6 - (int)n);
}

/* Initial guesses 1/sqrt((i + 1/2) / 4) in Q30 for the interval
 * w in [i/4, (i+1)/4), i = 4..15 (w = m / 2^30 in [1, 4)). */
static const uint32_t RSQRT_SEED[12] = {
    1012333500u, 915690104u, 842312387u, 784150157u, 736580814u, 696735698u,
    662727842u, 633258380u, 607400100u, 584471019u, 563956835u, 545461392u
};

uint32_t atm_rsqrt64(uint64_t v, int *sh) {
    if (v == 0) v = 1;
    int s = atm_bitlen64(v) - 32;                  /* m = v / 2^s has 32 bits */
    if (s & 1) s += 1;                             /* even: m in [2^30, 2^32) */
    uint64_t m = s >= 0 ? v >> s : v << (-s);
    /* y ~= 1 / sqrt(m / 2^30) in Q30, in (2^29, 2^30]; three Newton steps
     * y <- y (3 - w y^2) / 2 take the <= 6% seed error to below 2^-28. */
    int64_t y = RSQRT_SEED[(m >> 28) - 4];
    for (int it = 0; it < 3; it++) {
        /* every factor is below 2^32 and not negative (the seeds' error
         * bounds wy2 near 2^30), so the products are 32 x 32 -> 64-bit
         * unsigned ones (atm_umull: no libgcc multiply on the M0); the
         * general expressions stay for any other case */
        if (y >= 0 && y < ((int64_t)1 << 32)) {
            const uint64_t y2 = (atm_umull((uint32_t)y, (uint32_t)y) + ((uint64_t)1 << 29)) >> 30;
            if (y2 < ((uint64_t)1 << 32)) {
                const int64_t wy2 = (int64_t)((atm_umull((uint32_t)m, (uint32_t)y2) + ((uint64_t)1 << 29)) >> 30);
                const int64_t t = ((int64_t)3 << 30) - wy2;
                if (t >= 0 && t < ((int64_t)1 << 32)) {
                    y = (int64_t)((atm_umull((uint32_t)y, (uint32_t)t) + ((uint64_t)1 << 30)) >> 31);
                    continue;
                }
            }
        }
        int64_t y2 = atm_rnd64(y * y, 30);                         /* <= 2^30 */
        int64_t wy2 = atm_rnd64((int64_t)m * y2, 30);              /* < 2^32 */
        int64_t t = ((int64_t)3 << 30) - wy2;
        y = atm_rnd64(y * t, 31);
    }
    if (y > (1 << 30)) y = 1 << 30;
    if (y < (1 << 29)) y = 1 << 29;
    /* 1/sqrt(v) = 1/sqrt(m) * 2^(-s/2) = y * 2^-30 * 2^-15 * 2^(-s/2) */
    *sh = 45 + s / 2;
    return (uint32_t)y;
}

void atm_softmax_q15(const int32_t *z, int n, int32_t *p) {
    int32_t mx = z[0];
    for (int i = 1; i < n; i++) if (z[i] > mx) mx = z[i];
    /* e[i] are recomputed below instead of stored: n is tiny (router 3,
     * attention top-k) and p may alias z. */
    uint64_t sum = 0;
    for (int i = 0; i < n; i++) sum += atm_exp_q16(atm_sat32((int64_t)z[i] - mx));
    /* sum >= 2^24 (the max term is exactly 2^24); normalise to [2^15, 2^16) */
    int ns = atm_bitlen64(sum) - 16;
    uint32_t r = 0x7FFFFFFFu / (uint32_t)(sum >> ns);   /* (2^15, 2^16] */
    for (int i = 0; i < n; i++) {
        uint64_t ei = atm_exp_q16(atm_sat32((int64_t)z[i] - mx));
        p[i] = (int32_t)((ei * r) >> (16 + ns));
    }
}
