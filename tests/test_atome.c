/* tests/test_atome.c — the atome family (core/train/atome.c).
 *
 * What is pinned here:
 *  - parameter counts and tensor order of atome-60k, atome-944k and ablated
 *    shapes (derived by hand below, not copied);
 *  - finite-difference gradients of each pathway primitive (conv, SSM scan,
 *    top-k attention, router mixing) and of the whole model's loss with
 *    respect to samples of every tensor, for every pathway combination;
 *  - top-k tie handling (the earlier index wins);
 *  - streaming generation: gen_step equals forward() on a sequence no longer
 *    than the window, and equals an independent double-precision reference
 *    of the window rule (docs/model-atome.md) when the window slides;
 *  - backward accumulates, and a forward smaller than the allocation matches.
 *
 * Finite differences are taken on float code (the model only exists in
 * float), so each check uses central differences with a step chosen per
 * test and compares the whole gradient vector of a tensor at once:
 * rel = ||g_fd - g||_2 / max(||g||_2, ||g_fd||_2). The tolerances are stated
 * where used, with the reason. */
#include "check.h"
#include "core/train/model.h"
#include "core/train/layers.h"
#include "core/train/atome_layers.h"
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- helpers ------------------------------------------------------------ */

static float rnd_normal(atm_rng *r) {
    float u1 = ((float)(atm_rng_u32(r) >> 8) + 1.0f) * (1.0f / 16777216.0f);
    float u2 = (float)(atm_rng_u32(r) >> 8) * (1.0f / 16777216.0f);
    return sqrtf(-2.0f * logf(u1)) * cosf(6.28318530717958647692f * u2);
}
static void fill_normal(float *x, int n, float sd, atm_rng *r) { for (int i = 0; i < n; i++) x[i] = sd * rnd_normal(r); }
static void fill_uniform(float *x, int n, float lo, float hi, atm_rng *r) {
    for (int i = 0; i < n; i++) x[i] = lo + (hi - lo) * (float)(atm_rng_u32(r) >> 8) * (1.0f / 16777216.0f);
}
static double dot_d(const float *a, const float *b, int n) {
    double s = 0.0;
    for (int i = 0; i < n; i++) s += (double)a[i] * (double)b[i];
    return s;
}

typedef double (*loss_fn)(void *ctx);

/* Central differences on x[i] for every i (stride 1) and the relative error
 * of the whole vector against grad. The step is divided by the difference of
 * the two float points actually evaluated, not by 2*eps. */
static double fd_rel(loss_fn f, void *ctx, float *x, const float *grad, int n, float eps) {
    double num = 0.0, den_a = 0.0, den_f = 0.0;
    for (int i = 0; i < n; i++) {
        float save = x[i], xp = save + eps, xm = save - eps;
        x[i] = xp; double lp = f(ctx);
        x[i] = xm; double lm = f(ctx);
        x[i] = save;
        double fd = (lp - lm) / ((double)xp - (double)xm);
        double d = fd - (double)grad[i];
        num += d * d; den_a += (double)grad[i] * grad[i]; den_f += fd * fd;
    }
    double den = sqrt(den_a > den_f ? den_a : den_f);
    return den > 0.0 ? sqrt(num) / den : sqrt(num);
}

/* ---- layout / parameter counts ------------------------------------------ */

