/* tests/test_vanilla.c — the `vanilla` family (core/train/vanilla.c):
 * multi-head causal attention against a double-precision re-computation and
 * finite differences, whole-model finite differences (V = 256, B = 2, T = 6),
 * pinned parameter counts, init statistics, the max_seq guard, backward
 * accumulation and windowed generation against the forward. */
#include "check.h"
#include "baselines_fd.h"
#include "core/train/model.h"
#include "core/train/layers.h"
#include "core/train/baselines.h"
#include <string.h>

/* ---- attention piece ---- */

enum { AB = 2, AT = 6, AC = 8, AH = 2 };

typedef struct {
    float *qkv, *out, *att, *scratch;
    const double *r;   /* [AB*AT][AC] fixed random weights of the scalar loss */
} mha_ctx;

static double mha_loss(void *p) {
    mha_ctx *c = p;
    atm_mha_forward(c->out, c->att, c->qkv, c->scratch, AB, AT, AC, AH);
    double s = 0.0;
    for (int i = 0; i < AB * AT * AC; i++) s += c->r[i] * c->out[i];
    return s;
}

static void test_mha(void) {
    atm_rng rng; atm_rng_seed(&rng, 11);
    const int N = AB * AT, dh = AC / AH;
    float qkv[AB * AT * 3 * AC], out[AB * AT * AC], att[AB * AH * AT * AT];
    float dqkv[AB * AT * 3 * AC], dout[AB * AT * AC], scratch[8 * (AC / AH) * AT + AT * AT];
    double r[AB * AT * AC];
    CHECK(atm_mha_scratch(AT, AC, AH) == sizeof scratch / sizeof scratch[0]);
    for (int i = 0; i < N * 3 * AC; i++) qkv[i] = randn(&rng);
    for (int i = 0; i < N * AC; i++) { r[i] = randn(&rng); dout[i] = (float)r[i]; }

    /* forward against the definition, in double: layout [q | k | v], head-major */
    atm_mha_forward(out, att, qkv, scratch, AB, AT, AC, AH);
    double worst = 0.0;
    int att_ok = 1;
    for (int b = 0; b < AB; b++)
        for (int h = 0; h < AH; h++)
            for (int t = 0; t < AT; t++) {
                const float *q = qkv + (size_t)(b * AT + t) * 3 * AC + h * dh;
                double sc[AT], mx = -1e300, sum = 0.0;
                for (int j = 0; j <= t; j++) {
                    const float *k = qkv + (size_t)(b * AT + j) * 3 * AC + AC + h * dh;
                    double d = 0.0;
                    for (int i = 0; i < dh; i++) d += (double)q[i] * k[i];
                    sc[j] = d / sqrt((double)dh);
                    if (sc[j] > mx) mx = sc[j];
                }
                for (int j = 0; j <= t; j++) { sc[j] = exp(sc[j] - mx); sum += sc[j]; }
                const float *p = att + (((size_t)b * AH + h) * AT + t) * AT;
                for (int j = 0; j < AT; j++) {
                    double want = j <= t ? sc[j] / sum : 0.0;
                    if (fabs(p[j] - want) > 1e-6) att_ok = 0;
                }
                for (int i = 0; i < dh; i++) {
                    double o = 0.0;
                    for (int j = 0; j <= t; j++)
                        o += sc[j] / sum * qkv[(size_t)(b * AT + j) * 3 * AC + 2 * AC + h * dh + i];
                    double e = fabs(o - out[(size_t)(b * AT + t) * AC + h * dh + i]);
                    if (e > worst) worst = e;
                }
            }
    /* float softmax and sums of <= 6 terms of O(1) values: a few ulps */
    CHECKF(worst < 1e-5, "mha forward vs double reference: max err %g", worst);
    CHECK(att_ok);

    /* causality: the last position's k and v cannot change earlier outputs */
    float out2[AB * AT * AC], qkv2[AB * AT * 3 * AC];
    memcpy(qkv2, qkv, sizeof qkv);
    for (int i = AC; i < 3 * AC; i++) qkv2[(size_t)(AT - 1) * 3 * AC + i] += 1.0f;
    atm_mha_forward(out2, att, qkv2, scratch, AB, AT, AC, AH);
    CHECK(memcmp(out2, out, sizeof(float) * (AT - 1) * AC) == 0);
    CHECK(memcmp(out2 + (AT - 1) * AC, out + (AT - 1) * AC, sizeof(float) * AC) != 0);

    /* backward vs central differences on every qkv entry */
    atm_mha_forward(out, att, qkv, scratch, AB, AT, AC, AH);
    memset(dqkv, 0, sizeof dqkv);
    atm_mha_backward(dqkv, dout, qkv, att, scratch, AB, AT, AC, AH);
    mha_ctx ctx = { qkv, out, att, scratch, r };
    int n = N * 3 * AC;
    /* The loss is a double sum of 96 float outputs of size O(1), each
     * rounded to ~6e-8 relative: two evaluations differ by ~1e-6 from
     * rounding alone (4e-6 forgiven). With h = 1e-3 the O(1) gradients are
     * then checked to 1e-2 per entry and 1e-3 along directions. */
    fd_result R = fd_check_tensor(qkv, dqkv, (size_t)n, 1e-3, mha_loss, &ctx, &rng, n, 0, 4, 1e-2,
                                  4e-6);
    CHECKF(R.worst_entry < 1e-2, "mha grad entry rel err %g", R.worst_entry);
    CHECKF(R.worst_dir < 1e-3, "mha grad dir rel err %g", R.worst_dir);
    printf("mha: forward err %.2e, FD raw entry %.2e (%d), dir %.2e\n", worst, R.raw_entry,
           R.n_entries, R.raw_dir);

    /* backward accumulates */
    float d2[AB * AT * 3 * AC];
    memcpy(d2, dqkv, sizeof d2);
    atm_mha_forward(out, att, qkv, scratch, AB, AT, AC, AH);   /* the FD left att at a perturbed point */
    atm_mha_backward(d2, dout, qkv, att, scratch, AB, AT, AC, AH);
    double acc_err = 0.0, gmax = 0.0;
    for (int i = 0; i < n; i++) {
        acc_err = fmax(acc_err, fabs(d2[i] - 2.0 * dqkv[i]));
        gmax = fmax(gmax, fabs(dqkv[i]));
    }
    /* += of the same terms onto a non-zero start rounds differently: ulps */
    CHECKF(acc_err <= 1e-6 * gmax, "mha backward does not accumulate (%g)", acc_err);
}

