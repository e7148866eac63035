/* core/train/atome.c — the atome family: routed ternary block, float32
 * training forward, hand-written backward, and streaming generation.
 *
 * Contract (model.h, maths in docs/model-atome.md):
 *   h0 = embed[x]; per block u = LN(h), r = softmax(router . u) over the
 *   pathways present (conv, ssm, attn in that order), h += sum_p r_p path_p(u);
 *   logits = unembed . LN_f(h); loss = mean cross-entropy over B*T positions.
 * A removed pathway has no tensor at all and the router has popcount(pathways)
 * rows. forward/backward read the EFFECTIVE weights w (quantised by the
 * caller); backward accumulates into dw. acts_new(B, T) allocates everything;
 * forward/backward allocate nothing and accept any B' <= B, T' <= T.
 * Generation keeps, per layer, the last K-1 normalised inputs (conv), the SSM
 * state (never reset) and a K/V cache of the last W positions (attention). */
#include "model.h"
#include "layers.h"
#include "atome_layers.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------- */
/* pathway primitives (atome_layers.h)                                        */

void atm_atome_conv_forward(float *out, const float *u, const float *w,
                            int B, int T, int C, int K) {
    for (int b = 0; b < B; b++) {
        for (int t = 0; t < T; t++) {
            size_t n = (size_t)b * T + t;
            float *o = out + n * C;
            for (int c = 0; c < C; c++) o[c] = 0.0f;
            int jmax = t < K - 1 ? t : K - 1;
            for (int j = 0; j <= jmax; j++) {
                const float *ui = u + (n - (size_t)j) * C;
                for (int c = 0; c < C; c++) o[c] += w[(size_t)c * K + j] * ui[c];
            }
        }
    }
}

void atm_atome_conv_backward(float *du, float *dw, const float *dout, const float *u,
                             const float *w, int B, int T, int C, int K) {
    for (int b = 0; b < B; b++) {
        for (int t = 0; t < T; t++) {
            size_t n = (size_t)b * T + t;
            const float *d = dout + n * C;
            int jmax = t < K - 1 ? t : K - 1;
            for (int j = 0; j <= jmax; j++) {
                size_t m = (n - (size_t)j) * C;
                if (du) for (int c = 0; c < C; c++) du[m + c] += w[(size_t)c * K + j] * d[c];
                if (dw) for (int c = 0; c < C; c++) dw[(size_t)c * K + j] += d[c] * u[m + c];
            }
        }
    }
}

void atm_atome_ssm_forward(float *s, float *out, const float *u, const float *a_raw,
                           const float *b, const float *c_out, float *scratch,
                           int B, int T, int C) {
    float *a = scratch;                                   /* [C] */
    for (int c = 0; c < C; c++) a[c] = tanhf(a_raw[c]);
    for (int bb = 0; bb < B; bb++) {
        size_t n0 = (size_t)bb * T;
        for (int t = 0; t < T; t++) {
            size_t n = (n0 + t) * C;
            float *st = s + n, *o = out + n;
            const float *ut = u + n;
            if (t == 0) {
                for (int c = 0; c < C; c++) st[c] = b[c] * ut[c];
            } else {
                const float *sp = st - C;
                for (int c = 0; c < C; c++) st[c] = a[c] * sp[c] + b[c] * ut[c];
            }
            for (int c = 0; c < C; c++) o[c] = c_out[c] * st[c];
        }
    }
}

void atm_atome_ssm_backward(float *du, float *da_raw, float *db, float *dc,
                            const float *dout, const float *u, const float *s,
                            const float *a_raw, const float *b, const float *c_out,
                            float *scratch, int B, int T, int C) {
    float *a = scratch, *da_fac = scratch + C, *carry = scratch + 2 * (size_t)C; /* [C] each */
    for (int c = 0; c < C; c++) { a[c] = tanhf(a_raw[c]); da_fac[c] = 1.0f - a[c] * a[c]; }
    for (int bb = 0; bb < B; bb++) {
        size_t n0 = (size_t)bb * T;
        for (int c = 0; c < C; c++) carry[c] = 0.0f;     /* a * ds_{t+1} */
        for (int t = T - 1; t >= 0; t--) {
            size_t n = (n0 + t) * C;
            const float *g = dout + n, *st = s + n, *ut = u + n;
            const float *sp = t > 0 ? st - C : NULL;
            for (int c = 0; c < C; c++) {
                float ds = g[c] * c_out[c] + carry[c];   /* dL/ds_t */
                if (dc) dc[c] += g[c] * st[c];
                if (du) du[n + c] += b[c] * ds;
                if (db) db[c] += ds * ut[c];
                if (da_raw && sp) da_raw[c] += ds * sp[c] * da_fac[c];
                carry[c] = a[c] * ds;
            }
        }
    }
}

