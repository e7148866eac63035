/* core/train/atome.c — the atome family: routed ternary block, float32
 * training forward, hand-written backward, and streaming generation.
 *
 * Contract (model.h, maths in docs/model-atome.md):
 *   h0 = embed[x]; per block u = LN(h), r = softmax(router . u) over the
 *   pathways present (conv, ssm, attn in that order), h += sum_p r_p path_p(u);
 *   logits = unembed . LN_f(h); loss = mean cross-entropy over B*T positions.
 * A removed pathway has no tensor at all and the router has popcount(pathways)
 * rows. forward/backward read the EFFECTIVE weights w (quantised by the
 * caller); backward accumulates into dw. acts_new(B, T) allocates everything;
 * forward/backward allocate nothing and accept any B' <= B, T' <= T.
 * Generation keeps, per layer, the last K-1 normalised inputs (conv), the SSM
 * state (never reset) and a K/V cache of the last W positions (attention). */
#include "model.h"
#include "trainer.h"
#include "layers.h"
#include "atome_layers.h"
#include "pool.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------- */
/* vector helpers                                                             */
/* Written as 4- or 8-statement groups over restrict pointers so that gcc -O2
 * (whose default "very cheap" vectoriser skips runtime-length loops) and
 * clang pack each group into SIMD registers; the arithmetic per lane is the
 * same as the scalar reading, so results do not depend on the vector width. */

/* sum_i a[i]*b[i]: eight partial sums (lane i % 8), the scalar tail goes to
 * lane 0, combined as ((l0+l4)+(l1+l5)) + ((l2+l6)+(l3+l7)). */
static inline float dotf(const float *restrict a, const float *restrict b, int n) {
    float l[8] = { 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f };
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        l[0] += a[i] * b[i];         l[1] += a[i + 1] * b[i + 1];
        l[2] += a[i + 2] * b[i + 2]; l[3] += a[i + 3] * b[i + 3];
        l[4] += a[i + 4] * b[i + 4]; l[5] += a[i + 5] * b[i + 5];
        l[6] += a[i + 6] * b[i + 6]; l[7] += a[i + 7] * b[i + 7];
    }
    for (; i < n; i++) l[0] += a[i] * b[i];
    return ((l[0] + l[4]) + (l[1] + l[5])) + ((l[2] + l[6]) + (l[3] + l[7]));
}

/* y += a * x */
static inline void axpyf(float *restrict y, float a, const float *restrict x, int n) {
    int i = 0;
    for (; i + 4 <= n; i += 4) {
        y[i] += a * x[i]; y[i + 1] += a * x[i + 1]; y[i + 2] += a * x[i + 2]; y[i + 3] += a * x[i + 3];
    }
    for (; i < n; i++) y[i] += a * x[i];
}

/* y += a .* x (elementwise) */
static inline void vmlaf(float *restrict y, const float *restrict a, const float *restrict x, int n) {
    int i = 0;
    for (; i + 4 <= n; i += 4) {
        y[i] += a[i] * x[i]; y[i + 1] += a[i + 1] * x[i + 1];
        y[i + 2] += a[i + 2] * x[i + 2]; y[i + 3] += a[i + 3] * x[i + 3];
    }
    for (; i < n; i++) y[i] += a[i] * x[i];
}

/* y = a .* x (elementwise) */
static inline void vmulf(float *restrict y, const float *restrict a, const float *restrict x, int n) {
    int i = 0;
    for (; i + 4 <= n; i += 4) {
        y[i] = a[i] * x[i]; y[i + 1] = a[i + 1] * x[i + 1]; y[i + 2] = a[i + 2] * x[i + 2]; y[i + 3] = a[i + 3] * x[i + 3];
    }
    for (; i < n; i++) y[i] = a[i] * x[i];
}

/* One conv tap of backward: du += w .* d and dw += d .* u, in one pass. */
static inline void conv_bwd_tap(float *restrict du, float *restrict dw, const float *restrict w,
                                const float *restrict d, const float *restrict u, int n) {
    int i = 0;
    for (; i + 4 <= n; i += 4) {
        du[i] += w[i] * d[i]; du[i + 1] += w[i + 1] * d[i + 1];
        du[i + 2] += w[i + 2] * d[i + 2]; du[i + 3] += w[i + 3] * d[i + 3];
        dw[i] += d[i] * u[i]; dw[i + 1] += d[i + 1] * u[i + 1];
        dw[i + 2] += d[i + 2] * u[i + 2]; dw[i + 3] += d[i + 3] * u[i + 3];
    }
    for (; i < n; i++) { du[i] += w[i] * d[i]; dw[i] += d[i] * u[i]; }
}

/* One step of the SSM backward scan over n channels (see ssm_backward):
 *   ds = g*c_out + carry; carry = a*ds; du += b*ds; acc_dc += g*s;
 *   acc_db += ds*u; acc_da += ds*sp */
static inline void ssm_bwd_step(float *restrict du, float *restrict carry, float *restrict acc_da,
                                float *restrict acc_db, float *restrict acc_dc,
                                const float *restrict g, const float *restrict s,
                                const float *restrict sp, const float *restrict u,
                                const float *restrict a, const float *restrict b,
                                const float *restrict co, int n) {
    int i = 0;
#define SSM_LANE(k) do { float ds = g[k] * co[k] + carry[k]; carry[k] = a[k] * ds; du[k] += b[k] * ds; \
        acc_dc[k] += g[k] * s[k]; acc_db[k] += ds * u[k]; acc_da[k] += ds * sp[k]; } while (0)
    for (; i + 4 <= n; i += 4) { SSM_LANE(i); SSM_LANE(i + 1); SSM_LANE(i + 2); SSM_LANE(i + 3); }
    for (; i < n; i++) SSM_LANE(i);
#undef SSM_LANE
}

/* ------------------------------------------------------------------------- */
/* pathway primitives (atome_layers.h): the plain-C references. The model
 * calls the un-suffixed names, which run the layer kernel set in use
 * (kernels_layers.c); the SIMD sets reproduce these bits (see the header). */

