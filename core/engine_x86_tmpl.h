/* core/engine_x86_tmpl.h — the x86 engine kernels that have an AVX2 and an
 * AVX-512 version, written once: engine_x86.c includes this file once per
 * instruction set after defining the hooks below (as core/train does with
 * its kernels_x86*_tmpl.h); never included elsewhere. Each kernel returns
 * exactly the integers of its plain-C twin (engine_ref.c), for any length:
 * atm_ek_matvec_*, atm_ek_t5_to_t2_*, atm_ek_addsc_*, atm_ek_scale_*,
 * atm_ek_ln_out_*, atm_ek_ssm_*, atm_ek_scores_*.
 *
 * The includer defines:
 *   EX_SUFFIX, EX_ATTR       name suffix (EX(name) = name_SUFFIX), target attribute
 *   EX_V                     the full vector (__m256i, __m512i)
 *   vector operations on EX_V: EX_SET1_8 EX_AND EX_OR EX_SUB16 EX_SLLI16 EX_SRLI16
 *     EX_MULHI_U16 EX_MULLO16 EX_SHUF8 EX_MADD16 EX_SLLI64 EX_SRLI64
 *     EX_ADD64 EX_SUB64 EX_SLLV64 EX_MUL32 (vpmuldq) EX_SET1_16 EX_SET1_32
 *     EX_SET1_64 EX_BCAST128(m128i)
 *   byte products: EX_ZERO() EX_DP(acc, u, s) EX_FIN64(lo, hi) (EX(dot2) below)
 *   row products (ATOME01 rows, chunks of 16 bytes = 64 columns):
 *     EX_RACC, EX_RACC_ZERO(), EX_CHUNK(a, bytes, v, g)   a row's sum over
 *                              its chunks (bytes: chunk g as __m128i)
 *     EX_RACC_SUM(a)           eight int32 partial sums of that row
 *     EX_TAIL_BYTES(p, n)      a row's last n < 16 bytes, zeros after
 *     EX_CORR(v)               what every row's sum overcounts (__m256i)
 *     EX_STORE_ROWS(out, m, s) the first m (1..8) lanes of s to out
 *     64-column rows, EX_R64 rows per EX_V: EX_LOAD_ROWS(g, m, h) (rows
 *     [EX_R64 h, EX_R64 (h + 1)) of a group g of m rows, zeros past m),
 *     EX_REDUCE64(acc) (lane u: the sum of row u of the group)
 *     and EX_CORR64(v) (what those sums overcount)
 *   ATOME02 -> ATOME01: EX_T5_BYTES bytes a step, EX_LOAD_U8W(p) (them
 *     as 16-bit lanes), EX_T5_VALID(b, bad, c) (c where b <= bad, else 0),
 *     EX_T5_STORE(out, by) (10 bytes from each 128-bit lane), EX_T5_REST
 *     (the kernel for the groups left)
 *   elementwise, eight values at a time in 64-bit lanes: EX_M8 (a lane
 *     mask), EX_M8_ALL, EX_M8_FIRST(n), EX_TAIL_MASKED (1: the last
 *     n % 8 through masks; 0: through the twin's scalar formula),
 *     EX_LD32(p, k), EX_LD16(p, k) (eight int32 / int16 as int32, __m256i),
 *     EX_L (eight int64), EX_LB (a broadcast int64), EX_SH (a shift
 *     count), EX_LSET1(x), EX_SHIFT(s), EX_LMULB(a, M), EX_LMUL(a, b),
 *     EX_LEXT(a), EX_LADD, EX_LADDB(a, B), EX_LSRA(a, sh), EX_LSLL(a, c),
 *     EX_LCLAMP(a, L), EX_LST32(p, k, a), EX_LST16(p, k, a)
 *   scores, EX_QN int64 lanes of EX_V at a time: EX_Q_LDI32(p), EX_Q_LDU8(p),
 *     EX_Q_BAD(sv) (a lane outside 1..62), EX_SRAV64(v, sv),
 *     EX_CLAMP64(v, lim), EX_Q_ST32(p, v) */

