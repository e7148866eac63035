/* core/train/legacy.c — legacy ATOME01/ATOME02 <-> atome shadow weights.
 * Contract in legacy.h; byte layout in docs/legacy-format.md. */
#include "legacy.h"
#include "atome_layers.h"
#include "../host/fail.h"
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* quant.c's floor on the absmean scale */
#define ALPHA_FLOOR 1e-5f

const char *atm_legacy_strerror(int err) {
    switch (err) {
    case ATM_LEGACY_E_CONFIG:  return "config is not a 3-pathway atome model matching the legacy layout";
    case ATM_LEGACY_E_REQUANT: return "stored scale and trits cannot be reproduced by the trainer's quantiser";
    case ATM_LEGACY_E_NOMEM:   return "out of memory";
    case ATM_LEGACY_E_NONFINITE: return "non-finite weight: cannot export";
    default:                   return atm_fmt_strerror(err);
    }
}

int atm_legacy_shape_from_config(const atm_config *c, atm_legacy_shape *s) {
    if (!c || !s || c->family != ATM_FAMILY_ATOME || c->pathways != ATM_PATH_ALL) return ATM_LEGACY_E_CONFIG;
    s->vocab = c->vocab; s->d_model = c->d_model; s->n_layers = c->n_layers;
    s->d_head = c->d_head; s->kernel = c->kernel;
    return atm_legacy_shape_check(s) ? ATM_LEGACY_E_CONFIG : 0;
}

static float f32_from_bits(uint32_t b) { float f; memcpy(&f, &b, 4); return f; }
static uint32_t f32_bits(float f) { uint32_t b; memcpy(&b, &f, 4); return b; }

/* The trainer tensor holding a legacy field: found by its offset in the
 * family's one declaration (atm_atome_offsets, no name lookup), checked for
 * shape and kind. */
static int tensor_for(const atm_layout *L, const atm_legacy_span *sp, const atm_legacy_shape *s) {
    atm_atome_off O;
    if (atm_atome_offsets(&L->cfg, &O) || O.n_params != L->n_params) return -1;
    const int V = s->vocab, d = s->d_model, l = sp->layer;
    if (l >= L->cfg.n_layers || (l < 0 && sp->field != ATM_LF_EMBED && sp->field != ATM_LF_LNF_G &&
                                 sp->field != ATM_LF_LNF_B && sp->field != ATM_LF_UNEMBED)) return -1;
    int rows = 1, cols = d;
    size_t off;
    const atm_atome_block_off *b = l >= 0 ? &O.blk[l] : NULL;
    switch (sp->field) {
    case ATM_LF_EMBED: rows = V; off = O.embed; break;
    case ATM_LF_UNEMBED: rows = V; off = O.unembed; break;
    case ATM_LF_LNF_G: off = O.lnf_g; break;
    case ATM_LF_LNF_B: off = O.lnf_b; break;
    case ATM_LF_LN_G: off = b->ln_g; break;
    case ATM_LF_LN_B: off = b->ln_b; break;
    case ATM_LF_CONV: rows = d; cols = s->kernel; off = b->conv; break;
    case ATM_LF_SSM_A: off = b->ssm_a; break;
    case ATM_LF_SSM_B: off = b->ssm_b; break;
    case ATM_LF_SSM_C: off = b->ssm_c; break;
    case ATM_LF_WQ: rows = s->d_head; off = b->wq; break;
    case ATM_LF_WK: rows = s->d_head; off = b->wk; break;
    case ATM_LF_WV: rows = d; off = b->wv; break;
    case ATM_LF_ROUTER: rows = 3; off = b->router; break;
    default: return -1;
    }
    for (int i = 0; i < L->n_tensors; i++) {
        const atm_tensor *t = &L->t[i];
        if (t->off != off || t->rows * t->cols == 0) continue;
        if (t->rows != rows || t->cols != cols || (size_t)rows * (size_t)cols != sp->n) return -1;
        if ((t->kind == ATM_TK_QUANT) != (sp->ternary != 0)) return -1;
        return i;
    }
    return -1;
}

