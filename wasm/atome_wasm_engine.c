/* wasm/atome_wasm_engine.c — the integer engine's C API exported from
 * atome.wasm: open a packed `.atome` model, generate bytes, read logits.
 *
 * Contract. An engine session (atome_engine_new) owns a copy of one
 * container (JS copies the file into atome_engine_blob), the validated model
 * view (core/container.h), the engine and its arena (core/engine.h), and a
 * sampler (core/sampler.h) with its xoshiro128** state. Generation does what
 * the native CLI (cli/cmd_eval.c generate_packed) and the firmware
 * (mcu/main.c) do for a packed model, with the same generator
 * (core/generate.h): the sampling settings are parsed from their decimal
 * TEXT by core/sampler.h's one parser (atm_sampler_settings_why, the CLI's
 * ranges and messages), the seed defaults to 1, window 0 means the
 * container's default, an empty prompt is one '\n', bytes outside the
 * vocabulary are refused, and byte i of n is fed back only when byte i+1 is
 * asked for. So the same model, prompt, settings and seed give the same
 * bytes here as on every other target. Open failures are worded as the
 * CLI's (atm_container_why, core/host/engine_host.c). Engine-only: no
 * trainer header; the float parameter count of stat 10 is asked of the
 * trainer's front end (atome_shape_params, wasm/atome_wasm.c).
 * Returns: 0 / a value, -1 (runtime failure) or -2 (bad argument, the CLI's
 * usage error) with a one-line reason in atome_engine_error(). */
#include <emscripten/emscripten.h>
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "core/container.h"
#include "core/engine.h"
#include "core/engine_kernels.h"
#include "core/explain.h"
#include "core/format.h"
#include "core/generate.h"
#include "core/host/engine_host.h"
#include "core/sampler.h"

/* wasm/atome_wasm.c */
double atome_shape_params(const atm_mconfig *c);

#define API EMSCRIPTEN_KEEPALIVE

typedef struct {
    uint8_t        *blob;        /* [len] the container (owned copy) */
    size_t          len;
    atm_model       m;
    atm_engine      e;
    void           *arena;       /* [arena_bytes], 4-byte aligned (malloc) */
    size_t          arena_bytes;
    int             open;
    atm_sampler_cfg cfg;         /* the sampling settings (atome_engine_settings) */
    atm_gen         g;           /* the one generator (core/generate.h) on the traced step below */
    uint8_t         order[256];  /* sampler scratch (truncation order) */
    char            err[300];
    int             explain;     /* 1: atome_engine_next also writes explain lines */
    int32_t         trace[ATM_MAX_LAYERS * 3];  /* router weights of the last step (atm_engine_step_traced) */
    char           *xbuf;        /* explain lines of the last atome_engine_next call */
    size_t          xlen, xcap;
} engine_session;

#define FAIL(s, code, ...) do { snprintf((s)->err, sizeof (s)->err, __VA_ARGS__); return (code); } while (0)

/* The generator's source: the engine's traced step (the trace only while
 * explaining), every byte's logits kept for "why this byte". */
static const int32_t *sess_step(void *ctx, int byte) {
    engine_session *s = (engine_session *)ctx;
    return atm_engine_step_traced(&s->e, byte, s->explain ? s->trace : NULL);
}
static void sess_reset(void *ctx) { atm_engine_reset(&((engine_session *)ctx)->e); }
static const atm_gen_src sess_src = { sess_step, 0, 0, sess_reset };

API engine_session *atome_engine_new(void) {
    engine_session *s = (engine_session *)calloc(1, sizeof *s);
    if (s) {
        atm_sampler_default(&s->cfg);
        atm_gen_init(&s->g, &sess_src, s, 1, &s->cfg, ATM_GEN_SEED_DEFAULT, s->order);
    }
    return s;
}

API void atome_engine_delete(engine_session *s) {
    if (!s) return;
    free(s->arena);
    free(s->blob);
    free(s->xbuf);
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
    atm_gen_restart(&s->g, s->m.cfg.vocab);   /* no prompt fed yet */
    return 0;
}

/* Sampling settings as decimal text (NULL = default: greedy, top-k and
 * top-p off) and the seed; restarts the generator's random sequence. */
API int atome_engine_settings(engine_session *s, const char *temperature, const char *top_k,
                              const char *top_p, uint32_t seed) {
    atm_sampler_cfg c;
    if (atm_sampler_settings_why(&c, temperature, top_k, top_p, s->err, sizeof s->err)) return -2;
    s->cfg = c;
    atm_rng_seed(&s->g.rng, seed);
    return 0;
}

/* 0 if a model is open and every prompt byte is in its vocabulary, else
 * -1 / -2 with the reason. */
