/* wasm/atome_wasm_hooks.c — exports of atome.wasm that only tests and
 * benchmarks call: matmul accounting and replay (tools/bench/bench-wasm-train.mjs),
 * a register-only multiply-add loop (its ceiling), and each trainer kernel
 * by name with `which` choosing the reference (0), the dispatched set (1) or
 * the wasm SIMD body (2), for the bit-identity tests in
 * tests/node/wasm-kernels.test.mjs and wasm-layers.test.mjs. The production
 * API (wasm/atome_wasm.c, atome_wasm_engine.c, atome_wasm_fw.c) does not use
 * them. */
#include <emscripten/emscripten.h>
#if defined(__wasm_simd128__)
#include <wasm_simd128.h>
#endif
#include <stdlib.h>
#include "core/train/kernels.h"
#include "core/train/atome_layers.h"
#include "core/train/kernels_layers.h"
#include "core/train/layers.h"

#define API EMSCRIPTEN_KEEPALIVE

/* ---- kernels, for tests and benchmarks ---- */

/* Matmul work and time, for tools/bench/bench-wasm-train.mjs (kernels.h):
 * flops done so far; recording the calls of some steps into a block of
 * atome_mm_calls_max() entries; replaying them alone (JS times it). */
#define MM_CALLS_MAX 8192
static atm_matmul_call g_calls[MM_CALLS_MAX];
static int g_ncalls = 0;
static float *g_mm_scratch = NULL;
static size_t g_mm_floats = 0;

API double atome_mm_flops(void) { return atm_matmul_flops(); }
API void atome_mm_record_start(void) { atm_matmul_record_start(g_calls, MM_CALLS_MAX); }
/* Calls recorded, or -1 if there were more than the block holds. */
API int atome_mm_record_stop(void) {
    int n = atm_matmul_record_stop();
    g_ncalls = n <= MM_CALLS_MAX ? n : 0;
    return n <= MM_CALLS_MAX ? n : -1;
}
/* Replays the recorded calls `times` times: 0, or -1 (nothing recorded, out
 * of memory). The scratch block is kept for the next call. */
API int atome_mm_replay(int times) {
    if (g_ncalls <= 0) return -1;
    size_t need = atm_matmul_replay_floats(g_calls, g_ncalls);
    if (need > g_mm_floats) {
        free(g_mm_scratch);
        g_mm_scratch = malloc(sizeof(float) * need);
        g_mm_floats = g_mm_scratch ? need : 0;
        if (!g_mm_scratch) return -1;
    }
    for (int t = 0; t < times; t++)
        if (atm_matmul_replay(g_calls, g_ncalls, g_mm_scratch, g_mm_floats) != 0) return -1;
    return 0;
}
API void atome_mm_release(void) { free(g_mm_scratch); g_mm_scratch = NULL; g_mm_floats = 0; g_ncalls = 0; }

/* A register-only 4-lane multiply-then-add loop, for
 * `tools/bench/bench-wasm-train.mjs --matmul`: six independent a += x * y, with
 * y = y ^ splat(zero) every round. The caller passes zero = 0, so y keeps
 * its value, but the compiler cannot know it and must multiply in the loop
 * (without the xor, clang hoists the loop-invariant products and the loop
 * times adds only). 48 flops per round. In a build without SIMD128: 0, no
 * work. */
API float atome_bench_muladd(int iters, int zero) {
#if defined(__wasm_simd128__)
    v128_t y = wasm_f32x4_splat(1.0f), z = wasm_i32x4_splat(zero);
    v128_t x0 = wasm_f32x4_splat(1e-3f), x1 = wasm_f32x4_splat(2e-3f), x2 = wasm_f32x4_splat(3e-3f);
    v128_t x3 = wasm_f32x4_splat(4e-3f), x4 = wasm_f32x4_splat(5e-3f), x5 = wasm_f32x4_splat(6e-3f);
    v128_t a0 = x0, a1 = x1, a2 = x2, a3 = x3, a4 = x4, a5 = x5;
    for (int i = 0; i < iters; i++) {
        y = wasm_v128_xor(y, z);
        a0 = wasm_f32x4_add(a0, wasm_f32x4_mul(x0, y));
        a1 = wasm_f32x4_add(a1, wasm_f32x4_mul(x1, y));
        a2 = wasm_f32x4_add(a2, wasm_f32x4_mul(x2, y));
        a3 = wasm_f32x4_add(a3, wasm_f32x4_mul(x3, y));
        a4 = wasm_f32x4_add(a4, wasm_f32x4_mul(x4, y));
        a5 = wasm_f32x4_add(a5, wasm_f32x4_mul(x5, y));
    }
    v128_t t = wasm_f32x4_add(wasm_f32x4_add(wasm_f32x4_add(a0, a1), wasm_f32x4_add(a2, a3)),
                              wasm_f32x4_add(a4, a5));
    return wasm_f32x4_extract_lane(t, 0);
#else
    (void)iters; (void)zero;
    return 0.0f;
#endif
}

/* which = 0: reference kernels; 1: the dispatched (fastest) set. */
API void atome_matmul_fwd(int which, float *out, const float *inp, const float *w, int N, int IC, int OC) {
    (which ? atm_matmul_forward : atm_matmul_forward_ref)(out, inp, w, N, IC, OC);
}

