/* core/train/legacy.h — import/export between the reference's headerless
 * ATOME01/ATOME02 files (core/format.h, docs/legacy-format.md) and the float
 * trainer's flat weights of an `atome` model (host side: uses malloc).
 *
 * Contract.
 *  - Only 3-pathway atome configs (the reference always has conv, ssm and
 *    attn); tensors are found by name in atm_layout_build(cfg) and their
 *    shapes must match the file's (conv d x K with tap 0 = current position,
 *    router 3 x d with rows conv, ssm, attn: the file's own orders).
 *  - Import validates the whole file first (atm_legacy_validate: magic, exact
 *    size, trit codes, padding, scales, finite vectors) and then writes the
 *    fp32 SHADOW weights so that the trainer's quantiser (quant.c,
 *    atm_ternary_alpha / atm_ternary_trit) recomputes, bit for bit, the
 *    stored scale of every ternary tensor and every stored trit. Storing
 *    trit * alpha would not do that (the recomputed absmean would be alpha *
 *    nnz / n); see atm_legacy_requant. f32 vectors are copied bit for bit.
 *  - Export quantises each ternary tensor with quant.c's functions and writes
 *    the legacy layout; importing a file and exporting it in the same format
 *    reproduces it byte for byte.
 *  - Return values: 0, an atm_fmt_err from format.h (1..99) or one of the
 *    ATM_LEGACY_E_* codes below; atm_legacy_strerror() covers both. */
#ifndef ATOME_TRAIN_LEGACY_H
#define ATOME_TRAIN_LEGACY_H
#include <stddef.h>
#include <stdint.h>
#include "model.h"
#include "../format.h"

enum {
    ATM_LEGACY_E_CONFIG = 100,  /* not a 3-pathway atome config, or layout mismatch */
    ATM_LEGACY_E_REQUANT,       /* a stored (alpha, trits) pair no fp32 shadow can reproduce */
    ATM_LEGACY_E_NOMEM,
    ATM_LEGACY_E_NONFINITE      /* export: NaN or infinite weight */
};
const char *atm_legacy_strerror(int err);

/* Shape of a 3-pathway atome config; 0 or ATM_LEGACY_E_CONFIG. */
int atm_legacy_shape_from_config(const atm_config *c, atm_legacy_shape *s);

/* Legacy blob -> w[atm_layout n_params] (flat fp32 shadow weights of
 * atm_layout_build(cfg)). On failure w may be partly written and err (if
 * errlen > 0) holds one line naming the error, field, block and offset. */
int atm_legacy_import(const uint8_t *blob, size_t len, const atm_config *cfg,
                      float *w, char *err, size_t errlen);

/* w (shadow weights of layout L) -> legacy file of format 1 (ATOME01) or 2
 * (ATOME02) in out[cap]. *len gets the file size whenever the config is
 * exportable (also when cap is too small: ATM_FMT_E_CAPACITY; out may be
 * NULL to query the size). A NaN or infinite weight gives
 * ATM_LEGACY_E_NONFINITE, so every file written validates. */
int atm_legacy_export(const atm_layout *L, const float *w, int format,
                      uint8_t *out, size_t cap, size_t *len);

/* Shadow weights w[n] for stored trits t[n] (each -1, 0, +1) and scale alpha
 * such that atm_ternary_alpha(w, n) == alpha bitwise and
 * atm_ternary_trit(w[i], alpha) == t[i] for every i. Zero trits get w = 0;
 * non-zero ones get sign * c or sign * nextafterf(c, +inf) with c near
 * alpha * n / nnz, the number of larger ones chosen so the double-accumulated
 * mean rounds to alpha (for nnz of 1 or 2 those steps can be too coarse; then
 * one zero trit gets a value below alpha / 2 that closes the gap). All trits zero is only reproducible when alpha is
 * the quantiser's floor 1e-5f; alpha below the floor never is. Verified with
 * quant.c's own functions before returning 0; else ATM_LEGACY_E_REQUANT. */
int atm_legacy_requant(const int8_t *t, size_t n, float alpha, float *w);

#endif
