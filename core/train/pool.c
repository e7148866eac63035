/* core/train/pool.c — the trainer's thread pool (pool.h).
 *
 * One algorithm on a "wait while a word equals a value" primitive: Linux
 * futexes natively, memory.atomic.wait32 / notify in a shared-memory wasm
 * build. The caller publishes a call by bumping `g_gen`, whose low 5 bits
 * carry the number of threads the call uses. Each of those threads has a
 * range of the call's tasks (`g_rng`, front and back in one word): it takes
 * tasks from the front of its own range, then, when that is empty, steals
 * from the back of the others'. So a task runs exactly once, on whichever
 * thread claims it, and a worker that is late (descheduled, asleep) leaves
 * its tasks to the threads that are running instead of stalling the call.
 * A thread reads fn, ctx and the task count only after a successful claim,
 * which proves the call is still live. Finished tasks count `g_done` up; the
 * caller returns when all are done (the thread finishing the last one wakes
 * it if it sleeps). Waits spin ATM_POOL_SPIN rounds before they sleep; a
 * wake is a system call only when someone sleeps. */
#if !defined(__wasm__)
#define _GNU_SOURCE 1
#endif
#include "pool.h"
#include <limits.h>
#include <string.h>
#include <stdint.h>
#include <stdlib.h>

#if defined(__wasm__)
#if defined(__wasm_atomics__)
#define POOL_THREADS 1
#else
#define POOL_THREADS 0
#endif
#elif defined(__linux__)
#define POOL_THREADS 1
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#else
#define POOL_THREADS 0
#endif

/* Rounds of checking before a wait yields, then sleeps: about 200 us (a
 * pause is ~11 ns on the test machine), longer than the serial stretches
 * between two parallel kernels of a step (a conv backward is ~35 us), so a
 * training pool never sleeps mid-step (a futex wake costs tens of us) and an
 * idle one stops using the core within a fraction of a millisecond. */
#if defined(__wasm__)
/* wasm has no pause instruction: a round is one atomic load, about 1 ns, so
 * the same ~200 us of spinning takes ten times the rounds. Sleeping sooner
 * costs every following call a wake through the engine's futex emulation
 * (tens of microseconds in V8), which made 2 threads slower than one. */
#define ATM_POOL_SPIN 400000
#else
#define ATM_POOL_SPIN 20000
#endif
#define ATM_POOL_YIELDS 20

typedef struct { void *p; size_t cap; } scratch_t;
static scratch_t g_scratch[ATM_THREADS_MAX];
static int g_threads = 0;                 /* 0: not yet read from the environment */
static unsigned long g_calls = 0;

unsigned long atm_pool_calls(void) { return g_calls; }

int atm_threads(void);
#if POOL_THREADS
/* Each shared word on its own cache line: the workers' count-down must not
 * bounce the line the caller publishes on. */
#define LINE __attribute__((aligned(64)))
static LINE uint32_t g_gen = 0;           /* counter << 5 | tasks of the call */
static LINE int32_t g_done = 0;           /* tasks of the call finished */
static LINE int32_t g_sleepers = 0;       /* workers asleep on g_gen */
static LINE int32_t g_caller_sleeps = 0;  /* the caller asleep on g_done */
/* Thread i's range of the call's tasks: front << 16 | back (front == back:
 * empty). Every range is empty between calls. */
static struct { LINE uint32_t w; } g_rng[ATM_THREADS_MAX];
static int g_ntasks;
#if defined(__wasm__)
/* The wasm caller, once its spin is over, naps in timed waits on a word
 * nobody notifies (see atm_parallel), when its host lets it block. */
#define ATM_POOL_NAP_NS 20000
static LINE int32_t g_nap = 0;
static int g_caller_naps = 0;
#endif
static atm_task_fn g_fn;
static void *g_ctx;
static int g_workers = 0;                 /* workers running (ids 1..g_workers) */

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

#if defined(__wasm__)
static void sleep_while(int32_t *addr, int32_t v) {
    __builtin_wasm_memory_atomic_wait32(addr, v, -1);
}
static void wake_all(int32_t *addr) { __builtin_wasm_memory_atomic_notify(addr, (unsigned)-1); }
#else
static void sleep_while(int32_t *addr, int32_t v) {
    syscall(SYS_futex, addr, FUTEX_WAIT_PRIVATE, v, NULL, NULL, 0);
}
static void wake_all(int32_t *addr) { syscall(SYS_futex, addr, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0); }
#endif

