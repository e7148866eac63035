/* cli/cmd_eval.c — `atome eval` (held-out cross-entropy as one JSON line) and
 * `atome generate` (N sampled bytes on stdout, nothing else). Both use the
 * checkpoint's quantiser: a ternary model runs on its quantised weights. */
#include "cli.h"
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

int cmd_eval(int argc, char **argv) {
    const char *model = NULL, *data = NULL;
    int64_t max_bytes = 0, seq = 0, batch = EVAL_BATCH;
    double split = 0.9;
    cli_opt opts[] = {
        { "model",     OPT_STR,   &model, 0, 0, 0, 0 },
        { "data",      OPT_STR,   &data, 0, 0, 0, 0 },
        { "max-bytes", OPT_INT,   &max_bytes, 1, 4.0e18, 0, 0 },
        { "split",     OPT_FLOAT, &split, 0, 1, 1, 0 },
        { "seq",       OPT_INT,   &seq, 2, 65537, 0, 0 },
        { "batch",     OPT_INT,   &batch, 1, 65536, 0, 0 },
    };
    int n = (int)(sizeof opts / sizeof opts[0]);
    int rc = cli_parse("eval", argc, argv, opts, n);
    if (rc) return rc;
    if (!model) return cli_err(CLI_USAGE, "eval: --model is required");
    if (!data) return cli_err(CLI_USAGE, "eval: --data is required");
    if (cli_seen(opts, n, "split") && split >= 1.0)
        return cli_err(CLI_USAGE, "eval: --split must be a number in (0, 1) (got %g)", split);
    atm_ckpt ck;
    if ((rc = load_model("eval", model, &ck))) return rc;
    if (!cli_seen(opts, n, "seq")) seq = ck.opt.seq;
    if (ck.cfg.family == ATM_FAMILY_VANILLA && seq - 1 > ck.cfg.max_seq) {
        atm_ckpt_free(&ck);
        return cli_err(CLI_USAGE, "eval: --seq %lld needs %lld positions; the model has max-seq %d",
                       (long long)seq, (long long)seq - 1, (int)ck.cfg.max_seq);
    }
    if ((int64_t)batch * (seq - 1) > ((int64_t)1 << 24)) batch = ((int64_t)1 << 24) / (seq - 1);
    atm_corpus corpus;
    char why[600];
    if (atm_corpus_load(data, (uint64_t)max_bytes, &corpus, why, sizeof why)) {
        atm_ckpt_free(&ck);
        return cli_err(CLI_RUNTIME, "eval: %s", why);
    }
    atm_chunks ch;
    if (cli_seen(opts, n, "split")) rc = atm_chunks_split(&corpus, (int)seq, split, NULL, &ch, why, sizeof why);
    else rc = atm_chunks_all(&corpus, (int)seq, &ch, why, sizeof why);
    if (rc) {
        atm_corpus_free(&corpus);
        atm_ckpt_free(&ck);
        return cli_err(CLI_RUNTIME, "eval: '%s': %s", data, why);
    }
    atm_layout L;
    atm_eval_result r;
    rc = atm_layout_build(&ck.cfg, &L) ? -1 : atm_eval_chunks(&L, ck.w, cli_ckpt_quant(&ck), &ch, (int)batch, &r, why, sizeof why);
    if (rc) snprintf(why, sizeof why, "%s", "evaluation failed (model family not built or out of memory)");
    size_t chunks = ch.n;
    atm_corpus_free(&corpus);
    atm_ckpt_free(&ck);
    if (rc) return cli_err(CLI_RUNTIME, "eval: %s", why);
    FILE *f = stdout;
    fputs("{\"nats_per_byte\":", f); cli_json_num(f, r.nats_per_byte);
    fputs(",\"bpb\":", f); cli_json_num(f, r.bpb);
    fputs(",\"ppl\":", f); cli_json_num(f, r.ppl);
    fprintf(f, ",\"bytes\":%llu,\"chunks\":%zu,\"seq\":%lld}\n", (unsigned long long)r.bytes, chunks, (long long)seq);
    if (fflush(f) || ferror(f)) return cli_err(CLI_RUNTIME, "eval: cannot write to stdout");
    return CLI_OK;
}

