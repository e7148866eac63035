/* core/engine.c — integer inference of the atome family, one byte per step.
 * Contract in engine.h; formats, rounding and the derivation of every shift
 * in docs/fixed-point.md. Freestanding: integers only, no library calls
 * (the compiler may emit its own helpers for 64-bit multiply/divide).
 *
 * Notation in comments: "Qn" = integer / 2^n. FX = residual fractional bits
 * (header), FU = fractional bits of a LayerNorm output (aux of its gamma
 * entry), FS = SSM state fractional bits (aux of SSM_A). A ternary tensor's
 * scale is alpha = mant * 2^-exp; an int16 vector's element is v * 2^-exp.
 *
 * Reading order: helpers, LayerNorm, the arena, the three pathways (conv,
 * SSM, attention), the output head, and step(), which runs them.
 *
 * Speed: every product and hot loop goes through the kernel set a step
 * gets from core/engine_select.c (engine_select.h: the choice of kernels,
 * the ternary products; included at the end); the plain-C kernels are in core/engine_ref.c, the
 * instruction-set versions in core/engine_x86.c, engine_wasm.c, engine_m0.c,
 * engine_m3.c and the .S files; all bit-identical (docs/fixed-point.md §9). */
#include "engine.h"
#include "engine_select.h"
#include "fixmath.h"

/* ---- small helpers ---- */

/* Pieces of the model that step() runs once each, inlined where they are
 * used (the micro:bit's stack has no room for more frames). */
#define STEP_PART static inline __attribute__((always_inline))

static const int32_t X_LIM = (1 << 30) - 1;   /* residual / state clamp: differences fit int32 */

static int16_t rd16(const atm_tview *t, uint32_t i) { return atm_rd_i16le(t->data + 2 * i); }

/* v * mul rounded to 2^-s (half up). fast: 1 <= s <= 62 and mul fits int32
 * (every well-formed model: the multipliers are products of a Q15 weight
 * and a 16-bit mantissa, < 2^31), computed as (v mul + 2^(s-1)) >> s with
 * a 32 x 32 -> 64-bit product; otherwise atm_rnd64 (saturating left shifts,
 * s >= 63 -> 0). Both give the same value where both apply. */
typedef struct { int64_t mul; int s, fast; } scaler;
static scaler mk_scaler(int64_t mul, int s) {
    scaler k;
    k.mul = mul; k.s = s; k.fast = s >= 1 && s <= 62 && mul >= -INT32_MAX && mul <= INT32_MAX;
    return k;
}
/* (the half is made here, not in mk_scaler: the kernels take mul and s, and
 * a 64-bit shift is a libgcc call on the M0) */
static int64_t scale(const scaler *k, int64_t v) {
    return k->fast ? atm_asr64(v * k->mul + ((int64_t)1 << (k->s - 1)), k->s) : atm_rnd64(v * k->mul, k->s);
}
/* atm_rnd64(v, s) for |v| < 2^30 and s >= 0 in 32-bit arithmetic (for s
 * >= 31 every such v rounds to 0) */
static int32_t rnd32(int32_t v, int s) {
    if (s <= 0) return v;
    if (s >= 31) return 0;
    return (v + ((int32_t)1 << (s - 1))) >> s;
}
/* residual update with its clamp */
static int32_t add_x(int32_t x, const scaler *k, int64_t v) {
    return atm_clamp32((int64_t)x + scale(k, v), X_LIM);
}
/* x[c] = clamp(x[c] + round(v[c] * mul / 2^s)) for c < n */
static void add_scaled(const atm_kset *ks, int32_t *x, const int32_t *v, int n, const scaler *k) {
    if (k->fast) ks->addsc(x, v, n, (int32_t)k->mul, k->s);
    else for (int c = 0; c < n; c++) x[c] = add_x(x[c], k, v[c]);
}

#if defined(__ARM_ARCH_6M__)
#define NO_HW_DIV 1   /* the Cortex-M0 divides in libgcc */
#else
#define NO_HW_DIV 0
#endif
/* floor(a / b + 1/2) for b >= 1: by a shift for a power-of-two b where there
 * is no divider (d = 64), else in 32-bit arithmetic where a and b fit (the
 * usual case: libgcc's 64-bit division is a long routine on the M0) */
static int64_t div_round(int64_t a, int64_t b) {
    if (NO_HW_DIV && b > 0 && (b & (b - 1)) == 0 && a > -((int64_t)1 << 62) && a < ((int64_t)1 << 62))
        return atm_asr64(a + b / 2, atm_bitlen32((uint32_t)b) - 1);
    if (a > -((int64_t)1 << 30) && a < ((int64_t)1 << 30) && b < (1 << 16)) {
        const int32_t a2 = (int32_t)a + (int32_t)b / 2, q = a2 / (int32_t)b;
        return a2 - q * (int32_t)b < 0 ? q - 1 : q;
    }
    int64_t q = (a + b / 2) / b, r = (a + b / 2) - q * b;
    return r < 0 ? q - 1 : q;
}

/* floor(a / d + 1/2) for a < 2^62, d >= 1: in 32 bits where a fits (one
 * division where there is a divider), by a shift for a power-of-two d where
 * the division would be a libgcc call (the 64-bit one everywhere but x86 and
 * wasm64, any one on the M0) */
