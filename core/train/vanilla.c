/* core/train/vanilla.c — the `vanilla` family: pre-LN FP32 GPT baseline
 * (reference §3, the A/B comparison model). docs/models.md has the maths.
 *
 * Contract. h = tok_emb[x_t] + pos_emb[t]; L blocks of
 *   h += Wo . MHA(LN1(h))           (fused Wqkv (3C x C), causal, full softmax)
 *   h += W2 . gelu(W1 . LN2(h))     (W1: F x C, W2: C x F, exact-erf GELU)
 * then logits = unembed . LN_f(h). No biases, no dropout, no weight tying.
 * Positions are 0..T-1 within each sequence, so T may not exceed max_seq:
 * acts_new returns NULL and forward returns NaN (computing nothing) when it
 * does; forward also returns NaN for a token >= vocab or B/T above what the
 * activations were allocated for. The trainer checks seq <= max_seq first.
 *
 * Tensor kinds: tok_emb, every matrix and unembed are ATM_TK_QUANT (ternary
 * when the model is trained ternary); LayerNorm vectors and pos_emb are FP32.
 * Positions (cfg.pos): ATM_POS_LEARNED, the table above; ATM_POS_NONE, no
 * table (h = tok_emb[x_t]; causal attention is the only position signal);
 * ATM_POS_TERNARY, the table is ATM_TK_QUANT, quantised with the weights.
 * Init follows PyTorch defaults (nn.Embedding N(0,1), nn.Linear
 * U(-1/sqrt(in), 1/sqrt(in)), LayerNorm 1/0).
 *
 * Generation: the generator keeps the last W = min(window, max_seq) tokens
 * (window <= 0 means max_seq) and for every new token re-runs the forward on
 * that window with positions 0..m-1, returning the last row's logits. This is
 * exactly the reference's generate() (ids[:, -max_seq:]); it costs O(W) rows
 * of forward per token and needs no KV cache.
 *
 * All activation memory is allocated by acts_new; forward/backward allocate
 * nothing. Projections use atm_matmul_forward/backward with N = B*T rows. */
#include "model.h"
#include "layers.h"
#include "baselines.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- multi-head causal attention core ----
 * Per (sequence, head) the head's q, k, v (and in the backward dout) are
 * gathered into contiguous scratch so the four products (scores, output,
 * and their gradients) run through atm_matmul_forward/backward, the fast
 * kernels. The products cover the full T x T square; the masked half
 * (j > t) is computed and discarded in the scores, and enters the output
 * and the gradients only as exact zeros (p_j = 0 there). */

size_t atm_mha_scratch(int T, int C, int H) {
    return 8 * (size_t)(C / H) * (size_t)T + (size_t)T * (size_t)T;
}

/* Copies head h of rows [T] x [stride] (column offset col) into dst[T][dh],
 * and/or its transpose into dstT[dh][T]. */
static void gather(float *dst, float *dstT, const float *src, size_t stride, int T, int dh) {
    for (int t = 0; t < T; t++) {
        const float *s = src + (size_t)t * stride;
        for (int i = 0; i < dh; i++) {
            if (dst) dst[(size_t)t * dh + i] = s[i];
            if (dstT) dstT[(size_t)i * T + t] = s[i];
        }
    }
}

void atm_mha_forward(float *out, float *att, const float *qkv, float *scratch,
                     int B, int T, int C, int H) {
    const int dh = C / H;
    const float scale = 1.0f / sqrtf((float)dh);
    const size_t C3 = (size_t)3 * C, hT = (size_t)dh * T;
    float *Q = scratch, *K = Q + hT, *VT = K + hT, *O = VT + hT;   /* [T][dh], [T][dh], [dh][T], [T][dh] */
    for (int b = 0; b < B; b++) {
        const float *base = qkv + (size_t)b * T * C3;
        for (int h = 0; h < H; h++) {
            gather(Q, NULL, base + (size_t)h * dh, C3, T, dh);
            gather(K, NULL, base + C + (size_t)h * dh, C3, T, dh);
            gather(NULL, VT, base + 2 * (size_t)C + (size_t)h * dh, C3, T, dh);
            float *P = att + ((size_t)b * H + h) * T * T;   /* [T][T] */
            atm_matmul_forward(P, Q, K, T, dh, T);
            for (int t = 0; t < T; t++) {
                float *p = P + (size_t)t * T;
                for (int j = 0; j <= t; j++) p[j] *= scale;
                atm_softmax(p, t + 1);
                for (int j = t + 1; j < T; j++) p[j] = 0.0f;
            }
            atm_matmul_forward(O, P, VT, T, T, dh);
            for (int t = 0; t < T; t++)
                memcpy(out + ((size_t)b * T + t) * C + (size_t)h * dh, O + (size_t)t * dh,
                       sizeof(float) * (size_t)dh);
        }
    }
}

