/* tests/test_legacy.c — core/train/legacy.c: the re-quantisation rule, import
 * of the reference's published 944K ATOME01 blob (must be present: a missing
 * file FAILS) with bit-exact re-quantisation, byte-identical re-export,
 * ATOME01 -> ATOME02 -> ATOME01 round trips, and malformed inputs (every
 * truncation, trailing bytes, bit flips) giving errors without any
 * out-of-bounds read (buffers are allocated to the exact length so an
 * ASan build catches overreads). */
#include "core/train/legacy.h"
#include "check.h"
#include <stdlib.h>
#include <string.h>

static uint32_t bits(float f) { uint32_t b; memcpy(&b, &f, 4); return b; }
static float from_bits(uint32_t b) { float f; memcpy(&f, &b, 4); return f; }

static int trit_of(int8_t t) { return t > 0 ? 1 : (t < 0 ? -1 : 0); }

/* requant result checked with quant.c's own functions */
static int requant_exact(const int8_t *t, size_t n, float alpha, const float *w) {
    if (bits(atm_ternary_alpha(w, n)) != bits(alpha)) return 0;
    for (size_t i = 0; i < n; i++) if (atm_ternary_trit(w[i], alpha) != trit_of(t[i])) return 0;
    return 1;
}

static void test_requant(atm_rng *r) {
    enum { NMAX = 70000 };
    int8_t *t = malloc(NMAX);
    float *w = malloc(sizeof(float) * NMAX);
    const size_t sizes[] = { 1, 2, 3, 5, 7, 64, 1000, 4099, 65536 };
    int cases = 0, naive_ok = 0, naive_cases = 0, dust = 0;
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
        size_t n = sizes[si];
        for (int rep = 0; rep < 24; rep++) {
            /* densities from a single non-zero trit to none zero */
            size_t want = rep % 6 == 0 ? 1 : rep % 6 == 1 ? (n > 1 ? 2 : 1) : rep % 6 == 2 ? n : (size_t)(atm_rng_u32(r) % n) + 1;
            memset(t, 0, n);
            for (size_t k = 0; k < want; k++) {
                size_t i = atm_rng_u32(r) % n;
                t[i] = (atm_rng_u32(r) & 1) ? 1 : -1;
            }
            int has = 0;
            for (size_t i = 0; i < n; i++) has |= t[i] != 0;
            if (!has) t[0] = 1;
            /* random positive alpha from 1e-5 to ~16 with a random mantissa */
            float alpha = from_bits(0x37280000u + atm_rng_u32(r) % (0x41800000u - 0x37280000u));
            if (rep == 23) alpha = 1e-5f;                        /* the quantiser's floor */
            int e = atm_legacy_requant(t, n, alpha, w);
            CHECKF(e == 0 && requant_exact(t, n, alpha, w), "n %zu nnz~%zu alpha %a: e=%d", n, want, (double)alpha, e);
            cases++;
            for (size_t i = 0; i < n; i++) if (t[i] == 0 && w[i] != 0.0f) { dust++; break; }
            /* the trap: trit * alpha does not re-quantise to alpha unless all trits are non-zero */
            size_t nnz = 0;
            for (size_t i = 0; i < n; i++) { w[i] = (float)trit_of(t[i]) * alpha; nnz += t[i] != 0; }
            if (nnz < n / 2 && alpha > 1e-4f) { naive_cases++; naive_ok += bits(atm_ternary_alpha(w, n)) == bits(alpha); }
        }
    }
    CHECK(naive_cases > 20 && naive_ok == 0);
    CHECK(dust > 0);  /* the sparse fallback (legacy.h) was exercised */
    printf("requant: %d cases exact (%d needed the sparse fallback); trit*alpha reproduced alpha in %d of %d sparse cases\n",
           cases, dust, naive_ok, naive_cases);

    /* all zero: only the floor is reproducible */
    memset(t, 0, 100);
    CHECK(atm_legacy_requant(t, 100, 1e-5f, w) == 0 && requant_exact(t, 100, 1e-5f, w));
    CHECK(atm_legacy_requant(t, 100, 0.03f, w) == ATM_LEGACY_E_REQUANT);
    t[3] = 1;
    CHECK(atm_legacy_requant(t, 100, 9e-6f, w) == ATM_LEGACY_E_REQUANT);      /* below the floor */
    CHECK(atm_legacy_requant(t, 100, from_bits(0x7FC00000u), w) == ATM_LEGACY_E_REQUANT);
    CHECK(atm_legacy_requant(t, 100, from_bits(0x7F800000u), w) == ATM_LEGACY_E_REQUANT);
    CHECK(atm_legacy_requant(t, 100, 3.0e38f, w) == ATM_LEGACY_E_REQUANT);    /* needs w = 3e40 */
    free(t);
    free(w);
}