void atm_atome_attn_forward(float *out, int32_t *idx, float *p, const float *q,
                            const float *k, const float *v,
                            int B, int T, int DH, int C, int TK) {
    const float scale = 1.0f / sqrtf((float)DH);
    for (int b = 0; b < B; b++) {
        size_t n0 = (size_t)b * T;
        for (int t = 0; t < T; t++) {
            size_t n = n0 + t;
            const float *qt = q + n * DH;
            float *ps = p + n * TK;
            int32_t *is = idx + n * TK;
            int keff = TK < t + 1 ? TK : t + 1, cnt = 0;
            for (int j = 0; j <= t; j++) {
                const float *kj = k + (n0 + j) * DH;
                float dot = 0.0f;
                for (int e = 0; e < DH; e++) dot += qt[e] * kj[e];
                atm_atome_topk_insert(ps, is, &cnt, keff, dot * scale, j);
            }
            for (int i = keff; i < TK; i++) { ps[i] = 0.0f; is[i] = -1; }
            atm_softmax(ps, keff);
            float *o = out + n * C;
            for (int c = 0; c < C; c++) o[c] = 0.0f;
            for (int i = 0; i < keff; i++) {
                const float *vi = v + (n0 + (size_t)is[i]) * C;
                float pi = ps[i];
                for (int c = 0; c < C; c++) o[c] += pi * vi[c];
            }
        }
    }
}

void atm_atome_attn_backward(float *dq, float *dk, float *dv, const float *dout,
                             const int32_t *idx, const float *p, const float *q,
                             const float *k, const float *v,
                             int B, int T, int DH, int C, int TK) {
    const float scale = 1.0f / sqrtf((float)DH);
    float dp[ATM_ATOME_MAX_TOPK];
    for (int b = 0; b < B; b++) {
        size_t n0 = (size_t)b * T;
        for (int t = 0; t < T; t++) {
            size_t n = n0 + t;
            const float *d = dout + n * C, *ps = p + n * TK, *qt = q + n * DH;
            const int32_t *is = idx + n * TK;
            int keff = TK < t + 1 ? TK : t + 1;
            float sum = 0.0f;
            for (int i = 0; i < keff; i++) {
                size_t m = n0 + (size_t)is[i];
                const float *vi = v + m * C;
                float acc = 0.0f;
                for (int c = 0; c < C; c++) acc += d[c] * vi[c];
                dp[i] = acc;
                sum += ps[i] * acc;
                if (dv) { float *dvi = dv + m * C; for (int c = 0; c < C; c++) dvi[c] += ps[i] * d[c]; }
            }
            for (int i = 0; i < keff; i++) {
                size_t m = n0 + (size_t)is[i];
                float ds = ps[i] * (dp[i] - sum) * scale;   /* dL / d(q.k) */
                if (dq) { const float *ki = k + m * DH; float *o = dq + n * DH;
                          for (int e = 0; e < DH; e++) o[e] += ds * ki[e]; }
                if (dk) { float *o = dk + m * DH;
                          for (int e = 0; e < DH; e++) o[e] += ds * qt[e]; }
            }
        }
    }
}

void atm_atome_mix_forward(float *hout, float *r, const float *hin,
                           const float *const *paths, int N, int C, int P) {
    for (int n = 0; n < N; n++) {
        float *rn = r + (size_t)n * P;
        atm_softmax(rn, P);
        const float *hi = hin + (size_t)n * C;
        float *ho = hout + (size_t)n * C;
        for (int c = 0; c < C; c++) {
            float acc = hi[c];
            for (int pp = 0; pp < P; pp++) acc += rn[pp] * paths[pp][(size_t)n * C + c];
            ho[c] = acc;
        }
    }
}

void atm_atome_mix_backward(float *drl, float *const *dpaths, const float *dhout,
                            const float *r, const float *const *paths,
                            int N, int C, int P) {
    float dr[ATM_ATOME_MAX_PATHS];
    for (int n = 0; n < N; n++) {
        const float *d = dhout + (size_t)n * C, *rn = r + (size_t)n * P;
        float sum = 0.0f;
        for (int pp = 0; pp < P; pp++) {
            const float *pa = paths[pp] + (size_t)n * C;
            float acc = 0.0f;
            for (int c = 0; c < C; c++) acc += d[c] * pa[c];
            dr[pp] = acc;
            sum += rn[pp] * acc;
            if (dpaths[pp]) {
                float *dpa = dpaths[pp] + (size_t)n * C;
                float rp = rn[pp];
                for (int c = 0; c < C; c++) dpa[c] += rp * d[c];
            }
        }
        for (int pp = 0; pp < P; pp++) drl[(size_t)n * P + pp] += rn[pp] * (dr[pp] - sum);
    }
}

/* ------------------------------------------------------------------------- */
/* layout                                                                     */

static int popcount3(int m) { return (m & 1) + ((m >> 1) & 1) + ((m >> 2) & 1); }

