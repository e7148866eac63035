/* core/engine_select.c — which kernels a step of the integer engine runs:
 * the kernel sets (engine_select.h's atm_kset, the one dispatch table), the
 * choice among them (the forced kernel, else the best this build and CPU
 * have that fits the model), the preparation of a product's input for its
 * row kernel and the ternary products themselves (atm_matvec), the byte
 * tables and the bit-plane offset stream (engine.h). The model's step is in
 * core/engine.c; the plain-C kernels in core/engine_ref.c; the instruction-
 * set kernels in core/engine_x86.c, engine_wasm.c, engine_m0.c / .S,
 * engine_m3.c / .S and engine_arm.S. All bit-identical (docs/fixed-point.md
 * §9). Freestanding: integers only.
 *
 * Compiled as part of core/engine.c, which includes this file at its end:
 * the build recipe that `atome header` publishes with atome_model.c
 * (fwimage/fwimage.c) names the engine's sources, engine.c among them and
 * this file not. On its own (a build of every .c file of core/) it compiles to
 * nothing. */
#ifdef ATM_ENGINE_SELECT_IN_ENGINE_C
#include "engine_select.h"
#include "fixmath.h"

#define CH ATM_EK_CH
#define PLANE_COLS ATM_PLANE_COLS

/* 52 groups = 260 bytes = 1040 trits: one row of the widest model (1024
 * columns) plus the up to 16 trits the block start lies before its row;
 * 820 groups (4,100 bytes of stack) on x86, where fewer and longer kernel
 * calls pay */
#ifdef ATM_EK_X86
#define RECODE_GROUPS 820
#else
#define RECODE_GROUPS 52
#endif

/* ---- kernels with a board version (the plain C twins in engine_ref.c) ---- */

/* The byte-table kernel (engine_kernels.h): per group of 4 columns, the
 * dots of the 81 valid ATOME01 bytes, 9 pair sums of the low two columns
 * (codes c0 | c1 << 2) plus 9 of the high two (shifted by 4 bits); a row
 * byte then costs one table load and one add. */
#if defined(ATM_M3_ASM) && (defined(__ARM_ARCH_7M__) || defined(__ARM_ARCH_7EM__))
#define LUT8_BUILD_ASM 1
#endif
void atm_ek_lut8_build(const int16_t *x, uint32_t cols, int32_t *t) {
#ifdef LUT8_BUILD_ASM
    if (cols >= 4) { atm_ek_lut8_build_m3(x, cols & ~3u, t); return; }
#endif
    atm_ek_lut8_build_ref(x, cols, t);
}

#if defined(__ARM_ARCH_6M__) && defined(ATM_M0_ASM)
/* Cortex-M0 / M0+: core/engine_m0.S, the bit-plane kernel in Thumb-1 (the
 * boards' builds define ATM_M0_ASM and assemble it) */
#define PLANES_ROWS_ASM 1
void atm_ek_planes_rows_m0(const uint8_t *b, uint32_t stride, uint32_t rows, uint32_t nbytes,
                           const int32_t *tab, int32_t *out, int add);
void atm_ek_planes_build_m0(const int16_t *x, uint32_t cols, int32_t *tab);
void atm_ek_planes_pairs16_m0(const uint8_t *b, uint32_t pairs, uint32_t nbytes, const int32_t *tab,
                              int32_t *out, int add);
void atm_ek_planes_pairso_m0(const uint8_t *o, uint32_t stride, uint32_t pairs, uint32_t nbytes,
                             const int32_t *tab, int32_t *out, int add);
#endif

void atm_ek_planes_build(const int16_t *x, uint32_t cols, int32_t *tab) {
#ifdef PLANES_ROWS_ASM
    if (cols >= 4 && ((uintptr_t)x & 3u) == 0) { atm_ek_planes_build_m0(x, cols & ~3u, tab); return; }
#endif
    atm_ek_planes_build_ref(x, cols, tab);
}