/* every trit, scale and vector of w (re-quantised by quant.c) equals the blob's */
static int matches_blob(const atm_layout *L, const float *w, const uint8_t *blob, const atm_legacy_plan *p) {
    int ok = 1;
    float *weff = malloc(sizeof(float) * L->n_params);
    int8_t *t = malloc(65536);
    atm_quantize_layout(L, ATM_QUANT_TERNARY, w, weff);
    for (size_t i = 0; i < p->n_items; i++) {
        atm_legacy_span sp;
        atm_legacy_item(p, i, &sp);
        char nm[ATM_TENSOR_NAME];
        static const char *const SUF[ATM_LF_COUNT] = { "embed", "ln.g", "ln.b", "conv", "ssm.a_raw", "ssm.b",
            "ssm.c", "attn.wq", "attn.wk", "attn.wv", "router", "ln_f.g", "ln_f.b", "unembed" };
        if (sp.layer >= 0) snprintf(nm, sizeof nm, "blocks.%d.%s", sp.layer, SUF[sp.field]);
        else snprintf(nm, sizeof nm, "%s", SUF[sp.field]);
        int ti = atm_layout_find(L, nm);
        if (ti < 0 || (size_t)L->t[ti].rows * L->t[ti].cols != sp.n) { ok = 0; break; }
        const float *we = weff + L->t[ti].off, *ws = w + L->t[ti].off;
        if (sp.ternary) {
            uint32_t ab = atm_rd_u32le(blob + sp.off);
            float alpha = atm_ternary_alpha(ws, sp.n);
            if (bits(alpha) != ab) ok = 0;
            if (p->format == 1) atm_t2_unpack(blob + sp.off + 4, sp.n, t);
            else atm_t5_unpack(blob + sp.off + 4, sp.n, t);
            for (size_t j = 0; j < sp.n; j++)
                if (bits(we[j]) != bits((float)t[j] * from_bits(ab))) { ok = 0; break; }
        } else {
            for (size_t j = 0; j < sp.n; j++)
                if (bits(we[j]) != atm_rd_u32le(blob + sp.off + 4 * j)) { ok = 0; break; }
        }
        if (!ok) { fprintf(stderr, "mismatch in %s\n", nm); break; }
    }
    free(t);
    free(weff);
    return ok;
}

