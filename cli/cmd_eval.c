/* cli/cmd_eval.c — `atome eval` (held-out cross-entropy as one JSON line) and
 * `atome generate` (N sampled bytes on stdout, nothing else).
 *
 * Both take a float checkpoint or a packed `.atome` container (recognised by
 * its magic). A checkpoint runs on the float model with its quantiser (a
 * ternary model on its quantised weights); a container runs on the integer
 * engine (core/engine.h). generate samples with the fixed-point sampler of
 * core/sampler.h on both paths (float logits are rounded to Q16 first), with
 * the settings parsed from their text by the core parser, so a container
 * gives the same bytes as the wasm and firmware front ends. */
#include "cli.h"
#include "core/engine.h"
#include "core/explain.h"
#include <stdlib.h>
#include <string.h>

/* Eval batch: the result does not depend on it (each chunk is scored on its
 * own); 16 matches the training batch so the activation memory is familiar. */
#define EVAL_BATCH 16

static int load_model(const char *cmd, const char *path, atm_ckpt *ck) {
    char why[600];
    int rc = atm_ckpt_read(path, ck, why, sizeof why);
    if (rc) return cli_err(CLI_RUNTIME, "%s: %s", cmd, why);
    return CLI_OK;
}

/* A bad model file is reported before a missing option: the file is opened
 * (a container validated, a checkpoint parsed) as the command will open it. */
static int check_model(const char *cmd, const char *path) {
    if (cli_sniff(path) == CLI_FILE_CONTAINER) {
        uint8_t *blob = NULL;
        size_t len = 0;
        atm_model m;
        int rc = cli_open_container(cmd, path, &blob, &len, &m);
        free(blob);
        return rc;
    }
    atm_ckpt ck;
    int rc = load_model(cmd, path, &ck);
    if (!rc) atm_ckpt_free(&ck);
    return rc;
}

/* window 0: a float checkpoint (no "window" key); rs: --router */
static int print_eval(const atm_eval_result *r, size_t chunks, int64_t seq, int64_t window, const atm_router_stats *rs) {
    FILE *f = stdout;
    fputs("{\"nats_per_byte\":", f); cli_json_num(f, r->nats_per_byte);
    fputs(",\"bpb\":", f); cli_json_num(f, r->bpb);
    fputs(",\"ppl\":", f); cli_json_num(f, r->ppl);
    fprintf(f, ",\"bytes\":%llu,\"chunks\":%zu,\"seq\":%lld", (unsigned long long)r->bytes, chunks, (long long)seq);
    if (window > 0) fprintf(f, ",\"window\":%lld", (long long)window);
    if (rs) {
        /* per layer [conv, ssm, attn] mean weights, and the mean entropy */
        fputs(",\"router\":[", f);
        for (int l = 0; l < rs->layers; l++) {
            fputs(l ? ",[" : "[", f);
            for (int p = 0; p < 3; p++) { if (p) fputc(',', f); cli_json_num(f, rs->weight[l][p]); }
            fputc(']', f);
        }
        fputs("],\"router_entropy\":[", f);
        for (int l = 0; l < rs->layers; l++) { if (l) fputc(',', f); cli_json_num(f, rs->entropy[l]); }
        fprintf(f, "],\"router_positions\":%llu", (unsigned long long)rs->positions);
    }
    fputs("}\n", f);
    if (fflush(f) || ferror(f)) return cli_err(CLI_RUNTIME, "eval: cannot write to stdout");
    return CLI_OK;
}

/* The held-out chunks of data: the first max_bytes (0: all), cut into
 * seq-byte chunks, the last (1 - split) of them (split 0: every chunk).
 * CLI_OK, or the error printed with nothing to free. */
