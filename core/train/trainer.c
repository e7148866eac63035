/* core/train/trainer.c — AdamW training step, learning-rate schedules and the
 * fp32-then-ternary two-stage schedule. See trainer.h for the contract; all
 * memory is allocated in atm_trainer_new, a step allocates nothing. */
#include "trainer.h"
#include "options.h"
#include "pool.h"
#include "../host/fail.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


/* The defaults are the option table's (options.c). */
void atm_train_opts_default(atm_train_opts *o) {
    memset(o, 0, sizeof *o);
    for (int i = 0; i < ATM_TO_COUNT; i++) {
        const atm_topt *r = &atm_topts[i];
        if (r->store == ATM_TO_RUN) continue;   /* run-level rows: NaN defaults, nothing stored here */
        atm_topt_val v = { isfinite(r->def) ? (int64_t)r->def : 0, r->def };
        atm_topt_put(o, r, &v);
    }
}

static int finite_f(float x) { return x == x && x - x == 0.0f; }

/* Limits: steps up to 2^40 keeps step counts exact in double; batch*T up to
 * 2^24 keeps every activation index far from int overflow in the families. */
int atm_train_opts_validate(const atm_train_opts *o, char *err, size_t errlen) {
    if (o->quant != ATM_QUANT_FP32 && o->quant != ATM_QUANT_TERNARY) ATM_FAIL("unknown quantiser %d", (int)o->quant);
    if (!finite_f(o->lr) || !(o->lr > 0.0f)) ATM_FAIL("lr must be a positive number");
    if (!finite_f(o->lr2) || !(o->lr2 > 0.0f)) ATM_FAIL("lr2 must be a positive number");
    if (!(o->beta1 >= 0.0f && o->beta1 < 1.0f)) ATM_FAIL("beta1 must be in [0, 1)");
    if (!(o->beta2 >= 0.0f && o->beta2 < 1.0f)) ATM_FAIL("beta2 must be in [0, 1)");
    if (!finite_f(o->eps) || !(o->eps > 0.0f)) ATM_FAIL("eps must be a positive number");
    if (!finite_f(o->wd) || !(o->wd >= 0.0f)) ATM_FAIL("wd must be >= 0");
    if (!finite_f(o->clip) || !(o->clip >= 0.0f)) ATM_FAIL("clip must be >= 0 (0 = off)");
    if (!finite_f(o->lr_min) || !(o->lr_min >= 0.0f)) ATM_FAIL("lr-min must be >= 0");
    if (o->steps < 1 || o->steps > ((int64_t)1 << 40)) ATM_FAIL("steps must be 1..2^40");
    if (o->warmup < 0 || o->warmup > o->steps) ATM_FAIL("warmup must be 0..steps");
    if (o->cosine != 0 && o->cosine != 1) ATM_FAIL("cosine must be 0 or 1");
    if (!(o->fp_fraction >= 0.0f && o->fp_fraction <= 1.0f)) ATM_FAIL("fp-fraction must be in [0, 1]");
    if (o->fp_fraction > 0.0f && o->quant != ATM_QUANT_TERNARY)
        ATM_FAIL("fp-fraction (two-stage fp32 -> ternary) needs quant ternary");
    if (o->batch < 1 || o->batch > 65536) ATM_FAIL("batch must be 1..65536");
    if (o->seq < 2 || o->seq > 65537) ATM_FAIL("seq must be 2..65537");
    if ((int64_t)o->batch * (int64_t)(o->seq - 1) > ((int64_t)1 << 24)) ATM_FAIL("batch * (seq-1) must be at most 2^24");
    return 0;
}

int64_t atm_fp_steps(const atm_train_opts *o) {
    if (!(o->fp_fraction > 0.0f)) return 0;
    double f = floor((double)o->fp_fraction * (double)o->steps + 0.5);
    if (f < 0.0) return 0;
    if (f > (double)o->steps) return o->steps;
    return (int64_t)f;
}