void atm_atome_conv_forward_ref(float *out, const float *u, const float *w, float *scratch,
                                int B, int T, int C, int K) {
    float *wT = scratch;                                  /* [K][C]: wT[j][c] = w[c][j] */
    for (int c = 0; c < C; c++)
        for (int j = 0; j < K; j++) wT[(size_t)j * C + c] = w[(size_t)c * K + j];
    for (int b = 0; b < B; b++) {
        for (int t = 0; t < T; t++) {
            size_t n = (size_t)b * T + t;
            float *o = out + n * C;
            memset(o, 0, sizeof(float) * (size_t)C);
            int jmax = t < K - 1 ? t : K - 1;
            for (int j = 0; j <= jmax; j++) vmlaf(o, wT + (size_t)j * C, u + (n - (size_t)j) * C, C);
        }
    }
}

void atm_atome_conv_backward_ref(float *du, float *dw, const float *dout, const float *u,
                                 const float *w, float *scratch, int B, int T, int C, int K, int ld) {
    const size_t KC = (size_t)K * C;
    float *wT = scratch, *dwT = scratch + KC;            /* [K][C] each */
    for (int c = 0; c < C; c++)
        for (int j = 0; j < K; j++) wT[(size_t)j * C + c] = w[(size_t)c * K + j];
    memset(dwT, 0, sizeof(float) * KC);
    for (int b = 0; b < B; b++) {
        for (int t = 0; t < T; t++) {
            size_t n = (size_t)b * T + t;
            const float *d = dout + n * (size_t)ld;
            int jmax = t < K - 1 ? t : K - 1;
            for (int j = 0; j <= jmax; j++) {
                size_t m = (n - (size_t)j) * (size_t)ld;
                if (du && dw) conv_bwd_tap(du + m, dwT + (size_t)j * C, wT + (size_t)j * C, d, u + m, C);
                else if (du) vmlaf(du + m, wT + (size_t)j * C, d, C);
                else if (dw) vmlaf(dwT + (size_t)j * C, d, u + m, C);
            }
        }
    }
    if (dw)
        for (int c = 0; c < C; c++)
            for (int j = 0; j < K; j++) dw[(size_t)c * K + j] += dwT[(size_t)j * C + c];
}

void atm_atome_ssm_forward_ref(float *s, float *out, const float *u, const float *a_raw,
                               const float *b, const float *c_out, float *scratch,
                               int B, int T, int C) {
    float *a = scratch;                                   /* [C] tanh(a_raw) */
    for (int c = 0; c < C; c++) a[c] = tanhf(a_raw[c]);
    for (int bb = 0; bb < B; bb++) {
        size_t n0 = (size_t)bb * T;
        for (int t = 0; t < T; t++) {
            size_t n = (n0 + t) * C;
            float *st = s + n;
            vmulf(st, b, u + n, C);                       /* b*u_t ... */
            if (t > 0) vmlaf(st, a, st - C, C);           /* ... + a*s_{t-1} */
            vmulf(out + n, c_out, st, C);
        }
    }
}

void atm_atome_ssm_backward_ref(float *du, float *da_raw, float *db, float *dc,
                                const float *dout, const float *u, const float *s,
                                const float *a_raw, const float *b, const float *c_out,
                                float *scratch, int B, int T, int C, int ld) {
    /* scratch rows [C] each: a, carry (= a * dL/ds_{t+1}), the three
     * per-channel accumulators, a zero row (s_{-1}) and a sink for du == NULL */
    float *a = scratch, *carry = a + C, *acc_da = carry + C, *acc_db = acc_da + C, *acc_dc = acc_db + C,
          *zero = acc_dc + C, *sink = zero + C;
    for (int c = 0; c < C; c++) a[c] = tanhf(a_raw[c]);
    memset(acc_da, 0, sizeof(float) * 4 * (size_t)C);     /* acc_da, acc_db, acc_dc, zero */
    for (int bb = 0; bb < B; bb++) {
        size_t n0 = (size_t)bb * T;
        memset(carry, 0, sizeof(float) * (size_t)C);
        for (int t = T - 1; t >= 0; t--) {
            size_t n = (n0 + t) * (size_t)ld;
            ssm_bwd_step(du ? du + n : sink, carry, acc_da, acc_db, acc_dc, dout + n, s + n,
                         t > 0 ? s + n - ld : zero, u + n, a, b, c_out, C);
        }
    }
    for (int c = 0; c < C; c++) {
        if (da_raw) da_raw[c] += acc_da[c] * (1.0f - a[c] * a[c]);
        if (db) db[c] += acc_db[c];
        if (dc) dc[c] += acc_dc[c];
    }
}

void atm_atome_attn_select_ref(float *ps, int32_t *is, const float *q, const float *kT, int ldk,
                               int DH, int n, float scale, int keff, float *sc) {
    /* sc[j] = (q . k_j) * scale, the dot summed over e in order from 0, all j < n at once */
    memset(sc, 0, sizeof(float) * (size_t)n);
    for (int e = 0; e < DH; e++) axpyf(sc, q[e], kT + (size_t)e * ldk, n);
    for (int j = 0; j < n; j++) sc[j] *= scale;
    /* atm_atome_topk_insert over j = 0..n-1; once full, a candidate not
     * strictly above the current k-th score is rejected there anyway, so
     * that test is hoisted here. */
    int j = 0, cnt = 0;
    for (; j < keff; j++) atm_atome_topk_insert(ps, is, &cnt, keff, sc[j], j);
    float thr = ps[keff - 1];
    for (; j < n; j++)
        if (sc[j] > thr) { atm_atome_topk_insert(ps, is, &cnt, keff, sc[j], j); thr = ps[keff - 1]; }
}

/* The attention forward with a window: the query at t scores positions
 * t-W+1..t (all of 0..t when W >= T), oldest first, through select, then
 * softmax over the kept set and the mix in selection order. idx holds chunk
 * positions, so the backward is the same for every W (its keff =
 * min(TK, t+1) equals this one's because W >= TK). The reference passes
 * W = T and its _ref twins; the windowed training path (attn_window) passes
 * the dispatched select and softmax, the operations gen_step runs, so the
 * two agree bit for bit. */
