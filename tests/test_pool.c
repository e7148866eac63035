/* tests/test_pool.c — the trainer's thread pool (core/train/pool.c) and the
 * kernels that share their work with it (kernels.c, kernels_layers.c): every
 * task runs once per call, calls after calls (no lost wake-up, no deadlock);
 * every dispatched kernel of every available kernel set gives the same bytes
 * on 2, 3 and 4 threads as on one, at odd sizes and with every call split
 * (atm_par_min_flops(0)); and a few training steps of each family give the
 * same weights, AdamW moments and (clipped) gradients on 3 threads as on
 * one; the fused products (atm_matmul_forward_many / backward_many) give the
 * bytes of separate calls. */
#include "check.h"
#include "core/train/atome_layers.h"
#include "core/train/kernels.h"
#include "core/train/pool.h"
#include "core/train/trainer.h"
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

/* ---- the pool itself ---- */
static int g_hits[ATM_THREADS_MAX];
static void count_task(void *ctx, int t, int n) {
    (void)ctx;
    if (t >= 0 && t < n && t < ATM_THREADS_MAX) __atomic_add_fetch(&g_hits[t], 1, __ATOMIC_RELAXED);
}

static void test_pool(void) {
    CHECK(atm_threads_set(0) == 1);
    CHECK(atm_threads_set(1000) == ATM_THREADS_MAX);
    CHECK(atm_threads_default() >= 1 && atm_threads_default() <= ATM_THREADS_DEFAULT_CAP);
    for (int th = 1; th <= 4; th++) {
        CHECK(atm_threads_set(th) == th);
        for (int n = 1; n <= ATM_THREADS_MAX; n++) {
            memset(g_hits, 0, sizeof g_hits);
            const int calls = 3000;
            for (int i = 0; i < calls; i++) atm_parallel(count_task, NULL, n);
            int ok = 1;
            for (int t = 0; t < ATM_THREADS_MAX; t++) ok &= g_hits[t] == (t < n ? calls : 0);
            CHECKF(ok, "threads %d, %d tasks: a task ran a wrong number of times", th, n);
        }
    }
    /* more tasks than ATM_THREADS_MAX: clamped, each of those once */
    atm_threads_set(2);
    memset(g_hits, 0, sizeof g_hits);
    atm_parallel(count_task, NULL, ATM_THREADS_MAX + 5);
    int ok = 1;
    for (int t = 0; t < ATM_THREADS_MAX; t++) ok &= g_hits[t] == 1;
    CHECK(ok);
    atm_threads_set(1);
}

/* A slow thread's tasks are taken by the others: with 2 threads and 8
 * tasks, a worker that sleeps 2 ms in every task it runs leaves most of its
 * range to the caller, which must then run more than its own 4. */
static pthread_t g_main;
static int g_by_caller;
static void slow_worker_task(void *ctx, int t, int n) {
    (void)ctx;
    count_task(NULL, t, n);
    if (!pthread_equal(pthread_self(), g_main)) {
        struct timespec d = { 0, 2000000 };
        nanosleep(&d, NULL);
    } else {
        g_by_caller++;
    }
}

static void test_steal(void) {
    atm_threads_set(2);
    g_main = pthread_self();
    g_by_caller = 0;
    memset(g_hits, 0, sizeof g_hits);
    const int calls = 40;
    for (int i = 0; i < calls; i++) atm_parallel(slow_worker_task, NULL, 8);
    int ok = 1;
    for (int t = 0; t < ATM_THREADS_MAX; t++) ok &= g_hits[t] == (t < 8 ? calls : 0);
    CHECKF(ok, "stealing: a task ran a wrong number of times");
    CHECKF(g_by_caller > 5 * calls, "stealing: the caller ran %d of %d tasks (its own range is %d)", g_by_caller,
           8 * calls, 4 * calls);
    atm_threads_set(1);
}

