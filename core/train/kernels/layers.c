/* core/train/kernels/layers.c — reference float32 layers (see layers.h). Plain C,
 * compiled with -ffp-contract=off; the trainer may use libm here. The _ref
 * functions are the reference twins of the dispatched kernels (kernels.c for
 * the matmuls, kernels_layers.c for layernorm, cross-entropy, softmax and
 * exp). */
#include "../layers.h"
#include <math.h>
#include <string.h>

void atm_matmul_forward_ref(float *out, const float *inp, const float *w, int N, int IC, int OC) {
    for (int n = 0; n < N; n++) {
        const float *x = inp + (size_t)n * IC;
        float *o = out + (size_t)n * OC;
        for (int oc = 0; oc < OC; oc++) {
            const float *wr = w + (size_t)oc * IC;
            float acc = 0.0f;
            for (int i = 0; i < IC; i++) acc += x[i] * wr[i];
            o[oc] = acc;
        }
    }
}

void atm_matmul_backward_ref(float *dinp, float *dw, const float *dout, const float *inp,
                             const float *w, int N, int IC, int OC) {
    if (dinp) {
        for (int n = 0; n < N; n++) {
            const float *d = dout + (size_t)n * OC;
            float *di = dinp + (size_t)n * IC;
            for (int oc = 0; oc < OC; oc++) {
                const float *wr = w + (size_t)oc * IC;
                float g = d[oc];
                for (int i = 0; i < IC; i++) di[i] += g * wr[i];
            }
        }
    }
    if (dw) atm_matmul_backward_dw_ref(dw, dout, OC, inp, N, IC, OC);
}

void atm_matmul_backward_dw_ref(float *dw, const float *dout, int ldd, const float *inp, int N, int IC, int OC) {
    for (int oc = 0; oc < OC; oc++) {
        float *dwr = dw + (size_t)oc * IC;
        for (int n = 0; n < N; n++) {
            float g = dout[(size_t)n * ldd + oc];
            const float *x = inp + (size_t)n * IC;
            for (int i = 0; i < IC; i++) dwr[i] += g * x[i];
        }
    }
}

void atm_layernorm_forward_ref(float *out, float *mean, float *rstd, const float *inp,
                           const float *g, const float *b, int N, int C) {
    for (int n = 0; n < N; n++) {
        const float *x = inp + (size_t)n * C;
        float *o = out + (size_t)n * C;
        float m = 0.0f;
        for (int i = 0; i < C; i++) m += x[i];
        m /= (float)C;
        float v = 0.0f;
        for (int i = 0; i < C; i++) { float dx = x[i] - m; v += dx * dx; }
        v /= (float)C;
        float s = 1.0f / sqrtf(v + ATM_LN_EPS);
        for (int i = 0; i < C; i++) o[i] = (x[i] - m) * s * g[i] + b[i];
        if (mean) mean[n] = m;
        if (rstd) rstd[n] = s;
    }
}

void atm_layernorm_backward_ref(float *dinp, float *dg, float *db, const float *dout,
                            const float *inp, const float *g, const float *mean,
                            const float *rstd, int N, int C) {
    for (int n = 0; n < N; n++) {
        const float *x = inp + (size_t)n * C;
        const float *d = dout + (size_t)n * C;
        float m = mean[n], s = rstd[n];
        float dnorm_mean = 0.0f, dnorm_norm_mean = 0.0f;
        for (int i = 0; i < C; i++) {
            float xh = (x[i] - m) * s;
            float dn = g[i] * d[i];
            dnorm_mean += dn;
            dnorm_norm_mean += dn * xh;
        }
        dnorm_mean /= (float)C;
        dnorm_norm_mean /= (float)C;
        for (int i = 0; i < C; i++) {
            float xh = (x[i] - m) * s;
            float dn = g[i] * d[i];
            if (db) db[i] += d[i];
            if (dg) dg[i] += xh * d[i];
            if (dinp) dinp[(size_t)n * C + i] += (dn - dnorm_mean - xh * dnorm_norm_mean) * s;
        }
    }
}

#define ATM_INV_SQRT2 0.70710678118654752440f
#define ATM_INV_SQRT2PI 0.39894228040143267794f

void atm_gelu_forward(float *out, const float *inp, int n) {
    for (int i = 0; i < n; i++) {
        float x = inp[i];
        out[i] = 0.5f * x * (1.0f + erff(x * ATM_INV_SQRT2));
    }
}