/* Returns once *addr != v; *counter counts the sleepers for the waker. */
static int32_t wait_change(int32_t *addr, int32_t v, int32_t *counter) {
    int32_t now;
    for (int i = 0; i < ATM_POOL_SPIN; i++) {
        now = __atomic_load_n(addr, __ATOMIC_ACQUIRE);
        if (now != v) return now;
        cpu_relax();
#if !defined(__wasm__)
        /* now and then let a thread that waits for this core run (more
         * threads than free cores): a yield with nobody waiting is ~1 us */
        if ((i & 255) == 255) sched_yield();
#endif
    }
#if !defined(__wasm__)
    /* Then give the core away a few times: with more threads than free
     * cores the thread that holds the work runs instead of a spinner. */
    for (int i = 0; i < ATM_POOL_YIELDS; i++) {
        sched_yield();
        now = __atomic_load_n(addr, __ATOMIC_ACQUIRE);
        if (now != v) return now;
    }
#endif
    for (;;) {
        __atomic_add_fetch(counter, 1, __ATOMIC_SEQ_CST);
        now = __atomic_load_n(addr, __ATOMIC_SEQ_CST);
        if (now == v) sleep_while(addr, v);
        __atomic_sub_fetch(counter, 1, __ATOMIC_SEQ_CST);
        now = __atomic_load_n(addr, __ATOMIC_ACQUIRE);
        if (now != v) return now;
    }
}

/* A worker starts from the generation current when the caller registered it
 * (no call is in flight then), so a call published before the worker first
 * runs is not missed. The caller writes it, never the worker on entry: a
 * wasm worker enters atome_thread_main some time after it said "ready", and
 * reading g_gen then could take an in-flight call for one already seen. */
static uint32_t g_start_gen[ATM_THREADS_MAX];

/* A task of the live call for thread `me` of T, or -1: the front of its own
 * range first, then the back of the others'. */
