/* core/fixmath.h — integer helpers of the inference engine (freestanding C99:
 * no malloc, no stdio, no libm, no float or double anywhere).
 *
 * Contract. Every function is a pure function of its integer arguments and
 * uses only operations whose result C99 fully defines (no signed overflow, no
 * right shift of a negative value, no shift by >= the width), so the same
 * inputs give the same bits on x86-64, wasm32, Cortex-M0 and Cortex-M3.
 * Notation: "Qn" means value = integer / 2^n.
 *
 * Rounding rules (docs/fixed-point.md):
 *  - atm_asr32/64(v, s)   : floor(v / 2^s)                (arithmetic shift)
 *  - atm_rnd64(v, s)      : floor(v / 2^s + 1/2)          (round half up),
 *                           s <= 0 means v * 2^-s saturated to +-ATM_RND_LIM
 *  - atm_sat16/32         : clamp to [-32767, 32767] / [-(2^31-1), 2^31-1]
 *  - atm_exp_q16          : see below (absolute error bound stated there)
 *  - atm_rsqrt64          : relative error below 2^-27
 * Saturation is symmetric (the most negative two's-complement value is never
 * produced), so negating a saturated value is always defined. */
#ifndef ATOME_FIXMATH_H
#define ATOME_FIXMATH_H
#include <stdint.h>

/* floor(v / 2^s) for 0 <= s <= 31 / 63. C99 leaves >> of a negative value
 * implementation-defined (not undefined); GCC and clang (hence Emscripten)
 * define it as the arithmetic shift on every target we build for, and the
 * typedef below refuses to compile where -1 >> 1 is not -1. */
typedef char atm_arithmetic_shift_check[(-1 >> 1) == -1 && ((int64_t)-5 >> 1) == -3 ? 1 : -1];
static inline int32_t atm_asr32(int32_t v, int s) { return v >> s; }
static inline int64_t atm_asr64(int64_t v, int s) { return v >> s; }

/* (int64_t)a * b exactly, from four 16 x 16-bit products (a = 2^16 ah + al
 * with ah signed, al unsigned 16-bit; every partial product and sum fits its
 * type): the Cortex-M0 has no 32 x 32 -> 64 multiply and libgcc's 64 x 64
 * __aeabi_lmul costs several times this. atm_smull uses it on the M0 and
 * the plain product elsewhere; tests/test_fixmath.c compares the two. */
static inline int64_t atm_smull_halves(int32_t a, int32_t b) {
    const int32_t ah = a >> 16, bh = b >> 16;
    const int32_t al = (int32_t)((uint32_t)a & 0xFFFFu), bl = (int32_t)((uint32_t)b & 0xFFFFu);
    const int64_t mid = (int64_t)(ah * bl) + (int64_t)(al * bh);     /* |each| < 2^31 */
    return (int64_t)(ah * bh) * 65536 * 65536 + mid * 65536 + (int64_t)((uint32_t)al * (uint32_t)bl);
}

/* (uint64_t)a * b exactly; on the Cortex-M0 from four 16 x 16-bit
 * products (every partial sum fits its type) instead of libgcc's 64 x 64
 * __aeabi_lmul. tests/test_fixmath.c compares the halves with the product. */
static inline uint64_t atm_umull_halves(uint32_t a, uint32_t b) {
    const uint32_t ah = a >> 16, al = a & 0xFFFFu, bh = b >> 16, bl = b & 0xFFFFu;
    const uint32_t m1 = ah * bl, t = m1 + al * bh, lo = al * bl, lo2 = lo + (t << 16);
    const uint32_t hi = ah * bh + (t >> 16) + ((uint32_t)(t < m1) << 16) + (uint32_t)(lo2 < lo);
    return (uint64_t)hi << 32 | lo2;
}

/* The product atm_smull (s) and atm_umull (u) use, of type T: on the
 * Cortex-M0 the Thumb-1 assembly of core/engine_m0.S (the same products)
 * or, without it, the halves above; elsewhere the plain product. */
#if defined(__ARM_ARCH_6M__) && defined(ATM_M0_ASM)
int64_t atm_smull_m0(int32_t a, int32_t b);
uint64_t atm_umull_m0(uint32_t a, uint32_t b);
#define ATM_MULL64(s, T, a, b) atm_##s##mull_m0(a, b)
#elif defined(__ARM_ARCH_6M__)
#define ATM_MULL64(s, T, a, b) atm_##s##mull_halves(a, b)
#else
#define ATM_MULL64(s, T, a, b) ((T)(a) * (b))
#endif
static inline int64_t atm_smull(int32_t a, int32_t b) { return ATM_MULL64(s, int64_t, a, b); }
static inline uint64_t atm_umull(uint32_t a, uint32_t b) { return ATM_MULL64(u, uint64_t, a, b); }

/* Saturation bound of atm_rnd64 for left shifts: 2^62 leaves one bit of
 * headroom so callers may add two results without overflow. */
#define ATM_RND_LIM ((int64_t)1 << 62)

