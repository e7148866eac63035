/* tests/test_kernels_layers.c — every layer kernel set available here
 * (kernels_layers.h: ref, avx2, avx512, ...) against the plain-C references
 * of layers.c / pathways_ref.c: layernorm forward/backward, softmax + cross-entropy
 * forward/backward, the vector exp and the attention row selection, on odd
 * sizes (row lengths 1, 3, 15, 16, 17, 33, 44, 64, 100, 255, 256; N odd).
 * Also: no access outside the buffers (inputs end at an unmapped page,
 * outputs carry guard words), bitwise determinism independent of N, of the
 * row's position and of alignment (what makes gen_step equal the batch
 * forward), the NULL / "+=" contracts, and the dispatcher.
 *
 * Tolerances (u = 2^-24, gamma(k) = k u / (1 - k u), Higham 3.1: any order
 * of summing k terms is within gamma(k) * sum|terms| of the exact sum):
 *  - exp: at most 1.5 ulp from exp computed in double where the result is
 *    normal (1.01 ulp is the measured maximum over every float in [-104, 0]),
 *    at most 2^-149 (one subnormal step) below, 0 exactly where libm expf is 0.
 *    (A polynomial coefficient changed in its 4th significant digit gives
 *    3.2 ulp and fails.)
 *  - layernorm forward: the sets differ from the reference only in the order
 *    of the two row sums. Each mean is within gamma(C) * mean|x| (+ the
 *    division, 1 u) of the exact mean, so two means differ by at most
 *    dm = 2 (gamma(C) + u) mean|x|. The variance is a sum of C nonnegative
 *    terms (relative error gamma(C) + 3 u each side, the mean error entering
 *    only at second order, C dm^2 / sum (x-m)^2), and rstd halves it and adds
 *    2 u (sqrt, division). Per element: |d out| <= |g| s dm + |x^ g| ds/s +
 *    the reference's own rounding of (x-m)*s*g+b with perturbed operands,
 *    4 u (|x^ g| + |b|). The check uses twice that bound; dropping one
 *    masked tail lane of a row (tested: the "canary") moves the mean by about
 *    mean|x|/C, far more than 2 (gamma(C) + u) mean|x|.
 *  - layernorm backward: db and dg use the reference's operations on the same
 *    operands and must match bit for bit; dinp differs only through the two
 *    row means of g*d and g*d*x^ (each pair within 2 gamma(C) of the mean of
 *    the magnitudes), times s, plus 4 u of the terms.
 *  - cross-entropy: probabilities = e_i / sum e with e_i within 1.01 ulp of
 *    exp (libm expf is within 1 ulp too, so e_i differ by < 3 u), sums of
 *    positive terms in different orders (2 gamma(V) relative), 1/sum and the
 *    product (2 u): relative 2 gamma(V) + 8 u per probability, and per row
 *    the loss log(sum) moves by the same relative sum error plus logf's
 *    rounding (8 u |lse| allowance). The backward is bit-identical.
 *  - attention selection: bit-identical (same scores, same insertions). */
#include "guardbuf.h"
#include "check.h"
#include "core/train/atome_layers.h"
#include "core/train/kernels.h"
#include "core/train/kernels_layers.h"
#include "core/rng.h"
#include <float.h>
#include <stdint.h>
#include <string.h>

#define U 0x1p-24
static double gam(int k) { return k * U / (1.0 - k * U); }

static atm_rng g_rng;
static float frand(float lo, float hi) {
    return lo + (hi - lo) * (float)((double)atm_rng_u32(&g_rng) / 4294967296.0);
}
static void fill(float *x, size_t n, float lo, float hi) { for (size_t i = 0; i < n; i++) x[i] = frand(lo, hi); }

/* Inputs against an unmapped page (tests/guardbuf.h). */
static gbuf gb_copy(const float *x, size_t n) { gbuf g = gb_new(n); memcpy(g.p, x, n * sizeof(float)); return g; }

/* ---- outputs with GUARD sentinel floats on both sides */
#define GUARD 16
#define SENT -12345.5f
static float *out_new(size_t n) {
    float *b = malloc((n + 2 * GUARD) * sizeof(float));
    for (size_t i = 0; i < n + 2 * GUARD; i++) b[i] = SENT;
    return b + GUARD;
}
static int guards_ok(const float *p, size_t n) {
    for (int i = 1; i <= GUARD; i++) if (p[-i] != SENT || p[n - 1 + i] != SENT) return 0;
    return 1;
}
static void out_free(float *p) { free(p - GUARD); }

static int nsets(void) { return atm_kernels_count(); }
static const atm_layer_kernel_set *use_set(int s) {
    if (atm_kernels_select(atm_kernels_set(s)->name) != 0) return NULL;
    return atm_layer_kernels();
}

/* ------------------------------------------------------------------ exp */
static void test_exp(void) {
    /* a stride through every float bit pattern of [-104, 0] (negative
     * floats: 0x80000000 .. bits(-104)), plus specials and odd lengths */
    const float lo = -104.0f;
    uint32_t blo;
    memcpy(&blo, &lo, 4);
    enum { STRIDE = 997, CH = 4096 };
    static float x[CH], y[CH], yl[CH];
    for (int s = 0; s < nsets(); s++) {
        const atm_layer_kernel_set *ls = use_set(s);
        double worst_ulp = 0.0, worst_sub = 0.0;
        long zero_mismatch = 0, count = 0;
        for (uint64_t b = 0x80000000u; b <= blo;) {
            int n = 0;
            for (; b <= blo && n < CH; b += STRIDE, n++) { uint32_t u = (uint32_t)b; memcpy(&x[n], &u, 4); }
            ls->exp(y, x, n);
            atm_exp_ref(yl, x, n);
            for (int i = 0; i < n; i++, count++) {
                double e = exp((double)x[i]);
                if (e >= 0x1p-126) {
                    int ex;
                    frexp(e, &ex);
                    double ulp = ldexp(1.0, ex - 24), err = fabs((double)y[i] - e) / ulp;
                    if (err > worst_ulp) worst_ulp = err;
                } else {
                    double a = fabs((double)y[i] - e);
                    if (a > worst_sub) worst_sub = a;
                }
                zero_mismatch += (y[i] == 0.0f) != (yl[i] == 0.0f);
            }
        }
        printf("exp %-7s %ld values: max %.3f ulp (normal results), max abs %.3g (subnormal)\n", ls->name,
               count, worst_ulp, worst_sub);
        CHECKF(worst_ulp <= 1.5, "%s exp: %.3f ulp", ls->name, worst_ulp);
        CHECKF(worst_sub <= 0x1p-149, "%s exp: subnormal error %g", ls->name, worst_sub);
        CHECKF(zero_mismatch == 0, "%s exp: %ld underflow mismatches vs expf", ls->name, zero_mismatch);
        /* specials; in place (y aliases x) */
        float sp[7] = { -INFINITY, NAN, 0.0f, -0.0f, -104.5f, -1e30f, -103.9f };
        ls->exp(sp, sp, 7);
        CHECK(sp[0] == 0.0f && isnan(sp[1]) && sp[2] == 1.0f && sp[3] == 1.0f && sp[4] == 0.0f && sp[5] == 0.0f);
        CHECK(sp[6] > 0.0f && fabs((double)sp[6] - (double)expf(-103.9f)) <= 0x1p-149);
        /* every tail length, inputs against the unmapped page, output guards */
        for (int n = 0; n <= 40; n++) {
            float tmp[40];
            fill(tmp, (size_t)n, -20.0f, 0.0f);
            gbuf in = gb_copy(tmp, (size_t)n);
            float *o = out_new((size_t)n);
            ls->exp(o, in.p, n);
            int ok = guards_ok(o, (size_t)n);
            for (int i = 0; i < n; i++) ok &= fabs((double)o[i] - exp((double)tmp[i])) <= 1.5 * 0x1p-23 * exp((double)tmp[i]);
            CHECKF(ok, "%s exp n=%d", ls->name, n);
            out_free(o);
            gb_free(&in);
        }
    }
}