static void test_layout(void) {
    atm_config c;
    atm_layout L;
    CHECK(atm_config_by_name("atome-60k", &c) == 0);
    CHECK(atm_layout_build(&c, &L) == 0);
    /* V=256, d=64, L=4, d_h=16, K=5. Per block: LN 2*64=128, conv 64*5=320,
     * SSM 3*64=192, W_q+W_k 2*16*64=2048, W_v 64*64=4096, router 3*64=192
     * -> 6976; 4 blocks 27904; embed + unembed 2*256*64=32768; ln_f 128.
     * Total 27904+32768+128 = 60800. Ternary: embed+unembed 32768 +
     * 4*(320+2048+4096+192) = 32768+26624 = 59392. */
    CHECKF(L.n_params == 60800, "atome-60k has %zu params", L.n_params);
    CHECKF(atm_layout_quant_params(&L) == 59392, "atome-60k has %zu ternary params", atm_layout_quant_params(&L));
    CHECK(L.n_tensors == 1 + 4 * 10 + 3);
    static const char *const blk0[] = { "blocks.0.ln.g", "blocks.0.ln.b", "blocks.0.conv", "blocks.0.ssm.a_raw",
        "blocks.0.ssm.b", "blocks.0.ssm.c", "blocks.0.attn.wq", "blocks.0.attn.wk", "blocks.0.attn.wv",
        "blocks.0.router" };
    CHECK(strcmp(L.t[0].name, "embed") == 0 && L.t[0].rows == 256 && L.t[0].cols == 64);
    for (int i = 0; i < 10; i++) CHECKF(strcmp(L.t[1 + i].name, blk0[i]) == 0, "tensor %d is %s", 1 + i, L.t[1 + i].name);
    CHECK(strcmp(L.t[11].name, "blocks.1.ln.g") == 0);
    CHECK(strcmp(L.t[41].name, "ln_f.g") == 0 && strcmp(L.t[42].name, "ln_f.b") == 0);
    CHECK(strcmp(L.t[43].name, "unembed") == 0 && L.t[43].rows == 256 && L.t[43].cols == 64);
    const atm_tensor *cv = &L.t[3], *wq = &L.t[7], *wv = &L.t[9], *ro = &L.t[10];
    CHECK(cv->rows == 64 && cv->cols == 5 && cv->kind == ATM_TK_QUANT);
    CHECK(wq->rows == 16 && wq->cols == 64 && wv->rows == 64 && wv->cols == 64 && ro->rows == 3 && ro->cols == 64);
    /* Offsets are contiguous in table order (the legacy file order). */
    size_t off = 0;
    for (int i = 0; i < L.n_tensors; i++) { CHECK(L.t[i].off == off); off += (size_t)L.t[i].rows * L.t[i].cols; }
    /* Init rules (reference §1.6): std = in^-1/2, conv K^-1/2, a_raw 1.5, LN 1/0. */
    CHECK(L.t[0].init == ATM_INIT_NORMAL && fabsf(L.t[0].init_a - 0.125f) < 1e-7f);
    CHECK(cv->init == ATM_INIT_NORMAL && fabsf(cv->init_a - 1.0f / sqrtf(5.0f)) < 1e-7f);
    CHECK(L.t[4].init == ATM_INIT_CONST && L.t[4].init_a == 1.5f && L.t[4].kind == ATM_TK_FP32);
    CHECK(L.t[5].init == ATM_INIT_NORMAL && fabsf(L.t[5].init_a - 0.125f) < 1e-7f && L.t[5].kind == ATM_TK_FP32);
    CHECK(L.t[1].init == ATM_INIT_CONST && L.t[1].init_a == 1.0f && L.t[2].init_a == 0.0f);
    CHECK(wq->init_a == 0.125f && wv->init_a == 0.125f && ro->init_a == 0.125f && L.t[43].init_a == 0.125f);

    CHECK(atm_config_by_name("atome-944k", &c) == 0);
    CHECK(atm_layout_build(&c, &L) == 0);
    /* d=256, L=8, d_h=64, K=5: block 2*256 + 5*256 + 3*256 + 2*64*256 + 256*256
     * + 3*256 = 512+1280+768+32768+65536+768 = 101632; 8 blocks 813056;
     * embed+unembed 2*256*256 = 131072; ln_f 512. Total 944640. */
    CHECKF(L.n_params == 944640, "atome-944k has %zu params", L.n_params);

    /* atome-60k without attention: block 128 + 320 + 192 + router 2*64=128
     * = 768; 4 blocks 3072; + 32768 + 128 = 35968. */
    CHECK(atm_config_by_name("atome-60k", &c) == 0);
    c.pathways = ATM_PATH_CONV | ATM_PATH_SSM;
    CHECK(atm_layout_build(&c, &L) == 0);
    CHECKF(L.n_params == 35968, "atome-60k conv+ssm has %zu params", L.n_params);
    CHECK(atm_layout_find(&L, "blocks.0.attn.wq") < 0 && atm_layout_find(&L, "blocks.3.attn.wv") < 0);
    int ri = atm_layout_find(&L, "blocks.2.router");
    CHECK(ri >= 0 && L.t[ri].rows == 2);
    /* SSM only: block 128 + 192 + router 64 = 384; 4*384 + 32768 + 128 = 34432. */
    c.pathways = ATM_PATH_SSM;
    CHECK(atm_layout_build(&c, &L) == 0);
    CHECKF(L.n_params == 34432, "atome-60k ssm-only has %zu params", L.n_params);
    CHECK(atm_layout_find(&L, "blocks.0.conv") < 0);
    /* Conv+attn, no SSM: block 128 + 320 + 6144 + 128 = 6720; 4*6720 + 32896 = 59776. */
    c.pathways = ATM_PATH_CONV | ATM_PATH_ATTN;
    CHECK(atm_layout_build(&c, &L) == 0);
    CHECKF(L.n_params == 59776, "atome-60k conv+attn has %zu params", L.n_params);
    CHECK(atm_layout_find(&L, "blocks.1.ssm.a_raw") < 0);

    /* Empirical init statistics on atome-60k: 16384 N(0, 1/64) draws give a
     * sample std within ~1.1% (1 s.e. = std/sqrt(2n)); 5% cannot be missed
     * by chance. */
    CHECK(atm_config_by_name("atome-60k", &c) == 0);
    CHECK(atm_layout_build(&c, &L) == 0);
    float *w = malloc(sizeof(float) * L.n_params);
    atm_rng rng; atm_rng_seed(&rng, 11);
    atm_init_params(&L, w, &rng);
    double ss = 0.0;
    for (int i = 0; i < 256 * 64; i++) ss += (double)w[i] * w[i];
    double sd = sqrt(ss / (256.0 * 64.0));
    CHECKF(fabs(sd - 0.125) < 0.05 * 0.125, "embed init std %g", sd);
    int ai = atm_layout_find(&L, "blocks.3.ssm.a_raw");
    CHECK(ai >= 0 && w[L.t[ai].off] == 1.5f && w[L.t[ai].off + 63] == 1.5f);
    free(w);

    /* Family pointer and invalid shapes. */
    CHECK(atm_family_get(ATM_FAMILY_ATOME) == &atm_family_atome);
    CHECK(atm_config_by_name("atome-60k", &c) == 0);
    c.pathways = 0;
    CHECK(atm_layout_build(&c, &L) != 0);
}

/* ---- pathway primitives ------------------------------------------------- */

typedef struct { int B, T, C, K; float *u, *w, *out, *R, *scr; } conv_ctx;
static double conv_loss(void *p) {
    conv_ctx *x = p;
    atm_atome_conv_forward(x->out, x->u, x->w, x->scr, x->B, x->T, x->C, x->K);
    return dot_d(x->out, x->R, x->B * x->T * x->C);
}

static void test_conv(void) {
    static const int Ks[] = { 1, 3, 9 };            /* 9 > T: taps past the start read zeros */
    for (int ki = 0; ki < 3; ki++) {
        conv_ctx x = { 2, 7, 7, Ks[ki], 0, 0, 0, 0, 0 };   /* C = 7: the SIMD groups' scalar tails run */
        int N = x.B * x.T * x.C, NW = x.C * x.K;
        atm_rng r; atm_rng_seed(&r, 100 + ki);
        x.u = malloc(sizeof(float) * N); x.out = malloc(sizeof(float) * N); x.R = malloc(sizeof(float) * N);
        x.w = malloc(sizeof(float) * NW); x.scr = malloc(sizeof(float) * ATM_ATOME_SCRATCH(x.C, x.K));
        float *du = calloc(N, sizeof(float)), *dw = calloc(NW, sizeof(float));
        fill_normal(x.u, N, 1.0f, &r); fill_normal(x.w, NW, 0.5f, &r); fill_normal(x.R, N, 1.0f, &r);
        conv_loss(&x);
        /* Direct check of the definition at one point: b=1, t=4, c=5. */
        {
            int b = 1, t = 4, c = 5;
            double ref = 0.0;
            for (int j = 0; j < x.K && j <= t; j++)
                ref += (double)x.w[c * x.K + j] * x.u[((b * x.T) + t - j) * x.C + c];
            CHECK(fabs(ref - x.out[(b * x.T + t) * x.C + c]) < 1e-5);
        }
        atm_atome_conv_backward(du, dw, x.R, x.u, x.w, x.scr, x.B, x.T, x.C, x.K);
        /* The loss is linear in u and in w, so central differences carry no
         * truncation error; what is left is float rounding of the ~100-term
         * output sums (~1e-7 relative) divided by 2*eps = 0.02. 1e-3 leaves
         * a wide margin over that and is far below any real mistake (O(1)). */
        double eu = fd_rel(conv_loss, &x, x.u, du, N, 1e-2f), ew = fd_rel(conv_loss, &x, x.w, dw, NW, 1e-2f);
        CHECKF(eu < 1e-3, "conv K=%d du rel err %g", x.K, eu);
        CHECKF(ew < 1e-3, "conv K=%d dw rel err %g", x.K, ew);
        free(x.u); free(x.out); free(x.R); free(x.w); free(x.scr); free(du); free(dw);
    }
}

