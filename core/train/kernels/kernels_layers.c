/* core/train/kernels/kernels_layers.c — run-time choice of the layer kernels
 * (kernels_layers.h) and the dispatched entry points atm_layernorm_*,
 * atm_xent_*, atm_softmax (layers.h) and the atome pathway primitives
 * atm_atome_* (atome_layers.h).
 *
 * Contract: each call runs the layer set named like the matmul set in use
 * (atm_kernels_name(), kernels.c), so there is one switch for both:
 * ATOME_KERNELS / atm_kernels_select(). A matmul set with no layer set here
 * gets "ref"; wasm-simd's set (kernels_layers_wasm.c) uses the references
 * for the members it has no vector version of. The lookup is cached on the
 * name pointer, which is the same string for as long as the matmul set stays
 * selected. The entry points share their work with the thread pool
 * (pool.h) as described below. */
#include "../kernels_layers.h"
#include "../atome_layers.h"
#include "../kernels.h"
#include "../pool.h"
#include <stdlib.h>
#include <string.h>

/* Ordered like the matmul sets; "ref" first (the fallback). */
#define LSET(name, sfx)                                                                             \
    { name, atm_layernorm_forward_##sfx, atm_layernorm_backward_##sfx, atm_xent_forward_##sfx,       \
      atm_xent_backward_##sfx, atm_exp_##sfx, atm_softmax_##sfx, atm_atome_attn_select_##sfx,        \
      atm_atome_conv_forward_##sfx, atm_atome_conv_backward_##sfx, atm_atome_ssm_forward_##sfx,      \
      atm_atome_ssm_backward_##sfx, atm_atome_attn_forward_##sfx, atm_atome_attn_backward_##sfx,     \
      atm_atome_mix_forward_##sfx, atm_atome_mix_backward_##sfx }
static const atm_layer_kernel_set LSETS[] = {
    LSET("ref", ref),
#if defined(__x86_64__) || defined(__i386__)
    LSET("avx2", avx2),
    LSET("avx512", avx512),
#endif
#if defined(__wasm_simd128__)
    { "wasm-simd", atm_layernorm_forward_wasm, atm_layernorm_backward_wasm, atm_xent_forward_wasm,
      atm_xent_backward_wasm, atm_exp_wasm, atm_softmax_ref, atm_atome_attn_select_wasm,
      atm_atome_conv_forward_wasm, atm_atome_conv_backward_wasm, atm_atome_ssm_forward_wasm,
      atm_atome_ssm_backward_wasm, atm_atome_attn_forward_wasm, atm_atome_attn_backward_ref,
      atm_atome_mix_forward_wasm, atm_atome_mix_backward_wasm },
#endif
};
#undef LSET
#define N_LSETS ((int)(sizeof(LSETS) / sizeof(LSETS[0])))

static const char *g_for = NULL;                 /* matmul set name the cache is for */
static const atm_layer_kernel_set *g_lset = &LSETS[0];

const atm_layer_kernel_set *atm_layer_kernels(void) {
    const char *name = atm_kernels_name();
    if (name != g_for) {
        const atm_layer_kernel_set *s = &LSETS[0];
        for (int i = 1; i < N_LSETS; i++)
            if (strcmp(LSETS[i].name, name) == 0) s = &LSETS[i];
        g_lset = s;
        g_for = name;
    }
    return g_lset;
}

/* ---- the thread pool's share (pool.h) --------------------------------
 * Each entry point below runs the chosen set's kernel on disjoint pieces of
 * its outputs, one per task, and every output element is computed by the
 * same kernel code on the same inputs in the same order as in the one-thread
 * call (each kernel computes rows, sequences and channels independently:
 * kernels_layers.h), so the bits do not depend on the thread count:
 *   rows       layernorm forward, cross-entropy, mixing: rows of N
 *   outputs    layernorm backward: dg and db on one task, rows of dinp
 *              shared (task 0 takes fewer)
 *   sequences  conv and SSM forward, attention: whole sequences of B
 *   channels   SSM backward (each channel's scan and sums on its own)
 *   both       conv backward: du by sequences, dw by channels
 * The loss is summed serially from per-row values, in row order, as the
 * kernel sums it. Scratch is taken before the call, so a task never fails;
 * without it a call runs on one thread (same bits). */

/* Reserves `bytes` of scratch for each of nt tasks; the task count to use. */
static int reserve(int nt, size_t bytes) {
    for (int t = 0; t < nt; t++)
        if (!atm_task_scratch(t, bytes ? bytes : 1)) return 1;
    return nt;
}

static int tasks_for(double flops, int items) {
    int nt = atm_par_tasks(flops);
    return nt < items ? nt : items;
}

#define ROWS 8   /* row chunks: a multiple of every set's vector rows */
#define CH 16    /* channel chunks: a multiple of every set's vector width */

typedef struct {
    const atm_layer_kernel_set *ks;
    float *o0, *o1, *o2, *o3;
    const float *i0, *i1, *i2, *i3, *i4, *i5;
    const uint8_t *tgt;
    double *loss;
    int32_t *idx;
    const float *const *paths;
    float *const *dpaths;
    int N, B, T, C, K, DH, TK, P;
    float scale;
} lk_job;

/* ---- layernorm ---- */
static void ln_fwd_task(void *ctx, int t, int nt) {
    const lk_job *j = ctx;
    int lo, hi;
    atm_share_int(j->N, t, nt, ROWS, &lo, &hi);
    if (hi > lo)
        j->ks->layernorm_forward(j->o0 + (size_t)lo * j->C, j->o1 + lo, j->o2 + lo, j->i0 + (size_t)lo * j->C,
                                 j->i1, j->i2, hi - lo, j->C);
}

void atm_layernorm_forward(float *out, float *mean, float *rstd, const float *inp,
                           const float *g, const float *b, int N, int C) {
    lk_job j = { .ks = atm_layer_kernels(), .o0 = out, .o1 = mean, .o2 = rstd, .i0 = inp, .i1 = g, .i2 = b,
                 .N = N, .C = C };
    const int nt = tasks_for(8.0 * N * C, N / ROWS);
    if (nt <= 1) j.ks->layernorm_forward(out, mean, rstd, inp, g, b, N, C);
    else atm_parallel(ln_fwd_task, &j, nt);
}

/* Task 0: dg and db over every row, by the kernel (dinp not asked for),
 * and the first ln_bwd_rows0() of dinp's rows; the other tasks share the rest
 * of dinp's rows (dg, db not asked for). The kernel computes each of the
 * three outputs on its own, per element and in row order, so the pieces are
 * the one call's bits. dg and db cost about 0.6 of dinp (perf, atome-944k),
 * so with two tasks task 0 takes a fifth of the rows, with more none. */
static int ln_bwd_rows0(int N, int nt) {
    const double f = 1.6 / nt - 0.6;
    if (f <= 0.0) return 0;
    int r = (int)(f * N) / ROWS * ROWS;
    return r < N ? r : N;
}

static void ln_bwd_task(void *ctx, int t, int nt) {
    const lk_job *j = ctx;
    const float *dout = j->i0, *inp = j->i1, *mean = j->i3, *rstd = j->i4;
    const int r0 = ln_bwd_rows0(j->N, nt);
    int lo, hi;
    if (t == 0) {
        if (j->o1 || j->o2) j->ks->layernorm_backward(NULL, j->o1, j->o2, dout, inp, j->i2, mean, rstd, j->N, j->C);
        lo = 0, hi = r0;
    } else {
        atm_share_int(j->N - r0, t - 1, nt - 1, ROWS, &lo, &hi);
        lo += r0, hi += r0;
    }
    if (hi > lo)
        j->ks->layernorm_backward(j->o0 + (size_t)lo * j->C, NULL, NULL, dout + (size_t)lo * j->C,
                                  inp + (size_t)lo * j->C, j->i2, mean + lo, rstd + lo, hi - lo, j->C);
}

void atm_layernorm_backward(float *dinp, float *dg, float *db, const float *dout,
                            const float *inp, const float *g, const float *mean,
                            const float *rstd, int N, int C) {
    lk_job j = { .ks = atm_layer_kernels(), .o0 = dinp, .o1 = dg, .o2 = db, .i0 = dout, .i1 = inp, .i2 = g,
                 .i3 = mean, .i4 = rstd, .N = N, .C = C };
    const int nt = dinp && (dg || db) ? tasks_for(12.0 * N * C, 1 + N / ROWS) : 1;
    if (nt <= 1) j.ks->layernorm_backward(dinp, dg, db, dout, inp, g, mean, rstd, N, C);
    else atm_parallel(ln_bwd_task, &j, nt);
}

/* ---- softmax + cross-entropy ---- */
static double *g_rowloss = NULL;
static size_t g_rowloss_cap = 0;

static void xent_fwd_task(void *ctx, int t, int nt) {
    const lk_job *j = ctx;
    int lo, hi;
    atm_share_int(j->N, t, nt, ROWS, &lo, &hi);
    const size_t V = (size_t)j->C;
    if (!j->tgt) {
        if (hi > lo) j->ks->xent_forward(j->o0 + lo * V, j->i0 + lo * V, NULL, hi - lo, j->C);
        return;
    }
    for (int n = lo; n < hi; n++)
        j->loss[n] = j->ks->xent_forward(j->o0 + n * V, j->i0 + n * V, j->tgt + n, 1, j->C);
}

double atm_xent_forward(float *probs, const float *logits, const uint8_t *tgt, int N, int V) {
    const atm_layer_kernel_set *ks = atm_layer_kernels();
    int nt = tasks_for(12.0 * N * V, N / ROWS);
    if (nt > 1 && tgt && g_rowloss_cap < (size_t)N) {
        double *p = realloc(g_rowloss, sizeof(double) * (size_t)N);
        if (p) { g_rowloss = p; g_rowloss_cap = (size_t)N; } else nt = 1;
    }
    if (nt <= 1) return ks->xent_forward(probs, logits, tgt, N, V);
    lk_job j = { .ks = ks, .o0 = probs, .i0 = logits, .tgt = tgt, .loss = g_rowloss, .N = N, .C = V };
    atm_parallel(xent_fwd_task, &j, nt);
    double sum = 0.0;
    for (int n = 0; tgt && n < N; n++) sum += g_rowloss[n];
    return sum;
}

static void xent_bwd_task(void *ctx, int t, int nt) {
    const lk_job *j = ctx;
    int lo, hi;
    atm_share_int(j->N, t, nt, ROWS, &lo, &hi);
    const size_t V = (size_t)j->C;
    if (hi > lo) j->ks->xent_backward(j->o0 + lo * V, j->i0 + lo * V, j->tgt + lo, hi - lo, j->C, j->scale);
}

void atm_xent_backward(float *dlogits, const float *probs, const uint8_t *tgt, int N, int V,
                       float scale) {
    lk_job j = { .ks = atm_layer_kernels(), .o0 = dlogits, .i0 = probs, .tgt = tgt, .N = N, .C = V, .scale = scale };
    const int nt = tasks_for(3.0 * N * V, N / ROWS);
    if (nt <= 1) j.ks->xent_backward(dlogits, probs, tgt, N, V, scale);
    else atm_parallel(xent_bwd_task, &j, nt);
}

void atm_atome_attn_select(float *ps, int32_t *is, const float *q, const float *kT, int ldk,
                           int DH, int n, float scale, int keff, float *sc) {
    atm_layer_kernels()->attn_select(ps, is, q, kT, ldk, DH, n, scale, keff, sc);
}

void atm_softmax(float *x, int n) { atm_layer_kernels()->softmax(x, n); }

/* ---- conv ---- */
static void conv_fwd_task(void *ctx, int t, int nt) {
    const lk_job *j = ctx;
    int lo, hi;
    atm_share_int(j->B, t, nt, 1, &lo, &hi);
    const size_t row = (size_t)j->T * j->C;
    if (hi > lo)
        j->ks->conv_forward(j->o0 + lo * row, j->i0 + lo * row, j->i1, atm_task_scratch(t, 0),
                            hi - lo, j->T, j->C, j->K);
}

void atm_atome_conv_forward(float *out, const float *u, const float *w, float *scratch,
                            int B, int T, int C, int K) {
    lk_job j = { .ks = atm_layer_kernels(), .o0 = out, .i0 = u, .i1 = w, .B = B, .T = T, .C = C, .K = K };
    int nt = tasks_for(2.0 * B * T * C * K, B);
    if (nt > 1) nt = reserve(nt, sizeof(float) * (size_t)K * C);
    if (nt <= 1) j.ks->conv_forward(out, u, w, scratch, B, T, C, K);
    else atm_parallel(conv_fwd_task, &j, nt);
}

/* Each task: du of its share of whole sequences (a du row only takes dout
 * rows of its own sequence; the rows the task's other kernels own), and dw
 * of its share of channels over every sequence (each channel's taps sum on
 * their own), through the kernel with rows C floats apart. Every set
 * computes du and dw each on its own, per element in the one call's order,
 * so the pieces are the one call's bits. */
static void conv_bwd_task(void *ctx, int t, int nt) {
    const lk_job *j = ctx;
    float *scratch = atm_task_scratch(t, 0);
    const size_t row = (size_t)j->T * j->C;
    int lo, hi;
    atm_share_int(j->B, t, nt, 1, &lo, &hi);
    if (hi > lo)
        j->ks->conv_backward(j->o0 + lo * row, NULL, j->i0 + lo * row, j->i1 + lo * row, j->i2, scratch,
                             hi - lo, j->T, j->C, j->K, j->C);
    atm_share_int(j->C, t, nt, CH, &lo, &hi);
    if (hi > lo)
        j->ks->conv_backward(NULL, j->o1 + (size_t)lo * j->K, j->i0 + lo, j->i1 + lo, j->i2 + (size_t)lo * j->K,
                             scratch, j->B, j->T, hi - lo, j->K, j->C);
}

void atm_atome_conv_backward(float *du, float *dw, const float *dout, const float *u,
                             const float *w, float *scratch, int B, int T, int C, int K) {
    lk_job j = { .ks = atm_layer_kernels(), .o0 = du, .o1 = dw, .i0 = dout, .i1 = u, .i2 = w,
                 .B = B, .T = T, .C = C, .K = K };
    int nt = du && dw ? tasks_for(4.0 * B * T * C * K, B < (C + CH - 1) / CH ? B : (C + CH - 1) / CH) : 1;
    if (nt > 1) nt = reserve(nt, sizeof(float) * 2 * (size_t)K * C);
    if (nt <= 1) j.ks->conv_backward(du, dw, dout, u, w, scratch, B, T, C, K, C);
    else atm_parallel(conv_bwd_task, &j, nt);
}

/* ---- SSM ---- */
static void ssm_fwd_task(void *ctx, int t, int nt) {
    const lk_job *j = ctx;
    int lo, hi;
    atm_share_int(j->B, t, nt, 1, &lo, &hi);
    const size_t row = (size_t)j->T * j->C;
    if (hi > lo)
        j->ks->ssm_forward(j->o0 + lo * row, j->o1 + lo * row, j->i0 + lo * row, j->i1, j->i2, j->i3,
                           atm_task_scratch(t, 0), hi - lo, j->T, j->C);
}

void atm_atome_ssm_forward(float *s, float *out, const float *u, const float *a_raw,
                           const float *b, const float *c_out, float *scratch,
                           int B, int T, int C) {
    lk_job j = { .ks = atm_layer_kernels(), .o0 = s, .o1 = out, .i0 = u, .i1 = a_raw, .i2 = b, .i3 = c_out,
                 .B = B, .T = T, .C = C };
    int nt = tasks_for(4.0 * B * T * C, B);
    if (nt > 1) nt = reserve(nt, sizeof(float) * (size_t)C);
    if (nt <= 1) j.ks->ssm_forward(s, out, u, a_raw, b, c_out, scratch, B, T, C);
    else atm_parallel(ssm_fwd_task, &j, nt);
}

/* Channels: every channel is its own backward scan with its own three sums
 * (kernels' per-lane order is the reference's), so each task runs the
 * kernel on its columns, rows C floats apart, and computes exactly the
 * one call's bits for them. */
typedef struct {
    const atm_layer_kernel_set *ks;
    float *du, *da, *db, *dc;
    const float *dout, *u, *s, *a, *b, *c;
    int B, T, C;
} ssm_bwd_job;

static void ssm_bwd_task(void *ctx, int t, int nt) {
    const ssm_bwd_job *j = ctx;
    int lo, hi;
    atm_share_int(j->C, t, nt, CH, &lo, &hi);
    if (hi <= lo) return;
#define AT(p) ((p) ? (p) + lo : NULL)
    j->ks->ssm_backward(AT(j->du), AT(j->da), AT(j->db), AT(j->dc), j->dout + lo, j->u + lo, j->s + lo,
                        j->a + lo, j->b + lo, j->c + lo, atm_task_scratch(t, 0), j->B, j->T, hi - lo, j->C);
#undef AT
}

void atm_atome_ssm_backward(float *du, float *da_raw, float *db, float *dc,
                            const float *dout, const float *u, const float *s,
                            const float *a_raw, const float *b, const float *c_out,
                            float *scratch, int B, int T, int C) {
    ssm_bwd_job j = { atm_layer_kernels(), du, da_raw, db, dc, dout, u, s, a_raw, b, c_out, B, T, C };
    int nt = tasks_for(12.0 * B * T * C, (C + CH - 1) / CH);
    if (nt > 1) nt = reserve(nt, sizeof(float) * 7 * (size_t)C);
    if (nt <= 1) j.ks->ssm_backward(du, da_raw, db, dc, dout, u, s, a_raw, b, c_out, scratch, B, T, C, C);
    else atm_parallel(ssm_bwd_task, &j, nt);
}

/* ---- attention: whole sequences ---- */
static void attn_fwd_task(void *ctx, int t, int nt) {
    const lk_job *j = ctx;
    int lo, hi;
    atm_share_int(j->B, t, nt, 1, &lo, &hi);
    if (hi <= lo) return;
    const size_t r0 = (size_t)lo * j->T;
    j->ks->attn_forward(j->o0 + r0 * j->C, j->idx + r0 * j->TK, j->o1 + r0 * j->TK, j->i0 + r0 * j->DH,
                        j->i1 + r0 * j->DH, j->i2 + r0 * j->C, atm_task_scratch(t, 0), hi - lo, j->T, j->DH,
                        j->C, j->TK);
}

void atm_atome_attn_forward(float *out, int32_t *idx, float *p, const float *q,
                            const float *k, const float *v, float *scratch,
                            int B, int T, int DH, int C, int TK) {
    lk_job j = { .ks = atm_layer_kernels(), .o0 = out, .o1 = p, .idx = idx, .i0 = q, .i1 = k, .i2 = v,
                 .B = B, .T = T, .DH = DH, .C = C, .TK = TK };
    int nt = tasks_for((double)B * T * ((double)T * DH + 2.0 * TK * C), B);
    if (nt > 1) nt = reserve(nt, sizeof(float) * (size_t)(DH + 1) * T);
    if (nt <= 1) j.ks->attn_forward(out, idx, p, q, k, v, scratch, B, T, DH, C, TK);
    else atm_parallel(attn_fwd_task, &j, nt);
}

static void attn_bwd_task(void *ctx, int t, int nt) {
    const lk_job *j = ctx;
    int lo, hi;
    atm_share_int(j->B, t, nt, 1, &lo, &hi);
    if (hi <= lo) return;
    const size_t r0 = (size_t)lo * j->T;
    j->ks->attn_backward(j->o0 ? j->o0 + r0 * j->DH : NULL, j->o1 ? j->o1 + r0 * j->DH : NULL,
                         j->o2 ? j->o2 + r0 * j->C : NULL, j->i0 + r0 * j->C, j->idx + r0 * j->TK,
                         j->i1 + r0 * j->TK, j->i2 + r0 * j->DH, j->i3 + r0 * j->DH, j->i4 + r0 * j->C,
                         hi - lo, j->T, j->DH, j->C, j->TK);
}

void atm_atome_attn_backward(float *dq, float *dk, float *dv, const float *dout,
                             const int32_t *idx, const float *p, const float *q,
                             const float *k, const float *v,
                             int B, int T, int DH, int C, int TK) {
    lk_job j = { .ks = atm_layer_kernels(), .o0 = dq, .o1 = dk, .o2 = dv, .i0 = dout, .idx = (int32_t *)idx,
                 .i1 = p, .i2 = q, .i3 = k, .i4 = v, .B = B, .T = T, .DH = DH, .C = C, .TK = TK };
    const int nt = tasks_for(4.0 * B * T * TK * (DH + C), B);
    if (nt <= 1) j.ks->attn_backward(dq, dk, dv, dout, idx, p, q, k, v, B, T, DH, C, TK);
    else atm_parallel(attn_bwd_task, &j, nt);
}

/* ---- router mixing: rows ---- */
static void mix_fwd_task(void *ctx, int t, int nt) {
    const lk_job *j = ctx;
    int lo, hi;
    atm_share_int(j->N, t, nt, ROWS, &lo, &hi);
    if (hi <= lo) return;
    const float *pp[3];
    for (int p = 0; p < j->P && p < 3; p++) pp[p] = j->paths[p] + (size_t)lo * j->C;
    j->ks->mix_forward(j->o0 + (size_t)lo * j->C, j->o1 + (size_t)lo * j->P, j->i0 + (size_t)lo * j->C, pp,
                       hi - lo, j->C, j->P);
}

void atm_atome_mix_forward(float *hout, float *r, const float *hin,
                           const float *const *paths, int N, int C, int P) {
    lk_job j = { .ks = atm_layer_kernels(), .o0 = hout, .o1 = r, .i0 = hin, .paths = paths, .N = N, .C = C, .P = P };
    const int nt = P <= 3 ? tasks_for(3.0 * N * C * P, N / ROWS) : 1;
    if (nt <= 1) j.ks->mix_forward(hout, r, hin, paths, N, C, P);
    else atm_parallel(mix_fwd_task, &j, nt);
}

static void mix_bwd_task(void *ctx, int t, int nt) {
    const lk_job *j = ctx;
    int lo, hi;
    atm_share_int(j->N, t, nt, ROWS, &lo, &hi);
    if (hi <= lo) return;
    const float *pp[3];
    float *dp[3];
    for (int p = 0; p < j->P && p < 3; p++) {
        pp[p] = j->paths[p] + (size_t)lo * j->C;
        dp[p] = j->dpaths[p] ? j->dpaths[p] + (size_t)lo * j->C : NULL;
    }
    j->ks->mix_backward(j->o0 + (size_t)lo * j->P, dp, j->i0 + (size_t)lo * j->C, j->i1 + (size_t)lo * j->P, pp,
                        hi - lo, j->C, j->P);
}

void atm_atome_mix_backward(float *drl, float *const *dpaths, const float *dhout,
                            const float *r, const float *const *paths,
                            int N, int C, int P) {
    lk_job j = { .ks = atm_layer_kernels(), .o0 = drl, .dpaths = dpaths, .i0 = dhout, .i1 = r, .paths = paths,
                 .N = N, .C = C, .P = P };
    const int nt = P <= 3 ? tasks_for(5.0 * N * C * P, N / ROWS) : 1;
    if (nt <= 1) j.ks->mix_backward(drl, dpaths, dhout, r, paths, N, C, P);
    else atm_parallel(mix_bwd_task, &j, nt);
}
