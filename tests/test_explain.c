/* tests/test_explain.c — core/explain.c and the engine's router trace:
 * log2 against libm, entropy and top-5 against a double-precision reference,
 * the JSON text, that tracing leaves the logits bit for bit as they are
 * (shipped model, two windows, every pathway subset of a random model), and
 * that the trace is the current step's: layer 0's router weights depend on
 * the current byte only, and must match softmax(R0 . LN0(embed[byte])) of the
 * shipped float checkpoint, recomputed here in double. */
#include "check.h"
#include "core/container.h"
#include "core/engine.h"
#include "core/explain.h"
#include "core/train/export.h"
#include "core/train/model.h"
#include "core/rng.h"
#include "core/train/trainer.h"
#include "core/train/ckpt.h"
#include <stdint.h>
#include <string.h>

static void test_log2(void) {
    double worst = 0;
    for (uint32_t x = 1; x < 300000; x += (x < 70000 ? 1 : 97)) {
        double err = fabs(atm_log2_q16(x) - log2((double)x) * 65536.0);
        if (err > worst) worst = err;
    }
    const uint32_t big[] = { 0x7fffffffu, 0x80000000u, 0xffffffffu, 3000000001u, 65537u * 65521u };
    for (int i = 0; i < 5; i++) {
        double err = fabs(atm_log2_q16(big[i]) - log2((double)big[i]) * 65536.0);
        if (err > worst) worst = err;
    }
    CHECKF(worst < 1.01, "log2_q16 worst error %.4f units", worst);   /* truncating: below 1 unit + the squarings' rounding */
    CHECK(atm_log2_q16(1) == 0);
    CHECK(atm_log2_q16(32768) == 15 << 16);
    CHECK(atm_log2_q16(0) == 0);
}

static void test_explain_values(void) {
    atm_rng r;
    atm_rng_seed(&r, 7);
    for (int trial = 0; trial < 200; trial++) {
        const int L = 1 + (int)(atm_rng_u32(&r) % 8), V = trial < 3 ? 1 + trial : 256;
        int32_t router[8 * 3], logits[256];
        for (int l = 0; l < L; l++) {
            int32_t a = (int32_t)(atm_rng_u32(&r) % 32769), b = (int32_t)(atm_rng_u32(&r) % (32769 - a));
            if (trial % 7 == 0) { a = 32768; b = 0; }          /* a certain router */
            router[3 * l] = a; router[3 * l + 1] = b; router[3 * l + 2] = 32768 - a - b;
        }
        for (int v = 0; v < V; v++) logits[v] = (int32_t)(atm_rng_u32(&r) % (20u << 16)) - (10 << 16);
        if (trial % 5 == 0) logits[V - 1] = logits[0];          /* a tie: lower byte first */
        if (trial == 10) { logits[0] = (1 << 30); logits[1] = -(1 << 30); }
        atm_explain_t x;
        atm_explain(router, L, logits, V, &x);
        CHECK(x.layers == L);
        for (int l = 0; l < L; l++) {
            double h = 0;
            for (int p = 0; p < 3; p++) {
                double w = router[3 * l + p] / 32768.0;
                if (w > 0) h -= w * log(w);
            }
            CHECKF(fabs(x.entropy[l] / 65536.0 - h) < 3e-4, "entropy %f vs %f", x.entropy[l] / 65536.0, h);
        }
        CHECK(x.n_top == (V < 5 ? V : 5));
        double zmax = -1e300, sum = 0;
        for (int v = 0; v < V; v++) if (logits[v] / 65536.0 > zmax) zmax = logits[v] / 65536.0;
        for (int v = 0; v < V; v++) sum += exp(logits[v] / 65536.0 - zmax);
        for (int k = 0; k < x.n_top; k++) {
            const int b = x.top_byte[k];
            if (k > 0) {
                const int a = x.top_byte[k - 1];
                CHECK(logits[a] > logits[b] || (logits[a] == logits[b] && a < b));
            }
            for (int v = 0; v < V; v++) {   /* nothing outside the top beats it */
                int in = 0;
                for (int j = 0; j < x.n_top; j++) in |= x.top_byte[j] == v;
                if (!in) CHECK(logits[v] < logits[b] || (logits[v] == logits[b] && v > b));
            }
            double p = exp(logits[b] / 65536.0 - zmax) / sum;
            CHECKF(fabs(x.top_p[k] / 65536.0 - p) < 1e-4, "p %f vs %f", x.top_p[k] / 65536.0, p);
        }
    }
}