void atm_ek_planes_rows(const uint8_t *b, uint32_t stride, uint32_t rows, uint32_t nbytes,
                        const int32_t *tab, int32_t *out, int add) {
#ifdef PLANES_ROWS_ASM
    if (rows > 0 && nbytes > 0 && nbytes % 4u == 0) {
        if (stride == 16 && nbytes <= 16 && rows >= 2) {        /* 64-column rows: two at a time */
            const uint32_t pairs = rows / 2;
            atm_ek_planes_pairs16_m0(b, pairs, nbytes, tab, out, add);
            if ((rows & 1u) == 0) return;
            b += 32 * pairs; out += 2 * pairs; rows = 1;
        }
        atm_ek_planes_rows_m0(b, stride, rows, nbytes, tab, out, add);
        return;
    }
#endif
    atm_ek_planes_rows_ref(b, stride, rows, nbytes, tab, out, add);
}

/* b: the same rows' model bytes (the Thumb-1 path runs an odd last row and
 * the chunks its pair loop does not take from them) */
void atm_ek_planes_rows_ox(const uint8_t *b, const uint8_t *o, uint32_t stride, uint32_t rows, uint32_t nbytes,
                           const int32_t *tab, int32_t *out, int add) {
#ifdef PLANES_ROWS_ASM
    if (stride & 3u) {   /* rows not all 4-aligned: the stream's 64 (i % 4) is not 64 (j % 4) */
        atm_ek_planes_rows(b, stride, rows, nbytes, tab, out, add);
        return;
    }
    /* Thumb-1: row pairs from the stream, an odd last row from the model's
     * bytes; chunks the pair loop does not take, from the model's bytes */
    if ((nbytes == 4 || nbytes == 8 || nbytes == 16) && stride <= 63 && rows >= 2) {
        const uint32_t pairs = rows / 2;
        atm_ek_planes_pairso_m0(o, stride, pairs, nbytes, tab, out, add);
        if ((rows & 1u) == 0) return;
        atm_ek_planes_rows_m0(b + 2 * pairs * stride, stride, 1, nbytes, tab, out + 2 * pairs, add);
        return;
    }
    atm_ek_planes_rows(b, stride, rows, nbytes, tab, out, add);
#else
    atm_ek_planes_rows_ox_ref(b, o, stride, rows, nbytes, tab, out, add);
#endif
}

/* ---- the row kernels (engine_select.h: rows) ---- */

#ifdef ATM_T2_SIMD
static void rk_sse2(const uint8_t *b, uint32_t rows, uint32_t cols, atm_vin *in, int32_t *out) {
    atm_ek_matvec_sse2(b, rows, cols, in->xd, out);
}
#endif
#ifdef ATM_EK_X86
static void rk_avx2(const uint8_t *b, uint32_t rows, uint32_t cols, atm_vin *in, int32_t *out) {
    atm_ek_matvec_avx2(b, rows, cols, &in->xv, out);
}
static void rk_avx512(const uint8_t *b, uint32_t rows, uint32_t cols, atm_vin *in, int32_t *out) {
    atm_ek_matvec_avx512(b, rows, cols, &in->xv, out);
}
#endif
#ifdef ATM_EK_WASM
static void rk_wasm(const uint8_t *b, uint32_t rows, uint32_t cols, atm_vin *in, int32_t *out) {
    atm_ek_matvec_wasm(b, rows, cols, &in->wv, out);
}
#endif
#ifdef ATM_T2_LUT
#if defined(ATM_M3_ASM) && (defined(__ARM_ARCH_7M__) || defined(__ARM_ARCH_7EM__))
/* core/engine_m3.S: four rows at a time in Thumb-2 (rows of a multiple of 16 columns) */
#define LUT_ROWS4_ASM 1
#endif
/* the pair-sum table: four rows at a time in Thumb-2 on the M3, the twin for the rest */
static void rk_lut(const uint8_t *b, uint32_t rows, uint32_t cols, atm_vin *in, int32_t *out) {
    const uint32_t nb = cols / 4;
    uint32_t r = 0;
#ifdef LUT_ROWS4_ASM
    if (nb % 4u == 0 && nb > 0 && rows >= 4) {
        r = rows & ~3u;
        atm_ek_lut_rows4_m3(b, nb, rows / 4, in->lut, out);
    }
#endif
    atm_ek_lut_rows(b + (size_t)r * nb, nb, rows - r, in->lut, out + r);
}
#endif

