/* tests/test_sampler.c — setting parser rules, determinism, greedy ties,
 * one PRNG draw per sample, and the sampled distributions (temperature,
 * top-k, top-p) against the exact float probabilities.
 * Frequency tolerance: 50,000 draws give a binomial standard deviation of
 * at most 0.0023 for any probability; we allow 0.01 (> 4 sigma), which the
 * Q24 weights (relative error ~1e-7) cannot come close to using up; the
 * fixed seeds make the run reproducible, so this is not a flaky test. */
#include "check.h"
#include "core/sampler.h"
#include <string.h>

static void test_parse(void) {
    int32_t v = -7;
    static const struct { const char *s; int32_t q; } ok[] = {
        { "0.8", 52429 }, { "1", 65536 }, { "0", 0 }, { ".5", 32768 }, { "1.", 65536 },
        { "0.00001", 1 }, { "0.000007", 0 }, { "0.0000076", 0 }, { "0.00000763", 1 },
        { "100", 100 << 16 }, { "007.25", 475136 }, { "0.123456789", 8091 }, { "2.5", 163840 },
        { "0.0000152587890625", -1 },
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        int32_t out = -7;
        int rc = atm_sampler_parse(ok[i].s, ATM_SAMPLER_T_MAX, &out);
        if (ok[i].q < 0) { CHECKF(rc == -1, "'%s' should be rejected (10+ fraction digits)", ok[i].s); continue; }
        CHECKF(rc == 0 && out == ok[i].q, "'%s' -> rc %d value %d, expected %d", ok[i].s, rc, (int)out, (int)ok[i].q);
        /* rounding rule: value = round_half_up(decimal * 65536), checked in long double */
        long double ref = floorl(strtold(ok[i].s, NULL) * 65536.0L + 0.5L);
        CHECKF((long double)out == ref, "'%s': %d vs %.1Lf", ok[i].s, (int)out, ref);
    }
    static const char *const bad[] = {
        "", ".", "-1", "+1", "1e3", " 1", "1 ", "0x1", "1.2.3", "nan", "inf", "0.1234567891",
        "32768", "100.00001", "1,5", "abc", "..5", "5..", "\t1",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        v = -7;
        CHECKF(atm_sampler_parse(bad[i], ATM_SAMPLER_T_MAX, &v) == -1 && v == -7, "'%s' accepted", bad[i]);
    }
    CHECK(atm_sampler_parse(NULL, 65536, &v) == -1);
    CHECK(atm_sampler_parse("1", 65536, &v) == 0 && v == 65536);
    CHECK(atm_sampler_parse("1.00001", 65536, &v) == -1);
    CHECK(atm_sampler_parse("0.999999", 65536, &v) == 0 && v == 65536);   /* rounds to 1 */
    uint32_t u;
    CHECK(atm_sampler_parse_uint("4294967295", 0xFFFFFFFFu, &u) == 0 && u == 0xFFFFFFFFu);
    CHECK(atm_sampler_parse_uint("4294967296", 0xFFFFFFFFu, &u) == -1);
    CHECK(atm_sampler_parse_uint("40", 256, &u) == 0 && u == 40);
    CHECK(atm_sampler_parse_uint("-1", 256, &u) == -1 && atm_sampler_parse_uint("", 256, &u) == -1);
    CHECK(atm_sampler_parse_uint("1.0", 256, &u) == -1 && atm_sampler_parse_uint("257", 256, &u) == -1);
    atm_sampler_cfg c;
    CHECK(atm_sampler_config(&c, "0.8", "40", "0.95") == 0);
    CHECK(c.temperature == 52429 && c.top_k == 40 && c.top_p == 62259);
    CHECK(atm_sampler_config(&c, NULL, NULL, NULL) == 0 && c.temperature == 0 && c.top_k == 0 && c.top_p == 65536);
    CHECK(atm_sampler_config(&c, "101", NULL, NULL) == -1);
    CHECK(atm_sampler_config(&c, "1", NULL, "1.5") == -1);
    CHECK(atm_sampler_config(&c, "1", "x", NULL) == -1);
}

/* logits (Q16) of p = 0.1, 0.2, 0.3, 0.4 on bytes 7, 3, 200, 50; the rest at -40 */
static void set_logits(int32_t *l) {
    for (int i = 0; i < 256; i++) l[i] = -(40 << 16);
    l[7] = (int32_t)lrint(log(0.1) * 65536.0);
    l[3] = (int32_t)lrint(log(0.2) * 65536.0);
    l[200] = (int32_t)lrint(log(0.3) * 65536.0);
    l[50] = (int32_t)lrint(log(0.4) * 65536.0);
}

static void freq(const atm_sampler_cfg *c, const int32_t *l, int n, double *f, uint32_t seed) {
    atm_rng r;
    atm_rng_seed(&r, seed);
    uint8_t scratch[256];
    for (int i = 0; i < 256; i++) f[i] = 0.0;
    for (int k = 0; k < n; k++) f[atm_sampler_next(c, l, 256, &r, scratch)] += 1.0 / n;
}

static void expect(const double *f, const int *bytes, const double *p, int m, const char *what) {
    double rest = 1.0;
    for (int i = 0; i < m; i++) {
        CHECKF(fabs(f[bytes[i]] - p[i]) < 0.01, "%s: byte %d freq %.4f expected %.4f", what, bytes[i], f[bytes[i]], p[i]);
        rest -= f[bytes[i]];
    }
    CHECKF(rest < 1e-9, "%s: mass %.6f on other bytes", what, rest);
}

