/* core/train/kernels_layers.c — run-time choice of the layer kernels
 * (kernels_layers.h) and the dispatched entry points atm_layernorm_*,
 * atm_xent_* (layers.h) and atm_atome_attn_select (atome_layers.h).
 *
 * Contract: each call runs the layer set named like the matmul set in use
 * (atm_kernels_name(), kernels.c), so there is one switch for both:
 * ATOME_KERNELS / atm_kernels_select(). A matmul set with no layer set here
 * (wasm-simd) gets "ref". The lookup is cached on the name pointer, which is
 * the same string for as long as the matmul set stays selected. No threads. */
#include "kernels_layers.h"
#include "atome_layers.h"
#include "kernels.h"
#include <string.h>

/* Ordered like the matmul sets; "ref" first (the fallback). */
static const atm_layer_kernel_set LSETS[] = {
    { "ref", atm_layernorm_forward_ref, atm_layernorm_backward_ref, atm_xent_forward_ref,
      atm_xent_backward_ref, atm_exp_ref, atm_atome_attn_select_ref },
#if defined(__x86_64__) || defined(__i386__)
    { "avx2", atm_layernorm_forward_avx2, atm_layernorm_backward_avx2, atm_xent_forward_avx2,
      atm_xent_backward_avx2, atm_exp_avx2, atm_atome_attn_select_avx2 },
    { "avx512", atm_layernorm_forward_avx512, atm_layernorm_backward_avx512, atm_xent_forward_avx512,
      atm_xent_backward_avx512, atm_exp_avx512, atm_atome_attn_select_avx512 },
#endif
};
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