API void atome_matmul_bwd(int which, float *dinp, float *dw, const float *dout, const float *inp,
                          const float *w, int N, int IC, int OC) {
    (which ? atm_matmul_backward : atm_matmul_backward_ref)(dinp, dw, dout, inp, w, N, IC, OC);
}

/* Layer kernels: which = 0 the references, 1 the dispatched set, 2 the wasm
 * SIMD set itself (the references in a build without -msimd128). */
#if defined(__wasm_simd128__)
#define LAYER(which, name) ((which) == 2 ? name##_wasm : (which) == 1 ? name : name##_ref)
#else
#define LAYER(which, name) ((which) ? name : name##_ref)
#endif

API void atome_layer_ln_fwd(int which, float *out, float *mean, float *rstd, const float *inp,
                            const float *g, const float *b, int N, int C) {
    LAYER(which, atm_layernorm_forward)(out, mean, rstd, inp, g, b, N, C);
}

API void atome_layer_ln_bwd(int which, float *dinp, float *dg, float *db, const float *dout,
                            const float *inp, const float *g, const float *mean, const float *rstd,
                            int N, int C) {
    LAYER(which, atm_layernorm_backward)(dinp, dg, db, dout, inp, g, mean, rstd, N, C);
}

API double atome_layer_xent_fwd(int which, float *probs, const float *logits, const uint8_t *tgt, int N, int V) {
    return LAYER(which, atm_xent_forward)(probs, logits, tgt, N, V);
}

API void atome_layer_xent_bwd(int which, float *dlogits, const float *probs, const uint8_t *tgt, int N, int V,
                              float scale) {
    LAYER(which, atm_xent_backward)(dlogits, probs, tgt, N, V, scale);
}

API void atome_layer_attn_select(int which, float *ps, int32_t *is, const float *q, const float *kT, int ldk,
                                 int DH, int n, float scale, int keff, float *sc) {
    LAYER(which, atm_atome_attn_select)(ps, is, q, kT, ldk, DH, n, scale, keff, sc);
}

API void atome_layer_attn_fwd(int which, float *out, int32_t *idx, float *p, const float *q, const float *k,
                              const float *v, float *scratch, int B, int T, int DH, int C, int TK) {
    LAYER(which, atm_atome_attn_forward)(out, idx, p, q, k, v, scratch, B, T, DH, C, TK);
}

API void atome_layer_ssm_fwd(int which, float *s, float *out, const float *u, const float *a_raw,
                             const float *b, const float *c_out, float *scratch, int B, int T, int C) {
    LAYER(which, atm_atome_ssm_forward)(s, out, u, a_raw, b, c_out, scratch, B, T, C);
}

API void atome_layer_ssm_bwd(int which, float *du, float *da_raw, float *db, float *dc, const float *dout,
                             const float *u, const float *s, const float *a_raw, const float *b,
                             const float *c_out, float *scratch, int B, int T, int C) {
    /* the kernels take the row stride (the pool's channel split); the
     * dispatcher (which == 1) splits the whole call itself */
#if defined(__wasm_simd128__)
    if (which == 2) atm_atome_ssm_backward_wasm(du, da_raw, db, dc, dout, u, s, a_raw, b, c_out, scratch, B, T, C, C);
    else
#endif
    if (which) atm_atome_ssm_backward(du, da_raw, db, dc, dout, u, s, a_raw, b, c_out, scratch, B, T, C);
    else atm_atome_ssm_backward_ref(du, da_raw, db, dc, dout, u, s, a_raw, b, c_out, scratch, B, T, C, C);
}

API void atome_layer_conv_fwd(int which, float *out, const float *u, const float *w, float *scratch,
                              int B, int T, int C, int K) {
    LAYER(which, atm_atome_conv_forward)(out, u, w, scratch, B, T, C, K);
}

API void atome_layer_conv_bwd(int which, float *du, float *dw, const float *dout, const float *u,
                              const float *w, float *scratch, int B, int T, int C, int K) {
#if defined(__wasm_simd128__)
    if (which == 2) atm_atome_conv_backward_wasm(du, dw, dout, u, w, scratch, B, T, C, K, C);
    else
#endif
    if (which) atm_atome_conv_backward(du, dw, dout, u, w, scratch, B, T, C, K);
    else atm_atome_conv_backward_ref(du, dw, dout, u, w, scratch, B, T, C, K, C);
}

/* paths, dpaths: P pointers each (a dpaths entry may be 0: not needed). */
API void atome_layer_mix_fwd(int which, float *hout, float *r, const float *hin, const float *const *paths,
                             int N, int C, int P) {
    LAYER(which, atm_atome_mix_forward)(hout, r, hin, paths, N, C, P);
}

API void atome_layer_mix_bwd(int which, float *drl, float *const *dpaths, const float *dhout, const float *r,
                             const float *const *paths, int N, int C, int P) {
    LAYER(which, atm_atome_mix_backward)(drl, dpaths, dhout, r, paths, N, C, P);
}

API void atome_layer_exp(int which, float *y, const float *x, int n) {
#if defined(__wasm_simd128__)
    if (which == 2) { atm_exp_wasm(y, x, n); return; }
#endif
    if (which == 1) atm_layer_kernels()->exp(y, x, n);
    else atm_exp_ref(y, x, n);
}