/* ---- re-quantisation ---- */

/* quant.c's alpha for nnz non-zero weights of which k have magnitude hi and
 * nnz - k magnitude lo (hi = lo + 1 ulp), the rest 0. The double sums are
 * exact (all terms are multiples of ulp(lo) and the total stays below
 * nnz * 2^25 of them, far under 2^53), so the order of accumulation in
 * atm_ternary_alpha does not matter and this equals its result; the caller
 * still verifies with atm_ternary_alpha itself. */
static float alpha_model(size_t n, size_t nnz, size_t k, float lo, float hi) {
    double s = (double)(nnz - k) * (double)lo + (double)k * (double)hi;
    float a = (float)(s / (double)n);
    return a > ALPHA_FLOOR ? a : ALPHA_FLOOR;
}

static void fill(const int8_t *t, size_t n, size_t k, float lo, float hi, float *w) {
    size_t seen = 0;
    for (size_t i = 0; i < n; i++) {
        if (t[i] == 0) { w[i] = 0.0f; continue; }
        float m = seen++ < k ? hi : lo;
        w[i] = t[i] > 0 ? m : -m;
    }
}

int atm_legacy_requant(const int8_t *t, size_t n, float alpha, float *w) {
    size_t nnz = 0;
    for (size_t i = 0; i < n; i++) nnz += t[i] != 0;
    if (!isfinite(alpha) || !(alpha >= ALPHA_FLOOR) || n == 0) return ATM_LEGACY_E_REQUANT;
    float lo = 0.0f, hi = 0.0f;
    size_t k = 0;
    int exact = 1;
    if (nnz > 0) {
        lo = (float)((double)alpha * (double)n / (double)nnz);
        /* the start is within a few ulps; 64 steps is a generous bound */
        int steps = 0;
        for (; steps < 64; steps++) {
            hi = nextafterf(lo, INFINITY);
            if (alpha_model(n, nnz, 0, lo, hi) > alpha) lo = nextafterf(lo, 0.0f);
            else if (alpha_model(n, nnz, nnz, lo, hi) <= alpha) lo = hi;
            else break;
        }
        if (steps == 64 || !isfinite(hi)) return ATM_LEGACY_E_REQUANT;
        /* alpha_model(k) is nondecreasing in k, <= alpha at k = 0 and > alpha
         * at k = nnz; one step of k moves the mean by ulp(lo) / n, about
         * ulp(alpha) / nnz, so unless nnz is 1 or 2 the smallest k reaching
         * alpha lands on it. */
        if (alpha_model(n, nnz, 0, lo, hi) != alpha) {
            size_t a = 0, b = nnz;                /* model(a) < alpha < model(b) */
            while (b - a > 1) {
                size_t m = a + (b - a) / 2;
                if (alpha_model(n, nnz, m, lo, hi) < alpha) a = m; else b = m;
            }
            k = alpha_model(n, nnz, b, lo, hi) == alpha ? b : a;
            exact = k == b;
        }
    }
    fill(t, n, k, lo, hi, w);
    if (!exact) {
        /* Very sparse tensor whose coarse steps skip alpha: put a small
         * positive value d on the first zero trit. It must stay a zero trit,
         * so d < alpha / 2; atm_ternary_alpha is nondecreasing in d (every
         * rounded addition is monotone), so bisect d over its bit patterns
         * (positive floats order like their bits) with the real function. */
        size_t z = 0;
        while (z < n && t[z] != 0) z++;
        if (z == n) return ATM_LEGACY_E_REQUANT;
        uint32_t a = 0, b = f32_bits(nextafterf(0.5f * alpha, 0.0f));
        w[z] = f32_from_bits(b);
        if (atm_ternary_alpha(w, n) < alpha) return ATM_LEGACY_E_REQUANT;
        while (b - a > 1) {                       /* alpha(a) < target <= alpha(b) */
            uint32_t m = a + (b - a) / 2;
            w[z] = f32_from_bits(m);
            if (atm_ternary_alpha(w, n) < alpha) a = m; else b = m;
        }
        w[z] = f32_from_bits(b);
    }
    if (f32_bits(atm_ternary_alpha(w, n)) != f32_bits(alpha)) return ATM_LEGACY_E_REQUANT;
    for (size_t i = 0; i < n; i++)
        if (atm_ternary_trit(w[i], alpha) != (t[i] > 0 ? 1 : (t[i] < 0 ? -1 : 0))) return ATM_LEGACY_E_REQUANT;
    return 0;
}

