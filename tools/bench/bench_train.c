/* tools/bench/bench_train.c — training throughput, one thread or several.
 *
 * Contract. For each config (default atome-60k and vanilla-60k) and each
 * matmul kernel set (default: "ref" and the automatic choice; --kernels all =
 * every set available here), builds a trainer (atm_trainer_new, batch B x seq
 * bytes, AdamW defaults) and times atm_trainer_step — quantise, forward,
 * backward, AdamW, the real training step — on random bytes after a few
 * warm-up steps. Each step is timed alone, in CPU time of the thread
 * (CLOCK_THREAD_CPUTIME_ID) and in wall time; the median CPU time is the
 * headline (the minimum and the median wall time are in the JSON), so other
 * processes sharing the machine perturb the figure as little as possible; on
 * an idle machine the two clocks agree. Throughput is trained bytes per
 * second = B*(seq-1) predicted bytes per step / median step time; B*seq input
 * bytes per second is printed as well.
 * Forward alone and forward+backward are timed the same way to split the
 * step. The matmul share: the matmul calls of one step are recorded
 * (kernels.h), their work counted (matmul_gflop) and replayed alone with the
 * same kernel set (matmul_ms, median; same shapes and order, scratch data).
 * Ratios are against the "ref" kernels of the same run.
 *
 * Output: a table on stdout, then one line "JSON: {...}". Exit status 0, or 1
 * on a bad argument or a config that cannot be trained (e.g. a family still
 * unimplemented). --threads 1,2 runs each config x kernel set on each
 * thread count (the trainer's pool, core/train/pool.h) and reports wall
 * time, with the ratio to one thread of the same run (vs_1thread), and,
 * for each count above one, where a step's wall time goes (medians over the
 * timed steps, atm_pool_timing): serial_ms on the calling thread alone
 * (between parallel calls: batch-free serial work and the dispatch), wait_ms
 * the caller's wait inside parallel calls after its own last task (the
 * other threads' late finish). */
#define _POSIX_C_SOURCE 200809L
#include "core/train/kernels.h"
#include "core/train/model.h"
#include "core/rng.h"
#include "core/train/trainer.h"
#include "core/train/pool.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double clock_s(clockid_t id) {
    struct timespec t;
    clock_gettime(id, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}
/* CPU time of this thread: what one core spends on the step, unaffected by
 * the time the thread waits while other processes use the core. */
static double now_s(void) { return clock_s(CLOCK_THREAD_CPUTIME_ID); }
static double wall_s(void) { return clock_s(CLOCK_MONOTONIC); }
/* The clock of the split (forward, backward, matmul): thread CPU time on
 * one thread, wall time when other threads share the work. */
static int g_wall = 0;
static double split_s(void) { return g_wall ? wall_s() : now_s(); }

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

typedef struct {
    char   config[40];
    char   kernels[16];
    char   quant[8];
    int    threads;
    double step_med, step_min;  /* seconds of thread CPU time */
    double wall_med;            /* seconds of wall time */
    double fwd_med, fwdbwd_med; /* seconds */
    double loss;
    double mm_gflop;            /* matmul work of one step, GFLOP */
    double mm_med;              /* seconds: that work replayed alone (median) */
    int mm_calls;
    double serial_med, wait_med; /* seconds a step (threads > 1): on the caller alone; waiting for the others */
} result;

/* Median and minimum of n timings (sorts t). */
static void stats(double *t, int n, double *med, double *mn) {
    qsort(t, (size_t)n, sizeof *t, cmp_d);
    *mn = t[0];
    *med = (n % 2) ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
}

static void usage(void) {
    fprintf(stderr,
            "usage: bench_train [--configs a,b,...] [--kernels ref,auto|all|NAME,...]\n"
            "                   [--batch 16] [--seq 64] [--steps 30] [--warmup 3]\n"
            "                   [--quant auto|fp32|ternary] [--seed 1] [--threads 1,2]\n"
            "       bench_train --matmul 1 [--kernels ...] [--batch 16] [--seq 64]\n"
            "  quant auto: ternary for the atome family, fp32 for the baselines.\n"
            "  --matmul 1: GFLOP/s of the matmul kernels alone on the trainers' shapes.\n"
            "  --threads: thread counts to run each config x kernel set on (core/train/pool.h);\n"
            "  with more than one thread anywhere the clock is wall time.\n");
}