typedef void (*attn_select_fn)(float *, int32_t *, const float *, const float *, int, int, int, float, int, float *);
static void attn_forward_span(float *out, int32_t *idx, float *p, const float *q, const float *k, const float *v,
                              float *scratch, int B, int T, int DH, int C, int TK, int W,
                              attn_select_fn select, void (*softmax)(float *, int)) {
    const float scale = 1.0f / sqrtf((float)DH);
    float *kT = scratch, *sc = scratch + (size_t)DH * T; /* [DH][T] keys of one sequence, [T] scores */
    for (int b = 0; b < B; b++) {
        size_t n0 = (size_t)b * T;
        for (int j = 0; j < T; j++)
            for (int e = 0; e < DH; e++) kT[(size_t)e * T + j] = k[(n0 + j) * DH + e];
        for (int t = 0; t < T; t++) {
            size_t n = n0 + t;
            int j0 = t + 1 > W ? t + 1 - W : 0, cand = t + 1 - j0;
            float *ps = p + n * TK;
            int32_t *is = idx + n * TK;
            int keff = TK < cand ? TK : cand;
            select(ps, is, q + n * DH, kT + j0, T, DH, cand, scale, keff, sc);
            for (int i = 0; i < keff; i++) is[i] += j0;
            for (int i = keff; i < TK; i++) { ps[i] = 0.0f; is[i] = -1; }
            softmax(ps, keff);
            float *o = out + n * C;
            memset(o, 0, sizeof(float) * (size_t)C);
            for (int i = 0; i < keff; i++) axpyf(o, ps[i], v + (n0 + (size_t)is[i]) * C, C);
        }
    }
}

void atm_atome_attn_forward_ref(float *out, int32_t *idx, float *p, const float *q,
                                const float *k, const float *v, float *scratch,
                                int B, int T, int DH, int C, int TK) {
    attn_forward_span(out, idx, p, q, k, v, scratch, B, T, DH, C, TK, T, atm_atome_attn_select_ref, atm_softmax_ref);
}

void atm_atome_attn_backward_ref(float *dq, float *dk, float *dv, const float *dout,
                                 const int32_t *idx, const float *p, const float *q,
                                 const float *k, const float *v,
                                 int B, int T, int DH, int C, int TK) {
    const float scale = 1.0f / sqrtf((float)DH);
    float dp[ATM_ATOME_MAX_TOPK];
    for (int b = 0; b < B; b++) {
        size_t n0 = (size_t)b * T;
        for (int t = 0; t < T; t++) {
            size_t n = n0 + t;
            const float *d = dout + n * C, *ps = p + n * TK, *qt = q + n * DH;
            const int32_t *is = idx + n * TK;
            int keff = TK < t + 1 ? TK : t + 1;
            float sum = 0.0f;
            for (int i = 0; i < keff; i++) {
                size_t m = n0 + (size_t)is[i];
                dp[i] = dotf(d, v + m * C, C);
                sum += ps[i] * dp[i];
                if (dv) axpyf(dv + m * C, ps[i], d, C);
            }
            for (int i = 0; i < keff; i++) {
                size_t m = n0 + (size_t)is[i];
                float ds = ps[i] * (dp[i] - sum) * scale;   /* dL / d(q.k) */
                if (dq) axpyf(dq + n * DH, ds, k + m * DH, DH);
                if (dk) axpyf(dk + m * DH, ds, qt, DH);
            }
        }
    }
}

void atm_atome_mix_forward_ref(float *hout, float *r, const float *hin,
                               const float *const *paths, int N, int C, int P) {
    for (int n = 0; n < N; n++) {
        float *rn = r + (size_t)n * P;
        atm_softmax_ref(rn, P);
        float *ho = hout + (size_t)n * C;
        memcpy(ho, hin + (size_t)n * C, sizeof(float) * (size_t)C);
        for (int pp = 0; pp < P; pp++) axpyf(ho, rn[pp], paths[pp] + (size_t)n * C, C);
    }
}

void atm_atome_mix_backward_ref(float *drl, float *const *dpaths, const float *dhout,
                                const float *r, const float *const *paths,
                                int N, int C, int P) {
    float dr[ATM_ATOME_MAX_PATHS];
    for (int n = 0; n < N; n++) {
        const float *d = dhout + (size_t)n * C, *rn = r + (size_t)n * P;
        float sum = 0.0f;
        for (int pp = 0; pp < P; pp++) {
            dr[pp] = dotf(d, paths[pp] + (size_t)n * C, C);
            sum += rn[pp] * dr[pp];
            if (dpaths[pp]) axpyf(dpaths[pp] + (size_t)n * C, rn[pp], d, C);
        }
        for (int pp = 0; pp < P; pp++) drl[(size_t)n * P + pp] += rn[pp] * (dr[pp] - sum);
    }
}

/* ------------------------------------------------------------------------- */
/* layout                                                                     */

static int popcount3(int m) { return (m & 1) + ((m >> 1) & 1) + ((m >> 2) & 1); }

/* The one declaration of the family's tensors, in layout order. With L it
 * builds the layout table (names, shapes, kinds, inits); with o it records
 * each tensor's offset — by arithmetic alone, so a training step never looks
 * a name up. */
static int atome_declare(const atm_config *c, atm_layout *L, atm_atome_off *o) {
    const int V = c->vocab, d = c->d_model, pw = c->pathways;
    if (c->family != ATM_FAMILY_ATOME || V < 1 || d < 1 || c->n_layers < 1 || c->n_layers > ATM_ATOME_MAX_LAYERS) return -1;
    if (pw < 1 || pw > ATM_PATH_ALL) return -1;
    if ((pw & ATM_PATH_CONV) && c->kernel < 1) return -1;
    if ((pw & ATM_PATH_ATTN) && (c->d_head < 1 || c->top_k < 1 || c->top_k > ATM_ATOME_MAX_TOPK)) return -1;
    if (L) { memset(L, 0, sizeof *L); L->cfg = *c; }
    if (o) memset(o, 0, sizeof *o);
    /* std = in^-1/2 for every ternary linear (N(0, 1/in)); conv N(0, 1/K). */
    const float sd = 1.0f / sqrtf((float)d);
    size_t at = 0;
    int ok = 1;
    char nm[ATM_TENSOR_NAME];
#define T(slot, name, rows, cols, kind, init, a) do { \
        if (o) o->slot = at; \
        at += (size_t)(rows) * (size_t)(cols); \
        if (L) ok = ok && atm_layout_add(L, name, rows, cols, kind, init, a) >= 0; } while (0)