#ifdef ATM_T2_LUT
#if defined(ATM_M3_ASM) && (defined(__ARM_ARCH_7M__) || defined(__ARM_ARCH_7EM__))
#define LUT8_ROWS4_ASM 1
#endif
/* the byte tables: four rows at a time in Thumb-2 on the M3, the twin for the rest */
static void rk_lut8(const uint8_t *b, uint32_t rows, uint32_t cols, atm_vin *in, int32_t *out) {
    const uint32_t nb = cols / 4;
    uint32_t r = 0;
#ifdef LUT8_ROWS4_ASM
    if (nb > 0 && rows >= 4) {
        r = rows & ~3u;
        atm_ek_lut8_rows4_m3(b, nb, rows / 4, in->t8, out);
    }
#endif
    atm_ek_lut8_rows(b + (size_t)r * nb, nb, rows - r, nb, in->t8, out + r);
}
#endif

/* ---- the bit-plane kernel's offset stream (engine.h) ---- */

size_t atm_engine_offsets_bytes(size_t model_len) { return 2 * model_len; }

/* the stream's byte 2 i + plane: model byte i's table offset in that bit plane */
static uint8_t ox_byte(const uint8_t *model, size_t i, int plane) {
    return (uint8_t)(atm_ek_pl[256 * plane + model[i]] + 64 * (i & 3u));
}

void atm_engine_offsets_make(const uint8_t *model, size_t n, uint8_t *out) {
    for (size_t i = 0; i < 2 * n; i++) out[i] = ox_byte(model, i / 2, (int)(i & 1u));
}

int atm_engine_set_offsets(atm_engine *e, const uint8_t *o, size_t len) {
    if (!e || !e->m) return -1;
    if (!o) { e->ox = 0; return 0; }
#ifdef ATM_PLANES
    const uint8_t *m = e->m->blob;
    const size_t n = e->m->size;
    if (len != atm_engine_offsets_bytes(n) || ((uintptr_t)m & 3u) != 0) return -1;
    for (size_t i = 0; i < 2 * n; i++)
        if (o[i] != ox_byte(m, i / 2, (int)(i & 1u))) return -1;
    e->ox = o;
    return 0;
#else
    (void)len;
    return -1;
#endif
}

/* ---- preparing an input for its row kernel ---- */

#ifdef ATM_T2_SIMD
static void prep_sse2(atm_vin *in, const int16_t *x, uint32_t d, int32_t *tab) {
    (void)tab;
    for (uint32_t k = 0; k < d; k += 64)
        for (int p = 0; p < 4; p++)
            for (int i = 0; i < 16; i++) in->xd[k + 16 * (uint32_t)p + (uint32_t)i] = x[k + 4 * (uint32_t)i + (uint32_t)p];
}
#endif
#ifdef ATM_EK_X86
static void prep_x86(atm_vin *in, const int16_t *x, uint32_t d, int32_t *tab) {
    (void)tab;
    atm_ek_prep_avx2(x, d, &in->xv);
}
#endif
#ifdef ATM_EK_WASM
static void prep_wasm(atm_vin *in, const int16_t *x, uint32_t d, int32_t *tab) {
    (void)tab;
    atm_ek_prep_wasm(x, d, &in->wv);
}
#endif
#ifdef ATM_T2_LUT
/* the pair-sum table: index c0 | c1 << 2; codes 0 and 2 mean 0, 1 means +1, 3 means -1 */
static void prep_lut(atm_vin *in, const int16_t *x, uint32_t d, int32_t *tab) {
    (void)tab;
    for (uint32_t g = 0; g < d / 2; g++) {
        const int32_t a = x[2 * g], b = x[2 * g + 1];
        int32_t *t = in->lut + 16 * g;
        const int32_t va[4] = { 0, a, 0, -a };
        for (int c1 = 0; c1 < 4; c1++) {
            const int32_t vb = c1 == 1 ? b : (c1 == 3 ? -b : 0);
            t[4 * c1 + 0] = vb; t[4 * c1 + 1] = va[1] + vb;
            t[4 * c1 + 2] = vb; t[4 * c1 + 3] = va[3] + vb;
        }
    }
}
/* the byte tables, in the engine's table RAM (atm_engine_set_tables) */
static void prep_lut8(atm_vin *in, const int16_t *x, uint32_t d, int32_t *tab) {
    atm_ek_lut8_build(x, d, tab);
    in->t8 = tab;
}
#endif

