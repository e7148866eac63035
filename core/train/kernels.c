/* core/train/kernels.c — dispatch of the training matmul kernels.
 * Reference kernels live in layers.c; fast ones are added here behind the same
 * interface and checked against the reference in tests/test_kernels.c. */
#include "layers.h"

void atm_matmul_forward(float *out, const float *inp, const float *w, int N, int IC, int OC) {
    atm_matmul_forward_ref(out, inp, w, N, IC, OC);
}

void atm_matmul_backward(float *dinp, float *dw, const float *dout, const float *inp,
                         const float *w, int N, int IC, int OC) {
    atm_matmul_backward_ref(dinp, dw, dout, inp, w, N, IC, OC);
}

const char *atm_kernels_name(void) { return "ref"; }