/* ----------------------------------------------------------- layernorm */
/* Number of elements (and mean/rstd entries) of `got` outside the bound
 * documented at the top, against the reference output `ref`. */
static int ln_fwd_bad(const float *got, const float *gm, const float *gr, const float *ref,
                      const float *rm, const float *rr, const float *x, const float *g, const float *b,
                      int N, int C) {
    int bad = 0;
    for (int n = 0; n < N; n++) {
        const float *xr = x + (size_t)n * C;
        double ma = 0.0, m = rm[n], s = rr[n], v = 0.0;
        for (int i = 0; i < C; i++) ma += fabs(xr[i]);
        ma /= C;
        for (int i = 0; i < C; i++) v += (xr[i] - m) * (xr[i] - m);
        double dm = 2.0 * (gam(C) + U) * ma;
        double dv = 2.0 * (gam(C) + 3 * U) + (v > 0 ? C * dm * dm / v : 1.0);
        double ds = 0.5 * dv + 4 * U;                       /* relative, of rstd */
        if (fabs(gm[n] - rm[n]) > 2.0 * dm) bad++;
        if (fabs(gr[n] - rr[n]) > 2.0 * ds * s) bad++;
        for (int i = 0; i < C; i++) {
            double xh = (xr[i] - m) * s;
            double tol = fabs(g[i]) * s * dm + fabs(xh * g[i]) * ds + 4 * U * (fabs(xh * g[i]) + fabs(b[i]));
            if (!(fabs((double)got[(size_t)n * C + i] - ref[(size_t)n * C + i]) <= 2.0 * tol)) bad++;
        }
    }
    return bad;
}

