/* core/train/gssm.c — the `gssm` family: gated diagonal-SSM baseline (the
 * paper's recurrent baseline). docs/models.md has the maths.
 *
 * Contract. h = tok_emb[x_t] (no positional embedding); L blocks of
 *   u = LN1(h); x = W_in u; g = W_g u                 (W_in, W_g: D x C)
 *   s_t = a*s_{t-1} + b*x_t, a = sigmoid(a_raw)       (per channel, s_{-1} = 0)
 *   h += W_out ((c*s_t) * silu(g))                    (W_out: C x D)
 *   h += W2 gelu(W1 LN2(h))                           (W1: F x C, W2: C x F)
 * then logits = unembed . LN_f(h). D = d_inner, F = d_ff. No biases.
 * The state starts at zero for every training sequence.
 *
 * Tensor kinds: tok_emb, every matrix and unembed are ATM_TK_QUANT; LayerNorm
 * vectors and the per-channel a_raw, b, c are FP32.
 * Init (Atome's conventions, reference §1.6, so both recurrent models start
 * alike): every linear N(0, 1/in); tok_emb N(0, 1/C); a_raw = ln 9 so
 * a = sigmoid(a_raw) = 0.9 (memory of ~10 steps); b, c ~ N(0, 1/D); LN 1/0.
 *
 * Generation is the same recurrence streamed: one state per layer that
 * never resets, FFN per position; the window argument is accepted and
 * ignored (nothing in the model depends on the absolute position).
 *
 * All activation memory is allocated by acts_new; forward/backward allocate
 * nothing. Projections use atm_matmul_forward/backward with N = B*T rows.
 * forward returns NaN (computing nothing) for B/T above the allocated
 * capacity or a token >= vocab. */
#include "model.h"
#include "layers.h"
#include "baselines.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- gated diagonal scan ---- */

static float sigmoidf_(float x) { return 1.0f / (1.0f + expf(-x)); }

/* One step of the recurrence and the gate for one row (the streaming
 * generator); the same float operations as atm_gssm_scan_forward, so both
 * produce the same values. s_prev may alias s. */
static void scan_row(float *z, float *s, const float *s_prev, const float *sg, const float *x,
                     const float *a_raw, const float *bv, const float *cv, int D) {
    for (int i = 0; i < D; i++) {
        float a = sigmoidf_(a_raw[i]);
        float si = a * s_prev[i] + bv[i] * x[i];
        s[i] = si;
        z[i] = (cv[i] * si) * sg[i];
    }
}

void atm_gssm_scan_forward(float *z, float *s, float *sg, const float *x, const float *g,
                           const float *a_raw, const float *bv, const float *cv,
                           int B, int T, int D) {
    atm_silu_forward(sg, g, B * T * D);
    /* Channel-outer so sigmoid(a_raw) is evaluated once per channel and
     * sequence; the arithmetic per element is scan_row's. */
    for (int b = 0; b < B; b++) {
        const size_t r0 = (size_t)b * T * D;
        for (int i = 0; i < D; i++) {
            const float a = sigmoidf_(a_raw[i]), bi = bv[i], ci = cv[i];
            float sp = 0.0f;
            for (int t = 0; t < T; t++) {
                const size_t k = r0 + (size_t)t * D + i;
                /* t = 0: s_{-1} = 0, and b*x is the float a*0 + b*x gives */
                float si = t == 0 ? bi * x[k] : a * sp + bi * x[k];
                s[k] = si;
                z[k] = (ci * si) * sg[k];
                sp = si;
            }
        }
    }
}

size_t atm_gssm_scan_scratch(int B, int T, int D) {
    return (size_t)B * T * D + 2 * (size_t)D;
}

void atm_gssm_scan_backward(float *dx, float *dg, float *da_raw, float *dbv, float *dcv,
                            const float *dz, const float *x, const float *g, const float *s,
                            const float *sg, const float *a_raw, const float *bv,
                            const float *cv, float *scratch, int B, int T, int D) {
    const size_t N = (size_t)B * T;
    float *dsg = scratch;              /* [N][D]: dloss/d silu(g) */
    float *carry = scratch + N * D;    /* [D]: a * dloss/ds_{t+1} */
    float *a = carry + D;              /* [D] */
    for (int i = 0; i < D; i++) a[i] = sigmoidf_(a_raw[i]);
    for (int b = 0; b < B; b++) {
        for (int i = 0; i < D; i++) carry[i] = 0.0f;
        for (int t = T - 1; t >= 0; t--) {
            size_t r = ((size_t)b * T + t) * D;
            for (int i = 0; i < D; i++) {
                float si = s[r + i];
                float y = cv[i] * si;
                float dy = dz[r + i] * sg[r + i];
                dsg[r + i] = dz[r + i] * y;
                dcv[i] += dy * si;
                float ds = dy * cv[i] + carry[i];
                dbv[i] += ds * x[r + i];
                if (dx) dx[r + i] += ds * bv[i];
                if (t > 0) da_raw[i] += ds * s[r - D + i] * (a[i] * (1.0f - a[i]));
                carry[i] = a[i] * ds;
            }
        }
    }
    atm_silu_backward(dg, g, dsg, (int)(N * D));
}

