/* tests/test_engine_kernels.c — the integer engine's instruction-set kernels
 * (core/engine_kernels.h) against their plain-C twins, and every kernel set
 * of the whole engine against the portable one.
 *
 * Contract under test: a kernel returns exactly (bit for bit) what its twin
 * returns, for every length, odd ones and partial 64-column chunks
 * included, at the extremes of the value ranges, from unaligned pointers.
 * The twins themselves are checked against a naive definition written here
 * (trit codes decoded bit by bit). Kernels this CPU cannot run are reported
 * and skipped; on x86-64 with AVX2 (every machine the suite targets) at
 * least the AVX2 set runs, so the comparisons cannot all be skipped there.
 * Engine level: random-init models of several shapes (width a multiple of
 * 64, of 4 only, odd; wider than the pair-sum table) in both encodings give
 * identical logits with every kernel set the build and CPU have. */
#include "check.h"
#include "core/engine.h"
#include "core/engine_kernels.h"
#include "core/train/export.h"
#include "core/train/model.h"
#include "core/rng.h"
#include "core/fixmath.h"
#include <string.h>

#ifndef ATM_EK_X86
/* no x86 kernels in this build: the twins are still checked, the engine
 * sets of this target still compared */
typedef struct { int unused; } atm_ek_vec;
static int atm_ek_x86_supported(int k) { (void)k; return 0; }
#define atm_ek_prep_avx2(x, c, v) ((void)0)
#define atm_ek_matvec_avx2(b, r, c, v, o) ((void)0)
#define atm_ek_matvec_avx512(b, r, c, v, o) ((void)0)
#define atm_ek_dots_avx2(q, k, dh, n, o) ((void)0)
#define atm_ek_mix_avx2(w, i, b, n, d, o) ((void)0)
#define atm_ek_addsc_avx2 atm_ek_addsc_ref
#define atm_ek_scale_avx2 atm_ek_scale_ref
#define atm_ek_quant32_avx2 atm_ek_quant32_ref
#define atm_ek_quant16_avx2 atm_ek_quant16_ref
#define atm_ek_ln_stats_avx2 atm_ek_ln_stats_ref
#define atm_ek_ln_center_avx2 atm_ek_ln_center_ref
#define atm_ek_ln_out_avx2 atm_ek_ln_out_ref
#define atm_ek_ssm_avx2 atm_ek_ssm_ref
#define atm_ek_conv_avx2 atm_ek_conv_ref
#define atm_ek_scores_avx2 atm_ek_scores_ref
#define atm_ek_addsc_avx512 atm_ek_addsc_ref
#define atm_ek_scale_avx512 atm_ek_scale_ref
#define atm_ek_ln_out_avx512 atm_ek_ln_out_ref
#define atm_ek_ssm_avx512 atm_ek_ssm_ref
#define atm_ek_scores_avx512 atm_ek_scores_ref
#define atm_ek_t5_to_t2_avx2 atm_ek_t5_to_t2_ref
#define atm_ek_t5_to_t2_avx512 atm_ek_t5_to_t2_ref
#define atm_ek_softmax_avx2 atm_ek_softmax_q15
static int atm_ek_topk_avx2(const int32_t *sc, int n, int k, int32_t *ss, int32_t *st) { (void)sc; (void)n; (void)k; (void)ss; (void)st; return -1; }
#endif

static atm_rng rng;
static uint32_t rnd(uint32_t n) { return atm_rng_u32(&rng) % n; }

/* value pattern p: 0 random, 1 all max, 2 all min, 3 alternating extremes */
static int32_t pick(int p, uint32_t i, int32_t lim) {
    switch (p) {
    case 1: return lim;
    case 2: return -lim;
    case 3: return (i & 1) ? lim : -lim;
    default: return (int32_t)((int64_t)(atm_rng_u32(&rng) % (2u * (uint32_t)lim + 1u)) - lim);
    }
}

static int naive_trit(const uint8_t *b, uint32_t i) {
    const int c = (b[i >> 2] >> (2 * (i & 3))) & 3;
    return c == 1 ? 1 : (c == 3 ? -1 : 0);
}

/* random valid ATOME01 bytes (codes 00, 01, 11; all -1 / all +1 for patterns 1, 2) */
static void fill_trits(uint8_t *b, size_t n, int p) {
    static const uint8_t codes[3] = { 0, 1, 3 };
    for (size_t i = 0; i < n; i++) {
        uint8_t v = 0;
        for (int k = 0; k < 4; k++) {
            const uint8_t c = p == 1 ? 1 : (p == 2 ? 3 : codes[rnd(3)]);
            v = (uint8_t)(v | c << (2 * k));
        }
        b[i] = v;
    }
}

