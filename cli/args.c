/* cli/args.c — flag parsing, strict number parsing, shape overrides, JSON
 * output helpers and the one-line error printer of the `atome` tool. */
#include "cli.h"
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int cli_err(int code, const char *fmt, ...) {
    char buf[CLI_ERR_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    for (char *p = buf; *p; p++) if ((unsigned char)*p < 0x20 || *p == 0x7F) *p = '?';
    fprintf(stderr, "atome: %s\n", buf);
    fflush(stderr);
    return code;
}

cli_opt *cli_find(cli_opt *opts, int n, const char *name) {
    for (int i = 0; i < n; i++) if (strcmp(opts[i].name, name) == 0) return &opts[i];
    return NULL;
}

int cli_seen(cli_opt *opts, int n, const char *name) {
    cli_opt *o = cli_find(opts, n, name);
    return o && o->seen;
}

static void range_text(const cli_opt *o, char *buf, size_t n) {
    if (o->kind == OPT_FLOAT) {
        if (o->hi >= 1e300) snprintf(buf, n, "a number %s %g", o->lo_open ? ">" : ">=", o->lo);
        else snprintf(buf, n, "a number in %s%g, %g]", o->lo_open ? "(" : "[", o->lo, o->hi);
    } else {
        snprintf(buf, n, "an integer in %.0f..%.0f", o->lo, o->hi);
    }
}

int cli_table_opts(atm_topt_val *vals, cli_opt *opts) {
    for (int i = 0; i < ATM_TO_COUNT; i++) {
        const atm_topt *r = &atm_topts[i];
        vals[i].x = r->def;
        vals[i].i = isfinite(r->def) ? (int64_t)r->def : 0;
        cli_opt o = { r->name, OPT_ROW, &vals[i], 0, 0, 0, 0 };
        opts[i] = o;
    }
    return ATM_TO_COUNT;
}

/* The shape overrides as JSON rows: name, kind (int or str), range, words. */
static void shape_json(FILE *f) {
    cli_shape sh;
    cli_opt o[CLI_SHAPE_OPTS];
    cli_shape_opts(&sh, o);
    fputs(",\"shape\":[", f);
    for (int i = 0; i < CLI_SHAPE_OPTS; i++) {
        fprintf(f, "%s{\"name\":\"%s\",\"kind\":\"%s\"", i ? "," : "", o[i].name, o[i].kind == OPT_INT ? "int" : "str");
        if (o[i].kind == OPT_INT) {
            char want[96];
            range_text(&o[i], want, sizeof want);
            fprintf(f, ",\"min\":%.0f,\"max\":%.0f,\"min_open\":false,\"max_open\":false,\"want\":\"%s\"", o[i].lo, o[i].hi, want);
        }
        fputs("}", f);
    }
    fputs("]", f);
}

/* The option table's JSON, with the shape overrides of `atome train` added
 * ("shape": the model's flags, cli_shape_opts), one line on stdout. */
int cli_print_options_json(void) {
    size_t n = atm_topt_json(NULL, 0) + 1;
    char *buf = (char *)malloc(n);
    if (!buf) return cli_err(CLI_RUNTIME, "out of memory");
    atm_topt_json(buf, n);
    fwrite(buf, 1, n - 2, stdout);   /* without the closing brace */
    free(buf);
    shape_json(stdout);
    fputs("}\n", stdout);
    if (fflush(stdout) || ferror(stdout)) return cli_err(CLI_RUNTIME, "cannot write to stdout");
    return CLI_OK;
}

static int parse_value(const char *cmd, cli_opt *o, const char *v) {
    char want[96];
    if (o->kind == OPT_ROW) {
        const atm_topt *row = atm_topt_find(o->name);
        if (!atm_topt_parse(row, v, (atm_topt_val *)o->dst)) return CLI_OK;
        char label[48], msg[400];
        snprintf(label, sizeof label, "--%s", o->name);
        atm_topt_error(row, label, v, msg, sizeof msg);
        return cli_err(CLI_USAGE, "%s: %s", cmd, msg);
    }
    range_text(o, want, sizeof want);
    if (o->kind == OPT_STR) { *(const char **)o->dst = v; return CLI_OK; }
    if (!*v || *v == ' ' || *v == '\t' || *v == '\n')
        return cli_err(CLI_USAGE, "%s: --%s must be %s (got '%s')", cmd, o->name, want, v);
    char *end = NULL;
    errno = 0;
    if (o->kind == OPT_FLOAT) {
        double x = strtod(v, &end);
        if (*end || errno == ERANGE || !isfinite(x) || x < o->lo || (o->lo_open && x == o->lo) || x > o->hi)
            return cli_err(CLI_USAGE, "%s: --%s must be %s (got '%s')", cmd, o->name, want, v);
        *(double *)o->dst = x;
        return CLI_OK;
    }
    long long x = strtoll(v, &end, 10);
    if (*end || errno == ERANGE || (double)x < o->lo || (double)x > o->hi)
        return cli_err(CLI_USAGE, "%s: --%s must be %s (got '%s')", cmd, o->name, want, v);
    if (o->kind == OPT_U32) *(uint32_t *)o->dst = (uint32_t)x;
    else *(int64_t *)o->dst = (int64_t)x;
    return CLI_OK;
}

int cli_parse(const char *cmd, int argc, char **argv, cli_opt *opts, int n) {
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (strncmp(a, "--", 2) != 0 || !a[2])
            return cli_err(CLI_USAGE, "%s: unexpected argument '%s' (flags start with --; see 'atome %s --help')", cmd, a, cmd);
        const char *name = a + 2;
        const char *eq = strchr(name, '=');
        size_t nl = eq ? (size_t)(eq - name) : strlen(name);
        cli_opt *o = NULL;
        for (int k = 0; k < n; k++)
            if (strlen(opts[k].name) == nl && strncmp(opts[k].name, name, nl) == 0) { o = &opts[k]; break; }
        if (!o) return cli_err(CLI_USAGE, "%s: unknown flag '--%.*s' (see 'atome %s --help')", cmd, (int)nl, name, cmd);
        o->seen = 1;   /* a repeated flag: the last value wins (as argparse) */
        if (o->kind == OPT_FLAG || (o->kind == OPT_ROW && atm_topt_find(o->name)->kind == ATM_TO_KIND_FLAG)) {
            if (eq) return cli_err(CLI_USAGE, "%s: --%s takes no value", cmd, o->name);
            if (o->kind == OPT_FLAG) *(int *)o->dst = 1;
            else { atm_topt_val on = { 1, 1.0 }; *(atm_topt_val *)o->dst = on; }
            continue;
        }
        const char *v;
        if (eq) v = eq + 1;
        else {
            /* A following "--x" is the next flag, not a value: "--data --steps 5"
             * is a missing value. Values that start with "--" use --name=value. */
            if (i + 1 >= argc || strncmp(argv[i + 1], "--", 2) == 0)
                return cli_err(CLI_USAGE, "%s: --%s needs a value", cmd, o->name);
            v = argv[++i];
        }
        int rc = parse_value(cmd, o, v);
        if (rc) return rc;
    }
    return CLI_OK;
}