static int atome_layout(const atm_config *c, atm_layout *L) {
    memset(L, 0, sizeof *L);
    L->cfg = *c;
    const int V = c->vocab, d = c->d_model, pw = c->pathways;
    if (V < 1 || d < 1 || c->n_layers < 1 || pw < 1 || pw > ATM_PATH_ALL) return -1;
    if ((pw & ATM_PATH_CONV) && c->kernel < 1) return -1;
    if ((pw & ATM_PATH_ATTN) && (c->d_head < 1 || c->top_k < 1 || c->top_k > ATM_ATOME_MAX_TOPK)) return -1;
    /* std = in^-1/2 for every ternary linear (N(0, 1/in)); conv N(0, 1/K). */
    const float sd = 1.0f / sqrtf((float)d);
    char nm[ATM_TENSOR_NAME];
    int ok = atm_layout_add(L, "embed", V, d, ATM_TK_QUANT, ATM_INIT_NORMAL, sd) >= 0;
    for (int i = 0; i < c->n_layers && ok; i++) {
#define ADD(suffix, rows, cols, kind, init, a) do { \
        snprintf(nm, sizeof nm, "blocks.%d.%s", i, suffix); \
        ok = ok && atm_layout_add(L, nm, rows, cols, kind, init, a) >= 0; } while (0)
        ADD("ln.g", 1, d, ATM_TK_FP32, ATM_INIT_CONST, 1.0f);
        ADD("ln.b", 1, d, ATM_TK_FP32, ATM_INIT_CONST, 0.0f);
        if (pw & ATM_PATH_CONV)
            ADD("conv", d, c->kernel, ATM_TK_QUANT, ATM_INIT_NORMAL, 1.0f / sqrtf((float)c->kernel));
        if (pw & ATM_PATH_SSM) {
            ADD("ssm.a_raw", 1, d, ATM_TK_FP32, ATM_INIT_CONST, 1.5f);
            ADD("ssm.b", 1, d, ATM_TK_FP32, ATM_INIT_NORMAL, sd);
            ADD("ssm.c", 1, d, ATM_TK_FP32, ATM_INIT_NORMAL, sd);
        }
        if (pw & ATM_PATH_ATTN) {
            ADD("attn.wq", c->d_head, d, ATM_TK_QUANT, ATM_INIT_NORMAL, sd);
            ADD("attn.wk", c->d_head, d, ATM_TK_QUANT, ATM_INIT_NORMAL, sd);
            ADD("attn.wv", d, d, ATM_TK_QUANT, ATM_INIT_NORMAL, sd);
        }
        ADD("router", popcount3(pw), d, ATM_TK_QUANT, ATM_INIT_NORMAL, sd);
#undef ADD
    }
    ok = ok && atm_layout_add(L, "ln_f.g", 1, d, ATM_TK_FP32, ATM_INIT_CONST, 1.0f) >= 0;
    ok = ok && atm_layout_add(L, "ln_f.b", 1, d, ATM_TK_FP32, ATM_INIT_CONST, 0.0f) >= 0;
    ok = ok && atm_layout_add(L, "unembed", V, d, ATM_TK_QUANT, ATM_INIT_NORMAL, sd) >= 0;
    return ok ? 0 : -1;
}

/* Offsets of every tensor, resolved by walking the layout in its fixed order
 * and checking each name and shape (a foreign layout is refused). */
typedef struct { size_t ln_g, ln_b, conv, ssm_a, ssm_b, ssm_c, wq, wk, wv, router; } blk_off;
typedef struct { size_t embed, lnf_g, lnf_b, unembed; blk_off blk[64]; } model_off;

static int walk_one(const atm_layout *L, int *ti, const char *name, int rows, int cols, size_t *off) {
    if (*ti >= L->n_tensors) return -1;
    const atm_tensor *t = &L->t[*ti];
    if (strcmp(t->name, name) != 0 || t->rows != rows || t->cols != cols) return -1;
    *off = t->off;
    (*ti)++;
    return 0;
}

static int resolve(const atm_layout *L, model_off *o) {
    const atm_config *c = &L->cfg;
    const int V = c->vocab, d = c->d_model, pw = c->pathways;
    if (c->family != ATM_FAMILY_ATOME || c->n_layers < 1 || c->n_layers > 64) return -1;
    if (pw < 1 || pw > ATM_PATH_ALL) return -1;
    int ti = 0, e = 0;
    char nm[ATM_TENSOR_NAME];
    memset(o, 0, sizeof *o);
    e |= walk_one(L, &ti, "embed", V, d, &o->embed);
    for (int i = 0; i < c->n_layers; i++) {
        blk_off *b = &o->blk[i];
#define W1(suffix, rows, cols, field) do { snprintf(nm, sizeof nm, "blocks.%d.%s", i, suffix); \
        e |= walk_one(L, &ti, nm, rows, cols, &b->field); } while (0)
        W1("ln.g", 1, d, ln_g);
        W1("ln.b", 1, d, ln_b);
        if (pw & ATM_PATH_CONV) W1("conv", d, c->kernel, conv);
        if (pw & ATM_PATH_SSM) { W1("ssm.a_raw", 1, d, ssm_a); W1("ssm.b", 1, d, ssm_b); W1("ssm.c", 1, d, ssm_c); }
        if (pw & ATM_PATH_ATTN) { W1("attn.wq", c->d_head, d, wq); W1("attn.wk", c->d_head, d, wk); W1("attn.wv", d, d, wv); }
        W1("router", popcount3(pw), d, router);
#undef W1
    }
    e |= walk_one(L, &ti, "ln_f.g", 1, d, &o->lnf_g);
    e |= walk_one(L, &ti, "ln_f.b", 1, d, &o->lnf_b);
    e |= walk_one(L, &ti, "unembed", V, d, &o->unembed);
    return (e || ti != L->n_tensors) ? -1 : 0;
}

