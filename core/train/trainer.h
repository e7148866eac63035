/* core/train/trainer.h — AdamW training of any model family, evaluation, and
 * the float sampler used by `atome generate`.
 *
 * Contract. A trainer owns the flat fp32 parameter vector w, its gradient dw,
 * the AdamW moments m and v, a preallocated effective-weight buffer weff, the
 * family's activation memory for B sequences of T = seq-1 positions, and the
 * generator that initialised w (atm_init_params) and then samples batches. All
 * of it is allocated in atm_trainer_new; a step allocates nothing.
 *
 * One step (atm_trainer_step), with s = tr->step (0-based, global):
 *   1. two-stage switch: if tr->stage == 0 and s >= fp_steps, set stage = 1 and
 *      reset the optimiser (m = v = 0, adam_t = 0).
 *   2. weff = atm_quantize_layout(w) with the stage's quant (stage 0: fp32;
 *      stage 1: opts.quant).
 *   3. dw = 0; loss = forward(weff, in, tgt); backward accumulates d(loss)/d(weff)
 *      into dw. Straight-through estimator: dw is applied to w unchanged.
 *   4. optional clipping: if clip > 0 and ||dw||_2 > clip, dw *= clip/(||dw||+1e-6)
 *      (PyTorch clip_grad_norm_; the norm is summed in double, in index order).
 *   5. AdamW, PyTorch semantics, every parameter in one group:
 *        adam_t += 1; w *= 1 - lr*wd;
 *        m = b1*m + (1-b1)*g;  v = b2*v + (1-b2)*g*g;
 *        w -= (lr / (1-b1^t)) * m / (sqrt(v)/sqrt(1-b2^t) + eps).
 *   6. tr->step += 1.
 * Learning rate at global step s (atm_lr_at): stage 1 of a two-stage run uses
 * the constant lr2; otherwise, with warmup W > 0 and s < W, lr*(s+1)/W; then if
 * cosine, lr_min + (lr-lr_min)*(1+cos(pi*p))/2 with p = (s-W)/(steps-W) clamped
 * to [0,1]; else the constant lr.
 * Two-stage: fp_steps = floor(fp_fraction*steps + 0.5) (0 when fp_fraction is
 * 0); the first fp_steps steps train in fp32, the rest in opts.quant (which
 * must then be ternary) with a fresh optimiser at lr2.
 *
 * Determinism: same opts + same config + same build => the same bits. The state
 * that fully determines the future (w, m, v, step, adam_t, stage, rng) is what a
 * checkpoint stores (ckpt.h), so a resumed run is bit-identical. */
#ifndef ATOME_TRAIN_TRAINER_H
#define ATOME_TRAIN_TRAINER_H
#include <stddef.h>
#include <stdint.h>
#include "model.h"
#include "data.h"

typedef struct {
    int32_t  quant;       /* ATM_QUANT_*: quantiser of the (final) stage */
    float    lr;          /* peak / constant learning rate (3e-4) */
    float    lr2;         /* constant lr of the ternary stage of a two-stage run */
    float    beta1, beta2, eps; /* 0.9, 0.999, 1e-8 */
    float    wd;          /* decoupled weight decay (0.01), on every parameter */
    float    clip;        /* global grad-norm clip; 0 = off */
    float    lr_min;      /* cosine floor (0) */
    int64_t  warmup;      /* linear warmup steps; 0 = off */
    int32_t  cosine;      /* 1 = cosine decay to lr_min after warmup */
    float    fp_fraction; /* two-stage: fraction of steps trained in fp32; 0 = off */
    int64_t  steps;       /* total steps of the run (schedules are relative to it) */
    int32_t  batch;       /* B sequences per step (16) */
    int32_t  seq;         /* bytes per chunk (64); T = seq-1 predictions */
    uint32_t seed;        /* seeds the generator: init, then batch sampling */
} atm_train_opts;

/* betas 0.9/0.999, eps 1e-8, wd 0.01, lr 3e-4 constant, no clip, no warmup,
 * no two-stage, quant fp32, steps 3000, batch 16, seq 64, seed 0: the
 * defaults of the option table (options.h). */
void atm_train_opts_default(atm_train_opts *o);
/* 0 if usable; else -1 and a one-line reason. */
int  atm_train_opts_validate(const atm_train_opts *o, char *err, size_t errlen);
/* Steps trained in fp32 before the ternary stage (0 if no two-stage). */
int64_t atm_fp_steps(const atm_train_opts *o);
/* Learning rate used by global step s in the given stage (0 or 1). */
float atm_lr_at(const atm_train_opts *o, int64_t s, int stage);