float atm_lr_at(const atm_train_opts *o, int64_t s, int stage) {
    if (stage == 1 && atm_fp_steps(o) > 0) return o->lr2;
    if (o->warmup > 0 && s < o->warmup)
        return (float)((double)o->lr * (double)(s + 1) / (double)o->warmup);
    if (o->cosine) {
        double span = (double)(o->steps - o->warmup);
        double p = span > 0.0 ? (double)(s - o->warmup) / span : 1.0;
        if (p < 0.0) p = 0.0;
        if (p > 1.0) p = 1.0;
        return (float)((double)o->lr_min + 0.5 * ((double)o->lr - (double)o->lr_min) * (1.0 + cos(3.14159265358979323846 * p)));
    }
    return o->lr;
}

/* The distillation teacher: its layout, quantised weights, activations for
 * the student's B x T, and the soft targets of the current step. */
struct atm_teacher {
    atm_layout        L;
    const atm_family *fam;
    float            *weff;   /* [n_params] */
    void             *acts;
    float            *q;      /* [B*T][V] softmax of the teacher's logits */
    float             weight;
};

static void teacher_free(struct atm_teacher *t) {
    if (!t) return;
    if (t->acts && t->fam && t->fam->acts_free) t->fam->acts_free(t->acts);
    free(t->weff);
    free(t->q);
    free(t);
}

int atm_trainer_set_teacher(atm_trainer *tr, const atm_config *tc, const float *tw, int tquant,
                            float weight, char *err, size_t errlen) {
    if (!tr || !tc || !tw) ATM_FAIL("invalid argument");
    if (!(weight > 0.0f && weight <= 1.0f)) ATM_FAIL("the distillation weight must be in (0, 1] (got %g)", (double)weight);
    if (!tr->fam->set_soft_targets) ATM_FAIL("the %s family does not train on soft targets", tr->fam->name);
    if (tc->vocab != tr->L.cfg.vocab) ATM_FAIL("the teacher's vocabulary (%d) differs from the student's (%d)", (int)tc->vocab, (int)tr->L.cfg.vocab);
    if (tc->family == ATM_FAMILY_VANILLA && tr->T > tc->max_seq)
        ATM_FAIL("the teacher has %d learned positions, the student trains on %d", (int)tc->max_seq, tr->T);
    char why[256];
    if (atm_config_validate(tc, why, sizeof why)) ATM_FAIL("teacher: %s", why);
    struct atm_teacher *t = (struct atm_teacher *)calloc(1, sizeof *t);
    if (!t) ATM_FAIL("out of memory for the teacher");
    if (atm_layout_build(tc, &t->L) != 0 || !(t->fam = atm_family_get(tc->family)) || !t->fam->forward || !t->fam->logits) {
        teacher_free(t);
        ATM_FAIL("teacher: the %s family cannot run here", atm_family_name(tc->family));
    }
    const size_t bt = (size_t)tr->B * (size_t)tr->T;
    t->weff = (float *)malloc(t->L.n_params * sizeof(float));
    t->q = (float *)malloc(bt * (size_t)tc->vocab * sizeof(float));
    t->acts = t->fam->acts_new(tc, tr->B, tr->T);
    if (!t->weff || !t->q || !t->acts) { teacher_free(t); ATM_FAIL("out of memory for the teacher"); }
    atm_quantize_layout(&t->L, tquant, tw, t->weff);
    t->weight = weight;
    teacher_free(tr->teacher);
    tr->teacher = t;
    return 0;
}

/* q = softmax of the teacher's logits on in[B*T] (rows max-subtracted,
 * libm expf, the sum in double). */
static void teacher_targets(atm_trainer *tr, const uint8_t *in) {
    struct atm_teacher *t = tr->teacher;
    t->fam->forward(&t->L, t->weff, t->acts, in, NULL, tr->B, tr->T);
    const float *lg = t->fam->logits(t->acts);
    const int V = t->L.cfg.vocab;
    const size_t N = (size_t)tr->B * (size_t)tr->T;
    for (size_t n = 0; n < N; n++) {
        const float *z = lg + n * V;
        float *q = t->q + n * V;
        float mx = z[0];
        for (int i = 1; i < V; i++) if (z[i] > mx) mx = z[i];
        double s = 0.0;
        for (int i = 0; i < V; i++) { q[i] = expf(z[i] - mx); s += q[i]; }
        const float inv = (float)(1.0 / s);
        for (int i = 0; i < V; i++) q[i] *= inv;
    }
}