static void test_matvec(void) {
    static const uint32_t colss[] = { 4, 8, 12, 20, 60, 64, 68, 124, 128, 132, 192, 196, 252, 256, 1020, 1024 };
    static const uint32_t rowss[] = { 1, 2, 3, 7, 16, 17, 33 };
    const int have2 = atm_ek_x86_supported(ATM_KERNEL_AVX2), have5 = atm_ek_x86_supported(ATM_KERNEL_AVX512);
    printf("matvec: AVX2 %s, AVX-512 VNNI %s\n", have2 ? "tested" : "not on this CPU", have5 ? "tested" : "not on this CPU");
#ifdef ATM_EK_X86
    CHECK(have2);    /* every x86-64 machine the suite runs on has AVX2 */
#endif
    uint8_t *mem = malloc(33 * 256 + 1), *ox = malloc(2 * 33 * 256);
    int16_t x[1024];
    int32_t ref[33], got[33], naive[33];
    atm_ek_vec *v = malloc(sizeof *v);
    int32_t *tab = malloc(1024 * 4 * sizeof(int32_t));
    int32_t *t8 = malloc(1024 * 64 * sizeof(int32_t));
    int bad_ref = 0, bad2 = 0, bad5 = 0, badp = 0, bad8 = 0, badt8 = 0, cases = 0;
    for (size_t ci = 0; ci < sizeof colss / sizeof colss[0]; ci++)
        for (size_t ri = 0; ri < sizeof rowss / sizeof rowss[0]; ri++)
            for (int p = 0; p < 4; p++) {
                const uint32_t cols = colss[ci], rows = rowss[ri];
                uint8_t *b = mem + (p & 1);            /* odd addresses too */
                fill_trits(b, (size_t)rows * cols / 4, p == 3 ? 0 : p);
                for (uint32_t c = 0; c < cols; c++) x[c] = (int16_t)pick(p, c, 32767);
                for (uint32_t r = 0; r < rows; r++) {
                    int32_t s = 0;
                    for (uint32_t c = 0; c < cols; c++) s += naive_trit(b, r * cols + c) * x[c];
                    naive[r] = s;
                }
                atm_ek_matvec_ref(b, rows, cols, x, ref);
                bad_ref += memcmp(ref, naive, rows * sizeof(int32_t)) != 0;
                /* the bit-plane kernel: whole rows, then as two column chunks added up */
                memset(tab, 0x5A, 1024 * 4 * sizeof(int32_t));
                atm_ek_planes_build(x, cols, tab);
                memset(got, 0xA5, sizeof got);
                atm_ek_planes_rows(b, cols / 4, rows, cols / 4, tab, got, 0);
                badp += memcmp(ref, got, rows * sizeof(int32_t)) != 0;
                const uint32_t h = cols / 8 * 4;
                if (h > 0) {
                    memset(got, 0xA5, sizeof got);
                    atm_ek_planes_build(x, h, tab);
                    atm_ek_planes_rows(b, cols / 4, rows, h / 4, tab, got, 0);
                    atm_ek_planes_build(x + h, cols - h, tab);
                    atm_ek_planes_rows(b + h / 4, cols / 4, rows, (cols - h) / 4, tab, got, 1);
                    badp += memcmp(ref, got, rows * sizeof(int32_t)) != 0;
                }
                /* from the offset stream (rows at 4-aligned offsets: cols % 16 == 0) */
                if (cols % 16u == 0) {
                    atm_engine_offsets_make(b, (size_t)rows * cols / 4, ox);
                    atm_ek_planes_build(x, cols, tab);
                    memset(got, 0xA5, sizeof got);
                    atm_ek_planes_rows_ox(b, ox, cols / 4, rows, cols / 4, tab, got, 0);
                    badp += memcmp(ref, got, rows * sizeof(int32_t)) != 0;
                }
                /* the byte tables: the 81 valid entries of each group written, the rest left alone */
                memset(t8, 0x5A, 1024 * 64 * sizeof(int32_t));
                atm_ek_lut8_build(x, cols, t8);
                for (uint32_t g = 0; g < cols / 4; g++)
                    for (uint32_t v8 = 0; v8 < 256; v8++) {
                        int valid = 1, s = 0;
                        for (int k = 0; k < 4; k++) {
                            const int c = (int)(v8 >> (2 * k)) & 3;
                            valid &= c != 2;
                            s += (c == 1 ? 1 : (c == 3 ? -1 : 0)) * x[4 * g + (uint32_t)k];
                        }
                        const int32_t want = valid ? s : (int32_t)0x5A5A5A5A;
                        badt8 += t8[256 * g + v8] != want;
                    }
                memset(got, 0xA5, sizeof got);
                atm_ek_lut8_rows(b, cols / 4, rows, cols / 4, t8, got);
                bad8 += memcmp(ref, got, rows * sizeof(int32_t)) != 0;
                if (have2) {
                    memset(v, 0x5A, sizeof *v);        /* the prep must write everything the kernel reads */
                    atm_ek_prep_avx2(x, cols, v);
                    atm_ek_matvec_avx2(b, rows, cols, v, got);
                    bad2 += memcmp(ref, got, rows * sizeof(int32_t)) != 0;
                }
                if (have5) {
                    memset(v, 0xA5, sizeof *v);
                    atm_ek_prep_avx2(x, cols, v);
                    atm_ek_matvec_avx512(b, rows, cols, v, got);
                    bad5 += memcmp(ref, got, rows * sizeof(int32_t)) != 0;
                }
                cases++;
            }
    CHECKF(bad_ref == 0, "matvec ref differs from the naive sum in %d of %d cases", bad_ref, cases);
    CHECKF(bad2 == 0, "matvec AVX2 differs in %d of %d cases", bad2, cases);
    CHECKF(bad5 == 0, "matvec AVX-512 differs in %d of %d cases", bad5, cases);
    CHECKF(badp == 0, "matvec bit-plane kernel differs in %d of %d cases", badp, cases);
    CHECKF(bad8 == 0, "matvec byte-table kernel differs in %d of %d cases", bad8, cases);
    CHECKF(badt8 == 0, "byte tables: %d wrong entries", badt8);
    free(t8);
    free(tab);
    free(v);
    free(mem);
    free(ox);
}

static void test_dots_mix(void) {
    static const int dhs[] = { 1, 5, 15, 16, 17, 31, 32, 33, 48, 63, 64, 65, 100, 512 };
    static const int ns[] = { 1, 2, 7, 8, 9, 15, 16, 17, 64, 65 };
    const int have2 = atm_ek_x86_supported(ATM_KERNEL_AVX2);
    int16_t q[512];
    int8_t *k = malloc(65 * 512 + 1);
    int32_t ref[65], got[65];
    int bad_ref = 0, bad = 0, bad_m0 = 0, cases = 0;
    for (size_t di = 0; di < sizeof dhs / sizeof dhs[0]; di++)
        for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++)
            for (int p = 0; p < 4; p++) {
                const int dh = dhs[di], n = ns[ni];
                int8_t *kk = k + (p & 1);
                for (int i = 0; i < dh; i++) q[i] = (int16_t)pick(p, (uint32_t)i, 32767);
                for (int i = 0; i < n * dh; i++) kk[i] = (int8_t)pick(p == 3 ? 2 : p, (uint32_t)i, 127);
                atm_ek_dots_ref(q, kk, dh, n, ref);
                for (int j = 0; j < n; j++) {
                    int64_t s = 0;
                    for (int i = 0; i < dh; i++) s += (int64_t)q[i] * kk[j * dh + i];
                    bad_ref += s != ref[j];
                }
                if (have2) {
                    atm_ek_dots_avx2(q, kk, dh, n, got);
                    bad += memcmp(ref, got, (size_t)n * sizeof(int32_t)) != 0;
                }
                memset(got, 0x5A, sizeof got);
                atm_ek_dots_m0(q, kk, dh, n, got);                /* aligned rows for even p */
                bad_m0 += memcmp(ref, got, (size_t)n * sizeof(int32_t)) != 0;
                cases++;
            }
    CHECKF(bad_ref == 0, "dots ref wrong in %d entries", bad_ref);
    CHECKF(bad == 0, "dots AVX2 differs in %d of %d cases", bad, cases);
    CHECKF(bad_m0 == 0, "dots of the Cortex-M0 set differs in %d of %d cases", bad_m0, cases);
    free(k);

    static const int ds[] = { 1, 7, 8, 9, 15, 16, 17, 63, 64, 65, 1024 };
    static const int ms[] = { 1, 2, 3, 4, 5, 8, 64 };
    int8_t *rows_mem = malloc(64 * 1024 + 1);
    int32_t w[64], idx[64], *mref = malloc(1024 * sizeof(int32_t)), *mgot = malloc(1024 * sizeof(int32_t));
    bad_ref = bad = bad_m0 = cases = 0;
    for (size_t di = 0; di < sizeof ds / sizeof ds[0]; di++)
        for (size_t mi = 0; mi < sizeof ms / sizeof ms[0]; mi++)
            for (int p = 0; p < 4; p++) {
                const int d = ds[di], n = ms[mi];
                int8_t *base = rows_mem + (p & 1);
                for (int i = 0; i < 64 * d; i++) base[i] = (int8_t)pick(p, (uint32_t)i, 127);
                for (int i = 0; i < n; i++) idx[i] = (int32_t)rnd(64);     /* any rows, in any order */
                /* weights: sum |w| <= 2^15, one weight of exactly 2^15 when n = 1 */
                int32_t left = 32768;
                for (int i = 0; i < n; i++) {
                    w[i] = i == n - 1 ? left : (int32_t)rnd((uint32_t)left / 2u + 1u);
                    left -= w[i];
                    if (p == 2 || (p == 3 && (i & 1))) w[i] = -w[i];
                }
                atm_ek_mix_ref(w, idx, base, n, d, mref);
                for (int c = 0; c < d; c++) {
                    int64_t s = 0;
                    for (int i = 0; i < n; i++) s += (int64_t)w[i] * base[idx[i] * d + c];
                    bad_ref += s != mref[c];
                }
                if (have2) {
                    atm_ek_mix_avx2(w, idx, base, n, d, mgot);
                    bad += memcmp(mref, mgot, (size_t)d * sizeof(int32_t)) != 0;
                }
                memset(mgot, 0x5A, 1024 * sizeof(int32_t));
                atm_ek_mix_m0(w, idx, base, n, d, mgot);
                bad_m0 += memcmp(mref, mgot, (size_t)d * sizeof(int32_t)) != 0;
                cases++;
            }
    CHECKF(bad_ref == 0, "mix ref wrong in %d entries", bad_ref);
    CHECKF(bad == 0, "mix AVX2 differs in %d of %d cases", bad, cases);
    CHECKF(bad_m0 == 0, "mix of the Cortex-M0 set differs in %d of %d cases", bad_m0, cases);
    free(rows_mem); free(mref); free(mgot);
}