static void test_blob(atm_rng *r) {
    char path[1024], err[256];
    snprintf(path, sizeof path, "%s/interop/atome_944k.bin", check_shared_dir());
    size_t n = 0;
    uint8_t *blob = check_read_file(path, &n);
    CHECKF(blob != NULL, "cannot read %s", path);
    if (!blob) return;
    CHECK(n == 276655);
    atm_config cfg;
    CHECK(atm_config_by_name("atome-944k", &cfg) == 0);
    atm_layout *L = malloc(sizeof *L);
    CHECK(atm_layout_build(&cfg, L) == 0);
    CHECK(L->n_params == 944640);
    float *w = malloc(sizeof(float) * L->n_params), *w2 = malloc(sizeof(float) * L->n_params);
    int e = atm_legacy_import(blob, n, &cfg, w, err, sizeof err);
    CHECKF(e == 0, "%s", err);
    atm_legacy_shape s;
    atm_legacy_plan p1, p2;
    CHECK(atm_legacy_shape_from_config(&cfg, &s) == 0);
    CHECK(atm_legacy_validate(blob, n, &s, &p1, NULL) == 0);
    CHECK(matches_blob(L, w, blob, &p1));

    /* re-export: byte-identical ATOME01 */
    size_t len = 0;
    uint8_t *out = malloc(n), *o2 = malloc(n);
    CHECK(atm_legacy_export(L, w, 1, NULL, 0, &len) == ATM_FMT_E_CAPACITY && len == n);
    CHECK(atm_legacy_export(L, w, 1, out, n - 1, &len) == ATM_FMT_E_CAPACITY);
    CHECK(atm_legacy_export(L, w, 1, out, n, &len) == 0 && len == n);
    int same = len == n && memcmp(out, blob, n) == 0;
    CHECK(same);
    printf("944K blob: import ok, re-export ATOME01 %zu B, byte-identical: %s\n", len, same ? "yes" : "NO");

    /* ATOME01 -> ATOME02 -> ATOME01 */
    CHECK(atm_legacy_export(L, w, 2, o2, n, &len) == 0);
    CHECK(len == 229975);
    CHECK(atm_legacy_validate(o2, len, &s, &p2, NULL) == 0 && p2.format == 2);
    CHECK(matches_blob(L, w, o2, &p2));                /* same trits, scales, vectors */
    {
        int8_t *ta = malloc(65536), *tb = malloc(65536);
        int eq = 1;
        for (size_t i = 0; i < p1.n_items; i++) {
            atm_legacy_span a, b;
            atm_legacy_item(&p1, i, &a);
            atm_legacy_item(&p2, i, &b);
            if (a.ternary) {
                atm_t2_unpack(blob + a.off + 4, a.n, ta);
                atm_t5_unpack(o2 + b.off + 4, b.n, tb);
                eq &= memcmp(ta, tb, a.n) == 0 && atm_rd_u32le(blob + a.off) == atm_rd_u32le(o2 + b.off);
            } else {
                eq &= memcmp(blob + a.off, o2 + b.off, a.bytes) == 0;
            }
        }
        CHECK(eq);
        free(ta); free(tb);
    }
    e = atm_legacy_import(o2, len, &cfg, w2, err, sizeof err);
    CHECKF(e == 0, "%s", err);
    CHECK(atm_legacy_export(L, w2, 1, out, n, &len) == 0 && len == n && memcmp(out, blob, n) == 0);
    printf("ATOME02 export %zu B; ATOME01 -> ATOME02 -> ATOME01 byte-identical: %s\n", (size_t)229975,
           memcmp(out, blob, n) == 0 ? "yes" : "NO");

    /* wrong config, too long, truncated: distinct errors */
    atm_config c60;
    atm_config_by_name("atome-60k", &c60);
    CHECK(atm_legacy_import(blob, n, &c60, w2, err, sizeof err) == ATM_FMT_E_TRAILING);
    atm_config c2 = cfg; c2.pathways = ATM_PATH_CONV | ATM_PATH_ATTN;
    CHECK(atm_legacy_import(blob, n, &c2, w2, err, sizeof err) == ATM_LEGACY_E_CONFIG);
    {
        uint8_t *big = malloc(n + 1);
        memcpy(big, blob, n); big[n] = 0;
        CHECK(atm_legacy_import(big, n + 1, &cfg, w2, err, sizeof err) == ATM_FMT_E_TRAILING);
        printf("trailing byte: %s\n", err);
        free(big);
    }
    int trunc_ok = 1;
    for (int k = 0; k < 700; k++) {
        size_t m = k < 400 ? (size_t)k : atm_rng_u32(r) % n;
        uint8_t *c = malloc(m ? m : 1);                    /* exact size: ASan sees overreads */
        memcpy(c, blob, m);
        e = atm_legacy_import(c, m, &cfg, w2, err, sizeof err);
        if (e != ATM_FMT_E_TRUNCATED) { trunc_ok = 0; fprintf(stderr, "len %zu: %d %s\n", m, e, err); }
        free(c);
    }
    CHECK(trunc_ok);
    atm_legacy_import(blob, 1000, &cfg, w2, err, sizeof err);
    printf("truncated: %s\n", err);

    /* bit flips: magic -> bad magic, scale sign -> bad scale, anywhere -> an
     * error or a clean import (e.g. inside float vectors) */
    uint8_t *c = malloc(n);
    memcpy(c, blob, n); c[2] ^= 0x10;
    CHECK(atm_legacy_import(c, n, &cfg, w2, err, sizeof err) == ATM_FMT_E_MAGIC);
    atm_legacy_span sp;
    atm_legacy_span_of(&p1, ATM_LF_WV, 5, &sp);
    memcpy(c, blob, n); c[sp.off + 3] ^= 0x80;
    CHECK(atm_legacy_import(c, n, &cfg, w2, err, sizeof err) == ATM_FMT_E_SCALE);
    printf("flipped scale sign: %s\n", err);
    int flips_ok = 1, flips_err = 0, flips_clean = 0;
    enum { FLIPS = 1000, FULL = 40 };  /* full imports cost ~10 ms each; the rest only validate */
    for (int k = 0; k < FLIPS; k++) {
        size_t at = atm_rng_u32(r) % n;
        memcpy(c, blob, n);
        c[at] ^= (uint8_t)(1u << (atm_rng_u32(r) % 8));
        e = k < FULL ? atm_legacy_import(c, n, &cfg, w2, err, sizeof err) : atm_legacy_validate(c, n, &s, NULL, NULL);
        if (e == 0) flips_clean++; else if (e < ATM_LEGACY_E_CONFIG || e == ATM_LEGACY_E_REQUANT) flips_err++;
        else flips_ok = 0;
    }
    CHECK(flips_ok && flips_err + flips_clean == FLIPS);
    printf("%d random bit flips: %d rejected, %d still valid\n", FLIPS, flips_err, flips_clean);

    /* export refuses non-finite weights */
    memcpy(w2, w, sizeof(float) * L->n_params);
    w2[L->t[atm_layout_find(L, "blocks.2.attn.wk")].off + 17] = from_bits(0x7FC00000u);
    CHECK(atm_legacy_export(L, w2, 1, out, n, &len) == ATM_LEGACY_E_NONFINITE);
    memcpy(w2, w, sizeof(float) * L->n_params);
    w2[L->t[atm_layout_find(L, "ln_f.b")].off + 3] = from_bits(0xFF800000u);
    CHECK(atm_legacy_export(L, w2, 1, out, n, &len) == ATM_LEGACY_E_NONFINITE);

    free(c); free(out); free(o2); free(w); free(w2); free(L); free(blob);
}