#ifdef ATM_PLANES
/* The bit-plane kernel over column chunks of at most PLANE_COLS, starting
 * with the chunk whose tables are built (the sums are exact, so the order
 * of the chunks changes nothing), for nm matrices T[j] of rows[j] rows of
 * the same input at once (their sums one after another in out): a chunk's
 * tables are built once for all of them. */
static void planes_matvecs(const atm_tview *T, const uint32_t *rows, int nm, uint32_t cols, atm_vin *in,
                           int32_t *out) {
    const uint32_t nb = cols / 4, nch = (cols + PLANE_COLS - 1) / PLANE_COLS;
    uint32_t k = in->pchunk >= 0 && (uint32_t)in->pchunk < nch ? (uint32_t)in->pchunk : 0;
    for (uint32_t i = 0; i < nch; i++) {
        const uint32_t c0 = k * PLANE_COLS, cc = cols - c0 < PLANE_COLS ? cols - c0 : PLANE_COLS;
        if (in->pchunk != (int32_t)k) {
            atm_ek_planes_build(in->x + c0, cc, in->ptab);
            in->pchunk = (int32_t)k;
        }
        int32_t *o = out;
        for (int j = 0; j < nm; j++) {
            const uint8_t *b = T[j].data + c0 / 4;
            /* every row 4-aligned (checked here too: the fallback inside
             * atm_ek_planes_rows_ox is one frame deeper than the micro:bit's stack has room for) */
            if (in->oxd && ((uintptr_t)b & 3u) == 0 && (nb & 3u) == 0)
                atm_ek_planes_rows_ox(b, (const uint8_t *)(in->oxd + 2 * (uintptr_t)b), nb, rows[j], cc / 4,
                                      in->ptab, o, i != 0);
            else
                atm_ek_planes_rows(b, nb, rows[j], cc / 4, in->ptab, o, i != 0);
            o += rows[j];
        }
        if (++k == nch) k = 0;
    }
}
static void rk_planes(const uint8_t *b, uint32_t rows, uint32_t cols, atm_vin *in, int32_t *out) {
    atm_tview t;
    t.data = b;
    planes_matvecs(&t, &rows, 1, cols, in, out);
}
#endif

/* ---- the kernel sets ----
 * The elementwise and attention kernels of the target (the plain-C twins
 * on hosts and wasm; the Cortex-M0 set: no 32 x 32 -> 64 multiply, the
 * 32-bit versions where they exist, the twins elsewhere; the Cortex-M3 /
 * M4 set: the word-at-a-time mix and dots and the channel-major conv taps
 * of the M0 set (engine_m0.c; unaligned word loads are allowed there,
 * aligned ones the rule) and engine_m3.c / engine_m3.S), shared by every
 * row kernel of the build but the x86 ones, which have their own. */
#if defined(ATM_KS_M3) && defined(ATM_M3_ASM)
/* engine_m3.S for dh = 8, 16, 32, 64 on word-aligned keys, the word-at-a-time C otherwise */
static void dots_m3(const int16_t *q, const int8_t *k, int dh, int n, int32_t *out) {
    if (n <= 0 || ((uintptr_t)k & 3u) != 0 || atm_ek_dots_m3(q, k, dh, n, out) != 0) atm_ek_dots_m0(q, k, dh, n, out);
}
/* engine_m3.S for d % 8 == 0 and up to 32 kept positions, the word-at-a-time C otherwise */
static void mix_m3(const int32_t *w, const int32_t *idx, const int8_t *base, int n, int d, int32_t *out) {
    if (atm_ek_mix_m3(w, idx, base, n, d, out) != 0) atm_ek_mix_m0(w, idx, base, n, d, out);
}
#define DOTS_M3 dots_m3
#define MIX_M3 mix_m3
#else
#define DOTS_M3 atm_ek_dots_m0
#define MIX_M3 atm_ek_mix_m0
#endif