typedef struct {
    atm_layout          L;       /* config + tensor table */
    const atm_family   *fam;
    atm_train_opts      opt;
    int                 B, T;    /* batch, positions per sequence (seq-1) */
    float              *w;       /* [n_params] fp32 shadow weights */
    float              *weff;    /* [n_params] effective (quantised) weights */
    float              *dw;      /* [n_params] gradient w.r.t. weff (= w by STE) */
    float              *m, *v;   /* [n_params] AdamW moments */
    void               *acts;    /* family activations for B x T */
    uint8_t            *in, *tgt;/* [B*T] batch scratch for atm_trainer_train_batch */
    atm_rng             rng;
    int64_t             step;    /* steps done (global) */
    int64_t             adam_t;  /* AdamW steps since the optimiser was (re)set */
    int32_t             stage;   /* 0: fp32 stage of a two-stage run; 1: main stage */
    double              last_loss;  /* loss of the last step */
    float               last_lr;    /* lr of the last step */
    double              last_gnorm; /* grad norm of the last step (before clipping) */
    struct atm_teacher *teacher;    /* distillation (atm_trainer_set_teacher), or NULL */
} atm_trainer;

/* Builds the layout, allocates everything, seeds the generator with
 * opts->seed and initialises w from it. m = v = 0, step 0, stage 0 if a
 * two-stage run with fp_steps > 0 else 1. NULL on invalid config/opts or
 * out of memory (validate first for a reason). */
atm_trainer *atm_trainer_new(const atm_config *c, const atm_train_opts *o);
void         atm_trainer_free(atm_trainer *tr);
/* Distillation: from now on every step also runs the teacher (a model of
 * any family over the same bytes, its weights tw quantised once with
 * tquant) on the step's inputs and trains on (1-weight) CE(targets) +
 * weight CE(softmax(teacher logits)), weight in (0, 1]; the reported loss
 * stays CE(targets). The teacher is copied (tw may be freed). The student's
 * family must take soft targets (atome does). 0, or -1 with a reason. A
 * resumed run with the same teacher and weight continues bit-identically. */
int          atm_trainer_set_teacher(atm_trainer *tr, const atm_config *tc, const float *tw, int tquant,
                                     float weight, char *err, size_t errlen);
/* Quantiser the next step will use. */
int          atm_trainer_quant(const atm_trainer *tr);
/* One AdamW step on in[B*T], tgt[B*T]; returns the mean loss in nats. */
double       atm_trainer_step(atm_trainer *tr, const uint8_t *in, const uint8_t *tgt);
/* Samples a batch from ch (with the trainer's generator) and steps. */
double       atm_trainer_train_batch(atm_trainer *tr, const atm_chunks *ch);

/* ---- evaluation (eval.c) ---- */
/* atm_eval_result (the score) and atm_router_stats: core/host/eval_types.h,
 * shared with the engine's evaluation (core/host/engine_host.h). */

/* Mean cross-entropy of weights w (fp32 shadow; quantised here with quant)
 * over every chunk of ch, in batches of `batch` chunks (the last one smaller).
 * T = ch->seq-1 may differ from the training seq. Allocates its own buffers.
 * 0, or -1 with a reason (out of memory, T too long for the model). */
int atm_eval_chunks(const atm_layout *L, const float *w, int quant, const atm_chunks *ch,
                    int batch, atm_eval_result *out, char *err, size_t errlen);

/* atm_eval_chunks that also fills *rs (an atome-family model of at most
 * ATM_ROUTER_MAX_LAYERS layers; rs NULL = atm_eval_chunks). */
int atm_eval_chunks_router(const atm_layout *L, const float *w, int quant, const atm_chunks *ch,
                           int batch, atm_eval_result *out, atm_router_stats *rs, char *err, size_t errlen);

/* The router weights of the last forward on atome activations: layer l's
 * rows start at r + l * *layer_stride, row n (0..B*T-1) holds *P weights,
 * one per pathway the model has, in the order conv, ssm, attn. */
const float *atm_atome_router_weights(const void *acts, size_t *layer_stride, int *P);

/* ---- float sampler (eval.c) ---- */
/* Next byte from logits[V]: temperature <= 0 -> argmax (lowest index on ties);
 * else softmax(logits/temperature) in double, keep the top_k most likely
 * (top_k <= 0 or >= V: all; ties keep the lower index), then the smallest
 * prefix (in descending probability) whose mass reaches top_p of the kept
 * mass (top_p >= 1: all; at least one byte is kept), renormalise, and draw u = (atm_rng_u32 >> 8) * 2^-24 against the
 * cumulative in that order. V <= 256 (uses stack scratch). */
int atm_sample_logits(const float *logits, int V, float temperature, int top_k, float top_p,
                      atm_rng *rng);

#endif