/* ---- shapes ---- */
int cli_shape_opts(cli_shape *s, cli_opt *opts) {
    memset(s, 0, sizeof *s);
    cli_opt t[CLI_SHAPE_OPTS] = {
        { "d-model",    OPT_INT, &s->d_model, 1, 4096, 0, 0 },
        { "layers",     OPT_INT, &s->layers,  1, 64, 0, 0 },
        { "d-head",     OPT_INT, &s->d_head,  1, 4096, 0, 0 },
        { "heads",      OPT_INT, &s->heads,   1, 4096, 0, 0 },
        { "kernel",     OPT_INT, &s->kernel,  1, 64, 0, 0 },
        { "attn-top-k", OPT_INT, &s->top_k,   1, 1024, 0, 0 },
        { "d-ff",       OPT_INT, &s->d_ff,    1, 16384, 0, 0 },
        { "d-inner",    OPT_INT, &s->d_inner, 1, 16384, 0, 0 },
        { "max-seq",    OPT_INT, &s->max_seq, 2, 65536, 0, 0 },
        { "pathways",   OPT_STR, &s->pathways, 0, 0, 0, 0 },
        { "attn-window", OPT_INT, &s->attn_window, 1, ATM_MAX_WINDOW, 0, 0 },
        { "pos",        OPT_STR, &s->pos, 0, 0, 0, 0 },
    };
    memcpy(opts, t, sizeof t);
    return CLI_SHAPE_OPTS;
}

