/* core/train/export.c — float atome weights -> `.atome` container and
 * calibration statistics. Contract in export.h;
 * formats in docs/format.md and docs/fixed-point.md. */
#include "export.h"
#include "../host/fail.h"
#include "layers.h"
#include "atome_layers.h"
#include "../engine.h"
#include "../container.h"
#include "../format.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


/* ------------------------------------------------------------------------- */
/* tensor lookup by name                                                      */

static int cfg_ok(const atm_config *c, char *err, size_t errlen) {
    if (c->family != ATM_FAMILY_ATOME) ATM_FAIL_GOTO(fail, "export: only the atome family can be packed");
    if (c->vocab < 2 || c->vocab > ATM_MAX_VOCAB || c->d_model < 1 || c->d_model > ATM_MAX_D ||
        c->n_layers < 1 || c->n_layers > ATM_MAX_LAYERS || c->pathways < 1 || c->pathways > 7)
        ATM_FAIL_GOTO(fail, "export: config outside the engine limits (vocab <= %d, d_model <= %d, layers <= %d)",
             ATM_MAX_VOCAB, ATM_MAX_D, ATM_MAX_LAYERS);
    if ((c->pathways & ATM_PATH_ATTN) && (c->d_head < 1 || c->d_head > ATM_MAX_DHEAD || c->top_k < 1 ||
                                          c->top_k > ATM_MAX_TOPK))
        ATM_FAIL_GOTO(fail, "export: attention shape outside the engine limits (d_head <= %d, top_k <= %d)",
             ATM_MAX_DHEAD, ATM_MAX_TOPK);
    if ((c->pathways & ATM_PATH_CONV) && (c->kernel < 1 || c->kernel > ATM_MAX_KERNEL))
        ATM_FAIL_GOTO(fail, "export: conv kernel outside 1..%d", ATM_MAX_KERNEL);
    return 0;
fail:
    return -1;
}

/* ------------------------------------------------------------------------- */
/* calibration: the float streaming forward of gen_step, with statistics      */

static float amax(const float *v, int n, float m) {
    for (int i = 0; i < n; i++) { float a = fabsf(v[i]); if (a > m) m = a; }
    return m;
}

/* The calibration tap: the largest magnitudes of what gen_step computes. */
static void calib_tap(void *ctx, int what, int layer, const float *v, int n) {
    atm_calib_stats *st = ctx;
    switch (what) {
    case ATM_TAP_X: st->x_max[layer] = amax(v, n, st->x_max[layer]); break;
    case ATM_TAP_U: st->u_max[layer] = amax(v, n, st->u_max[layer]); break;
    case ATM_TAP_S: st->s_max[layer] = amax(v, n, st->s_max[layer]); break;
    case ATM_TAP_Q: st->q_max[layer] = amax(v, n, st->q_max[layer]); break;
    case ATM_TAP_K: st->k_max[layer] = amax(v, n, st->k_max[layer]); break;
    case ATM_TAP_V: st->v_max[layer] = amax(v, n, st->v_max[layer]); break;
    case ATM_TAP_LOGITS: st->logit_max = amax(v, n, st->logit_max); st->positions++; break;
    default: break;
    }
}

/* Calibration is the float streaming forward of generation (the family's
 * gen_step on the ternary effective weights, at the export window) with the
 * statistics tap set: one forward in the tree, not a copy of it. */
int atm_calib_collect(const atm_layout *L, const float *w, const uint8_t *text, size_t n,
                      int window, atm_calib_stats *st, char *err, size_t errlen) {
    const atm_config *c = &L->cfg;
    if (cfg_ok(c, err, errlen)) return -1;
    if (window < 1 || window > ATM_MAX_WINDOW) ATM_FAIL("calib: window must be 1..%d", ATM_MAX_WINDOW);
    atm_atome_off O;
    if (atm_atome_offsets(c, &O) || O.n_params != L->n_params) ATM_FAIL("calib: layout is not an atome layout");
    memset(st, 0, sizeof *st);
    st->n_layers = c->n_layers;
    st->d_model = c->d_model;
    float *weff = malloc(sizeof(float) * L->n_params);
    if (!weff) ATM_FAIL("calib: out of memory");
    atm_quantize_layout(L, ATM_QUANT_TERNARY, w, weff);
    void *g = atm_family_atome.gen_new(L, weff, window);
    free(weff);
    if (!g) ATM_FAIL("calib: out of memory");
    atm_atome_gen_tap(g, calib_tap, st);
    for (size_t pos = 0; pos < n; pos++) atm_family_atome.gen_step(g, text[pos] < c->vocab ? text[pos] : 0);
    atm_family_atome.gen_free(g);
    return 0;
}

