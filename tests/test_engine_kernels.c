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
#include "../core/engine.h"
#include "../core/engine_kernels.h"
#include "../core/train/export.h"
#include "../core/train/model.h"
#include "../core/rng.h"
#include <string.h>

#ifndef ATM_EK_X86
/* no x86 kernels in this build: the twins are still checked, the engine
 * sets of this target still compared */
typedef struct { int unused; } atm_ek_vec;
static int atm_ek_x86_supported(int k) { (void)k; return 0; }
#define atm_ek_prep_avx2(x, c, v) ((void)0)
#define atm_ek_prep_avx512(x, c, v) ((void)0)
#define atm_ek_matvec_avx2(b, r, c, v, o) ((void)0)
#define atm_ek_matvec_avx512(b, r, c, v, o) ((void)0)
#define atm_ek_dots_avx2(q, k, dh, n, o) ((void)0)
#define atm_ek_mix_avx2(w, r, n, d, o) ((void)0)
#endif

static atm_rng rng;
static uint32_t rnd(uint32_t n) { return atm_rng_u32(&rng) % n; }

/* value pattern p: 0 random, 1 all max, 2 all min, 3 alternating extremes */
static int32_t pick(int p, uint32_t i, int32_t lim) {
    switch (p) {
    case 1: return lim;
    case 2: return -lim;
    case 3: return (i & 1) ? lim : -lim;
    default: return (int32_t)rnd(2u * (uint32_t)lim + 1u) - lim;
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
    uint8_t *mem = malloc(33 * 256 + 1);
    int16_t x[1024];
    int32_t ref[33], got[33], naive[33];
    atm_ek_vec *v = malloc(sizeof *v);
    int bad_ref = 0, bad2 = 0, bad5 = 0, cases = 0;
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
                if (have2) {
                    memset(v, 0x5A, sizeof *v);        /* the prep must write everything the kernel reads */
                    atm_ek_prep_avx2(x, cols, v);
                    atm_ek_matvec_avx2(b, rows, cols, v, got);
                    bad2 += memcmp(ref, got, rows * sizeof(int32_t)) != 0;
                }
                if (have5) {
                    memset(v, 0xA5, sizeof *v);
                    atm_ek_prep_avx512(x, cols, v);
                    atm_ek_matvec_avx512(b, rows, cols, v, got);
                    bad5 += memcmp(ref, got, rows * sizeof(int32_t)) != 0;
                }
                cases++;
            }
    CHECKF(bad_ref == 0, "matvec ref differs from the naive sum in %d of %d cases", bad_ref, cases);
    CHECKF(bad2 == 0, "matvec AVX2 differs in %d of %d cases", bad2, cases);
    CHECKF(bad5 == 0, "matvec AVX-512 differs in %d of %d cases", bad5, cases);
    free(v);
    free(mem);
}

static void test_dots_mix(void) {
    static const int dhs[] = { 1, 5, 15, 16, 17, 31, 32, 33, 48, 63, 64, 65, 100, 512 };
    static const int ns[] = { 1, 2, 7, 8, 9, 15, 16, 17, 64, 65 };
    const int have2 = atm_ek_x86_supported(ATM_KERNEL_AVX2);
    int16_t q[512];
    int8_t *k = malloc(65 * 512 + 1);
    int32_t ref[65], got[65];
    int bad_ref = 0, bad = 0, cases = 0;
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
                cases++;
            }
    CHECKF(bad_ref == 0, "dots ref wrong in %d entries", bad_ref);
    CHECKF(bad == 0, "dots AVX2 differs in %d of %d cases", bad, cases);
    free(k);

    static const int ds[] = { 1, 7, 8, 9, 15, 16, 17, 63, 64, 65, 1024 };
    static const int ms[] = { 1, 2, 3, 4, 5, 8, 64 };
    int8_t *rows_mem = malloc(64 * 1024 + 1);
    const int8_t *rows[64];
    int32_t w[64], *mref = malloc(1024 * sizeof(int32_t)), *mgot = malloc(1024 * sizeof(int32_t));
    bad_ref = bad = cases = 0;
    for (size_t di = 0; di < sizeof ds / sizeof ds[0]; di++)
        for (size_t mi = 0; mi < sizeof ms / sizeof ms[0]; mi++)
            for (int p = 0; p < 4; p++) {
                const int d = ds[di], n = ms[mi];
                int8_t *base = rows_mem + (p & 1);
                for (int i = 0; i < n; i++) {
                    rows[n - 1 - i] = base + (size_t)i * (size_t)d;   /* rows in any order */
                    for (int c = 0; c < d; c++) base[(size_t)i * (size_t)d + (size_t)c] = (int8_t)pick(p, (uint32_t)c, 127);
                }
                /* weights: sum |w| <= 2^15, one weight of exactly 2^15 when n = 1 */
                int32_t left = 32768;
                for (int i = 0; i < n; i++) {
                    w[i] = i == n - 1 ? left : (int32_t)rnd((uint32_t)left / 2u + 1u);
                    left -= w[i];
                    if (p == 2 || (p == 3 && (i & 1))) w[i] = -w[i];
                }
                atm_ek_mix_ref(w, rows, n, d, mref);
                for (int c = 0; c < d; c++) {
                    int64_t s = 0;
                    for (int i = 0; i < n; i++) s += (int64_t)w[i] * rows[i][c];
                    bad_ref += s != mref[c];
                }
                if (have2) {
                    atm_ek_mix_avx2(w, rows, n, d, mgot);
                    bad += memcmp(mref, mgot, (size_t)d * sizeof(int32_t)) != 0;
                }
                cases++;
            }
    CHECKF(bad_ref == 0, "mix ref wrong in %d entries", bad_ref);
    CHECKF(bad == 0, "mix AVX2 differs in %d of %d cases", bad, cases);
    free(rows_mem); free(mref); free(mgot);
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

static void test_engine_sets(void) {
    static const struct { int d, L, dh, K, tk, pw, V, W; } S[] = {
        { 64, 2, 16, 5, 4, 7, 256, 64 },     /* atome-60k's widths */
        { 128, 1, 32, 4, 8, 7, 256, 20 },    /* widest for the pair-sum table */
        { 192, 1, 48, 5, 4, 7, 256, 9 },     /* a multiple of 64 beyond the table */
        { 68, 2, 17, 3, 3, 7, 256, 16 },     /* a multiple of 4 only: partial chunks */
        { 37, 1, 11, 3, 2, 7, 200, 8 },      /* odd: the decode path */
        { 20, 2, 8, 5, 4, 4, 97, 12 },       /* attention only, small vocabulary */
    };
    static const int sets[] = { ATM_KERNEL_LUT, ATM_KERNEL_SSE2, ATM_KERNEL_AVX2, ATM_KERNEL_AVX512 };
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
                snprintf(ran + strlen(ran), sizeof ran - strlen(ran), " %d->%d", sets[k], atm_engine_kernel(&e1));
            }
            printf("engine d=%-3d enc %d W %-2d: sets (asked->used)%s\n", S[s].d, enc, S[s].W, ran);
            free(ref); free(a0); free(a1); free(blob);
        }
}

int main(void) {
    atm_rng_seed(&rng, 12345);
    test_matvec();
    test_dots_mix();
    test_engine_sets();
    return CHECK_DONE();
}