/* ---- import ---- */

static size_t max_ternary(const atm_legacy_plan *p) {
    size_t m = 0;
    for (int f = 0; f < ATM_LF_COUNT; f++) if (p->count[f] > m) m = p->count[f];
    return m;
}

/* The message of a legacy file atm_legacy_validate refused with e. */
static int invalid_legacy(int e, const atm_fmt_where *where, size_t len, const atm_legacy_plan *p, char *err, size_t errlen) {
    if (where->field >= 0)
        return atm_fail_code(e, err, errlen, "legacy import: %s (byte %zu, %s%s%d)", atm_fmt_strerror(e), where->offset,
                    atm_legacy_field_name(where->field), where->layer >= 0 ? " of block " : "",
                    where->layer >= 0 ? where->layer : 0);
    if ((e == ATM_FMT_E_TRUNCATED || e == ATM_FMT_E_TRAILING) && len >= ATM_LEGACY_MAGIC_LEN)
        return atm_fail_code(e, err, errlen, "legacy import: %s (%zu bytes, this config needs %zu)",
                    atm_fmt_strerror(e), len, p->size);
    return atm_fail_code(e, err, errlen, "legacy import: %s", atm_fmt_strerror(e));
}

/* One span of the legacy file into its tensor at dst (t: scratch for its
 * trits): 0, or the error. */
static int import_span(const atm_legacy_plan *p, const atm_legacy_span *sp, const uint8_t *src, float *dst, int8_t *t,
                       char *err, size_t errlen) {
    if (!sp->ternary) {
        for (size_t j = 0; j < sp->n; j++) dst[j] = f32_from_bits(atm_rd_u32le(src + 4 * j));
        return 0;
    }
    float alpha = f32_from_bits(atm_rd_u32le(src));
    if (p->format == 1) atm_t2_unpack(src + 4, sp->n, t); else atm_t5_unpack(src + 4, sp->n, t);
    if (atm_legacy_requant(t, sp->n, alpha, dst))
        return atm_fail_code(ATM_LEGACY_E_REQUANT, err, errlen, "legacy import: %s (%s%s%d, alpha %.9g)",
                 atm_legacy_strerror(ATM_LEGACY_E_REQUANT), atm_legacy_field_name(sp->field),
                 sp->layer >= 0 ? " of block " : "", sp->layer >= 0 ? sp->layer : 0, (double)alpha);
    return 0;
}

/* Every span of the validated file into w (filled: one flag per tensor of
 * L, all 0), then every tensor checked to be filled: 0, or the error. */
static int import_spans(const uint8_t *blob, const atm_legacy_plan *p, const atm_legacy_shape *s, const atm_layout *L,
                        float *w, int8_t *t, char *filled, char *err, size_t errlen) {
    for (size_t i = 0; i < p->n_items; i++) {
        atm_legacy_span sp;
        atm_legacy_item(p, i, &sp);
        int ti = tensor_for(L, &sp, s);
        if (ti < 0 || filled[ti])
            return atm_fail_code(ATM_LEGACY_E_CONFIG, err, errlen, "legacy import: layout has no matching tensor for %s%s%d",
                     atm_legacy_field_name(sp.field), sp.layer >= 0 ? " of block " : "", sp.layer >= 0 ? sp.layer : 0);
        filled[ti] = 1;
        int e = import_span(p, &sp, blob + sp.off, w + L->t[ti].off, t, err, errlen);
        if (e) return e;
    }
    for (int i = 0; i < L->n_tensors; i++)
        if (!filled[i])
            return atm_fail_code(ATM_LEGACY_E_CONFIG, err, errlen, "legacy import: tensor %s is not in the legacy file", L->t[i].name);
    return 0;
}