/* floor(a / 2^s) and round-half-up a / 2^s, written without shifts of
 * negative values: the definitions the kernels' shifts must meet */
static int64_t floor_div(int64_t a, int s) {
    const int64_t p = (int64_t)1 << s;
    int64_t q = a / p;
    if (a % p != 0 && a < 0) q--;
    return q;
}
static int64_t rnd_div(int64_t a, int s) { return floor_div(a + ((int64_t)1 << (s - 1)), s); }
static int64_t clampl(int64_t v, int64_t lim) { return v > lim ? lim : (v < -lim ? -lim : v); }

static const int lens[] = { 1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 33, 63, 64, 65, 127, 256, 1023, 1024 };
#define NLENS ((int)(sizeof lens / sizeof lens[0]))
#define XL ((1 << 30) - 1)

static void test_elementwise(void) {
    const int run = atm_ek_x86_supported(ATM_KERNEL_AVX2), run5 = atm_ek_x86_supported(ATM_KERNEL_AVX512);
    int32_t *x0 = malloc(1024 * 4), *x1 = malloc(1024 * 4), *v = malloc(1024 * 4), *s0 = malloc(1024 * 4), *s1 = malloc(1024 * 4);
    int32_t *x2 = malloc(1024 * 4), *x3 = malloc(1024 * 4);
    int16_t *u2 = malloc(1024 * 2), *u3 = malloc(1024 * 2);
    int bad5 = 0, badi = 0, bad3 = 0;
    int16_t *u0 = malloc(1024 * 2), *u1 = malloc(1024 * 2);
    int8_t *q0 = malloc(1024), *q1 = malloc(1024);
    uint8_t *g = malloc(2 * 1024 + 1), *b = malloc(2 * 1024 + 1), *kx = malloc(1024);
    int bad[10] = { 0 }, bad_def[10] = { 0 }, cases = 0;
    for (int li = 0; li < NLENS; li++)
        for (int p = 0; p < 4; p++) {
            const int n = lens[li];
            cases++;
            /* addsc / scale: every shift, multipliers up to +-(2^31 - 1) */
            for (int sh = 1; sh <= 62; sh += (sh < 40 ? 1 : 7)) {
                const int32_t mul = p == 1 ? INT32_MAX : (p == 2 ? -INT32_MAX : (int32_t)(atm_rng_u32(&rng) >> (sh % 20)));
                for (int i = 0; i < n; i++) { x0[i] = x1[i] = pick(p, (uint32_t)i, XL); v[i] = pick(p == 3 ? 0 : p, (uint32_t)i, INT32_MAX); }
                memcpy(x2, x1, (size_t)n * 4);
                memcpy(x3, x1, (size_t)n * 4);
                memcpy(s1, x1, (size_t)n * 4);
                atm_ek_addsc_i32(x3, v, n, mul, sh);
                atm_ek_addsc_ref(x0, v, n, mul, sh);
                badi += memcmp(x0, x3, (size_t)n * 4) != 0;
                memcpy(x3, s1, (size_t)n * 4);
                atm_ek_addsc_m3(x3, v, n, mul, sh);
                bad3 += memcmp(x0, x3, (size_t)n * 4) != 0;
                if (run) atm_ek_addsc_avx2(x1, v, n, mul, sh);
                if (run5) { atm_ek_addsc_avx512(x2, v, n, mul, sh); bad5 += memcmp(x0, x2, (size_t)n * 4) != 0; }
                for (int i = 0; i < n; i++) {
                    const int64_t xi = pick(p, (uint32_t)i, XL);     /* pick is deterministic for p != 0 */
                    if (p != 0) bad_def[0] += x0[i] != clampl(xi + rnd_div((int64_t)v[i] * mul, sh), XL);
                }
                bad[0] += run && memcmp(x0, x1, (size_t)n * 4) != 0;
                memcpy(x0, v, (size_t)n * 4); memcpy(x1, v, (size_t)n * 4);
                memcpy(x2, v, (size_t)n * 4);
                memcpy(x3, v, (size_t)n * 4);
                atm_ek_scale_ref(x0, n, mul, sh);
                atm_ek_scale_i32(x3, n, mul, sh);
                badi += memcmp(x0, x3, (size_t)n * 4) != 0;
                memcpy(x3, v, (size_t)n * 4);
                atm_ek_scale_m3(x3, n, mul, sh);
                bad3 += memcmp(x0, x3, (size_t)n * 4) != 0;
                if (run) atm_ek_scale_avx2(x1, n, mul, sh);
                if (run5) { atm_ek_scale_avx512(x2, n, mul, sh); bad5 += memcmp(x0, x2, (size_t)n * 4) != 0; }
                for (int i = 0; i < n; i++) bad_def[1] += x0[i] != clampl(rnd_div((int64_t)v[i] * mul, sh), XL);
                bad[1] += run && memcmp(x0, x1, (size_t)n * 4) != 0;
            }
            /* quantisation to int8 rows */
            /* 255 and 32384 = 126.5 * 2^8: maxima whose negatives round on a half */
            const int32_t lims[5] = { 127, 40000, 1 << 30, 255, 32384 };
            for (int k = 0; k < 5; k++) {
                for (int i = 0; i < n; i++) v[i] = pick(p, (uint32_t)i, lims[k]);
                const uint8_t e0 = atm_ek_quant32_ref(v, n, q0);
                const uint8_t e1 = run ? atm_ek_quant32_avx2(v, n, q1) : e0;
                if (!run) memcpy(q1, q0, (size_t)n);
                bad[2] += e0 != e1 || memcmp(q0, q1, (size_t)n) != 0;
                badi += atm_ek_quant32_i32(v, n, q1) != e0 || memcmp(q0, q1, (size_t)n) != 0;
                for (int i = 0; i < n; i++) bad_def[2] += q0[i] != clampl(e0 ? rnd_div(v[i], e0) : v[i], 127);
                for (int i = 0; i < n; i++) u0[i] = (int16_t)pick(p, (uint32_t)i, k == 0 ? 127 : (k >= 3 ? lims[k] : 32767));
                const uint8_t f0 = atm_ek_quant16_ref(u0, n, q0);
                const uint8_t f1 = run ? atm_ek_quant16_avx2(u0, n, q1) : f0;
                if (!run) memcpy(q1, q0, (size_t)n);
                bad[3] += f0 != f1 || memcmp(q0, q1, (size_t)n) != 0;
                badi += atm_ek_quant16_i32(u0, n, q1) != f0 || memcmp(q0, q1, (size_t)n) != 0;
            }
            /* LayerNorm pieces */
            for (int i = 0; i < n; i++) x0[i] = pick(p, (uint32_t)i, XL);
            int64_t sa, sb2; int32_t la, ha, lb, hb;
            atm_ek_ln_stats_ref(x0, n, &sa, &la, &ha);
            if (run) atm_ek_ln_stats_avx2(x0, n, &sb2, &lb, &hb); else { sb2 = sa; lb = la; hb = ha; }
            bad[4] += sa != sb2 || la != lb || ha != hb;
            atm_ek_ln_stats_i32(x0, n, &sb2, &lb, &hb);
            badi += sa != sb2 || la != lb || ha != hb;
            static const int ks[] = { -14, -9, -4, 0, 1, 6, 11, 15 };
            for (size_t ki = 0; ki < sizeof ks / sizeof ks[0]; ki++) {
                const int k = ks[ki];
                /* values whose centred magnitude fits the shift k as the engine chooses it */
                const int32_t span = k > 0 ? (int32_t)(((int64_t)1 << (15 + k)) - 1) : (int32_t)((1 << (15 + k)) - 1);
                for (int i = 0; i < n; i++) x0[i] = pick(p, (uint32_t)i, span) + 12345;
                const int64_t va = atm_ek_ln_center_ref(x0, n, 12345, k, u0);
                const int64_t vb = run ? atm_ek_ln_center_avx2(x0, n, 12345, k, u1) : va;
                if (!run) memcpy(u1, u0, (size_t)n * 2);
                bad[5] += va != vb || memcmp(u0, u1, (size_t)n * 2) != 0;
                badi += atm_ek_ln_center_i32(x0, n, 12345, k, u1) != va || memcmp(u0, u1, (size_t)n * 2) != 0;
            }
            static const int sgs[] = { 1, 4, 10, 14, 15, 16, 17, 18, 22, 30, 31, 32, 33, 40, 45, 46, 47, 52, 62 };
            static const int sbs[] = { -16, -15, -14, -11, -6, -1, 0, 1, 4, 9, 14, 19, 24, 29, 30 };
            for (size_t gi = 0; gi < sizeof sgs / sizeof sgs[0]; gi++)
                for (size_t bi = 0; bi < sizeof sbs / sizeof sbs[0]; bi++) {
                    const int sg = sgs[gi], sb = sbs[bi];
                    const int32_t r15 = (int32_t)(16384 + atm_rng_u32(&rng) % 16385);
                    for (int i = 0; i < n; i++) {
                        u0[i] = u1[i] = (int16_t)pick(p, (uint32_t)i, 32767);
                        const int32_t gv = pick(p == 3 ? 0 : p, (uint32_t)i, 32767), bv = pick(p, (uint32_t)i + 1, 32767);
                        g[1 + 2 * i] = (uint8_t)gv; g[2 + 2 * i] = (uint8_t)((uint32_t)gv >> 8);
                        b[1 + 2 * i] = (uint8_t)bv; b[2 + 2 * i] = (uint8_t)((uint32_t)bv >> 8);
                    }
                    if (p == 2) u0[0] = u1[0] = -32768;                     /* ln_center's extreme */
                    memcpy(u2, u0, (size_t)n * 2);
                    memcpy(u3, u0, (size_t)n * 2);
                    atm_ek_ln_out_ref(u0, g + 1, b + 1, n, r15, sg, sb);     /* odd addresses */
                    atm_ek_ln_out_i32(u3, g + 1, b + 1, n, r15, sg, sb);
                    badi += memcmp(u0, u3, (size_t)n * 2) != 0;
                    memcpy(u3, u2, (size_t)n * 2);
                    atm_ek_ln_out_m3(u3, g + 1, b + 1, n, r15, sg, sb);
                    bad3 += memcmp(u0, u3, (size_t)n * 2) != 0;
                    if (run5) { atm_ek_ln_out_avx512(u2, g + 1, b + 1, n, r15, sg, sb); bad5 += memcmp(u0, u2, (size_t)n * 2) != 0; }
                    if (run) atm_ek_ln_out_avx2(u1, g + 1, b + 1, n, r15, sg, sb); else memcpy(u1, u0, (size_t)n * 2);
                    bad[6] += memcmp(u0, u1, (size_t)n * 2) != 0;
                }
            /* SSM update: every shift the models use (-2 .. 2 in the shipped ones) and the
             * fast range's ends, with the state against a large b c u of the other sign */
            static const int ssbs[] = { -32, -27, -17, -7, -2, -1, 0, 1, 2, 3, 13, 23, 30, 31, 32, 33, 43, 62 };
            for (size_t si = 0; si < sizeof ssbs / sizeof ssbs[0]; si++) {
                const int sb = ssbs[si];
                for (int i = 0; i < n; i++) {
                    s0[i] = s1[i] = p == 1 ? -XL : pick(p, (uint32_t)i, XL);    /* p 1: s against a, b, u at +max */
                    u0[i] = (int16_t)pick(p == 3 ? 0 : p, (uint32_t)i, 32767);
                    const int32_t av = pick(p, (uint32_t)i, 32767), bv = pick(3, (uint32_t)i, 32767);
                    g[1 + 2 * i] = (uint8_t)av; g[2 + 2 * i] = (uint8_t)((uint32_t)av >> 8);
                    b[1 + 2 * i] = (uint8_t)bv; b[2 + 2 * i] = (uint8_t)((uint32_t)bv >> 8);
                }
                memcpy(x2, s0, (size_t)n * 4);
                memcpy(x3, s0, (size_t)n * 4);
                atm_ek_ssm_ref(s0, g + 1, b + 1, u0, n, sb);
                atm_ek_ssm_i32(x3, g + 1, b + 1, u0, n, sb);
                badi += memcmp(s0, x3, (size_t)n * 4) != 0;
                memcpy(x3, x2, (size_t)n * 4);
                atm_ek_ssm_m3(x3, g + 1, b + 1, u0, n, sb);
                bad3 += memcmp(s0, x3, (size_t)n * 4) != 0;
                if (run5) { atm_ek_ssm_avx512(x2, g + 1, b + 1, u0, n, sb); bad5 += memcmp(s0, x2, (size_t)n * 4) != 0; }
                if (run) atm_ek_ssm_avx2(s1, g + 1, b + 1, u0, n, sb); else memcpy(s1, s0, (size_t)n * 4);
                bad[7] += memcmp(s0, s1, (size_t)n * 4) != 0;
            }
            /* attention scores: shifts on both sides of the fast range */
            for (int sbase = -70; sbase <= 100; sbase += 17) {
                const int64_t ms = p == 1 ? (1 << 30) - 1 : (int64_t)(atm_rng_u32(&rng) >> 2);
                for (int i = 0; i < n; i++) { v[i] = pick(p, (uint32_t)i, INT32_MAX); kx[i] = (uint8_t)(p == 3 ? 31 : rnd(32)); }
                atm_ek_scores_ref(v, kx, n, ms, sbase, s0);
                atm_ek_scores_m3(v, kx, n, ms, sbase, x3);
                bad3 += memcmp(s0, x3, (size_t)n * 4) != 0;
                /* dots of int8 keys and int16 queries (|.| < 2^26: the 16-bit halves' way), to the edges */
                for (int i = 0; i < n; i++) x3[i] = i % 7 == 0 ? (i & 8 ? (1 << 26) - 1 : -(1 << 26) + 1) : v[i] >> 5;
                atm_ek_scores_ref(x3, kx, n, ms, sbase, s1);
                atm_ek_scores_m3(x3, kx, n, ms, sbase, x3);
                bad3 += memcmp(s1, x3, (size_t)n * 4) != 0;
                if (run5) { atm_ek_scores_avx512(v, kx, n, ms, sbase, x2); bad5 += memcmp(s0, x2, (size_t)n * 4) != 0; }
                memcpy(s1, v, (size_t)n * 4);
                if (run) atm_ek_scores_avx2(s1, kx, n, ms, sbase, s1); else memcpy(s1, s0, (size_t)n * 4);   /* aliased */
                bad[8] += memcmp(s0, s1, (size_t)n * 4) != 0;
            }
        }
    static const char *names[9] = { "addsc", "scale", "quant32", "quant16", "ln_stats", "ln_center", "ln_out", "ssm", "scores" };
    for (int k = 0; k < 9; k++) {
        CHECKF(bad[k] == 0, "%s: AVX2 differs from the twin in %d of %d lengths x patterns", names[k], bad[k], cases);
        CHECKF(bad_def[k] == 0, "%s: twin differs from its definition in %d entries", names[k], bad_def[k]);
    }
    CHECKF(bad5 == 0, "AVX-512 elementwise kernels differ from the twins in %d cases", bad5);
    CHECKF(badi == 0, "32-bit addsc / scale / quant32 / quant16 / ln_stats / ln_center / ln_out / ssm (the Cortex-M0 set) differ from the twins in %d cases", badi);
    CHECKF(bad3 == 0, "the Cortex-M3 set's addsc / scale / ln_out / ssm / scores differ from the twins in %d cases", bad3);
    free(x3); free(u3);
    printf("elementwise: AVX2 %s, AVX-512 %s\n", run ? "tested" : "not on this CPU", run5 ? "tested" : "not on this CPU");
    free(x0); free(x1); free(x2); free(v); free(s0); free(s1); free(u0); free(u1); free(u2); free(q0); free(q1); free(g); free(b); free(kx);
}