/* The flags of one run (defaults in main). */
typedef struct {
    char          cfgbuf[256], kbuf[256], tbuf[64];   /* comma lists, split in place */
    char          tlist[64];                        /* --threads as given */
    int           threads[8], nthreads, wall;       /* --threads; wall: the headline clock */
    const char   *quant;
    int           B, seq, steps, warmup, matmul;
    unsigned long seed;
} bench_args;

/* The buffers of one config x kernel set: a batch and the timings of each
 * timed step (ts thread CPU, tw wall; tf forward, tb forward + backward, tm
 * matmul replay; tser wall time outside parallel calls, twait the caller's
 * wait in them: atm_pool_timing). */
typedef struct {
    uint8_t *in, *tgt;
    double  *ts, *tf, *tb, *tw, *tm, *tser, *twait;
} run_bufs;

static void bufs_free(run_bufs *b) {
    free(b->in); free(b->tgt); free(b->ts); free(b->tf); free(b->tb); free(b->tw); free(b->tm);
    free(b->tser); free(b->twait);
}

static int bufs_alloc(run_bufs *b, int N, int steps) {
    b->in = malloc((size_t)N);
    b->tgt = malloc((size_t)N);
    b->ts = malloc(sizeof(double) * (size_t)steps);
    b->tf = malloc(sizeof(double) * (size_t)steps);
    b->tb = malloc(sizeof(double) * (size_t)steps);
    b->tw = malloc(sizeof(double) * (size_t)steps);
    b->tm = malloc(sizeof(double) * (size_t)steps);
    b->tser = malloc(sizeof(double) * (size_t)steps);
    b->twait = malloc(sizeof(double) * (size_t)steps);
    if (!b->in || !b->tgt || !b->ts || !b->tf || !b->tb || !b->tw || !b->tm || !b->tser || !b->twait) { fprintf(stderr, "bench_train: out of memory\n"); return -1; }
    return 0;
}

/* A trainer of config cfgname on kernel set kname with the run's batch, seq,
 * seed and quantiser (*quant; auto: ternary for the atome family); NULL
 * with a message on stderr. */
static atm_trainer *make_trainer(const bench_args *a, const char *cfgname, const char *kname, int *quant) {
    atm_config c;
    if (atm_config_by_name(cfgname, &c) != 0) { fprintf(stderr, "bench_train: unknown config %s\n", cfgname); return NULL; }
    char err[160];
    if (atm_config_validate(&c, err, sizeof err) != 0) {
        fprintf(stderr, "bench_train: %s: %s\n", cfgname, err);
        return NULL;
    }
    if (atm_kernels_select(kname) != 0) { fprintf(stderr, "bench_train: kernels %s not available\n", kname); return NULL; }
    atm_train_opts o;
    atm_train_opts_default(&o);
    o.batch = a->B;
    o.seq = a->seq;
    o.seed = (uint32_t)a->seed;
    o.steps = a->warmup + a->steps;
    if (strcmp(a->quant, "ternary") == 0 || (strcmp(a->quant, "auto") == 0 && c.family == ATM_FAMILY_ATOME))
        o.quant = ATM_QUANT_TERNARY;
    else
        o.quant = ATM_QUANT_FP32;
    *quant = o.quant;
    if (atm_train_opts_validate(&o, err, sizeof err) != 0) { fprintf(stderr, "bench_train: %s\n", err); return NULL; }
    atm_trainer *tr = atm_trainer_new(&c, &o);
    if (!tr) fprintf(stderr, "bench_train: cannot build a trainer for %s\n", cfgname);
    return tr;
}

/* The training steps (warm-up, then timed), then forward alone and forward +
 * backward on the last batch. Returns the loss of the last step. */