typedef struct { int B, T, C; float *u, *a, *b, *c, *s, *out, *R, *scr; } ssm_ctx;
static double ssm_loss(void *p) {
    ssm_ctx *x = p;
    atm_atome_ssm_forward(x->s, x->out, x->u, x->a, x->b, x->c, x->scr, x->B, x->T, x->C);
    return dot_d(x->out, x->R, x->B * x->T * x->C);
}

static void test_ssm(void) {
    ssm_ctx x = { 2, 7, 9, 0, 0, 0, 0, 0, 0, 0, 0 };   /* C = 9: one lane past the groups of 4 */
    int N = x.B * x.T * x.C, C = x.C;
    atm_rng r; atm_rng_seed(&r, 200);
    x.u = malloc(sizeof(float) * N); x.s = malloc(sizeof(float) * N); x.out = malloc(sizeof(float) * N);
    x.R = malloc(sizeof(float) * N); x.scr = malloc(sizeof(float) * ATM_ATOME_SCRATCH(C, 0));
    x.a = malloc(sizeof(float) * C); x.b = malloc(sizeof(float) * C); x.c = malloc(sizeof(float) * C);
    fill_normal(x.u, N, 1.0f, &r); fill_normal(x.R, N, 1.0f, &r);
    fill_uniform(x.a, C, -2.0f, 2.0f, &r);           /* a = tanh(a_raw) of both signs */
    fill_normal(x.b, C, 0.7f, &r); fill_normal(x.c, C, 0.7f, &r);
    ssm_loss(&x);
    /* Definition at b=1, c=3, t=6: S = c*b*sum_tau a^(t-tau) u_tau (convolution form). */
    {
        int b = 1, c = 3, t = 6;
        double a = tanh((double)x.a[c]), acc = 0.0;
        for (int tau = 0; tau <= t; tau++) acc += pow(a, t - tau) * x.u[((b * x.T) + tau) * C + c];
        double ref = (double)x.c[c] * x.b[c] * acc;
        CHECKF(fabs(ref - x.out[(b * x.T + t) * C + c]) < 1e-5 * (1.0 + fabs(ref)), "ssm %g vs %g", ref, x.out[(b * x.T + t) * C + c]);
        /* The state restarts at zero for the second sequence: t = 0 of b = 1. */
        CHECK(x.s[(1 * x.T + 0) * C + c] == x.b[c] * x.u[(1 * x.T + 0) * C + c]);
    }
    float *du = calloc(N, sizeof(float)), *da = calloc(C, sizeof(float)), *db = calloc(C, sizeof(float)),
          *dc = calloc(C, sizeof(float));
    atm_atome_ssm_backward(du, da, db, dc, x.R, x.u, x.s, x.a, x.b, x.c, x.scr, x.B, x.T, x.C);
    /* u, b, c enter linearly (rounding only, as for conv). a_raw is
     * nonlinear (powers of tanh up to 6): truncation error of the central
     * difference is O(eps^2 * f''') ~ 1e-5 relative at eps = 3e-3, rounding
     * ~1e-7/eps ~ 3e-5; 2e-3 bounds both with margin. */
    double eu = fd_rel(ssm_loss, &x, x.u, du, N, 1e-2f);
    double eb = fd_rel(ssm_loss, &x, x.b, db, C, 1e-2f);
    double ec = fd_rel(ssm_loss, &x, x.c, dc, C, 1e-2f);
    double ea = fd_rel(ssm_loss, &x, x.a, da, C, 3e-3f);
    CHECKF(eu < 1e-3, "ssm du rel err %g", eu);
    CHECKF(eb < 1e-3, "ssm db rel err %g", eb);
    CHECKF(ec < 1e-3, "ssm dc rel err %g", ec);
    CHECKF(ea < 2e-3, "ssm da_raw rel err %g", ea);
    free(x.u); free(x.s); free(x.out); free(x.R); free(x.scr); free(x.a); free(x.b); free(x.c);
    free(du); free(da); free(db); free(dc);
}

typedef struct { int B, T, DH, C, TK; float *q, *k, *v, *out, *p, *R, *scr; int32_t *idx, *idx0; int changed; } attn_ctx;
static double attn_loss(void *pp) {
    attn_ctx *x = pp;
    atm_atome_attn_forward(x->out, x->idx, x->p, x->q, x->k, x->v, x->scr, x->B, x->T, x->DH, x->C, x->TK);
    if (memcmp(x->idx, x->idx0, sizeof(int32_t) * (size_t)x->B * x->T * x->TK) != 0) x->changed++;
    return dot_d(x->out, x->R, x->B * x->T * x->C);
}

/* Smallest gap, over all rows with a real selection (t+1 > TK), between the
 * k-th and (k+1)-th largest score, and between any two kept scores. */
static float attn_min_gap(const attn_ctx *x) {
    float gap = 1e30f, sc[64];
    float scale = 1.0f / sqrtf((float)x->DH);
    for (int b = 0; b < x->B; b++)
        for (int t = 0; t < x->T; t++) {
            int n = t + 1;
            for (int j = 0; j < n; j++) {
                double d = dot_d(x->q + (b * x->T + t) * x->DH, x->k + (b * x->T + j) * x->DH, x->DH);
                sc[j] = (float)d * scale;
            }
            for (int i = 0; i < n; i++)           /* sort descending */
                for (int j = i + 1; j < n; j++) if (sc[j] > sc[i]) { float tmp = sc[i]; sc[i] = sc[j]; sc[j] = tmp; }
            int lim = n < x->TK + 1 ? n : x->TK + 1;
            for (int i = 0; i + 1 < lim; i++) if (sc[i] - sc[i + 1] < gap) gap = sc[i] - sc[i + 1];
        }
    return gap;
}

