/* core/train/model.h — float32 models for training (host and wasm only).
 *
 * Contract. A model is a config (hyperparameters), a layout (a table of named
 * tensors with offsets into ONE flat float parameter vector, llm.c style) and a
 * family implementation (atome, vanilla, gssm) providing forward and a
 * hand-written backward over that flat vector. Gradients, AdamW moments and the
 * quantised "effective" weights use the same layout, so the optimiser and the
 * quantiser never know which model they serve.
 *
 * Quantisation (quant.c): under ATM_QUANT_TERNARY every tensor of kind
 * ATM_TK_QUANT is replaced, before each forward, by q*alpha with
 * alpha = max(mean|w|, 1e-5) over the whole tensor and q = clamp(rne(w/alpha),
 * -1, 1). Straight-through estimator: the gradient with respect to the
 * effective weight is applied unchanged to the fp32 shadow weight. Tensors of
 * kind ATM_TK_FP32 (LayerNorm, SSM vectors, learned positions) are used as is.
 *
 * Shapes: B = batch, T = positions per sequence (seq-1 predictions for a seq
 * byte chunk), V = vocab, C = d_model. Matrices are stored out x in (row-major
 * [rows][cols]) as PyTorch's Linear weight. Activations are [B*T][C]. */
#ifndef ATOME_TRAIN_MODEL_H
#define ATOME_TRAIN_MODEL_H
#include <stddef.h>
#include <stdint.h>
#include "../rng.h"
#include "../pathways.h"   /* ATM_PATH_* */

enum { ATM_FAMILY_ATOME = 0, ATM_FAMILY_VANILLA = 1, ATM_FAMILY_GSSM = 2, ATM_N_FAMILIES = 3 };
enum { ATM_QUANT_FP32 = 0, ATM_QUANT_TERNARY = 1 };
/* vanilla positions: a learned fp32 table (default), none (causal attention
 * is the only position signal), or a table quantised with the weights */
enum { ATM_POS_LEARNED = 0, ATM_POS_NONE = 1, ATM_POS_TERNARY = 2 };

/* One struct for every family; fields a family does not use are 0. */
typedef struct {
    int32_t family;    /* ATM_FAMILY_* */
    int32_t vocab;     /* 256 (byte model); smaller only in tests */
    int32_t d_model;   /* C */
    int32_t n_layers;  /* L */
    int32_t d_head;    /* atome: width of q/k; vanilla: d_model / n_heads */
    int32_t n_heads;   /* vanilla only */
    int32_t kernel;    /* atome: depthwise causal conv length K */
    int32_t top_k;     /* atome: attention keeps the top_k scores */
    int32_t pathways;  /* atome: bitmask of ATM_PATH_*; the router has popcount rows */
    int32_t d_ff;      /* vanilla, gssm: FFN hidden width */
    int32_t d_inner;   /* gssm: recurrent width */
    int32_t max_seq;   /* vanilla: rows of the learned position table */
    int32_t attn_window; /* atome: attention sees only the last attn_window positions,
                          * the current one included, as the engine's window does
                          * (0 = every earlier position of the chunk); >= top_k */
    int32_t pos;       /* vanilla: ATM_POS_* (0 = learned fp32 table) */
} atm_config;

/* Named configs: atome-60k, atome-944k, vanilla-60k, vanilla-6k, gssm-60k, and
 * small test shapes. Returns 0 and fills *out, or -1 for an unknown name. */
int atm_config_by_name(const char *name, atm_config *out);
/* Names in the order `atome params` lists them; NULL-terminated. */
extern const char *const atm_config_names[];
/* The attention window a model trained at seq runs at by default (export,
 * generate, calibration): seq, or fewer positions when the model saw fewer
 * (vanilla: its max_seq learned positions; atome: its attn_window). */
int64_t atm_config_run_window(const atm_config *c, int64_t seq);
/* 0 if the config is usable; else -1 and a one-line reason in err. */
int atm_config_validate(const atm_config *c, char *err, size_t errlen);
const char *atm_family_name(int family);
int atm_family_from_name(const char *name); /* -1 if unknown */

/* ---- parameter layout ---- */
enum { ATM_TK_QUANT = 0, ATM_TK_FP32 = 1 };          /* quantisable matrix vs always-fp32 */
enum { ATM_INIT_NORMAL = 0, ATM_INIT_UNIFORM = 1, ATM_INIT_CONST = 2 };
#define ATM_MAX_TENSORS 160
#define ATM_TENSOR_NAME 40