/* ---- kernels: same bytes on any thread count ---- */
static uint32_t g_seed = 12345;
static float frand(void) {
    g_seed = g_seed * 1664525u + 1013904223u;
    return (float)((int)(g_seed >> 8) - (1 << 23)) / (float)(1 << 23);
}
static void fill(float *x, size_t n) { for (size_t i = 0; i < n; i++) x[i] = frand(); }

enum { B = 5, T = 23, C = 37, K = 4, DH = 9, TK = 5, V = 61, P = 3, N = B * T, IC = 29, OC = 43 };

typedef struct {
    float mm_out[N * OC], mm_dinp[N * IC], mm_dw[OC * IC];
    float ln_out[N * C], ln_mean[N], ln_rstd[N], ln_dinp[N * C], ln_dg[C], ln_db[C];
    float probs[N * V], dlogits[N * V];
    double loss;
    float cv_out[N * C], cv_du[N * C], cv_dw[C * K];
    float ss_s[N * C], ss_out[N * C], ss_du[N * C], ss_da[C], ss_db[C], ss_dc[C];
    float at_out[N * C], at_p[N * TK], at_dq[N * DH], at_dk[N * DH], at_dv[N * C];
    int32_t at_idx[N * TK];
    float mx_out[N * C], mx_r[N * P], mx_drl[N * P], mx_dp[P][N * C];
    float mm3_out0[N * OC], mm3_out1[N * 7], mm3_out2[N], mm3_dinp[N * IC], mm3_dw0[OC * IC], mm3_dw2[IC];
} outs;

static float in_x[N * IC], in_w[OC * IC], in_dout[N * OC], in_dout7[N * 7], in_dout1[N];
static float in_h[N * C], in_g[C], in_b[C], in_dh[N * C], in_logit[N * V];
static uint8_t in_tgt[N];
static float in_cw[C * K], in_a[C], in_sb[C], in_sc[C];
static float in_q[N * DH], in_k[N * DH], in_v[N * C], in_r[N * P], in_paths[P][N * C];
static float scratch[(DH + 1) * T + 8 * C * K + 64];

static void run_all(outs *o) {
    memset(o, 0, sizeof *o);
    atm_matmul_forward(o->mm_out, in_x, in_w, N, IC, OC);
    for (size_t i = 0; i < N * IC; i++) o->mm_dinp[i] = 0.5f;
    for (size_t i = 0; i < OC * IC; i++) o->mm_dw[i] = 0.25f;
    atm_matmul_backward(o->mm_dinp, o->mm_dw, in_dout, in_x, in_w, N, IC, OC);
    atm_layernorm_forward(o->ln_out, o->ln_mean, o->ln_rstd, in_h, in_g, in_b, N, C);
    atm_layernorm_backward(o->ln_dinp, o->ln_dg, o->ln_db, in_dh, in_h, in_g, o->ln_mean, o->ln_rstd, N, C);
    memcpy(o->probs, in_logit, sizeof in_logit);
    o->loss = atm_xent_forward(o->probs, o->probs, in_tgt, N, V);   /* in place, as the trainers call it */
    atm_xent_backward(o->dlogits, o->probs, in_tgt, N, V, 1.0f / N);
    atm_atome_conv_forward(o->cv_out, in_h, in_cw, scratch, B, T, C, K);
    atm_atome_conv_backward(o->cv_du, o->cv_dw, in_dh, in_h, in_cw, scratch, B, T, C, K);
    atm_atome_ssm_forward(o->ss_s, o->ss_out, in_h, in_a, in_sb, in_sc, scratch, B, T, C);
    atm_atome_ssm_backward(o->ss_du, o->ss_da, o->ss_db, o->ss_dc, in_dh, in_h, o->ss_s, in_a, in_sb, in_sc,
                           scratch, B, T, C);
    atm_atome_attn_forward(o->at_out, o->at_idx, o->at_p, in_q, in_k, in_v, scratch, B, T, DH, C, TK);
    atm_atome_attn_backward(o->at_dq, o->at_dk, o->at_dv, in_dh, o->at_idx, o->at_p, in_q, in_k, in_v,
                            B, T, DH, C, TK);
    memcpy(o->mx_r, in_r, sizeof in_r);
    const float *paths[P] = { in_paths[0], in_paths[1], in_paths[2] };
    float *dpaths[P] = { o->mx_dp[0], NULL, o->mx_dp[2] };
    atm_atome_mix_forward(o->mx_out, o->mx_r, in_h, paths, N, C, P);
    atm_atome_mix_backward(o->mx_drl, dpaths, in_dh, o->mx_r, paths, N, C, P);
    /* three products of one input in one call (OC 43, 7 and 1; the middle dw not asked for) */
    float *const mo[3] = { o->mm3_out0, o->mm3_out1, o->mm3_out2 };
    const float *const mw[3] = { in_w, in_w + 5 * IC, in_w + 20 * IC };
    const int moc[3] = { OC, 7, 1 };
    atm_matmul_forward_many(3, mo, in_x, mw, N, IC, moc);
    for (size_t i = 0; i < N * IC; i++) o->mm3_dinp[i] = 0.5f;
    for (size_t i = 0; i < IC; i++) o->mm3_dw2[i] = 0.125f;
    float *const mdw[3] = { o->mm3_dw0, NULL, o->mm3_dw2 };
    const float *const md[3] = { in_dout, in_dout7, in_dout1 };
    atm_matmul_backward_many(3, o->mm3_dinp, mdw, md, in_x, mw, N, IC, moc);
}