static void test_layernorm(void) {
    static const int Cs[] = { 1, 3, 15, 16, 17, 33, 44, 64, 100, 256 };
    static const int Ns[] = { 1, 5, 63 };
    for (int ci = 0; ci < 10; ci++)
        for (int ni = 0; ni < 3; ni++) {
            const int C = Cs[ci], N = Ns[ni];
            const size_t NC = (size_t)N * C;
            float *x = malloc(NC * sizeof(float)), *g = malloc(C * sizeof(float)), *b = malloc(C * sizeof(float));
            float *d = malloc(NC * sizeof(float)), *xc = malloc(NC * sizeof(float));
            fill(x, NC, -2, 2);
            for (int n = 0; n < N; n++)                      /* row offsets 0, 3, 100 stress the two passes */
                for (int i = 0; i < C; i++) x[(size_t)n * C + i] += (n % 3 == 1) ? 3.0f : (n % 3 == 2) ? 100.0f : 0.0f;
            fill(g, C, 0.5f, 1.5f);
            fill(b, C, -0.5f, 0.5f);
            fill(d, NC, -1, 1);
            float *ro = malloc(NC * sizeof(float)), *rm = malloc(N * sizeof(float)), *rr = malloc(N * sizeof(float));
            atm_layernorm_forward_ref(ro, rm, rr, x, g, b, N, C);
            /* canary: the reference on rows whose last element was dropped (0) */
            memcpy(xc, x, NC * sizeof(float));
            for (int n = 0; n < N; n++) xc[(size_t)n * C + C - 1] = 0.0f;
            float *co = malloc(NC * sizeof(float)), *cm = malloc(N * sizeof(float)), *cr = malloc(N * sizeof(float));
            atm_layernorm_forward_ref(co, cm, cr, xc, g, b, N, C);
            if (C > 1) CHECKF(ln_fwd_bad(co, cm, cr, ro, rm, rr, x, g, b, N, C) > 0, "ln canary C=%d N=%d passes", C, N);
            /* reference backward, on initial gradients */
            float *g0i = malloc(NC * sizeof(float)), *g0g = malloc(C * sizeof(float)), *g0b = malloc(C * sizeof(float));
            fill(g0i, NC, -1, 1); fill(g0g, C, -1, 1); fill(g0b, C, -1, 1);
            float *rdi = malloc(NC * sizeof(float)), *rdg = malloc(C * sizeof(float)), *rdb = malloc(C * sizeof(float));
            memcpy(rdi, g0i, NC * sizeof(float)); memcpy(rdg, g0g, C * sizeof(float)); memcpy(rdb, g0b, C * sizeof(float));
            atm_layernorm_backward_ref(rdi, rdg, rdb, d, x, g, rm, rr, N, C);

            gbuf X = gb_copy(x, NC), G = gb_copy(g, C), Bb = gb_copy(b, C), D = gb_copy(d, NC);
            gbuf M = gb_copy(rm, N), R = gb_copy(rr, N);
            for (int s = 0; s < nsets(); s++) {
                const atm_layer_kernel_set *ls = use_set(s);
                float *o = out_new(NC), *om = out_new(N), *orr = out_new(N);
                ls->layernorm_forward(o, om, orr, X.p, G.p, Bb.p, N, C);
                CHECKF(guards_ok(o, NC) && guards_ok(om, N) && guards_ok(orr, N), "%s ln fwd guards C=%d", ls->name, C);
                int bad = ln_fwd_bad(o, om, orr, ro, rm, rr, x, g, b, N, C);
                CHECKF(bad == 0, "%s ln forward C=%d N=%d: %d outside", ls->name, C, N, bad);
                /* rows alone (N = 1, another alignment) give the batch's bits; mean/rstd NULL allowed */
                for (int n = 0; n < N; n++) {
                    float *x1 = malloc((C + 1) * sizeof(float)), *o1 = malloc(C * sizeof(float)), m1, r1;
                    memcpy(x1 + 1, x + (size_t)n * C, C * sizeof(float));
                    ls->layernorm_forward(o1, &m1, &r1, x1 + 1, g, b, 1, C);
                    CHECK(memcmp(o1, o + (size_t)n * C, C * sizeof(float)) == 0 && m1 == om[n] && r1 == orr[n]);
                    ls->layernorm_forward(o1, NULL, NULL, x1 + 1, g, b, 1, C);
                    CHECK(memcmp(o1, o + (size_t)n * C, C * sizeof(float)) == 0);
                    free(x1); free(o1);
                }
                /* backward from the reference's mean/rstd: db, dg bitwise, dinp within the bound */
                float *di = out_new(NC), *dg = out_new(C), *db = out_new(C);
                memcpy(di, g0i, NC * sizeof(float)); memcpy(dg, g0g, C * sizeof(float)); memcpy(db, g0b, C * sizeof(float));
                ls->layernorm_backward(di, dg, db, D.p, X.p, G.p, M.p, R.p, N, C);
                CHECKF(guards_ok(di, NC) && guards_ok(dg, C) && guards_ok(db, C), "%s ln bwd guards C=%d", ls->name, C);
                CHECKF(memcmp(db, rdb, C * sizeof(float)) == 0, "%s ln db C=%d", ls->name, C);
                CHECKF(memcmp(dg, rdg, C * sizeof(float)) == 0, "%s ln dg C=%d", ls->name, C);
                int badb = 0;
                for (int n = 0; n < N; n++) {
                    const float *xr = x + (size_t)n * C, *dr = d + (size_t)n * C;
                    double s1 = 0.0, s2 = 0.0, sr = rr[n];
                    for (int i = 0; i < C; i++) {
                        double xh = (xr[i] - rm[n]) * sr, dn = (double)g[i] * dr[i];
                        s1 += fabs(dn); s2 += fabs(dn * xh);
                    }
                    double e1 = 2.0 * gam(C) * s1 / C, e2 = 2.0 * gam(C) * s2 / C;
                    for (int i = 0; i < C; i++) {
                        size_t k = (size_t)n * C + i;
                        double xh = (xr[i] - rm[n]) * sr, term = fabs((double)g[i] * dr[i]) + s1 / C + fabs(xh) * s2 / C;
                        double tol = sr * (e1 + fabs(xh) * e2) + 4 * U * sr * term + 2 * U * fabs(rdi[k]);
                        if (!(fabs((double)di[k] - rdi[k]) <= 2.0 * tol)) badb++;
                    }
                }
                CHECKF(badb == 0, "%s ln dinp C=%d N=%d: %d outside", ls->name, C, N, badb);
                /* NULL gradients: each alone gives the same bits */
                float *d1 = calloc(NC, sizeof(float)), *d2 = calloc(C, sizeof(float)), *d3 = calloc(C, sizeof(float));
                float *e1 = calloc(NC, sizeof(float)), *e2 = calloc(C, sizeof(float)), *e3 = calloc(C, sizeof(float));
                ls->layernorm_backward(d1, d2, d3, d, x, g, rm, rr, N, C);
                ls->layernorm_backward(e1, NULL, NULL, d, x, g, rm, rr, N, C);
                ls->layernorm_backward(NULL, e2, NULL, d, x, g, rm, rr, N, C);
                ls->layernorm_backward(NULL, NULL, e3, d, x, g, rm, rr, N, C);
                CHECK(memcmp(d1, e1, NC * sizeof(float)) == 0 && memcmp(d2, e2, C * sizeof(float)) == 0 &&
                      memcmp(d3, e3, C * sizeof(float)) == 0);
                free(d1); free(d2); free(d3); free(e1); free(e2); free(e3);
                out_free(o); out_free(om); out_free(orr); out_free(di); out_free(dg); out_free(db);
            }
            gb_free(&X); gb_free(&G); gb_free(&Bb); gb_free(&D); gb_free(&M); gb_free(&R);
            free(x); free(g); free(b); free(d); free(xc); free(ro); free(rm); free(rr); free(co); free(cm); free(cr);
            free(g0i); free(g0g); free(g0b); free(rdi); free(rdg); free(rdb);
        }
}