#define B(field, suffix, rows, cols, kind, init, a) do { \
        if (L) snprintf(nm, sizeof nm, "blocks.%d.%s", i, suffix); \
        T(blk[i].field, nm, rows, cols, kind, init, a); } while (0)
    T(embed, "embed", V, d, ATM_TK_QUANT, ATM_INIT_NORMAL, sd);
    for (int i = 0; i < c->n_layers; i++) {
        B(ln_g, "ln.g", 1, d, ATM_TK_FP32, ATM_INIT_CONST, 1.0f);
        B(ln_b, "ln.b", 1, d, ATM_TK_FP32, ATM_INIT_CONST, 0.0f);
        if (pw & ATM_PATH_CONV)
            B(conv, "conv", d, c->kernel, ATM_TK_QUANT, ATM_INIT_NORMAL, 1.0f / sqrtf((float)c->kernel));
        if (pw & ATM_PATH_SSM) {
            B(ssm_a, "ssm.a_raw", 1, d, ATM_TK_FP32, ATM_INIT_CONST, 1.5f);
            B(ssm_b, "ssm.b", 1, d, ATM_TK_FP32, ATM_INIT_NORMAL, sd);
            B(ssm_c, "ssm.c", 1, d, ATM_TK_FP32, ATM_INIT_NORMAL, sd);
        }
        if (pw & ATM_PATH_ATTN) {
            B(wq, "attn.wq", c->d_head, d, ATM_TK_QUANT, ATM_INIT_NORMAL, sd);
            B(wk, "attn.wk", c->d_head, d, ATM_TK_QUANT, ATM_INIT_NORMAL, sd);
            B(wv, "attn.wv", d, d, ATM_TK_QUANT, ATM_INIT_NORMAL, sd);
        }
        B(router, "router", popcount3(pw), d, ATM_TK_QUANT, ATM_INIT_NORMAL, sd);
    }
    T(lnf_g, "ln_f.g", 1, d, ATM_TK_FP32, ATM_INIT_CONST, 1.0f);
    T(lnf_b, "ln_f.b", 1, d, ATM_TK_FP32, ATM_INIT_CONST, 0.0f);
    T(unembed, "unembed", V, d, ATM_TK_QUANT, ATM_INIT_NORMAL, sd);
#undef B
#undef T
    if (o) o->n_params = at;
    return ok ? 0 : -1;
}

static int atome_layout(const atm_config *c, atm_layout *L) { return atome_declare(c, L, NULL); }

int atm_atome_offsets(const atm_config *c, atm_atome_off *o) { return atome_declare(c, NULL, o); }

typedef atm_atome_block_off blk_off;
typedef atm_atome_off model_off;

/* The offsets of a layout (built by atome_layout, so in the same order):
 * arithmetic on its config, and the count as a check against a foreign
 * layout. */
static int resolve(const atm_layout *L, model_off *o) {
    if (atome_declare(&L->cfg, NULL, o) != 0 || o->n_params != L->n_params) return -1;
    return 0;
}

/* ------------------------------------------------------------------------- */
/* activations                                                                */

typedef struct {
    atm_config cfg;
    int Bmax, Tmax;          /* allocated capacity */
    int B, T;                /* shape of the last forward */
    int ready;               /* 1 after a forward with targets: backward may run */
    int P;                   /* number of pathways (router rows) */
    size_t NM;               /* Bmax*Tmax: row stride of every per-layer buffer */
    float *h;                /* [L+1][NM][C] residual stream; h[l] is block l's input */
    float *ln_mean, *ln_rstd;/* [L][NM] */
    float *u;                /* [L][NM][C] normalised block input */
    float *r;                /* [L][NM][P] router weights (after softmax) */
    float *conv;             /* [L][NM][C] conv pathway output        (conv only) */
    float *ssm_s, *ssm_o;    /* [L][NM][C] SSM state and output        (ssm only) */
    float *q, *k;            /* [L][NM][DH]                            (attn only) */
    float *v, *att;          /* [L][NM][C] values and attention output (attn only) */
    float *att_p;            /* [L][NM][TK] kept softmax weights       (attn only) */
    int32_t *att_idx;        /* [L][NM][TK] kept positions             (attn only) */
    float *lnf_mean, *lnf_rstd; /* [NM] */
    float *uf;               /* [NM][C] final-LN output */
    float *logits, *probs;   /* [NM][V] */
    /* backward scratch */
    float *dlogits;          /* [NM][V] */
    float *dh, *du;          /* [NM][C] */
    float *dpath[ATM_ATOME_MAX_PATHS]; /* [NM][C] each */
    float *drl;              /* [NM][P] */
    float *dq, *dk;          /* [NM][DH] (attn only) */
    float *dv;               /* [NM][C]  (attn only) */
    float *scratch;          /* [ATM_ATOME_SCRATCH(C, K)] conv/ssm scratch */
    float *attn_scratch;     /* [(DH+1)*Tmax] (attn only) */
    uint8_t *in, *tgt;       /* [NM] copies of the last forward's bytes */
    const float *soft;       /* [NM][V] distillation targets (set_soft_targets) or NULL */
    float soft_w;            /* their weight in the loss */
    float *fmem;
    int32_t *imem;
} atome_acts;

const float *atm_atome_router_weights(const void *acts, size_t *layer_stride, int *P) {
    const atome_acts *a = (const atome_acts *)acts;
    *layer_stride = a->NM * (size_t)a->P;
    *P = a->P;
    return a->r;
}