/* ---- whole model ---- */


static atm_config small_cfg(void) {
    atm_config c;
    memset(&c, 0, sizeof c);
    c.family = ATM_FAMILY_VANILLA; c.vocab = 256; c.d_model = 8; c.n_layers = 2;
    c.n_heads = 2; c.d_head = 4; c.d_ff = 12; c.max_seq = 8;
    return c;
}

/* Whole-model gradients with no position table (--pos none): the same
 * checker; the layout has no pos_emb and the blocks start one tensor earlier. */
static void test_model_fd_nopos(void) {
    const atm_family *f = atm_family_get(ATM_FAMILY_VANILLA);
    atm_config c = small_cfg();
    c.pos = ATM_POS_NONE;
    char err[128];
    CHECKF(atm_config_validate(&c, err, sizeof err) == 0, "%s", err);
    atm_layout L;
    CHECK(atm_layout_build(&c, &L) == 0);
    CHECK(atm_layout_find(&L, "pos_emb") < 0);
    const int B = 2, T = 6;
    float *w = malloc(sizeof(float) * L.n_params), *dw = calloc(L.n_params, sizeof(float));
    atm_rng rng; atm_rng_seed(&rng, 6);
    atm_init_params(&L, w, &rng);
    for (int i = 0; i < L.n_tensors; i++)
        if (L.t[i].kind == ATM_TK_FP32 && L.t[i].rows == 1)
            for (int j = 0; j < L.t[i].cols; j++) w[L.t[i].off + j] += 0.3f * randn(&rng);
    uint8_t in[12], tgt[12];
    for (int i = 0; i < 12; i++) { in[i] = (uint8_t)atm_rng_below(&rng, 256); tgt[i] = (uint8_t)atm_rng_below(&rng, 256); }
    void *acts = f->acts_new(&c, B, T);
    CHECK(acts != NULL);
    f->forward(&L, w, acts, in, tgt, B, T);
    f->backward(&L, w, acts, dw);
    model_ctx ctx = { f, &L, w, acts, in, tgt, B, T };
    fd_check_model("vanilla --pos none", &ctx, dw, &rng);
    f->acts_free(acts);
    free(w); free(dw);
}