/* --------------------------------------------------------- cross-entropy */
static void test_xent(void) {
    static const int Vs[] = { 1, 3, 17, 33, 100, 255, 256 };
    static const int Ns[] = { 1, 7, 130 };                  /* 130 > one 64-row pass of the SIMD forward */
    for (int vi = 0; vi < 7; vi++)
        for (int ni = 0; ni < 3; ni++) {
            const int V = Vs[vi], N = Ns[ni];
            const size_t NV = (size_t)N * V;
            float *l = malloc(NV * sizeof(float));
            uint8_t *tgt = malloc((size_t)N);
            fill(l, NV, -6, 6);
            for (int n = 0; n < N; n++) {
                tgt[n] = (uint8_t)(atm_rng_u32(&g_rng) % (uint32_t)V);
                float off = (n % 4 == 1) ? 1000.0f : (n % 4 == 2) ? -50.0f : 0.0f;
                for (int i = 0; i < V; i++) l[(size_t)n * V + i] += off;
                if (n % 4 == 3 && V > 2) l[(size_t)n * V + V / 2] = -INFINITY;   /* a masked-out class */
                if (n % 4 == 3 && V > 2 && tgt[n] == V / 2) tgt[n] = 0;
            }
            float *rp = malloc(NV * sizeof(float));
            double rsum = atm_xent_forward_ref(rp, l, tgt, N, V);
            /* per-row allowance for the loss: relative sum error times 1 plus logf's rounding */
            double lossTol = 0.0;
            for (int n = 0; n < N; n++) {
                double mx = -INFINITY, s = 0.0;
                for (int i = 0; i < V; i++) if (l[(size_t)n * V + i] > mx) mx = l[(size_t)n * V + i];
                for (int i = 0; i < V; i++) s += exp((double)l[(size_t)n * V + i] - mx);
                lossTol += 2.0 * gam(V) + 8 * U + 8 * U * fabs(log(s));
            }
            float *g0 = malloc(NV * sizeof(float)), *rd = malloc(NV * sizeof(float));
            fill(g0, NV, -1, 1);
            memcpy(rd, g0, NV * sizeof(float));
            atm_xent_backward_ref(rd, rp, tgt, N, V, 0.37f);
            gbuf L = gb_copy(l, NV), P = gb_copy(rp, NV);
            for (int s = 0; s < nsets(); s++) {
                const atm_layer_kernel_set *ls = use_set(s);
                float *p = out_new(NV);
                double sum = ls->xent_forward(p, L.p, tgt, N, V);
                CHECKF(guards_ok(p, NV), "%s xent guards V=%d", ls->name, V);
                CHECKF(fabs(sum - rsum) <= lossTol, "%s xent loss V=%d N=%d: %.9g vs %.9g (tol %g)", ls->name, V, N,
                       sum, rsum, lossTol);
                int bad = 0;
                for (size_t k = 0; k < NV; k++)
                    if (!(fabs((double)p[k] - rp[k]) <= (2.0 * gam(V) + 8 * U) * rp[k])) bad++;
                CHECKF(bad == 0, "%s xent probs V=%d N=%d: %d outside", ls->name, V, N, bad);
                /* no targets: same probabilities, 0 returned; in place (probs aliases logits) */
                float *q = malloc(NV * sizeof(float));
                CHECK(ls->xent_forward(q, l, NULL, N, V) == 0.0);
                CHECK(memcmp(q, p, NV * sizeof(float)) == 0);
                memcpy(q, l, NV * sizeof(float));
                CHECK(ls->xent_forward(q, q, NULL, N, V) == 0.0);
                CHECK(memcmp(q, p, NV * sizeof(float)) == 0);
                if (s > 0) {                    /* the SIMD sets also allow aliasing with targets */
                    memcpy(q, l, NV * sizeof(float));
                    CHECK(ls->xent_forward(q, q, tgt, N, V) == sum);
                    CHECK(memcmp(q, p, NV * sizeof(float)) == 0);
                }
                /* a row alone gives the batch's bits */
                for (int n = 0; n < N; n += 3) {
                    float *r1 = malloc((V + 1) * sizeof(float));
                    ls->xent_forward(r1 + 1, l + (size_t)n * V, tgt + n, 1, V);
                    CHECK(memcmp(r1 + 1, p + (size_t)n * V, V * sizeof(float)) == 0);
                    free(r1);
                }
                free(q);
                /* backward: bit-identical to the reference */
                float *d = out_new(NV);
                memcpy(d, g0, NV * sizeof(float));
                ls->xent_backward(d, P.p, tgt, N, V, 0.37f);
                CHECKF(guards_ok(d, NV) && memcmp(d, rd, NV * sizeof(float)) == 0, "%s xent backward V=%d", ls->name, V);
                out_free(d);
                out_free(p);
            }
            gb_free(&L); gb_free(&P);
            free(l); free(tgt); free(rp); free(g0); free(rd);
        }
}

/* --------------------------------------------------- attention selection */
static void test_attn_select(void) {
    static const int DHs[] = { 1, 2, 5, 16, 17, 64 };
    static const int ns[] = { 1, 2, 4, 15, 16, 17, 63, 64, 65, 130 };
    static const int ks[] = { 1, 2, 4, 7, 64 };
    enum { LDK = 140 };
    for (int di = 0; di < 6; di++)
        for (int tie = 0; tie < 2; tie++) {
            const int DH = DHs[di];
            float *kT = malloc(sizeof(float) * DH * LDK), *q = malloc(sizeof(float) * DH);
            fill(kT, (size_t)DH * LDK, -1, 1);
            fill(q, DH, -1, 1);
            if (tie)    /* few distinct values: many exactly equal scores */
                for (int i = 0; i < DH * LDK; i++) kT[i] = (float)((int)(kT[i] * 2.0f)) * 0.5f;
            if (tie) for (int e = 0; e < DH; e++) q[e] = 1.0f;
            const float scale = 1.0f / sqrtf((float)DH);
            for (int ni = 0; ni < 10; ni++)
                for (int ki = 0; ki < 5; ki++) {
                    const int n = ns[ni], keff = ks[ki] < n ? ks[ki] : n;
                    float rps[64], rsc[LDK];
                    int32_t ris[64];
                    atm_atome_attn_select_ref(rps, ris, q, kT, LDK, DH, n, scale, keff, rsc);
                    for (int s = 0; s < nsets(); s++) {
                        const atm_layer_kernel_set *ls = use_set(s);
                        float ps[64 + 2], sc[LDK];
                        int32_t is[64 + 2];
                        ps[keff] = ps[keff + 1] = SENT;
                        is[keff] = is[keff + 1] = 77;
                        ls->attn_select(ps, is, q, kT, LDK, DH, n, scale, keff, sc);
                        CHECKF(memcmp(ps, rps, sizeof(float) * keff) == 0 && memcmp(is, ris, sizeof(int32_t) * keff) == 0 &&
                               ps[keff] == SENT && is[keff] == 77,
                               "%s attn_select DH=%d n=%d keff=%d tie=%d", ls->name, DH, n, keff, tie);
                    }
                }
            /* the scores are the generation's dot product, bit for bit */
            {
                float ps[1], sc[LDK];
                int32_t is[1];
                for (int s = 0; s < nsets(); s++) {
                    const atm_layer_kernel_set *ls = use_set(s);
                    for (int j = 0; j < 20; j++) {
                        float dot = 0.0f;
                        for (int e = 0; e < DH; e++) dot += q[e] * kT[(size_t)e * LDK + j];
                        ls->attn_select(ps, is, q, kT + j, LDK, DH, 1, scale, 1, sc);
                        CHECK(ps[0] == dot * scale && is[0] == 0);
                    }
                }
            }
            free(kT); free(q);
        }
    /* Scores that are NaN (the SIMD sets then replay the insertion sequence),
     * +-inf, and runs of exact ties, around the 64-position fast path. */
    {
        enum { DH = 3 };
        static const int ns2[] = { 5, 9, 40, 64, 65, 100 };
        static const int ks2[] = { 1, 4, 8, 9 };
        float kT[DH * LDK], q[DH] = { 0.5f, 1.0f, 0.25f };
        for (int variant = 0; variant < 4; variant++) {
            fill(kT, DH * LDK, -1, 1);
            for (int j = 0; j < LDK; j += 3) kT[j] = kT[LDK + j] = kT[2 * LDK + j] = 0.5f;    /* ties */
            if (variant & 1) { kT[LDK + 2] = NAN; kT[LDK + 70] = NAN; }
            if (variant & 2) {
                kT[7] = INFINITY; kT[9] = -INFINITY; kT[30] = INFINITY; kT[80] = INFINITY;
                kT[LDK + 31] = -INFINITY;
            }
            for (int ni = 0; ni < 6; ni++)
                for (int ki = 0; ki < 4; ki++) {
                    const int n = ns2[ni], keff = ks2[ki] < n ? ks2[ki] : n;
                    float rps[16], rsc[LDK];
                    int32_t ris[16];
                    atm_atome_attn_select_ref(rps, ris, q, kT, LDK, DH, n, 0.5f, keff, rsc);
                    for (int s = 0; s < nsets(); s++) {
                        const atm_layer_kernel_set *ls = use_set(s);
                        float ps[16], sc[LDK];
                        int32_t is[16];
                        ls->attn_select(ps, is, q, kT, LDK, DH, n, 0.5f, keff, sc);
                        CHECKF(memcmp(ps, rps, sizeof(float) * keff) == 0 && memcmp(is, ris, sizeof(int32_t) * keff) == 0,
                               "%s attn_select specials variant %d n=%d keff=%d", ls->name, variant, n, keff);
                    }
                }
        }
    }
}

