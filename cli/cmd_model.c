/* cli/cmd_model.c — `atome params` (config -> parameter table as JSON) and
 * `atome init` (random-init checkpoint, the same weights `train` starts from). */
#include "cli.h"
#include <stdlib.h>
#include <string.h>

#define N_MAX_OPTS 24

int cmd_params(int argc, char **argv) {
    const char *config = NULL, *quant_s = NULL;
    cli_shape shape;
    cli_opt opts[N_MAX_OPTS] = {
        { "config", OPT_STR, &config, 0, 0, 0, 0 },
        { "quant",  OPT_STR, &quant_s, 0, 0, 0, 0 },
    };
    int n = 2;
    n += cli_shape_opts(&shape, opts + n);
    int rc = cli_parse("params", argc, argv, opts, n);
    if (rc) return rc;
    if (!config) return cli_err(CLI_USAGE, "params: --config is required");
    atm_config c;
    if ((rc = cli_build_config("params", config, &shape, opts, n, &c))) return rc;
    int quant = cli_default_quant(c.family);
    if (quant_s && (quant = cli_quant_from_name(quant_s)) < 0)
        return cli_err(CLI_USAGE, "params: --quant must be ternary or fp32 (got '%s')", quant_s);
    atm_layout L;
    if (atm_layout_build(&c, &L)) return cli_err(CLI_RUNTIME, "params: the %s family is not built", atm_family_name(c.family));
    size_t qp = atm_layout_quant_params(&L);
    FILE *f = stdout;
    fputs("{\"config\":", f); cli_json_str(f, config);
    fputs(",\"family\":", f); cli_json_str(f, atm_family_name(c.family));
    fprintf(f, ",\"quant\":\"%s\"", cli_quant_name(quant));
    fprintf(f, ",\"params\":%zu", L.n_params);
    /* Under fp32 nothing is quantised; quant_params counts what ternary would
     * quantise, so both fields describe the shape whatever --quant says. */
    fprintf(f, ",\"quant_params\":%zu,\"fp32_params\":%zu", qp, L.n_params - qp);
    fprintf(f, ",\"vocab\":%d,\"d_model\":%d,\"layers\":%d", (int)c.vocab, (int)c.d_model, (int)c.n_layers);
    switch (c.family) {
    case ATM_FAMILY_ATOME: {
        fprintf(f, ",\"d_head\":%d,\"kernel\":%d,\"attn_top_k\":%d,\"pathways\":\"", (int)c.d_head, (int)c.kernel, (int)c.top_k);
        const char *sep = "";
        if (c.pathways & ATM_PATH_CONV) { fprintf(f, "%sconv", sep); sep = ","; }
        if (c.pathways & ATM_PATH_SSM) { fprintf(f, "%sssm", sep); sep = ","; }
        if (c.pathways & ATM_PATH_ATTN) { fprintf(f, "%sattn", sep); }
        fputc('"', f);
        fprintf(f, ",\"attn_window\":%d", (int)c.attn_window);
        break;
    }
    case ATM_FAMILY_VANILLA:
        fprintf(f, ",\"heads\":%d,\"d_head\":%d,\"d_ff\":%d,\"max_seq\":%d", (int)c.n_heads, (int)c.d_head, (int)c.d_ff, (int)c.max_seq);
        break;
    default:
        fprintf(f, ",\"d_ff\":%d,\"d_inner\":%d", (int)c.d_ff, (int)c.d_inner);
    }
    fputs(",\"tensors\":[", f);
    for (int i = 0; i < L.n_tensors; i++) {
        const atm_tensor *t = &L.t[i];
        fputs(i ? ",{\"name\":" : "{\"name\":", f);
        cli_json_str(f, t->name);
        fprintf(f, ",\"rows\":%d,\"cols\":%d,\"params\":%zu,\"kind\":\"%s\"}", (int)t->rows, (int)t->cols,
                (size_t)t->rows * (size_t)t->cols, t->kind == ATM_TK_QUANT ? "quant" : "fp32");
    }
    fputs("]}\n", f);
    if (fflush(f) || ferror(f)) return cli_err(CLI_RUNTIME, "params: cannot write to stdout");
    return CLI_OK;
}

int cmd_init(int argc, char **argv) {
    const char *config = NULL, *quant_s = NULL, *out = NULL;
    uint32_t seed = 0;
    int64_t seq = 64;
    cli_shape shape;
    cli_opt opts[N_MAX_OPTS] = {
        { "config", OPT_STR, &config, 0, 0, 0, 0 },
        { "quant",  OPT_STR, &quant_s, 0, 0, 0, 0 },
        { "seed",   OPT_U32, &seed, 0, 4294967295.0, 0, 0 },
        { "out",    OPT_STR, &out, 0, 0, 0, 0 },
        { "seq",    OPT_INT, &seq, 2, 65537, 0, 0 },
    };
    int n = 5;
    n += cli_shape_opts(&shape, opts + n);
    int rc = cli_parse("init", argc, argv, opts, n);
    if (rc) return rc;
    if (!config) return cli_err(CLI_USAGE, "init: --config is required");
    if (!cli_seen(opts, n, "seed")) return cli_err(CLI_USAGE, "init: --seed is required");
    if (!out || !*out) return cli_err(CLI_USAGE, "init: --out is required");
    atm_config c;
    if ((rc = cli_build_config("init", config, &shape, opts, n, &c))) return rc;
    atm_ckpt ck;
    atm_ckpt_init(&ck);
    ck.cfg = c;
    snprintf(ck.name, sizeof ck.name, "%s", config);
    ck.opt.quant = cli_default_quant(c.family);
    if (quant_s && (ck.opt.quant = cli_quant_from_name(quant_s)) < 0)
        return cli_err(CLI_USAGE, "init: --quant must be ternary or fp32 (got '%s')", quant_s);
    ck.opt.seed = seed;
    ck.opt.seq = (int32_t)seq;
    if (c.family == ATM_FAMILY_VANILLA && seq - 1 > c.max_seq)
        return cli_err(CLI_USAGE, "init: --seq %lld needs %lld positions; %s has max-seq %d", (long long)seq,
                       (long long)seq - 1, config, (int)c.max_seq);
    char why[256];
    if (atm_train_opts_validate(&ck.opt, why, sizeof why)) return cli_err(CLI_USAGE, "init: %s", why);
    atm_layout L;
    if (atm_layout_build(&c, &L)) return cli_err(CLI_RUNTIME, "init: the %s family is not built", atm_family_name(c.family));
    float *w = (float *)malloc(L.n_params * sizeof(float));
    if (!w) return cli_err(CLI_RUNTIME, "init: out of memory");
    /* The same sequence as atm_trainer_new: seed, then init, then (training
     * would go on to sample batches from the same state). */
    atm_rng_seed(&ck.rng, seed);
    atm_init_params(&L, w, &ck.rng);
    ck.has_state = 1;
    ck.stage = atm_fp_steps(&ck.opt) > 0 ? 0 : 1;
    ck.n_params = L.n_params;
    ck.w = w;
    rc = atm_ckpt_write(out, &ck, why, sizeof why);
    free(w);
    if (rc) return cli_err(CLI_RUNTIME, "init: %s", why);
    return CLI_OK;
}
