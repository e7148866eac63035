/* core/engine.h — the integer inference engine of the atome family
 * (freestanding C99: no malloc, no stdio, no libm, no float arithmetic).
 *
 * Contract.
 *  - Weights are read in place from an opened container (core/container.h),
 *    byte by byte, so the model may live in flash/ROM at any address.
 *  - All mutable state lives in a caller-provided arena whose size is asked
 *    first: atm_engine_arena_bytes(model, window). The arena must be 4-byte
 *    aligned; the engine never touches memory outside it and the blob.
 *    The atm_engine struct itself (pointers and counters) is separate.
 *  - Streaming: atm_engine_step() feeds one byte and returns the logits that
 *    predict the next byte. Per layer the engine keeps the normalised inputs
 *    of the last K-1 positions (conv ring), the SSM state (never reset) and
 *    the keys/values of the last W positions, the current one included; when
 *    the text outgrows W the oldest position is dropped (same rule as the
 *    float gen_step of core/train/atome.c). Work per byte is constant for the
 *    conv and the SSM and proportional to min(positions, W) for attention.
 *  - Every operation is integer with documented rounding and saturation
 *    (docs/fixed-point.md), so a given model, byte sequence and window give
 *    the same logits bit for bit on every target.
 *  - Logits are int32 in Q16 (ATM_LOGIT_FRAC): logit = value / 65536, clamped
 *    to +-2^30. The returned pointer stays valid until the next step/reset.
 *
 * Arena layout (docs/fixed-point.md, "arena"), for d = d_model, L layers,
 * W window, dh = d_head, K = kernel, V = vocab:
 *   int32 x[d], ssm[L][d], wide[max(V, d, dh, d + 2 top_k, 3 top_k)] (logits;
 *   scratch during the layers; its last 2 top_k words are sel_s[top_k],
 *   sel_i[top_k] in attention), router[4];
 *   int16 u[d], q[dh];
 *   int8  kc[L][W][dh], vc[L][W][d], ring[L][K-1][d];
 *   uint8 kexp[L][W], vexp[L][W], ringexp[L][K-1]  (per-row exponents). */
#ifndef ATOME_ENGINE_H
#define ATOME_ENGINE_H
#include <stddef.h>
#include <stdint.h>
#include "container.h"

#define ATM_LOGIT_FRAC 16

/* Kernel sets. They compute the same integers (exact sums), so the choice
 * changes speed only; AUTO picks the fastest this build, this CPU and the
 * model allow: AVX-512 (with VNNI), AVX2 or SSE2 on x86-64 (chosen at run
 * time, docs/fixed-point.md), the wasm SIMD128 row kernel in a wasm build
 * with SIMD, the pair-sum table on Cortex-M3/M4 and wasm without SIMD,
 * portable on Cortex-M0. */
enum { ATM_KERNEL_AUTO = 0, ATM_KERNEL_PORTABLE = 1, ATM_KERNEL_LUT = 2, ATM_KERNEL_SSE2 = 3,
       ATM_KERNEL_AVX2 = 4, ATM_KERNEL_AVX512 = 5, ATM_KERNEL_WASM = 6, ATM_KERNEL_PLANES = 7 };

typedef struct {
    const atm_model *m;
    int32_t  window;
    int32_t  kernel;   /* ATM_KERNEL_*, AUTO after init */
    int32_t *x;        /* [d] residual stream, Q(fx) */
    int32_t *ssm;      /* [L][d] SSM state, Q(FS of the layer) */
    int32_t *wide;     /* [max(V, d, dh, d + 2 top_k, 3 top_k)] logits (Q16) after a step; scratch inside it */
    int32_t *sel_s;    /* [top_k] selected attention scores, Q16 (in wide's tail, live only in attention) */
    int32_t *sel_i;    /* [top_k] their cache slots (after sel_s) */
    int32_t *rw;       /* [4] router logits, then weights (Q15) */
    int16_t *u;        /* [d] LayerNorm output, Q(FU of that LN) */
    int16_t *q;        /* [dh] query, scaled by 2^-qexp */
    int8_t  *kc;       /* [L][W][dh] keys */
    int8_t  *vc;       /* [L][W][d] values */
    uint8_t *kexp;     /* [L][W] key row exponents */
    uint8_t *vexp;     /* [L][W] value row exponents */
    int8_t  *ring;     /* [L][K-1][d] past LayerNorm outputs */
    uint8_t *ringexp;  /* [L][K-1] their row exponents */
    uint32_t kv_next, kv_count;      /* next cache slot; cached positions (<= W) */
    uint32_t ring_next, ring_count;  /* next ring slot; remembered positions (<= K-1) */
    uint32_t pos_lo, pos_hi;         /* bytes fed since init/reset (64-bit counter) */
    int32_t *tab;      /* optional table RAM of the byte-table kernel (atm_engine_set_tables), NULL none */
    const uint8_t *ox; /* the model's offset stream (atm_engine_set_offsets), NULL none */
} atm_engine;