/* ------------------------------------------------------------- softmax */
static void test_softmax(void) {
    static const int ns[] = { 1, 2, 3, 4, 7, 8, 9, 15, 16, 17, 33, 64, 70, 256 };
    for (int ni = 0; ni < 14; ni++)
        for (int kind = 0; kind < 3; kind++) {
            const int n = ns[ni];
            float x[256], r[256];
            fill(x, (size_t)n, -8, 8);
            if (kind == 1) for (int i = 0; i < n; i++) x[i] += 500.0f;
            if (kind == 2 && n > 1) x[n / 2] = -INFINITY;
            memcpy(r, x, sizeof(float) * n);
            atm_softmax_ref(r, n);
            for (int s = 0; s < nsets(); s++) {
                const atm_layer_kernel_set *ls = use_set(s);
                gbuf in = gb_copy(x, (size_t)n);
                float *y = out_new((size_t)n);
                memcpy(y, x, sizeof(float) * n);
                ls->softmax(y, n);
                int bad = !guards_ok(y, (size_t)n);
                /* the cross-entropy bound (top of file) with V = n */
                for (int i = 0; i < n; i++) bad += !(fabs((double)y[i] - r[i]) <= (2.0 * gam(n) + 8 * U) * r[i]);
                ls->softmax(in.p, n);               /* in place at the end of a page: same bits */
                bad += memcmp(in.p, y, sizeof(float) * n) != 0;
                CHECKF(bad == 0, "%s softmax n=%d kind %d", ls->name, n, kind);
                out_free(y);
                gb_free(&in);
            }
        }
}

/* -------------------------------------------------------- atome pathways */
static int same(const float *a, const float *b, size_t n) { return memcmp(a, b, n * sizeof(float)) == 0; }
/* equal, or both NaN (NaN payloads are not compared) */
static int feq(float a, float b) { return a == b ? memcmp(&a, &b, sizeof a) == 0 || a != 0.0f : (isnan(a) && isnan(b)); }
static int feqn(const float *a, const float *b, int n) { int ok = 1; for (int i = 0; i < n; i++) ok &= feq(a[i], b[i]); return ok; }
static float *fdup(const float *x, size_t n) { float *y = malloc(n * sizeof(float) + 1); memcpy(y, x, n * sizeof(float)); return y; }

/* conv, SSM, attention backward and mixing backward: bit for bit against the
 * references, every gradient alone and all together, on odd widths. */