void atm_mha_backward(float *dqkv, const float *dout, const float *qkv, const float *att,
                      float *scratch, int B, int T, int C, int H) {
    const int dh = C / H;
    const float scale = 1.0f / sqrtf((float)dh);
    const size_t C3 = (size_t)3 * C, hT = (size_t)dh * T;
    float *Q = scratch, *K = Q + hT, *V = K + hT, *VT = V + hT;   /* [T][dh] x3, [dh][T] */
    float *dO = VT + hT, *dQ = dO + hT, *dK = dQ + hT, *dVT = dK + hT;   /* [T][dh] x3, [dh][T] */
    float *dS = dVT + hT;   /* [T][T]: dloss/dp, then dloss/dscore */
    for (int b = 0; b < B; b++) {
        const float *base = qkv + (size_t)b * T * C3;
        float *dbase = dqkv + (size_t)b * T * C3;
        for (int h = 0; h < H; h++) {
            const float *P = att + ((size_t)b * H + h) * T * T;
            gather(Q, NULL, base + (size_t)h * dh, C3, T, dh);
            gather(K, NULL, base + C + (size_t)h * dh, C3, T, dh);
            gather(V, VT, base + 2 * (size_t)C + (size_t)h * dh, C3, T, dh);
            gather(dO, NULL, dout + (size_t)b * T * C + (size_t)h * dh, (size_t)C, T, dh);
            memset(dQ, 0, sizeof(float) * 3 * hT);
            atm_matmul_forward(dS, dO, V, T, dh, T);                 /* dS[t][j] = dO_t . v_j */
            atm_matmul_backward(NULL, dVT, dO, P, VT, T, T, dh);     /* dVT = dO^T P */
            for (int t = 0; t < T; t++) {
                const float *p = P + (size_t)t * T;
                float *ds = dS + (size_t)t * T;
                float pd = 0.0f;   /* sum_j p_j dp_j */
                for (int j = 0; j <= t; j++) pd += p[j] * ds[j];
                for (int j = 0; j <= t; j++) ds[j] = p[j] * (ds[j] - pd) * scale;
                for (int j = t + 1; j < T; j++) ds[j] = 0.0f;
            }
            atm_matmul_backward(dQ, dK, dS, Q, K, T, dh, T);         /* dQ += dS K; dK += dS^T Q */
            for (int t = 0; t < T; t++) {
                float *row = dbase + (size_t)t * C3 + (size_t)h * dh;
                for (int i = 0; i < dh; i++) {
                    row[i] += dQ[(size_t)t * dh + i];
                    row[C + i] += dK[(size_t)t * dh + i];
                    row[2 * (size_t)C + i] += dVT[(size_t)i * T + t];
                }
            }
        }
    }
}

/* ---- layout ---- */

/* Per-block tensor order; a block's tensors are contiguous in the table. */
enum { VB_LN1G, VB_LN1B, VB_WQKV, VB_WO, VB_LN2G, VB_LN2B, VB_W1, VB_W2, VB_N };
enum { V_TOK = 0, V_POS = 1 };   /* pos_emb only with positions; then L*VB_N, then ln_f.g, ln_f.b, unembed */