static uint64_t udiv_round(uint64_t a, uint32_t d) {
    const int pow2 = (d & (d - 1u)) == 0;
    if (a < ((uint64_t)1 << 31) && !(NO_HW_DIV && pow2)) return ((uint32_t)a + d / 2u) / d;
    if (pow2) return (a + d / 2u) >> (atm_bitlen32(d) - 1);
    return (a + d / 2u) / d;
}

/* ---- LayerNorm ------------------------------------------------------------
 * u = (x - mean) / sqrt(var + eps) * gamma + beta, biased variance, eps 1e-5
 * as the trainer. x is centred, scaled by 2^-k (floor) so that max |y| is
 * 2^14..2^15 - 1 (k may be negative), var = sum y^2 / d (64-bit), eps is converted to the
 * units of y, 1/sqrt comes from atm_rsqrt64, and each output is
 * y * (r >> 15) * g rescaled to Q(FU) plus beta rescaled to Q(FU). */
#define EPS_Q32 42950   /* round(1e-5 * 2^32) */

static void layernorm(const atm_kset *ks, const int32_t *x, int d, int fx, const atm_tview *G, const atm_tview *B,
                      int16_t *u) {
    const int fu = G->aux;
    int64_t sum;
    int32_t lo, hi;
    ks->ln_stats(x, d, &sum, &lo, &hi);
    const int32_t mean = (int32_t)div_round(sum, d);
    /* max |x - mean| is reached at the smallest or the largest x */
    const uint32_t a0 = atm_abs32(hi - mean), a1 = atm_abs32(lo - mean);
    const uint32_t maxabs = a0 > a1 ? a0 : a1;
    const scaler sb = mk_scaler(1, B->exp - fu);
    if (maxabs == 0) {
        for (int i = 0; i < d; i++) u[i] = atm_sat16(scale(&sb, rd16(B, (uint32_t)i)));
        return;
    }
    /* y = (x - mean) * 2^-k, floor for k > 0: -2^15 <= y < 2^15 fits int16 (kept in u) */
    const int k = atm_bitlen32(maxabs) - 15;
    const int64_t vs = ks->ln_center(x, d, mean, k, u);
    uint64_t var = udiv_round((uint64_t)vs, (uint32_t)d);
    /* eps in units of y^2: 1e-5 * 2^(2 (fx - k)) = EPS_Q32 * 2^(2 (fx - k) - 32) */
    const int e2 = 2 * (fx - k) - 32;
    uint64_t eps = e2 >= 0 ? (uint64_t)EPS_Q32 << (e2 > 46 ? 46 : e2) : (uint64_t)atm_rnd64(EPS_Q32, -e2);
    int sh;
    const uint32_t r = atm_rsqrt64(var + eps, &sh);
    const int32_t r15 = (int32_t)(r >> 15);                 /* [2^14, 2^15] */
    const scaler sg = mk_scaler(1, sh + G->exp - fu - 15);
    if (sg.fast && sb.s >= -16 && sb.s <= 30) {             /* the kernel's ranges */
        ks->ln_out(u, G->data, B->data, d, r15, sg.s, sb.s);
    } else {
        for (int i = 0; i < d; i++) {
            const int32_t gr = r15 * rd16(G, (uint32_t)i);  /* |gr| <= 2^30 */
            u[i] = atm_sat16(scale(&sg, (int64_t)u[i] * gr) + scale(&sb, rd16(B, (uint32_t)i)));
        }
    }
}

/* ---- arena ---- */

static uint32_t max3(uint32_t a, uint32_t b, uint32_t c) {
    uint32_t m = a > b ? a : b;
    return m > c ? m : c;
}

typedef struct {
    size_t x, ssm, wide, sel_s, sel_i, rw, u, q, kc, vc, kexp, vexp, ring, ringexp, total;
} arena_plan;

static size_t round4(size_t n) { return (n + 3u) & ~(size_t)3u; }

/* Words of `wide` before the top-k selection stored in its tail: at least
 * d (the mixed row) and tk (the softmax scratch), and at least max(vocab, d,
 * dh) (the logits, the q/k/v rows) when the model has no attention. */
static uint32_t wide_cap(const atm_mconfig *c) {
    const uint32_t d = (uint32_t)c->d_model, at = (c->pathways & ATM_PATH_ATTN) != 0;
    const uint32_t dh = at ? (uint32_t)c->d_head : 0, tk = at ? (uint32_t)c->top_k : 0;
    const uint32_t wl = max3(max3((uint32_t)c->vocab, d, dh), d + 2 * tk, 3 * tk);
    return wl - 2 * tk;
}