/* The fused calls give the bytes of separate calls in the same order. */
static void test_many(void) {
    static outs a;
    atm_threads_set(3);
    atm_par_min_flops(0);
    run_all(&a);
    static float out0[N * OC], out1[N * 7], out2[N], dinp[N * IC], dw0[OC * IC], dw2[IC];
    atm_threads_set(1);
    atm_matmul_forward(out0, in_x, in_w, N, IC, OC);
    atm_matmul_forward(out1, in_x, in_w + 5 * IC, N, IC, 7);
    atm_matmul_forward(out2, in_x, in_w + 20 * IC, N, IC, 1);
    for (size_t i = 0; i < N * IC; i++) dinp[i] = 0.5f;
    memset(dw0, 0, sizeof dw0);
    for (size_t i = 0; i < IC; i++) dw2[i] = 0.125f;
    atm_matmul_backward(dinp, dw0, in_dout, in_x, in_w, N, IC, OC);
    atm_matmul_backward(dinp, NULL, in_dout7, in_x, in_w + 5 * IC, N, IC, 7);
    atm_matmul_backward(dinp, dw2, in_dout1, in_x, in_w + 20 * IC, N, IC, 1);
    CHECK(memcmp(out0, a.mm3_out0, sizeof out0) == 0 && memcmp(out1, a.mm3_out1, sizeof out1) == 0 &&
          memcmp(out2, a.mm3_out2, sizeof out2) == 0);
    CHECK(memcmp(dinp, a.mm3_dinp, sizeof dinp) == 0);
    CHECK(memcmp(dw0, a.mm3_dw0, sizeof dw0) == 0 && memcmp(dw2, a.mm3_dw2, sizeof dw2) == 0);
    /* and atm_zero_many clears exactly what it is given */
    float *const zb[2] = { out1, out2 + 3 };
    const size_t zn[2] = { N * 7 - 5, 4 };
    for (size_t i = 0; i < N * 7; i++) out1[i] = 1.0f;
    for (size_t i = 0; i < N; i++) out2[i] = 1.0f;
    atm_threads_set(2);
    atm_zero_many(zb, zn, 2);
    int bad = 0;
    for (size_t i = 0; i < N * 7; i++) bad += out1[i] != (i < N * 7 - 5 ? 0.0f : 1.0f);
    for (size_t i = 0; i < N; i++) bad += out2[i] != (i >= 3 && i < 7 ? 0.0f : 1.0f);
    CHECKF(bad == 0, "atm_zero_many: %d wrong", bad);
    atm_par_min_flops(-1);
    atm_threads_set(1);
}

