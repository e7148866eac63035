/* core/engine_ref.c — the engine's plain-C kernels (engine_kernels.h): the
 * twins of the instruction-set kernels and the kernels of the portable,
 * pair-sum table, bit-plane and SSE2 sets. A file of its own so that the
 * micro:bit build, whose engine is compiled for size (-Os: its 16 KiB of RAM
 * has no room for atm_engine_step's -O2 frame), compiles these leaf loops
 * for speed (mcu/CMakeLists.txt). Freestanding, integers only. */
#include "engine.h"
#include "engine_kernels.h"
#include "fixmath.h"

static const int32_t X_LIM = (1 << 30) - 1;   /* as engine.c: the residual / state clamp */

/* ---- plain-C kernels (engine_kernels.h): the twins of the SIMD kernels,
 * run by the portable, pair-sum table and SSE2 sets ---- */

/* 16-entry blocks with a constant trip count, which compilers vectorise
 * where the target has SIMD */
void atm_ek_dots_ref(const int16_t *q, const int8_t *k, int dh, int n, int32_t *out) {
    for (int j = 0; j < n; j++, k += dh) {
        int32_t acc = 0;
        int t = 0;
        for (; t + 16 <= dh; t += 16) {
            int32_t a = 0;
            for (int i = 0; i < 16; i++) a += q[t + i] * k[t + i];
            acc += a;
        }
        for (; t < dh; t++) acc += q[t] * k[t];
        out[j] = acc;
    }
}

void atm_ek_mix_ref(const int32_t *w, const int32_t *idx, const int8_t *base, int n, int d, int32_t *out) {
    for (int c = 0; c < d; c++) out[c] = 0;
    for (int i = 0; i < n; i++) {
        const int32_t wi = w[i];
        const int8_t *vi = base + (size_t)idx[i] * (size_t)d;
        for (int c = 0; c < d; c++) out[c] += wi * vi[c];
    }
}

void atm_ek_addsc_ref(int32_t *x, const int32_t *v, int n, int32_t mul, int s) {
    const int64_t half = (int64_t)1 << (s - 1);
    for (int c = 0; c < n; c++)
        x[c] = atm_clamp32((int64_t)x[c] + atm_asr64(atm_smull(v[c], mul) + half, s), X_LIM);
}

void atm_ek_scale_ref(int32_t *v, int n, int32_t mul, int s) {
    const int64_t half = (int64_t)1 << (s - 1);
    for (int c = 0; c < n; c++) v[c] = atm_clamp32(atm_asr64(atm_smull(v[c], mul) + half, s), X_LIM);
}

uint8_t atm_ek_quant32_ref(const int32_t *src, int n, int8_t *dst) {
    uint32_t mx = 0;
    for (int i = 0; i < n; i++) { uint32_t a = atm_abs32(src[i]); if (a > mx) mx = a; }
    const int sh = atm_fit_shift(mx, 127);
    const int32_t half = (int32_t)(((uint32_t)1 << sh) >> 1);
    for (int i = 0; i < n; i++) dst[i] = (int8_t)atm_clamp32(atm_asr32(src[i] + half, sh), 127);
    return (uint8_t)sh;
}

uint8_t atm_ek_quant16_ref(const int16_t *src, int n, int8_t *dst) {
    uint32_t mx = 0;
    for (int i = 0; i < n; i++) { uint32_t a = atm_abs32(src[i]); if (a > mx) mx = a; }
    const int sh = atm_fit_shift(mx, 127);
    const int32_t half = (1 << sh) >> 1;
    for (int i = 0; i < n; i++) dst[i] = (int8_t)atm_clamp32(atm_asr32(src[i] + half, sh), 127);
    return (uint8_t)sh;
}

void atm_ek_ln_stats_ref(const int32_t *x, int d, int64_t *sum, int32_t *lo, int32_t *hi) {
    int64_t s = 0;
    int32_t l = x[0], h = x[0];
    for (int i = 0; i < d; i++) {
        s += x[i];
        l = x[i] < l ? x[i] : l;
        h = x[i] > h ? x[i] : h;
    }
    *sum = s; *lo = l; *hi = h;
}

int64_t atm_ek_ln_center_ref(const int32_t *x, int d, int32_t mean, int k, int16_t *u) {
    int64_t vs = 0;
    if (k > 0) {
        for (int i = 0; i < d; i++) {
            const int32_t y = atm_asr32(x[i] - mean, k);
            u[i] = (int16_t)y;
            vs += (int64_t)(y * y);                   /* |y| <= 2^15: y^2 fits int32 */
        }
    } else {
        const int32_t m = (int32_t)1 << -k;
        for (int i = 0; i < d; i++) {
            const int32_t y = (x[i] - mean) * m;
            u[i] = (int16_t)y;
            vs += (int64_t)(y * y);                   /* |y| <= 2^15: y^2 fits int32 */
        }
    }
    return vs;
}

