/* core/train/export.h — float atome weights -> `.atome` container for the
 * integer engine, activation statistics for calibration, and a host-side
 * evaluation of a container (host only: malloc, libm, double).
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
 *  - atm_engine_eval() scores a container with the integer engine on
 *    non-overlapping chunks (fresh engine state per chunk, as the float
 *    atm_eval_chunks), turning the Q16 logits into log-probabilities in
 *    double on the host. */
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

/* One line saying why atm_model_open() refused a container (status), with
 * the sizes and CRCs involved: the words the CLI and the wasm front end use. */
void atm_container_why(const uint8_t *b, size_t len, int status, char *out, size_t n);

/* The calibration sample of a byte region, used by `atome train` (stats
 * stored in the checkpoint), `atome export` and the wasm front end alike:
 * ATM_CALIB_SEGMENTS streams of ATM_CALIB_SEGMENT_BYTES, the first at the
 * start, the last ending at the end, evenly spaced between (the whole region
 * as one stream if it is no longer than that); per-layer maxima merged. */
#define ATM_CALIB_SEGMENTS 8
#define ATM_CALIB_SEGMENT_BYTES 2048
int atm_calib_sample(const atm_layout *L, const float *w, const uint8_t *bytes, size_t n, int window,
                     atm_calib_stats *st, char *err, size_t errlen);

/* Float logits -> Q16 for the fixed-point sampler (core/sampler.h), so the
 * float path samples with the same code as the integer engine: x * 65536
 * (exact), rounded to nearest-even, clamped to +-2^30; NaN is never chosen. */
void atm_logits_q16(const float *logits, int V, int32_t *out);

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

/* Shadow weights w of an atome layout -> container in *out (malloc'd,
 * free() it), *len bytes. 0, or -1 with a reason. */
int atm_export_atome(const atm_layout *L, const float *w, const atm_export_opts *o,
                     uint8_t **out, size_t *len, char *err, size_t errlen);

/* Mean cross-entropy of the integer engine over every chunk of ch: each
 * chunk starts from a reset engine, feeds bytes 0..seq-2 and scores bytes
 * 1..seq-1 with log-softmax(logits / 2^16) in double. window 0 = model
 * default. 0, or -1 with a reason. */
int atm_engine_eval(const uint8_t *blob, size_t len, const atm_chunks *ch, int window,
                    atm_eval_result *out, char *err, size_t errlen);
/* atm_engine_eval that also averages the router trace of every scored step
 * (atm_engine_step_traced, Q15 / 32768) and its entropy as --router-json
 * gives it (atm_explain, Q16 / 65536) into *rs (NULL: atm_engine_eval). */
int atm_engine_eval_router(const uint8_t *blob, size_t len, const atm_chunks *ch, int window,
                           atm_eval_result *out, atm_router_stats *rs, char *err, size_t errlen);

/* log-softmax of Q16 engine logits: out[v] = ln p(v), V <= 256. */
void atm_engine_logprobs(const int32_t *logits, int V, double *out);

#endif