#if defined(ATM_KS_M0)
#define EW_TARGET                                                                                          \
    .dots = atm_ek_dots_m0, .mix = atm_ek_mix_m0, .addsc = atm_ek_addsc_i32, .scale = atm_ek_scale_i32,       \
    .quant32 = atm_ek_quant32_i32, .quant16 = atm_ek_quant16_i32, .ln_stats = atm_ek_ln_stats_i32,          \
    .ln_center = atm_ek_ln_center_i32, .ln_out = atm_ek_ln_out_i32, .ssm = atm_ek_ssm_i32,                  \
    .conv = atm_ek_conv_m0, .scores = atm_ek_scores_m3, .conv_ch = CH, .softmax = atm_ek_softmax_h
#elif defined(ATM_KS_M3)
#define EW_TARGET                                                                                          \
    .dots = DOTS_M3, .mix = MIX_M3, .addsc = atm_ek_addsc_m3, .scale = atm_ek_scale_m3,                       \
    .quant32 = atm_ek_quant32_i32, .quant16 = atm_ek_quant16_i32, .ln_stats = atm_ek_ln_stats_i32,          \
    .ln_center = atm_ek_ln_center_i32, .ln_out = atm_ek_ln_out_m3, .ssm = atm_ek_ssm_m3,                    \
    .conv = atm_ek_conv_m3, .scores = atm_ek_scores_m3, .conv_ch = ATM_CONV_CH_M3, .softmax = atm_ek_softmax_w
#else
#define EW_TARGET                                                                                          \
    .dots = atm_ek_dots_ref, .mix = atm_ek_mix_ref, .addsc = atm_ek_addsc_ref, .scale = atm_ek_scale_ref,     \
    .quant32 = atm_ek_quant32_ref, .quant16 = atm_ek_quant16_ref, .ln_stats = atm_ek_ln_stats_ref,          \
    .ln_center = atm_ek_ln_center_ref, .ln_out = atm_ek_ln_out_ref, .ssm = atm_ek_ssm_ref,                  \
    .conv = atm_ek_conv_ref, .scores = atm_ek_scores_ref, .conv_ch = CH, .softmax = atm_ek_softmax_q15
#endif

static const atm_kset KS_PORTABLE = { .kernel = ATM_KERNEL_PORTABLE, EW_TARGET };
#ifdef ATM_PLANES
static const atm_kset KS_PLANES = { .kernel = ATM_KERNEL_PLANES, .rows = rk_planes, .matvecs = planes_matvecs,
                                    EW_TARGET };
#endif
#ifdef ATM_T2_LUT
static const atm_kset KS_LUT = { .kernel = ATM_KERNEL_LUT, .prep = prep_lut, .rows = rk_lut,
                                 .t5 = atm_ek_t5_to_t2_ref, EW_TARGET };
static const atm_kset KS_LUT8 = { .kernel = ATM_KERNEL_LUT, .prep = prep_lut8, .rows = rk_lut8,
                                  .t5 = atm_ek_t5_to_t2_ref, EW_TARGET };
#endif
#ifdef ATM_T2_SIMD
static const atm_kset KS_SSE2 = { .kernel = ATM_KERNEL_SSE2, .prep = prep_sse2, .rows = rk_sse2,
                                  .t5 = atm_ek_t5_to_t2_ref, EW_TARGET };
#endif
#ifdef ATM_EK_WASM
static const atm_kset KS_WASM = { .kernel = ATM_KERNEL_WASM, .prep = prep_wasm, .rows = rk_wasm,
                                  .t5 = atm_ek_t5_to_t2_ref, EW_TARGET };
