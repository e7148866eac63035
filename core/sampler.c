/* core/sampler.c — fixed-point sampling and the setting parser. Contract in
 * sampler.h, algorithm in docs/sampling.md. Freestanding, integer only. */
#include "sampler.h"
#include "fixmath.h"

void atm_sampler_default(atm_sampler_cfg *c) {
    c->temperature = 0;
    c->top_k = 0;
    c->top_p = 65536;
}

int atm_sampler_parse_uint(const char *s, uint32_t max, uint32_t *out) {
    if (!s || !*s) return -1;
    uint64_t v = 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9') return -1;
        v = v * 10u + (uint64_t)(*s - '0');
        if (v > max) return -1;
    }
    *out = (uint32_t)v;
    return 0;
}

int atm_sampler_parse(const char *s, int32_t max_q16, int32_t *out) {
    if (!s) return -1;
    uint64_t ip = 0, fp = 0, pow10 = 1;
    int digits = 0, fdigits = 0;
    const char *p = s;
    for (; *p >= '0' && *p <= '9'; p++) {
        ip = ip * 10u + (uint64_t)(*p - '0');
        if (ip > 32767u) return -1;                 /* keeps ip * 65536 below 2^31 */
        digits++;
    }
    if (*p == '.') {
        for (p++; *p >= '0' && *p <= '9'; p++) {
            if (++fdigits > 9) return -1;
            fp = fp * 10u + (uint64_t)(*p - '0');
            pow10 *= 10u;
        }
        digits += fdigits;
    }
    if (*p != '\0' || digits == 0) return -1;
    /* round(fp / pow10 * 2^16) half up; fp * 2^16 < 10^9 * 2^16 < 2^46 */
    uint64_t frac = (fp * 65536u + pow10 / 2u) / pow10;
    uint64_t q = ip * 65536u + frac;
    if (q > (uint64_t)max_q16) return -1;
    *out = (int32_t)q;
    return 0;
}

int atm_sampler_settings(atm_sampler_cfg *c, const char *temperature, const char *top_k, const char *top_p) {
    atm_sampler_cfg t;
    atm_sampler_default(&t);
    uint32_t k;
    if (temperature && atm_sampler_parse(temperature, ATM_SAMPLER_T_MAX, &t.temperature)) return ATM_SET_E_TEMPERATURE;
    if (top_k) {
        if (atm_sampler_parse_uint(top_k, 0x7FFFFFFFu, &k)) return ATM_SET_E_TOP_K;
        t.top_k = (int32_t)k;
    }
    if (top_p && atm_sampler_parse(top_p, 65536, &t.top_p)) return ATM_SET_E_TOP_P;
    *c = t;
    return ATM_SET_OK;
}

int atm_sampler_config(atm_sampler_cfg *c, const char *temperature, const char *top_k,
                       const char *top_p) {
    return atm_sampler_settings(c, temperature, top_k, top_p) == ATM_SET_OK ? 0 : -1;
}

const char *atm_sampler_settings_msg(int code) {
    switch (code) {
    case ATM_SET_E_TEMPERATURE: return "--temperature must be a decimal number in 0..100, at most 9 decimals";
    case ATM_SET_E_TOP_K: return "--top-k must be an integer in 0..2147483647";
    case ATM_SET_E_TOP_P: return "--top-p must be a decimal number in 0..1, at most 9 decimals";
    default: return "";
    }
}

/* appends s to out[*at..n-1), keeping room for the NUL */
static void put(char *out, size_t n, size_t *at, const char *s) {
    while (*s && *at + 1 < n) out[(*at)++] = *s++;
}

int atm_sampler_settings_why(atm_sampler_cfg *c, const char *temperature, const char *top_k, const char *top_p,
                             char *err, size_t errlen) {
    const int e = atm_sampler_settings(c, temperature, top_k, top_p);
    if (e == ATM_SET_OK || !err || errlen == 0) return e;
    const char *got = e == ATM_SET_E_TEMPERATURE ? temperature : e == ATM_SET_E_TOP_K ? top_k : top_p;
    size_t at = 0;
    put(err, errlen, &at, atm_sampler_settings_msg(e));
    put(err, errlen, &at, " (got '");
    put(err, errlen, &at, got);
    put(err, errlen, &at, "')");
    err[at] = '\0';
    return e;
}

/* order: higher logit first, lower byte first among equal logits */
static int before(const int32_t *l, int a, int b) {
    return l[a] > l[b] || (l[a] == l[b] && a < b);
}

/* Heap sort of idx[0..n) into the order above (deterministic: the order is
 * total, so any correct sort gives the same permutation). */
