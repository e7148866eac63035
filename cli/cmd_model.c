/* cli/cmd_model.c — `atome params` (config -> parameter table as JSON) and
 * `atome init` (random-init checkpoint, the same weights `train` starts from). */
#include "cli.h"
#include "core/train/shape.h"
#include <stdlib.h>
#include <string.h>

#define N_MAX_OPTS 24

/* params' and init's flags: their own opts[0..*n), then the shape overrides
 * (*n becomes the whole count); parsed, with --config required. CLI_OK, or
 * the error printed. */
static int parse_shaped(const char *cmd, int argc, char **argv, cli_opt *opts, int *n, cli_shape *shape) {
    *n += cli_shape_opts(shape, opts + *n);
    int rc = cli_parse(cmd, argc, argv, opts, *n);
    if (rc) return rc;
    if (!cli_seen(opts, *n, "config")) return cli_err(CLI_USAGE, "%s: --config is required", cmd);
    return CLI_OK;
}

int cmd_params(int argc, char **argv) {
    const char *config = NULL, *quant_s = NULL;
    cli_shape shape;
    cli_opt opts[N_MAX_OPTS] = {
        { "config", OPT_STR, &config, 0, 0, 0, 0 },
        { "quant",  OPT_STR, &quant_s, 0, 0, 0, 0 },
    };
    int n = 2;
    int rc = parse_shaped("params", argc, argv, opts, &n, &shape);
    if (rc) return rc;
    atm_config c;
    if ((rc = cli_build_config("params", config, &shape, opts, n, &c))) return rc;
    int32_t quant;
    if ((rc = cli_quant("params", quant_s, c.family, &quant))) return rc;
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
        fprintf(f, ",\"heads\":%d,\"d_head\":%d,\"d_ff\":%d,\"max_seq\":%d,\"pos\":\"%s\"", (int)c.n_heads, (int)c.d_head, (int)c.d_ff, (int)c.max_seq,
                cli_pos_name(c.pos));
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
    int rc = parse_shaped("init", argc, argv, opts, &n, &shape);
    if (rc) return rc;
    if (!cli_seen(opts, n, "seed")) return cli_err(CLI_USAGE, "init: --seed is required");
    if (!out || !*out) return cli_err(CLI_USAGE, "init: --out is required");
    atm_config c;
    if ((rc = cli_build_config("init", config, &shape, opts, n, &c))) return rc;
    atm_ckpt ck;
    atm_ckpt_init(&ck);
    ck.cfg = c;
    snprintf(ck.name, sizeof ck.name, "%s", config);
    if ((rc = cli_quant("init", quant_s, c.family, &ck.opt.quant))) return rc;
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

/* ---- atome match: the shape matcher of core/train/shape.h on the command
 * line, listing every candidate within a tolerance ---- */

typedef struct { atm_config c; long params; double err; } match_row;

static void print_shape(FILE *f, const match_row *r, long target) {
    const atm_config *c = &r->c;
    fprintf(f, "{\"layers\":%d,\"d_model\":%d,\"d_ff\":%d,\"ffn_ratio\":%d", (int)c->n_layers, (int)c->d_model,
            (int)c->d_ff, (int)(c->d_ff / c->d_model));
    if (c->family == ATM_FAMILY_VANILLA) fprintf(f, ",\"heads\":%d,\"d_head\":%d", (int)c->n_heads, (int)c->d_head);
    else fprintf(f, ",\"d_inner\":%d", (int)c->d_inner);
    fprintf(f, ",\"params\":%ld,\"delta\":%ld,\"error\":", r->params, r->params - target);
    cli_json_num(f, r->err);
    fputc('}', f);
}

/* The listed candidates: within the tolerance and the --layers / --ffn-ratio filters. */
typedef struct {
    long target;
    double tol;
    int64_t layers, ratio;
    match_row *rows;
    size_t n, cap;
    int oom;
} match_list;

static void collect(void *ctx, const atm_config *c, long params) {
    match_list *m = ctx;
    if ((m->layers && c->n_layers != m->layers) || (m->ratio && c->d_ff != m->ratio * c->d_model)) return;
    double err = ((double)params - (double)m->target) / (double)m->target;
    if (err > m->tol || err < -m->tol || m->oom) return;
    if (m->n == m->cap) {
        size_t cap = m->cap ? 2 * m->cap : 64;
        match_row *nr = (match_row *)realloc(m->rows, cap * sizeof *nr);
        if (!nr) { m->oom = 1; return; }
        m->rows = nr; m->cap = cap;
    }
    m->rows[m->n].c = *c; m->rows[m->n].params = params; m->rows[m->n].err = err;
    m->n++;
}

/* By depth, then by |error| (the grid's order on ties: a stable insertion sort). */
static void sort_rows(match_row *rows, size_t n) {
    for (size_t i = 1; i < n; i++) {
        match_row r = rows[i];
        double ae = r.err < 0 ? -r.err : r.err;
        size_t j = i;
        for (; j > 0; j--) {
            const match_row *p = &rows[j - 1];
            double pe = p->err < 0 ? -p->err : p->err;
            if (p->c.n_layers < r.c.n_layers || (p->c.n_layers == r.c.n_layers && pe <= ae)) break;
            rows[j] = rows[j - 1];
        }
        rows[j] = r;
    }
}

static int print_match(int fam, const atm_match_opts *mo, const match_list *m, int mrc, const match_row *lib) {
    size_t bi = 0;      /* closest listed: first in grid order on ties, so the first of the smallest |error| */
    for (size_t i = 1; i < m->n; i++) {
        double ae = m->rows[i].err < 0 ? -m->rows[i].err : m->rows[i].err, be = m->rows[bi].err < 0 ? -m->rows[bi].err : m->rows[bi].err;
        if (ae < be) bi = i;
    }
    FILE *f = stdout;
    fprintf(f, "{\"family\":\"%s\",\"target\":%ld,\"tol\":", atm_family_name(fam), m->target);
    cli_json_num(f, m->tol);
    if (fam == ATM_FAMILY_VANILLA)
        fprintf(f, ",\"max_seq\":%d,\"heads\":%d,\"pos\":\"%s\"", (int)mo->max_seq, (int)mo->n_heads,
                cli_pos_name(mo->pos));
    fprintf(f, ",\"count\":%zu,\"closest\":", m->n);
    if (m->n) print_shape(f, &m->rows[bi], m->target); else fputs("null", f);
    fputs(",\"library\":", f);
    if (mrc >= 0) print_shape(f, lib, m->target); else fputs("null", f);
    fputs(",\"shapes\":[", f);
    for (size_t i = 0; i < m->n; i++) { if (i) fputc(',', f); print_shape(f, &m->rows[i], m->target); }
    fputs("]}\n", f);
    if (fflush(f) || ferror(f)) return cli_err(CLI_RUNTIME, "match: cannot write to stdout");
    if (!m->n) return cli_err(CLI_RUNTIME, "match: no %s shape within %g of %ld parameters", atm_family_name(fam), m->tol, m->target);
    return CLI_OK;
}

int cmd_match(int argc, char **argv) {
    const char *family_s = NULL, *pos_s = NULL;
    int64_t params = 0, max_seq = 64, layers = 0, heads = 4, ratio = 0;
    double tol = 0.02;
    cli_opt opts[] = {
        { "family",    OPT_STR,   &family_s, 0, 0, 0, 0 },
        { "params",    OPT_INT,   &params, 1, 1e9, 0, 0 },
        { "max-seq",   OPT_INT,   &max_seq, 2, 65536, 0, 0 },
        { "tol",       OPT_FLOAT, &tol, 0, 10, 0, 0 },
        { "layers",    OPT_INT,   &layers, 1, 64, 0, 0 },
        { "heads",     OPT_INT,   &heads, 1, 64, 0, 0 },
        { "ffn-ratio", OPT_INT,   &ratio, 1, 4, 0, 0 },
        { "pos",       OPT_STR,   &pos_s, 0, 0, 0, 0 },
    };
    int n = (int)(sizeof opts / sizeof opts[0]);
    int rc = cli_parse("match", argc, argv, opts, n);
    if (rc) return rc;
    if (!family_s) return cli_err(CLI_USAGE, "match: --family is required (vanilla or gssm)");
    if (!cli_seen(opts, n, "params")) return cli_err(CLI_USAGE, "match: --params is required");
    int fam = atm_family_from_name(family_s);
    if (fam != ATM_FAMILY_VANILLA && fam != ATM_FAMILY_GSSM)
        return cli_err(CLI_USAGE, "match: --family must be vanilla or gssm (got '%s'; the atome family has no matcher)", family_s);
    atm_match_opts mo;
    atm_match_defaults(fam, &mo);
    if (pos_s) {
        if (fam != ATM_FAMILY_VANILLA) return cli_err(CLI_USAGE, "match: --pos applies to the vanilla family only");
        if ((rc = cli_pos("match", pos_s, &mo.pos))) return rc;
    }
    if (fam == ATM_FAMILY_GSSM && (cli_seen(opts, n, "max-seq") || cli_seen(opts, n, "heads")))
        return cli_err(CLI_USAGE, "match: --max-seq and --heads apply to the vanilla family only");
    if (fam == ATM_FAMILY_VANILLA) { mo.max_seq = (int32_t)max_seq; mo.n_heads = (int32_t)heads; mo.d_step = (int32_t)heads; }
    if (layers > mo.l_max) mo.l_max = (int32_t)layers;
    /* the library's single answer over the whole grid, and the grid listed */
    match_row lib;
    memset(&lib, 0, sizeof lib);
    int mrc = atm_match_shape(fam, (long)params, &lib.c, &lib.params, &mo);
    lib.err = ((double)lib.params - (double)params) / (double)params;
    match_list m = { (long)params, tol, layers, ratio, NULL, 0, 0, 0 };
    if (atm_match_each(fam, &mo, collect, &m) != 0) return cli_err(CLI_USAGE, "match: unusable options");
    if (m.oom) { free(m.rows); return cli_err(CLI_RUNTIME, "match: out of memory"); }
    sort_rows(m.rows, m.n);
    rc = print_match(fam, &mo, &m, mrc, &lib);
    free(m.rows);
    return rc;
}