static void test_model_fd(void) {
    const atm_family *f = atm_family_get(ATM_FAMILY_VANILLA);
    atm_config c = small_cfg();
    char err[128];
    CHECKF(atm_config_validate(&c, err, sizeof err) == 0, "%s", err);
    atm_layout L;
    CHECK(atm_layout_build(&c, &L) == 0);
    const int B = 2, T = 6, N = B * T;
    float *w = malloc(sizeof(float) * L.n_params), *dw = calloc(L.n_params, sizeof(float));
    atm_rng rng; atm_rng_seed(&rng, 5);
    atm_init_params(&L, w, &rng);
    /* LN gains/biases are 1/0 at init, which hides errors that multiply by
     * g or add b; perturb them so every term of the backward is exercised. */
    for (int i = 0; i < L.n_tensors; i++)
        if (L.t[i].kind == ATM_TK_FP32 && L.t[i].rows == 1)
            for (int j = 0; j < L.t[i].cols; j++) w[L.t[i].off + j] += 0.3f * randn(&rng);
    uint8_t seq[2 * 7];
    for (int i = 0; i < 14; i++) seq[i] = (uint8_t)atm_rng_below(&rng, 256);
    uint8_t in[12], tgt[12];
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) { in[b * T + t] = seq[b * 7 + t]; tgt[b * T + t] = seq[b * 7 + t + 1]; }
    (void)N;
    void *acts = f->acts_new(&c, B, T);
    CHECK(acts != NULL);
    double loss = f->forward(&L, w, acts, in, tgt, B, T);
    CHECKF(fabs(loss - log(256.0)) < 2.0, "initial loss %g should be near ln 256", loss);
    f->backward(&L, w, acts, dw);

    model_ctx ctx = { f, &L, w, acts, in, tgt, B, T };
    fd_check_model("vanilla", &ctx, dw, &rng);

    /* The checker can fail: a 10% error on one gradient entry is flagged. */
    int iw = atm_layout_find(&L, "blocks.1.attn.wqkv");
    CHECK(iw >= 0);
    {
        const atm_tensor *t = &L.t[iw];
        size_t n = (size_t)t->rows * t->cols, big = 0;
        for (size_t j = 0; j < n; j++) if (fabs(dw[t->off + j]) > fabs(dw[t->off + big])) big = j;
        float *bad = malloc(sizeof(float) * n);
        memcpy(bad, dw + t->off, sizeof(float) * n);
        bad[big] *= 1.1f;
        fd_result R = fd_check_tensor(w + t->off, bad, n, MODEL_H, model_loss, &ctx, &rng, 6, 0, 0, 0.05,
                                      MODEL_NOISE);
        CHECKF(R.worst_entry > MODEL_TOL, "corrupted gradient not detected (%g)", R.worst_entry);
        free(bad);
    }

    /* backward accumulates: a second backward doubles every gradient */
    float *dw2 = malloc(sizeof(float) * L.n_params);
    memcpy(dw2, dw, sizeof(float) * L.n_params);
    f->forward(&L, w, acts, in, tgt, B, T);
    f->backward(&L, w, acts, dw2);
    double worst_acc = 0.0, gmax = 0.0;
    for (size_t j = 0; j < L.n_params; j++) {
        worst_acc = fmax(worst_acc, fabs(dw2[j] - 2.0 * dw[j]));
        gmax = fmax(gmax, fabs(dw[j]));
    }
    /* the second pass adds onto non-zero values, so sums round differently */
    CHECKF(worst_acc <= 1e-6 * gmax, "second backward should double dw (%g)", worst_acc);

    /* a forward without targets computes the same logits and disarms backward */
    float *lg = malloc(sizeof(float) * (size_t)B * T * 256);
    memcpy(lg, f->logits(acts), sizeof(float) * (size_t)B * T * 256);
    CHECK(f->forward(&L, w, acts, in, NULL, B, T) == 0.0);
    CHECK(memcmp(lg, f->logits(acts), sizeof(float) * (size_t)B * T * 256) == 0);
    memcpy(dw2, dw, sizeof(float) * L.n_params);
    f->backward(&L, w, acts, dw2);
    CHECK(memcmp(dw2, dw, sizeof(float) * L.n_params) == 0);

    /* T > max_seq is refused */
    CHECK(f->acts_new(&c, 1, c.max_seq + 1) == NULL);
    void *big = f->acts_new(&c, 1, c.max_seq);
    uint8_t toks[9] = { 1, 2, 3, 4, 5, 6, 7, 8, 9 };
    CHECK(isnan(f->forward(&L, w, big, toks, toks, 1, c.max_seq + 1)));
    CHECK(isnan(f->forward(&L, w, acts, in, tgt, B, T + 1)));   /* beyond capacity */
    f->acts_free(big);

    free(lg); free(dw2);
    f->acts_free(acts);
    free(w); free(dw);
}

