/* tests/test_fixmath.c — the engine's integer helpers (core/fixmath.h)
 * against libm / long double references, with the error bounds the header
 * states. libm is used only here, never in the engine. */
#include "check.h"
#include "core/fixmath.h"
#include "core/rng.h"
#include <stdint.h>

static long double floor_div_ref(int64_t v, int s) { return floorl((long double)v / ldexpl(1.0L, s)); }

static void test_shifts(atm_rng *r) {
    for (int i = 0; i < 20000; i++) {
        int64_t v = (int64_t)(((uint64_t)atm_rng_u32(r) << 32) | atm_rng_u32(r)) >> (atm_rng_u32(r) % 40);
        int s = (int)(atm_rng_u32(r) % 63);
        CHECK((long double)atm_asr64(v, s) == floor_div_ref(v, s));
        int32_t v32 = (int32_t)atm_rng_u32(r);
        int s32 = (int)(atm_rng_u32(r) % 32);
        CHECK((long double)atm_asr32(v32, s32) == floor_div_ref(v32, s32));
        /* atm_rnd64: floor(v / 2^s + 1/2) for |v| <= 2^62 */
        int64_t w = v / 4;
        int sr = 1 + (int)(atm_rng_u32(r) % 62);
        long double ref = floorl((long double)w / ldexpl(1.0L, sr) + 0.5L);
        CHECK((long double)atm_rnd64(w, sr) == ref);
    }
    /* left shifts saturate symmetrically */
    CHECK(atm_rnd64(3, -2) == 12);
    CHECK(atm_rnd64(-3, -2) == -12);
    CHECK(atm_rnd64((int64_t)1 << 40, -30) == ATM_RND_LIM);
    CHECK(atm_rnd64(-((int64_t)1 << 40), -30) == -ATM_RND_LIM);
    CHECK(atm_rnd64(5, -70) == ATM_RND_LIM && atm_rnd64(0, -70) == 0);
    CHECK(atm_rnd64(-5, 1) == -2 && atm_rnd64(-6, 2) == -1 && atm_rnd64(6, 2) == 2 && atm_rnd64(123, 63) == 0);
    CHECK(atm_sat16(40000) == 32767 && atm_sat16(-40000) == -32767);
    CHECK(atm_sat32((int64_t)1 << 40) == INT32_MAX && atm_sat32(-((int64_t)1 << 40)) == -INT32_MAX);
    for (uint32_t v = 0; v < 70000; v += 7) CHECK(atm_bitlen32(v) == (v ? (int)floor(log2((double)v)) + 1 : 0));
    CHECK(atm_bitlen32(0xFFFFFFFFu) == 32 && atm_bitlen64((uint64_t)1 << 63) == 64);
    /* fit_shift: smallest s with round(max / 2^s) <= lim */
    for (uint32_t m = 0; m < 300000; m += 13) {
        int s = atm_fit_shift(m, 127);
        CHECK(((m + ((1u << s) >> 1)) >> s) <= 127u);
        if (s > 0) CHECK(((m + ((1u << (s - 1)) >> 1)) >> (s - 1)) > 127u);
    }
}

/* exp: |got - 2^24 e^(x/2^16)| <= 1 (fixmath.h) */
static void test_exp(void) {
    double worst_abs = 0.0, worst_rel = 0.0;
    for (int64_t x = 0; x >= -((int64_t)20 << 16); x -= 3) {
        double ref = ldexp(exp((double)x / 65536.0), 24);
        double got = atm_exp_q16((int32_t)x);
        double err = fabs(got - ref);
        CHECKF(err <= 1.0, "x=%lld got %.0f ref %.3f", (long long)x, got, ref);
        if (err > worst_abs) worst_abs = err;
        if (ref > 1000.0 && err / ref > worst_rel) worst_rel = err / ref;
    }
    CHECK(atm_exp_q16(0) == (1u << 24));
    CHECK(atm_exp_q16(12345) == (1u << 24));
    CHECK(atm_exp_q16(INT32_MIN) == 0);
    CHECK(atm_exp_q16(-(30 << 16)) == 0);
    /* monotone non-increasing as x decreases */
    uint32_t prev = atm_exp_q16(0);
    for (int32_t x = -1; x > -(18 << 16); x -= 1) {
        uint32_t v = atm_exp_q16(x);
        CHECKF(v <= prev, "exp not monotone at %d", (int)x);
        prev = v;
        if (v > prev) break;
    }
    printf("exp: worst abs error %.2f (Q24 units), worst rel error %.3g\n", worst_abs, worst_rel);
}