typedef struct {
    char    name[ATM_TENSOR_NAME]; /* e.g. "blocks.0.attn.wv" */
    int32_t rows, cols;            /* vectors: rows = 1 */
    int32_t kind;                  /* ATM_TK_* */
    int32_t init;                  /* ATM_INIT_* */
    float   init_a;                /* NORMAL: std; UNIFORM: bound (U(-a,a)); CONST: value */
    size_t  off;                   /* offset into the flat parameter vector, in floats */
} atm_tensor;

typedef struct {
    atm_config cfg;
    int        n_tensors;
    atm_tensor t[ATM_MAX_TENSORS];
    size_t     n_params;
} atm_layout;

/* Builds the tensor table of any family (dispatches to the family). 0 or -1. */
int atm_layout_build(const atm_config *c, atm_layout *L);
/* Appends a tensor (used by the family layout functions). Returns its index. */
int atm_layout_add(atm_layout *L, const char *name, int rows, int cols, int kind, int init, float init_a);
/* Appends "blocks.<l>.<suffix>" (the baselines' per-block tensors); 1 if it
 * fitted, 0 if the table is full. */
int atm_layout_add_block(atm_layout *L, int l, const char *suffix, int rows, int cols, int kind, int init, float init_a);
/* Index of a tensor by name, or -1. */
int atm_layout_find(const atm_layout *L, const char *name);
/* Number of parameters of kind ATM_TK_QUANT. */
size_t atm_layout_quant_params(const atm_layout *L);

/* ---- family implementation ---- */
typedef struct atm_family {
    const char *name;
    int   (*layout)(const atm_config *c, atm_layout *L);
    /* Activation memory for forward/backward on B sequences of T positions. */
    void *(*acts_new)(const atm_config *c, int B, int T);
    void  (*acts_free)(void *acts);
    /* Forward on in[B*T] (bytes); if tgt != NULL returns the mean cross-entropy
     * in nats over the B*T targets (summed in double) and keeps what backward
     * needs; if tgt == NULL returns 0 and only computes logits. */
    double (*forward)(const atm_layout *L, const float *w, void *acts,
                      const uint8_t *in, const uint8_t *tgt, int B, int T);
    /* Gradient of the mean loss of the last forward (with targets), ACCUMULATED
     * into dw (same layout as w). */
    void  (*backward)(const atm_layout *L, const float *w, void *acts, float *dw);
    /* Logits [B*T][V] of the last forward. */
    const float *(*logits)(void *acts);
    /* Streaming generation with attention/position window W (see docs):
     * feed one byte, get the logits [V] predicting the next one. */
    void *(*gen_new)(const atm_layout *L, const float *w, int window);
    const float *(*gen_step)(void *gen, int token);
    void  (*gen_free)(void *gen);
    /* Distillation (optional; NULL where a family does not learn from soft
     * targets): the next backward's gradient is that of (1-w) CE(targets) +
     * w CE(q), q[B*T][V] row distributions, kept by pointer (q = NULL or
     * w = 0: plain cross-entropy). The loss forward returns stays CE(targets). */
    void  (*set_soft_targets)(void *acts, const float *q, float w);
} atm_family;

extern const atm_family atm_family_atome;
extern const atm_family atm_family_vanilla;
extern const atm_family atm_family_gssm;
const atm_family *atm_family_get(int family);

/* ---- quantiser (quant.c) ---- */
/* alpha = max(mean(|w|), 1e-5), mean accumulated in double, in index order. */
float atm_ternary_alpha(const float *w, size_t n);
/* Trit of one weight: clamp(round_half_even(w / alpha), -1, 1). */
int   atm_ternary_trit(float w, float alpha);
/* wq[i] = trit(w[i]) * alpha; returns alpha. */
float atm_ternary_quantize(const float *w, size_t n, float *wq);
/* Effective weights for a whole layout: quant == TERNARY quantises every
 * ATM_TK_QUANT tensor, everything else is copied. */
void  atm_quantize_layout(const atm_layout *L, int quant, const float *w, float *weff);
/* The same, and zero[0 .. n_params) = 0 in the same parallel pass (NULL:
 * none); the scales' sums run in parallel, tensor by tensor. */
void  atm_quantize_layout_zero(const atm_layout *L, int quant, const float *w, float *weff, float *zero);

/* Fills w per the layout's init rules from rng (Box-Muller normals). */
void  atm_init_params(const atm_layout *L, float *w, atm_rng *rng);

#endif