/* ---- parameter counts, layout, init ---- */

static long formula(const atm_config *c) {   /* reference §3 */
    long V = c->vocab, d = c->d_model, L = c->n_layers, F = c->d_ff, S = c->max_seq;
    return V * d + S * d + L * (4 * d + 4 * d * d + 2 * d * F) + 2 * d + V * d;
}

static void test_counts(void) {
    const struct { const char *name; long params; } pins[] = {
        { "vanilla-60k", 60808 }, { "vanilla-6k", 5968 },
    };
    for (int i = 0; i < 2; i++) {
        atm_config c;
        atm_layout L;
        char err[128];
        CHECK(atm_config_by_name(pins[i].name, &c) == 0);
        CHECKF(atm_config_validate(&c, err, sizeof err) == 0, "%s: %s", pins[i].name, err);
        CHECK(atm_layout_build(&c, &L) == 0);
        CHECKF((long)L.n_params == pins[i].params, "%s: %zu params", pins[i].name, L.n_params);
        CHECK((long)L.n_params == formula(&c));
        /* FP32 = positions + two LNs per block + final LN; the rest is quantisable */
        long fp32 = (long)c.max_seq * c.d_model + 4L * c.n_layers * c.d_model + 2L * c.d_model;
        CHECK((long)atm_layout_quant_params(&L) == pins[i].params - fp32);
        printf("%s: %zu params (%zu quantisable)\n", pins[i].name, L.n_params,
               atm_layout_quant_params(&L));
    }
    atm_config c;
    atm_layout L;
    CHECK(atm_config_by_name("vanilla-60k", &c) == 0 && atm_layout_build(&c, &L) == 0);
    const struct { const char *name; int rows, cols, kind; } tab[] = {
        { "tok_emb", 256, 44, ATM_TK_QUANT }, { "pos_emb", 64, 44, ATM_TK_FP32 },
        { "blocks.0.ln1.g", 1, 44, ATM_TK_FP32 }, { "blocks.2.ln1.b", 1, 44, ATM_TK_FP32 },
        { "blocks.1.attn.wqkv", 132, 44, ATM_TK_QUANT }, { "blocks.1.attn.wo", 44, 44, ATM_TK_QUANT },
        { "blocks.2.ln2.g", 1, 44, ATM_TK_FP32 }, { "blocks.0.ffn.w1", 44, 44, ATM_TK_QUANT },
        { "blocks.0.ffn.w2", 44, 44, ATM_TK_QUANT }, { "ln_f.g", 1, 44, ATM_TK_FP32 },
        { "ln_f.b", 1, 44, ATM_TK_FP32 }, { "unembed", 256, 44, ATM_TK_QUANT },
    };
    for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++) {
        int k = atm_layout_find(&L, tab[i].name);
        CHECKF(k >= 0, "missing tensor %s", tab[i].name);
        if (k < 0) continue;
        CHECKF(L.t[k].rows == tab[i].rows && L.t[k].cols == tab[i].cols && L.t[k].kind == tab[i].kind,
               "%s: %dx%d kind %d", tab[i].name, L.t[k].rows, L.t[k].cols, L.t[k].kind);
    }
    CHECK(L.n_tensors == 2 + 3 * 8 + 3);

    /* init: embeddings N(0,1), linears U(-1/sqrt(in), 1/sqrt(in)), LN 1/0 */
    float *w = malloc(sizeof(float) * L.n_params);
    atm_rng rng; atm_rng_seed(&rng, 1);
    atm_init_params(&L, w, &rng);
    const atm_tensor *te = &L.t[atm_layout_find(&L, "tok_emb")];
    double s2 = 0.0;
    size_t ne = (size_t)te->rows * te->cols;
    for (size_t j = 0; j < ne; j++) s2 += (double)w[te->off + j] * w[te->off + j];
    /* 11,264 samples: the sample std of N(0,1) is within 3% with > 99.9% */
    CHECKF(fabs(sqrt(s2 / ne) - 1.0) < 0.03, "tok_emb std %g", sqrt(s2 / ne));
    const atm_tensor *t2 = &L.t[atm_layout_find(&L, "blocks.0.ffn.w2")];
    double mx = 0.0, bound = 1.0 / sqrt((double)c.d_ff);
    for (int j = 0; j < t2->rows * t2->cols; j++) if (fabs(w[t2->off + j]) > mx) mx = fabs(w[t2->off + j]);
    CHECKF(mx <= bound && mx > 0.95 * bound, "ffn.w2 max %g bound %g", mx, bound);
    const atm_tensor *g = &L.t[atm_layout_find(&L, "blocks.1.ln2.g")];
    const atm_tensor *b = &L.t[atm_layout_find(&L, "blocks.1.ln2.b")];
    CHECK(w[g->off] == 1.0f && w[g->off + 43] == 1.0f && w[b->off] == 0.0f && w[b->off + 43] == 0.0f);
    free(w);
}

