/* core/host/engine_host.h — the integer engine's host side: what the CLI, the
 * wasm front ends and the tests do around the engine that the freestanding
 * core may not (malloc, stdio, double, libm). Nothing here reaches the float
 * trainer (core/train/): an engine-only consumer includes this and core/.
 *
 * Contract.
 *  - atm_engine_eval() scores a container with the integer engine on
 *    non-overlapping chunks (fresh engine state per chunk, as the float
 *    atm_eval_chunks), turning the Q16 logits into log-probabilities in
 *    double on the host.
 *  - atm_container_why() words a refused container (sizes, CRCs) the same
 *    way for the CLI and the wasm front end.
 *  - atm_logits_q16() brings float logits to the fixed-point sampler's
 *    input, so float and integer paths sample with one sampler. */
#ifndef ATOME_HOST_ENGINE_HOST_H
#define ATOME_HOST_ENGINE_HOST_H
#include <stddef.h>
#include <stdint.h>
#include "eval_types.h"
#include "../generate.h"

/* One line saying why atm_model_open() refused a container (status), with
 * the sizes and CRCs involved: the words the CLI and the wasm front end use. */
void atm_container_why(const uint8_t *b, size_t len, int status, char *out, size_t n);

/* Float logits -> Q16 for the fixed-point sampler (core/sampler.h), so the
 * float path samples with the same code as the integer engine: x * 65536
 * (exact), rounded to nearest-even, clamped to +-2^30; NaN is never chosen. */
void atm_logits_q16(const float *logits, int V, int32_t *out);

/* A float generator as a source of the one generator (core/generate.h):
 * step = the float model's streaming step (the trainer's gen_step on gen),
 * its logits brought to Q16 by atm_logits_q16 into q. ctx: an
 * atm_float_gen with step, gen and V (<= 256) set. */
typedef struct {
    const float *(*step)(void *gen, int byte);
    void   *gen;
    int     V;
    int32_t q[256];
} atm_float_gen;
extern const atm_gen_src atm_float_gen_src;

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