static double time_steps(const bench_args *a, atm_trainer *tr, run_bufs *b) {
    const int B = a->B, T = a->seq - 1, N = B * T, warmup = a->warmup, steps = a->steps;
    /* Random bytes: the cost of a step does not depend on the text. A fresh
     * batch per step, drawn outside the timed region. */
    atm_rng rng;
    atm_rng_seed(&rng, (uint32_t)a->seed ^ 0x5eedu);
    double loss = 0.0;
    atm_pool_timing(1);
    for (int s = 0; s < warmup + steps; s++) {
        for (int i = 0; i < N; i++) { b->in[i] = (uint8_t)atm_rng_u32(&rng); b->tgt[i] = (uint8_t)atm_rng_u32(&rng); }
        double c0, wt0, c1, wt1;
        atm_pool_timing_read(&c0, &wt0);
        double w0 = wall_s(), t0 = now_s();
        loss = atm_trainer_step(tr, b->in, b->tgt);
        double t1 = now_s(), w1 = wall_s();
        atm_pool_timing_read(&c1, &wt1);
        if (s >= warmup) {
            b->ts[s - warmup] = t1 - t0;
            b->tw[s - warmup] = w1 - w0;
            b->tser[s - warmup] = (w1 - w0) - (c1 - c0);
            b->twait[s - warmup] = wt1 - wt0;
        }
    }
    atm_pool_timing(0);
    /* Split of the step: forward alone, and forward + backward, on the
     * trainer's own effective weights and buffers (dw is scratch here). */
    for (int s = 0; s < steps; s++) {
        double t0 = split_s();
        tr->fam->forward(&tr->L, tr->weff, tr->acts, b->in, b->tgt, B, T);
        double t1 = split_s();
        b->tf[s] = t1 - t0;
    }
    for (int s = 0; s < steps; s++) {
        memset(tr->dw, 0, sizeof(float) * tr->L.n_params);
        double t0 = split_s();
        tr->fam->forward(&tr->L, tr->weff, tr->acts, b->in, b->tgt, B, T);
        tr->fam->backward(&tr->L, tr->weff, tr->acts, tr->dw);
        double t1 = split_s();
        b->tb[s] = t1 - t0;
    }
    return loss;
}

/* The matmul share of a step: the calls of one step recorded, then replayed
 * alone with the same kernel set on scratch buffers (shapes and order as in
 * the step; data and cache state not). 0, or -1 with a message. */
static int time_matmul(atm_trainer *tr, run_bufs *b, int steps, result *r) {
    enum { MM_CAP = 8192 };
    static atm_matmul_call calls[MM_CAP];
    double f0 = atm_matmul_flops();
    atm_matmul_record_start(calls, MM_CAP);
    atm_trainer_step(tr, b->in, b->tgt);
    int ncalls = atm_matmul_record_stop();
    r->mm_gflop = (atm_matmul_flops() - f0) * 1e-9;
    r->mm_calls = ncalls;
    if (ncalls > MM_CAP) { fprintf(stderr, "bench_train: %d matmul calls in a step (max %d)\n", ncalls, MM_CAP); return -1; }
    size_t nf = atm_matmul_replay_floats(calls, ncalls);
    float *scratch = malloc(sizeof(float) * (nf ? nf : 1));
    if (!scratch) { fprintf(stderr, "bench_train: out of memory\n"); return -1; }
    for (int s = 0; s < steps; s++) {
        double t0 = split_s();
        atm_matmul_replay(calls, ncalls, scratch, nf);
        b->tm[s] = split_s() - t0;
    }
    free(scratch);
    return 0;
}

static int run_one(const bench_args *a, const char *cfgname, const char *kname, result *r) {
    int quant;
    atm_trainer *tr = make_trainer(a, cfgname, kname, &quant);
    if (!tr) return -1;
    const int steps = a->steps;
    run_bufs b = { 0 };
    int rc = bufs_alloc(&b, a->B * (a->seq - 1), steps);
    double loss = rc ? 0.0 : time_steps(a, tr, &b);
    if (!rc) rc = time_matmul(tr, &b, steps, r);
    if (!rc) {
        double dummy;
        snprintf(r->config, sizeof r->config, "%s", cfgname);
        snprintf(r->kernels, sizeof r->kernels, "%s", atm_kernels_name());
        snprintf(r->quant, sizeof r->quant, "%s", quant == ATM_QUANT_TERNARY ? "ternary" : "fp32");
        stats(a->wall ? b.tw : b.ts, steps, &r->step_med, &r->step_min);
        stats(b.tf, steps, &r->fwd_med, &dummy);
        stats(b.tb, steps, &r->fwdbwd_med, &dummy);
        stats(b.tw, steps, &r->wall_med, &dummy);
        stats(b.tm, steps, &r->mm_med, &dummy);
        stats(b.tser, steps, &r->serial_med, &dummy);
        stats(b.twait, steps, &r->wait_med, &dummy);
        r->loss = loss;
    }
    bufs_free(&b);
    atm_trainer_free(tr);
    return rc;
}

