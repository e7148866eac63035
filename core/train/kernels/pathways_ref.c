/* core/train/kernels/pathways_ref.c — the atome pathway primitives
 * (atome_layers.h): their plain-C references, conv, SSM, top-k attention and
 * the router's mixing, forward and backward, and the windowed attention
 * forward of training. The model (atome.c) calls the un-suffixed names,
 * which run the layer kernel set in use (kernels_layers.c); the SIMD sets
 * reproduce these bits (see the header). */
#include "../atome_layers.h"
#include "../layers.h"
#include "vecf.h"
#include <math.h>
#include <string.h>

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

void atm_atome_attn_forward_window(float *out, int32_t *idx, float *p, const float *q,
                                   const float *k, const float *v, float *scratch,
                                   int B, int T, int DH, int C, int TK, int W) {
    attn_forward_span(out, idx, p, q, k, v, scratch, B, T, DH, C, TK, W, atm_atome_attn_select, atm_softmax);
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
