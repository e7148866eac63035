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
 * state (never reset) and a K/V cache of the last W positions (attention).
 * The pathways' kernels are not here: their plain-C references are
 * kernels/pathways_ref.c, their SIMD sets the layer kernels (atome_layers.h). */
#include "model.h"
#include "trainer.h"
#include "layers.h"
#include "atome_layers.h"
#include "pool.h"
#include "kernels/vecf.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------- */
/* layout                                                                     */

static int popcount3(int m) { return (m & 1) + ((m >> 1) & 1) + ((m >> 2) & 1); }

/* The one declaration of the family's tensors, in layout order. With L it
 * builds the layout table (names, shapes, kinds, inits); with o it records
 * each tensor's offset — by arithmetic alone, so a training step never looks
 * a name up. */
static int atome_declare(const atm_config *c, atm_layout *L, atm_atome_off *o) {
    const int V = c->vocab, d = c->d_model, pw = c->pathways;
    if (c->family != ATM_FAMILY_ATOME || V < 1 || d < 1 || c->n_layers < 1 || c->n_layers > ATM_ATOME_MAX_LAYERS) return -1;
    if (pw < 1 || pw > ATM_PATH_ALL) return -1;
    if ((pw & ATM_PATH_CONV) && c->kernel < 1) return -1;
    if ((pw & ATM_PATH_ATTN) && (c->d_head < 1 || c->top_k < 1 || c->top_k > ATM_ATOME_MAX_TOPK)) return -1;
    if (L) { memset(L, 0, sizeof *L); L->cfg = *c; }
    if (o) memset(o, 0, sizeof *o);
    /* std = in^-1/2 for every ternary linear (N(0, 1/in)); conv N(0, 1/K). */
    const float sd = 1.0f / sqrtf((float)d);
    size_t at = 0;
    int ok = 1;
    char nm[ATM_TENSOR_NAME];
#define T(slot, name, rows, cols, kind, init, a) do { \
        if (o) o->slot = at; \
        at += (size_t)(rows) * (size_t)(cols); \
        if (L) ok = ok && atm_layout_add(L, name, rows, cols, kind, init, a) >= 0; } while (0)
#define B(field, suffix, rows, cols, kind, init, a) do { \
        if (L) snprintf(nm, sizeof nm, "blocks.%d.%s", i, suffix); \
        T(blk[i].field, nm, rows, cols, kind, init, a); } while (0)
    T(embed, "embed", V, d, ATM_TK_QUANT, ATM_INIT_NORMAL, sd);
    for (int i = 0; i < c->n_layers; i++) {
        B(ln_g, "ln.g", 1, d, ATM_TK_FP32, ATM_INIT_CONST, 1.0f);
        B(ln_b, "ln.b", 1, d, ATM_TK_FP32, ATM_INIT_CONST, 0.0f);
        if (pw & ATM_PATH_CONV)
            B(conv, "conv", d, c->kernel, ATM_TK_QUANT, ATM_INIT_NORMAL, 1.0f / sqrtf((float)c->kernel));
        if (pw & ATM_PATH_SSM) {
            B(ssm_a, "ssm.a_raw", 1, d, ATM_TK_FP32, ATM_INIT_CONST, 1.5f);
            B(ssm_b, "ssm.b", 1, d, ATM_TK_FP32, ATM_INIT_NORMAL, sd);
            B(ssm_c, "ssm.c", 1, d, ATM_TK_FP32, ATM_INIT_NORMAL, sd);
        }
        if (pw & ATM_PATH_ATTN) {
            B(wq, "attn.wq", c->d_head, d, ATM_TK_QUANT, ATM_INIT_NORMAL, sd);
            B(wk, "attn.wk", c->d_head, d, ATM_TK_QUANT, ATM_INIT_NORMAL, sd);
            B(wv, "attn.wv", d, d, ATM_TK_QUANT, ATM_INIT_NORMAL, sd);
        }
        B(router, "router", popcount3(pw), d, ATM_TK_QUANT, ATM_INIT_NORMAL, sd);
    }
    T(lnf_g, "ln_f.g", 1, d, ATM_TK_FP32, ATM_INIT_CONST, 1.0f);
    T(lnf_b, "ln_f.b", 1, d, ATM_TK_FP32, ATM_INIT_CONST, 0.0f);
    T(unembed, "unembed", V, d, ATM_TK_QUANT, ATM_INIT_NORMAL, sd);