/* ---- generation ---- */

static void test_gen(void) {
    const atm_family *f = atm_family_get(ATM_FAMILY_VANILLA);
    atm_config c = small_cfg();
    atm_layout L;
    CHECK(atm_layout_build(&c, &L) == 0);
    float *w = malloc(sizeof(float) * L.n_params);
    atm_rng rng; atm_rng_seed(&rng, 9);
    atm_init_params(&L, w, &rng);
    enum { NT = 12, W = 5 };
    uint8_t toks[NT];
    for (int i = 0; i < NT; i++) toks[i] = (uint8_t)atm_rng_below(&rng, 256);
    void *ref = f->acts_new(&c, 1, c.max_seq);
    const int V = c.vocab;

    /* window W: logits equal the forward over the last min(n, W) tokens */
    void *g = f->gen_new(&L, w, W);
    double worst = 0.0, diff_full = 0.0;
    for (int n = 1; n <= NT; n++) {
        const float *lg = f->gen_step(g, toks[n - 1]);
        int m = n < W ? n : W;
        f->forward(&L, w, ref, toks + n - m, NULL, 1, m);
        const float *want = f->logits(ref) + (size_t)(m - 1) * V;
        for (int v = 0; v < V; v++) { double e = fabs(lg[v] - want[v]); if (e > worst) worst = e; }
        if (n > W && n <= c.max_seq) {   /* the window really drops old tokens */
            f->forward(&L, w, ref, toks, NULL, 1, n);
            const float *full = f->logits(ref) + (size_t)(n - 1) * V;
            for (int v = 0; v < V; v++) { double e = fabs(lg[v] - full[v]); if (e > diff_full) diff_full = e; }
        }
    }
    /* Same code path and the same N rows as the reference forward; a fast
     * matmul kernel may still order sums differently for other buffer
     * alignments, so allow a few float ulps of the O(1) logits. */
    CHECKF(worst < 1e-5, "gen vs forward (window %d): %g", W, worst);
    CHECKF(diff_full > 1e-3, "window had no effect (%g)", diff_full);
    f->gen_free(g);

    /* window 0 and window > max_seq both mean max_seq */
    int windows[2] = { 0, 1000 };
    for (int k = 0; k < 2; k++) {
        g = f->gen_new(&L, w, windows[k]);
        const float *lg = NULL;
        for (int n = 1; n <= NT; n++) lg = f->gen_step(g, toks[n - 1]);
        f->forward(&L, w, ref, toks + NT - c.max_seq, NULL, 1, c.max_seq);
        const float *want = f->logits(ref) + (size_t)(c.max_seq - 1) * V;
        double e = 0.0;
        for (int v = 0; v < V; v++) if (fabs(lg[v] - want[v]) > e) e = fabs(lg[v] - want[v]);
        CHECKF(e < 1e-5, "window %d: %g", windows[k], e);
        CHECK(f->gen_step(g, 256) == NULL && f->gen_step(g, -1) == NULL);
        f->gen_free(g);
    }
    f->acts_free(ref);
    free(w);
}

int main(void) {
    test_mha();
    test_model_fd();
    test_model_fd_nopos();
    test_counts();
    test_gen();
    return CHECK_DONE();
}