/* Seconds per call of the matmuls on one shape, the best of 40 timed
 * batches of it calls each: best[0] the forward, then the backward with
 * dinp only, dw only and both. */
static void time_products(double best[4], double (*clk)(void), int it, float *out, const float *inp, const float *w,
                          const float *dout, float *dinp, float *dw, int N, int IC, int OC) {
    static const int want_dinp[4] = { 0, 1, 0, 1 }, want_dw[4] = { 0, 0, 1, 1 };
    for (int c = 0; c < 4; c++) best[c] = 1e30;
    for (int rep = 0; rep < 40; rep++)
        for (int c = 0; c < 4; c++) {
            double t = clk();
            for (int i = 0; i < it; i++) {
                if (c == 0) atm_matmul_forward(out, inp, w, N, IC, OC);
                else atm_matmul_backward(want_dinp[c] ? dinp : NULL, want_dw[c] ? dw : NULL, dout, inp, w, N, IC, OC);
            }
            t = (clk() - t) / it;
            if (t < best[c]) best[c] = t;
        }
}

/* GFLOP/s of forward, dinp-only, dw-only and both-gradient backward (the
 * training step's call) for the (IC, OC) shapes of atome-60k, vanilla-60k
 * and atome-944k with N = B*(seq-1) rows, on each thread count of
 * --threads (the pool's split, core/train/kernels/kernels.c). Each figure
 * is the best of 40 timed batches of calls: thread CPU time on one thread only,
 * wall time as soon as any count is above one; vs_1t is the both-gradient
 * backward's ratio to the first count. */