#define EX_CAT2(a, b) a##_##b
#define EX_CAT(a, b) EX_CAT2(a, b)
#define EX(name) EX_CAT(name, EX_SUFFIX)

/* ---- ternary rows ---- */

/* Row sums as t lo + 256 (t + 1) hi (the unsigned low bytes lo and signed
 * high bytes hi of the activations, t + 1 >= 0): EX_DP(acc, u, s) adds the
 * products of the unsigned bytes of u by the signed bytes of s (summed in
 * pairs into int16 on AVX2, in fours into int32 on AVX-512), EX_FIN64(lo,
 * hi) makes the int32 sums. A byte shuffle maps each 2-bit code to t / t + 1. */
typedef struct { EX_V lo, hi; } EX(acc2);
static inline __attribute__((always_inline)) EX_ATTR EX(acc2) EX(acc2_zero)(void) {
    EX(acc2) a;
    a.lo = a.hi = EX_ZERO();
    return a;
}
static inline __attribute__((always_inline)) EX_ATTR EX(acc2) EX(dot2)(EX(acc2) a, EX_V lo, EX_V hi, EX_V code) {
    const EX_V lut_t = EX_SET1_32(-0x00FFFF00);   /* bytes 0, 1, 0, -1 (0xFF000100) */
    const EX_V lut_t1 = EX_SET1_32(0x00010201);    /* bytes 1, 2, 1, 0: t + 1 */
    a.lo = EX_DP(a.lo, lo, EX_SHUF8(lut_t, code));
    a.hi = EX_DP(a.hi, EX_SHUF8(lut_t1, code), hi);
    return a;
}

/* cols == 64: a row is 16 bytes, one EX_V holds EX_R64 rows (one per 128-bit
 * lane); field p of every lane is extracted with one shift and the
 * activations of field p are broadcast to every lane (EX(dot2)). 8 rows
 * are reduced together. */
static EX_ATTR void EX(matvec64)(const uint8_t *b, uint32_t rows, const atm_ek_vec *v, int32_t *out) {
    const EX_V m3 = EX_SET1_8(3);
    EX_V lo[4], hi[4];
    for (int p = 0; p < 4; p++) {
        lo[p] = EX_BCAST128(LOAD128(v->lo + 16 * p));
        hi[p] = EX_BCAST128(LOAD128(v->hi + 16 * p));
    }
    const __m256i corr = EX_CORR64(v);
    for (uint32_t r0 = 0; r0 < rows; r0 += 8) {
        const uint32_t m = rows - r0 < 8 ? rows - r0 : 8;
        EX_V acc[8 / EX_R64];
        UNROLL8
        for (int h = 0; h < 8 / EX_R64; h++) {
            const EX_V w = EX_LOAD_ROWS(b + (size_t)r0 * 16, m, h);
            EX(acc2) a = EX(acc2_zero)();
            UNROLL8
            for (int p = 0; p < 4; p++) a = EX(dot2)(a, lo[p], hi[p], EX_AND(EX_SRLI16(w, 2 * p), m3));
            acc[h] = EX_FIN64(a.lo, a.hi);
        }
        EX_STORE_ROWS(out + r0, m, _mm256_sub_epi32(EX_REDUCE64(acc), corr));
    }
}

/* a row of nfull whole chunks and tail bytes */
static inline __attribute__((always_inline)) EX_ATTR __m256i EX(row)(const uint8_t *rb, uint32_t nfull, uint32_t tail,
                                                                     const atm_ek_vec *v) {
    EX_RACC a = EX_RACC_ZERO();
    for (uint32_t g = 0; g < nfull; g++) a = EX_CHUNK(a, LOAD128(rb + 16 * g), v, g);
    if (tail) a = EX_CHUNK(a, EX_TAIL_BYTES(rb + 16 * nfull, tail), v, nfull);
    return EX_RACC_SUM(a);
}

