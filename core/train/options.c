/* core/train/options.c — the one table of training options (options.h), its
 * parser, its error words and its JSON. */
#include "options.h"
#include "pool.h"
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OFF(f) offsetof(atm_train_opts, f)
#define IN_OPTS(t, f) t, OFF(f), "atm_train_opts." #f
#define IN_RUN(where) ATM_TO_RUN, 0, where
#define NONE NAN
#define STEPS_MAX 1099511627776.0   /* 2^40: step counts stay exact in double */
#define BYTES_MAX 4.0e18

/* name, key, kind, default, default note, lo, hi, lo_open, hi_open, enum
 * names, enum codes, storage, help. The defaults are atm_train_opts_default's
 * (trainer.c reads them here). */
const atm_topt atm_topts[ATM_TO_COUNT] = {
    [ATM_TO_STEPS] = { "steps", "steps", ATM_TO_KIND_INT, 3000, NULL, 1, STEPS_MAX, 0, 0, { NULL }, { 0 },
        IN_OPTS(ATM_TO_I64, steps), "total optimiser steps of the run (schedules span them); a resumed run continues to it" },
    [ATM_TO_BATCH] = { "batch", "batch", ATM_TO_KIND_INT, 16, NULL, 1, 65536, 0, 0, { NULL }, { 0 },
        IN_OPTS(ATM_TO_I32, batch), "chunks per step, sampled uniformly with replacement" },
    [ATM_TO_SEQ] = { "seq", "seq", ATM_TO_KIND_INT, 64, NULL, 2, 65537, 0, 0, { NULL }, { 0 },
        IN_OPTS(ATM_TO_I32, seq), "bytes per chunk; a chunk gives seq-1 predictions" },
    [ATM_TO_LR] = { "lr", "lr", ATM_TO_KIND_NUM, 3e-4, NULL, 0, 1e3, 1, 0, { NULL }, { 0 },
        IN_OPTS(ATM_TO_F32, lr), "peak learning rate; constant unless warmup or cosine" },
    [ATM_TO_SEED] = { "seed", "seed", ATM_TO_KIND_INT, 0, NULL, 0, 4294967295.0, 0, 0, { NULL }, { 0 },
        IN_OPTS(ATM_TO_U32, seed), "seeds the weight init, then the batch sampling (one generator)" },
    [ATM_TO_QUANT] = { "quant", "quant", ATM_TO_KIND_ENUM, ATM_QUANT_FP32, "ternary for the atome family, else fp32", 0, 0, 0, 0,
        { "ternary", "fp32", NULL }, { ATM_QUANT_TERNARY, ATM_QUANT_FP32 },
        IN_OPTS(ATM_TO_I32, quant), "quantiser of the weights (of the last stage of a two-stage run)" },
    [ATM_TO_WARMUP] = { "warmup", "warmup", ATM_TO_KIND_INT, 0, NULL, 0, STEPS_MAX, 0, 0, { NULL }, { 0 },
        IN_OPTS(ATM_TO_I64, warmup), "linear warmup steps, lr*(s+1)/N for steps s < N (N <= steps; 0 = off)" },
    [ATM_TO_COSINE] = { "cosine", "cosine", ATM_TO_KIND_FLAG, 0, NULL, 0, 1, 0, 0, { NULL }, { 0 },
        IN_OPTS(ATM_TO_I32, cosine), "after warmup, cosine decay from lr to lr-min at the last step" },
    [ATM_TO_LR_MIN] = { "lr-min", "lrMin", ATM_TO_KIND_NUM, 0, NULL, 0, 1e3, 0, 0, { NULL }, { 0 },
        IN_OPTS(ATM_TO_F32, lr_min), "cosine floor" },
    [ATM_TO_CLIP] = { "clip", "clip", ATM_TO_KIND_NUM, 0, NULL, 0, 1e30, 0, 0, { NULL }, { 0 },
        IN_OPTS(ATM_TO_F32, clip), "clip the global gradient L2 norm to this (0 = off)" },
    [ATM_TO_WD] = { "wd", "wd", ATM_TO_KIND_NUM, 0.01, NULL, 0, 1e3, 0, 0, { NULL }, { 0 },
        IN_OPTS(ATM_TO_F32, wd), "AdamW decoupled weight decay, on every parameter" },
    [ATM_TO_BETA1] = { "beta1", "beta1", ATM_TO_KIND_NUM, 0.9, NULL, 0, 0.9999999, 0, 0, { NULL }, { 0 },
        IN_OPTS(ATM_TO_F32, beta1), "AdamW first-moment decay" },
    [ATM_TO_BETA2] = { "beta2", "beta2", ATM_TO_KIND_NUM, 0.999, NULL, 0, 0.9999999, 0, 0, { NULL }, { 0 },
        IN_OPTS(ATM_TO_F32, beta2), "AdamW second-moment decay" },
    [ATM_TO_EPS] = { "eps", "eps", ATM_TO_KIND_NUM, 1e-8, NULL, 0, 1, 1, 0, { NULL }, { 0 },
        IN_OPTS(ATM_TO_F32, eps), "AdamW epsilon" },
    [ATM_TO_FP_FRACTION] = { "fp-fraction", "fpFraction", ATM_TO_KIND_NUM, 0, NULL, 0, 1, 0, 0, { NULL }, { 0 },
        IN_OPTS(ATM_TO_F32, fp_fraction), "two-stage: the first round(F*steps) steps train in fp32, the rest in ternary (0 = off)" },
    [ATM_TO_LR2] = { "lr2", "lr2", ATM_TO_KIND_NUM, 3e-4, "= lr", 0, 1e3, 1, 0, { NULL }, { 0 },
        IN_OPTS(ATM_TO_F32, lr2), "constant learning rate of the ternary stage (with fp-fraction)" },
    [ATM_TO_TRAIN_BYTES] = { "train-bytes", "trainBytes", ATM_TO_KIND_INT, NONE, "none (steps)", 1, BYTES_MAX, 0, 0, { NULL }, { 0 },
        IN_RUN("run: sets steps = ceil(N / (batch * seq))"), "a byte budget instead of steps" },
    [ATM_TO_MAX_BYTES] = { "max-bytes", "maxBytes", ATM_TO_KIND_INT, NONE, "the whole file", 1, BYTES_MAX, 0, 0, { NULL }, { 0 },
        IN_RUN("run: the checkpoint's data description"), "read only the first N bytes of the data (and of the validation file)" },
    [ATM_TO_SPLIT] = { "split", "split", ATM_TO_KIND_NUM, 0.9, NULL, 0, 1, 1, 1, { NULL }, { 0 },
        IN_RUN("run: the checkpoint's data description"), "the first floor(S*n) of the n chunks train, the rest evaluate" },
    [ATM_TO_DISTILL_WEIGHT] = { "distill-weight", "distillWeight", ATM_TO_KIND_NUM, 0.5, NULL, 0, 1, 1, 0, { NULL }, { 0 },
        IN_RUN("run: the checkpoint's DIST section"), "weight of the teacher's distribution in the loss (with a teacher)" },
    [ATM_TO_EVAL_EVERY] = { "eval-every", "evalEvery", ATM_TO_KIND_INT, 0, NULL, 0, 1e12, 0, 0, { NULL }, { 0 },
        IN_RUN("run"), "also evaluate on the held-out chunks every N steps (0: only at the end)" },
    [ATM_TO_LOG_EVERY] = { "log-every", "logEvery", ATM_TO_KIND_INT, 10, NULL, 1, 1e12, 0, 0, { NULL }, { 0 },
        IN_RUN("run"), "log every N steps (and the last one)" },
    [ATM_TO_CKPT_EVERY] = { "ckpt-every", "ckptEvery", ATM_TO_KIND_INT, 0, NULL, 0, 1e12, 0, 0, { NULL }, { 0 },
        IN_RUN("run"), "also save the checkpoint every N steps (0: only at the end)" },
    [ATM_TO_STOP_AT] = { "stop-at", "stopAt", ATM_TO_KIND_INT, NONE, "none (steps)", 1, STEPS_MAX, 0, 0, { NULL }, { 0 },
        IN_RUN("run"), "end this invocation after step N and save; the schedules still span steps" },
    [ATM_TO_THREADS] = { "threads", "threads", ATM_TO_KIND_INT, NONE, "ATOME_THREADS, else the cores, at most 4", 1, ATM_THREADS_MAX, 0, 0,
        { NULL }, { 0 }, IN_RUN("run: the trainer's pool (the bits do not depend on it)"), "threads of the trainer's pool" },
};

