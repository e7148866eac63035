/* core/train/export.h — float atome weights -> `.atome` container for the
 * integer engine and activation statistics for calibration (host only:
 * malloc, libm, double).
 *
 * Contract.
 *  - atm_export_atome() quantises every ternary tensor exactly as the
 *    trainer's quantiser does (quant.c: per-tensor absmean alpha, trits by
 *    round-half-even of w / alpha), so the container's trits and scales are
 *    the ones the float model runs with. Real-valued tensors become int16
 *    with one power-of-two exponent per vector; the SSM decay a = tanh(a_raw)
 *    becomes Q15 and c_out is folded into b (s' = c s obeys the same
 *    recurrence with input weight b c). The fixed-point formats of the
 *    residual stream (FX), of each LayerNorm output (FU) and of each SSM state
 *    (FS) come from provable bounds computed from the weights; calibration
 *    statistics, when given, tighten them to twice the largest value seen
 *    (docs/fixed-point.md, "choosing the formats"). The output depends only on
 *    the weights, the statistics and the options: export is deterministic.
 *  - atm_calib_collect() runs the float model (effective ternary weights) as
 *    one continuous stream over a text with a given attention window — it IS
 *    the atome family's gen_step, with a statistics tap (atm_atome_gen_tap,
 *    atome_layers.h) — and records the largest magnitudes the formats depend
 *    on. The statistics serialise to a fixed little-endian byte layout so the
 *    trainer can store them in a checkpoint section.
 *  The engine's own host side (evaluating a container, wording a refused
 *  one, float logits for the sampler) is core/host/engine_host.h. */
#ifndef ATOME_TRAIN_EXPORT_H
#define ATOME_TRAIN_EXPORT_H
#include <stddef.h>
#include <stdint.h>
#include "model.h"
#include "data.h"
#include "trainer.h"
#include "../container.h"

#define ATM_CALIB_MAX_LAYERS 64
#define ATM_CALIB_VERSION 1

typedef struct {
    int32_t  n_layers;                         /* L of the model the stats belong to */
    int32_t  d_model;
    uint64_t positions;                        /* bytes fed */
    float    x_max[ATM_CALIB_MAX_LAYERS + 1];  /* max |h| entering block l; [L]: entering the final LN */
    float    u_max[ATM_CALIB_MAX_LAYERS + 1];  /* max |LN output| of block l; [L]: final LN */
    float    s_max[ATM_CALIB_MAX_LAYERS];      /* max |c_out * s| (folded SSM state) */
    float    q_max[ATM_CALIB_MAX_LAYERS];
    float    k_max[ATM_CALIB_MAX_LAYERS];
    float    v_max[ATM_CALIB_MAX_LAYERS];
    float    logit_max;                         /* max |logit| */
} atm_calib_stats;

/* Stats of the float model (shadow weights w of layout L, quantised with
 * the ternary quantiser) over text[n] as one stream with attention window
 * `window`. 0, or -1 with a reason. */
int atm_calib_collect(const atm_layout *L, const float *w, const uint8_t *text, size_t n,
                      int window, atm_calib_stats *st, char *err, size_t errlen);

/* The calibration sample of a byte region, used by `atome train` (stats
 * stored in the checkpoint), `atome export` and the wasm front end alike:
 * ATM_CALIB_SEGMENTS streams of ATM_CALIB_SEGMENT_BYTES, the first at the
 * start, the last ending at the end, evenly spaced between (the whole region
 * as one stream if it is no longer than that); per-layer maxima merged. */
#define ATM_CALIB_SEGMENTS 8
#define ATM_CALIB_SEGMENT_BYTES 2048
int atm_calib_sample(const atm_layout *L, const float *w, const uint8_t *bytes, size_t n, int window,
                     atm_calib_stats *st, char *err, size_t errlen);

/* Serialised size for a layer count: 32 + 4 * (6 L + 3) bytes. */
size_t atm_calib_bytes(int n_layers);
/* Writes the stats into out[cap]; returns the bytes written or 0 if cap is
 * too small. Layout: "ATMCAL01", u32 version, u32 L, u32 d, u32 0, u64
 * positions, then x_max[L+1], u_max[L+1], s_max[L], q_max[L], k_max[L],
 * v_max[L], logit_max as little-endian IEEE-754 binary32 bit patterns. */
size_t atm_calib_serialize(const atm_calib_stats *st, uint8_t *out, size_t cap);
/* Parses exactly len bytes; 0, or -1 with a reason (bad magic/version/size,
 * negative or non-finite values). */
int atm_calib_parse(const uint8_t *b, size_t len, atm_calib_stats *st, char *err, size_t errlen);

typedef struct {
    int32_t encoding;                /* ATM_ENC_ATOME01 or ATM_ENC_ATOME02 */
    int32_t window;                  /* default attention window stored; 0: train_seq, else 64 */
    int32_t train_seq;               /* 0 = unknown */
    const atm_calib_stats *calib;    /* NULL: provable bounds only */
} atm_export_opts;

/* The float model's parameter count for a container's shape (config c), as
 * `atome params` gives it: the container stores fewer values, since the SSM
 * output vector is folded into its input weights at export. 0 if the
 * trainer has no layout for that shape. */
size_t atm_export_float_params(const atm_mconfig *c);

/* Shadow weights w of an atome layout -> container in *out (malloc'd,
 * free() it), *len bytes. 0, or -1 with a reason. */
int atm_export_atome(const atm_layout *L, const float *w, const atm_export_opts *o,
                     uint8_t **out, size_t *len, char *err, size_t errlen);

#endif