/* ------------------------------------------------------------------------- */
/* activations                                                                */

typedef struct {
    atm_config cfg;
    int Bmax, Tmax;          /* allocated capacity */
    int B, T;                /* shape of the last forward */
    int ready;               /* 1 after a forward with targets: backward may run */
    int P;                   /* number of pathways (router rows) */
    size_t NM;               /* Bmax*Tmax: row stride of every per-layer buffer */
    float *h;                /* [L+1][NM][C] residual stream; h[l] is block l's input */
    float *ln_mean, *ln_rstd;/* [L][NM] */
    float *u;                /* [L][NM][C] normalised block input */
    float *r;                /* [L][NM][P] router weights (after softmax) */
    float *conv;             /* [L][NM][C] conv pathway output        (conv only) */
    float *ssm_s, *ssm_o;    /* [L][NM][C] SSM state and output        (ssm only) */
    float *q, *k;            /* [L][NM][DH]                            (attn only) */
    float *v, *att;          /* [L][NM][C] values and attention output (attn only) */
    float *att_p;            /* [L][NM][TK] kept softmax weights       (attn only) */
    int32_t *att_idx;        /* [L][NM][TK] kept positions             (attn only) */
    float *lnf_mean, *lnf_rstd; /* [NM] */
    float *uf;               /* [NM][C] final-LN output */
    float *logits, *probs;   /* [NM][V] */
    /* backward scratch */
    float *dlogits;          /* [NM][V] */
    float *dh, *du;          /* [NM][C] */
    float *dpath[ATM_ATOME_MAX_PATHS]; /* [NM][C] each */
    float *drl;              /* [NM][P] */
    float *dq, *dk;          /* [NM][DH] (attn only) */
    float *dv;               /* [NM][C]  (attn only) */
    float *ssm_scratch;      /* [3*C] */
    uint8_t *in, *tgt;       /* [NM] copies of the last forward's bytes */
    float *fmem;
    int32_t *imem;
} atome_acts;

static void *atome_acts_new(const atm_config *c, int B, int T) {
    if (!c || c->family != ATM_FAMILY_ATOME || B < 1 || T < 1) return NULL;
    if (c->d_model < 1 || c->n_layers < 1 || c->vocab < 1 || c->pathways < 1 || c->pathways > ATM_PATH_ALL) return NULL;
    if ((c->pathways & ATM_PATH_ATTN) && (c->d_head < 1 || c->top_k < 1 || c->top_k > ATM_ATOME_MAX_TOPK)) return NULL;
    if ((size_t)B * (size_t)T > (size_t)1 << 28) return NULL;
    atome_acts *a = calloc(1, sizeof *a);
    if (!a) return NULL;
    a->cfg = *c; a->Bmax = B; a->Tmax = T;
    a->P = popcount3(c->pathways);
    const size_t NM = (size_t)B * T, C = (size_t)c->d_model, Ln = (size_t)c->n_layers, V = (size_t)c->vocab;
    const int cv = (c->pathways & ATM_PATH_CONV) != 0, sm = (c->pathways & ATM_PATH_SSM) != 0,
              at = (c->pathways & ATM_PATH_ATTN) != 0;
    const size_t DH = at ? (size_t)c->d_head : 0, TK = at ? (size_t)c->top_k : 0, P = (size_t)a->P;
    a->NM = NM;
    size_t sizes[32], n = 0, total = 0;
    float **ptrs[32];
#define F(ptr, count) do { ptrs[n] = &(ptr); sizes[n] = (count); total += sizes[n]; n++; } while (0)
    F(a->h, (Ln + 1) * NM * C);
    F(a->ln_mean, Ln * NM); F(a->ln_rstd, Ln * NM);
    F(a->u, Ln * NM * C);
    F(a->r, Ln * NM * P);
    F(a->conv, cv ? Ln * NM * C : 0);
    F(a->ssm_s, sm ? Ln * NM * C : 0); F(a->ssm_o, sm ? Ln * NM * C : 0);
    F(a->q, Ln * NM * DH); F(a->k, Ln * NM * DH);
    F(a->v, at ? Ln * NM * C : 0); F(a->att, at ? Ln * NM * C : 0);
    F(a->att_p, Ln * NM * TK);
    F(a->lnf_mean, NM); F(a->lnf_rstd, NM);
    F(a->uf, NM * C);
    F(a->logits, NM * V); F(a->probs, NM * V); F(a->dlogits, NM * V);
    F(a->dh, NM * C); F(a->du, NM * C);
    for (size_t i = 0; i < P; i++) F(a->dpath[i], NM * C);
    F(a->drl, NM * P);
    F(a->dq, NM * DH); F(a->dk, NM * DH);
    F(a->dv, at ? NM * C : 0);
    F(a->ssm_scratch, 3 * C);
#undef F
    a->fmem = malloc(sizeof(float) * total);
    a->imem = at ? malloc(sizeof(int32_t) * Ln * NM * TK) : NULL;
    a->in = malloc(2 * NM);
    if (!a->fmem || (at && !a->imem) || !a->in) {
        free(a->fmem); free(a->imem); free(a->in); free(a);
        return NULL;
    }
    memset(a->fmem, 0, sizeof(float) * total);
    float *f = a->fmem;
    for (size_t i = 0; i < n; i++) { *ptrs[i] = sizes[i] ? f : NULL; f += sizes[i]; }
    a->att_idx = a->imem;
    a->tgt = a->in + NM;
    return a;
}