/* ATOME02 -> ATOME01 re-encoding: against the definition (base-3 digits
 * d, trit d - 1, ATOME01 code), every byte value including the invalid
 * ones (read as zero trits), group offsets, payload ends inside a group */
static void test_recode(void) {
#if defined(__ARM_ARCH_6M__)
    printf("recode: not built for this target\n");
#else
    const int run = atm_ek_x86_supported(ATM_KERNEL_AVX2), run5 = atm_ek_x86_supported(ATM_KERNEL_AVX512);
    uint8_t *p = malloc(1024), *o0 = malloc(1300), *o1 = malloc(1300);
    int bad_def = 0, bad = 0, bad5 = 0, cases = 0;
    for (int rep = 0; rep < 40; rep++) {
        const uint32_t nbytes = rep == 0 ? 256 : 1 + rnd(1000);
        for (uint32_t i = 0; i < nbytes; i++) p[i] = (uint8_t)(rep == 0 ? i : (rnd(8) == 0 ? 243 + rnd(13) : rnd(243)));
        const uint32_t g0 = rnd(nbytes / 4 + 1), ng = 1 + rnd(nbytes / 4 + 3 - g0);   /* may run past the payload */
        memset(o0, 0xEE, 1300); memset(o1, 0xEE, 1300);
        atm_ek_t5_to_t2_ref(p, nbytes, g0, ng, o0);
        if (run) atm_ek_t5_to_t2_avx2(p, nbytes, g0, ng, o1); else memcpy(o1, o0, 1300);
        bad += memcmp(o0, o1, 1300) != 0;                    /* nothing written past 5 ng either */
        if (run5) {
            memset(o1, 0xEE, 1300);
            atm_ek_t5_to_t2_avx512(p, nbytes, g0, ng, o1);
            bad5 += memcmp(o0, o1, 1300) != 0;
        }
        for (uint32_t t = 0; t < 20 * ng; t++) {
            const uint32_t gt = 20 * g0 + t, byte = gt / 5;
            int want = 0;
            if (byte < nbytes && p[byte] < 243) {
                int v = p[byte];
                for (uint32_t k = 0; k < gt % 5; k++) v /= 3;
                want = v % 3 - 1;
            }
            bad_def += naive_trit(o0, t) != want;
        }
        for (uint32_t i = 5 * ng; i < 1300; i++) bad_def += o0[i] != 0xEE;
        cases++;
    }
    CHECKF(bad_def == 0, "recode twin differs from the definition in %d trits", bad_def);
    CHECKF(bad == 0, "recode AVX2 differs in %d of %d cases", bad, cases);
    CHECKF(bad5 == 0, "recode AVX-512 differs in %d of %d cases", bad5, cases);
    free(p); free(o0); free(o1);
#endif
}