static void bench_matmul(const char *const *klist, int nk, int N, const int *threads, int nthreads, int wall) {
    static const int shapes[][2] = {
        { 64, 64 }, { 64, 16 }, { 64, 3 }, { 64, 256 },    /* atome-60k */
        { 44, 132 }, { 44, 44 }, { 44, 256 },              /* vanilla-60k */
        { 256, 256 }, { 256, 64 },                         /* atome-944k */
    };
    double (*clk)(void) = wall ? wall_s : now_s;
    int ns = (int)(sizeof shapes / sizeof shapes[0]);
    printf("bench_train --matmul: N = %d rows, GFLOP/s (2*N*IC*OC flops per product; both: 4*N*IC*OC), %s clock\n",
           N, wall ? "wall" : "thread CPU");
    printf("%-9s %-8s %3s %9s %9s %9s %9s %7s\n", "IC,OC", "kernels", "thr", "forward", "dinp", "dw", "both", "vs_1t");
    static char json[32768];
    size_t jl = (size_t)snprintf(json, sizeof json, "JSON: {\"bench\":\"matmul\",\"clock\":\"%s\",\"N\":%d,\"results\":[",
                                 wall ? "wall" : "thread_cpu", N);
    int first = 1;
    atm_rng rng;
    atm_rng_seed(&rng, 7);
    for (int s = 0; s < ns; s++) {
        int IC = shapes[s][0], OC = shapes[s][1];
        size_t ni = (size_t)N * IC, nw = (size_t)OC * IC, no = (size_t)N * OC;
        float *inp = malloc(ni * sizeof(float)), *w = malloc(nw * sizeof(float));
        float *out = malloc(no * sizeof(float)), *dout = malloc(no * sizeof(float));
        float *dinp = calloc(ni, sizeof(float)), *dw = calloc(nw, sizeof(float));
        if (!inp || !w || !out || !dout || !dinp || !dw) { fprintf(stderr, "bench_train: out of memory\n"); exit(1); }
        for (size_t i = 0; i < ni; i++) inp[i] = (float)(atm_rng_u32(&rng) >> 8) * 0x1p-24f - 0.5f;
        for (size_t i = 0; i < nw; i++) w[i] = (float)(atm_rng_u32(&rng) >> 8) * 0x1p-24f - 0.5f;
        for (size_t i = 0; i < no; i++) dout[i] = (float)(atm_rng_u32(&rng) >> 8) * 0x1p-24f - 0.5f;
        double flop = 2.0 * N * IC * OC;
        int it = (int)(2e6 / flop) + 1; /* ~2 MFLOP per timed batch */
        for (int k = 0; k < nk; k++) {
            if (atm_kernels_select(klist[k]) != 0) continue;
            double both1 = 0;
            for (int th = 0; th < nthreads; th++) {
                atm_threads_set(threads[th]);
                double best[4];
                time_products(best, clk, it, out, inp, w, dout, dinp, dw, N, IC, OC);
                double g[4] = { 1e-9 * flop / best[0], 1e-9 * flop / best[1], 1e-9 * flop / best[2],
                                2e-9 * flop / best[3] };
                if (th == 0) both1 = g[3];
                char sh[24];
                snprintf(sh, sizeof sh, "%d,%d", IC, OC);
                printf("%-9s %-8s %3d %9.1f %9.1f %9.1f %9.1f %6.2fx\n", sh, atm_kernels_name(), threads[th],
                       g[0], g[1], g[2], g[3], g[3] / both1);
                if (jl < sizeof json)
                    jl += (size_t)snprintf(json + jl, sizeof json - jl,
                                           "%s{\"IC\":%d,\"OC\":%d,\"kernels\":\"%s\",\"threads\":%d,\"fwd_gflops\":%.2f,"
                                           "\"dinp_gflops\":%.2f,\"dw_gflops\":%.2f,\"both_gflops\":%.2f,\"vs_1thread\":%.3f}",
                                           first ? "" : ",", IC, OC, atm_kernels_name(), threads[th], g[0], g[1],
                                           g[2], g[3], g[3] / both1);
                first = 0;
            }
            atm_threads_set(1);
        }
        free(inp); free(w); free(out); free(dout); free(dinp); free(dw);
    }
    printf("%s]}\n", json);
}

/* Splits a comma list in place into at most max items. */
static int split(char *s, char **items, int max) {
    int n = 0;
    for (char *p = strtok(s, ","); p && n < max; p = strtok(NULL, ",")) items[n++] = p;
    return n;
}

/* The flags into *a: -1 to run, else the exit status (usage printed). */
static int parse_args(bench_args *a, int argc, char **argv) {
    snprintf(a->cfgbuf, sizeof a->cfgbuf, "%s", "atome-60k,vanilla-60k");
    snprintf(a->kbuf, sizeof a->kbuf, "%s", "ref,auto");
    snprintf(a->tbuf, sizeof a->tbuf, "%s", "1");
    a->quant = "auto";
    a->B = 16; a->seq = 64; a->steps = 30; a->warmup = 3; a->matmul = 0;
    a->seed = 1;
    for (int i = 1; i < argc; i += 2) {
        const char *f = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(f, "-h") == 0 || strcmp(f, "--help") == 0) { usage(); return 0; }
        if (!v) { usage(); return 1; }
        if (strcmp(f, "--configs") == 0) snprintf(a->cfgbuf, sizeof a->cfgbuf, "%s", v);
        else if (strcmp(f, "--kernels") == 0) snprintf(a->kbuf, sizeof a->kbuf, "%s", v);
        else if (strcmp(f, "--quant") == 0) a->quant = v;
        else if (strcmp(f, "--batch") == 0) a->B = atoi(v);
        else if (strcmp(f, "--seq") == 0) a->seq = atoi(v);
        else if (strcmp(f, "--steps") == 0) a->steps = atoi(v);
        else if (strcmp(f, "--warmup") == 0) a->warmup = atoi(v);
        else if (strcmp(f, "--seed") == 0) a->seed = strtoul(v, NULL, 10);
        else if (strcmp(f, "--matmul") == 0) a->matmul = atoi(v);
        else if (strcmp(f, "--threads") == 0) snprintf(a->tbuf, sizeof a->tbuf, "%s", v);
        else { usage(); return 1; }
    }
    char *ts[8];
    snprintf(a->tlist, sizeof a->tlist, "%s", a->tbuf);
    a->nthreads = split(a->tbuf, ts, 8);
    a->wall = 0;
    for (int i = 0; i < a->nthreads; i++) {
        a->threads[i] = atoi(ts[i]);
        if (a->threads[i] < 1 || a->threads[i] > ATM_THREADS_MAX) { usage(); return 1; }
        a->wall |= a->threads[i] > 1;
    }
    g_wall = a->wall;
    if (a->nthreads < 1 || a->B < 1 || a->seq < 2 || a->steps < 1 || a->warmup < 0 ||
        (strcmp(a->quant, "auto") && strcmp(a->quant, "fp32") && strcmp(a->quant, "ternary"))) {
        usage();
        return 1;
    }
    return -1;
}