static int vanilla_layout(const atm_config *c, atm_layout *L) {
    const int V = c->vocab, C = c->d_model, F = c->d_ff;
    if (V < 1 || C < 1 || F < 1 || c->n_layers < 1 || c->max_seq < 1 || c->n_heads < 1 ||
        C % c->n_heads)
        return -1;
    /* PyTorch nn.Linear default: kaiming_uniform(a = sqrt 5) = U(-1/sqrt(in), 1/sqrt(in)). */
    const float bC = 1.0f / sqrtf((float)C), bF = 1.0f / sqrtf((float)F);
    int ok = atm_layout_add(L, "tok_emb", V, C, ATM_TK_QUANT, ATM_INIT_NORMAL, 1.0f) >= 0;
    /* --pos none: no position table at all; --pos ternary: the table is a
     * quantised tensor (ternary with the weights when the model is) */
    if (c->pos != ATM_POS_NONE)
        ok = ok && atm_layout_add(L, "pos_emb", c->max_seq, C,
                                  c->pos == ATM_POS_TERNARY ? ATM_TK_QUANT : ATM_TK_FP32,
                                  ATM_INIT_NORMAL, 1.0f) >= 0;
    for (int l = 0; l < c->n_layers && ok; l++) {
        ok = atm_layout_add_block(L, l, "ln1.g", 1, C, ATM_TK_FP32, ATM_INIT_CONST, 1.0f)
          && atm_layout_add_block(L, l, "ln1.b", 1, C, ATM_TK_FP32, ATM_INIT_CONST, 0.0f)
          && atm_layout_add_block(L, l, "attn.wqkv", 3 * C, C, ATM_TK_QUANT, ATM_INIT_UNIFORM, bC)
          && atm_layout_add_block(L, l, "attn.wo", C, C, ATM_TK_QUANT, ATM_INIT_UNIFORM, bC)
          && atm_layout_add_block(L, l, "ln2.g", 1, C, ATM_TK_FP32, ATM_INIT_CONST, 1.0f)
          && atm_layout_add_block(L, l, "ln2.b", 1, C, ATM_TK_FP32, ATM_INIT_CONST, 0.0f)
          && atm_layout_add_block(L, l, "ffn.w1", F, C, ATM_TK_QUANT, ATM_INIT_UNIFORM, bC)
          && atm_layout_add_block(L, l, "ffn.w2", C, F, ATM_TK_QUANT, ATM_INIT_UNIFORM, bF);
    }
    ok = ok && atm_layout_add(L, "ln_f.g", 1, C, ATM_TK_FP32, ATM_INIT_CONST, 1.0f) >= 0;
    ok = ok && atm_layout_add(L, "ln_f.b", 1, C, ATM_TK_FP32, ATM_INIT_CONST, 0.0f) >= 0;
    ok = ok && atm_layout_add(L, "unembed", V, C, ATM_TK_QUANT, ATM_INIT_UNIFORM, bC) >= 0;
    return ok ? 0 : -1;
}

static size_t toff(const atm_layout *L, int idx) { return L->t[idx].off; }
static int vb0(const atm_layout *L) { return L->cfg.pos == ATM_POS_NONE ? 1 : 2; }   /* first block tensor */
static int blk(const atm_layout *L, int l, int k) { return vb0(L) + l * VB_N + k; }
static const float *pos_of(const atm_layout *L, const float *w) {
    return L->cfg.pos == ATM_POS_NONE ? NULL : w + toff(L, V_POS);
}

/* ---- activations ---- */

typedef struct {
    atm_preln_acts k;      /* the block stack and the head (baselines.h) */
    atm_config c;
    float *qkv;            /* [L][B*T][3C] */
    float *att;            /* [L][B][H][T][T] */
    float *atty;           /* [L][B*T][C]: attention output before Wo */
    float *datty;          /* [B*T][C] */
    float *dqkv;           /* [B*T][3C] */
    float *mha_scratch;    /* atm_mha_scratch(T, C, H) */
} vacts;


static void *vanilla_acts_new(const atm_config *c, int B, int T) {
    if (B < 1 || T < 1 || T > c->max_seq || c->n_heads < 1) return NULL;
    const uint64_t N = (uint64_t)B * T, C = (uint64_t)c->d_model, Ly = (uint64_t)c->n_layers, H = (uint64_t)c->n_heads;
    const uint64_t NA = (uint64_t)B * H * (uint64_t)T * (uint64_t)T;
    const size_t ms = atm_mha_scratch(T, c->d_model, c->n_heads);
    vacts *a = calloc(1, sizeof *a);
    if (!a) return NULL;
    float *p = atm_preln_acts_init(&a->k, c->n_layers, B, T, c->d_model, c->d_ff, c->vocab,
                                   Ly * N * 3 * C + Ly * NA + Ly * N * C + N * C + N * 3 * C + ms);
    if (!p) { free(a); return NULL; }
    a->c = *c;
    a->qkv = atm_take(&p, Ly * N * 3 * C);
    a->att = atm_take(&p, Ly * NA);
    a->atty = atm_take(&p, Ly * N * C);
    a->datty = atm_take(&p, N * C);
    a->dqkv = atm_take(&p, N * 3 * C);
    a->mha_scratch = atm_take(&p, ms);
    return a;
}

static void vanilla_acts_free(void *acts) {
    vacts *a = acts;
    if (!a) return;
    atm_preln_acts_free(&a->k);
    free(a);
}

