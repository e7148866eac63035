/* core/train/shape.h — brute-force shape matcher for the baseline families
 * (`atome match --family F --params N`). docs/models.md states the rules.
 *
 * Parameter counts come from atm_layout_build (the same table the trainer
 * allocates), so a match is exact by construction.
 *
 * vanilla (reference §3, matched_param_config): n_heads fixed, max_seq fixed,
 *   d = d_min, d_min+d_step, ..., d_max (d_step = n_heads), L = 1..l_max,
 *   d_ff = m*d for m = 1..4; minimise |P - target|. Search order is d, then L,
 *   then m, all ascending, and only a strictly smaller error replaces the best,
 *   so on a tie the smallest d (then L, then d_ff) wins — the reference's
 *   loop order and its `err < best` test.
 * gssm: d = d_min..d_max step d_step, L = 1..l_max, d_inner = k*d for k = 1..2,
 *   d_ff = m*d for m = 1..4. Candidates are the shapes with
 *   target <= P <= floor(target * band_hi_permille / 1000); among them the one
 *   minimising |1000*P - aim_permille*target| wins (integer arithmetic, no
 *   rounding), ties again to the first in the order d, L, d_inner, d_ff. With
 *   the defaults (band 1060, aim 1056) that is "within +6 % above the target,
 *   closest to +5.6 %". If the band holds no shape, the shape minimising the
 *   same aim error over all candidates is returned and the result is 1. */
#ifndef ATOME_TRAIN_SHAPE_H
#define ATOME_TRAIN_SHAPE_H
#include "model.h"

typedef struct {
    int32_t vocab;            /* 256 */
    int32_t d_min, d_max, d_step;
    int32_t l_max;
    int32_t n_heads;          /* vanilla: 4 */
    int32_t max_seq;          /* vanilla: 64 */
    int32_t band_hi_permille; /* gssm: 1060 */
    int32_t aim_permille;     /* gssm: 1056 */
    int32_t pos;              /* vanilla: ATM_POS_* of every candidate (0 = learned) */
} atm_match_opts;

/* Defaults per family: vanilla {256, 8, 256, 4, 7, 4, 64}; gssm {256, 8, 256,
 * 4, 6, band 1060, aim 1056}. Returns -1 for a family without a matcher. */
int atm_match_defaults(int family, atm_match_opts *o);

/* Searches per the family's rule (opts NULL = defaults). Fills *out (a
 * config that passes atm_config_validate) and *params (may be NULL).
 * Returns 0 on a match, 1 for the gssm out-of-band fallback, -1 for an
 * unsupported family, target < 1 or unusable options. */
int atm_match_shape(int family, long target, atm_config *out, long *params,
                    const atm_match_opts *opts);

/* The matcher's grid itself: fn(ctx, config, params) for every candidate
 * shape that builds, in the search order above (`atome match` lists them).
 * Returns -1 for an unsupported family or unusable options, else 0. */
typedef void (*atm_match_fn)(void *ctx, const atm_config *c, long params);
int atm_match_each(int family, const atm_match_opts *opts, atm_match_fn fn, void *ctx);

#endif
