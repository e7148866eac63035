/* tests/mcu/kernels.c — the engine's board kernels against their plain-C
 * twins, on the board's own CPU under QEMU (atome-kt-<board>.elf, run by
 * tests/node/mcu-kernels.test.mjs through tools/mcu/run-qemu). The host suite
 * (tests/test_engine_kernels.c) cannot run Thumb-1 or Thumb-2 assembly; this
 * can. Random inputs, extreme values and odd sizes; one line per kernel on
 * stdout ("kernel cases bad"), exit 0 when every case agrees, 1 otherwise.
 * Freestanding like the firmware: no C library, output through semihosting. */
#include <stdint.h>
#include <stddef.h>
#include "core/engine.h"
#include "core/engine_kernels.h"
#include "core/fixmath.h"
#include "mcu/mcu.h"
#include "mcu/semihost.h"

/* what mcu/startup.c expects of an image */
int mcu_standalone(void) { return 0; }
void mcu_fault_line(uint32_t exception) { (void)exception; }

/* in .bss, seeded by mcu_main: an image whose .data and .arena share a load
 * segment has QEMU's loader fill the arena's size over flash */
static uint32_t rng;
static volatile uint32_t bss_pad[16];
static uint32_t rnd32(void) { rng ^= rng << 13; rng ^= rng >> 17; rng ^= rng << 5; return rng; }
static uint32_t rnd(uint32_t n) { return rnd32() % n; }
/* value pattern p: 0 random, 1 all +lim, 2 all -lim, 3 alternating */
static int32_t pick(int p, uint32_t i, int32_t lim) {
    switch (p) {
    case 1: return lim;
    case 2: return -lim;
    case 3: return (i & 1u) ? lim : -lim;
    default: return (int32_t)(rnd(2u * (uint32_t)lim + 1u)) - lim;
    }
}

/* mcu/libc_min.c */
void *memset(void *d, int c, size_t n);
int memcmp(const void *a, const void *b, size_t n);
static size_t slen(const char *s) { size_t n = 0; while (s[n]) n++; return n; }

static void out_str(const char *s) { sh_write_out(s, slen(s)); }
static void out_u(uint32_t v) {
    char b[12]; int n = 0;
    do { b[n++] = (char)('0' + v % 10u); v /= 10u; } while (v);
    while (n) { char c = b[--n]; sh_write_out(&c, 1); }
}
static int report(const char *name, uint32_t cases, uint32_t bad) {
    out_str(name); out_str(" "); out_u(cases); out_str(" "); out_u(bad); out_str("\n");
    return bad != 0;
}

/* n ATOME01 bytes of valid codes: pattern 1 all +1, 2 all -1, else random */
static void fill_rows(uint8_t *b, uint32_t n, int p) {
    static const uint8_t codes[3] = { 0, 1, 3 };
    for (uint32_t i = 0; i < n; i++) {
        uint8_t v = 0;
        for (int k = 0; k < 4; k++) v = (uint8_t)(v | codes[p == 1 ? 1 : (p == 2 ? 2 : rnd(3))] << (2 * k));
        b[i] = v;
    }
}

#define MAXC 256
#define MAXR 17
/* the buffers live in the arena (the rest of RAM, mcu/link/common.ld):
 * .bss must stay under the boards' arena minimum */
extern uint8_t __arena_start[], __arena_end[];
#define ARENA_USED 14528u
#define WBUF (__arena_start)                                       /* MAXR * MAXC / 4 + 8 */
#define XV   ((int16_t *)(void *)(__arena_start + 1152))           /* MAXC */
#define TAB  ((int32_t *)(void *)(__arena_start + 1664))           /* MAXC * 4 */
#define REF  ((int32_t *)(void *)(__arena_start + 5760))           /* MAXR */
#define GOT  ((int32_t *)(void *)(__arena_start + 5832))           /* MAXR, ends at 5900 */

/* the M0 set's elementwise kernels (Thumb-1 addsc / scale, 32-bit C
 * ln_out / ssm, word-at-a-time mix / dots) against the twins, as compiled
 * for this CPU: every shift, extreme multipliers, values and lengths */
#define X_L ((1 << 30) - 1)
#define EV   ((int32_t *)(void *)(__arena_start + 6144))          /* 256 words each */
#define EX0  ((int32_t *)(void *)(__arena_start + 7168))
#define EX1  ((int32_t *)(void *)(__arena_start + 8192))
#define EU0  ((int16_t *)(void *)(__arena_start + 9216))
#define EU1  ((int16_t *)(void *)(__arena_start + 9728))
#define EG   (__arena_start + 10240)                              /* 513 bytes each */
#define EB   (__arena_start + 10784)
#define EK   ((int8_t *)(__arena_start + 11328))                  /* 3200 int8, ends at 14528 (the micro:bit arena: 14,776 B) */
#define ES   ((int32_t *)(void *)EK)                             /* scratch words (EK is refilled before its own use) */
/* the residual update from x = ES[0, n) and v = EV: bit 0 set when
 * atm_ek_addsc_i32 (the M0 set, its Thumb-1 loops on this CPU) differs from
 * the twin, bit 1 when atm_ek_addsc_m3 does; the twin's result in EX0 */