/* ---- layout ---- */

enum { GB_LN1G, GB_LN1B, GB_WIN, GB_WG, GB_AR, GB_B, GB_C, GB_WOUT, GB_LN2G, GB_LN2B,
       GB_W1, GB_W2, GB_N };
enum { G_TOK = 0, G_BLOCK0 = 1 };   /* then L*GB_N, then ln_f.g, ln_f.b, unembed */

/* a_raw = ln 9 gives a = sigmoid(a_raw) = 9/10. */
#define GSSM_A_RAW_INIT 2.19722457733621938279f

static int gssm_layout(const atm_config *c, atm_layout *L) {
    const int V = c->vocab, C = c->d_model, D = c->d_inner, F = c->d_ff;
    if (V < 1 || C < 1 || D < 1 || F < 1 || c->n_layers < 1) return -1;
    const float sC = 1.0f / sqrtf((float)C), sD = 1.0f / sqrtf((float)D),
                sF = 1.0f / sqrtf((float)F);   /* std of N(0, 1/in) */
    int ok = atm_layout_add(L, "tok_emb", V, C, ATM_TK_QUANT, ATM_INIT_NORMAL, sC) >= 0;
    for (int l = 0; l < c->n_layers && ok; l++) {
        ok = atm_layout_add_block(L, l, "ln1.g", 1, C, ATM_TK_FP32, ATM_INIT_CONST, 1.0f)
          && atm_layout_add_block(L, l, "ln1.b", 1, C, ATM_TK_FP32, ATM_INIT_CONST, 0.0f)
          && atm_layout_add_block(L, l, "ssm.w_in", D, C, ATM_TK_QUANT, ATM_INIT_NORMAL, sC)
          && atm_layout_add_block(L, l, "ssm.w_g", D, C, ATM_TK_QUANT, ATM_INIT_NORMAL, sC)
          && atm_layout_add_block(L, l, "ssm.a_raw", 1, D, ATM_TK_FP32, ATM_INIT_CONST, GSSM_A_RAW_INIT)
          && atm_layout_add_block(L, l, "ssm.b", 1, D, ATM_TK_FP32, ATM_INIT_NORMAL, sD)
          && atm_layout_add_block(L, l, "ssm.c", 1, D, ATM_TK_FP32, ATM_INIT_NORMAL, sD)
          && atm_layout_add_block(L, l, "ssm.w_out", C, D, ATM_TK_QUANT, ATM_INIT_NORMAL, sD)
          && atm_layout_add_block(L, l, "ln2.g", 1, C, ATM_TK_FP32, ATM_INIT_CONST, 1.0f)
          && atm_layout_add_block(L, l, "ln2.b", 1, C, ATM_TK_FP32, ATM_INIT_CONST, 0.0f)
          && atm_layout_add_block(L, l, "ffn.w1", F, C, ATM_TK_QUANT, ATM_INIT_NORMAL, sC)
          && atm_layout_add_block(L, l, "ffn.w2", C, F, ATM_TK_QUANT, ATM_INIT_NORMAL, sF);
    }
    ok = ok && atm_layout_add(L, "ln_f.g", 1, C, ATM_TK_FP32, ATM_INIT_CONST, 1.0f) >= 0;
    ok = ok && atm_layout_add(L, "ln_f.b", 1, C, ATM_TK_FP32, ATM_INIT_CONST, 0.0f) >= 0;
    ok = ok && atm_layout_add(L, "unembed", V, C, ATM_TK_QUANT, ATM_INIT_NORMAL, sC) >= 0;
    return ok ? 0 : -1;
}

static size_t toff(const atm_layout *L, int idx) { return L->t[idx].off; }
static int blk(int l, int k) { return G_BLOCK0 + l * GB_N + k; }

/* ---- activations ---- */

