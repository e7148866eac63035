/* core/train/atome_layers.h — the pathway primitives of the atome routed block
 * (float32, forward/backward pairs), exposed so tests/test_atome.c can check
 * each one by finite differences. Maths and conventions: docs/model-atome.md.
 *
 * Conventions (as layers.h): flat row-major arrays; activations are
 * [B*T][C] with row b*T + t; every sequence starts from zero history (conv
 * taps before t = 0 read zeros, the SSM state starts at 0, attention sees only
 * positions 0..t of its own sequence). Forward functions WRITE (=) their
 * outputs; backward functions ACCUMULATE (+=) into every gradient buffer, and
 * a NULL gradient pointer means "not needed".
 *
 * Each primitive has a plain-C reference (_ref, kernels/pathways_ref.c) and
 * an un-suffixed entry point that runs the layer kernel set in use
 * (kernels_layers.h; ATOME_KERNELS=ref runs the references). The SIMD sets
 * give the references' bits, except that attention and mixing forward use
 * the set's softmax (vector exp; atm_softmax), which differs from libm's by
 * rounding. */
#ifndef ATOME_TRAIN_ATOME_LAYERS_H
#define ATOME_TRAIN_ATOME_LAYERS_H
#include <stddef.h>
#include "model.h"
#include <stdint.h>

/* The router mixes at most three pathways (conv, ssm, attn, in that order). */
#define ATM_ATOME_MAX_PATHS 3
#define ATM_ATOME_MAX_LAYERS 64

/* The atome family's tensors, declared once (core/train/atome.c, one list
 * that also builds the layout table): where each tensor starts, in floats,
 * in the flat vector of the layout — the same for the fp32 shadow weights,
 * the effective (quantised) weights and the gradients. Computed from the
 * config alone, in the layout's order; a pathway the model lacks leaves its
 * fields 0 (never read). Shapes: embed, unembed [V][d]; ln_g, ln_b, ssm_a,
 * ssm_b, ssm_c, lnf_g, lnf_b [d]; conv [d][K]; wq, wk [d_head][d];
 * wv [d][d]; router [P][d], P = the pathways present, in the order
 * conv, ssm, attn. */
typedef struct { size_t ln_g, ln_b, conv, ssm_a, ssm_b, ssm_c, wq, wk, wv, router; } atm_atome_block_off;
typedef struct {
    size_t embed, lnf_g, lnf_b, unembed, n_params;
    atm_atome_block_off blk[ATM_ATOME_MAX_LAYERS];
} atm_atome_off;
/* 0, or -1 for a config that is not a buildable atome model. */
int atm_atome_offsets(const atm_config *c, atm_atome_off *o);

/* A statistics tap on the float streaming forward (atm_family_atome's
 * gen_step): with a tap set, every step reports the vectors it computed —
 * the residual stream entering layer l (X, l = n_layers: entering the final
 * LayerNorm), each LayerNorm output (U, same numbering), the SSM pathway's
 * output (S), the attention query and the new key and value (Q, K, V) and
 * the logits (LOGITS, layer -1) — without changing them. Calibration for
 * export is this tap (core/train/export.c), so the statistics come from the
 * very arithmetic generation runs. */
enum { ATM_TAP_X, ATM_TAP_U, ATM_TAP_S, ATM_TAP_Q, ATM_TAP_K, ATM_TAP_V, ATM_TAP_LOGITS };
typedef void (*atm_atome_tap_fn)(void *ctx, int what, int layer, const float *v, int n);
void atm_atome_gen_tap(void *gen, atm_atome_tap_fn fn, void *ctx);
/* Largest attention top-k; equals the bound atm_config_validate enforces. */
#define ATM_ATOME_MAX_TOPK 1024
/* Scratch floats that covers conv (2*K*C) and SSM (7*C) calls. */
#define ATM_ATOME_SCRATCH(C, K) (2 * (size_t)(C) * (size_t)(K) > 7 * (size_t)(C) ? \
                                 2 * (size_t)(C) * (size_t)(K) : 7 * (size_t)(C))