static void plan(const atm_model *m, uint32_t W, arena_plan *p) {
    const atm_mconfig *c = &m->cfg;
    const size_t d = (size_t)c->d_model, L = (size_t)c->n_layers;
    const int at = (c->pathways & ATM_PATH_ATTN) != 0, sm = (c->pathways & ATM_PATH_SSM) != 0;
    const size_t dh = at ? (size_t)c->d_head : 0, tk = at ? (size_t)c->top_k : 0, w = at ? W : 0;
    const size_t kh = (c->pathways & ATM_PATH_CONV) ? (size_t)c->kernel - 1 : 0;
    size_t o = 0;
    p->x = o; o += 4 * d;
    p->ssm = o; o += sm ? 4 * L * d : 0;
    /* wide: the logits, the q/k/v rows, and in attention the scores of a
     * run of slots, the softmax scratch and the mixed row; the top-k
     * selection (scores and slots, 2 * tk words) lives in its last words, so
     * wide holds at least d + 2 tk and 3 tk words (see wide_cap) */
    const size_t wl = max3(max3((uint32_t)c->vocab, (uint32_t)d, (uint32_t)dh), (uint32_t)(d + 2 * tk), (uint32_t)(3 * tk));
    p->wide = o; o += 4 * wl;
    p->sel_s = p->wide + 4 * (wl - 2 * tk);
    p->sel_i = p->wide + 4 * (wl - tk);
    p->rw = o; o += 16;
    p->u = o; o += 2 * d;
    p->q = o; o = round4(o + 2 * dh);
    p->kc = o; o += L * w * dh;
    p->vc = o; o += L * w * d;
    p->kexp = o; o += L * w;
    p->vexp = o; o += L * w;
    p->ring = o; o += L * kh * d;
    p->ringexp = o; o += L * kh;
    p->total = round4(o);
}

size_t atm_engine_arena_bytes(const atm_model *m, int window) {
    if (!m) return 0;
    if (window == 0) window = m->cfg.window;
    if (window < 1 || window > ATM_MAX_WINDOW) return 0;
    arena_plan p;
    plan(m, (uint32_t)window, &p);
    return p.total;
}

atm_status atm_engine_init(atm_engine *e, const atm_model *m, int window, void *arena, size_t arena_len) {
    if (!e || !m || !arena) return ATM_E_ARG;
    if (window == 0) window = m->cfg.window;
    if (window < 1 || window > ATM_MAX_WINDOW) return ATM_E_WINDOW;
    arena_plan p;
    plan(m, (uint32_t)window, &p);
    if (arena_len < p.total || ((uintptr_t)arena & 3u) != 0) return ATM_E_ARENA;
    uint8_t *b = (uint8_t *)arena;
    e->m = m;
    e->window = window;
    e->kernel = ATM_KERNEL_AUTO;
    e->x = (int32_t *)(void *)(b + p.x);
    e->ssm = (int32_t *)(void *)(b + p.ssm);
    e->wide = (int32_t *)(void *)(b + p.wide);
    e->sel_s = (int32_t *)(void *)(b + p.sel_s);
    e->sel_i = (int32_t *)(void *)(b + p.sel_i);
    e->rw = (int32_t *)(void *)(b + p.rw);
    e->u = (int16_t *)(void *)(b + p.u);
    e->q = (int16_t *)(void *)(b + p.q);
    e->kc = (int8_t *)(b + p.kc);
    e->vc = (int8_t *)(b + p.vc);
    e->kexp = b + p.kexp;
    e->vexp = b + p.vexp;
    e->ring = (int8_t *)(b + p.ring);
    e->ringexp = b + p.ringexp;
    e->tab = 0;
    e->ox = 0;
    for (size_t i = 0; i < p.total; i++) b[i] = 0;
    atm_engine_reset(e);
    return ATM_OK;
}

void atm_engine_reset(atm_engine *e) {
    if (!e || !e->m) return;
    const atm_mconfig *c = &e->m->cfg;
    if (c->pathways & ATM_PATH_SSM)
        for (int32_t i = 0; i < c->n_layers * c->d_model; i++) e->ssm[i] = 0;
    e->kv_next = e->kv_count = 0;
    e->ring_next = e->ring_count = 0;
    e->pos_lo = e->pos_hi = 0;
}

/* ---- pathways ---- */

/* conv: acc[c] = sum_j trit[c][j] * u_{t-j}[c] in Q(FU) (ring rows are
 * int8 << exponent), x += r * alpha * acc; then u_t enters the ring. The
 * trits are decoded in chunks of whole channels (ks->conv_ch trits at
 * most) and summed tap by tap (atm_ek_conv_*); acc collects in `wide`
 * (free until the attention pathway). */
