/* tests/baselines_fd.h — central finite-difference gradient checks shared by
 * tests/test_vanilla.c and tests/test_gssm.c.
 *
 * The models compute in float, so the FD quotient carries the loss's float
 * rounding divided by 2h. Two checks per tensor cope with that:
 *  - directional: the loss along a random +-1 direction over the whole
 *    tensor (step norm <= 3h); its derivative sums many entries, so it
 *    stands above the rounding noise and a wrong sign or factor anywhere in
 *    the tensor shows;
 *  - entry-wise: the entries with the largest analytic gradient (where the
 *    FD quotient is well conditioned) plus a few random ones, each compared
 *    against max(|analytic|, floor) with floor a fraction of the tensor's
 *    largest gradient, so near-zero entries are judged on the tensor's scale.
 * loss_noise is the absolute error a difference of two loss evaluations may
 * carry from float rounding alone (callers state it); the part of a
 * discrepancy below it is forgiven, the rest is measured relative to the
 * gradient. The perturbation actually applied is (float)(x+h) - (float)(x-h),
 * not 2h. */
#ifndef ATOME_TESTS_BASELINES_FD_H
#define ATOME_TESTS_BASELINES_FD_H
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include "core/rng.h"
#include "core/train/model.h"

typedef double (*fd_loss_fn)(void *ctx);

typedef struct {
    double worst_entry;   /* max over entries of (|fd - an| - noise) / max(|an|, floor) */
    double worst_dir;     /* the same for directional derivatives */
    double raw_entry, raw_dir;   /* the same without the noise allowance (for the log) */
    int n_entries, n_dirs;
} fd_result;

static double fd_uniform(atm_rng *r) { return (double)(atm_rng_u32(r) >> 8) / 16777216.0; }

/* x[n]: the tensor inside the model's parameters (perturbed in place and
 * restored); g[n]: its analytic gradient; f: the loss at the current x. */
static fd_result fd_check_tensor(float *x, const float *g, size_t n, double h, fd_loss_fn f,
                                 void *ctx, atm_rng *rng, int n_top, int n_rand, int n_dirs,
                                 double floor_frac, double loss_noise) {
    fd_result R = { 0.0, 0.0, 0.0, 0.0, 0, 0 };
    double gmax = 0.0;
    for (size_t i = 0; i < n; i++) if (fabs(g[i]) > gmax) gmax = fabs(g[i]);
    const double floor = floor_frac * gmax + 1e-12;
    /* entry-wise: top |g| entries (repeated selection, n is small) and random ones */
    char *used = calloc(n, 1);
    for (int k = 0; k < n_top + n_rand && k < (int)n; k++) {
        size_t pick = 0;
        if (k < n_top) {
            double best = -1.0;
            for (size_t i = 0; i < n; i++)
                if (!used[i] && fabs(g[i]) > best) { best = fabs(g[i]); pick = i; }
        } else {
            pick = (size_t)atm_rng_below(rng, (uint32_t)n);
        }
        used[pick] = 1;
        float x0 = x[pick];
        float xp = (float)(x0 + h), xm = (float)(x0 - h);
        x[pick] = xp; double lp = f(ctx);
        x[pick] = xm; double lm = f(ctx);
        x[pick] = x0;
        double fd = (lp - lm) / ((double)xp - (double)xm);
        double den = fmax(fabs(g[pick]), floor);
        double e = fmax(0.0, fabs(fd - g[pick]) - loss_noise / ((double)xp - (double)xm)) / den;
        if (e > R.worst_entry) R.worst_entry = e;
        if (fabs(fd - g[pick]) / den > R.raw_entry) R.raw_entry = fabs(fd - g[pick]) / den;
        R.n_entries++;
    }
    free(used);
    /* directional */
    float *x0 = malloc(sizeof(float) * n), *xp = malloc(sizeof(float) * n),
          *xm = malloc(sizeof(float) * n);
    double g2 = 0.0;
    for (size_t i = 0; i < n; i++) { x0[i] = x[i]; g2 += (double)g[i] * g[i]; }
    /* Per-entry step hd = h * min(1, 3/sqrt(n)): the whole step has norm
     * <= 3h, so moving every entry of a large tensor (e.g. an embedding
     * table) stays in the region where the loss is locally quadratic. */
    const double hd = h * fmin(1.0, 3.0 / sqrt((double)n));
    /* A random +-1 direction gives a loss difference of typical size
     * 2*hd*|g|_2; one that cancels to near zero by chance is judged on that
     * scale. */
    const double dfloor = floor_frac * 2.0 * hd * sqrt(g2) + 1e-300;
    for (int k = 0; k < n_dirs; k++) {
        double an = 0.0;
        for (size_t i = 0; i < n; i++) {
            double v = fd_uniform(rng) < 0.5 ? -1.0 : 1.0;
            xp[i] = (float)(x0[i] + hd * v);
            xm[i] = (float)(x0[i] - hd * v);
            /* the derivative along the applied step, per unit of the step */
            an += g[i] * ((double)xp[i] - (double)xm[i]);
        }
        for (size_t i = 0; i < n; i++) x[i] = xp[i];
        double lp = f(ctx);
        for (size_t i = 0; i < n; i++) x[i] = xm[i];
        double lm = f(ctx);
        for (size_t i = 0; i < n; i++) x[i] = x0[i];
        double fd = lp - lm;
        double den = fmax(fabs(an), dfloor);
        double e = fmax(0.0, fabs(fd - an) - loss_noise) / den;
        if (e > R.worst_dir) R.worst_dir = e;
        if (fabs(fd - an) / den > R.raw_dir) R.raw_dir = fabs(fd - an) / den;
        R.n_dirs++;
    }
    free(x0); free(xp); free(xm);
    return R;
}