const atm_topt *atm_topt_find(const char *name) {
    for (int i = 0; i < ATM_TO_COUNT; i++)
        if (strcmp(atm_topts[i].name, name) == 0 || strcmp(atm_topts[i].key, name) == 0) return &atm_topts[i];
    return NULL;
}

static int digits(const char **p) {
    const char *s = *p;
    while (**p >= '0' && **p <= '9') (*p)++;
    return (int)(*p - s);
}

/* The grammar of options.h: 1 if text is an integer (int_only) or a number. */
static int well_formed(const char *t, int int_only) {
    const char *p = t;
    if (*p == '+' || *p == '-') p++;
    int n = digits(&p);
    if (int_only) return n > 0 && !*p;
    if (*p == '.') { p++; n += digits(&p); }
    if (n == 0) return 0;
    if (*p == 'e' || *p == 'E') {
        p++;
        if (*p == '+' || *p == '-') p++;
        if (digits(&p) == 0) return 0;
    }
    return !*p;
}

static int in_range(const atm_topt *r, double x) {
    if (x < r->lo || x > r->hi) return 0;
    return !(r->lo_open && x == r->lo) && !(r->hi_open && x == r->hi);
}

int atm_topt_parse(const atm_topt *r, const char *text, atm_topt_val *v) {
    if (r->kind == ATM_TO_KIND_ENUM) {
        for (int k = 0; k < ATM_TO_ENUM_MAX && r->values[k]; k++)
            if (strcmp(text, r->values[k]) == 0) { v->i = r->codes[k]; v->x = (double)v->i; return 0; }
        return -1;
    }
    if (r->kind == ATM_TO_KIND_FLAG) {
        if (strcmp(text, "0") != 0 && strcmp(text, "1") != 0) return -1;
        v->i = text[0] - '0';
        v->x = (double)v->i;
        return 0;
    }
    if (!well_formed(text, r->kind == ATM_TO_KIND_INT)) return -1;
    errno = 0;
    if (r->kind == ATM_TO_KIND_INT) {
        long long x = strtoll(text, NULL, 10);
        if (errno == ERANGE || !in_range(r, (double)x)) return -1;
        v->i = x;
        v->x = (double)x;
        return 0;
    }
    double x = strtod(text, NULL);   /* underflow to a tiny or zero value is not an error, as in JS */
    if (!isfinite(x) || !in_range(r, x)) return -1;
    v->x = x;
    v->i = (int64_t)0;
    return 0;
}