#undef B
#undef T
    if (o) o->n_params = at;
    return ok ? 0 : -1;
}

static int atome_layout(const atm_config *c, atm_layout *L) { return atome_declare(c, L, NULL); }

int atm_atome_offsets(const atm_config *c, atm_atome_off *o) { return atome_declare(c, NULL, o); }

typedef atm_atome_block_off blk_off;
typedef atm_atome_off model_off;

/* The offsets of a layout (built by atome_layout, so in the same order):
 * arithmetic on its config, and the count as a check against a foreign
 * layout. */
static int resolve(const atm_layout *L, model_off *o) {
    if (atome_declare(&L->cfg, NULL, o) != 0 || o->n_params != L->n_params) return -1;
    return 0;
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
    float *scratch;          /* [ATM_ATOME_SCRATCH(C, K)] conv/ssm scratch */
    float *attn_scratch;     /* [(DH+1)*Tmax] (attn only) */
    uint8_t *in, *tgt;       /* [NM] copies of the last forward's bytes */
    const float *soft;       /* [NM][V] distillation targets (set_soft_targets) or NULL */
    float soft_w;            /* their weight in the loss */
    float *fmem;
    int32_t *imem;
} atome_acts;

const float *atm_atome_router_weights(const void *acts, size_t *layer_stride, int *P) {
    const atome_acts *a = (const atome_acts *)acts;
    *layer_stride = a->NM * (size_t)a->P;
    *P = a->P;
    return a->r;
}