static void atome_acts_free(void *acts) {
    atome_acts *a = acts;
    if (!a) return;
    free(a->fmem); free(a->imem); free(a->in); free(a);
}

uint64_t atm_atome_selection_hash(const void *acts) {
    const atome_acts *a = acts;
    if (!a || !a->att_idx) return 0;
    const size_t N = (size_t)a->B * a->T, TK = (size_t)a->cfg.top_k;
    uint64_t hsh = 1469598103934665603ull;               /* FNV-1a 64 offset basis */
    for (int l = 0; l < a->cfg.n_layers; l++) {
        const int32_t *ix = a->att_idx + (size_t)l * a->NM * TK;
        for (size_t n = 0; n < N; n++) {
            int32_t row[ATM_ATOME_MAX_TOPK];              /* the kept SET: sorted, order-free */
            for (size_t i = 0; i < TK; i++) {
                int32_t x = ix[n * TK + i];
                size_t j = i;
                while (j > 0 && row[j - 1] > x) { row[j] = row[j - 1]; j--; }
                row[j] = x;
            }
            for (size_t i = 0; i < TK; i++) {
                hsh ^= (uint32_t)row[i];
                hsh *= 1099511628211ull;                  /* FNV-1a 64 prime */
            }
        }
    }
    return hsh;
}

/* ------------------------------------------------------------------------- */
/* forward / backward                                                         */

static double atome_forward(const atm_layout *L, const float *w, void *acts,
                            const uint8_t *in, const uint8_t *tgt, int B, int T) {
    atome_acts *a = acts;
    if (!a || !L || !w || !in) return NAN;
    a->ready = 0;
    model_off o;
    const atm_config *cfg = &L->cfg;
    if (resolve(L, &o) != 0 || B < 1 || T < 1 || B > a->Bmax || T > a->Tmax) return NAN;
    if (cfg->d_model != a->cfg.d_model || cfg->n_layers != a->cfg.n_layers || cfg->vocab != a->cfg.vocab ||
        cfg->pathways != a->cfg.pathways ||
        ((cfg->pathways & ATM_PATH_ATTN) && (cfg->d_head != a->cfg.d_head || cfg->top_k != a->cfg.top_k)))
        return NAN;
    const int C = cfg->d_model, V = cfg->vocab, K = cfg->kernel, DH = cfg->d_head, TK = cfg->top_k;
    const int P = a->P, N = B * T, pw = cfg->pathways;
    const size_t NM = a->NM, SC = NM * (size_t)C;
    for (int i = 0; i < N; i++)
        if (in[i] >= V || (tgt && tgt[i] >= V)) return NAN;
    memcpy(a->in, in, (size_t)N);
    if (tgt) memcpy(a->tgt, tgt, (size_t)N);
    a->B = B; a->T = T;

    atm_embed_forward(a->h, in, w + o.embed, NULL, N, T, C);
    for (int l = 0; l < cfg->n_layers; l++) {
        const blk_off *bo = &o.blk[l];
        const float *h = a->h + (size_t)l * SC;
        float *hn = a->h + (size_t)(l + 1) * SC;
        float *u = a->u + (size_t)l * SC;
        float *r = a->r + (size_t)l * NM * P;
        const float *paths[ATM_ATOME_MAX_PATHS];
        int np = 0;
        atm_layernorm_forward(u, a->ln_mean + (size_t)l * NM, a->ln_rstd + (size_t)l * NM,
                              h, w + bo->ln_g, w + bo->ln_b, N, C);
        atm_matmul_forward(r, u, w + bo->router, N, C, P);
        if (pw & ATM_PATH_CONV) {
            float *cv = a->conv + (size_t)l * SC;
            atm_atome_conv_forward(cv, u, w + bo->conv, B, T, C, K);
            paths[np++] = cv;
        }
        if (pw & ATM_PATH_SSM) {
            float *so = a->ssm_o + (size_t)l * SC;
            atm_atome_ssm_forward(a->ssm_s + (size_t)l * SC, so, u, w + bo->ssm_a, w + bo->ssm_b,
                                  w + bo->ssm_c, a->ssm_scratch, B, T, C);
            paths[np++] = so;
        }
        if (pw & ATM_PATH_ATTN) {
            float *q = a->q + (size_t)l * NM * DH, *k = a->k + (size_t)l * NM * DH;
            float *v = a->v + (size_t)l * SC, *at = a->att + (size_t)l * SC;
            atm_matmul_forward(q, u, w + bo->wq, N, C, DH);
            atm_matmul_forward(k, u, w + bo->wk, N, C, DH);
            atm_matmul_forward(v, u, w + bo->wv, N, C, C);
            atm_atome_attn_forward(at, a->att_idx + (size_t)l * NM * TK, a->att_p + (size_t)l * NM * TK,
                                   q, k, v, B, T, DH, C, TK);
            paths[np++] = at;
        }
        atm_atome_mix_forward(hn, r, h, paths, N, C, P);
    }
    const float *hL = a->h + (size_t)cfg->n_layers * SC;
    atm_layernorm_forward(a->uf, a->lnf_mean, a->lnf_rstd, hL, w + o.lnf_g, w + o.lnf_b, N, C);
    atm_matmul_forward(a->logits, a->uf, w + o.unembed, N, C, V);
    if (!tgt) return 0.0;
    double sum = atm_xent_forward(a->probs, a->logits, tgt, N, V);
    a->ready = 1;
    return sum / (double)N;
}

