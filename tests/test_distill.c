/* tests/test_distill.c — distillation (soft targets):
 *  - atm_xent_soft_adjust against its definition;
 *  - the atome family's gradient with soft targets against central finite
 *    differences of (1-w) CE(targets) + w CE(q), over every tensor kind, for
 *    w = 0.3 and w = 1, in fp32 (gradient w.r.t. the effective weights);
 *  - q = NULL / w = 0 leaves the gradient bit for bit as without;
 *  - a trainer with a teacher: steps change with the teacher, the reported
 *    loss is the hard cross-entropy, and two trainers with the same teacher
 *    take the same steps bit for bit. */
#include "check.h"
#include "core/train/layers.h"
#include "core/train/model.h"
#include "core/train/trainer.h"
#include "core/train/data.h"
#include <string.h>

static atm_rng R;
static float unif(void) { return (float)(atm_rng_u32(&R) >> 8) / 16777216.0f; }

static void test_adjust(void) {
    const int N = 5, V = 7;
    float d[35], d0[35], q[35];
    uint8_t tgt[5] = { 0, 6, 3, 3, 1 };
    for (int i = 0; i < N * V; i++) { d[i] = d0[i] = unif() - 0.5f; q[i] = unif(); }
    atm_xent_soft_adjust(d, tgt, q, 0.25f, N, V, 0.5f);
    int ok = 1;
    for (int n = 0; n < N; n++)
        for (int v = 0; v < V; v++) {
            float want = d0[n * V + v] + 0.5f * 0.25f * ((v == tgt[n] ? 1.0f : 0.0f) - q[n * V + v]);
            ok &= fabsf(d[n * V + v] - want) < 1e-6f;
        }
    CHECK(ok);
}

typedef struct {
    atm_layout L;
    void *acts;
    uint8_t *in, *tgt;
    float *q;      /* [N][V] */
    int B, T;
    float w;
} ctx_t;

/* (1-w) mean CE(tgt) + w mean CE(q), in double from the logits */
static double loss_at(ctx_t *c, const float *weff) {
    const atm_family *f = &atm_family_atome;
    double hard = f->forward(&c->L, weff, c->acts, c->in, c->tgt, c->B, c->T);
    const float *lg = f->logits(c->acts);
    const int V = c->L.cfg.vocab, N = c->B * c->T;
    double soft = 0.0;
    for (int n = 0; n < N; n++) {
        const float *z = lg + (size_t)n * V;
        double mx = z[0], s = 0.0;
        for (int i = 1; i < V; i++) if (z[i] > mx) mx = z[i];
        for (int i = 0; i < V; i++) s += exp((double)z[i] - mx);
        const double lse = mx + log(s);
        for (int i = 0; i < V; i++) soft -= (double)c->q[(size_t)n * V + i] * ((double)z[i] - lse);
    }
    soft /= N;
    return (1.0 - c->w) * hard + c->w * soft;
}

static void test_fd(float wd) {
    ctx_t c;
    atm_config cfg;
    CHECK(atm_config_by_name("atome-tiny", &cfg) == 0);
    CHECK(atm_layout_build(&cfg, &c.L) == 0);
    c.B = 2; c.T = 9; c.w = wd;
    const int N = c.B * c.T, V = cfg.vocab;
    const size_t P = c.L.n_params;
    float *w = malloc(P * sizeof(float)), *dw = calloc(P, sizeof(float)), *dw0 = calloc(P, sizeof(float));
    atm_rng_seed(&R, 21);
    atm_init_params(&c.L, w, &R);
    c.acts = atm_family_atome.acts_new(&cfg, c.B, c.T);
    c.in = malloc(N); c.tgt = malloc(N); c.q = malloc(sizeof(float) * N * V);
    for (int i = 0; i < N; i++) { c.in[i] = (uint8_t)(atm_rng_u32(&R) % V); c.tgt[i] = (uint8_t)(atm_rng_u32(&R) % V); }
    for (int n = 0; n < N; n++) {     /* a peaked, teacher-like distribution */
        double s = 0.0;
        for (int i = 0; i < V; i++) { float e = expf(4.0f * (unif() - 0.5f)); c.q[n * V + i] = e; s += e; }
        for (int i = 0; i < V; i++) c.q[n * V + i] = (float)(c.q[n * V + i] / s);
    }
    /* without soft targets, then with w and q = NULL: the same gradient bits */
    atm_family_atome.forward(&c.L, w, c.acts, c.in, c.tgt, c.B, c.T);
    atm_family_atome.backward(&c.L, w, c.acts, dw0);
    atm_family_atome.set_soft_targets(c.acts, NULL, 0.7f);
    atm_family_atome.forward(&c.L, w, c.acts, c.in, c.tgt, c.B, c.T);
    atm_family_atome.backward(&c.L, w, c.acts, dw);
    CHECK(memcmp(dw, dw0, P * sizeof(float)) == 0);
    memset(dw, 0, P * sizeof(float));
    /* analytic gradient with soft targets */
    atm_family_atome.set_soft_targets(c.acts, c.q, wd);
    double l0 = loss_at(&c, w);
    atm_family_atome.backward(&c.L, w, c.acts, dw);
    CHECK(isfinite(l0));
    /* central differences on a spread of parameters of every tensor */
    double worst = 0.0;
    int checked = 0;
    for (int t = 0; t < c.L.n_tensors; t++) {
        const atm_tensor *tn = &c.L.t[t];
        const int cnt = tn->rows * tn->cols;
        for (int k = 0; k < 3 && k < cnt; k++) {
            const size_t i = tn->off + (size_t)((k * 7919 + t * 31) % cnt);
            const float save = w[i], h = 1e-2f;
            w[i] = save + h; double lp = loss_at(&c, w);
            w[i] = save - h; double lm = loss_at(&c, w);
            w[i] = save;
            const double fd = (lp - lm) / (2.0 * h), an = dw[i];
            const double err = fabs(fd - an) / fmax(1e-3, fabs(fd) + fabs(an));
            if (err > worst) worst = err;
            checked++;
        }
    }
    CHECKF(worst < 2e-2, "soft-target gradient vs finite differences (w = %g): worst relative error %.4f over %d params",
           (double)wd, worst, checked);
    CHECK(checked > 40);
    atm_family_atome.acts_free(c.acts);
    free(w); free(dw); free(dw0); free(c.in); free(c.tgt); free(c.q);
}