void atm_trainer_free(atm_trainer *tr) {
    if (!tr) return;
    teacher_free(tr->teacher);
    if (tr->acts && tr->fam && tr->fam->acts_free) tr->fam->acts_free(tr->acts);
    free(tr->w); free(tr->weff); free(tr->dw); free(tr->m); free(tr->v);
    free(tr->in); free(tr->tgt);
    free(tr);
}

atm_trainer *atm_trainer_new(const atm_config *c, const atm_train_opts *o) {
    if (atm_config_validate(c, NULL, 0) || atm_train_opts_validate(o, NULL, 0)) return NULL;
    atm_trainer *tr = (atm_trainer *)calloc(1, sizeof *tr);
    if (!tr) return NULL;
    if (atm_layout_build(c, &tr->L) != 0) { free(tr); return NULL; }
    tr->fam = atm_family_get(c->family);
    if (!tr->fam || !tr->fam->acts_new || !tr->fam->forward || !tr->fam->backward) { free(tr); return NULL; }
    tr->opt = *o;
    tr->B = o->batch;
    tr->T = o->seq - 1;
    size_t n = tr->L.n_params, bt = (size_t)tr->B * (size_t)tr->T;
    tr->w = (float *)calloc(n, sizeof(float));
    tr->weff = (float *)calloc(n, sizeof(float));
    tr->dw = (float *)calloc(n, sizeof(float));
    tr->m = (float *)calloc(n, sizeof(float));
    tr->v = (float *)calloc(n, sizeof(float));
    tr->in = (uint8_t *)calloc(bt, 1);
    tr->tgt = (uint8_t *)calloc(bt, 1);
    tr->acts = tr->fam->acts_new(c, tr->B, tr->T);
    if (!tr->w || !tr->weff || !tr->dw || !tr->m || !tr->v || !tr->in || !tr->tgt || !tr->acts) {
        atm_trainer_free(tr);
        return NULL;
    }
    atm_rng_seed(&tr->rng, o->seed);
    atm_init_params(&tr->L, tr->w, &tr->rng);
    tr->step = 0;
    tr->adam_t = 0;
    tr->stage = atm_fp_steps(o) > 0 ? 0 : 1;
    return tr;
}

int atm_trainer_quant(const atm_trainer *tr) {
    if (tr->stage == 0 && tr->step < atm_fp_steps(&tr->opt)) return ATM_QUANT_FP32;
    return tr->opt.quant;
}

/* The squared gradient norm, summed serially in parameter order. */
static double grad_sumsq(const float *g, size_t n) {
    double ss = 0.0;
    for (size_t i = 0; i < n; i++) ss += (double)g[i] * (double)g[i];
    return ss;
}

/* AdamW on parameters [lo, hi) of a task's share (pool.h). With ss set
 * (no clipping, so AdamW does not need the norm) and more than one task,
 * task 0 only sums the norm into *ss, in the serial order, and the other
 * tasks share AdamW in chunks: the pool's threads take them as they come,
 * so the thread that sums does fewer chunks, by as many as its sum took
 * time on this machine (no fixed guess of the ratio). */
typedef struct {
    float *w, *m, *v;
    float *g;
    size_t n;
    float b1, b2, eps, decay, step_size, bc2_sqrt;
    float gscale;            /* the clip's scale (1: none); the scaled gradient is stored back */
    double *ss;
} adam_job;

static void adam_share(const adam_job *j, int t, int nt, size_t *lo, size_t *hi) {
    if (!j->ss || nt < 2) {
        atm_share(j->n, t, nt, 16, lo, hi);
    } else if (t == 0) {
        *lo = *hi = 0;
    } else {
        atm_share(j->n, t - 1, nt - 1, 16, lo, hi);
    }
}