static int hexval(int c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

int cmd_generate(int argc, char **argv) {
    const char *model = NULL, *prompt = NULL, *prompt_hex = NULL;
    int64_t nbytes = 0, top_k = 0, window = 0;
    double temperature = 0.0, top_p = 1.0;
    uint32_t seed = 1;
    cli_opt opts[] = {
        { "model",       OPT_STR,   &model, 0, 0, 0, 0 },
        { "prompt",      OPT_STR,   &prompt, 0, 0, 0, 0 },
        { "prompt-hex",  OPT_STR,   &prompt_hex, 0, 0, 0, 0 },
        { "n",           OPT_INT,   &nbytes, 0, 1.0e12, 0, 0 },
        { "temperature", OPT_FLOAT, &temperature, 0, 1000, 0, 0 },
        { "top-k",       OPT_INT,   &top_k, 0, 256, 0, 0 },
        { "top-p",       OPT_FLOAT, &top_p, 0, 1, 1, 0 },
        { "seed",        OPT_U32,   &seed, 0, 4294967295.0, 0, 0 },
        { "window",      OPT_INT,   &window, 1, 1048576, 0, 0 },
    };
    int n = (int)(sizeof opts / sizeof opts[0]);
    int rc = cli_parse("generate", argc, argv, opts, n);
    if (rc) return rc;
    if (!model) return cli_err(CLI_USAGE, "generate: --model is required");
    if (!cli_seen(opts, n, "n")) return cli_err(CLI_USAGE, "generate: --n is required");
    if (prompt && prompt_hex) return cli_err(CLI_USAGE, "generate: give --prompt or --prompt-hex, not both");
    if (!prompt && !prompt_hex) return cli_err(CLI_USAGE, "generate: --prompt or --prompt-hex is required");
    size_t plen;
    uint8_t *pbytes;
    if (prompt_hex) {
        size_t hl = strlen(prompt_hex);
        if (hl % 2) return cli_err(CLI_USAGE, "generate: --prompt-hex needs an even number of hex digits");
        plen = hl / 2;
        pbytes = (uint8_t *)malloc(plen + 1);
        if (!pbytes) return cli_err(CLI_RUNTIME, "generate: out of memory");
        for (size_t i = 0; i < plen; i++) {
            int hi = hexval((unsigned char)prompt_hex[2 * i]), lo = hexval((unsigned char)prompt_hex[2 * i + 1]);
            if (hi < 0 || lo < 0) { free(pbytes); return cli_err(CLI_USAGE, "generate: --prompt-hex has a non-hex digit"); }
            pbytes[i] = (uint8_t)(hi * 16 + lo);
        }
    } else {
        plen = strlen(prompt);
        pbytes = (uint8_t *)malloc(plen + 1);
        if (!pbytes) return cli_err(CLI_RUNTIME, "generate: out of memory");
        memcpy(pbytes, prompt, plen);
    }
    if (plen == 0) { pbytes[0] = '\n'; plen = 1; }

    atm_ckpt ck;
    if ((rc = load_model("generate", model, &ck))) { free(pbytes); return rc; }
    if (!cli_seen(opts, n, "window")) {
        window = ck.opt.seq;
        /* A vanilla model trained at seq = max_seq+1 saw max_seq positions. */
        if (ck.cfg.family == ATM_FAMILY_VANILLA && window > ck.cfg.max_seq) window = ck.cfg.max_seq;
    }
    if (ck.cfg.family == ATM_FAMILY_VANILLA && window > ck.cfg.max_seq) {
        int ms = (int)ck.cfg.max_seq;
        free(pbytes);
        atm_ckpt_free(&ck);
        return cli_err(CLI_USAGE, "generate: --window %lld exceeds the model's %d learned positions", (long long)window, ms);
    }
    for (size_t i = 0; i < plen; i++)
        if (pbytes[i] >= (unsigned)ck.cfg.vocab) {
            int v = (int)ck.cfg.vocab;
            unsigned b = pbytes[i];
            free(pbytes);
            atm_ckpt_free(&ck);
            return cli_err(CLI_USAGE, "generate: prompt byte 0x%02X is outside the model's vocabulary of %d", b, v);
        }
    const atm_family *fam = atm_family_get(ck.cfg.family);
    atm_layout L;
    float *weff = NULL;
    void *gen = NULL;
    if (!fam || !fam->gen_new || atm_layout_build(&ck.cfg, &L)) {
        free(pbytes);
        atm_ckpt_free(&ck);
        return cli_err(CLI_RUNTIME, "generate: the %s family has no generator in this build", atm_family_name(ck.cfg.family));
    }
    weff = (float *)malloc(L.n_params * sizeof(float));
    if (weff) {
        atm_quantize_layout(&L, cli_ckpt_quant(&ck), ck.w, weff);
        gen = fam->gen_new(&L, weff, (int)window);
    }
    if (!gen) {
        free(weff); free(pbytes); atm_ckpt_free(&ck);
        return cli_err(CLI_RUNTIME, "generate: out of memory");
    }
    atm_rng rng;
    atm_rng_seed(&rng, seed);
    const float *logits = NULL;
    for (size_t i = 0; i < plen; i++) logits = fam->gen_step(gen, pbytes[i]);
    int V = (int)ck.cfg.vocab;
    for (int64_t i = 0; i < nbytes; i++) {
        int b = atm_sample_logits(logits, V, (float)temperature, (int)top_k, (float)top_p, &rng);
        if (putchar(b) == EOF) break;
        if (i + 1 < nbytes) logits = fam->gen_step(gen, b);
    }
    fam->gen_free(gen);
    free(weff); free(pbytes); atm_ckpt_free(&ck);
    if (fflush(stdout) || ferror(stdout)) return cli_err(CLI_RUNTIME, "generate: cannot write to stdout");
    return CLI_OK;
}