/* the engine's softmax (exponentials kept) against fixmath's */
/* Attention's kept set against the sorted insertion the engine used before
 * (the k best by score, the older first among equal ones): the same set of
 * indices, with heavy ties, every k, lengths to 256. */
static void test_topk(void) {
    int bad = 0, cases = 0, bad2 = 0, cases2 = 0;
    const int have2 = atm_ek_x86_supported(ATM_KERNEL_AVX2);
    int32_t sc[256], scratch[256], ss[256], st[256], rs[256], ri[256];
    for (int it = 0; it < 4000; it++) {
        const int n = 1 + (int)rnd(it < 2000 ? 40 : 256), k = 1 + (int)rnd((uint32_t)n);
        const uint32_t span = it % 4 == 0 ? 3u : (it % 4 == 1 ? 50u : 0u);
        for (int i = 0; i < n; i++)
            sc[i] = span ? (int32_t)rnd(span) - 1 : (int32_t)((int64_t)atm_rng_u32(&rng) - 2147483648LL) / (it % 3 + 1);
        if (it % 7 == 0) for (int i = 0; i < n; i++) sc[i] = i % 2 ? XL : -XL;   /* the clamp's values */
        if (it % 11 == 0) sc[rnd((uint32_t)n)] = INT32_MIN;                  /* refused by the AVX2 ranks */
        int cnt = 0;
        for (int j = 0; j < n; j++) {
            int pos;
            if (cnt < k) pos = cnt++;
            else if (sc[j] > rs[k - 1]) pos = k - 1;
            else continue;
            while (pos > 0 && rs[pos - 1] < sc[j]) { rs[pos] = rs[pos - 1]; ri[pos] = ri[pos - 1]; pos--; }
            rs[pos] = sc[j]; ri[pos] = j;
        }
        atm_ek_topk_set(sc, n, k, scratch, ss, st);
        uint8_t in_ref[256] = { 0 };
        for (int i = 0; i < k; i++) in_ref[ri[i]] = 1;
        int same = 1;
        for (int i = 0; i < k; i++) same &= in_ref[st[i]] && ss[i] == sc[st[i]] && (i == 0 || st[i] > st[i - 1]);
        bad += !same;
        /* the AVX2 ranks: the same outputs for n <= 64, nothing written beyond */
        if (have2) {
            int32_t as[257], at[257];
            for (int i = 0; i < 257; i++) as[i] = at[i] = 0x5A5A5A5A;
            const int r = atm_ek_topk_avx2(sc, n, k, as, at);
            int has_min = 0;
            for (int i = 0; i < n; i++) has_min |= sc[i] == INT32_MIN;
            if (n <= 64 && !has_min) bad2 += r != 0 || memcmp(as, ss, (size_t)k * 4) != 0 || memcmp(at, st, (size_t)k * 4) != 0 ||
                                 as[k] != 0x5A5A5A5A || at[k] != 0x5A5A5A5A;
            else bad2 += r != -1 || as[0] != 0x5A5A5A5A;
            cases2++;
        }
        cases++;
    }
    CHECKF(bad == 0, "top-k set differs from the sorted insertion in %d of %d cases", bad, cases);
    CHECKF(bad2 == 0, "AVX2 top-k differs from the selection in %d of %d cases", bad2, cases2);
    CHECK(cases2 > 0 || !have2);
}

