/* wasm/atome_wasm.c — the float trainer's C API exported from atome.wasm.
 *
 * Contract. Thin exports over core/train (trainer.h, ckpt.h, data.h,
 * eval.c's sampler, the family gen API); wasm/atome.mjs is the only intended
 * caller and docs/wasm.md documents the JS side. A session (atome_new) holds
 * one model: config and options (set by name before atome_build), the
 * trainer, the corpus copied in by JS, a float generator and the last
 * serialised checkpoint. Every function returns 0 / a value on success and
 * -1 (or NULL, or NaN) on failure, -2 for a bad argument that the CLI calls
 * a usage error, with a one-line reason in atome_error(s).
 * Memory: JS copies buffers into blocks from atome_alloc and reads results
 * through pointers into wasm memory; nothing is shared between sessions.
 * The memory grows on demand up to its maximum (wasm/CMakeLists.txt), and
 * allocation failures past it are reported, never fatal. No stdio or file I/O is reached from here.
 *
 * Same semantics as the native CLI (cli/cmd_train.c, cli/cmd_eval.c,
 * cli/cmd_pack.c): default quantiser per family (ternary for atome, fp32
 * otherwise), lr2 defaults to lr, split/valid chunking, evaluation and
 * generation with the quantiser the next training step would use, default
 * generation window = training seq (vanilla: at most max_seq), an empty
 * prompt is one '\n', float logits sampled through the fixed-point sampler
 * (atm_logits_q16), and atome-family checkpoints carry the ACAL
 * activation statistics `atome train` stores (calibration sample of the
 * training chunks at the run window: seq, or the attn_window), which export uses by default. A
 * checkpoint written here differs from the CLI's only in its data paths
 * (whatever names JS passes) and elapsed seconds.
 * The calibration sample and the float-logit bridge are the CLI's own
 * (atm_calib_sample in core/train/export.c, atm_logits_q16 in
 * core/host/engine_host.c). */
#define _DEFAULT_SOURCE /* sbrk */
#include <emscripten/emscripten.h>
#if defined(__wasm_simd128__)
#include <wasm_simd128.h>
#endif
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "core/train/ckpt.h"
#include "core/train/data.h"
#include "core/train/export.h"
#include "core/host/engine_host.h"
#include "core/train/kernels.h"
#include "core/train/atome_layers.h"
#include "core/train/kernels_layers.h"
#include "core/train/model.h"
#include "core/sampler.h"
#include "core/train/trainer.h"
#include "core/train/options.h"
#include "core/train/pool.h"
#include <stddef.h>

#define API EMSCRIPTEN_KEEPALIVE

typedef struct {
    atm_config     cfg;
    atm_train_opts opt;
    unsigned char  given[ATM_TO_COUNT];  /* options set by name (quant, lr2: else the CLI's defaults) */
    int            dhead_set;            /* vanilla: d-head given (heads follow from it) */
    atm_trainer   *tr;
    int            has_adam;   /* 0 until a step runs on a model without moments */
    atm_ckpt       meta;       /* name, data description, elapsed seconds */
    uint8_t       *bytes[2];   /* corpus copied in by JS: [0] train, [1] valid */
    size_t         nbytes[2];
    atm_chunks     train, eval;
    int            data_ready;
    uint8_t       *image;      /* last serialised checkpoint */
    size_t         image_len;
    uint8_t       *calib;      /* ACAL bytes of the loaded checkpoint, while its weights are unchanged */
    size_t         calib_len;
    int            calib_computed;  /* 1: calib was taken from the session's training data (not loaded) */
    const atm_family *gfam;    /* float generator */
    void          *gen;
    float         *gw;         /* [n_params] quantised weights the generator reads */
    atm_float_gen  fgen;       /* gen as the one generator's source (core/host/engine_host.h) */
    atm_sampler_cfg gcfg;      /* its sampling settings */
    atm_gen        gg;         /* the one generator (core/generate.h) */
    uint8_t        order[256]; /* sampler scratch */
    char           err[600];
} session;

