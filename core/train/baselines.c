/* core/train/baselines.c — the sub-blocks the two baseline families share
 * (vanilla.c, gssm.c): the pre-LN FFN sub-block and the head (final
 * LayerNorm, unembedding, cross-entropy). Contracts in baselines.h; the
 * operations run in the order each family ran them before they shared this
 * code, so their bits are unchanged. */
#include "baselines.h"
#include "layers.h"
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