void atm_ek_ln_out_ref(int16_t *u, const uint8_t *g, const uint8_t *b, int d, int32_t r15, int sg, int sb) {
    const int64_t hg = (int64_t)1 << (sg - 1);
    const int32_t hb = sb >= 1 ? (int32_t)1 << (sb - 1) : 0, mb = sb >= 1 ? 1 : (int32_t)1 << -sb;
    const int s_b = sb >= 1 ? sb : 0;
    for (int i = 0; i < d; i++) {
        const int32_t gr = r15 * atm_rd_i16le(g + 2 * i);            /* |gr| <= 2^30 */
        const int32_t bt = atm_asr32(atm_rd_i16le(b + 2 * i) * mb + hb, s_b);   /* |b| 2^16 < 2^31 */
        u[i] = atm_sat16(atm_asr64(atm_smull(u[i], gr) + hg, sg) + bt);
    }
}

void atm_ek_ssm_ref(int32_t *s, const uint8_t *a, const uint8_t *bc, const int16_t *u, int d, int sb) {
    const int64_t hb = sb >= 1 ? (int64_t)1 << (sb - 1) : 0, mb = sb >= 1 ? 1 : (int64_t)1 << -sb;
    const int s_b = sb >= 1 ? sb : 0;
    for (int c = 0; c < d; c++) {
        /* a s: Q15 times Q(FS), rounded back to Q(FS) (|a s| < 2^45) */
        const int64_t v = atm_asr64(atm_smull(atm_rd_i16le(a + 2 * c), s[c]) + (1 << 14), 15)
                        + atm_asr64((int64_t)(atm_rd_i16le(bc + 2 * c) * u[c]) * mb + hb, s_b);
        s[c] = atm_clamp32(v, X_LIM);
    }
}

void atm_ek_conv_ref(const int8_t *t, int K, int nc, const int16_t *u, const int8_t *ring, int ld,
                     const uint8_t *rexp, int next, int kh, int taps, int32_t *acc) {
    for (int c = 0; c < nc; c++) acc[c] = t[c * K] * u[c];
    int slot = next;
    for (int j = 1; j < taps; j++) {
        slot = slot == 0 ? kh - 1 : slot - 1;
        const int8_t *rp = ring + (size_t)slot * (size_t)ld;
        const int s = rexp[slot];
        for (int c = 0; c < nc; c++) acc[c] += t[c * K + j] * (rp[c] * (1 << s));
    }
}

void atm_ek_softmax_q15(const int32_t *z, int n, int32_t *p, uint32_t *e) {
    int32_t mx = z[0];
    for (int i = 1; i < n; i++) if (z[i] > mx) mx = z[i];
    uint64_t sum = 0;
    for (int i = 0; i < n; i++) { e[i] = atm_exp_q16(atm_sat32((int64_t)z[i] - mx)); sum += e[i]; }
    const int ns = atm_bitlen64(sum) - 16;
    const uint32_t r = 0x7FFFFFFFu / (uint32_t)(sum >> ns);
    /* e r >> (16 + ns) from 32-bit products: e <= 2^24 = 2^16 eh + el, r <= 2^16 */
    for (int i = 0; i < n; i++)
        p[i] = (int32_t)(((e[i] >> 16) * r + (((e[i] & 0xFFFFu) * r) >> 16)) >> ns);
}

void atm_ek_scores_ref(const int32_t *dots, const uint8_t *kexp, int n, int64_t ms, int sbase, int32_t *out) {
    for (int j = 0; j < n; j++)
        out[j] = atm_clamp32(atm_rnd64(atm_smull(dots[j], (int32_t)ms), sbase - kexp[j]), X_LIM);   /* ms < 2^30 */
}

int atm_ek_topk_ins_ref(const int32_t *sc, int run, int32_t t0, int32_t *pr, int cnt, int keff) {
    for (int i = 0; i < run; i++) {
        const int32_t v = sc[i];
        int pos;                              /* the free slot, 1-based */
        if (cnt < keff) pos = ++cnt;
        else if (v > pr[2 * keff]) pos = keff;
        else continue;
        while (pr[2 * (pos - 1)] < v) {       /* the sentinel stops it at 1 */
            pr[2 * pos] = pr[2 * (pos - 1)];
            pr[2 * pos + 1] = pr[2 * pos - 1];
            pos--;
        }
        pr[2 * pos] = v;
        pr[2 * pos + 1] = t0 + i;
    }
    return cnt;
}

int atm_ek_first_above_ref(const int32_t *v, int n, int32_t t) {
    int i = 0;
    while (i < n && v[i] <= t) i++;
    return i;
}