static int addsc_diff(int n, int32_t mul, int sh) {
    for (int i = 0; i < n; i++) EX0[i] = EX1[i] = ES[i];
    atm_ek_addsc_ref(EX0, EV, n, mul, sh);
    atm_ek_addsc_i32(EX1, EV, n, mul, sh);
    int d = memcmp(EX0, EX1, (size_t)n * 4) != 0;
    for (int i = 0; i < n; i++) EX1[i] = ES[i];
    atm_ek_addsc_m3(EX1, EV, n, mul, sh);
    return d | (memcmp(EX0, EX1, (size_t)n * 4) != 0) << 1;
}
/* the same for the logit scale of v = EV */
static int scale_diff(int n, int32_t mul, int sh) {
    for (int i = 0; i < n; i++) EX0[i] = EX1[i] = EV[i];
    atm_ek_scale_ref(EX0, n, mul, sh);
    atm_ek_scale_i32(EX1, n, mul, sh);
    int d = memcmp(EX0, EX1, (size_t)n * 4) != 0;
    for (int i = 0; i < n; i++) EX1[i] = EV[i];
    atm_ek_scale_m3(EX1, n, mul, sh);
    return d | (memcmp(EX0, EX1, (size_t)n * 4) != 0) << 1;
}
static int test_elementwise(void) {
    static const int lens[] = { 1, 2, 3, 7, 16, 17, 64, 65, 256 };
    uint32_t cases = 0, bad_a = 0, bad_s = 0, bad_l = 0, bad_m = 0, bad_3 = 0, cases16 = 0, bad_a16 = 0, bad_s16 = 0, casesv = 0, bad_av = 0;
    for (unsigned li = 0; li < sizeof lens / sizeof lens[0]; li++)
        for (int p = 0; p < 4; p++) {
            const int n = lens[li];
            for (int sh = 1; sh <= 62; sh += (sh < 34 ? 1 : 9)) {
                const int32_t mul = p == 1 ? INT32_MAX : (p == 2 ? -INT32_MAX : (int32_t)(rnd32() >> (sh % 20)));
                for (int i = 0; i < n; i++) { ES[i] = pick(p, (uint32_t)i, X_L); EV[i] = pick(p == 3 ? 0 : p, (uint32_t)i, INT32_MAX); }
                int d = addsc_diff(n, mul, sh);
                bad_a += d & 1; bad_3 += d >> 1;
                d = scale_diff(n, mul, sh);
                bad_s += d & 1; bad_3 += d >> 1;
                cases++;
            }
            /* 16-bit multipliers (the SSM's router weight, the logit scale's
             * mantissa: the two-product kernels of the M0 and the M3 set's
             * addsc), v to INT32_MIN */
            for (int sh = 1; sh <= 31; sh++) {
                const int32_t mul = p == 1 ? 65535 : (p == 2 ? (sh & 1) : (int32_t)(rnd32() >> 16) >> (sh % 9));
                for (int i = 0; i < n; i++) {
                    ES[i] = pick(p, (uint32_t)i, X_L);
                    EV[i] = i % 5 == 4 ? INT32_MIN : pick(p == 3 ? 0 : p, (uint32_t)i, INT32_MAX) >> (i % 3 * 7);
                }
                const int d = addsc_diff(n, mul, sh), e = scale_diff(n, mul, sh);
                bad_a16 += (d & 1) + (d >> 1);
                bad_s16 += (e & 1) + (e >> 1);
                cases16++;
            }
            /* the logit scale's sum just past int32: vh mul 2^(16 - s) just
             * under 2^31 (or over -2^31) and vl large */
            for (int sh = 2; sh <= 16; sh++) {
                const int32_t mul = p == 1 ? 65535 : (int32_t)(rnd32() >> 16) | 1;
                const int64_t unit = (int64_t)mul << (16 - sh);
                for (int i = 0; i < n; i++) {
                    int64_t vh = ((int64_t)INT32_MAX / unit) - (int64_t)(i % 3);
                    if (vh > 32767) vh = 32767;
                    const uint32_t vl = 65535u - (uint32_t)rnd(64);
                    const int32_t v = (int32_t)(((uint32_t)vh << 16) | vl);
                    EV[i] = (p == 2 || (i & 1)) ? -v : v;
                }
                const int e = scale_diff(n, mul, sh);
                bad_s16 += (e & 1) + (e >> 1);
                cases16++;
            }
            /* 31-bit multipliers with v often within int16 (the M0's short way) */
            for (int sh = 17; sh <= 31; sh++) {
                const int32_t mul = p == 1 ? INT32_MAX : (p == 2 ? -INT32_MAX : (int32_t)rnd32() >> (sh % 7));
                for (int i = 0; i < n; i++) {
                    ES[i] = pick(p, (uint32_t)i, X_L);
                    EV[i] = i % 4 == 3 ? pick(p, (uint32_t)i, INT32_MAX) : (i % 4 == 2 ? (p & 1 ? -32768 : 32767)
                                                                         : pick(p == 3 ? 0 : p, (uint32_t)i, 32767));
                }
                const int d = addsc_diff(n, mul, sh);
                bad_av += (d & 1) + (d >> 1);
                casesv++;
            }
            static const int sgs[] = { 1, 10, 16, 17, 18, 30, 31, 33, 46, 47, 62 };
            static const int sbs[] = { -16, -15, -14, -6, -1, 0, 1, 9, 19, 30 };
            for (unsigned gi = 0; gi < sizeof sgs / sizeof sgs[0]; gi++)
                for (unsigned bi = 0; bi < sizeof sbs / sizeof sbs[0]; bi++) {
                    const int sg = sgs[gi], sb = sbs[bi];
                    const int32_t r15 = (int32_t)(16384 + rnd(16385));
                    for (int i = 0; i < n; i++) {
                        EU0[i] = EU1[i] = (int16_t)pick(p, (uint32_t)i, 32767);
                        const int32_t gv = pick(p == 3 ? 0 : p, (uint32_t)i, 32767), bv = pick(p, (uint32_t)i + 1, 32767);
                        EG[1 + 2 * i] = (uint8_t)gv; EG[2 + 2 * i] = (uint8_t)((uint32_t)gv >> 8);
                        EB[1 + 2 * i] = (uint8_t)bv; EB[2 + 2 * i] = (uint8_t)((uint32_t)bv >> 8);
                    }
                    if (p == 2) EU0[0] = EU1[0] = -32768;
                    for (int i = 0; i < n; i++) EX1[i] = EU0[i];
                    atm_ek_ln_out_ref(EU0, EG + 1, EB + 1, n, r15, sg, sb);
                    atm_ek_ln_out_i32(EU1, EG + 1, EB + 1, n, r15, sg, sb);
                    bad_l += memcmp(EU0, EU1, (size_t)n * 2) != 0;
                    for (int i = 0; i < n; i++) EU1[i] = (int16_t)EX1[i];
                    atm_ek_ln_out_m3(EU1, EG + 1, EB + 1, n, r15, sg, sb);
                    bad_3 += memcmp(EU0, EU1, (size_t)n * 2) != 0;
                }
            static const int ssbs[] = { -32, -17, -2, -1, 0, 1, 2, 13, 30, 31, 32, 43, 62 };
            for (unsigned si = 0; si < sizeof ssbs / sizeof ssbs[0]; si++) {
                const int sb = ssbs[si];
                for (int i = 0; i < n; i++) {
                    EX0[i] = EX1[i] = p == 1 ? -X_L : pick(p, (uint32_t)i, X_L);   /* p 1: s against a, b c u at +max */
                    EU0[i] = (int16_t)pick(p == 3 ? 0 : p, (uint32_t)i, 32767);
                    const int32_t av = pick(p, (uint32_t)i, 32767), bv = pick(3, (uint32_t)i, 32767);
                    EG[1 + 2 * i] = (uint8_t)av; EG[2 + 2 * i] = (uint8_t)((uint32_t)av >> 8);
                    EB[1 + 2 * i] = (uint8_t)bv; EB[2 + 2 * i] = (uint8_t)((uint32_t)bv >> 8);
                }
                for (int i = 0; i < n; i++) ES[i] = EX0[i];
                atm_ek_ssm_ref(EX0, EG + 1, EB + 1, EU0, n, sb);
                atm_ek_ssm_i32(EX1, EG + 1, EB + 1, EU0, n, sb);
                bad_l += memcmp(EX0, EX1, (size_t)n * 4) != 0;
                for (int i = 0; i < n; i++) EX1[i] = ES[i];
                atm_ek_ssm_m3(EX1, EG + 1, EB + 1, EU0, n, sb);
                bad_3 += memcmp(EX0, EX1, (size_t)n * 4) != 0;
            }
            /* the M3 set's attention scores, shifts on both sides of its fast range */
            for (int sbase = -40; sbase <= 100; sbase += 7) {
                const int64_t ms = p == 1 ? (1 << 30) - 1 : (int64_t)(rnd32() >> 2);
                for (int i = 0; i < n; i++) { EV[i] = pick(p, (uint32_t)i, INT32_MAX); EB[i] = (uint8_t)(p == 3 ? 31 : rnd(32)); }
                atm_ek_scores_ref(EV, EB, n, ms, sbase, EX0);
                atm_ek_scores_m3(EV, EB, n, ms, sbase, EX1);
                bad_3 += memcmp(EX0, EX1, (size_t)n * 4) != 0;
                /* dots within 2^26 (int8 keys, int16 queries): the M0's 16-bit halves */
                for (int i = 0; i < n; i++) EV[i] = i % 7 == 0 ? (i & 8 ? (1 << 26) - 1 : -(1 << 26) + 1) : EV[i] >> 5;
                atm_ek_scores_ref(EV, EB, n, ms, sbase, EX0);
                atm_ek_scores_m3(EV, EB, n, ms, sbase, EX1);
                bad_3 += memcmp(EX0, EX1, (size_t)n * 4) != 0;
            }
            /* mix of n rows of d = 64 (aligned) and dots of dh = 16 (and odd widths: the twins) */
            if (n <= 64) {
                static const int ds[] = { 16, 64, 17 };
                for (unsigned di = 0; di < 3; di++) {
                    const int d = ds[di];
                    for (int i = 0; i < 64 * d && i < 3200; i++) EK[i] = (int8_t)pick(p, (uint32_t)i, 127);
                    const int rows = 3200 / d < 64 ? 3200 / d : 64;
                    int32_t left = 32768;
                    for (int i = 0; i < n; i++) {
                        EX0[128 + i] = (int32_t)rnd((uint32_t)rows);                       /* idx */
                        EV[i] = i == n - 1 ? left : (int32_t)rnd((uint32_t)left / 2u + 1u);  /* weights */
                        left -= EV[i];
                        if (p == 2 || (p == 3 && (i & 1))) EV[i] = -EV[i];
                    }
                    atm_ek_mix_ref(EV, EX0 + 128, EK, n, d, EX0);
                    EX1[d] = 0x5A5A5A5A;
                    atm_ek_mix_m0(EV, EX0 + 128, EK, n, d, EX1);
                    bad_m += memcmp(EX0, EX1, (size_t)d * 4) != 0 || EX1[d] != 0x5A5A5A5A;
#if defined(__ARM_ARCH_6M__)
                    if (d % 4 == 0) {   /* the engine's M0 mix, its pairs after out (and a guard word) */
                        for (int i = 0; i < d; i++) EX1[i] = 0x3C3C3C3C;
                        atm_ek_mix4w_m0(EV, EX0 + 128, EK, n, d, EX1, EX1 + d + 1);
                        bad_m += memcmp(EX0, EX1, (size_t)d * 4) != 0 || EX1[d] != 0x5A5A5A5A;
                    }
#endif
                    for (int i = 0; i < d; i++) EU0[i] = (int16_t)pick(p, (uint32_t)i, 32767);
                    const int nk = rows < n ? rows : n;
                    atm_ek_dots_ref(EU0, EK, d, nk, EX0);
                    atm_ek_dots_m0(EU0, EK, d, nk, EX1);
                    bad_m += memcmp(EX0, EX1, (size_t)nk * 4) != 0;
                }
            }
        }
    /* conv taps: K 5 and 3, every tap count, 64 and 13 channels */
    uint32_t bad_c = 0, cases_c = 0;
    for (int p = 0; p < 4; p++)
        for (int K = 3; K <= 5; K += 2)
            for (int nc = 13; nc <= 64; nc += 51) {
                const int kh = K - 1, ld = nc + 3;
                int8_t *tt = EK, *ring = EK + 400;
                uint8_t *rexp = EG;
                for (int i = 0; i < nc * K + 16; i++) tt[i] = (int8_t)(p == 1 ? 1 : (p == 2 ? -1 : (int)rnd(3) - 1));
                for (int i = 0; i < nc; i++) EU0[i] = (int16_t)pick(p, (uint32_t)i, 32767);
                for (int i = 0; i < kh * ld; i++) ring[i] = (int8_t)pick(p, (uint32_t)i, 127);
                for (int i = 0; i < kh; i++) rexp[i] = (uint8_t)(p == 3 ? 9 : rnd(10));
                for (int taps = 1; taps <= K; taps++) {
                    const int next = (int)rnd((uint32_t)kh);
                    atm_ek_conv_ref(tt, K, nc, EU0, ring, ld, rexp, next, kh, taps, EX0);
                    atm_ek_conv_m0(tt, K, nc, EU0, ring, ld, rexp, next, kh, taps, EX1);
                    bad_c += memcmp(EX0, EX1, (size_t)nc * 4) != 0;
                    cases_c++;
                }
            }
    int fail = report("addsc_i32", cases, bad_a);
    fail |= report("conv_m0", cases_c, bad_c);
    fail |= report("scale_i32", cases, bad_s);
    fail |= report("addsc_i32_mul16", cases16, bad_a16);
    fail |= report("scale_i32_mul16", cases16, bad_s16);
    fail |= report("addsc_i32_v16", casesv, bad_av);
    fail |= report("ln_out_ssm_i32", cases, bad_l);
    fail |= report("mix_dots_m0", cases, bad_m);
    fail |= report("elementwise_m3", cases, bad_3);
    return fail;
}