/* rows in groups of 8 (the last one padded with zero vectors), reduced
 * together by hsum8 */
EX_ATTR void EX(atm_ek_matvec)(const uint8_t *b, uint32_t rows, uint32_t cols, const atm_ek_vec *v, int32_t *out) {
    if (cols == 64) { EX(matvec64)(b, rows, v, out); return; }
    const uint32_t nb = cols / 4, nfull = nb / 16, tail = nb % 16;
    const __m256i corr = EX_CORR(v);
    for (uint32_t r0 = 0; r0 < rows; r0 += 8) {
        const uint32_t m = rows - r0 < 8 ? rows - r0 : 8;
        __m256i acc[8];
        UNROLL8
        for (uint32_t u = 0; u < 8; u++)
            acc[u] = u < m ? EX(row)(b + (size_t)(r0 + u) * nb, nfull, tail, v) : _mm256_setzero_si256();
        EX_STORE_ROWS(out + r0, m, _mm256_sub_epi32(hsum8_avx2(acc), corr));
    }
}

/* ---- ATOME02 -> ATOME01 ----
 * EX_T5_BYTES bytes (a group is 4) at a time in 16-bit lanes: b = l + 9 q,
 * q = l2 + 9 q2 (floor(v / 9) = (v * 7282) >> 16, exact for v < 1024), the
 * codes of the digit pairs l, l2 and of q2 come from byte shuffles, code =
 * T9[l] | T9[l2] << 4 | T3[q2] << 8 (0 for bytes >= 243); pairs of codes
 * are joined by vpmaddwd (c0 + 1024 c1), pairs of those into 40-bit lanes,
 * and a byte shuffle packs the 5 bytes of each (10 per 128-bit lane). */
EX_ATTR void EX(atm_ek_t5_to_t2)(const uint8_t *p, uint32_t nbytes, uint32_t g0, uint32_t ng, uint8_t *out) {
    const EX_V t9 = EX_BCAST128(_mm_setr_epi8(T9V(0), T9V(1), T9V(2), T9V(3), T9V(4), T9V(5), T9V(6), T9V(7), T9V(8),
                                           0, 0, 0, 0, 0, 0, 0));
    const EX_V t3 = EX_BCAST128(_mm_setr_epi8(3, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0));
    const EX_V k9 = EX_SET1_16(9), kdiv = EX_SET1_16(7282), lo8 = EX_SET1_16(0xFF);
    const EX_V bad = EX_SET1_16(242), pair = EX_SET1_32(0x04000001);   /* words 1, 1024 */
    const EX_V low32 = EX_SET1_64(0xFFFFFFFF);
    const EX_V pack = EX_BCAST128(_mm_setr_epi8(0, 1, 2, 3, 4, 8, 9, 10, 11, 12, -1, -1, -1, -1, -1, -1));
    const uint32_t step = EX_T5_BYTES / 4;
    uint32_t g = 0, j = 4 * g0;
    for (; g + step <= ng && j + EX_T5_BYTES <= nbytes; g += step, j += EX_T5_BYTES, out += 5 * step) {
        const EX_V b = EX_LOAD_U8W(p + j);
        const EX_V q = EX_MULHI_U16(b, kdiv);
        const EX_V l = EX_SUB16(b, EX_MULLO16(q, k9));
        const EX_V q2 = EX_MULHI_U16(q, kdiv);
        const EX_V l2 = EX_SUB16(q, EX_MULLO16(q2, k9));
        EX_V c = EX_AND(EX_SHUF8(t9, l), lo8);
        c = EX_OR(c, EX_SLLI16(EX_AND(EX_SHUF8(t9, l2), lo8), 4));
        c = EX_OR(c, EX_SLLI16(EX_AND(EX_SHUF8(t3, q2), lo8), 8));
        c = EX_T5_VALID(b, bad, c);
        const EX_V w20 = EX_MADD16(c, pair);                                       /* c0 + 1024 c1 */
        const EX_V w40 = EX_OR(EX_AND(w20, low32), EX_SLLI64(EX_SRLI64(w20, 32), 20));
        EX_T5_STORE(out, EX_SHUF8(w40, pack));
    }
    if (g < ng) EX_T5_REST(p, nbytes, g0 + g, ng - g, out);
}

