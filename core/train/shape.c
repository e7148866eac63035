/* core/train/shape.c — brute-force shape matcher (contract in shape.h).
 * Every candidate is counted by building its layout, like the reference,
 * which instantiates each model; the search spaces are a few thousand
 * shapes, so this takes milliseconds. Arithmetic on counts is int64_t so the
 * permille products cannot overflow where long is 32 bits (wasm). */
#include "shape.h"
#include <string.h>

int atm_match_defaults(int family, atm_match_opts *o) {
    memset(o, 0, sizeof *o);
    o->vocab = 256;
    o->d_min = 8;       /* reference: min_d = 8 */
    o->d_max = 256;     /* reference: max_d = 256 */
    switch (family) {
    case ATM_FAMILY_VANILLA:
        o->n_heads = 4; o->d_step = 4; o->l_max = 7; o->max_seq = 64;
        return 0;
    case ATM_FAMILY_GSSM:
        /* +6 % band and +5.6 % aim: the paper's gated SSM was 5.6 % larger
         * than the routed model it was compared with. */
        o->d_step = 4; o->l_max = 6; o->band_hi_permille = 1060; o->aim_permille = 1056;
        return 0;
    default:
        return -1;
    }
}

static int64_t abs64(int64_t x) { return x < 0 ? -x : x; }

static int opts_ok(int family, const atm_match_opts *o) {
    if (o->vocab < 2 || o->d_min < 1 || o->d_step < 1 || o->d_max < o->d_min || o->l_max < 1) return 0;
    if (family == ATM_FAMILY_VANILLA && (o->n_heads < 1 || o->d_step % o->n_heads || o->max_seq < 2)) return 0;
    if (family == ATM_FAMILY_GSSM && o->band_hi_permille < 1000) return 0;
    return family == ATM_FAMILY_VANILLA || family == ATM_FAMILY_GSSM;
}

int atm_match_each(int family, const atm_match_opts *o, atm_match_fn fn, void *ctx) {
    if (!opts_ok(family, o)) return -1;
    /* Vanilla needs d divisible by n_heads: the grid starts at the first
     * multiple of n_heads >= d_min (reference: max(min_d, n_heads), with
     * min_d a multiple of n_heads). */
    int d0 = o->d_min;
    if (family == ATM_FAMILY_VANILLA && d0 % o->n_heads) d0 += o->n_heads - d0 % o->n_heads;
    atm_layout L;
    for (int d = d0; d <= o->d_max; d += o->d_step) {
        for (int nl = 1; nl <= o->l_max; nl++) {
            const int nk = family == ATM_FAMILY_GSSM ? 2 : 1;
            for (int k = 1; k <= nk; k++) {
                for (int m = 1; m <= 4; m++) {
                    atm_config c;
                    memset(&c, 0, sizeof c);
                    c.family = family; c.vocab = o->vocab; c.d_model = d; c.n_layers = nl;
                    c.d_ff = m * d;
                    if (family == ATM_FAMILY_VANILLA) {
                        c.n_heads = o->n_heads; c.d_head = d / o->n_heads; c.max_seq = o->max_seq; c.pos = o->pos;
                    } else {
                        c.d_inner = k * d;
                    }
                    if (atm_layout_build(&c, &L) != 0) continue;
                    fn(ctx, &c, (long)L.n_params);
                }
            }
        }
    }
    return 0;
}

/* The best candidate by the family's rule (shape.h). */
typedef struct {
    int family;
    int64_t T, hi, best_err, best_p;
    int32_t aim;
    int found, in_band;
    atm_config best;
} best_ctx;

static void consider(void *ctx, const atm_config *c, long params) {
    best_ctx *b = ctx;
    const int64_t P = (int64_t)params;
    int64_t err;
    int band = 1;
    if (b->family == ATM_FAMILY_VANILLA) {
        err = abs64(P - b->T);
    } else {
        err = abs64(1000 * P - (int64_t)b->aim * b->T);
        band = P >= b->T && P <= b->hi;
    }
    /* An in-band shape always beats an out-of-band one. */
    int better = !b->found || (band && !b->in_band) || (band == b->in_band && err < b->best_err);
    if (better) { b->found = 1; b->in_band = band; b->best_err = err; b->best_p = P; b->best = *c; }
}

int atm_match_shape(int family, long target, atm_config *out, long *params,
                    const atm_match_opts *opts) {
    atm_match_opts o;
    if (atm_match_defaults(family, &o) != 0 || target < 1) return -1;
    if (opts) o = *opts;
    best_ctx b;
    memset(&b, 0, sizeof b);
    b.family = family;
    b.T = (int64_t)target;
    b.hi = b.T * o.band_hi_permille / 1000;
    b.aim = o.aim_permille;
    if (atm_match_each(family, &o, consider, &b) != 0 || !b.found) return -1;
    *out = b.best;
    if (params) *params = (long)b.best_p;
    return b.in_band ? 0 : 1;
}