/* LayerNorm's centring (the set's C, SMLAL on the M3) against the twin:
 * odd and even widths, shifts either way, |x - mean| up to the int16 edge */
static int test_ln_center(void) {
    static const int ds[] = { 1, 2, 3, 7, 16, 17, 64, 65 };
    uint32_t cases = 0, bad = 0;
    for (unsigned di = 0; di < sizeof ds / sizeof ds[0]; di++)
        for (int k = -4; k <= 16; k++)
            for (int p = 0; p < 3; p++) {
                const int d = ds[di];
                const int32_t mean = (int32_t)rnd(1u << 20) - (1 << 19);
                const int32_t lim = k >= 0 ? (int32_t)((1u << (15 + k)) - 1u) : (1 << (15 + k)) - 1;
                for (int i = 0; i < d; i++)
                    EX0[i] = mean + (p == 0 ? (i & 1 ? lim : -lim) : (int32_t)rnd(2u * (uint32_t)lim + 1u) - lim);
                const int64_t a = atm_ek_ln_center_ref(EX0, d, mean, k, EU0);
                const int64_t b = atm_ek_ln_center_i32(EX0, d, mean, k, EU1);
                bad += a != b || memcmp(EU0, EU1, (size_t)d * 2) != 0;
                cases++;
            }
    return report("ln_center_i32", cases, bad);
}