/* ---- elementwise kernels (engine_kernels.h's ranges) ----
 * Eight values at a time: their products, rounding shifts and clamps in
 * 64-bit lanes; the rest (n % 8) through masks or the twin's formula. */

static inline __attribute__((always_inline)) EX_ATTR void EX(addsc8)(int32_t *x, const int32_t *v, EX_M8 k, EX_LB M,
                                                                     EX_LB H, EX_LB L, EX_SH sh) {
    EX_L p = EX_LSRA(EX_LADDB(EX_LMULB(EX_LD32(v, k), M), H), sh);
    p = EX_LCLAMP(EX_LADD(p, EX_LEXT(EX_LD32(x, k))), L);
    EX_LST32(x, k, p);
}
EX_ATTR void EX(atm_ek_addsc)(int32_t *x, const int32_t *v, int n, int32_t mul, int s) {
    const int64_t half = (int64_t)1 << (s - 1);
    const EX_LB M = EX_LSET1(mul), H = EX_LSET1(half), L = EX_LSET1(XLIM);
    const EX_SH sh = EX_SHIFT(s);
    int c = 0;
    for (; c + 8 <= n; c += 8) EX(addsc8)(x + c, v + c, EX_M8_ALL, M, H, L, sh);
#if EX_TAIL_MASKED
    if (c < n) EX(addsc8)(x + c, v + c, EX_M8_FIRST(n - c), M, H, L, sh);
#else
    for (; c < n; c++) x[c] = atm_clamp32((int64_t)x[c] + (((int64_t)v[c] * mul + half) >> s), XLIM);
#endif
}

static inline __attribute__((always_inline)) EX_ATTR void EX(scale8)(int32_t *v, EX_M8 k, EX_LB M, EX_LB H, EX_LB L,
                                                                     EX_SH sh) {
    EX_LST32(v, k, EX_LCLAMP(EX_LSRA(EX_LADDB(EX_LMULB(EX_LD32(v, k), M), H), sh), L));
}
EX_ATTR void EX(atm_ek_scale)(int32_t *v, int n, int32_t mul, int s) {
    const int64_t half = (int64_t)1 << (s - 1);
    const EX_LB M = EX_LSET1(mul), H = EX_LSET1(half), L = EX_LSET1(XLIM);
    const EX_SH sh = EX_SHIFT(s);
    int c = 0;
    for (; c + 8 <= n; c += 8) EX(scale8)(v + c, EX_M8_ALL, M, H, L, sh);
#if EX_TAIL_MASKED
    if (c < n) EX(scale8)(v + c, EX_M8_FIRST(n - c), M, H, L, sh);
#else
    for (; c < n; c++) v[c] = atm_clamp32(((int64_t)v[c] * mul + half) >> s, XLIM);
#endif
}