void atm_gelu_backward(float *dinp, const float *inp, const float *dout, int n) {
    for (int i = 0; i < n; i++) {
        float x = inp[i];
        float cdf = 0.5f * (1.0f + erff(x * ATM_INV_SQRT2));
        float pdf = ATM_INV_SQRT2PI * expf(-0.5f * x * x);
        dinp[i] += dout[i] * (cdf + x * pdf);
    }
}

void atm_silu_forward(float *out, const float *inp, int n) {
    for (int i = 0; i < n; i++) { float x = inp[i]; out[i] = x / (1.0f + expf(-x)); }
}

void atm_silu_backward(float *dinp, const float *inp, const float *dout, int n) {
    for (int i = 0; i < n; i++) {
        float x = inp[i];
        float s = 1.0f / (1.0f + expf(-x));
        dinp[i] += dout[i] * (s * (1.0f + x * (1.0f - s)));
    }
}

void atm_embed_forward(float *out, const uint8_t *tok, const float *table, const float *pos,
                       int N, int T, int C) {
    for (int n = 0; n < N; n++) {
        const float *e = table + (size_t)tok[n] * C;
        float *o = out + (size_t)n * C;
        if (pos) {
            const float *p = pos + (size_t)(n % T) * C;
            for (int i = 0; i < C; i++) o[i] = e[i] + p[i];
        } else {
            memcpy(o, e, sizeof(float) * (size_t)C);
        }
    }
}

void atm_embed_backward(float *dtable, float *dpos, const uint8_t *tok, const float *dout,
                        int N, int T, int C) {
    for (int n = 0; n < N; n++) {
        const float *d = dout + (size_t)n * C;
        if (dtable) { float *e = dtable + (size_t)tok[n] * C; for (int i = 0; i < C; i++) e[i] += d[i]; }
        if (dpos) { float *p = dpos + (size_t)(n % T) * C; for (int i = 0; i < C; i++) p[i] += d[i]; }
    }
}

void atm_exp_ref(float *y, const float *x, int n) {
    for (int i = 0; i < n; i++) y[i] = expf(x[i]);
}

void atm_softmax_ref(float *x, int n) {
    float mx = x[0];
    for (int i = 1; i < n; i++) if (x[i] > mx) mx = x[i];
    float s = 0.0f;
    for (int i = 0; i < n; i++) { x[i] = expf(x[i] - mx); s += x[i]; }
    float inv = 1.0f / s;
    for (int i = 0; i < n; i++) x[i] *= inv;
}

double atm_xent_forward_ref(float *probs, const float *logits, const uint8_t *tgt, int N, int V) {
    double sum = 0.0;
    for (int n = 0; n < N; n++) {
        const float *l = logits + (size_t)n * V;
        float *p = probs + (size_t)n * V;
        float mx = l[0];
        for (int i = 1; i < V; i++) if (l[i] > mx) mx = l[i];
        const float lt = tgt ? l[tgt[n]] : 0.0f;   /* read before p (which may alias l) is written */
        float s = 0.0f;
        for (int i = 0; i < V; i++) { p[i] = expf(l[i] - mx); s += p[i]; }
        if (tgt) {
            /* -log softmax computed from the logits, not from the rounded probability */
            float lse = logf(s);
            sum += (double)(lse - (lt - mx));
        }
        float inv = 1.0f / s;
        for (int i = 0; i < V; i++) p[i] *= inv;
    }
    return sum;
}

void atm_xent_backward_ref(float *dlogits, const float *probs, const uint8_t *tgt, int N, int V,
                       float scale) {
    for (int n = 0; n < N; n++) {
        const float *p = probs + (size_t)n * V;
        float *d = dlogits + (size_t)n * V;
        for (int i = 0; i < V; i++) d[i] += scale * p[i];
        d[tgt[n]] -= scale;
    }
}

void atm_xent_soft_adjust(float *dlogits, const uint8_t *tgt, const float *q, float w, int N, int V, float scale) {
    const float sw = scale * w;
    for (int n = 0; n < N; n++) {
        const float *qn = q + (size_t)n * V;
        float *d = dlogits + (size_t)n * V;
        for (int i = 0; i < V; i++) d[i] -= sw * qn[i];
        d[tgt[n]] += sw;
    }
}