static void atome_backward(const atm_layout *L, const float *w, void *acts, float *dw) {
    atome_acts *a = acts;
    model_off o;
    if (!a || !a->ready || !L || !w || !dw || resolve(L, &o) != 0) return;
    const atm_config *cfg = &L->cfg;
    const int C = cfg->d_model, V = cfg->vocab, K = cfg->kernel, DH = cfg->d_head, TK = cfg->top_k;
    const int P = a->P, B = a->B, T = a->T, N = B * T, pw = cfg->pathways;
    const size_t NM = a->NM, SC = NM * (size_t)C, NC = (size_t)N * C;

    memset(a->dlogits, 0, sizeof(float) * (size_t)N * V);
    atm_xent_backward(a->dlogits, a->probs, a->tgt, N, V, 1.0f / (float)N);
    memset(a->du, 0, sizeof(float) * NC);
    atm_matmul_backward(a->du, dw + o.unembed, a->dlogits, a->uf, w + o.unembed, N, C, V);
    memset(a->dh, 0, sizeof(float) * NC);
    atm_layernorm_backward(a->dh, dw + o.lnf_g, dw + o.lnf_b, a->du, a->h + (size_t)cfg->n_layers * SC,
                           w + o.lnf_g, a->lnf_mean, a->lnf_rstd, N, C);
    for (int l = cfg->n_layers - 1; l >= 0; l--) {
        const blk_off *bo = &o.blk[l];
        const float *u = a->u + (size_t)l * SC, *r = a->r + (size_t)l * NM * P;
        const float *paths[ATM_ATOME_MAX_PATHS];
        int np = 0;
        if (pw & ATM_PATH_CONV) paths[np++] = a->conv + (size_t)l * SC;
        if (pw & ATM_PATH_SSM) paths[np++] = a->ssm_o + (size_t)l * SC;
        if (pw & ATM_PATH_ATTN) paths[np++] = a->att + (size_t)l * SC;
        for (int i = 0; i < P; i++) memset(a->dpath[i], 0, sizeof(float) * NC);
        memset(a->drl, 0, sizeof(float) * (size_t)N * P);
        atm_atome_mix_backward(a->drl, a->dpath, a->dh, r, paths, N, C, P);

        memset(a->du, 0, sizeof(float) * NC);
        atm_matmul_backward(a->du, dw + bo->router, a->drl, u, w + bo->router, N, C, P);
        np = 0;
        if (pw & ATM_PATH_CONV)
            atm_atome_conv_backward(a->du, dw + bo->conv, a->dpath[np++], u, w + bo->conv, B, T, C, K);
        if (pw & ATM_PATH_SSM)
            atm_atome_ssm_backward(a->du, dw + bo->ssm_a, dw + bo->ssm_b, dw + bo->ssm_c, a->dpath[np++], u,
                                   a->ssm_s + (size_t)l * SC, w + bo->ssm_a, w + bo->ssm_b, w + bo->ssm_c,
                                   a->ssm_scratch, B, T, C);
        if (pw & ATM_PATH_ATTN) {
            const float *q = a->q + (size_t)l * NM * DH, *k = a->k + (size_t)l * NM * DH;
            const float *v = a->v + (size_t)l * SC;
            memset(a->dq, 0, sizeof(float) * (size_t)N * DH);
            memset(a->dk, 0, sizeof(float) * (size_t)N * DH);
            memset(a->dv, 0, sizeof(float) * NC);
            atm_atome_attn_backward(a->dq, a->dk, a->dv, a->dpath[np++], a->att_idx + (size_t)l * NM * TK,
                                    a->att_p + (size_t)l * NM * TK, q, k, v, B, T, DH, C, TK);
            atm_matmul_backward(a->du, dw + bo->wq, a->dq, u, w + bo->wq, N, C, DH);
            atm_matmul_backward(a->du, dw + bo->wk, a->dk, u, w + bo->wk, N, C, DH);
            atm_matmul_backward(a->du, dw + bo->wv, a->dv, u, w + bo->wv, N, C, C);
        }
        /* dh_l = dh_{l+1} (residual) + LN_l^T du */
        atm_layernorm_backward(a->dh, dw + bo->ln_g, dw + bo->ln_b, a->du, a->h + (size_t)l * SC,
                               w + bo->ln_g, a->ln_mean + (size_t)l * NM, a->ln_rstd + (size_t)l * NM, N, C);
    }
    atm_embed_backward(dw + o.embed, NULL, a->in, a->dh, N, T, C);
}