static void *atome_acts_new(const atm_config *c, int B, int T) {
    if (!c || c->family != ATM_FAMILY_ATOME || B < 1 || T < 1) return NULL;
    if (c->d_model < 1 || c->n_layers < 1 || c->vocab < 1 || c->pathways < 1 || c->pathways > ATM_PATH_ALL) return NULL;
    if ((c->pathways & ATM_PATH_ATTN) && (c->d_head < 1 || c->top_k < 1 || c->top_k > ATM_ATOME_MAX_TOPK)) return NULL;
    if ((size_t)B * (size_t)T > (size_t)1 << 28) return NULL;
    atome_acts *a = calloc(1, sizeof *a);
    if (!a) return NULL;
    a->cfg = *c; a->Bmax = B; a->Tmax = T;
    a->P = popcount3(c->pathways);
    /* sizes in 64 bits: B*T*C... can pass 2^32 floats, more than a 32-bit size_t (wasm) holds */
    const uint64_t NM = (uint64_t)B * T, C = (uint64_t)c->d_model, Ln = (uint64_t)c->n_layers, V = (uint64_t)c->vocab;
    const int cv = (c->pathways & ATM_PATH_CONV) != 0, sm = (c->pathways & ATM_PATH_SSM) != 0,
              at = (c->pathways & ATM_PATH_ATTN) != 0;
    const uint64_t DH = at ? (uint64_t)c->d_head : 0, TK = at ? (uint64_t)c->top_k : 0, P = (uint64_t)a->P;
    a->NM = NM;
    uint64_t sizes[32], total = 0;
    size_t n = 0;
    float **ptrs[32];
#define F(ptr, count) do { ptrs[n] = &(ptr); sizes[n] = (count); total += sizes[n]; n++; } while (0)
    F(a->h, (Ln + 1) * NM * C);
    F(a->ln_mean, Ln * NM); F(a->ln_rstd, Ln * NM);
    F(a->u, Ln * NM * C);
    F(a->r, Ln * NM * P);
    F(a->conv, cv ? Ln * NM * C : 0);
    F(a->ssm_s, sm ? Ln * NM * C : 0); F(a->ssm_o, sm ? Ln * NM * C : 0);
    F(a->q, Ln * NM * DH); F(a->k, Ln * NM * DH);
    F(a->v, at ? Ln * NM * C : 0); F(a->att, at ? Ln * NM * C : 0);
    F(a->att_p, Ln * NM * TK);
    F(a->lnf_mean, NM); F(a->lnf_rstd, NM);
    F(a->uf, NM * C);
    F(a->logits, NM * V); F(a->probs, NM * V); F(a->dlogits, NM * V);
    F(a->dh, NM * C); F(a->du, NM * C);
    for (size_t i = 0; i < P; i++) F(a->dpath[i], NM * C);
    F(a->drl, NM * P);
    F(a->dq, NM * DH); F(a->dk, NM * DH);
    F(a->dv, at ? NM * C : 0);
    F(a->scratch, ATM_ATOME_SCRATCH(C, (c->pathways & ATM_PATH_CONV) ? (size_t)c->kernel : 0));
    F(a->attn_scratch, at ? (DH + 1) * (size_t)T : 0);
#undef F
    if (total > SIZE_MAX / sizeof(float) / 2 || Ln * NM * TK > SIZE_MAX / sizeof(int32_t) / 2 || 2 * NM > SIZE_MAX / 2) {
        free(a);
        return NULL;
    }
    a->fmem = malloc(sizeof(float) * (size_t)total);
    a->imem = at ? malloc(sizeof(int32_t) * (size_t)(Ln * NM * TK)) : NULL;
    a->in = malloc((size_t)(2 * NM));
    if (!a->fmem || (at && !a->imem) || !a->in) {
        free(a->fmem); free(a->imem); free(a->in); free(a);
        return NULL;
    }
    memset(a->fmem, 0, sizeof(float) * (size_t)total);
    float *f = a->fmem;
    for (size_t i = 0; i < n; i++) { *ptrs[i] = sizes[i] ? f : NULL; f += sizes[i]; }
    a->att_idx = a->imem;
    a->tgt = a->in + NM;
    return a;
}

static void atome_acts_free(void *acts) {
    atome_acts *a = acts;
    if (!a) return;
    free(a->fmem); free(a->imem); free(a->in); free(a);
}

uint64_t atm_atome_selection_hash(const void *acts) {
    const atome_acts *a = acts;
    if (!a || !a->att_idx) return 0;
    const size_t N = (size_t)a->B * a->T, TK = (size_t)a->cfg.top_k;
    uint64_t hsh = 1469598103934665603ull;               /* FNV-1a 64 offset basis */
    for (int l = 0; l < a->cfg.n_layers; l++) {
        const int32_t *ix = a->att_idx + (size_t)l * a->NM * TK;
        for (size_t n = 0; n < N; n++) {
            int32_t row[ATM_ATOME_MAX_TOPK];              /* the kept SET: sorted, order-free */
            for (size_t i = 0; i < TK; i++) {
                int32_t x = ix[n * TK + i];
                size_t j = i;
                while (j > 0 && row[j - 1] > x) { row[j] = row[j - 1]; j--; }
                row[j] = x;
            }
            for (size_t i = 0; i < TK; i++) {
                hsh ^= (uint32_t)row[i];
                hsh *= 1099511628211ull;                  /* FNV-1a 64 prime */
            }
        }
    }
    return hsh;
}

/* ------------------------------------------------------------------------- */
/* forward / backward                                                         */

