/* tests/test_kernels.c — every matmul kernel set available on this machine
 * (ref, avx2, avx512, ...) against a double-precision product, on odd and
 * real shapes; plus the layers.h contract (forward overwrites, backward
 * accumulates, NULL gradients honoured), no access outside the buffers,
 * bitwise determinism independent of alignment, and the dispatcher.
 *
 * Tolerance. Any order of summing K+1 float terms (with or without fused
 * multiply-add) has an error of at most gamma = (K+1)u / (1-(K+1)u) times
 * M = sum of the magnitudes of the terms, u = 2^-24 (Higham, "Accuracy and
 * Stability of Numerical Algorithms", 3.1). K is the reduction length (IC for
 * the forward, OC for dinp, N for dw) and the +1 is the accumulated initial
 * value. The check |got - exact| <= gamma * M cannot fail for a correct
 * kernel whatever its blocking, yet a kernel that drops or repeats a single
 * term (error ~ M/K) fails it while K < ~4000: every shape here has K <= 1008,
 * where gamma * M ~ 6e-5 M against M/K >= 1e-3 M. */
#include "guardbuf.h"
#include "check.h"
#include "core/train/kernels.h"
#include "core/rng.h"
#include <stdint.h>
#include <string.h>

static atm_rng g_rng;
static float frand(void) { return (float)((double)atm_rng_u32(&g_rng) / 2147483648.0 - 1.0); }
static void fill(float *x, size_t n) { for (size_t i = 0; i < n; i++) x[i] = frand(); }

/* Output buffers get GUARD floats of a sentinel on both sides. */
#define GUARD 32
static float *out_new(size_t n) {
    float *b = malloc((n + 2 * GUARD) * sizeof(float));
    for (size_t i = 0; i < n + 2 * GUARD; i++) b[i] = 1234.5f;
    return b + GUARD;
}
static int guards_ok(const float *p, size_t n) {
    for (int i = 1; i <= GUARD; i++) if (p[-i] != 1234.5f || p[n + i - 1] != 1234.5f) return 0;
    return 1;
}
static void out_free(float *p) { free(p - GUARD); }

#define U 5.9604644775390625e-8 /* 2^-24 */
static double gamma_k(int k) { double t = (k + 1) * U; return t / (1.0 - t); }

typedef struct {
    int N, IC, OC;
    gbuf inp, w, dout;        /* [N][IC], [OC][IC], [N][OC] */
    float *di0, *dw0;         /* initial gradients [N][IC], [OC][IC] */
    double *fx, *fm;          /* exact forward and magnitudes [N][OC] */
    double *dix, *dim;        /* exact dinp = di0 + dout.w, magnitudes */
    double *dwx, *dwm;        /* exact dw = dw0 + dout^T.inp, magnitudes */
} problem;

static void problem_new(problem *p, int N, int IC, int OC) {
    size_t ni = (size_t)N * IC, nw = (size_t)OC * IC, no = (size_t)N * OC;
    p->N = N; p->IC = IC; p->OC = OC;
    p->inp = gb_new(ni); p->w = gb_new(nw); p->dout = gb_new(no);
    fill(p->inp.p, ni); fill(p->w.p, nw); fill(p->dout.p, no);
    p->di0 = malloc((ni + 1) * sizeof(float)); fill(p->di0, ni);
    p->dw0 = malloc((nw + 1) * sizeof(float)); fill(p->dw0, nw);
    p->fx = calloc(no + 1, sizeof(double)); p->fm = calloc(no + 1, sizeof(double));
    p->dix = calloc(ni + 1, sizeof(double)); p->dim = calloc(ni + 1, sizeof(double));
    p->dwx = calloc(nw + 1, sizeof(double)); p->dwm = calloc(nw + 1, sizeof(double));
    const float *x = p->inp.p, *w = p->w.p, *d = p->dout.p;
    for (size_t i = 0; i < ni; i++) { p->dix[i] = p->di0[i]; p->dim[i] = fabs(p->di0[i]); }
    for (size_t i = 0; i < nw; i++) { p->dwx[i] = p->dw0[i]; p->dwm[i] = fabs(p->dw0[i]); }
    for (int n = 0; n < N; n++)
        for (int o = 0; o < OC; o++) {
            double g = d[(size_t)n * OC + o], s = 0.0, m = 0.0;
            for (int i = 0; i < IC; i++) {
                double xi = x[(size_t)n * IC + i], wi = w[(size_t)o * IC + i];
                s += xi * wi; m += fabs(xi * wi);
                p->dix[(size_t)n * IC + i] += g * wi; p->dim[(size_t)n * IC + i] += fabs(g * wi);
                p->dwx[(size_t)o * IC + i] += g * xi; p->dwm[(size_t)o * IC + i] += fabs(g * xi);
            }
            p->fx[(size_t)n * OC + o] = s; p->fm[(size_t)n * OC + o] = m;
        }
}

