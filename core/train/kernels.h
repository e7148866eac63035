/* core/train/kernels.h — the matmul kernel sets behind atm_matmul_forward /
 * atm_matmul_backward (layers.h), and how one is chosen.
 *
 * Contract. Every kernel set computes exactly the functions documented in
 * layers.h (same shapes, "+=" into dinp and dw, NULL means "not needed") for
 * any N, IC, OC >= 0; results differ from the _ref kernels by float rounding
 * only (different summation order, fused multiply-add). A kernel set is
 * deterministic: the same inputs give the same bits on every call, whatever the
 * alignment of the buffers (no alignment-dependent paths, no threads).
 *
 * Choice. On first use the dispatcher (kernels.c) takes the best set the CPU
 * supports: x86 "avx512" (AVX-512F), then "avx2" (AVX2 + FMA), then "ref";
 * a wasm build with SIMD128 would add "wasm-simd" (kernels_wasm.c). The
 * environment variable ATOME_KERNELS=ref|avx2|avx512|wasm-simd forces one;
 * an unknown or unsupported name falls back to the automatic choice with a
 * warning on stderr. atm_kernels_select() changes the choice at run time
 * (benchmarks, tests). tests/test_kernels.c checks every available set
 * against the reference. */
#ifndef ATOME_TRAIN_KERNELS_H
#define ATOME_TRAIN_KERNELS_H
#include "layers.h"

typedef void (*atm_matmul_fwd_fn)(float *out, const float *inp, const float *w,
                                  int N, int IC, int OC);
typedef void (*atm_matmul_bwd_fn)(float *dinp, float *dw, const float *dout,
                                  const float *inp, const float *w, int N, int IC, int OC);

typedef struct {
    const char       *name;     /* "ref", "avx2", "avx512", "wasm-simd" */
    atm_matmul_fwd_fn forward;
    atm_matmul_bwd_fn backward;
} atm_kernel_set;

/* Number of kernel sets compiled in and supported by this CPU; set i in
 * 0..n-1 is returned by atm_kernels_set(i), ordered from "ref" to the fastest. */
int atm_kernels_count(void);
const atm_kernel_set *atm_kernels_set(int i);
/* Selects the set called `name` ("auto" = best available). Returns 0, or -1
 * (choice unchanged) if it is not available here. */
int atm_kernels_select(const char *name);

#if defined(__x86_64__) || defined(__i386__)
void atm_matmul_forward_avx2(float *out, const float *inp, const float *w, int N, int IC, int OC);
void atm_matmul_backward_avx2(float *dinp, float *dw, const float *dout, const float *inp,
                              const float *w, int N, int IC, int OC);
void atm_matmul_forward_avx512(float *out, const float *inp, const float *w, int N, int IC, int OC);
void atm_matmul_backward_avx512(float *dinp, float *dw, const float *dout, const float *inp,
                                const float *w, int N, int IC, int OC);
#endif
#if defined(__wasm_simd128__)
void atm_matmul_forward_wasm(float *out, const float *inp, const float *w, int N, int IC, int OC);
void atm_matmul_backward_wasm(float *dinp, float *dw, const float *dout, const float *inp,
                              const float *w, int N, int IC, int OC);
#endif

#endif