/* v / 2^s rounded half up for s >= 1 (|v| <= 2^62 required, always true for
 * the engine's products), v unchanged for s == 0, v * 2^-s saturated to
 * +-ATM_RND_LIM for s < 0. s >= 63 gives 0 (every |v| <= 2^62 rounds to 0). */
static inline int64_t atm_rnd64(int64_t v, int s) {
    if (s > 0) {
        if (s >= 63) return 0;
        return atm_asr64(v + ((int64_t)1 << (s - 1)), s);
    }
    if (s == 0) return v;
    if (s <= -62) return v > 0 ? ATM_RND_LIM : (v < 0 ? -ATM_RND_LIM : 0);
    {
        int64_t lim = ATM_RND_LIM >> (-s);
        if (v > lim) return ATM_RND_LIM;
        if (v < -lim) return -ATM_RND_LIM;
        return v * ((int64_t)1 << (-s));
    }
}

static inline int32_t atm_sat32(int64_t v) {
    return v > INT32_MAX ? INT32_MAX : (v < -INT32_MAX ? -INT32_MAX : (int32_t)v);
}
static inline int16_t atm_sat16(int64_t v) {
    return (int16_t)(v > 32767 ? 32767 : (v < -32767 ? -32767 : v));
}
static inline int32_t atm_clamp32(int64_t v, int32_t lim) {
    return v > lim ? lim : (v < -(int64_t)lim ? -lim : (int32_t)v);
}

/* Number of significant bits of v (0 for 0, 32 for >= 2^31). */
static inline int atm_bitlen32(uint32_t v) {
    int n = 0;
    if (v >= 0x10000u) { v >>= 16; n += 16; }
    if (v >= 0x100u) { v >>= 8; n += 8; }
    if (v >= 0x10u) { v >>= 4; n += 4; }
    if (v >= 0x4u) { v >>= 2; n += 2; }
    if (v >= 0x2u) { v >>= 1; n += 1; }
    return n + (int)v;
}
static inline int atm_bitlen64(uint64_t v) {
    return (v >> 32) ? 32 + atm_bitlen32((uint32_t)(v >> 32)) : atm_bitlen32((uint32_t)v);
}
static inline uint32_t atm_abs32(int32_t v) { return v < 0 ? 0u - (uint32_t)v : (uint32_t)v; }

/* Smallest s >= 0 such that |v| / 2^s, rounded half up, lies in [-lim, lim]
 * for every v with |v| <= maxabs (lim >= 1). Used to choose the per-row
 * exponent of the 8-bit caches (lim 127) and of q (lim 32767). */
static inline int atm_fit_shift(uint32_t maxabs, uint32_t lim) {
    int s = 0;
    while (s < 31 && ((maxabs + ((1u << s) >> 1)) >> s) > lim) s++;
    return s;
}

/* ---- exp ----
 * e^(x / 2^16) for x <= 0 as a Q24 integer (x > 0 is treated as 0, giving
 * 2^24). Method: y = x * log2(e) exactly in Q46, y = n + f with integer
 * n <= -1 and f in [0, 1) kept to Q30; 2^f = sqrt(2) * 2^(f - 1/2) with a
 * degree-7 Taylor polynomial of 2^g, g in [-1/2, 1/2), evaluated in Q30 with
 * round-half-up steps; then shifted by n (rounded). The result is 0 once the
 * true value is below 2^-27 of 2^24 (n < -26).
 * Error (tests/test_fixmath.c, every 3rd input in [-20, 0] against libm):
 * |result - 2^24 * e^(x/2^16)| <= 1 (measured worst 0.55). */
uint32_t atm_exp_q16(int32_t x);
/* its constants, for the kernels that compute the same integers
 * (core/engine_m0.c, core/engine_x86.c): round(log2(e) 2^30), round(sqrt(2)
 * 2^30) and the Taylor coefficients of 2^g in Q30 (fixmath.c) */
#define ATM_LOG2E_Q30 1549082005
#define ATM_SQRT2_Q30 1518500250
extern const int32_t atm_exp2_c[8];

/* ---- reciprocal square root ----
 * For v >= 1 returns r in [2^29, 2^30] and *sh with 1 / sqrt(v) ~= r * 2^-sh
 * (30 <= *sh <= 77). Relative error below 2^-27. v = 0 is treated as 1. */
uint32_t atm_rsqrt64(uint64_t v, int *sh);

/* ---- softmax ----
 * p[i] ~= 2^15 * exp(z[i] / 2^16) / sum_j exp(z[j] / 2^16), z in Q16, n >= 1
 * (n <= 2^15). Max-subtracted; each exp is atm_exp_q16 (Q24), the sum is
 * exact in 64 bits, and p[i] = floor(e[i] * R / 2^31) with the 16-bit
 * normalised reciprocal R of the sum (one 32-bit division per call). The
 * p[i] sum to at most 2^15. p may alias z. */
void atm_softmax_q15(const int32_t *z, int n, int32_t *p);

#endif