#define FAIL(s, ...) do { snprintf((s)->err, sizeof (s)->err, __VA_ARGS__); return -1; } while (0)
/* A bad argument (what the CLI reports as a usage error, exit status 2). */
#define FAIL_ARG(s, ...) do { snprintf((s)->err, sizeof (s)->err, __VA_ARGS__); return -2; } while (0)

API void *atome_alloc(size_t n) { return malloc(n ? n : 1); }
/* Top of the malloc heap (its high-water mark: the heap never shrinks). */
API size_t atome_heap_top(void) { return (size_t)sbrk(0); }
API void atome_free(void *p) { free(p); }

/* The trainer's threads (core/train/pool.h). In atome-threads.wasm the host
 * starts n worker instances on the shared memory, each on its own stack
 * (atome_alloc'd here, by the first instance: libc is single-threaded), then
 * says so with atome_threads_started(n); atome_threads(n) sets the count
 * (clamped to the workers there are + 1) and returns it; atome_threads(0)
 * returns it unchanged. In the other
 * modules it is always 1. */
#if defined(__wasm_atomics__)
API void atome_thread_main(int id) { atm_pool_worker(id); }
API void atome_threads_started(int n) { atm_pool_workers_started(n); }
API void atome_threads_caller_naps(int on) { atm_pool_caller_naps(on); }
#endif
API int atome_threads(int n) { return n > 0 ? atm_threads_set(n) : atm_threads(); }
API double atome_thread_calls(void) { return (double)atm_pool_calls(); }
API const char *atome_error(session *s) { return s->err; }
API const char *atome_kernels(void) { return atm_kernels_name(); }
API int atome_kernels_use(const char *name) { return atm_kernels_select(name); }

static void gen_clear(session *s) {
    if (s->gen) s->gfam->gen_free(s->gen);
    free(s->gw);
    s->gen = NULL; s->gw = NULL; s->gg.logits = NULL;
}

static void calib_clear(session *s) {
    free(s->calib);
    s->calib = NULL;
    s->calib_len = 0;
    s->calib_computed = 0;
}

static void model_clear(session *s) {
    gen_clear(s);
    calib_clear(s);
    atm_trainer_free(s->tr);
    s->tr = NULL;
    s->data_ready = 0;
}

/* The statistics `atome train` stores with an atome-family checkpoint and
 * `atome export` uses: the loaded ones while the weights are unchanged,
 * else the calibration sample of the training chunks at the run window (seq, or the model's attn_window).
 * 1 = *st filled, 0 = none available, -1 = error. */
static int session_calib(session *s, atm_calib_stats *st) {
    const atm_trainer *t = s->tr;
    if (t->L.cfg.family != ATM_FAMILY_ATOME) return 0;
    if (s->calib) return atm_calib_parse(s->calib, s->calib_len, st, s->err, sizeof s->err) ? -1 : 1;
    if (!s->data_ready) return 0;
    int64_t rw = atm_config_run_window(&t->L.cfg, t->opt.seq);
    int window = rw <= ATM_MAX_WINDOW ? (int)rw : ATM_MAX_WINDOW;
    if (atm_calib_sample(&t->L, t->w, s->train.base, s->train.n * (size_t)s->train.seq, window, st, s->err, sizeof s->err))
        return -1;
    /* kept until the weights change (calib_clear), as loaded statistics are:
     * the next export or save of the same weights reuses them */
    size_t nb = atm_calib_bytes(t->L.cfg.n_layers);
    if ((s->calib = (uint8_t *)malloc(nb)) != NULL) {
        s->calib_len = atm_calib_serialize(st, s->calib, nb);
        s->calib_computed = 1;
        atm_calib_stats check;
        char why[200];
        /* statistics the parser would refuse (non-finite, from a diverged
         * model) are not kept: the next call computes them again, as before */
        if (atm_calib_parse(s->calib, s->calib_len, &check, why, sizeof why)) calib_clear(s);
    }
    return 1;
}

API session *atome_new(void) {
    session *s = (session *)calloc(1, sizeof *s);
    if (!s) return NULL;
    atm_train_opts_default(&s->opt);
    atm_ckpt_init(&s->meta);
    return s;
}