static int claim(int me, int T) {
    for (int k = 0; k < T; k++) {
        uint32_t *w = &g_rng[(me + k) % T].w;
        uint32_t v = __atomic_load_n(w, __ATOMIC_ACQUIRE);
        for (;;) {
            const uint32_t f = v >> 16, b = v & 0xffffu;
            if (f >= b) break;
            const uint32_t nv = k == 0 ? (f + 1u) << 16 | b : f << 16 | (b - 1u);
            if (__atomic_compare_exchange_n(w, &v, nv, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
                return (int)(k == 0 ? f : b - 1u);
        }
    }
    return -1;
}

/* Runs tasks for thread `me` of T until none is left to claim; returns
 * whether it finished the call's last task. */
static int run_tasks(int me, int T) {
    int last = 0, task;
    while ((task = claim(me, T)) >= 0) {
        const int n = g_ntasks;
        g_fn(g_ctx, task, n);
        if (__atomic_add_fetch(&g_done, 1, __ATOMIC_SEQ_CST) == n) last = 1;
    }
    return last;
}

static void worker_loop(int id) {
    uint32_t seen = g_start_gen[id];
    for (;;) {
        uint32_t g = (uint32_t)wait_change((int32_t *)&g_gen, (int32_t)seen, &g_sleepers);
        seen = g;
        const int T = (int)(g & 31u);
        if (id >= T) continue;
        if (run_tasks(id, T) && __atomic_load_n(&g_caller_sleeps, __ATOMIC_SEQ_CST)) wake_all(&g_done);
    }
}

#if !defined(__wasm__)
static void *worker_main(void *arg) {
    worker_loop((int)(intptr_t)arg);
    return NULL;
}

/* Native: workers are started on first need and live for the program. */
static int ensure_workers(int n) {
    while (g_workers < n - 1) {
        pthread_t t;
        pthread_attr_t a;
        pthread_attr_init(&a);
        pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
        g_start_gen[g_workers + 1] = __atomic_load_n(&g_gen, __ATOMIC_ACQUIRE);
        int rc = pthread_create(&t, &a, worker_main, (void *)(intptr_t)(g_workers + 1));
        pthread_attr_destroy(&a);
        if (rc != 0) break;
        g_workers++;
    }
    return n < g_workers + 1 ? n : g_workers + 1;
}
#else
void atm_pool_worker(int id) {
    if (id < 1 || id >= ATM_THREADS_MAX) return;
    worker_loop(id);
}
/* Called by the main instance once the worker instances exist, before any
 * parallel call: they start from the generation current now. */
void atm_pool_workers_started(int n) {
    const int w = n < ATM_THREADS_MAX - 1 ? n : ATM_THREADS_MAX - 1;
    const uint32_t g = __atomic_load_n(&g_gen, __ATOMIC_ACQUIRE);
    for (int i = 1; i <= w; i++) __atomic_store_n(&g_start_gen[i], g, __ATOMIC_RELEASE);
    g_workers = w;
}
static int ensure_workers(int n) { return n < g_workers + 1 ? n : g_workers + 1; }
void atm_pool_caller_naps(int on) { g_caller_naps = on != 0; }
#endif

#if !defined(__wasm__)
static int g_timing = 0;
static double g_call_s = 0.0, g_wait_s = 0.0;
static double mono_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
void atm_pool_timing(int on) { g_timing = on != 0; }
void atm_pool_timing_read(double *call_s, double *wait_s) {
    *call_s = g_call_s;
    *wait_s = g_wait_s;
}
#endif

void atm_parallel(atm_task_fn fn, void *ctx, int n) {
    const int t = atm_threads();
    if (n > ATM_THREADS_MAX) n = ATM_THREADS_MAX;
    if (n <= 1 || t <= 1) {
        for (int i = 0; i < (n < 1 ? 1 : n); i++) fn(ctx, i, n < 1 ? 1 : n);
        return;
    }
    g_calls++;
#if !defined(__wasm__)
    const double t0 = g_timing ? mono_s() : 0.0;
#endif
    g_fn = fn;
    g_ctx = ctx;
    g_ntasks = n;
    __atomic_store_n(&g_done, 0, __ATOMIC_RELAXED);
    const int T = n < t ? n : t;              /* threads of the call; each starts on its own range */
    for (int i = 0; i < T; i++) {
        size_t lo, hi;
        atm_share((size_t)n, i, T, 1, &lo, &hi);
        __atomic_store_n(&g_rng[i].w, (uint32_t)lo << 16 | (uint32_t)hi, __ATOMIC_RELEASE);
    }
    uint32_t g = ((__atomic_load_n(&g_gen, __ATOMIC_RELAXED) >> 5) + 1u) << 5 | (uint32_t)T;
    __atomic_store_n(&g_gen, g, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&g_sleepers, __ATOMIC_SEQ_CST)) wake_all((int32_t *)&g_gen);
    run_tasks(0, T);
    int32_t left = n - __atomic_load_n(&g_done, __ATOMIC_ACQUIRE);
#if defined(__wasm__)
    /* In wasm the caller never sleeps on g_done: with Node 20's V8, a
     * memory.atomic.wait32 by the caller, woken by the worker's notify or
     * timed out, left the caller's __stack_pointer at 16 about one run in
     * three (the next call then trapped out of bounds). So it spins, then,
     * where the host says it may (atm_pool_caller_naps: browsers' workers,
     * where 40 of 40 stress runs were clean), naps in short timed waits on
     * a word nobody notifies, so a worker that waits for a core gets it. */
    for (int i = 0; left != 0 && i < ATM_POOL_SPIN; i++) left = n - __atomic_load_n(&g_done, __ATOMIC_ACQUIRE);
    while (left != 0) {
        if (g_caller_naps) __builtin_wasm_memory_atomic_wait32(&g_nap, 0, ATM_POOL_NAP_NS);
        left = n - __atomic_load_n(&g_done, __ATOMIC_ACQUIRE);
    }
#else
    const double t1 = g_timing ? mono_s() : 0.0;
    int32_t done = n - left;
    while (done != n) done = wait_change(&g_done, done, &g_caller_sleeps);
    if (g_timing) {
        const double t2 = mono_s();
        g_call_s += t2 - t0;
        g_wait_s += t2 - t1;
    }
#endif
}
#else
static int ensure_workers(int n) { (void)n; return 1; }
void atm_parallel(atm_task_fn fn, void *ctx, int n) { (void)n; fn(ctx, 0, 1); }
#if defined(__wasm__)
void atm_pool_worker(int id) { (void)id; for (;;) {} }
void atm_pool_workers_started(int n) { (void)n; }
void atm_pool_caller_naps(int on) { (void)on; }
#endif
#endif

#if !POOL_THREADS || defined(__wasm__)
void atm_pool_timing(int on) { (void)on; }
void atm_pool_timing_read(double *call_s, double *wait_s) { *call_s = 0.0; *wait_s = 0.0; }
#endif

static int cores(void) {
#if POOL_THREADS && !defined(__wasm__)
    long c = sysconf(_SC_NPROCESSORS_ONLN);
    return c < 1 ? 1 : c > ATM_THREADS_MAX ? ATM_THREADS_MAX : (int)c;
#else
    return POOL_THREADS ? ATM_THREADS_MAX : 1;
#endif
}

int atm_threads_default(void) {
    int c = cores();
    return c < ATM_THREADS_DEFAULT_CAP ? c : ATM_THREADS_DEFAULT_CAP;
}

int atm_threads_set(int n) {
    if (n < 1) n = 1;
    if (n > ATM_THREADS_MAX) n = ATM_THREADS_MAX;
    g_threads = n > 1 ? ensure_workers(n) : 1;
    return g_threads;
}

static void init_from_env(void) {
    const char *e = getenv("ATOME_THREADS");
    int n = 1;
    if (e && *e) {
        char *end;
        long v = strtol(e, &end, 10);
        if (*end == '\0' && v >= 1) n = v > ATM_THREADS_MAX ? ATM_THREADS_MAX : (int)v;
    }
    atm_threads_set(n);
}

int atm_threads(void) {
    if (g_threads == 0) init_from_env();
    return g_threads;
}

static double g_min_flops = ATM_PAR_MIN_FLOPS;

void atm_par_min_flops(double flops) { g_min_flops = flops < 0 ? ATM_PAR_MIN_FLOPS : flops; }

int atm_par_tasks(double flops) {
    const int t = atm_threads();
    if (t <= 1) return 1;
    const int cap = t * ATM_PAR_SPLIT < ATM_THREADS_MAX ? t * ATM_PAR_SPLIT : ATM_THREADS_MAX;
    if (g_min_flops <= 0) return cap;
    double q = flops / g_min_flops;
    int n = q >= cap ? cap : (int)q;
    return n < 1 ? 1 : n;
}

void *atm_task_scratch(int task, size_t bytes) {
    if (task < 0 || task >= ATM_THREADS_MAX) return NULL;
    scratch_t *s = &g_scratch[task];
    if (s->cap < bytes) {
        void *p = realloc(s->p, bytes);
        if (!p) return NULL;
        s->p = p;
        s->cap = bytes;
    }
    return s->p;
}

/* ---- atm_zero ---- */
void atm_zero_share(float *x, size_t n, int t, int nt) {
    size_t lo, hi;
    atm_share(n, t, nt, 16, &lo, &hi);
    if (hi > lo) memset(x + lo, 0, (hi - lo) * sizeof(float));
}

/* Several buffers in one call: each task zeroes its share of each, so a
 * buffer's rows are zeroed by the thread that owns them in a row split. */
typedef struct { float *const *x; const size_t *n; int k; } zero_job;
static void zero_task(void *ctx, int t, int nt) {
    const zero_job *j = ctx;
    for (int i = 0; i < j->k; i++) atm_zero_share(j->x[i], j->n[i], t, nt);
}

/* A float's memset weighs 4 flops here: a dispatch (1-2 us) is then paid
 * by halves of 15,000 floats or more (about 3 us of stores each). */
void atm_zero_many(float *const *x, const size_t *n, int k) {
    double total = 0.0;
    for (int i = 0; i < k; i++) total += (double)n[i];
    zero_job j = { x, n, k };
    atm_parallel(zero_task, &j, atm_par_tasks(4.0 * total));
}

void atm_zero(float *x, size_t n) { atm_zero_many(&x, &n, 1); }
