/* core/train/baselines.c — the sub-blocks the two baseline families share
 * (vanilla.c, gssm.c): their activation slabs and forward preamble, the
 * pre-LN FFN sub-block and the head (final LayerNorm, unembedding,
 * cross-entropy). Contracts in baselines.h; the
 * operations run in the order each family ran them before they shared this
 * code, so their bits are unchanged. */
#include "baselines.h"
#include "layers.h"
#include <stdlib.h>
#include <string.h>

void atm_ffn_sub_forward(float *out, float *ln, float *mean, float *rstd, float *fch, float *fchg, float *tmp,
                         const float *mid, const float *g, const float *b, const float *w1, const float *w2,
                         int N, int C, int F) {
    atm_layernorm_forward(ln, mean, rstd, mid, g, b, N, C);
    atm_matmul_forward(fch, ln, w1, N, C, F);
    atm_gelu_forward(fchg, fch, N * F);
    atm_matmul_forward(tmp, fchg, w2, N, F, C);
    for (size_t i = 0; i < (size_t)N * C; i++) out[i] = mid[i] + tmp[i];
}

void atm_ffn_sub_backward(float *dresid, float *dg, float *db, float *dw1, float *dw2,
                          float *dfch, float *dfchg, float *dln,
                          const float *mid, const float *ln, const float *mean, const float *rstd,
                          const float *fch, const float *fchg, const float *g, const float *w1, const float *w2,
                          int N, int C, int F) {
    memset(dfchg, 0, sizeof(float) * (size_t)N * F);
    atm_matmul_backward(dfchg, dw2, dresid, fchg, w2, N, F, C);
    memset(dfch, 0, sizeof(float) * (size_t)N * F);
    atm_gelu_backward(dfch, fch, dfchg, N * F);
    memset(dln, 0, sizeof(float) * (size_t)N * C);
    atm_matmul_backward(dln, dw1, dfch, ln, w1, N, C, F);
    atm_layernorm_backward(dresid, dg, db, dln, mid, g, mean, rstd, N, C);
}

double atm_head_forward(float *logits, float *probs, float *lnf, float *mean, float *rstd, const float *h,
                        const float *g, const float *b, const float *unembed, const uint8_t *tgt,
                        int N, int C, int V) {
    atm_layernorm_forward(lnf, mean, rstd, h, g, b, N, C);
    atm_matmul_forward(logits, lnf, unembed, N, C, V);
    if (!tgt) return 0.0;
    return atm_xent_forward(probs, logits, tgt, N, V) / (double)N;
}

void atm_head_backward(float *dresid, float *dg, float *db, float *dunembed, float *dlogits, float *dln,
                       const float *probs, const uint8_t *tgt, const float *lnf, const float *h,
                       const float *g, const float *unembed, const float *mean, const float *rstd,
                       int N, int C, int V) {
    memset(dlogits, 0, sizeof(float) * (size_t)N * V);
    atm_xent_backward(dlogits, probs, tgt, N, V, 1.0f / (float)N);
    memset(dln, 0, sizeof(float) * (size_t)N * C);
    atm_matmul_backward(dln, dunembed, dlogits, lnf, unembed, N, C, V);
    memset(dresid, 0, sizeof(float) * (size_t)N * C);
    atm_layernorm_backward(dresid, dg, db, dln, h, g, mean, rstd, N, C);
}

/* ---- the shared activations ---- */

float *atm_preln_acts_init(atm_preln_acts *k, int L, int B, int T, int C, int F, int V, uint64_t extra) {
    memset(k, 0, sizeof *k);
    if (B < 1 || T < 1) return NULL;
    const uint64_t N = (uint64_t)B * (uint64_t)T, Ly = (uint64_t)L;
    /* in 64 bits: the sizes can pass what a 32-bit size_t (wasm) holds */
    const uint64_t total = (Ly + 1) * N * C + 3 * Ly * N * C + 4 * Ly * N + 2 * Ly * N * F   /* per layer */
                         + N * C + 2 * N + 2 * N * V                                      /* head */
                         + 3 * N * C + 2 * N * F + N * V                                  /* gradients */
                         + extra;
    if (total > SIZE_MAX / sizeof(float) / 2 || 2 * N > SIZE_MAX / 2) return NULL;
    k->mem = malloc((size_t)total * sizeof(float));
    k->in = malloc((size_t)(2 * N));
    if (!k->mem || !k->in) { atm_preln_acts_free(k); return NULL; }
    k->tgt = k->in + N;
    k->B = B; k->T = T;
    float *p = k->mem;
    k->resid = atm_take(&p, (Ly + 1) * N * C);
    k->resid_mid = atm_take(&p, Ly * N * C);
    k->ln1 = atm_take(&p, Ly * N * C); k->ln2 = atm_take(&p, Ly * N * C);
    k->ln1_mean = atm_take(&p, Ly * N); k->ln1_rstd = atm_take(&p, Ly * N);
    k->ln2_mean = atm_take(&p, Ly * N); k->ln2_rstd = atm_take(&p, Ly * N);
    k->fch = atm_take(&p, Ly * N * F); k->fchg = atm_take(&p, Ly * N * F);
    k->lnf = atm_take(&p, N * C); k->lnf_mean = atm_take(&p, N); k->lnf_rstd = atm_take(&p, N);
    k->logits = atm_take(&p, N * V); k->probs = atm_take(&p, N * V);
    k->tmp = atm_take(&p, N * C); k->dresid = atm_take(&p, N * C); k->dln = atm_take(&p, N * C);
    k->dfch = atm_take(&p, N * F); k->dfchg = atm_take(&p, N * F);
    k->dlogits = atm_take(&p, N * V);
    return p;
}

void atm_preln_acts_free(atm_preln_acts *k) {
    free(k->mem); free(k->in);
    k->mem = NULL; k->in = k->tgt = NULL;
}

int atm_preln_begin(atm_preln_acts *k, const uint8_t *in, const uint8_t *tgt, int B, int T, int V) {
    k->has_tgt = 0;
    if (B < 1 || T < 1 || B > k->B || T > k->T) return 0;
    const int N = B * T;
    for (int n = 0; n < N; n++)
        if (in[n] >= V || (tgt && tgt[n] >= V)) return 0;
    k->cur_B = B; k->cur_T = T;
    memcpy(k->in, in, (size_t)N);
    if (tgt) memcpy(k->tgt, tgt, (size_t)N);
    return 1;
}