static void test_rsqrt(atm_rng *r) {
    double worst = 0.0;
    for (int i = 0; i < 200000; i++) {
        uint64_t v;
        if (i < 1000) v = (uint64_t)i + 1;
        else v = (((uint64_t)atm_rng_u32(r) << 32) | atm_rng_u32(r)) >> (atm_rng_u32(r) % 64);
        if (v == 0) v = 1;
        int sh;
        uint32_t y = atm_rsqrt64(v, &sh);
        CHECK(y >= (1u << 29) && y <= (1u << 30));
        CHECK(sh >= 30 && sh <= 77);
        long double got = ldexpl((long double)y, -sh);
        long double ref = 1.0L / sqrtl((long double)v);
        double rel = (double)fabsl(got / ref - 1.0L);
        if (rel > worst) worst = rel;
        CHECKF(rel < ldexp(1.0, -27), "v=%llu rel %.3g", (unsigned long long)v, rel);
    }
    printf("rsqrt: worst rel error %.3g\n", worst);
}

/* softmax: p within 2 of 2^15 softmax; sum <= 2^15 */
static void test_softmax(atm_rng *r) {
    int32_t z[64], p[64];
    for (int it = 0; it < 5000; it++) {
        int n = 1 + (int)(atm_rng_u32(r) % 64);
        int spread = 1 + (int)(atm_rng_u32(r) % (40 << 16));
        for (int i = 0; i < n; i++) z[i] = (int32_t)(atm_rng_u32(r) % (uint32_t)spread) - spread / 2;
        if (it % 7 == 0) z[n - 1] = z[0];       /* ties */
        double mx = z[0], s = 0.0;
        for (int i = 1; i < n; i++) if (z[i] > mx) mx = z[i];
        for (int i = 0; i < n; i++) s += exp((z[i] - mx) / 65536.0);
        int32_t zc[64];
        for (int i = 0; i < n; i++) zc[i] = z[i];
        atm_softmax_q15(z, n, p);
        int64_t sum = 0;
        for (int i = 0; i < n; i++) {
            double ref = 32768.0 * exp((zc[i] - mx) / 65536.0) / s;
            CHECKF(fabs(p[i] - ref) <= 2.0, "n=%d p=%d ref=%.3f", n, (int)p[i], ref);
            sum += p[i];
        }
        CHECK(sum <= 32768 && sum >= 32768 - 2 * n);
        /* in place gives the same */
        atm_softmax_q15(zc, n, zc);
        for (int i = 0; i < n; i++) CHECK(zc[i] == p[i]);
    }
}

/* atm_smull_halves (the Cortex-M0's 32 x 32 -> 64 product) equals the
 * plain 64-bit product: the extremes of int32 against each other and
 * random pairs of every magnitude. */
static void test_smull(atm_rng *r) {
    static const int32_t ex[] = { 0, 1, -1, 2, -2, 32767, -32768, 32768, -32769, 65535, 65536, -65536,
                                  -65537, 0x7FFF0000, (int32_t)0x80000001u, INT32_MAX, -INT32_MAX, INT32_MIN };
    const int ne = (int)(sizeof ex / sizeof ex[0]);
    int bad = 0, cases = 0;
    for (int i = 0; i < ne; i++)
        for (int j = 0; j < ne; j++, cases++) bad += atm_smull_halves(ex[i], ex[j]) != (int64_t)ex[i] * ex[j];
    for (int k = 0; k < 1000000; k++, cases++) {
        const int32_t a = (int32_t)(atm_rng_u32(r) >> (atm_rng_u32(r) % 32u)) * ((k & 1) ? -1 : 1);
        const int32_t b = (int32_t)(atm_rng_u32(r) >> (atm_rng_u32(r) % 32u)) * ((k & 2) ? -1 : 1);
        bad += atm_smull_halves(a, b) != (int64_t)a * b;
        bad += atm_smull(a, b) != (int64_t)a * b;
    }
    CHECKF(bad == 0, "atm_smull_halves differs from the 64-bit product in %d of %d cases", bad, cases);
    /* the unsigned one (atm_rsqrt64's products on the M0) */
    int ubad = 0;
    for (int i = 0; i < ne; i++)
        for (int j = 0; j < ne; j++) ubad += atm_umull_halves((uint32_t)ex[i], (uint32_t)ex[j]) != (uint64_t)(uint32_t)ex[i] * (uint32_t)ex[j];
    for (int k = 0; k < 1000000; k++) {
        const uint32_t a = atm_rng_u32(r) >> (atm_rng_u32(r) % 32u), b = atm_rng_u32(r) >> (atm_rng_u32(r) % 32u);
        ubad += atm_umull_halves(a, b) != (uint64_t)a * b || atm_umull(a, b) != (uint64_t)a * b;
    }
    CHECKF(ubad == 0, "atm_umull_halves differs from the 64-bit product in %d cases", ubad);
}

int main(void) {
    atm_rng r;
    atm_rng_seed(&r, 1234);
    test_shifts(&r);
    test_exp();
    test_rsqrt(&r);
    test_softmax(&r);
    test_smull(&r);
    return CHECK_DONE();
}
