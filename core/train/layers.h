/* core/train/layers.h — float32 layer primitives, forward/backward pairs.
 *
 * llm.c conventions: flat arrays, shapes stated per function, backward
 * functions ACCUMULATE (+=) into gradient buffers, a NULL gradient pointer
 * means "not needed". Every function here has a finite-difference test in
 * tests/test_layers.c. The _ref functions (matmul, layernorm, cross-entropy,
 * softmax, exp; kernels/layers.c) are the plain-C reference; the un-suffixed
 * names dispatch to the kernel set in use (kernels/kernels.c,
 * kernels/kernels_layers.c; ATOME_KERNELS=ref forces the references) and
 * tests/test_kernels.c, tests/test_kernels_layers.c check each set against
 * them. */
#ifndef ATOME_TRAIN_LAYERS_H
#define ATOME_TRAIN_LAYERS_H
#include <stddef.h>
#include <stdint.h>

#define ATM_LN_EPS 1e-5f

/* out[N][OC] = inp[N][IC] . w[OC][IC]^T */
void atm_matmul_forward(float *out, const float *inp, const float *w, int N, int IC, int OC);
/* dinp[N][IC] += dout[N][OC] . w[OC][IC];  dw[OC][IC] += dout^T . inp */
void atm_matmul_backward(float *dinp, float *dw, const float *dout, const float *inp,
                         const float *w, int N, int IC, int OC);
/* k products of one input in one parallel call (one dispatch, not k), the
 * same bits as k calls of atm_matmul_forward: out[i] = inp . w[i]^T, N x OC[i]. */
void atm_matmul_forward_many(int k, float *const *out, const float *inp, const float *const *w,
                             int N, int IC, const int *OC);
/* The same for k backward products into one dinp, accumulated in the order
 * i = 0 .. k-1 (the bits of k calls of atm_matmul_backward in that order):
 * dinp += dout[i] . w[i];  dw[i] += dout[i]^T . inp. */
void atm_matmul_backward_many(int k, float *dinp, float *const *dw, const float *const *dout,
                              const float *inp, const float *const *w, int N, int IC, const int *OC);
void atm_matmul_forward_ref(float *out, const float *inp, const float *w, int N, int IC, int OC);
void atm_matmul_backward_dw_ref(float *dw, const float *dout, int ldd, const float *inp, int N, int IC, int OC);
void atm_matmul_backward_ref(float *dinp, float *dw, const float *dout, const float *inp,
                             const float *w, int N, int IC, int OC);
/* Name of the kernel set the dispatcher uses ("ref", "avx2", "avx512", "wasm-simd"). */
const char *atm_kernels_name(void);

/* LayerNorm over C with biased variance, eps 1e-5: out[N][C]; saves mean[N], rstd[N]. */
void atm_layernorm_forward(float *out, float *mean, float *rstd, const float *inp,
                           const float *g, const float *b, int N, int C);
void atm_layernorm_backward(float *dinp, float *dg, float *db, const float *dout,
                            const float *inp, const float *g, const float *mean,
                            const float *rstd, int N, int C);
void atm_layernorm_forward_ref(float *out, float *mean, float *rstd, const float *inp,
                               const float *g, const float *b, int N, int C);
void atm_layernorm_backward_ref(float *dinp, float *dg, float *db, const float *dout,
                                const float *inp, const float *g, const float *mean,
                                const float *rstd, int N, int C);

/* GELU with the exact erf: out[n]. */
void atm_gelu_forward(float *out, const float *inp, int n);
void atm_gelu_backward(float *dinp, const float *inp, const float *dout, int n);

/* SiLU x*sigmoid(x). */
void atm_silu_forward(float *out, const float *inp, int n);
void atm_silu_backward(float *dinp, const float *inp, const float *dout, int n);

/* Embedding lookup: out[N][C] = table[tok[i]][C] (+ pos[i % T][C] if pos). */
void atm_embed_forward(float *out, const uint8_t *tok, const float *table, const float *pos,
                       int N, int T, int C);
void atm_embed_backward(float *dtable, float *dpos, const uint8_t *tok, const float *dout,
                        int N, int T, int C);

/* Softmax + cross-entropy over V classes. probs[N][V] from logits[N][V]
 * (probs may alias logits). Returns the SUM of -log p[target] in double. If
 * tgt is NULL only the softmax is computed and 0 returned. */
double atm_xent_forward(float *probs, const float *logits, const uint8_t *tgt, int N, int V);
/* dlogits[N][V] += scale * (probs - onehot(tgt)) */
void atm_xent_backward(float *dlogits, const float *probs, const uint8_t *tgt, int N, int V,
                       float scale);
/* Distillation (soft targets): after atm_xent_backward, turns the gradient of
 * the mean cross-entropy into that of (1-w) CE(onehot(tgt)) + w CE(q), i.e.
 * dlogits[N][V] += scale * w * (onehot(tgt) - q), q[N][V] a distribution per
 * row (the teacher's). Plain C in every kernel set (O(N V), beside the
 * matmuls), so runs without a teacher keep their bits. */
void atm_xent_soft_adjust(float *dlogits, const uint8_t *tgt, const float *q, float w, int N, int V, float scale);
double atm_xent_forward_ref(float *probs, const float *logits, const uint8_t *tgt, int N, int V);
void atm_xent_backward_ref(float *dlogits, const float *probs, const uint8_t *tgt, int N, int V,
                           float scale);

/* y[n] = exp(x[n]) (libm expf; y may alias x). The kernel sets' vector exp
 * (kernels_layers.h) is checked against it. */
void atm_exp_ref(float *y, const float *x, int n);

/* In-place softmax over n entries (max-subtracted). */
void atm_softmax(float *x, int n);
void atm_softmax_ref(float *x, int n);

#endif