#endif
#ifdef ATM_EK_X86
/* the x86 sets: their row kernel and re-encoder, the AVX2 elementwise
 * kernels (AVX-512: its own where 64-bit lanes pay), conv chunks of
 * ATM_CONV_CH_X86 trits and the vector top-k */
#define EW_X86 .prep = prep_x86, .dots = atm_ek_dots_avx2, .mix = atm_ek_mix_avx2, .quant32 = atm_ek_quant32_avx2, \
    .quant16 = atm_ek_quant16_avx2, .ln_stats = atm_ek_ln_stats_avx2, .ln_center = atm_ek_ln_center_avx2,        \
    .conv = atm_ek_conv_avx2, .conv_ch = ATM_CONV_CH_X86, .softmax = atm_ek_softmax_avx2, .topk = atm_ek_topk_avx2
static const atm_kset KS_AVX2 = {
    .kernel = ATM_KERNEL_AVX2, .rows = rk_avx2, .t5 = atm_ek_t5_to_t2_avx2, .addsc = atm_ek_addsc_avx2,
    .scale = atm_ek_scale_avx2, .ln_out = atm_ek_ln_out_avx2, .ssm = atm_ek_ssm_avx2, .scores = atm_ek_scores_avx2,
    EW_X86
};
static const atm_kset KS_AVX512 = {
    .kernel = ATM_KERNEL_AVX512, .rows = rk_avx512, .t5 = atm_ek_t5_to_t2_avx512, .addsc = atm_ek_addsc_avx512,
    .scale = atm_ek_scale_avx512, .ln_out = atm_ek_ln_out_avx512, .ssm = atm_ek_ssm_avx512,
    .scores = atm_ek_scores_avx512, EW_X86
};
#endif

/* ---- the choice ----
 * The kernel used for a model of width d: the requested one if this build
 * and CPU have it and d fits it, else the best that does (AUTO: AVX-512,
 * AVX2, SSE2, wasm SIMD128, pair-sum table, bit-plane, portable). Row
 * kernels need d % 4 == 0 (rows start on a byte); SSE2 needs d % 64 == 0,
 * the table d <= 128. */
static int kernel_fits(int k, int d) {
    (void)d;
    switch (k) {
    case ATM_KERNEL_PORTABLE: return 1;
#ifdef ATM_PLANES
    case ATM_KERNEL_PLANES: return d % 4 == 0;
#endif
#ifdef ATM_T2_LUT
    case ATM_KERNEL_LUT: return d % 4 == 0 && d <= ATM_LUT_MAX_D;
#endif
#ifdef ATM_T2_SIMD
    case ATM_KERNEL_SSE2: return d % 64 == 0;
#endif
#ifdef ATM_EK_X86
    case ATM_KERNEL_AVX2: case ATM_KERNEL_AVX512: return d % 4 == 0 && atm_ek_x86_supported(k);
#endif
#ifdef ATM_EK_WASM
    case ATM_KERNEL_WASM: return d % 4 == 0;
#endif
    default: return 0;
    }
}
static int pick_kernel(int want, int d) {
    static const int order[] = { ATM_KERNEL_AVX512, ATM_KERNEL_AVX2, ATM_KERNEL_SSE2, ATM_KERNEL_WASM,
                                 ATM_KERNEL_LUT, ATM_KERNEL_PLANES };
    if (want != ATM_KERNEL_AUTO) return kernel_fits(want, d) ? want : ATM_KERNEL_PORTABLE;
    for (unsigned i = 0; i < sizeof order / sizeof order[0]; i++)
        if (kernel_fits(order[i], d)) return order[i];
    return ATM_KERNEL_PORTABLE;
}
/* the set of a kernel this build has */
static const atm_kset *set_of(int k) {
    switch (k) {
#ifdef ATM_PLANES
    case ATM_KERNEL_PLANES: return &KS_PLANES;
#endif
#ifdef ATM_T2_LUT
    case ATM_KERNEL_LUT: return &KS_LUT;
#endif
#ifdef ATM_T2_SIMD
    case ATM_KERNEL_SSE2: return &KS_SSE2;
#endif
#ifdef ATM_EK_X86
    case ATM_KERNEL_AVX2: return &KS_AVX2;
    case ATM_KERNEL_AVX512: return &KS_AVX512;
#endif
#ifdef ATM_EK_WASM
    case ATM_KERNEL_WASM: return &KS_WASM;
#endif
    default: return &KS_PORTABLE;
    }
}

