/* wasm/atome_wasm_engine.c — the integer engine's C API exported from
 * atome.wasm: open a packed `.atome` model, generate bytes, read logits.
 *
 * Contract. An engine session (atome_engine_new) owns a copy of one
 * container (JS copies the file into atome_engine_blob), the validated model
 * view (core/container.h), the engine and its arena (core/engine.h), and a
 * sampler (core/sampler.h) with its xoshiro128** state. Generation does what
 * the native CLI (cli/cmd_eval.c generate_packed) and the firmware
 * (mcu/main.c) do for a packed model: the sampling settings are parsed from
 * their decimal TEXT by the shared parser (atome_sampler_settings, with the
 * CLI's ranges and messages), the seed defaults to 1, window 0 means the
 * container's default, an empty prompt is one '\n', bytes outside the
 * vocabulary are refused, and byte i of n is fed back only when byte i+1 is
 * asked for. So the same model, prompt, settings and seed give the same
 * bytes here as on every other target. Open failures are worded as the
 * CLI's (atm_container_why, core/train/export.c).
 * Returns: 0 / a value, -1 (runtime failure) or -2 (bad argument, the CLI's
 * usage error) with a one-line reason in atome_engine_error(). */
#include <emscripten/emscripten.h>
#include <stdio.h>
#include <stdlib.h>
#include "container.h"
#include "engine.h"
#include "engine_kernels.h"
#include "export.h"
#include "format.h"
#include "rng.h"
#include "sampler.h"

/* wasm/atome_wasm.c */
int atome_sampler_settings(atm_sampler_cfg *c, const char *temperature, const char *top_k, const char *top_p,
                           char *err, size_t errlen);

#define API EMSCRIPTEN_KEEPALIVE

typedef struct {
    uint8_t        *blob;        /* [len] the container (owned copy) */
    size_t          len;
    atm_model       m;
    atm_engine      e;
    void           *arena;       /* [arena_bytes], 4-byte aligned (malloc) */
    size_t          arena_bytes;
    int             open;
    atm_sampler_cfg cfg;
    atm_rng         rng;
    const int32_t  *logits;      /* [V] Q16 logits predicting the next byte */
    int             pending;     /* last sampled byte not fed yet, or -1 */
    uint8_t         order[256];  /* sampler scratch (truncation order) */
    char            err[300];
} engine_session;

#define FAIL(s, code, ...) do { snprintf((s)->err, sizeof (s)->err, __VA_ARGS__); return (code); } while (0)

API engine_session *atome_engine_new(void) {
    engine_session *s = (engine_session *)calloc(1, sizeof *s);
    if (s) { atm_sampler_default(&s->cfg); atm_rng_seed(&s->rng, 1u); s->pending = -1; }
    return s;
}

API void atome_engine_delete(engine_session *s) {
    if (!s) return;
    free(s->arena);
    free(s->blob);
    free(s);
}

API const char *atome_engine_error(engine_session *s) { return s->err; }

/* A block of n bytes for the container; closes the model. */
API uint8_t *atome_engine_blob(engine_session *s, size_t n) {
    free(s->blob);
    free(s->arena);
    s->arena = NULL;
    s->open = 0;
    s->blob = (uint8_t *)malloc(n ? n : 1);
    s->len = s->blob ? n : 0;
    return s->blob;
}


/* Validates the container and lays out the engine for `window` (0 = the
 * model's default). */
API int atome_engine_open(engine_session *s, int window) {
    s->open = 0;
    free(s->arena);
    s->arena = NULL;
    atm_status st = atm_model_open(&s->m, s->blob, s->len);
    if (st != ATM_OK) {
        atm_container_why(s->blob, s->len, st, s->err, sizeof s->err);
        return -1;
    }
    if (window < 0) FAIL(s, -2, "--window must be an integer in 1..1048576 (got '%d')", window);
    if (window > ATM_MAX_WINDOW) FAIL(s, -2, "--window %d exceeds the engine's %d positions", window, ATM_MAX_WINDOW);
    size_t need = atm_engine_arena_bytes(&s->m, window);
    s->arena = need ? malloc(need) : NULL;
    if (!s->arena) FAIL(s, -1, "out of memory for the engine arena");
    st = atm_engine_init(&s->e, &s->m, window, s->arena, need);
    if (st != ATM_OK) FAIL(s, -1, "engine: %s", atm_status_str(st));
    s->arena_bytes = need;
    s->open = 1;
    s->logits = NULL;
    s->pending = -1;
    return 0;
}

/* Sampling settings as decimal text (NULL = default: greedy, top-k and
 * top-p off) and the seed; restarts the generator's random sequence. */