static void conv_path(atm_engine *e, const atm_kset *ks, int l, int32_t r, int fu) {
    const atm_model *m = e->m;
    const int d = m->cfg.d_model, K = m->cfg.kernel, kh = K - 1;
    const atm_tview C = atm_tensor(m, ATM_T_CONV, l);
    ATM_EK_DECODE_BUF(buf, ATM_CONV_CH_MAX + 16);
    int8_t *ring = e->ring + (size_t)l * (size_t)kh * (size_t)d;
    uint8_t *rexp = e->ringexp + (size_t)l * (size_t)kh;
    const scaler sc = mk_scaler(atm_smull(r, (int32_t)C.mant), C.exp + fu + 15 - m->cfg.fx);
    const int taps = 1 + ((int)e->ring_count < kh ? (int)e->ring_count : kh);
    int32_t *acc = e->wide;
    const int g = ks->conv_ch / K;                         /* channels per decoded chunk */
    const int8_t *cached = atm_conv_cache(e, l);   /* the layer's trits in the table RAM, or NULL */
#if defined(__ARM_ARCH_6M__) && defined(ATM_M0_ASM)
    /* the M0's Thumb-1 taps (K = 5, all taps) straight from step: the ring
     * rows and shifts found once a layer, not once a chunk, and kept in
     * wide after conv's sums (the micro:bit's stack has no room) */
    if (ks->conv == atm_ek_conv_m0 && K == 5 && taps == 5 && kh == 4 && (uint32_t)d + 8u <= wide_cap(&m->cfg)) {
        const int8_t **rp = (const int8_t **)(void *)(acc + d);
        int32_t *ex = acc + d + 4;
        atm_ek_conv_rows4(ring, d, rexp, (int)e->ring_next, rp, ex);
        if ((uint32_t)d + 8u + ((uint32_t)(d * K) + ATM_EK_BUF - ATM_EK_CH + 3u) / 4u <= wide_cap(&m->cfg)) {
            /* the layer's trits decoded at once, after them in wide */
            const int8_t *t = atm_ek_decode(C.data, m->encoding, 0, d * K, (int8_t *)(void *)(acc + d + 8));
            atm_ek_conv5_m0(t, d, e->u, rp, ex, acc);
        } else
            for (int c0 = 0; c0 < d; c0 += g) {
                const int nc = d - c0 < g ? d - c0 : g;
                const int8_t *t = atm_ek_decode(C.data, m->encoding, (uint32_t)c0 * (uint32_t)K, nc * K, buf);
                atm_ek_conv5_m0(t, nc, e->u + c0, rp, ex, acc + c0);
                for (int j = 0; j < 4; j++) rp[j] += nc;
            }
    } else
#endif
    for (int c0 = 0; c0 < d; c0 += g) {
        const int nc = d - c0 < g ? d - c0 : g;
        const int8_t *t = cached ? cached + c0 * K : atm_ek_decode(C.data, m->encoding, (uint32_t)c0 * (uint32_t)K, nc * K, buf);
        ks->conv(t, K, nc, e->u + c0, ring + c0, d, rexp, (int)e->ring_next, kh, taps, acc + c0);
    }
    add_scaled(ks, e->x, acc, d, &sc);
    if (kh > 0) rexp[e->ring_next] = ks->quant16(e->u, d, ring + (size_t)e->ring_next * (size_t)d);
}

/* ssm: s = a * s + (b c) * u in Q(FS); x += r * s. */
static void ssm_path(atm_engine *e, const atm_kset *ks, int l, int32_t r, int fu) {
    const atm_model *m = e->m;
    const int d = m->cfg.d_model;
    const atm_tview A = atm_tensor(m, ATM_T_SSM_A, l), BC = atm_tensor(m, ATM_T_SSM_BC, l);
    const int fs = A.aux;
    const scaler sb = mk_scaler(1, BC.exp + fu - fs);
    const scaler sx = mk_scaler(r, 15 + fs - m->cfg.fx);
    int32_t *s = e->ssm + (size_t)l * (size_t)d;
    if (sb.s >= -32 && sb.s <= 62) {                        /* the kernel's range */
        ks->ssm(s, A.data, BC.data, e->u, d, sb.s);
    } else {
        for (int c = 0; c < d; c++) {
            /* a s: Q15 times Q(FS), rounded back to Q(FS) (|a s| < 2^45) */
            const int64_t v = atm_asr64((int64_t)rd16(&A, (uint32_t)c) * s[c] + (1 << 14), 15)
                            + scale(&sb, (int64_t)rd16(&BC, (uint32_t)c) * e->u[c]);
            s[c] = atm_clamp32(v, X_LIM);
        }
    }
    add_scaled(ks, e->x, s, d, &sx);
}

#define TOPK_PAIRS 32   /* the M3's insertion on the stack: at most 32 kept */

/* the scores of `run` cached positions from slot j into out */
static void run_scores(atm_engine *e, const atm_kset *ks, const int8_t *kc, const uint8_t *kexp, int dh, int64_t ms,
                       int sbase, uint32_t j, uint32_t run, int32_t *out) {
    ks->dots(e->q, kc + (size_t)j * (size_t)dh, dh, (int)run, out);
    ks->scores(out, kexp + j, (int)run, ms, sbase, out);
}

/* the window's scores, oldest first, into wide[0, n) (the ring wraps at most once) */
static void window_scores(atm_engine *e, const atm_kset *ks, const int8_t *kc, const uint8_t *kexp, int dh,
                          int64_t ms, int sbase, uint32_t n, uint32_t oldest) {
    const uint32_t W = (uint32_t)e->window;
    const uint32_t run = W - oldest < n ? W - oldest : n;
    run_scores(e, ks, kc, kexp, dh, ms, sbase, oldest, run, e->wide);
    if (run < n) run_scores(e, ks, kc, kexp, dh, ms, sbase, 0, n - run, e->wide + run);
}

/* positions counted from the oldest -> cache slots */
static void to_slots(int32_t *si, int cnt, uint32_t oldest, uint32_t W) {
    for (int k = 0; k < cnt; k++) {
        const uint32_t s = oldest + (uint32_t)si[k];          /* < 2 W */
        si[k] = (int32_t)(s >= W ? s - W : s);
    }
}

#if (defined(ATM_KS_M3) && defined(ATM_M3_ASM)) || (defined(__ARM_ARCH_6M__) && defined(ATM_M0_ASM))
/* the kept pairs pr[2 ..] (score, position) -> sel_s, sel_i */
static void unpair(const int32_t *pr, int cnt, int32_t *ss, int32_t *si) {
    for (int k = 0; k < cnt; k++) { ss[k] = pr[2 * k + 2]; si[k] = pr[2 * k + 3]; }
}
#endif

/* the sorted insertion a run of at most cap slots at a time: a later
 * position replaces the last kept one only if strictly greater (ties keep
 * the older); on the M3 engine_m3.S's, over (score, slot) pairs behind a
 * sentinel on the stack */