static void test_kernels(void) {
    fill(in_x, N * IC); fill(in_w, OC * IC); fill(in_dout, N * OC); fill(in_dout7, N * 7); fill(in_dout1, N);
    fill(in_h, N * C); fill(in_g, C); fill(in_b, C); fill(in_dh, N * C); fill(in_logit, N * V);
    for (int i = 0; i < N; i++) in_tgt[i] = (uint8_t)((i * 7 + 3) % V);
    fill(in_cw, C * K); fill(in_a, C); fill(in_sb, C); fill(in_sc, C);
    fill(in_q, N * DH); fill(in_k, N * DH); fill(in_v, N * C); fill(in_r, N * P);
    for (int p = 0; p < P; p++) fill(in_paths[p], N * C);
    static outs one, many;
    atm_par_min_flops(0);
    for (int s = 0; s < atm_kernels_count(); s++) {
        const char *name = atm_kernels_set(s)->name;
        CHECK(atm_kernels_select(name) == 0);
        atm_threads_set(1);
        const unsigned long calls0 = atm_pool_calls();
        run_all(&one);
        CHECK(atm_pool_calls() == calls0);
        for (int th = 2; th <= 4; th++) {
            atm_threads_set(th);
            run_all(&many);
            CHECKF(memcmp(&one, &many, sizeof one) == 0, "kernels %s: %d threads differ from one", name, th);
#define SAME(f) CHECKF(memcmp(one.f, many.f, sizeof one.f) == 0, "%s, %d threads: " #f, name, th)
            SAME(mm_out); SAME(mm_dinp); SAME(mm_dw); SAME(ln_out); SAME(ln_dinp); SAME(ln_dg); SAME(ln_db);
            SAME(probs); SAME(dlogits); SAME(cv_out); SAME(cv_du); SAME(cv_dw); SAME(ss_s); SAME(ss_out);
            SAME(ss_du); SAME(ss_da); SAME(ss_db); SAME(ss_dc); SAME(at_out); SAME(at_p); SAME(at_idx);
            SAME(at_dq); SAME(at_dk); SAME(at_dv); SAME(mx_out); SAME(mx_r); SAME(mx_drl); SAME(mx_dp);
            SAME(mm3_out0); SAME(mm3_out1); SAME(mm3_out2); SAME(mm3_dinp); SAME(mm3_dw0); SAME(mm3_dw2);
#undef SAME
            CHECKF(memcmp(&one.loss, &many.loss, sizeof one.loss) == 0, "%s, %d threads: loss", name, th);
        }
    }
    atm_par_min_flops(-1);
    atm_threads_set(1);
    atm_kernels_select("auto");
}

/* ---- training steps ---- */
static void train_steps(const char *config, int quant, float clip, int threads, atm_trainer **out) {
    atm_config c;
    if (atm_config_by_name(config, &c)) { CHECKF(0, "no config %s", config); *out = NULL; return; }
    atm_train_opts o;
    atm_train_opts_default(&o);
    o.batch = 6; o.seq = 48; o.steps = 4; o.seed = 5; o.quant = quant; o.clip = clip;
    atm_threads_set(threads);
    atm_trainer *tr = atm_trainer_new(&c, &o);
    CHECK(tr != NULL);
    uint8_t in[6 * 48], tg[6 * 48];
    for (int s = 0; tr && s < 4; s++) {
        for (int i = 0; i < 6 * 48; i++) { in[i] = (uint8_t)(32 + (i * 31 + s * 7) % 90); tg[i] = (uint8_t)(32 + (i * 17 + s) % 90); }
        atm_trainer_step(tr, in, tg);
    }
    *out = tr;
}