int atm_legacy_import(const uint8_t *blob, size_t len, const atm_config *cfg,
                      float *w, char *err, size_t errlen) {
    atm_legacy_shape s;
    if (err && errlen) err[0] = 0;
    if (atm_legacy_shape_from_config(cfg, &s))
        return atm_fail_code(ATM_LEGACY_E_CONFIG, err, errlen, "legacy import: %s", atm_legacy_strerror(ATM_LEGACY_E_CONFIG));
    atm_legacy_plan p;
    atm_fmt_where where;
    int e = atm_legacy_validate(blob, len, &s, &p, &where);
    if (e) return invalid_legacy(e, &where, len, &p, err, errlen);
    atm_layout *L = malloc(sizeof *L);
    int8_t *t = malloc(max_ternary(&p));
    char *filled = NULL;
    if (!L || !t) { e = atm_fail_code(ATM_LEGACY_E_NOMEM, err, errlen, "legacy import: out of memory"); goto done; }
    if (atm_layout_build(cfg, L) != 0) {
        e = atm_fail_code(ATM_LEGACY_E_CONFIG, err, errlen, "legacy import: cannot build the atome layout");
        goto done;
    }
    filled = calloc((size_t)L->n_tensors + 1, 1);
    if (!filled) { e = atm_fail_code(ATM_LEGACY_E_NOMEM, err, errlen, "legacy import: out of memory"); goto done; }
    e = import_spans(blob, &p, &s, L, w, t, filled, err, errlen);
done:
    free(filled);
    free(t);
    free(L);
    return e;
}

/* ---- export ---- */

int atm_legacy_export(const atm_layout *L, const float *w, int format,
                      uint8_t *out, size_t cap, size_t *len) {
    atm_legacy_shape s;
    atm_legacy_plan p;
    if (!L || !w || !len) return ATM_FMT_E_ARG;
    if (atm_legacy_shape_from_config(&L->cfg, &s)) return ATM_LEGACY_E_CONFIG;
    int e = atm_legacy_plan_make(&s, format, &p);
    if (e) return e;
    *len = p.size;
    for (size_t i = 0; i < p.n_items; i++) {          /* check the layout before writing */
        atm_legacy_span sp;
        atm_legacy_item(&p, i, &sp);
        if (tensor_for(L, &sp, &s) < 0) return ATM_LEGACY_E_CONFIG;
    }
    if (!out || cap < p.size) return ATM_FMT_E_CAPACITY;
    int8_t *t = malloc(max_ternary(&p));
    if (!t) return ATM_LEGACY_E_NOMEM;
    memcpy(out, atm_legacy_magic(format), ATM_LEGACY_MAGIC_LEN);
    for (size_t i = 0; i < p.n_items && !e; i++) {
        atm_legacy_span sp;
        atm_legacy_item(&p, i, &sp);
        const float *src = w + L->t[tensor_for(L, &sp, &s)].off;
        uint8_t *dst = out + sp.off;
        if (sp.ternary) {
            for (size_t j = 0; j < sp.n && !e; j++) if (!isfinite(src[j])) e = ATM_LEGACY_E_NONFINITE;
            if (e) break;
            float alpha = atm_ternary_alpha(src, sp.n);
            uint32_t ab = f32_bits(alpha);
            if (!atm_f32_bits_positive(ab)) { e = ATM_LEGACY_E_NONFINITE; break; }
            atm_wr_u32le(dst, ab);
            for (size_t j = 0; j < sp.n; j++) t[j] = (int8_t)atm_ternary_trit(src[j], alpha);
            if (format == 1) atm_t2_pack(t, sp.n, dst + 4); else atm_t5_pack(t, sp.n, dst + 4);
        } else {
            for (size_t j = 0; j < sp.n; j++) {
                uint32_t b = f32_bits(src[j]);
                if (!atm_f32_bits_finite(b)) { e = ATM_LEGACY_E_NONFINITE; break; }
                atm_wr_u32le(dst + 4 * j, b);
            }
        }
    }
    free(t);
    return e;
}