static void test_attn(void) {
    static const int TKs[] = { 2, 3 };
    for (int ti = 0; ti < 2; ti++) {
        attn_ctx x = { 2, 7, 5, 7, TKs[ti], 0, 0, 0, 0, 0, 0, 0, 0, 0, 0 };   /* DH = 5, C = 7: odd widths */
        int N = x.B * x.T;
        x.q = malloc(sizeof(float) * N * x.DH); x.k = malloc(sizeof(float) * N * x.DH);
        x.v = malloc(sizeof(float) * N * x.C); x.out = malloc(sizeof(float) * N * x.C);
        x.R = malloc(sizeof(float) * N * x.C); x.p = malloc(sizeof(float) * N * x.TK);
        x.idx = malloc(sizeof(int32_t) * N * x.TK); x.idx0 = malloc(sizeof(int32_t) * N * x.TK);
        x.scr = malloc(sizeof(float) * (x.DH + 1) * x.T);
        /* Draw until every selection boundary (and every pair of kept scores)
         * is at least 0.05 apart: a 1e-3 step then moves a score by < 0.01
         * and cannot change the kept set or its order. */
        uint32_t seed = 300 + 17 * ti;
        float gap = 0.0f;
        for (int tries = 0; tries < 1000 && gap < 0.05f; tries++) {
            atm_rng r; atm_rng_seed(&r, seed++);
            fill_normal(x.q, N * x.DH, 1.0f, &r); fill_normal(x.k, N * x.DH, 1.0f, &r);
            fill_normal(x.v, N * x.C, 1.0f, &r); fill_normal(x.R, N * x.C, 1.0f, &r);
            gap = attn_min_gap(&x);
        }
        CHECKF(gap >= 0.05f, "no tie-free draw found (gap %g)", gap);
        atm_atome_attn_forward(x.out, x.idx0, x.p, x.q, x.k, x.v, x.scr, x.B, x.T, x.DH, x.C, x.TK);
        /* k_eff = min(TK, t+1): row t=0 keeps one entry, rows past TK keep TK. */
        CHECK(x.idx0[0] == 0 && x.p[0] == 1.0f && x.idx0[1] == -1);
        {
            int t = 6, kept = 0;
            double ps = 0.0;
            for (int i = 0; i < x.TK; i++) { kept += x.idx0[t * x.TK + i] >= 0; ps += x.p[t * x.TK + i]; }
            CHECK(kept == x.TK && fabs(ps - 1.0) < 1e-6);
        }
        x.changed = 0;
        attn_loss(&x);
        float *dq = calloc(N * x.DH, sizeof(float)), *dk = calloc(N * x.DH, sizeof(float)),
              *dv = calloc(N * x.C, sizeof(float));
        atm_atome_attn_backward(dq, dk, dv, x.R, x.idx, x.p, x.q, x.k, x.v, x.B, x.T, x.DH, x.C, x.TK);
        /* Softmax of O(1) scores: truncation O(eps^2) ~ 1e-6 relative at
         * eps = 1e-3; float rounding of the loss (~1e-6 absolute over 112
         * terms) / 2e-3 ~ 5e-4 absolute on O(1) gradients. v is linear. */
        double eq = fd_rel(attn_loss, &x, x.q, dq, N * x.DH, 1e-3f);
        double ek = fd_rel(attn_loss, &x, x.k, dk, N * x.DH, 1e-3f);
        double ev = fd_rel(attn_loss, &x, x.v, dv, N * x.C, 1e-2f);
        CHECKF(x.changed == 0, "a perturbation changed the top-k selection %d times", x.changed);
        CHECKF(eq < 3e-3, "attn TK=%d dq rel err %g", x.TK, eq);
        CHECKF(ek < 3e-3, "attn TK=%d dk rel err %g", x.TK, ek);
        CHECKF(ev < 1e-3, "attn TK=%d dv rel err %g", x.TK, ev);
        free(x.q); free(x.k); free(x.v); free(x.out); free(x.R); free(x.p); free(x.idx); free(x.idx0); free(x.scr);
        free(dq); free(dk); free(dv);
    }
}

typedef struct { int N, C, P; float *rl, *rw, *paths[3], *hin, *hout, *R; } mix_ctx;
static double mix_loss(void *p) {
    mix_ctx *x = p;
    memcpy(x->rw, x->rl, sizeof(float) * x->N * x->P);  /* mix_forward softmaxes in place */
    atm_atome_mix_forward(x->hout, x->rw, x->hin, (const float *const *)x->paths, x->N, x->C, x->P);
    return dot_d(x->hout, x->R, x->N * x->C);
}

static void test_mix(void) {
    for (int P = 1; P <= 3; P++) {
        mix_ctx x = { 5, 11, P, 0, 0, { 0, 0, 0 }, 0, 0, 0 };   /* C = 11: dotf's 8-lane tail */
        int NC = x.N * x.C;
        atm_rng r; atm_rng_seed(&r, 400 + P);
        x.rl = malloc(sizeof(float) * x.N * P); x.rw = malloc(sizeof(float) * x.N * P);
        x.hin = malloc(sizeof(float) * NC); x.hout = malloc(sizeof(float) * NC); x.R = malloc(sizeof(float) * NC);
        float *dpaths[3] = { 0, 0, 0 };
        for (int i = 0; i < P; i++) { x.paths[i] = malloc(sizeof(float) * NC); fill_normal(x.paths[i], NC, 1.0f, &r);
                                      dpaths[i] = calloc(NC, sizeof(float)); }
        fill_normal(x.rl, x.N * P, 1.5f, &r); fill_normal(x.hin, NC, 1.0f, &r); fill_normal(x.R, NC, 1.0f, &r);
        mix_loss(&x);
        /* Weights sum to 1 and the mixing is hin + sum r_p path_p. */
        double rs = 0.0;
        for (int i = 0; i < P; i++) rs += x.rw[2 * P + i];
        CHECK(fabs(rs - 1.0) < 1e-6);
        {
            double ref = x.hin[2 * x.C + 3];
            for (int i = 0; i < P; i++) ref += (double)x.rw[2 * P + i] * x.paths[i][2 * x.C + 3];
            CHECK(fabs(ref - x.hout[2 * x.C + 3]) < 1e-5);
        }
        float *drl = calloc(x.N * P, sizeof(float));
        atm_atome_mix_backward(drl, dpaths, x.R, x.rw, (const float *const *)x.paths, x.N, x.C, P);
        /* Softmax of O(1) logits (P = 1: constant weight 1, gradient exactly
         * 0, so rel falls back to the absolute FD noise). Same budget as
         * attention. */
        double er = fd_rel(mix_loss, &x, x.rl, drl, x.N * P, 1e-3f);
        CHECKF(er < 3e-3, "mix P=%d d(router logits) err %g", P, er);
        for (int i = 0; i < P; i++) {
            double ep = fd_rel(mix_loss, &x, x.paths[i], dpaths[i], NC, 1e-2f);
            CHECKF(ep < 1e-3, "mix P=%d dpath[%d] rel err %g", P, i, ep);
        }
        for (int i = 0; i < P; i++) { free(x.paths[i]); free(dpaths[i]); }
        free(x.rl); free(x.rw); free(x.hin); free(x.hout); free(x.R); free(drl);
    }
}

/* ---- top-k ties ----------------------------------------------------------- */