static void test_training(void) {
    /* clip 0.05: the clip's scale applies (the gradient norm is above it) */
    const struct { const char *config; int quant; float clip; } runs[] = {
        { "atome-60k", ATM_QUANT_TERNARY, 0.0f }, { "atome-60k", ATM_QUANT_FP32, 0.0f },
        { "atome-60k", ATM_QUANT_TERNARY, 0.05f },
        { "vanilla-60k", ATM_QUANT_FP32, 0.0f }, { "gssm-60k", ATM_QUANT_TERNARY, 0.0f },
    };
    atm_par_min_flops(0);
    for (size_t r = 0; r < sizeof runs / sizeof runs[0]; r++) {
        atm_trainer *a, *b;
        train_steps(runs[r].config, runs[r].quant, runs[r].clip, 1, &a);
        const unsigned long calls = atm_pool_calls();
        train_steps(runs[r].config, runs[r].quant, runs[r].clip, 3, &b);
        CHECKF(atm_pool_calls() > calls + 4, "%s: the threaded paths were not taken", runs[r].config);
        if (a && b) {
            size_t n = a->L.n_params * sizeof(float);
            CHECKF(memcmp(a->w, b->w, n) == 0 && memcmp(a->m, b->m, n) == 0 && memcmp(a->v, b->v, n) == 0 &&
                   memcmp(a->dw, b->dw, n) == 0,
                   "%s quant %d: 3 threads train other weights than one", runs[r].config, runs[r].quant);
        }
        atm_trainer_free(a);
        atm_trainer_free(b);
    }
    atm_par_min_flops(-1);
    atm_threads_set(1);
}

/* atm_pool_timing: while on, a call's wall time and the caller's wait for
 * the other threads accumulate; off, nothing does. Each call has two tasks:
 * the caller's sleeps 1 ms, a task the worker runs sleeps 5 ms, so every
 * call the worker takes part in has the caller wait about 4 ms (at least 2
 * on average is required: a loaded machine oversleeps now and then). */
static int g_by_worker;
static void sleepy_task(void *ctx, int t, int n) {
    (void)ctx;
    count_task(NULL, t, n);
    const int caller = pthread_equal(pthread_self(), g_main);
    if (!caller) __atomic_add_fetch(&g_by_worker, 1, __ATOMIC_RELAXED);
    struct timespec d = { 0, caller ? 1000000 : 5000000 };
    nanosleep(&d, NULL);
}

static void test_timing(void) {
    atm_threads_set(2);
    g_main = pthread_self();
    double c0, w0, c1, w1;
    atm_pool_timing_read(&c0, &w0);
    atm_parallel(sleepy_task, NULL, 2);
    atm_pool_timing_read(&c1, &w1);
    CHECKF(c1 == c0 && w1 == w0, "timing off: %g s of calls, %g s of waits counted", c1 - c0, w1 - w0);
    g_by_worker = 0;
    const int calls = 20;
    atm_pool_timing(1);
    for (int i = 0; i < calls; i++) atm_parallel(sleepy_task, NULL, 2);
    atm_pool_timing(0);
    atm_pool_timing_read(&c1, &w1);
    const double call = c1 - c0, wait = w1 - w0;
    CHECKF(g_by_worker > 0, "the worker ran none of %d calls' tasks", calls);
    CHECKF(call >= 0.001 * calls, "%d calls of >= 1 ms counted %g s", calls, call);
    CHECKF(wait >= 0.002 * g_by_worker && wait <= call,
           "waits %g s for %d worker tasks of 5 ms (calls %g s)", wait, g_by_worker, call);
    atm_pool_timing_read(&c0, &w0);
    atm_parallel(sleepy_task, NULL, 2);
    atm_pool_timing_read(&c1, &w1);
    CHECK(c1 == c0 && w1 == w0);
    atm_threads_set(1);
}

int main(void) {
    test_pool();
    test_steal();
    test_timing();
    test_kernels();
    test_many();
    test_training();
    return CHECK_DONE();
}