static int eval_data(const char *data, int64_t max_bytes, double split, int64_t seq, atm_corpus *corpus, atm_chunks *ch) {
    char why[600];
    if (atm_corpus_load(data, (uint64_t)max_bytes, corpus, why, sizeof why)) return cli_err(CLI_RUNTIME, "eval: %s", why);
    int rc;
    if (split > 0.0) rc = atm_chunks_split(corpus, (int)seq, split, NULL, ch, why, sizeof why);
    else rc = atm_chunks_all(corpus, (int)seq, ch, why, sizeof why);
    if (rc) {
        atm_corpus_free(corpus);
        return cli_err(CLI_RUNTIME, "eval: '%s': %s", data, why);
    }
    return CLI_OK;
}

/* eval of a container with the integer engine. seq 0: the container's
 * training seq (its default window if unknown); window 0: the container's
 * stored window (the one generate and the firmware default to), or seq - 1
 * if that is smaller, so a default export (window = training seq) sees every
 * position of a chunk, as in the float evaluation. split 0: every chunk. */
static int eval_packed(const char *model, const char *data, int64_t max_bytes, double split, int64_t seq, int64_t window,
                       int router) {
    uint8_t *blob = NULL;
    size_t len = 0;
    atm_model m;
    int rc = cli_open_engine_model("eval", model, &blob, &len, &m, NULL);
    if (rc) return rc;
    const int window_given = window != 0;
    atm_eval_defaults(&m.cfg, &seq, &window);
    if (!window_given && window > ATM_MAX_WINDOW) {
        free(blob);
        return cli_err(CLI_USAGE, "eval: --seq %lld needs a window of %lld positions; the engine allows %d (give --window)",
                       (long long)seq, (long long)window, ATM_MAX_WINDOW);
    }
    atm_corpus corpus;
    atm_chunks ch;
    if ((rc = eval_data(data, max_bytes, split, seq, &corpus, &ch))) {
        free(blob);
        return rc;
    }
    char why[600];
    atm_eval_result r;
    atm_router_stats rs;
    rc = atm_engine_eval_router(blob, len, &ch, (int)window, &r, router ? &rs : NULL, why, sizeof why);
    size_t chunks = ch.n;
    atm_corpus_free(&corpus);
    free(blob);
    if (rc) return cli_err(CLI_RUNTIME, "eval: %s", why);
    return print_eval(&r, chunks, seq, window, router ? &rs : NULL);
}

/* eval of a checkpoint on the float model with its quantiser. split 0:
 * every chunk; seq 0: the checkpoint's training seq. */
static int eval_float(const char *model, const char *data, int64_t max_bytes, double split, int64_t seq, int64_t batch,
                      int router) {
    atm_ckpt ck;
    int rc = load_model("eval", model, &ck);
    if (rc) return rc;
    if (router && ck.cfg.family != ATM_FAMILY_ATOME) {
        int fam = ck.cfg.family;
        atm_ckpt_free(&ck);
        return cli_err(CLI_USAGE, "eval: --router needs an atome-family model (this checkpoint is %s)", atm_family_name(fam));
    }
    if (seq == 0) seq = ck.opt.seq;
    if (ck.cfg.family == ATM_FAMILY_VANILLA && seq - 1 > ck.cfg.max_seq) {
        atm_ckpt_free(&ck);
        return cli_err(CLI_USAGE, "eval: --seq %lld needs %lld positions; the model has max-seq %d",
                       (long long)seq, (long long)seq - 1, (int)ck.cfg.max_seq);
    }
    if ((int64_t)batch * (seq - 1) > ((int64_t)1 << 24)) batch = ((int64_t)1 << 24) / (seq - 1);
    atm_corpus corpus;
    atm_chunks ch;
    if ((rc = eval_data(data, max_bytes, split, seq, &corpus, &ch))) {
        atm_ckpt_free(&ck);
        return rc;
    }
    char why[600];
    atm_layout L;
    atm_eval_result r;
    atm_router_stats rs;
    rc = atm_layout_build(&ck.cfg, &L) ? -1 : atm_eval_chunks_router(&L, ck.w, cli_ckpt_quant(&ck), &ch, (int)batch, &r,
                                                                      router ? &rs : NULL, why, sizeof why);
    if (rc) snprintf(why, sizeof why, "%s", "evaluation failed (model family not built or out of memory)");
    size_t chunks = ch.n;
    atm_corpus_free(&corpus);
    atm_ckpt_free(&ck);
    if (rc) return cli_err(CLI_RUNTIME, "eval: %s", why);
    return print_eval(&r, chunks, seq, 0, router ? &rs : NULL);
}

