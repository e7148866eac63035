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
 * Choice. On first use the dispatcher (kernels/kernels.c) takes the best set
 * the CPU supports: x86 "avx512" (AVX-512F), then "avx2" (AVX2 + FMA), then
 * "ref"; a wasm build with SIMD128 would add "wasm-simd"
 * (kernels/kernels_wasm.c). The environment variable
 * ATOME_KERNELS=ref|avx2|avx512|wasm-simd forces one; an unknown or
 * unsupported name falls back to the automatic choice with a warning on
 * stderr. atm_kernels_select() changes the choice at run time
 * (benchmarks, tests). tests/test_kernels.c checks every available set
 * against the reference. */
#ifndef ATOME_TRAIN_KERNELS_H
#define ATOME_TRAIN_KERNELS_H
#include "layers.h"

typedef void (*atm_matmul_fwd_fn)(float *out, const float *inp, const float *w,
                                  int N, int IC, int OC);
typedef void (*atm_matmul_bwd_fn)(float *dinp, float *dw, const float *dout,
                                  const float *inp, const float *w, int N, int IC, int OC);

/* dw[OC][IC] += dout^T . inp with dout's rows ldd >= OC floats apart: the
 * dw of a backward for some of its output channels (the thread pool's share,
 * kernels/kernels.c); each element gets the bits the whole backward gives it. */
typedef void (*atm_matmul_dw_fn)(float *dw, const float *dout, int ldd, const float *inp, int N, int IC, int OC);

typedef struct {
    const char       *name;     /* "ref", "avx2", "avx512", "wasm-simd" */
    atm_matmul_fwd_fn forward;
    atm_matmul_bwd_fn backward;
    atm_matmul_dw_fn  backward_dw;
} atm_kernel_set;

/* Number of kernel sets compiled in and supported by this CPU; set i in
 * 0..n-1 is returned by atm_kernels_set(i), ordered from "ref" to the fastest. */
int atm_kernels_count(void);
const atm_kernel_set *atm_kernels_set(int i);
/* Selects the set called `name` ("auto" = best available). Returns 0, or -1
 * (choice unchanged) if it is not available here. */
int atm_kernels_select(const char *name);

/* Floating-point operations done by atm_matmul_forward/backward since the
 * program started: 2*N*IC*OC per forward and per requested gradient (dinp,
 * dw). A plain counter (no threads), for benchmarks: the difference across
 * a training step is the matmul work of that step. */
double atm_matmul_flops(void);

/* Recording the matmul calls of some code (a training step) to time the
 * same work alone (benchmarks: how much of a step the matmuls take).
 * atm_matmul_record_start() makes every following atm_matmul_forward /
 * backward append its shape to calls[0 .. cap) (calls past cap are counted,
 * not stored); atm_matmul_record_stop() ends it and returns how many calls
 * there were. atm_matmul_replay() runs n recorded calls again with the
 * current kernel set on scratch buffers (the inputs filled with 0.25, so no
 * value is ever subnormal), in the same order; it needs
 * atm_matmul_replay_floats() floats of scratch and returns -1 if given fewer. */
typedef struct { int backward, dinp, dw, N, IC, OC; } atm_matmul_call;
void atm_matmul_record_start(atm_matmul_call *calls, int cap);
int atm_matmul_record_stop(void);
size_t atm_matmul_replay_floats(const atm_matmul_call *calls, int n);
int atm_matmul_replay(const atm_matmul_call *calls, int n, float *scratch, size_t floats);

#if defined(__x86_64__) || defined(__i386__)
void atm_matmul_forward_avx2(float *out, const float *inp, const float *w, int N, int IC, int OC);
void atm_matmul_backward_dw_avx2(float *dw, const float *dout, int ldd, const float *inp, int N, int IC, int OC);
void atm_matmul_backward_avx2(float *dinp, float *dw, const float *dout, const float *inp,
                              const float *w, int N, int IC, int OC);
void atm_matmul_forward_avx512(float *out, const float *inp, const float *w, int N, int IC, int OC);
void atm_matmul_backward_dw_avx512(float *dw, const float *dout, int ldd, const float *inp, int N, int IC, int OC);
void atm_matmul_backward_avx512(float *dinp, float *dw, const float *dout, const float *inp,
                                const float *w, int N, int IC, int OC);
#endif
#if defined(__wasm_simd128__)
void atm_matmul_forward_wasm(float *out, const float *inp, const float *w, int N, int IC, int OC);
void atm_matmul_backward_dw_wasm(float *dw, const float *dout, int ldd, const float *inp, int N, int IC, int OC);
void atm_matmul_backward_wasm(float *dinp, float *dw, const float *dout, const float *inp,
                              const float *w, int N, int IC, int OC);
#endif

#endif