static double atome_forward(const atm_layout *L, const float *w, void *acts,
                            const uint8_t *in, const uint8_t *tgt, int B, int T) {
    atome_acts *a = acts;
    if (!a || !L || !w || !in) return NAN;
    a->ready = 0;
    model_off o;
    const atm_config *cfg = &L->cfg;
    if (resolve(L, &o) != 0 || B < 1 || T < 1 || B > a->Bmax || T > a->Tmax) return NAN;
    if (cfg->d_model != a->cfg.d_model || cfg->n_layers != a->cfg.n_layers || cfg->vocab != a->cfg.vocab ||
        cfg->pathways != a->cfg.pathways ||
        ((cfg->pathways & ATM_PATH_ATTN) && (cfg->d_head != a->cfg.d_head || cfg->top_k != a->cfg.top_k)))
        return NAN;
    const int C = cfg->d_model, V = cfg->vocab, K = cfg->kernel, DH = cfg->d_head, TK = cfg->top_k;
    const int P = a->P, N = B * T, pw = cfg->pathways;
    const size_t NM = a->NM, SC = NM * (size_t)C;
    for (int i = 0; i < N; i++)
        if (in[i] >= V || (tgt && tgt[i] >= V)) return NAN;
    memcpy(a->in, in, (size_t)N);
    if (tgt) memcpy(a->tgt, tgt, (size_t)N);
    a->B = B; a->T = T;

    atm_embed_forward(a->h, in, w + o.embed, NULL, N, T, C);
    for (int l = 0; l < cfg->n_layers; l++) {
        const blk_off *bo = &o.blk[l];
        const float *h = a->h + (size_t)l * SC;
        float *hn = a->h + (size_t)(l + 1) * SC;
        float *u = a->u + (size_t)l * SC;
        float *r = a->r + (size_t)l * NM * P;
        const float *paths[ATM_ATOME_MAX_PATHS];
        int np = 0;
        atm_layernorm_forward(u, a->ln_mean + (size_t)l * NM, a->ln_rstd + (size_t)l * NM,
                              h, w + bo->ln_g, w + bo->ln_b, N, C);
        if (pw & ATM_PATH_ATTN) {    /* the router's and the attention's products of u: one call */
            float *const outs[4] = { r, a->q + (size_t)l * NM * DH, a->k + (size_t)l * NM * DH, a->v + (size_t)l * SC };
            const float *const ws[4] = { w + bo->router, w + bo->wq, w + bo->wk, w + bo->wv };
            const int ocs[4] = { P, DH, DH, C };
            atm_matmul_forward_many(4, outs, u, ws, N, C, ocs);
        } else {
            atm_matmul_forward(r, u, w + bo->router, N, C, P);
        }
        if (pw & ATM_PATH_CONV) {
            float *cv = a->conv + (size_t)l * SC;
            atm_atome_conv_forward(cv, u, w + bo->conv, a->scratch, B, T, C, K);
            paths[np++] = cv;
        }
        if (pw & ATM_PATH_SSM) {
            float *so = a->ssm_o + (size_t)l * SC;
            atm_atome_ssm_forward(a->ssm_s + (size_t)l * SC, so, u, w + bo->ssm_a, w + bo->ssm_b,
                                  w + bo->ssm_c, a->scratch, B, T, C);
            paths[np++] = so;
        }
        if (pw & ATM_PATH_ATTN) {
            float *q = a->q + (size_t)l * NM * DH, *k = a->k + (size_t)l * NM * DH;
            float *v = a->v + (size_t)l * SC, *at = a->att + (size_t)l * SC;
            if (cfg->attn_window > 0 && cfg->attn_window < T)
                attn_forward_span(at, a->att_idx + (size_t)l * NM * TK, a->att_p + (size_t)l * NM * TK,
                                  q, k, v, a->attn_scratch, B, T, DH, C, TK, cfg->attn_window,
                                  atm_atome_attn_select, atm_softmax);
            else
                atm_atome_attn_forward(at, a->att_idx + (size_t)l * NM * TK, a->att_p + (size_t)l * NM * TK,
                                       q, k, v, a->attn_scratch, B, T, DH, C, TK);
            paths[np++] = at;
        }
        atm_atome_mix_forward(hn, r, h, paths, N, C, P);
    }
    const float *hL = a->h + (size_t)cfg->n_layers * SC;
    atm_layernorm_forward(a->uf, a->lnf_mean, a->lnf_rstd, hL, w + o.lnf_g, w + o.lnf_b, N, C);
    atm_matmul_forward(a->logits, a->uf, w + o.unembed, N, C, V);
    if (!tgt) return 0.0;
    double sum = atm_xent_forward(a->probs, a->logits, tgt, N, V);
    a->ready = 1;
    return sum / (double)N;
}