static void test_ties(void) {
    float s[4] = { 0 }; int32_t ix[4] = { 0 }; int n;
    /* Candidates in position order: scores 1, 2, 2, 1, 2. */
    static const float sc[5] = { 1.0f, 2.0f, 2.0f, 1.0f, 2.0f };
    n = 0; for (int j = 0; j < 5; j++) atm_atome_topk_insert(s, ix, &n, 1, sc[j], j);
    CHECK(n == 1 && ix[0] == 1);
    n = 0; for (int j = 0; j < 5; j++) atm_atome_topk_insert(s, ix, &n, 2, sc[j], j);
    CHECK(n == 2 && ix[0] == 1 && ix[1] == 2);
    n = 0; for (int j = 0; j < 5; j++) atm_atome_topk_insert(s, ix, &n, 4, sc[j], j);
    CHECK(n == 4 && ix[0] == 1 && ix[1] == 2 && ix[2] == 4 && ix[3] == 0);
    /* A strictly greater later score does replace. */
    n = 0; for (int j = 0; j < 3; j++) atm_atome_topk_insert(s, ix, &n, 1, (float)j, j);
    CHECK(n == 1 && ix[0] == 2);

    /* Through the attention primitive: q = (1,0) everywhere; keys
     * (1,0), (0.5,0), (1,0), (1,0) give exactly equal scores at 0, 2, 3. */
    float q[8] = { 1, 0, 1, 0, 1, 0, 1, 0 }, k[8] = { 1, 0, 0.5f, 0, 1, 0, 1, 0 };
    float v[8] = { 1, 0, 2, 0, 3, 0, 4, 0 }, out[8], p[8];
    int32_t idx[8];
    float scr[12];
    atm_atome_attn_forward(out, idx, p, q, k, v, scr, 1, 4, 2, 2, 1);
    CHECK(idx[2] == 0 && idx[3] == 0);                 /* TK=1: position 0 beats 2 and 3 */
    CHECK(out[3 * 2] == 1.0f);
    atm_atome_attn_forward(out, idx, p, q, k, v, scr, 1, 4, 2, 2, 2);
    CHECK(idx[3 * 2] == 0 && idx[3 * 2 + 1] == 2);     /* TK=2 at t=3: {0, 2}, not 3 */
    CHECK(fabsf(out[3 * 2] - 2.0f) < 1e-6f);           /* equal weights on v_0=1 and v_2=3 */
}

/* ---- whole model: finite differences ------------------------------------- */

typedef struct {
    const atm_layout *L; float *w; void *acts; const uint8_t *in, *tgt; int B, T;
    uint64_t sel0; int changed;
} model_ctx;

static double model_loss(void *p) {
    model_ctx *x = p;
    double l = atm_family_atome.forward(x->L, x->w, x->acts, x->in, x->tgt, x->B, x->T);
    if (atm_atome_selection_hash(x->acts) != x->sel0) x->changed++;
    return l;
}

static void small_config(atm_config *c, int pathways) {
    memset(c, 0, sizeof *c);
    c->family = ATM_FAMILY_ATOME; c->vocab = 256; c->d_model = 8; c->n_layers = 2;
    c->d_head = 4; c->kernel = 3; c->top_k = 2; c->pathways = pathways;
}

/* odd_width: d = 7, d_head = 3 so the scalar tails of the SIMD helpers run.
 * window: the config's attn_window (0 = none; T = 7 here, so 2..6 slide). */
static void test_model_fd(int pathways, int odd_width, int window) {
    atm_config c; atm_layout L;
    small_config(&c, pathways);
    if (odd_width) { c.d_model = 7; c.d_head = 3; }
    c.attn_window = window;
    CHECK(atm_config_validate(&c, NULL, 0) == 0);
    CHECK(atm_layout_build(&c, &L) == 0);
    const int B = 2, T = 7, N = B * T;
    float *w = malloc(sizeof(float) * L.n_params), *dw = calloc(L.n_params, sizeof(float));
    atm_rng r; atm_rng_seed(&r, 500 + pathways + 50 * odd_width);
    atm_init_params(&L, w, &r);
    /* Move LN, SSM and router weights off their symmetric init so every
     * term of the gradient is exercised (gamma=1, beta=0 hide mistakes). */
    for (int i = 0; i < L.n_tensors; i++) {
        if (L.t[i].kind != ATM_TK_FP32) continue;
        float *p = w + L.t[i].off;
        for (int j = 0; j < L.t[i].cols; j++) p[j] += 0.3f * rnd_normal(&r);
    }
    uint8_t in[14], tgt[14];
    for (int i = 0; i < N; i++) { in[i] = (uint8_t)atm_rng_below(&r, 256); tgt[i] = (uint8_t)atm_rng_below(&r, 256); }
    in[3] = in[9];                                     /* a repeated byte: shared embedding row */
    void *acts = atm_family_atome.acts_new(&c, B, T);
    CHECK(acts != NULL);
    model_ctx x = { &L, w, acts, in, tgt, B, T, 0, 0 };
    double loss = atm_family_atome.forward(&L, w, acts, in, tgt, B, T);
    CHECKF(isfinite(loss) && loss > 4.0 && loss < 7.5, "initial loss %g (ln 256 = 5.55)", loss);
    x.sel0 = atm_atome_selection_hash(acts);
    atm_family_atome.backward(&L, w, acts, dw);

    /* Per tensor, up to 24 sampled entries (every entry of small ones); for
     * the embedding, entries of rows that occur in the input (the others
     * have exactly zero gradient, checked separately). eps = 1e-2: the loss
     * (mean CE ~5.5, float logits) is good to ~1e-6 absolute, so rounding
     * contributes ~5e-5 absolute per FD; curvature terms are O(eps^2).
     * Gradients here are 1e-3..1e-1, so the aggregate bound 2e-2 detects
     * any wrong term (those give O(1) relative error) without flaking. */
    int skipped = 0, total = 0;
    for (int ti = 0; ti < L.n_tensors; ti++) {
        const atm_tensor *t = &L.t[ti];
        int n = t->rows * t->cols, ns = n < 24 ? n : 24;
        double num = 0.0, den_a = 0.0, den_f = 0.0;
        for (int s = 0; s < ns; s++) {
            int e;
            if (ns == n) e = s;
            else if (strcmp(t->name, "embed") == 0) e = in[atm_rng_below(&r, N)] * t->cols + (int)atm_rng_below(&r, t->cols);
            else e = (int)atm_rng_below(&r, n);
            float *pw = w + t->off + e;
            float save = *pw, xp = save + 1e-2f, xm = save - 1e-2f;
            x.changed = 0;
            *pw = xp; double lp = model_loss(&x);
            *pw = xm; double lm = model_loss(&x);
            *pw = save;
            total++;
            if (x.changed) { skipped++; continue; }     /* a score crossed the top-k boundary */
            double fd = (lp - lm) / ((double)xp - (double)xm), g = dw[t->off + e];
            num += (fd - g) * (fd - g); den_a += g * g; den_f += fd * fd;
        }
        double den = sqrt(den_a > den_f ? den_a : den_f);
        double rel = den > 0.0 ? sqrt(num) / den : sqrt(num);
        if (strstr(t->name, "router") && t->rows == 1)   /* softmax over one pathway: weight 1, no gradient */
            CHECK(den_a == 0.0);
        else
            CHECKF(den > 1e-6, "pathways %d: tensor %s has a zero gradient sample", pathways, t->name);
        CHECKF(rel < 2e-2, "pathways %d: tensor %s rel err %g", pathways, t->name, rel);
    }
    CHECKF(skipped * 10 <= total, "pathways %d: %d of %d samples changed the top-k set", pathways, skipped, total);
    /* Embedding rows of bytes absent from the input get no gradient. */
    {
        int row = -1;
        for (int v = 0; v < 256 && row < 0; v++) { int seen = 0; for (int i = 0; i < N; i++) seen |= in[i] == v; if (!seen) row = v; }
        double z = 0.0;
        for (int j = 0; j < c.d_model; j++) z += fabs(dw[L.t[0].off + (size_t)row * c.d_model + j]);
        CHECK(z == 0.0);
    }
    atm_family_atome.acts_free(acts);
    free(w); free(dw);
}