/* A finite double in the fewest digits that read back as itself (whole
 * numbers below 1e17 without an exponent): 0.9999999, 1000, 1e+30. */
static void shortest(double x, char *t, size_t n) {
    if (x == floor(x) && fabs(x) < 1e17) { snprintf(t, n, "%.0f", x); return; }
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(t, n, "%.*g", prec, x);
        if (strtod(t, NULL) == x) break;
    }
}

void atm_topt_want(const atm_topt *r, char *buf, size_t n) {
    if (r->kind == ATM_TO_KIND_ENUM) {
        size_t len = 0;
        buf[0] = 0;
        for (int k = 0; k < ATM_TO_ENUM_MAX && r->values[k] && len < n; k++) {
            const char *sep = k == 0 ? "" : (k + 1 < ATM_TO_ENUM_MAX && r->values[k + 1]) ? ", " : " or ";
            len += (size_t)snprintf(buf + len, n - len, "%s%s", sep, r->values[k]);
        }
    } else if (r->kind == ATM_TO_KIND_FLAG) {
        snprintf(buf, n, "0 or 1");
    } else if (r->kind == ATM_TO_KIND_INT) {
        snprintf(buf, n, "an integer in %.0f..%.0f", r->lo, r->hi);
    } else {
        char lo[32], hi[32];
        shortest(r->lo, lo, sizeof lo);
        shortest(r->hi, hi, sizeof hi);
        snprintf(buf, n, "a number in %s%s, %s%s", r->lo_open ? "(" : "[", lo, hi, r->hi_open ? ")" : "]");
    }
}