/* The set a step runs, and whether it uses the byte tables: the pair-sum
 * table or bit-plane kernel become the byte tables when the engine has
 * table RAM. */
const atm_kset *atm_select_kset(const atm_engine *e, int32_t **tab) {
    const int d = e->m->cfg.d_model;
    const int k = pick_kernel(e->kernel, d);
    *tab = 0;
#ifdef ATM_T2_LUT
    if (e->tab && d % 4 == 0 && (k == ATM_KERNEL_LUT || k == ATM_KERNEL_PLANES)) {
        *tab = e->tab;
        return &KS_LUT8;
    }
#endif
    return set_of(k);
}

void atm_vin_prep(atm_vin *in, const atm_engine *e, const atm_kset *ks, const int16_t *x, int d, int32_t *tab) {
    in->x = x;
    in->ks = ks;
#ifdef ATM_PLANES
    in->pchunk = -1;
    in->oxd = e->ox ? (uintptr_t)e->ox - 2 * (uintptr_t)e->m->blob : 0;   /* the offset stream */
#else
    (void)e;
#endif
    if (ks->prep) ks->prep(in, x, (uint32_t)d, tab);
}

/* ---- the products ---- */

#ifdef ATM_T5_RECODE
/* a tensor's payload length (computed where needed: a division by 5) */
static uint32_t tview_bytes(int enc, const atm_tview *t) {
    const uint32_t count = atm_rd_u32le(t->en + 8);
    return t->en[2] != ATM_DT_TRITS ? 2 * count : (enc == ATM_ENC_ATOME01 ? (count + 3) / 4 : (count + 4) / 5);
}
/* ATOME02 rows through the row kernel: blocks of whole rows re-encoded
 * into a stack buffer */
static void matvec_recoded(const atm_tview *T, int enc, uint32_t rows, uint32_t cols, atm_vin *in, int32_t *out) {
    const atm_kset *ks = in->ks;
    uint8_t buf[RECODE_GROUPS * 5];
    const uint32_t maxr = (RECODE_GROUPS * 20 - 16) / cols, tb = tview_bytes(enc, T);
    for (uint32_t r0 = 0; r0 < rows; ) {
        const uint32_t nr = rows - r0 < maxr ? rows - r0 : maxr;
        const uint32_t first = r0 * cols, g0 = first / 20;
        const uint32_t ng = ((r0 + nr) * cols - 20 * g0 + 19) / 20;
        ks->t5(T->data, tb, g0, ng, buf);
        ks->rows(buf + (first - 20 * g0) / 4, nr, cols, in, out + r0);
        r0 += nr;
    }
}
#endif

void atm_matvec(const atm_tview *T, int enc, uint32_t rows, uint32_t cols, atm_vin *in, int32_t *out) {
    const atm_kset *ks = in->ks;
    if (ks->rows && cols % 4u == 0) {
        if (enc == ATM_ENC_ATOME01) { ks->rows(T->data, rows, cols, in, out); return; }
#ifdef ATM_T5_RECODE
        if (ks->t5) { matvec_recoded(T, enc, rows, cols, in, out); return; }
#endif
    }
    atm_ek_matvec_portable(T->data, enc, rows, cols, in->x, out);
}

void atm_matvecs(const atm_tview *T, const uint32_t *rows, int nm, int enc, uint32_t cols, atm_vin *in,
                 int32_t *out) {
    if (in->ks->matvecs && enc == ATM_ENC_ATOME01 && cols % 4u == 0) {
        in->ks->matvecs(T, rows, nm, cols, in, out);
        return;
    }
    for (int j = 0; j < nm; j++) {
        atm_matvec(&T[j], enc, rows[j], cols, in, out);
        out += rows[j];
    }
}

