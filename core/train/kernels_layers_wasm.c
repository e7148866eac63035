/* core/train/kernels_layers_wasm.c — wasm SIMD128 layer kernels (wasm
 * -msimd128 only): the third instance of the shared layer templates, with the
 * 4-lane macros of kernels_wasm_lanes.h, plus the depthwise conv, which stays
 * hand-written here.
 *
 * From the templates (kernels_x86_layers_tmpl.h, kernels_x86_atome_tmpl.h;
 * their contracts, on 4-float vectors): layernorm forward/backward,
 * cross-entropy forward/backward, the vector exp, the attention row selection
 * and forward, the SSM scans and the router mixing (atm_*_wasm of
 * kernels_layers.h). The set's softmax is atm_softmax_ref (KX_LIBM_SOFTMAX),
 * so the attention and router weights are the reference's bits, libm's expf
 * reproduced on 4 lanes (kx_expf4); every other pathway primitive is
 * bit-identical to its reference as on x86. Attention backward stays the
 * reference (KX_NO_ATTN_BACKWARD): a 4-lane port of the x86 kernel and two
 * wasm versions (one pass per row; all dots, then the axpys) measured no
 * faster than clang's vectorisation of it in this build.
 *
 * Hand-written here, and why:
 *   conv        bit-identical to the reference: 4 channels at a time down
 *               the batch with the K <= 8 taps (and the backward's tap
 *               gradients) in registers. The templates' row-major loops
 *               (every tap reloaded per row) measured slower than the
 *               references as 4-lane ports, so the loop order differs
 *               deliberately (KX_NO_CONV).
 * Rows are independent and computed in an order that depends only on their
 * length; column tails use lane loads/stores (no reads or writes outside the
 * buffers). Functions of the layer set without a vector version here are the
 * references themselves (kernels_layers.c). Tests:
 * tests/node/wasm-layers.test.mjs, tests/node/fingerprints.test.mjs. */
#if defined(__wasm_simd128__)
#include <math.h>
#include <stddef.h>
#include "kernels_wasm_lanes.h"
#include "atome_layers.h"
#include "kernels_layers.h"

#include "kernels_x86_layers_tmpl.h"
#include "kernels_x86_atome_tmpl.h"

#define KL_INLINE static inline __attribute__((always_inline))

/* ---- depthwise causal conv ----
 * One sequence at a time, in it four channels at a time (eight in the
 * forward) down the sequence with their K taps in registers:
 * the forward sums a row's taps in j order from 0; the backward gathers
 * du[m] += w_j d[m+j] in j order (the reference's scatter from row n = m+j
 * reaches du[m] in the same order) and keeps the K tap gradients of the 4
 * channels in registers over a sequence, continuing from and returning to
 * dwT, so each sums over (b, t) ascending from 0 as the reference's zeroed
 * dwT. Channels past the last whole vector take the same operations one at
 * a time. */
/* NV = 1 or 2 vectors (4 or 8 channels from i) down sequence b. */
KL_INLINE void kl_conv_fwd_cols(const int K, const int NV, float *out, const float *u, const float *wT,
                                int b, int T, int C, int i) {
    v128_t wv[2][8];
    for (int v = 0; v < NV; v++)
        for (int j = 0; j < K; j++) wv[v][j] = wasm_v128_load(wT + (size_t)j * C + i + 4 * v);
    const float *ub = u + (size_t)b * T * C + i;
    float *ob = out + (size_t)b * T * C + i;
    int t = 0;
    for (; t < T && t < K - 1; t++)
        for (int v = 0; v < NV; v++) {
            v128_t acc = wasm_f32x4_splat(0.0f);
            for (int j = 0; j <= t; j++)
                acc = wasm_f32x4_add(acc, wasm_f32x4_mul(wv[v][j], wasm_v128_load(ub + (size_t)(t - j) * C + 4 * v)));
            wasm_v128_store(ob + (size_t)t * C + 4 * v, acc);
        }
    for (; t < T; t++) {
        const float *ut = ub + (size_t)t * C;
        v128_t acc[2];
        for (int v = 0; v < NV; v++) acc[v] = wasm_f32x4_splat(0.0f);
        for (int j = 0; j < K; j++)
            for (int v = 0; v < NV; v++)
                acc[v] = wasm_f32x4_add(acc[v], wasm_f32x4_mul(wv[v][j], wasm_v128_load(ut - (size_t)j * C + 4 * v)));
        for (int v = 0; v < NV; v++) wasm_v128_store(ob + (size_t)t * C + 4 * v, acc[v]);
    }
}

