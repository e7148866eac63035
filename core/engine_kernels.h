/* core/engine_kernels.h — internal interface between the integer engine
 * (core/engine.c) and its instruction-set specific kernels
 * (core/engine_x86.c). Not a public header: front ends use engine.h.
 *
 * Contract. Every kernel computes exactly the integers its plain-C twin
 * computes (the twins are the atm_ek_*_ref functions below, defined in
 * engine.c and used by the engine itself on every target), for every length,
 * odd ones included: the choice of kernel changes speed, never a bit of the
 * logits. tests/test_engine_kernels.c compares each kernel with its twin on
 * random inputs, extreme values and odd lengths.
 *
 * Trit rows are ATOME01 bytes (docs/format.md: 4 trits per byte, codes
 * 00 = 0, 01 = +1, 11 = -1, first trit in the low bits) whose column count
 * is a multiple of 4, so every row starts on a byte; ATOME02 payloads reach
 * the kernels re-encoded as ATOME01 (engine.c, t5_to_t2). Code 10 never
 * occurs (the container reader rejects it); the kernels may treat it as any
 * value. */
#ifndef ATOME_ENGINE_KERNELS_H
#define ATOME_ENGINE_KERNELS_H
#include <stdint.h>
#include "container.h"

/* ---- plain-C twins (engine.c) ---- */

/* out[r] = sum_c trit(b, r * cols + c) * x[c], rows x cols, cols % 4 == 0. */
void atm_ek_matvec_ref(const uint8_t *b, uint32_t rows, uint32_t cols, const int16_t *x, int32_t *out);

/* out[j] = sum_i q[i] * k[j * dh + i] for j < n (int8 keys, int16 query). */
void atm_ek_dots_ref(const int16_t *q, const int8_t *k, int dh, int n, int32_t *out);

/* out[c] = sum_{i < n} w[i] * rows[i][c] for c < d (int8 rows, int32
 * weights with |w| <= 2^15 and sum |w| <= 2^15, so |out| < 2^22). */
void atm_ek_mix_ref(const int32_t *w, const int8_t *const *rows, int n, int d, int32_t *out);

#if defined(__x86_64__) && !defined(ATM_ENGINE_PORTABLE)
#define ATM_EK_X86 1

/* A matvec input prepared once per vector for the x86 kernels. Columns are
 * grouped in chunks of 64; within chunk g, entry 64 g + 16 p + i holds
 * column 64 g + 4 i + p (the p-th trit of row byte 16 g + i), and entries
 * past cols are 0.
 *   xd   int16 value (AVX2)
 *   lo   its low byte, unsigned; hi its high byte, signed: x = 256 hi + lo
 *        (AVX-512 VNNI: vpdpbusd multiplies unsigned by signed bytes)
 *   hsum sum of hi over the columns */
typedef struct {
    int16_t xd[ATM_MAX_D];
    uint8_t lo[ATM_MAX_D];
    int8_t  hi[ATM_MAX_D];
    int32_t hsum;
} atm_ek_vec;

/* Which x86 kernel sets this CPU runs (ATM_KERNEL_AVX2 / ATM_KERNEL_AVX512
 * of engine.h): 1 or 0. */
int atm_ek_x86_supported(int kernel);

/* Fills v from x[cols] (cols <= ATM_MAX_D) for the AVX2 / AVX-512 kernels. */
void atm_ek_prep_avx2(const int16_t *x, uint32_t cols, atm_ek_vec *v);
void atm_ek_prep_avx512(const int16_t *x, uint32_t cols, atm_ek_vec *v);

/* atm_ek_matvec_ref with the prepared input (cols % 4 == 0, cols <= ATM_MAX_D). */
void atm_ek_matvec_avx2(const uint8_t *b, uint32_t rows, uint32_t cols, const atm_ek_vec *v, int32_t *out);
void atm_ek_matvec_avx512(const uint8_t *b, uint32_t rows, uint32_t cols, const atm_ek_vec *v, int32_t *out);

/* atm_ek_dots_ref / atm_ek_mix_ref (AVX2; the AVX-512 set uses them too). */
void atm_ek_dots_avx2(const int16_t *q, const int8_t *k, int dh, int n, int32_t *out);
void atm_ek_mix_avx2(const int32_t *w, const int8_t *const *rows, int n, int d, int32_t *out);
#endif

#endif