static void test_softmax(void) {
    int32_t z[64], p0[64], p1[64];
    uint32_t e[64];
    int bad = 0, bad2 = 0, bad3 = 0, cases = 0;
    const int run = atm_ek_x86_supported(ATM_KERNEL_AVX2);
    for (int n = 1; n <= 64; n++)
        for (int p = 0; p < 8; p++) {
            /* p 6: the int32 extremes (differences past 2^31); p 7: around 2^21 below the max */
            for (int i = 0; i < n; i++)
                z[i] = p < 4 ? pick(p, (uint32_t)i, (1 << 30) - 1) : (p == 4 ? pick(0, (uint32_t)i, 1 << 20) : p == 5 ? 7
                       : p == 6 ? (i % 3 == 0 ? INT32_MAX : (i % 3 == 1 ? INT32_MIN : 0))
                                : (i == 0 ? 0 : -(1 << 21) - 2 + (int32_t)rnd(5)));
            atm_softmax_q15(z, n, p0);
            memcpy(p1, z, sizeof z);
            atm_ek_softmax_q15(p1, n, p1, e);                     /* aliased, as the engine calls it */
            bad += memcmp(p0, p1, (size_t)n * 4) != 0;
            for (int f = 0; f < 2; f++) {                          /* the M0 and M3 versions */
                uint32_t e3[64];
                memcpy(p1, z, sizeof z);
                (f ? atm_ek_softmax_w : atm_ek_softmax_h)(p1, n, p1, e3);
                bad3 += memcmp(p0, p1, (size_t)n * 4) != 0 || memcmp(e, e3, (size_t)n * 4) != 0;
            }
            if (run) {
                uint32_t e2[64];
                memcpy(p1, z, sizeof z);
                atm_ek_softmax_avx2(p1, n, p1, e2);
                bad2 += memcmp(p0, p1, (size_t)n * 4) != 0 || memcmp(e, e2, (size_t)n * 4) != 0;
            }
            cases++;
        }
    /* the AVX2 exponentials against atm_exp_q16 over every x in [-2^22, 0]
     * and random ones down to INT32_MIN + 1 (the exps are softmax's e[]) */
    if (run) {
        int bade = 0;
        for (int64_t x0 = 0; x0 > -((int64_t)1 << 22) - 8; x0 -= 7) {
            int32_t zz[8], pp[8];
            uint32_t ee[8];
            zz[0] = 0;
            for (int i = 1; i < 8; i++) zz[i] = (int32_t)(x0 - i);
            if (x0 % 3 == 0) zz[1] = INT32_MIN + 1 + (int32_t)rnd(1u << 30);
            atm_ek_softmax_avx2(zz, 8, pp, ee);
            for (int i = 0; i < 8; i++) bade += ee[i] != atm_exp_q16(zz[i]);
        }
        CHECKF(bade == 0, "AVX2 exponentials differ from atm_exp_q16 in %d cases", bade);
    }
    /* the M0 and M3 exponentials against atm_exp_q16: every x in [-2^22, 0]
     * (the rounding at every n and the cut-offs at -2^21 and n = -27) and
     * random ones down to INT32_MIN */
    int bade3 = 0;
    for (int32_t x = 0; x >= -(1 << 22); x--) {
        const uint32_t r = atm_exp_q16(x);
        bade3 += atm_ek_exp_q16_h(x) != r || atm_ek_exp_q16_w(x) != r;
    }
    for (int i = 0; i < 100000; i++) {
        const int32_t x = (int32_t)atm_rng_u32(&rng);
        bade3 += atm_ek_exp_q16_h(x) != atm_exp_q16(x) || atm_ek_exp_q16_w(x) != atm_exp_q16(x);
    }
    bade3 += atm_ek_exp_q16_h(INT32_MIN) != 0 || atm_ek_exp_q16_w(INT32_MIN) != 0;
    CHECKF(bade3 == 0, "the M0 / M3 exponentials differ from atm_exp_q16 in %d cases", bade3);
    CHECKF(bad3 == 0, "the M0 / M3 softmax differs from atm_softmax_q15 in %d of %d cases", bad3, 2 * cases);
    CHECKF(bad == 0, "softmax differs from atm_softmax_q15 in %d of %d cases", bad, cases);
    CHECKF(bad2 == 0, "AVX2 softmax differs from the twin in %d of %d cases", bad2, cases);
}

