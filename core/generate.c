/* core/generate.c — the engine's logits source of the one generator (the
 * generator itself is inline in generate.h). Freestanding, integer only. */
#include "generate.h"
#include "engine.h"

static const int32_t *eng_step(void *e, int b) { return atm_engine_step((atm_engine *)e, b); }
static void eng_reset(void *e) { atm_engine_reset((atm_engine *)e); }

const atm_gen_src atm_gen_engine_logits_src = { eng_step, 0, 0, eng_reset };

