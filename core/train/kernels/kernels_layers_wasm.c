/* core/train/kernels/kernels_layers_wasm.c — wasm SIMD128 layer kernels (wasm
 * -msimd128 only): the third instance of the shared layer templates
 * (kernels_x86_layers_tmpl.h, kernels_x86_atome_tmpl.h; their contracts, on
 * 4-float vectors), with the lane macros and loop-shape knobs of
 * kernels_wasm_lanes.h. Nothing is hand-written here.
 *
 * Members (atm_*_wasm of kernels_layers.h): layernorm forward/backward,
 * cross-entropy forward/backward, the vector exp, the attention row
 * selection and forward, the SSM scans, the depthwise conv and the router
 * mixing. The set's softmax is atm_softmax_ref (KX_LIBM_SOFTMAX), so the
 * attention and router weights are the reference's bits, libm's expf
 * reproduced on 4 lanes (kx_expf4); every other pathway primitive is
 * bit-identical to its reference as on x86. Attention backward stays the
 * reference (KX_NO_ATTN_BACKWARD): a 4-lane port of the x86 kernel and two
 * wasm versions (one pass per row; all dots, then the axpys) measured no
 * faster than clang's vectorisation of it in this build. Column tails use
 * lane loads/stores (no reads or writes outside the buffers). Tests:
 * tests/node/wasm-layers.test.mjs, tests/node/fingerprints.test.mjs. */
#if defined(__wasm_simd128__)
#include <math.h>
#include <stddef.h>
#include "kernels_wasm_lanes.h"
#include "../atome_layers.h"
#include "../kernels_layers.h"

#include "kernels_x86_layers_tmpl.h"
#include "kernels_x86_atome_tmpl.h"

#else
/* ISO C wants at least one declaration in a translation unit. */
typedef int atm_kernels_layers_wasm_unused;
#endif