/* LayerNorm's output: the constants of a call */
typedef struct { __m256i R, HB; EX_LB HG, L; EX_SH sg; __m128i cbr, cbl; } EX(lnk);
static inline __attribute__((always_inline)) EX_ATTR void EX(ln_out8)(int16_t *u, const uint8_t *g, const uint8_t *b,
                                                                      EX_M8 k, const EX(lnk) *c) {
    const __m256i gr = _mm256_mullo_epi32(EX_LD16(g, k), c->R);
    const __m256i bt = _mm256_sra_epi32(_mm256_add_epi32(_mm256_sll_epi32(EX_LD16(b, k), c->cbl), c->HB), c->cbr);
    const EX_L p = EX_LSRA(EX_LADDB(EX_LMUL(EX_LD16(u, k), gr), c->HG), c->sg);
    EX_LST16(u, k, EX_LCLAMP(EX_LADD(p, EX_LEXT(bt)), c->L));
}
EX_ATTR void EX(atm_ek_ln_out)(int16_t *u, const uint8_t *g, const uint8_t *b, int d, int32_t r15, int sg, int sb) {
    const int64_t hg = (int64_t)1 << (sg - 1);
    const int32_t hb = sb >= 1 ? (int32_t)1 << (sb - 1) : 0;
    EX(lnk) c;
    c.R = _mm256_set1_epi32(r15); c.HB = _mm256_set1_epi32(hb);
    c.HG = EX_LSET1(hg); c.L = EX_LSET1(32767); c.sg = EX_SHIFT(sg);
    c.cbr = _mm_cvtsi32_si128(sb >= 1 ? sb : 0); c.cbl = _mm_cvtsi32_si128(sb >= 1 ? 0 : -sb);
    int i = 0;
    for (; i + 8 <= d; i += 8) EX(ln_out8)(u + i, g + 2 * i, b + 2 * i, EX_M8_ALL, &c);
#if EX_TAIL_MASKED
    if (i < d) EX(ln_out8)(u + i, g + 2 * i, b + 2 * i, EX_M8_FIRST(d - i), &c);
#else
    const int32_t mb = sb >= 1 ? 1 : (int32_t)1 << -sb;
    const int s_b = sb >= 1 ? sb : 0;
    for (; i < d; i++) {
        const int32_t gr = r15 * atm_rd_i16le(g + 2 * i);
        u[i] = atm_sat16((((int64_t)u[i] * gr + hg) >> sg) + ((atm_rd_i16le(b + 2 * i) * mb + hb) >> s_b));
    }
#endif
}

/* the SSM update: the constants of a call */
typedef struct { EX_LB HA, HB, L; EX_SH s15, sb; __m128i cup; } EX(ssk);
static inline __attribute__((always_inline)) EX_ATTR void EX(ssm8)(int32_t *s, const uint8_t *a, const uint8_t *bc,
                                                                   const int16_t *u, EX_M8 k, const EX(ssk) *c) {
    const __m256i bu = _mm256_mullo_epi32(EX_LD16(bc, k), EX_LD16(u, k));      /* |.| <= 2^30 */
    const EX_L pa = EX_LSRA(EX_LADDB(EX_LMUL(EX_LD16(a, k), EX_LD32(s, k)), c->HA), c->s15);
    const EX_L pb = EX_LSRA(EX_LADDB(EX_LSLL(EX_LEXT(bu), c->cup), c->HB), c->sb);
    EX_LST32(s, k, EX_LCLAMP(EX_LADD(pa, pb), c->L));
}
EX_ATTR void EX(atm_ek_ssm)(int32_t *s, const uint8_t *a, const uint8_t *bc, const int16_t *u, int d, int sb) {
    /* sb <= 0: a left shift (bc u * 2^-sb, exact); sb >= 1: rounding right shift */
    const int64_t hb = sb >= 1 ? (int64_t)1 << (sb - 1) : 0;
    const int s_b = sb >= 1 ? sb : 0;
    EX(ssk) c;
    c.HA = EX_LSET1(1 << 14); c.HB = EX_LSET1(hb); c.L = EX_LSET1(XLIM);
    c.s15 = EX_SHIFT(15); c.sb = EX_SHIFT(s_b); c.cup = _mm_cvtsi32_si128(sb >= 1 ? 0 : -sb);
    int i = 0;
    for (; i + 8 <= d; i += 8) EX(ssm8)(s + i, a + 2 * i, bc + 2 * i, u + i, EX_M8_ALL, &c);
#if EX_TAIL_MASKED
    if (i < d) EX(ssm8)(s + i, a + 2 * i, bc + 2 * i, u + i, EX_M8_FIRST(d - i), &c);
#else
    const int64_t mb = sb >= 1 ? 1 : (int64_t)1 << -sb;
    for (; i < d; i++) {
        const int64_t v = (((int64_t)atm_rd_i16le(a + 2 * i) * s[i] + (1 << 14)) >> 15)
                        + (((int64_t)(atm_rd_i16le(bc + 2 * i) * u[i]) * mb + hb) >> s_b);
        s[i] = atm_clamp32(v, XLIM);
    }
#endif
}