#if defined(__ARM_ARCH_6M__)
#define TOPK_INS atm_ek_topk_ins_m0
#define TOPK_NAME "topk_ins_m0"
#else
#define TOPK_INS atm_ek_topk_ins_m3
#define TOPK_NAME "topk_ins_m3"
#endif
/* the kept set by sorted insertion: runs of scores (few distinct values,
 * so ties, or wide ones) added in turn to the same pairs, every keff up to
 * 32, against the twin; the pairs (and the word after them) must match */
static int test_topk_ins(void) {
    int32_t *const pa = EV, *const pb = EX1;   /* 2 * 33 + 1 words each, in the arena (the micro:bit's .bss is full) */
    uint32_t cases = 0, bad = 0;
    for (int keff = 1; keff <= 32; keff++)
        for (int p = 0; p < 4; p++) {
            const int32_t span = p == 0 ? 3 : (p == 1 ? 40 : (1 << 30) - 1);
            for (int i = 0; i < 2 * 33 + 1; i++) pa[i] = pb[i] = (int32_t)(0xA5A5A5A5u ^ (uint32_t)i);
            pa[0] = pb[0] = INT32_MAX;
            pa[1] = pb[1] = 0;
            pa[2 * keff + 2] = pb[2 * keff + 2] = 0x5A5A5A5A;
            int ca = 0, cb = 0;
            for (int r = 0; r < 5; r++) {
                const int run = (int)rnd(40);
                for (int i = 0; i < run; i++)
                    EX0[i] = p == 3 ? (i & 1 ? (1 << 30) - 1 : -(1 << 30) + 1)
                                    : (int32_t)(rnd((uint32_t)span * 2u + 1u)) - span;
                ca = atm_ek_topk_ins_ref(EX0, run, 100 * r, pa, ca, keff);
                cb = TOPK_INS(EX0, run, 100 * r, pb, cb, keff);
                bad += ca != cb || memcmp(pa, pb, (size_t)(2 * keff + 3) * 4) != 0;
                cases++;
            }
        }
    return report(TOPK_NAME, cases, bad);
}

/* the quantisers and LayerNorm's sums (the sets' C, with the assembly
 * extremes and stores of each CPU) against the twins */
static int test_quant(void) {
    static const int lens[] = { 1, 2, 3, 5, 16, 17, 64, 255, 256 };
    static const int32_t lims[] = { 127, 255, 32384, 40000, 1 << 30 };
    uint32_t cases = 0, bad = 0;
    int8_t *q0 = EK, *q1 = EK + 300;
    for (unsigned li = 0; li < sizeof lens / sizeof lens[0]; li++)
        for (int p = 0; p < 4; p++)
            for (unsigned mi = 0; mi < sizeof lims / sizeof lims[0]; mi++) {
                const int n = lens[li];
                for (int i = 0; i < n; i++) EX0[i] = pick(p, (uint32_t)i, lims[mi]);
                bad += atm_ek_quant32_ref(EX0, n, q0) != atm_ek_quant32_i32(EX0, n, q1) || memcmp(q0, q1, (size_t)n) != 0;
                for (int i = 0; i < n; i++) EU0[i] = (int16_t)pick(p, (uint32_t)i, lims[mi] > 32767 ? 32767 : lims[mi]);
                bad += atm_ek_quant16_ref(EU0, n, q0) != atm_ek_quant16_i32(EU0, n, q1) || memcmp(q0, q1, (size_t)n) != 0;
                int64_t s0, s1; int32_t l0, l1, h0, h1;
                atm_ek_ln_stats_ref(EX0, n, &s0, &l0, &h0);
                atm_ek_ln_stats_i32(EX0, n, &s1, &l1, &h1);
                bad += s0 != s1 || l0 != l1 || h0 != h1;
                cases += 3;
            }
    return report("quant_lnstats", cases, bad);
}

/* the scan for the first value above a threshold: every n to 40 (the
 * blocks of four and the tail), thresholds at, between and beyond the
 * values, INT32_MIN / INT32_MAX among them */
static int test_first_above(void) {
    uint32_t cases = 0, bad = 0;
    for (int n = 0; n <= 40; n++)
        for (int p = 0; p < 6; p++) {
            for (int i = 0; i < n; i++)
                EX0[i] = p == 4 ? (i & 1 ? INT32_MAX : INT32_MIN) : (int32_t)rnd(p == 0 ? 4u : 1000u) - (p == 0 ? 2 : 500);
            const int32_t t = p == 5 ? INT32_MIN : (p == 4 ? INT32_MAX - (int32_t)rnd(2) : (n > 0 ? EX0[rnd((uint32_t)n)] : 0) + (int32_t)rnd(3) - 1);
            bad += atm_ek_first_above(EX0, n, t) != atm_ek_first_above_ref(EX0, n, t);
            cases++;
        }
    return report("first_above", cases, bad);
}

#if defined(__ARM_ARCH_6M__)
/* the Thumb-1 32 x 32 -> 64 product against libgcc's 64 x 64 one */
int64_t atm_smull_m0(int32_t a, int32_t b);
uint64_t atm_umull_m0(uint32_t a, uint32_t b);
static int test_smull(void) {
    static const int32_t ext[] = { 0, 1, -1, 32767, 32768, -32768, 65535, 65536, -65536, INT32_MAX, INT32_MIN, INT32_MIN + 1 };
    uint32_t cases = 0, bad = 0;
    for (unsigned i = 0; i < 12; i++)
        for (unsigned j = 0; j < 12; j++, cases++) bad += atm_smull_m0(ext[i], ext[j]) != (int64_t)ext[i] * ext[j];
    for (int k = 0; k < 20000; k++, cases++) {
        const int32_t a = (int32_t)rnd32() >> (k % 31), b = (int32_t)rnd32() >> (k / 31 % 31);
        bad += atm_smull_m0(a, b) != (int64_t)a * b;
    }
    uint32_t ucases = 0, ubad = 0;
    for (unsigned i = 0; i < 12; i++)
        for (unsigned j = 0; j < 12; j++, ucases++)
            ubad += atm_umull_m0((uint32_t)ext[i], (uint32_t)ext[j]) != (uint64_t)(uint32_t)ext[i] * (uint32_t)ext[j];
    for (int k = 0; k < 20000; k++, ucases++) {
        const uint32_t a = rnd32() >> (k % 32), b = rnd32() >> (k / 32 % 32);
        ubad += atm_umull_m0(a, b) != (uint64_t)a * b;
    }
    return report("smull_m0", cases, bad) | report("umull_m0", ucases, ubad);
}
#define HAVE_M0 1
void atm_ek_planes_rows_m0(const uint8_t *b, uint32_t stride, uint32_t rows, uint32_t nbytes,
                           const int32_t *tab, int32_t *out, int add);