/* Backward accumulates, and forward with B' <= B, T' <= T of the allocation
 * gives the same numbers as an exact-size allocation. */
static void test_model_misc(void) {
    atm_config c; atm_layout L;
    small_config(&c, ATM_PATH_ALL);
    CHECK(atm_layout_build(&c, &L) == 0);
    float *w = malloc(sizeof(float) * L.n_params);
    float *g1 = calloc(L.n_params, sizeof(float)), *g2 = calloc(L.n_params, sizeof(float)),
          *g3 = calloc(L.n_params, sizeof(float));
    atm_rng r; atm_rng_seed(&r, 600);
    atm_init_params(&L, w, &r);
    uint8_t in[14], tgt[14];
    for (int i = 0; i < 14; i++) { in[i] = (uint8_t)atm_rng_below(&r, 256); tgt[i] = (uint8_t)atm_rng_below(&r, 256); }
    void *a1 = atm_family_atome.acts_new(&c, 2, 7), *a2 = atm_family_atome.acts_new(&c, 3, 9);
    double l1 = atm_family_atome.forward(&L, w, a1, in, tgt, 2, 7);
    atm_family_atome.backward(&L, w, a1, g1);
    double l2 = atm_family_atome.forward(&L, w, a2, in, tgt, 2, 7);
    atm_family_atome.backward(&L, w, a2, g2);
    CHECK(l1 == l2);
    CHECK(memcmp(g1, g2, sizeof(float) * L.n_params) == 0);
    CHECK(memcmp(atm_family_atome.logits(a1), atm_family_atome.logits(a2), sizeof(float) * 14 * 256) == 0);
    atm_family_atome.backward(&L, w, a2, g2);          /* second call adds the same gradient again */
    double dmax = 0.0, gmax = 0.0;
    for (size_t i = 0; i < L.n_params; i++) {
        double d = fabs((double)g2[i] - 2.0 * g1[i]);
        if (d > dmax) dmax = d;
        if (fabs(g1[i]) > gmax) gmax = fabs(g1[i]);
    }
    CHECKF(dmax <= 1e-6 * gmax, "backward does not accumulate: %g", dmax);
    /* A forward without targets computes logits but arms no backward. */
    CHECK(atm_family_atome.forward(&L, w, a1, in, NULL, 2, 7) == 0.0);
    atm_family_atome.backward(&L, w, a1, g3);
    double z = 0.0;
    for (size_t i = 0; i < L.n_params; i++) z += fabs(g3[i]);
    CHECK(z == 0.0);
    /* Larger than allocated is refused. */
    CHECK(isnan(atm_family_atome.forward(&L, w, a1, in, tgt, 1, 8)));
    atm_family_atome.acts_free(a1); atm_family_atome.acts_free(a2);
    /* Bytes >= vocab are refused (V = 32 here). */
    c.vocab = 32;
    CHECK(atm_layout_build(&c, &L) == 0);
    void *a3 = atm_family_atome.acts_new(&c, 1, 4);
    float *w3 = calloc(L.n_params, sizeof(float));
    uint8_t bad[4] = { 1, 2, 40, 3 }, good[4] = { 1, 2, 4, 3 };
    CHECK(isnan(atm_family_atome.forward(&L, w3, a3, bad, good, 1, 4)));
    CHECK(isnan(atm_family_atome.forward(&L, w3, a3, good, bad, 1, 4)));
    CHECK(isfinite(atm_family_atome.forward(&L, w3, a3, good, good, 1, 4)));
    atm_family_atome.acts_free(a3);
    free(w); free(g1); free(g2); free(g3); free(w3);
}

/* ---- generation ----------------------------------------------------------- */

/* Independent double-precision statement of the generation rule: every
 * layer over the whole prefix, conv over the full history, SSM from zero at
 * position 0 and never reset, attention at t over positions
 * max(0, t-W+1)..t with the strict-greater top-k. logits[T][V]. */