typedef struct {
    atm_preln_acts k;      /* the block stack and the head (baselines.h) */
    atm_config c;
    float *x, *g, *s, *sg, *z;   /* [L][B*T][D]: W_in u, W_g u, states, silu(g), gated output */
    float *dz, *dx, *dg;   /* [B*T][D] */
    float *scan_scratch;   /* atm_gssm_scan_scratch(B, T, D) */
} gacts;


static void *gssm_acts_new(const atm_config *c, int B, int T) {
    if (B < 1 || T < 1) return NULL;
    const uint64_t N = (uint64_t)B * T, D = (uint64_t)c->d_inner, Ly = (uint64_t)c->n_layers;
    const size_t ss = atm_gssm_scan_scratch(B, T, c->d_inner);
    gacts *a = calloc(1, sizeof *a);
    if (!a) return NULL;
    float *p = atm_preln_acts_init(&a->k, c->n_layers, B, T, c->d_model, c->d_ff, c->vocab,
                                   5 * Ly * N * D + 3 * N * D + ss);
    if (!p) { free(a); return NULL; }
    a->c = *c;
    a->x = atm_take(&p, Ly * N * D); a->g = atm_take(&p, Ly * N * D); a->s = atm_take(&p, Ly * N * D);
    a->sg = atm_take(&p, Ly * N * D); a->z = atm_take(&p, Ly * N * D);
    a->dz = atm_take(&p, N * D); a->dx = atm_take(&p, N * D); a->dg = atm_take(&p, N * D);
    a->scan_scratch = atm_take(&p, ss);
    return a;
}

static void gssm_acts_free(void *acts) {
    gacts *a = acts;
    if (!a) return;
    atm_preln_acts_free(&a->k);
    free(a);
}

/* ---- forward / backward ---- */

static double gssm_forward(const atm_layout *L, const float *w, void *acts,
                           const uint8_t *in, const uint8_t *tgt, int B, int T) {
    gacts *a = acts;
    const atm_config *c = &L->cfg;
    const int C = c->d_model, F = c->d_ff, D = c->d_inner, V = c->vocab, NL = c->n_layers;
    if (!atm_preln_begin(&a->k, in, tgt, B, T, V)) return NAN;
    const int N = B * T;
    const size_t NC = (size_t)a->k.B * a->k.T * C, NF = (size_t)a->k.B * a->k.T * F;
    const size_t ND = (size_t)a->k.B * a->k.T * D, NR = (size_t)a->k.B * a->k.T;

    atm_embed_forward(a->k.resid, in, w + toff(L, G_TOK), NULL, N, T, C);
    for (int l = 0; l < NL; l++) {
        const float *h = a->k.resid + l * NC;
        float *mid = a->k.resid_mid + l * NC, *out = a->k.resid + (l + 1) * NC;
        float *ln1 = a->k.ln1 + l * NC, *ln2 = a->k.ln2 + l * NC;
        float *x = a->x + l * ND, *g = a->g + l * ND, *z = a->z + l * ND;
        float *fch = a->k.fch + l * NF, *fchg = a->k.fchg + l * NF;
        atm_layernorm_forward(ln1, a->k.ln1_mean + l * NR, a->k.ln1_rstd + l * NR, h,
                              w + toff(L, blk(l, GB_LN1G)), w + toff(L, blk(l, GB_LN1B)), N, C);
        atm_matmul_forward(x, ln1, w + toff(L, blk(l, GB_WIN)), N, C, D);
        atm_matmul_forward(g, ln1, w + toff(L, blk(l, GB_WG)), N, C, D);
        atm_gssm_scan_forward(z, a->s + l * ND, a->sg + l * ND, x, g, w + toff(L, blk(l, GB_AR)),
                              w + toff(L, blk(l, GB_B)), w + toff(L, blk(l, GB_C)), B, T, D);
        atm_matmul_forward(a->k.tmp, z, w + toff(L, blk(l, GB_WOUT)), N, D, C);
        for (size_t i = 0; i < (size_t)N * C; i++) mid[i] = h[i] + a->k.tmp[i];
        atm_ffn_sub_forward(out, ln2, a->k.ln2_mean + l * NR, a->k.ln2_rstd + l * NR, fch, fchg, a->k.tmp, mid,
                            w + toff(L, blk(l, GB_LN2G)), w + toff(L, blk(l, GB_LN2B)),
                            w + toff(L, blk(l, GB_W1)), w + toff(L, blk(l, GB_W2)), N, C, F);
    }
    const int tail = G_BLOCK0 + NL * GB_N;
    double loss = atm_head_forward(a->k.logits, a->k.probs, a->k.lnf, a->k.lnf_mean, a->k.lnf_rstd, a->k.resid + NL * NC,
                                   w + toff(L, tail), w + toff(L, tail + 1), w + toff(L, tail + 2), tgt, N, C, V);
    a->k.has_tgt = tgt != NULL;
    return loss;
}