void atm_topt_error(const atm_topt *r, const char *label, const char *text, char *buf, size_t n) {
    char want[96];
    atm_topt_want(r, want, sizeof want);
    snprintf(buf, n, "%s must be %s (got '%s')", label, want, text);
}

void atm_topt_put(atm_train_opts *o, const atm_topt *r, const atm_topt_val *v) {
    char *p = (char *)o + r->off;
    switch (r->store) {
    case ATM_TO_F32: *(float *)p = (float)v->x; break;
    case ATM_TO_I32: *(int32_t *)p = (int32_t)v->i; break;
    case ATM_TO_I64: *(int64_t *)p = v->i; break;
    case ATM_TO_U32: *(uint32_t *)p = (uint32_t)v->i; break;
    default: break;
    }
}

double atm_topt_get(const atm_train_opts *o, const atm_topt *r) {
    const char *p = (const char *)o + r->off;
    switch (r->store) {
    case ATM_TO_F32: return (double)*(const float *)p;
    case ATM_TO_I32: return (double)*(const int32_t *)p;
    case ATM_TO_I64: return (double)*(const int64_t *)p;
    case ATM_TO_U32: return (double)*(const uint32_t *)p;
    default: return NAN;
    }
}

/* ---- JSON ---- */

typedef struct { char *buf; size_t n, len; } jout;

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static void jput(jout *j, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(j->len < j->n ? j->buf + j->len : NULL, j->len < j->n ? j->n - j->len : 0, fmt, ap);
    va_end(ap);
    if (k > 0) j->len += (size_t)k;
}

static void jnum(jout *j, double x) {
    char t[40];
    if (!isfinite(x)) { jput(j, "null"); return; }
    shortest(x, t, sizeof t);
    jput(j, "%s", t);
}

/* Table text has no quote, backslash or control character (a test keeps it so). */
static void jstr(jout *j, const char *key, const char *s) { jput(j, ",\"%s\":\"%s\"", key, s); }

static const char *const KIND_NAMES[] = { "int", "number", "flag", "enum" };

static void json_row(jout *j, const atm_topt *r) {
    char want[96];
    atm_topt_want(r, want, sizeof want);
    jput(j, "{\"name\":\"%s\"", r->name);
    jstr(j, "key", r->key);
    jstr(j, "kind", KIND_NAMES[r->kind]);
    jput(j, ",\"default\":");
    if (r->def_note) jput(j, "null");
    else if (r->kind == ATM_TO_KIND_ENUM) {
        for (int k = 0; k < ATM_TO_ENUM_MAX && r->values[k]; k++) if (r->codes[k] == (int)r->def) jput(j, "\"%s\"", r->values[k]);
    } else jnum(j, r->def);
    if (r->def_note) jstr(j, "default_note", r->def_note);
    if (r->kind == ATM_TO_KIND_ENUM) {
        jput(j, ",\"values\":[");
        for (int k = 0; k < ATM_TO_ENUM_MAX && r->values[k]; k++) jput(j, "%s\"%s\"", k ? "," : "", r->values[k]);
        jput(j, "]");
    } else {
        jput(j, ",\"min\":"); jnum(j, r->lo);
        jput(j, ",\"max\":"); jnum(j, r->hi);
        jput(j, ",\"min_open\":%s,\"max_open\":%s", r->lo_open ? "true" : "false", r->hi_open ? "true" : "false");
    }
    jstr(j, "want", want);
    jstr(j, "scope", r->store == ATM_TO_RUN ? "run" : "model");
    jstr(j, "stored", r->stored);
    jstr(j, "help", r->help);
    jput(j, "}");
}

size_t atm_topt_json(char *buf, size_t n) {
    jout j = { buf, n, 0 };
    if (n) buf[0] = 0;
    jput(&j, "{\"options\":[");
    for (int i = 0; i < ATM_TO_COUNT; i++) {
        if (i) jput(&j, ",");
        json_row(&j, &atm_topts[i]);
    }
    jput(&j, "]}");
    return j.len;
}