static const float *atome_logits(void *acts) {
    atome_acts *a = acts;
    return a ? a->logits : NULL;
}

/* ------------------------------------------------------------------------- */
/* streaming generation                                                       */

typedef struct {
    atm_config cfg;
    model_off o;
    int W, P;
    uint64_t pos;            /* positions fed so far */
    float *w;                /* [n_params] private copy of the effective weights */
    float *x, *u;            /* [C] residual stream and normalised input */
    float *paths[ATM_ATOME_MAX_PATHS]; /* [C] each */
    float *r;                /* [P] */
    float *q;                /* [DH] */
    float *logits;           /* [V] */
    float *ssm_a;            /* [L][C] tanh(a_raw) */
    float *ssm_s;            /* [L][C] SSM state, never reset */
    float *hist;             /* [L][K-1][C] ring: u of position p at slot p % (K-1) */
    float *kc;               /* [L][W][DH] ring: k of position p at slot p % W */
    float *vc;               /* [L][W][C]  ring: v of position p at slot p % W */
    float sel_s[ATM_ATOME_MAX_TOPK];
    int32_t sel_i[ATM_ATOME_MAX_TOPK];
    float *mem;
} atome_gen;

/* Window cap: the K/V cache is L*W*(DH+C) floats; 2^20 positions is far past
 * any use and keeps that product in range. */
#define ATOME_GEN_MAX_WINDOW (1 << 20)

static void *atome_gen_new(const atm_layout *L, const float *w, int window) {
    model_off o;
    if (!L || !w || window < 1 || window > ATOME_GEN_MAX_WINDOW || resolve(L, &o) != 0) return NULL;
    const atm_config *c = &L->cfg;
    const int at = (c->pathways & ATM_PATH_ATTN) != 0, cv = (c->pathways & ATM_PATH_CONV) != 0;
    const size_t C = (size_t)c->d_model, Ln = (size_t)c->n_layers, V = (size_t)c->vocab;
    const size_t DH = at ? (size_t)c->d_head : 0, W = at ? (size_t)window : 0;
    const size_t KH = cv ? (size_t)c->kernel - 1 : 0;
    atome_gen *g = calloc(1, sizeof *g);
    if (!g) return NULL;
    g->cfg = *c; g->o = o; g->W = window; g->P = popcount3(c->pathways);
    size_t total = L->n_params + 2 * C + ATM_ATOME_MAX_PATHS * C + (size_t)g->P + DH + V
                 + 2 * Ln * C + Ln * KH * C + Ln * W * (DH + C);
    g->mem = calloc(total, sizeof(float));
    if (!g->mem) { free(g); return NULL; }
    float *f = g->mem;
    g->w = f; f += L->n_params;
    memcpy(g->w, w, sizeof(float) * L->n_params);
    g->x = f; f += C;
    g->u = f; f += C;
    for (int i = 0; i < ATM_ATOME_MAX_PATHS; i++) { g->paths[i] = f; f += C; }
    g->r = f; f += g->P;
    g->q = f; f += DH;
    g->logits = f; f += V;
    g->ssm_a = f; f += Ln * C;
    g->ssm_s = f; f += Ln * C;
    g->hist = f; f += Ln * KH * C;
    g->kc = f; f += Ln * W * DH;
    g->vc = f;
    if (c->pathways & ATM_PATH_SSM)
        for (size_t l = 0; l < Ln; l++)
            for (size_t i = 0; i < C; i++) g->ssm_a[l * C + i] = tanhf(g->w[o.blk[l].ssm_a + i]);
    return g;
}