API void atome_delete(session *s) {
    if (!s) return;
    model_clear(s);   /* also the generator and the loaded calibration */
    free(s->bytes[0]); free(s->bytes[1]); free(s->image);
    free(s);
}

/* Starts a new model description from a named config (atm_config_names). */
API int atome_config(session *s, const char *name) {
    if (atm_config_by_name(name, &s->cfg)) FAIL(s, "unknown config '%s'", name);
    snprintf(s->meta.name, sizeof s->meta.name, "%s", name);
    atm_train_opts_default(&s->opt);
    memset(s->given, 0, sizeof s->given);
    s->dhead_set = 0;
    return 0;
}

/* The shape overrides by their CLI names (the fields are int32_t). */
static const struct { const char *name; size_t off; } SHAPE_KEYS[] = {
    { "d-model", offsetof(atm_config, d_model) }, { "layers", offsetof(atm_config, n_layers) },
    { "d-head", offsetof(atm_config, d_head) }, { "heads", offsetof(atm_config, n_heads) },
    { "kernel", offsetof(atm_config, kernel) }, { "attn-top-k", offsetof(atm_config, top_k) },
    { "pathways", offsetof(atm_config, pathways) },   /* bitmask: conv 1, ssm 2, attn 4 */
    { "d-ff", offsetof(atm_config, d_ff) }, { "d-inner", offsetof(atm_config, d_inner) },
    { "max-seq", offsetof(atm_config, max_seq) },
};

/* A shape override by its CLI name (without "--"); checked by atome_build. */
API int atome_set(session *s, const char *key, double x) {
    for (size_t i = 0; i < sizeof SHAPE_KEYS / sizeof SHAPE_KEYS[0]; i++) {
        if (strcmp(key, SHAPE_KEYS[i].name) != 0) continue;
        *(int32_t *)((char *)&s->cfg + SHAPE_KEYS[i].off) = (int32_t)x;
        if (!strcmp(key, "d-head")) s->dhead_set = 1;
        return 0;
    }
    FAIL(s, "unknown setting '%s'", key);
}

/* A training option of the model by its name in the option table
 * (core/train/options.h), its value as text: the CLI's grammar, range and
 * words ("lr must be a number in (0, 1000] (got '-1')"), -2 when refused. */
API int atome_option(session *s, const char *name, const char *text) {
    const atm_topt *r = atm_topt_find(name);
    if (!r || r->store == ATM_TO_RUN) FAIL_ARG(s, "unknown model option '%s'", name);
    atm_topt_val v;
    if (atm_topt_parse(r, text, &v)) {
        atm_topt_error(r, r->name, text, s->err, sizeof s->err);
        return -2;
    }
    atm_topt_put(&s->opt, r, &v);
    s->given[r - atm_topts] = 1;
    return 0;
}

/* The option table as JSON (atm_topt_json; `atome train --options-json`
 * prints the same text). */
API const char *atome_options_json(void) {
    static char *json;
    if (!json) {
        size_t n = atm_topt_json(NULL, 0) + 1;
        if ((json = (char *)malloc(n)) != NULL) atm_topt_json(json, n);
    }
    return json ? json : "";
}

/* Builds the trainer: weights initialised from the seed as `atome train`
 * and `atome init` do. Keeps the corpus; chunks it again (atome_data). */