static void test_trainer(void) {
    atm_config cs, ct;
    CHECK(atm_config_by_name("atome-tiny", &cs) == 0);
    CHECK(atm_config_by_name("vanilla-tiny", &ct) == 0);
    atm_train_opts o;
    atm_train_opts_default(&o);
    o.quant = ATM_QUANT_TERNARY; o.batch = 3; o.seq = 17; o.steps = 6; o.lr = 3e-3f; o.seed = 4;
    atm_layout TL;
    CHECK(atm_layout_build(&ct, &TL) == 0);
    float *tw = malloc(TL.n_params * sizeof(float));
    atm_rng_seed(&R, 77);
    atm_init_params(&TL, tw, &R);
    uint8_t corpus[4096];
    for (size_t i = 0; i < sizeof corpus; i++) corpus[i] = (uint8_t)("the cat sat on a mat. "[i % 22]);
    atm_corpus co = { corpus, sizeof corpus };
    atm_chunks ch;
    char err[200];
    CHECK(atm_chunks_all(&co, o.seq, &ch, err, sizeof err) == 0);
    atm_trainer *plain = atm_trainer_new(&cs, &o), *a = atm_trainer_new(&cs, &o), *b = atm_trainer_new(&cs, &o);
    CHECK(plain && a && b);
    CHECK(atm_trainer_set_teacher(a, &ct, tw, ATM_QUANT_FP32, 0.6f, err, sizeof err) == 0);
    CHECK(atm_trainer_set_teacher(b, &ct, tw, ATM_QUANT_FP32, 0.6f, err, sizeof err) == 0);
    CHECK(atm_trainer_set_teacher(plain, &ct, tw, ATM_QUANT_FP32, 1.5f, err, sizeof err) == -1);
    CHECK(strstr(err, "(0, 1]") != NULL);
    for (int s = 0; s < 6; s++) {
        double lp = atm_trainer_train_batch(plain, &ch), la = atm_trainer_train_batch(a, &ch);
        atm_trainer_train_batch(b, &ch);
        if (s == 0) CHECK(lp == la);   /* same weights, same batch: the loss reported is CE(targets) */
    }
    CHECK(memcmp(a->w, b->w, a->L.n_params * sizeof(float)) == 0);
    CHECK(memcmp(a->w, plain->w, a->L.n_params * sizeof(float)) != 0);
    /* a vanilla student cannot take soft targets */
    atm_train_opts ov = o;
    ov.quant = ATM_QUANT_FP32;
    atm_trainer *v = atm_trainer_new(&ct, &ov);
    CHECK(v && atm_trainer_set_teacher(v, &ct, tw, ATM_QUANT_FP32, 0.5f, err, sizeof err) == -1);
    atm_trainer_free(v);
    atm_trainer_free(plain); atm_trainer_free(a); atm_trainer_free(b);
    free(tw);
}

int main(void) {
    atm_rng_seed(&R, 3);
    test_adjust();
    test_fd(0.3f);
    test_fd(1.0f);
    test_trainer();
    return CHECK_DONE();
}