static void problem_free(problem *p) {
    gb_free(&p->inp); gb_free(&p->w); gb_free(&p->dout);
    free(p->di0); free(p->dw0); free(p->fx); free(p->fm);
    free(p->dix); free(p->dim); free(p->dwx); free(p->dwm);
}

/* Count of elements outside gamma_k * magnitude; reports the worst one. */
static int count_bad(const char *what, const char *set, const problem *p, const float *got,
                     const double *ex, const double *mag, size_t n, int k) {
    double g = gamma_k(k), worst = 0.0;
    size_t wi = 0;
    int bad = 0;
    for (size_t i = 0; i < n; i++) {
        double e = fabs((double)got[i] - ex[i]), lim = g * mag[i];
        if (!(e <= lim)) bad++;
        double r = lim > 0 ? e / lim : (e > 0 ? INFINITY : 0.0);
        if (!(r <= worst)) { worst = r; wi = i; }
    }
    if (bad)
        fprintf(stderr, "%s %s N=%d IC=%d OC=%d: %d bad; worst [%zu] got %.9g exact %.9g (%.3g x bound)\n",
                set, what, p->N, p->IC, p->OC, bad, wi, got[wi], ex[wi], worst);
    return bad;
}

static void check_set(const atm_kernel_set *ks, const problem *p) {
    int N = p->N, IC = p->IC, OC = p->OC;
    size_t ni = (size_t)N * IC, nw = (size_t)OC * IC, no = (size_t)N * OC;
    float *out = out_new(no), *di = out_new(ni), *dw = out_new(nw);

    /* Forward overwrites whatever was in out (NaN here). */
    for (size_t i = 0; i < no; i++) out[i] = NAN;
    ks->forward(out, p->inp.p, p->w.p, N, IC, OC);
    CHECK(count_bad("forward", ks->name, p, out, p->fx, p->fm, no, IC) == 0);
    CHECKF(guards_ok(out, no), "%s forward wrote outside out (N=%d IC=%d OC=%d)", ks->name, N, IC, OC);

    /* Backward accumulates into the initial gradients. */
    memcpy(di, p->di0, ni * sizeof(float));
    memcpy(dw, p->dw0, nw * sizeof(float));
    ks->backward(di, dw, p->dout.p, p->inp.p, p->w.p, N, IC, OC);
    CHECK(count_bad("dinp", ks->name, p, di, p->dix, p->dim, ni, OC) == 0);
    CHECK(count_bad("dw", ks->name, p, dw, p->dwx, p->dwm, nw, N) == 0);
    CHECKF(guards_ok(di, ni) && guards_ok(dw, nw), "%s backward wrote outside (N=%d IC=%d OC=%d)",
           ks->name, N, IC, OC);

    /* NULL gradients: the other one comes out bit-identical, the missing one
     * is not touched (a call with both NULL is a no-op). */
    float *di2 = out_new(ni), *dw2 = out_new(nw);
    memcpy(di2, p->di0, ni * sizeof(float));
    memcpy(dw2, p->dw0, nw * sizeof(float));
    ks->backward(di2, NULL, p->dout.p, p->inp.p, p->w.p, N, IC, OC);
    ks->backward(NULL, dw2, p->dout.p, p->inp.p, p->w.p, N, IC, OC);
    ks->backward(NULL, NULL, p->dout.p, p->inp.p, p->w.p, N, IC, OC);
    CHECKF(memcmp(di2, di, ni * sizeof(float)) == 0, "%s dinp alone differs (N=%d IC=%d OC=%d)", ks->name, N, IC, OC);
    CHECKF(memcmp(dw2, dw, nw * sizeof(float)) == 0, "%s dw alone differs (N=%d IC=%d OC=%d)", ks->name, N, IC, OC);

    /* Determinism: the same bits again, from copies at a different alignment
     * (offset by one float). */
    float *xi = malloc((ni + 1) * sizeof(float)), *xw = malloc((nw + 1) * sizeof(float));
    float *xd = malloc((no + 1) * sizeof(float)), *xo = malloc((no + 1) * sizeof(float));
    memcpy(xi + 1, p->inp.p, ni * sizeof(float));
    memcpy(xw + 1, p->w.p, nw * sizeof(float));
    memcpy(xd + 1, p->dout.p, no * sizeof(float));
    ks->forward(xo + 1, xi + 1, xw + 1, N, IC, OC);
    CHECKF(memcmp(xo + 1, out, no * sizeof(float)) == 0, "%s forward not reproducible", ks->name);
    memcpy(di2, p->di0, ni * sizeof(float));
    memcpy(dw2, p->dw0, nw * sizeof(float));
    ks->backward(di2, dw2, xd + 1, xi + 1, xw + 1, N, IC, OC);
    CHECKF(memcmp(di2, di, ni * sizeof(float)) == 0 && memcmp(dw2, dw, nw * sizeof(float)) == 0,
           "%s backward not reproducible", ks->name);

    free(xi); free(xw); free(xd); free(xo);
    out_free(out); out_free(di); out_free(dw); out_free(di2); out_free(dw2);
}