static void test_distributions(void) {
    int32_t l[256];
    set_logits(l);
    double f[256];
    const int N = 50000;
    const int b4[4] = { 7, 3, 200, 50 };
    atm_sampler_cfg c;
    atm_sampler_default(&c);
    c.temperature = 65536;
    freq(&c, l, N, f, 1);
    expect(f, b4, (const double[]){ 0.1, 0.2, 0.3, 0.4 }, 4, "T=1");
    /* T = 0.5: p^2 normalised */
    c.temperature = 32768;
    freq(&c, l, N, f, 2);
    expect(f, b4, (const double[]){ 0.01 / 0.3, 0.04 / 0.3, 0.09 / 0.3, 0.16 / 0.3 }, 4, "T=0.5");
    /* top-k 2 keeps bytes 50 and 200 in ratio 4:3 */
    c.temperature = 65536; c.top_k = 2;
    freq(&c, l, N, f, 3);
    expect(f, (const int[]){ 200, 50 }, (const double[]){ 3.0 / 7, 4.0 / 7 }, 2, "top-k 2");
    /* top-p 0.5: 0.4 < 0.5 <= 0.4 + 0.3 */
    c.top_k = 0; c.top_p = 32768;
    freq(&c, l, N, f, 4);
    expect(f, (const int[]){ 200, 50 }, (const double[]){ 3.0 / 7, 4.0 / 7 }, 2, "top-p 0.5");
    /* top-p 0.75 after top-k 3 (mass 0.9): 0.7 < 0.675? no: 0.4 + 0.3 = 0.7 >= 0.675 */
    c.top_k = 3; c.top_p = 49152;
    freq(&c, l, N, f, 5);
    expect(f, (const int[]){ 200, 50 }, (const double[]){ 3.0 / 7, 4.0 / 7 }, 2, "top-k 3 + top-p 0.75");
    /* top-p 0: only the most likely byte */
    c.top_k = 0; c.top_p = 0;
    freq(&c, l, 2000, f, 6);
    CHECK(f[50] > 0.999999);
    /* very low and very high temperatures */
    c.top_p = 65536; c.temperature = 1;
    freq(&c, l, 2000, f, 7);
    CHECK(f[50] > 0.999999);
    c.temperature = ATM_SAMPLER_T_MAX;
    freq(&c, l, N, f, 8);
    int nonzero = 0;
    for (int i = 0; i < 256; i++) nonzero += f[i] > 0;
    CHECK(nonzero > 200);                 /* nearly uniform at T = 100 */
}

static void test_greedy_and_determinism(void) {
    int32_t l[256];
    for (int i = 0; i < 256; i++) l[i] = (i * 7919) % 1000;
    l[17] = 5000; l[90] = 5000; l[3] = 4999;
    atm_sampler_cfg c;
    atm_sampler_default(&c);
    atm_rng r, r0;
    atm_rng_seed(&r, 99);
    r0 = r;
    CHECK(atm_sampler_next(&c, l, 256, &r, NULL) == 17);        /* lowest byte among the maxima */
    CHECK(memcmp(&r, &r0, sizeof r) == 0);                        /* greedy draws nothing */
    /* one draw per sample */
    c.temperature = 52429; c.top_k = 40; c.top_p = 62259;
    uint8_t scratch[256];
    atm_rng r1 = r0;
    atm_sampler_next(&c, l, 256, &r1, scratch);
    atm_rng r2 = r0;
    atm_rng_u32(&r2);
    CHECK(memcmp(&r1, &r2, sizeof r1) == 0);
    /* same seed -> same bytes; another seed -> another sequence */
    uint8_t a[300], b[300], d[300];
    atm_rng ra, rb, rd;
    atm_rng_seed(&ra, 5); atm_rng_seed(&rb, 5); atm_rng_seed(&rd, 6);
    for (int i = 0; i < 256; i++) l[i] = (int32_t)((i * 2654435761u) % 200000u);
    for (int i = 0; i < 300; i++) {
        a[i] = (uint8_t)atm_sampler_next(&c, l, 256, &ra, scratch);
        b[i] = (uint8_t)atm_sampler_next(&c, l, 256, &rb, scratch);
        d[i] = (uint8_t)atm_sampler_next(&c, l, 256, &rd, scratch);
    }
    CHECK(memcmp(a, b, sizeof a) == 0);
    CHECK(memcmp(a, d, sizeof a) != 0);
    /* top-k ties: equal logits keep the lower byte */
    for (int i = 0; i < 256; i++) l[i] = 0;
    c.temperature = 65536; c.top_k = 3; c.top_p = 65536;
    double f[256];
    freq(&c, l, 30000, f, 9);
    CHECK(f[0] > 0.3 && f[1] > 0.3 && f[2] > 0.3 && f[0] + f[1] + f[2] > 0.999999);
    /* small vocabularies */
    CHECK(atm_sampler_next(&c, l, 1, &ra, scratch) == 0);
}

int main(void) {
    test_parse();
    test_distributions();
    test_greedy_and_determinism();
    return CHECK_DONE();
}