/* Sequences outermost, so one sequence's rows stay in cache over its
 * channel chunks. */
KL_INLINE void kl_conv_fwd_k(const int K, float *out, const float *u, const float *wT, int B, int T, int C) {
    const int full = C / 4 * 4;
    for (int b = 0; b < B; b++) {
        int i = 0;
        for (; i + 8 <= full; i += 8) kl_conv_fwd_cols(K, 2, out, u, wT, b, T, C, i);
        if (i < full) kl_conv_fwd_cols(K, 1, out, u, wT, b, T, C, i);
    }
    for (int c = full; c < C; c++)
        for (int b = 0; b < B; b++)
            for (int t = 0; t < T; t++) {
                const size_t n = (size_t)b * T + t;
                const int jmax = t < K - 1 ? t : K - 1;
                float acc = 0.0f;
                for (int j = 0; j <= jmax; j++) acc += wT[(size_t)j * C + c] * u[(n - (size_t)j) * C + c];
                out[n * C + c] = acc;
            }
}

void atm_atome_conv_forward_wasm(float *out, const float *u, const float *w, float *scratch,
                                 int B, int T, int C, int K) {
    if (K < 1 || K > 8) { atm_atome_conv_forward_ref(out, u, w, scratch, B, T, C, K); return; }
    float *wT = scratch;                                  /* [K][C]: wT[j][c] = w[c][j] */
    for (int c = 0; c < C; c++)
        for (int j = 0; j < K; j++) wT[(size_t)j * C + c] = w[(size_t)c * K + j];
    switch (K) {
    case 1: kl_conv_fwd_k(1, out, u, wT, B, T, C); break;
    case 2: kl_conv_fwd_k(2, out, u, wT, B, T, C); break;
    case 3: kl_conv_fwd_k(3, out, u, wT, B, T, C); break;
    case 4: kl_conv_fwd_k(4, out, u, wT, B, T, C); break;
    case 5: kl_conv_fwd_k(5, out, u, wT, B, T, C); break;
    case 6: kl_conv_fwd_k(6, out, u, wT, B, T, C); break;
    case 7: kl_conv_fwd_k(7, out, u, wT, B, T, C); break;
    default: kl_conv_fwd_k(8, out, u, wT, B, T, C); break;
    }
}

/* Channels i .. i+3 of sequence b; the tap gradients continue from dwT and
 * go back there (so each still sums over (b, t) ascending from 0). */