/* The kernel sets to measure, in klist[16]: --kernels split ("all": every
 * set of this build), "auto" resolved to its set, repeats dropped. */
static int kernel_list(char *kbuf, const char **klist) {
    char *ks[16];
    const char *kall[16];
    int nk;
    if (strcmp(kbuf, "all") == 0) {
        nk = atm_kernels_count();
        for (int i = 0; i < nk && i < 16; i++) kall[i] = atm_kernels_set(i)->name;
    } else {
        nk = split(kbuf, ks, 16);
        for (int i = 0; i < nk; i++) kall[i] = ks[i];
    }
    /* "auto" after an explicit set of the same name would measure it twice. */
    atm_kernels_select("auto");
    const char *best = atm_kernels_name();
    int nkk = 0;
    for (int i = 0; i < nk; i++) {
        const char *k = strcmp(kall[i], "auto") == 0 ? best : kall[i];
        int dup = 0;
        for (int j = 0; j < nkk; j++) dup |= strcmp(klist[j], k) == 0;
        if (!dup) klist[nkk++] = k;
    }
    return nkk;
}

/* Runs every config x kernel set into res[], printing the table as it goes;
 * the count, or -1 if one cannot be trained. */
static int run_table(const bench_args *a, char **cfgs, int ncfg, const char **klist, int nkk, result *res) {
    const int B = a->B, T = a->seq - 1;
    int nres = 0;
    printf("bench_train: batch %d x seq %d (%d predicted bytes/step), threads %s, %s clock, %d timed steps after %d warm-up\n",
           B, a->seq, B * T, a->tlist, a->wall ? "wall" : "thread CPU", a->steps, a->warmup);
    printf("%-12s %-8s %-7s %3s %9s %9s %9s %9s %9s %9s %12s %12s %8s %8s %9s %9s\n", "config", "kernels", "quant", "thr",
           "step_ms", "wall_ms", "fwd_ms", "bwd_ms", "rest_ms", "matmul_ms", "bytes/s", "B*seq/s", "vs_ref", "vs_1t",
           "serial_ms", "wait_ms");
    for (int c = 0; c < ncfg; c++) {
        double ref_bps = 0.0;
        for (int k = 0; k < nkk; k++) {
            double one_bps = 0.0;
            for (int t = 0; t < a->nthreads; t++) {
                result *r = &res[nres];
                atm_threads_set(a->threads[t]);
                if (run_one(a, cfgs[c], klist[k], r) != 0) return -1;
                r->threads = atm_threads();
                nres++;
                double bps = (double)B * T / r->step_med;
                if (strcmp(r->kernels, "ref") == 0 && r->threads == 1) ref_bps = bps;
                if (r->threads == 1) one_bps = bps;
                char ratio[16] = "-", tr[16] = "-";
                if (ref_bps > 0 && r->threads == 1) snprintf(ratio, sizeof ratio, "%.2fx", bps / ref_bps);
                if (one_bps > 0) snprintf(tr, sizeof tr, "%.2fx", bps / one_bps);
                char ser[16] = "-", wt[16] = "-";
                if (r->threads > 1) {
                    snprintf(ser, sizeof ser, "%.3f", 1e3 * r->serial_med);
                    snprintf(wt, sizeof wt, "%.3f", 1e3 * r->wait_med);
                }
                printf("%-12s %-8s %-7s %3d %9.3f %9.3f %9.3f %9.3f %9.3f %9.3f %12.0f %12.0f %8s %8s %9s %9s\n",
                       r->config, r->kernels, r->quant, r->threads, 1e3 * r->step_med, 1e3 * r->wall_med,
                       1e3 * r->fwd_med, 1e3 * (r->fwdbwd_med - r->fwd_med), 1e3 * (r->step_med - r->fwdbwd_med),
                       1e3 * r->mm_med, bps, (double)a->B * a->seq / r->step_med, ratio, tr, ser, wt);
            }
        }
    }
    atm_threads_set(1);
    return nres;
}