/* the Thumb-1 bit-plane rows (nbytes % 4 == 0) against atm_ek_matvec_ref,
 * whole rows and as two column chunks (the second added) */
static int test_planes(void) {
    static const uint32_t colss[] = { 16, 32, 48, 64, 80, 128, 144, 256 };
    static const uint32_t rowss[] = { 1, 2, 3, 7, 16, 17 };
    uint32_t cases = 0, bad = 0, bad_t = 0;
    for (unsigned ci = 0; ci < sizeof colss / sizeof colss[0]; ci++)
        for (unsigned ri = 0; ri < sizeof rowss / sizeof rowss[0]; ri++)
            for (int p = 0; p < 4; p++) {
                const uint32_t cols = colss[ci], rows = rowss[ri], nb = cols / 4;
                uint8_t *b = WBUF + (p & 1);                  /* odd addresses too */
                fill_rows(b, rows * nb, p);
                for (uint32_t c = 0; c < cols; c++) XV[c] = (int16_t)pick(p, c, 32767);
                atm_ek_matvec_ref(b, rows, cols, XV, REF);
                /* the table: Thumb-1 (aligned x) against the C loop (x at an odd half-word) */
                int16_t *xu = (int16_t *)(void *)(__arena_start + 5904 + 2);
                for (uint32_t c = 0; c < cols; c++) xu[c] = XV[c];
                atm_ek_planes_build(xu, cols, TAB);
                for (uint32_t i = 0; i < cols * 4; i++) ((int32_t *)(void *)(__arena_start + 10240))[i] = TAB[i];
                atm_ek_planes_build(XV, cols, TAB);
                bad_t += memcmp(TAB, __arena_start + 10240, cols * 16) != 0;
                memset(GOT, 0x5A, MAXR * sizeof(int32_t));
                atm_ek_planes_rows_m0(b, nb, rows, nb, TAB, GOT, 0);
                bad += memcmp(REF, GOT, rows * sizeof(int32_t)) != 0;
                cases++;
                const uint32_t h = cols / 16 * 8;             /* both halves a multiple of 4 bytes? */
                if (h % 16u == 0 && (cols - h) % 16u == 0 && h > 0) {
                    memset(GOT, 0x5A, MAXR * sizeof(int32_t));
                    atm_ek_planes_build(XV, h, TAB);
                    atm_ek_planes_rows_m0(b, nb, rows, h / 4, TAB, GOT, 0);
                    atm_ek_planes_build(XV + h, cols - h, TAB);
                    atm_ek_planes_rows_m0(b + h / 4, nb, rows, (cols - h) / 4, TAB, GOT, 1);
                    bad += memcmp(REF, GOT, rows * sizeof(int32_t)) != 0;
                    cases++;
                }
            }
    return report("planes_rows_m0", cases, bad) | report("planes_build_m0", cases, bad_t);
}

void atm_ek_planes_pairs16_m0(const uint8_t *b, uint32_t pairs, uint32_t nbytes, const int32_t *tab,
                              int32_t *out, int add);
/* the two-row Thumb-1 loop (rows 16 bytes apart) against atm_ek_matvec_ref:
 * whole 64-column rows, and 16-, 32- and 48-column chunks of them (the rest
 * added by the one-row loop), at odd addresses, every value pattern; the
 * words after the pairs' outputs stay untouched */
/* 64-column rows (16 bytes each) of pattern p at WBUF (odd p: an odd
 * address), an input XV, their exact products in REF and GOT poisoned */
static uint8_t *rows64(uint32_t rows, int p) {
    uint8_t *b = WBUF + (p & 1);
    fill_rows(b, rows * 16u, p);
    for (uint32_t c = 0; c < 64; c++) XV[c] = (int16_t)pick(p, c, 32767);
    atm_ek_matvec_ref(b, rows, 64, XV, REF);
    memset(GOT, 0x5A, MAXR * sizeof(int32_t));
    return b;
}

static int test_pairs16(void) {
    static const uint32_t pairss[] = { 1, 2, 3, 8 };
    uint32_t cases = 0, bad = 0;
    for (unsigned pi = 0; pi < sizeof pairss / sizeof pairss[0]; pi++)
        for (uint32_t h = 4; h <= 16; h += 4)
            for (int p = 0; p < 4; p++) {
                const uint32_t pairs = pairss[pi], rows = 2 * pairs, cols = 64, nb = 16;
                uint8_t *b = rows64(rows, p);
                atm_ek_planes_build(XV, 4 * h, TAB);
                atm_ek_planes_pairs16_m0(b, pairs, h, TAB, GOT, 0);
                if (h < nb) {
                    atm_ek_planes_build(XV + 4 * h, cols - 4 * h, TAB);
                    atm_ek_planes_rows_m0(b + h, nb, rows, nb - h, TAB, GOT, 1);
                }
                bad += memcmp(REF, GOT, rows * sizeof(int32_t)) != 0 || GOT[rows] != 0x5A5A5A5A;
                cases++;
                /* the other way round: the pairs add the second chunk */
                if (h < nb) {
                    memset(GOT, 0x5A, MAXR * sizeof(int32_t));
                    atm_ek_planes_build(XV, cols - 4 * h, TAB);
                    atm_ek_planes_rows_m0(b, nb, rows, nb - h, TAB, GOT, 0);
                    atm_ek_planes_build(XV + cols - 4 * h, 4 * h, TAB);
                    atm_ek_planes_pairs16_m0(b + nb - h, pairs, h, TAB, GOT, 1);
                    bad += memcmp(REF, GOT, rows * sizeof(int32_t)) != 0 || GOT[rows] != 0x5A5A5A5A;
                    cases++;
                }
            }
    /* the C dispatch (atm_ek_planes_rows: pairs, then an odd last row by the
     * one-row loop), 64-column rows, every row count, both chunk orders */
    uint32_t dcases = 0, dbad = 0;
    for (uint32_t rows = 1; rows <= 16; rows++)
        for (uint32_t h = 4; h <= 16; h += 4)
            for (int p = 0; p < 4; p++) {
                const uint32_t cols = 64, nb = 16;
                uint8_t *b = rows64(rows, p);
                atm_ek_planes_build(XV, 4 * h, TAB);
                atm_ek_planes_rows(b, nb, rows, h, TAB, GOT, 0);
                if (h < nb) {
                    atm_ek_planes_build(XV + 4 * h, cols - 4 * h, TAB);
                    atm_ek_planes_rows(b + h, nb, rows, nb - h, TAB, GOT, 1);
                }
                dbad += memcmp(REF, GOT, rows * sizeof(int32_t)) != 0 || GOT[rows] != 0x5A5A5A5A;
                dcases++;
            }
    return report("planes_pairs16_m0", cases, bad) | report("planes_rows_dispatch", dcases, dbad);
}
#endif

