/* core/engine_wasm.c — wasm SIMD128 kernel of the integer engine: the
 * ternary matrix-vector product (ATM_KERNEL_WASM). Contract in
 * engine_kernels.h: atm_ek_matvec_wasm returns exactly what its plain-C twin
 * atm_ek_matvec_ref returns, for every rows and every cols % 4 == 0 up to
 * ATM_MAX_D. Compiled to code only where the compiler targets wasm SIMD128
 * (__wasm_simd128__: the atome.wasm build); everywhere else (native hosts,
 * Cortex-M, atome-scalar.wasm) it is an empty translation unit. Freestanding
 * like the rest of core/: no library calls, integers only.
 *
 * Rows (ATOME01, 4 trits per byte, first trit in the low bits) are read 64
 * columns (16 bytes) at a time as eight int16 lanes: lane k holds bytes
 * 2k and 2k + 1, i.e. the 2-bit codes of columns 8k .. 8k + 7, column 8k + q
 * in bits 2q, 2q + 1. Shifting the lane left by 14 - 2q and then right
 * arithmetically by 14 leaves that code sign-extended: 00 -> 0, 01 -> +1,
 * 11 -> -1 (and the never-occurring 10 -> -2, which engine_kernels.h allows
 * to be anything). So one chunk gives eight int16 trit vectors with two
 * shifts each, no masks or tables, and i32x4.dot_i16x8_s multiplies them
 * with the activations prepared in the same order (atm_ek_prep_wasm:
 * xd[64 g + 8 q + k] = x[64 g + 8 k + q]). Four rows share each activation
 * load. Exactness: every product is t * x with |t| <= 2 and |x| <= 32768, a
 * dot lane adds two of them, and the int32 lanes add with wraparound, which
 * is addition mod 2^32; the reference's sum fits int32 (|sum| <= 1024 *
 * 32768), so the lanes' total is that sum bit for bit in any order.
 *
 * A row's last partial chunk (nb % 16 = tb bytes, nb = cols / 4) is read as
 * the 16 bytes that END at the row's last byte, then moved down by 16 - tb
 * with a swizzle whose out-of-range indices give zero bytes (code 0) in the
 * missing positions: no read past the row. Where fewer than 16 matrix bytes
 * precede that end (the first row(s) of a matrix narrower than 64 columns)
 * the tail bytes are copied into a zeroed block instead, so nothing before
 * the matrix is read either. xd is zero past cols. */
#include "engine.h"
#include "engine_kernels.h"

#ifdef ATM_EK_WASM
#include <wasm_simd128.h>

void atm_ek_prep_wasm(const int16_t *x, uint32_t cols, atm_ek_wvec *v) {
    const uint32_t full = cols & ~63u;
    for (uint32_t g = 0; g < full; g += 64) {
        /* transpose of the 8 x 8 block of int16: xd row q = column q of x's rows */
        v128_t r[8], s[8], t[8];
        for (int k = 0; k < 8; k++) r[k] = wasm_v128_load(x + g + 8 * k);
        for (int k = 0; k < 4; k++) {
            s[2 * k] = wasm_i16x8_shuffle(r[2 * k], r[2 * k + 1], 0, 8, 1, 9, 2, 10, 3, 11);
            s[2 * k + 1] = wasm_i16x8_shuffle(r[2 * k], r[2 * k + 1], 4, 12, 5, 13, 6, 14, 7, 15);
        }
        /* s[2j] = a0 b0 a1 b1 a2 b2 a3 b3 (rows 2j, 2j+1, cols 0..3); s[2j+1] cols 4..7 */
        for (int h = 0; h < 2; h++)
            for (int j = 0; j < 2; j++) {
                const v128_t a = s[4 * j + h], b = s[4 * j + 2 + h];
                t[4 * h + 2 * j] = wasm_i32x4_shuffle(a, b, 0, 4, 1, 5);
                t[4 * h + 2 * j + 1] = wasm_i32x4_shuffle(a, b, 2, 6, 3, 7);
            }
        /* t[4h + 2j + m]: cols 4h + 2m, 4h + 2m + 1 of rows 4j .. 4j + 3 */
        for (int h = 0; h < 2; h++)
            for (int m = 0; m < 2; m++) {
                const v128_t a = t[4 * h + m], b = t[4 * h + 2 + m];
                wasm_v128_store(v->xd + g + 8 * (4 * h + 2 * m), wasm_i64x2_shuffle(a, b, 0, 2));
                wasm_v128_store(v->xd + g + 8 * (4 * h + 2 * m + 1), wasm_i64x2_shuffle(a, b, 1, 3));
            }
    }
    if (full < cols) {
        int16_t *o = v->xd + full;
        for (int i = 0; i < 64; i++) o[i] = 0;
        for (uint32_t c = full; c < cols; c++) o[8 * ((c - full) & 7u) + ((c - full) >> 3)] = x[c];
    }
}