static void *atome_acts_new(const atm_config *c, int B, int T) {
    if (!c || c->family != ATM_FAMILY_ATOME || B < 1 || T < 1) return NULL;
    if (c->d_model < 1 || c->n_layers < 1 || c->vocab < 1 || c->pathways < 1 || c->pathways > ATM_PATH_ALL) return NULL;
    if ((c->pathways & ATM_PATH_ATTN) && (c->d_head < 1 || c->top_k < 1 || c->top_k > ATM_ATOME_MAX_TOPK)) return NULL;
    if ((size_t)B * (size_t)T > (size_t)1 << 28) return NULL;
    atome_acts *a = calloc(1, sizeof *a);
    if (!a) return NULL;
    a->cfg = *c; a->Bmax = B; a->Tmax = T;
    a->P = popcount3(c->pathways);
    /* sizes in 64 bits: B*T*C... can pass 2^32 floats, more than a 32-bit size_t (wasm) holds */
    const uint64_t NM = (uint64_t)B * T, C = (uint64_t)c->d_model, Ln = (uint64_t)c->n_layers, V = (uint64_t)c->vocab;
    const int cv = (c->pathways & ATM_PATH_CONV) != 0, sm = (c->pathways & ATM_PATH_SSM) != 0,
              at = (c->pathways & ATM_PATH_ATTN) != 0;
    const uint64_t DH = at ? (uint64_t)c->d_head : 0, TK = at ? (uint64_t)c->top_k : 0, P = (uint64_t)a->P;
    a->NM = NM;
    uint64_t sizes[32], total = 0;
    size_t n = 0;
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
    F(a->scratch, ATM_ATOME_SCRATCH(C, (c->pathways & ATM_PATH_CONV) ? (size_t)c->kernel : 0));
    F(a->attn_scratch, at ? (DH + 1) * (size_t)T : 0);
#undef F
    if (total > SIZE_MAX / sizeof(float) / 2 || Ln * NM * TK > SIZE_MAX / sizeof(int32_t) / 2 || 2 * NM > SIZE_MAX / 2) {
        free(a);
        return NULL;
    }
    a->fmem = malloc(sizeof(float) * (size_t)total);
    a->imem = at ? malloc(sizeof(int32_t) * (size_t)(Ln * NM * TK)) : NULL;
    a->in = malloc((size_t)(2 * NM));
    if (!a->fmem || (at && !a->imem) || !a->in) {
        free(a->fmem); free(a->imem); free(a->in); free(a);
        return NULL;
    }
    memset(a->fmem, 0, sizeof(float) * (size_t)total);
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

/* 1 if a forward of B x T bytes under cfg fits the activations a (its
 * capacity, and the config they were allocated for). */
static int forward_fits(const atome_acts *a, const atm_config *cfg, int B, int T) {
    if (B < 1 || T < 1 || B > a->Bmax || T > a->Tmax) return 0;
    if (cfg->d_model != a->cfg.d_model || cfg->n_layers != a->cfg.n_layers || cfg->vocab != a->cfg.vocab ||
        cfg->pathways != a->cfg.pathways ||
        ((cfg->pathways & ATM_PATH_ATTN) && (cfg->d_head != a->cfg.d_head || cfg->top_k != a->cfg.top_k)))
        return 0;
    return 1;
}

/* Block l of the forward over the last shape (a->B x a->T): u = LN(h_l),
 * the router's logits (with the attention's q, k, v: one call), the
 * pathways present, and h_{l+1} = h_l + the router's mix of them. */
static void forward_block(atome_acts *a, const atm_config *cfg, const float *w, const blk_off *bo, int l) {
    const int C = cfg->d_model, K = cfg->kernel, DH = cfg->d_head, TK = cfg->top_k;
    const int P = a->P, B = a->B, T = a->T, N = B * T, pw = cfg->pathways;
    const size_t NM = a->NM, SC = NM * (size_t)C;
    const float *h = a->h + (size_t)l * SC;
    float *hn = a->h + (size_t)(l + 1) * SC;
    float *u = a->u + (size_t)l * SC;
    float *r = a->r + (size_t)l * NM * P;
    const float *paths[ATM_ATOME_MAX_PATHS];
    int np = 0;
    atm_layernorm_forward(u, a->ln_mean + (size_t)l * NM, a->ln_rstd + (size_t)l * NM,
                          h, w + bo->ln_g, w + bo->ln_b, N, C);
    if (pw & ATM_PATH_ATTN) {    /* the router's and the attention's products of u: one call */
        float *const outs[4] = { r, a->q + (size_t)l * NM * DH, a->k + (size_t)l * NM * DH, a->v + (size_t)l * SC };
        const float *const ws[4] = { w + bo->router, w + bo->wq, w + bo->wk, w + bo->wv };
        const int ocs[4] = { P, DH, DH, C };
        atm_matmul_forward_many(4, outs, u, ws, N, C, ocs);
    } else {
        atm_matmul_forward(r, u, w + bo->router, N, C, P);
    }
    if (pw & ATM_PATH_CONV) {
        float *cv = a->conv + (size_t)l * SC;
        atm_atome_conv_forward(cv, u, w + bo->conv, a->scratch, B, T, C, K);
        paths[np++] = cv;
    }
    if (pw & ATM_PATH_SSM) {
        float *so = a->ssm_o + (size_t)l * SC;
        atm_atome_ssm_forward(a->ssm_s + (size_t)l * SC, so, u, w + bo->ssm_a, w + bo->ssm_b,
                              w + bo->ssm_c, a->scratch, B, T, C);
        paths[np++] = so;
    }
    if (pw & ATM_PATH_ATTN) {
        float *q = a->q + (size_t)l * NM * DH, *k = a->k + (size_t)l * NM * DH;
        float *v = a->v + (size_t)l * SC, *at = a->att + (size_t)l * SC;
        if (cfg->attn_window > 0 && cfg->attn_window < T)
            atm_atome_attn_forward_window(at, a->att_idx + (size_t)l * NM * TK, a->att_p + (size_t)l * NM * TK,
                                          q, k, v, a->attn_scratch, B, T, DH, C, TK, cfg->attn_window);
        else
            atm_atome_attn_forward(at, a->att_idx + (size_t)l * NM * TK, a->att_p + (size_t)l * NM * TK,
                                   q, k, v, a->attn_scratch, B, T, DH, C, TK);
        paths[np++] = at;
    }
    atm_atome_mix_forward(hn, r, h, paths, N, C, P);
}

static double atome_forward(const atm_layout *L, const float *w, void *acts,
                            const uint8_t *in, const uint8_t *tgt, int B, int T) {
    atome_acts *a = acts;
    if (!a || !L || !w || !in) return NAN;
    a->ready = 0;
    model_off o;
    const atm_config *cfg = &L->cfg;
    if (resolve(L, &o) != 0 || !forward_fits(a, cfg, B, T)) return NAN;
    const int C = cfg->d_model, V = cfg->vocab, N = B * T;
    for (int i = 0; i < N; i++)
        if (in[i] >= V || (tgt && tgt[i] >= V)) return NAN;
    memcpy(a->in, in, (size_t)N);
    if (tgt) memcpy(a->tgt, tgt, (size_t)N);
    a->B = B; a->T = T;

    atm_embed_forward(a->h, in, w + o.embed, NULL, N, T, C);
    for (int l = 0; l < cfg->n_layers; l++) forward_block(a, cfg, w, &o.blk[l], l);
    const float *hL = a->h + (size_t)cfg->n_layers * a->NM * (size_t)C;
    atm_layernorm_forward(a->uf, a->lnf_mean, a->lnf_rstd, hL, w + o.lnf_g, w + o.lnf_b, N, C);
    atm_matmul_forward(a->logits, a->uf, w + o.unembed, N, C, V);
    if (!tgt) return 0.0;
    double sum = atm_xent_forward(a->probs, a->logits, tgt, N, V);
    a->ready = 1;
    return sum / (double)N;
}

/* Block l of the backward: dh holds d loss / d h_{l+1} on entry and
 * d loss / d h_l on return (the residual, plus LN_l^T of du, the sum of the
 * router's and the pathways' input gradients); dw accumulates the block's
 * tensors. */
static void backward_block(atome_acts *a, const atm_config *cfg, const float *w, float *dw,
                           const blk_off *bo, int l) {
    const int C = cfg->d_model, K = cfg->kernel, DH = cfg->d_head, TK = cfg->top_k;
    const int P = a->P, B = a->B, T = a->T, N = B * T, pw = cfg->pathways;
    const size_t NM = a->NM, SC = NM * (size_t)C, NC = (size_t)N * C;
    const float *u = a->u + (size_t)l * SC, *r = a->r + (size_t)l * NM * P;
    const float *paths[ATM_ATOME_MAX_PATHS];
    int np = 0;
    if (pw & ATM_PATH_CONV) paths[np++] = a->conv + (size_t)l * SC;
    if (pw & ATM_PATH_SSM) paths[np++] = a->ssm_o + (size_t)l * SC;
    if (pw & ATM_PATH_ATTN) paths[np++] = a->att + (size_t)l * SC;
    /* every buffer this layer accumulates into, zeroed in one parallel
     * call (du and the attention's were last read by the layer above) */
    float *zb[ATM_ATOME_MAX_PATHS + 4];
    size_t zn[ATM_ATOME_MAX_PATHS + 4];
    int nz = 0;
    for (int i = 0; i < P; i++) { zb[nz] = a->dpath[i]; zn[nz++] = NC; }
    zb[nz] = a->du; zn[nz++] = NC;
    if (pw & ATM_PATH_ATTN) {
        zb[nz] = a->dq; zn[nz++] = (size_t)N * DH;
        zb[nz] = a->dk; zn[nz++] = (size_t)N * DH;
        zb[nz] = a->dv; zn[nz++] = NC;
    }
    atm_zero_many(zb, zn, nz);
    memset(a->drl, 0, sizeof(float) * (size_t)N * P);
    atm_atome_mix_backward(a->drl, a->dpath, a->dh, r, paths, N, C, P);

    atm_matmul_backward(a->du, dw + bo->router, a->drl, u, w + bo->router, N, C, P);
    np = 0;
    if (pw & ATM_PATH_CONV)
        atm_atome_conv_backward(a->du, dw + bo->conv, a->dpath[np++], u, w + bo->conv, a->scratch, B, T, C, K);
    if (pw & ATM_PATH_SSM)
        atm_atome_ssm_backward(a->du, dw + bo->ssm_a, dw + bo->ssm_b, dw + bo->ssm_c, a->dpath[np++], u,
                               a->ssm_s + (size_t)l * SC, w + bo->ssm_a, w + bo->ssm_b, w + bo->ssm_c,
                               a->scratch, B, T, C);
    if (pw & ATM_PATH_ATTN) {
        const float *q = a->q + (size_t)l * NM * DH, *k = a->k + (size_t)l * NM * DH;
        const float *v = a->v + (size_t)l * SC;
        atm_atome_attn_backward(a->dq, a->dk, a->dv, a->dpath[np++], a->att_idx + (size_t)l * NM * TK,
                                a->att_p + (size_t)l * NM * TK, q, k, v, B, T, DH, C, TK);
        float *const dws[3] = { dw + bo->wq, dw + bo->wk, dw + bo->wv };
        const float *const douts[3] = { a->dq, a->dk, a->dv };
        const float *const ws[3] = { w + bo->wq, w + bo->wk, w + bo->wv };
        const int ocs[3] = { DH, DH, C };
        atm_matmul_backward_many(3, a->du, dws, douts, u, ws, N, C, ocs);   /* du += q's, then k's, then v's */
    }
    /* dh_l = dh_{l+1} (residual) + LN_l^T du */
    atm_layernorm_backward(a->dh, dw + bo->ln_g, dw + bo->ln_b, a->du, a->h + (size_t)l * SC,
                           w + bo->ln_g, a->ln_mean + (size_t)l * NM, a->ln_rstd + (size_t)l * NM, N, C);
}

static void atome_backward(const atm_layout *L, const float *w, void *acts, float *dw) {
    atome_acts *a = acts;
    model_off o;
    if (!a || !a->ready || !L || !w || !dw || resolve(L, &o) != 0) return;
    const atm_config *cfg = &L->cfg;
    const int C = cfg->d_model, V = cfg->vocab, T = a->T, N = a->B * T;
    const size_t NC = (size_t)N * C;

    {   /* the head's gradients, zeroed in one parallel call */
        float *const zb[3] = { a->dlogits, a->du, a->dh };
        const size_t zn[3] = { (size_t)N * V, NC, NC };
        atm_zero_many(zb, zn, 3);
    }
    atm_xent_backward(a->dlogits, a->probs, a->tgt, N, V, 1.0f / (float)N);
    if (a->soft && a->soft_w != 0.0f) atm_xent_soft_adjust(a->dlogits, a->tgt, a->soft, a->soft_w, N, V, 1.0f / (float)N);
    atm_matmul_backward(a->du, dw + o.unembed, a->dlogits, a->uf, w + o.unembed, N, C, V);
    atm_layernorm_backward(a->dh, dw + o.lnf_g, dw + o.lnf_b, a->du, a->h + (size_t)cfg->n_layers * a->NM * (size_t)C,
                           w + o.lnf_g, a->lnf_mean, a->lnf_rstd, N, C);
    for (int l = cfg->n_layers - 1; l >= 0; l--) backward_block(a, cfg, w, dw, &o.blk[l], l);
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
    float *x, *x2, *u;       /* [C] residual stream (x, next x2) and normalised input */
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
    atm_atome_tap_fn tap;    /* statistics hook (calibration), or NULL */
    void *tap_ctx;
    float *mem;
} atome_gen;

void atm_atome_gen_tap(void *gen, atm_atome_tap_fn fn, void *ctx) {
    atome_gen *g = gen;
    if (!g) return;
    g->tap = fn;
    g->tap_ctx = ctx;
}
#define TAP(what, layer, v, n) do { if (g->tap) g->tap(g->tap_ctx, what, layer, v, n); } while (0)

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
    size_t total = L->n_params + 3 * C + ATM_ATOME_MAX_PATHS * C + (size_t)g->P + DH + V
                 + 2 * Ln * C + Ln * KH * C + Ln * W * (DH + C);
    g->mem = calloc(total, sizeof(float));
    if (!g->mem) { free(g); return NULL; }
    float *f = g->mem;
    g->w = f; f += L->n_params;
    memcpy(g->w, w, sizeof(float) * L->n_params);
    g->x = f; f += C;
    g->x2 = f; f += C;
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

/* The conv pathway of one step of layer l: out = the taps over u and the
 * layer's last K-1 inputs (the training conv's term order); u joins them. */
static void gen_conv(atome_gen *g, int l, const blk_off *bo, const float *u, float *out) {
    const int C = g->cfg.d_model, K = g->cfg.kernel;
    const uint64_t pos = g->pos;
    const float *cw = g->w + bo->conv;
    float *hist = g->hist + (size_t)l * (K - 1) * C;
    int jmax = (uint64_t)(K - 1) < pos ? K - 1 : (int)pos;
    for (int i = 0; i < C; i++) {               /* same term order as the training conv */
        float acc = 0.0f;
        for (int j = 0; j <= jmax; j++) {
            const float *src = j == 0 ? u : hist + (size_t)((pos - (uint64_t)j) % (uint64_t)(K - 1)) * C;
            acc += cw[(size_t)i * K + j] * src[i];
        }
        out[i] = acc;
    }
    if (K > 1) memcpy(hist + (size_t)(pos % (uint64_t)(K - 1)) * C, u, sizeof(float) * (size_t)C);
}

/* The SSM pathway of one step of layer l: the state moves on by u. */
static void gen_ssm(atome_gen *g, int l, const blk_off *bo, const float *u, float *out) {
    const int C = g->cfg.d_model;
    float *s = g->ssm_s + (size_t)l * C;
    const float *a = g->ssm_a + (size_t)l * C, *b = g->w + bo->ssm_b, *co = g->w + bo->ssm_c;
    for (int i = 0; i < C; i++) { s[i] = b[i] * u[i] + a[i] * s[i]; out[i] = co[i] * s[i]; }
    TAP(ATM_TAP_S, l, out, C);
}

/* The attention pathway of one step of layer l: q, and this position's k
 * and v into the cache; the top-k of the cached positions (oldest first, the
 * training scores' e order), softmax, and the mix in selection order. */
static void gen_attn(atome_gen *g, int l, const blk_off *bo, const float *u, float *out) {
    const atm_config *c = &g->cfg;
    const int C = c->d_model, DH = c->d_head, TK = c->top_k, W = g->W;
    const float *w = g->w;
    const uint64_t pos = g->pos;
    float *kc = g->kc + (size_t)l * W * DH, *vc = g->vc + (size_t)l * W * C;
    const size_t slot = (size_t)(pos % (uint64_t)W);
    atm_matmul_forward(g->q, u, w + bo->wq, 1, C, DH);
    atm_matmul_forward(kc + slot * DH, u, w + bo->wk, 1, C, DH);
    atm_matmul_forward(vc + slot * C, u, w + bo->wv, 1, C, C);
    TAP(ATM_TAP_Q, l, g->q, DH);
    TAP(ATM_TAP_K, l, kc + slot * DH, DH);
    TAP(ATM_TAP_V, l, vc + slot * C, C);
    const float scale = 1.0f / sqrtf((float)DH);
    const uint64_t n = pos + 1 < (uint64_t)W ? pos + 1 : (uint64_t)W;  /* cached positions */
    const uint64_t first = pos + 1 - n;                                 /* oldest cached */
    int keff = (uint64_t)TK < n ? TK : (int)n, cnt = 0;
    for (uint64_t pp = first; pp <= pos; pp++) {
        const size_t slot_j = (size_t)(pp % (uint64_t)W);
        const float *kj = kc + slot_j * DH;
        float dot = 0.0f;                        /* e order from 0, as the training scores */
        for (int e = 0; e < DH; e++) dot += g->q[e] * kj[e];
        atm_atome_topk_insert(g->sel_s, g->sel_i, &cnt, keff, dot * scale, (int32_t)slot_j);
    }
    atm_softmax(g->sel_s, keff);
    memset(out, 0, sizeof(float) * (size_t)C);
    for (int s = 0; s < keff; s++) axpyf(out, g->sel_s[s], vc + (size_t)g->sel_i[s] * C, C);
}

static const float *atome_gen_step(void *gen, int token) {
    atome_gen *g = gen;
    if (!g) return NULL;
    const atm_config *c = &g->cfg;
    const int C = c->d_model, V = c->vocab, P = g->P, pw = c->pathways;
    const float *w = g->w;
    if (token < 0 || token >= V) token = 0;
    memcpy(g->x, w + g->o.embed + (size_t)token * C, sizeof(float) * (size_t)C);
    for (int l = 0; l < c->n_layers; l++) {
        const blk_off *bo = &g->o.blk[l];
        float *u = g->u;
        const float *paths[ATM_ATOME_MAX_PATHS];
        int np = 0;
        TAP(ATM_TAP_X, l, g->x, C);
        atm_layernorm_forward(u, NULL, NULL, g->x, w + bo->ln_g, w + bo->ln_b, 1, C);
        TAP(ATM_TAP_U, l, u, C);
        atm_matmul_forward(g->r, u, w + bo->router, 1, C, P);
        if (pw & ATM_PATH_CONV) { gen_conv(g, l, bo, u, g->paths[np]); paths[np] = g->paths[np]; np++; }
        if (pw & ATM_PATH_SSM) { gen_ssm(g, l, bo, u, g->paths[np]); paths[np] = g->paths[np]; np++; }
        if (pw & ATM_PATH_ATTN) { gen_attn(g, l, bo, u, g->paths[np]); paths[np] = g->paths[np]; np++; }
        atm_atome_mix_forward(g->x2, g->r, g->x, paths, 1, C, P);
        float *tmp = g->x; g->x = g->x2; g->x2 = tmp;
    }
    TAP(ATM_TAP_X, c->n_layers, g->x, C);
    atm_layernorm_forward(g->u, NULL, NULL, g->x, w + g->o.lnf_g, w + g->o.lnf_b, 1, C);
    TAP(ATM_TAP_U, c->n_layers, g->u, C);
    atm_matmul_forward(g->logits, g->u, w + g->o.unembed, 1, C, V);
    TAP(ATM_TAP_LOGITS, -1, g->logits, V);
    g->pos++;
    return g->logits;
}
#undef TAP

static void atome_gen_free(void *gen) {
    atome_gen *g = gen;
    if (!g) return;
    free(g->mem);
    free(g);
}

static void atome_set_soft_targets(void *acts, const float *q, float w) {
    atome_acts *a = acts;
    if (!a) return;
    a->soft = q;
    a->soft_w = q ? w : 0.0f;
}

const atm_family atm_family_atome = {
    "atome", atome_layout, atome_acts_new, atome_acts_free, atome_forward, atome_backward,
    atome_logits, atome_gen_new, atome_gen_step, atome_gen_free, atome_set_soft_targets
};