static void test_paths_bitwise(void) {
    static const int shapes[][5] = {   /* B, T, C, K, DH */
        { 1, 1, 1, 1, 1 }, { 2, 5, 3, 2, 2 }, { 3, 20, 17, 5, 5 }, { 2, 63, 64, 5, 16 }, { 1, 70, 33, 7, 16 },
        { 2, 9, 8, 3, 9 }, { 2, 12, 37, 11, 4 }, { 1, 5, 9, 9, 2 },   /* K > 8: taps not in registers */
    };
    for (int si = 0; si < (int)(sizeof(shapes) / sizeof(shapes[0])); si++) {
        const int B = shapes[si][0], T = shapes[si][1], C = shapes[si][2], K = shapes[si][3], DH = shapes[si][4];
        const size_t N = (size_t)B * T, NC = N * C, KC = (size_t)K * C;
        float *u = malloc(NC * sizeof(float)), *d = malloc(NC * sizeof(float)), *w = malloc(KC * sizeof(float));
        float *ar = malloc(C * sizeof(float)), *bb = malloc(C * sizeof(float)), *cc = malloc(C * sizeof(float));
        fill(u, NC, -1, 1); fill(d, NC, -1, 1); fill(w, KC, -1, 1);
        fill(ar, C, -2, 2); fill(bb, C, -1, 1); fill(cc, C, -1, 1);
        float *scr = malloc(sizeof(float) * (ATM_ATOME_SCRATCH(C, K) + 1));
        /* conv */
        float *ro = malloc(NC * sizeof(float)), *rdu = malloc(NC * sizeof(float)), *rdw = malloc(KC * sizeof(float));
        atm_atome_conv_forward_ref(ro, u, w, scr, B, T, C, K);
        fill(rdu, NC, -1, 1); fill(rdw, KC, -1, 1);
        float *du0 = fdup(rdu, NC), *dw0 = fdup(rdw, KC);
        atm_atome_conv_backward_ref(rdu, rdw, d, u, w, scr, B, T, C, K, C);
        /* ssm */
        float *rs = malloc(NC * sizeof(float)), *rso = malloc(NC * sizeof(float));
        atm_atome_ssm_forward_ref(rs, rso, u, ar, bb, cc, scr, B, T, C);
        float *rsdu = fdup(du0, NC), *rda = malloc(C * sizeof(float)), *rdb = malloc(C * sizeof(float)), *rdc = malloc(C * sizeof(float));
        fill(rda, C, -1, 1); fill(rdb, C, -1, 1); fill(rdc, C, -1, 1);
        float *da0 = fdup(rda, C), *db0 = fdup(rdb, C), *dc0 = fdup(rdc, C);
        atm_atome_ssm_backward_ref(rsdu, rda, rdb, rdc, d, u, rs, ar, bb, cc, scr, B, T, C, C);
        for (int s = 0; s < nsets(); s++) {
            const atm_layer_kernel_set *ls = use_set(s);
            float *o = out_new(NC), *gdu = out_new(NC), *gdw = out_new(KC);
            float *sc2 = malloc(sizeof(float) * (ATM_ATOME_SCRATCH(C, K) + 1));
            ls->conv_forward(o, u, w, sc2, B, T, C, K);
            CHECKF(same(o, ro, NC) && guards_ok(o, NC), "%s conv forward B%d T%d C%d K%d", ls->name, B, T, C, K);
            memcpy(gdu, du0, NC * sizeof(float)); memcpy(gdw, dw0, KC * sizeof(float));
            ls->conv_backward(gdu, gdw, d, u, w, sc2, B, T, C, K, C);
            CHECKF(same(gdu, rdu, NC) && same(gdw, rdw, KC) && guards_ok(gdu, NC) && guards_ok(gdw, KC),
                   "%s conv backward B%d T%d C%d K%d", ls->name, B, T, C, K);
            memcpy(gdu, du0, NC * sizeof(float)); memcpy(gdw, dw0, KC * sizeof(float));
            ls->conv_backward(gdu, NULL, d, u, w, sc2, B, T, C, K, C);
            ls->conv_backward(NULL, gdw, d, u, w, sc2, B, T, C, K, C);
            CHECKF(same(gdu, rdu, NC) && same(gdw, rdw, KC), "%s conv backward NULL B%d T%d C%d", ls->name, B, T, C);
            /* dw by columns, rows C apart (the pool's channel split), cut at an odd channel */
            memcpy(gdw, dw0, KC * sizeof(float));
            {
                const int cut = C / 2 | 1, c1 = cut < C ? cut : C;
                ls->conv_backward(NULL, gdw, d, u, w, sc2, B, T, c1, K, C);
                if (c1 < C)
                    ls->conv_backward(NULL, gdw + (size_t)c1 * K, d + c1, u + c1, w + (size_t)c1 * K, sc2, B, T,
                                      C - c1, K, C);
                CHECKF(same(gdw, rdw, KC), "%s conv backward dw by columns B%d T%d C%d cut %d", ls->name, B, T, C, c1);
            }
            /* ssm */
            float *gs = out_new(NC), *gso = out_new(NC), *gda = out_new(C), *gdb = out_new(C), *gdc = out_new(C);
            ls->ssm_forward(gs, gso, u, ar, bb, cc, sc2, B, T, C);
            CHECKF(same(gs, rs, NC) && same(gso, rso, NC) && guards_ok(gs, NC) && guards_ok(gso, NC),
                   "%s ssm forward B%d T%d C%d", ls->name, B, T, C);
            memcpy(gdu, du0, NC * sizeof(float)); memcpy(gda, da0, C * sizeof(float));
            memcpy(gdb, db0, C * sizeof(float)); memcpy(gdc, dc0, C * sizeof(float));
            ls->ssm_backward(gdu, gda, gdb, gdc, d, u, rs, ar, bb, cc, sc2, B, T, C, C);
            CHECKF(same(gdu, rsdu, NC) && same(gda, rda, C) && same(gdb, rdb, C) && same(gdc, rdc, C) &&
                   guards_ok(gdu, NC) && guards_ok(gda, C) && guards_ok(gdb, C) && guards_ok(gdc, C),
                   "%s ssm backward B%d T%d C%d", ls->name, B, T, C);
            memcpy(gdu, du0, NC * sizeof(float)); memcpy(gda, da0, C * sizeof(float));
            memcpy(gdb, db0, C * sizeof(float)); memcpy(gdc, dc0, C * sizeof(float));
            ls->ssm_backward(gdu, NULL, NULL, NULL, d, u, rs, ar, bb, cc, sc2, B, T, C, C);
            ls->ssm_backward(NULL, gda, gdb, gdc, d, u, rs, ar, bb, cc, sc2, B, T, C, C);
            CHECKF(same(gdu, rsdu, NC) && same(gda, rda, C) && same(gdb, rdb, C) && same(gdc, rdc, C),
                   "%s ssm backward NULL B%d T%d C%d", ls->name, B, T, C);
            /* by columns, rows C apart (the pool's channel split), cut at an odd channel */
            memcpy(gdu, du0, NC * sizeof(float)); memcpy(gda, da0, C * sizeof(float));
            memcpy(gdb, db0, C * sizeof(float)); memcpy(gdc, dc0, C * sizeof(float));
            const int cut = C / 2 | 1;
            ls->ssm_backward(gdu, gda, gdb, gdc, d, u, rs, ar, bb, cc, sc2, B, T, cut < C ? cut : C, C);
            if (cut < C)
                ls->ssm_backward(gdu + cut, gda + cut, gdb + cut, gdc + cut, d + cut, u + cut, rs + cut, ar + cut,
                                 bb + cut, cc + cut, sc2, B, T, C - cut, C);
            CHECKF(same(gdu, rsdu, NC) && same(gda, rda, C) && same(gdb, rdb, C) && same(gdc, rdc, C),
                   "%s ssm backward by columns B%d T%d C%d cut %d", ls->name, B, T, C, cut);
            out_free(o); out_free(gdu); out_free(gdw); out_free(gs); out_free(gso);
            out_free(gda); out_free(gdb); out_free(gdc);
            free(sc2);
        }
        /* attention backward and mixing backward from a reference forward */
        for (int TK = 1; TK <= 7; TK += 3) {
            const size_t NDH = N * DH;
            float *q = malloc(NDH * sizeof(float)), *k = malloc(NDH * sizeof(float)), *v = malloc(NC * sizeof(float));
            fill(q, NDH, -1, 1); fill(k, NDH, -1, 1); fill(v, NC, -1, 1);
            float *ao = malloc(NC * sizeof(float)), *pp = malloc(N * TK * sizeof(float));
            int32_t *ix = malloc(N * TK * sizeof(int32_t));
            float *ascr = malloc(sizeof(float) * (DH + 1) * T);
            atm_atome_attn_forward_ref(ao, ix, pp, q, k, v, ascr, B, T, DH, C, TK);
            float *rq = malloc(NDH * sizeof(float)), *rk = malloc(NDH * sizeof(float)), *rv = malloc(NC * sizeof(float));
            fill(rq, NDH, -1, 1); fill(rk, NDH, -1, 1); fill(rv, NC, -1, 1);
            float *q0 = fdup(rq, NDH), *k0 = fdup(rk, NDH), *v0 = fdup(rv, NC);
            atm_atome_attn_backward_ref(rq, rk, rv, d, ix, pp, q, k, v, B, T, DH, C, TK);
            /* mixing over P = 1..3 paths */
            const int P = 1 + TK % 3;
            const float *paths[3] = { u, v, ao };
            float *rr = malloc(N * P * sizeof(float)), *drl = malloc(N * P * sizeof(float));
            fill(rr, N * P, 0, 1);
            fill(drl, N * P, -1, 1);
            float *drl0 = fdup(drl, N * P), *dp[3], *dp0[3];
            for (int i = 0; i < 3; i++) { dp[i] = malloc(NC * sizeof(float)); fill(dp[i], NC, -1, 1); dp0[i] = fdup(dp[i], NC); }
            atm_atome_mix_backward_ref(drl, dp, d, rr, paths, (int)N, C, P);
            for (int s = 0; s < nsets(); s++) {
                const atm_layer_kernel_set *ls = use_set(s);
                float *gq = out_new(NDH), *gk = out_new(NDH), *gv = out_new(NC);
                memcpy(gq, q0, NDH * sizeof(float)); memcpy(gk, k0, NDH * sizeof(float)); memcpy(gv, v0, NC * sizeof(float));
                ls->attn_backward(gq, gk, gv, d, ix, pp, q, k, v, B, T, DH, C, TK);
                CHECKF(same(gq, rq, NDH) && same(gk, rk, NDH) && same(gv, rv, NC) && guards_ok(gq, NDH) &&
                       guards_ok(gk, NDH) && guards_ok(gv, NC), "%s attn backward B%d T%d C%d DH%d TK%d", ls->name, B, T, C, DH, TK);
                memcpy(gq, q0, NDH * sizeof(float)); memcpy(gk, k0, NDH * sizeof(float)); memcpy(gv, v0, NC * sizeof(float));
                ls->attn_backward(gq, NULL, NULL, d, ix, pp, q, k, v, B, T, DH, C, TK);
                ls->attn_backward(NULL, gk, NULL, d, ix, pp, q, k, v, B, T, DH, C, TK);
                ls->attn_backward(NULL, NULL, gv, d, ix, pp, q, k, v, B, T, DH, C, TK);
                CHECKF(same(gq, rq, NDH) && same(gk, rk, NDH) && same(gv, rv, NC), "%s attn backward NULL", ls->name);
                float *gdrl = out_new(N * P), *gp[3];
                memcpy(gdrl, drl0, N * P * sizeof(float));
                for (int i = 0; i < 3; i++) { gp[i] = out_new(NC); memcpy(gp[i], dp0[i], NC * sizeof(float)); }
                ls->mix_backward(gdrl, gp, d, rr, paths, (int)N, C, P);
                int ok = same(gdrl, drl, N * P) && guards_ok(gdrl, N * P);
                for (int i = 0; i < P; i++) ok &= same(gp[i], dp[i], NC) && guards_ok(gp[i], NC);
                CHECKF(ok, "%s mix backward N%d C%d P%d", ls->name, (int)N, C, P);
                out_free(gq); out_free(gk); out_free(gv); out_free(gdrl);
                for (int i = 0; i < 3; i++) out_free(gp[i]);
            }
            free(q); free(k); free(v); free(ao); free(pp); free(ix); free(ascr); free(rq); free(rk); free(rv);
            free(q0); free(k0); free(v0); free(rr); free(drl); free(drl0);
            for (int i = 0; i < 3; i++) { free(dp[i]); free(dp0[i]); }
        }
        free(u); free(d); free(w); free(ar); free(bb); free(cc); free(scr); free(ro); free(rdu); free(rdw);
        free(du0); free(dw0); free(rs); free(rso); free(rsdu); free(rda); free(rdb); free(rdc);
        free(da0); free(db0); free(dc0);
    }
}