API int atome_build(session *s) {
    char why[300];
    atm_config *c = &s->cfg;
    if (c->family == ATM_FAMILY_VANILLA) {
        /* As the CLI: heads follow d-model; d-head, when given, fixes them. */
        if (s->dhead_set) {
            if (c->d_head < 1 || c->d_model % c->d_head) FAIL(s, "d-head %d does not divide d-model %d", (int)c->d_head, (int)c->d_model);
            c->n_heads = c->d_model / c->d_head;
        }
        if (c->n_heads < 1 || c->d_model % c->n_heads) FAIL(s, "%d heads do not divide d-model %d", (int)c->n_heads, (int)c->d_model);
        c->d_head = c->d_model / c->n_heads;
    }
    if (atm_config_validate(&s->cfg, why, sizeof why)) FAIL(s, "%s", why);
    if (!s->given[ATM_TO_QUANT]) s->opt.quant = s->cfg.family == ATM_FAMILY_ATOME ? ATM_QUANT_TERNARY : ATM_QUANT_FP32;
    if (!s->given[ATM_TO_LR2]) s->opt.lr2 = s->opt.lr;
    if (atm_train_opts_validate(&s->opt, why, sizeof why)) FAIL(s, "%s", why);
    if (s->cfg.family == ATM_FAMILY_VANILLA && s->opt.seq - 1 > s->cfg.max_seq)
        FAIL(s, "seq %d needs %d positions; the model has max-seq %d", (int)s->opt.seq,
             (int)s->opt.seq - 1, (int)s->cfg.max_seq);
    model_clear(s);
    s->tr = atm_trainer_new(&s->cfg, &s->opt);
    if (!s->tr) FAIL(s, "out of memory for the %s model", atm_family_name(s->cfg.family));
    s->has_adam = 0;
    s->meta.elapsed_s = 0.0;
    return 0;
}

/* A block of n bytes for corpus `which` (0 train, 1 valid, n = 0 drops it);
 * JS copies the bytes in, then calls atome_data. */
API uint8_t *atome_corpus(session *s, int which, size_t n) {
    if (which < 0 || which > 1) return NULL;
    if (s->calib_computed) calib_clear(s);   /* taken from the old data; loaded statistics stay */
    free(s->bytes[which]);
    s->bytes[which] = n ? (uint8_t *)malloc(n) : NULL;
    s->nbytes[which] = s->bytes[which] ? n : 0;
    s->data_ready = 0;
    if (n && !s->bytes[which]) snprintf(s->err, sizeof s->err, "out of memory for %zu corpus bytes", n);
    return s->bytes[which];
}

/* Chunks the corpus at the model's seq: with a valid corpus, train = all of
 * corpus 0 and eval = all of corpus 1; else the split rule of data.h. The
 * names and max_bytes (0 = whole files; JS has already cut the bytes) go
 * into saved checkpoints as the data description, as `atome train` records
 * its --data, --valid and --max-bytes. */
API int atome_data(session *s, double split, double max_bytes, const char *train_name, const char *valid_name) {
    char why[300];
    if (!s->tr) FAIL(s, "no model (build or load one first)");
    if (s->calib_computed) calib_clear(s);   /* taken from the old data; loaded statistics stay */
    atm_corpus c0 = { s->bytes[0], s->nbytes[0] }, c1 = { s->bytes[1], s->nbytes[1] };
    int seq = s->tr->opt.seq;
    s->data_ready = 0;
    if (!c0.n_bytes) FAIL(s, "no training corpus");
    if (c1.n_bytes) {
        if (atm_chunks_all(&c0, seq, &s->train, why, sizeof why)) FAIL(s, "training corpus: %s", why);
        if (atm_chunks_all(&c1, seq, &s->eval, why, sizeof why)) FAIL(s, "validation corpus: %s", why);
    } else if (atm_chunks_split(&c0, seq, split, &s->train, &s->eval, why, sizeof why)) {
        FAIL(s, "%s", why);
    }
    atm_ckpt *m = &s->meta;
    m->has_data = 1;
    m->split = c1.n_bytes ? 0.9 : split;
    m->max_bytes = max_bytes > 0 ? (uint64_t)max_bytes : 0;
    snprintf(m->data_path, sizeof m->data_path, "%s", train_name ? train_name : "");
    snprintf(m->valid_path, sizeof m->valid_path, "%s", c1.n_bytes && valid_name ? valid_name : "");
    if (c1.n_bytes && !m->valid_path[0]) snprintf(m->valid_path, sizeof m->valid_path, "valid");
    s->data_ready = 1;
    return 0;
}

API double atome_chunks(session *s, int which) {
    return s->data_ready ? (double)(which ? s->eval.n : s->train.n) : 0.0;
}

