/* core/train/kernels/kernels.c — run-time choice of the training matmul kernels.
 *
 * Contract (see kernels.h): atm_matmul_forward/backward call the kernel set
 * chosen on first use: ATOME_KERNELS if it names an available set, else the
 * fastest one the CPU supports. The reference kernels (layers.c) are always
 * available, so every target has a portable fallback. x86 sets are compiled
 * with target attributes (kernels_x86.c) and used only when
 * __builtin_cpu_supports() says the CPU and OS handle them. The wasm SIMD set
 * (kernels_wasm.c, atm_matmul_*_wasm) is in the table whenever the build has
 * __wasm_simd128__ (-msimd128). No threads: the choice is a plain static written
 * once (every writer writes the same value). */
#include "../kernels.h"
#include "../pool.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#define ATM_KERNELS_X86 1
#endif

/* Ordered from the reference to the fastest. */
static const atm_kernel_set SETS[] = {
    { "ref", atm_matmul_forward_ref, atm_matmul_backward_ref, atm_matmul_backward_dw_ref },
#ifdef ATM_KERNELS_X86
    { "avx2", atm_matmul_forward_avx2, atm_matmul_backward_avx2, atm_matmul_backward_dw_avx2 },
    { "avx512", atm_matmul_forward_avx512, atm_matmul_backward_avx512, atm_matmul_backward_dw_avx512 },
#endif
#if defined(__wasm_simd128__)
    { "wasm-simd", atm_matmul_forward_wasm, atm_matmul_backward_wasm, atm_matmul_backward_dw_wasm },
#endif
};
#define N_SETS ((int)(sizeof(SETS) / sizeof(SETS[0])))

static int supported(const atm_kernel_set *s) {
#ifdef ATM_KERNELS_X86
    if (strcmp(s->name, "avx2") == 0) {
        __builtin_cpu_init();
        return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    }
    if (strcmp(s->name, "avx512") == 0) {
        __builtin_cpu_init();
        return __builtin_cpu_supports("avx512f");
    }
#endif
    (void)s;
    return 1;
}

static const atm_kernel_set *g_avail[N_SETS];
static int g_navail = -1;
static const atm_kernel_set *g_cur = NULL;

static void probe(void) {
    if (g_navail >= 0) return;
    int n = 0;
    for (int i = 0; i < N_SETS; i++)
        if (supported(&SETS[i])) g_avail[n++] = &SETS[i];
    g_navail = n;
}

static const atm_kernel_set *find(const char *name) {
    probe();
    if (strcmp(name, "auto") == 0) return g_avail[g_navail - 1];
    for (int i = 0; i < g_navail; i++)
        if (strcmp(g_avail[i]->name, name) == 0) return g_avail[i];
    return NULL;
}

static const atm_kernel_set *current(void) {
    if (g_cur) return g_cur;
    const atm_kernel_set *s = NULL;
    const char *env = getenv("ATOME_KERNELS");
    if (env && *env) {
        s = find(env);
        if (!s) fprintf(stderr, "atome: ATOME_KERNELS=%s is not available here; using automatic choice\n", env);
    }
    if (!s) s = find("auto");
    g_cur = s;
    return s;
}

int atm_kernels_count(void) { probe(); return g_navail; }

const atm_kernel_set *atm_kernels_set(int i) {
    probe();
    return (i >= 0 && i < g_navail) ? g_avail[i] : NULL;
}

int atm_kernels_select(const char *name) {
    const atm_kernel_set *s = find(name);
    if (!s) return -1;
    g_cur = s;
    return 0;
}

const char *atm_kernels_name(void) { return current()->name; }

/* A double counts exactly up to 2^53 flops: years of training steps. */
static double g_flops = 0.0;

double atm_matmul_flops(void) { return g_flops; }

static double mm_flops(int N, int IC, int OC) {
    return (N > 0 && IC > 0 && OC > 0) ? 2.0 * (double)N * (double)IC * (double)OC : 0.0;
}

static atm_matmul_call *g_rec = NULL;
static int g_rec_cap = 0, g_rec_n = 0, g_recording = 0;