static void check_shape(int N, int IC, int OC) {
    problem p;
    problem_new(&p, N, IC, OC);
    for (int s = 0; s < atm_kernels_count(); s++) check_set(atm_kernels_set(s), &p);
    problem_free(&p);
}

int main(void) {
    atm_rng_seed(&g_rng, 2024);

    /* The environment variable decides the first choice ("ref" is never the
     * automatic pick where a SIMD set exists, so this is not vacuous there). */
    setenv("ATOME_KERNELS", "ref", 1);
    CHECK(strcmp(atm_kernels_name(), "ref") == 0);

    int n = atm_kernels_count();
    printf("kernel sets available:");
    for (int s = 0; s < n; s++) printf(" %s", atm_kernels_set(s)->name);
    printf("\n");
    CHECK(n >= 1 && strcmp(atm_kernels_set(0)->name, "ref") == 0);
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    int want = 1 + (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) +
               (__builtin_cpu_supports("avx512f") != 0);
    CHECKF(n == want, "%d sets available, CPU supports %d", n, want);
#endif
    CHECK(atm_kernels_select("no-such-kernels") == -1);
    CHECK(strcmp(atm_kernels_name(), "ref") == 0);

    /* Every loop tail: sizes around the vector widths (8, 16), the register
     * tiles (rows 3..12, columns 16..64), the packed panel depths (128, 256),
     * the 128-row slabs of dw and the few-rows forward (N <= 4). */
    static const int small[] = { 1, 3, 5, 17 };
    for (int a = 0; a < 4; a++)
        for (int b = 0; b < 4; b++)
            for (int c = 0; c < 4; c++) check_shape(small[a], small[b], small[c]);
    static const int shapes[][3] = {
        /* the trainer's shapes: N = 16 x 63 rows */
        { 1008, 64, 64 }, { 1008, 64, 16 }, { 1008, 64, 3 }, { 1008, 64, 256 },
        { 1008, 44, 132 }, { 1008, 44, 44 }, { 1008, 44, 256 }, { 1008, 256, 64 },
        { 63, 256, 256 },
        /* odd ones */
        { 15, 15, 15 }, { 63, 63, 63 }, { 64, 64, 64 }, { 65, 65, 65 }, { 65, 257, 65 },
        { 64, 129, 15 }, { 15, 300, 17 }, { 17, 1, 63 }, { 1, 65, 1 }, { 5, 15, 129 },
        { 1008, 3, 5 }, { 13, 7, 200 }, { 1008, 1, 1 },
        /* few rows (generation): the forward takes the dot-product path */
        { 1, 64, 256 }, { 2, 32, 9 }, { 4, 256, 67 },
        /* the vanilla attention's per-head products */
        { 63, 11, 63 }, { 63, 63, 11 },
    };
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        check_shape(shapes[i][0], shapes[i][1], shapes[i][2]);

    /* Degenerate sizes: forward with IC = 0 writes zeros; nothing else
     * touches memory. */
    for (int s = 0; s < n; s++) {
        const atm_kernel_set *ks = atm_kernels_set(s);
        float o[6] = { 1, 2, 3, 4, 5, 6 }, x[1] = { 1 }, w[1] = { 1 }, d[6] = { 1, 1, 1, 1, 1, 1 };
        ks->forward(o, x, w, 2, 0, 3);
        for (int i = 0; i < 6; i++) CHECK(o[i] == 0.0f);
        float g[2] = { 7, 8 };
        ks->backward(g, g, d, x, w, 0, 1, 1);
        ks->backward(g, g, d, x, w, 1, 0, 1);
        ks->backward(g, g, d, x, w, 1, 1, 0);
        CHECK(g[0] == 7 && g[1] == 8);
    }

    /* The dispatched entry points follow atm_kernels_select, bit for bit. */
    {
        problem p;
        problem_new(&p, 65, 64, 17);
        float *a = out_new(65 * 17), *b = out_new(65 * 17);
        for (int s = 0; s < n; s++) {
            const atm_kernel_set *ks = atm_kernels_set(s);
            CHECK(atm_kernels_select(ks->name) == 0);
            CHECK(strcmp(atm_kernels_name(), ks->name) == 0);
            atm_matmul_forward(a, p.inp.p, p.w.p, 65, 64, 17);
            ks->forward(b, p.inp.p, p.w.p, 65, 64, 17);
            CHECK(memcmp(a, b, 65 * 17 * sizeof(float)) == 0);
        }
        CHECK(atm_kernels_select("auto") == 0);
        CHECK(strcmp(atm_kernels_name(), atm_kernels_set(n - 1)->name) == 0);
        out_free(a); out_free(b);
        problem_free(&p);
    }

    /* The flop counter and the record/replay of the benchmarks. */
    {
        problem p;
        problem_new(&p, 7, 5, 3);
        float *o = out_new(7 * 3), *di = out_new(7 * 5), *dw = out_new(3 * 5);
        memset(di, 0, 7 * 5 * sizeof(float));
        memset(dw, 0, 3 * 5 * sizeof(float));
        atm_matmul_call calls[2];
        double f0 = atm_matmul_flops();
        atm_matmul_record_start(calls, 2);
        atm_matmul_forward(o, p.inp.p, p.w.p, 7, 5, 3);
        atm_matmul_backward(di, NULL, o, p.inp.p, p.w.p, 7, 5, 3);
        atm_matmul_backward(di, dw, o, p.inp.p, p.w.p, 7, 5, 3);   /* counted, not stored */
        atm_matmul_forward(o, p.inp.p, p.w.p, 0, 5, 3);            /* no work */
        CHECK(atm_matmul_record_stop() == 4);
        CHECKF(atm_matmul_flops() - f0 == 4 * 2.0 * 7 * 5 * 3, "flops %.0f", atm_matmul_flops() - f0);
        atm_matmul_forward(o, p.inp.p, p.w.p, 7, 5, 3);            /* not recording any more */
        CHECK(calls[0].backward == 0 && calls[0].N == 7 && calls[0].IC == 5 && calls[0].OC == 3);
        CHECK(calls[1].backward == 1 && calls[1].dinp == 1 && calls[1].dw == 0);
        size_t nf = atm_matmul_replay_floats(calls, 2);
        CHECK(nf == 7 * 5 + 3 * 5 + 7 * 5 + 3 * 5);
        float *scratch = out_new(nf);
        CHECK(atm_matmul_replay(calls, 2, scratch, nf - 1) == -1);
        CHECK(atm_matmul_replay(calls, 2, scratch, nf) == 0);
        /* forward of 0.25s into C (7x3), then dinp += into C as 7x5: every
         * element ends at 0.25*0.25*5 (forward) or that + 0.0625*3. */
        const float *C = scratch + 7 * 5 + 3 * 5;
        CHECKF(C[0] == 0.0625f * 5 + 0.0625f * 3, "replayed C[0] = %g", C[0]);
        out_free(scratch);
        out_free(o); out_free(di); out_free(dw);
        problem_free(&p);
    }
    return CHECK_DONE();
}