/* Up to n more steps, never past the run's total; returns the steps done. */
API int atome_train(session *s, int n) {
    if (!s->tr) FAIL(s, "no model (build or load one first)");
    if (!s->data_ready) FAIL(s, "no data (call data first)");
    gen_clear(s);
    int done = 0;
    if (n > 0 && s->tr->step < s->tr->opt.steps) calib_clear(s);   /* the weights change */
    while (done < n && s->tr->step < s->tr->opt.steps) {
        atm_trainer_train_batch(s->tr, &s->train);
        s->has_adam = 1;
        done++;
    }
    return done;
}

/* Trainer state for JS, by name: atome_stat_name(i) names stat i (NULL
 * past the last), atome_stat(s, i) is its value (NaN without a model).
 * quant is ATM_QUANT_*, family ATM_FAMILY_*, elapsed_s the training seconds
 * over all resumes. One list: the names and the values come from it. */
#define TRAINER_STATS(X) \
    X(step, (double)t->step) X(steps, (double)t->opt.steps) X(loss, t->last_loss) X(lr, t->last_lr) \
    X(grad_norm, t->last_gnorm) X(params, (double)t->L.n_params) X(quant, atm_trainer_quant(t)) \
    X(stage, t->stage) X(batch, t->B) X(seq, t->opt.seq) X(vocab, t->L.cfg.vocab) \
    X(family, t->L.cfg.family) X(elapsed_s, s->meta.elapsed_s)
#define STAT_ENUM(n, e) ST_##n,
enum { TRAINER_STATS(STAT_ENUM) ST_COUNT };
#define STAT_NAME(n, e) #n,
static const char *const STAT_NAMES[ST_COUNT] = { TRAINER_STATS(STAT_NAME) };
#define STAT_CASE(n, e) case ST_##n: return (double)(e);

API const char *atome_stat_name(int i) { return i >= 0 && i < ST_COUNT ? STAT_NAMES[i] : NULL; }

API double atome_stat(session *s, int what) {
    const atm_trainer *t = s->tr;
    if (!t) return NAN;
    switch (what) {
    TRAINER_STATS(STAT_CASE)
    default: return NAN;
    }
}

API void atome_add_elapsed(session *s, double sec) { s->meta.elapsed_s += sec; }

/* Held-out mean cross-entropy (nats per byte) over the first max_chunks
 * evaluation chunks (0 = all), in batches of `batch`; NaN on failure. */
API double atome_evaluate(session *s, int max_chunks, int batch) {
    if (!s->tr || !s->data_ready) { snprintf(s->err, sizeof s->err, "no model or no data"); return NAN; }
    atm_chunks ch = s->eval;
    if (max_chunks > 0 && (size_t)max_chunks < ch.n) ch.n = (size_t)max_chunks;
    atm_eval_result r;
    if (atm_eval_chunks(&s->tr->L, s->tr->w, atm_trainer_quant(s->tr), &ch, batch > 0 ? batch : 16,
                        &r, s->err, sizeof s->err))
        return NAN;
    return r.nats_per_byte;
}

/* Serialises the model into the session's image; returns its length (the
 * bytes are at atome_image(s)) or -1. with_calib = 0 leaves the activation
 * statistics out (unless they are at hand already): a checkpoint to continue
 * training from needs none, since the first step changes the weights and the
 * statistics are then taken afresh (the page's periodic saves; computing
 * them costs about as much as 40 training steps of atome-60k). */
API double atome_save_opts(session *s, int with_calib) {
    if (!s->tr) FAIL(s, "no model (build or load one first)");
    atm_ckpt ck = s->meta;
    atm_ckpt_from_trainer(&ck, s->tr);
    if (!s->has_adam) ck.m = ck.v = NULL;
    atm_calib_stats st;
    uint8_t *calp = NULL;
    int have = with_calib || s->calib ? session_calib(s, &st) : 0;
    if (have < 0) return -1;
    if (have) {
        size_t nb = atm_calib_bytes(s->tr->L.cfg.n_layers);
        if (!(calp = (uint8_t *)malloc(nb))) FAIL(s, "out of memory for the checkpoint");
        ck.calib_len = atm_calib_serialize(&st, calp, nb);
        ck.calib = calp;
    }
    free(s->image);
    s->image = NULL;
    s->image_len = 0;
    int rc = atm_ckpt_serialize(&ck, &s->image, &s->image_len);
    free(calp);
    if (rc) FAIL(s, "out of memory for the checkpoint");
    return (double)s->image_len;
}