KL_INLINE void kl_conv_bwd_cols(const int K, float *du, float *dwT, const float *dout, const float *u,
                                const float *wT, int b, int T, int C, int i) {
    const float *db = dout + (size_t)b * T * C + i, *ub = u + (size_t)b * T * C + i;
    if (du) {
        v128_t wv[8];
        for (int j = 0; j < K; j++) wv[j] = wasm_v128_load(wT + (size_t)j * C + i);
        float *dub = du + (size_t)b * T * C + i;
        int m = 0;
        for (; m + K - 1 < T; m++) {
            v128_t acc = wasm_v128_load(dub + (size_t)m * C);
            for (int j = 0; j < K; j++)
                acc = wasm_f32x4_add(acc, wasm_f32x4_mul(wv[j], wasm_v128_load(db + (size_t)(m + j) * C)));
            wasm_v128_store(dub + (size_t)m * C, acc);
        }
        for (; m < T; m++) {
            v128_t acc = wasm_v128_load(dub + (size_t)m * C);
            for (int j = 0; m + j < T; j++)
                acc = wasm_f32x4_add(acc, wasm_f32x4_mul(wv[j], wasm_v128_load(db + (size_t)(m + j) * C)));
            wasm_v128_store(dub + (size_t)m * C, acc);
        }
    }
    if (dwT) {
        v128_t dwv[8];
        for (int j = 0; j < K; j++) dwv[j] = wasm_v128_load(dwT + (size_t)j * C + i);
        int t = 0;
        for (; t < T && t < K - 1; t++) {
            const v128_t dv = wasm_v128_load(db + (size_t)t * C);
            for (int j = 0; j <= t; j++)
                dwv[j] = wasm_f32x4_add(dwv[j], wasm_f32x4_mul(dv, wasm_v128_load(ub + (size_t)(t - j) * C)));
        }
        for (; t < T; t++) {
            const v128_t dv = wasm_v128_load(db + (size_t)t * C);
            for (int j = 0; j < K; j++)
                dwv[j] = wasm_f32x4_add(dwv[j], wasm_f32x4_mul(dv, wasm_v128_load(ub + (size_t)(t - j) * C)));
        }
        for (int j = 0; j < K; j++) wasm_v128_store(dwT + (size_t)j * C + i, dwv[j]);
    }
}

KL_INLINE void kl_conv_bwd_k(const int K, float *du, float *dwT, const float *dout, const float *u,
                             const float *wT, int B, int T, int C) {
    const int full = C / 4 * 4;
    if (dwT)
        for (size_t x = 0; x < (size_t)K * C; x++) dwT[x] = 0.0f;
    for (int b = 0; b < B; b++)
        for (int i = 0; i < full; i += 4) kl_conv_bwd_cols(K, du, dwT, dout, u, wT, b, T, C, i);
    for (int c = full; c < C; c++)
        for (int b = 0; b < B; b++)
            for (int t = 0; t < T; t++) {
                const size_t n = (size_t)b * T + t;
                const int jmax = t < K - 1 ? t : K - 1;
                for (int j = 0; j <= jmax; j++) {
                    const size_t m = (n - (size_t)j) * C + c;
                    if (du) du[m] += wT[(size_t)j * C + c] * dout[n * C + c];
                    if (dwT) dwT[(size_t)j * C + c] += dout[n * C + c] * u[m];
                }
            }
}

void atm_atome_conv_backward_wasm(float *du, float *dw, const float *dout, const float *u,
                                  const float *w, float *scratch, int B, int T, int C, int K) {
    if (K < 1 || K > 8) { atm_atome_conv_backward_ref(du, dw, dout, u, w, scratch, B, T, C, K); return; }
    const size_t KC = (size_t)K * C;
    float *wT = scratch, *dwT = dw ? scratch + KC : NULL; /* [K][C] each */
    for (int c = 0; c < C; c++)
        for (int j = 0; j < K; j++) wT[(size_t)j * C + c] = w[(size_t)c * K + j];
    switch (K) {
    case 1: kl_conv_bwd_k(1, du, dwT, dout, u, wT, B, T, C); break;
    case 2: kl_conv_bwd_k(2, du, dwT, dout, u, wT, B, T, C); break;
    case 3: kl_conv_bwd_k(3, du, dwT, dout, u, wT, B, T, C); break;
    case 4: kl_conv_bwd_k(4, du, dwT, dout, u, wT, B, T, C); break;
    case 5: kl_conv_bwd_k(5, du, dwT, dout, u, wT, B, T, C); break;
    case 6: kl_conv_bwd_k(6, du, dwT, dout, u, wT, B, T, C); break;
    case 7: kl_conv_bwd_k(7, du, dwT, dout, u, wT, B, T, C); break;
    default: kl_conv_bwd_k(8, du, dwT, dout, u, wT, B, T, C); break;
    }
    if (dw)
        for (int c = 0; c < C; c++)
            for (int j = 0; j < K; j++) dw[(size_t)c * K + j] += dwT[(size_t)j * C + c];
}

#else
/* ISO C wants at least one declaration in a translation unit. */
typedef int atm_kernels_layers_wasm_unused;
#endif