static void insert_runs(atm_engine *e, const atm_kset *ks, const int8_t *kc, const uint8_t *kexp, int dh, int64_t ms,
                        int sbase, uint32_t n, uint32_t oldest, int keff, uint32_t cap) {
    const uint32_t W = (uint32_t)e->window;
    int32_t *wide = e->wide, *ss = e->sel_s, *si = e->sel_i;
#if defined(ATM_KS_M3) && defined(ATM_M3_ASM)
    int32_t pr[2 * TOPK_PAIRS + 2];
    pr[0] = INT32_MAX;
    pr[1] = 0;
#endif
    int cnt = 0;
    uint32_t j = oldest, left = n;
    while (left > 0) {
        uint32_t run = W - j < left ? W - j : left;
        if (run > cap) run = cap;
        run_scores(e, ks, kc, kexp, dh, ms, sbase, j, run, wide);
#if defined(ATM_KS_M3) && defined(ATM_M3_ASM)
        if (keff <= TOPK_PAIRS) cnt = atm_ek_topk_ins_m3(wide, (int)run, (int32_t)j, pr, cnt, keff);
        else
#endif
        for (uint32_t i = 0; i < run; i++) {
            const int32_t sc = wide[i];
            int pos;
            if (cnt < keff) pos = cnt++;
            else if (sc > ss[keff - 1]) pos = keff - 1;
            else continue;
            for (; pos > 0 && ss[pos - 1] < sc; pos--) { ss[pos] = ss[pos - 1]; si[pos] = si[pos - 1]; }
            ss[pos] = sc;
            si[pos] = (int32_t)(j + i);
        }
        j += run;
        if (j == W) j = 0;
        left -= run;
    }
#if defined(ATM_KS_M3) && defined(ATM_M3_ASM)
    if (keff <= TOPK_PAIRS) unpair(pr, cnt, ss, si);
#endif
}

/* attention's kept set: the keff best of the n cached positions into
 * sel_s / sel_i (slots), their scores computed into wide (see attn_path) */
static void select_topk(atm_engine *e, const atm_kset *ks, const int8_t *kc, const uint8_t *kexp, int dh, int64_t ms,
                        int sbase, uint32_t n, uint32_t oldest, int keff, uint32_t cap) {
    const uint32_t W = (uint32_t)e->window;
    int32_t *wide = e->wide;
    int32_t *ss = e->sel_s, *si = e->sel_i;
#if defined(__ARM_ARCH_6M__)
    const int select = 2 * n <= cap;
#else
    /* x86: the branch-free ranks of the set's top-k where the window's scores fit (n <= 64) */
    const int select = ks->topk && n <= 64 && n <= cap;
#endif
#if defined(__ARM_ARCH_6M__) && defined(ATM_M0_ASM)
    /* the Cortex-M0: the window's scores into wide[0, n), then engine_m0.S's
     * insertion over (score, position) pairs behind a sentinel in wide's
     * words after them (the micro:bit's stack has no room for them) */
    if (n + 2u * (uint32_t)keff + 2u <= cap) {
        window_scores(e, ks, kc, kexp, dh, ms, sbase, n, oldest);
        int32_t *pr = wide + n;
        pr[0] = INT32_MAX;
        pr[1] = 0;
        const int cnt = atm_ek_topk_ins_m0(wide, (int)n, 0, pr, 0, keff);
        unpair(pr, cnt, ss, si);
        to_slots(si, cnt, oldest, W);
        return;
    }
#endif
    if (!select) {
        insert_runs(e, ks, kc, kexp, dh, ms, sbase, n, oldest, keff, cap);
        return;
    }
    window_scores(e, ks, kc, kexp, dh, ms, sbase, n, oldest);
    if (!ks->topk || ks->topk(wide, (int)n, keff, ss, si) != 0)
    atm_ek_topk_set(wide, (int)n, keff, wide + n, ss, si);
    to_slots(si, keff, oldest, W);
}

/* q: int16 with the smallest exponent that fits, returned; q =
 * atm_sat16(rnd32(w, qe)) without the branches: below 31 the shift leaves
 * every |rounded value| <= 32767 (round(-a) >= -round(a)), at 31 rnd32
 * gives 0 */
static inline int quant_q(int16_t *q, const int32_t *w, int dh) {
    uint32_t mx = 0;
    for (int i = 0; i < dh; i++) { uint32_t a = atm_abs32(w[i]); if (a > mx) mx = a; }
    const int qe = atm_fit_shift(mx, 32767);
    if (qe == 0) for (int i = 0; i < dh; i++) q[i] = (int16_t)w[i];
    else if (qe < 31) {
        const int32_t h = (int32_t)1 << (qe - 1);
        for (int i = 0; i < dh; i++) q[i] = (int16_t)((w[i] + h) >> qe);
    } else for (int i = 0; i < dh; i++) q[i] = 0;
    return qe;
}

/* attention's q, k and v: q into e->q (int16, its exponent returned), k
 * and v of the current position into cache slot `slot` (int8 rows with
 * their exponents, |matvec sums| < 2^25). The sums go to wide[0, dh),
 * [dh, 2 dh), [2 dh, 2 dh + d) where they fit (the bit-plane kernel
 * builds its tables once for the three), else one after another into
 * wide[0, ...). */
