/* core/train/quant.c — ternary quantiser (absmean, BitNet b1.58 style) and
 * parameter initialisation. See model.h for the contract. */
#include "model.h"
#include "pool.h"
#include <math.h>
#include <string.h>

float atm_ternary_alpha(const float *w, size_t n) {
    double s = 0.0;
    for (size_t i = 0; i < n; i++) s += fabs((double)w[i]);
    float a = n ? (float)(s / (double)n) : 0.0f;
    return a > 1e-5f ? a : 1e-5f;
}

int atm_ternary_trit(float w, float alpha) {
    /* Division, not multiplication by 1/alpha: the imported reference model
     * must re-quantise to exactly its stored trits (torch divides). This equals
     * clamp(round_half_even(r), -1, 1): |r| == 0.5 rounds to 0, anything above
     * rounds to a magnitude >= 1 and is clamped; NaN gives 0. */
    float r = w / alpha;
    return r > 0.5f ? 1 : (r < -0.5f ? -1 : 0);
}

float atm_ternary_quantize(const float *w, size_t n, float *wq) {
    float a = atm_ternary_alpha(w, n);
    for (size_t i = 0; i < n; i++) wq[i] = (float)atm_ternary_trit(w[i], a) * a;
    return a;
}

/* The effective weights over a task's range of the flat vector: the copy
 * and, inside each quantised tensor, the trits times the tensor's scale
 * (element by element: any split gives the same bits). The scales are
 * per-tensor sums, taken serially first. */
typedef struct {
    const atm_layout *L;
    const float *w;
    float *weff;
    const float *alpha;      /* per tensor; 0 = not quantised */
} quant_job;

static void quant_task(void *ctx, int t, int nt) {
    const quant_job *j = ctx;
    const size_t n = j->L->n_params;
    size_t lo, hi;
    atm_share(n, t, nt, 16, &lo, &hi);
    if (hi <= lo) return;
    if (j->weff != j->w) memcpy(j->weff + lo, j->w + lo, sizeof(float) * (hi - lo));
    for (int i = 0; j->alpha && i < j->L->n_tensors; i++) {
        const atm_tensor *tt = &j->L->t[i];
        const float a = j->alpha[i];
        if (a == 0.0f) continue;
        size_t b = tt->off, e = tt->off + (size_t)tt->rows * (size_t)tt->cols;
        if (b < lo) b = lo;
        if (e > hi) e = hi;
        for (size_t k = b; k < e; k++) j->weff[k] = (float)atm_ternary_trit(j->w[k], a) * a;
    }
}

/* The per-tensor scales, each tensor's sum by one task, in its serial order
 * (atm_ternary_alpha): task t takes the quantised tensors whose middle falls
 * in its t-th share of the quantised parameters. With `zero` set, each task
 * also clears its share of zero[0 .. n_params) (the trainer's gradient),
 * which costs no dispatch of its own. */
typedef struct {
    const atm_layout *L;
    const float *w;
    float *alpha;            /* NULL: fp32, no scales */
    float *zero;
    size_t quant_params;
} alpha_job;

static void alpha_task(void *ctx, int t, int nt) {
    const alpha_job *j = ctx;
    size_t at = 0;
    for (int i = 0; j->alpha && i < j->L->n_tensors; i++) {
        const atm_tensor *tt = &j->L->t[i];
        if (tt->kind != ATM_TK_QUANT) continue;
        const size_t n = (size_t)tt->rows * (size_t)tt->cols;
        const size_t mid = at + n / 2;
        at += n;
        int owner = (int)((double)mid * (double)nt / (double)j->quant_params);
        if (owner >= nt) owner = nt - 1;
        if (owner == t) j->alpha[i] = atm_ternary_alpha(j->w + tt->off, n);
    }
    if (j->zero) atm_zero_share(j->zero, j->L->n_params, t, nt);
}

void atm_quantize_layout_zero(const atm_layout *L, int quant, const float *w, float *weff, float *zero) {
    float alpha[ATM_MAX_TENSORS];
    const int tern = quant == ATM_QUANT_TERNARY;
    size_t qp = 0;
    for (int i = 0; i < L->n_tensors; i++) {
        alpha[i] = 0.0f;
        if (L->t[i].kind == ATM_TK_QUANT) qp += (size_t)L->t[i].rows * (size_t)L->t[i].cols;
    }
    if ((tern && qp > 0) || zero) {
        alpha_job aj = { L, w, tern && qp > 0 ? alpha : NULL, zero, qp };
        /* a scale's sum is about 4 flops' time per element (a chain of adds) */
        atm_parallel(alpha_task, &aj, atm_par_tasks(4.0 * (double)(tern ? qp : 0) + 4.0 * (zero ? (double)L->n_params : 0.0)));
    }
    quant_job j = { L, w, weff, tern ? alpha : NULL };
    atm_parallel(quant_task, &j, atm_par_tasks(2.0 * (double)L->n_params));
}

void atm_quantize_layout(const atm_layout *L, int quant, const float *w, float *weff) {
    atm_quantize_layout_zero(L, quant, w, weff, NULL);
}

static float uniform01(atm_rng *r) {            /* (0,1]: never 0, safe for log */
    return ((float)(atm_rng_u32(r) >> 8) + 1.0f) * (1.0f / 16777216.0f);
}

void atm_init_params(const atm_layout *L, float *w, atm_rng *rng) {
    for (int i = 0; i < L->n_tensors; i++) {
        const atm_tensor *t = &L->t[i];
        size_t n = (size_t)t->rows * (size_t)t->cols;
        float *p = w + t->off;
        switch (t->init) {
        case ATM_INIT_CONST:
            for (size_t j = 0; j < n; j++) p[j] = t->init_a;
            break;
        case ATM_INIT_UNIFORM:
            for (size_t j = 0; j < n; j++) p[j] = (2.0f * uniform01(rng) - 1.0f) * t->init_a;
            break;
        default: /* Box-Muller, two normals per pair of uniforms */
            for (size_t j = 0; j < n; j += 2) {
                float u1 = uniform01(rng), u2 = uniform01(rng);
                float rad = sqrtf(-2.0f * logf(u1));
                float th = 6.28318530717958647692f * u2;
                p[j] = rad * cosf(th) * t->init_a;
                if (j + 1 < n) p[j + 1] = rad * sinf(th) * t->init_a;
            }
        }
    }
}