/* Depthwise causal conv, weights w[C][K], tap j = 0 is the current step:
 *   out[t][c] = sum_{j=0}^{min(K-1,t)} w[c][j] * u[t-j][c]
 * Terms are added in j order starting from 0 (gen_step adds in the same
 * order). scratch: K*C floats (forward), 2*K*C (backward). */
void atm_atome_conv_forward(float *out, const float *u, const float *w, float *scratch,
                            int B, int T, int C, int K);
void atm_atome_conv_forward_ref(float *out, const float *u, const float *w, float *scratch,
                                int B, int T, int C, int K);
/* du[B*T][C] += ...; dw[C][K] += ... Every channel's taps sum on their
 * own (b ascending, t ascending), so the pool splits dw by channels and du
 * by sequences. The kernels (_ref and the sets') take C channels of rows ld
 * floats apart (ld >= C; the model's call has ld == C): du, dout and u
 * point at the first channel of row 0, w and dw at that channel's taps. */
void atm_atome_conv_backward(float *du, float *dw, const float *dout, const float *u,
                             const float *w, float *scratch, int B, int T, int C, int K);
void atm_atome_conv_backward_ref(float *du, float *dw, const float *dout, const float *u,
                                 const float *w, float *scratch, int B, int T, int C, int K, int ld);

/* Diagonal linear SSM, a = tanh(a_raw):
 *   s[t][c] = b[c]*u[t][c] + a[c]*s[t-1][c]  (s[-1] = 0),  out[t][c] = c_out[c]*s[t][c]
 * s[B*T][C] is kept for backward. scratch: C floats (any content). */
void atm_atome_ssm_forward(float *s, float *out, const float *u, const float *a_raw,
                           const float *b, const float *c_out, float *scratch,
                           int B, int T, int C);
void atm_atome_ssm_forward_ref(float *s, float *out, const float *u, const float *a_raw,
                               const float *b, const float *c_out, float *scratch,
                               int B, int T, int C);
/* du[B*T][C], da_raw[C], db[C], dc[C] += ...; scratch: 7*C floats.
 * Every channel is its own scan (its sums run over b ascending, t
 * descending), so the pool splits this call by channels. The kernels
 * (_ref and the sets') take C channels of rows ld floats apart (ld >= C;
 * the model's call has ld == C): du, dout, u and s point at the first
 * channel of row 0, the per-channel arrays at that channel. */
void atm_atome_ssm_backward(float *du, float *da_raw, float *db, float *dc,
                            const float *dout, const float *u, const float *s,
                            const float *a_raw, const float *b, const float *c_out,
                            float *scratch, int B, int T, int C);
void atm_atome_ssm_backward_ref(float *du, float *da_raw, float *db, float *dc,
                                const float *dout, const float *u, const float *s,
                                const float *a_raw, const float *b, const float *c_out,
                                float *scratch, int B, int T, int C, int ld);

/* Single-head top-k causal attention, q,k [B*T][DH], v [B*T][C]:
 *   score[t][j] = (q_t . k_j) * (1/sqrt(DH)), the dot product summed over e
 *   in order from e = 0, candidates j = 0..t offered in j order;
 *   keep k_eff = min(TK, t+1) best (atm_atome_topk_insert: ties keep the
 *   earlier j); p = softmax over the kept scores; out[t] = sum_i p_i v[idx_i].
 * idx[B*T][TK] receives the kept positions j (within the sequence) in
 * descending score order, -1 past k_eff; p[B*T][TK] their weights, 0 past
 * k_eff. scratch: (DH+1)*T floats. */
void atm_atome_attn_forward(float *out, int32_t *idx, float *p, const float *q,
                            const float *k, const float *v, float *scratch,
                            int B, int T, int DH, int C, int TK);
void atm_atome_attn_forward_ref(float *out, int32_t *idx, float *p, const float *q,
                                const float *k, const float *v, float *scratch,
                                int B, int T, int DH, int C, int TK);
/* The same with a window of W >= TK positions (the config's attn_window,
 * W < T): the query at t scores positions t-W+1..t only, through the
 * dispatched select and softmax, the operations generation runs, so the two
 * agree bit for bit. idx holds chunk positions, so atm_atome_attn_backward
 * serves it unchanged. scratch: (DH+1)*T floats. */