static void ref_generate(const atm_layout *Lay, const float *w, const uint8_t *tok, int T, int W, double *logits) {
    const atm_config *c = &Lay->cfg;
    const int C = c->d_model, V = c->vocab, K = c->kernel, DH = c->d_head, TK = c->top_k, pw = c->pathways;
    double *x = calloc((size_t)T * C, sizeof(double)), *u = calloc((size_t)T * C, sizeof(double));
    double *q = calloc((size_t)T * (DH > 0 ? DH : 1), sizeof(double)), *k = calloc((size_t)T * (DH > 0 ? DH : 1), sizeof(double));
    double *v = calloc((size_t)T * C, sizeof(double)), *dx = calloc((size_t)T * C, sizeof(double));
    char nm[64];
#define TW(name) (w + Lay->t[atm_layout_find(Lay, name)].off)
    const float *emb = TW("embed");
    for (int t = 0; t < T; t++) for (int i = 0; i < C; i++) x[t * C + i] = emb[tok[t] * C + i];
    for (int l = 0; l < c->n_layers; l++) {
#define BW(suffix) (snprintf(nm, sizeof nm, "blocks.%d.%s", l, suffix), TW(nm))
        const float *g = BW("ln.g"), *b = BW("ln.b"), *ro = BW("router");
        for (int t = 0; t < T; t++) {
            double m = 0.0, var = 0.0;
            for (int i = 0; i < C; i++) m += x[t * C + i];
            m /= C;
            for (int i = 0; i < C; i++) var += (x[t * C + i] - m) * (x[t * C + i] - m);
            var /= C;
            for (int i = 0; i < C; i++) u[t * C + i] = (x[t * C + i] - m) / sqrt(var + 1e-5) * g[i] + b[i];
        }
        if (pw & ATM_PATH_ATTN) {
            const float *wq = BW("attn.wq"), *wk = BW("attn.wk"), *wv = BW("attn.wv");
            for (int t = 0; t < T; t++) {
                for (int e = 0; e < DH; e++) { q[t * DH + e] = 0.0; k[t * DH + e] = 0.0;
                    for (int i = 0; i < C; i++) { q[t * DH + e] += wq[e * C + i] * u[t * C + i];
                                                  k[t * DH + e] += wk[e * C + i] * u[t * C + i]; } }
                for (int e = 0; e < C; e++) { v[t * C + e] = 0.0;
                    for (int i = 0; i < C; i++) v[t * C + e] += wv[e * C + i] * u[t * C + i]; }
            }
        }
        const float *cw = (pw & ATM_PATH_CONV) ? BW("conv") : NULL;
        const float *ar = NULL, *sb = NULL, *sc = NULL;
        if (pw & ATM_PATH_SSM) { ar = BW("ssm.a_raw"); sb = BW("ssm.b"); sc = BW("ssm.c"); }
        for (int t = 0; t < T; t++) {
            double path[3][512], rl[3];
            int np = 0;
            if (pw & ATM_PATH_CONV) {
                for (int i = 0; i < C; i++) { path[np][i] = 0.0;
                    for (int j = 0; j < K && j <= t; j++) path[np][i] += cw[i * K + j] * u[(t - j) * C + i]; }
                np++;
            }
            if (pw & ATM_PATH_SSM) {
                for (int i = 0; i < C; i++) {
                    double a = tanh((double)ar[i]), s = 0.0;
                    for (int tau = 0; tau <= t; tau++) s = a * s + sb[i] * u[tau * C + i];
                    path[np][i] = sc[i] * s;
                }
                np++;
            }
            if (pw & ATM_PATH_ATTN) {
                int first = t - W + 1 > 0 ? t - W + 1 : 0, n = t - first + 1, keff = TK < n ? TK : n, cnt = 0;
                double ss[64]; int si[64];
                for (int j = first; j <= t; j++) {
                    double sj = 0.0;
                    for (int e = 0; e < DH; e++) sj += q[t * DH + e] * k[j * DH + e];
                    sj /= sqrt((double)DH);
                    int pos;
                    if (cnt < keff) pos = cnt++;
                    else if (sj > ss[keff - 1]) pos = keff - 1;
                    else continue;
                    while (pos > 0 && ss[pos - 1] < sj) { ss[pos] = ss[pos - 1]; si[pos] = si[pos - 1]; pos--; }
                    ss[pos] = sj; si[pos] = j;
                }
                double mx = ss[0], den = 0.0;
                for (int i = 0; i < keff; i++) den += exp(ss[i] - mx);
                for (int i = 0; i < C; i++) path[np][i] = 0.0;
                for (int s = 0; s < keff; s++)
                    for (int i = 0; i < C; i++) path[np][i] += exp(ss[s] - mx) / den * v[si[s] * C + i];
                np++;
            }
            double mx = -1e300, den = 0.0;
            for (int p = 0; p < np; p++) { rl[p] = 0.0; for (int i = 0; i < C; i++) rl[p] += ro[p * C + i] * u[t * C + i];
                                           if (rl[p] > mx) mx = rl[p]; }
            for (int p = 0; p < np; p++) den += exp(rl[p] - mx);
            for (int i = 0; i < C; i++) { dx[t * C + i] = 0.0;
                for (int p = 0; p < np; p++) dx[t * C + i] += exp(rl[p] - mx) / den * path[p][i]; }
        }
        for (int i = 0; i < T * C; i++) x[i] += dx[i];
#undef BW
    }
    const float *gf = TW("ln_f.g"), *bf = TW("ln_f.b"), *un = TW("unembed");
    for (int t = 0; t < T; t++) {
        double m = 0.0, var = 0.0, y[512];
        for (int i = 0; i < C; i++) m += x[t * C + i];
        m /= C;
        for (int i = 0; i < C; i++) var += (x[t * C + i] - m) * (x[t * C + i] - m);
        var /= C;
        for (int i = 0; i < C; i++) y[i] = (x[t * C + i] - m) / sqrt(var + 1e-5) * gf[i] + bf[i];
        for (int o = 0; o < V; o++) { double acc = 0.0;
            for (int i = 0; i < C; i++) acc += un[o * C + i] * y[i];
            logits[t * V + o] = acc; }
    }
#undef TW
    free(x); free(u); free(q); free(k); free(v); free(dx);
}

/* max_o |a - b| / max_o |b| over one row of V logits. */
static double row_rel(const float *a, const double *b, int V) {
    double d = 0.0, m = 0.0;
    for (int o = 0; o < V; o++) { double e = fabs((double)a[o] - b[o]); if (e > d) d = e; if (fabs(b[o]) > m) m = fabs(b[o]); }
    return m > 0.0 ? d / m : d;
}