STEP_PART int attn_qkv(atm_engine *e, const atm_kset *ks, int l, atm_vin *in, uint32_t slot, const atm_tview *Q,
                       const atm_tview *Kt, const atm_tview *V) {
    const atm_model *m = e->m;
    const int d = m->cfg.d_model, dh = m->cfg.d_head, W = e->window;
    int32_t *wide = e->wide, *wk = wide, *wv = wide;
    if ((uint32_t)(2 * dh + d) <= wide_cap(&m->cfg)) {
        const atm_tview T[3] = { *Q, *Kt, *V };
        const uint32_t rows[3] = { (uint32_t)dh, (uint32_t)dh, (uint32_t)d };
        atm_matvecs(T, rows, 3, m->encoding, (uint32_t)d, in, wide);
        wk = wide + dh;
        wv = wide + 2 * dh;
    } else
        atm_matvec(Q, m->encoding, (uint32_t)dh, (uint32_t)d, in, wide);
    const int qe = quant_q(e->q, wide, dh);
    const size_t lw = (size_t)l * (size_t)W;
    if (wk == wide) atm_matvec(Kt, m->encoding, (uint32_t)dh, (uint32_t)d, in, wide);
    e->kexp[lw + slot] = ks->quant32(wk, dh, e->kc + (lw + slot) * (size_t)dh);
    if (wv == wide) atm_matvec(V, m->encoding, (uint32_t)d, (uint32_t)d, in, wide);
    e->vexp[lw + slot] = ks->quant32(wv, d, e->vc + (lw + slot) * (size_t)d);
    return qe;
}

/* attention's mix of the kept set (sel_s: scores, sel_i: slots): softmax
 * in Q15, the weights realigned to the largest value exponent (those that
 * round to 0 add nothing and are left out: about one in ten for the board
 * model at window 32), x += r * alpha_v * 2^(emax - FU) * sum_i w_i v_i /
 * 2^15, r in Q15; the sums (|.| < 2^22) collect in wide, free again after
 * the scores. */
STEP_PART void attn_mix(atm_engine *e, const atm_kset *ks, int l, int32_t r, int fu, const atm_tview *V, int keff,
                        uint32_t cap) {
    const atm_model *m = e->m;
    const int d = m->cfg.d_model;
    int32_t *wide = e->wide;
    const int8_t *vc = e->vc + (size_t)l * (size_t)e->window * (size_t)d;
    const uint8_t *vexp = e->vexp + (size_t)l * (size_t)e->window;
    ks->softmax(e->sel_s, keff, e->sel_s, (uint32_t *)wide);   /* weights, Q15; wide is free */
    int emax = 0;
    for (int i = 0; i < keff; i++) if (vexp[e->sel_i[i]] > emax) emax = vexp[e->sel_i[i]];
    int nz = 0;
    for (int i = 0; i < keff; i++) {
        const int32_t w = rnd32(e->sel_s[i], emax - vexp[e->sel_i[i]]);
        if (w == 0) continue;
        e->sel_s[nz] = w;
        e->sel_i[nz++] = e->sel_i[i];
    }
    const scaler sv = mk_scaler(atm_smull(r, (int32_t)V->mant), V->exp + fu + 30 - m->cfg.fx - emax);
#if defined(__ARM_ARCH_6M__) && defined(ATM_M0_ASM)
    /* the M0: the pairs in wide after the mixed row (cap: the selection's
     * sel_s / sel_i, which the mix reads, lie beyond) */
    if (nz > 0 && ks->mix == atm_ek_mix_m0 && d >= 4 && d % 4 == 0 && ((uintptr_t)vc & 3u) == 0 &&
        (uint32_t)(d + 2 * nz) <= cap)
        atm_ek_mix4w_m0(e->sel_s, e->sel_i, vc, nz, d, wide, wide + d);
    else
#else
    (void)cap;
#endif
    if (nz > 0) ks->mix(e->sel_s, e->sel_i, vc, nz, d, wide);
    else for (int c = 0; c < d; c++) wide[c] = 0;
    add_scaled(ks, e->x, wide, d, &sv);
}

/* attention: k, v of the current position enter cache slot `slot`; scores
 * q . k_j / sqrt(dh) over the n cached positions, oldest first, in Q16; the
 * top_k highest are kept (a later position replaces the last kept one only
 * if strictly greater, so ties keep the older); softmax in Q15; the kept
 * value rows are mixed with the weights realigned to the largest exponent.
 * The scores are computed a run of consecutive slots at a time into `wide`
 * (at most cap of them: the ring wraps at most once, wide holds cap). */