static void gssm_backward(const atm_layout *L, const float *w, void *acts, float *dw) {
    gacts *a = acts;
    if (!a->k.has_tgt) return;
    const atm_config *c = &L->cfg;
    const int C = c->d_model, F = c->d_ff, D = c->d_inner, V = c->vocab, NL = c->n_layers;
    const int B = a->k.cur_B, T = a->k.cur_T, N = B * T;
    const size_t NC = (size_t)a->k.B * a->k.T * C, NF = (size_t)a->k.B * a->k.T * F;
    const size_t ND = (size_t)a->k.B * a->k.T * D, NR = (size_t)a->k.B * a->k.T;
    const size_t nC = (size_t)N * C, nD = (size_t)N * D;
    const int tail = G_BLOCK0 + NL * GB_N;

    atm_head_backward(a->k.dresid, dw + toff(L, tail), dw + toff(L, tail + 1), dw + toff(L, tail + 2), a->k.dlogits, a->k.dln,
                      a->k.probs, a->k.tgt, a->k.lnf, a->k.resid + NL * NC, w + toff(L, tail), w + toff(L, tail + 2),
                      a->k.lnf_mean, a->k.lnf_rstd, N, C, V);
    for (int l = NL - 1; l >= 0; l--) {
        /* a->k.dresid holds dloss/d(block output); the residual passes it through. */
        atm_ffn_sub_backward(a->k.dresid, dw + toff(L, blk(l, GB_LN2G)), dw + toff(L, blk(l, GB_LN2B)),
                             dw + toff(L, blk(l, GB_W1)), dw + toff(L, blk(l, GB_W2)), a->k.dfch, a->k.dfchg, a->k.dln,
                             a->k.resid_mid + l * NC, a->k.ln2 + l * NC, a->k.ln2_mean + l * NR, a->k.ln2_rstd + l * NR,
                             a->k.fch + l * NF, a->k.fchg + l * NF, w + toff(L, blk(l, GB_LN2G)),
                             w + toff(L, blk(l, GB_W1)), w + toff(L, blk(l, GB_W2)), N, C, F);
        memset(a->dz, 0, sizeof(float) * nD);
        atm_matmul_backward(a->dz, dw + toff(L, blk(l, GB_WOUT)), a->k.dresid,
                            a->z + l * ND, w + toff(L, blk(l, GB_WOUT)), N, D, C);
        memset(a->dx, 0, sizeof(float) * nD);
        memset(a->dg, 0, sizeof(float) * nD);
        atm_gssm_scan_backward(a->dx, a->dg, dw + toff(L, blk(l, GB_AR)), dw + toff(L, blk(l, GB_B)),
                               dw + toff(L, blk(l, GB_C)), a->dz, a->x + l * ND, a->g + l * ND,
                               a->s + l * ND, a->sg + l * ND, w + toff(L, blk(l, GB_AR)),
                               w + toff(L, blk(l, GB_B)), w + toff(L, blk(l, GB_C)),
                               a->scan_scratch, B, T, D);
        memset(a->k.dln, 0, sizeof(float) * nC);
        atm_matmul_backward(a->k.dln, dw + toff(L, blk(l, GB_WIN)), a->dx,
                            a->k.ln1 + l * NC, w + toff(L, blk(l, GB_WIN)), N, C, D);
        atm_matmul_backward(a->k.dln, dw + toff(L, blk(l, GB_WG)), a->dg,
                            a->k.ln1 + l * NC, w + toff(L, blk(l, GB_WG)), N, C, D);
        atm_layernorm_backward(a->k.dresid, dw + toff(L, blk(l, GB_LN1G)), dw + toff(L, blk(l, GB_LN1B)),
                               a->k.dln, a->k.resid + l * NC, w + toff(L, blk(l, GB_LN1G)),
                               a->k.ln1_mean + l * NR, a->k.ln1_rstd + l * NR, N, C);
    }
    atm_embed_backward(dw + toff(L, G_TOK), NULL, a->k.in, a->k.dresid, N, T, C);
}

static const float *gssm_logits(void *acts) { return ((gacts *)acts)->k.logits; }

/* ---- generation: streaming recurrence ---- */