#if defined(__ARM_ARCH_6M__)
void atm_ek_planes_pairso_m0(const uint8_t *o, uint32_t stride, uint32_t pairs, uint32_t nbytes,
                             const int32_t *tab, int32_t *out, int add);
#define OXS (__arena_start + 6144)   /* the offset stream of up to 16 rows of 24 bytes: 768 B (EV's room) */
/* the two-row Thumb-1 loop from the offset stream against atm_ek_matvec_ref:
 * whole 64-column rows (nbytes 16) and 32-column halves (nbytes 8), the
 * other half added by the same kernel, both orders; then the C dispatch
 * (atm_ek_planes_rows_ox: pairs, an odd last row from the model bytes, the
 * C loop for 4- and 12-byte chunks), every row count */
static int test_pairs16o(void) {
    static const uint32_t pairss[] = { 1, 2, 3, 8 };
    uint32_t cases = 0, bad = 0;
    for (unsigned pi = 0; pi < sizeof pairss / sizeof pairss[0]; pi++)
        for (uint32_t h = 4; h <= 16; h *= 2)
            for (int p = 0; p < 4; p++)
                for (int order = 0; order < (h < 16 ? 2 : 1); order++) {
                    const uint32_t pairs = pairss[pi], rows = 2 * pairs, first = order ? 16 - h : 0;
                    uint8_t *b = rows64(rows, p);
                    atm_engine_offsets_make(b, rows * 16u, OXS);
                    atm_ek_planes_build(XV + 4 * first, 4 * h, TAB);
                    atm_ek_planes_pairso_m0(OXS + 2 * first, 16, pairs, h, TAB, GOT, 0);
                    /* the rest of the row: the same kernel in chunks of h, added */
                    for (uint32_t c = 0; c < 16; c += h) {
                        if (c == first) continue;
                        atm_ek_planes_build(XV + 4 * c, 4 * h, TAB);
                        atm_ek_planes_pairso_m0(OXS + 2 * c, 16, pairs, h, TAB, GOT, 1);
                    }
                    bad += memcmp(REF, GOT, rows * sizeof(int32_t)) != 0 || GOT[rows] != 0x5A5A5A5A;
                    cases++;
                }
    /* the dispatch at 32, 40, 64 and 96 columns (strides 8, 10, 16, 24; 10:
     * rows not 4-aligned, which must run from the model's bytes), every row
     * count, the row cut into chunks of h bytes (the last one shorter) */
    static const uint32_t nbs[] = { 8, 10, 16, 24 };
    uint32_t dcases = 0, dbad = 0;
    for (unsigned ni = 0; ni < sizeof nbs / sizeof nbs[0]; ni++)
        for (uint32_t rows = 1, nb = nbs[ni]; rows <= 16; rows++)
            for (uint32_t h = 4; h <= 16; h += 4)
                for (int p = 0; p < 4; p++) {
                    const uint32_t cols = 4 * nb;
                    uint8_t *b = WBUF + (p & 1);
                    fill_rows(b, rows * nb, p);
                    for (uint32_t c = 0; c < cols; c++) XV[c] = (int16_t)pick(p, c, 32767);
                    atm_ek_matvec_ref(b, rows, cols, XV, REF);
                    memset(GOT, 0x5A, MAXR * sizeof(int32_t));
                    atm_engine_offsets_make(b, rows * nb, OXS);
                    for (uint32_t c = 0; c < nb; c += h) {
                        const uint32_t k = nb - c < h ? nb - c : h;
                        atm_ek_planes_build(XV + 4 * c, 4 * k, TAB);
                        atm_ek_planes_rows_ox(b + c, OXS + 2 * c, nb, rows, k, TAB, GOT, c != 0);
                    }
                    dbad += memcmp(REF, GOT, rows * sizeof(int32_t)) != 0 || GOT[rows] != 0x5A5A5A5A;
                    dcases++;
                }
    return report("planes_pairso_m0", cases, bad) | report("planes_rows_ox_dispatch", dcases, dbad);
}
#endif

#if defined(__ARM_ARCH_7M__) || defined(__ARM_ARCH_7EM__)
void atm_ek_lut_rows4_m3(const uint8_t *b, uint32_t nb, uint32_t groups, const int32_t *lut, int32_t *out);
/* the Thumb-2 pair-sum table rows (4 at a time) against atm_ek_matvec_ref,
 * the table built here from its definition */
static int test_lut_m3(void) {
    static const uint32_t colss[] = { 16, 32, 48, 64, 128 };
    static const uint32_t rowss[] = { 4, 8, 16 };
    uint32_t cases = 0, bad = 0;
    for (unsigned ci = 0; ci < sizeof colss / sizeof colss[0]; ci++)
        for (unsigned ri = 0; ri < sizeof rowss / sizeof rowss[0]; ri++)
            for (int p = 0; p < 4; p++) {
                const uint32_t cols = colss[ci], rows = rowss[ri], nb = cols / 4;
                uint8_t *b = WBUF + (p & 1);
                fill_rows(b, rows * nb, p);
                for (uint32_t c = 0; c < cols; c++) XV[c] = (int16_t)pick(p, c, 32767);
                for (uint32_t g = 0; g < cols / 2; g++)
                    for (int c1 = 0; c1 < 4; c1++)
                        for (int c0 = 0; c0 < 4; c0++) {
                            const int32_t v0 = c0 == 1 ? 1 : (c0 == 3 ? -1 : 0), v1 = c1 == 1 ? 1 : (c1 == 3 ? -1 : 0);
                            TAB[16 * g + (uint32_t)(c0 | c1 << 2)] = v0 * XV[2 * g] + v1 * XV[2 * g + 1];
                        }
                atm_ek_matvec_ref(b, rows, cols, XV, REF);
                memset(GOT, 0x5A, MAXR * sizeof(int32_t));
                atm_ek_lut_rows4_m3(b, nb, rows / 4, TAB, GOT);
                bad += memcmp(REF, GOT, rows * sizeof(int32_t)) != 0;
                cases++;
            }
    return report("lut_rows4_m3", cases, bad);
}
#endif

#if defined(__ARM_ARCH_7M__) || defined(__ARM_ARCH_7EM__)
/* the Thumb-2 byte tables against their C twin (the whole table, entries
 * the build leaves alone included) and the 4-row kernel against
 * atm_ek_matvec_ref; the tables sit past the other buffers (mps2-an385's
 * arena is 4 MiB) */