static void atome_backward(const atm_layout *L, const float *w, void *acts, float *dw) {
    atome_acts *a = acts;
    model_off o;
    if (!a || !a->ready || !L || !w || !dw || resolve(L, &o) != 0) return;
    const atm_config *cfg = &L->cfg;
    const int C = cfg->d_model, V = cfg->vocab, K = cfg->kernel, DH = cfg->d_head, TK = cfg->top_k;
    const int P = a->P, B = a->B, T = a->T, N = B * T, pw = cfg->pathways;
    const size_t NM = a->NM, SC = NM * (size_t)C, NC = (size_t)N * C;

    {   /* the head's gradients, zeroed in one parallel call */
        float *const zb[3] = { a->dlogits, a->du, a->dh };
        const size_t zn[3] = { (size_t)N * V, NC, NC };
        atm_zero_many(zb, zn, 3);
    }
    atm_xent_backward(a->dlogits, a->probs, a->tgt, N, V, 1.0f / (float)N);
    if (a->soft && a->soft_w != 0.0f) atm_xent_soft_adjust(a->dlogits, a->tgt, a->soft, a->soft_w, N, V, 1.0f / (float)N);
    atm_matmul_backward(a->du, dw + o.unembed, a->dlogits, a->uf, w + o.unembed, N, C, V);
    atm_layernorm_backward(a->dh, dw + o.lnf_g, dw + o.lnf_b, a->du, a->h + (size_t)cfg->n_layers * SC,
                           w + o.lnf_g, a->lnf_mean, a->lnf_rstd, N, C);
    for (int l = cfg->n_layers - 1; l >= 0; l--) {
        const blk_off *bo = &o.blk[l];
        const float *u = a->u + (size_t)l * SC, *r = a->r + (size_t)l * NM * P;
        const float *paths[ATM_ATOME_MAX_PATHS];
        int np = 0;
        if (pw & ATM_PATH_CONV) paths[np++] = a->conv + (size_t)l * SC;
        if (pw & ATM_PATH_SSM) paths[np++] = a->ssm_o + (size_t)l * SC;
        if (pw & ATM_PATH_ATTN) paths[np++] = a->att + (size_t)l * SC;
        /* every buffer this layer accumulates into, zeroed in one parallel
         * call (du and the attention's were last read by the layer above) */
        float *zb[ATM_ATOME_MAX_PATHS + 4];
        size_t zn[ATM_ATOME_MAX_PATHS + 4];
        int nz = 0;
        for (int i = 0; i < P; i++) { zb[nz] = a->dpath[i]; zn[nz++] = NC; }
        zb[nz] = a->du; zn[nz++] = NC;
        if (pw & ATM_PATH_ATTN) {
            zb[nz] = a->dq; zn[nz++] = (size_t)N * DH;
            zb[nz] = a->dk; zn[nz++] = (size_t)N * DH;
            zb[nz] = a->dv; zn[nz++] = NC;
        }
        atm_zero_many(zb, zn, nz);
        memset(a->drl, 0, sizeof(float) * (size_t)N * P);
        atm_atome_mix_backward(a->drl, a->dpath, a->dh, r, paths, N, C, P);

        atm_matmul_backward(a->du, dw + bo->router, a->drl, u, w + bo->router, N, C, P);
        np = 0;
        if (pw & ATM_PATH_CONV)
            atm_atome_conv_backward(a->du, dw + bo->conv, a->dpath[np++], u, w + bo->conv, a->scratch, B, T, C, K);
        if (pw & ATM_PATH_SSM)
            atm_atome_ssm_backward(a->du, dw + bo->ssm_a, dw + bo->ssm_b, dw + bo->ssm_c, a->dpath[np++], u,
                                   a->ssm_s + (size_t)l * SC, w + bo->ssm_a, w + bo->ssm_b, w + bo->ssm_c,
                                   a->scratch, B, T, C);
        if (pw & ATM_PATH_ATTN) {
            const float *q = a->q + (size_t)l * NM * DH, *k = a->k + (size_t)l * NM * DH;
            const float *v = a->v + (size_t)l * SC;
            atm_atome_attn_backward(a->dq, a->dk, a->dv, a->dpath[np++], a->att_idx + (size_t)l * NM * TK,
                                    a->att_p + (size_t)l * NM * TK, q, k, v, B, T, DH, C, TK);
            float *const dws[3] = { dw + bo->wq, dw + bo->wk, dw + bo->wv };
            const float *const douts[3] = { a->dq, a->dk, a->dv };
            const float *const ws[3] = { w + bo->wq, w + bo->wk, w + bo->wv };
            const int ocs[3] = { DH, DH, C };
            atm_matmul_backward_many(3, a->du, dws, douts, u, ws, N, C, ocs);   /* du += q's, then k's, then v's */
        }
        /* dh_l = dh_{l+1} (residual) + LN_l^T du */
        atm_layernorm_backward(a->dh, dw + bo->ln_g, dw + bo->ln_b, a->du, a->h + (size_t)l * SC,
                               w + bo->ln_g, a->ln_mean + (size_t)l * NM, a->ln_rstd + (size_t)l * NM, N, C);
    }
    atm_embed_backward(dw + o.embed, NULL, a->in, a->dh, N, T, C);
}

static const float *atome_logits(void *acts) {
    atome_acts *a = acts;
    return a ? a->logits : NULL;
}

/* ------------------------------------------------------------------------- */
/* streaming generation                                                       */

typedef struct {
    atm_config cfg;
    model_off o;
    int W, P;
    uint64_t pos;            /* positions fed so far */
    float *w;                /* [n_params] private copy of the effective weights */
    float *x, *x2, *u;       /* [C] residual stream (x, next x2) and normalised input */
    float *paths[ATM_ATOME_MAX_PATHS]; /* [C] each */
    float *r;                /* [P] */
    float *q;                /* [DH] */
    float *logits;           /* [V] */
    float *ssm_a;            /* [L][C] tanh(a_raw) */
    float *ssm_s;            /* [L][C] SSM state, never reset */
    float *hist;             /* [L][K-1][C] ring: u of position p at slot p % (K-1) */
    float *kc;               /* [L][W][DH] ring: k of position p at slot p % W */
    float *vc;               /* [L][W][C]  ring: v of position p at slot p % W */
    float sel_s[ATM_ATOME_MAX_TOPK];
    int32_t sel_i[ATM_ATOME_MAX_TOPK];
    atm_atome_tap_fn tap;    /* statistics hook (calibration), or NULL */
    void *tap_ctx;
    float *mem;
} atome_gen;

void atm_atome_gen_tap(void *gen, atm_atome_tap_fn fn, void *ctx) {
    atome_gen *g = gen;
    if (!g) return;
    g->tap = fn;
    g->tap_ctx = ctx;
}
#define TAP(what, layer, v, n) do { if (g->tap) g->tap(g->tap_ctx, what, layer, v, n); } while (0)

/* Window cap: the K/V cache is L*W*(DH+C) floats; 2^20 positions is far past
 * any use and keeps that product in range. */
#define ATOME_GEN_MAX_WINDOW (1 << 20)

static void *atome_gen_new(const atm_layout *L, const float *w, int window) {
    model_off o;
    if (!L || !w || window < 1 || window > ATOME_GEN_MAX_WINDOW || resolve(L, &o) != 0) return NULL;
    const atm_config *c = &L->cfg;
    const int at = (c->pathways & ATM_PATH_ATTN) != 0, cv = (c->pathways & ATM_PATH_CONV) != 0;
    const size_t C = (size_t)c->d_model, Ln = (size_t)c->n_layers, V = (size_t)c->vocab;
    const size_t DH = at ? (size_t)c->d_head : 0, W = at ? (size_t)window : 0;
    const size_t KH = cv ? (size_t)c->kernel - 1 : 0;
    atome_gen *g = calloc(1, sizeof *g);
    if (!g) return NULL;
    g->cfg = *c; g->o = o; g->W = window; g->P = popcount3(c->pathways);
    size_t total = L->n_params + 3 * C + ATM_ATOME_MAX_PATHS * C + (size_t)g->P + DH + V
                 + 2 * Ln * C + Ln * KH * C + Ln * W * (DH + C);
    g->mem = calloc(total, sizeof(float));
    if (!g->mem) { free(g); return NULL; }
    float *f = g->mem;
    g->w = f; f += L->n_params;
    memcpy(g->w, w, sizeof(float) * L->n_params);
    g->x = f; f += C;
    g->x2 = f; f += C;
    g->u = f; f += C;
    for (int i = 0; i < ATM_ATOME_MAX_PATHS; i++) { g->paths[i] = f; f += C; }
    g->r = f; f += g->P;
    g->q = f; f += DH;
    g->logits = f; f += V;
    g->ssm_a = f; f += Ln * C;
    g->ssm_s = f; f += Ln * C;
    g->hist = f; f += Ln * KH * C;
    g->kc = f; f += Ln * W * DH;
    g->vc = f;
    if (c->pathways & ATM_PATH_SSM)
        for (size_t l = 0; l < Ln; l++)
            for (size_t i = 0; i < C; i++) g->ssm_a[l * C + i] = tanhf(g->w[o.blk[l].ssm_a + i]);
    return g;
}