static void test_json(void) {
    atm_explain_t x;
    memset(&x, 0, sizeof x);
    x.layers = 2;
    x.router[0][0] = 32768; x.router[1][0] = 16384; x.router[1][1] = 8192; x.router[1][2] = 8192;
    x.entropy[0] = 0; x.entropy[1] = 68138;           /* 1.03970 nats */
    x.n_top = 2;
    x.top_byte[0] = 32; x.top_p[0] = 65536; x.top_byte[1] = 255; x.top_p[1] = 3;  /* 0.0000458 -> 0.0000 */
    char buf[ATM_EXPLAIN_JSON_MAX];
    size_t n = atm_explain_json(buf, sizeof buf, 12345678901ull, 10, &x);
    const char *want = "{\"i\":12345678901,\"byte\":10,\"router\":[[1.0000,0.0000,0.0000],[0.5000,0.2500,0.2500]],"
                       "\"entropy\":[0.0000,1.0397],\"top\":[[32,1.0000],[255,0.0000]]}\n";
    CHECKF(strcmp(buf, want) == 0, "json:\n%s", buf);
    CHECK(n == strlen(want));
    /* too small a buffer: 0 and an empty string, never a cut line */
    char small[40];
    CHECK(atm_explain_json(small, sizeof small, 0, 0, &x) == 0 && small[0] == 0);
    CHECK(atm_explain_json(buf, n, 12345678901ull, 10, &x) == 0);
    CHECK(atm_explain_json(buf, n + 1, 12345678901ull, 10, &x) == n);
    /* the largest model: 64 layers of worst-case numbers fit the stated maximum */
    x.layers = 64;
    for (int l = 0; l < 64; l++) { x.router[l][0] = x.router[l][1] = x.router[l][2] = 32768; x.entropy[l] = 72000; }
    x.n_top = 5;
    for (int k = 0; k < 5; k++) { x.top_byte[k] = 255; x.top_p[k] = 65536; }
    n = atm_explain_json(buf, sizeof buf, UINT64_MAX, 255, &x);
    CHECKF(n > 0 && n < ATM_EXPLAIN_JSON_MAX, "64-layer line: %zu bytes", n);
}

/* Runs text through two engines, one traced, and compares every logit; the
 * trace must hold weights summing to about 1 per layer (0 where a pathway
 * is absent). */
static void trace_case(const atm_model *m, const uint8_t *text, size_t n, int window) {
    size_t ab = atm_engine_arena_bytes(m, window);
    void *a1 = malloc(ab), *a2 = malloc(ab);
    atm_engine e1, e2;
    CHECK(atm_engine_init(&e1, m, window, a1, ab) == ATM_OK);
    CHECK(atm_engine_init(&e2, m, window, a2, ab) == ATM_OK);
    int32_t trace[64 * 3];
    const int L = m->cfg.n_layers, V = m->cfg.vocab;
    int same = 1, sums = 1, absent = 1;
    for (size_t i = 0; i < n; i++) {
        const int32_t *l1 = atm_engine_step(&e1, text[i]);
        const int32_t *l2 = atm_engine_step_traced(&e2, text[i], trace);
        same &= memcmp(l1, l2, (size_t)V * sizeof *l1) == 0;
        for (int l = 0; l < L; l++) {
            int32_t s = trace[3 * l] + trace[3 * l + 1] + trace[3 * l + 2];
            sums &= s >= 32768 - 8 && s <= 32768;
            if (!(m->cfg.pathways & ATM_PATH_CONV)) absent &= trace[3 * l] == 0;
            if (!(m->cfg.pathways & ATM_PATH_SSM)) absent &= trace[3 * l + 1] == 0;
            if (!(m->cfg.pathways & ATM_PATH_ATTN)) absent &= trace[3 * l + 2] == 0;
        }
    }
    CHECKF(same, "tracing changed the logits (pathways %d, window %d)", m->cfg.pathways, window);
    CHECKF(sums, "router weights do not sum to 1 (pathways %d)", m->cfg.pathways);
    CHECK(absent);
    free(a1); free(a2);
}

static void test_trace_shipped(void) {
    size_t len;
    uint8_t *blob = check_read_file(ATOME_SOURCE_DIR "/models/atome-60k.atome", &len);
    CHECKF(blob != NULL, "cannot read models/atome-60k.atome");
    if (!blob) return;
    atm_model m;
    CHECK(atm_model_open(&m, blob, len) == ATM_OK);
    const char *t = "Once upon a time, there was a little girl named Lily. She liked to play outside in the sun.";
    trace_case(&m, (const uint8_t *)t, strlen(t), 0);
    trace_case(&m, (const uint8_t *)t, strlen(t), 8);
    free(blob);
}