/* Attention and mixing forward: the kept positions bit for bit; weights
 * within the softmax bound of the references, and equal bit for bit to the
 * set's atm_softmax of the kept scores (what generation computes); given the
 * set's own weights, outputs bit for bit (sum over kept positions / paths in
 * order, multiply then add). Variants: plain, many exact ties, NaN and +-inf
 * scores in some rows. */
static void test_paths_forward(void) {
    static const int shapes[][5] = { { 1, 1, 1, 1, 1 }, { 2, 9, 7, 5, 2 }, { 2, 63, 64, 16, 4 }, { 1, 70, 33, 5, 7 },
                                     { 2, 40, 16, 16, 8 }, { 1, 20, 5, 3, 9 }, { 1, 30, 8, 65, 3 } };
    for (int si = 0; si < 7 * 3; si++) {
        const int variant = si / 7;
        const int B = shapes[si % 7][0], T = shapes[si % 7][1], C = shapes[si % 7][2], DH = shapes[si % 7][3],
                  TK = shapes[si % 7][4];
        const size_t N = (size_t)B * T, NC = N * C, NDH = N * DH;
        float *q = malloc(NDH * sizeof(float)), *k = malloc(NDH * sizeof(float)), *v = malloc(NC * sizeof(float));
        fill(q, NDH, -2, 2); fill(k, NDH, -2, 2); fill(v, NC, -1, 1);
        if (variant == 1)                                  /* keys from {-1, 0, 1}, queries 1: exact ties */
            for (size_t i = 0; i < NDH; i++) { k[i] = (float)((int)(k[i] * 0.75f)); q[i] = 1.0f; }
        if (variant == 2 && N > 6) {
            k[3 * DH] = NAN;                               /* position 3 of sequence 0: NaN scores */
            k[5 * DH] = INFINITY; k[6 * DH] = -INFINITY;
            q[(N - 1) * DH] = INFINITY;                    /* the last row: +-inf scores */
        }
        float *ro = malloc(NC * sizeof(float)), *rp = malloc(N * TK * sizeof(float));
        int32_t *ri = malloc(N * TK * sizeof(int32_t));
        float *scr = malloc(sizeof(float) * (DH + 1) * T);
        atm_atome_attn_forward_ref(ro, ri, rp, q, k, v, scr, B, T, DH, C, TK);
        const int P = 3;
        float *hin = malloc(NC * sizeof(float)), *rl = malloc(N * P * sizeof(float)), *rr = malloc(N * P * sizeof(float));
        float *rh = malloc(NC * sizeof(float));
        fill(hin, NC, -1, 1); fill(rl, N * P, -3, 3);
        const float *paths[3] = { v, ro, hin };
        memcpy(rr, rl, N * P * sizeof(float));
        atm_atome_mix_forward_ref(rh, rr, hin, paths, (int)N, C, P);
        for (int s = 0; s < nsets(); s++) {
            const atm_layer_kernel_set *ls = use_set(s);
            float *o = out_new(NC), *p = out_new(N * TK), *sc2 = malloc(sizeof(float) * (DH + 1) * T);
            int32_t *ix = malloc(N * TK * sizeof(int32_t));
            ls->attn_forward(o, ix, p, q, k, v, sc2, B, T, DH, C, TK);
            int bad = !guards_ok(o, NC) || !guards_ok(p, N * TK) || memcmp(ix, ri, N * TK * sizeof(int32_t)) != 0;
            for (size_t n = 0; n < N; n++) {
                const int t = (int)(n % T), keff = TK < t + 1 ? TK : t + 1;
                int finite = 1;
                for (int i = 0; i < TK; i++) finite &= isfinite(rp[n * TK + i]);
                for (int i = 0; i < TK && finite; i++)
                    bad += !(fabs((double)p[n * TK + i] - rp[n * TK + i]) <= (2.0 * gam(keff) + 8 * U) * rp[n * TK + i]);
                /* the kept scores, by the reference, through this set's softmax */
                float ks[16], sc3[128];
                int32_t ki[16];
                const float scale = 1.0f / sqrtf((float)DH);
                size_t kT_n = (size_t)DH * (t + 1);
                float *kT = malloc(kT_n * sizeof(float) + 1);
                for (int e = 0; e < DH; e++)
                    for (int j = 0; j <= t; j++) kT[(size_t)e * (t + 1) + j] = k[((n / T) * T + j) * DH + e];
                atm_atome_attn_select_ref(ks, ki, q + n * DH, kT, t + 1, DH, t + 1, scale, keff, sc3);
                ls->softmax(ks, keff);
                bad += !feqn(ks, p + n * TK, keff);
                free(kT);
                for (int c = 0; c < C; c++) {
                    float acc = 0.0f;
                    for (int i = 0; i < keff; i++) acc += p[n * TK + i] * v[((n / T) * T + ix[n * TK + i]) * C + c];
                    bad += !feq(acc, o[n * C + c]);
                }
            }
            CHECKF(bad == 0, "%s attn forward B%d T%d C%d DH%d TK%d variant %d: %d", ls->name, B, T, C, DH, TK,
                   variant, bad);
            float *h = out_new(NC), *r = out_new(N * P);
            memcpy(r, rl, N * P * sizeof(float));
            ls->mix_forward(h, r, hin, paths, (int)N, C, P);
            bad = !guards_ok(h, NC) || !guards_ok(r, N * P);
            for (size_t n = 0; n < N; n++) {
                float r1[3];
                memcpy(r1, rl + n * P, sizeof r1);
                ls->softmax(r1, P);
                bad += !feqn(r1, r + n * P, P);
                for (int i = 0; i < P; i++) bad += !(fabs((double)r[n * P + i] - rr[n * P + i]) <= (2.0 * gam(P) + 8 * U) * rr[n * P + i]);
                for (int c = 0; c < C; c++) {
                    float acc = hin[n * C + c];
                    for (int i = 0; i < P; i++) acc += r[n * P + i] * paths[i][n * C + c];
                    bad += !feq(acc, h[n * C + c]);
                }
            }
            CHECKF(bad == 0, "%s mix forward N%d C%d: %d", ls->name, (int)N, C, bad);
            out_free(o); out_free(p); out_free(h); out_free(r); free(sc2); free(ix);
        }
        free(q); free(k); free(v); free(ro); free(rp); free(ri); free(scr); free(hin); free(rl); free(rr); free(rh);
    }
}

