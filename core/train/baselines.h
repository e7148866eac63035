/* core/train/baselines.h — family-specific layer pieces of the two baseline
 * families (vanilla.c, gssm.c), exposed so tests/test_vanilla.c and
 * tests/test_gssm.c can check each one against finite differences.
 *
 * Same conventions as layers.h: flat float arrays, shapes per function,
 * backward functions ACCUMULATE (+=) into gradient buffers, nothing here
 * allocates. N = B*T rows, sequence b owns rows b*T .. b*T+T-1. */
#ifndef ATOME_TRAIN_BASELINES_H
#define ATOME_TRAIN_BASELINES_H
#include <stddef.h>
#include <stdint.h>

/* What the two baseline families' activations share: a stack of pre-LN
 * blocks (LN1, the family's mixer, a residual, the FFN sub-block) under the
 * LN_f + unembedding head. One allocation holds these slabs and then the
 * family's own (atm_preln_acts_init returns where those start). */
typedef struct {
    int B, T;              /* capacity */
    int cur_B, cur_T, has_tgt;
    uint8_t *in, *tgt;     /* [B*T] */
    float *resid;          /* [L+1][B*T][C]: resid[0] = embeddings, resid[l+1] = block l output */
    float *resid_mid;      /* [L][B*T][C]: after the mixer's residual */
    float *ln1, *ln2;      /* [L][B*T][C] */
    float *ln1_mean, *ln1_rstd, *ln2_mean, *ln2_rstd;   /* [L][B*T] */
    float *fch, *fchg;     /* [L][B*T][F]: W1 output, gelu of it */
    float *lnf, *lnf_mean, *lnf_rstd;   /* [B*T][C], [B*T], [B*T] */
    float *logits, *probs; /* [B*T][V] */
    float *tmp;            /* [B*T][C]: projection output before the residual add */
    float *dresid, *dln;   /* [B*T][C] */
    float *dfch, *dfchg;   /* [B*T][F] */
    float *dlogits;        /* [B*T][V] */
    float *mem;
} atm_preln_acts;

/* Allocates the shared slabs for L layers of B x T rows (width C, FFN F,
 * vocabulary V) and `extra` more floats for the family; returns the start of
 * those extra floats, or NULL (nothing left allocated) if out of memory or
 * the sizes overflow. */
float *atm_preln_acts_init(atm_preln_acts *k, int L, int B, int T, int C, int F, int V, uint64_t extra);
void atm_preln_acts_free(atm_preln_acts *k);
/* Starts a forward pass of B x T rows: checks them against the capacity and
 * the bytes against V, keeps in/tgt for the backward. 1 if it may go on. */
int atm_preln_begin(atm_preln_acts *k, const uint8_t *in, const uint8_t *tgt, int B, int T, int V);

/* Carves n floats off *p (a family's own slabs after the shared ones). */
static inline float *atm_take(float **p, uint64_t n) { float *r = *p; *p += n; return r; }

/* Multi-head causal self-attention core (vanilla), without the projections.
 * qkv[N][3C]: each row is [q | k | v], each third head-major (head h owns
 * columns h*dh .. h*dh+dh-1 of it, dh = C/H). For every sequence, head and
 * query position t: p = softmax_{j<=t}(q_t . k_j / sqrt(dh)) over the full
 * causal prefix; out[N][C] (head-major) = sum_j p_j v_j.
 * att[B][H][T][T] keeps p for the backward; entries j > t are stored as 0.
 * scratch: atm_mha_scratch(T, C, H) floats (forward and backward). */
size_t atm_mha_scratch(int T, int C, int H);
void atm_mha_forward(float *out, float *att, const float *qkv, float *scratch,
                     int B, int T, int C, int H);
/* dqkv[N][3C] += d(out)/d(qkv)^T dout. */
void atm_mha_backward(float *dqkv, const float *dout, const float *qkv, const float *att,
                      float *scratch, int B, int T, int C, int H);

/* Gated diagonal scan (gssm), per channel i of D and per sequence:
 *   a = sigmoid(a_raw), s_{-1} = 0, s_t = a*s_{t-1} + bv*x_t,
 *   z_t = (cv*s_t) * silu(g_t).
 * x, g [N][D] inputs; s [N][D] states and sg [N][D] = silu(g) are saved for
 * the backward; z [N][D] output. a_raw, bv, cv [D]. */
void atm_gssm_scan_forward(float *z, float *s, float *sg, const float *x, const float *g,
                           const float *a_raw, const float *bv, const float *cv,
                           int B, int T, int D);
/* Floats of scratch the backward needs: N*D + 2*D. */
size_t atm_gssm_scan_scratch(int B, int T, int D);
/* Accumulates dx, dg [N][D] and da_raw, dbv, dcv [D] from dz [N][D]; dx may be
 * NULL. scratch: atm_gssm_scan_scratch(B, T, D) floats. */
void atm_gssm_scan_backward(float *dx, float *dg, float *da_raw, float *dbv, float *dcv,
                            const float *dz, const float *x, const float *g, const float *s,
                            const float *sg, const float *a_raw, const float *bv,
                            const float *cv, float *scratch, int B, int T, int D);

/* The pre-LN FFN sub-block: out = mid + W2 . gelu(W1 . LN(mid)), W1 [F][C],
 * W2 [C][F]; saves ln [N][C], mean, rstd [N], fch, fchg [N][F] for the
 * backward; tmp [N][C] is scratch. */
void atm_ffn_sub_forward(float *out, float *ln, float *mean, float *rstd, float *fch, float *fchg, float *tmp,
                         const float *mid, const float *g, const float *b, const float *w1, const float *w2,
                         int N, int C, int F);
/* dresid [N][C] holds dloss/d(out) and becomes dloss/d(mid) (the residual
 * passes it through, the LayerNorm adds to it); dg, db, dw1, dw2
 * accumulate. Scratch: dfch, dfchg [N][F], dln [N][C]. */
void atm_ffn_sub_backward(float *dresid, float *dg, float *db, float *dw1, float *dw2,
                          float *dfch, float *dfchg, float *dln,
                          const float *mid, const float *ln, const float *mean, const float *rstd,
                          const float *fch, const float *fchg, const float *g, const float *w1, const float *w2,
                          int N, int C, int F);
/* The head: logits [N][V] = unembed . LN_f(h) (unembed [V][C]); with
 * targets, the mean cross-entropy (probs [N][V] kept), else 0. */
double atm_head_forward(float *logits, float *probs, float *lnf, float *mean, float *rstd, const float *h,
                        const float *g, const float *b, const float *unembed, const uint8_t *tgt,
                        int N, int C, int V);
/* dresid [N][C] = dloss/dh (written); dg, db, dunembed accumulate. Scratch:
 * dlogits [N][V], dln [N][C]. */
void atm_head_backward(float *dresid, float *dg, float *db, float *dunembed, float *dlogits, float *dln,
                       const float *probs, const uint8_t *tgt, const float *lnf, const float *h,
                       const float *g, const float *unembed, const float *mean, const float *rstd,
                       int N, int C, int V);

#endif