static int parse_pathways(const char *cmd, const char *s, int32_t *mask) {
    int32_t m = 0;
    const char *p = s;
    while (*p) {
        const char *c = strchr(p, ',');
        size_t len = c ? (size_t)(c - p) : strlen(p);
        int32_t bit = 0;
        if (len == 4 && strncmp(p, "conv", 4) == 0) bit = ATM_PATH_CONV;
        else if (len == 3 && strncmp(p, "ssm", 3) == 0) bit = ATM_PATH_SSM;
        else if (len == 4 && strncmp(p, "attn", 4) == 0) bit = ATM_PATH_ATTN;
        else return cli_err(CLI_USAGE, "%s: --pathways takes a comma list of conv, ssm, attn (got '%s')", cmd, s);
        if (m & bit) return cli_err(CLI_USAGE, "%s: --pathways names '%.*s' twice", cmd, (int)len, p);
        m |= bit;
        if (!c) break;
        p = c + 1;
        if (!*p) return cli_err(CLI_USAGE, "%s: --pathways has a trailing comma (got '%s')", cmd, s);
    }
    if (!m) return cli_err(CLI_USAGE, "%s: --pathways needs at least one of conv, ssm, attn", cmd);
    *mask = m;
    return CLI_OK;
}

/* "unknown config" with the list of known names. */
static int unknown_config(const char *cmd, const char *name) {
    char list[512] = "";
    for (int i = 0; atm_config_names[i]; i++) {
        if (i) strncat(list, ", ", sizeof list - strlen(list) - 1);
        strncat(list, atm_config_names[i], sizeof list - strlen(list) - 1);
    }
    return cli_err(CLI_USAGE, "%s: unknown config '%s' (known: %s)", cmd, name, list);
}

/* Every shape flag given applies to the config's family: CLI_OK, or the
 * error printed. */
static int shape_flags_apply(const char *cmd, int family, cli_opt *opts, int n) {
    static const char *const applies[ATM_N_FAMILIES][CLI_SHAPE_OPTS] = {
        /* atome */   { "d-model", "layers", "d-head", "kernel", "attn-top-k", "pathways", "attn-window" },
        /* vanilla */ { "d-model", "layers", "d-head", "heads", "d-ff", "max-seq", "pos" },
        /* gssm */    { "d-model", "layers", "d-ff", "d-inner" },
    };
    const char *const shape_names[] = { "d-model", "layers", "d-head", "heads", "kernel", "attn-top-k",
                                        "d-ff", "d-inner", "max-seq", "pathways", "attn-window", "pos" };
    for (int i = 0; i < CLI_SHAPE_OPTS; i++) {
        if (!cli_seen(opts, n, shape_names[i])) continue;
        int ok = 0;
        for (int k = 0; k < CLI_SHAPE_OPTS && applies[family][k]; k++)
            if (strcmp(applies[family][k], shape_names[i]) == 0) ok = 1;
        if (!ok) return cli_err(CLI_USAGE, "%s: --%s does not apply to the %s family", cmd, shape_names[i], atm_family_name(family));
    }
    return CLI_OK;
}

/* A vanilla model's heads follow d_model: --d-head or --heads fixes one,
 * the other is d_model divided by it; with neither, the named head count
 * stays. CLI_OK, or the error printed. */
static int vanilla_heads(const char *cmd, const cli_shape *s, cli_opt *opts, int n, atm_config *c) {
    int64_t heads = c->n_heads;
    if (cli_seen(opts, n, "heads")) heads = s->heads;
    if (cli_seen(opts, n, "d-head")) {
        if (c->d_model % s->d_head)
            return cli_err(CLI_USAGE, "%s: --d-head %lld does not divide d-model %d", cmd, (long long)s->d_head, (int)c->d_model);
        int64_t h = c->d_model / s->d_head;
        if (cli_seen(opts, n, "heads") && h != heads)
            return cli_err(CLI_USAGE, "%s: --heads %lld and --d-head %lld disagree with d-model %d", cmd,
                           (long long)heads, (long long)s->d_head, (int)c->d_model);
        heads = h;
    }
    if (heads < 1 || c->d_model % heads)
        return cli_err(CLI_USAGE, "%s: %lld heads do not divide d-model %d", cmd, (long long)heads, (int)c->d_model);
    c->n_heads = (int32_t)heads;
    c->d_head = (int32_t)(c->d_model / heads);
    return CLI_OK;
}

