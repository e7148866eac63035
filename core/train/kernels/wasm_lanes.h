/* core/train/kernels/wasm_lanes.h — partial-vector loads and stores for the wasm
 * SIMD128 training kernels (kernels_wasm.c, kernels_layers_wasm.c).
 *
 * wasm has no masked loads: a column tail of n = 1..3 floats is read with
 * load32_zero / load64_zero / load32_lane and written with store32/64_lane,
 * so nothing outside the caller's buffer is touched. Include only under
 * __wasm_simd128__. */
#ifndef ATOME_TRAIN_WASM_LANES_H
#define ATOME_TRAIN_WASM_LANES_H
#include <wasm_simd128.h>

/* n = 1..4 floats at p into the low lanes, zeros above. */
static inline __attribute__((always_inline)) v128_t atm_wl_load(const float *p, const int n) {
    switch (n) {
    case 1: return wasm_v128_load32_zero(p);
    case 2: return wasm_v128_load64_zero(p);
    case 3: return wasm_v128_load32_lane(p + 2, wasm_v128_load64_zero(p), 2);
    default: return wasm_v128_load(p);
    }
}

/* The low n = 1..4 lanes of v to p. */
static inline __attribute__((always_inline)) void atm_wl_store(float *p, v128_t v, const int n) {
    switch (n) {
    case 1: wasm_v128_store32_lane(p, v, 0); break;
    case 2: wasm_v128_store64_lane(p, v, 0); break;
    case 3: wasm_v128_store64_lane(p, v, 0); wasm_v128_store32_lane(p + 2, v, 2); break;
    default: wasm_v128_store(p, v); break;
    }
}

#endif