static void attn_path(atm_engine *e, const atm_kset *ks, int l, int32_t r, int fu, atm_vin *in,
                      uint32_t slot, uint32_t n, uint32_t oldest) {
    const atm_model *m = e->m;
    const int dh = m->cfg.d_head, W = e->window, tk = m->cfg.top_k;
    const atm_tview Q = atm_tensor(m, ATM_T_WQ, l), Kt = atm_tensor(m, ATM_T_WK, l), V = atm_tensor(m, ATM_T_WV, l);
    const int qe = attn_qkv(e, ks, l, in, slot, &Q, &Kt, &V);
    /* score scale: alpha_q alpha_k / sqrt(dh) * 2^(16 - 2 FU)
     *   = ms * 2^(32 - Q.exp - K.exp - rsh) * 2^(16 - 2 FU), ms <= 2^30 */
    int rsh;
    const uint32_t rs = atm_rsqrt64((uint64_t)dh, &rsh);
    /* mantissas below 2^16: their product fits 32 bits (atm_umull: no libgcc 64-bit multiply on the M0) */
    const int64_t ms = (int64_t)(atm_umull((Q.mant * Kt.mant) >> 2, rs >> 14) >> 16);
    const int sbase = Q.exp + Kt.exp + rsh + 2 * fu - 48 - qe;
    const int keff = (uint32_t)tk < n ? tk : (int)n;
    const uint32_t cap = wide_cap(&m->cfg);   /* wide's words before the selection */
    /* The keff best positions by (score, older first): a position ranks
     * above another if its score is higher or, equal, if it is older. Only
     * the set matters (the softmax and the mix are exact integer sums), not
     * its order. On the Cortex-M0, when the window's scores fit in wide twice
     * over, they are computed oldest first into wide[0, n) and the set is
     * taken by selection (atm_ek_topk_set: 2 % fewer instructions a byte on
     * the micro:bit); elsewhere, and otherwise, run by run by sorted insertion
     * (a later position replaces the last kept one only if strictly greater,
     * so ties keep the older), which is faster on the M3 and on x86. */
    select_topk(e, ks, e->kc + (size_t)l * (size_t)W * (size_t)dh, e->kexp + (size_t)l * (size_t)W, dh, ms, sbase,
                n, oldest, keff, cap);
    attn_mix(e, ks, l, r, fu, &V, keff, cap);
}

/* ---- one step ---- */

/* What a step computes after the blocks: the V logits (STEP_LOGITS, returns
 * them), only the index of their first maximum (STEP_ARGMAX, returns
 * e->wide + that index), or nothing (STEP_FEED, returns e->wide: the final
 * LayerNorm and the output head change no state). Four arguments and a
 * pointer back, so the wrappers below are tail calls or nearly (the
 * micro:bit's stack has little room to spare). */
enum { STEP_LOGITS, STEP_ARGMAX, STEP_FEED };
static const int32_t *step(atm_engine *e, int byte, int32_t *trace, int mode);

const int32_t *atm_engine_step(atm_engine *e, int byte) { return step(e, byte, 0, STEP_LOGITS); }

const int32_t *atm_engine_step_traced(atm_engine *e, int byte, int32_t *trace) {
    return step(e, byte, trace, STEP_LOGITS);
}

int atm_engine_step_argmax(atm_engine *e, int byte) {
    const int32_t *p = step(e, byte, 0, STEP_ARGMAX);
    return p ? (int)(p - e->wide) : -1;
}

int atm_engine_feed(atm_engine *e, int byte) { return step(e, byte, 0, STEP_FEED) ? 0 : -1; }

#ifdef ATM_ARM_ASM
#define FIRST_ABOVE atm_ek_first_above        /* engine_arm.S */
#else
#define FIRST_ABOVE atm_ek_first_above_ref
#endif
int atm_ek_argmax_scaled(const int32_t *v, int n, int32_t mul, int s,
                         void (*sc)(int32_t *v, int n, int32_t mul, int s)) {
    if (n < 1) return 0;
    int best = 0;
    int32_t braw = v[0], bf = v[0];
    sc(&bf, 1, mul, s);
    for (int i = 1; i < n; i++) {
        i += FIRST_ABOVE(v + i, n - i, braw);   /* below: f(v) <= f(braw) = bf, no new maximum */
        if (i == n) break;
        int32_t f = v[i];
        sc(&f, 1, mul, s);
        braw = v[i];
        if (f > bf) { bf = f; best = i; }
    }
    return best;
}

/* final LayerNorm and unembedding: the logits in Q16 into e->wide, or
 * (STEP_ARGMAX) only the index of their first maximum, returned. Inlined
 * into step: the micro:bit's stack has no room for another frame. */
STEP_PART int head(atm_engine *e, const atm_kset *ks, atm_vin *in, int32_t *tab, int mode) {
    const atm_model *m = e->m;
    const int d = m->cfg.d_model, V = m->cfg.vocab;
    const atm_tview G = atm_tensor(m, ATM_T_LNF_G, 0), B = atm_tensor(m, ATM_T_LNF_B, 0);
    layernorm(ks, e->x, d, m->cfg.fx, &G, &B, e->u);
    atm_vin_prep(in, e, ks, e->u, d, tab);
    const atm_tview U = atm_tensor(m, ATM_T_UNEMBED, 0);
    atm_matvec(&U, m->encoding, (uint32_t)V, (uint32_t)d, in, e->wide);
    const scaler sl = mk_scaler(U.mant, U.exp + G.aux - ATM_LOGIT_FRAC);
    /* the scale is monotone: for the argmax only the raw values that set a record are scaled */
    if (mode == STEP_ARGMAX && sl.fast && sl.mul > 0) return atm_ek_argmax_scaled(e->wide, V, (int32_t)sl.mul, sl.s, ks->scale);
    if (sl.fast) ks->scale(e->wide, V, (int32_t)sl.mul, sl.s);
    else for (int v = 0; v < V; v++) e->wide[v] = atm_clamp32(scale(&sl, e->wide[v]), X_LIM);
    int best = 0;
    if (mode == STEP_ARGMAX)
        for (int v = 1; v < V; v++) if (e->wide[v] > e->wide[best]) best = v;
    return best;
}