static void adam_task(void *ctx, int t, int nt) {
    const adam_job *j = ctx;
    size_t lo, hi;
    if (t == 0 && j->ss) *j->ss = grad_sumsq(j->g, j->n);
    adam_share(j, t, nt, &lo, &hi);
    const float b1 = j->b1, b2 = j->b2, eps = j->eps, ob1 = 1.0f - b1, ob2 = 1.0f - b2;
    float *w = j->w, *m = j->m, *v = j->v;
    float *g = j->g;
    const float gs = j->gscale;
    for (size_t i = lo; i < hi; i++) {
        float gi = g[i];
        if (gs != 1.0f) {     /* the clip: g[i] *= scale, as the serial loop did */
            gi *= gs;
            g[i] = gi;
        }
        float mi = b1 * m[i] + ob1 * gi;
        float vi = b2 * v[i] + ob2 * gi * gi;
        m[i] = mi;
        v[i] = vi;
        float denom = sqrtf(vi) / j->bc2_sqrt + eps;
        w[i] = w[i] * j->decay - j->step_size * (mi / denom);
    }
}

double atm_trainer_step(atm_trainer *tr, const uint8_t *in, const uint8_t *tgt) {
    const atm_train_opts *o = &tr->opt;
    size_t n = tr->L.n_params;
    if (tr->stage == 0 && tr->step >= atm_fp_steps(o)) {
        tr->stage = 1;
        memset(tr->m, 0, n * sizeof(float));
        memset(tr->v, 0, n * sizeof(float));
        tr->adam_t = 0;
    }
    int quant = tr->stage == 0 ? ATM_QUANT_FP32 : o->quant;
    atm_quantize_layout_zero(&tr->L, quant, tr->w, tr->weff, tr->dw);   /* and dw = 0, in the same calls */
    if (tr->teacher) {
        teacher_targets(tr, in);
        tr->fam->set_soft_targets(tr->acts, tr->teacher->q, tr->teacher->weight);
    }
    double loss = tr->fam->forward(&tr->L, tr->weff, tr->acts, in, tgt, tr->B, tr->T);
    tr->fam->backward(&tr->L, tr->weff, tr->acts, tr->dw);

    float *g = tr->dw;
    double ss = 0.0;
    float gscale = 1.0f;                          /* applied inside AdamW's parallel pass */
    const int clip = o->clip > 0.0f;
    if (clip) {
        ss = grad_sumsq(g, n);
        double gnorm = sqrt(ss);
        if (gnorm > (double)o->clip) gscale = (float)((double)o->clip / (gnorm + 1e-6));
    }

    float lr = atm_lr_at(o, tr->step, tr->stage);
    tr->adam_t++;
    /* Scalars in double then rounded once, as PyTorch computes them in Python
     * floats; the per-element update is float32 like torch's. */
    double bc1 = 1.0 - pow((double)o->beta1, (double)tr->adam_t);
    double bc2 = 1.0 - pow((double)o->beta2, (double)tr->adam_t);
    adam_job j = { tr->w, tr->m, tr->v, g, n, o->beta1, o->beta2, o->eps,
                   (float)(1.0 - (double)lr * (double)o->wd), (float)((double)lr / bc1), (float)sqrt(bc2),
                   gscale, clip ? NULL : &ss };
    /* element by element: any split over the parameters gives the same bits */
    int nt = atm_par_tasks(15.0 * (double)n);
    if (nt > 1 && !clip) nt = nt * 4 + 1 < ATM_THREADS_MAX ? nt * 4 + 1 : ATM_THREADS_MAX;   /* the sum, then chunks */
    atm_parallel(adam_task, &j, nt);
    tr->step++;
    tr->last_loss = loss;
    tr->last_lr = lr;
    tr->last_gnorm = sqrt(ss);
    return loss;
}

double atm_trainer_train_batch(atm_trainer *tr, const atm_chunks *ch) {
    atm_batch_sample(ch, &tr->rng, tr->B, tr->in, tr->tgt);
    return atm_trainer_step(tr, tr->in, tr->tgt);
}