/* Normal deviate (Box-Muller) for test inputs. */
static float randn(atm_rng *r) {
    double u1 = (fd_uniform(r) + 1e-9), u2 = fd_uniform(r);
    return (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}

/* ---- whole-model checks shared by test_vanilla.c and test_gssm.c ---- */

/* Whole-model FD. The loss (~ln 256 = 5.5) is a double mean of float
 * per-row cross-entropies; two evaluations at nearby points differ from the
 * exact difference by rounding alone, measured at <= 2.7e-7 over 300 random
 * 1e-6 steps of these test models (about half an ulp of 5.5): MODEL_NOISE =
 * 1e-6 of it is forgiven. h = 3e-3 keeps the truncation error (h^2 f'''/6,
 * largest for LN vectors feeding the nonlinear paths) well under 1% of the
 * gradient; MODEL_TOL = 2e-2 is the relative error accepted beyond that. */
#define MODEL_H 3e-3
#define MODEL_NOISE 1e-6
#define MODEL_TOL 2e-2

typedef struct {
    const atm_family *f;
    const atm_layout *L;
    float *w;
    void *acts;
    const uint8_t *in, *tgt;
    int B, T;
} model_ctx;

static double model_loss(void *p) {
    model_ctx *c = p;
    return c->f->forward(c->L, c->w, c->acts, c->in, c->tgt, c->B, c->T);
}


/* Checks every tensor of the model in ctx: per-entry and random-direction FD
 * against dw, both within MODEL_TOL after the noise allowance; prints the
 * worst raw errors under label. Needs check.h's CHECKF. */
static void fd_check_model(const char *label, model_ctx *ctx, const float *dw, atm_rng *rng) {
    const atm_layout *L = ctx->L;
    double worst_e = 0.0, worst_d = 0.0, adj = 0.0;
    const char *we = "", *wd = "";
    for (int i = 0; i < L->n_tensors; i++) {
        const atm_tensor *t = &L->t[i];
        size_t n = (size_t)t->rows * t->cols;
        fd_result R = fd_check_tensor(ctx->w + t->off, dw + t->off, n, MODEL_H, model_loss, ctx, rng,
                                      6, 4, 3, 0.05, MODEL_NOISE);
        if (R.raw_entry > worst_e) { worst_e = R.raw_entry; we = t->name; }
        if (R.raw_dir > worst_d) { worst_d = R.raw_dir; wd = t->name; }
        adj = fmax(adj, fmax(R.worst_entry, R.worst_dir));
        CHECKF(R.worst_entry < MODEL_TOL, "%s: entry rel err %g", t->name, R.worst_entry);
        CHECKF(R.worst_dir < MODEL_TOL, "%s: dir rel err %g", t->name, R.worst_dir);
    }
    printf("%s model FD: raw worst entry %.2e (%s), dir %.2e (%s); after the noise allowance %.2e\n",
           label, worst_e, we, worst_d, wd, adj);
}

#endif