static const float *atome_gen_step(void *gen, int token) {
    atome_gen *g = gen;
    if (!g) return NULL;
    const atm_config *c = &g->cfg;
    const int C = c->d_model, V = c->vocab, K = c->kernel, DH = c->d_head, TK = c->top_k;
    const int P = g->P, pw = c->pathways, W = g->W;
    const float *w = g->w;
    const uint64_t pos = g->pos;
    if (token < 0 || token >= V) token = 0;
    memcpy(g->x, w + g->o.embed + (size_t)token * C, sizeof(float) * (size_t)C);
    for (int l = 0; l < c->n_layers; l++) {
        const blk_off *bo = &g->o.blk[l];
        float *u = g->u;
        const float *paths[ATM_ATOME_MAX_PATHS];
        int np = 0;
        TAP(ATM_TAP_X, l, g->x, C);
        atm_layernorm_forward(u, NULL, NULL, g->x, w + bo->ln_g, w + bo->ln_b, 1, C);
        TAP(ATM_TAP_U, l, u, C);
        atm_matmul_forward(g->r, u, w + bo->router, 1, C, P);
        if (pw & ATM_PATH_CONV) {
            float *out = g->paths[np];
            const float *cw = w + bo->conv;
            float *hist = g->hist + (size_t)l * (K - 1) * C;
            int jmax = (uint64_t)(K - 1) < pos ? K - 1 : (int)pos;
            for (int i = 0; i < C; i++) {               /* same term order as the training conv */
                float acc = 0.0f;
                for (int j = 0; j <= jmax; j++) {
                    const float *src = j == 0 ? u : hist + (size_t)((pos - (uint64_t)j) % (uint64_t)(K - 1)) * C;
                    acc += cw[(size_t)i * K + j] * src[i];
                }
                out[i] = acc;
            }
            if (K > 1) memcpy(hist + (size_t)(pos % (uint64_t)(K - 1)) * C, u, sizeof(float) * (size_t)C);
            paths[np] = out; np++;
        }
        if (pw & ATM_PATH_SSM) {
            float *out = g->paths[np];
            float *s = g->ssm_s + (size_t)l * C;
            const float *a = g->ssm_a + (size_t)l * C, *b = w + bo->ssm_b, *co = w + bo->ssm_c;
            for (int i = 0; i < C; i++) { s[i] = b[i] * u[i] + a[i] * s[i]; out[i] = co[i] * s[i]; }
            TAP(ATM_TAP_S, l, out, C);
            paths[np] = out; np++;
        }
        if (pw & ATM_PATH_ATTN) {
            float *out = g->paths[np];
            float *kc = g->kc + (size_t)l * W * DH, *vc = g->vc + (size_t)l * W * C;
            const size_t slot = (size_t)(pos % (uint64_t)W);
            atm_matmul_forward(g->q, u, w + bo->wq, 1, C, DH);
            atm_matmul_forward(kc + slot * DH, u, w + bo->wk, 1, C, DH);
            atm_matmul_forward(vc + slot * C, u, w + bo->wv, 1, C, C);
            TAP(ATM_TAP_Q, l, g->q, DH);
            TAP(ATM_TAP_K, l, kc + slot * DH, DH);
            TAP(ATM_TAP_V, l, vc + slot * C, C);
            const float scale = 1.0f / sqrtf((float)DH);
            const uint64_t n = pos + 1 < (uint64_t)W ? pos + 1 : (uint64_t)W;  /* cached positions */
            const uint64_t first = pos + 1 - n;                                 /* oldest cached */
            int keff = (uint64_t)TK < n ? TK : (int)n, cnt = 0;
            for (uint64_t pp = first; pp <= pos; pp++) {
                const size_t slot_j = (size_t)(pp % (uint64_t)W);
                const float *kj = kc + slot_j * DH;
                float dot = 0.0f;                        /* e order from 0, as the training scores */
                for (int e = 0; e < DH; e++) dot += g->q[e] * kj[e];
                atm_atome_topk_insert(g->sel_s, g->sel_i, &cnt, keff, dot * scale, (int32_t)slot_j);
            }
            atm_softmax(g->sel_s, keff);
            memset(out, 0, sizeof(float) * (size_t)C);
            for (int s = 0; s < keff; s++) axpyf(out, g->sel_s[s], vc + (size_t)g->sel_i[s] * C, C);
            paths[np] = out; np++;
        }
        atm_atome_mix_forward(g->x2, g->r, g->x, paths, 1, C, P);
        float *tmp = g->x; g->x = g->x2; g->x2 = tmp;
    }
    TAP(ATM_TAP_X, c->n_layers, g->x, C);
    atm_layernorm_forward(g->u, NULL, NULL, g->x, w + g->o.lnf_g, w + g->o.lnf_b, 1, C);
    TAP(ATM_TAP_U, c->n_layers, g->u, C);
    atm_matmul_forward(g->logits, g->u, w + g->o.unembed, 1, C, V);
    TAP(ATM_TAP_LOGITS, -1, g->logits, V);
    g->pos = pos + 1;
    return g->logits;
}
#undef TAP

static void atome_gen_free(void *gen) {
    atome_gen *g = gen;
    if (!g) return;
    free(g->mem);
    free(g);
}

static void atome_set_soft_targets(void *acts, const float *q, float w) {
    atome_acts *a = acts;
    if (!a) return;
    a->soft = q;
    a->soft_w = q ? w : 0.0f;
}

const atm_family atm_family_atome = {
    "atome", atome_layout, atome_acts_new, atome_acts_free, atome_forward, atome_backward,
    atome_logits, atome_gen_new, atome_gen_step, atome_gen_free, atome_set_soft_targets
};