static void print_json(const bench_args *a, const result *res, int nres) {
    const int B = a->B, T = a->seq - 1;
    printf("JSON: {\"bench\":\"train\",\"clock\":\"%s\",\"threads\":[%s],\"batch\":%d,\"seq\":%d,\"bytes_per_step\":%d,\"results\":[",
           a->wall ? "wall" : "thread_cpu", a->tlist, B, a->seq, B * T);
    for (int i = 0; i < nres; i++) {
        const result *r = &res[i];
        double ref_bps = 0.0, one_bps = 0.0;
        for (int j = 0; j < nres; j++) {
            if (strcmp(res[j].config, r->config) || res[j].threads != 1) continue;
            if (strcmp(res[j].kernels, "ref") == 0) ref_bps = (double)B * T / res[j].step_med;
            if (strcmp(res[j].kernels, r->kernels) == 0) one_bps = (double)B * T / res[j].step_med;
        }
        double bps = (double)B * T / r->step_med;
        printf("%s{\"config\":\"%s\",\"kernels\":\"%s\",\"quant\":\"%s\",\"threads\":%d,\"step_ms\":%.4f,\"step_ms_min\":%.4f,\"step_ms_wall\":%.4f,"
               "\"fwd_ms\":%.4f,\"fwdbwd_ms\":%.4f,\"matmul_gflop\":%.6f,\"matmul_calls\":%d,\"matmul_ms\":%.4f,"
               "\"bytes_per_s\":%.0f,\"input_bytes_per_s\":%.0f,\"vs_ref\":",
               i ? "," : "", r->config, r->kernels, r->quant, r->threads, 1e3 * r->step_med, 1e3 * r->step_min,
               1e3 * r->wall_med, 1e3 * r->fwd_med, 1e3 * r->fwdbwd_med, r->mm_gflop, r->mm_calls, 1e3 * r->mm_med,
               bps, (double)B * a->seq / r->step_med);
        if (ref_bps > 0 && r->threads == 1) printf("%.3f", bps / ref_bps);
        else printf("null");
        if (one_bps > 0) printf(",\"vs_1thread\":%.3f", bps / one_bps);
        else printf(",\"vs_1thread\":null");
        if (r->threads > 1) printf(",\"serial_ms\":%.4f,\"wait_ms\":%.4f}", 1e3 * r->serial_med, 1e3 * r->wait_med);
        else printf(",\"serial_ms\":null,\"wait_ms\":null}");
    }
    printf("]}\n");
}

int main(int argc, char **argv) {
    bench_args a;
    int rc = parse_args(&a, argc, argv);
    if (rc >= 0) return rc;
    char *cfgs[16];
    int ncfg = split(a.cfgbuf, cfgs, 16);
    const char *klist[16];
    int nkk = kernel_list(a.kbuf, klist);
    if (a.matmul) {
        bench_matmul(klist, nkk, a.B * (a.seq - 1), a.threads, a.nthreads, a.wall);
        return 0;
    }
    static result res[16 * 16];
    int nres = run_table(&a, cfgs, ncfg, klist, nkk, res);
    if (nres < 0) return 1;
    print_json(&a, res, nres);
    return 0;
}