/* ---- forward / backward ---- */

static double vanilla_forward(const atm_layout *L, const float *w, void *acts,
                              const uint8_t *in, const uint8_t *tgt, int B, int T) {
    vacts *a = acts;
    const atm_config *c = &L->cfg;
    const int C = c->d_model, F = c->d_ff, V = c->vocab, H = c->n_heads, NL = c->n_layers;
    a->k.has_tgt = 0;
    if (T > c->max_seq || !atm_preln_begin(&a->k, in, tgt, B, T, V)) return NAN;
    const int N = B * T;
    const size_t NC = (size_t)a->k.B * a->k.T * C;           /* per-layer slab strides (capacity) */
    const size_t NF = (size_t)a->k.B * a->k.T * F;
    const size_t NR = (size_t)a->k.B * a->k.T;
    const size_t NA = (size_t)a->k.B * H * a->k.T * a->k.T;

    atm_embed_forward(a->k.resid, in, w + toff(L, V_TOK), pos_of(L, w), N, T, C);
    for (int l = 0; l < NL; l++) {
        const float *x = a->k.resid + l * NC;
        float *mid = a->k.resid_mid + l * NC, *out = a->k.resid + (l + 1) * NC;
        float *ln1 = a->k.ln1 + l * NC, *ln2 = a->k.ln2 + l * NC;
        float *qkv = a->qkv + l * 3 * NC, *att = a->att + l * NA, *atty = a->atty + l * NC;
        float *fch = a->k.fch + l * NF, *fchg = a->k.fchg + l * NF;
        atm_layernorm_forward(ln1, a->k.ln1_mean + l * NR, a->k.ln1_rstd + l * NR, x,
                              w + toff(L, blk(L, l, VB_LN1G)), w + toff(L, blk(L, l, VB_LN1B)), N, C);
        atm_matmul_forward(qkv, ln1, w + toff(L, blk(L, l, VB_WQKV)), N, C, 3 * C);
        atm_mha_forward(atty, att, qkv, a->mha_scratch, B, T, C, H);
        atm_matmul_forward(a->k.tmp, atty, w + toff(L, blk(L, l, VB_WO)), N, C, C);
        for (size_t i = 0; i < (size_t)N * C; i++) mid[i] = x[i] + a->k.tmp[i];
        atm_ffn_sub_forward(out, ln2, a->k.ln2_mean + l * NR, a->k.ln2_rstd + l * NR, fch, fchg, a->k.tmp, mid,
                            w + toff(L, blk(L, l, VB_LN2G)), w + toff(L, blk(L, l, VB_LN2B)),
                            w + toff(L, blk(L, l, VB_W1)), w + toff(L, blk(L, l, VB_W2)), N, C, F);
    }
    const int tail = vb0(L) + NL * VB_N;
    double loss = atm_head_forward(a->k.logits, a->k.probs, a->k.lnf, a->k.lnf_mean, a->k.lnf_rstd, a->k.resid + NL * NC,
                                   w + toff(L, tail), w + toff(L, tail + 1), w + toff(L, tail + 2), tgt, N, C, V);
    a->k.has_tgt = tgt != NULL;
    return loss;
}