int cmd_eval(int argc, char **argv) {
    const char *model = NULL, *data = NULL;
    int64_t max_bytes = 0, seq = 0, batch = EVAL_BATCH, window = 0, threads = 1;
    int router = 0;
    double split = 0.9;
    cli_opt opts[] = {
        { "model",     OPT_STR,   &model, 0, 0, 0, 0 },
        { "data",      OPT_STR,   &data, 0, 0, 0, 0 },
        { "max-bytes", OPT_INT,   &max_bytes, 1, 4.0e18, 0, 0 },
        { "split",     OPT_FLOAT, &split, 0, 1, 1, 0 },
        { "seq",       OPT_INT,   &seq, 2, 65537, 0, 0 },
        { "batch",     OPT_INT,   &batch, 1, 65536, 0, 0 },
        { "window",    OPT_INT,   &window, 1, ATM_MAX_WINDOW, 0, 0 },
        { "router",    OPT_FLAG,  &router, 0, 0, 0, 0 },
        { "threads",   OPT_INT,   &threads, 1, ATM_THREADS_MAX, 0, 0 },
    };
    int n = (int)(sizeof opts / sizeof opts[0]);
    int rc = cli_parse("eval", argc, argv, opts, n);
    if (rc) return rc;
    cli_threads(cli_seen(opts, n, "threads"), threads);
    if (!model) return cli_err(CLI_USAGE, "eval: --model is required");
    if ((rc = check_model("eval", model))) return rc;
    if (!data) return cli_err(CLI_USAGE, "eval: --data is required");
    if (cli_seen(opts, n, "split") && split >= 1.0)
        return cli_err(CLI_USAGE, "eval: --split must be a number in (0, 1) (got %g)", split);
    const double split_given = cli_seen(opts, n, "split") ? split : 0.0;
    const int64_t seq_given = cli_seen(opts, n, "seq") ? seq : 0;
    if (cli_sniff(model) == CLI_FILE_CONTAINER)
        return eval_packed(model, data, max_bytes, split_given, seq_given, cli_seen(opts, n, "window") ? window : 0, router);
    if (cli_seen(opts, n, "window"))
        return cli_err(CLI_USAGE, "eval: --window applies to packed .atome models only");
    return eval_float(model, data, max_bytes, split_given, seq_given, batch, router);
}