/* acc += the dot of one 16-byte chunk w (int16 view) with xd[0 .. 64) */
#define TRIT(w, q) wasm_i16x8_shr(wasm_i16x8_shl((w), 14 - 2 * (q)), 14)
static inline v128_t chunk1(v128_t w, const int16_t *xd, v128_t acc) {
    v128_t a = wasm_i32x4_dot_i16x8(TRIT(w, 0), wasm_v128_load(xd));
    a = wasm_i32x4_add(a, wasm_i32x4_dot_i16x8(TRIT(w, 1), wasm_v128_load(xd + 8)));
    a = wasm_i32x4_add(a, wasm_i32x4_dot_i16x8(TRIT(w, 2), wasm_v128_load(xd + 16)));
    a = wasm_i32x4_add(a, wasm_i32x4_dot_i16x8(TRIT(w, 3), wasm_v128_load(xd + 24)));
    a = wasm_i32x4_add(a, wasm_i32x4_dot_i16x8(TRIT(w, 4), wasm_v128_load(xd + 32)));
    a = wasm_i32x4_add(a, wasm_i32x4_dot_i16x8(TRIT(w, 5), wasm_v128_load(xd + 40)));
    a = wasm_i32x4_add(a, wasm_i32x4_dot_i16x8(TRIT(w, 6), wasm_v128_load(xd + 48)));
    a = wasm_i32x4_add(a, wasm_i32x4_dot_i16x8(wasm_i16x8_shr(w, 14), wasm_v128_load(xd + 56)));
    return wasm_i32x4_add(acc, a);
}

/* four rows: each activation vector is loaded once for all of them */
static inline void chunk4(v128_t w0, v128_t w1, v128_t w2, v128_t w3, const int16_t *xd, v128_t *acc) {
#define STEP(q, t0, t1, t2, t3)                                                  \
    do {                                                                          \
        const v128_t xq = wasm_v128_load(xd + 8 * (q));                           \
        acc[0] = wasm_i32x4_add(acc[0], wasm_i32x4_dot_i16x8(t0, xq));            \
        acc[1] = wasm_i32x4_add(acc[1], wasm_i32x4_dot_i16x8(t1, xq));            \
        acc[2] = wasm_i32x4_add(acc[2], wasm_i32x4_dot_i16x8(t2, xq));            \
        acc[3] = wasm_i32x4_add(acc[3], wasm_i32x4_dot_i16x8(t3, xq));            \
    } while (0)
    STEP(0, TRIT(w0, 0), TRIT(w1, 0), TRIT(w2, 0), TRIT(w3, 0));
    STEP(1, TRIT(w0, 1), TRIT(w1, 1), TRIT(w2, 1), TRIT(w3, 1));
    STEP(2, TRIT(w0, 2), TRIT(w1, 2), TRIT(w2, 2), TRIT(w3, 2));
    STEP(3, TRIT(w0, 3), TRIT(w1, 3), TRIT(w2, 3), TRIT(w3, 3));
    STEP(4, TRIT(w0, 4), TRIT(w1, 4), TRIT(w2, 4), TRIT(w3, 4));
    STEP(5, TRIT(w0, 5), TRIT(w1, 5), TRIT(w2, 5), TRIT(w3, 5));
    STEP(6, TRIT(w0, 6), TRIT(w1, 6), TRIT(w2, 6), TRIT(w3, 6));
    STEP(7, wasm_i16x8_shr(w0, 14), wasm_i16x8_shr(w1, 14), wasm_i16x8_shr(w2, 14), wasm_i16x8_shr(w3, 14));
#undef STEP
}