API double atome_save(session *s) { return atome_save_opts(s, 1); }

API uint8_t *atome_image(session *s) { return s->image; }

/* Replaces the model by a checkpoint image buf[len] (JS keeps ownership). */
API int atome_load(session *s, const uint8_t *buf, size_t len) {
    atm_ckpt ck;
    char why[600];
    if (atm_ckpt_parse(buf, len, &ck, why, sizeof why)) FAIL(s, "%s", why);
    model_clear(s);
    s->cfg = ck.cfg;
    s->opt = ck.opt;
    s->given[ATM_TO_QUANT] = s->given[ATM_TO_LR2] = 1;
    s->tr = atm_trainer_new(&ck.cfg, &ck.opt);
    if (!s->tr || atm_trainer_load_ckpt(s->tr, &ck)) {
        atm_ckpt_free(&ck);
        model_clear(s);
        FAIL(s, "cannot build the %s model of the checkpoint (out of memory?)", atm_family_name(ck.cfg.family));
    }
    s->has_adam = ck.m && ck.v;
    if (ck.calib && ck.calib_len) {
        s->calib = (uint8_t *)malloc(ck.calib_len);
        if (s->calib) { memcpy(s->calib, ck.calib, ck.calib_len); s->calib_len = ck.calib_len; }
    }
    atm_ckpt *m = &s->meta;
    snprintf(m->name, sizeof m->name, "%s", ck.name);
    m->has_data = ck.has_data;
    memcpy(m->data_path, ck.data_path, sizeof m->data_path);
    memcpy(m->valid_path, ck.valid_path, sizeof m->valid_path);
    m->max_bytes = ck.max_bytes;
    m->split = ck.split;
    m->elapsed_s = ck.elapsed_s;
    atm_ckpt_free(&ck);
    return 0;
}

/* ---- packed model (`.atome`) for the integer engine ---- */

/* Exports the current weights (atome family) as a container into the
 * session's image (see atome_save); returns its length or -1. encoding:
 * 1 ATOME01, 2 ATOME02; window 0 = training seq. Calibration as `atome
 * export`: the calibration sample of calib[calib_len] when given (at the
 * export window), else the statistics a saved checkpoint would carry
 * (session_calib), else provable bounds only. */
API double atome_export(session *s, int encoding, int window, const uint8_t *calib, size_t calib_len) {
    if (!s->tr) FAIL(s, "no model (build or load one first)");
    const atm_layout *L = &s->tr->L;
    if (L->cfg.family != ATM_FAMILY_ATOME) FAIL(s, "only the atome family can be packed (this is a %s model)", atm_family_name(L->cfg.family));
    int seq = s->tr->opt.seq;
    if (window <= 0) {
        int64_t rw = atm_config_run_window(&L->cfg, seq);
        if (rw > ATM_MAX_WINDOW) FAIL(s, "the training seq %d exceeds the engine's %d positions; give a window", seq, ATM_MAX_WINDOW);
        window = (int)rw;
    }
    atm_calib_stats st;
    atm_export_opts o = { encoding, window, seq <= ATM_MAX_WINDOW ? seq : 0, NULL };
    int have;
    if (calib_len) have = atm_calib_sample(L, s->tr->w, calib, calib_len, window, &st, s->err, sizeof s->err) ? -1 : 1;
    else have = session_calib(s, &st);
    if (have < 0) return -1;
    if (have) o.calib = &st;
    uint8_t *out = NULL;
    size_t len = 0;
    if (atm_export_atome(L, s->tr->w, &o, &out, &len, s->err, sizeof s->err)) return -1;
    free(s->image);
    s->image = out;
    s->image_len = len;
    return (double)len;
}

/* The float model's parameter count for a container's shape, as `atome
 * params` gives it (the container stores fewer values: the SSM output vector
 * is folded into its input weights at export); -1 if the trainer has no
 * layout for it. For atome_engine_stat (wasm/atome_wasm_engine.c), which
 * stays engine-only. */
double atome_shape_params(const atm_mconfig *c) {
    size_t n = atm_export_float_params(c);
    return n ? (double)n : -1;
}

