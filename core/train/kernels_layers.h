/* core/train/kernels_layers.h — the layer kernels (everything of a training
 * step that is not a matmul but is hot enough for SIMD): layernorm forward and
 * backward, softmax + cross-entropy forward and backward, a vector exp, a
 * softmax, and the atome pathway primitives (conv, SSM, attention with its
 * row selection, router mixing; forward and backward).
 *
 * Contract. One layer kernel set exists per matmul kernel set name (kernels.h):
 * atm_layer_kernels() returns the set whose name is atm_kernels_name(), so
 * ATOME_KERNELS and atm_kernels_select() choose both together, and a matmul
 * set without layer kernels here runs the "ref" layer set.
 * The "ref" set is the plain-C reference (kernels/layers.c,
 * kernels/pathways_ref.c). Every set is deterministic (same inputs, same
 * bits; no alignment-dependent paths, no threads) and computes each row
 * independently of N, so a one-row call (token generation) gives the bits of
 * the same row inside a batch.
 *
 * Per function, against the reference of the same name:
 *   layernorm_forward/backward  same formulas and the same per-element
 *       rounding; only the two row sums (mean, variance / the two backward
 *       means) are summed in vector lanes then across lanes.
 *   xent_forward/backward       exp is the vector exp below; the row max, the
 *       row sum (lanes, then across) and 1/sum as the reference; the loss uses
 *       libm logf of the sum as the reference. The backward is bit-identical.
 *       The fast forward reads logits[tgt] before writing probs, so probs may
 *       alias logits with targets too.
 *   exp                         y = exp(x) for x <= 88 (the callers only pass
 *       x <= 0), NaN gives NaN, -inf and x < -104 give 0. Measured over
 *       every float in [-104, 0] (docs/kernels.md): at most 1.01 ulp from
 *       the exact exp where the result is a normal float, absolute error
 *       below 2^-149 (one subnormal step) below that, never more than 1 ulp
 *       from libm expf and 0 exactly where expf is 0.
 *   softmax                     max, the vector exp, sum (lanes, then
 *       across), times 1/sum.
 *   attn_select                 bit-identical: scores summed over e in order
 *       with separate multiply and add, then scaled, then the top-k the
 *       insertion sequence keeps, in its order.
 *   conv, ssm, attn_backward, mix_backward   bit-identical: every element
 *       sees the reference's operations in the reference's order (separate
 *       multiply and add; dot products in the reference's 8 lanes).
 *   attn_forward, mix_forward   bit-identical given the softmax: they use
 *       the set's softmax where the reference uses libm's.
 * tests/test_kernels_layers.c checks every available set against the
 * references, odd sizes included. */
#ifndef ATOME_TRAIN_KERNELS_LAYERS_H
#define ATOME_TRAIN_KERNELS_LAYERS_H
#include "layers.h"
#include <stdint.h>

typedef void (*atm_ln_fwd_fn)(float *out, float *mean, float *rstd, const float *inp,
                              const float *g, const float *b, int N, int C);
typedef void (*atm_ln_bwd_fn)(float *dinp, float *dg, float *db, const float *dout,
                              const float *inp, const float *g, const float *mean,
                              const float *rstd, int N, int C);
typedef double (*atm_xent_fwd_fn)(float *probs, const float *logits, const uint8_t *tgt, int N, int V);
typedef void (*atm_xent_bwd_fn)(float *dlogits, const float *probs, const uint8_t *tgt, int N, int V,
                                float scale);
typedef void (*atm_exp_fn)(float *y, const float *x, int n);
/* See atm_atome_attn_select in atome_layers.h. */
typedef void (*atm_attn_select_fn)(float *ps, int32_t *is, const float *q, const float *kT, int ldk,
                                   int DH, int n, float scale, int keff, float *sc);

/* The atome pathway primitives (atome_layers.h). */
typedef void (*atm_conv_fwd_fn)(float *out, const float *u, const float *w, float *scratch,
                                int B, int T, int C, int K);
