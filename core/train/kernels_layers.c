/* core/train/kernels_layers.c — run-time choice of the layer kernels
 * (kernels_layers.h) and the dispatched entry points atm_layernorm_*,
 * atm_xent_*, atm_softmax (layers.h) and the atome pathway primitives
 * atm_atome_* (atome_layers.h).
 *
 * Contract: each call runs the layer set named like the matmul set in use
 * (atm_kernels_name(), kernels.c), so there is one switch for both:
 * ATOME_KERNELS / atm_kernels_select(). A matmul set with no layer set here
 * gets "ref"; wasm-simd's set (kernels_layers_wasm.c) uses the references
 * for the members it has no vector version of. The lookup is cached on the
 * name pointer, which is the same string for as long as the matmul set stays
 * selected. No threads. */
#include "kernels_layers.h"
#include "atome_layers.h"
#include "kernels.h"
#include <string.h>

/* Ordered like the matmul sets; "ref" first (the fallback). */
#define LSET(name, sfx)                                                                             \
    { name, atm_layernorm_forward_##sfx, atm_layernorm_backward_##sfx, atm_xent_forward_##sfx,       \
      atm_xent_backward_##sfx, atm_exp_##sfx, atm_softmax_##sfx, atm_atome_attn_select_##sfx,        \
      atm_atome_conv_forward_##sfx, atm_atome_conv_backward_##sfx, atm_atome_ssm_forward_##sfx,      \
      atm_atome_ssm_backward_##sfx, atm_atome_attn_forward_##sfx, atm_atome_attn_backward_##sfx,     \
      atm_atome_mix_forward_##sfx, atm_atome_mix_backward_##sfx }
static const atm_layer_kernel_set LSETS[] = {
    LSET("ref", ref),
#if defined(__x86_64__) || defined(__i386__)
    LSET("avx2", avx2),
    LSET("avx512", avx512),
#endif
#if defined(__wasm_simd128__)
    { "wasm-simd", atm_layernorm_forward_wasm, atm_layernorm_backward_wasm, atm_xent_forward_wasm,
      atm_xent_backward_wasm, atm_exp_wasm, atm_softmax_ref, atm_atome_attn_select_wasm,
      atm_atome_conv_forward_wasm, atm_atome_conv_backward_wasm, atm_atome_ssm_forward_wasm,
      atm_atome_ssm_backward_wasm, atm_atome_attn_forward_wasm, atm_atome_attn_backward_ref,
      atm_atome_mix_forward_wasm, atm_atome_mix_backward_wasm },
#endif
};
#undef LSET
#define N_LSETS ((int)(sizeof(LSETS) / sizeof(LSETS[0])))

static const char *g_for = NULL;                 /* matmul set name the cache is for */
static const atm_layer_kernel_set *g_lset = &LSETS[0];

const atm_layer_kernel_set *atm_layer_kernels(void) {
    const char *name = atm_kernels_name();
    if (name != g_for) {
        const atm_layer_kernel_set *s = &LSETS[0];
        for (int i = 1; i < N_LSETS; i++)
            if (strcmp(LSETS[i].name, name) == 0) s = &LSETS[i];
        g_lset = s;
        g_for = name;
    }
    return g_lset;
}

void atm_layernorm_forward(float *out, float *mean, float *rstd, const float *inp,
                           const float *g, const float *b, int N, int C) {
    atm_layer_kernels()->layernorm_forward(out, mean, rstd, inp, g, b, N, C);
}

void atm_layernorm_backward(float *dinp, float *dg, float *db, const float *dout,
                            const float *inp, const float *g, const float *mean,
                            const float *rstd, int N, int C) {
    atm_layer_kernels()->layernorm_backward(dinp, dg, db, dout, inp, g, mean, rstd, N, C);
}

double atm_xent_forward(float *probs, const float *logits, const uint8_t *tgt, int N, int V) {
    return atm_layer_kernels()->xent_forward(probs, logits, tgt, N, V);
}

void atm_xent_backward(float *dlogits, const float *probs, const uint8_t *tgt, int N, int V,
                       float scale) {
    atm_layer_kernels()->xent_backward(dlogits, probs, tgt, N, V, scale);
}

void atm_atome_attn_select(float *ps, int32_t *is, const float *q, const float *kT, int ldk,
                           int DH, int n, float scale, int keff, float *sc) {
    atm_layer_kernels()->attn_select(ps, is, q, kT, ldk, DH, n, scale, keff, sc);
}

void atm_softmax(float *x, int n) { atm_layer_kernels()->softmax(x, n); }

void atm_atome_conv_forward(float *out, const float *u, const float *w, float *scratch,
                            int B, int T, int C, int K) {
    atm_layer_kernels()->conv_forward(out, u, w, scratch, B, T, C, K);
}

void atm_atome_conv_backward(float *du, float *dw, const float *dout, const float *u,
                             const float *w, float *scratch, int B, int T, int C, int K) {
    atm_layer_kernels()->conv_backward(du, dw, dout, u, w, scratch, B, T, C, K);
}

void atm_atome_ssm_forward(float *s, float *out, const float *u, const float *a_raw,
                           const float *b, const float *c_out, float *scratch,
                           int B, int T, int C) {
    atm_layer_kernels()->ssm_forward(s, out, u, a_raw, b, c_out, scratch, B, T, C);
}

void atm_atome_ssm_backward(float *du, float *da_raw, float *db, float *dc,
                            const float *dout, const float *u, const float *s,
                            const float *a_raw, const float *b, const float *c_out,
                            float *scratch, int B, int T, int C) {
    atm_layer_kernels()->ssm_backward(du, da_raw, db, dc, dout, u, s, a_raw, b, c_out, scratch, B, T, C);
}

void atm_atome_attn_forward(float *out, int32_t *idx, float *p, const float *q,
                            const float *k, const float *v, float *scratch,
                            int B, int T, int DH, int C, int TK) {
    atm_layer_kernels()->attn_forward(out, idx, p, q, k, v, scratch, B, T, DH, C, TK);
}

void atm_atome_attn_backward(float *dq, float *dk, float *dv, const float *dout,
                             const int32_t *idx, const float *p, const float *q,
                             const float *k, const float *v,
                             int B, int T, int DH, int C, int TK) {
    atm_layer_kernels()->attn_backward(dq, dk, dv, dout, idx, p, q, k, v, B, T, DH, C, TK);
}

void atm_atome_mix_forward(float *hout, float *r, const float *hin,
                           const float *const *paths, int N, int C, int P) {
    atm_layer_kernels()->mix_forward(hout, r, hin, paths, N, C, P);
}

void atm_atome_mix_backward(float *drl, float *const *dpaths, const float *dhout,
                            const float *r, const float *const *paths,
                            int N, int C, int P) {
    atm_layer_kernels()->mix_backward(drl, dpaths, dhout, r, paths, N, C, P);
}