/* attention scores, EX_QN at a time while every lane's shift is in 1..62,
 * then the twin's rule */
EX_ATTR void EX(atm_ek_scores)(const int32_t *dots, const uint8_t *kexp, int n, int64_t ms, int sbase, int32_t *out) {
    const EX_V MS = EX_SET1_64(ms), SB = EX_SET1_64(sbase), ONE = EX_SET1_64(1), L = EX_SET1_64(XLIM);
    int j = 0;
    for (; j + EX_QN <= n; j += EX_QN) {
        const EX_V sv = EX_SUB64(SB, EX_Q_LDU8(kexp + j));
        if (EX_Q_BAD(sv)) break;
        EX_V p = EX_MUL32(EX_Q_LDI32(dots + j), MS);
        p = EX_SRAV64(EX_ADD64(p, EX_SLLV64(ONE, EX_SUB64(sv, ONE))), sv);
        EX_Q_ST32(out + j, EX_CLAMP64(p, L));
    }
    for (; j < n; j++) out[j] = atm_clamp32(atm_rnd64((int64_t)dots[j] * ms, sbase - kexp[j]), XLIM);
}

#undef EX_CAT2
#undef EX_CAT
#undef EX
/* the hooks, for the next instance */
#undef EX_SUFFIX
#undef EX_ATTR
#undef EX_V
#undef EX_SET1_8
#undef EX_SET1_16
#undef EX_SET1_32
#undef EX_SET1_64
#undef EX_BCAST128
#undef EX_AND
#undef EX_OR
#undef EX_SUB16
#undef EX_SLLI16
#undef EX_SRLI16
#undef EX_MULHI_U16
#undef EX_MULLO16
#undef EX_SHUF8
#undef EX_MADD16
#undef EX_SLLI64
#undef EX_SRLI64
#undef EX_ADD64
#undef EX_SUB64
#undef EX_SLLV64
#undef EX_MUL32
#undef EX_RACC
#undef EX_RACC_ZERO
#undef EX_CHUNK
#undef EX_RACC_SUM
#undef EX_TAIL_BYTES
#undef EX_CORR
#undef EX_CORR64
#undef EX_STORE_ROWS
#undef EX_R64
#undef EX_LOAD_ROWS
#undef EX_ZERO
#undef EX_DP
#undef EX_FIN64
#undef EX_REDUCE64
#undef EX_T5_BYTES
#undef EX_LOAD_U8W
#undef EX_T5_VALID
#undef EX_T5_STORE
#undef EX_T5_REST
#undef EX_M8
#undef EX_M8_ALL
#undef EX_M8_FIRST
#undef EX_TAIL_MASKED
#undef EX_LD32
#undef EX_LD16
#undef EX_L
#undef EX_LB
#undef EX_SH
#undef EX_LSET1
#undef EX_SHIFT
#undef EX_LMULB
#undef EX_LMUL
#undef EX_LEXT
#undef EX_LADD
#undef EX_LADDB
#undef EX_LSRA
#undef EX_LSLL
#undef EX_LCLAMP
#undef EX_LST32
#undef EX_LST16
#undef EX_QN
#undef EX_Q_LDI32
#undef EX_Q_LDU8
#undef EX_Q_BAD
#undef EX_SRAV64
#undef EX_CLAMP64
#undef EX_Q_ST32