void atm_atome_attn_forward_window(float *out, int32_t *idx, float *p, const float *q,
                                   const float *k, const float *v, float *scratch,
                                   int B, int T, int DH, int C, int TK, int W);
/* One row of that selection: sc[j] = (sum_{e<DH} q[e] * kT[e*ldk + j]) * scale
 * for j < n, the sum taken in e order from 0 with a separate multiply and add
 * (the bits of the generation's dot product), offered to atm_atome_topk_insert
 * in j order with kmax = keff (1 <= keff <= n). ps[keff], is[keff] receive the
 * kept scores and positions, best first. sc: n floats of scratch (the
 * reference uses it; SIMD sets may not). The un-suffixed name dispatches to
 * the layer kernel set in use (kernels_layers.h); every set gives the bits of
 * the _ref. */
void atm_atome_attn_select(float *ps, int32_t *is, const float *q, const float *kT, int ldk,
                           int DH, int n, float scale, int keff, float *sc);
void atm_atome_attn_select_ref(float *ps, int32_t *is, const float *q, const float *kT, int ldk,
                               int DH, int n, float scale, int keff, float *sc);
/* dq, dk [B*T][DH], dv [B*T][C] += ...; the selection idx is held fixed
 * (gradient flows only through the kept scores). */
void atm_atome_attn_backward(float *dq, float *dk, float *dv, const float *dout,
                             const int32_t *idx, const float *p, const float *q,
                             const float *k, const float *v,
                             int B, int T, int DH, int C, int TK);
void atm_atome_attn_backward_ref(float *dq, float *dk, float *dv, const float *dout,
                                 const int32_t *idx, const float *p, const float *q,
                                 const float *k, const float *v,
                                 int B, int T, int DH, int C, int TK);

/* Router softmax and residual mixing over P <= 3 pathways:
 *   r[n][.] = softmax(r[n][.])  (in place: router logits in, weights out)
 *   hout[n][c] = hin[n][c] + sum_{p=0}^{P-1} r[n][p] * paths[p][n][c]   (p order)
 * hout must not overlap hin or the paths. */
void atm_atome_mix_forward(float *hout, float *r, const float *hin,
                           const float *const *paths, int N, int C, int P);
void atm_atome_mix_forward_ref(float *hout, float *r, const float *hin,
                               const float *const *paths, int N, int C, int P);
/* drl[N][P] += d loss / d router logits; dpaths[p][N][C] += r_p * dhout
 * (dpaths[p] may be NULL). d loss / d hin is dhout itself (identity); the
 * caller keeps it. */
void atm_atome_mix_backward(float *drl, float *const *dpaths, const float *dhout,
                            const float *r, const float *const *paths,
                            int N, int C, int P);
void atm_atome_mix_backward_ref(float *drl, float *const *dpaths, const float *dhout,
                                const float *r, const float *const *paths,
                                int N, int C, int P);

/* Top-k selection step, shared by training and generation. sel_s/sel_i hold
 * *n entries in descending score order (capacity kmax >= 1). The candidate
 * (s, j) must come after every entry already present (later position). While
 * *n < kmax it is always inserted; when full it replaces the last entry only
 * if s is STRICTLY greater. Among equal scores the earlier entry stays ahead,
 * so on ties the earlier (older) position wins. */
static inline void atm_atome_topk_insert(float *sel_s, int32_t *sel_i, int *n, int kmax,
                                         float s, int32_t j) {
    int pos;
    if (*n < kmax) pos = (*n)++;
    else if (s > sel_s[kmax - 1]) pos = kmax - 1;
    else return;
    while (pos > 0 && sel_s[pos - 1] < s) {
        sel_s[pos] = sel_s[pos - 1];
        sel_i[pos] = sel_i[pos - 1];
        pos--;
    }
    sel_s[pos] = s;
    sel_i[pos] = j;
}

/* FNV-1a hash of every attention selection of the last forward, all layers,
 * each row's kept positions taken as a set (order-free); 0 if the model has
 * no attention pathway. Tests use it to notice that a finite-difference
 * perturbation changed a top-k set. */
uint64_t atm_atome_selection_hash(const void *acts);

#endif