int cli_build_config(const char *cmd, const char *name, cli_shape *s, cli_opt *opts, int n, atm_config *c) {
    if (atm_config_by_name(name, c) != 0) return unknown_config(cmd, name);
    int rc = shape_flags_apply(cmd, c->family, opts, n);
    if (rc) return rc;
    if (cli_seen(opts, n, "d-model")) c->d_model = (int32_t)s->d_model;
    if (cli_seen(opts, n, "layers")) c->n_layers = (int32_t)s->layers;
    if (cli_seen(opts, n, "kernel")) c->kernel = (int32_t)s->kernel;
    if (cli_seen(opts, n, "attn-top-k")) c->top_k = (int32_t)s->top_k;
    if (cli_seen(opts, n, "d-ff")) c->d_ff = (int32_t)s->d_ff;
    if (cli_seen(opts, n, "d-inner")) c->d_inner = (int32_t)s->d_inner;
    if (cli_seen(opts, n, "max-seq")) c->max_seq = (int32_t)s->max_seq;
    if (cli_seen(opts, n, "attn-window")) c->attn_window = (int32_t)s->attn_window;
    if (cli_seen(opts, n, "pos") && (rc = cli_pos(cmd, s->pos, &c->pos))) return rc;
    if (cli_seen(opts, n, "pathways") && (rc = parse_pathways(cmd, s->pathways, &c->pathways))) return rc;
    if (c->family == ATM_FAMILY_ATOME) {
        if (cli_seen(opts, n, "d-head")) c->d_head = (int32_t)s->d_head;
    } else if (c->family == ATM_FAMILY_VANILLA && (rc = vanilla_heads(cmd, s, opts, n, c))) {
        return rc;
    }
    char why[256];
    if (atm_config_validate(c, why, sizeof why))
        return cli_err(CLI_USAGE, "%s: invalid shape for %s: %s", cmd, name, why);
    return CLI_OK;
}

int cli_pos(const char *cmd, const char *s, int32_t *pos) {
    if (strcmp(s, "learned") == 0) *pos = ATM_POS_LEARNED;
    else if (strcmp(s, "none") == 0) *pos = ATM_POS_NONE;
    else if (strcmp(s, "ternary") == 0) *pos = ATM_POS_TERNARY;
    else return cli_err(CLI_USAGE, "%s: --pos must be learned, none or ternary (got '%s')", cmd, s);
    return CLI_OK;
}

const char *cli_pos_name(int pos) {
    return pos == ATM_POS_NONE ? "none" : pos == ATM_POS_TERNARY ? "ternary" : "learned";
}

int cli_quant(const char *cmd, const char *s, int family, int32_t *quant) {
    *quant = cli_default_quant(family);
    if (s && (*quant = cli_quant_from_name(s)) < 0)
        return cli_err(CLI_USAGE, "%s: --quant must be ternary or fp32 (got '%s')", cmd, s);
    return CLI_OK;
}

int cli_quant_from_name(const char *s) {
    if (strcmp(s, "ternary") == 0) return ATM_QUANT_TERNARY;
    if (strcmp(s, "fp32") == 0) return ATM_QUANT_FP32;
    return -1;
}

const char *cli_quant_name(int q) { return q == ATM_QUANT_TERNARY ? "ternary" : "fp32"; }

int cli_default_quant(int family) { return family == ATM_FAMILY_ATOME ? ATM_QUANT_TERNARY : ATM_QUANT_FP32; }

int cli_ckpt_quant(const atm_ckpt *ck) {
    if (ck->has_state && ck->stage == 0 && ck->step < atm_fp_steps(&ck->opt)) return ATM_QUANT_FP32;
    return ck->opt.quant;
}

/* ---- JSON ---- */
void cli_json_num(FILE *f, double x) {
    if (!isfinite(x)) { fputs("null", f); return; }
    fprintf(f, "%.17g", x);
}

void cli_json_float(FILE *f, float x) {
    if (!isfinite(x)) { fputs("null", f); return; }
    char buf[32];
    for (int prec = 6; prec <= 9; prec++) {   /* shortest text that reads back as the same float */
        snprintf(buf, sizeof buf, "%.*g", prec, (double)x);
        if (strtof(buf, NULL) == x) break;
    }
    fputs(buf, f);
}

void cli_json_str(FILE *f, const char *s) {
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\') { fputc('\\', f); fputc(*p, f); }
        else if (*p < 0x20) fprintf(f, "\\u%04x", *p);
        else fputc(*p, f);
    }
    fputc('"', f);
}

double cli_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int cli_threads(int seen, int64_t value) {
    const char *env = getenv("ATOME_THREADS");
    if (seen) return atm_threads_set((int)value);
    if (env && *env) return atm_threads();
    return atm_threads_set(atm_threads_default());
}