static int check_prompt(engine_session *s, const uint8_t *p, size_t n) {
    if (!s->open) FAIL(s, -1, "no model open");
    int V = s->m.cfg.vocab;
    for (size_t i = 0; i < n; i++)
        if (p[i] >= V) FAIL(s, -2, "prompt byte 0x%02X is outside the model's vocabulary of %d", p[i], V);
    return 0;
}

/* Forgets every position, then feeds the prompt (n = 0: one '\n'). */
API int atome_engine_feed(engine_session *s, const uint8_t *p, size_t n) {
    int rc = check_prompt(s, p, n);
    if (rc) return rc;
    atm_gen_prompt(&s->g, p, n);
    return 0;
}

/* Feeds more prompt bytes after atome_engine_feed, without forgetting
 * (a long prompt read in slices, with progress between them). */
API int atome_engine_feed_more(engine_session *s, const uint8_t *p, size_t n) {
    int rc = check_prompt(s, p, n);
    if (rc) return rc;
    atm_gen_prompt_more(&s->g, p, n);
    return 0;
}

/* "Why this byte" on (1) or off (0): while on, each atome_engine_next call
 * leaves one core/explain.h JSON line per byte it sampled in
 * atome_engine_explain_text (the lines `atome generate --router-json`
 * writes); the sampled bytes are the same either way. */
API int atome_engine_explain(engine_session *s, int on) {
    s->explain = on != 0;
    s->xlen = 0;
    return 0;
}

API const char *atome_engine_explain_text(engine_session *s) { return s->xbuf ? s->xbuf : ""; }
API size_t atome_engine_explain_len(engine_session *s) { return s->xlen; }

/* Samples n bytes into out (see the contract for the feed-back rule). */
API int atome_engine_next(engine_session *s, uint8_t *out, int n) {
    if (!s->open || !s->g.logits) FAIL(s, -1, "no prompt fed");
    int V = s->m.cfg.vocab;
    s->xlen = 0;
    if (s->explain) {
        size_t need = (size_t)(n > 0 ? n : 0) * (size_t)(160 + 32 * s->m.cfg.n_layers) + 1;  /* >= a line (explain.h) */
        if (need > s->xcap) {
            char *nb = (char *)realloc(s->xbuf, need);
            if (!nb) FAIL(s, -1, "out of memory for the explain lines");
            s->xbuf = nb;
            s->xcap = need;
        }
        s->xbuf[0] = 0;
    }
    for (int i = 0; i < n; i++) {
        int b = atm_gen_next(&s->g);
        out[i] = (uint8_t)b;
        if (s->explain) {
            atm_explain_t x;
            atm_explain(s->trace, s->m.cfg.n_layers, s->g.logits, V, &x);
            s->xlen += atm_explain_json(s->xbuf + s->xlen, s->xcap - s->xlen, s->g.count - 1u, b, &x);
        }
    }
    return n;
}

/* Feeds one byte (after any pending one) and returns the Q16 logits [V];
 * NULL with the reason in atome_engine_error for no model or a byte outside
 * the model's vocabulary. */
API const int32_t *atome_engine_step(engine_session *s, int byte) {
    if (!s->open) { snprintf(s->err, sizeof s->err, "no model open"); return NULL; }
    if (byte < 0 || byte >= s->m.cfg.vocab) {
        snprintf(s->err, sizeof s->err, "byte %d is outside the model's vocabulary of %d", byte, (int)s->m.cfg.vocab);
        return NULL;
    }
    const uint8_t b = (uint8_t)byte;
    atm_gen_prompt_more(&s->g, &b, 1);
    return s->g.logits;
}

API const int32_t *atome_engine_logits(engine_session *s) { return s->g.logits; }

/* Engine RAM (arena bytes) of the open model at window w (0 = default). */
API double atome_engine_arena_for(engine_session *s, int w) {
    return s->open ? (double)atm_engine_arena_bytes(&s->m, w) : -1;
}

/* what = 0 vocab, 1 window, 2 arena bytes, 3 d_model, 4 layers, 5 container
 * bytes, 6 stored values, 7 default window, 8 training seq, 9 encoding,
 * 10 the model's parameter count as `atome params` gives it for this shape
 * (the file stores fewer values: the SSM output vector is folded into its
 * input weights at export; `atome inspect` prints both). */
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
    case 10: return atome_shape_params(&s->m.cfg);
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

/* ---- "score your own text" (the page's #sec-score) ----
 * A text's bytes scored as `atome eval --model M --data FILE` scores a file
 * (cli/cmd_eval.c eval_packed, core/host/engine_host.c atm_engine_eval):
 * seq-byte chunks, each from a reset engine at eval's window; byte t of a
 * chunk (t >= 1) costs -ln p(byte) of the logits after bytes 0..t-1, in
 * double (atm_engine_logprobs); byte 0 of a chunk is not scored. The bytes
 * after the last whole chunk are scored the same way (a chunk cut short),
 * and the page leaves them out of the bits per byte as eval does. */

