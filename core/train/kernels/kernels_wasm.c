/* core/train/kernels/kernels_wasm.c — wasm SIMD128 matmul kernels (wasm -msimd128 only):
 * the third instance of the matmul template kernels_x86_tmpl.h, with the
 * 4-lane macros and tile shapes of kernels_wasm_lanes.h.
 *
 * Contract: atm_matmul_forward_wasm / atm_matmul_backward_wasm compute what
 * atm_matmul_forward_ref / atm_matmul_backward_ref (layers.c) compute, with
 * the conventions of layers.h and kernels.h (forward overwrites out, backward
 * ADDS into dinp and dw, NULL skips a gradient, any N, IC, OC >= 0), up to
 * float rounding: the summation order differs from the reference. wasm has
 * no fused multiply-add, so every step is a rounded multiply then a rounded
 * add. The order depends only on (N, IC, OC), never on pointer alignment,
 * so a call is deterministic. Nothing is read or written outside the
 * caller's buffers: column tails use lane loads and lane stores
 * (wasm_lanes.h) instead of the masked loads wasm lacks.
 *
 * Algorithm (kernels_x86_tmpl.h): every product is C[rows][cols] (+)=
 * A[rows][k] . B[k][cols], A read by scalar broadcast, B read as rows of
 * vectors; the forward packs w^T per panel, dinp and dw read w and inp in
 * place. A forward of at most 4 rows (token-by-token generation) takes dot
 * products of contiguous rows instead of packing w. Tile shapes and why:
 * kernels_wasm_lanes.h.
 *
 * Peak. The kernels reach ~26-31 GFLOP/s on the project's VM. A
 * register-only loop of six independent a += x * y (no loads; y changed by
 * an opaque xor every round so the products cannot be hoisted:
 * atome_bench_muladd, printed by `node tools/bench/bench-wasm-train.mjs
 * --matmul`) runs at ~31-35 GFLOP/s there, so the tiles, which also load
 * their operands, are at ~85-90% of it. Timings on the VM drift by up to 2x
 * with the load of other guests; compare builds interleaved in one process.
 * Tests: tests/node/wasm-kernels.test.mjs. */
#if defined(__wasm_simd128__)
#include <stddef.h>
#include "kernels_wasm_lanes.h"
#include "../kernels.h"

#include "kernels_x86_tmpl.h"

#else
/* ISO C wants at least one declaration in a translation unit. */
typedef int atm_kernels_wasm_unused;
#endif
