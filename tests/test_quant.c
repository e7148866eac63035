/* tests/test_quant.c — the ternary quantiser (core/train/quant.c):
 *  - trit rule = clamp(round_half_even(w / alpha), -1, 1): exact ties at
 *    |w/alpha| = 0.5 go to 0, 1.5 and 2.5 clamp to +-1, NaN gives 0;
 *  - alpha = max(mean|w|, 1e-5) over the whole tensor (the floor applies to an
 *    all-zero or tiny tensor);
 *  - quantize_layout touches only ATM_TK_QUANT tensors, and nothing in fp32 mode;
 *  - straight-through estimator: the trainer's gradient for the fp32 shadow
 *    weights is exactly the family's gradient at the quantised weights. */
#include "check.h"
#include "core/train/model.h"
#include "core/train/trainer.h"
#include <string.h>

static void test_trit_rule(void) {
    const float a = 0.25f;                        /* power of two: w / a is exact */
    CHECK(atm_ternary_trit(0.125f, a) == 0);      /* 0.5: tie -> even (0) */
    CHECK(atm_ternary_trit(-0.125f, a) == 0);
    CHECK(atm_ternary_trit(nextafterf(0.125f, 1.0f), a) == 1);
    CHECK(atm_ternary_trit(nextafterf(-0.125f, -1.0f), a) == -1);
    CHECK(atm_ternary_trit(0.375f, a) == 1);      /* 1.5 -> 2 -> clamp 1 */
    CHECK(atm_ternary_trit(0.625f, a) == 1);      /* 2.5 -> 2 -> clamp 1 */
    CHECK(atm_ternary_trit(-0.625f, a) == -1);
    CHECK(atm_ternary_trit(1e30f, a) == 1);
    CHECK(atm_ternary_trit(0.0f, a) == 0);
    CHECK(atm_ternary_trit(-0.0f, a) == 0);
    CHECK(atm_ternary_trit(nanf(""), a) == 0);
    /* Against the definition with rintf for many random values. */
    atm_rng r; atm_rng_seed(&r, 3);
    int bad = 0;
    for (int i = 0; i < 200000; i++) {
        float w = ((float)(atm_rng_u32(&r) >> 8) / 16777216.0f - 0.5f) * 4.0f;
        float al = 0.1f + (float)(atm_rng_u32(&r) >> 8) / 16777216.0f;
        float q = rintf(w / al);
        int want = q > 1.0f ? 1 : (q < -1.0f ? -1 : (int)q);
        bad += atm_ternary_trit(w, al) != want;
    }
    CHECKF(bad == 0, "%d mismatches against clamp(rintf(w/alpha))", bad);
}

static void test_alpha(void) {
    float w[6] = { 1.0f, -2.0f, 3.0f, -4.0f, 0.0f, 2.0f };
    CHECK(atm_ternary_alpha(w, 6) == 2.0f);                   /* mean |w| = 12/6 */
    float z[5] = { 0 };
    CHECK(atm_ternary_alpha(z, 5) == 1e-5f);                  /* floor */
    float t[3] = { 1e-6f, -1e-6f, 2e-6f };
    CHECK(atm_ternary_alpha(t, 3) == 1e-5f);
    float q[6];
    float al = atm_ternary_quantize(w, 6, q);
    CHECK(al == 2.0f);
    /* w/alpha = .5, -1, 1.5, -2, 0, 1 -> 0, -1, 1, -1, 0, 1 */
    const float want[6] = { 0.0f, -2.0f, 2.0f, -2.0f, 0.0f, 2.0f };
    for (int i = 0; i < 6; i++) CHECKF(q[i] == want[i], "q[%d] = %g", i, (double)q[i]);
    float zq[5];
    atm_ternary_quantize(z, 5, zq);
    for (int i = 0; i < 5; i++) CHECK(zq[i] == 0.0f);
}