static void sift(uint8_t *h, int root, int n, const int32_t *l) {
    for (;;) {
        int c = 2 * root + 1;
        if (c >= n) return;
        /* max-heap on "comes later" so the sorted array ends up in order */
        if (c + 1 < n && before(l, h[c], h[c + 1])) c++;
        if (!before(l, h[root], h[c])) return;
        uint8_t t = h[root]; h[root] = h[c]; h[c] = t;
        root = c;
    }
}
static void sort_order(uint8_t *idx, int n, const int32_t *l) {
    for (int i = 0; i < n; i++) idx[i] = (uint8_t)i;
    for (int i = n / 2 - 1; i >= 0; i--) sift(idx, i, n, l);
    for (int end = n - 1; end > 0; end--) {
        uint8_t t = idx[0]; idx[0] = idx[end]; idx[end] = t;
        sift(idx, 0, end, l);
    }
}

/* e = exp((l - lmax) / T) in Q24; 0 once the exponent is below -27 */
static uint32_t weight(int32_t l, int32_t lmax, int32_t T, uint64_t R) {
    uint64_t d = (uint64_t)((int64_t)lmax - l);            /* Q16, >= 0 */
    if (d >= (uint64_t)T * 28u) return 0;
    uint64_t z = (d * R) >> 32;                             /* d * 2^16 / T, < 28 * 2^16 */
    return atm_exp_q16(-(int32_t)z);
}

/* The index of the first maximum of l[0..V), V >= 1. */
static int first_max(const int32_t *l, int V) {
    int best = 0;
#if defined(__arm__) || defined(__thumb__)
#if defined(__ARM_ARCH_6M__)
    int32_t mv = l[0];                         /* the maximum so far in a register (fewer on the M0) */
    for (int i = 1; i < V; i++) {
        const int32_t x = l[i];
        if (x > mv) { mv = x; best = i; }
    }
#else
    for (int i = 1; i < V; i++) if (l[i] > l[best]) best = i;
#endif
#else
    /* the same index (the first of the maximum) as the loop above, in two
     * branch-free passes: the maximum, then where it first occurs (the
     * one-pass loop mispredicts on x86 and wasm; on the boards it is the
     * fewer instructions) */
    int32_t m8[8];
    for (int k = 0; k < 8; k++) m8[k] = l[0];
    int i = 0;
    for (; i + 8 <= V; i += 8)                 /* eight running maxima: one vector max a block */
        for (int k = 0; k < 8; k++) m8[k] = l[i + k] > m8[k] ? l[i + k] : m8[k];
    for (; i < V; i++) m8[0] = l[i] > m8[0] ? l[i] : m8[0];
    int32_t mx = m8[0];
    for (int k = 1; k < 8; k++) mx = m8[k] > mx ? m8[k] : mx;
    while (l[best] != mx) best++;
#endif
    return best;
}

int atm_sampler_next(const atm_sampler_cfg *c, const int32_t *l, int V, atm_rng *rng,
                     uint8_t *scratch) {
    if (V < 1) return 0;
    if (V > 256) V = 256;
    const int best = first_max(l, V);
    const int32_t T = c->temperature;
    if (T <= 0) return best;
    const int32_t lmax = l[best];
    /* R = floor(2^48 / T): (d * R) >> 32 = d * 2^16 / T to 17+ bits */
    const uint64_t R = ((uint64_t)1 << 48) / (uint64_t)T;
    const int truncate = (c->top_k > 0 && c->top_k < V) || c->top_p < 65536;
    int keep = V;
    uint64_t mass = 0;
    if (truncate && scratch) {
        sort_order(scratch, V, l);
        if (c->top_k > 0 && c->top_k < V) keep = c->top_k;
        for (int j = 0; j < keep; j++) mass += weight(l[scratch[j]], lmax, T, R);
        if (c->top_p < 65536) {
            /* smallest prefix whose mass reaches top_p of the kept mass */
            uint64_t cum = 0, goal = mass * (uint64_t)(c->top_p < 0 ? 0 : c->top_p);
            int j = 0;
            while (j < keep) {
                cum += weight(l[scratch[j]], lmax, T, R);
                j++;
                if (cum * 65536u >= goal) break;
            }
            keep = j < 1 ? 1 : j;
            mass = 0;
            for (j = 0; j < keep; j++) mass += weight(l[scratch[j]], lmax, T, R);
        }
    } else {
        for (int i = 0; i < V; i++) mass += weight(l[i], lmax, T, R);
    }
    /* mass >= 2^24 (the top byte weighs exactly 2^24); u uniform in [0, mass) */
    const uint64_t u = ((uint64_t)atm_rng_u32(rng) * mass) >> 32;
    uint64_t cum = 0;
    for (int j = 0; j < keep; j++) {
        int i = (truncate && scratch) ? scratch[j] : j;
        cum += weight(l[i], lmax, T, R);
        if (u < cum) return i;
    }
    return (truncate && scratch) ? scratch[keep - 1] : best;
}