/* random atome-tiny models with each pathway subset, exported in memory */
static void test_trace_pathways(void) {
    for (int pw = 1; pw <= 7; pw++) {
        atm_config cfg;
        CHECK(atm_config_by_name("atome-tiny", &cfg) == 0);
        cfg.pathways = pw;
        atm_layout L;
        CHECK(atm_layout_build(&cfg, &L) == 0);
        float *w = (float *)malloc(sizeof(float) * L.n_params);
        atm_rng r;
        atm_rng_seed(&r, 3u + (uint32_t)pw);
        atm_init_params(&L, w, &r);
        atm_export_opts o = { ATM_ENC_ATOME02, 16, 32, NULL };
        uint8_t *blob = NULL;
        size_t len = 0;
        char err[256];
        int rc = atm_export_atome(&L, w, &o, &blob, &len, err, sizeof err);
        free(w);
        CHECKF(rc == 0, "export pathways %d: %s", pw, err);
        if (rc) continue;
        atm_model m;
        CHECK(atm_model_open(&m, blob, len) == ATM_OK);
        const char *t = "abc abc abd, the cat sat on the mat";
        trace_case(&m, (const uint8_t *)t, strlen(t), 0);
        free(blob);
    }
}

/* Layer 0 sees only the current byte's embedding, so its router weights
 * are a function of that byte: recompute them from the float checkpoint the
 * shipped .atome was exported from and compare with the trace, byte by byte
 * along a text (a stale or shifted trace would follow the previous byte). */
static void test_trace_layer0(void) {
    atm_ckpt ck;
    char err[300];
    CHECKF(atm_ckpt_read(ATOME_SOURCE_DIR "/models/atome-60k.ckpt", &ck, err, sizeof err) == 0, "%s", err);
    atm_layout L;
    CHECK(atm_layout_build(&ck.cfg, &L) == 0);
    float *weff = (float *)malloc(sizeof(float) * L.n_params);
    atm_quantize_layout(&L, ATM_QUANT_TERNARY, ck.w, weff);
    const int d = L.cfg.d_model;
    const float *E = weff + L.t[atm_layout_find(&L, "embed")].off;
    const float *G = weff + L.t[atm_layout_find(&L, "blocks.0.ln.g")].off;
    const float *B = weff + L.t[atm_layout_find(&L, "blocks.0.ln.b")].off;
    const float *R = weff + L.t[atm_layout_find(&L, "blocks.0.router")].off;
    size_t len;
    uint8_t *blob = check_read_file(ATOME_SOURCE_DIR "/models/atome-60k.atome", &len);
    atm_model m;
    CHECK(blob && atm_model_open(&m, blob, len) == ATM_OK);
    size_t ab = atm_engine_arena_bytes(&m, 0);
    void *arena = malloc(ab);
    atm_engine e;
    CHECK(atm_engine_init(&e, &m, 0, arena, ab) == ATM_OK);
    const char *t = "Once upon a time, there was a big red ball. Tom and Sue played in the park all day!";
    double worst = 0;
    int32_t trace[64 * 3];
    for (const char *c = t; *c; c++) {
        atm_engine_step_traced(&e, (unsigned char)*c, trace);
        const float *x = E + (size_t)(unsigned char)*c * d;
        double mean = 0, var = 0;
        for (int i = 0; i < d; i++) mean += x[i];
        mean /= d;
        for (int i = 0; i < d; i++) var += (x[i] - mean) * (x[i] - mean);
        var /= d;
        double z[3], mx = -1e300, sum = 0;
        for (int p = 0; p < 3; p++) {
            z[p] = 0;
            for (int i = 0; i < d; i++) z[p] += R[(size_t)p * d + i] * ((x[i] - mean) / sqrt(var + 1e-5) * G[i] + B[i]);
            if (z[p] > mx) mx = z[p];
        }
        for (int p = 0; p < 3; p++) sum += exp(z[p] - mx);
        for (int p = 0; p < 3; p++) {
            double err = fabs(exp(z[p] - mx) / sum - trace[p] / 32768.0);
            if (err > worst) worst = err;
        }
    }
    CHECKF(worst < 0.01, "layer-0 router weights: traced vs float worst difference %.4f", worst);
    free(arena); free(blob); free(weff);
    atm_ckpt_free(&ck);
}

int main(void) {
    test_log2();
    test_explain_values();
    test_json();
    test_trace_shipped();
    test_trace_pathways();
    test_trace_layer0();
    return CHECK_DONE();
}