/* ---------------------------------------------------------- dispatcher */
static void test_dispatch(void) {
    for (int s = 0; s < nsets(); s++) {
        const char *name = atm_kernels_set(s)->name;
        CHECK(atm_kernels_select(name) == 0);
        const atm_layer_kernel_set *ls = atm_layer_kernels();
        CHECKF(strcmp(ls->name, name) == 0, "matmul set %s runs layer set %s", name, ls->name);
        /* the un-suffixed entry points follow the selection, bit for bit */
        enum { N = 9, C = 37, V = 41 };
        float x[N * C], g[C], b[C], o1[N * C], o2[N * C], m1[N], m2[N], r1[N], r2[N];
        float l[N * V], p1[N * V], p2[N * V];
        uint8_t t[N];
        fill(x, N * C, -3, 3); fill(g, C, -1, 1); fill(b, C, -1, 1); fill(l, N * V, -10, 10);
        for (int n = 0; n < N; n++) t[n] = (uint8_t)(n * 5 % V);
        atm_layernorm_forward(o1, m1, r1, x, g, b, N, C);
        ls->layernorm_forward(o2, m2, r2, x, g, b, N, C);
        CHECK(memcmp(o1, o2, sizeof o1) == 0 && memcmp(m1, m2, sizeof m1) == 0 && memcmp(r1, r2, sizeof r1) == 0);
        memset(o1, 0, sizeof o1); memset(o2, 0, sizeof o2);
        atm_layernorm_backward(o1, NULL, NULL, x, x, g, m1, r1, N, C);
        ls->layernorm_backward(o2, NULL, NULL, x, x, g, m1, r1, N, C);
        CHECK(memcmp(o1, o2, sizeof o1) == 0);
        CHECK(atm_xent_forward(p1, l, t, N, V) == ls->xent_forward(p2, l, t, N, V));
        CHECK(memcmp(p1, p2, sizeof p1) == 0);
    }
    /* ATOME_KERNELS=ref (tests/test_kernels.c checks the variable itself)
     * selects the reference layer functions too. */
    CHECK(atm_kernels_select("ref") == 0);
    CHECK(atm_layer_kernels()->layernorm_forward == atm_layernorm_forward_ref &&
          atm_layer_kernels()->xent_forward == atm_xent_forward_ref && atm_layer_kernels()->exp == atm_exp_ref &&
          atm_layer_kernels()->attn_select == atm_atome_attn_select_ref);
    CHECK(atm_kernels_select("auto") == 0);
    CHECK(strcmp(atm_layer_kernels()->name, atm_kernels_name()) == 0);
}

int main(void) {
    atm_rng_seed(&g_rng, 4242);
    printf("kernel sets:");
    for (int s = 0; s < nsets(); s++) printf(" %s", atm_kernels_set(s)->name);
    printf("\n");
    test_exp();
    test_layernorm();
    test_xent();
    test_softmax();
    test_attn_select();
    test_paths_bitwise();
    test_paths_forward();
    test_dispatch();
    return CHECK_DONE();
}