static int hexval(int c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* stdout as the generator's output: nonzero (stop) once a write fails */
static int emit_stdout(void *ectx, int b) {
    (void)ectx;
    return putchar(b) == EOF;
}

/* The n bytes the one generator (core/generate.h) draws after the prompt,
 * on stdout. */
static int sample_loop(const atm_gen_src *src, void *ctx, int V, const uint8_t *pbytes, size_t plen,
                       int64_t nbytes, const atm_sampler_cfg *sc, uint32_t seed) {
    uint8_t scratch[ATM_MAX_VOCAB];
    atm_gen g;
    atm_gen_init(&g, src, ctx, V, sc, seed, scratch);
    atm_gen_prompt(&g, pbytes, plen);
    atm_gen_run(&g, (uint64_t)nbytes, emit_stdout, NULL);
    if (fflush(stdout) || ferror(stdout)) return cli_err(CLI_RUNTIME, "generate: cannot write to stdout");
    return CLI_OK;
}

/* The integer engine with a router trace of every step ("why this byte"). */
typedef struct {
    atm_engine *e;
    int32_t trace[64 * 3];
} traced_engine;

static const int32_t *traced_step(void *ctx, int byte) {
    traced_engine *t = (traced_engine *)ctx;
    return atm_engine_step_traced(t->e, byte, t->trace);
}
static const atm_gen_src traced_src = { traced_step, 0, 0, 0 };

/* generate --router-json's output: each byte on stdout and one
 * core/explain.h JSON line for it (the step whose logits it was drawn
 * from) in a growing buffer. */
typedef struct {
    const atm_gen *g;
    const traced_engine *t;
    int L;
    char *text;
    size_t tlen, tcap;
    int oom;
} explain_out;

static int emit_explained(void *ectx, int b) {
    explain_out *o = (explain_out *)ectx;
    char line[ATM_EXPLAIN_JSON_MAX];
    atm_explain_t x;
    atm_explain(o->t->trace, o->L, o->g->logits, o->g->V, &x);
    size_t n = atm_explain_json(line, sizeof line, o->g->count - 1u, b, &x);
    if (o->tlen + n > o->tcap) {
        size_t nc = o->tcap ? o->tcap * 2 : 1 << 16;
        while (nc < o->tlen + n) nc *= 2;
        char *nt = (char *)realloc(o->text, nc);
        if (!nt) { o->oom = 1; return 1; }
        o->text = nt; o->tcap = nc;
    }
    memcpy(o->text + o->tlen, line, n);
    o->tlen += n;
    return putchar(b) == EOF;
}

/* generate with --router-json: the same samples as sample_loop (the same
 * generator on the traced step), plus one JSON line per generated byte;
 * the lines go to `path` atomically once every byte is out. */
static int explain_loop(atm_engine *e, const char *path, const uint8_t *pbytes, size_t plen, int64_t nbytes,
                        const atm_sampler_cfg *sc, uint32_t seed) {
    traced_engine t = { e, { 0 } };
    uint8_t scratch[ATM_MAX_VOCAB];
    atm_gen g;
    atm_gen_init(&g, &traced_src, &t, (int)e->m->cfg.vocab, sc, seed, scratch);
    explain_out o = { &g, &t, (int)e->m->cfg.n_layers, NULL, 0, 0, 0 };
    atm_gen_prompt(&g, pbytes, plen);
    atm_gen_run(&g, (uint64_t)nbytes, emit_explained, &o);
    int rc = CLI_OK;
    if (o.oom) rc = cli_err(CLI_RUNTIME, "generate: out of memory for --router-json");
    else if (fflush(stdout) || ferror(stdout)) rc = cli_err(CLI_RUNTIME, "generate: cannot write to stdout");
    if (rc == CLI_OK) {
        char why[512];
        if (atm_write_atomic(path, o.text ? o.text : "", o.tlen, why, sizeof why))
            rc = cli_err(CLI_RUNTIME, "generate: --router-json: %s", why);
    }
    free(o.text);
    return rc;
}

static int generate_packed(const char *model, const uint8_t *pbytes, size_t plen, int64_t nbytes,
                           const atm_sampler_cfg *sc, uint32_t seed, int64_t window, const char *router_json) {
    uint8_t *blob = NULL;
    size_t len = 0;
    atm_model m;
    int rc = cli_open_engine_model("generate", model, &blob, &len, &m, NULL);
    if (rc) return rc;
    if (window > ATM_MAX_WINDOW) {
        free(blob);
        return cli_err(CLI_USAGE, "generate: --window %lld exceeds the engine's %d positions", (long long)window, ATM_MAX_WINDOW);
    }
    for (size_t i = 0; i < plen; i++)
        if (pbytes[i] >= (unsigned)m.cfg.vocab) {
            unsigned b = pbytes[i];
            free(blob);
            return cli_err(CLI_USAGE, "generate: prompt byte 0x%02X is outside the model's vocabulary of %d", b, (int)m.cfg.vocab);
        }
    size_t ab = atm_engine_arena_bytes(&m, (int)window);
    void *arena = ab ? malloc(ab) : NULL;
    atm_engine e;
    if (!arena || atm_engine_init(&e, &m, (int)window, arena, ab) != ATM_OK) {
        free(arena); free(blob);
        return cli_err(CLI_RUNTIME, "generate: out of memory for the engine arena");
    }
    if (!router_json) rc = sample_loop(ATM_GEN_ENGINE, &e, (int)m.cfg.vocab, pbytes, plen, nbytes, sc, seed);
    else rc = explain_loop(&e, router_json, pbytes, plen, nbytes, sc, seed);
    free(arena);
    free(blob);
    return rc;
}

/* The prompt bytes from --prompt or --prompt-hex (an empty prompt is one
 * '\n'); *out malloc'd. CLI_OK or the error printed. */
static int prompt_bytes(const char *prompt, const char *prompt_hex, uint8_t **out, size_t *len) {
    size_t plen;
    uint8_t *pb;
    if (prompt_hex) {
        size_t hl = strlen(prompt_hex);
        if (hl % 2) return cli_err(CLI_USAGE, "generate: --prompt-hex needs an even number of hex digits");
        plen = hl / 2;
        if (!(pb = (uint8_t *)malloc(plen + 1))) return cli_err(CLI_RUNTIME, "generate: out of memory");
        for (size_t i = 0; i < plen; i++) {
            int hi = hexval((unsigned char)prompt_hex[2 * i]), lo = hexval((unsigned char)prompt_hex[2 * i + 1]);
            if (hi < 0 || lo < 0) { free(pb); return cli_err(CLI_USAGE, "generate: --prompt-hex has a non-hex digit"); }
            pb[i] = (uint8_t)(hi * 16 + lo);
        }
    } else {
        plen = strlen(prompt);
        if (!(pb = (uint8_t *)malloc(plen + 1))) return cli_err(CLI_RUNTIME, "generate: out of memory");
        memcpy(pb, prompt, plen);
    }
    if (plen == 0) { pb[0] = '\n'; plen = 1; }
    *out = pb;
    *len = plen;
    return CLI_OK;
}

/* A checkpoint's float generator: the family's gen_step on the effective
 * weights at the window (0: the checkpoint's run window). */
static int generate_float(const char *model, const uint8_t *pbytes, size_t plen, int64_t nbytes,
                          const atm_sampler_cfg *sc, uint32_t seed, int64_t window) {
    atm_ckpt ck;
    int rc = load_model("generate", model, &ck);
    if (rc) return rc;
    if (window == 0) window = atm_config_run_window(&ck.cfg, ck.opt.seq);
    const atm_family *fam = atm_family_get(ck.cfg.family);
    atm_layout L;
    float *weff = NULL;
    atm_float_gen *g = NULL;
    if (ck.cfg.family == ATM_FAMILY_VANILLA && window > ck.cfg.max_seq) {
        rc = cli_err(CLI_USAGE, "generate: --window %lld exceeds the model's %d learned positions", (long long)window, (int)ck.cfg.max_seq);
        goto done;
    }
    for (size_t i = 0; i < plen; i++)
        if (pbytes[i] >= (unsigned)ck.cfg.vocab) {
            rc = cli_err(CLI_USAGE, "generate: prompt byte 0x%02X is outside the model's vocabulary of %d", pbytes[i], (int)ck.cfg.vocab);
            goto done;
        }
    if (!fam || !fam->gen_new || atm_layout_build(&ck.cfg, &L)) {
        rc = cli_err(CLI_RUNTIME, "generate: the %s family has no generator in this build", atm_family_name(ck.cfg.family));
        goto done;
    }
    if (ck.cfg.vocab > ATM_MAX_VOCAB) {
        rc = cli_err(CLI_RUNTIME, "generate: vocabularies above %d bytes are not supported", ATM_MAX_VOCAB);
        goto done;
    }
    weff = (float *)malloc(L.n_params * sizeof(float));
    g = (atm_float_gen *)calloc(1, sizeof *g);
    if (weff && g) {
        atm_quantize_layout(&L, cli_ckpt_quant(&ck), ck.w, weff);
        g->step = fam->gen_step;
        g->V = (int)ck.cfg.vocab;
        g->gen = fam->gen_new(&L, weff, (int)window);
    }
    if (!g || !g->gen) { rc = cli_err(CLI_RUNTIME, "generate: out of memory"); goto done; }
    rc = sample_loop(&atm_float_gen_src, g, g->V, pbytes, plen, nbytes, sc, seed);
    fam->gen_free(g->gen);
done:
    free(g); free(weff); atm_ckpt_free(&ck);
    return rc;
}

int cmd_generate(int argc, char **argv) {
    const char *model = NULL, *prompt = NULL, *prompt_hex = NULL;
    const char *temp_s = NULL, *topk_s = NULL, *topp_s = NULL, *seed_s = NULL, *router_json = NULL;
    int64_t nbytes = ATM_GEN_N_DEFAULT, window = 0;     /* no --n: the shared default length */
    cli_opt opts[] = {
        { "model",       OPT_STR,   &model, 0, 0, 0, 0 },
        { "prompt",      OPT_STR,   &prompt, 0, 0, 0, 0 },
        { "prompt-hex",  OPT_STR,   &prompt_hex, 0, 0, 0, 0 },
        { "n",           OPT_INT,   &nbytes, 0, (double)ATM_GEN_N_MAX, 0, 0 },
        { "temperature", OPT_STR,   &temp_s, 0, 0, 0, 0 },
        { "top-k",       OPT_STR,   &topk_s, 0, 0, 0, 0 },
        { "top-p",       OPT_STR,   &topp_s, 0, 0, 0, 0 },
        { "seed",        OPT_STR,   &seed_s, 0, 0, 0, 0 },
        { "window",      OPT_INT,   &window, 1, 1048576, 0, 0 },
        { "router-json", OPT_STR,   &router_json, 0, 0, 0, 0 },
    };
    int n = (int)(sizeof opts / sizeof opts[0]);
    int rc = cli_parse("generate", argc, argv, opts, n);
    if (rc) return rc;
    if (!model) return cli_err(CLI_USAGE, "generate: --model is required");
    if ((rc = check_model("generate", model))) return rc;
    if (prompt && prompt_hex) return cli_err(CLI_USAGE, "generate: give --prompt or --prompt-hex, not both");
    if (!prompt && !prompt_hex) return cli_err(CLI_USAGE, "generate: --prompt or --prompt-hex is required");
    atm_sampler_cfg sc;
    if ((rc = cli_sampler_settings("generate", temp_s, topk_s, topp_s, &sc))) return rc;
    uint32_t seed = ATM_GEN_SEED_DEFAULT;
    if (seed_s && atm_sampler_parse_uint(seed_s, 4294967295u, &seed))
        return cli_err(CLI_USAGE, "generate: --seed must be an integer in 0..4294967295 (got '%s')", seed_s);
    size_t plen = 0;
    uint8_t *pbytes = NULL;
    if ((rc = prompt_bytes(prompt, prompt_hex, &pbytes, &plen))) return rc;
    if (router_json && !*router_json) rc = cli_err(CLI_USAGE, "generate: --router-json needs a file name");
    else if (cli_sniff(model) == CLI_FILE_CONTAINER) rc = generate_packed(model, pbytes, plen, nbytes, &sc, seed, window, router_json);
    else if (router_json) rc = cli_err(CLI_USAGE, "generate: --router-json reports the integer engine's router: give a .atome model "
                                      "(atome export makes one from a checkpoint)");
    else rc = generate_float(model, pbytes, plen, nbytes, &sc, seed, cli_seen(opts, n, "window") ? window : 0);
    free(pbytes);
    return rc;
}
