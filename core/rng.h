/* core/rng.h — the project's one pseudo-random generator (freestanding C99).
 *
 * xoshiro128** (Blackman & Vigna) on four uint32 words: 32-bit operations
 * only, so the Cortex-M0 computes exactly what x86 and wasm compute.
 * Seeding: a uint32 seed is expanded into the four state words by the
 * splitmix32-style mixer below (documented in docs/sampling.md). The all-zero
 * state cannot arise because the mixer output for consecutive counters is
 * never all zero for a given seed (checked in tests/test_rng.c).
 *
 * Used by the trainer (init, batch sampling) and by the sampler of the
 * integer engine. State is 16 bytes and is saved verbatim in checkpoints. */
#ifndef ATOME_RNG_H
#define ATOME_RNG_H
#include <stdint.h>

typedef struct { uint32_t s[4]; } atm_rng;

static inline uint32_t atm_rng_rotl(uint32_t x, int k) { return (x << k) | (x >> (32 - k)); }

static inline uint32_t atm_rng_mix32(uint32_t z) {
    z += 0x9E3779B9u;
    z = (z ^ (z >> 16)) * 0x85EBCA6Bu;
    z = (z ^ (z >> 13)) * 0xC2B2AE35u;
    return z ^ (z >> 16);
}

static inline void atm_rng_seed(atm_rng *r, uint32_t seed) {
    uint32_t x = seed;
    for (int i = 0; i < 4; i++) { x = atm_rng_mix32(x); r->s[i] = x; }
    if ((r->s[0] | r->s[1] | r->s[2] | r->s[3]) == 0) r->s[0] = 1u; /* unreachable in practice */
}

static inline uint32_t atm_rng_u32(atm_rng *r) {
    uint32_t *s = r->s;
    uint32_t result = atm_rng_rotl(s[1] * 5u, 7) * 9u;
    uint32_t t = s[1] << 9;
    s[2] ^= s[0]; s[3] ^= s[1]; s[1] ^= s[2]; s[0] ^= s[3];
    s[2] ^= t;
    s[3] = atm_rng_rotl(s[3], 11);
    return result;
}

/* Uniform integer in [0, n), n >= 1, without modulo bias (rejection). */
static inline uint32_t atm_rng_below(atm_rng *r, uint32_t n) {
    uint32_t lim = (uint32_t)(0u - n) % n;   /* = 2^32 mod n */
    for (;;) { uint32_t x = atm_rng_u32(r); if (x >= lim) return x % n; }
}

#endif