typedef struct {
    atm_layout L;
    float *w;             /* [n_params] private copy of the weights */
    float *state;         /* [L][D], never reset */
    float *h, *ln, *tmp;  /* [C] */
    float *x, *g, *sg, *z;/* [D] */
    float *fch, *fchg;    /* [F] */
    float *logits;        /* [V] */
    float mean, rstd;
    float *mem;
} ggen;

static void gssm_gen_free(void *gen) {
    ggen *g = gen;
    if (!g) return;
    free(g->w); free(g->mem); free(g);
}

static void *gssm_gen_new(const atm_layout *L, const float *w, int window) {
    (void)window;
    const atm_config *c = &L->cfg;
    const size_t C = (size_t)c->d_model, D = (size_t)c->d_inner, F = (size_t)c->d_ff,
                 V = (size_t)c->vocab;
    ggen *g = calloc(1, sizeof *g);
    if (!g) return NULL;
    g->L = *L;
    g->w = malloc(sizeof(float) * L->n_params);
    g->mem = calloc((size_t)c->n_layers * D + 3 * C + 4 * D + 2 * F + V, sizeof(float));
    if (!g->w || !g->mem) { gssm_gen_free(g); return NULL; }
    memcpy(g->w, w, sizeof(float) * L->n_params);
    float *p = g->mem;
    g->state = atm_take(&p, (size_t)c->n_layers * D);
    g->h = atm_take(&p, C); g->ln = atm_take(&p, C); g->tmp = atm_take(&p, C);
    g->x = atm_take(&p, D); g->g = atm_take(&p, D); g->sg = atm_take(&p, D); g->z = atm_take(&p, D);
    g->fch = atm_take(&p, F); g->fchg = atm_take(&p, F);
    g->logits = atm_take(&p, V);
    return g;
}

/* NULL for a token outside [0, vocab). */
static const float *gssm_gen_step(void *gen, int token) {
    ggen *G = gen;
    const atm_layout *L = &G->L;
    const atm_config *c = &L->cfg;
    const int C = c->d_model, F = c->d_ff, D = c->d_inner, V = c->vocab;
    const float *w = G->w;
    if (token < 0 || token >= V) return NULL;
    uint8_t tok = (uint8_t)token;
    atm_embed_forward(G->h, &tok, w + toff(L, G_TOK), NULL, 1, 1, C);
    for (int l = 0; l < c->n_layers; l++) {
        float *s = G->state + (size_t)l * D;
        atm_layernorm_forward(G->ln, &G->mean, &G->rstd, G->h,
                              w + toff(L, blk(l, GB_LN1G)), w + toff(L, blk(l, GB_LN1B)), 1, C);
        atm_matmul_forward(G->x, G->ln, w + toff(L, blk(l, GB_WIN)), 1, C, D);
        atm_matmul_forward(G->g, G->ln, w + toff(L, blk(l, GB_WG)), 1, C, D);
        atm_silu_forward(G->sg, G->g, D);
        scan_row(G->z, s, s, G->sg, G->x, w + toff(L, blk(l, GB_AR)), w + toff(L, blk(l, GB_B)),
                 w + toff(L, blk(l, GB_C)), D);
        atm_matmul_forward(G->tmp, G->z, w + toff(L, blk(l, GB_WOUT)), 1, D, C);
        for (int i = 0; i < C; i++) G->h[i] += G->tmp[i];
        atm_layernorm_forward(G->ln, &G->mean, &G->rstd, G->h,
                              w + toff(L, blk(l, GB_LN2G)), w + toff(L, blk(l, GB_LN2B)), 1, C);
        atm_matmul_forward(G->fch, G->ln, w + toff(L, blk(l, GB_W1)), 1, C, F);
        atm_gelu_forward(G->fchg, G->fch, F);
        atm_matmul_forward(G->tmp, G->fchg, w + toff(L, blk(l, GB_W2)), 1, F, C);
        for (int i = 0; i < C; i++) G->h[i] += G->tmp[i];
    }
    const int tail = G_BLOCK0 + c->n_layers * GB_N;
    atm_layernorm_forward(G->ln, &G->mean, &G->rstd, G->h, w + toff(L, tail),
                          w + toff(L, tail + 1), 1, C);
    atm_matmul_forward(G->logits, G->ln, w + toff(L, tail + 2), 1, C, V);
    return G->logits;
}

const atm_family atm_family_gssm = {
    "gssm", gssm_layout, gssm_acts_new, gssm_acts_free, gssm_forward,
    gssm_backward, gssm_logits, gssm_gen_new, gssm_gen_step, gssm_gen_free,
    NULL   /* no distillation student (atome only) */
};