typedef void (*atm_conv_bwd_fn)(float *du, float *dw, const float *dout, const float *u,
                                const float *w, float *scratch, int B, int T, int C, int K, int ld);
typedef void (*atm_ssm_fwd_fn)(float *s, float *out, const float *u, const float *a_raw,
                               const float *b, const float *c_out, float *scratch, int B, int T, int C);
typedef void (*atm_ssm_bwd_fn)(float *du, float *da_raw, float *db, float *dc, const float *dout,
                               const float *u, const float *s, const float *a_raw, const float *b,
                               const float *c_out, float *scratch, int B, int T, int C, int ld);
typedef void (*atm_attn_fwd_fn)(float *out, int32_t *idx, float *p, const float *q, const float *k,
                                const float *v, float *scratch, int B, int T, int DH, int C, int TK);
typedef void (*atm_attn_bwd_fn)(float *dq, float *dk, float *dv, const float *dout, const int32_t *idx,
                                const float *p, const float *q, const float *k, const float *v,
                                int B, int T, int DH, int C, int TK);
typedef void (*atm_mix_fwd_fn)(float *hout, float *r, const float *hin, const float *const *paths,
                               int N, int C, int P);
typedef void (*atm_mix_bwd_fn)(float *drl, float *const *dpaths, const float *dhout, const float *r,
                               const float *const *paths, int N, int C, int P);

typedef struct {
    const char        *name;    /* the matmul set it goes with: "ref", "avx2", "avx512" */
    atm_ln_fwd_fn      layernorm_forward;
    atm_ln_bwd_fn      layernorm_backward;
    atm_xent_fwd_fn    xent_forward;
    atm_xent_bwd_fn    xent_backward;
    atm_exp_fn         exp;
    void             (*softmax)(float *x, int n);
    atm_attn_select_fn attn_select;
    atm_conv_fwd_fn    conv_forward;
    atm_conv_bwd_fn    conv_backward;
    atm_ssm_fwd_fn     ssm_forward;
    atm_ssm_bwd_fn     ssm_backward;
    atm_attn_fwd_fn    attn_forward;
    atm_attn_bwd_fn    attn_backward;
    atm_mix_fwd_fn     mix_forward;
    atm_mix_bwd_fn     mix_backward;
} atm_layer_kernel_set;

/* The layer set that goes with the matmul set in use (the "ref" layer set if
 * that matmul set has none). */
const atm_layer_kernel_set *atm_layer_kernels(void);