void atm_matmul_record_start(atm_matmul_call *calls, int cap) {
    g_rec = calls;
    g_rec_cap = calls && cap > 0 ? cap : 0;
    g_rec_n = 0;
    g_recording = 1;
}

int atm_matmul_record_stop(void) {
    g_recording = 0;
    g_rec = NULL;
    return g_rec_n;
}

static void record(int backward, int dinp, int dw, int N, int IC, int OC) {
    if (g_rec_n < g_rec_cap) {
        atm_matmul_call c = { backward, dinp, dw, N, IC, OC };
        g_rec[g_rec_n] = c;
    }
    if (g_rec_n < 0x7fffffff) g_rec_n++;
}

/* Scratch layout of a replay: A[N*max(IC,OC)] (inp, or dout), B[OC*IC] (w),
 * then the outputs C[N*OC or N*IC] and D[OC*IC] (dw). */
static size_t replay_need(const atm_matmul_call *c) {
    if (c->N <= 0 || c->IC <= 0 || c->OC <= 0) return 0;
    size_t N = (size_t)c->N, IC = (size_t)c->IC, OC = (size_t)c->OC;
    size_t mx = IC > OC ? IC : OC;
    return N * mx + OC * IC + N * mx + OC * IC;
}

size_t atm_matmul_replay_floats(const atm_matmul_call *calls, int n) {
    size_t need = 0;
    for (int i = 0; calls && i < n; i++) {
        size_t k = replay_need(&calls[i]);
        if (k > need) need = k;
    }
    return need;
}

int atm_matmul_replay(const atm_matmul_call *calls, int n, float *scratch, size_t floats) {
    size_t need = atm_matmul_replay_floats(calls, n);
    if (n < 0 || (n > 0 && !calls) || floats < need || (need > 0 && !scratch)) return -1;
    for (size_t i = 0; i < need; i++) scratch[i] = 0.25f;
    const atm_kernel_set *ks = current();
    for (int i = 0; i < n; i++) {
        const atm_matmul_call *c = &calls[i];
        if (replay_need(c) == 0) continue;
        size_t N = (size_t)c->N, IC = (size_t)c->IC, OC = (size_t)c->OC, mx = IC > OC ? IC : OC;
        float *A = scratch, *Bm = A + N * mx, *Cm = Bm + OC * IC, *D = Cm + N * mx;
        if (c->backward)
            ks->backward(c->dinp ? Cm : NULL, c->dw ? D : NULL, A, A, Bm, c->N, c->IC, c->OC);
        else
            ks->forward(Cm, A, Bm, c->N, c->IC, c->OC);
    }
    return 0;
}

/* ---- the thread pool's share (pool.h): outputs only, never the sum order.
 * A forward splits the rows of out, a backward the rows of dinp and the rows
 * (output channels) of dw; every element then sees the one-thread kernel's
 * chain over the same k (dw through backward_dw on its rows, in place). Row chunks are multiples of ROWS_ALIGN rows and
 * longer than any kernel's small-N path (KX_SMALLN, KW_SMALLN = 4), so each
 * task takes the path the whole call would. */
#define ROWS_ALIGN 16
#define SMALL_N 4

/* One call's k products of one input (k = 1 for atm_matmul_forward /
 * backward): every task takes the same row share of each forward product
 * (and of dinp) and its share of each dw's rows, in the order of k separate
 * calls, so which task computes an element never changes its bits. */
typedef struct {
    const atm_kernel_set *ks;
    int k, N, IC;
    float *dinp;
    float *const *out, *const *dw;
    const float *inp;
    const float *const *w, *const *dout;
    const int *OC;
} mm_job;

static void mm_forward_task(void *ctx, int t, int nt) {
    const mm_job *j = ctx;
    int lo, hi;
    atm_share_int(j->N, t, nt, ROWS_ALIGN, &lo, &hi);
    for (int i = 0; i < j->k && hi > lo; i++)
        j->ks->forward(j->out[i] + (size_t)lo * j->OC[i], j->inp + (size_t)lo * j->IC, j->w[i], hi - lo, j->IC, j->OC[i]);
}