/* the embedding of byte: x = trit * round(alpha_E * 2^FX) */
STEP_PART void embed(atm_engine *e, int byte) {
    const atm_model *m = e->m;
    const int d = m->cfg.d_model;
    const atm_tview T = atm_tensor(m, ATM_T_EMBED, 0);
    const int64_t me = atm_clamp32(atm_rnd64(T.mant, T.exp - m->cfg.fx), X_LIM);
    ATM_EK_DECODE_BUF(buf, ATM_EK_BUF);
    for (int i = 0; i < d; i += ATM_EK_CH) {
        int nn = d - i < ATM_EK_CH ? d - i : ATM_EK_CH;
        const int8_t *t = atm_ek_decode(T.data, m->encoding, (uint32_t)byte * (uint32_t)d + (uint32_t)i, nn, buf);
        for (int k = 0; k < nn; k++) e->x[i + k] = (int32_t)(t[k] * me);
    }
}

/* the router of layer l (after its LayerNorm, in): its logits in Q16, the
 * pathway weights in Q15 into e->rw */
STEP_PART void route(atm_engine *e, const atm_kset *ks, int l, int fu, atm_vin *in) {
    const atm_model *m = e->m;
    const int P = m->n_paths;
    const atm_tview R = atm_tensor(m, ATM_T_ROUTER, l);
    atm_matvec(&R, m->encoding, (uint32_t)P, (uint32_t)m->cfg.d_model, in, e->rw);
    for (int p = 0; p < P; p++)
        e->rw[p] = atm_clamp32(atm_rnd64(atm_smull(e->rw[p], (int32_t)R.mant), R.exp + fu - 16), X_LIM);
    uint32_t ex[4];                               /* P <= 3 */
    ks->softmax(e->rw, P, e->rw, ex);
}

/* the router weights of layer l into trace[3 l ..] (conv, ssm, attn; 0 for a pathway the model lacks) */
STEP_PART void trace_layer(const atm_engine *e, int l, int32_t *trace) {
    const int pw = e->m->cfg.pathways;
    int32_t *t = trace + 3 * l;
    int np = 0;
    t[0] = (pw & ATM_PATH_CONV) ? e->rw[np++] : 0;
    t[1] = (pw & ATM_PATH_SSM) ? e->rw[np++] : 0;
    t[2] = (pw & ATM_PATH_ATTN) ? e->rw[np++] : 0;
}

/* after the blocks: the attention cache and the conv ring move on a position */
STEP_PART void advance(atm_engine *e, uint32_t slot, uint32_t n) {
    const atm_mconfig *c = &e->m->cfg;
    const uint32_t W = (uint32_t)e->window;
    if (c->pathways & ATM_PATH_ATTN) {
        e->kv_next = slot + 1 == W ? 0 : slot + 1;
        e->kv_count = n;
    }
    if ((c->pathways & ATM_PATH_CONV) && c->kernel > 1) {
        const uint32_t kh = (uint32_t)c->kernel - 1;
        e->ring_next = e->ring_next + 1 == kh ? 0 : e->ring_next + 1;
        if (e->ring_count < kh) e->ring_count++;
    }
    if (++e->pos_lo == 0) e->pos_hi++;
}

/* One byte through the model: embedding; per layer a LayerNorm, the
 * router and the weighted pathways added to the residual x; the head. */
static const int32_t *step(atm_engine *e, int byte, int32_t *trace, int mode) {
    if (!e || !e->m) return 0;
    const atm_mconfig *c = &e->m->cfg;
    const int d = c->d_model, pw = c->pathways;
    atm_vin in;
    int32_t *tab;
    const atm_kset *ks = atm_select_kset(e, &tab);
    embed(e, byte < 0 || byte >= c->vocab ? 0 : byte);

    const uint32_t W = (uint32_t)e->window;
    const uint32_t slot = e->kv_next;
    const uint32_t n = e->kv_count + 1 < W ? e->kv_count + 1 : W;
    const uint32_t oldest = (slot + 1u + W - n) % W;
    for (int l = 0; l < c->n_layers; l++) {
        const atm_tview G = atm_tensor(e->m, ATM_T_LN_G, l), B = atm_tensor(e->m, ATM_T_LN_B, l);
        const int fu = G.aux;
        layernorm(ks, e->x, d, c->fx, &G, &B, e->u);
        atm_vin_prep(&in, e, ks, e->u, d, tab);
        route(e, ks, l, fu, &in);
        int np = 0;
        if (pw & ATM_PATH_CONV) conv_path(e, ks, l, e->rw[np++], fu);
        if (pw & ATM_PATH_SSM) ssm_path(e, ks, l, e->rw[np++], fu);
        if (pw & ATM_PATH_ATTN) attn_path(e, ks, l, e->rw[np++], fu, &in, slot, n, oldest);
        if (trace) trace_layer(e, l, trace);
    }

    const int best = mode == STEP_FEED ? 0 : head(e, ks, &in, tab, mode);
    advance(e, slot, n);
    return e->wide + best;
}

/* ---- the kernels ----
 * The choice of kernels and the ternary products (engine_select.h) are
 * core/engine_select.c, compiled here: the build recipe that `atome header`
 * publishes with atome_model.c (fwimage/fwimage.c) names engine.c and not
 * engine_select.c. */
#define ATM_ENGINE_SELECT_IN_ENGINE_C 1
#include "engine_select.c"