static void test_layout(void) {
    atm_config c;
    CHECK(atm_config_by_name("vanilla-tiny", &c) == 0);
    atm_layout L;
    CHECK(atm_layout_build(&c, &L) == 0);
    float *w = malloc(L.n_params * sizeof(float)), *q = malloc(L.n_params * sizeof(float));
    atm_rng r; atm_rng_seed(&r, 9);
    atm_init_params(&L, w, &r);
    atm_quantize_layout(&L, ATM_QUANT_FP32, w, q);
    CHECK(memcmp(w, q, L.n_params * sizeof(float)) == 0);
    atm_quantize_layout(&L, ATM_QUANT_TERNARY, w, q);
    int nq = 0, nf = 0;
    for (int i = 0; i < L.n_tensors; i++) {
        const atm_tensor *t = &L.t[i];
        size_t n = (size_t)t->rows * t->cols;
        if (t->kind == ATM_TK_FP32) {
            nf++;
            CHECKF(memcmp(w + t->off, q + t->off, n * sizeof(float)) == 0, "%s changed", t->name);
        } else {
            nq++;
            float a = atm_ternary_alpha(w + t->off, n);
            int ok = 1;
            for (size_t j = 0; j < n; j++) {
                float v = q[t->off + j];
                ok &= (v == a || v == -a || v == 0.0f) && v == (float)atm_ternary_trit(w[t->off + j], a) * a;
            }
            CHECKF(ok, "%s not {-a,0,a}", t->name);
        }
    }
    CHECK(nq > 0 && nf > 0);     /* positions stay fp32 in vanilla */
    CHECK(atm_layout_find(&L, "pos_emb") >= 0 && L.t[atm_layout_find(&L, "pos_emb")].kind == ATM_TK_FP32);
    free(w); free(q);
}

static void test_ste(const char *name) {
    atm_config c;
    CHECK(atm_config_by_name(name, &c) == 0);
    atm_train_opts o;
    atm_train_opts_default(&o);
    o.quant = ATM_QUANT_TERNARY; o.batch = 2; o.seq = 9; o.steps = 10; o.seed = 5;
    atm_trainer *tr = atm_trainer_new(&c, &o);
    CHECK(tr != NULL);
    if (!tr) return;
    size_t n = tr->L.n_params;
    int B = tr->B, T = tr->T;
    uint8_t in[64], tgt[64];
    for (int i = 0; i < B * T; i++) { in[i] = (uint8_t)(i * 37 + 11); tgt[i] = (uint8_t)(i * 53 + 7); }
    /* Independent gradient: the family's backward at the quantised weights. */
    float *w0 = malloc(n * sizeof(float)), *weff = malloc(n * sizeof(float));
    float *g = calloc(n, sizeof(float)), *g32 = calloc(n, sizeof(float));
    memcpy(w0, tr->w, n * sizeof(float));
    atm_quantize_layout(&tr->L, ATM_QUANT_TERNARY, w0, weff);
    void *acts = tr->fam->acts_new(&c, B, T);
    double loss = tr->fam->forward(&tr->L, weff, acts, in, tgt, B, T);
    tr->fam->backward(&tr->L, weff, acts, g);
    double loss_tr = atm_trainer_step(tr, in, tgt);
    CHECK(loss == loss_tr);
    CHECKF(memcmp(g, tr->dw, n * sizeof(float)) == 0, "%s: trainer gradient differs from dL/dweff", name);
    /* ...and it is not the gradient at the unquantised weights, so the check
     * above distinguishes the STE from plain fp32 training. */
    tr->fam->forward(&tr->L, w0, acts, in, tgt, B, T);
    tr->fam->backward(&tr->L, w0, acts, g32);
    CHECK(memcmp(g, g32, n * sizeof(float)) != 0);
    tr->fam->acts_free(acts);
    free(w0); free(weff); free(g); free(g32);
    atm_trainer_free(tr);
}

int main(void) {
    test_trit_rule();
    test_alpha();
    test_layout();
    test_ste("atome-tiny");
    test_ste("vanilla-tiny");
    test_ste("gssm-tiny");
    return CHECK_DONE();
}