API int atome_engine_settings(engine_session *s, const char *temperature, const char *top_k,
                              const char *top_p, uint32_t seed) {
    atm_sampler_cfg c;
    int rc = atome_sampler_settings(&c, temperature, top_k, top_p, s->err, sizeof s->err);
    if (rc) return rc;
    s->cfg = c;
    atm_rng_seed(&s->rng, seed);
    return 0;
}

/* Forgets every position, then feeds the prompt (n = 0: one '\n'). */
API int atome_engine_feed(engine_session *s, const uint8_t *p, size_t n) {
    if (!s->open) FAIL(s, -1, "no model open");
    int V = s->m.cfg.vocab;
    for (size_t i = 0; i < n; i++)
        if (p[i] >= V) FAIL(s, -2, "prompt byte 0x%02X is outside the model's vocabulary of %d", p[i], V);
    atm_engine_reset(&s->e);
    if (n == 0) s->logits = atm_engine_step(&s->e, '\n');
    for (size_t i = 0; i < n; i++) s->logits = atm_engine_step(&s->e, p[i]);
    s->pending = -1;
    return 0;
}

/* Samples n bytes into out (see the contract for the feed-back rule). */
API int atome_engine_next(engine_session *s, uint8_t *out, int n) {
    if (!s->open || !s->logits) FAIL(s, -1, "no prompt fed");
    int V = s->m.cfg.vocab;
    for (int i = 0; i < n; i++) {
        if (s->pending >= 0) s->logits = atm_engine_step(&s->e, s->pending);
        int b = atm_sampler_next(&s->cfg, s->logits, V, &s->rng, s->order);
        out[i] = (uint8_t)b;
        s->pending = b;
    }
    return n;
}

/* Feeds one byte (after any pending one) and returns the Q16 logits [V]. */
API const int32_t *atome_engine_step(engine_session *s, int byte) {
    if (!s->open) return NULL;
    if (s->pending >= 0) { atm_engine_step(&s->e, s->pending); s->pending = -1; }
    s->logits = atm_engine_step(&s->e, byte);
    return s->logits;
}

API const int32_t *atome_engine_logits(engine_session *s) { return s->logits; }

/* what = 0 vocab, 1 window, 2 arena bytes, 3 d_model, 4 layers, 5 container
 * bytes, 6 parameters, 7 default window, 8 training seq, 9 encoding. */
API double atome_engine_stat(engine_session *s, int what) {
    if (!s->open) return -1;
    switch (what) {
    case 0: return s->m.cfg.vocab;
    case 1: return s->e.window;
    case 2: return (double)s->arena_bytes;
    case 3: return s->m.cfg.d_model;
    case 4: return s->m.cfg.n_layers;
    case 5: return (double)s->len;
    case 6: return s->m.n_params;
    case 7: return s->m.cfg.window;
    case 8: return s->m.cfg.train_seq;
    case 9: return s->m.encoding;
    default: return -1;
    }
}

/* The kernel set the open engine's steps run (ATM_KERNEL_* of engine.h), or
 * -1 with no model open. */
API int atome_engine_kernel(engine_session *s) { return s->open ? atm_engine_kernel(&s->e) : -1; }

/* Forces a kernel set (tests, benchmarks; 0 = AUTO): 0, or -1 if this build
 * does not have it. */
API int atome_engine_set_kernel(engine_session *s, int kernel) {
    return s->open ? atm_engine_set_kernel(&s->e, kernel) : -1;
}

/* Test entry for the ternary row kernels (tests/node/wasm-engine-kernels):
 * out[rows] = the ATOME01 rows b (rows x cols / 4 bytes) times x[cols] by
 * which = 0 the plain-C twin atm_ek_matvec_ref, 1 the wasm SIMD128 kernel
 * (prepared input included). Reads b and x only within those lengths.
 * Returns 0, or -1 for an unknown kernel, one this build lacks (1 in
 * atome-scalar.wasm) or cols outside the kernels' range. */
API int atome_ek_matvec(int which, const uint8_t *b, uint32_t rows, uint32_t cols, const int16_t *x, int32_t *out) {
    if (cols == 0 || cols % 4 != 0 || cols > ATM_MAX_D) return -1;
    if (which == 0) { atm_ek_matvec_ref(b, rows, cols, x, out); return 0; }
#ifdef ATM_EK_WASM
    if (which == 1) {
        static atm_ek_wvec v;
        atm_ek_prep_wasm(x, cols, &v);
        atm_ek_matvec_wasm(b, rows, cols, &v, out);
        return 0;
    }
#endif
    return -1;
}