static void test_conv(void) {
    const int run = atm_ek_x86_supported(ATM_KERNEL_AVX2);
    static const int Ks[] = { 1, 2, 3, 5, 8, 17, 64 };
    int8_t *t = malloc(64 * 1024 + 16), *ring = malloc(63 * 1027);
    int16_t *u = malloc(1024 * 2);
    uint8_t rexp[63];
    int32_t *a0 = malloc(1024 * 4), *a1 = malloc(1024 * 4);
    int bad = 0, bad_def = 0, bad_m0 = 0, cases = 0;
    for (size_t ki = 0; ki < sizeof Ks / sizeof Ks[0]; ki++)
        for (int li = 0; li < NLENS; li++)
            for (int p = 0; p < 4; p++) {
                const int K = Ks[ki], nc = lens[li], kh = K - 1;
                if (nc * K > 64 * 1024) continue;
                const int ld = nc + 3;                      /* ring rows wider than the channel chunk */
                for (int i = 0; i < nc * K + 16; i++) t[i] = (int8_t)(p == 1 ? 1 : (p == 2 ? -1 : (int)rnd(3) - 1));
                for (int i = 0; i < nc; i++) u[i] = (int16_t)pick(p, (uint32_t)i, 32767);
                for (int i = 0; i < kh * ld; i++) ring[i] = (int8_t)pick(p, (uint32_t)i, 127);
                for (int i = 0; i < kh; i++) rexp[i] = (uint8_t)(p == 3 ? 9 : rnd(10));
                for (int taps = 1; taps <= K; taps++) {
                    const int next = kh ? (int)rnd((uint32_t)kh) : 0;
                    atm_ek_conv_ref(t, K, nc, u, ring, ld, rexp, next, kh, taps, a0);
                    for (int c = 0; c < nc; c++) {
                        int64_t sum = (int64_t)t[c * K] * u[c];
                        for (int j = 1; j < taps; j++) {
                            const int sl = ((next - j) % kh + kh) % kh;
                            sum += (int64_t)t[c * K + j] * ring[sl * ld + c] * ((int64_t)1 << rexp[sl]);
                        }
                        bad_def += sum != a0[c];
                    }
                    if (run) {
                        atm_ek_conv_avx2(t, K, nc, u, ring, ld, rexp, next, kh, taps, a1);
                        bad += memcmp(a0, a1, (size_t)nc * 4) != 0;
                    }
                    memset(a1, 0x5A, (size_t)nc * 4);
                    atm_ek_conv_m0(t, K, nc, u, ring, ld, rexp, next, kh, taps, a1);
                    bad_m0 += memcmp(a0, a1, (size_t)nc * 4) != 0;
                    cases++;
                }
            }
    CHECKF(bad_def == 0, "conv twin differs from its definition in %d entries", bad_def);
    CHECKF(bad == 0, "conv AVX2 differs in %d of %d cases", bad, cases);
    CHECKF(bad_m0 == 0, "conv of the Cortex-M0 set differs in %d of %d cases", bad_m0, cases);
    free(t); free(ring); free(u); free(a0); free(a1);
}

/* ---- engine level ---- */

static uint8_t *export_random(int d, int L, int dh, int K, int tk, int pw, int V, int enc, uint32_t seed,
                              size_t *len) {
    atm_config c;
    CHECK(atm_config_by_name("atome-60k", &c) == 0);
    c.vocab = V; c.d_model = d; c.n_layers = L; c.d_head = dh; c.kernel = K; c.top_k = tk; c.pathways = pw;
    atm_layout lay;
    CHECK(atm_layout_build(&c, &lay) == 0);
    float *w = malloc(sizeof(float) * lay.n_params);
    atm_rng r;
    atm_rng_seed(&r, seed);
    atm_init_params(&lay, w, &r);
    /* move LN gains and SSM decays off their constant init (as training does) */
    for (int i = 0; i < lay.n_tensors; i++) {
        const atm_tensor *t = &lay.t[i];
        if (t->kind != ATM_TK_FP32) continue;
        for (int j = 0; j < t->rows * t->cols; j++) {
            const float u = (float)(atm_rng_u32(&r) >> 8) / 16777216.0f - 0.5f;
            if (strstr(t->name, "a_raw")) w[t->off + j] = 2.5f * u + (j % 5 == 0 ? -1.5f : 1.5f);
            else if (strstr(t->name, ".g")) w[t->off + j] += 0.6f * u;
        }
    }
    atm_export_opts o = { enc, 64, 64, NULL };
    uint8_t *out = NULL;
    char err[256];
    CHECKF(atm_export_atome(&lay, w, &o, &out, len, err, sizeof err) == 0, "export: %s", err);
    free(w);
    return out;
}

/* atm_ek_argmax_scaled against scaling every value and taking the first
 * maximum, with each set's scale: values drawn from narrow and wide ranges
 * (many ties before and after the scale) and scales that keep them apart,
 * merge neighbours (mul / 2^s < 1) or clamp them all */
static int first_max(const int32_t *v, int n) {
    int b = 0;
    for (int i = 1; i < n; i++) if (v[i] > v[b]) b = i;
    return b;
}
static void test_argmax_scaled(void) {
    typedef void (*scfn)(int32_t *, int, int32_t, int);
    const scfn fns[] = { atm_ek_scale_ref, atm_ek_scale_i32, atm_ek_scale_m3, atm_ek_scale_avx2, atm_ek_scale_avx512 };
    const int have[] = { 1, 1, 1, atm_ek_x86_supported(ATM_KERNEL_AVX2), atm_ek_x86_supported(ATM_KERNEL_AVX512) };
    int32_t v[256], w[256];
    int bad = 0, cases = 0, moved = 0;
    for (int it = 0; it < 4000; it++) {
        const int n = 1 + (int)rnd(256);
        const int32_t span = it % 4 == 0 ? 4 : it % 4 == 1 ? 1000 : it % 4 == 2 ? (1 << 20) : (1 << 30) - 1;
        for (int i = 0; i < n; i++) v[i] = (int32_t)rnd(2u * (uint32_t)span + 1u) - span;
        const int sh = 1 + (int)rnd(31);
        const int32_t mul = it % 3 == 0 ? 1 + (int32_t)rnd(8) : (int32_t)(1 + rnd(0x7FFFFFFEu));
        memcpy(w, v, (size_t)n * 4);
        atm_ek_scale_ref(w, n, mul, sh);
        const int want = first_max(w, n);
        moved += want != first_max(v, n);   /* the scale's ties decide */
        for (size_t f = 0; f < sizeof fns / sizeof fns[0]; f++) {
            if (!have[f]) continue;
            cases++;
            bad += atm_ek_argmax_scaled(v, n, mul, sh, fns[f]) != want;
        }
    }
    CHECKF(bad == 0, "atm_ek_argmax_scaled differs from scale-then-argmax in %d of %d cases", bad, cases);
    CHECKF(moved > 100, "only %d cases where the scale's ties move the maximum", moved);
    printf("argmax_scaled: %d cases, %d where the scale moves the first maximum\n", cases, moved);
}

