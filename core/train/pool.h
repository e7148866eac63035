/* core/train/pool.h — the trainer's thread pool.
 *
 * Contract. Work is split only over outputs: a parallel kernel gives each
 * task a disjoint range of output rows, output elements of a weight gradient
 * or channels, on the kernels' tile boundaries, and every output element is
 * computed by one task with the operations, in the order, of the one-thread
 * call. Reductions to a scalar (the loss, the gradient norm, eval sums) stay
 * serial. So the bits of a training run do not depend on the thread count
 * (tests/test_pool.c, tests/node/wasm-threads.test.mjs).
 *
 * atm_parallel(fn, ctx, n) runs fn(ctx, i, n) for i = 0..n-1 (n <=
 * ATM_THREADS_MAX), each exactly once, on the calling thread and the pool's
 * workers, and returns when all are done. Each thread starts on its own
 * contiguous range of the tasks (thread i of T: the i-th share, so the rows
 * a task owns stay on one core from call to call), then takes what is left
 * of the others' ranges, from their backs: a slow or descheduled thread's
 * tasks are done by the others. Which thread runs a task never changes bits. Waiting (workers for work, the caller for the last task) spins
 * for a few microseconds, then sleeps, so more threads than free cores costs
 * little. One caller at a time (the training thread); not reentrant: a task
 * never calls atm_parallel.
 *
 * Natively the workers are pthreads. In wasm (shared memory builds) they are
 * Web Workers running the same module on the same memory: each calls
 * atm_pool_worker(id), which never returns, and the waits are
 * memory.atomic.wait32 / notify. A build without threads runs everything on
 * the caller (atm_threads_set returns 1). */
#ifndef ATOME_TRAIN_POOL_H
#define ATOME_TRAIN_POOL_H
#include <stddef.h>

#define ATM_THREADS_MAX 16

typedef void (*atm_task_fn)(void *ctx, int task, int ntasks);

/* Threads in use (1 = today's serial path), and the default: the number of
 * cores, capped at ATM_THREADS_DEFAULT_CAP (where more stopped helping,
 * docs/kernels.md). ATOME_THREADS=N in the environment sets the count a
 * program starts with (the research harness pins 1). */
#define ATM_THREADS_DEFAULT_CAP 4
int atm_threads(void);
int atm_threads_default(void);
/* Sets the thread count, clamped to 1..ATM_THREADS_MAX (and to the workers
 * a wasm host has started); returns the count in effect. */
int atm_threads_set(int n);

/* Runs the n tasks (n <= 1, or one thread: all inline, in order). */
void atm_parallel(atm_task_fn fn, void *ctx, int n);

/* Calls that ran on more than one thread since the program started (tests
 * check that the threaded paths were taken). */
unsigned long atm_pool_calls(void);

/* Where a threaded step's time goes (native only; elsewhere off and 0):
 * while on, every call that runs on more than one thread adds its wall time
 * to *call_s and the caller's wait for the other threads, after its own
 * last task, to *wait_s (the load imbalance plus the hand-back). A step's
 * wall time less call_s is what ran on the caller alone. Three clock reads a
 * call; off by default. tools/bench/bench_train --threads reports both. */
void atm_pool_timing(int on);
void atm_pool_timing_read(double *call_s, double *wait_s);

/* A scratch buffer owned by task `task` of the current parallel call, at
 * least `bytes` long, kept between calls (grown with realloc; NULL if out of
 * memory). Only that task uses it. */
void *atm_task_scratch(int task, size_t bytes);

/* How many tasks a piece of work of `flops` operations deserves: 1 below
 * ATM_PAR_MIN_FLOPS per task (dispatching costs more than it saves), at most
 * ATM_PAR_SPLIT per thread (so a thread that finishes early can take part
 * of a late one's work) and ATM_THREADS_MAX; 1 on one thread. Never changes
 * bits, only who computes them. */
#define ATM_PAR_MIN_FLOPS 60000.0
#define ATM_PAR_SPLIT 1
int atm_par_tasks(double flops);
/* Tests: the work per task below which a call stays on one thread (0 splits
 * every call that has more than one piece; a negative value restores
 * ATM_PAR_MIN_FLOPS). */
void atm_par_min_flops(double flops);

/* Task t's share [lo, hi) of n items, of nt tasks, in chunks of `align`
 * items (the last task takes what is left; tasks past the end get an empty
 * range). The one rule every parallel kernel splits its outputs by. */
static inline void atm_share(size_t n, int t, int nt, size_t align, size_t *lo, size_t *hi) {
    size_t per = (n + (size_t)nt - 1) / (size_t)nt;
    per = (per + align - 1) / align * align;
    *lo = (size_t)t * per < n ? (size_t)t * per : n;
    *hi = *lo + per < n ? *lo + per : n;
}
/* x[0 .. n) = 0, in parts over the pool when it is big enough to pay
 * (a memset: no bits to keep). */
void atm_zero(float *x, size_t n);
/* Task t's share of that (for a task that zeroes beside other work). */
void atm_zero_share(float *x, size_t n, int t, int nt);
/* x[i][0 .. n[i]) = 0 for i < k, in one parallel call (one dispatch, not k). */
void atm_zero_many(float *const *x, const size_t *n, int k);

/* The same for int counts (rows, channels). */
static inline void atm_share_int(int n, int t, int nt, int align, int *lo, int *hi) {
    size_t l, h;
    atm_share((size_t)n, t, nt, (size_t)align, &l, &h);
    *lo = (int)l;
    *hi = (int)h;
}

#if defined(__wasm__)
/* wasm: a worker instance's entry (never returns). Worker ids are 1..15; the
 * host starts them, then calls atm_pool_workers_started(n). */
void atm_pool_worker(int id);
void atm_pool_workers_started(int n);
/* Whether the calling thread may block in memory.atomic.wait32 (a Web
 * Worker or Node may; a browser's main thread may not). With it, the caller,
 * waiting for the workers' last task, naps in short timed waits once its
 * spin is over; without it, it spins. */
void atm_pool_caller_naps(int on);
#endif

#endif