/* Every task computes its share of dinp's rows (each product in turn) and
 * its share of each dw's rows (output channels, read from dout's columns in
 * place: backward_dw takes dout's row stride), so each task has about 1/nt
 * of every product. A dinp row is one chain over OC, a dw row one chain
 * over N in slabs that depend only on N: the bits are the separate calls'.
 * (This split once crashed atome-944k in atome-threads.wasm about one run
 * in three; that was Node's V8 losing the caller's stack pointer across
 * memory.atomic.wait32, which pool.c no longer lets the caller do there:
 * issue #16.) */
static void mm_backward_task(void *ctx, int t, int nt) {
    const mm_job *j = ctx;
    int lo, hi;
    atm_share_int(j->N, t, nt, ROWS_ALIGN, &lo, &hi);
    for (int i = 0; i < j->k && j->dinp && hi > lo; i++)
        j->ks->backward(j->dinp + (size_t)lo * j->IC, NULL, j->dout[i] + (size_t)lo * j->OC[i], NULL, j->w[i],
                        hi - lo, j->IC, j->OC[i]);
    for (int i = 0; i < j->k; i++) {
        if (!j->dw[i]) continue;
        atm_share_int(j->OC[i], t, nt, 1, &lo, &hi);
        if (hi > lo)
            j->ks->backward_dw(j->dw[i] + (size_t)lo * j->IC, j->dout[i] + lo, j->OC[i], j->inp, j->N, j->IC, hi - lo);
    }
}

/* Tasks for an N-row call of `flops` operations: enough work per task, and
 * at least two row chunks of ROWS_ALIGN rows (the dw split alone would be
 * too uneven). */
static int mm_tasks(int N, double flops) {
    if (N < 2 * ROWS_ALIGN) return 1;
    int n = atm_par_tasks(flops);
    const int chunks = (N + ROWS_ALIGN - 1) / ROWS_ALIGN;
    if (n > chunks) n = chunks;
    /* the last chunk too must be longer than the small-N path */
    for (; n > 1; n--) {
        int lo, hi;
        atm_share_int(N, n - 1, n, ROWS_ALIGN, &lo, &hi);
        if (hi - lo > SMALL_N) break;
    }
    return n;
}

/* The flop count and the recording of one product; returns its flops. */
static double mm_count(int backward, int dinp, int dw, int N, int IC, int OC) {
    const double f = mm_flops(N, IC, OC) * (backward ? dinp + dw : 1);
    g_flops += f;
    if (g_recording) record(backward, dinp, dw, N, IC, OC);
    return f;
}

void atm_matmul_forward_many(int k, float *const *out, const float *inp, const float *const *w,
                             int N, int IC, const int *OC) {
    double flops = 0.0;
    for (int i = 0; i < k; i++) flops += mm_count(0, 0, 0, N, IC, OC[i]);
    mm_job j = { current(), k, N, IC, NULL, out, NULL, inp, w, NULL, OC };
    const int nt = mm_tasks(N, flops);
    if (nt > 1) { atm_parallel(mm_forward_task, &j, nt); return; }
    for (int i = 0; i < k; i++) j.ks->forward(out[i], inp, w[i], N, IC, OC[i]);
}

void atm_matmul_backward_many(int k, float *dinp, float *const *dw, const float *const *dout,
                              const float *inp, const float *const *w, int N, int IC, const int *OC) {
    double flops = 0.0;
    for (int i = 0; i < k; i++) flops += mm_count(1, dinp != NULL, dw[i] != NULL, N, IC, OC[i]);
    mm_job j = { current(), k, N, IC, dinp, NULL, dw, inp, w, dout, OC };
    const int nt = mm_tasks(N, flops);
    if (nt > 1) { atm_parallel(mm_backward_task, &j, nt); return; }
    for (int i = 0; i < k; i++) j.ks->backward(dinp, dw[i], dout[i], inp, w[i], N, IC, OC[i]);
}

void atm_matmul_forward(float *out, const float *inp, const float *w, int N, int IC, int OC) {
    atm_matmul_forward_many(1, &out, inp, &w, N, IC, &OC);
}

void atm_matmul_backward(float *dinp, float *dw, const float *dout, const float *inp,
                         const float *w, int N, int IC, int OC) {
    atm_matmul_backward_many(1, dinp, &dw, &dout, inp, &w, N, IC, &OC);
}