#if defined(__x86_64__) || defined(__i386__)
#define ATM_LAYER_KERNELS_DECL(sfx)                                                                   \
    void atm_layernorm_forward_##sfx(float *out, float *mean, float *rstd, const float *inp,          \
                                     const float *g, const float *b, int N, int C);                  \
    void atm_layernorm_backward_##sfx(float *dinp, float *dg, float *db, const float *dout,          \
                                      const float *inp, const float *g, const float *mean,           \
                                      const float *rstd, int N, int C);                              \
    double atm_xent_forward_##sfx(float *probs, const float *logits, const uint8_t *tgt, int N, int V); \
    void atm_xent_backward_##sfx(float *dlogits, const float *probs, const uint8_t *tgt, int N, int V, \
                                 float scale);                                                       \
    void atm_exp_##sfx(float *y, const float *x, int n);                                             \
    void atm_softmax_##sfx(float *x, int n);                                                         \
    void atm_atome_attn_select_##sfx(float *ps, int32_t *is, const float *q, const float *kT, int ldk, \
                                     int DH, int n, float scale, int keff, float *sc);               \
    void atm_atome_conv_forward_##sfx(float *out, const float *u, const float *w, float *scratch,    \
                                      int B, int T, int C, int K);                                   \
    void atm_atome_conv_backward_##sfx(float *du, float *dw, const float *dout, const float *u,     \
                                       const float *w, float *scratch, int B, int T, int C, int K,   \
                                       int ld);                                                      \
    void atm_atome_ssm_forward_##sfx(float *s, float *out, const float *u, const float *a_raw,      \
                                     const float *b, const float *c_out, float *scratch, int B,      \
                                     int T, int C);                                                  \
    void atm_atome_ssm_backward_##sfx(float *du, float *da_raw, float *db, float *dc,               \
                                      const float *dout, const float *u, const float *s,             \
                                      const float *a_raw, const float *b, const float *c_out,        \
                                      float *scratch, int B, int T, int C, int ld);                  \
    void atm_atome_attn_forward_##sfx(float *out, int32_t *idx, float *p, const float *q,           \
                                      const float *k, const float *v, float *scratch, int B, int T,  \
                                      int DH, int C, int TK);                                        \
    void atm_atome_attn_backward_##sfx(float *dq, float *dk, float *dv, const float *dout,          \
                                       const int32_t *idx, const float *p, const float *q,           \
                                       const float *k, const float *v, int B, int T, int DH, int C,  \
                                       int TK);                                                      \
    void atm_atome_mix_forward_##sfx(float *hout, float *r, const float *hin,                       \
                                     const float *const *paths, int N, int C, int P);                \
    void atm_atome_mix_backward_##sfx(float *drl, float *const *dpaths, const float *dhout,         \
                                      const float *r, const float *const *paths, int N, int C, int P);
ATM_LAYER_KERNELS_DECL(avx2)
ATM_LAYER_KERNELS_DECL(avx512)
#undef ATM_LAYER_KERNELS_DECL
#endif

#if defined(__wasm_simd128__)
/* kernels/kernels_layers_wasm.c; the wasm-simd set's other members (softmax,
 * attention backward) are the references. */
void atm_layernorm_forward_wasm(float *out, float *mean, float *rstd, const float *inp,
                                const float *g, const float *b, int N, int C);
void atm_layernorm_backward_wasm(float *dinp, float *dg, float *db, const float *dout,
                                 const float *inp, const float *g, const float *mean,
                                 const float *rstd, int N, int C);
double atm_xent_forward_wasm(float *probs, const float *logits, const uint8_t *tgt, int N, int V);
void atm_xent_backward_wasm(float *dlogits, const float *probs, const uint8_t *tgt, int N, int V,
                            float scale);
void atm_exp_wasm(float *y, const float *x, int n);
void atm_atome_attn_select_wasm(float *ps, int32_t *is, const float *q, const float *kT, int ldk,
                                int DH, int n, float scale, int keff, float *sc);
void atm_atome_attn_forward_wasm(float *out, int32_t *idx, float *p, const float *q, const float *k,
                                 const float *v, float *scratch, int B, int T, int DH, int C, int TK);
void atm_atome_ssm_forward_wasm(float *s, float *out, const float *u, const float *a_raw,
                                const float *b, const float *c_out, float *scratch, int B, int T, int C);
void atm_atome_ssm_backward_wasm(float *du, float *da_raw, float *db, float *dc, const float *dout,
                                 const float *u, const float *s, const float *a_raw, const float *b,
                                 const float *c_out, float *scratch, int B, int T, int C, int ld);
void atm_atome_conv_forward_wasm(float *out, const float *u, const float *w, float *scratch,
                                 int B, int T, int C, int K);
void atm_atome_conv_backward_wasm(float *du, float *dw, const float *dout, const float *u,
                                  const float *w, float *scratch, int B, int T, int C, int K, int ld);
void atm_atome_mix_forward_wasm(float *hout, float *r, const float *hin, const float *const *paths,
                                int N, int C, int P);
void atm_atome_mix_backward_wasm(float *drl, float *const *dpaths, const float *dhout, const float *r,
                                 const float *const *paths, int N, int C, int P);
#endif

#endif