static void test_engine_sets(void) {
    static const struct { int d, L, dh, K, tk, pw, V, W; } S[] = {
        { 64, 2, 16, 5, 4, 7, 256, 64 },     /* atome-60k's widths */
        { 128, 1, 32, 4, 8, 7, 256, 20 },    /* widest for the pair-sum table */
        { 192, 1, 48, 5, 4, 7, 256, 9 },     /* a multiple of 64 beyond the table */
        { 68, 2, 17, 3, 3, 7, 256, 16 },     /* a multiple of 4 only: partial chunks */
        { 37, 1, 11, 3, 2, 7, 200, 8 },      /* odd: the decode path */
        { 20, 2, 8, 5, 4, 4, 97, 12 },       /* attention only, small vocabulary */
    };
    static const int sets[] = { ATM_KERNEL_LUT, ATM_KERNEL_SSE2, ATM_KERNEL_AVX2, ATM_KERNEL_AVX512, ATM_KERNEL_PLANES };
    static uint8_t text[160];
    for (size_t i = 0; i < sizeof text; i++) text[i] = (uint8_t)("Once upon a time, a small robot "[i % 32] + (i / 32));
    for (size_t s = 0; s < sizeof S / sizeof S[0]; s++)
        for (int enc = ATM_ENC_ATOME01; enc <= ATM_ENC_ATOME02; enc++) {
            size_t len = 0;
            uint8_t *blob = export_random(S[s].d, S[s].L, S[s].dh, S[s].K, S[s].tk, S[s].pw, S[s].V, enc,
                                          50 + (uint32_t)s, &len);
            if (!blob) continue;
            atm_model m;
            CHECK(atm_model_open(&m, blob, len) == ATM_OK);
            const size_t ab = atm_engine_arena_bytes(&m, S[s].W);
            void *a0 = malloc(ab), *a1 = malloc(ab);
            atm_engine e0, e1;
            CHECK(atm_engine_init(&e0, &m, S[s].W, a0, ab) == ATM_OK);
            CHECK(atm_engine_set_kernel(&e0, ATM_KERNEL_PORTABLE) == 0);
            CHECK(atm_engine_kernel(&e0) == ATM_KERNEL_PORTABLE);
            int32_t *ref = malloc(sizeof text * 256 * sizeof(int32_t));
            for (size_t t = 0; t < sizeof text; t++)
                memcpy(ref + 256 * t, atm_engine_step(&e0, text[t]), (size_t)S[s].V * sizeof(int32_t));
            char ran[64] = "";
            for (size_t k = 0; k < sizeof sets / sizeof sets[0]; k++) {
                CHECK(atm_engine_init(&e1, &m, S[s].W, a1, ab) == ATM_OK);
                if (atm_engine_set_kernel(&e1, sets[k]) != 0) continue;   /* not in this build / CPU */
                int same = 1;
                for (size_t t = 0; t < sizeof text; t++)
                    same &= memcmp(ref + 256 * t, atm_engine_step(&e1, text[t]), (size_t)S[s].V * sizeof(int32_t)) == 0;
                CHECKF(same, "d=%d enc %d: kernel set %d differs from portable", S[s].d, enc, sets[k]);
                /* the same positions through feed (no head), argmax (greedy's
                 * byte: the first maximum of the logits) and step, in turn:
                 * the state stays the same and argmax picks the same byte */
                CHECK(atm_engine_init(&e1, &m, S[s].W, a1, ab) == ATM_OK);
                CHECK(atm_engine_set_kernel(&e1, sets[k]) == 0);
                int bad = 0;
                for (size_t t = 0; t < sizeof text; t++) {
                    const int32_t *l = ref + 256 * t;
                    if (t % 3 == 0) bad += atm_engine_feed(&e1, text[t]) != 0;
                    else if (t % 3 == 1) {
                        int b = 0;
                        for (int v = 1; v < S[s].V; v++) if (l[v] > l[b]) b = v;
                        bad += atm_engine_step_argmax(&e1, text[t]) != b;
                    } else bad += memcmp(l, atm_engine_step(&e1, text[t]), (size_t)S[s].V * sizeof(int32_t)) != 0;
                }
                CHECKF(bad == 0, "d=%d enc %d set %d: feed / argmax steps differ from step in %d positions",
                       S[s].d, enc, sets[k], bad);
                snprintf(ran + strlen(ran), sizeof ran - strlen(ran), " %d->%d", sets[k], atm_engine_kernel(&e1));
            }
            printf("engine d=%-3d enc %d W %-2d: sets (asked->used)%s\n", S[s].d, enc, S[s].W, ran);
            free(ref); free(a0); free(a1); free(blob);
        }
}

/* The portable row product straight from the payload bytes against its
 * twin through the decode buffer and a naive per-trit sum, both encodings,
 * every start trit within a byte, odd lengths and lengths over one chunk. */
static int naive_trit5(const uint8_t *b, uint32_t i) {
    const unsigned v = b[i / 5u];
    if (v >= 243) return 0;
    unsigned d = v;
    for (uint32_t k = 0; k < i % 5u; k++) d /= 3u;
    return (int)(d % 3u) - 1;
}
static void test_rowdot(void) {
    static const int ns[] = { 1, 2, 3, 4, 5, 6, 7, 9, 15, 63, 64, 65, 127, 128, 129, 255, 1021, 1024 };
    static uint8_t b[1100];
    static int16_t x[1030];
    int bad = 0, bad_def = 0, cases = 0;
    for (int rep = 0; rep < 40; rep++) {
        const int p = rep % 4;
        for (unsigned i = 0; i < sizeof b; i++) b[i] = (uint8_t)rnd(256);   /* ATOME02: any byte, 243.. included */
        for (int i = 0; i < 1030; i++) x[i] = (int16_t)pick(p, (uint32_t)i, 32767);
        for (unsigned k = 0; k < sizeof ns / sizeof ns[0]; k++) {
            const int n = ns[k];
            for (int enc = 0; enc < 2; enc++) {
                const int e = enc ? ATM_ENC_ATOME02 : ATM_ENC_ATOME01;
                if (!enc) fill_trits(b, sizeof b, p);
                for (int skip = 0; skip < (enc ? 5 : 4); skip++) {
                    const int32_t f = atm_ek_rowdot(b, skip, n, x, e), r = atm_ek_rowdot_ref(b, skip, n, x, e);
                    int32_t d = 0;
                    for (int i = 0; i < n; i++)
                        d += (enc ? naive_trit5(b, (uint32_t)(skip + i)) : naive_trit(b, (uint32_t)(skip + i))) * x[i];
                    bad += f != r;
                    bad_def += r != d;
                    cases++;
                }
            }
        }
    }
    CHECKF(bad_def == 0, "rowdot twin differs from the naive sum in %d of %d cases", bad_def, cases);
    CHECKF(bad == 0, "rowdot differs from its twin in %d of %d cases", bad, cases);
}

int main(void) {
    atm_rng_seed(&rng, 12345);
    test_matvec();
    test_dots_mix();
    test_elementwise();
    test_topk();
    test_softmax();
    test_recode();
    test_rowdot();
    test_conv();
    test_argmax_scaled();
    test_engine_sets();
    return CHECK_DONE();
}