#define T8 ((int32_t *)(void *)(__arena_start + 16384))              /* MAXC * 64 words */
#define T8R ((int32_t *)(void *)(__arena_start + 16384 + MAXC * 256))
static int test_lut8_m3(void) {
    static const uint32_t colss[] = { 4, 8, 12, 16, 20, 24, 28, 48, 64, 100, 128, 200, 256 };
    static const uint32_t rowss[] = { 4, 8, 16 };
    uint32_t cases = 0, bad = 0, bad_t = 0;
    if ((size_t)(__arena_end - __arena_start) < 16384u + 2u * MAXC * 256u) { out_str("arena too small for lut8\n"); return 1; }
    for (unsigned ci = 0; ci < sizeof colss / sizeof colss[0]; ci++)
        for (unsigned ri = 0; ri < sizeof rowss / sizeof rowss[0]; ri++)
            for (int p = 0; p < 4; p++) {
                const uint32_t cols = colss[ci], rows = rowss[ri], nb = cols / 4;
                uint8_t *b = WBUF + (p & 1);
                fill_rows(b, rows * nb, p);
                for (uint32_t c = 0; c < cols; c++) XV[c] = (int16_t)pick(p, c, p == 3 ? 32768 : 32767);
                memset(T8, 0x5A, cols * 256);
                memset(T8R, 0x5A, cols * 256);
                atm_ek_lut8_build_m3(XV, cols, T8);
                atm_ek_lut8_build_ref(XV, cols, T8R);
                bad_t += memcmp(T8, T8R, cols * 256) != 0;
                atm_ek_matvec_ref(b, rows, cols, XV, REF);
                memset(GOT, 0x5A, MAXR * sizeof(int32_t));
                atm_ek_lut8_rows4_m3(b, nb, rows / 4, T8, GOT);
                bad += memcmp(REF, GOT, rows * sizeof(int32_t)) != 0 || GOT[rows] != 0x5A5A5A5A;
                cases++;
            }
    return report("lut8_rows4_m3", cases, bad) | report("lut8_build_m3", cases, bad_t);
}
#endif

#if defined(__ARM_ARCH_7M__) || defined(__ARM_ARCH_7EM__)
/* the Thumb-2 dot products against atm_ek_dots_ref: every dh it takes, one
 * it refuses (nothing written), 1 to 50 keys, extreme values */
static int test_dots_m3(void) {
    static const int dhs[] = { 8, 16, 32, 64, 12 };
    static const int ns[] = { 1, 2, 3, 7, 17, 50 };
    uint32_t cases = 0, bad = 0;
    for (unsigned di = 0; di < sizeof dhs / sizeof dhs[0]; di++)
        for (unsigned ni = 0; ni < sizeof ns / sizeof ns[0]; ni++)
            for (int p = 0; p < 4; p++) {
                const int dh = dhs[di], n = ns[ni];
                for (int i = 0; i < dh * n; i++) EK[i] = (int8_t)pick(p, (uint32_t)i, p == 2 ? 128 : 127);
                for (int i = 0; i < dh; i++) EU0[i] = (int16_t)pick(p, (uint32_t)i, p == 3 ? 32768 : 32767);
                atm_ek_dots_ref(EU0, EK, dh, n, EX0);
                memset(EX1, 0x5A, (size_t)(n + 1) * 4);
                const int r = atm_ek_dots_m3(EU0, EK, dh, n, EX1);
                if (dh % 8 == 0) bad += r != 0 || memcmp(EX0, EX1, (size_t)n * 4) != 0 || EX1[n] != 0x5A5A5A5A;
                else bad += r != 1 || EX1[0] != 0x5A5A5A5A;
                cases++;
            }
    /* the Thumb-2 mix against atm_ek_mix_ref: widths it takes and one it refuses,
     * 1 to 32 kept rows (33: refused), weights up to +-2^15 */
    static const int mds[] = { 8, 16, 64, 12 };
    static const int mns[] = { 1, 2, 3, 7, 16, 17, 32, 33 };
    uint32_t mcases = 0, mbad = 0;
    for (unsigned di = 0; di < sizeof mds / sizeof mds[0]; di++)
        for (unsigned ni = 0; ni < sizeof mns / sizeof mns[0]; ni++)
            for (int p = 0; p < 4; p++) {
                const int d = mds[di], n = mns[ni], rows = 3200 / d < 40 ? 3200 / d : 40;
                for (int i = 0; i < rows * d; i++) EK[i] = (int8_t)pick(p, (uint32_t)i, p == 2 ? 128 : 127);
                for (int i = 0; i < n; i++) {
                    EX0[128 + i] = (int32_t)rnd((uint32_t)rows);
                    EV[i] = pick(p, (uint32_t)i, 32768);
                }
                atm_ek_mix_ref(EV, EX0 + 128, EK, n, d, EX0);
                memset(EX1, 0x5A, (size_t)(d + 1) * 4);
                const int r = atm_ek_mix_m3(EV, EX0 + 128, EK, n, d, EX1);
                if (d % 8 == 0 && n <= 32) mbad += r != 0 || memcmp(EX0, EX1, (size_t)d * 4) != 0 || EX1[d] != 0x5A5A5A5A;
                else mbad += r != 1 || EX1[0] != 0x5A5A5A5A;
                mcases++;
            }
    return report("dots_m3", cases, bad) | report("mix_m3", mcases, mbad);
}
#endif

#if defined(__ARM_ARCH_7M__) || defined(__ARM_ARCH_7EM__)
/* the conv taps (engine_m3.S for K = 5 with 5 taps, the C otherwise)
 * against atm_ek_conv_ref: 1 to 64 channels, every ring position, shifts 0
 * to 9 (|ring << e| <= 2^16), trits and values at their extremes; past the
 * lut8 test's tables in mps2-an385's 4 MiB arena */