/* eval's seq and window for the open model (atm_eval_defaults); re-opens
 * the engine at that window. Returns seq, or -1. */
API int atome_engine_score_shape(engine_session *s) {
    if (!s->open) FAIL(s, -1, "no model open");
    int64_t seq = 0, window = 0;
    atm_eval_defaults(&s->m.cfg, &seq, &window);   /* `atome eval`'s, core/container.c */
    if (window > ATM_MAX_WINDOW) FAIL(s, -1, "eval's seq %lld needs a window of %lld positions; the engine allows %d",
                                      (long long)seq, (long long)window, ATM_MAX_WINDOW);
    if (s->e.window != window) {
        int rc = atome_engine_open(s, (int)window);
        if (rc) return rc;
    }
    return (int)seq;
}

/* Record of one scored byte (int32): rank of the byte among the model's
 * choices (0 = its first), n_top, top bytes [5], top p [5] (Q16), then per
 * layer the router weights [3] (Q15) and the router entropy (Q16 nats);
 * the explain.h values of the step the byte was scored from. */
API int atome_engine_score_stride(engine_session *s) { return 2 + 2 * ATM_EXPLAIN_TOP + 4 * s->m.cfg.n_layers; }

static void score_record(engine_session *s, const int32_t *lg, int tgt, int32_t *rec) {
    int V = s->m.cfg.vocab, L = s->m.cfg.n_layers, rank = 0;
    for (int v = 0; v < V; v++) rank += lg[v] > lg[tgt] || (lg[v] == lg[tgt] && v < tgt);
    atm_explain_t x;
    atm_explain(s->trace, L, lg, V, &x);
    rec[0] = rank;
    rec[1] = x.n_top;
    for (int k = 0; k < ATM_EXPLAIN_TOP; k++) {
        rec[2 + k] = k < x.n_top ? x.top_byte[k] : 0;
        rec[2 + ATM_EXPLAIN_TOP + k] = k < x.n_top ? x.top_p[k] : 0;
    }
    int32_t *r = rec + 2 + 2 * ATM_EXPLAIN_TOP;
    for (int l = 0; l < L; l++) {
        for (int p = 0; p < 3; p++) r[3 * l + p] = x.router[l][p];
        r[3 * L + l] = x.entropy[l];
    }
}

/* Scores text[from .. to) (n bytes in all) in chunks of seq, after
 * atome_engine_score_shape; consecutive calls continue where the last one
 * stopped (from = the previous to). nats[i - from] = the byte's cost, NaN
 * for the first byte of a chunk; rec (NULL: none) gets the records, stride
 * atome_engine_score_stride. Returns to - from, or -1 / -2 with a reason. */
API int atome_engine_score(engine_session *s, const uint8_t *text, size_t n, int seq, size_t from, size_t to,
                           double *nats, int32_t *rec) {
    if (!s->open) FAIL(s, -1, "no model open");
    if (seq < 2 || to > n || from > to) FAIL(s, -2, "score: bad range %zu..%zu of %zu bytes (seq %d)", from, to, n, seq);
    int V = s->m.cfg.vocab, stride = atome_engine_score_stride(s);
    double lp[256];
    const int32_t *lg = s->g.logits;
    int last = -1;    /* the text's last byte, when its step (whose logits nobody reads) was left out */
    for (size_t i = from; i < to; i++) {
        if (text[i] >= V) FAIL(s, -2, "byte %zu (0x%02X) is outside the model's vocabulary of %d", i, text[i], V);
        int32_t *ri = rec ? rec + (i - from) * (size_t)stride : NULL;
        if (i % (size_t)seq == 0) {
            atm_engine_reset(&s->e);
            nats[i - from] = NAN;
            if (ri) memset(ri, 0, (size_t)stride * sizeof *ri);
        } else {
            atm_engine_logprobs(lg, V, lp);
            nats[i - from] = -lp[text[i]];
            if (ri) score_record(s, lg, text[i], ri);
        }
        if ((i + 1) % (size_t)seq == 0) continue;
        if (i + 1 == n) { last = text[i]; break; }
        /* the router trace only where a record reads it (this call's, or the next call's first) */
        lg = rec || i + 1 == to ? atm_engine_step_traced(&s->e, text[i], s->trace) : atm_engine_step(&s->e, text[i]);
    }
    atm_gen_resume(&s->g, lg, last);   /* the generator continues from the scored text's last byte */
    return (int)(to - from);
}