/* ---- the table RAM (engine.h) ----
 * The conv trits of every layer, decoded once into the table RAM after the
 * byte tables (L K d int8, rounded to a word; 0 without a conv pathway):
 * conv_path then reads them instead of decoding its layer's trits at every
 * step. The same trits, so the same sums. */
static size_t conv_cache_bytes(const atm_mconfig *c) {
    if (!(c->pathways & ATM_PATH_CONV) || c->kernel < 1) return 0;
    return ((size_t)c->n_layers * (size_t)c->kernel * (size_t)c->d_model + 3u) & ~(size_t)3u;
}

const int8_t *atm_conv_cache(const atm_engine *e, int l) {
#ifdef ATM_T2_LUT
    const atm_mconfig *c = &e->m->cfg;
    if (!e->tab || conv_cache_bytes(c) == 0) return 0;
    return (const int8_t *)(e->tab + 64 * c->d_model) + (size_t)l * (size_t)c->kernel * (size_t)c->d_model;
#else
    (void)e; (void)l;
    return 0;   /* no table RAM in this build */
#endif
}

size_t atm_engine_tables_bytes(const atm_model *m) {
#ifdef ATM_T2_LUT
    if (m && m->cfg.d_model % 4 == 0) return (size_t)256 * (size_t)m->cfg.d_model + conv_cache_bytes(&m->cfg);
#else
    (void)m;
#endif
    return 0;
}

int atm_engine_set_tables(atm_engine *e, void *buf, size_t len) {
    if (!e || !e->m) return -1;
    if (!buf) { e->tab = 0; return 0; }
    const size_t need = atm_engine_tables_bytes(e->m);
    if (need == 0 || len < need || ((uintptr_t)buf & 3u) != 0) return -1;
    e->tab = (int32_t *)buf;
    const atm_model *m = e->m;
    const int n = m->cfg.kernel * m->cfg.d_model;
    if (conv_cache_bytes(&m->cfg) == 0) return 0;
    ATM_EK_DECODE_BUF(tb, ATM_EK_BUF);
    for (int l = 0; l < m->cfg.n_layers; l++) {
        const atm_tview C = atm_tensor(m, ATM_T_CONV, l);
        int8_t *o = (int8_t *)(e->tab + 64 * m->cfg.d_model) + (size_t)l * (size_t)n;
        for (int i = 0; i < n; i += CH) {
            const int k = n - i < CH ? n - i : CH;
            const int8_t *t = atm_ek_decode(C.data, m->encoding, (uint32_t)i, k, tb);
            for (int j = 0; j < k; j++) o[i + j] = t[j];
        }
    }
    return 0;
}

int atm_engine_set_kernel(atm_engine *e, int kernel) {
    if (!e) return -1;
    switch (kernel) {
    case ATM_KERNEL_AUTO: case ATM_KERNEL_PORTABLE: break;
#ifdef ATM_PLANES
    case ATM_KERNEL_PLANES: break;
#endif
#ifdef ATM_T2_LUT
    case ATM_KERNEL_LUT: break;
#endif
#ifdef ATM_T2_SIMD
    case ATM_KERNEL_SSE2: break;
#endif
#ifdef ATM_EK_X86
    case ATM_KERNEL_AVX2: case ATM_KERNEL_AVX512:
        if (!atm_ek_x86_supported(kernel)) return -1;
        break;
#endif
#ifdef ATM_EK_WASM
    case ATM_KERNEL_WASM: break;
#endif
    default: return -1;
    }
    e->kernel = kernel;
    return 0;
}

int atm_engine_kernel(const atm_engine *e) {
    if (!e || !e->m) return ATM_KERNEL_PORTABLE;
    int32_t *tab;
    return atm_select_kset(e, &tab)->kernel;
}

#else
typedef int atm_engine_select_unit;   /* ISO C: a translation unit needs a declaration */
#endif