#define CT   ((int8_t *)(__arena_start + 200000))                    /* 64 K + 16 trits */
#define CR   ((int8_t *)(__arena_start + 201024))                    /* kh rows of ld = 80 */
#define CU   ((int16_t *)(void *)(__arena_start + 202048))
#define CA0  ((int32_t *)(void *)(__arena_start + 202304))
#define CA1  ((int32_t *)(void *)(__arena_start + 202624))
static int test_conv_m3(void) {
    static const int ncs[] = { 1, 3, 12, 63, 64 };
    static const int Ks[] = { 5, 3 };
    uint32_t cases = 0, bad = 0;
    for (unsigned ki = 0; ki < sizeof Ks / sizeof Ks[0]; ki++)
        for (unsigned ni = 0; ni < sizeof ncs / sizeof ncs[0]; ni++)
            for (int p = 0; p < 4; p++)
                for (int taps = 1; taps <= Ks[ki]; taps++) {
                    const int K = Ks[ki], nc = ncs[ni], kh = K - 1, ld = 80;
                    uint8_t rexp[8];
                    for (int i = 0; i < nc * K + 16; i++) CT[i] = (int8_t)(p == 3 ? ((i & 1) ? 1 : -1) : (int)rnd(3) - 1);
                    for (int i = 0; i < kh * ld; i++) CR[i] = (int8_t)pick(p, (uint32_t)i, 127);
                    for (int i = 0; i < nc; i++) CU[i] = (int16_t)pick(p, (uint32_t)i, 32767);
                    for (int j = 0; j < kh; j++) rexp[j] = (uint8_t)(p == 1 ? 9 : rnd(10));
                    const int next = (int)rnd((uint32_t)(kh > 0 ? kh : 1));
                    atm_ek_conv_ref(CT, K, nc, CU, CR, ld, rexp, next, kh, taps, CA0);
                    memset(CA1, 0x5A, (size_t)(nc + 1) * 4);
                    atm_ek_conv_m3(CT, K, nc, CU, CR, ld, rexp, next, kh, taps, CA1);
                    bad += memcmp(CA0, CA1, (size_t)nc * 4) != 0 || CA1[nc] != 0x5A5A5A5A;
                    cases++;
                }
    return report("conv_m3", cases, bad);
}
#endif


/* the M0 set's exponential (engine_m0.S's Horner steps on the M0) against
 * atm_exp_q16: every 7th x in [-2^21 - 64, 0] and random ones */
static int test_exp(void) {
    uint32_t cases = 0, bad = 0;
    uint32_t bad_w = 0;
    for (int32_t x = 0; x >= -(1 << 21) - 64; x -= 7, cases++) {
        const uint32_t r = atm_exp_q16(x);
        bad += atm_ek_exp_q16_h(x) != r;
        bad_w += atm_ek_exp_q16_w(x) != r;
    }
    for (int i = 0; i < 2000; i++, cases++) {
        const int32_t x = (int32_t)rnd32();
        bad += atm_ek_exp_q16_h(x) != atm_exp_q16(x);
        bad_w += atm_ek_exp_q16_w(x) != atm_exp_q16(x);
    }
    return report("exp_q16_h", cases, bad) | report("exp_q16_w", cases, bad_w);
}

/* the SSM update with a and b c on halfword boundaries (the M0 set's
 * Thumb-1 loop for sb 0 and -1; test_elementwise passes odd addresses,
 * which take the C) against the twin, s against large b c u of the other
 * sign included */
static int test_ssm_aligned(void) {
    static const int lens[] = { 1, 2, 7, 16, 64, 65 };
    uint32_t cases = 0, bad = 0;
    for (unsigned li = 0; li < sizeof lens / sizeof lens[0]; li++)
        for (int p = 0; p < 4; p++)
            for (int sb = -2; sb <= 1; sb++) {
                const int n = lens[li];
                for (int i = 0; i < n; i++) {
                    EX0[i] = ES[i] = p == 1 ? -X_L : pick(p, (uint32_t)i, X_L);
                    EU0[i] = (int16_t)pick(p == 3 ? 0 : p, (uint32_t)i, 32767);
                    const int32_t av = pick(p, (uint32_t)i, 32767), bv = pick(3, (uint32_t)i, 32767);
                    EG[2 * i] = (uint8_t)av; EG[2 * i + 1] = (uint8_t)((uint32_t)av >> 8);
                    EB[2 * i] = (uint8_t)bv; EB[2 * i + 1] = (uint8_t)((uint32_t)bv >> 8);
                }
                for (int i = 0; i < n; i++) EX1[i] = ES[i];
                atm_ek_ssm_ref(EX0, EG, EB, EU0, n, sb);
                atm_ek_ssm_i32(EX1, EG, EB, EU0, n, sb);
                bad += memcmp(EX0, EX1, (size_t)n * 4) != 0;
                cases++;
            }
    /* LayerNorm's output likewise (the M0's Thumb-1 loop for sb >= 1) */
    static const int sgs[] = { 16, 17, 18, 29, 30, 31, 33, 46 };
    static const int sbs[] = { -1, 0, 1, 2, 3, 9, 30 };
    uint32_t lcases = 0, lbad = 0;
    for (unsigned li = 0; li < sizeof lens / sizeof lens[0]; li++)
        for (int p = 0; p < 4; p++)
            for (unsigned gi = 0; gi < sizeof sgs / sizeof sgs[0]; gi++)
                for (unsigned bi = 0; bi < sizeof sbs / sizeof sbs[0]; bi++) {
                    const int n = lens[li], sg = sgs[gi], sb = sbs[bi];
                    const int32_t r15 = (int32_t)(16384 + rnd(16385));
                    for (int i = 0; i < n; i++) {
                        EU0[i] = EU1[i] = (int16_t)pick(p, (uint32_t)i, 32767);
                        const int32_t gv = pick(p == 3 ? 0 : p, (uint32_t)i, 32767), bv = pick(p, (uint32_t)i + 1, 32767);
                        EG[2 * i] = (uint8_t)gv; EG[2 * i + 1] = (uint8_t)((uint32_t)gv >> 8);
                        EB[2 * i] = (uint8_t)bv; EB[2 * i + 1] = (uint8_t)((uint32_t)bv >> 8);
                    }
                    if (p == 2) EU0[0] = EU1[0] = -32768;
                    atm_ek_ln_out_ref(EU0, EG, EB, n, r15, sg, sb);
                    atm_ek_ln_out_i32(EU1, EG, EB, n, r15, sg, sb);
                    lbad += memcmp(EU0, EU1, (size_t)n * 2) != 0;
                    lcases++;
                }
    return report("ssm_aligned_i32", cases, bad) | report("ln_out_aligned_i32", lcases, lbad);
}

int mcu_main(void) {
    int fail = 0;
    rng = 0x9E3779B9u;
    if ((size_t)(__arena_end - __arena_start) < ARENA_USED) { out_str("arena too small for the test buffers\nFAIL\n"); return 1; }
    bss_pad[0] = rng;
#if defined(__ARM_ARCH_6M__)
    fail |= test_planes();
    fail |= test_pairs16();
    fail |= test_pairs16o();
    fail |= test_smull();
#endif
    fail |= test_elementwise();
    fail |= test_first_above();
    fail |= test_quant();
    fail |= test_topk_ins();
    fail |= test_ln_center();
    fail |= test_exp();
    fail |= test_ssm_aligned();
#if defined(__ARM_ARCH_7M__) || defined(__ARM_ARCH_7EM__)
    fail |= test_lut_m3();
    fail |= test_lut8_m3();
    fail |= test_dots_m3();
    fail |= test_conv_m3();
#endif
    out_str(fail ? "FAIL\n" : "ok\n");
    return fail ? 1 : 0;
}