/* Arena bytes for a model and window (window 0 = the model's default);
 * 0 if the window is outside 1..65535 or m is NULL. */
size_t atm_engine_arena_bytes(const atm_model *m, int window);

/* Lays the state out in arena[arena_len] and resets it. window 0 = model
 * default. ATM_OK, ATM_E_ARG, ATM_E_WINDOW or ATM_E_ARENA. The model (and
 * its blob) must outlive the engine. */
atm_status atm_engine_init(atm_engine *e, const atm_model *m, int window,
                           void *arena, size_t arena_len);

/* Forces a kernel set (tests, benchmarks): 0, or -1 if this build or this
 * CPU does not have it. A kernel that does not fit the model (its width)
 * falls back to portable. */
int atm_engine_set_kernel(atm_engine *e, int kernel);

/* The kernel set a step of e actually runs (never AUTO): what AUTO or the
 * forced kernel resolves to for e's model on this CPU. */
int atm_engine_kernel(const atm_engine *e);



/* Optional RAM for the byte-table row kernel (Cortex-M3 / M4 and the
 * pair-sum table builds: per LayerNorm output, a table of 256 sums per
 * group of 4 columns, so a row byte costs one load and one add).
 * atm_engine_tables_bytes gives the bytes it needs (256 d, plus L K d where
 * the model has a conv pathway: its trits, decoded once by set_tables and
 * read by every step instead of decoding them again), 0 where this
 * build has no such kernel or the model's width does not suit it. With
 * tables set, a step whose kernel resolves to the pair-sum table or the
 * bit-plane kernel runs the byte tables instead: the same integers, the
 * same logits. buf (4-byte aligned, len >= atm_engine_tables_bytes) must
 * outlive the engine; 0, or -1 (nothing changed) if it does not suit;
 * atm_engine_set_tables(e, NULL, 0) goes back to none. Not part of the
 * arena (whose size stays as atm_engine_arena_bytes says). */
size_t atm_engine_tables_bytes(const atm_model *m);
int atm_engine_set_tables(atm_engine *e, void *buf, size_t len);

/* The bit-plane kernel's offset stream: for every byte v at offset i of
 * the model file, the two table offsets that kernel looks up for v (PL0[v]
 * and PL1[v], core/engine_ref.c) plus 64 (i % 4), two bytes per model byte. A
 * board that keeps it in flash beside the model (the micro:bit's firmware
 * image, fwimage/fwimage.c) runs a row byte as two loads and two adds fewer
 * per byte than from the model's bytes alone: the same integers, the same
 * logits. atm_engine_offsets_make writes the 2 n bytes of model[n];
 * atm_engine_set_offsets checks every byte of o[len] against e's model
 * (len = 2 x the model's size, the blob 4-byte aligned) and keeps it
 * (it must outlive the engine): 0, or -1 (nothing changed) if it does not
 * match or this build has no bit-plane kernel; (e, NULL, 0) goes back to
 * none. Only a step whose kernel resolves to the bit-plane kernel uses it,
 * and only for matrices whose rows all start 4-aligned in the file (a
 * multiple of 16 columns). */
size_t atm_engine_offsets_bytes(size_t model_len);
void atm_engine_offsets_make(const uint8_t *model, size_t n, uint8_t *out);
int atm_engine_set_offsets(atm_engine *e, const uint8_t *o, size_t len);

/* Forgets every position (fresh conv ring, SSM state, caches). */
void atm_engine_reset(atm_engine *e);

/* Feeds one byte (values outside 0..V-1 are fed as 0, as the float model
 * does) and returns the V logits (Q16) predicting the next byte. NULL only
 * if e is NULL or not initialised. */
const int32_t *atm_engine_step(atm_engine *e, int byte);

/* atm_engine_step with a router trace ("why this byte"): also writes the
 * router weights of each layer into trace[L][3], Q15 (value / 32768), in
 * the order conv, ssm, attn; a pathway the model does not have gets 0. They
 * are the very weights this step mixed with. trace NULL = atm_engine_step.
 * The logits and the state are the same bits as atm_engine_step's. */
const int32_t *atm_engine_step_traced(atm_engine *e, int byte, int32_t *trace);

/* atm_engine_step, then greedy sampling: returns the byte atm_sampler_next
 * picks at temperature 0 from the logits atm_engine_step would return (the
 * first of their maximum), and leaves the same state; -1 if e is NULL or not
 * initialised. Faster: the logits' scale is monotone, so only the raw head
 * values that set a new maximum are scaled. The logits themselves are not
 * available afterwards. */
int atm_engine_step_argmax(atm_engine *e, int byte);

/* Feeds one byte without computing the logits (a prompt byte whose
 * prediction nobody reads): the same state as atm_engine_step; 0, or -1 if
 * e is NULL or not initialised. */
int atm_engine_feed(atm_engine *e, int byte);

#endif