static void vanilla_backward(const atm_layout *L, const float *w, void *acts, float *dw) {
    vacts *a = acts;
    if (!a->k.has_tgt) return;
    const atm_config *c = &L->cfg;
    const int C = c->d_model, F = c->d_ff, V = c->vocab, H = c->n_heads, NL = c->n_layers;
    const int B = a->k.cur_B, T = a->k.cur_T, N = B * T;
    const size_t NC = (size_t)a->k.B * a->k.T * C, NF = (size_t)a->k.B * a->k.T * F;
    const size_t NR = (size_t)a->k.B * a->k.T, NA = (size_t)a->k.B * H * a->k.T * a->k.T;
    const size_t nC = (size_t)N * C;
    const int tail = vb0(L) + NL * VB_N;

    atm_head_backward(a->k.dresid, dw + toff(L, tail), dw + toff(L, tail + 1), dw + toff(L, tail + 2), a->k.dlogits, a->k.dln,
                      a->k.probs, a->k.tgt, a->k.lnf, a->k.resid + NL * NC, w + toff(L, tail), w + toff(L, tail + 2),
                      a->k.lnf_mean, a->k.lnf_rstd, N, C, V);
    for (int l = NL - 1; l >= 0; l--) {
        /* a->k.dresid holds dloss/d(block output); the residual passes it through. */
        atm_ffn_sub_backward(a->k.dresid, dw + toff(L, blk(L, l, VB_LN2G)), dw + toff(L, blk(L, l, VB_LN2B)),
                             dw + toff(L, blk(L, l, VB_W1)), dw + toff(L, blk(L, l, VB_W2)), a->k.dfch, a->k.dfchg, a->k.dln,
                             a->k.resid_mid + l * NC, a->k.ln2 + l * NC, a->k.ln2_mean + l * NR, a->k.ln2_rstd + l * NR,
                             a->k.fch + l * NF, a->k.fchg + l * NF, w + toff(L, blk(L, l, VB_LN2G)),
                             w + toff(L, blk(L, l, VB_W1)), w + toff(L, blk(L, l, VB_W2)), N, C, F);
        memset(a->datty, 0, sizeof(float) * nC);
        atm_matmul_backward(a->datty, dw + toff(L, blk(L, l, VB_WO)), a->k.dresid,
                            a->atty + l * NC, w + toff(L, blk(L, l, VB_WO)), N, C, C);
        memset(a->dqkv, 0, sizeof(float) * 3 * nC);
        atm_mha_backward(a->dqkv, a->datty, a->qkv + l * 3 * NC, a->att + l * NA, a->mha_scratch,
                         B, T, C, H);
        memset(a->k.dln, 0, sizeof(float) * nC);
        atm_matmul_backward(a->k.dln, dw + toff(L, blk(L, l, VB_WQKV)), a->dqkv,
                            a->k.ln1 + l * NC, w + toff(L, blk(L, l, VB_WQKV)), N, C, 3 * C);
        atm_layernorm_backward(a->k.dresid, dw + toff(L, blk(L, l, VB_LN1G)), dw + toff(L, blk(L, l, VB_LN1B)),
                               a->k.dln, a->k.resid + l * NC, w + toff(L, blk(L, l, VB_LN1G)),
                               a->k.ln1_mean + l * NR, a->k.ln1_rstd + l * NR, N, C);
    }
    atm_embed_backward(dw + toff(L, V_TOK), L->cfg.pos == ATM_POS_NONE ? NULL : dw + toff(L, V_POS),
                       a->k.in, a->k.dresid, N, T, C);
}

static const float *vanilla_logits(void *acts) { return ((vacts *)acts)->k.logits; }

/* ---- generation: windowed recompute ---- */

typedef struct {
    atm_layout L;
    float *w;        /* [n_params] private copy of the weights */
    void *acts;      /* B = 1, T = W */
    uint8_t *hist;   /* [W] last tokens, oldest first */
    int W, n;
} vgen;

static void vanilla_gen_free(void *gen) {
    vgen *g = gen;
    if (!g) return;
    vanilla_acts_free(g->acts);
    free(g->w); free(g->hist); free(g);
}

static void *vanilla_gen_new(const atm_layout *L, const float *w, int window) {
    const atm_config *c = &L->cfg;
    vgen *g = calloc(1, sizeof *g);
    if (!g) return NULL;
    g->L = *L;
    g->W = (window < 1 || window > c->max_seq) ? c->max_seq : window;
    g->w = malloc(sizeof(float) * L->n_params);
    g->hist = malloc((size_t)g->W);
    g->acts = vanilla_acts_new(c, 1, g->W);
    if (!g->w || !g->hist || !g->acts) { vanilla_gen_free(g); return NULL; }
    memcpy(g->w, w, sizeof(float) * L->n_params);
    return g;
}

/* NULL for a token outside [0, vocab). */
static const float *vanilla_gen_step(void *gen, int token) {
    vgen *g = gen;
    if (token < 0 || token >= g->L.cfg.vocab) return NULL;
    if (g->n == g->W) { memmove(g->hist, g->hist + 1, (size_t)g->W - 1); g->n--; }
    g->hist[g->n++] = (uint8_t)token;
    double r = vanilla_forward(&g->L, g->w, g->acts, g->hist, NULL, 1, g->n);
    if (r != r) return NULL;
    return ((vacts *)g->acts)->k.logits + (size_t)(g->n - 1) * g->L.cfg.vocab;
}

const atm_family atm_family_vanilla = {
    "vanilla", vanilla_layout, vanilla_acts_new, vanilla_acts_free, vanilla_forward,
    vanilla_backward, vanilla_logits, vanilla_gen_new, vanilla_gen_step, vanilla_gen_free,
    NULL   /* no distillation student (atome only) */
};