/* ---- float generation (what `atome generate --model CKPT` does) ---- */

/* The settings check alone (no model needed; the Node CLI validates its
 * flags before it reads the model, as the native CLI does): 0 or -2, the
 * reason in atome_settings_error(). */
static char settings_err[200];
/* The shared generation limits: 0 n max, 1 n default, 2 seed default (core/sampler.h), 3 the largest window (container.h). */
API double atome_gen_limit(int which) {
    return which == 0 ? (double)ATM_GEN_N_MAX : which == 1 ? (double)ATM_GEN_N_DEFAULT :
           which == 2 ? (double)ATM_GEN_SEED_DEFAULT : (double)ATM_MAX_WINDOW;
}

API int atome_settings_check(const char *temperature, const char *top_k, const char *top_p) {
    atm_sampler_cfg c;
    return atm_sampler_settings_why(&c, temperature, top_k, top_p, settings_err, sizeof settings_err) ? -2 : 0;
}
API const char *atome_settings_error(void) { return settings_err; }

/* Starts a generator on the current weights; window 0 = the default;
 * settings as decimal text (NULL = default). */
API int atome_gen_begin(session *s, int window, const char *temperature, const char *top_k, const char *top_p,
                        uint32_t seed) {
    if (!s->tr) FAIL(s, "no model (build or load one first)");
    gen_clear(s);
    atm_sampler_cfg c;   /* the settings texts, by core/sampler.h's one parser */
    if (atm_sampler_settings_why(&c, temperature, top_k, top_p, s->err, sizeof s->err)) return -2;
    const atm_layout *L = &s->tr->L;
    if (window <= 0) window = (int)atm_config_run_window(&L->cfg, s->tr->opt.seq);
    if (L->cfg.family == ATM_FAMILY_VANILLA && window > L->cfg.max_seq)
        FAIL_ARG(s, "--window %d exceeds the model's %d learned positions", window, (int)L->cfg.max_seq);
    if (L->cfg.vocab > 256) FAIL(s, "vocabularies above 256 bytes are not supported");
    s->gfam = s->tr->fam;
    if (!s->gfam->gen_new) FAIL(s, "the %s family has no generator", atm_family_name(L->cfg.family));
    s->gw = (float *)malloc(L->n_params * sizeof(float));
    if (s->gw) {
        atm_quantize_layout(L, atm_trainer_quant(s->tr), s->tr->w, s->gw);
        s->gen = s->gfam->gen_new(L, s->gw, window);
    }
    if (!s->gen) { gen_clear(s); FAIL(s, "out of memory for the generator"); }
    s->fgen.step = s->gfam->gen_step;
    s->fgen.gen = s->gen;
    s->fgen.V = L->cfg.vocab;
    s->gcfg = c;
    atm_gen_init(&s->gg, &atm_float_gen_src, &s->fgen, L->cfg.vocab, &s->gcfg, seed, s->order);
    return 0;
}

/* Feeds prompt bytes (n = 0: one '\n', as the CLI). */
API int atome_gen_feed(session *s, const uint8_t *p, size_t n) {
    if (!s->gen) FAIL(s, "no generator (call gen_begin first)");
    int V = s->tr->L.cfg.vocab;
    for (size_t i = 0; i < n; i++)
        if (p[i] >= V) FAIL_ARG(s, "prompt byte 0x%02X is outside the model's vocabulary of %d", p[i], V);
    atm_gen_prompt(&s->gg, p, n);
    return 0;
}

/* Samples n bytes into out with the one generator (core/generate.h): a
 * sampled byte is fed back only when the next one is asked for, so this
 * does exactly the CLI's work and calls may be split anywhere. n or -1. */
API int atome_gen_next(session *s, uint8_t *out, int n) {
    if (!s->gen || !s->gg.logits) FAIL(s, "no prompt fed (call gen_feed first)");
    for (int i = 0; i < n; i++) out[i] = (uint8_t)atm_gen_next(&s->gg);
    return n;
}

/* The kernel hooks for tests and benchmarks are in wasm/atome_wasm_hooks.c. */