/* ---- stats serialisation ---- */

static const char CAL_MAGIC[8] = { 'A', 'T', 'M', 'C', 'A', 'L', '0', '1' };

size_t atm_calib_bytes(int n_layers) { return 32 + 4 * (6 * (size_t)n_layers + 3); }

static uint32_t fbits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static float bitsf(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

size_t atm_calib_serialize(const atm_calib_stats *st, uint8_t *out, size_t cap) {
    const int Ln = st->n_layers;
    if (Ln < 1 || Ln > ATM_CALIB_MAX_LAYERS) return 0;
    size_t n = atm_calib_bytes(Ln);
    if (!out || cap < n) return 0;
    memcpy(out, CAL_MAGIC, 8);
    atm_wr_u32le(out + 8, ATM_CALIB_VERSION);
    atm_wr_u32le(out + 12, (uint32_t)Ln);
    atm_wr_u32le(out + 16, (uint32_t)st->d_model);
    atm_wr_u32le(out + 20, 0);
    atm_wr_u32le(out + 24, (uint32_t)st->positions);
    atm_wr_u32le(out + 28, (uint32_t)(st->positions >> 32));
    uint8_t *p = out + 32;
    for (int i = 0; i <= Ln; i++, p += 4) atm_wr_u32le(p, fbits(st->x_max[i]));
    for (int i = 0; i <= Ln; i++, p += 4) atm_wr_u32le(p, fbits(st->u_max[i]));
    const float *arr[4] = { st->s_max, st->q_max, st->k_max, st->v_max };
    for (int a = 0; a < 4; a++) for (int i = 0; i < Ln; i++, p += 4) atm_wr_u32le(p, fbits(arr[a][i]));
    atm_wr_u32le(p, fbits(st->logit_max));
    return n;
}

int atm_calib_parse(const uint8_t *b, size_t len, atm_calib_stats *st, char *err, size_t errlen) {
    if (!b || len < 32 || memcmp(b, CAL_MAGIC, 8) != 0) ATM_FAIL_GOTO(fail, "calibration stats: bad magic or too short");
    if (atm_rd_u32le(b + 8) != ATM_CALIB_VERSION) ATM_FAIL_GOTO(fail, "calibration stats: unsupported version %u", (unsigned)atm_rd_u32le(b + 8));
    uint32_t Ln = atm_rd_u32le(b + 12);
    if (Ln < 1 || Ln > ATM_CALIB_MAX_LAYERS) ATM_FAIL_GOTO(fail, "calibration stats: bad layer count %u", (unsigned)Ln);
    if (len != atm_calib_bytes((int)Ln)) ATM_FAIL_GOTO(fail, "calibration stats: size %zu, expected %zu", len, atm_calib_bytes((int)Ln));
    if (atm_rd_u32le(b + 20) != 0) ATM_FAIL_GOTO(fail, "calibration stats: reserved field not zero");
    memset(st, 0, sizeof *st);
    st->n_layers = (int32_t)Ln;
    st->d_model = (int32_t)atm_rd_u32le(b + 16);
    st->positions = atm_rd_u32le(b + 24) | ((uint64_t)atm_rd_u32le(b + 28) << 32);
    const uint8_t *p = b + 32;
    float *arr[6] = { st->x_max, st->u_max, st->s_max, st->q_max, st->k_max, st->v_max };
    for (int a = 0; a < 6; a++) {
        uint32_t cnt = a < 2 ? Ln + 1 : Ln;
        for (uint32_t i = 0; i < cnt; i++, p += 4) arr[a][i] = bitsf(atm_rd_u32le(p));
    }
    st->logit_max = bitsf(atm_rd_u32le(p));
    for (int a = 0; a < 6; a++)
        for (uint32_t i = 0; i < (a < 2 ? Ln + 1 : Ln); i++)
            if (!(arr[a][i] >= 0.0f) || !isfinite(arr[a][i])) ATM_FAIL_GOTO(fail, "calibration stats: invalid value");
    if (!(st->logit_max >= 0.0f) || !isfinite(st->logit_max)) ATM_FAIL_GOTO(fail, "calibration stats: invalid value");
    return 0;
fail:
    return -1;
}

/* ------------------------------------------------------------------------- */
/* export                                                                     */

/* alpha = mant * 2^-exp with 2^15 <= mant < 2^16 (round to nearest) */
static int alpha_fixed(float alpha, uint32_t *mant, int32_t *exp) {
    int e2;
    double f = frexp((double)alpha, &e2);        /* alpha = f 2^e2, f in [0.5, 1) */
    double mm = nearbyint(f * 65536.0);
    if (mm >= 65536.0) { mm = 32768.0; e2 += 1; }
    int ex = 16 - e2;
    if (!(alpha > 0.0f) || ex < 0 || ex > ATM_MAX_EXP) return -1;
    *mant = (uint32_t)mm;
    *exp = ex;
    return 0;
}

/* int16 vector with the largest exponent e <= ATM_MAX_EXP such that every
 * rounded value fits [-32767, 32767]; -1 if even e = 0 does not fit. */
static int vec_fixed(const double *v, int n, int16_t *out, int32_t *exp) {
    double m = 0.0;
    for (int i = 0; i < n; i++) { if (!isfinite(v[i])) return -1; if (fabs(v[i]) > m) m = fabs(v[i]); }
    int e = ATM_MAX_EXP;
    while (e >= 0 && nearbyint(ldexp(m, e)) > 32767.0) e--;
    if (e < 0) return -1;
    for (int i = 0; i < n; i++) out[i] = (int16_t)nearbyint(ldexp(v[i], e));
    *exp = e;
    return 0;
}

/* Largest f <= fmax with bound * 2^f <= lim (0 if none; the engine saturates). */
static int frac_bits(double bound, double lim, int fmax) {
    int f = fmax;
    while (f > 0 && ldexp(bound, f) > lim) f--;
    return f;
}

typedef struct {
    int8_t  *trits;
    int16_t *vals;
} owned;

/* One export in progress: the tensor views the container writer takes, the
 * memory they own, and where the weights are. */
typedef struct {
    const float *w;
    const atm_config *c;
    atm_atome_off O;
    const atm_calib_stats *cs;
    atm_tensor_view *tv;
    owned *own;
    double *tmp;          /* [C] a vector on its way to int16 */
    int nt, ntens;
    char *err;
    size_t errlen;
} exporter;

/* A ternary tensor: its trits and its scale, exactly the trainer's quantiser. */
static int ex_trits(exporter *e, int kind, int layer, const char *name, size_t off, int rows, int cols) {
    char *err = e->err;
    size_t errlen = e->errlen;
    const float *src = e->w + off;
    size_t cnt = (size_t)rows * (size_t)cols;
    atm_tensor_view *t = &e->tv[e->nt];
    int8_t *tr = e->own[e->nt].trits = malloc(cnt);
    if (!tr) ATM_FAIL("export: out of memory");
    float al = atm_ternary_alpha(src, cnt);
    for (size_t i = 0; i < cnt; i++) tr[i] = (int8_t)atm_ternary_trit(src[i], al);
    t->kind = kind; t->layer = layer; t->dtype = ATM_DT_TRITS;
    t->count = (uint32_t)cnt; t->trits = tr; t->aux = 0;
    if (alpha_fixed(al, &t->mant, &t->exp)) ATM_FAIL("export: scale %g of %s not representable", (double)al, name);
    e->nt++;
    return 0;
}

/* The vector in e->tmp as int16 with a power-of-two exponent. */
static int ex_vec(exporter *e, int kind, int layer, int aux) {
    char *err = e->err;
    size_t errlen = e->errlen;
    const int C = e->c->d_model;
    atm_tensor_view *t = &e->tv[e->nt];
    int16_t *v = e->own[e->nt].vals = malloc(sizeof(int16_t) * (size_t)C);
    if (!v) ATM_FAIL("export: out of memory");
    t->kind = kind; t->layer = layer; t->dtype = ATM_DT_I16;
    t->count = (uint32_t)C; t->vals = v; t->mant = 0; t->aux = aux;
    if (vec_fixed(e->tmp, C, v, &t->exp)) ATM_FAIL("export: vector too large for int16 (kind %d, layer %d)", kind, layer);
    e->nt++;
    return 0;
}

static double ex_alpha(const exporter *e) { return ldexp((double)e->tv[e->nt - 1].mant, -e->tv[e->nt - 1].exp); }

/* LayerNorm l (l == n_layers: the final one); *u_bound: the largest |u| its
 * output format holds: |gamma| sqrt(d-1) + |beta|, tightened by calibration. */
static int ex_layernorm(exporter *e, int l, double *u_bound) {
    const int C = e->c->d_model, Ln = e->c->n_layers;
    const float *g = e->w + (l < Ln ? e->O.blk[l].ln_g : e->O.lnf_g);
    const float *b = e->w + (l < Ln ? e->O.blk[l].ln_b : e->O.lnf_b);
    const double sqrt_d1 = sqrt((double)(C > 1 ? C - 1 : 1));
    double ub = 0.0;
    for (int i = 0; i < C; i++) { double t = fabs((double)g[i]) * sqrt_d1 + fabs((double)b[i]); if (t > ub) ub = t; }
    if (e->cs && e->cs->u_max[l] > 0.0f && 2.0 * e->cs->u_max[l] < ub) ub = 2.0 * e->cs->u_max[l];
    int fu = frac_bits(ub, 32767.0, ATM_MAX_FU);
    *u_bound = ldexp(32767.0, -fu);
    for (int i = 0; i < C; i++) e->tmp[i] = g[i];
    if (ex_vec(e, l < Ln ? ATM_T_LN_G : ATM_T_LNF_G, l < Ln ? l : ATM_LAYER_NONE, fu)) return -1;
    for (int i = 0; i < C; i++) e->tmp[i] = b[i];
    return ex_vec(e, l < Ln ? ATM_T_LN_B : ATM_T_LNF_B, l < Ln ? l : ATM_LAYER_NONE, 0);
}

/* The SSM of layer l: a in Q15 (the same tanhf as gen_new), b*c folded, and
 * the state format from |bc| u_max / (1 - |a|); *bound: the pathway's bound. */
static int ex_ssm(exporter *e, int l, double u_bound, double *bound) {
    char *err = e->err;
    size_t errlen = e->errlen;
    const int C = e->c->d_model;
    const float *ar = e->w + e->O.blk[l].ssm_a, *bb = e->w + e->O.blk[l].ssm_b, *cc = e->w + e->O.blk[l].ssm_c;
    int16_t *A = e->own[e->nt].vals = malloc(sizeof(int16_t) * (size_t)C);
    if (!A) ATM_FAIL("export: out of memory");
    for (int i = 0; i < C; i++) {
        double a = nearbyint((double)tanhf(ar[i]) * 32768.0);
        A[i] = (int16_t)(a > 32767.0 ? 32767.0 : (a < -32767.0 ? -32767.0 : a));
    }
    for (int i = 0; i < C; i++) e->tmp[i] = (double)bb[i] * (double)cc[i];
    double sb = 0.0;
    for (int i = 0; i < C; i++) {
        double t = fabs(e->tmp[i]) * u_bound / (1.0 - fabs((double)A[i]) / 32768.0);
        if (t > sb) sb = t;
    }
    if (e->cs && e->cs->s_max[l] > 0.0f && 2.0 * e->cs->s_max[l] < sb) sb = 2.0 * e->cs->s_max[l];
    atm_tensor_view *t = &e->tv[e->nt];
    t->kind = ATM_T_SSM_A; t->layer = l; t->dtype = ATM_DT_I16; t->count = (uint32_t)C;
    t->vals = A; t->mant = 0; t->exp = 15; t->aux = frac_bits(sb, (double)((1 << 30) - 1), ATM_MAX_FS);
    e->nt++;
    *bound = sb;
    return ex_vec(e, ATM_T_SSM_BC, l, 0);
}

/* Block l after its LayerNorm: the rest of its tensors, in the order of
 * atm_block_tensors (core/container.h); *bound: the most the block adds
 * to the residual (the router weights sum to 1, so the largest pathway
 * bound). */
static int ex_block(exporter *e, int l, double u_bound, double *bound) {
    const atm_config *c = e->c;
    const atm_atome_block_off *bo = &e->O.blk[l];
    const int C = c->d_model, pw = c->pathways, P = (pw & 1) + ((pw >> 1) & 1) + ((pw >> 2) & 1);
    double pb = 0.0;
    for (int i = 0; i < ATM_BLOCK_TENSORS; i++) {
        const atm_block_tensor *bt = &atm_block_tensors[i];
        if (bt->path && !(pw & bt->path)) continue;
        double t = 0.0;
        int rc = 0;
        switch (bt->kind) {
        case ATM_T_CONV:
            rc = ex_trits(e, ATM_T_CONV, l, "conv", bo->conv, C, c->kernel);
            if (!rc) t = ex_alpha(e) * c->kernel * u_bound;
            break;
        case ATM_T_SSM_A: rc = ex_ssm(e, l, u_bound, &t); break;   /* SSM_A and SSM_BC */
        case ATM_T_WQ: rc = ex_trits(e, ATM_T_WQ, l, "attn.wq", bo->wq, c->d_head, C); break;
        case ATM_T_WK: rc = ex_trits(e, ATM_T_WK, l, "attn.wk", bo->wk, c->d_head, C); break;
        case ATM_T_WV:   /* |v| <= alpha_v * d * u_max; the mix is a convex combination */
            rc = ex_trits(e, ATM_T_WV, l, "attn.wv", bo->wv, C, C);
            if (!rc) t = ex_alpha(e) * C * u_bound;
            break;
        case ATM_T_ROUTER: rc = ex_trits(e, ATM_T_ROUTER, l, "router", bo->router, P, C); break;
        default: break;   /* LN_G, LN_B: with the LayerNorm (ex_layernorm); SSM_BC: with SSM_A */
        }
        if (rc) return -1;
        if (t > pb) pb = t;
    }
    *bound = pb;
    return 0;
}

/* The container config of an export (window: the option, else the training seq). */
static int export_config(const atm_config *c, const atm_export_opts *o, atm_mconfig *mc) {
    mc->vocab = c->vocab; mc->d_model = c->d_model; mc->n_layers = c->n_layers;
    mc->pathways = c->pathways;
    mc->d_head = (c->pathways & ATM_PATH_ATTN) ? c->d_head : 0;
    mc->top_k = (c->pathways & ATM_PATH_ATTN) ? c->top_k : 0;
    mc->kernel = (c->pathways & ATM_PATH_CONV) ? c->kernel : 0;
    mc->train_seq = o->train_seq;
    mc->window = o->window > 0 ? o->window : (o->train_seq > 0 ? o->train_seq : 64);
    mc->fx = 0;
    return atm_mconfig_check(mc) == ATM_OK ? 0 : -1;
}

size_t atm_export_float_params(const atm_mconfig *c) {
    atm_config fc = { ATM_FAMILY_ATOME, c->vocab, c->d_model, c->n_layers, c->d_head, 0, c->kernel, c->top_k,
                      c->pathways, 0, 0, 0, 0, 0 };
    atm_layout L;
    return atm_layout_build(&fc, &L) == 0 ? L.n_params : 0;
}

/* Every tensor in container order; the residual format from the bounds. */
static int export_tensors(exporter *e, atm_mconfig *mc) {
    char *err = e->err;
    size_t errlen = e->errlen;
    const atm_config *c = e->c;
    const int Ln = c->n_layers;
    if (ex_trits(e, ATM_T_EMBED, ATM_LAYER_NONE, "embed", e->O.embed, c->vocab, c->d_model)) return -1;
    double x_bound = ex_alpha(e);
    for (int l = 0; l <= Ln; l++) {
        double ub, pb;
        if (ex_layernorm(e, l, &ub)) return -1;
        if (l == Ln) break;
        if (ex_block(e, l, ub, &pb)) return -1;
        x_bound += pb;
    }
    if (ex_trits(e, ATM_T_UNEMBED, ATM_LAYER_NONE, "unembed", e->O.unembed, c->vocab, c->d_model)) return -1;
    if (e->cs) {
        double xm = 0.0;
        for (int l = 0; l <= Ln; l++) if (e->cs->x_max[l] > xm) xm = e->cs->x_max[l];
        if (xm > 0.0 && 2.0 * xm < x_bound) x_bound = 2.0 * xm;
    }
    mc->fx = frac_bits(x_bound, (double)((1 << 30) - 1), ATM_MAX_FX);
    if (e->nt != e->ntens) ATM_FAIL("export: internal tensor count %d != %d", e->nt, e->ntens);
    return 0;
}

int atm_export_atome(const atm_layout *L, const float *w, const atm_export_opts *o,
                     uint8_t **out, size_t *len, char *err, size_t errlen) {
    const atm_config *c = &L->cfg;
    *out = NULL; *len = 0;
    if (cfg_ok(c, err, errlen)) return -1;
    exporter e;
    memset(&e, 0, sizeof e);
    e.w = w; e.c = c; e.cs = o->calib; e.err = err; e.errlen = errlen;
    if (atm_atome_offsets(c, &e.O) || e.O.n_params != L->n_params) ATM_FAIL("export: layout is not an atome layout");
    if (o->encoding != ATM_ENC_ATOME01 && o->encoding != ATM_ENC_ATOME02) ATM_FAIL("export: unknown encoding %d", (int)o->encoding);
    if (o->calib && (o->calib->n_layers != c->n_layers || o->calib->d_model != c->d_model))
        ATM_FAIL("export: calibration statistics are for another shape (%d layers, d %d)", (int)o->calib->n_layers, (int)o->calib->d_model);
    atm_mconfig mc;
    if (export_config(c, o, &mc)) ATM_FAIL("export: window %d or train seq %d out of range", (int)mc.window, (int)mc.train_seq);
    e.ntens = atm_container_tensors(&mc);
    e.tv = calloc((size_t)e.ntens, sizeof *e.tv);
    e.own = calloc((size_t)e.ntens, sizeof *e.own);
    e.tmp = malloc(sizeof(double) * (size_t)c->d_model);
    uint8_t *buf = NULL;
    int rc = -1;
    if (!e.tv || !e.own || !e.tmp) atm_fail(err, errlen, "export: out of memory");
    else if (export_tensors(&e, &mc) == 0) {
        size_t need = atm_container_size(&mc, o->encoding), got = 0;
        atm_status st;
        if (!(buf = malloc(need))) atm_fail(err, errlen, "export: out of memory");
        else if ((st = atm_container_write(&mc, o->encoding, e.tv, e.nt, buf, need, &got)) != ATM_OK)
            atm_fail(err, errlen, "export: container writer: %s", atm_status_str(st));
        else { *out = buf; *len = got; buf = NULL; rc = 0; }
    }
    if (e.own) for (int i = 0; i < e.ntens; i++) { free(e.own[i].trits); free(e.own[i].vals); }
    free(e.own); free(e.tv); free(e.tmp); free(buf);
    return rc;
}

/* ---- calibration sample (shared by the CLI and the wasm front end) ---- */

static void calib_merge(atm_calib_stats *acc, const atm_calib_stats *s, int first) {
    if (first) { *acc = *s; return; }
    const int L = s->n_layers;
    for (int i = 0; i <= L; i++) {
        if (s->x_max[i] > acc->x_max[i]) acc->x_max[i] = s->x_max[i];
        if (s->u_max[i] > acc->u_max[i]) acc->u_max[i] = s->u_max[i];
    }
    for (int i = 0; i < L; i++) {
        if (s->s_max[i] > acc->s_max[i]) acc->s_max[i] = s->s_max[i];
        if (s->q_max[i] > acc->q_max[i]) acc->q_max[i] = s->q_max[i];
        if (s->k_max[i] > acc->k_max[i]) acc->k_max[i] = s->k_max[i];
        if (s->v_max[i] > acc->v_max[i]) acc->v_max[i] = s->v_max[i];
    }
    if (s->logit_max > acc->logit_max) acc->logit_max = s->logit_max;
    acc->positions += s->positions;
}

int atm_calib_sample(const atm_layout *L, const float *w, const uint8_t *bytes, size_t n, int window,
                     atm_calib_stats *st, char *err, size_t errlen) {
    if (n == 0) { snprintf(err, errlen, "calibration: no bytes"); return -1; }
    const uint64_t seg = ATM_CALIB_SEGMENT_BYTES, S = ATM_CALIB_SEGMENTS;
    if ((uint64_t)n <= seg * S) return atm_calib_collect(L, w, bytes, n, window, st, err, errlen);
    /* S segments, the first at 0, the last ending at n, evenly spaced between. */
    for (uint64_t i = 0; i < S; i++) {
        uint64_t start = i * ((uint64_t)n - seg) / (S - 1);
        atm_calib_stats one;
        if (atm_calib_collect(L, w, bytes + start, (size_t)seg, window, &one, err, errlen)) return -1;
        calib_merge(st, &one, i == 0);
    }
    return 0;
}