static const float *atome_gen_step(void *gen, int token) {
    atome_gen *g = gen;
    if (!g) return NULL;
    const atm_config *c = &g->cfg;
    const int C = c->d_model, V = c->vocab, K = c->kernel, DH = c->d_head, TK = c->top_k;
    const int P = g->P, pw = c->pathways, W = g->W;
    const float *w = g->w;
    const uint64_t pos = g->pos;
    if (token < 0 || token >= V) token = 0;
    memcpy(g->x, w + g->o.embed + (size_t)token * C, sizeof(float) * (size_t)C);
    for (int l = 0; l < c->n_layers; l++) {
        const blk_off *bo = &g->o.blk[l];
        float *u = g->u;
        const float *paths[ATM_ATOME_MAX_PATHS];
        int np = 0;
        atm_layernorm_forward(u, NULL, NULL, g->x, w + bo->ln_g, w + bo->ln_b, 1, C);
        atm_matmul_forward(g->r, u, w + bo->router, 1, C, P);
        if (pw & ATM_PATH_CONV) {
            float *out = g->paths[np];
            const float *cw = w + bo->conv;
            float *hist = g->hist + (size_t)l * (K - 1) * C;
            for (int i = 0; i < C; i++) out[i] = 0.0f;
            int jmax = (uint64_t)(K - 1) < pos ? K - 1 : (int)pos;
            for (int j = 0; j <= jmax; j++) {
                const float *src = j == 0 ? u : hist + (size_t)((pos - (uint64_t)j) % (uint64_t)(K - 1)) * C;
                for (int i = 0; i < C; i++) out[i] += cw[(size_t)i * K + j] * src[i];
            }
            if (K > 1) memcpy(hist + (size_t)(pos % (uint64_t)(K - 1)) * C, u, sizeof(float) * (size_t)C);
            paths[np] = out; np++;
        }
        if (pw & ATM_PATH_SSM) {
            float *out = g->paths[np];
            float *s = g->ssm_s + (size_t)l * C;
            const float *a = g->ssm_a + (size_t)l * C, *b = w + bo->ssm_b, *co = w + bo->ssm_c;
            for (int i = 0; i < C; i++) { s[i] = a[i] * s[i] + b[i] * u[i]; out[i] = co[i] * s[i]; }
            paths[np] = out; np++;
        }
        if (pw & ATM_PATH_ATTN) {
            float *out = g->paths[np];
            float *kc = g->kc + (size_t)l * W * DH, *vc = g->vc + (size_t)l * W * C;
            const size_t slot = (size_t)(pos % (uint64_t)W);
            atm_matmul_forward(g->q, u, w + bo->wq, 1, C, DH);
            atm_matmul_forward(kc + slot * DH, u, w + bo->wk, 1, C, DH);
            atm_matmul_forward(vc + slot * C, u, w + bo->wv, 1, C, C);
            const float scale = 1.0f / sqrtf((float)DH);
            const uint64_t n = pos + 1 < (uint64_t)W ? pos + 1 : (uint64_t)W;  /* cached positions */
            const uint64_t first = pos + 1 - n;                                 /* oldest cached */
            int keff = (uint64_t)TK < n ? TK : (int)n, cnt = 0;
            for (uint64_t pp = first; pp <= pos; pp++) {
                const float *kj = kc + (size_t)(pp % (uint64_t)W) * DH;
                float dot = 0.0f;
                for (int e = 0; e < DH; e++) dot += g->q[e] * kj[e];
                atm_atome_topk_insert(g->sel_s, g->sel_i, &cnt, keff, dot * scale, (int32_t)(pp % (uint64_t)W));
            }
            atm_softmax(g->sel_s, keff);
            for (int i = 0; i < C; i++) out[i] = 0.0f;
            for (int s = 0; s < keff; s++) {
                const float *vi = vc + (size_t)g->sel_i[s] * C;
                float pi = g->sel_s[s];
                for (int i = 0; i < C; i++) out[i] += pi * vi[i];
            }
            paths[np] = out; np++;
        }
        atm_atome_mix_forward(g->x, g->r, g->x, paths, 1, C, P);
    }
    atm_layernorm_forward(g->u, NULL, NULL, g->x, w + g->o.lnf_g, w + g->o.lnf_b, 1, C);
    atm_matmul_forward(g->logits, g->u, w + g->o.unembed, 1, C, V);
    g->pos = pos + 1;
    return g->logits;
}

static void atome_gen_free(void *gen) {
    atome_gen *g = gen;
    if (!g) return;
    free(g->mem);
    free(g);
}

const atm_family atm_family_atome = {
    "atome", atome_layout, atome_acts_new, atome_acts_free, atome_forward, atome_backward,
    atome_logits, atome_gen_new, atome_gen_step, atome_gen_free
};