/* A freshly initialised 60K model: float -> ATOME01 -> import -> same
 * quantised model; -> ATOME02 -> import -> ATOME01 identical. */
static void test_fresh(atm_rng *r) {
    atm_config cfg;
    CHECK(atm_config_by_name("atome-60k", &cfg) == 0);
    atm_layout *L = malloc(sizeof *L);
    CHECK(atm_layout_build(&cfg, L) == 0);
    size_t P = L->n_params;
    float *w = malloc(sizeof(float) * P), *w1 = malloc(sizeof(float) * P), *w2 = malloc(sizeof(float) * P);
    float *q0 = malloc(sizeof(float) * P), *q1 = malloc(sizeof(float) * P);
    atm_init_params(L, w, r);
    uint8_t a[20575], b[17613], a2[20575];
    size_t la = 0, lb = 0, la2 = 0;
    char err[256];
    CHECK(atm_legacy_export(L, w, 1, a, sizeof a, &la) == 0 && la == 20575);
    CHECK(atm_legacy_export(L, w, 2, b, sizeof b, &lb) == 0 && lb == 17613);
    CHECKF(atm_legacy_import(a, la, &cfg, w1, err, sizeof err) == 0, "%s", err);
    atm_quantize_layout(L, ATM_QUANT_TERNARY, w, q0);
    atm_quantize_layout(L, ATM_QUANT_TERNARY, w1, q1);
    CHECK(memcmp(q0, q1, sizeof(float) * P) == 0);
    CHECKF(atm_legacy_import(b, lb, &cfg, w2, err, sizeof err) == 0, "%s", err);
    CHECK(atm_legacy_export(L, w2, 1, a2, sizeof a2, &la2) == 0 && la2 == la && memcmp(a, a2, la) == 0);
    printf("atome-60k fresh: ATOME01 %zu B, ATOME02 %zu B, round trips exact\n", la, lb);

    atm_config cv;
    atm_config_by_name("vanilla-60k", &cv);
    atm_layout *Lv = malloc(sizeof *Lv);
    CHECK(atm_layout_build(&cv, Lv) == 0);
    CHECK(atm_legacy_export(Lv, w, 1, a, sizeof a, &la) == ATM_LEGACY_E_CONFIG);
    CHECK(atm_legacy_import(a, sizeof a, &cv, w1, err, sizeof err) == ATM_LEGACY_E_CONFIG);
    CHECK(atm_legacy_export(L, w, 3, a, sizeof a, &la) == ATM_FMT_E_ARG);
    free(Lv); free(L); free(w); free(w1); free(w2); free(q0); free(q1);
}

int main(void) {
    atm_rng r;
    atm_rng_seed(&r, 2024);
    test_requant(&r);
    test_fresh(&r);
    test_blob(&r);
    return CHECK_DONE();
}