/* The tb = nb % 16 (1..15) last bytes of the row at b + off (off = its
 * offset in the matrix) in the low bytes, zeros above; sel = the swizzle
 * indices j + 16 - tb for j < tb, 0x80 (-> 0) above. */
static inline v128_t tail(const uint8_t *b, uint32_t off, uint32_t nb, uint32_t tb, v128_t sel) {
    const uint32_t end = off + nb;
    if (end >= 16) return wasm_i8x16_swizzle(wasm_v128_load(b + end - 16), sel);
    uint8_t z[16];
    for (int j = 0; j < 16; j++) z[j] = 0;
    for (uint32_t j = 0; j < tb; j++) z[j] = b[end - tb + j];
    return wasm_v128_load(z);
}

static inline int32_t hsum(v128_t a) {
    a = wasm_i32x4_add(a, wasm_i32x4_shuffle(a, a, 2, 3, 0, 1));
    a = wasm_i32x4_add(a, wasm_i32x4_shuffle(a, a, 1, 0, 3, 2));
    return wasm_i32x4_extract_lane(a, 0);
}

void atm_ek_matvec_wasm(const uint8_t *b, uint32_t rows, uint32_t cols, const atm_ek_wvec *v, int32_t *out) {
    const uint32_t nb = cols / 4, nfull = nb / 16, tb = nb % 16;
    const int16_t *xt = v->xd + 64 * nfull;
    uint8_t si[16];
    for (uint32_t j = 0; j < 16; j++) si[j] = (uint8_t)(j < tb ? j + 16 - tb : 0x80u);
    const v128_t sel = wasm_v128_load(si);
    uint32_t r = 0;
    for (; r + 4 <= rows; r += 4) {
        const uint32_t off = r * nb;
        const uint8_t *p = b + off;
        v128_t acc[4] = { wasm_i32x4_splat(0), wasm_i32x4_splat(0), wasm_i32x4_splat(0), wasm_i32x4_splat(0) };
        for (uint32_t k = 0; k < nfull; k++)
            chunk4(wasm_v128_load(p + 16 * k), wasm_v128_load(p + nb + 16 * k), wasm_v128_load(p + 2 * nb + 16 * k),
                   wasm_v128_load(p + 3 * nb + 16 * k), v->xd + 64 * k, acc);
        if (tb)
            chunk4(tail(b, off, nb, tb, sel), tail(b, off + nb, nb, tb, sel), tail(b, off + 2 * nb, nb, tb, sel),
                   tail(b, off + 3 * nb, nb, tb, sel), xt, acc);
        /* transpose-add: lane i of the result = the sum of acc[i] */
        const v128_t a01 = wasm_i32x4_add(wasm_i32x4_shuffle(acc[0], acc[1], 0, 4, 1, 5),
                                          wasm_i32x4_shuffle(acc[0], acc[1], 2, 6, 3, 7));
        const v128_t a23 = wasm_i32x4_add(wasm_i32x4_shuffle(acc[2], acc[3], 0, 4, 1, 5),
                                          wasm_i32x4_shuffle(acc[2], acc[3], 2, 6, 3, 7));
        wasm_v128_store(out + r, wasm_i32x4_add(wasm_i64x2_shuffle(a01, a23, 0, 2), wasm_i64x2_shuffle(a01, a23, 1, 3)));
    }
    for (; r < rows; r++) {
        const uint32_t off = r * nb;
        v128_t acc = wasm_i32x4_splat(0);
        for (uint32_t k = 0; k < nfull; k++) acc = chunk1(wasm_v128_load(b + off + 16 * k), v->xd + 64 * k, acc);
        if (tb) acc = chunk1(tail(b, off, nb, tb, sel), xt, acc);
        out[r] = hsum(acc);
    }
}

#else
typedef int atm_engine_wasm_empty;   /* ISO C: a translation unit is not empty */
#endif