static void test_generation(int pathways, int odd_width) {
    atm_config c; atm_layout L;
    CHECK(atm_config_by_name("atome-tiny", &c) == 0);   /* d=16, L=2, d_h=8, K=5, top_k=4 */
    c.pathways = pathways;
    if (odd_width) { c.d_model = 13; c.d_head = 5; c.kernel = 2; c.top_k = 3; }
    CHECK(atm_layout_build(&c, &L) == 0);
    const int T = 20, V = c.vocab;
    float *w = malloc(sizeof(float) * L.n_params), *weff = malloc(sizeof(float) * L.n_params);
    atm_rng r; atm_rng_seed(&r, 700 + pathways + 50 * odd_width);
    atm_init_params(&L, w, &r);
    for (int i = 0; i < L.n_tensors; i++)             /* non-trivial LN/SSM vectors */
        if (L.t[i].kind == ATM_TK_FP32)
            for (int j = 0; j < L.t[i].cols; j++) w[L.t[i].off + j] += 0.3f * rnd_normal(&r);
    atm_quantize_layout(&L, ATM_QUANT_TERNARY, w, weff);
    uint8_t tok[20];
    for (int i = 0; i < T; i++) tok[i] = (uint8_t)(i % 7 == 3 ? tok[i - 1] : atm_rng_below(&r, 256));

    void *acts = atm_family_atome.acts_new(&c, 1, T);
    CHECK(atm_family_atome.forward(&L, weff, acts, tok, NULL, 1, T) == 0.0);
    const float *fl = atm_family_atome.logits(acts);
    double *ref = malloc(sizeof(double) * T * V);

    /* 1. gen_step == forward at every position when T <= W (W = T is the
     *    boundary: the whole prefix is still cached). Same float operations
     *    in the same order, so only matmul kernel differences could separate
     *    them; 1e-4 of the largest logit is the documented tolerance. */
    static const int Ws[] = { 64, 20 };
    for (int wi = 0; wi < 2; wi++) {
        void *g = atm_family_atome.gen_new(&L, weff, Ws[wi]);
        CHECK(g != NULL);
        double worst = 0.0;
        for (int t = 0; t < T; t++) {
            const float *gl = atm_family_atome.gen_step(g, tok[t]);
            double rr[256];
            for (int o = 0; o < V; o++) rr[o] = fl[(size_t)t * V + o];
            double e = row_rel(gl, rr, V);
            if (e > worst) worst = e;
        }
        CHECKF(worst < 1e-4, "pathways %d W=%d: gen_step vs forward rel %g", pathways, Ws[wi], worst);
        atm_family_atome.gen_free(g);
    }

    /* 2. Against the double reference, with and without sliding. Float vs
     *    double through two layers: ~1e-6 relative; 1e-4 as above. */
    static const int Ws2[] = { 64, 6, 3, 1 };
    float *gl_all[4];
    for (int wi = 0; wi < 4; wi++) {
        ref_generate(&L, weff, tok, T, Ws2[wi], ref);
        void *g = atm_family_atome.gen_new(&L, weff, Ws2[wi]);
        gl_all[wi] = malloc(sizeof(float) * T * V);
        double worst = 0.0;
        for (int t = 0; t < T; t++) {
            const float *gl = atm_family_atome.gen_step(g, tok[t]);
            memcpy(gl_all[wi] + (size_t)t * V, gl, sizeof(float) * V);
            double e = row_rel(gl, ref + (size_t)t * V, V);
            if (e > worst) worst = e;
        }
        CHECKF(worst < 1e-4, "pathways %d W=%d: gen_step vs reference rel %g", pathways, Ws2[wi], worst);
        atm_family_atome.gen_free(g);
    }
    /* The window matters exactly when attention is present: W = 3 differs
     * from W = 64 past position 3 (so the reference check above has teeth),
     * and without attention gen_step ignores W. */
    {
        int differs = 0;
        for (int i = 0; i < T * V; i++) differs |= gl_all[0][i] != gl_all[2][i];
        int early_same = memcmp(gl_all[0], gl_all[2], sizeof(float) * 3 * V) == 0;
        CHECK(early_same);
        if (pathways & ATM_PATH_ATTN) CHECKF(differs, "pathways %d: window 3 changed nothing", pathways);
        else CHECK(!differs);
    }
    for (int wi = 0; wi < 4; wi++) free(gl_all[wi]);
    /* 3. Training with attn_window W (W < T): the batch forward applies the
     *    window rule of gen_step and the engine, so its logits equal
     *    gen_step's at window W and the double reference of that rule; the
     *    layout (and so the weights) is the same as without a window. */
    if (pathways & ATM_PATH_ATTN) {
        const int Wt[] = { 6, c.top_k };
        for (int wi = 0; wi < 2; wi++) {
            atm_config cw = c; atm_layout LW;
            cw.attn_window = Wt[wi];
            CHECK(atm_config_validate(&cw, NULL, 0) == 0);
            CHECK(atm_layout_build(&cw, &LW) == 0 && LW.n_params == L.n_params);
            void *aw = atm_family_atome.acts_new(&cw, 1, T);
            CHECK(atm_family_atome.forward(&LW, weff, aw, tok, NULL, 1, T) == 0.0);
            const float *wl = atm_family_atome.logits(aw);
            ref_generate(&L, weff, tok, T, Wt[wi], ref);
            void *g = atm_family_atome.gen_new(&L, weff, Wt[wi]);
            double worst_g = 0.0, worst_r = 0.0, vs_full = 0.0;
            for (int t = 0; t < T; t++) {
                const float *gl = atm_family_atome.gen_step(g, tok[t]);
                double rr[256];
                for (int o = 0; o < V; o++) rr[o] = gl[o];
                double e = row_rel(wl + (size_t)t * V, rr, V);
                if (e > worst_g) worst_g = e;
                e = row_rel(wl + (size_t)t * V, ref + (size_t)t * V, V);
                if (e > worst_r) worst_r = e;
                for (int o = 0; o < V; o++) rr[o] = fl[(size_t)t * V + o];
                e = row_rel(wl + (size_t)t * V, rr, V);
                if (e > vs_full) vs_full = e;
            }
            CHECKF(worst_g < 1e-4, "pathways %d attn_window %d: forward vs gen_step rel %g", pathways, Wt[wi], worst_g);
            CHECKF(worst_r < 1e-4, "pathways %d attn_window %d: forward vs reference rel %g", pathways, Wt[wi], worst_r);
            CHECKF(vs_full > 1e-3, "pathways %d attn_window %d: the window changed nothing (%g)", pathways, Wt[wi], vs_full);
            /* a window of at least T is no window: the same bits as none */
            cw.attn_window = T;
            CHECK(atm_layout_build(&cw, &LW) == 0);
            CHECK(atm_family_atome.forward(&LW, weff, aw, tok, NULL, 1, T) == 0.0);
            CHECK(memcmp(atm_family_atome.logits(aw), fl, sizeof(float) * (size_t)T * V) == 0);
            atm_family_atome.gen_free(g);
            atm_family_atome.acts_free(aw);
        }
        atm_config bad = c;
        bad.attn_window = c.top_k - 1;
        CHECK(atm_config_validate(&bad, NULL, 0) != 0);
    } else {
        atm_config bad = c;
        bad.attn_window = 8;
        CHECK(atm_config_validate(&bad, NULL, 0) != 0);
    }
    /* Out-of-range tokens read as 0; window 0 is refused. */
    {
        void *g1 = atm_family_atome.gen_new(&L, weff, 8), *g2 = atm_family_atome.gen_new(&L, weff, 8);
        const float *a = atm_family_atome.gen_step(g1, 0);
        const float *b = atm_family_atome.gen_step(g2, 999);
        CHECK(memcmp(a, b, sizeof(float) * V) == 0);
        atm_family_atome.gen_free(g1); atm_family_atome.gen_free(g2);
        CHECK(atm_family_atome.gen_new(&L, weff, 0) == NULL);
    }
    atm_family_atome.acts_free(acts);
    free(w); free(weff); free(ref);
}

int main(void) {
    test_layout();
    test_conv();
    test_ssm();
    test_attn();
    test_mix();
    test_ties();
    for (int pw = 1; pw <= ATM_PATH_ALL; pw++) test_model_fd(pw, 0, 0);
    test_model_fd(ATM_PATH_ALL, 1, 0);
    test_model_fd(ATM_PATH_ALL, 0, 3);               /* training with an attention window */
    test_model_fd(ATM_PATH_ATTN, 1, 2);
    test_model_misc();
    for (int pw = 1; pw <= ATM_PATH_ALL; pw++) test_generation(pw, 0);
    test_generation(ATM_PATH_ALL, 1);
    return CHECK_DONE();
}
